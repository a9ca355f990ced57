//===- decode_common.c - The decode kernel's rows, q, keys and scores -----===//
//
// What the decode kernel's files (decode_lanes.c, decode_mma.c,
// decode_append.c, decode.c) take from here: a row of the CTA's group (its query head and row, its
// position len - Nq + i, the keys [lo, hi) it sees, ALiBi's slope), q's 8
// columns from any column, rotated at the row's position (RoPE's angles as
// fractions of a turn in f64, sin and cos by the MUFU), a key's row in a
// contiguous or paged cache (an entry out of [0, P) reads page 0, as the
// CPU path), and a score's modifiers in order and masks; the kernels'
// parameters (the caches', their attributes) and manifest dictionary.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/decode_common.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int64_t attn_decode_group_rows(const struct attn_decode_kernel *k) {
  return k->heads / k->kv_heads * k->seq_q;
}

int64_t attn_decode_row_groups(const struct attn_decode_kernel *k) {
  int64_t r = attn_decode_group_rows(k);
  return (r + k->rows_per_cta - 1) / k->rows_per_cta;
}

/// The 16 bytes at element offset off (i64) of the 16-bit tensor p, as 8
/// f32 values.
void dk_load4w(struct dec *e, MlirValue p, MlirValue off, MlirValue w[4]) {
  struct attn_builder *b = e->b;
  MlirValue v = attn_k_gemm_load_vec(b, attn_k_gep_elem(b, p, off, elem16(e)),
                                     4, b->t.i32, 16);
  for (int x = 0; x < 4; ++x) {
    MlirValue opd[2] = {v, attn_b_i32(b, x)};
    w[x] = attn_b_op1(b, "llvm.extractelement", b->t.i32, 2, opd, 0, NULL);
  }
}

void dk_load8(struct dec *e, MlirValue p, MlirValue off, MlirValue out[8]) {
  // Each word unpacked as it is extracted (the order the measured kernels'
  // PTX has).
  struct attn_builder *b = e->b;
  MlirValue v = attn_k_gemm_load_vec(b, attn_k_gep_elem(b, p, off, elem16(e)),
                                     4, b->t.i32, 16);
  for (int w = 0; w < 4; ++w) {
    MlirValue opd[2] = {v, attn_b_i32(b, w)};
    MlirValue x = attn_b_op1(b, "llvm.extractelement", b->t.i32, 2, opd, 0,
                             NULL);
    attn_k_unpack2(b, e->k->bf16, x, &out[2 * w], &out[2 * w + 1]);
  }
}

struct attn_k_param dk_cache_param(const struct attn_decode_kernel *k,
                                   const char *name) {
  const char *ty = k->bf16 ? "bf16" : "f16";
  if (!strcmp(name, "cache_seqlens"))
    return (struct attn_k_param){.name = name, .dtype = "i32", .align = 4,
                                 .rank = 1, .shape = {k->batch}};
  if (!strcmp(name, "block_table"))
    return (struct attn_k_param){.name = name, .dtype = "i32", .align = 4,
                                 .rank = 2, .shape = {k->batch, k->max_pages}};
  return (struct attn_k_param){
      .name = name, .dtype = ty, .align = 16,
      .shape = {k->paged ? k->num_pages : k->batch, k->kv_heads,
                k->paged ? k->page_size : k->max_seq, k->head_dim}};
}

/// tanh.approx.f32: llvm.intr.tanh with afn (as score_fn.c's softcap).
static MlirValue tanh_approx(struct attn_builder *b, MlirValue x) {
  MlirAttribute afn = mlirAttributeParseGet(
      b->ctx, mlirStringRefCreateFromCString("#llvm.fastmath<afn>"));
  MlirNamedAttribute fm = attn_b_named(b, "fastmathFlags", afn);
  return attn_b_op1(b, "llvm.intr.tanh", b->t.f32, 1, &x, 1, &fm);
}

MlirValue dk_key_row(struct dec *e, MlirValue j, MlirValue *valid) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  MlirValue rowi;
  if (valid)
    *valid = (MlirValue){NULL};
  if (!k->paged) {
    rowi = i64v(e, attn_b_addi(
                       b,
                       attn_b_muli(b, attn_b_addi(b, attn_b_muli(b, e->bi, c32(e, k->kv_heads)), e->g),
                                   c32(e, k->max_seq)),
                       j));
  } else {
    MlirValue ent = attn_b_addi(b, attn_b_muli(b, e->bi, c32(e, k->max_pages)),
                                attn_k_divc(b, j, k->page_size));
    MlirValue page = attn_k_load(
        b, attn_k_gep_elem(b, e->table, i64v(e, ent), b->t.i32), b->t.i32);
    MlirValue ok = attn_b_andi(b, attn_b_cmpi(b, ATTN_B_SGE, page, c32(e, 0)),
                               attn_b_cmpi(b, ATTN_B_SLT, page, c32(e, k->num_pages)));
    if (valid)
      *valid = ok;
    page = attn_b_select(b, ok, page, c32(e, 0));
    rowi = attn_b_addi(
        b,
        attn_b_muli(b, i64v(e, attn_b_addi(b, attn_b_muli(b, page, c32(e, k->kv_heads)), e->g)),
                    attn_b_i64(b, k->page_size)),
        i64v(e, attn_k_remc(b, j, k->page_size)));
  }
  return attn_b_muli(b, rowi, attn_b_i64(b, k->head_dim));
}

