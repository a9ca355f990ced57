// attnrt_memory.c - device memory, copies, streams and events of a runtime.

#include "attnrt_internal.h"

#include <stdlib.h>

enum attnrt_status attnrt_stream_resolve(attnrt_runtime *rt, attnrt_stream *s,
                                         const char *caller, CUstream *out) {
  if (s && s->rt != rt)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: stream belongs to another runtime", caller);
  *out = s ? s->stream : NULL;
  return ATTNRT_OK;
}

//===-- Memory --===//

ATTNRT_API enum attnrt_status attnrt_mem_alloc(attnrt_runtime *rt, size_t bytes,
                                               attnrt_devptr *out) {
  if (!rt)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_mem_alloc: runtime is NULL");
  if (!out)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_mem_alloc: out is NULL");
  *out = 0;
  if (bytes == 0)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_mem_alloc: size is 0");
  enum attnrt_status st = attnrt_ctx_enter(rt);
  if (st != ATTNRT_OK)
    return st;
  CUdeviceptr p = 0;
  st = attnrt_check_cu(rt, rt->cu.MemAlloc(&p, bytes), "cuMemAlloc(%zu bytes)",
                       bytes);
  st = attnrt_ctx_leave(rt, st);
  if (st == ATTNRT_OK)
    *out = (attnrt_devptr)p;
  return st;
}

ATTNRT_API enum attnrt_status attnrt_mem_free(attnrt_runtime *rt,
                                              attnrt_devptr p) {
  if (!rt)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_mem_free: runtime is NULL");
  if (p == 0)
    return ATTNRT_OK;
  enum attnrt_status st = attnrt_ctx_enter(rt);
  if (st != ATTNRT_OK)
    return st;
  st = attnrt_check_cu(rt, rt->cu.MemFree((CUdeviceptr)p), "cuMemFree(0x%llx)",
                       (unsigned long long)p);
  return attnrt_ctx_leave(rt, st);
}

/// Checks the arguments shared by the copy and set functions and resolves s.
static enum attnrt_status check_transfer(attnrt_runtime *rt, const char *caller,
                                         attnrt_devptr device, const void *host,
                                         size_t bytes, attnrt_stream *s,
                                         CUstream *stream) {
  if (!rt)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: runtime is NULL", caller);
  if (device == 0 || !host)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT, "%s: %s pointer is NULL",
                       caller, device == 0 ? "device" : "host");
  if (bytes == 0)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT, "%s: size is 0", caller);
  return attnrt_stream_resolve(rt, s, caller, stream);
}

ATTNRT_API enum attnrt_status attnrt_memcpy_htod(attnrt_runtime *rt,
                                                 attnrt_devptr dst,
                                                 const void *src, size_t bytes,
                                                 attnrt_stream *s) {
  CUstream stream = NULL;
  enum attnrt_status st =
      check_transfer(rt, "attnrt_memcpy_htod", dst, src, bytes, s, &stream);
  if (st != ATTNRT_OK)
    return st;
  st = attnrt_ctx_enter(rt);
  if (st != ATTNRT_OK)
    return st;
  if (s)
    st = attnrt_check_cu(rt, rt->cu.MemcpyHtoDAsync(dst, src, bytes, stream),
                         "cuMemcpyHtoDAsync(%zu bytes)", bytes);
  else
    st = attnrt_check_cu(rt, rt->cu.MemcpyHtoD(dst, src, bytes),
                         "cuMemcpyHtoD(%zu bytes)", bytes);
  return attnrt_ctx_leave(rt, st);
}

