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

/// One kernel as the manifest describes it. Owned by the manifest.
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

//===-- Linking with the NCCL device shim --===//
//
// Kernels reach peer GPUs through NCCL's device API by calling the C-ABI
// functions of attnrt's NCCL device shim (runtime/nccl/attn_nccl_device.cu,
// compiled by nvcc when attnrt is built and embedded as PTX): a kernel's PTX
// declares them as `.extern .func attn_nccl_peer_ptr(...)` and so on, and
// attnrt_module_load_ptx links the shim in with nvJitLink before loading.
// ptxas compiles a kernel with such a call with its wgmma serialized and its
// setmaxnreg ignored, so kernels with wgmma (attn's fused GEMM + collective)
// read peer addresses from attnrt_comm_buffer_peers's table instead and need
// no link.
// nvJitLink is loaded with dlopen: the file ATTNRT_NVJITLINK_LIBRARY names, or
// else libnvJitLink.so.13 from the loader's path, $CUDA_HOME/lib64,
// /usr/local/cuda/lib64 or /usr/local/cuda-13.0/lib64, then libnvJitLink.so.
// Linking needs no GPU.

/// Name of the environment variable that overrides the nvJitLink library path.
#define ATTNRT_NVJITLINK_LIBRARY_ENV "ATTNRT_NVJITLINK_LIBRARY"
/// nvJitLink library looked for first when ATTNRT_NVJITLINK_LIBRARY is unset.
#define ATTNRT_NVJITLINK_LIBRARY_DEFAULT "libnvJitLink.so.13"

/// Returns whether this libattnrt embeds the NCCL device shim (the build
/// found nvcc and NCCL 2.28's nccl_device.h).
ATTNRT_API bool attnrt_nccl_shim_available(void);

/// Returns the shim's PTX text (NUL-terminated, owned by the library) and
/// stores its length in *len (when len is not NULL); NULL and 0 when the
/// library has no shim.
ATTNRT_API const char *attnrt_nccl_shim_ptx(size_t *len);

/// Returns whether ptx (len bytes, or NUL-terminated when len is 0) declares
/// an external function named attn_nccl_*, i.e. needs the shim; false for
/// NULL. Comments are skipped.
ATTNRT_API bool attnrt_ptx_needs_nccl_shim(const char *ptx, size_t len);

/// Links ptx (len bytes, or NUL-terminated when len is 0) with nvJitLink into
/// a cubin for arch ("sm_90a"; NULL or "" takes the first entry of the PTX's
/// .target directive), adding the shim when attnrt_ptx_needs_nccl_shim says
/// so, and stores a new image in *cubin and its size in *cubin_len.
/// Returns ATTNRT_ERR_INVALID_ARGUMENT for a NULL argument, empty PTX or no
/// target; ATTNRT_ERR_NOT_FOUND naming the function when the PTX calls an
/// attn_nccl_ function the shim does not define or the library has no shim;
/// ATTNRT_ERR_CUDA when nvJitLink cannot be loaded (the message names what
/// was tried) or fails (the message names the call and nvJitLinkResult and
/// ends with nvJitLink's error log). Errors are in attnrt_last_error(NULL);
/// *cubin is NULL on failure. Caller owns the result; release with
/// attnrt_cubin_free.
ATTNRT_API enum attnrt_status attnrt_ptx_link(const char *ptx, size_t len,
                                              const char *arch, void **cubin,
                                              size_t *cubin_len);

/// Frees an image from attnrt_ptx_link. NULL is a no-op.
ATTNRT_API void attnrt_cubin_free(void *cubin);

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

//===-- Communicators --===//
//
// A communicator is one rank of a NCCL communicator, one GPU per process, set
// up the way torchrun describes a job (see attnrt_comm_config_from_env). The
// NCCL library is loaded with dlopen like libcuda: "libnccl.so.2" unless the
// environment variable ATTNRT_NCCL_LIBRARY names another file. Each
// communicator owns a runtime on device local_rank (attnrt_comm_runtime); its
// failures are recorded in that runtime (attnrt_last_error(
// attnrt_comm_runtime(c))), failures before it exists in the thread's slot.
// Nothing waits forever: every step that needs the other ranks gives up after
// the configured timeout with ATTNRT_ERR_TIMEOUT and aborts the communicator.

