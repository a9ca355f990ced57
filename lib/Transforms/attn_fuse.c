//===- attn_fuse.c - attn-fuse: one attn.fused op per attention chain -----===//
//
// Rewrites the chain
//
//   rope(q), rope(k) -> qk -> {scale, causal, window, alibi, softcap, gate,
//                              document}* -> softmax -> pv(., v)
//
// into one op that a kernel computes whole:
//
//   %o = "attn.fused"(%q, %k, %v, %gate, %qseg, %kseg) {
//          operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0>,
//          scale = 0.125 : f64, causal = true, window = array<i64: 256, 0>,
//          softcap = 30.0 : f64, gate_block = 64 : i64,
//          mods = ["scale", "softcap", "gate"],
//          rope = {theta = 1.0e4 : f64, rotary_dim = 64 : i64,
//                  layout = "rotate_half"}} : (...) -> tensor<...>
//
// Scales multiply (they are adjacent: the verifier rejects a softcap, alibi
// or gate between two scales); "mods" records the order of scale, softcap,
// alibi and gate, which do not commute; masks (causal, window, document)
// commute and become attributes or operands. A plain chain (no softcap,
// alibi, gate or attn.score_mod) gets no "mods".
//
// Modifiers of any form (issue 28) become attn.fused's two regions. The
// attn.score_mod bodies are cloned, in program order, into one score_fn
// block, each body's score argument mapped to the previous body's yielded
// value; "mods" names "fn" where that block applies. Adjacent score_mods
// compose (only masks between them); a scale, softcap, alibi or gate
// between two is an error at the later one for now. The attn.mask_mod
// bodies are cloned into one mask_fn block whose value is their results
// and-ed (masks commute). Captures stay what they were: the values from
// above that the bodies read.
//
//   %s1 = "attn.score_mod"(%s) ({^bb0(%x, %b, %h, %q, %kv): ... A(%x)})
//   %s2 = "attn.score_mod"(%s1) ({^bb0(%x, %b, %h, %q, %kv): ... B(%x)})
//   %s3 = "attn.mask_mod"(%s2) ({^bb0(%b, %h, %q, %kv): ... M})
//     ->
//   "attn.fused"(...) ({^bb0(%x, %b, %h, %q, %kv): ... B(A(%x))},
//                      {^bb0(%b, %h, %q, %kv): ... M}) {mods = ["fn"], ...} RoPE goes into the kernel when q and k are
// both rotated with one theta, rotary_dim and layout (each side keeps its own
// offset or positions). Every intermediate value must have one use, or the
// chain is left alone (the unfused ops are then reported by attn-tile). A
// chain left alone gets a remark at the op that stopped the match, saying
// why (attn_emit_remarkf: the tools print it). The short flag --fuse-rope
// names this pass too.
//
// Option rope-strategy (auto, fused, split, pre or producer) records where
// RoPE runs as rope.strategy (docs/cost-model.md): auto asks the Rotation
// Calculus (lib/CostModel) for the cheapest placement on the GPU named by
// option gpu (default H200), with the fused op's shapes and the Hopper
// kernel's 128 x 128 tiles; split and pre count as available only when
// rotary_dim is the head dim (the rotation kernels rotate whole rows).
// producer needs q and k to come from attn.project (each used only by its
// attn.rope, no explicit positions): the rotation then moves into the
// projections (their "rope" entry; the GEMM's epilogue rotates) and the
// fused op has no rope. auto counts it as available exactly then; asking
// for it otherwise is an error. Without the option nothing is recorded (the
// lowering picks); chains without RoPE ignore it.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "lib/CostModel/cost_model.h"
#include "lib/IR/attn_builder.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHAIN 24

/// rope-strategy: not given, auto, or one of the cost model's strategies.
enum { ROPE_NOT_SET = -2, ROPE_AUTO = -1 };

struct fuse_options {
  int rope;                       // ROPE_NOT_SET, ROPE_AUTO or a strategy
  const struct attn_cost_gpu *gpu; // static table entry
};

static const struct attn_pass_option fuse_options_help[] = {
    {"rope-strategy", "where RoPE runs: auto (the cost model's choice), "
                      "fused, split, pre or producer (default: not recorded)"},
    {"gpu", "GPU the cost model prices for rope-strategy=auto (default H200; "
            "H100, H200, A100, RTX3090)"},
    {NULL, NULL},
};

