//===- hopper_rope.c - RoPE for the Hopper kernels ------------------------===//
//
// The rotary embedding for the Hopper kernels: its math; the rotation of Q
// and K tiles in shared memory that the attention kernel (hopper_emit.c)
// does for Q, and for K in the fused placement; and the kernel of the split
// and pre placements, which rotates every row of K (or Q) once, before the
// attention kernel, with 16-byte loads and stores. Both step cos/sin down
// the rows by a rotation per step.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/hopper_emit.h"
#include "lib/Transforms/hopper_ptx.h"

#include <math.h>
#include <stdio.h>

//===-- RoPE math ---------------------------------------------------------===//

int attn_hopper_rope_inv_freq(struct attn_ptx *p,
                              const struct attn_hopper_kernel *k, int pair) {
  int pf = attn_ptx_op(p, "arith.uitofp %%v%d : i32 to f64", pair);
  int c = attn_ptx_op(p, "arith.constant %.17e : f64",
                      -2.0 * log2(k->theta) / (double)k->rotary_dim);
  int x = attn_ptx_op(p, "arith.mulf %%v%d, %%v%d : f64", pf, c);
  int y = attn_ptx_op(p, "llvm.call @__nv_exp2(%%v%d) : (f64) -> f64", x);
  return attn_ptx_op(p, "arith.truncf %%v%d : f64 to f32", y);
}

void attn_hopper_rope_pair_cols(struct attn_ptx *p,
                                const struct attn_hopper_kernel *k, int pair,
                                int *c1, int *c2) {
  if (k->interleaved) {
    *c1 = attn_ptx_mulc(p, pair, 2);
    *c2 = attn_ptx_addc(p, *c1, 1);
  } else {
    *c1 = pair;
    *c2 = attn_ptx_addc(p, pair, k->rotary_dim / 2);
  }
}

//===-- RoPE as its own kernel (the split and pre placements) -------------===//

#define ROPE_K_THREADS 128
#define ROPE_K_ROWS 256

/// Units of `words` 4-byte words a thread rotates per row: for rotate-half a
/// pair of 2*words columns at c and c + r/2, else words interleaved pairs.
int attn_hopper_rope_units(const struct attn_hopper_kernel *k, int words) {
  return (int)(k->interleaved ? k->rotary_dim / (2 * words)
                              : k->rotary_dim / (4 * words));
}

bool attn_hopper_rope_k_supported(const struct attn_hopper_kernel *k) {
  int u = attn_hopper_rope_units(k, 4);
  return k->rotary_dim == k->head_dim && u > 0 && ROPE_K_THREADS % u == 0;
}

/// Element i of a vector<words x i32>.
static int vec_elem(struct attn_ptx *p, int v, int words, int i) {
  return attn_ptx_op(p,
                     "llvm.extractelement %%v%d[%%v%d : i32] : vector<%dxi32>",
                     v, attn_ptx_ci32(p, i), words);
}

void attn_hopper_rope_global_setup(struct attn_ptx *p,
                                   const struct attn_hopper_kernel *k,
                                   int unit, int step, int words, int rows,
                                   struct attn_hopper_rope_global *g) {
  g->rows = rows;
  g->unit = unit;
  g->step = step;
  g->words = words;
  g->nf = k->interleaved ? words : 2 * words;
  int p0 = attn_ptx_mulc(p, unit, g->nf);
  int gf = attn_ptx_cf32(p, (float)step);
  for (int i = 0; i < g->nf; ++i) {
    g->f[i] = attn_hopper_rope_inv_freq(p, k, attn_ptx_addc(p, p0, i));
    attn_ptx_sincos(p, attn_ptx_fmul(p, gf, g->f[i]), &g->sc[i], &g->ss[i]);
  }
}

static const char *const gep =
    "llvm.getelementptr %%%s[%%v%d] : (!llvm.ptr, i64) -> !llvm.ptr, i8";

/// The unit of one row at byte offset off of %<x>: its pairs' x1 and x2.
static void load_unit(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                      const char *x, int off, int w, int *x1, int *x2) {
  char fmt[160];
  int al = 4 * w, nv = k->interleaved ? 1 : 2, v[2];
  for (int h = 0; h < nv; ++h) {
    int o = h ? attn_ptx_op(p, "arith.addi %%v%d, %%v%d : i64", off,
                            attn_ptx_ci64(p, k->rotary_dim)) // r/2 columns
              : off;
    snprintf(fmt, sizeof fmt, gep, x, o);
    v[h] = attn_ptx_op(p,
                       "llvm.load %%v%d {alignment = %d : i64} : !llvm.ptr -> "
                       "vector<%dxi32>",
                       attn_ptx_op(p, "%s", fmt), al, w);
  }
  for (int i = 0; i < w; ++i) {
    if (k->interleaved) {
      attn_ptx_unpack2(p, vec_elem(p, v[0], w, i), &x1[i], &x2[i]);
    } else {
      attn_ptx_unpack2(p, vec_elem(p, v[0], w, i), &x1[2 * i], &x1[2 * i + 1]);
      attn_ptx_unpack2(p, vec_elem(p, v[1], w, i), &x2[2 * i], &x2[2 * i + 1]);
    }
  }
}

