//===- hopper_rope.c - RoPE for the Hopper kernels ------------------------===//
//
// The rotary embedding's math, shared by the fused placement (hopper_emit.c
// rotates Q and K tiles in shared memory) and the split and pre placements:
// a kernel of its own that rotates every row of K (or Q) once, before the
// attention kernel, with 16-byte loads and stores and cos/sin stepped down
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
  int lo = attn_ptx_to_index(&p, first), hi = attn_ptx_to_index(&p, end),
      st = attn_ptx_cidx(&p, groups);
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
  int row = attn_ptx_op(&p, "arith.index_cast %%v%d : index to i64", it);
  int off = attn_ptx_op(
      &p, "arith.addi %%v%d, %%v%d : i64",
      attn_ptx_op(&p, "arith.muli %%v%d, %%v%d : i64",
                  attn_ptx_op(&p, "arith.addi %%v%d, %%v%d : i64", head, row),
                  attn_ptx_ci64(&p, k->head_dim * 2)),
      ucol);
  static const char *gep =
      "llvm.getelementptr %%%s[%%v%d] : (!llvm.ptr, i64) -> !llvm.ptr, i8";
  char fmt[160];
  int x1[8], x2[8];
  if (k->interleaved) {
    snprintf(fmt, sizeof fmt, gep, "x", off);
    int pa = attn_ptx_op(&p, "%s", fmt);
    int va =
        attn_ptx_op(&p,
                    "llvm.load %%v%d {alignment = 16 : i64} : !llvm.ptr -> "
                    "vector<4xi32>",
                    pa);
    for (int i = 0; i < 4; ++i)
      attn_ptx_unpack2(&p, vec_elem(&p, va, i), &x1[i], &x2[i]);
  } else {
    snprintf(fmt, sizeof fmt, gep, "x", off);
    int pa = attn_ptx_op(&p, "%s", fmt);
    int offb =
        attn_ptx_op(&p, "arith.addi %%v%d, %%v%d : i64", off,
                    attn_ptx_ci64(&p, k->rotary_dim)); // r/2 columns of 2 bytes
    snprintf(fmt, sizeof fmt, gep, "x", offb);
    int pb = attn_ptx_op(&p, "%s", fmt);
    int va =
        attn_ptx_op(&p,
                    "llvm.load %%v%d {alignment = 16 : i64} : !llvm.ptr -> "
                    "vector<4xi32>",
                    pa);
    int vb =
        attn_ptx_op(&p,
                    "llvm.load %%v%d {alignment = 16 : i64} : !llvm.ptr -> "
                    "vector<4xi32>",
                    pb);
    for (int i = 0; i < 4; ++i) {
      attn_ptx_unpack2(&p, vec_elem(&p, va, i), &x1[2 * i], &x1[2 * i + 1]);
      attn_ptx_unpack2(&p, vec_elem(&p, vb, i), &x2[2 * i], &x2[2 * i + 1]);
    }
  }
  int y1[8], y2[8];
  for (int i = 0; i < nf; ++i) {
    y1[i] = attn_ptx_fsub(&p, attn_ptx_fmul(&p, x1[i], ac[i]),
                          attn_ptx_fmul(&p, x2[i], as[i]));
    y2[i] = attn_ptx_fadd(&p, attn_ptx_fmul(&p, x2[i], ac[i]),
                          attn_ptx_fmul(&p, x1[i], as[i]));
  }
  int undef = attn_ptx_op(&p, "llvm.mlir.undef : vector<4xi32>");
  if (k->interleaved) {
    int v = undef;
    for (int i = 0; i < 4; ++i)
      v = attn_ptx_op(
          &p, "llvm.insertelement %%v%d, %%v%d[%%v%d : i32] : vector<4xi32>",
          attn_ptx_pack2(&p, y1[i], y2[i]), v, attn_ptx_ci32(&p, i));
    snprintf(fmt, sizeof fmt, gep, "x_rot", off);
    int pd = attn_ptx_op(&p, "%s", fmt);
    attn_ptx_line(
        &p,
        "llvm.store %%v%d, %%v%d {alignment = 16 : i64} : vector<4xi32>, "
        "!llvm.ptr",
        v, pd);
  } else {
    int va = undef, vb = undef;
    for (int i = 0; i < 4; ++i) {
      va = attn_ptx_op(
          &p, "llvm.insertelement %%v%d, %%v%d[%%v%d : i32] : vector<4xi32>",
          attn_ptx_pack2(&p, y1[2 * i], y1[2 * i + 1]), va,
          attn_ptx_ci32(&p, i));
      vb = attn_ptx_op(
          &p, "llvm.insertelement %%v%d, %%v%d[%%v%d : i32] : vector<4xi32>",
          attn_ptx_pack2(&p, y2[2 * i], y2[2 * i + 1]), vb,
          attn_ptx_ci32(&p, i));
    }
    snprintf(fmt, sizeof fmt, gep, "x_rot", off);
    int pa = attn_ptx_op(&p, "%s", fmt);
    int offb = attn_ptx_op(&p, "arith.addi %%v%d, %%v%d : i64", off,
                           attn_ptx_ci64(&p, k->rotary_dim));
    snprintf(fmt, sizeof fmt, gep, "x_rot", offb);
    int pb = attn_ptx_op(&p, "%s", fmt);
    attn_ptx_line(
        &p,
        "llvm.store %%v%d, %%v%d {alignment = 16 : i64} : vector<4xi32>, "
        "!llvm.ptr",
        va, pa);
    attn_ptx_line(
        &p,
        "llvm.store %%v%d, %%v%d {alignment = 16 : i64} : vector<4xi32>, "
        "!llvm.ptr",
        vb, pb);
  }
  int nxt[16];
  for (int i = 0; i < nf; ++i) {
    nxt[2 * i] = attn_ptx_fsub(&p, attn_ptx_fmul(&p, ac[i], sc[i]),
                               attn_ptx_fmul(&p, as[i], ss[i]));
    nxt[2 * i + 1] = attn_ptx_fadd(&p, attn_ptx_fmul(&p, as[i], sc[i]),
                                   attn_ptx_fmul(&p, ac[i], ss[i]));
  }
  const char *tys[16];
  for (int i = 0; i < 2 * nf; ++i)
    tys[i] = "f32";
  attn_ptx_yield_list(&p, "scf.yield", nxt, 2 * nf, tys);
  attn_ptx_line(&p, "}");
  attn_ptx_line(&p, "llvm.return");
  attn_strbuf_printf(b, "}\n");
}
