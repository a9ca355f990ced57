//===- attention_pipeline.c - The Hopper attention kernel's shared state --===//
//
// What the roles of the attention kernel (hopper_attention.c) share: its
// shared-memory layout, which warps rotate what, and the walk over a CTA's
// tiles and the K/V ring of `stages` buffers with their mbarriers.
//
// Shared-memory tiles use the 128-byte swizzle that TMA writes and wgmma
// reads: a tile of R rows and D columns is D/64 regions of R rows x 128 B.
// From the 1024-aligned base: Q, the K/V ring (K then V per stage), with
// row_sum_mma an atom of ones, the mbarriers (qfull, qempty and qready, then
// full, kready and empty per stage, and with kv_split vfull and vempty per
// stage: full and empty are then K's alone), the consumers' stash of RoPE
// constants, O's staging rows, and the ahead team's buffers and context.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/Dialect/LLVM.h"

#include <stdio.h>

//===-- Layout ------------------------------------------------------------===//

/// Bytes of the consumers' stash of RoPE constants (attn_hopper_stashes_rope).
static int64_t stash_bytes(const struct attn_hopper_kernel *k) {
  return attn_hopper_stashes_rope(k)
             ? ATTN_K_ATT_STASH_BYTES * 128 * k->consumers
             : 0;
}

