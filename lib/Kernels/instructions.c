//===- instructions.c - The built instruction vocabulary of the kernels ---===//
//
// The bottom floor of lib/Kernels (kernels_internal.h): one op or a short
// fixed sequence per call, over lib/IR/attn_builder.h. The op choices are the
// ones the text vocabulary (lib/Transforms/hopper_ptx.c, until issue 26)
// made, except where an upstream op gives the same instruction (shuffles,
// votes, named barriers, ex2.approx, f16 conversions); every inline PTX
// says why no upstream op is used.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/LLVM.h"

#include <stdio.h>
#include <string.h>

static MlirStringRef str(const char *s) {
  return mlirStringRefCreateFromCString(s);
}

//===-- Integer and float shortcuts ---------------------------------------===//

MlirValue attn_k_addc(struct attn_builder *b, MlirValue x, int64_t c) {
  return attn_b_addi(b, x, attn_b_i32(b, c));
}

MlirValue attn_k_mulc(struct attn_builder *b, MlirValue x, int64_t c) {
  return attn_b_muli(b, x, attn_b_i32(b, c));
}

MlirValue attn_k_divc(struct attn_builder *b, MlirValue x, int64_t c) {
  return attn_b_divui(b, x, attn_b_i32(b, c));
}

MlirValue attn_k_remc(struct attn_builder *b, MlirValue x, int64_t c) {
  return attn_b_remui(b, x, attn_b_i32(b, c));
}

MlirValue attn_k_andc(struct attn_builder *b, MlirValue x, int64_t c) {
  return attn_b_andi(b, x, attn_b_i32(b, c));
}

MlirValue attn_k_cmpc(struct attn_builder *b, enum attn_b_cmpi pred,
                      MlirValue x, int64_t c) {
  return attn_b_cmpi(b, pred, x, attn_b_i32(b, c));
}

MlirValue attn_k_fma_intr(struct attn_builder *b, MlirValue x, MlirValue y,
                          MlirValue z) {
  MlirValue opd[] = {x, y, z};
  return attn_b_op1(b, "llvm.intr.fma", b->t.f32, 3, opd, 0, NULL);
}

//===-- Conversions -------------------------------------------------------===//

MlirValue attn_k_i64_of(struct attn_builder *b, MlirValue x) {
  return attn_b_cast(b, "arith.extui", x, b->t.i64);
}

MlirValue attn_k_to_index(struct attn_builder *b, MlirValue x) {
  return attn_b_cast(b, "arith.index_cast", x, b->t.index);
}

MlirValue attn_k_from_index(struct attn_builder *b, MlirValue x) {
  return attn_b_cast(b, "arith.index_cast", x, b->t.i32);
}

MlirValue attn_k_uitofp(struct attn_builder *b, MlirValue x, MlirType to) {
  return attn_b_cast(b, "arith.uitofp", x, to);
}

MlirValue attn_k_truncf(struct attn_builder *b, MlirValue x, MlirType to) {
  return attn_b_cast(b, "arith.truncf", x, to);
}

MlirValue attn_k_bitcast(struct attn_builder *b, MlirValue x, MlirType to) {
  return attn_b_cast(b, "arith.bitcast", x, to);
}

void attn_k_rotate(struct attn_builder *b, MlirValue x1, MlirValue x2,
                   MlirValue c, MlirValue s, MlirValue *y1, MlirValue *y2) {
  *y1 = attn_b_subf(b, attn_b_mulf(b, x1, c), attn_b_mulf(b, x2, s));
  *y2 = attn_b_addf(b, attn_b_mulf(b, x2, c), attn_b_mulf(b, x1, s));
}

//===-- Calls -------------------------------------------------------------===//

MlirValue attn_k_call(struct attn_builder *b, const char *callee, intptr_t n,
                      const MlirValue *args, MlirType res) {
  int32_t seg[2] = {(int32_t)n, 0}; // callee operands, operand bundles
  MlirNamedAttribute a[] = {
      attn_b_named(b, "callee", mlirFlatSymbolRefAttrGet(b->ctx, str(callee))),
      attn_b_named(b, "operandSegmentSizes",
                   mlirDenseI32ArrayGet(b->ctx, 2, seg)),
      attn_b_named(b, "op_bundle_sizes", mlirDenseI32ArrayGet(b->ctx, 0, NULL)),
  };
  return attn_b_op1(b, "llvm.call", res, n, args, 3, a);
}

