//===- tile_dialect.c - C verifier, readers and builders of the tile dialect =//
//
// Tiles are static memrefs: rank 2 for matrices, rank 1 for per-row vectors.
// This file checks that every tile op's operands agree in shape and that its
// attributes are in range, which IRDL cannot say, and builds the ops with
// those attributes at an attn_builder's insertion point.
//
//===----------------------------------------------------------------------===//
#include "dialects/tile/tile_dialect.h"
#include "dialects/attn/attn_dialect.h"
#include "dialects/body.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Diagnostics.h"

#include <math.h>
#include <string.h>

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

bool attn_tile_get_matmul(MlirOperation func, struct attn_tile_matmul *out) {
  MlirAttribute d = attn_attr_get(func, ATTN_TILE_MATMUL_ATTR);
  if (mlirAttributeIsNull(d) || !mlirAttributeIsADictionary(d))
    return false;
  static const char *const keys[6] = {"m",       "n",       "k",
                                      "block_m", "block_n", "block_k"};
  int64_t *dst[6] = {&out->m,       &out->n,       &out->k,
                     &out->block_m, &out->block_n, &out->block_k};
  for (int i = 0; i < 6; ++i) {
    MlirAttribute v = mlirDictionaryAttrGetElementByName(
        d, mlirStringRefCreateFromCString(keys[i]));
    if (mlirAttributeIsNull(v) || !mlirAttributeIsAInteger(v) ||
        mlirAttributeIsABool(v))
      return false;
    *dst[i] = mlirIntegerAttrGetValueInt(v);
    if (*dst[i] < 1)
      return false;
  }
  MlirAttribute acc = mlirDictionaryAttrGetElementByName(
      d, mlirStringRefCreateFromCString("accumulate"));
  if (mlirAttributeIsNull(acc) || !mlirAttributeIsABool(acc))
    return false;
  out->accumulate = mlirBoolAttrGetValue(acc);
  return true;
}

bool attn_tile_matmul_is_fused(MlirOperation func) {
  MlirAttribute d = attn_attr_get(func, ATTN_TILE_MATMUL_ATTR);
  return !mlirAttributeIsNull(d) && mlirAttributeIsADictionary(d) &&
         !mlirAttributeIsNull(mlirDictionaryAttrGetElementByName(
             d, mlirStringRefCreateFromCString("comm")));
}

bool attn_tile_reject_fused(MlirOperation func, const char *pass) {
  return attn_emit_errorf(func,
                          "%s cannot lower a matmul fused with a collective: "
                          "only lower-tile-to-hopper does (sm_90a GPUs of one "
                          "NVLink domain, with attnrt's NCCL communicator)",
                          pass);
}

