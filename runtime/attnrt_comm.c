// attnrt_comm.c - communicators over NCCL (dlopen'ed): non-blocking init polled with a timeout, symmetric windows, host-launched collectives; the ranks find each other in attnrt_rendezvous.c, kernels reach them through attnrt_comm_device.c.

#include "attnrt_comm_internal.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//===-- The NCCL ABI attnrt uses (declared in attnrt_comm_internal.h) --===//

#ifdef ATTNRT_HAVE_NCCL_H
#include <nccl.h>
_Static_assert(sizeof(nccl_unique_id) == sizeof(ncclUniqueId), "ncclUniqueId");
_Static_assert((int)NCCL_IN_PROGRESS == (int)ncclInProgress, "ncclInProgress");
_Static_assert(NCCL_CONFIG_UNDEF == NCCL_CONFIG_UNDEF_INT, "undefined config value");
#if NCCL_VERSION_CODE >= 22800
_Static_assert(sizeof(struct nccl_config) == sizeof(ncclConfig_t), "ncclConfig_t");
_Static_assert(offsetof(struct nccl_config, blocking) == offsetof(ncclConfig_t, blocking),
               "ncclConfig_t.blocking");
_Static_assert(offsetof(struct nccl_config, nvlink_centric_sched) ==
                   offsetof(ncclConfig_t, nvlinkCentricSched),
               "ncclConfig_t.nvlinkCentricSched");
#endif
_Static_assert((int)ATTNRT_COMM_BF16 == 9 && (int)ncclBfloat16 == 9, "dtype");
_Static_assert((int)ATTNRT_COMM_F32 == (int)ncclFloat32, "dtype");
_Static_assert((int)ATTNRT_COMM_AVG == (int)ncclAvg, "op");
#endif

struct nccl_entry {
  const char *symbol;
  size_t offset;
  bool optional;
};

