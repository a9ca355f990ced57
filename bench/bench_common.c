// bench_common.c - cuBLAS and the CUDA runtime through dlopen, seeded bf16 inputs, threaded float64 checks of sampled rows, CUDA-event timing (see bench_common.h).

#include "bench/bench_common.h"

#include "attn/attn.h"

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

//===-- Vendor libraries --===//

// cuBLAS and CUDA runtime constants (cublas_api.h, library_types.h,
// driver_types.h); this file includes no vendor header so it builds anywhere.
enum {
  CUBLAS_OP_N = 0,
  CUDA_R_16BF = 14,
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_GEMM_DEFAULT = -1,
  CUDA_STREAM_DEFAULT = 0,        // synchronizes with the legacy stream
  CUDA_EVENT_DISABLE_TIMING = 2,
};

#define WORKSPACE_BYTES (32u << 20)

struct symbol {
  const char *name;
  size_t offset;
  bool optional;
  bool cudart; // looked up in the CUDA runtime
};

#define RT(field, sym) {sym, offsetof(struct bench_vendor, field), false, true}
#define BL(field, sym) {sym, offsetof(struct bench_vendor, field), false, false}
#define BL_OPT(field, sym) {sym, offsetof(struct bench_vendor, field), true, false}
static const struct symbol symbols[] = {
    RT(SetDevice, "cudaSetDevice"),
    RT(StreamCreateWithFlags, "cudaStreamCreateWithFlags"),
    RT(StreamDestroy, "cudaStreamDestroy"),
    RT(EventCreateWithFlags, "cudaEventCreateWithFlags"),
    RT(EventDestroy, "cudaEventDestroy"),
    RT(EventRecord, "cudaEventRecord"),
    RT(StreamWaitEvent, "cudaStreamWaitEvent"),
    RT(GetErrorString, "cudaGetErrorString"),
    RT(RuntimeGetVersion, "cudaRuntimeGetVersion"),
    BL(Create, "cublasCreate_v2"),
    BL(Destroy, "cublasDestroy_v2"),
    BL(SetStream, "cublasSetStream_v2"),
    BL_OPT(SetWorkspace, "cublasSetWorkspace_v2"),
    BL(GetVersion, "cublasGetVersion_v2"),
    BL_OPT(GetStatusString, "cublasGetStatusString"),
    BL(GemmEx, "cublasGemmEx"),
};
#undef RT
#undef BL
#undef BL_OPT

static const char *rt_error(struct bench_vendor *v, int code) {
  const char *s = v->GetErrorString ? v->GetErrorString(code) : NULL;
  return s ? s : "unknown CUDA runtime error";
}

static const char *blas_error(struct bench_vendor *v, int code) {
  const char *s = v->GetStatusString ? v->GetStatusString(code) : NULL;
  return s ? s : "unknown cuBLAS status";
}

/// Opens cuBLAS from the candidates; fills v->cublas_path.
static bool open_cublas(struct bench_vendor *v, char *err, size_t errlen) {
  const char *env = getenv(BENCH_CUBLAS_ENV);
  const char *candidates[] = {env && *env ? env : NULL, "libcublas.so.13",
                              "libcublas.so.12", "libcublas.so"};
  char tried[512] = "";
  for (size_t i = 0; i < sizeof candidates / sizeof *candidates; ++i) {
    if (!candidates[i])
      continue;
    // Kept mapped: the CUDA runtime under it keeps threads and handlers.
    v->cublas_lib = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (v->cublas_lib) {
      snprintf(v->cublas_path, sizeof v->cublas_path, "%s", candidates[i]);
      return true;
    }
    const char *why = dlerror();
    size_t used = strlen(tried);
    snprintf(tried + used, sizeof tried - used, "%s%s (%s)", used ? "; " : "",
             candidates[i], why ? why : "not found");
  }
  set_err(err, errlen,
          "cannot load cuBLAS: %s; set %s to libcublas.so or add its folder "
          "to LD_LIBRARY_PATH",
          tried, BENCH_CUBLAS_ENV);
  return false;
}

