//===- attn_grad_body.c - Derivatives of score_fn bodies (forward mode) ---===//
//
// The backward of a score modifier of any form needs d body / d score at the
// forward's input score. attn-grad checks that a body has one (every op a
// rule), and attn-tile builds it as tile.score_fn_grad's body: the body's
// ops cloned (the primal values) with, after each, the ops computing its
// tangent, seeded by the tangent of the score argument. A rule per op:
//
//   addf, subf, negf       t = ta +- tb, -ta
//   mulf, divf             t = ta b + a tb, (ta - y tb) / b
//   fma                    t = ta b + a tb + tc
//   maximumf, maxnumf      t = a >= b ? ta : tb   (minimumf, minnumf: <=)
//   select                 t = c ? tx : ty
//   extf, truncf           t converted alike
//   absf, copysign         t = ta copysign(1, a) (copysign(1, b))
//   exp, exp2              t = y ta (ln 2 y ta)
//   log, log2, log1p       t = ta / a (a ln 2, 1 + a)
//   tanh                   t = (1 - y^2) ta
//   sqrt, rsqrt            t = ta / (2 y), -y ta / (2 a)
//   sin, cos               t = cos(a) ta, -sin(a) ta
//   powf                   t = b a^(b-1) ta + y ln(a) tb
//   erf                    t = 2 / sqrt(pi) exp(-a^2) ta
//
// Constants, captures read by tensor.extract / memref.load (but the one
// read attn_grad_clone_tangent_at seeds, whose tangent is 1: the
// derivative with respect to a captured value, for its gradient), floor,
// ceil, integer-to-float conversions and
// every op without a float result have tangent 0 (a zero tangent is not
// built: the map has no entry). Tangents are only built where they are not
// zero, so powf's ln(a) term appears only when the exponent depends on the
// score. Any other op with a float result is refused with "attn-grad: no
// derivative for '<op>'" at the op.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "lib/IR/attn_builder.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/// ln 2 and 2 / sqrt(pi) (C11 has no M_LN2, M_PI).
#define LN2 0.69314718055994530942
#define TWO_OVER_SQRT_PI 1.12837916709551257390

/// The ops with a derivative rule (a float result that depends on their
/// float operands).
static const char *const rule_ops[] = {
    "arith.addf",     "arith.subf",    "arith.negf",    "arith.mulf",
    "arith.divf",     "math.fma",      "arith.maximumf", "arith.maxnumf",
    "arith.minimumf", "arith.minnumf", "arith.select",  "arith.extf",
    "arith.truncf",   "math.absf",     "math.copysign", "math.exp",
    "math.exp2",      "math.log",      "math.log2",     "math.log1p",
    "math.tanh",      "math.sqrt",     "math.rsqrt",    "math.sin",
    "math.cos",       "math.powf",     "math.erf"};

/// Ops with a float result whose tangent is 0.
static const char *const zero_ops[] = {
    "arith.constant", "arith.sitofp", "arith.uitofp", "math.floor",
    "math.ceil",      "tensor.extract", "memref.load"};

static bool in_list(MlirOperation op, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (attn_op_is(op, list[i]))
      return true;
  return false;
}

static bool has_float_result(MlirOperation op) {
  for (intptr_t i = 0, n = mlirOperationGetNumResults(op); i < n; ++i)
    if (mlirTypeIsAFloat(mlirValueGetType(mlirOperationGetResult(op, i))))
      return true;
  return false;
}

/// True when op has a rule, a zero tangent, or no float result.
static bool differentiable(MlirOperation op) {
  return !has_float_result(op) ||
         in_list(op, rule_ops, sizeof rule_ops / sizeof *rule_ops) ||
         in_list(op, zero_ops, sizeof zero_ops / sizeof *zero_ops);
}

bool attn_grad_body_check(MlirBlock body) {
  if (mlirBlockIsNull(body))
    return true;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    char name[64];
    if (!differentiable(op))
      return attn_emit_errorf(op, "attn-grad: no derivative for '%s'",
                              attn_op_name(op, name, sizeof name));
  }
  return true;
}

