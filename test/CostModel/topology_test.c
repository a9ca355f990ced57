// topology_test.c - unit tests of the topology model (lib/CostModel/
// topology.h): presets, the GEMM and collective formulas on hand-computed
// cases, the anchors they were calibrated on (shared notes/anchors-h200.md,
// tables B3 and B4), monotonicity, the fused split and its bounds, and every
// error path. With --table it prints the prediction table of
// docs/cost-model.md ("Topology model") instead.

#include "lib/CostModel/topology.h"
#include "test/test_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/// |a - b| <= rel * |b| (and a tiny absolute slack for zeros).
static int near(double a, double b, double rel) {
  return fabs(a - b) <= rel * fabs(b) + 1e-15;
}

#define MIB (1024.0 * 1024.0)

static struct attn_topo topo(const char *preset) {
  struct attn_topo t;
  char err[256];
  if (!attn_topo_preset(&t, preset, err, sizeof err))
    fprintf(stderr, "preset %s: %s\n", preset, err);
  return t;
}

static double coll(const struct attn_topo *t, enum attn_coll_kind k,
                   double bytes, int sms) {
  struct attn_coll_cost c;
  char err[256];
  if (!attn_topo_collective(t, k, bytes, attn_topo_world_size(t), sms, &c,
                            err, sizeof err)) {
    fprintf(stderr, "collective: %s\n", err);
    return NAN;
  }
  return c.time_s;
}

//===-- Topologies --------------------------------------------------------===//

static int test_presets(void) {
  struct attn_topo t;
  char err[256];
  CHECK(attn_topo_preset_count() == 7);
  CHECK(attn_topo_preset_name(7) == NULL);
  static const int worlds[] = {1, 2, 4, 8, 16, 32, 8};
  for (size_t i = 0; i < attn_topo_preset_count(); ++i) {
    CHECK(attn_topo_preset(&t, attn_topo_preset_name(i), err, sizeof err));
    CHECK(attn_topo_world_size(&t) == worlds[i]);
    CHECK(attn_topo_check(&t, err, sizeof err));
    CHECK(t.gpu->sms == 132);
  }
  CHECK(attn_topo_preset(&t, "h200-2x8", err, sizeof err));
  CHECK(t.gpus_per_node == 8 && t.nodes == 2 && !strcmp(t.gpu->name, "H200"));
  CHECK(!attn_topo_preset(&t, "h200x3", err, sizeof err));
  CHECK(!strcmp(err, "unknown topology 'h200x3' (expected h200x1, h200x2, "
                     "h200x4, h200x8, h200-2x8, h200-4x8 or h100x8)"));
  CHECK(!attn_topo_preset(&t, NULL, NULL, 0));
  // Any shape of machine through attn_topo_init.
  CHECK(attn_topo_init(&t, "h200", 3, 5, err, sizeof err));
  CHECK(attn_topo_world_size(&t) == 15);
  CHECK(!attn_topo_init(&t, "A100", 8, 1, err, sizeof err));
  CHECK(!strcmp(err, "no link description for gpu 'A100' (expected H100 or "
                     "H200)"));
  CHECK(!attn_topo_init(&t, "B200", 8, 1, err, sizeof err));
  CHECK(!strncmp(err, "unknown gpu 'B200'", 18));
  CHECK(!attn_topo_init(&t, "H200", 0, 1, err, sizeof err));
  CHECK(!strcmp(err, "gpus per node and nodes must be in [1, 1024], found 0 "
                     "and 1"));
  CHECK(!attn_topo_init(&t, "H200", 8, -2, NULL, 0));
  return 0;
}