#define NCCL_ENTRY(field, opt)                                                 \
  { "nccl" #field, offsetof(struct nccl_api, field), opt }

static const struct nccl_entry nccl_entries[] = {
    NCCL_ENTRY(GetVersion, false),
    NCCL_ENTRY(GetErrorString, false),
    NCCL_ENTRY(GetLastError, true),
    NCCL_ENTRY(GetUniqueId, false),
    NCCL_ENTRY(CommInitRank, false),
    NCCL_ENTRY(CommInitRankConfig, true),
    NCCL_ENTRY(CommGetAsyncError, false),
    NCCL_ENTRY(CommAbort, false),
    NCCL_ENTRY(CommFinalize, true),
    NCCL_ENTRY(CommDestroy, false),
    NCCL_ENTRY(MemAlloc, true),
    NCCL_ENTRY(MemFree, true),
    NCCL_ENTRY(CommWindowRegister, true),
    NCCL_ENTRY(CommWindowDeregister, true),
    NCCL_ENTRY(AllReduce, false),
    NCCL_ENTRY(AllGather, false),
    NCCL_ENTRY(ReduceScatter, false),
    NCCL_ENTRY(DevCommCreate, true),
    NCCL_ENTRY(DevCommDestroy, true),
    NCCL_ENTRY(TeamLsa, true),
    NCCL_ENTRY(LsaBarrierCreateRequirement, true),
};

#undef NCCL_ENTRY

//===-- Errors --===//

enum attnrt_status attnrt_comm_fail_nccl(attnrt_comm *c, nccl_result res,
                                         const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  const char *text = c->nccl.GetErrorString ? c->nccl.GetErrorString(res) : NULL;
  const char *last = c->nccl.GetLastError ? c->nccl.GetLastError(c->comm) : NULL;
  attnrt_fail(c->rt, ATTNRT_ERR_NCCL, "%s failed: %s (ncclResult %d)", what,
              text ? text : "unknown NCCL error", (int)res);
  if (last && *last)
    attnrt_append_error(c->rt, ": %s", last);
  return ATTNRT_ERR_NCCL;
}

/// Aborts c's NCCL communicator (once); later calls fail with ATTNRT_ERR_NCCL.
static void abort_comm(attnrt_comm *c) {
  if (!c->comm)
    return;
  bool pushed = c->rt && c->rt->cu.CtxPushCurrent(c->rt->context) == CUDA_SUCCESS;
  c->nccl.CommAbort(c->comm);
  if (pushed) {
    CUcontext popped;
    c->rt->cu.CtxPopCurrent(&popped);
  }
  c->comm = NULL;
  c->aborted = true;
}

enum attnrt_status attnrt_comm_check_usable(attnrt_comm *c, const char *caller) {
  if (c->aborted || !c->comm)
    return attnrt_fail(c->rt, ATTNRT_ERR_NCCL,
                       "%s: the communicator was aborted after an earlier error",
                       caller);
  return ATTNRT_OK;
}

/// Reads ncclCommGetAsyncError once: *pending tells whether NCCL still has
/// an operation in progress. On an error c is aborted and the message names
/// what (the operation being waited for).
static enum attnrt_status check_async(attnrt_comm *c, const char *what,
                                      bool *pending) {
  *pending = false;
  nccl_result async = NCCL_SUCCESS;
  nccl_result res = c->nccl.CommGetAsyncError(c->comm, &async);
  if (res != NCCL_SUCCESS) {
    enum attnrt_status st = attnrt_comm_fail_nccl(c, res, "ncclCommGetAsyncError (%s)", what);
    abort_comm(c);
    return st;
  }
  if (async == NCCL_IN_PROGRESS)
    *pending = true;
  else if (async != NCCL_SUCCESS) {
    enum attnrt_status st =
        attnrt_comm_fail_nccl(c, async, "%s: NCCL reported an asynchronous error; it", what);
    attnrt_append_error(c->rt, "; the communicator was aborted");
    abort_comm(c);
    return st;
  }
  return ATTNRT_OK;
}

/// Polls ncclCommGetAsyncError until it reports neither ncclInProgress nor,
/// for a timeout, past timeout_s. On an error or timeout c is aborted and the
/// message names what (the operation being waited for).
static enum attnrt_status poll_async(attnrt_comm *c, double timeout_s,
                                     const char *what) {
  double start = now_s();
  double pause = 20e-6;
  for (;;) {
    bool pending = false;
    enum attnrt_status st = check_async(c, what, &pending);
    if (st != ATTNRT_OK || !pending)
      return st;
    if (now_s() - start >= timeout_s) {
      abort_comm(c);
      return attnrt_fail(c->rt, ATTNRT_ERR_TIMEOUT,
                         "%s: still in progress after %g s (%s); a peer rank "
                         "is probably dead or stuck; the communicator was aborted",
                         what, timeout_s, ATTNRT_COMM_TIMEOUT_ENV);
    }
    sleep_s(pause);
    if (pause < 1e-3)
      pause *= 2;
  }
}

/// Handles the result of a NCCL call on a non-blocking communicator:
/// ncclInProgress is waited for with the communicator's timeout. A call that
/// returned ncclSuccess may still have left work in progress (NCCL 2.28's
/// ncclDevCommCreate and window registration do, seen on two H200s: the
/// next call then fails with "Attempt to use communicator before the
/// previous operation returned ncclSuccess"), so the state is polled after
/// every call.
enum attnrt_status attnrt_comm_finish_call(attnrt_comm *c, nccl_result res,
                                           const char *what) {
  if (res != NCCL_SUCCESS && res != NCCL_IN_PROGRESS)
    return attnrt_comm_fail_nccl(c, res, "%s", what);
  return poll_async(c, c->timeout_s, what);
}

//===-- Loading NCCL --===//

/// Opens libnccl (ATTNRT_NCCL_LIBRARY or the default) into c and reads its
/// version. Returns ATTNRT_ERR_NCCL naming the path or the missing symbol.
static enum attnrt_status load_nccl(attnrt_comm *c) {
  const char *path = getenv(ATTNRT_NCCL_LIBRARY_ENV);
  if (!path || !*path)
    path = ATTNRT_NCCL_LIBRARY_DEFAULT;
  // Like libcuda, libnccl may leave threads behind; it stays mapped.
  c->library = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!c->library) {
    const char *why = dlerror();
    return attnrt_fail(NULL, ATTNRT_ERR_NCCL,
                       "cannot load NCCL library '%s': %s (set %s to its path)",
                       path, why ? why : "unknown dlopen error",
                       ATTNRT_NCCL_LIBRARY_ENV);
  }
  for (size_t i = 0; i < sizeof nccl_entries / sizeof nccl_entries[0]; ++i) {
    const struct nccl_entry *e = &nccl_entries[i];
    void *fn = dlsym(c->library, e->symbol);
    if (!fn && e->optional)
      continue;
    if (!fn)
      return attnrt_fail(NULL, ATTNRT_ERR_NCCL,
                         "NCCL library '%s' has no entry point %s", path,
                         e->symbol);
    memcpy((char *)&c->nccl + e->offset, &fn, sizeof fn);
  }
  nccl_result res = c->nccl.GetVersion(&c->version);
  if (res != NCCL_SUCCESS)
    return attnrt_comm_fail_nccl(c, res, "ncclGetVersion");
  if (c->version < nccl_version_code(2, 12, 0))
    return attnrt_fail(NULL, ATTNRT_ERR_NCCL,
                       "NCCL library '%s' is version %d: attnrt needs 2.12 or later",
                       path, c->version);
  return ATTNRT_OK;
}

