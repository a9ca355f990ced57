// mock_nccl.c - a mock libnccl over host memory, steered by MOCK_NCCL_* environment variables (see mock_nccl.h).

#include "mock_nccl.h"
#include "mock_env.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { SUCCESS = 0, INTERNAL_ERROR = 3, INVALID_ARGUMENT = 4, INVALID_USAGE = 5,
       IN_PROGRESS = 7 };

typedef struct {
  char internal[128];
} mock_id;

struct mock_config { // the prefix of ncclConfig_t every version shares
  size_t size;
  unsigned magic, version;
  int blocking;
};

struct window {
  void *buf;
  struct window *next; // the communicator's other windows
};

struct comm {
  int nranks, rank;
  int pending; // ncclCommGetAsyncError answers in progress this many more times
  bool finalized;
  struct window *windows; // registered and not deregistered
};

static struct mock_nccl_state state;
static int ids_made;

const struct mock_nccl_state *mock_nccl_state(void) { return &state; }

void mock_nccl_reset(void) {
  memset(&state, 0, sizeof state);
}

/// True when MOCK_NCCL_FAIL lists name; *code is then the value to return.
static bool should_fail(const char *name, int *code) {
  if (!mock_env_lists("MOCK_NCCL_FAIL", name))
    return false;
  *code = mock_env_int("MOCK_NCCL_FAIL_CODE", INTERNAL_ERROR);
  return true;
}

#define MOCK_ENTER(name)                                                       \
  do {                                                                         \
    int injected_;                                                             \
    if (should_fail(name, &injected_))                                         \
      return injected_;                                                        \
  } while (0)

/// Starts a non-blocking operation on c: in progress when MOCK_NCCL_PENDING > 0.
static int start_pending(struct comm *c) {
  c->pending = mock_env_int("MOCK_NCCL_PENDING", 0);
  return c->pending > 0 ? IN_PROGRESS : SUCCESS;
}

int ncclGetVersion(int *version) {
  MOCK_ENTER("ncclGetVersion");
  *version = mock_env_int("MOCK_NCCL_VERSION", 22809);
  return SUCCESS;
}

const char *ncclGetErrorString(int result) {
  switch (result) {
  case 0: return "no error";
  case 1: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case 2: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case 3: return "internal error - please report this issue to the NCCL developers";
  case 4: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case 5: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case 6: return "remote process exited or there was a network error";
  case 7: return "NCCL operation in progress";
  }
  return "unknown result code";
}

const char *ncclGetLastError(void *comm) {
  (void)comm;
  return "mock: last error";
}

int ncclGetUniqueId(mock_id *id) {
  MOCK_ENTER("ncclGetUniqueId");
  memset(id, 0, sizeof *id);
  snprintf(id->internal, sizeof id->internal, "mock-nccl-id %ld %d",
           (long)getpid(), ++ids_made);
  return SUCCESS;
}

static int init(struct comm **out, int nranks, mock_id id, int rank, int blocking) {
  ++state.init_calls;
  state.init_blocking = blocking;
  state.init_nranks = nranks;
  state.init_rank = rank;
  memcpy(state.init_id, id.internal, sizeof state.init_id);
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return INVALID_ARGUMENT;
  struct comm *c = calloc(1, sizeof *c);
  c->nranks = nranks;
  c->rank = rank;
  *out = c;
  ++state.live_comms;
  return blocking == 0 ? start_pending(c) : SUCCESS;
}

int ncclCommInitRank(struct comm **out, int nranks, mock_id id, int rank) {
  *out = NULL;
  MOCK_ENTER("ncclCommInitRank");
  return init(out, nranks, id, rank, -1);
}

int ncclCommInitRankConfig(struct comm **out, int nranks, mock_id id, int rank,
                           struct mock_config *config) {
  *out = NULL;
  MOCK_ENTER("ncclCommInitRankConfig");
  if (!config || config->magic != 0xcafebeefu)
    return INVALID_ARGUMENT;
  state.init_config_version = config->version;
  state.init_config_size = config->size;
  return init(out, nranks, id, rank, config->blocking);
}

int ncclCommGetAsyncError(struct comm *c, int *async) {
  MOCK_ENTER("ncclCommGetAsyncError");
  if (!c)
    return INVALID_ARGUMENT;
  ++state.async_polls;
  if (c->pending > 0) {
    --c->pending;
    *async = IN_PROGRESS;
  } else {
    *async = mock_env_int("MOCK_NCCL_ASYNC", SUCCESS);
  }
  return SUCCESS;
}

