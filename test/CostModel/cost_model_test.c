// cost_model_test.c - unit tests of lib/CostModel: each cost term, the
// choice, the crossover, and the validation against the H200 measurements
// in bench/raw (argv[1]: the attn-bench file the constants were fitted on;
// argv[2]: the rope-sweep file, held out).

#include "lib/CostModel/cost_model.h"
#include "test/test_util.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// |a - b| <= rel * |b| (and a tiny absolute slack for zeros).
static int near(double a, double b, double rel) {
  return fabs(a - b) <= rel * fabs(b) + 1e-15;
}

static const char *bench_json; // argv[1]

static const struct attn_cost_gpu *h200(void) {
  return attn_cost_gpu_lookup("H200", NULL, 0);
}

/// The bench's shape: causal bf16, H = 32, RoPE on all of d, 128 x 128.
static struct attn_cost_problem bench_problem(int64_t b, int64_t n, int64_t d,
                                              int64_t hkv) {
  return (struct attn_cost_problem){.batch = b, .heads = 32, .kv_heads = hkv,
                                    .seq_q = n, .seq_k = n, .head_dim = d,
                                    .rotary_dim = d, .causal = true,
                                    .dtype_bytes = 2, .block_m = 128,
                                    .block_n = 128};
}

static struct attn_cost cost(const struct attn_cost_problem *p,
                             enum attn_cost_strategy s) {
  struct attn_cost c;
  char err[256];
  if (!attn_cost_estimate(p, h200(), s, &c, err, sizeof err)) {
    fprintf(stderr, "estimate failed: %s\n", err);
    memset(&c, 0, sizeof c);
    c.time_s = NAN;
  }
  return c;
}

//===-- Hardware and names ------------------------------------------------===//

static int test_gpu_lookup(void) {
  char err[256];
  const struct attn_cost_gpu *g = attn_cost_gpu_lookup("h200", err, sizeof err);
  CHECK(g && !strcmp(g->name, "H200") && g->sms == 132);
  CHECK(attn_cost_gpu_lookup("H100", err, sizeof err)->hbm_bytes_per_s ==
        3.35e12);
  CHECK(attn_cost_gpu_lookup("a100", err, sizeof err)->sms == 108);
  CHECK(attn_cost_gpu_lookup("rtx3090", err, sizeof err)->sms == 82);
  CHECK(attn_cost_gpu_lookup("RTX-3090", err, sizeof err)->sms == 82);
  CHECK(attn_cost_gpu_lookup("B200", err, sizeof err) == NULL);
  CHECK(!strcmp(err, "unknown gpu 'B200' (expected H100, H200, A100 or "
                     "RTX3090)"));
  CHECK(attn_cost_gpu_lookup("", err, sizeof err) == NULL);
  CHECK(attn_cost_gpu_lookup(NULL, NULL, 0) == NULL);
  CHECK(attn_cost_gpu_count() == 4 && attn_cost_gpu_at(4) == NULL);
  // Only the H200 carries measurements; the others borrow its kernel.
  for (size_t i = 0; i < attn_cost_gpu_count(); ++i) {
    const struct attn_cost_gpu *x = attn_cost_gpu_at(i);
    CHECK(x->kernel.measured == (x == h200()));
    CHECK((x->measured_copy_bytes_per_s > 0) == (x == h200()));
    CHECK(x->sfu_per_sm_clk > 0 && x->smem_bytes_per_sm > 0 &&
          x->regs_per_sm > 0 && x->l2_bytes > 0 && x->fp32_fma_per_sm_clk > 0);
  }
  // Bandwidth: measured where there is a measurement, else a fraction.
  CHECK(attn_cost_gpu_bandwidth(h200()) == 4.275e12);
  g = attn_cost_gpu_lookup("H100", NULL, 0);
  CHECK(near(attn_cost_gpu_bandwidth(g), 3.35e12 * 0.8906, 1e-12));
  return 0;
}

static int test_strategy_names(void) {
  enum attn_cost_strategy s;
  static const char *const names[] = {"fused", "split", "pre", "producer"};
  for (int i = 0; i < ATTN_COST_NUM_STRATEGIES; ++i) {
    CHECK(!strcmp(attn_cost_strategy_name((enum attn_cost_strategy)i),
                  names[i]));
    CHECK(attn_cost_strategy_parse(names[i], &s) && (int)s == i);
  }
  CHECK(!attn_cost_strategy_parse("auto", &s));
  CHECK(!attn_cost_strategy_parse("Fused", &s));
  CHECK(!attn_cost_strategy_parse(NULL, &s));
  CHECK(!strcmp(attn_cost_strategy_name(ATTN_COST_NUM_STRATEGIES), "?"));
  return 0;
}