//===-- Communicators --===//

/// Initializes c->comm from id: non-blocking with a config when the library
/// has ncclCommInitRankConfig (NCCL 2.14), polled with the timeout; blocking
/// ncclCommInitRank otherwise. Needs the runtime's context current.
static enum attnrt_status init_nccl(attnrt_comm *c, nccl_unique_id id) {
  nccl_comm comm = NULL;
  nccl_result res;
  const char *what;
  if (c->nccl.CommInitRankConfig && c->version >= nccl_version_code(2, 14, 0)) {
    struct nccl_config cfg;
    memset(&cfg, 0, sizeof cfg);
    bool full = c->version >= nccl_version_code(2, 28, 0);
    cfg.size = full ? sizeof cfg : offsetof(struct nccl_config, split_share);
    cfg.magic = NCCL_CONFIG_MAGIC;
    cfg.version = (unsigned)(full ? nccl_version_code(2, 28, 0)
                                  : nccl_version_code(2, 14, 0));
    cfg.blocking = 0;
    cfg.cga_cluster_size = cfg.min_ctas = cfg.max_ctas = NCCL_CONFIG_UNDEF;
    cfg.net_name = NULL;
    cfg.split_share = cfg.traffic_class = NCCL_CONFIG_UNDEF;
    cfg.comm_name = NULL;
    cfg.collnet_enable = cfg.cta_policy = cfg.shrink_share = NCCL_CONFIG_UNDEF;
    cfg.nvls_ctas = cfg.channels_per_net_peer = NCCL_CONFIG_UNDEF;
    cfg.nvlink_centric_sched = NCCL_CONFIG_UNDEF;
    what = "ncclCommInitRankConfig";
    res = c->nccl.CommInitRankConfig(&comm, c->size, id, c->rank, &cfg);
  } else {
    what = "ncclCommInitRank";
    res = c->nccl.CommInitRank(&comm, c->size, id, c->rank);
  }
  c->comm = comm;
  if (res != NCCL_SUCCESS && res != NCCL_IN_PROGRESS) {
    enum attnrt_status st = attnrt_comm_fail_nccl(c, res, "%s(rank %d of %d)", what, c->rank,
                                      c->size);
    abort_comm(c);
    return st;
  }
  if (!c->comm)
    return attnrt_fail(c->rt, ATTNRT_ERR_NCCL, "%s returned no communicator", what);
  return poll_async(c, c->timeout_s, what);
}

