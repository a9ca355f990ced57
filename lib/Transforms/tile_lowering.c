//===- tile_lowering.c - Tile compute ops to loops, for CPU and GPU -------===//
//
// Each tile op becomes a loop nest over its elements in scf/arith/memref/math.
// The loop body is written once; the target only decides who runs it: on
// the CPU one thread walks every element, on the GPU the CTA's threads take
// elements tid, tid + ntid, ... and meet at a barrier afterwards. The loops
// are built in place of the tile op through lib/IR/attn_builder.h, located
// at it and named "cpu.loop" or "gpu.threads", with tile_gen.c's loop
// vocabulary; the scores' ops are in tile_lowering_scores.c, the
// backward's in tile_lowering_grad.c, and this file dispatches to them.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/tile/tile_dialect.h"

#include "lib/IR/attn_builder.h"

#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/// The element type of a global tensor operand, when it is 16-bit (loads
/// widen it to f32, stores narrow to it); null for f32 and f64 (whose
/// tiles are f64: no conversion).
static MlirType narrow_elem(struct attn_tile_gen *g, int i) {
  MlirType e = mlirShapedTypeGetElementType(
      mlirValueGetType(mlirOperationGetOperand(g->op, i)));
  return mlirTypeIsAF16(e) || mlirTypeIsABF16(e) ? e : (MlirType){NULL};
}

static void gen_fill(struct attn_tile_gen *g, int rank) {
  struct attn_builder *b = g->b;
  double v = 0;
  attn_attr_f64(g->op, "value", &v);
  long long total = g->dims[0][0] * (rank == 2 ? g->dims[0][1] : 1);
  MlirValue value = attn_gen_float(g, v);
  struct attn_b_for loop;
  MlirValue e = attn_gen_open_loop(g, &loop, total);
  if (rank == 2) {
    MlirValue ij[2];
    attn_gen_split_index(g, e, g->dims[0][1], &ij[0], &ij[1]);
    attn_b_store(b, value, attn_gen_arg(g, 0), 2, ij);
  } else {
    attn_b_store(b, value, attn_gen_arg(g, 0), 1, &e);
  }
  attn_gen_close_loop(g, &loop);
}

/// tile.load (src=0, tile=1) and tile.store (tile=0, dst=1). A rank-4
/// tensor is indexed (batch, head, row) and only its rows are bounded; a
/// matrix is indexed (row, col) and bounded both ways.
static void gen_copy_rows(struct attn_tile_gen *g, bool load);

/// What a tile.load's elements past the source's edges read as: its pad
/// attribute, else zero (tile.store has none: 0 is unused there).
static double load_pad(struct attn_tile_gen *g) {
  double pad = 0.0;
  attn_attr_f64(g->op, "pad", &pad);
  return pad;
}

