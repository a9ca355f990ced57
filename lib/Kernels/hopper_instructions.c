//===- hopper_instructions.c - The Hopper instructions, built -------------===//
//
// The bottom floor of lib/Kernels for the sm_90a kernels (kernels_internal.h):
// mbarriers, TMA, wgmma, fences, bulk copies, flags in global memory,
// wgmma descriptors and the 128-byte swizzle, register fences and 16-bit
// conversions. The same ops, in the same order, as the text vocabulary
// lib/Transforms/hopper_ptx.c made, so that the kernels built on it write the
// same PTX. Where MLIR 22's NVVM or LLVM dialect has an op that translates
// to an LLVM intrinsic or instruction it is used (mbarrier init/arrive/
// expect_tx, TMA loads and stores, bulk copies and their commit/wait, wgmma
// fence/commit/wait, setmaxnreg, proxy fences, rcp.approx, 16-bit
// conversions, release stores, acquire loads, relaxed atomics at GPU
// scope); every inline PTX says why no upstream op is. Inline PTX goes
// through llvm.inline_asm with side effects, so MLIR and LLVM keep it in
// place.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/LLVM.h"

#include <stdio.h>
#include <string.h>

static MlirStringRef str(const char *s) {
  return mlirStringRefCreateFromCString(s);
}

/// An attribute literal of the NVVM dialect (#nvvm.proxy_kind<...> ...).
static MlirAttribute nvvm_attr(struct attn_builder *b, const char *text) {
  return mlirAttributeParseGet(b->ctx, str(text));
}

/// The result of an inline PTX with one result.
static MlirValue asm1(struct attn_builder *b, MlirType res, const char *cons,
                      const char *text, intptr_t n, const MlirValue *opd) {
  return attn_b_result(attn_k_asm(b, res, cons, text, n, opd), 0);
}

//===-- Shortcuts ---------------------------------------------------------===//

void attn_k_asm_r(struct attn_builder *b, const char *text, MlirValue x) {
  attn_k_asm(b, (MlirType){NULL}, "r", text, 1, &x);
}

void attn_k_asm_rr(struct attn_builder *b, const char *text, MlirValue x,
                   MlirValue y) {
  MlirValue opd[] = {x, y};
  attn_k_asm(b, (MlirType){NULL}, "r,r", text, 2, opd);
}

void attn_k_rotate_fma(struct attn_builder *b, MlirValue x1, MlirValue x2,
                       MlirValue c, MlirValue s, MlirValue *y1, MlirValue *y2) {
  *y1 = attn_b_fma(b, x1, c, attn_b_negf(b, attn_b_mulf(b, x2, s)));
  *y2 = attn_b_fma(b, x2, c, attn_b_mulf(b, x1, s));
}

MlirValue attn_k_inttoptr(struct attn_builder *b, MlirValue x, MlirType to) {
  return attn_b_op1(b, "llvm.inttoptr", to, 1, &x, 0, NULL);
}

//===-- mbarriers and fences ----------------------------------------------===//

/// The shared address addr (i32, a shared::cta window offset) as the
/// !llvm.ptr<3> that the NVVM mbarrier ops take.
static MlirValue shared_ptr(struct attn_builder *b, MlirValue addr) {
  return attn_k_inttoptr(b, addr, b->t.ptr_shared);
}

/// The properties nvvm.mbarrier.arrive(.expect_tx) print with by default:
/// not relaxed, CTA scope.
static intptr_t arrive_attrs(struct attn_builder *b, MlirNamedAttribute *a) {
  a[0] = attn_b_named(b, "relaxed", attn_b_attr_bool(b, false));
  a[1] = attn_b_named(b, "scope", nvvm_attr(b, "#nvvm.mem_scope<cta>"));
  return 2;
}

void attn_k_mbar_init(struct attn_builder *b, MlirValue addr, int count) {
  MlirValue bar = shared_ptr(b, addr);
  MlirValue opd[] = {bar, attn_b_i32(b, count)};
  attn_b_op(b, "nvvm.mbarrier.init", 0, NULL, 2, opd, 0, NULL, 0);
}

void attn_k_mbar_expect_tx(struct attn_builder *b, MlirValue addr,
                           int64_t bytes) {
  MlirValue bar = shared_ptr(b, addr);
  MlirValue opd[] = {bar, attn_b_i32(b, bytes)};
  MlirNamedAttribute a[2];
  attn_b_op(b, "nvvm.mbarrier.arrive.expect_tx", 0, NULL, 2, opd,
            arrive_attrs(b, a), a, 0);
}

