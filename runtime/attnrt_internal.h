// attnrt_internal.h - private types and helpers shared by the runtime's .c files; never included from outside runtime/.

#ifndef ATTNRT_INTERNAL_H
#define ATTNRT_INTERNAL_H

#include "attnrt.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <errno.h>
#include <stdbool.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Size of the error message buffers (per runtime and per thread).
#define ATTNRT_ERROR_CAP 4096

//===-- Driver entry points --===//

/// Driver entry points, each pinned to the ABI version named in its type; the
/// table in attnrt_driver.c resolves them through cuGetProcAddress (asking for
/// CUDA 12.0 behaviour) or, failing that, dlsym of the versioned symbol.
/// Optional ones (marked) are NULL when the driver lacks them.
struct attnrt_driver {
  PFN_cuInit_v2000 Init;
  PFN_cuDriverGetVersion_v2020 DriverGetVersion;
  PFN_cuGetErrorName_v6000 GetErrorName;
  PFN_cuGetErrorString_v6000 GetErrorString;
  PFN_cuDeviceGetCount_v2000 DeviceGetCount;
  PFN_cuDeviceGet_v2000 DeviceGet;
  PFN_cuDeviceGetName_v2000 DeviceGetName;
  PFN_cuDeviceGetAttribute_v2000 DeviceGetAttribute;
  PFN_cuDevicePrimaryCtxRetain_v7000 DevicePrimaryCtxRetain;
  PFN_cuDevicePrimaryCtxRelease_v11000 DevicePrimaryCtxRelease;
  PFN_cuCtxPushCurrent_v4000 CtxPushCurrent;
  PFN_cuCtxPopCurrent_v4000 CtxPopCurrent;
  PFN_cuCtxSynchronize_v2000 CtxSynchronize;
  PFN_cuModuleLoadDataEx_v2010 ModuleLoadDataEx;
  PFN_cuModuleUnload_v2000 ModuleUnload;
  PFN_cuModuleGetFunction_v2000 ModuleGetFunction;
  PFN_cuFuncSetAttribute_v9000 FuncSetAttribute;
  PFN_cuLaunchKernel_v4000 LaunchKernel;
  PFN_cuMemAlloc_v3020 MemAlloc;
  PFN_cuMemFree_v3020 MemFree;
  PFN_cuMemcpyHtoD_v3020 MemcpyHtoD;
  PFN_cuMemcpyDtoH_v3020 MemcpyDtoH;
  PFN_cuMemcpyHtoDAsync_v3020 MemcpyHtoDAsync;
  PFN_cuMemcpyDtoHAsync_v3020 MemcpyDtoHAsync;
  PFN_cuMemsetD8_v3020 MemsetD8;
  PFN_cuMemsetD8Async_v3020 MemsetD8Async;
  PFN_cuStreamCreate_v2000 StreamCreate;
  PFN_cuStreamDestroy_v4000 StreamDestroy;
  PFN_cuStreamSynchronize_v2000 StreamSynchronize;
  PFN_cuStreamQuery_v2000 StreamQuery;
  PFN_cuEventCreate_v2000 EventCreate;
  PFN_cuEventDestroy_v4000 EventDestroy;
  PFN_cuEventRecord_v2000 EventRecord;
  PFN_cuEventQuery_v2000 EventQuery;
  PFN_cuEventElapsedTime_v2000 EventElapsedTime;
  PFN_cuTensorMapEncodeTiled_v12000 TensorMapEncodeTiled; // optional (12.0+)
};

//===-- Objects --===//

struct attnrt_runtime {
  void *library;          // dlopen handle of libcuda
  struct attnrt_driver cu; // entry points resolved from library
  CUdevice device;
  CUcontext context; // retained primary context; NULL until retained
  int ordinal;
  int cc_major, cc_minor;
  int driver_version;
  double sync_timeout_s; // 0: synchronize waits as long as the work runs
  char last_error[ATTNRT_ERROR_CAP];
};

/// One step of a program: a kernel and what each of its arguments is bound to.
struct attnrt_program_step {
  size_t kernel; // index in the manifest's kernels
  // One entry per argument the kernel takes (its nargs): an index into the
  // program's names, inputs first (below info.ninputs), then workspace buffers.
  size_t *slots;
};

struct attnrt_program {
  struct attnrt_program_info info; // the public view; info.inputs is inputs
  char **inputs;                   // info.ninputs names
  char **workspace;                // info.nworkspace names
  size_t *workspace_size;          // bytes the manifest gives each buffer
  size_t *workspace_offset;        // where each buffer starts in the allocation
  struct attnrt_program_step *steps; // info.nsteps entries
};

