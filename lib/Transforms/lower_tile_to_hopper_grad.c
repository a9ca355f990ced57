//===- lower_tile_to_hopper_grad.c - The Hopper backward of an attention --===//
//
// lower-tile-to-hopper's share for the backward attn-tile writes from
// attn.fused_grad (issue 29): the tile kernels @<f>__grad__dkdv and
// @<f>__grad__dq (tile.attention_grad, part "dkdv" and "dq") become the
// sm_90a kernels of lib/Kernels/attention_bwd.c and one launch program
// @<f>__grad, which replaces attn-tile's of that name:
//
//   inputs    attn-tile's: q, k, v, the captures, out, lse, dout, dq, dk, dv
//   workspace q_rot, k_rot (RoPE), rows, dq_acc, dk_acc
//   steps     [__rope_q, __rope_k] (RoPE: Q and K rotated before, the pre
//             placement's kernels), __pre, __main, __dq_out, __dk_out
//
// Supported: bf16 or f16, head dim 64, 128 or 256 (v's equal), scale, causal,
// windows, RoPE at offsets with rotary_dim == head dim, MHA or GQA, and
// the modifiers and masks as the tile kernel computes them (describe_step:
// tile.score_mod's scale and tile.score_fn bodies in order, tile.mask_fn
// bodies, tile.score_fn_grad's derivative; softcap, ALiBi, the gate and
// documents among them), reading captured tensors (the main kernel takes
// them after its twelve parameters). Not: explicit RoPE positions, partial
// RoPE, bodies that read q, k or v, head dim 256. attn_hopper_grad_supports
// says what it can of attn.fused_grad for the drivers (gpu_pipeline.c).
// Anything else is a diagnostic, or with fallback=true is left to
// lower-tile-to-gpu.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels.h"
#include "lib/Target/attn_target.h"
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/tile/tile_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/// Whether the string attribute a (maybe null) is s.
static bool str_is(MlirAttribute a, const char *s) {
  return !mlirAttributeIsNull(a) && mlirAttributeIsAString(a) &&
         attn_str_eq(mlirStringAttrGetValue(a), s);
}

/// Checks the description keys of the backward (attn.fused_grad's
/// attributes or tile.attention_grad's entries): scale, causal, mods of the
/// scale alone, RoPE at offsets with rotary_dim == head_dim, and the keys in
/// ignore; why says what else there is.
static bool keys_supported(MlirAttribute dict, int64_t head_dim,
                           const char *const *ignore, const char **why) {
  for (intptr_t i = 0, n = mlirDictionaryAttrGetNumElements(dict); i < n; ++i) {
    MlirNamedAttribute e = mlirDictionaryAttrGetElement(dict, i);
    MlirStringRef key = mlirIdentifierStr(e.name);
    bool skip = false;
    for (const char *const *s = ignore; *s; ++s)
      skip |= attn_str_eq(key, *s);
    if (skip || attn_str_eq(key, "causal"))
      continue;
    if (attn_str_eq(key, "scale")) {
      if (!mlirAttributeIsAFloat(e.attribute) ||
          !(mlirFloatAttrGetValueDouble(e.attribute) > 0)) {
        *why = "the Hopper backward needs a positive scale";
        return false;
      }
      continue;
    }
    // The modifiers and masks come as bodies in the tile kernels
    // (describe reads them there); these keys only name them.
    if (attn_str_eq(key, "mods") || attn_str_eq(key, "softcap") ||
        attn_str_eq(key, "alibi") || attn_str_eq(key, "gate_block") ||
        attn_str_eq(key, "window") || attn_str_eq(key, "document"))
      continue;
    if (attn_str_eq(key, "rope")) {
      MlirAttribute r = e.attribute;
      MlirAttribute rd = mlirAttributeIsADictionary(r)
                             ? attn_dict_get(r, "rotary_dim")
                             : (MlirAttribute){NULL};
      if (mlirAttributeIsNull(rd) || !mlirAttributeIsAInteger(rd) ||
          mlirIntegerAttrGetValueInt(rd) != head_dim) {
        *why = "the Hopper backward's RoPE needs rotary_dim equal to the head "
               "dim";
        return false;
      }
      if (!mlirAttributeIsNull(attn_dict_get(r, "q_positions")) ||
          !mlirAttributeIsNull(attn_dict_get(r, "k_positions"))) {
        *why = "the Hopper backward's RoPE takes positions at offsets only";
        return false;
      }
      continue;
    }
    *why = "the Hopper backward computes scale, causal, softcap, ALiBi, the "
           "gate, windows, documents, score and mask functions and RoPE only";
    return false;
  }
  return true;
}

