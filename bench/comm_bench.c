// comm_bench.c - GEMM + collective on several GPUs, one process per GPU: cuBLAS + NCCL sequential, on two streams, on NCCL symmetric buffers, and attn's fused kernel (comm_fused.h), each checked against float64 before it is timed.
//
// Launched like torchrun: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and
// MASTER_PORT in each process's environment (attnrt_comm_init_from_env);
// bench/run_comm_bench.sh starts RANKS of them (2 by default). For each
// shape M x N x K (one rank's GEMM, as the anchors define it:
// notes/anchors-h200.md, B4) and pattern, bf16 with f32 accumulation:
//   gemm+allreduce      C = A B, then all_reduce(C) in place       [M, N]
//   allgather+gemm      all_gather A's shards (M/W x K each), then A B
//   gemm+reducescatter  C = A B, then reduce_scatter(C)            [M/W, N]
// it measures
//   gemm, comm          each alone
//   sequential          the GEMM then the collective on one stream
//   two_stream          the anchors' '2-stream': the collective on a side
//                       stream (on independent buffers) while the GEMM runs
//                       on the main stream
//   ideal               max(gemm, comm)
//   nccl_symmetric      sequential on buffers from attnrt_comm_buffer_alloc
//                       (NCCL symmetric windows): the fused variant's path
//   attn_fused          attn's fused kernel (comm_fused.c); "not built" for
//                       a shape it does not take
// Inputs differ per rank (seeded, uniform in [-1, 1)); each rank rebuilds
// its peers' inputs to check sampled rows of its own result against
// lib/Reference (attn_comm_reference) with bench_common.h's tolerance, on a
// NaN-poisoned output, before anything is timed; the ranks agree on the
// verdict. Timing: a barrier (a one-element all_reduce on the main stream)
// before each iteration, CUDA events around it, median per rank, then the
// max over ranks (the anchors' convention). Rank 0 prints markdown and
// writes JSON (after every pattern, so a later failure keeps earlier rows).
//
// Exit status: 0 when every variant that ran passed its check; 1 on a
// failed check or any CUDA / NCCL / cuBLAS failure (the communicator is
// aborted; nothing waits longer than ATTN_COMM_TIMEOUT_S); 2 for bad
// options. NVLink multicast stays off: NCCL_NVLS_ENABLE=0 is forced.

#include "bench/comm_bench.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct bench *fatal_bench; // for fatal(): the one bench of main

const char *const pattern_names[NPATTERNS] = {
    "gemm+allreduce", "allgather+gemm", "gemm+reducescatter"};
const char *const variant_names[NVARIANTS] = {
    "gemm", "comm", "sequential", "two_stream", "nccl_symmetric", "attn_fused"};

void fatal(const char *fmt, ...) {
  struct bench *b = fatal_bench;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "comm_bench rank %d: error: ", b ? b->rank : -1);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  fflush(stderr);
  if (b && b->rank == 0 && b->nresults)
    write_results(b);
  if (b)
    attnrt_comm_abort(b->comm);
  // Not exit(): after a failed kernel the CUDA context is dead, and NCCL's
  // exit-time teardown on it crashed (seen on two H200s).
  fflush(stdout);
  fflush(stderr);
  _exit(1);
}

void check_rt(struct bench *b, enum attnrt_status st, const char *what) {
  if (st == ATTNRT_OK)
    return;
  char err[600];
  bench_attnrt_error(err, sizeof err, what, st, b->rt);
  fatal("%s", err);
}

//===-- Options --===//

static void usage(FILE *f) {
  fprintf(f,
          "usage: comm_bench [options]   (one process per GPU, torchrun's "
          "variables set)\n"
          "GEMM + AllReduce, AllGather + GEMM, GEMM + ReduceScatter in bf16: "
          "cuBLAS + NCCL\nsequential and on two streams, each alone, on NCCL "
          "symmetric buffers, and attn's\nfused kernel (bench/comm_fused.c), "
          "each checked against float64 on sampled rows,\nthen timed (a "
          "barrier before each iteration, CUDA events, median per rank, "
          "max\nover ranks). Rank 0 prints markdown and writes JSON.\n\n"
          "  --shapes=MxNxK[,...]  one rank's GEMM (default " DEFAULT_SHAPES
          ")\n"
          "  --patterns=LIST   allreduce,allgather,reducescatter (default "
          "all)\n"
          "  --iters=N         timed iterations per variant (default 30)\n"
          "  --warmup=N        untimed iterations first (default 10)\n"
          "  --cooldown-ms=N   idle time before each variant's warm-up, so that\n"
          "                    every variant starts at the same clocks (default\n"
          "                    1000; the H200s lower theirs under sustained load)\n"
          "  --check-rows=N    rows compared with float64 (default 8)\n"
          "  --seed=N          input seed (default 1234)\n"
          "  --json=PATH       rank 0's results (default "
          "$OUT/comm_bench.json, else ./comm_bench.json)\n"
          "  --no-symmetric    skip the NCCL symmetric-buffer variant\n"
          "  --no-fused        skip the fused variant\n"
          "  --rounds=N        then time the fused variant and the sequential "
          "one again in\n                    turn, N rounds (fused first in "
          "even ones; default 2; 0:\n                    each once, in the "
          "fixed order)\n"
          "  --help            this text\n\n"
          "Environment: RANK, WORLD_SIZE (>= 2), LOCAL_RANK, MASTER_ADDR, "
          "MASTER_PORT;\nATTN_COMM_TIMEOUT_S (seconds any wait for a peer "
          "lasts), ATTN_CUBLAS_LIBRARY,\nATTNRT_NCCL_LIBRARY, "
          "ATTNRT_CUDA_LIBRARY, ATTN_BENCH_THREADS, LOCAL_WORLD_SIZE.\n");
}

