//===- gpu_pipeline.c - Chooses the GPU lowering of attention programs ----===//
//
// Drivers (attn-translate, attn-run, the C API) ask here which passes take a
// fused program to GPU kernels: the warp-specialised Hopper kernels where the
// chip is sm_90a and every attention and GEMM is one they compute; on the
// other chips from sm_80 on, the mma.sync kernel where it computes every
// attention (GEMMs then take the plain path); the plain arithmetic path
// otherwise (or when asked). The backward's kernels (attn.fused_grad) take
// the tensor-core backward of the path chosen where it computes them
// (lower_tile_to_hopper_grad.c, lower_tile_to_mma_grad.c), else the plain
// path, beside the tensor-core forwards with lse that feed them.
//
//===----------------------------------------------------------------------===//
#include "lib/CostModel/cost_model.h"
#include "lib/Transforms/lower_tile_to_hopper.h"
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/body.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <string.h>

/// Whether the tensor-core kernels read every tensor the bodies of fused's
/// score_fn and mask_fn capture (lib/Kernels/score_fn.c): at most 8, of
/// rank 1 to 4, f32, f16, bf16, i32 or i64, with the gate and the segment
/// ids, which attn-tile turns into captures too.
static bool captures_supported(MlirOperation fused, int extras) {
  MlirBlock bodies[2] = {attn_fused_score_fn(fused), attn_fused_mask_fn(fused)};
  MlirValue all[16];
  int n = 0;
  for (int r = 0; r < 2; ++r) {
    if (mlirBlockIsNull(bodies[r]))
      continue;
    MlirValue c[16];
    int m = attn_body_captures(bodies[r], c, 16);
    if (m > 16)
      return false;
    for (int i = 0; i < m; ++i) {
      bool seen = false;
      for (int j = 0; j < n; ++j)
        seen |= mlirValueEqual(all[j], c[i]);
      if (!seen)
        all[n++] = c[i];
    }
  }
  if (n + extras > ATTN_HOPPER_MAX_CAPTURES)
    return false;
  for (int i = 0; i < n; ++i) {
    MlirType t = mlirValueGetType(all[i]);
    int64_t d[8];
    int rank = mlirTypeIsARankedTensor(t) ? attn_static_shape(t, d) : -1;
    MlirType e = rank > 0 ? mlirShapedTypeGetElementType(t) : t;
    if (rank < 1 || rank > 4 ||
        !(mlirTypeIsAF32(e) || mlirTypeIsAF16(e) || mlirTypeIsABF16(e) ||
          (mlirTypeIsAInteger(e) && (mlirIntegerTypeGetWidth(e) == 32 ||
                                     mlirIntegerTypeGetWidth(e) == 64))))
      return false;
  }
  return true;
}

