//===- topology.c - Topology model: collectives and fused GEMM+comm -------===//
//
// GEMM    = ceil(tiles / SMs) waves * 2 tm tn K / (mma_eff * peak / SMs)
//           + fixed cost
// ring    = launch + steps * step latency + bytes per rank / bus bandwidth
//           all_reduce 2(W-1)/W B in 2(W-1) steps; all_gather and
//           reduce_scatter (W-1)/W B in W-1 steps; all_to_all (W-1)/W B
//           in one step (every peer at once through the switch)
// nodes   hierarchical: inside the node over g GPUs, then per-node
//           aggregates (B/g) over n nodes on each GPU's NIC, phases added
// fused   max(compute, comm) + min(compute, comm) / waves, compute on the
//           compute SMs, NVLink capped at comm SMs * per-SM rate
//
// The constants say where they come from, in hardware.c's tags: [here]
// measured on this project's H200s (shared notes/anchors-h200.md, tables
// B3 and B4), [fit] fitted to those, [ds] datasheet, [assumed].
// docs/cost-model.md ("Topology model") gives the derivation.
//
//===----------------------------------------------------------------------===//
#include "lib/CostModel/topology.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

//===-- Topologies --------------------------------------------------------===//

/// Link and GEMM constants of an NVLink4 (H100/H200) node.
static const struct attn_topo nvlink4 = {
    // [fit] anchors B4: all_reduce of 128 MiB 0.492 ms and of 64 MiB
    // 0.257 ms on 2 H200s, less launch and 2 steps (least squares).
    .nvlink_busbw_all_reduce = 279e9,
    // [fit] anchors B4: all_gather 128 MiB 0.311 ms, 32 MiB 0.096 ms,
    // reduce_scatter 128 MiB 0.324 ms, 64 MiB 0.173 ms, less launch and 1
    // step (least squares; the four within 8 %).
    .nvlink_busbw_gather = 217e9,
    // [assumed] one 400 Gb/s ConnectX-7 per GPU (mKernel's H200 clusters),
    // 90 % of line rate; not measured here (one node only).
    .net_busbw = 45e9,
    // [here] anchors B3 (CUDA graphs): 64 KiB reduce_scatter 11.4 us and
    // all_gather 11.9 us (1 step), all_reduce 13.1 us (2 steps):
    // 10 us a call plus 1.5 us a step.
    .coll_launch_s = 10e-6,
    .nvlink_step_s = 1.5e-6,
    // [assumed] an RDMA round through a host proxy.
    .net_step_s = 8e-6,
    // [here] bench/sm_peer_bandwidth.cu on 2 H200s (bench/raw/2026-11-30-
    // sm-peer-bandwidth.txt): peer writes by CTAs of 1024 threads, both
    // GPUs at once, 36.6 GB/s with 1 CTA, 35.3 with 4, 33.5 with 8; the
    // link saturates at 330-362 GB/s from 12 CTAs (256-thread CTAs: 9.7).
    .sm_comm_bytes_per_s = 36e9,
    // [fit] anchors B4 GEMM alone: 8192^3 1.397 ms (2048 tiles, 16 waves
    // on 132 SMs) and 4096x8192x4096 0.381 ms (1024 tiles, 8 waves), both
    // exact with 128 x 256 tiles at 84.6 % of the dense peak per SM plus
    // 42.3 us.
    .gemm_tile_m = 128,
    .gemm_tile_n = 256,
    .gemm_mma_eff = 0.846,
    .gemm_fixed_s = 42.3e-6,
};

#define MAX_COUNT 1024

bool attn_topo_init(struct attn_topo *t, const char *gpu, int gpus_per_node,
                    int nodes, char *err, size_t errlen) {
  char scratch[1];
  if (!err) {
    err = scratch;
    errlen = sizeof scratch;
  }
  memset(t, 0, sizeof *t);
  const struct attn_cost_gpu *g = attn_cost_gpu_lookup(gpu, err, errlen);
  if (!g)
    return false;
  if (strcmp(g->name, "H200") && strcmp(g->name, "H100")) {
    snprintf(err, errlen,
             "no link description for gpu '%s' (expected H100 or H200)",
             g->name);
    return false;
  }
  if (gpus_per_node < 1 || gpus_per_node > MAX_COUNT || nodes < 1 ||
      nodes > MAX_COUNT) {
    snprintf(err, errlen,
             "gpus per node and nodes must be in [1, %d], found %d and %d",
             MAX_COUNT, gpus_per_node, nodes);
    return false;
  }
  *t = nvlink4;
  t->gpu = g;
  t->gpus_per_node = gpus_per_node;
  t->nodes = nodes;
  return true;
}

