//===- split_input.c - Splits attn-opt input on `// -----` lines ----------===//
#include "tools/attn-opt/attn_opt.h"

#include <stdlib.h>
#include <string.h>

static bool is_separator(const char *line, size_t len) {
  while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
    --len;
  return len == 8 && !memcmp(line, "// -----", 8);
}

static bool push_chunk(struct attn_chunk **out, size_t *n, size_t *cap,
                       const char *start, const char *end, unsigned line) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 8;
    struct attn_chunk *grown = realloc(*out, c * sizeof **out);
    if (!grown)
      return false;
    *out = grown;
    *cap = c;
  }
  size_t pad = line - 1, len = (size_t)(end - start);
  char *text = malloc(pad + len + 1);
  if (!text)
    return false;
  memset(text, '\n', pad);
  memcpy(text + pad, start, len);
  text[pad + len] = '\0';
  (*out)[(*n)++] = (struct attn_chunk){text, line};
  return true;
}

size_t attn_split_input(const char *buf, struct attn_chunk **out) {
  size_t n = 0, cap = 0;
  *out = NULL;
  const char *chunk = buf, *p = buf;
  unsigned line = 1, chunk_line = 1;
  while (*p) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    if (is_separator(p, len)) {
      if (!push_chunk(out, &n, &cap, chunk, p, chunk_line))
        goto fail;
      chunk = eol ? eol + 1 : p + len;
      chunk_line = line + 1;
    }
    if (!eol)
      break;
    p = eol + 1;
    ++line;
  }
  if (!push_chunk(out, &n, &cap, chunk, chunk + strlen(chunk), chunk_line))
    goto fail;
  return n;
fail:
  attn_chunks_free(*out, n);
  *out = NULL;
  return 0;
}

void attn_chunks_free(struct attn_chunk *chunks, size_t n) {
  for (size_t i = 0; i < n; ++i)
    free(chunks[i].text);
  free(chunks);
}
