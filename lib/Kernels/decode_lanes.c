//===- decode_lanes.c - The decode kernel's lanes body ---------------------===//
//
// One row a CTA (MHA), head dim 256, or body=lanes: each lane holds 8
// columns of a key row (head_dim / 8 lanes a key, so a warp takes 32 / (d /
// 8) consecutive rows per step) and, for every row of the CTA, q at those
// columns (pre-multiplied by scale * log2(e) when the scale comes first and
// nothing follows), its O accumulator and a running max and sum. Each lane
// issues ATTN_DECODE_KEY_STEPS steps' K and V loads (16 bytes each) before
// it computes; a score is 8 FMAs and a butterfly over the key's lanes, then
// the modifiers and masks and an online-softmax step in exp2 form per
// iteration. At the end the lanes of different keys merge by shuffles.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/decode_common.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/// The element offset of column dp * 8 of key j (i32, < len) of K/V head g
/// in the cache.
static MlirValue key_offset(struct dec *e, MlirValue j) {
  return attn_b_addi(e->b, dk_key_row(e, j, NULL), i64v(e, attn_k_mulc(e->b, e->dp, 8)));
}

/// The lanes body's rows: the CTA's rb rows, and q at the lane's columns,
/// rotated and scaled (scale and log2 e folded in where the scale comes
/// first).
void dk_lanes_rows(struct dec *e) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  attn_builder_role(b, "decode.rows");
  e->folded = k->nmods == 0 || k->mods[0] == ATTN_DECODE_SCALE;
  bool only_scale = e->folded && k->nmods <= 1;
  double qf = e->folded ? k->scale : 1.0;
  if (only_scale)
    qf *= 1.4426950408889634; // log2 e: scores come out in exp2 form
  for (int r = 0; r < e->rb; ++r) {
    e->row[r] = dk_row_info(e, attn_b_addi(b, attn_k_mulc(b, e->rg, e->rb), c32(e, r)));
    dk_load_q8(e, &e->row[r], attn_k_mulc(b, e->dp, 8), e->qv[r]);
    attn_builder_role(b, "decode.rows");
    for (int c = 0; c < 8 && qf != 1.0; ++c)
      e->qv[r][c] = attn_b_mulf(b, e->qv[r][c], f32c(e, qf));
  }
}

/// The key loop: state[r * 10 + 0] max, [1] sum, [2 ..] O of the lane's 8
/// columns; returns the loop's results in out.
void dk_lanes_key_loop(struct dec *e, MlirValue *out) {
  struct attn_builder *b = e->b;
  int ns = 10 * e->rb;
  MlirValue init[10 * LANES_RMAX];
  for (int r = 0; r < e->rb; ++r) {
    init[r * 10] = e->ninf;
    for (int c = 1; c < 10; ++c)
      init[r * 10 + c] = e->zero;
  }
  int64_t ki = (int64_t)NW * e->kpw * KEY_STEPS; // keys per CTA iteration
  attn_builder_role(b, "decode.key_loop");
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, attn_k_to_index(b, e->start),
                  attn_k_to_index(b, e->end), attn_b_index(b, ki), ns, init);
  MlirValue base = attn_k_from_index(b, loop.iv);
  MlirValue last = attn_k_addc(b, e->end, -1);
  MlirValue j[KEY_STEPS], inr[KEY_STEPS], kx[KEY_STEPS][8], vx[KEY_STEPS][8];
  for (int t = 0; t < KEY_STEPS; ++t) {
    j[t] = attn_b_addi(
        b, base,
        attn_b_addi(b, attn_k_mulc(b, e->warp, e->kpw),
                    attn_k_addc(b, e->ks, (int64_t)t * NW * e->kpw)));
    inr[t] = attn_b_cmpi(b, ATTN_B_SLT, j[t], e->end);
  }
  // Every load first: 2 KEY_STEPS 16-byte loads in flight per lane.
  MlirValue off[KEY_STEPS];
  for (int t = 0; t < KEY_STEPS; ++t) {
    off[t] = key_offset(e, smin(e, j[t], last));
    dk_load8(e, e->kc, off[t], kx[t]);
  }
  for (int t = 0; t < KEY_STEPS; ++t)
    dk_load8(e, e->vc, off[t], vx[t]);
  attn_builder_role(b, "decode.softmax");
  MlirValue y[10 * LANES_RMAX];
  for (int r = 0; r < e->rb; ++r) {
    MlirValue st[KEY_STEPS];
    MlirValue mblk = e->ninf;
    for (int t = 0; t < KEY_STEPS; ++t) {
      MlirValue d = attn_b_mulf(b, e->qv[r][0], kx[t][0]);
      for (int c = 1; c < 8; ++c)
        d = attn_b_fma(b, e->qv[r][c], kx[t][c], d);
      for (int o = 1; o < e->lpk; o <<= 1)
        d = attn_b_addf(b, d, attn_k_shfl_xor(b, d, o));
      st[t] = dk_score(e, &e->row[r], d, j[t], inr[t]);
      mblk = attn_b_maxnumf(b, mblk, st[t]);
    }
    MlirValue m = loop.args[r * 10], l = loop.args[r * 10 + 1];
    MlirValue mnew = attn_b_maxnumf(b, m, mblk);
    MlirValue mu = usable_max(e, mnew);
    MlirValue corr = attn_k_ex2(b, attn_b_subf(b, m, mu));
    MlirValue p[KEY_STEPS], lsum = attn_b_mulf(b, l, corr);
    for (int t = 0; t < KEY_STEPS; ++t) {
      p[t] = attn_k_ex2(b, attn_b_subf(b, st[t], mu));
      lsum = attn_b_addf(b, lsum, p[t]);
    }
    y[r * 10] = mnew;
    y[r * 10 + 1] = lsum;
    for (int c = 0; c < 8; ++c) {
      MlirValue a = attn_b_mulf(b, loop.args[r * 10 + 2 + c], corr);
      for (int t = 0; t < KEY_STEPS; ++t)
        a = attn_b_fma(b, p[t], vx[t][c], a);
      y[r * 10 + 2 + c] = a;
    }
  }
  attn_b_for_close(b, &loop, ns, y);
  for (int i = 0; i < ns; ++i)
    out[i] = loop.results[i];
}

