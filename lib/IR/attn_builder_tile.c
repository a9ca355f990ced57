//===- attn_builder_tile.c - Builders of the tile dialect's ops -----------===//
//
// IRDL gives the tile ops no generated builders; these make one op each at
// the insertion point and location of an attn_builder, with the attributes
// the tile dialect's C verifier reads. They live beside the builder, not in
// dialects/tile: the dialects sit below lib/ and never call into it.
//
//===----------------------------------------------------------------------===//
#include "lib/IR/attn_builder.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/tile/tile_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

/// Makes tile op name with no results.
static void build_void(struct attn_builder *b, const char *name, intptr_t nopd,
                       const MlirValue *opd, intptr_t nattr,
                       const MlirNamedAttribute *attrs) {
  attn_b_op(b, name, 0, NULL, nopd, opd, nattr, attrs, 0);
}

/// Makes tile op name with one result of type res and no operands.
static MlirValue build_value(struct attn_builder *b, const char *name,
                             MlirType res, intptr_t nattr,
                             const MlirNamedAttribute *attrs) {
  return attn_b_op1(b, name, res, 0, NULL, nattr, attrs);
}

MlirValue attn_tile_build_program_id(struct attn_builder *b, int64_t dim) {
  MlirNamedAttribute a = attn_b_named(b, "dim", attn_b_attr_i64(b, dim));
  return build_value(b, ATTN_OP_TILE_PROGRAM_ID, b->t.index, 1, &a);
}

MlirValue attn_tile_build_alloc(struct attn_builder *b, MlirType tile) {
  return build_value(b, ATTN_OP_TILE_ALLOC, tile, 0, NULL);
}

/// The element type of tile (f32 when it is missing: the op then fails).
static MlirType tile_elem(struct attn_builder *b, MlirValue tile) {
  return mlirValueIsNull(tile)
             ? b->t.f32
             : mlirShapedTypeGetElementType(mlirValueGetType(tile));
}

void attn_tile_build_fill(struct attn_builder *b, MlirValue tile,
                          double value) {
  MlirNamedAttribute a = attn_b_named(
      b, "value", mlirFloatAttrDoubleGet(b->ctx, tile_elem(b, tile), value));
  build_void(b, ATTN_OP_TILE_FILL, 1, &tile, 1, &a);
}

/// tile.load / tile.store: two memrefs, then the indices (and nattrs
/// attributes: tile.load's pad).
static void build_copy(struct attn_builder *b, const char *name, MlirValue x,
                       MlirValue y, intptr_t n, const MlirValue *idx,
                       intptr_t nattrs, const MlirNamedAttribute *attrs) {
  MlirValue opd[2 + 4];
  if (n > 4) { // tensors are rank 4 at most
    attn_builder_fail(b,
                      "a tile copy with more than 4 indices (a bug in attn)");
    return;
  }
  opd[0] = x;
  opd[1] = y;
  for (intptr_t i = 0; i < n; ++i)
    opd[2 + i] = idx[i];
  build_void(b, name, 2 + n, opd, nattrs, attrs);
}

void attn_tile_build_load(struct attn_builder *b, MlirValue source,
                          MlirValue tile, intptr_t n, const MlirValue *idx) {
  build_copy(b, ATTN_OP_TILE_LOAD, source, tile, n, idx, 0, NULL);
}

void attn_tile_build_load_padded(struct attn_builder *b, MlirValue source,
                                 MlirValue tile, intptr_t n,
                                 const MlirValue *idx, double pad) {
  MlirNamedAttribute a = attn_b_named(b, "pad", attn_b_attr_f64(b, pad));
  build_copy(b, ATTN_OP_TILE_LOAD, source, tile, n, idx, 1, &a);
}

void attn_tile_build_store(struct attn_builder *b, MlirValue tile,
                           MlirValue dest, intptr_t n, const MlirValue *idx) {
  build_copy(b, ATTN_OP_TILE_STORE, tile, dest, n, idx, 0, NULL);
}

