//===- attn_run.h - What attn-run's CPU and GPU executors share -----------===//
#ifndef ATTN_RUN_H
#define ATTN_RUN_H

#include "lib/Reference/attn_reference.h"

#include "mlir-c/ExecutionEngine.h"
#include "mlir-c/IR.h"

#include <stdbool.h>
#include <stddef.h>

/// One attention to run: its function name, the role of each argument and
/// the reference problem.
struct job {
  char name[256];
  int role_of_arg[3]; // 0 q, 1 k, 2 v
  struct attn_ref_problem p;
  int elem_bits;  // 32 or 16
  bool elem_bf16; // which 16-bit kind
};

struct attnrt_runtime;
struct attnrt_module;

/// Runs compiled kernels on host buffers bufs (q, k, v, out in that order).
struct attn_executor {
  /// Runs job j; writes out into bufs[3] and, when timed, the median launch
  /// time in *ms (else -1). Returns false after printing an error.
  bool (*execute)(struct attn_executor *x, const struct job *j,
                  void *const bufs[4], const size_t bytes[4], double *ms);
  int iters;
  MlirExecutionEngine jit;      // CPU
  struct attnrt_runtime *rt;    // GPU
  struct attnrt_module *module; // GPU
  char chip[16];                // GPU target, from the device
  bool hopper;                  // the Hopper kernel was chosen
  char device[128];             // GPU name
};

/// Opens GPU 0 and picks the chip to compile for. Returns false after
/// printing a readable error (no driver, no GPU, unsupported chip).
bool attn_gpu_executor_init(struct attn_executor *x);

/// Compiles module (after lower-tile-to-gpu) to PTX and loads it. Returns
/// false after printing an error.
bool attn_gpu_executor_load(struct attn_executor *x, MlirOperation module);

/// Releases the GPU runtime and module (safe when never initialised).
void attn_gpu_executor_release(struct attn_executor *x);

#endif // ATTN_RUN_H
