//===- attention_bwd.c - The Hopper attention backward (sm_90a) -----------===//
//
// The backward of an attention (issue 29) as four kernels, after
// FlashAttention-3's structure, built as IR on attn_builder (no text):
//
//   @<name>__pre     per query row: lse * log2(e) and D = rowsum(dO o O)
//                    into the workspace rows (f32, rows padded to whole
//                    query blocks: lse +inf and D 0 past the sequence, so
//                    that padding rows get P = 0), and dq_acc zeroed
//   @<name>__main    one CTA per key block of 128 rows of a K/V head:
//                    warpgroup 0's thread 0 loads K and V once, then per
//                    step Q, dO (TMA) and their rows' lse and D (bulk
//                    copies) into a `stages`-deep ring; consumer
//                    warpgroups 1 and 2, 64 key rows each, keep dK and dV
//                    in registers and per query block compute
//                      S^T = K Q^T, dP^T = V dO^T           (wgmma, smem)
//                      P^T = 2^(c(S^T) e log2(e) - lse2)   (masked)
//                      dS^T = P^T o (dP^T - D) [o c'(S^T)]
//                      dV += P^T dO, dK += dS^T Q           (wgmma, A regs)
//                      dQ += dS K                           (wgmma, dS^T
//                                                          staged in smem)
//                    dQ added into dq_acc with red.global.add.f32 (or,
//                    dq_bulk, stored into shared memory and added a row
//                    at a time by cp.reduce.async.bulk; deterministic, by
//                    red in turns: per query block the key blocks in
//                    order, a polled turn in the rows workspace); query
//                    blocks that see none of the CTA's keys (causal) are
//                    never visited; the query heads of a K/V head's group
//                    are walked in turn, so dK and dV sum over them; then
//                    dV written (16-bit) and dK into dk_acc (f32)
//   @<name>__dq_out, @<name>__dk_out
//                    the f32 sums times ds_scale, rotated back (RoPE's
//                    inverse rotation, at the row's position), written in
//                    the element type
//
// At head dim 256 a CTA takes 64 keys and both consumers work on them:
// each computes the step's whole S^T and dP^T and keeps dK and dV for 128
// of the columns, stores half of dS^T, and adds dQ for its 128 columns
// (two 64-column tiles). dp_early issues dP^T with S^T; ds_ring keeps
// dS^T in two tiles by step parity.
//
// c is the modifier chain (the scale, score functions), e exp_scale, c'
// its derivative (tile.score_fn_grad's body), each cloned per element of
// the S^T fragment by attn_k_fn_point_body at the element's clamped query
// row and key, with the mask bodies (P = 0 where one hides the key); they
// read the captured tensors (gate, segment ids, tables) by global loads.
// A window cuts the query blocks a key block visits and masks at its edges.
//
// With RoPE the launch program rotates Q and K before (the pre placement's
// kernels, rope_kernel.c), so the main kernel reads rotated inputs and
// the gradients it makes are those of the rotated Q and K.
//
// Ops are named "bwd.pre", "bwd.producer", "bwd.consumer", "bwd.epilogue"
// and "bwd.out". This file builds the main kernel and the four in order;
// the row kernels (__pre, __dq_out, __dk_out) and the workspaces' sizes
// are attention_bwd_rows.c's (attention_bwd_rows.h: what the two share).
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/attention_bwd_rows.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/LLVM.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAIN_THREADS 384 // a producer warpgroup and two consumers
#define MAIN_PARAMS 12   // the main kernel's before the captures
#define PRODUCER_REGS 24
#define CONSUMER_REGS 240
#define CONSUMER_BAR 1 // named barrier of the two consumer warpgroups
#define DQ_BAR 2       // dq_bulk: named barriers 2 and 3, one a warpgroup
#define TURN_WAIT_NS 10000000000LL // deterministic: a turn not passed
                                    // on in 10 s traps (a bug, not a hang)
#define DQ_PITCH (64 * 4 + 16) // dq_bulk: a dQ tile row's bytes; the 16
                               // bytes spread the 8 rows a store of the
                               // fragment touches over the banks

/// The main kernel's shared memory (offsets from the 1024-aligned base): K
/// and V tiles (block_n rows), the dS^T tile (block_n x block_m), then per
/// stage Q and dO (block_m rows), lse2 and D (block_m f32 each), with
/// dq_bulk the two consumer warpgroups' dQ tiles (64 rows of DQ_PITCH
/// bytes each), then the mbarriers: kv, full[stages], empty[stages].
struct layout {
  int64_t k_off, v_off, ds_off, st_off, st_bytes, do_off, l_off, d_off;
  int64_t dq_off, bar_off, end;
};

static int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

static void layout_of(const struct attn_hopper_bwd *g, struct layout *l) {
  int64_t d = g->k.head_dim, bm = g->block_m, bn = g->block_n;
  l->k_off = 0;
  l->v_off = bn * d * 2;
  l->ds_off = 2 * bn * d * 2;
  l->st_off = round_up(l->ds_off + (g->ds_ring ? 2 : 1) * bn * bm * 2, 1024);
  l->do_off = bm * d * 2; // within a stage, as l_off and d_off
  l->l_off = 2 * bm * d * 2;
  l->d_off = l->l_off + bm * 4;
  l->st_bytes = round_up(l->d_off + bm * 4, 1024);
  l->dq_off = l->st_off + g->stages * l->st_bytes;
  l->bar_off = l->dq_off + (g->dq_bulk ? 2 * 64 * DQ_PITCH : 0);
  l->end = l->bar_off + 8 * (1 + 2 * g->stages);
}

int64_t attn_hopper_bwd_smem_bytes(const struct attn_hopper_bwd *g) {
  struct layout l;
  layout_of(g, &l);
  return l.end + 1024; // slack to align the base at run time
}

//===-- @<name>__main ------------------------------------------------------===//

/// The main kernel's values.
struct mk {
  struct attn_builder *b;
  const struct attn_hopper_bwd *g;
  struct layout l;
  MlirValue smem, sbase, qmap, kmap, vmap, omap; // omap: dout's
  MlirValue dv, rows, dq, dk;
  MlirValue kb, kh, bz;         ///< the CTA's key block, K/V head, batch
  MlirValue qlo, nq, niter;     ///< first query block, blocks per head, steps
  MlirValue bar_kv, bar_full, bar_empty;
  /// With score or mask functions (or a chain with the scale in it): their
  /// state, the captures the main kernel takes after its twelve parameters.
  struct attn_k_fn *fn;
  MlirValue grads[ATTN_HOPPER_MAX_GRADS]; ///< the gradient buffers (f32)
};

static MlirValue bar_at(const struct mk *m, MlirValue base, MlirValue s) {
  return attn_b_addi(m->b, base, attn_k_mulc(m->b, s, 8));
}

/// Step t's stage and phase parity; its head (h) and query block (qb).
static MlirValue step_of(const struct mk *m, MlirValue t, MlirValue *phase,
                         MlirValue *h, MlirValue *qb) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_kernel *k = &m->g->k;
  int64_t group = k->heads / k->kv_heads;
  MlirValue s = attn_k_remc(b, t, m->g->stages);
  *phase = attn_k_andc(b, attn_k_divc(b, t, m->g->stages), 1);
  MlirValue hi = attn_b_divui(b, t, m->nq);
  *qb = attn_b_addi(b, m->qlo, attn_b_remui(b, t, m->nq));
  *h = attn_b_addi(b, attn_k_mulc(b, m->kh, group), hi);
  return s;
}

