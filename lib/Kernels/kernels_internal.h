//===- kernels_internal.h - The floors of lib/Kernels ---------------------===//
//
// Internal to lib/Kernels; never included from outside (kernels.h is the
// module's public header). The floors, each reading only the ones below:
//
//   instructions.c   the built vocabulary: one op or a short fixed sequence
//                    per call (i32 shortcuts, conversions, inline PTX,
//                    shuffles, 16-bit pairs, shared-memory pointers, LLVM
//                    functions and declarations)
//   hopper_instructions.c  the sm_90a instructions: mbarriers, fences,
//                    setmaxnreg, wgmma and its descriptors, TMA, bulk
//                    copies, flags in global memory, the 128-byte swizzle
//   launch.c         the attn.launch manifest entry of a kernel, as a
//                    dictionary attribute
//   score_fn.c       score and mask functions of any form (tile.score_fn,
//                    tile.mask_fn bodies) on a thread's accumulator
//                    fragments, and their captures' parameters
//   staged_rows.c    output rows staged through shared memory and copied
//                    by the bulk-copy engine (attention's and the GEMM's)
//   softmax.c        the online softmax role (mask, maxima, P, rescale) of
//                    a thread's two rows of S
//   rope.c           the RoPE role's math: inverse frequencies, a pair's
//                    columns, two words of a shared-memory tile rotated,
//                    a row's explicit position, cos/sin of turns (MUFU)
//   rope_rows.c      RoPE of rows of a swizzled shared-memory tile (cos/sin
//                    stepped down the rows) and of Q pair by pair
//   rope_ahead.c     the ahead placement's team: K rotated once per row from
//                    a queue, its context, flags and counters
//   rope_kernel.c    the separate RoPE kernel of the split and pre
//                    placements, assembled
//   attention_schedule.c  the Hopper attention kernel's grid and persistent
//                    schedule (the global @<name>__tiles)
//   attention_pipeline.c  its shared-memory layout and the walk over a
//                    CTA's tiles and the K/V ring
//   attention_epilogue.c  how a consumer warpgroup writes a tile's O
//   attention_producer.c  its producer warpgroup (TMA, RoPE of K or Q)
//   attention_consumer.c  its consumer warpgroups (wgmma, online softmax)
//   mma_attention.c  the mma.sync attention kernel (sm_80+), assembled
//   hopper_attention.c  the Hopper attention kernel (sm_90a), assembled
//
// The decode kernel (decode_common.h: what its files share):
//
//   decode_common.c  a CTA's rows, q and its RoPE, a key's row in the
//                    cache, a score's modifiers and masks
//   decode_lanes.c   the lanes body (FMAs and shuffles per key and row)
//   decode_mma.c     the tensor-core body (mma.sync, 16 keys a warp step)
//   decode.c         the split and combine kernels, assembled
//
// The Hopper GEMM (sm_90a), floor by floor:
//
//   gemm_ops.c       ops beyond the vocabulary: scf.while, typed
//                    getelementptr, vector loads
//   gemm_geometry.c  sizes, defaults, checks and the workspace (no IR), and
//                    the tile walk: a tile ordinal to its row and column
//   gemm_comm.c      a fused kernel's communication CTAs and the compute
//                    CTAs' hooks (claims, signals, the owner's slot)
//   gemm_rope.c      RoPE of the accumulators in the epilogue
//   gemm_epilogue.c  the consumers' epilogue: staged rows, registers, or
//                    split-K partials; the mailboxes of the signalers
//   gemm_reduce.c    the split-K reduce kernel, assembled
//   hopper_gemm.c    the GEMM kernel (producer, consumers, the tile loops
//                    and its manifest entry), assembled
//
// Values are MlirValue made through lib/IR/attn_builder.h; a helper given a
// null value makes nothing and the builder reports the first failure.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_KERNELS_INTERNAL_H
#define ATTN_KERNELS_INTERNAL_H

#include "lib/IR/attn_builder.h"
#include "lib/Kernels/kernels.h"

#include <stdbool.h>
#include <stdint.h>

/// Most f32 values a role handles at once (the S or O registers of a thread).
#define ATTN_K_MAX_REGS 256

/// The tensors a score or mask function may read, as pointers: the
/// captures, then at ATTN_HOPPER_MAX_CAPTURES + 0 .. 2 q, k and v.
#define ATTN_K_FN_PTRS (ATTN_HOPPER_MAX_CAPTURES + 3)

//===-- Instructions (instructions.c) -------------------------------------===//

/// i32 arithmetic with a constant right operand (the constant is made
/// first, then the op); div, rem and cmp are unsigned unless pred says
/// otherwise.
MlirValue attn_k_addc(struct attn_builder *b, MlirValue x, int64_t c);
MlirValue attn_k_mulc(struct attn_builder *b, MlirValue x, int64_t c);
MlirValue attn_k_divc(struct attn_builder *b, MlirValue x, int64_t c);
MlirValue attn_k_remc(struct attn_builder *b, MlirValue x, int64_t c);
MlirValue attn_k_andc(struct attn_builder *b, MlirValue x, int64_t c);
MlirValue attn_k_cmpc(struct attn_builder *b, enum attn_b_cmpi pred,
                      MlirValue x, int64_t c);
/// llvm.intr.fma: x * y + z (f32).
MlirValue attn_k_fma_intr(struct attn_builder *b, MlirValue x, MlirValue y,
                          MlirValue z);

/// Conversions: i32 to i64 (zero-extended), i32 <-> index, unsigned i32 to
/// f32 or f64, f64 to f32, and a bitcast to type to.
MlirValue attn_k_i64_of(struct attn_builder *b, MlirValue x);
MlirValue attn_k_to_index(struct attn_builder *b, MlirValue x);
MlirValue attn_k_from_index(struct attn_builder *b, MlirValue x);
MlirValue attn_k_uitofp(struct attn_builder *b, MlirValue x, MlirType to);
MlirValue attn_k_truncf(struct attn_builder *b, MlirValue x, MlirType to);
MlirValue attn_k_bitcast(struct attn_builder *b, MlirValue x, MlirType to);

/// The pair (x1, x2) rotated by the angle of cosine c and sine s (f32): y1 =
/// x1 c - x2 s, y2 = x2 c + x1 s (no fused multiply-adds).
void attn_k_rotate(struct attn_builder *b, MlirValue x1, MlirValue x2,
                   MlirValue c, MlirValue s, MlirValue *y1, MlirValue *y2);

/// `llvm.call @callee(args[0..n)) -> res` of a function declared in the
/// gpu.module (attn_k_declare_libdevice): the result.
MlirValue attn_k_call(struct attn_builder *b, const char *callee, intptr_t n,
                      const MlirValue *args, MlirType res);
/// cos and sin of an f32 angle through libdevice's __nv_cosf and __nv_sinf.
void attn_k_sincos(struct attn_builder *b, MlirValue angle, MlirValue *c,
                   MlirValue *s);

/// Inline PTX with side effects (llvm.inline_asm): text with constraints
/// cons over opd[0..n), one result of type res (null type: none). The op.
MlirOperation attn_k_asm(struct attn_builder *b, MlirType res, const char *cons,
                         const char *text, intptr_t n, const MlirValue *opd);
/// The same without operands or results.
void attn_k_asm0(struct attn_builder *b, const char *text);
/// llvm.extractvalue agg[i] of type elem.
MlirValue attn_k_extract(struct attn_builder *b, MlirValue agg, int64_t i,
                         MlirType elem);
/// !llvm.struct<(elem x n)>.
MlirType attn_k_struct(struct attn_builder *b, intptr_t n, MlirType elem);

/// Butterfly shuffle of an f32 across the warp (the lane mask a constant),
/// nvvm.shfl.sync bfly.
MlirValue attn_k_shfl_xor(struct attn_builder *b, MlirValue v, int lane_mask);
/// Lane lane's v (i32 or f32) in every lane of the warp, nvvm.shfl.sync idx.
MlirValue attn_k_shfl_idx(struct attn_builder *b, MlirValue v, int lane);
/// Whether the i1 pred holds in any lane of the warp (every lane takes
/// part): an i1, nvvm.vote.sync any.
MlirValue attn_k_vote_any(struct attn_builder *b, MlirValue pred);