ATTNRT_API enum attnrt_status attnrt_memcpy_dtoh(attnrt_runtime *rt, void *dst,
                                                 attnrt_devptr src, size_t bytes,
                                                 attnrt_stream *s) {
  CUstream stream = NULL;
  enum attnrt_status st =
      check_transfer(rt, "attnrt_memcpy_dtoh", src, dst, bytes, s, &stream);
  if (st != ATTNRT_OK)
    return st;
  st = attnrt_ctx_enter(rt);
  if (st != ATTNRT_OK)
    return st;
  if (s)
    st = attnrt_check_cu(rt, rt->cu.MemcpyDtoHAsync(dst, src, bytes, stream),
                         "cuMemcpyDtoHAsync(%zu bytes)", bytes);
  else
    st = attnrt_check_cu(rt, rt->cu.MemcpyDtoH(dst, src, bytes),
                         "cuMemcpyDtoH(%zu bytes)", bytes);
  return attnrt_ctx_leave(rt, st);
}

ATTNRT_API enum attnrt_status attnrt_memset_d8(attnrt_runtime *rt,
                                               attnrt_devptr dst,
                                               unsigned char value,
                                               size_t bytes, attnrt_stream *s) {
  CUstream stream = NULL;
  // A memset has no host buffer: &value stands in for it in the check.
  enum attnrt_status st = check_transfer(rt, "attnrt_memset_d8", dst, &value,
                                         bytes, s, &stream);
  if (st != ATTNRT_OK)
    return st;
  st = attnrt_ctx_enter(rt);
  if (st != ATTNRT_OK)
    return st;
  if (s)
    st = attnrt_check_cu(rt, rt->cu.MemsetD8Async(dst, value, bytes, stream),
                         "cuMemsetD8Async(%zu bytes)", bytes);
  else
    st = attnrt_check_cu(rt, rt->cu.MemsetD8(dst, value, bytes),
                         "cuMemsetD8(%zu bytes)", bytes);
  return attnrt_ctx_leave(rt, st);
}

//===-- Streams --===//

/// Allocates a stream wrapper for cu_stream and stores it in *out.
static enum attnrt_status new_stream(attnrt_runtime *rt, CUstream cu_stream,
                                     bool owned, attnrt_stream **out) {
  attnrt_stream *s = malloc(sizeof *s);
  if (!s)
    return attnrt_fail(rt, ATTNRT_ERR_OUT_OF_MEMORY,
                       "attnrt_stream: out of host memory");
  s->rt = rt;
  s->stream = cu_stream;
  s->owned = owned;
  *out = s;
  return ATTNRT_OK;
}

ATTNRT_API enum attnrt_status attnrt_stream_create(attnrt_runtime *rt,
                                                   attnrt_stream **out) {
  if (!rt)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_stream_create: runtime is NULL");
  if (!out)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_stream_create: out is NULL");
  *out = NULL;
  enum attnrt_status st = attnrt_ctx_enter(rt);
  if (st != ATTNRT_OK)
    return st;
  CUstream stream = NULL;
  st = attnrt_check_cu(rt, rt->cu.StreamCreate(&stream, CU_STREAM_DEFAULT),
                       "cuStreamCreate");
  if (st == ATTNRT_OK) {
    st = new_stream(rt, stream, true, out);
    if (st != ATTNRT_OK)
      rt->cu.StreamDestroy(stream);
  }
  return attnrt_ctx_leave(rt, st);
}

ATTNRT_API enum attnrt_status attnrt_stream_wrap(attnrt_runtime *rt,
                                                 void *cu_stream,
                                                 attnrt_stream **out) {
  if (!rt)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_stream_wrap: runtime is NULL");
  if (!out)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_stream_wrap: out is NULL");
  *out = NULL;
  return new_stream(rt, (CUstream)cu_stream, false, out);
}

ATTNRT_API void attnrt_stream_destroy(attnrt_stream *s) {
  if (!s)
    return;
  attnrt_runtime *rt = s->rt;
  // A void function cannot report: failures stay in attnrt_last_error(rt).
  if (s->owned && attnrt_ctx_enter(rt) == ATTNRT_OK) {
    attnrt_check_cu(rt, rt->cu.StreamDestroy(s->stream), "cuStreamDestroy");
    attnrt_ctx_leave(rt, ATTNRT_OK);
  }
  free(s);
}

