//===- hopper_emit.c - The warp-specialised Hopper attention kernel -------===//
//
// Writes one fused attention kernel for sm_90a as MLIR text in the LLVM and
// NVVM dialects (scf/arith for control flow and scalar math; TMA, mbarrier
// init/arrive, wgmma fence/commit/wait and setmaxnreg as NVVM ops), with
// inline PTX for what the dialects do not spell: wgmma itself (A in
// registers for P.V), the mbarrier wait loop, named barriers. Structure
// (FlashAttention-3 style):
//
//   warpgroup 0 (producer)  thread 0: TMA loads of Q once, then K and V
//                           tiles into a `stages`-deep ring of shared-memory
//                           buffers, each completing on a "full" mbarrier;
//                           warps 1-3: RoPE of each K tile in shared memory
//                           (position recurrence per thread), then "kready";
//                           or, with rope_k_ahead, a team rotating key
//                           blocks from a queue shared by all CTAs into the
//                           workspace k_rot (hopper_rope.c), which thread 0
//                           loads K from once a block is flagged
//   warpgroups 1 .. W       64 query rows each (W = 2, or 3 at head dim 64):
//   (consumers)             RoPE of their Q rows once,
//                           then per key block S = Q.K^T (wgmma, both from
//                           shared memory), mask only on diagonal/tail
//                           blocks, online softmax in exp2 form in registers,
//                           O += P.V (wgmma, P from registers), "empty".
//
// By default the kernel is persistent: one CTA per SM runs a list of tiles
// (query block, head, batch) fixed at compile time (hopper_schedule.c), the
// roles carrying the ring's stage count and the Q barrier's phase from tile to
// tile, so that one tile's last P.V and epilogue overlap the next tile's
// loads; with q-rope=producer, producer warps 1-3 rotate the next Q too.
//
// Shared-memory tiles use the 128-byte swizzle that TMA writes and wgmma
// reads: a tile of R rows and D columns is D/64 regions of R rows x 128 B.
// The instructions themselves are written by hopper_ptx.c; RoPE's math and
// the separate RoPE kernel (split and pre placements) are in hopper_rope.c,
// one key block's mask and online softmax in hopper_softmax.c, and how a
// tile's O is normalised and written in hopper_epilogue.c.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/hopper_emit.h"
#include "lib/Transforms/hopper_launch.h"
#include "lib/Transforms/hopper_ptx.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

// Registers per thread after setmaxnreg, [consumers - 2]: the CTA's 64K
// registers split between the producer warpgroup (more when its warps rotate
// K or Q) and the consumers (FlashAttention-3 gives 3 consumers 160).
static const int PRODUCER_REGS[2] = {56, 56};
static const int PRODUCER_REGS_NO_ROPE[2] = {40, 32};
static const int CONSUMER_REGS[2] = {224, 152};
static const int CONSUMER_REGS_NO_ROPE[2] = {232, 160};

/// How long the TMA thread waits for a key block's flag (rope_k_ahead)
/// before the kernel traps: 10 s, far beyond any launch.
#define AHEAD_WAIT_NS 10000000000LL

struct em {
  struct attn_ptx p; // the text, SSA counter and element type
  const struct attn_hopper_kernel *k;
  int ns, no;     // S and O accumulator registers per thread
  int na;         // O's and, with row_sum_mma, l's 4 (m64n8) after them
  int regions;    // D / 64
  // Shared-memory layout (byte offsets from the 1024-aligned base).
  int64_t q_off, kv_off, tile_bytes, ones_off, bar_off, stash_off;
  int64_t staging_off, pitch; // staged_out: the rows of O, and their stride
  // rope_k_ahead: the team's two K buffers, then its context; end: the
  // layout's end.
  int64_t ahead_off, ahead_ctx_off, end;
};

//===-- Layout ------------------------------------------------------------===//

static bool stashes_rope(const struct attn_hopper_kernel *k);
static bool q_turns(const struct attn_hopper_kernel *k);

/// Bytes of each consumer thread's stash: its two frequencies, then its
/// steps' cos and sin (six f32).
#define STASH_BYTES 24

/// Bytes of the consumers' stash of RoPE constants (stashes_rope).
static int64_t stash_bytes(const struct attn_hopper_kernel *k) {
  return stashes_rope(k) ? STASH_BYTES * 128 * k->consumers : 0;
}

static void layout(struct em *e) {
  const struct attn_hopper_kernel *k = e->k;
  e->q_off = 0;
  e->kv_off = (int64_t)k->block_m * k->head_dim * 2;
  e->tile_bytes = (int64_t)k->block_n * k->head_dim * 2;
  // row_sum_mma's B: one 128-byte-swizzled atom (8 rows of 64) of ones.
  e->ones_off = e->kv_off + 2 * e->tile_bytes * k->stages;
  e->bar_off = e->ones_off + (k->row_sum_mma ? 1024 : 0);
  e->stash_off = e->bar_off + 24 + 24 * k->stages;
  // O's staging rows after the stash.
  e->pitch = attn_ptx_rows_pitch(k->head_dim * 2);
  e->staging_off = (e->stash_off + stash_bytes(k) + 127) / 128 * 128;
  e->end = k->staged_out ? e->staging_off + 64LL * k->consumers * e->pitch
                         : e->stash_off + stash_bytes(k);
  if (k->rope_k_ahead) {
    e->ahead_off = (e->end + 1023) / 1024 * 1024;
    e->ahead_ctx_off = e->ahead_off + 2 * e->tile_bytes;
    e->end = e->ahead_ctx_off + attn_hopper_ahead_ctx_bytes();
  }
}

/// Whether producer warps 1-3 rotate each tile's Q (rope_q_by_producer): in
/// a persistent kernel whose K comes rotated those warps are free, and the
/// rotation of the next tile's Q overlaps the consumers' last P V and
/// epilogue. Otherwise the consumers rotate their rows.
static bool q_by_producer(const struct attn_hopper_kernel *k) {
  return k->rope && !k->rope_k_in_kernel && !k->rope_k_ahead &&
         k->persistent_ctas && k->rope_q_by_producer;
}

bool attn_hopper_producer_rotates(const struct attn_hopper_kernel *k) {
  return k->rope && (k->rope_k_in_kernel || q_by_producer(k));
}

/// Whether the consumers rotate Q stepping cos/sin down their rows (each
/// thread owns a slot of every row it rotates), rather than pair by pair.
static bool q_steps(const struct attn_hopper_kernel *k) {
  return k->rope && !q_by_producer(k) && 128 % attn_hopper_rope_slots(k) == 0;
}