//===-- Building the tangents ---------------------------------------------===//

/// The tangent of source value v, or null (zero).
static MlirValue tan_of(const struct attn_b_map *t, MlirValue v) {
  MlirValue r = attn_b_map_get(t, v);
  return mlirValueEqual(r, v) ? (MlirValue){NULL} : r;
}

/// A float constant of type ty.
static MlirValue fconst(struct attn_builder *b, MlirType ty, double v) {
  return attn_b_constant(b, mlirFloatAttrDoubleGet(b->ctx, ty, v));
}

/// x * y where either may be null (zero): null when one is.
static MlirValue mul0(struct attn_builder *b, MlirValue x, MlirValue y) {
  if (mlirValueIsNull(x) || mlirValueIsNull(y))
    return (MlirValue){NULL};
  return attn_b_mulf(b, x, y);
}

/// x + y where either may be null (zero).
static MlirValue add0(struct attn_builder *b, MlirValue x, MlirValue y) {
  if (mlirValueIsNull(x))
    return y;
  if (mlirValueIsNull(y))
    return x;
  return attn_b_addf(b, x, y);
}

/// t, or a zero of type ty when t is null.
static MlirValue or_zero(struct attn_builder *b, MlirValue t, MlirType ty) {
  return mlirValueIsNull(t) ? fconst(b, ty, 0.0) : t;
}

/// copysign(1, x) of x's type.
static MlirValue sign_of(struct attn_builder *b, MlirValue x) {
  return attn_b_binary(b, "math.copysign", fconst(b, mlirValueGetType(x), 1.0),
                       x);
}

