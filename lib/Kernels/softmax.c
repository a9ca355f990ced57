//===- softmax.c - The online softmax role, built -------------------------===//
//
// One key block's softmax of a thread's two rows of S (rows row0 and row0 +
// 8: register pairs 0-1 and 2-3 of every 4), in exp2 form: the score
// functions, the mask on blocks that cross the diagonal,
// a window's edge or the end of the keys, the new maxima,
// the factors that rescale the accumulators, and P. The same ops, in the
// same order, as the Hopper kernel's text writer made them before issue 26
// (lib/Transforms/hopper_softmax.c; its lazy_rescale and row_sum_mma choices
// are kept here too), so that both attention kernels built on it print the
// PTX they printed as text.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"

#include <math.h>
#include <string.h>

MlirValue attn_k_result_f32(struct attn_builder *b, MlirOperation r, intptr_t i,
                            MlirValue nz) {
  return attn_b_addf(b, attn_b_result(r, i), nz);
}

/// Closes the f32 scf.if s (else region open) yielding else_vals, and names
/// its results in out, each plus a -0.0 made here.
static void if_f32_close(struct attn_builder *b, struct attn_b_if *s,
                         const MlirValue *else_vals, int n, MlirValue *out) {
  attn_b_if_close(b, s, n, else_vals);
  MlirValue nz = attn_b_f32(b, -0.0f);
  for (int i = 0; i < n; ++i)
    out[i] = attn_k_result_f32(b, s->op, i, nz);
}

static void if_f32_open(struct attn_builder *b, struct attn_b_if *s,
                        MlirValue cond, int n) {
  MlirType tys[ATTN_K_MAX_REGS];
  for (int i = 0; i < n; ++i)
    tys[i] = b->t.f32;
  attn_b_if_open(b, s, cond, n, tys, true);
}

//===-- Score modifiers --------------------------------------------------===//
//
// S leaves the tensor cores as Q K^T. The modifiers run in the program's
// order on x = f v, v the register and f a compile-time factor (1 at
// first): the scale multiplies f; a score function (softcap, ALiBi, the
// gate and users' bodies, lib/Kernels/score_fn.c) computes on f v, or
// keeps f or a factor of its own out of the loop where its body's form
// allows (attn_k_fn_factor). The softmax then folds f into its exponent as
// it folds the scale alone (attn_k_score_factor), so that v f is the
// program's score.

void attn_k_score_mods(struct attn_builder *b,
                       const struct attn_hopper_kernel *k,
                       const struct attn_k_softmax *s, MlirValue j,
                       MlirValue *sv) {
  double f = 1.0;
  for (int m = 0, fi = 0; m < k->nmods && fi < k->nscore_fns; ++m) {
    if (k->mods[m] == ATTN_HOPPER_MOD_FN)
      attn_k_fn_scores(b, s->fn, fi, s->lr, j, f, sv);
    f = attn_k_fn_factor_after(k, m, fi, f);
    fi += k->mods[m] == ATTN_HOPPER_MOD_FN;
  }
}

//===-- The mask ---------------------------------------------------------===//

/// Masks S (ns values, updated in place) in key block j: keys past the end
/// and, causal, past the row; with a window, keys before row - left or past
/// row + right (the plain path's tile.mask, in i32).
static void mask_scores(struct attn_builder *b,
                        const struct attn_hopper_kernel *k,
                        const struct attn_k_softmax *s, MlirValue j,
                        MlirValue *sv) {
  MlirValue kbase =
      attn_b_addi(b, attn_k_mulc(b, j, k->block_n), attn_k_mulc(b, s->lr, 2));
  MlirValue rows[2] = {s->row0, attn_k_addc(b, s->row0, 8)};
  bool left = k->window && k->window_left >= 0,
       right = k->window && k->window_right >= 0;
  MlirValue edge[2] = {{NULL}, {NULL}}; // row + right
  for (int r = 0; right && r < 2; ++r)
    edge[r] = attn_k_addc(b, rows[r], k->window_right);
  for (int i = 0; i < k->block_n / 2; ++i) {
    MlirValue col = attn_k_addc(b, kbase, 8 * (i >> 2) + (i & 1));
    MlirValue bad = attn_k_cmpc(b, ATTN_B_UGE, col, k->seq_k);
    if (k->causal)
      bad = attn_b_ori(b, bad,
                       attn_b_cmpi(b, ATTN_B_UGT, col, rows[(i >> 1) & 1]));
    if (left) // col < row - left, without going below zero
      bad = attn_b_ori(
          b, bad,
          attn_b_cmpi(b, ATTN_B_ULT, attn_k_addc(b, col, k->window_left),
                      rows[(i >> 1) & 1]));
    if (right)
      bad = attn_b_ori(b, bad,
                       attn_b_cmpi(b, ATTN_B_UGT, col, edge[(i >> 1) & 1]));
    sv[i] = attn_b_select(b, bad, s->ninf, sv[i]);
  }
}

