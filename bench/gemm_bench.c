// gemm_bench.c - bf16 GEMM on one GPU: cuBLAS (dlopen'ed) against attn's kernel compiled from linalg.fill + linalg.matmul, each checked against float64 before it is timed; writes JSON and prints a markdown table.
//
// For each shape M x N x K: A [M,K] and B [K,N] row-major bf16, uniform in
// [-1, 1) from a seeded generator; C = A B in bf16 with f32 accumulation.
// Each implementation runs once on a NaN-poisoned C, and sampled rows of C
// (the first, the last and random ones, every column) are compared with a
// float64 reference (lib/Reference, bench_common.h gives the tolerance)
// before anything is timed: CUDA events around each launch after warm-up, in
// rounds that take the two in turn (cuBLAS first in even rounds, attn in odd
// ones: under sustained load an H200 steps its clocks down, which would
// otherwise always favour the one timed first), median over all launches.
// attn's kernel comes from attn_compile (target sm_90a) and is launched
// through attnrt; a compile failure is reported in its row and the run goes
// on.
//
// Run it on the GPU machine through bench/run_comm_bench.sh; `--help` lists
// the options. Exit status: 0 when everything that ran passed its check,
// 1 when there is no GPU, cuBLAS cannot be loaded, a check fails or a CUDA
// call fails (attn's compile failures alone do not fail the run), 2 for bad
// options.

#include "bench/gemm_bench.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f) {
  fprintf(f,
          "usage: gemm_bench [options]\n"
          "bf16 GEMM C[M,N] = A[M,K] B[K,N] (row-major, f32 accumulation) on "
          "one GPU:\ncuBLAS (cublasGemmEx, loaded with dlopen) and attn's "
          "kernel compiled from\nlinalg.fill + linalg.matmul, each checked "
          "against float64 on sampled rows,\nthen timed (CUDA events, median "
          "after warm-up). Prints a markdown table and\nwrites JSON.\n\n"
          "  --shapes=MxNxK[,MxNxK...]  (default " DEFAULT_SHAPES ")\n"
          "  --iters=N         timed launches per implementation and round "
          "(default 50)\n"
          "  --rounds=N        timing rounds per shape, the implementations in "
          "turn\n                    (cuBLAS, attn, then attn, cuBLAS, ...; "
          "default 2)\n"
          "  --warmup=N        untimed launches first (default 10)\n"
          "  --cooldown-ms=N   idle time before each warm-up (default 1000)\n"
          "  --device=N        GPU ordinal (default 0)\n"
          "  --check-rows=N    rows of C compared with float64 (default 16)\n"
          "  --seed=N          input seed (default 1234)\n"
          "  --json=PATH       results (default $OUT/gemm_bench.json, else "
          "./gemm_bench.json)\n"
          "  --no-attn         skip attn's kernel\n"
          "  --no-cublas       skip cuBLAS\n"
          "  --attn-ir=FILE    compile FILE instead of the built-in program; "
          "@M@ @N@ @K@\n"
          "                    in it are replaced by the shape\n"
          "  --tile-options=S  attn_compile's tile options\n"
          "  --hopper-options=S  attn_compile's options of "
          "lower-tile-to-hopper (e.g.\n                    'stages=3')\n"
          "  --compile-only    only compile attn's kernel for each shape and "
          "print its\n                    manifest entry (no GPU needed)\n"
          "  --dump-dir=DIR    write each kernel as DIR/gemm_MxNxK.ptx and "
          ".json\n"
          "  --help            this text\n\n"
          "Environment: ATTN_CUBLAS_LIBRARY (cuBLAS to load), "
          "ATTNRT_CUDA_LIBRARY (libcuda),\nCUDA_HOME (libdevice for attn), "
          "ATTN_BENCH_THREADS (host threads of the check).\n");
}