/// The shapes' checks: bf16 or f16, head dim 64, 128 or 256, v's equal, the
/// grid's limits.
static bool shapes_supported(MlirType qt, MlirType kt, MlirType vt,
                             const char **why) {
  int64_t q[8], k[8], v[8];
  if (attn_static_shape(qt, q) != 4 || attn_static_shape(kt, k) != 4 ||
      attn_static_shape(vt, v) != 4) {
    *why = "the Hopper backward needs static rank-4 q, k and v";
    return false;
  }
  MlirType e = mlirShapedTypeGetElementType(qt);
  if (!mlirTypeIsABF16(e) && !mlirTypeIsAF16(e)) {
    *why = "the Hopper backward takes bf16 or f16";
    return false;
  }
  if ((q[3] != 64 && q[3] != 128 && q[3] != 256) || v[3] != q[3]) {
    *why = "the Hopper backward has head dims 64, 128 and 256";
    return false;
  }
  if (q[0] > 65535 || k[1] > 65535 || q[2] > (1 << 24) || k[2] > (1 << 24)) {
    *why = "the Hopper backward's grid takes at most 65535 heads and batch, "
           "and 2^24 rows";
    return false;
  }
  // Rows are i32 in the kernels (the query rows padded to blocks of 64).
  if (q[0] * q[1] * ((q[2] + 63) / 64 * 64) >= (1LL << 31) ||
      k[0] * k[1] * k[2] >= (1LL << 31)) {
    *why = "the tensors are too large for the Hopper backward's 32-bit row "
           "indices";
    return false;
  }
  return true;
}

/// Whether t (a tensor or memref) can be a gradient buffer of the Hopper
/// backward: static f32 of rank 1 to 4, fewer than 2^31 elements.
static bool grad_buffer_ok(MlirType t) {
  int64_t s[8];
  int rank = attn_static_shape(t, s);
  if (rank < 1 || rank > 4 || !mlirTypeIsAF32(mlirShapedTypeGetElementType(t)))
    return false;
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) {
    n *= s[d];
    if (n >= (1LL << 31))
      return false;
  }
  return true;
}

bool attn_hopper_grad_supports(MlirOperation grad, const char **why) {
  // q, k, v, out, lse, dout, then the gate, segment ids and captures, which
  // the kernels read as captures (explicit RoPE positions are refused by
  // keys_supported); bodies of any form, which describe checks once tiled
  // (a drivers' fallback takes what it refuses).
  if (mlirOperationGetNumOperands(grad) < 6) {
    *why = "malformed attn.fused_grad";
    return false;
  }
  if (!shapes_supported(mlirValueGetType(mlirOperationGetOperand(grad, 0)),
                        mlirValueGetType(mlirOperationGetOperand(grad, 1)),
                        mlirValueGetType(mlirOperationGetOperand(grad, 2)),
                        why))
    return false;
  int64_t q[8];
  attn_static_shape(mlirValueGetType(mlirOperationGetOperand(grad, 0)), q);
  intptr_t n = mlirOperationGetNumAttributes(grad);
  MlirNamedAttribute attrs[n > 0 ? n : 1];
  for (intptr_t i = 0; i < n; ++i)
    attrs[i] = mlirOperationGetAttribute(grad, i);
  // Gradients into captured tensors: f32 buffers of at most rank 4 and
  // 2^31 elements (i32 offsets), at most ATTN_HOPPER_MAX_GRADS.
  intptr_t nres = mlirOperationGetNumResults(grad);
  if (nres - 3 > ATTN_HOPPER_MAX_GRADS) {
    *why = "the Hopper backward computes at most 4 gradients into captured "
           "tensors";
    return false;
  }
  for (intptr_t i = 3; i < nres; ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetResult(grad, i));
    if (!grad_buffer_ok(t)) {
      *why = "the Hopper backward's gradients into captured tensors are f32 "
             "of rank 1 to 4 and fewer than 2^31 elements";
      return false;
    }
  }
  static const char *const ignore[] = {"operandSegmentSizes",
                                       "resultSegmentSizes", "grads", NULL};
  return keys_supported(
      mlirDictionaryAttrGet(mlirOperationGetContext(grad), n, attrs), q[3],
      ignore, why);
}

static const struct attn_attention_family bwd_family = {
    .kernel = "the Hopper backward",
};