/// Thread 0 of the producer warpgroup: K and V once, then each step's Q, dO,
/// lse2 and D into the ring.
static void producer(const struct mk *m) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_bwd *g = m->g;
  const struct attn_hopper_kernel *k = &g->k;
  int64_t d = k->head_dim, bm = g->block_m, bn = g->block_n;
  int regions = (int)(d / 64);
  attn_builder_role(b, "bwd.producer");
  attn_k_mbar_expect_tx(b, m->bar_kv, 2 * bn * d * 2);
  MlirValue krow = attn_k_mulc(b, m->kb, bn);
  for (int r = 0; r < regions; ++r) {
    MlirValue c[4] = {attn_b_i32(b, 64 * r), krow, m->kh, m->bz};
    attn_k_tma_load(b, attn_k_addc(b, m->sbase, m->l.k_off + r * bn * 128),
                    m->kmap, c, m->bar_kv);
    attn_k_tma_load(b, attn_k_addc(b, m->sbase, m->l.v_off + r * bn * 128),
                    m->vmap, c, m->bar_kv);
  }
  int64_t np = attn_hopper_bwd_rows(g);
  int64_t bhn = k->batch * k->heads * np;
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, attn_b_index(b, 0), attn_k_to_index(b, m->niter),
                  attn_b_index(b, 1), 0, NULL);
  MlirValue t = attn_k_from_index(b, loop.iv), ph, h, qb;
  MlirValue s = step_of(m, t, &ph, &h, &qb);
  attn_k_mbar_wait(b, bar_at(m, m->bar_empty, s),
                   attn_b_xori(b, ph, attn_b_i32(b, 1)));
  MlirValue full = bar_at(m, m->bar_full, s);
  attn_k_mbar_expect_tx(b, full, 2 * bm * d * 2 + 2 * bm * 4);
  MlirValue st = attn_b_addi(
      b, attn_k_addc(b, m->sbase, m->l.st_off),
      attn_k_mulc(b, s, m->l.st_bytes));
  MlirValue qrow = attn_k_mulc(b, qb, bm);
  for (int r = 0; r < regions; ++r) {
    MlirValue c[4] = {attn_b_i32(b, 64 * r), qrow, h, m->bz};
    attn_k_tma_load(b, attn_k_addc(b, st, r * bm * 128), m->qmap, c, full);
    attn_k_tma_load(b, attn_k_addc(b, st, m->l.do_off + r * bm * 128), m->omap,
                    c, full);
  }
  MlirValue bh = attn_b_addi(b, attn_k_mulc(b, m->bz, k->heads), h);
  MlirValue first = attn_b_addi(b, attn_k_mulc(b, bh, np), qrow);
  MlirValue off = mul64(b, first, 4);
  attn_k_bulk_copy_in(b, attn_k_addc(b, st, m->l.l_off), at(b, m->rows, off),
                      bm * 4, full);
  attn_k_bulk_copy_in(b, attn_k_addc(b, st, m->l.d_off),
                      at(b, m->rows, add64(b, off, attn_b_i64(b, 4 * bhn))),
                      bm * 4, full);
  attn_b_for_close(b, &loop, 0, NULL);
}

/// The consumer thread's place in a wgmma m64 fragment: its warp's rows,
/// lane / 4 and lane % 4.
struct frag {
  MlirValue row0, lr;
};

/// Row (within the warpgroup's 64) of accumulator i, and its column.
static MlirValue frag_row(struct attn_builder *b, const struct frag *fr,
                          int i) {
  return attn_k_addc(b, fr->row0, 8 * ((i / 2) % 2));
}
static MlirValue frag_col(struct attn_builder *b, const struct frag *fr,
                          int i) {
  return attn_k_addc(b, attn_k_mulc(b, fr->lr, 2), 8 * (i / 4) + (i % 2));
}

/// acc (32 f32, m64n64) = A B^T with A the 64 rows at a_base of a K-major
/// tile of a_rows rows and B the block_m rows at b_base (tile of block_m
/// rows), over the head dim: S^T = K Q^T and dP^T = V dO^T.
static void issue_kq(const struct mk *m, MlirValue *acc, MlirValue a_base,
                     MlirValue b_base) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_kernel *k = &m->g->k;
  // The loop-invariant base is pinned in the loop: else LLVM hoists the
  // head dim / 16 descriptors (64-bit each) out of it, beside dK and dV.
  MlirValue da = attn_k_make_desc(b, attn_k_pin(b, a_base, "r"), 16, 1024);
  MlirValue db = attn_k_make_desc(b, b_base, 16, 1024);
  for (int kk = 0; kk < k->head_dim / 16; ++kk)
    attn_k_wgmma_ss(
        b, k->bf16, acc, 32,
        attn_k_desc_add(b, da, (int64_t)(kk / 4) * m->g->block_n * 128 +
                                   (kk % 4) * 32),
        attn_k_desc_add(b, db, (int64_t)(kk / 4) * m->g->block_m * 128 +
                                   (kk % 4) * 32),
        attn_b_i32(b, kk ? 1 : 0), false);
}

/// acc (nacc f32: 2 nacc columns) += A B with A the 16-bit pairs a
/// (block_m / 16 groups of 4) and B 2 nacc columns of the block_m x
/// head_dim tile from the 64-column region at b_base, N-major.
static void issue_acc(const struct mk *m, MlirValue *acc, int nacc,
                      const MlirValue *a, MlirValue b_base) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_kernel *k = &m->g->k;
  MlirValue db =
      attn_k_make_desc(b, b_base, (int64_t)m->g->block_m * 128, 1024);
  for (int kk = 0; kk < m->g->block_m / 16; ++kk)
    attn_k_wgmma_rs(b, k->bf16, acc, nacc, &a[4 * kk],
                    attn_k_desc_add(b, db, (int64_t)kk * 16 * 128), true);
}

/// dQ's 64 x 64 tile qa (the thread's m64n64 fragment fr) of the query rows
/// from qrow0 (of dq_acc, padded: no bounds), columns from 64 dq_region,
/// added into dq_acc a red.global.add.f32 per element.
static void dq_red(const struct mk *m, const MlirValue *qa,
                   const struct frag *fr, MlirValue qrow0,
                   MlirValue dq_region) {
  struct attn_builder *b = m->b;
  int64_t d = m->g->k.head_dim;
  // One base per thread (its first row and column); the others are
  // constant offsets from it.
  MlirValue row = attn_b_addi(b, qrow0, fr->row0);
  MlirValue col = attn_b_addi(b, attn_k_mulc(b, dq_region, 64),
                              attn_k_mulc(b, fr->lr, 2));
  MlirValue base = at(b, m->dq, add64(b, mul64(b, row, d * 4), mul64(b, col, 4)));
  for (int i = 0; i < 32; ++i)
    attn_k_red_add_f32(
        b, base,
        (int32_t)((8 * ((i / 2) % 2) * d + 8 * (i / 4) + (i % 2)) * 4), qa[i]);
}

