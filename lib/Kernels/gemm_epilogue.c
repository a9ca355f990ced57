//===- gemm_epilogue.c - How the Hopper GEMM writes its tiles -------------===//
//
// The epilogue of hopper_gemm.c's consumer warpgroups, once a tile's
// accumulators are final:
//
//   staged     (g->staged) the warpgroup's 64 rows go into shared memory
//              and threads 0-63 each hand one row to the bulk-copy engine
//              (staged_rows.c), then the warpgroup goes on to its next
//              tile. A fused reduce pattern posts the tile at the
//              warpgroup's next epilogue, once the copies have landed, to a
//              signaler thread of the producer warpgroup, which counts it
//              at its owner: no consumer waits for NVLink or for a
//              system-scope release.
//   registers  4-byte stores straight from the accumulators, masked on
//              tail tiles; it can first read C (accumulate), rotate the
//              output (RoPE, gemm_rope.c) and store in the heads layout of
//              a projection.
//   partial    (split K, gemm_reduce.c sums them) the unit's f32 sums,
//              8-byte stores into its slice of the workspace, masked the
//              same way.
//
// Fused reduce patterns write into this rank's slot of the tile's owner
// (gemm_comm.c) instead of C.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"

#include <stdint.h>

static bool reduces(const struct attn_hopper_gemm *g) {
  return g->comm == ATTN_GEMM_ALL_REDUCE || g->comm == ATTN_GEMM_REDUCE_SCATTER;
}

/// Opens the stores of row `row` (i32) of the tile and returns C's row for
/// it: the row itself, except that all-gather, which writes C itself, maps
/// its padded rows (attn_hopper_gemm's m_rows) to C's and opens an scf.if
/// (s) that skips the padding ones; *open says whether close_c_row must
/// close it.
static MlirValue open_c_row(struct attn_k_gemm *e, MlirValue row,
                            struct attn_b_if *s, bool *open) {
  MlirValue valid = {NULL};
  if (e->g->comm == ATTN_GEMM_ALL_GATHER)
    attn_k_gemm_real_row(e, row, false, &row, &valid);
  *open = !mlirValueIsNull(valid);
  if (*open)
    attn_b_if_open(e->b, s, valid, 0, NULL, false);
  return row;
}

static void close_c_row(struct attn_k_gemm *e, struct attn_b_if *s, bool open) {
  if (open)
    attn_b_if_close(e->b, s, 0, NULL);
}

/// Byte address of element (row, col) of C, i32 row and column: row-major,
/// or in the heads layout of a projection (out_seq, out_head_dim).
static MlirValue c_addr(struct attn_k_gemm *e, MlirValue row, MlirValue col) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_gemm *g = e->g;
  if (g->out_seq) {
    // ((b * H + h) * S + t) * D + d with b, t = row / S, row % S and h, d =
    // col / D, col % D; an 8-column chunk never crosses a head (D % 8 == 0).
    int64_t S = g->out_seq, D = g->out_head_dim, H = g->n / D;
    MlirValue bh = attn_b_addi(b, attn_k_mulc(b, attn_k_divc(b, row, S), H),
                               attn_k_divc(b, col, D));
    MlirValue head_row = attn_k_i64_of(
        b, attn_b_addi(b, attn_k_mulc(b, bh, S), attn_k_remc(b, row, S)));
    MlirValue off = attn_b_addi(
        b, attn_b_muli(b, head_row, attn_b_i64(b, D * 2)),
        attn_k_i64_of(b, attn_k_mulc(b, attn_k_remc(b, col, D), 2)));
    return attn_k_gep(b, e->out, off);
  }
  MlirValue rowb =
      attn_b_muli(b, attn_k_i64_of(b, row), attn_b_i64(b, e->g->n * 2));
  MlirValue colb = attn_k_i64_of(b, attn_k_mulc(b, col, 2));
  return attn_k_gep(b, e->out, attn_b_addi(b, rowb, colb));
}

