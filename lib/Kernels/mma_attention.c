//===- mma_attention.c - The mma.sync attention kernel (sm_80 and newer) ===//
//
// Builds one fused attention kernel for every chip from sm_80 on as IR in
// the LLVM and NVVM dialects (scf/arith for control flow and scalar math),
// with inline PTX for mma.sync, ldmatrix and cp.async, through the
// vocabulary of kernels_internal.h: the top floor of the mma family.
// Structure (FlashAttention-2 style, one CTA per (query block, head,
// batch)):
//
//   all threads   cp.async loads of the Q tile once, then K and V tiles of
//                 64 keys into a `stages`-deep ring of shared-memory buffers
//                 (one commit group per key block, wait_group stages - 2);
//                 RoPE of Q once and of each K tile in shared memory (at
//                 explicit positions: each row's loaded, its cos/sin
//                 computed rather than stepped)
//   warp w        query rows 16w .. 16w + 15: its Q fragments in registers
//                 (ldmatrix once), then per key block S = Q K^T
//                 (mma.sync.m16n8k16, K by ldmatrix), masks only on
//                 diagonal and tail blocks, online softmax in exp2 form in
//                 registers, O += P V with P packed straight from the S
//                 accumulators into A fragments and V by ldmatrix.trans;
//                 with lse (the forward of a backward) lane 0 of each quad
//                 also writes its rows' log-sum-exp (attn_k_row_lse)
//
// A causal CTA stops at the diagonal, a windowed one reads the key blocks
// its window reaches (attn_hopper_key_range); inside it a warp skips the
// blocks entirely above its own rows or outside their window. Score
// functions of any form (softcap, ALiBi and the gate among them, as bodies)
// modify S before the mask, mask functions of any form mask it after
// (softmax.c, score_fn.c; their
// captures are parameters in the tile kernel's order). Shared-memory tiles are rows
// of head_dim 16-bit elements whose 16-byte chunks are XORed with row % 8,
// so that the eight row addresses of an ldmatrix matrix (and a warp's
// cp.async stores) fall in distinct banks.
//
// Registers per thread and spills: the table in lower_tile_to_mma.c. Each
// op is located at the tile kernel, named by its role: mma.kernel (the
// function), mma.setup, mma.load, mma.rope, mma.pipeline (the key loop),
// mma.scores, mma.mask, mma.softmax, mma.pv, mma.epilogue.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/// Most registers of one kind a thread holds: O at head dim 128 (64), S at
/// block-n 128 (64).
#define MAX_REGS 64

struct em {
  struct attn_builder *b;
  const struct attn_hopper_kernel *k;
  int threads;
  int rb;                            // bytes per tile row: head_dim * 2
  int ns, no;                        // S and O accumulator registers per thread
  int64_t q_off, kv_off, tile_bytes; // shared-memory layout (bytes)
};

/// Values every part of the kernel reads.
struct ids {
  MlirValue tid, lane, g, t, x7; // lane / 4, lane % 4, lane % 8
  MlirValue raw, sbase; // @attn_smem as !llvm.ptr<3> and as an i32 address
  MlirValue h, b, q_row, warp_row0, kend;
  MlirValue kfirst; // a window's or the key table's first block; null: 0
  MlirValue kff, kfl; // the key table's wholly visible blocks; null: none
  /// With k->key_lists: the tile's entries in key_lists (kend of them:
  /// position j of the key loop is block entry >> 1), and for the block
  /// being masked whether the mask functions hide none of its keys; null
  /// otherwise.
  MlirValue klist, fn_full;
  MlirValue qsrc, ksrc, vsrc, out; // i64 addresses of the head's row 0; out
  MlirValue lse;                   // with k->lse: the parameter lse
  MlirValue frag_row;              // ((lane / 8) % 2) * 8 + lane % 8
  MlirValue frag_hi;               // lane / 16
  MlirValue krow;                  // ((lane / 16) * 8 + lane % 8) * rb
  MlirValue klo;                   // (lane / 8) % 2
  MlirValue scale_log2, ninf, zero, nz;
  struct attn_k_fn *fn; // score and mask functions; NULL: none
};

/// New ops are named role; returns the location to go back to.
static MlirLocation role(struct em *e, const char *name) {
  MlirLocation prev = e->b->loc;
  attn_builder_role(e->b, name);
  return prev;
}

//===-- Small helpers -----------------------------------------------------===//

static MlirValue add64(struct attn_builder *b, MlirValue x, MlirValue y) {
  return attn_b_addi(b, x, y);
}

/// Byte offset in a tile of the 16-byte chunk `chunk` (i32) of row `row`
/// (i32): chunk ^ (row % 8) within the row.
static MlirValue swz(struct em *e, MlirValue row, MlirValue chunk) {
  struct attn_builder *b = e->b;
  MlirValue pc = attn_b_xori(b, chunk, attn_k_andc(b, row, 7));
  return attn_b_addi(b, attn_k_mulc(b, row, e->rb), attn_k_mulc(b, pc, 16));
}

//===-- Instructions ------------------------------------------------------===//

/// Four 8x8 matrices of 16-bit elements from shared memory; lane l gives the
/// address of row l % 8 of matrix l / 8; r[i] is this lane's part of matrix
/// i (transposed with trans).
static void ldmatrix_x4(struct em *e, MlirValue addr, bool trans,
                        MlirValue r[4]) {
  attn_k_ldmatrix_x4(e->b, addr, trans, r);
}

/// c (4 f32, updated) += A (a[0..3]) B (b0, b1): one m16n8k16 tile.
static void mma(struct em *e, MlirValue *c, const MlirValue a[4], MlirValue b0,
                MlirValue b1) {
  attn_k_mma16816(e->b, e->k->bf16, c, a, b0, b1);
}

/// Copies 16 bytes from global address src (i64) to shared address dst
/// (i32), reading only `bytes` (i32: 16 or 0) and zero-filling the rest.
static void cp_async(struct em *e, MlirValue dst, MlirValue src,
                     MlirValue bytes) {
  attn_k_cp_async16(e->b, dst, src, bytes);
}