/// The lanes of the warp where the i1 pred holds, as the bits of an i32
/// (every lane takes part): nvvm.vote.sync ballot.
MlirValue attn_k_ballot(struct attn_builder *b, MlirValue pred);
/// The set bits of the i32 x (llvm.intr.ctpop).
MlirValue attn_k_popc(struct attn_builder *b, MlirValue x);
/// bar.sync of named barrier id (i32) for threads threads (nvvm.barrier);
/// a null id and 0 threads: bar.sync 0, every thread of the CTA.
void attn_k_bar_sync(struct attn_builder *b, MlirValue id, int threads);
/// bar.arrive of named barrier id (i32) for threads threads.
void attn_k_bar_arrive(struct attn_builder *b, MlirValue id, int threads);
/// bar.warp.sync -1: the whole warp meets (nvvm.bar.warp.sync).
void attn_k_warp_sync(struct attn_builder *b);
/// 2^v, approximate (ex2.approx.ftz, the NVVM intrinsic).
MlirValue attn_k_ex2(struct attn_builder *b, MlirValue v);
/// log2 v, approximate (lg2.approx.ftz, the NVVM intrinsic).
MlirValue attn_k_lg2(struct attn_builder *b, MlirValue v);
/// (lo, hi) f32 packed into one i32 of two 16-bit floats (bf16 or f16).
MlirValue attn_k_pack2(struct attn_builder *b, bool bf16, MlirValue lo,
                       MlirValue hi);
/// An i32 of two 16-bit floats unpacked into (lo, hi) f32.
void attn_k_unpack2(struct attn_builder *b, bool bf16, MlirValue w,
                    MlirValue *lo, MlirValue *hi);

/// The mma.sync instructions (sm_80 on; movmatrix sm_75), as inline PTX
/// over the fragments of the PTX ISA's m16n8k16 layout:
/// c (4 f32, updated) += A (a[0..3]) B (b0, b1), one m16n8k16 tile of
/// 16-bit inputs (bf16 or f16) with f32 accumulators.
void attn_k_mma16816(struct attn_builder *b, bool bf16, MlirValue *c,
                     const MlirValue a[4], MlirValue b0, MlirValue b1);
/// Four 8x8 matrices of 16-bit elements from shared address addr (i32):
/// lane l gives the address of row l % 8 of matrix l / 8; r[i] (i32) is
/// this lane's part of matrix i (transposed with trans).
void attn_k_ldmatrix_x4(struct attn_builder *b, MlirValue addr, bool trans,
                        MlirValue r[4]);
/// The 8x8 matrix of 16-bit elements whose fragment x (i32: row lane / 4,
/// columns 2 (lane % 4) and the next) is, transposed, in the same
/// fragment layout (movmatrix.sync.aligned.m8n8.trans.b16).
MlirValue attn_k_movmatrix_t(struct attn_builder *b, MlirValue x);
/// cp.async.cg of 16 bytes from global address src (i64) to shared address
/// dst (i32), reading only `bytes` (i32: 16 or 0) and zero-filling the
/// rest; the commit of the copies issued so far as one group; the wait
/// until at most `pending` groups are in flight.
void attn_k_cp_async16(struct attn_builder *b, MlirValue dst, MlirValue src,
                       MlirValue bytes);
void attn_k_cp_async_commit(struct attn_builder *b);
void attn_k_cp_async_wait(struct attn_builder *b, int pending);

/// nvvm.read.ptx.sreg.<name> (tid.x, ctaid.y, nctaid.x ...): an i32.
MlirValue attn_k_sreg(struct attn_builder *b, const char *name);
/// llvm.mlir.addressof @name: a pointer of type t.
MlirValue attn_k_addressof(struct attn_builder *b, const char *name,
                           MlirType t);
/// llvm.ptrtoint of p to type to.
MlirValue attn_k_ptrtoint(struct attn_builder *b, MlirValue p, MlirType to);
/// llvm.getelementptr of i8 at p[off] (off an i32 or i64 value), and at
/// p[c] for a constant c: a pointer of p's type.
MlirValue attn_k_gep(struct attn_builder *b, MlirValue p, MlirValue off);
/// llvm.getelementptr of type elem at p[idx] (idx an i32 or i64 value): a
/// pointer of p's type.
MlirValue attn_k_gep_elem(struct attn_builder *b, MlirValue p, MlirValue idx,
                          MlirType elem);
MlirValue attn_k_gep_const(struct attn_builder *b, MlirValue p, int32_t c);
/// A pointer into shared memory (!llvm.ptr<3>) at byte offset off (i32)
/// from smem.
MlirValue attn_k_smem_ptr(struct attn_builder *b, MlirValue smem,
                          MlirValue off);
/// llvm.load of type t from p; llvm.store of v to p.
MlirValue attn_k_load(struct attn_builder *b, MlirValue p, MlirType t);
void attn_k_store(struct attn_builder *b, MlirValue v, MlirValue p);

/// Declares, at the end of the gpu.module's body, libdevice's __nv_exp2,
/// __nv_sinf and __nv_cosf and the dynamic shared memory global @attn_smem
/// (aligned to smem_align), each unless the module has it already.
void attn_k_declare_libdevice(struct attn_builder *b, MlirOperation gpu_module,
                              int smem_align);
/// Opens `llvm.func @name(ptr x nargs)` returning nothing, with the
/// discardable attributes attrs; new ops go into its body, whose arguments
/// are its parameters (attn_b_func_arg). attn_k_llvm_func_close ends it with
/// llvm.return.
/// The most parameters a kernel function takes (more: a builder failure).
#define ATTN_K_MAX_FUNC_ARGS 32
void attn_k_llvm_func_open(struct attn_builder *b, struct attn_b_func *f,
                           const char *name, intptr_t nargs, intptr_t nattr,
                           const MlirNamedAttribute *attrs);
void attn_k_llvm_func_close(struct attn_builder *b, struct attn_b_func *f);
/// The same with parameters of the given types and, when arg_attrs is not
/// NULL, their attributes (noalias, readonly, grid_constant ...).
void attn_k_llvm_func_open_typed(struct attn_builder *b, struct attn_b_func *f,
                                 const char *name, intptr_t nargs,
                                 const MlirType *types,
                                 const MlirAttribute *arg_attrs, intptr_t nattr,
                                 const MlirNamedAttribute *attrs);
/// Closes f as attn_k_llvm_func_close and ends the kernel's building: true
/// when every op was built (attn_builder_finish); otherwise the function is
/// removed (the builder's diagnostic is out) and false.
bool attn_k_llvm_func_finish(struct attn_builder *b, struct attn_b_func *f);
/// A kernel entry's attributes into a[0..4): nvvm.kernel, nvvm.maxntid =
/// (threads, 1, 1), nvvm.minctasm = 1 and attn.launch = launch. Returns 4.
intptr_t attn_k_kernel_attrs(struct attn_builder *b, int threads,
                             MlirAttribute launch, MlirNamedAttribute *a);

//===-- Hopper instructions (hopper_instructions.c) -----------------------===//
//
// The same ops, in the same order, as the text vocabulary the Hopper
// kernels were written in before they were built (lib/Transforms/hopper_ptx.c
// until issue 26), so that their PTX did not change: shared-memory addresses
// are i32 (shared::cta window offsets), global ones i64 or !llvm.ptr. Where
// MLIR 22's NVVM or LLVM dialect has an op that becomes the same instruction
// it is used (issue 26: named barriers, shuffles, votes, bulk copies and
// TMA stores with their commit/wait, rcp/ex2.approx, f16 conversions, the
// release store, acquire load and relaxed atomic add at GPU scope); every
// inline PTX says why no upstream op is (the wgmma, the mbarrier wait loop,
// the polling loop, red.release, cvt.rn.bf16x2, register pins and fences).

/// 2 pi, for the kernels' sin and cos by the MUFU (of a fraction of a turn).
#define ATTN_K_TWO_PI 6.283185307179586476925

/// Inline PTX with side effects and no result over one or two i32 operands
/// (constraints "r" and "r,r").
void attn_k_asm_r(struct attn_builder *b, const char *text, MlirValue x);
void attn_k_asm_rr(struct attn_builder *b, const char *text, MlirValue x,
                   MlirValue y);
/// Rotation as a multiply and a fused multiply-add per output (math.fma):
/// y1 = fma(x1, c, -(x2 s)), y2 = fma(x2, c, x1 s).
void attn_k_rotate_fma(struct attn_builder *b, MlirValue x1, MlirValue x2,
                       MlirValue c, MlirValue s, MlirValue *y1, MlirValue *y2);
/// llvm.inttoptr of x to type to (!llvm.ptr<3>, <7>, or !llvm.ptr).
MlirValue attn_k_inttoptr(struct attn_builder *b, MlirValue x, MlirType to);

/// mbarriers at shared address addr (i32): init with an arrival count,
/// arrive expecting bytes of transactions, arrive, wait for parity (i32).
void attn_k_mbar_init(struct attn_builder *b, MlirValue addr, int count);
void attn_k_mbar_expect_tx(struct attn_builder *b, MlirValue addr,
                           int64_t bytes);
