//===- hopper_gemm_epilogue.c - How the Hopper GEMM writes its tiles ------===//
//
// The epilogue of hopper_gemm.c's consumer warpgroups, once a tile's
// accumulators are final:
//
//   staged     (g->staged) the warpgroup's 64 rows go into shared memory
//              and threads 0-63 each hand one row to the bulk-copy engine
//              (hopper_ptx.h's staged output rows), then the warpgroup goes
//              on to its next tile. A fused reduce pattern posts the tile
//              at the warpgroup's next epilogue, once the copies have
//              landed, to a signaler thread of the producer warpgroup,
//              which counts it at its owner: no consumer waits for NVLink
//              or for a system-scope release.
//   registers  4-byte stores straight from the accumulators, masked on
//              tail tiles; it can first read C (accumulate), rotate the
//              output (RoPE, hopper_gemm_rope.c) and store in the heads
//              layout of a projection.
//   partial    (split K, hopper_gemm_splitk.c) the unit's f32 sums, 8-byte
//              stores into its slice of the workspace, masked the same way.
//
// Fused reduce patterns write into this rank's slot of the tile's owner
// (hopper_comm.c) instead of C.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/hopper_gemm.h"
#include "lib/Transforms/hopper_ptx.h"

static bool reduces(const struct attn_hopper_gemm *g) {
  return g->comm == ATTN_GEMM_ALL_REDUCE ||
         g->comm == ATTN_GEMM_REDUCE_SCATTER;
}

/// Opens the stores of row `row` (i32) of the tile and returns C's row for
/// it: the row itself, except that all-gather, which writes C itself, maps
/// its padded rows (attn_hopper_gemm's m_rows) to C's and opens an scf.if
/// that skips the padding ones; *open says whether close_c_row must close
/// it.
static int open_c_row(struct attn_gemm_em *e, int row, bool *open) {
  int valid = -1;
  if (e->g->comm == ATTN_GEMM_ALL_GATHER)
    attn_gemm_real_row(e, row, false, &row, &valid);
  *open = valid >= 0;
  if (*open)
    attn_ptx_line(e->p, "scf.if %%v%d {", valid);
  return row;
}

static void close_c_row(struct attn_gemm_em *e, bool open) {
  if (open)
    attn_ptx_line(e->p, "}");
}

/// Byte address of element (row, col) of C, i32 row and column: row-major,
/// or in the heads layout of a projection (out_seq, out_head_dim).
static int c_addr(struct attn_gemm_em *e, int row, int col) {
  const struct attn_hopper_gemm *g = e->g;
  if (g->out_seq) {
    // ((b * H + h) * S + t) * D + d with b, t = row / S, row % S and h, d =
    // col / D, col % D; an 8-column chunk never crosses a head (D % 8 == 0).
    int64_t S = g->out_seq, D = g->out_head_dim, H = g->n / D;
    int bh = attn_ptx_addi(
        e->p, attn_ptx_mulc(e->p, attn_ptx_divc(e->p, row, S), H),
        attn_ptx_divc(e->p, col, D));
    int head_row = attn_ptx_op(
        e->p, "arith.extui %%v%d : i32 to i64",
        attn_ptx_addi(e->p, attn_ptx_mulc(e->p, bh, S),
                      attn_ptx_remc(e->p, row, S)));
    int off = attn_ptx_op(
        e->p, "arith.addi %%v%d, %%v%d : i64",
        attn_ptx_op(e->p, "arith.muli %%v%d, %%v%d : i64", head_row,
                    attn_ptx_ci64(e->p, D * 2)),
        attn_ptx_op(e->p, "arith.extui %%v%d : i32 to i64",
                    attn_ptx_mulc(e->p, attn_ptx_remc(e->p, col, D), 2)));
    return attn_ptx_op(
        e->p,
        "llvm.getelementptr %%v%d[%%v%d] : (!llvm.ptr, i64) -> !llvm.ptr, i8",
        e->out, off);
  }
  int rowb = attn_ptx_op(
      e->p, "arith.muli %%v%d, %%v%d : i64",
      attn_ptx_op(e->p, "arith.extui %%v%d : i32 to i64", row),
      attn_ptx_ci64(e->p, e->g->n * 2));
  int colb = attn_ptx_op(e->p, "arith.extui %%v%d : i32 to i64",
                         attn_ptx_mulc(e->p, col, 2));
  return attn_ptx_op(
      e->p,
      "llvm.getelementptr %%v%d[%%v%d] : (!llvm.ptr, i64) -> !llvm.ptr, i8",
      e->out, attn_ptx_op(e->p, "arith.addi %%v%d, %%v%d : i64", rowb, colb));
}

