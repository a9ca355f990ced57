//===- tile_lowering.c - Tile compute ops to loops, for CPU and GPU -------===//
//
// Each tile op becomes a loop nest over its elements in scf/arith/memref/math.
// The loop body is written once; the target only decides who runs it: on
// the CPU one thread walks every element, on the GPU the CTA's threads take
// elements tid, tid + ntid, ... and meet at a barrier afterwards. The loops
// are generated as a small function from text, parsed by MLIR, and inlined
// in place of the tile op.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/tile/tile_dialect.h"

#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void attn_gen_f32(struct attn_tile_gen *g, const char *name, float v) {
  union {
    float f;
    unsigned u;
  } bits = {v};
  attn_strbuf_printf(g->b, "  %%%s = arith.constant 0x%08X : f32\n", name,
                     bits.u);
}

void attn_gen_index(struct attn_tile_gen *g, const char *name, long long v) {
  attn_strbuf_printf(g->b, "  %%%s = arith.constant %lld : index\n", name, v);
}

const char *attn_gen_type(struct attn_tile_gen *g, int i, char *buf,
                          size_t len) {
  struct attn_strbuf t = {0};
  attn_strbuf_type(&t, mlirValueGetType(mlirOperationGetOperand(g->op, i)));
  snprintf(buf, len, "%s", t.buf ? t.buf : "?");
  attn_strbuf_free(&t);
  return buf;
}

/// The element type of a global tensor operand ("f32", "f16", "bf16").
static const char *elem(struct attn_tile_gen *g, int i) {
  MlirType e = mlirShapedTypeGetElementType(
      mlirValueGetType(mlirOperationGetOperand(g->op, i)));
  return mlirTypeIsAF16(e) ? "f16" : mlirTypeIsABF16(e) ? "bf16" : "f32";
}

void attn_gen_open_loop(struct attn_tile_gen *g, const char *iv,
                        long long total) {
  if (g->target == ATTN_TILE_GPU)
    attn_strbuf_printf(g->b, "  %%tid = gpu.thread_id x\n"
                             "  %%nt = gpu.block_dim x\n");
  else
    attn_strbuf_printf(g->b, "  %%tid = arith.constant 0 : index\n"
                             "  %%nt = arith.constant 1 : index\n");
  attn_gen_index(g, "c0", 0);
  attn_gen_index(g, "c1", 1);
  attn_gen_index(g, "total", total);
  attn_strbuf_printf(g->b, "  scf.for %%%s = %%tid to %%total step %%nt {\n",
                     iv);
}

void attn_gen_close_loop(struct attn_tile_gen *g) {
  attn_strbuf_printf(g->b, "  }\n");
  if (g->target == ATTN_TILE_GPU)
    attn_strbuf_printf(g->b, "  gpu.barrier\n");
}

void attn_gen_split_index(struct attn_tile_gen *g, long long cols) {
  attn_gen_index(g, "cols", cols);
  attn_strbuf_printf(g->b, "  %%i = arith.divui %%e, %%cols : index\n"
                           "  %%j = arith.remui %%e, %%cols : index\n");
}

static void gen_fill(struct attn_tile_gen *g, int rank) {
  char t[160];
  double v = 0;
  attn_attr_f64(g->op, "value", &v);
  long long total = g->dims[0][0] * (rank == 2 ? g->dims[0][1] : 1);
  attn_gen_f32(g, "value", (float)v);
  attn_gen_open_loop(g, "e", total);
  if (rank == 2) {
    attn_gen_split_index(g, g->dims[0][1]);
    attn_strbuf_printf(g->b, "  memref.store %%value, %%a0[%%i, %%j] : %s\n",
                       attn_gen_type(g, 0, t, sizeof t));
  } else {
    attn_strbuf_printf(g->b, "  memref.store %%value, %%a0[%%e] : %s\n",
                       attn_gen_type(g, 0, t, sizeof t));
  }
  attn_gen_close_loop(g);
}