void attn_k_mbar_arrive(struct attn_builder *b, MlirValue addr) {
  MlirValue bar = shared_ptr(b, addr);
  MlirNamedAttribute a[2];
  attn_b_op(b, "nvvm.mbarrier.arrive", 0, NULL, 1, &bar, arrive_attrs(b, a),
            a, 0);
}

/// Stays inline PTX, a loop inside one asm: nvvm.mbarrier.try_wait in an
/// scf.while made the loop visible to LLVM and cost 29 SASS instructions
/// (3%) in the projection program's attention main loop and 50 register
/// moves in its projection GEMMs; nvvm.mbarrier.try_wait.parity loops by
/// itself but is lowered to inline PTX by convert-nvvm-to-llvm anyway and
/// requires a suspend-time hint.
void attn_k_mbar_wait(struct attn_builder *b, MlirValue addr,
                      MlirValue parity) {
  attn_k_asm_rr(b,
                "{ .reg .pred p; WAIT: mbarrier.try_wait.parity.shared::cta.b64 "
                "p, [$0], $1; @!p bra.uni WAIT; }",
                addr, parity);
}

void attn_k_fence_mbar_init(struct attn_builder *b) {
  attn_b_op(b, "nvvm.fence.mbarrier.init", 0, NULL, 0, NULL, 0, NULL, 0);
}

void attn_k_fence_proxy_async(struct attn_builder *b, bool global) {
  MlirNamedAttribute a[2];
  intptr_t n = 0;
  a[n++] = attn_b_named(b, "kind",
                        nvvm_attr(b, global ? "#nvvm.proxy_kind<async.global>"
                                            : "#nvvm.proxy_kind<async.shared>"));
  if (!global)
    a[n++] = attn_b_named(b, "space", nvvm_attr(b, "#nvvm.shared_space<cta>"));
  attn_b_op(b, "nvvm.fence.proxy", 0, NULL, 0, NULL, n, a, 0);
}

void attn_k_setmaxnreg(struct attn_builder *b, bool inc, int regs) {
  MlirNamedAttribute a[] = {
      attn_b_named(b, "action", nvvm_attr(b, inc ? "#nvvm<action increase>"
                                                 : "#nvvm<action decrease>")),
      attn_b_named(b, "regCount", attn_b_attr_i32(b, regs)),
  };
  attn_b_op(b, "nvvm.setmaxregister", 0, NULL, 0, NULL, 2, a, 0);
}

//===-- wgmma -------------------------------------------------------------===//

void attn_k_wgmma_fence(struct attn_builder *b) {
  attn_b_op(b, "nvvm.wgmma.fence.aligned", 0, NULL, 0, NULL, 0, NULL, 0);
}

void attn_k_wgmma_commit(struct attn_builder *b) {
  attn_b_op(b, "nvvm.wgmma.commit.group.sync.aligned", 0, NULL, 0, NULL, 0,
            NULL, 0);
}

void attn_k_wgmma_wait(struct attn_builder *b, int n) {
  MlirNamedAttribute a = attn_b_named(b, "group", attn_b_attr_i64(b, n));
  attn_b_op(b, "nvvm.wgmma.wait.group.sync.aligned", 0, NULL, 0, NULL, 1, &a,
            0);
}

void attn_k_wgmma_wait_after(struct attn_builder *b, MlirValue after) {
  // Inline PTX: the branch cannot go above the instruction that computes
  // `after`, and the wait, in both arms, cannot go above the branch (a wait
  // in one arm only makes ptxas serialise every wgmma); no upstream op ties
  // a wait to a value.
  attn_k_asm(b, (MlirType){NULL}, "f",
             "{ .reg .pred p; setp.eq.f32 p, $0, 0fBF800000; "
             "@p bra.uni W1; wgmma.wait_group.sync.aligned 0; bra.uni W2; "
             "W1: wgmma.wait_group.sync.aligned 0; W2: }",
             1, &after);
}

/// The constraints of a wgmma over n accumulators tied to its results, then
/// `rest` for the other operands.
static void wgmma_constraints(char *cons, size_t len, int n,
                              const char *rest) {
  size_t at = 0;
  for (int i = 0; i < n && at < len; ++i)
    at += (size_t)snprintf(cons + at, len - at, "%s=f", i ? "," : "");
  for (int i = 0; i < n && at < len; ++i)
    at += (size_t)snprintf(cons + at, len - at, ",%d", i);
  if (at < len)
    snprintf(cons + at, len - at, "%s", rest);
}