/// The same by the bulk-copy engine: the warpgroup (cw; wt its thread)
/// stores the tile into its buffer once the previous step's reduces have
/// read it, and its first 64 threads add a row each.
static void dq_bulk_reduce(const struct mk *m, const MlirValue *qa,
                           const struct frag *fr, MlirValue cw, MlirValue wt,
                           MlirValue qrow0, MlirValue dq_region) {
  struct attn_builder *b = m->b;
  int64_t d = m->g->k.head_dim;
  MlirValue bar = attn_k_addc(b, cw, DQ_BAR);
  MlirValue tile_rel = attn_k_addc(b, attn_k_mulc(b, cw, 64 * DQ_PITCH),
                                   m->l.dq_off); // from the base
  MlirValue issuer = attn_k_cmpc(b, ATTN_B_ULT, wt, 64);
  struct attn_b_if w;
  attn_b_if_open(b, &w, issuer, 0, NULL, false);
  attn_k_bulk_wait(b, 0, true);
  attn_b_if_close(b, &w, 0, NULL);
  attn_k_bar_sync(b, bar, 128);
  // Pairs of adjacent columns: 8-byte stores, constant offsets from the
  // thread's first.
  MlirValue base = attn_k_smem_ptr(
      b, m->smem,
      attn_b_addi(b, tile_rel,
                  attn_b_addi(b, attn_k_mulc(b, fr->row0, DQ_PITCH),
                              attn_k_mulc(b, fr->lr, 8))));
  for (int i = 0; i < 32; i += 2) {
    int32_t c = (int32_t)(8 * ((i / 2) % 2) * DQ_PITCH + 4 * 8 * (i / 4));
    MlirValue w2[2] = {qa[i], qa[i + 1]};
    attn_k_store_vec(b, w2, 2, attn_k_gep_const(b, base, c));
  }
  attn_k_fence_proxy_async(b, false);
  attn_k_bar_sync(b, bar, 128);
  struct attn_b_if r;
  attn_b_if_open(b, &r, issuer, 0, NULL, false);
  MlirValue row = attn_b_addi(b, qrow0, wt);
  MlirValue dst = at(b, m->dq,
                     add64(b, mul64(b, row, d * 4),
                           mul64(b, dq_region, 64 * 4)));
  MlirValue src = attn_b_addi(
      b, attn_b_addi(b, m->sbase, tile_rel), attn_k_mulc(b, wt, DQ_PITCH));
  attn_k_bulk_reduce_add_f32(b, dst, src, 64 * 4);
  attn_k_bulk_commit(b);
  attn_b_if_close(b, &r, 0, NULL);
}

/// The thread's elements' query rows and keys for the bodies (index,
/// clamped into the sequences): qi[c] of its 16 columns (register i's is
/// column 2 (i / 4) + i % 2), ki[r] of its two rows (register i's r is
/// (i / 2) % 2), in the query block from row q0 and the keys from kr0.
static void point_indices(const struct mk *m, const struct frag *fr,
                          MlirValue q0, MlirValue kr0, MlirValue qi[16],
                          MlirValue ki[2]) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_kernel *k = &m->g->k;
  for (int c = 0; c < 16; ++c) {
    MlirValue q = attn_b_addi(b, q0, frag_col(b, fr, 4 * (c / 2) + c % 2));
    qi[c] = attn_k_to_index(b, attn_b_minui(b, q, attn_b_i32(b, k->seq_q - 1)));
  }
  for (int r = 0; r < 2; ++r) {
    MlirValue kv = attn_b_addi(b, kr0, frag_row(b, fr, 2 * r));
    ki[r] = attn_k_to_index(b, attn_b_minui(b, kv, attn_b_i32(b, k->seq_k - 1)));
  }
}

/// Whether a body reads the query row and the key only by 64-row blocks
/// (attn_k_fn_body_blocked): the fragment's 64 query columns and the
/// warpgroup's 64 keys are each one such block.
struct blocked {
  bool q, kv;
};

static struct blocked blocked_of(MlirBlock body) {
  return (struct blocked){attn_k_fn_body_blocked(body, false, 64),
                          attn_k_fn_body_blocked(body, true, 64)};
}

/// Body at register i of the fragment (s its score, null for a mask
/// body): at the element's query row and key, or at the first of the
/// thread's rows or keys where the body reads them only by blocks (bl), so
/// that elements of one block share its ops (the gate's g[b, h, q, kv /
/// 64] is loaded once per query column, not per element).
static MlirValue point(const struct mk *m, MlirBlock body, struct blocked bl,
                       MlirValue s, int i, const MlirValue qi[16],
                       const MlirValue ki[2]) {
  return attn_k_fn_point_body(m->b, m->fn, body, s,
                              qi[bl.q ? 0 : 2 * (i / 4) + i % 2],
                              ki[bl.kv ? 0 : (i / 2) % 2]);
}

//===-- Gradients into captured tensors ------------------------------------===//
//
// Each tile.capture_grad site adds, per element, c = ds_scale P (dP - D) t
// times its scale into its buffer at the indices its body yields, t its
// derivative (at the raw score: with grad_fn, P t is made beside P g, else
// the chain is linear and t does not depend on the score). Elements whose
// indices are one by construction are summed first: where the body reads
// the key only by 64-blocks (the gate's g[b, h, q, kv / 64]) the thread's
// two rows of a column and then the 8 lanes of a column (lane / 4), by a
// reduce-scatter over the lane bits, so that each lane adds two columns;
// where it reads the row only by blocks, its 16 columns of a row and the 4
// lanes of a row; where both, the warp's 32 elements into one add. Else
// an add per element.

/// Site si's body at query row q and key kv (index, clamped; s the raw
/// score, null where it does not matter): its derivative, and with idx its
/// buffer's offset (i32, row-major) there.
static MlirValue site_at(const struct mk *m, int si, MlirValue s, MlirValue q,
                         MlirValue kv, MlirValue *idx) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_grad_site *site = &m->g->sites[si];
  const struct attn_hopper_grad_buffer *gb = &m->g->grads[site->grad];
  MlirValue ys[5];
  attn_k_fn_point_yields(b, m->fn, site->body, s, q, kv, ys, 1 + gb->rank);
  if (idx) {
    MlirValue off = {NULL};
    for (int d = 0; d < gb->rank && !b->failed; ++d) {
      if (mlirValueIsNull(ys[1 + d])) {
        attn_builder_fail(b, "a capture gradient's index depends on the "
                             "score (a bug in attn)");
        return ys[0];
      }
      MlirValue x = attn_k_from_index(b, ys[1 + d]);
      off = d ? attn_b_addi(b, attn_k_mulc(b, off, gb->shape[d]), x) : x;
    }
    *idx = off;
  }
  if (!mlirValueIsNull(s) && mlirValueIsNull(ys[0]) && !b->failed)
    attn_builder_fail(b, "a capture gradient's derivative cannot be made "
                         "(a bug in attn)");
  return ys[0];
}

/// Site si's derivative at register i (s its raw score, or null).
static MlirValue site_point(const struct mk *m, int si, MlirValue s, int i,
                            const MlirValue qi[16], const MlirValue ki[2]) {
  struct blocked bl = blocked_of(m->g->sites[si].body);
  return site_at(m, si, s, qi[bl.q ? 0 : 2 * (i / 4) + i % 2],
                 ki[bl.kv ? 0 : (i / 2) % 2], NULL);
}

/// The sums of one site's contributions over elements that share the
/// buffer's element: n of them, each with the query row and key (i32,
/// unclamped) of one of its elements.
struct site_sums {
  int n;
  MlirValue sum[32], q[32], kv[32];
};

/// Site si's contributions c (32 f32, zero where P is) summed over the
/// thread's elements that share the buffer's element, the fragment's from
/// query row q0 and key kr0 (i32).
static void site_sum(const struct mk *m, int si, const struct frag *fr,
                     MlirValue q0, MlirValue kr0, const MlirValue c[32],
                     struct site_sums *out) {
  struct attn_builder *b = m->b;
  struct blocked bl = blocked_of(m->g->sites[si].body);
  int rep[32], n = 0;
  for (int i = 0; i < 32; ++i) {
    // Register i's group: its column (unless blocked in rows), its row
    // (unless blocked in keys).
    int j = 0;
    for (; j < n; ++j) {
      int r = rep[j];
      bool col = bl.q || (r / 4 == i / 4 && r % 2 == i % 2);
      bool row = bl.kv || (r / 2) % 2 == (i / 2) % 2;
      if (col && row)
        break;
    }
    if (j == n) {
      rep[n] = i;
      out->sum[n] = c[i];
      out->q[n] = attn_b_addi(b, q0, frag_col(b, fr, i));
      out->kv[n++] = attn_b_addi(b, kr0, frag_row(b, fr, i));
    } else {
      out->sum[j] = attn_b_addf(b, out->sum[j], c[i]);
    }
  }
  out->n = n;
}

