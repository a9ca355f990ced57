//===- gemm_geometry.c - The Hopper GEMM's sizes and tile walk ------------===//
//
// What kernels.h's GEMM (struct attn_hopper_gemm) occupies and how its CTAs walk
// the output: the shared-memory layout (ring slots, mbarriers, tile
// numbers, mailboxes, staging rows), the workspace of a fused kernel, the
// defaults and the checks (no IR; declared in kernels.h), and
// the built tile walk: a tile ordinal to its tile row and column, in
// groups of group_m tile rows, shards of rows interleaved or this rank's
// first, and a padded row to the real one.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include <stdio.h>
#include <string.h>

#define BLOCK_K 64

static bool reduces(const struct attn_hopper_gemm *g) {
  return g->comm == ATTN_GEMM_ALL_REDUCE || g->comm == ATTN_GEMM_REDUCE_SCATTER;
}

bool attn_gemm_has_mail(const struct attn_hopper_gemm *g) {
  return g->staged && reduces(g);
}

static int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/// Bytes between the staged epilogue's rows.
static int64_t staging_pitch(const struct attn_hopper_gemm *g) {
  return attn_k_rows_pitch((int64_t)g->block_n * 2);
}

void attn_k_gemm_layout(struct attn_k_gemm *e) {
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
  int64_t data = g->comm == ATTN_GEMM_ALL_GATHER   ? g->m * g->k * 2
                 : g->comm == ATTN_GEMM_ALL_REDUCE ? mn * (g->world + 1)
                                                   : mn * g->world;
  int64_t n0 = g->comm == ATTN_GEMM_ALL_GATHER
                   ? (g->m + g->block_m - 1) / g->block_m
                   : tiles;
  // All-reduce: one flag per slab of each tile (gemm_comm.c).
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

int64_t attn_k_gemm_tileq_off(const struct attn_hopper_gemm *g) {
  struct attn_k_gemm e = {.g = g};
  attn_k_gemm_layout(&e);
  return e.bar_off + 16LL * g->stages;
}

int64_t attn_hopper_gemm_smem_bytes(const struct attn_hopper_gemm *g) {
  struct attn_k_gemm e = {.g = g};
  attn_k_gemm_layout(&e);
  int64_t end = g->staged ? e.staging_off + g->block_m * e.pitch
                          : attn_k_gemm_tileq_off(g) + 64;
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
    g->stages = (int)((ATTN_KERNELS_SMEM_LIMIT - 2048 - staging) / stage);
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
  if (g->stages < 2 || attn_hopper_gemm_smem_bytes(g) > ATTN_KERNELS_SMEM_LIMIT) {
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

//===-- The tile walk -----------------------------------------------------===//

/// Grouped order over `rows` tile rows: tile t (i32) -> tile row *tm (from
/// 0) and column *tn.
static void grouped(struct attn_k_gemm *e, MlirValue t, int64_t rows,
                    MlirValue *tm, MlirValue *tn) {
  struct attn_builder *b = e->b;
  int64_t per_group = (int64_t)e->g->group_m * e->tiles_n;
  MlirValue group = attn_k_divc(b, t, per_group);
  MlirValue first = attn_k_mulc(b, group, e->g->group_m);
  MlirValue left = attn_b_subi(b, attn_b_i32(b, rows), first);
  MlirValue size = attn_b_minui(b, left, attn_b_i32(b, e->g->group_m));
  MlirValue in = attn_k_remc(b, t, per_group);
  *tm = attn_b_addi(b, first, attn_b_remui(b, in, size));
  *tn = attn_b_divui(b, in, size);
}

int attn_gemm_shards(const struct attn_hopper_gemm *g) {
  return g->comm == ATTN_GEMM_REDUCE_SCATTER || g->comm == ATTN_GEMM_ALL_GATHER
             ? g->world
             : 1;
}

void attn_k_gemm_real_row(struct attn_k_gemm *e, MlirValue vrow, bool in_shard,
                          MlirValue *real, MlirValue *valid) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_gemm *g = e->g;
  int shards = attn_gemm_shards(g);
  int64_t spad = g->m / shards;
  if (!g->m_rows) {
    *real = in_shard ? attn_k_remc(b, vrow, spad) : vrow;
    *valid = (MlirValue){NULL};
    return;
  }
  int64_t part = g->m_rows / shards;
  MlirValue in = attn_k_remc(b, vrow, spad);
  *real = in_shard
              ? in
              : attn_b_addi(b, attn_k_mulc(b, attn_k_divc(b, vrow, spad), part),
                            in);
  *valid = attn_k_cmpc(b, ATTN_B_SLT, in, part);
}

void attn_k_gemm_tile_coords(struct attn_k_gemm *e, MlirValue t, MlirValue *tm,
                             MlirValue *tn) {
  struct attn_builder *b = e->b;
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
  MlirValue shard, in;
  if (g->comm == ATTN_GEMM_REDUCE_SCATTER) {
    shard = attn_k_remc(b, t, g->world);
    in = attn_k_divc(b, t, g->world);
  } else {
    shard = attn_k_remc(
        b, attn_b_addi(b, e->rank, attn_k_divc(b, t, per_shard)), g->world);
    in = attn_k_remc(b, t, per_shard);
  }
  MlirValue r;
  grouped(e, in, srows, &r, tn);
  *tm = attn_b_addi(b, attn_k_mulc(b, shard, srows), r);
}
