//===- tool_util.c - Input, parsing and output shared by the attn tools ---===//
#include "tools/common/tool_util.h"

#include "lib/IR/attn_context.h"
#include "lib/Transforms/transforms.h"

#include "llvm/Config/llvm-config.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/Pass.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

char *attn_tool_read_input(const char *tool, const char *path, size_t *len) {
  bool use_stdin = !path || !strcmp(path, "-");
  FILE *f = use_stdin ? stdin : fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "%s: error: cannot open '%s': %s\n", tool, path,
            strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, n = 0, got;
  char *buf = malloc(cap);
  while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (n + 1 == cap) {
      char *grown = realloc(buf, cap * 2);
      if (!grown) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = grown;
      cap *= 2;
    }
  }
  bool bad = ferror(f);
  if (!use_stdin)
    fclose(f);
  if (!buf || bad) {
    fprintf(stderr, "%s: error: cannot read '%s'\n", tool,
            use_stdin ? "<stdin>" : path);
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  if (len)
    *len = n;
  return buf;
}

/// Skips blanks and `//` comments.
static const char *skip_blank(const char *s) {
  for (;;) {
    while (isspace((unsigned char)*s))
      ++s;
    if (s[0] != '/' || s[1] != '/')
      return s;
    while (*s && *s != '\n')
      ++s;
  }
}

/// Returns the first top-level operation of text: past blanks, comments and
/// alias definitions (`#map = ...`, `!t = ...`), which MLIR accepts only
/// outside any op. An alias ends at a newline outside brackets.
static const char *first_op(const char *s) {
  for (s = skip_blank(s); *s == '#' || *s == '!'; s = skip_blank(s)) {
    int depth = 0;
    for (; *s && (*s != '\n' || depth > 0); ++s) {
      if (*s == '"') {
        while (*++s && *s != '"')
          s += s[0] == '\\' && s[1];
        if (!*s)
          return s;
      } else if (strchr("([{<", *s)) {
        ++depth;
      } else if (strchr(")]}", *s) ||
                 (*s == '>' && s[-1] != '-' && s[1] != '=')) {
        --depth;
      }
    }
  }
  return s;
}

/// Where `module {` can go in front of op without moving any token: the
/// start of the comment ending the line before op, else that line's end.
/// Only an op on the first line (or not first on its line) shifts columns.
static const char *wrap_point(const char *text, const char *op) {
  const char *line = op;
  while (line > text && line[-1] != '\n')
    --line;
  if (line == text || skip_blank(line) != op)
    return op;
  const char *prev = line - 1;
  while (prev > text && prev[-1] != '\n')
    --prev;
  for (bool quoted = false; prev < line - 1; ++prev) {
    if (*prev == '"' && (prev == text || prev[-1] != '\\'))
      quoted = !quoted;
    else if (!quoted && prev[0] == '/' && prev[1] == '/')
      return prev;
  }
  return line - 1;
}

/// Counts the errors the parser reports, passing them on.
static MlirLogicalResult count_error(MlirDiagnostic d, void *user) {
  if (mlirDiagnosticGetSeverity(d) == MlirDiagnosticError)
    ++*(int *)user;
  return mlirLogicalResultFailure(); // on to the tool's handlers
}

/// Parses text (a module, or ops wrapped in one).
static MlirOperation parse_module(MlirContext ctx, const char *text,
                                  const char *filename) {
  const char *op = first_op(text);
  if (!strncmp(op, "module", 6) || !strncmp(op, "builtin.module", 14) ||
      !strncmp(op, "\"builtin.module\"", 16))
    return attn_parse_op(ctx, text, filename);
  // Wrap in a module, keeping every line's number (and, past the first
  // line, every column): aliases stay outside, as MLIR requires.
  const char *at = wrap_point(text, op);
  struct attn_strbuf b = {0};
  attn_strbuf_printf(&b, "%.*smodule {%s\n}", (int)(at - text), text, at);
  MlirOperation parsed =
      b.failed ? (MlirOperation){NULL} : attn_parse_op(ctx, b.buf, filename);
  attn_strbuf_free(&b);
  return parsed;
}

MlirOperation attn_tool_parse_module(MlirContext ctx, const char *text,
                                     const char *filename) {
  // Deep nesting would overflow the parser's stack: refuse it first.
  if (!attn_check_nesting(ctx, text, 0, filename))
    return (MlirOperation){NULL};
  int errors = 0;
  MlirDiagnosticHandlerID id =
      mlirContextAttachDiagnosticHandler(ctx, count_error, &errors, NULL);
  MlirOperation parsed = parse_module(ctx, text, filename);
  mlirContextDetachDiagnosticHandler(ctx, id);
  if (mlirOperationIsNull(parsed) && errors == 0)
    attn_emit_parse_hint(ctx, text, filename);
  return parsed;
}

FILE *attn_tool_open_output(const char *tool, const char *path,
                            const char *mode) {
  if (!path || !strcmp(path, "-"))
    return stdout;
  FILE *f = fopen(path, mode);
  if (!f)
    fprintf(stderr, "%s: error: cannot open '%s' for writing: %s\n", tool,
            path, strerror(errno));
  return f;
}

bool attn_tool_close_output(const char *tool, FILE *f) {
  bool bad = ferror(f) != 0;
  if (f == stdout)
    bad |= fflush(f) != 0;
  else
    bad |= fclose(f) != 0;
  if (bad)
    fprintf(stderr, "%s: error: cannot write output\n", tool);
  return !bad;
}

struct print_state {
  FILE *f;
  char last; // last byte written, to end the text with exactly one '\n'
};

