//===- mma_attention_bwd.c - The mma.sync attention backward (sm_80+) -----===//
//
// The main kernel of the backward of an attention (issue 29) for every chip
// from sm_80 on, built as IR on attn_builder with inline PTX for mma.sync,
// ldmatrix and cp.async (as mma_attention.c), in FlashAttention-2's
// structure. The launch program around it is the Hopper backward's
// (attention_bwd_rows.c: @<name>__pre, @<name>__dq_out, @<name>__dk_out and
// their workspaces, all plain sm_80 code; RoPE by the pre placement's
// kernels, rope_kernel.c):
//
//   @<name>__main    one CTA per block_n keys of a K/V head (128: 8 warps,
//                    or 64: 4 warps), 16 keys a warp:
//                    K and V loaded once (cp.async), then per step a query
//                    block of 64 rows (Q, dO and their rows' lse2 and D,
//                    cp.async into a `stages`-deep ring, one commit group a
//                    step); warp w keeps dK and dV of its 16 keys in
//                    registers and per step computes
//                      S^T = K_w Q^T, dP^T = V_w dO^T   (mma.sync m16n8k16)
//                      P^T = 2^(c(S^T) e log2(e) - lse2)   (masked)
//                      dS^T = P^T o (dP^T - D) [o c'(S^T)]
//                      dV += P^T dO, dK += dS^T Q       (P, dS straight from
//                                                        the accumulators)
//                    stores dS^T into shared memory, and after a barrier
//                    computes dQ for 16 query rows of the block (16 (w % 4)
//                    on) and, with 8 warps, half the columns (from
//                    (w / 4) d / 2) over the CTA's keys (dS by
//                    ldmatrix.trans of dS^T, K by ldmatrix.trans), 64
//                    columns at a time, added into the
//                    f32 dq_acc by red.global.add.f32; the query blocks a
//                    key block is not seen by (causal, a window) are never
//                    visited, the query heads of a K/V head's group are
//                    walked in turn (GQA: dK and dV sum over them); last dV
//                    written (16-bit) and dK into dk_acc (f32), which
//                    __dk_out scales and rotates back
//
// The S^T, dP^T and dQ fragments are laid out as the Hopper backward's
// m64 ones with 16 rows a warp (element i: row g + 8 ((i / 2) % 2), column
// 2t + 8 (i / 4) + i % 2), so the chain c (the scale, tile.score_fn
// bodies), its derivative c' (tile.score_fn_grad) and the tile.mask_fn
// bodies are cloned per element by attn_k_fn_point_body as there
// (score_fn.c), reading the captures by global loads.
//
// Shared-memory tiles are rows of 16-bit elements whose 16-byte chunks are
// XORed with row % 8 (as mma_attention.c's): K, V (block_n rows of
// head_dim), dS^T (block_n keys x 64 queries), then per stage Q, dO (64
// rows) and lse2, D
// (64 f32 each). Rows past the sequences are zero-filled (lse2 is +inf and
// D 0 there, from __pre's padding), so padding queries have P = 0.
//
// Registers per thread and spills: the table in lower_tile_to_mma_grad.c.
// Ops are located at the tile kernel, named "mmabwd.setup", "mmabwd.load",
// "mmabwd.scores", "mmabwd.mask", "mmabwd.grads", "mmabwd.dq" and
// "mmabwd.epilogue".
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/attention_bwd_rows.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define ROWS 64     // query rows a step
#define MAIN_PARAMS 8 // q, k, v, dout, dv, rows, dq_acc, dk_acc; captures after
#define DS_RB (ROWS * 2) // bytes of a dS^T row

/// The main kernel's shared memory (offsets from @attn_smem): K and V
/// (block_n rows each), dS^T (block_n rows of ROWS), then per stage Q and dO
/// (ROWS rows each), lse2 and D (ROWS f32 each).
struct layout {
  int64_t k_off, v_off, ds_off, st_off, st_bytes, do_off, l_off, d_off, end;
};

static void layout_of(const struct attn_hopper_bwd *g, struct layout *l) {
  int64_t rb = g->k.head_dim * 2, keys = g->block_n;
  l->k_off = 0;
  l->v_off = keys * rb;
  l->ds_off = 2 * keys * rb;
  l->st_off = l->ds_off + keys * DS_RB;
  l->do_off = ROWS * rb; // within a stage, as l_off and d_off
  l->l_off = 2 * ROWS * rb;
  l->d_off = l->l_off + ROWS * 4;
  l->st_bytes = l->d_off + ROWS * 4;
  l->end = l->st_off + g->stages * l->st_bytes;
}

int64_t attn_kernels_mma_bwd_smem_bytes(const struct attn_hopper_bwd *g) {
  struct layout l;
  layout_of(g, &l);
  return l.end;
}

/// The main kernel's values.
struct mk {
  struct attn_builder *b;
  const struct attn_hopper_bwd *g;
  struct layout l;
  int keys, warps, threads; // keys a CTA (block_n: 64 or 128), 16 a warp
  int rb;              // bytes of a K, V, Q or dO row
  MlirValue raw, sbase; // @attn_smem as !llvm.ptr<3> and as an i32 address
  MlirValue q, kp, v, dout, dv, rows, dq, dk; // the parameters
  MlirValue tid, warp, lane, g4, t4, x7;
  MlirValue frag_row; // ((lane / 8) % 2) * 8 + lane % 8
  MlirValue frag_hi;  // lane / 16
  MlirValue krow;     // (lane / 16) * 8 + lane % 8
  MlirValue klo;      // (lane / 8) % 2
  MlirValue kb, kh, bz, qlo, nq, niter;
  MlirValue zero;
  struct attn_k_fn *fn; // score and mask functions, the derivative; or NULL
};

