//===- attn_verify.c - The C verifier of the attn dialect -----------------===//
//
// IRDL checks operand kinds and required attributes; this file checks what it
// cannot say: ranks and shapes agree, heads group evenly (GQA), head dims
// match, attribute values are in range, and the program has the shape of an
// attention:
//
//   rope* on q/k -> qk -> score modifiers (scale, causal, window, alibi,
//   softcap, gate, document, score_mod, mask_mod) -> softmax -> pv
//
// Scores-shaped tensors are only rank-4 tensors to the type system, so the
// order is checked structurally: each op looks at the op defining its
// operands. Named modifiers other than scale may appear once per chain;
// scales may repeat but must be adjacent (only masks between them), since a
// scale does not commute with softcap, alibi, gate or a score_mod body.
// attn.score_mod and attn.mask_mod may repeat; their bodies, and attn.fused's
// score_fn and mask_fn regions, are checked by the shared body checker
// (dialects/body.h). attn.fused's optional lse result and attn.fused_grad
// (its backward: the same inputs, then out, lse and dout; results dq, dk,
// dv) are checked here too.
//
//===----------------------------------------------------------------------===//
#include "dialects/attn/attn_dialect.h"
#include "dialects/attn/attn_internal.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

//===-- Shapes ------------------------------------------------------------===//

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
  if (!mlirTypeIsAF32(e) && !mlirTypeIsAF16(e) && !mlirTypeIsABF16(e) &&
      !mlirTypeIsAF64(e))
    return attn_emit_errorf(op,
                            "%s element type must be f32, f16, bf16 or f64, "
                            "found %s",
                            what, attn_type_str(e, ty, sizeof ty));
  for (int i = 0; i < 4; ++i) {
    if (dims[i] <= 0)
      return attn_emit_errorf(op, "%s has an empty dimension", what);
    out[i] = dims[i];
  }
  return attn_check_static_bytes(op, t, what);
}

bool attn_rope_check(MlirOperation op, const struct attn_rope_config *c,
                     int64_t head_dim) {
  if (!(c->theta > 0.0) || !isfinite(c->theta))
    return attn_emit_errorf(op,
                            "rope theta must be positive and finite, "
                            "found %g",
                            c->theta);
  if (c->rotary_dim < 2 || c->rotary_dim % 2 != 0)
    return attn_emit_errorf(op,
                            "rope rotary_dim must be even and at least 2, "
                            "found %lld",
                            (long long)c->rotary_dim);
  if (c->rotary_dim > head_dim)
    return attn_emit_errorf(op, "rope rotary_dim %lld exceeds head dim %lld",
                            (long long)c->rotary_dim, (long long)head_dim);
  if (c->offset < 0 || c->offset > INT32_MAX)
    return attn_emit_errorf(op,
                            "rope offset must be in [0, 2147483647] "
                            "(positions are i32), found %lld",
                            (long long)c->offset);
  return true;
}

