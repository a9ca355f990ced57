//===- attn_run.c - attn-run: compile on the CPU path, run, check ---------===//
//
// Compiles every attention in a program through attn-fuse, attn-tile,
// lower-tile-to-cpu and the LLVM dialect, runs it with MLIR's
// ExecutionEngine on fresh random inputs, and compares the output with the
// float64 reference. Prints one line per kernel with the relative error and
// exits 1 when any error exceeds the tolerance. This is how numerics are
// checked without a GPU.
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
  const char *input, *irdl_file, *tile_options;
  uint64_t seed;
  double tolerance; // <= 0: pick by element type
  bool gpu;
  int iters;        // timed launches on the GPU (0: none)
  enum attn_gpu_kernel kernel;
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: attn-run [options] [input.mlir|-]\n\n"
          "Compiles each attention of the program, runs it on the CPU (JIT) "
          "or GPU 0\non fresh random inputs, and compares with a float64 "
          "reference.\n\n"
          "  --target=cpu|gpu       run on the CPU (JIT, default) or on GPU 0\n"
          "  --iters=<n>            GPU only: also time n launches (median)\n"
          "  --kernel=auto|hopper|plain  GPU kernel family (default auto: "
          "Hopper where it applies)\n"
          "  --seed=<n>             input seed (default: fresh each run)\n"
          "  --tolerance=<x>        max relative error (default 1e-4 for f32, "
          "2e-2 for bf16, 5e-3 for f16)\n"
          "  --tile-options=<text>  options for attn-tile, e.g. 'block-m=16 "
          "block-n=32'\n"
          "  --irdl-file=<file>     load dialects from this IRDL\n"
          "  -h, --help             this text\n");
}

static int parse_args(int argc, char **argv, struct options *o) {
  o->seed = attn_fresh_seed();
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    char *end;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 2;
    }
    if (!strncmp(a, "--seed=", 7)) {
      o->seed = strtoull(a + 7, &end, 10);
      if (*end || !a[7]) {
        fprintf(stderr, "%s: error: --seed expects an integer\n", tool);
        return 1;
      }
    } else if (!strncmp(a, "--tolerance=", 12)) {
      o->tolerance = strtod(a + 12, &end);
      if (*end || !(o->tolerance > 0)) {
        fprintf(stderr, "%s: error: --tolerance expects a positive number\n",
                tool);
        return 1;
      }
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
    } else if (!strncmp(a, "--kernel=", 9)) {
      const char *k = a + 9;
      if (!strcmp(k, "auto") || !strcmp(k, "hopper") || !strcmp(k, "plain"))
        o->kernel = k[0] == 'a'   ? ATTN_GPU_KERNEL_AUTO
                    : k[0] == 'h' ? ATTN_GPU_KERNEL_HOPPER
                                  : ATTN_GPU_KERNEL_PLAIN;
      else {
        fprintf(stderr, "%s: error: unknown kernel '%s' (expected auto, "
                        "hopper or plain)\n",
                tool, k);
        return 1;
      }
    } else if (!strncmp(a, "--tile-options=", 15))
      o->tile_options = a + 15;
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

static bool run_pipeline(MlirContext ctx, MlirOperation module,
                         const char *pipeline) {
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  char err[1024];
  bool ok = attn_pipeline_add(pm, pipeline, err, sizeof err);
  if (!ok)
    fprintf(stderr, "%s: error: %s\n", tool, err);
  else
    ok = mlirLogicalResultIsSuccess(mlirPassManagerRunOnOp(pm, module));
  mlirPassManagerDestroy(pm);
  return ok;
}

/// Reads the problem of the attn.fused op in func into j.
static bool describe(MlirOperation func, MlirOperation fused, struct job *j) {
  struct attn_fused_config c;
  MlirStringRef sym;
  int64_t q[8], k[8], v[8];
  if (!attn_fused_get_config(fused, &c) ||
      !attn_attr_str(func, "sym_name", &sym))
    return false;
  snprintf(j->name, sizeof j->name, "%.*s", (int)sym.length, sym.data);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockGetNumArguments(body) != 3)
    return attn_emit_errorf(func, "attn-run expects functions of (q, k, v)");
  for (int role = 0; role < 3; ++role) {
    MlirValue a = mlirOperationGetOperand(fused, role);
    if (!mlirValueIsABlockArgument(a))
      return attn_emit_errorf(fused, "operands must be function arguments");
    j->role_of_arg[mlirBlockArgumentGetArgNumber(a)] = role;
  }
  attn_static_shape(mlirValueGetType(mlirOperationGetOperand(fused, 0)), q);
  attn_static_shape(mlirValueGetType(mlirOperationGetOperand(fused, 1)), k);
  attn_static_shape(mlirValueGetType(mlirOperationGetOperand(fused, 2)), v);
  MlirType e = mlirShapedTypeGetElementType(
      mlirValueGetType(mlirOperationGetOperand(fused, 0)));
  j->elem_bits = mlirTypeIsAF32(e) ? 32 : 16;
  j->elem_bf16 = mlirTypeIsABF16(e);
  j->p = (struct attn_ref_problem){
      .batch = q[0], .heads = q[1], .kv_heads = k[1], .seq_q = q[2],
      .seq_k = k[2], .head_dim = q[3], .value_dim = v[3], .scale = c.scale,
      .causal = c.causal, .rope = c.has_rope, .theta = c.rope.theta,
      .rotary_dim = c.rope.rotary_dim,
      .interleaved = c.rope.layout == ATTN_ROPE_INTERLEAVED};
  return true;
}

