//===- attn_tile_grad.c - attn-tile: attn.fused_grad's two kernels --------===//
//
// Two kernels, deterministic (each output element is written by one CTA):
//
//   @f__grad__dkdv, grid (ceil(M / BN), B * Hkv): K and V of one key block
//   (K rotated), dK = dV = 0; for each query head of the K/V head's group,
//   for each query block that sees the key block:
//     Q (rotated), dO, O, lse; D = rowsum(dO O)         tile.row_dot
//     S = Q K^T [S_in = Q K^T]; modifiers; masks          as the forward
//     P = exp(scale S - lse)                              tile.exp_lse
//     dV += P^T dO                                        tile.mma transpose_a
//     dP = dO V^T; dS = scale P (dP - D)                  tile.ds
//     [dS *= d chain / d s_raw at S_in]                   tile.score_fn_grad
//     dK += dS^T Q
//   then dK rotated back (tile.rope inverse) and dK, dV stored.
//
//   @f__grad__dq, grid (ceil(N / BM), B * H): Q (rotated), dO, O, lse, D,
//   dQ = 0; for each key block the query block sees: K (rotated), V, S,
//   P, dP, dS as above, dQ += dS K; then dQ rotated back and stored.
//
// The scale: folded into exp_lse when the forward folds it into the
// softmax (nothing after it), and then also into tile.ds, since dS with
// respect to the raw score is scale dS. When the modifier chain is
// nonlinear (softcap or a score_fn body), dS is multiplied by the chain's
// derivative with respect to the raw score, at the raw score S_in (a
// second tile.mma: the tile dialect has no copy): a tile.score_fn_grad
// whose body is the chain differentiated in forward mode (softcap's
// 1 - tanh^2; the score_fn body's ops by attn_grad_body.c's rules; the
// scale, ALiBi and the gate add or multiply by constants). A linear chain
// (scale, ALiBi, gate) has the constant derivative scale, which tile.ds
// applies.
//
// Gradients into captured tensors (attn.fused_grad's grads): both kernels
// take the gradient buffers after their outputs; the dkdv kernel's first
// CTA zeroes them (tile.clear), and the dq kernel, which visits each
// (query, key) pair of a head once, keeps S_in and, after tile.ds,
// accumulates one tile.capture_grad per read of the tensor (the gate's,
// each tensor.extract of it in the score_fn body): the chain again from
// S_in in forward mode, the tangent seeded at that read, times dS times
// exp_scale / ds_scale (dS with respect to the chain's value), added at
// the read's indices (atomically: not bitwise deterministic on the GPU).
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/attn_tile_kernel.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/body.h"
#include "dialects/tile/tile_dialect.h"
#include "lib/IR/attn_builder.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// True when the modifier chain after the raw score is nonlinear (softcap
/// or a score_fn body): its derivative is then not a constant.
static bool chain_nonlinear(const struct kernel_shape *s) {
  return s->cfg.has_softcap || s->cfg.has_score_fn;
}

/// The scale tile.exp_lse applies: the forward's softmax factor.
static double exp_scale(const struct kernel_shape *s) {
  return attn_tk_scale_folds(s) ? s->cfg.scale : 1.0;
}

/// The scale tile.ds applies: d final score / d raw score where it is a
/// constant (a linear chain), else what is left of the scale after the
/// chain's derivative (the folded scale).
static double ds_scale(const struct kernel_shape *s) {
  return chain_nonlinear(s) ? exp_scale(s) : s->cfg.scale;
}