static bool parse_patterns(const char *text, struct options *o) {
  static const char *const short_names[NPATTERNS] = {"allreduce", "allgather",
                                                     "reducescatter"};
  memset(o->pattern, 0, sizeof o->pattern);
  char buf[256];
  snprintf(buf, sizeof buf, "%s", text);
  bool any = false;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    bool found = false;
    for (int p = 0; p < NPATTERNS; ++p)
      if (strcmp(tok, short_names[p]) == 0 ||
          strcmp(tok, pattern_names[p]) == 0)
        found = o->pattern[p] = true;
    if (!found)
      return false;
    any = true;
  }
  return any;
}

/// Parses argv into o; returns 0, or 1 after --help, or 2 on a bad option.
static int parse_options(int argc, char **argv, struct options *o) {
  memset(o, 0, sizeof *o);
  o->iters = 30;
  o->warmup = 10;
  o->cooldown_ms = 1000;
  o->check_rows = 8;
  o->seed = 1234;
  o->rounds = 2;
  o->symmetric = o->fused = true;
  for (int p = 0; p < NPATTERNS; ++p)
    o->pattern[p] = true;
  bench_parse_shapes(DEFAULT_SHAPES, o->shape, MAX_SHAPES, &o->nshapes);
  const struct bench_common_flags common = {
      &o->iters, &o->warmup, &o->cooldown_ms, &o->check_rows, &o->seed,
      &o->json_path, 10000, 1024};
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *v;
    bool ok = true;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 1;
    } else if (bench_parse_common_flag(a, &common, &ok)) {
      // stored, or not ok
    } else if ((v = bench_flag_value(a, "--shapes")))
      ok = bench_parse_shapes(v, o->shape, MAX_SHAPES, &o->nshapes);
    else if ((v = bench_flag_value(a, "--patterns")))
      ok = parse_patterns(v, o);
    else if ((v = bench_flag_value(a, "--rounds")))
      ok = bench_parse_int(v, 0, MAX_ROUNDS, &o->rounds);
    else if (strcmp(a, "--no-symmetric") == 0)
      o->symmetric = false;
    else if (strcmp(a, "--no-fused") == 0)
      o->fused = false;
    else
      ok = false;
    if (!ok) {
      fprintf(stderr, "comm_bench: bad option '%s' (see --help)\n", a);
      return 2;
    }
  }
  return 0;
}

//===-- Queued steps --===//

static void gemm(struct bench *b, attnrt_devptr a, attnrt_devptr bm,
                 attnrt_devptr c) {
  char err[600];
  if (!bench_cublas_gemm(&b->vendor, &b->main, a, bm, c, b->m, b->n, b->k,
                         err, sizeof err))
    fatal("%s", err);
}

/// Queues the pattern's collective from in to out on s; false with a
/// message in err.
static enum attnrt_status collective(struct bench *b, attnrt_devptr in,
                                     attnrt_devptr out, attnrt_stream *s) {
  size_t w = (size_t)b->world;
  switch (b->pattern) {
  case COMM_GEMM_ALL_REDUCE:
    return attnrt_comm_all_reduce(b->comm, in, out, (size_t)(b->m * b->n),
                                  ATTNRT_COMM_BF16, ATTNRT_COMM_SUM, s);
  case COMM_ALL_GATHER_GEMM:
    return attnrt_comm_all_gather(b->comm, in, out,
                                  (size_t)(b->m * b->k) / w, ATTNRT_COMM_BF16,
                                  s);
  case COMM_GEMM_REDUCE_SCATTER:
    return attnrt_comm_reduce_scatter(b->comm, in, out,
                                      (size_t)(b->m * b->n) / w,
                                      ATTNRT_COMM_BF16, ATTNRT_COMM_SUM, s);
  }
  return ATTNRT_ERR_INVALID_ARGUMENT;
}

static void coll(struct bench *b, attnrt_devptr in, attnrt_devptr out,
                 attnrt_stream *s) {
  check_rt(b, collective(b, in, out, s), pattern_names[b->pattern]);
}

/// The GEMM's A: the gathered A for allgather+gemm.
attnrt_devptr gemm_a(struct bench *b) {
  return b->pattern == COMM_ALL_GATHER_GEMM ? b->d.a_full : b->d.a;
}

