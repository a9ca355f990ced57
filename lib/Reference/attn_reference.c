//===- attn_reference.c - Float64 reference attention and test data -------===//
#include "lib/Reference/attn_reference.h"
#include "lib/Reference/attn_reference_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/// Rotates x's rows by sign (1 or -1) times RoPE's angles.
static void rope_rows(double *x, int64_t rows, int64_t dim, int64_t rotary_dim,
                      double theta, bool interleaved, const int32_t *pos,
                      int64_t pos0, double sign) {
  int64_t half = rotary_dim / 2;
  for (int64_t r = 0; r < rows; ++r) {
    double p = sign * (pos ? (double)pos[r] : (double)(pos0 + r));
    double *row = x + r * dim;
    for (int64_t i = 0; i < half; ++i) {
      double ang = p * pow(theta, -2.0 * (double)i / (double)rotary_dim);
      double c = cos(ang), s = sin(ang);
      int64_t a = interleaved ? 2 * i : i,
              b = interleaved ? 2 * i + 1 : i + half;
      double x1 = row[a], x2 = row[b];
      row[a] = x1 * c - x2 * s;
      row[b] = x2 * c + x1 * s;
    }
  }
}

void attn_reference_rope_at(double *x, int64_t rows, int64_t dim,
                            int64_t rotary_dim, double theta, bool interleaved,
                            const int32_t *pos, int64_t pos0) {
  rope_rows(x, rows, dim, rotary_dim, theta, interleaved, pos, pos0, 1.0);
}

void attn_reference_rope_inverse_at(double *x, int64_t rows, int64_t dim,
                                    int64_t rotary_dim, double theta,
                                    bool interleaved, const int32_t *pos,
                                    int64_t pos0) {
  rope_rows(x, rows, dim, rotary_dim, theta, interleaved, pos, pos0, -1.0);
}

void attn_reference_rope(double *x, int64_t rows, int64_t dim,
                         int64_t rotary_dim, double theta, bool interleaved,
                         int64_t pos0) {
  attn_reference_rope_at(x, rows, dim, rotary_dim, theta, interleaved, NULL,
                         pos0);
}

static bool valid_mods(const struct attn_ref_problem *p) {
  if (p->nmods < 0 || p->nmods > 5)
    return false;
  for (int i = 0; i < p->nmods; ++i) {
    enum attn_ref_mod m = p->mods[i];
    if ((m == ATTN_REF_SOFTCAP && !(p->softcap > 0)) ||
        (m == ATTN_REF_ALIBI && !(p->alibi_max_bias > 0)) ||
        (m == ATTN_REF_GATE && (!p->gate || p->gate_block < 1)) ||
        (m == ATTN_REF_FN && !p->score_fn) || m > ATTN_REF_FN)
      return false;
  }
  return true;
}

bool attn_ref_valid(const struct attn_ref_problem *p) {
  return p->batch > 0 && p->heads > 0 && p->kv_heads > 0 && p->seq_q > 0 &&
         p->seq_k > 0 && p->head_dim > 0 && p->value_dim > 0 &&
         p->heads % p->kv_heads == 0 && valid_mods(p) &&
         (!p->rope || (p->rotary_dim >= 2 && p->rotary_dim % 2 == 0 &&
                       p->rotary_dim <= p->head_dim && p->theta > 0));
}

bool attn_ref_visible(const struct attn_ref_problem *p, int64_t b, int64_t h,
                    int64_t i, int64_t j) {
  if (p->causal && j > i)
    return false;
  if (p->window && ((p->window_left >= 0 && j < i - p->window_left) ||
                    (p->window_right >= 0 && j > i + p->window_right)))
    return false;
  if (p->q_segments && p->k_segments &&
      p->q_segments[b * p->seq_q + i] != p->k_segments[b * p->seq_k + j])
    return false;
  if (p->mask_fn && !p->mask_fn(p->fn_ctx, b, h, i, j))
    return false;
  return true;
}

/// The score of (b, h, i, j) after every modifier, from the product dot.
static double modify(const struct attn_ref_problem *p, int64_t b, int64_t h,
                     int64_t i, int64_t j, double s) {
  bool scaled = false;
  for (int k = 0; k < p->nmods; ++k)
    scaled |= p->mods[k] == ATTN_REF_SCALE;
  if (!scaled)
    s *= p->scale;
  for (int k = 0; k < p->nmods; ++k) {
    switch (p->mods[k]) {
    case ATTN_REF_SCALE:
      s *= p->scale;
      break;
    case ATTN_REF_SOFTCAP:
      s = p->softcap * tanh(s / p->softcap);
      break;
    case ATTN_REF_ALIBI: {
      double slope = exp2(-p->alibi_max_bias * (double)(h + 1) /
                          (double)p->heads);
      s -= slope * fabs((double)(i - j));
      break;
    }
    case ATTN_REF_GATE: {
      int64_t nb = (p->seq_k + p->gate_block - 1) / p->gate_block;
      s +=
          p->gate[((b * p->heads + h) * p->seq_q + i) * nb + j / p->gate_block];
      break;
    }
    case ATTN_REF_FN:
      s = p->score_fn(p->fn_ctx, s, b, h, i, j);
      break;
    }
  }
  return s;
}