/// The positions offset .. offset + seq - 1 of a RoPE'd tensor of seq rows
/// are i32 (the type of explicit positions; the Hopper kernels add the
/// offset to 32-bit row indices).
static bool check_rope_positions(MlirOperation op, const char *what,
                                 int64_t offset, int64_t seq) {
  if (offset < 0 || offset > INT32_MAX)
    return attn_emit_errorf(op,
                            "rope %s must be in [0, 2147483647] (positions "
                            "are i32), found %lld",
                            what, (long long)offset);
  if (seq - 1 > INT32_MAX - offset)
    return attn_emit_errorf(op,
                            "rope %s %lld puts the last of %lld rows at "
                            "position %lld, past 2147483647 (positions are "
                            "i32)",
                            what, (long long)offset, (long long)seq,
                            (long long)(offset + seq - 1));
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
static bool check_heads(MlirOperation op, const int64_t q[4],
                        const int64_t k[4], const char *kn) {
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

/// Checks an auxiliary tensor: static, of the given rank, shape and element
/// type: i32 (is_i32), else the program's compute type, that of the
/// tensor `of` (f32, or f64 in an f64 program: attn_compute_type).
static bool expect_aux(MlirOperation op, MlirValue v, const char *what,
                       int rank, const int64_t want[4], bool is_i32,
                       MlirValue of) {
  MlirType t = mlirValueGetType(v);
  int64_t got[8];
  char ty[128];
  if (attn_static_shape(t, got) != rank)
    return attn_emit_errorf(op, "%s must be a static rank-%d tensor, found %s",
                            what, rank, attn_type_str(t, ty, sizeof ty));
  MlirType e = mlirShapedTypeGetElementType(t);
  bool wide = !is_i32 && mlirTypeIsAF64(mlirShapedTypeGetElementType(
                             mlirValueGetType(of)));
  bool ok = is_i32 ? mlirTypeIsAInteger(e) && mlirIntegerTypeGetWidth(e) == 32
            : wide ? mlirTypeIsAF64(e)
                   : mlirTypeIsAF32(e);
  if (!ok)
    return attn_emit_errorf(op, "%s element type must be %s, found %s", what,
                            is_i32 ? "i32" : wide ? "f64 (the program is f64)"
                                                  : "f32",
                            attn_type_str(e, ty, sizeof ty));
  if (memcmp(got, want, sizeof *want * (size_t)rank) == 0)
    return true;
  char w[64] = "", g[64] = "";
  for (int i = 0; i < rank; ++i) {
    size_t lw = strlen(w), lg = strlen(g);
    snprintf(w + lw, sizeof w - lw, "%s%lld", i ? "x" : "", (long long)want[i]);
    snprintf(g + lg, sizeof g - lg, "%s%lld", i ? "x" : "", (long long)got[i]);
  }
  return attn_emit_errorf(op, "%s shape must be %s, found %s", what, w, g);
}

/// The gate bias of scores [B, H, N, M] in blocks of bs keys, in the
/// compute type of the program whose tensor `of` is.
static bool check_gate_bias(MlirOperation op, MlirValue g, const int64_t s[4],
                            int64_t bs, MlirValue of) {
  int64_t want[4] = {s[0], s[1], s[2], s[3] / bs + (s[3] % bs != 0)};
  return expect_aux(op, g, "gate bias", 4, want, false, of);
}

/// The compute type of the program whose tensor of is.
static MlirType compute_type_of(MlirValue of) {
  return attn_compute_type(mlirShapedTypeGetElementType(mlirValueGetType(of)));
}

//===-- Program structure -------------------------------------------------===//

bool attn_is_score_mod(MlirOperation op) {
  static const char *const mods[] = {
      ATTN_OP_SCALE,    ATTN_OP_CAUSAL,    ATTN_OP_WINDOW,
      ATTN_OP_ALIBI,    ATTN_OP_SOFTCAP,   ATTN_OP_GATE,
      ATTN_OP_DOCUMENT, ATTN_OP_SCORE_MOD, ATTN_OP_MASK_MOD};
  for (size_t i = 0; i < sizeof mods / sizeof *mods; ++i)
    if (attn_op_is(op, mods[i]))
      return true;
  return false;
}

/// True for the modifiers a scale does not commute with.
static bool is_ordered_mod(MlirOperation op) {
  return attn_op_is(op, ATTN_OP_SOFTCAP) || attn_op_is(op, ATTN_OP_ALIBI) ||
         attn_op_is(op, ATTN_OP_GATE) || attn_op_is(op, ATTN_OP_SCORE_MOD);
}

/// True for the modifiers that may appear any number of times: scale
/// (adjacent ones multiply) and the two of any form (bodies compose).
static bool may_repeat(MlirOperation op) {
  return attn_op_is(op, ATTN_OP_SCALE) || attn_op_is(op, ATTN_OP_SCORE_MOD) ||
         attn_op_is(op, ATTN_OP_MASK_MOD);
}

/// True for ops whose result is scores or probabilities [B, H, N, M].
static bool makes_scores(MlirOperation op) {
  return attn_op_is(op, ATTN_OP_QK) || attn_is_score_mod(op) ||
         attn_op_is(op, ATTN_OP_SOFTMAX);
}

/// The op defining operand i of op, or a null op for a block argument.
static MlirOperation def_of(MlirOperation op, intptr_t i) {
  MlirValue v = mlirOperationGetOperand(op, i);
  if (!mlirValueIsAOpResult(v))
    return (MlirOperation){NULL};
  return mlirOpResultGetOwner(v);
}

/// q and k of qk, v of pv, x of rope: tensors, not scores.
static bool check_not_scores(MlirOperation op, intptr_t i, const char *what) {
  MlirOperation d = def_of(op, i);
  char n[64], dn[64];
  if (mlirOperationIsNull(d) || !makes_scores(d))
    return true;
  return attn_emit_errorf(op,
                          "%s of %s must not be scores, found the result "
                          "of '%s'",
                          what, attn_op_name(op, n, sizeof n),
                          attn_op_name(d, dn, sizeof dn));
}

/// Score modifiers and softmax take scores: from qk, a modifier, or outside
/// the attn dialect.
static bool check_takes_scores(MlirOperation op) {
  MlirOperation d = def_of(op, 0);
  char n[64], dn[64];
  if (mlirOperationIsNull(d) || attn_op_is(d, ATTN_OP_QK) ||
      attn_is_score_mod(d))
    return true;
  MlirStringRef dname = mlirIdentifierStr(mlirOperationGetName(d));
  if (dname.length < 5 || strncmp(dname.data, "attn.", 5) != 0)
    return true;
  return attn_emit_errorf(op,
                          "%s applies to scores from attn.qk, found the "
                          "result of '%s'",
                          attn_op_name(op, n, sizeof n),
                          attn_op_name(d, dn, sizeof dn));
}

/// Walks the modifier chain above op: a named modifier other than scale may
/// appear once; scales must not be separated by softcap, alibi, gate or a
/// score_mod.
static bool check_chain(MlirOperation op) {
  bool scale = attn_op_is(op, ATTN_OP_SCALE);
  bool repeats = may_repeat(op);
  MlirOperation between = {NULL};
  char n[64], bn[64];
  int steps = 0;
  for (MlirOperation d = def_of(op, 0);
       !mlirOperationIsNull(d) && attn_is_score_mod(d) && steps < 1000;
       d = def_of(d, 0), ++steps) {
    if (!repeats &&
        mlirIdentifierEqual(mlirOperationGetName(d), mlirOperationGetName(op)))
      return attn_emit_errorf(op,
                              "%s may appear once per attention, found "
                              "another above it",
                              attn_op_name(op, n, sizeof n));
    if (scale && is_ordered_mod(d) && mlirOperationIsNull(between))
      between = d;
    if (scale && attn_op_is(d, ATTN_OP_SCALE) && !mlirOperationIsNull(between))
      return attn_emit_errorf(op,
                              "scales must be adjacent in the modifier "
                              "chain, found '%s' between two attn.scale "
                              "ops",
                              attn_op_name(between, bn, sizeof bn));
  }
  return true;
}

//===-- Ops ---------------------------------------------------------------===//

static bool verify_rope(MlirOperation op) {
  int64_t d[4];
  struct attn_rope_config c;
  bool b;
  if (!get_bhnd(op, mlirOperationGetOperand(op, 0), "operand", d))
    return false;
  MlirOperation def = def_of(op, 0);
  char dn[64];
  if (!mlirOperationIsNull(def) && makes_scores(def))
    return attn_emit_errorf(op,
                            "attn.rope must rotate q or k before attn.qk, "
                            "found the result of '%s'",
                            attn_op_name(def, dn, sizeof dn));
  if (attn_attr_bool(op, "rotary_dim", &b))
    return attn_emit_errorf(op, "rope rotary_dim must be an integer, found a "
                                "boolean");
  if (!mlirAttributeIsNull(attn_attr_get(op, "offset")) &&
      !attn_attr_i64(op, "offset", &c.offset))
    return attn_emit_errorf(op, "rope offset must be an integer");
  if (!attn_rope_get_config(op, &c))
    return attn_emit_errorf(op, "rope layout must be \"rotate_half\" or "
                                "\"interleaved\"");
  if (!check_rope_positions(op, "offset", c.offset, d[2]) ||
      !attn_rope_check(op, &c, d[3]))
    return false;
  if (mlirOperationGetNumOperands(op) < 2)
    return true;
  if (!mlirAttributeIsNull(attn_attr_get(op, "offset")))
    return attn_emit_errorf(op, "rope offset cannot be combined with explicit "
                                "positions");
  int64_t want[4] = {d[0], d[2]};
  return expect_aux(op, mlirOperationGetOperand(op, 1), "positions", 2, want,
                    true, mlirOperationGetOperand(op, 0));
}

/// x [B, N, C] times w [C, H*D] into [B, H, N, D], one element type; the
/// optional rope entry (attn-fuse's producer placement) is well formed.
static bool verify_project(MlirOperation op) {
  MlirValue xv = mlirOperationGetOperand(op, 0);
  MlirValue wv = mlirOperationGetOperand(op, 1);
  MlirValue rv = mlirOperationGetResult(op, 0);
  int64_t x[8], w[8], o[4];
  char ty[128];
  if (attn_static_shape(mlirValueGetType(xv), x) != 3)
    return attn_emit_errorf(op, "x must be a static rank-3 tensor [batch, "
                                "seq, features], found %s",
                            attn_type_str(mlirValueGetType(xv), ty, sizeof ty));
  if (attn_static_shape(mlirValueGetType(wv), w) != 2)
    return attn_emit_errorf(op, "w must be a static rank-2 tensor "
                                "[features, heads * head_dim], found %s",
                            attn_type_str(mlirValueGetType(wv), ty, sizeof ty));
  if (!get_bhnd(op, rv, "result", o) || !same_elem(op, xv, wv, "x", "w") ||
      !same_elem(op, xv, rv, "x", "result") ||
      !attn_check_static_bytes(op, mlirValueGetType(xv), "x") ||
      !attn_check_static_bytes(op, mlirValueGetType(wv), "w"))
    return false;
  for (int i = 0; i < 3; ++i)
    if (x[i] <= 0 || (i < 2 && w[i] <= 0))
      return attn_emit_errorf(op, "x and w must not have empty dimensions");
  if (w[0] != x[2])
    return attn_emit_errorf(op, "x has %lld features but w has %lld rows",
                            (long long)x[2], (long long)w[0]);
  if (o[0] != x[0] || o[2] != x[1] || o[1] * o[3] != w[1])
    return attn_emit_errorf(
        op,
        "result must be [%lld, heads, %lld, head_dim] with heads * head_dim "
        "= %lld (w's columns), found [%lld, %lld, %lld, %lld]",
        (long long)x[0], (long long)x[1], (long long)w[1], (long long)o[0],
        (long long)o[1], (long long)o[2], (long long)o[3]);
  bool has;
  struct attn_rope_config c;
  if (!attn_project_get_rope(op, &has, &c))
    return attn_emit_errorf(op, "rope must be a dictionary {theta: f64, "
                                "rotary_dim: i64, layout: rotate_half or "
                                "interleaved, offset: i64, strategy}");
  return !has || (check_rope_positions(op, "offset", c.offset, o[2]) &&
                  attn_rope_check(op, &c, o[3]));
}

static bool verify_qk(MlirOperation op) {
  int64_t q[4], k[4];
  MlirValue qv = mlirOperationGetOperand(op, 0);
  MlirValue kv = mlirOperationGetOperand(op, 1);
  if (!get_bhnd(op, qv, "q", q) || !get_bhnd(op, kv, "k", k) ||
      !check_heads(op, q, k, "k") || !same_elem(op, qv, kv, "q", "k") ||
      !check_not_scores(op, 0, "q") || !check_not_scores(op, 1, "k"))
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
      !get_bhnd(op, vv, "v", v) || !check_heads(op, p, v, "v") ||
      !check_not_scores(op, 1, "v"))
    return false;
  MlirOperation d = def_of(op, 0);
  char dn[64];
  if (!mlirOperationIsNull(d) && !attn_op_is(d, ATTN_OP_SOFTMAX))
    return attn_emit_errorf(op,
                            "probabilities of attn.pv must come from "
                            "attn.softmax, found the result of '%s'",
                            attn_op_name(d, dn, sizeof dn));
  if (p[3] != v[2])
    return attn_emit_errorf(op, "probs have %lld keys but v has %lld rows",
                            (long long)p[3], (long long)v[2]);
  int64_t o[4] = {p[0], p[1], p[2], v[3]};
  return expect_shape(op, mlirOperationGetResult(op, 0), "result", o);
}

static bool check_scale(MlirOperation op, double s) {
  if (s > 0.0 && isfinite(s))
    return true;
  return attn_emit_errorf(op, "scale must be positive and finite, found %g", s);
}

static bool check_positive(MlirOperation op, const char *what, double x) {
  if (x > 0.0 && isfinite(x))
    return true;
  return attn_emit_errorf(op, "%s must be positive and finite, found %g", what,
                          x);
}

static bool check_window(MlirOperation op, int64_t left, int64_t right) {
  if (left < -1 || right < -1)
    return attn_emit_errorf(op,
                            "window %s must be -1 (unbounded) or "
                            "non-negative, found %lld",
                            left < -1 ? "left" : "right",
                            (long long)(left < -1 ? left : right));
  // The key range adds the window to row indices: keep it far from i64's
  // end (a wider window is -1's unbounded anyway).
  if (left > INT32_MAX || right > INT32_MAX)
    return attn_emit_errorf(op,
                            "window %s must be at most 2147483647 (-1 for "
                            "unbounded), found %lld",
                            left > INT32_MAX ? "left" : "right",
                            (long long)(left > INT32_MAX ? left : right));
  return true;
}

static bool check_gate_block(MlirOperation op, int64_t bs) {
  if (bs > INT32_MAX)
    return attn_emit_errorf(op,
                            "gate block_size must be at most 2147483647, "
                            "found %lld",
                            (long long)bs);
  if (bs >= 1)
    return true;
  return attn_emit_errorf(op, "gate block_size must be positive, found %lld",
                          (long long)bs);
}

/// An integer attribute that is not a boolean (IRDL accepts i1 as integer).
static bool int_attr(MlirOperation op, const char *name, int64_t *out) {
  bool b;
  if (attn_attr_bool(op, name, &b))
    return attn_emit_errorf(op, "%s must be an integer, found a boolean", name);
  return attn_attr_i64(op, name, out);
}

static bool verify_score_mod(MlirOperation op) {
  int64_t s[4];
  double x;
  int64_t l, r, bs;
  if (!get_bhnd(op, mlirOperationGetOperand(op, 0), "operand", s) ||
      !check_takes_scores(op) || !check_chain(op))
    return false;
  if (attn_op_is(op, ATTN_OP_SCALE))
    return !attn_attr_f64(op, "scale", &x) || check_scale(op, x);
  if (attn_op_is(op, ATTN_OP_SOFTCAP))
    return !attn_attr_f64(op, "cap", &x) ||
           check_positive(op, "softcap cap", x);
  if (attn_op_is(op, ATTN_OP_ALIBI))
    return !attn_attr_f64(op, "max_bias", &x) ||
           check_positive(op, "alibi max_bias", x);
  if (attn_op_is(op, ATTN_OP_WINDOW))
    return int_attr(op, "left", &l) && int_attr(op, "right", &r) &&
           check_window(op, l, r);
  if (attn_op_is(op, ATTN_OP_GATE))
    return int_attr(op, "block_size", &bs) && check_gate_block(op, bs) &&
           check_gate_bias(op, mlirOperationGetOperand(op, 1), s, bs,
                           mlirOperationGetOperand(op, 0));
  // IRDL gives both one region; the reader guards IR it has not verified.
  MlirRegion body = mlirOperationGetNumRegions(op) == 1
                        ? mlirOperationGetRegion(op, 0)
                        : (MlirRegion){NULL};
  if (attn_op_is(op, ATTN_OP_SCORE_MOD))
    return attn_body_verify(op, body, ATTN_BODY_SCORE, ATTN_BODY_TENSOR,
                            compute_type_of(mlirOperationGetOperand(op, 0)),
                            ATTN_OP_SCORE_MOD);
  if (attn_op_is(op, ATTN_OP_MASK_MOD))
    return attn_body_verify(op, body, ATTN_BODY_MASK, ATTN_BODY_TENSOR,
                            compute_type_of(mlirOperationGetOperand(op, 0)),
                            ATTN_OP_MASK_MOD);
  if (attn_op_is(op, ATTN_OP_DOCUMENT)) {
    int64_t qs[4] = {s[0], s[2]}, ks[4] = {s[0], s[3]};
    MlirValue of = mlirOperationGetOperand(op, 0);
    return expect_aux(op, mlirOperationGetOperand(op, 1), "q_segments", 2, qs,
                      true, of) &&
           expect_aux(op, mlirOperationGetOperand(op, 2), "k_segments", 2, ks,
                      true, of);
  }
  return true;
}

/// Checks the extra operands of attn.fused against q [B,H,N,D], k [B,Hk,M,D].
static bool verify_fused_extras(MlirOperation op,
                                const struct attn_fused_config *c,
                                const int64_t q[4], const int64_t k[4]) {
  const int *x = c->extra;
  MlirValue qv = mlirOperationGetOperand(op, 0);
  int64_t s[4] = {q[0], q[1], q[2], k[2]};
  int64_t bn[4] = {q[0], q[2]}, bm[4] = {q[0], k[2]};
  if (x[ATTN_EXTRA_GATE] >= 0 &&
      !check_gate_bias(op, mlirOperationGetOperand(op, x[ATTN_EXTRA_GATE]), s,
                       c->gate_block, qv))
    return false;
  static const struct {
    enum attn_fused_extra role;
    const char *name;
    bool keys;
  } aux[4] = {{ATTN_EXTRA_Q_SEGMENTS, "q_segments", false},
              {ATTN_EXTRA_K_SEGMENTS, "k_segments", true},
              {ATTN_EXTRA_Q_POSITIONS, "q_positions", false},
              {ATTN_EXTRA_K_POSITIONS, "k_positions", true}};
  for (int i = 0; i < 4; ++i)
    if (x[aux[i].role] >= 0 &&
        !expect_aux(op, mlirOperationGetOperand(op, x[aux[i].role]),
                    aux[i].name, 2, aux[i].keys ? bm : bn, true, qv))
      return false;
  return true;
}

/// What attn.fused and attn.fused_grad share: q, k, v [B,H,N,D],
/// [B,Hk,M,D], [B,Hk,M,Dv] of one element type, the attributes, the
/// bodies and the optional inputs. Fills q, v and *c.
static bool verify_fused_inputs(MlirOperation op, int64_t q[4], int64_t v[4],
                                struct attn_fused_config *c) {
  int64_t k[4];
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
  char err[256];
  bool b;
  if (attn_attr_bool(op, "gate_block", &b))
    return attn_emit_errorf(op, "gate_block must be an integer, found a "
                                "boolean");
  if (!attn_fused_read(op, c, err, sizeof err))
    return attn_emit_errorf(op, "%s", err);
  if (!check_scale(op, c->scale) ||
      (c->has_window && !check_window(op, c->window_left, c->window_right)) ||
      (c->has_alibi &&
       !check_positive(op, "alibi max_bias", c->alibi_max_bias)) ||
      (c->has_softcap && !check_positive(op, "softcap cap", c->softcap)) ||
      (c->has_gate && !check_gate_block(op, c->gate_block)))
    return false;
  if (c->has_rope &&
      (!attn_rope_check(op, &c->rope, q[3]) ||
       !check_rope_positions(op, "q_offset", c->q_offset, q[2]) ||
       !check_rope_positions(op, "k_offset", c->k_offset, k[2])))
    return false;
  bool grad = attn_op_is(op, ATTN_OP_FUSED_GRAD);
  if (c->has_score_fn &&
      !attn_body_verify(op, mlirOperationGetRegion(op, 0), ATTN_BODY_SCORE,
                        ATTN_BODY_TENSOR, compute_type_of(qv),
                        grad ? "score_fn of attn.fused_grad"
                             : "score_fn of attn.fused"))
    return false;
  if (c->has_mask_fn &&
      !attn_body_verify(op, mlirOperationGetRegion(op, 1), ATTN_BODY_MASK,
                        ATTN_BODY_TENSOR, compute_type_of(qv),
                        grad ? "mask_fn of attn.fused_grad"
                             : "mask_fn of attn.fused"))
    return false;
  return verify_fused_extras(op, c, q, k);
}

/// The row log-sum-exp of q [B,H,N,D]: a static tensor<B x H x N x f32>
/// (f64 when q is f64: the program's compute type).
static bool expect_lse(MlirOperation op, MlirValue v, const char *what,
                       const int64_t q[4]) {
  int64_t want[4] = {q[0], q[1], q[2]};
  return expect_aux(op, v, what, 3, want, false, mlirOperationGetOperand(op, 0));
}

static bool verify_fused(MlirOperation op) {
  int64_t q[4], v[4];
  struct attn_fused_config c;
  if (!verify_fused_inputs(op, q, v, &c))
    return false;
  intptr_t nres = mlirOperationGetNumResults(op);
  if (nres != 1 + c.lse)
    return attn_emit_errorf(op,
                            c.lse ? "attn.fused with lse has two results (out, "
                                    "lse), found %ld"
                                  : "attn.fused without lse has one result, "
                                    "found %ld (the unit attribute lse asks "
                                    "for the second)",
                            (long)nres);
  MlirValue qv = mlirOperationGetOperand(op, 0);
  int64_t o[4] = {q[0], q[1], q[2], v[3]};
  if (!expect_shape(op, mlirOperationGetResult(op, 0), "result", o) ||
      !same_elem(op, qv, mlirOperationGetResult(op, 0), "q", "result"))
    return false;
  return !c.lse ||
         expect_lse(op, mlirOperationGetResult(op, 1), "lse result", q);
}

/// attn.fused_grad's results after dv: one per entry of "grads" (each
/// "gate", which needs the gate operand and has its shape, or
/// "capture<i>", once), a static tensor of the compute type, with
/// resultSegmentSizes = array<i32: 1, 1, 1, then len(grads) ones, then
/// zeros> (3 + ATTN_MAX_GRADS entries, the optional results grad0...).
static bool verify_grad_results(MlirOperation op,
                                const struct attn_fused_config *c,
                                intptr_t nres) {
  int targets[ATTN_MAX_GRADS];
  int n = attn_fused_grad_targets(op, targets, ATTN_MAX_GRADS);
  if (n < 0)
    return attn_emit_errorf(op, "grads must be an array of at most %d "
                                "strings \"gate\" or \"capture<i>\"",
                            ATTN_MAX_GRADS);
  if (nres != 3 + n)
    return attn_emit_errorf(op, "attn.fused_grad has %d grads and %ld "
                                "results after dv: one per entry",
                            n, (long)(nres - 3));
  MlirAttribute seg = attn_attr_get(op, "resultSegmentSizes");
  bool seg_ok = !mlirAttributeIsNull(seg) &&
                mlirAttributeIsADenseI32Array(seg) &&
                mlirDenseArrayGetNumElements(seg) == 3 + ATTN_MAX_GRADS;
  for (int i = 0; seg_ok && i < 3 + ATTN_MAX_GRADS; ++i)
    seg_ok = mlirDenseI32ArrayGetElement(seg, i) == (i < 3 + n ? 1 : 0);
  if (!seg_ok)
    return attn_emit_errorf(op, "attn.fused_grad needs resultSegmentSizes "
                                "with %d entries: 1, 1, 1 (dq, dk, dv), "
                                "then %d ones (its grads) and zeros",
                            3 + ATTN_MAX_GRADS, n);
  MlirType ct = compute_type_of(mlirOperationGetOperand(op, 0));
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < i; ++j)
      if (targets[j] == targets[i])
        return attn_emit_errorf(op, "grads names one tensor twice (entry "
                                    "%d)",
                                i);
    MlirType t = mlirValueGetType(mlirOperationGetResult(op, 3 + i));
    int64_t d[8];
    char ty[128];
    if (!mlirTypeIsATensor(t) || attn_static_shape(t, d) < 1 ||
        !mlirTypeEqual(mlirShapedTypeGetElementType(t), ct))
      return attn_emit_errorf(op, "grad result %d must be a static tensor "
                                  "of the compute type (%s), found %s",
                              i, mlirTypeIsAF64(ct) ? "f64" : "f32",
                              attn_type_str(t, ty, sizeof ty));
    if (targets[i] != ATTN_GRAD_GATE)
      continue;
    if (c->extra[ATTN_EXTRA_GATE] < 0)
      return attn_emit_errorf(op, "grads names the gate, but attn.fused_grad "
                                  "has no gate operand");
    MlirType g = mlirValueGetType(
        mlirOperationGetOperand(op, c->extra[ATTN_EXTRA_GATE]));
    int64_t gd[8];
    int rank = attn_static_shape(g, gd);
    bool same = rank == attn_static_shape(t, d);
    for (int r = 0; same && r < rank; ++r)
      same = gd[r] == d[r];
    if (!same)
      return attn_emit_errorf(op, "the gate's grad must have the gate's "
                                  "shape, found %s",
                              attn_type_str(t, ty, sizeof ty));
  }
  return true;
}