/// Rotates the unit's pairs (x1, x2) by (cs, sn) and stores them at byte
/// offset off of %<x_rot>.
static void store_unit(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                       const char *x_rot, int off, int w, int nf,
                       const int *x1, const int *x2, const int *cs,
                       const int *sn) {
  int y1[8], y2[8];
  for (int i = 0; i < nf; ++i) {
    y1[i] = attn_ptx_fsub(p, attn_ptx_fmul(p, x1[i], cs[i]),
                          attn_ptx_fmul(p, x2[i], sn[i]));
    y2[i] = attn_ptx_fadd(p, attn_ptx_fmul(p, x2[i], cs[i]),
                          attn_ptx_fmul(p, x1[i], sn[i]));
  }
  char fmt[160];
  int al = 4 * w, nv = k->interleaved ? 1 : 2;
  for (int h = 0; h < nv; ++h) {
    int v = attn_ptx_op(p, "llvm.mlir.undef : vector<%dxi32>", w);
    for (int i = 0; i < w; ++i) {
      int word = k->interleaved ? attn_ptx_pack2(p, y1[i], y2[i])
                 : h ? attn_ptx_pack2(p, y2[2 * i], y2[2 * i + 1])
                     : attn_ptx_pack2(p, y1[2 * i], y1[2 * i + 1]);
      v = attn_ptx_op(
          p, "llvm.insertelement %%v%d, %%v%d[%%v%d : i32] : vector<%dxi32>",
          word, v, attn_ptx_ci32(p, i), w);
    }
    int o = h ? attn_ptx_op(p, "arith.addi %%v%d, %%v%d : i64", off,
                            attn_ptx_ci64(p, k->rotary_dim))
              : off;
    snprintf(fmt, sizeof fmt, gep, x_rot, o);
    attn_ptx_line(
        p,
        "llvm.store %%v%d, %%v%d {alignment = %d : i64} : vector<%dxi32>, "
        "!llvm.ptr",
        v, attn_ptx_op(p, "%s", fmt), al, w);
  }
}

void attn_hopper_rope_global_rows(struct attn_ptx *p,
                                  const struct attn_hopper_kernel *k,
                                  const char *x, const char *x_rot, int head,
                                  int first, int pos_first, int end,
                                  const struct attn_hopper_rope_global *g) {
  int w = g->words, nf = g->nf, unit = g->unit, step = g->step, u = g->rows;
  // cos/sin of the unit's pairs at the first row.
  int c[8], s[8];
  int pos = attn_ptx_op(p, "arith.uitofp %%v%d : i32 to f32", pos_first);
  for (int i = 0; i < nf; ++i)
    attn_ptx_sincos(p, attn_ptx_fmul(p, pos, g->f[i]), &c[i], &s[i]);
  int ucol = attn_ptx_op(p, "arith.extui %%v%d : i32 to i64",
                         attn_ptx_mulc(p, unit, 4 * w));
  int lo = attn_ptx_to_index(p, first), hi = attn_ptx_to_index(p, end),
      st = attn_ptx_cidx(p, (long long)step * u);
  int it = p->next++, res = p->next++;
  int init[16], arg[16];
  for (int i = 0; i < nf; ++i) {
    init[2 * i] = c[i];
    init[2 * i + 1] = s[i];
  }
  attn_ptx_open_for(p, res, it, lo, hi, st, 2 * nf, init, arg, NULL);
  for (int i = 0; i < nf; ++i) {
    c[i] = arg[2 * i];
    s[i] = arg[2 * i + 1];
  }
  // All u rows' loads first (the last rows of a block may lie past end:
  // they load row end - 1 and store nothing), then rotate and store each.
  int row = attn_ptx_from_index(p, it), x1[4][8], x2[4][8], offs[4], in[4];
  for (int r = 0; r < u; ++r) {
    int rr = attn_ptx_addc(p, row, (long long)r * step);
    in[r] = attn_ptx_op(p, "arith.cmpi ult, %%v%d, %%v%d : i32", rr, end);
    if (r)
      rr = attn_ptx_sel(p, in[r], rr, attn_ptx_addc(p, end, -1), "i32");
    int ri = attn_ptx_op(p, "arith.extui %%v%d : i32 to i64", rr);
    offs[r] = attn_ptx_op(
        p, "arith.addi %%v%d, %%v%d : i64",
        attn_ptx_op(p, "arith.muli %%v%d, %%v%d : i64",
                    attn_ptx_op(p, "arith.addi %%v%d, %%v%d : i64", head, ri),
                    attn_ptx_ci64(p, k->head_dim * 2)),
        ucol);
    load_unit(p, k, x, offs[r], w, x1[r], x2[r]);
  }
  for (int r = 0; r < u; ++r) {
    if (r)
      attn_ptx_line(p, "scf.if %%v%d {", in[r]);
    store_unit(p, k, x_rot, offs[r], w, nf, x1[r], x2[r], c, s);
    if (r)
      attn_ptx_line(p, "}");
    // cos/sin `step` rows on.
    for (int i = 0; i < nf; ++i) {
      int cn = attn_ptx_fsub(p, attn_ptx_fmul(p, c[i], g->sc[i]),
                             attn_ptx_fmul(p, s[i], g->ss[i]));
      s[i] = attn_ptx_fadd(p, attn_ptx_fmul(p, s[i], g->sc[i]),
                           attn_ptx_fmul(p, c[i], g->ss[i]));
      c[i] = cn;
    }
  }
  int nxt[16];
  const char *tys[16];
  for (int i = 0; i < nf; ++i) {
    nxt[2 * i] = c[i];
    nxt[2 * i + 1] = s[i];
    tys[2 * i] = tys[2 * i + 1] = "f32";
  }
  attn_ptx_yield_list(p, "scf.yield", nxt, 2 * nf, tys);
  attn_ptx_line(p, "}");
}