void attn_k_sincos(struct attn_builder *b, MlirValue angle, MlirValue *c,
                   MlirValue *s) {
  *c = attn_k_call(b, "__nv_cosf", 1, &angle, b->t.f32);
  *s = attn_k_call(b, "__nv_sinf", 1, &angle, b->t.f32);
}

//===-- Inline PTX and aggregates -----------------------------------------===//

MlirOperation attn_k_asm(struct attn_builder *b, MlirType res, const char *cons,
                         const char *text, intptr_t n, const MlirValue *opd) {
  MlirNamedAttribute a[] = {
      attn_b_named(b, "asm_string", attn_b_attr_str(b, text)),
      attn_b_named(b, "constraints", attn_b_attr_str(b, cons)),
      attn_b_named(b, "has_side_effects", attn_b_attr_unit(b)),
  };
  return attn_b_op(b, "llvm.inline_asm", mlirTypeIsNull(res) ? 0 : 1, &res, n,
                   opd, 3, a, 0);
}

void attn_k_asm0(struct attn_builder *b, const char *text) {
  attn_k_asm(b, (MlirType){NULL}, "", text, 0, NULL);
}

MlirValue attn_k_extract(struct attn_builder *b, MlirValue agg, int64_t i,
                         MlirType elem) {
  MlirNamedAttribute a =
      attn_b_named(b, "position", attn_b_attr_i64s(b, 1, &i));
  return attn_b_op1(b, "llvm.extractvalue", elem, 1, &agg, 1, &a);
}

MlirType attn_k_struct(struct attn_builder *b, intptr_t n, MlirType elem) {
  MlirType f[ATTN_B_MAX_VALUES];
  if (n > ATTN_B_MAX_VALUES)
    n = ATTN_B_MAX_VALUES;
  for (intptr_t i = 0; i < n; ++i)
    f[i] = elem;
  return mlirLLVMStructTypeLiteralGet(b->ctx, n, f, false);
}

//===-- Warp and conversion instructions ----------------------------------===//

/// nvvm.shfl.sync of kind (bfly, idx) of v (f32 or i32) with lane operand
/// lane over the whole warp (mask -1, clamp 31).
static MlirValue shfl(struct attn_builder *b, const char *kind, MlirValue v,
                      int lane) {
  char k[48];
  snprintf(k, sizeof k, "#nvvm<shfl_kind %s>", kind);
  MlirValue opd[] = {attn_b_i32(b, -1), v, attn_b_i32(b, lane),
                     attn_b_i32(b, 31)};
  MlirNamedAttribute a =
      attn_b_named(b, "kind", mlirAttributeParseGet(b->ctx, str(k)));
  MlirType t = mlirValueIsNull(v) ? b->t.f32 : mlirValueGetType(v);
  return attn_b_op1(b, "nvvm.shfl.sync", t, 4, opd, 1, &a);
}

MlirValue attn_k_shfl_xor(struct attn_builder *b, MlirValue v, int lane_mask) {
  return shfl(b, "bfly", v, lane_mask);
}

MlirValue attn_k_shfl_idx(struct attn_builder *b, MlirValue v, int lane) {
  return shfl(b, "idx", v, lane);
}

MlirValue attn_k_vote_any(struct attn_builder *b, MlirValue pred) {
  MlirValue opd[] = {attn_b_i32(b, -1), pred};
  MlirNamedAttribute a = attn_b_named(
      b, "kind",
      mlirAttributeParseGet(b->ctx, str("#nvvm<vote_sync_kind any>")));
  return attn_b_op1(b, "nvvm.vote.sync", b->t.i1, 2, opd, 1, &a);
}

MlirValue attn_k_ballot(struct attn_builder *b, MlirValue pred) {
  MlirValue opd[] = {attn_b_i32(b, -1), pred};
  MlirNamedAttribute a = attn_b_named(
      b, "kind",
      mlirAttributeParseGet(b->ctx, str("#nvvm<vote_sync_kind ballot>")));
  return attn_b_op1(b, "nvvm.vote.sync", b->t.i32, 2, opd, 1, &a);
}

