//===- hopper_gemm.c - The persistent warp-specialised Hopper GEMM --------===//
//
// Writes the tile-level GEMM kernel of hopper_gemm.h for sm_90a as MLIR text
// (LLVM/NVVM dialects, scf/arith, inline PTX through hopper_ptx.c):
//
//   warpgroup 0 (producer)  thread 0 walks this CTA's tiles and, for each
//                           64-wide step of K, waits for a free slot of the
//                           ring ("empty"), then TMA-loads A (block_m x 64,
//                           one 128-byte-swizzled region) and B (64 x
//                           block_n, block_n/64 regions) completing on the
//                           slot's "full" mbarrier.
//   warpgroups 1, 2         block_m/2 rows each: per K step, wgmma
//   (consumers)             m64n<block_n>k16 x 4 from shared memory (B
//                           transposed: it is N-major), one group kept in
//                           flight, the previous slot released; then the
//                           epilogue (hopper_gemm_epilogue.c): staged
//                           through shared memory and the bulk-copy engine,
//                           or stores straight from registers.
//
// A CTA runs tiles bid, bid + ctas, ...; tile t maps to (tile row, tile
// column) in groups of group_m tile rows so that the CTAs running at once
// share A rows and B columns in L2.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/hopper_gemm.h"
#include "lib/Transforms/hopper_launch.h"
#include "lib/Transforms/hopper_ptx.h"

#include <stdio.h>
#include <string.h>

#define BLOCK_K 64
#define PRODUCER_REGS 40
#define CONSUMER_REGS 232


static int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/// Bytes between the staged epilogue's rows.
static int64_t staging_pitch(const struct attn_hopper_gemm *g) {
  return attn_ptx_rows_pitch((int64_t)g->block_n * 2);
}

static void layout(struct attn_gemm_em *e) {
  const struct attn_hopper_gemm *g = e->g;
  e->a_bytes = (int64_t)g->block_m * BLOCK_K * 2;
  e->b_bytes = (int64_t)BLOCK_K * g->block_n * 2;
  e->stage_bytes = e->a_bytes + e->b_bytes;
  e->bar_off = e->stage_bytes * g->stages;
  // After the mbarriers and the 64 bytes of tile numbers (4 per stage) and
  // the two consumers' pending tiles (at 48).
  e->pending_off = e->bar_off + 16LL * g->stages + 48;
  // Then a staged reduce pattern's mailboxes.
  e->mail_off = e->bar_off + 16LL * g->stages + 64;
  e->pitch = staging_pitch(g);
  e->staging_off = align_up(
      e->mail_off + (attn_gemm_has_mail(g) ? ATTN_GEMM_MAIL_BYTES : 0), 128);
  e->tiles_m = (g->m + g->block_m - 1) / g->block_m;
  e->tiles_n = (g->n + g->block_n - 1) / g->block_n;
  // K blocks per unit: a tile's, or a slice's when K is split.
  e->nk = (g->k + BLOCK_K - 1) / BLOCK_K / (g->split_k > 1 ? g->split_k : 1);
  attn_hopper_gemm_workspace(g, &e->ws_at);
}

void attn_hopper_gemm_workspace(const struct attn_hopper_gemm *g,
                                struct attn_gemm_workspace *w) {
  memset(w, 0, sizeof *w);
  if (g->comm == ATTN_GEMM_LOCAL)
    return;
  int64_t tiles = attn_hopper_gemm_tiles(g);
  // Reduce patterns: one slot of partials per rank (each rank writes its
  // partial of a tile into the owner's slot for it), and for all-reduce the
  // owners' sums; all-gather: the gathered A.
  int64_t mn = g->m * g->n * 2;
  int64_t data = g->comm == ATTN_GEMM_ALL_GATHER  ? g->m * g->k * 2
                 : g->comm == ATTN_GEMM_ALL_REDUCE ? mn * (g->world + 1)
                                                    : mn * g->world;
  int64_t n0 = g->comm == ATTN_GEMM_ALL_GATHER
                   ? (g->m + g->block_m - 1) / g->block_m
                   : tiles;
  // All-reduce: one flag per slab of each tile (hopper_comm.c).
  int64_t n1 = g->comm == ATTN_GEMM_ALL_REDUCE
                   ? tiles * (g->block_m / ATTN_GEMM_SLAB_ROWS)
                   : 0;
  w->data = 0;
  w->flags0 = align_up(data, 256);
  w->flags1 = align_up(w->flags0 + 4 * n0, 256);
  w->ctl = align_up(w->flags1 + 4 * n1, 256);
  w->bytes = align_up(w->ctl + 256, 4096);
}

int64_t attn_hopper_gemm_tiles(const struct attn_hopper_gemm *g) {
  return ((g->m + g->block_m - 1) / g->block_m) *
         ((g->n + g->block_n - 1) / g->block_n);
}

/// Shared-memory offset of the ring slots' tile numbers (adaptive split),
/// after the mbarriers; 64 bytes are kept for them.
static int64_t attn_gemm_tileq_off(const struct attn_hopper_gemm *g) {
  struct attn_gemm_em e = {.g = g};
  layout(&e);
  return e.bar_off + 16LL * g->stages;
}

int64_t attn_hopper_gemm_smem_bytes(const struct attn_hopper_gemm *g) {
  struct attn_gemm_em e = {.g = g};
  layout(&e);
  int64_t end = g->staged ? e.staging_off + g->block_m * e.pitch
                           : attn_gemm_tileq_off(g) + 64;
  return end + 1024;
}

