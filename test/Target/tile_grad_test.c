// tile_grad_test.c - the backward's tile ops (issue 29: tile.row_lse,
// row_dot, exp_lse, ds, score_fn_grad, mma's transpose_a, rope's and
// rope_positions' inverse, the [B, H, N] load and store) lowered by
// lower-tile-to-cpu and run through the JIT: the hand-written forward and
// backward kernels of test/Inputs/tile/grad_step.mlir (its path is
// argv[1]) against lib/Reference's float64 attention, lse and gradients
// on random inputs. Each output buffer has a NaN-filled tail that must
// stay as it is (the padding rows' stores are dropped).
#include "lib/IR/attn_context.h"
#include "lib/Reference/attn_reference.h"
#include "lib/Target/attn_jit.h"
#include "lib/Transforms/transforms.h"

#include "mlir-c/IR.h"

#include "../test_util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 12, D = 8, TAIL = 16 };

static const char *input;
static MlirContext ctx;
static MlirOperation module;
static struct attn_jit *jit;

/// A float buffer of n values and TAIL NaNs after them.
static float *buffer(size_t n) {
  float *x = malloc(sizeof(float) * (n + TAIL));
  for (size_t i = 0; x && i < n + TAIL; ++i)
    x[i] = NAN;
  return x;
}

static bool tail_intact(const float *x, size_t n) {
  for (size_t i = n; i < n + TAIL; ++i)
    if (!isnan(x[i]))
      return false;
  return true;
}

static void widen(const float *x, double *y, size_t n) {
  for (size_t i = 0; i < n; ++i)
    y[i] = (double)x[i];
}

static double rel_error(const float *got, const double *want, size_t n) {
  double *g = malloc(sizeof(double) * n);
  widen(got, g, n);
  double e = attn_rel_error(g, want, n);
  free(g);
  return e;
}

/// Runs kernel name with the given pointer arguments.
static bool run(const char *name, int n, void **ptrs) {
  attn_jit_entry_fn fn = attn_jit_lookup(jit, name);
  if (!fn)
    return false;
  void *args[16];
  for (int i = 0; i < n; ++i)
    args[i] = &ptrs[i];
  fn(args);
  return true;
}

/// Reads and lowers the input once, for every test.
static bool load(void) {
  FILE *f = fopen(input, "rb");
  if (!f)
    return false;
  static char text[65536];
  size_t len = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[len] = 0;
  ctx = attn_context_create();
  static struct attn_diag_sink sink;
  sink.out = stderr;
  attn_diag_attach(ctx, &sink);
  if (!attn_register_all(ctx, NULL))
    return false;
  MlirModule m =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(text));
  if (mlirModuleIsNull(m))
    return false;
  module = mlirModuleGetOperation(m);
  char pipeline[1024];
  snprintf(pipeline, sizeof pipeline, "lower-tile-to-cpu,%s",
           attn_cpu_to_llvm_pipeline);
  if (!attn_pipeline_run(module, pipeline))
    return false;
  jit = attn_jit_create(module);
  return jit != NULL;
}

/// Query 0 sees no key (the mask_fn of grad_step.mlir's @fwd_a / @bwd_a).
static bool hide_row0(void *c, int64_t b, int64_t h, int64_t q, int64_t kv) {
  (void)c, (void)b, (void)h, (void)kv;
  return q != 0;
}