static void cp_async_wait(struct em *e, int pending) {
  attn_k_cp_async_wait(e->b, pending);
}

/// The commit of the cp.async copies issued so far as one group.
static void cp_async_commit(struct em *e) {
  attn_k_cp_async_commit(e->b);
}

/// Every thread of the CTA meets at barrier 0.
static void bar_sync(struct em *e) {
  attn_k_bar_sync(e->b, (MlirValue){NULL}, 0);
}

//===-- Loads -------------------------------------------------------------===//

/// Issues cp.async copies of rows [row0, row0 + rows) of a head whose row 0
/// is at src (i64) into the tile at shared offset dst (i32, from the base);
/// rows at or past seq read nothing and become zeros (so padding keys and
/// values are finite). rows * head_dim / 8 is a multiple of the threads.
static void load_tile(struct em *e, const struct ids *x, MlirValue dst,
                      MlirValue src, MlirValue row0, int rows, int64_t seq) {
  struct attn_builder *b = e->b;
  MlirLocation prev = role(e, "mma.load");
  int cpr = (int)e->k->head_dim / 8; // 16-byte chunks per row
  int n = rows * cpr / e->threads;
  MlirValue last = attn_b_i32(b, seq - 1);
  MlirValue sixteen = attn_b_i32(b, 16), none = attn_b_i32(b, 0);
  MlirValue at = attn_b_addi(b, x->sbase, dst);
  for (int i = 0; i < n; ++i) {
    MlirValue id = attn_k_addc(b, x->tid, (long long)i * e->threads);
    MlirValue row = attn_k_divc(b, id, cpr), ch = attn_k_remc(b, id, cpr);
    MlirValue grow = attn_b_addi(b, row0, row);
    MlirValue ok = attn_k_cmpc(b, ATTN_B_ULT, grow, seq);
    MlirValue srow = attn_b_select(b, ok, grow, last);
    MlirValue off =
        attn_b_addi(b, attn_k_mulc(b, srow, e->rb), attn_k_mulc(b, ch, 16));
    cp_async(e, attn_b_addi(b, at, swz(e, row, ch)),
             add64(b, src, attn_k_i64_of(b, off)),
             attn_b_select(b, ok, sixteen, none));
  }
  b->loc = prev;
}

/// Shared offsets (i32, from the base) of stage s's K and V tiles.
static MlirValue tile_k(struct em *e, MlirValue s) {
  return attn_k_addc(e->b, attn_k_mulc(e->b, s, 2 * e->tile_bytes), e->kv_off);
}

/// Issues the loads of key block j into its stage (j % stages), when j <
/// kend, then closes the commit group (empty when j >= kend, so that every
/// block owns one group).
/// The key block (i32) at position j of the key loop: j itself, or its
/// entry in the tile's key list (and in *full, when asked, the entry's flag:
/// the mask functions hide no key of it; null without a list).
static MlirValue key_block(struct em *e, const struct ids *x, MlirValue j,
                           MlirValue *full) {
  struct attn_builder *b = e->b;
  if (full)
    *full = (MlirValue){NULL};
  if (mlirValueIsNull(x->klist))
    return j;
  MlirValue en =
      attn_k_load(b, attn_k_gep_elem(b, x->klist, j, b->t.i32), b->t.i32);
  if (full)
    *full = attn_k_cmpc(b, ATTN_B_NE, attn_k_andc(b, en, 1), 0);
  return attn_b_binary(b, "arith.shrui", en, attn_b_i32(b, 1));
}

static void load_block(struct em *e, const struct ids *x, MlirValue j) {
  const struct attn_hopper_kernel *k = e->k;
  struct attn_builder *b = e->b;
  MlirLocation prev = role(e, "mma.load");
  MlirValue ok = attn_b_cmpi(b, ATTN_B_ULT, j, x->kend);
  struct attn_b_if s;
  attn_b_if_open(b, &s, ok, 0, NULL, false);
  MlirValue kt = tile_k(e, attn_k_remc(b, j, k->stages));
  MlirValue row0 = attn_k_mulc(b, key_block(e, x, j, NULL), k->block_n);
  load_tile(e, x, kt, x->ksrc, row0, k->block_n, k->seq_k);
  load_tile(e, x, attn_k_addc(b, kt, e->tile_bytes), x->vsrc, row0, k->block_n,
            k->seq_k);
  attn_b_if_close(b, &s, 0, NULL);
  cp_async_commit(e);
  b->loc = prev;
}

//===-- RoPE in shared memory ---------------------------------------------===//

/// How the threads share a rotation: "slots" of two adjacent pairs (one
/// 32-bit word of each pair's half, see rotate_slot). When the threads are
/// a multiple of the slots, a thread keeps one slot and steps cos/sin down
/// its rows (rows g0, g0 + groups, ...) by a rotation; otherwise every
/// (row, slot) item computes its own.
struct rope {
  int slots, groups;            // groups == 0: per item
  MlirValue slot, g0;           // this thread's slot and first row
  MlirValue c1, c2;             // first columns of the slot's two words
  MlirValue f0, f1;             // inverse frequencies of the slot's two pairs
  MlirValue sc0, ss0, sc1, ss1; // cos/sin of one step (groups rows)
};

/// Columns (i32) of slot's two words: rotate-half pairs (2s, 2s + r/2) and
/// (2s + 1, 2s + 1 + r/2); interleaved pairs (4s, 4s + 1) and (4s + 2,
/// 4s + 3). Checked against the shared definition of a pair's columns.
static void slot_cols(struct em *e, MlirValue slot, MlirValue *c1,
                      MlirValue *c2) {
  MlirValue pair = attn_k_mulc(e->b, slot, 2), unused;
  attn_k_rope_pair_cols(e->b, e->k, pair, c1, &unused);
  *c2 = e->k->interleaved ? attn_k_addc(e->b, *c1, 2) : unused;
}

