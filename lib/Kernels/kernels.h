//===- kernels.h - Writes the mma.sync attention kernel as MLIR text ------===//
//
// For lib/Transforms: lower_tile_to_mma.c decides what to build (the
// attention problem as struct attn_hopper_kernel, whose block_m, block_n and
// stages are this kernel's), mma_emit.c writes it as LLVM/NVVM-dialect MLIR
// with inline PTX for mma.sync, ldmatrix and cp.async, which every chip from
// sm_80 on runs.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_MMA_EMIT_H
#define ATTN_MMA_EMIT_H

#include "lib/Transforms/hopper_emit.h"

#include <stdint.h>

/// Threads of a CTA: one warp per 16 query rows.
int attn_mma_threads(const struct attn_hopper_kernel *k);

/// Bytes of dynamic shared memory the kernel needs: the Q tile and `stages`
/// K and V tiles, block_m (block_n) rows of head_dim 16-bit elements each.
int64_t attn_mma_smem_bytes(const struct attn_hopper_kernel *k);

/// Appends the kernel's llvm.func (with its attn.launch manifest entry,
/// attention_attr being its "attention" dictionary or NULL) to b. The
/// function refers to `@attn_smem`, the dynamic shared memory global, and to
/// libdevice's `@__nv_exp2`, `@__nv_sinf` and `@__nv_cosf` (with RoPE),
/// which the caller declares once per gpu.module.
void attn_mma_emit_kernel(struct attn_strbuf *b,
                          const struct attn_hopper_kernel *k,
                          const char *attention_attr);

#endif // ATTN_MMA_EMIT_H
