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
// hopper_rope.c writes the RoPE kernel of the split and pre placements.
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
  /// (attn_hopper_emit_rope) before it, once per K row (split).
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

/// The split and pre placements: a kernel `@<name>__rope_k(x, x_rot)` (or
/// `__rope_q` when q is true) rotating every row of K (Q) once, 16-byte
/// loads and stores, cos/sin stepped down the rows. Supported when the
/// rotary dim is the head dim (see attn_hopper_rope_k_supported).
bool attn_hopper_rope_k_supported(const struct attn_hopper_kernel *k);
void attn_hopper_emit_rope(struct attn_strbuf *b,
                           const struct attn_hopper_kernel *k, bool q);

//===-- RoPE in shared memory, inside the attention kernel (hopper_rope.c) ===//

/// One thread's part of rotating rows of a swizzled shared-memory tile: it
/// owns two adjacent RoPE pairs ("a slot") and rows g, g + groups, ...;
/// cos/sin advance by a rotation per row step, so a tile costs two sincos
/// per thread. All fields are SSA ids (i32 or f32) but groups.
struct attn_hopper_rope_rows {
  int slot_c1, slot_c2; // first columns of the slot's two words
  int g;                // first row (within the rows rotated)
  int groups;           // rows advance by this many per step (a constant)
  int f0, f1;           // inverse frequencies of the two pairs
  int step_c0, step_s0, step_c1, step_s1;
  /// -1 (what attn_hopper_rope_rows_setup sets): the words are addressed
  /// through the shared-memory pointer; else the i32 shared address of that
  /// base, and they are loaded and stored with 32-bit addresses
  /// (by inline PTX), which take fewer registers.
  int sbase32;
  /// -1 (what attn_hopper_rope_rows_setup sets): the first row's cos/sin
  /// by sincos of f32 angles pos * f0, pos * f1; else the frequencies in
  /// turns per position, and the MUFU's sin/cos of the angle's fraction of
  /// a turn (fewer registers and instructions).
  int turns0, turns1;
  /// false (what attn_hopper_rope_rows_setup sets): turns0 and turns1 are
  /// f64 (the ahead team's); true: f32 (the consumers' with ahead, whose
  /// product with the position is split exactly into two f32 by an FMA).
  bool turns32;
};

/// Slots of a row: rotary_dim / 4.
int attn_hopper_rope_slots(const struct attn_hopper_kernel *k);

/// Thread rt (i32) of nthreads owns slot rt % slots and rows rt / slots + i *
/// (nthreads / slots); nthreads must be a multiple of the slots.
void attn_hopper_rope_rows_setup(struct attn_ptx *p,
                                 const struct attn_hopper_kernel *k, int rt,
                                 int nthreads, struct attn_hopper_rope_rows *r);
/// Sets r's turns0 and turns1 (f64) from its inverse frequencies: the first
/// row's cos/sin then come from the angle's fraction of a turn (a multiply,
/// a rounding, sin.approx and cos.approx) instead of __nv_sinf and
/// __nv_cosf (a range reduction each, about 20 instructions on the fast
/// path). A caller that keeps them as f32 sets turns32 where it loads them.
void attn_hopper_rope_rows_turns(struct attn_ptx *p,
                                 struct attn_hopper_rope_rows *r);

/// Rotates, in shared memory, a slot's two 32-bit words at pa and pb
/// (!llvm.ptr<3>): pair 0 by (c0, s0), pair 1 by (c1, s1). Interleaved, each
/// word is one pair; rotate-half, pa holds both pairs' x1 and pb their x2.
void attn_hopper_rope_rotate_words(struct attn_ptx *p,
                                   const struct attn_hopper_kernel *k, int pa,
                                   int pb, int c0, int s0, int c1, int s1);

/// Ends a loop down the rows whose iteration arguments are the two pairs'
/// cos/sin (c0, s0, c1, s1): yields them advanced by the step's rotation
/// (sc0, ss0, sc1, ss1) and closes the loop.
void attn_hopper_rope_step_rows(struct attn_ptx *p, int c0, int s0, int c1,
                                int s1, int sc0, int ss0, int sc1, int ss1);

/// Rotates rows [first, first + nrows) of a swizzled tile of tile_rows rows
/// at tile_base (i32 offsets from the shared-memory base smem); row `first`
/// has position pos_first.
void attn_hopper_rope_rows(struct attn_ptx *p,
                           const struct attn_hopper_kernel *k, int smem,
                           int tile_base, int tile_rows, int first, int nrows,
                           int pos_first,
                           const struct attn_hopper_rope_rows *r);

