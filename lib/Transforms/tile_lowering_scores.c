//===- tile_lowering_scores.c - Score-tile ops to loops, for CPU and GPU --===//
//
// The loops of the ops that act on a score tile between the two products:
// tile.mask (padding keys, causal, window), tile.score_mod (scale, softcap,
// alibi in the order given), and tile.score_fn / tile.mask_fn /
// tile.score_fn_grad (the backward's), whose body is cloned into the loop
// (the gate, the document mask and every attn.score_mod / attn.mask_mod
// body arrive that way). One loop over the tile's elements each, built
// with the helpers of tile_lowering.c so that the CPU and GPU paths share
// them. Element (i, j) is query row row + i and key col + j of the
// sequence (clamped into it for the bodies).
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/tile/tile_dialect.h"

#include "lib/IR/attn_builder.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <string.h>

/// tile.mask (scores, row, col) {causal, kv_len, window}.
static void gen_mask(struct attn_tile_gen *g) {
  struct attn_builder *b = g->b;
  bool causal = false;
  int64_t kv_len = 0, left = -1, right = -1;
  attn_attr_bool(g->op, "causal", &causal);
  attn_attr_i64(g->op, "kv_len", &kv_len);
  attn_tile_mask_get_window(g->op, &left, &right);
  MlirValue kvlen = attn_gen_index(g, kv_len);
  MlirValue wleft = {NULL}, wright = {NULL};
  if (left >= 0)
    wleft = attn_gen_index(g, left);
  if (right >= 0)
    wright = attn_gen_index(g, right);
  MlirValue ninf = attn_gen_float(g, -INFINITY);
  struct attn_b_for loop;
  MlirValue e = attn_gen_open_loop(g, &loop, g->dims[0][0] * g->dims[0][1]);
  MlirValue ij[2];
  attn_gen_split_index(g, e, g->dims[0][1], &ij[0], &ij[1]);
  MlirValue qi = attn_b_addi(b, attn_gen_arg(g, 1), ij[0]);
  MlirValue kj = attn_b_addi(b, attn_gen_arg(g, 2), ij[1]);
  MlirValue bad = attn_b_cmpi(b, ATTN_B_UGE, kj, kvlen);
  if (causal) {
    MlirValue fut = attn_b_cmpi(b, ATTN_B_UGT, kj, qi);
    bad = attn_b_ori(b, bad, fut);
  }
  if (left >= 0) {
    // j < i - left, without going below zero: j + left < i.
    MlirValue kl = attn_b_addi(b, kj, wleft);
    MlirValue past = attn_b_cmpi(b, ATTN_B_ULT, kl, qi);
    bad = attn_b_ori(b, bad, past);
  }
  if (right >= 0) {
    MlirValue qr = attn_b_addi(b, qi, wright);
    MlirValue ahead = attn_b_cmpi(b, ATTN_B_UGT, kj, qr);
    bad = attn_b_ori(b, bad, ahead);
  }
  MlirValue x = attn_b_load(b, attn_gen_arg(g, 0), 2, ij);
  MlirValue y = attn_b_select(b, bad, ninf, x);
  attn_b_store(b, y, attn_gen_arg(g, 0), 2, ij);
  attn_gen_close_loop(g, &loop);
}

/// The values the modifiers use, made before the loop (qi and kj: the
/// element's query row and key, in it).
struct mod_values {
  MlirValue scale, cap, invcap, one, mtwo, slope;
  MlirValue small, tanh_c[3]; // softcap: |t| below small takes the series
  MlirValue qi, kj;
};

/// Constants a modifier needs before the loop.
static void gen_mod_constants(struct attn_tile_gen *g, int mod,
                              const struct attn_tile_score_mods *m,
                              MlirValue c1h, struct mod_values *v) {
  struct attn_builder *b = g->b;
  switch (mod) {
  case ATTN_MOD_SCALE:
    v->scale = attn_gen_float(g, m->scale);
    break;
  case ATTN_MOD_SOFTCAP:
    v->cap = attn_gen_float(g, m->softcap);
    v->invcap = attn_gen_float(g, 1.0 / m->softcap);
    v->one = attn_gen_float(g, 1.0);
    v->mtwo = attn_gen_float(g, -2.0);
    v->small = attn_gen_float(g, 0.125);
    v->tanh_c[0] = attn_gen_float(g, -1.0 / 3.0);
    v->tanh_c[1] = attn_gen_float(g, 2.0 / 15.0);
    v->tanh_c[2] = attn_gen_float(g, -17.0 / 315.0);
    break;
  case ATTN_MOD_ALIBI: {
    // m_h = 2^(-max_bias * (h + 1) / heads), once per tile.
    MlirValue acoef = attn_gen_float(g, -m->alibi / (double)m->heads);
    MlirValue h1 = attn_b_addi(b, attn_gen_arg(g, 2), c1h);
    MlirValue h64 = attn_b_cast(b, "arith.index_cast", h1, b->t.i64);
    MlirValue hf = attn_b_cast(b, "arith.uitofp", h64, g->ct);
    v->slope = attn_b_unary(b, "math.exp2", attn_b_mulf(b, hf, acoef));
    break;
  }
  }
}

