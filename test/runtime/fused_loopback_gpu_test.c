// fused_loopback_gpu_test.c - attn's fused GEMM + collective kernels at any number of ranks on one GPU: every rank of a kernel gets its own A, B, C and zero-filled workspace in one process, the peer tables hold the other ranks' workspaces (and, with --symmetric-out, their C) on the same GPU, and the ranks' kernels run side by side on a stream each, three launches in a row, every rank's C compared with a float64 reference. The kernels cannot tell the ranks' memory from their peers' across NVLink (they only load, store and wait on flags at the table's addresses), so this checks the schedules, flags and reductions at 2, 3, 4 and 8 ranks where no machine of that many GPUs is at hand; it measures nothing about NVLink.
//
// Usage: attnrt-fused-loopback-gpu-test [--symmetric-out | --alternate-out]
// PTX MANIFEST [KERNEL...]: runs the named kernels of the manifest (default:
// all of them), each with the ranks its comm entry gives. A kernel's grid
// times its ranks must fit the GPU's SMs (the ranks' CTAs must be resident
// together, one per SM): test/Inputs/comm/loopback.mlir holds each to 132 /
// world SMs with comm.schedule's sms. With --symmetric-out the all-reduce
// and reduce-scatter kernels get the table of the ranks' C (what
// attnrt_comm_launch_out passes), with --alternate-out only on the second
// launch. Prints one line per rank and launch, then "N passed, M failed";
// exits 1 on any failure, 2 on bad usage. Needs one GPU (lit's gpu feature).

#include "attnrt.h"
#include "fused_check.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANKS 8
#define LAUNCHES 3

/// Prints a failed runtime call with its message and fails the kernel.
#define TRY(call)                                                              \
  do {                                                                         \
    enum attnrt_status st_ = (call);                                           \
    if (st_ != ATTNRT_OK) {                                                    \
      printf("%s: %s failed: %s: %s FAIL\n", name, #call,                      \
             attnrt_status_string(st_), attnrt_last_error(rt));                \
      ok = false;                                                              \
      goto done;                                                               \
    }                                                                          \
  } while (0)

enum out_mode { OUT_PLAIN, OUT_SYMMETRIC, OUT_ALTERNATE };

/// The ptr parameter `want` of k, or NULL.
static const struct attnrt_param_info *param(const struct attnrt_kernel_info *k,
                                             const char *want) {
  for (size_t i = 0; i < k->nparams; ++i)
    if (k->params[i].kind == ATTNRT_ARG_PTR && !strcmp(k->params[i].name, want))
      return &k->params[i];
  return NULL;
}

/// Reads kernel k's problem from its manifest entry: the pattern from its
/// comm entry, the shapes from its parameters a (rows x k), b (k x n) and c
/// (rows x n). Returns false with a message in why.
static bool problem_of(const struct attnrt_kernel_info *k,
                       struct fused_problem *p, char *why, size_t len) {
  static const char *const names[][2] = {{"matmul_all_reduce", "ar"},
                                         {"matmul_reduce_scatter", "rs"},
                                         {"all_gather_matmul", "ag"}};
  memset(p, 0, sizeof *p);
  if (!k->comm) {
    snprintf(why, len, "not a fused communication kernel (no comm entry)");
    return false;
  }
  for (int i = 0; i < 3; ++i)
    if (k->comm->pattern && !strcmp(k->comm->pattern, names[i][0]))
      p->pattern = names[i][1];
  const struct attnrt_param_info *a = param(k, "a"), *b = param(k, "b"),
                                 *c = param(k, "c");
  if (!p->pattern || !a || !b || !c || a->rank != 2 || b->rank != 2 ||
      c->rank != 2 || k->nargs != 8) {
    snprintf(why, len, "expected a fused GEMM kernel (pattern %s) with "
                       "rank-2 a, b, c and 8 arguments",
             k->comm->pattern ? k->comm->pattern : "none");
    return false;
  }
  p->world = (int)k->comm->world_size;
  p->a_rows = a->shape[0];
  p->k = a->shape[1];
  p->n = b->shape[1];
  p->c_rows = c->shape[0];
  if (p->world < 2 || p->world > MAX_RANKS) {
    snprintf(why, len, "%d ranks; this test runs 2 to %d", p->world,
             MAX_RANKS);
    return false;
  }
  return true;
}