static bool step_gemm(void *user, char *err, size_t len) {
  struct bench *b = user;
  gemm(b, gemm_a(b), b->d.b, b->d.c);
  return true;
}

static bool step_comm(void *user, char *err, size_t len) {
  struct bench *b = user;
  switch (b->pattern) {
  case COMM_GEMM_ALL_REDUCE:
    coll(b, b->d.c, b->d.c, b->main.s);
    break;
  case COMM_ALL_GATHER_GEMM:
    coll(b, b->d.a_sh, b->d.a_full, b->main.s);
    break;
  case COMM_GEMM_REDUCE_SCATTER:
    coll(b, b->d.c, b->d.c_sh, b->main.s);
    break;
  }
  return true;
}

static bool step_seq(void *user, char *err, size_t len) {
  struct bench *b = user;
  if (b->pattern == COMM_ALL_GATHER_GEMM) {
    step_comm(b, err, len);
    step_gemm(b, err, len);
  } else {
    step_gemm(b, err, len);
    step_comm(b, err, len);
  }
  return true;
}

/// The anchors' '2-stream': the collective on the side stream, on buffers
/// of its own, concurrent with the GEMM on the main stream.
static bool step_two(void *user, char *unused, size_t unused_len) {
  struct bench *b = user;
  char err[600] = "";
  if (!bench_stream_wait(&b->vendor, &b->side, &b->main, b->ev_fork, err,
                         sizeof err))
    fatal("%s", err);
  switch (b->pattern) {
  case COMM_GEMM_ALL_REDUCE:
    coll(b, b->d.x, b->d.x, b->side.s);
    break;
  case COMM_ALL_GATHER_GEMM:
    coll(b, b->d.a_sh, b->d.a_full2, b->side.s);
    break;
  case COMM_GEMM_REDUCE_SCATTER:
    coll(b, b->d.x, b->d.c_sh2, b->side.s);
    break;
  }
  gemm(b, gemm_a(b), b->d.b, b->d.c2);
  if (!bench_stream_wait(&b->vendor, &b->main, &b->side, b->ev_join, err,
                         sizeof err))
    fatal("%s", err);
  return true;
}

//===-- Variants behind comm_fused.h's interface --===//

struct variant_ops {
  enum attnrt_status (*prepare)(struct bench *b,
                                const struct comm_fused_problem *p,
                                void **state, size_t *work_bytes, char *why,
                                size_t len);
  enum attnrt_status (*run)(struct bench *b, void *state,
                            const struct comm_fused_buffers *bufs,
                            attnrt_stream *s, char *why, size_t len);
  void (*release)(void *state);
};

static enum attnrt_status fused_prepare(struct bench *b,
                                        const struct comm_fused_problem *p,
                                        void **state, size_t *work_bytes,
                                        char *why, size_t len) {
  struct comm_fused *f = NULL;
  enum attnrt_status st = comm_fused_prepare(p, &f, work_bytes, why, len);
  *state = f;
  return st;
}

static enum attnrt_status fused_run(struct bench *b, void *state,
                                    const struct comm_fused_buffers *bufs,
                                    attnrt_stream *s, char *why, size_t len) {
  return comm_fused_run(state, bufs, s, why, len);
}

static void fused_release(void *state) { comm_fused_release(state); }

static const struct variant_ops fused_ops = {fused_prepare, fused_run,
                                             fused_release};

/// NCCL symmetric baseline: cuBLAS + NCCL on symmetric windows; the work
/// buffer holds the gathered A (allgather) or the product (reducescatter).
static enum attnrt_status sym_prepare(struct bench *b,
                                      const struct comm_fused_problem *p,
                                      void **state, size_t *work_bytes,
                                      char *why, size_t len) {
  *state = NULL;
  *work_bytes = p->pattern == COMM_ALL_GATHER_GEMM ? (size_t)(p->m * p->k) * 2
                : p->pattern == COMM_GEMM_REDUCE_SCATTER
                    ? (size_t)(p->m * p->n) * 2
                    : 0;
  return ATTNRT_OK;
}

static enum attnrt_status sym_run(struct bench *b, void *state,
                                  const struct comm_fused_buffers *bufs,
                                  attnrt_stream *s, char *why, size_t len) {
  attnrt_devptr a = attnrt_comm_buffer_ptr(bufs->a);
  attnrt_devptr bm = attnrt_comm_buffer_ptr(bufs->b);
  attnrt_devptr out = attnrt_comm_buffer_ptr(bufs->out);
  attnrt_devptr work = attnrt_comm_buffer_ptr(bufs->work);
  enum attnrt_status st = ATTNRT_OK;
  switch (b->pattern) {
  case COMM_GEMM_ALL_REDUCE:
    gemm(b, a, bm, out);
    st = collective(b, out, out, s);
    break;
  case COMM_ALL_GATHER_GEMM:
    st = collective(b, a, work, s);
    gemm(b, work, bm, out);
    break;
  case COMM_GEMM_REDUCE_SCATTER:
    gemm(b, a, bm, work);
    st = collective(b, work, out, s);
    break;
  }
  if (st != ATTNRT_OK)
    bench_attnrt_error(why, len, pattern_names[b->pattern], st, b->rt);
  return st;
}

