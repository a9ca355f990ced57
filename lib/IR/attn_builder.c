//===- attn_builder.c - Builds IR through the MLIR C API ------------------===//
//
// See attn_builder.h. Everything goes through mlirOperationStateGet and
// mlirOperationCreate, so that the IR is never printed and parsed again.
//
//===----------------------------------------------------------------------===//
#include "lib/IR/attn_builder.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/Dialect/LLVM.h"

#include <string.h>

static MlirStringRef str(const char *s) {
  return mlirStringRefCreateFromCString(s);
}

//===-- Insertion point and location -------------------------------------===//

void attn_builder_init(struct attn_builder *b, MlirContext ctx,
                       MlirLocation src) {
  memset(b, 0, sizeof *b);
  b->ctx = ctx;
  b->src = src;
  b->loc = src;
  // Ops of dialects not yet loaded would be made unregistered, and the LLVM
  // dialect's types need it loaded.
  static const char *const dialects[] = {"arith",  "math", "scf",  "func",
                                         "memref", "llvm", "nvvm", "gpu"};
  for (size_t i = 0; i < sizeof dialects / sizeof *dialects; ++i)
    mlirContextGetOrLoadDialect(ctx, str(dialects[i]));
  struct attn_b_types *t = &b->t;
  t->i1 = mlirIntegerTypeGet(ctx, 1);
  t->i8 = mlirIntegerTypeGet(ctx, 8);
  t->i16 = mlirIntegerTypeGet(ctx, 16);
  t->i32 = mlirIntegerTypeGet(ctx, 32);
  t->i64 = mlirIntegerTypeGet(ctx, 64);
  t->index = mlirIndexTypeGet(ctx);
  t->f16 = mlirF16TypeGet(ctx);
  t->bf16 = mlirBF16TypeGet(ctx);
  t->f32 = mlirF32TypeGet(ctx);
  t->f64 = mlirF64TypeGet(ctx);
  t->ptr = mlirLLVMPointerTypeGet(ctx, 0);
  t->ptr_shared = mlirLLVMPointerTypeGet(ctx, 3);
}

void attn_builder_at_end(struct attn_builder *b, MlirBlock block) {
  b->block = block;
  b->anchor = (MlirOperation){NULL};
}

void attn_builder_before(struct attn_builder *b, MlirOperation op) {
  b->block = mlirOperationGetBlock(op);
  b->anchor = op;
}

void attn_builder_role(struct attn_builder *b, const char *role) {
  b->loc = role ? mlirLocationNameGet(b->ctx, str(role), b->src) : b->src;
}

void attn_builder_fail(struct attn_builder *b, const char *what) {
  if (!b->failed)
    mlirEmitError(b->loc, what);
  b->failed = true;
}

bool attn_builder_finish(struct attn_builder *b) {
  if (b->depth != 0)
    attn_builder_fail(
        b, "a region of the kernel being built was left open (a bug in "
           "attn)");
  return !b->failed;
}

//===-- Attributes and types ----------------------------------------------===//

MlirNamedAttribute attn_b_named(struct attn_builder *b, const char *name,
                                MlirAttribute value) {
  return mlirNamedAttributeGet(mlirIdentifierGet(b->ctx, str(name)), value);
}

MlirAttribute attn_b_attr_i64(struct attn_builder *b, int64_t v) {
  return mlirIntegerAttrGet(b->t.i64, v);
}

MlirAttribute attn_b_attr_i32(struct attn_builder *b, int32_t v) {
  return mlirIntegerAttrGet(b->t.i32, v);
}

MlirAttribute attn_b_attr_index(struct attn_builder *b, int64_t v) {
  return mlirIntegerAttrGet(b->t.index, v);
}

MlirAttribute attn_b_attr_f64(struct attn_builder *b, double v) {
  return mlirFloatAttrDoubleGet(b->ctx, b->t.f64, v);
}

MlirAttribute attn_b_attr_f32(struct attn_builder *b, float v) {
  return mlirFloatAttrDoubleGet(b->ctx, b->t.f32, (double)v);
}

