//===- lower_tile_to_hopper_grad.c - The Hopper backward of an attention --===//
//
// lower-tile-to-hopper's share for the backward attn-tile writes from
// attn.fused_grad (issue 29): the tile kernels @<f>__grad__dkdv and
// @<f>__grad__dq (tile.attention_grad, part "dkdv" and "dq") become the
// sm_90a kernels of lib/Kernels/attention_bwd.c and one launch program
// @<f>__grad, which replaces attn-tile's of that name:
//
//   inputs    q, k, v, out, lse, dout, dq, dk, dv (attn-tile's)
//   workspace q_rot, k_rot (RoPE), rows, dq_acc, dk_acc
//   steps     [__rope_q, __rope_k] (RoPE: Q and K rotated before, the pre
//             placement's kernels), __pre, __main, __dq_out, __dk_out
//
// Supported (the first case): bf16 or f16, head dim 64 or 128 (v's equal),
// scale, causal or no mask, RoPE at offsets with rotary_dim == head dim,
// MHA or GQA; nothing else: no other modifier or mask, no captures, no
// explicit positions. attn_hopper_grad_supports says the same of
// attn.fused_grad for the drivers (gpu_pipeline.c). Anything else is a
// diagnostic, or with fallback=true is left to lower-tile-to-gpu.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels.h"
#include "lib/Target/attn_target.h"
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/tile/tile_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

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
    if (attn_str_eq(key, "mods")) {
      if (!mlirAttributeIsAArray(e.attribute) ||
          mlirArrayAttrGetNumElements(e.attribute) > 1 ||
          (mlirArrayAttrGetNumElements(e.attribute) == 1 &&
           !str_is(mlirArrayAttrGetElement(e.attribute, 0), "scale"))) {
        *why = "the Hopper backward computes the scale and the causal mask "
               "only (no other modifier yet)";
        return false;
      }
      continue;
    }
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
    *why = "the Hopper backward computes scale, causal and RoPE only (no "
           "other modifier or mask yet)";
    return false;
  }
  return true;
}