//===-- Instructions (mma_attention.c's) -----------------------------------===//

/// Four 8x8 matrices of 16-bit elements from shared address addr (i32);
/// lane l gives the address of row l % 8 of matrix l / 8; r[i] is this
/// lane's part of matrix i (transposed with trans).
static void ldmatrix_x4(const struct mk *m, MlirValue addr, bool trans,
                        MlirValue r[4]) {
  attn_k_ldmatrix_x4(m->b, addr, trans, r);
}

/// c (4 f32, updated) += A (a[0..3]) B (b0, b1): one m16n8k16 tile.
static void mma(const struct mk *m, MlirValue *c, const MlirValue a[4],
                MlirValue b0, MlirValue b1) {
  attn_k_mma16816(m->b, m->g->k.bf16, c, a, b0, b1);
}

/// Copies 16 bytes from global address src (i64) to shared address dst
/// (i32), reading only `bytes` (i32: 16 or 0) and zero-filling the rest.
static void cp_async(const struct mk *m, MlirValue dst, MlirValue src,
                     MlirValue bytes) {
  attn_k_cp_async16(m->b, dst, src, bytes);
}

static void cp_async_wait(const struct mk *m, int pending) {
  attn_k_cp_async_wait(m->b, pending);
}

static void cp_async_commit(const struct mk *m) {
  attn_k_cp_async_commit(m->b);
}

static void bar_sync(const struct mk *m) {
  attn_k_bar_sync(m->b, (MlirValue){NULL}, 0);
}

//===-- Addresses ----------------------------------------------------------===//

/// Byte offset in a tile of rows of rb bytes of the 16-byte chunk `chunk`
/// (i32) of row `row` (i32): chunk ^ (row % 8) within the row.
static MlirValue swz(const struct mk *m, int64_t rb, MlirValue row,
                     MlirValue chunk) {
  struct attn_builder *b = m->b;
  MlirValue pc = attn_b_xori(b, chunk, attn_k_andc(b, row, 7));
  return attn_b_addi(b, attn_k_mulc(b, row, rb), attn_k_mulc(b, pc, 16));
}

/// i64 address of row 0 of head (batch bi, head hd) of a [B, heads, seq, d]
/// 16-bit tensor at ptr.
static MlirValue head_address(const struct mk *m, MlirValue ptr, MlirValue bi,
                              MlirValue hd, int64_t heads, int64_t seq) {
  struct attn_builder *b = m->b;
  MlirValue base = attn_k_ptrtoint(b, ptr, b->t.i64);
  MlirValue bh =
      attn_k_i64_of(b, attn_b_addi(b, attn_k_mulc(b, bi, heads), hd));
  return add64(b, base,
               attn_b_muli(b, attn_b_muli(b, bh, attn_b_i64(b, seq)),
                           attn_b_i64(b, m->rb)));
}

/// Element i's row (key) and column (query) in the warp's m16 fragment.
static int frag_r(int i) { return 8 * ((i / 2) % 2); }
static int frag_c(int i) { return 8 * (i / 4) + (i % 2); }

//===-- Loads --------------------------------------------------------------===//

/// Issues cp.async copies of rows [row0, row0 + rows) of a head whose row 0
/// is at src (i64) into the tile at shared offset dst (i32, from the base);
/// rows at or past seq read nothing and become zeros.
static void load_tile(const struct mk *m, MlirValue dst, MlirValue src,
                      MlirValue row0, int rows, int64_t seq) {
  struct attn_builder *b = m->b;
  int cpr = (int)m->g->k.head_dim / 8; // 16-byte chunks per row
  int n = rows * cpr / m->threads;
  MlirValue last = attn_b_i32(b, seq - 1);
  MlirValue sixteen = attn_b_i32(b, 16), none = attn_b_i32(b, 0);
  MlirValue at = attn_b_addi(b, m->sbase, dst);
  for (int i = 0; i < n; ++i) {
    MlirValue id = attn_k_addc(b, m->tid, (long long)i * m->threads);
    MlirValue row = attn_k_divc(b, id, cpr), ch = attn_k_remc(b, id, cpr);
    MlirValue grow = attn_b_addi(b, row0, row);
    MlirValue ok = attn_k_cmpc(b, ATTN_B_ULT, grow, seq);
    MlirValue srow = attn_b_select(b, ok, grow, last);
    MlirValue off = add64(b, mul64(b, srow, m->rb),
                          attn_k_i64_of(b, attn_k_mulc(b, ch, 16)));
    cp_async(m, attn_b_addi(b, at, swz(m, m->rb, row, ch)), add64(b, src, off),
             attn_b_select(b, ok, sixteen, none));
  }
}

/// Step t's head (h) and query block (qb): the query heads of the K/V
/// head's group in turn, each over the query blocks that see the keys.
static void step_of(const struct mk *m, MlirValue t, MlirValue *h,
                    MlirValue *qb) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_kernel *k = &m->g->k;
  int64_t group = k->heads / k->kv_heads;
  *qb = attn_b_addi(b, m->qlo, attn_b_remui(b, t, m->nq));
  *h = attn_b_addi(b, attn_k_mulc(b, m->kh, group), attn_b_divui(b, t, m->nq));
}

/// Shared offset (i32, from the base) of step t's stage.
static MlirValue stage_of(const struct mk *m, MlirValue t) {
  return attn_k_addc(m->b,
                     attn_k_mulc(m->b, attn_k_remc(m->b, t, m->g->stages),
                                 m->l.st_bytes),
                     m->l.st_off);
}