bool attn_hopper_supports(MlirOperation fused, const char **why) {
  int64_t q[8], v[8];
  MlirType qt = mlirValueGetType(mlirOperationGetOperand(fused, 0));
  struct attn_fused_config c;
  bool cfg = attn_fused_get_config(fused, &c);
  // The gate and the document mask's segment ids become bodies' captures
  // (attn-tile), and the kernels take RoPE positions as captures too.
  int extras = (int)mlirOperationGetNumOperands(fused) - 3;
  if (!captures_supported(fused, extras) || attn_static_shape(qt, q) != 4 ||
      attn_static_shape(mlirValueGetType(mlirOperationGetOperand(fused, 2)),
                        v) != 4) {
    *why = "extra inputs have no Hopper kernel";
    return false;
  }
  MlirType e = mlirShapedTypeGetElementType(qt);
  if (!mlirTypeIsABF16(e) && !mlirTypeIsAF16(e)) {
    *why = "the Hopper kernel takes bf16 or f16";
    return false;
  }
  if ((q[3] != 64 && q[3] != 128 && q[3] != 256) || v[3] != q[3]) {
    *why = "the Hopper kernel has head dims 64, 128 and 256";
    return false;
  }
  if (q[0] > 65535 || q[1] > 65535) {
    *why = "the tensor-core kernels' grids take at most 65535 heads and "
           "batch";
    return false;
  }
  for (intptr_t i = 0, n = mlirOperationGetNumAttributes(fused); i < n; ++i) {
    MlirNamedAttribute a = mlirOperationGetAttribute(fused, i);
    MlirStringRef name = mlirIdentifierStr(a.name);
    if (attn_str_eq(name, "operandSegmentSizes"))
      continue;
    if (attn_str_eq(name, "mods") && mlirAttributeIsAArray(a.attribute)) {
      // The tensor-core kernels compute every modifier (the gate and
      // score_fn as bodies: lib/Kernels/score_fn.c).
      bool computed = true;
      for (intptr_t m = 0; m < mlirArrayAttrGetNumElements(a.attribute); ++m) {
        MlirAttribute e = mlirArrayAttrGetElement(a.attribute, m);
        MlirStringRef s = mlirAttributeIsAString(e)
                              ? mlirStringAttrGetValue(e)
                              : mlirStringRefCreate("", 0);
        computed &= attn_str_eq(s, "scale") || attn_str_eq(s, "softcap") ||
                    attn_str_eq(s, "alibi") || attn_str_eq(s, "gate") ||
                    attn_str_eq(s, "fn");
      }
      if (computed)
        continue;
    }
    // lse (attn-grad's forward): the kernels write the row log-sum-exp too.
    if (!attn_str_eq(name, "scale") && !attn_str_eq(name, "causal") &&
        !attn_str_eq(name, "rope") && !attn_str_eq(name, "softcap") &&
        !attn_str_eq(name, "alibi") && !attn_str_eq(name, "window") &&
        !attn_str_eq(name, "gate_block") && !attn_str_eq(name, "lse")) {
      *why = "the Hopper kernel computes scale, causal, softcap, alibi, "
             "window, gate, document masks, score and mask functions, "
             "RoPE and lse only";
      return false;
    }
  }
  if (!cfg || !(c.scale > 0)) {
    *why = "the Hopper kernel needs a positive scale";
    return false;
  }
  // Rotary dim 256 (at head dim 256) rotates K before the kernel (split,
  // pre), never in its producer (lower_tile_to_hopper.c).
  if (c.has_rope &&
      (c.rope.rotary_dim % 4 != 0 ||
       (96 % (c.rope.rotary_dim / 4) != 0 &&
        !(q[3] == 256 && c.rope.rotary_dim == 256)))) {
    *why = "the Hopper kernel's RoPE needs rotary_dim/4 to divide 96";
    return false;
  }
  return true;
}

/// True when lower-tile-to-hopper computes the GEMM kernel attn-tile
/// writes for mm with kernel=hopper: 16-bit elements and a shape the Hopper
/// GEMM takes with attn-tile's tiles (lib/Kernels/kernels.h), on the default GPU's
/// SMs as attn-tile and the drivers' lowering assume.
static bool hopper_computes_matmul(const struct attn_matmul_info *mm) {
  if (!mlirTypeIsABF16(mm->elem) && !mlirTypeIsAF16(mm->elem))
    return false;
  struct attn_hopper_gemm g;
  memset(&g, 0, sizeof g);
  g.bf16 = mlirTypeIsABF16(mm->elem);
  g.m = mm->m;
  g.n = mm->n;
  g.k = mm->k;
  g.block_m = ATTN_TILE_HOPPER_GEMM_BM;
  int sms = attn_cost_gpu_lookup(ATTN_COST_DEFAULT_GPU, NULL, 0)->sms;
  attn_tile_hopper_gemm_shape(mm, 0, &g.block_n, &g.split_k);
  g.accumulate = mm->accumulate;
  g.sms = sms;
  attn_hopper_gemm_defaults(&g, sms);
  char why[256];
  return attn_hopper_gemm_supported(&g, why, sizeof why);
}

/// q's head dim (its last dimension) of the attn.fused op fused; 0 when q
/// is not 4-D and static.
static int64_t head_dim_of(MlirOperation fused) {
  int64_t q[8];
  return attn_static_shape(mlirValueGetType(mlirOperationGetOperand(fused, 0)),
                           q) == 4
             ? q[3]
             : 0;
}

struct scan {
  bool any, all_hopper, comm;
  bool attn, all_mma; // attention ops; the mma.sync kernel computes them all
  bool grad;          // backward ops (attn.fused_grad)
  bool grad_hopper;   // a backward the Hopper lowering computes
  bool decode;        // attn.fused_decode ops
};