static int test_check_topology(void) {
  char err[256];
  struct attn_topo t = topo("h200x8"), bad;
  bad = t;
  bad.gpu = NULL;
  CHECK(!attn_topo_check(&bad, err, sizeof err));
  CHECK(!strcmp(err, "topology has no gpu"));
  CHECK(!attn_topo_check(NULL, NULL, 0));
  bad = t;
  bad.net_busbw = 0;
  CHECK(!attn_topo_check(&bad, err, sizeof err));
  CHECK(!strcmp(err, "network bus bandwidth must be positive, found 0"));
  bad = t;
  bad.sm_comm_bytes_per_s = -1;
  CHECK(!attn_topo_check(&bad, err, sizeof err));
  bad = t;
  bad.nvlink_busbw_all_reduce = NAN;
  CHECK(!attn_topo_check(&bad, err, sizeof err));
  bad = t;
  bad.gemm_mma_eff = 1.5;
  CHECK(!attn_topo_check(&bad, err, sizeof err));
  CHECK(!strcmp(err, "gemm mma efficiency must be at most 1, found 1.5"));
  bad = t;
  bad.nvlink_step_s = -1e-6;
  CHECK(!attn_topo_check(&bad, err, sizeof err));
  CHECK(!strcmp(err, "latencies must not be negative"));
  bad = t;
  bad.gemm_tile_n = 0;
  CHECK(!attn_topo_check(&bad, err, sizeof err));
  CHECK(!strcmp(err, "gemm tile must be positive, found 128 x 0"));
  bad = t;
  bad.nodes = 0;
  CHECK(!attn_topo_check(&bad, err, sizeof err));
  // A failing check makes every prediction fail.
  struct attn_coll_cost c;
  CHECK(!attn_topo_collective(&bad, ATTN_COLL_ALL_REDUCE, 1e6, 0, 0, &c, err,
                              sizeof err));
  CHECK(attn_topo_gemm_seconds(&bad, 8, 8, 8, 1, NULL, 0) < 0);
  return 0;
}

static int test_names(void) {
  CHECK(!strcmp(attn_coll_kind_name(ATTN_COLL_ALL_REDUCE), "all_reduce"));
  CHECK(!strcmp(attn_coll_kind_name(ATTN_COLL_ALL_TO_ALL), "all_to_all"));
  CHECK(!strcmp(attn_coll_kind_name(ATTN_COLL_NUM_KINDS), "?"));
  CHECK(!strcmp(attn_fused_pattern_name(ATTN_FUSED_ALL_GATHER_GEMM),
                "all_gather+gemm"));
  CHECK(!strcmp(attn_fused_pattern_name((enum attn_fused_pattern)-1), "?"));
  return 0;
}

//===-- GEMM --------------------------------------------------------------===//

static int test_gemm(void) {
  struct attn_topo t = topo("h200x2");
  char err[256];
  // Hand-computed: per-SM rate 0.846 * 989.4e12 / 132; a 128 x 256 tile of
  // K = 8192 takes 2 * 128 * 256 * 8192 / rate; 2048 tiles on 132 SMs are
  // 16 waves, on 64 SMs 32 waves, on 1 SM 2048.
  double rate = 0.846 * 989.4e12 / 132;
  double tile = 2.0 * 128 * 256 * 8192 / rate;
  CHECK(near(attn_topo_gemm_seconds(&t, 8192, 8192, 8192, 132, err,
                                    sizeof err),
             16 * tile + 42.3e-6, 1e-12));
  CHECK(near(attn_topo_gemm_seconds(&t, 8192, 8192, 8192, 64, err, sizeof err),
             32 * tile + 42.3e-6, 1e-12));
  CHECK(near(attn_topo_gemm_seconds(&t, 8192, 8192, 8192, 1, err, sizeof err),
             2048 * tile + 42.3e-6, 1e-12));
  // 1 tile, partly filled: one wave of K = 64.
  CHECK(near(attn_topo_gemm_seconds(&t, 1, 1, 64, 132, err, sizeof err),
             2.0 * 128 * 256 * 64 / rate + 42.3e-6, 1e-12));
  // The anchors (B4, GEMM alone, 2-GPU machine): 1.397 and 0.381 ms.
  CHECK(near(attn_topo_gemm_seconds(&t, 8192, 8192, 8192, 132, NULL, 0),
             1.397e-3, 0.01));
  CHECK(near(attn_topo_gemm_seconds(&t, 4096, 8192, 4096, 132, NULL, 0),
             0.381e-3, 0.01));
  // Fewer SMs never make it faster.
  double prev = 0;
  for (int s = 132; s >= 1; --s) {
    double x = attn_topo_gemm_seconds(&t, 8192, 8192, 8192, s, NULL, 0);
    CHECK(x >= prev);
    prev = x;
  }
  // Errors.
  CHECK(attn_topo_gemm_seconds(&t, 0, 8, 8, 132, err, sizeof err) < 0);
  CHECK(!strcmp(err, "gemm sizes must be positive, found 0 x 8 x 8"));
  CHECK(attn_topo_gemm_seconds(&t, 8, 8, -8, 132, err, sizeof err) < 0);
  CHECK(attn_topo_gemm_seconds(&t, 8, 8, 8, 0, err, sizeof err) < 0);
  CHECK(!strcmp(err, "sms must be in [1, 132], found 0"));
  CHECK(attn_topo_gemm_seconds(&t, 8, 8, 8, 133, err, sizeof err) < 0);
  CHECK(attn_topo_gemm_seconds(&t, 1LL << 40, 8, 8, 1, err, sizeof err) < 0);
  CHECK(!strcmp(err, "gemm too large for the topology model (each size up "
                     "to 2^32)"));
  return 0;
}