/// tile.load (src=0, tile=1) and tile.store (tile=0, dst=1). A rank-4
/// tensor is indexed (batch, head, row) and only its rows are bounded; a
/// matrix is indexed (row, col) and bounded both ways.
static void gen_copy(struct attn_tile_gen *g, bool load) {
  char tt[160], gt[160];
  int gi = load ? 0 : 1, ti = load ? 1 : 0;
  const int64_t *tile = g->dims[ti], *glob = g->dims[gi];
  bool matrix = mlirShapedTypeGetRank(mlirValueGetType(
                    mlirOperationGetOperand(g->op, gi))) == 2;
  const char *e = elem(g, gi);
  bool cvt = strcmp(e, "f32") != 0;
  attn_gen_type(g, ti, tt, sizeof tt);
  attn_gen_type(g, gi, gt, sizeof gt);
  attn_gen_index(g, "seq", glob[matrix ? 0 : 2]);
  if (matrix)
    attn_gen_index(g, "width", glob[1]);
  attn_gen_f32(g, "zero", 0.0f);
  attn_gen_open_loop(g, "e", tile[0] * tile[1]);
  attn_gen_split_index(g, tile[1]);
  if (matrix)
    attn_strbuf_printf(g->b,
                       "  %%g = arith.addi %%a2, %%i : index\n"
                       "  %%gc = arith.addi %%a3, %%j : index\n"
                       "  %%inr = arith.cmpi ult, %%g, %%seq : index\n"
                       "  %%inc = arith.cmpi ult, %%gc, %%width : index\n"
                       "  %%in = arith.andi %%inr, %%inc : i1\n");
  else
    attn_strbuf_printf(g->b,
                       "  %%g = arith.addi %%a4, %%i : index\n"
                       "  %%in = arith.cmpi ult, %%g, %%seq : index\n");
  const char *at = matrix ? "%g, %gc" : "%a2, %a3, %g, %j";
  if (load) {
    attn_strbuf_printf(g->b,
                       "  %%x = scf.if %%in -> (f32) {\n"
                       "  %%y = memref.load %%a0[%s] : %s\n",
                       at, gt);
    if (cvt)
      attn_strbuf_printf(g->b, "  %%y32 = arith.extf %%y : %s to f32\n", e);
    attn_strbuf_printf(g->b,
                       "  scf.yield %%%s : f32\n"
                       "  } else {\n"
                       "  scf.yield %%zero : f32\n"
                       "  }\n"
                       "  memref.store %%x, %%a1[%%i, %%j] : %s\n",
                       cvt ? "y32" : "y", tt);
  } else {
    attn_strbuf_printf(g->b,
                       "  scf.if %%in {\n"
                       "  %%x = memref.load %%a0[%%i, %%j] : %s\n",
                       tt);
    if (cvt)
      attn_strbuf_printf(g->b, "  %%xn = arith.truncf %%x : f32 to %s\n", e);
    attn_strbuf_printf(g->b,
                       "  memref.store %%%s, %%a1[%s] : %s\n"
                       "  }\n",
                       cvt ? "xn" : "x", at, gt);
  }
  attn_gen_close_loop(g);
}