/// Name of the environment variable that overrides the NCCL library path.
#define ATTNRT_NCCL_LIBRARY_ENV "ATTNRT_NCCL_LIBRARY"
/// NCCL library loaded when ATTNRT_NCCL_LIBRARY is unset or empty.
#define ATTNRT_NCCL_LIBRARY_DEFAULT "libnccl.so.2"
/// Environment variable holding the communicator timeout in seconds.
#define ATTNRT_COMM_TIMEOUT_ENV "ATTN_COMM_TIMEOUT_S"
/// Timeout used when ATTN_COMM_TIMEOUT_S is unset.
#define ATTNRT_COMM_TIMEOUT_DEFAULT_S 300.0
/// Longest MASTER_ADDR accepted, in bytes.
#define ATTNRT_COMM_ADDR_MAX 255

/// Where this process sits in the job and how the ranks meet.
struct attnrt_comm_config {
  int rank;        ///< RANK: 0 to world_size - 1
  int world_size;  ///< WORLD_SIZE: number of ranks, at least 1
  int local_rank;  ///< LOCAL_RANK: the device ordinal this rank uses
  /// MASTER_ADDR: host name or address where rank 0 serves the NCCL id
  char master_addr[ATTNRT_COMM_ADDR_MAX + 1];
  int master_port; ///< MASTER_PORT: TCP port of that service, 1 to 65535
  /// ATTN_COMM_TIMEOUT_S: seconds any step waits for the other ranks (> 0)
  double timeout_s;
};

/// Element types of the collectives (NCCL's ncclDataType_t subset).
enum attnrt_comm_dtype {
  ATTNRT_COMM_I8,
  ATTNRT_COMM_U8,
  ATTNRT_COMM_I32,
  ATTNRT_COMM_U32,
  ATTNRT_COMM_I64,
  ATTNRT_COMM_U64,
  ATTNRT_COMM_F16,
  ATTNRT_COMM_F32,
  ATTNRT_COMM_F64,
  ATTNRT_COMM_BF16,
};

/// Reductions of the collectives.
enum attnrt_comm_op {
  ATTNRT_COMM_SUM,
  ATTNRT_COMM_PROD,
  ATTNRT_COMM_MAX,
  ATTNRT_COMM_MIN,
  ATTNRT_COMM_AVG,
};

/// Fills *cfg from the environment: RANK, WORLD_SIZE, LOCAL_RANK (defaults to
/// RANK when unset), MASTER_ADDR, MASTER_PORT (all required except
/// LOCAL_RANK; MASTER_* may be unset when WORLD_SIZE is 1) and
/// ATTN_COMM_TIMEOUT_S (default ATTNRT_COMM_TIMEOUT_DEFAULT_S). Returns
/// ATTNRT_ERR_INVALID_ARGUMENT with a message naming the variable when one is
/// missing, not a number, out of range, or RANK >= WORLD_SIZE; the message is
/// in attnrt_last_error(NULL).
ATTNRT_API enum attnrt_status
attnrt_comm_config_from_env(struct attnrt_comm_config *cfg);

/// Joins the communicator cfg describes: loads libnccl, creates a runtime on
/// device cfg->local_rank, exchanges the ncclUniqueId (rank 0 makes it and
/// serves it over TCP on cfg->master_port; the other ranks connect to
/// master_addr:master_port, retrying until the timeout), then initializes
/// NCCL non-blocking and polls it until ready. Every rank must call it.
/// Returns ATTNRT_ERR_INVALID_ARGUMENT for a bad cfg; ATTNRT_ERR_NCCL when
/// libnccl is missing, a NCCL call fails or the socket cannot be served;
/// ATTNRT_ERR_NOT_FOUND when local_rank is not below the device count;
/// ATTNRT_ERR_TIMEOUT when a rank does not show up in time; the errors of
/// attnrt_runtime_create. *out is NULL on failure and the message is in
/// attnrt_last_error(NULL). Caller owns the result; release with
/// attnrt_comm_destroy.
ATTNRT_API enum attnrt_status
attnrt_comm_init(const struct attnrt_comm_config *cfg, attnrt_comm **out);

/// attnrt_comm_config_from_env followed by attnrt_comm_init.
ATTNRT_API enum attnrt_status attnrt_comm_init_from_env(attnrt_comm **out);

