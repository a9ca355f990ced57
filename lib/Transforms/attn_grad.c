//===- attn_grad.c - attn-grad: derives the backward of each attention ----===//
//
// After attn-fuse, for every function @f whose body is one attn.fused op
// returning its result:
//
//   func.func @f(%q, %k, %v, [inputs], [captures]) -> tensor<BxHxNxDv> {
//     %o = "attn.fused"(...) {...} ({score_fn}, {mask_fn}) ; return %o
//   }
//   ==>
//   func.func @f(...) -> (tensor<BxHxNxDv>, tensor<BxHxNxf32>) {  // lse:
//                                         // f64 when q is f64, else f32
//     %o, %lse = "attn.fused"(...) {..., lse} ({score_fn}, {mask_fn})
//     return %o, %lse
//   }
//   func.func @f__grad(<f's arguments>, %out, %lse, %dout)
//       -> (tensor<q>, tensor<k>, tensor<v>) {
//     %dq, %dk, %dv = "attn.fused_grad"(<f's operands>, %out, %lse, %dout)
//         {<the forward's attributes>, operandSegmentSizes = array<i32: ...,
//          1, 1, 1>} ({score_fn}, {mask_fn})     // the regions cloned
//     return %dq, %dk, %dv
//   }
//
// @f__grad is a clone of @f (so the bodies' captures stay the arguments
// they were) with three more arguments. It differentiates what attn-tile
// computes with respect to q, k and v: scale, causal, window, ALiBi,
// softcap, the gate, the document mask, mask_fn bodies, GQA, RoPE at
// offsets or explicit positions, and score_fn bodies whose every op has a
// derivative rule (attn_grad_body.c, which attn-tile uses to build the
// derivative). Gradients into captured tensors are opt-in: an argument of
// @f marked {attn.grad} (the gate's table, or a float tensor the score_fn
// body reads) adds a result after dv, of its shape and the compute type,
// and attn.fused_grad names each in grads ("gate", "capture<i>" with
// captures numbered in argument order, as attn-tile names them) with
// resultSegmentSizes = array<i32: 1, 1, 1, then one 1 per grad, zeros>:
//
//   func.func @f(..., %g {attn.grad}, %table {attn.grad}) -> ...
//   ==> @f__grad(...) -> (dq, dk, dv, tensor<g's shape x f32>,
//                         tensor<table's shape x f32>)
//       "attn.fused_grad"(...) {grads = ["gate", "capture0"], ...}
//
// The segment ids and positions get no gradient, nor does a tensor only
// mask_fn reads (masks have none): {attn.grad} there, on q, k or v, on an
// integer tensor or on an argument nothing reads is an error at the
// argument. Refused too, with a located error: an op without a rule in a
// score_fn body ("attn-grad: no derivative for 'math.foo'"), q, k or v from
// attn.project, attn ops attn-fuse left unfused, an attn.fused already
// carrying lse, and a function @f__grad that exists already. Functions
// without attn ops (GEMMs) are left alone.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/body.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// The type of q's row log-sum-exp [B, H, N]: of the program's compute type
/// (f64 for an f64 program, f32 for f32, f16 and bf16).
static MlirType lse_type(MlirOperation fused) {
  MlirType qt = mlirValueGetType(mlirOperationGetOperand(fused, 0));
  int64_t q[8];
  attn_static_shape(qt, q);
  return mlirRankedTensorTypeGet(
      3, q, attn_compute_type(mlirShapedTypeGetElementType(qt)),
      mlirAttributeGetNull());
}

/// The most arguments a function attn-grad derives may take.
#define MAX_ARGS 64

static MlirNamedAttribute named(MlirContext ctx, const char *name,
                                MlirAttribute a) {
  return mlirNamedAttributeGet(
      mlirIdentifierGet(ctx, mlirStringRefCreateFromCString(name)), a);
}

