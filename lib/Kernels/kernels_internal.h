//===- kernels_internal.h - The floors of lib/Kernels ---------------------===//
//
// Internal to lib/Kernels; never included from outside (kernels.h is the
// module's public header). The floors, each reading only the ones below:
//
//   instructions.c   the built vocabulary: one op or a short fixed sequence
//                    per call (i32 shortcuts, conversions, inline PTX,
//                    shuffles, 16-bit pairs, shared-memory pointers, LLVM
//                    functions and declarations)
//   launch.c         the attn.launch manifest entry of a kernel, as a
//                    dictionary attribute
//   softmax.c        the online softmax role (mask, maxima, P, rescale) of
//                    a thread's two rows of S
//   rope.c           the RoPE role's math: inverse frequencies, a pair's
//                    columns, two words of a shared-memory tile rotated
//   mma_attention.c  the mma.sync attention kernel (sm_80+), assembled
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

/// Butterfly shuffle of an f32 across the warp (the lane mask a constant).
MlirValue attn_k_shfl_xor(struct attn_builder *b, MlirValue v, int lane_mask);
/// Whether the i1 pred holds in any lane of the warp (every lane takes
/// part): an i1.
MlirValue attn_k_vote_any(struct attn_builder *b, MlirValue pred);
/// 2^v, approximate (ex2.approx.ftz).
MlirValue attn_k_ex2(struct attn_builder *b, MlirValue v);
/// (lo, hi) f32 packed into one i32 of two 16-bit floats (bf16 or f16).
MlirValue attn_k_pack2(struct attn_builder *b, bool bf16, MlirValue lo,
                       MlirValue hi);
/// An i32 of two 16-bit floats unpacked into (lo, hi) f32.
void attn_k_unpack2(struct attn_builder *b, bool bf16, MlirValue w,
                    MlirValue *lo, MlirValue *hi);

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
void attn_k_llvm_func_open(struct attn_builder *b, struct attn_b_func *f,
                           const char *name, intptr_t nargs, intptr_t nattr,
                           const MlirNamedAttribute *attrs);
void attn_k_llvm_func_close(struct attn_builder *b, struct attn_b_func *f);

//===-- The manifest entry (launch.c) -------------------------------------===//

/// One pointer parameter of a kernel: name, element type, shape of rank 4,
/// and the alignment the kernel assumes (0 or 1: none).
struct attn_k_param {
  const char *name;
  const char *dtype;
  int64_t shape[4];
  int align;
};

/// The attn.launch dictionary: grid, block (threads, 1, 1), no static and
/// smem_bytes dynamic shared memory, kernel family `kernel`, the params, and
/// `attention` unless it is null. The same attribute hopper_launch.c's text
/// gives.
MlirAttribute attn_k_launch_attr(struct attn_builder *b, const char *kernel,
                                 const int64_t grid[3], int threads,
                                 int64_t smem_bytes, intptr_t nparams,
                                 const struct attn_k_param *params,
                                 MlirAttribute attention);

//===-- Softmax (softmax.c) -----------------------------------------------===//

/// What the softmax of a thread's two rows reads: its lane in the quad (lr),
/// its first row (row0), the first row of its warp or warpgroup (wg_row),
/// and the constants scale * log2(e), -inf and 0.
struct attn_k_softmax {
  MlirValue lr, row0, wg_row;
  MlirValue scale_log2, ninf, zero;
};

/// Masks S (block_n / 2 f32 in sv, replaced) in key block j (i32) where it
/// crosses the diagonal (causal) or the end of the keys, behind a branch.
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

#endif // ATTN_KERNELS_INTERNAL_H
