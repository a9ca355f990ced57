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
#include "lib/Transforms/hopper_launch.h"
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

/// Units of 16 bytes a thread rotates per row: a chunk pair (cols c..c+7 and
/// c + r/2 ..) for rotate-half, one chunk (4 interleaved pairs) otherwise.
static int rope_k_units(const struct attn_hopper_kernel *k) {
  return (int)(k->interleaved ? k->rotary_dim / 8 : k->rotary_dim / 16);
}

bool attn_hopper_rope_k_supported(const struct attn_hopper_kernel *k) {
  int u = rope_k_units(k);
  return k->rotary_dim == k->head_dim && u > 0 && ROPE_K_THREADS % u == 0;
}

static int vec_elem(struct attn_ptx *p, int v, int i) {
  return attn_ptx_op(p,
                     "llvm.extractelement %%v%d[%%v%d : i32] : vector<4xi32>",
                     v, attn_ptx_ci32(p, i));
}

/// Byte offset of row `row` (i32) of head `head` (i64, its first row), plus
/// the thread's column offset ucol (i64).
static int row_offset(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                      int head, int row, int ucol) {
  int r64 = attn_ptx_op(p, "arith.extui %%v%d : i32 to i64", row);
  return attn_ptx_op(
      p, "arith.addi %%v%d, %%v%d : i64",
      attn_ptx_op(p, "arith.muli %%v%d, %%v%d : i64",
                  attn_ptx_op(p, "arith.addi %%v%d, %%v%d : i64", head, r64),
                  attn_ptx_ci64(p, k->head_dim * 2)),
      ucol);
}

static const char *const rope_gep =
    "llvm.getelementptr %%%s[%%v%d] : (!llvm.ptr, i64) -> !llvm.ptr, i8";

/// Pointer `x` or `x_rot` plus off (i64), and, for rotate-half, its partner
/// r/2 columns on.
static void row_ptrs(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                     const char *buf, int off, int *pa, int *pb) {
  char fmt[160];
  snprintf(fmt, sizeof fmt, rope_gep, buf, off);
  *pa = attn_ptx_op(p, "%s", fmt);
  *pb = *pa; // interleaved: one 16-byte span, so no second pointer
  if (k->interleaved)
    return;
  int offb = attn_ptx_op(p, "arith.addi %%v%d, %%v%d : i64", off,
                         attn_ptx_ci64(p, k->rotary_dim)); // r/2 cols, 2 B
  snprintf(fmt, sizeof fmt, rope_gep, buf, offb);
  *pb = attn_ptx_op(p, "%s", fmt);
}

static int load16(struct attn_ptx *p, int ptr) {
  return attn_ptx_op(p,
                     "llvm.load %%v%d {alignment = 16 : i64} : !llvm.ptr -> "
                     "vector<4xi32>",
                     ptr);
}

/// A thread's 16 bytes (interleaved: 4 pairs) or 2 x 16 bytes (rotate-half:
/// 8 pairs) of the row at off, as the pairs' f32 x1 and x2.
static void load_row(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                     int off, int *x1, int *x2) {
  int pa, pb;
  row_ptrs(p, k, "x", off, &pa, &pb);
  int va = load16(p, pa);
  if (k->interleaved) {
    for (int i = 0; i < 4; ++i)
      attn_ptx_unpack2(p, vec_elem(p, va, i), &x1[i], &x2[i]);
    return;
  }
  int vb = load16(p, pb);
  for (int i = 0; i < 4; ++i) {
    attn_ptx_unpack2(p, vec_elem(p, va, i), &x1[2 * i], &x1[2 * i + 1]);
    attn_ptx_unpack2(p, vec_elem(p, vb, i), &x2[2 * i], &x2[2 * i + 1]);
  }
}

/// Stores load_row's pairs, rotated (y1, y2), into x_rot at off.
static void store_row(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                      int off, const int *y1, const int *y2) {
  int pa, pb;
  row_ptrs(p, k, "x_rot", off, &pa, &pb);
  int wa[4], wb[4];
  if (k->interleaved) {
    for (int i = 0; i < 4; ++i)
      wa[i] = attn_ptx_pack2(p, y1[i], y2[i]);
    attn_ptx_store_vec(p, wa, 4, "i32", pa);
    return;
  }
  for (int i = 0; i < 4; ++i) {
    wa[i] = attn_ptx_pack2(p, y1[2 * i], y1[2 * i + 1]);
    wb[i] = attn_ptx_pack2(p, y2[2 * i], y2[2 * i + 1]);
  }
  attn_ptx_store_vec(p, wa, 4, "i32", pa);
  attn_ptx_store_vec(p, wb, 4, "i32", pb);
}