/// Parses argv into o; returns 0, or 1 after --help, or 2 on a bad option.
static int parse_options(int argc, char **argv, struct options *o) {
  memset(o, 0, sizeof *o);
  o->iters = 50;
  o->warmup = 10;
  o->cooldown_ms = 1000;
  o->rounds = 2;
  o->check_rows = 16;
  o->seed = 1234;
  o->run_attn = o->run_cublas = true;
  bench_parse_shapes(DEFAULT_SHAPES, o->shape, MAX_SHAPES, &o->nshapes);
  const struct bench_common_flags common = {
      &o->iters, &o->warmup, &o->cooldown_ms, &o->check_rows, &o->seed,
      &o->json_path, 100000, 4096};
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
    else if ((v = bench_flag_value(a, "--device")))
      ok = bench_parse_int(v, 0, 1023, &o->device);
    else if ((v = bench_flag_value(a, "--rounds")))
      ok = bench_parse_int(v, 1, MAX_ROUNDS, &o->rounds);
    else if ((v = bench_flag_value(a, "--attn-ir")))
      o->ir_path = v;
    else if ((v = bench_flag_value(a, "--tile-options")))
      o->tile_options = v;
    else if ((v = bench_flag_value(a, "--hopper-options")))
      o->hopper_options = v;
    else if ((v = bench_flag_value(a, "--dump-dir")))
      o->dump_dir = v;
    else if (strcmp(a, "--no-attn") == 0)
      o->run_attn = false;
    else if (strcmp(a, "--no-cublas") == 0)
      o->run_cublas = false;
    else if (strcmp(a, "--compile-only") == 0)
      o->compile_only = true;
    else
      ok = false;
    if (!ok) {
      fprintf(stderr, "gemm_bench: bad option '%s' (see --help)\n", a);
      return 2;
    }
  }
  return 0;
}

//===-- One shape --===//

struct shape_ctx {
  const struct options *o;
  attnrt_runtime *rt;
  struct bench_vendor *vendor; // NULL without cuBLAS
  struct bench_stream stream;  // stream.s is always set
  int64_t m, n, k;
  attnrt_devptr a, b, c;
  struct attn_gemm *gemm; // the attn step's kernel
};

static bool step_cublas(void *user, char *err, size_t errlen) {
  struct shape_ctx *x = user;
  return bench_cublas_gemm(x->vendor, &x->stream, x->a, x->b, x->c, x->m, x->n,
                           x->k, err, errlen);
}

static bool step_attn(void *user, char *err, size_t errlen) {
  struct shape_ctx *x = user;
  const attnrt_devptr by_role[3] = {x->a, x->b, x->c};
  struct attnrt_arg args[3];
  for (int i = 0; i < 3; ++i) {
    args[i].kind = ATTNRT_ARG_PTR;
    args[i].v.ptr = by_role[x->gemm->role[i]];
  }
  enum attnrt_status st =
      attnrt_program_launch(x->gemm->module, x->gemm->name, args, 3, x->stream.s);
  if (st != ATTNRT_OK) {
    bench_attnrt_error(err, errlen, "attnrt_program_launch", st, x->rt);
    return false;
  }
  return true;
}

/// Runs step once on a NaN-poisoned C and compares sampled rows with their
/// float64 reference ref (nrows x n); fills r's check and, on failure, its
/// status. True when it passed.
static bool check(struct shape_ctx *x, bench_step_fn step, const double *ref,
                  const int64_t *rows, int nrows, struct row *r) {
  char err[600] = "";
  enum attnrt_status st;
  size_t c_bytes = (size_t)(x->m * x->n) * 2;
  uint16_t *got = malloc((size_t)nrows * (size_t)x->n * 2);
  if (!got) {
    snprintf(err, sizeof err, "out of host memory");
    goto fail;
  }
  // 0xffff is a bf16 NaN: rows the kernel does not write fail the check.
  if ((st = attnrt_memset_d8(x->rt, x->c, 0xff, c_bytes, x->stream.s)) !=
      ATTNRT_OK) {
    bench_attnrt_error(err, sizeof err, "attnrt_memset_d8", st, x->rt);
    goto fail;
  }
  if (!step(x, err, sizeof err))
    goto fail;
  if ((st = attnrt_stream_synchronize(x->stream.s)) != ATTNRT_OK) {
    bench_attnrt_error(err, sizeof err, "first launch", st, x->rt);
    goto fail;
  }
  for (int i = 0; i < nrows; ++i)
    if ((st = attnrt_memcpy_dtoh(x->rt, got + (size_t)i * (size_t)x->n,
                                 x->c + (attnrt_devptr)(rows[i] * x->n * 2),
                                 (size_t)x->n * 2, NULL)) != ATTNRT_OK) {
      bench_attnrt_error(err, sizeof err, "attnrt_memcpy_dtoh", st, x->rt);
      goto fail;
    }
  memset(&r->check, 0, sizeof r->check);
  bench_check_add(&r->check, got, ref, (size_t)nrows * (size_t)x->n);
  r->checked = true;
  free(got);
  if (!bench_check_pass(&r->check)) {
    r->status = "check failed";
    snprintf(r->error, sizeof r->error,
             "rel_l2 %.3g (tol %.0e), max_abs/rms %.3g (tol %.0e), %ld "
             "non-finite of %ld",
             bench_check_rel_l2(&r->check), BENCH_TOL_REL_L2,
             bench_check_max_rel(&r->check), BENCH_TOL_MAX_REL,
             r->check.nonfinite, r->check.count);
    return false;
  }
  return true;
fail:
  free(got);
  r->status = "error";
  snprintf(r->error, sizeof r->error, "%s", err);
  return false;
}