/// `{$0, ..., $(n-1)}` after text[0..at), for the accumulators.
static size_t wgmma_acc_list(char *text, size_t at, size_t len, int n) {
  for (int i = 0; i < n && at < len; ++i)
    at += (size_t)snprintf(text + at, len - at, "%s$%d", i ? ", " : "", i);
  return at;
}

/// The wgmma asm's n results back into acc.
static void wgmma_results(struct attn_builder *b, MlirOperation op,
                          MlirValue *acc, int n) {
  MlirValue r = attn_b_result(op, 0);
  for (int i = 0; i < n; ++i)
    acc[i] = attn_k_extract(b, r, i, b->t.f32);
}

/// Stays inline PTX: LLVM 22 has no wgmma.mma_async intrinsic, so
/// nvvm.wgmma.mma_async is lowered by convert-nvvm-to-llvm (not in our
/// target pipeline) into this same inline asm, and it takes scale-d as an
/// attribute where this wrapper is given an SSA value.
void attn_k_wgmma_ss(struct attn_builder *b, bool bf16, MlirValue *acc, int n,
                     MlirValue desc_a, MlirValue desc_b, MlirValue scale_d,
                     bool trans_b) {
  attn_k_wgmma_ss_t(b, bf16, acc, n, desc_a, desc_b, scale_d, false, trans_b);
}

void attn_k_wgmma_ss_t(struct attn_builder *b, bool bf16, MlirValue *acc,
                       int n, MlirValue desc_a, MlirValue desc_b,
                       MlirValue scale_d, bool trans_a, bool trans_b) {
  const char *ty = bf16 ? "bf16" : "f16";
  char text[4096], cons[2048];
  size_t at = (size_t)snprintf(
      text, sizeof text,
      "{ .reg .pred p; setp.ne.b32 p, $%d, 0; "
      "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {",
      2 * n + 2, 2 * n, ty, ty);
  at = wgmma_acc_list(text, at, sizeof text, n);
  if (at < sizeof text)
    snprintf(text + at, sizeof text - at, "}, $%d, $%d, p, 1, 1, %d, %d; }",
             2 * n, 2 * n + 1, trans_a ? 1 : 0, trans_b ? 1 : 0);
  wgmma_constraints(cons, sizeof cons, n, ",l,l,r");
  MlirValue opd[ATTN_K_MAX_REGS + 3];
  for (int i = 0; i < n; ++i)
    opd[i] = acc[i];
  opd[n] = desc_a;
  opd[n + 1] = desc_b;
  opd[n + 2] = scale_d;
  MlirOperation op = attn_k_asm(b, attn_k_struct(b, n, b->t.f32), cons, text,
                                n + 3, opd);
  wgmma_results(b, op, acc, n);
}

/// Stays inline PTX: nvvm.wgmma.mma_async has no register-A form (its
/// descriptorA is an i64 shared-memory descriptor only).
void attn_k_wgmma_rs(struct attn_builder *b, bool bf16, MlirValue *acc, int n,
                     const MlirValue a[4], MlirValue desc_b, bool trans_b) {
  const char *ty = bf16 ? "bf16" : "f16";
  char text[4096], cons[2048];
  size_t at = (size_t)snprintf(
      text, sizeof text,
      "{ .reg .pred p; setp.ne.b32 p, $%d, 0; "
      "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {",
      2 * n + 5, 2 * n, ty, ty);
  at = wgmma_acc_list(text, at, sizeof text, n);
  if (at < sizeof text)
    snprintf(text + at, sizeof text - at,
             "}, {$%d, $%d, $%d, $%d}, $%d, p, 1, 1, %d; }", 2 * n, 2 * n + 1,
             2 * n + 2, 2 * n + 3, 2 * n + 4, trans_b ? 1 : 0);
  wgmma_constraints(cons, sizeof cons, n, ",r,r,r,r,l,r");
  MlirValue opd[ATTN_K_MAX_REGS + 6];
  for (int i = 0; i < n; ++i)
    opd[i] = acc[i];
  for (int i = 0; i < 4; ++i)
    opd[n + i] = a[i];
  opd[n + 4] = desc_b;
  opd[n + 5] = attn_b_i32(b, 1);
  MlirOperation op = attn_k_asm(b, attn_k_struct(b, n, b->t.f32), cons, text,
                                n + 6, opd);
  wgmma_results(b, op, acc, n);
}

