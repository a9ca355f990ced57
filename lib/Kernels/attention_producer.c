//===- attention_producer.c - The Hopper attention kernel's producer ------===//
//
// The producer warpgroup of the attention kernel hopper_attention.c
// assembles:
//
//   thread 0    TMA loads of Q once per tile, then K and V tiles (the
//               tile's key blocks, attn_hopper_key_range) into the
//               `stages`-deep ring of shared-memory buffers, each completing
//               on a "full" mbarrier (with kv_split K on "full" once its
//               slot is empty, V on "vfull" once its own is); with
//               rope_k_ahead it loads K from the
//               workspace k_rot once a block is flagged rotated
//   warps 1-3   RoPE of each K tile in shared memory (fused), then
//               "kready"; or of each tile's Q (q-rope=producer), then
//               "qready"; or, with rope_k_ahead, the team rotating key
//               blocks from a queue shared by all CTAs (rope_ahead.c);
//               rows at explicit positions load theirs (the tile's batch's)
//
// Ops are named "producer" and "rope".
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

/// How long the TMA thread waits for a key block's flag (rope_k_ahead)
/// before the kernel traps: 10 s, far beyond any launch.
#define AHEAD_WAIT_NS 10000000000LL

static MlirValue flip(const struct attn_k_att *a, MlirValue parity) {
  return attn_b_xori(a->b, parity, attn_b_i32(a->b, 1));
}

/// Thread 0: per tile Q, then every key block's K and V.
static void tma_loads(const struct attn_k_att *a, struct attn_k_att_vals *x) {
  const struct attn_hopper_kernel *k = a->k;
  struct attn_builder *b = a->b;
  struct attn_b_for tile_loop;
  attn_k_att_open_tiles(a, x, &tile_loop);
  // Q once per tile, once the consumers are done with the last one's.
  attn_k_mbar_wait(b, x->bar_qempty, flip(a, attn_k_att_q_parity(a, x)));
  attn_k_mbar_expect_tx(b, x->bar_q, (int64_t)k->block_m * k->head_dim * 2);
  for (int r = 0; r < a->regions; ++r) {
    MlirValue c[4] = {attn_b_i32(b, 64 * r), x->q_row, x->h, x->bz};
    attn_k_tma_load(b,
                    attn_k_addc(b, x->sbase,
                                a->q_off + (int64_t)r * k->block_m * 128),
                    x->qmap, c, x->bar_q);
  }
  // rope_k_ahead: once a head's key blocks are all rotated (as they are
  // for most tiles), its tiles load them without a wait per block.
  MlirValue head_done =
      k->rope_k_ahead
          ? attn_k_ahead_head_done(b, k, x->ahead_ctx, x->bz, x->kh)
          : (MlirValue){NULL};
  MlirValue lo = attn_b_index(b, 0), hi = attn_k_to_index(b, x->nkb),
            st = attn_b_index(b, 1);
  struct attn_b_for blocks;
  attn_b_for_open(b, &blocks, lo, hi, st, 0, NULL);
  MlirValue j = attn_k_from_index(b, blocks.iv), ph;
  MlirValue s = attn_k_att_stage_of(a, x, j, &ph);
  attn_k_mbar_wait(b, attn_k_att_bar_at(a, x->bar_empty, s), flip(a, ph));
  MlirValue full = attn_k_att_bar_at(a, x->bar_full, s);
  attn_k_mbar_expect_tx(b, full, (k->kv_split ? 1 : 2) * a->tile_bytes);
  MlirValue kt = attn_k_att_tile_k(a, x, s),
            vt = attn_k_addc(b, kt, a->tile_bytes);
  MlirValue kb = attn_k_att_key_block(a, x, j);
  MlirValue row = attn_k_mulc(b, kb, k->block_n);
  if (k->rope_k_ahead) { // the block's rows in k_rot, once flagged
    struct attn_b_if wait;
    attn_b_if_open(b, &wait,
                   attn_b_xori(b, head_done,
                               attn_b_constant(b, attn_b_attr_bool(b, true))),
                   0, NULL, false);
    attn_k_ahead_wait(b, k, x->ahead_ctx, x->bz, x->kh, kb, AHEAD_WAIT_NS);
    attn_b_if_close(b, &wait, 0, NULL);
  }
  if (k->kv_split) { // K now; V once its own slot is free
    for (int r = 0; r < a->regions; ++r) {
      MlirValue c[4] = {attn_b_i32(b, 64 * r), row, x->kh, x->bz};
      attn_k_tma_load(b, attn_k_addc(b, kt, (int64_t)r * k->block_n * 128),
                      x->kmap, c, full);
    }
    attn_k_mbar_wait(b, attn_k_att_bar_at(a, x->bar_vempty, s), flip(a, ph));
    MlirValue vfull = attn_k_att_bar_at(a, x->bar_vfull, s);
    attn_k_mbar_expect_tx(b, vfull, a->tile_bytes);
    for (int r = 0; r < a->regions; ++r) {
      MlirValue c[4] = {attn_b_i32(b, 64 * r), row, x->kh, x->bz};
      attn_k_tma_load(b, attn_k_addc(b, vt, (int64_t)r * k->block_n * 128),
                      x->vmap, c, vfull);
    }
  } else {
    for (int r = 0; r < a->regions; ++r) {
      MlirValue c[4] = {attn_b_i32(b, 64 * r), row, x->kh, x->bz};
      attn_k_tma_load(b, attn_k_addc(b, kt, (int64_t)r * k->block_n * 128),
                      x->kmap, c, full);
      attn_k_tma_load(b, attn_k_addc(b, vt, (int64_t)r * k->block_n * 128),
                      x->vmap, c, full);
    }
  }
  attn_b_for_close(b, &blocks, 0, NULL);
  attn_k_att_close_tiles(a, x, &tile_loop);
}

