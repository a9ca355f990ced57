//===- hopper_softmax.c - The Hopper attention kernel's online softmax ----===//
//
// One key block of hopper_emit.c's consumer warpgroups, between the wait
// for S = Q K^T and the P V wgmma, in exp2 form: the mask on blocks that
// cross the diagonal or the end of the keys, the new row maxima and the
// factors that rescale the accumulators, and P. A thread holds rows r0
// (register pairs 0-1 of every 4) and r0 + 8 (pairs 2-3) of its warp's 16.
//
// Two choices of the kernel (hopper_emit.h) shape it:
//
//   lazy_rescale  a row's maximum moves only when a block's exceeds it by
//                 more than 8 in log2 units (FlashAttention-4), so most
//                 factors are exactly 1 and a warp whose lanes all have 1
//                 skips the rescale;
//   row_sum_mma   the tensor cores add the row sums (P times ones beside
//                 each P V), so the softmax adds none.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/hopper_emit.h"
#include "lib/Transforms/hopper_ptx.h"

#include <math.h>
#include <string.h>

/// `scf.if cond` with n f32 results: if_f32_open returns the op's number,
/// if_f32_else yields the then-arm's values, if_f32_close the else-arm's and
/// names the results in out (x + -0.0 == x names one result of a region
/// op).
static int if_f32_open(struct attn_ptx *p, int cond, int n) {
  return attn_ptx_open_if(p, cond, n, NULL);
}

static void yield_f32(struct attn_ptx *p, const int *vals, int n) {
  attn_ptx_yield_list(p, "scf.yield", vals, n, NULL);
}

static void if_f32_else(struct attn_ptx *p, const int *then_vals, int n) {
  yield_f32(p, then_vals, n);
  attn_ptx_line(p, "} else {");
}

static void if_f32_close(struct attn_ptx *p, int r, const int *else_vals,
                         int n, int *out) {
  yield_f32(p, else_vals, n);
  attn_ptx_line(p, "}");
  int nz = attn_ptx_cf32(p, -0.0f);
  for (int i = 0; i < n; ++i)
    out[i] = attn_ptx_op(p, "arith.addf %%v%d#%d, %%v%d : f32", r, i, nz);
}

/// Masks S (ns values, updated in place) in key block j: keys past the end
/// and, causal, past the row.
static void mask_scores(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                        const struct attn_hopper_softmax *s, int j, int *sv) {
  int kbase = attn_ptx_addi(p, attn_ptx_mulc(p, j, k->block_n),
                            attn_ptx_mulc(p, s->lr, 2));
  int rows[2] = {s->row0, attn_ptx_addc(p, s->row0, 8)};
  for (int i = 0; i < k->block_n / 2; ++i) {
    int col = attn_ptx_addc(p, kbase, 8 * (i >> 2) + (i & 1));
    int bad = attn_ptx_cmpc(p, "uge", col, k->seq_k);
    if (k->causal)
      bad = attn_ptx_op(p, "arith.ori %%v%d, %%v%d : i1", bad,
                        attn_ptx_cmp(p, "ugt", col, rows[(i >> 1) & 1]));
    sv[i] = attn_ptx_sel(p, bad, s->ninf, sv[i], "f32");
  }
}

void attn_hopper_mask(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                      const struct attn_hopper_softmax *s, int j, int *sv) {
  int ns = k->block_n / 2;
  bool tail = k->seq_k % k->block_n != 0;
  if (!k->causal && !tail)
    return;
  int end = attn_ptx_mulc(p, attn_ptx_addc(p, j, 1),
                          k->block_n); // one past the block
  int need = attn_ptx_cmpc(p, "ugt", end, k->seq_k);
  if (k->causal)
    need = attn_ptx_op(
        p, "arith.ori %%v%d, %%v%d : i1", need,
        attn_ptx_cmp(p, "ugt", end, attn_ptx_addc(p, s->wg_row, 1)));
  int r = if_f32_open(p, need, ns);
  int masked[256];
  memcpy(masked, sv, sizeof(int) * (size_t)ns);
  mask_scores(p, k, s, j, masked);
  if_f32_else(p, masked, ns);
  if_f32_close(p, r, sv, ns, sv);
}