void attn_hopper_emit_rope(struct attn_strbuf *b,
                           const struct attn_hopper_kernel *k, bool q) {
  struct attn_ptx p;
  attn_ptx_init(&p, b, k->bf16);
  const char *x = q ? "q" : "k";
  int64_t heads = q ? k->heads : k->kv_heads;
  int64_t seq = q ? k->seq_q : k->seq_k;
  int64_t offset = q ? k->rope_offset : k->rope_offset_k;
  int units = attn_hopper_rope_units(k, 4), groups = ROPE_K_THREADS / units;
  struct attn_hopper_rope_global rg;
  attn_strbuf_printf(
      b,
      "llvm.func @%s__rope_%s(%%x: !llvm.ptr, %%x_rot: !llvm.ptr) attributes "
      "{nvvm.kernel, nvvm.maxntid = array<i32: %d, 1, 1>, attn.launch = "
      "{grid = array<i32: %lld, %lld, %lld>, block = array<i32: %d, 1, 1>, "
      "static_shared_bytes = 0 : i64, dynamic_shared_bytes = 0 : i64, "
      "kernel = \"rope-%s\", params = [",
      k->name, x, ROPE_K_THREADS,
      (long long)((seq + ROPE_K_ROWS - 1) / ROPE_K_ROWS), (long long)heads,
      (long long)k->batch, ROPE_K_THREADS, x);
  int64_t shape[4] = {k->batch, heads, seq, k->head_dim};
  char rot[8];
  snprintf(rot, sizeof rot, "%s_rot", x);
  // 16-byte vector loads and stores: attnrt checks the pointers.
  attn_hopper_emit_param(b, x, p.ty, shape, 16);
  attn_strbuf_printf(b, ", ");
  attn_hopper_emit_param(b, rot, p.ty, shape, 16);
  attn_strbuf_printf(b, "]}} {\n");

  int tid = attn_ptx_op(&p, "nvvm.read.ptx.sreg.tid.x : i32");
  int bx = attn_ptx_op(&p, "nvvm.read.ptx.sreg.ctaid.x : i32");
  int h = attn_ptx_op(&p, "nvvm.read.ptx.sreg.ctaid.y : i32");
  int bz = attn_ptx_op(&p, "nvvm.read.ptx.sreg.ctaid.z : i32");
  int unit = attn_ptx_remc(&p, tid, units), g = attn_ptx_divc(&p, tid, units);
  int row0 = attn_ptx_mulc(&p, bx, ROPE_K_ROWS);
  int first = attn_ptx_addi(&p, row0, g);
  int end =
      attn_ptx_op(&p, "arith.minui %%v%d, %%v%d : i32",
                  attn_ptx_addc(&p, row0, ROPE_K_ROWS), attn_ptx_ci32(&p, seq));
  int head = attn_ptx_op(
      &p, "arith.extui %%v%d : i32 to i64",
      attn_ptx_mulc(&p, attn_ptx_addi(&p, attn_ptx_mulc(&p, bz, heads), h),
                    seq));
  attn_hopper_rope_global_setup(&p, k, unit, groups, 4, 1, &rg);
  attn_hopper_rope_global_rows(&p, k, "x", "x_rot", head, first,
                               attn_ptx_addc(&p, first, offset), end, &rg);
  attn_ptx_line(&p, "llvm.return");
  attn_strbuf_printf(b, "}\n");
}

