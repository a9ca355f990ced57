//===- hopper_ptx.c - LLVM/NVVM-dialect MLIR text with inline PTX ---------===//
//
// The text helpers and Hopper instruction wrappers of hopper_ptx.h. Where
// MLIR 22's NVVM dialect has an op that translates to an LLVM intrinsic the
// wrapper emits it (mbarrier init/arrive/expect_tx, TMA, wgmma fence/commit/
// wait, setmaxnreg, fences); the rest is inline PTX, each with the reason.
// Inline PTX goes through llvm.inline_asm with side effects, so MLIR and
// LLVM keep it in place; results of several registers come back as structs
// named by the aliases !acc_<ty><n>, which the caller declares at the top of
// the text.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/hopper_ptx.h"

#include <stdarg.h>
#include <stdio.h>

void attn_ptx_init(struct attn_ptx *p, struct attn_strbuf *b, bool bf16) {
  p->b = b;
  p->next = 0;
  p->bf16 = bf16;
  p->ty = bf16 ? "bf16" : "f16";
}

//===-- Text helpers ------------------------------------------------------===//

void attn_ptx_line(struct attn_ptx *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[4096];
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  attn_strbuf_printf(p->b, "  %s\n", buf);
}

int attn_ptx_op(struct attn_ptx *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[4096];
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  int id = p->next++;
  attn_strbuf_printf(p->b, "  %%v%d = %s\n", id, buf);
  return id;
}

int attn_ptx_ci32(struct attn_ptx *p, long long v) {
  return attn_ptx_op(p, "arith.constant %lld : i32", v);
}
int attn_ptx_ci64(struct attn_ptx *p, long long v) {
  return attn_ptx_op(p, "arith.constant %lld : i64", v);
}
int attn_ptx_cidx(struct attn_ptx *p, long long v) {
  return attn_ptx_op(p, "arith.constant %lld : index", v);
}
int attn_ptx_cf32(struct attn_ptx *p, float v) {
  union {
    float f;
    unsigned u;
  } bits = {v};
  return attn_ptx_op(p, "arith.constant 0x%08X : f32", bits.u);
}
int attn_ptx_bin(struct attn_ptx *p, const char *name, int a, int b,
                 const char *ty) {
  return attn_ptx_op(p, "%s %%v%d, %%v%d : %s", name, a, b, ty);
}
int attn_ptx_addi(struct attn_ptx *p, int a, int b) {
  return attn_ptx_bin(p, "arith.addi", a, b, "i32");
}
int attn_ptx_muli(struct attn_ptx *p, int a, int b) {
  return attn_ptx_bin(p, "arith.muli", a, b, "i32");
}
int attn_ptx_addc(struct attn_ptx *p, int a, long long c) {
  return attn_ptx_addi(p, a, attn_ptx_ci32(p, c));
}
int attn_ptx_mulc(struct attn_ptx *p, int a, long long c) {
  return attn_ptx_muli(p, a, attn_ptx_ci32(p, c));
}
int attn_ptx_divc(struct attn_ptx *p, int a, long long c) {
  return attn_ptx_bin(p, "arith.divui", a, attn_ptx_ci32(p, c), "i32");
}
int attn_ptx_remc(struct attn_ptx *p, int a, long long c) {
  return attn_ptx_bin(p, "arith.remui", a, attn_ptx_ci32(p, c), "i32");
}
int attn_ptx_cmpc(struct attn_ptx *p, const char *pred, int a, long long c) {
  return attn_ptx_cmp(p, pred, a, attn_ptx_ci32(p, c));
}
int attn_ptx_cmp(struct attn_ptx *p, const char *pred, int a, int b) {
  return attn_ptx_op(p, "arith.cmpi %s, %%v%d, %%v%d : i32", pred, a, b);
}
int attn_ptx_fmul(struct attn_ptx *p, int a, int b) {
  return attn_ptx_bin(p, "arith.mulf", a, b, "f32");
}
int attn_ptx_fadd(struct attn_ptx *p, int a, int b) {
  return attn_ptx_bin(p, "arith.addf", a, b, "f32");
}
int attn_ptx_fsub(struct attn_ptx *p, int a, int b) {
  return attn_ptx_bin(p, "arith.subf", a, b, "f32");
}
int attn_ptx_fma3(struct attn_ptx *p, int a, int b, int c) {
  return attn_ptx_op(
      p, "llvm.intr.fma(%%v%d, %%v%d, %%v%d) : (f32, f32, f32) -> f32", a, b,
      c);
}
void attn_ptx_rotate(struct attn_ptx *p, int x1, int x2, int c, int s,
                     int *y1, int *y2) {
  *y1 = attn_ptx_fsub(p, attn_ptx_fmul(p, x1, c), attn_ptx_fmul(p, x2, s));
  *y2 = attn_ptx_fadd(p, attn_ptx_fmul(p, x2, c), attn_ptx_fmul(p, x1, s));
}
void attn_ptx_rotate_fma(struct attn_ptx *p, int x1, int x2, int c, int s,
                         int *y1, int *y2) {
  *y1 = attn_ptx_op(p, "math.fma %%v%d, %%v%d, %%v%d : f32", x1, c,
                    attn_ptx_op(p, "arith.negf %%v%d : f32",
                                attn_ptx_fmul(p, x2, s)));
  *y2 = attn_ptx_op(p, "math.fma %%v%d, %%v%d, %%v%d : f32", x2, c,
                    attn_ptx_fmul(p, x1, s));
}
int attn_ptx_sel(struct attn_ptx *p, int c, int a, int b, const char *ty) {
  return attn_ptx_op(p, "arith.select %%v%d, %%v%d, %%v%d : %s", c, a, b, ty);
}
int attn_ptx_to_index(struct attn_ptx *p, int a) {
  return attn_ptx_op(p, "arith.index_cast %%v%d : i32 to index", a);
}
int attn_ptx_from_index(struct attn_ptx *p, int a) {
  return attn_ptx_op(p, "arith.index_cast %%v%d : index to i32", a);
}