/// Whether each consumer thread keeps those steps' constants for Q (inverse
/// frequencies and the per-step rotations, six f32) in shared memory rather
/// than in registers across the tile loop: with three consumers their 160
/// registers do not hold them besides the block loop's (ptxas spilled).
static bool stashes_rope(const struct attn_hopper_kernel *k) {
  return q_steps(k) && k->consumers == 3;
}

/// Whether those consumers take their first row's cos/sin from the
/// frequencies in turns (attn_hopper_rope_rows_turns, in f32) rather than
/// __nv_sinf and __nv_cosf: with rope_k_ahead, where it measured 1.4%
/// faster at N = 2K and level at 4K (bench/RESULTS.md); with split ptxas
/// spilled 4 bytes for it.
static bool q_turns(const struct attn_hopper_kernel *k) {
  return stashes_rope(k) && k->rope_k_ahead;
}

int attn_hopper_threads(const struct attn_hopper_kernel *k) {
  return 128 * (1 + k->consumers);
}

int64_t attn_hopper_smem_bytes(const struct attn_hopper_kernel *k) {
  struct em e = {.k = k};
  layout(&e);
  // qfull, qempty and qready, then full, kready and empty per stage, the
  // stash, O's staging rows, the ahead team's buffers; plus slack to align
  // the base to 1024 bytes at run time.
  return e.end + 1024;
}

//===-- Producer ----------------------------------------------------------===//

struct ids {
  int smem, sbase, tid, bx, gx, qmap, kmap, vmap, out;
  // rope_k_ahead: the map of the raw k (kmap is k_rot's) and rope_sync
  // (i64); the team's context (i32 shared address) and first key block.
  int kraw_map, sync, ahead_ctx, ahead_first;
  int bar_q, bar_qempty, bar_qready, bar_full, bar_kready,
      bar_empty; // i32 addresses (stage 0)
  // The tile (open_tiles): its first query row, head, batch, K/V head and
  // key blocks; kc = key blocks this CTA loaded before it, qn = tiles before
  // it (the parity of the Q barriers).
  int q_row, h, b, kh, nkb, kc, qn;
};

/// Entry i (i32) of the persistent schedule @<name>__tiles.
static int load_tile(struct em *e, int i) {
  int base = attn_ptx_op(&e->p, "llvm.mlir.addressof @%s__tiles : !llvm.ptr<1>",
                         e->k->name);
  int ptr = attn_ptx_op(&e->p,
                        "llvm.getelementptr %%v%d[%%v%d] : (!llvm.ptr<1>, i32) "
                        "-> !llvm.ptr<1>, i32",
                        base, i);
  return attn_ptx_op(&e->p, "llvm.load %%v%d invariant : !llvm.ptr<1> -> i32",
                     ptr);
}

/// Opens the loop over this CTA's tiles and sets x's tile values (tile t as
/// hopper_schedule.c numbers them). A persistent kernel's CTA bx runs the
/// tiles its list in @<name>__tiles holds; otherwise the CTA's one tile comes
/// from its block index.
static void open_tiles(struct em *e, struct ids *x) {
  const struct attn_hopper_kernel *k = e->k;
  int64_t nq = attn_hopper_query_blocks(k);
  int qb;
  if (!k->persistent_ctas) {
    x->kc = x->qn = attn_ptx_ci32(&e->p, 0);
    // Longest causal query blocks first: block x runs query block gx-1-x.
    qb = attn_ptx_op(&e->p, "arith.subi %%v%d, %%v%d : i32",
                     attn_ptx_addc(&e->p, x->gx, -1), x->bx);
    x->h = attn_ptx_op(&e->p, "nvvm.read.ptx.sreg.ctaid.y : i32");
    x->b = attn_ptx_op(&e->p, "nvvm.read.ptx.sreg.ctaid.z : i32");
  } else {
    int zero = attn_ptx_ci32(&e->p, 0);
    int init[2] = {zero, zero}, arg[2];
    const char *tys[2] = {"i32", "i32"};
    int64_t g[3];
    attn_hopper_grid(k, g);
    int lo = attn_ptx_to_index(&e->p, load_tile(e, x->bx)),
        hi = attn_ptx_to_index(&e->p,
                               load_tile(e, attn_ptx_addc(&e->p, x->bx, 1))),
        st = attn_ptx_cidx(&e->p, 1);
    int it = e->p.next++, res = e->p.next++;
    attn_ptx_open_for(&e->p, res, it, lo, hi, st, 2, init, arg, tys);
    x->kc = arg[0];
    x->qn = arg[1];
    int i = attn_ptx_from_index(&e->p, it);
    int t = load_tile(e, attn_ptx_addc(&e->p, i, g[0] + 1));
    int hb = attn_ptx_divc(&e->p, t, nq);
    qb = attn_ptx_op(&e->p, "arith.subi %%v%d, %%v%d : i32",
                     attn_ptx_ci32(&e->p, nq - 1), attn_ptx_remc(&e->p, t, nq));
    x->h = attn_ptx_remc(&e->p, hb, k->heads);
    x->b = attn_ptx_divc(&e->p, hb, k->heads);
  }
  x->q_row = attn_ptx_mulc(&e->p, qb, k->block_m);
  int64_t shift = attn_hopper_query_shift(k);
  if (shift)
    x->q_row = attn_ptx_addc(&e->p, x->q_row, -shift);
  x->kh = attn_ptx_divc(&e->p, x->h, k->heads / k->kv_heads);
  int64_t blocks = (k->seq_k + k->block_n - 1) / k->block_n;
  x->nkb = attn_ptx_ci32(&e->p, blocks);
  if (k->causal) {
    int last = attn_ptx_addc(&e->p, x->q_row, k->block_m);
    int diag = attn_ptx_op(&e->p, "arith.ceildivui %%v%d, %%v%d : i32", last,
                           attn_ptx_ci32(&e->p, k->block_n));
    x->nkb = attn_ptx_op(&e->p, "arith.minui %%v%d, %%v%d : i32", diag, x->nkb);
  }
}

/// Closes open_tiles' loop: the next tile starts nkb key blocks on.
static void close_tiles(struct em *e, const struct ids *x) {
  if (!e->k->persistent_ctas)
    return;
  attn_ptx_line(&e->p, "scf.yield %%v%d, %%v%d : i32, i32",
                attn_ptx_addi(&e->p, x->kc, x->nkb),
                attn_ptx_addc(&e->p, x->qn, 1));
  attn_ptx_line(&e->p, "}");
}