/// The affine masks of attn_k_mask, behind their branch.
static void mask_affine(struct attn_builder *b,
                        const struct attn_hopper_kernel *k,
                        const struct attn_k_softmax *s, MlirValue j,
                        MlirValue *sv) {
  int ns = k->block_n / 2;
  MlirValue end = attn_k_mulc(b, attn_k_addc(b, j, 1),
                              k->block_n); // one past the block
  MlirValue need = attn_k_cmpc(b, ATTN_B_UGT, end, k->seq_k);
  if (k->causal)
    need = attn_b_ori(
        b, need, attn_b_cmpi(b, ATTN_B_UGT, end, attn_k_addc(b, s->wg_row, 1)));
  if (k->window && k->window_right >= 0) // a key past the first row's edge
    need = attn_b_ori(
        b, need,
        attn_b_cmpi(b, ATTN_B_UGT, end,
                    attn_k_addc(b, s->wg_row, k->window_right + 1)));
  if (k->window && k->window_left >= 0) // a key before the last row's edge
    need = attn_b_ori(
        b, need,
        attn_b_cmpi(b, ATTN_B_SLT,
                    attn_k_addc(b, attn_k_mulc(b, j, k->block_n),
                                k->window_left),
                    attn_k_addc(b, s->wg_row, s->group_rows - 1)));
  struct attn_b_if r;
  if_f32_open(b, &r, need, ns);
  MlirValue masked[ATTN_K_MAX_REGS];
  memcpy(masked, sv, sizeof(MlirValue) * (size_t)ns);
  mask_scores(b, k, s, j, masked);
  attn_b_if_else(b, &r, ns, masked);
  if_f32_close(b, &r, sv, ns, sv);
}

void attn_k_mask(struct attn_builder *b, const struct attn_hopper_kernel *k,
                 const struct attn_k_softmax *s, MlirValue j, MlirValue *sv) {
  bool tail = k->seq_k % k->block_n != 0;
  if (k->causal || tail || k->window)
    mask_affine(b, k, s, j, sv);
  if (!k->nmask_fns)
    return;
  if (mlirValueIsNull(s->kff) && mlirValueIsNull(s->fn_full)) {
    // nothing tells where they mask
    attn_k_fn_masks(b, s->fn, s->lr, j, s->ninf, sv);
    return;
  }
  // Masks of any form, outside the run of blocks they leave whole
  // (attn_hopper_key_table), or outside the blocks the run-time key list
  // says they leave whole (key_lists.c).
  int ns = k->block_n / 2;
  MlirValue need =
      !mlirValueIsNull(s->fn_full)
          ? attn_b_xori(b, s->fn_full,
                        attn_b_constant(b, attn_b_attr_bool(b, true)))
          : attn_b_ori(b, attn_b_cmpi(b, ATTN_B_ULT, j, s->kff),
                       attn_b_cmpi(b, ATTN_B_UGE, j, s->kfl));
  struct attn_b_if r;
  if_f32_open(b, &r, need, ns);
  MlirValue masked[ATTN_K_MAX_REGS];
  memcpy(masked, sv, sizeof(MlirValue) * (size_t)ns);
  attn_k_fn_masks(b, s->fn, s->lr, j, s->ninf, masked);
  attn_b_if_else(b, &r, ns, masked);
  if_f32_close(b, &r, sv, ns, sv);
}

