//===- mma_attention.c - The mma.sync attention kernel (sm_80 and newer) ===//
//
// Writes one fused attention kernel for every chip from sm_80 on as MLIR text
// in the LLVM and NVVM dialects (scf/arith for control flow and scalar
// math), with inline PTX for mma.sync, ldmatrix and cp.async. Structure
// (FlashAttention-2 style, one CTA per (query block, head, batch)):
//
//   all threads   cp.async loads of the Q tile once, then K and V tiles of
//                 64 keys into a `stages`-deep ring of shared-memory buffers
//                 (one commit group per key block, wait_group stages - 2);
//                 RoPE of Q once and of each K tile in shared memory
//   warp w        query rows 16w .. 16w + 15: its Q fragments in registers
//                 (ldmatrix once), then per key block S = Q K^T
//                 (mma.sync.m16n8k16, K by ldmatrix), masks only on
//                 diagonal and tail blocks, online softmax in exp2 form in
//                 registers, O += P V with P packed straight from the S
//                 accumulators into A fragments and V by ldmatrix.trans
//
// A causal CTA stops at the diagonal; inside it a warp skips the blocks
// entirely above its own rows. Shared-memory tiles are rows of head_dim
// 16-bit elements whose 16-byte chunks are XORed with row % 8, so that the
// eight row addresses of an ldmatrix matrix (and a warp's cp.async stores)
// fall in distinct banks.
//
// Registers per thread and spills: the table in lower_tile_to_mma.c.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels.h"
#include "lib/Transforms/hopper_launch.h"
#include "lib/Transforms/hopper_ptx.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define ACC4 "!llvm.struct<(f32, f32, f32, f32)>"
#define REG4 "!llvm.struct<(i32, i32, i32, i32)>"

/// Most registers of one kind a thread holds: O at head dim 128 (64), S at
/// block-n 128 (64).
#define MAX_REGS 64

struct em {
  struct attn_ptx p; // the text, SSA counter and element type
  const struct attn_hopper_kernel *k;
  int threads;
  int rb;         // bytes per tile row: head_dim * 2
  int ns, no;     // S and O accumulator registers per thread
  int64_t q_off, kv_off, tile_bytes; // shared-memory layout (bytes)
};

/// Values every part of the kernel reads (SSA numbers).
struct ids {
  int tid, lane, g, t, x7; // lane / 4, lane % 4, lane % 8
  int raw, sbase;          // @attn_smem as !llvm.ptr<3> and as an i32 address
  int h, b, q_row, warp_row0, kend;
  int qsrc, ksrc, vsrc, out; // i64 addresses of the head's row 0; out ptr
  int frag_row;              // ((lane / 8) % 2) * 8 + lane % 8
  int frag_hi;               // lane / 16
  int krow;                  // ((lane / 16) * 8 + lane % 8) * rb
  int klo;                   // (lane / 8) % 2
  int scale_log2, ninf, zero, nz;
};

//===-- Small helpers -----------------------------------------------------===//

static int xori(struct attn_ptx *p, int a, int b) {
  return attn_ptx_bin(p, "arith.xori", a, b, "i32");
}

static int andc(struct attn_ptx *p, int a, long long c) {
  return attn_ptx_bin(p, "arith.andi", a, attn_ptx_ci32(p, c), "i32");
}

static int i64_of(struct attn_ptx *p, int a) {
  return attn_ptx_op(p, "arith.extui %%v%d : i32 to i64", a);
}

static int add64(struct attn_ptx *p, int a, int b) {
  return attn_ptx_bin(p, "arith.addi", a, b, "i64");
}

/// Byte offset in a tile of the 16-byte chunk `chunk` (i32) of row `row`
/// (i32): chunk ^ (row % 8) within the row.
static int swz(struct em *e, int row, int chunk) {
  struct attn_ptx *p = &e->p;
  int pc = xori(p, chunk, andc(p, row, 7));
  return attn_ptx_addi(p, attn_ptx_mulc(p, row, e->rb), attn_ptx_mulc(p, pc, 16));
}

/// Result i of a multi-result op r, as a value of its own (x + -0.0 is x).
static int result_f32(struct em *e, const struct ids *x, int r, int i) {
  return attn_ptx_op(&e->p, "arith.addf %%v%d#%d, %%v%d : f32", r, i, x->nz);
}

//===-- Instructions ------------------------------------------------------===//