static void sym_release(void *state) {}

static const struct variant_ops sym_ops = {sym_prepare, sym_run, sym_release};

static bool step_variant(void *user, char *err, size_t len) {
  struct bench *b = user;
  return b->ops->run(b, b->state, &b->sym, b->main.s, err, len) == ATTNRT_OK;
}

//===-- Synchronization across ranks --===//

static bool step_barrier(void *user, char *err, size_t len) {
  struct bench *b = user;
  check_rt(b,
           attnrt_comm_all_reduce(b->comm, b->barrier, b->barrier, 1,
                                  ATTNRT_COMM_F32, ATTNRT_COMM_SUM, b->main.s),
           "barrier all_reduce");
  return true;
}

static bool step_finish(void *user, char *err, size_t len) {
  struct bench *b = user;
  check_rt(b, attnrt_comm_wait(b->comm, b->main.s), "attnrt_comm_wait");
  return true;
}

/// Replaces vals[0..n) by their maximum over the ranks.
void agree_max(struct bench *b, double *vals, int n) {
  check_rt(b, attnrt_memcpy_htod(b->rt, b->agree, vals, (size_t)n * 8, NULL),
           "attnrt_memcpy_htod");
  check_rt(b,
           attnrt_comm_all_reduce(b->comm, b->agree, b->agree, (size_t)n,
                                  ATTNRT_COMM_F64, ATTNRT_COMM_MAX, b->main.s),
           "attnrt_comm_all_reduce (agree)");
  step_finish(b, NULL, 0);
  check_rt(b, attnrt_memcpy_dtoh(b->rt, vals, b->agree, (size_t)n * 8, NULL),
           "attnrt_memcpy_dtoh");
}

//===-- Timing --===//

/// Times step (barrier before each iteration) and fills r from every rank's
/// timings.
static void time_variant(struct bench *b, bench_step_fn step,
                         struct variant_result *r) {
  int iters = (int)b->o->iters, w = b->world;
  float *ms = malloc((size_t)(w + 1) * (size_t)iters * sizeof *ms);
  if (!ms)
    fatal("out of host memory");
  char err[600] = "";
  // The GPUs idle first: timed back to back, each variant would start as hot
  // as the last one left them, and the H200s' clocks step down under
  // sustained load (a fused kernel measured 1.62 ms for 19 iterations, then
  // 1.81), which favoured whichever variant ran first. The per-iteration
  // barriers line the ranks up again afterwards.
  step_finish(b, NULL, 0);
  bench_cooldown(b->o->cooldown_ms);
  if (!bench_time(b->rt, b->main.s, step, step_barrier, step_finish, b,
                  (int)b->o->warmup, iters, ms, err, sizeof err))
    fatal("%s", err);
  // Every rank's timings to every rank: the send slice sits after the
  // gathered ones.
  attnrt_devptr send = b->times + (attnrt_devptr)((size_t)w * (size_t)iters * 4);
  check_rt(b, attnrt_memcpy_htod(b->rt, send, ms, (size_t)iters * 4, NULL),
           "attnrt_memcpy_htod");
  check_rt(b,
           attnrt_comm_all_gather(b->comm, send, b->times, (size_t)iters,
                                  ATTNRT_COMM_F32, b->main.s),
           "attnrt_comm_all_gather (timings)");
  step_finish(b, NULL, 0);
  check_rt(b,
           attnrt_memcpy_dtoh(b->rt, ms, b->times,
                              (size_t)w * (size_t)iters * 4, NULL),
           "attnrt_memcpy_dtoh");
  r->ms = 0;
  r->ms_min = INFINITY;
  for (int q = 0; q < w; ++q) {
    struct bench_stats st;
    bench_stats_of(ms + (size_t)q * (size_t)iters, iters, &st);
    r->ms_rank[q] = st.median;
    r->ms = fmax(r->ms, st.median);
    r->ms_min = fmin(r->ms_min, st.min);
  }
  float *aligned = ms + (size_t)w * (size_t)iters; // the send slice, reused
  for (int i = 0; i < iters; ++i) {
    float mx = 0;
    for (int q = 0; q < w; ++q)
      mx = fmaxf(mx, ms[(size_t)q * (size_t)iters + (size_t)i]);
    aligned[i] = mx;
  }
  r->nsamples = iters < MAX_SAMPLES ? iters : MAX_SAMPLES;
  memcpy(r->samples, aligned, (size_t)r->nsamples * sizeof *aligned);
  struct bench_stats st;
  bench_stats_of(aligned, iters, &st);
  r->ms_aligned = st.median;
  r->timed = true;
  r->status = "ok";
  free(ms);
}