void attn_k_softmax(struct attn_builder *b, const struct attn_hopper_kernel *k,
                    const struct attn_k_softmax *s, const MlirValue *sv,
                    const MlirValue m_in[2], const MlirValue l_in[2],
                    MlirValue m_out[2], MlirValue l_out[2], MlirValue alpha[2],
                    MlirValue *pf) {
  int ns = k->block_n / 2;
  MlirValue m_use[2];
  for (int r = 0; r < 2; ++r) {
    MlirValue mx = s->ninf;
    for (int i = 0; i < ns; ++i)
      if (((i >> 1) & 1) == r)
        mx = attn_b_maxnumf(b, mx, sv[i]);
    mx = attn_b_maxnumf(b, mx, attn_k_shfl_xor(b, mx, 1));
    mx = attn_b_maxnumf(b, mx, attn_k_shfl_xor(b, mx, 2));
    m_out[r] = attn_b_maxnumf(b, m_in[r], attn_b_mulf(b, mx, s->scale_log2));
    MlirValue moved = {NULL};
    if (k->lazy_rescale) {
      // m_in = -inf moves to anything but -inf (a row masked so far).
      moved = attn_b_cmpf(b, ATTN_B_F_OGT, m_out[r],
                          attn_b_addf(b, m_in[r], attn_b_f32(b, 8.0f)));
      m_out[r] = attn_b_select(b, moved, m_out[r], m_in[r]);
    }
    MlirValue dead = attn_b_cmpf(b, ATTN_B_F_OEQ, m_out[r], s->ninf);
    m_use[r] = attn_b_select(b, dead, s->zero, m_out[r]);
    alpha[r] = attn_k_ex2(b, attn_b_subf(b, m_in[r], m_use[r]));
    if (!mlirValueIsNull(moved))
      alpha[r] = attn_b_select(b, moved, alpha[r], attn_b_f32(b, 1));
  }
  MlirValue sum[2] = {s->zero, s->zero};
  MlirValue neg[2] = {attn_b_negf(b, m_use[0]), attn_b_negf(b, m_use[1])};
  for (int i = 0; i < ns; ++i) {
    int r = (i >> 1) & 1;
    pf[i] = attn_k_ex2(b, attn_k_fma_intr(b, sv[i], s->scale_log2, neg[r]));
    if (!k->row_sum_mma)
      sum[r] = attn_b_addf(b, sum[r], pf[i]);
  }
  for (int r = 0; r < 2; ++r)
    l_out[r] = k->row_sum_mma ? l_in[r]
                              : attn_k_fma_intr(b, l_in[r], alpha[r], sum[r]);
}

void attn_k_rescale(struct attn_builder *b, const struct attn_hopper_kernel *k,
                    MlirValue *acc, int n, const MlirValue alpha[2]) {
  if (!k->lazy_rescale) {
    for (int i = 0; i < n; ++i)
      acc[i] = attn_b_mulf(b, acc[i], alpha[(i >> 1) & 1]);
    return;
  }
  MlirValue one = attn_b_f32(b, 1.0f);
  MlirValue moved = attn_b_ori(b, attn_b_cmpf(b, ATTN_B_F_UNE, alpha[0], one),
                               attn_b_cmpf(b, ATTN_B_F_UNE, alpha[1], one));
  struct attn_b_if r;
  if_f32_open(b, &r, attn_k_vote_any(b, moved), n);
  MlirValue scaled[ATTN_K_MAX_REGS];
  for (int i = 0; i < n; ++i)
    scaled[i] = attn_b_mulf(b, acc[i], alpha[(i >> 1) & 1]);
  attn_b_if_else(b, &r, n, scaled);
  if_f32_close(b, &r, acc, n, acc);
}

MlirValue attn_k_row_lse(struct attn_builder *b, MlirValue m, MlirValue l) {
  MlirValue sum = attn_b_addf(b, m, attn_k_lg2(b, l));
  MlirValue none = attn_b_cmpf(b, ATTN_B_F_OEQ, l, attn_b_f32(b, 0.0f));
  return attn_b_select(b, none, attn_b_f32(b, INFINITY),
                       attn_b_mulf(b, sum, attn_b_f32(b, 0.6931471805599453f)));
}
