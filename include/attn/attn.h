//===- attn.h - The public C API of the attn compiler (libattn) -----------===//
//
// Compiles attention programs written as attn, tile or gpu-level MLIR text to
// PTX or a cubin plus a JSON launch manifest (load and launch them with
// attnrt.h), or to a kernel JIT-compiled for the host CPU.
//
// Conventions:
// - Actions return enum attn_status; ATTN_OK is 0. Problems with the program
//   are reported as diagnostics to the caller's attn_diag_fn, with the file,
//   line and column they refer to; the first error of a failed call is also
//   kept, formatted, for attn_last_error().
// - No call aborts the process on bad input: targets, PTX features and
//   options are checked before anything reaches LLVM.
// - Every *_create has a *_destroy and attn_compile's result has
//   attn_result_destroy; destroying NULL is a no-op. Results belong to the
//   caller.
// - Separate calls may run on separate threads at once: each compilation
//   uses its own MLIR context. One attn_cpu_kernel may be run by several
//   threads at once (on different buffers).
//
// This header needs no MLIR header; attn_mlir.h adds entry points that take
// MLIR C API handles.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_ATTN_H
#define ATTN_ATTN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ATTN_API __attribute__((visibility("default")))
#else
#define ATTN_API
#endif

#define ATTN_VERSION_MAJOR 0
#define ATTN_VERSION_MINOR 1
#define ATTN_VERSION_PATCH 0

//===-- Status and diagnostics --------------------------------------------===//

/// Result of every action.
enum attn_status {
  /// The action succeeded.
  ATTN_OK = 0,
  /// A NULL argument, an unknown target or output format, features, tile or
  /// hopper options that are malformed or do not fit the target, a toolkit
  /// folder without nvvm/libdevice, or CPU buffers that do not match the
  /// kernel.
  ATTN_ERR_INVALID_ARGUMENT,
  /// The IR text does not parse or does not verify; diagnostics say where.
  ATTN_ERR_PARSE,
  /// A pass or the backend rejected the program (an unsupported building
  /// block, a target the program cannot run on); diagnostics say why.
  ATTN_ERR_COMPILE,
  /// No CUDA toolkit: GPU targets need nvvm/libdevice (and bin/ptxas for a
  /// cubin) under the toolkit option, $CUDA_HOME, $CUDA_ROOT, $CUDA_PATH or
  /// /usr/local/cuda.
  ATTN_ERR_NO_TOOLKIT,
  /// A CPU kernel has no function of the requested name.
  ATTN_ERR_NOT_FOUND,
  /// Host memory ran out.
  ATTN_ERR_OUT_OF_MEMORY,
};

/// Severity of a diagnostic (the values of MlirDiagnosticSeverity).
enum attn_severity {
  ATTN_SEVERITY_ERROR = 0,
  ATTN_SEVERITY_WARNING = 1,
  ATTN_SEVERITY_NOTE = 2,
  ATTN_SEVERITY_REMARK = 3,
};

/// Receives one diagnostic: severity is an enum attn_severity; file is the
/// source name the location refers to (NULL, with line and col 0, for
/// problems that have no location, such as a bad option); message has no
/// location prefix and no final newline. Notes attached to an error follow
/// it as separate ATTN_SEVERITY_NOTE calls. The strings live only during the
/// call. Called on the thread that called the attn function.
typedef void (*attn_diag_fn)(void *user, int severity, const char *file,
                             int line, int col, const char *message);

/// Returns a static, generic description of status ("invalid argument");
/// "unknown status" for a value outside the enum. Never NULL.
ATTN_API const char *attn_status_string(enum attn_status status);

/// Returns the most recent failure on this thread as one line
/// (`file:line:col: error: message` for a located diagnostic); "" when there
/// was none. Success does not clear it. The text belongs to the thread and
/// stays valid until its next failing call.
ATTN_API const char *attn_last_error(void);

/// Returns the library's version, "MAJOR.MINOR.PATCH". Never NULL, static.
ATTN_API const char *attn_version(void);

//===-- Compile options ---------------------------------------------------===//

/// What attn_compile produces.
enum attn_output_format {
  ATTN_OUTPUT_DEFAULT = 0, ///< PTX for a GPU target, LLVM-dialect MLIR for cpu
  ATTN_OUTPUT_PTX,         ///< PTX text (GPU targets)
  ATTN_OUTPUT_CUBIN,       ///< an ELF cubin assembled by ptxas (GPU targets)
  ATTN_OUTPUT_LLVM_MLIR,   ///< the LLVM-dialect module as MLIR text (cpu);
                           ///< attn_cpu_kernel_create accepts it back
  ATTN_OUTPUT_LLVM_IR,     ///< LLVM IR text (cpu)
};

