//===- attention_epilogue.c - How the Hopper attention kernel writes O ----===//
//
// The end of a tile in the attention kernel's consumer warpgroups
// (attention_consumer.c), once the last P V has landed: l summed across the
// quad (unless the tensor cores summed the rows), O normalised, and the
// warpgroup's 64 rows written (those < seq_q), in one of two ways:
//
//   registers  (the default) from the accumulators. A thread holds two
//              columns of each 8-column chunk of its rows, so the four
//              lanes of a row transpose their words of four chunks
//              (attn_k_quad_transpose) and each lane stores one chunk's
//              16 bytes.
//   staged     (k->staged_out) into the warpgroup's rows in shared memory,
//              then threads 0-63 each hand one row to the bulk-copy engine
//              (staged_rows.c) and go on.
//
// With lse (the forward of a backward), lane 0 of each quad then writes its
// two rows' log-sum-exp, from the final maxima and the sums just made.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

/// Byte offset in out (i64) of query row grow (i32) of head bh.
static MlirValue row_bytes(struct attn_builder *b,
                           const struct attn_hopper_kernel *k, MlirValue bh,
                           MlirValue grow) {
  MlirValue rowi =
      attn_k_i64_of(b, attn_b_addi(b, attn_k_mulc(b, bh, k->seq_q), grow));
  return attn_b_muli(b, rowi, attn_b_i64(b, k->head_dim * 2));
}

static MlirValue out_ptr(struct attn_builder *b,
                         const struct attn_k_att_out *o, MlirValue off) {
  return attn_k_gep(b, o->out, off);
}

static void registers_out(struct attn_builder *b,
                          const struct attn_hopper_kernel *k,
                          const struct attn_k_att_out *o, const MlirValue *ov,
                          int no, const MlirValue inv[2], MlirValue bh) {
  int chunks = no / 4; // 8-column chunks of a row
  for (int r = 0; r < 2; ++r) {
    MlirValue grow = attn_k_addc(b, o->row0, 8 * r);
    MlirValue ok = attn_k_cmpc(b, ATTN_B_ULT, grow, k->seq_q);
    MlirValue rowb = row_bytes(b, k, bh, grow);
    // Every lane of the quad shuffles (same row); the stores are predicated
    // on the row's test (a branch around them cost registers, and spills,
    // in the persistent kernel with three consumers).
    for (int g = 0; g < chunks / 4; ++g) {
      MlirValue w[4];
      for (int t = 0; t < 4; ++t) {
        int idx = 4 * (4 * g + t) + 2 * r; // row r's registers of the chunk
        w[t] = attn_k_pack2(b, k->bf16, attn_b_mulf(b, ov[idx], inv[r]),
                            attn_b_mulf(b, ov[idx + 1], inv[r]));
      }
      attn_k_quad_transpose(b, o->lr, w);
      MlirValue col = attn_k_addc(b, o->lr, 4 * g); // this lane's chunk
      MlirValue colb = attn_k_i64_of(b, attn_k_mulc(b, col, 16));
      MlirValue off = attn_b_addi(b, rowb, colb);
      attn_k_store16_if(b, w, out_ptr(b, o, off), ok);
    }
  }
}

void attn_k_att_out_rows(struct attn_builder *b, const struct attn_k_att_out *o,
                         struct attn_k_rows *r) {
  MlirValue rows = attn_k_addc(b, o->sbase, o->staging_off);
  *r = (struct attn_k_rows){
      .base = attn_b_addi(b, rows, attn_k_mulc(b, o->cw, 64 * o->pitch)),
      .wt = o->wt,
      .bar = attn_k_addc(b, o->cw, 1),
      .pitch = o->pitch};
}

/// Once the previous tile's copies have read the warpgroup's rows, this
/// thread's normalised words of O go into them, and thread r < 64 copies row
/// r if it is a query row. The kernel waits for the last copies before it
/// ends.
static void staged_out(struct attn_builder *b,
                       const struct attn_hopper_kernel *k,
                       const struct attn_k_att_out *o, const MlirValue *ov,
                       int no, const MlirValue inv[2], MlirValue bh) {
  struct attn_k_rows r;
  attn_k_att_out_rows(b, o, &r);
  attn_k_rows_drain(b, &r, ATTN_K_DRAIN_READ, true);
  attn_k_rows_put(b, k->bf16, &r, ov, no, inv);
  attn_k_rows_ready(b, &r);
  struct attn_b_if copier, row;
  attn_k_rows_copy_open(b, &r, &copier);
  MlirValue grow = attn_b_addi(b, o->wg_row, o->wt);
  attn_b_if_open(b, &row, attn_k_cmpc(b, ATTN_B_ULT, grow, k->seq_q), 0, NULL,
                 false);
  MlirValue off = row_bytes(b, k, bh, grow);
  MlirValue dst = attn_k_ptrtoint(b, out_ptr(b, o, off), b->t.i64);
  attn_k_rows_copy_n(b, &r, dst, k->head_dim * 2);
  attn_b_if_close(b, &row, 0, NULL);
  attn_k_rows_copy_close(b, &copier);
}

/// Lane 0 of the quad writes the log-sum-exp of its rows row0 and row0 + 8
/// (those < seq_q) from their final maxima m and whole sums lsum: one f32
/// each at lse[bh, row].
static void lse_out(struct attn_builder *b, const struct attn_hopper_kernel *k,
                    const struct attn_k_att_out *o, const MlirValue m[2],
                    const MlirValue lsum[2], MlirValue bh) {
  MlirValue lane0 = attn_k_cmpc(b, ATTN_B_EQ, o->lr, 0);
  for (int r = 0; r < 2; ++r) {
    MlirValue grow = attn_k_addc(b, o->row0, 8 * r);
    MlirValue ok =
        attn_b_andi(b, lane0, attn_k_cmpc(b, ATTN_B_ULT, grow, k->seq_q));
    MlirValue rowi =
        attn_k_i64_of(b, attn_b_addi(b, attn_k_mulc(b, bh, k->seq_q), grow));
    MlirValue ptr =
        attn_k_gep(b, o->lse, attn_b_muli(b, rowi, attn_b_i64(b, 4)));
    attn_k_store_f32_if(b, attn_k_row_lse(b, m[r], lsum[r]), ptr, ok);
  }
}

void attn_k_att_out(struct attn_builder *b, const struct attn_hopper_kernel *k,
                    const struct attn_k_att_out *o, const MlirValue *ov, int no,
                    const MlirValue m[2], const MlirValue l[2]) {
  MlirValue inv[2], lsum[2];
  for (int r = 0; r < 2; ++r) {
    lsum[r] = l[r]; // row_sum_mma's is the whole row's already
    if (!k->row_sum_mma) {
      lsum[r] = attn_b_addf(b, lsum[r], attn_k_shfl_xor(b, lsum[r], 1));
      lsum[r] = attn_b_addf(b, lsum[r], attn_k_shfl_xor(b, lsum[r], 2));
    }
    MlirValue empty = attn_b_cmpf(b, ATTN_B_F_OEQ, lsum[r], o->zero);
    MlirValue q = attn_k_rcp(b, lsum[r]);
    inv[r] = attn_b_select(b, empty, o->zero, q); // no keys: O = 0
  }
  MlirValue bh = attn_b_addi(b, attn_k_mulc(b, o->bz, k->heads), o->h);
  if (k->staged_out)
    staged_out(b, k, o, ov, no, inv, bh);
  else
    registers_out(b, k, o, ov, no, inv, bh);
  if (k->lse)
    lse_out(b, k, o, m, lsum, bh);
}