ATTNRT_API enum attnrt_status
attnrt_comm_init(const struct attnrt_comm_config *cfg, attnrt_comm **out) {
  if (!out)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_init: out is NULL");
  *out = NULL;
  if (!cfg)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_init: cfg is NULL");
  enum attnrt_status st = attnrt_comm_check_config(cfg, "attnrt_comm_init");
  if (st != ATTNRT_OK)
    return st;
  double deadline = now_s() + cfg->timeout_s;
  attnrt_comm *c = calloc(1, sizeof *c);
  if (!c)
    return attnrt_fail(NULL, ATTNRT_ERR_OUT_OF_MEMORY,
                       "attnrt_comm_init: out of host memory");
  c->rank = cfg->rank;
  c->size = cfg->world_size;
  c->timeout_s = cfg->timeout_s;

  st = load_nccl(c);
  if (st != ATTNRT_OK)
    goto out_free;
  st = attnrt_runtime_create(cfg->local_rank, &c->rt);
  if (st != ATTNRT_OK) {
    char why[ATTNRT_ERROR_CAP];
    snprintf(why, sizeof why, "%s", attnrt_last_error(NULL));
    attnrt_fail(NULL, st, "LOCAL_RANK=%d (rank %d): %s", cfg->local_rank,
                cfg->rank, why);
    goto out_free;
  }

  nccl_unique_id id;
  memset(&id, 0, sizeof id);
  if (cfg->rank == 0) {
    nccl_result res = c->nccl.GetUniqueId(&id);
    if (res != NCCL_SUCCESS) {
      st = attnrt_comm_fail_nccl(c, res, "ncclGetUniqueId");
      goto out_destroy_runtime;
    }
    if (cfg->world_size > 1)
      st = attnrt_comm_serve_id(c->rt, cfg, &id, deadline);
  } else {
    st = attnrt_comm_fetch_id(c->rt, cfg, &id, deadline);
  }
  if (st != ATTNRT_OK)
    goto out_destroy_runtime;

  st = attnrt_ctx_enter(c->rt);
  if (st != ATTNRT_OK)
    goto out_destroy_runtime;
  st = attnrt_ctx_leave(c->rt, init_nccl(c, id));
  if (st != ATTNRT_OK)
    goto out_destroy_runtime;
  *out = c;
  return ATTNRT_OK;

out_destroy_runtime:
  attnrt_set_thread_error(c->rt->last_error);
  abort_comm(c);
  attnrt_runtime_destroy(c->rt);
out_free:
  if (c->library)
    dlclose(c->library);
  free(c);
  return st;
}

ATTNRT_API enum attnrt_status attnrt_comm_init_from_env(attnrt_comm **out) {
  if (!out)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_init_from_env: out is NULL");
  *out = NULL;
  struct attnrt_comm_config cfg;
  enum attnrt_status st = attnrt_comm_config_from_env(&cfg);
  if (st != ATTNRT_OK)
    return st;
  return attnrt_comm_init(&cfg, out);
}

ATTNRT_API void attnrt_comm_abort(attnrt_comm *c) {
  if (c)
    abort_comm(c);
}

ATTNRT_API void attnrt_comm_destroy(attnrt_comm *c) {
  if (!c)
    return;
  attnrt_comm_free_dev_comms(c);
  attnrt_comm_unload_shim(c);
  if (c->comm && attnrt_ctx_enter(c->rt) == ATTNRT_OK) {
    enum attnrt_status st = ATTNRT_OK;
    if (c->nccl.CommFinalize)
      st = attnrt_comm_finish_call(c, c->nccl.CommFinalize(c->comm), "ncclCommFinalize");
    if (st == ATTNRT_OK && c->comm) {
      // Whatever it answers, the handle is NCCL's to release from here on:
      // aborting it as well could free it twice.
      c->nccl.CommDestroy(c->comm);
      c->comm = NULL;
    }
    attnrt_ctx_leave(c->rt, st);
  }
  abort_comm(c); // what finalize or destroy could not release
  attnrt_runtime_destroy(c->rt);
  dlclose(c->library);
  free(c);
}

