//===- hopper_ptx.h - Writes LLVM/NVVM-dialect MLIR with inline PTX -------===//
//
// Internal to lib/Transforms: a small text emitter for the Hopper kernels
// (hopper_emit.c's attention kernel, hopper_rope.c's RoPE kernel, and any
// tile-level kernel written the same way). Values are SSA names %vN, known by
// their number N; every function that produces one returns its N. Scalar math
// and control flow are arith/scf, memory is the LLVM dialect, Hopper
// instructions that MLIR 22's NVVM dialect spells as LLVM intrinsics are
// NVVM ops (mbarrier init/arrive/expect_tx, TMA loads, wgmma fence/commit/
// wait, setmaxnreg, proxy fences), and the rest is llvm.inline_asm: wgmma
// itself, the mbarrier wait loop, shuffles, conversions (hopper_ptx.c says
// why for each Hopper one).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_HOPPER_PTX_H
#define ATTN_HOPPER_PTX_H

#include "lib/IR/attn_context.h"

#include <stdbool.h>

/// Shared memory one CTA may use on sm_90a: 227 KiB.
#define ATTN_HOPPER_SMEM_LIMIT (227 * 1024)

/// 2 pi, for the kernels' sin and cos by the MUFU (of a fraction of a turn).
#define ATTN_PTX_TWO_PI 6.283185307179586476925

/// Where the text goes and the state of one function being written.
struct attn_ptx {
  struct attn_strbuf *b; ///< borrowed; the text is appended here
  int next;              ///< the next SSA number
  bool bf16;             ///< 16-bit element type: bf16 (true) or f16
  const char *ty;        ///< its name in PTX: "bf16" or "f16"
};

/// Starts a function's text in b (SSA numbers from 0) with 16-bit elements
/// of type bf16 or f16.
void attn_ptx_init(struct attn_ptx *p, struct attn_strbuf *b, bool bf16);

//===-- Text helpers ------------------------------------------------------===//