MlirValue attn_k_make_desc(struct attn_builder *b, MlirValue addr, int64_t lbo,
                           int64_t sbo) {
  int64_t bits = ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (1LL << 62);
  MlirValue a4 = attn_b_binary(b, "arith.shrui", addr, attn_b_i32(b, 4));
  MlirValue a14 = attn_b_andi(b, a4, attn_b_i32(b, 0x3FFF));
  MlirValue wide = attn_k_i64_of(b, a14);
  return attn_b_ori(b, wide, attn_b_i64(b, bits));
}

MlirValue attn_k_desc_add(struct attn_builder *b, MlirValue desc,
                          int64_t bytes) {
  return bytes ? attn_b_addi(b, desc, attn_b_i64(b, bytes >> 4)) : desc;
}

MlirValue attn_k_swz(struct attn_builder *b, MlirValue base, int64_t rows,
                     MlirValue row, MlirValue col) {
  MlirValue region = attn_k_divc(b, col, 64);
  MlirValue cc = attn_k_remc(b, col, 64);
  MlirValue chunk =
      attn_b_xori(b, attn_k_divc(b, cc, 8), attn_b_andi(b, row, attn_b_i32(b, 7)));
  MlirValue off = attn_b_addi(
      b, attn_k_mulc(b, region, rows * 128),
      attn_b_addi(b, attn_k_mulc(b, row, 128),
                  attn_b_addi(b, attn_k_mulc(b, chunk, 16),
                              attn_k_mulc(b, attn_k_remc(b, cc, 8), 2))));
  return attn_b_addi(b, base, off);
}

//===-- TMA and bulk copies -----------------------------------------------===//

void attn_k_tma_load(struct attn_builder *b, MlirValue dst, MlirValue map,
                     const MlirValue c[4], MlirValue bar) {
  // A shared::cta address is a valid shared::cluster address of this CTA.
  MlirValue to =
      attn_k_inttoptr(b, dst, mlirLLVMPointerTypeGet(b->ctx, 7));
  MlirValue desc = attn_k_inttoptr(b, map, b->t.ptr);
  MlirValue mbar = shared_ptr(b, bar);
  MlirValue opd[] = {to, desc, c[0], c[1], c[2], c[3], mbar};
  int32_t seg[8] = {1, 1, 4, 1, 0, 0, 0, 0};
  MlirNamedAttribute a[] = {
      attn_b_named(b, "isCTAOnly", attn_b_attr_bool(b, false)),
      attn_b_named(b, "mode", nvvm_attr(b, "#nvvm.tma_load_mode<tile>")),
      attn_b_named(b, "operandSegmentSizes",
                   mlirDenseI32ArrayGet(b->ctx, 8, seg)),
  };
  attn_b_op(b, "nvvm.cp.async.bulk.tensor.shared.cluster.global", 0, NULL, 7,
            opd, 3, a, 0);
}

void attn_k_tma_store(struct attn_builder *b, MlirValue src, MlirValue map,
                      const MlirValue c[4]) {
  MlirValue opd[] = {attn_k_inttoptr(b, map, b->t.ptr), shared_ptr(b, src),
                     c[0], c[1], c[2], c[3]};
  int32_t seg[5] = {1, 1, 4, 0, 0}; // map, src, coordinates, l2 hint, pred
  MlirNamedAttribute a[] = {
      attn_b_named(b, "mode", nvvm_attr(b, "#nvvm.tma_store_mode<tile>")),
      attn_b_named(b, "operandSegmentSizes",
                   mlirDenseI32ArrayGet(b->ctx, 5, seg)),
  };
  attn_b_op(b, "nvvm.cp.async.bulk.tensor.global.shared.cta", 0, NULL, 6, opd,
            2, a, 0);
}

void attn_k_bulk_copy_out(struct attn_builder *b, MlirValue dst,
                          MlirValue src, MlirValue bytes) {
  MlirValue opd[] = {attn_k_inttoptr(b, dst, mlirLLVMPointerTypeGet(b->ctx, 1)),
                     shared_ptr(b, src), bytes};
  int32_t seg[5] = {1, 1, 1, 0, 0}; // dst, src, size, l2CacheHint, byteMask
  MlirNamedAttribute a = attn_b_named(b, "operandSegmentSizes",
                                      mlirDenseI32ArrayGet(b->ctx, 5, seg));
  attn_b_op(b, "nvvm.cp.async.bulk.global.shared.cta", 0, NULL, 3, opd, 1, &a,
            0);
}