/// Inline PTX with side effects. rty is the result type (NULL for none);
/// operands are ids with their types.
int attn_ptx_asmv(struct attn_ptx *p, const char *rty, const char *cons,
                  const char *text, int n, const int *ids,
                  const char *const *tys) {
  struct attn_strbuf *b = p->b;
  int id = -1;
  if (rty) {
    id = p->next++;
    attn_strbuf_printf(b, "  %%v%d = ", id);
  } else {
    attn_strbuf_printf(b, "  ");
  }
  attn_strbuf_printf(b, "llvm.inline_asm has_side_effects \"%s\", \"%s\"", text,
                     cons);
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(b, "%s %%v%d", i ? "," : "", ids[i]);
  attn_strbuf_printf(b, " : (");
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(b, "%s%s", i ? ", " : "", tys[i]);
  attn_strbuf_printf(b, ") -> %s\n", rty ? rty : "()");
  return id;
}

void attn_ptx_asm0(struct attn_ptx *p, const char *text) {
  attn_ptx_asmv(p, NULL, "", text, 0, NULL, NULL);
}

void attn_ptx_asm_r(struct attn_ptx *p, const char *text, int a) {
  const char *t[] = {"i32"};
  attn_ptx_asmv(p, NULL, "r", text, 1, &a, t);
}

void attn_ptx_asm_rr(struct attn_ptx *p, const char *text, int a, int b) {
  int ids[] = {a, b};
  const char *t[] = {"i32", "i32"};
  attn_ptx_asmv(p, NULL, "r,r", text, 2, ids, t);
}

//===-- Hopper instructions -----------------------------------------------===//

/// The shared-memory address addr (i32, a shared::cta window offset) as the
/// !llvm.ptr<3> that the NVVM mbarrier ops take.
static int shared_ptr(struct attn_ptx *p, int addr) {
  return attn_ptx_op(p, "llvm.inttoptr %%v%d : i32 to !llvm.ptr<3>", addr);
}

void attn_ptx_mbar_init(struct attn_ptx *p, int addr, int count) {
  int bar = shared_ptr(p, addr);
  attn_ptx_line(p, "nvvm.mbarrier.init %%v%d, %%v%d : !llvm.ptr<3>, i32", bar,
                attn_ptx_ci32(p, count));
}

void attn_ptx_mbar_expect_tx(struct attn_ptx *p, int addr, long long bytes) {
  int bar = shared_ptr(p, addr);
  attn_ptx_line(p,
                "nvvm.mbarrier.arrive.expect_tx %%v%d, %%v%d : !llvm.ptr<3>, "
                "i32",
                bar, attn_ptx_ci32(p, bytes));
}

