//===- lower_tile_to_mma.c - lower-tile-to-mma: mma.sync attention kernels ===//
//
// Lowers an attention tile kernel, as attn-tile writes it, to one
// tensor-core kernel for any chip from sm_80 on (mma_emit.c): cp.async loads
// of K and V tiles into a multi-stage shared-memory ring, ldmatrix,
// mma.sync.m16n8k16 (bf16 or f16 in, f32 accumulators) for Q.K^T and P.V,
// each warp owning 16 query rows, an exp2 online softmax in registers with
// P passed from the S accumulators to the P.V operands without shared
// memory, masks only on diagonal and tail blocks, no visit to fully masked
// causal blocks, and RoPE of Q (once per CTA) and of K (per tile) in the
// kernel. It is the tensor-core path of every chip but sm_90a, which has
// lower-tile-to-hopper. The result is an llvm.func in
// `gpu.module @attn_kernels` whose `attn.launch` attribute is its manifest
// entry: four pointers, like the plain kernels, with dynamic shared memory.
//
//   func.func @f(%q: memref<BxHxNx128xbf16>, ...) attributes {tile.kernel,
//       tile.attention = {...}} { <attention tile program, BM=128 BN=64> }
//   ==>
//   gpu.module @attn_kernels [#nvvm.target<chip = "sm_80", features =
//       "+ptx70", O = 3>] {
//     llvm.func @f(%q: !llvm.ptr, %k: !llvm.ptr, %v: !llvm.ptr,
//         %out: !llvm.ptr) attributes {nvvm.kernel, nvvm.maxntid =
//         array<i32: 256, 1, 1>, attn.launch = {kernel = "mma-sync", ...}}
//   }
//
// Supported: bf16/f16, head dim 64 or 128 (v's equal to q's), block-m 64 or
// 128 (4 or 8 warps), block-n 32, 64 or 128, MHA or GQA, any sequence
// length, causal or not, a positive scale, RoPE (either layout, rotary_dim a
// multiple of 4 up to the head dim, positions from offsets). Anything else
// is a diagnostic, or with fallback=true is left to lower-tile-to-gpu, as
// are GEMM tile kernels (tile.matmul) always.
//
// Shared memory: (block-m + 2 * stages * block-n) * head_dim * 2 bytes,
// within the chip's limit per CTA (99 KiB on sm_86 and sm_89, 163 KiB on
// sm_80 and sm_87, 227 KiB on sm_90). Default stages: 3 where that fits,
// else 2 (d 128 on sm_86/sm_89: 96 KiB).
//
// Registers per thread from ptxas (CUDA 13.0, the default tiles: block-m
// 128, block-n 64, 256 threads; the same for -arch=sm_80 and sm_86), no
// spills in any:
//
//   d    RoPE   registers (bf16 and f16 alike)
//   64   no     172
//   64   yes    156 (and a 32-byte stack frame: libdevice sin/cos)
//   128  no     249
//   128  yes    229 (the same stack frame)
//
// Every kernel has nvvm.minctasm = 1: without it ptxas for sm_86 aims at two
// CTAs per SM, caps at 128 registers and spills; with two CTAs (128
// registers) every configuration spills. Of the other tiles, block-n 128
// spills a little at d 128 (12 to 52 bytes); block-n 32 and block-m 64 do
// not.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/mma_emit.h"
#include "lib/Transforms/transforms_internal.h"

#include "dialects/tile/tile_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mma_options {
  char chip[16];
  bool fallback;
  long stages; // 0: the most of 3 and 2 that fits
};

static const struct attn_pass_option mma_options_help[] = {
    {"chip", "the target chip: sm_80 (default), sm_86, sm_87, sm_89, sm_90 "
             "or sm_90a"},
    {"fallback", "leave kernels without an mma.sync lowering to "
                 "lower-tile-to-gpu instead of failing (default false)"},
    {"stages", "K/V pipeline depth, 2 to 4 (0: 3 where shared memory "
               "allows, else 2)"},
    {NULL, NULL},
};

static void mma_init(void *opts) {
  struct mma_options *o = opts;
  snprintf(o->chip, sizeof o->chip, "sm_80");
  o->fallback = false;
  o->stages = 0;
}

