// mock_nccl.h - query interface of the mock libnccl (libattnrt_mock_nccl.so) that drives the communicator tests.
//
// The mock exports the NCCL entry points attnrt resolves, with NCCL's ABI
// (enums as int), and is steered by environment variables read at every call:
//   MOCK_NCCL_FAIL=ncclCommInitRankConfig  listed entry points fail
//   MOCK_NCCL_FAIL_CODE=6                   the ncclResult_t they return (default 3)
//   MOCK_NCCL_VERSION=22600                 what ncclGetVersion reports (default 22809)
//   MOCK_NCCL_PENDING=3                     init, finalize and window registration
//                                           return ncclInProgress and
//                                           ncclCommGetAsyncError reports it this
//                                           many times before ncclSuccess
//   MOCK_NCCL_ASYNC=6                       ncclCommGetAsyncError's asyncError once
//                                           nothing is pending (7 keeps it in
//                                           progress forever: a hang)
//   MOCK_NCCL_LSA_SIZE=1                    LSA teams of this many consecutive
//                                           ranks (default: all of them)
// ncclCommDestroy releases the communicator even when told to fail; a
// communicator destroyed or aborted takes its registered windows along.
// ncclDevCommCreate (pending like init) writes rank, nRanks, lsaRank (rank
// mod the LSA size) and lsaSize at the head of the ncclDevComm, assigns buffer
// handles 1, 2, ... to the resource requirements it is given, and counts
// live device communicators; ncclTeamLsa is the whole communicator (whatever
// MOCK_NCCL_LSA_SIZE says).
// ncclGetUniqueId writes "mock-nccl-id <pid> <n>" into the id; the collectives
// record their arguments and, for one rank, copy send to recv.

#ifndef ATTNRT_MOCK_NCCL_H
#define ATTNRT_MOCK_NCCL_H

#include <stddef.h>

/// One collective call as the mock received it.
struct mock_nccl_collective {
  char name[32]; // "ncclAllReduce"
  const void *send;
  void *recv;
  size_t count;
  int dtype, op; // op is -1 for ncclAllGather
  void *stream;
};

/// Counters and records of the mock; reset by mock_nccl_reset.
struct mock_nccl_state {
  int init_calls;       // ncclCommInitRank and ncclCommInitRankConfig
  int init_blocking;    // the config's blocking field; -1 for ncclCommInitRank
  unsigned init_config_version; // the config's version field
  size_t init_config_size;      // the config's size field
  int init_nranks, init_rank;
  char init_id[128];    // the id the last init received
  int abort_calls, finalize_calls, destroy_calls;
  int live_comms, live_memory, live_windows;
  int async_polls;      // ncclCommGetAsyncError calls
  int collectives;
  struct mock_nccl_collective last;
  int dev_comm_creates, live_dev_comms;
  int dev_comm_resources;      // resource requirements the last create got
  size_t dev_comm_resource_bytes; // their buffer sizes summed
};

/// Returns the mock's state. Owned by the mock.
const struct mock_nccl_state *mock_nccl_state(void);

/// Zeroes the counters and records (live objects must have been released).
void mock_nccl_reset(void);

#endif // ATTNRT_MOCK_NCCL_H