static void rope_setup(struct em *e, const struct ids *x, struct rope *r) {
  struct attn_builder *b = e->b;
  memset(r, 0, sizeof *r);
  r->slots = (int)(e->k->rotary_dim / 4);
  if (e->threads % r->slots)
    return;
  MlirLocation prev = role(e, "mma.rope");
  r->groups = e->threads / r->slots;
  r->slot = attn_k_remc(b, x->tid, r->slots);
  r->g0 = attn_k_divc(b, x->tid, r->slots);
  MlirValue p0 = attn_k_mulc(b, r->slot, 2);
  r->f0 = attn_k_rope_inv_freq(b, e->k, p0);
  r->f1 = attn_k_rope_inv_freq(b, e->k, attn_k_addc(b, p0, 1));
  slot_cols(e, r->slot, &r->c1, &r->c2);
  MlirValue gf = attn_b_f32(b, (float)r->groups);
  attn_k_sincos(b, attn_b_mulf(b, gf, r->f0), &r->sc0, &r->ss0);
  attn_k_sincos(b, attn_b_mulf(b, gf, r->f1), &r->sc1, &r->ss1);
  b->loc = prev;
}

/// A pointer to the 32-bit word at column col (even) of row of the tile at
/// shared offset tile (all i32).
static MlirValue word_ptr(struct em *e, const struct ids *x, MlirValue tile,
                          MlirValue row, MlirValue col) {
  struct attn_builder *b = e->b;
  MlirValue off =
      attn_b_addi(b, attn_b_addi(b, tile, swz(e, row, attn_k_divc(b, col, 8))),
                  attn_k_mulc(b, attn_k_remc(b, col, 8), 2));
  return attn_k_smem_ptr(b, x->raw, off);
}

/// Rotates the slot's two words in row of the tile: pair 0 by (cs0, sn0),
/// pair 1 by (cs1, sn1).
static void rotate_slot(struct em *e, const struct ids *x, MlirValue tile,
                        MlirValue row, MlirValue c1, MlirValue c2,
                        MlirValue cs0, MlirValue sn0, MlirValue cs1,
                        MlirValue sn1) {
  MlirValue pa = word_ptr(e, x, tile, row, c1),
            pb = word_ptr(e, x, tile, row, c2);
  attn_k_rope_rotate_words(e->b, e->k, pa, pb, cs0, sn0, cs1, sn1);
}

/// cos/sin of an f32 angle pos times f0 and f1 (pos: i32, signed: an
/// explicit position).
static void slot_angles(struct em *e, MlirValue pos_i, MlirValue f0,
                        MlirValue f1, MlirValue cs[4]) {
  struct attn_builder *b = e->b;
  MlirValue pos = attn_b_cast(b, "arith.sitofp", pos_i, b->t.f32);
  attn_k_sincos(b, attn_b_mulf(b, pos, f0), &cs[0], &cs[1]);
  attn_k_sincos(b, attn_b_mulf(b, pos, f1), &cs[2], &cs[3]);
}

/// Rotates rows [0, rows) of the tile at shared offset tile (i32); row 0 is
/// at position pos0 (i32), or with explicit positions (pp's base not null)
/// is sequence row pos0, each row's position loaded (once per row a thread
/// rotates) and its cos/sin computed. The caller synchronises before and
/// after.
static void rope_tile(struct em *e, const struct ids *x, const struct rope *r,
                      MlirValue tile, int rows, MlirValue pos0,
                      const struct attn_k_rope_pos *pp) {
  struct attn_builder *b = e->b;
  MlirLocation prev = role(e, "mma.rope");
  if (!mlirValueIsNull(pp->base) && r->groups) {
    MlirValue lo = attn_k_to_index(b, r->g0), hi = attn_b_index(b, rows),
              st = attn_b_index(b, r->groups);
    struct attn_b_for f;
    attn_b_for_open(b, &f, lo, hi, st, 0, NULL);
    MlirValue row = attn_k_from_index(b, f.iv), cs[4];
    slot_angles(e, attn_k_rope_pos_at(b, pp, attn_b_addi(b, pos0, row)), r->f0,
                r->f1, cs);
    rotate_slot(e, x, tile, row, r->c1, r->c2, cs[0], cs[1], cs[2], cs[3]);
    attn_b_for_close(b, &f, 0, NULL);
    b->loc = prev;
    return;
  }
  if (r->groups) {
    MlirValue pos = attn_k_uitofp(b, attn_b_addi(b, pos0, r->g0), b->t.f32);
    MlirValue c0, s0, c1, s1;
    attn_k_sincos(b, attn_b_mulf(b, pos, r->f0), &c0, &s0);
    attn_k_sincos(b, attn_b_mulf(b, pos, r->f1), &c1, &s1);
    MlirValue lo = attn_k_to_index(b, r->g0), hi = attn_b_index(b, rows),
              st = attn_b_index(b, r->groups);
    MlirValue init[4] = {c0, s0, c1, s1}, next[4];
    struct attn_b_for f;
    attn_b_for_open(b, &f, lo, hi, st, 4, init);
    MlirValue row = attn_k_from_index(b, f.iv);
    rotate_slot(e, x, tile, row, r->c1, r->c2, f.args[0], f.args[1], f.args[2],
                f.args[3]);
    attn_k_rope_step_rows(b, f.args[0], f.args[1], f.args[2], f.args[3], r->sc0,
                          r->ss0, r->sc1, r->ss1, next);
    attn_b_for_close(b, &f, 4, next);
    b->loc = prev;
    return;
  }
  // Per item: the slot's frequencies and angles from scratch.
  MlirValue lo = attn_k_to_index(b, x->tid),
            hi = attn_b_index(b, (long long)rows * r->slots),
            st = attn_b_index(b, e->threads);
  struct attn_b_for f;
  attn_b_for_open(b, &f, lo, hi, st, 0, NULL);
  MlirValue item = attn_k_from_index(b, f.iv);
  MlirValue row = attn_k_divc(b, item, r->slots),
            slot = attn_k_remc(b, item, r->slots);
  MlirValue p0 = attn_k_mulc(b, slot, 2);
  MlirValue f0 = attn_k_rope_inv_freq(b, e->k, p0);
  MlirValue f1 = attn_k_rope_inv_freq(b, e->k, attn_k_addc(b, p0, 1));
  MlirValue c1, c2;
  slot_cols(e, slot, &c1, &c2);
  if (!mlirValueIsNull(pp->base)) {
    MlirValue cs[4];
    slot_angles(e, attn_k_rope_pos_at(b, pp, attn_b_addi(b, pos0, row)), f0, f1,
                cs);
    rotate_slot(e, x, tile, row, c1, c2, cs[0], cs[1], cs[2], cs[3]);
    attn_b_for_close(b, &f, 0, NULL);
    b->loc = prev;
    return;
  }
  MlirValue pos = attn_k_uitofp(b, attn_b_addi(b, pos0, row), b->t.f32);
  MlirValue cs0, sn0, cs1, sn1;
  attn_k_sincos(b, attn_b_mulf(b, pos, f0), &cs0, &sn0);
  attn_k_sincos(b, attn_b_mulf(b, pos, f1), &cs1, &sn1);
  rotate_slot(e, x, tile, row, c1, c2, cs0, sn0, cs1, sn1);
  attn_b_for_close(b, &f, 0, NULL);
  b->loc = prev;
}

