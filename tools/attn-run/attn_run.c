//===- attn_run.c - attn-run: compile on the CPU path, run, check ---------===//
//
// Compiles every attention (and linalg.matmul) in a program through
// attn-fuse, attn-tile, lower-tile-to-cpu and the LLVM dialect, runs it with
// MLIR's
// ExecutionEngine on fresh random inputs, and compares the output with the
// float64 reference. Prints one line per kernel with the relative error and
// exits 1 when any error exceeds the tolerance. This is how numerics are
// checked without a GPU. With --grad, attn-grad derives each attention's
// backward first: the forward runs with its row log-sum-exp, then the
// backward kernels on a fresh random dO, and lse, dq, dk and dv are
// compared with attn_reference_grad (one line per attention).
//
//===----------------------------------------------------------------------===//
#include "dialects/attn/attn_dialect.h"
#include "dialects/dialects.h"
#include "lib/IR/attn_context.h"
#include "lib/Reference/attn_reference.h"
#include "lib/Transforms/transforms.h"
#include "tools/attn-run/attn_run.h"
#include "tools/common/tool_util.h"

#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/ExecutionEngine.h"
#include "mlir-c/Pass.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *tool = "attn-run";

struct options {
  const char *input, *irdl_file, *tile_options, *hopper_options;
  const char *chip; // GPU target instead of the device's (NULL: the device's)
  uint64_t seed;
  int64_t capture_ids; // integer captures in [0, capture_ids)
  double tolerance; // <= 0: pick by element type
  bool gpu;
  bool grad;        // --grad: the backward too (attn-grad)
  int iters;        // timed launches on the GPU (0: none)
  double timeout_s; // GPU: how long the work may run (0: no limit; < 0: the
                    // environment's ATTNRT_SYNC_TIMEOUT_S, else 300)
  enum attn_gpu_kernel kernel;
};

static const struct attn_tool_option tool_options[] = {
    {"--target=<cpu|gpu>", "enum", "cpu", "run on the CPU (JIT) or on GPU 0"},
    {"--iters=<n>", "integer", "0",
     "GPU: also time n launches (median) and check the last equals the first"},
    {"--timeout=<s>", "number", "ATTNRT_SYNC_TIMEOUT_S, else 300",
     "GPU: fail when queued work runs longer (0: no limit)"},
    {"--kernel=<auto|hopper|mma|plain>", "enum", "auto",
     "GPU kernel family (auto: Hopper on sm_90a, mma.sync from sm_80)"},
    {"--chip=<sm_XX>", "string", "the device's",
     "compile for this chip, e.g. sm_80 on an H200 (PTX is JIT-compiled)"},
    {"--hopper-options=<text>", "string", "ctas = the GPU's SMs",
     "lower-tile-to-hopper's options, e.g. 'rope=pre'"},
    {"--seed=<n>", "integer", "fresh each run", "input seed"},
    {"--capture-ids=<n>", "integer", "4",
     "integer tensors a score_mod / mask_mod body captures are drawn in "
     "[0, n) (floats: uniform in [-1, 1])"},
    {"--tolerance=<x>", "number", "1e-10 f64, 1e-4 f32, 2e-2 bf16, 5e-3 f16",
     "max relative error"},
    {"--grad", "flag", "off",
     "also derive the backward (attn-grad), run it on a random dO and check "
     "lse, dq, dk and dv against float64"},
    {"--tile-options=<text>", "string", "none",
     "attn-tile's options, e.g. 'block-m=16 block-n=32'"},
    {"--irdl-file=<file>", "file", "the built-in IRDL",
     "load the dialects from this IRDL"},
    {NULL, NULL, NULL, NULL},
};

static void usage(FILE *f) {
  fprintf(f, "usage: attn-run [options] [input.mlir|-]\n\n"
             "Compiles each attention and GEMM of the program, runs it on the "
             "CPU (JIT) or GPU 0\non fresh random inputs, and compares with a "
             "float64 reference.\nOptions take one dash or two "
             "(-seed=1).\n\noptions:\n");
  attn_tool_print_options(f, tool_options);
  attn_tool_print_options(f, attn_tool_common_options);
}

/// True when opts (pass options: name=value separated by spaces or commas)
/// set ctas.
static bool sets_ctas(const char *opts) {
  for (const char *p = opts; p && *p; p += strcspn(p, " ,")) {
    p += strspn(p, " ,");
    if (!strncmp(p, "ctas=", 5))
      return true;
  }
  return false;
}