/// Resolves symbols: cuBLAS's from its library, the runtime's through it
/// (dlsym on a handle searches its dependencies too) or from libcudart.
static bool resolve(struct bench_vendor *v, char *err, size_t errlen) {
  for (size_t i = 0; i < sizeof symbols / sizeof *symbols; ++i) {
    const struct symbol *s = &symbols[i];
    void *fn = dlsym(v->cublas_lib, s->name);
    if (!fn && s->cudart) {
      if (!v->cudart_lib) {
        const char *names[] = {"libcudart.so.13", "libcudart.so.12",
                               "libcudart.so"};
        for (size_t j = 0; j < 3 && !v->cudart_lib; ++j)
          v->cudart_lib =
              dlopen(names[j], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
      }
      if (v->cudart_lib)
        fn = dlsym(v->cudart_lib, s->name);
    }
    if (!fn && s->optional)
      continue;
    if (!fn) {
      set_err(err, errlen, "%s: no entry point %s%s", v->cublas_path, s->name,
              s->cudart ? " (nor in libcudart)" : "");
      return false;
    }
    // ISO C has no object-to-function pointer conversion; copy the bytes.
    memcpy((char *)v + s->offset, &fn, sizeof fn);
  }
  return true;
}

bool bench_vendor_open(struct bench_vendor *v, attnrt_runtime *rt, int device,
                       char *err, size_t errlen) {
  memset(v, 0, sizeof *v);
  v->rt = rt;
  if (!open_cublas(v, err, errlen) || !resolve(v, err, errlen))
    goto fail;
  int code = v->SetDevice(device);
  if (code != 0) {
    set_err(err, errlen, "cudaSetDevice(%d): %s", device, rt_error(v, code));
    goto fail;
  }
  v->RuntimeGetVersion(&v->cudart_version);
  code = v->Create(&v->handle);
  if (code != 0) {
    set_err(err, errlen, "cublasCreate: %s (status %d)", blas_error(v, code),
            code);
    v->handle = NULL;
    goto fail;
  }
  v->GetVersion(v->handle, &v->cublas_version);
  // The workspace torch gives cuBLAS on Hopper; without it cuBLAS may pick
  // kernels that need none.
  if (v->SetWorkspace &&
      attnrt_mem_alloc(rt, WORKSPACE_BYTES, &v->workspace) == ATTNRT_OK &&
      v->SetWorkspace(v->handle, (void *)(uintptr_t)v->workspace,
                      WORKSPACE_BYTES) != 0) {
    attnrt_mem_free(rt, v->workspace);
    v->workspace = 0;
  }
  return true;
fail:
  bench_vendor_close(v);
  return false;
}

void bench_vendor_close(struct bench_vendor *v) {
  if (v->handle && v->Destroy)
    v->Destroy(v->handle);
  v->handle = NULL;
  if (v->workspace && v->rt)
    attnrt_mem_free(v->rt, v->workspace);
  v->workspace = 0;
}

bool bench_stream_create(struct bench_vendor *v, attnrt_runtime *rt,
                         struct bench_stream *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  int code = v->StreamCreateWithFlags(&out->cu, CUDA_STREAM_DEFAULT);
  if (code != 0) {
    set_err(err, errlen, "cudaStreamCreateWithFlags: %s", rt_error(v, code));
    out->cu = NULL;
    return false;
  }
  enum attnrt_status st = attnrt_stream_wrap(rt, out->cu, &out->s);
  if (st != ATTNRT_OK) {
    bench_attnrt_error(err, errlen, "attnrt_stream_wrap", st, rt);
    v->StreamDestroy(out->cu);
    out->cu = NULL;
    return false;
  }
  return true;
}

void bench_stream_destroy(struct bench_vendor *v, struct bench_stream *s) {
  if (s->cu && v->stream == s->cu) {
    v->SetStream(v->handle, NULL); // the legacy stream, before s goes
    v->stream = NULL;
  }
  attnrt_stream_destroy(s->s);
  if (s->cu)
    v->StreamDestroy(s->cu);
  memset(s, 0, sizeof *s);
}

void *bench_event_create(struct bench_vendor *v, char *err, size_t errlen) {
  void *ev = NULL;
  int code = v->EventCreateWithFlags(&ev, CUDA_EVENT_DISABLE_TIMING);
  if (code != 0) {
    set_err(err, errlen, "cudaEventCreateWithFlags: %s", rt_error(v, code));
    return NULL;
  }
  return ev;
}

void bench_event_destroy(struct bench_vendor *v, void *ev) {
  if (ev)
    v->EventDestroy(ev);
}

bool bench_stream_wait(struct bench_vendor *v, struct bench_stream *waiter,
                       struct bench_stream *signaler, void *ev, char *err,
                       size_t errlen) {
  int code = v->EventRecord(ev, signaler->cu);
  if (code == 0)
    code = v->StreamWaitEvent(waiter->cu, ev, 0);
  if (code != 0) {
    set_err(err, errlen, "cudaEventRecord/cudaStreamWaitEvent: %s",
            rt_error(v, code));
    return false;
  }
  return true;
}

bool bench_cublas_gemm(struct bench_vendor *v, struct bench_stream *s,
                       attnrt_devptr a, attnrt_devptr b, attnrt_devptr c,
                       int64_t m, int64_t n, int64_t k, char *err,
                       size_t errlen) {
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) {
    set_err(err, errlen, "cublasGemmEx: %lldx%lldx%lld exceeds int sizes",
            (long long)m, (long long)n, (long long)k);
    return false;
  }
  int code = 0;
  if (v->stream != s->cu) {
    // cublasSetStream drops the workspace set before: set it again.
    code = v->SetStream(v->handle, s->cu);
    if (code == 0 && v->workspace)
      code = v->SetWorkspace(v->handle, (void *)(uintptr_t)v->workspace,
                             WORKSPACE_BYTES);
    if (code != 0) {
      set_err(err, errlen, "cublasSetStream/cublasSetWorkspace: %s",
              blas_error(v, code));
      return false;
    }
    v->stream = s->cu;
  }
  const float alpha = 1.0f, beta = 0.0f;
  // Row-major C = A B is column-major C^T = B^T A^T: the column-major
  // (n x k) B^T is B's memory with ld n, the (k x m) A^T is A's with ld k.
  code = v->GemmEx(v->handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k,
                   &alpha, (const void *)(uintptr_t)b, CUDA_R_16BF, (int)n,
                   (const void *)(uintptr_t)a, CUDA_R_16BF, (int)k, &beta,
                   (void *)(uintptr_t)c, CUDA_R_16BF, (int)n,
                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (code != 0) {
    set_err(err, errlen, "cublasGemmEx: %s (status %d)", blas_error(v, code),
            code);
    return false;
  }
  return true;
}

//===-- Seeded inputs --===//

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

static uint16_t float_to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  bits += 0x7fffu + ((bits >> 16) & 1u); // round to nearest even (finite f)
  return (uint16_t)(bits >> 16);
}