static void fuse_init(void *opts) {
  struct fuse_options *o = opts;
  o->rope = ROPE_NOT_SET;
  o->gpu = attn_cost_gpu_lookup(ATTN_COST_DEFAULT_GPU, NULL, 0);
}

static bool fuse_set(void *opts, const char *name, const char *value,
                     char *err, size_t errlen) {
  struct fuse_options *o = opts;
  if (!strcmp(name, "rope-strategy")) {
    enum attn_cost_strategy s;
    if (!strcmp(value, "auto")) {
      o->rope = ROPE_AUTO;
      return true;
    }
    if (attn_cost_strategy_parse(value, &s)) {
      o->rope = (int)s;
      return true;
    }
    snprintf(err, errlen,
             "option 'rope-strategy' expects auto, fused, split, pre or "
             "producer, found '%s'",
             value);
    return false;
  }
  if (!strcmp(name, "gpu")) {
    o->gpu = attn_cost_gpu_lookup(value, err, errlen);
    return o->gpu != NULL;
  }
  snprintf(err, errlen,
           "unknown option '%s' of pass 'attn-fuse' (expected rope-strategy "
           "or gpu)",
           name);
  return false;
}

/// The ops of one matched chain, users first, and what they compute.
struct chain {
  MlirOperation ops[MAX_CHAIN];
  int n;
  struct attn_fused_config cfg; // extra[] unused; see inputs
  bool scaled;                  // an attn.scale was matched
  MlirValue q, k, v;
  MlirValue inputs[ATTN_NUM_EXTRAS]; // null when absent
  enum attn_rope_strategy strategy;  // recorded in rope.strategy
  // The attn.project ops producing q and k (rope's operands), when each is
  // used only there and the rotations take no explicit positions: what
  // the producer placement needs. Null otherwise.
  MlirOperation project_q, project_k;
  // attn.score_mod and attn.mask_mod ops, users first (reverse program
  // order), and the first named non-commuting modifier met since the last
  // score_mod (what separates it from an earlier one).
  MlirOperation score_mods[MAX_CHAIN], mask_mods[MAX_CHAIN];
  int nscore, nmask;
  MlirOperation after_score_mod;
  bool failed; // an error (not a remark) was emitted: the pass fails
};

static bool has_one_use(MlirValue v) {
  MlirOpOperand use = mlirValueGetFirstUse(v);
  return !mlirOpOperandIsNull(use) &&
         mlirOpOperandIsNull(mlirOpOperandGetNextUse(use));
}

/// The op defining v if v is its only-used result; null otherwise.
static MlirOperation single_use_def(MlirValue v) {
  MlirOperation none = {NULL};
  if (!mlirValueIsAOpResult(v) || !has_one_use(v))
    return none;
  return mlirOpResultGetOwner(v);
}

/// The op defining v if it is named name and v is its only-used result.
static MlirOperation producer(MlirValue v, const char *name) {
  MlirOperation op = single_use_def(v);
  if (mlirOperationIsNull(op) || !attn_op_is(op, name))
    return (MlirOperation){NULL};
  return op;
}

static bool same_rope(const struct attn_rope_config *a,
                      const struct attn_rope_config *b) {
  return a->theta == b->theta && a->rotary_dim == b->rotary_dim &&
         a->layout == b->layout;
}

/// Records a non-commuting modifier seen walking up (so in reverse order).
/// Returns false when it was seen before (not a well-formed chain).
static bool note_mod(struct chain *c, enum attn_score_mod m) {
  for (int i = 0; i < c->cfg.nmods; ++i)
    if (c->cfg.mods[i] == m)
      return (m == ATTN_MOD_SCALE || m == ATTN_MOD_FN) &&
             i == c->cfg.nmods - 1; // adjacent scales or bodies
  c->cfg.mods[c->cfg.nmods++] = m;
  return true;
}

/// Notes a named non-commuting modifier op: it separates the score_mod
/// absorbed last (later in program order) from any earlier one.
static void note_between(struct chain *c, MlirOperation op) {
  if (c->nscore > 0 && mlirOperationIsNull(c->after_score_mod))
    c->after_score_mod = op;
}