static bool mma_set(void *opts, const char *name, const char *value, char *err,
                    size_t errlen) {
  struct mma_options *o = opts;
  if (!strcmp(name, "chip")) {
    if (attn_chip_min_ptx(value, strlen(value)) < 0) {
      snprintf(err, errlen,
               "unknown chip '%s' (expected sm_80, sm_86, sm_87, sm_89, sm_90 "
               "or sm_90a)",
               value);
      return false;
    }
    snprintf(o->chip, sizeof o->chip, "%s", value);
    return true;
  }
  if (!strcmp(name, "fallback")) {
    if (attn_parse_bool_option(value, &o->fallback))
      return true;
    snprintf(err, errlen, "option 'fallback' expects true or false, found '%s'",
             value);
    return false;
  }
  if (!strcmp(name, "stages")) {
    if (!attn_parse_int_option(name, value, 0, 4, &o->stages, err, errlen))
      return false;
    if (o->stages == 1) {
      snprintf(err, errlen, "option 'stages' must be 0 or 2 to 4, found 1");
      return false;
    }
    return true;
  }
  snprintf(err, errlen,
           "unknown option '%s' of pass 'lower-tile-to-mma' (expected chip, "
           "fallback or stages)",
           name);
  return false;
}

/// Dynamic shared memory a CTA may use on chip (the opt-in maximum), or 0
/// for chips without mma.sync on 16-bit floats (before sm_80).
static int64_t smem_limit(const char *chip) {
  static const struct {
    const char *chip;
    int64_t bytes;
  } limits[] = {
      {"sm_80", 163 * 1024}, {"sm_86", 99 * 1024},  {"sm_87", 163 * 1024},
      {"sm_89", 99 * 1024},  {"sm_90", 227 * 1024}, {"sm_90a", 227 * 1024},
  };
  for (size_t i = 0; i < sizeof limits / sizeof *limits; ++i)
    if (!strcmp(limits[i].chip, chip))
      return limits[i].bytes;
  return 0;
}

/// The tile ops of the attention program attn-tile writes, in order.
static const char *const program[] = {
    ATTN_OP_TILE_PROGRAM_ID, ATTN_OP_TILE_PROGRAM_ID, ATTN_OP_TILE_ALLOC,
    ATTN_OP_TILE_ALLOC,      ATTN_OP_TILE_ALLOC,      ATTN_OP_TILE_ALLOC,
    ATTN_OP_TILE_ALLOC,      ATTN_OP_TILE_ALLOC,      ATTN_OP_TILE_ALLOC,
    ATTN_OP_TILE_LOAD,       "rope?",                 ATTN_OP_TILE_FILL,
    ATTN_OP_TILE_FILL,       ATTN_OP_TILE_FILL,       ATTN_OP_TILE_LOAD,
    "rope?",                 ATTN_OP_TILE_LOAD,       ATTN_OP_TILE_MMA,
    ATTN_OP_TILE_MASK,       ATTN_OP_TILE_SOFTMAX_UPDATE, ATTN_OP_TILE_MMA,
    ATTN_OP_TILE_NORMALIZE,  ATTN_OP_TILE_STORE,
};

static MlirWalkResult collect_tile(MlirOperation op, void *user) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (n.length > 5 && !strncmp(n.data, "tile.", 5))
    attn_op_list_push(user, op);
  return MlirWalkResultAdvance;
}

/// True when kernel is the attention tile program (with tile.rope on Q and
/// K when rope is set).
static bool is_attention_program(MlirOperation kernel, bool rope) {
  struct attn_op_list ops = {0};
  mlirOperationWalk(kernel, collect_tile, &ops, MlirWalkPreOrder);
  size_t i = 0;
  bool ok = !ops.failed;
  for (size_t p = 0; ok && p < sizeof program / sizeof *program; ++p) {
    if (!strcmp(program[p], "rope?")) {
      if (rope)
        ok = i < ops.n && attn_op_is(ops.ops[i++], ATTN_OP_TILE_ROPE);
      continue;
    }
    ok = i < ops.n && attn_op_is(ops.ops[i++], program[p]);
  }
  ok = ok && i == ops.n;
  free(ops.ops);
  return ok;
}

/// Entry key of dict, or a null attribute.
static MlirAttribute entry(MlirAttribute dict, const char *key) {
  return mlirDictionaryAttrGetElementByName(dict,
                                            mlirStringRefCreateFromCString(key));
}

static int64_t entry_int(MlirAttribute dict, const char *key, int64_t dflt) {
  MlirAttribute a = entry(dict, key);
  return !mlirAttributeIsNull(a) && mlirAttributeIsAInteger(a)
             ? mlirIntegerAttrGetValueInt(a)
             : dflt;
}