/// Fills a[0..3) with a rotation's theta, rotary_dim and layout.
static void rope_attrs(struct attn_builder *b, MlirNamedAttribute a[3],
                       double theta, int64_t rotary_dim, const char *layout) {
  a[0] = attn_b_named(b, "theta", attn_b_attr_f64(b, theta));
  a[1] = attn_b_named(b, "rotary_dim", attn_b_attr_i64(b, rotary_dim));
  a[2] = attn_b_named(b, "layout", attn_b_attr_str(b, layout));
}

void attn_tile_build_rope(struct attn_builder *b, MlirValue tile, MlirValue pos,
                          double theta, int64_t rotary_dim, const char *layout,
                          int64_t offset) {
  MlirNamedAttribute a[4];
  rope_attrs(b, a, theta, rotary_dim, layout);
  if (offset)
    a[3] = attn_b_named(b, "offset", attn_b_attr_i64(b, offset));
  MlirValue opd[] = {tile, pos};
  build_void(b, ATTN_OP_TILE_ROPE, 2, opd, offset ? 4 : 3, a);
}

void attn_tile_build_rope_positions(struct attn_builder *b, MlirValue tile,
                                    MlirValue batch, MlirValue row,
                                    MlirValue positions, double theta,
                                    int64_t rotary_dim, const char *layout) {
  MlirNamedAttribute a[3];
  rope_attrs(b, a, theta, rotary_dim, layout);
  MlirValue opd[] = {tile, batch, row, positions};
  build_void(b, ATTN_OP_TILE_ROPE_POSITIONS, 4, opd, 3, a);
}

void attn_tile_build_mma(struct attn_builder *b, MlirValue a, MlirValue bt,
                         MlirValue c, bool transpose_b, bool accumulate) {
  MlirNamedAttribute at[] = {
      attn_b_named(b, "transpose_b", attn_b_attr_bool(b, transpose_b)),
      attn_b_named(b, "accumulate", attn_b_attr_bool(b, accumulate))};
  MlirValue opd[] = {a, bt, c};
  build_void(b, ATTN_OP_TILE_MMA, 3, opd, 2, at);
}

void attn_tile_build_mask(struct attn_builder *b, MlirValue scores,
                          MlirValue row, MlirValue col, bool causal,
                          int64_t kv_len, const int64_t *window) {
  MlirNamedAttribute a[3] = {
      attn_b_named(b, "causal", attn_b_attr_bool(b, causal)),
      attn_b_named(b, "kv_len", attn_b_attr_i64(b, kv_len))};
  if (window)
    a[2] = attn_b_named(b, "window", mlirDenseI64ArrayGet(b->ctx, 2, window));
  MlirValue opd[] = {scores, row, col};
  build_void(b, ATTN_OP_TILE_MASK, 3, opd, window ? 3 : 2, a);
}

void attn_tile_build_score_mod(struct attn_builder *b, MlirValue scores,
                               MlirValue batch, MlirValue head, MlirValue row,
                               MlirValue col,
                               const struct attn_tile_score_mods *m) {
  MlirAttribute names[3];
  MlirNamedAttribute a[1 + 4];
  int na = 0;
  if (m->n < 1 || m->n > 3) {
    attn_builder_fail(b,
                      "a tile.score_mod of no or too many modifiers (a bug in "
                      "attn)");
    return;
  }
  for (int i = 0; i < m->n; ++i) {
    switch (m->mods[i]) {
    case ATTN_MOD_SCALE:
      a[na++] = attn_b_named(b, "scale", attn_b_attr_f64(b, m->scale));
      break;
    case ATTN_MOD_SOFTCAP:
      a[na++] = attn_b_named(b, "softcap", attn_b_attr_f64(b, m->softcap));
      break;
    case ATTN_MOD_ALIBI:
      a[na++] = attn_b_named(b, "alibi", attn_b_attr_f64(b, m->alibi));
      a[na++] = attn_b_named(b, "heads", attn_b_attr_i64(b, m->heads));
      break;
    default:
      attn_builder_fail(b, "a tile.score_mod of an unknown modifier (a bug in "
                           "attn)");
      return;
    }
    names[i] = attn_b_attr_str(
        b, attn_score_mod_name((enum attn_score_mod)m->mods[i]));
  }
  a[na++] = attn_b_named(b, "mods", mlirArrayAttrGet(b->ctx, m->n, names));
  MlirValue opd[] = {scores, batch, head, row, col};
  build_void(b, ATTN_OP_TILE_SCORE_MOD, 5, opd, na, a);
}