MlirAttribute attn_b_attr_bool(struct attn_builder *b, bool v) {
  return mlirBoolAttrGet(b->ctx, v);
}

MlirAttribute attn_b_attr_str(struct attn_builder *b, const char *s) {
  return mlirStringAttrGet(b->ctx, str(s));
}

MlirAttribute attn_b_attr_unit(struct attn_builder *b) {
  return mlirUnitAttrGet(b->ctx);
}

MlirAttribute attn_b_attr_type(struct attn_builder *b, MlirType t) {
  (void)b;
  return mlirTypeAttrGet(t);
}

MlirAttribute attn_b_attr_i64s(struct attn_builder *b, intptr_t n,
                               const int64_t *v) {
  return mlirDenseI64ArrayGet(b->ctx, n, v);
}

MlirAttribute attn_b_attr_strs(struct attn_builder *b, intptr_t n,
                               const char *const *s) {
  MlirAttribute elems[ATTN_B_MAX_VALUES];
  if (n > ATTN_B_MAX_VALUES) {
    attn_builder_fail(
        b, "too many strings for one array attribute (a bug in attn)");
    n = 0;
  }
  for (intptr_t i = 0; i < n; ++i)
    elems[i] = attn_b_attr_str(b, s[i]);
  return mlirArrayAttrGet(b->ctx, n, elems);
}

MlirType attn_b_memref(struct attn_builder *b, intptr_t rank,
                       const int64_t *shape, MlirType elem) {
  (void)b;
  return mlirMemRefTypeContiguousGet(elem, rank, shape, mlirAttributeGetNull());
}

//===-- Ops ---------------------------------------------------------------===//

MlirOperation attn_b_op(struct attn_builder *b, const char *name, intptr_t nres,
                        const MlirType *res, intptr_t nopd,
                        const MlirValue *opd, intptr_t nattr,
                        const MlirNamedAttribute *attrs, intptr_t nregions) {
  MlirOperation none = {NULL};
  for (intptr_t i = 0; i < nopd; ++i)
    if (mlirValueIsNull(opd[i])) {
      attn_builder_fail(
          b, "an operand of the kernel being built is missing (a bug in "
             "attn)");
      return none;
    }
  if (mlirBlockIsNull(b->block)) {
    attn_builder_fail(b, "the builder has no insertion point (a bug in attn)");
    return none;
  }
  MlirOperationState st = mlirOperationStateGet(str(name), b->loc);
  mlirOperationStateAddResults(&st, nres, res);
  mlirOperationStateAddOperands(&st, nopd, opd);
  mlirOperationStateAddAttributes(&st, nattr, attrs);
  MlirRegion regions[4];
  if (nregions > 4) {
    attn_builder_fail(b, "too many regions for one op (a bug in attn)");
    return none;
  }
  for (intptr_t i = 0; i < nregions; ++i)
    regions[i] = mlirRegionCreate();
  mlirOperationStateAddOwnedRegions(&st, nregions, regions);
  MlirOperation op = mlirOperationCreate(&st);
  if (mlirOperationIsNull(op)) { // MLIR said why at b->loc
    b->failed = true;
    return none;
  }
  if (mlirOperationIsNull(b->anchor))
    mlirBlockAppendOwnedOperation(b->block, op);
  else
    mlirBlockInsertOwnedOperationBefore(b->block, b->anchor, op);
  return op;
}

MlirValue attn_b_op1(struct attn_builder *b, const char *name, MlirType res,
                     intptr_t nopd, const MlirValue *opd, intptr_t nattr,
                     const MlirNamedAttribute *attrs) {
  return attn_b_result(attn_b_op(b, name, 1, &res, nopd, opd, nattr, attrs, 0),
                       0);
}

MlirValue attn_b_result(MlirOperation op, intptr_t i) {
  return mlirOperationIsNull(op) ? (MlirValue){NULL}
                                 : mlirOperationGetResult(op, i);
}

MlirBlock attn_b_region_block(MlirOperation op, intptr_t i) {
  return mlirRegionGetFirstBlock(mlirOperationGetRegion(op, i));
}