/// Adds round result t to the rounds in r (first: r starts over).
static void add_round(struct variant_result *r, const struct variant_result *t,
                      int world, bool first) {
  if (first) { // its check stays
    r->timed = t->timed;
    r->status = t->status;
    r->nsamples = r->nrounds = 0;
    r->ms = r->ms_aligned = 0;
    r->ms_min = INFINITY;
    for (int q = 0; q < world; ++q)
      r->ms_rank[q] = 0;
  }
  r->round_ms[r->nrounds++] = t->ms;
  r->ms += t->ms;
  r->ms_aligned += t->ms_aligned;
  r->ms_min = fmin(r->ms_min, t->ms_min);
  for (int q = 0; q < world; ++q)
    r->ms_rank[q] += t->ms_rank[q];
  for (int i = 0; i < t->nsamples && r->nsamples < MAX_SAMPLES; ++i)
    r->samples[r->nsamples++] = t->samples[i];
}

static void end_rounds(struct variant_result *r, int world) {
  r->ms /= r->nrounds;
  r->ms_aligned /= r->nrounds;
  for (int q = 0; q < world; ++q)
    r->ms_rank[q] /= r->nrounds;
}

/// Times the fused variant (step_variant, b->ops set) and the sequential
/// baseline again, o->rounds rounds that take them in turn (fused first in
/// even rounds, sequential in odd ones), so that the one timed last does
/// not always meet GPUs the other has just warmed; replaces both results'
/// timings with the rounds'.
static void time_in_turn(struct bench *b, struct variant_result *fused,
                         struct variant_result *seq) {
  struct variant_result t;
  for (int round = 0; round < b->o->rounds; ++round)
    for (int j = 0; j < 2; ++j) {
      bool f = bench_in_turn(round, j) == 0;
      memset(&t, 0, sizeof t);
      time_variant(b, f ? step_variant : step_seq, &t);
      add_round(f ? fused : seq, &t, b->world, round == 0);
    }
  end_rounds(fused, b->world);
  end_rounds(seq, b->world);
}

//===-- One shape --===//

static attnrt_devptr alloc(struct bench *b, size_t bytes) {
  attnrt_devptr p = 0;
  check_rt(b, attnrt_mem_alloc(b->rt, bytes, &p), "attnrt_mem_alloc");
  return p;
}

static void upload(struct bench *b, attnrt_devptr dst, const uint16_t *src,
                   size_t count) {
  check_rt(b, attnrt_memcpy_htod(b->rt, dst, src, count * 2, NULL),
           "attnrt_memcpy_htod");
}

static uint16_t *seeded(struct bench *b, uint32_t tensor, size_t count) {
  uint16_t *h = malloc(count * 2);
  if (!h)
    fatal("out of host memory for %zu inputs", count);
  bench_fill_bf16(h, count, (uint64_t)b->o->seed, tensor, (uint32_t)b->rank);
  return h;
}

static void shape_setup(struct bench *b) {
  size_t mk = (size_t)(b->m * b->k), kn = (size_t)(b->k * b->n),
         mn = (size_t)(b->m * b->n), w = (size_t)b->world;
  struct buffers *d = &b->d;
  d->a = alloc(b, mk * 2);
  d->a_sh = alloc(b, mk / w * 2);
  d->a_full = alloc(b, mk * 2);
  d->a_full2 = alloc(b, mk * 2);
  d->b = alloc(b, kn * 2);
  d->c = alloc(b, mn * 2);
  d->c2 = alloc(b, mn * 2);
  d->x = alloc(b, mn * 2);
  d->c_sh = alloc(b, mn / w * 2);
  d->c_sh2 = alloc(b, mn / w * 2);
  b->host_a = seeded(b, TENSOR_A, mk);
  b->host_a_sh = seeded(b, TENSOR_A_SHARD, mk / w);
  b->host_b = seeded(b, TENSOR_B, kn);
  b->host_r = seeded(b, TENSOR_R, mn);
  upload(b, d->a, b->host_a, mk);
  upload(b, d->a_sh, b->host_a_sh, mk / w);
  upload(b, d->b, b->host_b, kn);
  b->nrows = (int)(b->o->check_rows < b->m / b->world ? b->o->check_rows
                                                      : b->m / b->world);
  b->rows_full = malloc((size_t)b->nrows * sizeof *b->rows_full);
  b->rows_shard = malloc((size_t)b->nrows * sizeof *b->rows_shard);
  if (!b->rows_full || !b->rows_shard)
    fatal("out of host memory");
  // The same sample on every rank (seeded by the shape, not the rank).
  uint64_t seed = (uint64_t)b->o->seed + (uint64_t)(b->m * 31 + b->n * 7 + b->k);
  bench_sample_rows(seed, b->nrows, b->m, b->rows_full);
  bench_sample_rows(seed + 1, b->nrows, b->m / b->world, b->rows_shard);
}