ATTNRT_API int attnrt_comm_rank(const attnrt_comm *c) { return c ? c->rank : -1; }

ATTNRT_API int attnrt_comm_size(const attnrt_comm *c) { return c ? c->size : -1; }

ATTNRT_API attnrt_runtime *attnrt_comm_runtime(const attnrt_comm *c) {
  return c ? c->rt : NULL;
}

ATTNRT_API int attnrt_comm_nccl_version(const attnrt_comm *c) {
  return c ? c->version : -1;
}

ATTNRT_API enum attnrt_status attnrt_comm_poll(attnrt_comm *c, double timeout_s) {
  if (!c)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_poll: communicator is NULL");
  enum attnrt_status st = attnrt_comm_check_usable(c, "attnrt_comm_poll");
  if (st != ATTNRT_OK)
    return st;
  return poll_async(c, timeout_s < 0 ? c->timeout_s : timeout_s,
                    "attnrt_comm_poll");
}

ATTNRT_API enum attnrt_status attnrt_comm_wait(attnrt_comm *c, attnrt_stream *s) {
  if (!c)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_wait: communicator is NULL");
  enum attnrt_status st = attnrt_comm_check_usable(c, "attnrt_comm_wait");
  if (st != ATTNRT_OK)
    return st;
  CUstream stream = NULL;
  st = attnrt_stream_resolve(c->rt, s, "attnrt_comm_wait", &stream);
  if (st != ATTNRT_OK)
    return st;
  st = attnrt_ctx_enter(c->rt);
  if (st != ATTNRT_OK)
    return st;
  double start = now_s(), pause = 10e-6;
  for (;;) {
    CUresult res = c->rt->cu.StreamQuery(stream);
    if (res != CUDA_ERROR_NOT_READY) {
      st = attnrt_check_cu(c->rt, res, "cuStreamQuery");
      bool pending = false;
      if (st == ATTNRT_OK) {
        st = check_async(c, "attnrt_comm_wait", &pending);
      } else {
        // The context is unusable (a kernel failed): NCCL must not be
        // called on it again.
        abort_comm(c);
        attnrt_append_error(c->rt, "; the communicator was aborted");
      }
      break;
    }
    // A collective waiting on a dead peer never finishes; NCCL may say so.
    bool pending = false;
    st = check_async(c, "attnrt_comm_wait", &pending);
    if (st != ATTNRT_OK)
      break;
    if (now_s() - start >= c->timeout_s) {
      abort_comm(c);
      st = attnrt_fail(c->rt, ATTNRT_ERR_TIMEOUT,
                       "attnrt_comm_wait: the stream is still busy after %g s "
                       "(%s); a peer rank is probably dead or stuck; the "
                       "communicator was aborted",
                       c->timeout_s, ATTNRT_COMM_TIMEOUT_ENV);
      break;
    }
    sleep_s(pause);
    if (pause < 1e-3)
      pause *= 2;
  }
  return attnrt_ctx_leave(c->rt, st);
}

//===-- Symmetric buffers --===//