//===-- Constants and arithmetic ------------------------------------------===//

MlirValue attn_b_constant(struct attn_builder *b, MlirAttribute value) {
  MlirNamedAttribute a = attn_b_named(b, "value", value);
  return attn_b_op1(b, "arith.constant", mlirAttributeGetType(value), 0, NULL,
                    1, &a);
}

MlirValue attn_b_index(struct attn_builder *b, int64_t v) {
  return attn_b_constant(b, attn_b_attr_index(b, v));
}

MlirValue attn_b_i32(struct attn_builder *b, int64_t v) {
  return attn_b_constant(b, mlirIntegerAttrGet(b->t.i32, v));
}

MlirValue attn_b_i64(struct attn_builder *b, int64_t v) {
  return attn_b_constant(b, attn_b_attr_i64(b, v));
}

MlirValue attn_b_f32(struct attn_builder *b, float v) {
  return attn_b_constant(b, attn_b_attr_f32(b, v));
}

MlirValue attn_b_f64(struct attn_builder *b, double v) {
  return attn_b_constant(b, attn_b_attr_f64(b, v));
}

MlirValue attn_b_float(struct attn_builder *b, MlirType t, double v) {
  return mlirTypeIsAF64(t) ? attn_b_f64(b, v) : attn_b_f32(b, (float)v);
}

MlirValue attn_b_binary(struct attn_builder *b, const char *name, MlirValue x,
                        MlirValue y) {
  if (mlirValueIsNull(x) || mlirValueIsNull(y)) {
    attn_builder_fail(
        b, "an operand of the kernel being built is missing (a bug in "
           "attn)");
    return (MlirValue){NULL};
  }
  MlirValue opd[] = {x, y};
  return attn_b_op1(b, name, mlirValueGetType(x), 2, opd, 0, NULL);
}

MlirValue attn_b_unary(struct attn_builder *b, const char *name, MlirValue x) {
  if (mlirValueIsNull(x)) {
    attn_builder_fail(
        b, "an operand of the kernel being built is missing (a bug in "
           "attn)");
    return (MlirValue){NULL};
  }
  return attn_b_op1(b, name, mlirValueGetType(x), 1, &x, 0, NULL);
}

#define BINARY(fn, op)                                                         \
  MlirValue fn(struct attn_builder *b, MlirValue x, MlirValue y) {             \
    return attn_b_binary(b, op, x, y);                                         \
  }
BINARY(attn_b_addi, "arith.addi")
BINARY(attn_b_subi, "arith.subi")
BINARY(attn_b_muli, "arith.muli")
BINARY(attn_b_divui, "arith.divui")
BINARY(attn_b_remui, "arith.remui")
BINARY(attn_b_minui, "arith.minui")
BINARY(attn_b_maxui, "arith.maxui")
BINARY(attn_b_addf, "arith.addf")
BINARY(attn_b_subf, "arith.subf")
BINARY(attn_b_mulf, "arith.mulf")
BINARY(attn_b_divf, "arith.divf")
BINARY(attn_b_maxnumf, "arith.maxnumf")
BINARY(attn_b_andi, "arith.andi")
BINARY(attn_b_ori, "arith.ori")
BINARY(attn_b_xori, "arith.xori")
BINARY(attn_b_shli, "arith.shli")
BINARY(attn_b_ceildivui, "arith.ceildivui")
#undef BINARY

MlirValue attn_b_negf(struct attn_builder *b, MlirValue x) {
  return attn_b_unary(b, "arith.negf", x);
}

MlirValue attn_b_absi(struct attn_builder *b, MlirValue x) {
  MlirValue zero = attn_b_constant(b, mlirIntegerAttrGet(mlirValueGetType(x), 0));
  return attn_b_binary(b, "arith.maxsi", x, attn_b_subi(b, zero, x));
}

MlirValue attn_b_fma(struct attn_builder *b, MlirValue x, MlirValue y,
                     MlirValue z) {
  MlirValue opd[] = {x, y, z};
  MlirType t = mlirValueIsNull(x) ? b->t.f32 : mlirValueGetType(x);
  return attn_b_op1(b, "math.fma", t, 3, opd, 0, NULL);
}