void attn_ptx_mbar_arrive(struct attn_ptx *p, int addr) {
  attn_ptx_line(p, "nvvm.mbarrier.arrive %%v%d : !llvm.ptr<3>",
                shared_ptr(p, addr));
}

/// Stays inline PTX, a loop inside one asm: nvvm.mbarrier.try_wait in an
/// scf.while made the loop visible to LLVM and cost 29 SASS instructions
/// (3%) in the projection program's attention main loop and 50 register
/// moves in its projection GEMMs; nvvm.mbarrier.try_wait.parity loops by
/// itself but is lowered to inline PTX by convert-nvvm-to-llvm anyway and
/// requires a suspend-time hint.
void attn_ptx_mbar_wait(struct attn_ptx *p, int addr, int parity) {
  attn_ptx_asm_rr(
      p,
      "{ .reg .pred p; WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, "
      "[$0], $1; @!p bra.uni WAIT; }",
      addr, parity);
}

void attn_ptx_fence_mbar_init(struct attn_ptx *p) {
  attn_ptx_line(p, "nvvm.fence.mbarrier.init");
}

void attn_ptx_fence_proxy_async(struct attn_ptx *p, bool global) {
  if (global)
    attn_ptx_line(p,
                  "nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}");
  else
    attn_ptx_line(p, "nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, "
                     "space = #nvvm.shared_space<cta>}");
}

void attn_ptx_setmaxnreg(struct attn_ptx *p, bool inc, int regs) {
  attn_ptx_line(p, "nvvm.setmaxregister %s %d", inc ? "increase" : "decrease",
                regs);
}

void attn_ptx_wgmma_fence(struct attn_ptx *p) {
  attn_ptx_line(p, "nvvm.wgmma.fence.aligned");
}

void attn_ptx_wgmma_commit(struct attn_ptx *p) {
  attn_ptx_line(p, "nvvm.wgmma.commit.group.sync.aligned");
}

void attn_ptx_wgmma_wait(struct attn_ptx *p, int n) {
  attn_ptx_line(p, "nvvm.wgmma.wait.group.sync.aligned %d", n);
}

void attn_ptx_wgmma_wait_after(struct attn_ptx *p, int after) {
  // The branch cannot go above the instruction that computes `after`, and
  // the wait, in both arms, cannot go above the branch. (A wait in one arm
  // only makes ptxas serialise every wgmma.)
  const char *t[] = {"f32"};
  attn_ptx_asmv(p, NULL, "f",
                "{ .reg .pred p; setp.eq.f32 p, $0, 0fBF800000; "
                "@p bra.uni W1; wgmma.wait_group.sync.aligned 0; bra.uni W2; "
                "W1: wgmma.wait_group.sync.aligned 0; W2: }",
                1, &after, t);
}

/// TMA: a 4-D box at coords (c0..c3) from tensor map `map` (i64 generic
/// address) into shared memory at dst, completing on mbarrier bar.
void attn_ptx_tma_load(struct attn_ptx *p, int dst, int map, const int c[4],
                       int bar) {
  // A shared::cta address is a valid shared::cluster address of this CTA.
  int to = attn_ptx_op(p, "llvm.inttoptr %%v%d : i32 to !llvm.ptr<7>", dst);
  int desc = attn_ptx_op(p, "llvm.inttoptr %%v%d : i64 to !llvm.ptr", map);
  int mbar = shared_ptr(p, bar);
  attn_ptx_line(p,
                "nvvm.cp.async.bulk.tensor.shared.cluster.global %%v%d, %%v%d, "
                "%%v%d, box [%%v%d, %%v%d, %%v%d, %%v%d] : !llvm.ptr<7>, "
                "!llvm.ptr",
                to, desc, mbar, c[0], c[1], c[2], c[3]);
}

void attn_ptx_tma_store(struct attn_ptx *p, int src, int map, const int c[4]) {
  int ids[] = {map, c[0], c[1], c[2], c[3], src};
  const char *t[] = {"i64", "i32", "i32", "i32", "i32", "i32"};
  attn_ptx_asmv(p, NULL, "l,r,r,r,r,r",
                "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group "
                "[$0, {$1, $2, $3, $4}], [$5];",
                6, ids, t);
}

void attn_ptx_bulk_commit(struct attn_ptx *p) {
  attn_ptx_asm0(p, "cp.async.bulk.commit_group;");
}

