//===- tile_lowering_scores.c - Score-tile ops to loops, for CPU and GPU --===//
//
// The loops of the ops that act on a score tile between the two products:
// tile.mask (padding keys, causal, window), tile.document_mask and
// tile.score_mod (scale, softcap, alibi, gate in the order given). One loop
// over the tile's elements each, written with the helpers of tile_lowering.c
// so that the CPU and GPU paths share them. Element (i, j) is query row
// row + i and key col + j of the sequence.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/tile/tile_dialect.h"

#include <math.h>
#include <stdio.h>

/// tile.mask (scores, row, col) {causal, kv_len, window}.
static void gen_mask(struct attn_tile_gen *g) {
  char t[160];
  bool causal = false;
  int64_t kv_len = 0, left = -1, right = -1;
  attn_attr_bool(g->op, "causal", &causal);
  attn_attr_i64(g->op, "kv_len", &kv_len);
  attn_tile_mask_get_window(g->op, &left, &right);
  attn_gen_type(g, 0, t, sizeof t);
  attn_gen_index(g, "kvlen", kv_len);
  if (left >= 0)
    attn_gen_index(g, "wleft", left);
  if (right >= 0)
    attn_gen_index(g, "wright", right);
  attn_gen_f32(g, "ninf", -INFINITY);
  attn_gen_open_loop(g, "e", g->dims[0][0] * g->dims[0][1]);
  attn_gen_split_index(g, g->dims[0][1]);
  attn_strbuf_printf(g->b,
                     "  %%qi = arith.addi %%a1, %%i : index\n"
                     "  %%kj = arith.addi %%a2, %%j : index\n"
                     "  %%bad0 = arith.cmpi uge, %%kj, %%kvlen : index\n");
  const char *bad = "%bad0";
  if (causal) {
    attn_strbuf_printf(g->b,
                       "  %%fut = arith.cmpi ugt, %%kj, %%qi : index\n"
                       "  %%bad1 = arith.ori %s, %%fut : i1\n",
                       bad);
    bad = "%bad1";
  }
  if (left >= 0) {
    // j < i - left, without going below zero: j + left < i.
    attn_strbuf_printf(g->b,
                       "  %%kl = arith.addi %%kj, %%wleft : index\n"
                       "  %%past = arith.cmpi ult, %%kl, %%qi : index\n"
                       "  %%bad2 = arith.ori %s, %%past : i1\n",
                       bad);
    bad = "%bad2";
  }
  if (right >= 0) {
    attn_strbuf_printf(g->b,
                       "  %%qr = arith.addi %%qi, %%wright : index\n"
                       "  %%ahead = arith.cmpi ugt, %%kj, %%qr : index\n"
                       "  %%bad3 = arith.ori %s, %%ahead : i1\n",
                       bad);
    bad = "%bad3";
  }
  attn_strbuf_printf(g->b,
                     "  %%x = memref.load %%a0[%%i, %%j] : %s\n"
                     "  %%y = arith.select %s, %%ninf, %%x : f32\n"
                     "  memref.store %%y, %%a0[%%i, %%j] : %s\n",
                     t, bad, t);
  attn_gen_close_loop(g);
}

/// tile.document_mask (scores, batch, row, col, q_segments, k_segments).
static void gen_document_mask(struct attn_tile_gen *g) {
  char t[160], tq[160], tk[160];
  attn_gen_type(g, 0, t, sizeof t);
  attn_gen_type(g, 4, tq, sizeof tq);
  attn_gen_type(g, 5, tk, sizeof tk);
  attn_gen_index(g, "qlast", g->dims[4][1] - 1);
  attn_gen_index(g, "klast", g->dims[5][1] - 1);
  attn_gen_f32(g, "ninf", -INFINITY);
  attn_gen_open_loop(g, "e", g->dims[0][0] * g->dims[0][1]);
  attn_gen_split_index(g, g->dims[0][1]);
  // Rows and keys past the sequence are clamped: their scores are padding
  // (never stored) or masked by tile.mask's kv_len.
  attn_strbuf_printf(g->b,
                     "  %%qi0 = arith.addi %%a2, %%i : index\n"
                     "  %%kj0 = arith.addi %%a3, %%j : index\n"
                     "  %%qi = arith.minui %%qi0, %%qlast : index\n"
                     "  %%kj = arith.minui %%kj0, %%klast : index\n"
                     "  %%qs = memref.load %%a4[%%a1, %%qi] : %s\n"
                     "  %%ks = memref.load %%a5[%%a1, %%kj] : %s\n"
                     "  %%other = arith.cmpi ne, %%qs, %%ks : i32\n"
                     "  %%x = memref.load %%a0[%%i, %%j] : %s\n"
                     "  %%y = arith.select %%other, %%ninf, %%x : f32\n"
                     "  memref.store %%y, %%a0[%%i, %%j] : %s\n",
                     tq, tk, t, t);
  attn_gen_close_loop(g);
}

