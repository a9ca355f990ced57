// gemm_bench.c - bf16 GEMM on one GPU: cuBLAS (dlopen'ed) against attn's kernel compiled from linalg.fill + linalg.matmul, each checked against float64 before it is timed; writes JSON and prints a markdown table.
//
// For each shape M x N x K: A [M,K] and B [K,N] row-major bf16, uniform in
// [-1, 1) from a seeded generator; C = A B in bf16 with f32 accumulation.
// Each implementation runs once on a NaN-poisoned C, and sampled rows of C
// (the first, the last and random ones, every column) are compared with a
// float64 reference (lib/Reference, bench_common.h gives the tolerance)
// before it is timed: CUDA events around each launch after warm-up, median.
// attn's kernel comes from attn_compile (target sm_90a) and is launched
// through attnrt; a compile failure is reported in its row and the run goes
// on (the front end for linalg.matmul lands separately).
//
// Run it on the GPU machine through bench/run_comm_bench.sh; `--help` lists
// the options. Exit status: 0 when everything that ran passed its check,
// 1 when there is no GPU, cuBLAS cannot be loaded, a check fails or a CUDA
// call fails (attn's compile failures alone do not fail the run), 2 for bad
// options.

#include "attn/attn.h"
#include "attnrt.h"
#include "bench/bench_common.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TENSOR_A = 1, TENSOR_B = 2 };

#define MAX_SHAPES 16
#define DEFAULT_SHAPES \
  "8192x8192x8192,4096x8192x4096,4096x4096x4096,8000x8000x8000"

// The program attn compiles; @M@, @N@ and @K@ are replaced by the shape.
static const char default_ir[] =
    "func.func @mm(%a: tensor<@M@x@K@xbf16>, %b: tensor<@K@x@N@xbf16>) "
    "-> tensor<@M@x@N@xbf16> {\n"
    "  %zero = arith.constant 0.0 : bf16\n"
    "  %empty = tensor.empty() : tensor<@M@x@N@xbf16>\n"
    "  %init = linalg.fill ins(%zero : bf16) outs(%empty : "
    "tensor<@M@x@N@xbf16>) -> tensor<@M@x@N@xbf16>\n"
    "  %c = linalg.matmul ins(%a, %b : tensor<@M@x@K@xbf16>, "
    "tensor<@K@x@N@xbf16>) outs(%init : tensor<@M@x@N@xbf16>) "
    "-> tensor<@M@x@N@xbf16>\n"
    "  return %c : tensor<@M@x@N@xbf16>\n"
    "}\n";

struct options {
  int64_t shape[MAX_SHAPES][3];
  int nshapes;
  long iters, warmup, device, check_rows, seed;
  bool run_attn, run_cublas, compile_only;
  const char *json_path;
  const char *ir_path;      // --attn-ir: a template file instead of default_ir
  const char *tile_options; // --tile-options for attn_compile
  const char *dump_dir;     // --dump-dir: write each kernel's PTX and manifest
};

/// One implementation on one shape.
struct row {
  const char *impl; // "cublas" or "attn"
  int64_t m, n, k;
  const char *status; // "ok", "check failed", "compile failed", "error", "skipped"
  char error[600];
  bool checked;
  struct bench_check check;
  bool timed;
  struct bench_stats stats;
  double compile_s; // attn only; < 0 when not compiled
  char entry[160];  // attn only: the program or kernel launched and its args
  char config[160]; // attn only: the kernel's configuration per its manifest
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: gemm_bench [options]\n"
          "bf16 GEMM C[M,N] = A[M,K] B[K,N] (row-major, f32 accumulation) on "
          "one GPU:\ncuBLAS (cublasGemmEx, loaded with dlopen) and attn's "
          "kernel compiled from\nlinalg.fill + linalg.matmul, each checked "
          "against float64 on sampled rows,\nthen timed (CUDA events, median "
          "after warm-up). Prints a markdown table and\nwrites JSON.\n\n"
          "  --shapes=MxNxK[,MxNxK...]  (default " DEFAULT_SHAPES ")\n"
          "  --iters=N         timed launches per implementation (default 50)\n"
          "  --warmup=N        untimed launches first (default 10)\n"
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
          "  --compile-only    only compile attn's kernel for each shape and "
          "print its\n                    manifest entry (no GPU needed)\n"
          "  --dump-dir=DIR    write each kernel as DIR/gemm_MxNxK.ptx and "
          ".json\n"
          "  --help            this text\n\n"
          "Environment: ATTN_CUBLAS_LIBRARY (cuBLAS to load), "
          "ATTNRT_CUDA_LIBRARY (libcuda),\nCUDA_HOME (libdevice for attn), "
          "ATTN_BENCH_THREADS (host threads of the check).\n");
}