bool attn_tool_run_pipeline(const char *tool, MlirOperation module,
                            const char *pipeline) {
  MlirContext ctx = mlirOperationGetContext(module);
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  char err[1024];
  bool ok = attn_pipeline_add(pm, pipeline, err, sizeof err);
  if (!ok) {
    fprintf(stderr, "%s: error: %s\n", tool, err);
  } else {
    attn_tool_pm_setup(pm);
    int errors = 0;
    MlirDiagnosticHandlerID id =
        mlirContextAttachDiagnosticHandler(ctx, count_error, &errors, NULL);
    ok = mlirLogicalResultIsSuccess(mlirPassManagerRunOnOp(pm, module));
    mlirContextDetachDiagnosticHandler(ctx, id);
    if (!ok && errors == 0)
      fprintf(stderr, "%s: error: pass pipeline '%s' failed\n", tool,
              pipeline);
  }
  mlirPassManagerDestroy(pm);
  return ok;
}

static void print_cb(MlirStringRef s, void *user) {
  struct print_state *p = user;
  fwrite(s.data, 1, s.length, p->f);
  if (s.length)
    p->last = s.data[s.length - 1];
}

void attn_tool_print_op(MlirOperation op, FILE *f) {
  struct print_state p = {f, '\0'};
  mlirOperationPrint(op, print_cb, &p);
  if (p.last != '\n')
    fputc('\n', f);
}

//===-- Command line ------------------------------------------------------===//

#ifndef ATTN_PROJECT_VERSION
#define ATTN_PROJECT_VERSION "unknown"
#endif

const struct attn_tool_option attn_tool_common_options[] = {
    {"--mlir-print-ir-before-all", "flag", "off",
     "print the IR before each pass, to stderr"},
    {"--mlir-print-ir-after-all", "flag", "off",
     "print the IR after each pass, to stderr"},
    {"--version", "flag", "off", "print the tool's, attn's and MLIR's versions"},
    {"-h, --help", "flag", "off", "print this text"},
    {NULL, NULL, NULL, NULL},
};

void attn_tool_print_options(FILE *f, const struct attn_tool_option *table) {
  for (const struct attn_tool_option *o = table; o->name; ++o) {
    int w = fprintf(f, "  %s", o->name);
    fprintf(f, "%*s %s (%s, default: %s)\n", w < 30 ? 30 - w : 0, "",
            o->help, o->type, o->def);
  }
}

/// True when a is spelled with one dash and longer than one letter.
static bool single_dash_long(const char *a) {
  return a[0] == '-' && a[1] && a[1] != '-' && a[2];
}

char **attn_tool_args(const char *tool, int argc, char **argv) {
  char **args = calloc((size_t)argc + 1, sizeof *args);
  for (int i = 0; args && i < argc; ++i) {
    args[i] = argv[i];
    if (i == 0 || !single_dash_long(argv[i]))
      continue;
    if (i > 1 && !strcmp(argv[i - 1], "-o"))
      continue; // a file name
    size_t n = strlen(argv[i]);
    if (!(args[i] = malloc(n + 2))) {
      attn_tool_args_free(i, args, argv);
      args = NULL;
      break;
    }
    args[i][0] = '-';
    memcpy(args[i] + 1, argv[i], n + 1);
  }
  if (!args)
    fprintf(stderr, "%s: error: out of memory\n", tool);
  return args;
}

void attn_tool_args_free(int argc, char **args, char **argv) {
  if (!args)
    return;
  for (int i = 0; i < argc; ++i)
    if (args[i] != argv[i])
      free(args[i]);
  free(args);
}

static bool print_ir_before, print_ir_after;

void attn_tool_set_ir_printing(bool before, bool after) {
  print_ir_before = before;
  print_ir_after = after;
}

void attn_tool_pm_setup(MlirPassManager pm) {
  if (!print_ir_before && !print_ir_after)
    return;
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  mlirPassManagerEnableIRPrinting(pm, print_ir_before, print_ir_after,
                                  false, false, false, flags,
                                  mlirStringRefCreate(NULL, 0));
  mlirOpPrintingFlagsDestroy(flags);
}

bool attn_tool_common_arg(const char *tool, const char *a, bool *exit_now) {
  if (!strcmp(a, "--version")) {
    printf("%s (attn %s)\n  MLIR and LLVM %s\n", tool, ATTN_PROJECT_VERSION,
           LLVM_VERSION_STRING);
    *exit_now = true;
  } else if (!strcmp(a, "--mlir-print-ir-before-all")) {
    print_ir_before = true;
  } else if (!strcmp(a, "--mlir-print-ir-after-all")) {
    print_ir_after = true;
  } else {
    return false;
  }
  return true;
}

//===-- Diagnostics -------------------------------------------------------===//

void attn_tool_print_remark(void *user, MlirLocation loc, const char *msg) {
  struct attn_tool_remarks *r = user;
  attn_location_print(loc, r->out);
  fprintf(r->out, ": remark: %s\n", msg);
  fflush(r->out);
  r->printed++;
}

void attn_tool_attach_remarks(MlirContext ctx, struct attn_tool_remarks *r) {
  attn_remark_handler_attach(ctx, attn_tool_print_remark, r);
}

void attn_tool_note_remarks(const char *tool,
                            const struct attn_tool_remarks *r) {
  if (r->printed)
    fprintf(stderr,
            "%s: note: attn-fuse left %s unfused; the remark%s above say%s "
            "why\n",
            tool, r->printed == 1 ? "a chain" : "chains",
            r->printed == 1 ? "" : "s", r->printed == 1 ? "s" : "");
}