void attn_hopper_softmax(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                         const struct attn_hopper_softmax *s, const int *sv,
                         const int m_in[2], const int l_in[2], int m_out[2],
                         int l_out[2], int alpha[2], int *pf) {
  int ns = k->block_n / 2, m_use[2];
  for (int r = 0; r < 2; ++r) {
    int mx = s->ninf;
    for (int i = 0; i < ns; ++i)
      if (((i >> 1) & 1) == r)
        mx = attn_ptx_op(p, "arith.maxnumf %%v%d, %%v%d : f32", mx, sv[i]);
    mx = attn_ptx_op(p, "arith.maxnumf %%v%d, %%v%d : f32", mx,
                     attn_ptx_shfl_xor(p, mx, 1));
    mx = attn_ptx_op(p, "arith.maxnumf %%v%d, %%v%d : f32", mx,
                     attn_ptx_shfl_xor(p, mx, 2));
    m_out[r] = attn_ptx_op(p, "arith.maxnumf %%v%d, %%v%d : f32", m_in[r],
                           attn_ptx_fmul(p, mx, s->scale_log2));
    int moved = -1;
    if (k->lazy_rescale) {
      // m_in = -inf moves to anything but -inf (a row masked so far).
      moved = attn_ptx_op(p, "arith.cmpf ogt, %%v%d, %%v%d : f32", m_out[r],
                          attn_ptx_fadd(p, m_in[r], attn_ptx_cf32(p, 8.0f)));
      m_out[r] = attn_ptx_sel(p, moved, m_out[r], m_in[r], "f32");
    }
    int dead = attn_ptx_op(p, "arith.cmpf oeq, %%v%d, %%v%d : f32", m_out[r],
                           s->ninf);
    m_use[r] = attn_ptx_sel(p, dead, s->zero, m_out[r], "f32");
    alpha[r] = attn_ptx_ex2(p, attn_ptx_fsub(p, m_in[r], m_use[r]));
    if (moved >= 0)
      alpha[r] = attn_ptx_sel(p, moved, alpha[r], attn_ptx_cf32(p, 1), "f32");
  }
  int sum[2] = {s->zero, s->zero};
  int neg[2] = {attn_ptx_op(p, "arith.negf %%v%d : f32", m_use[0]),
                attn_ptx_op(p, "arith.negf %%v%d : f32", m_use[1])};
  for (int i = 0; i < ns; ++i) {
    int r = (i >> 1) & 1;
    pf[i] = attn_ptx_ex2(p, attn_ptx_fma3(p, sv[i], s->scale_log2, neg[r]));
    if (!k->row_sum_mma)
      sum[r] = attn_ptx_fadd(p, sum[r], pf[i]);
  }
  for (int r = 0; r < 2; ++r)
    l_out[r] = k->row_sum_mma ? l_in[r]
                              : attn_ptx_fma3(p, l_in[r], alpha[r], sum[r]);
}

void attn_hopper_rescale(struct attn_ptx *p,
                         const struct attn_hopper_kernel *k, int *acc, int n,
                         const int alpha[2]) {
  if (!k->lazy_rescale) {
    for (int i = 0; i < n; ++i)
      acc[i] = attn_ptx_fmul(p, acc[i], alpha[(i >> 1) & 1]);
    return;
  }
  int one = attn_ptx_cf32(p, 1.0f);
  int moved = attn_ptx_op(
      p, "arith.ori %%v%d, %%v%d : i1",
      attn_ptx_op(p, "arith.cmpf une, %%v%d, %%v%d : f32", alpha[0], one),
      attn_ptx_op(p, "arith.cmpf une, %%v%d, %%v%d : f32", alpha[1], one));
  int r = if_f32_open(p, attn_ptx_vote_any(p, moved), n);
  int scaled[256];
  for (int i = 0; i < n; ++i)
    scaled[i] = attn_ptx_fmul(p, acc[i], alpha[(i >> 1) & 1]);
  if_f32_else(p, scaled, n);
  if_f32_close(p, r, acc, n, acc);
}
