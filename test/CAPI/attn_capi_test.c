//===- attn_capi_test.c - Tests of libattn through its public header ------===//
//
// RUN by test/CAPI/attn.test: attn-capi-test <source root> | FileCheck.
// Each test_* prints @test_name for a CHECK-LABEL and one line per fact; the
// diagnostic callback prints `diag <severity> <file>:<line>:<col>: <message>`.
// Numerics compare attn_cpu_kernel_run with lib/Reference in float64.
//
//===----------------------------------------------------------------------===//
#include "attn/attn.h"

#include "lib/Reference/attn_reference.h"
#include "lib/Reference/comm_reference.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *src_root;

static const char *sev_name(int s) {
  static const char *names[] = {"error", "warning", "note", "remark"};
  return s >= 0 && s < 4 ? names[s] : "?";
}

/// Prints each error (notes are MLIR's "see current operation" dumps: only
/// counted) with its location.
static void print_diag(void *user, int severity, const char *file, int line,
                       int col, const char *message) {
  int *notes = user;
  if (severity == ATTN_SEVERITY_NOTE) {
    if (notes)
      ++*notes;
    return;
  }
  printf("diag %s %s:%d:%d: %s\n", sev_name(severity), file ? file : "-",
         line, col, message);
}

static char *read_file(const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", src_root, rel);
  FILE *f = fopen(path, "rb");
  if (!f) {
    printf("cannot open %s\n", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf)
    buf[n] = '\0';
  fclose(f);
  return buf;
}

/// Compiles text with options o (source name "input.mlir") and prints the
/// status; the result goes to *out, or is destroyed when out is NULL.
static enum attn_status compile_with(const char *text,
                                     struct attn_compile_options *o,
                                     attn_result **out) {
  o->source_name = "input.mlir";
  attn_result *r = NULL;
  enum attn_status st = attn_compile(text, 0, o, print_diag, NULL, &r);
  printf("status %s\n", attn_status_string(st));
  if (out)
    *out = r;
  else
    attn_result_destroy(r);
  return st;
}

/// Compiles text with the given target/format/options and prints the status.
static enum attn_status try_compile(const char *text, const char *target,
                                    enum attn_output_format format,
                                    const char *features, const char *tile,
                                    const char *toolkit, attn_result **out) {
  struct attn_compile_options o;
  attn_compile_options_init(&o);
  o.target = target;
  o.format = format;
  o.features = features;
  o.tile_options = tile;
  o.toolkit = toolkit;
  return compile_with(text, &o, out);
}

/// try_compile with lower-tile-to-hopper options (PTX, default features).
static enum attn_status try_compile_hopper(const char *text, const char *target,
                                           const char *hopper,
                                           attn_result **out) {
  struct attn_compile_options o;
  attn_compile_options_init(&o);
  o.target = target;
  o.hopper_options = hopper;
  return compile_with(text, &o, out);
}

/// Prints the first kernel's family and grid from r's manifest, then frees r.
static void print_grid(attn_result *r) {
  const char *m = attn_result_manifest(r);
  const char *g = m ? strstr(m, "\"grid\":\t[") : NULL;
  const char *end = g ? strchr(g, ']') : NULL;
  printf("manifest%s grid %.*s\n",
         m && strstr(m, "\"hopper-wgmma\"") ? " hopper-wgmma" : "",
         end ? (int)(end + 1 - (g + 8)) : 1, end ? g + 8 : "?");
  attn_result_destroy(r);
}

//===-- Success -----------------------------------------------------------===//

static void test_version(void) {
  printf("@test_version\n");
  printf("version %s\n", attn_version());
  printf("ok=%s unknown=%s\n", attn_status_string(ATTN_OK),
         attn_status_string((enum attn_status)99));
}

static void test_ptx(void) {
  printf("@test_ptx\n");
  char *text = read_file("examples/rope_causal.mlir");
  attn_result *r = NULL;
  try_compile(text, NULL, ATTN_OUTPUT_DEFAULT, NULL, NULL, NULL, &r);
  size_t size = 0;
  const char *ptx = attn_result_data(r, &size);
  printf("format ptx=%d size_ok=%d nul=%d\n",
         attn_result_format(r) == ATTN_OUTPUT_PTX,
         ptx && size == strlen(ptx), ptx && ptx[size] == '\0');
  printf("%s", ptx && strstr(ptx, ".target sm_90a") ? ".target sm_90a\n" : "");
  printf("%s", ptx && strstr(ptx, ".visible .entry rope_causal(")
                   ? ".visible .entry rope_causal(\n"
                   : "");
  const char *m = attn_result_manifest(r);
  printf("manifest %s\n", m && strstr(m, "\"grid\":\t[32, 8, 1]")
                              ? "grid [32, 8, 1]"
                              : "?");
  attn_result_destroy(r);
  // Tile options and an explicit chip and PTX ISA reach the lowering.
  try_compile(text, "sm_80", ATTN_OUTPUT_PTX, "+ptx78", "block-m=16 block-n=32",
              NULL, &r);
  ptx = attn_result_data(r, NULL);
  printf("%s", ptx && strstr(ptx, ".target sm_80") ? ".target sm_80\n" : "");
  printf("%s", ptx && strstr(ptx, ".version 7.8") ? ".version 7.8\n" : "");
  m = attn_result_manifest(r);
  printf("manifest %s\n", m && strstr(m, "\"grid\":\t[63, 8, 1]")
                              ? "grid [63, 8, 1]"
                              : "?");
  attn_result_destroy(r);
  free(text);
}

static const char gpu_level[] =
    "module attributes {gpu.container_module} {\n"
    "  gpu.module @kernels [#nvvm.target<chip = \"sm_80\", features = "
    "\"%s\">] {\n"
    "    gpu.func @add_one(%%a: memref<4xf32>) kernel attributes "
    "{known_block_size = array<i32: 4, 1, 1>, known_grid_size = array<i32: "
    "1, 1, 1>} {\n"
    "      %%i = gpu.thread_id x\n"
    "      %%x = memref.load %%a[%%i] : memref<4xf32>\n"
    "      %%one = arith.constant 1.0 : f32\n"
    "      %%y = arith.addf %%x, %%one : f32\n"
    "      memref.store %%y, %%a[%%i] : memref<4xf32>\n"
    "      gpu.return\n"
    "    }\n"
    "  }\n"
    "}\n";

static void test_gpu_level(void) {
  printf("@test_gpu_level\n");
  char text[2048];
  snprintf(text, sizeof text, gpu_level, "+ptx70");
  attn_result *r = NULL;
  try_compile(text, NULL, ATTN_OUTPUT_PTX, NULL, NULL, NULL, &r);
  const char *ptx = attn_result_data(r, NULL);
  printf("%s", ptx && strstr(ptx, ".entry add_one") ? ".entry add_one\n" : "");
  attn_result_destroy(r);
  // A chip/PTX pair LLVM would die on is caught first, at the gpu.module.
  snprintf(text, sizeof text, gpu_level, "+ptx60");
  try_compile(text, NULL, ATTN_OUTPUT_PTX, NULL, NULL, NULL, NULL);
  snprintf(text, sizeof text, gpu_level, "+ptx70");
  try_compile(text, "sm_90a", ATTN_OUTPUT_PTX, NULL, NULL, NULL, NULL);
  char *nochip = malloc(sizeof text);
  snprintf(nochip, sizeof text, "%s", text);
  char *at = strstr(nochip, "chip = \"sm_80\", ");
  memmove(at, at + 16, strlen(at + 16) + 1);
  try_compile(nochip, NULL, ATTN_OUTPUT_PTX, NULL, NULL, NULL, NULL);
  free(nochip);
}

static void test_cubin(void) {
  printf("@test_cubin\n");
  char *text = read_file("test/Inputs/tiny_f32.mlir");
  struct attn_compile_options o;
  attn_compile_options_init(&o);
  o.format = ATTN_OUTPUT_CUBIN;
  attn_result *r = NULL;
  enum attn_status st = attn_compile(text, 0, &o, NULL, NULL, &r);
  size_t size = 0;
  const unsigned char *bin = attn_result_data(r, &size);
  if (st == ATTN_ERR_NO_TOOLKIT)
    printf("cubin: no toolkit\n");
  else
    printf("cubin: %s\n", st == ATTN_OK && size > 4 && !memcmp(bin, "\177ELF", 4)
                              ? "ELF"
                              : attn_last_error());
  attn_result_destroy(r);
  free(text);
}

static void test_cpu_output(void) {
  printf("@test_cpu_output\n");
  char *text = read_file("test/Inputs/tiny_f32.mlir");
  attn_result *r = NULL;
  try_compile(text, "cpu", ATTN_OUTPUT_LLVM_IR, NULL, NULL, NULL, &r);
  const char *ir = attn_result_data(r, NULL);
  printf("%s", ir && strstr(ir, "define void @tiny_f32(") ? "define void "
                                                            "@tiny_f32(\n"
                                                          : "");
  attn_result_destroy(r);
  try_compile(text, "cpu", ATTN_OUTPUT_DEFAULT, NULL, NULL, NULL, &r);
  const char *mlir = attn_result_data(r, NULL);
  printf("format llvm-mlir=%d\n",
         attn_result_format(r) == ATTN_OUTPUT_LLVM_MLIR);
  printf("%s", mlir && strstr(mlir, "llvm.func @tiny_f32(") ? "llvm.func "
                                                              "@tiny_f32(\n"
                                                            : "");
  printf("%s", mlir && strstr(mlir, "attn.manifest = ") ? "attn.manifest\n"
                                                        : "");
  const char *m = attn_result_manifest(r);
  printf("%s", m && strstr(m, "\"target\":\t\"cpu\"") ? "target cpu\n" : "");
  attn_result_destroy(r);
  free(text);
}

//===-- CPU numerics ------------------------------------------------------===//

struct numerics_case {
  const char *file, *name;
  struct attn_ref_problem p;
  int bits; // 32, 16 (f16) or -16 (bf16)
  double tolerance;
};

static void fill(struct attn_rng *rng, int bits, void *buf, double *ref,
                 size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float x = (float)attn_rng_normal(rng);
    if (bits == 32) {
      ((float *)buf)[i] = x;
      ref[i] = x;
    } else {
      uint16_t h = bits < 0 ? attn_f32_to_bf16(x) : attn_f32_to_f16(x);
      ((uint16_t *)buf)[i] = h;
      ref[i] = bits < 0 ? attn_bf16_to_f32(h) : attn_f16_to_f32(h);
    }
  }
}