/// RoPE frequencies in turns per position (f64) of the 8 columns from col
/// (i32) on (both columns of an interleaved pair share one): theta^(-2 t /
/// r) / 2 pi for pair t, one libdevice exp2 for the first pair and
/// compile-time factors for the others. The same for every row.
static void build_turns(struct dec *e, const struct dk_rope *k, MlirValue col,
                        MlirValue turns[8]) {
  struct attn_builder *b = e->b;
  attn_builder_role(b, "decode.rope");
  int64_t half = k->rotary_dim / 2;
  MlirValue t0 =
      k->interleaved
          ? attn_k_divc(b, col, 2)
          : attn_b_select(b, attn_k_cmpc(b, ATTN_B_ULT, col, half), col,
                          attn_k_addc(b, col, -half));
  double step = -2.0 * log2(k->theta) / (double)k->rotary_dim;
  MlirValue arg =
      attn_b_mulf(b, attn_b_cast(b, "arith.uitofp", t0, b->t.f64),
                  attn_b_f64(b, step));
  MlirValue inv = attn_k_call(b, "__nv_exp2", 1, &arg, b->t.f64);
  for (int c = 0; c < 8; ++c) {
    int dt = k->interleaved ? c / 2 : c;
    turns[c] = attn_b_mulf(b, inv, attn_b_f64(b, exp2(step * dt) / ATTN_K_TWO_PI));
  }
}

/// Row gr (i32) of the K/V head's group: which query head and row it is,
/// its position and key bounds, ALiBi's slope.
struct drow dk_row_info(struct dec *e, MlirValue gr) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  int64_t group = k->heads / k->kv_heads, grows = attn_decode_group_rows(k);
  struct drow w;
  w.ok = attn_k_cmpc(b, ATTN_B_ULT, gr, grows);
  gr = attn_b_select(b, w.ok, gr, c32(e, 0));
  MlirValue hq = attn_k_divc(b, gr, k->seq_q);
  w.i = attn_k_remc(b, gr, k->seq_q);
  w.h = attn_b_addi(b, attn_k_mulc(b, e->g, group), hq);
  w.pos = attn_b_addi(b, attn_k_addc(b, e->len, -k->seq_q), w.i);
  w.lo = c32(e, 0);
  w.hi = k->causal ? smin(e, e->len, attn_k_addc(b, w.pos, 1)) : e->len;
  if (k->has_window && k->window_left >= 0)
    w.lo = smax(e, w.lo, attn_k_addc(b, w.pos, -k->window_left));
  if (k->has_window && k->window_right >= 0)
    w.hi = smin(e, w.hi, attn_k_addc(b, w.pos, k->window_right + 1));
  w.slope = (MlirValue){NULL};
  for (int m = 0; m < k->nmods; ++m)
    if (k->mods[m] == ATTN_DECODE_ALIBI) {
      MlirValue h1 = attn_k_uitofp(b, attn_k_addc(b, w.h, 1), b->t.f32);
      w.slope = attn_k_ex2(
          b, attn_b_mulf(b, h1, f32c(e, -k->alibi_max_bias / (double)k->heads)));
    }
  return w;
}

/// q[b, w's head, w's row, col ..]: 8 columns from col (i32), rotated at
/// w's position where RoPE applies.
void dk_load_q8(struct dec *e, const struct drow *w, MlirValue col,
                MlirValue y[8]) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  MlirValue qrow = attn_b_addi(
      b, attn_b_muli(b, attn_b_addi(b, attn_k_mulc(b, e->bi, k->heads), w->h),
                     c32(e, k->seq_q)),
      w->i);
  MlirValue qbase = attn_b_muli(b, i64v(e, qrow), attn_b_i64(b, k->head_dim));
  struct dk_rope r = {.on = k->rope, .interleaved = k->interleaved,
                      .theta = k->theta, .rotary_dim = k->rotary_dim};
  dk_load_rot8(e, e->q, qbase, col, w->pos, &r, y);
}