/// The ring stage and its phase parity of the tile's key block j.
static int stage_of(struct em *e, const struct ids *x, int j, int *phase) {
  int g = attn_ptx_addi(&e->p, x->kc, j);
  int s = attn_ptx_remc(&e->p, g, e->k->stages);
  *phase = attn_ptx_op(&e->p, "arith.andi %%v%d, %%v%d : i32",
                       attn_ptx_divc(&e->p, g, e->k->stages),
                       attn_ptx_ci32(&e->p, 1));
  return s;
}

/// The parity of the tile's phase of the Q barriers.
static int q_parity(struct em *e, const struct ids *x) {
  return attn_ptx_op(&e->p, "arith.andi %%v%d, %%v%d : i32", x->qn,
                     attn_ptx_ci32(&e->p, 1));
}

static int flip(struct em *e, int parity) {
  return attn_ptx_op(&e->p, "arith.xori %%v%d, %%v%d : i32", parity,
                     attn_ptx_ci32(&e->p, 1));
}

static int bar_at(struct em *e, int base, int s) {
  return attn_ptx_addi(&e->p, base, attn_ptx_mulc(&e->p, s, 8));
}

static int tile_k(struct em *e, const struct ids *x, int s) {
  return attn_ptx_addi(&e->p, attn_ptx_addc(&e->p, x->sbase, e->kv_off),
                       attn_ptx_mulc(&e->p, s, 2 * e->tile_bytes));
}

static void producer(struct em *e, const struct ids *tiles_in, int wt) {
  const struct attn_hopper_kernel *k = e->k;
  struct ids tiles0 = *tiles_in;
  const struct ids *tiles = &tiles0;
  if (k->rope_k_ahead) {
    int64_t g[3];
    attn_hopper_grid(k, g);
    tiles0.ahead_first = attn_hopper_ahead_start(
        &e->p, k, tiles0.ahead_ctx, wt, tiles0.sync, tiles0.kraw_map,
        tiles0.kmap, g[0] * g[1] * g[2]);
  }
  int is_tma = attn_ptx_cmpc(&e->p, "eq", wt, 0);
  attn_ptx_line(&e->p, "scf.if %%v%d {", is_tma);
  struct ids t = *tiles, *x = &t;
  open_tiles(e, x);
  // Q once per tile, once the consumers are done with the last one's.
  attn_ptx_mbar_wait(&e->p, x->bar_qempty, flip(e, q_parity(e, x)));
  attn_ptx_mbar_expect_tx(&e->p, x->bar_q,
                          (long long)k->block_m * k->head_dim * 2);
  for (int r = 0; r < e->regions; ++r) {
    int c[4] = {attn_ptx_ci32(&e->p, 64 * r), x->q_row, x->h, x->b};
    attn_ptx_tma_load(&e->p,
                      attn_ptx_addc(&e->p, x->sbase,
                                    e->q_off + (int64_t)r * k->block_m * 128),
                      x->qmap, c, x->bar_q);
  }
  // rope_k_ahead: once a head's key blocks are all rotated (as they are
  // for most tiles), its tiles load them without a wait per block.
  int head_done = k->rope_k_ahead ? attn_hopper_ahead_head_done(
                                        &e->p, k, x->ahead_ctx, x->b, x->kh)
                                  : -1;
  int lo = attn_ptx_cidx(&e->p, 0), hi = attn_ptx_to_index(&e->p, x->nkb),
      st = attn_ptx_cidx(&e->p, 1);
  int it = e->p.next++;
  attn_ptx_line(&e->p, "scf.for %%v%d = %%v%d to %%v%d step %%v%d {", it, lo,
                hi, st);
  int j = attn_ptx_from_index(&e->p, it), ph;
  int s = stage_of(e, x, j, &ph);
  attn_ptx_mbar_wait(&e->p, bar_at(e, x->bar_empty, s), flip(e, ph));
  int full = bar_at(e, x->bar_full, s);
  attn_ptx_mbar_expect_tx(&e->p, full, 2 * e->tile_bytes);
  int kt = tile_k(e, x, s), vt = attn_ptx_addc(&e->p, kt, e->tile_bytes);
  int row = attn_ptx_mulc(&e->p, j, k->block_n);
  if (k->rope_k_ahead) { // the block's rows in k_rot, once flagged
    attn_ptx_line(&e->p, "scf.if %%v%d {",
                  attn_ptx_op(&e->p, "arith.xori %%v%d, %%v%d : i1", head_done,
                              attn_ptx_op(&e->p, "arith.constant true")));
    attn_hopper_ahead_wait(&e->p, k, x->ahead_ctx, x->b, x->kh, j,
                           AHEAD_WAIT_NS);
    attn_ptx_line(&e->p, "}");
  }
  for (int r = 0; r < e->regions; ++r) {
    int c[4] = {attn_ptx_ci32(&e->p, 64 * r), row, x->kh, x->b};
    attn_ptx_tma_load(&e->p,
                      attn_ptx_addc(&e->p, kt, (int64_t)r * k->block_n * 128),
                      x->kmap, c, full);
    attn_ptx_tma_load(&e->p,
                      attn_ptx_addc(&e->p, vt, (int64_t)r * k->block_n * 128),
                      x->vmap, c, full);
  }
  attn_ptx_line(&e->p, "}");
  close_tiles(e, x);
  if (k->rope_k_ahead) {
    // The team in the TMA branch's else, so that its constants are not
    // kept (in registers) across the TMA thread's loop.
    attn_ptx_line(&e->p, "} else {");
    attn_ptx_line(&e->p, "scf.if %%v%d {",
                  attn_ptx_cmpc(&e->p, "uge", wt, 32));
    attn_hopper_rope_ahead(&e->p, k, attn_ptx_addc(&e->p, wt, -32),
                           x->smem, x->sbase, e->ahead_off,
                           x->ahead_ctx, x->ahead_first);
    attn_ptx_line(&e->p, "}");
    attn_ptx_line(&e->p, "}");
    return;
  }
  attn_ptx_line(&e->p, "}");
  if (!attn_hopper_producer_rotates(k))
    return;
  int is_rot = attn_ptx_cmpc(&e->p, "uge", wt, 32);
  attn_ptx_line(&e->p, "scf.if %%v%d {", is_rot);
  struct attn_hopper_rope_rows r;
  attn_hopper_rope_rows_setup(&e->p, e->k, attn_ptx_addc(&e->p, wt, -32), 96,
                              &r);
  t = *tiles;
  open_tiles(e, x);
  if (q_by_producer(e->k)) {
    // The tile's Q, all block_m rows, then "qready".
    attn_ptx_mbar_wait(&e->p, x->bar_q, q_parity(e, x));
    attn_hopper_rope_rows(&e->p, e->k, x->smem,
                          attn_ptx_ci32(&e->p, (int)e->q_off), k->block_m,
                          attn_ptx_ci32(&e->p, 0), k->block_m,
                          attn_ptx_addc(&e->p, x->q_row, k->rope_offset), &r);
    attn_ptx_fence_proxy_async(&e->p, false);
    attn_ptx_mbar_arrive(&e->p, x->bar_qready);
    close_tiles(e, x);
    attn_ptx_line(&e->p, "}");
    return;
  }
  int lo2 = attn_ptx_cidx(&e->p, 0), hi2 = attn_ptx_to_index(&e->p, x->nkb),
      st2 = attn_ptx_cidx(&e->p, 1);
  int it2 = e->p.next++;
  attn_ptx_line(&e->p, "scf.for %%v%d = %%v%d to %%v%d step %%v%d {", it2, lo2,
                hi2, st2);
  int j2 = attn_ptx_from_index(&e->p, it2), ph2;
  int s2 = stage_of(e, x, j2, &ph2);
  attn_ptx_mbar_wait(&e->p, bar_at(e, x->bar_full, s2), ph2);
  int base = attn_ptx_addc(&e->p, attn_ptx_mulc(&e->p, s2, 2 * e->tile_bytes),
                           e->kv_off);
  int pos0 = attn_ptx_addc(&e->p, attn_ptx_mulc(&e->p, j2, k->block_n),
                           k->rope_offset_k);
  attn_hopper_rope_rows(&e->p, e->k, x->smem, base, k->block_n,
                        attn_ptx_ci32(&e->p, 0), k->block_n, pos0, &r);
  attn_ptx_fence_proxy_async(&e->p, false);
  attn_ptx_mbar_arrive(&e->p, bar_at(e, x->bar_kready, s2));
  attn_ptx_line(&e->p, "}");
  close_tiles(e, x);
  attn_ptx_line(&e->p, "}");
}

