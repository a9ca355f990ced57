// attnrt.h - public C API of the attn runtime: load compiled attention kernels and launch them.
//
// attnrt is a thin layer over the CUDA Driver API. libcuda is not linked: it is
// loaded with dlopen when a runtime is created, so programs using attnrt start
// (and fail cleanly) on machines without a GPU. The library loaded is
// "libcuda.so.1" unless the environment variable named by
// ATTNRT_CUDA_LIBRARY_ENV ("ATTNRT_CUDA_LIBRARY") gives another path (tests
// point it at a mock driver).
//
// Conventions:
// - Actions return enum attnrt_status; ATTNRT_OK is 0. On failure the detailed
//   message is kept by the runtime object and read with attnrt_last_error(rt).
//   Failures with no runtime to hold the message (a NULL handle, runtime
//   creation, manifest parsing) leave it in a thread-local slot read with
//   attnrt_last_error(NULL).
// - Every *_create/*_load has a *_destroy; destroying NULL is a no-op. Objects
//   made from a runtime (modules, streams, events, allocations) must be
//   released before the runtime is destroyed.
// - A runtime and the objects made from it may be used by one thread at a time;
//   callers that share them between threads serialize the calls themselves.
// - Every call that needs a CUDA context pushes the runtime's primary context
//   and pops it before returning, so the caller's current context is kept.

#ifndef ATTNRT_H
#define ATTNRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ATTNRT_API __attribute__((visibility("default")))
#else
#define ATTNRT_API
#endif

/// Name of the environment variable that overrides the driver library path.
#define ATTNRT_CUDA_LIBRARY_ENV "ATTNRT_CUDA_LIBRARY"
/// Driver library loaded when ATTNRT_CUDA_LIBRARY is unset or empty.
#define ATTNRT_CUDA_LIBRARY_DEFAULT "libcuda.so.1"
/// Largest tensor rank a manifest parameter may declare.
#define ATTNRT_MAX_RANK 8
/// Largest number of parameters a manifest kernel may declare.
#define ATTNRT_MAX_KERNEL_PARAMS 128
/// Largest rank of a "tensormap" parameter (the TMA limit).
#define ATTNRT_TENSORMAP_MAX_RANK 5
/// Alignment in bytes of every workspace buffer of a program.
#define ATTNRT_WORKSPACE_ALIGN 256

//===-- Handles and plain data --===//

/// One device and its primary context, plus the loaded driver library.
typedef struct attnrt_runtime attnrt_runtime;
/// A loaded PTX or cubin image together with its parsed launch manifest.
typedef struct attnrt_module attnrt_module;
/// A CUDA stream, owned by attnrt or borrowed from another library.
typedef struct attnrt_stream attnrt_stream;
/// A CUDA event with timing enabled.
typedef struct attnrt_event attnrt_event;
/// A parsed launch manifest (see attnrt_manifest_parse for the format).
typedef struct attnrt_manifest attnrt_manifest;
/// A NCCL communicator over one GPU per process, with its own runtime.
typedef struct attnrt_comm attnrt_comm;
/// Device memory from ncclMemAlloc registered as a NCCL symmetric window.
typedef struct attnrt_comm_buffer attnrt_comm_buffer;
/// A device address (a CUdeviceptr); 0 is the null device pointer.
typedef uint64_t attnrt_devptr;

/// Kind of one kernel argument, as the manifest's "kind" names it.
enum attnrt_arg_kind {
  ATTNRT_ARG_PTR, ///< "ptr": a device pointer (attnrt_devptr)
  ATTNRT_ARG_I32, ///< "i32": a 32-bit signed integer
  ATTNRT_ARG_I64, ///< "i64": a 64-bit signed integer
  ATTNRT_ARG_F32, ///< "f32": a 32-bit float
  /// "tensormap": a TMA descriptor (CUtensorMap, 128 bytes, passed by value)
  /// that attnrt derives from a "ptr" argument; callers never pass one.
  ATTNRT_ARG_TENSORMAP,
};

/// One kernel argument: a tag and the value it selects.
struct attnrt_arg {
  enum attnrt_arg_kind kind;
  union {
    attnrt_devptr ptr;
    int32_t i32;
    int64_t i64;
    float f32;
  } v;
};

