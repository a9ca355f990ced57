//===- instructions.c - The built instruction vocabulary of the kernels ---===//
//
// The bottom floor of lib/Kernels (kernels_internal.h): one op or a short
// fixed sequence per call, over lib/IR/attn_builder.h. The op choices are the
// ones the text vocabulary (lib/Transforms/hopper_ptx.c, until issue 26)
// made, so that the kernels moved here write the same PTX; where that is inline PTX the call
// says why no upstream op is used.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/LLVM.h"

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

MlirValue attn_k_shfl_xor(struct attn_builder *b, MlirValue v, int lane_mask) {
  // Inline PTX, as the text had it (nvvm.shfl.sync takes the same operands;
  // moving to it changes the PTX and needs a GPU check).
  MlirValue opd[] = {v, attn_b_i32(b, lane_mask)};
  return attn_b_result(
      attn_k_asm(b, b->t.f32, "=f,f,r",
                 "shfl.sync.bfly.b32 $0, $1, $2, 0x1f, 0xffffffff;", 2, opd),
      0);
}

MlirValue attn_k_vote_any(struct attn_builder *b, MlirValue pred) {
  // Inline PTX, as the text had it (nvvm.vote.sync any is the upstream op,
  // a later step with a GPU check).
  MlirValue opd[] = {attn_b_cast(b, "arith.extui", pred, b->t.i32)};
  MlirValue any =
      attn_b_result(attn_k_asm(b, b->t.i32, "=r,r",
                               "{ .reg .pred p, q; setp.ne.b32 p, $1, 0; "
                               "vote.sync.any.pred q, p, 0xffffffff; "
                               "selp.b32 $0, 1, 0, q; }",
                               1, opd),
                    0);
  return attn_k_cmpc(b, ATTN_B_NE, any, 0);
}

MlirValue attn_k_ex2(struct attn_builder *b, MlirValue v) {
  // Inline PTX, as the text had it: the NVVM intrinsic ex2.approx.ftz.f
  // (llvm.call_intrinsic) gives the same instruction; the move is a later
  // step with a GPU check.
  return attn_b_result(
      attn_k_asm(b, b->t.f32, "=f,f", "ex2.approx.ftz.f32 $0, $1;", 1, &v), 0);
}

MlirValue attn_k_pack2(struct attn_builder *b, bool bf16, MlirValue lo,
                       MlirValue hi) {
  // Inline PTX: one cvt.rn of two f32 into a pair; arith.truncf to a vector
  // of two and a bitcast is the upstream route, a later step with a GPU
  // check.
  MlirValue opd[] = {hi, lo};
  return attn_b_result(attn_k_asm(b, b->t.i32, "=r,f,f",
                                  bf16 ? "cvt.rn.bf16x2.f32 $0, $1, $2;"
                                       : "cvt.rn.f16x2.f32 $0, $1, $2;",
                                  2, opd),
                       0);
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
  // Inline PTX: two cvt.f32.f16 of the halves of one register, as the text
  // had it (arith.extf of a bitcast vector is the upstream route).
  MlirType pair = attn_k_struct(b, 2, b->t.f32);
  MlirValue r = attn_b_result(
      attn_k_asm(b, pair, "=f,=f,r",
                 "{ .reg .b16 l, h; mov.b32 {l, h}, $2; cvt.f32.f16 $0, l; "
                 "cvt.f32.f16 $1, h; }",
                 1, &w),
      0);
  *lo = attn_k_extract(b, r, 0, b->t.f32);
  *hi = attn_k_extract(b, r, 1, b->t.f32);
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

void attn_k_llvm_func_open(struct attn_builder *b, struct attn_b_func *f,
                           const char *name, intptr_t nargs, intptr_t nattr,
                           const MlirNamedAttribute *attrs) {
  memset(f, 0, sizeof *f);
  MlirNamedAttribute all[32];
  MlirType args[16];
  MlirLocation locs[16];
  if (nattr + 7 > 32 || nargs > 16)
    nattr = nargs = 0; // the op below then fails for want of its arguments
  for (intptr_t i = 0; i < nargs; ++i) {
    args[i] = b->t.ptr;
    locs[i] = b->loc;
  }
  intptr_t n = symbol_attrs(b, all, true);
  all[n++] = attn_b_named(b, "sym_name", attn_b_attr_str(b, name));
  all[n++] = attn_b_named(
      b, "function_type",
      attn_b_attr_type(b, mlirLLVMFunctionTypeGet(mlirLLVMVoidTypeGet(b->ctx),
                                                  nargs, args, false)));
  for (intptr_t i = 0; i < nattr; ++i)
    all[n++] = attrs[i];
  f->op = attn_b_op(b, "llvm.func", 0, NULL, 0, NULL, n, all, 1);
  f->outer_block = b->block;
  f->outer_anchor = b->anchor;
  ++b->depth;
  if (mlirOperationIsNull(f->op))
    return;
  f->entry = mlirBlockCreate(nargs, args, locs);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(f->op, 0), f->entry);
  attn_builder_at_end(b, f->entry);
}

void attn_k_llvm_func_close(struct attn_builder *b, struct attn_b_func *f) {
  if (!mlirOperationIsNull(f->op))
    attn_b_op(b, "llvm.return", 0, NULL, 0, NULL, 0, NULL, 0);
  b->block = f->outer_block;
  b->anchor = f->outer_anchor;
  --b->depth;
}
