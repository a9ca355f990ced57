//===- gpu_pipeline.c - Chooses the GPU lowering of attention programs ----===//
//
// Drivers (attn-translate, attn-run, the C API) ask here which passes take a
// fused program to GPU kernels: the warp-specialised Hopper kernel where the
// chip is sm_90a and every attention is one it computes, the plain
// arithmetic path otherwise (or when asked).
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <string.h>

bool attn_hopper_supports(MlirOperation fused, const char **why) {
  int64_t q[8], v[8];
  MlirType qt = mlirValueGetType(mlirOperationGetOperand(fused, 0));
  if (mlirOperationGetNumOperands(fused) != 3 || attn_static_shape(qt, q) != 4 ||
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
  if ((q[3] != 64 && q[3] != 128) || v[3] != q[3]) {
    *why = "the Hopper kernel has head dims 64 and 128";
    return false;
  }
  for (intptr_t i = 0, n = mlirOperationGetNumAttributes(fused); i < n; ++i) {
    MlirNamedAttribute a = mlirOperationGetAttribute(fused, i);
    MlirStringRef name = mlirIdentifierStr(a.name);
    if (attn_str_eq(name, "operandSegmentSizes"))
      continue;
    if (attn_str_eq(name, "mods") && mlirAttributeIsAArray(a.attribute)) {
      bool scale_only = true;
      for (intptr_t m = 0; m < mlirArrayAttrGetNumElements(a.attribute); ++m) {
        MlirAttribute e = mlirArrayAttrGetElement(a.attribute, m);
        scale_only &= mlirAttributeIsAString(e) &&
                      attn_str_eq(mlirStringAttrGetValue(e), "scale");
      }
      if (scale_only)
        continue;
    }
    if (!attn_str_eq(name, "scale") && !attn_str_eq(name, "causal") &&
        !attn_str_eq(name, "rope")) {
      *why = "the Hopper kernel computes scale, causal and RoPE only";
      return false;
    }
  }
  struct attn_fused_config c;
  if (!attn_fused_get_config(fused, &c) || !(c.scale > 0)) {
    *why = "the Hopper kernel needs a positive scale";
    return false;
  }
  if (c.has_rope &&
      (c.rope.rotary_dim % 4 != 0 || 96 % (c.rope.rotary_dim / 4) != 0)) {
    *why = "the Hopper kernel's RoPE needs rotary_dim/4 to divide 96";
    return false;
  }
  return true;
}

struct scan {
  bool any, all_hopper;
};

static MlirWalkResult scan_fused(MlirOperation op, void *user) {
  struct scan *s = user;
  const char *why;
  if (attn_op_is(op, ATTN_OP_FUSED)) {
    s->any = true;
    s->all_hopper &= attn_hopper_supports(op, &why);
  }
  return MlirWalkResultAdvance;
}

bool attn_gpu_pipeline(MlirOperation module, const char *chip,
                       const char *features, enum attn_gpu_kernel kind,
                       const char *tile_options, const char *hopper_options,
                       struct attn_strbuf *out) {
  struct scan s = {false, true};
  mlirOperationWalk(module, scan_fused, &s, MlirWalkPreOrder);
  // Explicit tile options are for the plain path unless Hopper is asked
  // for: its tiles are fixed by the kernel.
  const char *user = tile_options ? tile_options : "";
  bool hopper = kind == ATTN_GPU_KERNEL_HOPPER ||
                (kind == ATTN_GPU_KERNEL_AUTO && s.any && s.all_hopper &&
                 !strcmp(chip, "sm_90a") && !*user);
  if (hopper) {
    // Hopper tiles: 128 query rows (two consumer warpgroups), 128 keys.
    attn_strbuf_printf(out,
                       "attn-tile{block-m=128 block-n=128 threads=384 %s},"
                       "lower-tile-to-hopper{chip=%s %s}",
                       user, chip, hopper_options ? hopper_options : "");
  } else {
    attn_strbuf_printf(out, "attn-tile{%s},lower-tile-to-gpu{chip=%s", user,
                       chip);
    if (features && *features)
      attn_strbuf_printf(out, " features=%s", features);
    attn_strbuf_printf(out, "}");
  }
  return hopper;
}