MlirValue attn_k_popc(struct attn_builder *b, MlirValue x) {
  return attn_b_op1(b, "llvm.intr.ctpop", b->t.i32, 1, &x, 0, NULL);
}

/// The f32 NVVM intrinsic intrin of v by llvm.call_intrinsic.
static MlirValue intrinsic_f32(struct attn_builder *b, const char *intrin,
                               MlirValue v) {
  int32_t seg[2] = {1, 0}; // args, operand bundles
  MlirNamedAttribute a[] = {
      attn_b_named(b, "intrin", attn_b_attr_str(b, intrin)),
      attn_b_named(b, "operandSegmentSizes",
                   mlirDenseI32ArrayGet(b->ctx, 2, seg)),
      attn_b_named(b, "op_bundle_sizes", mlirDenseI32ArrayGet(b->ctx, 0, NULL)),
  };
  return attn_b_op1(b, "llvm.call_intrinsic", b->t.f32, 1, &v, 3, a);
}

MlirValue attn_k_ex2(struct attn_builder *b, MlirValue v) {
  // (MLIR 22 has no nvvm op for ex2.approx.)
  return intrinsic_f32(b, "llvm.nvvm.ex2.approx.ftz.f", v);
}

MlirValue attn_k_lg2(struct attn_builder *b, MlirValue v) {
  // (Nor for lg2.approx.)
  return intrinsic_f32(b, "llvm.nvvm.lg2.approx.ftz.f", v);
}

/// vector<2 x elem>.
static MlirType vec2(MlirType elem) {
  return mlirVectorTypeGet(1, (int64_t[]){2}, elem);
}

/// The 16-bit float type: bf16 or f16.
static MlirType half_type(struct attn_builder *b, bool bf16) {
  return bf16 ? mlirBF16TypeGet(b->ctx) : mlirF16TypeGet(b->ctx);
}

MlirValue attn_k_pack2(struct attn_builder *b, bool bf16, MlirValue lo,
                       MlirValue hi) {
  if (bf16) {
    // Inline PTX: arith.truncf of a vector<2xf32> to bf16 becomes two
    // cvt.rn.bf16.f32 and a mov.b32 under llc-22 (sm_90a), not this one
    // cvt.rn.bf16x2.f32; nvvm.convert.f32x2.to.bf16x2 is the stochastic
    // rounding (.rs) form only.
    MlirValue opd[] = {hi, lo};
    return attn_b_result(attn_k_asm(b, b->t.i32, "=r,f,f",
                                    "cvt.rn.bf16x2.f32 $0, $1, $2;", 2, opd),
                         0);
  }
  // arith.truncf of the vector (lo, hi): one cvt.rn.f16x2.f32.
  MlirType vt = vec2(b->t.f32);
  MlirValue v = attn_b_op1(b, "llvm.mlir.undef", vt, 0, NULL, 0, NULL);
  MlirValue e[] = {lo, hi};
  for (int i = 0; i < 2; ++i) {
    MlirValue opd[] = {v, e[i], attn_b_i32(b, i)};
    v = attn_b_op1(b, "llvm.insertelement", vt, 3, opd, 0, NULL);
  }
  MlirValue h = attn_k_truncf(b, v, vec2(half_type(b, false)));
  return attn_b_op1(b, "llvm.bitcast", b->t.i32, 1, &h, 0, NULL);
}

void attn_k_unpack2(struct attn_builder *b, bool bf16, MlirValue w,
                    MlirValue *lo, MlirValue *hi) {
  if (bf16) {
    MlirValue l = attn_b_shli(b, w, attn_b_i32(b, 16));
    MlirValue h = attn_b_andi(b, w, attn_b_i32(b, (int32_t)0xffff0000));
    *lo = attn_k_bitcast(b, l, b->t.f32);
    *hi = attn_k_bitcast(b, h, b->t.f32);
    return;
  }
  // arith.extf of the pair as a vector<2xf16>: two cvt.f32.f16.
  MlirValue hv =
      attn_b_op1(b, "llvm.bitcast", vec2(half_type(b, false)), 1, &w, 0, NULL);
  MlirValue v = attn_b_cast(b, "arith.extf", hv, vec2(b->t.f32));
  MlirValue opd[2] = {v, attn_b_i32(b, 0)};
  *lo = attn_b_op1(b, "llvm.extractelement", b->t.f32, 2, opd, 0, NULL);
  opd[1] = attn_b_i32(b, 1);
  *hi = attn_b_op1(b, "llvm.extractelement", b->t.f32, 2, opd, 0, NULL);
}