bool attn_reference(const struct attn_ref_problem *p, const double *q,
                    const double *k, const double *v, double *out) {
  if (!attn_ref_valid(p))
    return false;
  int64_t n = p->seq_q, m = p->seq_k, d = p->head_dim, dv = p->value_dim;
  int64_t group = p->heads / p->kv_heads;
  double *qh = malloc(sizeof(double) * (size_t)(n * d));
  double *kh = malloc(sizeof(double) * (size_t)(m * d));
  double *s = malloc(sizeof(double) * (size_t)m);
  bool *vis = malloc(sizeof(bool) * (size_t)m);
  bool ok = qh && kh && s && vis;
  for (int64_t b = 0; ok && b < p->batch; ++b)
    for (int64_t h = 0; h < p->heads; ++h) {
      int64_t hk = h / group;
      const double *vh = v + ((b * p->kv_heads + hk) * m) * dv;
      memcpy(qh, q + ((b * p->heads + h) * n) * d, sizeof(double) * (size_t)(n * d));
      memcpy(kh, k + ((b * p->kv_heads + hk) * m) * d, sizeof(double) * (size_t)(m * d));
      if (p->rope) {
        attn_reference_rope_at(qh, n, d, p->rotary_dim, p->theta,
                               p->interleaved,
                               p->q_positions ? p->q_positions + b * n : NULL,
                               p->q_offset);
        attn_reference_rope_at(kh, m, d, p->rotary_dim, p->theta,
                               p->interleaved,
                               p->k_positions ? p->k_positions + b * m : NULL,
                               p->k_offset);
      }
      for (int64_t i = 0; i < n; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < m; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < d; ++c)
            dot += qh[i * d + c] * kh[j * d + c];
          vis[j] = attn_ref_visible(p, b, h, i, j);
          s[j] = vis[j] ? modify(p, b, h, i, j, dot) : -INFINITY;
          mx = fmax(mx, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < m; ++j) {
          s[j] = vis[j] ? exp(s[j] - mx) : 0.0;
          sum += s[j];
        }
        double *o = out + ((b * p->heads + h) * n + i) * dv;
        for (int64_t c = 0; c < dv; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < m; ++j)
            acc += s[j] * vh[j * dv + c];
          o[c] = sum > 0 ? acc / sum : 0.0;
        }
      }
    }
  free(qh);
  free(kh);
  free(s);
  free(vis);
  return ok;
}

double attn_rel_error(const double *a, const double *b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    double e = a[i] - b[i];
    num += e * e;
    den += b[i] * b[i];
  }
  return den > 0 ? sqrt(num / den) : sqrt(num);
}

void attn_rng_seed(struct attn_rng *r, uint64_t seed) {
  r->s = seed ? seed : 0x9E3779B97F4A7C15ull;
}

static double rng_unit(struct attn_rng *r) {
  r->s ^= r->s >> 12;
  r->s ^= r->s << 25;
  r->s ^= r->s >> 27;
  uint64_t x = r->s * 0x2545F4914F6CDD1Dull;
  return ((double)(x >> 11) + 0.5) / 9007199254740992.0; // (0, 1)
}

double attn_rng_uniform(struct attn_rng *r) { return rng_unit(r); }

uint64_t attn_rng_below(struct attn_rng *r, uint64_t n) {
  if (n == 0)
    return 0;
  uint64_t x = (uint64_t)(rng_unit(r) * (double)n);
  return x < n ? x : n - 1;
}

double attn_rng_normal(struct attn_rng *r) {
  double u1 = rng_unit(r), u2 = rng_unit(r);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

uint64_t attn_fresh_seed(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec ^
         ((uint64_t)getpid() << 32);
}

uint16_t attn_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x40); // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

float attn_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

uint16_t attn_f32_to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u)
    return (uint16_t)(sign | 0x7e00u);
  if (mag >= 0x477ff000u) // rounds to >= 65520: infinity
    return (uint16_t)(sign | 0x7c00u);
  if (mag < 0x38800000u) { // subnormal or zero in f16
    float a;
    memcpy(&a, &mag, 4);
    uint32_t sub = (uint32_t)lrintf(a * 16777216.0f); // a / 2^-24
    return (uint16_t)(sign | sub);
  }
  uint32_t r = mag + 0xfffu + ((mag >> 13) & 1u);
  return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

float attn_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
  if (exp == 0) {
    float f = ldexpf((float)man, -24);
    memcpy(&u, &f, 4);
    u |= sign;
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (man << 13);
  } else {
    u = sign | ((exp + 112) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &u, 4);
  return f;
}