/// llvm.getelementptr of f32 at p[idx] (idx an i64).
static MlirValue gep_f32(struct attn_builder *b, MlirValue p, MlirValue idx) {
  int32_t raw = INT32_MIN; // a dynamic index
  MlirNamedAttribute a[] = {
      attn_b_named(b, "elem_type", attn_b_attr_type(b, b->t.f32)),
      attn_b_named(b, "rawConstantIndices",
                   mlirDenseI32ArrayGet(b->ctx, 1, &raw)),
  };
  MlirValue opd[] = {p, idx};
  if (mlirValueIsNull(p)) {
    attn_b_unary(b, "llvm.getelementptr", p); // reports the missing operand
    return (MlirValue){NULL};
  }
  return attn_b_op1(b, "llvm.getelementptr", mlirValueGetType(p), 2, opd, 2, a);
}

//===-- The staged epilogue -----------------------------------------------===//

/// Warpgroup cw's staging rows.
static struct attn_k_rows staging_rows(struct attn_k_gemm *e, MlirValue cw,
                                       MlirValue wt) {
  struct attn_builder *b = e->b;
  MlirValue base = attn_b_addi(b, attn_k_addc(b, e->sbase, e->staging_off),
                               attn_k_mulc(b, cw, 64 * e->pitch));
  MlirValue bar = attn_k_addc(b, cw, 1);
  struct attn_k_rows r = {
      .base = base, .wt = wt, .bar = bar, .pitch = e->pitch};
  return r;
}

/// Shared pointer of warpgroup cw's pending tile (fused reduce patterns):
/// t + 1 for a tile whose copies may still be in flight, 0 for none.
static MlirValue pending_ptr(struct attn_k_gemm *e, MlirValue cw) {
  struct attn_builder *b = e->b;
  return attn_k_smem_ptr(b, e->smem,
                         attn_k_addc(b, attn_k_mulc(b, cw, 4), e->pending_off));
}

//===-- Mailboxes: the signalers count landed tiles -----------------------===//

/// Shared address (i32) of warpgroup cw's mbarrier `which` (0: posted,
/// 1: taken).
static MlirValue mail_bar(struct attn_k_gemm *e, int which, MlirValue cw) {
  struct attn_builder *b = e->b;
  return attn_b_addi(b, attn_k_addc(b, e->sbase, e->mail_off + 16 * which),
                     attn_k_mulc(b, cw, 8));
}

/// Shared pointer of warpgroup cw's word `which`: 0, its box (the posted
/// tile + 1; 0: no more), or 1, its count of posts.
static MlirValue mail_word(struct attn_k_gemm *e, int which, MlirValue cw) {
  struct attn_builder *b = e->b;
  return attn_k_smem_ptr(
      b, e->smem,
      attn_k_addc(b, attn_k_mulc(b, cw, 4), e->mail_off + 32 + 8 * which));
}

void attn_k_gemm_mail_init(struct attn_k_gemm *e) {
  for (int which = 0; which < 2; ++which)
    for (int cw = 0; cw < 2; ++cw)
      attn_k_mbar_init(e->b, mail_bar(e, which, attn_b_i32(e->b, cw)), 1);
}

/// One thread of warpgroup cw: posts v (a tile + 1, or 0 for the end) to
/// its signaler once the signaler has taken the previous post (post k
/// completes phase k of `posted`, its taking phase k of `taken`).
static void post(struct attn_k_gemm *e, MlirValue cw, MlirValue v) {
  struct attn_builder *b = e->b;
  MlirValue count = mail_word(e, 1, cw);
  MlirValue k = attn_k_load(b, count, b->t.i32);
  struct attn_b_if s;
  attn_b_if_open(b, &s, attn_k_cmpc(b, ATTN_B_NE, k, 0), 0, NULL, false);
  attn_k_mbar_wait(b, mail_bar(e, 1, cw),
                   attn_b_andi(b, attn_k_addc(b, k, -1), attn_b_i32(b, 1)));
  attn_b_if_close(b, &s, 0, NULL);
  attn_k_store(b, v, mail_word(e, 0, cw));
  attn_k_mbar_arrive(b, mail_bar(e, 0, cw));
  attn_k_store(b, attn_k_addc(b, k, 1), count);
}