//===-- The ahead placement: Q and K rotated once, inside the attention kernel //
//
// The queue holds, for each K/V head g (batch-major), its K blocks, then the
// query blocks of its query heads, longest first: the order in which the
// persistent schedule's tiles (heads-major, longest first) need them.

/// Query blocks of a head and the chunks of one K/V head.
static int64_t query_blocks(const struct attn_hopper_kernel *k) {
  return (k->seq_q + k->block_m - 1) / k->block_m;
}
static int64_t key_blocks(const struct attn_hopper_kernel *k) {
  return (k->seq_k + k->block_n - 1) / k->block_n;
}
static int64_t group_chunks(const struct attn_hopper_kernel *k) {
  return key_blocks(k) + k->heads / k->kv_heads * query_blocks(k);
}

int64_t attn_hopper_ahead_chunks(const struct attn_hopper_kernel *k) {
  return k->batch * k->kv_heads * group_chunks(k);
}

int64_t attn_hopper_ahead_flag_words(const struct attn_hopper_kernel *k) {
  return 1 + attn_hopper_ahead_chunks(k);
}

int attn_hopper_ahead_k_chunk(struct attn_ptx *p,
                              const struct attn_hopper_kernel *k, int b,
                              int kh, int j) {
  int g = attn_ptx_addi(p, attn_ptx_mulc(p, b, k->kv_heads), kh);
  return attn_ptx_addi(p, attn_ptx_mulc(p, g, group_chunks(k)), j);
}

int attn_hopper_ahead_q_chunk(struct attn_ptx *p,
                              const struct attn_hopper_kernel *k, int b, int h,
                              int qb) {
  int64_t grp = k->heads / k->kv_heads, nq = query_blocks(k);
  int g = attn_ptx_addi(p, attn_ptx_mulc(p, b, k->kv_heads),
                        attn_ptx_divc(p, h, grp));
  int at = attn_ptx_addi(p, attn_ptx_mulc(p, attn_ptx_remc(p, h, grp), nq),
                         attn_ptx_op(p, "arith.subi %%v%d, %%v%d : i32",
                                     attn_ptx_ci32(p, nq - 1), qb));
  return attn_ptx_addi(
      p, attn_ptx_addc(p, attn_ptx_mulc(p, g, group_chunks(k)), key_blocks(k)),
      at);
}

#define ZERO_THREADS 256
// Rows a spare warp's thread loads before it rotates and stores them: the
// loads are latency-bound, so several are in flight at once.
#define AHEAD_ROWS 4

void attn_hopper_emit_zero(struct attn_strbuf *b,
                           const struct attn_hopper_kernel *k) {
  struct attn_ptx p;
  attn_ptx_init(&p, b, k->bf16);
  int64_t n = attn_hopper_ahead_flag_words(k);
  attn_strbuf_printf(
      b,
      "llvm.func @%s__zero(%%x: !llvm.ptr) attributes {nvvm.kernel, "
      "nvvm.maxntid = array<i32: %d, 1, 1>, attn.launch = {grid = "
      "array<i32: %lld, 1, 1>, block = array<i32: %d, 1, 1>, "
      "static_shared_bytes = 0 : i64, dynamic_shared_bytes = 0 : i64, "
      "kernel = \"zero\", params = [",
      k->name, ZERO_THREADS, (long long)((n + ZERO_THREADS - 1) / ZERO_THREADS),
      ZERO_THREADS);
  int64_t shape[4] = {1, 1, 1, n};
  attn_hopper_emit_param(b, "x", "i32", shape, 4);
  attn_strbuf_printf(b, "]}} {\n");
  int tid = attn_ptx_op(&p, "nvvm.read.ptx.sreg.tid.x : i32");
  int bx = attn_ptx_op(&p, "nvvm.read.ptx.sreg.ctaid.x : i32");
  int i = attn_ptx_addi(&p, attn_ptx_mulc(&p, bx, ZERO_THREADS), tid);
  attn_ptx_line(&p, "scf.if %%v%d {", attn_ptx_cmpc(&p, "ult", i, n));
  int ptr = attn_ptx_op(
      &p, "llvm.getelementptr %%x[%%v%d] : (!llvm.ptr, i32) -> !llvm.ptr, i32",
      i);
  attn_ptx_line(&p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr",
                attn_ptx_ci32(&p, 0), ptr);
  attn_ptx_line(&p, "}");
  attn_ptx_line(&p, "llvm.return");
  attn_strbuf_printf(b, "}\n");
}

