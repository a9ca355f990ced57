//===- cost_model.c - The Rotation Calculus: RoPE placement costs ---------===//
//
// Time of one attention with RoPE placed four ways, as the Hopper kernel
// (lower-tile-to-hopper) runs it: a grid of CTAs of block_m query rows, each
// looping over block_n-key tiles (to the diagonal when causal).
//
//   attention  = max(sum over CTAs / SMs, longest CTA) + one launch
//                CTA = (tiles + cta_overhead_tiles) * tile time
//                tile time = 4 BM BN d / (mma_eff * peak per SM)
//                          + BM BN / (softmax_eff * MUFU rate)
//   fused      + Q rotated once per CTA, K once per tile, in the kernel:
//                elements * rope_cycles_per_elem / clock, per SM
//   split      + Q in the kernel as above; K by a kernel: read + write of
//                K at HBM bandwidth, one more launch
//   pre        + Q and K by two kernels: read + write of both, two launches
//   producer   + nothing (the projection's epilogue; needs a projection)
//
// docs/cost-model.md derives each term, gives every constant's source and
// the validation against the H200 measurements.
//
//===----------------------------------------------------------------------===//
#include "lib/CostModel/cost_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const strategy_names[ATTN_COST_NUM_STRATEGIES] = {
    "fused", "split", "pre", "producer"};

const char *attn_cost_strategy_name(enum attn_cost_strategy s) {
  return (unsigned)s < ATTN_COST_NUM_STRATEGIES ? strategy_names[s] : "?";
}

bool attn_cost_strategy_parse(const char *name, enum attn_cost_strategy *out) {
  for (int s = 0; s < ATTN_COST_NUM_STRATEGIES; ++s)
    if (name && !strcmp(name, strategy_names[s])) {
      *out = (enum attn_cost_strategy)s;
      return true;
    }
  return false;
}

//===-- Problems ----------------------------------------------------------===//

/// The largest batch, head count or sequence length the model accepts.
#define MAX_SEQ (1LL << 24)

bool attn_cost_check_problem(const struct attn_cost_problem *p, char *err,
                             size_t errlen) {
  static const char *const names[] = {"batch", "heads", "kv heads", "seq_q",
                                      "seq_k", "head dim"};
  const int64_t sizes[] = {p->batch,  p->heads, p->kv_heads,
                           p->seq_q,  p->seq_k, p->head_dim};
  for (int i = 0; i < 6; ++i)
    if (sizes[i] <= 0) {
      snprintf(err, errlen, "%s must be positive, found %lld", names[i],
               (long long)sizes[i]);
      return false;
    }
  for (int i = 0; i < 5; ++i)
    if (sizes[i] > MAX_SEQ || p->head_dim > 1024) {
      snprintf(err, errlen, "problem too large for the cost model (batch, "
                            "heads and sequence lengths up to 2^24, head dim "
                            "up to 1024)");
      return false;
    }
  if (p->heads % p->kv_heads != 0) {
    snprintf(err, errlen, "heads %lld are not a multiple of kv heads %lld",
             (long long)p->heads, (long long)p->kv_heads);
    return false;
  }
  if (p->rotary_dim < 0 || p->rotary_dim % 2 != 0 ||
      p->rotary_dim > p->head_dim) {
    snprintf(err, errlen,
             "rotary dim must be even and at most the head dim %lld, found "
             "%lld",
             (long long)p->head_dim, (long long)p->rotary_dim);
    return false;
  }
  if (p->dtype_bytes != 2 && p->dtype_bytes != 4) {
    snprintf(err, errlen, "element size must be 2 or 4 bytes, found %d",
             p->dtype_bytes);
    return false;
  }
  if (p->block_m <= 0 || p->block_n <= 0 || p->block_m > 4096 ||
      p->block_n > 4096) {
    snprintf(err, errlen, "block sizes must be in [1, 4096], found %d x %d",
             p->block_m, p->block_n);
    return false;
  }
  // Tile counts are int64: keep batch * heads * query blocks * key blocks
  // below 2^62.
  double tiles = (double)p->batch * (double)p->heads *
                 ceil((double)p->seq_q / p->block_m) *
                 ceil((double)p->seq_k / p->block_n);
  if (tiles > 0x1p62) {
    snprintf(err, errlen, "problem too large for the cost model (%.3g "
                          "tiles; at most 2^62)",
             tiles);
    return false;
  }
  return true;
}

//===-- Counting work -----------------------------------------------------===//

