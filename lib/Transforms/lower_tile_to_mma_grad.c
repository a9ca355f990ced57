//===- lower_tile_to_mma_grad.c - The mma.sync backward of an attention ---===//
//
// lower-tile-to-mma's share for the backward attn-tile writes from
// attn.fused_grad (issue 29), for every chip from sm_80 on: the tile
// kernels @<f>__grad__dkdv and @<f>__grad__dq (tile.attention_grad, part
// "dkdv" and "dq") become the kernels of lib/Kernels/mma_attention_bwd.c
// and one launch program @<f>__grad, which replaces attn-tile's of that
// name, the Hopper backward's program (lower_tile_to_hopper_grad.c) with
// the mma.sync main kernel:
//
//   inputs    attn-tile's: q, k, v, the captures, out, lse, dout, dq, dk, dv
//   workspace q_rot, k_rot (RoPE), rows, dq_acc, dk_acc
//   steps     [__rope_q, __rope_k] (RoPE: Q and K rotated before, the pre
//             placement's kernels), __pre, __main, __dq_out, __dk_out
//
// Supported: bf16 or f16, head dim 64 or 128 (v's equal), scale, causal,
// windows, RoPE at offsets with rotary_dim == head dim, MHA or GQA, and
// the modifiers and masks as the tile kernel computes them (tile.score_mod's
// scale, tile.score_fn bodies, tile.mask_fn bodies, tile.score_fn_grad's
// derivative; softcap, ALiBi, the gate and documents among them), reading
// captured tensors. Not: head dim 256 (dK and dV alone would take 256 of a
// thread's 255 registers), explicit RoPE positions, partial RoPE, bodies
// that read q, k or v, gradients into captured tensors. The drivers take
// the mma.sync path by the forward (gpu_pipeline.c) and pass grad-fallback.
// Anything else is a diagnostic, or with fallback is left (both tile
// kernels and attn-tile's program) to lower-tile-to-gpu.
//
// Tiles: query blocks of 64 rows; 128 keys a CTA (8 warps of 16) with two
// stages of Q, dO, lse2 and D where the chip's shared memory holds them,
// else 64 keys (4 warps), else one stage (head dim 128 on sm_86 and sm_89:
// 64 keys, one stage); option grad-block-n asks for 64 or 128. Shared
// memory at 128 keys: 82,944 bytes at head dim 64, 148,480 at 128; at 64
// keys 58,368 and 107,520 (74,240 with one stage). 128 keys halve the dQ
// atomics per element and the Q and dO loads per key against 64, with
// twice the warps a CTA (FlashAttention-2's tiles).
//
// Registers per thread of __main from ptxas (CUDA 13.0; the inputs of
// test/Target/to-ptx-mma-grad.test), spill stores in bytes:
//
//   d    input                         registers  sm_80  sm_90a  (64 keys:
//                                                                sm_80 sm_90a)
//   64   g64_causal_ragged             255        0      12      0     24
//   64   g64_rope_full_f16             255        0      0       4     12
//   64   h64_document_window           255        0      0       0     0
//   64   h64_window_rope               255/252    0      0       24    8
//   128  g128_cross_plain              255        56     52      80    88
//   128  g128_rope_causal_ragged       255        60     60      56    64
//   128  g128_gqa_interleaved_causal   255        56     56      56    60
//   128  h128_gate_softcap_f16         255        72     84      72    112
//   128  h128_alibi_causal             255        60     60      84    80
//   128  h128_softcap_causal_gqa       255        96     84      108   104
//   64   h64_every_body_op             255        2560   2500    2572  2512
//
// (the last: a 60-op score_mod and its derivative per element, as on
// sm_90a); sm_86's one stage at 64 keys (g128_rope_causal_ragged): 52.
// With the shared base pinned in the loop (64 keys) the spills moved (28
// at d 64, 84 at 128, 40 on sm_90a) rather than going: not done.
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
/// attributes or tile.attention_grad's entries): a positive scale, causal,
/// the modifiers' and masks' names, RoPE at offsets with rotary_dim ==
/// head_dim, and the keys in ignore; why says what else there is.
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
        *why = "the mma.sync backward needs a positive scale";
        return false;
      }
      continue;
    }
    // The modifiers and masks come as bodies in the tile kernels.
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
        *why = "the mma.sync backward's RoPE needs rotary_dim equal to the "
               "head dim";
        return false;
      }
      if (!mlirAttributeIsNull(attn_dict_get(r, "q_positions")) ||
          !mlirAttributeIsNull(attn_dict_get(r, "k_positions"))) {
        *why = "the mma.sync backward's RoPE takes positions at offsets only";
        return false;
      }
      continue;
    }
    *why = "the mma.sync backward computes scale, causal, softcap, ALiBi, "
           "the gate, windows, documents, score and mask functions and RoPE "
           "only";
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
    *why = "the mma.sync backward needs static rank-4 q, k and v";
    return false;
  }
  MlirType e = mlirShapedTypeGetElementType(qt);
  if (!mlirTypeIsABF16(e) && !mlirTypeIsAF16(e)) {
    *why = "the mma.sync backward takes bf16 or f16";
    return false;
  }
  if (q[3] == 256 && v[3] == 256) {
    *why = "the mma.sync backward has head dims 64 and 128 (at 256 a "
           "thread's dK and dV alone take 256 f32 registers; sm_90a's Hopper "
           "backward has it)";
    return false;
  }
  if ((q[3] != 64 && q[3] != 128) || v[3] != q[3]) {
    *why = "the mma.sync backward has head dims 64 and 128";
    return false;
  }
  if (q[0] > 65535 || k[1] > 65535 || q[2] > (1 << 24) || k[2] > (1 << 24)) {
    *why = "the mma.sync backward's grid takes at most 65535 heads and "
           "batch, and 2^24 rows";
    return false;
  }
  if (q[0] * q[1] * ((q[2] + 63) / 64 * 64) >= (1LL << 31) ||
      k[0] * k[1] * k[2] >= (1LL << 31)) {
    *why = "the tensors are too large for the mma.sync backward's 32-bit row "
           "indices";
    return false;
  }
  return true;
}