/// Issues the loads of step t (when t < niter) into its stage: Q and dO
/// of its query block, their rows' lse2 and D; then closes the commit
/// group (empty past the steps, so that every step owns one).
static void load_step(const struct mk *m, MlirValue t) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_bwd *g = m->g;
  const struct attn_hopper_kernel *k = &g->k;
  MlirLocation prev = b->loc;
  attn_builder_role(b, "mmabwd.load");
  struct attn_b_if s;
  attn_b_if_open(b, &s, attn_b_cmpi(b, ATTN_B_ULT, t, m->niter), 0, NULL,
                 false);
  MlirValue h, qb;
  step_of(m, t, &h, &qb);
  MlirValue st = stage_of(m, t);
  MlirValue q0 = attn_k_mulc(b, qb, ROWS);
  load_tile(m, st, head_address(m, m->q, m->bz, h, k->heads, k->seq_q), q0,
            ROWS, k->seq_q);
  load_tile(m, attn_k_addc(b, st, m->l.do_off),
            head_address(m, m->dout, m->bz, h, k->heads, k->seq_q), q0, ROWS,
            k->seq_q);
  // lse2 and D of the block's rows (padded: no bounds), 16 bytes a thread
  // of the first 32: threads 0-15 lse2, 16-31 D.
  int64_t np = attn_hopper_bwd_rows(g);
  int64_t bhn = k->batch * k->heads * np;
  struct attn_b_if w;
  attn_b_if_open(b, &w, attn_k_cmpc(b, ATTN_B_ULT, m->tid, 2 * ROWS / 4), 0,
                 NULL, false);
  MlirValue which = attn_k_divc(b, m->tid, ROWS / 4),
            c = attn_k_remc(b, m->tid, ROWS / 4);
  MlirValue bh = attn_b_addi(b, attn_k_mulc(b, m->bz, k->heads), h);
  MlirValue first = attn_b_addi(b, attn_k_mulc(b, bh, np), q0);
  MlirValue src = add64(
      b, attn_k_ptrtoint(b, m->rows, b->t.i64),
      add64(b, mul64(b, which, 4 * bhn),
            add64(b, mul64(b, first, 4), mul64(b, c, 16))));
  MlirValue dst = attn_b_addi(
      b, attn_b_addi(b, m->sbase, st),
      attn_b_addi(b, attn_k_addc(b, attn_k_mulc(b, which, ROWS * 4), m->l.l_off),
                  attn_k_mulc(b, c, 16)));
  cp_async(m, dst, src, attn_b_i32(b, 16));
  attn_b_if_close(b, &w, 0, NULL);
  attn_b_if_close(b, &s, 0, NULL);
  cp_async_commit(m);
  b->loc = prev;
}

//===-- Products -----------------------------------------------------------===//

/// acc (32 f32: 16 keys x 64 queries) = A B^T with A the warp's 16 rows of
/// the block_n-row tile at at (i32 address: K or V) and B the ROWS rows of the
/// tile at bt (Q or dO), over the head dim: S^T = K_w Q^T, dP^T = V_w dO^T.
static void product_t(const struct mk *m, MlirValue at, MlirValue bt,
                      MlirValue *acc) {
  struct attn_builder *b = m->b;
  for (int i = 0; i < 32; ++i)
    acc[i] = m->zero;
  MlirValue abase = attn_b_addi(
      b, at,
      attn_k_mulc(b, attn_b_addi(b, attn_k_mulc(b, m->warp, 16), m->frag_row),
                  m->rb));
  MlirValue bbase = attn_b_addi(b, bt, attn_k_mulc(b, m->krow, m->rb));
  for (int kk = 0; kk < m->g->k.head_dim / 16; ++kk) {
    MlirValue af[4];
    MlirValue ca = attn_b_xori(b, attn_k_addc(b, m->frag_hi, 2 * kk), m->x7);
    ldmatrix_x4(m, attn_b_addi(b, abase, attn_k_mulc(b, ca, 16)), false, af);
    MlirValue cb = attn_b_xori(b, attn_k_addc(b, m->klo, 2 * kk), m->x7);
    MlirValue bat = attn_b_addi(b, bbase, attn_k_mulc(b, cb, 16));
    for (int pp = 0; pp < ROWS / 16; ++pp) {
      MlirValue bf[4];
      ldmatrix_x4(m, attn_k_addc(b, bat, (long long)16 * pp * m->rb), false,
                  bf);
      mma(m, &acc[8 * pp], af, bf[0], bf[1]);
      mma(m, &acc[8 * pp + 4], af, bf[2], bf[3]);
    }
  }
}

/// acc (d / 2 f32: 16 keys x d) += A B with A the 16-bit pairs a (ROWS / 16
/// groups of 4: P^T or dS^T from the accumulators) and B the ROWS x d tile
/// at bt (dO or Q, by ldmatrix.trans): dV += P^T dO, dK += dS^T Q.
static void product_acc(const struct mk *m, const MlirValue *a, MlirValue bt,
                        MlirValue *acc) {
  struct attn_builder *b = m->b;
  MlirValue base = attn_b_addi(b, bt, attn_k_mulc(b, m->frag_row, m->rb));
  for (int dp = 0; dp < m->g->k.head_dim / 16; ++dp) {
    MlirValue ch = attn_b_xori(b, attn_k_addc(b, m->frag_hi, 2 * dp), m->x7);
    MlirValue at = attn_b_addi(b, base, attn_k_mulc(b, ch, 16));
    for (int kc = 0; kc < ROWS / 16; ++kc) {
      MlirValue vb[4];
      ldmatrix_x4(m, attn_k_addc(b, at, (long long)16 * kc * m->rb), true, vb);
      mma(m, &acc[8 * dp], &a[4 * kc], vb[0], vb[1]);
      mma(m, &acc[8 * dp + 4], &a[4 * kc], vb[2], vb[3]);
    }
  }
}

