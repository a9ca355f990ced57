//===- attn_jit.h - CPU kernels JIT-compiled by MLIR's ExecutionEngine ----===//
//
// The one place attn hands an LLVM-dialect module to MLIR's ExecutionEngine:
// attn-run, attn-fuzz and libattn's CPU kernels (the Python binding's CPU
// tensors) all run their kernels through it.
//
// Every entry point is compiled when the JIT is created, so that a failure is
// an error diagnostic at the kernel's location, with the JIT's own message
// (the symbol it could not resolve), while the module is still there. A
// kernel that fails to compile does not take the others of its module down:
// they are compiled again one by one and the others run.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_JIT_H
#define ATTN_JIT_H

#include "mlir-c/IR.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Set to 1, CPU kernels are compiled as for an x86-64 without native
/// bf16/f16 conversions (no AVX512-BF16, AVX-NE-CONVERT, AVX512-FP16 or
/// F16C), whatever the host has, so that a machine with them runs the
/// portable code that every other x86-64 runs. CI runs the bf16 and f16 CPU
/// tests both ways.
#define ATTN_CPU_PORTABLE_ENV "ATTN_CPU_PORTABLE"

/// Set to a path, the JIT also writes the object code it compiled there (to
/// inspect the instructions the host got).
#define ATTN_JIT_OBJECT_ENV "ATTN_JIT_DUMP_OBJECT"

/// A packed entry point: `_mlir_<name>(void **args)`, args[i] pointing at
/// the i-th argument of the bare-pointer kernel.
typedef void (*attn_jit_entry_fn)(void **);

struct attn_jit;

/// JIT-compiles module (the LLVM dialect, as attn_cpu_to_llvm_pipeline
/// leaves it) for the host and looks up every public function defined in
/// it: the kernels. Each kernel that fails is an error diagnostic at its
/// llvm.func, carrying the JIT's message; the others stay usable. Returns
/// NULL (after an error diagnostic) only when no kernel could be compiled
/// or memory ran out. module is only read.
struct attn_jit *attn_jit_create(MlirOperation module);

/// The entry of kernel name, or NULL when the module had none of that name
/// or it failed to compile (its diagnostic was reported by attn_jit_create).
attn_jit_entry_fn attn_jit_lookup(const struct attn_jit *jit, const char *name);

/// Releases jit (NULL is a no-op).
void attn_jit_destroy(struct attn_jit *jit);

//===-- Conversion routines -----------------------------------------------===//

// What the JIT resolves LLVM's f16/bf16 conversion libcalls to (an x86-64
// without F16C calls __extendhfsf2 and __truncsfhf2, one without
// AVX512-BF16 __truncsfbf2, and not every libgcc has them): bits in, bits
// out, rounding to nearest even, NaNs kept quiet. Exposed for their tests.
uint16_t attn_jit_f32_to_f16(float x);
float attn_jit_f16_to_f32(uint16_t h);
uint16_t attn_jit_f32_to_bf16(float x);

#ifdef __cplusplus
}
#endif

#endif // ATTN_JIT_H
