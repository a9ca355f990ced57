// mock_cuda.h - query interface of the mock libcuda (libattnrt_mock_cuda.so) that drives the runtime tests.
//
// The mock implements the driver entry points attnrt resolves, over host
// memory, and is steered by environment variables read at every call:
//   MOCK_CUDA_FAIL=cuInit,cuMemAlloc  listed entry points (unversioned names) fail
//   MOCK_CUDA_FAIL_CODE=100           the CUresult they fail with (default 999)
//   MOCK_CUDA_DEVICES=0               what cuDeviceGetCount reports (default 1)
//   MOCK_CUDA_CC=8.6                  compute capability (default 9.0)
//   MOCK_CUDA_JIT_LOG=text            error log a failing cuModuleLoadDataEx writes
//   MOCK_CUDA_NO_PROC_ADDRESS=1       cuGetProcAddress_v2 finds nothing (dlsym fallback)
// Calls that need a context fail with CUDA_ERROR_INVALID_CONTEXT unless one is
// pushed; cuModuleGetFunction reads the kernel's .param list from the PTX text
// so cuLaunchKernel can record the argument values.

#ifndef ATTNRT_MOCK_CUDA_H
#define ATTNRT_MOCK_CUDA_H

#include <stdint.h>

#define MOCK_CUDA_MAX_PARAMS 16

/// What the most recent cuLaunchKernel received.
struct mock_cuda_launch {
  char kernel[64];
  unsigned grid[3], block[3];
  unsigned shared_bytes;  // dynamic shared memory argument
  int max_dynamic_shared; // the function's MAX_DYNAMIC_SHARED_SIZE_BYTES
  void *stream;
  int nparams;            // parameters the PTX declares
  uint64_t params[MOCK_CUDA_MAX_PARAMS]; // their values, zero-extended
};

/// Counters and records of the mock; reset by mock_cuda_reset.
struct mock_cuda_state {
  int init_calls;
  int proc_address_hits; // entry points handed out by cuGetProcAddress_v2
  int live_allocations, live_modules, live_streams, live_events;
  int primary_ctx_refs;
  int ctx_depth;         // contexts pushed and not popped
  int launches;
  unsigned jit_log_bytes; // log buffer size offered to the last module load
  void *last_stream;      // CUstream made by the last cuStreamCreate
  struct mock_cuda_launch last_launch;
};

/// Returns the mock's state. Owned by the mock.
const struct mock_cuda_state *mock_cuda_state(void);

/// Zeroes the counters and records (live objects must have been released).
void mock_cuda_reset(void);

#endif // ATTNRT_MOCK_CUDA_H