static int parse_args(int argc, char **argv, struct options *o) {
  o->seed = attn_fresh_seed();
  o->timeout_s = -1;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    char *end;
    bool exit_now = false;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 2;
    }
    if (attn_tool_common_arg(tool, a, &exit_now)) {
      if (exit_now)
        return 2;
    } else if (!strncmp(a, "--seed=", 7)) {
      o->seed = strtoull(a + 7, &end, 10);
      if (*end || !a[7]) {
        fprintf(stderr, "%s: error: --seed expects an integer\n", tool);
        return 1;
      }
    } else if (!strncmp(a, "--capture-ids=", 14)) {
      long long n = strtoll(a + 14, &end, 10);
      if (*end || !a[14] || n < 1 || n > 2147483647) {
        fprintf(stderr, "%s: error: --capture-ids expects an integer in [1, "
                        "2^31)\n",
                tool);
        return 1;
      }
      o->capture_ids = n;
    } else if (!strncmp(a, "--tolerance=", 12)) {
      o->tolerance = strtod(a + 12, &end);
      if (*end || !(o->tolerance > 0)) {
        fprintf(stderr, "%s: error: --tolerance expects a positive number\n",
                tool);
        return 1;
      }
    } else if (!strcmp(a, "--grad")) {
      o->grad = true;
    } else if (!strcmp(a, "--target=cpu") || !strcmp(a, "--target=gpu")) {
      o->gpu = a[9] == 'g';
    } else if (!strncmp(a, "--target=", 9)) {
      fprintf(stderr, "%s: error: unknown target '%s' (expected cpu or gpu)\n",
              tool, a + 9);
      return 1;
    } else if (!strncmp(a, "--iters=", 8)) {
      long n = strtol(a + 8, &end, 10);
      if (*end || !a[8] || n < 0 || n > 100000) {
        fprintf(stderr, "%s: error: --iters expects an integer in [0, 100000]\n",
                tool);
        return 1;
      }
      o->iters = (int)n;
    } else if (!strncmp(a, "--timeout=", 10)) {
      o->timeout_s = strtod(a + 10, &end);
      if (*end || !a[10] || !(o->timeout_s >= 0) || o->timeout_s > 1e9) {
        fprintf(stderr, "%s: error: --timeout expects a number of seconds in "
                        "[0, 1e9]\n",
                tool);
        return 1;
      }
    } else if (!strncmp(a, "--kernel=", 9)) {
      const char *k = a + 9;
      if (!strcmp(k, "auto") || !strcmp(k, "hopper") || !strcmp(k, "mma") ||
          !strcmp(k, "plain"))
        o->kernel = k[0] == 'a'   ? ATTN_GPU_KERNEL_AUTO
                    : k[0] == 'h' ? ATTN_GPU_KERNEL_HOPPER
                    : k[0] == 'm' ? ATTN_GPU_KERNEL_MMA
                                  : ATTN_GPU_KERNEL_PLAIN;
      else {
        fprintf(stderr, "%s: error: unknown kernel '%s' (expected auto, "
                        "hopper, mma or plain)\n",
                tool, k);
        return 1;
      }
    } else if (!strncmp(a, "--chip=", 7)) {
      o->chip = a + 7;
      if (attn_chip_min_ptx(o->chip, strlen(o->chip)) < 0) {
        fprintf(stderr, "%s: error: unknown chip '%s' (expected sm_70, "
                        "sm_75, sm_80, sm_86, sm_87, sm_89, sm_90 or sm_90a)\n",
                tool, o->chip);
        return 1;
      }
    } else if (!strncmp(a, "--tile-options=", 15))
      o->tile_options = a + 15;
    else if (!strncmp(a, "--hopper-options=", 17))
      o->hopper_options = a + 17;
    else if (!strncmp(a, "--irdl-file=", 12))
      o->irdl_file = a + 12;
    else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "%s: error: unknown option '%s' (see --help)\n", tool, a);
      return 1;
    } else if (o->input) {
      fprintf(stderr, "%s: error: more than one input file\n", tool);
      return 1;
    } else
      o->input = a;
  }
  return 0;
}

