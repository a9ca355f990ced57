//===- tile_dialect.c - C verifier and readers of the tile dialect --------===//
//
// Tiles are static memrefs: rank 2 for matrices, rank 1 for per-row vectors.
// This file checks that every tile op's operands agree in shape and that its
// attributes are in range, which IRDL cannot say.
//
//===----------------------------------------------------------------------===//
#include "dialects/tile/tile_dialect.h"
#include "dialects/attn/attn_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>

bool attn_tile_is_kernel(MlirOperation func) {
  return attn_op_is(func, "func.func") &&
         !mlirAttributeIsNull(mlirOperationGetAttributeByName(
             func, mlirStringRefCreateFromCString(ATTN_TILE_KERNEL_ATTR)));
}

bool attn_tile_get_launch(MlirOperation func, struct attn_tile_launch *out) {
  MlirAttribute grid = mlirOperationGetAttributeByName(
      func, mlirStringRefCreateFromCString(ATTN_TILE_GRID_ATTR));
  if (mlirAttributeIsNull(grid) || !mlirAttributeIsADenseI64Array(grid) ||
      mlirDenseArrayGetNumElements(grid) != 3)
    return attn_emit_errorf(func, "tile kernel needs '%s' = array<i64: x, y, "
                                  "z>",
                            ATTN_TILE_GRID_ATTR);
  for (int i = 0; i < 3; ++i) {
    out->grid[i] = mlirDenseI64ArrayGetElement(grid, i);
    if (out->grid[i] < 1 || out->grid[i] > 2147483647)
      return attn_emit_errorf(func, "grid dimension %d is %lld, must be in "
                                    "[1, 2^31)",
                              i, (long long)out->grid[i]);
  }
  if (!attn_attr_i64(func, ATTN_TILE_THREADS_ATTR, &out->threads) ||
      out->threads < 1 || out->threads > 1024)
    return attn_emit_errorf(func, "tile kernel needs '%s' in [1, 1024]",
                            ATTN_TILE_THREADS_ATTR);
  return true;
}

/// Reads operand i as a static memref of the given rank (or rank 4 source).
static bool tile_shape(MlirOperation op, int i, int rank, const char *what,
                       int64_t dims[8]) {
  MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
  char ty[128];
  if (attn_static_shape(t, dims) != rank)
    return attn_emit_errorf(op, "%s must be a static rank-%d memref, found %s",
                            what, rank, attn_type_str(t, ty, sizeof ty));
  return true;
}

static bool is_f32_tile(MlirOperation op, int i, const char *what) {
  MlirType e = mlirShapedTypeGetElementType(
      mlirValueGetType(mlirOperationGetOperand(op, i)));
  char ty[32];
  if (mlirTypeIsAF32(e))
    return true;
  return attn_emit_errorf(op, "%s must hold f32, found %s", what,
                          attn_type_str(e, ty, sizeof ty));
}

static bool verify_copy(MlirOperation op, int src, int tile) {
  int64_t s[8], t[8];
  const char *sn = src == 0 ? "source" : "dest";
  if (!tile_shape(op, src, 4, sn, s) || !tile_shape(op, tile, 2, "tile", t) ||
      !is_f32_tile(op, tile, "tile"))
    return false;
  MlirType e = mlirShapedTypeGetElementType(
      mlirValueGetType(mlirOperationGetOperand(op, src)));
  char ty[32];
  if (!mlirTypeIsAF32(e) && !mlirTypeIsAF16(e) && !mlirTypeIsABF16(e))
    return attn_emit_errorf(op, "%s element type must be f32, f16 or bf16, "
                                "found %s",
                            sn, attn_type_str(e, ty, sizeof ty));
  if (t[1] != s[3])
    return attn_emit_errorf(op, "tile has %lld columns but the tensor's head "
                                "dim is %lld",
                            (long long)t[1], (long long)s[3]);
  return true;
}

static bool verify_mma(MlirOperation op) {
  int64_t a[8], b[8], c[8];
  bool tb, acc;
  if (!tile_shape(op, 0, 2, "a", a) || !tile_shape(op, 1, 2, "b", b) ||
      !tile_shape(op, 2, 2, "c", c) || !is_f32_tile(op, 0, "a") ||
      !is_f32_tile(op, 1, "b") || !is_f32_tile(op, 2, "c"))
    return false;
  attn_attr_bool(op, "transpose_b", &tb);
  attn_attr_bool(op, "accumulate", &acc);
  int64_t bk = tb ? b[1] : b[0], bn = tb ? b[0] : b[1];
  if (a[1] != bk)
    return attn_emit_errorf(op, "reduction dims differ: a has %lld, b has "
                                "%lld",
                            (long long)a[1], (long long)bk);
  if (c[0] != a[0] || c[1] != bn)
    return attn_emit_errorf(op, "c must be %lldx%lld, found %lldx%lld",
                            (long long)a[0], (long long)bn, (long long)c[0],
                            (long long)c[1]);
  return true;
}

