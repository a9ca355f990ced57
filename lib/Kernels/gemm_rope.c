//===- gemm_rope.c - RoPE in the epilogue of the Hopper GEMM --------------===//
//
// The Rotation Calculus's `producer` placement: a q or k projection (a GEMM
// whose tile holds whole heads) rotates its accumulators before the one
// rounding to 16 bits, so attention reads rotated inputs and nobody else
// rotates them. The angles are computed in f64 and reduced to [-pi, pi]
// before the f32 cos/sin approximations; each cos/sin serves every head of
// the tile.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include <math.h>

/// cos and sin of an f64 angle: reduced to [-pi, pi] in f64 (exact enough
/// for angles up to 2^24 rad), then the f32 approximations (absolute error
/// below 1e-6, far under a 16-bit output's rounding).
static void sincos_reduced(struct attn_builder *b, MlirValue angle,
                           MlirValue *c, MlirValue *s) {
  MlirValue turns = attn_b_mulf(b, angle, attn_b_f64(b, 1.0 / ATTN_K_TWO_PI));
  MlirValue k = attn_b_result(
      attn_k_asm(b, b->t.f64, "=d,d", "cvt.rni.f64.f64 $0, $1;", 1, &turns), 0);
  MlirValue r =
      attn_b_subf(b, angle, attn_b_mulf(b, k, attn_b_f64(b, ATTN_K_TWO_PI)));
  MlirValue rf = attn_k_truncf(b, r, b->t.f32);
  *c = attn_b_result(
      attn_k_asm(b, b->t.f32, "=f,f", "cos.approx.ftz.f32 $0, $1;", 1, &rf), 0);
  *s = attn_b_result(
      attn_k_asm(b, b->t.f32, "=f,f", "sin.approx.ftz.f32 $0, $1;", 1, &rf), 0);
}

/// Rotates the accumulators in place. Register i holds column col0 +
/// 8 (i / 4) + (i & 1) of row rows[(i >> 1) & 1], col0 = tile column +
/// 2 (lane % 4). A tile holds whole heads (head_dim divides block_n and is
/// a multiple of 16), so chunk c's in-head column is 8c % head_dim + col0 %
/// 8, and both columns of every pair are in this thread's registers.
/// inv_freq(pair) = theta^(-2 pair / rotary_dim) splits into a per-thread
/// factor (of col0 % 8) and a constant per chunk. The angle depends on the
/// in-head column only, so each cos/sin is computed once and rotates that
/// column of every head of the tile (block_n / head_dim of them).
void attn_k_gemm_rope_epilogue(struct attn_k_gemm *e, MlirValue *acc,
                               MlirValue col0, const MlirValue rows[2]) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_gemm *g = e->g;
  attn_builder_role(b, "gemm.rope");
  double cexp = -2.0 * log2(g->theta) / (double)g->rotary_dim;
  MlirValue lr2 = attn_k_remc(b, col0, 8); // 2 * (lane % 4)
  // Pair index of the thread's first column: lr2 (rotate-half) or lr2 / 2.
  MlirValue tp = g->interleaved ? attn_k_divc(b, lr2, 2) : lr2;
  MlirValue x =
      attn_b_mulf(b, attn_k_uitofp(b, tp, b->t.f64), attn_b_f64(b, cexp));
  MlirValue ft = attn_k_call(b, "__nv_exp2", 1, &x, b->t.f64);
  MlirValue pos[2];
  for (int r = 0; r < 2; ++r)
    pos[r] = attn_k_uitofp(
        b, attn_k_addc(b, attn_k_remc(b, rows[r], g->seq_len), g->rope_offset),
        b->t.f64);
  // Each column's inv_freq is ft times a constant, a per-thread value that
  // LLVM would hoist out of the tile loop: rotary_dim / 8 f64 (32
  // registers at rotary_dim = 128) held through the wgmma K loop beside
  // the 128 accumulators, which made the projections of
  // test/Inputs/project/layer_gqa.mlir spill 40 bytes. Pinned, they are
  // computed here, one multiply each per tile.
  ft = attn_k_pin(b, ft, "d");
  int half = (int)(g->rotary_dim / 2);
  int heads = (int)(g->block_n / g->head_dim), hchunks = (int)(g->head_dim / 8);
  for (int hc8 = 0; hc8 < hchunks; ++hc8) {
    int hc = 8 * hc8;
    if (hc >= g->rotary_dim || (!g->interleaved && hc >= half))
      continue; // not rotated, or written with its partner chunk
    for (int h2 = 0; h2 < (g->interleaved ? 1 : 2); ++h2) {
      double pconst = g->interleaved ? hc / 2 : hc + h2;
      MlirValue f = attn_b_mulf(b, ft, attn_b_f64(b, exp2(cexp * pconst)));
      for (int r = 0; r < 2; ++r) {
        MlirValue cs, sn;
        sincos_reduced(b, attn_b_mulf(b, pos[r], f), &cs, &sn);
        for (int h = 0; h < heads; ++h) {
          int c = h * hchunks + hc8;
          int i1 = g->interleaved ? 4 * c : 4 * c + h2;
          int i2 = g->interleaved ? 4 * c + 1 : 4 * (c + half / 8) + h2;
          attn_k_rotate(b, acc[i1 + 2 * r], acc[i2 + 2 * r], cs, sn,
                        &acc[i1 + 2 * r], &acc[i2 + 2 * r]);
        }
      }
    }
  }
}