/// How attnrt encodes a "tensormap" parameter: a tiled TMA descriptor over
/// the memory of a "ptr" parameter of the same kernel. Arrays list the
/// innermost dimension first; entries past rank are 0. Element strides are
/// all 1, interleave none, L2 promotion 128 bytes, out-of-bounds fill zeros.
struct attnrt_tensormap_info {
  int tensor;          ///< index in params of the "ptr" parameter it reads
  unsigned elem_bytes; ///< size of one element of the parameter's dtype
  int rank;            ///< dimensions used (1 to ATTNRT_TENSORMAP_MAX_RANK)
  uint64_t dims[ATTNRT_TENSORMAP_MAX_RANK]; ///< global size, in elements
  /// byte stride of dimensions 1 to rank-1 (strides[0] steps dims[1]); the
  /// contiguous defaults are filled in when the manifest gives none
  uint64_t strides[ATTNRT_TENSORMAP_MAX_RANK - 1];
  /// tile one TMA load copies, in elements
  uint32_t box[ATTNRT_TENSORMAP_MAX_RANK];
  unsigned swizzle; ///< shared memory swizzle span in bytes: 0, 32, 64 or 128
};

/// One kernel parameter as the manifest describes it. Owned by the manifest.
struct attnrt_param_info {
  const char *name;          ///< parameter name
  enum attnrt_arg_kind kind; ///< what attnrt_launch expects (or derives) for it
  /// element type ("f32"); NULL when absent, always set for a tensormap
  const char *dtype;
  int rank;                  ///< number of entries of shape used; 0 when absent
  int64_t shape[ATTNRT_MAX_RANK]; ///< tensor shape; entries past rank are 0
  /// kind ATTNRT_ARG_TENSORMAP only (all zero otherwise)
  struct attnrt_tensormap_info tensormap;
  /// kind ATTNRT_ARG_PTR: the alignment in bytes the kernel needs of the
  /// pointer (manifest "align", a power of two; 0 when absent). Checked by
  /// attnrt_launch.
  unsigned align;
};

/// The "comm" entry of a fused GEMM + collective kernel (what attn's
/// comm-schedule writes), which attnrt_comm_launch checks and completes the
/// launch with. Owned by the manifest.
struct attnrt_kernel_comm {
  /// "matmul_all_reduce", "all_gather_matmul" or "matmul_reduce_scatter"
  const char *pattern;
  unsigned world_size;      ///< the ranks the kernel was compiled for
  size_t workspace_bytes;   ///< the symmetric workspace it needs, at least
  const char *split;        ///< "static" or "adaptive"; NULL when absent
  unsigned compute_ctas;    ///< CTAs running the GEMM (0 when absent)
  unsigned comm_ctas;       ///< CTAs moving data (0 when absent)
};

/// One kernel as the manifest describes it. Owned by the manifest.
struct attnrt_kernel_info {
  const char *name;                ///< entry point name in the image
  unsigned grid[3];                ///< grid dimensions (missing trailing ones are 1)
  unsigned block[3];               ///< block dimensions (missing trailing ones are 1)
  unsigned static_shared_bytes;    ///< shared memory declared in the kernel
  unsigned dynamic_shared_bytes;   ///< dynamic shared memory passed at launch
  size_t nparams;                  ///< number of entries in params
  const struct attnrt_param_info *params; ///< parameters in launch order
  /// number of arguments attnrt_launch takes: nparams less the parameters
  /// attnrt derives (tensormaps)
  size_t nargs;
  /// the kernel's "comm" entry; NULL unless it is a fused communication
  /// kernel, whose last five arguments are then its symmetric workspace
  /// (ptr), the workspace's peer table (ptr), the output's peer table (ptr;
  /// 0 unless the output is a symmetric buffer), its rank and its launch
  /// number (i32), in that order: attnrt_comm_launch passes them
  const struct attnrt_kernel_comm *comm;
};

/// One program as the manifest describes it: kernels launched in order over
/// the caller's tensors and workspace buffers (see attnrt_program_launch).
/// Owned by the manifest.
struct attnrt_program_info {
  const char *name;           ///< what attnrt_program_launch is called with
  size_t ninputs;             ///< number of arguments the program takes
  const char *const *inputs;  ///< their names, in argument order (all "ptr")
  size_t nworkspace;          ///< number of workspace buffers
  /// bytes of device memory the workspace takes: the buffers' sizes, each
  /// rounded up to ATTNRT_WORKSPACE_ALIGN; 0 without workspace
  size_t workspace_bytes;
  size_t nsteps;              ///< number of kernel launches (at least 1)
};

