//===- attn_fuzz.c - attn-fuzz: property tests of the whole language ------===//
//
// Generates random well-formed attention programs (every block, every pair of
// blocks, random subsets in random modifier orders, odd lengths, GQA, f32,
// f16 and bf16, random tile options), compiles each in-process through
// attn-fuse, attn-tile, lower-tile-to-cpu and the LLVM dialect, runs it with
// MLIR's ExecutionEngine on random inputs and compares the output with the
// float64 reference built from the generated program. With --bodies the
// programs may also carry attn.score_mod / attn.mask_mod ops (issue 28).
// --body-cases=N checks the language side of those alone: N programs with
// bodies verify, attn-fuse composes their bodies into attn.fused's regions,
// and the float64 evaluator of those regions (lib/IR/attn_body_eval.h)
// agrees with the reference's own C version of each body at every
// (b, h, q, kv).
// Then generates ill-formed programs (rope after qk, pv before softmax,
// mismatched heads, bodies the body checker rejects, score_mods attn-fuse
// cannot fuse, ...) and checks that each gets its located diagnostic,
// never a crash.
//
//   attn-fuzz [--cases=N] [--invalid=N] [--body-cases=N] [--seed=S]
//             [--case=K] [--print] [--tolerance=X] [--bodies]
//
// Case K of a run is rebuilt from (seed, K) alone: a failure prints the
// command that reproduces it. Exits 1 when any case fails.
//
//===----------------------------------------------------------------------===//
#include "tools/attn-fuzz/attn_fuzz.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/dialects.h"
#include "lib/IR/attn_body_eval.h"
#include "lib/IR/attn_context.h"
#include "lib/Transforms/transforms.h"
#include "tools/attn-run/attn_run.h"
#include "tools/common/tool_util.h"

#include "mlir-c/Pass.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *tool = "attn-fuzz";

struct options {
  uint64_t seed;
  long cases, invalid, body_cases, decode_cases, decode_invalid;
  long only;         // run case `only` alone (-1: all)
  bool only_invalid; // `only` names an ill-formed case
  bool only_body;    // `only` names a body case
  bool only_decode;  // `only` names a decode case
  bool only_decode_invalid; // `only` names an ill-formed decode case
  bool gpu;          // decode cases on GPU 0
  bool print;        // print each program and result line
  bool bodies;       // well-formed cases may carry score_mod / mask_mod
  double tolerance;
};

static const struct attn_tool_option tool_options[] = {
    {"--cases=<n>", "integer", "100", "well-formed programs"},
    {"--invalid=<n>", "integer", "50", "ill-formed programs"},
    {"--body-cases=<n>", "integer", "0",
     "programs with bodies checked up to attn-fuse and the body evaluator"},
    {"--seed=<n>", "integer", "fresh each run", "seed"},
    {"--case=<k>", "integer", "all", "run well-formed case k of the seed alone"},
    {"--invalid-case=<k>", "integer", "all",
     "run ill-formed case k of the seed alone"},
    {"--body-case=<k>", "integer", "all", "run body case k of the seed alone"},
    {"--decode-cases=<n>", "integer", "0",
     "attn.fused_decode programs against the float64 decode reference"},
    {"--decode-case=<k>", "integer", "all", "run decode case k of the seed alone"},
    {"--decode-invalid=<n>", "integer", "0",
     "ill-formed attn.fused_decode programs, each with its verifier diagnostic"},
    {"--decode-invalid-case=<k>", "integer", "all",
     "run ill-formed decode case k of the seed alone"},
    {"--gpu", "flag", "off",
     "run the decode cases on GPU 0 (the drivers' pipeline: the decode kernel)"},
    {"--print", "flag", "off", "print every program and result"},
    {"--tolerance=<x>", "number", "by element type", "max relative error"},
    {"--bodies", "flag", "off",
     "well-formed programs may carry attn.score_mod / attn.mask_mod"},
    {NULL, NULL, NULL, NULL},
};