/// attn.fused_grad: attn.fused's inputs, then out and dout shaped like
/// attn.fused's result and lse [B,H,N] f32; results dq, dk, dv of the types
/// of q, k and v.
static bool verify_fused_grad(MlirOperation op) {
  int64_t q[4], v[4];
  struct attn_fused_config c;
  if (!verify_fused_inputs(op, q, v, &c))
    return false;
  intptr_t at = attn_fused_grad_out_index(op);
  intptr_t nres = mlirOperationGetNumResults(op);
  if (at < 3 || nres < 3)
    return attn_emit_errorf(op, "attn.fused_grad takes out, lse and dout "
                                "after its inputs and has three results "
                                "(dq, dk, dv) before any grads");
  if (!verify_grad_results(op, &c, nres))
    return false;
  MlirValue qv = mlirOperationGetOperand(op, 0);
  MlirValue out = mlirOperationGetOperand(op, at);
  MlirValue dout = mlirOperationGetOperand(op, at + 2);
  int64_t o[4] = {q[0], q[1], q[2], v[3]};
  if (!expect_shape(op, out, "out", o) ||
      !same_elem(op, qv, out, "q", "out") ||
      !expect_lse(op, mlirOperationGetOperand(op, at + 1), "lse", q) ||
      !expect_shape(op, dout, "dout", o) ||
      !same_elem(op, qv, dout, "q", "dout"))
    return false;
  static const char *const names[3] = {"dq", "dk", "dv"};
  for (int i = 0; i < 3; ++i) {
    MlirType want = mlirValueGetType(mlirOperationGetOperand(op, i));
    MlirType got = mlirValueGetType(mlirOperationGetResult(op, i));
    char w[128], g[128];
    if (!mlirTypeEqual(want, got))
      return attn_emit_errorf(op, "result %s must have the type of %c, %s, "
                                  "found %s",
                              names[i], "qkv"[i],
                              attn_type_str(want, w, sizeof w),
                              attn_type_str(got, g, sizeof g));
  }
  return true;
}