//===-- Collectives -------------------------------------------------------===//

/// The ring formulas inside one node, by hand, on 4 GPUs.
static int test_ring_formulas(void) {
  struct attn_topo t = topo("h200x4");
  struct attn_coll_cost c;
  char err[256];
  double b = 100e6;
  CHECK(attn_topo_collective(&t, ATTN_COLL_ALL_REDUCE, b, 4, 0, &c, err,
                             sizeof err));
  CHECK(near(c.nvlink_bytes, 1.5 * b, 1e-12) && c.net_bytes == 0);
  CHECK(c.nvlink_steps == 6 && c.net_steps == 0);
  CHECK(near(c.time_s, 10e-6 + 6 * 1.5e-6 + 1.5 * b / 279e9, 1e-12));
  CHECK(attn_topo_collective(&t, ATTN_COLL_ALL_GATHER, b, 4, 0, &c, err,
                             sizeof err));
  CHECK(near(c.nvlink_bytes, 0.75 * b, 1e-12) && c.nvlink_steps == 3);
  CHECK(near(c.time_s, 10e-6 + 3 * 1.5e-6 + 0.75 * b / 217e9, 1e-12));
  double ag = c.time_s;
  CHECK(attn_topo_collective(&t, ATTN_COLL_REDUCE_SCATTER, b, 4, 0, &c, err,
                             sizeof err));
  CHECK(c.time_s == ag);
  CHECK(attn_topo_collective(&t, ATTN_COLL_ALL_TO_ALL, b, 4, 0, &c, err,
                             sizeof err));
  CHECK(near(c.nvlink_bytes, 0.75 * b, 1e-12) && c.nvlink_steps == 1);
  CHECK(near(c.time_s, 10e-6 + 1.5e-6 + 0.75 * b / 217e9, 1e-12));
  // SM-driven: 4 SMs move 144 GB/s; 8 would move 288, capped at 279.
  CHECK(attn_topo_collective(&t, ATTN_COLL_ALL_REDUCE, b, 4, 4, &c, err,
                             sizeof err));
  CHECK(near(c.nvlink_s, 1.5 * b / 144e9, 1e-12));
  CHECK(attn_topo_collective(&t, ATTN_COLL_ALL_REDUCE, b, 4, 8, &c, err,
                             sizeof err));
  CHECK(near(c.time_s, coll(&t, ATTN_COLL_ALL_REDUCE, b, 0), 1e-12));
  return 0;
}