static void gen_copy(struct attn_tile_gen *g, bool load) {
  struct attn_builder *b = g->b;
  int gi = load ? 0 : 1, ti = load ? 1 : 0;
  if (mlirShapedTypeGetRank(mlirValueGetType(
          mlirOperationGetOperand(g->op, gi))) == 3) {
    gen_copy_rows(g, load);
    return;
  }
  const int64_t *tile = g->dims[ti], *glob = g->dims[gi];
  bool matrix = mlirShapedTypeGetRank(mlirValueGetType(
                    mlirOperationGetOperand(g->op, gi))) == 2;
  MlirType narrow = narrow_elem(g, gi);
  MlirValue seq = attn_gen_index(g, glob[matrix ? 0 : 2]);
  MlirValue width = {NULL};
  if (matrix)
    width = attn_gen_index(g, glob[1]);
  MlirValue zero = attn_gen_float(g, load_pad(g));
  struct attn_b_for loop;
  MlirValue e = attn_gen_open_loop(g, &loop, tile[0] * tile[1]);
  MlirValue ij[2];
  attn_gen_split_index(g, e, tile[1], &ij[0], &ij[1]);
  MlirValue at[4], in;
  intptr_t nat;
  if (matrix) {
    MlirValue row = attn_b_addi(b, attn_gen_arg(g, 2), ij[0]);
    MlirValue col = attn_b_addi(b, attn_gen_arg(g, 3), ij[1]);
    MlirValue inr = attn_b_cmpi(b, ATTN_B_ULT, row, seq);
    MlirValue inc = attn_b_cmpi(b, ATTN_B_ULT, col, width);
    in = attn_b_andi(b, inr, inc);
    at[0] = row, at[1] = col, nat = 2;
  } else {
    MlirValue row = attn_b_addi(b, attn_gen_arg(g, 4), ij[0]);
    in = attn_b_cmpi(b, ATTN_B_ULT, row, seq);
    at[0] = attn_gen_arg(g, 2), at[1] = attn_gen_arg(g, 3), at[2] = row,
    at[3] = ij[1], nat = 4;
  }
  struct attn_b_if when;
  if (load) {
    attn_b_if_open(b, &when, in, 1, &g->ct, true);
    MlirValue y = attn_b_load(b, attn_gen_arg(g, 0), nat, at);
    if (!mlirTypeIsNull(narrow))
      y = attn_b_cast(b, "arith.extf", y, g->ct);
    attn_b_if_else(b, &when, 1, &y);
    attn_b_if_close(b, &when, 1, &zero);
    attn_b_store(b, when.results[0], attn_gen_arg(g, 1), 2, ij);
  } else {
    attn_b_if_open(b, &when, in, 0, NULL, false);
    MlirValue x = attn_b_load(b, attn_gen_arg(g, 0), 2, ij);
    if (!mlirTypeIsNull(narrow))
      x = attn_b_cast(b, "arith.truncf", x, narrow);
    attn_b_store(b, x, attn_gen_arg(g, 1), nat, at);
    attn_b_if_close(b, &when, 0, NULL);
  }
  attn_gen_close_loop(g, &loop);
}

/// tile.load / tile.store of a [B, H, N] tensor with a rank-1 tile,
/// indexed (batch, head, row): rows past N read as zero / are dropped.
static void gen_copy_rows(struct attn_tile_gen *g, bool load) {
  struct attn_builder *b = g->b;
  int gi = load ? 0 : 1, ti = load ? 1 : 0;
  MlirType narrow = narrow_elem(g, gi);
  MlirValue seq = attn_gen_index(g, g->dims[gi][2]);
  MlirValue zero = attn_gen_float(g, load ? load_pad(g) : 0.0);
  struct attn_b_for loop;
  MlirValue i = attn_gen_open_loop(g, &loop, g->dims[ti][0]);
  MlirValue row = attn_b_addi(b, attn_gen_arg(g, 4), i);
  MlirValue in = attn_b_cmpi(b, ATTN_B_ULT, row, seq);
  MlirValue at[3] = {attn_gen_arg(g, 2), attn_gen_arg(g, 3), row};
  struct attn_b_if when;
  if (load) {
    attn_b_if_open(b, &when, in, 1, &g->ct, true);
    MlirValue y = attn_b_load(b, attn_gen_arg(g, 0), 3, at);
    if (!mlirTypeIsNull(narrow))
      y = attn_b_cast(b, "arith.extf", y, g->ct);
    attn_b_if_else(b, &when, 1, &y);
    attn_b_if_close(b, &when, 1, &zero);
    attn_b_store(b, when.results[0], attn_gen_arg(g, 1), 1, &i);
  } else {
    attn_b_if_open(b, &when, in, 0, NULL, false);
    MlirValue x = attn_b_load(b, attn_gen_arg(g, 0), 1, &i);
    if (!mlirTypeIsNull(narrow))
      x = attn_b_cast(b, "arith.truncf", x, narrow);
    attn_b_store(b, x, attn_gen_arg(g, 1), 3, at);
    attn_b_if_close(b, &when, 0, NULL);
  }
  attn_gen_close_loop(g, &loop);
}