static MlirValue compare(struct attn_builder *b, const char *name, int pred,
                         MlirValue x, MlirValue y) {
  MlirValue opd[] = {x, y};
  MlirNamedAttribute a = attn_b_named(b, "predicate", attn_b_attr_i64(b, pred));
  return attn_b_op1(b, name, b->t.i1, 2, opd, 1, &a);
}

MlirValue attn_b_cmpi(struct attn_builder *b, enum attn_b_cmpi pred,
                      MlirValue x, MlirValue y) {
  return compare(b, "arith.cmpi", (int)pred, x, y);
}

MlirValue attn_b_cmpf(struct attn_builder *b, enum attn_b_cmpf pred,
                      MlirValue x, MlirValue y) {
  return compare(b, "arith.cmpf", (int)pred, x, y);
}

MlirValue attn_b_select(struct attn_builder *b, MlirValue c, MlirValue x,
                        MlirValue y) {
  MlirValue opd[] = {c, x, y};
  MlirType t = mlirValueIsNull(x) ? b->t.f32 : mlirValueGetType(x);
  return attn_b_op1(b, "arith.select", t, 3, opd, 0, NULL);
}

MlirValue attn_b_cast(struct attn_builder *b, const char *name, MlirValue x,
                      MlirType to) {
  return attn_b_op1(b, name, to, 1, &x, 0, NULL);
}

//===-- Structured control flow -------------------------------------------===//

/// Emits `name` (a terminator) of vals[0..n) at the insertion point.
static void terminate(struct attn_builder *b, const char *name, intptr_t n,
                      const MlirValue *vals) {
  attn_b_op(b, name, 0, NULL, n, vals, 0, NULL, 0);
}

static void enter(struct attn_builder *b, MlirBlock block, MlirBlock *outer,
                  MlirOperation *outer_anchor) {
  *outer = b->block;
  *outer_anchor = b->anchor;
  attn_builder_at_end(b, block);
  ++b->depth;
}

static void leave(struct attn_builder *b, MlirBlock outer,
                  MlirOperation outer_anchor) {
  b->block = outer;
  b->anchor = outer_anchor;
  --b->depth;
}

void attn_b_for_open(struct attn_builder *b, struct attn_b_for *f, MlirValue lo,
                     MlirValue hi, MlirValue step, intptr_t n,
                     const MlirValue *init) {
  memset(f, 0, sizeof *f);
  MlirValue opd[ATTN_B_MAX_VALUES + 3];
  MlirType tys[ATTN_B_MAX_VALUES + 1];
  MlirLocation locs[ATTN_B_MAX_VALUES + 1];
  if (n > ATTN_B_MAX_VALUES) {
    attn_builder_fail(b, "too many loop-carried values (a bug in attn)");
    n = 0;
  }
  opd[0] = lo, opd[1] = hi, opd[2] = step;
  for (intptr_t i = 0; i < n; ++i)
    opd[3 + i] = init[i];
  f->n = n;
  tys[0] = mlirValueIsNull(lo) ? b->t.index : mlirValueGetType(lo);
  locs[0] = b->loc;
  for (intptr_t i = 0; i < n; ++i) {
    tys[1 + i] =
        mlirValueIsNull(init[i]) ? b->t.f32 : mlirValueGetType(init[i]);
    locs[1 + i] = b->loc;
  }
  f->op = attn_b_op(b, "scf.for", n, tys + 1, 3 + n, opd, 0, NULL, 1);
  f->outer_block = b->block;
  f->outer_anchor = b->anchor;
  if (mlirOperationIsNull(f->op)) {
    ++b->depth; // attn_b_for_close still closes it
    return;
  }
  MlirBlock body = mlirBlockCreate(1 + n, tys, locs);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(f->op, 0), body);
  f->iv = mlirBlockGetArgument(body, 0);
  for (intptr_t i = 0; i < n; ++i)
    f->args[i] = mlirBlockGetArgument(body, 1 + i);
  enter(b, body, &f->outer_block, &f->outer_anchor);
}

