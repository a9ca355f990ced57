//===- lower_tile_to_mma.c - lower-tile-to-mma: mma.sync attention kernels ===//
//
// Lowers an attention tile kernel, as attn-tile writes it, to one
// tensor-core kernel for any chip from sm_80 on, built as IR by
// lib/Kernels/mma_attention.c (through lib/Kernels/kernels.h): cp.async loads
// of K and V tiles into a multi-stage shared-memory ring, ldmatrix,
// mma.sync.m16n8k16 (bf16 or f16 in, f32 accumulators) for Q.K^T and P.V,
// each warp owning 16 query rows, an exp2 online softmax in registers with
// P passed from the S accumulators to the P.V operands without shared
// memory, masks only on diagonal and tail blocks, no visit to fully masked
// causal blocks, and RoPE of Q (once per CTA) and of K (per tile) in the
// kernel. It is the tensor-core path of every chip but sm_90a, which has
// lower-tile-to-hopper. The result is an llvm.func in
// `gpu.module @attn_kernels` whose `attn.launch` attribute is its manifest
// entry: four pointers, like the plain kernels (five with lse: the forward
// of a backward writes the row log-sum-exp too), with dynamic shared memory.
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
// Supported: bf16/f16, head dim 64 or 128 (v's equal to q's; 256 is a
// diagnostic: describe says why), block-m 64 or
// 128 (4 or 8 warps), block-n 32, 64 or 128, MHA or GQA, any sequence
// length, causal or not, a positive scale, a sliding window, score and mask
// functions of any form (tile.score_fn, tile.mask_fn: softcap, ALiBi, the
// gate ..., with up to 8 captured tensors as parameters in the tile
// kernel's argument order; lib/Kernels/score_fn.c), RoPE (either layout,
// rotary_dim a multiple of 4 up to the head dim, positions from offsets or
// explicit i32 positions per (batch, row), parameters like the captures;
// every row's cos/sin computed from its own position). Anything else is a
// diagnostic, or with fallback=true is left to lower-tile-to-gpu, as are
// GEMM tile kernels (tile.matmul) always.
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
// RoPE at explicit positions (q's and k's, GQA, causal): 157 at d 64, 234 at
// d 128 (N = 4K and 8K; 162 and 236 at offsets for the same shapes), the
// same stack frame.
//
// Every kernel has nvvm.minctasm = 1: without it ptxas for sm_86 aims at two
// CTAs per SM, caps at 128 registers and spills; with two CTAs (128
// registers) every configuration spills. Of the other tiles, block-n 128
// spills a little at d 128 (12 to 52 bytes); block-n 32 and block-m 64 do
// not.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels.h"
#include "lib/Target/attn_target.h"
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
  bool grad_fallback; // backward kernels without an mma.sync backward stay
                      // for lower-tile-to-gpu
  long grad_block_n;  // keys a CTA of the backward: 64, 128; 0: auto
  long stages; // 0: the most of 3 and 2 that fits
};

static const struct attn_pass_option mma_options_help[] = {
    {"chip", "the target chip: sm_80 (default), sm_86, sm_87, sm_89, sm_90 "
             "or sm_90a"},
    {"fallback", "leave kernels without an mma.sync lowering to "
                 "lower-tile-to-gpu instead of failing (default false)"},
    {"grad-fallback", "leave backward kernels (tile.attention_grad) without "
                      "an mma.sync backward to lower-tile-to-gpu (default "
                      "false)"},
    {"grad-block-n", "keys a CTA of the mma.sync backward: 64 (4 warps) or "
                     "128 (8 warps); 0 (default): 128 where two stages fit "
                     "the shared memory, else 64"},
    {"stages", "K/V pipeline depth, 2 to 4 (0: 3 where shared memory "
               "allows, else 2)"},
    {NULL, NULL},
};

