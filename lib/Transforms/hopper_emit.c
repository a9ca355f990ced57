//===- hopper_emit.c - The warp-specialised Hopper attention kernel -------===//
//
// Writes one fused attention kernel for sm_90a as MLIR text in the LLVM and
// NVVM dialects (scf/arith for control flow and scalar math), with inline
// PTX for what the dialects do not spell: wgmma with A in registers, TMA
// bulk-tensor loads, mbarriers, setmaxnreg. Structure (FlashAttention-3
// style):
//
//   warpgroup 0 (producer)  thread 0: TMA loads of Q once, then K and V
//                           tiles into a `stages`-deep ring of shared-memory
//                           buffers, each completing on a "full" mbarrier;
//                           warps 1-3: RoPE of each K tile in shared memory
//                           (position recurrence per thread), then "kready"
//   warpgroups 1, 2         64 query rows each: RoPE of their Q rows once,
//   (consumers)             then per key block S = Q.K^T (wgmma, both from
//                           shared memory), mask only on diagonal/tail
//                           blocks, online softmax in exp2 form in registers,
//                           O += P.V (wgmma, P from registers), "empty".
//
// Shared-memory tiles use the 128-byte swizzle that TMA writes and wgmma
// reads: a tile of R rows and D columns is D/64 regions of R rows x 128 B.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/hopper_emit.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PRODUCER_REGS 56
#define PRODUCER_REGS_NO_ROPE 40
#define CONSUMER_REGS 224
#define CONSUMER_REGS_NO_ROPE 232

struct em {
  struct attn_strbuf *b;
  const struct attn_hopper_kernel *k;
  int next;       // SSA counter
  const char *ty; // "bf16" or "f16"
  int ns, no;     // S and O accumulator registers per thread
  int regions;    // D / 64
  // Shared-memory layout (byte offsets from the 1024-aligned base).
  int64_t q_off, kv_off, tile_bytes, bar_off;
};

//===-- Text helpers ------------------------------------------------------===//

static void line(struct em *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void line(struct em *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[4096];
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  attn_strbuf_printf(e->b, "  %s\n", buf);
}

/// Emits `%vN = <text>` and returns N.
static int op(struct em *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int op(struct em *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[4096];
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  int id = e->next++;
  attn_strbuf_printf(e->b, "  %%v%d = %s\n", id, buf);
  return id;
}

static int ci32(struct em *e, long long v) {
  return op(e, "arith.constant %lld : i32", v);
}
static int ci64(struct em *e, long long v) {
  return op(e, "arith.constant %lld : i64", v);
}
static int cidx(struct em *e, long long v) {
  return op(e, "arith.constant %lld : index", v);
}
static int cf32(struct em *e, float v) {
  union {
    float f;
    unsigned u;
  } bits = {v};
  return op(e, "arith.constant 0x%08X : f32", bits.u);
}
static int bin(struct em *e, const char *name, int a, int b, const char *ty) {
  return op(e, "%s %%v%d, %%v%d : %s", name, a, b, ty);
}
static int addi(struct em *e, int a, int b) { return bin(e, "arith.addi", a, b, "i32"); }
static int muli(struct em *e, int a, int b) { return bin(e, "arith.muli", a, b, "i32"); }
static int addc(struct em *e, int a, long long c) { return addi(e, a, ci32(e, c)); }
static int mulc(struct em *e, int a, long long c) { return muli(e, a, ci32(e, c)); }
static int divc(struct em *e, int a, long long c) {
  return bin(e, "arith.divui", a, ci32(e, c), "i32");
}
static int remc(struct em *e, int a, long long c) {
  return bin(e, "arith.remui", a, ci32(e, c), "i32");
}
static int cmpc(struct em *e, const char *pred, int a, long long c) {
  return op(e, "arith.cmpi %s, %%v%d, %%v%d : i32", pred, a, ci32(e, c));
}
static int fmul(struct em *e, int a, int b) { return bin(e, "arith.mulf", a, b, "f32"); }
static int fadd(struct em *e, int a, int b) { return bin(e, "arith.addf", a, b, "f32"); }
static int fsub(struct em *e, int a, int b) { return bin(e, "arith.subf", a, b, "f32"); }
static int fma3(struct em *e, int a, int b, int c) {
  return op(e, "llvm.intr.fma(%%v%d, %%v%d, %%v%d) : (f32, f32, f32) -> f32", a,
            b, c);
}
static int sel(struct em *e, int c, int a, int b, const char *ty) {
  return op(e, "arith.select %%v%d, %%v%d, %%v%d : %s", c, a, b, ty);
}
static int to_index(struct em *e, int a) {
  return op(e, "arith.index_cast %%v%d : i32 to index", a);
}
static int from_index(struct em *e, int a) {
  return op(e, "arith.index_cast %%v%d : index to i32", a);
}

/// Inline PTX with side effects. rty is the result type (NULL for none);
/// operands are ids with their types.
static int asmv(struct em *e, const char *rty, const char *cons,
                const char *text, int n, const int *ids,
                const char *const *tys) {
  struct attn_strbuf *b = e->b;
  int id = -1;
  if (rty) {
    id = e->next++;
    attn_strbuf_printf(b, "  %%v%d = ", id);
  } else {
    attn_strbuf_printf(b, "  ");
  }
  attn_strbuf_printf(b, "llvm.inline_asm has_side_effects \"%s\", \"%s\"",
                     text, cons);
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(b, "%s %%v%d", i ? "," : "", ids[i]);
  attn_strbuf_printf(b, " : (");
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(b, "%s%s", i ? ", " : "", tys[i]);
  attn_strbuf_printf(b, ") -> %s\n", rty ? rty : "()");
  return id;
}

static void asm0(struct em *e, const char *text) {
  asmv(e, NULL, "", text, 0, NULL, NULL);
}

static void asm_r(struct em *e, const char *text, int a) {
  const char *t[] = {"i32"};
  asmv(e, NULL, "r", text, 1, &a, t);
}

static void asm_rr(struct em *e, const char *text, int a, int b) {
  int ids[] = {a, b};
  const char *t[] = {"i32", "i32"};
  asmv(e, NULL, "r,r", text, 2, ids, t);
}

//===-- Hopper instructions -----------------------------------------------===//

static void mbar_init(struct em *e, int addr, int count) {
  asm_rr(e, "mbarrier.init.shared::cta.b64 [$0], $1;", addr, ci32(e, count));
}

static void mbar_expect_tx(struct em *e, int addr, long long bytes) {
  asm_rr(e, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", addr,
         ci32(e, bytes));
}

static void mbar_arrive(struct em *e, int addr) {
  asm_r(e, "mbarrier.arrive.shared::cta.b64 _, [$0];", addr);
}

static void mbar_wait(struct em *e, int addr, int parity) {
  asm_rr(e,
         "{ .reg .pred p; WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, "
         "[$0], $1; @!p bra.uni WAIT; }",
         addr, parity);
}

/// TMA: a 4-D box at coords (c0..c3) from tensor map `map` (i64 generic
/// address) into shared memory at dst, completing on mbarrier bar.
static void tma_load(struct em *e, int dst, int map, const int c[4], int bar) {
  int ids[] = {dst, map, c[0], c[1], c[2], c[3], bar};
  const char *t[] = {"i32", "i64", "i32", "i32", "i32", "i32", "i32"};
  asmv(e, NULL, "r,l,r,r,r,r,r",
       "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::"
       "bytes [$0], [$1, {$2, $3, $4, $5}], [$6];",
       7, ids, t);
}

static int shfl_xor(struct em *e, int v, int lane_mask) {
  int ids[] = {v, ci32(e, lane_mask)};
  const char *t[] = {"f32", "i32"};
  return asmv(e, "f32", "=f,f,r",
              "shfl.sync.bfly.b32 $0, $1, $2, 0x1f, 0xffffffff;", 2, ids, t);
}

static int ex2(struct em *e, int v) {
  const char *t[] = {"f32"};
  return asmv(e, "f32", "=f,f", "ex2.approx.ftz.f32 $0, $1;", 1, &v, t);
}

/// Packs (lo, hi) f32 into one register of two 16-bit floats.
static int pack2(struct em *e, int lo, int hi) {
  int ids[] = {hi, lo};
  const char *t[] = {"f32", "f32"};
  return asmv(e, "i32", "=r,f,f",
              e->k->bf16 ? "cvt.rn.bf16x2.f32 $0, $1, $2;"
                         : "cvt.rn.f16x2.f32 $0, $1, $2;",
              2, ids, t);
}

/// Unpacks a register of two 16-bit floats into (lo, hi) f32.
static void unpack2(struct em *e, int w, int *lo, int *hi) {
  if (e->k->bf16) {
    int l = op(e, "arith.shli %%v%d, %%v%d : i32", w, ci32(e, 16));
    int h = op(e, "arith.andi %%v%d, %%v%d : i32", w, ci32(e, (int32_t)0xffff0000));
    *lo = op(e, "arith.bitcast %%v%d : i32 to f32", l);
    *hi = op(e, "arith.bitcast %%v%d : i32 to f32", h);
    return;
  }
  const char *t[] = {"i32"};
  int r = asmv(e, "!llvm.struct<(f32, f32)>", "=f,=f,r",
               "{ .reg .b16 l, h; mov.b32 {l, h}, $2; cvt.f32.f16 $0, l; "
               "cvt.f32.f16 $1, h; }",
               1, &w, t);
  *lo = op(e, "llvm.extractvalue %%v%d[0] : !llvm.struct<(f32, f32)>", r);
  *hi = op(e, "llvm.extractvalue %%v%d[1] : !llvm.struct<(f32, f32)>", r);
}

static int to_f32_16(struct em *e, int h16) {
  if (e->k->bf16) {
    int w = op(e, "arith.extui %%v%d : i16 to i32", h16);
    int s = op(e, "arith.shli %%v%d, %%v%d : i32", w, ci32(e, 16));
    return op(e, "arith.bitcast %%v%d : i32 to f32", s);
  }
  const char *t[] = {"i16"};
  return asmv(e, "f32", "=f,h", "cvt.f32.f16 $0, $1;", 1, &h16, t);
}

static int from_f32_16(struct em *e, int f) {
  const char *t[] = {"f32"};
  return asmv(e, "i16", "=h,f",
              e->k->bf16 ? "cvt.rn.bf16.f32 $0, $1;" : "cvt.rn.f16.f32 $0, $1;",
              1, &f, t);
}

/// A pointer into shared memory at byte offset off (i32) from the base.
static int smem_ptr(struct em *e, int smem, int off) {
  return op(e,
            "llvm.getelementptr %%v%d[%%v%d] : (!llvm.ptr<3>, i32) -> "
            "!llvm.ptr<3>, i8",
            smem, off);
}

/// Passes values through an empty asm so that the compiler keeps their
/// definitions on this side of the surrounding wgmma fence/wait.
static void reg_fence(struct em *e, int *vals, int n, const char *ty,
                      const char *cons_out) {
  struct attn_strbuf cons = {0};
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&cons, "%s=%s", i ? "," : "", cons_out);
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&cons, ",%d", i);
  char sty[32];
  snprintf(sty, sizeof sty, "!acc_%s%d", ty, n);
  const char *tys[256] = {0};
  for (int i = 0; i < n && i < 256; ++i)
    tys[i] = ty;
  int r = asmv(e, sty, cons.buf ? cons.buf : "", "", n, vals, tys);
  attn_strbuf_free(&cons);
  for (int i = 0; i < n; ++i)
    vals[i] = op(e, "llvm.extractvalue %%v%d[%d] : %s", r, i, sty);
}