static double get(int bits, const void *buf, size_t i) {
  if (bits == 32)
    return ((const float *)buf)[i];
  uint16_t h = ((const uint16_t *)buf)[i];
  return bits < 0 ? attn_bf16_to_f32(h) : attn_f16_to_f32(h);
}

/// Runs k on fresh inputs and returns the relative error against the
/// reference (NaN on failure).
static double check_numerics(attn_cpu_kernel *k, const struct numerics_case *c,
                             uint64_t seed) {
  const struct attn_ref_problem *p = &c->p;
  size_t n[4] = {
      (size_t)(p->batch * p->heads * p->seq_q * p->head_dim),
      (size_t)(p->batch * p->kv_heads * p->seq_k * p->head_dim),
      (size_t)(p->batch * p->kv_heads * p->seq_k * p->value_dim),
      (size_t)(p->batch * p->heads * p->seq_q * p->value_dim)};
  size_t es = c->bits == 32 ? 4 : 2;
  void *buf[4];
  double *ref[4];
  for (int i = 0; i < 4; ++i) {
    buf[i] = malloc(n[i] * es);
    ref[i] = malloc(n[i] * sizeof(double));
  }
  struct attn_rng rng;
  attn_rng_seed(&rng, seed);
  for (int i = 0; i < 3; ++i)
    fill(&rng, c->bits, buf[i], ref[i], n[i]);
  memset(buf[3], 0xff, n[3] * es); // NaN poison
  double err = NAN;
  if (attn_reference(p, ref[0], ref[1], ref[2], ref[3]) &&
      attn_cpu_kernel_run(k, c->name, buf, 4) == ATTN_OK) {
    double *got = malloc(n[3] * sizeof(double));
    for (size_t i = 0; i < n[3]; ++i)
      got[i] = get(c->bits, buf[3], i);
    err = attn_rel_error(got, ref[3], n[3]);
    free(got);
  }
  for (int i = 0; i < 4; ++i) {
    free(buf[i]);
    free(ref[i]);
  }
  return err;
}