static bool parse_shapes(const char *text, struct options *o) {
  o->nshapes = 0;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", text);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    if (o->nshapes == MAX_SHAPES)
      return false;
    int64_t *s = o->shape[o->nshapes++];
    if (!bench_parse_shape(tok, &s[0], &s[1], &s[2]))
      return false;
  }
  return o->nshapes > 0;
}

/// Parses argv into o; returns 0, or 1 after --help, or 2 on a bad option.
static int parse_options(int argc, char **argv, struct options *o) {
  memset(o, 0, sizeof *o);
  o->iters = 50;
  o->warmup = 10;
  o->check_rows = 16;
  o->seed = 1234;
  o->run_attn = o->run_cublas = true;
  parse_shapes(DEFAULT_SHAPES, o);
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *v;
    bool ok = true;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 1;
    } else if ((v = bench_flag_value(a, "--shapes")))
      ok = parse_shapes(v, o);
    else if ((v = bench_flag_value(a, "--iters")))
      ok = bench_parse_int(v, 1, 100000, &o->iters);
    else if ((v = bench_flag_value(a, "--warmup")))
      ok = bench_parse_int(v, 0, 100000, &o->warmup);
    else if ((v = bench_flag_value(a, "--device")))
      ok = bench_parse_int(v, 0, 1023, &o->device);
    else if ((v = bench_flag_value(a, "--check-rows")))
      ok = bench_parse_int(v, 1, 4096, &o->check_rows);
    else if ((v = bench_flag_value(a, "--seed")))
      ok = bench_parse_int(v, 0, 1L << 30, &o->seed);
    else if ((v = bench_flag_value(a, "--json")))
      o->json_path = v;
    else if ((v = bench_flag_value(a, "--attn-ir")))
      o->ir_path = v;
    else if ((v = bench_flag_value(a, "--tile-options")))
      o->tile_options = v;
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

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

//===-- attn's kernel --===//

/// A compiled and (on a GPU) loaded matmul: what to launch with which
/// arguments.
struct attn_gemm {
  attn_result *result;
  attnrt_module *module; // NULL with --compile-only
  char name[128];        // the program or kernel to launch
  int role[3];           // role[i]: 0 (A), 1 (B) or 2 (C) of argument i
};

/// Reads the whole file at path; NULL with a message in err.
static char *read_file(const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open %s", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = len >= 0 ? malloc((size_t)len + 1) : NULL;
  if (!text || fread(text, 1, (size_t)len, f) != (size_t)len) {
    snprintf(err, errlen, "cannot read %s", path);
    free(text);
    fclose(f);
    return NULL;
  }
  text[len] = 0;
  fclose(f);
  return text;
}

/// tmpl with @M@, @N@, @K@ replaced; caller frees. NULL when out of memory.
static char *instantiate(const char *tmpl, int64_t m, int64_t n, int64_t k) {
  size_t cap = strlen(tmpl) * 2 + 256, len = 0;
  char *out = malloc(cap);
  for (const char *p = tmpl; out && *p;) {
    char num[32] = "";
    if (p[0] == '@' && p[1] && p[2] == '@' && strchr("MNK", p[1])) {
      snprintf(num, sizeof num, "%lld",
               (long long)(p[1] == 'M' ? m : p[1] == 'N' ? n : k));
      p += 3;
    } else {
      num[0] = *p++;
      num[1] = 0;
    }
    size_t add = strlen(num);
    if (len + add + 1 > cap) {
      char *grown = realloc(out, cap * 2 + add);
      if (!grown) {
        free(out);
        return NULL;
      }
      out = grown;
      cap = cap * 2 + add;
    }
    memcpy(out + len, num, add);
    len += add;
  }
  if (out)
    out[len] = 0;
  return out;
}

static int role_of_name(const char *name) {
  static const char *const names[3][6] = {
      {"a", "A", "lhs", "arg0", "in0", NULL},
      {"b", "B", "rhs", "arg1", "in1", NULL},
      {"c", "C", "out", "output", "result", "init"}};
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 6 && names[r][i]; ++i)
      if (name && strcmp(name, names[r][i]) == 0)
        return r;
  return -1;
}