/// tile.rope (tile, pos) {offset} and tile.rope_positions (tile, batch, row,
/// positions): row r of the tile is rotated by the angles of its position
/// (by minus them when inverse).
static void gen_rope(struct attn_tile_gen *g, bool positions) {
  struct attn_builder *b = g->b;
  bool inverse = attn_tile_flag(g->op, "inverse");
  struct attn_rope_config r;
  attn_rope_get_config(g->op, &r);
  long long half = r.rotary_dim / 2;
  MlirValue vhalf = attn_gen_index(g, half);
  MlirValue c2 = attn_gen_index(g, 2);
  // inv_freq(i) = theta^(-2i/rotary_dim) = exp2(i * coef)
  MlirValue coef =
      attn_gen_float(g, -2.0 * log2(r.theta) / (double)r.rotary_dim);
  MlirValue last = {NULL};
  if (positions)
    last = attn_gen_index(g, g->dims[3][1] - 1);
  struct attn_b_for loop;
  MlirValue e = attn_gen_open_loop(g, &loop, g->dims[0][0] * half);
  MlirValue row = attn_b_divui(b, e, vhalf);
  MlirValue f = attn_b_remui(b, e, vhalf);
  MlirValue pf;
  if (positions) {
    // Rows past the sequence are padding; any position will do.
    MlirValue p0 = attn_b_addi(b, attn_gen_arg(g, 2), row);
    MlirValue at[2] = {attn_gen_arg(g, 1), attn_b_minui(b, p0, last)};
    MlirValue p32 = attn_b_load(b, attn_gen_arg(g, 3), 2, at);
    pf = attn_b_cast(b, "arith.sitofp", p32, g->ct);
  } else {
    MlirValue p = attn_b_addi(b, attn_gen_arg(g, 1), row);
    MlirValue p64 = attn_b_cast(b, "arith.index_cast", p, b->t.i64);
    if (r.offset) {
      MlirValue off = attn_b_i64(b, (int64_t)r.offset);
      p64 = attn_b_addi(b, p64, off);
    }
    pf = attn_b_cast(b, "arith.sitofp", p64, g->ct);
  }
  MlirValue f64 = attn_b_cast(b, "arith.index_cast", f, b->t.i64);
  MlirValue ff = attn_b_cast(b, "arith.uitofp", f64, g->ct);
  MlirValue ex = attn_b_mulf(b, ff, coef);
  MlirValue inv = attn_b_unary(b, "math.exp2", ex);
  MlirValue ang = attn_b_mulf(b, pf, inv);
  MlirValue cs = attn_b_unary(b, "math.cos", ang);
  MlirValue sn = attn_b_unary(b, "math.sin", ang);
  if (inverse) // R^T: sin(-a) = -sin(a)
    sn = attn_b_unary(b, "arith.negf", sn);
  MlirValue i1, i2;
  if (r.layout == ATTN_ROPE_ROTATE_HALF) {
    i1 = attn_b_addi(b, f, g->c0);
    i2 = attn_b_addi(b, f, vhalf);
  } else {
    i1 = attn_b_muli(b, f, c2);
    i2 = attn_b_addi(b, i1, g->c1);
  }
  MlirValue at1[2] = {row, i1}, at2[2] = {row, i2};
  MlirValue x1 = attn_b_load(b, attn_gen_arg(g, 0), 2, at1);
  MlirValue x2 = attn_b_load(b, attn_gen_arg(g, 0), 2, at2);
  MlirValue t1 = attn_b_mulf(b, x1, cs);
  MlirValue t2 = attn_b_mulf(b, x2, sn);
  MlirValue y1 = attn_b_subf(b, t1, t2);
  MlirValue t3 = attn_b_mulf(b, x2, cs);
  MlirValue t4 = attn_b_mulf(b, x1, sn);
  MlirValue y2 = attn_b_addf(b, t3, t4);
  attn_b_store(b, y1, attn_gen_arg(g, 0), 2, at1);
  attn_b_store(b, y2, attn_gen_arg(g, 0), 2, at2);
  attn_gen_close_loop(g, &loop);
}