static void usage(FILE *f) {
  fprintf(f, "usage: attn-fuzz [options]\n\n"
             "Compiles random attention programs on the CPU path and checks "
             "them against the\nfloat64 reference; checks that ill-formed "
             "programs are rejected.\nOptions take one dash or two "
             "(-seed=1).\n\noptions:\n");
  attn_tool_print_options(f, tool_options);
  attn_tool_print_options(f, attn_tool_common_options);
}

static bool parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

static int parse_args(int argc, char **argv, struct options *o) {
  *o = (struct options){
      .seed = attn_fresh_seed(), .cases = 100, .invalid = 50, .only = -1};
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    char *end;
    bool ok = true, exit_now = false;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 2;
    }
    if (attn_tool_common_arg(tool, a, &exit_now)) {
      if (exit_now)
        return 2;
    } else if (!strncmp(a, "--seed=", 7)) {
      o->seed = strtoull(a + 7, &end, 10);
      ok = a[7] && !*end;
    } else if (!strncmp(a, "--cases=", 8)) {
      ok = parse_long(a + 8, 0, 1000000, &o->cases);
    } else if (!strncmp(a, "--invalid=", 10)) {
      ok = parse_long(a + 10, 0, 1000000, &o->invalid);
    } else if (!strncmp(a, "--case=", 7)) {
      ok = parse_long(a + 7, 0, 1000000000, &o->only);
    } else if (!strncmp(a, "--invalid-case=", 15)) {
      ok = parse_long(a + 15, 0, 1000000000, &o->only);
      o->only_invalid = true;
    } else if (!strncmp(a, "--body-cases=", 13)) {
      ok = parse_long(a + 13, 0, 1000000, &o->body_cases);
    } else if (!strncmp(a, "--body-case=", 12)) {
      ok = parse_long(a + 12, 0, 1000000000, &o->only);
      o->only_body = true;
    } else if (!strncmp(a, "--decode-cases=", 15)) {
      ok = parse_long(a + 15, 0, 1000000, &o->decode_cases);
    } else if (!strncmp(a, "--decode-invalid=", 17)) {
      ok = parse_long(a + 17, 0, 1000000, &o->decode_invalid);
    } else if (!strncmp(a, "--decode-invalid-case=", 22)) {
      ok = parse_long(a + 22, 0, 1000000000, &o->only);
      o->only_decode_invalid = true;
    } else if (!strncmp(a, "--decode-case=", 14)) {
      ok = parse_long(a + 14, 0, 1000000000, &o->only);
      o->only_decode = true;
    } else if (!strcmp(a, "--gpu")) {
      o->gpu = true;
    } else if (!strcmp(a, "--print")) {
      o->print = true;
    } else if (!strcmp(a, "--bodies")) {
      o->bodies = true;
    } else if (!strncmp(a, "--tolerance=", 12)) {
      o->tolerance = strtod(a + 12, &end);
      ok = a[12] && !*end && o->tolerance > 0;
    } else {
      fprintf(stderr, "%s: error: unknown option '%s' (see --help)\n", tool, a);
      return 1;
    }
    if (!ok) {
      fprintf(stderr, "%s: error: bad value in '%s'\n", tool, a);
      return 1;
    }
  }
  return 0;
}

/// Diagnostics of one case go to a memory stream, shown when it fails.
struct capture {
  struct attn_diag_sink sink;
  struct attn_tool_remarks remarks; // attn-fuse's, into the same stream
  char *text;
  size_t len;
};

static void capture_begin(struct capture *c) {
  free(c->text);
  c->text = NULL;
  c->len = 0;
  c->sink.errors = 0;
  c->sink.out = open_memstream(&c->text, &c->len);
  if (!c->sink.out)
    c->sink.out = stderr;
  c->remarks.out = c->sink.out;
}

/// Ends the capture; the text stays in c->text (never NULL after).
static void capture_end(struct capture *c) {
  if (c->sink.out != stderr)
    fclose(c->sink.out);
  c->sink.out = c->remarks.out = stderr;
  if (!c->text) {
    c->text = calloc(1, 1);
    c->len = 0;
  }
}

static void print_repro(const struct options *o, long k, bool invalid) {
  printf("  reproduce: attn-fuzz --seed=%" PRIu64 " --%s=%ld --print", o->seed,
         invalid ? "invalid-case" : "case", k);
  if (o->tolerance > 0)
    printf(" --tolerance=%g", o->tolerance);
  if (o->bodies && !invalid)
    printf(" --bodies");
  printf("\n");
}