/// One forward + backward pair of grad_step.mlir against the reference of
/// p: out and lse from the forward, then dq, dk, dv from the backward fed
/// the kernel's own out and lse. pos: the kernels' q and k positions
/// arguments (NULL for none).
static int check_pair(const char *fwd, const char *bwd,
                      const struct attn_ref_problem *p, int32_t *const pos[2],
                      uint64_t seed) {
  const size_t nt = N * D;
  float *q = buffer(nt), *k = buffer(nt), *v = buffer(nt), *dout = buffer(nt);
  float *out = buffer(nt), *lse = buffer(N), *dq = buffer(nt),
        *dk = buffer(nt), *dv = buffer(nt);
  double rq[N * D], rk[N * D], rv[N * D], rdo[N * D], ro[N * D], rl[N];
  double rdq[N * D], rdk[N * D], rdv[N * D];
  CHECK(q && k && v && dout && out && lse && dq && dk && dv);
  struct attn_rng r;
  attn_rng_seed(&r, seed);
  float *in[4] = {q, k, v, dout};
  for (int t = 0; t < 4; ++t)
    for (size_t i = 0; i < nt; ++i)
      in[t][i] = (float)attn_rng_normal(&r);
  widen(q, rq, nt);
  widen(k, rk, nt);
  widen(v, rv, nt);
  widen(dout, rdo, nt);
  CHECK(attn_reference(p, rq, rk, rv, ro));
  CHECK(attn_reference_grad(p, rq, rk, rv, rdo, rdq, rdk, rdv, NULL, rl));

  void *fa[7] = {q, k, v, out, lse, NULL, NULL};
  int nf = 5;
  if (pos)
    fa[nf++] = pos[0], fa[nf++] = pos[1];
  CHECK(run(fwd, nf, fa));
  CHECK(tail_intact(out, nt) && tail_intact(lse, N));
  double eo = rel_error(out, ro, nt);
  double el = 0;
  for (int i = 0; i < N; ++i) {
    if (isinf(rl[i])) {
      CHECK(isinf(lse[i]) && lse[i] > 0);
      continue;
    }
    el = fmax(el, fabs((double)lse[i] - rl[i]) / fmax(1.0, fabs(rl[i])));
  }

  void *ba[11] = {q, k, v, out, lse, dout};
  int nb = 6;
  if (pos)
    ba[nb++] = pos[0], ba[nb++] = pos[1];
  ba[nb++] = dq, ba[nb++] = dk, ba[nb++] = dv;
  CHECK(run(bwd, nb, ba));
  CHECK(tail_intact(dq, nt) && tail_intact(dk, nt) && tail_intact(dv, nt));
  double eq = rel_error(dq, rdq, nt), ek = rel_error(dk, rdk, nt),
         ev = rel_error(dv, rdv, nt);
  printf("%s/%s: out %.2e lse %.2e dq %.2e dk %.2e dv %.2e\n", fwd, bwd, eo,
         el, eq, ek, ev);
  CHECK(eo < 1e-5 && el < 1e-5);
  CHECK(eq < 1e-4 && ek < 1e-4 && ev < 1e-4);
  // A query that sees no key has no gradient.
  if (p->mask_fn)
    for (int c = 0; c < D; ++c)
      CHECK(dq[c] == 0);
  float *all[] = {q, k, v, dout, out, lse, dq, dk, dv};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i)
    free(all[i]);
  return 0;
}

/// @fwd_a / @bwd_a: RoPE at offset 3, scale then softcap 2, causal, query 0
/// masked out.
static int offsets_softcap_causal(void) {
  struct attn_ref_problem p = {
      .batch = 1, .heads = 1, .kv_heads = 1, .seq_q = N, .seq_k = N,
      .head_dim = D, .value_dim = D, .scale = 0.35, .causal = true,
      .rope = true, .theta = 10000, .rotary_dim = 8, .nmods = 2,
      .mods = {ATTN_REF_SCALE, ATTN_REF_SOFTCAP}, .softcap = 2.0,
      .q_offset = 3, .k_offset = 3, .mask_fn = hide_row0};
  return check_pair("fwd_a", "bwd_a", &p, NULL, 11);
}

/// @fwd_b / @bwd_b: RoPE at explicit positions (interleaved, rotary dim 6),
/// the scale folded into exp_lse and ds, the window (3, 2).
static int positions_window_folded_scale(void) {
  static int32_t qpos[N] = {5, 0, 17, 3, 3, 9, 1, 40, 2, 8, 6, 11};
  static int32_t kpos[N] = {2, 7, 7, 0, 13, 4, 25, 1, 9, 3, 10, 6};
  int32_t *pos[2] = {qpos, kpos};
  struct attn_ref_problem p = {
      .batch = 1, .heads = 1, .kv_heads = 1, .seq_q = N, .seq_k = N,
      .head_dim = D, .value_dim = D, .scale = 0.35, .rope = true,
      .theta = 100, .rotary_dim = 6, .interleaved = true, .window = true,
      .window_left = 3, .window_right = 2, .q_positions = qpos,
      .k_positions = kpos};
  return check_pair("fwd_b", "bwd_b", &p, pos, 12);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: attn-tile-grad-test grad_step.mlir\n");
    return 2;
  }
  input = argv[1];
  if (!load()) {
    fprintf(stderr, "FAIL: cannot parse, lower or JIT %s\n", input);
    return 1;
  }
  static const struct test_case tests[] = {
      TEST(offsets_softcap_causal),
      TEST(positions_window_folded_scale),
  };
  int rc = run_tests(tests, sizeof tests / sizeof tests[0], NULL, NULL);
  attn_jit_destroy(jit);
  mlirOperationDestroy(module);
  mlirContextDestroy(ctx);
  return rc;
}