/// Adds site si's sums times its scale into its buffer, reduced across
/// the lanes that share them first. only: where non-null, the warpgroups
/// that add (i1).
static void site_add(const struct mk *m, int si, struct site_sums *ss,
                     MlirValue lane, MlirValue only) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_bwd *g = m->g;
  const struct attn_hopper_kernel *k = &g->k;
  const struct attn_hopper_grad_site *site = &g->sites[si];
  struct blocked bl = blocked_of(site->body);
  // The lane bits whose lanes share the sums: a column's 8 lanes differ in
  // bits 2 to 4, a row's 4 in bits 0 and 1.
  int bits[5], nb = 0;
  if (bl.kv)
    for (int x = 16; x >= 4; x /= 2)
      bits[nb++] = x;
  if (bl.q)
    for (int x = 2; x >= 1; x /= 2)
      bits[nb++] = x;
  MlirValue issuer = only;
  int n = ss->n;
  for (int i = 0; i < nb; ++i) {
    MlirValue up = attn_k_cmpc(b, ATTN_B_NE,
                               attn_b_andi(b, lane, attn_b_i32(b, bits[i])), 0);
    if (n > 1) {
      // Reduce-scatter: the lane keeps one half of its sums (the upper
      // with the bit set) and adds its partner's of that half.
      int half = n / 2;
      for (int j = 0; j < half; ++j) {
        MlirValue keep = attn_b_select(b, up, ss->sum[j + half], ss->sum[j]);
        MlirValue send = attn_b_select(b, up, ss->sum[j], ss->sum[j + half]);
        ss->sum[j] = attn_b_addf(b, keep, attn_k_shfl_xor(b, send, bits[i]));
        ss->q[j] = attn_b_select(b, up, ss->q[j + half], ss->q[j]);
        ss->kv[j] = attn_b_select(b, up, ss->kv[j + half], ss->kv[j]);
      }
      n = half;
    } else {
      ss->sum[0] = attn_b_addf(b, ss->sum[0],
                               attn_k_shfl_xor(b, ss->sum[0], bits[i]));
      MlirValue down = attn_b_xori(
          b, up, attn_b_constant(b, attn_b_attr_bool(b, true)));
      issuer = mlirValueIsNull(issuer) ? down : attn_b_andi(b, issuer, down);
    }
  }
  struct attn_b_if w;
  if (!mlirValueIsNull(issuer))
    attn_b_if_open(b, &w, issuer, 0, NULL, false);
  MlirValue f = attn_b_f32(b, (float)(site->scale * g->ds_scale));
  for (int j = 0; j < n && !b->failed; ++j) {
    MlirValue q = attn_k_to_index(
        b, attn_b_minui(b, ss->q[j], attn_b_i32(b, k->seq_q - 1)));
    MlirValue kv = attn_k_to_index(
        b, attn_b_minui(b, ss->kv[j], attn_b_i32(b, k->seq_k - 1)));
    MlirValue off = {NULL};
    site_at(m, si, (MlirValue){NULL}, q, kv, &off);
    if (b->failed)
      break;
    attn_k_red_add_f32(b, at(b, m->grads[site->grad], mul64(b, off, 4)), 0,
                       attn_b_mulf(b, ss->sum[j], f));
  }
  if (!mlirValueIsNull(issuer))
    attn_b_if_close(b, &w, 0, NULL);
}

/// The modifier chain on the raw scores sv (replaced by the chain's
/// result) at the elements' points qi, ki (point_indices); with grad_fn
/// its derivative at the raw score into gv, and each capture-gradient
/// site's derivative into tv[site].
static void scores(const struct mk *m, const MlirValue qi[16],
                   const MlirValue ki[2], MlirValue *sv, MlirValue *gv,
                   MlirValue (*tv)[32]) {
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
    for (int si = 0; grad && si < g->nsites && !b->failed; ++si)
      tv[si][i] = site_point(m, si, sv[i], i, qi, ki);
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
  MlirValue zero = attn_b_f32(b, 0.0f);
  struct blocked mbl[ATTN_HOPPER_MAX_FNS];
  for (int f = 0; f < k->nmask_fns; ++f)
    mbl[f] = blocked_of(k->mask_fns[f]);
  for (int i = 0; i < 32 && !b->failed; ++i)
    for (int f = 0; f < k->nmask_fns && !b->failed; ++f) {
      MlirValue vis =
          point(m, k->mask_fns[f], mbl[f], (MlirValue){NULL}, i, qi, ki);
      if (!mlirValueIsNull(vis))
        p[i] = attn_b_select(b, vis, p[i], zero);
    }
}