/// Two nodes of 8: inside the node, then B/8 per GPU across the network.
static int test_hierarchical_formulas(void) {
  struct attn_topo t = topo("h200-2x8");
  struct attn_coll_cost c;
  char err[256];
  double b = 256 * MIB;
  CHECK(attn_topo_collective(&t, ATTN_COLL_ALL_REDUCE, b, 16, 0, &c, err,
                             sizeof err));
  CHECK(near(c.nvlink_bytes, 2 * 7.0 / 8 * b, 1e-12));
  CHECK(near(c.net_bytes, 2 * 1.0 / 2 * b / 8, 1e-12));
  CHECK(c.nvlink_steps == 14 && c.net_steps == 2);
  CHECK(near(c.time_s, 10e-6 + 14 * 1.5e-6 + 2 * 8e-6 + 1.75 * b / 279e9 +
                           b / 8 / 45e9,
             1e-12));
  CHECK(attn_topo_collective(&t, ATTN_COLL_REDUCE_SCATTER, b, 16, 0, &c, err,
                             sizeof err));
  CHECK(near(c.nvlink_bytes, 7.0 / 8 * b, 1e-12));
  CHECK(near(c.net_bytes, b / 16, 1e-12));
  CHECK(c.nvlink_steps == 7 && c.net_steps == 1);
  // all_to_all: 7/16 of the buffer inside the node, 8/16 across, at once.
  CHECK(attn_topo_collective(&t, ATTN_COLL_ALL_TO_ALL, b, 16, 0, &c, err,
                             sizeof err));
  CHECK(near(c.nvlink_bytes, 7.0 / 16 * b, 1e-12));
  CHECK(near(c.net_bytes, 8.0 / 16 * b, 1e-12));
  CHECK(near(c.time_s, 10e-6 + 1.5e-6 + 8e-6 + 0.5 * b / 45e9, 1e-12));
  // One GPU per node: the network alone, as a ring over the nodes.
  struct attn_topo r;
  CHECK(attn_topo_init(&r, "H200", 1, 4, err, sizeof err));
  CHECK(attn_topo_collective(&r, ATTN_COLL_ALL_REDUCE, b, 4, 0, &c, err,
                             sizeof err));
  CHECK(c.nvlink_bytes == 0 && near(c.net_bytes, 1.5 * b, 1e-12));
  CHECK(c.nvlink_steps == 0 && c.net_steps == 6);
  // The network is the bottleneck: 2 nodes of 8 is slower than 1 node of 8.
  struct attn_topo one = topo("h200x8");
  CHECK(coll(&t, ATTN_COLL_ALL_REDUCE, b, 0) >
        coll(&one, ATTN_COLL_ALL_REDUCE, b, 0));
  return 0;
}

/// The NCCL anchors on 2 H200s (B4 comm column, B3 small messages).
static int test_collective_anchors(void) {
  struct attn_topo t = topo("h200x2");
  static const struct {
    enum attn_coll_kind k;
    double mib, ms;
  } rows[] = {
      {ATTN_COLL_ALL_REDUCE, 128, 0.492},    {ATTN_COLL_ALL_REDUCE, 64, 0.257},
      {ATTN_COLL_ALL_GATHER, 128, 0.311},    {ATTN_COLL_ALL_GATHER, 32, 0.096},
      {ATTN_COLL_REDUCE_SCATTER, 128, 0.324},
      {ATTN_COLL_REDUCE_SCATTER, 64, 0.173},
      {ATTN_COLL_ALL_REDUCE, 0.0625, 0.0131}, // B3, CUDA graph, 64 KiB
      {ATTN_COLL_ALL_GATHER, 0.0625, 0.0119},
      {ATTN_COLL_REDUCE_SCATTER, 0.0625, 0.0114},
  };
  for (size_t i = 0; i < sizeof rows / sizeof *rows; ++i)
    CHECK(near(coll(&t, rows[i].k, rows[i].mib * MIB, 0), rows[i].ms * 1e-3,
               0.08));
  return 0;
}