/// The shapes' checks: bf16 or f16, head dim 64 or 128, v's equal, the
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
  if ((q[3] != 64 && q[3] != 128) || v[3] != q[3]) {
    *why = "the Hopper backward has head dims 64 and 128";
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

bool attn_hopper_grad_supports(MlirOperation grad, const char **why) {
  // q, k, v, out, lse, dout and nothing else (no gate, segment ids,
  // positions or captures), and no bodies.
  if (mlirOperationGetNumOperands(grad) != 6) {
    *why = "extra inputs have no Hopper backward";
    return false;
  }
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(grad); ++r) {
    MlirBlock blk = mlirRegionGetFirstBlock(mlirOperationGetRegion(grad, r));
    if (!mlirBlockIsNull(blk) &&
        !mlirOperationIsNull(mlirBlockGetFirstOperation(blk))) {
      *why = "score and mask functions have no Hopper backward";
      return false;
    }
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
  static const char *const ignore[] = {"operandSegmentSizes", NULL};
  return keys_supported(
      mlirDictionaryAttrGet(mlirOperationGetContext(grad), n, attrs), q[3],
      ignore, why);
}

/// Walk callback: stops at an op of the tile kernel's body the Hopper
/// backward does not compute (a score or mask function, a score modifier:
/// tile.attention_grad does not name them, the body does).
static MlirWalkResult find_body_op(MlirOperation op, void *user) {
  static const char *const refused[] = {
      ATTN_OP_TILE_SCORE_FN, ATTN_OP_TILE_SCORE_FN_GRAD, ATTN_OP_TILE_MASK_FN,
      ATTN_OP_TILE_SCORE_MOD, NULL};
  for (int i = 0; refused[i]; ++i)
    if (attn_op_is(op, refused[i])) {
      *(const char **)user = refused[i];
      return MlirWalkResultInterrupt;
    }
  return MlirWalkResultAdvance;
}

/// Reads the dkdv tile kernel into g (dq_bulk: option dq-reduce=bulk);
/// false with why.
static bool describe(MlirOperation kernel, MlirAttribute att, bool dq_bulk,
                     struct attn_hopper_bwd *g, const char **why) {
  memset(g, 0, sizeof *g);
  g->dq_bulk = dq_bulk;
  static const char *const names[] = {"q",    "k",  "v",  "out",
                                      "lse",  "dout", "dk", "dv"};
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(kernel, 0));
  MlirAttribute an = attn_attr_get(kernel, ATTN_TILE_ARG_NAMES_ATTR);
  bool ok = mlirBlockGetNumArguments(body) == 8 && !mlirAttributeIsNull(an) &&
            mlirAttributeIsAArray(an) && mlirArrayAttrGetNumElements(an) == 8;
  for (int i = 0; ok && i < 8; ++i)
    ok = str_is(mlirArrayAttrGetElement(an, i), names[i]);
  if (!ok) {
    *why = "the kernel's arguments are not (q, k, v, out, lse, dout, dk, dv) "
           "(extra inputs have no Hopper backward)";
    return false;
  }
  MlirType qt = mlirValueGetType(mlirBlockGetArgument(body, 0)),
           kt = mlirValueGetType(mlirBlockGetArgument(body, 1)),
           vt = mlirValueGetType(mlirBlockGetArgument(body, 2));
  if (!shapes_supported(qt, kt, vt, why))
    return false;
  int64_t q[8], k[8];
  attn_static_shape(qt, q);
  attn_static_shape(kt, k);
  static const char *const ignore[] = {"part", NULL};
  if (!keys_supported(att, q[3], ignore, why))
    return false;
  const char *found = NULL;
  mlirOperationWalk(kernel, find_body_op, &found, MlirWalkPreOrder);
  if (found) {
    *why = "score and mask functions and score modifiers have no Hopper "
           "backward (the kernel holds one)";
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
  MlirAttribute rope = attn_dict_get(att, "rope");
  if (!mlirAttributeIsNull(rope)) {
    MlirAttribute t = attn_dict_get(rope, "theta"),
                  l = attn_dict_get(rope, "layout");
    if (mlirAttributeIsNull(t) || !mlirAttributeIsAFloat(t) ||
        mlirAttributeIsNull(l) || !mlirAttributeIsAString(l)) {
      *why = "malformed rope description";
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
      *why = "the Hopper backward's RoPE positions must lie in [0, 2^24)";
      return false;
    }
  }
  // FlashAttention-3's tiles for d = 64 and 128: 128 keys a CTA (64 a
  // consumer warpgroup), query blocks of 64 rows, two stages (dq_bulk
  // adds 34,816 bytes of dQ tiles: 185,384 in all at head dim 128).
  g->block_n = 128;
  g->block_m = 64;
  g->stages = 2;
  if (attn_hopper_bwd_smem_bytes(g) > ATTN_KERNELS_SMEM_LIMIT) {
    *why = "the tiles do not fit the 227 KiB of shared memory of a CTA";
    return false;
  }
  return true;
}

/// Removes the program named name from the module's tile.programs (attn-
/// tile's, which the Hopper program replaces).
static void drop_tile_program(MlirOperation module, const char *name) {
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
static bool add_program(MlirOperation gm, const struct attn_hopper_bwd *g) {
  const struct attn_hopper_kernel *k = &g->k;
  const char *n = k->name;
  struct attn_strbuf t = {0};
  attn_strbuf_printf(&t,
                     "{name = \"%s\", inputs = [\"q\", \"k\", \"v\", \"out\", "
                     "\"lse\", \"dout\", \"dq\", \"dk\", \"dv\"], workspace = [",
                     n);
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
      "\"dq_acc\"]}, {kernel = \"%s__main\", args = [\"%s\", \"%s\", \"v\", "
      "\"dout\", \"dv\", \"rows\", \"dq_acc\", \"dk_acc\"]}, {kernel = "
      "\"%s__dq_out\", args = [\"dq_acc\", \"dq\"]}, {kernel = \"%s__dk_out\", "
      "args = [\"dk_acc\", \"dk\"]}]}",
      n, n, qa, ka, n, n);
  return attn_programs_append(gm, ATTN_PROGRAMS_ATTR, &t);
}

bool attn_hopper_lower_grad(MlirOperation kernel, MlirAttribute att,
                            bool fallback, bool dq_bulk, bool *lowered) {
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
  const char *why = "";
  if (!describe(kernel, att, dq_bulk, &g, &why))
    return fallback ? true
                    : attn_emit_errorf(kernel, "no Hopper backward for '%s': %s",
                                       name, why);
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
  drop_tile_program(module, base);
  if (!add_program(gm, &g))
    return attn_emit_errorf(kernel, "cannot record the launch program");
  mlirOperationDestroy(kernel);
  *lowered = true;
  return true;
}