//===-- Consumers ---------------------------------------------------------===//

/// The per-consumer values every block step needs (sm: what the softmax
/// needs, hopper_softmax.c).
struct cons {
  int cw, desc_q, nz;
  struct attn_hopper_softmax sm;
  int sched_me, sched_other; // named barrier ids (i32)
};

/// S = Q K_j^T for the stage's K tile (issued and committed, not waited).
/// With fence false the caller has issued wgmma.fence already.
static void issue_qk(struct em *e, const struct cons *c, int kt, int *sv,
                     bool fence) {
  const struct attn_hopper_kernel *k = e->k;
  int desc_k = attn_ptx_make_desc(&e->p, kt, 16, 1024);
  // The first wgmma ignores its accumulators (scale-d = 0): feed it undefined
  // values, so nothing writes those registers inside the wgmma pipeline.
  int undef = attn_ptx_op(&e->p, "llvm.mlir.undef : f32");
  for (int i = 0; i < e->ns; ++i)
    sv[i] = undef;
  if (fence)
    attn_ptx_wgmma_fence(&e->p);
  for (int kk = 0; kk < k->head_dim / 16; ++kk) {
    long long region_q = (long long)(kk / 4) * k->block_m * 128;
    long long region_k = (long long)(kk / 4) * k->block_n * 128;
    attn_ptx_wgmma_ss(
        &e->p, sv, e->ns,
        attn_ptx_desc_add(&e->p, c->desc_q, region_q + (kk % 4) * 32),
        attn_ptx_desc_add(&e->p, desc_k, region_k + (kk % 4) * 32),
        attn_ptx_ci32(&e->p, kk ? 1 : 0), false);
  }
  attn_ptx_wgmma_commit(&e->p);
}

/// O += P V for the stage's V tile (issued and committed, not waited), and
/// with row_sum_mma l += P times ones (in ov[no..no+4), every column the
/// row's sum). The caller has fenced O and P (fence_acc, reg_fence) and
/// issued wgmma.fence.
static void issue_pv(struct em *e, const struct ids *x, int vt, int *ov,
                     int *a) {
  const struct attn_hopper_kernel *k = e->k;
  int desc_v = attn_ptx_make_desc(&e->p, vt, (long long)k->block_n * 128, 1024);
  for (int kk = 0; kk < k->block_n / 16; ++kk)
    attn_ptx_wgmma_rs(
        &e->p, ov, e->no, &a[4 * kk],
        attn_ptx_desc_add(&e->p, desc_v, (long long)kk * 16 * 128), true);
  if (k->row_sum_mma) {
    // Every 16 keys read the same 8 x 16 ones, K-major.
    int desc_1 = attn_ptx_make_desc(
        &e->p, attn_ptx_addc(&e->p, x->sbase, e->ones_off), 16, 1024);
    for (int kk = 0; kk < k->block_n / 16; ++kk)
      attn_ptx_wgmma_rs(&e->p, ov + e->no, 4, &a[4 * kk], desc_1, false);
  }
  attn_ptx_wgmma_commit(&e->p);
}

/// reg_fence of the accumulators the P V wgmma writes (O, and l with
/// row_sum_mma).
static void fence_acc(struct em *e, int *ov) {
  attn_ptx_reg_fence(&e->p, ov, e->no, "f32", "f");
  if (e->na > e->no)
    attn_ptx_reg_fence(&e->p, ov + e->no, e->na - e->no, "f32", "f");
}

/// Packs probabilities to 16-bit pairs, the A registers of the P V wgmma.
/// Done only once the previous P V has completed, so that the new registers
/// never overwrite ones an in-flight wgmma still reads.
static void pack_p(struct em *e, const int *p, int *a) {
  for (int i = 0; i < e->ns / 2; ++i)
    a[i] = attn_ptx_pack2(&e->p, p[2 * i], p[2 * i + 1]);
}