/// sum_{i=0}^{n-1} floor((a*i + b) / m), for n, m > 0 and a, b >= 0
/// (the classic Euclid-like recursion; O(log m)).
static int64_t floor_sum(int64_t n, int64_t m, int64_t a, int64_t b) {
  int64_t ans = 0;
  while (n > 0) {
    if (a >= m) {
      ans += (n - 1) * n / 2 * (a / m);
      a %= m;
    }
    if (b >= m) {
      ans += n * (b / m);
      b %= m;
    }
    int64_t y_max = a * n + b;
    if (y_max < m)
      break;
    n = y_max / m;
    b = y_max % m;
    int64_t t = m;
    m = a;
    a = t;
  }
  return ans;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Tiles of one (batch, head): per CTA and in total, and the longest CTA.
struct work {
  int64_t nq;          ///< CTAs (query blocks)
  int64_t tiles;       ///< key tiles visited, all CTAs
  int64_t last_tiles;  ///< key tiles of the longest CTA
  double pairs;        ///< visible (query, key) pairs
};

/// The key loop stops at the diagonal when causal (key j visible to query i
/// iff j <= i): query block i visits min(nk, ceil((i + 1) BM / BN)) tiles.
static struct work count_work(const struct attn_cost_problem *p) {
  struct work w;
  int64_t bm = p->block_m, bn = p->block_n;
  int64_t n = p->seq_q, m = p->seq_k;
  w.nq = ceil_div(n, bm);
  int64_t nk = ceil_div(m, bn);
  if (!p->causal) {
    w.tiles = w.nq * nk;
    w.last_tiles = nk;
    w.pairs = (double)n * (double)m;
    return w;
  }
  // Blocks i < below see fewer than nk tiles: (i + 1) BM <= (nk - 1) BN.
  int64_t below = (nk - 1) * bn / bm;
  if (below > w.nq)
    below = w.nq;
  // sum_{i<below} ceil((i + 1) BM / BN) = sum floor((BM i + BM + BN - 1) / BN)
  w.tiles = floor_sum(below, bn, bm, bm + bn - 1) + (w.nq - below) * nk;
  int64_t last = ceil_div(w.nq * bm, bn);
  w.last_tiles = last < nk ? last : nk;
  w.pairs = m >= n ? (double)n * (double)(n + 1) / 2
                   : (double)m * (double)(m + 1) / 2 + (double)(n - m) * m;
  return w;
}

//===-- Estimates ---------------------------------------------------------===//

/// Peak FLOP/s of the element type: tensor cores for 2-byte types, FP32
/// FMA lanes for f32 (the Hopper kernel has no f32 path).
static double peak_flops(const struct attn_cost_problem *p,
                         const struct attn_cost_gpu *g) {
  if (p->dtype_bytes == 2)
    return g->bf16_dense_flops;
  return 2.0 * g->fp32_fma_per_sm_clk * g->sms * g->boost_clock_hz;
}

/// Seconds one SM spends on one BM x BN tile: the two products and the
/// softmax of the tile's scores.
static double tile_seconds(const struct attn_cost_problem *p,
                           const struct attn_cost_gpu *g) {
  const struct attn_cost_kernel_calib *k = &g->kernel;
  double score = (double)p->block_m * p->block_n;
  double mma = 4.0 * score * (double)p->head_dim /
               (k->mma_eff * peak_flops(p, g) / g->sms);
  double softmax = score / (k->softmax_eff * g->sfu_per_sm_clk *
                            g->boost_clock_hz);
  return mma + softmax;
}

/// Kernel time from the seconds of all CTAs together and of the longest
/// one: balanced over the SMs, but never shorter than the longest CTA.
static double kernel_seconds(double cta_total, double cta_longest, int sms) {
  double balanced = cta_total / sms;
  return balanced > cta_longest ? balanced : cta_longest;
}

bool attn_cost_estimate(const struct attn_cost_problem *p,
                        const struct attn_cost_gpu *g,
                        enum attn_cost_strategy s, struct attn_cost *out,
                        char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (!attn_cost_check_problem(p, err, errlen))
    return false;
  if ((unsigned)s >= ATTN_COST_NUM_STRATEGIES) {
    snprintf(err, errlen, "unknown strategy %d", (int)s);
    return false;
  }
  const struct attn_cost_kernel_calib *k = &g->kernel;
  struct work w = count_work(p);
  double bh = (double)p->batch * (double)p->heads;
  double t_tile = tile_seconds(p, g);
  double o = k->cta_overhead_tiles;
  out->ctas = (int64_t)bh * w.nq;
  out->tiles = (int64_t)bh * w.tiles;
  out->flops = 4.0 * bh * w.pairs * (double)p->head_dim;
  out->executed_flops = 4.0 * (double)out->tiles * p->block_m * p->block_n *
                        (double)p->head_dim;
  // The attention alone: every CTA's tiles plus its fixed overhead.
  double att_total = ((double)out->tiles + o * (double)out->ctas) * t_tile;
  double att_last = ((double)w.last_tiles + o) * t_tile;
  out->attention_s = kernel_seconds(att_total, att_last, g->sms) + k->launch_s;
  out->efficiency = out->flops / (out->attention_s * peak_flops(p, g));
  out->kernels = 1;
  double rd = (double)p->rotary_dim;
  double bytes = (double)p->dtype_bytes * (double)p->head_dim;
  double q_rows = bh * (double)p->seq_q;
  double k_rows = (double)p->batch * (double)p->kv_heads * (double)p->seq_k;
  if (rd == 0) {
    out->time_s = out->attention_s;
    return true;
  }
  // In-kernel rotation: elements per CTA (Q's tile) and per key tile (K).
  double q_cta = 0, k_tile = 0;
  if (s == ATTN_COST_FUSED || s == ATTN_COST_SPLIT)
    q_cta = (double)p->block_m * rd;
  if (s == ATTN_COST_FUSED)
    k_tile = (double)p->block_n * rd;
  double sec_per_elem = k->rope_cycles_per_elem / g->boost_clock_hz;
  out->q_rotated = q_cta ? q_cta * (double)out->ctas : q_rows * rd;
  out->k_rotated = k_tile ? k_tile * (double)out->tiles : k_rows * rd;
  out->k_repeat = out->k_rotated / (k_rows * rd);
  if (q_cta || k_tile) {
    double rot_total =
        (q_cta * (double)out->ctas + k_tile * (double)out->tiles) *
        sec_per_elem;
    double rot_last = (q_cta + k_tile * (double)w.last_tiles) * sec_per_elem;
    double with = kernel_seconds(att_total + rot_total, att_last + rot_last,
                                 g->sms) +
                  k->launch_s;
    out->rope_in_kernel_s = with - out->attention_s;
  }
  // Rotation kernels read and write whole rows (the Hopper ones copy the
  // unrotated features too).
  if (s == ATTN_COST_SPLIT || s == ATTN_COST_PRE) {
    out->rope_bytes = 2.0 * k_rows * bytes;
    out->kernels = 2;
  }
  if (s == ATTN_COST_PRE) {
    out->rope_bytes += 2.0 * q_rows * bytes;
    out->kernels = 3;
  }
  out->rope_kernels_s = out->rope_bytes / attn_cost_gpu_bandwidth(g);
  out->launch_s = (out->kernels - 1) * k->launch_s;
  out->time_s = out->attention_s + out->rope_in_kernel_s +
                out->rope_kernels_s + out->launch_s;
  return true;
}

enum attn_cost_strategy attn_cost_choose(const struct attn_cost_problem *p,
                                         const struct attn_cost_gpu *g,
                                         unsigned available,
                                         struct attn_cost *best) {
  enum attn_cost_strategy pick = ATTN_COST_NUM_STRATEGIES;
  struct attn_cost c, keep;
  char err[16];
  for (int s = 0; s < ATTN_COST_NUM_STRATEGIES; ++s) {
    if (!(available & ATTN_COST_BIT(s)))
      continue;
    if (!attn_cost_estimate(p, g, (enum attn_cost_strategy)s, &c, err,
                            sizeof err))
      return ATTN_COST_NUM_STRATEGIES;
    if (pick == ATTN_COST_NUM_STRATEGIES || c.time_s < keep.time_s) {
      pick = (enum attn_cost_strategy)s;
      keep = c;
    }
  }
  if (best && pick != ATTN_COST_NUM_STRATEGIES)
    *best = keep;
  return pick;
}

/// True when a is strictly cheaper than b for p with seq_q = n (seq_k in
/// its ratio to seq_q). *ok becomes false when the problem is invalid.
static bool a_cheaper(const struct attn_cost_problem *p,
                      const struct attn_cost_gpu *g, enum attn_cost_strategy a,
                      enum attn_cost_strategy b, int64_t n, bool *ok) {
  struct attn_cost_problem q = *p;
  q.seq_q = n;
  q.seq_k = (int64_t)llround((double)n * (double)p->seq_k / (double)p->seq_q);
  if (q.seq_k < 1)
    q.seq_k = 1;
  struct attn_cost ca, cb;
  char err[16];
  if (!attn_cost_estimate(&q, g, a, &ca, err, sizeof err) ||
      !attn_cost_estimate(&q, g, b, &cb, err, sizeof err)) {
    *ok = false;
    return false;
  }
  return ca.time_s < cb.time_s;
}

bool attn_cost_crossover(const struct attn_cost_problem *p,
                         const struct attn_cost_gpu *g,
                         enum attn_cost_strategy a, enum attn_cost_strategy b,
                         int64_t lo, int64_t hi, int64_t *n_star) {
  char err[16];
  if (lo < 1 || hi <= lo || !attn_cost_check_problem(p, err, sizeof err))
    return false;
  bool ok = true;
  bool at_lo = a_cheaper(p, g, a, b, lo, &ok);
  bool at_hi = a_cheaper(p, g, a, b, hi, &ok);
  if (!ok || at_lo == at_hi)
    return false;
  // Invariant: the answer lies in (lo, hi].
  while (hi - lo > 1) {
    int64_t mid = lo + (hi - lo) / 2;
    if (a_cheaper(p, g, a, b, mid, &ok) == at_lo)
      lo = mid;
    else
      hi = mid;
  }
  *n_star = hi;
  return ok;
}