/// Reads tile.attention into k; false with why (and detail) when the kernel
/// computes something else.
static bool describe_attention(MlirAttribute att, struct attn_hopper_kernel *k,
                               const char **why, char *detail, size_t dlen) {
  if (mlirAttributeIsNull(att) || !mlirAttributeIsADictionary(att)) {
    *why = "the kernel has no tile.attention description";
    return false;
  }
  for (intptr_t i = 0, n = mlirDictionaryAttrGetNumElements(att); i < n; ++i) {
    MlirNamedAttribute el = mlirDictionaryAttrGetElement(att, i);
    MlirStringRef key = mlirIdentifierStr(el.name);
    if (attn_str_eq(key, "mods") && mlirAttributeIsAArray(el.attribute)) {
      bool scale_only = true;
      for (intptr_t m = 0; m < mlirArrayAttrGetNumElements(el.attribute); ++m) {
        MlirAttribute s = mlirArrayAttrGetElement(el.attribute, m);
        scale_only &= mlirAttributeIsAString(s) &&
                      attn_str_eq(mlirStringAttrGetValue(s), "scale");
      }
      if (scale_only)
        continue;
    }
    if (!attn_str_eq(key, "scale") && !attn_str_eq(key, "causal") &&
        !attn_str_eq(key, "rope")) {
      *why = "the mma.sync kernel computes scale, causal and RoPE only";
      snprintf(detail, dlen, "'%.*s'", (int)key.length, key.data);
      return false;
    }
  }
  MlirAttribute a = entry(att, "scale");
  k->scale = mlirAttributeIsAFloat(a) ? mlirFloatAttrGetValueDouble(a) : 1.0;
  if (!(k->scale > 0)) {
    *why = "the mma.sync kernel needs a positive scale";
    return false;
  }
  a = entry(att, "causal");
  k->causal = mlirAttributeIsABool(a) && mlirBoolAttrGetValue(a);
  MlirAttribute rope = entry(att, "rope");
  if (mlirAttributeIsNull(rope))
    return true;
  MlirAttribute t = entry(rope, "theta"), r = entry(rope, "rotary_dim"),
                l = entry(rope, "layout");
  if (!mlirAttributeIsADictionary(rope) || !mlirAttributeIsAFloat(t) ||
      !mlirAttributeIsAInteger(r) || !mlirAttributeIsAString(l)) {
    *why = "malformed rope description";
    return false;
  }
  if (!mlirAttributeIsNull(entry(rope, "q_positions")) ||
      !mlirAttributeIsNull(entry(rope, "k_positions"))) {
    *why = "the mma.sync kernel's RoPE takes positions from offsets only";
    return false;
  }
  k->rope = true;
  k->rope_k_in_kernel = true;
  k->theta = mlirFloatAttrGetValueDouble(t);
  k->rotary_dim = mlirIntegerAttrGetValueInt(r);
  k->interleaved = attn_str_eq(mlirStringAttrGetValue(l), "interleaved");
  int64_t shared = entry_int(rope, "offset", 0);
  k->rope_offset = entry_int(rope, "q_offset", shared);
  k->rope_offset_k = entry_int(rope, "k_offset", shared);
  if (!(k->theta > 0) || k->rope_offset < 0 || k->rope_offset_k < 0 ||
      k->rope_offset + k->seq_q > (1LL << 24) ||
      k->rope_offset_k + k->seq_k > (1LL << 24)) {
    *why = "the mma.sync kernel's RoPE needs theta > 0 and positions in "
           "[0, 2^24)";
    return false;
  }
  if (k->rotary_dim <= 0 || k->rotary_dim % 4 != 0 ||
      k->rotary_dim > k->head_dim) {
    *why = "the mma.sync kernel's RoPE needs rotary_dim a multiple of 4 up "
           "to the head dim";
    snprintf(detail, dlen, "rotary_dim %lld", (long long)k->rotary_dim);
    return false;
  }
  return true;
}