/// Fills g->name and g->role from the manifest: program 0 if there is one,
/// else kernel 0; roles by parameter name, else by shape, else in order.
static bool pick_entry(const attnrt_manifest *mf, int64_t m, int64_t n,
                       int64_t k, struct attn_gemm *g, char *err,
                       size_t errlen) {
  const char *names[3] = {NULL, NULL, NULL};
  const struct attnrt_param_info *params[3] = {NULL, NULL, NULL};
  size_t count = 0;
  const struct attnrt_program_info *prog = attnrt_manifest_program_at(mf, 0);
  if (prog) {
    snprintf(g->name, sizeof g->name, "%s", prog->name);
    count = prog->ninputs;
    for (size_t i = 0; i < count && i < 3; ++i)
      names[i] = prog->inputs[i];
  } else {
    const struct attnrt_kernel_info *kern = attnrt_manifest_kernel_at(mf, 0);
    if (!kern) {
      snprintf(err, errlen, "the manifest has no kernel");
      return false;
    }
    snprintf(g->name, sizeof g->name, "%s", kern->name);
    for (size_t i = 0; i < kern->nparams; ++i) {
      const struct attnrt_param_info *p = &kern->params[i];
      if (p->kind == ATTNRT_ARG_TENSORMAP)
        continue;
      if (p->kind != ATTNRT_ARG_PTR) {
        snprintf(err, errlen,
                 "kernel %s parameter %s is not a pointer: gemm_bench passes "
                 "a, b, c only",
                 kern->name, p->name);
        return false;
      }
      if (count < 3) {
        names[count] = p->name;
        params[count] = p;
      }
      ++count;
    }
  }
  if (count != 3) {
    snprintf(err, errlen, "%s takes %zu arguments, expected 3 (a, b, c)",
             g->name, count);
    return false;
  }
  bool used[3] = {false, false, false}, by_name = true;
  for (int i = 0; i < 3 && by_name; ++i) {
    int r = role_of_name(names[i]);
    by_name = r >= 0 && !used[r];
    if (by_name) {
      g->role[i] = r;
      used[r] = true;
    }
  }
  if (by_name)
    return true;
  // By shape: [M,K] is A, [K,N] is B, [M,N] is C (ambiguous ones keep order).
  const int64_t want[3][2] = {{m, k}, {k, n}, {m, n}};
  bool by_shape = params[0] != NULL;
  memset(used, 0, sizeof used);
  for (int i = 0; i < 3 && by_shape; ++i) {
    int r = -1;
    for (int c = 0; c < 3 && r < 0; ++c)
      if (!used[c] && params[i]->rank == 2 &&
          params[i]->shape[0] == want[c][0] && params[i]->shape[1] == want[c][1])
        r = c;
    by_shape = r >= 0;
    if (by_shape) {
      g->role[i] = r;
      used[r] = true;
    }
  }
  if (!by_shape)
    for (int i = 0; i < 3; ++i)
      g->role[i] = i;
  return true;
}

/// The first kernel's lowering and tiles as the manifest records them
/// ("hopper-gemm 128x256x64, grid 126, 384 threads, 197696 B smem"), or "".
static void describe_kernel(const char *manifest, char *buf, size_t len) {
  buf[0] = 0;
  cJSON *root = cJSON_Parse(manifest);
  const cJSON *k0 = cJSON_GetArrayItem(
      cJSON_GetObjectItemCaseSensitive(root, "kernels"), 0);
  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(k0, "kernel");
  const cJSON *mm = cJSON_GetObjectItemCaseSensitive(k0, "matmul");
  const cJSON *grid = cJSON_GetObjectItemCaseSensitive(k0, "grid");
  const cJSON *block = cJSON_GetObjectItemCaseSensitive(k0, "block");
  const cJSON *smem =
      cJSON_GetObjectItemCaseSensitive(k0, "dynamic_shared_bytes");
  size_t used = 0;
  if (cJSON_IsString(kind))
    used += (size_t)snprintf(buf + used, len - used, "%s", kind->valuestring);
  const char *tile[3] = {"block_m", "block_n", "block_k"};
  for (int i = 0; i < 3 && mm && used < len; ++i) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(mm, tile[i]);
    if (cJSON_IsNumber(t))
      used += (size_t)snprintf(buf + used, len - used, "%s%d",
                               i ? "x" : used ? " " : "", t->valueint);
  }
  if (used < len && cJSON_IsNumber(cJSON_GetArrayItem(grid, 0)))
    used += (size_t)snprintf(buf + used, len - used, "%sgrid %d",
                             used ? ", " : "",
                             cJSON_GetArrayItem(grid, 0)->valueint);
  if (used < len && cJSON_IsNumber(cJSON_GetArrayItem(block, 0)))
    used += (size_t)snprintf(buf + used, len - used, ", %d threads",
                             cJSON_GetArrayItem(block, 0)->valueint);
  if (used < len && cJSON_IsNumber(smem))
    snprintf(buf + used, len - used, ", %d B smem", smem->valueint);
  cJSON_Delete(root);
}

