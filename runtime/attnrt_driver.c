// attnrt_driver.c - loads libcuda with dlopen, resolves its entry points, funnels driver errors, creates runtimes.

#include "attnrt_internal.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// cuGetProcAddress hands out the entry point that behaves as in this CUDA
// version; it must agree with the PFN_*_vNNNN types in struct attnrt_driver.
#define DRIVER_ABI_VERSION 12000

static _Thread_local char thread_error[ATTNRT_ERROR_CAP];

//===-- Errors --===//

static char *error_slot(attnrt_runtime *rt) {
  return rt ? rt->last_error : thread_error;
}

enum attnrt_status attnrt_fail(attnrt_runtime *rt, enum attnrt_status status,
                               const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(error_slot(rt), ATTNRT_ERROR_CAP, fmt, ap);
  va_end(ap);
  return status;
}

void attnrt_append_error(attnrt_runtime *rt, const char *fmt, ...) {
  char *slot = error_slot(rt);
  size_t used = strlen(slot);
  if (used + 1 >= ATTNRT_ERROR_CAP)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(slot + used, ATTNRT_ERROR_CAP - used, fmt, ap);
  va_end(ap);
}

void attnrt_set_thread_error(const char *msg) {
  snprintf(thread_error, sizeof thread_error, "%s", msg);
}

const char *attnrt_thread_error(void) { return thread_error; }

// CUDA_ERROR_INSUFFICIENT_DRIVER: the driver is older than the runtime needs;
// CUDA 13's cuda.h no longer names it, but older drivers still return it.
#define INSUFFICIENT_DRIVER 35

static enum attnrt_status status_for_result(CUresult res) {
  if ((int)res == INSUFFICIENT_DRIVER)
    return ATTNRT_ERR_NO_DEVICE;
  switch (res) {
  case CUDA_SUCCESS:
    return ATTNRT_OK;
  case CUDA_ERROR_OUT_OF_MEMORY:
    return ATTNRT_ERR_OUT_OF_MEMORY;
  case CUDA_ERROR_NO_DEVICE:
  case CUDA_ERROR_STUB_LIBRARY:
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
  case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
  case CUDA_ERROR_DEVICE_UNAVAILABLE:
    return ATTNRT_ERR_NO_DEVICE;
  default:
    return ATTNRT_ERR_CUDA;
  }
}

