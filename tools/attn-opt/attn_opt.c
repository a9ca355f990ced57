//===- attn_opt.c - attn-opt: parse, verify, run passes, print ------------===//
//
// Behaves like mlir-opt for the attn dialects: reads a file or stdin, runs
// the attn verifiers, then the passes named by short flags (in order) or by
// --pass-pipeline, and prints the result.
//
//===----------------------------------------------------------------------===//
#include "tools/attn-opt/attn_opt.h"

#include "dialects/dialects.h"
#include "lib/IR/attn_context.h"
#include "lib/Transforms/transforms.h"
#include "tools/common/tool_util.h"

#include "mlir-c/Pass.h"

#include <stdlib.h>
#include <string.h>

static const char *tool = "attn-opt";

struct options {
  const char *input, *output, *irdl_file;
  bool split, verify;
  struct attn_strbuf pipeline;           // comma-separated pipeline elements
  const char *pipeline_flag, *pass_flag; // first of each kind, if any
};

static const struct attn_tool_option tool_options[] = {
    {"-o <file>", "file", "- (stdout)", "write the output to file"},
    {"--split-input-file", "flag", "off",
     "process each '// -----' chunk alone"},
    {"--verify-diagnostics", "flag", "off",
     "check expected-error/warning/remark/note annotations"},
    {"--pass-pipeline=<text>", "string", "none",
     "e.g. 'builtin.module(attn-fuse, attn-tile{block-m=64}, canonicalize)'"},
    {"--irdl-file=<file>", "file", "the built-in IRDL",
     "load the dialects from this IRDL"},
    {"--attn-cpu-to-llvm", "flag", "off",
     "the upstream passes from lower-tile-to-cpu's output to LLVM"},
    {"--<upstream-pass>[=opts]", "pass", "none",
     "any MLIR pass, e.g. --canonicalize --cse"},
    {NULL, NULL, NULL, NULL},
};

static void usage(FILE *f) {
  fprintf(f, "usage: attn-opt [options] [input.mlir|-]\n\n"
             "Parses attn/tile/comm IR, verifies it, runs passes, prints it.\n"
             "Options take one dash or two (-split-input-file).\n\n"
             "options:\n");
  attn_tool_print_options(f, tool_options);
  attn_tool_print_options(f, attn_tool_common_options);
  fprintf(f, "\nattn passes (--name or --name=\"opt=value ...\"):\n");
  for (size_t i = 0; i < attn_num_passes; ++i) {
    const struct attn_pass_def *d = attn_passes[i];
    fprintf(f, "  --%-24s %s\n", d->argument, d->description);
    if (d->alias)
      fprintf(f, "  --%-24s alias of --%s\n", d->alias, d->argument);
    for (const struct attn_pass_option *o = d->options; o && o->name; ++o)
      fprintf(f, "      %-22s %s\n", o->name, o->help);
  }
}

/// Appends one pipeline element (pass name with optional options).
static void add_element(struct options *o, const char *name, const char *opts) {
  attn_strbuf_printf(&o->pipeline, "%s%s", o->pipeline.len ? "," : "", name);
  if (opts)
    attn_strbuf_printf(&o->pipeline, "{%s}", opts);
}

/// Returns 0 on success, 1 on a bad command line, 2 after --help or
/// --version.
static int parse_args(int argc, char **argv, struct options *o) {
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    bool exit_now = false;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 2;
    }
    if (attn_tool_common_arg(tool, a, &exit_now)) {
      if (exit_now)
        return 2;
    } else if (!strcmp(a, "-o")) {
      if (++i == argc) {
        fprintf(stderr, "%s: error: -o needs a file name\n", tool);
        return 1;
      }
      o->output = argv[i];
    } else if (!strcmp(a, "--split-input-file")) {
      o->split = true;
    } else if (!strcmp(a, "--verify-diagnostics")) {
      o->verify = true;
    } else if (!strncmp(a, "--pass-pipeline=", 16)) {
      if (o->pipeline_flag) {
        fprintf(stderr, "%s: error: --pass-pipeline given more than once\n",
                tool);
        return 1;
      }
      o->pipeline_flag = a;
      attn_strbuf_printf(&o->pipeline, "%s%s", o->pipeline.len ? "," : "",
                         a + 16);
    } else if (!strncmp(a, "--irdl-file=", 12)) {
      o->irdl_file = a + 12;
    } else if (!strcmp(a, "--attn-cpu-to-llvm")) {
      o->pass_flag = o->pass_flag ? o->pass_flag : a;
      add_element(o, attn_cpu_to_llvm_pipeline, NULL);
    } else if (!strncmp(a, "--", 2) && a[2]) {
      o->pass_flag = o->pass_flag ? o->pass_flag : a;
      // A pass flag: ours or upstream; checked when the pipeline is built.
      const char *eq = strchr(a, '=');
      char name[128];
      snprintf(name, sizeof name, "%.*s", (int)(eq ? eq - a - 2 : (long)strlen(a + 2)),
               a + 2);
      add_element(o, name, eq ? eq + 1 : NULL);
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "%s: error: unknown option '%s' (see --help)\n", tool, a);
      return 1;
    } else if (o->input) {
      fprintf(stderr, "%s: error: more than one input file ('%s' and '%s')\n",
              tool, o->input, a);
      return 1;
    } else {
      o->input = a;
    }
  }
  if (o->pipeline_flag && o->pass_flag) {
    fprintf(stderr,
            "%s: error: --pass-pipeline cannot be combined with pass flags "
            "such as '%s'\n",
            tool, o->pass_flag);
    return 1;
  }
  if (o->pipeline.failed) {
    fprintf(stderr, "%s: error: out of memory\n", tool);
    return 1;
  }
  return 0;
}