static bool collect_jobs(MlirOperation module, struct job *jobs, int *n) {
  *n = 0;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation f = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(f); f = mlirOperationGetNextInBlock(f)) {
    if (!attn_op_is(f, "func.func"))
      continue;
    MlirBlock fb = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
    for (MlirOperation op = mlirBlockIsNull(fb) ? (MlirOperation){NULL}
                                                : mlirBlockGetFirstOperation(fb);
         !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
      if (attn_op_is(op, ATTN_OP_FUSED)) {
        if (*n == 16)
          return attn_emit_errorf(op, "attn-run handles at most 16 kernels");
        if (!describe(f, op, &jobs[*n]))
          return false;
        ++*n;
        break;
      }
  }
  if (*n == 0)
    return attn_emit_errorf(module, "no attention to run: the program has no "
                                    "attn.fused op after attn-fuse");
  return true;
}

/// Fills a tensor with N(0,1) samples rounded to the element type: the
/// device buffer gets the rounded bits, ref gets the same values in float64.
static void fill(struct attn_rng *rng, const struct job *j, void *buf,
                 double *ref, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float x = (float)attn_rng_normal(rng);
    if (j->elem_bits == 32) {
      ((float *)buf)[i] = x;
      ref[i] = x;
    } else {
      uint16_t h = j->elem_bf16 ? attn_f32_to_bf16(x) : attn_f32_to_f16(x);
      ((uint16_t *)buf)[i] = h;
      ref[i] = j->elem_bf16 ? attn_bf16_to_f32(h) : attn_f16_to_f32(h);
    }
  }
}

static double to_double(const struct job *j, const void *buf, size_t i) {
  if (j->elem_bits == 32)
    return ((const float *)buf)[i];
  uint16_t h = ((const uint16_t *)buf)[i];
  return j->elem_bf16 ? attn_bf16_to_f32(h) : attn_f16_to_f32(h);
}

/// Runs the CPU entry of a job: `_mlir_<name>(void **)`, the packed wrapper
/// the ExecutionEngine makes for the bare-pointer function.
static bool cpu_execute(struct attn_executor *x, const struct job *j,
                        void *const bufs[4], const size_t bytes[4],
                        double *ms) {
  void *ptrs[4], *args[4];
  for (int a = 0; a < 3; ++a)
    ptrs[a] = bufs[j->role_of_arg[a]];
  ptrs[3] = bufs[3];
  for (int a = 0; a < 4; ++a)
    args[a] = &ptrs[a];
  void *sym = mlirExecutionEngineLookupPacked(
      x->jit, mlirStringRefCreateFromCString(j->name));
  void (*entry)(void **) = NULL;
  memcpy(&entry, &sym, sizeof entry); // POSIX: object and function pointers
                                      // share a representation
  if (!entry) {
    fprintf(stderr, "%s: error: cannot find '%s' in the JIT\n", tool, j->name);
    return false;
  }
  entry(args);
  *ms = -1;
  return true;
}