/// Modifier mod applied to x, inside the loop.
static MlirValue gen_mod_step(struct attn_tile_gen *g, int mod, MlirValue x,
                              const struct mod_values *v) {
  struct attn_builder *b = g->b;
  switch (mod) {
  case ATTN_MOD_SCALE:
    return attn_b_mulf(b, x, v->scale);
  case ATTN_MOD_SOFTCAP: {
    // tanh(t) = sign(t) (1 - e) / (1 + e), e = exp(-2 |t|): no overflow.
    // Below |t| = 1/8, 1 - e cancels (to 0 below 2^-25, so that a large cap
    // gave cap tanh(s / cap) = 0 instead of about s): there the series
    // t (1 - t^2/3 + 2 t^4/15 - 17 t^6/315), within 2e-9 relative. Both
    // stay within about 3e-7 relative of tanh. f64 tiles (the CPU path's
    // float64 programs) take math.tanh, libm's tanh there.
    MlirValue t = attn_b_mulf(b, x, v->invcap);
    if (mlirTypeIsAF64(g->ct))
      return attn_b_mulf(b, attn_b_unary(b, "math.tanh", t), v->cap);
    MlirValue a = attn_b_unary(b, "math.absf", t);
    MlirValue e = attn_b_unary(b, "math.exp", attn_b_mulf(b, a, v->mtwo));
    MlirValue n = attn_b_subf(b, v->one, e);
    MlirValue d = attn_b_addf(b, v->one, e);
    MlirValue r = attn_b_divf(b, n, d);
    MlirValue h = attn_b_binary(b, "math.copysign", r, t);
    MlirValue t2 = attn_b_mulf(b, t, t);
    MlirValue poly = attn_b_fma(b, t2, v->tanh_c[2], v->tanh_c[1]);
    poly = attn_b_fma(b, t2, poly, v->tanh_c[0]);
    poly = attn_b_fma(b, t2, poly, v->one);
    MlirValue series = attn_b_mulf(b, t, poly);
    MlirValue near0 = attn_b_cmpf(b, ATTN_B_F_OLT, a, v->small);
    return attn_b_mulf(b, attn_b_select(b, near0, series, h), v->cap);
  }
  case ATTN_MOD_ALIBI: {
    MlirValue q = attn_b_cast(b, "arith.index_cast", v->qi, b->t.i64);
    MlirValue k = attn_b_cast(b, "arith.index_cast", v->kj, b->t.i64);
    MlirValue f = attn_b_cast(b, "arith.sitofp", attn_b_subi(b, q, k),
                              g->ct);
    MlirValue p = attn_b_mulf(b, attn_b_unary(b, "math.absf", f), v->slope);
    return attn_b_subf(b, x, p);
  }
  }
  return x;
}

/// tile.score_mod (scores, batch, head, row, col) {mods, ...}.
static void gen_score_mod(struct attn_tile_gen *g) {
  struct attn_builder *b = g->b;
  struct attn_tile_score_mods m;
  struct mod_values v;
  memset(&v, 0, sizeof v);
  attn_tile_score_mod_get(g->op, &m);
  MlirValue c1h = attn_gen_index(g, 1);
  for (int k = 0; k < m.n; ++k)
    gen_mod_constants(g, m.mods[k], &m, c1h, &v);
  struct attn_b_for loop;
  MlirValue e = attn_gen_open_loop(g, &loop, g->dims[0][0] * g->dims[0][1]);
  MlirValue ij[2];
  attn_gen_split_index(g, e, g->dims[0][1], &ij[0], &ij[1]);
  v.qi = attn_b_addi(b, attn_gen_arg(g, 3), ij[0]);
  v.kj = attn_b_addi(b, attn_gen_arg(g, 4), ij[1]);
  MlirValue x = attn_b_load(b, attn_gen_arg(g, 0), 2, ij);
  for (int k = 0; k < m.n; ++k)
    x = gen_mod_step(g, m.mods[k], x, &v);
  attn_b_store(b, x, attn_gen_arg(g, 0), 2, ij);
  attn_gen_close_loop(g, &loop);
}

