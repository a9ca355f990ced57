//===- kernels.h - The GPU kernel writers, built as IR --------------------===//
//
// The public header of lib/Kernels: what lib/Transforms' passes call to
// build a kernel into a gpu.module through the MLIR C API (no text). The
// passes decide what to build (their option parsing and checks stay in
// lib/Transforms); a writer here builds it: the mma.sync attention kernel,
// the Hopper attention kernel and its RoPE kernel, the Hopper GEMM with its
// split-K reduce and fused collectives.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_KERNELS_H
#define ATTN_KERNELS_H

#include "mlir-c/IR.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The attention problem and tiles (lib/Transforms/hopper_emit.h).
struct attn_hopper_kernel;

//===-- The mma.sync attention kernel (sm_80 and newer) -------------------===//

/// Threads of a CTA: one warp per 16 query rows.
int attn_kernels_mma_threads(const struct attn_hopper_kernel *k);

/// Bytes of dynamic shared memory the kernel needs: the Q tile and `stages`
/// K and V tiles, block_m (block_n) rows of head_dim 16-bit elements each.
int64_t attn_kernels_mma_smem_bytes(const struct attn_hopper_kernel *k);

/// Builds the kernel k describes as an llvm.func @<k->name> at the end of
/// gpu_module, with its attn.launch manifest entry (attention, when not
/// null, becomes its "attention" key), declaring first what it refers to
/// and the module lacks: @attn_smem (the dynamic shared memory) and
/// libdevice's @__nv_exp2, @__nv_sinf and @__nv_cosf. Every op is located
/// at loc (the tile kernel's) named by the role that made it ("mma.load",
/// "mma.softmax", ...). False after an error diagnostic at loc when an op
/// could not be built; the partial function is then removed.
bool attn_kernels_build_mma_attention(MlirOperation gpu_module,
                                      MlirLocation loc,
                                      const struct attn_hopper_kernel *k,
                                      MlirAttribute attention);

//===-- The warp-specialised attention kernel (sm_90a) --------------------===//

/// Builds the kernel k describes as an llvm.func @<k->name> at the end of
/// gpu_module, with its attn.launch manifest entry (attention, when not
/// null, becomes its "attention" key), preceded for a persistent kernel by
/// its schedule, the global @<k->name>__tiles; first it declares what it
/// refers to and the module lacks: @attn_smem (aligned to 1024 bytes) and
/// libdevice's @__nv_exp2, @__nv_sinf and @__nv_cosf. Every op is located
/// at loc (the tile kernel's) named by the role that made it ("setup",
/// "producer", "consumer", "softmax", "rope", "epilogue"). False after an
/// error diagnostic at loc when an op could not be built (or the schedule
/// not made); what it built but the declarations is then removed.
bool attn_kernels_build_hopper_attention(MlirOperation gpu_module,
                                         MlirLocation loc,
                                         const struct attn_hopper_kernel *k,
                                         MlirAttribute attention);

//===-- The RoPE kernel of the split and pre placements (sm_90a) ----------===//

/// Builds `llvm.func @<k->name>__rope_k(x, x_rot)` (`__rope_q` when q is
/// true) at the end of gpu_module with its attn.launch manifest entry: it
/// rotates every row of K (Q) once, 16-byte loads and stores, cos/sin
/// stepped down the rows. Only when attn_hopper_rope_k_supported(k). Ops
/// are located at loc named "rope". False after an error diagnostic at loc
/// when an op could not be built; the partial function is then removed.
bool attn_kernels_build_hopper_rope(MlirOperation gpu_module, MlirLocation loc,
                                    const struct attn_hopper_kernel *k, bool q);

//===-- The Hopper GEMM (sm_90a) ------------------------------------------===//

/// The GEMM and its fused collective (lib/Transforms/hopper_gemm.h).
struct attn_hopper_gemm;

/// Builds the persistent warp-specialised GEMM g describes as an llvm.func
/// @<g->name>(a, b, c[, workspace, peers, out_peers, rank, epoch], a_map,
/// b_map[, g_map]) at the end of gpu_module, with its attn.launch manifest
/// entry (matmul, when not null, becomes its "matmul" key), declaring first
/// what the module lacks (@attn_smem, 1024-byte aligned, and libdevice's
/// @__nv_exp2, @__nv_sinf and @__nv_cosf). Every op is located at loc named
/// by its role ("gemm.producer", "gemm.consumer", "gemm.epilogue", ...).
/// False after an error diagnostic at loc; the partial function is then
/// removed.
bool attn_kernels_build_hopper_gemm(MlirOperation gpu_module, MlirLocation loc,
                                    const struct attn_hopper_gemm *g,
                                    MlirAttribute matmul);

/// Builds the kernel @<name>(partials, c) that sums a split GEMM's split_k
/// f32 slices into C (16-bit), with its attn.launch entry, at the end of
/// gpu_module. False after an error diagnostic at loc (nothing is left).
bool attn_kernels_build_gemm_reduce(MlirOperation gpu_module, MlirLocation loc,
                                    const struct attn_hopper_gemm *g,
                                    const char *name);

#ifdef __cplusplus
}
#endif

#endif // ATTN_KERNELS_H