//===-- Problems ----------------------------------------------------------===//

static int test_check_problem(void) {
  char err[256];
  struct attn_cost_problem p = bench_problem(4, 8192, 128, 32);
  CHECK(attn_cost_check_problem(&p, err, sizeof err));
  p.seq_k = 0;
  CHECK(!attn_cost_check_problem(&p, err, sizeof err));
  CHECK(!strcmp(err, "seq_k must be positive, found 0"));
  p = bench_problem(4, 8192, 128, 5);
  CHECK(!attn_cost_check_problem(&p, err, sizeof err));
  CHECK(!strcmp(err, "heads 32 are not a multiple of kv heads 5"));
  p = bench_problem(4, 8192, 128, 32);
  p.rotary_dim = 130;
  CHECK(!attn_cost_check_problem(&p, err, sizeof err));
  CHECK(!strcmp(err, "rotary dim must be even and at most the head dim 128, "
                     "found 130"));
  p.rotary_dim = 0; // no RoPE
  CHECK(attn_cost_check_problem(&p, err, sizeof err));
  p.dtype_bytes = 3;
  CHECK(!attn_cost_check_problem(&p, err, sizeof err));
  CHECK(!strcmp(err, "element size must be 2 or 4 bytes, found 3"));
  p = bench_problem(4, 8192, 128, 32);
  p.block_n = 0;
  CHECK(!attn_cost_check_problem(&p, err, sizeof err));
  p = bench_problem(4, 1LL << 25, 128, 32);
  CHECK(!attn_cost_check_problem(&p, err, sizeof err));
  CHECK(!strncmp(err, "problem too large for the cost model", 36));
  p = bench_problem(1 << 20, 1 << 24, 128, 32);
  p.heads = 1 << 10;
  p.block_m = p.block_n = 1;
  CHECK(!attn_cost_check_problem(&p, err, sizeof err));
  CHECK(strstr(err, "tiles; at most 2^62") != NULL);
  struct attn_cost c;
  CHECK(!attn_cost_estimate(&p, h200(), ATTN_COST_SPLIT, &c, err, sizeof err));
  return 0;
}

//===-- Counting tiles ----------------------------------------------------===//

/// Tiles a causal kernel visits, counted one query block at a time.
static int64_t brute_tiles(int64_t n, int64_t m, int64_t bm, int64_t bn) {
  int64_t nk = (m + bn - 1) / bn, t = 0;
  for (int64_t row = 0; row < n; row += bm) {
    int64_t end = (row + bm + bn - 1) / bn;
    t += end < nk ? end : nk;
  }
  return t;
}

static int test_tile_counts(void) {
  static const int64_t ns[] = {1, 100, 128, 1000, 4096, 5000, 16384};
  static const int bs[][2] = {{128, 128}, {128, 64}, {64, 128}, {96, 80}};
  for (size_t i = 0; i < sizeof ns / sizeof *ns; ++i)
    for (size_t j = 0; j < sizeof bs / sizeof *bs; ++j)
      for (int64_t m = ns[i] / 2 + 1; m <= 2 * ns[i]; m += ns[i] / 2 + 1) {
        struct attn_cost_problem p = bench_problem(1, ns[i], 64, 32);
        p.heads = p.kv_heads = 1;
        p.seq_k = m;
        p.block_m = bs[j][0];
        p.block_n = bs[j][1];
        struct attn_cost c = cost(&p, ATTN_COST_FUSED);
        CHECK(c.tiles == brute_tiles(ns[i], m, bs[j][0], bs[j][1]));
        CHECK(c.ctas == (ns[i] + bs[j][0] - 1) / bs[j][0]);
        p.causal = false;
        c = cost(&p, ATTN_COST_FUSED);
        CHECK(c.tiles == c.ctas * ((m + bs[j][1] - 1) / bs[j][1]));
        CHECK(c.flops == 4.0 * ns[i] * m * 64);
      }
  // The bench's N = 16K: 128 query blocks, 128 * 129 / 2 tiles per head.
  struct attn_cost c = cost(&(struct attn_cost_problem){
      .batch = 2, .heads = 32, .kv_heads = 32, .seq_q = 16384, .seq_k = 16384,
      .head_dim = 128, .rotary_dim = 128, .causal = true, .dtype_bytes = 2,
      .block_m = 128, .block_n = 128}, ATTN_COST_SPLIT);
  CHECK(c.ctas == 64 * 128 && c.tiles == 64 * 8256);
  CHECK(c.flops == 4.0 * 64 * (16384.0 * 16385 / 2) * 128);
  CHECK(c.executed_flops == 4.0 * 64 * 8256 * 128 * 128 * 128.0);
  return 0;
}