//===-- The modifiers and masks (attention_bwd.c's, on the warp's m16) ----===//

struct blocked {
  bool q, kv;
};

/// Whether a body reads the query row and the key only by 64-row blocks:
/// the step's 64 queries and the warp's 16 keys lie in one such block each.
static struct blocked blocked_of(MlirBlock body) {
  return (struct blocked){attn_k_fn_body_blocked(body, false, 64),
                          attn_k_fn_body_blocked(body, true, 64)};
}

/// The thread's elements' query rows qi[c] (its 16 columns: element i's c
/// is 2 (i / 4) + i % 2) and keys ki[r] (its two rows), index, clamped
/// into the sequences, from query row q0 and key kr0.
static void point_indices(const struct mk *m, MlirValue q0, MlirValue kr0,
                          MlirValue qi[16], MlirValue ki[2]) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_kernel *k = &m->g->k;
  for (int c = 0; c < 16; ++c) {
    MlirValue q = attn_b_addi(
        b, q0,
        attn_k_addc(b, attn_k_mulc(b, m->t4, 2), frag_c(4 * (c / 2) + c % 2)));
    qi[c] = attn_k_to_index(b, attn_b_minui(b, q, attn_b_i32(b, k->seq_q - 1)));
  }
  for (int r = 0; r < 2; ++r) {
    MlirValue kv = attn_b_addi(b, kr0, attn_k_addc(b, m->g4, 8 * r));
    ki[r] = attn_k_to_index(b, attn_b_minui(b, kv, attn_b_i32(b, k->seq_k - 1)));
  }
}

static MlirValue point(const struct mk *m, MlirBlock body, struct blocked bl,
                       MlirValue s, int i, const MlirValue qi[16],
                       const MlirValue ki[2]) {
  return attn_k_fn_point_body(m->b, m->fn, body, s,
                              qi[bl.q ? 0 : 2 * (i / 4) + i % 2],
                              ki[bl.kv ? 0 : (i / 2) % 2]);
}

/// The modifier chain on the raw scores sv (replaced by the chain's value);
/// with grad_fn its derivative at the raw score into gv.
static void chain(const struct mk *m, const MlirValue qi[16],
                  const MlirValue ki[2], MlirValue *sv, MlirValue *gv) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_bwd *g = m->g;
  const struct attn_hopper_kernel *k = &g->k;
  MlirValue sc = attn_b_f32(b, (float)k->scale);
  bool grad = !mlirBlockIsNull(g->grad_fn);
  struct blocked gbl = grad ? blocked_of(g->grad_fn) : (struct blocked){0};
  struct blocked fbl[ATTN_HOPPER_MAX_FNS];
  for (int f = 0; f < k->nscore_fns; ++f)
    fbl[f] = blocked_of(k->score_fns[f]);
  for (int i = 0; i < 32 && !b->failed; ++i) {
    if (grad)
      gv[i] = point(m, g->grad_fn, gbl, sv[i], i, qi, ki);
    MlirValue x = sv[i];
    for (int j = 0, fi = 0; j < k->nmods; ++j) {
      if (k->mods[j] == ATTN_HOPPER_MOD_SCALE) {
        x = attn_b_mulf(b, x, sc);
      } else {
        x = point(m, k->score_fns[fi], fbl[fi], x, i, qi, ki);
        ++fi;
      }
    }
    sv[i] = x;
  }
}

/// P (p, replaced) 0 where a mask function hides the element's key.
static void mask_fns(const struct mk *m, const MlirValue qi[16],
                     const MlirValue ki[2], MlirValue *p) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_kernel *k = &m->g->k;
  struct blocked mbl[ATTN_HOPPER_MAX_FNS];
  for (int f = 0; f < k->nmask_fns; ++f)
    mbl[f] = blocked_of(k->mask_fns[f]);
  for (int i = 0; i < 32 && !b->failed; ++i)
    for (int f = 0; f < k->nmask_fns && !b->failed; ++f) {
      MlirValue vis =
          point(m, k->mask_fns[f], mbl[f], (MlirValue){NULL}, i, qi, ki);
      if (!mlirValueIsNull(vis))
        p[i] = attn_b_select(b, vis, p[i], m->zero);
    }
}

