//===- hopper_emit.h - The Hopper attention kernel's description ---------===//
//
// Internal to lib/Transforms and lib/Kernels: lower_tile_to_hopper.c decides
// what to build (struct attn_hopper_kernel) and lib/Kernels builds it as
// LLVM/NVVM-dialect IR (attn_kernels_build_hopper_attention, kernels.h):
// mbarrier init/arrive, TMA loads, wgmma fence/commit/wait, setmaxnreg and
// the proxy fences are NVVM ops; wgmma itself, the mbarrier wait loop and
// the named barriers are still inline PTX. MLIR's NVVM target and LLVM
// NVPTX compile it. This header keeps the description and the sizes the
// pass checks (defined in lib/Kernels: attention_pipeline.c,
// attention_schedule.c).
// lib/Kernels/rope_kernel.c builds the RoPE kernel of the split and pre
// placements.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_HOPPER_EMIT_H
#define ATTN_HOPPER_EMIT_H

#include "lib/IR/attn_context.h"

#include <stdbool.h>
#include <stdint.h>

struct attn_ptx;

/// Everything the kernel depends on; all of it is compile-time constant.
struct attn_hopper_kernel {
  const char *name;
  bool bf16;              ///< element type: bf16 (true) or f16
  int64_t batch, heads, kv_heads, seq_q, seq_k, head_dim;
  int block_m, block_n;   ///< 64 * consumers, and 64/128
  /// Consumer warpgroups of 64 query rows each: 2, or 3 at head dim 64
  /// (FlashAttention-3's 192-row tiles). The CTA has one producer warpgroup
  /// more (attn_hopper_threads).
  int consumers;
  int stages;             ///< K/V shared-memory pipeline depth
  bool causal;
  double scale;
  bool rope;
  double theta;
  int64_t rotary_dim;
  bool interleaved;
  int64_t rope_offset;    ///< position of q's row 0
  int64_t rope_offset_k;  ///< position of k's row 0
  /// RoPE of K: in this kernel per tile (fused), or by a separate kernel
  /// (attn_kernels_build_hopper_rope) before it, once per K row (split).
  bool rope_k_in_kernel;
  /// RoPE of K once per K row, by this kernel (ahead): producer warps 1-3 of
  /// every CTA take key blocks from a queue in the workspace rope_sync,
  /// rotate them (TMA from k into shared memory and back out to the
  /// workspace k_rot) and flag each done; the TMA thread waits for a block's
  /// flag before it loads it from k_rot. The rotation of later heads thus
  /// runs under the attention of earlier ones.
  bool rope_k_ahead;
  /// 0: one CTA per (query block, head, batch). Otherwise a persistent
  /// kernel: min(tiles, persistent_ctas) CTAs loop over the tiles (longest
  /// query blocks of each head first), so that one tile's last P V and
  /// epilogue overlap the loads of the next.
  int64_t persistent_ctas;
  /// What a tile costs the persistent schedule beyond its key blocks, in key
  /// blocks.
  int tile_overhead;
  /// In a persistent kernel with RoPE whose K comes rotated: producer warps
  /// 1-3 rotate each tile's Q while the consumers finish the previous tile
  /// (else the consumers rotate their rows).
  bool rope_q_by_producer;
  /// The staged epilogue: each consumer warpgroup writes its 64 rows of O
  /// into shared memory and hands them, a row per thread, to the bulk-copy
  /// engine (cp.async.bulk) instead of storing 4-byte words straight from
  /// registers (hopper_gemm.h's staged, for O).
  bool staged_out;
  /// FlashAttention-4's conditional rescaling: a row's running maximum moves
  /// only when a block's exceeds it by more than 2^8 (P then stays below
  /// 256), so that O and l are rescaled rarely, and a warp skips the rescale
  /// when none of its rows moved.
  bool lazy_rescale;
  /// The row sums l by the tensor cores: each P.V also multiplies P by a
  /// 64x8 tile of ones in shared memory (wgmma m64n8), whose accumulators
  /// hold l whole, instead of the consumer adding its P values one by one.
  bool row_sum_mma;
  /// The wait for the previous block's P.V after this block's softmax, so
  /// that the softmax runs under it (ptxas would otherwise wait first).
  bool pv_wait_late;
};

/// The most tiles a persistent kernel schedules (its schedule is a table of
/// 4-byte entries in the kernel's module); larger problems run one CTA per
/// tile.
#define ATTN_HOPPER_MAX_SCHEDULED_TILES (1 << 16)