/// Frees c and, as NCCL does, the windows still registered on it.
static int release(struct comm *c) {
  if (!c)
    return INVALID_ARGUMENT;
  while (c->windows) {
    struct window *w = c->windows;
    c->windows = w->next;
    free(w);
    --state.live_windows;
  }
  free(c);
  --state.live_comms;
  return SUCCESS;
}

int ncclCommAbort(struct comm *c) {
  ++state.abort_calls;
  return release(c);
}

int ncclCommFinalize(struct comm *c) {
  MOCK_ENTER("ncclCommFinalize");
  ++state.finalize_calls;
  if (!c)
    return INVALID_ARGUMENT;
  c->finalized = true;
  return start_pending(c);
}

int ncclCommDestroy(struct comm *c) {
  // Told to fail, it still releases the communicator: a caller must not
  // touch the handle after ncclCommDestroy (an abort would free it twice).
  int code;
  if (should_fail("ncclCommDestroy", &code)) {
    release(c);
    return code;
  }
  ++state.destroy_calls;
  return release(c);
}

typedef int (*mock_mem_alloc_fn)(uint64_t *, size_t);
typedef int (*mock_mem_free_fn)(uint64_t);

// "Device" memory comes from the mock libcuda, like the real libnccl's from
// the driver, so that attnrt's cuMemsetD8 on it is checked there.
int ncclMemAlloc(void **ptr, size_t size) {
  *ptr = NULL;
  MOCK_ENTER("ncclMemAlloc");
  void *sym = mock_cuda_symbol("cuMemAlloc_v2", "cuMemAlloc");
  mock_mem_alloc_fn alloc;
  memcpy(&alloc, &sym, sizeof alloc);
  // 4096-aligned, as ncclMemAlloc's granularity is; the mock libcuda's
  // address sits in the 8 bytes before the one returned.
  uint64_t p = 0;
  if (!sym || alloc(&p, size + 8192) != 0)
    return 1;
  uint64_t aligned = (p + 8 + 4095) / 4096 * 4096;
  memcpy((void *)(uintptr_t)(aligned - 8), &p, sizeof p);
  *ptr = (void *)(uintptr_t)aligned;
  ++state.live_memory;
  return SUCCESS;
}

int ncclMemFree(void *ptr) {
  MOCK_ENTER("ncclMemFree");
  if (!ptr)
    return INVALID_ARGUMENT;
  void *sym = mock_cuda_symbol("cuMemFree_v2", "cuMemFree");
  mock_mem_free_fn release_mem;
  memcpy(&release_mem, &sym, sizeof release_mem);
  uint64_t p;
  memcpy(&p, (char *)ptr - 8, sizeof p);
  if (!sym || release_mem(p) != 0)
    return 1;
  --state.live_memory;
  return SUCCESS;
}

int ncclCommWindowRegister(struct comm *c, void *buf, size_t size,
                           struct window **win, int flags) {
  *win = NULL;
  MOCK_ENTER("ncclCommWindowRegister");
  if (!c || !buf || size == 0 || ((uintptr_t)buf & 4095) != 0 || flags != 1)
    return INVALID_ARGUMENT;
  *win = calloc(1, sizeof **win);
  (*win)->buf = buf;
  (*win)->next = c->windows;
  c->windows = *win;
  ++state.live_windows;
  return start_pending(c);
}

int ncclCommWindowDeregister(struct comm *c, struct window *win) {
  MOCK_ENTER("ncclCommWindowDeregister");
  if (!c || !win)
    return INVALID_ARGUMENT;
  struct window **link = &c->windows;
  while (*link && *link != win)
    link = &(*link)->next;
  if (!*link)
    return INVALID_ARGUMENT;
  *link = win->next;
  free(win);
  --state.live_windows;
  return SUCCESS;
}

static size_t dtype_bytes(int dtype) {
  static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return dtype >= 0 && dtype < 12 ? sizes[dtype] : 0;
}

static int record(const char *name, const void *send, void *recv, size_t count,
                  int dtype, int op, struct comm *c, void *stream) {
  ++state.collectives;
  snprintf(state.last.name, sizeof state.last.name, "%s", name);
  state.last.send = send;
  state.last.recv = recv;
  state.last.count = count;
  state.last.dtype = dtype;
  state.last.op = op;
  state.last.stream = stream;
  if (!c || dtype_bytes(dtype) == 0)
    return INVALID_ARGUMENT;
  if (c->nranks == 1 && send != recv)
    memmove(recv, send, count * dtype_bytes(dtype));
  return SUCCESS;
}