static void shape_teardown(struct bench *b) {
  attnrt_devptr *all[] = {&b->d.a,  &b->d.a_sh, &b->d.a_full, &b->d.a_full2,
                          &b->d.b,  &b->d.c,    &b->d.c2,     &b->d.x,
                          &b->d.c_sh, &b->d.c_sh2};
  for (size_t i = 0; i < sizeof all / sizeof *all; ++i) {
    attnrt_mem_free(b->rt, *all[i]);
    *all[i] = 0;
  }
  free(b->host_a);
  free(b->host_a_sh);
  free(b->host_b);
  free(b->host_r);
  free(b->rows_full);
  free(b->rows_shard);
  free(b->ref);
  b->ref = NULL;
  b->ref_valid = false;
  b->host_a = b->host_a_sh = b->host_b = b->host_r = NULL;
  b->rows_full = b->rows_shard = NULL;
}

/// The sequential and two-stream baselines and each part alone.
static void run_baselines(struct bench *b, struct pattern_result *pr) {
  size_t mn = (size_t)(b->m * b->n), mk = (size_t)(b->m * b->k);
  size_t w = (size_t)b->world;
  struct bench_check chk[2];

  // Sequential, once, on poisoned outputs.
  poison(b, b->d.c, mn * 2);
  poison(b, b->d.c_sh, mn / w * 2);
  poison(b, b->d.a_full, mk * 2);
  step_seq(b, NULL, 0);
  step_finish(b, NULL, 0);
  check_pattern(b, b->pattern == COMM_GEMM_REDUCE_SCATTER ? b->d.c_sh : b->d.c,
                &chk[0]);
  bool seq_ok = agree_checks(b, chk, 1, &pr->v[V_SEQ]);

  // Two streams, once: the collective's input is fresh R (all_reduce works in
  // place), its output and the GEMM's poisoned.
  upload(b, b->d.x, b->host_r, mn);
  poison(b, b->d.c2, mn * 2);
  poison(b, b->d.a_full2, mk * 2);
  poison(b, b->d.c_sh2, mn / w * 2);
  step_two(b, NULL, 0);
  step_finish(b, NULL, 0);
  check_local_gemm(b, &chk[0]);
  check_two_collective(b, &chk[1]);
  bool two_ok = agree_checks(b, chk, 2, &pr->v[V_TWO]);

  // The parts are the sequential variant's calls: its check covers them.
  for (int v = V_GEMM; v <= V_COMM; ++v) {
    pr->v[v].checked = pr->v[V_SEQ].checked;
    pr->v[v].rel_l2 = pr->v[V_SEQ].rel_l2;
    pr->v[v].max_rel = pr->v[V_SEQ].max_rel;
  }
  if (seq_ok) {
    time_variant(b, step_gemm, &pr->v[V_GEMM]);
    time_variant(b, step_comm, &pr->v[V_COMM]);
    time_variant(b, step_seq, &pr->v[V_SEQ]);
  } else {
    for (int v = V_GEMM; v <= V_COMM; ++v) {
      pr->v[v].status = "skipped";
      snprintf(pr->v[v].error, sizeof pr->v[v].error,
               "the sequential check failed");
    }
  }
  if (two_ok)
    time_variant(b, step_two, &pr->v[V_TWO]);
}

static void free_sym(struct bench *b) {
  attnrt_comm_buffer **all[] = {&b->sym.a, &b->sym.b, &b->sym.out,
                                &b->sym.work};
  for (size_t i = 0; i < 4; ++i) {
    if (*all[i])
      check_rt(b, attnrt_comm_buffer_free(*all[i]), "attnrt_comm_buffer_free");
    *all[i] = NULL;
  }
}

