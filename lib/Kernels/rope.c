//===- rope.c - The RoPE role's math, built -------------------------------===//
//
// The rotary embedding's pieces that a kernel applies to a tile in shared
// memory: a pair's inverse frequency and columns, the rotation of two
// 32-bit words (two pairs' halves each), and the step of a cos/sin
// recurrence down the rows. The same ops, in the same order, as
// lib/Transforms/hopper_rope.c's text interface that the mma.sync kernel
// used (rotations without fused multiply-adds). And explicit positions
// (packed sequences): a row's position loaded from the positions tensor,
// and its cos/sin from a frequency in turns by the MUFU.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include <math.h>

MlirValue attn_k_rope_inv_freq(struct attn_builder *b,
                               const struct attn_hopper_kernel *k,
                               MlirValue pair) {
  MlirValue pf = attn_k_uitofp(b, pair, b->t.f64);
  MlirValue c = attn_b_f64(b, -2.0 * log2(k->theta) / (double)k->rotary_dim);
  MlirValue x = attn_b_mulf(b, pf, c);
  MlirValue y = attn_k_call(b, "__nv_exp2", 1, &x, b->t.f64);
  return attn_k_truncf(b, y, b->t.f32);
}

void attn_k_rope_pair_cols(struct attn_builder *b,
                           const struct attn_hopper_kernel *k, MlirValue pair,
                           MlirValue *c1, MlirValue *c2) {
  if (k->interleaved) {
    *c1 = attn_k_mulc(b, pair, 2);
    *c2 = attn_k_addc(b, *c1, 1);
  } else {
    *c1 = pair;
    *c2 = attn_k_addc(b, pair, k->rotary_dim / 2);
  }
}

void attn_k_rope_rotate_words(struct attn_builder *b,
                              const struct attn_hopper_kernel *k, MlirValue pa,
                              MlirValue pb, MlirValue c0, MlirValue s0,
                              MlirValue c1, MlirValue s1) {
  MlirValue wa = attn_k_load(b, pa, b->t.i32);
  MlirValue wb = attn_k_load(b, pb, b->t.i32);
  MlirValue n[4], alo, ahi, blo, bhi;
  attn_k_unpack2(b, k->bf16, wa, &alo, &ahi);
  attn_k_unpack2(b, k->bf16, wb, &blo, &bhi);
  if (k->interleaved) {
    attn_k_rotate(b, alo, ahi, c0, s0, &n[0], &n[1]);
    attn_k_rotate(b, blo, bhi, c1, s1, &n[2], &n[3]);
  } else {
    attn_k_rotate(b, alo, blo, c0, s0, &n[0], &n[2]);
    attn_k_rotate(b, ahi, bhi, c1, s1, &n[1], &n[3]);
  }
  attn_k_store(b, attn_k_pack2(b, k->bf16, n[0], n[1]), pa);
  attn_k_store(b, attn_k_pack2(b, k->bf16, n[2], n[3]), pb);
}

void attn_k_rope_step_rows(struct attn_builder *b, MlirValue c0, MlirValue s0,
                           MlirValue c1, MlirValue s1, MlirValue sc0,
                           MlirValue ss0, MlirValue sc1, MlirValue ss1,
                           MlirValue next[4]) {
  attn_k_rotate(b, c0, s0, sc0, ss0, &next[0], &next[1]);
  attn_k_rotate(b, c1, s1, sc1, ss1, &next[2], &next[3]);
}

MlirValue attn_k_rope_pos_base(struct attn_builder *b, MlirValue positions,
                               MlirValue bz, int64_t len) {
  MlirValue off = attn_k_i64_of(b, attn_k_mulc(b, bz, len));
  return attn_k_gep_elem(b, positions, off, b->t.i32);
}

MlirValue attn_k_rope_pos_at(struct attn_builder *b,
                             const struct attn_k_rope_pos *pp, MlirValue row) {
  MlirValue lo = attn_b_binary(b, "arith.maxsi", row, attn_b_i32(b, 0));
  MlirValue at = attn_b_minui(b, lo, attn_b_i32(b, pp->len - 1));
  MlirValue p = attn_k_gep_elem(b, pp->base, attn_k_i64_of(b, at), b->t.i32);
  return attn_k_load(b, p, b->t.i32);
}

/// The result (of type res) of inline PTX text over one operand x.
static MlirValue asm1(struct attn_builder *b, MlirType res, const char *cons,
                      const char *text, MlirValue x) {
  return attn_b_result(attn_k_asm(b, res, cons, text, 1, &x), 0);
}

void attn_k_rope_mufu_sincos(struct attn_builder *b, MlirValue frac,
                             MlirValue *c, MlirValue *s) {
  MlirValue two_pi = attn_b_f32(b, (float)ATTN_K_TWO_PI);
  MlirValue a = attn_b_mulf(b, frac, two_pi);
  *c = asm1(b, b->t.f32, "=f,f", "cos.approx.f32 $0, $1;", a);
  *s = asm1(b, b->t.f32, "=f,f", "sin.approx.f32 $0, $1;", a);
}

void attn_k_rope_turns_sincos(struct attn_builder *b, MlirValue pos,
                              MlirValue turns, MlirValue *c, MlirValue *s) {
  MlirValue t =
      attn_b_mulf(b, attn_b_cast(b, "arith.sitofp", pos, b->t.f64), turns);
  MlirValue rt = asm1(b, b->t.f64, "=d,d", "cvt.rni.f64.f64 $0, $1;", t);
  MlirValue f = attn_b_subf(b, t, rt);
  attn_k_rope_mufu_sincos(b, attn_k_truncf(b, f, b->t.f32), c, s);
}

MlirValue attn_k_rope_turns(struct attn_builder *b, MlirValue f) {
  MlirValue inv = attn_b_f64(b, 1.0 / ATTN_K_TWO_PI);
  return attn_b_mulf(b, attn_b_cast(b, "arith.extf", f, b->t.f64), inv);
}
