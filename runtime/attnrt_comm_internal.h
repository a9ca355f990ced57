// attnrt_comm_internal.h - private declarations shared by attnrt_comm.c, attnrt_comm_device.c and attnrt_rendezvous.c; never included from outside runtime/.

#ifndef ATTNRT_COMM_INTERNAL_H
#define ATTNRT_COMM_INTERNAL_H

#include "attnrt_internal.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

//===-- The ncclUniqueId --===//

// The NCCL ABI attnrt uses, declared here rather than taken from nccl.h,
// which machines without the NCCL development files lack; when the build
// finds nccl.h (ATTNRT_HAVE_NCCL_H) attnrt_comm.c's static assertions check
// these against it. Enums are passed as int, which is their ABI.
#define NCCL_ID_BYTES 128
typedef struct {
  char internal[NCCL_ID_BYTES];
} nccl_unique_id;

typedef int nccl_result;
enum {
  NCCL_SUCCESS = 0,
  NCCL_INVALID_ARGUMENT = 4,
  NCCL_IN_PROGRESS = 7,
};
typedef struct nccl_comm_opaque *nccl_comm;

// ncclConfig_t as of NCCL 2.28 (ncclConfig_v22800). Older libraries get the
// prefix they know (up to net_name, the NCCL 2.14 layout) with that version.
#define NCCL_CONFIG_MAGIC 0xcafebeefu
#define NCCL_CONFIG_UNDEF INT_MIN
struct nccl_config {
  size_t size;
  unsigned magic;
  unsigned version;
  int blocking;
  int cga_cluster_size, min_ctas, max_ctas;
  const char *net_name;
  int split_share, traffic_class;
  const char *comm_name;
  int collnet_enable, cta_policy, shrink_share, nvls_ctas;
  int channels_per_net_peer, nvlink_centric_sched;
};
#define NCCL_WIN_COLL_SYMMETRIC 0x01

// The device API's host side (nccl_device/core.h, C++ only as a header, C
// callable as a library). ncclTeam is three ints in NCCL 2.28; the
// requirement structs grew between 2.28.3 and 2.28.9 but keep their first
// fields, so attnrt hands NCCL zeroed buffers larger than either and sets
// only the resource list (runtime/nccl/attn_nccl_device.cu checks these
// assumptions when it is built).
struct nccl_team {
  int n_ranks, rank, stride;
};
#define NCCL_REQUIREMENTS_BYTES 256

/// NCCL_VERSION(x, y, z) of nccl.h: the code scheme changed after 2.8.
static inline int nccl_version_code(int major, int minor, int patch) {
  return (major <= 2 && minor <= 8) ? major * 1000 + minor * 100 + patch
                                    : major * 10000 + minor * 100 + patch;
}

/// Entry points of libnccl; optional ones (marked) are NULL when missing.
struct nccl_api {
  nccl_result (*GetVersion)(int *);
  const char *(*GetErrorString)(nccl_result);
  const char *(*GetLastError)(nccl_comm); // optional (2.13)
  nccl_result (*GetUniqueId)(nccl_unique_id *);
  nccl_result (*CommInitRank)(nccl_comm *, int, nccl_unique_id, int);
  nccl_result (*CommInitRankConfig)(nccl_comm *, int, nccl_unique_id, int,
                                    struct nccl_config *); // optional (2.14)
  nccl_result (*CommGetAsyncError)(nccl_comm, nccl_result *);
  nccl_result (*CommAbort)(nccl_comm);
  nccl_result (*CommFinalize)(nccl_comm); // optional (2.14)
  nccl_result (*CommDestroy)(nccl_comm);
  nccl_result (*MemAlloc)(void **, size_t);                        // optional (2.19)
  nccl_result (*MemFree)(void *);                                  // optional (2.19)
  nccl_result (*CommWindowRegister)(nccl_comm, void *, size_t, void **, int); // optional (2.27)
  nccl_result (*CommWindowDeregister)(nccl_comm, void *);         // optional (2.27)
  nccl_result (*AllReduce)(const void *, void *, size_t, int, int, nccl_comm,
                           CUstream);
  nccl_result (*AllGather)(const void *, void *, size_t, int, nccl_comm, CUstream);
  nccl_result (*ReduceScatter)(const void *, void *, size_t, int, int, nccl_comm,
                               CUstream);
  nccl_result (*DevCommCreate)(nccl_comm, const void *, void *); // optional (2.28)
  nccl_result (*DevCommDestroy)(nccl_comm, const void *);        // optional (2.28)
  struct nccl_team (*TeamLsa)(nccl_comm);                        // optional (2.28)
  nccl_result (*LsaBarrierCreateRequirement)(struct nccl_team, int, void *,
                                             void *); // optional (2.28)
};