enum attnrt_status attnrt_check_cu(attnrt_runtime *rt, CUresult res,
                                   const char *fmt, ...) {
  if (res == CUDA_SUCCESS)
    return ATTNRT_OK;
  char call[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(call, sizeof call, fmt, ap);
  va_end(ap);
  // The error queries themselves may fail (a stub library answers every call
  // with CUDA_ERROR_STUB_LIBRARY), so never trust their out-pointers blindly.
  const char *name = NULL, *text = NULL;
  if (rt && rt->cu.GetErrorName && rt->cu.GetErrorName(res, &name) != CUDA_SUCCESS)
    name = NULL;
  if (rt && rt->cu.GetErrorString &&
      rt->cu.GetErrorString(res, &text) != CUDA_SUCCESS)
    text = NULL;
  if (!name && res == CUDA_ERROR_STUB_LIBRARY) {
    name = "CUDA_ERROR_STUB_LIBRARY";
    text = "the CUDA driver library is the toolkit's stub, not a real driver";
  }
  if (name)
    attnrt_fail(rt, ATTNRT_OK, "%s failed: %s (%s)", call, name,
                text ? text : "no description");
  else
    attnrt_fail(rt, ATTNRT_OK, "%s failed: CUresult %d (%s)", call, (int)res,
                text ? text : "no description");
  return status_for_result(res);
}

//===-- Status --===//

ATTNRT_API const char *attnrt_status_string(enum attnrt_status status) {
  switch (status) {
  case ATTNRT_OK:
    return "success";
  case ATTNRT_ERR_INVALID_ARGUMENT:
    return "invalid argument";
  case ATTNRT_ERR_NOT_FOUND:
    return "not found";
  case ATTNRT_ERR_NO_DEVICE:
    return "no CUDA device";
  case ATTNRT_ERR_CUDA:
    return "CUDA driver error";
  case ATTNRT_ERR_NCCL:
    return "NCCL error";
  case ATTNRT_ERR_OUT_OF_MEMORY:
    return "out of memory";
  case ATTNRT_ERR_PARSE:
    return "invalid manifest";
  case ATTNRT_ERR_TIMEOUT:
    return "timed out";
  }
  return "unknown status";
}

ATTNRT_API const char *attnrt_last_error(const attnrt_runtime *rt) {
  return rt ? rt->last_error : thread_error;
}

//===-- Loading the driver --===//

struct entry_point {
  const char *name;    // name for cuGetProcAddress
  const char *symbol;  // exported symbol with the same ABI, for dlsym
  size_t offset;       // field in struct attnrt_driver
  bool optional;       // left NULL when missing; its users check
};

#define ENTRY(field, symbol)                                                   \
  { "cu" #field, symbol, offsetof(struct attnrt_driver, field), false }
#define OPTIONAL_ENTRY(field, symbol)                                          \
  { "cu" #field, symbol, offsetof(struct attnrt_driver, field), true }

static const struct entry_point entry_points[] = {
    ENTRY(Init, "cuInit"),
    ENTRY(DriverGetVersion, "cuDriverGetVersion"),
    ENTRY(GetErrorName, "cuGetErrorName"),
    ENTRY(GetErrorString, "cuGetErrorString"),
    ENTRY(DeviceGetCount, "cuDeviceGetCount"),
    ENTRY(DeviceGet, "cuDeviceGet"),
    ENTRY(DeviceGetName, "cuDeviceGetName"),
    ENTRY(DeviceGetAttribute, "cuDeviceGetAttribute"),
    ENTRY(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    ENTRY(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    ENTRY(CtxPushCurrent, "cuCtxPushCurrent_v2"),
    ENTRY(CtxPopCurrent, "cuCtxPopCurrent_v2"),
    ENTRY(CtxSynchronize, "cuCtxSynchronize"),
    ENTRY(ModuleLoadDataEx, "cuModuleLoadDataEx"),
    ENTRY(ModuleUnload, "cuModuleUnload"),
    ENTRY(ModuleGetFunction, "cuModuleGetFunction"),
    ENTRY(FuncSetAttribute, "cuFuncSetAttribute"),
    ENTRY(LaunchKernel, "cuLaunchKernel"),
    ENTRY(MemAlloc, "cuMemAlloc_v2"),
    ENTRY(MemFree, "cuMemFree_v2"),
    ENTRY(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    ENTRY(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    ENTRY(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    ENTRY(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    ENTRY(MemsetD8, "cuMemsetD8_v2"),
    ENTRY(MemsetD8Async, "cuMemsetD8Async"),
    ENTRY(StreamCreate, "cuStreamCreate"),
    ENTRY(StreamDestroy, "cuStreamDestroy_v2"),
    ENTRY(StreamSynchronize, "cuStreamSynchronize"),
    ENTRY(StreamQuery, "cuStreamQuery"),
    ENTRY(EventCreate, "cuEventCreate"),
    ENTRY(EventDestroy, "cuEventDestroy_v2"),
    ENTRY(EventRecord, "cuEventRecord"),
    ENTRY(EventQuery, "cuEventQuery"),
    ENTRY(EventElapsedTime, "cuEventElapsedTime"),
    // Only kernels with tensormap parameters need it (CUDA 12.0 and later).
    OPTIONAL_ENTRY(TensorMapEncodeTiled, "cuTensorMapEncodeTiled"),
};

#undef ENTRY
#undef OPTIONAL_ENTRY

/// Resolves every entry point of rt->library into rt->cu.
/// Returns ATTNRT_ERR_NO_DEVICE naming the first missing symbol.
static enum attnrt_status resolve_entry_points(attnrt_runtime *rt,
                                               const char *path) {
  // ISO C has no conversion between object and function pointers; dlsym's
  // result is copied bytewise into the PFN fields instead (as POSIX suggests).
  PFN_cuGetProcAddress_v12000 get_proc = NULL;
  void *sym = dlsym(rt->library, "cuGetProcAddress_v2");
  if (sym)
    memcpy(&get_proc, &sym, sizeof get_proc);
  for (size_t i = 0; i < sizeof entry_points / sizeof entry_points[0]; ++i) {
    const struct entry_point *e = &entry_points[i];
    void *fn = NULL;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!get_proc ||
        get_proc(e->name, &fn, DRIVER_ABI_VERSION,
                 CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found) != CUDA_SUCCESS ||
        found != CU_GET_PROC_ADDRESS_SUCCESS)
      fn = NULL;
    if (!fn)
      fn = dlsym(rt->library, e->symbol);
    if (!fn && e->optional)
      continue;
    if (!fn)
      return attnrt_fail(rt, ATTNRT_ERR_NO_DEVICE,
                         "CUDA driver library '%s' has no entry point %s", path,
                         e->symbol);
    memcpy((char *)&rt->cu + e->offset, &fn, sizeof fn);
  }
  return ATTNRT_OK;
}

/// Opens the driver library named by ATTNRT_CUDA_LIBRARY (or the default) and
/// resolves its entry points. Returns ATTNRT_ERR_NO_DEVICE naming the path.
static enum attnrt_status load_driver(attnrt_runtime *rt) {
  const char *path = getenv(ATTNRT_CUDA_LIBRARY_ENV);
  if (!path || !*path)
    path = ATTNRT_CUDA_LIBRARY_DEFAULT;
  // libcuda keeps threads and handlers alive after the last context is gone;
  // unloading it under them crashes, so it stays mapped once opened.
  rt->library = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!rt->library) {
    const char *why = dlerror();
    return attnrt_fail(rt, ATTNRT_ERR_NO_DEVICE,
                       "cannot load CUDA driver library '%s': %s", path,
                       why ? why : "unknown dlopen error");
  }
  enum attnrt_status st = resolve_entry_points(rt, path);
  if (st != ATTNRT_OK) {
    dlclose(rt->library);
    rt->library = NULL;
  }
  return st;
}

//===-- Runtime --===//

ATTNRT_API enum attnrt_status attnrt_runtime_create(int device_ordinal,
                                                    attnrt_runtime **out) {
  if (!out)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_runtime_create: out is NULL");
  *out = NULL;
  if (device_ordinal < 0)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_runtime_create: device ordinal %d is negative",
                       device_ordinal);
  attnrt_runtime *rt = calloc(1, sizeof *rt);
  if (!rt)
    return attnrt_fail(NULL, ATTNRT_ERR_OUT_OF_MEMORY,
                       "attnrt_runtime_create: out of host memory");
  rt->ordinal = device_ordinal;

  enum attnrt_status st = ATTNRT_OK;
  if (!attnrt_env_seconds(ATTNRT_SYNC_TIMEOUT_ENV, true, &rt->sync_timeout_s)) {
    st = attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                     "%s='%s' is not a number of seconds from 0 (no limit) "
                     "to 1e9",
                     ATTNRT_SYNC_TIMEOUT_ENV, getenv(ATTNRT_SYNC_TIMEOUT_ENV));
    goto out_free;
  }
  st = load_driver(rt);
  if (st != ATTNRT_OK)
    goto out_free;
  st = attnrt_check_cu(rt, rt->cu.Init(0), "cuInit");
  if (st != ATTNRT_OK)
    goto out_close_library;
  int count = 0;
  st = attnrt_check_cu(rt, rt->cu.DeviceGetCount(&count), "cuDeviceGetCount");
  if (st != ATTNRT_OK)
    goto out_close_library;
  if (count == 0) {
    st = attnrt_fail(rt, ATTNRT_ERR_NO_DEVICE, "no CUDA device is visible");
    goto out_close_library;
  }
  if (device_ordinal >= count) {
    st = attnrt_fail(rt, ATTNRT_ERR_NOT_FOUND,
                     "device ordinal %d not found: %d device%s visible",
                     device_ordinal, count, count == 1 ? " is" : "s are");
    goto out_close_library;
  }
  st = attnrt_check_cu(rt, rt->cu.DeviceGet(&rt->device, device_ordinal),
                       "cuDeviceGet(%d)", device_ordinal);
  if (st != ATTNRT_OK)
    goto out_close_library;
  st = attnrt_check_cu(rt, rt->cu.DriverGetVersion(&rt->driver_version),
                       "cuDriverGetVersion");
  if (st != ATTNRT_OK)
    goto out_close_library;
  st = attnrt_check_cu(
      rt,
      rt->cu.DeviceGetAttribute(&rt->cc_major,
                                CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                rt->device),
      "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
  if (st != ATTNRT_OK)
    goto out_close_library;
  st = attnrt_check_cu(
      rt,
      rt->cu.DeviceGetAttribute(&rt->cc_minor,
                                CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                rt->device),
      "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)");
  if (st != ATTNRT_OK)
    goto out_close_library;
  st = attnrt_check_cu(rt, rt->cu.DevicePrimaryCtxRetain(&rt->context, rt->device),
                       "cuDevicePrimaryCtxRetain(device %d)", device_ordinal);
  if (st != ATTNRT_OK)
    goto out_close_library;
  *out = rt;
  return ATTNRT_OK;

out_close_library:
  dlclose(rt->library);
out_free:
  attnrt_set_thread_error(rt->last_error);
  free(rt);
  return st;
}

ATTNRT_API void attnrt_runtime_destroy(attnrt_runtime *rt) {
  if (!rt)
    return;
  if (rt->context)
    rt->cu.DevicePrimaryCtxRelease(rt->device);
  dlclose(rt->library);
  free(rt);
}

ATTNRT_API enum attnrt_status attnrt_runtime_device_name(attnrt_runtime *rt,
                                                         char *buf, size_t len) {
  if (!rt)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_runtime_device_name: runtime is NULL");
  if (!buf || len == 0)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_runtime_device_name: buffer is NULL or empty");
  int n = len > INT_MAX ? INT_MAX : (int)len;
  return attnrt_check_cu(rt, rt->cu.DeviceGetName(buf, n, rt->device),
                         "cuDeviceGetName(device %d)", rt->ordinal);
}

ATTNRT_API enum attnrt_status
attnrt_runtime_compute_capability(attnrt_runtime *rt, int *major, int *minor) {
  if (!rt)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_runtime_compute_capability: runtime is NULL");
  if (!major || !minor)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_runtime_compute_capability: major or minor is NULL");
  *major = rt->cc_major;
  *minor = rt->cc_minor;
  return ATTNRT_OK;
}

ATTNRT_API enum attnrt_status attnrt_runtime_driver_version(attnrt_runtime *rt,
                                                            int *version) {
  if (!rt)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_runtime_driver_version: runtime is NULL");
  if (!version)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_runtime_driver_version: version is NULL");
  *version = rt->driver_version;
  return ATTNRT_OK;
}

ATTNRT_API enum attnrt_status attnrt_runtime_sm_count(attnrt_runtime *rt,
                                                      int *count) {
  if (!rt)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_runtime_sm_count: runtime is NULL");
  if (!count)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_runtime_sm_count: count is NULL");
  return attnrt_check_cu(
      rt,
      rt->cu.DeviceGetAttribute(count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                rt->device),
      "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT, device %d)", rt->ordinal);
}

ATTNRT_API enum attnrt_status attnrt_runtime_synchronize(attnrt_runtime *rt) {
  if (!rt)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_runtime_synchronize: runtime is NULL");
  enum attnrt_status st = attnrt_ctx_enter(rt);
  if (st != ATTNRT_OK)
    return st;
  if (rt->sync_timeout_s > 0) {
    // An event on the legacy default stream completes once the work queued
    // before it on every blocking stream has (attnrt's streams all block).
    CUevent ev = NULL;
    st = attnrt_check_cu(rt, rt->cu.EventCreate(&ev, CU_EVENT_DISABLE_TIMING),
                         "cuEventCreate");
    if (st == ATTNRT_OK)
      st = attnrt_check_cu(rt, rt->cu.EventRecord(ev, NULL), "cuEventRecord");
    if (st == ATTNRT_OK)
      st = attnrt_wait_idle(rt, NULL, ev, "attnrt_runtime_synchronize");
    if (ev)
      rt->cu.EventDestroy(ev);
    if (st != ATTNRT_OK)
      return attnrt_ctx_leave(rt, st);
  }
  st = attnrt_check_cu(rt, rt->cu.CtxSynchronize(), "cuCtxSynchronize");
  return attnrt_ctx_leave(rt, st);
}

ATTNRT_API enum attnrt_status
attnrt_runtime_set_sync_timeout(attnrt_runtime *rt, double seconds) {
  if (!rt)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_runtime_set_sync_timeout: runtime is NULL");
  if (!(seconds >= 0) || seconds > 1e9)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_runtime_set_sync_timeout: %g is not a number "
                       "of seconds from 0 (no limit) to 1e9",
                       seconds);
  rt->sync_timeout_s = seconds;
  return ATTNRT_OK;
}

bool attnrt_env_seconds(const char *name, bool zero, double *out) {
  const char *t = getenv(name);
  if (!t || !*t)
    return true;
  char *end = NULL;
  errno = 0;
  double x = strtod(t, &end);
  if (end == t || *end != '\0' || errno == ERANGE || !(zero ? x >= 0 : x > 0) ||
      x > 1e9)
    return false;
  *out = x;
  return true;
}

enum attnrt_status attnrt_wait_idle(attnrt_runtime *rt, CUstream stream,
                                    CUevent event, const char *caller) {
  double start = now_s(), pause = 10e-6;
  for (;;) {
    CUresult res =
        event ? rt->cu.EventQuery(event) : rt->cu.StreamQuery(stream);
    if (res != CUDA_ERROR_NOT_READY)
      return attnrt_check_cu(rt, res,
                             event ? "cuEventQuery" : "cuStreamQuery");
    if (now_s() - start >= rt->sync_timeout_s)
      return attnrt_fail(
          rt, ATTNRT_ERR_TIMEOUT,
          "%s: the GPU work is still running after %g s (%s); a kernel that "
          "never ends cannot be stopped from the host: end the process to "
          "free the GPU",
          caller, rt->sync_timeout_s, ATTNRT_SYNC_TIMEOUT_ENV);
    sleep_s(pause);
    if (pause < 1e-3)
      pause *= 2;
  }
}

//===-- Context scope --===//

enum attnrt_status attnrt_ctx_enter(attnrt_runtime *rt) {
  return attnrt_check_cu(rt, rt->cu.CtxPushCurrent(rt->context),
                         "cuCtxPushCurrent");
}

enum attnrt_status attnrt_ctx_leave(attnrt_runtime *rt,
                                    enum attnrt_status status) {
  CUcontext popped = NULL;
  CUresult res = rt->cu.CtxPopCurrent(&popped);
  // Keep the first failure's message: it explains the call the user made.
  if (status != ATTNRT_OK)
    return status;
  return attnrt_check_cu(rt, res, "cuCtxPopCurrent");
}