/// P = 0 for keys past the end and those the causal mask or the window
/// hides, only on the steps whose block reaches the diagonal, the window's
/// edges or the end of the keys (kr0: the warp's first key; q0: the
/// block's first row).
static void mask_edges(const struct mk *m, MlirValue q0, MlirValue kr0,
                       MlirValue *p) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_kernel *k = &m->g->k;
  bool ragged = k->seq_k % m->keys != 0;
  bool left = k->window && k->window_left >= 0,
       right = k->window && k->window_right >= 0;
  if (!(k->causal || ragged || left || right))
    return;
  MlirValue need = attn_b_constant(b, attn_b_attr_bool(b, false));
  if (k->causal) // the warp's last key after the block's first row
    need = attn_b_ori(b, need,
                      attn_b_cmpi(b, ATTN_B_UGT, attn_k_addc(b, kr0, 15), q0));
  if (ragged)
    need = attn_b_ori(
        b, need, attn_k_cmpc(b, ATTN_B_UGT, attn_k_addc(b, kr0, 16), k->seq_k));
  if (left) // the block's last row beyond the warp's first key's window
    need = attn_b_ori(b, need,
                      attn_b_cmpi(b, ATTN_B_UGT, attn_k_addc(b, q0, ROWS - 1),
                                  attn_k_addc(b, kr0, k->window_left)));
  if (right)
    need = attn_b_ori(b, need,
                      attn_b_cmpi(b, ATTN_B_UGT, attn_k_addc(b, kr0, 15),
                                  attn_k_addc(b, q0, k->window_right)));
  MlirType types[32];
  for (int i = 0; i < 32; ++i)
    types[i] = b->t.f32;
  struct attn_b_if s;
  attn_b_if_open(b, &s, need, 32, types, true);
  MlirValue masked[32];
  MlirValue kv0 = attn_b_addi(b, kr0, m->g4);
  MlirValue qc0 = attn_b_addi(b, q0, attn_k_mulc(b, m->t4, 2));
  for (int i = 0; i < 32; ++i) {
    MlirValue kv = attn_k_addc(b, kv0, frag_r(i));
    MlirValue q = attn_k_addc(b, qc0, frag_c(i));
    MlirValue off = attn_k_cmpc(b, ATTN_B_UGE, kv, k->seq_k);
    if (k->causal)
      off = attn_b_ori(b, off, attn_b_cmpi(b, ATTN_B_UGT, kv, q));
    if (left)
      off = attn_b_ori(b, off,
                       attn_b_cmpi(b, ATTN_B_UGT, q,
                                   attn_k_addc(b, kv, k->window_left)));
    if (right)
      off = attn_b_ori(b, off,
                       attn_b_cmpi(b, ATTN_B_UGT, kv,
                                   attn_k_addc(b, q, k->window_right)));
    masked[i] = attn_b_select(b, off, m->zero, p[i]);
  }
  attn_b_if_else(b, &s, 32, masked);
  attn_b_if_close(b, &s, 32, p);
  for (int i = 0; i < 32; ++i)
    p[i] = s.results[i];
}

//===-- One step -----------------------------------------------------------===//