static bool verify_rows(MlirOperation op, int i, int64_t rows,
                        const char *what) {
  int64_t d[8];
  if (!tile_shape(op, i, 1, what, d) || !is_f32_tile(op, i, what))
    return false;
  if (d[0] != rows)
    return attn_emit_errorf(op, "%s has %lld rows, expected %lld", what,
                            (long long)d[0], (long long)rows);
  return true;
}

static bool verify_softmax_update(MlirOperation op) {
  int64_t s[8], acc[8];
  double scale;
  if (!tile_shape(op, 0, 2, "scores", s) || !is_f32_tile(op, 0, "scores") ||
      !verify_rows(op, 1, s[0], "row_max") ||
      !verify_rows(op, 2, s[0], "row_sum") ||
      !tile_shape(op, 3, 2, "acc", acc) || !is_f32_tile(op, 3, "acc"))
    return false;
  if (acc[0] != s[0])
    return attn_emit_errorf(op, "acc has %lld rows, scores have %lld",
                            (long long)acc[0], (long long)s[0]);
  attn_attr_f64(op, "scale", &scale);
  if (!isfinite(scale) || scale == 0.0)
    return attn_emit_errorf(op, "scale must be finite and non-zero, found %g",
                            scale);
  return true;
}

bool attn_tile_verify_op(MlirOperation op) {
  int64_t d[8];
  bool b;
  if (attn_op_is(op, ATTN_OP_TILE_PROGRAM_ID)) {
    int64_t dim;
    if (attn_attr_bool(op, "dim", &b))
      return attn_emit_errorf(op, "dim must be an integer, found a boolean");
    if (attn_attr_i64(op, "dim", &dim) && (dim < 0 || dim > 2))
      return attn_emit_errorf(op, "dim must be 0, 1 or 2, found %lld",
                              (long long)dim);
    return true;
  }
  if (attn_op_is(op, ATTN_OP_TILE_ALLOC)) {
    MlirType t = mlirValueGetType(mlirOperationGetResult(op, 0));
    int rank = attn_static_shape(t, d);
    char ty[128];
    if (rank != 1 && rank != 2)
      return attn_emit_errorf(op, "tile must be a static rank-1 or rank-2 "
                                  "memref, found %s",
                              attn_type_str(t, ty, sizeof ty));
    if (!mlirTypeIsAF32(mlirShapedTypeGetElementType(t)))
      return attn_emit_errorf(op, "tiles hold f32 in this version, found %s",
                              attn_type_str(t, ty, sizeof ty));
    return true;
  }
  if (attn_op_is(op, ATTN_OP_TILE_FILL)) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, 0));
    if (attn_static_shape(t, d) < 1)
      return attn_emit_errorf(op, "tile must be a static memref");
    return is_f32_tile(op, 0, "tile");
  }
  if (attn_op_is(op, ATTN_OP_TILE_LOAD))
    return verify_copy(op, 0, 1);
  if (attn_op_is(op, ATTN_OP_TILE_STORE))
    return verify_copy(op, 1, 0);
  if (attn_op_is(op, ATTN_OP_TILE_ROPE)) {
    struct attn_rope_config c;
    if (!tile_shape(op, 0, 2, "tile", d) || !is_f32_tile(op, 0, "tile"))
      return false;
    if (attn_attr_bool(op, "rotary_dim", &b))
      return attn_emit_errorf(op, "rope rotary_dim must be an integer, found a "
                                  "boolean");
    if (!attn_rope_get_config(op, &c))
      return attn_emit_errorf(op, "rope layout must be \"rotate_half\" or "
                                  "\"interleaved\"");
    return attn_rope_check(op, &c, d[1]);
  }
  if (attn_op_is(op, ATTN_OP_TILE_MMA))
    return verify_mma(op);
  if (attn_op_is(op, ATTN_OP_TILE_MASK)) {
    int64_t kv_len;
    if (!tile_shape(op, 0, 2, "scores", d) || !is_f32_tile(op, 0, "scores"))
      return false;
    if (attn_attr_bool(op, "kv_len", &b))
      return attn_emit_errorf(op, "kv_len must be an integer, found a boolean");
    if (attn_attr_i64(op, "kv_len", &kv_len) && kv_len < 1)
      return attn_emit_errorf(op, "kv_len must be positive, found %lld",
                              (long long)kv_len);
    return true;
  }
  if (attn_op_is(op, ATTN_OP_TILE_SOFTMAX_UPDATE))
    return verify_softmax_update(op);
  if (attn_op_is(op, ATTN_OP_TILE_NORMALIZE)) {
    if (!tile_shape(op, 0, 2, "acc", d) || !is_f32_tile(op, 0, "acc"))
      return false;
    return verify_rows(op, 1, d[0], "row_sum");
  }
  return true;
}