struct run_state {
  struct attn_diag_sink sink;
  struct attn_tool_remarks remarks;
  struct attn_verifier *verifier; // non-NULL while verifying a chunk
};

/// attn-fuse's remarks: checked like diagnostics, else printed.
static void on_remark(void *user, MlirLocation loc, const char *msg) {
  struct run_state *s = user;
  if (s->verifier) {
    attn_verifier_record_remark(s->verifier, loc, msg);
    return;
  }
  attn_tool_print_remark(&s->remarks, loc, msg);
}

static MlirLogicalResult on_diag(MlirDiagnostic d, void *user) {
  struct run_state *s = user;
  if (s->verifier) {
    attn_verifier_record(s->verifier, d);
    return mlirLogicalResultSuccess();
  }
  // Fall through to the printing handler attached before this one.
  return mlirLogicalResultFailure();
}

/// Parses, verifies and transforms one chunk and prints it, after a
/// `// -----` line when an earlier chunk was printed (*printed). Returns
/// false on any error.
static bool process(MlirContext ctx, struct run_state *st,
                    const struct options *o, const char *text,
                    const char *filename, FILE *out, bool *printed) {
  MlirOperation module = attn_tool_parse_module(ctx, text, filename);
  if (mlirOperationIsNull(module))
    return false;
  bool ok = mlirOperationVerify(module) && attn_dialects_verify(module);
  if (ok && o->pipeline.len) {
    MlirPassManager pm = mlirPassManagerCreate(ctx);
    char err[1024];
    if (!attn_pipeline_add(pm, o->pipeline.buf, err, sizeof err)) {
      fprintf(stderr, "%s: error: %s\n", tool, err);
      mlirPassManagerDestroy(pm);
      mlirOperationDestroy(module);
      return false;
    }
    attn_tool_pm_setup(pm);
    int errors = st->sink.errors;
    ok = mlirLogicalResultIsSuccess(mlirPassManagerRunOnOp(pm, module));
    mlirPassManagerDestroy(pm);
    if (!ok && !st->verifier && st->sink.errors == errors)
      fprintf(stderr, "%s: error: the pass pipeline failed\n", tool);
  }
  if (ok) {
    if (*printed)
      fputs("// -----\n", out);
    attn_tool_print_op(module, out);
    *printed = true;
  }
  mlirOperationDestroy(module);
  return ok;
}

/// Checks the pipeline once, before any input, so a bad flag is reported
/// even for empty inputs. Returns false after printing the problem.
static bool check_pipeline(MlirContext ctx, const struct options *o) {
  if (!o->pipeline.len)
    return true;
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  char err[1024];
  bool ok = attn_pipeline_add(pm, o->pipeline.buf, err, sizeof err);
  if (!ok)
    fprintf(stderr, "%s: error: %s\n", tool, err);
  mlirPassManagerDestroy(pm);
  return ok;
}

int main(int argc, char **argv) {
  struct options o = {0};
  char **args = attn_tool_args(tool, argc, argv);
  int rc = args ? parse_args(argc, args, &o) : 1;
  if (rc) {
    attn_strbuf_free(&o.pipeline);
    attn_tool_args_free(argc, args, argv);
    return rc == 2 ? 0 : 1;
  }
  const char *filename = o.input && strcmp(o.input, "-") ? o.input : "<stdin>";
  char *text = attn_tool_read_input(tool, o.input, NULL);
  if (!text) {
    attn_strbuf_free(&o.pipeline);
    attn_tool_args_free(argc, args, argv);
    return 1;
  }
  MlirContext ctx = attn_context_create();
  struct run_state st = {{stderr, 0, 0}, {stderr, 0}, NULL};
  attn_diag_attach(ctx, &st.sink);
  mlirContextAttachDiagnosticHandler(ctx, on_diag, &st, NULL);
  attn_remark_handler_attach(ctx, on_remark, &st);
  FILE *out = NULL;
  bool ok = attn_register_all(ctx, o.irdl_file) && check_pipeline(ctx, &o);
  if (ok)
    out = attn_tool_open_output(tool, o.output, "w");
  ok = ok && out;
  struct attn_chunk *chunks = NULL;
  size_t n = 0;
  if (ok) {
    if (o.split) {
      n = attn_split_input(text, &chunks);
    } else if ((chunks = malloc(sizeof *chunks))) {
      chunks[0] = (struct attn_chunk){strdup(text), 1};
      n = chunks[0].text ? 1 : 0;
    }
    if (!n) {
      fprintf(stderr, "%s: error: out of memory\n", tool);
      ok = false;
    }
  }
  int mismatches = 0;
  bool printed = false, failed = false;
  for (size_t i = 0; ok && i < n; ++i) {
    if (o.verify)
      st.verifier = attn_verifier_create(chunks[i].text, filename);
    bool chunk_ok =
        process(ctx, &st, &o, chunks[i].text, filename, out, &printed);
    if (st.verifier) {
      mismatches += attn_verifier_finish(st.verifier, stderr);
      attn_verifier_destroy(st.verifier);
      st.verifier = NULL;
    } else if (!chunk_ok) {
      failed = true;
    }
  }
  attn_chunks_free(chunks, n);
  if (out && !attn_tool_close_output(tool, out))
    ok = false;
  free(text);
  attn_strbuf_free(&o.pipeline);
  attn_tool_args_free(argc, args, argv);
  attn_remark_handler_detach(ctx);
  mlirContextDestroy(ctx);
  return ok && !failed && mismatches == 0 && (o.verify || st.sink.errors == 0)
             ? 0
             : 1;
}