void attn_k_mbar_arrive(struct attn_builder *b, MlirValue addr);
void attn_k_mbar_wait(struct attn_builder *b, MlirValue addr, MlirValue parity);
/// fence.mbarrier_init.release.cluster.
void attn_k_fence_mbar_init(struct attn_builder *b);
/// fence.proxy.async.global (global) or .shared::cta.
void attn_k_fence_proxy_async(struct attn_builder *b, bool global);
/// setmaxnreg.inc (inc) or .dec to regs registers per thread.
void attn_k_setmaxnreg(struct attn_builder *b, bool inc, int regs);
/// wgmma.fence, wgmma.commit_group, wgmma.wait_group n.
void attn_k_wgmma_fence(struct attn_builder *b);
void attn_k_wgmma_commit(struct attn_builder *b);
void attn_k_wgmma_wait(struct attn_builder *b, int n);
/// wgmma.wait_group 0 kept by ptxas after the computation of after (f32),
/// as attn_ptx_wgmma_wait_after.
void attn_k_wgmma_wait_after(struct attn_builder *b, MlirValue after);
/// TMA load of a 4-D box at c[0..3] (i32) of tensor map map (i64) into shared
/// address dst (i32), completing on the mbarrier at bar (i32).
void attn_k_tma_load(struct attn_builder *b, MlirValue dst, MlirValue map,
                     const MlirValue c[4], MlirValue bar);
/// TMA store of the box at c[0..3] of map from shared address src, in a bulk
/// async-group.
void attn_k_tma_store(struct attn_builder *b, MlirValue src, MlirValue map,
                      const MlirValue c[4]);
/// Bulk copy (cp.async.bulk.global.shared::cta, nvvm.cp.async.bulk.global.
/// shared.cta) of bytes (i32) from shared address src (i32) to global
/// address dst (i64), in a bulk async-group.
void attn_k_bulk_copy_out(struct attn_builder *b, MlirValue dst,
                          MlirValue src, MlirValue bytes);
/// Bulk copy (nvvm.cp.async.bulk.shared.cluster.global) of bytes (a
/// multiple of 16) from global src (!llvm.ptr, 16-byte aligned) to shared
/// address dst (i32), completing on the mbarrier at bar (i32).
void attn_k_bulk_copy_in(struct attn_builder *b, MlirValue dst, MlirValue src,
                         int64_t bytes, MlirValue bar);
/// red.global.add.f32 of v (f32) at the global pointer ptr (!llvm.ptr)
/// plus off bytes.
void attn_k_red_add_f32(struct attn_builder *b, MlirValue ptr, int32_t off,
                        MlirValue v);
/// cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 of bytes (a
/// multiple of 16) from shared address src (i32, 16-byte aligned) into
/// global dst (!llvm.ptr, 16-byte aligned), in a bulk async-group.
void attn_k_bulk_reduce_add_f32(struct attn_builder *b, MlirValue dst,
                                MlirValue src, int64_t bytes);
/// cp.async.bulk.commit_group; cp.async.bulk.wait_group[.read] n.
void attn_k_bulk_commit(struct attn_builder *b);
void attn_k_bulk_wait(struct attn_builder *b, int n, bool read);
/// One thread polls the u32 at addr (i64) until it compares cmp ("ge", "eq")
/// to target (i32), acquire at scope ("sys", "gpu"); traps after timeout_ns.
void attn_k_wait_until(struct attn_builder *b, MlirValue addr, const char *cmp,
                       MlirValue target, const char *scope,
                       long long timeout_ns);
/// st.release.gpu of the u32 v at addr (i64): an atomic llvm.store, release,
/// syncscope "device".
void attn_k_store_release(struct attn_builder *b, MlirValue addr, MlirValue v);
/// ld.acquire.gpu of the u64 at addr (i64), an atomic llvm.load.
MlirValue attn_k_load_acquire64(struct attn_builder *b, MlirValue addr);
/// atom.relaxed.gpu.add.u64 of 1 at addr (i64), llvm.atomicrmw add monotonic
/// at syncscope "device": the old value (i64).
MlirValue attn_k_atom_inc64(struct attn_builder *b, MlirValue addr);
/// v through an empty asm with side effects (constraint cons, tied): the
/// same value, but LLVM cannot hoist it out of the loop it is in.
MlirValue attn_k_pin(struct attn_builder *b, MlirValue v, const char *cons);
/// n (2 or 4) 4-byte values w (all of one type, i32 or f32) stored at ptr
/// (!llvm.ptr), aligned to 4n bytes, as one vector store.
void attn_k_store_vec(struct attn_builder *b, const MlirValue *w, int n,
                      MlirValue ptr);
/// The words w[0..3] (i32) at the 16-byte aligned ptr (!llvm.ptr) where pred
/// (i1) holds: a predicated store.
void attn_k_store16_if(struct attn_builder *b, const MlirValue w[4],
                       MlirValue ptr, MlirValue pred);
/// The f32 v at the 4-byte aligned ptr (!llvm.ptr) where pred (i1) holds: a
/// predicated store.
void attn_k_store_f32_if(struct attn_builder *b, MlirValue v, MlirValue ptr,
                         MlirValue pred);
/// Transposes the 4 x 4 words (i32) of a quad of lanes (lane4 = lane % 4);
/// w is replaced.
void attn_k_quad_transpose(struct attn_builder *b, MlirValue lane4,
                           MlirValue w[4]);
/// 1 / v by rcp.approx.ftz.f32 (nvvm.rcp.approx.ftz.f).
MlirValue attn_k_rcp(struct attn_builder *b, MlirValue v);
/// One 16-bit float (i16) to f32 and back (bf16 or f16).
MlirValue attn_k_to_f32_16(struct attn_builder *b, bool bf16, MlirValue h16);
MlirValue attn_k_from_f32_16(struct attn_builder *b, bool bf16, MlirValue f);
/// vals[0..n) (one type; constraint cons_out, "f" or "r") through an empty
/// asm, replaced by its results: their definitions stay on this side of the
/// surrounding wgmma fence/wait.
void attn_k_reg_fence(struct attn_builder *b, MlirValue *vals, int n,
                      const char *cons_out);
/// acc (n f32, replaced) = wgmma m64n(2n)k16 of A by descriptor desc_a and B
/// by desc_b (i64), + acc where scale_d (i32) is not 0; B transposed or not.
void attn_k_wgmma_ss(struct attn_builder *b, bool bf16, MlirValue *acc, int n,
                     MlirValue desc_a, MlirValue desc_b, MlirValue scale_d,
                     bool trans_b);
/// The same with A transposed or not (trans_a: A is stored M-major, as B
/// is N-major with trans_b).
void attn_k_wgmma_ss_t(struct attn_builder *b, bool bf16, MlirValue *acc,
                       int n, MlirValue desc_a, MlirValue desc_b,
                       MlirValue scale_d, bool trans_a, bool trans_b);
/// acc (n f32, replaced) += wgmma of A in registers a[0..3] (i32) and B by
/// desc_b.
void attn_k_wgmma_rs(struct attn_builder *b, bool bf16, MlirValue *acc, int n,
                     const MlirValue a[4], MlirValue desc_b, bool trans_b);
/// The wgmma descriptor (i64) of shared address addr (i32), 128-byte swizzle,
/// leading and stride byte offsets lbo, sbo; and desc plus bytes (desc
/// itself when bytes is 0).
MlirValue attn_k_make_desc(struct attn_builder *b, MlirValue addr, int64_t lbo,
                           int64_t sbo);
MlirValue attn_k_desc_add(struct attn_builder *b, MlirValue desc,
                          int64_t bytes);
/// Shared byte offset (i32) of element (row, col) (i32) of a tile with the
/// 128-byte swizzle at base (i32) with `rows` rows.
MlirValue attn_k_swz(struct attn_builder *b, MlirValue base, int64_t rows,
                     MlirValue row, MlirValue col);

//===-- Staged output rows (staged_rows.c) --------------------------------===//
//
// A consumer warpgroup writes its 64
// output rows into shared memory and threads 0-63 each copy one row with the
// bulk-copy engine. Per tile: drain, put, ready, copy_open, copy per row,
// copy_close; at the end a drain that waits for the rows to land.

/// Row 0 at shared address base (i32), rows pitch bytes apart; wt the thread
/// in the warpgroup (i32), bar its named barrier (i32).
struct attn_k_rows {
  MlirValue base, wt, bar;
  int64_t pitch;
};
/// The pitch of rows of bytes bytes: 16 more.
int64_t attn_k_rows_pitch(int64_t bytes);
enum attn_k_drain {
  ATTN_K_DRAIN_READ,     ///< the engine has read the rows
  ATTN_K_DRAIN_LANDED,   ///< the copies have landed
  ATTN_K_DRAIN_PUBLISHED ///< landed, and fenced before a release
};
void attn_k_rows_drain(struct attn_builder *b, const struct attn_k_rows *r,
                       enum attn_k_drain how, bool meet);
/// This thread's part of the accumulator fragment acc (n f32), times
/// scale[row half] when scale is not NULL, as 16-bit pairs (bf16 or f16).
void attn_k_rows_put(struct attn_builder *b, bool bf16,
                     const struct attn_k_rows *r, const MlirValue *acc, int n,
                     const MlirValue *scale);