static int test_monotonicity(void) {
  char err[256];
  struct attn_coll_cost c;
  double b = 64 * MIB, prev_bytes = 0, prev_t = 0;
  // More ranks in a node: more all_reduce bytes per rank, approaching 2B.
  for (int w = 2; w <= 64; ++w) {
    struct attn_topo t;
    CHECK(attn_topo_init(&t, "H200", w, 1, err, sizeof err));
    CHECK(attn_topo_collective(&t, ATTN_COLL_ALL_REDUCE, b, w, 0, &c, err,
                               sizeof err));
    CHECK(c.nvlink_bytes > prev_bytes && c.nvlink_bytes < 2 * b);
    CHECK(c.time_s > prev_t);
    prev_bytes = c.nvlink_bytes;
    prev_t = c.time_s;
  }
  CHECK(prev_bytes > 1.96 * b);
  // Bigger buffers take longer; more communication SMs never slow it down.
  struct attn_topo t = topo("h200x8");
  for (int k = 0; k < ATTN_COLL_NUM_KINDS; ++k) {
    double last = 0;
    for (double x = 1024; x <= 1024 * MIB; x *= 4) {
      double y = coll(&t, (enum attn_coll_kind)k, x, 0);
      CHECK(y > last);
      last = y;
    }
    last = INFINITY;
    for (int s = 1; s <= 132; ++s) {
      double y = coll(&t, (enum attn_coll_kind)k, b, s);
      CHECK(y <= last && y >= coll(&t, (enum attn_coll_kind)k, b, 0));
      last = y;
    }
  }
  // More nodes of 8: more all_reduce time, network bytes approaching 2B/8.
  prev_t = 0;
  for (int n = 1; n <= 16; ++n) {
    CHECK(attn_topo_init(&t, "H200", 8, n, err, sizeof err));
    CHECK(attn_topo_collective(&t, ATTN_COLL_ALL_REDUCE, b, 8 * n, 0, &c, err,
                               sizeof err));
    CHECK(c.time_s > prev_t && c.net_bytes < 2 * b / 8);
    prev_t = c.time_s;
  }
  return 0;
}

static int test_collective_errors(void) {
  struct attn_topo t = topo("h200x4");
  struct attn_coll_cost c;
  char err[256];
  CHECK(!attn_topo_collective(&t, ATTN_COLL_ALL_REDUCE, 0, 4, 0, &c, err,
                              sizeof err));
  CHECK(!strcmp(err, "collective size must be positive, found 0 bytes"));
  CHECK(!attn_topo_collective(&t, ATTN_COLL_ALL_REDUCE, -5, 4, 0, &c, err,
                              sizeof err));
  CHECK(!attn_topo_collective(&t, ATTN_COLL_ALL_REDUCE, NAN, 4, 0, &c, err,
                              sizeof err));
  CHECK(!attn_topo_collective(&t, ATTN_COLL_ALL_GATHER, 1e6, 2, 0, &c, err,
                              sizeof err));
  CHECK(!strcmp(err, "world size 2 does not match the topology's 4 (1 nodes "
                     "of 4 gpus)"));
  CHECK(!attn_topo_collective(&t, ATTN_COLL_ALL_GATHER, 1e6, 4, -1, &c, err,
                              sizeof err));
  CHECK(!strcmp(err, "communication sms must be in [0, 132], found -1"));
  CHECK(!attn_topo_collective(&t, ATTN_COLL_ALL_GATHER, 1e6, 4, 133, &c, err,
                              sizeof err));
  CHECK(!attn_topo_collective(&t, ATTN_COLL_NUM_KINDS, 1e6, 4, 0, &c, err,
                              sizeof err));
  CHECK(!strcmp(err, "unknown collective 4"));
  CHECK(!attn_topo_collective(&t, ATTN_COLL_ALL_REDUCE, 0, 4, 0, &c, NULL, 0));
  CHECK(c.time_s == 0);
  return 0;
}

//===-- Fused -------------------------------------------------------------===//

static const enum attn_fused_pattern patterns[] = {
    ATTN_FUSED_GEMM_ALL_REDUCE, ATTN_FUSED_ALL_GATHER_GEMM,
    ATTN_FUSED_GEMM_REDUCE_SCATTER};

/// The sequential (GEMM then NCCL) anchors of B4 on 2 H200s.
static int test_sequential_anchors(void) {
  struct attn_topo t = topo("h200x2");
  static const struct {
    int64_t m, n, k;
    double ms[3]; // gemm+all_reduce, all_gather+gemm, gemm+reduce_scatter
  } rows[] = {
      {8192, 8192, 8192, {1.892, 1.752, 1.812}},
      {4096, 8192, 4096, {0.607, 0.445, 0.545}},
  };
  struct attn_fused_cost f;
  char err[256];
  for (size_t i = 0; i < 2; ++i)
    for (int p = 0; p < 3; ++p) {
      CHECK(attn_topo_fused(&t, patterns[p], rows[i].m, rows[i].n, rows[i].k,
                            2, 0, &f, err, sizeof err));
      CHECK(near(f.sequential_s, rows[i].ms[p] * 1e-3, 0.08));
      CHECK(f.sequential_s == f.gemm_s + f.nccl_s);
    }
  // The buffers: C (M x N) for all_reduce and reduce_scatter, A (M x K)
  // for all_gather, bf16.
  CHECK(attn_topo_fused(&t, ATTN_FUSED_ALL_GATHER_GEMM, 4096, 8192, 4096, 2,
                        0, &f, err, sizeof err));
  CHECK(f.coll_bytes == 32 * MIB);
  CHECK(attn_topo_fused(&t, ATTN_FUSED_GEMM_REDUCE_SCATTER, 4096, 8192, 4096,
                        2, 0, &f, err, sizeof err));
  CHECK(f.coll_bytes == 64 * MIB);
  return 0;
}