/// One consumer warpgroup (cw 0 or 1; wt its thread).
static void consumer(const struct mk *m, MlirValue cw, MlirValue wt) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_bwd *g = m->g;
  const struct attn_hopper_kernel *k = &g->k;
  int64_t d = k->head_dim, bm = g->block_m, bn = g->block_n;
  int64_t np = attn_hopper_bwd_rows(g);
  // wide (head dim 256): both warpgroups take the CTA's block_n = 64 keys
  // and split dK, dV and dQ by columns (128 each: dK and dV 128 registers,
  // as at 128), each computing the whole S^T and dP^T of the block.
  bool wide = d == 256;
  int nd = (int)((wide ? 128 : d) / 2);
  MlirValue col0 = attn_k_mulc(b, cw, wide ? 128 : 0); // its first column
  attn_builder_role(b, "bwd.consumer");
  MlirValue warp = attn_k_divc(b, wt, 32), lane = attn_k_remc(b, wt, 32);
  struct frag fr = {
      .row0 = attn_b_addi(b, attn_k_mulc(b, warp, 16), attn_k_divc(b, lane, 4)),
      .lr = attn_k_remc(b, lane, 4)};
  MlirValue own = attn_k_mulc(b, cw, wide ? 0 : 64); // its keys in the block
  MlirValue kr0 = attn_b_addi(b, attn_k_mulc(b, m->kb, bn), own); // first key
  MlirValue kt = attn_b_addi(b, attn_k_addc(b, m->sbase, m->l.k_off),
                             attn_k_mulc(b, own, 128));
  MlirValue vt = attn_b_addi(b, attn_k_addc(b, m->sbase, m->l.v_off),
                             attn_k_mulc(b, own, 128));
  // dO and Q from the warpgroup's first column region (dV += P^T dO, dK +=
  // dS^T Q): a region is 64 columns of block_m rows.
  MlirValue creg = attn_k_mulc(b, attn_k_divc(b, col0, 64), bm * 128);
  // dQ = dS K: at head dim 128 warpgroup cw takes columns 64 cw .. of all
  // block_n keys; at 64 all columns of its own 64 keys (the two add theirs);
  // at 256 columns 128 cw .. (two regions, dq_regions) of all 64 keys.
  bool split_cols = d != 64;
  int dq_regions = wide ? 2 : 1;
  MlirValue dq_keys = split_cols ? attn_b_i32(b, 0) : attn_k_mulc(b, cw, 64);
  MlirValue dq_region = wide         ? attn_k_mulc(b, cw, 2)
                        : split_cols ? cw
                                     : attn_b_i32(b, 0);
  int dq_steps = (int)((split_cols ? bn : 64) / 16);
  MlirValue scale_log2 = attn_b_f32(b, (float)(g->exp_scale * LOG2E));
  MlirValue zero = attn_b_f32(b, 0.0f);
  MlirValue bar_id = attn_b_i32(b, CONSUMER_BAR);
  attn_k_mbar_wait(b, m->bar_kv, attn_b_i32(b, 0));

  MlirValue init[ATTN_K_MAX_REGS];
  for (int i = 0; i < 2 * nd; ++i)
    init[i] = zero;
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, attn_b_index(b, 0), attn_k_to_index(b, m->niter),
                  attn_b_index(b, 1), 2 * nd, init);
  MlirValue dv[ATTN_K_MAX_REGS], dk[ATTN_K_MAX_REGS];
  for (int i = 0; i < nd; ++i) {
    dv[i] = loop.args[i];
    dk[i] = loop.args[nd + i];
  }
  MlirValue t = attn_k_from_index(b, loop.iv), ph, h, qb;
  MlirValue s = step_of(m, t, &ph, &h, &qb);
  MlirValue st_rel = attn_k_addc(b, attn_k_mulc(b, s, m->l.st_bytes),
                                 m->l.st_off); // from the base
  MlirValue st = attn_b_addi(b, m->sbase, st_rel);
  MlirValue qs = st, dos = attn_k_addc(b, st, m->l.do_off);
  // The step's dS^T tile: with ds_ring one of two by the step's parity.
  MlirValue ds_tile = attn_k_addc(b, m->sbase, m->l.ds_off);
  if (g->ds_ring)
    ds_tile = attn_b_addi(b, ds_tile,
                          attn_k_mulc(b, attn_k_remc(b, t, 2), bn * bm * 2));
  attn_k_mbar_wait(b, bar_at(m, m->bar_full, s), ph);
  // S^T, and P from it; dP^T = V dO^T issued after P (S's registers free
  // before dP^T's are taken) or, dp_early, with S^T, so that the tensor
  // cores run it while P is computed (exp2 on the SFU).
  MlirValue sv[32], pv[32];
  MlirValue undef =
      attn_b_op1(b, "llvm.mlir.undef", b->t.f32, 0, NULL, 0, NULL);
  for (int i = 0; i < 32; ++i)
    sv[i] = pv[i] = undef;
  attn_k_wgmma_fence(b);
  issue_kq(m, sv, kt, qs);
  attn_k_wgmma_commit(b);
  if (g->dp_early) {
    issue_kq(m, pv, vt, dos);
    attn_k_wgmma_commit(b);
    attn_k_wgmma_wait(b, 1);
    attn_k_reg_fence(b, sv, 32, "f");
  } else {
    attn_k_wgmma_wait(b, 0);
  }

  // P^T and dS^T: rows are keys, columns queries of the block. The
  // thread's columns' lse2 and D: constant offsets from its first.
  MlirValue c8 = attn_k_mulc(b, fr.lr, 8);
  MlirValue lbase = attn_k_smem_ptr(
      b, m->smem, attn_b_addi(b, c8, attn_k_addc(b, st_rel, m->l.l_off)));
  MlirValue dbase = attn_k_smem_ptr(
      b, m->smem, attn_b_addi(b, c8, attn_k_addc(b, st_rel, m->l.d_off)));
  MlirValue q0 = attn_k_mulc(b, qb, bm);
  MlirValue gv[32]; // with grad_fn: d chain / d raw score per element
  // With grad_fn, per capture-gradient site: its derivative, then P times it.
  MlirValue tv[ATTN_HOPPER_MAX_SITES][32];
  MlirValue qi[16], ki[2];
  if (m->fn) {
    attn_k_fn_point_tile(b, m->fn, m->bz, h);
    point_indices(m, &fr, q0, kr0, qi, ki);
  }
  if (k->nmods || !mlirBlockIsNull(g->grad_fn))
    scores(m, qi, ki, sv, gv, tv);
  MlirValue p[32];
  for (int i = 0; i < 32; ++i) {
    int32_t c = (int32_t)(4 * (8 * (i / 4) + (i % 2)));
    MlirValue l2 = attn_k_load(b, attn_k_gep_const(b, lbase, c), b->t.f32);
    p[i] = attn_k_ex2(b, attn_b_subf(b, attn_b_mulf(b, sv[i], scale_log2), l2));
  }
  // Keys past the end, and keys the causal mask or the window hides, get
  // P = 0: only on blocks that reach the diagonal, the window's edges or
  // the end of the keys. The mask functions on every block.
  bool ragged = k->seq_k % 64 != 0;
  bool left = k->window && k->window_left >= 0,
       right = k->window && k->window_right >= 0;
  if (k->causal || ragged || left || right) {
    MlirValue need = attn_b_constant(b, attn_b_attr_bool(b, false));
    if (k->causal)
      need = attn_b_ori(b, need,
                        attn_b_cmpi(b, ATTN_B_UGT, attn_k_addc(b, kr0, 63), q0));
    if (ragged)
      need = attn_b_ori(b, need, attn_k_cmpc(b, ATTN_B_UGT,
                                             attn_k_addc(b, kr0, 64),
                                             k->seq_k));
    if (left) // the block's last row beyond its first key's window
      need = attn_b_ori(
          b, need,
          attn_b_cmpi(b, ATTN_B_UGT, attn_k_addc(b, q0, bm - 1),
                      attn_k_addc(b, kr0, k->window_left)));
    if (right)
      need = attn_b_ori(
          b, need,
          attn_b_cmpi(b, ATTN_B_UGT, attn_k_addc(b, kr0, 63),
                      attn_k_addc(b, q0, k->window_right)));
    MlirType types[32];
    for (int i = 0; i < 32; ++i)
      types[i] = b->t.f32;
    struct attn_b_if mk_if;
    attn_b_if_open(b, &mk_if, need, 32, types, true);
    MlirValue masked[32];
    for (int i = 0; i < 32; ++i) {
      MlirValue kv = attn_b_addi(b, kr0, frag_row(b, &fr, i));
      MlirValue q = attn_b_addi(b, q0, frag_col(b, &fr, i));
      MlirValue off = attn_k_cmpc(b, ATTN_B_UGE, kv, k->seq_k);
      if (k->causal)
        off = attn_b_ori(b, off,
                         attn_b_cmpi(b, ATTN_B_UGT, kv, q));
      if (left)
        off = attn_b_ori(b, off,
                         attn_b_cmpi(b, ATTN_B_UGT, q,
                                     attn_k_addc(b, kv, k->window_left)));
      if (right)
        off = attn_b_ori(b, off,
                         attn_b_cmpi(b, ATTN_B_UGT, kv,
                                     attn_k_addc(b, q, k->window_right)));
      masked[i] = attn_b_select(b, off, zero, p[i]);
    }
    attn_b_if_else(b, &mk_if, 32, masked);
    attn_b_if_close(b, &mk_if, 32, p);
    for (int i = 0; i < 32; ++i)
      p[i] = mk_if.results[i];
  }
  if (k->nmask_fns)
    mask_fns(m, qi, ki, p);
  // With the chain's derivative, P is packed for dV now and dS made from
  // P o g: the registers of P and g are not both live across dP's wgmma.
  // A zero P (a masked score) stays zero even where the derivative is
  // not finite there (as the plain path's tile.score_fn_grad).
  MlirValue pp[16], dsp[16];
  if (!mlirBlockIsNull(g->grad_fn))
    for (int i = 0; i < 16; ++i) {
      pp[i] = attn_k_pack2(b, k->bf16, p[2 * i], p[2 * i + 1]);
      for (int e = 0; e < 2; ++e) {
        MlirValue x = p[2 * i + e];
        MlirValue xg = attn_b_mulf(b, x, gv[2 * i + e]);
        MlirValue none = attn_b_cmpf(b, ATTN_B_F_OEQ, x, zero);
        p[2 * i + e] = attn_b_select(b, none, zero, xg);
        for (int si = 0; si < g->nsites; ++si)
          tv[si][2 * i + e] = attn_b_select(
              b, none, zero, attn_b_mulf(b, x, tv[si][2 * i + e]));
      }
    }
  // dP^T = V dO^T, then dS^T = P^T o (dP^T - D). No register a wgmma in
  // flight reads is touched before a wait covers it (PTX leaves that
  // undefined): P and dS are packed for dV and dK, and dS^T stored for
  // dQ, before those products are issued.
  if (g->dp_early) {
    attn_k_wgmma_wait(b, 0);
    attn_k_reg_fence(b, pv, 32, "f");
  } else {
    attn_k_wgmma_fence(b);
    issue_kq(m, pv, vt, dos);
    attn_k_wgmma_commit(b);
    attn_k_wgmma_wait(b, 0);
  }
  MlirValue cv[ATTN_HOPPER_MAX_SITES][32]; // the sites' contributions
  for (int i = 0; i < 16; ++i) {
    MlirValue dd[2];
    for (int e = 0; e < 2; ++e) {
      int j = 2 * i + e;
      int32_t c = (int32_t)(4 * (8 * (j / 4) + (j % 2)));
      dd[e] = attn_k_load(b, attn_k_gep_const(b, dbase, c), b->t.f32);
    }
    MlirValue x0 = attn_b_subf(b, pv[2 * i], dd[0]);
    MlirValue d0 = attn_b_mulf(b, p[2 * i], x0);
    MlirValue x1 = attn_b_subf(b, pv[2 * i + 1], dd[1]);
    MlirValue d1 = attn_b_mulf(b, p[2 * i + 1], x1);
    // The sites' contributions: P t (dP - D) (grad_fn: P t made above),
    // else dS t, t made here without the score (0 where P is).
    for (int si = 0; si < g->nsites; ++si)
      for (int e = 0; e < 2; ++e) {
        int j = 2 * i + e;
        MlirValue x = e ? x1 : x0, ds = e ? d1 : d0;
        if (!mlirBlockIsNull(g->grad_fn)) {
          cv[si][j] = attn_b_mulf(b, tv[si][j], x);
        } else {
          MlirValue t = site_point(m, si, (MlirValue){NULL}, j, qi, ki);
          if (mlirValueIsNull(t)) {
            attn_builder_fail(b, "a capture gradient's derivative depends on "
                                 "the score of a linear chain (a bug in "
                                 "attn)");
            break;
          }
          cv[si][j] = attn_b_select(b, attn_b_cmpf(b, ATTN_B_F_OEQ, p[j], zero),
                                    zero, attn_b_mulf(b, ds, t));
        }
      }
    if (mlirBlockIsNull(g->grad_fn))
      pp[i] = attn_k_pack2(b, k->bf16, p[2 * i], p[2 * i + 1]);
    dsp[i] = attn_k_pack2(b, k->bf16, d0, d1);
  }
  // Summed in the thread now, added while dV and dK's products run.
  struct site_sums csum[ATTN_HOPPER_MAX_SITES];
  for (int si = 0; si < g->nsites && !b->failed; ++si)
    site_sum(m, si, &fr, q0, kr0, cv[si], &csum[si]);
  // dS^T into shared memory, once both warpgroups' dQ products of the last
  // step have read it. With ds_ring the tile was last read two steps ago,
  // and both have passed the barrier after it since (below: a warpgroup
  // reaches it once its previous dQ is done). wide: both hold the same
  // tile, and each stores half its columns (pairs 8 cw .. 8 cw + 7).
  if (!g->ds_ring)
    attn_k_bar_sync(b, bar_id, 256);
  // wide: warpgroup 0 stores pairs 0 .. 7 (columns 0 .. 31), 1 the rest.
  struct attn_b_if half;
  int halves = wide ? 2 : 1, per = 16 / halves;
  if (wide)
    attn_b_if_open(b, &half, attn_k_cmpc(b, ATTN_B_EQ, cw, 0), 0, NULL, true);
  for (int h2 = 0; h2 < halves; ++h2) {
    if (h2)
      attn_b_if_else(b, &half, 0, NULL);
    for (int i = per * h2; i < per * (h2 + 1); ++i) {
      MlirValue row = attn_b_addi(b, own, frag_row(b, &fr, 2 * i));
      MlirValue addr =
          attn_k_swz(b, ds_tile, bn, row, frag_col(b, &fr, 2 * i));
      attn_k_store(b, dsp[i],
                   attn_k_smem_ptr(b, m->smem, attn_b_subi(b, addr, m->sbase)));
    }
  }
  if (wide)
    attn_b_if_close(b, &half, 0, NULL);
  attn_k_fence_proxy_async(b, false);
  // dV += P^T dO, dK += dS^T Q (A in registers), then dQ once both
  // warpgroups' dS^T are in place.
  attn_k_reg_fence(b, dv, nd, "f");
  attn_k_reg_fence(b, dk, nd, "f");
  attn_k_reg_fence(b, pp, 16, "r");
  attn_k_reg_fence(b, dsp, 16, "r");
  attn_k_wgmma_fence(b);
  issue_acc(m, dv, nd, pp, attn_b_addi(b, dos, creg));
  issue_acc(m, dk, nd, dsp, attn_b_addi(b, qs, creg));
  attn_k_wgmma_commit(b);
  // wide: both warpgroups hold the block's every element; the first adds.
  for (int si = 0; si < g->nsites && !b->failed; ++si)
    site_add(m, si, &csum[si], lane,
             wide ? attn_k_cmpc(b, ATTN_B_EQ, cw, 0) : (MlirValue){NULL});
  attn_k_bar_sync(b, bar_id, 256);
  // dQ's 64 x 64 tiles, one a column region (wide: two, issued together).
  MlirValue qa[2][32];
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 32; ++i)
      qa[r][i] = undef;
  MlirValue da = attn_k_make_desc(
      b,
      attn_k_pin(b, attn_b_addi(b, ds_tile, attn_k_mulc(b, dq_keys, 128)),
                 "r"),
      bn * 128, 1024);
  attn_k_wgmma_fence(b);
  for (int r = 0; r < dq_regions; ++r) {
    MlirValue db = attn_k_make_desc(
        b,
        attn_k_pin(b,
                   attn_b_addi(b, attn_k_addc(b, m->sbase, m->l.k_off),
                               attn_b_addi(b,
                                           attn_k_mulc(b,
                                                       attn_k_addc(b, dq_region,
                                                                   r),
                                                       bn * 128),
                                           attn_k_mulc(b, dq_keys, 128))),
                   "r"),
        bn * 128, 1024);
    for (int kk = 0; kk < dq_steps; ++kk)
      attn_k_wgmma_ss_t(b, k->bf16, qa[r], 32,
                        attn_k_desc_add(b, da, (int64_t)kk * 16 * 128),
                        attn_k_desc_add(b, db, (int64_t)kk * 16 * 128),
                        attn_b_i32(b, kk ? 1 : 0), true, true);
  }
  attn_k_wgmma_commit(b);
  attn_k_wgmma_wait(b, 0);
  attn_k_reg_fence(b, dv, nd, "f");
  attn_k_reg_fence(b, dk, nd, "f");
  attn_k_mbar_arrive(b, bar_at(m, m->bar_empty, s));
  // dQ's rows of the block (padded: no bounds) into dq_acc.
  MlirValue bh = attn_b_addi(b, attn_k_mulc(b, m->bz, k->heads), h);
  MlirValue qrow0 = attn_b_addi(b, attn_k_mulc(b, bh, np),
                                attn_k_mulc(b, qb, bm));
  MlirValue turn = {NULL}, turn_addr = {NULL}, lead = {NULL}, wg_bar = {NULL};
  if (g->deterministic) {
    lead = attn_k_cmpc(b, ATTN_B_EQ, wt, 0);
    wg_bar = attn_k_addc(b, cw, DQ_BAR);
    // Its turn: 2 (the last key block that sees the query block - key
    // block) + cw. The last (the diagonal's, causal) adds first: a CTA
    // visits its query blocks upwards from its first, so the key blocks
    // after it passed each query block a step before it does, and no CTA
    // waits on one that starts later (they are launched first, above).
    int64_t nkb = (k->seq_k + bn - 1) / bn;
    MlirValue last = attn_b_i32(b, nkb - 1);
    int64_t reach = k->causal ? 0
                    : k->window && k->window_right >= 0 ? k->window_right
                                                        : -1;
    if (reach >= 0)
      last = attn_b_minui(
          b, last,
          attn_k_divc(b, attn_k_addc(b, attn_k_mulc(b, qb, bm), bm - 1 + reach),
                      bn));
    turn = attn_b_addi(b, attn_k_mulc(b, attn_b_subi(b, last, m->kb), 2), cw);
    turn_addr = attn_k_ptrtoint(b, at(b, m->rows, turn_off(b, g, bh, qb)),
                                b->t.i64);
    struct attn_b_if w;
    attn_b_if_open(b, &w, lead, 0, NULL, false);
    attn_k_wait_until(b, turn_addr, "eq", turn, "gpu", TURN_WAIT_NS);
    attn_b_if_close(b, &w, 0, NULL);
    attn_k_bar_sync(b, wg_bar, 128);
  }
  for (int r = 0; r < dq_regions; ++r) {
    MlirValue region = attn_k_addc(b, dq_region, r);
    if (g->dq_bulk)
      dq_bulk_reduce(m, qa[r], &fr, cw, wt, qrow0, region);
    else
      dq_red(m, qa[r], &fr, qrow0, region);
  }
  if (g->deterministic) {
    // The warpgroup's adds done (the barrier orders them before the
    // release), the turn passed on.
    attn_k_bar_sync(b, wg_bar, 128);
    struct attn_b_if w;
    attn_b_if_open(b, &w, lead, 0, NULL, false);
    attn_k_store_release(b, turn_addr, attn_k_addc(b, turn, 1));
    attn_b_if_close(b, &w, 0, NULL);
  }
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
  if (g->dq_bulk) {
    // The last reduces done before the CTA's shared memory goes.
    struct attn_b_if w;
    attn_b_if_open(b, &w, attn_k_cmpc(b, ATTN_B_ULT, wt, 64), 0, NULL, false);
    attn_k_bulk_wait(b, 0, false);
    attn_b_if_close(b, &w, 0, NULL);
  }

  // dV (16-bit) and dK (f32, into dk_acc) of the rows below seq_k.
  attn_builder_role(b, "bwd.epilogue");
  MlirValue kvh = attn_b_addi(b, attn_k_mulc(b, m->bz, k->kv_heads), m->kh);
  for (int r = 0; r < 2; ++r) {
    MlirValue kv = attn_b_addi(b, kr0, attn_k_addc(b, fr.row0, 8 * r));
    struct attn_b_if in;
    attn_b_if_open(b, &in, attn_k_cmpc(b, ATTN_B_ULT, kv, k->seq_k), 0, NULL,
                   false);
    MlirValue rowi = attn_b_addi(b, attn_k_mulc(b, kvh, k->seq_k), kv);
    for (int j = 0; j < nd / 4; ++j) {
      int i = 4 * j + 2 * r;
      MlirValue col = attn_b_addi(b, col0, frag_col(b, &fr, i));
      MlirValue ev = add64(b, mul64(b, rowi, d), attn_k_i64_of(b, col));
      attn_k_store(b, attn_k_pack2(b, k->bf16, dv[i], dv[i + 1]),
                   at(b, m->dv, attn_b_muli(b, ev, attn_b_i64(b, 2))));
      MlirValue w[2] = {dk[i], dk[i + 1]};
      attn_k_store_vec(b, w, 2,
                       at(b, m->dk, attn_b_muli(b, ev, attn_b_i64(b, 4))));
    }
    attn_b_if_close(b, &in, 0, NULL);
  }
}