void attn_hopper_gemm_defaults(struct attn_hopper_gemm *g, int gpu_sms) {
  if (!g->block_m)
    g->block_m = 128;
  if (!g->block_n)
    g->block_n = g->n <= 128 ? 128 : 256;
  if (!g->stages) {
    // As deep as 227 KiB allows (beside the staging rows), at most 6.
    int64_t stage = (int64_t)(g->block_m + g->block_n) * BLOCK_K * 2;
    int64_t staging = g->staged ? g->block_m * staging_pitch(g) + 128 : 0;
    g->stages = (int)((ATTN_HOPPER_SMEM_LIMIT - 2048 - staging) / stage);
    if (g->stages > 6)
      g->stages = 6;
  }
  if (!g->group_m) {
    // 16 tile rows (2048 rows of A) walked together. Reduce-scatter walks
    // its shards interleaved, so a wave holds the rows of every shard: 16 /
    // world per shard keeps the A rows of a wave as they are for the other
    // patterns (on two H200s, 8 instead of 16 made the 8192^3 reduce-scatter
    // 1.5% faster and the others, which do not interleave, 1% slower).
    g->group_m = 16;
    if (g->comm == ATTN_GEMM_REDUCE_SCATTER && g->world > 1)
      g->group_m = 16 / g->world > 1 ? 16 / g->world : 1;
  }
  if (!g->split_k)
    g->split_k = 1;
  if (!g->ctas) {
    // As many waves as gpu_sms SMs need, then as few CTAs as keep that
    // count: 2048 tiles on 132 SMs is 16 waves either way, so 128 CTAs. A
    // split K runs split_k units per tile.
    int64_t tiles = attn_hopper_gemm_tiles(g) * g->split_k;
    int64_t sms = gpu_sms;
    int64_t waves = (tiles + sms - 1) / sms;
    g->ctas = (int)((tiles + waves - 1) / (waves ? waves : 1));
  }
}

bool attn_hopper_gemm_stages_tiles(const struct attn_hopper_gemm *g) {
  return !g->accumulate && !g->rope && !g->out_seq && g->split_k <= 1;
}

bool attn_hopper_gemm_supported(const struct attn_hopper_gemm *g, char *why,
                                size_t why_len) {
  if (g->m <= 0 || g->n <= 0 || g->k <= 0) {
    snprintf(why, why_len, "the matrices must not be empty");
    return false;
  }
  if (g->k % 8 || g->n % 8) {
    snprintf(why, why_len,
             "k and n must be multiples of 8 (16-byte TMA row strides), "
             "found k = %lld, n = %lld",
             (long long)g->k, (long long)g->n);
    return false;
  }
  if (g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX ||
      (g->m * g->n) / g->n != g->m) {
    snprintf(why, why_len, "the matrices are too large for 32-bit indices");
    return false;
  }
  if (g->block_m != 128) {
    snprintf(why, why_len, "block-m must be 128, found %d", g->block_m);
    return false;
  }
  if (g->block_n < 64 || g->block_n > 256 || g->block_n % 64) {
    snprintf(why, why_len, "block-n must be 64, 128, 192 or 256, found %d",
             g->block_n);
    return false;
  }
  // The ring's tile numbers take 4 bytes per stage before the pending
  // tiles at 48 (layout): 12 stages at most, which no tile that fits
  // reaches (6 is the default's cap).
  if (g->stages > 12) {
    snprintf(why, why_len, "at most 12 stages, found %d", g->stages);
    return false;
  }
  if (g->stages < 2 || attn_hopper_gemm_smem_bytes(g) > ATTN_HOPPER_SMEM_LIMIT) {
    snprintf(why, why_len,
             "%d stages of %dx%d tiles%s do not fit 227 KiB of shared "
             "memory (need at least 2)",
             g->stages, g->block_m, g->block_n,
             g->staged ? " and the staged epilogue's rows" : "");
    return false;
  }
  if (g->ctas < 1 || g->group_m < 1) {
    snprintf(why, why_len, "ctas and group-m must be positive");
    return false;
  }
  if (g->adaptive && g->comm == ATTN_GEMM_LOCAL) {
    snprintf(why, why_len,
             "the adaptive split belongs to fused kernels (its counters live "
             "in the communication workspace)");
    return false;
  }
  if (g->comm != ATTN_GEMM_LOCAL) {
    if (g->world < 1 || g->world > 8 || g->comm_ctas < 1) {
      snprintf(why, why_len,
               "a fused kernel needs 1 to 8 ranks and at least one "
               "communication CTA, found %d ranks, %d communication CTAs",
               g->world, g->comm_ctas);
      return false;
    }
    if (g->ctas + g->comm_ctas > g->sms) {
      snprintf(why, why_len,
               "a fused kernel's %d compute and %d communication CTAs need "
               "an SM each, and the GPU of option gpu has %d (comm-schedule "
               "split the SMs of another)",
               g->ctas, g->comm_ctas, g->sms);
      return false;
    }
    // describe_gemm pads the rows into whole tiles per rank (m_rows) where
    // the ranks divide them.
    if (g->m % ((int64_t)g->block_m * g->world)) {
      snprintf(why, why_len,
               "a fused reduce-scatter or all-gather needs m to be a multiple "
               "of the %d ranks, found m = %lld",
               g->world, (long long)(g->m_rows ? g->m_rows : g->m));
      return false;
    }
    if (g->accumulate || g->rope) {
      snprintf(why, why_len,
               "a fused kernel neither accumulates into C nor applies RoPE");
      return false;
    }
  }
  if (g->split_k < 1 || g->split_k > 64) {
    snprintf(why, why_len, "split-k must be 1 to 64, found %d", g->split_k);
    return false;
  }
  if (g->split_k > 1) {
    int64_t nk = (g->k + BLOCK_K - 1) / BLOCK_K;
    if (nk % g->split_k || g->comm != ATTN_GEMM_LOCAL || g->accumulate ||
        g->rope || g->out_seq || g->split_k * g->m * g->n >= (1LL << 31)) {
      snprintf(why, why_len,
               "split-k %d needs a plain local GEMM (no collective, "
               "accumulate, RoPE or heads layout) whose %lld K blocks of 64 "
               "it divides, with fewer than 2^31 partial sums",
               g->split_k, (long long)nk);
      return false;
    }
  }
  if (g->staged && !attn_hopper_gemm_stages_tiles(g)) {
    snprintf(why, why_len,
             "the staged epilogue writes row-major C as the GEMM made it: "
             "not with accumulate, RoPE, the heads layout or a split K");
    return false;
  }
  if (g->out_seq &&
      (g->out_seq < 0 || g->m % g->out_seq || g->out_head_dim <= 0 ||
       g->out_head_dim % 8 || g->n % g->out_head_dim ||
       g->comm != ATTN_GEMM_LOCAL || g->m * g->n >= (1LL << 31))) {
    snprintf(why, why_len,
             "the heads layout needs m a multiple of the sequence (%lld), a "
             "head dim that is a multiple of 8 and divides n (%lld), no "
             "collective and fewer than 2^31 elements",
             (long long)g->out_seq, (long long)g->out_head_dim);
    return false;
  }
  if (g->rope) {
    if (g->head_dim <= 0 || g->n % g->head_dim || g->head_dim % 16 ||
        g->block_n % g->head_dim) {
      snprintf(why, why_len,
               "RoPE in the epilogue needs a head dim that is a multiple of "
               "16 and divides block-n (%d) and n, found %lld",
               g->block_n, (long long)g->head_dim);
      return false;
    }
    if (g->rotary_dim <= 0 || g->rotary_dim > g->head_dim ||
        g->rotary_dim % 16 || g->seq_len <= 0) {
      snprintf(why, why_len,
               "RoPE in the epilogue needs a rotary dim that is a multiple "
               "of 16 up to the head dim and a positive sequence length");
      return false;
    }
  }
  return true;
}