//===-- Status and errors --===//

/// Result of every runtime action.
enum attnrt_status {
  /// The action succeeded.
  ATTNRT_OK = 0,
  /// The caller passed a NULL handle or out-pointer, a zero size, objects from
  /// different runtimes, or launch arguments that do not match the manifest.
  ATTNRT_ERR_INVALID_ARGUMENT,
  /// A named thing does not exist: a kernel absent from the manifest or the
  /// image, a device ordinal not below the device count, or an attn_nccl_
  /// function a kernel calls that the NCCL device shim lacks (or a library
  /// built without the shim).
  ATTNRT_ERR_NOT_FOUND,
  /// No usable GPU: the driver library cannot be loaded or lacks an entry
  /// point, cuInit reports no device, a stub library or an old driver, or no
  /// device is visible.
  ATTNRT_ERR_NO_DEVICE,
  /// Any other driver call failed; the message names the call and the CUresult.
  /// Also nvJitLink: it cannot be loaded, or linking failed (the message ends
  /// with its error log).
  ATTNRT_ERR_CUDA,
  /// Communication failed: a NCCL call returned an error (the message names
  /// the call and NCCL's text), NCCL reported an asynchronous error, libnccl
  /// cannot be loaded, or the rendezvous socket failed (the message names the
  /// system call and errno).
  ATTNRT_ERR_NCCL,
  /// Device memory (CUDA_ERROR_OUT_OF_MEMORY) or host memory ran out.
  ATTNRT_ERR_OUT_OF_MEMORY,
  /// A launch manifest is not valid JSON or breaks its schema; the message
  /// names the field.
  ATTNRT_ERR_PARSE,
  /// A peer did not answer in time: the rendezvous, a communicator's
  /// initialization or a collective ran past the communicator's timeout. The
  /// communicator (if any) has been aborted.
  ATTNRT_ERR_TIMEOUT,
};

/// Returns a static, generic description of status ("invalid argument");
/// "unknown status" for a value outside the enum. Never NULL.
ATTNRT_API const char *attnrt_status_string(enum attnrt_status status);

/// Returns the message of the most recent failure on rt, or with rt NULL the
/// most recent failure on this thread that had no runtime to hold it; "" when
/// there was none. Success does not clear it. The text is owned by rt (or the
/// thread) and stays valid until its next failing call.
ATTNRT_API const char *attnrt_last_error(const attnrt_runtime *rt);

//===-- Runtime --===//

/// Loads the driver library, initializes CUDA and retains the primary context
/// of device device_ordinal, storing a new runtime in *out.
/// Returns ATTNRT_ERR_NO_DEVICE when the library is missing (the message names
/// the path), cuInit fails or no device is visible; ATTNRT_ERR_NOT_FOUND when
/// the ordinal is not below the device count; *out is NULL on failure and the
/// message is in attnrt_last_error(NULL). Caller owns the result; release with
/// attnrt_runtime_destroy.
ATTNRT_API enum attnrt_status attnrt_runtime_create(int device_ordinal,
                                                    attnrt_runtime **out);

/// Releases the primary context and frees rt. NULL is a no-op.
ATTNRT_API void attnrt_runtime_destroy(attnrt_runtime *rt);

/// Writes the device name, NUL-terminated and truncated to len bytes, to buf.
/// Returns ATTNRT_ERR_INVALID_ARGUMENT for a NULL rt or buf or a zero len.
ATTNRT_API enum attnrt_status attnrt_runtime_device_name(attnrt_runtime *rt,
                                                         char *buf, size_t len);

/// Stores the device's compute capability (9 and 0 for sm_90) in *major and
/// *minor. Returns ATTNRT_ERR_INVALID_ARGUMENT for any NULL argument.
ATTNRT_API enum attnrt_status
attnrt_runtime_compute_capability(attnrt_runtime *rt, int *major, int *minor);

