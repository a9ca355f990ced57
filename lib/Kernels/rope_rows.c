//===- rope_rows.c - RoPE of a swizzled shared-memory tile, built ---------===//
//
// The rotary embedding the Hopper attention kernel applies in shared memory:
// rows of a tile with the 128-byte swizzle (Q in the consumers or the
// producer's warps, K per tile in the fused placement, K blocks in the
// ahead team), each thread owning a slot of two pairs and stepping cos/sin
// down its rows by a rotation per step (with explicit positions, each row's
// cos/sin from its own position instead); and Q pair by pair where the
// slots do not divide the consumers' threads. The same ops, in the same
// order, as lib/Transforms/hopper_rope.c wrote as text: its own rows rotate
// with fused multiply-adds (attn_k_rotate_fma), the pairs of Q without
// (attn_k_rotate).
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

/// Ops built under the role "rope"; the caller's location comes back after.
static MlirLocation enter_rope(struct attn_builder *b) {
  MlirLocation outer = b->loc;
  attn_builder_role(b, "rope");
  return outer;
}

static void leave_rope(struct attn_builder *b, MlirLocation outer) {
  b->loc = outer;
}

int attn_hopper_rope_slots(const struct attn_hopper_kernel *k) {
  return (int)(k->rotary_dim / 4);
}

void attn_k_rope_rows_setup(struct attn_builder *b,
                            const struct attn_hopper_kernel *k, MlirValue rt,
                            int nthreads, struct attn_k_rope_rows *r) {
  MlirLocation outer = enter_rope(b);
  int slots = attn_hopper_rope_slots(k);
  r->groups = nthreads / slots;
  MlirValue slot = attn_k_remc(b, rt, slots);
  r->g = attn_k_divc(b, rt, slots);
  MlirValue p0 = attn_k_mulc(b, slot, 2);
  MlirValue p1 = attn_k_addc(b, p0, 1);
  r->f0 = attn_k_rope_inv_freq(b, k, p0);
  r->f1 = attn_k_rope_inv_freq(b, k, p1);
  if (k->interleaved) {
    r->slot_c1 = attn_k_mulc(b, slot, 4);       // pair p0: (4s, 4s+1)
    r->slot_c2 = attn_k_addc(b, r->slot_c1, 2); // pair p1: (4s+2, 4s+3)
  } else {
    r->slot_c1 = attn_k_mulc(b, slot, 2); // x1 of p0, p1: (2s, 2s+1)
    r->slot_c2 = attn_k_addc(b, r->slot_c1, k->rotary_dim / 2);
  }
  r->sbase32 = (MlirValue){NULL};
  r->turns0 = r->turns1 = (MlirValue){NULL};
  r->turns32 = false;
  MlirValue gf = attn_b_f32(b, (float)r->groups);
  attn_k_sincos(b, attn_b_mulf(b, gf, r->f0), &r->step_c0, &r->step_s0);
  attn_k_sincos(b, attn_b_mulf(b, gf, r->f1), &r->step_c1, &r->step_s1);
  leave_rope(b, outer);
}

void attn_k_rope_rows_turns(struct attn_builder *b,
                            struct attn_k_rope_rows *r) {
  MlirLocation outer = enter_rope(b);
  MlirValue inv = attn_b_f64(b, 1.0 / ATTN_K_TWO_PI);
  MlirValue *f[2] = {&r->f0, &r->f1}, *tu[2] = {&r->turns0, &r->turns1};
  for (int i = 0; i < 2; ++i)
    *tu[i] = attn_b_mulf(b, attn_b_cast(b, "arith.extf", *f[i], b->t.f64), inv);
  leave_rope(b, outer);
}

/// The result (of type res) of inline PTX text over one operand x.
static MlirValue asm1(struct attn_builder *b, MlirType res, const char *cons,
                      const char *text, MlirValue x) {
  return attn_b_result(attn_k_asm(b, res, cons, text, 1, &x), 0);
}

/// attn_k_rope_turns_sincos for a frequency in turns per position given as
/// f32, in f32 only: the product pos * turns (pos below 2^24, exact in f32)
/// split into hi + lo (lo = fma(pos, turns, -hi), the product's rounding
/// error, exact), so the product's fraction of a turn is hi - rint(hi) + lo to
/// about 2^-24 turns. The turns themselves are an f32 rounding of the
/// frequency over 2 pi, so the angle is off by up to pos * turns * 2^-24
/// turns (at position 16K and frequency 1, about 1e-3 rad; pos * f0 in f32
/// is off by as much).
static void turns32_sincos(struct attn_builder *b, MlirValue pos,
                           MlirValue turns, MlirValue *c, MlirValue *s) {
  MlirValue x = attn_b_cast(b, "arith.sitofp", pos, b->t.f32);
  MlirValue hi = attn_b_mulf(b, x, turns);
  MlirValue lo = attn_b_fma(b, x, turns, attn_b_negf(b, hi));
  MlirValue r = asm1(b, b->t.f32, "=f,f", "cvt.rni.f32.f32 $0, $1;", hi);
  MlirValue f = attn_b_addf(b, attn_b_subf(b, hi, r), lo);
  attn_k_rope_mufu_sincos(b, f, c, s);
}

