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
// This file lays out shared memory, writes the producer and assembles the
// kernel; the consumers are in hopper_consumer.c (the state both share in
// hopper_attention.h). The instructions themselves are written by
// hopper_ptx.c; RoPE's math and the separate RoPE kernel (split and pre
// placements) are in hopper_rope.c, one key block's mask and online softmax
// in hopper_softmax.c, and how a tile's O is normalised and written in
// hopper_epilogue.c.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/hopper_attention.h"
#include "lib/Transforms/hopper_launch.h"

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

//===-- Layout ------------------------------------------------------------===//

/// Bytes of the consumers' stash of RoPE constants (attn_hopper_stashes_rope).
static int64_t stash_bytes(const struct attn_hopper_kernel *k) {
  return attn_hopper_stashes_rope(k)
             ? ATTN_HOPPER_STASH_BYTES * 128 * k->consumers
             : 0;
}

static void layout(struct attn_hopper_em *e) {
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

bool attn_hopper_q_by_producer(const struct attn_hopper_kernel *k) {
  return k->rope && !k->rope_k_in_kernel && !k->rope_k_ahead &&
         k->persistent_ctas && k->rope_q_by_producer;
}

bool attn_hopper_producer_rotates(const struct attn_hopper_kernel *k) {
  return k->rope && (k->rope_k_in_kernel || attn_hopper_q_by_producer(k));
}

bool attn_hopper_q_steps(const struct attn_hopper_kernel *k) {
  return k->rope && !attn_hopper_q_by_producer(k) &&
         128 % attn_hopper_rope_slots(k) == 0;
}

bool attn_hopper_stashes_rope(const struct attn_hopper_kernel *k) {
  return attn_hopper_q_steps(k) && k->consumers == 3;
}

int attn_hopper_threads(const struct attn_hopper_kernel *k) {
  return 128 * (1 + k->consumers);
}

int64_t attn_hopper_smem_bytes(const struct attn_hopper_kernel *k) {
  struct attn_hopper_em e = {.k = k};
  layout(&e);
  // qfull, qempty and qready, then full, kready and empty per stage, the
  // stash, O's staging rows, the ahead team's buffers; plus slack to align
  // the base to 1024 bytes at run time.
  return e.end + 1024;
}

//===-- Producer ----------------------------------------------------------===//

/// Entry i (i32) of the persistent schedule @<name>__tiles.
static int load_tile(struct attn_hopper_em *e, int i) {
  int base = attn_ptx_op(&e->p, "llvm.mlir.addressof @%s__tiles : !llvm.ptr<1>",
                         e->k->name);
  int ptr = attn_ptx_op(&e->p,
                        "llvm.getelementptr %%v%d[%%v%d] : (!llvm.ptr<1>, i32) "
                        "-> !llvm.ptr<1>, i32",
                        base, i);
  return attn_ptx_op(&e->p, "llvm.load %%v%d invariant : !llvm.ptr<1> -> i32",
                     ptr);
}

void attn_hopper_open_tiles(struct attn_hopper_em *e,
                            struct attn_hopper_ids *x) {
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
  int64_t blocks = attn_hopper_key_blocks(k);
  x->nkb = attn_ptx_ci32(&e->p, blocks);
  if (k->causal) {
    int last = attn_ptx_addc(&e->p, x->q_row, k->block_m);
    int diag = attn_ptx_op(&e->p, "arith.ceildivui %%v%d, %%v%d : i32", last,
                           attn_ptx_ci32(&e->p, k->block_n));
    x->nkb = attn_ptx_op(&e->p, "arith.minui %%v%d, %%v%d : i32", diag, x->nkb);
  }
}

void attn_hopper_close_tiles(struct attn_hopper_em *e,
                             const struct attn_hopper_ids *x) {
  if (!e->k->persistent_ctas)
    return;
  attn_ptx_line(&e->p, "scf.yield %%v%d, %%v%d : i32, i32",
                attn_ptx_addi(&e->p, x->kc, x->nkb),
                attn_ptx_addc(&e->p, x->qn, 1));
  attn_ptx_line(&e->p, "}");
}

int attn_hopper_stage_of(struct attn_hopper_em *e,
                         const struct attn_hopper_ids *x, int j, int *phase) {
  int g = attn_ptx_addi(&e->p, x->kc, j);
  int s = attn_ptx_remc(&e->p, g, e->k->stages);
  *phase = attn_ptx_op(&e->p, "arith.andi %%v%d, %%v%d : i32",
                       attn_ptx_divc(&e->p, g, e->k->stages),
                       attn_ptx_ci32(&e->p, 1));
  return s;
}

int attn_hopper_q_parity(struct attn_hopper_em *e,
                         const struct attn_hopper_ids *x) {
  return attn_ptx_op(&e->p, "arith.andi %%v%d, %%v%d : i32", x->qn,
                     attn_ptx_ci32(&e->p, 1));
}

static int flip(struct attn_hopper_em *e, int parity) {
  return attn_ptx_op(&e->p, "arith.xori %%v%d, %%v%d : i32", parity,
                     attn_ptx_ci32(&e->p, 1));
}

int attn_hopper_bar_at(struct attn_hopper_em *e, int base, int s) {
  return attn_ptx_addi(&e->p, base, attn_ptx_mulc(&e->p, s, 8));
}

int attn_hopper_tile_k(struct attn_hopper_em *e,
                       const struct attn_hopper_ids *x, int s) {
  return attn_ptx_addi(&e->p, attn_ptx_addc(&e->p, x->sbase, e->kv_off),
                       attn_ptx_mulc(&e->p, s, 2 * e->tile_bytes));
}

static void producer(struct attn_hopper_em *e,
                     const struct attn_hopper_ids *tiles_in, int wt) {
  const struct attn_hopper_kernel *k = e->k;
  struct attn_hopper_ids tiles0 = *tiles_in;
  const struct attn_hopper_ids *tiles = &tiles0;
  if (k->rope_k_ahead) {
    int64_t g[3];
    attn_hopper_grid(k, g);
    tiles0.ahead_first = attn_hopper_ahead_start(
        &e->p, k, tiles0.ahead_ctx, wt, tiles0.sync, tiles0.kraw_map,
        tiles0.kmap, g[0] * g[1] * g[2]);
  }
  int is_tma = attn_ptx_cmpc(&e->p, "eq", wt, 0);
  attn_ptx_line(&e->p, "scf.if %%v%d {", is_tma);
  struct attn_hopper_ids t = *tiles, *x = &t;
  attn_hopper_open_tiles(e, x);
  // Q once per tile, once the consumers are done with the last one's.
  attn_ptx_mbar_wait(&e->p, x->bar_qempty, flip(e, attn_hopper_q_parity(e, x)));
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
  int head_done =
      k->rope_k_ahead
          ? attn_hopper_ahead_head_done(&e->p, k, x->ahead_ctx, x->b, x->kh)
          : -1;
  int lo = attn_ptx_cidx(&e->p, 0), hi = attn_ptx_to_index(&e->p, x->nkb),
      st = attn_ptx_cidx(&e->p, 1);
  int it = e->p.next++;
  attn_ptx_line(&e->p, "scf.for %%v%d = %%v%d to %%v%d step %%v%d {", it, lo,
                hi, st);
  int j = attn_ptx_from_index(&e->p, it), ph;
  int s = attn_hopper_stage_of(e, x, j, &ph);
  attn_ptx_mbar_wait(&e->p, attn_hopper_bar_at(e, x->bar_empty, s),
                     flip(e, ph));
  int full = attn_hopper_bar_at(e, x->bar_full, s);
  attn_ptx_mbar_expect_tx(&e->p, full, 2 * e->tile_bytes);
  int kt = attn_hopper_tile_k(e, x, s),
      vt = attn_ptx_addc(&e->p, kt, e->tile_bytes);
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
  attn_hopper_close_tiles(e, x);
  if (k->rope_k_ahead) {
    // The team in the TMA branch's else, so that its constants are not
    // kept (in registers) across the TMA thread's loop.
    attn_ptx_line(&e->p, "} else {");
    attn_ptx_line(&e->p, "scf.if %%v%d {", attn_ptx_cmpc(&e->p, "uge", wt, 32));
    attn_hopper_rope_ahead(&e->p, k, attn_ptx_addc(&e->p, wt, -32), x->smem,
                           x->sbase, e->ahead_off, x->ahead_ctx,
                           x->ahead_first);
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
  attn_hopper_open_tiles(e, x);
  if (attn_hopper_q_by_producer(e->k)) {
    // The tile's Q, all block_m rows, then "qready".
    attn_ptx_mbar_wait(&e->p, x->bar_q, attn_hopper_q_parity(e, x));
    attn_hopper_rope_rows(&e->p, e->k, x->smem,
                          attn_ptx_ci32(&e->p, (int)e->q_off), k->block_m,
                          attn_ptx_ci32(&e->p, 0), k->block_m,
                          attn_ptx_addc(&e->p, x->q_row, k->rope_offset), &r);
    attn_ptx_fence_proxy_async(&e->p, false);
    attn_ptx_mbar_arrive(&e->p, x->bar_qready);
    attn_hopper_close_tiles(e, x);
    attn_ptx_line(&e->p, "}");
    return;
  }
  int lo2 = attn_ptx_cidx(&e->p, 0), hi2 = attn_ptx_to_index(&e->p, x->nkb),
      st2 = attn_ptx_cidx(&e->p, 1);
  int it2 = e->p.next++;
  attn_ptx_line(&e->p, "scf.for %%v%d = %%v%d to %%v%d step %%v%d {", it2, lo2,
                hi2, st2);
  int j2 = attn_ptx_from_index(&e->p, it2), ph2;
  int s2 = attn_hopper_stage_of(e, x, j2, &ph2);
  attn_ptx_mbar_wait(&e->p, attn_hopper_bar_at(e, x->bar_full, s2), ph2);
  int base = attn_ptx_addc(&e->p, attn_ptx_mulc(&e->p, s2, 2 * e->tile_bytes),
                           e->kv_off);
  int pos0 = attn_ptx_addc(&e->p, attn_ptx_mulc(&e->p, j2, k->block_n),
                           k->rope_offset_k);
  attn_hopper_rope_rows(&e->p, e->k, x->smem, base, k->block_n,
                        attn_ptx_ci32(&e->p, 0), k->block_n, pos0, &r);
  attn_ptx_fence_proxy_async(&e->p, false);
  attn_ptx_mbar_arrive(&e->p, attn_hopper_bar_at(e, x->bar_kready, s2));
  attn_ptx_line(&e->p, "}");
  attn_hopper_close_tiles(e, x);
  attn_ptx_line(&e->p, "}");
}

//===-- The kernel --------------------------------------------------------===//

void attn_hopper_emit_aliases(struct attn_strbuf *b,
                              const struct attn_hopper_kernel *k) {
  int sizes[4] = {k->block_n / 2, (int)k->head_dim / 2, k->row_sum_mma ? 4 : 0,
                  k->block_n / 4};
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
  struct attn_hopper_em e = {.k = k};
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

  struct attn_hopper_ids x = {0};
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
  attn_hopper_consumer(&e, &x, wg, wt);
  attn_ptx_line(&e.p, "}");
  attn_ptx_line(&e.p, "llvm.return");
  attn_strbuf_printf(b, "}\n");
  return true;
}