//===-- Pieces ------------------------------------------------------------===//

static int bar_at(struct attn_gemm_em *e, int base, int s) {
  return attn_ptx_addi(e->p, base, attn_ptx_mulc(e->p, s, 8));
}

/// Slot and parity of the ring's block number kb (i32).
static int slot_of(struct attn_gemm_em *e, int kb, int *phase) {
  int s = attn_ptx_remc(e->p, kb, e->g->stages);
  *phase = attn_ptx_op(e->p, "arith.andi %%v%d, %%v%d : i32",
                       attn_ptx_divc(e->p, kb, e->g->stages),
                       attn_ptx_ci32(e->p, 1));
  return s;
}

/// Shared-memory pointer of slot s's tile number (adaptive split).
static int tileq_ptr(struct attn_gemm_em *e, int s) {
  return attn_ptx_smem_ptr(
      e->p, e->smem,
      attn_ptx_addc(e->p, attn_ptx_mulc(e->p, s, 4),
                    attn_gemm_tileq_off(e->g)));
}

/// Grouped order over `rows` tile rows: tile t (i32) -> tile row *tm (from
/// 0) and column *tn.
static void grouped(struct attn_gemm_em *e, int t, int64_t rows, int *tm,
                    int *tn) {
  int64_t per_group = (int64_t)e->g->group_m * e->tiles_n;
  int group = attn_ptx_divc(e->p, t, per_group);
  int first = attn_ptx_mulc(e->p, group, e->g->group_m);
  int left = attn_ptx_op(e->p, "arith.subi %%v%d, %%v%d : i32",
                         attn_ptx_ci32(e->p, rows), first);
  int size = attn_ptx_op(e->p, "arith.minui %%v%d, %%v%d : i32", left,
                         attn_ptx_ci32(e->p, e->g->group_m));
  int in = attn_ptx_remc(e->p, t, per_group);
  *tm = attn_ptx_addi(e->p, first,
                      attn_ptx_op(e->p, "arith.remui %%v%d, %%v%d : i32", in,
                                  size));
  *tn = attn_ptx_op(e->p, "arith.divui %%v%d, %%v%d : i32", in, size);
}

int attn_gemm_shards(const struct attn_hopper_gemm *g) {
  return g->comm == ATTN_GEMM_REDUCE_SCATTER || g->comm == ATTN_GEMM_ALL_GATHER
             ? g->world
             : 1;
}

void attn_gemm_real_row(struct attn_gemm_em *e, int vrow, bool in_shard,
                        int *real, int *valid) {
  const struct attn_hopper_gemm *g = e->g;
  int shards = attn_gemm_shards(g);
  int64_t spad = g->m / shards;
  if (!g->m_rows) {
    *real = in_shard ? attn_ptx_remc(e->p, vrow, spad) : vrow;
    *valid = -1;
    return;
  }
  int64_t part = g->m_rows / shards;
  int in = attn_ptx_remc(e->p, vrow, spad);
  *real = in_shard ? in
                   : attn_ptx_addi(e->p,
                                   attn_ptx_mulc(e->p,
                                                 attn_ptx_divc(e->p, vrow, spad),
                                                 part),
                                   in);
  *valid = attn_ptx_cmpc(e->p, "slt", in, part);
}

