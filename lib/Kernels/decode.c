//===- decode.c - The decode kernel over a KV cache, and its combine ------===//
//
// attn.fused_decode on the GPU (issue 30), memory bound: what matters is to
// read each K/V byte once, in 16-byte loads, with enough of them in
// flight. Grid (splits, Hk * row groups, B), 128 threads (4 warps):
//
// - The CTA's rows: rows_per_cta of the G * Nq query rows of K/V head g
//   (G query heads of the GQA group, Nq rows each), so one pass over the
//   keys serves them all. Each lane holds, for every row, the 8 elements
//   of q at its columns (16 bytes of q, rotated at the row's position
//   len - Nq + i with the partner columns loaded too, pre-multiplied by
//   scale * log2(e) when the scale comes first; RoPE's angles as fractions
//   of a turn in f64, sin and cos by the MUFU), its O accumulator for
//   those columns, and a running max and sum.
// - The keys: head_dim / 8 lanes per key row, so a warp reads 32 / (d / 8)
//   consecutive rows per step, and each lane issues ATTN_DECODE_KEY_STEPS
//   steps' K and V loads (16 bytes each, 8 in flight) before it computes.
//   A paged cache reads the row's page from the block table (an entry out
//   of [0, P) reads page 0, as the CPU path); keys past the split's end are
//   clamped to its last for the load and masked.
// - Scores: 8 FMAs and a butterfly over the key's lanes, the modifiers in
//   order (softcap by tanh.approx, ALiBi's slope per row), the row's masks
//   (causal: keys up to its position; the window), then the online softmax
//   over the steps' keys in exp2 form (one rescale per row per iteration;
//   -inf rows keep a zero state).
// - The end: lanes of different keys merge by shuffles, the 4 warps
//   through shared memory; with one split the CTA writes out (16-byte
//   stores), else its normalised O and log2-sum-exp into `partials`, and
//   the combine kernel (a warp per row) weighs the splits by 2^(lse - max).
//
// The split of a sequence's keys is made at run time from its length: the
// keys [lo, len) its rows can see (lo: the window's left edge of its first
// row) are cut into `splits` chunks, rounded up to the CTA's step, so
// that short sequences of a batch finish early and every split of a long
// one has work. lower-tile-to-decode picks `splits` (the cost model,
// lib/CostModel/decode_split.c).
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "dialects/dialects.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NW (ATTN_DECODE_THREADS / 32)
#define T ATTN_DECODE_KEY_STEPS
#define RMAX ATTN_DECODE_MAX_ROWS
/// Rows of the lanes body (q and O of each in every lane's registers).
#define LANES_RMAX 4
/// Keys a warp takes per step in the tensor-core body: one m16n8k16 tile.
#define MMA_KEYS 16

int64_t attn_decode_group_rows(const struct attn_decode_kernel *k) {
  return k->heads / k->kv_heads * k->seq_q;
}

int64_t attn_decode_row_groups(const struct attn_decode_kernel *k) {
  int64_t r = attn_decode_group_rows(k);
  return (r + k->rows_per_cta - 1) / k->rows_per_cta;
}

int64_t attn_decode_workspace_bytes(const struct attn_decode_kernel *k) {
  if (k->splits <= 1)
    return 0;
  int64_t rows = k->batch * k->heads * k->seq_q;
  return rows * k->splits * (k->head_dim + 1) * 4;
}

bool attn_decode_supported(const struct attn_decode_kernel *k, char *why,
                           size_t wlen) {
  const char *w = NULL;
  int64_t d = k->head_dim;
  if (d != 64 && d != 128 && d != 256)
    w = "the decode kernel has head dims 64, 128 and 256 (value dim equal)";
  else if (k->seq_q < 1 || k->seq_q > 16)
    w = "the decode kernel takes 1 to 16 query rows per sequence";
  else if (k->rows_per_cta < 1 ||
           k->rows_per_cta > (k->mma ? RMAX : LANES_RMAX))
    w = k->mma ? "rows per CTA must be 1 to 8 (the tensor-core body)"
               : "rows per CTA must be 1 to 4 (the lanes body)";
  else if (k->mma && d == 256)
    w = "the decode kernel's tensor-core body has head dims 64 and 128";
  else if (k->splits < 1 || k->splits > 1024)
    w = "splits must be 1 to 1024";
  else if (k->batch > 65535 || k->kv_heads * attn_decode_row_groups(k) > 65535)
    w = "the decode grid takes at most 65535 sequences and K/V heads times "
        "row groups";
  else if (k->rope && k->interleaved && k->rotary_dim % 8)
    w = "the decode kernel's interleaved RoPE needs rotary_dim a multiple of "
        "8";
  else if (k->rope && !k->interleaved && k->rotary_dim % 16)
    w = "the decode kernel's rotate-half RoPE needs rotary_dim a multiple of "
        "16";
  else if (k->max_seq > 0x7fffffffLL - 4096)
    w = "the cache holds too many keys for 32-bit key indices";
  if (w)
    snprintf(why, wlen, "%s", w);
  return w == NULL;
}

/// One query row of a CTA: whether it is one of the group's, its query
/// head and row, its position, the keys [lo, hi) it sees, ALiBi's slope.
struct drow {
  MlirValue ok, h, i, pos, lo, hi, slope;
};

/// What the split kernel's helpers share.
struct dec {
  struct attn_builder *b;
  const struct attn_decode_kernel *k;
  int lpk, kpw;  // lanes per key row, keys per warp step
  int rb;        // rows of this CTA
  MlirValue q, kc, vc, lens, table, out; // parameters (out: or partials)
  MlirValue tid, lane, warp, ks, dp;     // i32
  MlirValue split, g, rg, bi;            // i32
  MlirValue len, start, end;             // i32
  struct drow row[RMAX]; // lanes body: the CTA's rows; mma: the thread's two
  MlirValue qv[RMAX][8];  // lanes body: q at the lane's columns
  MlirValue qb[16][2];    // mma: q^T's B fragments, two words a k-chunk
  bool folded;   // scale (and log2 e) folded into q
  MlirValue ninf, zero;
};

static MlirValue c32(struct dec *e, int64_t v) { return attn_b_i32(e->b, v); }
static MlirValue f32c(struct dec *e, double v) {
  return attn_b_f32(e->b, (float)v);
}
static MlirValue smin(struct dec *e, MlirValue x, MlirValue y) {
  return attn_b_binary(e->b, "arith.minsi", x, y);
}
static MlirValue smax(struct dec *e, MlirValue x, MlirValue y) {
  return attn_b_binary(e->b, "arith.maxsi", x, y);
}
static MlirValue i64v(struct dec *e, MlirValue x) {
  return attn_b_cast(e->b, "arith.extsi", x, e->b->t.i64);
}
static MlirType elem16(struct dec *e) { return e->b->t.i16; }