/// Builds the ops of a body that a path cannot lower as they are:
/// math.absi (convert-gpu-to-nvvm has no pattern for it) becomes
/// maxsi(x, 0 - x), which is also what llvm.intr.abs gives for the most
/// negative value (itself). Every other op is cloned as is.
static bool clone_portable(struct attn_builder *b, MlirOperation op,
                           struct attn_b_map *m, void *user) {
  (void)user;
  if (!attn_op_is(op, "math.absi"))
    return false;
  MlirLocation saved = b->loc;
  b->loc = mlirOperationGetLocation(op);
  MlirValue y = attn_b_absi(b, attn_b_map_get(m, mlirOperationGetOperand(op, 0)));
  b->loc = saved;
  attn_b_map_add(m, mlirOperationGetResult(op, 0), y);
  return true;
}

/// tile.score_fn / tile.mask_fn (scores, batch, head, row, col) {seq_q,
/// seq_k}: per element, the body cloned with its arguments bound to (the
/// score,) b, h, q = min(row + i, seq_q - 1), kv = min(col + j, seq_k - 1);
/// score_fn stores its value, mask_fn -inf where it yields false. Its
/// memref.loads of captures are cloned as they are (attn-tile clamped their
/// indices), and every other op too but math.absi (clone_portable).
static void gen_fn(struct attn_tile_gen *g, bool score) {
  struct attn_builder *b = g->b;
  // tile.score_fn_grad (ds, scores_in, batch, head, row, col): the body
  // reads scores_in and its value multiplies ds.
  bool grad = attn_op_is(g->op, ATTN_OP_TILE_SCORE_FN_GRAD);
  int in = grad ? 1 : 0, at = in + 1; // the score tile; batch, head, ...
  int64_t seq_q = 1, seq_k = 1;
  attn_attr_i64(g->op, "seq_q", &seq_q);
  attn_attr_i64(g->op, "seq_k", &seq_k);
  MlirValue qlast = attn_gen_index(g, seq_q - 1);
  MlirValue klast = attn_gen_index(g, seq_k - 1);
  MlirValue ninf = {NULL}, zero = {NULL};
  if (!score)
    ninf = attn_gen_float(g, -INFINITY);
  if (grad)
    zero = attn_gen_float(g, 0.0);
  struct attn_b_for loop;
  MlirValue e = attn_gen_open_loop(g, &loop, g->dims[0][0] * g->dims[0][1]);
  MlirValue ij[2];
  attn_gen_split_index(g, e, g->dims[0][1], &ij[0], &ij[1]);
  MlirValue q = attn_b_minui(
      b, attn_b_addi(b, attn_gen_arg(g, at + 2), ij[0]), qlast);
  MlirValue kv = attn_b_minui(
      b, attn_b_addi(b, attn_gen_arg(g, at + 3), ij[1]), klast);
  MlirValue x = attn_b_load(b, attn_gen_arg(g, in), 2, ij);
  MlirValue args[5] = {x, attn_gen_arg(g, at), attn_gen_arg(g, at + 1), q, kv};
  struct attn_b_map m = {0};
  MlirValue y = attn_b_clone_body(
      b, mlirRegionGetFirstBlock(mlirOperationGetRegion(g->op, 0)),
      score ? args : args + 1, &m, clone_portable, NULL);
  attn_b_map_free(&m);
  if (!score)
    y = attn_b_select(b, y, x, ninf);
  if (grad) {
    // ds *= the derivative; a zero ds (a masked score) stays zero even
    // where the derivative is not finite.
    MlirValue ds = attn_b_load(b, attn_gen_arg(g, 0), 2, ij);
    MlirValue none = attn_b_cmpf(b, ATTN_B_F_OEQ, ds, zero);
    y = attn_b_select(b, none, zero, attn_b_mulf(b, ds, y));
  }
  attn_b_store(b, y, attn_gen_arg(g, 0), 2, ij);
  attn_gen_close_loop(g, &loop);
}

bool attn_gen_score_ops(struct attn_tile_gen *g) {
  if (attn_op_is(g->op, ATTN_OP_TILE_MASK))
    gen_mask(g);
  else if (attn_op_is(g->op, ATTN_OP_TILE_SCORE_FN))
    gen_fn(g, true);
  else if (attn_op_is(g->op, ATTN_OP_TILE_MASK_FN))
    gen_fn(g, false);
  else if (attn_op_is(g->op, ATTN_OP_TILE_SCORE_FN_GRAD))
    gen_fn(g, true);
  else if (attn_op_is(g->op, ATTN_OP_TILE_SCORE_MOD))
    gen_score_mod(g);
  else
    return false;
  return true;
}