static MlirWalkResult scan_kernels(MlirOperation op, void *user) {
  struct scan *s = user;
  const char *why;
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (n.length > 5 && !strncmp(n.data, "comm.", 5))
    s->comm = true;
  if (attn_op_is(op, ATTN_OP_FUSED_DECODE))
    s->decode = true;
  if (attn_op_is(op, ATTN_OP_FUSED_GRAD)) {
    // lower-tile-to-hopper builds the backward of the first supported case
    // (lower_tile_to_hopper_grad.c), lower-tile-to-mma those of the mma.sync
    // backward (lower_tile_to_mma_grad.c, asked with grad-fallback: the
    // others take the plain path). The forwards beside
    // them (with lse) are judged by attn_hopper_supports and still get the
    // tensor-core kernels.
    s->grad = true;
    s->grad_hopper |= attn_hopper_grad_supports(op, &why);
  } else if (attn_op_is(op, ATTN_OP_FUSED)) {
    s->any = s->attn = true;
    // The mma.sync kernel takes the Hopper kernel's programs but head dim
    // 256.
    bool ok = attn_hopper_supports(op, &why);
    s->all_hopper &= ok;
    s->all_mma &= ok && head_dim_of(op) <= 128;
  } else if (attn_op_is(op, "func.func")) {
    struct attn_matmul_info mm;
    int found = attn_matmul_find(op, &mm, false);
    s->any |= found != 0;
    s->all_hopper &= found == 0 || (found > 0 && hopper_computes_matmul(&mm));
  }
  return MlirWalkResultAdvance;
}

/// True when the attn-tile options hold kernel=hopper (mma: kernel=mma),
/// read as attn-tile reads them; bad options are attn-tile's to report,
/// later.
static bool asks_kernel(const char *opts, bool mma) {
  struct attn_tile_options o;
  char err[256];
  attn_tile_pass.init_options(&o);
  return attn_pass_parse_options(&attn_tile_pass, &o, opts, err, sizeof err) &&
         (mma ? o.mma : o.hopper);
}

static bool asks_hopper(const char *opts) { return asks_kernel(opts, false); }

/// True for the chips lower-tile-to-mma compiles for (mma.sync on bf16 and
/// f16, ldmatrix, cp.async: sm_80 and newer).
static bool has_mma(const char *chip) {
  static const char *const chips[] = {"sm_80", "sm_86", "sm_87",
                                      "sm_89", "sm_90", "sm_90a"};
  for (size_t i = 0; i < sizeof chips / sizeof *chips; ++i)
    if (!strcmp(chip, chips[i]))
      return true;
  return false;
}