/// One timing round of step (after the GPU idled, warm-up launches, then
/// iters timed ones), appended to r's launches in ms (iters per round) and
/// its round's median to r->round_ms. False with r's status set on error.
static bool time_round(struct shape_ctx *x, bench_step_fn step, float *ms,
                       struct row *r) {
  char err[600] = "";
  // The GPU is idle: every round starts synchronized.
  bench_cooldown(x->o->cooldown_ms);
  float *mine = ms + (size_t)r->nrounds * (size_t)x->o->iters;
  if (!bench_time(x->rt, x->stream.s, step, NULL, NULL, x,
                  (int)x->o->warmup, (int)x->o->iters, mine, err,
                  sizeof err)) {
    r->status = "error";
    snprintf(r->error, sizeof r->error, "%s", err);
    return false;
  }
  struct bench_stats st;
  bench_stats_of(mine, (int)x->o->iters, &st);
  r->round_ms[r->nrounds++] = st.median;
  return true;
}

/// Uploads the seeded A and B of the shape; false with a message in err.
static bool upload_inputs(struct shape_ctx *x, char *err, size_t errlen) {
  size_t na = (size_t)(x->m * x->k), nb = (size_t)(x->k * x->n);
  uint16_t *host = malloc((na > nb ? na : nb) * 2);
  if (!host) {
    snprintf(err, errlen, "out of host memory");
    return false;
  }
  enum attnrt_status st;
  bench_fill_bf16(host, na, (uint64_t)x->o->seed, TENSOR_A, 0);
  st = attnrt_memcpy_htod(x->rt, x->a, host, na * 2, NULL);
  if (st == ATTNRT_OK) {
    bench_fill_bf16(host, nb, (uint64_t)x->o->seed, TENSOR_B, 0);
    st = attnrt_memcpy_htod(x->rt, x->b, host, nb * 2, NULL);
  }
  free(host);
  if (st != ATTNRT_OK) {
    bench_attnrt_error(err, errlen, "attnrt_memcpy_htod", st, x->rt);
    return false;
  }
  return true;
}

