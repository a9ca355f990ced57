//===- tool_util.c - Input, parsing and output shared by the attn tools ---===//
#include "tools/common/tool_util.h"

#include "lib/IR/attn_context.h"
#include "lib/Transforms/transforms.h"

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

MlirOperation attn_tool_parse_module(MlirContext ctx, const char *text,
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
  MlirPassManager pm = mlirPassManagerCreate(mlirOperationGetContext(module));
  char err[1024];
  bool ok = attn_pipeline_add(pm, pipeline, err, sizeof err);
  if (!ok)
    fprintf(stderr, "%s: error: %s\n", tool, err);
  else
    ok = mlirLogicalResultIsSuccess(mlirPassManagerRunOnOp(pm, module));
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