//===-- The staged epilogue -----------------------------------------------===//

/// Warpgroup cw's staging rows.
static struct attn_ptx_rows staging_rows(struct attn_gemm_em *e, int cw,
                                         int wt) {
  struct attn_ptx_rows r = {
      .base = attn_ptx_addi(e->p, attn_ptx_addc(e->p, e->sbase, e->staging_off),
                            attn_ptx_mulc(e->p, cw, 64 * e->pitch)),
      .wt = wt,
      .bar = attn_ptx_addc(e->p, cw, 1),
      .pitch = e->pitch};
  return r;
}

/// Shared pointer of warpgroup cw's pending tile (fused reduce patterns):
/// t + 1 for a tile whose copies may still be in flight, 0 for none.
static int pending_ptr(struct attn_gemm_em *e, int cw) {
  return attn_ptx_smem_ptr(
      e->p, e->smem,
      attn_ptx_addc(e->p, attn_ptx_mulc(e->p, cw, 4), e->pending_off));
}

//===-- Mailboxes: the signalers count landed tiles -----------------------===//

bool attn_gemm_has_mail(const struct attn_hopper_gemm *g) {
  return g->staged && reduces(g);
}

/// Shared address (i32) of warpgroup cw's mbarrier `which` (0: posted,
/// 1: taken).
static int mail_bar(struct attn_gemm_em *e, int which, int cw) {
  return attn_ptx_addi(
      e->p, attn_ptx_addc(e->p, e->sbase, e->mail_off + 16 * which),
      attn_ptx_mulc(e->p, cw, 8));
}

/// Shared pointer of warpgroup cw's word `which`: 0, its box (the posted
/// tile + 1; 0: no more), or 1, its count of posts.
static int mail_word(struct attn_gemm_em *e, int which, int cw) {
  return attn_ptx_smem_ptr(
      e->p, e->smem,
      attn_ptx_addc(e->p, attn_ptx_mulc(e->p, cw, 4),
                    e->mail_off + 32 + 8 * which));
}

void attn_gemm_mail_init(struct attn_gemm_em *e) {
  for (int which = 0; which < 2; ++which)
    for (int cw = 0; cw < 2; ++cw)
      attn_ptx_mbar_init(e->p, mail_bar(e, which, attn_ptx_ci32(e->p, cw)),
                         1);
}

/// One thread of warpgroup cw: posts v (a tile + 1, or 0 for the end) to
/// its signaler once the signaler has taken the previous post (post k
/// completes phase k of `posted`, its taking phase k of `taken`).
static void post(struct attn_gemm_em *e, int cw, int v) {
  int count = mail_word(e, 1, cw);
  int k = attn_ptx_op(e->p, "llvm.load %%v%d : !llvm.ptr<3> -> i32", count);
  attn_ptx_line(e->p, "scf.if %%v%d {", attn_ptx_cmpc(e->p, "ne", k, 0));
  attn_ptx_mbar_wait(e->p, mail_bar(e, 1, cw),
                     attn_ptx_op(e->p, "arith.andi %%v%d, %%v%d : i32",
                                 attn_ptx_addc(e->p, k, -1),
                                 attn_ptx_ci32(e->p, 1)));
  attn_ptx_line(e->p, "}");
  attn_ptx_line(e->p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr<3>", v,
                mail_word(e, 0, cw));
  attn_ptx_mbar_arrive(e->p, mail_bar(e, 0, cw));
  attn_ptx_line(e->p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr<3>",
                attn_ptx_addc(e->p, k, 1), count);
}