void attn_ptx_bulk_wait(struct attn_ptx *p, int n, bool read) {
  char text[64];
  snprintf(text, sizeof text, "cp.async.bulk.wait_group%s %d;",
           read ? ".read" : "", n);
  attn_ptx_asm0(p, text);
}

void attn_ptx_wait_until(struct attn_ptx *p, int addr, const char *cmp,
                         int target, const char *scope, long long timeout_ns) {
  char text[512];
  snprintf(text, sizeof text,
           "{ .reg .pred p; .reg .u32 v; .reg .u64 t0, t1; "
           "mov.u64 t0, %%globaltimer; "
           "POLL: ld.acquire.%s.global.u32 v, [$0]; setp.%s.u32 p, v, $1; "
           "@p bra.uni DONE; nanosleep.u32 64; mov.u64 t1, %%globaltimer; "
           "sub.u64 t1, t1, t0; setp.gt.u64 p, t1, %lld; @p trap; "
           "bra.uni POLL; DONE: }",
           scope, cmp, timeout_ns);
  int ids[] = {addr, target};
  const char *t[] = {"i64", "i32"};
  attn_ptx_asmv(p, NULL, "l,r", text, 2, ids, t);
}

void attn_ptx_store_release(struct attn_ptx *p, int addr, int v) {
  int ids[] = {addr, v};
  const char *t[] = {"i64", "i32"};
  attn_ptx_asmv(p, NULL, "l,r", "st.release.gpu.global.u32 [$0], $1;", 2, ids,
                t);
}

int attn_ptx_atom_inc64(struct attn_ptx *p, int addr) {
  const char *t[] = {"i64"};
  return attn_ptx_asmv(p, "i64", "=l,l",
                       "atom.relaxed.gpu.global.add.u64 $0, [$1], 1;", 1,
                       &addr, t);
}

int attn_ptx_pin(struct attn_ptx *p, int v, const char *ty, const char *cons) {
  char tied[16];
  snprintf(tied, sizeof tied, "=%s,0", cons);
  return attn_ptx_asmv(p, ty, tied, "", 1, &v, &ty);
}

int attn_ptx_shfl_xor(struct attn_ptx *p, int v, int lane_mask) {
  int ids[] = {v, attn_ptx_ci32(p, lane_mask)};
  const char *t[] = {"f32", "i32"};
  return attn_ptx_asmv(p, "f32", "=f,f,r",
                       "shfl.sync.bfly.b32 $0, $1, $2, 0x1f, 0xffffffff;", 2,
                       ids, t);
}

void attn_ptx_store_vec(struct attn_ptx *p, const int *w, int n,
                        const char *ty, int ptr) {
  int v = attn_ptx_op(p, "llvm.mlir.undef : vector<%dx%s>", n, ty);
  for (int i = 0; i < n; ++i)
    v = attn_ptx_op(
        p, "llvm.insertelement %%v%d, %%v%d[%%v%d : i32] : vector<%dx%s>",
        w[i], v, attn_ptx_ci32(p, i), n, ty);
  attn_ptx_line(p,
                "llvm.store %%v%d, %%v%d {alignment = %d : i64} : "
                "vector<%dx%s>, !llvm.ptr",
                v, ptr, 4 * n, n, ty);
}

void attn_ptx_store16_if(struct attn_ptx *p, const int w[4], int ptr,
                         int pred) {
  int ids[6] = {ptr, w[0], w[1], w[2], w[3],
                attn_ptx_op(p, "arith.extui %%v%d : i1 to i32", pred)};
  const char *t[6] = {"!llvm.ptr", "i32", "i32", "i32", "i32", "i32"};
  attn_ptx_asmv(p, NULL, "l,r,r,r,r,r",
                "{ .reg .pred p; setp.ne.b32 p, $5, 0; "
                "@p st.global.v4.b32 [$0], {$1, $2, $3, $4}; }",
                6, ids, t);
}