/// Emits one indented line.
void attn_ptx_line(struct attn_ptx *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/// Emits `%vN = <text>` and returns N.
int attn_ptx_op(struct attn_ptx *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/// Constants: i32, i64, index, f32 (written as its bits).
int attn_ptx_ci32(struct attn_ptx *p, long long v);
int attn_ptx_ci64(struct attn_ptx *p, long long v);
int attn_ptx_cidx(struct attn_ptx *p, long long v);
int attn_ptx_cf32(struct attn_ptx *p, float v);

/// Opens `%r:n = scf.if %cond -> (tys) {` (tys NULL: all f32); returns r
/// (its results are %v<r>#0 ...).
int attn_ptx_open_if(struct attn_ptx *p, int cond, int n,
                     const char *const *tys);
/// `name %va, %vb : ty`.
int attn_ptx_bin(struct attn_ptx *p, const char *name, int a, int b,
                 const char *ty);
/// i32 arithmetic; the ...c forms take a constant right operand, and
/// divc/remc/cmpc are unsigned unless pred says otherwise.
int attn_ptx_addi(struct attn_ptx *p, int a, int b);
int attn_ptx_muli(struct attn_ptx *p, int a, int b);
int attn_ptx_addc(struct attn_ptx *p, int a, long long c);
int attn_ptx_mulc(struct attn_ptx *p, int a, long long c);
int attn_ptx_divc(struct attn_ptx *p, int a, long long c);
int attn_ptx_remc(struct attn_ptx *p, int a, long long c);
/// i1: a pred c for a constant c (cmpc) or a pred b for a value b (cmp), i32
/// operands; pred is arith.cmpi's ("eq", "ult", ...).
int attn_ptx_cmpc(struct attn_ptx *p, const char *pred, int a, long long c);
int attn_ptx_cmp(struct attn_ptx *p, const char *pred, int a, int b);
/// f32 arithmetic; fma3 is a * b + c.
int attn_ptx_fmul(struct attn_ptx *p, int a, int b);
int attn_ptx_fadd(struct attn_ptx *p, int a, int b);
int attn_ptx_fsub(struct attn_ptx *p, int a, int b);
int attn_ptx_fma3(struct attn_ptx *p, int a, int b, int c);
/// The pair (x1, x2) rotated by the angle whose cosine is c and sine s
/// (f32): y1 = x1 c - x2 s, y2 = x2 c + x1 s. RoPE's rotation, and the step
/// of a cos/sin recurrence (x1, x2 = cos, sin).
void attn_ptx_rotate(struct attn_ptx *p, int x1, int x2, int c, int s,
                     int *y1, int *y2);
/// The same rotation as a multiply and a fused multiply-add per output (4
/// instructions for the pair, where attn_ptx_rotate takes 6; one rounding
/// less each).
void attn_ptx_rotate_fma(struct attn_ptx *p, int x1, int x2, int c, int s,
                         int *y1, int *y2);
/// c ? a : b, both of type ty.
int attn_ptx_sel(struct attn_ptx *p, int c, int a, int b, const char *ty);
/// i32 <-> index.
int attn_ptx_to_index(struct attn_ptx *p, int a);
int attn_ptx_from_index(struct attn_ptx *p, int a);
/// cos and sin of an f32 angle (libdevice).
void attn_ptx_sincos(struct attn_ptx *p, int angle, int *c, int *s);
/// Opens `%v<res>:n = scf.for %v<it> = lo to hi step st iter_args(...)`
/// carrying init[0..n) with types tys (NULL: all f32); writes the region's
/// argument ids to arg. Close with attn_ptx_yield_list and "}".
void attn_ptx_open_for(struct attn_ptx *p, int res, int it, int lo, int hi,
                       int st, int n, const int *init, int *arg,
                       const char *const *tys);
/// Emits a terminator kw (e.g. `scf.yield`) of ids[0..n) with types tys
/// (NULL: all f32).
void attn_ptx_yield_list(struct attn_ptx *p, const char *kw, const int *ids,
                         int n, const char *const *tys);

/// Inline PTX with side effects and constraints cons. rty is the result
/// type (NULL for none, then -1 is returned); operands are ids with types.
int attn_ptx_asmv(struct attn_ptx *p, const char *rty, const char *cons,
                  const char *text, int n, const int *ids,
                  const char *const *tys);
/// Inline PTX without results and with no, one or two i32 operands.
void attn_ptx_asm0(struct attn_ptx *p, const char *text);
void attn_ptx_asm_r(struct attn_ptx *p, const char *text, int a);
void attn_ptx_asm_rr(struct attn_ptx *p, const char *text, int a, int b);

//===-- Hopper instructions -----------------------------------------------===//

/// mbarriers at shared-memory address addr (i32): init with an arrival
/// count, arrive expecting bytes of transactions, arrive, wait for parity.
void attn_ptx_mbar_init(struct attn_ptx *p, int addr, int count);
void attn_ptx_mbar_expect_tx(struct attn_ptx *p, int addr, long long bytes);
void attn_ptx_mbar_arrive(struct attn_ptx *p, int addr);
void attn_ptx_mbar_wait(struct attn_ptx *p, int addr, int parity);

/// Fence after mbarrier initialisation (fence.mbarrier_init.release.cluster).
void attn_ptx_fence_mbar_init(struct attn_ptx *p);
/// Orders generic-proxy accesses before async-proxy ones (TMA, wgmma):
/// fence.proxy.async.global when global is true, else .shared::cta.
void attn_ptx_fence_proxy_async(struct attn_ptx *p, bool global);
/// setmaxnreg.inc (inc true) or .dec to regs registers per thread.
void attn_ptx_setmaxnreg(struct attn_ptx *p, bool inc, int regs);

/// wgmma.fence, wgmma.commit_group and wgmma.wait_group n.
void attn_ptx_wgmma_fence(struct attn_ptx *p);
void attn_ptx_wgmma_commit(struct attn_ptx *p);
void attn_ptx_wgmma_wait(struct attn_ptx *p, int n);
/// wgmma.wait_group 0 that ptxas keeps after the computation of `after` (an
/// f32 id): left alone, ptxas moves a wait up to the first instructions
/// after the previous wait, so work written between the two no longer
/// overlaps the wgmma. Both arms of a branch on `after` (== -1.0) wait.
void attn_ptx_wgmma_wait_after(struct attn_ptx *p, int after);

/// TMA: a 4-D box at coords (c0..c3) from tensor map `map` (i64 generic
/// address) into shared memory at dst, completing on mbarrier bar.
void attn_ptx_tma_load(struct attn_ptx *p, int dst, int map, const int c[4],
                       int bar);

/// TMA store: the 4-D box at coords (c0..c3) of tensor map `map` (i64
/// generic address) from shared memory at src, in a bulk async-group (commit
/// with attn_ptx_bulk_commit, wait with attn_ptx_bulk_wait).
void attn_ptx_tma_store(struct attn_ptx *p, int src, int map, const int c[4]);
/// cp.async.bulk.commit_group, and cp.async.bulk.wait_group n (.read when
/// read: until the copies have read shared memory, not until they landed).
void attn_ptx_bulk_commit(struct attn_ptx *p);
void attn_ptx_bulk_wait(struct attn_ptx *p, int n, bool read);

/// One thread: waits until the u32 at addr (i64 generic address) compares
/// cmp ("ge": at least, "eq": equal) to target (i32; acquire at scope "sys"
/// or "gpu"), polling with a short sleep; traps after timeout_ns, so that a
/// producer that never comes fails the launch instead of hanging it.
void attn_ptx_wait_until(struct attn_ptx *p, int addr, const char *cmp,
                         int target, const char *scope, long long timeout_ns);
/// One thread: stores the u32 v at addr (i64) with release order at gpu
/// scope.
void attn_ptx_store_release(struct attn_ptx *p, int addr, int v);
/// One thread: adds 1 to the u64 at addr (i64), relaxed at gpu scope; the
/// old value (i64).
int attn_ptx_atom_inc64(struct attn_ptx *p, int addr);

/// v (of MLIR type ty, whose asm constraint is cons) passed through an empty
/// asm with side effects: the same value in the same register, but LLVM
/// cannot move the asm, nor what is computed from its result, out of the
/// loop it is written in (to keep loop-invariant values from living, and
/// spilling, across a loop). Emits no PTX.
int attn_ptx_pin(struct attn_ptx *p, int v, const char *ty, const char *cons);
/// Butterfly shuffle of an f32 across the warp.
int attn_ptx_shfl_xor(struct attn_ptx *p, int v, int lane_mask);
/// Stores n (2 or 4) 4-byte values w of type ty (i32 or f32) at the global
/// address ptr, aligned to 4n bytes, in one store.
void attn_ptx_store_vec(struct attn_ptx *p, const int *w, int n,
                        const char *ty, int ptr);
/// The words w[0..3] (i32) at the 16-byte aligned global address ptr where
/// pred (i1) holds: a predicated store rather than a branch.
void attn_ptx_store16_if(struct attn_ptx *p, const int w[4], int ptr,
                         int pred);
/// Transposes the 4 x 4 words (i32) of a quad of lanes: lane4 (lane % 4)
/// holds w[0..3]; afterwards it holds word lane4 of each lane of the quad, in
/// lane order. Two rounds of shuffles: swap the off-diagonal 2 x 2 blocks,
/// then transpose each. Every lane of the warp must execute it.
void attn_ptx_quad_transpose(struct attn_ptx *p, int lane4, int w[4]);
/// 2^v, approximate.
int attn_ptx_ex2(struct attn_ptx *p, int v);

/// 1 / v by the MUFU alone (rcp.approx.ftz, within 1 ulp): no slow-path
/// call, whose calling convention costs registers where it sits.
int attn_ptx_rcp(struct attn_ptx *p, int v);
/// Packs (lo, hi) f32 into one register of two 16-bit floats.
int attn_ptx_pack2(struct attn_ptx *p, int lo, int hi);
/// Unpacks a register of two 16-bit floats into (lo, hi) f32.
void attn_ptx_unpack2(struct attn_ptx *p, int w, int *lo, int *hi);
/// One 16-bit float (i16) to f32 and back.
int attn_ptx_to_f32_16(struct attn_ptx *p, int h16);
int attn_ptx_from_f32_16(struct attn_ptx *p, int f);

/// Whether the i1 pred is true in any lane of the warp (i1; every lane
/// must take part).
int attn_ptx_vote_any(struct attn_ptx *p, int pred);

/// A pointer into shared memory at byte offset off (i32) from smem.
int attn_ptx_smem_ptr(struct attn_ptx *p, int smem, int off);

/// Passes n values of type ty (constraint cons_out) through an empty asm so
/// that the compiler keeps their definitions on this side of the surrounding
/// wgmma fence/wait; vals are replaced. Needs the alias !acc_<ty><n>.
void attn_ptx_reg_fence(struct attn_ptx *p, int *vals, int n, const char *ty,
                        const char *cons_out);

/// acc = wgmma(A from shared memory via desc_a, B via desc_b) (+ acc when
/// scale_d is non-zero); n accumulators m64nNk16 with N = 2n.
/// Needs the alias !acc_f32<n>.
void attn_ptx_wgmma_ss(struct attn_ptx *p, int *acc, int n, int desc_a,
                       int desc_b, int scale_d, bool trans_b);
/// acc += wgmma(A from four registers a[0..3], B via desc_b), B transposed
/// (N-major, as V is) or not (K-major).
void attn_ptx_wgmma_rs(struct attn_ptx *p, int *acc, int n, const int a[4],
                       int desc_b, bool trans_b);

/// The wgmma shared-memory descriptor of address addr (i32): 128-byte
/// swizzle, leading and stride byte offsets lbo and sbo.
int attn_ptx_make_desc(struct attn_ptx *p, int addr, long long lbo,
                       long long sbo);
/// The descriptor bytes further on (desc itself when bytes is 0).
int attn_ptx_desc_add(struct attn_ptx *p, int desc, long long bytes);

/// Shared-memory byte offset (i32) of element (row, col) of a tile with the
/// 128-byte swizzle at base with `rows` rows; row and col are i32 values.
int attn_ptx_swz(struct attn_ptx *p, int base, int rows, int row, int col);

//===-- Staged output rows ------------------------------------------------===//
//
// The staged epilogues of the GEMM (hopper_gemm_epilogue.c) and of
// attention (hopper_emit.c): a consumer warpgroup writes its 64 output rows
// into shared memory, and its threads 0-63 each hand one row to the
// bulk-copy engine (cp.async.bulk), then go on while the rows are written.
// Per tile: attn_ptx_rows_drain (the last tile's rows were read), _put,
// _ready, then _copy_open, _copy per row, _copy_close; at the end a drain
// that waits for the rows to land.

/// A warpgroup's staging rows: row 0 at shared address base (i32), rows
/// pitch bytes apart; wt is the thread in the warpgroup (i32), bar the
/// warpgroup's own named barrier (i32).
struct attn_ptx_rows {
  int base, wt, bar;
  int64_t pitch;
};

/// The pitch of rows of `bytes` bytes: 16 more, so that the eight rows a
/// warp writes at once start in different banks.
int64_t attn_ptx_rows_pitch(int64_t bytes);

/// What attn_ptx_rows_drain waits for: the engine has read the rows (they
/// may be written again), the copies have landed, or landed and are ordered
/// (a proxy fence) before a release that tells another thread or GPU.
enum attn_ptx_drain {
  ATTN_PTX_DRAIN_READ,
  ATTN_PTX_DRAIN_LANDED,
  ATTN_PTX_DRAIN_PUBLISHED
};

/// Threads 0-63 wait for their copies as `how` says; with meet, the
/// warpgroup then meets on its barrier.
void attn_ptx_rows_drain(struct attn_ptx *p, const struct attn_ptx_rows *r,
                         enum attn_ptx_drain how, bool meet);
/// Writes this thread's part of the wgmma accumulator fragment acc (n f32,
/// m64nNk16 layout: register i is row 16 warp + lane / 4 + 8 ((i >> 1) & 1),
/// column 8 (i / 4) + 2 (lane % 4) + (i & 1)), times scale[row half] when
/// scale is not NULL, rounded to 16-bit pairs.
void attn_ptx_rows_put(struct attn_ptx *p, const struct attn_ptx_rows *r,
                       const int *acc, int n, const int *scale);
/// Orders the rows for the async proxy and meets: they may be copied.
void attn_ptx_rows_ready(struct attn_ptx *p, const struct attn_ptx_rows *r);
/// Opens the copying threads' region (wt < 64): thread wt copies row wt.
void attn_ptx_rows_copy_open(struct attn_ptx *p,
                             const struct attn_ptx_rows *r);
/// Copies this thread's row to global address dst (i64): bytes (an i32
/// value) or n bytes (a constant; both multiples of 16).
void attn_ptx_rows_copy(struct attn_ptx *p, const struct attn_ptx_rows *r,
                        int dst, int bytes);
void attn_ptx_rows_copy_n(struct attn_ptx *p, const struct attn_ptx_rows *r,
                          int dst, long long n);
/// Commits the thread's copies as one bulk group and closes the region.
void attn_ptx_rows_copy_close(struct attn_ptx *p);

#endif // ATTN_HOPPER_PTX_H
