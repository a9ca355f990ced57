// attn_nccl_device.cu - C-ABI device functions over NCCL's C++-only device API, linked into generated kernels by nvJitLink.
//
// The build compiles this file with nvcc to relocatable PTX for sm_90
// (`nvcc -arch=compute_90 -rdc=true -ptx`) and embeds the text in libattnrt;
// attnrt_module_load_ptx links it into any PTX that declares an
// `.extern .func attn_nccl_*` (see attnrt_ptx_link). A kernel written in MLIR
// declares the functions it calls inside its gpu.module, e.g.
//   llvm.func @attn_nccl_peer_ptr(!llvm.ptr, !llvm.ptr, i64, i32) -> !llvm.ptr
// and receives `dev_comm` (from attnrt_comm_dev_create) and each `window`
// (attnrt_comm_buffer_window) as pointer arguments.
//
// dev_comm points to attnrt's device communicator, laid out as
//   bytes [0, 8)                       the ncclLsaBarrierHandle of attnrt's
//                                      LSA barriers (bufHandle, nBarriers)
//   bytes [8, 64)                      zero
//   bytes [64, 64 + DEV_COMM_CAPACITY) the ncclDevComm from ncclDevCommCreate
// (attnrt_internal.h repeats these constants). Only fields that NCCL 2.28.3
// to 2.28.9 place alike are read: rank, nRanks, lsaRank, lsaSize and the
// head of resourceWindow_inlined; of a window, lsaFlatBase, lsaRank,
// worldRank and stride4G. That is why the barrier handle is attnrt's own
// (ncclDevComm::lsaBarrier moved in 2.28.7) and why attnrt_comm_dev_create
// accepts NCCL 2.28 only.
//
// Functions (all `extern "C" __device__`; int is .b32, pointers and
// unsigned long long are .b64 in PTX):
//
//   void *attn_nccl_peer_ptr(const void *dev_comm, void *window,
//                            unsigned long long offset, int peer)
//     Address at which this GPU reaches byte `offset` of world rank peer's
//     copy of the symmetric buffer `window` (ncclGetPeerPointer). peer may be
//     this rank: NCCL's own mapping of the local buffer, which on two H200s
//     is not the address ncclMemAlloc returned (attn's fused kernels use
//     their argument for this rank). NULL when peer is not in this rank's
//     LSA team (the GPUs it reaches by load/store, over NVLink) or window is
//     NULL; offset is not checked against the buffer's size. Pure: a kernel
//     can compute a peer's base once and add offsets itself.
//   int attn_nccl_rank(const void *dev_comm), attn_nccl_size(...)
//     This rank and the number of ranks in the communicator.
//   int attn_nccl_lsa_rank(const void *dev_comm), attn_nccl_lsa_size(...)
//     This rank's index in its LSA team and the team's size; the team is
//     the world ranks rank - lsa_rank to rank - lsa_rank + lsa_size - 1.
//   void attn_nccl_lsa_barrier_arrive(const void *dev_comm, unsigned index)
//   void attn_nccl_lsa_barrier_wait(const void *dev_comm, unsigned index)
//   void attn_nccl_lsa_barrier_sync(const void *dev_comm, unsigned index)
//     Barrier number index across the LSA team (ncclLsaBarrierSession over
//     the whole CTA). arrive tells every peer that this CTA got here, with
//     release order: memory written before it (here or to peers) is visible
//     to a peer once its wait returns; wait returns when every peer has
//     arrived as often as this CTA waited, with acquire order; sync is
//     arrive then wait. Every thread of the CTA calls them (they contain
//     __syncthreads). Each CTA that uses barriers concurrently uses its own
//     index (blockIdx.x, say), below the count given to
//     attnrt_comm_dev_create; the same index on every rank pairs up. An
//     index out of range traps (the launch fails). The state persists
//     between launches, so kernels must keep arrive and wait balanced per
//     index on all ranks.
//
// One kernel, which attnrt launches itself (attnrt_comm_buffer_peers) from
// the shim loaded as a module of its own, with no link step:
//
//   __global__ void attn_nccl_peer_table(const void *dev_comm, void *window,
//                                        unsigned long long local,
//                                        unsigned long long *table, int nranks)
//     table[p] = attn_nccl_peer_ptr(dev_comm, window, 0, p) for every world
//     rank p < nranks, except table[rank] = local (the address ncclMemAlloc
//     returned, which is what the kernels use for this rank); 0 for a rank
//     outside the LSA team. Any grid and block shape. Kernels that read the
//     table instead of calling attn_nccl_peer_ptr have no extern call, so
//     ptxas neither serializes their wgmma nor ignores their setmaxnreg
//     (C7509, C7504), which it does for a kernel with any extern call.

#include <nccl.h>
#include <nccl_device.h>

#include <stddef.h>
#include <stdint.h>

#define DEV_COMM_NCCL_OFFSET 64
#define DEV_COMM_CAPACITY 1024

#if NCCL_VERSION_CODE < 22800 || NCCL_VERSION_CODE >= 22900
#error "the NCCL device shim follows the NCCL 2.28 device ABI"
#endif