void attn_ptx_quad_transpose(struct attn_ptx *p, int lane4, int w[4]) {
  for (int round = 0; round < 2; ++round) {
    int m = round ? 1 : 2; // the lane mask, and the words' distance
    int hi = attn_ptx_op(p, "arith.cmpi ne, %%v%d, %%v%d : i32",
                         attn_ptx_op(p, "arith.andi %%v%d, %%v%d : i32", lane4,
                                     attn_ptx_ci32(p, m)),
                         attn_ptx_ci32(p, 0));
    // Round 0 sends words {0,1} or {2,3}, round 1 words {0,2} or {1,3}.
    int lo_idx[2] = {0, round ? 2 : 1};
    for (int t = 0; t < 2; ++t) {
      int a = lo_idx[t], b = a + m; // b: a's partner word
      int send = attn_ptx_sel(p, hi, w[a], w[b], "i32");
      int f = attn_ptx_op(p, "arith.bitcast %%v%d : i32 to f32", send);
      int got = attn_ptx_op(p, "arith.bitcast %%v%d : f32 to i32",
                            attn_ptx_shfl_xor(p, f, m));
      int na = attn_ptx_sel(p, hi, got, w[a], "i32");
      w[b] = attn_ptx_sel(p, hi, w[b], got, "i32");
      w[a] = na;
    }
  }
}

int attn_ptx_vote_any(struct attn_ptx *p, int pred) {
  int ids[] = {attn_ptx_op(p, "arith.extui %%v%d : i1 to i32", pred)};
  const char *t[] = {"i32"};
  int any = attn_ptx_asmv(p, "i32", "=r,r",
                          "{ .reg .pred p, q; setp.ne.b32 p, $1, 0; "
                          "vote.sync.any.pred q, p, 0xffffffff; "
                          "selp.b32 $0, 1, 0, q; }",
                          1, ids, t);
  return attn_ptx_cmpc(p, "ne", any, 0);
}

int attn_ptx_ex2(struct attn_ptx *p, int v) {
  const char *t[] = {"f32"};
  return attn_ptx_asmv(p, "f32", "=f,f", "ex2.approx.ftz.f32 $0, $1;", 1, &v,
                       t);
}

int attn_ptx_rcp(struct attn_ptx *p, int v) {
  const char *t[] = {"f32"};
  return attn_ptx_asmv(p, "f32", "=f,f", "rcp.approx.ftz.f32 $0, $1;", 1, &v,
                       t);
}

/// Packs (lo, hi) f32 into one register of two 16-bit floats.
int attn_ptx_pack2(struct attn_ptx *p, int lo, int hi) {
  int ids[] = {hi, lo};
  const char *t[] = {"f32", "f32"};
  return attn_ptx_asmv(p, "i32", "=r,f,f",
                       p->bf16 ? "cvt.rn.bf16x2.f32 $0, $1, $2;"
                               : "cvt.rn.f16x2.f32 $0, $1, $2;",
                       2, ids, t);
}

/// Unpacks a register of two 16-bit floats into (lo, hi) f32.
void attn_ptx_unpack2(struct attn_ptx *p, int w, int *lo, int *hi) {
  if (p->bf16) {
    int l = attn_ptx_op(p, "arith.shli %%v%d, %%v%d : i32", w,
                        attn_ptx_ci32(p, 16));
    int h = attn_ptx_op(p, "arith.andi %%v%d, %%v%d : i32", w,
                        attn_ptx_ci32(p, (int32_t)0xffff0000));
    *lo = attn_ptx_op(p, "arith.bitcast %%v%d : i32 to f32", l);
    *hi = attn_ptx_op(p, "arith.bitcast %%v%d : i32 to f32", h);
    return;
  }
  const char *t[] = {"i32"};
  int r =
      attn_ptx_asmv(p, "!llvm.struct<(f32, f32)>", "=f,=f,r",
                    "{ .reg .b16 l, h; mov.b32 {l, h}, $2; cvt.f32.f16 $0, l; "
                    "cvt.f32.f16 $1, h; }",
                    1, &w, t);
  *lo = attn_ptx_op(p, "llvm.extractvalue %%v%d[0] : !llvm.struct<(f32, f32)>",
                    r);
  *hi = attn_ptx_op(p, "llvm.extractvalue %%v%d[1] : !llvm.struct<(f32, f32)>",
                    r);
}

int attn_ptx_to_f32_16(struct attn_ptx *p, int h16) {
  if (p->bf16) {
    int w = attn_ptx_op(p, "arith.extui %%v%d : i16 to i32", h16);
    int s = attn_ptx_op(p, "arith.shli %%v%d, %%v%d : i32", w,
                        attn_ptx_ci32(p, 16));
    return attn_ptx_op(p, "arith.bitcast %%v%d : i32 to f32", s);
  }
  const char *t[] = {"i16"};
  return attn_ptx_asmv(p, "f32", "=f,h", "cvt.f32.f16 $0, $1;", 1, &h16, t);
}