/// The attn.fused op of func when its body is that op and the return of its
/// result; a null op (nothing to do) when func holds no attn op; sets *bad
/// after an error when it holds attn ops attn-grad does not take.
static MlirOperation find_forward(MlirOperation func, bool *bad) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  MlirOperation fused = {NULL};
  if (mlirBlockIsNull(body))
    return fused;
  bool attn = false;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
    if (n.length > 5 && !strncmp(n.data, "attn.", 5))
      attn = true;
    if (attn_op_is(op, ATTN_OP_FUSED_GRAD))
      return (MlirOperation){NULL}; // a backward already
  }
  if (!attn)
    return fused;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    char name[64];
    attn_op_name(op, name, sizeof name);
    if (attn_op_is(op, ATTN_OP_PROJECT)) {
      *bad = true;
      attn_emit_errorf(op, "attn-grad: no backward for attn.project yet (q, "
                           "k and v must be function arguments)");
      return fused;
    }
    if (attn_op_is(op, ATTN_OP_FUSED) && mlirOperationIsNull(fused)) {
      fused = op;
      continue;
    }
    if (attn_op_is(op, ATTN_OP_FUSED_DECODE)) {
      *bad = true;
      attn_emit_errorf(op, "attn-grad: attn.fused_decode has no backward "
                           "(decode over a KV cache is inference)");
      return fused;
    }
    if (attn_op_is(op, "func.return"))
      continue;
    *bad = true;
    attn_emit_errorf(op,
                     !strncmp(name, "attn.", 5) &&
                             !attn_op_is(op, ATTN_OP_FUSED)
                         ? "attn-grad: '%s' is not part of an attn.fused op "
                           "(run attn-fuse first)"
                         : "attn-grad differentiates functions whose body is "
                           "one attn.fused op and the return of its result, "
                           "found '%s'",
                     name);
    return fused;
  }
  if (mlirOperationIsNull(fused))
    return fused;
  if (!mlirAttributeIsNull(attn_attr_get(fused, ATTN_FUSED_LSE_ATTR))) {
    *bad = true;
    attn_emit_errorf(fused, "attn-grad: attn.fused already has lse "
                            "(attn-grad runs once)");
    return fused;
  }
  MlirOperation ret = mlirBlockGetTerminator(body);
  if (mlirOperationIsNull(ret) || mlirOperationGetNumOperands(ret) != 1 ||
      !mlirValueEqual(mlirOperationGetOperand(ret, 0),
                      mlirOperationGetResult(fused, 0))) {
    *bad = true;
    attn_emit_errorf(func, "attn-grad: the function must return the result "
                           "of attn.fused and nothing else");
  }
  return fused;
}

/// Sets func's function_type to its arguments' types -> res[0..n).
static void set_function_type(MlirOperation func, intptr_t n,
                              const MlirType *res) {
  MlirContext ctx = mlirOperationGetContext(func);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  intptr_t nargs = mlirBlockGetNumArguments(body);
  MlirType in[MAX_ARGS + 3];
  for (intptr_t i = 0; i < nargs && i < MAX_ARGS + 3; ++i)
    in[i] = mlirValueGetType(mlirBlockGetArgument(body, i));
  mlirOperationSetAttributeByName(
      func, mlirStringRefCreateFromCString("function_type"),
      mlirTypeAttrGet(mlirFunctionTypeGet(ctx, nargs, in, n, res)));
}

/// Makes op `name` before old with old's operands (then extra[0..nextra)),
/// its attributes (operandSegmentSizes replaced by segments when given,
/// plus the unit attribute add when not NULL), results res[0..nres) and
/// old's regions moved in. Returns it.
static MlirOperation remake(MlirOperation old, const char *name,
                            intptr_t nextra, const MlirValue *extra,
                            MlirAttribute segments, const char *add,
                            intptr_t nres, const MlirType *res) {
  MlirContext ctx = mlirOperationGetContext(old);
  MlirOperationState st = mlirOperationStateGet(
      mlirStringRefCreateFromCString(name), mlirOperationGetLocation(old));
  intptr_t nops = mlirOperationGetNumOperands(old);
  MlirValue ops[MAX_ARGS + 3];
  for (intptr_t i = 0; i < nops && i < MAX_ARGS; ++i)
    ops[i] = mlirOperationGetOperand(old, i);
  for (intptr_t i = 0; i < nextra; ++i)
    ops[nops + i] = extra[i];
  mlirOperationStateAddOperands(&st, nops + nextra, ops);
  mlirOperationStateAddResults(&st, nres, res);
  intptr_t nattrs = mlirOperationGetNumAttributes(old);
  MlirNamedAttribute *attrs = malloc(sizeof *attrs * (size_t)(nattrs + 1));
  intptr_t na = 0;
  if (attrs) {
    for (intptr_t i = 0; i < nattrs; ++i) {
      MlirNamedAttribute a = mlirOperationGetAttribute(old, i);
      if (!mlirAttributeIsNull(segments) &&
          attn_str_eq(mlirIdentifierStr(a.name), "operandSegmentSizes"))
        a.attribute = segments;
      attrs[na++] = a;
    }
    if (add)
      attrs[na++] = named(ctx, add, mlirUnitAttrGet(ctx));
    mlirOperationStateAddAttributes(&st, na, attrs);
  }
  MlirRegion regions[2] = {mlirRegionCreate(), mlirRegionCreate()};
  mlirOperationStateAddOwnedRegions(&st, 2, regions);
  MlirOperation op = mlirOperationCreate(&st);
  free(attrs);
  for (intptr_t r = 0; r < 2 && r < mlirOperationGetNumRegions(old); ++r)
    mlirRegionTakeBody(mlirOperationGetRegion(op, r),
                       mlirOperationGetRegion(old, r));
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(old), old, op);
  return op;
}