/// Stores (store) or loads this consumer thread's RoPE constants of r in its
/// STASH_BYTES of the stash (see stashes_rope): its inverse frequencies, or
/// with q_turns its frequencies in turns rounded to f32 (turns32_sincos in
/// hopper_rope.c bounds what that costs the angle), then its steps.
static void stash_rope(struct em *e, const struct ids *x, int wg, int wt,
                       struct attn_hopper_rope_rows *r, bool store) {
  bool turns = q_turns(e->k);
  int *v[6] = {turns ? &r->turns0 : &r->f0, turns ? &r->turns1 : &r->f1,
               &r->step_c0, &r->step_s0, &r->step_c1, &r->step_s1};
  int slot = attn_ptx_addi(&e->p, attn_ptx_mulc(&e->p, wg, 128), wt);
  int base = attn_ptx_addc(&e->p, attn_ptx_mulc(&e->p, slot, STASH_BYTES),
                           e->stash_off - 128 * STASH_BYTES);
  for (int i = 0; i < 6; ++i) {
    int ptr = attn_ptx_smem_ptr(&e->p, x->smem,
                                attn_ptx_addc(&e->p, base, 4 * i));
    if (store) {
      int w = turns && i < 2 ? attn_ptx_op(&e->p,
                                           "arith.truncf %%v%d : f64 to f32",
                                           *v[i])
                             : *v[i];
      attn_ptx_line(&e->p, "llvm.store %%v%d, %%v%d : f32, !llvm.ptr<3>", w,
                    ptr);
    } else {
      *v[i] = attn_ptx_op(&e->p, "llvm.load %%v%d : !llvm.ptr<3> -> f32", ptr);
    }
  }
  r->turns32 = turns && !store;
}

/// What the epilogue (hopper_epilogue.c) needs of consumer c's values.
static struct attn_hopper_out out_of(struct em *e, const struct ids *x,
                                     const struct cons *c, int wt) {
  return (struct attn_hopper_out){.out = x->out,
                                  .b = x->b,
                                  .h = x->h,
                                  .wg_row = c->sm.wg_row,
                                  .row0 = c->sm.row0,
                                  .lr = c->sm.lr,
                                  .cw = c->cw,
                                  .wt = wt,
                                  .sbase = x->sbase,
                                  .zero = c->sm.zero,
                                  .staging_off = e->staging_off,
                                  .pitch = e->pitch};
}

/// The end of a tile: the last block's P V (from the loop's results res),
/// l summed across the quad, O normalised and written.
static void finish_tile(struct em *e, const struct ids *x,
                        const struct cons *c, int res, int wt) {
  const struct attn_hopper_kernel *k = e->k;
  int na = e->na, np = e->ns / 2;
  int ov[256], al[2], pa[128], lf[2];
  for (int i = 0; i < na; ++i)
    ov[i] =
        attn_ptx_op(&e->p, "arith.addf %%v%d#%d, %%v%d : f32", res, i, c->nz);
  for (int r = 0; r < 2; ++r) {
    lf[r] = attn_ptx_op(&e->p, "arith.addf %%v%d#%d, %%v%d : f32", res,
                        na + 2 + r, c->nz);
    al[r] = attn_ptx_op(&e->p, "arith.addf %%v%d#%d, %%v%d : f32", res,
                        na + 4 + r, c->nz);
  }
  for (int i = 0; i < np; ++i)
    pa[i] = attn_ptx_op(&e->p, "arith.addi %%v%d#%d, %%v%d : i32", res,
                        na + 6 + i, attn_ptx_ci32(&e->p, 0));
  int last = attn_ptx_addc(&e->p, x->nkb, -1), phl;
  int sl = stage_of(e, x, last, &phl);
  attn_hopper_rescale(&e->p, k, ov, e->na, al);
  fence_acc(e, ov);
  attn_ptx_reg_fence(&e->p, pa, np, "i32", "r");
  int vl = attn_ptx_addc(&e->p, tile_k(e, x, sl), e->tile_bytes);
  attn_ptx_asm_r(&e->p, "bar.sync $0, 256;", c->sched_me);
  attn_ptx_wgmma_fence(&e->p);
  issue_pv(e, x, vl, ov, pa);
  attn_ptx_asm_r(&e->p, "bar.arrive $0, 256;", c->sched_other);
  attn_ptx_wgmma_wait(&e->p, 0);
  fence_acc(e, ov);
  attn_ptx_mbar_arrive(&e->p, bar_at(e, x->bar_empty, sl));
  if (k->row_sum_mma) { // whole rows, in columns 0 (row r0) and 2 (r0 + 8)
    lf[0] = ov[e->no];
    lf[1] = ov[e->no + 2];
  }

  struct attn_hopper_out o = out_of(e, x, c, wt);
  attn_hopper_emit_out(&e->p, k, &o, ov, e->no, lf);
}