/// Stores the driver's CUDA version (12040 for 12.4) in *version.
/// Returns ATTNRT_ERR_INVALID_ARGUMENT for any NULL argument.
ATTNRT_API enum attnrt_status attnrt_runtime_driver_version(attnrt_runtime *rt,
                                                            int *version);

/// Stores the device's number of streaming multiprocessors (132 on an H200,
/// 114 on an H100 PCIe) in *count: what lower-tile-to-hopper's ctas option
/// takes to fill this GPU. Returns ATTNRT_ERR_INVALID_ARGUMENT for any NULL
/// argument, ATTNRT_ERR_CUDA when the driver cannot tell.
ATTNRT_API enum attnrt_status attnrt_runtime_sm_count(attnrt_runtime *rt,
                                                      int *count);

/// Blocks until all work in rt's context has finished (cuCtxSynchronize).
/// Returns ATTNRT_ERR_CUDA with the driver's message when earlier work failed,
/// ATTNRT_ERR_TIMEOUT when rt has a sync timeout and the work is still
/// running after it (below).
ATTNRT_API enum attnrt_status attnrt_runtime_synchronize(attnrt_runtime *rt);

/// Environment variable holding the default sync timeout of a new runtime,
/// in seconds (unset, empty or 0: wait as long as the work runs).
#define ATTNRT_SYNC_TIMEOUT_ENV "ATTNRT_SYNC_TIMEOUT_S"

/// Bounds attnrt_runtime_synchronize and attnrt_stream_synchronize on rt:
/// once seconds have passed with the GPU work still running they return
/// ATTNRT_ERR_TIMEOUT instead of waiting on. 0 waits as long as the work
/// runs (the default unless ATTNRT_SYNC_TIMEOUT_S is set). A kernel that
/// never ends cannot be stopped from the host: after a timeout the context
/// cannot be used again (freeing, unloading or destroying may block), and
/// the process should end, which frees the GPU. Returns
/// ATTNRT_ERR_INVALID_ARGUMENT for a NULL rt or a negative or non-finite
/// number of seconds.
ATTNRT_API enum attnrt_status
attnrt_runtime_set_sync_timeout(attnrt_runtime *rt, double seconds);

//===-- Manifest --===//

/// Parses a launch manifest, storing a new manifest in *out. The format is
///   {"version": 1, "target": "sm_90a", "format": "ptx",
///    "kernels": [{"name": "k", "grid": [4, 8, 1], "block": [128, 1, 1],
///                 "static_shared_bytes": 33024, "dynamic_shared_bytes": 0,
///                 "params": [{"name": "q", "kind": "ptr", "dtype": "f32",
///                             "shape": [1, 4, 100, 64]},
///                            {"name": "n", "kind": "i32"}]}]}
/// "version" (must be 1) and "kernels" are required, "target" and "format"
/// ("ptx" or "cubin") optional. Per kernel "name", "grid" and "block" (1 to 3
/// positive integers) and "params" are required, the shared sizes default to 0.
/// Per parameter "name" and "kind" ("ptr", "i32", "i64", "f32", "tensormap")
/// are required, "dtype" and "shape" (at most ATTNRT_MAX_RANK non-negative
/// integers) optional. Kernel names must be unique.
/// A "tensormap" parameter is a TMA descriptor attnrt encodes at launch (see
/// struct attnrt_tensormap_info and attnrt_launch), e.g.
///   {"name": "q_map", "kind": "tensormap", "tensor": "q", "dtype": "bf16",
///    "dims": [128, 8192, 32, 4], "box": [64, 128, 1, 1], "swizzle": 128}
/// "tensor" names a "ptr" parameter of the same kernel. "dtype" is one of u8,
/// i8, f8e4m3, f8e5m2 (all 1 byte), u16, i16, f16, bf16, u32, i32, f32, tf32,
/// u64, i64, f64. "dims" (positive, at most 2^32) and "box" (1 to 256) are
/// element counts, innermost first, of equal rank 1 to
/// ATTNRT_TENSORMAP_MAX_RANK. "strides" (optional, rank-1 byte strides of
/// dims 1.., multiples of 16 below 2^40) default to the contiguous layout,
/// which must then have 16-byte multiples too. "swizzle" (optional, 0) is 0,
/// 32, 64 or 128. box[0] times the element size must be a multiple of 16 and,
/// with a swizzle, at most the swizzle.
/// An optional top-level "programs" array describes calls that run several
/// kernels, e.g. one that rotates K into a workspace buffer before attention:
///   "programs": [{"name": "attn", "inputs": ["q", "k", "v", "out"],
///                 "workspace": [{"name": "k_rot", "bytes": 268435456}],
///                 "steps": [{"kernel": "attn__rope_k", "args": ["k", "k_rot"]},
///                           {"kernel": "attn",
///                            "args": ["q", "k_rot", "v", "out"]}]}]
/// Per program "name", "inputs" (names of the caller's pointer arguments, in
/// order) and "steps" (at least one) are required, "workspace" optional; its
/// "bytes" are positive integers. Program names are unique and may equal a
/// kernel name; input and workspace names of a program are unique together.
/// Each step names a kernel of the manifest and binds, in order, every
/// parameter of it that callers pass (kernel info->nargs of them) to an input
/// or workspace name; those parameters must be "ptr". A workspace buffer must
/// hold what the kernel reads through it: the product of the parameter's
/// "shape" times its "dtype" size, and the extent of every tensor map over it.
/// Returns ATTNRT_ERR_PARSE with a message naming the field
/// (attnrt_last_error(NULL)); ATTNRT_ERR_INVALID_ARGUMENT for a NULL argument.
/// Caller owns the result; release with attnrt_manifest_destroy.
ATTNRT_API enum attnrt_status attnrt_manifest_parse(const char *json,
                                                    attnrt_manifest **out);