/// Replaces func's terminator by func.return of vals[0..n).
static void set_return(MlirOperation func, intptr_t n, const MlirValue *vals) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  MlirOperation ret = mlirBlockGetTerminator(body);
  MlirOperationState st = mlirOperationStateGet(
      mlirStringRefCreateFromCString("func.return"),
      mlirOperationGetLocation(ret));
  mlirOperationStateAddOperands(&st, n, vals);
  MlirOperation r = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(body, ret, r);
  mlirOperationDestroy(ret);
}

/// The gradients @f asks for: the function arguments marked {attn.grad},
/// in argument order, each with what attn.fused_grad's "grads" calls it.
struct wanted {
  int n;
  int arg[ATTN_MAX_GRADS];    // function argument index
  int target[ATTN_MAX_GRADS]; // ATTN_GRAD_GATE or the capture's index
};

/// True when function argument i of func carries {attn.grad}.
static bool arg_wants_grad(MlirOperation func, intptr_t i) {
  MlirAttribute all = attn_attr_get(func, "arg_attrs");
  if (mlirAttributeIsNull(all) || !mlirAttributeIsAArray(all) ||
      i >= mlirArrayAttrGetNumElements(all))
    return false;
  MlirAttribute d = mlirArrayAttrGetElement(all, i);
  return mlirAttributeIsADictionary(d) &&
         !mlirAttributeIsNull(mlirDictionaryAttrGetElementByName(
             d, mlirStringRefCreateFromCString(ATTN_ARG_GRAD_ATTR)));
}

/// True when body (maybe null) reads v.
static bool body_reads(MlirBlock body, MlirValue v) {
  MlirValue caps[MAX_ARGS];
  int n = attn_body_captures(body, caps, MAX_ARGS);
  for (int i = 0; i < n && i < MAX_ARGS; ++i)
    if (mlirValueEqual(caps[i], v))
      return true;
  return false;
}

/// Fills w from func's {attn.grad} arguments: the gate operand, or a
/// float tensor the score_fn body reads (captures numbered in argument
/// order, as attn-tile names them). False after an error at the argument
/// for any other: q, k, v, segment ids, positions, an integer tensor, one
/// only mask_fn reads (masks have no gradient) or one nothing reads.
static bool find_wanted(MlirOperation func, MlirOperation fused,
                        const struct attn_fused_config *c, struct wanted *w) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  MlirBlock score = attn_fused_score_fn(fused);
  MlirBlock mask = attn_fused_mask_fn(fused);
  int ncap = 0;
  w->n = 0;
  for (intptr_t i = 0, n = mlirBlockGetNumArguments(body); i < n; ++i) {
    MlirValue a = mlirBlockGetArgument(body, i);
    intptr_t op_index = -1;
    for (intptr_t o = 0, no = mlirOperationGetNumOperands(fused); o < no; ++o)
      if (mlirValueEqual(mlirOperationGetOperand(fused, o), a))
        op_index = o;
    int capture = op_index < 0 ? ncap++ : -1;
    if (!arg_wants_grad(func, i))
      continue;
    MlirLocation loc = mlirValueGetLocation(a);
    char ty[128];
    attn_type_str(mlirValueGetType(a), ty, sizeof ty);
    if (op_index >= 0 && op_index < 3)
      return attn_emit_error_atf(loc, "attn-grad: {attn.grad} on %s: q, k "
                                      "and v always get their gradients",
                                 op_index == 0   ? "q"
                                 : op_index == 1 ? "k"
                                                 : "v");
    if (op_index >= 0 && op_index != c->extra[ATTN_EXTRA_GATE])
      return attn_emit_error_atf(loc, "attn-grad: {attn.grad} on argument "
                                      "%ld, which is not a float tensor "
                                      "read by the program (segment ids "
                                      "and positions have no gradient)",
                                 (long)i);
    if (op_index < 0) {
      MlirType e = mlirTypeIsATensor(mlirValueGetType(a))
                       ? mlirShapedTypeGetElementType(mlirValueGetType(a))
                       : (MlirType){NULL};
      bool in_score = !mlirBlockIsNull(score) && body_reads(score, a);
      bool in_mask = !mlirBlockIsNull(mask) && body_reads(mask, a);
      if (mlirTypeIsNull(e) || !mlirTypeIsAFloat(e))
        return attn_emit_error_atf(loc, "attn-grad: {attn.grad} on "
                                        "argument %ld, which is not a "
                                        "float tensor read by the program "
                                        "(found %s)",
                                   (long)i, ty);
      if (!in_score)
        return attn_emit_error_atf(
            loc,
            in_mask ? "attn-grad: {attn.grad} on argument %ld, which only "
                      "a mask_mod reads (masks have no gradient)"
                    : "attn-grad: {attn.grad} on argument %ld, which is not "
                      "a float tensor read by the program",
            (long)i);
    }
    if (w->n == ATTN_MAX_GRADS)
      return attn_emit_error_atf(loc, "attn-grad: at most %d arguments may "
                                      "ask for a gradient ({attn.grad})",
                                 ATTN_MAX_GRADS);
    w->arg[w->n] = (int)i;
    w->target[w->n++] = op_index >= 0 ? ATTN_GRAD_GATE : capture;
  }
  return true;
}

