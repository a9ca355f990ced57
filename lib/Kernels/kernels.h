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

#include "lib/IR/attn_body_interval.h"
#include "mlir-c/IR.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

//===-- What a kernel is asked to build -----------------------------------===//
//
// The descriptions the passes fill in (lib/Transforms/lower_tile_to_hopper.c,
// lower_tile_to_hopper_gemm.c, lower_tile_to_mma.c) and the sizes they check
// before asking for a kernel; all of it is compile-time constant.

/// Shared memory one CTA may use on sm_90a: 227 KiB.
#define ATTN_KERNELS_SMEM_LIMIT (227 * 1024)

//===-- The attention problem (attention_pipeline.c, attention_schedule.c) ===//
//
// The Hopper attention kernel (attn_kernels_build_hopper_attention) follows
// FlashAttention-3: a producer warpgroup issues TMA loads of K and V into a
// ring of shared-memory stages, consumer warpgroups run wgmma on them; the
// mma.sync kernel (attn_kernels_build_mma_attention) reads the same
// description.

/// A score modifier of the attention kernels (attn_hopper_kernel::mods).
enum attn_hopper_mod {
  ATTN_HOPPER_MOD_SCALE,
  /// A score function of any form (tile.score_fn's body: softcap, ALiBi,
  /// the gate and users' bodies alike): each FN entry of mods takes the next
  /// of attn_hopper_kernel::score_fns.
  ATTN_HOPPER_MOD_FN,
};

/// A tensor the caller passes (attn_hopper_kernel::args).
enum attn_hopper_arg {
  ATTN_HOPPER_ARG_Q,
  ATTN_HOPPER_ARG_K,
  ATTN_HOPPER_ARG_V,
  ATTN_HOPPER_ARG_OUT,
  /// The row log-sum-exp [B, H, N] f32 the kernel writes beside out
  /// (attn_hopper_kernel::lse), after out in the caller's order.
  ATTN_HOPPER_ARG_LSE,
  ATTN_HOPPER_ARG_CAPTURE, ///< + i: capture i
};

/// Most entries of attn_hopper_kernel::mods, score and mask functions, and
/// captures.
#define ATTN_HOPPER_MAX_MODS 8
#define ATTN_HOPPER_MAX_FNS 4
#define ATTN_HOPPER_MAX_CAPTURES 8
/// The backward's gradients into captured tensors, and the reads of them
/// (tile.capture_grad sites) it adds at.
#define ATTN_HOPPER_MAX_GRADS 4
#define ATTN_HOPPER_MAX_SITES 8