/// Reads the kernel's problem and tiles into k; false with why (and detail)
/// when the mma.sync kernel cannot compute it on chip.
static bool describe(MlirOperation kernel, const struct mma_options *o,
                     struct attn_hopper_kernel *k, const char **why,
                     char *detail, size_t dlen) {
  memset(k, 0, sizeof *k);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(kernel, 0));
  MlirAttribute names = mlirOperationGetAttributeByName(
      kernel, mlirStringRefCreateFromCString(ATTN_TILE_ARG_NAMES_ATTR));
  static const char *order[4] = {"q", "k", "v", "out"};
  bool args = mlirBlockGetNumArguments(body) == 4 &&
              !mlirAttributeIsNull(names) && mlirAttributeIsAArray(names) &&
              mlirArrayAttrGetNumElements(names) == 4;
  for (int i = 0; args && i < 4; ++i) {
    MlirAttribute n = mlirArrayAttrGetElement(names, i);
    args = mlirAttributeIsAString(n) &&
           attn_str_eq(mlirStringAttrGetValue(n), order[i]);
  }
  if (!args) {
    *why = "the kernel does not take exactly (q, k, v, out)";
    return false;
  }
  int64_t q[8], kv[8], v[8];
  attn_static_shape(mlirValueGetType(mlirBlockGetArgument(body, 0)), q);
  attn_static_shape(mlirValueGetType(mlirBlockGetArgument(body, 1)), kv);
  attn_static_shape(mlirValueGetType(mlirBlockGetArgument(body, 2)), v);
  MlirType e = mlirShapedTypeGetElementType(
      mlirValueGetType(mlirBlockGetArgument(body, 0)));
  if (!mlirTypeIsABF16(e) && !mlirTypeIsAF16(e)) {
    *why = "the mma.sync kernel takes bf16 or f16 tensors";
    return false;
  }
  k->bf16 = mlirTypeIsABF16(e);
  k->batch = q[0];
  k->heads = q[1];
  k->kv_heads = kv[1];
  k->seq_q = q[2];
  k->seq_k = kv[2];
  k->head_dim = q[3];
  if (k->head_dim != 64 && k->head_dim != 128) {
    *why = "the mma.sync kernel has head dims 64 and 128";
    snprintf(detail, dlen, "head dim %lld", (long long)k->head_dim);
    return false;
  }
  if (v[3] != k->head_dim) {
    *why = "the mma.sync kernel needs v's head dim equal to q's";
    return false;
  }
  if (k->seq_q > (1LL << 24) || k->seq_k > (1LL << 24) ||
      k->batch * k->heads * k->seq_q > (1LL << 31) ||
      k->batch * k->kv_heads * k->seq_k > (1LL << 31)) {
    *why = "the tensors are too large for 32-bit indexing";
    return false;
  }
  struct attn_op_list allocs = {0};
  attn_tile_collect_allocs(kernel, &allocs);
  int64_t qt[8] = {0}, kt[8] = {0};
  if (allocs.n >= 2) {
    attn_static_shape(mlirValueGetType(mlirOperationGetResult(allocs.ops[0], 0)),
                      qt);
    attn_static_shape(mlirValueGetType(mlirOperationGetResult(allocs.ops[1], 0)),
                      kt);
  }
  free(allocs.ops);
  k->block_m = (int)qt[0];
  k->block_n = (int)kt[0];
  if ((k->block_m != 64 && k->block_m != 128) ||
      (k->block_n != 32 && k->block_n != 64 && k->block_n != 128)) {
    *why = "the mma.sync kernel needs block-m 64 or 128 and block-n 32, 64 "
           "or 128";
    snprintf(detail, dlen, "block-m %d, block-n %d", k->block_m, k->block_n);
    return false;
  }
  if (!describe_attention(mlirOperationGetAttributeByName(
                              kernel, mlirStringRefCreateFromCString(
                                          "tile.attention")),
                          k, why, detail, dlen))
    return false;
  if (!is_attention_program(kernel, k->rope)) {
    *why = "the kernel is not the attention tile program attn-tile writes";
    return false;
  }
  int64_t limit = smem_limit(o->chip);
  k->stages = o->stages ? (int)o->stages : 3;
  while (!o->stages && k->stages > 2 && attn_mma_smem_bytes(k) > limit)
    --k->stages;
  if (attn_mma_smem_bytes(k) > limit) {
    *why = "the tiles do not fit the shared memory of a CTA";
    snprintf(detail, dlen, "%lld bytes with %d stages, %lld on %s",
             (long long)attn_mma_smem_bytes(k), k->stages, (long long)limit,
             o->chip);
    return false;
  }
  return true;
}

/// Moves the ops of the parsed shell gpu.module into @attn_kernels, keeping
/// one copy of each declaration and of the shared-memory global.
static void move_into(MlirOperation shell, MlirOperation kernels) {
  MlirBlock src = mlirRegionGetFirstBlock(mlirOperationGetRegion(shell, 0));
  MlirBlock dst = mlirRegionGetFirstBlock(mlirOperationGetRegion(kernels, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(src);
       !mlirOperationIsNull(op);) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    MlirStringRef sym;
    bool dup = false;
    if (attn_attr_str(op, "sym_name", &sym))
      for (MlirOperation d = mlirBlockGetFirstOperation(dst);
           !mlirOperationIsNull(d) && !dup; d = mlirOperationGetNextInBlock(d)) {
        MlirStringRef ds;
        dup = attn_attr_str(d, "sym_name", &ds) && ds.length == sym.length &&
              !memcmp(ds.data, sym.data, sym.length);
      }
    if (!dup) {
      mlirOperationRemoveFromParent(op);
      mlirBlockAppendOwnedOperation(dst, op);
    }
    op = next;
  }
}