#define PROBLEM(b, h, hk, n, m, d, dv, s)                                      \
  .batch = b, .heads = h, .kv_heads = hk, .seq_q = n, .seq_k = m,              \
  .head_dim = d, .value_dim = dv, .scale = s

static const struct numerics_case cases[] = {
    {"test/Inputs/tiny_f32.mlir", "tiny_f32",
     {PROBLEM(1, 1, 1, 1, 1, 8, 8, 0.35355339059327373), .causal = true,
      .rope = true, .theta = 10000.0, .rotary_dim = 8},
     32, 1e-4},
    {"test/Inputs/causal_f32.mlir", "causal_f32",
     {PROBLEM(3, 2, 2, 130, 130, 16, 16, 0.25), .causal = true}, 32, 1e-4},
    {"test/Inputs/cross_f32.mlir", "cross_f32",
     {PROBLEM(1, 2, 1, 100, 257, 32, 48, 0.17677669529663687), .rope = true,
      .theta = 10000.0, .rotary_dim = 32},
     32, 1e-4},
    {"test/Inputs/plain_f16.mlir", "plain_f16",
     {PROBLEM(1, 4, 4, 200, 200, 64, 64, 0.125)}, 16, 5e-3},
    {"test/Inputs/gqa_bf16.mlir", "gqa_bf16",
     {PROBLEM(2, 8, 2, 333, 333, 128, 128, 0.08838834764831845), .causal = true,
      .rope = true, .theta = 500000.0, .rotary_dim = 64, .interleaved = true},
     -16, 2e-2},
};

static void test_cpu_numerics(void) {
  printf("@test_cpu_numerics\n");
  for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
    const struct numerics_case *c = &cases[i];
    char *text = read_file(c->file);
    attn_cpu_kernel *k = NULL;
    enum attn_status st =
        attn_cpu_kernel_create(text, 0, NULL, print_diag, NULL, &k);
    double err = st == ATTN_OK ? check_numerics(k, c, 1234 + i) : NAN;
    printf("%s: status %s rel_error %s\n", c->name, attn_status_string(st),
           err <= c->tolerance ? "PASS" : "FAIL");
    if (!(err <= c->tolerance))
      printf("  rel_error=%.3e tolerance=%.1e\n", err, c->tolerance);
    attn_cpu_kernel_destroy(k);
    free(text);
  }
  // The LLVM-dialect output of attn_compile goes back in, manifest included.
  char *text = read_file(cases[2].file);
  attn_result *r = NULL;
  try_compile(text, "cpu", ATTN_OUTPUT_LLVM_MLIR, NULL, "block-m=16", NULL, &r);
  attn_cpu_kernel *k = NULL;
  enum attn_status st = attn_cpu_kernel_create(attn_result_data(r, NULL), 0,
                                               NULL, print_diag, NULL, &k);
  const char *m = attn_cpu_kernel_manifest(k);
  printf("round trip: status %s manifest %s rel_error %s\n",
         attn_status_string(st),
         m && strstr(m, "\"name\":\t\"cross_f32\"") ? "cross_f32" : "?",
         check_numerics(k, &cases[2], 99) <= 1e-4 ? "PASS" : "FAIL");
  attn_cpu_kernel_destroy(k);
  attn_result_destroy(r);
  free(text);
}