static void build_main(struct mk *m, const struct attn_b_func *f) {
  struct attn_builder *b = m->b;
  const struct attn_hopper_bwd *g = m->g;
  const struct attn_hopper_kernel *k = &g->k;
  attn_builder_role(b, "bwd.setup");
  MlirValue tid = attn_k_sreg(b, "tid.x");
  m->kb = attn_k_sreg(b, "ctaid.x");
  // deterministic: the key blocks launched last first, whose CTAs see the
  // fewest query blocks (causal), so that each query block's adds come
  // in the order of its turns (below) as the CTAs run.
  if (g->deterministic)
    m->kb = attn_b_subi(
        b, attn_b_i32(b, (k->seq_k + g->block_n - 1) / g->block_n - 1),
        m->kb);
  m->kh = attn_k_sreg(b, "ctaid.y");
  m->bz = attn_k_sreg(b, "ctaid.z");
  MlirValue raw = attn_k_addressof(b, "attn_smem", b->t.ptr_shared);
  MlirValue raw_i = attn_k_ptrtoint(b, raw, b->t.i32);
  MlirValue pad = attn_b_subi(
      b, attn_b_andi(b, attn_k_addc(b, raw_i, 1023), attn_b_i32(b, ~1023)),
      raw_i);
  m->smem = attn_k_smem_ptr(b, raw, pad);
  m->sbase = attn_b_addi(b, raw_i, pad);
  m->dv = attn_b_func_arg(f, 4);
  m->rows = attn_b_func_arg(f, 5);
  m->dq = attn_b_func_arg(f, 6);
  m->dk = attn_b_func_arg(f, 7);
  m->qmap = attn_k_ptrtoint(b, attn_b_func_arg(f, 8), b->t.i64);
  m->kmap = attn_k_ptrtoint(b, attn_b_func_arg(f, 9), b->t.i64);
  m->vmap = attn_k_ptrtoint(b, attn_b_func_arg(f, 10), b->t.i64);
  m->omap = attn_k_ptrtoint(b, attn_b_func_arg(f, 11), b->t.i64);
  if (m->fn) {
    MlirValue caps[ATTN_K_FN_PTRS] = {{NULL}};
    for (int i = 0; i < k->ncaptures; ++i)
      caps[i] = attn_b_func_arg(f, MAIN_PARAMS + i);
    for (int i = 0; i < g->ngrads; ++i)
      m->grads[i] = attn_b_func_arg(f, MAIN_PARAMS + k->ncaptures + i);
    attn_k_fn_init(m->fn, k, caps);
    m->fn->recip_div = true;
  }
  // The query blocks that see the key block [kr, kr + block_n): from the
  // diagonal (causal) or the window's right edge (rows from kr - right),
  // up to its left edge (rows to kr + block_n - 1 + left).
  int64_t nqb = attn_hopper_bwd_rows(g) / g->block_m;
  int64_t group = k->heads / k->kv_heads;
  MlirValue kr = attn_k_mulc(b, m->kb, g->block_n);
  MlirValue nqb_v = attn_b_i32(b, nqb);
  m->qlo = attn_b_i32(b, 0);
  if (k->causal)
    m->qlo = attn_k_divc(b, kr, g->block_m);
  else if (k->window && k->window_right >= 0)
    m->qlo = attn_k_divc(
        b,
        attn_b_binary(b, "arith.maxsi", attn_k_addc(b, kr, -k->window_right),
                      attn_b_i32(b, 0)),
        g->block_m);
  m->qlo = attn_b_minui(b, m->qlo, nqb_v);
  MlirValue qhi = nqb_v;
  if (k->window && k->window_left >= 0)
    qhi = attn_b_minui(
        b,
        attn_k_addc(b,
                    attn_k_divc(b,
                                attn_k_addc(b, kr,
                                            g->block_n - 1 + k->window_left),
                                g->block_m),
                    1),
        nqb_v);
  m->nq = attn_b_subi(b, attn_b_maxui(b, qhi, m->qlo), m->qlo);
  m->niter = attn_k_mulc(b, m->nq, group);
  MlirValue bars = attn_k_addc(b, m->sbase, m->l.bar_off);
  m->bar_kv = bars;
  m->bar_full = attn_k_addc(b, bars, 8);
  m->bar_empty = attn_k_addc(b, bars, 8 + 8 * g->stages);
  struct attn_b_if init;
  attn_b_if_open(b, &init, attn_k_cmpc(b, ATTN_B_EQ, tid, 0), 0, NULL, false);
  attn_k_mbar_init(b, m->bar_kv, 1);
  for (int s = 0; s < g->stages; ++s) {
    attn_k_mbar_init(b, attn_k_addc(b, m->bar_full, 8 * s), 1);
    attn_k_mbar_init(b, attn_k_addc(b, m->bar_empty, 8 * s), 256);
  }
  attn_k_fence_mbar_init(b);
  attn_b_if_close(b, &init, 0, NULL);
  attn_k_bar_sync(b, (MlirValue){NULL}, 0);
  MlirValue wg = attn_k_divc(b, tid, 128), wt = attn_k_remc(b, tid, 128);
  struct attn_b_if roles;
  attn_b_if_open(b, &roles, attn_k_cmpc(b, ATTN_B_EQ, wg, 0), 0, NULL, true);
  attn_k_setmaxnreg(b, false, PRODUCER_REGS);
  struct attn_b_if lead;
  attn_b_if_open(b, &lead, attn_k_cmpc(b, ATTN_B_EQ, wt, 0), 0, NULL, false);
  producer(m);
  attn_builder_role(b, "bwd.setup");
  attn_b_if_close(b, &lead, 0, NULL);
  attn_b_if_else(b, &roles, 0, NULL);
  attn_k_setmaxnreg(b, true, CONSUMER_REGS);
  consumer(m, attn_k_addc(b, wg, -1), wt);
  attn_builder_role(b, "bwd.setup");
  attn_b_if_close(b, &roles, 0, NULL);
}

