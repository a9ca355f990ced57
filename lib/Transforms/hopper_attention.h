//===- hopper_attention.h - State the Hopper attention kernel's roles share
//===//
//
// The attention kernel's text is written by role: hopper_emit.c lays out
// shared memory, writes the producer warpgroup (TMA loads, RoPE of K or Q,
// the ahead team) and assembles the kernel; hopper_consumer.c writes the
// consumer warpgroups (Q.K^T, online softmax, P.V, the tile's end). This is
// what both need: the emitter's state, the kernel's shared values and the
// walk over a CTA's tiles and the K/V ring. Internal to lib/Transforms.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_HOPPER_ATTENTION_H
#define ATTN_HOPPER_ATTENTION_H

#include "lib/Transforms/hopper_emit.h"
#include "lib/Transforms/hopper_ptx.h"

#include <stdbool.h>
#include <stdint.h>

/// Bytes of each consumer thread's stash of RoPE constants
/// (attn_hopper_stashes_rope): its two frequencies, then its steps' cos and
/// sin (six f32).
#define ATTN_HOPPER_STASH_BYTES 24

/// The emitter's state.
struct attn_hopper_em {
  struct attn_ptx p; // the text, SSA counter and element type
  const struct attn_hopper_kernel *k;
  int ns, no;  // S and O accumulator registers per thread
  int na;      // O's and, with row_sum_mma, l's 4 (m64n8) after them
  int regions; // D / 64
  // Shared-memory layout (byte offsets from the 1024-aligned base).
  int64_t q_off, kv_off, tile_bytes, ones_off, bar_off, stash_off;
  int64_t staging_off, pitch; // staged_out: the rows of O, and their stride
  // rope_k_ahead: the team's two K buffers, then its context; end: the
  // layout's end.
  int64_t ahead_off, ahead_ctx_off, end;
};

/// The kernel's values every role reads (SSA ids), and the current tile's.
struct attn_hopper_ids {
  int smem, sbase, tid, bx, gx, qmap, kmap, vmap, out;
  // rope_k_ahead: the map of the raw k (kmap is k_rot's) and rope_sync
  // (i64); the team's context (i32 shared address) and first key block.
  int kraw_map, sync, ahead_ctx, ahead_first;
  int bar_q, bar_qempty, bar_qready, bar_full, bar_kready,
      bar_empty; // i32 addresses (stage 0)
  // The tile (attn_hopper_open_tiles): its first query row, head, batch, K/V
  // head and key blocks; kc = key blocks this CTA loaded before it, qn =
  // tiles before it (the parity of the Q barriers).
  int q_row, h, b, kh, nkb, kc, qn;
};

/// Whether producer warps 1-3 rotate each tile's Q (rope_q_by_producer): in
/// a persistent kernel whose K comes rotated those warps are free, and the
/// rotation of the next tile's Q overlaps the consumers' last P V and
/// epilogue. Otherwise the consumers rotate their rows.
bool attn_hopper_q_by_producer(const struct attn_hopper_kernel *k);
/// Whether the consumers rotate Q stepping cos/sin down their rows (each
/// thread owns a slot of every row it rotates), rather than pair by pair.
bool attn_hopper_q_steps(const struct attn_hopper_kernel *k);
/// Whether each consumer thread keeps those steps' constants for Q (inverse
/// frequencies and the per-step rotations, six f32) in shared memory rather
/// than in registers across the tile loop: with three consumers their 160
/// registers do not hold them besides the block loop's (ptxas spilled).
bool attn_hopper_stashes_rope(const struct attn_hopper_kernel *k);

/// Opens the loop over this CTA's tiles and sets x's tile values (tile t as
/// hopper_schedule.c numbers them). A persistent kernel's CTA bx runs the
/// tiles its list in @<name>__tiles holds; otherwise the CTA's one tile comes
/// from its block index.
void attn_hopper_open_tiles(struct attn_hopper_em *e,
                            struct attn_hopper_ids *x);
/// Closes attn_hopper_open_tiles' loop: the next tile starts nkb key blocks
/// on.
void attn_hopper_close_tiles(struct attn_hopper_em *e,
                             const struct attn_hopper_ids *x);
/// The ring stage (i32) and its phase parity of the tile's key block j.
int attn_hopper_stage_of(struct attn_hopper_em *e,
                         const struct attn_hopper_ids *x, int j, int *phase);
/// The parity of the tile's phase of the Q barriers.
int attn_hopper_q_parity(struct attn_hopper_em *e,
                         const struct attn_hopper_ids *x);
/// The address of stage s's mbarrier in the array at base.
int attn_hopper_bar_at(struct attn_hopper_em *e, int base, int s);
/// The shared address of stage s's K tile (its V tile follows).
int attn_hopper_tile_k(struct attn_hopper_em *e,
                       const struct attn_hopper_ids *x, int s);

/// Consumer warpgroup wg (1 .. consumers; wt its thread) over the CTA's
/// tiles (hopper_consumer.c).
void attn_hopper_consumer(struct attn_hopper_em *e,
                          const struct attn_hopper_ids *tiles, int wg, int wt);

#endif