//===-- One key block -----------------------------------------------------===//

/// S = Q K^T for the K tile at shared offset kt: ns accumulators, n-tile nt
/// in sv[4 nt .. 4 nt + 3] (rows g and g + 8, columns 8 nt + 2t, + 1).
static void scores(struct em *e, const struct ids *x, MlirValue qf[][4],
                   MlirValue kt, MlirValue *sv) {
  const struct attn_hopper_kernel *k = e->k;
  struct attn_builder *b = e->b;
  MlirLocation prev = role(e, "mma.scores");
  for (int i = 0; i < e->ns; ++i)
    sv[i] = x->zero;
  MlirValue base = attn_b_addi(b, attn_b_addi(b, x->sbase, kt), x->krow);
  for (int kk = 0; kk < k->head_dim / 16; ++kk) {
    MlirValue chunk = attn_b_xori(b, attn_k_addc(b, x->klo, 2 * kk), x->x7);
    MlirValue at = attn_b_addi(b, base, attn_k_mulc(b, chunk, 16));
    for (int pp = 0; pp < k->block_n / 16; ++pp) {
      MlirValue kb[4];
      ldmatrix_x4(e, attn_k_addc(b, at, (long long)16 * pp * e->rb), false, kb);
      mma(e, &sv[8 * pp], qf[kk], kb[0], kb[1]);
      mma(e, &sv[8 * pp + 4], qf[kk], kb[2], kb[3]);
    }
  }
  b->loc = prev;
}

/// O += P V for the V tile at shared offset vt; pa holds P as A fragments
/// (four registers per 16 keys).
static void add_pv(struct em *e, const struct ids *x, MlirValue vt,
                   const MlirValue *pa, MlirValue *ov) {
  const struct attn_hopper_kernel *k = e->k;
  struct attn_builder *b = e->b;
  MlirLocation prev = role(e, "mma.pv");
  MlirValue base = attn_b_addi(b, attn_b_addi(b, x->sbase, vt),
                               attn_k_mulc(b, x->frag_row, e->rb));
  for (int dp = 0; dp < k->head_dim / 16; ++dp) {
    MlirValue chunk = attn_b_xori(b, attn_k_addc(b, x->frag_hi, 2 * dp), x->x7);
    MlirValue at = attn_b_addi(b, base, attn_k_mulc(b, chunk, 16));
    for (int kc = 0; kc < k->block_n / 16; ++kc) {
      MlirValue vb[4];
      ldmatrix_x4(e, attn_k_addc(b, at, (long long)16 * kc * e->rb), true, vb);
      mma(e, &ov[8 * dp], &pa[4 * kc], vb[0], vb[1]);
      mma(e, &ov[8 * dp + 4], &pa[4 * kc], vb[2], vb[3]);
    }
  }
  b->loc = prev;
}

/// The score functions on S of key block j, then masks S
/// (updated in place) where the block crosses this warp's diagonal, a
/// window's edge or the end of the keys; other blocks pass unchanged. The
/// mma.sync fragments are laid out as the wgmma ones, rows warp_row0 + g
/// and + 8, so this is the Hopper kernel's mask with the warp's 16 rows in
/// place of a warpgroup's 64 (softmax.c).
static void mask(struct em *e, const struct ids *x, MlirValue j,
                 MlirValue *sv) {
  MlirLocation prev = role(e, "mma.mask");
  struct attn_k_softmax s = {.lr = x->t,
                             .row0 = attn_b_addi(e->b, x->warp_row0, x->g),
                             .wg_row = x->warp_row0,
                             .scale_log2 = x->scale_log2,
                             .ninf = x->ninf,
                             .zero = x->zero,
                             .group_rows = 16,
                             .fn = x->fn,
                             .kff = x->kff,
                             .kfl = x->kfl,
                             .fn_full = x->fn_full};
  if (e->k->nscore_fns) {
    role(e, "mma.mods");
    attn_k_score_mods(e->b, e->k, &s, j, sv);
    role(e, "mma.mask");
  }
  attn_k_mask(e->b, e->k, &s, j, sv);
  e->b->loc = prev;
}