static const struct attn_attention_family bwd_family = {
    .kernel = "the mma.sync backward",
};

/// Reads the dkdv tile kernel into g for a CTA of smem_limit bytes of
/// shared memory; false with why (wlen bytes).
static bool describe(MlirOperation kernel, MlirAttribute att,
                     int64_t smem_limit, int block_n,
                     struct attn_hopper_bwd *g, char *why, size_t wlen) {
  memset(g, 0, sizeof *g);
  static const char *const names[] = {"q",    "k",    "v",  "out",
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
  MlirAttribute grads = attn_dict_get(att, "grads");
  if (!mlirAttributeIsNull(grads) &&
      (!mlirAttributeIsAArray(grads) || mlirArrayAttrGetNumElements(grads))) {
    snprintf(why, wlen, "the mma.sync backward computes dq, dk and dv only "
                        "(gradients into captured tensors take the plain "
                        "path)");
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
  h->nmods = 0; // attn_grad_describe_step reads the chain from the kernel
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
               "the mma.sync backward's RoPE positions must lie in [0, 2^24)");
      return false;
    }
  }
  for (intptr_t i = 0; i < nargs; ++i) {
    bool role = false;
    for (int r = 0; r < 8; ++r)
      role |= pos[r] == i;
    if (!role &&
        !attn_attention_add_capture(
            mlirBlockGetArgument(body, i),
            mlirStringAttrGetValue(mlirArrayAttrGetElement(an, i)),
            bwd_family.kernel, h, why, wlen, detail, sizeof detail))
      return false;
  }
  if (!attn_grad_describe_step(kernel, g, why, wlen))
    return false;
  // Query blocks of 64 rows (the rows workspace's padding and __pre's
  // CTA); 128 keys a CTA (8 warps) with two stages where they fit, else 64
  // (4 warps), else one stage; block_n asks for 64 or 128.
  g->block_m = 64;
  g->block_n = block_n ? block_n : 128;
  g->stages = 2;
  if (!block_n && attn_kernels_mma_bwd_smem_bytes(g) > smem_limit)
    g->block_n = 64;
  if (attn_kernels_mma_bwd_smem_bytes(g) > smem_limit)
    g->stages = 1;
  if (attn_kernels_mma_bwd_smem_bytes(g) > smem_limit) {
    snprintf(why, wlen,
             "the tiles do not fit the shared memory of a CTA (found %lld "
             "bytes, %lld on the chip)",
             (long long)attn_kernels_mma_bwd_smem_bytes(g),
             (long long)smem_limit);
    return false;
  }
  return true;
}