/// Absorbs an attn.score_mod; false after an error when a named
/// non-commuting modifier separates it from the next one.
static bool absorb_score_mod(MlirOperation op, struct chain *c) {
  if (!mlirOperationIsNull(c->after_score_mod)) {
    char n[64];
    c->failed = true;
    return attn_emit_errorf(c->score_mods[c->nscore - 1],
                            "attn.score_mod ops must be adjacent in the "
                            "chain to fuse; found '%s' between two",
                            attn_op_name(c->after_score_mod, n, sizeof n));
  }
  c->score_mods[c->nscore++] = op;
  c->cfg.has_score_fn = true;
  return note_mod(c, ATTN_MOD_FN);
}

/// Absorbs the score modifier op into c; false when op is not one or the
/// chain is malformed (c->failed when that was an error).
static bool absorb_modifier(MlirOperation op, struct chain *c) {
  struct attn_fused_config *f = &c->cfg;
  double x;
  if (attn_op_is(op, ATTN_OP_SCORE_MOD))
    return absorb_score_mod(op, c);
  if (attn_op_is(op, ATTN_OP_MASK_MOD)) {
    c->mask_mods[c->nmask++] = op;
    f->has_mask_fn = true;
    return true;
  }
  if (attn_op_is(op, ATTN_OP_SCALE) || attn_op_is(op, ATTN_OP_SOFTCAP) ||
      attn_op_is(op, ATTN_OP_ALIBI) || attn_op_is(op, ATTN_OP_GATE))
    note_between(c, op);
  if (attn_op_is(op, ATTN_OP_SCALE)) {
    if (!attn_attr_f64(op, "scale", &x))
      return false;
    f->scale *= x;
    c->scaled = true;
    return note_mod(c, ATTN_MOD_SCALE);
  }
  if (attn_op_is(op, ATTN_OP_CAUSAL)) {
    bool again = f->causal;
    f->causal = true;
    return !again;
  }
  if (attn_op_is(op, ATTN_OP_WINDOW)) {
    if (f->has_window || !attn_attr_i64(op, "left", &f->window_left) ||
        !attn_attr_i64(op, "right", &f->window_right))
      return false;
    return f->has_window = true;
  }
  if (attn_op_is(op, ATTN_OP_SOFTCAP)) {
    f->has_softcap = attn_attr_f64(op, "cap", &f->softcap);
    return f->has_softcap && note_mod(c, ATTN_MOD_SOFTCAP);
  }
  if (attn_op_is(op, ATTN_OP_ALIBI)) {
    f->has_alibi = attn_attr_f64(op, "max_bias", &f->alibi_max_bias);
    return f->has_alibi && note_mod(c, ATTN_MOD_ALIBI);
  }
  if (attn_op_is(op, ATTN_OP_GATE)) {
    f->has_gate = attn_attr_i64(op, "block_size", &f->gate_block);
    c->inputs[ATTN_EXTRA_GATE] = mlirOperationGetOperand(op, 1);
    return f->has_gate && note_mod(c, ATTN_MOD_GATE);
  }
  if (attn_op_is(op, ATTN_OP_DOCUMENT)) {
    if (f->document)
      return false;
    f->document = true;
    c->inputs[ATTN_EXTRA_Q_SEGMENTS] = mlirOperationGetOperand(op, 1);
    c->inputs[ATTN_EXTRA_K_SEGMENTS] = mlirOperationGetOperand(op, 2);
    return true;
  }
  return false;
}