/// The online softmax of one block for rows g (registers i with bit 1
/// clear) and g + 8, in exp2 form: the Hopper kernel's (softmax.c, eager,
/// the ALUs' sums; the mma kernel has neither option). Updates m, l and O,
/// and writes P as A fragments in pa.
static void softmax(struct em *e, const struct ids *x, const MlirValue *sv,
                    MlirValue m[2], MlirValue l[2], MlirValue *ov,
                    MlirValue *pa) {
  struct attn_builder *b = e->b;
  MlirLocation prev = role(e, "mma.softmax");
  struct attn_k_softmax s = {
      .scale_log2 = x->scale_log2, .ninf = x->ninf, .zero = x->zero};
  MlirValue alpha[2], pr[MAX_REGS], m_new[2], l_new[2];
  attn_k_softmax(b, e->k, &s, sv, m, l, m_new, l_new, alpha, pr);
  memcpy(m, m_new, sizeof m_new);
  memcpy(l, l_new, sizeof l_new);
  attn_k_rescale(b, e->k, ov, e->no, alpha);
  // A fragment registers of 16 keys: (row g, keys 2t..), (row g + 8, keys
  // 2t..), (row g, keys 8 + 2t..), (row g + 8, keys 8 + 2t..): the S
  // registers of two n-tiles in order, two at a time.
  for (int i = 0; i < e->ns / 2; ++i)
    pa[i] = attn_k_pack2(b, e->k->bf16, pr[2 * i], pr[2 * i + 1]);
  b->loc = prev;
}

/// One key block for this warp: scores, masks, softmax, O += P V; ov, m, l
/// are updated.
static void block(struct em *e, const struct ids *x, MlirValue qf[][4],
                  MlirValue j, MlirValue kt, MlirValue *ov, MlirValue m[2],
                  MlirValue l[2]) {
  MlirValue sv[MAX_REGS], pa[MAX_REGS / 2];
  scores(e, x, qf, kt, sv);
  mask(e, x, j, sv);
  softmax(e, x, sv, m, l, ov, pa);
  MlirLocation prev = role(e, "mma.pv");
  MlirValue vt = attn_k_addc(e->b, kt, e->tile_bytes);
  e->b->loc = prev;
  add_pv(e, x, vt, pa, ov);
}

//===-- The kernel --------------------------------------------------------===//

int attn_kernels_mma_threads(const struct attn_hopper_kernel *k) {
  return 32 * (k->block_m / 16);
}

int64_t attn_kernels_mma_smem_bytes(const struct attn_hopper_kernel *k) {
  return (int64_t)(k->block_m + 2 * k->stages * k->block_n) * k->head_dim * 2;
}

/// The kernel's attn.launch entry.
static MlirAttribute launch_attr(struct em *e, MlirAttribute attention) {
  const struct attn_hopper_kernel *k = e->k;
  // cp.async copies 16 bytes at a time: attnrt checks q, k and v.
  int64_t grid[3] = {(k->seq_q + k->block_m - 1) / k->block_m, k->heads,
                     k->batch};
  const char *ty = k->bf16 ? "bf16" : "f16";
  const struct attn_k_param base[ATTN_HOPPER_ARG_CAPTURE] = {
      {"q", ty, {k->batch, k->heads, k->seq_q, k->head_dim}, 16, 4, NULL, {0}, 0},
      {"k", ty, {k->batch, k->kv_heads, k->seq_k, k->head_dim}, 16, 4, NULL, {0}, 0},
      {"v", ty, {k->batch, k->kv_heads, k->seq_k, k->head_dim}, 16, 4, NULL, {0}, 0},
      {"out", ty, {k->batch, k->heads, k->seq_q, k->head_dim}, 4, 4, NULL, {0}, 0},
      attn_k_lse_param(k),
  };
  struct attn_k_param params[5 + ATTN_HOPPER_MAX_CAPTURES + 1];
  int n = attn_k_args_params(k, base, params);
  if (k->key_lists)
    params[n++] = (struct attn_k_param){
        .name = "key_lists", .dtype = "i32", .rank = 1,
        .shape = {attn_hopper_key_lists_words(k)}};
  MlirNamedAttribute extra = attn_b_named(e->b, "attention", attention);
  return attn_k_launch_attr(e->b, "mma-sync", grid, attn_kernels_mma_threads(k),
                            attn_kernels_mma_smem_bytes(k), n, params,
                            mlirAttributeIsNull(attention) ? 0 : 1, &extra);
}

/// i64 address of row 0 of head (batch b, head hd) of a [B, heads, seq, D]
/// tensor at ptr.
static MlirValue head_address(struct em *e, MlirValue ptr, MlirValue bi,
                              MlirValue hd, int64_t heads, int64_t seq) {
  struct attn_builder *b = e->b;
  MlirValue base = attn_k_ptrtoint(b, ptr, b->t.i64);
  MlirValue bh =
      attn_k_i64_of(b, attn_b_addi(b, attn_k_mulc(b, bi, heads), hd));
  MlirValue rows = attn_b_muli(b, bh, attn_b_i64(b, seq));
  return add64(b, base, attn_b_muli(b, rows, attn_b_i64(b, (long long)e->rb)));
}