/// Frees m and every string and array it owns. NULL is a no-op.
ATTNRT_API void attnrt_manifest_destroy(attnrt_manifest *m);

/// Returns the number of kernels in m; 0 for NULL.
ATTNRT_API int attnrt_manifest_kernel_count(const attnrt_manifest *m);

/// Returns the kernel named name, or NULL when m or name is NULL or m has no
/// such kernel. Owned by m.
ATTNRT_API const struct attnrt_kernel_info *
attnrt_manifest_kernel(const attnrt_manifest *m, const char *name);

/// Returns the index-th kernel in manifest order, or NULL when m is NULL or
/// index is out of range. Owned by m.
ATTNRT_API const struct attnrt_kernel_info *
attnrt_manifest_kernel_at(const attnrt_manifest *m, int index);

/// Returns the number of programs in m; 0 for NULL.
ATTNRT_API int attnrt_manifest_program_count(const attnrt_manifest *m);

/// Returns the program named name, or NULL when m or name is NULL or m has no
/// such program. Owned by m.
ATTNRT_API const struct attnrt_program_info *
attnrt_manifest_program(const attnrt_manifest *m, const char *name);

/// Returns the index-th program in manifest order, or NULL when m is NULL or
/// index is out of range. Owned by m.
ATTNRT_API const struct attnrt_program_info *
attnrt_manifest_program_at(const attnrt_manifest *m, int index);

/// Returns the manifest's "target" ("sm_90a"), or NULL when absent. Owned by m.
ATTNRT_API const char *attnrt_manifest_target(const attnrt_manifest *m);

/// Returns the manifest's "format" ("ptx"), or NULL when absent. Owned by m.
ATTNRT_API const char *attnrt_manifest_format(const attnrt_manifest *m);

//===-- Module --===//

/// Parses manifest_json, JIT-compiles the PTX text ptx for rt's device and
/// looks up every kernel the manifest names, storing a new module in *out.
/// len is the length of ptx, or 0 when ptx is NUL-terminated. PTX that calls
/// the NCCL device shim (attnrt_ptx_needs_nccl_shim) is first linked with it
/// by attnrt_ptx_link, for the PTX's .target, and the cubin is loaded; the
/// manifest's "format" stays "ptx". Kernels whose
/// static plus dynamic shared memory exceeds 48 KiB get
/// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES set here.
/// Returns ATTNRT_ERR_PARSE for a bad manifest, ATTNRT_ERR_INVALID_ARGUMENT
/// when its "format" is not "ptx", ATTNRT_ERR_CUDA with the JIT error log in the
/// message when compilation fails, ATTNRT_ERR_NOT_FOUND when a kernel is
/// missing from the image, and the errors of attnrt_ptx_link when the shim is
/// linked. Caller owns the result; release with attnrt_module_destroy before
/// destroying rt.
ATTNRT_API enum attnrt_status
attnrt_module_load_ptx(attnrt_runtime *rt, const char *ptx, size_t len,
                       const char *manifest_json, attnrt_module **out);