/// Threads of a CTA: one producer warpgroup (TMA and RoPE of K tiles) and
/// k->consumers consumer warpgroups of 64 query rows each.
int attn_hopper_threads(const struct attn_hopper_kernel *k);

/// Whether producer warps 1-3 rotate (K per tile, or each tile's Q), which
/// takes registers from the consumers (hopper_attention.c's table).
bool attn_hopper_producer_rotates(const struct attn_hopper_kernel *k);

/// Bytes of dynamic shared memory the kernel needs.
int64_t attn_hopper_smem_bytes(const struct attn_hopper_kernel *k);

//===-- The grid and the persistent schedule (attention_schedule.c) ------===//

/// Query blocks, tiles (query blocks x heads x batch) and the launch grid:
/// (query blocks, heads, batch), or (CTAs, 1, 1) for a persistent kernel.
int64_t attn_hopper_query_blocks(const struct attn_hopper_kernel *k);
/// Key blocks of block_n keys of one (batch, K head): ceil(seq_k / block_n).
int64_t attn_hopper_key_blocks(const struct attn_hopper_kernel *k);
int64_t attn_hopper_tiles(const struct attn_hopper_kernel *k);
/// How far the query blocks of a causal kernel are shifted up so that the
/// last one ends at the last query row: query block qb covers rows qb *
/// block_m - shift and on. The shift is the whole warpgroups (64 rows) of
/// the part of a block that sticks out, so the rows a partial block wastes
/// fall in the first block (whose few key blocks the queries before row 0
/// read) instead of the last (which reads every key block); warpgroups
/// whose rows all lie before row 0 read their Q from outside the tensor
/// (TMA fills it with zeros) and store nothing. 0 when not causal.
int64_t attn_hopper_query_shift(const struct attn_hopper_kernel *k);
void attn_hopper_grid(const struct attn_hopper_kernel *k, int64_t grid[3]);

//===-- RoPE's sizes (lib/Kernels/rope_*.c) -------------------------------===//
//
// The RoPE of the split and pre placements is a kernel of its own
// (attn_kernels_build_hopper_rope, lib/Kernels/kernels.h); the rotation in
// shared memory inside the attention kernel and the ahead placement's team
// are built in lib/Kernels too.

/// Whether the split and pre placements' RoPE kernel supports k: the rotary
/// dim is the head dim, and the 16-byte units of a row divide its 128
/// threads.
bool attn_hopper_rope_k_supported(const struct attn_hopper_kernel *k);

/// Slots of a row: rotary_dim / 4 (a thread rotating rows of a tile in
/// shared memory owns a slot, two adjacent pairs, of each of its rows).
int attn_hopper_rope_slots(const struct attn_hopper_kernel *k);

/// The ahead placement (attn_hopper_kernel::rope_k_ahead). Its workspace
/// rope_sync holds a u64 ticket counter, then one u32 flag per key block of
/// each (batch, K head), block b of head h of batch z at z * kv_heads *
/// blocks + h * blocks + b (attn_hopper_ahead_blocks in all), then a u64
/// count of done blocks per (batch, K head). Every launch takes exactly
/// blocks + CTAs tickets (each CTA's team takes tickets until one is past
/// the end), so launch e (0, 1, ...) takes tickets from e * (blocks + CTAs)
/// on, sets each flag to e + 1 (mod 2^32; waits compare for equality, so
/// the wrap is harmless) and brings each count to (e + 1) times the head's
/// blocks (u64): the zero-filled workspace is never reset.
int64_t attn_hopper_ahead_blocks(const struct attn_hopper_kernel *k);

/// The ahead placement's context: bytes of shared memory (8-aligned)
/// holding the team's two mbarriers, its ticket slots, what the team's
/// leader and the TMA thread read now and then (the producer warpgroup has
/// too few registers to keep it) and each team thread's rotation constants.
int64_t attn_hopper_ahead_ctx_bytes(void);

/// Bytes of the workspace rope_sync: the ticket counter (u64), a flag (u32)
/// per key block, and a counter (u64) per (batch, K head) of its blocks
/// done, which grows by its blocks per launch.
int64_t attn_hopper_ahead_sync_bytes(const struct attn_hopper_kernel *k);

#endif // ATTN_HOPPER_EMIT_H