/// The tangent of op's result (y, its clone's image), from the images a,
/// bb, c of its operands and their tangents ta, tb, tc (null: zero). Null
/// when it is zero.
static MlirValue rule(struct attn_builder *b, MlirOperation op, MlirValue y,
                      const MlirValue *in, const MlirValue *t) {
  MlirType ty = mlirValueGetType(y);
  MlirValue a = in[0], bb = in[1], ta = t[0], tb = t[1], tc = t[2];
  MlirValue none = {NULL};
  if (attn_op_is(op, "arith.addf"))
    return add0(b, ta, tb);
  if (attn_op_is(op, "arith.subf"))
    return mlirValueIsNull(tb)   ? ta
           : mlirValueIsNull(ta) ? attn_b_negf(b, tb)
                                 : attn_b_subf(b, ta, tb);
  if (attn_op_is(op, "arith.negf"))
    return mlirValueIsNull(ta) ? none : attn_b_negf(b, ta);
  if (attn_op_is(op, "arith.mulf"))
    return add0(b, mul0(b, ta, bb), mul0(b, a, tb));
  if (attn_op_is(op, "arith.divf")) {
    MlirValue n = mlirValueIsNull(tb)   ? ta
                  : mlirValueIsNull(ta) ? attn_b_negf(b, attn_b_mulf(b, y, tb))
                                        : attn_b_subf(b, ta,
                                                      attn_b_mulf(b, y, tb));
    return mlirValueIsNull(n) ? none : attn_b_divf(b, n, bb);
  }
  if (attn_op_is(op, "math.fma"))
    return add0(b, add0(b, mul0(b, ta, bb), mul0(b, a, tb)), tc);
  bool max = attn_op_is(op, "arith.maximumf") || attn_op_is(op, "arith.maxnumf");
  if (max || attn_op_is(op, "arith.minimumf") ||
      attn_op_is(op, "arith.minnumf")) {
    if (mlirValueIsNull(ta) && mlirValueIsNull(tb))
      return none;
    MlirValue pick =
        attn_b_cmpf(b, max ? ATTN_B_F_OGE : ATTN_B_F_OLE, a, bb);
    return attn_b_select(b, pick, or_zero(b, ta, ty), or_zero(b, tb, ty));
  }
  if (attn_op_is(op, "arith.select")) {
    // Operands (cond, x, y): their tangents are t[0] (none), t[1], t[2].
    if (mlirValueIsNull(tb) && mlirValueIsNull(tc))
      return none;
    return attn_b_select(b, a, or_zero(b, tb, ty), or_zero(b, tc, ty));
  }
  if (mlirValueIsNull(ta) &&
      !(attn_op_is(op, "math.powf") && !mlirValueIsNull(tb)))
    return none; // every rule below is linear in ta (powf also in tb)
  if (attn_op_is(op, "arith.extf") || attn_op_is(op, "arith.truncf")) {
    char name[32];
    return attn_b_cast(b, attn_op_name(op, name, sizeof name), ta, ty);
  }
  if (attn_op_is(op, "math.absf"))
    return attn_b_mulf(b, ta, sign_of(b, a));
  if (attn_op_is(op, "math.copysign"))
    return attn_b_mulf(b, ta, attn_b_mulf(b, sign_of(b, a), sign_of(b, bb)));
  if (attn_op_is(op, "math.exp"))
    return attn_b_mulf(b, y, ta);
  if (attn_op_is(op, "math.exp2"))
    return attn_b_mulf(b, attn_b_mulf(b, y, fconst(b, ty, LN2)), ta);
  if (attn_op_is(op, "math.log"))
    return attn_b_divf(b, ta, a);
  if (attn_op_is(op, "math.log2"))
    return attn_b_divf(b, ta, attn_b_mulf(b, a, fconst(b, ty, LN2)));
  if (attn_op_is(op, "math.log1p"))
    return attn_b_divf(b, ta, attn_b_addf(b, a, fconst(b, ty, 1.0)));
  if (attn_op_is(op, "math.tanh"))
    return attn_b_mulf(
        b, attn_b_subf(b, fconst(b, ty, 1.0), attn_b_mulf(b, y, y)), ta);
  if (attn_op_is(op, "math.sqrt"))
    return attn_b_divf(b, ta, attn_b_mulf(b, y, fconst(b, ty, 2.0)));
  if (attn_op_is(op, "math.rsqrt"))
    return attn_b_mulf(
        b, attn_b_divf(b, attn_b_mulf(b, y, fconst(b, ty, -0.5)), a), ta);
  if (attn_op_is(op, "math.sin"))
    return attn_b_mulf(b, attn_b_unary(b, "math.cos", a), ta);
  if (attn_op_is(op, "math.cos"))
    return attn_b_mulf(b, attn_b_negf(b, attn_b_unary(b, "math.sin", a)), ta);
  if (attn_op_is(op, "math.erf")) {
    MlirValue e = attn_b_unary(b, "math.exp",
                               attn_b_negf(b, attn_b_mulf(b, a, a)));
    return attn_b_mulf(
        b, attn_b_mulf(b, e, fconst(b, ty, TWO_OVER_SQRT_PI)), ta);
  }
  if (attn_op_is(op, "math.powf")) {
    MlirValue da = none, db = none;
    if (!mlirValueIsNull(ta)) {
      MlirValue bm1 = attn_b_subf(b, bb, fconst(b, ty, 1.0));
      da = attn_b_mulf(
          b, attn_b_mulf(b, bb, attn_b_binary(b, "math.powf", a, bm1)), ta);
    }
    if (!mlirValueIsNull(tb))
      db = attn_b_mulf(
          b, attn_b_mulf(b, y, attn_b_unary(b, "math.log", a)), tb);
    return add0(b, da, db);
  }
  return none;
}

MlirValue attn_grad_clone_tangent(struct attn_builder *b, MlirBlock body,
                                  const MlirValue *args, MlirValue dx,
                                  struct attn_b_map *m, attn_b_clone_hook hook,
                                  void *user, MlirValue *dy) {
  return attn_grad_clone_tangent_at(b, body, args, dx, (MlirOperation){NULL},
                                    m, hook, user, dy);
}