void attn_b_for_close(struct attn_builder *b, struct attn_b_for *f, intptr_t n,
                      const MlirValue *yields) {
  if (!mlirOperationIsNull(f->op)) {
    if (n != f->n)
      attn_builder_fail(
          b, "a loop yields a different number of values than it carries "
             "(a bug in attn)");
    else
      terminate(b, "scf.yield", n, yields);
    for (intptr_t i = 0; i < f->n; ++i)
      f->results[i] = mlirOperationGetResult(f->op, i);
  }
  leave(b, f->outer_block, f->outer_anchor);
}

void attn_b_if_open(struct attn_builder *b, struct attn_b_if *s, MlirValue cond,
                    intptr_t n, const MlirType *types, bool has_else) {
  memset(s, 0, sizeof *s);
  if (n > ATTN_B_MAX_VALUES || (n > 0 && !has_else)) {
    attn_builder_fail(
        b, n > 0 ? "an scf.if with results needs an else region (a bug in "
                   "attn)"
                 : "too many results for one scf.if (a bug in attn)");
    n = 0;
  }
  s->n = n;
  s->has_else = has_else;
  s->op = attn_b_op(b, "scf.if", n, types, 1, &cond, 0, NULL, 2);
  s->outer_block = b->block;
  s->outer_anchor = b->anchor;
  if (mlirOperationIsNull(s->op)) {
    ++b->depth;
    return;
  }
  MlirBlock then = mlirBlockCreate(0, NULL, NULL);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(s->op, 0), then);
  if (has_else)
    mlirRegionAppendOwnedBlock(mlirOperationGetRegion(s->op, 1),
                               mlirBlockCreate(0, NULL, NULL));
  enter(b, then, &s->outer_block, &s->outer_anchor);
}

static void if_yield(struct attn_builder *b, struct attn_b_if *s, intptr_t n,
                     const MlirValue *yields) {
  if (mlirOperationIsNull(s->op))
    return;
  if (n != s->n)
    attn_builder_fail(
        b, "an scf.if region yields a different number of values than the "
           "op has results (a bug in attn)");
  else
    terminate(b, "scf.yield", n, yields);
}

void attn_b_if_else(struct attn_builder *b, struct attn_b_if *s, intptr_t n,
                    const MlirValue *yields) {
  if (!s->has_else || s->in_else) {
    attn_builder_fail(
        b, "attn_b_if_else on an scf.if without an else region still to "
           "write (a bug in attn)");
    return;
  }
  if_yield(b, s, n, yields);
  s->in_else = true;
  if (!mlirOperationIsNull(s->op))
    attn_builder_at_end(b, attn_b_region_block(s->op, 1));
}

void attn_b_if_close(struct attn_builder *b, struct attn_b_if *s, intptr_t n,
                     const MlirValue *yields) {
  if (s->has_else && !s->in_else)
    attn_builder_fail(
        b, "an scf.if was closed before its else region was written (a bug "
           "in attn)");
  else
    if_yield(b, s, n, yields);
  for (intptr_t i = 0; !mlirOperationIsNull(s->op) && i < s->n; ++i)
    s->results[i] = mlirOperationGetResult(s->op, i);
  leave(b, s->outer_block, s->outer_anchor);
}

/// Makes function op `name` with the attributes attrs and one region whose
/// entry block takes nargs arguments of types; new ops go into that block
/// (func.func and gpu.func alike).
static void open_function(struct attn_builder *b, struct attn_b_func *f,
                          const char *name, intptr_t nattr,
                          const MlirNamedAttribute *attrs, intptr_t nargs,
                          const MlirType *types) {
  MlirLocation locs[ATTN_B_MAX_VALUES];
  f->op = attn_b_op(b, name, 0, NULL, 0, NULL, nattr, attrs, 1);
  f->outer_block = b->block;
  f->outer_anchor = b->anchor;
  if (mlirOperationIsNull(f->op)) {
    ++b->depth; // the close helper still closes it
    return;
  }
  for (intptr_t i = 0; i < nargs; ++i)
    locs[i] = b->loc;
  f->entry = mlirBlockCreate(nargs, types, locs);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(f->op, 0), f->entry);
  enter(b, f->entry, &f->outer_block, &f->outer_anchor);
}