int attn_ptx_from_f32_16(struct attn_ptx *p, int f) {
  const char *t[] = {"f32"};
  return attn_ptx_asmv(
      p, "i16", "=h,f",
      p->bf16 ? "cvt.rn.bf16.f32 $0, $1;" : "cvt.rn.f16.f32 $0, $1;", 1, &f, t);
}

/// A pointer into shared memory at byte offset off (i32) from the base.
int attn_ptx_smem_ptr(struct attn_ptx *p, int smem, int off) {
  return attn_ptx_op(p,
                     "llvm.getelementptr %%v%d[%%v%d] : (!llvm.ptr<3>, i32) -> "
                     "!llvm.ptr<3>, i8",
                     smem, off);
}

/// Passes values through an empty asm so that the compiler keeps their
/// definitions on this side of the surrounding wgmma fence/wait.
void attn_ptx_reg_fence(struct attn_ptx *p, int *vals, int n, const char *ty,
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
  int r = attn_ptx_asmv(p, sty, cons.buf ? cons.buf : "", "", n, vals, tys);
  attn_strbuf_free(&cons);
  for (int i = 0; i < n; ++i)
    vals[i] = attn_ptx_op(p, "llvm.extractvalue %%v%d[%d] : %s", r, i, sty);
}

/// acc = wgmma(A from shared memory via descA, B via descB) (+ acc when
/// scale_d is non-zero); n accumulators m64nNk16 with N = 2n.
/// Stays inline PTX: LLVM 22 has no wgmma.mma_async intrinsic, so
/// nvvm.wgmma.mma_async is lowered by convert-nvvm-to-llvm (not in our
/// target pipeline) into this same inline asm, and it takes scale-d as an
/// attribute where this wrapper is given an SSA value.
void attn_ptx_wgmma_ss(struct attn_ptx *p, int *acc, int n, int desc_a,
                       int desc_b, int scale_d, bool trans_b) {
  struct attn_strbuf text = {0}, cons = {0};
  attn_strbuf_printf(&text,
                     "{ .reg .pred p; setp.ne.b32 p, $%d, 0; "
                     "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {",
                     2 * n + 2, 2 * n, p->ty, p->ty);
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&text, "%s$%d", i ? ", " : "", i);
  attn_strbuf_printf(&text, "}, $%d, $%d, p, 1, 1, 0, %d; }", 2 * n, 2 * n + 1,
                     trans_b ? 1 : 0);
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
  int r = attn_ptx_asmv(p, sty, cons.buf, text.buf, n + 3, ids, tys);
  for (int i = 0; i < n; ++i)
    acc[i] = attn_ptx_op(p, "llvm.extractvalue %%v%d[%d] : %s", r, i, sty);
  attn_strbuf_free(&text);
  attn_strbuf_free(&cons);
}

/// acc += wgmma(A from four registers a[0..3], B via descB, transposed).
/// Stays inline PTX: nvvm.wgmma.mma_async has no register-A form (its
/// descriptorA is an i64 shared-memory descriptor only).
void attn_ptx_wgmma_rs(struct attn_ptx *p, int *acc, int n, const int a[4],
                       int desc_b, bool trans_b) {
  struct attn_strbuf text = {0}, cons = {0};
  attn_strbuf_printf(&text,
                     "{ .reg .pred p; setp.ne.b32 p, $%d, 0; "
                     "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {",
                     2 * n + 5, 2 * n, p->ty, p->ty);
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&text, "%s$%d", i ? ", " : "", i);
  attn_strbuf_printf(&text, "}, {$%d, $%d, $%d, $%d}, $%d, p, 1, 1, %d; }",
                     2 * n, 2 * n + 1, 2 * n + 2, 2 * n + 3, 2 * n + 4,
                     trans_b ? 1 : 0);
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
  ids[n + 5] = attn_ptx_ci32(p, 1);
  tys[n + 5] = "i32";
  char sty[32];
  snprintf(sty, sizeof sty, "!acc_f32%d", n);
  int r = attn_ptx_asmv(p, sty, cons.buf, text.buf, n + 6, ids, tys);
  for (int i = 0; i < n; ++i)
    acc[i] = attn_ptx_op(p, "llvm.extractvalue %%v%d[%d] : %s", r, i, sty);
  attn_strbuf_free(&text);
  attn_strbuf_free(&cons);
}

