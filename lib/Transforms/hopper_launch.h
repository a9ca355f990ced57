//===- hopper_launch.h - The attn.launch entries of the GPU kernels -------===//
//
// Internal to lib/Transforms: the manifest entry each generated kernel
// carries as its attn.launch attribute (grid, block, shared memory, kernel
// family, params), written as MLIR attribute text by the emitters of the
// Hopper attention kernel (hopper_emit.c), the RoPE kernels (hopper_rope.c)
// and the GEMMs (hopper_gemm.c, hopper_gemm_splitk.c). The mma.sync kernel
// builds the same entry as an attribute (lib/Kernels/launch.c). attnrt
// reads it back from the manifest (docs/runtime.md).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_HOPPER_LAUNCH_H
#define ATTN_HOPPER_LAUNCH_H

#include "lib/IR/attn_context.h"

#include <stdint.h>

struct attn_hopper_kernel;

/// Opens an attn.launch entry: `attn.launch = {grid, block (threads, 1,
/// 1), static_shared_bytes = 0, dynamic_shared_bytes = smem_bytes, kernel =
/// "<kernel>", params = [`. The caller appends the params, closes the list
/// with "]", may add keys, and closes the entry with "}".
void attn_hopper_emit_launch_head(struct attn_strbuf *b, const char *kernel,
                                  const int64_t grid[3], int threads,
                                  int64_t smem_bytes);

/// Appends a pointer parameter: name, element type, a shape of rank dims,
/// and the alignment the kernel assumes when align > 1.
void attn_hopper_emit_param(struct attn_strbuf *b, const char *name,
                            const char *ty, int rank, const int64_t *shape,
                            int align);

/// Appends a TMA tensor map parameter that attnrt encodes from the pointer
/// parameter `tensor`: dims innermost first, boxes of 64 elements by
/// box_rows rows, 128-byte swizzle.
void attn_hopper_emit_map(struct attn_strbuf *b, const char *name,
                          const char *tensor, const char *ty,
                          const int64_t dims[4], int box_rows);

/// Opens an attention kernel's attn.launch entry (attn_hopper_emit_launch
/// _head) with the params q, k, v and out of k's shapes and element type
/// (align: the alignment q, k and v must have, out_align out's; 0 for
/// none). More params may follow, each after ", "; then
/// attn_hopper_emit_launch_close ends the list and the entry, adding
/// `attention = <attention>` unless attention is NULL.
void attn_hopper_emit_launch_open(struct attn_strbuf *b,
                                  const struct attn_hopper_kernel *k,
                                  const char *kernel, const int64_t grid[3],
                                  int threads, int64_t smem_bytes, int align,
                                  int out_align);
void attn_hopper_emit_launch_close(struct attn_strbuf *b,
                                   const char *attention);

#endif // ATTN_HOPPER_LAUNCH_H