/// tile.score_fn_grad on dS (T_DP) at the raw scores T_SIN: its body is
/// the derivative of the modifiers attn_tk_build_score_mods applies, in order,
/// with respect to the raw score.
static void build_chain_grad(struct kernel *k, MlirValue col) {
  const struct kernel_shape *s = k->s;
  const struct attn_fused_config *c = &s->cfg;
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.score_fn_grad");
  MlirBlock body = attn_tile_build_score_fn_grad(
      b, k->tile[T_DP], k->tile[T_SIN], k->batch, k->head, k->row, col,
      s->q[2], s->k[2]);
  if (mlirBlockIsNull(body))
    return;
  MlirBlock block = b->block;
  MlirOperation anchor = b->anchor;
  attn_builder_at_end(b, body);
  MlirValue x = mlirBlockGetArgument(body, 0);
  MlirValue t = attn_tk_kconst(k, 1.0);
  bool fold = attn_tk_scale_folds(s);
  for (int i = 0; i < c->nmods && !b->failed; ++i) {
    int step = c->mods[i];
    if (step == ATTN_MOD_SCALE) {
      if (fold || c->scale == 1.0)
        continue; // in tile.ds's scale
      MlirValue sc = attn_tk_kconst(k, c->scale);
      x = attn_b_mulf(b, x, sc);
      t = attn_b_mulf(b, t, sc);
    } else if (step == ATTN_MOD_SOFTCAP) {
      MlirValue th;
      x = attn_tk_softcap_value(k, x, &th);
      t = attn_b_mulf(
          b, t, attn_b_subf(b, attn_tk_kconst(k, 1.0), attn_b_mulf(b, th, th)));
    } else if (step == ATTN_MOD_ALIBI) {
      x = attn_tk_alibi_value(k, body, x);
    } else if (step == ATTN_MOD_GATE) {
      x = attn_tk_gate_value(k, body, x);
    } else if (step == ATTN_MOD_FN) {
      MlirValue args[5] = {x};
      for (int a = 1; a < 5; ++a)
        args[a] = mlirBlockGetArgument(body, a);
      struct body_clone bc = {k, s->score_fn,
                              {0, s->q[0], s->q[1], s->q[2], s->k[2]},
                              {NULL}, {{NULL}}, 0};
      struct attn_b_map m = {0};
      MlirValue dt;
      x = attn_grad_clone_tangent(b, s->score_fn, args, t, &m,
                                  attn_tk_clone_extract, &bc, &dt);
      attn_b_map_free(&m);
      t = mlirValueIsNull(dt) ? attn_tk_kconst(k, 0.0) : dt;
    }
  }
  attn_tk_end_body(b, t, block, anchor);
}

/// True when a backward kernel keeps the raw scores S_in: for the chain's
/// derivative (a nonlinear chain), and in the dq kernel for the gradients
/// into captured tensors, whose chain is evaluated again from S_in.
static bool keeps_raw(const struct kernel_shape *s) {
  return chain_nonlinear(s) || (s->part == PART_DQ && s->ngrads > 0);
}

/// Builds, in body (a tile.capture_grad's, builder at its end), the chain
/// attn_tk_build_score_mods applies with, in forward mode, the derivative
/// of its value with respect to one value it reads: the gate's (gate) or what
/// the score_fn body's read seed loads; ends the body with gpu.yield of
/// that derivative and the read's indices.
static void build_site_body(struct kernel *k, MlirBlock body,
                            MlirOperation seed, bool gate) {
  const struct kernel_shape *s = k->s;
  const struct attn_fused_config *c = &s->cfg;
  struct attn_builder *b = &k->b;
  MlirValue x = mlirBlockGetArgument(body, 0), t = {NULL};
  MlirValue idx[8];
  int nidx = 0;
  bool fold = attn_tk_scale_folds(s);
  for (int i = 0; i < c->nmods && !b->failed; ++i) {
    int step = c->mods[i];
    if (step == ATTN_MOD_SCALE) {
      if (fold || c->scale == 1.0)
        continue; // in the factor tile.capture_grad's scale undoes
      MlirValue sc = attn_tk_kconst(k, c->scale);
      x = attn_b_mulf(b, x, sc);
      if (!mlirValueIsNull(t))
        t = attn_b_mulf(b, t, sc);
    } else if (step == ATTN_MOD_SOFTCAP) {
      MlirValue th;
      x = attn_tk_softcap_value(k, x, &th);
      if (!mlirValueIsNull(t))
        t = attn_b_mulf(b, t,
                        attn_b_subf(b, attn_tk_kconst(k, 1.0),
                                    attn_b_mulf(b, th, th)));
    } else if (step == ATTN_MOD_ALIBI) {
      x = attn_tk_alibi_value(k, body, x);
    } else if (step == ATTN_MOD_GATE) {
      x = attn_tk_gate_value(k, body, x);
      if (gate) {
        t = attn_tk_kconst(k, 1.0); // d (x + g) / d g; nothing before reads g
        memcpy(idx, k->gate_at, sizeof k->gate_at);
        nidx = 4;
      }
    } else if (step == ATTN_MOD_FN) {
      MlirValue args[5] = {x};
      for (int a = 1; a < 5; ++a)
        args[a] = mlirBlockGetArgument(body, a);
      struct body_clone bc = {k, s->score_fn,
                              {0, s->q[0], s->q[1], s->q[2], s->k[2]},
                              gate ? (MlirOperation){NULL} : seed,
                              {{NULL}},
                              0};
      struct attn_b_map m = {0};
      MlirValue dt;
      x = attn_grad_clone_tangent_at(b, s->score_fn, args, t, bc.seed, &m,
                                     attn_tk_clone_extract, &bc, &dt);
      attn_b_map_free(&m);
      t = dt;
      if (bc.seed_n) {
        memcpy(idx, bc.seed_idx, sizeof(MlirValue) * (size_t)bc.seed_n);
        nidx = bc.seed_n;
      }
    }
  }
  if (b->failed)
    return;
  if (nidx == 0) {
    attn_builder_fail(b, "a gradient into a captured tensor found no read "
                         "of it in the modifier chain (a bug in attn)");
    return;
  }
  MlirValue y[9] = {mlirValueIsNull(t) ? attn_tk_kconst(k, 0.0) : t};
  memcpy(y + 1, idx, sizeof(MlirValue) * (size_t)nidx);
  attn_b_op(b, "gpu.yield", 0, NULL, 1 + nidx, y, 0, NULL, 0);
}