/// tile.mma (a, b, c) {transpose_a, transpose_b, accumulate}: one dot
/// product of the reduction dim per element of c.
static void gen_mma(struct attn_tile_gen *g) {
  struct attn_builder *b = g->b;
  bool trans = false, acc = false;
  bool ta = attn_tile_flag(g->op, "transpose_a");
  attn_attr_bool(g->op, "transpose_b", &trans);
  attn_attr_bool(g->op, "accumulate", &acc);
  MlirValue kdim = attn_gen_index(g, g->dims[0][ta ? 0 : 1]);
  MlirValue zero = attn_gen_float(g, 0.0);
  struct attn_b_for loop;
  MlirValue e = attn_gen_open_loop(g, &loop, g->dims[2][0] * g->dims[2][1]);
  MlirValue ij[2];
  attn_gen_split_index(g, e, g->dims[2][1], &ij[0], &ij[1]);
  MlirValue init = acc ? attn_b_load(b, attn_gen_arg(g, 2), 2, ij) : zero;
  struct attn_b_for kl;
  attn_b_for_open(b, &kl, g->c0, kdim, g->c1, 1, &init);
  MlirValue ik[2] = {ta ? kl.iv : ij[0], ta ? ij[0] : kl.iv};
  MlirValue bk[2] = {trans ? ij[1] : kl.iv, trans ? kl.iv : ij[1]};
  MlirValue x = attn_b_load(b, attn_gen_arg(g, 0), 2, ik);
  MlirValue y = attn_b_load(b, attn_gen_arg(g, 1), 2, bk);
  MlirValue s2 = attn_b_fma(b, x, y, kl.args[0]);
  attn_b_for_close(b, &kl, 1, &s2);
  attn_b_store(b, kl.results[0], attn_gen_arg(g, 2), 2, ij);
  attn_gen_close_loop(g, &loop);
}

static void gen_softmax_update(struct attn_tile_gen *g) {
  struct attn_builder *b = g->b;
  double scale = 1.0;
  attn_attr_f64(g->op, "scale", &scale);
  MlirValue s = attn_gen_arg(g, 0), m = attn_gen_arg(g, 1),
            l = attn_gen_arg(g, 2), a = attn_gen_arg(g, 3);
  // Scores are kept in the log2 domain: exp(x * scale) = exp2(x * k).
  MlirValue k = attn_gen_float(g, scale * 1.4426950408889634);
  MlirValue ninf = attn_gen_float(g, -INFINITY);
  MlirValue zero = attn_gen_float(g, 0.0);
  MlirValue ncols = attn_gen_index(g, g->dims[0][1]);
  MlirValue dv = attn_gen_index(g, g->dims[3][1]);
  struct attn_b_for loop;
  MlirValue r = attn_gen_open_loop(g, &loop, g->dims[0][0]);
  MlirValue mold = attn_b_load(b, m, 1, &r);
  struct attn_b_for mx;
  attn_b_for_open(b, &mx, g->c0, ncols, g->c1, 1, &mold);
  MlirValue rj[2] = {r, mx.iv};
  MlirValue xs = attn_b_mulf(b, attn_b_load(b, s, 2, rj), k);
  MlirValue mx2 = attn_b_binary(b, "arith.maximumf", mx.args[0], xs);
  attn_b_for_close(b, &mx, 1, &mx2);
  MlirValue mnew = mx.results[0];
  MlirValue dead = attn_b_cmpf(b, ATTN_B_F_OEQ, mnew, ninf);
  MlirValue shift = attn_b_select(b, dead, zero, mnew);
  MlirValue alpha = attn_b_unary(b, "math.exp2", attn_b_subf(b, mold, shift));
  struct attn_b_for sum;
  attn_b_for_open(b, &sum, g->c0, ncols, g->c1, 1, &zero);
  MlirValue rj2[2] = {r, sum.iv};
  MlirValue xs2 = attn_b_mulf(b, attn_b_load(b, s, 2, rj2), k);
  MlirValue p = attn_b_unary(b, "math.exp2", attn_b_subf(b, xs2, shift));
  attn_b_store(b, p, s, 2, rj2);
  MlirValue acc2 = attn_b_addf(b, sum.args[0], p);
  attn_b_for_close(b, &sum, 1, &acc2);
  MlirValue lsc = attn_b_mulf(b, attn_b_load(b, l, 1, &r), alpha);
  MlirValue lnew = attn_b_addf(b, lsc, sum.results[0]);
  attn_b_store(b, lnew, l, 1, &r);
  attn_b_store(b, mnew, m, 1, &r);
  struct attn_b_for rescale;
  attn_b_for_open(b, &rescale, g->c0, dv, g->c1, 0, NULL);
  MlirValue rd[2] = {r, rescale.iv};
  MlirValue o2 = attn_b_mulf(b, attn_b_load(b, a, 2, rd), alpha);
  attn_b_store(b, o2, a, 2, rd);
  attn_b_for_close(b, &rescale, 0, NULL);
  attn_gen_close_loop(g, &loop);
}