/// The wgmma shared-memory descriptor of address addr (i32): 128-byte
/// swizzle, leading and stride byte offsets lbo and sbo.
int attn_ptx_make_desc(struct attn_ptx *p, int addr, long long lbo,
                       long long sbo) {
  long long bits = ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (1LL << 62);
  int a4 = attn_ptx_op(p, "arith.shrui %%v%d, %%v%d : i32", addr,
                       attn_ptx_ci32(p, 4));
  int a14 = attn_ptx_op(p, "arith.andi %%v%d, %%v%d : i32", a4,
                        attn_ptx_ci32(p, 0x3FFF));
  int wide = attn_ptx_op(p, "arith.extui %%v%d : i32 to i64", a14);
  return attn_ptx_op(p, "arith.ori %%v%d, %%v%d : i64", wide,
                     attn_ptx_ci64(p, bits));
}

int attn_ptx_desc_add(struct attn_ptx *p, int desc, long long bytes) {
  return bytes ? attn_ptx_op(p, "arith.addi %%v%d, %%v%d : i64", desc,
                             attn_ptx_ci64(p, bytes >> 4))
               : desc;
}

/// Shared-memory byte offset (i32) of element (row, col) of a swizzled tile
/// at base with `rows` rows; row and col are i32 values.
int attn_ptx_swz(struct attn_ptx *p, int base, int rows, int row, int col) {
  int region = attn_ptx_divc(p, col, 64);
  int cc = attn_ptx_remc(p, col, 64);
  int chunk =
      attn_ptx_op(p, "arith.xori %%v%d, %%v%d : i32", attn_ptx_divc(p, cc, 8),
                  attn_ptx_op(p, "arith.andi %%v%d, %%v%d : i32", row,
                              attn_ptx_ci32(p, 7)));
  int off = attn_ptx_addi(
      p, attn_ptx_mulc(p, region, (long long)rows * 128),
      attn_ptx_addi(
          p, attn_ptx_mulc(p, row, 128),
          attn_ptx_addi(p, attn_ptx_mulc(p, chunk, 16),
                        attn_ptx_mulc(p, attn_ptx_remc(p, cc, 8), 2))));
  return attn_ptx_addi(p, base, off);
}

void attn_ptx_sincos(struct attn_ptx *p, int angle, int *c, int *s) {
  *c = attn_ptx_op(p, "llvm.call @__nv_cosf(%%v%d) : (f32) -> f32", angle);
  *s = attn_ptx_op(p, "llvm.call @__nv_sinf(%%v%d) : (f32) -> f32", angle);
}

/// Emits an `scf.yield` (or any terminator) of ids, all of type ty.
int attn_ptx_open_if(struct attn_ptx *p, int cond, int n,
                     const char *const *tys) {
  int r = p->next++;
  struct attn_strbuf h = {0};
  attn_strbuf_printf(&h, "%%v%d:%d = scf.if %%v%d -> (", r, n, cond);
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&h, "%s%s", i ? ", " : "", tys ? tys[i] : "f32");
  attn_strbuf_printf(&h, ") {");
  attn_ptx_line(p, "%s", h.buf ? h.buf : "");
  attn_strbuf_free(&h);
  return r;
}

void attn_ptx_open_for(struct attn_ptx *p, int res, int it, int lo, int hi,
                       int st, int n, const int *init, int *arg,
                       const char *const *tys) {
  struct attn_strbuf h = {0};
  attn_strbuf_printf(&h,
                     "%%v%d:%d = scf.for %%v%d = %%v%d to %%v%d step %%v%d "
                     "iter_args(",
                     res, n, it, lo, hi, st);
  for (int i = 0; i < n; ++i) {
    arg[i] = p->next++;
    attn_strbuf_printf(&h, "%s%%v%d = %%v%d", i ? ", " : "", arg[i], init[i]);
  }
  attn_strbuf_printf(&h, ") -> (");
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&h, "%s%s", i ? ", " : "", tys ? tys[i] : "f32");
  attn_strbuf_printf(&h, ") {");
  attn_ptx_line(p, "%s", h.buf ? h.buf : "");
  attn_strbuf_free(&h);
}