void attn_gemm_signaler(struct attn_gemm_em *e, int wt) {
  // Threads 32 and 64 serve consumers 0 and 1: each takes its consumer's
  // posts in order until the end and counts each tile at its owner. The
  // consumer's barrier after its copies landed, then the mbarrier's release
  // (arrive) and acquire (wait), order the tile's rows before the count's
  // system-scope release, which is cumulative.
  attn_ptx_line(e->p, "scf.if %%v%d {",
                attn_ptx_op(e->p, "arith.ori %%v%d, %%v%d : i1",
                            attn_ptx_cmpc(e->p, "eq", wt, 32),
                            attn_ptx_cmpc(e->p, "eq", wt, 64)));
  attn_gemm_comm_consumer_init(e);
  int cw = attn_ptx_addc(e->p, attn_ptx_divc(e->p, wt, 32), -1);
  int arg = e->p->next++, res = e->p->next++;
  attn_ptx_line(e->p,
                "%%v%d:2 = scf.while (%%v%d = %%v%d) : (i32) -> (i32, i32) {",
                res, arg, attn_ptx_ci32(e->p, 0));
  attn_ptx_mbar_wait(e->p, mail_bar(e, 0, cw),
                     attn_ptx_op(e->p, "arith.andi %%v%d, %%v%d : i32", arg,
                                 attn_ptx_ci32(e->p, 1)));
  int v = attn_ptx_op(e->p, "llvm.load %%v%d : !llvm.ptr<3> -> i32",
                      mail_word(e, 0, cw));
  attn_ptx_line(e->p, "scf.condition(%%v%d) %%v%d, %%v%d : i32, i32",
                attn_ptx_cmpc(e->p, "ne", v, 0), v, arg);
  int bv = e->p->next++, bk = e->p->next++;
  attn_ptx_line(e->p, "} do {");
  attn_ptx_line(e->p, "^bb0(%%v%d: i32, %%v%d: i32):", bv, bk);
  int t = attn_ptx_addc(e->p, bv, -1), tm, tn;
  attn_gemm_tile_coords(e, t, &tm, &tn);
  attn_gemm_comm_signal(e, t, tm);
  attn_ptx_mbar_arrive(e->p, mail_bar(e, 1, cw));
  attn_ptx_line(e->p, "scf.yield %%v%d : i32", attn_ptx_addc(e->p, bk, 1));
  attn_ptx_line(e->p, "}");
  attn_ptx_line(e->p, "}");
}

/// Before the staging rows of warpgroup cw are written again (last: at the
/// end of the tile loop): the copies of the previous tile have been read (a
/// fused reduce pattern, and the end of the kernel: have landed), and the
/// warpgroup meets. A reduce pattern then posts the previous tile to its
/// signaler (last: and the end of its posts).
static void staged_flush(struct attn_gemm_em *e, int cw, int wt, bool last) {
  bool reduce = reduces(e->g);
  struct attn_ptx_rows r = staging_rows(e, cw, wt);
  attn_ptx_rows_drain(e->p, &r,
                      reduce ? ATTN_PTX_DRAIN_PUBLISHED
                      : last ? ATTN_PTX_DRAIN_LANDED
                             : ATTN_PTX_DRAIN_READ,
                      true);
  if (!reduce)
    return;
  attn_ptx_line(e->p, "scf.if %%v%d {", attn_ptx_cmpc(e->p, "eq", wt, 0));
  int at = pending_ptr(e, cw);
  int pend = attn_ptx_op(e->p, "llvm.load %%v%d : !llvm.ptr<3> -> i32", at);
  attn_ptx_line(e->p, "scf.if %%v%d {", attn_ptx_cmpc(e->p, "ne", pend, 0));
  post(e, cw, pend);
  attn_ptx_line(e->p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr<3>",
                attn_ptx_ci32(e->p, 0), at);
  attn_ptx_line(e->p, "}");
  if (last)
    post(e, cw, attn_ptx_ci32(e->p, 0));
  attn_ptx_line(e->p, "}");
}