struct attnrt_manifest {
  int version;
  char *target; // NULL when absent
  char *format; // NULL when absent
  size_t nkernels;
  struct attnrt_kernel_info *kernels; // params and strings owned here too
  size_t nprograms;
  struct attnrt_program *programs; // NULL when there are none
};

/// The last encoding of one tensormap parameter and the address it encodes.
struct attnrt_tensormap_slot {
  CUtensorMap map; // 128-byte aligned by its type (the driver needs 64)
  attnrt_devptr address;
  bool valid;
};

struct attnrt_module {
  attnrt_runtime *rt;
  CUmodule module;
  attnrt_manifest *manifest;
  CUfunction *functions; // parallel to manifest->kernels
  // One per tensormap parameter of all kernels, in manifest order; from
  // aligned_alloc, NULL when there are none.
  struct attnrt_tensormap_slot *maps;
  // Per program of the manifest: its workspace allocation, 0 until its first
  // launch, and whether it has been zero-filled (on the stream of the first
  // launch that got past its checks); NULL when the manifest has no
  // programs.
  attnrt_devptr *workspace;
  bool *workspace_zeroed;
};

struct attnrt_stream {
  attnrt_runtime *rt;
  CUstream stream;
  bool owned; // false for attnrt_stream_wrap: the CUstream is borrowed
};

struct attnrt_event {
  attnrt_runtime *rt;
  CUevent event;
};

//===-- Errors --===//