void attn_k_bulk_commit(struct attn_builder *b) {
  attn_b_op(b, "nvvm.cp.async.bulk.commit.group", 0, NULL, 0, NULL, 0, NULL,
            0);
}

void attn_k_bulk_wait(struct attn_builder *b, int n, bool read) {
  MlirNamedAttribute a[] = {
      attn_b_named(b, "group", attn_b_attr_i32(b, n)),
      attn_b_named(b, "read", attn_b_attr_unit(b)),
  };
  attn_b_op(b, "nvvm.cp.async.bulk.wait_group", 0, NULL, 0, NULL, read ? 2 : 1,
            a, 0);
}

//===-- Flags in global memory --------------------------------------------===//

void attn_k_wait_until(struct attn_builder *b, MlirValue addr, const char *cmp,
                       MlirValue target, const char *scope,
                       long long timeout_ns) {
  // Inline PTX: a polling loop with a sleep and a deadline in one asm; no
  // upstream op polls, and a loop of NVVM ops would let LLVM move it.
  char text[512];
  snprintf(text, sizeof text,
           "{ .reg .pred p; .reg .u32 v; .reg .u64 t0, t1; "
           "mov.u64 t0, %%globaltimer; "
           "POLL: ld.acquire.%s.global.u32 v, [$0]; setp.%s.u32 p, v, $1; "
           "@p bra.uni DONE; nanosleep.u32 64; mov.u64 t1, %%globaltimer; "
           "sub.u64 t1, t1, t0; setp.gt.u64 p, t1, %lld; @p trap; "
           "bra.uni POLL; DONE: }",
           scope, cmp, timeout_ns);
  MlirValue opd[] = {addr, target};
  attn_k_asm(b, (MlirType){NULL}, "l,r", text, 2, opd);
}

/// The i64 address addr as a global pointer (!llvm.ptr<1>).
static MlirValue global_ptr(struct attn_builder *b, MlirValue addr) {
  return attn_k_inttoptr(b, addr, mlirLLVMPointerTypeGet(b->ctx, 1));
}

/// The properties of an atomic access at GPU scope (syncscope "device",
/// PTX's .gpu) with LLVM's AtomicOrdering ordering, aligned to align bytes
/// (0: none given).
static intptr_t atomic_attrs(struct attn_builder *b, MlirNamedAttribute *a,
                             int64_t ordering, int64_t align) {
  intptr_t n = 0;
  a[n++] = attn_b_named(b, "ordering", attn_b_attr_i64(b, ordering));
  a[n++] = attn_b_named(b, "syncscope", attn_b_attr_str(b, "device"));
  if (align)
    a[n++] = attn_b_named(b, "alignment", attn_b_attr_i64(b, align));
  return n;
}

enum { ORDER_MONOTONIC = 2, ORDER_ACQUIRE = 4, ORDER_RELEASE = 5 };

void attn_k_store_release(struct attn_builder *b, MlirValue addr,
                          MlirValue v) {
  MlirValue opd[] = {v, global_ptr(b, addr)};
  MlirNamedAttribute a[3];
  attn_b_op(b, "llvm.store", 0, NULL, 2, opd,
            atomic_attrs(b, a, ORDER_RELEASE, 4), a, 0);
}

MlirValue attn_k_load_acquire64(struct attn_builder *b, MlirValue addr) {
  MlirValue p = global_ptr(b, addr);
  MlirNamedAttribute a[3];
  return attn_b_op1(b, "llvm.load", b->t.i64, 1, &p,
                    atomic_attrs(b, a, ORDER_ACQUIRE, 8), a);
}

MlirValue attn_k_atom_inc64(struct attn_builder *b, MlirValue addr) {
  // PTX's atom without .sem and .scope is atom.relaxed.gpu.
  MlirValue opd[] = {global_ptr(b, addr), attn_b_i64(b, 1)};
  MlirNamedAttribute a[4];
  intptr_t n = atomic_attrs(b, a, ORDER_MONOTONIC, 0);
  a[n++] = attn_b_named(b, "bin_op", attn_b_attr_i64(b, 1)); // add
  return attn_b_op1(b, "llvm.atomicrmw", b->t.i64, 2, opd, n, a);
}