/// Whether op is a tile.score_mod of the scale alone (scale: its factor).
static bool is_scale_mod(MlirOperation op, double *scale) {
  MlirAttribute m = attn_attr_get(op, "mods"), sc = attn_attr_get(op, "scale");
  if (mlirAttributeIsNull(m) || !mlirAttributeIsAArray(m) ||
      mlirArrayAttrGetNumElements(m) != 1 ||
      !str_is(mlirArrayAttrGetElement(m, 0), "scale") ||
      mlirAttributeIsNull(sc) || !mlirAttributeIsAFloat(sc))
    return false;
  *scale = mlirFloatAttrGetValueDouble(sc);
  return true;
}

/// The f64 attribute name of op, or dflt.
static double f64_attr(MlirOperation op, const char *name, double dflt) {
  MlirAttribute a = attn_attr_get(op, name);
  return !mlirAttributeIsNull(a) && mlirAttributeIsAFloat(a)
             ? mlirFloatAttrGetValueDouble(a)
             : dflt;
}

/// Walk callback: the first tile.exp_lse (user: its op).
static MlirWalkResult find_exp_lse(MlirOperation op, void *user) {
  if (!attn_op_is(op, ATTN_OP_TILE_EXP_LSE))
    return MlirWalkResultAdvance;
  *(MlirOperation *)user = op;
  return MlirWalkResultInterrupt;
}

/// The ops named name under an op, in walk order (at most
/// ATTN_HOPPER_MAX_SITES + 1 kept: n counts on past them).
struct op_walk {
  const char *name;
  MlirOperation ops[ATTN_HOPPER_MAX_SITES + 1];
  int n;
};

static MlirWalkResult collect_ops(MlirOperation op, void *user) {
  struct op_walk *w = user;
  if (attn_op_is(op, w->name)) {
    if (w->n <= ATTN_HOPPER_MAX_SITES)
      w->ops[w->n] = op;
    if (++w->n > ATTN_HOPPER_MAX_SITES)
      return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

/// Reads the step of the dkdv kernel (the block of its tile.exp_lse) into
/// g: the chain of tile.score_mod (the scale) and tile.score_fn ops before
/// the masks, the tile.mask_fn bodies, exp_lse's and tile.ds's scales and
/// tile.score_fn_grad's body; false with why (wlen bytes).
bool attn_grad_describe_step(MlirOperation kernel, struct attn_hopper_bwd *g,
                             char *why, size_t wlen) {
  struct attn_hopper_kernel *h = &g->k;
  MlirOperation el = {NULL};
  mlirOperationWalk(kernel, find_exp_lse, &el, MlirWalkPreOrder);
  if (mlirOperationIsNull(el)) {
    snprintf(why, wlen, "the kernel has no tile.exp_lse");
    return false;
  }
  h->nmods = h->nscore_fns = h->nmask_fns = 0;
  g->grad_fn = (MlirBlock){NULL};
  g->exp_scale = g->ds_scale = 0;
  bool masked = false; // past tile.mask: no more score modifiers
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirOperationGetBlock(el));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    bool fn = attn_op_is(op, ATTN_OP_TILE_SCORE_FN),
         mod = attn_op_is(op, ATTN_OP_TILE_SCORE_MOD);
    double sc;
    if ((fn || mod) && (masked || h->nmods == ATTN_HOPPER_MAX_MODS ||
                        (fn && h->nscore_fns == ATTN_HOPPER_MAX_FNS))) {
      snprintf(why, wlen, "at most %d score modifiers (%d functions), before "
                          "the masks",
               ATTN_HOPPER_MAX_MODS, ATTN_HOPPER_MAX_FNS);
      return false;
    }
    if (mod) {
      if (!is_scale_mod(op, &sc) || sc != h->scale) {
        snprintf(why, wlen, "a tile.score_mod other than the kernel's scale");
        return false;
      }
      h->mods[h->nmods++] = ATTN_HOPPER_MOD_SCALE;
    } else if (fn) {
      MlirBlock body = attn_attention_fn_body(op, h, 5, why, wlen);
      if (mlirBlockIsNull(body))
        return false;
      h->mods[h->nmods++] = ATTN_HOPPER_MOD_FN;
      h->score_fns[h->nscore_fns++] = body;
    } else if (attn_op_is(op, ATTN_OP_TILE_MASK)) {
      masked = true;
    } else if (attn_op_is(op, ATTN_OP_TILE_MASK_FN)) {
      if (h->nmask_fns == ATTN_HOPPER_MAX_FNS) {
        snprintf(why, wlen, "at most %d mask functions", ATTN_HOPPER_MAX_FNS);
        return false;
      }
      MlirBlock body = attn_attention_fn_body(op, h, 4, why, wlen);
      if (mlirBlockIsNull(body))
        return false;
      h->mask_fns[h->nmask_fns++] = body;
    } else if (attn_op_is(op, ATTN_OP_TILE_EXP_LSE)) {
      g->exp_scale = f64_attr(op, "scale", 0);
    } else if (attn_op_is(op, ATTN_OP_TILE_DS)) {
      g->ds_scale = f64_attr(op, "scale", 0);
    } else if (attn_op_is(op, ATTN_OP_TILE_SCORE_FN_GRAD)) {
      // Its first two operands (dS, the raw scores) are the cloned body's
      // tiles; the rest the indices, as tile.score_fn's.
      g->grad_fn = attn_attention_fn_body(op, h, 5, why, wlen);
      if (mlirBlockIsNull(g->grad_fn))
        return false;
    }
  }
  if (!(g->exp_scale > 0) || !(g->ds_scale > 0)) {
    snprintf(why, wlen, "tile.exp_lse and tile.ds need positive scales");
    return false;
  }
  return true;
}