/// Constants a modifier needs before the loop.
static void gen_mod_constants(struct attn_tile_gen *g, int mod,
                              const struct attn_tile_score_mods *m) {
  switch (mod) {
  case ATTN_MOD_SCALE:
    attn_gen_f32(g, "scale", (float)m->scale);
    break;
  case ATTN_MOD_SOFTCAP:
    attn_gen_f32(g, "cap", (float)m->softcap);
    attn_gen_f32(g, "invcap", (float)(1.0 / m->softcap));
    attn_gen_f32(g, "one", 1.0f);
    attn_gen_f32(g, "mtwo", -2.0f);
    break;
  case ATTN_MOD_ALIBI:
    // m_h = 2^(-max_bias * (h + 1) / heads), once per tile.
    attn_gen_f32(g, "acoef", (float)(-m->alibi / (double)m->heads));
    attn_strbuf_printf(g->b, "  %%h1 = arith.addi %%a2, %%c1h : index\n"
                             "  %%h64 = arith.index_cast %%h1 : index to i64\n"
                             "  %%hf = arith.uitofp %%h64 : i64 to f32\n"
                             "  %%aex = arith.mulf %%hf, %%acoef : f32\n"
                             "  %%slope = math.exp2 %%aex : f32\n");
    break;
  case ATTN_MOD_GATE:
    attn_gen_index(g, "gblock", m->gate_block);
    attn_gen_index(g, "glastq", g->dims[5][2] - 1);
    attn_gen_index(g, "glastb", g->dims[5][3] - 1);
    break;
  }
}

/// %x<k+1> = modifier mod applied to %x<k>, inside the loop.
static void gen_mod_step(struct attn_tile_gen *g, int mod, int k) {
  char gt[160];
  switch (mod) {
  case ATTN_MOD_SCALE:
    attn_strbuf_printf(g->b, "  %%x%d = arith.mulf %%x%d, %%scale : f32\n",
                       k + 1, k);
    break;
  case ATTN_MOD_SOFTCAP:
    // tanh(t) = sign(t) (1 - e) / (1 + e), e = exp(-2 |t|): no overflow, and
    // the absolute error near 0 stays at f32 rounding.
    attn_strbuf_printf(g->b,
                       "  %%sc_t%d = arith.mulf %%x%d, %%invcap : f32\n"
                       "  %%sc_a%d = math.absf %%sc_t%d : f32\n"
                       "  %%sc_m%d = arith.mulf %%sc_a%d, %%mtwo : f32\n"
                       "  %%sc_e%d = math.exp %%sc_m%d : f32\n"
                       "  %%sc_n%d = arith.subf %%one, %%sc_e%d : f32\n"
                       "  %%sc_d%d = arith.addf %%one, %%sc_e%d : f32\n"
                       "  %%sc_r%d = arith.divf %%sc_n%d, %%sc_d%d : f32\n"
                       "  %%sc_h%d = math.copysign %%sc_r%d, %%sc_t%d : f32\n"
                       "  %%x%d = arith.mulf %%sc_h%d, %%cap : f32\n",
                       k, k, k, k, k, k, k, k, k, k, k, k, k, k, k, k, k, k,
                       k + 1, k);
    break;
  case ATTN_MOD_ALIBI:
    attn_strbuf_printf(g->b,
                       "  %%al_q%d = arith.index_cast %%qi : index to i64\n"
                       "  %%al_k%d = arith.index_cast %%kj : index to i64\n"
                       "  %%al_d%d = arith.subi %%al_q%d, %%al_k%d : i64\n"
                       "  %%al_f%d = arith.sitofp %%al_d%d : i64 to f32\n"
                       "  %%al_a%d = math.absf %%al_f%d : f32\n"
                       "  %%al_p%d = arith.mulf %%al_a%d, %%slope : f32\n"
                       "  %%x%d = arith.subf %%x%d, %%al_p%d : f32\n",
                       k, k, k, k, k, k, k, k, k, k, k, k + 1, k, k);
    break;
  case ATTN_MOD_GATE:
    // Indices are clamped; padding rows and keys are never used.
    attn_strbuf_printf(g->b,
                       "  %%gt_q%d = arith.minui %%qi, %%glastq : index\n"
                       "  %%gt_b%d = arith.divui %%kj, %%gblock : index\n"
                       "  %%gt_c%d = arith.minui %%gt_b%d, %%glastb : index\n"
                       "  %%gt_v%d = memref.load %%a5[%%a1, %%a2, %%gt_q%d, "
                       "%%gt_c%d] : %s\n"
                       "  %%x%d = arith.addf %%x%d, %%gt_v%d : f32\n",
                       k, k, k, k, k, k, k, attn_gen_type(g, 5, gt, sizeof gt),
                       k + 1, k, k);
    break;
  }
}

/// tile.score_mod (scores, batch, head, row, col, [gate]) {mods, ...}.
static void gen_score_mod(struct attn_tile_gen *g) {
  char t[160];
  struct attn_tile_score_mods m;
  attn_tile_score_mod_get(g->op, &m);
  attn_gen_type(g, 0, t, sizeof t);
  attn_gen_index(g, "c1h", 1);
  for (int k = 0; k < m.n; ++k)
    gen_mod_constants(g, m.mods[k], &m);
  attn_gen_open_loop(g, "e", g->dims[0][0] * g->dims[0][1]);
  attn_gen_split_index(g, g->dims[0][1]);
  attn_strbuf_printf(g->b,
                     "  %%qi = arith.addi %%a3, %%i : index\n"
                     "  %%kj = arith.addi %%a4, %%j : index\n"
                     "  %%x0 = memref.load %%a0[%%i, %%j] : %s\n",
                     t);
  for (int k = 0; k < m.n; ++k)
    gen_mod_step(g, m.mods[k], k);
  attn_strbuf_printf(g->b, "  memref.store %%x%d, %%a0[%%i, %%j] : %s\n", m.n,
                     t);
  attn_gen_close_loop(g);
}

bool attn_gen_score_ops(struct attn_tile_gen *g) {
  if (attn_op_is(g->op, ATTN_OP_TILE_MASK))
    gen_mask(g);
  else if (attn_op_is(g->op, ATTN_OP_TILE_DOCUMENT_MASK))
    gen_document_mask(g);
  else if (attn_op_is(g->op, ATTN_OP_TILE_SCORE_MOD))
    gen_score_mod(g);
  else
    return false;
  return true;
}