/// Fuses rope(q) and rope(k) into c when both rotate alike.
static void match_rope(struct chain *c) {
  MlirOperation rq = producer(c->q, ATTN_OP_ROPE);
  MlirOperation rk = producer(c->k, ATTN_OP_ROPE);
  struct attn_rope_config cq, ck;
  if (mlirOperationIsNull(rq) || mlirOperationIsNull(rk) ||
      !attn_rope_get_config(rq, &cq) || !attn_rope_get_config(rk, &ck) ||
      !same_rope(&cq, &ck))
    return;
  c->cfg.has_rope = true;
  c->cfg.rope = cq;
  c->cfg.rope.offset = 0;
  c->cfg.q_offset = cq.offset;
  c->cfg.k_offset = ck.offset;
  c->q = mlirOperationGetOperand(rq, 0);
  c->k = mlirOperationGetOperand(rk, 0);
  if (mlirOperationGetNumOperands(rq) > 1)
    c->inputs[ATTN_EXTRA_Q_POSITIONS] = mlirOperationGetOperand(rq, 1);
  if (mlirOperationGetNumOperands(rk) > 1)
    c->inputs[ATTN_EXTRA_K_POSITIONS] = mlirOperationGetOperand(rk, 1);
  c->ops[c->n++] = rq;
  c->ops[c->n++] = rk;
  if (mlirValueIsNull(c->inputs[ATTN_EXTRA_Q_POSITIONS]) &&
      mlirValueIsNull(c->inputs[ATTN_EXTRA_K_POSITIONS])) {
    if (attn_rope_producer_available(c->q, c->k)) {
      c->project_q = producer(c->q, ATTN_OP_PROJECT);
      c->project_k = producer(c->k, ATTN_OP_PROJECT);
    }
  }
}

static bool same_elem_type(MlirValue a, MlirValue b) {
  return mlirTypeEqual(mlirShapedTypeGetElementType(mlirValueGetType(a)),
                       mlirShapedTypeGetElementType(mlirValueGetType(b)));
}

static int count_uses(MlirValue v) {
  int n = 0;
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u))
    ++n;
  return n;
}

static const char *const score_mods =
    "attn.scale, attn.causal, attn.window, attn.softcap, attn.alibi, "
    "attn.gate, attn.document, attn.score_mod or attn.mask_mod";

/// Remarks why the chain reaching `user` through its operand v stops at v
/// (v is not the single-use result of an op named want, or of a score
/// modifier when mods): at v's op, or at user for a block argument.
/// Returns false.
static bool remark_stop(MlirOperation user, MlirValue v, const char *want,
                        bool mods) {
  MlirStringRef un = mlirIdentifierStr(mlirOperationGetName(user));
  if (!mlirValueIsAOpResult(v)) {
    attn_emit_remarkf(user,
                      "attn-fuse did not fuse this attention: the operand of "
                      "'%.*s' is a block argument, not the result of %s",
                      (int)un.length, un.data, want);
    return false;
  }
  MlirOperation def = mlirOpResultGetOwner(v);
  MlirStringRef dn = mlirIdentifierStr(mlirOperationGetName(def));
  int uses = count_uses(v);
  if (uses != 1 && (attn_op_is(def, want) || (mods && attn_is_score_mod(def))))
    attn_emit_remarkf(def,
                      "attn-fuse did not fuse this attention: the result of "
                      "'%.*s' has %d uses (every value inside the chain must "
                      "have one)",
                      (int)dn.length, dn.data, uses);
  else if (mods)
    attn_emit_remarkf(def,
                      "attn-fuse did not fuse this attention: '%.*s' between "
                      "attn.qk and attn.softmax is not a score modifier "
                      "(expected %s)",
                      (int)dn.length, dn.data, score_mods);
  else
    attn_emit_remarkf(def,
                      "attn-fuse did not fuse this attention: '%.*s' feeds "
                      "'%.*s', which takes the result of %s",
                      (int)dn.length, dn.data, (int)un.length, un.data, want);
  return false;
}

