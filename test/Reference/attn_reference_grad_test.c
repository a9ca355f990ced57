// attn_reference_grad_test.c - unit tests of lib/Reference/
// attn_reference_grad.c: its dq, dk, dv and dgate against central finite
// differences of attn_reference's loss L = sum(out * dO), for problems
// covering every block of the first backward slice (scale, causal, window,
// document mask, GQA, RoPE at offsets and at explicit positions in both
// layouts, softcap, ALiBi, the gate, score_fn with and without its
// derivative, mask_fn); its lse against the definition; a query that sees
// no key; the inverse rotation; attn_reference_capture_grad against dgate;
// the error paths.

#include "lib/Reference/attn_reference.h"
#include "test/test_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/// One problem's tensors, filled with N(0, 1) values from a fixed seed.
struct data {
  double *q, *k, *v, *dout, *gate;
  double *dq, *dk, *dv, *dgate, *lse;
  size_t nq, nk, nv, no, ng;
};

static int64_t gate_cols(const struct attn_ref_problem *p) {
  return p->gate_block > 0 ? (p->seq_k + p->gate_block - 1) / p->gate_block
                           : 0;
}

static double *normals(struct attn_rng *r, size_t n) {
  double *x = malloc(sizeof(double) * (n ? n : 1));
  for (size_t i = 0; x && i < n; ++i)
    x[i] = attn_rng_normal(r);
  return x;
}

static bool make_data(struct data *x, const struct attn_ref_problem *p,
                      uint64_t seed) {
  struct attn_rng r;
  attn_rng_seed(&r, seed);
  x->nq = (size_t)(p->batch * p->heads * p->seq_q * p->head_dim);
  x->nk = (size_t)(p->batch * p->kv_heads * p->seq_k * p->head_dim);
  x->nv = (size_t)(p->batch * p->kv_heads * p->seq_k * p->value_dim);
  x->no = (size_t)(p->batch * p->heads * p->seq_q * p->value_dim);
  x->ng = (size_t)(p->batch * p->heads * p->seq_q * gate_cols(p));
  x->q = normals(&r, x->nq);
  x->k = normals(&r, x->nk);
  x->v = normals(&r, x->nv);
  x->dout = normals(&r, x->no);
  x->gate = normals(&r, x->ng);
  x->dq = normals(&r, x->nq);
  x->dk = normals(&r, x->nk);
  x->dv = normals(&r, x->nv);
  x->dgate = normals(&r, x->ng);
  x->lse = normals(&r, (size_t)(p->batch * p->heads * p->seq_q));
  return x->q && x->k && x->v && x->dout && x->gate && x->dq && x->dk &&
         x->dv && x->dgate && x->lse;
}

static void free_data(struct data *x) {
  double *all[] = {x->q,  x->k,  x->v,  x->dout,  x->gate,
                   x->dq, x->dk, x->dv, x->dgate, x->lse};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i)
    free(all[i]);
}

/// L = sum(out * dO) of attn_reference at the current tensors.
static double loss(const struct attn_ref_problem *p, const struct data *x) {
  double *out = malloc(sizeof(double) * x->no);
  double l = NAN;
  if (out && attn_reference(p, x->q, x->k, x->v, out)) {
    l = 0;
    for (size_t i = 0; i < x->no; ++i)
      l += out[i] * x->dout[i];
  }
  free(out);
  return l;
}

/// The relative error (attn_rel_error) of grad against central finite
/// differences of the loss in every element of t (n of them).
static double fd_error(struct attn_ref_problem *p, struct data *x, double *t,
                       size_t n, const double *grad) {
  double *fd = malloc(sizeof(double) * n);
  if (!fd)
    return INFINITY;
  const double e = 1e-5;
  for (size_t i = 0; i < n; ++i) {
    double keep = t[i];
    t[i] = keep + e;
    double hi = loss(p, x);
    t[i] = keep - e;
    double lo = loss(p, x);
    t[i] = keep;
    fd[i] = (hi - lo) / (2 * e);
  }
  double err = attn_rel_error(grad, fd, n);
  free(fd);
  return err;
}

/// The 2-norm of x[0..n).
static double norm(const double *x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i)
    s += x[i] * x[i];
  return sqrt(s);
}