uint16_t bench_rand_bf16(uint64_t seed, uint32_t tensor, uint32_t rank,
                         uint64_t index) {
  uint64_t key = mix64(mix64(seed + 0x9e3779b97f4a7c15ull) ^
                       ((uint64_t)tensor << 32 | rank));
  uint64_t h = mix64(key ^ (index * 0x9e3779b97f4a7c15ull));
  float u = (float)((double)(h >> 40) / (double)(1u << 24) * 2.0 - 1.0);
  return float_to_bf16(u);
}

double bench_bf16_to_double(uint16_t bits) {
  uint32_t w = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &w, sizeof f);
  return (double)f;
}

int bench_threads(void) {
  const char *env = getenv("ATTN_BENCH_THREADS");
  long n = env && *env ? strtol(env, NULL, 10) : 0;
  if (n <= 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const char *lw = getenv("LOCAL_WORLD_SIZE");
    long share = lw && *lw ? strtol(lw, NULL, 10) : 1;
    n = (cpus > 0 ? cpus : 1) / (share > 0 ? share : 1);
  }
  return n < 1 ? 1 : n > 32 ? 32 : (int)n;
}

/// A pool that hands out items [0, count) to threads calling fn(user, item).
struct pool {
  pthread_mutex_t lock;
  int64_t next, count;
  void (*fn)(void *user, int64_t item);
  void *user;
};