/// Consumer warpgroups, FlashAttention-3 schedule: in step j each issues
/// S_j = Q K_j^T and O += P_{j-1} V_{j-1} back to back, then lets the next
/// warpgroup issue its pair (ping-pong on named barriers, round a ring when
/// there are three) and computes the softmax of S_j while its GEMMs and the
/// others' run. They keep taking turns across the tiles of a persistent
/// kernel.
static void consumer(struct em *e, const struct ids *tiles, int wg, int wt) {
  const struct attn_hopper_kernel *k = e->k;
  int ns = e->ns, na = e->na, np = ns / 2;
  struct cons c;
  c.cw = attn_ptx_addc(&e->p, wg, -1);
  int warp = attn_ptx_divc(&e->p, wt, 32), lane = attn_ptx_remc(&e->p, wt, 32);
  int lq = attn_ptx_divc(&e->p, lane, 4);
  c.sm.lr = attn_ptx_remc(&e->p, lane, 4);
  int wrow = attn_ptx_addi(&e->p, attn_ptx_mulc(&e->p, warp, 16),
                           lq); // row in the warpgroup
  // Named barriers: 0 the CTA's, 1 .. W each consumer's own (RoPE of Q),
  // W + 1 + cw the turn of consumer cw, which hands it to cw + 1 (mod W).
  int W = k->consumers;
  c.sched_me = attn_ptx_addc(&e->p, c.cw, W + 1);
  c.sched_other = attn_ptx_addc(
      &e->p, attn_ptx_remc(&e->p, attn_ptx_addc(&e->p, c.cw, 1), W), W + 1);
  // Each thread owns two RoPE pairs of Q and steps cos/sin down its rows.
  bool steps = q_steps(k);
  struct attn_hopper_rope_rows rq;
  if (steps) {
    attn_hopper_rope_rows_setup(&e->p, e->k, wt, 128, &rq);
    if (q_turns(k))
      attn_hopper_rope_rows_turns(&e->p, &rq);
    if (stashes_rope(k))
      stash_rope(e, tiles, wg, wt, &rq, true);
  }
  // The first consumer goes first: the last opens its barrier.
  int last_cw = attn_ptx_cmpc(&e->p, "eq", c.cw, W - 1);
  attn_ptx_line(&e->p, "scf.if %%v%d {", last_cw);
  attn_ptx_asm_r(&e->p, "bar.arrive $0, 256;", attn_ptx_ci32(&e->p, W + 1));
  attn_ptx_line(&e->p, "}");

  struct ids t = *tiles, *x = &t;
  open_tiles(e, x);
  c.sm.wg_row = attn_ptx_addi(&e->p, x->q_row, attn_ptx_mulc(&e->p, c.cw, 64));
  // The query row of register pairs 0-1.
  c.sm.row0 = attn_ptx_addi(&e->p, c.sm.wg_row, wrow);
  attn_ptx_mbar_wait(&e->p, q_by_producer(k) ? x->bar_qready : x->bar_q,
                     q_parity(e, x));
  if (k->rope && !q_by_producer(k)) {
    if (steps) {
      if (stashes_rope(k))
        stash_rope(e, x, wg, wt, &rq, false);
      int first = attn_ptx_mulc(&e->p, c.cw, 64);
      attn_hopper_rope_rows(
          &e->p, e->k, x->smem, attn_ptx_ci32(&e->p, (int)e->q_off), k->block_m,
          first, 64, attn_ptx_addc(&e->p, c.sm.wg_row, k->rope_offset), &rq);
      attn_ptx_fence_proxy_async(&e->p, false);
    } else {
      attn_hopper_rope_q_pairs(&e->p, e->k, x->smem, wt, x->q_row, c.cw);
    }
    attn_ptx_asm_r(&e->p, "bar.sync $0, 128;", attn_ptx_addc(&e->p, c.cw, 1));
  }
  int qaddr = attn_ptx_addi(&e->p, attn_ptx_addc(&e->p, x->sbase, e->q_off),
                            attn_ptx_mulc(&e->p, c.cw, 64 * 128));
  c.desc_q = attn_ptx_make_desc(&e->p, qaddr, 16, 1024);
  c.sm.scale_log2 =
      attn_ptx_cf32(&e->p, (float)(k->scale * 1.4426950408889634));
  c.sm.ninf = attn_ptx_cf32(&e->p, -INFINITY);
  c.sm.zero = attn_ptx_cf32(&e->p, 0.0f);
  c.nz = attn_ptx_cf32(&e->p,
                       -0.0f); // x + -0.0 == x: names one result of a region op
  int ready = k->rope && k->rope_k_in_kernel ? x->bar_kready : x->bar_full;

  // Step 0: S_0 and its softmax; O starts at zero.
  int sv[256], a[128], pf[256], m[2], l[2], alpha[2];
  int m0[2] = {c.sm.ninf, c.sm.ninf}, l0[2] = {c.sm.zero, c.sm.zero};
  {
    int z = attn_ptx_ci32(&e->p, 0), ph;
    int s = stage_of(e, x, z, &ph);
    attn_ptx_mbar_wait(&e->p, bar_at(e, ready, s), ph);
    attn_ptx_asm_r(&e->p, "bar.sync $0, 256;", c.sched_me);
    issue_qk(e, &c, tile_k(e, x, s), sv, true);
    attn_ptx_asm_r(&e->p, "bar.arrive $0, 256;", c.sched_other);
    attn_ptx_wgmma_wait(&e->p, 0);
    attn_ptx_reg_fence(&e->p, sv, ns, "f32", "f");
    attn_hopper_mask(&e->p, k, &c.sm, z, sv);
    attn_hopper_softmax(&e->p, k, &c.sm, sv, m0, l0, m, l, alpha, pf);
    pack_p(e, pf, a);
  }

  // Steps 1 .. nkb-1, carrying O, m, l, alpha and P of the previous block.
  int lo = attn_ptx_cidx(&e->p, 1), hi = attn_ptx_to_index(&e->p, x->nkb),
      st = attn_ptx_cidx(&e->p, 1);
  int it = e->p.next++, res = e->p.next++;
  int ncarry = na + 6 + np;
  int init[512], arg[512];
  const char *tys[512];
  int n = 0;
  for (int i = 0; i < na; ++i, ++n) {
    init[n] = c.sm.zero;
    tys[n] = "f32";
  }
  for (int r = 0; r < 2; ++r, ++n) {
    init[n] = m[r];
    tys[n] = "f32";
  }
  for (int r = 0; r < 2; ++r, ++n) {
    init[n] = l[r];
    tys[n] = "f32";
  }
  for (int r = 0; r < 2; ++r, ++n) {
    init[n] = alpha[r];
    tys[n] = "f32";
  }
  for (int i = 0; i < np; ++i, ++n) {
    init[n] = a[i];
    tys[n] = "i32";
  }
  attn_ptx_open_for(&e->p, res, it, lo, hi, st, ncarry, init, arg, tys);
  {
    int ov[256], pa[128], mi[2], li[2], al[2];
    memcpy(ov, arg, sizeof(int) * (size_t)na);
    mi[0] = arg[na];
    mi[1] = arg[na + 1];
    li[0] = arg[na + 2];
    li[1] = arg[na + 3];
    al[0] = arg[na + 4];
    al[1] = arg[na + 5];
    memcpy(pa, arg + na + 6, sizeof(int) * (size_t)np);
    int j = attn_ptx_from_index(&e->p, it), ph, php;
    int s = stage_of(e, x, j, &ph);
    int sp = stage_of(e, x, attn_ptx_addc(&e->p, j, -1), &php);
    // Registers the GEMMs read are written before the wgmma pipeline starts.
    attn_hopper_rescale(&e->p, k, ov, e->na, al);
    fence_acc(e, ov);
    attn_ptx_reg_fence(&e->p, pa, np, "i32", "r");
    int kt = tile_k(e, x, s),
        vt = attn_ptx_addc(&e->p, tile_k(e, x, sp), e->tile_bytes);
    attn_ptx_mbar_wait(&e->p, bar_at(e, ready, s), ph);
    attn_ptx_asm_r(&e->p, "bar.sync $0, 256;", c.sched_me);
    attn_ptx_wgmma_fence(&e->p);
    issue_qk(e, &c, kt, sv, false);
    issue_pv(e, x, vt, ov, pa);
    attn_ptx_asm_r(&e->p, "bar.arrive $0, 256;", c.sched_other);
    attn_ptx_wgmma_wait(&e->p, 1);
    attn_ptx_reg_fence(&e->p, sv, ns, "f32", "f");
    attn_hopper_mask(&e->p, k, &c.sm, j, sv);
    int mo[2], lo2[2], an[2], pn[128], pf2[256];
    attn_hopper_softmax(&e->p, k, &c.sm, sv, mi, li, mo, lo2, an, pf2);
    // The last block's P V runs under this block's softmax (else ptxas
    // waits for it first): after the row sums, or the last exponential when
    // the tensor cores sum.
    if (k->pv_wait_late)
      attn_ptx_wgmma_wait_after(&e->p, k->row_sum_mma ? pf2[ns - 1] : lo2[1]);
    else
      attn_ptx_wgmma_wait(&e->p, 0);
    fence_acc(e, ov);
    attn_ptx_reg_fence(&e->p, pf2, ns, "f32", "f");
    pack_p(e, pf2, pn);
    attn_ptx_mbar_arrive(&e->p, bar_at(e, x->bar_empty, sp));
    int out[512];
    int nn = 0;
    for (int i = 0; i < na; ++i)
      out[nn++] = ov[i];
    out[nn++] = mo[0];
    out[nn++] = mo[1];
    out[nn++] = lo2[0];
    out[nn++] = lo2[1];
    out[nn++] = an[0];
    out[nn++] = an[1];
    for (int i = 0; i < np; ++i)
      out[nn++] = pn[i];
    attn_ptx_yield_list(&e->p, "scf.yield", out, nn, tys);
  }
  attn_ptx_line(&e->p, "}");
  // Every S of the tile is done: the producer may load the next tile's Q.
  attn_ptx_mbar_arrive(&e->p, x->bar_qempty);

  finish_tile(e, x, &c, res, wt);
  close_tiles(e, x);
  if (k->staged_out) {
    // The last tile's rows land before the kernel ends.
    struct attn_hopper_out o = out_of(e, x, &c, wt);
    struct attn_ptx_rows r;
    attn_hopper_out_rows(&e->p, &o, &r);
    attn_ptx_rows_drain(&e->p, &r, ATTN_PTX_DRAIN_LANDED, false);
  }
  // The last consumer's last arrive has no partner: the first takes it.
  int first = attn_ptx_cmpc(&e->p, "eq", c.cw, 0);
  attn_ptx_line(&e->p, "scf.if %%v%d {", first);
  attn_ptx_asm_r(&e->p, "bar.sync $0, 256;", attn_ptx_ci32(&e->p, W + 1));
  attn_ptx_line(&e->p, "}");
}