/// The type of the gradient of v: v's shape, the program's compute type.
static MlirType grad_type(MlirOperation fused, MlirValue v) {
  MlirType qt = mlirValueGetType(mlirOperationGetOperand(fused, 0));
  int64_t d[8];
  int rank = attn_static_shape(mlirValueGetType(v), d);
  return mlirRankedTensorTypeGet(
      rank, d, attn_compute_type(mlirShapedTypeGetElementType(qt)),
      mlirAttributeGetNull());
}

/// Turns grad (a clone of @f) into @f__grad: three more arguments (out,
/// lse, dout), attn.fused_grad in place of attn.fused, and after dq, dk,
/// dv the gradients w asks for ("grads", resultSegmentSizes).
static void make_backward(MlirOperation grad, const char *name,
                          const struct wanted *w) {
  MlirContext ctx = mlirOperationGetContext(grad);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(grad, 0));
  MlirOperation fused = {NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op) && mlirOperationIsNull(fused);
       op = mlirOperationGetNextInBlock(op))
    if (attn_op_is(op, ATTN_OP_FUSED))
      fused = op;
  MlirLocation loc = mlirOperationGetLocation(fused);
  MlirType out_ty = mlirValueGetType(mlirOperationGetResult(fused, 0));
  MlirType lse_ty = lse_type(fused);
  MlirValue extra[3] = {mlirBlockAddArgument(body, out_ty, loc),
                        mlirBlockAddArgument(body, lse_ty, loc),
                        mlirBlockAddArgument(body, out_ty, loc)};
  // operandSegmentSizes: the forward's, then 1, 1, 1.
  MlirAttribute seg = attn_attr_get(fused, "operandSegmentSizes");
  int32_t sizes[3 + ATTN_NUM_EXTRAS + ATTN_FUSED_GRAD_TAIL] = {1, 1, 1};
  for (int i = 3; i < 3 + ATTN_NUM_EXTRAS; ++i)
    sizes[i] = !mlirAttributeIsNull(seg) && mlirAttributeIsADenseI32Array(seg)
                   ? mlirDenseI32ArrayGetElement(seg, i)
                   : 0;
  for (int i = 0; i < ATTN_FUSED_GRAD_TAIL; ++i)
    sizes[3 + ATTN_NUM_EXTRAS + i] = 1;
  MlirAttribute segments = mlirDenseI32ArrayGet(
      ctx, 3 + ATTN_NUM_EXTRAS + ATTN_FUSED_GRAD_TAIL, sizes);
  MlirType res[3 + ATTN_MAX_GRADS];
  for (int i = 0; i < 3; ++i)
    res[i] = mlirValueGetType(mlirOperationGetOperand(fused, i));
  for (int i = 0; i < w->n; ++i)
    res[3 + i] = grad_type(fused, mlirBlockGetArgument(body, w->arg[i]));
  int nres = 3 + w->n;
  MlirOperation g = remake(fused, ATTN_OP_FUSED_GRAD, 3, extra, segments,
                           NULL, nres, res);
  int32_t rs[3 + ATTN_MAX_GRADS];
  for (int i = 0; i < 3 + ATTN_MAX_GRADS; ++i)
    rs[i] = i < nres;
  mlirOperationSetAttributeByName(
      g, mlirStringRefCreateFromCString("resultSegmentSizes"),
      mlirDenseI32ArrayGet(ctx, 3 + ATTN_MAX_GRADS, rs));
  if (w->n) {
    MlirAttribute names[ATTN_MAX_GRADS];
    for (int i = 0; i < w->n; ++i) {
      char t[24];
      if (w->target[i] == ATTN_GRAD_GATE)
        snprintf(t, sizeof t, "gate");
      else
        snprintf(t, sizeof t, "capture%d", w->target[i]);
      names[i] = mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(t));
    }
    mlirOperationSetAttributeByName(
        g, mlirStringRefCreateFromCString(ATTN_FUSED_GRAD_GRADS_ATTR),
        mlirArrayAttrGet(ctx, w->n, names));
  }
  MlirValue vals[3 + ATTN_MAX_GRADS];
  for (int i = 0; i < nres; ++i)
    vals[i] = mlirOperationGetResult(g, i);
  set_return(grad, nres, vals);
  mlirOperationDestroy(fused);
  set_function_type(grad, nres, res);
  // The marks were @f's; the backward's arguments are more and carry none.
  mlirOperationRemoveAttributeByName(
      grad, mlirStringRefCreateFromCString("arg_attrs"));
  mlirOperationSetAttributeByName(
      grad, mlirStringRefCreateFromCString("sym_name"),
      mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(name)));
}