/// Lane 0 takes the next chunk from the queue at flags; the warp shares it.
static int take_chunk(struct attn_ptx *p, int lane, int flags) {
  const char *tl[] = {"i32", "i64"};
  int ids[] = {lane, flags};
  return attn_ptx_asmv(p, "i32", "=r,r,l",
                       "{ .reg .pred p; setp.eq.u32 p, $1, 0; mov.u32 $0, 0; "
                       "@p atom.relaxed.gpu.global.add.u32 $0, [$2], 1; "
                       "shfl.sync.idx.b32 $0, $0, 0, 0x1f, 0xffffffff; }",
                       2, ids, tl);
}

/// What chunk c rotates: rows [row0, end) of the head whose row 0 is row
/// head (i64) of %q or %k, into %q_rot or %k_rot (src and dst: !llvm.ptr),
/// row0 at position pos0.
struct chunk {
  int src, dst, head, row0, end, pos0;
};

static void decode_chunk(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                         int c, struct chunk *o) {
  int64_t grp = k->heads / k->kv_heads, nq = query_blocks(k),
          nb = key_blocks(k);
  int g = attn_ptx_divc(p, c, group_chunks(k)),
      r = attn_ptx_remc(p, c, group_chunks(k));
  int is_k = attn_ptx_cmpc(p, "ult", r, nb);
  // K: block r of K/V head g.
  int krow0 = attn_ptx_mulc(p, r, k->block_n);
  int khead = attn_ptx_mulc(p, g, k->seq_k);
  // Q: query block nq-1-qi of head h = kvh * grp + hl of batch b.
  int q = attn_ptx_op(p, "arith.subi %%v%d, %%v%d : i32", r,
                      attn_ptx_ci32(p, nb));
  int hl = attn_ptx_divc(p, q, nq), qi = attn_ptx_remc(p, q, nq);
  int bq = attn_ptx_divc(p, g, k->kv_heads),
      h = attn_ptx_addi(p, attn_ptx_mulc(p, attn_ptx_remc(p, g, k->kv_heads), grp),
                        hl);
  int qhead = attn_ptx_mulc(
      p, attn_ptx_addi(p, attn_ptx_mulc(p, bq, k->heads), h), k->seq_q);
  int qrow0 = attn_ptx_mulc(
      p, attn_ptx_op(p, "arith.subi %%v%d, %%v%d : i32",
                     attn_ptx_ci32(p, nq - 1), qi),
      k->block_m);
  o->row0 = attn_ptx_sel(p, is_k, krow0, qrow0, "i32");
  int rows = attn_ptx_sel(p, is_k, attn_ptx_ci32(p, k->block_n),
                          attn_ptx_ci32(p, k->block_m), "i32");
  int len = attn_ptx_sel(p, is_k, attn_ptx_ci32(p, k->seq_k),
                         attn_ptx_ci32(p, k->seq_q), "i32");
  o->end = attn_ptx_op(p, "arith.minui %%v%d, %%v%d : i32",
                       attn_ptx_addi(p, o->row0, rows), len);
  o->head = attn_ptx_op(p, "arith.extui %%v%d : i32 to i64",
                        attn_ptx_sel(p, is_k, khead, qhead, "i32"));
  o->pos0 = attn_ptx_addi(
      p, o->row0,
      attn_ptx_sel(p, is_k, attn_ptx_ci32(p, k->rope_offset_k),
                   attn_ptx_ci32(p, k->rope_offset), "i32"));
  o->src = attn_ptx_op(p, "llvm.select %%v%d, %%k, %%q : i1, !llvm.ptr", is_k);
  o->dst = attn_ptx_op(p, "llvm.select %%v%d, %%k_rot, %%q_rot : i1, !llvm.ptr",
                       is_k);
}