/// The 16 bytes at element offset off (i64) of the 16-bit tensor p, as 8
/// f32 values.
static void load8(struct dec *e, MlirValue p, MlirValue off, MlirValue out[8]) {
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

/// tanh.approx.f32: llvm.intr.tanh with afn (as score_fn.c's softcap).
static MlirValue tanh_approx(struct attn_builder *b, MlirValue x) {
  MlirAttribute afn = mlirAttributeParseGet(
      b->ctx, mlirStringRefCreateFromCString("#llvm.fastmath<afn>"));
  MlirNamedAttribute fm = attn_b_named(b, "fastmathFlags", afn);
  return attn_b_op1(b, "llvm.intr.tanh", b->t.f32, 1, &x, 1, &fm);
}

/// The element offset (i64) of column 0 of key j (i32, < len) of K/V head
/// g in the cache.
static MlirValue key_row(struct dec *e, MlirValue j) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  MlirValue rowi;
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
    page = attn_b_select(b, ok, page, c32(e, 0));
    rowi = attn_b_addi(
        b,
        attn_b_muli(b, i64v(e, attn_b_addi(b, attn_b_muli(b, page, c32(e, k->kv_heads)), e->g)),
                    attn_b_i64(b, k->page_size)),
        i64v(e, attn_k_remc(b, j, k->page_size)));
  }
  return attn_b_muli(b, rowi, attn_b_i64(b, k->head_dim));
}

/// The element offset of column dp * 8 of key j (i32, < len) of K/V head g
/// in the cache.
static MlirValue key_offset(struct dec *e, MlirValue j) {
  return attn_b_addi(e->b, key_row(e, j), i64v(e, attn_k_mulc(e->b, e->dp, 8)));
}

/// RoPE frequencies in turns per position (f64) of the 8 columns from col
/// (i32) on (both columns of an interleaved pair share one): theta^(-2 t /
/// r) / 2 pi for pair t, one libdevice exp2 for the first pair and
/// compile-time factors for the others. The same for every row.
static void build_turns(struct dec *e, MlirValue col, MlirValue turns[8]) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
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
static struct drow row_info(struct dec *e, MlirValue gr) {
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
static void load_q8(struct dec *e, const struct drow *w, MlirValue col,
                    MlirValue y[8]) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  MlirValue qrow = attn_b_addi(
      b, attn_b_muli(b, attn_b_addi(b, attn_k_mulc(b, e->bi, k->heads), w->h),
                     c32(e, k->seq_q)),
      w->i);
  MlirValue qbase = attn_b_muli(b, i64v(e, qrow), attn_b_i64(b, k->head_dim));
  MlirValue x[8];
  load8(e, e->q, attn_b_addi(b, qbase, i64v(e, col)), x);
  if (!k->rope) {
    memcpy(y, x, sizeof x);
    return;
  }
  attn_builder_role(b, "decode.rope");
  MlirValue turns[8];
  build_turns(e, col, turns);
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
    load8(e, e->q, attn_b_addi(b, qbase, i64v(e, pc)), part);
  MlirValue cs = {NULL}, sn = {NULL};
  for (int c = 0; c < 8; ++c) {
    // The pair's angle, shared by both columns of an interleaved pair.
    if (!k->interleaved || !(c & 1))
      attn_k_rope_turns_sincos(b, w->pos, turns[c], &cs, &sn);
    MlirValue p, sgn; // x1 c - x2 s for the first of a pair, x2 c + x1 s
    if (k->interleaved) {
      p = x[c ^ 1];
      sgn = f32c(e, (c & 1) ? 1.0 : -1.0);
    } else {
      p = part[c];
      sgn = attn_b_select(b, first, f32c(e, -1.0), f32c(e, 1.0));
    }
    MlirValue v = attn_b_fma(b, attn_b_mulf(b, p, sgn), sn, attn_b_mulf(b, x[c], cs));
    y[c] = attn_b_select(b, rot, v, x[c]);
  }
}

/// The lanes body's rows: the CTA's rb rows, and q at the lane's columns,
/// rotated and scaled (scale and log2 e folded in where the scale comes
/// first).
static void build_rows(struct dec *e) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  attn_builder_role(b, "decode.rows");
  e->folded = k->nmods == 0 || k->mods[0] == ATTN_DECODE_SCALE;
  bool only_scale = e->folded && k->nmods <= 1;
  double qf = e->folded ? k->scale : 1.0;
  if (only_scale)
    qf *= 1.4426950408889634; // log2 e: scores come out in exp2 form
  for (int r = 0; r < e->rb; ++r) {
    e->row[r] = row_info(e, attn_b_addi(b, attn_k_mulc(b, e->rg, e->rb), c32(e, r)));
    load_q8(e, &e->row[r], attn_k_mulc(b, e->dp, 8), e->qv[r]);
    attn_builder_role(b, "decode.rows");
    for (int c = 0; c < 8 && qf != 1.0; ++c)
      e->qv[r][c] = attn_b_mulf(b, e->qv[r][c], f32c(e, qf));
  }
}