/// Matches the chain ending at pv into c. Returns false, with a remark at
/// the op that stops it, when pv does not end a chain attn-fuse can fuse.
static bool match_chain(MlirOperation pv, struct chain *c) {
  *c = (struct chain){.n = 0};
  c->cfg.scale = 1.0;
  c->ops[c->n++] = pv;
  c->v = mlirOperationGetOperand(pv, 1);
  MlirOperation sm = producer(mlirOperationGetOperand(pv, 0), ATTN_OP_SOFTMAX);
  if (mlirOperationIsNull(sm))
    return remark_stop(pv, mlirOperationGetOperand(pv, 0), ATTN_OP_SOFTMAX,
                       false);
  c->ops[c->n++] = sm;
  MlirValue s = mlirOperationGetOperand(sm, 0);
  MlirOperation op, user = sm;
  while (!mlirOperationIsNull(op = single_use_def(s)) &&
         attn_is_score_mod(op)) {
    if (c->n >= MAX_CHAIN - 3) {
      attn_emit_remarkf(op, "attn-fuse did not fuse this attention: it has "
                            "more than %d score modifiers",
                        MAX_CHAIN - 4);
      return false;
    }
    if (!absorb_modifier(op, c)) {
      if (c->failed)
        return false;
      MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
      attn_emit_remarkf(op,
                        "attn-fuse did not fuse this attention: a second "
                        "'%.*s' in one chain (only adjacent attn.scale ops "
                        "may repeat)",
                        (int)n.length, n.data);
      return false;
    }
    c->ops[c->n++] = op;
    user = op;
    s = mlirOperationGetOperand(op, 0);
  }
  // Modifiers were met last-first: put them in program order.
  for (int i = 0, j = c->cfg.nmods - 1; i < j; ++i, --j) {
    enum attn_score_mod t = c->cfg.mods[i];
    c->cfg.mods[i] = c->cfg.mods[j];
    c->cfg.mods[j] = t;
  }
  MlirOperation qk = producer(s, ATTN_OP_QK);
  if (mlirOperationIsNull(qk))
    return remark_stop(user, s, ATTN_OP_QK, true);
  c->ops[c->n++] = qk;
  c->q = mlirOperationGetOperand(qk, 0);
  c->k = mlirOperationGetOperand(qk, 1);
  match_rope(c);
  // One kernel reads and writes one element type (attn.fused's rule).
  MlirValue out = mlirOperationGetResult(pv, 0);
  if (!same_elem_type(c->q, out) || !same_elem_type(c->q, c->k) ||
      !same_elem_type(c->q, c->v)) {
    attn_emit_remarkf(pv, "attn-fuse did not fuse this attention: q, k, v "
                          "and the result of attn.pv have different element "
                          "types (one kernel reads and writes one)");
    return false;
  }
  return true;
}

static MlirNamedAttribute named(MlirContext ctx, const char *name,
                                MlirAttribute a) {
  return mlirNamedAttributeGet(
      mlirIdentifierGet(ctx, mlirStringRefCreateFromCString(name)), a);
}

static MlirAttribute f64_attr(MlirContext ctx, double x) {
  return mlirFloatAttrDoubleGet(ctx, mlirF64TypeGet(ctx), x);
}

/// "mods" in program order; scale is named only when an attn.scale was
/// matched. Returns a null attribute for plain chains.
static MlirAttribute mods_attr(MlirContext ctx, const struct chain *c) {
  const struct attn_fused_config *f = &c->cfg;
  if (!f->has_softcap && !f->has_alibi && !f->has_gate && !f->has_score_fn)
    return (MlirAttribute){NULL};
  MlirAttribute names[ATTN_NUM_MODS];
  int n = 0;
  for (int i = 0; i < f->nmods; ++i)
    names[n++] = mlirStringAttrGet(
        ctx, mlirStringRefCreateFromCString(attn_score_mod_name(f->mods[i])));
  return mlirArrayAttrGet(ctx, n, names);
}

/// A new block with a score body's (score, of type score_ty: the
/// program's compute type) or a mask body's arguments, located at loc,
/// appended to region.
static MlirBlock body_block(MlirContext ctx, MlirRegion region, bool score,
                            MlirType score_ty, MlirLocation loc) {
  MlirType idx = mlirIndexTypeGet(ctx);
  MlirType types[5] = {score_ty, idx, idx, idx, idx};
  MlirLocation locs[5] = {loc, loc, loc, loc, loc};
  int n = score ? 5 : 4;
  MlirBlock b = mlirBlockCreate(n, score ? types : types + 1, locs);
  mlirRegionAppendOwnedBlock(region, b);
  return b;
}