void attn_k_gemm_signaler(struct attn_k_gemm *e, MlirValue wt) {
  struct attn_builder *b = e->b;
  attn_builder_role(b, "gemm.signaler");
  // Threads 32 and 64 serve consumers 0 and 1: each takes its consumer's
  // posts in order until the end and counts each tile at its owner. The
  // consumer's barrier after its copies landed, then the mbarrier's release
  // (arrive) and acquire (wait), order the tile's rows before the count's
  // system-scope release, which is cumulative.
  struct attn_b_if s;
  attn_b_if_open(b, &s,
                 attn_b_ori(b, attn_k_cmpc(b, ATTN_B_EQ, wt, 32),
                            attn_k_cmpc(b, ATTN_B_EQ, wt, 64)),
                 0, NULL, false);
  attn_k_gemm_comm_consumer_init(e);
  attn_builder_role(b, "gemm.signaler");
  MlirValue cw = attn_k_addc(b, attn_k_divc(b, wt, 32), -1);
  MlirType i32x2[2] = {b->t.i32, b->t.i32};
  struct attn_k_while w;
  attn_k_while_open(b, &w, attn_b_i32(b, 0), 2, i32x2);
  attn_k_mbar_wait(b, mail_bar(e, 0, cw),
                   attn_b_andi(b, w.arg, attn_b_i32(b, 1)));
  MlirValue v = attn_k_load(b, mail_word(e, 0, cw), b->t.i32);
  MlirValue vals[2] = {v, w.arg};
  attn_k_while_cond(b, &w, attn_k_cmpc(b, ATTN_B_NE, v, 0), vals);
  MlirValue t = attn_k_addc(b, w.args[0], -1), tm, tn;
  attn_k_gemm_tile_coords(e, t, &tm, &tn);
  attn_k_gemm_comm_signal(e, t, tm);
  attn_builder_role(b, "gemm.signaler");
  attn_k_mbar_arrive(b, mail_bar(e, 1, cw));
  attn_k_while_close(b, &w, attn_k_addc(b, w.args[1], 1));
  attn_b_if_close(b, &s, 0, NULL);
}

/// Before the staging rows of warpgroup cw are written again (last: at the
/// end of the tile loop): the copies of the previous tile have been read (a
/// fused reduce pattern, and the end of the kernel: have landed), and the
/// warpgroup meets. A reduce pattern then posts the previous tile to its
/// signaler (last: and the end of its posts).
static void staged_flush(struct attn_k_gemm *e, MlirValue cw, MlirValue wt,
                         bool last) {
  struct attn_builder *b = e->b;
  bool reduce = reduces(e->g);
  struct attn_k_rows r = staging_rows(e, cw, wt);
  attn_k_rows_drain(b, &r,
                    reduce ? ATTN_K_DRAIN_PUBLISHED
                    : last ? ATTN_K_DRAIN_LANDED
                           : ATTN_K_DRAIN_READ,
                    true);
  if (!reduce)
    return;
  struct attn_b_if s0, s1;
  attn_b_if_open(b, &s0, attn_k_cmpc(b, ATTN_B_EQ, wt, 0), 0, NULL, false);
  MlirValue at = pending_ptr(e, cw);
  MlirValue pend = attn_k_load(b, at, b->t.i32);
  attn_b_if_open(b, &s1, attn_k_cmpc(b, ATTN_B_NE, pend, 0), 0, NULL, false);
  post(e, cw, pend);
  attn_k_store(b, attn_b_i32(b, 0), at);
  attn_b_if_close(b, &s1, 0, NULL);
  if (last)
    post(e, cw, attn_b_i32(b, 0));
  attn_b_if_close(b, &s0, 0, NULL);
}

