//===- tile_lowering_grad.c - The backward's row ops to loops, CPU and GPU ===//
//
// The loops of the tile ops the backward pass adds (issue 29): tile.row_lse
// (the forward's log-sum-exp from its running max and sum), tile.row_dot
// (D = rowsum(dO * O)), tile.exp_lse (P from the scores and the
// log-sum-exp), tile.ds (the softmax backward), and the gradients into
// captured tensors: tile.clear (zero a gradient buffer) and
// tile.capture_grad (accumulate ds times a body's derivative into one,
// by atomic adds: on the GPU the result is then not bitwise
// deterministic, its sums' order varying from run to run). Written once
// with the helpers of tile_lowering.c, so that the CPU path runs each row
// (or element) in one thread and the GPU path spreads them over the CTA.
// tile.score_fn_grad shares tile.score_fn's loop (tile_lowering_scores.c);
// tile.mma's transpose_a and tile.rope's inverse are options of their
// loops in tile_lowering.c.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/tile/tile_dialect.h"

#include "lib/IR/attn_builder.h"

#include "mlir-c/BuiltinAttributes.h"

#include <math.h>

/// log2(e) and ln(2), as the compute type's constants are made from them.
#define LOG2E 1.4426950408889634
#define LN2 0.6931471805599453

/// tile.row_lse (row_max, row_sum, lse): lse[i] = (m[i] + log2 l[i]) ln 2,
/// +inf where l[i] == 0.
static void gen_row_lse(struct attn_tile_gen *g) {
  struct attn_builder *b = g->b;
  MlirValue ln2 = attn_gen_float(g, LN2);
  MlirValue zero = attn_gen_float(g, 0.0);
  MlirValue inf = attn_gen_float(g, INFINITY);
  struct attn_b_for loop;
  MlirValue i = attn_gen_open_loop(g, &loop, g->dims[0][0]);
  MlirValue m = attn_b_load(b, attn_gen_arg(g, 0), 1, &i);
  MlirValue l = attn_b_load(b, attn_gen_arg(g, 1), 1, &i);
  MlirValue sum = attn_b_addf(b, m, attn_b_unary(b, "math.log2", l));
  MlirValue none = attn_b_cmpf(b, ATTN_B_F_OEQ, l, zero);
  MlirValue lse = attn_b_select(b, none, inf, attn_b_mulf(b, sum, ln2));
  attn_b_store(b, lse, attn_gen_arg(g, 2), 1, &i);
  attn_gen_close_loop(g, &loop);
}

/// tile.row_dot (a, b, d): d[i] = sum_j a[i, j] b[i, j], one row per
/// iteration.
static void gen_row_dot(struct attn_tile_gen *g) {
  struct attn_builder *b = g->b;
  MlirValue zero = attn_gen_float(g, 0.0);
  MlirValue ncols = attn_gen_index(g, g->dims[0][1]);
  struct attn_b_for loop;
  MlirValue i = attn_gen_open_loop(g, &loop, g->dims[0][0]);
  struct attn_b_for sum;
  attn_b_for_open(b, &sum, g->c0, ncols, g->c1, 1, &zero);
  MlirValue ij[2] = {i, sum.iv};
  MlirValue x = attn_b_load(b, attn_gen_arg(g, 0), 2, ij);
  MlirValue y = attn_b_load(b, attn_gen_arg(g, 1), 2, ij);
  MlirValue acc = attn_b_fma(b, x, y, sum.args[0]);
  attn_b_for_close(b, &sum, 1, &acc);
  attn_b_store(b, sum.results[0], attn_gen_arg(g, 2), 1, &i);
  attn_gen_close_loop(g, &loop);
}

