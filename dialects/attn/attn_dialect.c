//===- attn_dialect.c - C verifier and readers of the attn dialect --------===//
//
// IRDL checks operand kinds and required attributes; this file checks what it
// cannot say: ranks and shapes agree, heads group evenly (GQA), head dims
// match, attribute values are in range.
//
//===----------------------------------------------------------------------===//
#include "dialects/attn/attn_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <string.h>

const char *attn_rope_layout_name(enum attn_rope_layout layout) {
  return layout == ATTN_ROPE_INTERLEAVED ? "interleaved" : "rotate_half";
}

static bool parse_layout(MlirStringRef s, enum attn_rope_layout *out) {
  if (attn_str_eq(s, "rotate_half"))
    *out = ATTN_ROPE_ROTATE_HALF;
  else if (attn_str_eq(s, "interleaved"))
    *out = ATTN_ROPE_INTERLEAVED;
  else
    return false;
  return true;
}

bool attn_rope_get_config(MlirOperation rope, struct attn_rope_config *out) {
  MlirStringRef layout;
  return attn_attr_f64(rope, "theta", &out->theta) &&
         attn_attr_i64(rope, "rotary_dim", &out->rotary_dim) &&
         attn_attr_str(rope, "layout", &layout) &&
         parse_layout(layout, &out->layout);
}

static MlirAttribute dict_get(MlirAttribute dict, const char *name) {
  return mlirDictionaryAttrGetElementByName(
      dict, mlirStringRefCreateFromCString(name));
}

static bool rope_from_dict(MlirAttribute d, struct attn_rope_config *out) {
  MlirAttribute theta = dict_get(d, "theta");
  MlirAttribute dim = dict_get(d, "rotary_dim");
  MlirAttribute layout = dict_get(d, "layout");
  if (mlirAttributeIsNull(theta) || !mlirAttributeIsAFloat(theta) ||
      mlirAttributeIsNull(dim) || !mlirAttributeIsAInteger(dim) ||
      mlirAttributeIsABool(dim) || mlirAttributeIsNull(layout) ||
      !mlirAttributeIsAString(layout))
    return false;
  out->theta = mlirFloatAttrGetValueDouble(theta);
  out->rotary_dim = mlirIntegerAttrGetValueInt(dim);
  return parse_layout(mlirStringAttrGetValue(layout), &out->layout);
}

bool attn_fused_get_config(MlirOperation fused, struct attn_fused_config *out) {
  memset(out, 0, sizeof *out);
  if (!attn_attr_f64(fused, "scale", &out->scale) ||
      !attn_attr_bool(fused, "causal", &out->causal))
    return false;
  MlirAttribute rope = mlirOperationGetAttributeByName(
      fused, mlirStringRefCreateFromCString("rope"));
  if (mlirAttributeIsNull(rope))
    return true;
  out->has_rope = true;
  return mlirAttributeIsADictionary(rope) && rope_from_dict(rope, &out->rope);
}

MlirAttribute attn_rope_config_to_attr(MlirContext ctx,
                                       const struct attn_rope_config *c) {
  MlirNamedAttribute elems[3] = {
      mlirNamedAttributeGet(
          mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("theta")),
          mlirFloatAttrDoubleGet(ctx, mlirF64TypeGet(ctx), c->theta)),
      mlirNamedAttributeGet(
          mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("rotary_dim")),
          mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), c->rotary_dim)),
      mlirNamedAttributeGet(
          mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("layout")),
          mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(
                                     attn_rope_layout_name(c->layout)))),
  };
  return mlirDictionaryAttrGet(ctx, 3, elems);
}

//===-- Verification ------------------------------------------------------===//