/// acc = wgmma(A from shared memory via descA, B via descB) (+ acc when
/// scale_d is non-zero); n accumulators m64nNk16 with N = 2n.
static void wgmma_ss(struct em *e, int *acc, int n, int desc_a, int desc_b,
                     int scale_d, bool trans_b) {
  struct attn_strbuf text = {0}, cons = {0};
  attn_strbuf_printf(&text,
                     "{ .reg .pred p; setp.ne.b32 p, $%d, 0; "
                     "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {",
                     2 * n + 2, 2 * n, e->ty, e->ty);
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&text, "%s$%d", i ? ", " : "", i);
  attn_strbuf_printf(&text, "}, $%d, $%d, p, 1, 1, 0, %d; }", 2 * n,
                     2 * n + 1, trans_b ? 1 : 0);
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&cons, "%s=f", i ? "," : "");
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&cons, ",%d", i);
  attn_strbuf_printf(&cons, ",l,l,r");
  int ids[256 + 3];
  const char *tys[256 + 3];
  for (int i = 0; i < n; ++i) {
    ids[i] = acc[i];
    tys[i] = "f32";
  }
  ids[n] = desc_a;
  ids[n + 1] = desc_b;
  ids[n + 2] = scale_d;
  tys[n] = tys[n + 1] = "i64";
  tys[n + 2] = "i32";
  char sty[32];
  snprintf(sty, sizeof sty, "!acc_f32%d", n);
  int r = asmv(e, sty, cons.buf, text.buf, n + 3, ids, tys);
  for (int i = 0; i < n; ++i)
    acc[i] = op(e, "llvm.extractvalue %%v%d[%d] : %s", r, i, sty);
  attn_strbuf_free(&text);
  attn_strbuf_free(&cons);
}

/// acc += wgmma(A from four registers a[0..3], B via descB, transposed).
static void wgmma_rs(struct em *e, int *acc, int n, const int a[4], int desc_b) {
  struct attn_strbuf text = {0}, cons = {0};
  attn_strbuf_printf(&text,
                     "{ .reg .pred p; setp.ne.b32 p, $%d, 0; "
                     "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {",
                     2 * n + 5, 2 * n, e->ty, e->ty);
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&text, "%s$%d", i ? ", " : "", i);
  attn_strbuf_printf(&text, "}, {$%d, $%d, $%d, $%d}, $%d, p, 1, 1, 1; }",
                     2 * n, 2 * n + 1, 2 * n + 2, 2 * n + 3, 2 * n + 4);
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&cons, "%s=f", i ? "," : "");
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&cons, ",%d", i);
  attn_strbuf_printf(&cons, ",r,r,r,r,l,r");
  int ids[256 + 6];
  const char *tys[256 + 6];
  for (int i = 0; i < n; ++i) {
    ids[i] = acc[i];
    tys[i] = "f32";
  }
  for (int i = 0; i < 4; ++i) {
    ids[n + i] = a[i];
    tys[n + i] = "i32";
  }
  ids[n + 4] = desc_b;
  tys[n + 4] = "i64";
  ids[n + 5] = ci32(e, 1);
  tys[n + 5] = "i32";
  char sty[32];
  snprintf(sty, sizeof sty, "!acc_f32%d", n);
  int r = asmv(e, sty, cons.buf, text.buf, n + 6, ids, tys);
  for (int i = 0; i < n; ++i)
    acc[i] = op(e, "llvm.extractvalue %%v%d[%d] : %s", r, i, sty);
  attn_strbuf_free(&text);
  attn_strbuf_free(&cons);
}

/// The wgmma shared-memory descriptor of address addr (i32): 128-byte
/// swizzle, leading and stride byte offsets lbo and sbo.
static int make_desc(struct em *e, int addr, long long lbo, long long sbo) {
  long long bits = ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (1LL << 62);
  int a4 = op(e, "arith.shrui %%v%d, %%v%d : i32", addr, ci32(e, 4));
  int a14 = op(e, "arith.andi %%v%d, %%v%d : i32", a4, ci32(e, 0x3FFF));
  int wide = op(e, "arith.extui %%v%d : i32 to i64", a14);
  return op(e, "arith.ori %%v%d, %%v%d : i64", wide, ci64(e, bits));
}

static int desc_add(struct em *e, int desc, long long bytes) {
  return bytes ? op(e, "arith.addi %%v%d, %%v%d : i64", desc, ci64(e, bytes >> 4))
               : desc;
}

//===-- Layout ------------------------------------------------------------===//

int64_t attn_hopper_grid_x(const struct attn_hopper_kernel *k) {
  return (k->seq_q + k->block_m - 1) / k->block_m;
}

static void layout(struct em *e) {
  const struct attn_hopper_kernel *k = e->k;
  e->q_off = 0;
  e->kv_off = (int64_t)k->block_m * k->head_dim * 2;
  e->tile_bytes = (int64_t)k->block_n * k->head_dim * 2;
  e->bar_off = e->kv_off + 2 * e->tile_bytes * k->stages;
}

int64_t attn_hopper_smem_bytes(const struct attn_hopper_kernel *k) {
  struct em e = {.k = k};
  layout(&e);
  // qfull, then full, kready and empty per stage; plus slack to align the
  // base to 1024 bytes at run time.
  return e.bar_off + 8 + 24 * k->stages + 1024;
}

/// Shared-memory byte offset (i32) of element (row, col) of a swizzled tile
/// at base with `rows` rows; row and col are i32 values.
static int swz(struct em *e, int base, int rows, int row, int col) {
  int region = divc(e, col, 64);
  int cc = remc(e, col, 64);
  int chunk = op(e, "arith.xori %%v%d, %%v%d : i32", divc(e, cc, 8),
                 op(e, "arith.andi %%v%d, %%v%d : i32", row, ci32(e, 7)));
  int off = addi(e, mulc(e, region, (long long)rows * 128),
                 addi(e, mulc(e, row, 128),
                      addi(e, mulc(e, chunk, 16), mulc(e, remc(e, cc, 8), 2))));
  return addi(e, base, off);
}