/// Merges the states of the lanes holding other keys of the same columns
/// (lane bits above the key's lanes), in place.
void dk_lanes_merge(struct dec *e, MlirValue *st) {
  struct attn_builder *b = e->b;
  attn_builder_role(b, "decode.merge");
  for (int o = e->lpk; o < 32; o <<= 1)
    for (int r = 0; r < e->rb; ++r) {
      MlirValue *s = st + r * 10;
      MlirValue m2 = attn_k_shfl_xor(b, s[0], o);
      MlirValue l2 = attn_k_shfl_xor(b, s[1], o);
      MlirValue mm = attn_b_maxnumf(b, s[0], m2), mu = usable_max(e, mm);
      MlirValue a1 = attn_k_ex2(b, attn_b_subf(b, s[0], mu));
      MlirValue a2 = attn_k_ex2(b, attn_b_subf(b, m2, mu));
      s[1] = attn_b_fma(b, s[1], a1, attn_b_mulf(b, l2, a2));
      for (int c = 0; c < 8; ++c) {
        MlirValue x2 = attn_k_shfl_xor(b, s[2 + c], o);
        s[2 + c] = attn_b_fma(b, s[2 + c], a1, attn_b_mulf(b, x2, a2));
      }
      s[0] = mm;
    }
}

/// The lanes body's warp states into shared memory: the lanes of key slot
/// 0 hold them.
void dk_lanes_store(struct dec *e, MlirValue *st) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  int64_t d = k->head_dim;
  attn_builder_role(b, "decode.epilogue");
  MlirValue smem = attn_k_addressof(b, "attn_smem", b->t.ptr_shared);
  struct attn_b_if w0;
  attn_b_if_open(b, &w0, attn_k_cmpc(b, ATTN_B_EQ, e->ks, 0), 0, NULL, false);
  for (int r = 0; r < e->rb; ++r) {
    MlirValue wr = attn_b_addi(b, attn_k_mulc(b, e->warp, e->rb), c32(e, r));
    MlirValue ob = attn_k_addc(
        b, attn_k_mulc(b, attn_b_addi(b, attn_k_mulc(b, wr, d), attn_k_mulc(b, e->dp, 8)), 4),
        ML_BYTES);
    attn_k_store_vec(b, &st[r * 10 + 2], 4, smem_at(e, smem, ob));
    attn_k_store_vec(b, &st[r * 10 + 6], 4,
                     smem_at(e, smem, attn_k_addc(b, ob, 16)));
    struct attn_b_if l0;
    attn_b_if_open(b, &l0, attn_k_cmpc(b, ATTN_B_EQ, e->dp, 0), 0, NULL, false);
    MlirValue mo = attn_k_mulc(b, wr, 8);
    attn_k_store(b, st[r * 10], smem_at(e, smem, mo));
    attn_k_store(b, st[r * 10 + 1], smem_at(e, smem, attn_k_addc(b, mo, 4)));
    attn_b_if_close(b, &l0, 0, NULL);
  }
  attn_b_if_close(b, &w0, 0, NULL);
}