/// Lane 0 asks L2 for chunk c's rows (contiguous) when c is a chunk.
static void prefetch_chunk(struct attn_ptx *p,
                           const struct attn_hopper_kernel *k, int lane,
                           int c) {
  int ok = attn_ptx_op(
      p, "arith.andi %%v%d, %%v%d : i1",
      attn_ptx_cmpc(p, "ult", c, attn_hopper_ahead_chunks(k)),
      attn_ptx_cmpc(p, "eq", lane, 0));
  attn_ptx_line(p, "scf.if %%v%d {", ok);
  struct chunk ch;
  decode_chunk(p, k, c, &ch);
  int row = attn_ptx_op(p, "arith.addi %%v%d, %%v%d : i64", ch.head,
                        attn_ptx_op(p, "arith.extui %%v%d : i32 to i64", ch.row0));
  int off = attn_ptx_op(p, "arith.muli %%v%d, %%v%d : i64", row,
                        attn_ptx_ci64(p, k->head_dim * 2));
  int ptr = attn_ptx_op(
      p, "llvm.getelementptr %%v%d[%%v%d] : (!llvm.ptr, i64) -> !llvm.ptr, i8",
      ch.src, off);
  int bytes = attn_ptx_mulc(
      p, attn_ptx_op(p, "arith.subi %%v%d, %%v%d : i32", ch.end, ch.row0),
      k->head_dim * 2);
  int ids[] = {attn_ptx_op(p, "llvm.ptrtoint %%v%d : !llvm.ptr to i64", ptr),
               bytes};
  const char *t[] = {"i64", "i32"};
  attn_ptx_asmv(p, NULL, "l,r", "cp.async.bulk.prefetch.L2.global [$0], $1;",
                2, ids, t);
  attn_ptx_line(p, "}");
}

void attn_hopper_rope_ahead(struct attn_ptx *p,
                            const struct attn_hopper_kernel *k, int lane,
                            int flags) {
  // 8-byte units: the producer warps have few registers.
  int units = attn_hopper_rope_units(k, 2), step = 32 / units;
  int unit = attn_ptx_remc(p, lane, units), grp = attn_ptx_divc(p, lane, units);
  struct attn_hopper_rope_global rg;
  attn_hopper_rope_global_setup(p, k, unit, step, 2, AHEAD_ROWS, &rg);
  // Each warp holds two chunks: it rotates one while L2 fetches the next.
  int first = take_chunk(p, lane, flags);
  prefetch_chunk(p, k, lane, first);
  int w = p->next++, cur = p->next++, c = p->next++;
  attn_ptx_line(p, "%%v%d = scf.while (%%v%d = %%v%d) : (i32) -> i32 {",
                p->next++, cur, first);
  attn_ptx_line(p, "%%v%d = arith.cmpi ult, %%v%d, %%v%d : i32", w, cur,
                attn_ptx_ci32(p, attn_hopper_ahead_chunks(k)));
  attn_ptx_line(p, "scf.condition(%%v%d) %%v%d : i32", w, cur);
  attn_ptx_line(p, "} do {");
  attn_ptx_line(p, "^bb0(%%v%d: i32):", c);
  int next = take_chunk(p, lane, flags);
  prefetch_chunk(p, k, lane, next);
  struct chunk ch;
  decode_chunk(p, k, c, &ch);
  char src[16], dst[16];
  snprintf(src, sizeof src, "v%d", ch.src);
  snprintf(dst, sizeof dst, "v%d", ch.dst);
  attn_hopper_rope_global_rows(p, k, src, dst, ch.head,
                               attn_ptx_addi(p, ch.row0, grp),
                               attn_ptx_addi(p, ch.pos0, grp), ch.end, &rg);
  // Every lane's rows reach L2 and the async proxy (TMA reads them), then
  // lane 0 flags the chunk.
  attn_ptx_asm0(p, "fence.acq_rel.gpu;");
  attn_ptx_fence_proxy_async(p, true);
  attn_ptx_asm0(p, "bar.warp.sync 0xffffffff;");
  int flag = attn_ptx_op(
      p, "arith.addi %%v%d, %%v%d : i64", flags,
      attn_ptx_op(p, "arith.extui %%v%d : i32 to i64",
                  attn_ptx_mulc(p, attn_ptx_addc(p, c, 1), 4)));
  int ids2[] = {lane, flag};
  const char *tl[] = {"i32", "i64"};
  attn_ptx_asmv(p, NULL, "r,l",
                "{ .reg .pred p; setp.eq.u32 p, $0, 0; "
                "@p st.release.gpu.global.u32 [$1], 1; }",
                2, ids2, tl);
  attn_ptx_line(p, "scf.yield %%v%d : i32", next);
  attn_ptx_line(p, "}");
}

//===-- RoPE in shared memory, inside the attention kernel ----------------===//