/// One tile.capture_grad into gradient buffer i, for the read seed (null:
/// the gate), after tile.ds: dS (T_DP, still the gradient with respect to
/// the chain's value times ds_scale / exp_scale) at the raw scores T_SIN.
static void build_capture_grad(struct kernel *k, MlirValue col, int i,
                               MlirOperation seed) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.capture_grad");
  MlirBlock body = attn_tile_build_capture_grad(
      b, k->tile[T_DP], k->tile[T_SIN], k->grad[i], k->batch, k->head, k->row,
      col, s->q[2], s->k[2], exp_scale(s) / ds_scale(s));
  if (mlirBlockIsNull(body))
    return;
  MlirBlock block = b->block;
  MlirOperation anchor = b->anchor;
  attn_builder_at_end(b, body);
  build_site_body(k, body, seed, s->grad_target[i] == ATTN_GRAD_GATE);
  b->block = block;
  b->anchor = anchor;
}

/// The gradients into captured tensors, in the dq kernel (each (query,
/// key) pair of a head is visited once there): one tile.capture_grad for
/// the gate, and one per tensor.extract of a captured tensor in the
/// score_fn body (a table read at several indices gets each).
static void build_capture_grads(struct kernel *k, MlirValue col) {
  const struct kernel_shape *s = k->s;
  for (int i = 0; i < s->ngrads && !k->b.failed; ++i) {
    if (s->grad_target[i] == ATTN_GRAD_GATE) {
      build_capture_grad(k, col, i, (MlirOperation){NULL});
      continue;
    }
    MlirValue arg = mlirBlockGetArgument(s->func_body, s->grad_arg[i]);
    for (MlirOperation op = mlirBlockGetFirstOperation(s->score_fn);
         !mlirOperationIsNull(op) && !k->b.failed;
         op = mlirOperationGetNextInBlock(op))
      if (attn_op_is(op, "tensor.extract") &&
          mlirValueEqual(mlirOperationGetOperand(op, 0), arg))
        build_capture_grad(k, col, i, op);
  }
}

/// The query blocks that see key block [col, col + bn): [*lo, *hi).
/// Causal: rows from col on (key j is visible to row i iff j <= i); a
/// window's right edge: rows from col - right on; its left edge: rows up to
/// col + bn - 1 + left.
static void build_query_range(struct kernel *k, MlirValue col, MlirValue *lo,
                              MlirValue *hi) {
  const struct kernel_shape *s = k->s;
  const struct attn_fused_config *c = &s->cfg;
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.query_range");
  MlirValue nqb = attn_b_index(b, (s->q[2] + s->bm - 1) / s->bm);
  *lo = k->c0;
  *hi = nqb;
  if (c->causal) {
    *lo = attn_b_divui(b, col, k->bm);
  } else if (c->has_window && c->window_right >= 0) {
    MlirValue first =
        attn_b_subi(b, col, attn_b_index(b, c->window_right));
    MlirValue first0 = attn_b_binary(b, "arith.maxsi", first, k->c0);
    *lo = attn_b_divui(b, first0, k->bm);
  }
  if (c->has_window && c->window_left >= 0) {
    MlirValue end = attn_b_addi(b, attn_b_addi(b, col, k->bn),
                                attn_b_index(b, c->window_left));
    *hi = attn_b_minui(b, attn_b_ceildivui(b, end, k->bm), nqb);
  }
}

/// Loads the query block's dO, O and lse and computes D = rowsum(dO O).
static void build_grad_rows(struct kernel *k) {
  struct attn_builder *b = &k->b;
  attn_tk_build_load(k, ROLE_DOUT, T_DO, k->head, k->row);
  attn_tk_build_load(k, ROLE_OUT, T_O, k->head, k->row);
  MlirValue idx[] = {k->batch, k->head, k->row};
  // Padding rows (past N) read lse = +inf, a row that sees no key, so that
  // tile.exp_lse gives them P = 0: with 0 a score function's large scores
  // overflowed exp2 there, and P dO (dO 0 there) made dV and dK NaN.
  attn_tile_build_load_padded(b, k->arg[ROLE_LSE], k->lse, 3, idx, INFINITY);
  attn_tile_build_row_dot(b, k->tile[T_DO], k->tile[T_O], k->d);
}