//===-- Cost terms --------------------------------------------------------===//

/// The attention term: tiles plus per-CTA overhead at the tile time, over
/// the SMs, plus one launch.
static int test_attention_term(void) {
  const struct attn_cost_gpu *g = h200();
  struct attn_cost_problem p = bench_problem(4, 8192, 128, 32);
  struct attn_cost c = cost(&p, ATTN_COST_PRODUCER);
  double tile = 4.0 * 128 * 128 * 128 / (0.943 * 989.4e12 / 132) +
                128.0 * 128 / (0.975 * 16 * 1.98e9);
  double want = (c.tiles + 2.48 * c.ctas) * tile / 132 + 5e-6;
  CHECK(near(c.attention_s, want, 1e-9));
  CHECK(c.time_s == c.attention_s && c.kernels == 1);
  CHECK(near(c.efficiency, c.flops / (c.attention_s * g->bf16_dense_flops),
             1e-12));
  // Few CTAs: the longest one (the last query block) bounds the time.
  p = bench_problem(1, 1024, 128, 1);
  p.heads = 1;
  c = cost(&p, ATTN_COST_PRODUCER);
  CHECK(c.ctas == 8 && near(c.attention_s, (8 + 2.48) * tile + 5e-6, 1e-9));
  // f32 runs on FP32 lanes: slower than bf16 on tensor cores.
  p = bench_problem(4, 8192, 128, 32);
  p.dtype_bytes = 4;
  CHECK(cost(&p, ATTN_COST_PRODUCER).attention_s > 10 * c.attention_s);
  return 0;
}

/// fused: Q once per CTA and K once per visited tile, in the kernel.
static int test_fused_term(void) {
  struct attn_cost_problem p = bench_problem(4, 8192, 128, 32);
  struct attn_cost c = cost(&p, ATTN_COST_FUSED);
  double elems = (double)c.ctas * 128 * 128 + (double)c.tiles * 128 * 128;
  CHECK(c.q_rotated == (double)c.ctas * 128 * 128);
  CHECK(c.k_rotated == (double)c.tiles * 128 * 128);
  CHECK(near(c.rope_in_kernel_s, elems * 0.192 / 1.98e9 / 132, 1e-9));
  CHECK(c.rope_bytes == 0 && c.rope_kernels_s == 0 && c.launch_s == 0);
  CHECK(c.kernels == 1);
  // K is rotated once per query block that reads it: ~nq/2 times.
  CHECK(near(c.k_repeat, 266240.0 * 128 / (4 * 32 * 8192), 1e-12));
  // Only the rotary part is rotated.
  p.rotary_dim = 64;
  CHECK(near(cost(&p, ATTN_COST_FUSED).rope_in_kernel_s,
             c.rope_in_kernel_s / 2, 1e-9));
  // GQA: every query head's CTAs rotate their K tiles.
  p = bench_problem(4, 8192, 128, 8);
  CHECK(near(cost(&p, ATTN_COST_FUSED).rope_in_kernel_s, c.rope_in_kernel_s,
             1e-12));
  return 0;
}

/// split: Q in the kernel; K read and written once by its own kernel.
static int test_split_term(void) {
  struct attn_cost_problem p = bench_problem(4, 8192, 128, 32);
  struct attn_cost c = cost(&p, ATTN_COST_SPLIT);
  struct attn_cost f = cost(&p, ATTN_COST_FUSED);
  double kbytes = 2.0 * 4 * 32 * 8192 * 128 * 2;
  CHECK(c.rope_bytes == kbytes && c.kernels == 2);
  CHECK(near(c.rope_kernels_s, kbytes / 4.275e12, 1e-12));
  CHECK(near(c.launch_s, 5e-6, 1e-12));
  CHECK(c.k_repeat == 1 && c.q_rotated == f.q_rotated);
  CHECK(near(c.rope_in_kernel_s,
             (double)c.ctas * 128 * 128 * 0.192 / 1.98e9 / 132, 1e-9));
  CHECK(near(c.time_s, c.attention_s + c.rope_in_kernel_s + c.rope_kernels_s +
                           c.launch_s, 1e-12));
  // GQA: K has a quarter of the rows; partial RoPE still copies whole rows.
  p = bench_problem(4, 8192, 128, 8);
  CHECK(cost(&p, ATTN_COST_SPLIT).rope_bytes == kbytes / 4);
  p.rotary_dim = 32;
  CHECK(cost(&p, ATTN_COST_SPLIT).rope_bytes == kbytes / 4);
  return 0;
}