/// Step t (its stage's tiles landed): dv and dk (d / 2 f32 each) updated,
/// dQ of the warp's share of the block (16 rows, with 8 warps half the
/// columns) added into dq_acc.
static void step(const struct mk *m, MlirValue t, MlirValue *dv,
                 MlirValue *dk) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_bwd *g = m->g;
  const struct attn_hopper_kernel *k = &g->k;
  int64_t d = k->head_dim, np = attn_hopper_bwd_rows(g);
  attn_builder_role(b, "mmabwd.scores");
  MlirValue h, qb;
  step_of(m, t, &h, &qb);
  MlirValue st_rel = stage_of(m, t);
  MlirValue qs = attn_b_addi(b, m->sbase, st_rel);
  MlirValue dos = attn_k_addc(b, qs, m->l.do_off);
  MlirValue kt = attn_k_addc(b, m->sbase, m->l.k_off);
  MlirValue vt = attn_k_addc(b, m->sbase, m->l.v_off);
  MlirValue q0 = attn_k_mulc(b, qb, ROWS);
  MlirValue kr0 = attn_b_addi(b, attn_k_mulc(b, m->kb, m->keys),
                              attn_k_mulc(b, m->warp, 16));
  MlirValue sv[32], pv[32], gv[32], p[32];
  product_t(m, kt, qs, sv);

  // P^T: the chain, exp2 against the columns' lse2, the masks.
  MlirValue c8 = attn_k_mulc(b, m->t4, 8);
  MlirValue lbase = attn_k_smem_ptr(
      b, m->raw, attn_b_addi(b, c8, attn_k_addc(b, st_rel, m->l.l_off)));
  MlirValue dbase = attn_k_smem_ptr(
      b, m->raw, attn_b_addi(b, c8, attn_k_addc(b, st_rel, m->l.d_off)));
  MlirValue qi[16], ki[2];
  if (m->fn) {
    attn_k_fn_point_tile(b, m->fn, m->bz, h);
    point_indices(m, q0, kr0, qi, ki);
  }
  if (k->nmods || !mlirBlockIsNull(g->grad_fn))
    chain(m, qi, ki, sv, gv);
  MlirValue scale_log2 = attn_b_f32(b, (float)(g->exp_scale * LOG2E));
  for (int i = 0; i < 32; ++i) {
    MlirValue l2 = attn_k_load(
        b, attn_k_gep_const(b, lbase, (int32_t)(4 * frag_c(i))), b->t.f32);
    p[i] = attn_k_ex2(b, attn_b_subf(b, attn_b_mulf(b, sv[i], scale_log2), l2));
  }
  attn_builder_role(b, "mmabwd.mask");
  mask_edges(m, q0, kr0, p);
  if (k->nmask_fns)
    mask_fns(m, qi, ki, p);

  // P packed for dV; with the derivative, dS made from P o c' (a zero P,
  // a masked score, stays zero where c' is not finite).
  attn_builder_role(b, "mmabwd.grads");
  MlirValue pp[16], dsp[16];
  for (int i = 0; i < 16; ++i)
    pp[i] = attn_k_pack2(b, k->bf16, p[2 * i], p[2 * i + 1]);
  if (!mlirBlockIsNull(g->grad_fn))
    for (int i = 0; i < 32; ++i)
      p[i] = attn_b_select(b, attn_b_cmpf(b, ATTN_B_F_OEQ, p[i], m->zero),
                           m->zero, attn_b_mulf(b, p[i], gv[i]));
  product_t(m, vt, dos, pv);
  for (int i = 0; i < 16; ++i) {
    MlirValue ds[2];
    for (int e = 0; e < 2; ++e) {
      int j = 2 * i + e;
      MlirValue dd = attn_k_load(
          b, attn_k_gep_const(b, dbase, (int32_t)(4 * frag_c(j))), b->t.f32);
      ds[e] = attn_b_mulf(b, p[j], attn_b_subf(b, pv[j], dd));
    }
    dsp[i] = attn_k_pack2(b, k->bf16, ds[0], ds[1]);
  }
  // dS^T into shared memory (every warp is past the last step's dQ: the
  // barrier at the step's start), pairs of adjacent queries: row 16 w + g
  // + 8 (i % 2), chunk i / 2, its bytes 4 t.
  MlirValue ds_row0 = attn_b_addi(b, attn_k_mulc(b, m->warp, 16), m->g4);
  for (int i = 0; i < 16; ++i) {
    MlirValue row = attn_k_addc(b, ds_row0, 8 * (i % 2));
    MlirValue off = attn_b_addi(
        b, attn_k_addc(b, swz(m, DS_RB, row, attn_b_i32(b, i / 2)),
                       m->l.ds_off),
        attn_k_mulc(b, m->t4, 4));
    attn_k_store(b, dsp[i], attn_k_smem_ptr(b, m->raw, off));
  }
  product_acc(m, pp, dos, dv);
  product_acc(m, dsp, qs, dk);
  bar_sync(m);

  // dQ of 16 query rows of the block over the CTA's keys, by warp w rows
  // 16 (w % 4) and (8 warps) half the columns, from (w / 4) d / 2: A = dS
  // (ldmatrix.trans of dS^T: keys 16 kc + (lane / 16) 8 + lane % 8, query
  // chunk 2 (w % 4) + (lane / 8) % 2), B = K (ldmatrix.trans), 64 columns
  // at a time (32 at head dim 64 with 8 warps), each added by
  // red.global.add.f32 at constant offsets from the thread's first element.
  attn_builder_role(b, "mmabwd.dq");
  int64_t cols = d * 4 / m->warps; // the warp's columns
  int width = (int)(cols < 64 ? cols : 64), nchunks = (int)(cols / width);
  int ndp = width / 16;
  MlirValue wr = attn_k_remc(b, m->warp, 4);
  MlirValue col0 = attn_k_mulc(b, attn_k_divc(b, m->warp, 4), cols);
  MlirValue dsa = attn_b_addi(b, attn_k_addc(b, m->sbase, m->l.ds_off),
                              attn_k_mulc(b, m->krow, DS_RB));
  MlirValue dch =
      attn_b_xori(b, attn_b_addi(b, attn_k_mulc(b, wr, 2), m->klo), m->x7);
  MlirValue dsrow = attn_b_addi(b, dsa, attn_k_mulc(b, dch, 16));
  MlirValue bh = attn_b_addi(b, attn_k_mulc(b, m->bz, k->heads), h);
  MlirValue row = attn_b_addi(
      b, attn_b_addi(b, attn_k_mulc(b, bh, np), q0),
      attn_b_addi(b, attn_k_mulc(b, wr, 16), m->g4));
  MlirValue base = at(b, m->dq,
                      add64(b, mul64(b, row, d * 4),
                            mul64(b, attn_b_addi(b, col0,
                                                 attn_k_mulc(b, m->t4, 2)),
                                  4)));
  MlirValue kbase = attn_b_addi(b, kt, attn_k_mulc(b, m->frag_row, m->rb));
  MlirValue cg0 = attn_b_addi(b, attn_k_divc(b, col0, 8), m->frag_hi);
  for (int c = 0; c < nchunks; ++c) {
    MlirValue qa[32];
    for (int i = 0; i < 8 * ndp; ++i)
      qa[i] = m->zero;
    for (int kc = 0; kc < m->keys / 16; ++kc) {
      MlirValue af[4];
      ldmatrix_x4(m, attn_k_addc(b, dsrow, (long long)16 * kc * DS_RB), true,
                  af);
      for (int dp = 0; dp < ndp; ++dp) {
        MlirValue ch = attn_b_xori(
            b, attn_k_addc(b, cg0, 2 * (width / 16 * c + dp)), m->x7);
        MlirValue vb[4];
        ldmatrix_x4(m,
                    attn_k_addc(b, attn_b_addi(b, kbase, attn_k_mulc(b, ch, 16)),
                                (long long)16 * kc * m->rb),
                    true, vb);
        mma(m, &qa[8 * dp], af, vb[0], vb[1]);
        mma(m, &qa[8 * dp + 4], af, vb[2], vb[3]);
      }
    }
    for (int i = 0; i < 8 * ndp; ++i)
      attn_k_red_add_f32(
          b, base, (int32_t)((frag_r(i) * d + width * c + frag_c(i)) * 4),
          qa[i]);
  }
}

//===-- The kernel ---------------------------------------------------------===//