static void gen_normalize(struct attn_tile_gen *g) {
  struct attn_builder *b = g->b;
  MlirValue zero = attn_gen_float(g, 0.0);
  struct attn_b_for loop;
  MlirValue e = attn_gen_open_loop(g, &loop, g->dims[0][0] * g->dims[0][1]);
  MlirValue ij[2];
  attn_gen_split_index(g, e, g->dims[0][1], &ij[0], &ij[1]);
  MlirValue lv = attn_b_load(b, attn_gen_arg(g, 1), 1, &ij[0]);
  MlirValue x = attn_b_load(b, attn_gen_arg(g, 0), 2, ij);
  MlirValue empty = attn_b_cmpf(b, ATTN_B_F_OEQ, lv, zero);
  MlirValue q = attn_b_divf(b, x, lv);
  MlirValue y = attn_b_select(b, empty, zero, q);
  attn_b_store(b, y, attn_gen_arg(g, 0), 2, ij);
  attn_gen_close_loop(g, &loop);
}

/// Builds the loops for g->op before it; false for ops this file does not
/// lower (nothing built then).
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
    return attn_gen_score_ops(g) || attn_gen_grad_ops(g);
  return true;
}

/// Replaces op by the loops that compute it, built before it with b (whose
/// ops are located at op, named by the target's role).
static bool lower_op(struct attn_builder *b, MlirOperation op,
                     enum attn_tile_target target) {
  struct attn_tile_gen g = {b, target, op, {{0}}, {NULL}, {NULL}, b->t.f32};
  intptr_t n = mlirOperationGetNumOperands(op);
  for (intptr_t i = 0; i < n; ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    if (!mlirTypeIsAMemRef(t))
      continue;
    if (i < 6)
      attn_static_shape(t, g.dims[i]);
    // The tiles of an f64 program are f64 (the verifier keeps one type).
    if (mlirTypeIsAF64(mlirShapedTypeGetElementType(t)))
      g.ct = b->t.f64;
  }
  b->src = mlirOperationGetLocation(op);
  attn_builder_role(b, target == ATTN_TILE_GPU ? "gpu.threads" : "cpu.loop");
  attn_builder_before(b, op);
  if (!gen_body(&g))
    return true; // not a compute op
  if (!attn_builder_finish(b))
    return false;
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
  struct attn_builder b;
  attn_builder_init(&b, mlirOperationGetContext(root),
                    mlirOperationGetLocation(root));
  for (size_t i = 0; ok && i < ops.n; ++i) {
    if (attn_op_is(ops.ops[i], ATTN_OP_TILE_PROGRAM_ID) ||
        attn_op_is(ops.ops[i], ATTN_OP_TILE_ALLOC)) {
      ok = attn_emit_errorf(ops.ops[i], "internal: lower this op before the "
                                        "tile compute ops");
      break;
    }
    ok = lower_op(&b, ops.ops[i], target);
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
