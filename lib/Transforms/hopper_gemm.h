//===- hopper_gemm.h - Writes the Hopper tile-level GEMM as MLIR text -----===//
//
// Internal to lib/Transforms: lower_tile_to_hopper.c reads a matmul tile
// kernel (tile.matmul, as attn-tile writes it for linalg.matmul) into struct
// attn_hopper_gemm, and hopper_gemm.c writes the kernel: a persistent,
// warp-specialised sm_90a GEMM, C[M,N] = A[M,K] * B[K,N] (row-major, 16-bit
// elements, f32 accumulation, one rounding at the end). One producer
// warpgroup issues TMA loads of A (block_m x 64) and B (64 x block_n) into a
// ring of `stages` shared-memory slots completing on mbarriers; two consumer
// warpgroups of block_m/2 rows each run wgmma m64nNk16 from shared memory
// and write their tile straight from registers. CTAs walk the output tiles
// in a grouped order (group_m tile rows at a time) so that neighbours share
// A and B in L2.
//
// The epilogue may rotate the output (RoPE, the `producer` placement of the
// Rotation Calculus): columns are heads of head_dim, row r is position
// rope_offset + r % seq_len. A thread holds columns c and c + 8t of each
// row it owns, so rotate-half pairs (c, c + rotary_dim/2) and interleaved
// pairs (2p, 2p + 1) are both in its registers.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_HOPPER_GEMM_H
#define ATTN_HOPPER_GEMM_H

#include "lib/IR/attn_context.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/// Threads of a CTA: one producer and two consumer warpgroups.
#define ATTN_HOPPER_GEMM_THREADS 384

/// Everything the GEMM kernel depends on; all of it is compile-time constant.
struct attn_hopper_gemm {
  const char *name;
  bool bf16;                 ///< element type: bf16 (true) or f16
  int64_t m, n, k;           ///< C is m x n, A m x k, B k x n, all row-major
  int block_m;               ///< 128
  int block_n;               ///< 64, 128, 192 or 256 (a multiple of 64)
  int stages;                ///< shared-memory ring depth (A and B slots)
  int group_m;               ///< tile rows walked together (L2 grouping)
  int ctas;                  ///< persistent CTAs: at most the tile count
  bool accumulate;           ///< C += A * B (C is read) instead of C = A * B
  // RoPE in the epilogue (the producer placement).
  bool rope;
  double theta;
  int64_t head_dim;          ///< columns per head (a multiple of 16)
  int64_t rotary_dim;        ///< rotated columns of each head (<= head_dim)
  bool interleaved;          ///< pairs (2p, 2p+1) instead of (p, p + r/2)
  int64_t seq_len;           ///< rows per sequence: position = r % seq_len
  int64_t rope_offset;       ///< position of row 0 of each sequence
};

/// Picks block_n, stages, group_m and ctas (for gpu_sms SMs) where they are
/// 0, from the shape.
void attn_hopper_gemm_defaults(struct attn_hopper_gemm *g, int gpu_sms);

/// True when the kernel computes g; otherwise *why says why not (for a
/// diagnostic: "k must be a multiple of 8 (16-byte TMA strides), found 12").
bool attn_hopper_gemm_supported(const struct attn_hopper_gemm *g, char *why,
                                size_t why_len);

/// Bytes of dynamic shared memory the kernel needs.
int64_t attn_hopper_gemm_smem_bytes(const struct attn_hopper_gemm *g);

/// Number of output tiles (the persistent CTAs walk these).
int64_t attn_hopper_gemm_tiles(const struct attn_hopper_gemm *g);

/// Appends the type aliases the kernel needs to b; must come first in the
/// text, before any gpu.module.
void attn_hopper_gemm_emit_aliases(struct attn_strbuf *b,
                                   const struct attn_hopper_gemm *g);

/// Appends the kernel's llvm.func `@<name>(a, b, c, a_map, b_map)` with its
/// attn.launch manifest entry (matmul_attr, a dictionary attribute's text,
/// is copied into it as "matmul"). Refers to `@attn_smem`, the dynamic
/// shared memory global the caller declares once per gpu.module.
void attn_hopper_gemm_emit_kernel(struct attn_strbuf *b,
                                  const struct attn_hopper_gemm *g,
                                  const char *matmul_attr);

#endif // ATTN_HOPPER_GEMM_H