static void mma_init(void *opts) {
  struct mma_options *o = opts;
  snprintf(o->chip, sizeof o->chip, "sm_80");
  o->fallback = false;
  o->grad_fallback = false;
  o->grad_block_n = 0;
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
  if (!strcmp(name, "grad-fallback")) {
    if (attn_parse_bool_option(value, &o->grad_fallback))
      return true;
    snprintf(err, errlen,
             "option 'grad-fallback' expects true or false, found '%s'", value);
    return false;
  }
  if (!strcmp(name, "grad-block-n")) {
    if (!attn_parse_int_option(name, value, 0, 128, &o->grad_block_n, err,
                               errlen))
      return false;
    if (o->grad_block_n != 0 && o->grad_block_n != 64 &&
        o->grad_block_n != 128) {
      snprintf(err, errlen,
               "option 'grad-block-n' must be 0, 64 or 128, found %ld",
               o->grad_block_n);
      return false;
    }
    return true;
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
           "fallback, grad-fallback, grad-block-n or stages)",
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

/// The RoPE the mma.sync kernel applies: positions from offsets in
/// [0, 2^24) or explicit ones (read at run time), rotary_dim a multiple of 4
/// up to the head dim; K rotated in the kernel, per tile.
static bool check_rope(MlirAttribute rope, struct attn_hopper_kernel *k,
                       void *user, char *why, size_t wlen, char *detail,
                       size_t dlen) {
  (void)user;
  (void)rope;
  k->rope_k_in_kernel = true;
  if (!(k->theta > 0) || !attn_attention_rope_positions_ok(k)) {
    snprintf(why, wlen, "the mma.sync kernel's RoPE needs theta > 0 and "
                        "positions in [0, 2^24)");
    return false;
  }
  if (k->rotary_dim <= 0 || k->rotary_dim % 4 != 0 ||
      k->rotary_dim > k->head_dim) {
    snprintf(why, wlen, "the mma.sync kernel's RoPE needs rotary_dim a "
                        "multiple of 4 up to the head dim");
    snprintf(detail, dlen, "rotary_dim %lld", (long long)k->rotary_dim);
    return false;
  }
  return true;
}

static const struct attn_attention_family mma_family = {
    .kernel = "the mma.sync kernel",
    .args_why = "the kernel does not take exactly (q, k, v, out)",
    // 256 passes here to be refused by describe, with its reason.
    .head_dims = 64 | 128 | 256,
    .head_dims_why = "the mma.sync kernel has head dims 64 and 128",
    .block_m = 64 | 128,
    .block_n = 32 | 64 | 128,
    .blocks_why = "the mma.sync kernel needs block-m 64 or 128 and block-n "
                  "32, 64 or 128",
    .kv_index32 = true,
    .positive_scale = true,
    .check_rope = check_rope,
};

/// Reads the kernel's problem and tiles into k; false with why (and detail)
/// when the mma.sync kernel cannot compute it on chip.
static bool describe(MlirOperation kernel, const struct mma_options *o,
                     struct attn_hopper_kernel *k, char *why, size_t wlen,
                     char *detail, size_t dlen) {
  if (!attn_attention_describe(kernel, &mma_family, k, NULL, why, wlen, detail,
                               dlen))
    return false;
  // Tried: with Q read again from shared memory per block (not kept in
  // registers) and the tiles' bases pinned in the loop, ptxas used all 255
  // registers and spilled 4 to 176 bytes at 64 x 32 and 64 x 64 tiles as
  // the shape and mask changed (CUDA 13.0, sm_80).
  if (k->head_dim == 256) {
    snprintf(why, wlen,
             "the mma.sync kernel has head dims 64 and 128 (at 256 a "
             "thread's O takes 128 of its 255 registers and ptxas spilled; "
             "sm_90a's Hopper kernel has it)");
    snprintf(detail, dlen, "head dim 256");
    return false;
  }
  // The grid is (query blocks, heads, batch): y and z take 65535 CTAs at
  // most (the plain path folds larger grids into x).
  if (k->heads > 65535 || k->batch > 65535) {
    snprintf(why, wlen, "the grid's y (heads) and z (batch) take at most "
                        "65535 CTAs");
    snprintf(detail, dlen, "%lld heads, batch %lld", (long long)k->heads,
             (long long)k->batch);
    return false;
  }
  int64_t limit = smem_limit(o->chip);
  k->stages = o->stages ? (int)o->stages : 3;
  while (!o->stages && k->stages > 2 &&
         attn_kernels_mma_smem_bytes(k) > limit)
    --k->stages;
  if (attn_kernels_mma_smem_bytes(k) > limit) {
    snprintf(why, wlen, "the tiles do not fit the shared memory of a CTA");
    snprintf(detail, dlen, "%lld bytes with %d stages, %lld on %s",
             (long long)attn_kernels_mma_smem_bytes(k), k->stages,
             (long long)limit, o->chip);
    return false;
  }
  return true;
}

/// Appends to the gpu.module's attn.programs the program of a kernel k
/// with run-time key lists: @<name>__attn__key_lists into the workspace
/// key_lists, then @<name>__attn (k's name) reading them.
static bool add_program(MlirOperation gm, const struct attn_hopper_kernel *k,
                        const char *name) {
  struct attn_strbuf t = {0};
  attn_strbuf_printf(&t, "{name = \"%s\", inputs = [", name);
  attn_attention_arg_names(&t, k, "q", "k");
  attn_strbuf_printf(&t,
                     "], workspace = [{name = \"key_lists\", bytes = %lld : "
                     "i64}], steps = [{kernel = \"%s__key_lists\", args = [",
                     (long long)(4 * attn_hopper_key_lists_words(k)), k->name);
  attn_attention_arg_names(&t, k, "q", "k");
  attn_strbuf_printf(&t, ", \"key_lists\"]}, {kernel = \"%s\", args = [",
                     k->name);
  attn_attention_arg_names(&t, k, "q", "k");
  attn_strbuf_printf(&t, ", \"key_lists\"]}]}");
  return attn_programs_append(gm, ATTN_PROGRAMS_ATTR, &t);
}

static bool lower_kernel(MlirOperation kernel, const struct mma_options *o) {
  struct attn_hopper_kernel k;
  char why[160], detail[128] = "";
  MlirStringRef sym;
  attn_attr_str(kernel, "sym_name", &sym);
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)sym.length, sym.data);
  if (!describe(kernel, o, &k, why, sizeof why, detail, sizeof detail)) {
    if (o->fallback)
      return true;
    return attn_emit_errorf(kernel, "no mma.sync kernel for '%s': %s%s%s%s",
                            name, why, detail[0] ? " (found " : "", detail,
                            detail[0] ? ")" : "");
  }
  k.name = name;
  int ptx = attn_chip_min_ptx(o->chip, strlen(o->chip));
  MlirOperation gm =
      attn_kernel_gpu_module(kernel, o->chip, ptx < 70 ? 70 : ptx);
  if (mlirOperationIsNull(gm))
    return false;
  // The key blocks each query block reads under the mask functions (the
  // mma kernel's query blocks start at row 0); for functions that read
  // data, the bounds of the key lists made at run time (key_lists.c).
  struct attn_key_blocks *keys = attn_hopper_key_table(&k, 0);
  if (!keys && attn_hopper_masks_read_data(&k))
    keys = attn_hopper_key_bounds(&k, 0);
  k.key_blocks = keys;
  bool lists = attn_hopper_plan_key_lists(&k, 0);
  char attn_name[300];
  snprintf(attn_name, sizeof attn_name, "%s__attn", name);
  if (lists)
    k.name = attn_name;
  // The kernel writers report their own failure, at the kernel.
  MlirLocation loc = mlirOperationGetLocation(kernel);
  bool built = attn_kernels_build_mma_attention(
                   gm, loc, &k,
                   mlirOperationGetAttributeByName(
                       kernel,
                       mlirStringRefCreateFromCString("tile.attention"))) &&
               (!lists || attn_kernels_build_key_lists(gm, loc, &k));
  free(keys);
  if (!built)
    return false;
  if (lists && !add_program(gm, &k, name))
    return attn_emit_errorf(kernel, "cannot record the launch program");
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
    MlirAttribute grad = attn_attr_get(f, "tile.attention_grad");
    bool backward = !mlirAttributeIsNull(grad);
    if (!smem_limit(o->chip)) {
      // mma.sync on bf16 needs sm_80: leave every kernel, or say so at it.
      if (o->fallback || (backward && o->grad_fallback))
        continue;
      ok = attn_emit_errorf(f, "the mma.sync kernel needs sm_80 or newer, "
                               "found %s",
                            o->chip);
      break;
    }
    ok = !backward ? lower_kernel(f, o)
         : mlirAttributeIsADictionary(grad)
             ? attn_mma_lower_grad(f, grad, o->chip, smem_limit(o->chip),
                                   (int)o->grad_block_n,
                                   o->fallback || o->grad_fallback)
             : attn_emit_errorf(f, "malformed tile.attention_grad");
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