ATTNRT_API enum attnrt_status attnrt_stream_synchronize(attnrt_stream *s) {
  if (!s)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_stream_synchronize: stream is NULL (use "
                       "attnrt_runtime_synchronize for the whole context)");
  attnrt_runtime *rt = s->rt;
  enum attnrt_status st = attnrt_ctx_enter(rt);
  if (st != ATTNRT_OK)
    return st;
  if (rt->sync_timeout_s > 0)
    st = attnrt_wait_idle(rt, s->stream, NULL, "attnrt_stream_synchronize");
  if (st == ATTNRT_OK)
    st = attnrt_check_cu(rt, rt->cu.StreamSynchronize(s->stream),
                         "cuStreamSynchronize");
  return attnrt_ctx_leave(rt, st);
}

//===-- Events --===//

ATTNRT_API enum attnrt_status attnrt_event_create(attnrt_runtime *rt,
                                                  attnrt_event **out) {
  if (!rt)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_event_create: runtime is NULL");
  if (!out)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_event_create: out is NULL");
  *out = NULL;
  attnrt_event *e = malloc(sizeof *e);
  if (!e)
    return attnrt_fail(rt, ATTNRT_ERR_OUT_OF_MEMORY,
                       "attnrt_event_create: out of host memory");
  e->rt = rt;
  e->event = NULL;
  enum attnrt_status st = attnrt_ctx_enter(rt);
  if (st == ATTNRT_OK) {
    st = attnrt_check_cu(rt, rt->cu.EventCreate(&e->event, CU_EVENT_DEFAULT),
                         "cuEventCreate");
    st = attnrt_ctx_leave(rt, st);
  }
  if (st != ATTNRT_OK) {
    free(e);
    return st;
  }
  *out = e;
  return ATTNRT_OK;
}

ATTNRT_API void attnrt_event_destroy(attnrt_event *e) {
  if (!e)
    return;
  attnrt_runtime *rt = e->rt;
  if (attnrt_ctx_enter(rt) == ATTNRT_OK) {
    attnrt_check_cu(rt, rt->cu.EventDestroy(e->event), "cuEventDestroy");
    attnrt_ctx_leave(rt, ATTNRT_OK);
  }
  free(e);
}

ATTNRT_API enum attnrt_status attnrt_event_record(attnrt_event *e,
                                                  attnrt_stream *s) {
  if (!e)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_event_record: event is NULL");
  attnrt_runtime *rt = e->rt;
  CUstream stream = NULL;
  enum attnrt_status st =
      attnrt_stream_resolve(rt, s, "attnrt_event_record", &stream);
  if (st != ATTNRT_OK)
    return st;
  st = attnrt_ctx_enter(rt);
  if (st != ATTNRT_OK)
    return st;
  st = attnrt_check_cu(rt, rt->cu.EventRecord(e->event, stream), "cuEventRecord");
  return attnrt_ctx_leave(rt, st);
}

ATTNRT_API enum attnrt_status attnrt_event_elapsed_ms(attnrt_event *start,
                                                      attnrt_event *end,
                                                      float *ms) {
  if (!start || !end)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_event_elapsed_ms: %s event is NULL",
                       !start ? "start" : "end");
  attnrt_runtime *rt = start->rt;
  if (!ms)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_event_elapsed_ms: ms is NULL");
  if (end->rt != rt)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_event_elapsed_ms: events belong to different "
                       "runtimes");
  enum attnrt_status st = attnrt_ctx_enter(rt);
  if (st != ATTNRT_OK)
    return st;
  st = attnrt_check_cu(rt, rt->cu.EventElapsedTime(ms, start->event, end->event),
                       "cuEventElapsedTime");
  return attnrt_ctx_leave(rt, st);
}