/// The staged epilogue of tile t (tile row tm, column tn): row r of the
/// warpgroup goes to row tm * block_m + 64 cw + r of C (or of the owner's
/// slot), if it is one (< m), with (n - column) * 2 bytes on the last tile
/// column. A fused reduce pattern counts the tile at the next flush.
static void staged_epilogue(struct attn_gemm_em *e, int *acc, int t, int tm,
                            int tn, int cw, int wt) {
  const struct attn_hopper_gemm *g = e->g;
  staged_flush(e, cw, wt, false);
  struct attn_ptx_rows r = staging_rows(e, cw, wt);
  attn_ptx_rows_put(e->p, &r, acc, e->nacc, NULL);
  attn_ptx_rows_ready(e->p, &r);
  attn_ptx_rows_copy_open(e->p, &r);
  int grow = attn_ptx_addi(
      e->p, attn_ptx_mulc(e->p, tm, g->block_m),
      attn_ptx_addi(e->p, attn_ptx_mulc(e->p, cw, 64), wt));
  int col = attn_ptx_mulc(e->p, tn, g->block_n);
  bool tail_m = g->m % g->block_m != 0, tail_n = g->n % g->block_n != 0;
  if (tail_m)
    attn_ptx_line(e->p, "scf.if %%v%d {",
                  attn_ptx_cmpc(e->p, "ult", grow, g->m));
  bool open;
  grow = open_c_row(e, grow, &open);
  int bytes = attn_ptx_ci32(e->p, g->block_n * 2);
  if (tail_n)
    bytes = attn_ptx_mulc(
        e->p,
        attn_ptx_op(e->p, "arith.minui %%v%d, %%v%d : i32",
                    attn_ptx_op(e->p, "arith.subi %%v%d, %%v%d : i32",
                                attn_ptx_ci32(e->p, g->n), col),
                    attn_ptx_ci32(e->p, g->block_n)),
        2);
  attn_ptx_rows_copy(e->p, &r,
                     attn_ptx_op(e->p, "llvm.ptrtoint %%v%d : !llvm.ptr to i64",
                                 c_addr(e, grow, col)),
                     bytes);
  close_c_row(e, open);
  if (tail_m)
    attn_ptx_line(e->p, "}");
  attn_ptx_rows_copy_close(e->p);
  if (reduces(g)) {
    attn_ptx_line(e->p, "scf.if %%v%d {", attn_ptx_cmpc(e->p, "eq", wt, 0));
    attn_ptx_line(e->p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr<3>",
                  attn_ptx_addc(e->p, t, 1), pending_ptr(e, cw));
    attn_ptx_line(e->p, "}");
  }
}

//===-- The register epilogue ---------------------------------------------===//

/// The accumulator fragment of thread wt of consumer warpgroup cw in tile
/// (tm, tn): the two rows its registers hold (rows[0], rows[0] + 8) and the
/// first column, returned.
static int fragment_origin(struct attn_gemm_em *e, int tm, int tn, int cw,
                           int wt, int rows[2]) {
  const struct attn_hopper_gemm *g = e->g;
  int warp = attn_ptx_divc(e->p, wt, 32), lane = attn_ptx_remc(e->p, wt, 32);
  int row0 = attn_ptx_addi(
      e->p, attn_ptx_mulc(e->p, tm, g->block_m),
      attn_ptx_addi(e->p, attn_ptx_mulc(e->p, cw, 64),
                    attn_ptx_addi(e->p, attn_ptx_mulc(e->p, warp, 16),
                                  attn_ptx_divc(e->p, lane, 4))));
  int col0 =
      attn_ptx_addi(e->p, attn_ptx_mulc(e->p, tn, g->block_n),
                    attn_ptx_mulc(e->p, attn_ptx_remc(e->p, lane, 4), 2));
  rows[0] = row0;
  rows[1] = attn_ptx_addc(e->p, row0, 8);
  return col0;
}