void attn_k_bulk_copy_in(struct attn_builder *b, MlirValue dst, MlirValue src,
                         int64_t bytes, MlirValue bar) {
  // A shared::cta address is a valid shared::cluster address of this CTA
  // (the shared::cta form needs PTX ISA 8.6).
  MlirValue opd[] = {attn_k_inttoptr(b, dst, mlirLLVMPointerTypeGet(b->ctx, 7)),
                     attn_b_op1(b, "llvm.addrspacecast",
                                mlirLLVMPointerTypeGet(b->ctx, 1), 1, &src, 0,
                                NULL),
                     shared_ptr(b, bar), attn_b_i32(b, bytes)};
  int32_t seg[6] = {1, 1, 1, 1, 0, 0};
  MlirNamedAttribute a[] = {attn_b_named(
      b, "operandSegmentSizes", mlirDenseI32ArrayGet(b->ctx, 6, seg))};
  attn_b_op(b, "nvvm.cp.async.bulk.shared.cluster.global", 0, NULL, 4, opd, 1,
            a, 0);
}

void attn_k_red_add_f32(struct attn_builder *b, MlirValue ptr, int32_t off,
                        MlirValue v) {
  // Inline PTX: an llvm.atomicrmw fadd whose result is unused is not
  // promised to become red (no returned value) rather than atom; and the
  // offset in the address keeps one base register for many.
  char text[64];
  snprintf(text, sizeof text, "red.global.add.f32 [$0+%d], $1;", (int)off);
  MlirValue opd[] = {ptr, v};
  attn_k_asm(b, (MlirType){NULL}, "l,f", text, 2, opd);
}

void attn_k_bulk_reduce_add_f32(struct attn_builder *b, MlirValue dst,
                                MlirValue src, int64_t bytes) {
  // Inline PTX: MLIR 22's NVVM dialect has the tensor form only
  // (nvvm.cp.async.bulk.tensor.reduce, which needs a tensor map), no
  // non-tensor cp.reduce.async.bulk, and LLVM 22 no intrinsic for it.
  char text[128];
  snprintf(text, sizeof text,
           "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 "
           "[$0], [$1], %lld;",
           (long long)bytes);
  MlirValue opd[] = {dst, src};
  attn_k_asm(b, (MlirType){NULL}, "l,r", text, 2, opd);
}

//===-- Registers and stores ----------------------------------------------===//

MlirValue attn_k_pin(struct attn_builder *b, MlirValue v, const char *cons) {
  // An empty asm: nothing upstream keeps LLVM from hoisting a value.
  char tied[16];
  snprintf(tied, sizeof tied, "=%s,0", cons);
  if (mlirValueIsNull(v))
    return asm1(b, b->t.i32, tied, "", 1, &v); // reports the null operand
  return asm1(b, mlirValueGetType(v), tied, "", 1, &v);
}

void attn_k_store_vec(struct attn_builder *b, const MlirValue *w, int n,
                      MlirValue ptr) {
  if (mlirValueIsNull(w[0])) {
    attn_b_unary(b, "llvm.mlir.undef", w[0]); // reports the null value
    return;
  }
  MlirType vt = mlirVectorTypeGet(1, (int64_t[]){n}, mlirValueGetType(w[0]));
  MlirValue v = attn_b_op1(b, "llvm.mlir.undef", vt, 0, NULL, 0, NULL);
  for (int i = 0; i < n; ++i) {
    MlirValue opd[] = {v, w[i], attn_b_i32(b, i)};
    v = attn_b_op1(b, "llvm.insertelement", vt, 3, opd, 0, NULL);
  }
  MlirValue opd[] = {v, ptr};
  MlirNamedAttribute a =
      attn_b_named(b, "alignment", attn_b_attr_i64(b, 4 * n));
  attn_b_op(b, "llvm.store", 0, NULL, 2, opd, 1, &a, 0);
}

void attn_k_store16_if(struct attn_builder *b, const MlirValue w[4],
                       MlirValue ptr, MlirValue pred) {
  // Inline PTX: a predicated store, where an scf.if would be a branch.
  MlirValue opd[6] = {ptr, w[0], w[1], w[2], w[3],
                      attn_b_cast(b, "arith.extui", pred, b->t.i32)};
  attn_k_asm(b, (MlirType){NULL}, "l,r,r,r,r,r",
             "{ .reg .pred p; setp.ne.b32 p, $5, 0; "
             "@p st.global.v4.b32 [$0], {$1, $2, $3, $4}; }",
             6, opd);
}