// nvcc's view of the layout, checked here so a header with a larger
// ncclDevComm fails the build rather than overrunning attnrt's copy.
static_assert(sizeof(ncclDevComm) <= DEV_COMM_CAPACITY, "ncclDevComm outgrew attnrt's copy");
static_assert(alignof(ncclDevComm) <= DEV_COMM_NCCL_OFFSET, "ncclDevComm alignment");
static_assert(sizeof(ncclLsaBarrierHandle) == 8 && offsetof(ncclLsaBarrierHandle, nBarriers) == 4,
              "ncclLsaBarrierHandle");
// What attnrt_comm.c, which cannot include these C++ headers, assumes.
static_assert(offsetof(ncclDevCommRequirements, resourceRequirementsList) == 0,
              "ncclDevCommRequirements starts with the resource list");
static_assert(sizeof(ncclDevCommRequirements) <= 256 && sizeof(ncclDevResourceRequirements) <= 256,
              "attnrt_comm.c gives NCCL 256 bytes for each requirement");
static_assert(sizeof(ncclTeam) == 3 * sizeof(int), "ncclTeam is three ints");

namespace {

struct DevComm {
  ncclLsaBarrierHandle barrier;
  unsigned char reserved[DEV_COMM_NCCL_OFFSET - sizeof(ncclLsaBarrierHandle)];
  ncclDevComm nccl;
};
static_assert(offsetof(DevComm, nccl) == DEV_COMM_NCCL_OFFSET, "DevComm layout");

__device__ __forceinline__ const DevComm &dev_comm_of(const void *p) {
  return *static_cast<const DevComm *>(p);
}

// The whole CTA as a NCCL cooperative group, for any block shape (NCCL's
// ncclCoopCta counts threadIdx.x only).
struct Cta {
  __device__ __forceinline__ int thread_rank() const {
    return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
  }
  __device__ __forceinline__ int size() const {
    return (int)(blockDim.x * blockDim.y * blockDim.z);
  }
  __device__ __forceinline__ void sync() { __syncthreads(); }
};

enum BarrierStep { ARRIVE = 1, WAIT = 2 };

// One barrier session over the LSA team; the session reads the epoch of
// barrier index from NCCL's resource buffer and writes it back when it ends,
// so arrive and wait may be separate calls.
__device__ __forceinline__ void lsa_barrier(const void *p, unsigned index, int steps) {
  const DevComm &d = dev_comm_of(p);
  ncclLsaBarrierHandle handle = d.barrier;
  if (handle.nBarriers <= 0 || index >= (unsigned)handle.nBarriers)
    __trap();
  Cta cta;
  ncclLsaBarrierSession<Cta> bar(cta, d.nccl, ncclTeamLsa(d.nccl), handle, index);
  if (steps == (ARRIVE | WAIT))
    bar.sync(cta, cuda::memory_order_acq_rel);
  else if (steps == ARRIVE)
    bar.arrive(cta, cuda::memory_order_release);
  else
    bar.wait(cta, cuda::memory_order_acquire);
}

} // namespace

extern "C" __device__ void *attn_nccl_peer_ptr(const void *dev_comm, void *window,
                                               unsigned long long offset, int peer) {
  const ncclDevComm &c = dev_comm_of(dev_comm).nccl;
  int lsa_peer = c.lsaRank + (peer - c.rank);
  if (lsa_peer < 0 || lsa_peer >= c.lsaSize || window == nullptr)
    return nullptr;
  return ncclGetPeerPointer(static_cast<ncclWindow_t>(window), (size_t)offset, peer);
}

extern "C" __device__ int attn_nccl_rank(const void *dev_comm) {
  return dev_comm_of(dev_comm).nccl.rank;
}

extern "C" __device__ int attn_nccl_size(const void *dev_comm) {
  return dev_comm_of(dev_comm).nccl.nRanks;
}

extern "C" __device__ int attn_nccl_lsa_rank(const void *dev_comm) {
  return dev_comm_of(dev_comm).nccl.lsaRank;
}

extern "C" __device__ int attn_nccl_lsa_size(const void *dev_comm) {
  return dev_comm_of(dev_comm).nccl.lsaSize;
}

extern "C" __device__ void attn_nccl_lsa_barrier_arrive(const void *dev_comm,
                                                        unsigned index) {
  lsa_barrier(dev_comm, index, ARRIVE);
}

extern "C" __device__ void attn_nccl_lsa_barrier_wait(const void *dev_comm,
                                                      unsigned index) {
  lsa_barrier(dev_comm, index, WAIT);
}

extern "C" __device__ void attn_nccl_lsa_barrier_sync(const void *dev_comm,
                                                      unsigned index) {
  lsa_barrier(dev_comm, index, ARRIVE | WAIT);
}

extern "C" __global__ void attn_nccl_peer_table(const void *dev_comm, void *window,
                                                unsigned long long local,
                                                unsigned long long *table, int nranks) {
  int rank = dev_comm_of(dev_comm).nccl.rank;
  int threads = (int)(blockDim.x * gridDim.x);
  for (int p = (int)(blockIdx.x * blockDim.x + threadIdx.x); p < nranks; p += threads)
    table[p] = p == rank ? local
                         : (unsigned long long)(uintptr_t)attn_nccl_peer_ptr(dev_comm, window,
                                                                             0, p);
}