/// One fused prediction by hand: 8192^3 GEMM+AllReduce on 2 H200s with 16
/// communication SMs.
static int test_fused_formula(void) {
  struct attn_topo t = topo("h200x2");
  struct attn_fused_cost f;
  char err[256];
  CHECK(attn_topo_fused_at(&t, ATTN_FUSED_GEMM_ALL_REDUCE, 8192, 8192, 8192,
                           2, 0, 16, &f, err, sizeof err));
  CHECK(f.compute_sms == 116 && f.comm_sms == 16 && f.total_sms == 132);
  // 2048 tiles on 116 SMs: 18 waves.
  CHECK(f.steps == 18);
  double gemm = attn_topo_gemm_seconds(&t, 8192, 8192, 8192, 116, NULL, 0);
  CHECK(f.compute_s == gemm);
  // 16 SMs move 576 GB/s, above the 279 GB/s bus rate: NCCL's time.
  CHECK(near(f.comm_s, 10e-6 + 2 * 1.5e-6 + 128 * MIB / 279e9, 1e-12));
  CHECK(near(f.fused_s, gemm + f.comm_s / 18, 1e-12));
  return 0;
}

static int test_fused_bounds(void) {
  static const char *const presets[] = {"h200x2", "h200x4", "h200x8",
                                        "h200-2x8", "h200-4x8"};
  static const int64_t shapes[][3] = {
      {8192, 8192, 8192}, {4096, 8192, 4096}, {1024, 1024, 1024},
      {256, 8192, 8192},  {16384, 16384, 1024}};
  char err[256];
  for (size_t i = 0; i < 5; ++i) {
    struct attn_topo t = topo(presets[i]);
    int w = attn_topo_world_size(&t);
    for (size_t s = 0; s < 5; ++s)
      for (int p = 0; p < 3; ++p) {
        struct attn_fused_cost f, g;
        const int64_t *x = shapes[s];
        CHECK(attn_topo_fused(&t, patterns[p], x[0], x[1], x[2], w, 0, &f, err,
                              sizeof err));
        CHECK(f.comm_sms >= 1 && f.comm_sms <= f.total_sms - 1);
        CHECK(f.comm_sms + f.compute_sms == 132);
        CHECK(f.lower_bound_s == fmax(f.gemm_s, f.nccl_s));
        CHECK(f.fused_s >= f.lower_bound_s);
        CHECK(f.fused_s >= fmax(f.compute_s, f.comm_s));
        // Large enough to hide the fill: fused beats sequential.
        if (x[0] >= 4096)
          CHECK(f.fused_s <= f.sequential_s);
        // The choice is the best split.
        for (int c = 1; c < 132; ++c) {
          CHECK(attn_topo_fused_at(&t, patterns[p], x[0], x[1], x[2], w, 0, c,
                                   &g, err, sizeof err));
          CHECK(g.fused_s >= f.fused_s);
          CHECK(g.sequential_s == f.sequential_s);
        }
        // Fewer SMs in the kernel: never faster.
        CHECK(attn_topo_fused(&t, patterns[p], x[0], x[1], x[2], w, 66, &g,
                              err, sizeof err));
        CHECK(g.total_sms == 66 && g.comm_sms < 66);
        CHECK(g.fused_s >= f.fused_s);
      }
  }
  return 0;
}