static void *pool_worker(void *arg) {
  struct pool *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->lock);
    int64_t item = p->next < p->count ? p->next++ : -1;
    pthread_mutex_unlock(&p->lock);
    if (item < 0)
      return NULL;
    p->fn(p->user, item);
  }
}

/// Runs fn(user, i) for i < count on up to bench_threads() threads (the
/// calling one included).
static void parallel_for(int64_t count, void (*fn)(void *, int64_t),
                         void *user) {
  struct pool p = {.next = 0, .count = count, .fn = fn, .user = user};
  pthread_mutex_init(&p.lock, NULL);
  int threads = bench_threads();
  if (threads > count)
    threads = (int)(count > 0 ? count : 1);
  pthread_t ids[32];
  int started = 0;
  for (int t = 1; t < threads; ++t)
    if (pthread_create(&ids[started], NULL, pool_worker, &p) == 0)
      ++started;
  pool_worker(&p);
  for (int t = 0; t < started; ++t)
    pthread_join(ids[t], NULL);
  pthread_mutex_destroy(&p.lock);
}

struct fill_job {
  uint16_t *host;
  size_t count;
  uint64_t seed;
  uint32_t tensor, rank;
};

#define FILL_CHUNK (1u << 20)

static void fill_chunk(void *user, int64_t item) {
  struct fill_job *j = user;
  size_t first = (size_t)item * FILL_CHUNK;
  size_t last = first + FILL_CHUNK < j->count ? first + FILL_CHUNK : j->count;
  for (size_t i = first; i < last; ++i)
    j->host[i] = bench_rand_bf16(j->seed, j->tensor, j->rank, i);
}

void bench_fill_bf16(uint16_t *host, size_t count, uint64_t seed,
                     uint32_t tensor, uint32_t rank) {
  struct fill_job j = {host, count, seed, tensor, rank};
  parallel_for((int64_t)((count + FILL_CHUNK - 1) / FILL_CHUNK), fill_chunk,
               &j);
}

static int compare_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

void bench_sample_rows(uint64_t seed, int count, int64_t limit, int64_t *rows) {
  int have = 0;
  if (count > 0)
    rows[have++] = 0;
  if (count > 1 && limit > 1)
    rows[have++] = limit - 1;
  uint64_t state = mix64(seed ^ 0x5a3b1e5d0c7f2a91ull);
  while (have < count && have < limit) {
    state = mix64(state + 0x9e3779b97f4a7c15ull);
    int64_t r = (int64_t)(state % (uint64_t)limit);
    bool seen = false;
    for (int i = 0; i < have && !seen; ++i)
      seen = rows[i] == r;
    if (!seen)
      rows[have++] = r;
  }
  qsort(rows, (size_t)have, sizeof *rows, compare_i64);
}

//===-- Checks --===//

void bench_check_add(struct bench_check *c, const uint16_t *got,
                     const double *want, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    double g = bench_bf16_to_double(got[i]), w = want[i];
    c->count++;
    c->sum_r2 += w * w;
    if (!isfinite(g)) {
      c->nonfinite++;
      continue;
    }
    double d = fabs(g - w);
    c->sum_d2 += d * d;
    if (d > c->max_abs)
      c->max_abs = d;
  }
}