/// The fused rotation of two words wa and wb (i32) as
/// attn_k_rope_rotate_words describes: the four rotated halves, as f32 (word
/// a's low and high, then word b's).
static void rotate_pair_words(struct attn_builder *b,
                              const struct attn_hopper_kernel *k, MlirValue wa,
                              MlirValue wb, MlirValue c0, MlirValue s0,
                              MlirValue c1, MlirValue s1, MlirValue n[4]) {
  MlirValue alo, ahi, blo, bhi;
  attn_k_unpack2(b, k->bf16, wa, &alo, &ahi);
  attn_k_unpack2(b, k->bf16, wb, &blo, &bhi);
  if (k->interleaved) {
    attn_k_rotate_fma(b, alo, ahi, c0, s0, &n[0], &n[1]);
    attn_k_rotate_fma(b, blo, bhi, c1, s1, &n[2], &n[3]);
  } else {
    attn_k_rotate_fma(b, alo, blo, c0, s0, &n[0], &n[2]);
    attn_k_rotate_fma(b, ahi, bhi, c1, s1, &n[1], &n[3]);
  }
}

/// attn_k_rope_rotate_words with the multiply-adds fused: the words at the
/// shared pointers pa and pb.
static void rotate_words_fma(struct attn_builder *b,
                             const struct attn_hopper_kernel *k, MlirValue pa,
                             MlirValue pb, MlirValue c0, MlirValue s0,
                             MlirValue c1, MlirValue s1) {
  MlirValue wa = attn_k_load(b, pa, b->t.i32);
  MlirValue wb = attn_k_load(b, pb, b->t.i32);
  MlirValue n[4];
  rotate_pair_words(b, k, wa, wb, c0, s0, c1, s1, n);
  attn_k_store(b, attn_k_pack2(b, k->bf16, n[0], n[1]), pa);
  attn_k_store(b, attn_k_pack2(b, k->bf16, n[2], n[3]), pb);
}

/// rotate_words_fma with the words at i32 shared addresses aa and ab,
/// loaded and stored by inline PTX, which takes fewer registers.
static void rotate_words32(struct attn_builder *b,
                           const struct attn_hopper_kernel *k, MlirValue aa,
                           MlirValue ab, MlirValue c0, MlirValue s0,
                           MlirValue c1, MlirValue s1) {
  MlirValue wa = asm1(b, b->t.i32, "=r,r", "ld.shared.b32 $0, [$1];", aa);
  MlirValue wb = asm1(b, b->t.i32, "=r,r", "ld.shared.b32 $0, [$1];", ab);
  MlirValue n[4];
  rotate_pair_words(b, k, wa, wb, c0, s0, c1, s1, n);
  attn_k_asm_rr(b, "st.shared.b32 [$0], $1;", aa,
                attn_k_pack2(b, k->bf16, n[0], n[1]));
  attn_k_asm_rr(b, "st.shared.b32 [$0], $1;", ab,
                attn_k_pack2(b, k->bf16, n[2], n[3]));
}

/// cos/sin (c0, s0, c1, s1 into cs[0..3]) of the slot's two pairs at
/// position pos (i32): by r's turns, else by sincos of pos times r's
/// frequencies.
static void slot_sincos(struct attn_builder *b,
                        const struct attn_k_rope_rows *r, MlirValue pos_i,
                        MlirValue cs[4]) {
  if (!mlirValueIsNull(r->turns0)) {
    void (*sc)(struct attn_builder *, MlirValue, MlirValue, MlirValue *,
               MlirValue *) =
        r->turns32 ? turns32_sincos : attn_k_rope_turns_sincos;
    sc(b, pos_i, r->turns0, &cs[0], &cs[1]);
    sc(b, pos_i, r->turns1, &cs[2], &cs[3]);
  } else {
    // Signed: a causal kernel's first query block starts before row 0
    // (attn_hopper_query_shift), and its rows from 0 on step from there.
    MlirValue pos = attn_b_cast(b, "arith.sitofp", pos_i, b->t.f32);
    attn_k_sincos(b, attn_b_mulf(b, pos, r->f0), &cs[0], &cs[1]);
    attn_k_sincos(b, attn_b_mulf(b, pos, r->f1), &cs[2], &cs[3]);
  }
}