/// Runs every rank of kernel k side by side, LAUNCHES times; counts the
/// ranks' results in *passed and *failed.
static void run_kernel(attnrt_runtime *rt, attnrt_module *m,
                       const struct attnrt_kernel_info *k, enum out_mode mode,
                       int sms, int *passed, int *failed) {
  const char *name = k->name;
  struct fused_problem p;
  char why[256];
  if (!problem_of(k, &p, why, sizeof why)) {
    printf("%s: %s FAIL\n", name, why);
    ++*failed;
    return;
  }
  if ((int64_t)k->grid[0] * k->grid[1] * k->grid[2] * p.world > sms) {
    printf("%s: %d ranks of %u CTAs do not fit the GPU's %d SMs together "
           "(compile it with comm.schedule's sms = %d) FAIL\n",
           name, p.world, k->grid[0] * k->grid[1] * k->grid[2], sms,
           sms / p.world);
    ++*failed;
    return;
  }
  int w = p.world;
  bool ok = true, out_table = strcmp(p.pattern, "ag") != 0;
  size_t a_bytes = 2 * (size_t)(p.a_rows * p.k), b_bytes = 2 * (size_t)(p.k * p.n),
         c_bytes = 2 * (size_t)(p.c_rows * p.n);
  attnrt_devptr a[MAX_RANKS] = {0}, b[MAX_RANKS] = {0}, c[MAX_RANKS] = {0},
                ws[MAX_RANKS] = {0}, ws_table = 0, c_table = 0;
  attnrt_stream *s[MAX_RANKS] = {0};
  size_t most = a_bytes > b_bytes ? a_bytes : b_bytes;
  uint16_t *h = malloc(most > c_bytes ? most : c_bytes);
  double *want = fused_reference(&p);
  if (!h || !want) {
    printf("%s: out of host memory FAIL\n", name);
    ok = false;
    goto done;
  }
  for (int r = 0; r < w; ++r) {
    TRY(attnrt_mem_alloc(rt, a_bytes, &a[r]));
    TRY(attnrt_mem_alloc(rt, b_bytes, &b[r]));
    TRY(attnrt_mem_alloc(rt, c_bytes, &c[r]));
    TRY(attnrt_mem_alloc(rt, k->comm->workspace_bytes, &ws[r]));
    TRY(attnrt_memset_d8(rt, ws[r], 0, k->comm->workspace_bytes, NULL));
    TRY(attnrt_stream_create(rt, &s[r]));
    fused_fill(&p, r, 0, h);
    TRY(attnrt_memcpy_htod(rt, a[r], h, a_bytes, NULL));
    fused_fill(&p, r, 1, h);
    TRY(attnrt_memcpy_htod(rt, b[r], h, b_bytes, NULL));
  }
  // The tables every rank reads its peers' addresses from: here the other
  // ranks' buffers on this GPU.
  uint64_t table[MAX_RANKS];
  TRY(attnrt_mem_alloc(rt, sizeof table, &ws_table));
  TRY(attnrt_mem_alloc(rt, sizeof table, &c_table));
  for (int r = 0; r < w; ++r)
    table[r] = ws[r];
  TRY(attnrt_memcpy_htod(rt, ws_table, table, sizeof table, NULL));
  for (int r = 0; r < w; ++r)
    table[r] = c[r];
  TRY(attnrt_memcpy_htod(rt, c_table, table, sizeof table, NULL));
  for (int32_t epoch = 1; epoch <= LAUNCHES; ++epoch) {
    bool direct = out_table && (mode == OUT_SYMMETRIC ||
                                (mode == OUT_ALTERNATE && epoch == 2));
    for (int r = 0; r < w; ++r)
      TRY(attnrt_memset_d8(rt, c[r], 0xff, c_bytes, NULL)); // NaN
    TRY(attnrt_runtime_synchronize(rt));
    for (int r = 0; r < w; ++r) {
      struct attnrt_arg args[8] = {
          {.kind = ATTNRT_ARG_PTR, .v.ptr = a[r]},
          {.kind = ATTNRT_ARG_PTR, .v.ptr = b[r]},
          {.kind = ATTNRT_ARG_PTR, .v.ptr = c[r]},
          {.kind = ATTNRT_ARG_PTR, .v.ptr = ws[r]},
          {.kind = ATTNRT_ARG_PTR, .v.ptr = ws_table},
          {.kind = ATTNRT_ARG_PTR, .v.ptr = direct ? c_table : 0},
          {.kind = ATTNRT_ARG_I32, .v.i32 = r},
          {.kind = ATTNRT_ARG_I32, .v.i32 = epoch}};
      TRY(attnrt_launch(m, name, args, 8, s[r]));
    }
    for (int r = 0; r < w; ++r)
      TRY(attnrt_stream_synchronize(s[r]));
    for (int r = 0; r < w; ++r) {
      TRY(attnrt_memcpy_dtoh(rt, h, c[r], c_bytes, NULL));
      double rel, worst;
      bool good = fused_compare(&p, h, fused_want(&p, want, r), &rel, &worst);
      printf("%s: rank %d of %d launch %d%s: %s rel_l2=%.2e max_abs=%.2e %s\n",
             name, r, w, epoch, direct ? " (symmetric out)" : "", p.pattern,
             rel, worst, good ? "PASS" : "FAIL");
      ok &= good;
    }
  }
done:
  fflush(stdout);
  // After a trap the context is gone and every call below fails: the
  // kernel has failed already, so their statuses are not checked.
  for (int r = 0; r < w && r < MAX_RANKS; ++r) {
    attnrt_stream_destroy(s[r]);
    attnrt_mem_free(rt, a[r]);
    attnrt_mem_free(rt, b[r]);
    attnrt_mem_free(rt, c[r]);
    attnrt_mem_free(rt, ws[r]);
  }
  attnrt_mem_free(rt, ws_table);
  attnrt_mem_free(rt, c_table);
  free(h);
  free(want);
  *(ok ? passed : failed) += 1;
}