/// Whether the array attribute grads (maybe null) holds name.
static bool names_grad(MlirAttribute grads, MlirStringRef name) {
  intptr_t n = !mlirAttributeIsNull(grads) && mlirAttributeIsAArray(grads)
                   ? mlirArrayAttrGetNumElements(grads)
                   : 0;
  for (intptr_t i = 0; i < n; ++i) {
    MlirAttribute e = mlirArrayAttrGetElement(grads, i);
    if (mlirAttributeIsAString(e) &&
        mlirStringRefEqual(mlirStringAttrGetValue(e), name))
      return true;
  }
  return false;
}

/// g's next gradient buffer, the kernel argument of type t named name.
static bool add_grad(struct attn_hopper_bwd *g, MlirType t, MlirStringRef name,
                     char *why, size_t wlen) {
  if (g->ngrads == ATTN_HOPPER_MAX_GRADS || !grad_buffer_ok(t) ||
      name.length >= sizeof g->grads[0].name) {
    snprintf(why, wlen, "the Hopper backward's gradients into captured "
                        "tensors are at most 4, f32 of rank 1 to 4 and fewer "
                        "than 2^31 elements");
    return false;
  }
  struct attn_hopper_grad_buffer *gb = &g->grads[g->ngrads++];
  snprintf(gb->name, sizeof gb->name, "%.*s", (int)name.length, name.data);
  int64_t s[8];
  gb->rank = attn_static_shape(t, s);
  for (int d = 0; d < 4; ++d)
    gb->shape[d] = d < gb->rank ? s[d] : 0;
  return true;
}

/// The function named name in module, or null.
static MlirOperation func_named(MlirOperation module, const char *name) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    MlirStringRef sym;
    if (attn_op_is(op, "func.func") && attn_attr_str(op, "sym_name", &sym) &&
        attn_str_eq(sym, name))
      return op;
  }
  return (MlirOperation){NULL};
}

