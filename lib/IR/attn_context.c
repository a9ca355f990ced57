//===- attn_context.c - Context set-up and the tools' diagnostic handler --===//
#include "lib/IR/attn_context.h"
#include "dialects/dialects.h"

#include "mlir-c/Diagnostics.h"
#include "mlir-c/RegisterEverything.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <threads.h>

static once_flag passes_once = ONCE_FLAG_INIT;

static void register_passes(void) { mlirRegisterAllPasses(); }

MlirContext attn_context_create(void) {
  call_once(&passes_once, register_passes);
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  MlirContext ctx = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  mlirRegisterAllLLVMTranslations(ctx);
  return ctx;
}

bool attn_register_all(MlirContext ctx, const char *irdl_override) {
  return attn_dialects_load(ctx, irdl_override);
}

bool attn_location_file_line(MlirLocation loc, MlirStringRef *file, int *line,
                             int *col) {
  for (int depth = 0; depth < 16; ++depth) {
    if (mlirLocationIsAFileLineColRange(loc)) {
      *file = mlirIdentifierStr(mlirLocationFileLineColRangeGetFilename(loc));
      *line = mlirLocationFileLineColRangeGetStartLine(loc);
      *col = mlirLocationFileLineColRangeGetStartColumn(loc);
      return true;
    }
    if (mlirLocationIsAName(loc))
      loc = mlirLocationNameGetChildLoc(loc);
    else if (mlirLocationIsACallSite(loc))
      loc = mlirLocationCallSiteGetCaller(loc);
    else if (mlirLocationIsAFused(loc) &&
             mlirLocationFusedGetNumLocations(loc) > 0) {
      intptr_t n = mlirLocationFusedGetNumLocations(loc);
      MlirLocation all[n];
      mlirLocationFusedGetLocations(loc, all);
      loc = all[0];
    } else
      return false;
  }
  return false;
}

void attn_location_print(MlirLocation loc, FILE *out) {
  MlirStringRef file;
  int line, col;
  if (attn_location_file_line(loc, &file, &line, &col))
    fprintf(out, "%.*s:%d:%d", (int)file.length, file.data, line, col);
  else
    fputs("<unknown>", out);
}

static void print_to_file(MlirStringRef s, void *user) {
  fwrite(s.data, 1, s.length, (FILE *)user);
}

const char *attn_severity_name(MlirDiagnosticSeverity s) {
  switch (s) {
  case MlirDiagnosticError:
    return "error";
  case MlirDiagnosticWarning:
    return "warning";
  case MlirDiagnosticNote:
    return "note";
  default:
    return "remark";
  }
}

static void print_diag(MlirDiagnostic d, FILE *out) {
  attn_location_print(mlirDiagnosticGetLocation(d), out);
  fprintf(out, ": %s: ", attn_severity_name(mlirDiagnosticGetSeverity(d)));
  mlirDiagnosticPrint(d, print_to_file, out);
  fputc('\n', out);
  for (intptr_t i = 0, n = mlirDiagnosticGetNumNotes(d); i < n; ++i)
    print_diag(mlirDiagnosticGetNote(d, i), out);
}

static MlirLogicalResult handle_diag(MlirDiagnostic d, void *user) {
  struct attn_diag_sink *sink = user;
  MlirDiagnosticSeverity s = mlirDiagnosticGetSeverity(d);
  if (s == MlirDiagnosticError)
    sink->errors++;
  else if (s == MlirDiagnosticWarning)
    sink->warnings++;
  print_diag(d, sink->out);
  fflush(sink->out);
  return mlirLogicalResultSuccess();
}

MlirDiagnosticHandlerID attn_diag_attach(MlirContext ctx,
                                         struct attn_diag_sink *sink) {
  return mlirContextAttachDiagnosticHandler(ctx, handle_diag, sink, NULL);
}

//===-- The custom-syntax hint --------------------------------------------===//

static bool is_name_char(char c) {
  return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '$';
}