int main(int argc, char **argv) {
  int arg = 1;
  enum out_mode mode = OUT_PLAIN;
  if (arg < argc && !strcmp(argv[arg], "--symmetric-out"))
    mode = OUT_SYMMETRIC, ++arg;
  else if (arg < argc && !strcmp(argv[arg], "--alternate-out"))
    mode = OUT_ALTERNATE, ++arg;
  if (argc - arg < 2) {
    printf("usage: attnrt-fused-loopback-gpu-test [--symmetric-out | "
           "--alternate-out] PTX MANIFEST [KERNEL...]\n");
    return 2;
  }
  char *ptx = fused_read_file(argv[arg]), *manifest = fused_read_file(argv[arg + 1]);
  if (!ptx || !manifest) {
    printf("cannot read %s or %s\n", argv[arg], argv[arg + 1]);
    free(ptx);
    free(manifest);
    return 2;
  }
  attnrt_runtime *rt = NULL;
  attnrt_module *m = NULL;
  int sms = 0, passed = 0, failed = 0;
  enum attnrt_status st = attnrt_runtime_create(0, &rt);
  if (st == ATTNRT_OK)
    st = attnrt_runtime_sm_count(rt, &sms);
  if (st == ATTNRT_OK)
    st = attnrt_module_load_ptx(rt, ptx, 0, manifest, &m);
  if (st != ATTNRT_OK) {
    printf("cannot load the kernels: %s: %s\n", attnrt_status_string(st),
           attnrt_last_error(rt));
    failed = 1;
  } else if (argc - arg > 2) {
    for (int i = arg + 2; i < argc; ++i) {
      const struct attnrt_kernel_info *k = attnrt_module_kernel(m, argv[i]);
      if (k)
        run_kernel(rt, m, k, mode, sms, &passed, &failed);
      else
        printf("%s: no such kernel in %s FAIL\n", argv[i], argv[arg + 1]), ++failed;
    }
  } else {
    const attnrt_manifest *mf = attnrt_module_manifest(m);
    for (int i = 0; i < attnrt_manifest_kernel_count(mf); ++i)
      run_kernel(rt, m, attnrt_manifest_kernel_at(mf, i), mode, sms, &passed,
                 &failed);
  }
  printf("%d passed, %d failed\n", passed, failed);
  attnrt_module_destroy(m);
  attnrt_runtime_destroy(rt);
  free(ptx);
  free(manifest);
  return failed ? 1 : 0;
}