/// Checks every gradient of p against finite differences (dgate when p has
/// a gate) to within tol, and returns 0.
static int check_problem(struct attn_ref_problem *p, uint64_t seed, double tol) {
  struct data x;
  CHECK(make_data(&x, p, seed));
  bool gated = false;
  for (int i = 0; i < p->nmods; ++i)
    gated |= p->mods[i] == ATTN_REF_GATE;
  if (gated)
    p->gate = x.gate;
  CHECK(attn_reference_grad(p, x.q, x.k, x.v, x.dout, x.dq, x.dk, x.dv,
                            gated ? x.dgate : NULL, x.lse));
  double eq = fd_error(p, &x, x.q, x.nq, x.dq);
  double ek = fd_error(p, &x, x.k, x.nk, x.dk);
  double ev = fd_error(p, &x, x.v, x.nv, x.dv);
  double eg = gated ? fd_error(p, &x, x.gate, x.ng, x.dgate) : 0;
  if (!(eq < tol && ek < tol && ev < tol && eg < tol))
    fprintf(stderr, "dq %.3g dk %.3g dv %.3g dgate %.3g (tolerance %.3g)\n",
            eq, ek, ev, eg, tol);
  CHECK(eq < tol && ek < tol && ev < tol && eg < tol);
  // The gradients are not all zero (a problem that tests something).
  CHECK(norm(x.dq, x.nq) > 0 && norm(x.dk, x.nk) > 0 && norm(x.dv, x.nv) > 0);
  free_data(&x);
  return 0;
}

static int scale_only(void) {
  struct attn_ref_problem p = {.batch = 1, .heads = 2, .kv_heads = 2,
                               .seq_q = 5, .seq_k = 7, .head_dim = 4,
                               .value_dim = 3, .scale = 0.7};
  return check_problem(&p, 1, 1e-7);
}

static int causal_gqa_rope_offsets(void) {
  struct attn_ref_problem p = {
      .batch = 2, .heads = 4, .kv_heads = 2, .seq_q = 6, .seq_k = 8,
      .head_dim = 6, .value_dim = 5, .scale = 0.45, .causal = true,
      .rope = true, .theta = 10000, .rotary_dim = 4, .q_offset = 5,
      .k_offset = 3};
  return check_problem(&p, 2, 1e-7);
}

static int positions_window_softcap_alibi(void) {
  static const int32_t qpos[2 * 6] = {4, 9, 1, 7, 7, 30, 0, 2, 3, 11, 5, 6};
  static const int32_t kpos[2 * 8] = {3, 0, 8, 9, 12, 2, 5, 1,
                                      6, 6, 2, 40, 1, 0, 7, 3};
  struct attn_ref_problem p = {
      .batch = 2, .heads = 2, .kv_heads = 1, .seq_q = 6, .seq_k = 8,
      .head_dim = 6, .value_dim = 4, .scale = 0.6, .rope = true,
      .theta = 500, .rotary_dim = 6, .interleaved = true, .nmods = 3,
      .mods = {ATTN_REF_SCALE, ATTN_REF_SOFTCAP, ATTN_REF_ALIBI},
      .softcap = 1.5, .alibi_max_bias = 4, .window = true, .window_left = 2,
      .window_right = 3, .q_positions = qpos, .k_positions = kpos};
  return check_problem(&p, 3, 1e-7);
}

static int document_gate(void) {
  static const int32_t qs[1 * 7] = {0, 0, 0, 1, 1, 2, 2};
  static const int32_t ks[1 * 9] = {0, 0, 1, 1, 1, 1, 2, 2, 2};
  struct attn_ref_problem p = {
      .batch = 1, .heads = 2, .kv_heads = 1, .seq_q = 7, .seq_k = 9,
      .head_dim = 4, .value_dim = 4, .scale = 0.5, .nmods = 3,
      .mods = {ATTN_REF_GATE, ATTN_REF_SCALE, ATTN_REF_SOFTCAP},
      .softcap = 2.0, .gate_block = 4, .q_segments = qs, .k_segments = ks};
  return check_problem(&p, 4, 1e-7);
}

/// A score_fn body of any form: s + 0.3 sin(s) (kv + 1) / 4 - 0.05 s^2.
static double fn(void *ctx, double s, int64_t b, int64_t h, int64_t q,
                 int64_t kv) {
  (void)ctx, (void)b, (void)h, (void)q;
  return s + 0.3 * sin(s) * (double)(kv + 1) / 4.0 - 0.05 * s * s;
}