/// A variant behind comm_fused.h's interface: prepare on every rank, agree,
/// symmetric buffers, check, time.
static void run_variant(struct bench *b, const struct variant_ops *ops,
                        struct variant_result *r,
                        struct variant_result *seq_in_turn) {
  struct comm_fused_problem p = {b->pattern, b->m, b->n, b->k, b->rank,
                                 b->world, b->comm, b->rt};
  char why[400] = "";
  size_t work = 0;
  void *state = NULL;
  enum attnrt_status st = ops->prepare(b, &p, &state, &work, why, sizeof why);
  // 0: ready; 1: not built; 2: failed (the worst rank wins); the workspace
  // size every rank allocates is the largest asked for.
  double v[2] = {st == ATTNRT_OK ? 0 : st == ATTNRT_ERR_NOT_FOUND ? 1 : 2,
                 (double)work};
  agree_max(b, v, 2);
  if (v[0] != 0) {
    r->status = v[0] == 1 ? "not built" : "error";
    snprintf(r->error, sizeof r->error, "%s",
             st != ATTNRT_OK ? why : "prepare failed on another rank");
    ops->release(state);
    return;
  }
  work = (size_t)v[1];
  bool gather = b->pattern == COMM_ALL_GATHER_GEMM;
  bool scatter = b->pattern == COMM_GEMM_REDUCE_SCATTER;
  size_t w = (size_t)b->world;
  size_t a_count = (size_t)(b->m * b->k) / (gather ? w : 1);
  size_t out_count = (size_t)(b->m * b->n) / (scatter ? w : 1);
  size_t kn = (size_t)(b->k * b->n);
  // Collective allocations, in the same order on every rank.
  enum attnrt_status sa[4] = {
      attnrt_comm_buffer_alloc(b->comm, a_count * 2, &b->sym.a),
      attnrt_comm_buffer_alloc(b->comm, kn * 2, &b->sym.b),
      attnrt_comm_buffer_alloc(b->comm, out_count * 2, &b->sym.out),
      work ? attnrt_comm_buffer_alloc(b->comm, work, &b->sym.work) : ATTNRT_OK};
  double bad = 0;
  for (int i = 0; i < 4; ++i)
    if (sa[i] != ATTNRT_OK && !bad) {
      bad = 1;
      bench_attnrt_error(r->error, sizeof r->error, "attnrt_comm_buffer_alloc",
                         sa[i], b->rt);
    }
  agree_max(b, &bad, 1);
  if (bad) {
    r->status = "error";
    if (!r->error[0])
      snprintf(r->error, sizeof r->error,
               "attnrt_comm_buffer_alloc failed on another rank");
    free_sym(b);
    ops->release(state);
    return;
  }
  upload(b, attnrt_comm_buffer_ptr(b->sym.a), gather ? b->host_a_sh : b->host_a,
         a_count);
  upload(b, attnrt_comm_buffer_ptr(b->sym.b), b->host_b, kn);
  poison(b, attnrt_comm_buffer_ptr(b->sym.out), out_count * 2);
  // The workspace is zero on every rank (attnrt_comm_buffer_alloc); clearing
  // it again here would race peers that already write into it.
  b->ops = ops;
  b->state = state;
  char err[600] = "";
  if (!step_variant(b, err, sizeof err))
    fatal("%s", err); // the peers are inside the collective now
  step_finish(b, NULL, 0);
  struct bench_check chk;
  check_pattern(b, attnrt_comm_buffer_ptr(b->sym.out), &chk);
  if (agree_checks(b, &chk, 1, r)) {
    if (seq_in_turn && seq_in_turn->timed && b->o->rounds > 0)
      time_in_turn(b, r, seq_in_turn);
    else
      time_variant(b, step_variant, r);
  }
  b->ops = NULL;
  b->state = NULL;
  free_sym(b);
  ops->release(state);
}

static void run_pattern(struct bench *b, enum comm_pattern pat) {
  struct pattern_result *pr = &b->results[b->nresults++];
  memset(pr, 0, sizeof *pr);
  pr->m = b->m;
  pr->n = b->n;
  pr->k = b->k;
  pr->pattern = pat;
  pr->comm_bytes = pat == COMM_ALL_GATHER_GEMM ? (double)(b->m * b->k) * 2
                                               : (double)(b->m * b->n) * 2;
  for (int v = 0; v < NVARIANTS; ++v)
    pr->v[v].status = "skipped";
  b->pattern = pat;
  b->ref_valid = false;
  double t0 = bench_now_s();
  run_baselines(b, pr);
  if (b->o->symmetric)
    run_variant(b, &sym_ops, &pr->v[V_SYM], NULL);
  if (b->o->fused)
    run_variant(b, &fused_ops, &pr->v[V_FUSED], &pr->v[V_SEQ]);
  printf("comm_bench rank %d: %lldx%lldx%lld %s: seq %s %.3f ms, two_stream "
         "%s %.3f ms, symmetric %s, fused %s (%.1f s)\n",
         b->rank, (long long)b->m, (long long)b->n, (long long)b->k,
         pattern_names[pat], pr->v[V_SEQ].status, pr->v[V_SEQ].ms,
         pr->v[V_TWO].status, pr->v[V_TWO].ms, pr->v[V_SYM].status,
         pr->v[V_FUSED].status, bench_now_s() - t0);
  fflush(stdout);
  if (b->rank == 0)
    write_results(b);
}

//===-- main --===//