//===-- RoPE --------------------------------------------------------------===//

/// inv_freq(p) = theta^(-2p/rotary_dim) for pair index p (i32), in f32.
static int inv_freq(struct em *e, int p) {
  const struct attn_hopper_kernel *k = e->k;
  int pf = op(e, "arith.uitofp %%v%d : i32 to f64", p);
  int c = op(e, "arith.constant %.17e : f64",
             -2.0 * log2(k->theta) / (double)k->rotary_dim);
  int x = op(e, "arith.mulf %%v%d, %%v%d : f64", pf, c);
  int y = op(e, "llvm.call @__nv_exp2(%%v%d) : (f64) -> f64", x);
  return op(e, "arith.truncf %%v%d : f64 to f32", y);
}

static void sincos(struct em *e, int angle, int *c, int *s) {
  *c = op(e, "llvm.call @__nv_cosf(%%v%d) : (f32) -> f32", angle);
  *s = op(e, "llvm.call @__nv_sinf(%%v%d) : (f32) -> f32", angle);
}

/// The two columns of RoPE pair p (i32): rotate-half (p, p + r/2) or
/// interleaved (2p, 2p + 1).
static void pair_cols(struct em *e, int p, int *c1, int *c2) {
  if (e->k->interleaved) {
    *c1 = mulc(e, p, 2);
    *c2 = addc(e, *c1, 1);
  } else {
    *c1 = p;
    *c2 = addc(e, p, e->k->rotary_dim / 2);
  }
}

/// Consumer warpgroup: rotates its 64 Q rows in shared memory, one pair per
/// item (done once per CTA), then fences for the async proxy.
static void rope_q(struct em *e, int smem, int wt, int q_row, int cw) {
  const struct attn_hopper_kernel *k = e->k;
  int pairs = (int)(k->rotary_dim / 2);
  int lo = to_index(e, wt), hi = cidx(e, 64LL * pairs), st = cidx(e, 128);
  int it = e->next++;
  line(e, "scf.for %%v%d = %%v%d to %%v%d step %%v%d {", it, lo, hi, st);
  int item = from_index(e, it);
  int row = divc(e, item, pairs), p = remc(e, item, pairs);
  int c1, c2;
  pair_cols(e, p, &c1, &c2);
  int tile_row = addi(e, mulc(e, cw, 64), row);
  int pos = addi(e, addc(e, q_row, k->rope_offset), tile_row);
  int angle = fmul(e, op(e, "arith.uitofp %%v%d : i32 to f32", pos),
                   inv_freq(e, p));
  int cs, sn;
  sincos(e, angle, &cs, &sn);
  int a1 = smem_ptr(e, smem, swz(e, ci32(e, (int)e->q_off), k->block_m,
                                 tile_row, c1));
  int a2 = smem_ptr(e, smem, swz(e, ci32(e, (int)e->q_off), k->block_m,
                                 tile_row, c2));
  int x1 = to_f32_16(e, op(e, "llvm.load %%v%d : !llvm.ptr<3> -> i16", a1));
  int x2 = to_f32_16(e, op(e, "llvm.load %%v%d : !llvm.ptr<3> -> i16", a2));
  int y1 = fsub(e, fmul(e, x1, cs), fmul(e, x2, sn));
  int y2 = fadd(e, fmul(e, x2, cs), fmul(e, x1, sn));
  line(e, "llvm.store %%v%d, %%v%d : i16, !llvm.ptr<3>", from_f32_16(e, y1), a1);
  line(e, "llvm.store %%v%d, %%v%d : i16, !llvm.ptr<3>", from_f32_16(e, y2), a2);
  line(e, "}");
  asm0(e, "fence.proxy.async.shared::cta;");
}

/// Producer warps 1-3 (rt in [0, 96)): each thread owns two adjacent RoPE
/// pairs ("a slot") and rows g, g + groups, ...; cos/sin advance by a
/// rotation per step, so each K tile costs two sincos per thread.
struct rope_k_state {
  int slot_c1, slot_c2;  // first columns of the slot's two words
  int g;                 // first row (within the rows rotated)
  int groups;            // rows advance by this many per step
  int f0, f1;            // inverse frequencies of the two pairs
  int step_c0, step_s0, step_c1, step_s1;
};

static int rope_slots(const struct attn_hopper_kernel *k) {
  return (int)(k->rotary_dim / 4);
}

/// Thread rt of nthreads owns slot rt % slots and rows rt / slots + i *
/// (nthreads / slots).
static void rope_k_setup(struct em *e, int rt, int nthreads,
                         struct rope_k_state *r) {
  int slots = rope_slots(e->k);
  r->groups = nthreads / slots;
  int slot = remc(e, rt, slots);
  r->g = divc(e, rt, slots);
  int p0 = mulc(e, slot, 2), p1 = addc(e, p0, 1);
  r->f0 = inv_freq(e, p0);
  r->f1 = inv_freq(e, p1);
  if (e->k->interleaved) {
    r->slot_c1 = mulc(e, slot, 4);         // pair p0: (4s, 4s+1)
    r->slot_c2 = addc(e, r->slot_c1, 2);   // pair p1: (4s+2, 4s+3)
  } else {
    r->slot_c1 = mulc(e, slot, 2);         // x1 of p0, p1: (2s, 2s+1)
    r->slot_c2 = addc(e, r->slot_c1, e->k->rotary_dim / 2);
  }
  int gf = cf32(e, (float)r->groups);
  sincos(e, fmul(e, gf, r->f0), &r->step_c0, &r->step_s0);
  sincos(e, fmul(e, gf, r->f1), &r->step_c1, &r->step_s1);
}

/// Rotates rows [first, first + nrows) of a swizzled tile of tile_rows rows
/// at tile_base (i32 offset); row `first` has position pos_first.
static void rope_rows(struct em *e, int smem, int tile_base, int tile_rows,
                      int first, int nrows, int pos_first,
                      const struct rope_k_state *r) {
  int pos = op(e, "arith.uitofp %%v%d : i32 to f32", addi(e, pos_first, r->g));
  int c0, s0, c1, s1;
  sincos(e, fmul(e, pos, r->f0), &c0, &s0);
  sincos(e, fmul(e, pos, r->f1), &c1, &s1);
  int lo = to_index(e, addi(e, first, r->g));
  int hi = to_index(e, addc(e, first, nrows)), st = cidx(e, r->groups);
  int it = e->next++, ac0 = e->next++, as0 = e->next++, ac1 = e->next++,
      as1 = e->next++;
  int res = e->next++;
  line(e,
       "%%v%d:4 = scf.for %%v%d = %%v%d to %%v%d step %%v%d iter_args(%%v%d = "
       "%%v%d, %%v%d = %%v%d, %%v%d = %%v%d, %%v%d = %%v%d) -> (f32, f32, "
       "f32, f32) {",
       res, it, lo, hi, st, ac0, c0, as0, s0, ac1, c1, as1, s1);
  int row = from_index(e, it);
  int pa = smem_ptr(e, smem, swz(e, tile_base, tile_rows, row, r->slot_c1));
  int pb = smem_ptr(e, smem, swz(e, tile_base, tile_rows, row, r->slot_c2));
  int wa = op(e, "llvm.load %%v%d : !llvm.ptr<3> -> i32", pa);
  int wb = op(e, "llvm.load %%v%d : !llvm.ptr<3> -> i32", pb);
  int alo, ahi, blo, bhi;
  unpack2(e, wa, &alo, &ahi);
  unpack2(e, wb, &blo, &bhi);
  int nalo, nahi, nblo, nbhi;
  if (e->k->interleaved) {
    nalo = fsub(e, fmul(e, alo, ac0), fmul(e, ahi, as0));
    nahi = fadd(e, fmul(e, ahi, ac0), fmul(e, alo, as0));
    nblo = fsub(e, fmul(e, blo, ac1), fmul(e, bhi, as1));
    nbhi = fadd(e, fmul(e, bhi, ac1), fmul(e, blo, as1));
  } else {
    nalo = fsub(e, fmul(e, alo, ac0), fmul(e, blo, as0));
    nblo = fadd(e, fmul(e, blo, ac0), fmul(e, alo, as0));
    nahi = fsub(e, fmul(e, ahi, ac1), fmul(e, bhi, as1));
    nbhi = fadd(e, fmul(e, bhi, ac1), fmul(e, ahi, as1));
  }
  line(e, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr<3>", pack2(e, nalo, nahi),
       pa);
  line(e, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr<3>", pack2(e, nblo, nbhi),
       pb);
  int n0 = fsub(e, fmul(e, ac0, r->step_c0), fmul(e, as0, r->step_s0));
  int m0 = fadd(e, fmul(e, as0, r->step_c0), fmul(e, ac0, r->step_s0));
  int n1 = fsub(e, fmul(e, ac1, r->step_c1), fmul(e, as1, r->step_s1));
  int m1 = fadd(e, fmul(e, as1, r->step_c1), fmul(e, ac1, r->step_s1));
  line(e, "scf.yield %%v%d, %%v%d, %%v%d, %%v%d : f32, f32, f32, f32", n0, m0,
       n1, m1);
  line(e, "}");
}