void dk_load_rot8(struct dec *e, MlirValue p, MlirValue base, MlirValue col,
                  MlirValue pos, const struct dk_rope *k, MlirValue y[8]) {
  struct attn_builder *b = e->b;
  MlirValue x[8];
  dk_load8(e, p, attn_b_addi(b, base, i64v(e, col)), x);
  if (!k->on) {
    memcpy(y, x, sizeof x);
    return;
  }
  attn_builder_role(b, "decode.rope");
  MlirValue turns[8];
  build_turns(e, k, col, turns);
  int64_t half = k->rotary_dim / 2;
  // The partner columns: col +- half (rotate-half), the lane's own
  // (interleaved); columns past rotary_dim stay as they are.
  MlirValue pc = col;
  MlirValue first = attn_k_cmpc(b, ATTN_B_ULT, col, half);
  if (!k->interleaved)
    pc = attn_b_select(b, first, attn_k_addc(b, col, half),
                       attn_k_addc(b, col, -half));
  MlirValue rot = attn_k_cmpc(b, ATTN_B_ULT, col, k->rotary_dim);
  pc = attn_b_select(b, rot, pc, col);
  MlirValue part[8];
  if (!k->interleaved)
    dk_load8(e, p, attn_b_addi(b, base, i64v(e, pc)), part);
  MlirValue cs = {NULL}, sn = {NULL};
  for (int c = 0; c < 8; ++c) {
    // The pair's angle, shared by both columns of an interleaved pair.
    if (!k->interleaved || !(c & 1))
      attn_k_rope_turns_sincos(b, pos, turns[c], &cs, &sn);
    MlirValue pv, sgn; // x1 c - x2 s for the first of a pair, x2 c + x1 s
    if (k->interleaved) {
      pv = x[c ^ 1];
      sgn = f32c(e, (c & 1) ? 1.0 : -1.0);
    } else {
      pv = part[c];
      sgn = attn_b_select(b, first, f32c(e, -1.0), f32c(e, 1.0));
    }
    MlirValue v = attn_b_fma(b, attn_b_mulf(b, pv, sgn), sn, attn_b_mulf(b, x[c], cs));
    y[c] = attn_b_select(b, rot, v, x[c]);
  }
}

/// The score of row w for key j (i32) from its dot product: the modifiers
/// not folded into q, in order, then log2 e; -inf where masked.
MlirValue dk_score(struct dec *e, const struct drow *w, MlirValue dot,
                       MlirValue j, MlirValue in_split) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  MlirValue s = dot;
  bool plain = k->nmods == 0 || (k->nmods == 1 && k->mods[0] == ATTN_DECODE_SCALE);
  if (plain && !e->folded) {
    s = attn_b_mulf(b, s, f32c(e, k->scale * 1.4426950408889634));
  } else if (!plain) {
    for (int m = e->folded ? 1 : 0; m < k->nmods; ++m) {
      if (k->mods[m] == ATTN_DECODE_SCALE)
        s = attn_b_mulf(b, s, f32c(e, k->scale));
      else if (k->mods[m] == ATTN_DECODE_SOFTCAP)
        s = attn_b_mulf(b, tanh_approx(b, attn_b_mulf(b, s, f32c(e, 1.0 / k->softcap))),
                        f32c(e, k->softcap));
      else {
        MlirValue dist = attn_b_cast(b, "arith.sitofp",
                                     attn_b_subi(b, w->pos, j), b->t.f32);
        dist = attn_b_unary(b, "math.absf", dist);
        s = attn_b_subf(b, s, attn_b_mulf(b, w->slope, dist));
      }
    }
    s = attn_b_mulf(b, s, f32c(e, 1.4426950408889634));
  }
  MlirValue vis = attn_b_andi(
      b, attn_b_andi(b, in_split, w->ok),
      attn_b_andi(b, attn_b_cmpi(b, ATTN_B_SGE, j, w->lo),
                  attn_b_cmpi(b, ATTN_B_SLT, j, w->hi)));
  return attn_b_select(b, vis, s, e->ninf);
}

MlirAttribute dk_param_attrs(struct attn_builder *b, const char *access) {
  MlirNamedAttribute a[] = {
      attn_b_named(b, "llvm.noalias", attn_b_attr_unit(b)),
      attn_b_named(b, access, attn_b_attr_unit(b)),
  };
  return mlirDictionaryAttrGet(b->ctx, 2, a);
}

MlirAttribute dk_decode_info(struct attn_builder *b,
                             const struct attn_decode_kernel *k) {
  MlirNamedAttribute a[] = {
      attn_b_named(b, "splits", attn_b_attr_i64(b, k->splits)),
      attn_b_named(b, "rows_per_cta", attn_b_attr_i64(b, k->rows_per_cta)),
      attn_b_named(b, "body", attn_b_attr_str(b, k->mma ? "mma" : "lanes")),
      attn_b_named(b, "paged", attn_b_attr_bool(b, k->paged)),
      attn_b_named(b, "page_size", attn_b_attr_i64(b, k->page_size)),
      attn_b_named(b, "causal", attn_b_attr_bool(b, k->causal)),
      attn_b_named(b, "scale", attn_b_attr_f64(b, k->scale)),
      attn_b_named(b, "rope", attn_b_attr_bool(b, k->rope)),
      attn_b_named(b, "append_rows", attn_b_attr_i64(b, k->append_rows)),
  };
  return mlirDictionaryAttrGet(b->ctx, sizeof a / sizeof *a, a);
}