/// Compiles and runs well-formed case k; 0 pass, 1 fail.
static int run_case(MlirContext ctx, struct capture *cap,
                    const struct options *o, long k) {
  struct fuzz_case c;
  attn_fuzz_make_case(o->seed, (uint64_t)k, o->bodies, &c);
  char name[32], file[48], pipeline[1024];
  snprintf(name, sizeof name, "case%ld", k);
  snprintf(file, sizeof file, "case%ld.mlir", k);
  struct attn_strbuf text = {0}, desc = {0};
  attn_fuzz_emit(&text, name, &c);
  attn_fuzz_describe(&desc, &c);
  if (o->print)
    printf("%s", text.buf);
  capture_begin(cap);
  struct job job;
  int njobs = 0, rc = 1;
  struct attn_executor x = {0};
  MlirOperation module = attn_tool_parse_module(ctx, text.buf, file);
  bool ok = !mlirOperationIsNull(module) && mlirOperationVerify(module) &&
            attn_dialects_verify(module) &&
            attn_tool_run_pipeline(tool, module, "attn-fuse") &&
            attn_run_collect_jobs(module, &job, 1, &njobs);
  snprintf(pipeline, sizeof pipeline,
           "attn-tile{block-m=%d block-n=%d},lower-tile-to-cpu,%s", c.block_m,
           c.block_n, attn_cpu_to_llvm_pipeline);
  ok = ok && attn_tool_run_pipeline(tool, module, pipeline) &&
       attn_cpu_executor_load(&x, module);
  char *line = NULL;
  size_t line_len = 0;
  FILE *out = open_memstream(&line, &line_len);
  if (ok && out) {
    // The reference comes from the program as generated.
    attn_fuzz_reference_problem(&c, &job.p);
    struct attn_rng rng;
    attn_rng_seed(&rng, o->seed * 0x9E3779B97F4A7C15ull + (uint64_t)k + 1);
    rc = attn_run_job(&x, &job, o->tolerance, &rng, out);
  }
  if (out)
    fclose(out);
  capture_end(cap);
  if (rc != 0 || o->print)
    printf("%s %s: %s\n  %s", rc == 0 ? "PASS" : "FAIL", name,
           desc.buf ? desc.buf : "", line && *line ? line : "(no result)\n");
  if (rc != 0) {
    if (cap->len)
      printf("%s", cap->text);
    print_repro(o, k, false);
  }
  free(line);
  attn_cpu_executor_release(&x);
  attn_run_jobs_release(&job, njobs); // the copy of a function with bodies
  if (!mlirOperationIsNull(module))
    mlirOperationDestroy(module);
  attn_strbuf_free(&text);
  attn_strbuf_free(&desc);
  return rc != 0;
}

/// Whether the captured diagnostics hold want on a line that starts with
/// file's location and says error.
static bool located_error(const struct capture *cap, const char *file,
                          const char *want) {
  char located[64];
  snprintf(located, sizeof located, "%s:", file);
  for (const char *l = cap->text; l && *l;) {
    const char *nl = strchr(l, '\n');
    size_t n = nl ? (size_t)(nl - l) : strlen(l);
    char buf[1024];
    snprintf(buf, sizeof buf, "%.*s",
             (int)(n < sizeof buf ? n : sizeof buf - 1), l);
    if (!strncmp(buf, located, strlen(located)) && strstr(buf, ": error: ") &&
        strstr(buf, want))
      return true;
    l = nl ? nl + 1 : NULL;
  }
  return false;
}