/// Reads value's type as a static rank-4 float tensor [b, h, n, d].
static bool get_bhnd(MlirOperation op, MlirValue v, const char *what,
                     int64_t out[4]) {
  MlirType t = mlirValueGetType(v);
  int64_t dims[8];
  char ty[128];
  if (attn_static_shape(t, dims) != 4)
    return attn_emit_errorf(op,
                            "%s must be a static rank-4 tensor [batch, heads, "
                            "seq, dim], found %s",
                            what, attn_type_str(t, ty, sizeof ty));
  MlirType e = mlirShapedTypeGetElementType(t);
  if (!mlirTypeIsAF32(e) && !mlirTypeIsAF16(e) && !mlirTypeIsABF16(e))
    return attn_emit_errorf(op, "%s element type must be f32, f16 or bf16, "
                                "found %s",
                            what, attn_type_str(e, ty, sizeof ty));
  for (int i = 0; i < 4; ++i) {
    if (dims[i] <= 0)
      return attn_emit_errorf(op, "%s has an empty dimension", what);
    out[i] = dims[i];
  }
  return true;
}

bool attn_rope_check(MlirOperation op, const struct attn_rope_config *c,
                     int64_t head_dim) {
  if (!(c->theta > 0.0) || !isfinite(c->theta))
    return attn_emit_errorf(op, "rope theta must be positive and finite, "
                                "found %g",
                            c->theta);
  if (c->rotary_dim < 2 || c->rotary_dim % 2 != 0)
    return attn_emit_errorf(op, "rope rotary_dim must be even and at least 2, "
                                "found %lld",
                            (long long)c->rotary_dim);
  if (c->rotary_dim > head_dim)
    return attn_emit_errorf(op, "rope rotary_dim %lld exceeds head dim %lld",
                            (long long)c->rotary_dim, (long long)head_dim);
  return true;
}

static bool same_elem(MlirOperation op, MlirValue a, MlirValue b,
                      const char *an, const char *bn) {
  MlirType ea = mlirShapedTypeGetElementType(mlirValueGetType(a));
  MlirType eb = mlirShapedTypeGetElementType(mlirValueGetType(b));
  if (mlirTypeEqual(ea, eb))
    return true;
  char s1[32], s2[32];
  return attn_emit_errorf(op, "%s and %s element types differ: %s vs %s", an,
                          bn, attn_type_str(ea, s1, sizeof s1),
                          attn_type_str(eb, s2, sizeof s2));
}

/// Checks q [B,H,N,D] against k/v [B,Hk,M,*]: batch equal, H divisible by Hk.
static bool check_heads(MlirOperation op, const int64_t q[4], const int64_t k[4],
                        const char *kn) {
  if (q[0] != k[0])
    return attn_emit_errorf(op, "batch mismatch: %lld vs %lld in %s",
                            (long long)q[0], (long long)k[0], kn);
  if (q[1] % k[1] != 0)
    return attn_emit_errorf(op,
                            "query heads %lld are not a multiple of %s heads "
                            "%lld",
                            (long long)q[1], kn, (long long)k[1]);
  return true;
}

static bool expect_shape(MlirOperation op, MlirValue v, const char *what,
                         const int64_t want[4]) {
  int64_t got[4];
  if (!get_bhnd(op, v, what, got))
    return false;
  if (memcmp(got, want, sizeof got) == 0)
    return true;
  return attn_emit_errorf(op,
                          "%s shape must be %lldx%lldx%lldx%lld, found "
                          "%lldx%lldx%lldx%lld",
                          what, (long long)want[0], (long long)want[1],
                          (long long)want[2], (long long)want[3],
                          (long long)got[0], (long long)got[1],
                          (long long)got[2], (long long)got[3]);
}

static bool verify_qk(MlirOperation op) {
  int64_t q[4], k[4];
  MlirValue qv = mlirOperationGetOperand(op, 0);
  MlirValue kv = mlirOperationGetOperand(op, 1);
  if (!get_bhnd(op, qv, "q", q) || !get_bhnd(op, kv, "k", k) ||
      !check_heads(op, q, k, "k") || !same_elem(op, qv, kv, "q", "k"))
    return false;
  if (q[3] != k[3])
    return attn_emit_errorf(op, "head dim mismatch: q has %lld, k has %lld",
                            (long long)q[3], (long long)k[3]);
  int64_t s[4] = {q[0], q[1], q[2], k[2]};
  return expect_shape(op, mlirOperationGetResult(op, 0), "scores", s);
}