/// Four 8x8 matrices of 16-bit elements from shared memory; lane l gives the
/// address of row l % 8 of matrix l / 8; r[i] is this lane's part of matrix
/// i (transposed with trans).
static void ldmatrix_x4(struct em *e, int addr, bool trans, int r[4]) {
  const char *t[] = {"i32"};
  int s = attn_ptx_asmv(&e->p, REG4, "=r,=r,=r,=r,r",
                        trans ? "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
                                "{$0, $1, $2, $3}, [$4];"
                              : "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {$0, "
                                "$1, $2, $3}, [$4];",
                        1, &addr, t);
  for (int i = 0; i < 4; ++i)
    r[i] = attn_ptx_op(&e->p, "llvm.extractvalue %%v%d[%d] : " REG4, s, i);
}

/// c (4 f32, updated) += A (a[0..3]) B (b0, b1): one m16n8k16 tile.
static void mma(struct em *e, int *c, const int a[4], int b0, int b1) {
  char text[192];
  snprintf(text, sizeof text,
           "mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {$0, $1, $2, $3}, "
           "{$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};",
           e->p.ty, e->p.ty);
  int ids[] = {a[0], a[1], a[2], a[3], b0, b1, c[0], c[1], c[2], c[3]};
  const char *t[] = {"i32", "i32", "i32", "i32", "i32",
                     "i32", "f32", "f32", "f32", "f32"};
  int s = attn_ptx_asmv(&e->p, ACC4, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", text,
                        10, ids, t);
  for (int i = 0; i < 4; ++i)
    c[i] = attn_ptx_op(&e->p, "llvm.extractvalue %%v%d[%d] : " ACC4, s, i);
}

/// Copies 16 bytes from global address src (i64) to shared address dst
/// (i32), reading only `bytes` (i32: 16 or 0) and zero-filling the rest.
static void cp_async(struct em *e, int dst, int src, int bytes) {
  int ids[] = {dst, src, bytes};
  const char *t[] = {"i32", "i64", "i32"};
  attn_ptx_asmv(&e->p, NULL, "r,l,r",
                "cp.async.cg.shared.global [$0], [$1], 16, $2;", 3, ids, t);
}

static void cp_async_wait(struct em *e, int pending) {
  char text[64];
  snprintf(text, sizeof text, "cp.async.wait_group %d;", pending);
  attn_ptx_asm0(&e->p, text);
}

//===-- Loads -------------------------------------------------------------===//

/// Issues cp.async copies of rows [row0, row0 + rows) of a head whose row 0
/// is at src (i64) into the tile at shared offset dst (i32, from the base);
/// rows at or past seq read nothing and become zeros (so padding keys and
/// values are finite). rows * head_dim / 8 is a multiple of the threads.
static void load_tile(struct em *e, const struct ids *x, int dst, int src,
                      int row0, int rows, int64_t seq) {
  struct attn_ptx *p = &e->p;
  int cpr = (int)e->k->head_dim / 8; // 16-byte chunks per row
  int n = rows * cpr / e->threads;
  int last = attn_ptx_ci32(p, seq - 1);
  int sixteen = attn_ptx_ci32(p, 16), none = attn_ptx_ci32(p, 0);
  int at = attn_ptx_addi(p, x->sbase, dst);
  for (int i = 0; i < n; ++i) {
    int id = attn_ptx_addc(p, x->tid, (long long)i * e->threads);
    int row = attn_ptx_divc(p, id, cpr), ch = attn_ptx_remc(p, id, cpr);
    int grow = attn_ptx_addi(p, row0, row);
    int ok = attn_ptx_cmpc(p, "ult", grow, seq);
    int srow = attn_ptx_sel(p, ok, grow, last, "i32");
    int off = attn_ptx_addi(p, attn_ptx_mulc(p, srow, e->rb),
                            attn_ptx_mulc(p, ch, 16));
    cp_async(e, attn_ptx_addi(p, at, swz(e, row, ch)),
             add64(p, src, i64_of(p, off)),
             attn_ptx_sel(p, ok, sixteen, none, "i32"));
  }
}

/// Shared offsets (i32, from the base) of stage s's K and V tiles.
static int tile_k(struct em *e, int s) {
  return attn_ptx_addc(&e->p, attn_ptx_mulc(&e->p, s, 2 * e->tile_bytes),
                       e->kv_off);
}