/// tile.rope (tile, pos) {offset} and tile.rope_positions (tile, batch, row,
/// positions): row r of the tile is rotated by the angles of its position.
static void gen_rope(struct attn_tile_gen *g, bool positions) {
  char t[160], pt[160];
  struct attn_rope_config r;
  attn_rope_get_config(g->op, &r);
  long long half = r.rotary_dim / 2;
  attn_gen_type(g, 0, t, sizeof t);
  attn_gen_index(g, "half", half);
  attn_gen_index(g, "c2", 2);
  // inv_freq(i) = theta^(-2i/rotary_dim) = exp2(i * coef)
  attn_gen_f32(g, "coef", (float)(-2.0 * log2(r.theta) / (double)r.rotary_dim));
  if (positions)
    attn_gen_index(g, "last", g->dims[3][1] - 1);
  attn_gen_open_loop(g, "e", g->dims[0][0] * half);
  attn_strbuf_printf(g->b, "  %%r = arith.divui %%e, %%half : index\n"
                           "  %%f = arith.remui %%e, %%half : index\n");
  if (positions) {
    // Rows past the sequence are padding; any position will do.
    attn_strbuf_printf(g->b,
                       "  %%p0 = arith.addi %%a2, %%r : index\n"
                       "  %%p = arith.minui %%p0, %%last : index\n"
                       "  %%p32 = memref.load %%a3[%%a1, %%p] : %s\n"
                       "  %%pf = arith.sitofp %%p32 : i32 to f32\n",
                       attn_gen_type(g, 3, pt, sizeof pt));
  } else {
    attn_strbuf_printf(g->b, "  %%p = arith.addi %%a1, %%r : index\n"
                             "  %%p64 = arith.index_cast %%p : index to i64\n");
    if (r.offset)
      attn_strbuf_printf(g->b,
                         "  %%off = arith.constant %lld : i64\n"
                         "  %%po = arith.addi %%p64, %%off : i64\n"
                         "  %%pf = arith.sitofp %%po : i64 to f32\n",
                         (long long)r.offset);
    else
      attn_strbuf_printf(g->b, "  %%pf = arith.sitofp %%p64 : i64 to f32\n");
  }
  attn_strbuf_printf(
      g->b,
      "  %%f64 = arith.index_cast %%f : index to i64\n"
      "  %%ff = arith.uitofp %%f64 : i64 to f32\n"
      "  %%ex = arith.mulf %%ff, %%coef : f32\n"
      "  %%inv = math.exp2 %%ex : f32\n"
      "  %%ang = arith.mulf %%pf, %%inv : f32\n"
      "  %%cs = math.cos %%ang : f32\n"
      "  %%sn = math.sin %%ang : f32\n");
  if (r.layout == ATTN_ROPE_ROTATE_HALF)
    attn_strbuf_printf(g->b, "  %%i1 = arith.addi %%f, %%c0 : index\n"
                             "  %%i2 = arith.addi %%f, %%half : index\n");
  else
    attn_strbuf_printf(g->b, "  %%i1 = arith.muli %%f, %%c2 : index\n"
                             "  %%i2 = arith.addi %%i1, %%c1 : index\n");
  attn_strbuf_printf(g->b,
                     "  %%x1 = memref.load %%a0[%%r, %%i1] : %s\n"
                     "  %%x2 = memref.load %%a0[%%r, %%i2] : %s\n"
                     "  %%t1 = arith.mulf %%x1, %%cs : f32\n"
                     "  %%t2 = arith.mulf %%x2, %%sn : f32\n"
                     "  %%y1 = arith.subf %%t1, %%t2 : f32\n"
                     "  %%t3 = arith.mulf %%x2, %%cs : f32\n"
                     "  %%t4 = arith.mulf %%x1, %%sn : f32\n"
                     "  %%y2 = arith.addf %%t3, %%t4 : f32\n"
                     "  memref.store %%y1, %%a0[%%r, %%i1] : %s\n"
                     "  memref.store %%y2, %%a0[%%r, %%i2] : %s\n",
                     t, t, t, t);
  attn_gen_close_loop(g);
}

static void gen_mma(struct attn_tile_gen *g) {
  char ta[160], tb[160], tc[160];
  bool trans = false, acc = false;
  attn_attr_bool(g->op, "transpose_b", &trans);
  attn_attr_bool(g->op, "accumulate", &acc);
  attn_gen_type(g, 0, ta, sizeof ta);
  attn_gen_type(g, 1, tb, sizeof tb);
  attn_gen_type(g, 2, tc, sizeof tc);
  attn_gen_index(g, "kdim", g->dims[0][1]);
  attn_gen_f32(g, "zero", 0.0f);
  attn_gen_open_loop(g, "e", g->dims[2][0] * g->dims[2][1]);
  attn_gen_split_index(g, g->dims[2][1]);
  if (acc)
    attn_strbuf_printf(g->b, "  %%init = memref.load %%a2[%%i, %%j] : %s\n",
                       tc);
  attn_strbuf_printf(
      g->b,
      "  %%dot = scf.for %%k = %%c0 to %%kdim step %%c1 iter_args(%%s = "
      "%%%s) -> (f32) {\n"
      "  %%x = memref.load %%a0[%%i, %%k] : %s\n"
      "  %%y = memref.load %%a1[%s] : %s\n"
      "  %%s2 = math.fma %%x, %%y, %%s : f32\n"
      "  scf.yield %%s2 : f32\n"
      "  }\n"
      "  memref.store %%dot, %%a2[%%i, %%j] : %s\n",
      acc ? "init" : "zero", ta, trans ? "%j, %k" : "%k, %j", tb, tc);
  attn_gen_close_loop(g);
}