bool attn_mma_lower_grad(MlirOperation kernel, MlirAttribute att,
                         const char *chip, int64_t smem_limit, int block_n,
                         bool fallback) {
  MlirStringRef sym;
  attn_attr_str(kernel, "sym_name", &sym);
  char name[256], base[256];
  snprintf(name, sizeof name, "%.*s", (int)sym.length, sym.data);
  MlirAttribute part = attn_dict_get(att, "part");
  bool dq = str_is(part, "dq");
  if (!dq && !str_is(part, "dkdv"))
    return attn_emit_errorf(kernel, "no mma.sync backward for '%s': "
                                    "tile.attention_grad's part must be dkdv "
                                    "or dq",
                            name);
  size_t cut = strlen(name) - (dq ? 4 : 6); // "__dq", "__dkdv"
  snprintf(base, sizeof base, "%.*s", (int)cut, name);
  MlirOperation module = mlirOperationGetParentOperation(kernel);
  int ptx = attn_chip_min_ptx(chip, strlen(chip));
  if (dq) {
    // Computed by the kernels of the dkdv part, when they were built.
    MlirOperation gm = attn_kernel_gpu_module(kernel, chip, ptx < 70 ? 70 : ptx);
    char main_name[300];
    snprintf(main_name, sizeof main_name, "%s__main", base);
    if (mlirOperationIsNull(gm))
      return false;
    if (attn_has_symbol(gm, main_name)) {
      mlirOperationDestroy(kernel);
      return true;
    }
    return fallback ? true
                    : attn_emit_errorf(kernel,
                                       "no mma.sync backward for '%s': its "
                                       "dkdv kernel was not lowered",
                                       name);
  }
  struct attn_hopper_bwd g;
  char why[256] = "";
  if (!describe(kernel, att, smem_limit, block_n, &g, why, sizeof why))
    return fallback ? true
                    : attn_emit_errorf(kernel,
                                       "no mma.sync backward for '%s': %s",
                                       name, why);
  if (!attn_grad_program_inputs(module, base, &g))
    return attn_emit_errorf(kernel,
                            "no mma.sync backward for '%s': attn-tile's "
                            "program @%s is missing or malformed",
                            name, base);
  g.k.name = base;
  MlirOperation gm = attn_kernel_gpu_module(kernel, chip, ptx < 70 ? 70 : ptx);
  if (mlirOperationIsNull(gm))
    return false;
  MlirLocation loc = mlirOperationGetLocation(kernel);
  if (g.k.rope && (!attn_kernels_build_hopper_rope(gm, loc, &g.k, true) ||
                   !attn_kernels_build_hopper_rope(gm, loc, &g.k, false)))
    return false;
  if (!attn_kernels_build_mma_bwd(gm, loc, &g))
    return false;
  attn_grad_drop_program(module, base);
  if (!attn_grad_add_program(gm, &g))
    return attn_emit_errorf(kernel, "cannot record the launch program");
  mlirOperationDestroy(kernel);
  return true;
}