/// Reads the tile.capture_grad ops of the dq tile kernel (the dkdv
/// kernel's sibling <base>__dq, which visits each (query, key) pair once)
/// into g->sites, their bodies reading the captures by the dq kernel's
/// arguments (each capture's alias); false with why.
static bool describe_sites(MlirOperation kernel, struct attn_hopper_bwd *g,
                           char *why, size_t wlen) {
  MlirStringRef sym;
  attn_attr_str(kernel, "sym_name", &sym);
  char name[300];
  if (sym.length < 6 || sym.length > 250) {
    snprintf(why, wlen, "malformed dkdv kernel name");
    return false;
  }
  snprintf(name, sizeof name, "%.*s__dq", (int)(sym.length - 6), sym.data);
  MlirOperation dq = func_named(mlirOperationGetParentOperation(kernel), name);
  MlirAttribute an =
      mlirOperationIsNull(dq) ? (MlirAttribute){NULL}
                              : attn_attr_get(dq, ATTN_TILE_ARG_NAMES_ATTR);
  if (mlirAttributeIsNull(an) || !mlirAttributeIsAArray(an)) {
    snprintf(why, wlen, "the gradients into captured tensors need the dq "
                        "tile kernel @%.100s",
             name);
    return false;
  }
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(dq, 0));
  intptr_t nargs = mlirBlockGetNumArguments(body);
  if (mlirArrayAttrGetNumElements(an) != nargs) {
    snprintf(why, wlen, "malformed dq tile kernel @%.100s", name);
    return false;
  }
  struct attn_hopper_kernel *h = &g->k;
  // The captures by name in the dq kernel.
  for (intptr_t i = 0; i < nargs; ++i) {
    MlirStringRef n = mlirStringAttrGetValue(mlirArrayAttrGetElement(an, i));
    for (int c = 0; c < h->ncaptures; ++c)
      if (attn_str_eq(n, h->captures[c].name))
        h->captures[c].alias = mlirBlockGetArgument(body, i);
  }
  struct op_walk w = {.name = ATTN_OP_TILE_CAPTURE_GRAD};
  mlirOperationWalk(dq, collect_ops, &w, MlirWalkPreOrder);
  if (w.n > ATTN_HOPPER_MAX_SITES) {
    snprintf(why, wlen, "at most %d reads of captured tensors with a gradient",
             ATTN_HOPPER_MAX_SITES);
    return false;
  }
  for (int i = 0; i < w.n; ++i) {
    MlirOperation op = w.ops[i];
    MlirValue buf = mlirOperationGetOperand(op, 2);
    int grad = -1;
    if (mlirValueIsABlockArgument(buf) &&
        mlirBlockEqual(mlirBlockArgumentGetOwner(buf), body)) {
      MlirStringRef n = mlirStringAttrGetValue(mlirArrayAttrGetElement(
          an, mlirBlockArgumentGetArgNumber(buf)));
      for (int j = 0; j < g->ngrads; ++j)
        if (attn_str_eq(n, g->grads[j].name))
          grad = j;
    }
    if (grad < 0) {
      snprintf(why, wlen, "a tile.capture_grad adds into no gradient buffer "
                          "of the kernel");
      return false;
    }
    struct attn_hopper_grad_site *site = &g->sites[g->nsites++];
    site->grad = grad;
    site->scale = f64_attr(op, "scale", 0);
    site->body = attn_attention_body_of(op, h, 5, 1 + g->grads[grad].rank,
                                        ATTN_OP_TILE_CAPTURE_GRAD, why, wlen);
    if (mlirBlockIsNull(site->body))
      return false;
    if (!isfinite(site->scale)) {
      snprintf(why, wlen, "tile.capture_grad needs a finite scale");
      return false;
    }
  }
  for (int j = 0; j < g->ngrads; ++j) {
    bool read = false;
    for (int i = 0; i < g->nsites; ++i)
      read |= g->sites[i].grad == j;
    if (!read) {
      snprintf(why, wlen, "no tile.capture_grad adds into %s",
               g->grads[j].name);
      return false;
    }
  }
  return true;
}