/// A thread's accumulator fragment on its way out (store_fragment): its
/// registers, and for split K the slice's first row and the current row's
/// first element.
struct fragment {
  int *acc;
  int srow, base;
};

/// Emits the stores of a thread's fragment: for each of its two rows below
/// m, row(e, f, r, row) (when given), then for each pair of adjacent columns
/// below n (registers 4 c + 2 r and + 1), pair(e, f, r, c, row, col); rows
/// and columns past the end are masked by branches only where the shape has
/// a tail.
static void store_fragment(
    struct attn_gemm_em *e, const int rows[2], int col0,
    void (*row)(struct attn_gemm_em *, struct fragment *, int, int),
    void (*pair)(struct attn_gemm_em *, struct fragment *, int, int, int, int),
    struct fragment *f) {
  const struct attn_hopper_gemm *g = e->g;
  bool tail_m = g->m % g->block_m != 0, tail_n = g->n % g->block_n != 0;
  for (int r = 0; r < 2; ++r) {
    if (tail_m)
      attn_ptx_line(e->p, "scf.if %%v%d {",
                    attn_ptx_cmpc(e->p, "ult", rows[r], g->m));
    bool open;
    int at = open_c_row(e, rows[r], &open);
    if (row)
      row(e, f, r, at);
    for (int c = 0; c < g->block_n / 8; ++c) {
      int col = attn_ptx_addc(e->p, col0, 8 * c);
      if (tail_n)
        attn_ptx_line(e->p, "scf.if %%v%d {",
                      attn_ptx_cmpc(e->p, "ult", col, g->n));
      pair(e, f, r, c, at, col);
      if (tail_n)
        attn_ptx_line(e->p, "}");
    }
    close_c_row(e, open);
    if (tail_m)
      attn_ptx_line(e->p, "}");
  }
}

/// The register epilogue's pair: packed to two 16-bit values, one 4-byte
/// store into C.
static void store_c_pair(struct attn_gemm_em *e, struct fragment *f, int r,
                         int c, int row, int col) {
  int w = attn_ptx_pack2(e->p, f->acc[4 * c + 2 * r],
                         f->acc[4 * c + 2 * r + 1]);
  attn_ptx_line(e->p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr", w,
                c_addr(e, row, col));
}

/// Writes (and with accumulate, first reads) this thread's part of the
/// tile: register i holds row row0 + 8 ((i >> 1) & 1) and column col0 +
/// 8 (i / 4) + (i & 1).
static void registers_epilogue(struct attn_gemm_em *e, int *acc, int tm,
                               int tn, int cw, int wt) {
  const struct attn_hopper_gemm *g = e->g;
  int rows[2], col0 = fragment_origin(e, tm, tn, cw, wt, rows);
  bool tail_m = g->m % g->block_m != 0, tail_n = g->n % g->block_n != 0;
  int chunks = g->block_n / 8;
  if (g->accumulate) {
    // Read C first (RoPE rotates the whole sum); rows and columns past the
    // end read element (0, 0) instead, and are not stored.
    int zero = attn_ptx_ci32(e->p, 0);
    for (int r = 0; r < 2; ++r) {
      int row = tail_m ? attn_ptx_sel(e->p,
                                      attn_ptx_cmpc(e->p, "ult", rows[r], g->m),
                                      rows[r], zero, "i32")
                       : rows[r];
      for (int c = 0; c < chunks; ++c) {
        int col = attn_ptx_addc(e->p, col0, 8 * c);
        if (tail_n)
          col = attn_ptx_sel(e->p, attn_ptx_cmpc(e->p, "ult", col, g->n), col,
                             zero, "i32");
        int w = attn_ptx_op(e->p, "llvm.load %%v%d : !llvm.ptr -> i32",
                            c_addr(e, row, col));
        int lo, hi;
        attn_ptx_unpack2(e->p, w, &lo, &hi);
        acc[4 * c + 2 * r] = attn_ptx_fadd(e->p, acc[4 * c + 2 * r], lo);
        acc[4 * c + 2 * r + 1] =
            attn_ptx_fadd(e->p, acc[4 * c + 2 * r + 1], hi);
      }
    }
  }
  if (g->rope)
    attn_gemm_rope_epilogue(e, acc, col0, rows);
  struct fragment f = {.acc = acc};
  store_fragment(e, rows, col0, NULL, store_c_pair, &f);
}

