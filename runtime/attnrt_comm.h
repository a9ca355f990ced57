// attnrt_comm.h - the communication half of attnrt's public C API: NCCL communicators, symmetric buffers, the NCCL device API in kernels and the launch of attn's fused GEMM + collective kernels, host-launched collectives.
//
// attnrt.h includes this header, so either may be included; the handles
// (attnrt_comm, attnrt_comm_buffer) and conventions are attnrt.h's.

#ifndef ATTNRT_COMM_H
#define ATTNRT_COMM_H

#include "attnrt.h"

#ifdef __cplusplus
extern "C" {
#endif
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

#endif // ATTNRT_COMM_H