/// Issues the loads of key block j into its stage (j % stages), when j <
/// kend, then closes the commit group (empty when j >= kend, so that every
/// block owns one group).
static void load_block(struct em *e, const struct ids *x, int j) {
  const struct attn_hopper_kernel *k = e->k;
  int ok = attn_ptx_cmp(&e->p, "ult", j, x->kend);
  attn_ptx_line(&e->p, "scf.if %%v%d {", ok);
  int kt = tile_k(e, attn_ptx_remc(&e->p, j, k->stages));
  int row0 = attn_ptx_mulc(&e->p, j, k->block_n);
  load_tile(e, x, kt, x->ksrc, row0, k->block_n, k->seq_k);
  load_tile(e, x, attn_ptx_addc(&e->p, kt, e->tile_bytes), x->vsrc, row0,
            k->block_n, k->seq_k);
  attn_ptx_line(&e->p, "}");
  attn_ptx_asm0(&e->p, "cp.async.commit_group;");
}

//===-- RoPE in shared memory ---------------------------------------------===//

/// How the threads share a rotation: "slots" of two adjacent pairs (one
/// 32-bit word of each pair's half, see rotate_slot). When the threads are
/// a multiple of the slots, a thread keeps one slot and steps cos/sin down
/// its rows (rows g0, g0 + groups, ...) by a rotation; otherwise every
/// (row, slot) item computes its own.
struct rope {
  int slots, groups;     // groups == 0: per item
  int slot, g0;          // this thread's slot and first row
  int c1, c2;            // first columns of the slot's two words
  int f0, f1;            // inverse frequencies of the slot's two pairs
  int sc0, ss0, sc1, ss1; // cos/sin of one step (groups rows)
};

/// Columns (i32) of slot's two words: rotate-half pairs (2s, 2s + r/2) and
/// (2s + 1, 2s + 1 + r/2); interleaved pairs (4s, 4s + 1) and (4s + 2,
/// 4s + 3). Checked against the shared definition of a pair's columns.
static void slot_cols(struct em *e, int slot, int *c1, int *c2) {
  int pair = attn_ptx_mulc(&e->p, slot, 2), unused;
  attn_hopper_rope_pair_cols(&e->p, e->k, pair, c1, &unused);
  *c2 = e->k->interleaved ? attn_ptx_addc(&e->p, *c1, 2) : unused;
}

static void rope_setup(struct em *e, const struct ids *x, struct rope *r) {
  memset(r, 0, sizeof *r);
  r->slots = (int)(e->k->rotary_dim / 4);
  if (e->threads % r->slots)
    return;
  r->groups = e->threads / r->slots;
  r->slot = attn_ptx_remc(&e->p, x->tid, r->slots);
  r->g0 = attn_ptx_divc(&e->p, x->tid, r->slots);
  int p0 = attn_ptx_mulc(&e->p, r->slot, 2);
  r->f0 = attn_hopper_rope_inv_freq(&e->p, e->k, p0);
  r->f1 = attn_hopper_rope_inv_freq(&e->p, e->k, attn_ptx_addc(&e->p, p0, 1));
  slot_cols(e, r->slot, &r->c1, &r->c2);
  int gf = attn_ptx_cf32(&e->p, (float)r->groups);
  attn_ptx_sincos(&e->p, attn_ptx_fmul(&e->p, gf, r->f0), &r->sc0, &r->ss0);
  attn_ptx_sincos(&e->p, attn_ptx_fmul(&e->p, gf, r->f1), &r->sc1, &r->ss1);
}

/// A pointer to the 32-bit word at column col (even) of row of the tile at
/// shared offset tile (all i32).
static int word_ptr(struct em *e, const struct ids *x, int tile, int row,
                    int col) {
  struct attn_ptx *p = &e->p;
  int off = attn_ptx_addi(
      p, attn_ptx_addi(p, tile, swz(e, row, attn_ptx_divc(p, col, 8))),
      attn_ptx_mulc(p, attn_ptx_remc(p, col, 8), 2));
  return attn_ptx_smem_ptr(p, x->raw, off);
}

/// Rotates the slot's two words in row of the tile: pair 0 by (cs0, sn0),
/// pair 1 by (cs1, sn1).
static void rotate_slot(struct em *e, const struct ids *x, int tile, int row,
                        int c1, int c2, int cs0, int sn0, int cs1, int sn1) {
  int pa = word_ptr(e, x, tile, row, c1), pb = word_ptr(e, x, tile, row, c2);
  attn_hopper_rope_rotate_words(&e->p, e->k, pa, pb, cs0, sn0, cs1, sn1);
}