void attn_tile_build_softmax_update(struct attn_builder *b, MlirValue scores,
                                    MlirValue row_max, MlirValue row_sum,
                                    MlirValue acc, double scale) {
  MlirNamedAttribute a = attn_b_named(b, "scale", attn_b_attr_f64(b, scale));
  MlirValue opd[] = {scores, row_max, row_sum, acc};
  build_void(b, ATTN_OP_TILE_SOFTMAX_UPDATE, 4, opd, 1, &a);
}

void attn_tile_build_normalize(struct attn_builder *b, MlirValue acc,
                               MlirValue row_sum) {
  MlirValue opd[] = {acc, row_sum};
  build_void(b, ATTN_OP_TILE_NORMALIZE, 2, opd, 0, NULL);
}

/// tile.score_fn / tile.mask_fn: the op with its body block of arguments
/// ([f32 score,] index b, h, q, kv), left empty for the caller to fill
/// (an f64 score where the scores are an f64 tile).
static MlirBlock build_fn(struct attn_builder *b, const char *name, bool score,
                          intptr_t nopd, const MlirValue *opd, int64_t seq_q,
                          int64_t seq_k) {
  // The score is of the score tile's type (operand 0: f32, or f64).
  MlirType ft = tile_elem(b, opd[0]);
  MlirNamedAttribute a[2] = {
      attn_b_named(b, "seq_q", attn_b_attr_i64(b, seq_q)),
      attn_b_named(b, "seq_k", attn_b_attr_i64(b, seq_k)),
  };
  MlirOperation op = attn_b_op(b, name, 0, NULL, nopd, opd, 2, a, 1);
  if (mlirOperationIsNull(op))
    return (MlirBlock){NULL};
  MlirType tys[5] = {ft, b->t.index, b->t.index, b->t.index, b->t.index};
  MlirLocation locs[5] = {b->loc, b->loc, b->loc, b->loc, b->loc};
  int skip = score ? 0 : 1;
  MlirBlock body = mlirBlockCreate(5 - skip, tys + skip, locs);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(op, 0), body);
  return body;
}

MlirBlock attn_tile_build_score_fn(struct attn_builder *b, MlirValue scores,
                                   MlirValue batch, MlirValue head,
                                   MlirValue row, MlirValue col, int64_t seq_q,
                                   int64_t seq_k) {
  MlirValue opd[] = {scores, batch, head, row, col};
  return build_fn(b, ATTN_OP_TILE_SCORE_FN, true, 5, opd, seq_q, seq_k);
}

MlirBlock attn_tile_build_mask_fn(struct attn_builder *b, MlirValue scores,
                                  MlirValue batch, MlirValue head,
                                  MlirValue row, MlirValue col, int64_t seq_q,
                                  int64_t seq_k) {
  MlirValue opd[] = {scores, batch, head, row, col};
  return build_fn(b, ATTN_OP_TILE_MASK_FN, false, 5, opd, seq_q, seq_k);
}

//===-- The backward's ops ------------------------------------------------===//

MlirBlock attn_tile_build_score_fn_grad(struct attn_builder *b, MlirValue ds,
                                        MlirValue scores_in, MlirValue batch,
                                        MlirValue head, MlirValue row,
                                        MlirValue col, int64_t seq_q,
                                        int64_t seq_k) {
  MlirValue opd[] = {ds, scores_in, batch, head, row, col};
  return build_fn(b, ATTN_OP_TILE_SCORE_FN_GRAD, true, 6, opd, seq_q, seq_k);
}

void attn_tile_build_clear(struct attn_builder *b, MlirValue dst) {
  build_void(b, ATTN_OP_TILE_CLEAR, 1, &dst, 0, NULL);
}