/// The cache operands of attn.fused_decode and attn.cache_append:
/// k_cache and v_cache [batch, Hk, M, *] or [P, Hk, page_size, *], the
/// lengths [batch] and, paged, the block table [batch, max_pages]; of: a
/// tensor of the op (for expect_aux).
static bool verify_cache(MlirOperation op, int64_t batch, const int64_t k[4],
                         const int64_t v[4], enum attn_cache_layout layout,
                         int64_t page_size, bool has_table, int64_t max_seq,
                         MlirValue lens_v, MlirValue table_v, MlirValue of) {
  if (k[0] != v[0] || k[1] != v[1] || k[2] != v[2])
    return attn_emit_errorf(op, "k_cache and v_cache must have the same %s, "
                                "heads and rows",
                            layout == ATTN_CACHE_PAGED ? "pages" : "batch");
  if (layout == ATTN_CACHE_CONTIGUOUS && k[0] != batch)
    return attn_emit_errorf(op, "batch mismatch: %lld vs %lld in k_cache",
                            (long long)batch, (long long)k[0]);
  if (layout == ATTN_CACHE_PAGED) {
    int64_t p = page_size;
    if (p < ATTN_DECODE_MIN_PAGE || p > ATTN_DECODE_MAX_PAGE || (p & (p - 1)))
      return attn_emit_errorf(op,
                              "page_size must be a power of two from %d to "
                              "%d, found %lld",
                              ATTN_DECODE_MIN_PAGE, ATTN_DECODE_MAX_PAGE,
                              (long long)p);
    if (k[2] != p)
      return attn_emit_errorf(op,
                              "k_cache has pages of %lld rows, but page_size "
                              "is %lld",
                              (long long)k[2], (long long)p);
  }
  int64_t lens[4] = {batch};
  if (!expect_aux(op, lens_v, "cache_seqlens", 1, lens, true, of))
    return false;
  if (has_table) {
    MlirValue tv = table_v;
    int64_t t[8] = {0};
    int64_t want[4] = {
        batch, attn_static_shape(mlirValueGetType(tv), t) == 2 ? t[1] : 0};
    if (!expect_aux(op, tv, "block_table", 2, want, true, of))
      return false;
    if (t[1] < 1)
      return attn_emit_errorf(op, "block_table has no pages");
  }
  if (max_seq > INT32_MAX)
    return attn_emit_errorf(op,
                            "the cache holds up to %lld keys per sequence, "
                            "past 2147483647 (lengths are i32)",
                            (long long)max_seq);
  return true;
}