void attn_gemm_tile_coords(struct attn_gemm_em *e, int t, int *tm, int *tn) {
  const struct attn_hopper_gemm *g = e->g;
  if (g->comm != ATTN_GEMM_REDUCE_SCATTER && g->comm != ATTN_GEMM_ALL_GATHER) {
    grouped(e, t, e->tiles_m, tm, tn);
    return;
  }
  // Row shards of tiles_m / world tile rows. Reduce-scatter interleaves them
  // (ordinal t is shard t % world), so every rank reduces its shard while
  // the GEMM runs; all-gather starts with this rank's rows, then the next
  // rank's, in the order the communication CTAs gather them.
  int64_t srows = e->tiles_m / g->world, per_shard = srows * e->tiles_n;
  int shard, in;
  if (g->comm == ATTN_GEMM_REDUCE_SCATTER) {
    shard = attn_ptx_remc(e->p, t, g->world);
    in = attn_ptx_divc(e->p, t, g->world);
  } else {
    shard = attn_ptx_remc(
        e->p, attn_ptx_addi(e->p, e->rank, attn_ptx_divc(e->p, t, per_shard)),
        g->world);
    in = attn_ptx_remc(e->p, t, per_shard);
  }
  int r;
  grouped(e, in, srows, &r, tn);
  *tm = attn_ptx_addi(e->p, attn_ptx_mulc(e->p, shard, srows), r);
}

/// The tile ordinal this rank runs at position p (i32) of its schedule: p,
/// except with own_last, where the last wave of every shard is run peers'
/// shards first and this rank's last.
static int ordinal_of(struct attn_gemm_em *e, int p) {
  const struct attn_hopper_gemm *g = e->g;
  if (!g->own_last || (g->comm != ATTN_GEMM_ALL_REDUCE &&
                       g->comm != ATTN_GEMM_REDUCE_SCATTER))
    return p;
  // Ordinal t belongs to shard (owner) t % world at position t / world of
  // it. Positions before `start` run ordinal p (interleaved shards); the
  // last world x `tail` (one wave, at most a shard) run the tail of shard
  // rank + 1, rank + 2, ..., rank: every peer has run this rank's tail a
  // wave or more before this rank does.
  int64_t tiles = e->tiles_m * e->tiles_n, per = tiles / g->world;
  int64_t tail = g->ctas < per ? g->ctas : per;
  int64_t start = tiles - (int64_t)g->world * tail;
  int j = attn_ptx_op(e->p, "arith.subi %%v%d, %%v%d : i32", p,
                      attn_ptx_ci32(e->p, start));
  int blk = attn_ptx_divc(e->p, j, tail);
  int k = attn_ptx_remc(e->p, j, tail);
  int shard = attn_ptx_remc(
      e->p, attn_ptx_addi(e->p, e->rank, attn_ptx_addc(e->p, blk, 1)),
      g->world);
  int t = attn_ptx_addi(
      e->p, shard,
      attn_ptx_mulc(e->p, attn_ptx_addc(e->p, k, per - tail), g->world));
  int in_tail = attn_ptx_cmpc(e->p, "sge", p, start);
  return attn_ptx_sel(e->p, in_tail, t, p, "i32");
}

/// Opens `scf.for %i = 0 to e->ntiles` and returns the tile (i32) and its
/// ordinal i (i32) in *ord.
static int open_tile_loop(struct attn_gemm_em *e, int *ord) {
  int lo = attn_ptx_cidx(e->p, 0), st = attn_ptx_cidx(e->p, 1);
  int it = e->p->next++;
  attn_ptx_line(e->p, "scf.for %%v%d = %%v%d to %%v%d step %%v%d {", it, lo,
                e->ntiles, st);
  *ord = attn_ptx_from_index(e->p, it);
  return ordinal_of(
      e, attn_ptx_addi(e->p, e->cbid, attn_ptx_mulc(e->p, *ord, e->g->ctas)));
}

/// The tile of unit u (i32): u itself, or with a split K tile u % tiles,
/// its slice (e->slice) u / tiles and first K block (e->kblk0).
static int unit_tile(struct attn_gemm_em *e, int u) {
  if (e->g->split_k <= 1)
    return u;
  int64_t tiles = e->tiles_m * e->tiles_n;
  e->slice = attn_ptx_divc(e->p, u, tiles);
  e->kblk0 = attn_ptx_mulc(e->p, e->slice, e->nk);
  return attn_ptx_remc(e->p, u, tiles);
}

//===-- Producer ----------------------------------------------------------===//

/// The producer's loads of tile t (i32) into ring blocks kb0, kb0 + 1, ...
/// With the adaptive split, each slot also carries t for the consumers.
static void producer_tile(struct attn_gemm_em *e, int t, int kb0) {
  const struct attn_hopper_gemm *g = e->g;
  int tm, tn;
  attn_gemm_tile_coords(e, t, &tm, &tn);
  int row = attn_ptx_mulc(e->p, tm, g->block_m), a_map = e->a_map;
  if (g->comm == ATTN_GEMM_REDUCE_SCATTER && g->m_rows) {
    // The tile's first real row; the rows of the next shard below it, if
    // any, land in padding rows, which are never stored.
    int valid;
    attn_gemm_real_row(e, row, false, &row, &valid);
  }
  if (g->comm == ATTN_GEMM_ALL_GATHER) {
    // This rank's rows come from a (its shard), the others' from the
    // gathered copy in the workspace once they have arrived.
    int64_t rows = g->m / g->world;
    int mine = attn_ptx_cmp(
        e->p, "eq", attn_ptx_divc(e->p, tm, rows / g->block_m), e->rank);
    attn_gemm_comm_wait_rows(e, tm, mine);
    a_map = attn_ptx_sel(e->p, mine, e->a_map, e->g_map, "i64");
    row = attn_ptx_sel(
        e->p, mine,
        attn_ptx_op(e->p, "arith.subi %%v%d, %%v%d : i32", row,
                    attn_ptx_mulc(e->p, e->rank, rows)),
        row, "i32");
  }
  int col = attn_ptx_mulc(e->p, tn, g->block_n);
  int lo = attn_ptx_cidx(e->p, 0), hi = attn_ptx_cidx(e->p, e->nk),
      st = attn_ptx_cidx(e->p, 1);
  int it = e->p->next++;
  attn_ptx_line(e->p, "scf.for %%v%d = %%v%d to %%v%d step %%v%d {", it, lo,
                hi, st);
  int j = attn_ptx_from_index(e->p, it), ph;
  int s = slot_of(e, attn_ptx_addi(e->p, kb0, j), &ph);
  attn_ptx_mbar_wait(e->p, bar_at(e, e->empty, s),
                     attn_ptx_op(e->p, "arith.xori %%v%d, %%v%d : i32", ph,
                                 attn_ptx_ci32(e->p, 1)));
  int full = bar_at(e, e->full, s);
  if (g->adaptive)
    attn_ptx_line(e->p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr<3>", t,
                  tileq_ptr(e, s));
  attn_ptx_mbar_expect_tx(e->p, full, e->stage_bytes);
  int slot = attn_ptx_addi(e->p, e->sbase,
                           attn_ptx_mulc(e->p, s, e->stage_bytes));
  int kcol = attn_ptx_mulc(
          e->p, g->split_k > 1 ? attn_ptx_addi(e->p, e->kblk0, j) : j, BLOCK_K),
      zero = attn_ptx_ci32(e->p, 0);
  int ca[4] = {kcol, row, zero, zero};
  attn_ptx_tma_load(e->p, slot, a_map, ca, full);
  for (int r = 0; r < g->block_n / 64; ++r) {
    int cb[4] = {attn_ptx_addc(e->p, col, 64 * r), kcol, zero, zero};
    attn_ptx_tma_load(
        e->p,
        attn_ptx_addc(e->p, slot, e->a_bytes + (int64_t)r * BLOCK_K * 128),
        e->b_map, cb, full);
  }
  attn_ptx_line(e->p, "}");
}