/// Runs one kernel and checks it; returns 0 pass, 1 fail, -1 error.
static int run_job(struct attn_executor *x, const struct job *j,
                   const struct options *o, struct attn_rng *rng) {
  const struct attn_ref_problem *p = &j->p;
  size_t nq = (size_t)(p->batch * p->heads * p->seq_q * p->head_dim);
  size_t nk = (size_t)(p->batch * p->kv_heads * p->seq_k * p->head_dim);
  size_t nv = (size_t)(p->batch * p->kv_heads * p->seq_k * p->value_dim);
  size_t no = (size_t)(p->batch * p->heads * p->seq_q * p->value_dim);
  size_t es = (size_t)j->elem_bits / 8, sizes[3] = {nq, nk, nv};
  size_t bytes[4] = {nq * es, nk * es, nv * es, no * es};
  void *buf[4] = {malloc(bytes[0]), malloc(bytes[1]), malloc(bytes[2]),
                  malloc(bytes[3])};
  double *ref[3] = {malloc(nq * 8), malloc(nk * 8), malloc(nv * 8)};
  double *want = malloc(no * 8), *got = malloc(no * 8);
  int rc = -1;
  double ms = -1;
  bool alloc_ok = want && got;
  for (int i = 0; i < 4; ++i)
    alloc_ok &= buf[i] != NULL && (i == 3 || ref[i] != NULL);
  if (!alloc_ok) {
    fprintf(stderr, "%s: error: out of memory for '%s'\n", tool, j->name);
    goto out;
  }
  for (int i = 0; i < 3; ++i)
    fill(rng, j, buf[i], ref[i], sizes[i]);
  memset(buf[3], 0xff, bytes[3]); // NaN poison: unwritten outputs fail
  if (!attn_reference(p, ref[0], ref[1], ref[2], want)) {
    fprintf(stderr, "%s: error: malformed problem for '%s'\n", tool, j->name);
    goto out;
  }
  if (!x->execute(x, j, buf, bytes, &ms))
    goto out;
  for (size_t i = 0; i < no; ++i)
    got[i] = to_double(j, buf[3], i);
  double err = attn_rel_error(got, want, no);
  double tol = o->tolerance > 0 ? o->tolerance
               : j->elem_bits == 32 ? 1e-4
               : j->elem_bf16      ? 2e-2
                                    : 5e-3;
  bool pass = err <= tol; // NaN fails
  printf("%s: b=%lld h=%lld hk=%lld n=%lld m=%lld d=%lld dv=%lld causal=%d "
         "rope=%d %s rel_error=%.3e tolerance=%.1e %s",
         j->name, (long long)p->batch, (long long)p->heads,
         (long long)p->kv_heads, (long long)p->seq_q, (long long)p->seq_k,
         (long long)p->head_dim, (long long)p->value_dim, p->causal, p->rope,
         j->elem_bits == 32 ? "f32" : j->elem_bf16 ? "bf16" : "f16", err, tol,
         pass ? "PASS" : "FAIL");
  if (ms >= 0)
    printf(" median_ms=%.4f", ms);
  printf("\n");
  rc = pass ? 0 : 1;
out:
  for (int i = 0; i < 4; ++i)
    free(buf[i]);
  for (int i = 0; i < 3; ++i)
    free(ref[i]);
  free(want);
  free(got);
  return rc;
}

int main(int argc, char **argv) {
  struct options o = {0};
  int rc = parse_args(argc, argv, &o);
  if (rc)
    return rc == 2 ? 0 : 1;
  char *text = attn_tool_read_input(tool, o.input, NULL);
  if (!text)
    return 1;
  const char *filename = o.input && strcmp(o.input, "-") ? o.input : "<stdin>";
  MlirContext ctx = attn_context_create();
  struct attn_diag_sink sink = {stderr, 0, 0};
  attn_diag_attach(ctx, &sink);
  struct job jobs[16];
  int njobs = 0, failures = 0;
  bool ok = attn_register_all(ctx, o.irdl_file);
  MlirOperation module = {NULL};
  if (ok) {
    module = attn_tool_parse_module(ctx, text, filename);
    ok = !mlirOperationIsNull(module) && mlirOperationVerify(module) &&
         attn_dialects_verify(module) &&
         run_pipeline(ctx, module, "attn-fuse") &&
         collect_jobs(module, jobs, &njobs);
  }
  struct attn_executor x = {.iters = o.iters};
  if (ok && o.gpu)
    ok = attn_gpu_executor_init(&x); // fail fast when there is no GPU
  if (ok) {
    struct attn_strbuf p = {0};
    if (o.gpu)
      x.hopper = attn_gpu_pipeline(module, x.chip, NULL, o.kernel,
                                   o.tile_options, NULL, &p);
    else
      attn_strbuf_printf(&p, "attn-tile{%s},lower-tile-to-cpu,%s",
                         o.tile_options ? o.tile_options : "",
                         attn_cpu_to_llvm_pipeline);
    ok = !p.failed && run_pipeline(ctx, module, p.buf);
    attn_strbuf_free(&p);
  }
  if (ok && o.gpu) {
    ok = attn_gpu_executor_load(&x, module);
  } else if (ok) {
    x.execute = cpu_execute;
    x.jit = mlirExecutionEngineCreate(mlirModuleFromOperation(module), 2, 0,
                                      NULL, false, false);
    if (mlirExecutionEngineIsNull(x.jit)) {
      fprintf(stderr, "%s: error: the ExecutionEngine rejected the module\n",
              tool);
      ok = false;
    }
  }
  if (ok) {
    struct attn_rng rng;
    attn_rng_seed(&rng, o.seed);
    printf("seed=%" PRIu64 " target=%s%s\n", o.seed, o.gpu ? x.device : "cpu",
           o.gpu ? (x.hopper ? " kernel=hopper" : " kernel=plain") : "");
    for (int i = 0; i < njobs; ++i)
      failures += run_job(&x, &jobs[i], &o, &rng) != 0;
    printf("%d passed, %d failed\n", njobs - failures, failures);
    fflush(stdout);
  }
  if (!mlirExecutionEngineIsNull(x.jit))
    mlirExecutionEngineDestroy(x.jit);
  attn_gpu_executor_release(&x);
  if (!mlirOperationIsNull(module))
    mlirOperationDestroy(module);
  free(text);
  mlirContextDestroy(ctx);
  return ok && failures == 0 && sink.errors == 0 ? 0 : 1;
}