//===-- mma.sync, ldmatrix, movmatrix, cp.async ---------------------------===//
//
// Inline PTX, as the kernels' text had it: nvvm.mma.sync would give the
// same instruction from typed fragments, nvvm.ldmatrix and
// nvvm.cp.async.shared.global take shared pointers where these take i32
// addresses (the moves are later, GPU-checked steps).

void attn_k_mma16816(struct attn_builder *b, bool bf16, MlirValue *c,
                     const MlirValue a[4], MlirValue b0, MlirValue b1) {
  char text[192];
  const char *ty = bf16 ? "bf16" : "f16";
  snprintf(text, sizeof text,
           "mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {$0, $1, $2, $3}, "
           "{$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};",
           ty, ty);
  MlirValue opd[] = {a[0], a[1], a[2], a[3], b0, b1, c[0], c[1], c[2], c[3]};
  MlirValue s = attn_b_result(
      attn_k_asm(b, attn_k_struct(b, 4, b->t.f32),
                 "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", text, 10, opd),
      0);
  for (int i = 0; i < 4; ++i)
    c[i] = attn_k_extract(b, s, i, b->t.f32);
}

void attn_k_ldmatrix_x4(struct attn_builder *b, MlirValue addr, bool trans,
                        MlirValue r[4]) {
  MlirValue s = attn_b_result(
      attn_k_asm(b, attn_k_struct(b, 4, b->t.i32), "=r,=r,=r,=r,r",
                 trans ? "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
                         "{$0, $1, $2, $3}, [$4];"
                       : "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$0, "
                         "$1, $2, $3}, [$4];",
                 1, &addr),
      0);
  for (int i = 0; i < 4; ++i)
    r[i] = attn_k_extract(b, s, i, b->t.i32);
}

MlirValue attn_k_movmatrix_t(struct attn_builder *b, MlirValue x) {
  return attn_b_result(
      attn_k_asm(b, b->t.i32, "=r,r",
                 "movmatrix.sync.aligned.m8n8.trans.b16 $0, $1;", 1, &x),
      0);
}

void attn_k_cp_async16(struct attn_builder *b, MlirValue dst, MlirValue src,
                       MlirValue bytes) {
  MlirValue opd[] = {dst, src, bytes};
  attn_k_asm(b, (MlirType){NULL}, "r,l,r",
             "cp.async.cg.shared.global [$0], [$1], 16, $2;", 3, opd);
}

void attn_k_cp_async_commit(struct attn_builder *b) {
  attn_b_op(b, "nvvm.cp.async.commit.group", 0, NULL, 0, NULL, 0, NULL, 0);
}

void attn_k_cp_async_wait(struct attn_builder *b, int pending) {
  MlirNamedAttribute a = attn_b_named(b, "n", attn_b_attr_i32(b, pending));
  attn_b_op(b, "nvvm.cp.async.wait.group", 0, NULL, 0, NULL, 1, &a, 0);
}

//===-- Barriers ----------------------------------------------------------===//

void attn_k_bar_sync(struct attn_builder *b, MlirValue id, int threads) {
  if (mlirValueIsNull(id) && threads == 0) { // bar.sync 0: every thread
    attn_b_op(b, "nvvm.barrier", 0, NULL, 0, NULL, 0, NULL, 0);
    return;
  }
  int32_t seg[3] = {1, 1, 0}; // barrierId, numberOfThreads, reductionPredicate
  MlirNamedAttribute a = attn_b_named(b, "operandSegmentSizes",
                                      mlirDenseI32ArrayGet(b->ctx, 3, seg));
  MlirValue opd[] = {id, attn_b_i32(b, threads)};
  attn_b_op(b, "nvvm.barrier", 0, NULL, 2, opd, 1, &a, 0);
}