/// tile.exp_lse (scores, lse) {scale}: s = exp(scale s - lse[i]), computed
/// as the forward's softmax_update computes its weights, exp2(s k - lse
/// log2 e) with k = scale log2 e; 0 where s is -inf or lse[i] is +inf.
static void gen_exp_lse(struct attn_tile_gen *g) {
  struct attn_builder *b = g->b;
  double scale = 1.0;
  attn_attr_f64(g->op, "scale", &scale);
  MlirValue k = attn_gen_float(g, scale * LOG2E);
  MlirValue log2e = attn_gen_float(g, LOG2E);
  MlirValue zero = attn_gen_float(g, 0.0);
  MlirValue inf = attn_gen_float(g, INFINITY);
  MlirValue ninf = attn_gen_float(g, -INFINITY);
  struct attn_b_for loop;
  MlirValue e = attn_gen_open_loop(g, &loop, g->dims[0][0] * g->dims[0][1]);
  MlirValue ij[2];
  attn_gen_split_index(g, e, g->dims[0][1], &ij[0], &ij[1]);
  MlirValue x = attn_b_load(b, attn_gen_arg(g, 0), 2, ij);
  MlirValue lse = attn_b_load(b, attn_gen_arg(g, 1), 1, &ij[0]);
  MlirValue t = attn_b_subf(b, attn_b_mulf(b, x, k),
                            attn_b_mulf(b, lse, log2e));
  MlirValue p = attn_b_unary(b, "math.exp2", t);
  MlirValue masked = attn_b_cmpf(b, ATTN_B_F_OEQ, x, ninf);
  MlirValue empty = attn_b_cmpf(b, ATTN_B_F_OEQ, lse, inf);
  MlirValue dead = attn_b_ori(b, masked, empty);
  attn_b_store(b, attn_b_select(b, dead, zero, p), attn_gen_arg(g, 0), 2, ij);
  attn_gen_close_loop(g, &loop);
}

/// tile.ds (p, dp, d) {scale}: dp = scale p (dp - d[i]), in place.
static void gen_ds(struct attn_tile_gen *g) {
  struct attn_builder *b = g->b;
  double scale = 1.0;
  attn_attr_f64(g->op, "scale", &scale);
  MlirValue sc = attn_gen_float(g, scale);
  struct attn_b_for loop;
  MlirValue e = attn_gen_open_loop(g, &loop, g->dims[0][0] * g->dims[0][1]);
  MlirValue ij[2];
  attn_gen_split_index(g, e, g->dims[0][1], &ij[0], &ij[1]);
  MlirValue p = attn_b_load(b, attn_gen_arg(g, 0), 2, ij);
  MlirValue dp = attn_b_load(b, attn_gen_arg(g, 1), 2, ij);
  MlirValue d = attn_b_load(b, attn_gen_arg(g, 2), 1, &ij[0]);
  MlirValue ps = attn_b_mulf(b, p, sc);
  MlirValue ds = attn_b_mulf(b, ps, attn_b_subf(b, dp, d));
  attn_b_store(b, ds, attn_gen_arg(g, 1), 2, ij);
  attn_gen_close_loop(g, &loop);
}

/// Splits e into the indices idx[0..rank) of a row-major shape d.
static void split_flat(struct attn_tile_gen *g, MlirValue e, int rank,
                       const int64_t *d, MlirValue *idx) {
  for (int r = rank - 1; r >= 0; --r) {
    MlirValue n = attn_gen_index(g, d[r]);
    idx[r] = r ? attn_b_remui(g->b, e, n) : e;
    if (r)
      e = attn_b_divui(g->b, e, n);
  }
}

/// tile.clear (dst): dst = 0, every element of any rank.
static void gen_clear(struct attn_tile_gen *g) {
  struct attn_builder *b = g->b;
  int64_t d[8];
  int rank = attn_static_shape(mlirValueGetType(attn_gen_arg(g, 0)), d);
  long long total = 1;
  for (int r = 0; r < rank; ++r)
    total *= d[r];
  MlirValue zero = attn_gen_float(g, 0.0);
  struct attn_b_for loop;
  MlirValue e = attn_gen_open_loop(g, &loop, total);
  MlirValue idx[8];
  split_flat(g, e, rank, d, idx);
  attn_b_store(b, zero, attn_gen_arg(g, 0), rank, idx);
  attn_gen_close_loop(g, &loop);
}