/// Consumer warpgroup: rotates its 64 Q rows in shared memory, one pair per
/// item (done once per CTA), then fences for the async proxy.
void attn_hopper_rope_q_pairs(struct attn_ptx *p,
                              const struct attn_hopper_kernel *k, int smem,
                              int wt, int q_row, int cw) {
  int pairs = (int)(k->rotary_dim / 2);
  int lo = attn_ptx_to_index(p, wt), hi = attn_ptx_cidx(p, 64LL * pairs),
      st = attn_ptx_cidx(p, 128);
  int it = p->next++;
  attn_ptx_line(p, "scf.for %%v%d = %%v%d to %%v%d step %%v%d {", it, lo, hi,
                st);
  int item = attn_ptx_from_index(p, it);
  int row = attn_ptx_divc(p, item, pairs), pair = attn_ptx_remc(p, item, pairs);
  int c1, c2;
  attn_hopper_rope_pair_cols(p, k, pair, &c1, &c2);
  int tile_row = attn_ptx_addi(p, attn_ptx_mulc(p, cw, 64), row);
  int pos = attn_ptx_addi(p, attn_ptx_addc(p, q_row, k->rope_offset), tile_row);
  int angle =
      attn_ptx_fmul(p, attn_ptx_op(p, "arith.uitofp %%v%d : i32 to f32", pos),
                    attn_hopper_rope_inv_freq(p, k, pair));
  int cs, sn;
  attn_ptx_sincos(p, angle, &cs, &sn);
  int a1 = attn_ptx_smem_ptr(
      p, smem, attn_ptx_swz(p, attn_ptx_ci32(p, 0), k->block_m, tile_row, c1));
  int a2 = attn_ptx_smem_ptr(
      p, smem, attn_ptx_swz(p, attn_ptx_ci32(p, 0), k->block_m, tile_row, c2));
  int x1 = attn_ptx_to_f32_16(
      p, attn_ptx_op(p, "llvm.load %%v%d : !llvm.ptr<3> -> i16", a1));
  int x2 = attn_ptx_to_f32_16(
      p, attn_ptx_op(p, "llvm.load %%v%d : !llvm.ptr<3> -> i16", a2));
  int y1 = attn_ptx_fsub(p, attn_ptx_fmul(p, x1, cs), attn_ptx_fmul(p, x2, sn));
  int y2 = attn_ptx_fadd(p, attn_ptx_fmul(p, x2, cs), attn_ptx_fmul(p, x1, sn));
  attn_ptx_line(p, "llvm.store %%v%d, %%v%d : i16, !llvm.ptr<3>",
                attn_ptx_from_f32_16(p, y1), a1);
  attn_ptx_line(p, "llvm.store %%v%d, %%v%d : i16, !llvm.ptr<3>",
                attn_ptx_from_f32_16(p, y2), a2);
  attn_ptx_line(p, "}");
  attn_ptx_fence_proxy_async(p, false);
}

int attn_hopper_rope_slots(const struct attn_hopper_kernel *k) {
  return (int)(k->rotary_dim / 4);
}

/// Thread rt of nthreads owns slot rt % slots and rows rt / slots + i *
/// (nthreads / slots).
void attn_hopper_rope_rows_setup(struct attn_ptx *p,
                                 const struct attn_hopper_kernel *k, int rt,
                                 int nthreads,
                                 struct attn_hopper_rope_rows *r) {
  int slots = attn_hopper_rope_slots(k);
  r->groups = nthreads / slots;
  int slot = attn_ptx_remc(p, rt, slots);
  r->g = attn_ptx_divc(p, rt, slots);
  int p0 = attn_ptx_mulc(p, slot, 2), p1 = attn_ptx_addc(p, p0, 1);
  r->f0 = attn_hopper_rope_inv_freq(p, k, p0);
  r->f1 = attn_hopper_rope_inv_freq(p, k, p1);
  if (k->interleaved) {
    r->slot_c1 = attn_ptx_mulc(p, slot, 4);       // pair p0: (4s, 4s+1)
    r->slot_c2 = attn_ptx_addc(p, r->slot_c1, 2); // pair p1: (4s+2, 4s+3)
  } else {
    r->slot_c1 = attn_ptx_mulc(p, slot, 2); // x1 of p0, p1: (2s, 2s+1)
    r->slot_c2 = attn_ptx_addc(p, r->slot_c1, k->rotary_dim / 2);
  }
  int gf = attn_ptx_cf32(p, (float)r->groups);
  attn_ptx_sincos(p, attn_ptx_fmul(p, gf, r->f0), &r->step_c0, &r->step_s0);
  attn_ptx_sincos(p, attn_ptx_fmul(p, gf, r->f1), &r->step_c1, &r->step_s1);
}