MlirBlock attn_tile_build_capture_grad(struct attn_builder *b, MlirValue ds,
                                       MlirValue scores_in, MlirValue grad,
                                       MlirValue batch, MlirValue head,
                                       MlirValue row, MlirValue col,
                                       int64_t seq_q, int64_t seq_k,
                                       double scale) {
  MlirValue opd[] = {ds, scores_in, grad, batch, head, row, col};
  MlirBlock body =
      build_fn(b, ATTN_OP_TILE_CAPTURE_GRAD, true, 7, opd, seq_q, seq_k);
  if (!mlirBlockIsNull(body))
    mlirOperationSetAttributeByName(
        mlirBlockGetParentOperation(body),
        mlirStringRefCreateFromCString("scale"), attn_b_attr_f64(b, scale));
  return body;
}

void attn_tile_build_row_lse(struct attn_builder *b, MlirValue row_max,
                             MlirValue row_sum, MlirValue lse) {
  MlirValue opd[] = {row_max, row_sum, lse};
  build_void(b, ATTN_OP_TILE_ROW_LSE, 3, opd, 0, NULL);
}

void attn_tile_build_row_dot(struct attn_builder *b, MlirValue x, MlirValue y,
                             MlirValue d) {
  MlirValue opd[] = {x, y, d};
  build_void(b, ATTN_OP_TILE_ROW_DOT, 3, opd, 0, NULL);
}

void attn_tile_build_exp_lse(struct attn_builder *b, MlirValue scores,
                             MlirValue lse, double scale) {
  MlirNamedAttribute a = attn_b_named(b, "scale", attn_b_attr_f64(b, scale));
  MlirValue opd[] = {scores, lse};
  build_void(b, ATTN_OP_TILE_EXP_LSE, 2, opd, 1, &a);
}

void attn_tile_build_ds(struct attn_builder *b, MlirValue p, MlirValue dp,
                        MlirValue d, double scale) {
  MlirNamedAttribute a = attn_b_named(b, "scale", attn_b_attr_f64(b, scale));
  MlirValue opd[] = {p, dp, d};
  build_void(b, ATTN_OP_TILE_DS, 3, opd, 1, &a);
}

void attn_tile_build_mma_t(struct attn_builder *b, MlirValue a, MlirValue bt,
                           MlirValue c, bool transpose_a, bool transpose_b,
                           bool accumulate) {
  MlirNamedAttribute at[] = {
      attn_b_named(b, "transpose_b", attn_b_attr_bool(b, transpose_b)),
      attn_b_named(b, "accumulate", attn_b_attr_bool(b, accumulate)),
      attn_b_named(b, "transpose_a", attn_b_attr_bool(b, transpose_a))};
  MlirValue opd[] = {a, bt, c};
  build_void(b, ATTN_OP_TILE_MMA, 3, opd, transpose_a ? 3 : 2, at);
}

void attn_tile_build_rope_inverse(struct attn_builder *b, MlirValue tile,
                                  MlirValue pos, double theta,
                                  int64_t rotary_dim, const char *layout,
                                  int64_t offset) {
  MlirNamedAttribute a[5];
  rope_attrs(b, a, theta, rotary_dim, layout);
  a[3] = attn_b_named(b, "inverse", attn_b_attr_bool(b, true));
  if (offset)
    a[4] = attn_b_named(b, "offset", attn_b_attr_i64(b, offset));
  MlirValue opd[] = {tile, pos};
  build_void(b, ATTN_OP_TILE_ROPE, 2, opd, offset ? 5 : 4, a);
}

void attn_tile_build_rope_positions_inverse(struct attn_builder *b,
                                            MlirValue tile, MlirValue batch,
                                            MlirValue row, MlirValue positions,
                                            double theta, int64_t rotary_dim,
                                            const char *layout) {
  MlirNamedAttribute a[4];
  rope_attrs(b, a, theta, rotary_dim, layout);
  a[3] = attn_b_named(b, "inverse", attn_b_attr_bool(b, true));
  MlirValue opd[] = {tile, batch, row, positions};
  build_void(b, ATTN_OP_TILE_ROPE_POSITIONS, 4, opd, 4, a);
}