static void gen_softmax_update(struct attn_tile_gen *g) {
  char ts[160], tm[160], tl[160], ta[160];
  double scale = 1.0;
  attn_attr_f64(g->op, "scale", &scale);
  attn_gen_type(g, 0, ts, sizeof ts);
  attn_gen_type(g, 1, tm, sizeof tm);
  attn_gen_type(g, 2, tl, sizeof tl);
  attn_gen_type(g, 3, ta, sizeof ta);
  // Scores are kept in the log2 domain: exp(x * scale) = exp2(x * k).
  attn_gen_f32(g, "k", (float)(scale * 1.4426950408889634));
  attn_gen_f32(g, "ninf", -INFINITY);
  attn_gen_f32(g, "zero", 0.0f);
  attn_gen_index(g, "ncols", g->dims[0][1]);
  attn_gen_index(g, "dv", g->dims[3][1]);
  attn_gen_open_loop(g, "r", g->dims[0][0]);
  attn_strbuf_printf(
      g->b,
      "  %%mold = memref.load %%a1[%%r] : %s\n"
      "  %%mnew = scf.for %%j = %%c0 to %%ncols step %%c1 iter_args(%%mx = "
      "%%mold) -> (f32) {\n"
      "  %%x = memref.load %%a0[%%r, %%j] : %s\n"
      "  %%xs = arith.mulf %%x, %%k : f32\n"
      "  %%mx2 = arith.maximumf %%mx, %%xs : f32\n"
      "  scf.yield %%mx2 : f32\n"
      "  }\n"
      "  %%dead = arith.cmpf oeq, %%mnew, %%ninf : f32\n"
      "  %%shift = arith.select %%dead, %%zero, %%mnew : f32\n"
      "  %%dm = arith.subf %%mold, %%shift : f32\n"
      "  %%alpha = math.exp2 %%dm : f32\n"
      "  %%sum = scf.for %%j2 = %%c0 to %%ncols step %%c1 iter_args(%%acc = "
      "%%zero) -> (f32) {\n"
      "  %%x2 = memref.load %%a0[%%r, %%j2] : %s\n"
      "  %%xs2 = arith.mulf %%x2, %%k : f32\n"
      "  %%d = arith.subf %%xs2, %%shift : f32\n"
      "  %%p = math.exp2 %%d : f32\n"
      "  memref.store %%p, %%a0[%%r, %%j2] : %s\n"
      "  %%acc2 = arith.addf %%acc, %%p : f32\n"
      "  scf.yield %%acc2 : f32\n"
      "  }\n"
      "  %%lold = memref.load %%a2[%%r] : %s\n"
      "  %%lsc = arith.mulf %%lold, %%alpha : f32\n"
      "  %%lnew = arith.addf %%lsc, %%sum : f32\n"
      "  memref.store %%lnew, %%a2[%%r] : %s\n"
      "  memref.store %%mnew, %%a1[%%r] : %s\n"
      "  scf.for %%d2 = %%c0 to %%dv step %%c1 {\n"
      "  %%o = memref.load %%a3[%%r, %%d2] : %s\n"
      "  %%o2 = arith.mulf %%o, %%alpha : f32\n"
      "  memref.store %%o2, %%a3[%%r, %%d2] : %s\n"
      "  }\n",
      tm, ts, ts, ts, tl, tl, tm, ta, ta);
  attn_gen_close_loop(g);
}

static void gen_normalize(struct attn_tile_gen *g) {
  char ta[160], tl[160];
  attn_gen_type(g, 0, ta, sizeof ta);
  attn_gen_type(g, 1, tl, sizeof tl);
  attn_gen_f32(g, "zero", 0.0f);
  attn_gen_open_loop(g, "e", g->dims[0][0] * g->dims[0][1]);
  attn_gen_split_index(g, g->dims[0][1]);
  attn_strbuf_printf(g->b,
                     "  %%lv = memref.load %%a1[%%i] : %s\n"
                     "  %%x = memref.load %%a0[%%i, %%j] : %s\n"
                     "  %%empty = arith.cmpf oeq, %%lv, %%zero : f32\n"
                     "  %%q = arith.divf %%x, %%lv : f32\n"
                     "  %%y = arith.select %%empty, %%zero, %%q : f32\n"
                     "  memref.store %%y, %%a0[%%i, %%j] : %s\n",
                     tl, ta, ta);
  attn_gen_close_loop(g);
}

/// Writes the loops for g->op into g->b; false for ops this file does not
/// lower.
static bool gen_body(struct attn_tile_gen *g) {
  MlirOperation op = g->op;
  if (attn_op_is(op, ATTN_OP_TILE_FILL)) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, 0));
    gen_fill(g, (int)mlirShapedTypeGetRank(t));
  } else if (attn_op_is(op, ATTN_OP_TILE_LOAD))
    gen_copy(g, true);
  else if (attn_op_is(op, ATTN_OP_TILE_STORE))
    gen_copy(g, false);
  else if (attn_op_is(op, ATTN_OP_TILE_ROPE))
    gen_rope(g, false);
  else if (attn_op_is(op, ATTN_OP_TILE_ROPE_POSITIONS))
    gen_rope(g, true);
  else if (attn_op_is(op, ATTN_OP_TILE_MMA))
    gen_mma(g);
  else if (attn_op_is(op, ATTN_OP_TILE_SOFTMAX_UPDATE))
    gen_softmax_update(g);
  else if (attn_op_is(op, ATTN_OP_TILE_NORMALIZE))
    gen_normalize(g);
  else
    return attn_gen_score_ops(g);
  return true;
}