/// The score of row w for key j (i32) from its dot product: the modifiers
/// not folded into q, in order, then log2 e; -inf where masked.
static MlirValue score(struct dec *e, const struct drow *w, MlirValue dot,
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

/// m, or 0 where it is -inf (so that 2^(x - m) of -inf rows stays 0).
static MlirValue usable_max(struct dec *e, MlirValue m) {
  return attn_b_select(e->b, attn_b_cmpf(e->b, ATTN_B_F_OEQ, m, e->ninf),
                       e->zero, m);
}

/// The key loop: state[r * 10 + 0] max, [1] sum, [2 ..] O of the lane's 8
/// columns; returns the loop's results in out.
static void build_key_loop(struct dec *e, MlirValue *out) {
  struct attn_builder *b = e->b;
  int ns = 10 * e->rb;
  MlirValue init[10 * LANES_RMAX];
  for (int r = 0; r < e->rb; ++r) {
    init[r * 10] = e->ninf;
    for (int c = 1; c < 10; ++c)
      init[r * 10 + c] = e->zero;
  }
  int64_t ki = (int64_t)NW * e->kpw * T; // keys per CTA iteration
  attn_builder_role(b, "decode.key_loop");
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, attn_k_to_index(b, e->start),
                  attn_k_to_index(b, e->end), attn_b_index(b, ki), ns, init);
  MlirValue base = attn_k_from_index(b, loop.iv);
  MlirValue last = attn_k_addc(b, e->end, -1);
  MlirValue j[T], inr[T], kx[T][8], vx[T][8];
  for (int t = 0; t < T; ++t) {
    j[t] = attn_b_addi(
        b, base,
        attn_b_addi(b, attn_k_mulc(b, e->warp, e->kpw),
                    attn_k_addc(b, e->ks, (int64_t)t * NW * e->kpw)));
    inr[t] = attn_b_cmpi(b, ATTN_B_SLT, j[t], e->end);
  }
  // Every load first: 2 T 16-byte loads in flight per lane.
  MlirValue off[T];
  for (int t = 0; t < T; ++t) {
    off[t] = key_offset(e, smin(e, j[t], last));
    load8(e, e->kc, off[t], kx[t]);
  }
  for (int t = 0; t < T; ++t)
    load8(e, e->vc, off[t], vx[t]);
  attn_builder_role(b, "decode.softmax");
  MlirValue y[10 * LANES_RMAX];
  for (int r = 0; r < e->rb; ++r) {
    MlirValue st[T];
    MlirValue mblk = e->ninf;
    for (int t = 0; t < T; ++t) {
      MlirValue d = attn_b_mulf(b, e->qv[r][0], kx[t][0]);
      for (int c = 1; c < 8; ++c)
        d = attn_b_fma(b, e->qv[r][c], kx[t][c], d);
      for (int o = 1; o < e->lpk; o <<= 1)
        d = attn_b_addf(b, d, attn_k_shfl_xor(b, d, o));
      st[t] = score(e, &e->row[r], d, j[t], inr[t]);
      mblk = attn_b_maxnumf(b, mblk, st[t]);
    }
    MlirValue m = loop.args[r * 10], l = loop.args[r * 10 + 1];
    MlirValue mnew = attn_b_maxnumf(b, m, mblk);
    MlirValue mu = usable_max(e, mnew);
    MlirValue corr = attn_k_ex2(b, attn_b_subf(b, m, mu));
    MlirValue p[T], lsum = attn_b_mulf(b, l, corr);
    for (int t = 0; t < T; ++t) {
      p[t] = attn_k_ex2(b, attn_b_subf(b, st[t], mu));
      lsum = attn_b_addf(b, lsum, p[t]);
    }
    y[r * 10] = mnew;
    y[r * 10 + 1] = lsum;
    for (int c = 0; c < 8; ++c) {
      MlirValue a = attn_b_mulf(b, loop.args[r * 10 + 2 + c], corr);
      for (int t = 0; t < T; ++t)
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
static void merge_lanes(struct dec *e, MlirValue *st) {
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

/// Shared memory: per warp and row (max, sum), then per warp and row the
/// O of every column (f32); row r of warp w at w * rows_per_cta + r.
#define ML_BYTES (NW * RMAX * 8)
static int64_t slot_bytes(const struct attn_decode_kernel *k);
static int64_t states_bytes(const struct attn_decode_kernel *k);
int64_t attn_decode_smem_bytes(const struct attn_decode_kernel *k) {
  return states_bytes(k) +
         (k->mma && k->kv_stages > 1 ? k->kv_stages * slot_bytes(k) : 0);
}

static MlirValue smem_at(struct dec *e, MlirValue smem, MlirValue byte_off) {
  return attn_k_smem_ptr(e->b, smem, byte_off);
}

/// The lanes body's warp states into shared memory: the lanes of key slot
/// 0 hold them.
static void store_states_lanes(struct dec *e, MlirValue *st) {
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

/// The 4 warps' states (in shared memory) merged, each thread one row's 8
/// columns: out (one split) or the partials and lse (splits).
static void merge_warps(struct dec *e) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  int64_t d = k->head_dim;
  attn_builder_role(b, "decode.epilogue");
  MlirValue smem = attn_k_addressof(b, "attn_smem", b->t.ptr_shared);
  attn_k_bar_sync(b, (MlirValue){NULL}, 0);
  int64_t chunks = d / 8, tasks = (int64_t)e->rb * chunks;
  struct attn_b_if act;
  attn_b_if_open(b, &act, attn_k_cmpc(b, ATTN_B_ULT, e->tid, tasks), 0, NULL,
                 false);
  MlirValue r = attn_k_divc(b, e->tid, chunks), c = attn_k_remc(b, e->tid, chunks);
  MlirValue m[NW], l[NW];
  MlirValue mm = e->ninf;
  for (int w = 0; w < NW; ++w) {
    MlirValue mo = attn_k_mulc(b, attn_k_addc(b, r, (int64_t)w * e->rb), 8);
    m[w] = attn_k_load(b, smem_at(e, smem, mo), b->t.f32);
    l[w] = attn_k_load(b, smem_at(e, smem, attn_k_addc(b, mo, 4)), b->t.f32);
    mm = attn_b_maxnumf(b, mm, m[w]);
  }
  MlirValue mu = usable_max(e, mm), lsum = e->zero, o[8];
  for (int x = 0; x < 8; ++x)
    o[x] = e->zero;
  for (int w = 0; w < NW; ++w) {
    MlirValue a = attn_k_ex2(b, attn_b_subf(b, m[w], mu));
    lsum = attn_b_fma(b, l[w], a, lsum);
    MlirValue ob = attn_k_addc(
        b,
        attn_k_mulc(b, attn_b_addi(b, attn_k_mulc(b, attn_k_addc(b, r, (int64_t)w * e->rb), d),
                                   attn_k_mulc(b, c, 8)),
                    4),
        ML_BYTES);
    for (int hv = 0; hv < 2; ++hv) {
      MlirValue v = attn_k_gemm_load_vec(
          b, smem_at(e, smem, attn_k_addc(b, ob, 16 * hv)), 4, b->t.f32, 16);
      for (int x = 0; x < 4; ++x) {
        MlirValue opd[2] = {v, attn_b_i32(b, x)};
        MlirValue f = attn_b_op1(b, "llvm.extractelement", b->t.f32, 2, opd, 0,
                                 NULL);
        o[hv * 4 + x] = attn_b_fma(b, f, a, o[hv * 4 + x]);
      }
    }
  }
  MlirValue pos = attn_b_cmpf(b, ATTN_B_F_OGT, lsum, e->zero);
  MlirValue inv = attn_b_select(b, pos, attn_b_divf(b, f32c(e, 1.0), lsum),
                                e->zero);
  for (int x = 0; x < 8; ++x)
    o[x] = attn_b_mulf(b, o[x], inv);
  // Which of the group's rows r is.
  struct drow w = row_info(e, attn_b_addi(b, attn_k_mulc(b, e->rg, e->rb), r));
  MlirValue ok = w.ok, h = w.h, i = w.i;
  struct attn_b_if wr;
  attn_b_if_open(b, &wr, ok, 0, NULL, false);
  MlirValue orow = attn_b_addi(
      b, attn_b_muli(b, attn_b_addi(b, attn_k_mulc(b, e->bi, k->heads), h),
                     c32(e, k->seq_q)),
      i);
  if (k->splits <= 1) {
    MlirValue w4[4];
    for (int x = 0; x < 4; ++x)
      w4[x] = attn_k_pack2(b, k->bf16, o[2 * x], o[2 * x + 1]);
    MlirValue off = attn_b_addi(b, attn_b_muli(b, i64v(e, orow), attn_b_i64(b, d)),
                                i64v(e, attn_k_mulc(b, c, 8)));
    attn_k_store_vec(b, w4, 4, attn_k_gep_elem(b, e->out, off, elem16(e)));
  } else {
    MlirValue slot = attn_b_addi(b, attn_k_mulc(b, orow, k->splits), e->split);
    MlirValue off = attn_b_addi(b, attn_b_muli(b, i64v(e, slot), attn_b_i64(b, d)),
                                i64v(e, attn_k_mulc(b, c, 8)));
    MlirValue p = attn_k_gep_elem(b, e->out, off, b->t.f32);
    attn_k_store_vec(b, &o[0], 4, p);
    attn_k_store_vec(b, &o[4], 4, attn_k_gep_elem(b, p, attn_b_i64(b, 4), b->t.f32));
    struct attn_b_if c0;
    attn_b_if_open(b, &c0, attn_k_cmpc(b, ATTN_B_EQ, c, 0), 0, NULL, false);
    int64_t lse_base = k->batch * k->heads * k->seq_q * k->splits * d;
    MlirValue lse = attn_b_select(
        b, pos, attn_b_addf(b, mm, attn_k_lg2(b, lsum)), e->ninf);
    attn_k_store(b, lse,
                 attn_k_gep_elem(b, e->out,
                                 attn_b_addi(b, attn_b_i64(b, lse_base), i64v(e, slot)),
                                 b->t.f32));
    attn_b_if_close(b, &c0, 0, NULL);
  }
  attn_b_if_close(b, &wr, 0, NULL);
  attn_b_if_close(b, &act, 0, NULL);
}

//===-- The tensor-core body ----------------------------------------------===//
//
// With several rows a CTA (GQA groups, speculative rows) the lanes body
// spends 8 FMAs and a 4-step butterfly per key and row; here each warp
// takes 16 keys a step and mma.sync m16n8k16 does the arithmetic, with the
// rows as the tile's n (8) so that no accumulator is padding:
//
// - S^T (16 keys x 8 rows) = K q^T: K is the A operand straight from its
//   16-byte loads (lane l loads keys l/4 and l/4 + 8, columns 32 i + 8 (l%4)
//   .. + 7), q^T the B operand from q's rows loaded the same way (row l/4);
//   the dot product does not care in which order the columns are summed,
//   so the columns of each k-chunk are the ones the loads give.
// - The online softmax on S^T's fragment: lane l holds keys l/4 and l/4 +
//   8 of rows 2 (l%4) and the next; a row's max over the 16 keys is three
//   shuffles across the lanes of the same l%4.
// - P^T as the B operand of O^T += V^T P^T: the two 8x8 halves of S^T's
//   fragment transposed by movmatrix. V^T is the A operand: lane l loads
//   keys 2 (l%4), +1, +8, +9 at columns 64 r + 8 (l/4) .. + 7, and two
//   keys' 16-bit words of a column are paired by byte permutes; the output
//   columns of O^T's tiles are a permutation that the epilogue undoes.
// - Keys past the split's end are clamped to its last key for the loads
//   (never an unwritten row: 0 times NaN would poison the tile) and masked.
//   A split starts on a multiple of 16 keys, so a paged cache (pages of at
//   least 16) needs one block-table entry per warp step.


/// The 16 bytes at element offset off (i64) of the 16-bit tensor p, as 4
/// i32 words.
static void load4w(struct dec *e, MlirValue p, MlirValue off, MlirValue w[4]) {
  struct attn_builder *b = e->b;
  MlirValue v = attn_k_gemm_load_vec(b, attn_k_gep_elem(b, p, off, elem16(e)),
                                     4, b->t.i32, 16);
  for (int x = 0; x < 4; ++x) {
    MlirValue opd[2] = {v, attn_b_i32(b, x)};
    w[x] = attn_b_op1(b, "llvm.extractelement", b->t.i32, 2, opd, 0, NULL);
  }
}

/// The thread's rows (2 (lane % 4) and the next) and q^T's B fragments of
/// row lane / 4 (zero past the CTA's rows).
static void build_rows_mma(struct dec *e) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  attn_builder_role(b, "decode.rows");
  e->folded = false;
  MlirValue q4 = attn_k_andc(b, e->lane, 3), gq = attn_k_divc(b, e->lane, 4);
  MlirValue base = attn_k_mulc(b, e->rg, e->rb);
  for (int x = 0; x < 2; ++x) {
    MlirValue r = attn_k_addc(b, attn_k_mulc(b, q4, 2), x);
    e->row[x] = row_info(e, attn_b_addi(b, base, r));
    e->row[x].ok = attn_b_andi(b, e->row[x].ok, attn_k_cmpc(b, ATTN_B_ULT, r, e->rb));
  }
  struct drow qr = row_info(e, attn_b_addi(b, base, gq));
  MlirValue live = attn_b_andi(b, qr.ok, attn_k_cmpc(b, ATTN_B_ULT, gq, e->rb));
  MlirValue zero_w = c32(e, 0);
  for (int64_t i = 0; i < k->head_dim / 32; ++i) {
    MlirValue y[8];
    load_q8(e, &qr, attn_k_addc(b, attn_k_mulc(b, q4, 8), 32 * i), y);
    attn_builder_role(b, "decode.rows");
    for (int c2 = 0; c2 < 2; ++c2)
      for (int h = 0; h < 2; ++h) {
        MlirValue w = attn_k_pack2(b, k->bf16, y[4 * c2 + 2 * h], y[4 * c2 + 2 * h + 1]);
        e->qb[2 * i + c2][h] = attn_b_select(b, live, w, zero_w);
      }
  }
}

/// lo: the low 16-bit halves of x and y as one word (x's low); else the
/// high halves.
static MlirValue pair_halves(struct dec *e, MlirValue x, MlirValue y, bool lo) {
  struct attn_builder *b = e->b;
  if (lo)
    return attn_b_ori(b, attn_b_andi(b, x, c32(e, 0xffff)),
                      attn_b_binary(b, "arith.shli", y, c32(e, 16)));
  return attn_b_ori(b, attn_b_binary(b, "arith.shrui", x, c32(e, 16)),
                    attn_b_andi(b, y, c32(e, (int32_t)0xffff0000u)));
}

/// Shared bytes of one kv_stages slot: every thread's 16-byte chunks of a
/// step's K and V (head_dim / 8 of them).
static int64_t slot_bytes(const struct attn_decode_kernel *k) {
  return (k->head_dim / 8) * ATTN_DECODE_THREADS * 16;
}

static int64_t states_bytes(const struct attn_decode_kernel *k) {
  return ML_BYTES + (int64_t)NW * k->rows_per_cta * k->head_dim * 4;
}

/// The shared address (i32) of this thread's chunk 0 in slot (i32), after
/// the warps' states.
static MlirValue slot_addr(struct dec *e, MlirValue slot) {
  struct attn_builder *b = e->b;
  MlirValue smem = attn_k_addressof(b, "attn_smem", b->t.ptr_shared);
  MlirValue base = attn_k_ptrtoint(b, smem, b->t.i32);
  MlirValue off = attn_b_addi(b, attn_k_mulc(b, slot, slot_bytes(e->k)),
                              attn_k_addc(b, attn_k_mulc(b, e->tid, 16),
                                          states_bytes(e->k)));
  return attn_b_addi(b, base, off);
}

/// The step's K at keys kb + lane / 4 and + 8 (kw[s][i]: columns 32 i + 8
/// (lane % 4) .. + 7 of key kb + lane / 4 + 8 s) or V at keys kb + 2
/// (lane % 4), +1, +8, +9 (vw[x][r]: columns 64 r + 8 (lane / 4) .. + 7),
/// each clamped to last (>= 0), their page that of min(kb, last).
static void load_kv_mma(struct dec *e, MlirValue kb, MlirValue last, bool v,
                        MlirValue w[4][4][4], MlirValue dst) {
  struct attn_builder *b = e->b;
  int64_t d = e->k->head_dim;
  MlirValue q4 = attn_k_andc(b, e->lane, 3), gq = attn_k_divc(b, e->lane, 4);
  MlirValue pb = smin(e, kb, last);
  MlirValue rowb = key_row(e, pb);
  for (int x = 0; x < (v ? 4 : 2); ++x) {
    MlirValue j = v ? attn_b_addi(b, kb, attn_k_addc(b, attn_k_mulc(b, q4, 2),
                                                     (x & 1) + 8 * (x >> 1)))
                    : attn_b_addi(b, kb, attn_k_addc(b, gq, 8 * x));
    MlirValue kk = attn_b_subi(b, smin(e, j, last), pb);
    MlirValue col = v ? attn_k_mulc(b, gq, 8) : attn_k_mulc(b, q4, 8);
    MlirValue off = attn_b_addi(
        b, rowb, i64v(e, attn_b_addi(b, attn_k_mulc(b, kk, d), col)));
    int64_t stride = v ? 64 : 32;
    for (int64_t r = 0; r < d / stride; ++r) {
      MlirValue at = attn_b_addi(b, off, attn_b_i64(b, stride * r));
      if (mlirValueIsNull(dst)) {
        load4w(e, v ? e->vc : e->kc, at, w[x][r]);
        continue;
      }
      // kv_stages: 16 bytes by cp.async into the thread's chunk c of the
      // slot at dst (chunk c of every thread together: no bank conflicts).
      int64_t c = v ? 2 * (d / 32) + x * (d / 64) + r : x * (d / 32) + r;
      MlirValue src = attn_k_ptrtoint(
          b, attn_k_gep_elem(b, v ? e->vc : e->kc, at, elem16(e)), b->t.i64);
      attn_k_cp_async16(b, attn_k_addc(b, dst, c * ATTN_DECODE_THREADS * 16), src,
                        c32(e, 16));
    }
  }
}

/// kv_stages: the step's K and V (as load_kv_mma's) from the slot whose
/// chunk 0 of this thread is at the shared address at (i32).
static void read_kv_slot(struct dec *e, MlirValue at, MlirValue kw[4][4][4],
                         MlirValue vw[4][4][4]) {
  struct attn_builder *b = e->b;
  int64_t d = e->k->head_dim;
  MlirValue smem = attn_k_addressof(b, "attn_smem", b->t.ptr_shared);
  MlirValue base = attn_k_ptrtoint(b, smem, b->t.i32);
  for (int v = 0; v < 2; ++v)
    for (int x = 0; x < (v ? 4 : 2); ++x) {
      int64_t stride = v ? 64 : 32;
      for (int64_t r = 0; r < d / stride; ++r) {
        int64_t c = v ? 2 * (d / 32) + x * (d / 64) + r : x * (d / 32) + r;
        MlirValue off = attn_b_subi(
            b, attn_k_addc(b, at, c * ATTN_DECODE_THREADS * 16), base);
        MlirValue vec = attn_k_gemm_load_vec(b, smem_at(e, smem, off), 4,
                                             b->t.i32, 16);
        for (int y = 0; y < 4; ++y) {
          MlirValue opd[2] = {vec, attn_b_i32(b, y)};
          (v ? vw : kw)[x][r][y] =
              attn_b_op1(b, "llvm.extractelement", b->t.i32, 2, opd, 0, NULL);
        }
      }
    }
}

/// The key loop of the tensor-core body: state [4 mt ..] O^T's tile mt,
/// then the two rows' max and (this lane's part of) sum, then with
/// kv_prefetch the next step's K (loaded before this step's arithmetic).
static void build_key_loop_mma(struct dec *e, MlirValue *out) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  int64_t d = k->head_dim, mt_n = d / 16, kwn = 2 * (d / 32) * 4;
  int ns0 = (int)(4 * mt_n + 4);
  int ns = ns0 + (k->kv_prefetch ? (int)kwn : 0);
  MlirValue init[4 * 8 + 4 + 32];
  for (int i = 0; i < ns0; ++i)
    init[i] = e->zero;
  init[4 * mt_n] = init[4 * mt_n + 1] = e->ninf;
  attn_builder_role(b, "decode.key_loop");
  MlirValue step0 = attn_k_mulc(b, e->warp, MMA_KEYS);
  MlirValue kw[4][4][4], vw[4][4][4];
  if (k->kv_prefetch) {
    // The first step's K (clamped to key 0 of an empty split: a row that
    // exists, never used).
    MlirValue last0 = smax(e, attn_k_addc(b, e->end, -1), c32(e, 0));
    load_kv_mma(e, attn_b_addi(b, e->start, step0), last0, false, kw,
                (MlirValue){NULL});
    for (int s = 0, n = 0; s < 2; ++s)
      for (int64_t i = 0; i < d / 32; ++i)
        for (int x = 0; x < 4; ++x)
          init[ns0 + n++] = kw[s][i][x];
  }
  if (k->kv_stages > 1) {
    // The first stages - 1 steps in flight (clamped as above).
    MlirValue last0 = smax(e, attn_k_addc(b, e->end, -1), c32(e, 0));
    for (int64_t sl = 0; sl + 1 < k->kv_stages; ++sl) {
      MlirValue kb0 = attn_b_addi(b, e->start, attn_k_addc(b, step0, sl * NW * MMA_KEYS));
      load_kv_mma(e, kb0, last0, false, kw, slot_addr(e, c32(e, sl)));
      load_kv_mma(e, kb0, last0, true, vw, slot_addr(e, c32(e, sl)));
      attn_k_cp_async_commit(b);
    }
  }
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, attn_k_to_index(b, e->start),
                  attn_k_to_index(b, e->end), attn_b_index(b, NW * MMA_KEYS), ns,
                  init);
  MlirValue kb = attn_b_addi(b, attn_k_from_index(b, loop.iv), step0);
  MlirValue last = attn_k_addc(b, e->end, -1);
  MlirValue kj[2];
  MlirValue gq = attn_k_divc(b, e->lane, 4);
  for (int s = 0; s < 2; ++s)
    kj[s] = attn_b_addi(b, kb, attn_k_addc(b, gq, 8 * s));
  MlirValue y[4 * 8 + 4 + 32];
  if (k->kv_prefetch) {
    for (int s = 0, n = 0; s < 2; ++s)
      for (int64_t i = 0; i < d / 32; ++i)
        for (int x = 0; x < 4; ++x)
          kw[s][i][x] = loop.args[ns0 + n++];
    load_kv_mma(e, kb, last, true, vw, (MlirValue){NULL});
    MlirValue kn[4][4][4];
    load_kv_mma(e, attn_k_addc(b, kb, NW * MMA_KEYS), last, false, kn,
                (MlirValue){NULL});
    for (int s = 0, n = 0; s < 2; ++s)
      for (int64_t i = 0; i < d / 32; ++i)
        for (int x = 0; x < 4; ++x)
          y[ns0 + n++] = kn[s][i][x];
  } else if (k->kv_stages > 1) {
    // Step i + stages - 1 into its slot, then step i's (landed: at most
    // stages - 1 groups in flight) out of its slot. The slot written was
    // read in the previous step, whose mma had those registers before this
    // step's copies issue.
    int64_t n = k->kv_stages;
    MlirValue it = attn_k_divc(b, attn_b_subi(b, attn_k_from_index(b, loop.iv), e->start),
                               NW * MMA_KEYS);
    MlirValue wslot = attn_k_remc(b, attn_k_addc(b, it, n - 1), n);
    MlirValue rslot = attn_k_remc(b, it, n);
    load_kv_mma(e, attn_k_addc(b, kb, (n - 1) * NW * MMA_KEYS), last, false, kw,
                slot_addr(e, wslot));
    load_kv_mma(e, attn_k_addc(b, kb, (n - 1) * NW * MMA_KEYS), last, true, vw,
                slot_addr(e, wslot));
    attn_k_cp_async_commit(b);
    attn_k_cp_async_wait(b, (int)n - 1);
    read_kv_slot(e, slot_addr(e, rslot), kw, vw);
  } else {
    load_kv_mma(e, kb, last, false, kw, (MlirValue){NULL});
    load_kv_mma(e, kb, last, true, vw, (MlirValue){NULL});
  }
  attn_builder_role(b, "decode.softmax");
  // S^T in two chains of k-chunks (even, odd), summed: half the latency of
  // one chain of d / 16 dependent mma.
  MlirValue c[2][4];
  for (int h = 0; h < 2; ++h)
    for (int x = 0; x < 4; ++x)
      c[h][x] = e->zero;
  for (int64_t kc = 0; kc < d / 16; ++kc) {
    int64_t i = kc / 2, c2 = kc % 2;
    MlirValue a[4] = {kw[0][i][2 * c2], kw[1][i][2 * c2], kw[0][i][2 * c2 + 1],
                      kw[1][i][2 * c2 + 1]};
    attn_k_mma16816(b, k->bf16, c[c2], a, e->qb[kc][0], e->qb[kc][1]);
  }
  MlirValue sc[4];
  for (int x = 0; x < 4; ++x)
    sc[x] = attn_b_addf(b, c[0][x], c[1][x]);
  MlirValue corr[2], pw[2][2];
  for (int x = 0; x < 2; ++x) {
    MlirValue st[2];
    for (int s = 0; s < 2; ++s)
      st[s] = score(e, &e->row[x], sc[2 * s + x], kj[s],
                    attn_b_cmpi(b, ATTN_B_SLT, kj[s], e->end));
    MlirValue mc = attn_b_maxnumf(b, st[0], st[1]);
    for (int o = 4; o < 32; o <<= 1)
      mc = attn_b_maxnumf(b, mc, attn_k_shfl_xor(b, mc, o));
    MlirValue m = loop.args[4 * mt_n + x], l = loop.args[4 * mt_n + 2 + x];
    MlirValue mnew = attn_b_maxnumf(b, m, mc);
    MlirValue mu = usable_max(e, mnew);
    corr[x] = attn_k_ex2(b, attn_b_subf(b, m, mu));
    MlirValue p0 = attn_k_ex2(b, attn_b_subf(b, st[0], mu));
    MlirValue p1 = attn_k_ex2(b, attn_b_subf(b, st[1], mu));
    y[4 * mt_n + x] = mnew;
    y[4 * mt_n + 2 + x] = attn_b_addf(b, attn_b_mulf(b, l, corr[x]), attn_b_addf(b, p0, p1));
    pw[x][0] = p0;
    pw[x][1] = p1;
  }
  // P^T's B fragment: keys 2 (lane % 4), +1 (b0b1) and +8, +9 (b2b3) of
  // row lane / 4, from S^T's fragment (key lane / 4, rows 2 (lane % 4), +1).
  MlirValue pb01 = attn_k_movmatrix_t(b, attn_k_pack2(b, k->bf16, pw[0][0], pw[1][0]));
  MlirValue pb23 = attn_k_movmatrix_t(b, attn_k_pack2(b, k->bf16, pw[0][1], pw[1][1]));
  for (int64_t mt = 0; mt < mt_n; ++mt) {
    int64_t r = mt / 4, w = mt % 4;
    MlirValue a[4] = {
        pair_halves(e, vw[0][r][w], vw[1][r][w], true),
        pair_halves(e, vw[0][r][w], vw[1][r][w], false),
        pair_halves(e, vw[2][r][w], vw[3][r][w], true),
        pair_halves(e, vw[2][r][w], vw[3][r][w], false),
    };
    MlirValue o[4];
    for (int x = 0; x < 4; ++x)
      o[x] = attn_b_mulf(b, loop.args[4 * mt + x], corr[x & 1]);
    attn_k_mma16816(b, k->bf16, o, a, pb01, pb23);
    for (int x = 0; x < 4; ++x)
      y[4 * mt + x] = o[x];
  }
  attn_b_for_close(b, &loop, ns, y);
  if (k->kv_stages > 1)
    attn_k_cp_async_wait(b, 0); // the copies past the end, before the exit
  for (int i = 0; i < ns0; ++i)
    out[i] = loop.results[i];
}

/// The tensor-core body's warp states into shared memory: each row's sum
/// across the lanes of its keys, O^T's tiles back in column order.
static void store_states_mma(struct dec *e, MlirValue *st) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  int64_t d = k->head_dim, mt_n = d / 16;
  attn_builder_role(b, "decode.epilogue");
  MlirValue smem = attn_k_addressof(b, "attn_smem", b->t.ptr_shared);
  MlirValue q4 = attn_k_andc(b, e->lane, 3), gq = attn_k_divc(b, e->lane, 4);
  MlirValue l[2];
  for (int x = 0; x < 2; ++x) {
    l[x] = st[4 * mt_n + 2 + x];
    for (int o = 4; o < 32; o <<= 1)
      l[x] = attn_b_addf(b, l[x], attn_k_shfl_xor(b, l[x], o));
  }
  for (int x = 0; x < 2; ++x) {
    MlirValue r = attn_k_addc(b, attn_k_mulc(b, q4, 2), x);
    struct attn_b_if in;
    attn_b_if_open(b, &in, attn_k_cmpc(b, ATTN_B_ULT, r, e->rb), 0, NULL, false);
    MlirValue wr = attn_b_addi(b, attn_k_mulc(b, e->warp, e->rb), r);
    for (int64_t rr = 0; rr < d / 64; ++rr) {
      // Columns 64 rr + 8 (lane / 4) + 2 w (O^T tile 4 rr + w, its first
      // m-slot) and the next (its second).
      MlirValue v[8];
      for (int w = 0; w < 4; ++w) {
        v[2 * w] = st[4 * (4 * rr + w) + x];
        v[2 * w + 1] = st[4 * (4 * rr + w) + 2 + x];
      }
      MlirValue col = attn_k_addc(b, attn_k_mulc(b, gq, 8), 64 * rr);
      MlirValue ob = attn_k_addc(
          b, attn_k_mulc(b, attn_b_addi(b, attn_k_mulc(b, wr, d), col), 4), ML_BYTES);
      attn_k_store_vec(b, &v[0], 4, smem_at(e, smem, ob));
      attn_k_store_vec(b, &v[4], 4, smem_at(e, smem, attn_k_addc(b, ob, 16)));
    }
    struct attn_b_if l0;
    attn_b_if_open(b, &l0, attn_k_cmpc(b, ATTN_B_EQ, gq, 0), 0, NULL, false);
    MlirValue mo = attn_k_mulc(b, wr, 8);
    attn_k_store(b, st[4 * mt_n + x], smem_at(e, smem, mo));
    attn_k_store(b, l[x], smem_at(e, smem, attn_k_addc(b, mo, 4)));
    attn_b_if_close(b, &l0, 0, NULL);
    attn_b_if_close(b, &in, 0, NULL);
  }
}