/// Opens the adaptive split's tile loop: `scf.while` claiming tiles from
/// the workspace counter (producer) or reading them from the ring's slots
/// (consumers), carrying the ring position kb. Returns the tile and kb of
/// the body; *res names the loop's results (tile, kb at the exit).
static int open_claim_loop(struct attn_gemm_em *e, bool producer, int *kb,
                           int *res) {
  const struct attn_hopper_gemm *g = e->g;
  int init = attn_ptx_ci32(e->p, 0), arg = e->p->next++;
  *res = e->p->next++;
  attn_ptx_line(e->p,
                "%%v%d:2 = scf.while (%%v%d = %%v%d) : (i32) -> (i32, i32) {",
                *res, arg, init);
  int t, go;
  if (producer) {
    t = attn_gemm_claim(e, ATTN_GEMM_CTL_TILE);
    go = attn_ptx_cmpc(e->p, "ult", t, e->tiles_m * e->tiles_n);
  } else {
    int ph, s = slot_of(e, arg, &ph);
    attn_ptx_mbar_wait(e->p, bar_at(e, e->full, s), ph);
    t = attn_ptx_op(e->p, "llvm.load %%v%d : !llvm.ptr<3> -> i32",
                    tileq_ptr(e, s));
    go = attn_ptx_cmpc(e->p, "sge", t, 0);
  }
  (void)g;
  attn_ptx_line(e->p, "scf.condition(%%v%d) %%v%d, %%v%d : i32, i32", go, t,
                arg);
  int bt = e->p->next++, bkb = e->p->next++;
  attn_ptx_line(e->p, "} do {");
  attn_ptx_line(e->p, "^bb0(%%v%d: i32, %%v%d: i32):", bt, bkb);
  *kb = bkb;
  return bt;
}

static void close_claim_loop(struct attn_gemm_em *e, int kb) {
  attn_ptx_line(e->p, "scf.yield %%v%d : i32", attn_ptx_addc(e->p, kb, e->nk));
  attn_ptx_line(e->p, "}");
}

static void producer(struct attn_gemm_em *e, int wt) {
  if (attn_gemm_has_mail(e->g))
    attn_gemm_signaler(e, wt);
  attn_ptx_line(e->p, "scf.if %%v%d {", attn_ptx_cmpc(e->p, "eq", wt, 0));
  if (!e->g->adaptive) {
    int ord, t = unit_tile(e, open_tile_loop(e, &ord));
    producer_tile(e, t, attn_ptx_mulc(e->p, ord, e->nk));
    attn_ptx_line(e->p, "}");
  } else {
    int kb, res, t = open_claim_loop(e, true, &kb, &res);
    producer_tile(e, ordinal_of(e, t), kb);
    close_claim_loop(e, kb);
    // No tile left: a slot holding -1 tells the consumers.
    int ph, s = slot_of(
        e, attn_ptx_op(e->p, "arith.addi %%v%d#1, %%v%d : i32", res,
                       attn_ptx_ci32(e->p, 0)),
        &ph);
    attn_ptx_mbar_wait(e->p, bar_at(e, e->empty, s),
                       attn_ptx_op(e->p, "arith.xori %%v%d, %%v%d : i32", ph,
                                   attn_ptx_ci32(e->p, 1)));
    attn_ptx_line(e->p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr<3>",
                  attn_ptx_ci32(e->p, -1), tileq_ptr(e, s));
    attn_ptx_mbar_arrive(e->p, bar_at(e, e->full, s));
  }
  attn_ptx_line(e->p, "}");
}

//===-- Consumers ---------------------------------------------------------===//

