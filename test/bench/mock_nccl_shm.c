// mock_nccl_shm.c - a working libnccl for several processes on one CPU machine: collectives move real data through POSIX shared memory, buffers come from the mock libcuda, so comm_bench runs end to end without a GPU.
//
// Each collective copies this rank's input into its slot of a shared
// segment (named in the unique id), meets the other ranks at a barrier,
// computes its output from every slot (in double for the reductions), and
// meets them again. Only what attnrt and comm_bench use is there: blocking
// init (reported complete to the non-blocking poll), sum/max over
// i32/f32/f64/bf16, symmetric windows as plain registrations, memory from the
// mock libcuda's cuMemAlloc (found through ATTNRT_CUDA_LIBRARY) so attnrt can
// copy into it. Environment: MOCK_NCCL_SLOT_BYTES (bytes one rank may send
// in one collective, default 64 MiB), MOCK_NCCL_TIMEOUT_S (barrier timeout,
// default 60).

#define _GNU_SOURCE // RTLD_NOLOAD
#include "test/runtime/mock_env.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { SUCCESS = 0, SYSTEM_ERROR = 2, INTERNAL_ERROR = 3, INVALID_ARGUMENT = 4,
       REMOTE_ERROR = 6 };
enum { I8, U8, I32, U32, I64, U64, F16, F32, F64, BF16 };
enum { SUM, PROD, MAX, MIN, AVG };

typedef struct {
  char internal[128];
} unique_id;

struct header {
  atomic_int arrived;
  atomic_int generation;
  atomic_int aborted;
};

#define HEADER_BYTES 4096

struct comm {
  int nranks, rank;
  size_t slot_bytes, map_bytes;
  unsigned char *map;
  char name[128];
};

static size_t slot_bytes(void) {
  const char *s = getenv("MOCK_NCCL_SLOT_BYTES");
  long long v = s && *s ? atoll(s) : 0;
  return v > 0 ? (size_t)v : (size_t)64 << 20;
}

static struct header *head(struct comm *c) { return (struct header *)c->map; }

static unsigned char *slot(struct comm *c, int q) {
  return c->map + HEADER_BYTES + (size_t)q * c->slot_bytes;
}

static int barrier(struct comm *c) {
  struct header *h = head(c);
  int gen = atomic_load(&h->generation);
  if (atomic_fetch_add(&h->arrived, 1) == c->nranks - 1) {
    atomic_store(&h->arrived, 0);
    atomic_fetch_add(&h->generation, 1);
    return SUCCESS;
  }
  const char *t = getenv("MOCK_NCCL_TIMEOUT_S");
  double timeout = t && *t ? atof(t) : 60.0;
  struct timespec start, now, pause = {0, 20000};
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (atomic_load(&h->generation) == gen) {
    if (atomic_load(&h->aborted))
      return REMOTE_ERROR;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((double)(now.tv_sec - start.tv_sec) +
            1e-9 * (double)(now.tv_nsec - start.tv_nsec) > timeout)
      return REMOTE_ERROR;
    nanosleep(&pause, NULL);
  }
  return SUCCESS;
}

static size_t dtype_bytes(int t) {
  static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
  return t >= 0 && t <= BF16 ? sizes[t] : 0;
}

static double load(const void *p, int t, size_t i) {
  switch (t) {
  case I32: return ((const int32_t *)p)[i];
  case F32: return ((const float *)p)[i];
  case F64: return ((const double *)p)[i];
  case BF16: {
    uint32_t w = (uint32_t)((const uint16_t *)p)[i] << 16;
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
  }
  }
  return 0;
}

static void store(void *p, int t, size_t i, double v) {
  switch (t) {
  case I32: ((int32_t *)p)[i] = (int32_t)v; break;
  case F32: ((float *)p)[i] = (float)v; break;
  case F64: ((double *)p)[i] = v; break;
  case BF16: {
    float f = (float)v;
    uint32_t w;
    memcpy(&w, &f, sizeof w);
    if ((w & 0x7fffffffu) > 0x7f800000u)
      w = 0x7fc00000u;
    else
      w += 0x7fffu + ((w >> 16) & 1u);
    ((uint16_t *)p)[i] = (uint16_t)(w >> 16);
    break;
  }
  }
}

//===-- Version, errors, ids, communicators --===//

int ncclGetVersion(int *version) {
  *version = 22803;
  return SUCCESS;
}

const char *ncclGetErrorString(int result) {
  return result ? "mock shared-memory NCCL error" : "no error";
}

const char *ncclGetLastError(void *comm) {
  (void)comm;
  return "";
}

int ncclGetUniqueId(unique_id *id) {
  static int made;
  memset(id, 0, sizeof *id);
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  snprintf(id->internal, sizeof id->internal, "/attn-mock-nccl-%ld-%ld-%d",
           (long)getpid(), (long)t.tv_nsec, ++made);
  return SUCCESS;
}