/// {llvm.noalias, llvm.<access>}: a parameter's attributes.
static MlirAttribute noalias(struct attn_builder *b, const char *access) {
  MlirNamedAttribute a[] = {
      attn_b_named(b, "llvm.noalias", attn_b_attr_unit(b)),
      attn_b_named(b, access, attn_b_attr_unit(b)),
  };
  return mlirDictionaryAttrGet(b->ctx, 2, a);
}

/// The "decode" dictionary of the manifest entries: what the kernel
/// computes beside its parameters.
static MlirAttribute decode_info(struct attn_builder *b,
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
  };
  return mlirDictionaryAttrGet(b->ctx, sizeof a / sizeof *a, a);
}

static bool build_split(MlirOperation gm, MlirLocation loc,
                        const struct attn_decode_kernel *k, const char *name) {
  struct attn_builder bb;
  struct attn_builder *b = &bb;
  attn_builder_init(b, mlirLocationGetContext(loc), loc);
  attn_builder_role(b, "decode.setup");
  attn_builder_at_end(b, attn_b_region_block(gm, 0));
  attn_k_declare_libdevice(b, gm, 16);
  const char *ty = k->bf16 ? "bf16" : "f16";
  int64_t rows = k->paged ? k->num_pages : k->batch;
  int64_t crows = k->paged ? k->page_size : k->max_seq;
  int64_t grid[3] = {k->splits, k->kv_heads * attn_decode_row_groups(k),
                     k->batch};
  struct attn_k_param params[6];
  int np = 0;
  params[np++] = (struct attn_k_param){
      .name = "q", .dtype = ty, .align = 16,
      .shape = {k->batch, k->heads, k->seq_q, k->head_dim}};
  params[np++] = (struct attn_k_param){
      .name = "k_cache", .dtype = ty, .align = 16,
      .shape = {rows, k->kv_heads, crows, k->head_dim}};
  params[np++] = (struct attn_k_param){
      .name = "v_cache", .dtype = ty, .align = 16,
      .shape = {rows, k->kv_heads, crows, k->head_dim}};
  params[np++] = (struct attn_k_param){.name = "cache_seqlens", .dtype = "i32",
                                       .align = 4, .rank = 1,
                                       .shape = {k->batch}};
  if (k->paged)
    params[np++] = (struct attn_k_param){.name = "block_table", .dtype = "i32",
                                         .align = 4, .rank = 2,
                                         .shape = {k->batch, k->max_pages}};
  if (k->splits <= 1)
    params[np++] = (struct attn_k_param){
        .name = "out", .dtype = ty, .align = 16,
        .shape = {k->batch, k->heads, k->seq_q, k->head_dim}};
  else
    params[np++] = (struct attn_k_param){
        .name = "partials", .dtype = "f32", .align = 16, .rank = 1,
        .shape = {attn_decode_workspace_bytes(k) / 4}};
  MlirNamedAttribute extra[] = {
      attn_b_named(b, "decode", decode_info(b, k)),
  };
  MlirAttribute launch = attn_k_launch_attr(b, "decode", grid,
                                            ATTN_DECODE_THREADS, attn_decode_smem_bytes(k),
                                            np, params, 1, extra);
  MlirNamedAttribute attrs[4];
  intptr_t na = attn_k_kernel_attrs(b, ATTN_DECODE_THREADS, launch, attrs);
  // ctas_per_sm: ptxas keeps the registers to what that many CTAs allow.
  if (k->ctas_per_sm > 1)
    attrs[2] = attn_b_named(b, "nvvm.minctasm", attn_b_attr_i32(b, k->ctas_per_sm));
  MlirType types[6];
  MlirAttribute args[6];
  for (int i = 0; i < np; ++i) {
    types[i] = b->t.ptr;
    args[i] = noalias(b, i == np - 1 ? "llvm.writeonly" : "llvm.readonly");
  }
  struct attn_b_func f;
  attn_k_llvm_func_open_typed(b, &f, name, np, types, args, na, attrs);
  struct dec e;
  memset(&e, 0, sizeof e);
  e.b = b;
  e.k = k;
  e.lpk = (int)(k->head_dim / 8);
  e.kpw = 32 / e.lpk;
  e.rb = k->rows_per_cta;
  int a = 0;
  e.q = attn_b_func_arg(&f, a++);
  e.kc = attn_b_func_arg(&f, a++);
  e.vc = attn_b_func_arg(&f, a++);
  e.lens = attn_b_func_arg(&f, a++);
  if (k->paged)
    e.table = attn_b_func_arg(&f, a++);
  e.out = attn_b_func_arg(&f, a++);
  e.ninf = f32c(&e, -INFINITY);
  e.zero = f32c(&e, 0.0);
  e.tid = attn_k_sreg(b, "tid.x");
  e.lane = attn_k_andc(b, e.tid, 31);
  e.warp = attn_k_divc(b, e.tid, 32);
  e.ks = attn_k_divc(b, e.lane, e.lpk);
  e.dp = attn_k_remc(b, e.lane, e.lpk);
  e.split = attn_k_sreg(b, "ctaid.x");
  MlirValue gy = attn_k_sreg(b, "ctaid.y");
  int64_t groups = attn_decode_row_groups(k);
  e.g = attn_k_divc(b, gy, groups);
  e.rg = attn_k_remc(b, gy, groups);
  e.bi = attn_k_sreg(b, "ctaid.z");
  MlirValue len = attn_k_load(
      b, attn_k_gep_elem(b, e.lens, i64v(&e, e.bi), b->t.i32), b->t.i32);
  e.len = smin(&e, smax(&e, len, c32(&e, 0)), c32(&e, k->max_seq));
  // The keys the CTA's rows may see, [lo, len), cut into splits chunks of
  // whole iterations.
  MlirValue lo = c32(&e, 0);
  if (k->has_window && k->window_left >= 0)
    lo = smax(&e, lo, attn_k_addc(b, e.len, -k->seq_q - k->window_left));
  lo = smin(&e, lo, e.len);
  int64_t ki = k->mma ? (int64_t)NW * MMA_KEYS : (int64_t)NW * e.kpw * T;
  if (k->mma) // splits start on whole warp steps (one page each)
    lo = attn_b_andi(b, lo, c32(&e, -MMA_KEYS));
  MlirValue n = attn_b_subi(b, e.len, lo);
  MlirValue chunk = attn_k_mulc(
      b, attn_k_divc(b, attn_k_addc(b, n, (int64_t)k->splits * ki - 1),
                     (int64_t)k->splits * ki),
      ki);
  e.start = smin(&e, attn_b_addi(b, lo, attn_b_muli(b, e.split, chunk)), e.len);
  e.end = smin(&e, attn_b_addi(b, e.start, chunk), e.len);
  if (k->mma) {
    build_rows_mma(&e);
    MlirValue st[4 * 8 + 4];
    build_key_loop_mma(&e, st);
    store_states_mma(&e, st);
  } else {
    build_rows(&e);
    MlirValue st[10 * LANES_RMAX];
    build_key_loop(&e, st);
    merge_lanes(&e, st);
    store_states_lanes(&e, st);
  }
  merge_warps(&e);
  return attn_k_llvm_func_finish(b, &f);
}