void attn_k_store_f32_if(struct attn_builder *b, MlirValue v, MlirValue ptr,
                         MlirValue pred) {
  // Inline PTX: a predicated store, as attn_k_store16_if's.
  MlirValue opd[3] = {ptr, v, attn_b_cast(b, "arith.extui", pred, b->t.i32)};
  attn_k_asm(b, (MlirType){NULL}, "l,f,r",
             "{ .reg .pred p; setp.ne.b32 p, $2, 0; "
             "@p st.global.f32 [$0], $1; }",
             3, opd);
}

void attn_k_quad_transpose(struct attn_builder *b, MlirValue lane4,
                           MlirValue w[4]) {
  for (int round = 0; round < 2; ++round) {
    int m = round ? 1 : 2; // the lane mask, and the words' distance
    MlirValue hi = attn_b_cmpi(b, ATTN_B_NE,
                               attn_b_andi(b, lane4, attn_b_i32(b, m)),
                               attn_b_i32(b, 0));
    // Round 0 sends words {0,1} or {2,3}, round 1 words {0,2} or {1,3}.
    int lo_idx[2] = {0, round ? 2 : 1};
    for (int t = 0; t < 2; ++t) {
      int x = lo_idx[t], y = x + m; // y: x's partner word
      MlirValue send = attn_b_select(b, hi, w[x], w[y]);
      MlirValue f = attn_k_bitcast(b, send, b->t.f32);
      MlirValue got =
          attn_k_bitcast(b, attn_k_shfl_xor(b, f, m), b->t.i32);
      MlirValue nx = attn_b_select(b, hi, got, w[x]);
      w[y] = attn_b_select(b, hi, w[y], got);
      w[x] = nx;
    }
  }
}

MlirValue attn_k_rcp(struct attn_builder *b, MlirValue v) {
  // The MUFU alone, no slow-path call (whose calling convention costs
  // registers where it sits); arith.divf becomes div.rn.
  return attn_b_op1(b, "nvvm.rcp.approx.ftz.f", b->t.f32, 1, &v, 0, NULL);
}

/// The 16-bit float type: bf16 or f16.
static MlirType half_type(struct attn_builder *b, bool bf16) {
  return bf16 ? mlirBF16TypeGet(b->ctx) : mlirF16TypeGet(b->ctx);
}

MlirValue attn_k_to_f32_16(struct attn_builder *b, bool bf16, MlirValue h16) {
  if (bf16) {
    MlirValue w = attn_b_cast(b, "arith.extui", h16, b->t.i32);
    MlirValue s = attn_b_shli(b, w, attn_b_i32(b, 16));
    return attn_k_bitcast(b, s, b->t.f32);
  }
  return attn_b_cast(b, "arith.extf",
                     attn_k_bitcast(b, h16, half_type(b, false)), b->t.f32);
}

MlirValue attn_k_from_f32_16(struct attn_builder *b, bool bf16, MlirValue f) {
  // arith.truncf rounds to nearest even: cvt.rn.bf16.f32 or cvt.rn.f16.f32.
  return attn_k_bitcast(b, attn_k_truncf(b, f, half_type(b, bf16)), b->t.i16);
}

void attn_k_reg_fence(struct attn_builder *b, MlirValue *vals, int n,
                      const char *cons_out) {
  // An empty asm: nothing upstream pins a value's definition between a
  // wgmma fence and its wait.
  if (n <= 0 || n > ATTN_K_MAX_REGS)
    return;
  char cons[4096];
  size_t at = 0;
  for (int i = 0; i < n && at < sizeof cons; ++i)
    at += (size_t)snprintf(cons + at, sizeof cons - at, "%s=%s", i ? "," : "",
                           cons_out);
  for (int i = 0; i < n && at < sizeof cons; ++i)
    at += (size_t)snprintf(cons + at, sizeof cons - at, ",%d", i);
  MlirType elem = mlirValueIsNull(vals[0]) ? b->t.f32
                                           : mlirValueGetType(vals[0]);
  MlirValue r = attn_b_result(
      attn_k_asm(b, attn_k_struct(b, n, elem), cons, "", n, vals), 0);
  for (int i = 0; i < n; ++i)
    vals[i] = attn_k_extract(b, r, i, elem);
}