void attn_hopper_emit_rope(struct attn_strbuf *b,
                           const struct attn_hopper_kernel *k, bool q) {
  struct attn_ptx p;
  attn_ptx_init(&p, b, k->bf16);
  const char *x = q ? "q" : "k";
  int64_t heads = q ? k->heads : k->kv_heads;
  int64_t seq = q ? k->seq_q : k->seq_k;
  int64_t offset = q ? k->rope_offset : k->rope_offset_k;
  int units = rope_k_units(k), groups = ROPE_K_THREADS / units;
  int nf = k->interleaved ? 4 : 8; // frequencies per unit
  attn_strbuf_printf(
      b,
      // x and x_rot are distinct buffers: the loads of the next rows may
      // pass the stores of this one.
      "llvm.func @%s__rope_%s(%%x: !llvm.ptr {llvm.noalias, llvm.readonly}, "
      "%%x_rot: !llvm.ptr {llvm.noalias, llvm.writeonly}) attributes "
      "{nvvm.kernel, nvvm.maxntid = array<i32: %d, 1, 1>, ",
      k->name, x, ROPE_K_THREADS);
  int64_t grid[3] = {(seq + ROPE_K_ROWS - 1) / ROPE_K_ROWS, heads, k->batch};
  char kind[8];
  snprintf(kind, sizeof kind, "rope-%s", x);
  attn_hopper_emit_launch_head(b, kind, grid, ROPE_K_THREADS, 0);
  int64_t shape[4] = {k->batch, heads, seq, k->head_dim};
  char rot[8];
  snprintf(rot, sizeof rot, "%s_rot", x);
  // 16-byte vector loads and stores: attnrt checks the pointers.
  attn_hopper_emit_param(b, x, p.ty, 4, shape, 16);
  attn_strbuf_printf(b, ", ");
  attn_hopper_emit_param(b, rot, p.ty, 4, shape, 16);
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
  // Frequencies of the unit's pairs, cos/sin at the first row and per step.
  int p0 = attn_ptx_mulc(&p, unit, nf);
  int c[8], s[8], sc[8], ss[8];
  int pos = attn_ptx_op(&p, "arith.uitofp %%v%d : i32 to f32",
                        attn_ptx_addc(&p, first, offset));
  int gf = attn_ptx_cf32(&p, (float)groups);
  for (int i = 0; i < nf; ++i) {
    int f = attn_hopper_rope_inv_freq(&p, k, attn_ptx_addc(&p, p0, i));
    attn_ptx_sincos(&p, attn_ptx_fmul(&p, pos, f), &c[i], &s[i]);
    attn_ptx_sincos(&p, attn_ptx_fmul(&p, gf, f), &sc[i], &ss[i]);
  }
  int head = attn_ptx_op(
      &p, "arith.extui %%v%d : i32 to i64",
      attn_ptx_mulc(&p, attn_ptx_addi(&p, attn_ptx_mulc(&p, bz, heads), h),
                    seq));
  int ucol = attn_ptx_op(&p, "arith.extui %%v%d : i32 to i64",
                         attn_ptx_mulc(&p, unit, 16));
  // Two rows per iteration (row and row + groups), so that each thread has
  // four 16-byte loads in flight rather than two: the kernel is bound by
  // memory latency. cos/sin step by one row, twice per iteration.
  int lo = attn_ptx_to_index(&p, first), hi = attn_ptx_to_index(&p, end),
      st = attn_ptx_cidx(&p, 2 * groups);
  int it = p.next++, res = p.next++;
  int ac[8], as[8], init[16], arg[16];
  for (int i = 0; i < nf; ++i) {
    init[2 * i] = c[i];
    init[2 * i + 1] = s[i];
  }
  attn_ptx_open_for(&p, res, it, lo, hi, st, 2 * nf, init, arg, NULL);
  for (int i = 0; i < nf; ++i) {
    ac[i] = arg[2 * i];
    as[i] = arg[2 * i + 1];
  }
  int row = attn_ptx_op(&p, "arith.index_cast %%v%d : index to i32", it);
  // The second row, when it is past the end, loads the first again and
  // stores nothing.
  int row2 = attn_ptx_addc(&p, row, groups);
  int has2 = attn_ptx_cmp(&p, "ult", row2, end);
  int row2c = attn_ptx_sel(&p, has2, row2, row, "i32");
  int off = row_offset(&p, k, head, row, ucol);
  int off2 = row_offset(&p, k, head, row2c, ucol);
  int x1[8], x2[8], z1[8], z2[8];
  load_row(&p, k, off, x1, x2);
  load_row(&p, k, off2, z1, z2);
  int y1[8], y2[8], bc[8], bs[8];
  for (int i = 0; i < nf; ++i) {
    attn_ptx_rotate(&p, x1[i], x2[i], ac[i], as[i], &y1[i], &y2[i]);
    attn_ptx_rotate(&p, ac[i], as[i], sc[i], ss[i], &bc[i], &bs[i]);
  }
  store_row(&p, k, off, y1, y2);
  for (int i = 0; i < nf; ++i)
    attn_ptx_rotate(&p, z1[i], z2[i], bc[i], bs[i], &y1[i], &y2[i]);
  attn_ptx_line(&p, "scf.if %%v%d {", has2);
  store_row(&p, k, off2, y1, y2);
  attn_ptx_line(&p, "}");
  int nxt[16];
  for (int i = 0; i < nf; ++i) {
    attn_ptx_rotate(&p, bc[i], bs[i], sc[i], ss[i], &nxt[2 * i],
                    &nxt[2 * i + 1]);
  }
  const char *tys[16];
  for (int i = 0; i < 2 * nf; ++i)
    tys[i] = "f32";
  attn_ptx_yield_list(&p, "scf.yield", nxt, 2 * nf, tys);
  attn_ptx_line(&p, "}");
  attn_ptx_line(&p, "llvm.return");
  attn_strbuf_printf(b, "}\n");
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
      attn_ptx_fmul(p, attn_ptx_op(p, "arith.sitofp %%v%d : i32 to f32", pos),
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
  int y1, y2;
  attn_ptx_rotate(p, x1, x2, cs, sn, &y1, &y2);
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
  r->sbase32 = -1;
  r->turns0 = r->turns1 = -1;
  r->turns32 = false;
  int gf = attn_ptx_cf32(p, (float)r->groups);
  attn_ptx_sincos(p, attn_ptx_fmul(p, gf, r->f0), &r->step_c0, &r->step_s0);
  attn_ptx_sincos(p, attn_ptx_fmul(p, gf, r->f1), &r->step_c1, &r->step_s1);
}

void attn_hopper_rope_rows_turns(struct attn_ptx *p,
                                 struct attn_hopper_rope_rows *r) {
  int inv = attn_ptx_op(p, "arith.constant %.17e : f64", 1.0 / ATTN_PTX_TWO_PI);
  int *f[2] = {&r->f0, &r->f1}, *tu[2] = {&r->turns0, &r->turns1};
  for (int i = 0; i < 2; ++i)
    *tu[i] = attn_ptx_op(p, "arith.mulf %%v%d, %%v%d : f64",
                         attn_ptx_op(p, "arith.extf %%v%d : f32 to f64", *f[i]),
                         inv);
}

/// The MUFU's cos and sin of frac (f32) turns, frac in [-1/2, 1/2].
static void mufu_sincos(struct attn_ptx *p, int frac, int *c, int *s) {
  int a = attn_ptx_fmul(p, frac, attn_ptx_cf32(p, (float)ATTN_PTX_TWO_PI));
  const char *ty[] = {"f32"};
  *c = attn_ptx_asmv(p, "f32", "=f,f", "cos.approx.f32 $0, $1;", 1, &a, ty);
  *s = attn_ptx_asmv(p, "f32", "=f,f", "sin.approx.f32 $0, $1;", 1, &a, ty);
}

/// cos and sin of pos (i32) times a frequency given in turns per position
/// (f64): the angle's fraction of a turn in f64, exact to 2^-29 turns for
/// any position below 2^24, then the MUFU's sin/cos on [-pi, pi] (absolute
/// error about 2^-21). Few registers and no branches, where __nv_sinf's
/// reduction of large angles needs many.
static void turns_sincos(struct attn_ptx *p, int pos, int turns, int *c,
                         int *s) {
  int t = attn_ptx_op(p, "arith.mulf %%v%d, %%v%d : f64",
                      attn_ptx_op(p, "arith.sitofp %%v%d : i32 to f64", pos),
                      turns);
  const char *d[] = {"f64"};
  int f = attn_ptx_op(
      p, "arith.subf %%v%d, %%v%d : f64", t,
      attn_ptx_asmv(p, "f64", "=d,d", "cvt.rni.f64.f64 $0, $1;", 1, &t, d));
  mufu_sincos(p, attn_ptx_op(p, "arith.truncf %%v%d : f64 to f32", f), c, s);
}

/// turns_sincos for a frequency in turns per position given as f32, in f32
/// only: the product pos * turns (pos below 2^24, exact in f32) split into
/// hi + lo (lo = fma(pos, turns, -hi), the product's rounding error,
/// exact), so the product's fraction of a turn is hi - rint(hi) + lo to
/// about 2^-24 turns. The turns themselves are an f32 rounding of the
/// frequency over 2 pi, so the angle is off by up to pos * turns * 2^-24
/// turns (at position 16K and frequency 1, about 1e-3 rad; pos * f0 in f32
/// is off by as much).
static void turns32_sincos(struct attn_ptx *p, int pos, int turns, int *c,
                           int *s) {
  int x = attn_ptx_op(p, "arith.sitofp %%v%d : i32 to f32", pos);
  int hi = attn_ptx_fmul(p, x, turns);
  int lo = attn_ptx_op(p, "math.fma %%v%d, %%v%d, %%v%d : f32", x, turns,
                       attn_ptx_op(p, "arith.negf %%v%d : f32", hi));
  const char *ty[] = {"f32"};
  int r = attn_ptx_asmv(p, "f32", "=f,f", "cvt.rni.f32.f32 $0, $1;", 1, &hi,
                        ty);
  int f = attn_ptx_op(p, "arith.addf %%v%d, %%v%d : f32",
                      attn_ptx_op(p, "arith.subf %%v%d, %%v%d : f32", hi, r),
                      lo);
  mufu_sincos(p, f, c, s);
}

typedef void rotate_fn(struct attn_ptx *, int, int, int, int, int *, int *);

/// The rotation, its multiply-adds fused (fma: the kernel's own rows) or not
/// (the interface below; lib/Kernels/rope.c builds the mma kernel's twin).
static rotate_fn *rotation(bool fma) {
  return fma ? attn_ptx_rotate_fma : attn_ptx_rotate;
}

/// The rotation of two words wa and wb (i32) as attn_hopper_rope_rotate_words
/// describes: the four rotated halves, as f32 (word a's low and high, then
/// word b's).
static void rotate_pair_words(struct attn_ptx *p,
                              const struct attn_hopper_kernel *k, int wa,
                              int wb, int c0, int s0, int c1, int s1,
                              int n[4], bool fma) {
  rotate_fn *rot = rotation(fma);
  int alo, ahi, blo, bhi;
  attn_ptx_unpack2(p, wa, &alo, &ahi);
  attn_ptx_unpack2(p, wb, &blo, &bhi);
  if (k->interleaved) {
    rot(p, alo, ahi, c0, s0, &n[0], &n[1]);
    rot(p, blo, bhi, c1, s1, &n[2], &n[3]);
  } else {
    rot(p, alo, blo, c0, s0, &n[0], &n[2]);
    rot(p, ahi, bhi, c1, s1, &n[1], &n[3]);
  }
}

/// attn_hopper_rope_rotate_words, with the rotation's multiply-adds fused
/// (fma) or not.
static void rotate_words(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                         int pa, int pb, int c0, int s0, int c1, int s1,
                         bool fma) {
  int wa = attn_ptx_op(p, "llvm.load %%v%d : !llvm.ptr<3> -> i32", pa);
  int wb = attn_ptx_op(p, "llvm.load %%v%d : !llvm.ptr<3> -> i32", pb);
  int n[4];
  rotate_pair_words(p, k, wa, wb, c0, s0, c1, s1, n, fma);
  attn_ptx_line(p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr<3>",
                attn_ptx_pack2(p, n[0], n[1]), pa);
  attn_ptx_line(p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr<3>",
                attn_ptx_pack2(p, n[2], n[3]), pb);
}

void attn_hopper_rope_rotate_words(struct attn_ptx *p,
                                   const struct attn_hopper_kernel *k, int pa,
                                   int pb, int c0, int s0, int c1, int s1) {
  rotate_words(p, k, pa, pb, c0, s0, c1, s1, false);
}

/// rotate_words (fused) with the words at i32 shared addresses aa and ab,
/// loaded and stored by inline PTX, which takes fewer registers.
static void rotate_words32(struct attn_ptx *p,
                           const struct attn_hopper_kernel *k, int aa, int ab,
                           int c0, int s0, int c1, int s1) {
  const char *t[] = {"i32"};
  int wa = attn_ptx_asmv(p, "i32", "=r,r", "ld.shared.b32 $0, [$1];", 1, &aa,
                         t);
  int wb = attn_ptx_asmv(p, "i32", "=r,r", "ld.shared.b32 $0, [$1];", 1, &ab,
                         t);
  int n[4];
  rotate_pair_words(p, k, wa, wb, c0, s0, c1, s1, n, true);
  attn_ptx_asm_rr(p, "st.shared.b32 [$0], $1;", aa,
                  attn_ptx_pack2(p, n[0], n[1]));
  attn_ptx_asm_rr(p, "st.shared.b32 [$0], $1;", ab,
                  attn_ptx_pack2(p, n[2], n[3]));
}

/// attn_hopper_rope_step_rows, with the multiply-adds fused (fma) or not.
static void step_rows(struct attn_ptx *p, int c0, int s0, int c1, int s1,
                      int sc0, int ss0, int sc1, int ss1, bool fma) {
  rotate_fn *rot = rotation(fma);
  int n0, m0, n1, m1;
  rot(p, c0, s0, sc0, ss0, &n0, &m0);
  rot(p, c1, s1, sc1, ss1, &n1, &m1);
  attn_ptx_line(p, "scf.yield %%v%d, %%v%d, %%v%d, %%v%d : f32, f32, f32, f32",
                n0, m0, n1, m1);
  attn_ptx_line(p, "}");
}

void attn_hopper_rope_step_rows(struct attn_ptx *p, int c0, int s0, int c1,
                                int s1, int sc0, int ss0, int sc1, int ss1) {
  step_rows(p, c0, s0, c1, s1, sc0, ss0, sc1, ss1, false);
}

/// Rotates rows [first, first + nrows) of a swizzled tile of tile_rows rows
/// at tile_base (i32 offset); row `first` has position pos_first.
void attn_hopper_rope_rows(struct attn_ptx *p,
                           const struct attn_hopper_kernel *k, int smem,
                           int tile_base, int tile_rows, int first, int nrows,
                           int pos_first,
                           const struct attn_hopper_rope_rows *r) {
  int pos_i = attn_ptx_addi(p, pos_first, r->g);
  int c0, s0, c1, s1;
  if (r->turns0 >= 0) {
    void (*sc)(struct attn_ptx *, int, int, int *, int *) =
        r->turns32 ? turns32_sincos : turns_sincos;
    sc(p, pos_i, r->turns0, &c0, &s0);
    sc(p, pos_i, r->turns1, &c1, &s1);
  } else {
    // Signed: a causal kernel's first query block starts before row 0
    // (attn_hopper_query_shift), and its rows from 0 on step from there.
    int pos = attn_ptx_op(p, "arith.sitofp %%v%d : i32 to f32", pos_i);
    attn_ptx_sincos(p, attn_ptx_fmul(p, pos, r->f0), &c0, &s0);
    attn_ptx_sincos(p, attn_ptx_fmul(p, pos, r->f1), &c1, &s1);
  }
  // An i32 loop: an index one counts in 64 bits (4 instructions a row
  // where this takes 2).
  int lo = attn_ptx_addi(p, first, r->g);
  int hi = attn_ptx_addc(p, first, nrows), st = attn_ptx_ci32(p, r->groups);
  int it = p->next++, ac0 = p->next++, as0 = p->next++, ac1 = p->next++,
      as1 = p->next++;
  int res = p->next++;
  attn_ptx_line(
      p,
      "%%v%d:4 = scf.for %%v%d = %%v%d to %%v%d step %%v%d iter_args(%%v%d = "
      "%%v%d, %%v%d = %%v%d, %%v%d = %%v%d, %%v%d = %%v%d) -> (f32, f32, "
      "f32, f32) : i32 {",
      res, it, lo, hi, st, ac0, c0, as0, s0, ac1, c1, as1, s1);
  int row = it;
  if (r->sbase32 >= 0) {
    int aa = attn_ptx_addi(
        p, r->sbase32, attn_ptx_swz(p, tile_base, tile_rows, row, r->slot_c1));
    int ab = attn_ptx_addi(
        p, r->sbase32, attn_ptx_swz(p, tile_base, tile_rows, row, r->slot_c2));
    rotate_words32(p, k, aa, ab, ac0, as0, ac1, as1);
  } else {
    int pa = attn_ptx_smem_ptr(
        p, smem, attn_ptx_swz(p, tile_base, tile_rows, row, r->slot_c1));
    int pb = attn_ptx_smem_ptr(
        p, smem, attn_ptx_swz(p, tile_base, tile_rows, row, r->slot_c2));
    rotate_words(p, k, pa, pb, ac0, as0, ac1, as1, true);
  }
  step_rows(p, ac0, as0, ac1, as1, r->step_c0, r->step_s0, r->step_c1,
            r->step_s1, true);
}

//===-- K rotated once per row by the attention kernel (ahead) ------------===//
//
// The producer warpgroup has 32 registers with three consumers, so what
// only the team's leader or the TMA thread needs now and then lives in a
// context in shared memory (offsets below), read where it is used.

#define CTX_BARS 0     // the two buffers' mbarriers
#define CTX_FIRST 16   // u64: the CTA's first ticket
#define CTX_SLOTS 24   // 2 x u32: the next block (relative ticket)
#define CTX_BASE 32    // u64: this launch's first ticket
#define CTX_SYNC 40    // u64: rope_sync
#define CTX_RAW 48     // u64: the tensor map of k
#define CTX_ROT 56     // u64: the tensor map of k_rot
#define CTX_FLAG 64    // u32: this launch's flag value (its number + 1, mod 2^32)
#define CTX_LAUNCH1 72 // u64: this launch's number + 1
#define CTX_STASH 80   // 96 x 12 words: each team thread's rotation constants
#define STASH_WORDS 12 // (two f64 first, so that they are 8-aligned)

int64_t attn_hopper_ahead_ctx_bytes(void) {
  return CTX_STASH + 96 * 4 * STASH_WORDS;
}

int64_t attn_hopper_ahead_blocks(const struct attn_hopper_kernel *k) {
  return k->batch * k->kv_heads * attn_hopper_key_blocks(k);
}

static int ctx_ptr(struct attn_ptx *p, int ctx, int off) {
  return attn_ptx_op(p, "llvm.inttoptr %%v%d : i32 to !llvm.ptr<3>",
                     attn_ptx_addc(p, ctx, off));
}

static int ctx_load(struct attn_ptx *p, int ctx, int off, const char *ty) {
  return attn_ptx_op(p, "llvm.load %%v%d : !llvm.ptr<3> -> %s",
                     ctx_ptr(p, ctx, off), ty);
}

static void ctx_store(struct attn_ptx *p, int ctx, int off, int v,
                      const char *ty) {
  attn_ptx_line(p, "llvm.store %%v%d, %%v%d : %s, !llvm.ptr<3>", v,
                ctx_ptr(p, ctx, off), ty);
}

void attn_hopper_ahead_init(struct attn_ptx *p, int ctx) {
  for (int i = 0; i < 2; ++i)
    attn_ptx_mbar_init(p, attn_ptx_addc(p, ctx, CTX_BARS + 8 * i), 1);
}

int attn_hopper_ahead_start(struct attn_ptx *p,
                            const struct attn_hopper_kernel *k, int ctx,
                            int wt, int sync, int raw_map, int rot_map,
                            int64_t ctas) {
  attn_ptx_line(p, "scf.if %%v%d {", attn_ptx_cmpc(p, "eq", wt, 32));
  int first = attn_ptx_atom_inc64(p, sync);
  int per = attn_ptx_ci64(p, attn_hopper_ahead_blocks(k) + ctas);
  int launch = attn_ptx_op(p, "arith.divui %%v%d, %%v%d : i64", first, per);
  ctx_store(p, ctx, CTX_FIRST, first, "i64");
  ctx_store(p, ctx, CTX_BASE,
            attn_ptx_op(p, "arith.muli %%v%d, %%v%d : i64", launch, per),
            "i64");
  ctx_store(p, ctx, CTX_SYNC, sync, "i64");
  ctx_store(p, ctx, CTX_RAW, raw_map, "i64");
  ctx_store(p, ctx, CTX_ROT, rot_map, "i64");
  int launch1 = attn_ptx_op(p, "arith.addi %%v%d, %%v%d : i64", launch,
                            attn_ptx_ci64(p, 1));
  ctx_store(p, ctx, CTX_LAUNCH1, launch1, "i64");
  ctx_store(p, ctx, CTX_FLAG,
            attn_ptx_op(p, "arith.trunci %%v%d : i64 to i32", launch1), "i32");
  attn_ptx_line(p, "}");
  attn_ptx_asm0(p, "bar.sync 8, 128;");
  int rel = attn_ptx_op(p, "arith.subi %%v%d, %%v%d : i64",
                        ctx_load(p, ctx, CTX_FIRST, "i64"),
                        ctx_load(p, ctx, CTX_BASE, "i64"));
  return attn_ptx_op(p, "arith.trunci %%v%d : i64 to i32", rel);
}

/// The (batch, K head) index b * kv_heads + kh (i32), the order of the
/// queue's blocks and of the counts.
static int ahead_bh(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                    int b, int kh) {
  return attn_ptx_addi(p, attn_ptx_mulc(p, b, k->kv_heads), kh);
}

/// Byte offset in rope_sync of the first per-head counter (u64, after the
/// counter and the flags).
static int64_t counters_off(const struct attn_hopper_kernel *k) {
  return (8 + 4 * attn_hopper_ahead_blocks(k) + 7) / 8 * 8;
}

int64_t attn_hopper_ahead_sync_bytes(const struct attn_hopper_kernel *k) {
  return counters_off(k) + 8 * k->batch * k->kv_heads;
}

/// The i64 address of the counter of (batch, K head) bh (i32).
static int counter_addr(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                        int ctx, int bh) {
  int off = attn_ptx_op(
      p, "arith.extui %%v%d : i32 to i64",
      attn_ptx_addc(p, attn_ptx_mulc(p, bh, 8), counters_off(k)));
  return attn_ptx_op(p, "arith.addi %%v%d, %%v%d : i64",
                     ctx_load(p, ctx, CTX_SYNC, "i64"), off);
}

/// The i64 address of key block c's flag (c: i32) in rope_sync.
static int flag_addr(struct attn_ptx *p, int ctx, int c) {
  int off = attn_ptx_op(p, "arith.extui %%v%d : i32 to i64",
                        attn_ptx_addc(p, attn_ptx_mulc(p, c, 4), 8));
  return attn_ptx_op(p, "arith.addi %%v%d, %%v%d : i64",
                     ctx_load(p, ctx, CTX_SYNC, "i64"), off);
}

int attn_hopper_ahead_head_done(struct attn_ptx *p,
                                const struct attn_hopper_kernel *k, int ctx,
                                int b, int kh) {
  ctx = attn_ptx_pin(p, ctx, "i32", "r");
  int addr = counter_addr(p, k, ctx, ahead_bh(p, k, b, kh));
  const char *t[] = {"i64"};
  int n = attn_ptx_asmv(p, "i64", "=l,l", "ld.acquire.gpu.global.u64 $0, [$1];",
                        1, &addr, t);
  int want = attn_ptx_op(p, "arith.muli %%v%d, %%v%d : i64",
                         ctx_load(p, ctx, CTX_LAUNCH1, "i64"),
                         attn_ptx_ci64(p, attn_hopper_key_blocks(k)));
  int done = attn_ptx_op(p, "arith.cmpi uge, %%v%d, %%v%d : i64", n, want);
  // The rows were written by other CTAs' TMA; this thread's TMA reads them.
  attn_ptx_fence_proxy_async(p, true);
  return done;
}

void attn_hopper_ahead_wait(struct attn_ptx *p,
                            const struct attn_hopper_kernel *k, int ctx,
                            int b, int kh, int j, long long timeout_ns) {
  // Pinned in the TMA thread's loop: the context's addresses are
  // recomputed there rather than kept (64-bit) across it.
  ctx = attn_ptx_pin(p, ctx, "i32", "r");
  int c = attn_ptx_addi(
      p, attn_ptx_mulc(p, ahead_bh(p, k, b, kh), attn_hopper_key_blocks(k)), j);
  // Equal, not at least: the flag is the launch number mod 2^32, and every
  // launch sets every flag, so an old value is never this launch's.
  attn_ptx_wait_until(p, flag_addr(p, ctx, c), "eq",
                      ctx_load(p, ctx, CTX_FLAG, "i32"), "gpu", timeout_ns);
  // The rows were written by another CTA's TMA; this thread's TMA reads them.
  attn_ptx_fence_proxy_async(p, true);
}

/// The TMA coordinates of key block c (i32), region r of the head dim.
static void ahead_coords(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                         int c, int r, int xy[4]) {
  int64_t nb = attn_hopper_key_blocks(k);
  int bh = attn_ptx_divc(p, c, nb);
  xy[0] = attn_ptx_ci32(p, 64 * r);
  xy[1] = attn_ptx_mulc(p, attn_ptx_remc(p, c, nb), k->block_n);
  xy[2] = attn_ptx_remc(p, bh, k->kv_heads);
  xy[3] = attn_ptx_divc(p, bh, k->kv_heads);
}

/// The shared address (i32) of buffer `which` (i32, 0 or 1).
static int ahead_buf(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                     int buf0, int which) {
  return attn_ptx_addi(p, buf0,
                       attn_ptx_mulc(p, which, (int64_t)k->block_n *
                                                   k->head_dim * 2));
}

/// The leader: the TMA load of key block c (i32) into buffer `which`,
/// completing on that buffer's mbarrier.
static void ahead_load(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                       int ctx, int buf0, int c, int which) {
  int bar = attn_ptx_addi(p, attn_ptx_addc(p, ctx, CTX_BARS),
                          attn_ptx_mulc(p, which, 8));
  int dst = ahead_buf(p, k, buf0, which);
  attn_ptx_mbar_expect_tx(p, bar, (int64_t)k->block_n * k->head_dim * 2);
  int map = ctx_load(p, ctx, CTX_RAW, "i64");
  for (int r = 0; r < (int)k->head_dim / 64; ++r) {
    int xy[4];
    ahead_coords(p, k, c, r, xy);
    attn_ptx_tma_load(p, attn_ptx_addc(p, dst, (int64_t)r * k->block_n * 128),
                      map, xy, bar);
  }
}

/// The leader: waits for the team's last TMA store to land, then releases
/// key block c's flag and counts it done for its head (c < 0: none).
static void ahead_publish(struct attn_ptx *p, const struct attn_hopper_kernel *k,
                          int ctx, int c) {
  attn_ptx_bulk_wait(p, 0, false);
  attn_ptx_line(p, "scf.if %%v%d {", attn_ptx_cmpc(p, "sge", c, 0));
  attn_ptx_fence_proxy_async(p, true);
  attn_ptx_store_release(p, flag_addr(p, ctx, c),
                         ctx_load(p, ctx, CTX_FLAG, "i32"));
  int cnt = counter_addr(p, k, ctx, attn_ptx_divc(p, c, attn_hopper_key_blocks(k)));
  const char *t[] = {"i64"};
  attn_ptx_asmv(p, NULL, "l", "red.release.gpu.global.add.u64 [$0], 1;", 1,
                &cnt, t);
  attn_ptx_line(p, "}");
}

/// The fields of attn_hopper_rope_rows a team thread stashes, in order: 3
/// i32, 4 f32, 2 f64.
static int *stash_fields(struct attn_hopper_rope_rows *r, int i) {
  int *v[] = {&r->slot_c1,  &r->slot_c2,  &r->g,     &r->step_c0, &r->step_s0,
              &r->step_c1, &r->step_s1, &r->turns0, &r->turns1};
  return v[i];
}

/// Field i's MLIR type, asm constraint letter and width (b32, b64).
static const char *stash_type(int i) {
  return i < 3 ? "i32" : i < 7 ? "f32" : "f64";
}

static char stash_cons(int i) { return i < 3 ? 'r' : i < 7 ? 'f' : 'd'; }

static const char *stash_bits(int i) { return i < 7 ? "b32" : "b64"; }

/// The shared address (i32) of field i of team thread rt's stash.
static int stash_at(struct attn_ptx *p, int ctx, int rt, int i) {
  int word = i < 7 ? 4 + i : 2 * (i - 7);
  return attn_ptx_addi(p, ctx,
                       attn_ptx_addc(p, attn_ptx_mulc(p, rt, 4 * STASH_WORDS),
                                     CTX_STASH + 4 * word));
}

void attn_hopper_ahead_setup(struct attn_ptx *p,
                             const struct attn_hopper_kernel *k, int wt,
                             int ctx) {
  int rt = attn_ptx_addc(p, wt, -32);
  attn_ptx_line(p, "scf.if %%v%d {", attn_ptx_cmpc(p, "uge", wt, 32));
  struct attn_hopper_rope_rows r;
  attn_hopper_rope_rows_setup(p, k, rt, 96, &r);
  attn_hopper_rope_rows_turns(p, &r);
  for (int i = 0; i < 9; ++i) {
    int ids[] = {stash_at(p, ctx, rt, i), *stash_fields(&r, i)};
    const char *t[] = {"i32", stash_type(i)};
    char cons[8], text[40];
    snprintf(cons, sizeof cons, "r,%c", stash_cons(i));
    snprintf(text, sizeof text, "st.shared.%s [$0], $1;", stash_bits(i));
    attn_ptx_asmv(p, NULL, cons, text, 2, ids, t);
  }
  attn_ptx_line(p, "}");
}

/// The team thread's constants, loaded from its stash where they are used
/// (they would not fit its registers across the loop).
static struct attn_hopper_rope_rows
stash_load(struct attn_ptx *p, const struct attn_hopper_kernel *k, int ctx,
           int rt, int sbase) {
  // Every field set here: the ones the stash holds below, turns0 and turns1
  // (f64) in place of f0 and f1.
  struct attn_hopper_rope_rows r = {.groups = 96 / attn_hopper_rope_slots(k),
                                    .f0 = -1,
                                    .f1 = -1,
                                    .sbase32 = sbase,
                                    .turns32 = false};
  const char *t[] = {"i32"};
  for (int i = 0; i < 9; ++i) {
    int a = stash_at(p, ctx, rt, i);
    char cons[8], text[40];
    snprintf(cons, sizeof cons, "=%c,r", stash_cons(i));
    snprintf(text, sizeof text, "ld.shared.%s $0, [$1];", stash_bits(i));
    *stash_fields(&r, i) =
        attn_ptx_asmv(p, stash_type(i), cons, text, 1, &a, t);
  }
  return r;
}

void attn_hopper_rope_ahead(struct attn_ptx *p,
                            const struct attn_hopper_kernel *k, int rt,
                            int smem, int sbase, int64_t buf_off, int ctx,
                            int first) {
  int64_t blocks = attn_hopper_ahead_blocks(k);
  int leader = attn_ptx_cmpc(p, "eq", rt, 0);
  int buf0 = attn_ptx_addc(p, sbase, buf_off);
  attn_ptx_line(p, "scf.if %%v%d {", leader);
  attn_ptx_line(p, "scf.if %%v%d {", attn_ptx_cmpc(p, "ult", first, blocks));
  ahead_load(p, k, ctx, buf0, first, attn_ptx_ci32(p, 0));
  attn_ptx_line(p, "}");
  attn_ptx_line(p, "}");
  // (i, block, previous block): blocks i = 0, 1, ... alternate buffers; a
  // block is a ticket less this launch's first, valid below blocks.
  int res = p->next++, wi = p->next++, wc = p->next++, wp = p->next++;
  attn_ptx_line(p,
                "%%v%d:3 = scf.while (%%v%d = %%v%d, %%v%d = %%v%d, %%v%d = "
                "%%v%d) : (i32, i32, i32) -> (i32, i32, i32) {",
                res, wi, attn_ptx_ci32(p, 0), wc, first, wp,
                attn_ptx_ci32(p, -1));
  attn_ptx_line(p, "scf.condition(%%v%d) %%v%d, %%v%d, %%v%d : i32, i32, i32",
                attn_ptx_cmpc(p, "ult", wc, blocks), wi, wc, wp);
  attn_ptx_line(p, "} do {");
  int i = p->next++, c = p->next++, prev = p->next++;
  attn_ptx_line(p, "^bb0(%%v%d: i32, %%v%d: i32, %%v%d: i32):", i, c, prev);
  // The context's addresses are recomputed in the loop from ctx rather than
  // kept across it (with buf0 pinned too, ptxas spilled 4 bytes).
  int ctx_out = ctx;
  ctx = attn_ptx_pin(p, ctx, "i32", "r");
  int which = attn_ptx_op(p, "arith.andi %%v%d, %%v%d : i32", i,
                          attn_ptx_ci32(p, 1));
  int other = attn_ptx_op(p, "arith.xori %%v%d, %%v%d : i32", which,
                          attn_ptx_ci32(p, 1));
  int slot_other = attn_ptx_op(
      p, "llvm.inttoptr %%v%d : i32 to !llvm.ptr<3>",
      attn_ptx_addi(p, attn_ptx_addc(p, ctx, CTX_SLOTS),
                    attn_ptx_mulc(p, other, 4)));
  // The leader takes the next ticket and, once the other buffer's store has
  // landed (and its block's flag is out), loads the next block into it.
  attn_ptx_line(p, "scf.if %%v%d {", leader);
  int next = attn_ptx_op(
      p, "arith.trunci %%v%d : i64 to i32",
      attn_ptx_op(p, "arith.subi %%v%d, %%v%d : i64",
                  attn_ptx_atom_inc64(p, ctx_load(p, ctx, CTX_SYNC, "i64")),
                  ctx_load(p, ctx, CTX_BASE, "i64")));
  attn_ptx_line(p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr<3>", next,
                slot_other);
  ahead_publish(p, k, ctx, prev);
  attn_ptx_line(p, "scf.if %%v%d {", attn_ptx_cmpc(p, "ult", next, blocks));
  ahead_load(p, k, ctx, buf0, next, other);
  attn_ptx_line(p, "}");
  attn_ptx_line(p, "}");
  // Everyone: the block lands, is rotated in place, and goes out.
  attn_ptx_mbar_wait(
      p,
      attn_ptx_addi(p, attn_ptx_addc(p, ctx, CTX_BARS),
                    attn_ptx_mulc(p, which, 8)),
      attn_ptx_op(p, "arith.andi %%v%d, %%v%d : i32", attn_ptx_divc(p, i, 2),
                  attn_ptx_ci32(p, 1)));
  int buf = ahead_buf(p, k, attn_ptx_ci32(p, (int)buf_off), which);
  int pos0 = attn_ptx_addc(
      p,
      attn_ptx_mulc(p, attn_ptx_remc(p, c, attn_hopper_key_blocks(k)),
                    k->block_n),
      k->rope_offset_k);
  struct attn_hopper_rope_rows r =
      stash_load(p, k, ctx, rt, attn_ptx_pin(p, sbase, "i32", "r"));
  attn_hopper_rope_rows(p, k, smem, buf, k->block_n, attn_ptx_ci32(p, 0),
                        k->block_n, pos0, &r);
  attn_ptx_fence_proxy_async(p, false);
  attn_ptx_asm0(p, "bar.sync 9, 96;");
  attn_ptx_line(p, "scf.if %%v%d {", leader);
  int src = ahead_buf(p, k, buf0, which);
  int map = ctx_load(p, ctx, CTX_ROT, "i64");
  for (int rg = 0; rg < (int)k->head_dim / 64; ++rg) {
    int xy[4];
    ahead_coords(p, k, c, rg, xy);
    attn_ptx_tma_store(p, attn_ptx_addc(p, src, (int64_t)rg * k->block_n * 128),
                       map, xy);
  }
  attn_ptx_bulk_commit(p);
  attn_ptx_line(p, "}");
  // The next block, which the leader wrote before the barrier.
  int cn = attn_ptx_op(p, "llvm.load %%v%d : !llvm.ptr<3> -> i32", slot_other);
  attn_ptx_line(p, "scf.yield %%v%d, %%v%d, %%v%d : i32, i32, i32",
                attn_ptx_addc(p, i, 1), cn, c);
  attn_ptx_line(p, "}");
  // The last block's flag.
  ctx = ctx_out;
  attn_ptx_line(p, "scf.if %%v%d {", leader);
  ahead_publish(p, k, ctx,
                attn_ptx_op(p, "arith.addi %%v%d#2, %%v%d : i32", res,
                            attn_ptx_ci32(p, 0)));
  attn_ptx_line(p, "}");
}
