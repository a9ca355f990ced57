//===- attn_fuse.c - attn-fuse: one attn.fused op per attention chain -----===//
//
// Rewrites the chain
//
//   rope(q), rope(k) -> qk -> {scale, causal}* -> softmax -> pv(., v)
//
// into one op that a kernel computes whole:
//
//   %o = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = true,
//          rope = {theta = 1.0e4 : f64, rotary_dim = 64 : i64,
//                  layout = "rotate_half"}} : (...) -> tensor<...>
//
// RoPE goes into the kernel when q and k are both rotated with one
// configuration (rotation in registers: Q once per CTA, K per tile). Scales
// multiply; causal may appear once. Every intermediate value must have one
// use, or the chain is left alone (the unfused ops are then reported by
// attn-tile). The short flag --fuse-rope names this pass too.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdlib.h>

/// The ops of one matched chain, users first.
struct chain {
  MlirOperation ops[16];
  int n;
  double scale;
  bool causal;
  MlirValue q, k, v;
  bool has_rope;
  struct attn_rope_config rope;
};

static bool has_one_use(MlirValue v) {
  MlirOpOperand use = mlirValueGetFirstUse(v);
  return !mlirOpOperandIsNull(use) &&
         mlirOpOperandIsNull(mlirOpOperandGetNextUse(use));
}

/// The op defining v if it is named name and v is its only-used result.
static MlirOperation producer(MlirValue v, const char *name) {
  MlirOperation none = {NULL};
  if (!mlirValueIsAOpResult(v) || !has_one_use(v))
    return none;
  MlirOperation op = mlirOpResultGetOwner(v);
  return attn_op_is(op, name) ? op : none;
}

static bool same_rope(const struct attn_rope_config *a,
                      const struct attn_rope_config *b) {
  return a->theta == b->theta && a->rotary_dim == b->rotary_dim &&
         a->layout == b->layout;
}

static bool match_chain(MlirOperation pv, struct chain *c) {
  c->n = 0;
  c->scale = 1.0;
  c->causal = false;
  c->has_rope = false;
  c->ops[c->n++] = pv;
  c->v = mlirOperationGetOperand(pv, 1);
  MlirOperation sm = producer(mlirOperationGetOperand(pv, 0), ATTN_OP_SOFTMAX);
  if (mlirOperationIsNull(sm))
    return false;
  c->ops[c->n++] = sm;
  MlirValue s = mlirOperationGetOperand(sm, 0);
  for (;;) {
    MlirOperation op;
    double f;
    if (!mlirOperationIsNull(op = producer(s, ATTN_OP_SCALE))) {
      if (!attn_attr_f64(op, "scale", &f))
        return false;
      c->scale *= f;
    } else if (!c->causal &&
               !mlirOperationIsNull(op = producer(s, ATTN_OP_CAUSAL))) {
      c->causal = true;
    } else {
      break;
    }
    if (c->n >= 14)
      return false;
    c->ops[c->n++] = op;
    s = mlirOperationGetOperand(op, 0);
  }
  MlirOperation qk = producer(s, ATTN_OP_QK);
  if (mlirOperationIsNull(qk))
    return false;
  c->ops[c->n++] = qk;
  c->q = mlirOperationGetOperand(qk, 0);
  c->k = mlirOperationGetOperand(qk, 1);
  MlirOperation rq = producer(c->q, ATTN_OP_ROPE);
  MlirOperation rk = producer(c->k, ATTN_OP_ROPE);
  struct attn_rope_config cq, ck;
  if (!mlirOperationIsNull(rq) && !mlirOperationIsNull(rk) &&
      attn_rope_get_config(rq, &cq) && attn_rope_get_config(rk, &ck) &&
      same_rope(&cq, &ck)) {
    c->has_rope = true;
    c->rope = cq;
    c->q = mlirOperationGetOperand(rq, 0);
    c->k = mlirOperationGetOperand(rk, 0);
    c->ops[c->n++] = rq;
    c->ops[c->n++] = rk;
  }
  // One kernel reads and writes one element type (attn.fused's rule).
  MlirType eq = mlirShapedTypeGetElementType(mlirValueGetType(c->q));
  return mlirTypeEqual(eq, mlirShapedTypeGetElementType(mlirValueGetType(
                               mlirOperationGetResult(pv, 0)))) &&
         mlirTypeEqual(eq, mlirShapedTypeGetElementType(mlirValueGetType(c->k))) &&
         mlirTypeEqual(eq, mlirShapedTypeGetElementType(mlirValueGetType(c->v)));
}

static void rewrite_chain(MlirOperation pv, const struct chain *c) {
  MlirContext ctx = mlirOperationGetContext(pv);
  MlirLocation loc = mlirOperationGetLocation(pv);
  MlirOperationState st =
      mlirOperationStateGet(mlirStringRefCreateFromCString(ATTN_OP_FUSED), loc);
  MlirValue operands[3] = {c->q, c->k, c->v};
  mlirOperationStateAddOperands(&st, 3, operands);
  MlirType result = mlirValueGetType(mlirOperationGetResult(pv, 0));
  mlirOperationStateAddResults(&st, 1, &result);
  MlirNamedAttribute attrs[3];
  int na = 0;
  attrs[na++] = mlirNamedAttributeGet(
      mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("scale")),
      mlirFloatAttrDoubleGet(ctx, mlirF64TypeGet(ctx), c->scale));
  attrs[na++] = mlirNamedAttributeGet(
      mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("causal")),
      mlirBoolAttrGet(ctx, c->causal));
  if (c->has_rope)
    attrs[na++] = mlirNamedAttributeGet(
        mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("rope")),
        attn_rope_config_to_attr(ctx, &c->rope));
  mlirOperationStateAddAttributes(&st, na, attrs);
  MlirOperation fused = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(pv), pv, fused);
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(pv, 0),
                                mlirOperationGetResult(fused, 0));
  for (int i = 0; i < c->n; ++i)
    mlirOperationDestroy(c->ops[i]);
}

static MlirWalkResult collect_pv(MlirOperation op, void *user) {
  struct attn_op_list *list = user;
  if (attn_op_is(op, ATTN_OP_PV))
    attn_op_list_push(list, op);
  return MlirWalkResultAdvance;
}

static bool attn_fuse_run(MlirOperation module, const void *opts) {
  struct attn_op_list pvs = {0};
  mlirOperationWalk(module, collect_pv, &pvs, MlirWalkPostOrder);
  for (size_t i = 0; i < pvs.n; ++i) {
    struct chain c;
    if (match_chain(pvs.ops[i], &c))
      rewrite_chain(pvs.ops[i], &c);
  }
  bool ok = !pvs.failed;
  free(pvs.ops);
  if (!ok)
    return attn_emit_errorf(module, "attn-fuse: out of memory");
  return true;
}

const struct attn_pass_def attn_fuse_pass = {
    .argument = "attn-fuse",
    .alias = "fuse-rope",
    .description = "Fuse rope/qk/scale/causal/softmax/pv chains into one "
                   "attn.fused op with RoPE inside",
    .run = attn_fuse_run,
};