static bool verify_pv(MlirOperation op) {
  int64_t p[4], v[4];
  MlirValue vv = mlirOperationGetOperand(op, 1);
  if (!get_bhnd(op, mlirOperationGetOperand(op, 0), "probs", p) ||
      !get_bhnd(op, vv, "v", v) || !check_heads(op, p, v, "v"))
    return false;
  if (p[3] != v[2])
    return attn_emit_errorf(op, "probs have %lld keys but v has %lld rows",
                            (long long)p[3], (long long)v[2]);
  int64_t o[4] = {p[0], p[1], p[2], v[3]};
  return expect_shape(op, mlirOperationGetResult(op, 0), "result", o);
}

static bool verify_fused(MlirOperation op) {
  int64_t q[4], k[4], v[4];
  MlirValue qv = mlirOperationGetOperand(op, 0);
  MlirValue kv = mlirOperationGetOperand(op, 1);
  MlirValue vv = mlirOperationGetOperand(op, 2);
  if (!get_bhnd(op, qv, "q", q) || !get_bhnd(op, kv, "k", k) ||
      !get_bhnd(op, vv, "v", v) || !check_heads(op, q, k, "k") ||
      !check_heads(op, q, v, "v") || !same_elem(op, qv, kv, "q", "k") ||
      !same_elem(op, qv, vv, "q", "v"))
    return false;
  if (q[3] != k[3])
    return attn_emit_errorf(op, "head dim mismatch: q has %lld, k has %lld",
                            (long long)q[3], (long long)k[3]);
  if (k[1] != v[1] || k[2] != v[2])
    return attn_emit_errorf(op, "k and v must have the same heads and "
                                "sequence length");
  int64_t o[4] = {q[0], q[1], q[2], v[3]};
  if (!expect_shape(op, mlirOperationGetResult(op, 0), "result", o) ||
      !same_elem(op, qv, mlirOperationGetResult(op, 0), "q", "result"))
    return false;
  struct attn_fused_config c;
  if (!attn_fused_get_config(op, &c))
    return attn_emit_errorf(op, "rope must be a dictionary {theta: f64, "
                                "rotary_dim: i64, layout: rotate_half or "
                                "interleaved}");
  if (!isfinite(c.scale) || c.scale == 0.0)
    return attn_emit_errorf(op, "scale must be finite and non-zero, found %g",
                            c.scale);
  return !c.has_rope || attn_rope_check(op, &c.rope, q[3]);
}

static bool verify_rank4(MlirOperation op) {
  int64_t d[4];
  return get_bhnd(op, mlirOperationGetOperand(op, 0), "operand", d);
}

bool attn_attn_verify_op(MlirOperation op) {
  if (attn_op_is(op, ATTN_OP_ROPE)) {
    int64_t d[4];
    struct attn_rope_config c;
    bool b;
    if (!get_bhnd(op, mlirOperationGetOperand(op, 0), "operand", d))
      return false;
    if (attn_attr_bool(op, "rotary_dim", &b))
      return attn_emit_errorf(op, "rope rotary_dim must be an integer, found a "
                                  "boolean");
    if (!attn_rope_get_config(op, &c))
      return attn_emit_errorf(op, "rope layout must be \"rotate_half\" or "
                                  "\"interleaved\"");
    return attn_rope_check(op, &c, d[3]);
  }
  if (attn_op_is(op, ATTN_OP_QK))
    return verify_qk(op);
  if (attn_op_is(op, ATTN_OP_PV))
    return verify_pv(op);
  if (attn_op_is(op, ATTN_OP_FUSED))
    return verify_fused(op);
  if (attn_op_is(op, ATTN_OP_SCALE)) {
    double s;
    if (!verify_rank4(op))
      return false;
    if (attn_attr_f64(op, "scale", &s) && (!isfinite(s) || s == 0.0))
      return attn_emit_errorf(op, "scale must be finite and non-zero, found %g",
                              s);
    return true;
  }
  if (attn_op_is(op, ATTN_OP_CAUSAL) || attn_op_is(op, ATTN_OP_SOFTMAX))
    return verify_rank4(op);
  return true;
}