void attn_k_rows_ready(struct attn_builder *b, const struct attn_k_rows *r);
/// Opens the copying threads' region (wt < 64) in s; copy_close commits the
/// thread's copies and closes it.
void attn_k_rows_copy_open(struct attn_builder *b, const struct attn_k_rows *r,
                           struct attn_b_if *s);
/// Copies this thread's row to dst (i64): bytes (i32 value) or n bytes.
void attn_k_rows_copy(struct attn_builder *b, const struct attn_k_rows *r,
                      MlirValue dst, MlirValue bytes);
void attn_k_rows_copy_n(struct attn_builder *b, const struct attn_k_rows *r,
                        MlirValue dst, int64_t n);
void attn_k_rows_copy_close(struct attn_builder *b, struct attn_b_if *s);

//===-- RoPE inside the attention kernel (rope_rows.c, rope_ahead.c) ------===//
//
// The rotation of rows of a swizzled shared-memory tile (Q in the consumers or
// the producer, K per tile in the fused placement) and of Q pair by pair
// (rope_rows.c), and the ahead placement's team that rotates K once per row
// from a queue (rope_ahead.c). The pure sizes (attn_hopper_rope_slots,
// attn_hopper_ahead_blocks, ...) are kernels.h's.

/// Explicit positions of the rows a RoPE helper rotates (attn_hopper_kernel's
/// q_positions, k_positions): row r of the sequence is at position
/// base[min(max(r, 0), len - 1)], base (!llvm.ptr) the batch's positions[b,
/// 0]; padding rows past the sequence, and those before row 0 of a causal
/// Hopper kernel's shifted first block, take a real row's (their results
/// are never stored). A null base: the positions are offset + row.
struct attn_k_rope_pos {
  MlirValue base;
  int64_t len;
};

/// One thread's part of rotating rows of a swizzled shared-memory tile: it
/// owns two adjacent RoPE pairs ("a slot") and rows g, g + groups, ...;
/// cos/sin advance by a rotation per row step, so a tile costs two sincos
/// per thread. All fields are values (i32 or f32) but groups.
struct attn_k_rope_rows {
  MlirValue slot_c1, slot_c2; ///< first columns of the slot's two words
  MlirValue g;                ///< first row (within the rows rotated)
  int groups;                 ///< rows advance by this many per step
  MlirValue f0, f1;           ///< inverse frequencies of the two pairs
  MlirValue step_c0, step_s0, step_c1, step_s1;
  /// Null (what attn_k_rope_rows_setup sets): the words are addressed
  /// through the shared-memory pointer; else the i32 shared address of that
  /// base, and they are loaded and stored with 32-bit addresses (by inline
  /// PTX), which take fewer registers.
  MlirValue sbase32;
  /// Null (what attn_k_rope_rows_setup sets): the first row's cos/sin by
  /// sincos of f32 angles pos * f0, pos * f1; else the frequencies in turns
  /// per position, and the MUFU's sin/cos of the angle's fraction of a turn.
  MlirValue turns0, turns1;
  /// false (what attn_k_rope_rows_setup sets): turns0 and turns1 are f64
  /// (the ahead team's); true: f32 (the consumers' with ahead, whose product
  /// with the position is split exactly into two f32 by an FMA).
  bool turns32;
};

/// Thread rt (i32) of nthreads owns slot rt % slots and rows rt / slots + i *
/// (nthreads / slots); nthreads must be a multiple of the slots.
void attn_k_rope_rows_setup(struct attn_builder *b,
                            const struct attn_hopper_kernel *k, MlirValue rt,
                            int nthreads, struct attn_k_rope_rows *r);
/// Sets r's turns0 and turns1 (f64) from its inverse frequencies: the first
/// row's cos/sin then come from the angle's fraction of a turn (a multiply,
/// a rounding, sin.approx and cos.approx) instead of __nv_sinf and
/// __nv_cosf (a range reduction each, about 20 instructions on the fast
/// path). A caller that keeps them as f32 sets turns32 where it loads them.
void attn_k_rope_rows_turns(struct attn_builder *b, struct attn_k_rope_rows *r);
/// Rotates rows [first, first + nrows) (first: i32) of a swizzled tile of
/// tile_rows rows at tile_base (i32 offset from the shared-memory base smem,
/// a !llvm.ptr<3>); row `first` has position pos_first (i32). The rotations
/// fuse their multiply-adds (attn_k_rotate_fma). With explicit positions
/// (pp not NULL, its base not null) pos_first is the sequence row of row
/// `first` instead, and each row's position is loaded and its cos/sin
/// computed (r's turns, else its frequencies) rather than stepped.
void attn_k_rope_rows(struct attn_builder *b,
                      const struct attn_hopper_kernel *k, MlirValue smem,
                      MlirValue tile_base, int tile_rows, MlirValue first,
                      int nrows, MlirValue pos_first,
                      const struct attn_k_rope_rows *r,
                      const struct attn_k_rope_pos *pp);
/// A consumer warpgroup (thread wt of 128, warpgroup cw; i32) rotates its 64
/// Q rows of the Q tile at shared-memory offset 0 (q_row: the tile's first
/// query row), one pair per item; then fences for the async proxy. With
/// explicit positions (pp, as attn_k_rope_rows) each item loads its row's.
void attn_k_rope_q_pairs(struct attn_builder *b,
                         const struct attn_hopper_kernel *k, MlirValue smem,
                         MlirValue wt, MlirValue q_row, MlirValue cw,
                         const struct attn_k_rope_pos *pp);

/// The ahead placement (kernels.h's attn_hopper_ahead_blocks says what
/// its workspace rope_sync holds). ctx: the i32 shared address of its
/// context (attn_hopper_ahead_ctx_bytes). One thread: initialises the
/// context's mbarriers.
void attn_k_ahead_init(struct attn_builder *b, MlirValue ctx);
/// All producer threads (wt: i32): thread 32, the team's leader, takes the
/// CTA's first ticket and fills the context (sync: rope_sync, raw_map and
/// rot_map: the maps of k and k_rot, i64 each); then named barrier 8. The
/// first ticket less this launch's first (i32). ctas: the launch's CTAs.
MlirValue attn_k_ahead_start(struct attn_builder *b,
                             const struct attn_hopper_kernel *k, MlirValue ctx,
                             MlirValue wt, MlirValue sync, MlirValue raw_map,
                             MlirValue rot_map, int64_t ctas);
/// The TMA thread, at a tile's start: whether every key block of batch bz,
/// K head kh (i32) is done (its counter read once, with acquire order; then
/// the fence for its TMA): if so the tile's blocks need no wait (i1).
MlirValue attn_k_ahead_head_done(struct attn_builder *b,
                                 const struct attn_hopper_kernel *k,
                                 MlirValue ctx, MlirValue bz, MlirValue kh);
/// The TMA thread: waits (trapping after timeout_ns) until key block j (i32)
/// of batch bz and K head kh is flagged done, then fences for its TMA.
void attn_k_ahead_wait(struct attn_builder *b,
                       const struct attn_hopper_kernel *k, MlirValue ctx,
                       MlirValue bz, MlirValue kh, MlirValue j,
                       long long timeout_ns);
/// All producer threads (wt: i32), before the producer warpgroup gives up
/// its registers: the team's threads (wt 32 .. 127) compute their rotation
/// constants, whose f64 and sincos math needs more than the 32 registers
/// the warpgroup keeps with three consumers, and stash them in the context.
void attn_k_ahead_setup(struct attn_builder *b,
                        const struct attn_hopper_kernel *k, MlirValue wt,
                        MlirValue ctx);
/// The team: producer warps 1-3 (rt = 0 .. 95, i32; rt 0 is the leader
/// that takes the tickets and issues the copies), from key block first
/// (i32), with the constants attn_k_ahead_setup stashed. Rotates key blocks
/// until the queue is empty, double-buffered in the two 1024-aligned
/// buffers of block_n * head_dim * 2 bytes at buf_off from the
/// shared-memory base (smem as a !llvm.ptr<3>, sbase as an i32 address):
/// TMA of the raw block into one while the team rotates the other, TMA out
/// to k_rot, and the block's flag released once its copy has landed. Named
/// barrier 9. With k->k_positions, positions is their pointer parameter
/// (else unused).
void attn_k_rope_ahead(struct attn_builder *b,
                       const struct attn_hopper_kernel *k, MlirValue rt,
                       MlirValue smem, MlirValue sbase, int64_t buf_off,
                       MlirValue ctx, MlirValue first, MlirValue positions);