static void build_main(struct mk *m, const struct attn_b_func *f) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_bwd *g = m->g;
  const struct attn_hopper_kernel *k = &g->k;
  int64_t d = k->head_dim;
  int nd = (int)(d / 2);
  attn_builder_role(b, "mmabwd.setup");
  m->tid = attn_k_sreg(b, "tid.x");
  m->kb = attn_k_sreg(b, "ctaid.x");
  m->kh = attn_k_sreg(b, "ctaid.y");
  m->bz = attn_k_sreg(b, "ctaid.z");
  m->warp = attn_k_divc(b, m->tid, 32);
  m->lane = attn_k_remc(b, m->tid, 32);
  m->g4 = attn_k_divc(b, m->lane, 4);
  m->t4 = attn_k_remc(b, m->lane, 4);
  m->x7 = attn_k_andc(b, m->lane, 7);
  m->frag_hi = attn_k_divc(b, m->lane, 16);
  m->klo = attn_k_andc(b, attn_k_divc(b, m->lane, 8), 1);
  m->frag_row = attn_b_addi(b, attn_k_mulc(b, m->klo, 8), m->x7);
  m->krow = attn_b_addi(b, attn_k_mulc(b, m->frag_hi, 8), m->x7);
  m->zero = attn_b_f32(b, 0.0f);
  m->raw = attn_k_addressof(b, "attn_smem", b->t.ptr_shared);
  m->sbase = attn_k_ptrtoint(b, m->raw, b->t.i32);
  m->q = attn_b_func_arg(f, 0);
  m->kp = attn_b_func_arg(f, 1);
  m->v = attn_b_func_arg(f, 2);
  m->dout = attn_b_func_arg(f, 3);
  m->dv = attn_b_func_arg(f, 4);
  m->rows = attn_b_func_arg(f, 5);
  m->dq = attn_b_func_arg(f, 6);
  m->dk = attn_b_func_arg(f, 7);
  if (m->fn) {
    MlirValue caps[ATTN_K_FN_PTRS] = {{NULL}};
    for (int i = 0; i < k->ncaptures; ++i)
      caps[i] = attn_b_func_arg(f, MAIN_PARAMS + i);
    attn_k_fn_init(m->fn, k, caps);
    m->fn->recip_div = true;
  }
  // The query blocks that see the key block [kr, kr + keys): from the
  // diagonal (causal) or the window's right edge, up to its left edge
  // (attention_bwd.c's, with its tiles).
  int64_t nqb = attn_hopper_bwd_rows(g) / ROWS;
  int64_t group = k->heads / k->kv_heads;
  MlirValue kr = attn_k_mulc(b, m->kb, m->keys);
  MlirValue nqb_v = attn_b_i32(b, nqb);
  m->qlo = attn_b_i32(b, 0);
  if (k->causal)
    m->qlo = attn_k_divc(b, kr, ROWS);
  else if (k->window && k->window_right >= 0)
    m->qlo = attn_k_divc(
        b,
        attn_b_binary(b, "arith.maxsi", attn_k_addc(b, kr, -k->window_right),
                      attn_b_i32(b, 0)),
        ROWS);
  m->qlo = attn_b_minui(b, m->qlo, nqb_v);
  MlirValue qhi = nqb_v;
  if (k->window && k->window_left >= 0)
    qhi = attn_b_minui(
        b,
        attn_k_addc(b,
                    attn_k_divc(b,
                                attn_k_addc(b, kr, m->keys - 1 + k->window_left),
                                ROWS),
                    1),
        nqb_v);
  m->nq = attn_b_subi(b, attn_b_maxui(b, qhi, m->qlo), m->qlo);
  m->niter = attn_k_mulc(b, m->nq, group);

  // K and V once, in the first step's commit group; then the first
  // stages - 1 steps.
  attn_builder_role(b, "mmabwd.load");
  load_tile(m, attn_b_i32(b, m->l.k_off),
            head_address(m, m->kp, m->bz, m->kh, k->kv_heads, k->seq_k), kr,
            m->keys, k->seq_k);
  load_tile(m, attn_b_i32(b, m->l.v_off),
            head_address(m, m->v, m->bz, m->kh, k->kv_heads, k->seq_k), kr,
            m->keys, k->seq_k);
  if (g->stages == 1)
    cp_async_commit(m);
  for (int s = 0; s + 1 < g->stages; ++s)
    load_step(m, attn_b_i32(b, s));

  MlirValue init[ATTN_K_MAX_REGS];
  for (int i = 0; i < 2 * nd; ++i)
    init[i] = m->zero;
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, attn_b_index(b, 0), attn_k_to_index(b, m->niter),
                  attn_b_index(b, 1), 2 * nd, init);
  MlirValue t = attn_k_from_index(b, loop.iv);
  MlirValue dv[ATTN_K_MAX_REGS], dk[ATTN_K_MAX_REGS];
  for (int i = 0; i < nd; ++i) {
    dv[i] = loop.args[i];
    dk[i] = loop.args[nd + i];
  }
  // Step t's tiles have landed for every thread, and every warp is done
  // with the stage the next load overwrites (step t - 1's) and with the
  // dS^T tile (its dQ).
  attn_builder_role(b, "mmabwd.load");
  if (g->stages == 1) {
    bar_sync(m);
    load_step(m, t);
    cp_async_wait(m, 0);
  } else {
    cp_async_wait(m, g->stages - 2);
  }
  bar_sync(m);
  if (g->stages > 1)
    load_step(m, attn_k_addc(b, t, g->stages - 1));
  step(m, t, dv, dk);
  MlirValue next[ATTN_K_MAX_REGS];
  for (int i = 0; i < nd; ++i) {
    next[i] = dv[i];
    next[nd + i] = dk[i];
  }
  attn_b_for_close(b, &loop, 2 * nd, next);
  for (int i = 0; i < nd; ++i) {
    dv[i] = loop.results[i];
    dk[i] = loop.results[nd + i];
  }
  // No copy in flight when the CTA's shared memory goes (K and V without
  // steps; the empty groups past the last).
  cp_async_wait(m, 0);

  // dV (16-bit) and dK (f32, into dk_acc) of the warp's rows below seq_k.
  attn_builder_role(b, "mmabwd.epilogue");
  MlirValue kvh = attn_b_addi(b, attn_k_mulc(b, m->bz, k->kv_heads), m->kh);
  MlirValue kr0 = attn_b_addi(b, kr, attn_k_mulc(b, m->warp, 16));
  for (int r = 0; r < 2; ++r) {
    MlirValue kv = attn_b_addi(b, kr0, attn_k_addc(b, m->g4, 8 * r));
    struct attn_b_if in;
    attn_b_if_open(b, &in, attn_k_cmpc(b, ATTN_B_ULT, kv, k->seq_k), 0, NULL,
                   false);
    MlirValue rowi = attn_b_addi(b, attn_k_mulc(b, kvh, k->seq_k), kv);
    MlirValue ev0 = add64(b, mul64(b, rowi, d),
                          attn_k_i64_of(b, attn_k_mulc(b, m->t4, 2)));
    MlirValue pv = at(b, m->dv, attn_b_muli(b, ev0, attn_b_i64(b, 2)));
    MlirValue pk = at(b, m->dk, attn_b_muli(b, ev0, attn_b_i64(b, 4)));
    for (int j = 0; j < nd / 4; ++j) {
      int i = 4 * j + 2 * r;
      attn_k_store(b, attn_k_pack2(b, k->bf16, dv[i], dv[i + 1]),
                   attn_k_gep_const(b, pv, 8 * j * 2));
      MlirValue w[2] = {dk[i], dk[i + 1]};
      attn_k_store_vec(b, w, 2, attn_k_gep_const(b, pk, 8 * j * 4));
    }
    attn_b_if_close(b, &in, 0, NULL);
  }
}