/// Options of attn_compile and attn_cpu_kernel_create. Fill with
/// attn_compile_options_init, then set fields; NULL strings mean "default".
/// Strings are read during the call only.
struct attn_compile_options {
  /// "sm_70", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a"
  /// or "cpu". NULL: sm_90a, or the chip a gpu-level input already names.
  const char *target;
  /// PTX ISA as "+ptxNN" (at least the chip's minimum). NULL: the chip's
  /// minimum. GPU targets only.
  const char *features;
  /// Options of the attn-tile pass, e.g. "block-m=32 block-n=64". NULL: the
  /// pass's defaults.
  const char *tile_options;
  /// The output; ATTN_OUTPUT_DEFAULT picks by target.
  enum attn_output_format format;
  /// The CUDA toolkit folder. NULL: $CUDA_HOME, $CUDA_ROOT, $CUDA_PATH, then
  /// /usr/local/cuda, the first holding nvvm/libdevice. GPU targets only.
  const char *toolkit;
  /// The file name diagnostics give for the input. NULL: "<input>".
  const char *source_name;
  /// Options of the lower-tile-to-hopper pass, e.g. "ctas=114" for the
  /// persistent attention kernel on a GPU with 114 SMs (an H100 PCIe).
  /// NULL: the pass's defaults (one CTA per SM of an H200: 132). Used on
  /// sm_90a only; GPU targets only.
  const char *hopper_options;
  /// Nonzero: also derive and compile each attention's backward (the
  /// attn-grad pass, docs/passes.md): function @f then returns (out, lse),
  /// its row log-sum-exp [B, H, N] in f32 (f64 for an f64 program, which
  /// computes in f64 and compiles for "cpu" only), and @f__grad takes f's
  /// arguments, out, lse and dout and computes dq, dk and dv (kernels
  /// f__grad__dkdv then f__grad__dq, the launch program f__grad), then the
  /// gradient of each argument of @f marked {attn.grad} (the gate, a
  /// tensor a score_fn body reads: the program's inputs dgate,
  /// dcapture<i> after dv). 0: the forward only, compiled exactly as
  /// without this field.
  int grad;
};

/// Sets every field of opts to its default (NULL, ATTN_OUTPUT_DEFAULT). A
/// NULL opts is a no-op. New fields are only ever added at the end.
ATTN_API void attn_compile_options_init(struct attn_compile_options *opts);

//===-- Compiling ---------------------------------------------------------===//

/// A compiled program: the image (PTX, cubin, LLVM IR or LLVM-dialect MLIR)
/// and its launch manifest.
typedef struct attn_result attn_result;

/// Compiles ir, len bytes of MLIR text (len 0: ir is NUL-terminated), at any
/// level: attn ops (fused, tiled and lowered here), tile kernels, or a
/// module whose gpu.module is ready for PTX emission (GPU targets). opts NULL
/// means all defaults. Diagnostics go to diag (NULL: dropped) with user.
/// Stores a new result in *out, or NULL on failure.
/// Returns ATTN_ERR_INVALID_ARGUMENT for NULL ir or out and bad options,
/// ATTN_ERR_PARSE for text that does not parse or verify, ATTN_ERR_COMPILE
/// when lowering or emission fails, ATTN_ERR_NO_TOOLKIT when a GPU target
/// finds no CUDA toolkit. Caller owns the result; release with
/// attn_result_destroy.
ATTN_API enum attn_status attn_compile(const char *ir, size_t len,
                                       const struct attn_compile_options *opts,
                                       attn_diag_fn diag, void *user,
                                       attn_result **out);

/// Returns the image and stores its size in bytes in *size (when size is not
/// NULL). Text formats are also NUL-terminated (not counted in *size).
/// NULL (and size 0) for a NULL result. Owned by r.
ATTN_API const void *attn_result_data(const attn_result *r, size_t *size);

/// Returns the launch manifest, JSON text: for GPU targets the format
/// attnrt_manifest_parse reads (name, grid, block, shared memory and the
/// parameters of each kernel); for cpu the same without block and shared
/// memory. NULL for a NULL result. Owned by r.
ATTN_API const char *attn_result_manifest(const attn_result *r);

/// Returns the format of the image (never ATTN_OUTPUT_DEFAULT);
/// ATTN_OUTPUT_DEFAULT for a NULL result.
ATTN_API enum attn_output_format attn_result_format(const attn_result *r);

/// Frees r and its buffers. NULL is a no-op.
ATTN_API void attn_result_destroy(attn_result *r);

//===-- Running on the CPU ------------------------------------------------===//

/// A program JIT-compiled for the host CPU: one entry point per kernel.
typedef struct attn_cpu_kernel attn_cpu_kernel;

/// Compiles ir (as attn_compile with target "cpu": attn or tile IR, or the
/// ATTN_OUTPUT_LLVM_MLIR text of an earlier attn_compile) and JIT-compiles it
/// with MLIR's ExecutionEngine, storing a new kernel in *out (NULL on
/// failure). opts may be NULL; its target, if set, must be "cpu", and its
/// format is ignored. Returns the statuses of attn_compile. Caller owns the
/// result; release with attn_cpu_kernel_destroy.
ATTN_API enum attn_status
attn_cpu_kernel_create(const char *ir, size_t len,
                       const struct attn_compile_options *opts,
                       attn_diag_fn diag, void *user, attn_cpu_kernel **out);

/// Runs the kernel named name (NULL: the only one) on host buffers, one per
/// manifest parameter in order: for an attention, q, k, v, the extra inputs
/// of the program, then out, each a dense row-major array of the parameter's
/// shape and dtype (an f64 program's: double, its gate and lse too). Blocks
/// until out is written.
/// Returns ATTN_ERR_INVALID_ARGUMENT for a NULL kernel or buffer, a NULL
/// name when there are several kernels, or n not equal to the kernel's
/// parameter count; ATTN_ERR_NOT_FOUND for an unknown name.
ATTN_API enum attn_status attn_cpu_kernel_run(attn_cpu_kernel *k,
                                              const char *name,
                                              void *const *buffers, size_t n);

/// Returns the kernel's manifest (as attn_result_manifest for cpu), NULL for
/// a NULL kernel. Owned by k.
ATTN_API const char *attn_cpu_kernel_manifest(const attn_cpu_kernel *k);

/// Frees k and its JIT-compiled code. NULL is a no-op.
ATTN_API void attn_cpu_kernel_destroy(attn_cpu_kernel *k);

#ifdef __cplusplus
}
#endif

#endif // ATTN_ATTN_H