//===-- The Hopper attention kernel's roles (attention_*.c) ---------------===//
//
// The warp-specialised attention kernel of sm_90a (hopper_attention.c
// assembles it): its shared-memory layout and the walk over a CTA's tiles
// and the K/V ring (attention_pipeline.c), the persistent schedule and the
// grid (attention_schedule.c), the producer warpgroup (attention_producer.c),
// the consumer warpgroups (attention_consumer.c) and how a tile's O is
// written (attention_epilogue.c). The pure sizes (attn_hopper_smem_bytes,
// attn_hopper_grid, ...) are kernels.h's.

/// Bytes of each consumer thread's stash of RoPE constants
/// (attn_hopper_stashes_rope): its two frequencies, then its steps' cos and
/// sin (six f32).
#define ATTN_K_ATT_STASH_BYTES 24

/// The kernel being built: its builder and description, register counts and
/// shared-memory layout, set once by attn_k_att_layout and read-only after.
struct attn_k_att {
  struct attn_builder *b;
  const struct attn_hopper_kernel *k;
  int ns, no;  ///< S and O accumulator registers per thread
  int na;      ///< O's and, with row_sum_mma, l's 4 (m64n8) after them
  int regions; ///< head_dim / 64
  /// Shared-memory layout (byte offsets from the 1024-aligned base).
  int64_t q_off, kv_off, tile_bytes, ones_off, bar_off, stash_off;
  int64_t staging_off, pitch; ///< staged_out: the rows of O, their stride
  /// rope_k_ahead: the team's two K buffers, then its context; end: the
  /// layout's end.
  int64_t ahead_off, ahead_ctx_off, end;
};

/// The kernel's values every role reads, and the current tile's.
struct attn_k_att_vals {
  MlirValue smem, sbase, tid, bx, gx, qmap, kmap, vmap, out;
  MlirValue lse; ///< with k->lse: the parameter lse; null otherwise
  /// rope_k_ahead: the map of the raw k (kmap is k_rot's) and rope_sync
  /// (i64); the team's context (i32 shared address) and first key block.
  MlirValue kraw_map, sync, ahead_ctx, ahead_first;
  /// i32 shared addresses of the mbarriers (of stage 0).
  MlirValue bar_q, bar_qempty, bar_qready, bar_full, bar_kready, bar_empty;
  MlirValue bar_vfull, bar_vempty; // kv_split: V's own (else null)
  /// The tile (attn_k_att_open_tiles): its first query row, head, batch,
  /// K/V head and key blocks; kc = key blocks this CTA loaded before it, qn
  /// = tiles before it (the parity of the Q barriers).
  MlirValue q_row, h, bz, kh, nkb, kc, qn;
  /// The tile's first key block with a window's left edge or a key table
  /// (its nkb blocks from there: attn_hopper_key_range); null otherwise
  /// (block 0).
  MlirValue kb0;
  /// With k->key_blocks: the tile's run of wholly visible key blocks
  /// [kff, kfl), where the mask functions are not computed; null otherwise.
  MlirValue kff, kfl;
  /// With k->key_lists: the parameter key_lists, and the tile's entries in
  /// it (its nkb blocks: attn_k_att_key_entry); null otherwise.
  MlirValue key_lists, klist;
  /// The pointer parameters the score and mask functions read
  /// (attn_k_capture_args).
  MlirValue caps[ATTN_K_FN_PTRS];
};

/// Lays out a kernel of k built by b (NULL for the sizes alone) in a.
void attn_k_att_layout(struct attn_k_att *a, struct attn_builder *b,
                       const struct attn_hopper_kernel *k);
/// Whether producer warps 1-3 rotate each tile's Q (rope_q_by_producer): in
/// a persistent kernel whose K comes rotated those warps are free, and the
/// rotation of the next tile's Q overlaps the consumers' last P V and
/// epilogue. Otherwise the consumers rotate their rows.
bool attn_hopper_q_by_producer(const struct attn_hopper_kernel *k);
/// Whether the consumers rotate Q stepping cos/sin down their rows (each
/// thread owns a slot of every row it rotates), rather than pair by pair.
bool attn_hopper_q_steps(const struct attn_hopper_kernel *k);
/// Whether each consumer thread keeps those steps' constants for Q (inverse
/// frequencies and the per-step rotations, six f32) in shared memory rather
/// than in registers across the tile loop: with three consumers their 160
/// registers do not hold them besides the block loop's (ptxas spilled).
bool attn_hopper_stashes_rope(const struct attn_hopper_kernel *k);

/// Opens the loop (in loop) over this CTA's tiles and sets x's tile values
/// (tile t as attention_schedule.c numbers them). A persistent kernel's CTA
/// bx runs the tiles its list in @<name>__tiles holds; otherwise the CTA's
/// one tile comes from its block index (and loop is unused).
void attn_k_att_open_tiles(const struct attn_k_att *a,
                           struct attn_k_att_vals *x, struct attn_b_for *loop);
/// Closes attn_k_att_open_tiles' loop: the next tile starts nkb key blocks
/// on.
void attn_k_att_close_tiles(const struct attn_k_att *a,
                            const struct attn_k_att_vals *x,
                            struct attn_b_for *loop);
/// The key block (i32) of the tile's j-th (i32): kb0 + j, or j itself when
/// the tile starts at block 0, or its entry in the tile's key list.
MlirValue attn_k_att_key_block(const struct attn_k_att *a,
                               const struct attn_k_att_vals *x, MlirValue j);
/// The same, and in *full whether the mask functions hide no key of it (an
/// i1, from the key list; null without one).
MlirValue attn_k_att_key_entry(const struct attn_k_att *a,
                               const struct attn_k_att_vals *x, MlirValue j,
                               MlirValue *full);
/// The ring stage (i32) and its phase parity of the tile's key block j.
MlirValue attn_k_att_stage_of(const struct attn_k_att *a,
                              const struct attn_k_att_vals *x, MlirValue j,
                              MlirValue *phase);
/// The parity of the tile's phase of the Q barriers.
MlirValue attn_k_att_q_parity(const struct attn_k_att *a,
                              const struct attn_k_att_vals *x);
/// The address of stage s's mbarrier in the array at base.
MlirValue attn_k_att_bar_at(const struct attn_k_att *a, MlirValue base,
                            MlirValue s);
/// The shared address of stage s's K tile (its V tile follows).
MlirValue attn_k_att_tile_k(const struct attn_k_att *a,
                            const struct attn_k_att_vals *x, MlirValue s);

/// Builds the persistent kernel's schedule at b's insertion point: the
/// global @<name>__tiles (i32: G + 1 offsets, then the tiles of each CTA in
/// order). The op, or null when out of memory (b is then failed).
MlirOperation attn_k_att_schedule(struct attn_builder *b,
                                  const struct attn_hopper_kernel *k);
/// With k->key_blocks: the global @<name>__keys (i32: first, last,
/// full_first, full_last of each query block) that both attention kernels
/// read their key blocks from.
MlirOperation attn_k_att_key_table(struct attn_builder *b,
                                   const struct attn_hopper_kernel *k);
/// With k->key_blocks: entry e (0 first, 1 last, 2 full_first, 3 full_last)
/// of query block qb (i32) in @<name>__keys, an invariant load.
MlirValue attn_k_key_table_load(struct attn_builder *b,
                                const struct attn_hopper_kernel *k,
                                MlirValue qb, int e);

/// The producer warpgroup (wt its thread): TMA of Q and the K/V ring, RoPE
/// of K tiles or of Q by warps 1-3, or the ahead team.
void attn_k_att_producer(const struct attn_k_att *a,
                         const struct attn_k_att_vals *tiles, MlirValue wt);
/// Consumer warpgroup wg (1 .. consumers; wt its thread) over the CTA's
/// tiles.
void attn_k_att_consumer(const struct attn_k_att *a,
                         const struct attn_k_att_vals *tiles, MlirValue wg,
                         MlirValue wt);

/// What a consumer warpgroup's epilogue needs of the kernel's values: the
/// out pointer, the tile's batch and head, the warpgroup's first query row,
/// this thread's first fragment row and lane % 4, the consumer's index and
/// thread, the shared-memory base and 0.0f; with k->staged_out, where its
/// rows of O are staged (bytes from the base, and their pitch); with k->lse,
/// the parameter lse.
struct attn_k_att_out {
  MlirValue out, bz, h, wg_row, row0, lr, cw, wt, sbase, zero, lse;
  int64_t staging_off, pitch;
};
/// Sums the row sums l[2] across the quad (with k->row_sum_mma they are the
/// rows' already), normalises this thread's O accumulators (ov, no f32) and
/// writes its rows < seq_q: 16 bytes per lane from registers (the quad's
/// words transposed first; out is 16-byte aligned), or, with
/// k->staged_out, through the warpgroup's staged rows. With k->lse, lane 0
/// of each quad then writes its two rows' log-sum-exp from m[2] (the rows'
/// final maxima) and the sums (attn_k_row_lse); m is unread otherwise.
void attn_k_att_out(struct attn_builder *b, const struct attn_hopper_kernel *k,
                    const struct attn_k_att_out *o, const MlirValue *ov,
                    int no, const MlirValue m[2], const MlirValue l[2]);
