//===- lower_tile_to_hopper.h - lower-tile-to-hopper's own declarations --===//
//
// Internal to lib/Transforms: what lower_tile_to_hopper.c (attention) and
// lower_tile_to_hopper_gemm.c (GEMMs) share of the pass: its epilogue and
// GEMM options, and the GEMM's lowering entry. What the kernels are asked
// to build (struct attn_hopper_kernel, struct attn_hopper_gemm) and their
// sizes are lib/Kernels/kernels.h's.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_LOWER_TILE_TO_HOPPER_H
#define ATTN_LOWER_TILE_TO_HOPPER_H

#include "lib/IR/attn_context.h"
#include "lib/Kernels/kernels.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/// How the Hopper kernels write their output tiles (option `epilogue` of
/// lower-tile-to-hopper): as the kernel sees fit, from registers, or staged
/// through shared memory (attn_hopper_gemm.staged, and attention's
/// staged_out).
enum attn_hopper_epilogue {
  ATTN_HOPPER_EPILOGUE_AUTO,
  ATTN_HOPPER_EPILOGUE_REGISTERS,
  ATTN_HOPPER_EPILOGUE_STAGED
};

/// What lower-tile-to-hopper's options say about GEMMs: leave a kernel the
/// Hopper GEMM cannot compute to a later pass (fallback), the pipeline
/// depth, tile rows walked together and K slices (0: what tile.matmul says,
/// else the defaults), the epilogue, own-last (1, 0, or -1 for auto) and the
/// SMs of the GPU the CTA count fills.
struct attn_hopper_gemm_options {
  bool fallback;
  int stages, group_m, split_k;
  enum attn_hopper_epilogue epilogue;
  int own_last;
  int sms;
};

/// Lowers the matmul tile kernel `kernel` (its tile.matmul dictionary mm)
/// to the Hopper GEMM in the module's gpu.module, and with a split K its
/// reduce kernel and launch program (lower_tile_to_hopper_gemm.c); *lowered
/// says whether it did. False after a diagnostic on kernel; with
/// o->fallback a kernel it cannot compute (not a fused collective) is left
/// alone and the result is true.
bool attn_hopper_lower_gemm(MlirOperation kernel, MlirAttribute mm,
                            const struct attn_hopper_gemm_options *o,
                            bool *lowered);

/// Lowers a backward tile kernel (its tile.attention_grad dictionary att)
/// to the Hopper backward (lower_tile_to_hopper_grad.c): the dkdv part
/// builds every kernel and the launch program, the dq part is then erased;
/// *lowered says whether it did. False after a diagnostic on kernel; with
/// fallback a backward it cannot compute is left alone and the result is
/// true. choices: options dq-reduce, dp-issue and ds-buffers.
bool attn_hopper_lower_grad(MlirOperation kernel, MlirAttribute att,
                            bool fallback,
                            const struct attn_hopper_bwd_choices *choices,
                            bool *lowered);

#endif // ATTN_LOWER_TILE_TO_HOPPER_H