enum attn_gpu_kernel attn_gpu_pipeline(MlirOperation module, const char *chip,
                                       const char *features,
                                       enum attn_gpu_kernel kind,
                                       const char *tile_options,
                                       const char *hopper_options,
                                       struct attn_strbuf *out) {
  struct scan s = {.all_hopper = true, .all_mma = true};
  mlirOperationWalk(module, scan_kernels, &s, MlirWalkPreOrder);
  // Collectives on a matmul's result or operand: comm-schedule fuses them
  // into comm.fused_matmul, which only the Hopper lowering takes (on other
  // chips the plain path rejects it with its reason). The drivers ask for
  // the adaptive split, measured faster than the static one on two H200s
  // (geometric mean 1.11x over 21 shapes and patterns, bench/RESULTS.md); a
  // collective's comm.schedule attribute still pins its own.
  if (s.comm) {
    bool sm90a = !strcmp(chip, "sm_90a");
    attn_strbuf_printf(out,
                       "comm-schedule{comm-schedule-split=adaptive},"
                       "attn-tile{%s%s},",
                       sm90a && kind != ATTN_GPU_KERNEL_PLAIN ? "kernel=hopper "
                                                              : "",
                       tile_options ? tile_options : "");
    if (sm90a && kind != ATTN_GPU_KERNEL_PLAIN) {
      attn_strbuf_printf(out, "lower-tile-to-hopper{chip=%s %s}", chip,
                         hopper_options ? hopper_options : "");
      return ATTN_GPU_KERNEL_HOPPER;
    }
    attn_strbuf_printf(out, "lower-tile-to-gpu{chip=%s}", chip);
    return ATTN_GPU_KERNEL_PLAIN;
  }
  // Decode over a KV cache (attn.fused_decode): its own kernel on any chip
  // from sm_80 (lower-tile-to-decode, which leaves the other tile kernels
  // alone, and the decodes it does not take to the plain path's scalar
  // program); the other attentions of such a module take the plain path.
  // The Hopper options are the decode lowering's here (body=lanes,
  // splits=4, the ctas attn-run passes).
  if (s.decode) {
    attn_strbuf_printf(out,
                       "attn-tile{%s},lower-tile-to-decode{chip=%s "
                       "fallback=true %s},lower-tile-to-gpu{chip=%s",
                       tile_options ? tile_options : "", chip,
                       hopper_options ? hopper_options : "", chip);
    if (features && *features)
      attn_strbuf_printf(out, " features=%s", features);
    attn_strbuf_printf(out, "}");
    return s.any ? ATTN_GPU_KERNEL_PLAIN : ATTN_GPU_KERNEL_DECODE;
  }
  // Explicit tile options are for the plain path unless Hopper is asked
  // for, by the caller or by `kernel=hopper` among the options (a GEMM's
  // block-n, say; attention's tiles are fixed by the kernel).
  const char *user = tile_options ? tile_options : "";
  bool hopper = kind == ATTN_GPU_KERNEL_HOPPER ||
                (kind == ATTN_GPU_KERNEL_AUTO && asks_hopper(user)) ||
                (kind == ATTN_GPU_KERNEL_AUTO && s.any && s.all_hopper &&
                 !strcmp(chip, "sm_90a") && !*user);
  // Other chips from sm_80 on: the mma.sync kernel for the same programs;
  // on any chip from sm_80 on when the tile options name kernel=mma (as
  // kernel=hopper asks for Hopper; the Python binding's way to the
  // mma.sync kernels on sm_90a).
  bool mma = kind == ATTN_GPU_KERNEL_MMA ||
             (kind == ATTN_GPU_KERNEL_AUTO && has_mma(chip) &&
              asks_kernel(user, true)) ||
             (kind == ATTN_GPU_KERNEL_AUTO && s.attn && s.all_mma &&
              strcmp(chip, "sm_90a") && has_mma(chip) && !*user);
  if (hopper) {
    // Hopper tiles (attn-tile's kernel=hopper): 128 query rows (two
    // consumer warpgroups) and 128 keys; GEMM tiles 128 rows by 64 to 256
    // (attn_tile_hopper_gemm_shape), K steps of 64. Backward kernels keep
    // the plain path's tiles and go on to lower-tile-to-gpu.
    attn_strbuf_printf(out,
                       "attn-tile{%s%s},lower-tile-to-hopper{chip=%s %s%s}",
                       asks_hopper(user) ? "" : "kernel=hopper ", user, chip,
                       s.grad ? "grad-fallback=true " : "",
                       hopper_options ? hopper_options : "");
    if (!s.grad)
      return ATTN_GPU_KERNEL_HOPPER;
    attn_strbuf_printf(out, ",lower-tile-to-gpu{chip=%s", chip);
    if (features && *features)
      attn_strbuf_printf(out, " features=%s", features);
    attn_strbuf_printf(out, "}");
    return ATTN_GPU_KERNEL_HOPPER;
  }
  if (mma) {
    // 128 query rows (eight warps of 16) and 64 keys; backward kernels get
    // the mma.sync backward (lower_tile_to_mma_grad.c) where it computes
    // them; GEMMs (plain tiles with kernel=mma) and the other backwards
    // (the plain path's tiles) go on to lower-tile-to-gpu.
    attn_strbuf_printf(out,
                       "attn-tile{%s%s},lower-tile-to-mma{chip=%s%s},"
                       "lower-tile-to-gpu{chip=%s",
                       asks_kernel(user, true) ? "" : "kernel=mma ", user, chip,
                       s.grad ? " grad-fallback=true" : "", chip);
  } else if (kind == ATTN_GPU_KERNEL_AUTO && s.grad_hopper &&
             !strcmp(chip, "sm_90a") && !*user) {
    // A backward the Hopper lowering computes beside a forward it does not
    // (the forward with lse, until the Hopper forward writes it): the
    // backward's kernels are built, the rest goes on to the plain path, as
    // for tile-level input.
    attn_strbuf_printf(out,
                       "attn-tile,lower-tile-to-hopper{chip=%s fallback=true "
                       "%s},lower-tile-to-gpu{chip=%s",
                       chip, hopper_options ? hopper_options : "", chip);
  } else {
    attn_strbuf_printf(out, "attn-tile{%s},lower-tile-to-gpu{chip=%s", user,
                       chip);
  }
  if (features && *features)
    attn_strbuf_printf(out, " features=%s", features);
  attn_strbuf_printf(out, "}");
  return mma ? ATTN_GPU_KERNEL_MMA : ATTN_GPU_KERNEL_PLAIN;
}