/// pre: Q and K by two kernels, attention without RoPE.
static int test_pre_and_producer_terms(void) {
  struct attn_cost_problem p = bench_problem(4, 8192, 64, 8);
  struct attn_cost c = cost(&p, ATTN_COST_PRE);
  double qbytes = 2.0 * 4 * 32 * 8192 * 64 * 2, kbytes = qbytes / 4;
  CHECK(c.rope_bytes == qbytes + kbytes && c.kernels == 3);
  CHECK(near(c.rope_kernels_s, (qbytes + kbytes) / 4.275e12, 1e-12));
  CHECK(near(c.launch_s, 10e-6, 1e-12) && c.rope_in_kernel_s == 0);
  struct attn_cost pr = cost(&p, ATTN_COST_PRODUCER);
  CHECK(pr.time_s == pr.attention_s && pr.time_s == c.attention_s);
  CHECK(pr.rope_bytes == 0 && pr.kernels == 1);
  // Without RoPE every strategy is the attention alone.
  p.rotary_dim = 0;
  for (int s = 0; s < ATTN_COST_NUM_STRATEGIES; ++s)
    CHECK(cost(&p, (enum attn_cost_strategy)s).time_s == pr.attention_s);
  return 0;
}

//===-- Choice and crossover ----------------------------------------------===//

static int test_choose(void) {
  const struct attn_cost_gpu *g = h200();
  struct attn_cost_problem p = bench_problem(4, 8192, 128, 32);
  struct attn_cost best;
  CHECK(attn_cost_choose(&p, g, ATTN_COST_ALL, &best) == ATTN_COST_PRODUCER);
  unsigned no_producer = ATTN_COST_ALL & ~ATTN_COST_BIT(ATTN_COST_PRODUCER);
  CHECK(attn_cost_choose(&p, g, no_producer, &best) == ATTN_COST_SPLIT);
  CHECK(best.time_s == cost(&p, ATTN_COST_SPLIT).time_s);
  CHECK(attn_cost_choose(&p, g, ATTN_COST_BIT(ATTN_COST_FUSED) |
                                    ATTN_COST_BIT(ATTN_COST_PRE),
                         NULL) == ATTN_COST_PRE);
  CHECK(attn_cost_choose(&p, g, 0, NULL) == ATTN_COST_NUM_STRATEGIES);
  // Tiny problems: launches dominate and fused wins.
  p = bench_problem(1, 256, 64, 8);
  p.heads = 8;
  CHECK(attn_cost_choose(&p, g, no_producer, NULL) == ATTN_COST_FUSED);
  // Ties (no RoPE) go to the first available strategy.
  p.rotary_dim = 0;
  CHECK(attn_cost_choose(&p, g, no_producer, NULL) == ATTN_COST_FUSED);
  p.heads = 0;
  CHECK(attn_cost_choose(&p, g, no_producer, NULL) == ATTN_COST_NUM_STRATEGIES);
  return 0;
}

static int cheaper(const struct attn_cost_problem *p, int64_t n,
                   enum attn_cost_strategy a, enum attn_cost_strategy b) {
  struct attn_cost_problem q = *p;
  q.seq_q = q.seq_k = n;
  return cost(&q, a).time_s < cost(&q, b).time_s;
}