/// One (query block, key block) step of the backward, with Q, K, V, dO, O,
/// lse and D in place: S, the modifiers and masks, P, then dV += P^T dO
/// (dkdv), dP, dS, the chain's derivative; dK += dS^T Q (dkdv) or dQ +=
/// dS K (dq).
static void build_grad_step(struct kernel *k, MlirValue col) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  bool dkdv = s->part == PART_DKDV;
  attn_tile_build_mma(b, k->tile[T_Q], k->tile[T_K], k->tile[T_S], true,
                      false);
  if (keeps_raw(s))
    attn_tile_build_mma(b, k->tile[T_Q], k->tile[T_K], k->tile[T_SIN], true,
                        false);
  attn_tk_build_score_mods(k, col);
  attn_tk_build_masks(k, col);
  attn_builder_role(b, "tile.backward");
  attn_tile_build_exp_lse(b, k->tile[T_S], k->lse, exp_scale(s));
  if (dkdv)
    attn_tile_build_mma_t(b, k->tile[T_S], k->tile[T_DO], k->tile[T_DV], true,
                          false, true);
  attn_tile_build_mma(b, k->tile[T_DO], k->tile[T_V], k->tile[T_DP], true,
                      false);
  attn_tile_build_ds(b, k->tile[T_S], k->tile[T_DP], k->d, ds_scale(s));
  if (!dkdv && s->ngrads)
    build_capture_grads(k, col);
  if (chain_nonlinear(s))
    build_chain_grad(k, col);
  attn_builder_role(b, "tile.backward");
  if (dkdv)
    attn_tile_build_mma_t(b, k->tile[T_DP], k->tile[T_Q], k->tile[T_ACC], true,
                          false, true);
  else
    attn_tile_build_mma(b, k->tile[T_DP], k->tile[T_K], k->tile[T_ACC], false,
                        true);
}

/// Rotates a gradient tile back (R^T) whose row 0 is sequence row pos.
static void build_rope_back(struct kernel *k, MlirValue tile, MlirValue pos,
                            bool keys) {
  const struct kernel_shape *s = k->s;
  const struct attn_rope_config *r = &s->cfg.rope;
  int role =
      ROLE_EXTRA0 + (keys ? ATTN_EXTRA_K_POSITIONS : ATTN_EXTRA_Q_POSITIONS);
  const char *layout = attn_rope_layout_name(r->layout);
  if (attn_tk_has_role(s, role))
    attn_tile_build_rope_positions_inverse(&k->b, tile, k->batch, pos,
                                           k->arg[role], r->theta,
                                           r->rotary_dim, layout);
  else
    attn_tile_build_rope_inverse(&k->b, tile, pos, r->theta, r->rotary_dim,
                                 layout,
                                 keys ? s->cfg.k_offset : s->cfg.q_offset);
}

/// The backward kernels' grid position, constants and tiles. dkdv: the
/// CTA's key block, batch and K/V head (k->head, k->row are set per query
/// head and block in the loops); dq: as the forward's.
void attn_tk_build_grad_prologue(struct kernel *k, MlirValue *col) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.prologue");
  MlirValue blk = attn_tile_build_program_id(b, 0);
  MlirValue bh = attn_tile_build_program_id(b, 1);
  k->pid[0] = blk;
  k->pid[1] = bh;
  k->c0 = attn_b_index(b, 0);
  k->c1 = attn_b_index(b, 1);
  k->bm = attn_b_index(b, s->bm);
  k->bn = attn_b_index(b, s->bn);
  if (s->part == PART_DKDV) {
    MlirValue kv_heads = attn_b_index(b, s->k[1]);
    k->batch = attn_b_divui(b, bh, kv_heads);
    k->kv_head = attn_b_remui(b, bh, kv_heads);
    *col = attn_b_muli(b, blk, k->bn);
  } else {
    MlirValue heads = attn_b_index(b, s->q[1]);
    MlirValue group = attn_b_index(b, s->q[1] / s->k[1]);
    k->batch = attn_b_divui(b, bh, heads);
    k->head = attn_b_remui(b, bh, heads);
    k->kv_head = attn_b_divui(b, k->head, group);
    k->row = attn_b_muli(b, blk, k->bm);
  }
  static const int tiles[] = {T_Q, T_K, T_V, T_S, T_ACC, T_DP, T_DO, T_O};
  for (size_t i = 0; i < sizeof tiles / sizeof *tiles; ++i)
    k->tile[tiles[i]] = attn_tile_build_alloc(b, k->tile_ty[tiles[i]]);
  if (keeps_raw(s))
    k->tile[T_SIN] = attn_tile_build_alloc(b, k->tile_ty[T_SIN]);
  if (s->part == PART_DKDV)
    k->tile[T_DV] = attn_tile_build_alloc(b, k->tile_ty[T_DV]);
  k->lse = attn_tile_build_alloc(b, k->row_ty);
  k->d = attn_tile_build_alloc(b, k->row_ty);
}