static bool build_main_kernel(struct attn_builder *b,
                              const struct attn_hopper_bwd *g) {
  const struct attn_hopper_kernel *k = &g->k;
  const char *ty = k->bf16 ? "bf16" : "f16";
  struct attn_k_param p[MAIN_PARAMS + ATTN_HOPPER_MAX_CAPTURES] = {
      ptr_param("q", ty, 4, k->batch, k->heads, k->seq_q, k->head_dim),
      ptr_param("k", ty, 4, k->batch, k->kv_heads, k->seq_k, k->head_dim),
      ptr_param("v", ty, 4, k->batch, k->kv_heads, k->seq_k, k->head_dim),
      ptr_param("dout", ty, 4, k->batch, k->heads, k->seq_q, k->head_dim),
      ptr_param("dv", ty, 4, k->batch, k->kv_heads, k->seq_k, k->head_dim),
      ptr_param("rows", "f32", 1, attn_hopper_bwd_rows_bytes(g) / 4, 0, 0, 0),
      ptr_param("dq_acc", "f32", 1, attn_hopper_bwd_dq_bytes(g) / 4, 0, 0, 0),
      ptr_param("dk_acc", "f32", 1, attn_hopper_bwd_dk_bytes(g) / 4, 0, 0, 0),
  };
  // cp.async copies 16 bytes at a time (q, k, v, dout, rows).
  p[0].align = p[1].align = p[2].align = p[3].align = 16;
  p[4].align = 4;
  p[5].align = 16;
  p[6].align = 4;
  p[7].align = 8;
  for (int i = 0; i < k->ncaptures; ++i)
    p[MAIN_PARAMS + i] = attn_k_fn_capture_param(k, i);
  int np = MAIN_PARAMS + k->ncaptures;
  int threads = 32 * g->block_n / 16;
  int64_t grid[3] = {(k->seq_k + g->block_n - 1) / g->block_n, k->kv_heads,
                     k->batch};
  MlirAttribute launch =
      attn_k_launch_attr(b, "mma-sync-bwd", grid, threads,
                         attn_kernels_mma_bwd_smem_bytes(g), np, p, 0, NULL);
  MlirAttribute arg_attrs = {NULL};
  if (k->ncaptures) { // the captures read only
    MlirAttribute all[MAIN_PARAMS + ATTN_HOPPER_MAX_CAPTURES];
    for (int i = 0; i < np; ++i)
      all[i] = i >= MAIN_PARAMS ? attn_k_fn_capture_attrs(b)
                                : mlirDictionaryAttrGet(b->ctx, 0, NULL);
    arg_attrs = mlirArrayAttrGet(b->ctx, np, all);
  }
  struct attn_b_func f;
  attn_builder_role(b, "mmabwd.setup");
  attn_k_bwd_open_kernel(b, &f, g, "__main", np, arg_attrs, threads, launch);
  struct attn_k_fn fn;
  bool fns = k->nmods || k->nmask_fns || !mlirBlockIsNull(g->grad_fn);
  struct mk m = {.b = b, .g = g, .fn = fns ? &fn : NULL};
  layout_of(g, &m.l);
  m.keys = g->block_n;
  m.warps = g->block_n / 16;
  m.threads = threads;
  m.rb = (int)k->head_dim * 2;
  if (!mlirOperationIsNull(f.op))
    build_main(&m, &f);
  if (fns && !mlirOperationIsNull(f.op))
    attn_k_fn_free(&fn);
  attn_builder_role(b, "mmabwd.setup");
  return attn_k_llvm_func_finish(b, &f);
}

bool attn_kernels_build_mma_bwd(MlirOperation gpu_module, MlirLocation loc,
                                const struct attn_hopper_bwd *g) {
  MlirContext ctx = mlirLocationGetContext(loc);
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  attn_builder_role(&b, "mmabwd.setup");
  attn_k_declare_libdevice(&b, gpu_module, 16);
  return attn_k_bwd_build_pre_kernel(&b, g) && build_main_kernel(&b, g) &&
         attn_k_bwd_build_out_kernel(&b, g, true) &&
         attn_k_bwd_build_out_kernel(&b, g, false);
}
