//===- hopper_gemm_rope.c - RoPE in the epilogue of the Hopper GEMM -------===//
//
// The Rotation Calculus's `producer` placement: a q or k projection (a GEMM
// whose tile holds whole heads) rotates its accumulators before the one
// rounding to 16 bits, so attention reads rotated inputs and nobody else
// rotates them. The angles are computed in f64 and reduced to [-pi, pi]
// before the f32 cos/sin approximations; each cos/sin serves every head of
// the tile.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/hopper_gemm.h"
#include "lib/Transforms/hopper_ptx.h"

#include <math.h>

/// cos and sin of an f64 angle: reduced to [-pi, pi] in f64 (exact enough
/// for angles up to 2^24 rad), then the f32 approximations (absolute error
/// below 1e-6, far under a 16-bit output's rounding).
static void sincos_reduced(struct attn_gemm_em *e, int angle, int *c, int *s) {
  const char *t[] = {"f64"};
  int turns = attn_ptx_op(
      e->p, "arith.mulf %%v%d, %%v%d : f64", angle,
      attn_ptx_op(e->p, "arith.constant %.17e : f64", 1.0 / ATTN_PTX_TWO_PI));
  int k = attn_ptx_asmv(e->p, "f64", "=d,d", "cvt.rni.f64.f64 $0, $1;", 1,
                        &turns, t);
  int r = attn_ptx_op(
      e->p, "arith.subf %%v%d, %%v%d : f64", angle,
      attn_ptx_op(e->p, "arith.mulf %%v%d, %%v%d : f64", k,
                  attn_ptx_op(e->p, "arith.constant %.17e : f64", ATTN_PTX_TWO_PI)));
  int rf = attn_ptx_op(e->p, "arith.truncf %%v%d : f64 to f32", r);
  const char *tf[] = {"f32"};
  *c = attn_ptx_asmv(e->p, "f32", "=f,f", "cos.approx.ftz.f32 $0, $1;", 1,
                     &rf, tf);
  *s = attn_ptx_asmv(e->p, "f32", "=f,f", "sin.approx.ftz.f32 $0, $1;", 1,
                     &rf, tf);
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
void attn_gemm_rope_epilogue(struct attn_gemm_em *e, int *acc, int col0,
                             const int rows[2]) {
  const struct attn_hopper_gemm *g = e->g;
  double cexp = -2.0 * log2(g->theta) / (double)g->rotary_dim;
  int lr2 = attn_ptx_remc(e->p, col0, 8); // 2 * (lane % 4)
  // Pair index of the thread's first column: lr2 (rotate-half) or lr2 / 2.
  int tp = g->interleaved ? attn_ptx_divc(e->p, lr2, 2) : lr2;
  int ft = attn_ptx_op(
      e->p, "llvm.call @__nv_exp2(%%v%d) : (f64) -> f64",
      attn_ptx_op(e->p, "arith.mulf %%v%d, %%v%d : f64",
                  attn_ptx_op(e->p, "arith.uitofp %%v%d : i32 to f64", tp),
                  attn_ptx_op(e->p, "arith.constant %.17e : f64", cexp)));
  int pos[2];
  for (int r = 0; r < 2; ++r)
    pos[r] = attn_ptx_op(
        e->p, "arith.uitofp %%v%d : i32 to f64",
        attn_ptx_addc(e->p, attn_ptx_remc(e->p, rows[r], g->seq_len),
                      g->rope_offset));
  // Each column's inv_freq is ft times a constant, a per-thread value that
  // LLVM would hoist out of the tile loop: rotary_dim / 8 f64 (32
  // registers at rotary_dim = 128) held through the wgmma K loop beside
  // the 128 accumulators, which made the projections of
  // test/Inputs/project/layer_gqa.mlir spill 40 bytes. Pinned, they are
  // computed here, one multiply each per tile.
  ft = attn_ptx_pin(e->p, ft, "f64", "d");
  int half = (int)(g->rotary_dim / 2);
  int heads = (int)(g->block_n / g->head_dim), hchunks = (int)(g->head_dim / 8);
  for (int hc8 = 0; hc8 < hchunks; ++hc8) {
    int hc = 8 * hc8;
    if (hc >= g->rotary_dim || (!g->interleaved && hc >= half))
      continue; // not rotated, or written with its partner chunk
    for (int b = 0; b < (g->interleaved ? 1 : 2); ++b) {
      double pconst = g->interleaved ? hc / 2 : hc + b;
      int f = attn_ptx_op(
          e->p, "arith.mulf %%v%d, %%v%d : f64", ft,
          attn_ptx_op(e->p, "arith.constant %.17e : f64",
                      exp2(cexp * pconst)));
      for (int r = 0; r < 2; ++r) {
        int cs, sn;
        sincos_reduced(
            e, attn_ptx_op(e->p, "arith.mulf %%v%d, %%v%d : f64", pos[r], f),
            &cs, &sn);
        for (int h = 0; h < heads; ++h) {
          int c = h * hchunks + hc8;
          int i1 = g->interleaved ? 4 * c : 4 * c + b;
          int i2 = g->interleaved ? 4 * c + 1 : 4 * (c + half / 8) + b;
          attn_ptx_rotate(e->p, acc[i1 + 2 * r], acc[i2 + 2 * r], cs, sn,
                          &acc[i1 + 2 * r], &acc[i2 + 2 * r]);
        }
      }
    }
  }
}