/// Finalizes the communicator (waiting at most its timeout, aborting it when
/// that fails), destroys it and its runtime. Buffers made from it must be
/// freed first. NULL is a no-op.
ATTNRT_API void attnrt_comm_destroy(attnrt_comm *c);

/// Aborts the communicator at once: pending NCCL work is cancelled, and every
/// later call on c returns ATTNRT_ERR_NCCL. Use it when a peer is known to be
/// gone; attnrt_comm_destroy is still needed. NULL is a no-op.
ATTNRT_API void attnrt_comm_abort(attnrt_comm *c);

/// Returns this process's rank, or -1 for a NULL c.
ATTNRT_API int attnrt_comm_rank(const attnrt_comm *c);

/// Returns the number of ranks, or -1 for a NULL c.
ATTNRT_API int attnrt_comm_size(const attnrt_comm *c);

/// Returns the runtime of c's device (borrowed: owned by c), NULL for NULL.
ATTNRT_API attnrt_runtime *attnrt_comm_runtime(const attnrt_comm *c);

/// Returns the loaded NCCL's version code (22809 for 2.28.9), -1 for NULL.
ATTNRT_API int attnrt_comm_nccl_version(const attnrt_comm *c);

/// Checks c for an asynchronous NCCL error (ncclCommGetAsyncError), waiting
/// while NCCL reports an operation in progress, up to timeout_s seconds (0:
/// check once; negative: the communicator's timeout). Returns ATTNRT_OK when
/// nothing is pending, ATTNRT_ERR_NCCL naming the error, or ATTNRT_ERR_TIMEOUT
/// when it is still in progress; on either failure c is aborted.
ATTNRT_API enum attnrt_status attnrt_comm_poll(attnrt_comm *c, double timeout_s);

/// Waits until the work queued on s (NULL: the legacy default stream) has
/// finished, checking c for asynchronous NCCL errors meanwhile, at most the
/// communicator's timeout. Returns ATTNRT_ERR_NCCL (c aborted) on an async
/// error, ATTNRT_ERR_TIMEOUT (c aborted) when the stream is still busy,
/// ATTNRT_ERR_CUDA when queued work failed.
ATTNRT_API enum attnrt_status attnrt_comm_wait(attnrt_comm *c, attnrt_stream *s);

//===-- Symmetric buffers --===//

/// Allocates bytes of device memory with ncclMemAlloc, fills it with zeros
/// and registers it as a symmetric window (ncclCommWindowRegister,
/// NCCL_WIN_COLL_SYMMETRIC) on c, storing the buffer in *out. Registration
/// is collective, so when this returns every rank's buffer is zero: a
/// fused kernel's workspace (whose flags count launches from zero) needs no
/// other initialisation, and must not be cleared again while peers run. Collective: every rank calls it with the same
/// size, in the same order. Returns ATTNRT_ERR_INVALID_ARGUMENT for a NULL c
/// or out or zero bytes, ATTNRT_ERR_NCCL when the library lacks windows
/// (before NCCL 2.27) or a call fails, ATTNRT_ERR_TIMEOUT when registration
/// does not complete. Caller owns the result; release with
/// attnrt_comm_buffer_free before destroying c.
ATTNRT_API enum attnrt_status attnrt_comm_buffer_alloc(attnrt_comm *c,
                                                       size_t bytes,
                                                       attnrt_comm_buffer **out);

/// Returns the buffer's device address (0 for NULL).
ATTNRT_API attnrt_devptr attnrt_comm_buffer_ptr(const attnrt_comm_buffer *b);

/// Returns the NCCL window handle (an ncclWindow_t) of the buffer, for
/// kernels that use NCCL's device API; NULL for NULL.
ATTNRT_API void *attnrt_comm_buffer_window(const attnrt_comm_buffer *b);

/// Deregisters the window (collective, like the allocation) and frees the
/// memory. Returns ATTNRT_ERR_NCCL when a call fails (the memory is freed
/// regardless). NULL is a no-op returning ATTNRT_OK.
ATTNRT_API enum attnrt_status attnrt_comm_buffer_free(attnrt_comm_buffer *b);

//===-- Device communicators (NCCL's device API in kernels) --===//