/// Fills score_fn (region 0 of fused) with the chain's score_mod bodies
/// composed in program order, and mask_fn (region 1) with its mask_mod
/// bodies and-ed. Returns false after a diagnostic at fused.
static bool compose_bodies(MlirOperation fused, const struct chain *c) {
  MlirContext ctx = mlirOperationGetContext(fused);
  struct attn_b_map m = {0};
  struct attn_builder b;
  bool ok = true;
  if (c->nscore > 0) {
    // score_mods[] is users first: the first body applied is the last one.
    MlirOperation first = c->score_mods[c->nscore - 1];
    // The score's type is the bodies' own (f32, or f64 in f64 programs).
    MlirType score_ty = mlirValueGetType(mlirBlockGetArgument(
        mlirRegionGetFirstBlock(mlirOperationGetRegion(first, 0)), 0));
    MlirBlock blk = body_block(ctx, mlirOperationGetRegion(fused, 0), true,
                               score_ty, mlirOperationGetLocation(first));
    MlirValue args[5];
    for (int i = 0; i < 5; ++i)
      args[i] = mlirBlockGetArgument(blk, i);
    attn_builder_init(&b, ctx, mlirOperationGetLocation(c->score_mods[0]));
    attn_builder_at_end(&b, blk);
    for (int k = c->nscore - 1; k >= 0; --k)
      args[0] = attn_b_clone_body(
          &b,
          mlirRegionGetFirstBlock(mlirOperationGetRegion(c->score_mods[k], 0)),
          args, &m, NULL, NULL);
    attn_b_op(&b, "gpu.yield", 0, NULL, 1, args, 0, NULL, 0);
    ok = attn_builder_finish(&b);
  }
  if (ok && c->nmask > 0) {
    MlirOperation first = c->mask_mods[c->nmask - 1];
    MlirBlock blk = body_block(ctx, mlirOperationGetRegion(fused, 1), false,
                               mlirIndexTypeGet(ctx),
                               mlirOperationGetLocation(first));
    MlirValue args[4], visible = {NULL};
    for (int i = 0; i < 4; ++i)
      args[i] = mlirBlockGetArgument(blk, i);
    attn_builder_init(&b, ctx, mlirOperationGetLocation(first));
    attn_builder_at_end(&b, blk);
    for (int k = c->nmask - 1; k >= 0; --k) {
      MlirValue v = attn_b_clone_body(
          &b,
          mlirRegionGetFirstBlock(mlirOperationGetRegion(c->mask_mods[k], 0)),
          args, &m, NULL, NULL);
      b.loc = mlirOperationGetLocation(c->mask_mods[k]);
      visible = mlirValueIsNull(visible) ? v : attn_b_andi(&b, visible, v);
    }
    attn_b_op(&b, "gpu.yield", 0, NULL, 1, &visible, 0, NULL, 0);
    ok = attn_builder_finish(&b);
  }
  attn_b_map_free(&m);
  if (!ok)
    return attn_emit_errorf(fused, "attn-fuse could not compose the "
                                   "modifier bodies");
  return true;
}