/// Rotates rows [0, rows) of the tile at shared offset tile (i32); row 0 is
/// at position pos0 (i32). The caller synchronises before and after.
static void rope_tile(struct em *e, const struct ids *x, const struct rope *r,
                      int tile, int rows, int pos0) {
  struct attn_ptx *p = &e->p;
  if (r->groups) {
    int pos = attn_ptx_op(p, "arith.uitofp %%v%d : i32 to f32",
                          attn_ptx_addi(p, pos0, r->g0));
    int c0, s0, c1, s1;
    attn_ptx_sincos(p, attn_ptx_fmul(p, pos, r->f0), &c0, &s0);
    attn_ptx_sincos(p, attn_ptx_fmul(p, pos, r->f1), &c1, &s1);
    int lo = attn_ptx_to_index(p, r->g0), hi = attn_ptx_cidx(p, rows),
        st = attn_ptx_cidx(p, r->groups);
    int it = p->next++, res = p->next++, a0 = p->next++, b0 = p->next++,
        a1 = p->next++, b1 = p->next++;
    attn_ptx_line(p,
                  "%%v%d:4 = scf.for %%v%d = %%v%d to %%v%d step %%v%d "
                  "iter_args(%%v%d = %%v%d, %%v%d = %%v%d, %%v%d = %%v%d, "
                  "%%v%d = %%v%d) -> (f32, f32, f32, f32) {",
                  res, it, lo, hi, st, a0, c0, b0, s0, a1, c1, b1, s1);
    int row = attn_ptx_from_index(p, it);
    rotate_slot(e, x, tile, row, r->c1, r->c2, a0, b0, a1, b1);
    attn_hopper_rope_step_rows(p, a0, b0, a1, b1, r->sc0, r->ss0, r->sc1,
                               r->ss1);
    return;
  }
  // Per item: the slot's frequencies and angles from scratch.
  int lo = attn_ptx_to_index(p, x->tid),
      hi = attn_ptx_cidx(p, (long long)rows * r->slots),
      st = attn_ptx_cidx(p, e->threads);
  int it = p->next++;
  attn_ptx_line(p, "scf.for %%v%d = %%v%d to %%v%d step %%v%d {", it, lo, hi,
                st);
  int item = attn_ptx_from_index(p, it);
  int row = attn_ptx_divc(p, item, r->slots),
      slot = attn_ptx_remc(p, item, r->slots);
  int p0 = attn_ptx_mulc(p, slot, 2);
  int f0 = attn_hopper_rope_inv_freq(p, e->k, p0);
  int f1 = attn_hopper_rope_inv_freq(p, e->k, attn_ptx_addc(p, p0, 1));
  int c1, c2;
  slot_cols(e, slot, &c1, &c2);
  int pos = attn_ptx_op(p, "arith.uitofp %%v%d : i32 to f32",
                        attn_ptx_addi(p, pos0, row));
  int cs0, sn0, cs1, sn1;
  attn_ptx_sincos(p, attn_ptx_fmul(p, pos, f0), &cs0, &sn0);
  attn_ptx_sincos(p, attn_ptx_fmul(p, pos, f1), &cs1, &sn1);
  rotate_slot(e, x, tile, row, c1, c2, cs0, sn0, cs1, sn1);
  attn_ptx_line(p, "}");
}

//===-- One key block -----------------------------------------------------===//

/// S = Q K^T for the K tile at shared offset kt: ns accumulators, n-tile nt
/// in sv[4 nt .. 4 nt + 3] (rows g and g + 8, columns 8 nt + 2t, + 1).
static void scores(struct em *e, const struct ids *x, int qf[][4], int kt,
                   int *sv) {
  const struct attn_hopper_kernel *k = e->k;
  struct attn_ptx *p = &e->p;
  for (int i = 0; i < e->ns; ++i)
    sv[i] = x->zero;
  int base = attn_ptx_addi(p, attn_ptx_addi(p, x->sbase, kt), x->krow);
  for (int kk = 0; kk < k->head_dim / 16; ++kk) {
    int chunk = xori(p, attn_ptx_addc(p, x->klo, 2 * kk), x->x7);
    int at = attn_ptx_addi(p, base, attn_ptx_mulc(p, chunk, 16));
    for (int pp = 0; pp < k->block_n / 16; ++pp) {
      int b[4];
      ldmatrix_x4(e, attn_ptx_addc(p, at, (long long)16 * pp * e->rb), false,
                  b);
      mma(e, &sv[8 * pp], qf[kk], b[0], b[1]);
      mma(e, &sv[8 * pp + 4], qf[kk], b[2], b[3]);
    }
  }
}