/// The warpgroup's staged rows of O (k->staged_out), for the kernel's last
/// wait on their copies.
void attn_k_att_out_rows(struct attn_builder *b, const struct attn_k_att_out *o,
                         struct attn_k_rows *r);

//===-- The Hopper GEMM and its fused collectives (gemm_*.c) --------------===//
//
// The GEMM's kernel state and shared roles: its floors (gemm_geometry.c, gemm_epilogue.c, gemm_rope.c,
// gemm_comm.c) fill the roles hopper_gemm.c assembles. The description
// (struct attn_hopper_gemm), its workspace layout and the pure functions
// (sizes, defaults, checks) are kernels.h's.


/// The kernel being built: the builder and the values used across roles.
struct attn_k_gemm {
  struct attn_builder *b;
  const struct attn_hopper_gemm *g;
  int nacc;            ///< accumulators per consumer thread: block_n / 2
  int64_t a_bytes, b_bytes, stage_bytes, bar_off, tiles_m, tiles_n, nk;
  int64_t staging_off, pitch; ///< staged epilogue: its rows, and their stride
  int64_t pending_off;        ///< staged reduce patterns: pending tiles
  int64_t mail_off;           ///< staged reduce patterns: the mailboxes
  struct attn_gemm_workspace ws_at;
  // Values (i32 unless noted).
  MlirValue smem, sbase, tid, bid, a_map, b_map, c; // a_map, b_map: i64;
                                                    // c: ptr
  MlirValue a;         ///< the kernel's parameter a (the all-gather's rows)
  MlirValue out;       ///< where compute CTAs store tiles: c or the partials
  MlirValue full, empty; ///< shared addresses of slot 0's mbarriers
  MlirValue ntiles;    ///< tiles this compute CTA runs (index)
  MlirValue cbid;      ///< compute CTA number (bid - comm_ctas)
  MlirValue ws;        ///< the workspace pointer (fused kernels only)
  MlirValue peers;     ///< i64 address of the ranks' workspace bases (fused)
  /// i64 address of the ranks' C (fused; 0 when C is not a symmetric buffer)
  MlirValue out_peers;
  MlirValue pbase[8];  ///< reduce patterns: the ranks' workspaces (i64)
  MlirValue g_map;     ///< all-gather: map of the gathered rows (i64)
  MlirValue rank, epoch;
  MlirValue slice;     ///< split K: the unit's slice (i32; per role)
  MlirValue kblk0;     ///< split K: its first K block (i32; producer)
};

/// Fills e's sizes and shared-memory offsets from e->g (no IR).
/// (gemm_geometry.c)
void attn_k_gemm_layout(struct attn_k_gemm *e);
/// Shared-memory offset of the ring slots' tile numbers (adaptive split),
/// after the mbarriers; 64 bytes are kept for them.
int64_t attn_k_gemm_tileq_off(const struct attn_hopper_gemm *g);

/// One `scf.while (%arg = init) : (i32) -> (types[0..n))` being built
/// (gemm_ops.c): between _open and _cond new ops go into its before
/// region, whose argument is arg; _cond ends it with scf.condition(cond)
/// vals[0..n) and opens the after region, whose arguments are args; _close
/// yields next (i32) and goes back to after the loop, whose results are
/// results.
struct attn_k_while {
  MlirOperation op;
  MlirValue arg;
  intptr_t n;
  MlirValue args[4], results[4];
  MlirBlock outer_block;
  MlirOperation outer_anchor;
};
void attn_k_while_open(struct attn_builder *b, struct attn_k_while *w,
                       MlirValue init, intptr_t n, const MlirType *types);
void attn_k_while_cond(struct attn_builder *b, struct attn_k_while *w,
                       MlirValue cond, const MlirValue *vals);
void attn_k_while_close(struct attn_builder *b, struct attn_k_while *w,
                        MlirValue next);

/// llvm.load of vector<n x elem> from p, aligned to align bytes.
MlirValue attn_k_gemm_load_vec(struct attn_builder *b, MlirValue p, int n,
                               MlirType elem, int64_t align);

/// Tile ordinal t (i32) -> tile row *tm and column *tn: grouped by group_m
/// tile rows; shards of rows interleaved (reduce-scatter) or starting at
/// this rank's (all-gather). (gemm_geometry.c)
void attn_k_gemm_tile_coords(struct attn_k_gemm *e, MlirValue t,
                             MlirValue *tm, MlirValue *tn);
/// Row vrow (i32) of the padded layout -> the real row of A or C (i32) in
/// *real and whether it is one (i1) in *valid; without padding (m_rows 0)
/// vrow itself and a null value (no test needed). in_shard: the real row
/// within its shard instead of within the whole matrix. (gemm_geometry.c)
void attn_k_gemm_real_row(struct attn_k_gemm *e, MlirValue vrow,
                          bool in_shard, MlirValue *real, MlirValue *valid);

/// Fused kernels (gemm_comm.c), in order: the communication role of CTA
/// bid < comm_ctas; the compute epilogue's signal that the consumer
/// warpgroup's half of tile t is in the workspace; the peer bases of the
/// consumers and the signalers (once each, reduce patterns); where tile t
/// (tile row tm) goes: this rank's slot of the owner's workspace (a
/// pointer); the producer's wait for the gathered rows of tile row tm
/// unless they are this rank's (mine, i1).
void attn_k_gemm_comm_role(struct attn_k_gemm *e);
void attn_k_gemm_comm_tile_done(struct attn_k_gemm *e, MlirValue t,
                                MlirValue tm, MlirValue cw, MlirValue wt);
/// One thread: counts a warpgroup's half of tile t (tile row tm) in the
/// owner's flags0[t] (what attn_k_gemm_comm_tile_done does after its
/// barrier; the staged epilogue calls it once its copies have landed).
void attn_k_gemm_comm_signal(struct attn_k_gemm *e, MlirValue t,
                             MlirValue tm);
void attn_k_gemm_comm_consumer_init(struct attn_k_gemm *e);
MlirValue attn_k_gemm_comm_out(struct attn_k_gemm *e, MlirValue t,
                               MlirValue tm);
void attn_k_gemm_comm_wait_rows(struct attn_k_gemm *e, MlirValue tm,
                                MlirValue mine);
/// Adaptive split: the 256 consumer threads (team thread tid, i32) of a
/// compute CTA that found no tile left take communication tasks.
void attn_k_gemm_comm_help(struct attn_k_gemm *e, MlirValue tid);
/// Claims the next number of the workspace's counter at ctl
/// (ATTN_GEMM_CTL_TILE or _TASK; one thread; an i32); the last CTA of a
/// launch resets the counters.
MlirValue attn_k_gemm_claim(struct attn_k_gemm *e, int ctl);
/// The end of a fused kernel (every CTA, all threads): the last CTA of this
/// rank meets the other ranks.
void attn_k_gemm_comm_finish(struct attn_k_gemm *e);

/// The consumers' epilogue (gemm_epilogue.c): set-up before the tile loop
/// (warpgroup cw, thread wt in it, i32), the tile t (tile row tm, column
/// tn) from the final accumulators acc (nacc f32), and the end of the loop.
void attn_k_gemm_epilogue_open(struct attn_k_gemm *e, MlirValue cw,
                               MlirValue wt);
void attn_k_gemm_epilogue(struct attn_k_gemm *e, MlirValue *acc, MlirValue t,
                          MlirValue tm, MlirValue tn, MlirValue cw,
                          MlirValue wt);
void attn_k_gemm_epilogue_close(struct attn_k_gemm *e, MlirValue cw,
                                MlirValue wt);
/// Staged fused reduce patterns' mailboxes (kernels.h's
/// attn_gemm_has_mail): their mbarriers, made by one thread before the
/// CTA's first barrier, and the signaler part of the producer warpgroup's
/// thread wt (i32). (gemm_epilogue.c)
void attn_k_gemm_mail_init(struct attn_k_gemm *e);
void attn_k_gemm_signaler(struct attn_k_gemm *e, MlirValue wt);
/// RoPE in the epilogue (gemm_rope.c): rotates this consumer thread's
/// accumulators acc in place; its first column is col0 (i32, the tile
/// column + 2 (lane % 4)), its two rows rows[0] and rows[1] (i32).
void attn_k_gemm_rope_epilogue(struct attn_k_gemm *e, MlirValue *acc,
                               MlirValue col0, const MlirValue rows[2]);

//===-- The manifest entry (launch.c) -------------------------------------===//