/// A tensor the score and mask functions read (a capture: an argument of
/// the tile kernel besides q, k, v and out, read by memref.load in their
/// bodies: the gate, the segment ids, a user's table). The kernels take it
/// as a pointer parameter where the tile kernel has it
/// (attn_hopper_kernel::args).
struct attn_hopper_capture {
  MlirValue value; ///< the tile kernel's argument (a static memref)
  /// The same tensor as another tile kernel's argument whose bodies the
  /// kernel also evaluates (the backward's dq tile kernel, whose
  /// tile.capture_grad bodies read it); null if none.
  MlirValue alias;
  char name[32];   ///< its tile.arg_names entry: "capture0", "gate", ...
  const char *dtype; ///< "f32", "f16", "bf16", "i32" or "i64"
  int rank;        ///< 1 to 4
  int64_t shape[4];
};

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
  /// The score modifiers between the two products, applied in the order
  /// mods[0 .. nmods) (attn.fused's `mods`; nmods 0: scale alone): the
  /// scale (s = scale s) and score functions (softcap, ALiBi and the gate
  /// among them: attn-tile writes them as bodies).
  int nmods;
  enum attn_hopper_mod mods[ATTN_HOPPER_MAX_MODS];
  /// Score functions of any form, in the order of mods' FN entries: each
  /// the block of a tile.score_fn (^bb0(score f32, b, h, q, kv: index) ...
  /// gpu.yield f32), computed on every score element of the accumulator
  /// fragments with q and kv clamped into the sequences (lib/Kernels/
  /// score_fn.c). Null blocks past nscore_fns.
  int nscore_fns;
  MlirBlock score_fns[ATTN_HOPPER_MAX_FNS];
  /// Masks of any form, and-ed with the affine masks (causal, window, the
  /// end of the keys): each the block of a tile.mask_fn (^bb0(b, h, q, kv:
  /// index) ... gpu.yield i1, false: the key is masked). They mask inside
  /// the key blocks the affine masks' range holds (attn_hopper_key_range),
  /// every block (no block is skipped for them).
  int nmask_fns;
  MlirBlock mask_fns[ATTN_HOPPER_MAX_FNS];
  /// The tensors the bodies read, as the kernels' pointer parameters.
  int ncaptures;
  struct attn_hopper_capture captures[ATTN_HOPPER_MAX_CAPTURES];
  /// The tile kernel's arguments in its order (the program's, out last):
  /// the order of the kernels' first pointer parameters, of their
  /// manifests' params and of their launch programs' inputs, so that a
  /// caller passes the tensors as to the plain kernel. Each an enum
  /// attn_hopper_arg, or ATTN_HOPPER_ARG_CAPTURE + i for captures[i];
  /// nargs 0: q, k, v, out (attn_hopper_arg_at).
  int nargs;
  int args[5 + ATTN_HOPPER_MAX_CAPTURES];
  /// The forward of a backward (attn-grad's unit attribute lse): the kernel
  /// also writes each query row's log-sum-exp, ln sum_j exp(s_ij) of the
  /// final scores (the scale and score functions applied, the masks'
  /// -inf), as the plain path's tile.row_lse does: (m + log2 l) ln 2 from
  /// the softmax's running maximum m (log2 domain) and sum l, +inf for a
  /// row that sees no key. One f32 per row, to the caller's tensor lse
  /// (ATTN_HOPPER_ARG_LSE, [B, H, N]), which follows out.
  bool lse;
  /// The tile kernel's q, k and v arguments: a body may read them too (as
  /// a capture, but passed once, under their role).
  MlirValue inputs[3];
  /// A sliding window besides causal: key k is masked for query q when k <
  /// q - window_left or k > q + window_right (-1: unbounded on that side);
  /// the kernels skip the key blocks wholly outside it
  /// (attn_hopper_key_range). false: none (left and right unread).
  bool window;
  int64_t window_left, window_right;
  bool rope;
  double theta;
  int64_t rotary_dim;
  bool interleaved;
  int64_t rope_offset;    ///< position of q's row 0
  int64_t rope_offset_k;  ///< position of k's row 0
  /// Explicit RoPE positions (attn.rope's positions operand, packed
  /// sequences): row r of batch b of q (k) is at position positions[b, r],
  /// an i32 tensor [batch, seq_q] ([batch, seq_k]) passed as capture
  /// q_pos_capture (k_pos_capture) of captures (a pointer parameter, read
  /// only), instead of at rope_offset + r (rope_offset_k + r). Only the
  /// rotation's angle reads them: the masks stay indexed by row. Every
  /// thread that rotates a row loads its position once, and computes that
  /// row's cos/sin afresh (no recurrence down the rows).
  bool q_positions, k_positions;
  int q_pos_capture, k_pos_capture;
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
  /// registers (struct attn_hopper_gemm's staged, for O).
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
  /// K and V of a stage on barriers of their own (FlashAttention-3's two
  /// pipelines): a stage's K slot refills once the consumers' Q.K has read
  /// it, not after the block's P.V, so that with two stages (head dim 256)
  /// the next K loads a whole block step ahead. Else one pair of barriers
  /// per stage covers both.
  bool kv_split;
  /// The key blocks each query block reads under the affine masks and the
  /// mask functions (attn_hopper_key_table: attn_hopper_query_blocks(k)
  /// entries), or NULL for the affine masks' bounds alone. Both kernels then
  /// read a query block's [first, last) from a table in their module
  /// (@<name>__keys) and compute the mask functions only outside its run
  /// of wholly visible blocks [full_first, full_last).
  const struct attn_key_blocks *key_blocks;
  /// Key-block lists made at run time (attn_hopper_plan_key_lists): the
  /// mask functions read captures (a document's ids, a block map), so no
  /// table made at compile time can tell their blocks. The kernel
  /// @<name>__key_lists (attn_kernels_build_key_lists) evaluates them over
  /// every (query block, key block) within key_blocks' bounds into the
  /// workspace key_lists, and the attention kernel takes it as a pointer
  /// parameter after the caller's tensors: row (bt key_lists_heads + ht)
  /// nq + qb, for bt = b or 0 and ht = h or 0 as the functions read b and h,
  /// holds 1 + key blocks i32: the count n, then n entries 2 kb + full, in
  /// key order, full when the functions hide no key of the block (they are
  /// then not computed there). A query block that sees no key gets one
  /// entry, its first block, not full.
  bool key_lists;
  int64_t key_lists_batch, key_lists_heads; ///< 1, or batch / heads
  /// The functions yield one value over every aligned key_lists_grain x
  /// key_lists_grain box of (q, kv) (attn_mask_program_uniform; a block map
  /// read at q / 64, kv / 64 at 64), so the classification evaluates one
  /// point of each; 1: every element.
  int key_lists_grain;
  /// The rows the kernel's first query block starts before row 0
  /// (attn_hopper_query_shift; 0 for the mma.sync kernel).
  int64_t key_lists_shift;
};