/// The staged epilogue of tile t (tile row tm, column tn): row r of the
/// warpgroup goes to row tm * block_m + 64 cw + r of C (or of the owner's
/// slot), if it is one (< m), with (n - column) * 2 bytes on the last tile
/// column. A fused reduce pattern counts the tile at the next flush.
static void staged_epilogue(struct attn_k_gemm *e, MlirValue *acc, MlirValue t,
                            MlirValue tm, MlirValue tn, MlirValue cw,
                            MlirValue wt) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_gemm *g = e->g;
  staged_flush(e, cw, wt, false);
  struct attn_k_rows r = staging_rows(e, cw, wt);
  attn_k_rows_put(b, g->bf16, &r, acc, e->nacc, NULL);
  attn_k_rows_ready(b, &r);
  struct attn_b_if copy, tail, row_if;
  attn_k_rows_copy_open(b, &r, &copy);
  MlirValue grow = attn_b_addi(b, attn_k_mulc(b, tm, g->block_m),
                               attn_b_addi(b, attn_k_mulc(b, cw, 64), wt));
  MlirValue col = attn_k_mulc(b, tn, g->block_n);
  bool tail_m = g->m % g->block_m != 0, tail_n = g->n % g->block_n != 0;
  if (tail_m)
    attn_b_if_open(b, &tail, attn_k_cmpc(b, ATTN_B_ULT, grow, g->m), 0, NULL,
                   false);
  bool open;
  grow = open_c_row(e, grow, &row_if, &open);
  MlirValue bytes = attn_b_i32(b, g->block_n * 2);
  if (tail_n)
    bytes =
        attn_k_mulc(b,
                    attn_b_minui(b, attn_b_subi(b, attn_b_i32(b, g->n), col),
                                 attn_b_i32(b, g->block_n)),
                    2);
  attn_k_rows_copy(b, &r, attn_k_ptrtoint(b, c_addr(e, grow, col), b->t.i64),
                   bytes);
  close_c_row(e, &row_if, open);
  if (tail_m)
    attn_b_if_close(b, &tail, 0, NULL);
  attn_k_rows_copy_close(b, &copy);
  if (reduces(g)) {
    struct attn_b_if s;
    attn_b_if_open(b, &s, attn_k_cmpc(b, ATTN_B_EQ, wt, 0), 0, NULL, false);
    attn_k_store(b, attn_k_addc(b, t, 1), pending_ptr(e, cw));
    attn_b_if_close(b, &s, 0, NULL);
  }
}

//===-- The register epilogue ---------------------------------------------===//

/// The accumulator fragment of thread wt of consumer warpgroup cw in tile
/// (tm, tn): the two rows its registers hold (rows[0], rows[0] + 8) and the
/// first column, returned.
static MlirValue fragment_origin(struct attn_k_gemm *e, MlirValue tm,
                                 MlirValue tn, MlirValue cw, MlirValue wt,
                                 MlirValue rows[2]) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_gemm *g = e->g;
  MlirValue warp = attn_k_divc(b, wt, 32), lane = attn_k_remc(b, wt, 32);
  MlirValue row0 =
      attn_b_addi(b, attn_k_mulc(b, tm, g->block_m),
                  attn_b_addi(b, attn_k_mulc(b, cw, 64),
                              attn_b_addi(b, attn_k_mulc(b, warp, 16),
                                          attn_k_divc(b, lane, 4))));
  MlirValue col0 = attn_b_addi(b, attn_k_mulc(b, tn, g->block_n),
                               attn_k_mulc(b, attn_k_remc(b, lane, 4), 2));
  rows[0] = row0;
  rows[1] = attn_k_addc(b, row0, 8);
  return col0;
}

/// A thread's accumulator fragment on its way out (store_fragment): its
/// registers, and for split K the slice's first row and the current row's
/// first element.
struct fragment {
  MlirValue *acc;
  MlirValue srow, base;
};