MlirValue attn_grad_clone_tangent_at(struct attn_builder *b, MlirBlock body,
                                     const MlirValue *args, MlirValue dx,
                                     MlirOperation seed, struct attn_b_map *m,
                                     attn_b_clone_hook hook, void *user,
                                     MlirValue *dy) {
  MlirValue none = {NULL};
  *dy = none;
  if (mlirBlockIsNull(body) || mlirBlockIsNull(b->block)) {
    attn_builder_fail(b, "a modifier body to differentiate is missing (a bug "
                         "in attn)");
    return none;
  }
  struct attn_b_map t = {0};
  for (intptr_t i = 0, n = mlirBlockGetNumArguments(body); i < n; ++i)
    attn_b_map_add(m, mlirBlockGetArgument(body, i), args[i]);
  if (!mlirValueIsNull(dx) && mlirBlockGetNumArguments(body) > 0)
    attn_b_map_add(&t, mlirBlockGetArgument(body, 0), dx);
  MlirOperation term = mlirBlockGetTerminator(body);
  MlirLocation saved = b->loc;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op) && !b->failed;
       op = mlirOperationGetNextInBlock(op)) {
    if (mlirOperationEqual(op, term))
      break;
    char name[64];
    if (!differentiable(op)) {
      b->loc = mlirOperationGetLocation(op);
      char what[96];
      snprintf(what, sizeof what, "attn-grad: no derivative for '%s'",
               attn_op_name(op, name, sizeof name));
      attn_builder_fail(b, what);
      break;
    }
    if (!(hook && hook(b, op, m, user))) {
      MlirOperation c = mlirOperationClone(op);
      for (intptr_t i = 0, n = mlirOperationGetNumOperands(c); i < n; ++i)
        mlirOperationSetOperand(
            c, i, attn_b_map_get(m, mlirOperationGetOperand(op, i)));
      if (mlirOperationIsNull(b->anchor))
        mlirBlockAppendOwnedOperation(b->block, c);
      else
        mlirBlockInsertOwnedOperationBefore(b->block, b->anchor, c);
      for (intptr_t i = 0, n = mlirOperationGetNumResults(op); i < n; ++i)
        attn_b_map_add(m, mlirOperationGetResult(op, i),
                       mlirOperationGetResult(c, i));
    }
    if (!mlirOperationIsNull(seed) && mlirOperationEqual(op, seed) &&
        mlirOperationGetNumResults(op) == 1) {
      // The value whose derivative is wanted (a capture's read): tangent 1.
      MlirValue r = attn_b_map_get(m, mlirOperationGetResult(op, 0));
      attn_b_map_add(&t, mlirOperationGetResult(op, 0),
                     fconst(b, mlirValueGetType(r), 1.0));
      continue;
    }
    if (!has_float_result(op) ||
        in_list(op, zero_ops, sizeof zero_ops / sizeof *zero_ops) ||
        mlirOperationGetNumResults(op) != 1)
      continue;
    MlirValue in[3] = {none, none, none}, tn[3] = {none, none, none};
    bool any = false;
    for (intptr_t i = 0, n = mlirOperationGetNumOperands(op); i < n && i < 3;
         ++i) {
      MlirValue v = mlirOperationGetOperand(op, i);
      in[i] = attn_b_map_get(m, v);
      tn[i] = tan_of(&t, v);
      any |= !mlirValueIsNull(tn[i]);
    }
    if (!any)
      continue;
    b->loc = mlirOperationGetLocation(op);
    MlirValue r = mlirOperationGetResult(op, 0);
    MlirValue d = rule(b, op, attn_b_map_get(m, r), in, tn);
    b->loc = saved;
    if (!mlirValueIsNull(d))
      attn_b_map_add(&t, r, d);
  }
  b->loc = saved;
  if (m->failed || t.failed)
    attn_builder_fail(b, "out of memory while differentiating a modifier "
                         "body");
  MlirValue y = none;
  if (!b->failed) {
    if (mlirOperationIsNull(term) || mlirOperationGetNumOperands(term) != 1) {
      attn_builder_fail(b, "a modifier body must end in gpu.yield of one "
                           "value");
    } else {
      MlirValue src = mlirOperationGetOperand(term, 0);
      y = attn_b_map_get(m, src);
      *dy = tan_of(&t, src);
    }
  }
  attn_b_map_free(&t);
  return y;
}