/// Finds the first `attn.`, `tile.` or `comm.` op name of text written as
/// an op in custom form: after `=` or first on its line, outside strings and
/// comments, and not followed by `=` (a discardable attribute's name).
/// Returns its start (line and column 1-based) and length, or NULL.
static const char *find_custom_op(const char *text, int *line, int *col,
                                  int *len) {
  static const char *const prefixes[] = {"attn.", "tile.", "comm."};
  const char *bol = text;
  char prev = '\n'; // last non-blank character before s on its line
  *line = 1;
  for (const char *s = text; *s; ++s) {
    if (*s == '\n') {
      ++*line;
      bol = s + 1;
      prev = '\n';
      continue;
    }
    if (*s == '"') {
      while (*++s && *s != '"' && *s != '\n')
        s += s[0] == '\\' && s[1] && s[1] != '\n';
      if (*s != '"')
        --s;
      prev = '"';
      continue;
    }
    if (s[0] == '/' && s[1] == '/') {
      while (s[1] && s[1] != '\n')
        ++s;
      continue;
    }
    if (isspace((unsigned char)*s))
      continue;
    bool starts = (prev == '=' || prev == '\n') &&
                  (s == text || !is_name_char(s[-1]));
    for (size_t i = 0; starts && i < 3; ++i) {
      if (strncmp(s, prefixes[i], 5) || !isalpha((unsigned char)s[5]))
        continue;
      const char *end = s + 5;
      while (is_name_char(*end))
        ++end;
      const char *next = end;
      while (*next == ' ' || *next == '\t')
        ++next;
      if (*next == '=')
        break;
      *col = (int)(s - bol) + 1;
      *len = (int)(end - s);
      return s;
    }
    prev = *s;
  }
  return NULL;
}

void attn_emit_parse_hint(MlirContext ctx, const char *text,
                          const char *filename) {
  int line, col, len;
  const char *op =
      text && filename ? find_custom_op(text, &line, &col, &len) : NULL;
  char msg[512];
  MlirLocation loc;
  if (op) {
    loc = mlirLocationFileLineColGet(
        ctx, mlirStringRefCreateFromCString(filename), (unsigned)line,
        (unsigned)col);
    snprintf(msg, sizeof msg,
             "cannot parse '%.*s' in custom syntax (attn, tile and comm ops "
             "take MLIR's generic form: \"%.*s\"(...) {...} : (...) -> ...)",
             len, op, len, op);
  } else {
    loc = mlirLocationUnknownGet(ctx);
    snprintf(msg, sizeof msg,
             "cannot parse the input (attn, tile and comm ops take MLIR's "
             "generic form: \"attn.qk\"(%%q, %%k) : ...)");
  }
  mlirEmitError(loc, msg);
}

//===-- Remarks -----------------------------------------------------------===//

enum { MAX_REMARK_CONTEXTS = 16 };

// Contexts with a remark handler. Passes may run on several threads and in
// several contexts at once, so the table is guarded; remarks are rare.
static struct {
  void *ctx;
  attn_remark_fn fn;
  void *user;
} remark_slots[MAX_REMARK_CONTEXTS];
static mtx_t remark_mtx;
static once_flag remark_once = ONCE_FLAG_INIT;

static void init_remark_mtx(void) { mtx_init(&remark_mtx, mtx_plain); }

bool attn_remark_handler_attach(MlirContext ctx, attn_remark_fn fn,
                                void *user) {
  call_once(&remark_once, init_remark_mtx);
  mtx_lock(&remark_mtx);
  size_t at = MAX_REMARK_CONTEXTS;
  for (size_t i = 0; i < MAX_REMARK_CONTEXTS; ++i)
    if (remark_slots[i].ctx == ctx.ptr ||
        (!remark_slots[i].ctx && at == MAX_REMARK_CONTEXTS))
      at = i; // its own slot, else the first free one
  if (at < MAX_REMARK_CONTEXTS) {
    remark_slots[at].ctx = ctx.ptr;
    remark_slots[at].fn = fn;
    remark_slots[at].user = user;
  }
  mtx_unlock(&remark_mtx);
  return at < MAX_REMARK_CONTEXTS;
}

void attn_remark_handler_detach(MlirContext ctx) {
  call_once(&remark_once, init_remark_mtx);
  mtx_lock(&remark_mtx);
  for (size_t i = 0; i < MAX_REMARK_CONTEXTS; ++i)
    if (remark_slots[i].ctx == ctx.ptr)
      remark_slots[i].ctx = NULL;
  mtx_unlock(&remark_mtx);
}

void attn_emit_remarkf(MlirOperation op, const char *fmt, ...) {
  void *ctx = mlirOperationGetContext(op).ptr;
  attn_remark_fn fn = NULL;
  void *user = NULL;
  call_once(&remark_once, init_remark_mtx);
  mtx_lock(&remark_mtx);
  for (size_t i = 0; i < MAX_REMARK_CONTEXTS; ++i)
    if (remark_slots[i].ctx == ctx) {
      fn = remark_slots[i].fn;
      user = remark_slots[i].user;
    }
  mtx_unlock(&remark_mtx);
  if (!fn)
    return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fn(user, mlirOperationGetLocation(op), msg);
}