/// Reads the dkdv tile kernel into g (choices: the schedule's options);
/// false with why (wlen bytes).
static bool describe(MlirOperation kernel, MlirAttribute att,
                     const struct attn_hopper_bwd_choices *choices,
                     struct attn_hopper_bwd *g, char *why, size_t wlen) {
  memset(g, 0, sizeof *g);
  g->deterministic = choices->deterministic;
  g->dq_bulk = choices->dq_bulk && !g->deterministic;

  // The roles (q, k, v, out, lse, dout, dk, dv), each once, and captures.
  static const char *const names[] = {"q",    "k",  "v",  "out",
                                      "lse",  "dout", "dk", "dv"};
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(kernel, 0));
  MlirAttribute an = attn_attr_get(kernel, ATTN_TILE_ARG_NAMES_ATTR);
  intptr_t nargs = mlirBlockGetNumArguments(body);
  int pos[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  bool ok = !mlirAttributeIsNull(an) && mlirAttributeIsAArray(an) &&
            mlirArrayAttrGetNumElements(an) == nargs;
  for (intptr_t i = 0; ok && i < nargs; ++i) {
    MlirAttribute n = mlirArrayAttrGetElement(an, i);
    ok = mlirAttributeIsAString(n);
    for (int r = 0; ok && r < 8; ++r)
      if (str_is(n, names[r])) {
        ok = pos[r] < 0;
        pos[r] = (int)i;
      }
  }
  for (int r = 0; ok && r < 8; ++r)
    ok = pos[r] >= 0;
  if (!ok) {
    snprintf(why, wlen, "the kernel's arguments are not q, k, v, out, lse, "
                        "dout, dk, dv and captures");
    return false;
  }
  MlirType qt = mlirValueGetType(mlirBlockGetArgument(body, pos[0])),
           kt = mlirValueGetType(mlirBlockGetArgument(body, pos[1])),
           vt = mlirValueGetType(mlirBlockGetArgument(body, pos[2]));
  const char *cwhy = "";
  if (!shapes_supported(qt, kt, vt, &cwhy)) {
    snprintf(why, wlen, "%s", cwhy);
    return false;
  }
  int64_t q[8], k[8];
  attn_static_shape(qt, q);
  attn_static_shape(kt, k);
  static const char *const ignore[] = {"part", "grads", NULL};
  if (!keys_supported(att, q[3], ignore, &cwhy)) {
    snprintf(why, wlen, "%s", cwhy);
    return false;
  }
  struct attn_hopper_kernel *h = &g->k;
  h->bf16 = mlirTypeIsABF16(mlirShapedTypeGetElementType(qt));
  h->batch = q[0];
  h->heads = q[1];
  h->kv_heads = k[1];
  h->seq_q = q[2];
  h->seq_k = k[2];
  h->head_dim = q[3];
  MlirAttribute a = attn_dict_get(att, "scale");
  h->scale = !mlirAttributeIsNull(a) && mlirAttributeIsAFloat(a)
                 ? mlirFloatAttrGetValueDouble(a)
                 : 1.0;
  a = attn_dict_get(att, "causal");
  h->causal = !mlirAttributeIsNull(a) && mlirAttributeIsABool(a) &&
              mlirBoolAttrGetValue(a);
  char detail[128] = "";
  if (!attn_attention_describe_mods(att, &bwd_family, h, why, wlen, detail,
                                    sizeof detail))
    return false;
  // describe_step reads the chain from the kernel itself.
  h->nmods = 0;
  MlirAttribute rope = attn_dict_get(att, "rope");
  if (!mlirAttributeIsNull(rope)) {
    MlirAttribute t = attn_dict_get(rope, "theta"),
                  l = attn_dict_get(rope, "layout");
    if (mlirAttributeIsNull(t) || !mlirAttributeIsAFloat(t) ||
        mlirAttributeIsNull(l) || !mlirAttributeIsAString(l)) {
      snprintf(why, wlen, "malformed rope description");
      return false;
    }
    h->rope = true;
    h->theta = mlirFloatAttrGetValueDouble(t);
    h->rotary_dim = h->head_dim;
    h->interleaved = attn_str_eq(mlirStringAttrGetValue(l), "interleaved");
    int64_t shared = attn_dict_int(rope, "offset", 0);
    h->rope_offset = attn_dict_int(rope, "q_offset", shared);
    h->rope_offset_k = attn_dict_int(rope, "k_offset", shared);
    if (!attn_attention_rope_positions_ok(h) ||
        !attn_hopper_rope_k_supported(h)) {
      snprintf(why, wlen,
               "the Hopper backward's RoPE positions must lie in [0, 2^24)");
      return false;
    }
  }
  MlirAttribute gl = attn_dict_get(att, "grads");
  for (intptr_t i = 0; i < nargs; ++i) {
    bool role = false;
    for (int r = 0; r < 8; ++r)
      role |= pos[r] == i;
    MlirStringRef an_i = mlirStringAttrGetValue(mlirArrayAttrGetElement(an, i));
    if (!role && names_grad(gl, an_i)) {
      if (!add_grad(g, mlirValueGetType(mlirBlockGetArgument(body, i)), an_i,
                    why, wlen))
        return false;
      continue;
    }
    if (!role &&
        !attn_attention_add_capture(
            mlirBlockGetArgument(body, i),
            mlirStringAttrGetValue(mlirArrayAttrGetElement(an, i)),
            bwd_family.kernel, h, why, wlen, detail, sizeof detail))
      return false;
  }
  if (!attn_grad_describe_step(kernel, g, why, wlen))
    return false;
  if (g->ngrads && !describe_sites(kernel, g, why, wlen))
    return false;
  // FlashAttention-3's tiles for d = 64 and 128: 128 keys a CTA (64 a
  // consumer warpgroup), query blocks of 64 rows, two stages (dq_bulk
  // adds 34,816 bytes of dQ tiles: 185,384 in all at head dim 128). At
  // 256: 64 keys a CTA, both consumers on them with 128 columns each;
  // two stages take 207,912 bytes, too many for dq_bulk's tiles beside
  // them, which then get one stage (176,152).
  g->block_n = g->k.head_dim == 256 ? 64 : 128;
  g->block_m = 64;
  g->stages = 2;
  // dP^T issued early where the chain is linear: with its derivative's
  // registers live too, the overlap spilled (48 bytes, softcap).
  g->dp_early = choices->dp_early > 0 ||
                (choices->dp_early < 0 && mlirBlockIsNull(g->grad_fn));
  g->ds_ring = choices->ds_ring > 0 || (choices->ds_ring < 0 && g->k.head_dim == 64);
  if (attn_hopper_bwd_smem_bytes(g) > ATTN_KERNELS_SMEM_LIMIT)
    g->stages = 1;
  if (attn_hopper_bwd_smem_bytes(g) > ATTN_KERNELS_SMEM_LIMIT) {
    snprintf(why, wlen,
             "the tiles do not fit the 227 KiB of shared memory of a CTA");
    return false;
  }
  return true;
}

