// gemm_bench.h - what gemm_bench's files share (bench/gemm_bench.c: options, one shape and main; gemm_bench_attn.c: attn's kernel, compiled, loaded and picked from its manifest; gemm_bench_report.c: the markdown table and the JSON).

#ifndef ATTN_BENCH_GEMM_BENCH_H
#define ATTN_BENCH_GEMM_BENCH_H

#include "attn/attn.h"
#include "attnrt.h"
#include "bench/bench_common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { TENSOR_A = 1, TENSOR_B = 2 };

#define MAX_SHAPES 16
#define MAX_ROUNDS 16
#define DEFAULT_SHAPES \
  "8192x8192x8192,4096x8192x4096,4096x4096x4096,8000x8000x8000"


struct options {
  int64_t shape[MAX_SHAPES][3];
  int nshapes;
  long iters, warmup, device, check_rows, seed;
  long cooldown_ms; // idle GPU time before each timing round's warm-up
  long rounds;      // timing rounds per shape, the implementations in turn
  bool run_attn, run_cublas, compile_only;
  const char *json_path;
  const char *ir_path;      // --attn-ir: a template file instead of default_ir
  const char *tile_options; // --tile-options for attn_compile
  const char *hopper_options; // --hopper-options for attn_compile
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
  struct bench_stats stats; // over every timed launch of every round
  int nrounds;              // rounds timed
  double round_ms[MAX_ROUNDS]; // each round's median
  double compile_s; // attn only; < 0 when not compiled
  char entry[160];  // attn only: the program or kernel launched and its args
  char config[160]; // attn only: the kernel's configuration per its manifest
};

/// A compiled and (on a GPU) loaded matmul: what to launch with which
/// arguments.
struct attn_gemm {
  attn_result *result;
  attnrt_module *module; // NULL with --compile-only
  char name[128];        // the program or kernel to launch
  int role[3];           // role[i]: 0 (A), 1 (B) or 2 (C) of argument i
};

/// Everything the JSON holds.
struct results {
  const struct options *o;
  const struct row *rows; // 2 per shape: cuBLAS, attn
  const char *gpu, *date;
  int driver;
  const struct bench_vendor *vendor; // NULL without cuBLAS
};

//===-- gemm_bench_attn.c --===//

/// Compiles the matmul for m x n x k (and loads it when rt is not NULL).
/// On failure fills r->status and r->error and returns false.
bool attn_gemm_build(const struct options *o, attnrt_runtime *rt, int64_t m,
                     int64_t n, int64_t k, struct attn_gemm *g, struct row *r);
void attn_gemm_release(struct attn_gemm *g);

//===-- gemm_bench_report.c --===//

/// The markdown table of rows (2 per shape: cuBLAS, attn) on stdout.
void print_table(const struct row *rows, int nshapes, const char *gpu,
                 const char *date);
/// Writes the results so far to path; false when the file cannot be written.
bool write_results(const char *path, const struct results *res);

#endif // ATTN_BENCH_GEMM_BENCH_H