//===-- Objects (attnrt_comm.c) --===//

struct attnrt_comm {
  attnrt_runtime *rt; // owned; NULL while init has not created it
  void *library;      // dlopen handle of libnccl
  struct nccl_api nccl;
  int version;        // ncclGetVersion
  nccl_comm comm;     // NULL before init and after an abort
  int rank, size;
  double timeout_s;
  bool aborted;
  int live_buffers;
  struct dev_comm *dev_comms; // attnrt_comm_dev_create's, newest first
  // The NCCL device shim loaded on its own (for attn_nccl_peer_table); NULL
  // until the first attnrt_comm_buffer_peers.
  CUmodule shim;
  CUfunction peer_table;
};

/// A device communicator: the host copy NCCL wrote and ncclDevCommDestroy
/// reads back, and its device copy.
struct dev_comm {
  struct dev_comm *next;
  attnrt_devptr device; // 0 until copied
  // attnrt's barrier handle at 0, the ncclDevComm at
  // ATTNRT_DEV_COMM_NCCL_OFFSET (attnrt_internal.h). NCCL writes the handle's
  // buffer and the ncclDevComm when creation completes, possibly later than
  // ncclDevCommCreate returns, so both live here.
  _Alignas(64) unsigned char blob[ATTNRT_DEV_COMM_BYTES];
};

struct attnrt_comm_buffer {
  attnrt_comm *c;
  void *ptr;
  size_t bytes;
  void *window;
  attnrt_devptr peers; // attnrt_comm_buffer_peers's table; 0 until made
  // attnrt_comm_launch: launches queued on this workspace, and the kernel
  // they ran, whose flags it holds: its name and its comm entry (kernel and
  // the entry's strings malloc'd; kernel NULL before the first launch).
  int32_t launches;
  char *kernel;
  struct attnrt_kernel_comm served;
};

//===-- Shared by attnrt_comm.c and attnrt_comm_device.c --===//

/// Records "<what> failed: <ncclGetErrorString> (<ncclGetLastError>)" in c's
/// error slot and returns ATTNRT_ERR_NCCL.
enum attnrt_status attnrt_comm_fail_nccl(attnrt_comm *c, nccl_result res,
                                         const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/// Fails unless c can take NCCL calls; caller names the API function.
enum attnrt_status attnrt_comm_check_usable(attnrt_comm *c, const char *caller);

/// Handles the result of a NCCL call on c's non-blocking communicator: an
/// error, or ncclInProgress and any work left in progress waited for with the
/// communicator's timeout (see attnrt_comm.c).
enum attnrt_status attnrt_comm_finish_call(attnrt_comm *c, nccl_result res,
                                           const char *what);

/// attnrt_comm_destroy's part of attnrt_comm_device.c: frees the device
/// communicators attnrt_comm_dev_destroy was not called for, and unloads the
/// NCCL shim module of attnrt_comm_buffer_peers.
void attnrt_comm_free_dev_comms(attnrt_comm *c);
void attnrt_comm_unload_shim(attnrt_comm *c);

//===-- Configuration and rendezvous (attnrt_rendezvous.c) --===//

/// Checks a configuration; caller names the API function. Errors go to the
/// thread slot.
enum attnrt_status attnrt_comm_check_config(const struct attnrt_comm_config *cfg,
                                            const char *caller);

/// Rank 0: serves id to the other cfg->world_size - 1 ranks before the
/// deadline (a now_s() time). Errors go to rt (the thread slot when NULL).
enum attnrt_status attnrt_comm_serve_id(attnrt_runtime *rt,
                                        const struct attnrt_comm_config *cfg,
                                        const nccl_unique_id *id,
                                        double deadline);

/// Ranks other than 0: fetches the id from rank 0, retrying the connection
/// until the deadline (a now_s() time). Errors go to rt.
enum attnrt_status attnrt_comm_fetch_id(attnrt_runtime *rt,
                                        const struct attnrt_comm_config *cfg,
                                        nccl_unique_id *id, double deadline);

#ifdef __cplusplus
}
#endif

#endif // ATTNRT_COMM_INTERNAL_H