//===-- Producer ----------------------------------------------------------===//

struct ids {
  int smem, sbase, tid, q_row, h, b, kh, nkb, qmap, kmap, vmap, out;
  int bar_q, bar_full, bar_kready, bar_empty; // i32 addresses (stage 0)
};

static int stage_of(struct em *e, int j, int *phase) {
  int s = remc(e, j, e->k->stages);
  *phase = op(e, "arith.andi %%v%d, %%v%d : i32", divc(e, j, e->k->stages),
              ci32(e, 1));
  return s;
}

static int bar_at(struct em *e, int base, int s) {
  return addi(e, base, mulc(e, s, 8));
}

static int tile_k(struct em *e, const struct ids *x, int s) {
  return addi(e, addc(e, x->sbase, e->kv_off), mulc(e, s, 2 * e->tile_bytes));
}

static void producer(struct em *e, const struct ids *x, int wt) {
  const struct attn_hopper_kernel *k = e->k;
  int is_tma = cmpc(e, "eq", wt, 0);
  line(e, "scf.if %%v%d {", is_tma);
  // Q once.
  mbar_expect_tx(e, x->bar_q, (long long)k->block_m * k->head_dim * 2);
  for (int r = 0; r < e->regions; ++r) {
    int c[4] = {ci32(e, 64 * r), x->q_row, x->h, x->b};
    tma_load(e, addc(e, x->sbase, e->q_off + (int64_t)r * k->block_m * 128),
             x->qmap, c, x->bar_q);
  }
  int lo = cidx(e, 0), hi = to_index(e, x->nkb), st = cidx(e, 1);
  int it = e->next++;
  line(e, "scf.for %%v%d = %%v%d to %%v%d step %%v%d {", it, lo, hi, st);
  int j = from_index(e, it), ph;
  int s = stage_of(e, j, &ph);
  mbar_wait(e, bar_at(e, x->bar_empty, s),
            op(e, "arith.xori %%v%d, %%v%d : i32", ph, ci32(e, 1)));
  int full = bar_at(e, x->bar_full, s);
  mbar_expect_tx(e, full, 2 * e->tile_bytes);
  int kt = tile_k(e, x, s), vt = addc(e, kt, e->tile_bytes);
  int row = mulc(e, j, k->block_n);
  for (int r = 0; r < e->regions; ++r) {
    int c[4] = {ci32(e, 64 * r), row, x->kh, x->b};
    tma_load(e, addc(e, kt, (int64_t)r * k->block_n * 128), x->kmap, c, full);
    tma_load(e, addc(e, vt, (int64_t)r * k->block_n * 128), x->vmap, c, full);
  }
  line(e, "}");
  line(e, "}");
  if (!k->rope || !k->rope_k_in_kernel)
    return;
  int is_rot = cmpc(e, "uge", wt, 32);
  line(e, "scf.if %%v%d {", is_rot);
  struct rope_k_state r;
  rope_k_setup(e, addc(e, wt, -32), 96, &r);
  int lo2 = cidx(e, 0), hi2 = to_index(e, x->nkb), st2 = cidx(e, 1);
  int it2 = e->next++;
  line(e, "scf.for %%v%d = %%v%d to %%v%d step %%v%d {", it2, lo2, hi2, st2);
  int j2 = from_index(e, it2), ph2;
  int s2 = stage_of(e, j2, &ph2);
  mbar_wait(e, bar_at(e, x->bar_full, s2), ph2);
  int base = addc(e, mulc(e, s2, 2 * e->tile_bytes), e->kv_off);
  int pos0 = addc(e, mulc(e, j2, k->block_n), k->rope_offset_k);
  rope_rows(e, x->smem, base, k->block_n, ci32(e, 0), k->block_n, pos0, &r);
  asm0(e, "fence.proxy.async.shared::cta;");
  mbar_arrive(e, bar_at(e, x->bar_kready, s2));
  line(e, "}");
  line(e, "}");
}

//===-- Consumers ---------------------------------------------------------===//

/// Masks S (ns values, updated in place) on blocks that cross the diagonal
/// or the end of the keys.
static void mask_scores(struct em *e, int *sv, int j, int lr, int row0) {
  const struct attn_hopper_kernel *k = e->k;
  int kbase = addi(e, mulc(e, j, k->block_n), mulc(e, lr, 2));
  int ninf = cf32(e, -INFINITY);
  int rows[2] = {row0, addc(e, row0, 8)};
  for (int i = 0; i < e->ns; ++i) {
    int col = addc(e, kbase, 8 * (i >> 2) + (i & 1));
    int bad = cmpc(e, "uge", col, k->seq_k);
    if (k->causal)
      bad = op(e, "arith.ori %%v%d, %%v%d : i1", bad,
               op(e, "arith.cmpi ugt, %%v%d, %%v%d : i32", col,
                  rows[(i >> 1) & 1]));
    sv[i] = sel(e, bad, ninf, sv[i], "f32");
  }
}

/// Emits an `scf.yield` (or any terminator) of ids, all of type ty.
static void yield_list(struct em *e, const char *kw, const int *ids, int n,
                       const char *const *tys) {
  struct attn_strbuf y = {0};
  attn_strbuf_printf(&y, "%s ", kw);
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&y, "%s%%v%d", i ? ", " : "", ids[i]);
  attn_strbuf_printf(&y, " : ");
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&y, "%s%s", i ? ", " : "", tys[i]);
  line(e, "%s", y.buf);
  attn_strbuf_free(&y);
}

/// The per-consumer values every block step needs.
struct cons {
  int cw, lr, row0, wg_row, desc_q, scale_log2, ninf, zero, nz;
  int sched_me, sched_other; // named barrier ids (i32)
};

/// S = Q K_j^T for the stage's K tile (issued and committed, not waited).
/// With fence false the caller has issued wgmma.fence already.
static void issue_qk(struct em *e, const struct cons *c, int kt, int *sv,
                     bool fence) {
  const struct attn_hopper_kernel *k = e->k;
  int desc_k = make_desc(e, kt, 16, 1024);
  // The first wgmma ignores its accumulators (scale-d = 0): feed it undefined
  // values, so nothing writes those registers inside the wgmma pipeline.
  int undef = op(e, "llvm.mlir.undef : f32");
  for (int i = 0; i < e->ns; ++i)
    sv[i] = undef;
  if (fence)
    asm0(e, "wgmma.fence.sync.aligned;");
  for (int kk = 0; kk < k->head_dim / 16; ++kk) {
    long long region_q = (long long)(kk / 4) * k->block_m * 128;
    long long region_k = (long long)(kk / 4) * k->block_n * 128;
    wgmma_ss(e, sv, e->ns, desc_add(e, c->desc_q, region_q + (kk % 4) * 32),
             desc_add(e, desc_k, region_k + (kk % 4) * 32),
             ci32(e, kk ? 1 : 0), false);
  }
  asm0(e, "wgmma.commit_group.sync.aligned;");
}

/// O += P V for the stage's V tile (issued and committed, not waited). The
/// caller has fenced O and P (reg_fence) and issued wgmma.fence.
static void issue_pv(struct em *e, int vt, int *ov, int *a) {
  const struct attn_hopper_kernel *k = e->k;
  int desc_v = make_desc(e, vt, (long long)k->block_n * 128, 1024);
  for (int kk = 0; kk < k->block_n / 16; ++kk)
    wgmma_rs(e, ov, e->no, &a[4 * kk],
             desc_add(e, desc_v, (long long)kk * 16 * 128));
  asm0(e, "wgmma.commit_group.sync.aligned;");
}