/// One parameter of a kernel: a pointer (tensor NULL) with name, element
/// type, shape of rank dims (0: 4) and the alignment the kernel assumes (0
/// or 1: none); or a TMA tensor map that attnrt encodes from the pointer
/// parameter `tensor`: dims innermost first, boxes of 64 elements by
/// box_rows rows, 128-byte swizzle (shape, rank and align unused).
struct attn_k_param {
  const char *name;
  const char *dtype;
  int64_t shape[4];
  int align;
  int rank;
  const char *tensor;
  int64_t dims[4];
  int box_rows;
};

/// Most parameters (and extra keys) of a manifest entry.
#define ATTN_K_MAX_PARAMS 24

/// The attn.launch dictionary: grid, block (threads, 1, 1), no static and
/// smem_bytes dynamic shared memory, kernel family `kernel`, the params, and
/// the keys extra[0..nextra) ("attention", "matmul" ...). The same attribute
/// lib/Transforms/hopper_launch.c's text gives.
MlirAttribute attn_k_launch_attr(struct attn_builder *b, const char *kernel,
                                 const int64_t grid[3], int threads,
                                 int64_t smem_bytes, intptr_t nparams,
                                 const struct attn_k_param *params,
                                 intptr_t nextra,
                                 const MlirNamedAttribute *extra);
/// The params of the attention kernels' q, k, v and out ([B, H, N, d] and
/// [B, Hkv, M, d] of k's 16-bit type; out 16-byte aligned) and lse
/// (attn_k_lse_param), before the captures (attn_k_args_params), in enum
/// attn_hopper_arg order.
void attn_k_qkvo_params(const struct attn_hopper_kernel *k,
                        struct attn_k_param base[ATTN_HOPPER_ARG_CAPTURE]);
/// The param of k's lse (with k->lse): [B, H, N] f32, 4-byte aligned.
struct attn_k_param attn_k_lse_param(const struct attn_hopper_kernel *k);

//===-- Score and mask functions (score_fn.c) -----------------------------===//
//
// The bodies of tile.score_fn and tile.mask_fn (attn_hopper_kernel's
// score_fns and mask_fns) cloned onto each element of a thread's S
// fragment: the block arguments become the element's score, its batch and
// head and its query row and key, clamped into the sequences, as index
// casts of the kernel's i32 values; a memref.load of a capture becomes a
// global load from the capture's pointer parameter at the row-major offset
// of its (already clamped) indices; gpu.yield gives the result; every other
// op is cloned as it is (the GPU pipeline lowers arith and math after). What
// depends only on the batch, the head and the thread's two rows is built
// once per tile (attn_k_fn_tile), what depends on the key once per column of
// the fragment (both of its rows share it), the rest once per element.

/// The ops made for the bodies in one scope, one entry per op (score_fn.c).
struct attn_k_fn_memo;

/// A kernel's score and mask functions being built: its description, the
/// pointer parameters (!llvm.ptr) of the tensors they read (as
/// attn_k_capture_args lays them out) and, after attn_k_fn_tile, the
/// tile's batch, head and the thread's two query rows (index, clamped into
/// the sequence; row: i32 as the kernel has them) and the ops made for
/// them; then the ops of the current key block's columns.
struct attn_k_fn {
  const struct attn_hopper_kernel *k;
  MlirValue caps[ATTN_K_FN_PTRS];
  MlirValue b, h, q[2], row[2];
  /// Per score function with an additive body (s +- a u, score_fn.c): +-u
  /// over the factor the scores carry into it, per row (f32, made per
  /// tile), and the u it was made of; null otherwise.
  MlirValue coef[ATTN_HOPPER_MAX_FNS][2], coef_u[ATTN_HOPPER_MAX_FNS];
  struct attn_k_fn_memo *tile, *block;
  MlirValue block_j;     ///< the key block block's ops are for
  MlirBlock block_where; ///< and where they were made
  MlirValue kv[ATTN_K_MAX_REGS / 2]; ///< the block's keys (index)
  MlirValue kbase;       ///< the block's first key of the thread (i32)
  /// The rows' distances q - kbase ([r][0]) and kbase - q ([r][1]) in f32,
  /// made when a body first needs them in the block; null before.
  MlirValue d0[2][2];
  /// x / C (C a constant) made as x (1 / C): set by the backward, whose
  /// point evaluations have no `in` form to fold the division into (one
  /// rounding more, as that form's).
  bool recip_div;
};

/// Whether k has score or mask functions (then the kernels' softmax state
/// carries an attn_k_fn).
bool attn_k_has_fns(const struct attn_hopper_kernel *k);
/// Starts fn for k with the parameters caps (attn_k_capture_args').
void attn_k_fn_init(struct attn_k_fn *fn, const struct attn_hopper_kernel *k,
                    const MlirValue *caps);
/// At the start of a tile, outside its key loop: the tile's batch bz and
/// head h and the thread's first fragment row row0 (its second is row0 + 8;
/// all i32), and the ops of every body that depend on nothing else.
void attn_k_fn_tile(struct attn_builder *b, struct attn_k_fn *fn, MlirValue bz,
                    MlirValue h, MlirValue row0);
/// Frees what fn holds (nothing is built).
void attn_k_fn_free(struct attn_k_fn *fn);
/// The factor the scores carry after score function fi (k->score_fns[fi])
/// when they carry f before it: f for a body s +- a u (u made per tile),
/// C for one yielding C y (C > 0 a constant), else 1 (score_fn.c).
double attn_k_fn_factor(const struct attn_hopper_kernel *k, int fi, double f);
/// The factor the scores carry into score function fi.
double attn_k_fn_factor_into(const struct attn_hopper_kernel *k, int fi);
/// The factor the scores carry after modifier i of k's order (the scale or
/// a score function) when they carry f before it; fi: the score functions
/// before i.
double attn_k_fn_factor_after(const struct attn_hopper_kernel *k, int i,
                              int fi, double f);
/// Score function fi (k->score_fns[fi]) on S (block_n / 2 f32 in sv,
/// replaced) of key block j (i32), lane lr in the quad (i32), where the
/// scores carry the factor f (attn_k_fn_factor_into): each element times f
/// first (none when f is 1), or f where the body's forms fold it
/// (score_fn.c; attn_k_fn_factor gives the factor after).
void attn_k_fn_scores(struct attn_builder *b, struct attn_k_fn *fn, int fi,
                      MlirValue lr, MlirValue j, double f, MlirValue *sv);
/// The mask functions on S (as attn_k_fn_scores): -inf (ninf) where any
/// body yields false.
void attn_k_fn_masks(struct attn_builder *b, struct attn_k_fn *fn,
                     MlirValue lr, MlirValue j, MlirValue ninf, MlirValue *sv);
/// Point evaluations of the mask functions (a run-time classification's,
/// key_lists.c), one (q, kv) at a time rather than on a fragment: for batch
/// bz and head h (i32), the ops of every mask body that depend on nothing
/// else, made here (outside the loops).
void attn_k_fn_point_tile(struct attn_builder *b, struct attn_k_fn *fn,
                          MlirValue bz, MlirValue h);
/// The key kv (i32, within the keys) of the next point evaluations: what
/// the mask bodies compute of the key alone, made here (outside the loop
/// over rows).
void attn_k_fn_point_key(struct attn_builder *b, struct attn_k_fn *fn,
                         MlirValue kv);
/// Whether every mask function shows the key of attn_k_fn_point_key to
/// query row q (i32, within the rows): an i1; the ops made for it alone
/// are not kept for later points.
MlirValue attn_k_fn_point_visible(struct attn_builder *b, struct attn_k_fn *fn,
                                  MlirValue q);
/// The value made for want (a value of mask function fi's body that
/// depends on b, h and one of q and kv) at query row q or key kv (i32,
/// within the sequences; the other null), after attn_k_fn_point_tile; its
/// ops are not kept for later points.
MlirValue attn_k_fn_point_value(struct attn_builder *b, struct attn_k_fn *fn,
                                int fi, MlirValue want, MlirValue q,
                                MlirValue kv);
/// Body (a score function's, its derivative's or a mask function's) at
/// one point, after attn_k_fn_point_tile: s the score (f32; null for a
/// mask body), q and kv the element's row and key (index, clamped into
/// the sequences). What it makes is kept (fn's block scope, until the next
/// attn_k_fn_point_key or tile), so that elements sharing a row, a key or
/// both share those ops; the backward evaluates its fragment's elements so
/// (attention_bwd.c), where the forward's forms (rows and keys in the
/// fragment's layout) do not apply. Its value: the score, or an i1.
MlirValue attn_k_fn_point_body(struct attn_builder *b, struct attn_k_fn *fn,
                               MlirBlock body, MlirValue s, MlirValue q,
                               MlirValue kv);