static int test_crossover(void) {
  const struct attn_cost_gpu *g = h200();
  struct attn_cost_problem p = bench_problem(4, 8192, 128, 32);
  int64_t n;
  CHECK(attn_cost_crossover(&p, g, ATTN_COST_FUSED, ATTN_COST_PRE, 16,
                            1 << 20, &n));
  CHECK(n > 16 && n <= (1 << 20));
  CHECK(cheaper(&p, n - 1, ATTN_COST_FUSED, ATTN_COST_PRE) &&
        !cheaper(&p, n, ATTN_COST_FUSED, ATTN_COST_PRE));
  int64_t m;
  CHECK(attn_cost_crossover(&p, g, ATTN_COST_PRE, ATTN_COST_FUSED, 16, 1 << 20,
                            &m) &&
        m == n);
  // split stays cheaper than pre: Q in the kernel costs less than its HBM
  // round trip and a launch.
  CHECK(!attn_cost_crossover(&p, g, ATTN_COST_SPLIT, ATTN_COST_PRE, 16,
                             1 << 20, &n));
  CHECK(!attn_cost_crossover(&p, g, ATTN_COST_FUSED, ATTN_COST_PRE, 100, 100,
                             &n));
  CHECK(!attn_cost_crossover(&p, g, ATTN_COST_FUSED, ATTN_COST_PRE, 0, 100,
                             &n));
  // Cross-attention: M keeps its ratio to N.
  p.seq_k = 2 * p.seq_q;
  CHECK(attn_cost_crossover(&p, g, ATTN_COST_FUSED, ATTN_COST_SPLIT, 16,
                            1 << 20, &n));
  printf("crossover fused/pre at B=4, d=128: N* = %lld\n", (long long)m);
  return 0;
}

//===-- Validation against the H200 measurements --------------------------===//

/// One shape of a bench file and its measured times (0: not measured).
struct measured {
  int64_t d, n, b, hkv;
  double ms[4]; // by enum attn_cost_strategy; ATTN_COST_PRODUCER: no RoPE
};

static double get_num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/// Which column a row's "impl" fills: the default lowering ('attn (fused
/// RoPE)' in the files) is split; 'norope' goes in the producer slot, which
/// costs the attention alone.
static int impl_slot(const char *impl) {
  static const struct {
    const char *impl;
    int slot;
  } map[] = {{"attn (fused RoPE)", ATTN_COST_SPLIT},
             {"attn variant fused", ATTN_COST_FUSED},
             {"attn variant pre", ATTN_COST_PRE},
             {"attn variant norope", ATTN_COST_PRODUCER}};
  for (size_t i = 0; i < sizeof map / sizeof *map; ++i)
    if (!strcmp(impl, map[i].impl))
      return map[i].slot;
  return -1;
}

/// Reads the H = 32 'attn' rows of an H200 bench file into rows; returns
/// their count, or -1 when the file is missing or not from an H200.
static int read_rows(const char *path, struct measured *rows, int cap) {
  FILE *f = path ? fopen(path, "rb") : NULL;
  if (!f)
    return -1;
  static char text[1 << 20];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = '\0';
  cJSON *root = cJSON_Parse(text);
  const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "meta");
  const cJSON *gpu = cJSON_GetObjectItemCaseSensitive(meta, "gpu");
  if (!cJSON_IsString(gpu) || strcmp(gpu->valuestring, "NVIDIA H200")) {
    cJSON_Delete(root);
    return -1;
  }
  int n = 0;
  const cJSON *r;
  cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(root, "rows")) {
    const cJSON *impl = cJSON_GetObjectItemCaseSensitive(r, "impl");
    int slot = cJSON_IsString(impl) ? impl_slot(impl->valuestring) : -1;
    if (slot < 0 || get_num(r, "H") != 32)
      continue;
    struct measured key = {(int64_t)get_num(r, "d"), (int64_t)get_num(r, "N"),
                           (int64_t)get_num(r, "B"), (int64_t)get_num(r, "Hkv"),
                           {0, 0, 0, 0}};
    int i = 0;
    while (i < n && !(rows[i].d == key.d && rows[i].n == key.n &&
                      rows[i].b == key.b && rows[i].hkv == key.hkv))
      ++i;
    if (i == cap)
      continue;
    if (i == n)
      rows[n++] = key;
    rows[i].ms[slot] = get_num(r, "ms");
  }
  cJSON_Delete(root);
  return n;
}