void attn_b_func_open(struct attn_builder *b, struct attn_b_func *f,
                      const char *name, intptr_t nargs, const MlirType *types,
                      intptr_t nres, const MlirType *res, intptr_t nattr,
                      const MlirNamedAttribute *attrs) {
  memset(f, 0, sizeof *f);
  MlirNamedAttribute all[ATTN_B_MAX_VALUES];
  if (nattr + 2 > ATTN_B_MAX_VALUES || nargs > ATTN_B_MAX_VALUES) {
    attn_builder_fail(
        b, "too many attributes or arguments for one function (a bug in "
           "attn)");
    nattr = nargs = 0;
  }
  all[0] = attn_b_named(b, "sym_name", attn_b_attr_str(b, name));
  all[1] = attn_b_named(
      b, "function_type",
      mlirTypeAttrGet(mlirFunctionTypeGet(b->ctx, nargs, types, nres, res)));
  for (intptr_t i = 0; i < nattr; ++i)
    all[2 + i] = attrs[i];
  open_function(b, f, "func.func", 2 + nattr, all, nargs, types);
}

MlirValue attn_b_func_arg(const struct attn_b_func *f, intptr_t i) {
  return mlirBlockIsNull(f->entry) ? (MlirValue){NULL}
                                   : mlirBlockGetArgument(f->entry, i);
}

void attn_b_func_close(struct attn_builder *b, struct attn_b_func *f,
                       intptr_t n, const MlirValue *vals) {
  if (!mlirOperationIsNull(f->op))
    terminate(b, "func.return", n, vals);
  leave(b, f->outer_block, f->outer_anchor);
}

//===-- Memory and GPU ops ------------------------------------------------===//

MlirValue attn_b_load(struct attn_builder *b, MlirValue memref, intptr_t n,
                      const MlirValue *indices) {
  MlirValue opd[ATTN_B_MAX_VALUES + 1];
  if (mlirValueIsNull(memref) || n > ATTN_B_MAX_VALUES) {
    attn_builder_fail(b, mlirValueIsNull(memref)
                             ? "an operand of the kernel being built "
                               "is missing (a bug in attn)"
                             : "too many indices (a bug in attn)");
    return (MlirValue){NULL};
  }
  opd[0] = memref;
  for (intptr_t i = 0; i < n; ++i)
    opd[1 + i] = indices[i];
  MlirType elem = mlirShapedTypeGetElementType(mlirValueGetType(memref));
  return attn_b_op1(b, "memref.load", elem, 1 + n, opd, 0, NULL);
}

void attn_b_store(struct attn_builder *b, MlirValue value, MlirValue memref,
                  intptr_t n, const MlirValue *indices) {
  MlirValue opd[ATTN_B_MAX_VALUES + 2];
  if (n > ATTN_B_MAX_VALUES) {
    attn_builder_fail(b, "too many indices (a bug in attn)");
    return;
  }
  opd[0] = value, opd[1] = memref;
  for (intptr_t i = 0; i < n; ++i)
    opd[2 + i] = indices[i];
  attn_b_op(b, "memref.store", 0, NULL, 2 + n, opd, 0, NULL, 0);
}

MlirValue attn_b_alloca(struct attn_builder *b, MlirType t) {
  int32_t segments[2] = {0, 0}; // dynamic sizes, symbols
  MlirNamedAttribute seg = attn_b_named(
      b, "operandSegmentSizes", mlirDenseI32ArrayGet(b->ctx, 2, segments));
  return attn_b_op1(b, "memref.alloca", t, 0, NULL, 1, &seg);
}

MlirOperation attn_b_call(struct attn_builder *b, const char *callee,
                          intptr_t n, const MlirValue *args, intptr_t nres,
                          const MlirType *res) {
  MlirNamedAttribute a =
      attn_b_named(b, "callee", mlirFlatSymbolRefAttrGet(b->ctx, str(callee)));
  return attn_b_op(b, "func.call", nres, res, n, args, 1, &a, 0);
}