/// The most tiles a persistent kernel schedules (its schedule is a table of
/// 4-byte entries in the kernel's module); larger problems run one CTA per
/// tile.
#define ATTN_HOPPER_MAX_SCHEDULED_TILES (1 << 16)

/// The caller's tensors of k: 4 + k->ncaptures (+ 1 with lse). What the
/// caller passes at position i (i below it): an enum attn_hopper_arg or a
/// capture's ATTN_HOPPER_ARG_CAPTURE + n; and the position of that tensor.
int attn_hopper_nargs(const struct attn_hopper_kernel *k);
int attn_hopper_arg_at(const struct attn_hopper_kernel *k, int i);
int attn_hopper_arg_index(const struct attn_hopper_kernel *k, int arg);

/// Threads of a CTA: one producer warpgroup (TMA and RoPE of K tiles) and
/// k->consumers consumer warpgroups of 64 query rows each.
int attn_hopper_threads(const struct attn_hopper_kernel *k);

/// Whether producer warps 1-3 rotate (K per tile, or each tile's Q), which
/// takes registers from the consumers (hopper_attention.c's table).
bool attn_hopper_producer_rotates(const struct attn_hopper_kernel *k);

/// Ops per element a score function computes at most for
/// attn_hopper_fns_light (besides integer casts and what score_fn.c's
/// forms absorb): ALiBi's body has four (q - kv, its conversion, |.| and
/// one FMA), softcap's two.
#define ATTN_HOPPER_LIGHT_FN_OPS 4

/// Whether k's score and mask functions take no more registers per element
/// than the kernels' softcap and ALiBi took before they were bodies: no
/// mask function, and score functions that read no captured tensor, whose
/// body has one of score_fn.c's forms (the score times a constant, a
/// constant times the result, s +- a u) and at most
/// ATTN_HOPPER_LIGHT_FN_OPS ops per element. True without functions.
bool attn_hopper_fns_light(const struct attn_hopper_kernel *k);

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
/// The key blocks [*first, *last) a query block whose first row is q_row
/// (negative for a causal kernel's shifted first block) reads: all of them,
/// up to the diagonal (causal) or the window's right edge, from the block
/// of the window's left edge; never empty (a query block whose window holds
/// no key reads one block, wholly masked). Both attention kernels bound
/// their key loops so, the persistent schedule prices tiles by it.
/// With k->key_blocks, the table's entry of the query block that starts at
/// q_row.
void attn_hopper_key_range(const struct attn_hopper_kernel *k, int64_t q_row,
                           int64_t *first, int64_t *last);
/// The key blocks of every query block of k (k->key_blocks is not read):
/// the affine masks' bounds, narrowed by what the mask functions' bodies say
/// of each (query block, key block) box (lib/IR/attn_body_interval.h: exact
/// for bodies affine in the indices, such as prefix-LM or a causal mask at
/// another alignment; a body that reads a capture narrows nothing), and in
/// each the run of blocks no mask hides a key of. NULL when k has no mask
/// function, when the bodies narrow nothing and leave no block wholly
/// visible, or when memory runs out; the caller frees it.
/// shift: the rows the kernel's first query block starts before row 0
/// (attn_hopper_query_shift for the Hopper kernel; 0 for the mma.sync
/// kernel, whose blocks start at row 0).
struct attn_key_blocks *attn_hopper_key_table(const struct attn_hopper_kernel *k,
                                              int64_t shift);


