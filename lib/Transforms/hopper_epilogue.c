//===- hopper_epilogue.c - How the Hopper attention kernel writes O -------===//
//
// The end of a tile in hopper_emit.c's consumer warpgroups, once the last
// P V has landed: l summed across the quad (unless the tensor cores summed
// the rows), O normalised, and the warpgroup's 64 rows written (those <
// seq_q), in one of two ways:
//
//   registers  (the default) from the accumulators. A thread holds two
//              columns of each 8-column chunk of its rows, so the four
//              lanes of a row transpose their words of four chunks
//              (attn_ptx_quad_transpose) and each lane stores one chunk's
//              16 bytes.
//   staged     (k->staged_out) into the warpgroup's rows in shared memory,
//              then threads 0-63 each hand one row to the bulk-copy engine
//              (hopper_ptx.h's staged output rows) and go on.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/hopper_emit.h"
#include "lib/Transforms/hopper_ptx.h"

/// Byte offset in out (i64) of query row grow (i32) of head bh.
static int row_bytes(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                     int bh, int grow) {
  int rowi =
      attn_ptx_op(p, "arith.extui %%v%d : i32 to i64",
                  attn_ptx_addi(p, attn_ptx_mulc(p, bh, k->seq_q), grow));
  return attn_ptx_op(p, "arith.muli %%v%d, %%v%d : i64", rowi,
                     attn_ptx_ci64(p, k->head_dim * 2));
}

static int out_ptr(struct attn_ptx *p, const struct attn_hopper_out *o,
                   int off) {
  return attn_ptx_op(p,
                     "llvm.getelementptr %%v%d[%%v%d] : (!llvm.ptr, i64) -> "
                     "!llvm.ptr, i8",
                     o->out, off);
}

static void registers_out(struct attn_ptx *p,
                          const struct attn_hopper_kernel *k,
                          const struct attn_hopper_out *o, const int *ov,
                          int no, const int inv[2], int bh) {
  int chunks = no / 4; // 8-column chunks of a row
  for (int r = 0; r < 2; ++r) {
    int grow = attn_ptx_addc(p, o->row0, 8 * r);
    int ok = attn_ptx_cmpc(p, "ult", grow, k->seq_q);
    int rowb = row_bytes(p, k, bh, grow);
    // Every lane of the quad shuffles (same row); the stores are predicated
    // on the row's test (a branch around them cost registers, and spills,
    // in the persistent kernel with three consumers).
    for (int g = 0; g < chunks / 4; ++g) {
      int w[4];
      for (int t = 0; t < 4; ++t) {
        int idx = 4 * (4 * g + t) + 2 * r; // row r's registers of the chunk
        w[t] = attn_ptx_pack2(p, attn_ptx_fmul(p, ov[idx], inv[r]),
                              attn_ptx_fmul(p, ov[idx + 1], inv[r]));
      }
      attn_ptx_quad_transpose(p, o->lr, w);
      int col = attn_ptx_addc(p, o->lr, 4 * g); // this lane's chunk
      int colb = attn_ptx_op(p, "arith.extui %%v%d : i32 to i64",
                             attn_ptx_mulc(p, col, 16));
      int off = attn_ptx_op(p, "arith.addi %%v%d, %%v%d : i64", rowb, colb);
      attn_ptx_store16_if(p, w, out_ptr(p, o, off), ok);
    }
  }
}

void attn_hopper_out_rows(struct attn_ptx *p, const struct attn_hopper_out *o,
                          struct attn_ptx_rows *r) {
  int rows = attn_ptx_addc(p, o->sbase, o->staging_off);
  *r = (struct attn_ptx_rows){
      .base = attn_ptx_addi(p, rows, attn_ptx_mulc(p, o->cw, 64 * o->pitch)),
      .wt = o->wt,
      .bar = attn_ptx_addc(p, o->cw, 1),
      .pitch = o->pitch};
}

/// Once the previous tile's copies have read the warpgroup's rows, this
/// thread's normalised words of O go into them, and thread r < 64 copies row
/// r if it is a query row. The kernel waits for the last copies before it
/// ends.
static void staged_out(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                       const struct attn_hopper_out *o, const int *ov, int no,
                       const int inv[2], int bh) {
  struct attn_ptx_rows r;
  attn_hopper_out_rows(p, o, &r);
  attn_ptx_rows_drain(p, &r, ATTN_PTX_DRAIN_READ, true);
  attn_ptx_rows_put(p, &r, ov, no, inv);
  attn_ptx_rows_ready(p, &r);
  attn_ptx_rows_copy_open(p, &r);
  int grow = attn_ptx_addi(p, o->wg_row, o->wt);
  attn_ptx_line(p, "scf.if %%v%d {", attn_ptx_cmpc(p, "ult", grow, k->seq_q));
  int off = row_bytes(p, k, bh, grow);
  int dst = attn_ptx_op(p, "llvm.ptrtoint %%v%d : !llvm.ptr to i64",
                        out_ptr(p, o, off));
  attn_ptx_rows_copy_n(p, &r, dst, k->head_dim * 2);
  attn_ptx_line(p, "}");
  attn_ptx_rows_copy_close(p);
}

void attn_hopper_emit_out(struct attn_ptx *p,
                          const struct attn_hopper_kernel *k,
                          const struct attn_hopper_out *o, const int *ov,
                          int no, const int l[2]) {
  int inv[2];
  for (int r = 0; r < 2; ++r) {
    int lsum = l[r]; // row_sum_mma's is the whole row's already
    if (!k->row_sum_mma) {
      lsum = attn_ptx_fadd(p, lsum, attn_ptx_shfl_xor(p, lsum, 1));
      lsum = attn_ptx_fadd(p, lsum, attn_ptx_shfl_xor(p, lsum, 2));
    }
    int empty =
        attn_ptx_op(p, "arith.cmpf oeq, %%v%d, %%v%d : f32", lsum, o->zero);
    int q = attn_ptx_rcp(p, lsum);
    inv[r] = attn_ptx_sel(p, empty, o->zero, q, "f32"); // no keys: O = 0
  }
  int bh = attn_ptx_addi(p, attn_ptx_mulc(p, o->b, k->heads), o->h);
  if (k->staged_out)
    staged_out(p, k, o, ov, no, inv, bh);
  else
    registers_out(p, k, o, ov, no, inv, bh);
}