/// Measures cuBLAS (rows[0], when run) and attn (rows[1], when run) on the
/// shape of x: inputs, the float64 rows and each one's check, then
/// o->rounds timing rounds that take the two in turn (cuBLAS first in even
/// rounds, attn first in odd ones), so that neither always runs on the GPU
/// the other has just warmed; the median is over all the launches.
static void run_shape(struct shape_ctx *x, bool run[2], struct row *rows) {
  const struct options *o = x->o;
  char err[600] = "";
  enum attnrt_status st;
  int nrows = (int)(o->check_rows < x->m ? o->check_rows : x->m);
  int64_t *samples = malloc((size_t)nrows * sizeof *samples);
  double *a_rows = malloc((size_t)(nrows * x->k) * sizeof *a_rows);
  double *ref = malloc((size_t)(nrows * x->n) * sizeof *ref);
  size_t per = (size_t)o->iters * (size_t)o->rounds;
  float *ms[2] = {malloc(per * sizeof(float)), malloc(per * sizeof(float))};
  struct attn_gemm g;
  bool built = false, ok[2] = {false, false};
  x->a = x->b = x->c = 0;
  if (!samples || !a_rows || !ref || !ms[0] || !ms[1]) {
    snprintf(err, sizeof err, "out of host memory");
    goto fail;
  }
  if ((st = attnrt_mem_alloc(x->rt, (size_t)(x->m * x->k) * 2, &x->a)) ||
      (st = attnrt_mem_alloc(x->rt, (size_t)(x->k * x->n) * 2, &x->b)) ||
      (st = attnrt_mem_alloc(x->rt, (size_t)(x->m * x->n) * 2, &x->c))) {
    bench_attnrt_error(err, sizeof err, "attnrt_mem_alloc", st, x->rt);
    goto fail;
  }
  if (!upload_inputs(x, err, sizeof err))
    goto fail;
  bench_sample_rows((uint64_t)o->seed + (uint64_t)(x->m * 31 + x->n * 7 + x->k),
                    nrows, x->m, samples);
  for (int i = 0; i < nrows; ++i)
    for (int64_t l = 0; l < x->k; ++l)
      a_rows[i * x->k + l] = bench_bf16_to_double(bench_rand_bf16(
          (uint64_t)o->seed, TENSOR_A, 0, (uint64_t)(samples[i] * x->k + l)));
  // The float64 rows every implementation is compared with.
  const double *a_slot[1] = {a_rows};
  const int b_rank[1] = {0};
  struct bench_ref_check rc = {
      .problem = {ATTN_COMM_REF_MATMUL_ALL_REDUCE, ATTN_COMM_REF_SUM, 1, nrows,
                  x->n, x->k},
      .a = a_slot,
      .b_rank = b_rank,
      .seed = (uint64_t)o->seed,
      .b_tensor = TENSOR_B,
      .out_slot = 0,
      .want = ref};
  struct bench_check unused;
  if (!bench_ref_check_run(&rc, &unused, err, sizeof err))
    goto fail;

  // Each one is checked before anything is timed.
  static const bench_step_fn steps[2] = {step_cublas, step_attn};
  if (run[0])
    ok[0] = check(x, step_cublas, ref, samples, nrows, &rows[0]);
  if (run[1] && (built = attn_gemm_build(o, x->rt, x->m, x->n, x->k, &g,
                                         &rows[1]))) {
    x->gemm = &g;
    ok[1] = check(x, step_attn, ref, samples, nrows, &rows[1]);
  }
  for (int round = 0; round < o->rounds; ++round)
    for (int j = 0; j < 2; ++j) {
      int i = bench_in_turn(round, j);
      if (ok[i] && !time_round(x, steps[i], ms[i], &rows[i]))
        ok[i] = false;
    }
  for (int i = 0; i < 2; ++i)
    if (ok[i]) {
      bench_stats_of(ms[i], (int)per, &rows[i].stats);
      rows[i].timed = true;
      rows[i].status = "ok";
    }
  goto out;
fail:
  for (int i = 0; i < 2; ++i)
    if (run[i]) {
      rows[i].status = "error";
      snprintf(rows[i].error, sizeof rows[i].error, "%s", err);
    }
out:
  x->gemm = NULL;
  if (built)
    attn_gemm_release(&g);
  attnrt_mem_free(x->rt, x->a);
  attnrt_mem_free(x->rt, x->b);
  attnrt_mem_free(x->rt, x->c);
  free(samples);
  free(a_rows);
  free(ref);
  free(ms[0]);
  free(ms[1]);
}

//===-- main --===//

static int compile_only(const struct options *o) {
  int bad = 0;
  for (int s = 0; s < o->nshapes; ++s) {
    struct row r = {.impl = "attn", .m = o->shape[s][0], .n = o->shape[s][1],
                    .k = o->shape[s][2], .status = "ok", .compile_s = -1};
    struct attn_gemm g;
    bool ok = attn_gemm_build(o, NULL, r.m, r.n, r.k, &g, &r);
    printf("%lldx%lldx%lld: %s in %.2f s: %s%s%s\n", (long long)r.m,
           (long long)r.n, (long long)r.k, ok ? "compiled" : r.status,
           r.compile_s, ok ? r.entry : r.error, r.config[0] ? ": " : "",
           r.config);
    if (ok)
      attn_gemm_release(&g);
    bad |= !ok;
  }
  return bad;
}