/// Checks that ill-formed case k gets its diagnostic, located in its file,
/// from the verifiers or else from attn-fuse; 0 pass, 1 fail.
static int run_invalid(MlirContext ctx, struct capture *cap,
                       const struct options *o, long k) {
  struct fuzz_case c;
  attn_fuzz_make_invalid(o->seed, (uint64_t)k, &c);
  char name[32], file[48];
  snprintf(name, sizeof name, "invalid%ld", k);
  snprintf(file, sizeof file, "invalid%ld.mlir", k);
  struct attn_strbuf text = {0};
  attn_fuzz_emit(&text, name, &c);
  if (o->print)
    printf("%s", text.buf);
  capture_begin(cap);
  MlirOperation module = attn_tool_parse_module(ctx, text.buf, file);
  bool parsed = !mlirOperationIsNull(module);
  bool accepted = parsed && mlirOperationVerify(module) &&
                  attn_dialects_verify(module) &&
                  attn_tool_run_pipeline(tool, module, "attn-fuse");
  capture_end(cap);
  const char *want = attn_fuzz_expected_error(&c);
  bool pass = parsed && !accepted && located_error(cap, file, want);
  if (!pass || o->print) {
    printf("%s %s: expected \"%s\"%s\n", pass ? "PASS" : "FAIL", name, want,
           !parsed    ? " (the program does not parse)"
           : accepted ? " (the program was accepted)"
                      : "");
    printf("%s", cap->text);
  }
  if (!pass)
    print_repro(o, k, true);
  if (parsed)
    mlirOperationDestroy(module);
  attn_strbuf_free(&text);
  return !pass;
}

/// Runs decode case k through the CPU path (or with --gpu the drivers' GPU
/// pipeline) against the float64 reference of the case; 0 pass, 1 fail.
static int run_decode_case(MlirContext ctx, struct capture *cap,
                           const struct options *o, struct attn_executor *x,
                           long k) {
  struct fuzz_decode c;
  attn_fuzz_make_decode(o->seed, (uint64_t)k, &c);
  char name[32], file[48];
  snprintf(name, sizeof name, "decode%ld", k);
  snprintf(file, sizeof file, "decode%ld.mlir", k);
  struct attn_strbuf text = {0}, desc = {0}, pipe = {0};
  attn_fuzz_emit_decode(&text, name, &c);
  attn_fuzz_describe_decode(&desc, &c);
  if (o->print)
    printf("%s", text.buf);
  capture_begin(cap);
  struct job job;
  int njobs = 0, rc = 1;
  MlirOperation module = attn_tool_parse_module(ctx, text.buf, file);
  bool ok = !mlirOperationIsNull(module) && mlirOperationVerify(module) &&
            attn_dialects_verify(module) &&
            attn_run_collect_jobs(module, &job, 1, &njobs) && njobs == 1 &&
            job.decode;
  if (ok && o->gpu) {
    char ctas[32];
    snprintf(ctas, sizeof ctas, "ctas=%d", x->sms);
    x->kernel = attn_gpu_pipeline(module, x->chip, NULL, ATTN_GPU_KERNEL_AUTO,
                                  NULL, ctas, &pipe);
  } else {
    attn_strbuf_printf(&pipe, "attn-tile,lower-tile-to-cpu,%s",
                       attn_cpu_to_llvm_pipeline);
  }
  ok = ok && !pipe.failed && attn_tool_run_pipeline(tool, module, pipe.buf) &&
       (o->gpu ? attn_gpu_executor_load(x, module)
               : attn_cpu_executor_load(x, module));
  char *line = NULL;
  size_t line_len = 0;
  FILE *out = open_memstream(&line, &line_len);
  if (ok && out) {
    attn_fuzz_decode_reference(&c, &job.dp); // the case's, not the op's
    struct attn_rng rng;
    attn_rng_seed(&rng, o->seed * 0x9E3779B97F4A7C15ull + (uint64_t)k + 7);
    rc = attn_run_job(x, &job, o->tolerance, &rng, out);
  }
  if (out)
    fclose(out);
  capture_end(cap);
  if (rc != 0 || o->print)
    printf("%s %s: %s  %s", rc == 0 ? "PASS" : "FAIL", name,
           desc.buf ? desc.buf : "", line && *line ? line : "(no result)\n");
  if (rc != 0) {
    if (cap->len)
      printf("%s", cap->text);
    printf("  reproduce: attn-fuzz --seed=%" PRIu64 " --decode-case=%ld%s --print\n",
           o->seed, k, o->gpu ? " --gpu" : "");
  }
  free(line);
  if (!o->gpu)
    attn_cpu_executor_release(x);
  if (njobs)
    attn_run_jobs_release(&job, njobs);
  if (!mlirOperationIsNull(module))
    mlirOperationDestroy(module);
  attn_strbuf_free(&text);
  attn_strbuf_free(&desc);
  attn_strbuf_free(&pipe);
  return rc != 0;
}