//===-- Key-block lists made at run time (key_lists.c) -------------------===//

/// Plans k's run-time key lists (k->key_lists and the sizes beside it) when
/// a mask function reads a capture; shift as attn_hopper_key_table's. k's
/// key_blocks must already hold the bounds the lists are made within
/// (attn_hopper_key_table, else attn_hopper_key_bounds). Returns
/// k->key_lists.
bool attn_hopper_plan_key_lists(struct attn_hopper_kernel *k, int64_t shift);
/// Whether a mask function of k reads a capture (its blocks are then known
/// at run time only).
bool attn_hopper_masks_read_data(const struct attn_hopper_kernel *k);
/// The i32 words of k's key_lists workspace.
int64_t attn_hopper_key_lists_words(const struct attn_hopper_kernel *k);
/// The affine masks' key blocks of every query block of k as a table
/// without full runs (for the lists' bounds where attn_hopper_key_table
/// found nothing to narrow); NULL when memory runs out. The caller frees it.
struct attn_key_blocks *attn_hopper_key_bounds(const struct attn_hopper_kernel *k,
                                               int64_t shift);

//===-- The decode kernel over a KV cache (decode.c) ----------------------===//
//
// attn.fused_decode on the GPU (issue 30): one CTA per (split of the keys,
// K/V head and group of query rows, sequence); the rows_per_cta rows of a
// group are the query heads of the GQA group times the query rows, so the
// keys of a K/V head are read once for all of them. Each lane holds 8
// elements of a key row (16-byte loads; head_dim / 8 lanes a key), each
// warp keys_per_step keys at once and `ATTN_DECODE_KEY_STEPS` steps in
// flight; an online softmax in exp2 form per lane, merged across the lanes
// and the 4 warps at the end. With splits > 1 each CTA writes its rows'
// normalised partial O and log2-sum-exp into the workspace `partials` and
// a combine kernel weighs them (the launch program <name>); with one split
// the kernel is <name> and writes out itself. An append (decode_append.c)
// writes the new tokens' K and V into the caches first, a kernel of the
// same launch program.

/// The score modifiers the decode kernel applies, in the order given.
enum attn_decode_mod { ATTN_DECODE_SCALE, ATTN_DECODE_SOFTCAP, ATTN_DECODE_ALIBI };

/// Threads of a decode CTA (4 warps) and key steps each lane keeps in
/// flight (two 16-byte loads each: K and V).
#define ATTN_DECODE_THREADS 128
#define ATTN_DECODE_KEY_STEPS 4
/// Most query rows one CTA holds: 8 with the tensor-core body (one
/// m16n8k16 tile's n), 4 with the lanes body (q and O: 16 f32 a row in
/// every lane).
#define ATTN_DECODE_MAX_ROWS 8
#define ATTN_DECODE_LANES_MAX_ROWS 4
/// Keys a warp takes per step in the tensor-core body (one m16n8k16 tile).
#define ATTN_DECODE_MMA_KEYS 16