void attn_k_att_layout(struct attn_k_att *a, struct attn_builder *b,
                       const struct attn_hopper_kernel *k) {
  *a = (struct attn_k_att){.b = b, .k = k};
  a->ns = k->block_n / 2;
  a->no = (int)k->head_dim / 2;
  a->na = a->no + (k->row_sum_mma ? 4 : 0);
  a->regions = (int)k->head_dim / 64;
  a->q_off = 0;
  a->kv_off = (int64_t)k->block_m * k->head_dim * 2;
  a->tile_bytes = (int64_t)k->block_n * k->head_dim * 2;
  // row_sum_mma's B: one 128-byte-swizzled atom (8 rows of 64) of ones.
  a->ones_off = a->kv_off + 2 * a->tile_bytes * k->stages;
  a->bar_off = a->ones_off + (k->row_sum_mma ? 1024 : 0);
  a->stash_off = a->bar_off + 24 + (k->kv_split ? 40 : 24) * k->stages;
  // O's staging rows after the stash.
  a->pitch = attn_k_rows_pitch(k->head_dim * 2);
  a->staging_off = (a->stash_off + stash_bytes(k) + 127) / 128 * 128;
  a->end = k->staged_out ? a->staging_off + 64LL * k->consumers * a->pitch
                         : a->stash_off + stash_bytes(k);
  if (k->rope_k_ahead) {
    a->ahead_off = (a->end + 1023) / 1024 * 1024;
    a->ahead_ctx_off = a->ahead_off + 2 * a->tile_bytes;
    a->end = a->ahead_ctx_off + attn_hopper_ahead_ctx_bytes();
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
  struct attn_k_att a;
  attn_k_att_layout(&a, NULL, k);
  // The layout's end plus slack to align the base to 1024 bytes at run
  // time.
  return a.end + 1024;
}

//===-- The tiles and the ring --------------------------------------------===//

/// Entry i (i32) of the i32 global @<k->name><suffix>: an invariant load
/// from global memory.
static MlirValue load_global(struct attn_builder *b,
                             const struct attn_hopper_kernel *k,
                             const char *suffix, MlirValue i) {
  char name[320];
  snprintf(name, sizeof name, "%s%s", k->name, suffix);
  MlirValue base =
      attn_k_addressof(b, name, mlirLLVMPointerTypeGet(b->ctx, 1));
  MlirValue ptr = attn_k_gep_elem(b, base, i, b->t.i32);
  MlirNamedAttribute la = attn_b_named(b, "invariant", attn_b_attr_unit(b));
  return attn_b_op1(b, "llvm.load", b->t.i32, 1, &ptr, 1, &la);
}

/// Entry i (i32) of the persistent schedule @<name>__tiles.
static MlirValue load_tile(const struct attn_k_att *a, MlirValue i) {
  return load_global(a->b, a->k, "__tiles", i);
}

MlirValue attn_k_key_table_load(struct attn_builder *b,
                                const struct attn_hopper_kernel *k,
                                MlirValue qb, int e) {
  return load_global(b, k, "__keys", attn_k_addc(b, attn_k_mulc(b, qb, 4), e));
}

void attn_k_att_open_tiles(const struct attn_k_att *a,
                           struct attn_k_att_vals *x, struct attn_b_for *loop) {
  struct attn_builder *b = a->b;
  const struct attn_hopper_kernel *k = a->k;
  int64_t nq = attn_hopper_query_blocks(k);
  MlirValue qb;
  if (!k->persistent_ctas) {
    x->kc = x->qn = attn_b_i32(b, 0);
    // Longest causal query blocks first: block x runs query block gx-1-x.
    qb = attn_b_subi(b, attn_k_addc(b, x->gx, -1), x->bx);
    x->h = attn_k_sreg(b, "ctaid.y");
    x->bz = attn_k_sreg(b, "ctaid.z");
  } else {
    MlirValue zero = attn_b_i32(b, 0);
    MlirValue init[2] = {zero, zero};
    int64_t g[3];
    attn_hopper_grid(k, g);
    MlirValue lo = attn_k_to_index(b, load_tile(a, x->bx)),
              hi = attn_k_to_index(b, load_tile(a, attn_k_addc(b, x->bx, 1))),
              st = attn_b_index(b, 1);
    attn_b_for_open(b, loop, lo, hi, st, 2, init);
    x->kc = loop->args[0];
    x->qn = loop->args[1];
    MlirValue i = attn_k_from_index(b, loop->iv);
    MlirValue t = load_tile(a, attn_k_addc(b, i, g[0] + 1));
    MlirValue hb = attn_k_divc(b, t, nq);
    qb = attn_b_subi(b, attn_b_i32(b, nq - 1), attn_k_remc(b, t, nq));
    x->h = attn_k_remc(b, hb, k->heads);
    x->bz = attn_k_divc(b, hb, k->heads);
  }
  x->q_row = attn_k_mulc(b, qb, k->block_m);
  int64_t shift = attn_hopper_query_shift(k);
  if (shift)
    x->q_row = attn_k_addc(b, x->q_row, -shift);
  x->kh = attn_k_divc(b, x->h, k->heads / k->kv_heads);
  int64_t blocks = attn_hopper_key_blocks(k);
  x->kff = x->kfl = x->klist = (MlirValue){NULL};
  if (k->key_lists) { // the run-time lists (key_lists.c)
    MlirValue bt = k->key_lists_batch > 1 ? x->bz : attn_b_i32(b, 0);
    MlirValue ht = k->key_lists_heads > 1 ? x->h : attn_b_i32(b, 0);
    MlirValue row = attn_b_addi(
        b,
        attn_k_mulc(b, attn_b_addi(b, attn_k_mulc(b, bt, k->key_lists_heads),
                                   ht),
                    nq),
        qb);
    MlirValue at = attn_k_gep_elem(b, x->key_lists,
                                   attn_k_mulc(b, row, blocks + 1), b->t.i32);
    x->kb0 = (MlirValue){NULL};
    x->nkb = attn_k_load(b, at, b->t.i32);
    x->klist = attn_k_gep_elem(b, at, attn_b_i32(b, 1), b->t.i32);
    return;
  }
  if (k->key_blocks) { // the affine masks' bounds and the mask functions'
    x->kb0 = attn_k_key_table_load(b, k, qb, 0);
    x->nkb = attn_b_subi(b, attn_k_key_table_load(b, k, qb, 1), x->kb0);
    x->kff = attn_k_key_table_load(b, k, qb, 2);
    x->kfl = attn_k_key_table_load(b, k, qb, 3);
    return;
  }
  x->nkb = attn_b_i32(b, blocks);
  if (k->causal) {
    MlirValue last = attn_k_addc(b, x->q_row, k->block_m);
    MlirValue diag = attn_b_ceildivui(b, last, attn_b_i32(b, k->block_n));
    x->nkb = attn_b_minui(b, diag, x->nkb);
  }
  // A window: keys to q + right, from the block of the first row's q - left
  // (attn_hopper_key_range); nkb counts the blocks from there.
  x->kb0 = (MlirValue){NULL};
  if (k->window && k->window_right >= 0) {
    MlirValue last =
        attn_k_addc(b, x->q_row, k->block_m + k->window_right);
    MlirValue edge = attn_b_ceildivui(b, last, attn_b_i32(b, k->block_n));
    x->nkb = attn_b_minui(b, edge, x->nkb);
  }
  if (k->window && k->window_left >= 0) {
    MlirValue lo = attn_b_binary(b, "arith.maxsi",
                                 attn_k_addc(b, x->q_row, -k->window_left),
                                 attn_b_i32(b, 0));
    x->kb0 = attn_b_minui(b, attn_k_divc(b, lo, k->block_n),
                          attn_k_addc(b, x->nkb, -1));
    x->nkb = attn_b_subi(b, x->nkb, x->kb0);
  }
}

MlirValue attn_k_att_key_entry(const struct attn_k_att *a,
                               const struct attn_k_att_vals *x, MlirValue j,
                               MlirValue *full) {
  struct attn_builder *b = a->b;
  if (full)
    *full = (MlirValue){NULL};
  if (mlirValueIsNull(x->klist))
    return mlirValueIsNull(x->kb0) ? j : attn_b_addi(b, x->kb0, j);
  MlirValue e =
      attn_k_load(b, attn_k_gep_elem(b, x->klist, j, b->t.i32), b->t.i32);
  if (full)
    *full = attn_k_cmpc(b, ATTN_B_NE, attn_k_andc(b, e, 1), 0);
  return attn_b_binary(b, "arith.shrui", e, attn_b_i32(b, 1));
}

MlirValue attn_k_att_key_block(const struct attn_k_att *a,
                               const struct attn_k_att_vals *x, MlirValue j) {
  return attn_k_att_key_entry(a, x, j, NULL);
}

void attn_k_att_close_tiles(const struct attn_k_att *a,
                            const struct attn_k_att_vals *x,
                            struct attn_b_for *loop) {
  if (!a->k->persistent_ctas)
    return;
  // The next tile's tile count first, then its key blocks (the text's
  // order).
  MlirValue qn = attn_k_addc(a->b, x->qn, 1);
  MlirValue next[2] = {attn_b_addi(a->b, x->kc, x->nkb), qn};
  attn_b_for_close(a->b, loop, 2, next);
}

MlirValue attn_k_att_stage_of(const struct attn_k_att *a,
                              const struct attn_k_att_vals *x, MlirValue j,
                              MlirValue *phase) {
  struct attn_builder *b = a->b;
  MlirValue g = attn_b_addi(b, x->kc, j);
  MlirValue s = attn_k_remc(b, g, a->k->stages);
  *phase =
      attn_b_andi(b, attn_k_divc(b, g, a->k->stages), attn_b_i32(b, 1));
  return s;
}

MlirValue attn_k_att_q_parity(const struct attn_k_att *a,
                              const struct attn_k_att_vals *x) {
  return attn_b_andi(a->b, x->qn, attn_b_i32(a->b, 1));
}

MlirValue attn_k_att_bar_at(const struct attn_k_att *a, MlirValue base,
                            MlirValue s) {
  return attn_b_addi(a->b, base, attn_k_mulc(a->b, s, 8));
}

MlirValue attn_k_att_tile_k(const struct attn_k_att *a,
                            const struct attn_k_att_vals *x, MlirValue s) {
  return attn_b_addi(a->b, attn_k_addc(a->b, x->sbase, a->kv_off),
                     attn_k_mulc(a->b, s, 2 * a->tile_bytes));
}
