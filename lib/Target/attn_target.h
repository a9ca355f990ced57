//===- attn_target.h - PTX/cubin emission and the launch manifest ---------===//
#ifndef ATTN_TARGET_H
#define ATTN_TARGET_H

#include "mlir-c/IR.h"

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// On an llvm.func kernel, the dictionary that becomes its manifest entry
/// verbatim: {grid, block, static_shared_bytes, dynamic_shared_bytes,
/// params = [{name, kind, ...}], attention}. gpu.func kernels get theirs
/// from their signature and launch bounds instead.
#define ATTN_LAUNCH_ATTR "attn.launch"

/// On a gpu.module, an array of launch programs that become the manifest's
/// top-level "programs": [{name, inputs, workspace = [{name, bytes}],
/// steps = [{kernel, args}]}], for lowerings that need several kernels.
#define ATTN_PROGRAMS_ATTR "attn.programs"

enum attn_binary_format {
  ATTN_FORMAT_PTX,   ///< PTX text from LLVM's NVPTX backend
  ATTN_FORMAT_CUBIN, ///< an ELF cubin assembled by the toolkit's ptxas
};

/// A compiled module: the image and the JSON manifest that says how to
/// launch each kernel in it.
struct attn_binary {
  enum attn_binary_format format;
  char *data;      ///< PTX text (NUL-terminated) or cubin bytes
  size_t size;     ///< bytes in data, without the NUL
  char *manifest;  ///< JSON text, NUL-terminated
};

//===-- Emission ----------------------------------------------------------===//

/// Compiles every gpu.module of module (the output of lower-tile-to-gpu) to
/// PTX or cubin for the chip in its #nvvm.target, through MLIR's NVVM target
/// and LLVM's NVPTX backend; cubin through ptxas from toolkit (NULL: found by
/// attn_cuda_toolkit_find). module is rewritten in place. Returns false with
/// error diagnostics on failure. out's buffers belong to the caller; release
/// them with attn_binary_free.
bool attn_target_emit(MlirOperation module, enum attn_binary_format format,
                      const char *toolkit, struct attn_binary *out);

/// Releases out's buffers and zeroes it (NULL is a no-op).
void attn_binary_free(struct attn_binary *b);

//===-- Launch manifest ---------------------------------------------------===//

/// Returns the manifest of every gpu.func kernel in module: name, grid,
/// block, static shared memory and one entry per parameter (bare pointers for
/// memrefs). chip NULL: the chip of the module's #nvvm.target. NULL with an
/// error diagnostic when the module has no kernel or a kernel lacks launch
/// bounds. Caller frees the result with free().
char *attn_manifest_create(MlirOperation module, const char *chip,
                           enum attn_binary_format format);

/// One manifest parameter entry for argument i (of type t) of func:
/// {name, kind = "ptr", dtype, shape} for a memref, {name, kind} for a
/// scalar (f32, i64 for index and 64-bit integers, else i32). The name is
/// element i of func's string array attribute names_attr, else "arg<i>".
/// The caller owns the result.
struct cJSON *attn_manifest_param(MlirOperation func, const char *names_attr,
                                  MlirType t, intptr_t i);

/// Adds to the manifest entry k what the kernel func computes: the
/// dictionary attribute `<prefix>.attention` as "attention" and
/// `<prefix>.matmul` as "matmul", when present (prefix "tile" on a tile
/// kernel, "attn" on a gpu.func).
void attn_manifest_describe(MlirOperation func, const char *prefix,
                            struct cJSON *k);

/// Appends each element of programs (an array attribute of launch program
/// dictionaries; a null or non-array attribute adds nothing) to root's
/// "programs" array, which it creates on the first.
void attn_manifest_add_programs(struct cJSON *root, MlirAttribute programs);

//===-- The CUDA toolkit --------------------------------------------------===//

/// The CUDA toolkit folder: $CUDA_HOME, $CUDA_ROOT, $CUDA_PATH, then
/// /usr/local/cuda, the first that holds nvvm/libdevice. NULL when none does.
/// The string is static or from the environment; do not free it.
const char *attn_cuda_toolkit_find(void);

#ifdef __cplusplus
}
#endif

#endif // ATTN_TARGET_H