/// As attnrt_module_load_ptx for a cubin (or fatbin) image of len bytes;
/// len must not be 0 and the manifest's "format", if given, must be "cubin".
ATTNRT_API enum attnrt_status
attnrt_module_load_cubin(attnrt_runtime *rt, const void *cubin, size_t len,
                         const char *manifest_json, attnrt_module **out);

/// PTX to SASS in this process, without the driver's JIT: writes into arch
/// (cap bytes) the nvJitLink architecture for PTX whose .target is target
/// ("sm_90a") on rt's device: "sm_<major><minor>" of the device, with
/// target's "a" or "f" suffix when target names the device's own
/// architecture ("sm_90a" on a 9.0 device, "sm_90" for sm_80 PTX there).
/// Returns ATTNRT_ERR_INVALID_ARGUMENT for NULL arguments, a target not of
/// the form sm_NN[a|f], or a cap too small (16 bytes always suffice).
ATTNRT_API enum attnrt_status attnrt_runtime_sass_arch(attnrt_runtime *rt,
                                                       const char *target,
                                                       char *arch, size_t cap);

/// Compiles the PTX text ptx (len bytes, or 0 when NUL-terminated) into a
/// cubin for arch (NULL or "": attnrt_runtime_sass_arch of the PTX's .target)
/// through nvJitLink, linking the NCCL device shim when the PTX calls it, as
/// attnrt_ptx_link does; load the result with attnrt_module_load_cubin (the
/// manifest's "format" then "cubin" or absent) and free it with
/// attnrt_cubin_free. Errors are those of attnrt_ptx_link, in
/// attnrt_last_error(rt): ATTNRT_ERR_CUDA with "cannot load nvJitLink ..."
/// when no nvJitLink can be opened (see attnrt_nvjitlink_version), or with
/// nvJitLink's log when the PTX does not compile.
ATTNRT_API enum attnrt_status
attnrt_runtime_ptx_to_cubin(attnrt_runtime *rt, const char *ptx, size_t len,
                            const char *arch, void **cubin, size_t *cubin_len);

/// The version of the nvJitLink that attnrt_ptx_link and
/// attnrt_runtime_ptx_to_cubin would use (13 and 0 for CUDA 13.0), found as
/// they find it (ATTNRT_NVJITLINK_LIBRARY, then the CUDA folders). Returns
/// ATTNRT_ERR_INVALID_ARGUMENT for NULL arguments and ATTNRT_ERR_CUDA, with
/// "cannot load nvJitLink ..." in attnrt_last_error(NULL), when there is
/// none, or when it lacks nvJitLinkVersion (before CUDA 12.3): then PTX must
/// go through the driver's JIT (attnrt_module_load_ptx).
ATTNRT_API enum attnrt_status attnrt_nvjitlink_version(int *major, int *minor);

/// Unloads the image, frees the workspace of m's programs and frees m with its
/// manifest. NULL is a no-op. Work queued with m must have finished.
ATTNRT_API void attnrt_module_destroy(attnrt_module *m);

/// Returns the number of kernels in m's manifest; 0 for NULL.
ATTNRT_API int attnrt_module_kernel_count(const attnrt_module *m);

/// Returns the manifest entry of the kernel named name, or NULL when m or name
/// is NULL or there is no such kernel. Owned by m.
ATTNRT_API const struct attnrt_kernel_info *
attnrt_module_kernel(const attnrt_module *m, const char *name);

/// Returns the number of programs in m's manifest; 0 for NULL.
ATTNRT_API int attnrt_module_program_count(const attnrt_module *m);

/// Returns the manifest entry of the program named name, or NULL when m or
/// name is NULL or there is no such program. Owned by m.
ATTNRT_API const struct attnrt_program_info *
attnrt_module_program(const attnrt_module *m, const char *name);

/// Returns m's manifest, or NULL for NULL. Owned by m.
ATTNRT_API const attnrt_manifest *attnrt_module_manifest(const attnrt_module *m);

//===-- Memory --===//