void attn_k_bar_arrive(struct attn_builder *b, MlirValue id, int threads) {
  // The LLVM intrinsic by llvm.call_intrinsic: nvvm.barrier.arrive has no
  // LLVM translation in MLIR 22 (convert-nvvm-to-llvm, not in our target
  // pipeline, makes it inline PTX), and the intrinsic gives the same
  // bar.arrive.
  MlirValue opd[] = {id, attn_b_i32(b, threads)};
  int32_t seg[2] = {2, 0}; // args, operand bundles
  MlirNamedAttribute a[] = {
      attn_b_named(b, "intrin",
                   attn_b_attr_str(b, "llvm.nvvm.barrier.cta.arrive.aligned."
                                      "count")),
      attn_b_named(b, "operandSegmentSizes",
                   mlirDenseI32ArrayGet(b->ctx, 2, seg)),
      attn_b_named(b, "op_bundle_sizes", mlirDenseI32ArrayGet(b->ctx, 0, NULL)),
  };
  attn_b_op(b, "llvm.call_intrinsic", 0, NULL, 2, opd, 3, a, 0);
}

void attn_k_warp_sync(struct attn_builder *b) {
  MlirValue m = attn_b_i32(b, -1);
  attn_b_op(b, "nvvm.bar.warp.sync", 0, NULL, 1, &m, 0, NULL, 0);
}

//===-- Special registers, pointers and memory ----------------------------===//

MlirValue attn_k_sreg(struct attn_builder *b, const char *name) {
  char op[64] = "nvvm.read.ptx.sreg.";
  strncat(op, name, sizeof op - strlen(op) - 1);
  return attn_b_op1(b, op, b->t.i32, 0, NULL, 0, NULL);
}

MlirValue attn_k_addressof(struct attn_builder *b, const char *name,
                           MlirType t) {
  MlirNamedAttribute a = attn_b_named(
      b, "global_name", mlirFlatSymbolRefAttrGet(b->ctx, str(name)));
  return attn_b_op1(b, "llvm.mlir.addressof", t, 0, NULL, 1, &a);
}

MlirValue attn_k_ptrtoint(struct attn_builder *b, MlirValue p, MlirType to) {
  return attn_b_op1(b, "llvm.ptrtoint", to, 1, &p, 0, NULL);
}

/// llvm.getelementptr of i8 from p: the dynamic index off when it is not
/// null, else the constant c.
static MlirValue gep_i8(struct attn_builder *b, MlirValue p, MlirValue off,
                        int32_t c) {
  if (mlirValueIsNull(p)) {
    attn_b_unary(b, "llvm.getelementptr", p); // reports the missing operand
    return (MlirValue){NULL};
  }
  int32_t raw = mlirValueIsNull(off) ? c : INT32_MIN; // INT32_MIN: dynamic
  MlirNamedAttribute a[] = {
      attn_b_named(b, "elem_type", attn_b_attr_type(b, b->t.i8)),
      attn_b_named(b, "rawConstantIndices",
                   mlirDenseI32ArrayGet(b->ctx, 1, &raw)),
  };
  MlirValue opd[] = {p, off};
  return attn_b_op1(b, "llvm.getelementptr", mlirValueGetType(p),
                    mlirValueIsNull(off) ? 1 : 2, opd, 2, a);
}

MlirValue attn_k_gep_elem(struct attn_builder *b, MlirValue p, MlirValue idx,
                          MlirType elem) {
  if (mlirValueIsNull(p) || mlirValueIsNull(idx)) {
    attn_b_binary(b, "llvm.getelementptr", p, idx); // reports the missing one
    return (MlirValue){NULL};
  }
  int32_t raw = INT32_MIN; // a dynamic index
  MlirNamedAttribute a[] = {
      attn_b_named(b, "elem_type", attn_b_attr_type(b, elem)),
      attn_b_named(b, "rawConstantIndices",
                   mlirDenseI32ArrayGet(b->ctx, 1, &raw)),
  };
  MlirValue opd[] = {p, idx};
  return attn_b_op1(b, "llvm.getelementptr", mlirValueGetType(p), 2, opd, 2, a);
}

MlirValue attn_k_gep(struct attn_builder *b, MlirValue p, MlirValue off) {
  if (mlirValueIsNull(off)) {
    attn_b_unary(b, "llvm.getelementptr", off);
    return (MlirValue){NULL};
  }
  return gep_i8(b, p, off, 0);
}