static bool rewrite_chain(MlirOperation pv, const struct chain *c) {
  MlirContext ctx = mlirOperationGetContext(pv);
  const struct attn_fused_config *f = &c->cfg;
  MlirOperationState st =
      mlirOperationStateGet(mlirStringRefCreateFromCString(ATTN_OP_FUSED),
                            mlirOperationGetLocation(pv));
  MlirValue operands[3 + ATTN_NUM_EXTRAS] = {c->q, c->k, c->v};
  int32_t segments[3 + ATTN_NUM_EXTRAS] = {1, 1, 1};
  int nops = 3;
  for (int i = 0; i < ATTN_NUM_EXTRAS; ++i) {
    segments[3 + i] = !mlirValueIsNull(c->inputs[i]);
    if (segments[3 + i])
      operands[nops++] = c->inputs[i];
  }
  mlirOperationStateAddOperands(&st, nops, operands);
  // score_fn and mask_fn: empty here; compose_bodies fills them when the
  // chain has attn.score_mod or attn.mask_mod bodies.
  MlirRegion regions[2] = {mlirRegionCreate(), mlirRegionCreate()};
  mlirOperationStateAddOwnedRegions(&st, 2, regions);
  MlirType result = mlirValueGetType(mlirOperationGetResult(pv, 0));
  mlirOperationStateAddResults(&st, 1, &result);
  MlirType i64 = mlirIntegerTypeGet(ctx, 64);
  MlirNamedAttribute attrs[10];
  int na = 0;
  attrs[na++] = named(ctx, "operandSegmentSizes",
                      mlirDenseI32ArrayGet(ctx, 3 + ATTN_NUM_EXTRAS, segments));
  attrs[na++] = named(ctx, "scale", f64_attr(ctx, f->scale));
  attrs[na++] = named(ctx, "causal", mlirBoolAttrGet(ctx, f->causal));
  if (f->has_window) {
    int64_t w[2] = {f->window_left, f->window_right};
    attrs[na++] = named(ctx, "window", mlirDenseI64ArrayGet(ctx, 2, w));
  }
  if (f->has_alibi)
    attrs[na++] = named(ctx, "alibi", f64_attr(ctx, f->alibi_max_bias));
  if (f->has_softcap)
    attrs[na++] = named(ctx, "softcap", f64_attr(ctx, f->softcap));
  if (f->has_gate)
    attrs[na++] =
        named(ctx, "gate_block", mlirIntegerAttrGet(i64, f->gate_block));
  if (f->has_rope)
    attrs[na++] = named(
        ctx, "rope",
        attn_rope_config_to_attr(ctx, &f->rope, f->q_offset, f->k_offset,
                                 c->strategy));
  MlirAttribute mods = mods_attr(ctx, c);
  if (!mlirAttributeIsNull(mods))
    attrs[na++] = named(ctx, "mods", mods);
  mlirOperationStateAddAttributes(&st, na, attrs);
  MlirOperation fused = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(pv), pv, fused);
  if (!compose_bodies(fused, c)) {
    mlirOperationDestroy(fused);
    return false;
  }
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(pv, 0),
                                mlirOperationGetResult(fused, 0));
  for (int i = 0; i < c->n; ++i)
    mlirOperationDestroy(c->ops[i]);
  return true;
}

static MlirWalkResult collect_pv(MlirOperation op, void *user) {
  struct attn_op_list *list = user;
  if (attn_op_is(op, ATTN_OP_PV))
    attn_op_list_push(list, op);
  return MlirWalkResultAdvance;
}

static int64_t dim_of(MlirValue v, int i) {
  int64_t d[8];
  return attn_static_shape(mlirValueGetType(v), d) == 4 ? d[i] : 0;
}

unsigned attn_rope_cost_problem(MlirValue q, MlirValue k,
                                const struct attn_fused_config *cfg,
                                struct attn_cost_problem *p) {
  MlirType e = mlirShapedTypeGetElementType(mlirValueGetType(q));
  *p = (struct attn_cost_problem){
      .batch = dim_of(q, 0),
      .heads = dim_of(q, 1),
      .kv_heads = dim_of(k, 1),
      .seq_q = dim_of(q, 2),
      .seq_k = dim_of(k, 2),
      .head_dim = dim_of(q, 3),
      .rotary_dim = cfg->has_rope ? cfg->rope.rotary_dim : 0,
      .causal = cfg->causal,
      .dtype_bytes = mlirTypeIsAF32(e) ? 4 : 2,
      .block_m = 128,
      .block_n = 128,
  };
  unsigned avail = ATTN_COST_BIT(ATTN_COST_FUSED);
  if (p->rotary_dim == p->head_dim)
    avail |= ATTN_COST_BIT(ATTN_COST_SPLIT) | ATTN_COST_BIT(ATTN_COST_PRE);
  return avail;
}

/// Decides c's rope.strategy from the option; false after a diagnostic at
/// pv (the fused op's location).
static bool place_rope(MlirOperation pv, struct chain *c,
                       const struct fuse_options *o) {
  c->strategy = ATTN_ROPE_STRATEGY_NONE;
  if (!c->cfg.has_rope || o->rope == ROPE_NOT_SET)
    return true;
  bool projected = !mlirOperationIsNull(c->project_q) &&
                   !mlirOperationIsNull(c->project_k);
  if (o->rope == ATTN_COST_PRODUCER && !projected)
    return attn_emit_errorf(pv, "rope-strategy=producer needs q and k to be "
                                "attn.project results used only by their "
                                "attn.rope, with no explicit positions");
  enum attn_cost_strategy s = (enum attn_cost_strategy)o->rope;
  if (o->rope == ROPE_AUTO) {
    struct attn_cost_problem p;
    unsigned avail = attn_rope_cost_problem(c->q, c->k, &c->cfg, &p);
    if (projected)
      avail |= ATTN_COST_BIT(ATTN_COST_PRODUCER);
    char err[256];
    if (!attn_cost_check_problem(&p, err, sizeof err))
      return attn_emit_errorf(pv, "rope-strategy=auto cannot price this "
                                  "attention: %s",
                              err);
    s = attn_cost_choose(&p, o->gpu, avail, NULL);
    if (s == ATTN_COST_NUM_STRATEGIES)
      return attn_emit_errorf(pv, "rope-strategy=auto found no placement");
  }
  static const enum attn_rope_strategy to_ir[ATTN_COST_NUM_STRATEGIES] = {
      ATTN_ROPE_STRATEGY_FUSED, ATTN_ROPE_STRATEGY_SPLIT,
      ATTN_ROPE_STRATEGY_PRE, ATTN_ROPE_STRATEGY_PRODUCER};
  c->strategy = to_ir[s];
  return true;
}