static const struct {
  const char *name, *gpu;
  int gpus_per_node, nodes;
} presets[] = {
    {"h200x1", "H200", 1, 1},   {"h200x2", "H200", 2, 1},
    {"h200x4", "H200", 4, 1},   {"h200x8", "H200", 8, 1},
    {"h200-2x8", "H200", 8, 2}, {"h200-4x8", "H200", 8, 4},
    {"h100x8", "H100", 8, 1},
};

#define NUM_PRESETS (sizeof presets / sizeof presets[0])

size_t attn_topo_preset_count(void) { return NUM_PRESETS; }

const char *attn_topo_preset_name(size_t i) {
  return i < NUM_PRESETS ? presets[i].name : NULL;
}

bool attn_topo_preset(struct attn_topo *t, const char *name, char *err,
                      size_t errlen) {
  for (size_t i = 0; i < NUM_PRESETS; ++i)
    if (name && !strcmp(name, presets[i].name))
      return attn_topo_init(t, presets[i].gpu, presets[i].gpus_per_node,
                            presets[i].nodes, err, errlen);
  memset(t, 0, sizeof *t);
  if (err && errlen) {
    int n = snprintf(err, errlen, "unknown topology '%s' (expected ",
                     name ? name : "");
    for (size_t i = 0; i < NUM_PRESETS && n >= 0 && (size_t)n < errlen; ++i)
      n += snprintf(err + n, errlen - (size_t)n, "%s%s",
                    i == 0                 ? ""
                    : i + 1 == NUM_PRESETS ? " or "
                                           : ", ",
                    presets[i].name);
    if (n >= 0 && (size_t)n < errlen)
      snprintf(err + n, errlen - (size_t)n, ")");
  }
  return false;
}

int attn_topo_world_size(const struct attn_topo *t) {
  return t->gpus_per_node * t->nodes;
}

bool attn_topo_check(const struct attn_topo *t, char *err, size_t errlen) {
  char scratch[1];
  if (!err) {
    err = scratch;
    errlen = sizeof scratch;
  }
  if (!t || !t->gpu || t->gpu->sms < 1 || !(t->gpu->bf16_dense_flops > 0)) {
    snprintf(err, errlen, "topology has no gpu");
    return false;
  }
  if (t->gpus_per_node < 1 || t->gpus_per_node > MAX_COUNT || t->nodes < 1 ||
      t->nodes > MAX_COUNT) {
    snprintf(err, errlen,
             "gpus per node and nodes must be in [1, %d], found %d and %d",
             MAX_COUNT, t->gpus_per_node, t->nodes);
    return false;
  }
  static const char *const rate_names[] = {
      "nvlink all_reduce bus bandwidth", "nvlink gather bus bandwidth",
      "network bus bandwidth", "per-sm comm bandwidth", "gemm mma efficiency"};
  const double rates[] = {t->nvlink_busbw_all_reduce, t->nvlink_busbw_gather,
                          t->net_busbw, t->sm_comm_bytes_per_s,
                          t->gemm_mma_eff};
  for (int i = 0; i < 5; ++i)
    if (!(rates[i] > 0) || isinf(rates[i])) {
      snprintf(err, errlen, "%s must be positive, found %g", rate_names[i],
               rates[i]);
      return false;
    }
  if (t->gemm_mma_eff > 1) {
    snprintf(err, errlen, "gemm mma efficiency must be at most 1, found %g",
             t->gemm_mma_eff);
    return false;
  }
  if (!(t->coll_launch_s >= 0) || !(t->nvlink_step_s >= 0) ||
      !(t->net_step_s >= 0) || !(t->gemm_fixed_s >= 0)) {
    snprintf(err, errlen, "latencies must not be negative");
    return false;
  }
  if (t->gemm_tile_m < 1 || t->gemm_tile_n < 1) {
    snprintf(err, errlen, "gemm tile must be positive, found %d x %d",
             t->gemm_tile_m, t->gemm_tile_n);
    return false;
  }
  return true;
}