/// O += P V for the V tile at shared offset vt; pa holds P as A fragments
/// (four registers per 16 keys).
static void add_pv(struct em *e, const struct ids *x, int vt, const int *pa,
                   int *ov) {
  const struct attn_hopper_kernel *k = e->k;
  struct attn_ptx *p = &e->p;
  int base = attn_ptx_addi(
      p, attn_ptx_addi(p, x->sbase, vt), attn_ptx_mulc(p, x->frag_row, e->rb));
  for (int dp = 0; dp < k->head_dim / 16; ++dp) {
    int chunk = xori(p, attn_ptx_addc(p, x->frag_hi, 2 * dp), x->x7);
    int at = attn_ptx_addi(p, base, attn_ptx_mulc(p, chunk, 16));
    for (int kc = 0; kc < k->block_n / 16; ++kc) {
      int b[4];
      ldmatrix_x4(e, attn_ptx_addc(p, at, (long long)16 * kc * e->rb), true,
                  b);
      mma(e, &ov[8 * dp], &pa[4 * kc], b[0], b[1]);
      mma(e, &ov[8 * dp + 4], &pa[4 * kc], b[2], b[3]);
    }
  }
}

/// Masks S (updated in place) where key block j crosses this warp's
/// diagonal or the end of the keys; other blocks pass unchanged. The mma.sync
/// fragments are laid out as the wgmma ones, rows warp_row0 + g and + 8, so
/// this is the Hopper kernel's mask with the warp's 16 rows in place of a
/// warpgroup's 64 (hopper_softmax.c).
static void mask(struct em *e, const struct ids *x, int j, int *sv) {
  struct attn_ptx *p = &e->p;
  struct attn_hopper_softmax s = {
      .lr = x->t,
      .row0 = attn_ptx_addi(p, x->warp_row0, x->g),
      .wg_row = x->warp_row0,
      .scale_log2 = x->scale_log2,
      .ninf = x->ninf,
      .zero = x->zero};
  attn_hopper_mask(p, e->k, &s, j, sv);
}

/// The online softmax of one block for rows g (registers i with bit 1
/// clear) and g + 8, in exp2 form: the Hopper kernel's (hopper_softmax.c,
/// eager, the ALUs' sums; the mma kernel has neither option). Updates m, l
/// and O, and writes P as A fragments in pa.
static void softmax(struct em *e, const struct ids *x, const int *sv, int m[2],
                    int l[2], int *ov, int *pa) {
  struct attn_ptx *p = &e->p;
  struct attn_hopper_softmax s = {.scale_log2 = x->scale_log2,
                                  .ninf = x->ninf,
                                  .zero = x->zero};
  int alpha[2], pr[MAX_REGS], m_new[2], l_new[2];
  attn_hopper_softmax(p, e->k, &s, sv, m, l, m_new, l_new, alpha, pr);
  memcpy(m, m_new, sizeof m_new);
  memcpy(l, l_new, sizeof l_new);
  attn_hopper_rescale(p, e->k, ov, e->no, alpha);
  // A fragment registers of 16 keys: (row g, keys 2t..), (row g + 8, keys
  // 2t..), (row g, keys 8 + 2t..), (row g + 8, keys 8 + 2t..): the S
  // registers of two n-tiles in order, two at a time.
  for (int i = 0; i < e->ns / 2; ++i)
    pa[i] = attn_ptx_pack2(p, pr[2 * i], pr[2 * i + 1]);
}

/// One key block for this warp: scores, masks, softmax, O += P V; ov, m, l
/// are updated.
static void block(struct em *e, const struct ids *x, int qf[][4], int j,
                  int kt, int *ov, int m[2], int l[2]) {
  int sv[MAX_REGS], pa[MAX_REGS / 2];
  scores(e, x, qf, kt, sv);
  mask(e, x, j, sv);
  softmax(e, x, sv, m, l, ov, pa);
  add_pv(e, x, attn_ptx_addc(&e->p, kt, e->tile_bytes), pa, ov);
}

//===-- The kernel --------------------------------------------------------===//

int attn_mma_threads(const struct attn_hopper_kernel *k) {
  return 32 * (k->block_m / 16);
}

int64_t attn_mma_smem_bytes(const struct attn_hopper_kernel *k) {
  return (int64_t)(k->block_m + 2 * k->stages * k->block_n) * k->head_dim * 2;
}