static double fn_grad(void *ctx, double s, int64_t b, int64_t h, int64_t q,
                      int64_t kv) {
  (void)ctx, (void)b, (void)h, (void)q;
  return 1.0 + 0.3 * cos(s) * (double)(kv + 1) / 4.0 - 0.1 * s;
}

/// Query 0 of every head sees no key.
static bool hide_row0(void *ctx, int64_t b, int64_t h, int64_t q, int64_t kv) {
  (void)ctx, (void)b, (void)h, (void)kv;
  return q != 0;
}

static int score_fn_with_derivative(void) {
  struct attn_ref_problem p = {
      .batch = 1, .heads = 2, .kv_heads = 2, .seq_q = 5, .seq_k = 6,
      .head_dim = 4, .value_dim = 3, .scale = 0.8, .causal = true,
      .nmods = 2, .mods = {ATTN_REF_SCALE, ATTN_REF_FN}, .score_fn = fn,
      .score_fn_grad = fn_grad, .mask_fn = hide_row0};
  return check_problem(&p, 5, 1e-7);
}

/// Without score_fn_grad the central difference stands in (within about
/// 1e-9 relative for a smooth body).
static int score_fn_central_difference(void) {
  struct attn_ref_problem p = {
      .batch = 1, .heads = 1, .kv_heads = 1, .seq_q = 6, .seq_k = 6,
      .head_dim = 4, .value_dim = 4, .scale = 0.9, .rope = true,
      .theta = 10000, .rotary_dim = 4, .nmods = 2,
      .mods = {ATTN_REF_FN, ATTN_REF_ALIBI}, .alibi_max_bias = 2,
      .score_fn = fn};
  return check_problem(&p, 6, 1e-6);
}

/// lse is ln sum_j exp(s_ij) of the final scores; +inf, with zero
/// gradients, for a query that sees no key.
static int lse_and_empty_row(void) {
  struct attn_ref_problem p = {
      .batch = 1, .heads = 1, .kv_heads = 1, .seq_q = 3, .seq_k = 4,
      .head_dim = 2, .value_dim = 2, .scale = 0.5, .mask_fn = hide_row0};
  const double q[6] = {1, 2, 0.5, -1, 3, 0.25};
  const double k[8] = {1, 0, 0, 1, -1, 1, 2, -0.5};
  const double v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const double dout[6] = {1, 1, 1, -1, 0.5, 2};
  double dq[6], dk[8], dv[8], lse[3];
  CHECK(attn_reference_grad(&p, q, k, v, dout, dq, dk, dv, NULL, lse));
  CHECK(isinf(lse[0]) && lse[0] > 0);
  CHECK(dq[0] == 0 && dq[1] == 0);
  for (int i = 1; i < 3; ++i) {
    double sum = 0;
    for (int j = 0; j < 4; ++j)
      sum += exp(0.5 * (q[2 * i] * k[2 * j] + q[2 * i + 1] * k[2 * j + 1]));
    CHECK(fabs(lse[i] - log(sum)) < 1e-14 * fmax(1, fabs(log(sum))));
  }
  return 0;
}

/// The inverse rotation undoes the rotation, at offsets and at positions.
static int rope_inverse(void) {
  double x[3 * 6], y[3 * 6];
  struct attn_rng r;
  attn_rng_seed(&r, 7);
  for (int i = 0; i < 18; ++i)
    x[i] = y[i] = attn_rng_normal(&r);
  static const int32_t pos[3] = {17, 2, 5};
  attn_reference_rope_at(y, 3, 6, 6, 100, false, NULL, 4);
  CHECK(attn_rel_error(y, x, 18) > 0.1);
  attn_reference_rope_inverse_at(y, 3, 6, 6, 100, false, NULL, 4);
  CHECK(attn_rel_error(y, x, 18) < 1e-14);
  attn_reference_rope_at(y, 3, 6, 4, 100, true, pos, 0);
  attn_reference_rope_inverse_at(y, 3, 6, 4, 100, true, pos, 0);
  CHECK(attn_rel_error(y, x, 18) < 1e-14);
  return 0;
}