/// Masks S where block j crosses the diagonal or the end of the keys.
static void maybe_mask(struct em *e, const struct cons *c, int j, int *sv) {
  const struct attn_hopper_kernel *k = e->k;
  int ns = e->ns;
  bool tail = k->seq_k % k->block_n != 0;
  if (!k->causal && !tail)
    return;
  int end = mulc(e, addc(e, j, 1), k->block_n); // one past the block
  int need = cmpc(e, "ugt", end, k->seq_k);
  if (k->causal)
    need = op(e, "arith.ori %%v%d, %%v%d : i1", need,
              op(e, "arith.cmpi ugt, %%v%d, %%v%d : i32", end,
                 addc(e, c->wg_row, 1)));
  int r = e->next++;
  struct attn_strbuf h = {0};
  attn_strbuf_printf(&h, "%%v%d:%d = scf.if %%v%d -> (", r, ns, need);
  for (int i = 0; i < ns; ++i)
    attn_strbuf_printf(&h, "%sf32", i ? ", " : "");
  attn_strbuf_printf(&h, ") {");
  line(e, "%s", h.buf);
  attn_strbuf_free(&h);
  int masked[256];
  const char *tys[256];
  for (int i = 0; i < ns; ++i)
    tys[i] = "f32";
  memcpy(masked, sv, sizeof(int) * (size_t)ns);
  mask_scores(e, masked, j, c->lr, c->row0);
  yield_list(e, "scf.yield", masked, ns, tys);
  line(e, "} else {");
  yield_list(e, "scf.yield", sv, ns, tys);
  line(e, "}");
  for (int i = 0; i < ns; ++i)
    sv[i] = op(e, "arith.addf %%v%d#%d, %%v%d : f32", r, i, c->nz);
}

/// Online softmax of one block (rows r0: register pairs 0-1 of every 4,
/// r0 + 8: pairs 2-3): new row maxima, the rescale factors of the old
/// accumulators, the running sums, and P (f32, ns values in a).
static void softmax(struct em *e, const struct cons *c, const int *sv,
                    const int m_in[2], const int l_in[2], int m_out[2],
                    int l_out[2], int alpha[2], int *a) {
  int ns = e->ns, m_use[2];
  for (int r = 0; r < 2; ++r) {
    int mx = c->ninf;
    for (int i = 0; i < ns; ++i)
      if (((i >> 1) & 1) == r)
        mx = op(e, "arith.maxnumf %%v%d, %%v%d : f32", mx, sv[i]);
    mx = op(e, "arith.maxnumf %%v%d, %%v%d : f32", mx, shfl_xor(e, mx, 1));
    mx = op(e, "arith.maxnumf %%v%d, %%v%d : f32", mx, shfl_xor(e, mx, 2));
    m_out[r] = op(e, "arith.maxnumf %%v%d, %%v%d : f32", m_in[r],
                  fmul(e, mx, c->scale_log2));
    int dead = op(e, "arith.cmpf oeq, %%v%d, %%v%d : f32", m_out[r], c->ninf);
    m_use[r] = sel(e, dead, c->zero, m_out[r], "f32");
    alpha[r] = ex2(e, fsub(e, m_in[r], m_use[r]));
  }
  int p[256], sum[2] = {c->zero, c->zero};
  int neg[2] = {op(e, "arith.negf %%v%d : f32", m_use[0]),
                op(e, "arith.negf %%v%d : f32", m_use[1])};
  for (int i = 0; i < ns; ++i) {
    int r = (i >> 1) & 1;
    p[i] = ex2(e, fma3(e, sv[i], c->scale_log2, neg[r]));
    sum[r] = fadd(e, sum[r], p[i]);
  }
  for (int r = 0; r < 2; ++r)
    l_out[r] = fma3(e, l_in[r], alpha[r], sum[r]);
  memcpy(a, p, sizeof(int) * (size_t)ns);
}

/// Packs probabilities to 16-bit pairs, the A registers of the P V wgmma.
/// Done only once the previous P V has completed, so that the new registers
/// never overwrite ones an in-flight wgmma still reads.
static void pack_p(struct em *e, const int *p, int *a) {
  for (int i = 0; i < e->ns / 2; ++i)
    a[i] = pack2(e, p[2 * i], p[2 * i + 1]);
}

static void rescale(struct em *e, int *ov, const int alpha[2]) {
  for (int i = 0; i < e->no; ++i)
    ov[i] = fmul(e, ov[i], alpha[(i >> 1) & 1]);
}