/// One GPU: nothing to send, the fused kernel is the GEMM.
static int test_world_one(void) {
  struct attn_topo t = topo("h200x1");
  struct attn_fused_cost f;
  struct attn_coll_cost c;
  char err[256];
  CHECK(attn_topo_collective(&t, ATTN_COLL_ALL_REDUCE, 1e9, 1, 0, &c, err,
                             sizeof err));
  CHECK(c.time_s == 0 && c.nvlink_bytes == 0);
  CHECK(attn_topo_fused(&t, ATTN_FUSED_GEMM_ALL_REDUCE, 4096, 4096, 4096, 1, 0,
                        &f, err, sizeof err));
  CHECK(f.comm_sms == 0 && f.compute_sms == 132 && f.comm_s == 0);
  CHECK(f.fused_s == f.gemm_s && f.sequential_s == f.gemm_s);
  CHECK(!attn_topo_fused_at(&t, ATTN_FUSED_GEMM_ALL_REDUCE, 4096, 4096, 4096,
                            1, 0, 1, &f, err, sizeof err));
  CHECK(!strcmp(err, "communication sms must be in [0, 0], found 1"));
  return 0;
}

static int test_fused_errors(void) {
  struct attn_topo t = topo("h200x4");
  struct attn_fused_cost f;
  char err[256];
  CHECK(!attn_topo_fused(&t, ATTN_FUSED_GEMM_ALL_REDUCE, 8192, 8192, 8192, 8,
                         0, &f, err, sizeof err));
  CHECK(!strcmp(err, "world size 8 does not match the topology's 4 (1 nodes "
                     "of 4 gpus)"));
  CHECK(!attn_topo_fused(&t, ATTN_FUSED_GEMM_ALL_REDUCE, 0, 8192, 8192, 4, 0,
                         &f, err, sizeof err));
  CHECK(!strcmp(err, "gemm sizes must be positive, found 0 x 8192 x 8192"));
  CHECK(!attn_topo_fused(&t, ATTN_FUSED_GEMM_REDUCE_SCATTER, 8192, -1, 8192,
                         4, 0, &f, err, sizeof err));
  CHECK(!attn_topo_fused(&t, ATTN_FUSED_ALL_GATHER_GEMM, 8190, 8192, 8192, 4,
                         0, &f, err, sizeof err));
  CHECK(!strcmp(err, "all_gather+gemm needs M divisible by the world size 4, "
                     "found M = 8190"));
  // all_reduce does not split M.
  CHECK(attn_topo_fused(&t, ATTN_FUSED_GEMM_ALL_REDUCE, 8190, 8192, 8192, 4,
                        0, &f, err, sizeof err));
  CHECK(!attn_topo_fused(&t, ATTN_FUSED_GEMM_ALL_REDUCE, 8192, 8192, 8192, 4,
                         1, &f, err, sizeof err));
  CHECK(!strcmp(err, "total sms must be in [2, 132] (0: all), found 1"));
  CHECK(!attn_topo_fused(&t, ATTN_FUSED_GEMM_ALL_REDUCE, 8192, 8192, 8192, 4,
                         133, &f, err, sizeof err));
  CHECK(!attn_topo_fused(&t, ATTN_FUSED_NUM_PATTERNS, 8192, 8192, 8192, 4, 0,
                         &f, err, sizeof err));
  CHECK(!strcmp(err, "unknown fused pattern 3"));
  CHECK(!attn_topo_fused_at(&t, ATTN_FUSED_GEMM_ALL_REDUCE, 8192, 8192, 8192,
                            4, 0, 0, &f, err, sizeof err));
  CHECK(!strcmp(err, "communication sms must be in [1, 131], found 0"));
  CHECK(!attn_topo_fused_at(&t, ATTN_FUSED_GEMM_ALL_REDUCE, 8192, 8192, 8192,
                            4, 32, 32, &f, NULL, 0));
  CHECK(f.fused_s == 0);
  return 0;
}

//===-- The docs table ----------------------------------------------------===//

