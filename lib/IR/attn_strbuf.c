//===- attn_strbuf.c - Text buffers and parsing IR built as text ----------===//
#include "lib/IR/attn_context.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(struct attn_strbuf *b, size_t extra) {
  if (b->failed)
    return false;
  if (b->len + extra + 1 <= b->cap)
    return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1)
    cap *= 2;
  char *grown = realloc(b->buf, cap);
  if (!grown) {
    b->failed = true;
    return false;
  }
  b->buf = grown;
  b->cap = cap;
  return true;
}

void attn_strbuf_printf(struct attn_strbuf *b, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n >= 0 && reserve(b, (size_t)n)) {
    vsnprintf(b->buf + b->len, (size_t)n + 1, fmt, ap2);
    b->len += (size_t)n;
  }
  va_end(ap2);
}

void attn_strbuf_append(MlirStringRef s, void *user) {
  struct attn_strbuf *b = user;
  if (!reserve(b, s.length))
    return;
  memcpy(b->buf + b->len, s.data, s.length);
  b->len += s.length;
  b->buf[b->len] = '\0';
}

void attn_strbuf_type(struct attn_strbuf *b, MlirType t) {
  mlirTypePrint(t, attn_strbuf_append, b);
}

void attn_strbuf_attr(struct attn_strbuf *b, MlirAttribute a) {
  mlirAttributePrint(a, attn_strbuf_append, b);
}

void attn_strbuf_free(struct attn_strbuf *b) {
  free(b->buf);
  memset(b, 0, sizeof *b);
}

MlirOperation attn_parse_op(MlirContext ctx, const char *text,
                            const char *source_name) {
  return mlirOperationCreateParse(ctx, mlirStringRefCreateFromCString(text),
                                  mlirStringRefCreateFromCString(source_name));
}
