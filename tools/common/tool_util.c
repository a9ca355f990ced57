//===- tool_util.c - Input, parsing and output shared by the attn tools ---===//
#include "tools/common/tool_util.h"

#include "lib/IR/attn_context.h"

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

/// True when the first token of text, past comments, is `module` or
/// `builtin.module`.
static bool starts_with_module(const char *s) {
  for (;;) {
    while (isspace((unsigned char)*s))
      ++s;
    if (s[0] == '/' && s[1] == '/') {
      s = strchr(s, '\n');
      if (!s)
        return false;
      continue;
    }
    break;
  }
  return !strncmp(s, "module", 6) || !strncmp(s, "builtin.module", 14) ||
         !strncmp(s, "\"builtin.module\"", 16);
}

MlirOperation attn_tool_parse_module(MlirContext ctx, const char *text,
                                     const char *filename) {
  if (starts_with_module(text))
    return attn_parse_op(ctx, text, filename);
  // Wrap on the first and last lines so every line keeps its number.
  struct attn_strbuf b = {0};
  attn_strbuf_printf(&b, "module {%s\n}", text);
  MlirOperation op = b.failed ? (MlirOperation){NULL}
                              : attn_parse_op(ctx, b.buf, filename);
  attn_strbuf_free(&b);
  return op;
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

static void print_cb(MlirStringRef s, void *user) {
  fwrite(s.data, 1, s.length, (FILE *)user);
}

void attn_tool_print_op(MlirOperation op, FILE *f) {
  mlirOperationPrint(op, print_cb, f);
  fputc('\n', f);
}