void attn_k_rope_rows(struct attn_builder *b,
                      const struct attn_hopper_kernel *k, MlirValue smem,
                      MlirValue tile_base, int tile_rows, MlirValue first,
                      int nrows, MlirValue pos_first,
                      const struct attn_k_rope_rows *r,
                      const struct attn_k_rope_pos *pp) {
  MlirLocation outer = enter_rope(b);
  bool explicit = pp && !mlirValueIsNull(pp->base);
  MlirValue init[4] = {{NULL}, {NULL}, {NULL}, {NULL}};
  if (!explicit)
    slot_sincos(b, r, attn_b_addi(b, pos_first, r->g), init);
  // An i32 loop: an index one counts in 64 bits (4 instructions a row
  // where this takes 2).
  MlirValue lo = attn_b_addi(b, first, r->g);
  MlirValue hi = attn_k_addc(b, first, nrows);
  MlirValue st = attn_b_i32(b, r->groups);
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, lo, hi, st, explicit ? 0 : 4, init);
  MlirValue row = loop.iv;
  MlirValue cs[4];
  const MlirValue *a = loop.args;
  if (explicit) {
    // The row's own position (pos_first is row first's sequence row).
    MlirValue seq_row = attn_b_addi(b, attn_b_subi(b, pos_first, first), row);
    slot_sincos(b, r, attn_k_rope_pos_at(b, pp, seq_row), cs);
    a = cs;
  }
  if (!mlirValueIsNull(r->sbase32)) {
    MlirValue aa = attn_b_addi(
        b, r->sbase32, attn_k_swz(b, tile_base, tile_rows, row, r->slot_c1));
    MlirValue ab = attn_b_addi(
        b, r->sbase32, attn_k_swz(b, tile_base, tile_rows, row, r->slot_c2));
    rotate_words32(b, k, aa, ab, a[0], a[1], a[2], a[3]);
  } else {
    MlirValue pa = attn_k_smem_ptr(
        b, smem, attn_k_swz(b, tile_base, tile_rows, row, r->slot_c1));
    MlirValue pb = attn_k_smem_ptr(
        b, smem, attn_k_swz(b, tile_base, tile_rows, row, r->slot_c2));
    rotate_words_fma(b, k, pa, pb, a[0], a[1], a[2], a[3]);
  }
  if (explicit) {
    attn_b_for_close(b, &loop, 0, NULL);
    leave_rope(b, outer);
    return;
  }
  // cos/sin one step down, by the step's rotation (fused).
  MlirValue next[4];
  attn_k_rotate_fma(b, a[0], a[1], r->step_c0, r->step_s0, &next[0], &next[1]);
  attn_k_rotate_fma(b, a[2], a[3], r->step_c1, r->step_s1, &next[2], &next[3]);
  attn_b_for_close(b, &loop, 4, next);
  leave_rope(b, outer);
}

void attn_k_rope_q_pairs(struct attn_builder *b,
                         const struct attn_hopper_kernel *k, MlirValue smem,
                         MlirValue wt, MlirValue q_row, MlirValue cw,
                         const struct attn_k_rope_pos *pp) {
  MlirLocation outer = enter_rope(b);
  int pairs = (int)(k->rotary_dim / 2);
  MlirValue lo = attn_k_to_index(b, wt);
  MlirValue hi = attn_b_index(b, 64LL * pairs);
  MlirValue st = attn_b_index(b, 128);
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, lo, hi, st, 0, NULL);
  MlirValue item = attn_k_from_index(b, loop.iv);
  MlirValue row = attn_k_divc(b, item, pairs);
  MlirValue pair = attn_k_remc(b, item, pairs);
  MlirValue c1, c2;
  attn_k_rope_pair_cols(b, k, pair, &c1, &c2);
  MlirValue tile_row = attn_b_addi(b, attn_k_mulc(b, cw, 64), row);
  MlirValue pos =
      pp && !mlirValueIsNull(pp->base)
          ? attn_k_rope_pos_at(b, pp, attn_b_addi(b, q_row, tile_row))
          : attn_b_addi(b, attn_k_addc(b, q_row, k->rope_offset), tile_row);
  MlirValue freq = attn_k_rope_inv_freq(b, k, pair);
  MlirValue angle =
      attn_b_mulf(b, attn_b_cast(b, "arith.sitofp", pos, b->t.f32), freq);
  MlirValue cs, sn;
  attn_k_sincos(b, angle, &cs, &sn);
  MlirValue a1 = attn_k_smem_ptr(
      b, smem, attn_k_swz(b, attn_b_i32(b, 0), k->block_m, tile_row, c1));
  MlirValue a2 = attn_k_smem_ptr(
      b, smem, attn_k_swz(b, attn_b_i32(b, 0), k->block_m, tile_row, c2));
  MlirValue x1 = attn_k_to_f32_16(b, k->bf16, attn_k_load(b, a1, b->t.i16));
  MlirValue x2 = attn_k_to_f32_16(b, k->bf16, attn_k_load(b, a2, b->t.i16));
  MlirValue y1, y2;
  attn_k_rotate(b, x1, x2, cs, sn, &y1, &y2);
  attn_k_store(b, attn_k_from_f32_16(b, k->bf16, y1), a1);
  attn_k_store(b, attn_k_from_f32_16(b, k->bf16, y2), a2);
  attn_b_for_close(b, &loop, 0, NULL);
  attn_k_fence_proxy_async(b, false);
  leave_rope(b, outer);
}