/// A consumer warpgroup (thread wt of 128, warpgroup cw) rotates its 64 Q
/// rows of the Q tile at shared-memory offset 0, one pair per item, for
/// rotary dims whose slots do not divide 128; then fences for the async
/// proxy.
void attn_hopper_rope_q_pairs(struct attn_ptx *p,
                              const struct attn_hopper_kernel *k, int smem,
                              int wt, int q_row, int cw);

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

/// The ahead placement's context: CTX bytes of shared memory (8-aligned)
/// holding the team's two mbarriers, its ticket slots and what the team's
/// leader and the TMA thread read now and then (the producer warpgroup has
/// too few registers to keep it).
int64_t attn_hopper_ahead_ctx_bytes(void);
/// One thread: initialises the context's mbarriers (before the CTA's
/// barrier).
void attn_hopper_ahead_init(struct attn_ptx *p, int ctx);
/// All producer threads (wt 0 .. 127): thread 32, the team's leader, takes
/// the CTA's first ticket and fills the context (rope_sync, the maps of k
/// and k_rot: i64 addresses); then named barrier 8. Returns the first
/// ticket less this launch's first (i32): the team's first key block, if
/// below attn_hopper_ahead_blocks. ctas: the launch's CTAs.
int attn_hopper_ahead_start(struct attn_ptx *p,
                            const struct attn_hopper_kernel *k, int ctx,
                            int wt, int sync, int raw_map, int rot_map,
                            int64_t ctas);
/// Bytes of the workspace rope_sync: the ticket counter (u64), a flag (u32)
/// per key block, and a counter (u64) per (batch, K head) of its blocks
/// done, which grows by its blocks per launch.
int64_t attn_hopper_ahead_sync_bytes(const struct attn_hopper_kernel *k);
/// The TMA thread, at a tile's start: whether every key block of batch b,
/// K head kh is done (its counter read once, with acquire order; then the
/// fence for its TMA): if so the tile's blocks need no wait (i1).
int attn_hopper_ahead_head_done(struct attn_ptx *p,
                                const struct attn_hopper_kernel *k, int ctx,
                                int b, int kh);
/// The TMA thread: waits (trapping after timeout_ns) until key block j
/// (i32) of batch b and K head kh is flagged done, then fences so that its
/// TMA reads the rotated rows.
void attn_hopper_ahead_wait(struct attn_ptx *p,
                            const struct attn_hopper_kernel *k, int ctx,
                            int b, int kh, int j, long long timeout_ns);
/// All producer threads (wt: i32), before the producer warpgroup gives up
/// its registers: the team's threads (wt 32 .. 127) compute their rotation
/// constants, whose f64 and sincos math needs more than the 32 registers
/// the warpgroup keeps with three consumers, and stash them in the context.
void attn_hopper_ahead_setup(struct attn_ptx *p,
                             const struct attn_hopper_kernel *k, int wt,
                             int ctx);
/// The team: producer warps 1-3 (rt = 0 .. 95; rt 0 is the leader that
/// takes the tickets and issues the copies), from key block `first`, with
/// the constants attn_hopper_ahead_setup stashed.
/// Rotates key blocks until the queue is empty, double-buffered in the two
/// 1024-aligned buffers of block_n * head_dim * 2 bytes at buf_off from the
/// shared-memory base (smem as a pointer, sbase as an i32 address): TMA of
/// the raw block into one while the team rotates the other, TMA out to
/// k_rot, and the block's flag released once its copy has landed. Named
/// barrier 9.
void attn_hopper_rope_ahead(struct attn_ptx *p,
                            const struct attn_hopper_kernel *k, int rt,
                            int smem, int sbase, int64_t buf_off, int ctx,
                            int first);

/// inv_freq(pair) = theta^(-2 pair/rotary_dim) for pair index pair (i32),
/// in f32.
int attn_hopper_rope_inv_freq(struct attn_ptx *p,
                              const struct attn_hopper_kernel *k, int pair);

/// The two columns of RoPE pair `pair` (i32): rotate-half (p, p + r/2) or
/// interleaved (2p, 2p + 1).
void attn_hopper_rope_pair_cols(struct attn_ptx *p,
                                const struct attn_hopper_kernel *k, int pair,
                                int *c1, int *c2);

#endif // ATTN_HOPPER_EMIT_H