/// Replaces op by the loops that compute it.
static bool lower_op(MlirOperation op, enum attn_tile_target target) {
  struct attn_strbuf b = {0};
  struct attn_tile_gen g = {&b, target, op, {{0}}};
  intptr_t n = mlirOperationGetNumOperands(op);
  attn_strbuf_printf(&b, "func.func private @tile_lowering(");
  for (intptr_t i = 0; i < n; ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    if (i < 6 && mlirTypeIsAMemRef(t))
      attn_static_shape(t, g.dims[i]);
    attn_strbuf_printf(&b, "%s%%a%ld: ", i ? ", " : "", (long)i);
    attn_strbuf_type(&b, t);
  }
  attn_strbuf_printf(&b, ") {\n");
  if (!gen_body(&g)) {
    attn_strbuf_free(&b);
    return true; // not a compute op
  }
  attn_strbuf_printf(&b, "  return\n}\n");
  if (b.failed) {
    attn_strbuf_free(&b);
    return attn_emit_errorf(op, "tile lowering: out of memory");
  }
  MlirOperation helper =
      attn_parse_op(mlirOperationGetContext(op), b.buf, "tile-lowering");
  attn_strbuf_free(&b);
  if (mlirOperationIsNull(helper))
    return attn_emit_errorf(op, "tile lowering produced IR that MLIR cannot "
                                "parse (a bug in attn)");
  // Inline: the helper's arguments become op's operands, its ops move
  // before op, and its return is dropped with the helper.
  attn_set_locations(helper, mlirOperationGetLocation(op));
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(helper, 0));
  for (intptr_t i = 0; i < n; ++i)
    mlirValueReplaceAllUsesOfWith(mlirBlockGetArgument(body, i),
                                  mlirOperationGetOperand(op, i));
  MlirOperation term = mlirBlockGetTerminator(body);
  for (MlirOperation it = mlirBlockGetFirstOperation(body);
       !mlirOperationEqual(it, term);) {
    MlirOperation next = mlirOperationGetNextInBlock(it);
    mlirOperationMoveBefore(it, op);
    it = next;
  }
  mlirOperationDestroy(helper);
  mlirOperationDestroy(op);
  return true;
}

static MlirWalkResult collect_tile_ops(MlirOperation op, void *user) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (n.length > 5 && !strncmp(n.data, "tile.", 5))
    attn_op_list_push(user, op);
  return MlirWalkResultAdvance;
}

bool attn_tile_lower_compute_ops(MlirOperation root,
                                 enum attn_tile_target target) {
  struct attn_op_list ops = {0};
  mlirOperationWalk(root, collect_tile_ops, &ops, MlirWalkPostOrder);
  bool ok = !ops.failed;
  for (size_t i = 0; ok && i < ops.n; ++i) {
    if (attn_op_is(ops.ops[i], ATTN_OP_TILE_PROGRAM_ID) ||
        attn_op_is(ops.ops[i], ATTN_OP_TILE_ALLOC)) {
      ok = attn_emit_errorf(ops.ops[i], "internal: lower this op before the "
                                        "tile compute ops");
      break;
    }
    ok = lower_op(ops.ops[i], target);
  }
  free(ops.ops);
  return ok;
}

void attn_tile_replace_program_ids(MlirOperation root, const MlirValue ids[3]) {
  struct attn_op_list ops = {0};
  attn_op_list_collect(&ops, root, ATTN_OP_TILE_PROGRAM_ID);
  for (size_t i = 0; i < ops.n; ++i) {
    int64_t dim = 0;
    attn_attr_i64(ops.ops[i], "dim", &dim);
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(ops.ops[i], 0),
                                  ids[dim]);
    mlirOperationDestroy(ops.ops[i]);
  }
  free(ops.ops);
}

void attn_tile_collect_allocs(MlirOperation kernel, struct attn_op_list *out) {
  attn_op_list_collect(out, kernel, ATTN_OP_TILE_ALLOC);
}