MlirValue attn_k_gep_const(struct attn_builder *b, MlirValue p, int32_t c) {
  return gep_i8(b, p, (MlirValue){NULL}, c);
}

MlirValue attn_k_smem_ptr(struct attn_builder *b, MlirValue smem,
                          MlirValue off) {
  return attn_k_gep(b, smem, off);
}

MlirValue attn_k_load(struct attn_builder *b, MlirValue p, MlirType t) {
  return attn_b_op1(b, "llvm.load", t, 1, &p, 0, NULL);
}

void attn_k_store(struct attn_builder *b, MlirValue v, MlirValue p) {
  MlirValue opd[] = {v, p};
  attn_b_op(b, "llvm.store", 0, NULL, 2, opd, 0, NULL, 0);
}

//===-- Functions and declarations ----------------------------------------===//

/// Whether the gpu.module body has an op whose sym_name is name.
static bool has_symbol(MlirBlock body, const char *name) {
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    MlirAttribute s = mlirOperationGetAttributeByName(op, str("sym_name"));
    if (!mlirAttributeIsNull(s) && mlirAttributeIsAString(s)) {
      MlirStringRef r = mlirStringAttrGetValue(s);
      if (r.length == strlen(name) && !memcmp(r.data, name, r.length))
        return true;
    }
  }
  return false;
}

/// The attributes the parser gives every llvm.func and llvm.mlir.global
/// (external linkage, default visibility, no unnamed_addr), so that a
/// built one prints as a parsed one. n: how many of them (5 for a
/// function, which has a calling convention, 4 otherwise).
static intptr_t symbol_attrs(struct attn_builder *b, MlirNamedAttribute *a,
                             bool func) {
  intptr_t n = 0;
  a[n++] = attn_b_named(
      b, "linkage", mlirLLVMLinkageAttrGet(b->ctx, MlirLLVMLinkageExternal));
  a[n++] = attn_b_named(b, "visibility_", attn_b_attr_i64(b, 0));
  a[n++] = attn_b_named(b, "unnamed_addr", attn_b_attr_i64(b, 0));
  if (func)
    a[n++] =
        attn_b_named(b, "CConv", mlirLLVMCConvAttrGet(b->ctx, MlirLLVMCConvC));
  return n;
}

/// `llvm.func @name(arg) -> res`, a declaration.
static void declare_func(struct attn_builder *b, const char *name, MlirType res,
                         MlirType arg) {
  MlirNamedAttribute a[8];
  intptr_t n = symbol_attrs(b, a, true);
  a[n++] = attn_b_named(b, "sym_name", attn_b_attr_str(b, name));
  a[n++] = attn_b_named(
      b, "function_type",
      attn_b_attr_type(b, mlirLLVMFunctionTypeGet(res, 1, &arg, false)));
  attn_b_op(b, "llvm.func", 0, NULL, 0, NULL, n, a, 1);
}

void attn_k_declare_libdevice(struct attn_builder *b, MlirOperation gpu_module,
                              int smem_align) {
  MlirBlock body = attn_b_region_block(gpu_module, 0);
  attn_builder_at_end(b, body);
  if (!has_symbol(body, "__nv_exp2"))
    declare_func(b, "__nv_exp2", b->t.f64, b->t.f64);
  if (!has_symbol(body, "__nv_sinf"))
    declare_func(b, "__nv_sinf", b->t.f32, b->t.f32);
  if (!has_symbol(body, "__nv_cosf"))
    declare_func(b, "__nv_cosf", b->t.f32, b->t.f32);
  if (!has_symbol(body, "attn_smem")) {
    MlirNamedAttribute a[8];
    intptr_t n = symbol_attrs(b, a, false);
    a[n++] = attn_b_named(b, "sym_name", attn_b_attr_str(b, "attn_smem"));
    a[n++] =
        attn_b_named(b, "global_type",
                     attn_b_attr_type(b, mlirLLVMArrayTypeGet(b->t.i8, 0)));
    a[n++] = attn_b_named(b, "addr_space", attn_b_attr_i32(b, 3));
    a[n++] = attn_b_named(b, "alignment", attn_b_attr_i64(b, smem_align));
    attn_b_op(b, "llvm.mlir.global", 0, NULL, 0, NULL, n, a, 1);
  }
}