/// Normalises O by the row sums and stores the rows below seq_q; with
/// k->lse, lane 0 of each quad also stores its rows' log-sum-exp from their
/// final maxima mf (attn_k_row_lse; mf is unread otherwise).
static void epilogue(struct em *e, const struct ids *x, const MlirValue *ov,
                     const MlirValue mf[2], const MlirValue lf[2]) {
  const struct attn_hopper_kernel *k = e->k;
  struct attn_builder *b = e->b;
  MlirLocation prev = role(e, "mma.epilogue");
  MlirValue inv[2], lsum[2];
  for (int r = 0; r < 2; ++r) {
    lsum[r] = attn_b_addf(b, lf[r], attn_k_shfl_xor(b, lf[r], 1));
    lsum[r] = attn_b_addf(b, lsum[r], attn_k_shfl_xor(b, lsum[r], 2));
    MlirValue empty = attn_b_cmpf(b, ATTN_B_F_OEQ, lsum[r], x->zero);
    MlirValue q = attn_b_divf(b, attn_b_f32(b, 1.0f), lsum[r]);
    inv[r] = attn_b_select(b, empty, x->zero, q);
  }
  MlirValue bh = attn_b_addi(b, attn_k_mulc(b, x->b, k->heads), x->h);
  for (int r = 0; r < 2; ++r) {
    MlirValue grow = attn_b_addi(b, attn_b_addi(b, x->warp_row0, x->g),
                                 attn_b_i32(b, 8 * r));
    MlirValue ok = attn_k_cmpc(b, ATTN_B_ULT, grow, k->seq_q);
    struct attn_b_if s;
    attn_b_if_open(b, &s, ok, 0, NULL, false);
    MlirValue rowi = attn_b_addi(
        b, attn_b_muli(b, attn_k_i64_of(b, bh), attn_b_i64(b, k->seq_q)),
        attn_k_i64_of(b, grow));
    MlirValue rowb = attn_b_muli(b, rowi, attn_b_i64(b, e->rb));
    for (int i = 0; i < e->no; i += 4) {
      int idx = i + 2 * r; // row g + 8r of n-tile i / 4
      MlirValue col = attn_k_addc(b, attn_k_mulc(b, x->t, 2), 8 * (i >> 2));
      MlirValue off = add64(b, rowb, attn_k_i64_of(b, attn_k_mulc(b, col, 2)));
      MlirValue ptr = attn_k_gep(b, x->out, off);
      MlirValue w = attn_k_pack2(b, k->bf16, attn_b_mulf(b, ov[idx], inv[r]),
                                 attn_b_mulf(b, ov[idx + 1], inv[r]));
      attn_k_store(b, w, ptr);
    }
    if (k->lse) {
      struct attn_b_if first;
      attn_b_if_open(b, &first, attn_k_cmpc(b, ATTN_B_EQ, x->t, 0), 0, NULL,
                     false);
      MlirValue at =
          attn_k_gep(b, x->lse, attn_b_muli(b, rowi, attn_b_i64(b, 4)));
      attn_k_store(b, attn_k_row_lse(b, mf[r], lsum[r]), at);
      attn_b_if_close(b, &first, 0, NULL);
    }
    attn_b_if_close(b, &s, 0, NULL);
  }
  b->loc = prev;
}