ATTNRT_API enum attnrt_status attnrt_comm_buffer_alloc(attnrt_comm *c,
                                                       size_t bytes,
                                                       attnrt_comm_buffer **out) {
  if (!c)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_buffer_alloc: communicator is NULL");
  if (!out)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_buffer_alloc: out is NULL");
  *out = NULL;
  if (bytes == 0)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_buffer_alloc: size is 0");
  enum attnrt_status st = attnrt_comm_check_usable(c, "attnrt_comm_buffer_alloc");
  if (st != ATTNRT_OK)
    return st;
  if (!c->nccl.MemAlloc || !c->nccl.MemFree || !c->nccl.CommWindowRegister ||
      !c->nccl.CommWindowDeregister || c->version < nccl_version_code(2, 27, 0))
    return attnrt_fail(c->rt, ATTNRT_ERR_NCCL,
                       "attnrt_comm_buffer_alloc: NCCL %d has no symmetric "
                       "windows (ncclCommWindowRegister needs NCCL 2.27)",
                       c->version);
  attnrt_comm_buffer *b = calloc(1, sizeof *b);
  if (!b)
    return attnrt_fail(c->rt, ATTNRT_ERR_OUT_OF_MEMORY,
                       "attnrt_comm_buffer_alloc: out of host memory");
  b->c = c;
  b->bytes = bytes;
  st = attnrt_ctx_enter(c->rt);
  if (st != ATTNRT_OK)
    goto out_free;
  nccl_result res = c->nccl.MemAlloc(&b->ptr, bytes);
  if (res != NCCL_SUCCESS) {
    st = attnrt_comm_fail_nccl(c, res, "ncclMemAlloc(%zu bytes)", bytes);
    goto out_leave;
  }
  // Zero-filled and finished before the (collective) registration returns
  // on any rank: kernels that count launches in flags, and peers that write
  // into this buffer, never race a rank's own initialisation.
  st = attnrt_check_cu(c->rt, c->rt->cu.MemsetD8((CUdeviceptr)(uintptr_t)b->ptr,
                                                  0, bytes),
                       "cuMemsetD8(symmetric buffer, %zu bytes)", bytes);
  if (st == ATTNRT_OK)
    st = attnrt_check_cu(c->rt, c->rt->cu.CtxSynchronize(), "cuCtxSynchronize");
  if (st != ATTNRT_OK) {
    c->nccl.MemFree(b->ptr);
    goto out_leave;
  }
  res = c->nccl.CommWindowRegister(c->comm, b->ptr, bytes, &b->window,
                                   NCCL_WIN_COLL_SYMMETRIC);
  st = attnrt_comm_finish_call(c, res, "ncclCommWindowRegister");
  if (st != ATTNRT_OK) {
    c->nccl.MemFree(b->ptr);
    goto out_leave;
  }
  ++c->live_buffers;
  *out = b;
  return attnrt_ctx_leave(c->rt, ATTNRT_OK);

out_leave:
  attnrt_ctx_leave(c->rt, st);
out_free:
  free(b);
  return st;
}

ATTNRT_API attnrt_devptr attnrt_comm_buffer_ptr(const attnrt_comm_buffer *b) {
  return b ? (attnrt_devptr)(uintptr_t)b->ptr : 0;
}

ATTNRT_API void *attnrt_comm_buffer_window(const attnrt_comm_buffer *b) {
  return b ? b->window : NULL;
}

ATTNRT_API enum attnrt_status attnrt_comm_buffer_free(attnrt_comm_buffer *b) {
  if (!b)
    return ATTNRT_OK;
  attnrt_comm *c = b->c;
  enum attnrt_status st = attnrt_ctx_enter(c->rt);
  bool entered = st == ATTNRT_OK;
  // After an abort the window went with the communicator; only memory is left.
  if (entered && c->comm && b->window)
    st = attnrt_comm_finish_call(c, c->nccl.CommWindowDeregister(c->comm, b->window),
                     "ncclCommWindowDeregister");
  nccl_result res = c->nccl.MemFree(b->ptr);
  if (res != NCCL_SUCCESS && st == ATTNRT_OK)
    st = attnrt_comm_fail_nccl(c, res, "ncclMemFree");
  if (entered && b->peers) {
    enum attnrt_status freed = attnrt_check_cu(
        c->rt, c->rt->cu.MemFree((CUdeviceptr)b->peers), "cuMemFree(peer table)");
    if (st == ATTNRT_OK)
      st = freed;
  }
  if (entered)
    st = attnrt_ctx_leave(c->rt, st);
  --c->live_buffers;
  free(b->kernel);
  free((char *)b->served.pattern);
  free((char *)b->served.split);
  free(b);
  return st;
}

//===-- Collectives --===//