/// Issues the four k16 steps of one K block for this consumer's 64 rows.
static void issue_block(struct attn_gemm_em *e, int slot, int cw, int *acc) {
  int a = attn_ptx_addi(e->p, slot, attn_ptx_mulc(e->p, cw, 64 * 128));
  int desc_a = attn_ptx_make_desc(e->p, a, 16, 1024);
  int desc_b = attn_ptx_make_desc(e->p, attn_ptx_addc(e->p, slot, e->a_bytes),
                                  (long long)BLOCK_K * 128, 1024);
  int one = attn_ptx_ci32(e->p, 1);
  attn_ptx_wgmma_fence(e->p);
  for (int kk = 0; kk < BLOCK_K / 16; ++kk)
    attn_ptx_wgmma_ss(e->p, acc, e->nacc,
                      attn_ptx_desc_add(e->p, desc_a, kk * 32),
                      attn_ptx_desc_add(e->p, desc_b, (long long)kk * 16 * 128),
                      one, true);
  attn_ptx_wgmma_commit(e->p);
}

/// One tile t (i32) from ring blocks kb0, kb0 + 1, ...; with waited, the
/// first block's full barrier has been waited for already.
static void consumer_tile(struct attn_gemm_em *e, int t, int kb0, int cw,
                          int wt, bool waited) {
  int n = e->nacc, tm, tn;
  attn_gemm_tile_coords(e, t, &tm, &tn);
  // The wgmma descriptors depend on the ring slot only, and LLVM hoists
  // those of every slot it can name out of the tile loop: the first
  // block's when nk is a multiple of stages, all of them (64 registers)
  // when it also unrolls a short K loop (nk = stages = 4, K = 256). The
  // plain epilogue leaves room for them; RoPE's sin/cos does not, so with
  // RoPE they are recomputed per tile (a few integer ops per K block).
  int sbase = e->g->rope ? attn_ptx_pin(e->p, e->sbase, "i32", "r") : e->sbase;
  int zero = attn_ptx_cf32(e->p, 0.0f);
  int acc[256];
  const char *tys[256];
  for (int i = 0; i < n; ++i) {
    acc[i] = zero;
    tys[i] = "f32";
  }
  // K block 0 outside the loop: every later step releases the slot before it.
  {
    int ph, s = slot_of(e, kb0, &ph);
    if (!waited)
      attn_ptx_mbar_wait(e->p, bar_at(e, e->full, s), ph);
    issue_block(e, attn_ptx_addi(e->p, sbase,
                                 attn_ptx_mulc(e->p, s, e->stage_bytes)),
                cw, acc);
  }
  int lo = attn_ptx_cidx(e->p, 1), hi = attn_ptx_cidx(e->p, e->nk),
      st = attn_ptx_cidx(e->p, 1);
  int it = e->p->next++, res = e->p->next++;
  int arg[256];
  attn_ptx_open_for(e->p, res, it, lo, hi, st, n, acc, arg, NULL);
  {
    int a2[256];
    memcpy(a2, arg, sizeof(int) * (size_t)n);
    int kb = attn_ptx_addi(e->p, kb0, attn_ptx_from_index(e->p, it)), ph, php;
    int s = slot_of(e, kb, &ph);
    int sp = slot_of(e, attn_ptx_addc(e->p, kb, -1), &php);
    attn_ptx_mbar_wait(e->p, bar_at(e, e->full, s), ph);
    issue_block(e, attn_ptx_addi(e->p, sbase,
                                 attn_ptx_mulc(e->p, s, e->stage_bytes)),
                cw, a2);
    // The previous block's wgmmas are done once at most one group is left.
    attn_ptx_wgmma_wait(e->p, 1);
    attn_ptx_mbar_arrive(e->p, bar_at(e, e->empty, sp));
    attn_ptx_yield_list(e->p, "scf.yield", a2, n, tys);
  }
  attn_ptx_line(e->p, "}");
  int nz = attn_ptx_cf32(e->p, -0.0f);
  for (int i = 0; i < n; ++i)
    acc[i] = attn_ptx_op(e->p, "arith.addf %%v%d#%d, %%v%d : f32", res, i, nz);
  attn_ptx_wgmma_wait(e->p, 0);
  attn_ptx_reg_fence(e->p, acc, n, "f32", "f");
  {
    int ph, s = slot_of(e, attn_ptx_addc(e->p, kb0, e->nk - 1), &ph);
    attn_ptx_mbar_arrive(e->p, bar_at(e, e->empty, s));
  }
  attn_gemm_epilogue(e, acc, t, tm, tn, cw, wt);
}

static void consumer(struct attn_gemm_em *e, int wg, int wt) {
  int cw = attn_ptx_addc(e->p, wg, -1);
  attn_gemm_epilogue_open(e, cw, wt);
  if (!e->g->adaptive) {
    int ord, t = unit_tile(e, open_tile_loop(e, &ord));
    consumer_tile(e, t, attn_ptx_mulc(e->p, ord, e->nk), cw, wt, false);
    attn_ptx_line(e->p, "}");
    attn_gemm_epilogue_close(e, cw, wt);
    return;
  }
  int kb, res, t = open_claim_loop(e, false, &kb, &res);
  consumer_tile(e, t, kb, cw, wt, true);
  close_claim_loop(e, kb);
  attn_gemm_epilogue_close(e, cw, wt);
  // The GEMM is done on this SM: its consumers help communicate.
  if (e->g->comm != ATTN_GEMM_LOCAL)
    attn_gemm_comm_help(e, attn_ptx_addc(e->p, e->tid, -128));
}

//===-- The kernel --------------------------------------------------------===//

void attn_hopper_gemm_emit_aliases(struct attn_strbuf *b,
                                   const struct attn_hopper_gemm *g) {
  int n = g->block_n / 2;
  attn_strbuf_printf(b, "!acc_f32%d = !llvm.struct<(", n);
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(b, "%sf32", i ? ", " : "");
  attn_strbuf_printf(b, ")>\n");
}

/// A row-major matrix parameter, 16-byte aligned (TMA and the bulk copies).
static void emit_matrix(struct attn_strbuf *b, const char *name,
                        const char *ty, int64_t rows, int64_t cols) {
  int64_t shape[2] = {rows, cols};
  attn_hopper_emit_param(b, name, ty, 2, shape, 16);
}