/// The main kernel's parameter attributes: the four tensor maps (8 to 11)
/// 64-byte aligned, passed by value, grid constants; the captures after
/// them read only; then the gradient buffers.
static MlirAttribute main_arg_attrs(struct attn_builder *b, int ncaptures,
                                    int ngrads) {
  MlirNamedAttribute m[] = {
      attn_b_named(b, "llvm.align", attn_b_attr_i64(b, 64)),
      attn_b_named(b, "llvm.byval",
                   attn_b_attr_type(b, mlirLLVMArrayTypeGet(b->t.i8, 128))),
      attn_b_named(b, "nvvm.grid_constant", attn_b_attr_unit(b)),
  };
  MlirAttribute none = mlirDictionaryAttrGet(b->ctx, 0, NULL);
  MlirAttribute map = mlirDictionaryAttrGet(b->ctx, 3, m);
  MlirAttribute all[MAIN_PARAMS + ATTN_HOPPER_MAX_CAPTURES +
                    ATTN_HOPPER_MAX_GRADS];
  int n = MAIN_PARAMS + ncaptures;
  for (int i = 0; i < n + ngrads; ++i)
    all[i] = i >= n             ? none
             : i >= MAIN_PARAMS ? attn_k_fn_capture_attrs(b)
             : i >= 8           ? map
                                : none;
  return mlirArrayAttrGet(b->ctx, n + ngrads, all);
}