/// Body (of 5 arguments, as a score function's) at one point as
/// attn_k_fn_point_body, where the score s may be null (unknown): every
/// value its gpu.yield gives into ys (nys of them; null where one depends
/// on an unknown value or the yield has another count). How many are
/// known. For tile.capture_grad's bodies (attention_bwd.c), which yield a
/// derivative and indices.
int attn_k_fn_point_yields(struct attn_builder *b, struct attn_k_fn *fn,
                           MlirBlock body, MlirValue s, MlirValue q,
                           MlirValue kv, MlirValue *ys, int nys);
/// Whether body (a score, derivative or mask function's) reads its key
/// (kv) or query row (!kv) only divided by positive constant multiples of
/// span: its value is then one over every span-aligned run of span keys
/// or rows (the gate's g[b, h, q, kv / 64]), and a caller may evaluate it
/// at one point of the run for all (indices clamped to the sequence's last
/// stay in the run where the run starts inside the sequence, and share one
/// value where it starts past it).
bool attn_k_fn_body_blocked(MlirBlock body, bool kv, int64_t span);
/// The attributes of a capture's pointer parameter: llvm.noalias and
/// llvm.readonly (its loads may use the read-only data cache).
MlirAttribute attn_k_fn_capture_attrs(struct attn_builder *b);
/// Capture i's manifest parameter (a pointer with its name, dtype, shape).
struct attn_k_param attn_k_fn_capture_param(const struct attn_hopper_kernel *k,
                                            int i);
/// The manifest params of the caller's tensors in k's order
/// (attn_hopper_arg_at) into out: base[0 .. 4] for q, k, v, out and lse
/// (read with k->lse only), the captures' own. Their number
/// (attn_hopper_nargs).
int attn_k_args_params(const struct attn_hopper_kernel *k,
                       const struct attn_k_param base[ATTN_HOPPER_ARG_CAPTURE],
                       struct attn_k_param *out);
/// The kernel function f's parameter of the caller's tensor arg (an enum
/// attn_hopper_arg or ATTN_HOPPER_ARG_CAPTURE + i), and those the score
/// and mask functions may read into caps (ATTN_K_FN_PTRS: the captures',
/// then q's, k's and v's).
MlirValue attn_k_arg(const struct attn_hopper_kernel *k,
                     const struct attn_b_func *f, int arg);
void attn_k_capture_args(const struct attn_hopper_kernel *k,
                         const struct attn_b_func *f, MlirValue *caps);

//===-- Softmax (softmax.c) -----------------------------------------------===//

/// What the softmax of a thread's two rows reads: its lane in the quad (lr),
/// its first row (row0), the first row of its warp or warpgroup (wg_row)
/// and that group's rows (group_rows: 16 or 64), and the constants
/// attn_k_score_factor * log2(e), -inf and 0.
struct attn_k_softmax {
  MlirValue lr, row0, wg_row;
  MlirValue scale_log2, ninf, zero;
  int group_rows;
  /// With score or mask functions (attn_k_has_fns): their state, prepared
  /// for the tile (attn_k_fn_tile); NULL otherwise.
  struct attn_k_fn *fn;
  /// With k->key_blocks: the tile's wholly visible key blocks [kff, kfl)
  /// (i32), which the mask functions skip; null otherwise.
  MlirValue kff, kfl;
  /// With k->key_lists: whether the mask functions hide no key of the block
  /// being masked (i1, its key-list entry's flag; they are then skipped);
  /// null otherwise. Set per block by the caller of attn_k_mask.
  MlirValue fn_full;
};

/// The factor f the softmax folds into its exponent (scale_log2 = f
/// log2(e)): the modifiers keep S as f times what they compute (the scale
/// joins f, a score function keeps it or gives its own where its body's
/// form allows: attn_k_fn_factor), so that without score functions f is the
/// scale and S is never touched (score_fn.c, beside the factors it steps
/// through).
double attn_k_score_factor(const struct attn_hopper_kernel *k);
/// The score functions (softcap, ALiBi, the gate, users' bodies), in k's
/// order, on S (block_n / 2 f32 in sv, replaced) of key block j (i32), by
/// the element's row and key (the fragment layout attn_k_mask reads;
/// attn_k_fn_scores, s->fn). Nothing without them.
void attn_k_score_mods(struct attn_builder *b,
                       const struct attn_hopper_kernel *k,
                       const struct attn_k_softmax *s, MlirValue j,
                       MlirValue *sv);
/// Masks S (block_n / 2 f32 in sv, replaced) in key block j (i32) where it
/// crosses the diagonal (causal), a window's edge or the end of the keys,
/// behind a branch; then, on every block, by the mask functions
/// (attn_k_fn_masks).
void attn_k_mask(struct attn_builder *b, const struct attn_hopper_kernel *k,
                 const struct attn_k_softmax *s, MlirValue j, MlirValue *sv);
/// The online softmax of S (sv) from the row maxima m_in and sums l_in: the
/// new m_out, l_out, the factors alpha and P (pf, block_n / 2 f32), as
/// hopper_softmax.c's attn_hopper_softmax.
void attn_k_softmax(struct attn_builder *b, const struct attn_hopper_kernel *k,
                    const struct attn_k_softmax *s, const MlirValue *sv,
                    const MlirValue m_in[2], const MlirValue l_in[2],
                    MlirValue m_out[2], MlirValue l_out[2], MlirValue alpha[2],
                    MlirValue *pf);
/// acc (n f32, replaced) times its rows' factors alpha.
void attn_k_rescale(struct attn_builder *b, const struct attn_hopper_kernel *k,
                    MlirValue *acc, int n, const MlirValue alpha[2]);
/// A row's log-sum-exp from the softmax's final m (log2 domain) and its
/// whole row sum l (f32): (m + log2 l) ln 2, +inf where l is 0 (no key
/// seen), as the plain path's tile.row_lse (attn_hopper_kernel::lse).
MlirValue attn_k_row_lse(struct attn_builder *b, MlirValue m, MlirValue l);
/// Result i of a region op r as a value of its own: r#i + nz (nz = -0.0),
/// as the text named it.
MlirValue attn_k_result_f32(struct attn_builder *b, MlirOperation r, intptr_t i,
                            MlirValue nz);

//===-- RoPE (rope.c) -----------------------------------------------------===//

/// The inverse frequency of pair (i32): theta^(-2 pair / rotary_dim), f32,
/// by libdevice's exp2 in f64.
MlirValue attn_k_rope_inv_freq(struct attn_builder *b,
                               const struct attn_hopper_kernel *k,
                               MlirValue pair);
/// The columns (i32) of pair's two elements.
void attn_k_rope_pair_cols(struct attn_builder *b,
                           const struct attn_hopper_kernel *k, MlirValue pair,
                           MlirValue *c1, MlirValue *c2);
/// Rotates the two 32-bit words at shared pointers pa and pb (two pairs'
/// halves each): pair 0 by (c0, s0), pair 1 by (c1, s1).
void attn_k_rope_rotate_words(struct attn_builder *b,
                              const struct attn_hopper_kernel *k, MlirValue pa,
                              MlirValue pb, MlirValue c0, MlirValue s0,
                              MlirValue c1, MlirValue s1);
/// cos/sin (c0, s0, c1, s1) stepped by the rotation (sc0, ss0, sc1, ss1):
/// the four new values in next[0..3] (a loop yields them).
void attn_k_rope_step_rows(struct attn_builder *b, MlirValue c0, MlirValue s0,
                           MlirValue c1, MlirValue s1, MlirValue sc0,
                           MlirValue ss0, MlirValue sc1, MlirValue ss1,
                           MlirValue next[4]);

/// &positions[bz, 0] (bz: i32) of the positions tensor (the pointer
/// parameter positions) of rows of len rows.
MlirValue attn_k_rope_pos_base(struct attn_builder *b, MlirValue positions,
                               MlirValue bz, int64_t len);
/// The position (i32) of sequence row `row` (i32) under pp (its base not
/// null): one load.
MlirValue attn_k_rope_pos_at(struct attn_builder *b,
                             const struct attn_k_rope_pos *pp, MlirValue row);
/// The MUFU's cos and sin of frac (f32) turns, frac in [-1/2, 1/2].
void attn_k_rope_mufu_sincos(struct attn_builder *b, MlirValue frac,
                             MlirValue *c, MlirValue *s);
/// cos and sin of pos (i32) times a frequency in turns per position (f64):
/// the angle's fraction of a turn in f64, exact to 2^-29 turns for any
/// position below 2^24, then the MUFU's sin/cos on [-pi, pi] (absolute
/// error about 2^-21). Few registers and no branches, where __nv_sinf's
/// reduction of large angles needs many.
void attn_k_rope_turns_sincos(struct attn_builder *b, MlirValue pos,
                              MlirValue turns, MlirValue *c, MlirValue *s);
/// An inverse frequency f (f32) in turns per position (f64): f / 2 pi.
MlirValue attn_k_rope_turns(struct attn_builder *b, MlirValue f);

#endif // ATTN_KERNELS_INTERNAL_H
