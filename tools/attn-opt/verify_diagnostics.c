//===- verify_diagnostics.c - attn-opt --verify-diagnostics ---------------===//
//
// Same syntax as mlir-opt: `// expected-error@+1 {{substring}}` on a line
// (or @-N, @above, @below, or no suffix for the line itself). Every emitted
// diagnostic must match an expectation of the same severity and line whose
// text it contains, and every expectation must be met.
//
//===----------------------------------------------------------------------===//
#include "tools/attn-opt/attn_opt.h"

#include "lib/IR/attn_context.h"

#include <stdlib.h>
#include <string.h>

struct expectation {
  MlirDiagnosticSeverity severity;
  int line;
  char *text;
  bool met;
};

struct emitted {
  MlirDiagnosticSeverity severity;
  int line;
  char *text;
};

struct attn_verifier {
  char *filename;
  struct expectation *exp;
  size_t nexp, capexp;
  struct emitted *got;
  size_t ngot, capgot;
  bool failed;
};

static void *grow(void *p, size_t *cap, size_t elem, bool *failed) {
  size_t c = *cap ? *cap * 2 : 16;
  void *g = realloc(p, c * elem);
  if (!g) {
    *failed = true;
    return p;
  }
  *cap = c;
  return g;
}

static const struct {
  const char *word;
  MlirDiagnosticSeverity sev;
} kinds[] = {{"expected-error", MlirDiagnosticError},
             {"expected-warning", MlirDiagnosticWarning},
             {"expected-remark", MlirDiagnosticRemark},
             {"expected-note", MlirDiagnosticNote}};

/// Finds word in [s, end) (strstr would scan the rest of the file from every
/// line). NULL when absent.
static const char *find_in(const char *s, const char *end, const char *word) {
  size_t wl = strlen(word);
  for (; s + wl <= end; ++s)
    if (!memcmp(s, word, wl))
      return s;
  return NULL;
}

/// Parses the annotations on one line (1-based number line).
static void scan_line(struct attn_verifier *v, const char *s, const char *end,
                      int line, int *last_code_line) {
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; ++k) {
    const char *w = s;
    size_t wl = strlen(kinds[k].word);
    while ((w = find_in(w, end, kinds[k].word))) {
      const char *p = w + wl;
      int target = line;
      if (*p == '@') {
        ++p;
        if (!strncmp(p, "above", 5)) {
          target = line - 1;
          p += 5;
        } else if (!strncmp(p, "below", 5)) {
          target = line + 1;
          p += 5;
        } else {
          char *q;
          long off = strtol(p, &q, 10);
          target = line + (int)off;
          p = q;
        }
      }
      while (*p == ' ')
        ++p;
      const char *open = find_in(p, end, "{{");
      const char *close = open ? find_in(open, end, "}}") : NULL;
      if (!open || !close || open != p) {
        w = p;
        continue;
      }
      if (v->nexp == v->capexp)
        v->exp = grow(v->exp, &v->capexp, sizeof *v->exp, &v->failed);
      if (v->failed)
        return;
      v->exp[v->nexp++] = (struct expectation){
          kinds[k].sev, target, strndup(open + 2, (size_t)(close - open - 2)),
          false};
      w = close;
    }
  }
  (void)last_code_line;
}

struct attn_verifier *attn_verifier_create(const char *text,
                                           const char *filename) {
  struct attn_verifier *v = calloc(1, sizeof *v);
  if (!v)
    return NULL;
  v->filename = strdup(filename);
  int line = 1, last = 0;
  for (const char *s = text; *s; ++line) {
    const char *eol = strchr(s, '\n');
    const char *end = eol ? eol : s + strlen(s);
    scan_line(v, s, end, line, &last);
    if (!eol)
      break;
    s = eol + 1;
  }
  return v;
}

/// Records text (owned, may be NULL) of severity s at loc.
static void record_text(struct attn_verifier *v, MlirDiagnosticSeverity s,
                        MlirLocation loc, char *text) {
  if (v->ngot == v->capgot)
    v->got = grow(v->got, &v->capgot, sizeof *v->got, &v->failed);
  if (v->failed) {
    free(text);
    return;
  }
  MlirStringRef file;
  int line = 0, col;
  if (!attn_location_file_line(loc, &file, &line, &col))
    line = 0;
  v->got[v->ngot++] = (struct emitted){s, line, text};
}

static void record_one(struct attn_verifier *v, MlirDiagnostic d) {
  struct attn_strbuf msg = {0};
  mlirDiagnosticPrint(d, attn_strbuf_append, &msg);
  record_text(v, mlirDiagnosticGetSeverity(d), mlirDiagnosticGetLocation(d),
              msg.buf);
}

void attn_verifier_record_remark(struct attn_verifier *v, MlirLocation loc,
                                 const char *msg) {
  record_text(v, MlirDiagnosticRemark, loc, strdup(msg));
}

void attn_verifier_record(struct attn_verifier *v, MlirDiagnostic d) {
  record_one(v, d);
  // Notes attached to a diagnostic are checked only when a test expects
  // them; MLIR's own verifiers attach many ("see current operation").
  for (intptr_t i = 0, n = mlirDiagnosticGetNumNotes(d); i < n; ++i) {
    MlirDiagnostic note = mlirDiagnosticGetNote(d, i);
    MlirStringRef file;
    int line, col;
    if (!attn_location_file_line(mlirDiagnosticGetLocation(note), &file,
                                 &line, &col))
      continue;
    for (size_t j = 0; j < v->nexp; ++j)
      if (v->exp[j].severity == MlirDiagnosticNote && v->exp[j].line == line) {
        record_one(v, note);
        break;
      }
  }
}

int attn_verifier_finish(struct attn_verifier *v, FILE *err) {
  int bad = 0;
  for (size_t i = 0; i < v->ngot; ++i) {
    struct emitted *g = &v->got[i];
    bool matched = false;
    for (size_t j = 0; j < v->nexp && !matched; ++j) {
      struct expectation *e = &v->exp[j];
      if (!e->met && e->severity == g->severity && e->line == g->line &&
          g->text && strstr(g->text, e->text)) {
        e->met = true;
        matched = true;
      }
    }
    if (!matched) {
      fprintf(err, "%s:%d: error: unexpected %s: %s\n", v->filename, g->line,
              attn_severity_name(g->severity), g->text ? g->text : "");
      ++bad;
    }
  }
  for (size_t j = 0; j < v->nexp; ++j)
    if (!v->exp[j].met) {
      fprintf(err, "%s:%d: error: expected %s \"%s\" was not produced\n",
              v->filename, v->exp[j].line, attn_severity_name(v->exp[j].severity),
              v->exp[j].text);
      ++bad;
    }
  if (v->failed) {
    fprintf(err, "%s: error: out of memory while verifying diagnostics\n",
            v->filename);
    ++bad;
  }
  return bad;
}

void attn_verifier_destroy(struct attn_verifier *v) {
  if (!v)
    return;
  for (size_t i = 0; i < v->nexp; ++i)
    free(v->exp[i].text);
  for (size_t i = 0; i < v->ngot; ++i)
    free(v->got[i].text);
  free(v->exp);
  free(v->got);
  free(v->filename);
  free(v);
}