/// Builds the stores of a thread's fragment: for each of its two rows below
/// m, row(e, f, r, row) (when given), then for each pair of adjacent columns
/// below n (registers 4 c + 2 r and + 1), pair(e, f, r, c, row, col); rows
/// and columns past the end are masked by branches only where the shape has
/// a tail.
static void store_fragment(struct attn_k_gemm *e, const MlirValue rows[2],
                           MlirValue col0,
                           void (*row)(struct attn_k_gemm *, struct fragment *,
                                       int, MlirValue),
                           void (*pair)(struct attn_k_gemm *, struct fragment *,
                                        int, int, MlirValue, MlirValue),
                           struct fragment *f) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_gemm *g = e->g;
  bool tail_m = g->m % g->block_m != 0, tail_n = g->n % g->block_n != 0;
  for (int r = 0; r < 2; ++r) {
    struct attn_b_if rs, row_if;
    if (tail_m)
      attn_b_if_open(b, &rs, attn_k_cmpc(b, ATTN_B_ULT, rows[r], g->m), 0, NULL,
                     false);
    bool open;
    MlirValue at = open_c_row(e, rows[r], &row_if, &open);
    if (row)
      row(e, f, r, at);
    for (int c = 0; c < g->block_n / 8; ++c) {
      MlirValue col = attn_k_addc(b, col0, 8 * c);
      struct attn_b_if cs;
      if (tail_n)
        attn_b_if_open(b, &cs, attn_k_cmpc(b, ATTN_B_ULT, col, g->n), 0, NULL,
                       false);
      pair(e, f, r, c, at, col);
      if (tail_n)
        attn_b_if_close(b, &cs, 0, NULL);
    }
    close_c_row(e, &row_if, open);
    if (tail_m)
      attn_b_if_close(b, &rs, 0, NULL);
  }
}

/// The register epilogue's pair: packed to two 16-bit values, one 4-byte
/// store into C.
static void store_c_pair(struct attn_k_gemm *e, struct fragment *f, int r,
                         int c, MlirValue row, MlirValue col) {
  struct attn_builder *b = e->b;
  MlirValue w = attn_k_pack2(b, e->g->bf16, f->acc[4 * c + 2 * r],
                             f->acc[4 * c + 2 * r + 1]);
  attn_k_store(b, w, c_addr(e, row, col));
}

/// Writes (and with accumulate, first reads) this thread's part of the
/// tile: register i holds row row0 + 8 ((i >> 1) & 1) and column col0 +
/// 8 (i / 4) + (i & 1).
static void registers_epilogue(struct attn_k_gemm *e, MlirValue *acc,
                               MlirValue tm, MlirValue tn, MlirValue cw,
                               MlirValue wt) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_gemm *g = e->g;
  MlirValue rows[2], col0 = fragment_origin(e, tm, tn, cw, wt, rows);
  bool tail_m = g->m % g->block_m != 0, tail_n = g->n % g->block_n != 0;
  int chunks = g->block_n / 8;
  if (g->accumulate) {
    // Read C first (RoPE rotates the whole sum); rows and columns past the
    // end read element (0, 0) instead, and are not stored.
    MlirValue zero = attn_b_i32(b, 0);
    for (int r = 0; r < 2; ++r) {
      MlirValue row =
          tail_m ? attn_b_select(b, attn_k_cmpc(b, ATTN_B_ULT, rows[r], g->m),
                                 rows[r], zero)
                 : rows[r];
      for (int c = 0; c < chunks; ++c) {
        MlirValue col = attn_k_addc(b, col0, 8 * c);
        if (tail_n)
          col = attn_b_select(b, attn_k_cmpc(b, ATTN_B_ULT, col, g->n), col,
                              zero);
        MlirValue w = attn_k_load(b, c_addr(e, row, col), b->t.i32);
        MlirValue lo, hi;
        attn_k_unpack2(b, g->bf16, w, &lo, &hi);
        acc[4 * c + 2 * r] = attn_b_addf(b, acc[4 * c + 2 * r], lo);
        acc[4 * c + 2 * r + 1] = attn_b_addf(b, acc[4 * c + 2 * r + 1], hi);
      }
    }
  }
  if (g->rope) {
    attn_k_gemm_rope_epilogue(e, acc, col0, rows);
    attn_builder_role(b, "gemm.epilogue");
  }
  struct fragment f = {.acc = acc};
  store_fragment(e, rows, col0, NULL, store_c_pair, &f);
}