/// The kernel's body, in f (whose arguments are q, k, v and out).
static void build_body(struct em *e, const struct attn_b_func *f) {
  const struct attn_hopper_kernel *k = e->k;
  struct attn_builder *b = e->b;
  role(e, "mma.setup");
  struct ids x;
  x.tid = attn_k_sreg(b, "tid.x");
  MlirValue bx = attn_k_sreg(b, "ctaid.x");
  MlirValue gx = attn_k_sreg(b, "nctaid.x");
  x.h = attn_k_sreg(b, "ctaid.y");
  x.b = attn_k_sreg(b, "ctaid.z");
  // Longest causal query blocks first: block x runs query block gx-1-x.
  MlirValue qb = attn_b_subi(b, attn_k_addc(b, gx, -1), bx);
  x.q_row = attn_k_mulc(b, qb, k->block_m);
  MlirValue kh = attn_k_divc(b, x.h, k->heads / k->kv_heads);
  MlirValue warp = attn_k_divc(b, x.tid, 32);
  x.lane = attn_k_remc(b, x.tid, 32);
  x.g = attn_k_divc(b, x.lane, 4);
  x.t = attn_k_remc(b, x.lane, 4);
  x.x7 = attn_k_andc(b, x.lane, 7);
  x.warp_row0 = attn_b_addi(b, x.q_row, attn_k_mulc(b, warp, 16));
  x.frag_hi = attn_k_divc(b, x.lane, 16);
  x.frag_row = attn_b_addi(
      b, attn_k_mulc(b, attn_k_andc(b, attn_k_divc(b, x.lane, 8), 1), 8), x.x7);
  x.klo = attn_k_andc(b, attn_k_divc(b, x.lane, 8), 1);
  x.krow =
      attn_k_mulc(b, attn_b_addi(b, attn_k_mulc(b, x.frag_hi, 8), x.x7), e->rb);
  x.kff = x.kfl = x.klist = x.fn_full = (MlirValue){NULL};
  if (k->key_lists) { // the run-time lists (key_lists.c), positions from 0
    MlirValue bt = k->key_lists_batch > 1 ? x.b : attn_b_i32(b, 0);
    MlirValue ht = k->key_lists_heads > 1 ? x.h : attn_b_i32(b, 0);
    MlirValue row = attn_b_addi(
        b,
        attn_k_mulc(b, attn_b_addi(b, attn_k_mulc(b, bt, k->key_lists_heads),
                                   ht),
                    attn_hopper_query_blocks(k)),
        qb);
    MlirValue at = attn_k_gep_elem(
        b, attn_b_func_arg(f, attn_hopper_nargs(k)),
        attn_k_mulc(b, row, attn_hopper_key_blocks(k) + 1), b->t.i32);
    x.kend = attn_k_load(b, at, b->t.i32);
    x.klist = attn_k_gep_elem(b, at, attn_b_i32(b, 1), b->t.i32);
    x.kfirst = (MlirValue){NULL};
  } else if (k->key_blocks) { // the affine masks' bounds and the mask functions'
    x.kfirst = attn_k_key_table_load(b, k, qb, 0);
    x.kend = attn_k_key_table_load(b, k, qb, 1);
    x.kff = attn_k_key_table_load(b, k, qb, 2);
    x.kfl = attn_k_key_table_load(b, k, qb, 3);
  } else {
    int64_t blocks = (k->seq_k + k->block_n - 1) / k->block_n;
    x.kend = attn_b_i32(b, blocks);
    if (k->causal) {
      MlirValue last = attn_k_addc(b, x.q_row, k->block_m);
      MlirValue diag = attn_b_ceildivui(b, last, attn_b_i32(b, k->block_n));
      x.kend = attn_b_minui(b, diag, x.kend);
    }
    // A window's key blocks (attn_hopper_key_range): to the right edge of the
    // block's last row, from the block of its first row's left edge.
    x.kfirst = (MlirValue){NULL};
    if (k->window && k->window_right >= 0) {
      MlirValue last = attn_k_addc(b, x.q_row, k->block_m + k->window_right);
      MlirValue edge = attn_b_ceildivui(b, last, attn_b_i32(b, k->block_n));
      x.kend = attn_b_minui(b, edge, x.kend);
    }
    if (k->window && k->window_left >= 0) {
      MlirValue lo = attn_b_binary(b, "arith.maxsi",
                                   attn_k_addc(b, x.q_row, -k->window_left),
                                   attn_b_i32(b, 0));
      x.kfirst = attn_b_minui(b, attn_k_divc(b, lo, k->block_n),
                              attn_k_addc(b, x.kend, -1));
    }
  }
  x.raw = attn_k_addressof(b, "attn_smem", b->t.ptr_shared);
  x.sbase = attn_k_ptrtoint(b, x.raw, b->t.i32);
  x.qsrc = head_address(e, attn_k_arg(k, f, ATTN_HOPPER_ARG_Q), x.b, x.h,
                        k->heads, k->seq_q);
  x.ksrc = head_address(e, attn_k_arg(k, f, ATTN_HOPPER_ARG_K), x.b, kh,
                        k->kv_heads, k->seq_k);
  x.vsrc = head_address(e, attn_k_arg(k, f, ATTN_HOPPER_ARG_V), x.b, kh,
                        k->kv_heads, k->seq_k);
  x.out = attn_k_gep_const(b, attn_k_arg(k, f, ATTN_HOPPER_ARG_OUT), 0);
  x.lse = (MlirValue){NULL};
  if (k->lse)
    x.lse = attn_k_gep_const(b, attn_k_arg(k, f, ATTN_HOPPER_ARG_LSE), 0);
  x.scale_log2 =
      attn_b_f32(b, (float)(attn_k_score_factor(k) * 1.4426950408889634));
  x.ninf = attn_b_f32(b, -INFINITY);
  x.zero = attn_b_f32(b, 0.0f);
  x.nz = attn_b_f32(b, -0.0f);
  struct attn_k_fn fn;
  x.fn = NULL;
  if (attn_k_has_fns(k)) { // what the functions read of the head and rows
    role(e, "mma.mods");
    MlirValue caps[ATTN_K_FN_PTRS];
    attn_k_capture_args(k, f, caps);
    attn_k_fn_init(&fn, k, caps);
    attn_k_fn_tile(b, &fn, x.b, x.h, attn_b_addi(b, x.warp_row0, x.g));
    x.fn = &fn;
  }

  // Q, then the first stages - 1 key blocks, one commit group each.
  role(e, "mma.load");
  load_tile(e, &x, attn_b_i32(b, e->q_off), x.qsrc, x.q_row, k->block_m,
            k->seq_q);
  cp_async_commit(e);
  for (int s = 0; s < k->stages - 1; ++s)
    load_block(e, &x,
               mlirValueIsNull(x.kfirst) ? attn_b_i32(b, s)
                                         : attn_k_addc(b, x.kfirst, s));
  cp_async_wait(e, k->stages - 1);
  bar_sync(e);
  struct rope r;
  memset(&r, 0, sizeof r);
  // Explicit positions: the parameters' rows of this CTA's batch.
  struct attn_k_rope_pos qpos = {.base = {NULL}, .len = k->seq_q},
                         kpos = {.base = {NULL}, .len = k->seq_k};
  if (k->rope) {
    role(e, "mma.rope");
    if (k->q_positions)
      qpos.base = attn_k_rope_pos_base(
          b, attn_k_arg(k, f, ATTN_HOPPER_ARG_CAPTURE + k->q_pos_capture), x.b,
          k->seq_q);
    if (k->k_positions)
      kpos.base = attn_k_rope_pos_base(
          b, attn_k_arg(k, f, ATTN_HOPPER_ARG_CAPTURE + k->k_pos_capture), x.b,
          k->seq_k);
    rope_setup(e, &x, &r);
    rope_tile(e, &x, &r, attn_b_i32(b, e->q_off), k->block_m,
              attn_k_addc(b, x.q_row, k->rope_offset), &qpos);
    bar_sync(e);
  }
  // This warp's 16 Q rows as A fragments, for every 16 columns.
  role(e, "mma.load");
  MlirValue qf[8][4];
  {
    MlirValue base = attn_b_addi(
        b, attn_k_addc(b, x.sbase, e->q_off),
        attn_k_mulc(b, attn_b_addi(b, attn_k_mulc(b, warp, 16), x.frag_row),
                    e->rb));
    for (int kk = 0; kk < k->head_dim / 16; ++kk) {
      MlirValue chunk = attn_b_xori(b, attn_k_addc(b, x.frag_hi, 2 * kk), x.x7);
      ldmatrix_x4(e, attn_b_addi(b, base, attn_k_mulc(b, chunk, 16)), false,
                  qf[kk]);
    }
  }

  // The key loop, carrying O, m and l.
  role(e, "mma.pipeline");
  int ncarry = e->no + 4;
  MlirValue init[MAX_REGS + 4];
  MlirType tys[MAX_REGS + 4];
  for (int i = 0; i < ncarry; ++i) {
    init[i] = i < e->no || i >= e->no + 2 ? x.zero : x.ninf;
    tys[i] = b->t.f32;
  }
  MlirValue lo = mlirValueIsNull(x.kfirst) ? attn_b_index(b, 0)
                                           : attn_k_to_index(b, x.kfirst),
            hi = attn_k_to_index(b, x.kend), st = attn_b_index(b, 1);
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, lo, hi, st, ncarry, init);
  {
    const MlirValue *arg = loop.args;
    MlirValue j = attn_k_from_index(b, loop.iv);
    // Block j has landed for every thread, and every warp is done with the
    // stage the next load overwrites (block j - 1's).
    cp_async_wait(e, k->stages - 2);
    bar_sync(e);
    load_block(e, &x, attn_k_addc(b, j, k->stages - 1));
    MlirValue kt = tile_k(e, attn_k_remc(b, j, k->stages));
    // The key block at position j (j itself without key lists).
    struct ids xj = x;
    MlirValue kb = key_block(e, &x, j, &xj.fn_full);
    if (k->rope) {
      role(e, "mma.rope");
      rope_tile(e, &x, &r, kt, k->block_n,
                attn_k_addc(b, attn_k_mulc(b, kb, k->block_n), k->rope_offset_k),
                &kpos);
      bar_sync(e);
      role(e, "mma.pipeline");
    }
    MlirValue ov[MAX_REGS], m[2] = {arg[e->no], arg[e->no + 1]},
                            l[2] = {arg[e->no + 2], arg[e->no + 3]};
    memcpy(ov, arg, sizeof(MlirValue) * (size_t)e->no);
    struct attn_b_if skip = {0};
    bool skips = k->causal || k->window;
    if (skips) {
      // Blocks entirely above this warp's rows (causal) or outside their
      // window change nothing.
      MlirValue none = {NULL};
      if (k->causal)
        none = attn_b_cmpi(b, ATTN_B_UGT, attn_k_mulc(b, kb, k->block_n),
                           attn_k_addc(b, x.warp_row0, 15));
      if (k->window && k->window_right >= 0) {
        MlirValue past =
            attn_b_cmpi(b, ATTN_B_UGT, attn_k_mulc(b, kb, k->block_n),
                        attn_k_addc(b, x.warp_row0, 15 + k->window_right));
        none = mlirValueIsNull(none) ? past : attn_b_ori(b, none, past);
      }
      if (k->window && k->window_left >= 0) {
        // The block's last key + left < the warp's first row.
        MlirValue before = attn_b_cmpi(
            b, ATTN_B_ULT,
            attn_k_addc(b, attn_k_mulc(b, kb, k->block_n),
                        k->block_n - 1 + k->window_left),
            x.warp_row0);
        none = mlirValueIsNull(none) ? before : attn_b_ori(b, none, before);
      }
      if (mlirValueIsNull(none)) // a window unbounded on both sides
        none = attn_b_constant(b, attn_b_attr_bool(b, false));
      attn_b_if_open(b, &skip, none, ncarry, tys, true);
      attn_b_if_else(b, &skip, ncarry, arg);
    }
    block(e, &xj, qf, kb, kt, ov, m, l);
    role(e, "mma.pipeline");
    MlirValue out[MAX_REGS + 4];
    memcpy(out, ov, sizeof(MlirValue) * (size_t)e->no);
    out[e->no] = m[0];
    out[e->no + 1] = m[1];
    out[e->no + 2] = l[0];
    out[e->no + 3] = l[1];
    if (skips) {
      attn_b_if_close(b, &skip, ncarry, out);
      for (int i = 0; i < ncarry; ++i)
        out[i] = attn_k_result_f32(b, skip.op, i, x.nz);
    }
    attn_b_for_close(b, &loop, ncarry, out);
  }

  MlirValue ov[MAX_REGS], lf[2], mf[2] = {{NULL}, {NULL}};
  for (int i = 0; i < e->no; ++i)
    ov[i] = attn_k_result_f32(b, loop.op, i, x.nz);
  for (int i = 0; i < 2; ++i)
    lf[i] = attn_k_result_f32(b, loop.op, e->no + 2 + i, x.nz);
  for (int i = 0; k->lse && i < 2; ++i) // the final maxima, for lse
    mf[i] = attn_k_result_f32(b, loop.op, e->no + i, x.nz);
  epilogue(e, &x, ov, mf, lf);
  if (x.fn)
    attn_k_fn_free(x.fn);
}