/// Checks that ill-formed decode case k gets its verifier diagnostic,
/// located in its file; 0 pass, 1 fail.
static int run_decode_invalid(MlirContext ctx, struct capture *cap,
                              const struct options *o, long k) {
  struct fuzz_decode c;
  attn_fuzz_make_decode_invalid(o->seed, (uint64_t)k, &c);
  char name[40], file[56], want[256];
  snprintf(name, sizeof name, "decode_invalid%ld", k);
  snprintf(file, sizeof file, "decode_invalid%ld.mlir", k);
  struct attn_strbuf text = {0};
  attn_fuzz_emit_decode(&text, name, &c);
  attn_fuzz_decode_expected_error(&c, want, sizeof want);
  if (o->print)
    printf("%s", text.buf);
  capture_begin(cap);
  MlirOperation module = attn_tool_parse_module(ctx, text.buf, file);
  bool parsed = !mlirOperationIsNull(module);
  bool accepted = parsed && mlirOperationVerify(module) &&
                  attn_dialects_verify(module);
  capture_end(cap);
  bool pass = parsed && !accepted && located_error(cap, file, want);
  if (!pass || o->print) {
    printf("%s %s: expected \"%s\"%s\n", pass ? "PASS" : "FAIL", name, want,
           !parsed    ? " (the program does not parse)"
           : accepted ? " (the program was accepted)"
                      : "");
    printf("%s", cap->text);
  }
  if (!pass)
    printf("  reproduce: attn-fuzz --seed=%" PRIu64
           " --decode-invalid-case=%ld --print\n",
           o->seed, k);
  if (parsed)
    mlirOperationDestroy(module);
  attn_strbuf_free(&text);
  return !pass;
}

static MlirWalkResult find_fused(MlirOperation op, void *user) {
  if (!attn_op_is(op, ATTN_OP_FUSED))
    return MlirWalkResultAdvance;
  *(MlirOperation *)user = op;
  return MlirWalkResultInterrupt;
}

/// Compares the evaluated regions of fused with the reference's bodies of c
/// at every (b, h, q, kv), with a random score each. Writes the first
/// difference into why; returns whether they agree.
static bool bodies_agree(MlirOperation fused, const struct fuzz_case *c,
                         uint64_t seed, char *why, size_t len) {
  struct attn_ref_problem p;
  attn_fuzz_reference_problem(c, &p);
  MlirBlock sb = attn_fused_score_fn(fused), mb = attn_fused_mask_fn(fused);
  if (mlirBlockIsNull(sb) != !p.score_fn ||
      mlirBlockIsNull(mb) != !p.mask_fn) {
    snprintf(why, len, "attn.fused has %s score_fn and %s mask_fn",
             mlirBlockIsNull(sb) ? "no" : "a", mlirBlockIsNull(mb) ? "no" : "a");
    return false;
  }
  char err[256] = "";
  struct attn_body_fns fns = {NULL, NULL};
  bool ok = true;
  if (!mlirBlockIsNull(sb))
    ok = (fns.score = attn_body_eval_create(sb, 0, NULL, err, sizeof err));
  if (ok && !mlirBlockIsNull(mb))
    ok = (fns.mask = attn_body_eval_create(mb, 0, NULL, err, sizeof err));
  if (!ok)
    snprintf(why, len, "the evaluator refuses a region: %s", err);
  struct attn_rng rng;
  attn_rng_seed(&rng, seed);
  for (int64_t b = 0; ok && b < c->b; ++b)
    for (int64_t h = 0; ok && h < c->h; ++h)
      for (int64_t q = 0; ok && q < c->n; ++q)
        for (int64_t kv = 0; ok && kv < c->m; ++kv) {
          double s = 4.0 * attn_rng_normal(&rng);
          if (p.score_fn) {
            double want = p.score_fn(p.fn_ctx, s, b, h, q, kv);
            double got = attn_body_fns_score(&fns, s, b, h, q, kv);
            if (!(fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want)))) {
              snprintf(why, len,
                       "score_fn(%.17g, %lld, %lld, %lld, %lld) = %.17g, the "
                       "reference says %.17g",
                       s, (long long)b, (long long)h, (long long)q,
                       (long long)kv, got, want);
              ok = false;
            }
          }
          if (ok && p.mask_fn &&
              p.mask_fn(p.fn_ctx, b, h, q, kv) !=
                  attn_body_fns_mask(&fns, b, h, q, kv)) {
            snprintf(why, len,
                     "mask_fn(%lld, %lld, %lld, %lld) = %d, the reference "
                     "says %d",
                     (long long)b, (long long)h, (long long)q, (long long)kv,
                     !p.mask_fn(p.fn_ctx, b, h, q, kv),
                     p.mask_fn(p.fn_ctx, b, h, q, kv));
            ok = false;
          }
        }
  attn_body_eval_destroy(fns.score);
  attn_body_eval_destroy(fns.mask);
  return ok;
}