/// Prints predicted / measured for every row of path and checks the error
/// of each (< 25 %) and the choice: auto (fused, split, pre) must pick a
/// placement whose measured time is within 1 % of the fastest measured
/// (and picks split).
static int validate(const char *path, const char *label, int want_rows) {
  struct measured rows[64];
  int n = read_rows(path, rows, 64);
  CHECK(n == want_rows);
  static const int cols[4] = {ATTN_COST_PRODUCER, ATTN_COST_SPLIT,
                              ATTN_COST_FUSED, ATTN_COST_PRE};
  static const char *const names[4] = {"no RoPE", "split", "fused", "pre"};
  double worst[4] = {-1, -1, -1, -1}; // -1: column never measured
  printf("validation (H200, %s): predicted / measured ms\n", label);
  printf("  d     N   B Hkv");
  for (int c = 0; c < 4; ++c)
    printf(" | %-21s", names[c]);
  printf(" | auto\n");
  unsigned avail = ATTN_COST_ALL & ~ATTN_COST_BIT(ATTN_COST_PRODUCER);
  for (int i = 0; i < n; ++i) {
    struct measured *m = &rows[i];
    struct attn_cost_problem p = bench_problem(m->b, m->n, m->d, m->hkv);
    enum attn_cost_strategy pick = attn_cost_choose(&p, h200(), avail, NULL);
    printf("%3lld %5lld %3lld %3lld", (long long)m->d, (long long)m->n,
           (long long)m->b, (long long)m->hkv);
    for (int c = 0; c < 4; ++c) {
      double meas = m->ms[cols[c]];
      if (meas <= 0) {
        printf(" | %-21s", "-");
        continue;
      }
      double pred = cost(&p, (enum attn_cost_strategy)cols[c]).time_s * 1e3;
      double e = pred / meas - 1;
      worst[c] = fabs(e) > worst[c] ? fabs(e) : worst[c] < 0 ? 0 : worst[c];
      printf(" | %6.3f / %6.3f %+5.1f%%", pred, meas, 100 * e);
    }
    printf(" | %s\n", attn_cost_strategy_name(pick));
    CHECK(m->ms[ATTN_COST_SPLIT] > 0 && m->ms[ATTN_COST_FUSED] > 0 &&
          m->ms[ATTN_COST_PRODUCER] > 0);
    double best = m->ms[ATTN_COST_SPLIT];
    for (int s = ATTN_COST_FUSED; s <= ATTN_COST_PRE; ++s)
      if (m->ms[s] > 0 && m->ms[s] < best)
        best = m->ms[s];
    CHECK(m->ms[pick] > 0 && m->ms[pick] <= 1.01 * best);
    // What the model says on every measured shape (measured: split is
    // fastest or within 0.5 % of pre).
    CHECK(pick == ATTN_COST_SPLIT);
  }
  printf("worst relative error:");
  for (int c = 0; c < 4; ++c) {
    if (worst[c] < 0)
      printf(" %s -%s", names[c], c < 3 ? "," : "\n");
    else
      printf(" %s %.1f%%%s", names[c], 100 * worst[c], c < 3 ? "," : "\n");
  }
  for (int c = 0; c < 4; ++c)
    CHECK(worst[c] < 0.25);
  return 0;
}

static const char *sweep_json; // argv[2]

/// The rows the constants were fitted on (bench/RESULTS.md, 04:08 UTC).
static int test_validate_bench(void) {
  return validate(bench_json, "attn-bench, calibration", 12);
}

/// A later run (04:17 UTC) with pre measured and N up to 32K: no constant
/// was fitted on it.
static int test_validate_sweep(void) {
  return validate(sweep_json, "rope-sweep, held out", 24);
}

/// The H200 entry's measured efficiency is the bench's 'no RoPE' number.
static int test_measured_efficiency(void) {
  struct measured rows[32];
  int n = read_rows(bench_json, rows, 32);
  CHECK(n > 0);
  int seen = 0;
  for (int i = 0; i < n; ++i) {
    if (rows[i].n != 16384 || rows[i].hkv != 32)
      continue;
    double flops = 4.0 * rows[i].b * 32 * 16384.0 * 16384 * rows[i].d / 2;
    double eff =
        flops / (rows[i].ms[ATTN_COST_PRODUCER] * 1e-3) / 989.4e12;
    double have = rows[i].d == 64 ? h200()->measured_attn_eff_d64
                                  : h200()->measured_attn_eff_d128;
    CHECK(near(have, eff, 0.005));
    ++seen;
  }
  CHECK(seen == 2);
  return 0;
}

int main(int argc, char **argv) {
  bench_json = argc > 1 ? argv[1] : NULL;
  sweep_json = argc > 2 ? argv[2] : NULL;
  static const struct test_case tests[] = {
      TEST(test_gpu_lookup),       TEST(test_strategy_names),
      TEST(test_check_problem),    TEST(test_tile_counts),
      TEST(test_attention_term),   TEST(test_fused_term),
      TEST(test_split_term),       TEST(test_pre_and_producer_terms),
      TEST(test_choose),           TEST(test_crossover),
      TEST(test_validate_bench),   TEST(test_validate_sweep),
      TEST(test_measured_efficiency),
  };
  return run_tests(tests, sizeof tests / sizeof *tests, NULL, NULL);
}