/// Rotates rows [first, first + nrows) of a swizzled tile of tile_rows rows
/// at tile_base (i32 offset); row `first` has position pos_first.
void attn_hopper_rope_rows(struct attn_ptx *p,
                           const struct attn_hopper_kernel *k, int smem,
                           int tile_base, int tile_rows, int first, int nrows,
                           int pos_first,
                           const struct attn_hopper_rope_rows *r) {
  int pos = attn_ptx_op(p, "arith.uitofp %%v%d : i32 to f32",
                        attn_ptx_addi(p, pos_first, r->g));
  int c0, s0, c1, s1;
  attn_ptx_sincos(p, attn_ptx_fmul(p, pos, r->f0), &c0, &s0);
  attn_ptx_sincos(p, attn_ptx_fmul(p, pos, r->f1), &c1, &s1);
  int lo = attn_ptx_to_index(p, attn_ptx_addi(p, first, r->g));
  int hi = attn_ptx_to_index(p, attn_ptx_addc(p, first, nrows)),
      st = attn_ptx_cidx(p, r->groups);
  int it = p->next++, ac0 = p->next++, as0 = p->next++, ac1 = p->next++,
      as1 = p->next++;
  int res = p->next++;
  attn_ptx_line(
      p,
      "%%v%d:4 = scf.for %%v%d = %%v%d to %%v%d step %%v%d iter_args(%%v%d = "
      "%%v%d, %%v%d = %%v%d, %%v%d = %%v%d, %%v%d = %%v%d) -> (f32, f32, "
      "f32, f32) {",
      res, it, lo, hi, st, ac0, c0, as0, s0, ac1, c1, as1, s1);
  int row = attn_ptx_from_index(p, it);
  int pa = attn_ptx_smem_ptr(
      p, smem, attn_ptx_swz(p, tile_base, tile_rows, row, r->slot_c1));
  int pb = attn_ptx_smem_ptr(
      p, smem, attn_ptx_swz(p, tile_base, tile_rows, row, r->slot_c2));
  int wa = attn_ptx_op(p, "llvm.load %%v%d : !llvm.ptr<3> -> i32", pa);
  int wb = attn_ptx_op(p, "llvm.load %%v%d : !llvm.ptr<3> -> i32", pb);
  int alo, ahi, blo, bhi;
  attn_ptx_unpack2(p, wa, &alo, &ahi);
  attn_ptx_unpack2(p, wb, &blo, &bhi);
  int nalo, nahi, nblo, nbhi;
  if (k->interleaved) {
    nalo = attn_ptx_fsub(p, attn_ptx_fmul(p, alo, ac0),
                         attn_ptx_fmul(p, ahi, as0));
    nahi = attn_ptx_fadd(p, attn_ptx_fmul(p, ahi, ac0),
                         attn_ptx_fmul(p, alo, as0));
    nblo = attn_ptx_fsub(p, attn_ptx_fmul(p, blo, ac1),
                         attn_ptx_fmul(p, bhi, as1));
    nbhi = attn_ptx_fadd(p, attn_ptx_fmul(p, bhi, ac1),
                         attn_ptx_fmul(p, blo, as1));
  } else {
    nalo = attn_ptx_fsub(p, attn_ptx_fmul(p, alo, ac0),
                         attn_ptx_fmul(p, blo, as0));
    nblo = attn_ptx_fadd(p, attn_ptx_fmul(p, blo, ac0),
                         attn_ptx_fmul(p, alo, as0));
    nahi = attn_ptx_fsub(p, attn_ptx_fmul(p, ahi, ac1),
                         attn_ptx_fmul(p, bhi, as1));
    nbhi = attn_ptx_fadd(p, attn_ptx_fmul(p, bhi, ac1),
                         attn_ptx_fmul(p, ahi, as1));
  }
  attn_ptx_line(p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr<3>",
                attn_ptx_pack2(p, nalo, nahi), pa);
  attn_ptx_line(p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr<3>",
                attn_ptx_pack2(p, nblo, nbhi), pb);
  int n0 = attn_ptx_fsub(p, attn_ptx_fmul(p, ac0, r->step_c0),
                         attn_ptx_fmul(p, as0, r->step_s0));
  int m0 = attn_ptx_fadd(p, attn_ptx_fmul(p, as0, r->step_c0),
                         attn_ptx_fmul(p, ac0, r->step_s0));
  int n1 = attn_ptx_fsub(p, attn_ptx_fmul(p, ac1, r->step_c1),
                         attn_ptx_fmul(p, as1, r->step_s1));
  int m1 = attn_ptx_fadd(p, attn_ptx_fmul(p, as1, r->step_c1),
                         attn_ptx_fmul(p, ac1, r->step_s1));
  attn_ptx_line(p, "scf.yield %%v%d, %%v%d, %%v%d, %%v%d : f32, f32, f32, f32",
                n0, m0, n1, m1);
  attn_ptx_line(p, "}");
}