/// An op `name` with a #gpu<dim d> dimension and an index result.
static MlirValue gpu_dim_op(struct attn_builder *b, const char *name,
                            enum attn_b_dim dim) {
  static const char *const dims[] = {"#gpu<dim x>", "#gpu<dim y>",
                                     "#gpu<dim z>"};
  MlirAttribute d = mlirAttributeParseGet(b->ctx, str(dims[dim]));
  if (mlirAttributeIsNull(d)) {
    attn_builder_fail(b, "cannot make a #gpu<dim> attribute (a bug in attn)");
    return (MlirValue){NULL};
  }
  MlirNamedAttribute a = attn_b_named(b, "dimension", d);
  return attn_b_op1(b, name, b->t.index, 0, NULL, 1, &a);
}

MlirValue attn_b_thread_id(struct attn_builder *b, enum attn_b_dim dim) {
  return gpu_dim_op(b, "gpu.thread_id", dim);
}

MlirValue attn_b_block_dim(struct attn_builder *b, enum attn_b_dim dim) {
  return gpu_dim_op(b, "gpu.block_dim", dim);
}

MlirValue attn_b_block_id(struct attn_builder *b, enum attn_b_dim dim) {
  return gpu_dim_op(b, "gpu.block_id", dim);
}

void attn_b_barrier(struct attn_builder *b) {
  attn_b_op(b, "gpu.barrier", 0, NULL, 0, NULL, 0, NULL, 0);
}

MlirAttribute attn_b_attr_workgroup(struct attn_builder *b) {
  MlirAttribute a =
      mlirAttributeParseGet(b->ctx, str("#gpu.address_space<workgroup>"));
  if (mlirAttributeIsNull(a))
    attn_builder_fail(
        b, "cannot make the workgroup address space (a bug in attn)");
  return a;
}

MlirType attn_b_memref_in(struct attn_builder *b, intptr_t rank,
                          const int64_t *shape, MlirType elem,
                          MlirAttribute space) {
  (void)b;
  return mlirMemRefTypeContiguousGet(elem, rank, shape, space);
}

void attn_b_gpu_func_open(struct attn_builder *b, struct attn_b_func *f,
                          const char *name, intptr_t nargs,
                          const MlirType *types, intptr_t nwg,
                          const MlirType *wg, intptr_t nattr,
                          const MlirNamedAttribute *attrs) {
  memset(f, 0, sizeof *f);
  MlirNamedAttribute all[ATTN_B_MAX_VALUES];
  MlirType block[ATTN_B_MAX_VALUES];
  if (nattr + 4 > ATTN_B_MAX_VALUES || nargs + nwg > ATTN_B_MAX_VALUES) {
    attn_builder_fail(
        b, "too many attributes, arguments or workgroup buffers for one "
           "gpu.func (a bug in attn)");
    nattr = nargs = nwg = 0;
  }
  all[0] = attn_b_named(b, "sym_name", attn_b_attr_str(b, name));
  all[1] = attn_b_named(
      b, "function_type",
      mlirTypeAttrGet(mlirFunctionTypeGet(b->ctx, nargs, types, 0, NULL)));
  all[2] = attn_b_named(b, "gpu.kernel", attn_b_attr_unit(b));
  all[3] = attn_b_named(b, "workgroup_attributions", attn_b_attr_i64(b, nwg));
  for (intptr_t i = 0; i < nattr; ++i)
    all[4 + i] = attrs[i];
  for (intptr_t i = 0; i < nargs + nwg; ++i)
    block[i] = i < nargs ? types[i] : wg[i - nargs];
  open_function(b, f, "gpu.func", 4 + nattr, all, nargs + nwg, block);
}

void attn_b_gpu_func_close(struct attn_builder *b, struct attn_b_func *f) {
  if (!mlirOperationIsNull(f->op))
    terminate(b, "gpu.return", 0, NULL);
  leave(b, f->outer_block, f->outer_anchor);
}