/// The tensor map of a row-major rows x cols matrix, box_rows x 64 boxes.
static void emit_map(struct attn_strbuf *b, const char *name,
                     const char *tensor, const char *ty, int64_t rows,
                     int64_t cols, int box_rows) {
  int64_t dims[4] = {cols, rows, 1, 1};
  attn_hopper_emit_map(b, name, tensor, ty, dims, box_rows);
}

/// The kernel's parameters in the manifest (params = [...]).
static void emit_params(struct attn_strbuf *b, const struct attn_gemm_em *e) {
  const struct attn_hopper_gemm *g = e->g;
  const char *ty = g->bf16 ? "bf16" : "f16";
  bool fused = g->comm != ATTN_GEMM_LOCAL;
  int64_t rows = g->m_rows ? g->m_rows : g->m;
  int64_t c_rows = g->comm == ATTN_GEMM_REDUCE_SCATTER ? rows / g->world : rows;
  bool ag = g->comm == ATTN_GEMM_ALL_GATHER;
  int64_t a_rows = ag ? rows / g->world : rows;
  emit_matrix(b, "a", ty, a_rows, g->k);
  attn_strbuf_printf(b, ", ");
  emit_matrix(b, "b", ty, g->k, g->n);
  attn_strbuf_printf(b, ", ");
  if (g->split_k > 1)
    emit_matrix(b, "partials", "f32", g->split_k * g->m, g->n);
  else
    emit_matrix(b, "c", ty, c_rows, g->n);
  if (fused)
    attn_strbuf_printf(
        b,
        ", {name = \"workspace\", kind = \"ptr\", align = 256 : i64}, "
        "{name = \"peers\", kind = \"ptr\", dtype = \"i64\", shape = "
        "array<i64: %d>}, {name = \"out_peers\", kind = \"ptr\", dtype = "
        "\"i64\", shape = array<i64: %d>}, {name = \"rank\", kind = "
        "\"i32\"}, {name = \"epoch\", kind = \"i32\"}",
        g->world, g->world);
  attn_strbuf_printf(b, ", ");
  emit_map(b, "a_map", "a", ty, a_rows, g->k, g->block_m);
  attn_strbuf_printf(b, ", ");
  emit_map(b, "b_map", "b", ty, g->k, g->n, BLOCK_K);
  if (ag) {
    attn_strbuf_printf(b, ", ");
    emit_map(b, "g_map", "workspace", ty, g->m, g->k, g->block_m);
  }
  attn_strbuf_printf(b, "]");
}

/// The manifest's "comm" entry of a fused kernel.
static void emit_comm(struct attn_strbuf *b, const struct attn_gemm_em *e) {
  static const char *names[] = {"", "matmul_all_reduce", "all_gather_matmul",
                                "matmul_reduce_scatter"};
  const struct attn_hopper_gemm *g = e->g;
  attn_strbuf_printf(
      b,
      ", comm = {pattern = \"%s\", world_size = %d : i64, compute_ctas = %d "
      ": i64, comm_ctas = %d : i64, workspace_bytes = %lld : i64, "
      "split = \"%s\"}",
      names[g->comm], g->world, g->ctas, g->comm_ctas,
      (long long)e->ws_at.bytes,
      g->adaptive ? "adaptive" : "static");
}