//===-- The kernel --------------------------------------------------------===//

void attn_hopper_emit_aliases(struct attn_strbuf *b,
                              const struct attn_hopper_kernel *k) {
  int sizes[4] = {k->block_n / 2, (int)k->head_dim / 2,
                  k->row_sum_mma ? 4 : 0, k->block_n / 4};
  // f32 accumulators (S, O, l of row_sum_mma; fences of them) and i32 P
  // registers.
  int done[8], nd = 0;
  for (int t = 0; t < 3; ++t) {
    int n = sizes[t];
    bool seen = !n;
    for (int i = 0; i < nd; ++i)
      seen |= done[i] == n;
    if (seen)
      continue;
    done[nd++] = n;
    attn_strbuf_printf(b, "!acc_f32%d = !llvm.struct<(", n);
    for (int i = 0; i < n; ++i)
      attn_strbuf_printf(b, "%sf32", i ? ", " : "");
    attn_strbuf_printf(b, ")>\n");
  }
  attn_strbuf_printf(b, "!acc_i32%d = !llvm.struct<(", sizes[3]);
  for (int i = 0; i < sizes[3]; ++i)
    attn_strbuf_printf(b, "%si32", i ? ", " : "");
  attn_strbuf_printf(b, ")>\n");
}

static void emit_launch(struct attn_strbuf *b,
                        const struct attn_hopper_kernel *k,
                        const char *attention) {
  const char *ty = k->bf16 ? "bf16" : "f16";
  int64_t q[4] = {k->batch, k->heads, k->seq_q, k->head_dim};
  int64_t kv[4] = {k->batch, k->kv_heads, k->seq_k, k->head_dim};
  int64_t grid[3];
  attn_hopper_grid(k, grid);
  attn_hopper_emit_launch_open(b, k, "hopper-wgmma", grid,
                               attn_hopper_threads(k),
                               attn_hopper_smem_bytes(k), 0, 16);
  attn_strbuf_printf(b, ", ");
  if (k->rope_k_ahead) {
    attn_hopper_emit_param(b, "k_rot", ty, 4, kv, 16);
    int64_t sync[1] = {attn_hopper_ahead_sync_bytes(k) / 4};
    attn_strbuf_printf(b, ", ");
    attn_hopper_emit_param(b, "rope_sync", "u32", 1, sync, 8);
    attn_strbuf_printf(b, ", ");
  }
  // Tensor map dims run innermost first: d, N, heads, batch.
  int64_t qd[4] = {q[3], q[2], q[1], q[0]};
  int64_t kvd[4] = {kv[3], kv[2], kv[1], kv[0]};
  attn_hopper_emit_map(b, "q_map", "q", ty, qd, k->block_m);
  attn_strbuf_printf(b, ", ");
  attn_hopper_emit_map(b, "k_map", k->rope_k_ahead ? "k_rot" : "k", ty, kvd,
                       k->block_n);
  attn_strbuf_printf(b, ", ");
  attn_hopper_emit_map(b, "v_map", "v", ty, kvd, k->block_n);
  if (k->rope_k_ahead) {
    attn_strbuf_printf(b, ", ");
    attn_hopper_emit_map(b, "k_raw_map", "k", ty, kvd, k->block_n);
  }
  attn_hopper_emit_launch_close(b, attention);
}