/// Creates a device communicator on c for kernels that call the NCCL device
/// shim (see "Linking with the NCCL device shim"): ncclDevCommCreate, with
/// lsa_barriers barriers across the LSA team (the ranks c reaches by
/// load/store, over NVLink) for attn_nccl_lsa_barrier_*, copied to device
/// memory whose address is stored in *dev_comm; kernels take it as their
/// dev_comm argument. Collective: every rank calls it with the same count, in
/// the same order as its other collective calls. Needs NCCL 2.28 (the device
/// ABI the shim is built for). Returns ATTNRT_ERR_INVALID_ARGUMENT for a NULL
/// c or dev_comm or a negative count; ATTNRT_ERR_NCCL when libnccl is not
/// 2.28 or lacks the device API, or a NCCL call fails (NCCL refuses
/// communicators without symmetric memory support);
/// ATTNRT_ERR_TIMEOUT when creation does not complete; ATTNRT_ERR_OUT_OF_MEMORY
/// or ATTNRT_ERR_CUDA when the device copy cannot be made. *dev_comm is 0 on
/// failure. Caller owns the result; release with attnrt_comm_dev_destroy
/// before destroying c.
ATTNRT_API enum attnrt_status attnrt_comm_dev_create(attnrt_comm *c,
                                                     int lsa_barriers,
                                                     attnrt_devptr *dev_comm);

/// Releases a device communicator of c (ncclDevCommDestroy, collective like
/// the creation) and its device memory. Kernels using it must have finished.
/// Returns ATTNRT_ERR_INVALID_ARGUMENT for a NULL c or an address that is not
/// a live device communicator of c; ATTNRT_ERR_NCCL when NCCL fails (the
/// memory is freed regardless). dev_comm 0 is a no-op returning ATTNRT_OK.
ATTNRT_API enum attnrt_status attnrt_comm_dev_destroy(attnrt_comm *c,
                                                      attnrt_devptr dev_comm);

/// Stores in *peers the device address of b's peer table: attnrt_comm_size
/// entries of uint64_t, entry p the address at which this GPU reaches byte 0
/// of rank p's copy of b by load and store (what attn_nccl_peer_ptr answers),
/// and entry rank b's own address (attnrt_comm_buffer_ptr). attn's fused
/// GEMM + collective kernels take it as their `peers` argument (for their
/// workspace) instead of calling the NCCL device shim, which would make
/// ptxas serialize their wgmma. The first call per buffer makes the table: it
/// loads the shim as a module of c's runtime (once per communicator; no
/// nvJitLink), runs its attn_nccl_peer_table kernel with dev_comm (a device
/// communicator of c from attnrt_comm_dev_create) and b's window on the
/// legacy default stream and waits for it; later calls return the same
/// address at once. Not collective. Returns ATTNRT_ERR_INVALID_ARGUMENT for a
/// NULL b or peers, or a dev_comm that is not a live device communicator of
/// b's communicator; ATTNRT_ERR_NOT_FOUND when the library has no NCCL
/// device shim; ATTNRT_ERR_NCCL when the communicator was aborted or some
/// rank's copy is not reachable by load/store (outside this rank's NCCL LSA
/// team, e.g. on another node: the message names the ranks); the driver's
/// status (ATTNRT_ERR_CUDA, ATTNRT_ERR_OUT_OF_MEMORY, ...) when loading,
/// allocating, launching or reading back fails. *peers is 0 on failure. The
/// table belongs to b and is freed by attnrt_comm_buffer_free; dev_comm may
/// be destroyed once this returns.
ATTNRT_API enum attnrt_status attnrt_comm_buffer_peers(attnrt_comm_buffer *b,
                                                       attnrt_devptr dev_comm,
                                                       attnrt_devptr *peers);