/// Split K: the f32 sums of row r start at element (s m + row) n of
/// `partials` (s = e->slice).
static void partial_row(struct attn_gemm_em *e, struct fragment *f, int r,
                        int row) {
  (void)r;
  const struct attn_hopper_gemm *g = e->g;
  f->base = attn_ptx_op(
      e->p, "arith.muli %%v%d, %%v%d : i64",
      attn_ptx_op(e->p, "arith.extui %%v%d : i32 to i64",
                  attn_ptx_addi(e->p, f->srow, row)),
      attn_ptx_ci64(e->p, g->n));
}

/// Split K: the pair's two f32 sums, one 8-byte store.
static void partial_pair(struct attn_gemm_em *e, struct fragment *f, int r,
                         int c, int row, int col) {
  (void)row;
  int idx = attn_ptx_op(
      e->p, "arith.addi %%v%d, %%v%d : i64", f->base,
      attn_ptx_op(e->p, "arith.extui %%v%d : i32 to i64", col));
  int ptr = attn_ptx_op(e->p,
                        "llvm.getelementptr %%v%d[%%v%d] : (!llvm.ptr, "
                        "i64) -> !llvm.ptr, f32",
                        e->out, idx);
  attn_ptx_store_vec(e->p, &f->acc[4 * c + 2 * r], 2, "f32", ptr);
}

/// Split K: the unit's f32 sums into slice e->slice of `partials` (rows s m
/// + row), two adjacent columns per store.
static void partial_epilogue(struct attn_gemm_em *e, int *acc, int tm, int tn,
                             int cw, int wt) {
  const struct attn_hopper_gemm *g = e->g;
  int rows[2], col0 = fragment_origin(e, tm, tn, cw, wt, rows);
  struct fragment f = {.acc = acc, .srow = attn_ptx_mulc(e->p, e->slice, g->m)};
  store_fragment(e, rows, col0, partial_row, partial_pair, &f);
}

//===-- The epilogue ------------------------------------------------------===//

void attn_gemm_epilogue_open(struct attn_gemm_em *e, int cw, int wt) {
  if (!reduces(e->g))
    return;
  attn_gemm_comm_consumer_init(e);
  if (e->g->staged) {
    // No tile pending yet, none posted (shared memory starts undefined).
    attn_ptx_line(e->p, "scf.if %%v%d {", attn_ptx_cmpc(e->p, "eq", wt, 0));
    attn_ptx_line(e->p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr<3>",
                  attn_ptx_ci32(e->p, 0), pending_ptr(e, cw));
    attn_ptx_line(e->p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr<3>",
                  attn_ptx_ci32(e->p, 0), mail_word(e, 1, cw));
    attn_ptx_line(e->p, "}");
  }
}

void attn_gemm_epilogue(struct attn_gemm_em *e, int *acc, int t, int tm,
                        int tn, int cw, int wt) {
  bool reduce = reduces(e->g);
  if (reduce)
    e->out = attn_gemm_comm_out(e, t, tm);
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
    attn_gemm_comm_tile_done(e, t, tm, cw, wt);
}

void attn_gemm_epilogue_close(struct attn_gemm_em *e, int cw, int wt) {
  if (e->g->staged)
    staged_flush(e, cw, wt, true);
}