/// The producer placement: each projection rotates its own output (the
/// GEMM's epilogue), so attention gets rotated q and k and no rope.
static void move_rope_to_projections(struct chain *c) {
  MlirContext ctx = mlirOperationGetContext(c->project_q);
  MlirOperation proj[2] = {c->project_q, c->project_k};
  int64_t offset[2] = {c->cfg.q_offset, c->cfg.k_offset};
  for (int i = 0; i < 2; ++i)
    mlirOperationSetAttributeByName(
        proj[i], mlirStringRefCreateFromCString("rope"),
        attn_rope_config_to_attr(ctx, &c->cfg.rope, offset[i], offset[i],
                                 ATTN_ROPE_STRATEGY_PRODUCER));
  c->cfg.has_rope = false;
}

static bool attn_fuse_run(MlirOperation module, const void *opts) {
  const struct fuse_options *o = opts;
  struct attn_op_list pvs = {0};
  mlirOperationWalk(module, collect_pv, &pvs, MlirWalkPostOrder);
  bool placed = true;
  for (size_t i = 0; i < pvs.n && placed; ++i) {
    struct chain c;
    if (!match_chain(pvs.ops[i], &c)) {
      placed = !c.failed;
      continue;
    }
    if ((placed = place_rope(pvs.ops[i], &c, o))) {
      if (c.strategy == ATTN_ROPE_STRATEGY_PRODUCER)
        move_rope_to_projections(&c);
      placed = rewrite_chain(pvs.ops[i], &c);
    }
  }
  bool ok = !pvs.failed;
  free(pvs.ops);
  if (!ok)
    return attn_emit_errorf(module, "attn-fuse: out of memory");
  return placed;
}

bool attn_rope_producer_available(MlirValue q, MlirValue k) {
  return !mlirOperationIsNull(producer(q, ATTN_OP_PROJECT)) &&
         !mlirOperationIsNull(producer(k, ATTN_OP_PROJECT));
}

static MlirWalkResult find_project(MlirOperation op, void *user) {
  if (!attn_op_is(op, ATTN_OP_PROJECT))
    return MlirWalkResultAdvance;
  *(bool *)user = true;
  return MlirWalkResultInterrupt;
}

void attn_fuse_pipeline(MlirOperation module, const char *rope_strategy,
                        bool grad, struct attn_strbuf *out) {
  bool project = false;
  if (!rope_strategy || !*rope_strategy) {
    mlirOperationWalk(module, find_project, &project, MlirWalkPreOrder);
    rope_strategy = project ? "auto" : NULL;
  }
  attn_strbuf_printf(out, "attn-fuse");
  if (rope_strategy)
    attn_strbuf_printf(out, "{rope-strategy=%s}", rope_strategy);
  if (grad)
    attn_strbuf_printf(out, ",attn-grad");
}

const struct attn_pass_def attn_fuse_pass = {
    .argument = "attn-fuse",
    .alias = "fuse-rope",
    .description = "Fuse rope/qk/scale/causal/softmax/pv chains, with any "
                   "score modifiers, into one attn.fused op with RoPE inside",
    .options = fuse_options_help,
    .options_size = sizeof(struct fuse_options),
    .init_options = fuse_init,
    .set_option = fuse_set,
    .run = attn_fuse_run,
};