static void check_merge(struct bench_check *into, const struct bench_check *c) {
  into->sum_d2 += c->sum_d2;
  into->sum_r2 += c->sum_r2;
  if (c->max_abs > into->max_abs)
    into->max_abs = c->max_abs;
  into->count += c->count;
  into->nonfinite += c->nonfinite;
}

double bench_check_rel_l2(const struct bench_check *c) {
  if (c->nonfinite)
    return INFINITY;
  if (c->sum_r2 > 0)
    return sqrt(c->sum_d2 / c->sum_r2);
  return c->sum_d2 > 0 ? INFINITY : 0.0;
}

double bench_check_max_rel(const struct bench_check *c) {
  if (c->nonfinite)
    return INFINITY;
  double rms = c->count ? sqrt(c->sum_r2 / (double)c->count) : 0.0;
  if (rms > 0)
    return c->max_abs / rms;
  return c->max_abs > 0 ? INFINITY : 0.0;
}

bool bench_check_pass(const struct bench_check *c) {
  return c->count > 0 && c->nonfinite == 0 &&
         bench_check_rel_l2(c) <= BENCH_TOL_REL_L2 &&
         bench_check_max_rel(c) <= BENCH_TOL_MAX_REL;
}

/// Columns per reference block: B's block for one rank is k x 64 doubles
/// (4 MiB at k = 8192), so a worker's blocks stay in its caches.
#define REF_BLOCK 64

struct ref_job {
  const struct bench_ref_check *r;
  pthread_mutex_t lock;
  struct bench_check total;
  bool failed;
  char err[256];
};

static void ref_block(void *user, int64_t item) {
  struct ref_job *job = user;
  const struct bench_ref_check *r = job->r;
  const struct attn_comm_ref_problem *full = &r->problem;
  int world = full->world;
  int64_t k = full->k, n = full->n;
  int64_t j0 = item * REF_BLOCK;
  int64_t nb = n - j0 < REF_BLOCK ? n - j0 : REF_BLOCK;
  int64_t out_rows = attn_comm_ref_out_rows(full);
  struct attn_comm_ref_problem p = *full;
  p.n = nb;
  double *bblk = malloc((size_t)(world * k * nb) * sizeof *bblk);
  double *oblk = malloc((size_t)(world * out_rows * nb) * sizeof *oblk);
  const double *bptr[64];
  double *optr[64];
  char err[256] = "";
  bool ok = bblk && oblk && world <= 64;
  if (ok) {
    for (int q = 0; q < world; ++q) {
      double *bq = bblk + (size_t)(q * k * nb);
      for (int64_t l = 0; l < k; ++l)
        for (int64_t j = 0; j < nb; ++j)
          bq[l * nb + j] = bench_bf16_to_double(bench_rand_bf16(
              r->seed, r->b_tensor, (uint32_t)r->b_rank[q],
              (uint64_t)(l * n + j0 + j)));
      bptr[q] = bq;
      optr[q] = oblk + (size_t)(q * out_rows * nb);
    }
    ok = attn_comm_reference(&p, r->a, bptr, NULL, optr, err, sizeof err);
  } else {
    snprintf(err, sizeof err, "out of memory for the reference block");
  }
  struct bench_check c = {0};
  if (ok) {
    const double *want = optr[r->out_slot];
    for (int64_t i = 0; i < out_rows; ++i) {
      if (r->got)
        bench_check_add(&c, r->got + i * n + j0, want + i * nb, (size_t)nb);
      if (r->want) // disjoint columns per block: no lock needed
        memcpy(r->want + i * n + j0, want + i * nb, (size_t)nb * sizeof *want);
    }
  }
  pthread_mutex_lock(&job->lock);
  check_merge(&job->total, &c);
  if (!ok && !job->failed) {
    job->failed = true;
    snprintf(job->err, sizeof job->err, "%s", err);
  }
  pthread_mutex_unlock(&job->lock);
  free(bblk);
  free(oblk);
}