/// tile.capture_grad (ds, scores_in, grad, batch, head, row, col) {seq_q,
/// seq_k, scale}: per element, the body cloned as tile.score_fn's (q and
/// kv clamped into the sequences) yields (t, idx...), and grad[idx] +=
/// scale ds t by memref.atomic_rmw addf (an atomic add on the GPU,
/// atom.global.add; on the CPU one thread runs the CTAs, so it never
/// contends); 0 is added where ds is 0, whatever t is.
static void gen_capture_grad(struct attn_tile_gen *g) {
  struct attn_builder *b = g->b;
  int64_t seq_q = 1, seq_k = 1;
  double scale = 1.0;
  attn_attr_i64(g->op, "seq_q", &seq_q);
  attn_attr_i64(g->op, "seq_k", &seq_k);
  attn_attr_f64(g->op, "scale", &scale);
  MlirValue qlast = attn_gen_index(g, seq_q - 1);
  MlirValue klast = attn_gen_index(g, seq_k - 1);
  MlirValue zero = attn_gen_float(g, 0.0);
  MlirValue sc = attn_gen_float(g, scale);
  MlirValue grad = attn_gen_arg(g, 2);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(g->op, 0));
  MlirOperation term = mlirBlockGetTerminator(body);
  intptr_t nidx = mlirOperationGetNumOperands(term) - 1;
  struct attn_b_for loop;
  MlirValue e = attn_gen_open_loop(g, &loop, g->dims[0][0] * g->dims[0][1]);
  MlirValue ij[2];
  attn_gen_split_index(g, e, g->dims[0][1], &ij[0], &ij[1]);
  MlirValue q =
      attn_b_minui(b, attn_b_addi(b, attn_gen_arg(g, 5), ij[0]), qlast);
  MlirValue kv =
      attn_b_minui(b, attn_b_addi(b, attn_gen_arg(g, 6), ij[1]), klast);
  MlirValue x = attn_b_load(b, attn_gen_arg(g, 1), 2, ij);
  MlirValue args[5] = {x, attn_gen_arg(g, 3), attn_gen_arg(g, 4), q, kv};
  struct attn_b_map m = {0};
  MlirValue t = attn_b_clone_body(b, body, args, &m, NULL, NULL);
  MlirValue opd[2 + 8];
  for (intptr_t i = 0; i < nidx && i < 8; ++i)
    opd[2 + i] = attn_b_map_get(&m, mlirOperationGetOperand(term, 1 + i));
  attn_b_map_free(&m);
  if (mlirValueIsNull(t) || nidx < 1 || nidx > 8) {
    attn_builder_fail(b, "malformed tile.capture_grad body");
    attn_gen_close_loop(g, &loop);
    return;
  }
  MlirValue ds = attn_b_load(b, attn_gen_arg(g, 0), 2, ij);
  MlirValue none = attn_b_cmpf(b, ATTN_B_F_OEQ, ds, zero);
  MlirValue v =
      attn_b_select(b, none, zero, attn_b_mulf(b, attn_b_mulf(b, ds, t), sc));
  opd[0] = v;
  opd[1] = grad;
  // kind 0: addf (arith::AtomicRMWKind).
  MlirNamedAttribute kind =
      attn_b_named(b, "kind", mlirIntegerAttrGet(b->t.i64, 0));
  attn_b_op(b, "memref.atomic_rmw", 1, &g->ct, 2 + nidx, opd, 1, &kind, 0);
  attn_gen_close_loop(g, &loop);
}

bool attn_gen_grad_ops(struct attn_tile_gen *g) {
  if (attn_op_is(g->op, ATTN_OP_TILE_CLEAR)) {
    gen_clear(g);
    return true;
  }
  if (attn_op_is(g->op, ATTN_OP_TILE_CAPTURE_GRAD)) {
    gen_capture_grad(g);
    return true;
  }
  if (attn_op_is(g->op, ATTN_OP_TILE_ROW_LSE))
    gen_row_lse(g);
  else if (attn_op_is(g->op, ATTN_OP_TILE_ROW_DOT))
    gen_row_dot(g);
  else if (attn_op_is(g->op, ATTN_OP_TILE_EXP_LSE))
    gen_exp_lse(g);
  else if (attn_op_is(g->op, ATTN_OP_TILE_DS))
    gen_ds(g);
  else
    return false;
  return true;
}
