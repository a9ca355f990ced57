//===- hopper_gemm.h - The Hopper tile-level GEMM's description -----------===//
//
// lower_tile_to_hopper_gemm.c reads a matmul tile kernel (tile.matmul, as
// attn-tile writes it for linalg.matmul) into struct attn_hopper_gemm, and
// lib/Kernels builds the kernel (attn_kernels_build_hopper_gemm): a
// persistent, warp-specialised sm_90a GEMM, C[M,N] = A[M,K] * B[K,N]
// (row-major, 16-bit elements, f32 accumulation, one rounding at the end).
// One producer warpgroup issues TMA loads of A (block_m x 64) and B (64 x
// block_n) into a ring of `stages` shared-memory slots completing on
// mbarriers; two consumer warpgroups of block_m/2 rows each run wgmma
// m64nNk16 from shared memory and write their tile through shared memory and the bulk-copy engine
// (staged), or straight from registers. CTAs walk the output tiles
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

/// Threads of a CTA: one producer and two consumer warpgroups.
#define ATTN_HOPPER_GEMM_THREADS 384

/// Rows of an output tile one communication task of a fused reduce
/// pattern moves (lib/Kernels/gemm_comm.c); the all-reduce workspace has a
/// flag per slab. Large enough that a warp's release fence (an NVLink round
/// trip) is paid for 16 KiB-64 KiB of data, small enough that a tile is
/// split between warps.
#define ATTN_GEMM_SLAB_ROWS 64

/// The collective fused with the GEMM (lib/Kernels/gemm_comm.c), or none.
enum attn_gemm_comm {
  ATTN_GEMM_LOCAL,          ///< C = A * B on one GPU
  ATTN_GEMM_ALL_REDUCE,     ///< C = sum over ranks of A_r * B_r, on every rank
  ATTN_GEMM_ALL_GATHER,     ///< C = [A_0; ...; A_{W-1}] * B, A_r: rank r's rows
  ATTN_GEMM_REDUCE_SCATTER, ///< C_r = rows r of the sum over ranks of A_r * B_r
};

/// Everything the GEMM kernel depends on; all of it is compile-time constant.
struct attn_hopper_gemm {
  const char *name;
  bool bf16;                 ///< element type: bf16 (true) or f16
  int64_t m, n, k;           ///< C is m x n, A m x k, B k x n, all row-major
  /// A fused kernel's real rows when they do not split into whole tiles
  /// (0: m, which they do): m is then the rows of a padded layout of
  /// `shards` (attn_gemm_shards) equal parts, each the real part's rows
  /// rounded up to block_m; the padding rows are computed from whatever A
  /// holds there and never stored into C (attn_gemm_real_row).
  int64_t m_rows;
  int block_m;               ///< 128
  int block_n;               ///< 64, 128, 192 or 256 (a multiple of 64)
  int stages;                ///< shared-memory ring depth (A and B slots)
  int group_m;               ///< tile rows walked together (L2 grouping)
  int ctas;                  ///< persistent CTAs: at most the tile count
  int sms;                   ///< the GPU's SMs: a fused kernel's compute
                             ///< and communication CTAs share them
  bool accumulate;           ///< C += A * B (C is read) instead of C = A * B
  // RoPE in the epilogue (the producer placement).
  bool rope;
  double theta;
  int64_t head_dim;          ///< columns per head (a multiple of 16)
  int64_t rotary_dim;        ///< rotated columns of each head (<= head_dim)
  bool interleaved;          ///< pairs (2p, 2p+1) instead of (p, p + r/2)
  int64_t seq_len;           ///< rows per sequence: position = r % seq_len
  int64_t rope_offset;       ///< position of row 0 of each sequence
  // The heads layout of a projection (attn.project): element (r, c) of C
  // is stored at [r / out_seq, c / out_head_dim, r % out_seq, c %
  // out_head_dim] of a [M / out_seq, N / out_head_dim, out_seq,
  // out_head_dim] tensor. out_seq 0: C is row-major M x N.
  int64_t out_seq, out_head_dim;
  /// The staged epilogue: each consumer warpgroup writes its rows of the
  /// tile into shared memory and hands them, a row per thread, to the
  /// bulk-copy engine (cp.async.bulk), so that C (or a peer's slot) is
  /// written in whole rows while the warps go on to the next tile, instead
  /// of by 4-byte stores straight from registers. Only where
  /// attn_hopper_gemm_stages_tiles; its rows take the shared memory of
  /// about one ring slot (the default depth drops from 4 to 3 at 128x256).
  bool staged;
  // The fused collective: the kernel runs `ctas` compute CTAs and
  // `comm_ctas` communication CTAs (launched first) on `world` ranks of one
  // NVLink domain. m, n, k are one rank's GEMM (m: all gathered rows for
  // ALL_GATHER; the reduce-scatter output has m / world rows).
  enum attn_gemm_comm comm;
  int world;
  int comm_ctas;
  /// The adaptive split (the on-GPU controller): compute CTAs claim tiles
  /// from a counter instead of a fixed share, and once none is left their
  /// consumer warpgroups claim communication tasks beside the
  /// communication CTAs, so the SMs move from the GEMM to the collective
  /// as the GEMM drains. Fused kernels only (the counters live in the
  /// workspace).
  bool adaptive;
  /// Reduce patterns: each rank computes the tiles it owns in its last wave
  /// (the peers' tiles of those rows in the waves before), so that no
  /// partial of the last wave crosses NVLink after the GEMM: tile ordinals
  /// keep their meaning (owner, slot, flags); only the order in which a
  /// rank runs them changes (lib/Kernels/hopper_gemm.c's ordinal_of).
  bool own_last;
  /// Slices of K (1: none). With split_k > 1 the kernel runs split_k x
  /// tiles units, unit u = tile u % tiles over K blocks [s nk/split_k, (s +
  /// 1) nk/split_k) of slice s = u / tiles, and writes each tile's f32 sum
  /// of its slice into `partials` (split_k x m rows of n, row-major); a
  /// second kernel (attn_kernels_build_gemm_reduce) sums the slices into C.
  /// For outputs with too few tiles to fill the GPU and a long K; local,
  /// plain GEMMs only (no accumulate, RoPE, heads layout or collective).
  int split_k;
};