int main(int argc, char **argv) {
  // Line by line even into a pipe or a log: a run killed by its timeout
  // keeps what it printed.
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct options o;
  int parsed = parse_options(argc, argv, &o);
  if (parsed)
    return parsed == 1 ? 0 : 2;
  // NVLink multicast stays off on these machines (it can take a shared
  // host's GPUs down); set before NCCL is loaded.
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
  setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 1);

  struct attnrt_comm_config cfg;
  enum attnrt_status st = attnrt_comm_config_from_env(&cfg);
  if (st != ATTNRT_OK) {
    fprintf(stderr,
            "comm_bench: %s; run one process per GPU with RANK, WORLD_SIZE, "
            "LOCAL_RANK, MASTER_ADDR and MASTER_PORT set (bench/"
            "run_comm_bench.sh does)\n",
            attnrt_last_error(NULL));
    return 1;
  }
  if (cfg.world_size < 2) {
    fprintf(stderr, "comm_bench: WORLD_SIZE is %d: the patterns need at least "
                    "2 ranks, one GPU each\n",
            cfg.world_size);
    return 1;
  }
  if (cfg.world_size > MAX_WORLD) {
    fprintf(stderr, "comm_bench: WORLD_SIZE %d is above %d\n", cfg.world_size,
            MAX_WORLD);
    return 1;
  }
  for (int s = 0; s < o.nshapes; ++s)
    if (o.shape[s][0] % cfg.world_size) {
      fprintf(stderr, "comm_bench: M = %lld is not a multiple of WORLD_SIZE %d\n",
              (long long)o.shape[s][0], cfg.world_size);
      return 2;
    }
  // A GPU first, so that a machine without one says so before any
  // rendezvous.
  attnrt_runtime *probe = NULL;
  st = attnrt_runtime_create(cfg.local_rank, &probe);
  if (st != ATTNRT_OK) {
    fprintf(stderr, "comm_bench rank %d: no usable GPU %d: %s: %s\n", cfg.rank,
            cfg.local_rank, attnrt_status_string(st), attnrt_last_error(NULL));
    return 1;
  }
  attnrt_runtime_destroy(probe);

  static struct bench bench; // large (the results); one per process
  struct bench *b = &bench;
  b->o = &o;
  b->rank = cfg.rank;
  b->world = cfg.world_size;
  double t0 = bench_now_s();
  st = attnrt_comm_init(&cfg, &b->comm);
  if (st != ATTNRT_OK) {
    fprintf(stderr, "comm_bench rank %d: attnrt_comm_init: %s: %s\n", cfg.rank,
            attnrt_status_string(st), attnrt_last_error(NULL));
    return 1;
  }
  fatal_bench = b;
  b->rt = attnrt_comm_runtime(b->comm);
  b->nccl = attnrt_comm_nccl_version(b->comm);
  attnrt_runtime_device_name(b->rt, b->gpu, sizeof b->gpu);
  attnrt_runtime_driver_version(b->rt, &b->driver);
  bench_utc_date(b->date, sizeof b->date);
  char err[600] = "";
  if (!bench_vendor_open(&b->vendor, b->rt, cfg.local_rank, err, sizeof err))
    fatal("%s", err);
  if (!bench_stream_create(&b->vendor, b->rt, &b->main, err, sizeof err) ||
      !bench_stream_create(&b->vendor, b->rt, &b->side, err, sizeof err) ||
      !(b->ev_fork = bench_event_create(&b->vendor, err, sizeof err)) ||
      !(b->ev_join = bench_event_create(&b->vendor, err, sizeof err)))
    fatal("%s", err);
  b->barrier = alloc(b, 256);
  b->agree = alloc(b, 256);
  b->times = alloc(b, (size_t)(b->world + 1) * (size_t)o.iters * 4);
  check_rt(b, attnrt_memset_d8(b->rt, b->barrier, 0, 256, NULL),
           "attnrt_memset_d8");
  printf("comm_bench rank %d of %d: %s (GPU %d), NCCL %d, cuBLAS %d (%s), "
         "driver CUDA %d; communicator up in %.1f s\n",
         b->rank, b->world, b->gpu, cfg.local_rank, b->nccl,
         b->vendor.cublas_version, b->vendor.cublas_path, b->driver,
         bench_now_s() - t0);
  fflush(stdout);

  for (int s = 0; s < o.nshapes; ++s) {
    b->m = o.shape[s][0];
    b->n = o.shape[s][1];
    b->k = o.shape[s][2];
    double ts = bench_now_s();
    shape_setup(b);
    if (b->rank == 0)
      printf("comm_bench: %lldx%lldx%lld inputs ready in %.1f s\n",
             (long long)b->m, (long long)b->n, (long long)b->k,
             bench_now_s() - ts);
    for (int p = 0; p < NPATTERNS; ++p)
      if (o.pattern[p])
        run_pattern(b, (enum comm_pattern)p);
    shape_teardown(b);
  }

  int status = 0;
  for (int i = 0; i < b->nresults; ++i)
    for (int v = 0; v < NVARIANTS; ++v) {
      const char *s = b->results[i].v[v].status;
      if (strcmp(s, "check failed") == 0 || strcmp(s, "error") == 0)
        status = 1;
    }
  if (b->rank == 0) {
    print_table(b);
    write_results(b);
  }
  attnrt_mem_free(b->rt, b->barrier);
  attnrt_mem_free(b->rt, b->agree);
  attnrt_mem_free(b->rt, b->times);
  bench_event_destroy(&b->vendor, b->ev_fork);
  bench_event_destroy(&b->vendor, b->ev_join);
  bench_stream_destroy(&b->vendor, &b->main);
  bench_stream_destroy(&b->vendor, &b->side);
  bench_vendor_close(&b->vendor);
  fatal_bench = NULL;
  attnrt_comm_destroy(b->comm);
  printf("comm_bench rank %d: done in %.1f s, %s\n", cfg.rank,
         bench_now_s() - t0, status ? "FAILED" : "all checks passed");
  return status;
}