/// The inputs of the tile program named name (attn-tile's, in its order)
/// into g; false when there is none or it is malformed.
bool attn_grad_program_inputs(MlirOperation module, const char *name,
                              struct attn_hopper_bwd *g) {
  MlirAttribute progs = attn_attr_get(module, ATTN_TILE_PROGRAMS_ATTR);
  intptr_t n = !mlirAttributeIsNull(progs) && mlirAttributeIsAArray(progs)
                   ? mlirArrayAttrGetNumElements(progs)
                   : 0;
  for (intptr_t i = 0; i < n; ++i) {
    MlirAttribute p = mlirArrayAttrGetElement(progs, i);
    if (!mlirAttributeIsADictionary(p) ||
        !str_is(attn_dict_get(p, "name"), name))
      continue;
    MlirAttribute in = attn_dict_get(p, "inputs");
    intptr_t m = !mlirAttributeIsNull(in) && mlirAttributeIsAArray(in)
                     ? mlirArrayAttrGetNumElements(in)
                     : -1;
    if (m < 0 || m > (intptr_t)(sizeof g->inputs / sizeof *g->inputs))
      return false;
    for (intptr_t j = 0; j < m; ++j) {
      MlirAttribute e = mlirArrayAttrGetElement(in, j);
      if (!mlirAttributeIsAString(e))
        return false;
      MlirStringRef s = mlirStringAttrGetValue(e);
      if (s.length >= sizeof g->inputs[0])
        return false;
      snprintf(g->inputs[j], sizeof g->inputs[0], "%.*s", (int)s.length,
               s.data);
    }
    g->ninputs = (int)m;
    return true;
  }
  return false;
}

/// Removes the program named name from the module's tile.programs (attn-
/// tile's, which the Hopper program replaces).
void attn_grad_drop_program(MlirOperation module, const char *name) {
  MlirAttribute progs = attn_attr_get(module, ATTN_TILE_PROGRAMS_ATTR);
  if (mlirAttributeIsNull(progs) || !mlirAttributeIsAArray(progs))
    return;
  intptr_t n = mlirArrayAttrGetNumElements(progs), m = 0;
  MlirAttribute kept[n > 0 ? n : 1];
  for (intptr_t i = 0; i < n; ++i) {
    MlirAttribute p = mlirArrayAttrGetElement(progs, i);
    if (!(mlirAttributeIsADictionary(p) &&
          str_is(attn_dict_get(p, "name"), name)))
      kept[m++] = p;
  }
  MlirStringRef key = mlirStringRefCreateFromCString(ATTN_TILE_PROGRAMS_ATTR);
  if (m)
    mlirOperationSetAttributeByName(
        module, key, mlirArrayAttrGet(mlirOperationGetContext(module), m, kept));
  else
    mlirOperationRemoveAttributeByName(module, key);
}

/// The launch program @<name> of g (see the file comment).
bool attn_grad_add_program(MlirOperation gm, const struct attn_hopper_bwd *g) {
  const struct attn_hopper_kernel *k = &g->k;
  const char *n = k->name;
  struct attn_strbuf t = {0};
  attn_strbuf_printf(&t, "{name = \"%s\", inputs = [", n);
  for (int i = 0; i < g->ninputs; ++i)
    attn_strbuf_printf(&t, "%s\"%s\"", i ? ", " : "", g->inputs[i]);
  attn_strbuf_printf(&t, "], workspace = [");
  if (k->rope)
    attn_strbuf_printf(
        &t, "{name = \"q_rot\", bytes = %lld : i64}, {name = \"k_rot\", "
            "bytes = %lld : i64}, ",
        (long long)(k->batch * k->heads * k->seq_q * k->head_dim * 2),
        (long long)(k->batch * k->kv_heads * k->seq_k * k->head_dim * 2));
  attn_strbuf_printf(&t,
                     "{name = \"rows\", bytes = %lld : i64}, {name = "
                     "\"dq_acc\", bytes = %lld : i64}, {name = \"dk_acc\", "
                     "bytes = %lld : i64}], steps = [",
                     (long long)attn_hopper_bwd_rows_bytes(g),
                     (long long)attn_hopper_bwd_dq_bytes(g),
                     (long long)attn_hopper_bwd_dk_bytes(g));
  if (k->rope)
    attn_strbuf_printf(&t,
                       "{kernel = \"%s__rope_q\", args = [\"q\", \"q_rot\"]}, "
                       "{kernel = \"%s__rope_k\", args = [\"k\", \"k_rot\"]}, ",
                       n, n);
  const char *qa = k->rope ? "q_rot" : "q", *ka = k->rope ? "k_rot" : "k";
  attn_strbuf_printf(
      &t,
      "{kernel = \"%s__pre\", args = [\"out\", \"dout\", \"lse\", \"rows\", "
      "\"dq_acc\"",
      n);
  for (int i = 0; i < g->ngrads; ++i)
    attn_strbuf_printf(&t, ", \"%s\"", g->grads[i].name);
  attn_strbuf_printf(&t,
                     "]}, {kernel = \"%s__main\", args = [\"%s\", \"%s\", "
                     "\"v\", \"dout\", \"dv\", \"rows\", \"dq_acc\", "
                     "\"dk_acc\"",
                     n, qa, ka);
  for (int i = 0; i < k->ncaptures; ++i)
    attn_strbuf_printf(&t, ", \"%s\"", k->captures[i].name);
  for (int i = 0; i < g->ngrads; ++i)
    attn_strbuf_printf(&t, ", \"%s\"", g->grads[i].name);
  attn_strbuf_printf(&t,
                     "]}, {kernel = \"%s__dq_out\", args = [\"dq_acc\", "
                     "\"dq\"]}, {kernel = \"%s__dk_out\", args = [\"dk_acc\", "
                     "\"dk\"]}]}",
                     n, n);
  return attn_programs_append(gm, ATTN_PROGRAMS_ATTR, &t);
}

