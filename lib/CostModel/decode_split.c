//===- decode_split.c - How many CTAs split a decode's keys ---------------===//
//
// The decode kernel is bound by reading the cache. Without a split it has
// one CTA per (sequence, K/V head, row group): 8 at batch 1 with 8 K/V
// heads, too few to keep 132 SMs' loads in flight; with S splits it has S
// times as many, each reading 1/S of the keys, and a combine kernel reads
// and writes the partial rows (f32) once more, one launch later. The model
// prices S by the waves of CTAs over the GPU's CTA slots (each slot reads
// at its share of the bandwidth) plus, for S > 1, the partials' traffic and
// a launch, and takes the cheapest S (the smallest on a tie). Pure
// arithmetic on the problem and the hardware description.
//
//===----------------------------------------------------------------------===//
#include "lib/CostModel/cost_model.h"

#include <math.h>

/// A CTA's fixed time beside its reads (about 1,700 cycles: q, RoPE, the
/// merges through shared memory, the stores) [assumed, not measured].
#define ATTN_COST_DECODE_CTA_S 1e-6

double attn_cost_decode_time(const struct attn_cost_decode *p,
                             const struct attn_cost_gpu *g, int splits) {
  if (!p || !g || splits < 1 || p->ctas < 1 || p->keys < 1)
    return INFINITY;
  double bw = attn_cost_gpu_bandwidth(g);
  double slots = (double)g->sms * (p->ctas_per_sm > 0 ? p->ctas_per_sm : 1);
  double ctas = (double)p->ctas * splits;
  double waves = ceil(ctas / slots);
  // Keys per split, rounded up to the kernel's step as the kernel does.
  double step = p->key_step > 0 ? (double)p->key_step : 1.0;
  double keys = ceil((double)p->keys / splits / step) * step;
  double cta_bytes = keys * (double)p->bytes_per_key;
  // A CTA reads at its slot's share of the bandwidth whether or not the
  // other slots are busy (its loads in flight bound it), so a wave takes
  // cta_bytes / (bw / slots).
  // Each wave also pays its CTAs' fixed work (q and its rotation, the
  // merge and the stores): ATTN_COST_DECODE_CTA_S, assumed.
  double t = waves * (cta_bytes * slots / bw + ATTN_COST_DECODE_CTA_S);
  if (splits > 1)
    t += g->kernel.launch_s +
         2.0 * (double)p->rows * splits * (p->value_dim + 1) * 4.0 / bw;
  return t;
}

int attn_cost_decode_splits(const struct attn_cost_decode *p,
                            const struct attn_cost_gpu *g, int max_splits) {
  if (!p || !g || p->keys < 1)
    return 1;
  int best = 1;
  double best_t = attn_cost_decode_time(p, g, 1);
  int64_t step = p->key_step > 0 ? p->key_step : 1;
  for (int s = 2; s <= max_splits; ++s) {
    if ((int64_t)(s - 1) * step >= p->keys) // a split with no keys at all
      break;
    double t = attn_cost_decode_time(p, g, s);
    if (t < best_t * (1.0 - 1e-9)) {
      best = s;
      best_t = t;
    }
  }
  return best;
}
