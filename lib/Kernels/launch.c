//===- launch.c - The attn.launch manifest entry, as an attribute ---------===//
//
// A kernel's attn.launch entry (docs/runtime.md) built as a dictionary
// attribute through the C API: the same keys and values the text of
// lib/Transforms/hopper_launch.c gave before issue 26. A dictionary's keys
// are sorted when it is made, so their order here does not reach the
// manifest.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"

#include <string.h>

/// {name, kind = "ptr", dtype, shape = array<i64: ...>[, align : i64]}, or
/// {name, kind = "tensormap", tensor, dtype, dims, box = array<i64: 64,
/// box_rows, 1, 1>, swizzle = 128 : i64}.
static MlirAttribute param_attr(struct attn_builder *b,
                                const struct attn_k_param *p) {
  MlirNamedAttribute a[6 + ATTN_K_MAX_PARAMS];
  intptr_t n = 0;
  a[n++] = attn_b_named(b, "name", attn_b_attr_str(b, p->name));
  if (p->tensor) {
    int64_t box[4] = {64, p->box_rows, 1, 1};
    a[n++] = attn_b_named(b, "kind", attn_b_attr_str(b, "tensormap"));
    a[n++] = attn_b_named(b, "tensor", attn_b_attr_str(b, p->tensor));
    a[n++] = attn_b_named(b, "dtype", attn_b_attr_str(b, p->dtype));
    a[n++] = attn_b_named(b, "dims", attn_b_attr_i64s(b, 4, p->dims));
    a[n++] = attn_b_named(b, "box", attn_b_attr_i64s(b, 4, box));
    a[n++] = attn_b_named(b, "swizzle", attn_b_attr_i64(b, 128));
    return mlirDictionaryAttrGet(b->ctx, n, a);
  }
  a[n++] = attn_b_named(b, "kind", attn_b_attr_str(b, "ptr"));
  a[n++] = attn_b_named(b, "dtype", attn_b_attr_str(b, p->dtype));
  a[n++] = attn_b_named(b, "shape",
                        attn_b_attr_i64s(b, p->rank ? p->rank : 4, p->shape));
  if (p->align > 1)
    a[n++] = attn_b_named(b, "align", attn_b_attr_i64(b, p->align));
  return mlirDictionaryAttrGet(b->ctx, n, a);
}

MlirAttribute attn_k_launch_attr(struct attn_builder *b, const char *kernel,
                                 const int64_t grid[3], int threads,
                                 int64_t smem_bytes, intptr_t nparams,
                                 const struct attn_k_param *params,
                                 intptr_t nextra,
                                 const MlirNamedAttribute *extra) {
  int32_t g[3] = {(int32_t)grid[0], (int32_t)grid[1], (int32_t)grid[2]};
  int32_t blk[3] = {threads, 1, 1};
  MlirAttribute ps[ATTN_K_MAX_PARAMS];
  if (nparams > ATTN_K_MAX_PARAMS)
    nparams = ATTN_K_MAX_PARAMS;
  if (nextra > ATTN_K_MAX_PARAMS)
    nextra = ATTN_K_MAX_PARAMS;
  for (intptr_t i = 0; i < nparams; ++i)
    ps[i] = param_attr(b, &params[i]);
  MlirNamedAttribute a[6 + ATTN_K_MAX_PARAMS];
  intptr_t n = 0;
  a[n++] = attn_b_named(b, "grid", mlirDenseI32ArrayGet(b->ctx, 3, g));
  a[n++] = attn_b_named(b, "block", mlirDenseI32ArrayGet(b->ctx, 3, blk));
  a[n++] = attn_b_named(b, "static_shared_bytes", attn_b_attr_i64(b, 0));
  a[n++] =
      attn_b_named(b, "dynamic_shared_bytes", attn_b_attr_i64(b, smem_bytes));
  a[n++] = attn_b_named(b, "kernel", attn_b_attr_str(b, kernel));
  a[n++] = attn_b_named(b, "params", mlirArrayAttrGet(b->ctx, nparams, ps));
  for (intptr_t i = 0; i < nextra; ++i)
    a[n++] = extra[i];
  return mlirDictionaryAttrGet(b->ctx, n, a);
}

struct attn_k_param attn_k_lse_param(const struct attn_hopper_kernel *k) {
  return (struct attn_k_param){.name = "lse", .dtype = "f32", .align = 4,
                               .rank = 3,
                               .shape = {k->batch, k->heads, k->seq_q}};
}

void attn_k_qkvo_params(const struct attn_hopper_kernel *k,
                        struct attn_k_param base[ATTN_HOPPER_ARG_CAPTURE]) {
  const char *ty = k->bf16 ? "bf16" : "f16";
  int64_t qs[4] = {k->batch, k->heads, k->seq_q, k->head_dim};
  int64_t ks[4] = {k->batch, k->kv_heads, k->seq_k, k->head_dim};
  static const char *const names[4] = {"q", "k", "v", "out"};
  for (int i = 0; i < 4; ++i) {
    base[i] = (struct attn_k_param){.name = names[i], .dtype = ty,
                                    .align = i == 3 ? 16 : 0};
    memcpy(base[i].shape, i == 1 || i == 2 ? ks : qs, sizeof qs);
  }
  base[ATTN_HOPPER_ARG_LSE] = attn_k_lse_param(k);
}