bool attn_hopper_emit_kernel(struct attn_strbuf *b,
                             const struct attn_hopper_kernel *k,
                             const char *attention_attr) {
  struct em e = {.k = k};
  if (k->persistent_ctas && !attn_hopper_emit_schedule(b, k))
    return false;
  attn_ptx_init(&e.p, b, k->bf16);
  e.ns = k->block_n / 2;
  e.no = (int)k->head_dim / 2;
  e.na = e.no + (k->row_sum_mma ? 4 : 0);
  e.regions = (int)k->head_dim / 64;
  layout(&e);

  attn_strbuf_printf(b,
                     "llvm.func @%s(%%q: !llvm.ptr, %%k: !llvm.ptr, %%v: "
                     "!llvm.ptr, %%out: !llvm.ptr",
                     k->name);
  if (k->rope_k_ahead)
    attn_strbuf_printf(b, ", %%k_rot: !llvm.ptr, %%rope_sync: !llvm.ptr");
  static const char *maps[4] = {"q_map", "k_map", "v_map", "k_raw_map"};
  for (int i = 0; i < (k->rope_k_ahead ? 4 : 3); ++i)
    attn_strbuf_printf(b,
                       ", %%%s: !llvm.ptr {llvm.align = 64 : i64, llvm.byval "
                       "= !llvm.array<128 x i8>, nvvm.grid_constant}",
                       maps[i]);
  attn_strbuf_printf(b,
                     ") attributes {nvvm.kernel, nvvm.maxntid = array<i32: "
                     "%d, 1, 1>, nvvm.minctasm = 1 : i32, ",
                     attn_hopper_threads(k));
  emit_launch(b, k, attention_attr);
  attn_strbuf_printf(b, "} {\n");

  struct ids x = {0};
  x.tid = attn_ptx_op(&e.p, "nvvm.read.ptx.sreg.tid.x : i32");
  x.bx = attn_ptx_op(&e.p, "nvvm.read.ptx.sreg.ctaid.x : i32");
  x.gx = attn_ptx_op(&e.p, "nvvm.read.ptx.sreg.nctaid.x : i32");
  // Dynamic shared memory, its base rounded up to 1024 bytes for swizzling.
  int raw = attn_ptx_op(&e.p, "llvm.mlir.addressof @attn_smem : !llvm.ptr<3>");
  int raw_i =
      attn_ptx_op(&e.p, "llvm.ptrtoint %%v%d : !llvm.ptr<3> to i32", raw);
  int pad = attn_ptx_op(&e.p, "arith.subi %%v%d, %%v%d : i32",
                        attn_ptx_op(&e.p, "arith.andi %%v%d, %%v%d : i32",
                                    attn_ptx_addc(&e.p, raw_i, 1023),
                                    attn_ptx_ci32(&e.p, ~1023)),
                        raw_i);
  x.smem = attn_ptx_smem_ptr(&e.p, raw, pad);
  x.sbase = attn_ptx_addi(&e.p, raw_i, pad);
  x.qmap = attn_ptx_op(&e.p, "llvm.ptrtoint %%q_map : !llvm.ptr to i64");
  x.kmap = attn_ptx_op(&e.p, "llvm.ptrtoint %%k_map : !llvm.ptr to i64");
  x.vmap = attn_ptx_op(&e.p, "llvm.ptrtoint %%v_map : !llvm.ptr to i64");
  if (k->rope_k_ahead) {
    x.kraw_map =
        attn_ptx_op(&e.p, "llvm.ptrtoint %%k_raw_map : !llvm.ptr to i64");
    x.sync = attn_ptx_op(&e.p, "llvm.ptrtoint %%rope_sync : !llvm.ptr to i64");
    x.ahead_ctx = attn_ptx_addc(&e.p, x.sbase, e.ahead_ctx_off);
  }
  x.out = attn_ptx_op(
      &e.p, "llvm.getelementptr %%out[0] : (!llvm.ptr) -> !llvm.ptr, i8");
  int bars = attn_ptx_addc(&e.p, x.sbase, e.bar_off);
  x.bar_q = bars;
  x.bar_qempty = attn_ptx_addc(&e.p, bars, 8);
  x.bar_qready = attn_ptx_addc(&e.p, bars, 16);
  x.bar_full = attn_ptx_addc(&e.p, bars, 24);
  x.bar_kready = attn_ptx_addc(&e.p, bars, 24 + 8 * k->stages);
  x.bar_empty = attn_ptx_addc(&e.p, bars, 24 + 16 * k->stages);

  int first = attn_ptx_cmpc(&e.p, "eq", x.tid, 0);
  attn_ptx_line(&e.p, "scf.if %%v%d {", first);
  attn_ptx_mbar_init(&e.p, x.bar_q, 1);
  attn_ptx_mbar_init(&e.p, x.bar_qempty, 128 * k->consumers);
  attn_ptx_mbar_init(&e.p, x.bar_qready, 96);
  for (int s = 0; s < k->stages; ++s) {
    attn_ptx_mbar_init(&e.p, attn_ptx_addc(&e.p, x.bar_full, 8 * s), 1);
    attn_ptx_mbar_init(&e.p, attn_ptx_addc(&e.p, x.bar_kready, 8 * s), 96);
    attn_ptx_mbar_init(&e.p, attn_ptx_addc(&e.p, x.bar_empty, 8 * s),
                       128 * k->consumers);
  }
  if (k->rope_k_ahead)
    attn_hopper_ahead_init(&e.p, x.ahead_ctx);
  attn_ptx_fence_mbar_init(&e.p);
  attn_ptx_line(&e.p, "}");
  if (k->row_sum_mma) {
    // The ones tile: a word of two 16-bit 1.0s from each of 256 threads,
    // then visible to wgmma (the async proxy) after the barrier.
    int writer = attn_ptx_cmpc(&e.p, "ult", x.tid, 256);
    attn_ptx_line(&e.p, "scf.if %%v%d {", writer);
    int ptr = attn_ptx_smem_ptr(
        &e.p, x.smem,
        attn_ptx_addc(&e.p, attn_ptx_mulc(&e.p, x.tid, 4), e.ones_off));
    attn_ptx_line(&e.p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr<3>",
                  attn_ptx_ci32(&e.p, k->bf16 ? 0x3F803F80 : 0x3C003C00), ptr);
    attn_ptx_fence_proxy_async(&e.p, false);
    attn_ptx_line(&e.p, "}");
  }
  attn_ptx_asm0(&e.p, "bar.sync 0;");

  int wg = attn_ptx_divc(&e.p, x.tid, 128),
      wt = attn_ptx_remc(&e.p, x.tid, 128);
  int is_producer = attn_ptx_cmpc(&e.p, "eq", wg, 0);
  attn_ptx_line(&e.p, "scf.if %%v%d {", is_producer);
  bool rotators = attn_hopper_producer_rotates(k);
  int w = k->consumers - 2;
  if (k->rope_k_ahead)
    attn_hopper_ahead_setup(&e.p, k, wt, x.ahead_ctx);
  attn_ptx_setmaxnreg(&e.p, false,
                      rotators ? PRODUCER_REGS[w] : PRODUCER_REGS_NO_ROPE[w]);
  producer(&e, &x, wt);
  attn_ptx_line(&e.p, "} else {");
  attn_ptx_setmaxnreg(&e.p, true,
                      rotators ? CONSUMER_REGS[w] : CONSUMER_REGS_NO_ROPE[w]);
  consumer(&e, &x, wg, wt);
  attn_ptx_line(&e.p, "}");
  attn_ptx_line(&e.p, "llvm.return");
  attn_strbuf_printf(b, "}\n");
  return true;
}