/// Launches the fused communication kernel `name` of m (a kernel whose
/// manifest entry has "comm": attn's GEMM + all-reduce, all-gather or
/// reduce-scatter) on s (NULL: legacy default stream) with the caller's
/// nargs arguments (its a, b, c) followed by what attnrt keeps: workspace's
/// address, its peer table (attnrt_comm_buffer_peers, made with dev_comm on
/// the first launch on this workspace; dev_comm may be 0 afterwards), 0 for
/// the output's peer table (see attnrt_comm_launch_out), the
/// communicator's rank and the workspace's launch number (1, 2, ...; the
/// kernel's flags count against it, so the zero-filled workspace is never
/// cleared). Every rank must make the same launches on its copy of the
/// workspace, in the same order; a workspace serves one kernel (its flags
/// are laid out for it). m must be loaded on the communicator's runtime
/// (attnrt_comm_runtime). Returns ATTNRT_ERR_NOT_FOUND when m has no kernel
/// of that name; ATTNRT_ERR_INVALID_ARGUMENT for a NULL m, name or
/// workspace, a kernel without a "comm" entry, one compiled for another
/// number of ranks than the workspace's communicator has, a workspace
/// smaller than the kernel's comm.workspace_bytes or one that served
/// another kernel (or another build of it: same name, other comm entry),
/// a module of another runtime, or nargs other than the kernel's arguments
/// less those five; the errors of
/// attnrt_comm_buffer_peers and attnrt_launch. The launch number advances
/// only when the launch was queued.
ATTNRT_API enum attnrt_status
attnrt_comm_launch(attnrt_module *m, const char *name,
                   attnrt_comm_buffer *workspace, attnrt_devptr dev_comm,
                   const struct attnrt_arg *args, size_t nargs,
                   attnrt_stream *s);

/// attnrt_comm_launch for an output in a symmetric buffer: out is this
/// rank's copy of a collective allocation (attnrt_comm_buffer_alloc on the
/// workspace's communicator) and the caller's argument c is its address.
/// The kernel gets out's peer table (attnrt_comm_buffer_peers, made with
/// dev_comm on the first launch with this out), and a fused all-reduce then
/// writes each tile's sum straight into every rank's c over NVLink, where
/// attnrt_comm_launch has it write the sum into each rank's workspace for
/// that rank to copy into c; the other patterns ignore out. Every rank
/// must make the same launch, all with out (each its copy of the same
/// allocation) or all without: a rank that waits for sums its peers write
/// elsewhere fails its launch after the kernel's 10 s timeout. A workspace
/// may serve launches of both kinds in turn. Returns
/// ATTNRT_ERR_INVALID_ARGUMENT for a NULL out, an out of another
/// communicator, out being the workspace, a c argument that is not out's
/// address, an out smaller than c (the manifest's shape and dtype of c) or
/// a kernel without such a c; else as attnrt_comm_launch.
ATTNRT_API enum attnrt_status
attnrt_comm_launch_out(attnrt_module *m, const char *name,
                       attnrt_comm_buffer *workspace, attnrt_comm_buffer *out,
                       attnrt_devptr dev_comm, const struct attnrt_arg *args,
                       size_t nargs, attnrt_stream *s);

//===-- Collectives (host-launched NCCL) --===//

/// Queues ncclAllReduce of count elements from send into recv (equal is in
/// place) on s (NULL: legacy default stream). Returns once queued; use
/// attnrt_comm_wait to finish. Returns ATTNRT_ERR_INVALID_ARGUMENT for a NULL
/// c, a 0 address, a zero count, a dtype or op outside its enum, or a stream
/// of another runtime; ATTNRT_ERR_NCCL naming the call when NCCL refuses.
ATTNRT_API enum attnrt_status
attnrt_comm_all_reduce(attnrt_comm *c, attnrt_devptr send, attnrt_devptr recv,
                       size_t count, enum attnrt_comm_dtype dtype,
                       enum attnrt_comm_op op, attnrt_stream *s);

/// Queues ncclAllGather: send_count elements from each rank land in recv at
/// offset rank * send_count. Same checks as attnrt_comm_all_reduce.
ATTNRT_API enum attnrt_status
attnrt_comm_all_gather(attnrt_comm *c, attnrt_devptr send, attnrt_devptr recv,
                       size_t send_count, enum attnrt_comm_dtype dtype,
                       attnrt_stream *s);

/// Queues ncclReduceScatter: send holds size * recv_count elements; rank r
/// receives the reduction of block r. Same checks as attnrt_comm_all_reduce.
ATTNRT_API enum attnrt_status
attnrt_comm_reduce_scatter(attnrt_comm *c, attnrt_devptr send,
                           attnrt_devptr recv, size_t recv_count,
                           enum attnrt_comm_dtype dtype, enum attnrt_comm_op op,
                           attnrt_stream *s);

#ifdef __cplusplus
}
#endif

#endif // ATTNRT_H