/// docs/cost-model.md's tables: the anchors of B4 (2 H200s) predicted and
/// measured, then each pattern at two shapes on 2, 4 and 8 H200s in one
/// node.
static int print_table(void) {
  static const struct {
    const char *what;
    enum attn_fused_pattern p;
    int64_t m, n, k;
    double comm_ms, seq_ms;
  } anchors[] = {
      {"8192x8192x8192", ATTN_FUSED_GEMM_ALL_REDUCE, 8192, 8192, 8192, 0.492,
       1.892},
      {"8192x8192x8192", ATTN_FUSED_ALL_GATHER_GEMM, 8192, 8192, 8192, 0.311,
       1.752},
      {"8192x8192x8192", ATTN_FUSED_GEMM_REDUCE_SCATTER, 8192, 8192, 8192,
       0.324, 1.812},
      {"4096x8192x4096", ATTN_FUSED_GEMM_ALL_REDUCE, 4096, 8192, 4096, 0.257,
       0.607},
      {"4096x8192x4096", ATTN_FUSED_ALL_GATHER_GEMM, 4096, 8192, 4096, 0.096,
       0.445},
      {"4096x8192x4096", ATTN_FUSED_GEMM_REDUCE_SCATTER, 4096, 8192, 4096,
       0.173, 0.545},
  };
  struct attn_topo two = topo("h200x2");
  printf("| M x N x K | pattern | NCCL ms predicted / measured | sequential "
         "ms predicted / measured |\n|---|---|---|---|\n");
  for (size_t i = 0; i < sizeof anchors / sizeof *anchors; ++i) {
    struct attn_fused_cost f;
    char err[256];
    if (!attn_topo_fused(&two, anchors[i].p, anchors[i].m, anchors[i].n,
                         anchors[i].k, 2, 0, &f, err, sizeof err)) {
      fprintf(stderr, "%s\n", err);
      return 1;
    }
    printf("| %s | %s | %.3f / %.3f (%+.1f %%) | %.3f / %.3f (%+.1f %%) |\n",
           anchors[i].what, attn_fused_pattern_name(anchors[i].p),
           f.nccl_s * 1e3, anchors[i].comm_ms,
           100 * (f.nccl_s * 1e3 / anchors[i].comm_ms - 1),
           f.sequential_s * 1e3, anchors[i].seq_ms,
           100 * (f.sequential_s * 1e3 / anchors[i].seq_ms - 1));
  }
  printf("\n");
  static const char *const presets[] = {"h200x2", "h200x4", "h200x8"};
  static const int64_t shapes[][3] = {{8192, 8192, 8192}, {4096, 8192, 4096}};
  printf("| GPUs | M x N x K | pattern | GEMM ms | NCCL ms | sequential ms | "
         "lower bound ms | fused ms | comm SMs | seq / fused |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < 3; ++i) {
    struct attn_topo t = topo(presets[i]);
    int w = attn_topo_world_size(&t);
    for (size_t s = 0; s < 2; ++s)
      for (int p = 0; p < 3; ++p) {
        struct attn_fused_cost f;
        char err[256];
        const int64_t *x = shapes[s];
        if (!attn_topo_fused(&t, patterns[p], x[0], x[1], x[2], w, 0, &f, err,
                             sizeof err)) {
          fprintf(stderr, "%s\n", err);
          return 1;
        }
        printf("| %d | %lldx%lldx%lld | %s | %.3f | %.3f | %.3f | %.3f | "
               "%.3f | %d | %.2f |\n",
               w, (long long)x[0], (long long)x[1], (long long)x[2],
               attn_fused_pattern_name(patterns[p]), f.gemm_s * 1e3,
               f.nccl_s * 1e3, f.sequential_s * 1e3, f.lower_bound_s * 1e3,
               f.fused_s * 1e3, f.comm_sms, f.sequential_s / f.fused_s);
      }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--table"))
    return print_table();
  static const struct test_case tests[] = {
      TEST(test_presets),          TEST(test_check_topology),
      TEST(test_names),            TEST(test_gemm),
      TEST(test_ring_formulas),    TEST(test_hierarchical_formulas),
      TEST(test_collective_anchors), TEST(test_monotonicity),
      TEST(test_collective_errors), TEST(test_sequential_anchors),
      TEST(test_fused_formula),    TEST(test_fused_bounds),
      TEST(test_world_one),        TEST(test_fused_errors),
  };
  return run_tests(tests, sizeof tests / sizeof *tests, NULL, NULL);
}