static void emit_launch(struct attn_strbuf *b,
                        const struct attn_hopper_kernel *k,
                        const char *attention) {
  // cp.async copies 16 bytes at a time: attnrt checks q, k and v.
  int64_t grid[3] = {(k->seq_q + k->block_m - 1) / k->block_m, k->heads,
                      k->batch};
  attn_hopper_emit_launch_open(b, k, "mma-sync", grid, attn_mma_threads(k), attn_mma_smem_bytes(k), 16,
                               4);
  attn_hopper_emit_launch_close(b, attention);
}

/// i64 address of row 0 of head (batch b, head hd) of a [B, heads, seq, D]
/// tensor at ptr.
static int head_address(struct em *e, const char *ptr, int b, int hd,
                        int64_t heads, int64_t seq) {
  struct attn_ptx *p = &e->p;
  int base = attn_ptx_op(p, "llvm.ptrtoint %%%s : !llvm.ptr to i64", ptr);
  int bh = i64_of(p, attn_ptx_addi(p, attn_ptx_mulc(p, b, heads), hd));
  int rows = attn_ptx_bin(p, "arith.muli", bh, attn_ptx_ci64(p, seq), "i64");
  return add64(p, base,
               attn_ptx_bin(p, "arith.muli", rows,
                            attn_ptx_ci64(p, (long long)e->rb), "i64"));
}