struct attn_decode_kernel {
  const char *name;
  bool bf16; ///< else f16
  int64_t batch, heads, kv_heads, seq_q, head_dim; ///< value dim = head dim
  bool paged;
  int64_t page_size, num_pages, max_pages; ///< paged only
  int64_t max_seq; ///< keys a sequence may hold
  double scale;
  bool causal;
  bool has_window;
  int64_t window_left, window_right; ///< -1: unbounded
  double softcap, alibi_max_bias;    ///< used where mods names them
  int nmods;
  enum attn_decode_mod mods[3];
  bool rope, interleaved;
  double theta;
  int64_t rotary_dim;
  int splits;       ///< CTAs per (K/V head, row group, sequence), >= 1
  int rows_per_cta; ///< 1 .. ATTN_DECODE_MAX_ROWS (the lanes body: 4)
  /// The body of the split kernel: S^T = K q^T and O^T += V^T P^T by
  /// mma.sync m16n8k16, 16 keys a warp step (head dims 64 and 128), or
  /// (false) the lanes body: 8 FMAs and a butterfly per key and row.
  bool mma;
  /// The tensor-core body: the next step's K loaded before this step's
  /// arithmetic (its registers carried by the loop).
  bool kv_prefetch;
  /// The tensor-core body: 2 to 4, K and V copied by cp.async into a ring
  /// of that many steps in shared memory (stages - 1 steps in flight while
  /// one is computed); 0 or 1: loaded into registers.
  int kv_stages;
  /// CTAs an SM is to hold (nvvm.minctasm: ptxas bounds the registers so),
  /// 0 or 1: as many as ptxas's registers allow.
  int ctas_per_sm;
  /// The append (attn.cache_append feeding the decode): append_rows > 0
  /// new keys and values a sequence, written by the kernel @<name>__append
  /// before the split kernel reads the caches; the new keys rotated with
  /// their own RoPE (append_rope ...) at their positions.
  int64_t append_rows;
  bool append_rope, append_interleaved;
  double append_theta;
  int64_t append_rotary_dim;
};

/// Query rows of a K/V head (its query heads times seq_q) and the CTAs
/// they take (groups of rows_per_cta).
int64_t attn_decode_group_rows(const struct attn_decode_kernel *k);
int64_t attn_decode_row_groups(const struct attn_decode_kernel *k);

/// Bytes of the workspace `partials` with splits > 1 (f32 O and lse of
/// every row and split), 0 with one split.
int64_t attn_decode_workspace_bytes(const struct attn_decode_kernel *k);

/// Dynamic shared memory of k's split kernel (the warps' states, and with
/// kv_stages the ring).
int64_t attn_decode_smem_bytes(const struct attn_decode_kernel *k);

/// Whether the decode kernel computes k; otherwise false with the reason
/// in why.
bool attn_decode_supported(const struct attn_decode_kernel *k, char *why,
                           size_t wlen);

/// Whether the decode program of k has a launch program of several
/// kernels (splits > 1, or an append): its kernels are then @<name>__append,
/// @<name>__split and @<name>__combine, those it has.
bool attn_decode_has_program(const struct attn_decode_kernel *k);

/// Builds the decode kernel (and with splits > 1 the combine kernel, with
/// an append the append kernel) of k into gpu_module: @<name> (one split,
/// no append) or those of attn_decode_has_program, each with its
/// attn.launch entry; the caller records the launch program of the second
/// form. False after a diagnostic at loc.
bool attn_kernels_build_decode(MlirOperation gpu_module, MlirLocation loc,
                               const struct attn_decode_kernel *k);

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

//===-- The GEMM and its fused collectives (gemm_geometry.c) --------------===//
//
// A persistent, warp-specialised sm_90a GEMM, C[M,N] = A[M,K] * B[K,N]
// (row-major, 16-bit elements, f32 accumulation, one rounding at the end).
// One producer warpgroup issues TMA loads of A (block_m x 64) and B (64 x
// block_n) into a ring of `stages` shared-memory slots completing on
// mbarriers; two consumer warpgroups of block_m/2 rows each run wgmma
// m64nNk16 from shared memory and write their tile through shared memory and
// the bulk-copy engine (staged), or straight from registers. CTAs walk the
// output tiles in a grouped order (group_m tile rows at a time) so that
// neighbours share A and B in L2. The epilogue may rotate the output (RoPE,
// the `producer` placement of the Rotation Calculus): columns are heads of
// head_dim, row r is position rope_offset + r % seq_len.

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
/// stepped down the rows; with k's explicit positions of K (Q) it takes
/// them as a third parameter (k_positions, q_positions) and computes each
/// row's cos/sin from its own. Only when attn_hopper_rope_k_supported(k). Ops
/// are located at loc named "rope". False after an error diagnostic at loc
/// when an op could not be built; the partial function is then removed.
bool attn_kernels_build_hopper_rope(MlirOperation gpu_module, MlirLocation loc,
                                    const struct attn_hopper_kernel *k, bool q);

//===-- The attention backward (sm_90a; attention_bwd.c) -------------------===//