/// Body case k: a program drawn with bodies verifies, attn-fuse composes
/// them, and the evaluator of the fused regions agrees with the
/// reference's bodies; 0 pass, 1 fail.
static int run_body_case(MlirContext ctx, struct capture *cap,
                         const struct options *o, long k) {
  struct fuzz_case c;
  attn_fuzz_make_case(~o->seed, (uint64_t)k, true, &c);
  char name[32], file[48], why[512] = "";
  snprintf(name, sizeof name, "body%ld", k);
  snprintf(file, sizeof file, "body%ld.mlir", k);
  struct attn_strbuf text = {0}, desc = {0};
  attn_fuzz_emit(&text, name, &c);
  attn_fuzz_describe(&desc, &c);
  if (o->print)
    printf("%s", text.buf);
  capture_begin(cap);
  MlirOperation module = attn_tool_parse_module(ctx, text.buf, file);
  MlirOperation fused = {NULL};
  bool ok = !mlirOperationIsNull(module) && mlirOperationVerify(module) &&
            attn_dialects_verify(module) &&
            attn_tool_run_pipeline(tool, module, "attn-fuse");
  if (ok)
    mlirOperationWalk(module, find_fused, &fused, MlirWalkPreOrder);
  if (ok && mlirOperationIsNull(fused)) {
    snprintf(why, sizeof why, "attn-fuse made no attn.fused");
    ok = false;
  }
  capture_end(cap);
  if (ok)
    ok = bodies_agree(fused, &c, o->seed + (uint64_t)k, why, sizeof why);
  if (!ok || o->print)
    printf("%s %s: %s\n%s%s%s", ok ? "PASS" : "FAIL", name,
           desc.buf ? desc.buf : "", *why ? "  " : "", why, *why ? "\n" : "");
  if (!ok) {
    if (cap->len)
      printf("%s", cap->text);
    printf("  reproduce: attn-fuzz --seed=%" PRIu64 " --body-case=%ld "
           "--print\n",
           o->seed, k);
  }
  if (!mlirOperationIsNull(module))
    mlirOperationDestroy(module);
  attn_strbuf_free(&text);
  attn_strbuf_free(&desc);
  return !ok;
}