/// Normalises O by the row sums and stores the rows below seq_q.
static void epilogue(struct em *e, const struct ids *x, const int *ov,
                     const int lf[2]) {
  const struct attn_hopper_kernel *k = e->k;
  struct attn_ptx *p = &e->p;
  int inv[2];
  for (int r = 0; r < 2; ++r) {
    int lsum = attn_ptx_fadd(p, lf[r], attn_ptx_shfl_xor(p, lf[r], 1));
    lsum = attn_ptx_fadd(p, lsum, attn_ptx_shfl_xor(p, lsum, 2));
    int empty = attn_ptx_op(p, "arith.cmpf oeq, %%v%d, %%v%d : f32", lsum,
                            x->zero);
    int q = attn_ptx_op(p, "arith.divf %%v%d, %%v%d : f32",
                        attn_ptx_cf32(p, 1.0f), lsum);
    inv[r] = attn_ptx_sel(p, empty, x->zero, q, "f32");
  }
  int bh = attn_ptx_addi(p, attn_ptx_mulc(p, x->b, k->heads), x->h);
  for (int r = 0; r < 2; ++r) {
    int grow = attn_ptx_addi(p, attn_ptx_addi(p, x->warp_row0, x->g),
                             attn_ptx_ci32(p, 8 * r));
    int ok = attn_ptx_cmpc(p, "ult", grow, k->seq_q);
    attn_ptx_line(p, "scf.if %%v%d {", ok);
    int rowi = attn_ptx_bin(p, "arith.addi",
                            attn_ptx_bin(p, "arith.muli", i64_of(p, bh),
                                         attn_ptx_ci64(p, k->seq_q), "i64"),
                            i64_of(p, grow), "i64");
    int rowb = attn_ptx_bin(p, "arith.muli", rowi, attn_ptx_ci64(p, e->rb),
                            "i64");
    for (int i = 0; i < e->no; i += 4) {
      int idx = i + 2 * r; // row g + 8r of n-tile i / 4
      int col = attn_ptx_addc(p, attn_ptx_mulc(p, x->t, 2), 8 * (i >> 2));
      int off = add64(p, rowb, i64_of(p, attn_ptx_mulc(p, col, 2)));
      int ptr = attn_ptx_op(p,
                            "llvm.getelementptr %%v%d[%%v%d] : (!llvm.ptr, "
                            "i64) -> !llvm.ptr, i8",
                            x->out, off);
      int w = attn_ptx_pack2(p, attn_ptx_fmul(p, ov[idx], inv[r]),
                             attn_ptx_fmul(p, ov[idx + 1], inv[r]));
      attn_ptx_line(p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr", w, ptr);
    }
    attn_ptx_line(p, "}");
  }
}

void attn_mma_emit_kernel(struct attn_strbuf *b,
                          const struct attn_hopper_kernel *k,
                          const char *attention_attr) {
  struct em e = {.k = k};
  struct attn_ptx *p = &e.p;
  attn_ptx_init(p, b, k->bf16);
  e.threads = attn_mma_threads(k);
  e.rb = (int)k->head_dim * 2;
  e.ns = k->block_n / 2;
  e.no = (int)k->head_dim / 2;
  e.q_off = 0;
  e.kv_off = (int64_t)k->block_m * e.rb;
  e.tile_bytes = (int64_t)k->block_n * e.rb;

  attn_strbuf_printf(b,
                     "llvm.func @%s(%%q: !llvm.ptr, %%k: !llvm.ptr, %%v: "
                     "!llvm.ptr, %%out: !llvm.ptr) attributes {nvvm.kernel, "
                     "nvvm.maxntid = array<i32: %d, 1, 1>, nvvm.minctasm = 1 "
                     ": i32, ",
                     k->name, e.threads);
  emit_launch(b, k, attention_attr);
  attn_strbuf_printf(b, "} {\n");

  struct ids x;
  x.tid = attn_ptx_op(p, "nvvm.read.ptx.sreg.tid.x : i32");
  int bx = attn_ptx_op(p, "nvvm.read.ptx.sreg.ctaid.x : i32");
  int gx = attn_ptx_op(p, "nvvm.read.ptx.sreg.nctaid.x : i32");
  x.h = attn_ptx_op(p, "nvvm.read.ptx.sreg.ctaid.y : i32");
  x.b = attn_ptx_op(p, "nvvm.read.ptx.sreg.ctaid.z : i32");
  // Longest causal query blocks first: block x runs query block gx-1-x.
  int qb = attn_ptx_op(p, "arith.subi %%v%d, %%v%d : i32",
                       attn_ptx_addc(p, gx, -1), bx);
  x.q_row = attn_ptx_mulc(p, qb, k->block_m);
  int kh = attn_ptx_divc(p, x.h, k->heads / k->kv_heads);
  int warp = attn_ptx_divc(p, x.tid, 32);
  x.lane = attn_ptx_remc(p, x.tid, 32);
  x.g = attn_ptx_divc(p, x.lane, 4);
  x.t = attn_ptx_remc(p, x.lane, 4);
  x.x7 = andc(p, x.lane, 7);
  x.warp_row0 = attn_ptx_addi(p, x.q_row, attn_ptx_mulc(p, warp, 16));
  x.frag_hi = attn_ptx_divc(p, x.lane, 16);
  x.frag_row = attn_ptx_addi(
      p, attn_ptx_mulc(p, andc(p, attn_ptx_divc(p, x.lane, 8), 1), 8), x.x7);
  x.klo = andc(p, attn_ptx_divc(p, x.lane, 8), 1);
  x.krow = attn_ptx_mulc(
      p, attn_ptx_addi(p, attn_ptx_mulc(p, x.frag_hi, 8), x.x7), e.rb);
  int64_t blocks = attn_hopper_key_blocks(k);
  x.kend = attn_ptx_ci32(p, blocks);
  if (k->causal) {
    int last = attn_ptx_addc(p, x.q_row, k->block_m);
    int diag = attn_ptx_op(p, "arith.ceildivui %%v%d, %%v%d : i32", last,
                           attn_ptx_ci32(p, k->block_n));
    x.kend = attn_ptx_op(p, "arith.minui %%v%d, %%v%d : i32", diag, x.kend);
  }
  x.raw = attn_ptx_op(p, "llvm.mlir.addressof @attn_smem : !llvm.ptr<3>");
  x.sbase = attn_ptx_op(p, "llvm.ptrtoint %%v%d : !llvm.ptr<3> to i32", x.raw);
  x.qsrc = head_address(&e, "q", x.b, x.h, k->heads, k->seq_q);
  x.ksrc = head_address(&e, "k", x.b, kh, k->kv_heads, k->seq_k);
  x.vsrc = head_address(&e, "v", x.b, kh, k->kv_heads, k->seq_k);
  x.out = attn_ptx_op(
      p, "llvm.getelementptr %%out[0] : (!llvm.ptr) -> !llvm.ptr, i8");
  x.scale_log2 = attn_ptx_cf32(p, (float)(k->scale * 1.4426950408889634));
  x.ninf = attn_ptx_cf32(p, -INFINITY);
  x.zero = attn_ptx_cf32(p, 0.0f);
  x.nz = attn_ptx_cf32(p, -0.0f);

  // Q, then the first stages - 1 key blocks, one commit group each.
  load_tile(&e, &x, attn_ptx_ci32(p, e.q_off), x.qsrc, x.q_row, k->block_m,
            k->seq_q);
  attn_ptx_asm0(p, "cp.async.commit_group;");
  for (int s = 0; s < k->stages - 1; ++s)
    load_block(&e, &x, attn_ptx_ci32(p, s));
  cp_async_wait(&e, k->stages - 1);
  attn_ptx_asm0(p, "bar.sync 0;");
  struct rope r = {0};
  if (k->rope) {
    rope_setup(&e, &x, &r);
    rope_tile(&e, &x, &r, attn_ptx_ci32(p, e.q_off), k->block_m,
              attn_ptx_addc(p, x.q_row, k->rope_offset));
    attn_ptx_asm0(p, "bar.sync 0;");
  }
  // This warp's 16 Q rows as A fragments, for every 16 columns.
  int qf[8][4];
  {
    int base = attn_ptx_addi(
        p, attn_ptx_addc(p, x.sbase, e.q_off),
        attn_ptx_mulc(p, attn_ptx_addi(p, attn_ptx_mulc(p, warp, 16),
                                       x.frag_row),
                      e.rb));
    for (int kk = 0; kk < k->head_dim / 16; ++kk) {
      int chunk = xori(p, attn_ptx_addc(p, x.frag_hi, 2 * kk), x.x7);
      ldmatrix_x4(&e, attn_ptx_addi(p, base, attn_ptx_mulc(p, chunk, 16)),
                  false, qf[kk]);
    }
  }

  // The key loop, carrying O, m and l.
  int ncarry = e.no + 4;
  int init[MAX_REGS + 4], arg[MAX_REGS + 4];
  const char *tys[MAX_REGS + 4];
  for (int i = 0; i < ncarry; ++i) {
    init[i] = i < e.no || i >= e.no + 2 ? x.zero : x.ninf;
    tys[i] = "f32";
  }
  int lo = attn_ptx_cidx(p, 0), hi = attn_ptx_to_index(p, x.kend),
      st = attn_ptx_cidx(p, 1);
  int it = p->next++, res = p->next++;
  attn_ptx_open_for(p, res, it, lo, hi, st, ncarry, init, arg, NULL);
  {
    int j = attn_ptx_from_index(p, it);
    // Block j has landed for every thread, and every warp is done with the
    // stage the next load overwrites (block j - 1's).
    cp_async_wait(&e, k->stages - 2);
    attn_ptx_asm0(p, "bar.sync 0;");
    load_block(&e, &x, attn_ptx_addc(p, j, k->stages - 1));
    int kt = tile_k(&e, attn_ptx_remc(p, j, k->stages));
    if (k->rope) {
      rope_tile(&e, &x, &r, kt, k->block_n,
                attn_ptx_addc(p, attn_ptx_mulc(p, j, k->block_n),
                              k->rope_offset_k));
      attn_ptx_asm0(p, "bar.sync 0;");
    }
    int ov[MAX_REGS], m[2] = {arg[e.no], arg[e.no + 1]},
                      l[2] = {arg[e.no + 2], arg[e.no + 3]};
    memcpy(ov, arg, sizeof(int) * (size_t)e.no);
    int skip = -1;
    if (k->causal) {
      // Blocks entirely above this warp's rows change nothing.
      skip = attn_ptx_cmp(p, "ugt", attn_ptx_mulc(p, j, k->block_n),
                          attn_ptx_addc(p, x.warp_row0, 15));
      int rr = attn_ptx_open_if(&e.p, skip, ncarry, tys);
      attn_ptx_yield_list(p, "scf.yield", arg, ncarry, tys);
      attn_ptx_line(p, "} else {");
      skip = rr;
    }
    block(&e, &x, qf, j, kt, ov, m, l);
    int out[MAX_REGS + 4];
    memcpy(out, ov, sizeof(int) * (size_t)e.no);
    out[e.no] = m[0];
    out[e.no + 1] = m[1];
    out[e.no + 2] = l[0];
    out[e.no + 3] = l[1];
    attn_ptx_yield_list(p, "scf.yield", out, ncarry, tys);
    if (skip >= 0) {
      attn_ptx_line(p, "}");
      for (int i = 0; i < ncarry; ++i)
        out[i] = result_f32(&e, &x, skip, i);
      attn_ptx_yield_list(p, "scf.yield", out, ncarry, tys);
    }
  }
  attn_ptx_line(p, "}");

  int ov[MAX_REGS], lf[2];
  for (int i = 0; i < e.no; ++i)
    ov[i] = result_f32(&e, &x, res, i);
  for (int i = 0; i < 2; ++i)
    lf[i] = result_f32(&e, &x, res, e.no + 2 + i);
  epilogue(&e, &x, ov, lf);
  attn_ptx_line(p, "llvm.return");
  attn_strbuf_printf(b, "}\n");
}