/// The backward of one attention (issue 29): k describes the forward's
/// problem (name: the backward program's, "<f>__grad"; shapes, element
/// type, scale, causal, RoPE at offsets with rotary_dim == head_dim;
/// nothing else), and the kernels read Q and K rotated (by the RoPE
/// kernels of the pre placement, attn_kernels_build_hopper_rope, into the
/// program's workspaces q_rot and k_rot) when k->rope is set.
/// block_n: key rows per CTA (64 per consumer warpgroup); block_m: query
/// rows per step; stages: the Q/dO/lse/D ring's depth. dq_bulk: how the
/// main kernel adds its dQ tiles into dq_acc: false, a red.global.add.f32
/// per element from the accumulator registers; true, each consumer
/// warpgroup's tile (64 query rows by 64 columns, f32) stored into a
/// shared-memory buffer of its own and added by the bulk-copy engine
/// (cp.reduce.async.bulk .add.f32, a row per thread of its first 64).
///
/// The score modifiers and masks (issue 29), as the tile kernel computes
/// them: k.mods[0 .. k.nmods) the chain applied to the raw score S = Q K^T
/// in order (a SCALE entry multiplies by k.scale, an FN entry is the next of
/// k.score_fns); exp_scale multiplies the chain's result in P = exp(exp_scale
/// s - lse); grad_fn, when not null, is tile.score_fn_grad's body (d chain /
/// d raw score at the raw score), by which dS = P o (dP - D) is multiplied;
/// ds_scale multiplies dQ and dK at the end (the scale of tile.ds). The
/// masks: causal, k.window (the query blocks a key block is visited by are
/// cut to the window) and k.mask_fns, each P = 0 where it hides the key.
/// The bodies read k.captures, which the main kernel takes after its
/// twelve parameters. inputs: the launch program's inputs (attn-tile's
/// backward program's, in its order: q, k, v, the captures, out, lse,
/// dout, dq, dk, dv).
/// The backward's schedule choices (lower-tile-to-hopper's options).
struct attn_hopper_bwd_choices {
  bool dq_bulk; ///< dq-reduce=bulk: dQ added by bulk reduces (else red)
  int dp_early; ///< dp-issue=early (1): dP^T's wgmma issued with S^T's, P
                ///< computed while it runs; late (0): after P; auto (-1):
                ///< early (measured 0.4-1.5% faster on an H200) unless
                ///< the chain has a derivative (its registers: spills)
  int ds_ring;  ///< ds-buffers=2 (1): dS^T in two tiles by step parity,
                ///< no barrier before its store; 1 (0): one tile; auto
                ///< (-1): two at head dim 64 (1.0-1.3% faster there),
                ///< one at 128 (where the ring's addressing spills)
  bool deterministic; ///< deterministic=true: dQ added in key-block order
                      ///< (implies red)
};

struct attn_hopper_bwd {
  struct attn_hopper_kernel k;
  int block_m, block_n, stages;
  bool dq_bulk, dp_early, ds_ring;
  /// dQ's adds ordered: per query block and head a u32 turn after the
  /// rows' lse2 and D in the rows workspace; the warpgroup whose turn it
  /// is (2 (key block - the first that sees the query block) + its index)
  /// adds and passes the turn on, so dq_acc sums in one order every run.
  bool deterministic;
  double exp_scale, ds_scale;
  MlirBlock grad_fn;
  /// Gradients into captured tensors (attn.fused_grad's grads): the f32
  /// buffers, the main kernel's and __pre's parameters after the captures
  /// (__pre zeroes them), and the dq tile kernel's tile.capture_grad sites:
  /// each a body at (raw score, batch, head, query row, key) yielding the
  /// derivative t and the buffer's indices, its scale and its buffer;
  /// buffer[idx] += scale * ds_scale * P (dP - D) t per element.
  int ngrads, nsites;
  struct attn_hopper_grad_buffer {
    char name[32];
    int rank;
    int64_t shape[4];
  } grads[ATTN_HOPPER_MAX_GRADS];
  struct attn_hopper_grad_site {
    MlirBlock body;
    double scale;
    int grad;
  } sites[ATTN_HOPPER_MAX_SITES];
  int ninputs;
  char inputs[ATTN_HOPPER_MAX_CAPTURES + 10][64];
};