/// Split K: the f32 sums of row r start at element (s m + row) n of
/// `partials` (s = e->slice).
static void partial_row(struct attn_k_gemm *e, struct fragment *f, int r,
                        MlirValue row) {
  (void)r;
  struct attn_builder *b = e->b;
  f->base = attn_b_muli(b, attn_k_i64_of(b, attn_b_addi(b, f->srow, row)),
                        attn_b_i64(b, e->g->n));
}

/// Split K: the pair's two f32 sums, one 8-byte store.
static void partial_pair(struct attn_k_gemm *e, struct fragment *f, int r,
                         int c, MlirValue row, MlirValue col) {
  (void)row;
  struct attn_builder *b = e->b;
  MlirValue idx = attn_b_addi(b, f->base, attn_k_i64_of(b, col));
  MlirValue ptr = gep_f32(b, e->out, idx);
  attn_k_store_vec(b, &f->acc[4 * c + 2 * r], 2, ptr);
}

/// Split K: the unit's f32 sums into slice e->slice of `partials` (rows s m
/// + row), two adjacent columns per store.
static void partial_epilogue(struct attn_k_gemm *e, MlirValue *acc,
                             MlirValue tm, MlirValue tn, MlirValue cw,
                             MlirValue wt) {
  const struct attn_hopper_gemm *g = e->g;
  MlirValue rows[2], col0 = fragment_origin(e, tm, tn, cw, wt, rows);
  struct fragment f = {.acc = acc, .srow = attn_k_mulc(e->b, e->slice, g->m)};
  store_fragment(e, rows, col0, partial_row, partial_pair, &f);
}

//===-- The epilogue ------------------------------------------------------===//

void attn_k_gemm_epilogue_open(struct attn_k_gemm *e, MlirValue cw,
                               MlirValue wt) {
  struct attn_builder *b = e->b;
  if (!reduces(e->g))
    return;
  attn_k_gemm_comm_consumer_init(e);
  attn_builder_role(b, "gemm.epilogue");
  if (e->g->staged) {
    // No tile pending yet, none posted (shared memory starts undefined).
    struct attn_b_if s;
    attn_b_if_open(b, &s, attn_k_cmpc(b, ATTN_B_EQ, wt, 0), 0, NULL, false);
    attn_k_store(b, attn_b_i32(b, 0), pending_ptr(e, cw));
    attn_k_store(b, attn_b_i32(b, 0), mail_word(e, 1, cw));
    attn_b_if_close(b, &s, 0, NULL);
  }
}

void attn_k_gemm_epilogue(struct attn_k_gemm *e, MlirValue *acc, MlirValue t,
                          MlirValue tm, MlirValue tn, MlirValue cw,
                          MlirValue wt) {
  bool reduce = reduces(e->g);
  if (reduce)
    e->out = attn_k_gemm_comm_out(e, t, tm);
  attn_builder_role(e->b, "gemm.epilogue");
  if (e->g->staged) {
    staged_epilogue(e, acc, t, tm, tn, cw, wt);
    return;
  }
  if (e->g->split_k > 1) {
    partial_epilogue(e, acc, tm, tn, cw, wt);
    return;
  }
  registers_epilogue(e, acc, tm, tn, cw, wt);
  if (reduce)
    attn_k_gemm_comm_tile_done(e, t, tm, cw, wt);
}

void attn_k_gemm_epilogue_close(struct attn_k_gemm *e, MlirValue cw,
                                MlirValue wt) {
  attn_builder_role(e->b, "gemm.epilogue");
  if (e->g->staged)
    staged_flush(e, cw, wt, true);
}