bool bench_ref_check_run(const struct bench_ref_check *r,
                         struct bench_check *result, char *err, size_t errlen) {
  memset(result, 0, sizeof *result);
  if (r->problem.world < 1 || r->problem.world > 64 || r->out_slot < 0 ||
      r->out_slot >= r->problem.world || attn_comm_ref_out_rows(&r->problem) < 1) {
    set_err(err, errlen, "malformed reference problem");
    return false;
  }
  struct ref_job job = {.r = r};
  pthread_mutex_init(&job.lock, NULL);
  parallel_for((r->problem.n + REF_BLOCK - 1) / REF_BLOCK, ref_block, &job);
  pthread_mutex_destroy(&job.lock);
  if (job.failed) {
    set_err(err, errlen, "float64 reference: %s", job.err);
    return false;
  }
  *result = job.total;
  return true;
}

//===-- Timing --===//

bool bench_time(attnrt_runtime *rt, attnrt_stream *s, bench_step_fn step,
                bench_step_fn between, bench_step_fn finish, void *user,
                int warmup, int iters, float *ms, char *err, size_t errlen) {
  bool ok = true;
  enum attnrt_status st = ATTNRT_OK;
  attnrt_event **ev = calloc((size_t)(2 * iters), sizeof *ev);
  if (!ev) {
    set_err(err, errlen, "out of host memory");
    return false;
  }
  for (int i = 0; i < 2 * iters && ok; ++i)
    if ((st = attnrt_event_create(rt, &ev[i])) != ATTNRT_OK) {
      bench_attnrt_error(err, errlen, "attnrt_event_create", st, rt);
      ok = false;
    }
  for (int i = 0; i < warmup && ok; ++i)
    ok = (!between || between(user, err, errlen)) && step(user, err, errlen);
  for (int i = 0; i < iters && ok; ++i) {
    ok = !between || between(user, err, errlen);
    if (ok && (st = attnrt_event_record(ev[2 * i], s)) != ATTNRT_OK) {
      bench_attnrt_error(err, errlen, "attnrt_event_record", st, rt);
      ok = false;
    }
    ok = ok && step(user, err, errlen);
    if (ok && (st = attnrt_event_record(ev[2 * i + 1], s)) != ATTNRT_OK) {
      bench_attnrt_error(err, errlen, "attnrt_event_record", st, rt);
      ok = false;
    }
  }
  if (ok) {
    if (finish)
      ok = finish(user, err, errlen);
    else if ((st = attnrt_stream_synchronize(s)) != ATTNRT_OK) {
      bench_attnrt_error(err, errlen, "attnrt_stream_synchronize", st, rt);
      ok = false;
    }
  }
  for (int i = 0; i < iters && ok; ++i)
    if ((st = attnrt_event_elapsed_ms(ev[2 * i], ev[2 * i + 1], &ms[i])) !=
        ATTNRT_OK) {
      bench_attnrt_error(err, errlen, "attnrt_event_elapsed_ms", st, rt);
      ok = false;
    }
  for (int i = 0; i < 2 * iters; ++i)
    attnrt_event_destroy(ev[i]);
  free(ev);
  return ok;
}

static int compare_float(const void *x, const void *y) {
  float a = *(const float *)x, b = *(const float *)y;
  return (a > b) - (a < b);
}

void bench_stats_of(const float *ms, int n, struct bench_stats *out) {
  memset(out, 0, sizeof *out);
  if (n <= 0)
    return;
  float *sorted = malloc((size_t)n * sizeof *sorted);
  if (!sorted)
    return;
  memcpy(sorted, ms, (size_t)n * sizeof *sorted);
  qsort(sorted, (size_t)n, sizeof *sorted, compare_float);
  out->median = n % 2 ? sorted[n / 2]
                      : 0.5 * ((double)sorted[n / 2 - 1] + sorted[n / 2]);
  out->min = sorted[0];
  out->max = sorted[n - 1];
  double sum = 0;
  for (int i = 0; i < n; ++i)
    sum += sorted[i];
  out->mean = sum / n;
  free(sorted);
}

