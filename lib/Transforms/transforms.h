//===- transforms.h - The attn passes and the pipeline parser -------------===//
//
// Every attn pass is a C external pass described by one row of attn_passes[].
// MLIR 22's C API cannot put external passes in the pass registry, so
// --pass-pipeline text is parsed here: attn pass names become our passes,
// everything else is handed to MLIR's own pipeline parser.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_H
#define ATTN_TRANSFORMS_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

//===-- The pass table ----------------------------------------------------===//

/// One pass option: `name=value` inside the pass's braces.
struct attn_pass_option {
  const char *name;
  const char *help;
};

/// Describes one pass. Options are parsed into a struct of options_size bytes
/// that run receives (read-only; passes keep no other state).
struct attn_pass_def {
  const char *argument;    ///< pipeline name, e.g. "attn-tile"
  const char *alias;       ///< extra short flag (e.g. "tile") or NULL
  const char *description; ///< one line for --help
  const struct attn_pass_option *options; ///< NULL-terminated, or NULL
  size_t options_size;
  /// Fills defaults into opts (may be NULL when options_size is 0).
  void (*init_options)(void *opts);
  /// Sets one option; returns false and writes a message to err otherwise.
  bool (*set_option)(void *opts, const char *name, const char *value,
                     char *err, size_t errlen);
  /// Rewrites module; returns false after emitting a diagnostic.
  bool (*run)(MlirOperation module, const void *opts);
};

/// The passes, in pipeline order; attn_num_passes rows.
extern const struct attn_pass_def *const attn_passes[];
extern const size_t attn_num_passes;

/// Finds a pass by argument or alias (len bytes of name). NULL if none.
const struct attn_pass_def *attn_pass_lookup(const char *name, size_t len);

/// Creates the external pass for def with options text ("k=v k2=v2", may be
/// NULL). Returns a null pass and writes err on a bad option. The caller
/// hands the result to a pass manager, which owns it.
MlirPass attn_pass_create(const struct attn_pass_def *def, const char *options,
                          char *err, size_t errlen);

//===-- Pipelines ---------------------------------------------------------===//

/// Adds the passes of a textual pipeline to pm, which runs on builtin.module.
/// Accepts `builtin.module(a, b{opt=1}, func.func(c))` or a bare list
/// `a, b{opt=1}`. attn passes may be mixed with upstream ones; attn passes
/// run on builtin.module only. Returns false and writes err (naming the
/// unknown pass or bad option) on failure.
bool attn_pipeline_add(MlirPassManager pm, const char *pipeline, char *err,
                       size_t errlen);

//===-- GEMM programs -----------------------------------------------------===//

/// A function attn-tile turns into a GEMM tile kernel: its body is one
/// linalg.matmul on static rank-2 tensors of one element type (bf16, f16 or
/// f32) with the default indexing maps, whose inputs are the function's
/// first two arguments, whose init is the third argument (accumulate) or a
/// tensor.empty (filled with 0.0 or not), and whose result it returns.
struct attn_matmul_info {
  MlirOperation matmul; ///< the linalg.matmul or comm.fused_matmul (borrowed)
  int64_t m, n, k;      ///< a is m x k, b k x n, the result m x n
  MlirType elem;
  bool accumulate;      ///< the init is the function's third argument
  /// comm.fused_matmul: the collective (m x n x k is one rank's GEMM, m the
  /// gathered rows for all_gather_matmul); a has a_rows rows and the result
  /// c_rows.
  bool fused;
  int64_t a_rows, c_rows, world;
};

/// Reads the GEMM of func into *out. Returns 1 when func is such a
/// function; 0 when it holds no linalg op named like a matmul; -1 when it
/// holds one attn-tile cannot take, after an error at the offending op when
/// emit is set (silently otherwise).
int attn_matmul_find(MlirOperation func, struct attn_matmul_info *out,
                     bool emit);

/// True when module holds a function attn-tile would turn into a GEMM
/// kernel, or one it would reject for holding a matmul or a collective
/// (comm.all_reduce, all_gather, reduce_scatter, all_to_all) without one:
/// either way the drivers must run attn-tile on it.
bool attn_has_matmul(MlirOperation module);

//===-- GPU lowering choice -----------------------------------------------===//

/// Which GPU kernel family lowers attention.
enum attn_gpu_kernel {
  ATTN_GPU_KERNEL_AUTO,   ///< Hopper where the chip and program allow it
  ATTN_GPU_KERNEL_PLAIN,  ///< the plain-arithmetic path, any chip
  ATTN_GPU_KERNEL_HOPPER, ///< the sm_90a wgmma/TMA kernel or a diagnostic
  ATTN_GPU_KERNEL_MMA,    ///< the sm_80+ mma.sync kernel or a diagnostic
  ATTN_GPU_KERNEL_DECODE, ///< (chosen, not asked for) the sm_80+ decode kernel
};

/// True when the Hopper kernel computes this attn.fused op; otherwise
/// false with a reason in *why (a static string).
bool attn_hopper_supports(MlirOperation fused, const char **why);
/// The same for the backward attn-grad derives (attn.fused_grad): whether
/// lower-tile-to-hopper builds its sm_90a kernels (lower_tile_to_hopper_grad.c).
bool attn_hopper_grad_supports(MlirOperation grad, const char **why);

/// Appends to out the pipeline (after attn-fuse) that lowers module's
/// attention and GEMMs (linalg.matmul) to GPU kernels for chip;
/// tile_options (may be NULL) are passed to attn-tile and override its
/// defaults, hopper_options (may be NULL) to lower-tile-to-hopper. With
/// kind auto: the Hopper kernels on sm_90a when they compute every
/// attention and GEMM; on other chips from sm_80 on the mma.sync kernel when
/// it computes every attention; else plain. Returns the kind chosen
/// (hopper, mma or plain).
struct attn_strbuf;
enum attn_gpu_kernel attn_gpu_pipeline(MlirOperation module, const char *chip,
                                       const char *features,
                                       enum attn_gpu_kernel kind,
                                       const char *tile_options,
                                       const char *hopper_options,
                                       struct attn_strbuf *out);

/// The attn-fuse pass the drivers run on module, written into out:
/// rope-strategy=<rope_strategy> when given (auto, fused, split, pre or
/// producer), else rope-strategy=auto when module holds attn.project (so
/// the Rotation Calculus may place RoPE in the projections), else no
/// option (the lowering places RoPE). With grad, attn-grad follows (each
/// attention's backward, @f__grad, and the forward's lse).
void attn_fuse_pipeline(MlirOperation module, const char *rope_strategy,
                        bool grad, struct attn_strbuf *out);

/// Runs a textual pipeline (as attn_pipeline_add takes it) on module with a
/// fresh pass manager. Returns false after diagnostics: the passes' own, or
/// an error at module when the pipeline text is bad.
bool attn_pipeline_run(MlirOperation module, const char *pipeline);

/// The oldest PTX ISA (times ten, e.g. 80) that has chip ("sm_90a"), or -1
/// for a chip LLVM's NVPTX backend does not know. A chip/ISA pair outside
/// this table makes LLVM end the process: validate before lowering.
int attn_chip_min_ptx(const char *chip, size_t len);

/// The newest PTX ISA the bundled LLVM emits (times ten).
#define ATTN_MAX_PTX 88

/// The upstream passes that take the CPU lowering's output to the LLVM
/// dialect, as pipeline text for attn_pipeline_add.
extern const char attn_cpu_to_llvm_pipeline[];

#ifdef __cplusplus
}
#endif

#endif // ATTN_TRANSFORMS_H