void attn_hopper_gemm_emit_kernel(struct attn_strbuf *b,
                                  const struct attn_hopper_gemm *g,
                                  const char *matmul_attr) {
  struct attn_ptx ptx;
  struct attn_gemm_em e = {.g = g, .p = &ptx};
  attn_ptx_init(e.p, b, g->bf16);
  e.nacc = g->block_n / 2;
  layout(&e);
  bool fused = g->comm != ATTN_GEMM_LOCAL;
  int grid = g->ctas + (fused ? g->comm_ctas : 0);

  attn_strbuf_printf(b,
                     "llvm.func @%s(%%a: !llvm.ptr, %%b: !llvm.ptr, %%c: "
                     "!llvm.ptr",
                     g->name);
  if (fused)
    attn_strbuf_printf(b,
                       ", %%ws: !llvm.ptr, %%peers: !llvm.ptr, %%out_peers: "
                       "!llvm.ptr, %%rank: i32, %%epoch: i32");
  static const char *maps[3] = {"a_map", "b_map", "g_map"};
  for (int i = 0; i < (g->comm == ATTN_GEMM_ALL_GATHER ? 3 : 2); ++i)
    attn_strbuf_printf(b,
                       ", %%%s: !llvm.ptr {llvm.align = 64 : i64, llvm.byval "
                       "= !llvm.array<128 x i8>, nvvm.grid_constant}",
                       maps[i]);
  attn_strbuf_printf(b,
                     ") attributes {nvvm.kernel, nvvm.maxntid = array<i32: "
                     "%d, 1, 1>, nvvm.minctasm = 1 : i32, ",
                     ATTN_HOPPER_GEMM_THREADS);
  int64_t grid3[3] = {grid, 1, 1};
  attn_hopper_emit_launch_head(b, fused ? "hopper-gemm-comm" : "hopper-gemm",
                               grid3, ATTN_HOPPER_GEMM_THREADS,
                               attn_hopper_gemm_smem_bytes(g));
  emit_params(b, &e);
  if (fused)
    emit_comm(b, &e);
  // The choices the defaults made, for the manifest's reader.
  attn_strbuf_printf(b,
                     ", gemm = {stages = %d : i64, group_m = %d : i64, "
                     "epilogue = \"%s\"",
                     g->stages, g->group_m, g->staged ? "staged" : "registers");
  if (g->comm == ATTN_GEMM_ALL_REDUCE || g->comm == ATTN_GEMM_REDUCE_SCATTER)
    attn_strbuf_printf(b, ", order = \"%s\"",
                       g->own_last ? "own-last" : "interleaved");
  if (g->split_k > 1)
    attn_strbuf_printf(b, ", split_k = %d : i64", g->split_k);
  attn_strbuf_printf(b, "}");
  if (matmul_attr)
    attn_strbuf_printf(b, ", matmul = %s", matmul_attr);
  attn_strbuf_printf(b, "}} {\n");

  e.tid = attn_ptx_op(e.p, "nvvm.read.ptx.sreg.tid.x : i32");
  e.bid = attn_ptx_op(e.p, "nvvm.read.ptx.sreg.ctaid.x : i32");
  // Communication CTAs come first (lowest block numbers start first).
  e.cbid = fused ? attn_ptx_addc(e.p, e.bid, -g->comm_ctas) : e.bid;
  int64_t tiles = e.tiles_m * e.tiles_n * g->split_k;
  e.c = attn_ptx_op(e.p,
                    "llvm.getelementptr %%c[0] : (!llvm.ptr) -> !llvm.ptr, i8");
  e.out = e.c;
  if (fused) {
    e.ws = attn_ptx_op(e.p,
                       "llvm.getelementptr %%ws[0] : (!llvm.ptr) -> "
                       "!llvm.ptr, i8");
    e.peers = attn_ptx_op(e.p, "llvm.ptrtoint %%peers : !llvm.ptr to i64");
    e.out_peers =
        attn_ptx_op(e.p, "llvm.ptrtoint %%out_peers : !llvm.ptr to i64");
    e.rank = attn_ptx_op(e.p, "arith.addi %%rank, %%v%d : i32",
                         attn_ptx_ci32(e.p, 0));
    e.epoch = attn_ptx_op(e.p, "arith.addi %%epoch, %%v%d : i32",
                          attn_ptx_ci32(e.p, 0));
    if (g->comm == ATTN_GEMM_ALL_GATHER) {
      e.g_map = attn_ptx_op(e.p, "llvm.ptrtoint %%g_map : !llvm.ptr to i64");
    }
    if (g->comm != ATTN_GEMM_ALL_GATHER)
      e.out = attn_ptx_op(
          e.p, "llvm.getelementptr %%v%d[%lld] : (!llvm.ptr) -> !llvm.ptr, i8",
          e.ws, (long long)e.ws_at.data);
  }
  // Tiles of this compute CTA: ceil((tiles - cbid) / ctas).
  e.ntiles = attn_ptx_to_index(
      e.p, attn_ptx_divc(e.p,
                         attn_ptx_op(e.p, "arith.subi %%v%d, %%v%d : i32",
                                     attn_ptx_ci32(e.p, tiles + g->ctas - 1),
                                     e.cbid),
                         g->ctas));
  int raw = attn_ptx_op(e.p, "llvm.mlir.addressof @attn_smem : !llvm.ptr<3>");
  int raw_i =
      attn_ptx_op(e.p, "llvm.ptrtoint %%v%d : !llvm.ptr<3> to i32", raw);
  int pad = attn_ptx_op(e.p, "arith.subi %%v%d, %%v%d : i32",
                        attn_ptx_op(e.p, "arith.andi %%v%d, %%v%d : i32",
                                    attn_ptx_addc(e.p, raw_i, 1023),
                                    attn_ptx_ci32(e.p, ~1023)),
                        raw_i);
  e.smem = attn_ptx_smem_ptr(e.p, raw, pad);
  e.sbase = attn_ptx_addi(e.p, raw_i, pad);
  e.a_map = attn_ptx_op(e.p, "llvm.ptrtoint %%a_map : !llvm.ptr to i64");
  e.b_map = attn_ptx_op(e.p, "llvm.ptrtoint %%b_map : !llvm.ptr to i64");
  e.full = attn_ptx_addc(e.p, e.sbase, e.bar_off);
  e.empty = attn_ptx_addc(e.p, e.full, 8LL * g->stages);

  if (fused) {
    attn_ptx_line(e.p, "scf.if %%v%d {",
                  attn_ptx_cmpc(e.p, "ult", e.bid, g->comm_ctas));
    attn_gemm_comm_role(&e);
    attn_ptx_line(e.p, "} else {");
  }
  attn_ptx_line(e.p, "scf.if %%v%d {", attn_ptx_cmpc(e.p, "eq", e.tid, 0));
  for (int s = 0; s < g->stages; ++s) {
    attn_ptx_mbar_init(e.p, attn_ptx_addc(e.p, e.full, 8 * s), 1);
    attn_ptx_mbar_init(e.p, attn_ptx_addc(e.p, e.empty, 8 * s), 256);
  }
  if (attn_gemm_has_mail(g))
    attn_gemm_mail_init(&e);
  attn_ptx_fence_mbar_init(e.p);
  attn_ptx_line(e.p, "}");
  attn_ptx_asm0(e.p, "bar.sync 0;");

  int wg = attn_ptx_divc(e.p, e.tid, 128),
      wt = attn_ptx_remc(e.p, e.tid, 128);
  attn_ptx_line(e.p, "scf.if %%v%d {", attn_ptx_cmpc(e.p, "eq", wg, 0));
  attn_ptx_setmaxnreg(e.p, false, PRODUCER_REGS);
  producer(&e, wt);
  attn_ptx_line(e.p, "} else {");
  attn_ptx_setmaxnreg(e.p, true, CONSUMER_REGS);
  consumer(&e, wg, wt);
  attn_ptx_line(e.p, "}");
  if (fused) {
    attn_ptx_line(e.p, "}");
    attn_gemm_comm_finish(&e);
  }
  attn_ptx_line(e.p, "llvm.return");
  attn_strbuf_printf(b, "}\n");
}