//===-- Captured tensors --------------------------------------------------===//

/// The bias table of test_cpu_captures, for the reference's score_fn:
/// s + bias[clamp(q - kv + 7, 0, 14)].
static double bias_fn(void *ctx, double s, int64_t b, int64_t h, int64_t q,
                      int64_t kv) {
  (void)b, (void)h;
  int64_t e = q - kv + 7;
  e = e < 0 ? 0 : e > 14 ? 14 : e;
  return s + ((const double *)ctx)[e];
}

/// A score_mod body capturing a bias table: attn_cpu_kernel_run takes it
/// after q, k and v (the manifest lists it as capture0 with its shape), and
/// the output matches the reference computing the same body.
static void test_cpu_captures(void) {
  printf("@test_cpu_captures\n");
  static const char *text =
      "func.func @bias(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, "
      "%v: tensor<1x2x8x16xf32>, %bias: tensor<15xf32>) -> "
      "tensor<1x2x8x16xf32> {\n"
      "  %s = \"attn.qk\"(%q, %k) : (tensor<1x2x8x16xf32>, "
      "tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>\n"
      "  %s1 = \"attn.scale\"(%s) {scale = 0.25 : f64} : "
      "(tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>\n"
      "  %s2 = \"attn.score_mod\"(%s1) ({\n"
      "  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):\n"
      "    %c7 = arith.constant 7 : index\n"
      "    %d = arith.subi %i, %j : index\n"
      "    %e = arith.addi %d, %c7 : index\n"
      "    %t = tensor.extract %bias[%e] : tensor<15xf32>\n"
      "    %y = arith.addf %x, %t : f32\n"
      "    gpu.yield %y : f32\n"
      "  }) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>\n"
      "  %p = \"attn.softmax\"(%s2) : (tensor<1x2x8x8xf32>) -> "
      "tensor<1x2x8x8xf32>\n"
      "  %o = \"attn.pv\"(%p, %v) : (tensor<1x2x8x8xf32>, "
      "tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>\n"
      "  return %o : tensor<1x2x8x16xf32>\n"
      "}\n";
  attn_cpu_kernel *k = NULL;
  enum attn_status st =
      attn_cpu_kernel_create(text, 0, NULL, print_diag, NULL, &k);
  printf("status %s\n", attn_status_string(st));
  const char *m = k ? attn_cpu_kernel_manifest(k) : NULL;
  printf("%s", m && strstr(m, "\"name\":\t\"capture0\"") ? "capture0\n" : "");
  enum { N = 1 * 2 * 8 * 16 };
  float q[N], kk[N], v[N], out[N], bias[15];
  double rq[N], rk[N], rv[N], want[N], got[N], rbias[15];
  struct attn_rng rng;
  attn_rng_seed(&rng, 28);
  fill(&rng, 32, q, rq, N);
  fill(&rng, 32, kk, rk, N);
  fill(&rng, 32, v, rv, N);
  fill(&rng, 32, bias, rbias, 15);
  memset(out, 0xff, sizeof out);
  struct attn_ref_problem p = {PROBLEM(1, 2, 2, 8, 8, 16, 16, 0.25),
                               .nmods = 2,
                               .mods = {ATTN_REF_SCALE, ATTN_REF_FN},
                               .score_fn = bias_fn,
                               .fn_ctx = rbias};
  void *bufs[5] = {q, kk, v, bias, out};
  double err = NAN;
  if (st == ATTN_OK && attn_reference(&p, rq, rk, rv, want) &&
      attn_cpu_kernel_run(k, "bias", bufs, 5) == ATTN_OK) {
    for (int i = 0; i < N; ++i)
      got[i] = out[i];
    err = attn_rel_error(got, want, N);
  }
  printf("bias: rel_error %s\n", err <= 1e-4 ? "PASS" : "FAIL");
  // Without the capture the call names the count it expects.
  st = k ? attn_cpu_kernel_run(k, "bias", bufs, 4) : ATTN_ERR_INVALID_ARGUMENT;
  printf("4 buffers: status %s\n", attn_status_string(st));
  attn_cpu_kernel_destroy(k);
}

//===-- GEMM (linalg.matmul) ----------------------------------------------===//