bool attn_hopper_lower_grad(MlirOperation kernel, MlirAttribute att,
                            bool fallback,
                            const struct attn_hopper_bwd_choices *choices,
                            bool *lowered) {
  *lowered = false;
  MlirStringRef sym;
  attn_attr_str(kernel, "sym_name", &sym);
  char name[256], base[256];
  snprintf(name, sizeof name, "%.*s", (int)sym.length, sym.data);
  MlirAttribute part = attn_dict_get(att, "part");
  bool dq = str_is(part, "dq");
  if (!dq && !str_is(part, "dkdv"))
    return attn_emit_errorf(kernel, "no Hopper backward for '%s': "
                                    "tile.attention_grad's part must be dkdv "
                                    "or dq",
                            name);
  size_t cut = strlen(name) - (dq ? 4 : 6); // "__dq", "__dkdv"
  snprintf(base, sizeof base, "%.*s", (int)cut, name);
  MlirOperation module = mlirOperationGetParentOperation(kernel);
  if (dq) {
    // Computed by the kernels of the dkdv part, when they were built.
    MlirOperation gm = attn_kernel_gpu_module(kernel, "sm_90a", 80);
    char main_name[300];
    snprintf(main_name, sizeof main_name, "%s__main", base);
    if (mlirOperationIsNull(gm))
      return false;
    if (attn_has_symbol(gm, main_name)) {
      mlirOperationDestroy(kernel);
      *lowered = true;
      return true;
    }
    return fallback ? true
                    : attn_emit_errorf(kernel,
                                       "no Hopper backward for '%s': its dkdv "
                                       "kernel was not lowered",
                                       name);
  }
  struct attn_hopper_bwd g;
  char why[256] = "";
  if (!describe(kernel, att, choices, &g, why, sizeof why))
    return fallback ? true
                    : attn_emit_errorf(kernel, "no Hopper backward for '%s': %s",
                                       name, why);
  if (!attn_grad_program_inputs(module, base, &g))
    return attn_emit_errorf(kernel,
                            "no Hopper backward for '%s': attn-tile's program "
                            "@%s is missing or malformed",
                            name, base);
  g.k.name = base;
  MlirOperation gm = attn_kernel_gpu_module(kernel, "sm_90a", 80);
  if (mlirOperationIsNull(gm))
    return false;
  MlirOperation before = attn_hopper_last_op(gm);
  MlirLocation loc = mlirOperationGetLocation(kernel);
  if (g.k.rope && (!attn_kernels_build_hopper_rope(gm, loc, &g.k, true) ||
                   !attn_kernels_build_hopper_rope(gm, loc, &g.k, false)))
    return false;
  if (!attn_kernels_build_hopper_bwd(gm, loc, &g))
    return false;
  attn_hopper_dump_built(gm, before);
  attn_grad_drop_program(module, base);
  if (!attn_grad_add_program(gm, &g))
    return attn_emit_errorf(kernel, "cannot record the launch program");
  mlirOperationDestroy(kernel);
  *lowered = true;
  return true;
}