bool attn_tile_verify_matmul_kernel(MlirOperation func) {
  if (mlirAttributeIsNull(attn_attr_get(func, ATTN_TILE_MATMUL_ATTR)))
    return true;
  struct attn_tile_matmul mm;
  if (!attn_tile_get_matmul(func, &mm))
    return attn_emit_errorf(func, "tile.matmul must be {m, n, k, block_m, "
                                  "block_n, block_k: integers >= 1, "
                                  "accumulate: bool}");
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  int64_t want[3][2] = {{mm.m, mm.k}, {mm.k, mm.n}, {mm.m, mm.n}};
  // A fused collective (comm = {pattern, world_size, ...}): a holds one
  // rank's rows for all_gather_matmul, c one rank's rows for
  // matmul_reduce_scatter.
  MlirAttribute comm = mlirDictionaryAttrGetElementByName(
      attn_attr_get(func, ATTN_TILE_MATMUL_ATTR),
      mlirStringRefCreateFromCString("comm"));
  if (!mlirAttributeIsNull(comm)) {
    MlirAttribute pat = mlirAttributeIsADictionary(comm)
                            ? mlirDictionaryAttrGetElementByName(
                                  comm, mlirStringRefCreateFromCString("pattern"))
                            : (MlirAttribute){NULL};
    MlirAttribute w = mlirAttributeIsADictionary(comm)
                          ? mlirDictionaryAttrGetElementByName(
                                comm, mlirStringRefCreateFromCString("world_size"))
                          : (MlirAttribute){NULL};
    if (mlirAttributeIsNull(pat) || !mlirAttributeIsAString(pat) ||
        mlirAttributeIsNull(w) || !mlirAttributeIsAInteger(w) ||
        mlirIntegerAttrGetValueInt(w) < 1 ||
        mm.m % mlirIntegerAttrGetValueInt(w))
      return attn_emit_errorf(func, "tile.matmul's comm must be {pattern, "
                                    "world_size >= 1 dividing m, ...}");
    int64_t world = mlirIntegerAttrGetValueInt(w);
    if (attn_str_eq(mlirStringAttrGetValue(pat), "all_gather_matmul"))
      want[0][0] = mm.m / world;
    if (attn_str_eq(mlirStringAttrGetValue(pat), "matmul_reduce_scatter"))
      want[2][0] = mm.m / world;
  }
  bool ok = !mlirBlockIsNull(body) && mlirBlockGetNumArguments(body) == 3;
  MlirType elem = {NULL};
  for (int i = 0; ok && i < 3; ++i) {
    MlirType t = mlirValueGetType(mlirBlockGetArgument(body, i));
    int64_t d[8];
    ok = mlirTypeIsAMemRef(t) && attn_static_shape(t, d) == 2 &&
         d[0] == want[i][0] && d[1] == want[i][1] &&
         (i == 0 || mlirTypeEqual(mlirShapedTypeGetElementType(t), elem));
    elem = mlirShapedTypeGetElementType(t);
  }
  if (ok)
    return true;
  return attn_emit_errorf(func, "tile.matmul of %lldx%lldx%lld needs the "
                                "arguments a: %lldx%lld, b: %lldx%lld, c: "
                                "%lldx%lld (memrefs of one element type)",
                          (long long)mm.m, (long long)mm.n, (long long)mm.k,
                          (long long)want[0][0], (long long)want[0][1],
                          (long long)want[1][0], (long long)want[1][1],
                          (long long)want[2][0], (long long)want[2][1]);
}

/// The modifiers tile.score_mod applies (the gate is a tile.score_fn body).
#define TILE_NUM_MODS 3
static const char *const score_mod_names[TILE_NUM_MODS] = {"scale", "softcap",
                                                           "alibi"};

/// Reads the "mods" array into out->mods; -1 entries for unknown names.
static bool read_mod_names(MlirOperation op, struct attn_tile_score_mods *out) {
  MlirAttribute a = attn_attr_get(op, "mods");
  out->n = 0;
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAArray(a) ||
      mlirArrayAttrGetNumElements(a) > TILE_NUM_MODS)
    return false;
  for (intptr_t i = 0, n = mlirArrayAttrGetNumElements(a); i < n; ++i) {
    MlirAttribute e = mlirArrayAttrGetElement(a, i);
    int m = 0;
    if (mlirAttributeIsAString(e))
      while (m < TILE_NUM_MODS &&
             !attn_str_eq(mlirStringAttrGetValue(e), score_mod_names[m]))
        ++m;
    out->mods[out->n++] = m < TILE_NUM_MODS ? m : -1;
  }
  return true;
}

bool attn_tile_score_mod_get(MlirOperation op,
                             struct attn_tile_score_mods *out) {
  memset(out, 0, sizeof *out);
  if (!read_mod_names(op, out))
    return false;
  for (int i = 0; i < out->n; ++i) {
    bool ok = true;
    switch (out->mods[i]) {
    case ATTN_MOD_SCALE:
      ok = attn_attr_f64(op, "scale", &out->scale);
      break;
    case ATTN_MOD_SOFTCAP:
      ok = attn_attr_f64(op, "softcap", &out->softcap);
      break;
    case ATTN_MOD_ALIBI:
      ok = attn_attr_f64(op, "alibi", &out->alibi) &&
           attn_attr_i64(op, "heads", &out->heads);
      break;
    default:
      ok = false;
    }
    if (!ok)
      return false;
  }
  return true;
}

bool attn_tile_flag(MlirOperation op, const char *name) {
  bool v = false;
  return attn_attr_bool(op, name, &v) && v;
}

/// Checks that the optional attribute name of op, when present, is a
/// boolean.
static bool verify_flag(MlirOperation op, const char *name) {
  MlirAttribute a = attn_attr_get(op, name);
  if (mlirAttributeIsNull(a) || mlirAttributeIsABool(a))
    return true;
  return attn_emit_errorf(op, "%s must be a boolean", name);
}