/// A linalg.matmul program compiles like an attention one: PTX with a
/// "matmul" manifest entry, and a CPU kernel (a, b, c) that adds a * b to c
/// in place when c is the matmul's init; an unsupported matmul is a
/// diagnostic at its line.
static void test_matmul(void) {
  printf("@test_matmul\n");
  char *text = read_file("test/Inputs/matmul_tails.mlir");
  attn_result *r = NULL;
  try_compile(text, "sm_80", ATTN_OUTPUT_PTX, NULL, NULL, NULL, &r);
  const char *ptx = attn_result_data(r, NULL);
  printf("%s", ptx && strstr(ptx, ".visible .entry tails_acc_f32(")
                   ? ".visible .entry tails_acc_f32(\n"
                   : "");
  const char *m = attn_result_manifest(r);
  printf("manifest %s\n", m && strstr(m, "\"matmul\":\t{") &&
                                  strstr(m, "\"accumulate\":\ttrue")
                              ? "matmul accumulate"
                              : "?");
  attn_result_destroy(r);
  attn_cpu_kernel *k = NULL;
  enum attn_status st =
      attn_cpu_kernel_create(text, 0, NULL, print_diag, NULL, &k);
  enum { M = 130, N = 70, K = 50 };
  float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
  float *c = malloc(sizeof(float) * M * N);
  double *ra = malloc(sizeof(double) * M * K),
         *rb = malloc(sizeof(double) * K * N),
         *want = malloc(sizeof(double) * M * N),
         *got = malloc(sizeof(double) * M * N);
  struct attn_rng rng;
  attn_rng_seed(&rng, 42);
  fill(&rng, 32, a, ra, M * K);
  fill(&rng, 32, b, rb, K * N);
  fill(&rng, 32, c, want, M * N);
  void *bufs[3] = {a, b, c};
  double err = NAN;
  if (st == ATTN_OK &&
      attn_reference_matmul(M, N, K, ra, rb, want, want, NULL, 0) &&
      attn_cpu_kernel_run(k, "tails_acc_f32", bufs, 3) == ATTN_OK) {
    for (size_t i = 0; i < M * N; ++i)
      got[i] = c[i];
    err = attn_rel_error(got, want, M * N);
  }
  printf("tails_acc_f32: status %s rel_error %s\n", attn_status_string(st),
         err <= 1e-5 ? "PASS" : "FAIL");
  attn_cpu_kernel_destroy(k);
  free(a);
  free(b);
  free(c);
  free(ra);
  free(rb);
  free(want);
  free(got);
  free(text);
  static const char transposed[] =
      "func.func @t(%a: tensor<8x4xf32>, %b: tensor<8x4xf32>, %c: "
      "tensor<8x8xf32>) -> tensor<8x8xf32> {\n"
      "  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, "
      "d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> "
      "(d0, d1)>] ins(%a, %b : tensor<8x4xf32>, tensor<8x4xf32>) outs(%c : "
      "tensor<8x8xf32>) -> tensor<8x8xf32>\n"
      "  return %r : tensor<8x8xf32>\n}\n";
  try_compile(transposed, NULL, ATTN_OUTPUT_DEFAULT, NULL, NULL, NULL, NULL);
}

//===-- Error paths -------------------------------------------------------===//

static void test_hopper_options(void) {
  printf("@test_hopper_options\n");
  // 48 tiles (3 query blocks, 8 heads, 2 batches): 48 CTAs by default, ctas
  // of them when asked (a GPU with fewer SMs than an H200).
  char *text = read_file("test/Inputs/gqa_bf16.mlir");
  attn_result *r = NULL;
  try_compile_hopper(text, "sm_90a", NULL, &r);
  print_grid(r);
  try_compile_hopper(text, "sm_90a", "ctas=7", &r);
  print_grid(r);
  try_compile_hopper(text, "sm_90a", "ctas=7 persistent=false", &r);
  print_grid(r);
  // Other chips do not run lower-tile-to-hopper: the options are unused.
  try_compile_hopper(text, "sm_80", "ctas=7", &r);
  print_grid(r);
  // Valid options the kernel cannot take: a located error.
  try_compile_hopper(text, "sm_90a", "stages=4", NULL);
  free(text);
  // A tile kernel takes lower-tile-to-hopper{fallback=true <options>}.
  text = read_file("test/Inputs/tile/h64_causal_tile.mlir");
  try_compile_hopper(text, "sm_90a", "ctas=5", &r);
  print_grid(r);
  free(text);
}

/// Prints whether the manifest of r names each kernel of names[0..n), then
/// frees r.
static void print_kernels(attn_result *r, int n, const char *const *names) {
  const char *m = attn_result_manifest(r);
  for (int i = 0; i < n; ++i) {
    char key[128];
    snprintf(key, sizeof key, "\"name\":\t\"%s\"", names[i]);
    printf("%s%s=%d", i ? " " : "kernels ", names[i], m && strstr(m, key));
  }
  printf("\n");
  attn_result_destroy(r);
}

static void test_grad(void) {
  printf("@test_grad\n");
  // grad asks for attn-grad after attn-fuse: the forward with lse and the
  // backward's two kernels, on a GPU target and on cpu; without it, none.
  char *text = read_file("test/Inputs/causal_f32.mlir");
  static const char *const names[3] = {"causal_f32", "causal_f32__grad__dkdv",
                                       "causal_f32__grad__dq"};
  const char *targets[2] = {"sm_80", "cpu"};
  for (int t = 0; t < 2; ++t)
    for (int g = 1; g >= 0; --g) {
      struct attn_compile_options o;
      attn_compile_options_init(&o);
      o.target = targets[t];
      o.grad = g;
      attn_result *r = NULL;
      compile_with(text, &o, &r);
      print_kernels(r, 3, names);
    }
  free(text);
}

/// Fills n doubles with N(0, 1) samples (the f64 program's inputs as they
/// are: nothing to round).
static void fill_f64(struct attn_rng *rng, double *x, size_t n) {
  for (size_t i = 0; i < n; ++i)
    x[i] = attn_rng_normal(rng);
}