//===-- GEMM --------------------------------------------------------------===//

/// The largest GEMM dimension the model accepts (keeps tile counts exact).
#define MAX_DIM (1LL << 32)

/// A call's world size must be the topology's.
static bool check_world(const struct attn_topo *t, int world, char *err,
                        size_t errlen) {
  if (world == attn_topo_world_size(t))
    return true;
  snprintf(err, errlen,
           "world size %d does not match the topology's %d (%d nodes of "
           "%d gpus)",
           world, attn_topo_world_size(t), t->nodes, t->gpus_per_node);
  return false;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static bool check_gemm(int64_t m, int64_t n, int64_t k, char *err,
                       size_t errlen) {
  if (m <= 0 || n <= 0 || k <= 0) {
    snprintf(err, errlen, "gemm sizes must be positive, found %lld x %lld x "
                          "%lld",
             (long long)m, (long long)n, (long long)k);
    return false;
  }
  if (m > MAX_DIM || n > MAX_DIM || k > MAX_DIM) {
    snprintf(err, errlen, "gemm too large for the topology model (each "
                          "size up to 2^32)");
    return false;
  }
  return true;
}

/// Output tiles of an M x N GEMM.
static int64_t gemm_tiles(const struct attn_topo *t, int64_t m, int64_t n) {
  return ceil_div(m, t->gemm_tile_m) * ceil_div(n, t->gemm_tile_n);
}

/// gemm seconds without checks: sms in [1, SMs].
static double gemm_time(const struct attn_topo *t, int64_t m, int64_t n,
                        int64_t k, int sms) {
  const struct attn_cost_gpu *g = t->gpu;
  double per_sm = t->gemm_mma_eff * g->bf16_dense_flops / g->sms;
  double tile = 2.0 * t->gemm_tile_m * t->gemm_tile_n * (double)k / per_sm;
  double waves = (double)ceil_div(gemm_tiles(t, m, n), sms);
  return waves * tile + t->gemm_fixed_s;
}

double attn_topo_gemm_seconds(const struct attn_topo *t, int64_t m, int64_t n,
                              int64_t k, int sms, char *err, size_t errlen) {
  char scratch[1];
  if (!err) {
    err = scratch;
    errlen = sizeof scratch;
  }
  if (!attn_topo_check(t, err, errlen) || !check_gemm(m, n, k, err, errlen))
    return -1;
  if (sms < 1 || sms > t->gpu->sms) {
    snprintf(err, errlen, "sms must be in [1, %d], found %d", t->gpu->sms,
             sms);
    return -1;
  }
  return gemm_time(t, m, n, k, sms);
}

//===-- Collectives -------------------------------------------------------===//

static const char *const coll_names[ATTN_COLL_NUM_KINDS] = {
    "all_reduce", "all_gather", "reduce_scatter", "all_to_all"};

const char *attn_coll_kind_name(enum attn_coll_kind k) {
  return (unsigned)k < ATTN_COLL_NUM_KINDS ? coll_names[k] : "?";
}

bool attn_topo_collective(const struct attn_topo *t, enum attn_coll_kind kind,
                          double bytes, int world, int comm_sms,
                          struct attn_coll_cost *out, char *err,
                          size_t errlen) {
  char scratch[1];
  if (!err) {
    err = scratch;
    errlen = sizeof scratch;
  }
  memset(out, 0, sizeof *out);
  if (!attn_topo_check(t, err, errlen))
    return false;
  if ((unsigned)kind >= ATTN_COLL_NUM_KINDS) {
    snprintf(err, errlen, "unknown collective %d", (int)kind);
    return false;
  }
  if (!(bytes > 0) || isinf(bytes)) {
    snprintf(err, errlen, "collective size must be positive, found %g bytes",
             bytes);
    return false;
  }
  if (!check_world(t, world, err, errlen))
    return false;
  if (comm_sms < 0 || comm_sms > t->gpu->sms) {
    snprintf(err, errlen, "communication sms must be in [0, %d], found %d",
             t->gpu->sms, comm_sms);
    return false;
  }
  if (world == 1)
    return true; // nothing moves, nothing is launched
  double g = t->gpus_per_node, n = t->nodes, w = world;
  // Per rank: bytes over each link, and ring steps.
  double nv = 0, net = 0;
  int nv_steps = 0, net_steps = 0;
  switch (kind) {
  case ATTN_COLL_ALL_REDUCE:
    // reduce_scatter in the node, all_reduce of B/g across nodes,
    // all_gather in the node: together the ring's 2(W-1)/W B when n = 1.
    nv = 2 * (g - 1) / g * bytes;
    net = 2 * (n - 1) / n * bytes / g;
    nv_steps = 2 * (t->gpus_per_node - 1);
    net_steps = 2 * (t->nodes - 1);
    break;
  case ATTN_COLL_ALL_GATHER:
  case ATTN_COLL_REDUCE_SCATTER:
    // Across nodes: the (n-1) shards of size B/W from the same local rank
    // of every other node; in the node: (g-1)/g of the buffer.
    nv = (g - 1) / g * bytes;
    net = (n - 1) / n * bytes / g;
    nv_steps = t->gpus_per_node - 1;
    net_steps = t->nodes - 1;
    break;
  default: // all_to_all: B/W to every other rank, all at once
    nv = (g - 1) / w * bytes;
    net = (w - g) / w * bytes;
    nv_steps = t->gpus_per_node > 1;
    net_steps = t->nodes > 1;
    break;
  }
  double nv_rate = kind == ATTN_COLL_ALL_REDUCE ? t->nvlink_busbw_all_reduce
                                                : t->nvlink_busbw_gather;
  if (comm_sms > 0 && comm_sms * t->sm_comm_bytes_per_s < nv_rate)
    nv_rate = comm_sms * t->sm_comm_bytes_per_s;
  out->nvlink_bytes = nv;
  out->net_bytes = net;
  out->nvlink_steps = nv_steps;
  out->net_steps = net_steps;
  out->nvlink_s = nv / nv_rate;
  out->net_s = net / t->net_busbw;
  out->latency_s = t->coll_launch_s + nv_steps * t->nvlink_step_s +
                   net_steps * t->net_step_s;
  // The hierarchical phases run one after the other; all_to_all's two
  // links carry different peers' data at the same time.
  double links = kind == ATTN_COLL_ALL_TO_ALL ? fmax(out->nvlink_s, out->net_s)
                                              : out->nvlink_s + out->net_s;
  out->time_s = out->latency_s + links;
  return true;
}

//===-- Fused GEMM + collective -------------------------------------------===//

static const char *const pattern_names[ATTN_FUSED_NUM_PATTERNS] = {
    "gemm+all_reduce", "all_gather+gemm", "gemm+reduce_scatter"};

const char *attn_fused_pattern_name(enum attn_fused_pattern p) {
  return (unsigned)p < ATTN_FUSED_NUM_PATTERNS ? pattern_names[p] : "?";
}

static const enum attn_coll_kind pattern_coll[ATTN_FUSED_NUM_PATTERNS] = {
    ATTN_COLL_ALL_REDUCE, ATTN_COLL_ALL_GATHER, ATTN_COLL_REDUCE_SCATTER};

/// Checks the arguments of a fused prediction and fills the baselines of
/// out (gemm_s, nccl_s, sequential_s, lower_bound_s, coll_bytes,
/// total_sms).
static bool fused_setup(const struct attn_topo *t, enum attn_fused_pattern p,
                        int64_t m, int64_t n, int64_t k, int world,
                        int total_sms, struct attn_fused_cost *out, char *err,
                        size_t errlen) {
  memset(out, 0, sizeof *out);
  if (!attn_topo_check(t, err, errlen) || !check_gemm(m, n, k, err, errlen))
    return false;
  if ((unsigned)p >= ATTN_FUSED_NUM_PATTERNS) {
    snprintf(err, errlen, "unknown fused pattern %d", (int)p);
    return false;
  }
  if (!check_world(t, world, err, errlen))
    return false;
  if (p != ATTN_FUSED_GEMM_ALL_REDUCE && m % world != 0) {
    snprintf(err, errlen, "%s needs M divisible by the world size %d, found "
                          "M = %lld",
             pattern_names[p], world, (long long)m);
    return false;
  }
  if (total_sms == 0)
    total_sms = t->gpu->sms;
  int least = world > 1 ? 2 : 1;
  if (total_sms < least || total_sms > t->gpu->sms) {
    snprintf(err, errlen, "total sms must be in [%d, %d] (0: all), found %d",
             least, t->gpu->sms, total_sms);
    return false;
  }
  out->total_sms = total_sms;
  // bf16: 2 bytes an element. The all_gather buffer is A (M x K) gathered;
  // all_reduce and reduce_scatter work on C (M x N).
  out->coll_bytes = 2.0 * (double)m * (double)(p == ATTN_FUSED_ALL_GATHER_GEMM ? k : n);
  out->gemm_s = gemm_time(t, m, n, k, t->gpu->sms);
  struct attn_coll_cost c;
  if (!attn_topo_collective(t, pattern_coll[p], out->coll_bytes, world, 0, &c,
                            err, errlen))
    return false;
  out->nccl_s = c.time_s;
  out->sequential_s = out->gemm_s + out->nccl_s;
  out->lower_bound_s = fmax(out->gemm_s, out->nccl_s);
  return true;
}

/// The fused time at comm_sms communication SMs (arguments checked).
static void fused_eval(const struct attn_topo *t, enum attn_fused_pattern p,
                       int64_t m, int64_t n, int64_t k, int world,
                       int comm_sms, struct attn_fused_cost *out) {
  int compute = out->total_sms - comm_sms;
  struct attn_coll_cost c;
  char err[8];
  out->comm_sms = comm_sms;
  out->compute_sms = compute;
  out->compute_s = gemm_time(t, m, n, k, compute);
  out->comm_s = 0;
  if (world > 1 && attn_topo_collective(t, pattern_coll[p], out->coll_bytes,
                                        world, comm_sms, &c, err, sizeof err))
    out->comm_s = c.time_s;
  // Tile-granularity pipeline of `steps` waves: every wave's transfer
  // overlaps the next wave's compute, except the first wave's compute
  // (all_gather: the first wave's data) and the last wave's transfer.
  out->steps = ceil_div(gemm_tiles(t, m, n), compute);
  double hi = fmax(out->compute_s, out->comm_s);
  double lo = fmin(out->compute_s, out->comm_s);
  out->fused_s = world > 1 ? hi + lo / (double)out->steps : out->compute_s;
}

bool attn_topo_fused_at(const struct attn_topo *t, enum attn_fused_pattern p,
                        int64_t m, int64_t n, int64_t k, int world,
                        int total_sms, int comm_sms,
                        struct attn_fused_cost *out, char *err, size_t errlen) {
  char scratch[1];
  if (!err) {
    err = scratch;
    errlen = sizeof scratch;
  }
  if (!fused_setup(t, p, m, n, k, world, total_sms, out, err, errlen))
    return false;
  int lo = world > 1 ? 1 : 0, hi = world > 1 ? out->total_sms - 1 : 0;
  if (comm_sms < lo || comm_sms > hi) {
    snprintf(err, errlen, "communication sms must be in [%d, %d], found %d",
             lo, hi, comm_sms);
    return false;
  }
  fused_eval(t, p, m, n, k, world, comm_sms, out);
  return true;
}

bool attn_topo_fused(const struct attn_topo *t, enum attn_fused_pattern p,
                     int64_t m, int64_t n, int64_t k, int world, int total_sms,
                     struct attn_fused_cost *out, char *err, size_t errlen) {
  char scratch[1];
  if (!err) {
    err = scratch;
    errlen = sizeof scratch;
  }
  if (!fused_setup(t, p, m, n, k, world, total_sms, out, err, errlen))
    return false;
  if (world == 1) {
    fused_eval(t, p, m, n, k, world, 0, out);
    return true;
  }
  struct attn_fused_cost best = *out, c;
  best.fused_s = INFINITY;
  for (int s = 1; s < out->total_sms; ++s) {
    c = *out;
    fused_eval(t, p, m, n, k, world, s, &c);
    if (c.fused_s < best.fused_s)
      best = c;
  }
  *out = best;
  return true;
}