/// A table a score_fn reads at the key index: s + t[kv].
static double add_table(void *ctx, double s, int64_t b, int64_t h, int64_t q,
                        int64_t kv) {
  (void)b, (void)h, (void)q;
  return s + ((const double *)ctx)[kv];
}

/// attn_reference_capture_grad against an exact gradient: the table t[j]
/// read by a score_fn is the gate g[b, h, i, j] = t[j] with blocks of one
/// key, so dt[j] is dgate summed over b, h and i (attn_reference_grad's,
/// exact); the table's values are put back.
static int capture_grad_is_dgate_summed(void) {
  enum { B = 1, H = 2, N = 5, M = 6 };
  struct attn_rng r;
  attn_rng_seed(&r, 11);
  double t[M], saved[M], g[B * H * N * M], dgate[B * H * N * M], dt[M];
  for (int j = 0; j < M; ++j)
    saved[j] = t[j] = attn_rng_normal(&r);
  for (int e = 0; e < B * H * N * M; ++e)
    g[e] = t[e % M];
  struct attn_ref_problem p = {
      .batch = B, .heads = H, .kv_heads = H, .seq_q = N, .seq_k = M,
      .head_dim = 4, .value_dim = 3, .scale = 0.7, .causal = true,
      .nmods = 3, .mods = {ATTN_REF_SCALE, ATTN_REF_GATE, ATTN_REF_SOFTCAP},
      .softcap = 2.0, .gate_block = 1, .gate = g};
  struct data x;
  CHECK(make_data(&x, &p, 12));
  CHECK(attn_reference_grad(&p, x.q, x.k, x.v, x.dout, x.dq, x.dk, x.dv,
                            dgate, NULL));
  struct attn_ref_problem pt = p;
  pt.mods[1] = ATTN_REF_FN;
  pt.score_fn = add_table;
  pt.fn_ctx = t;
  pt.gate = NULL;
  CHECK(attn_reference_capture_grad(&pt, x.q, x.k, x.v, x.dout, t, M, dt));
  double want[M] = {0};
  for (int e = 0; e < B * H * N * M; ++e)
    want[e % M] += dgate[e];
  CHECK(attn_rel_error(dt, want, M) < 1e-8);
  CHECK(norm(want, M) > 0 && memcmp(t, saved, sizeof t) == 0);
  CHECK(!attn_reference_capture_grad(&pt, x.q, NULL, x.v, x.dout, t, M, dt));
  free_data(&x);
  return 0;
}

/// A malformed problem or a missing tensor: false, outputs untouched.
static int errors(void) {
  struct attn_ref_problem p = {.batch = 1, .heads = 3, .kv_heads = 2,
                               .seq_q = 2, .seq_k = 2, .head_dim = 2,
                               .value_dim = 2, .scale = 1};
  double t[16] = {0}, dq[16], dk[16], dv[16];
  dq[0] = dk[0] = dv[0] = 42;
  CHECK(!attn_reference_grad(&p, t, t, t, t, dq, dk, dv, NULL, NULL));
  CHECK(dq[0] == 42 && dk[0] == 42 && dv[0] == 42);
  p.heads = 2;
  CHECK(!attn_reference_grad(&p, t, t, t, NULL, dq, dk, dv, NULL, NULL));
  CHECK(!attn_reference_grad(&p, t, t, t, t, dq, NULL, dv, NULL, NULL));
  CHECK(dq[0] == 42);
  p.nmods = 1;
  p.mods[0] = ATTN_REF_FN; // no score_fn
  CHECK(!attn_reference_grad(&p, t, t, t, t, dq, dk, dv, NULL, NULL));
  p.nmods = 0;
  CHECK(attn_reference_grad(&p, t, t, t, t, dq, dk, dv, NULL, NULL));
  CHECK(dq[0] == 0);
  return 0;
}

int main(void) {
  static const struct test_case tests[] = {
      TEST(scale_only),
      TEST(causal_gqa_rope_offsets),
      TEST(positions_window_softcap_alibi),
      TEST(document_gate),
      TEST(score_fn_with_derivative),
      TEST(score_fn_central_difference),
      TEST(lse_and_empty_row),
      TEST(rope_inverse),
      TEST(capture_grad_is_dgate_summed),
      TEST(errors),
  };
  return run_tests(tests, sizeof tests / sizeof tests[0], NULL, NULL);
}