static void test_f64(void) {
  printf("@test_f64\n");
  // An f64 program with grad (issue 29's gradcheck): the forward gives out
  // and an f64 lse, the backward's kernels dk, dv and dq, all in float64,
  // on cpu; a GPU target refuses it, located.
  char *text = read_file("test/Inputs/f64_programs.mlir");
  struct attn_compile_options o;
  attn_compile_options_init(&o);
  o.target = "cpu";
  o.grad = 1;
  attn_cpu_kernel *k = NULL;
  enum attn_status st =
      attn_cpu_kernel_create(text, 0, &o, print_diag, NULL, &k);
  printf("cpu: status %s\n", attn_status_string(st));
  struct attn_ref_problem p = {PROBLEM(2, 2, 2, 45, 45, 16, 16, 0.25),
                               .causal = true,
                               .rope = true,
                               .theta = 10000.0,
                               .rotary_dim = 16,
                               .q_offset = 7,
                               .k_offset = 3};
  size_t nx = 2 * 2 * 45 * 16, nl = 2 * 2 * 45;
  // q, k, v, out, lse, dout, dq, dk, dv; then the reference's.
  double *x[9], *want[6];
  for (int i = 0; i < 9; ++i)
    x[i] = malloc((i == 4 ? nl : nx) * sizeof(double));
  for (int i = 0; i < 6; ++i)
    want[i] = malloc((i == 1 ? nl : nx) * sizeof(double));
  struct attn_rng rng;
  attn_rng_seed(&rng, 64);
  for (int i = 0; i < 3; ++i)
    fill_f64(&rng, x[i], nx);
  fill_f64(&rng, x[5], nx);
  for (int i = 6; i < 9; ++i)
    memset(x[i], 0xff, nx * sizeof(double)); // NaN poison
  void *fwd[5] = {x[0], x[1], x[2], x[3], x[4]};
  void *dkdv[8] = {x[0], x[1], x[2], x[3], x[4], x[5], x[7], x[8]};
  void *dq[7] = {x[0], x[1], x[2], x[3], x[4], x[5], x[6]};
  bool ran = st == ATTN_OK &&
             attn_cpu_kernel_run(k, "rope_causal_f64", fwd, 5) == ATTN_OK &&
             attn_cpu_kernel_run(k, "rope_causal_f64__grad__dkdv", dkdv, 8) ==
                 ATTN_OK &&
             attn_cpu_kernel_run(k, "rope_causal_f64__grad__dq", dq, 7) ==
                 ATTN_OK;
  bool refs = attn_reference(&p, x[0], x[1], x[2], want[0]) &&
              attn_reference_grad(&p, x[0], x[1], x[2], x[5], want[2],
                                  want[3], want[4], NULL, want[1]);
  // out, lse, dq, dk, dv against the reference, all to 1e-10.
  static const char *const names[5] = {"out", "lse", "dq", "dk", "dv"};
  const int got_of[5] = {3, 4, 6, 7, 8}, want_of[5] = {0, 1, 2, 3, 4};
  for (int i = 0; i < 5; ++i) {
    double err = ran && refs ? attn_rel_error(x[got_of[i]], want[want_of[i]],
                                              i == 1 ? nl : nx)
                             : NAN;
    printf("%s%s %s", i ? " " : "", names[i],
           err <= 1e-10 ? "PASS" : "FAIL");
    if (!(err <= 1e-10))
      printf(" (%.3e)", err);
  }
  printf("\n");
  // The forward's lse parameter in the manifest: its dtype follows.
  const char *m = attn_cpu_kernel_manifest(k);
  const char *lse = m ? strstr(m, "\"name\":\t\"lse\"") : NULL;
  const char *dt = lse ? strstr(lse, "\"dtype\":\t\"") : NULL;
  printf("manifest lse %.3s\n", dt ? dt + strlen("\"dtype\":\t\"") : "?");
  attn_cpu_kernel_destroy(k);
  for (int i = 0; i < 9; ++i)
    free(x[i]);
  for (int i = 0; i < 6; ++i)
    free(want[i]);
  o.target = "sm_90a";
  o.grad = 0;
  compile_with(text, &o, NULL);
  free(text);
}

static void test_parse_errors(void) {
  printf("@test_parse_errors\n");
  char *text = read_file("test/Inputs/errors/bad_syntax.mlir");
  struct attn_compile_options o;
  attn_compile_options_init(&o);
  o.source_name = "bad_syntax.mlir";
  attn_result *r = (attn_result *)&o; // must be reset to NULL
  enum attn_status st = attn_compile(text, 0, &o, print_diag, NULL, &r);
  printf("status %s result %s\n", attn_status_string(st), r ? "set" : "NULL");
  printf("last %s\n", attn_last_error());
  free(text);
  // IRDL ops have no custom syntax: MLIR fails without a word, we do not.
  try_compile("func.func @f(%q: tensor<1x1x1x8xf32>) {\n"
              "  %r = attn.causal %q : tensor<1x1x1x8xf32>\n"
              "  return\n}\n",
              NULL, 0, NULL, NULL, NULL, NULL);
  // The attn verifier, located.
  try_compile("func.func @f(%q: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> "
              "{\n"
              "  %r = \"attn.rope\"(%q) {theta = 10000.0 : f64, rotary_dim = 7 "
              ": i64, layout = \"rotate_half\"} : (tensor<1x1x4x8xf32>) -> "
              "tensor<1x1x4x8xf32>\n"
              "  return %r : tensor<1x1x4x8xf32>\n}\n",
              "cpu", 0, NULL, NULL, NULL, NULL);
  // A building block the compiler does not know (yet).
  try_compile("func.func @f(%s: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> "
              "{\n"
              "  %w = \"attn.nosuchop\"(%s) : (tensor<1x1x4x4xf32>) -> "
              "tensor<1x1x4x4xf32>\n"
              "  return %w : tensor<1x1x4x4xf32>\n}\n",
              NULL, 0, NULL, NULL, NULL, NULL);
}