/// Formats a message into rt's error slot (the thread's when rt is NULL) and
/// returns status, so callers write `return attnrt_fail(rt, ..., "...")`.
enum attnrt_status attnrt_fail(attnrt_runtime *rt, enum attnrt_status status,
                               const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/// The funnel every driver call passes: returns ATTNRT_OK for CUDA_SUCCESS,
/// otherwise records "<call> failed: <cuGetErrorName> (<cuGetErrorString>)",
/// where the printf-style fmt describes the call, and returns the status the
/// CUresult maps to (OUT_OF_MEMORY, NO_DEVICE or CUDA).
enum attnrt_status attnrt_check_cu(attnrt_runtime *rt, CUresult res,
                                   const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/// Appends printf-style text to rt's current error message (truncating).
void attnrt_append_error(attnrt_runtime *rt, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/// Copies msg into this thread's error slot.
void attnrt_set_thread_error(const char *msg);

/// Returns this thread's error slot (read-only use).
const char *attnrt_thread_error(void);

//===-- Context scope --===//

/// Pushes rt's primary context onto this thread's context stack.
enum attnrt_status attnrt_ctx_enter(attnrt_runtime *rt);

/// Pops the context pushed by attnrt_ctx_enter and returns status, or the pop's
/// failure when status was ATTNRT_OK.
enum attnrt_status attnrt_ctx_leave(attnrt_runtime *rt,
                                    enum attnrt_status status);

/// Waits until the work event (when not NULL) or else stream marks has
/// finished, polling, for at most rt->sync_timeout_s seconds; caller names
/// the API function in the timeout's message. The context must be current.
enum attnrt_status attnrt_wait_idle(attnrt_runtime *rt, CUstream stream,
                                    CUevent event, const char *caller);

//===-- Time --===//

/// Parses the environment variable name, a number of seconds, into *out:
/// unset or empty leaves *out alone; otherwise it must be a number in
/// (0, 1e9], or [0, 1e9] when zero is allowed. Returns false for anything
/// else (the caller says what the value means).
bool attnrt_env_seconds(const char *name, bool zero, double *out);

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void sleep_s(double s) {
  if (s <= 0)
    return;
  struct timespec ts;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/// Resolves s to its CUstream for work on rt (NULL -> legacy default stream).
/// Returns ATTNRT_ERR_INVALID_ARGUMENT naming caller when s belongs to another
/// runtime.
enum attnrt_status attnrt_stream_resolve(attnrt_runtime *rt, attnrt_stream *s,
                                         const char *caller, CUstream *out);

//===-- Manifest --===//

/// Returns the index of the kernel named name in m, or -1.
int attnrt_manifest_find(const attnrt_manifest *m, const char *name);

/// Returns the index of the program named name in m, or -1.
int attnrt_manifest_find_program(const attnrt_manifest *m, const char *name);

/// Returns the manifest spelling of kind ("ptr").
const char *attnrt_arg_kind_name(enum attnrt_arg_kind kind);

/// Returns the number of tensormap parameters of all kernels of m before the
/// kernel at index (index == m->nkernels gives the total).
size_t attnrt_manifest_maps_before(const attnrt_manifest *m, size_t index);

//===-- Manifest reading (attnrt_manifest_util.c) --===//

struct cJSON;

/// Largest integer a JSON number (a double) holds exactly.
#define ATTNRT_MAX_EXACT_INTEGER 9007199254740992.0

/// The arguments a fused communication kernel ends with, which
/// attnrt_comm_launch passes: workspace, peers, out_peers, rank, epoch.
#define ATTNRT_COMM_KEPT_ARGS 5

/// Records "manifest: <where>: <message>" in the thread's error slot and
/// returns ATTNRT_ERR_PARSE.
enum attnrt_status attnrt_manifest_error(const char *where, const char *fmt,
                                         ...)
    __attribute__((format(printf, 2, 3)));

/// Returns a malloc'ed copy of s; NULL when out of memory.
char *attnrt_dup_string(const char *s);

/// Returns whether v is a number holding an integer in [lo, hi].
bool attnrt_is_integer_in(const struct cJSON *v, double lo, double hi);

/// Joins where and key into buf as "where.key" (or "key" at top level) and
/// returns buf.
const char *attnrt_field_path(char *buf, size_t len, const char *where,
                              const char *key);

/// Reads obj["kind"], a parameter's kind ("ptr", "i32", "i64", "f32",
/// "tensormap"), into *out.
enum attnrt_status attnrt_read_kind(const struct cJSON *obj, const char *where,
                                    enum attnrt_arg_kind *out);

/// Reads the string obj[key] into a new copy in *out; NULL when absent and
/// not required.
enum attnrt_status attnrt_read_string(const struct cJSON *obj, const char *key,
                                      const char *where, bool required,
                                      char **out);

//===-- Tensor map parameters (attnrt_tensormap.c) --===//

/// Stores the driver's tensor map data type for the manifest dtype name in
/// *type; false when the name is not a tensormap dtype.
bool attnrt_tensormap_data_type(const char *dtype, CUtensorMapDataType *type);

/// Returns the element size in bytes of the manifest tensormap dtype name;
/// 0 when the name is not a tensormap dtype.
unsigned attnrt_tensormap_elem_bytes(const char *dtype);

/// The bytes of parameter p's "shape" times the size of its "dtype"; 0 when
/// either is absent or the dtype is not a tensormap dtype.
double attnrt_param_shape_bytes(const struct attnrt_param_info *p);

/// Reads and checks the fields of a "tensormap" parameter p of kernel kernel,
/// except "tensor", which attnrt_tensormap_resolve reads once every parameter
/// is known.
enum attnrt_status attnrt_tensormap_read(const struct cJSON *obj,
                                         const char *where, const char *kernel,
                                         struct attnrt_param_info *p);

/// Resolves obj["tensor"] of tensormap params[index] to the index of a "ptr"
/// parameter of the same kernel k.
enum attnrt_status
attnrt_tensormap_resolve(const struct cJSON *obj, const char *where,
                         const struct attnrt_kernel_info *k,
                         struct attnrt_param_info *params, size_t index);

//===-- Programs (attnrt_program.c) --===//

/// Reads the optional top-level "programs" array of root into m, after the
/// kernels; on failure m keeps what was read, for attnrt_manifest_destroy.
enum attnrt_status attnrt_manifest_read_programs(const struct cJSON *root,
                                                 attnrt_manifest *m);

//===-- Device communicators (attnrt_comm.c) --===//

// Layout of the device communicator kernels receive, which
// runtime/nccl/attn_nccl_device.cu reads (it repeats these numbers): attnrt's
// LSA barrier handle (uint32_t buffer handle, int count) at 0, zeros up to
// ATTNRT_DEV_COMM_NCCL_OFFSET, then the ncclDevComm NCCL wrote, which the
// shim's build checks fits in ATTNRT_DEV_COMM_NCCL_CAPACITY bytes (200 in
// NCCL 2.28.9, 88 in 2.28.3).
#define ATTNRT_DEV_COMM_NCCL_OFFSET 64
#define ATTNRT_DEV_COMM_NCCL_CAPACITY 1024
#define ATTNRT_DEV_COMM_BYTES (ATTNRT_DEV_COMM_NCCL_OFFSET + ATTNRT_DEV_COMM_NCCL_CAPACITY)

#ifdef __cplusplus
}
#endif

#endif // ATTNRT_INTERNAL_H