/// Query rows padded to whole query blocks: the rows of the f32 workspaces
/// (lse2 and D, dq_acc) the backward kernels read without bounds checks.
int64_t attn_hopper_bwd_rows(const struct attn_hopper_bwd *g);
/// Bytes of the workspaces: rows (lse * log2(e), then D = rowsum(dO o O),
/// f32 per padded query row; deterministic: then a u32 turn per query
/// block of each head), dq_acc (f32 [B, H, rows, d]), dk_acc (f32
/// [B, Hkv, M, d]).
int64_t attn_hopper_bwd_rows_bytes(const struct attn_hopper_bwd *g);
int64_t attn_hopper_bwd_dq_bytes(const struct attn_hopper_bwd *g);
int64_t attn_hopper_bwd_dk_bytes(const struct attn_hopper_bwd *g);
/// Dynamic shared memory of the main kernel.
int64_t attn_hopper_bwd_smem_bytes(const struct attn_hopper_bwd *g);

/// Builds the backward's kernels at the end of gpu_module, each with its
/// attn.launch entry: @<name>__pre(out, dout, lse, rows, dq_acc) (lse and
/// D per row, dq_acc zeroed), @<name>__main(q, k, v, dout, dv, rows,
/// dq_acc, dk_acc, q_map, k_map, v_map, dout_map) (per key block of a K/V
/// head: dK and dV in registers over the query blocks that see it, dQ added
/// into dq_acc by red.global.add.f32 or, with g->dq_bulk, by bulk reduces
/// from shared memory; dv written, dk into dk_acc), and
/// @<name>__dq_out(dq_acc, dq), @<name>__dk_out(dk_acc, dk) (the scale, the
/// inverse rotation of RoPE, the element type). Ops are located at loc
/// named "bwd.*". False after an error diagnostic at loc; what it built but
/// the declarations is then removed.
bool attn_kernels_build_hopper_bwd(MlirOperation gpu_module, MlirLocation loc,
                                   const struct attn_hopper_bwd *g);

/// The mma.sync backward (sm_80 and newer; mma_attention_bwd.c): the
/// same launch as the Hopper backward's, g's block_m 64, block_n 64 or 128
/// and stages 1 or 2, with @<name>__main(q, k, v, dout, dv, rows, dq_acc,
/// dk_acc, <captures>) on mma.sync (one CTA of 2 block_n threads, a warp
/// per 16 keys, per block_n keys of a K/V head; dQ added into dq_acc by
/// red.global.add.f32) in place of the wgmma kernel, and __pre, __dq_out,
/// __dk_out the Hopper backward's (attention_bwd_rows.c). Its dynamic
/// shared memory: (2 block_n + 128 stages) head_dim 2 + 128 block_n +
/// 512 stages bytes.
int64_t attn_kernels_mma_bwd_smem_bytes(const struct attn_hopper_bwd *g);
/// Builds them at the end of gpu_module; ops located at loc, named
/// "mmabwd.*" (the row kernels "bwd.*"). False after an error diagnostic at
/// loc; what it built but the declarations is then removed.
bool attn_kernels_build_mma_bwd(MlirOperation gpu_module, MlirLocation loc,
                                const struct attn_hopper_bwd *g);

//===-- The key-list kernel of masks that read data -----------------------===//

/// Builds `llvm.func @<k->name>__key_lists(<the caller's tensors>,
/// key_lists)` at the end of gpu_module with its attn.launch manifest
/// entry, for a k with key_lists: one CTA per (query block, ht, bt) of the
/// lists evaluates the mask functions over each key block within the
/// bounds of @<k->name>__keys (the attention kernel's table, so it is built
/// after that kernel) at one point per key_lists_grain box, then writes the
/// query block's row of key_lists. Ops are located at loc named
/// "key-lists". False after an error diagnostic at loc; the partial
/// function is then removed.
bool attn_kernels_build_key_lists(MlirOperation gpu_module, MlirLocation loc,
                                  const struct attn_hopper_kernel *k);

//===-- The Hopper GEMM (sm_90a) ------------------------------------------===//

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