int ncclCommInitRank(struct comm **out, int nranks, unique_id id, int rank) {
  *out = NULL;
  if (nranks < 1 || rank < 0 || rank >= nranks || id.internal[0] != '/')
    return INVALID_ARGUMENT;
  struct comm *c = calloc(1, sizeof *c);
  if (!c)
    return SYSTEM_ERROR;
  c->nranks = nranks;
  c->rank = rank;
  c->slot_bytes = slot_bytes();
  c->map_bytes = HEADER_BYTES + (size_t)nranks * c->slot_bytes;
  snprintf(c->name, sizeof c->name, "%s", id.internal);
  int fd = shm_open(c->name, O_CREAT | O_RDWR, 0600);
  if (fd < 0 || ftruncate(fd, (off_t)c->map_bytes) != 0) {
    if (fd >= 0)
      close(fd);
    free(c);
    return SYSTEM_ERROR;
  }
  c->map = mmap(NULL, c->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (c->map == MAP_FAILED) {
    free(c);
    return SYSTEM_ERROR;
  }
  int st = barrier(c); // everyone mapped before the first collective
  if (st != SUCCESS) {
    munmap(c->map, c->map_bytes);
    free(c);
    return st;
  }
  *out = c;
  return SUCCESS;
}

int ncclCommInitRankConfig(struct comm **out, int nranks, unique_id id,
                           int rank, void *config) {
  (void)config;
  return ncclCommInitRank(out, nranks, id, rank);
}

int ncclCommGetAsyncError(struct comm *c, int *async) {
  *async = c && atomic_load(&head(c)->aborted) ? REMOTE_ERROR : SUCCESS;
  return c ? SUCCESS : INVALID_ARGUMENT;
}

int ncclCommFinalize(struct comm *c) { return c ? barrier(c) : INVALID_ARGUMENT; }

static int release(struct comm *c) {
  if (!c)
    return INVALID_ARGUMENT;
  munmap(c->map, c->map_bytes);
  shm_unlink(c->name); // the first rank removes the name; mappings stay
  free(c);
  return SUCCESS;
}

int ncclCommDestroy(struct comm *c) { return release(c); }

int ncclCommAbort(struct comm *c) {
  if (c)
    atomic_store(&head(c)->aborted, 1);
  return release(c);
}

//===-- Memory and windows --===//

typedef int (*mem_alloc_fn)(uint64_t *, size_t);
typedef int (*mem_free_fn)(uint64_t);

int ncclMemAlloc(void **ptr, size_t size) {
  void *sym = mock_cuda_symbol("cuMemAlloc_v2", "cuMemAlloc");
  mem_alloc_fn alloc;
  memcpy(&alloc, &sym, sizeof alloc);
  uint64_t p = 0;
  if (!sym || alloc(&p, size) != 0)
    return SYSTEM_ERROR;
  *ptr = (void *)(uintptr_t)p;
  return SUCCESS;
}

int ncclMemFree(void *ptr) {
  void *sym = mock_cuda_symbol("cuMemFree_v2", "cuMemFree");
  mem_free_fn release_mem;
  memcpy(&release_mem, &sym, sizeof release_mem);
  return sym && release_mem((uint64_t)(uintptr_t)ptr) == 0 ? SUCCESS
                                                           : SYSTEM_ERROR;
}

int ncclCommWindowRegister(struct comm *c, void *buf, size_t size, void **win,
                           int flags) {
  (void)flags;
  if (!c || !buf || !size)
    return INVALID_ARGUMENT;
  *win = buf;
  return SUCCESS;
}

int ncclCommWindowDeregister(struct comm *c, void *win) {
  return c && win ? SUCCESS : INVALID_ARGUMENT;
}

//===-- Collectives --===//

static double combine(int op, double x, double y) {
  switch (op) {
  case PROD: return x * y;
  case MAX: return x > y ? x : y;
  case MIN: return x < y ? x : y;
  default: return x + y;
  }
}

/// out[i] = reduction over ranks q of slot q's element first + i.
static void reduce_slots(struct comm *c, void *out, size_t first, size_t count,
                         int t, int op) {
  for (size_t i = 0; i < count; ++i) {
    double v = load(slot(c, 0), t, first + i);
    for (int q = 1; q < c->nranks; ++q)
      v = combine(op, v, load(slot(c, q), t, first + i));
    if (op == AVG)
      v /= c->nranks;
    store(out, t, i, v);
  }
}

static int check(struct comm *c, size_t bytes, int t) {
  if (!c || dtype_bytes(t) == 0 || (t != I32 && t != F32 && t != F64 && t != BF16))
    return INVALID_ARGUMENT;
  if (bytes > c->slot_bytes)
    return INVALID_ARGUMENT; // raise MOCK_NCCL_SLOT_BYTES
  return SUCCESS;
}

/// The first half of every collective: checks the call, copies this rank's
/// bytes of send into its slot and waits until every rank has.
static int publish(struct comm *c, const void *send, size_t bytes, int t) {
  int st = check(c, bytes, t);
  if (st != SUCCESS)
    return st;
  memcpy(slot(c, c->rank), send, bytes);
  return barrier(c);
}

int ncclAllReduce(const void *send, void *recv, size_t count, int t, int op,
                  struct comm *c, void *stream) {
  (void)stream;
  int st = publish(c, send, count * dtype_bytes(t), t);
  if (st != SUCCESS)
    return st;
  reduce_slots(c, recv, 0, count, t, op);
  return barrier(c);
}

int ncclAllGather(const void *send, void *recv, size_t count, int t,
                  struct comm *c, void *stream) {
  (void)stream;
  size_t bytes = count * dtype_bytes(t);
  int st = publish(c, send, bytes, t);
  if (st != SUCCESS)
    return st;
  for (int q = 0; q < c->nranks; ++q)
    memcpy((unsigned char *)recv + (size_t)q * bytes, slot(c, q), bytes);
  return barrier(c);
}

int ncclReduceScatter(const void *send, void *recv, size_t count, int t, int op,
                      struct comm *c, void *stream) {
  (void)stream;
  int st = publish(c, send, count * dtype_bytes(t) * (size_t)(c ? c->nranks : 1),
                   t);
  if (st != SUCCESS)
    return st;
  reduce_slots(c, recv, (size_t)c->rank * count, count, t, op);
  return barrier(c);
}