/// attn.fused_decode: q [B,H,Nq,D]; k_cache, v_cache [B,Hk,M,*] or
/// [P,Hk,page_size,*]; cache_seqlens [B] i32; block_table [B,max_pages] i32
/// with a paged cache; out [B,H,Nq,Dv].
static bool verify_fused_decode(MlirOperation op) {
  int64_t q[4], k[4], v[4];
  MlirValue qv = mlirOperationGetOperand(op, ATTN_DECODE_Q);
  MlirValue kv = mlirOperationGetOperand(op, ATTN_DECODE_K_CACHE);
  MlirValue vv = mlirOperationGetOperand(op, ATTN_DECODE_V_CACHE);
  if (!get_bhnd(op, qv, "q", q) || !get_bhnd(op, kv, "k_cache", k) ||
      !get_bhnd(op, vv, "v_cache", v) ||
      !same_elem(op, qv, kv, "q", "k_cache") ||
      !same_elem(op, qv, vv, "q", "v_cache"))
    return false;
  if (mlirTypeIsAF64(mlirShapedTypeGetElementType(mlirValueGetType(qv))))
    return attn_emit_errorf(op, "attn.fused_decode takes f32, f16 or bf16 "
                                "tensors, found f64");
  struct attn_decode_config c;
  char err[256];
  bool flag;
  if (attn_attr_bool(op, "page_size", &flag))
    return attn_emit_errorf(op, "page_size must be an integer, found a "
                                "boolean");
  if (!attn_decode_read(op, &c, err, sizeof err))
    return attn_emit_errorf(op, "%s", err);
  const struct attn_fused_config *b = &c.base;
  if (q[3] != k[3])
    return attn_emit_errorf(op,
                            "head dim mismatch: q has %lld, k_cache has %lld",
                            (long long)q[3], (long long)k[3]);
  if (q[1] % k[1] != 0)
    return attn_emit_errorf(op,
                            "query heads %lld are not a multiple of k_cache "
                            "heads %lld",
                            (long long)q[1], (long long)k[1]);
  if (!verify_cache(op, q[0], k, v, c.layout, c.page_size, c.has_table,
                    c.max_seq, mlirOperationGetOperand(op, ATTN_DECODE_SEQLENS),
                    c.has_table ? mlirOperationGetOperand(op, ATTN_DECODE_TABLE)
                                : (MlirValue){NULL},
                    qv))
    return false;
  if (q[2] > c.max_seq)
    return attn_emit_errorf(op,
                            "q has %lld rows but a sequence holds at most "
                            "%lld keys",
                            (long long)q[2], (long long)c.max_seq);
  if (!check_scale(op, b->scale) ||
      (b->has_window && !check_window(op, b->window_left, b->window_right)) ||
      (b->has_alibi &&
       !check_positive(op, "alibi max_bias", b->alibi_max_bias)) ||
      (b->has_softcap && !check_positive(op, "softcap cap", b->softcap)) ||
      (b->has_rope && !attn_rope_check(op, &b->rope, q[3])))
    return false;
  if (mlirOperationGetNumResults(op) != 1)
    return attn_emit_errorf(op, "attn.fused_decode has one result, found %ld",
                            (long)mlirOperationGetNumResults(op));
  int64_t o[4] = {q[0], q[1], q[2], v[3]};
  return expect_shape(op, mlirOperationGetResult(op, 0), "result", o) &&
         same_elem(op, qv, mlirOperationGetResult(op, 0), "q", "result");
}