int main(int argc, char **argv) {
  struct options o;
  char **args = attn_tool_args(tool, argc, argv);
  int rc = args ? parse_args(argc, args, &o) : 1;
  attn_tool_args_free(argc, args, argv); // o keeps no pointer into args
  if (rc)
    return rc == 2 ? 0 : 1;
  MlirContext ctx = attn_context_create();
  struct capture cap = {.sink = {stderr, 0, 0}, .remarks = {stderr, 0}};
  attn_diag_attach(ctx, &cap.sink);
  attn_tool_attach_remarks(ctx, &cap.remarks);
  if (!attn_register_all(ctx, NULL)) {
    attn_remark_handler_detach(ctx);
    mlirContextDestroy(ctx);
    return 1;
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long passed = 0, failed = 0, rejected = 0, accepted = 0;
  printf("seed=%" PRIu64 "\n", o.seed);
  fflush(stdout);
  bool only_case = o.only >= 0 && !o.only_invalid && !o.only_body &&
                   !o.only_decode && !o.only_decode_invalid;
  long first = only_case ? o.only : 0;
  long last = o.only >= 0 ? (only_case ? o.only : -1) : o.cases - 1;
  for (long k = first; k <= last; ++k) {
    int f = run_case(ctx, &cap, &o, k);
    passed += !f;
    failed += f;
    fflush(stdout);
  }
  first = o.only >= 0 && o.only_invalid ? o.only : 0;
  last = o.only >= 0 ? (o.only_invalid ? o.only : -1) : o.invalid - 1;
  for (long k = first; k <= last; ++k) {
    int f = run_invalid(ctx, &cap, &o, k);
    rejected += !f;
    accepted += f;
    fflush(stdout);
  }
  long agree = 0, differ = 0;
  first = o.only >= 0 && o.only_body ? o.only : 0;
  last = o.only >= 0 ? (o.only_body ? o.only : -1) : o.body_cases - 1;
  for (long k = first; k <= last; ++k) {
    int f = run_body_case(ctx, &cap, &o, k);
    agree += !f;
    differ += f;
    fflush(stdout);
  }
  long dpass = 0, dfail = 0;
  first = o.only >= 0 && o.only_decode ? o.only : 0;
  long dlast = o.only >= 0 ? (o.only_decode ? o.only : -1) : o.decode_cases - 1;
  struct attn_executor x = {0};
  bool xok = dlast < first || !o.gpu || attn_gpu_executor_init(&x);
  if (!xok) // attn_gpu_executor_init printed why
    fprintf(stderr, "%s: error: --gpu: no decode case ran\n", tool);
  for (long k = first; xok && k <= dlast; ++k) {
    int f = run_decode_case(ctx, &cap, &o, &x, k);
    dpass += !f;
    dfail += f;
    fflush(stdout);
  }
  if (o.gpu)
    attn_gpu_executor_release(&x);
  long drej = 0, dmiss = 0;
  first = o.only >= 0 && o.only_decode_invalid ? o.only : 0;
  long ilast = o.only >= 0 ? (o.only_decode_invalid ? o.only : -1)
                           : o.decode_invalid - 1;
  for (long k = first; k <= ilast; ++k) {
    int f = run_decode_invalid(ctx, &cap, &o, k);
    drej += !f;
    dmiss += f;
    fflush(stdout);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) +
                (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  printf("%ld passed, %ld failed\n", passed, failed);
  printf("%ld ill-formed rejected, %ld missed\n", rejected, accepted);
  if (last >= first)
    printf("%ld body programs agree with the reference, %ld differ\n", agree,
           differ);
  if (dpass + dfail)
    printf("%ld decode programs passed, %ld failed%s\n", dpass, dfail,
           o.gpu ? " (GPU)" : "");
  if (drej + dmiss)
    printf("%ld ill-formed decode programs rejected, %ld missed\n", drej, dmiss);
  printf("seed=%" PRIu64 " time=%.1fs\n", o.seed, secs);
  if (failed || accepted)
    fprintf(stderr,
            "%s: error: %ld case%s failed and %ld ill-formed program%s "
            "accepted (see above)\n",
            tool, failed, failed == 1 ? "" : "s", accepted,
            accepted == 1 ? " was" : "s were");
  if (differ)
    fprintf(stderr, "%s: error: %ld body program%s failed (see above)\n",
            tool, differ, differ == 1 ? "" : "s");
  if (dfail)
    fprintf(stderr, "%s: error: %ld decode program%s failed (see above)\n",
            tool, dfail, dfail == 1 ? "" : "s");
  if (dmiss)
    fprintf(stderr, "%s: error: %ld ill-formed decode program%s missed (see above)\n",
            tool, dmiss, dmiss == 1 ? "" : "s");
  free(cap.text);
  attn_remark_handler_detach(ctx);
  mlirContextDestroy(ctx);
  return failed || accepted || differ || dfail || dmiss || !xok ? 1 : 0;
}