static void attn_gemm_release(struct attn_gemm *g) {
  attnrt_module_destroy(g->module);
  attn_result_destroy(g->result);
  memset(g, 0, sizeof *g);
}

/// Writes r's image and manifest to dir/gemm_MxNxK.{ptx,json}; a failure
/// is reported and ignored.
static void dump_kernel(const char *dir, int64_t m, int64_t n, int64_t k,
                        const attn_result *r) {
  size_t size = 0;
  const void *data = attn_result_data(r, &size);
  const char *manifest = attn_result_manifest(r);
  const char *ext[2] = {"ptx", "json"};
  for (int i = 0; i < 2; ++i) {
    char path[1024];
    snprintf(path, sizeof path, "%s/gemm_%lldx%lldx%lld.%s", dir,
             (long long)m, (long long)n, (long long)k, ext[i]);
    FILE *f = fopen(path, "wb");
    bool ok = f && (i == 0 ? fwrite(data, 1, size, f) == size
                           : fputs(manifest, f) >= 0);
    if (f)
      ok = fclose(f) == 0 && ok;
    if (!ok)
      fprintf(stderr, "gemm_bench: cannot write %s\n", path);
  }
}

/// Compiles the matmul for m x n x k (and loads it when rt is not NULL).
/// On failure fills r->status and r->error and returns false.
static bool attn_gemm_build(const struct options *o, attnrt_runtime *rt,
                            int64_t m, int64_t n, int64_t k,
                            struct attn_gemm *g, struct row *r) {
  memset(g, 0, sizeof *g);
  char err[600] = "";
  char *tmpl = o->ir_path ? read_file(o->ir_path, err, sizeof err) : NULL;
  if (o->ir_path && !tmpl) {
    r->status = "compile failed";
    snprintf(r->error, sizeof r->error, "%s", err);
    return false;
  }
  char *ir = instantiate(tmpl ? tmpl : default_ir, m, n, k);
  free(tmpl);
  if (!ir) {
    r->status = "error";
    snprintf(r->error, sizeof r->error, "out of host memory");
    return false;
  }
  struct attn_compile_options opts;
  attn_compile_options_init(&opts);
  opts.target = "sm_90a";
  opts.format = ATTN_OUTPUT_PTX;
  opts.tile_options = o->tile_options;
  opts.source_name = o->ir_path ? o->ir_path : "gemm_bench.mlir";
  char first[BENCH_DIAG_LEN] = "";
  double t0 = now_s();
  enum attn_status st = attn_compile(ir, 0, &opts, bench_first_error, first, &g->result);
  r->compile_s = now_s() - t0;
  free(ir);
  if (st != ATTN_OK) {
    const char *last = attn_last_error();
    r->status = "compile failed";
    snprintf(r->error, sizeof r->error, "attn_compile: %s: %.500s",
             attn_status_string(st), first[0] ? first : last ? last : "");
    attn_gemm_release(g);
    return false;
  }
  const char *manifest = attn_result_manifest(g->result);
  if (o->dump_dir)
    dump_kernel(o->dump_dir, m, n, k, g->result);
  describe_kernel(manifest, r->config, sizeof r->config);
  attnrt_manifest *mf = NULL;
  enum attnrt_status rs = attnrt_manifest_parse(manifest, &mf);
  if (rs != ATTNRT_OK) {
    r->status = "error";
    bench_attnrt_error(r->error, sizeof r->error, "attnrt_manifest_parse", rs,
                       NULL);
    attn_gemm_release(g);
    return false;
  }
  bool picked = pick_entry(mf, m, n, k, g, err, sizeof err);
  attnrt_manifest_destroy(mf);
  if (!picked) {
    r->status = "error";
    snprintf(r->error, sizeof r->error, "%s", err);
    attn_gemm_release(g);
    return false;
  }
  static const char role_name[3] = {'a', 'b', 'c'};
  snprintf(r->entry, sizeof r->entry, "%s(%c, %c, %c)", g->name,
           role_name[g->role[0]], role_name[g->role[1]], role_name[g->role[2]]);
  if (!rt)
    return true;
  size_t size = 0;
  const void *ptx = attn_result_data(g->result, &size);
  rs = attnrt_module_load_ptx(rt, ptx, size, manifest, &g->module);
  if (rs != ATTNRT_OK) {
    r->status = "error";
    bench_attnrt_error(r->error, sizeof r->error, "attnrt_module_load_ptx", rs,
                       rt);
    attn_gemm_release(g);
    return false;
  }
  return true;
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
/// float64 reference ref (nrows x n), then times it; fills r.
static void measure(struct shape_ctx *x, bench_step_fn step, const double *ref,
                    const int64_t *rows, int nrows, struct row *r) {
  char err[600] = "";
  enum attnrt_status st;
  size_t c_bytes = (size_t)(x->m * x->n) * 2;
  uint16_t *got = malloc((size_t)nrows * (size_t)x->n * 2);
  float *ms = malloc((size_t)x->o->iters * sizeof *ms);
  if (!got || !ms) {
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
  if (!bench_check_pass(&r->check)) {
    r->status = "check failed";
    snprintf(r->error, sizeof r->error,
             "rel_l2 %.3g (tol %.0e), max_abs/rms %.3g (tol %.0e), %ld "
             "non-finite of %ld",
             bench_check_rel_l2(&r->check), BENCH_TOL_REL_L2,
             bench_check_max_rel(&r->check), BENCH_TOL_MAX_REL,
             r->check.nonfinite, r->check.count);
    free(got);
    free(ms);
    return;
  }
  if (!bench_time(x->rt, x->stream.s, step, NULL, NULL, x,
                  (int)x->o->warmup, (int)x->o->iters, ms, err, sizeof err))
    goto fail;
  bench_stats_of(ms, (int)x->o->iters, &r->stats);
  r->timed = true;
  r->status = "ok";
  free(got);
  free(ms);
  return;
fail:
  r->status = "error";
  snprintf(r->error, sizeof r->error, "%s", err);
  free(got);
  free(ms);
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

/// Measures one implementation (attn when `attn`, else cuBLAS) on the
/// shape of x into r: inputs, the float64 rows, the check, the timing.
static void run_shape(struct shape_ctx *x, bool attn, struct row *r) {
  const struct options *o = x->o;
  char err[600] = "";
  enum attnrt_status st;
  int nrows = (int)(o->check_rows < x->m ? o->check_rows : x->m);
  int64_t *rows = malloc((size_t)nrows * sizeof *rows);
  double *a_rows = malloc((size_t)(nrows * x->k) * sizeof *a_rows);
  double *ref = malloc((size_t)(nrows * x->n) * sizeof *ref);
  x->a = x->b = x->c = 0;
  if (!rows || !a_rows || !ref) {
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
                    nrows, x->m, rows);
  for (int i = 0; i < nrows; ++i)
    for (int64_t l = 0; l < x->k; ++l)
      a_rows[i * x->k + l] = bench_bf16_to_double(bench_rand_bf16(
          (uint64_t)o->seed, TENSOR_A, 0, (uint64_t)(rows[i] * x->k + l)));
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

  if (!attn) {
    measure(x, step_cublas, ref, rows, nrows, r);
  } else {
    struct attn_gemm g;
    if (attn_gemm_build(o, x->rt, x->m, x->n, x->k, &g, r)) {
      x->gemm = &g;
      measure(x, step_attn, ref, rows, nrows, r);
      x->gemm = NULL;
      attn_gemm_release(&g);
    }
  }
  goto out;
fail:
  r->status = "error";
  snprintf(r->error, sizeof r->error, "%s", err);
out:
  attnrt_mem_free(x->rt, x->a);
  attnrt_mem_free(x->rt, x->b);
  attnrt_mem_free(x->rt, x->c);
  free(rows);
  free(a_rows);
  free(ref);
}

//===-- Output --===//

static double tflops(const struct row *r) {
  return r->timed && r->stats.median > 0
             ? 2.0 * (double)r->m * (double)r->n * (double)r->k /
                   r->stats.median / 1e9
             : 0.0;
}

/// "1.234" or "-" for a row that was not timed.
static const char *fmt_ms(char *buf, size_t len, const struct row *r) {
  if (r->timed)
    snprintf(buf, len, "%.3f", r->stats.median);
  else
    snprintf(buf, len, "-");
  return buf;
}

/// "712" or "-" for a row that was not timed.
static const char *fmt_tflops(char *buf, size_t len, const struct row *r) {
  if (r->timed)
    snprintf(buf, len, "%.0f", tflops(r));
  else
    snprintf(buf, len, "-");
  return buf;
}

static void print_table(const struct row *rows, int nshapes,
                        const char *gpu, const char *date) {
  printf("\n## bf16 GEMM on one GPU: attn vs cuBLAS (%s, %s)\n\n", gpu, date);
  printf("| M x N x K | cuBLAS ms | cuBLAS TFLOP/s | cuBLAS rel.err | attn ms | "
         "attn TFLOP/s | attn rel.err | attn vs cuBLAS | attn compile s | "
         "note |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (int s = 0; s < nshapes; ++s) {
    const struct row *c = &rows[2 * s], *a = &rows[2 * s + 1];
    char b1[32], b2[32], t1[32], t2[32], ratio[32] = "-", cs[32] = "-",
                                         e1[32] = "-", e2[32] = "-",
                                         note[700] = "";
    if (c->timed && a->timed)
      snprintf(ratio, sizeof ratio, "%.2fx", c->stats.median / a->stats.median);
    if (a->compile_s >= 0)
      snprintf(cs, sizeof cs, "%.2f", a->compile_s);
    if (c->checked)
      snprintf(e1, sizeof e1, "%.1e", bench_check_rel_l2(&c->check));
    if (a->checked)
      snprintf(e2, sizeof e2, "%.1e", bench_check_rel_l2(&a->check));
    size_t used = 0;
    for (int i = 0; i < 2; ++i) {
      const struct row *r = i ? a : c;
      if (strcmp(r->status, "ok") != 0 && used < sizeof note)
        used += (size_t)snprintf(note + used, sizeof note - used, "%s%s %s%s%s",
                                 used ? "; " : "", r->impl, r->status,
                                 r->error[0] ? ": " : "", r->error);
    }
    // Keep the table one line per row.
    for (char *p = note; *p; ++p)
      if (*p == '\n' || *p == '|')
        *p = ' ';
    printf("| %lldx%lldx%lld | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
           (long long)c->m, (long long)c->n, (long long)c->k,
           fmt_ms(b1, sizeof b1, c), fmt_tflops(t1, sizeof t1, c), e1,
           fmt_ms(b2, sizeof b2, a), fmt_tflops(t2, sizeof t2, a), e2, ratio,
           cs, note);
  }
  printf("\nattn vs cuBLAS = cuBLAS ms / attn ms (above 1: attn is faster). "
         "rel.err = ||C - ref||/||ref|| over the sampled rows.\n");
}

static cJSON *row_json(const struct row *r, const struct row *anchor) {
  cJSON *j = cJSON_CreateObject();
  char shape[64];
  snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)r->m,
           (long long)r->n, (long long)r->k);
  cJSON_AddStringToObject(j, "shape", shape);
  cJSON_AddNumberToObject(j, "m", (double)r->m);
  cJSON_AddNumberToObject(j, "n", (double)r->n);
  cJSON_AddNumberToObject(j, "k", (double)r->k);
  cJSON_AddStringToObject(j, "impl", r->impl);
  cJSON_AddStringToObject(j, "status", r->status);
  if (r->error[0])
    cJSON_AddStringToObject(j, "error", r->error);
  if (r->entry[0])
    cJSON_AddStringToObject(j, "entry", r->entry);
  if (r->config[0])
    cJSON_AddStringToObject(j, "kernel_config", r->config);
  if (r->compile_s >= 0)
    cJSON_AddNumberToObject(j, "compile_s", r->compile_s);
  if (r->checked) {
    // JSON has no infinity: a non-finite error is written as 1e30.
    double rel = bench_check_rel_l2(&r->check);
    double mx = bench_check_max_rel(&r->check);
    cJSON_AddNumberToObject(j, "rel_l2", isfinite(rel) ? rel : 1e30);
    cJSON_AddNumberToObject(j, "max_abs_over_rms", isfinite(mx) ? mx : 1e30);
    cJSON_AddNumberToObject(j, "nonfinite", (double)r->check.nonfinite);
    cJSON_AddNumberToObject(j, "checked_values", (double)r->check.count);
    cJSON_AddBoolToObject(j, "check_pass", bench_check_pass(&r->check));
  }
  if (r->timed) {
    cJSON_AddNumberToObject(j, "ms", r->stats.median);
    cJSON_AddNumberToObject(j, "ms_min", r->stats.min);
    cJSON_AddNumberToObject(j, "ms_max", r->stats.max);
    cJSON_AddNumberToObject(j, "ms_mean", r->stats.mean);
    cJSON_AddNumberToObject(j, "tflops", tflops(r));
    if (anchor && anchor != r && anchor->timed)
      cJSON_AddNumberToObject(j, "vs_cublas",
                              anchor->stats.median / r->stats.median);
  }
  return j;
}

/// Everything the JSON holds.
struct results {
  const struct options *o;
  const struct row *rows; // 2 per shape: cuBLAS, attn
  const char *gpu, *date;
  int driver;
  const struct bench_vendor *vendor; // NULL without cuBLAS
};

/// Writes the results so far to path; false when the file cannot be written.
static bool write_results(const char *path, const struct results *res) {
  const struct options *o = res->o;
  cJSON *root = cJSON_CreateObject();
  cJSON *meta = cJSON_AddObjectToObject(root, "meta");
  cJSON_AddStringToObject(meta, "benchmark", "gemm_bench");
  cJSON_AddStringToObject(meta, "date", res->date);
  cJSON_AddStringToObject(meta, "gpu", res->gpu);
  cJSON_AddNumberToObject(meta, "device", (double)o->device);
  cJSON_AddNumberToObject(meta, "driver_cuda_version", res->driver);
  if (res->vendor) {
    cJSON_AddNumberToObject(meta, "cudart_version", res->vendor->cudart_version);
    cJSON_AddNumberToObject(meta, "cublas_version", res->vendor->cublas_version);
    cJSON_AddStringToObject(meta, "cublas_library", res->vendor->cublas_path);
  }
  cJSON_AddStringToObject(meta, "attn_version", attn_version());
  cJSON_AddNumberToObject(meta, "iters", (double)o->iters);
  cJSON_AddNumberToObject(meta, "warmup", (double)o->warmup);
  cJSON_AddNumberToObject(meta, "check_rows", (double)o->check_rows);
  cJSON_AddNumberToObject(meta, "seed", (double)o->seed);
  cJSON_AddNumberToObject(meta, "tol_rel_l2", BENCH_TOL_REL_L2);
  cJSON_AddNumberToObject(meta, "tol_max_abs_over_rms", BENCH_TOL_MAX_REL);
  cJSON_AddStringToObject(
      meta, "timing",
      "CUDA events around each launch on one stream, after warm-up; median; "
      "no L2 flush");
  cJSON *jrows = cJSON_AddArrayToObject(root, "rows");
  for (int s = 0; s < o->nshapes; ++s)
    for (int i = 0; i < 2; ++i)
      cJSON_AddItemToArray(jrows,
                           row_json(&res->rows[2 * s + i], &res->rows[2 * s]));
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  FILE *f = text ? fopen(path, "w") : NULL;
  bool ok = f && fputs(text, f) >= 0;
  if (f)
    ok = fclose(f) == 0 && ok;
  free(text);
  return ok;
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
  // cuBLAS on every shape first, then attn: a kernel that hangs (and is
  // killed by the caller's timeout) cannot take the anchors with it. The
  // JSON is rewritten after every measurement for the same reason.
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 0 ? !o.run_cublas || !have_vendor : !o.run_attn)
      continue;
    for (int s = 0; s < o.nshapes; ++s) {
      struct row *r = &rows[2 * s + pass];
      x.m = r->m;
      x.n = r->n;
      x.k = r->k;
      double t0 = now_s();
      run_shape(&x, pass == 1, r);
      printf("gemm_bench: %lldx%lldx%lld %s: %s%s%s (%.1f s)\n",
             (long long)x.m, (long long)x.n, (long long)x.k, r->impl,
             r->status, r->timed ? "" : r->error[0] ? ": " : "",
             r->timed ? "" : r->error, now_s() - t0);
      if (!write_results(path, &res)) {
        fprintf(stderr, "gemm_bench: cannot write %s\n", path);
        status = 1;
      }
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