/// Checks what every collective needs; caller names the API function.
static enum attnrt_status check_collective(attnrt_comm *c, const char *caller,
                                           attnrt_devptr send,
                                           attnrt_devptr recv, size_t count,
                                           int dtype, int op, attnrt_stream *s,
                                           CUstream *stream) {
  if (!c)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: communicator is NULL", caller);
  if (send == 0 || recv == 0)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: %s buffer is NULL", caller, send == 0 ? "send" : "receive");
  if (count == 0)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT, "%s: count is 0",
                       caller);
  if (dtype < (int)ATTNRT_COMM_I8 || dtype > (int)ATTNRT_COMM_BF16)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: unknown element type %d", caller, dtype);
  if (op < (int)ATTNRT_COMM_SUM || op > (int)ATTNRT_COMM_AVG)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: unknown reduction %d", caller, op);
  enum attnrt_status st = attnrt_comm_check_usable(c, caller);
  if (st != ATTNRT_OK)
    return st;
  return attnrt_stream_resolve(c->rt, s, caller, stream);
}

// attnrt's dtype and op enums follow ncclDataType_t and ncclRedOp_t value
// for value (checked against nccl.h when the build has it).

ATTNRT_API enum attnrt_status
attnrt_comm_all_reduce(attnrt_comm *c, attnrt_devptr send, attnrt_devptr recv,
                       size_t count, enum attnrt_comm_dtype dtype,
                       enum attnrt_comm_op op, attnrt_stream *s) {
  CUstream stream = NULL;
  enum attnrt_status st = check_collective(c, "attnrt_comm_all_reduce", send, recv,
                                           count, (int)dtype, (int)op, s, &stream);
  if (st != ATTNRT_OK)
    return st;
  st = attnrt_ctx_enter(c->rt);
  if (st != ATTNRT_OK)
    return st;
  nccl_result res = c->nccl.AllReduce((const void *)(uintptr_t)send,
                                      (void *)(uintptr_t)recv, count, (int)dtype,
                                      (int)op, c->comm, stream);
  return attnrt_ctx_leave(c->rt, attnrt_comm_finish_call(c, res, "ncclAllReduce"));
}

ATTNRT_API enum attnrt_status
attnrt_comm_all_gather(attnrt_comm *c, attnrt_devptr send, attnrt_devptr recv,
                       size_t send_count, enum attnrt_comm_dtype dtype,
                       attnrt_stream *s) {
  CUstream stream = NULL;
  enum attnrt_status st =
      check_collective(c, "attnrt_comm_all_gather", send, recv, send_count,
                       (int)dtype, (int)ATTNRT_COMM_SUM, s, &stream);
  if (st != ATTNRT_OK)
    return st;
  st = attnrt_ctx_enter(c->rt);
  if (st != ATTNRT_OK)
    return st;
  nccl_result res = c->nccl.AllGather((const void *)(uintptr_t)send,
                                      (void *)(uintptr_t)recv, send_count,
                                      (int)dtype, c->comm, stream);
  return attnrt_ctx_leave(c->rt, attnrt_comm_finish_call(c, res, "ncclAllGather"));
}

ATTNRT_API enum attnrt_status
attnrt_comm_reduce_scatter(attnrt_comm *c, attnrt_devptr send,
                           attnrt_devptr recv, size_t recv_count,
                           enum attnrt_comm_dtype dtype, enum attnrt_comm_op op,
                           attnrt_stream *s) {
  CUstream stream = NULL;
  enum attnrt_status st =
      check_collective(c, "attnrt_comm_reduce_scatter", send, recv, recv_count,
                       (int)dtype, (int)op, s, &stream);
  if (st != ATTNRT_OK)
    return st;
  st = attnrt_ctx_enter(c->rt);
  if (st != ATTNRT_OK)
    return st;
  nccl_result res = c->nccl.ReduceScatter((const void *)(uintptr_t)send,
                                          (void *)(uintptr_t)recv, recv_count,
                                          (int)dtype, (int)op, c->comm, stream);
  return attnrt_ctx_leave(c->rt, attnrt_comm_finish_call(c, res, "ncclReduceScatter"));
}
