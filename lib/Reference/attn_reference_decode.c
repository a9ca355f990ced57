//===- attn_reference_decode.c - Float64 reference of decode attention ----===//
//
// attn.fused_decode from its definition (docs/dialects.md): per sequence b
// of length L, query row i at position L - Nq + i, rotated there; the keys
// j < L (j <= position when causal, within the window) read from the cache
// at row j (contiguous) or at row j % page_size of page block_table[b, j /
// page_size] (paged); the modifiers in order; a softmax in float64. And
// attn.cache_append before it: the new rows written at their positions.
//
//===----------------------------------------------------------------------===//
#include "lib/Reference/attn_reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/// Offset of element 0 of key j of kv head g of sequence b in a cache whose
/// rows are dim wide; -1 when a page number is out of range.
static int64_t key_row(const struct attn_ref_decode *p, int64_t b, int64_t g,
                       int64_t j, int64_t dim) {
  if (!p->paged)
    return ((b * p->kv_heads + g) * p->max_seq + j) * dim;
  int64_t page = p->block_table[b * p->max_pages + j / p->page_size];
  if (page < 0 || page >= p->num_pages)
    return -1;
  return ((page * p->kv_heads + g) * p->page_size + j % p->page_size) * dim;
}

/// The score after the modifiers in order (scale first when mods has none).
static double modify(const struct attn_ref_decode *p, int64_t h, int64_t pos,
                     int64_t j, double s) {
  bool scaled = false;
  for (int k = 0; k < p->nmods; ++k)
    scaled |= p->mods[k] == ATTN_REF_SCALE;
  if (!scaled)
    s *= p->scale;
  for (int k = 0; k < p->nmods; ++k) {
    if (p->mods[k] == ATTN_REF_SCALE)
      s *= p->scale;
    else if (p->mods[k] == ATTN_REF_SOFTCAP)
      s = p->softcap * tanh(s / p->softcap);
    else if (p->mods[k] == ATTN_REF_ALIBI)
      s -= exp2(-p->alibi_max_bias * (double)(h + 1) / (double)p->heads) *
           fabs((double)(pos - j));
  }
  return s;
}

bool attn_reference_decode(const struct attn_ref_decode *p, const double *q,
                           const double *k_cache, const double *v_cache,
                           double *out) {
  int64_t d = p->head_dim, dv = p->value_dim, nq = p->seq_q;
  if (p->batch < 1 || p->heads < 1 || p->kv_heads < 1 || nq < 1 || d < 1 ||
      dv < 1 || p->heads % p->kv_heads || p->max_seq < 1 || !p->seqlens ||
      (p->paged && (!p->block_table || p->page_size < 1 || p->max_pages < 1 ||
                    p->max_seq != p->max_pages * p->page_size)))
    return false;
  for (int k = 0; k < p->nmods; ++k)
    if (p->mods[k] != ATTN_REF_SCALE && p->mods[k] != ATTN_REF_SOFTCAP &&
        p->mods[k] != ATTN_REF_ALIBI)
      return false;
  int64_t group = p->heads / p->kv_heads;
  double *qr = malloc(sizeof(double) * (size_t)d);
  double *s = malloc(sizeof(double) * (size_t)p->max_seq);
  bool ok = qr && s;
  for (int64_t b = 0; ok && b < p->batch; ++b) {
    int64_t len = p->seqlens[b];
    if (len < 0 || len > p->max_seq) {
      ok = false;
      break;
    }
    for (int64_t h = 0; ok && h < p->heads; ++h) {
      int64_t g = h / group;
      for (int64_t i = 0; ok && i < nq; ++i) {
        int64_t pos = len - nq + i;
        double *o = out + ((b * p->heads + h) * nq + i) * dv;
        memcpy(qr, q + ((b * p->heads + h) * nq + i) * d,
               sizeof(double) * (size_t)d);
        if (p->rope)
          attn_reference_rope(qr, 1, d, p->rotary_dim, p->theta,
                              p->interleaved, pos);
        int64_t lo = 0, hi = p->causal ? pos + 1 : len;
        if (hi > len)
          hi = len;
        if (p->window && p->window_left >= 0 && pos - p->window_left > lo)
          lo = pos - p->window_left;
        if (p->window && p->window_right >= 0 &&
            pos + p->window_right + 1 < hi)
          hi = pos + p->window_right + 1;
        double mx = -INFINITY, sum = 0.0;
        for (int64_t j = lo; j < hi; ++j) {
          int64_t at = key_row(p, b, g, j, d);
          if (at < 0) {
            ok = false;
            break;
          }
          double dot = 0.0;
          for (int64_t e = 0; e < d; ++e)
            dot += qr[e] * k_cache[at + e];
          s[j] = modify(p, h, pos, j, dot);
          if (s[j] > mx)
            mx = s[j];
        }
        for (int64_t e = 0; e < dv; ++e)
          o[e] = 0.0;
        for (int64_t j = lo; ok && j < hi; ++j) {
          double w = exp(s[j] - mx);
          sum += w;
          const double *vr = v_cache + key_row(p, b, g, j, dv);
          for (int64_t e = 0; e < dv; ++e)
            o[e] += w * vr[e];
        }
        for (int64_t e = 0; ok && sum > 0.0 && e < dv; ++e)
          o[e] /= sum;
      }
    }
  }
  free(qr);
  free(s);
  return ok;
}

bool attn_reference_cache_append(const struct attn_ref_decode *p,
                                 const struct attn_ref_append *a,
                                 const double *k_new, const double *v_new,
                                 double *k_cache, double *v_cache) {
  int64_t d = p->head_dim, dv = p->value_dim, n = a->rows;
  if (n < 1 || !p->seqlens || (p->paged && !p->block_table))
    return false;
  for (int64_t b = 0; b < p->batch; ++b) {
    int64_t len = p->seqlens[b];
    if (len < 0 || len > p->max_seq)
      return false;
    for (int64_t g = 0; g < p->kv_heads; ++g)
      for (int64_t i = 0; i < n; ++i) {
        int64_t pos = len - n + i;
        if (pos < 0)
          continue;
        int64_t kat = key_row(p, b, g, pos, d), vat = key_row(p, b, g, pos, dv);
        if (kat < 0)
          return false;
        int64_t src = (b * p->kv_heads + g) * n + i;
        memcpy(k_cache + kat, k_new + src * d, sizeof(double) * (size_t)d);
        memcpy(v_cache + vat, v_new + src * dv, sizeof(double) * (size_t)dv);
        if (a->rope)
          attn_reference_rope(k_cache + kat, 1, d, a->rotary_dim, a->theta,
                              a->interleaved, pos);
      }
  }
  return true;
}