bool attn_tile_mask_get_window(MlirOperation op, int64_t *left,
                               int64_t *right) {
  MlirAttribute w = attn_attr_get(op, "window");
  if (mlirAttributeIsNull(w) || !mlirAttributeIsADenseI64Array(w) ||
      mlirDenseArrayGetNumElements(w) != 2)
    return false;
  *left = mlirDenseI64ArrayGetElement(w, 0);
  *right = mlirDenseI64ArrayGetElement(w, 1);
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

static MlirType operand_elem(MlirOperation op, int i) {
  return mlirShapedTypeGetElementType(
      mlirValueGetType(mlirOperationGetOperand(op, i)));
}

/// Checks operand i is a tile of the compute type: f32, or f64 (the tiles
/// of f64 programs); every tile of a compute op holds the type of its
/// operand 0 (tile.load and tile.store have one tile).
static bool is_compute_tile(MlirOperation op, int i, const char *what) {
  MlirType e = operand_elem(op, i);
  char ty[32], t0[32];
  if (!mlirTypeIsAF32(e) && !mlirTypeIsAF64(e))
    return attn_emit_errorf(op, "%s must hold f32 or f64, found %s", what,
                            attn_type_str(e, ty, sizeof ty));
  if (i == 0 || attn_op_is(op, ATTN_OP_TILE_LOAD) ||
      attn_op_is(op, ATTN_OP_TILE_STORE) ||
      mlirTypeEqual(e, operand_elem(op, 0)))
    return true;
  return attn_emit_errorf(op, "%s holds %s but operand 0 holds %s; the tiles "
                              "of one op hold one type",
                          what, attn_type_str(e, ty, sizeof ty),
                          attn_type_str(operand_elem(op, 0), t0, sizeof t0));
}

/// tile.load (source 0, tile 1) and tile.store (tile 0, dest 1): a rank-4
/// tensor indexed by (batch, head, row) whose head dim is the tile's width,
/// a rank-3 tensor [B, H, N] indexed by (batch, head, row) with a rank-1
/// tile, or a matrix indexed by (row, col).
static bool verify_copy(MlirOperation op, int src, int tile) {
  int64_t s[8], t[8];
  const char *sn = src == 0 ? "source" : "dest";
  MlirType st = mlirValueGetType(mlirOperationGetOperand(op, src));
  int rank = attn_static_shape(st, s);
  char ty[128];
  if (rank != 4 && rank != 3 && rank != 2)
    return attn_emit_errorf(op, "%s must be a static rank-4, rank-3 or "
                                "rank-2 memref, found %s",
                            sn, attn_type_str(st, ty, sizeof ty));
  if (!tile_shape(op, tile, rank == 3 ? 1 : 2, "tile", t) ||
      !is_compute_tile(op, tile, "tile"))
    return false;
  MlirType e = mlirShapedTypeGetElementType(st);
  MlirType te = operand_elem(op, tile);
  if (!mlirTypeIsAF32(e) && !mlirTypeIsAF16(e) && !mlirTypeIsABF16(e) &&
      !mlirTypeIsAF64(e))
    return attn_emit_errorf(op, "%s element type must be f32, f16, bf16 or "
                                "f64, found %s",
                            sn, attn_type_str(e, ty, sizeof ty));
  // f64 tiles are f64 programs' (attn_compute_type): no rounding either way.
  if (mlirTypeIsAF64(e) != mlirTypeIsAF64(te))
    return attn_emit_errorf(op, "%s element type %s needs a tile of %s, found "
                                "a tile of %s",
                            sn, attn_type_str(e, ty, sizeof ty),
                            mlirTypeIsAF64(e) ? "f64" : "f32",
                            mlirTypeIsAF64(te) ? "f64" : "f32");
  intptr_t nidx = mlirOperationGetNumOperands(op) - 2;
  if ((rank == 4 || rank == 3) && nidx != 3)
    return attn_emit_errorf(op, "a rank-%d %s takes batch, head and row "
                                "indices, found %ld",
                            rank, sn, (long)nidx);
  if (rank == 2 && nidx != 2)
    return attn_emit_errorf(op, "a rank-2 %s takes row and column indices, "
                                "found %ld",
                            sn, (long)nidx);
  if (rank == 4 && t[1] != s[3])
    return attn_emit_errorf(op, "tile has %lld columns but the tensor's head "
                                "dim is %lld",
                            (long long)t[1], (long long)s[3]);
  return true;
}

static bool verify_mma(MlirOperation op) {
  int64_t a[8], b[8], c[8];
  bool tb, acc;
  if (!tile_shape(op, 0, 2, "a", a) || !tile_shape(op, 1, 2, "b", b) ||
      !tile_shape(op, 2, 2, "c", c) || !is_compute_tile(op, 0, "a") ||
      !is_compute_tile(op, 1, "b") || !is_compute_tile(op, 2, "c") ||
      !verify_flag(op, "transpose_a"))
    return false;
  attn_attr_bool(op, "transpose_b", &tb);
  attn_attr_bool(op, "accumulate", &acc);
  bool ta = attn_tile_flag(op, "transpose_a");
  int64_t am = ta ? a[1] : a[0], ak = ta ? a[0] : a[1];
  int64_t bk = tb ? b[1] : b[0], bn = tb ? b[0] : b[1];
  if (ak != bk)
    return attn_emit_errorf(op, "reduction dims differ: a has %lld, b has "
                                "%lld",
                            (long long)ak, (long long)bk);
  if (c[0] != am || c[1] != bn)
    return attn_emit_errorf(op, "c must be %lldx%lld, found %lldx%lld",
                            (long long)am, (long long)bn, (long long)c[0],
                            (long long)c[1]);
  return true;
}

static bool verify_rows(MlirOperation op, int i, int64_t rows,
                        const char *what) {
  int64_t d[8];
  if (!tile_shape(op, i, 1, what, d) || !is_compute_tile(op, i, what))
    return false;
  if (d[0] != rows)
    return attn_emit_errorf(op, "%s has %lld rows, expected %lld", what,
                            (long long)d[0], (long long)rows);
  return true;
}

static bool positive_attr(MlirOperation op, const char *name, double v) {
  if (v > 0.0 && isfinite(v))
    return true;
  return attn_emit_errorf(op, "%s must be positive and finite, found %g", name,
                          v);
}

static bool verify_softmax_update(MlirOperation op) {
  int64_t s[8], acc[8];
  double scale;
  if (!tile_shape(op, 0, 2, "scores", s) || !is_compute_tile(op, 0, "scores") ||
      !verify_rows(op, 1, s[0], "row_max") ||
      !verify_rows(op, 2, s[0], "row_sum") ||
      !tile_shape(op, 3, 2, "acc", acc) || !is_compute_tile(op, 3, "acc"))
    return false;
  if (acc[0] != s[0])
    return attn_emit_errorf(op, "acc has %lld rows, scores have %lld",
                            (long long)acc[0], (long long)s[0]);
  // Masked scores are -inf; a negative factor would turn them into +inf.
  attn_attr_f64(op, "scale", &scale);
  return positive_attr(op, "scale", scale);
}

/// Checks operand i is a static rank-2 memref of i32 (segment ids,
/// positions): [batch, seq].
static bool verify_i32_table(MlirOperation op, int i, const char *what,
                             int64_t dims[8]) {
  if (!tile_shape(op, i, 2, what, dims))
    return false;
  MlirType e = mlirShapedTypeGetElementType(
      mlirValueGetType(mlirOperationGetOperand(op, i)));
  char ty[32];
  if (mlirTypeIsAInteger(e) && mlirIntegerTypeGetWidth(e) == 32)
    return true;
  return attn_emit_errorf(op, "%s must hold i32, found %s", what,
                          attn_type_str(e, ty, sizeof ty));
}

static bool verify_rope(MlirOperation op, bool positions) {
  int64_t d[8], p[8];
  struct attn_rope_config c;
  bool b;
  if (!tile_shape(op, 0, 2, "tile", d) || !is_compute_tile(op, 0, "tile") ||
      !verify_flag(op, "inverse"))
    return false;
  if (attn_attr_bool(op, "rotary_dim", &b))
    return attn_emit_errorf(op, "rope rotary_dim must be an integer, found a "
                                "boolean");
  if (!mlirAttributeIsNull(attn_attr_get(op, "offset")) &&
      (positions || !attn_attr_i64(op, "offset", &c.offset)))
    return attn_emit_errorf(op, positions ? "rope offset cannot be combined "
                                            "with explicit positions"
                                          : "rope offset must be an integer");
  if (!attn_rope_get_config(op, &c))
    return attn_emit_errorf(op, "rope layout must be \"rotate_half\" or "
                                "\"interleaved\"");
  return attn_rope_check(op, &c, d[1]) &&
         (!positions || verify_i32_table(op, 3, "positions", p));
}

static bool verify_mask(MlirOperation op) {
  int64_t d[8], kv_len, l, r;
  bool b;
  if (!tile_shape(op, 0, 2, "scores", d) || !is_compute_tile(op, 0, "scores"))
    return false;
  if (attn_attr_bool(op, "kv_len", &b))
    return attn_emit_errorf(op, "kv_len must be an integer, found a boolean");
  if (attn_attr_i64(op, "kv_len", &kv_len) && kv_len < 1)
    return attn_emit_errorf(op, "kv_len must be positive, found %lld",
                            (long long)kv_len);
  if (mlirAttributeIsNull(attn_attr_get(op, "window")))
    return true;
  if (!attn_tile_mask_get_window(op, &l, &r))
    return attn_emit_errorf(op, "window must be array<i64: left, right>");
  if (l < -1 || r < -1)
    return attn_emit_errorf(op, "window bounds must be -1 (unbounded) or "
                                "non-negative, found [%lld, %lld]",
                            (long long)l, (long long)r);
  return true;
}

static bool verify_score_mod(MlirOperation op) {
  int64_t d[8];
  struct attn_tile_score_mods m;
  if (!tile_shape(op, 0, 2, "scores", d) || !is_compute_tile(op, 0, "scores"))
    return false;
  memset(&m, 0, sizeof m);
  if (!read_mod_names(op, &m) || m.n == 0)
    return attn_emit_errorf(op, "mods must be a non-empty array of at most 3 "
                                "modifier names");
  bool seen[TILE_NUM_MODS] = {false};
  for (int i = 0; i < m.n; ++i) {
    if (m.mods[i] < 0)
      return attn_emit_errorf(op, "mods entry %d must be one of \"scale\", "
                                  "\"softcap\", \"alibi\" (a gate is a "
                                  "tile.score_fn body)",
                              i);
    if (seen[m.mods[i]])
      return attn_emit_errorf(op, "mods names '%s' twice",
                              score_mod_names[m.mods[i]]);
    seen[m.mods[i]] = true;
  }
  static const char *const need[TILE_NUM_MODS][2] = {
      {"scale", NULL}, {"softcap", NULL}, {"alibi", "heads"}};
  for (int k = 0; k < TILE_NUM_MODS; ++k) {
    for (int j = 0; seen[k] && j < 2 && need[k][j]; ++j) {
      bool b;
      if (attn_attr_bool(op, need[k][j], &b) ||
          mlirAttributeIsNull(attn_attr_get(op, need[k][j])))
        return attn_emit_errorf(op, "modifier '%s' needs attribute '%s'",
                                score_mod_names[k], need[k][j]);
    }
  }
  if (!attn_tile_score_mod_get(op, &m))
    return attn_emit_errorf(op, "scale, softcap and alibi must be floats; "
                                "heads an integer");
  if ((seen[ATTN_MOD_SCALE] && !positive_attr(op, "scale", m.scale)) ||
      (seen[ATTN_MOD_SOFTCAP] && !positive_attr(op, "softcap", m.softcap)) ||
      (seen[ATTN_MOD_ALIBI] && !positive_attr(op, "alibi", m.alibi)))
    return false;
  if (seen[ATTN_MOD_ALIBI] && m.heads < 1)
    return attn_emit_errorf(op, "heads must be positive, found %lld",
                            (long long)m.heads);
  return true;
}

/// Checks operands i and j are f32 rank-2 tiles of one shape.
static bool same_tiles(MlirOperation op, int i, int j, const char *wi,
                       const char *wj) {
  int64_t a[8], c[8];
  if (!tile_shape(op, i, 2, wi, a) || !is_compute_tile(op, i, wi) ||
      !tile_shape(op, j, 2, wj, c) || !is_compute_tile(op, j, wj))
    return false;
  if (a[0] == c[0] && a[1] == c[1])
    return true;
  return attn_emit_errorf(op, "%s is %lldx%lld but %s is %lldx%lld", wj,
                          (long long)c[0], (long long)c[1], wi,
                          (long long)a[0], (long long)a[1]);
}

/// tile.row_lse (row_max, row_sum, lse): three row vectors of one length.
static bool verify_row_lse(MlirOperation op) {
  int64_t d[8];
  if (!tile_shape(op, 0, 1, "row_max", d) || !is_compute_tile(op, 0, "row_max"))
    return false;
  return verify_rows(op, 1, d[0], "row_sum") &&
         verify_rows(op, 2, d[0], "lse");
}

/// tile.row_dot (a, b, d) and tile.ds (p, dp, d): two tiles of one shape
/// and a row vector of their rows; tile.ds and tile.exp_lse's scale.
static bool verify_row_pair(MlirOperation op, const char *wa, const char *wb,
                            bool scaled) {
  int64_t d[8];
  if (!same_tiles(op, 0, 1, wa, wb) || !tile_shape(op, 0, 2, wa, d) ||
      !verify_rows(op, 2, d[0], "d"))
    return false;
  double scale = 0;
  if (!scaled)
    return true;
  attn_attr_f64(op, "scale", &scale);
  return positive_attr(op, "scale", scale);
}

/// tile.exp_lse (scores, lse) {scale}.
static bool verify_exp_lse(MlirOperation op) {
  int64_t d[8];
  double scale = 0;
  if (!tile_shape(op, 0, 2, "scores", d) || !is_compute_tile(op, 0, "scores") ||
      !verify_rows(op, 1, d[0], "lse"))
    return false;
  // Masked scores are -inf; a negative factor would turn them into +inf.
  attn_attr_f64(op, "scale", &scale);
  return positive_attr(op, "scale", scale);
}

/// A body op's seq_q and seq_k: positive integers.
static bool verify_seqs(MlirOperation op) {
  static const char *const seqs[2] = {"seq_q", "seq_k"};
  for (int i = 0; i < 2; ++i) {
    int64_t seq;
    bool b;
    if (attn_attr_bool(op, seqs[i], &b) || !attn_attr_i64(op, seqs[i], &seq))
      return attn_emit_errorf(op, "%s must be an integer", seqs[i]);
    if (seq < 1)
      return attn_emit_errorf(op, "%s must be positive, found %lld", seqs[i],
                              (long long)seq);
  }
  return true;
}

/// tile.score_fn / tile.mask_fn (scores, batch, head, row, col) {seq_q,
/// seq_k} with a body dialects/body.h accepts at the tile level (captures
/// are memrefs read by memref.load).
static bool verify_fn(MlirOperation op, bool score) {
  int64_t d[8];
  if (!tile_shape(op, 0, 2, "scores", d) || !is_compute_tile(op, 0, "scores"))
    return false;
  if (attn_op_is(op, ATTN_OP_TILE_SCORE_FN_GRAD) &&
      !same_tiles(op, 0, 1, "ds", "scores_in"))
    return false;
  if (!verify_seqs(op))
    return false;
  const char *what = !score ? "tile.mask_fn"
                     : attn_op_is(op, ATTN_OP_TILE_SCORE_FN_GRAD)
                         ? "tile.score_fn_grad"
                         : "tile.score_fn";
  return attn_body_verify(op, mlirOperationGetRegion(op, 0),
                          score ? ATTN_BODY_SCORE : ATTN_BODY_MASK,
                          ATTN_BODY_MEMREF, operand_elem(op, 0), what);
}

/// A gradient buffer operand i (what): a static memref of rank >= 1 whose
/// elements are f32 or f64 (the compute type of its program).
static bool is_grad_buffer(MlirOperation op, int i, const char *what) {
  MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
  int64_t d[8];
  char ty[128];
  if (!mlirTypeIsAMemRef(t) || attn_static_shape(t, d) < 1 ||
      !(mlirTypeIsAF32(mlirShapedTypeGetElementType(t)) ||
        mlirTypeIsAF64(mlirShapedTypeGetElementType(t))))
    return attn_emit_errorf(op, "%s must be a static memref of f32 or f64 "
                                "of rank >= 1, found %s",
                            what, attn_type_str(t, ty, sizeof ty));
  return true;
}

/// tile.capture_grad (ds, scores_in, grad, batch, head, row, col) {seq_q,
/// seq_k, scale}: two tiles of one shape, a gradient buffer of their
/// element type, and a body yielding the derivative and one index per
/// dimension of grad.
static bool verify_capture_grad(MlirOperation op) {
  int64_t d[8];
  if (!same_tiles(op, 0, 1, "ds", "scores_in") ||
      !is_grad_buffer(op, 2, "grad"))
    return false;
  MlirType g = mlirValueGetType(mlirOperationGetOperand(op, 2));
  if (!mlirTypeEqual(mlirShapedTypeGetElementType(g), operand_elem(op, 0)))
    return attn_emit_errorf(op, "grad must hold the tiles' element type");
  if (!verify_seqs(op))
    return false;
  double scale = 0;
  if (!attn_attr_f64(op, "scale", &scale) || !isfinite(scale))
    return attn_emit_errorf(op, "scale must be a finite float");
  if (!attn_body_verify(op, mlirOperationGetRegion(op, 0),
                        ATTN_BODY_CAPTURE_GRAD, ATTN_BODY_MEMREF,
                        operand_elem(op, 0), "tile.capture_grad"))
    return false;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  MlirOperation y = mlirBlockGetTerminator(body);
  intptr_t rank = attn_static_shape(g, d);
  if (mlirOperationGetNumOperands(y) != 1 + rank)
    return attn_emit_errorf(y, "the body of tile.capture_grad must yield "
                               "the derivative and %ld indices (grad's "
                               "rank), found %ld values",
                            (long)rank, (long)mlirOperationGetNumOperands(y));
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
    MlirType e = mlirShapedTypeGetElementType(t);
    if (!mlirTypeIsAF32(e) && !mlirTypeIsAF64(e))
      return attn_emit_errorf(op, "tiles hold f32 (f64 in f64 programs) in "
                                  "this version, found %s",
                              attn_type_str(t, ty, sizeof ty));
    return true;
  }
  if (attn_op_is(op, ATTN_OP_TILE_FILL)) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, 0));
    if (attn_static_shape(t, d) < 1)
      return attn_emit_errorf(op, "tile must be a static memref");
    return is_compute_tile(op, 0, "tile");
  }
  if (attn_op_is(op, ATTN_OP_TILE_LOAD)) {
    MlirAttribute pad = attn_attr_get(op, "pad");
    if (!mlirAttributeIsNull(pad) && !mlirAttributeIsAFloat(pad))
      return attn_emit_errorf(op, "pad must be a float (what elements past "
                                  "the source's edges read as)");
    return verify_copy(op, 0, 1);
  }
  if (attn_op_is(op, ATTN_OP_TILE_STORE))
    return verify_copy(op, 1, 0);
  if (attn_op_is(op, ATTN_OP_TILE_ROPE))
    return verify_rope(op, false);
  if (attn_op_is(op, ATTN_OP_TILE_ROPE_POSITIONS))
    return verify_rope(op, true);
  if (attn_op_is(op, ATTN_OP_TILE_MMA))
    return verify_mma(op);
  if (attn_op_is(op, ATTN_OP_TILE_MASK))
    return verify_mask(op);
  if (attn_op_is(op, ATTN_OP_TILE_SCORE_MOD))
    return verify_score_mod(op);
  if (attn_op_is(op, ATTN_OP_TILE_SCORE_FN))
    return verify_fn(op, true);
  if (attn_op_is(op, ATTN_OP_TILE_MASK_FN))
    return verify_fn(op, false);
  if (attn_op_is(op, ATTN_OP_TILE_SOFTMAX_UPDATE))
    return verify_softmax_update(op);
  if (attn_op_is(op, ATTN_OP_TILE_SCORE_FN_GRAD))
    return verify_fn(op, true);
  if (attn_op_is(op, ATTN_OP_TILE_ROW_LSE))
    return verify_row_lse(op);
  if (attn_op_is(op, ATTN_OP_TILE_CLEAR))
    return is_grad_buffer(op, 0, "dst");
  if (attn_op_is(op, ATTN_OP_TILE_CAPTURE_GRAD))
    return verify_capture_grad(op);
  if (attn_op_is(op, ATTN_OP_TILE_ROW_DOT))
    return verify_row_pair(op, "a", "b", false);
  if (attn_op_is(op, ATTN_OP_TILE_DS))
    return verify_row_pair(op, "p", "dp", true);
  if (attn_op_is(op, ATTN_OP_TILE_EXP_LSE))
    return verify_exp_lse(op);
  if (attn_op_is(op, ATTN_OP_TILE_NORMALIZE)) {
    if (!tile_shape(op, 0, 2, "acc", d) || !is_compute_tile(op, 0, "acc"))
      return false;
    return verify_rows(op, 1, d[0], "row_sum");
  }
  return true;
}