/// The dkdv kernel's body after its prologue.
void attn_tk_build_dkdv(struct kernel *k, MlirValue col) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  if (s->ngrads) {
    // The gradient buffers start at zero: cleared by the first CTA of
    // this kernel, which runs before the dq kernel accumulates into them.
    attn_builder_role(b, "tile.clear");
    MlirValue first =
        attn_b_andi(b, attn_b_cmpi(b, ATTN_B_EQ, k->pid[0], k->c0),
                    attn_b_cmpi(b, ATTN_B_EQ, k->pid[1], k->c0));
    struct attn_b_if once;
    attn_b_if_open(b, &once, first, 0, NULL, false);
    for (int i = 0; i < s->ngrads; ++i)
      attn_tile_build_clear(b, k->grad[i]);
    attn_b_if_close(b, &once, 0, NULL);
  }
  attn_builder_role(b, "tile.key_tile");
  attn_tk_build_kv_tiles(k, col);
  attn_tile_build_fill(b, k->tile[T_ACC], 0.0);
  attn_tile_build_fill(b, k->tile[T_DV], 0.0);
  MlirValue lo, hi;
  build_query_range(k, col, &lo, &hi);
  attn_builder_role(b, "tile.query_loop");
  struct attn_b_for heads, blocks;
  MlirValue group = attn_b_index(b, s->q[1] / s->k[1]);
  attn_b_for_open(b, &heads, k->c0, group, k->c1, 0, NULL);
  k->head = attn_b_addi(b, attn_b_muli(b, k->kv_head, group), heads.iv);
  attn_b_for_open(b, &blocks, lo, hi, k->c1, 0, NULL);
  k->row = attn_b_muli(b, blocks.iv, k->bm);
  attn_tk_build_load(k, ROLE_Q, T_Q, k->head, k->row);
  if (s->cfg.has_rope)
    attn_tk_build_rope(k, k->tile[T_Q], k->row, false);
  build_grad_rows(k);
  build_grad_step(k, col);
  attn_builder_role(b, "tile.query_loop");
  attn_b_for_close(b, &blocks, 0, NULL);
  attn_b_for_close(b, &heads, 0, NULL);
  attn_builder_role(b, "tile.epilogue");
  if (s->cfg.has_rope)
    build_rope_back(k, k->tile[T_ACC], col, true);
  MlirValue idx[] = {k->batch, k->kv_head, col};
  attn_tile_build_store(b, k->tile[T_ACC], k->arg[ROLE_DK], 3, idx);
  attn_tile_build_store(b, k->tile[T_DV], k->arg[ROLE_DV], 3, idx);
}

/// The dq kernel's body after its prologue.
void attn_tk_build_dq(struct kernel *k) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.query_tile");
  attn_tk_build_load(k, ROLE_Q, T_Q, k->head, k->row);
  if (s->cfg.has_rope)
    attn_tk_build_rope(k, k->tile[T_Q], k->row, false);
  build_grad_rows(k);
  attn_tile_build_fill(b, k->tile[T_ACC], 0.0);
  MlirValue lo, hi;
  attn_tk_build_key_range(k, &lo, &hi);
  attn_builder_role(b, "tile.key_loop");
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, lo, hi, k->c1, 0, NULL);
  MlirValue col = attn_b_muli(b, loop.iv, k->bn);
  attn_tk_build_kv_tiles(k, col);
  build_grad_step(k, col);
  attn_builder_role(b, "tile.key_loop");
  attn_b_for_close(b, &loop, 0, NULL);
  attn_builder_role(b, "tile.epilogue");
  if (s->cfg.has_rope)
    build_rope_back(k, k->tile[T_ACC], k->row, false);
  MlirValue idx[] = {k->batch, k->head, k->row};
  attn_tile_build_store(b, k->tile[T_ACC], k->arg[ROLE_DQ], 3, idx);
}