/// Consumer warpgroups, FlashAttention-3 schedule: in step j each issues
/// S_j = Q K_j^T and O += P_{j-1} V_{j-1} back to back, then lets the other
/// warpgroup issue its pair (ping-pong on named barriers) and computes the
/// softmax of S_j while both GEMMs and the other's run.
static void consumer(struct em *e, const struct ids *x, int wg, int wt) {
  const struct attn_hopper_kernel *k = e->k;
  int ns = e->ns, no = e->no, np = ns / 2;
  struct cons c;
  c.cw = addc(e, wg, -1);
  int warp = divc(e, wt, 32), lane = remc(e, wt, 32);
  int lq = divc(e, lane, 4);
  c.lr = remc(e, lane, 4);
  int wrow = addi(e, mulc(e, warp, 16), lq); // row in the warpgroup
  c.wg_row = addi(e, x->q_row, mulc(e, c.cw, 64));
  c.row0 = addi(e, c.wg_row, wrow); // query row of register pairs 0-1
  c.sched_me = addc(e, c.cw, 3);
  c.sched_other = op(e, "arith.subi %%v%d, %%v%d : i32", ci32(e, 4), c.cw);
  mbar_wait(e, x->bar_q, ci32(e, 0));
  if (k->rope) {
    if (128 % rope_slots(k) == 0) {
      // Each thread owns two pairs and steps cos/sin down its rows.
      struct rope_k_state r;
      rope_k_setup(e, wt, 128, &r);
      int first = mulc(e, c.cw, 64);
      rope_rows(e, x->smem, ci32(e, (int)e->q_off), k->block_m, first, 64,
                addc(e, c.wg_row, k->rope_offset), &r);
      asm0(e, "fence.proxy.async.shared::cta;");
    } else {
      rope_q(e, x->smem, wt, x->q_row, c.cw);
    }
    asm_r(e, "bar.sync $0, 128;", addc(e, c.cw, 1));
  }
  // The first consumer goes first: the second opens its barrier.
  int second = cmpc(e, "eq", c.cw, 1);
  line(e, "scf.if %%v%d {", second);
  asm_r(e, "bar.arrive $0, 256;", ci32(e, 3));
  line(e, "}");
  int qaddr = addi(e, addc(e, x->sbase, e->q_off), mulc(e, c.cw, 64 * 128));
  c.desc_q = make_desc(e, qaddr, 16, 1024);
  c.scale_log2 = cf32(e, (float)(k->scale * 1.4426950408889634));
  c.ninf = cf32(e, -INFINITY);
  c.zero = cf32(e, 0.0f);
  c.nz = cf32(e, -0.0f); // x + -0.0 == x: names one result of a region op
  int ready = k->rope && k->rope_k_in_kernel ? x->bar_kready : x->bar_full;

  // Step 0: S_0 and its softmax; O starts at zero.
  int sv[256], a[128], pf[256], m[2], l[2], alpha[2];
  int m0[2] = {c.ninf, c.ninf}, l0[2] = {c.zero, c.zero};
  {
    int z = ci32(e, 0), ph;
    int s = stage_of(e, z, &ph);
    mbar_wait(e, bar_at(e, ready, s), ph);
    asm_r(e, "bar.sync $0, 256;", c.sched_me);
    issue_qk(e, &c, tile_k(e, x, s), sv, true);
    asm_r(e, "bar.arrive $0, 256;", c.sched_other);
    asm0(e, "wgmma.wait_group.sync.aligned 0;");
    reg_fence(e, sv, ns, "f32", "f");
    maybe_mask(e, &c, z, sv);
    softmax(e, &c, sv, m0, l0, m, l, alpha, pf);
    pack_p(e, pf, a);
  }

  // Steps 1 .. nkb-1, carrying O, m, l, alpha and P of the previous block.
  int lo = cidx(e, 1), hi = to_index(e, x->nkb), st = cidx(e, 1);
  int it = e->next++, res = e->next++;
  int ncarry = no + 6 + np;
  int init[512], arg[512];
  const char *tys[512];
  int n = 0;
  for (int i = 0; i < no; ++i, ++n) {
    init[n] = c.zero;
    tys[n] = "f32";
  }
  for (int r = 0; r < 2; ++r, ++n) {
    init[n] = m[r];
    tys[n] = "f32";
  }
  for (int r = 0; r < 2; ++r, ++n) {
    init[n] = l[r];
    tys[n] = "f32";
  }
  for (int r = 0; r < 2; ++r, ++n) {
    init[n] = alpha[r];
    tys[n] = "f32";
  }
  for (int i = 0; i < np; ++i, ++n) {
    init[n] = a[i];
    tys[n] = "i32";
  }
  struct attn_strbuf hdr = {0};
  attn_strbuf_printf(&hdr,
                     "%%v%d:%d = scf.for %%v%d = %%v%d to %%v%d step %%v%d "
                     "iter_args(",
                     res, ncarry, it, lo, hi, st);
  for (int i = 0; i < ncarry; ++i) {
    arg[i] = e->next++;
    attn_strbuf_printf(&hdr, "%s%%v%d = %%v%d", i ? ", " : "", arg[i], init[i]);
  }
  attn_strbuf_printf(&hdr, ") -> (");
  for (int i = 0; i < ncarry; ++i)
    attn_strbuf_printf(&hdr, "%s%s", i ? ", " : "", tys[i]);
  attn_strbuf_printf(&hdr, ") {");
  line(e, "%s", hdr.buf);
  attn_strbuf_free(&hdr);
  {
    int ov[256], pa[128], mi[2], li[2], al[2];
    memcpy(ov, arg, sizeof(int) * (size_t)no);
    mi[0] = arg[no];
    mi[1] = arg[no + 1];
    li[0] = arg[no + 2];
    li[1] = arg[no + 3];
    al[0] = arg[no + 4];
    al[1] = arg[no + 5];
    memcpy(pa, arg + no + 6, sizeof(int) * (size_t)np);
    int j = from_index(e, it), ph, php;
    int s = stage_of(e, j, &ph);
    int sp = stage_of(e, addc(e, j, -1), &php);
    // Registers the GEMMs read are written before the wgmma pipeline starts.
    rescale(e, ov, al);
    reg_fence(e, ov, no, "f32", "f");
    reg_fence(e, pa, np, "i32", "r");
    int kt = tile_k(e, x, s), vt = addc(e, tile_k(e, x, sp), e->tile_bytes);
    mbar_wait(e, bar_at(e, ready, s), ph);
    asm_r(e, "bar.sync $0, 256;", c.sched_me);
    asm0(e, "wgmma.fence.sync.aligned;");
    issue_qk(e, &c, kt, sv, false);
    issue_pv(e, vt, ov, pa);
    asm_r(e, "bar.arrive $0, 256;", c.sched_other);
    asm0(e, "wgmma.wait_group.sync.aligned 1;");
    reg_fence(e, sv, ns, "f32", "f");
    maybe_mask(e, &c, j, sv);
    int mo[2], lo2[2], an[2], pn[128], pf2[256];
    softmax(e, &c, sv, mi, li, mo, lo2, an, pf2);
    asm0(e, "wgmma.wait_group.sync.aligned 0;");
    reg_fence(e, ov, no, "f32", "f");
    reg_fence(e, pf2, ns, "f32", "f");
    pack_p(e, pf2, pn);
    mbar_arrive(e, bar_at(e, x->bar_empty, sp));
    int out[512];
    int nn = 0;
    for (int i = 0; i < no; ++i)
      out[nn++] = ov[i];
    out[nn++] = mo[0];
    out[nn++] = mo[1];
    out[nn++] = lo2[0];
    out[nn++] = lo2[1];
    out[nn++] = an[0];
    out[nn++] = an[1];
    for (int i = 0; i < np; ++i)
      out[nn++] = pn[i];
    yield_list(e, "scf.yield", out, nn, tys);
  }
  line(e, "}");

  // Last block's P V, then the epilogue.
  int ov[256], al[2], pa[128], lf[2];
  for (int i = 0; i < no; ++i)
    ov[i] = op(e, "arith.addf %%v%d#%d, %%v%d : f32", res, i, c.nz);
  for (int r = 0; r < 2; ++r) {
    lf[r] = op(e, "arith.addf %%v%d#%d, %%v%d : f32", res, no + 2 + r, c.nz);
    al[r] = op(e, "arith.addf %%v%d#%d, %%v%d : f32", res, no + 4 + r, c.nz);
  }
  for (int i = 0; i < np; ++i)
    pa[i] = op(e, "arith.addi %%v%d#%d, %%v%d : i32", res, no + 6 + i,
               ci32(e, 0));
  int last = addc(e, x->nkb, -1), phl;
  int sl = stage_of(e, last, &phl);
  rescale(e, ov, al);
  reg_fence(e, ov, no, "f32", "f");
  reg_fence(e, pa, np, "i32", "r");
  int vl = addc(e, tile_k(e, x, sl), e->tile_bytes);
  asm_r(e, "bar.sync $0, 256;", c.sched_me);
  asm0(e, "wgmma.fence.sync.aligned;");
  issue_pv(e, vl, ov, pa);
  asm_r(e, "bar.arrive $0, 256;", c.sched_other);
  asm0(e, "wgmma.wait_group.sync.aligned 0;");
  reg_fence(e, ov, no, "f32", "f");
  mbar_arrive(e, bar_at(e, x->bar_empty, sl));
  // The second consumer's last arrive has no partner: the first takes it.
  int first = cmpc(e, "eq", c.cw, 0);
  line(e, "scf.if %%v%d {", first);
  asm_r(e, "bar.sync $0, 256;", ci32(e, 3));
  line(e, "}");

  // Finish l across the quad, normalise, store rows < N.
  int inv[2];
  for (int r = 0; r < 2; ++r) {
    int lsum = fadd(e, lf[r], shfl_xor(e, lf[r], 1));
    lsum = fadd(e, lsum, shfl_xor(e, lsum, 2));
    int empty = op(e, "arith.cmpf oeq, %%v%d, %%v%d : f32", lsum, c.zero);
    int q = op(e, "arith.divf %%v%d, %%v%d : f32", cf32(e, 1.0f), lsum);
    inv[r] = sel(e, empty, c.zero, q, "f32");
  }
  int bh = addi(e, mulc(e, x->b, k->heads), x->h);
  for (int r = 0; r < 2; ++r) {
    int grow = addc(e, c.row0, 8 * r);
    int ok = cmpc(e, "ult", grow, k->seq_q);
    line(e, "scf.if %%v%d {", ok);
    int rowi = op(e, "arith.extui %%v%d : i32 to i64",
                  addi(e, mulc(e, bh, k->seq_q), grow));
    int rowb = op(e, "arith.muli %%v%d, %%v%d : i64", rowi,
                  ci64(e, k->head_dim * 2));
    for (int i = 0; i < no; i += 4) {
      int idx = i + 2 * r; // registers of row r in this 8-column chunk
      int col = addc(e, mulc(e, c.lr, 2), 8 * (i >> 2));
      int colb = op(e, "arith.extui %%v%d : i32 to i64", mulc(e, col, 2));
      int off = op(e, "arith.addi %%v%d, %%v%d : i64", rowb, colb);
      int ptr = op(e,
                   "llvm.getelementptr %%v%d[%%v%d] : (!llvm.ptr, i64) -> "
                   "!llvm.ptr, i8",
                   x->out, off);
      int w = pack2(e, fmul(e, ov[idx], inv[r]), fmul(e, ov[idx + 1], inv[r]));
      line(e, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr", w, ptr);
    }
    line(e, "}");
  }
}

//===-- The kernel --------------------------------------------------------===//

void attn_hopper_emit_aliases(struct attn_strbuf *b,
                              const struct attn_hopper_kernel *k) {
  int sizes[4] = {k->block_n / 2, (int)k->head_dim / 2, k->block_n / 4, 0};
  // f32 accumulators (S, O, fences of O and S) and i32 P registers.
  int done[8], nd = 0;
  for (int t = 0; t < 2; ++t) {
    int n = sizes[t];
    bool seen = false;
    for (int i = 0; i < nd; ++i)
      seen |= done[i] == n;
    if (seen)
      continue;
    done[nd++] = n;
    attn_strbuf_printf(b, "!acc_f32%d = !llvm.struct<(", n);
    for (int i = 0; i < n; ++i)
      attn_strbuf_printf(b, "%sf32", i ? ", " : "");
    attn_strbuf_printf(b, ")>\n");
  }
  attn_strbuf_printf(b, "!acc_i32%d = !llvm.struct<(", sizes[2]);
  for (int i = 0; i < sizes[2]; ++i)
    attn_strbuf_printf(b, "%si32", i ? ", " : "");
  attn_strbuf_printf(b, ")>\n");
}

static void emit_param_aligned(struct attn_strbuf *b, const char *name,
                               const char *ty, const int64_t shape[4],
                               int align) {
  attn_strbuf_printf(b,
                     "{name = \"%s\", kind = \"ptr\", dtype = \"%s\", shape = "
                     "array<i64: %lld, %lld, %lld, %lld>",
                     name, ty, (long long)shape[0], (long long)shape[1],
                     (long long)shape[2], (long long)shape[3]);
  if (align > 1)
    attn_strbuf_printf(b, ", align = %d : i64", align);
  attn_strbuf_printf(b, "}");
}

static void emit_param(struct attn_strbuf *b, const char *name,
                       const char *ty, const int64_t shape[4]) {
  emit_param_aligned(b, name, ty, shape, 0);
}

static void emit_map(struct attn_strbuf *b, const char *name,
                     const char *tensor, const char *ty, const int64_t shape[4],
                     int rows) {
  attn_strbuf_printf(
      b,
      "{name = \"%s\", kind = \"tensormap\", tensor = \"%s\", dtype = \"%s\", "
      "dims = array<i64: %lld, %lld, %lld, %lld>, box = array<i64: 64, %d, 1, "
      "1>, swizzle = 128 : i64}",
      name, tensor, ty, (long long)shape[3], (long long)shape[2],
      (long long)shape[1], (long long)shape[0], rows);
}

static void emit_launch(struct attn_strbuf *b,
                        const struct attn_hopper_kernel *k,
                        const char *attention) {
  const char *ty = k->bf16 ? "bf16" : "f16";
  int64_t q[4] = {k->batch, k->heads, k->seq_q, k->head_dim};
  int64_t kv[4] = {k->batch, k->kv_heads, k->seq_k, k->head_dim};
  attn_strbuf_printf(b,
                     "attn.launch = {grid = array<i32: %lld, %lld, %lld>, "
                     "block = array<i32: %d, 1, 1>, static_shared_bytes = 0 "
                     ": i64, dynamic_shared_bytes = %lld : i64, kernel = "
                     "\"hopper-wgmma\", params = [",
                     (long long)attn_hopper_grid_x(k), (long long)k->heads,
                     (long long)k->batch, ATTN_HOPPER_THREADS,
                     (long long)attn_hopper_smem_bytes(k));
  emit_param(b, "q", ty, q);
  attn_strbuf_printf(b, ", ");
  emit_param(b, "k", ty, kv);
  attn_strbuf_printf(b, ", ");
  emit_param(b, "v", ty, kv);
  attn_strbuf_printf(b, ", ");
  emit_param(b, "out", ty, q);
  attn_strbuf_printf(b, ", ");
  emit_map(b, "q_map", "q", ty, q, k->block_m);
  attn_strbuf_printf(b, ", ");
  emit_map(b, "k_map", "k", ty, kv, k->block_n);
  attn_strbuf_printf(b, ", ");
  emit_map(b, "v_map", "v", ty, kv, k->block_n);
  attn_strbuf_printf(b, "]");
  if (attention)
    attn_strbuf_printf(b, ", attention = %s", attention);
  attn_strbuf_printf(b, "}");
}

void attn_hopper_emit_kernel(struct attn_strbuf *b,
                             const struct attn_hopper_kernel *k,
                             const char *attention_attr) {
  struct em e = {.b = b, .k = k, .next = 0};
  e.ty = k->bf16 ? "bf16" : "f16";
  e.ns = k->block_n / 2;
  e.no = (int)k->head_dim / 2;
  e.regions = (int)k->head_dim / 64;
  layout(&e);

  attn_strbuf_printf(b,
                     "llvm.func @%s(%%q: !llvm.ptr, %%k: !llvm.ptr, %%v: "
                     "!llvm.ptr, %%out: !llvm.ptr",
                     k->name);
  static const char *maps[3] = {"q_map", "k_map", "v_map"};
  for (int i = 0; i < 3; ++i)
    attn_strbuf_printf(b,
                       ", %%%s: !llvm.ptr {llvm.align = 64 : i64, llvm.byval "
                       "= !llvm.array<128 x i8>, nvvm.grid_constant}",
                       maps[i]);
  attn_strbuf_printf(b,
                     ") attributes {nvvm.kernel, nvvm.maxntid = array<i32: "
                     "%d, 1, 1>, nvvm.minctasm = 1 : i32, ",
                     ATTN_HOPPER_THREADS);
  emit_launch(b, k, attention_attr);
  attn_strbuf_printf(b, "} {\n");

  struct ids x;
  x.tid = op(&e, "nvvm.read.ptx.sreg.tid.x : i32");
  int bx = op(&e, "nvvm.read.ptx.sreg.ctaid.x : i32");
  int gx = op(&e, "nvvm.read.ptx.sreg.nctaid.x : i32");
  x.h = op(&e, "nvvm.read.ptx.sreg.ctaid.y : i32");
  x.b = op(&e, "nvvm.read.ptx.sreg.ctaid.z : i32");
  // Longest causal query blocks first: block x runs query block gx-1-x.
  int qb = op(&e, "arith.subi %%v%d, %%v%d : i32", addc(&e, gx, -1), bx);
  x.q_row = mulc(&e, qb, k->block_m);
  x.kh = divc(&e, x.h, k->heads / k->kv_heads);
  int64_t blocks = (k->seq_k + k->block_n - 1) / k->block_n;
  x.nkb = ci32(&e, blocks);
  if (k->causal) {
    int last = addc(&e, x.q_row, k->block_m);
    int diag = op(&e, "arith.ceildivui %%v%d, %%v%d : i32", last,
                  ci32(&e, k->block_n));
    x.nkb = op(&e, "arith.minui %%v%d, %%v%d : i32", diag, x.nkb);
  }
  // Dynamic shared memory, its base rounded up to 1024 bytes for swizzling.
  int raw = op(&e, "llvm.mlir.addressof @attn_smem : !llvm.ptr<3>");
  int raw_i = op(&e, "llvm.ptrtoint %%v%d : !llvm.ptr<3> to i32", raw);
  int pad = op(&e, "arith.subi %%v%d, %%v%d : i32",
               op(&e, "arith.andi %%v%d, %%v%d : i32",
                  addc(&e, raw_i, 1023), ci32(&e, ~1023)),
               raw_i);
  x.smem = smem_ptr(&e, raw, pad);
  x.sbase = addi(&e, raw_i, pad);
  x.qmap = op(&e, "llvm.ptrtoint %%q_map : !llvm.ptr to i64");
  x.kmap = op(&e, "llvm.ptrtoint %%k_map : !llvm.ptr to i64");
  x.vmap = op(&e, "llvm.ptrtoint %%v_map : !llvm.ptr to i64");
  x.out = op(&e, "llvm.getelementptr %%out[0] : (!llvm.ptr) -> !llvm.ptr, i8");
  int bars = addc(&e, x.sbase, e.bar_off);
  x.bar_q = bars;
  x.bar_full = addc(&e, bars, 8);
  x.bar_kready = addc(&e, bars, 8 + 8 * k->stages);
  x.bar_empty = addc(&e, bars, 8 + 16 * k->stages);

  int first = cmpc(&e, "eq", x.tid, 0);
  line(&e, "scf.if %%v%d {", first);
  mbar_init(&e, x.bar_q, 1);
  for (int s = 0; s < k->stages; ++s) {
    mbar_init(&e, addc(&e, x.bar_full, 8 * s), 1);
    mbar_init(&e, addc(&e, x.bar_kready, 8 * s), 96);
    mbar_init(&e, addc(&e, x.bar_empty, 8 * s), 256);
  }
  asm0(&e, "fence.mbarrier_init.release.cluster;");
  line(&e, "}");
  asm0(&e, "bar.sync 0;");

  int wg = divc(&e, x.tid, 128), wt = remc(&e, x.tid, 128);
  int is_producer = cmpc(&e, "eq", wg, 0);
  line(&e, "scf.if %%v%d {", is_producer);
  char text[96];
  bool rotators = k->rope && k->rope_k_in_kernel;
  snprintf(text, sizeof text, "setmaxnreg.dec.sync.aligned.u32 %d;",
           rotators ? PRODUCER_REGS : PRODUCER_REGS_NO_ROPE);
  asm0(&e, text);
  producer(&e, &x, wt);
  line(&e, "} else {");
  snprintf(text, sizeof text, "setmaxnreg.inc.sync.aligned.u32 %d;",
           rotators ? CONSUMER_REGS : CONSUMER_REGS_NO_ROPE);
  asm0(&e, text);
  consumer(&e, &x, wg, wt);
  line(&e, "}");
  line(&e, "llvm.return");
  attn_strbuf_printf(b, "}\n");
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


static int vec_elem(struct em *e, int v, int i) {
  return op(e, "llvm.extractelement %%v%d[%%v%d : i32] : vector<4xi32>", v,
            ci32(e, i));
}

void attn_hopper_emit_rope(struct attn_strbuf *b,
                           const struct attn_hopper_kernel *k, bool q) {
  struct em e = {.b = b, .k = k, .next = 0};
  const char *x = q ? "q" : "k";
  int64_t heads = q ? k->heads : k->kv_heads;
  int64_t seq = q ? k->seq_q : k->seq_k;
  int64_t offset = q ? k->rope_offset : k->rope_offset_k;
  e.ty = k->bf16 ? "bf16" : "f16";
  int units = rope_k_units(k), groups = ROPE_K_THREADS / units;
  int nf = k->interleaved ? 4 : 8; // frequencies per unit
  attn_strbuf_printf(
      b,
      "llvm.func @%s__rope_%s(%%x: !llvm.ptr, %%x_rot: !llvm.ptr) attributes "
      "{nvvm.kernel, nvvm.maxntid = array<i32: %d, 1, 1>, attn.launch = "
      "{grid = array<i32: %lld, %lld, %lld>, block = array<i32: %d, 1, 1>, "
      "static_shared_bytes = 0 : i64, dynamic_shared_bytes = 0 : i64, "
      "kernel = \"rope-%s\", params = [",
      k->name, x, ROPE_K_THREADS, (long long)((seq + ROPE_K_ROWS - 1) / ROPE_K_ROWS),
      (long long)heads, (long long)k->batch, ROPE_K_THREADS, x);
  int64_t shape[4] = {k->batch, heads, seq, k->head_dim};
  char rot[8];
  snprintf(rot, sizeof rot, "%s_rot", x);
  // 16-byte vector loads and stores: attnrt checks the pointers.
  emit_param_aligned(b, x, e.ty, shape, 16);
  attn_strbuf_printf(b, ", ");
  emit_param_aligned(b, rot, e.ty, shape, 16);
  attn_strbuf_printf(b, "]}} {\n");

  int tid = op(&e, "nvvm.read.ptx.sreg.tid.x : i32");
  int bx = op(&e, "nvvm.read.ptx.sreg.ctaid.x : i32");
  int h = op(&e, "nvvm.read.ptx.sreg.ctaid.y : i32");
  int bz = op(&e, "nvvm.read.ptx.sreg.ctaid.z : i32");
  int unit = remc(&e, tid, units), g = divc(&e, tid, units);
  int row0 = mulc(&e, bx, ROPE_K_ROWS);
  int first = addi(&e, row0, g);
  int end = op(&e, "arith.minui %%v%d, %%v%d : i32", addc(&e, row0, ROPE_K_ROWS),
               ci32(&e, seq));
  // Frequencies of the unit's pairs, cos/sin at the first row and per step.
  int p0 = mulc(&e, unit, nf);
  int c[8], s[8], sc[8], ss[8];
  int pos = op(&e, "arith.uitofp %%v%d : i32 to f32",
               addc(&e, first, offset));
  int gf = cf32(&e, (float)groups);
  for (int i = 0; i < nf; ++i) {
    int f = inv_freq(&e, addc(&e, p0, i));
    sincos(&e, fmul(&e, pos, f), &c[i], &s[i]);
    sincos(&e, fmul(&e, gf, f), &sc[i], &ss[i]);
  }
  int head = op(&e, "arith.extui %%v%d : i32 to i64",
                mulc(&e, addi(&e, mulc(&e, bz, heads), h), seq));
  int ucol = op(&e, "arith.extui %%v%d : i32 to i64", mulc(&e, unit, 16));
  int lo = to_index(&e, first), hi = to_index(&e, end), st = cidx(&e, groups);
  int it = e.next++, res = e.next++;
  int ac[8], as[8];
  struct attn_strbuf hdr = {0};
  attn_strbuf_printf(&hdr,
                     "%%v%d:%d = scf.for %%v%d = %%v%d to %%v%d step %%v%d "
                     "iter_args(",
                     res, 2 * nf, it, lo, hi, st);
  for (int i = 0; i < nf; ++i) {
    ac[i] = e.next++;
    as[i] = e.next++;
    attn_strbuf_printf(&hdr, "%s%%v%d = %%v%d, %%v%d = %%v%d", i ? ", " : "",
                       ac[i], c[i], as[i], s[i]);
  }
  attn_strbuf_printf(&hdr, ") -> (");
  for (int i = 0; i < 2 * nf; ++i)
    attn_strbuf_printf(&hdr, "%sf32", i ? ", " : "");
  attn_strbuf_printf(&hdr, ") {");
  line(&e, "%s", hdr.buf);
  attn_strbuf_free(&hdr);
  int row = op(&e, "arith.index_cast %%v%d : index to i64", it);
  int off = op(&e, "arith.addi %%v%d, %%v%d : i64",
               op(&e, "arith.muli %%v%d, %%v%d : i64",
                  op(&e, "arith.addi %%v%d, %%v%d : i64", head, row),
                  ci64(&e, k->head_dim * 2)),
               ucol);
  static const char *gep =
      "llvm.getelementptr %%%s[%%v%d] : (!llvm.ptr, i64) -> !llvm.ptr, i8";
  char fmt[160];
  int x1[8], x2[8];
  if (k->interleaved) {
    snprintf(fmt, sizeof fmt, gep, "x", off);
    int pa = op(&e, "%s", fmt);
    int va = op(&e, "llvm.load %%v%d {alignment = 16 : i64} : !llvm.ptr -> "
                    "vector<4xi32>",
                pa);
    for (int i = 0; i < 4; ++i)
      unpack2(&e, vec_elem(&e, va, i), &x1[i], &x2[i]);
  } else {
    snprintf(fmt, sizeof fmt, gep, "x", off);
    int pa = op(&e, "%s", fmt);
    int offb = op(&e, "arith.addi %%v%d, %%v%d : i64", off,
                  ci64(&e, k->rotary_dim)); // r/2 columns of 2 bytes
    snprintf(fmt, sizeof fmt, gep, "x", offb);
    int pb = op(&e, "%s", fmt);
    int va = op(&e, "llvm.load %%v%d {alignment = 16 : i64} : !llvm.ptr -> "
                    "vector<4xi32>",
                pa);
    int vb = op(&e, "llvm.load %%v%d {alignment = 16 : i64} : !llvm.ptr -> "
                    "vector<4xi32>",
                pb);
    for (int i = 0; i < 4; ++i) {
      unpack2(&e, vec_elem(&e, va, i), &x1[2 * i], &x1[2 * i + 1]);
      unpack2(&e, vec_elem(&e, vb, i), &x2[2 * i], &x2[2 * i + 1]);
    }
  }
  int y1[8], y2[8];
  for (int i = 0; i < nf; ++i) {
    y1[i] = fsub(&e, fmul(&e, x1[i], ac[i]), fmul(&e, x2[i], as[i]));
    y2[i] = fadd(&e, fmul(&e, x2[i], ac[i]), fmul(&e, x1[i], as[i]));
  }
  int undef = op(&e, "llvm.mlir.undef : vector<4xi32>");
  if (k->interleaved) {
    int v = undef;
    for (int i = 0; i < 4; ++i)
      v = op(&e, "llvm.insertelement %%v%d, %%v%d[%%v%d : i32] : vector<4xi32>",
             pack2(&e, y1[i], y2[i]), v, ci32(&e, i));
    snprintf(fmt, sizeof fmt, gep, "x_rot", off);
    int pd = op(&e, "%s", fmt);
    line(&e, "llvm.store %%v%d, %%v%d {alignment = 16 : i64} : vector<4xi32>, "
             "!llvm.ptr",
         v, pd);
  } else {
    int va = undef, vb = undef;
    for (int i = 0; i < 4; ++i) {
      va = op(&e, "llvm.insertelement %%v%d, %%v%d[%%v%d : i32] : vector<4xi32>",
              pack2(&e, y1[2 * i], y1[2 * i + 1]), va, ci32(&e, i));
      vb = op(&e, "llvm.insertelement %%v%d, %%v%d[%%v%d : i32] : vector<4xi32>",
              pack2(&e, y2[2 * i], y2[2 * i + 1]), vb, ci32(&e, i));
    }
    snprintf(fmt, sizeof fmt, gep, "x_rot", off);
    int pa = op(&e, "%s", fmt);
    int offb = op(&e, "arith.addi %%v%d, %%v%d : i64", off,
                  ci64(&e, k->rotary_dim));
    snprintf(fmt, sizeof fmt, gep, "x_rot", offb);
    int pb = op(&e, "%s", fmt);
    line(&e, "llvm.store %%v%d, %%v%d {alignment = 16 : i64} : vector<4xi32>, "
             "!llvm.ptr",
         va, pa);
    line(&e, "llvm.store %%v%d, %%v%d {alignment = 16 : i64} : vector<4xi32>, "
             "!llvm.ptr",
         vb, pb);
  }
  int nxt[16];
  for (int i = 0; i < nf; ++i) {
    nxt[2 * i] = fsub(&e, fmul(&e, ac[i], sc[i]), fmul(&e, as[i], ss[i]));
    nxt[2 * i + 1] = fadd(&e, fmul(&e, as[i], sc[i]), fmul(&e, ac[i], ss[i]));
  }
  const char *tys[16];
  for (int i = 0; i < 2 * nf; ++i)
    tys[i] = "f32";
  yield_list(&e, "scf.yield", nxt, 2 * nf, tys);
  line(&e, "}");
  line(&e, "llvm.return");
  attn_strbuf_printf(b, "}\n");
}