static bool build_main_kernel(struct attn_builder *b,
                              const struct attn_hopper_bwd *g) {
  const struct attn_hopper_kernel *k = &g->k;
  const char *ty = k->bf16 ? "bf16" : "f16";
  struct attn_k_param p[MAIN_PARAMS + ATTN_HOPPER_MAX_CAPTURES +
                       ATTN_HOPPER_MAX_GRADS] = {
      ptr_param("q", ty, 4, k->batch, k->heads, k->seq_q, k->head_dim),
      ptr_param("k", ty, 4, k->batch, k->kv_heads, k->seq_k, k->head_dim),
      ptr_param("v", ty, 4, k->batch, k->kv_heads, k->seq_k, k->head_dim),
      ptr_param("dout", ty, 4, k->batch, k->heads, k->seq_q, k->head_dim),
      ptr_param("dv", ty, 4, k->batch, k->kv_heads, k->seq_k, k->head_dim),
      ptr_param("rows", "f32", 1, attn_hopper_bwd_rows_bytes(g) / 4, 0, 0, 0),
      ptr_param("dq_acc", "f32", 1, attn_hopper_bwd_dq_bytes(g) / 4, 0, 0, 0),
      ptr_param("dk_acc", "f32", 1, attn_hopper_bwd_dk_bytes(g) / 4, 0, 0, 0),
  };
  p[4].align = 4;
  p[5].align = p[6].align = 16;
  p[7].align = 8;
  struct attn_k_param qm = {.dtype = ty,
                            .dims = {k->head_dim, k->seq_q, k->heads, k->batch},
                            .box_rows = g->block_m};
  struct attn_k_param km = {
      .dtype = ty,
      .dims = {k->head_dim, k->seq_k, k->kv_heads, k->batch},
      .box_rows = g->block_n};
  p[8] = qm;
  p[8].name = "q_map";
  p[8].tensor = "q";
  p[9] = km;
  p[9].name = "k_map";
  p[9].tensor = "k";
  p[10] = km;
  p[10].name = "v_map";
  p[10].tensor = "v";
  p[11] = qm;
  p[11].name = "dout_map";
  p[11].tensor = "dout";
  for (int i = 0; i < k->ncaptures; ++i)
    p[MAIN_PARAMS + i] = attn_k_fn_capture_param(k, i);
  int np = MAIN_PARAMS + k->ncaptures;
  for (int i = 0; i < g->ngrads; ++i)
    p[np++] = attn_k_bwd_grad_param(g, i);
  int64_t grid[3] = {(k->seq_k + g->block_n - 1) / g->block_n, k->kv_heads,
                     k->batch};
  MlirAttribute launch =
      attn_k_launch_attr(b, "hopper-bwd", grid, MAIN_THREADS,
                         attn_hopper_bwd_smem_bytes(g), np, p, 0, NULL);
  struct attn_b_func f;
  attn_builder_role(b, "bwd.setup");
  attn_k_bwd_open_kernel(b, &f, g, "__main", np,
                         main_arg_attrs(b, k->ncaptures, g->ngrads),
                         MAIN_THREADS, launch);
  struct attn_k_fn fn;
  bool fns = k->nmods || k->nmask_fns || !mlirBlockIsNull(g->grad_fn) ||
             g->nsites;
  struct mk m = {.b = b, .g = g, .fn = fns ? &fn : NULL};
  layout_of(g, &m.l);
  if (!mlirOperationIsNull(f.op))
    build_main(&m, &f);
  if (fns && !mlirOperationIsNull(f.op))
    attn_k_fn_free(&fn);
  attn_builder_role(b, "bwd.setup");
  return attn_k_llvm_func_finish(b, &f);
}


bool attn_kernels_build_hopper_bwd(MlirOperation gpu_module, MlirLocation loc,
                                   const struct attn_hopper_bwd *g) {
  MlirContext ctx = mlirLocationGetContext(loc);
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  attn_builder_role(&b, "bwd.setup");
  attn_k_declare_libdevice(&b, gpu_module, 1024);
  return attn_k_bwd_build_pre_kernel(&b, g) && build_main_kernel(&b, g) &&
         attn_k_bwd_build_out_kernel(&b, g, true) &&
         attn_k_bwd_build_out_kernel(&b, g, false);
}