int main(int argc, char **argv) {
  // Line by line even into a pipe or a log: a run killed by its timeout
  // keeps what it printed.
  setvbuf(stdout, NULL, _IOLBF, 0);
  struct options o;
  int parsed = parse_options(argc, argv, &o);
  if (parsed)
    return parsed == 1 ? 0 : 2;
  if (o.compile_only)
    return compile_only(&o);

  char err[600] = "";
  attnrt_runtime *rt = NULL;
  enum attnrt_status st = attnrt_runtime_create((int)o.device, &rt);
  if (st != ATTNRT_OK) {
    fprintf(stderr, "gemm_bench: no usable GPU (device %ld): %s: %s\n",
            o.device, attnrt_status_string(st), attnrt_last_error(NULL));
    return 1;
  }
  char gpu[128] = "", date[64];
  int driver = 0, cc_major = 0, cc_minor = 0;
  attnrt_runtime_device_name(rt, gpu, sizeof gpu);
  attnrt_runtime_driver_version(rt, &driver);
  attnrt_runtime_compute_capability(rt, &cc_major, &cc_minor);
  bench_utc_date(date, sizeof date);
  printf("gemm_bench: %s (sm_%d%d), driver CUDA %d.%d, attn %s\n", gpu,
         cc_major, cc_minor, driver / 1000, driver % 1000 / 10, attn_version());

  int status = 0;
  struct bench_vendor vendor;
  bool have_vendor = bench_vendor_open(&vendor, rt, (int)o.device, err,
                                       sizeof err);
  char vendor_err[600] = "";
  if (!have_vendor) {
    snprintf(vendor_err, sizeof vendor_err, "%s", err);
    fprintf(stderr, "gemm_bench: %s\n", vendor_err);
    status = 1;
  } else {
    printf("gemm_bench: cuBLAS %d (%s), CUDA runtime %d\n",
           vendor.cublas_version, vendor.cublas_path, vendor.cudart_version);
  }
  struct shape_ctx x = {.o = &o, .rt = rt,
                        .vendor = have_vendor ? &vendor : NULL};
  if (have_vendor) {
    if (!bench_stream_create(&vendor, rt, &x.stream, err, sizeof err)) {
      fprintf(stderr, "gemm_bench: %s\n", err);
      bench_vendor_close(&vendor);
      attnrt_runtime_destroy(rt);
      return 1;
    }
  } else if ((st = attnrt_stream_create(rt, &x.stream.s)) != ATTNRT_OK) {
    fprintf(stderr, "gemm_bench: attnrt_stream_create: %s\n",
            attnrt_last_error(rt));
    attnrt_runtime_destroy(rt);
    return 1;
  }

  struct row rows[2 * MAX_SHAPES];
  memset(rows, 0, sizeof rows);
  for (int s = 0; s < o.nshapes; ++s)
    for (int i = 0; i < 2; ++i) {
      struct row *r = &rows[2 * s + i];
      r->impl = i ? "attn" : "cublas";
      r->m = o.shape[s][0];
      r->n = o.shape[s][1];
      r->k = o.shape[s][2];
      r->status = "skipped";
      r->compile_s = -1;
      if (!i && o.run_cublas && !have_vendor) {
        r->status = "error";
        snprintf(r->error, sizeof r->error, "%s", vendor_err);
      }
    }
  struct results res = {.o = &o, .rows = rows, .gpu = gpu, .date = date,
                        .driver = driver,
                        .vendor = have_vendor ? &vendor : NULL};
  char path[1024];
  const char *out_dir = getenv("OUT");
  if (o.json_path)
    snprintf(path, sizeof path, "%s", o.json_path);
  else if (out_dir && *out_dir)
    snprintf(path, sizeof path, "%s/gemm_bench.json", out_dir);
  else
    snprintf(path, sizeof path, "gemm_bench.json");
  // One shape at a time, both implementations (cuBLAS checked first); the
  // JSON is rewritten after every shape, so a kernel that hangs (and is
  // killed by the caller's timeout) leaves the shapes before it.
  for (int s = 0; s < o.nshapes; ++s) {
    struct row *r = &rows[2 * s];
    x.m = r->m;
    x.n = r->n;
    x.k = r->k;
    bool run[2] = {o.run_cublas && have_vendor, o.run_attn};
    double t0 = bench_now_s();
    run_shape(&x, run, r);
    for (int i = 0; i < 2; ++i)
      if (run[i])
        printf("gemm_bench: %lldx%lldx%lld %s: %s%s%s (%.1f s for both)\n",
               (long long)x.m, (long long)x.n, (long long)x.k, r[i].impl,
               r[i].status, r[i].timed ? "" : r[i].error[0] ? ": " : "",
               r[i].timed ? "" : r[i].error, bench_now_s() - t0);
    if (!write_results(path, &res)) {
      fprintf(stderr, "gemm_bench: cannot write %s\n", path);
      status = 1;
    }
  }
  for (int i = 0; i < 2 * o.nshapes; ++i)
    if (strcmp(rows[i].status, "check failed") == 0 ||
        strcmp(rows[i].status, "error") == 0)
      status = 1;
  print_table(rows, o.nshapes, gpu, date);
  if (write_results(path, &res))
    printf("gemm_bench: wrote %s\n", path);
  else
    status = 1;

  if (have_vendor)
    bench_stream_destroy(&vendor, &x.stream);
  else
    attnrt_stream_destroy(x.stream.s);
  if (have_vendor)
    bench_vendor_close(&vendor);
  attnrt_runtime_destroy(rt);
  return status;
}