/// Text of a function whose attribute `a` is an array nested depth deep,
/// then `tail` (without a NUL when len is given). Caller frees.
static char *nested_array(int depth, const char *tail) {
  const char *head = "func.func @f() attributes {a = ";
  size_t n = strlen(head) + 2 * (size_t)depth + strlen(tail) + 1;
  char *text = malloc(n);
  if (!text)
    return NULL;
  char *p = text + sprintf(text, "%s", head);
  memset(p, '[', (size_t)depth);
  memset(p + depth, ']', (size_t)depth);
  sprintf(p + 2 * depth, "%s", tail);
  return text;
}

/// Issue 27: text nested deeper than MLIR's parser can take (10,000 arrays)
/// used to overflow the stack inside attn_compile; now a located error.
static void test_nesting(void) {
  printf("@test_nesting\n");
  char *deep = nested_array(10000, "} { return }\n");
  try_compile(deep, "cpu", 0, NULL, NULL, NULL, NULL);
  try_compile(deep, NULL, 0, NULL, NULL, NULL, NULL);
  printf("last %s\n", attn_last_error());
  // An explicit length and no NUL: the scan stays inside (ASan checks).
  size_t n = strlen(deep);
  char *sized = malloc(n);
  memcpy(sized, deep, n);
  struct attn_compile_options o;
  attn_compile_options_init(&o);
  o.source_name = "sized.mlir";
  attn_result *r = NULL;
  enum attn_status st = attn_compile(sized, n, &o, print_diag, NULL, &r);
  printf("sized status %s\n", attn_status_string(st));
  free(sized);
  free(deep);
  // At the limit: parsed, then nothing to compile.
  char *ok = nested_array(255, "} { return }\n");
  try_compile(ok, "cpu", 0, NULL, NULL, NULL, NULL);
  free(ok);
}

static void test_compile_errors(void) {
  printf("@test_compile_errors\n");
  try_compile("func.func @f(%a: f32) -> f32 {\n  return %a : f32\n}\n", NULL, 0,
              NULL, NULL, NULL, NULL);
  try_compile("func.func @f(%a: f32) -> f32 {\n  return %a : f32\n}\n", "cpu",
              0, NULL, NULL, NULL, NULL);
  char text[2048];
  snprintf(text, sizeof text, gpu_level, "+ptx70");
  try_compile(text, "cpu", 0, NULL, NULL, NULL, NULL);
  // Not attention: softmax without pv, caught by attn-fuse or attn-tile.
  try_compile("func.func @f(%s: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> "
              "{\n"
              "  %p = \"attn.softmax\"(%s) : (tensor<1x1x4x4xf32>) -> "
              "tensor<1x1x4x4xf32>\n"
              "  return %p : tensor<1x1x4x4xf32>\n}\n",
              "cpu", 0, NULL, NULL, NULL, NULL);
}

static void test_bad_options(void) {
  printf("@test_bad_options\n");
  char *text = read_file("test/Inputs/tiny_f32.mlir");
  try_compile(text, "sm_12", 0, NULL, NULL, NULL, NULL);
  try_compile(text, "cpu", ATTN_OUTPUT_PTX, NULL, NULL, NULL, NULL);
  try_compile(text, "sm_90a", ATTN_OUTPUT_LLVM_IR, NULL, NULL, NULL, NULL);
  try_compile(text, NULL, (enum attn_output_format)42, NULL, NULL, NULL, NULL);
  try_compile(text, "sm_90a", 0, "+ptx70", NULL, NULL, NULL);
  try_compile(text, "sm_80", 0, "ptx80", NULL, NULL, NULL);
  try_compile(text, "cpu", 0, "+ptx80", NULL, NULL, NULL);
  try_compile(text, NULL, 0, NULL, "block-m=abc", NULL, NULL);
  try_compile(text, NULL, 0, NULL, "unroll=4", NULL, NULL);
  try_compile(text, NULL, 0, NULL, "block-m=16},canonicalize{", NULL, NULL);
  try_compile(text, NULL, 0, NULL, NULL, "/nonexistent/cuda", NULL);
  try_compile(text, "cpu", 0, NULL, NULL, "/usr/local/cuda", NULL);
  try_compile_hopper(text, "sm_90a", "ctas=abc", NULL);
  try_compile_hopper(text, "sm_90a", "unroll=4", NULL);
  try_compile_hopper(text, "sm_90a", "ctas=4},canonicalize{", NULL);
  try_compile_hopper(text, "cpu", "ctas=4", NULL);
  free(text);
}