/// Allocates bytes of device memory, storing its address in *out.
/// Returns ATTNRT_ERR_INVALID_ARGUMENT for a NULL rt or out or zero bytes,
/// ATTNRT_ERR_OUT_OF_MEMORY when the device is full. Caller owns the memory;
/// release with attnrt_mem_free.
ATTNRT_API enum attnrt_status attnrt_mem_alloc(attnrt_runtime *rt, size_t bytes,
                                               attnrt_devptr *out);

/// Frees memory from attnrt_mem_alloc. p == 0 is a no-op.
ATTNRT_API enum attnrt_status attnrt_mem_free(attnrt_runtime *rt,
                                              attnrt_devptr p);

/// Copies bytes from host src to device dst. With s NULL the copy runs on the
/// legacy default stream and the call returns once src may be reused. With a
/// stream it is asynchronous: keep src alive and unchanged until s is
/// synchronized. Returns
/// ATTNRT_ERR_INVALID_ARGUMENT for a NULL rt, dst or src, zero bytes, or a
/// stream of another runtime.
ATTNRT_API enum attnrt_status attnrt_memcpy_htod(attnrt_runtime *rt,
                                                 attnrt_devptr dst,
                                                 const void *src, size_t bytes,
                                                 attnrt_stream *s);

/// Copies bytes from device src to host dst. With s NULL the call returns once
/// dst holds the data; with a stream dst is valid only after s is synchronized.
/// Same argument checks as attnrt_memcpy_htod.
ATTNRT_API enum attnrt_status attnrt_memcpy_dtoh(attnrt_runtime *rt, void *dst,
                                                 attnrt_devptr src, size_t bytes,
                                                 attnrt_stream *s);

/// Sets bytes bytes at dst to value, on s or (s NULL) the legacy default
/// stream; the call may return before the memory is written, later work on
/// the same stream sees it. Same argument checks as attnrt_memcpy_htod.
ATTNRT_API enum attnrt_status attnrt_memset_d8(attnrt_runtime *rt,
                                               attnrt_devptr dst,
                                               unsigned char value,
                                               size_t bytes, attnrt_stream *s);

//===-- Streams and events --===//

/// Creates a stream in rt's context that synchronizes with the legacy default
/// stream, storing it in *out. Caller owns the result; release with
/// attnrt_stream_destroy.
ATTNRT_API enum attnrt_status attnrt_stream_create(attnrt_runtime *rt,
                                                   attnrt_stream **out);

/// Wraps cu_stream, a CUstream of rt's context owned by someone else (torch's
/// current stream); NULL stands for the legacy default stream. Destroying the
/// wrapper leaves the CUstream alone; it must outlive the wrapper. Caller owns
/// the wrapper; release with attnrt_stream_destroy.
ATTNRT_API enum attnrt_status attnrt_stream_wrap(attnrt_runtime *rt,
                                                 void *cu_stream,
                                                 attnrt_stream **out);

/// Destroys s (and its CUstream unless it was wrapped). NULL is a no-op.
ATTNRT_API void attnrt_stream_destroy(attnrt_stream *s);

/// Blocks until all work queued on s has finished. s must not be NULL; use
/// attnrt_runtime_synchronize for the whole context. Returns
/// ATTNRT_ERR_CUDA when queued work failed, ATTNRT_ERR_TIMEOUT as
/// attnrt_runtime_synchronize does.
ATTNRT_API enum attnrt_status attnrt_stream_synchronize(attnrt_stream *s);

/// Creates an event with timing enabled, storing it in *out. Caller owns the
/// result; release with attnrt_event_destroy.
ATTNRT_API enum attnrt_status attnrt_event_create(attnrt_runtime *rt,
                                                  attnrt_event **out);

/// Destroys e. NULL is a no-op.
ATTNRT_API void attnrt_event_destroy(attnrt_event *e);

/// Records e on s, or (s NULL) on the legacy default stream. Returns
/// ATTNRT_ERR_INVALID_ARGUMENT when e is NULL or s belongs to another runtime.
ATTNRT_API enum attnrt_status attnrt_event_record(attnrt_event *e,
                                                  attnrt_stream *s);