/// The combine kernel: a warp per query row, each lane 8 columns; the
/// splits' partial O weighed by 2^(lse - max lse).
static bool build_combine(MlirOperation gm, MlirLocation loc,
                          const struct attn_decode_kernel *k,
                          const char *name) {
  struct attn_builder bb;
  struct attn_builder *b = &bb;
  attn_builder_init(b, mlirLocationGetContext(loc), loc);
  attn_builder_role(b, "decode.combine");
  attn_builder_at_end(b, attn_b_region_block(gm, 0));
  const char *ty = k->bf16 ? "bf16" : "f16";
  int64_t rows = k->batch * k->heads * k->seq_q, d = k->head_dim;
  int64_t grid[3] = {(rows + NW - 1) / NW, 1, 1};
  struct attn_k_param params[2] = {
      {.name = "partials", .dtype = "f32", .align = 16, .rank = 1,
       .shape = {attn_decode_workspace_bytes(k) / 4}},
      {.name = "out", .dtype = ty, .align = 16,
       .shape = {k->batch, k->heads, k->seq_q, d}},
  };
  MlirNamedAttribute extra[] = {
      attn_b_named(b, "decode", decode_info(b, k)),
  };
  MlirAttribute launch = attn_k_launch_attr(b, "decode-combine", grid,
                                            ATTN_DECODE_THREADS, 0, 2, params,
                                            1, extra);
  MlirNamedAttribute attrs[4];
  intptr_t na = attn_k_kernel_attrs(b, ATTN_DECODE_THREADS, launch, attrs);
  MlirType types[2] = {b->t.ptr, b->t.ptr};
  MlirAttribute args[2] = {noalias(b, "llvm.readonly"),
                           noalias(b, "llvm.writeonly")};
  struct attn_b_func f;
  attn_k_llvm_func_open_typed(b, &f, name, 2, types, args, na, attrs);
  MlirValue part = attn_b_func_arg(&f, 0), out = attn_b_func_arg(&f, 1);
  MlirValue ninf = attn_b_f32(b, -INFINITY), zero = attn_b_f32(b, 0.0f);
  MlirValue tid = attn_k_sreg(b, "tid.x");
  MlirValue lane = attn_k_andc(b, tid, 31);
  MlirValue row = attn_b_addi(b, attn_k_mulc(b, attn_k_sreg(b, "ctaid.x"), NW),
                              attn_k_divc(b, tid, 32));
  MlirValue act = attn_b_andi(b, attn_k_cmpc(b, ATTN_B_ULT, row, rows),
                              attn_k_cmpc(b, ATTN_B_ULT, lane, d / 8));
  struct attn_b_if s;
  attn_b_if_open(b, &s, act, 0, NULL, false);
  int64_t lse_base = rows * k->splits * d;
  MlirValue slot0 = attn_b_muli(b, attn_b_cast(b, "arith.extui", row, b->t.i64),
                                attn_b_i64(b, k->splits));
  MlirValue lsep = attn_k_gep_elem(
      b, part, attn_b_addi(b, attn_b_i64(b, lse_base), slot0), b->t.f32);
  struct attn_b_for l1;
  attn_b_for_open(b, &l1, attn_b_index(b, 0), attn_b_index(b, k->splits),
                  attn_b_index(b, 1), 1, &ninf);
  MlirValue si = attn_b_cast(b, "arith.index_cast", l1.iv, b->t.i64);
  MlirValue lv = attn_k_load(b, attn_k_gep_elem(b, lsep, si, b->t.f32), b->t.f32);
  MlirValue mx = attn_b_maxnumf(b, l1.args[0], lv);
  attn_b_for_close(b, &l1, 1, &mx);
  MlirValue mm = l1.results[0];
  MlirValue mu = attn_b_select(b, attn_b_cmpf(b, ATTN_B_F_OEQ, mm, ninf), zero,
                               mm);
  MlirValue init[9];
  for (int i = 0; i < 9; ++i)
    init[i] = zero;
  struct attn_b_for l2;
  attn_b_for_open(b, &l2, attn_b_index(b, 0), attn_b_index(b, k->splits),
                  attn_b_index(b, 1), 9, init);
  si = attn_b_cast(b, "arith.index_cast", l2.iv, b->t.i64);
  lv = attn_k_load(b, attn_k_gep_elem(b, lsep, si, b->t.f32), b->t.f32);
  MlirValue live = attn_b_cmpf(b, ATTN_B_F_ONE, lv, ninf);
  MlirValue w = attn_b_select(b, live, attn_k_ex2(b, attn_b_subf(b, lv, mu)),
                              zero);
  MlirValue y[9];
  y[0] = attn_b_addf(b, l2.args[0], w);
  MlirValue off = attn_b_addi(
      b, attn_b_muli(b, attn_b_addi(b, slot0, si), attn_b_i64(b, d)),
      attn_b_cast(b, "arith.extui", attn_k_mulc(b, lane, 8), b->t.i64));
  MlirValue p = attn_k_gep_elem(b, part, off, b->t.f32);
  for (int hv = 0; hv < 2; ++hv) {
    MlirValue v = attn_k_gemm_load_vec(
        b, attn_k_gep_elem(b, p, attn_b_i64(b, 4 * hv), b->t.f32), 4, b->t.f32,
        16);
    for (int x = 0; x < 4; ++x) {
      MlirValue opd[2] = {v, attn_b_i32(b, x)};
      MlirValue fx =
          attn_b_op1(b, "llvm.extractelement", b->t.f32, 2, opd, 0, NULL);
      // A dead split's partials were never written: weigh them out by
      // select, not by multiplying (0 * NaN).
      y[1 + hv * 4 + x] = attn_b_select(
          b, live, attn_b_fma(b, fx, w, l2.args[1 + hv * 4 + x]),
          l2.args[1 + hv * 4 + x]);
    }
  }
  attn_b_for_close(b, &l2, 9, y);
  MlirValue lsum = l2.results[0];
  MlirValue inv = attn_b_select(b, attn_b_cmpf(b, ATTN_B_F_OGT, lsum, zero),
                                attn_b_divf(b, attn_b_f32(b, 1.0f), lsum),
                                zero);
  MlirValue w4[4];
  for (int x = 0; x < 4; ++x)
    w4[x] = attn_k_pack2(b, k->bf16,
                         attn_b_mulf(b, l2.results[1 + 2 * x], inv),
                         attn_b_mulf(b, l2.results[2 + 2 * x], inv));
  MlirValue oo = attn_b_addi(
      b, attn_b_muli(b, attn_b_cast(b, "arith.extui", row, b->t.i64),
                     attn_b_i64(b, d)),
      attn_b_cast(b, "arith.extui", attn_k_mulc(b, lane, 8), b->t.i64));
  attn_k_store_vec(b, w4, 4, attn_k_gep_elem(b, out, oo, b->t.i16));
  attn_b_if_close(b, &s, 0, NULL);
  return attn_k_llvm_func_finish(b, &f);
}

bool attn_kernels_build_decode(MlirOperation gpu_module, MlirLocation loc,
                               const struct attn_decode_kernel *k) {
  char why[160];
  if (!attn_decode_supported(k, why, sizeof why))
    return attn_emit_error_atf(loc, "no decode kernel for '%s': %s", k->name,
                               why);
  if (k->splits <= 1)
    return build_split(gpu_module, loc, k, k->name);
  char split[300], combine[300];
  snprintf(split, sizeof split, "%s__split", k->name);
  snprintf(combine, sizeof combine, "%s__combine", k->name);
  return build_split(gpu_module, loc, k, split) &&
         build_combine(gpu_module, loc, k, combine);
}