/// The explicit positions of the tile's batch (x->bz) of Q (keys false) or
/// K, when k has them; else none (a null base).
static struct attn_k_rope_pos tile_positions(const struct attn_k_att *a,
                                             const struct attn_k_att_vals *x,
                                             bool keys) {
  const struct attn_hopper_kernel *k = a->k;
  struct attn_k_rope_pos pp = {.base = {NULL}};
  if (!(keys ? k->k_positions : k->q_positions))
    return pp;
  pp.len = keys ? k->seq_k : k->seq_q;
  pp.base = attn_k_rope_pos_base(
      a->b, x->caps[keys ? k->k_pos_capture : k->q_pos_capture], x->bz, pp.len);
  return pp;
}

/// Warps 1-3 (q-rope=producer): each tile's Q, all block_m rows, then
/// "qready".
static void rotate_q(const struct attn_k_att *a, struct attn_k_att_vals *x,
                     const struct attn_k_rope_rows *r) {
  const struct attn_hopper_kernel *k = a->k;
  struct attn_builder *b = a->b;
  struct attn_b_for tile_loop;
  attn_k_att_open_tiles(a, x, &tile_loop);
  attn_k_mbar_wait(b, x->bar_q, attn_k_att_q_parity(a, x));
  struct attn_k_rope_pos pp = tile_positions(a, x, false);
  attn_k_rope_rows(b, k, x->smem, attn_b_i32(b, (int)a->q_off), k->block_m,
                   attn_b_i32(b, 0), k->block_m,
                   attn_k_addc(b, x->q_row, k->rope_offset), r, &pp);
  attn_k_fence_proxy_async(b, false);
  attn_k_mbar_arrive(b, x->bar_qready);
  attn_k_att_close_tiles(a, x, &tile_loop);
}