/// Byte offsets in the symmetric workspace of a fused kernel (every rank
/// allocates the same, zero-filled once: flags count launches). data is the
/// partial products (reduce patterns) or the gathered A (all-gather; the
/// caller writes its own rows there before each launch); flags[0] and
/// flags[1] are per-tile or per-row-block counters; ctl holds the launch
/// counters. 0 bytes for ATTN_GEMM_LOCAL.
struct attn_gemm_workspace {
  int64_t data, flags0, flags1, ctl, bytes;
};
void attn_hopper_gemm_workspace(const struct attn_hopper_gemm *g,
                                struct attn_gemm_workspace *w);

/// Picks block_n, stages, group_m and ctas (for gpu_sms SMs) where they are
/// 0, from the shape.
void attn_hopper_gemm_defaults(struct attn_hopper_gemm *g, int gpu_sms);

/// True when the kernel computes g; otherwise *why says why not (for a
/// diagnostic: "k must be a multiple of 8 (16-byte TMA strides), found 12").
bool attn_hopper_gemm_supported(const struct attn_hopper_gemm *g, char *why,
                                size_t why_len);

/// True when the staged epilogue can write g's tiles: no accumulate, no
/// RoPE and no heads layout (C row-major, written as the GEMM made it).
bool attn_hopper_gemm_stages_tiles(const struct attn_hopper_gemm *g);
/// Bytes of dynamic shared memory the kernel needs.
int64_t attn_hopper_gemm_smem_bytes(const struct attn_hopper_gemm *g);

/// Number of output tiles (the persistent CTAs walk these).
int64_t attn_hopper_gemm_tiles(const struct attn_hopper_gemm *g);

//===-- Shared with lib/Kernels' GEMM (gemm_*.c) --------------------------===//
//
// The built kernel's state and roles are lib/Kernels/kernels_internal.h's
// (struct attn_k_gemm); what needs no IR stays here.

/// Staged fused reduce patterns: a consumer warpgroup does not count its
/// landed tiles at their owners itself (a system-scope release would stall
/// it at every tile) but posts them to a mailbox in shared memory, and one
/// thread of the producer warpgroup per consumer (threads 32 and 64, the
/// signalers) counts them.
bool attn_gemm_has_mail(const struct attn_hopper_gemm *g);
/// Shared-memory bytes of the mailboxes at mail_off: the two consumers'
/// posted and taken mbarriers (32), then their boxes and post counts (16).
#define ATTN_GEMM_MAIL_BYTES 48

/// The parts a fused kernel's rows are padded in (attn_hopper_gemm's
/// m_rows): world for reduce-scatter and all-gather, whose ranks' shards
/// are whole tiles each, 1 for all-reduce.
int attn_gemm_shards(const struct attn_hopper_gemm *g);

/// Control words of the workspace (byte offsets in its ctl block) that
/// the GEMM claims from: next tile, next communication task.
#define ATTN_GEMM_CTL_TILE 12
#define ATTN_GEMM_CTL_TASK 16

#endif // ATTN_HOPPER_GEMM_H