//===-- Small helpers --===//

bool bench_parse_shape(const char *text, int64_t *m, int64_t *n, int64_t *k) {
  long long v[3];
  char *end = NULL;
  const char *p = text;
  for (int i = 0; i < 3; ++i) {
    v[i] = strtoll(p, &end, 10);
    if (end == p || v[i] <= 0 || v[i] > (1ll << 20))
      return false;
    if (i < 2 && *end != 'x')
      return false;
    p = end + (i < 2);
  }
  if (*end)
    return false;
  *m = v[0];
  *n = v[1];
  *k = v[2];
  return true;
}

const char *bench_flag_value(const char *arg, const char *name) {
  size_t len = strlen(name);
  if (strncmp(arg, name, len) == 0 && arg[len] == '=')
    return arg + len + 1;
  return NULL;
}

bool bench_parse_int(const char *text, long min, long max, long *out) {
  char *end = NULL;
  long v = strtol(text, &end, 10);
  if (end == text || *end || v < min || v > max)
    return false;
  *out = v;
  return true;
}

void bench_utc_date(char *buf, size_t len) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(buf, len, "%Y-%m-%d %H:%M UTC", &tm);
}

void bench_attnrt_error(char *err, size_t errlen, const char *what,
                        enum attnrt_status st, const attnrt_runtime *rt) {
  const char *msg = attnrt_last_error(rt);
  if ((!msg || !*msg) && rt)
    msg = attnrt_last_error(NULL);
  set_err(err, errlen, "%s: %s%s%s", what, attnrt_status_string(st),
          msg && *msg ? ": " : "", msg ? msg : "");
}

void bench_first_error(void *user, int severity, const char *file, int line,
                       int col, const char *message) {
  char *first = user;
  if (severity != ATTN_SEVERITY_ERROR || first[0])
    return;
  if (file)
    snprintf(first, BENCH_DIAG_LEN, "%s:%d:%d: %s", file, line, col, message);
  else
    snprintf(first, BENCH_DIAG_LEN, "%s", message);
}

bool bench_parse_common_flag(const char *arg,
                             const struct bench_common_flags *f, bool *ok) {
  const char *v;
  if ((v = bench_flag_value(arg, "--iters")))
    *ok = bench_parse_int(v, 1, f->max_iters, f->iters);
  else if ((v = bench_flag_value(arg, "--warmup")))
    *ok = bench_parse_int(v, 0, f->max_iters, f->warmup);
  else if ((v = bench_flag_value(arg, "--cooldown-ms")))
    *ok = bench_parse_int(v, 0, 60000, f->cooldown_ms);
  else if ((v = bench_flag_value(arg, "--check-rows")))
    *ok = bench_parse_int(v, 1, f->max_check_rows, f->check_rows);
  else if ((v = bench_flag_value(arg, "--seed")))
    *ok = bench_parse_int(v, 0, 1L << 30, f->seed);
  else if ((v = bench_flag_value(arg, "--json")))
    *ok = (*f->json_path = v) != NULL;
  else
    return false;
  return true;
}

void bench_cooldown(long ms) {
  struct timespec rest = {ms / 1000, (ms % 1000) * 1000000L};
  while (ms > 0 && nanosleep(&rest, &rest) != 0)
    ; // interrupted by a signal: sleep the rest
}

double bench_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

bool bench_parse_shapes(const char *text, int64_t (*shapes)[3], int max,
                        int *n) {
  *n = 0;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", text);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    if (*n == max)
      return false;
    int64_t *s = shapes[(*n)++];
    if (!bench_parse_shape(tok, &s[0], &s[1], &s[2]))
      return false;
  }
  return *n > 0;
}

