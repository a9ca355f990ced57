// mock_cuda.h - query interface of the mock libcuda (libattnrt_mock_cuda.so) that drives the runtime tests.
//
// The mock implements the driver entry points attnrt resolves, over host
// memory, and is steered by environment variables read at every call:
//   MOCK_CUDA_FAIL=cuInit,cuMemAlloc  listed entry points (unversioned names) fail
//   MOCK_CUDA_FAIL_CODE=100           the CUresult they fail with (default 999)
//   MOCK_CUDA_FAIL_AT=3               only the 3rd call of the listed entry
//                                     points (counted together since the last
//                                     mock_cuda_reset) fails; the others succeed
//   MOCK_CUDA_DEVICES=0               what cuDeviceGetCount reports (default 1)
//   MOCK_CUDA_CC=8.6                  compute capability (default 9.0)
//   MOCK_CUDA_SMS=114                 multiprocessor count (default 132; 0 or
//                                     less: CUDA_ERROR_INVALID_VALUE)
//   MOCK_CUDA_JIT_LOG=text            error log a failing cuModuleLoadDataEx writes
//   MOCK_CUDA_NO_PROC_ADDRESS=1       cuGetProcAddress_v2 finds nothing (dlsym fallback)
//   MOCK_CUDA_STREAM_BUSY=1           cuStreamQuery and cuEventQuery answer CUDA_ERROR_NOT_READY
// Calls that need a context fail with CUDA_ERROR_INVALID_CONTEXT unless one is
// pushed; cuModuleGetFunction reads the kernel's .param list from the PTX text
// (".param .u64 p", ".param .align 64 .b8 p[128]"), or from a cubin's
// .nv.info.<kernel> section (EIATTR_KPARAM_INFO) when the image is an ELF
// file (an nvJitLink output), so cuLaunchKernel can
// record the argument bytes (the first MOCK_CUDA_MAX_LAUNCH_LOG launches are
// kept in order); a launch does nothing unless the test gave the kernel a
// host function (mock_cuda_set_kernel). cuMemAlloc returns 256-byte aligned memory, like the driver.
// cuTensorMapEncodeTiled checks its arguments as the driver documents
// (CUDA_ERROR_INVALID_VALUE otherwise), records them, and writes a map whose
// bytes spell them out (struct mock_cuda_tensor_map). Like an old driver's,
// the mock exports no such symbol: only cuGetProcAddress_v2 hands it out, so
// MOCK_CUDA_NO_PROC_ADDRESS also hides it.

#ifndef ATTNRT_MOCK_CUDA_H
#define ATTNRT_MOCK_CUDA_H

#include <stdint.h>

#define MOCK_CUDA_MAX_PARAMS 16
#define MOCK_CUDA_MAX_PARAM_BYTES 128 // a CUtensorMap
#define MOCK_CUDA_MAX_TENSOR_MAPS 8
#define MOCK_CUDA_MAX_LAUNCH_LOG 8
/// First 8 bytes of every map the mock encodes ("MOCKTMAP").
#define MOCK_CUDA_TENSOR_MAP_MAGIC UINT64_C(0x4D4F434B544D4150)

/// What the most recent cuLaunchKernel received.
struct mock_cuda_launch {
  char kernel[64];
  unsigned grid[3], block[3];
  unsigned shared_bytes;  // dynamic shared memory argument
  int max_dynamic_shared; // the function's MAX_DYNAMIC_SHARED_SIZE_BYTES
  void *stream;
  int nparams;            // parameters the PTX declares
  uint64_t params[MOCK_CUDA_MAX_PARAMS]; // values of those up to 8 bytes, zero-extended
  int param_size[MOCK_CUDA_MAX_PARAMS];  // bytes the PTX declares for each
  unsigned char param_data[MOCK_CUDA_MAX_PARAMS][MOCK_CUDA_MAX_PARAM_BYTES]; // raw bytes
};

/// One cuTensorMapEncodeTiled call. The map it writes holds, as 16 uint64_t:
/// [0] MOCK_CUDA_TENSOR_MAP_MAGIC, [1] address, [2] data_type | rank << 8 |
/// swizzle << 16 | l2_promotion << 24 | interleave << 32 | oob_fill << 40,
/// [3..7] dims, [8..11] strides, [12] box and [13] element_strides (12 bits
/// each, entry 0 lowest), [14] the call's number (1 for the first since the
/// last reset), [15] ~MOCK_CUDA_TENSOR_MAP_MAGIC; entries past rank are 0.
struct mock_cuda_tensor_map {
  int result;          // the CUresult returned
  int data_type;       // CUtensorMapDataType
  unsigned rank;
  uint64_t address;    // globalAddress
  uint64_t dims[5], strides[4];
  uint32_t box[5], element_strides[5];
  int interleave, swizzle, l2_promotion, oob_fill;
  unsigned map_alignment; // largest power of two (up to 128) dividing the map's address
  unsigned char bytes[MOCK_CUDA_MAX_PARAM_BYTES]; // the map written (zeros on failure)
};

/// Counters and records of the mock; reset by mock_cuda_reset.
struct mock_cuda_state {
  int init_calls;
  int proc_address_hits; // entry points handed out by cuGetProcAddress_v2
  int live_allocations, live_modules, live_streams, live_events;
  int primary_ctx_refs;
  int ctx_depth;         // contexts pushed and not popped
  int launches;
  int allocs, frees;         // successful cuMemAlloc and cuMemFree calls
  unsigned long long last_alloc_bytes; // size asked of the last cuMemAlloc
  unsigned jit_log_bytes; // log buffer size offered to the last module load
  void *last_stream;      // CUstream made by the last cuStreamCreate
  struct mock_cuda_launch last_launch;
  struct mock_cuda_launch launch_log[MOCK_CUDA_MAX_LAUNCH_LOG]; // the first ones
  int tensor_map_encodes; // cuTensorMapEncodeTiled calls, failed ones included
  struct mock_cuda_tensor_map tensor_maps[MOCK_CUDA_MAX_TENSOR_MAPS]; // the first ones
  int listed_calls;       // calls of MOCK_CUDA_FAIL's entry points, with MOCK_CUDA_FAIL_AT
  int injected_failures;  // calls MOCK_CUDA_FAIL made fail
  int cubin_loads;        // modules loaded from an ELF cubin (not PTX text)
};

/// Returns the mock's state. Owned by the mock.
const struct mock_cuda_state *mock_cuda_state(void);

/// What a kernel does on the mock: called by cuLaunchKernel, after it
/// recorded the launch, with that record (the parameters' values; device
/// memory is host memory, so a pointer parameter can be written through).
typedef void (*mock_cuda_kernel_fn)(const struct mock_cuda_launch *launch);

/// Makes launches of the kernel named name run fn on the host (NULL: do
/// nothing again, the default for every kernel). Up to 4 kernels; kept
/// across mock_cuda_reset.
void mock_cuda_set_kernel(const char *name, mock_cuda_kernel_fn fn);

/// state.cubin_loads, for callers that do not read the struct (ctypes).
int mock_cuda_cubin_loads(void);

/// Zeroes the counters and records (live objects must have been released).
void mock_cuda_reset(void);

#endif // ATTNRT_MOCK_CUDA_H