/// Stores the time between two recorded events in *ms. Returns
/// ATTNRT_ERR_INVALID_ARGUMENT for NULL arguments or events of different
/// runtimes, ATTNRT_ERR_CUDA when an event has not completed.
ATTNRT_API enum attnrt_status attnrt_event_elapsed_ms(attnrt_event *start,
                                                      attnrt_event *end,
                                                      float *ms);

//===-- Launch --===//

/// Launches the kernel named kernel of m on s (NULL: legacy default stream)
/// with the grid, block and dynamic shared memory of its manifest entry. args
/// holds one value per manifest parameter that is not derived, in order, each
/// of the kind the manifest gives: nargs is the kernel's info->nargs, which is
/// info->nparams when the kernel has no "tensormap" parameter.
/// For each "tensormap" parameter attnrt encodes a CUtensorMap with
/// cuTensorMapEncodeTiled from the argument of its "tensor" parameter and
/// passes it by value. Each module keeps the last map of every tensormap
/// parameter with the address it was made from and encodes again only when
/// that address changes (host-only work; the map depends on nothing else).
/// Returns once the launch is queued: launch errors are reported, execution
/// errors surface at the next synchronization.
/// Returns ATTNRT_ERR_NOT_FOUND for an unknown kernel and
/// ATTNRT_ERR_INVALID_ARGUMENT, naming the kernel and parameter, when nargs or
/// a kind does not match the manifest, the address of a tensormap's tensor is
/// 0 or not 16-byte aligned, or s belongs to another runtime;
/// ATTNRT_ERR_NO_DEVICE when a tensormap is needed but the driver has no
/// cuTensorMapEncodeTiled (before CUDA 12.0); ATTNRT_ERR_CUDA when the driver
/// refuses to encode a map (the message names the parameter) or to launch.
ATTNRT_API enum attnrt_status attnrt_launch(attnrt_module *m,
                                            const char *kernel,
                                            const struct attnrt_arg *args,
                                            size_t nargs, attnrt_stream *s);

//===-- Programs --===//

/// Launches program name of m: its steps in order on s (NULL: legacy default
/// stream), each with attnrt_launch semantics (grid, block and shared memory
/// of its kernel, tensor maps derived from the addresses bound to it), with
/// the caller's args bound to the program's inputs and the workspace buffers
/// to memory of the module. args holds one ATTNRT_ARG_PTR per input, in the
/// order of info->inputs. The workspace is allocated with attnrt_mem_alloc on
/// the program's first launch, zero-filled (once, on s, before the steps of
/// the first launch whose checks pass), kept, reused by later launches
/// (kernels may keep state in it from launch to launch) and freed by
/// attnrt_module_destroy; each buffer is ATTNRT_WORKSPACE_ALIGN-byte aligned.
/// (Capturing that first launch into a CUDA graph captures the zero-fill
/// too: launch the program once before capturing it.)
/// Programs are looked up first: when m has no program of that name but a
/// kernel, this launches the kernel exactly as attnrt_launch does, so callers
/// can always use this entry point.
/// Every step is checked before the first is queued; returns once all are
/// queued, execution errors surface at the next synchronization.
/// The workspace is shared by all launches of a program of one module:
/// launches of one program on different streams must be ordered by the caller
/// (one stream, or events), or they overwrite each other's workspace; use a
/// module per stream to run them concurrently.
/// Returns ATTNRT_ERR_NOT_FOUND when m has neither a program nor a kernel of
/// that name; ATTNRT_ERR_INVALID_ARGUMENT, naming the program and input, when
/// nargs is not the program's number of inputs or an argument is not a ptr,
/// and for the errors of attnrt_launch (the message names the step);
/// ATTNRT_ERR_OUT_OF_MEMORY (or ATTNRT_ERR_CUDA for another driver failure)
/// naming the program when the workspace cannot be allocated, in which case
/// nothing is queued and the next launch tries again; the other errors of
/// attnrt_launch.
ATTNRT_API enum attnrt_status
attnrt_program_launch(attnrt_module *m, const char *name,
                      const struct attnrt_arg *args, size_t nargs,
                      attnrt_stream *s);

#ifdef __cplusplus
}
#endif

// Communication (NCCL communicators, symmetric buffers, the device API and
// fused kernels, collectives) is declared in attnrt_comm.h, part of this
// header.
#include "attnrt_comm.h"

#endif // ATTNRT_H