void attn_ptx_yield_list(struct attn_ptx *p, const char *kw, const int *ids,
                         int n, const char *const *tys) {
  struct attn_strbuf y = {0};
  attn_strbuf_printf(&y, "%s ", kw);
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&y, "%s%%v%d", i ? ", " : "", ids[i]);
  attn_strbuf_printf(&y, " : ");
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&y, "%s%s", i ? ", " : "", tys ? tys[i] : "f32");
  attn_ptx_line(p, "%s", y.buf);
  attn_strbuf_free(&y);
}

//===-- Staged output rows ------------------------------------------------===//

int64_t attn_ptx_rows_pitch(int64_t bytes) { return bytes + 16; }

static void if_copier(struct attn_ptx *p, const struct attn_ptx_rows *r) {
  attn_ptx_line(p, "scf.if %%v%d {", attn_ptx_cmpc(p, "ult", r->wt, 64));
}

void attn_ptx_rows_drain(struct attn_ptx *p, const struct attn_ptx_rows *r,
                         enum attn_ptx_drain how, bool meet) {
  if_copier(p, r);
  attn_ptx_bulk_wait(p, 0, how == ATTN_PTX_DRAIN_READ);
  if (how == ATTN_PTX_DRAIN_PUBLISHED)
    attn_ptx_fence_proxy_async(p, true);
  attn_ptx_line(p, "}");
  if (meet)
    attn_ptx_asm_r(p, "bar.sync $0, 128;", r->bar);
}

void attn_ptx_rows_put(struct attn_ptx *p, const struct attn_ptx_rows *r,
                       const int *acc, int n, const int *scale) {
  int warp = attn_ptx_divc(p, r->wt, 32), lane = attn_ptx_remc(p, r->wt, 32);
  int row = attn_ptx_addi(p, attn_ptx_mulc(p, warp, 16),
                          attn_ptx_divc(p, lane, 4));
  int base = attn_ptx_addi(
      p, r->base,
      attn_ptx_addi(p, attn_ptx_mulc(p, row, r->pitch),
                    attn_ptx_mulc(p, attn_ptx_remc(p, lane, 4), 4)));
  // Register i + 2 h (i % 4 < 2) is row + 8 h, 16-byte chunk i / 4.
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < n; i += 4) {
      int lo = acc[i + 2 * h], hi = acc[i + 2 * h + 1];
      if (scale) {
        hi = attn_ptx_fmul(p, hi, scale[h]);
        lo = attn_ptx_fmul(p, lo, scale[h]);
      }
      int w = attn_ptx_pack2(p, lo, hi);
      attn_ptx_asm_rr(p, "st.shared.b32 [$0], $1;",
                      attn_ptx_addc(p, base, 8 * h * r->pitch + 4LL * i), w);
    }
}

void attn_ptx_rows_ready(struct attn_ptx *p, const struct attn_ptx_rows *r) {
  attn_ptx_fence_proxy_async(p, false);
  attn_ptx_asm_r(p, "bar.sync $0, 128;", r->bar);
}

void attn_ptx_rows_copy_open(struct attn_ptx *p,
                             const struct attn_ptx_rows *r) {
  if_copier(p, r);
}

/// The shared address (i32) of this thread's row.
static int own_row(struct attn_ptx *p, const struct attn_ptx_rows *r) {
  return attn_ptx_addi(p, r->base, attn_ptx_mulc(p, r->wt, r->pitch));
}

void attn_ptx_rows_copy(struct attn_ptx *p, const struct attn_ptx_rows *r,
                        int dst, int bytes) {
  int ids[] = {dst, own_row(p, r), bytes};
  const char *ty[] = {"i64", "i32", "i32"};
  attn_ptx_asmv(p, NULL, "l,r,r",
                "cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;",
                3, ids, ty);
}

void attn_ptx_rows_copy_n(struct attn_ptx *p, const struct attn_ptx_rows *r,
                          int dst, long long n) {
  int ids[] = {dst, own_row(p, r)};
  const char *ty[] = {"i64", "i32"};
  char text[96];
  snprintf(text, sizeof text,
           "cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], %lld;", n);
  attn_ptx_asmv(p, NULL, "l,r", text, 2, ids, ty);
}

void attn_ptx_rows_copy_close(struct attn_ptx *p) {
  attn_ptx_bulk_commit(p);
  attn_ptx_line(p, "}");
}