bool attn_kernels_build_mma_attention(MlirOperation gpu_module,
                                      MlirLocation loc,
                                      const struct attn_hopper_kernel *k,
                                      MlirAttribute attention) {
  MlirContext ctx = mlirLocationGetContext(loc);
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  struct em e = {.b = &b, .k = k};
  e.threads = attn_kernels_mma_threads(k);
  e.rb = (int)k->head_dim * 2;
  e.ns = k->block_n / 2;
  e.no = (int)k->head_dim / 2;
  e.q_off = 0;
  e.kv_off = (int64_t)k->block_m * e.rb;
  e.tile_bytes = (int64_t)k->block_n * e.rb;

  attn_k_declare_libdevice(&b, gpu_module, 16);
  MlirOperation keys = {NULL};
  if (k->key_blocks) {
    keys = attn_k_att_key_table(&b, k);
    if (mlirOperationIsNull(keys)) {
      attn_builder_finish(&b);
      return false;
    }
  }
  MlirNamedAttribute attrs[5];
  intptr_t nattrs =
      attn_k_kernel_attrs(&b, e.threads, launch_attr(&e, attention), attrs);
  // The caller's tensors, then with key lists their workspace.
  int nargs = attn_hopper_nargs(k) + (k->key_lists ? 1 : 0);
  if (k->ncaptures) { // the captures read only (attn_k_fn_capture_attrs)
    MlirAttribute all[5 + ATTN_HOPPER_MAX_CAPTURES + 1];
    for (int i = 0; i < nargs; ++i)
      all[i] = i < attn_hopper_nargs(k) &&
                       attn_hopper_arg_at(k, i) < ATTN_HOPPER_ARG_CAPTURE
                   ? mlirDictionaryAttrGet(b.ctx, 0, NULL)
                   : attn_k_fn_capture_attrs(&b);
    attrs[nattrs++] =
        attn_b_named(&b, "arg_attrs", mlirArrayAttrGet(b.ctx, nargs, all));
  }
  struct attn_b_func f;
  attn_builder_role(&b, "mma.kernel");
  attn_k_llvm_func_open(&b, &f, k->name, nargs, nattrs, attrs);
  build_body(&e, &f);
  attn_builder_role(&b, "mma.kernel");
  if (attn_k_llvm_func_finish(&b, &f))
    return true;
  if (!mlirOperationIsNull(keys))
    mlirOperationDestroy(keys);
  return false;
}