static bool lower_kernel(MlirOperation kernel, const struct mma_options *o) {
  struct attn_hopper_kernel k;
  const char *why = NULL;
  char detail[128] = "";
  MlirStringRef sym;
  attn_attr_str(kernel, "sym_name", &sym);
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)sym.length, sym.data);
  if (!describe(kernel, o, &k, &why, detail, sizeof detail)) {
    if (o->fallback)
      return true;
    return attn_emit_errorf(kernel, "no mma.sync kernel for '%s': %s%s%s%s",
                            name, why, detail[0] ? " (found " : "", detail,
                            detail[0] ? ")" : "");
  }
  k.name = name;
  MlirOperation module = mlirOperationGetParentOperation(kernel);
  int ptx = attn_chip_min_ptx(o->chip, strlen(o->chip));
  MlirOperation gm = attn_gpu_kernels_module(
      module, o->chip, ptx < 70 ? 70 : ptx, mlirOperationGetLocation(kernel));
  if (mlirOperationIsNull(gm))
    return attn_emit_errorf(kernel, "cannot create gpu.module");
  struct attn_strbuf att = {0}, text = {0};
  attn_strbuf_attr(&att, mlirOperationGetAttributeByName(
                             kernel, mlirStringRefCreateFromCString(
                                         "tile.attention")));
  attn_strbuf_printf(
      &text,
      "gpu.module @shell {\n"
      "llvm.func @__nv_exp2(f64) -> f64\n"
      "llvm.func @__nv_sinf(f32) -> f32\n"
      "llvm.func @__nv_cosf(f32) -> f32\n"
      "llvm.mlir.global external @attn_smem() {addr_space = 3 : i32, "
      "alignment = 16 : i64} : !llvm.array<0 x i8>\n");
  attn_mma_emit_kernel(&text, &k, att.buf);
  attn_strbuf_printf(&text, "}\n");
  attn_strbuf_free(&att);
  if (text.failed) {
    attn_strbuf_free(&text);
    return attn_emit_errorf(kernel, "lower-tile-to-mma: out of memory");
  }
  // ATTN_DUMP_MMA=<file>: the kernel's text before parsing (debugging).
  const char *dump = getenv("ATTN_DUMP_MMA");
  FILE *f = dump ? fopen(dump, "w") : NULL;
  if (f) {
    fputs(text.buf, f);
    fclose(f);
  }
  MlirOperation shell = attn_parse_op(mlirOperationGetContext(kernel),
                                      text.buf, "lower-tile-to-mma");
  attn_strbuf_free(&text);
  if (mlirOperationIsNull(shell))
    return attn_emit_errorf(kernel, "lower-tile-to-mma produced IR that MLIR "
                                    "cannot parse (a bug in attn)");
  attn_set_locations(shell, mlirOperationGetLocation(kernel));
  move_into(shell, gm);
  mlirOperationDestroy(shell);
  mlirOperationDestroy(kernel);
  return true;
}

static bool lower_tile_to_mma_run(MlirOperation module, const void *opts) {
  const struct mma_options *o = opts;
  struct attn_op_list funcs = {0};
  attn_op_list_collect(&funcs, module, "func.func");
  bool ok = !funcs.failed;
  for (size_t i = 0; ok && i < funcs.n; ++i) {
    MlirOperation f = funcs.ops[i];
    // GEMM kernels are lower-tile-to-gpu's.
    if (!attn_tile_is_kernel(f) ||
        !mlirAttributeIsNull(mlirOperationGetAttributeByName(
            f, mlirStringRefCreateFromCString(ATTN_TILE_MATMUL_ATTR))))
      continue;
    if (!smem_limit(o->chip)) {
      // mma.sync on bf16 needs sm_80: leave every kernel, or say so at it.
      if (o->fallback)
        continue;
      ok = attn_emit_errorf(f, "the mma.sync kernel needs sm_80 or newer, "
                               "found %s",
                            o->chip);
      break;
    }
    ok = lower_kernel(f, o);
  }
  free(funcs.ops);
  return ok;
}

const struct attn_pass_def lower_tile_to_mma_pass = {
    .argument = "lower-tile-to-mma",
    .description = "Lower attention tile kernels to sm_80+ tensor-core "
                   "kernels: cp.async pipeline, ldmatrix, mma.sync, RoPE in "
                   "the kernel",
    .options = mma_options_help,
    .options_size = sizeof(struct mma_options),
    .init_options = mma_init,
    .set_option = mma_set,
    .run = lower_tile_to_mma_run,
};