int ncclAllReduce(const void *send, void *recv, size_t count, int dtype, int op,
                  struct comm *c, void *stream) {
  MOCK_ENTER("ncclAllReduce");
  return record("ncclAllReduce", send, recv, count, dtype, op, c, stream);
}

int ncclAllGather(const void *send, void *recv, size_t count, int dtype,
                  struct comm *c, void *stream) {
  MOCK_ENTER("ncclAllGather");
  return record("ncclAllGather", send, recv, count, dtype, -1, c, stream);
}

int ncclReduceScatter(const void *send, void *recv, size_t count, int dtype,
                      int op, struct comm *c, void *stream) {
  MOCK_ENTER("ncclReduceScatter");
  return record("ncclReduceScatter", send, recv, count, dtype, op, c, stream);
}

//===-- Device API (NCCL 2.28 layouts, prefixes only) --===//

struct team {
  int nranks, rank, stride;
};

struct lsa_barrier_handle {
  uint32_t buf_handle;
  int nbarriers;
};

struct resource_requirements {
  struct resource_requirements *next;
  size_t buffer_size, buffer_align;
  uint32_t *out_buffer_handle;
};

struct dev_comm_requirements {
  struct resource_requirements *resources;
};

struct dev_comm_head {
  int rank, nranks;
  uint32_t nranks_rcp32;
  int lsa_rank, lsa_size;
  uint32_t lsa_size_rcp32;
};

// NCCL 2.28.9 clears this much of a resource requirement (its size there).
#define RESOURCE_REQUIREMENTS_BYTES 64

struct team ncclTeamLsa(struct comm *c) {
  struct team t = {c ? c->nranks : 0, c ? c->rank : 0, 1};
  return t;
}

int ncclLsaBarrierCreateRequirement(struct team team, int nbarriers,
                                    struct lsa_barrier_handle *handle,
                                    struct resource_requirements *req) {
  MOCK_ENTER("ncclLsaBarrierCreateRequirement");
  if (!handle || !req || nbarriers < 0)
    return INVALID_ARGUMENT;
  memset(req, 0, RESOURCE_REQUIREMENTS_BYTES);
  handle->nbarriers = nbarriers;
  req->buffer_size = (size_t)(3 * nbarriers + nbarriers * team.nranks) * sizeof(uint32_t);
  req->buffer_align = sizeof(uint32_t);
  req->out_buffer_handle = &handle->buf_handle;
  return SUCCESS;
}

int ncclDevCommCreate(struct comm *c, const struct dev_comm_requirements *reqs,
                      struct dev_comm_head *out) {
  MOCK_ENTER("ncclDevCommCreate");
  if (!c || !reqs || !out)
    return INVALID_ARGUMENT;
  ++state.dev_comm_creates;
  state.dev_comm_resources = 0;
  state.dev_comm_resource_bytes = 0;
  uint32_t next_handle = 1;
  for (struct resource_requirements *r = reqs->resources; r; r = r->next) {
    ++state.dev_comm_resources;
    state.dev_comm_resource_bytes += r->buffer_size;
    if (r->out_buffer_handle)
      *r->out_buffer_handle = next_handle++;
  }
  memset(out, 0, sizeof *out);
  out->rank = c->rank;
  out->nranks = c->nranks;
  // MOCK_NCCL_LSA_SIZE=n: LSA teams of n consecutive ranks (a node of n
  // GPUs); default: the whole communicator.
  int lsa = mock_env_int("MOCK_NCCL_LSA_SIZE", c->nranks);
  if (lsa < 1 || lsa > c->nranks)
    lsa = c->nranks;
  out->lsa_rank = c->rank % lsa;
  out->lsa_size = lsa;
  ++state.live_dev_comms;
  return start_pending(c);
}

int ncclDevCommDestroy(struct comm *c, const struct dev_comm_head *dev) {
  if (!c || !dev)
    return INVALID_ARGUMENT;
  // Told to fail, it still releases what it can, like ncclCommDestroy.
  --state.live_dev_comms;
  int code;
  return should_fail("ncclDevCommDestroy", &code) ? code : SUCCESS;
}