static bool grad_function(MlirOperation module, MlirOperation func) {
  bool bad = false;
  MlirOperation fused = find_forward(func, &bad);
  if (bad)
    return false;
  if (mlirOperationIsNull(fused))
    return true;
  struct attn_fused_config c;
  if (!attn_fused_get_config(fused, &c))
    return attn_emit_errorf(fused, "malformed attn.fused attributes");
  MlirBlock fbody = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockGetNumArguments(fbody) > MAX_ARGS)
    return attn_emit_errorf(func, "attn-grad takes at most %d function "
                                  "arguments",
                            MAX_ARGS);
  for (intptr_t i = 0, n = mlirOperationGetNumOperands(fused); i < n; ++i) {
    MlirValue v = mlirOperationGetOperand(fused, i);
    if (!mlirValueIsABlockArgument(v) ||
        !mlirBlockEqual(mlirBlockArgumentGetOwner(v), fbody))
      return attn_emit_errorf(fused, "attn-grad: operand %ld of attn.fused "
                                     "must be a function argument",
                              (long)i);
  }
  if (!attn_grad_body_check(attn_fused_score_fn(fused)))
    return false;
  struct wanted w;
  if (!find_wanted(func, fused, &c, &w))
    return false;
  MlirStringRef sym;
  if (!attn_attr_str(func, "sym_name", &sym))
    return attn_emit_errorf(func, "function has no name");
  char name[300];
  snprintf(name, sizeof name, "%.*s__grad", (int)sym.length, sym.data);
  if (attn_has_symbol(module, name))
    return attn_emit_errorf(func, "attn-grad: a symbol named '%s' exists "
                                  "already",
                            name);
  // The backward first, from the forward as it is.
  MlirOperation grad = mlirOperationClone(func);
  mlirBlockInsertOwnedOperationAfter(mlirOperationGetBlock(func), func, grad);
  make_backward(grad, name, &w);
  // The forward keeps the row log-sum-exp.
  MlirType res[2] = {mlirValueGetType(mlirOperationGetResult(fused, 0)),
                     lse_type(fused)};
  MlirOperation fwd = remake(fused, ATTN_OP_FUSED, 0, NULL,
                             (MlirAttribute){NULL}, ATTN_FUSED_LSE_ATTR, 2, res);
  MlirValue vals[2] = {mlirOperationGetResult(fwd, 0),
                       mlirOperationGetResult(fwd, 1)};
  set_return(func, 2, vals);
  mlirOperationDestroy(fused);
  set_function_type(func, 2, res);
  return true;
}

static bool attn_grad_run(MlirOperation module, const void *opts) {
  (void)opts;
  struct attn_op_list funcs = {0};
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (attn_op_is(op, "func.func"))
      attn_op_list_push(&funcs, op);
  bool ok = !funcs.failed;
  for (size_t i = 0; ok && i < funcs.n; ++i)
    ok = grad_function(module, funcs.ops[i]);
  free(funcs.ops);
  return ok;
}

const struct attn_pass_def attn_grad_pass = {
    .argument = "attn-grad",
    .alias = NULL,
    .description = "Derive the backward of each fused attention: the "
                   "forward keeps its row log-sum-exp (lse) and @f__grad "
                   "computes dq, dk, dv with attn.fused_grad",
    .run = attn_grad_run,
};