static void test_null_args(void) {
  printf("@test_null_args\n");
  attn_result *r = NULL;
  printf("ir %s\n", attn_status_string(attn_compile(NULL, 0, NULL, print_diag,
                                                    NULL, &r)));
  printf("out %s\n", attn_status_string(attn_compile("module {}", 0, NULL,
                                                     print_diag, NULL, NULL)));
  printf("last %s\n", attn_last_error());
  attn_cpu_kernel *k = NULL;
  printf("kernel ir %s\n",
         attn_status_string(attn_cpu_kernel_create(NULL, 0, NULL, NULL, NULL,
                                                   &k)));
  struct attn_compile_options o;
  attn_compile_options_init(&o);
  o.target = "sm_90a";
  printf("kernel target %s\n",
         attn_status_string(attn_cpu_kernel_create("module {}", 0, &o,
                                                   print_diag, NULL, &k)));
  printf("run NULL %s\n",
         attn_status_string(attn_cpu_kernel_run(NULL, NULL, NULL, 0)));
  char *text = read_file("test/Inputs/tiny_f32.mlir");
  attn_cpu_kernel_create(text, 0, NULL, print_diag, NULL, &k);
  float q[8], kk[8], v[8], out[8];
  void *bufs[4] = {q, kk, v, out};
  printf("run n=3 %s: %s\n",
         attn_status_string(attn_cpu_kernel_run(k, NULL, bufs, 3)),
         attn_last_error());
  bufs[2] = NULL;
  printf("run buffer NULL %s: %s\n",
         attn_status_string(attn_cpu_kernel_run(k, "tiny_f32", bufs, 4)),
         attn_last_error());
  printf("run name %s: %s\n",
         attn_status_string(attn_cpu_kernel_run(k, "nope", bufs, 4)),
         attn_last_error());
  attn_cpu_kernel_destroy(k);
  free(text);
  attn_cpu_kernel_destroy(NULL);
  attn_result_destroy(NULL);
  attn_compile_options_init(NULL);
  size_t size = 7;
  const void *data = attn_result_data(NULL, &size);
  printf("accessors %p %zu %p %d %p\n", data, size,
         (void *)attn_result_manifest(NULL), (int)attn_result_format(NULL),
         (void *)attn_cpu_kernel_manifest(NULL));
}

//===-- Threads -----------------------------------------------------------===//

struct thread_job {
  const char *text;
  bool cpu;
  enum attn_status st;
  char *out; // PTX or the CPU result, for comparison
};

static void *compile_thread(void *arg) {
  struct thread_job *j = arg;
  struct attn_compile_options o;
  attn_compile_options_init(&o);
  if (j->cpu) {
    attn_cpu_kernel *k = NULL;
    j->st = attn_cpu_kernel_create(j->text, 0, &o, NULL, NULL, &k);
    float q[8] = {1, 2, 3, 4, 5, 6, 7, 8}, v[8] = {8, 7, 6, 5, 4, 3, 2, 1};
    float out[8] = {0};
    void *bufs[4] = {q, q, v, out};
    if (j->st == ATTN_OK)
      j->st = attn_cpu_kernel_run(k, NULL, bufs, 4);
    j->out = malloc(128);
    snprintf(j->out, 128, "%g %g", out[0], out[7]);
    attn_cpu_kernel_destroy(k);
    return NULL;
  }
  attn_result *r = NULL;
  j->st = attn_compile(j->text, 0, &o, NULL, NULL, &r);
  const char *ptx = attn_result_data(r, NULL);
  j->out = ptx ? strdup(ptx) : NULL;
  attn_result_destroy(r);
  return NULL;
}

static void test_threads(void) {
  printf("@test_threads\n");
  char *text = read_file("test/Inputs/tiny_f32.mlir");
  enum { N = 6 };
  pthread_t t[N];
  struct thread_job jobs[N];
  for (int i = 0; i < N; ++i) {
    jobs[i] = (struct thread_job){text, i % 3 == 2, ATTN_OK, NULL};
    pthread_create(&t[i], NULL, compile_thread, &jobs[i]);
  }
  int ok = 0, same = 0;
  for (int i = 0; i < N; ++i) {
    pthread_join(t[i], NULL);
    ok += jobs[i].st == ATTN_OK;
    const struct thread_job *ref = jobs[i].cpu ? &jobs[2] : &jobs[0];
    same += jobs[i].out && ref->out && !strcmp(jobs[i].out, ref->out);
  }
  printf("threads %d ok, %d identical\n", ok, same);
  for (int i = 0; i < N; ++i)
    free(jobs[i].out);
  free(text);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: attn-capi-test <attn source root>\n");
    return 2;
  }
  src_root = argv[1];
  test_version();
  test_ptx();
  test_gpu_level();
  test_cubin();
  test_cpu_output();
  test_cpu_numerics();
  test_cpu_captures();
  test_matmul();
  test_hopper_options();
  test_grad();
  test_f64();
  test_parse_errors();
  test_nesting();
  test_compile_errors();
  test_bad_options();
  test_null_args();
  test_threads();
  return 0;
}