/// attn.cache_append: k_cache, v_cache as attn.fused_decode's; k_new
/// [B, Hk, N, D] and v_new [B, Hk, N, Dv] of the caches' element type; the
/// results of the caches' types (IRDL checks that).
static bool verify_cache_append(MlirOperation op) {
  int64_t k[4], v[4], kn[4], vn[4];
  struct attn_append_config c;
  char err[256];
  bool flag;
  if (attn_attr_bool(op, "page_size", &flag))
    return attn_emit_errorf(op, "page_size must be an integer, found a "
                                "boolean");
  if (!attn_cache_append_read(op, &c, err, sizeof err))
    return attn_emit_errorf(op, "%s", err);
  MlirValue kv = mlirOperationGetOperand(op, ATTN_APPEND_K_CACHE);
  MlirValue vv = mlirOperationGetOperand(op, ATTN_APPEND_V_CACHE);
  MlirValue knv = mlirOperationGetOperand(op, attn_append_k_new(&c));
  MlirValue vnv = mlirOperationGetOperand(op, attn_append_k_new(&c) + 1);
  if (!get_bhnd(op, kv, "k_cache", k) || !get_bhnd(op, vv, "v_cache", v) ||
      !get_bhnd(op, knv, "k_new", kn) || !get_bhnd(op, vnv, "v_new", vn) ||
      !same_elem(op, kv, vv, "k_cache", "v_cache") ||
      !same_elem(op, kv, knv, "k_cache", "k_new") ||
      !same_elem(op, kv, vnv, "k_cache", "v_new"))
    return false;
  if (mlirTypeIsAF64(mlirShapedTypeGetElementType(mlirValueGetType(kv))))
    return attn_emit_errorf(op, "attn.cache_append takes f32, f16 or bf16 "
                                "tensors, found f64");
  if (kn[3] != k[3])
    return attn_emit_errorf(op,
                            "head dim mismatch: k_new has %lld, k_cache has "
                            "%lld",
                            (long long)kn[3], (long long)k[3]);
  if (kn[1] != k[1])
    return attn_emit_errorf(op, "k_new has %lld heads, k_cache %lld",
                            (long long)kn[1], (long long)k[1]);
  int64_t want[4] = {kn[0], kn[1], kn[2], v[3]};
  if (!expect_shape(op, vnv, "v_new", want))
    return false;
  if (!verify_cache(op, kn[0], k, v, c.layout, c.page_size, c.has_table,
                    c.max_seq, mlirOperationGetOperand(op, ATTN_APPEND_SEQLENS),
                    c.has_table ? mlirOperationGetOperand(op, ATTN_APPEND_TABLE)
                                : (MlirValue){NULL},
                    kv))
    return false;
  if (kn[2] > c.max_seq)
    return attn_emit_errorf(op,
                            "k_new has %lld rows but a sequence holds at most "
                            "%lld keys",
                            (long long)kn[2], (long long)c.max_seq);
  return !c.has_rope || attn_rope_check(op, &c.rope, k[3]);
}

bool attn_attn_verify_op(MlirOperation op) {
  if (attn_op_is(op, ATTN_OP_ROPE))
    return verify_rope(op);
  if (attn_op_is(op, ATTN_OP_PROJECT))
    return verify_project(op);
  if (attn_op_is(op, ATTN_OP_QK))
    return verify_qk(op);
  if (attn_op_is(op, ATTN_OP_PV))
    return verify_pv(op);
  if (attn_op_is(op, ATTN_OP_FUSED))
    return verify_fused(op);
  if (attn_op_is(op, ATTN_OP_FUSED_GRAD))
    return verify_fused_grad(op);
  if (attn_op_is(op, ATTN_OP_FUSED_DECODE))
    return verify_fused_decode(op);
  if (attn_op_is(op, ATTN_OP_CACHE_APPEND))
    return verify_cache_append(op);
  if (attn_is_score_mod(op))
    return verify_score_mod(op);
  if (attn_op_is(op, ATTN_OP_SOFTMAX)) {
    int64_t d[4];
    return get_bhnd(op, mlirOperationGetOperand(op, 0), "operand", d) &&
           check_takes_scores(op);
  }
  return true;
}