void attn_k_llvm_func_open_typed(struct attn_builder *b, struct attn_b_func *f,
                                 const char *name, intptr_t nargs,
                                 const MlirType *types,
                                 const MlirAttribute *arg_attrs, intptr_t nattr,
                                 const MlirNamedAttribute *attrs) {
  memset(f, 0, sizeof *f);
  MlirNamedAttribute all[32];
  MlirLocation locs[ATTN_K_MAX_FUNC_ARGS];
  if (nattr + 8 > 32 || nargs > ATTN_K_MAX_FUNC_ARGS) {
    // Closed as any other (attn_k_llvm_func_close), nothing built.
    char why[160];
    snprintf(why, sizeof why, "kernel @%.80s takes more than %d parameters",
             name, ATTN_K_MAX_FUNC_ARGS);
    attn_builder_fail(b, why);
    f->outer_block = b->block;
    f->outer_anchor = b->anchor;
    ++b->depth;
    return;
  }
  for (intptr_t i = 0; i < nargs; ++i)
    locs[i] = b->loc;
  intptr_t n = symbol_attrs(b, all, true);
  all[n++] = attn_b_named(b, "sym_name", attn_b_attr_str(b, name));
  all[n++] = attn_b_named(
      b, "function_type",
      attn_b_attr_type(b, mlirLLVMFunctionTypeGet(mlirLLVMVoidTypeGet(b->ctx),
                                                  nargs, types, false)));
  if (arg_attrs)
    all[n++] = attn_b_named(b, "arg_attrs",
                            mlirArrayAttrGet(b->ctx, nargs, arg_attrs));
  for (intptr_t i = 0; i < nattr; ++i)
    all[n++] = attrs[i];
  f->op = attn_b_op(b, "llvm.func", 0, NULL, 0, NULL, n, all, 1);
  f->outer_block = b->block;
  f->outer_anchor = b->anchor;
  ++b->depth;
  if (mlirOperationIsNull(f->op))
    return;
  f->entry = mlirBlockCreate(nargs, types, locs);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(f->op, 0), f->entry);
  attn_builder_at_end(b, f->entry);
}

void attn_k_llvm_func_open(struct attn_builder *b, struct attn_b_func *f,
                           const char *name, intptr_t nargs, intptr_t nattr,
                           const MlirNamedAttribute *attrs) {
  MlirType args[ATTN_K_MAX_FUNC_ARGS];
  for (intptr_t i = 0; i < nargs && i < ATTN_K_MAX_FUNC_ARGS; ++i)
    args[i] = b->t.ptr;
  attn_k_llvm_func_open_typed(b, f, name, nargs, args, NULL, nattr, attrs);
}

void attn_k_llvm_func_close(struct attn_builder *b, struct attn_b_func *f) {
  if (!mlirOperationIsNull(f->op))
    attn_b_op(b, "llvm.return", 0, NULL, 0, NULL, 0, NULL, 0);
  b->block = f->outer_block;
  b->anchor = f->outer_anchor;
  --b->depth;
}

bool attn_k_llvm_func_finish(struct attn_builder *b, struct attn_b_func *f) {
  attn_k_llvm_func_close(b, f);
  if (attn_builder_finish(b))
    return true;
  if (!mlirOperationIsNull(f->op))
    mlirOperationDestroy(f->op);
  f->op = (MlirOperation){NULL};
  return false;
}

intptr_t attn_k_kernel_attrs(struct attn_builder *b, int threads,
                             MlirAttribute launch, MlirNamedAttribute *a) {
  int32_t maxntid[3] = {threads, 1, 1};
  a[0] = attn_b_named(b, "nvvm.kernel", attn_b_attr_unit(b));
  a[1] = attn_b_named(b, "nvvm.maxntid", mlirDenseI32ArrayGet(b->ctx, 3, maxntid));
  a[2] = attn_b_named(b, "nvvm.minctasm", attn_b_attr_i32(b, 1));
  a[3] = attn_b_named(b, "attn.launch", launch);
  return 4;
}