int main(int argc, char **argv) {
  struct options o = {0};
  char **args = attn_tool_args(tool, argc, argv);
  int rc = args ? parse_args(argc, args, &o) : 1;
  char *text = rc ? NULL : attn_tool_read_input(tool, o.input, NULL);
  if (!text) {
    attn_tool_args_free(argc, args, argv);
    return rc == 2 ? 0 : 1;
  }
  const char *filename = o.input && strcmp(o.input, "-") ? o.input : "<stdin>";
  MlirContext ctx = attn_context_create();
  struct attn_diag_sink sink = {stderr, 0, 0};
  struct attn_tool_remarks remarks = {stderr, 0};
  attn_diag_attach(ctx, &sink);
  attn_tool_attach_remarks(ctx, &remarks);
  struct job jobs[64];
  int njobs = 0, failures = 0;
  bool ok = attn_register_all(ctx, o.irdl_file);
  MlirOperation module = {NULL};
  if (ok) {
    module = attn_tool_parse_module(ctx, text, filename);
    ok = !mlirOperationIsNull(module) && mlirOperationVerify(module) &&
         attn_dialects_verify(module) &&
         attn_tool_run_pipeline(tool, module, "attn-fuse") &&
         (!o.grad || attn_tool_run_pipeline(tool, module, "attn-grad")) &&
         attn_run_collect_jobs(module, jobs, 64, &njobs);
  }
  struct attn_executor x = {.iters = o.iters,
                            .capture_ids = o.capture_ids,
                            .timeout_s = o.timeout_s};
  if (ok && o.gpu)
    ok = attn_gpu_executor_init(&x); // fail fast when there is no GPU
  if (ok && o.gpu && o.chip) // the driver JIT-compiles older targets' PTX
    snprintf(x.chip, sizeof x.chip, "%s", o.chip);
  // The persistent Hopper kernel defaults to one CTA per SM of an H200;
  // on a GPU with fewer SMs the extra CTAs would run in a second wave.
  struct attn_strbuf hopper = {0};
  bool add_ctas = ok && o.gpu && !sets_ctas(o.hopper_options);
  if (add_ctas)
    attn_strbuf_printf(&hopper, "ctas=%d %s", x.sms,
                       o.hopper_options ? o.hopper_options : "");
  if (ok) {
    struct attn_strbuf p = {0};
    if (o.gpu)
      x.kernel =
          attn_gpu_pipeline(module, x.chip, NULL, o.kernel, o.tile_options,
                            add_ctas ? hopper.buf : o.hopper_options, &p);
    else
      attn_strbuf_printf(&p, "attn-tile{%s},lower-tile-to-cpu,%s",
                         o.tile_options ? o.tile_options : "",
                         attn_cpu_to_llvm_pipeline);
    ok = !p.failed && !hopper.failed &&
         attn_tool_run_pipeline(tool, module, p.buf);
    attn_strbuf_free(&p);
  }
  attn_strbuf_free(&hopper);
  if (ok && o.gpu) {
    ok = attn_gpu_executor_load(&x, module);
  } else if (ok) {
    ok = attn_cpu_executor_load(&x, module);
  }
  if (ok) {
    struct attn_rng rng;
    attn_rng_seed(&rng, o.seed);
    static const char *const kinds[] = {"auto", "plain", "hopper", "mma",
                                        "decode"};
    printf("seed=%" PRIu64 " target=%s%s%s%s%s", o.seed,
           o.gpu ? x.device : "cpu", o.gpu ? " chip=" : "", o.gpu ? x.chip : "",
           o.gpu ? " kernel=" : "", o.gpu ? kinds[x.kernel] : "");
    if (add_ctas && x.kernel == ATTN_GPU_KERNEL_HOPPER)
      printf(" ctas=%d", x.sms);
    printf("\n");
    for (int i = 0; i < njobs; ++i)
      failures += (o.grad ? attn_run_grad_job(&x, &jobs[i], o.tolerance,
                                              &rng, stdout)
                          : attn_run_job(&x, &jobs[i], o.tolerance, &rng,
                                         stdout)) != 0;
    printf("%d passed, %d failed\n", njobs - failures, failures);
    fflush(stdout);
  }
  if (!ok)
    attn_tool_note_remarks(tool, &remarks);
  attn_run_jobs_release(jobs, njobs);
  attn_cpu_executor_release(&x);
  attn_gpu_executor_release(&x);
  if (!mlirOperationIsNull(module))
    mlirOperationDestroy(module);
  free(text);
  attn_tool_args_free(argc, args, argv);
  attn_remark_handler_detach(ctx);
  mlirContextDestroy(ctx);
  return ok && failures == 0 && sink.errors == 0 ? 0 : 1;
}