/// Warps 1-3 (fused): every K tile once it has landed, then "kready".
static void rotate_k(const struct attn_k_att *a, struct attn_k_att_vals *x,
                     const struct attn_k_rope_rows *r) {
  const struct attn_hopper_kernel *k = a->k;
  struct attn_builder *b = a->b;
  struct attn_b_for tile_loop;
  attn_k_att_open_tiles(a, x, &tile_loop);
  MlirValue lo = attn_b_index(b, 0), hi = attn_k_to_index(b, x->nkb),
            st = attn_b_index(b, 1);
  struct attn_b_for blocks;
  attn_b_for_open(b, &blocks, lo, hi, st, 0, NULL);
  MlirValue j = attn_k_from_index(b, blocks.iv), ph;
  MlirValue s = attn_k_att_stage_of(a, x, j, &ph);
  attn_k_mbar_wait(b, attn_k_att_bar_at(a, x->bar_full, s), ph);
  MlirValue base =
      attn_k_addc(b, attn_k_mulc(b, s, 2 * a->tile_bytes), a->kv_off);
  MlirValue pos0 = attn_k_addc(
      b, attn_k_mulc(b, attn_k_att_key_block(a, x, j), k->block_n),
      k->rope_offset_k);
  struct attn_k_rope_pos pp = tile_positions(a, x, true);
  attn_k_rope_rows(b, k, x->smem, base, k->block_n, attn_b_i32(b, 0),
                   k->block_n, pos0, r, &pp);
  attn_k_fence_proxy_async(b, false);
  attn_k_mbar_arrive(b, attn_k_att_bar_at(a, x->bar_kready, s));
  attn_b_for_close(b, &blocks, 0, NULL);
  attn_k_att_close_tiles(a, x, &tile_loop);
}

void attn_k_att_producer(const struct attn_k_att *a,
                         const struct attn_k_att_vals *tiles_in, MlirValue wt) {
  const struct attn_hopper_kernel *k = a->k;
  struct attn_builder *b = a->b;
  attn_builder_role(b, "producer");
  struct attn_k_att_vals tiles = *tiles_in;
  if (k->rope_k_ahead) {
    int64_t g[3];
    attn_hopper_grid(k, g);
    attn_builder_role(b, "rope");
    tiles.ahead_first =
        attn_k_ahead_start(b, k, tiles.ahead_ctx, wt, tiles.sync,
                           tiles.kraw_map, tiles.kmap, g[0] * g[1] * g[2]);
    attn_builder_role(b, "producer");
  }
  MlirValue is_tma = attn_k_cmpc(b, ATTN_B_EQ, wt, 0);
  struct attn_b_if tma;
  attn_b_if_open(b, &tma, is_tma, 0, NULL, k->rope_k_ahead);
  struct attn_k_att_vals t = tiles;
  tma_loads(a, &t);
  if (k->rope_k_ahead) {
    // The team in the TMA branch's else, so that its constants are not
    // kept (in registers) across the TMA thread's loop.
    attn_b_if_else(b, &tma, 0, NULL);
    struct attn_b_if team;
    attn_b_if_open(b, &team, attn_k_cmpc(b, ATTN_B_UGE, wt, 32), 0, NULL,
                   false);
    attn_builder_role(b, "rope");
    attn_k_rope_ahead(b, k, attn_k_addc(b, wt, -32), tiles.smem, tiles.sbase,
                      a->ahead_off, tiles.ahead_ctx, tiles.ahead_first,
                      k->k_positions ? tiles.caps[k->k_pos_capture]
                                     : (MlirValue){NULL});
    attn_builder_role(b, "producer");
    attn_b_if_close(b, &team, 0, NULL);
    attn_b_if_close(b, &tma, 0, NULL);
    return;
  }
  attn_b_if_close(b, &tma, 0, NULL);
  if (!attn_hopper_producer_rotates(k))
    return;
  MlirValue is_rot = attn_k_cmpc(b, ATTN_B_UGE, wt, 32);
  struct attn_b_if rot;
  attn_b_if_open(b, &rot, is_rot, 0, NULL, false);
  attn_builder_role(b, "rope");
  struct attn_k_rope_rows r;
  attn_k_rope_rows_setup(b, k, attn_k_addc(b, wt, -32), 96, &r);
  // Explicit positions: each row's cos/sin from its own, by the MUFU.
  if (attn_hopper_q_by_producer(k) ? k->q_positions : k->k_positions)
    attn_k_rope_rows_turns(b, &r);
  t = tiles;
  if (attn_hopper_q_by_producer(k))
    rotate_q(a, &t, &r);
  else
    rotate_k(a, &t, &r);
  attn_builder_role(b, "producer");
  attn_b_if_close(b, &rot, 0, NULL);
}
