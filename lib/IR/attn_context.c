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

//===-- Nesting depth -----------------------------------------------------===//

/// True when c can end an operand of an expression (a name, a number, a
/// closing bracket), so that an operator after it is binary.
static bool ends_operand(char c) {
  return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.' ||
         c == ')' || c == ']';
}

static bool is_operator_char(char c) { return c == '+' || c == '-' || c == '*'; }

/// The scanner's state: the open brackets, and per level the operators
/// chained in it so far (MLIR's affine parser recurses once per operator).
struct nesting {
  char open[ATTN_MAX_NESTING + 2];
  int chained[ATTN_MAX_NESTING + 2];
  int depth; // open brackets
  int total; // depth + every level's chained operators
};

/// Forgets the operators chained at the current level: a separator ends
/// the expression.
static void end_chain(struct nesting *n) {
  n->total -= n->chained[n->depth];
  n->chained[n->depth] = 0;
}

/// Closes levels down to (and with) the innermost opener of c; a closer
/// without one is left to the parser.
static void close_level(struct nesting *n, char opener) {
  int at = n->depth;
  while (at > 0 && n->open[at] != opener)
    --at;
  for (; at > 0 && n->depth >= at; --n->depth)
    n->total -= 1 + n->chained[n->depth];
}

/// True for the affine operators spelled as words.
static bool is_operator_word(const char *s, size_t n) {
  return (n == 8 && !strncmp(s, "floordiv", 8)) ||
         (n == 7 && !strncmp(s, "ceildiv", 7)) ||
         (n == 3 && !strncmp(s, "mod", 3));
}

/// True when the word [w, we) is `array` opening a dense array of index
/// (`array<index`, blanks allowed), which MLIR 22's parseDenseArrayAttr
/// takes for an integer or float and crashes on (getIntOrFloatBitWidth of
/// index; found by attn-fuzz-parse).
static bool dense_array_of_index(const char *w, const char *we,
                                 const char *end) {
  if (we - w != 5 || strncmp(w, "array", 5))
    return false;
  const char *s = we;
  while (s < end && isspace((unsigned char)*s))
    ++s;
  if (s >= end || *s != '<')
    return false;
  for (++s; s < end && isspace((unsigned char)*s); ++s)
    ;
  return end - s >= 5 && !strncmp(s, "index", 5) &&
         (end - s == 5 || !is_name_char(s[5]));
}

bool attn_check_nesting(MlirContext ctx, const char *text, size_t len,
                        const char *filename) {
  if (!text)
    return true;
  const char *end = text + (len ? len : strlen(text));
  struct nesting n = {.depth = 0, .total = 0};
  int line = 1;
  const char *bol = text, *stop = NULL, *index_array = NULL;
  char last = '\n'; // last character outside blanks, comments and strings
  for (const char *s = text; s < end && !stop; ++s) {
    char c = *s;
    if (c == '\n') {
      ++line;
      bol = s + 1;
      continue;
    }
    if (isspace((unsigned char)c))
      continue;
    if (c == '"') {
      while (++s < end && *s != '"' && *s != '\n')
        s += *s == '\\' && s + 1 < end && s[1] != '\n';
      if (s < end && *s == '\n')
        --s;
      end_chain(&n);
      last = '"';
      continue;
    }
    if (c == '/' && s + 1 < end && s[1] == '/') {
      while (s + 1 < end && s[1] != '\n')
        ++s;
      continue;
    }
    const char *tok = s;
    char next = s + 1 < end ? s[1] : '\0';
    bool chains = false; // an operator that chains onto an expression
    if (c == '(' || c == '[' || c == '{' || c == '<') {
      n.open[++n.depth] = c;
      n.chained[n.depth] = 0;
      if (++n.total > ATTN_MAX_NESTING)
        stop = s;
    } else if (c == ')' || c == ']' || c == '}') {
      close_level(&n, c == ')' ? '(' : c == ']' ? '[' : '{');
    } else if (c == '>') {
      if (next == '=') // `>=` of an integer set
        ++s;
      else if (n.depth > 0 && n.open[n.depth] == '<')
        close_level(&n, '<');
    } else if (c == '-' && next == '>') { // `->`
      end_chain(&n);
      ++s;
    } else if (c == ',' || c == ':' || c == '=' || c == ';') {
      end_chain(&n);
    } else if (is_operator_char(c)) {
      // Binary after an operand, or one more of a unary chain (`- - d0`);
      // not the sign of an exponent (`1.0e+05`) or of a number (`[-1`).
      bool exponent = (c == '+' || c == '-') && s - text >= 2 &&
                      (s[-1] == 'e' || s[-1] == 'E') &&
                      (isdigit((unsigned char)s[-2]) || s[-2] == '.');
      chains = !exponent && (ends_operand(last) || is_operator_char(last));
    } else if (isalpha((unsigned char)c) &&
               (s == text || !(is_name_char(s[-1]) || strchr("%@#!^", s[-1])))) {
      const char *w = s;
      while (w < end && is_name_char(*w))
        ++w;
      chains = is_operator_word(s, (size_t)(w - s)) && ends_operand(last);
      if (!index_array && dense_array_of_index(s, w, end))
        index_array = stop = s;
      s = w - 1;
      c = chains ? '+' : *s; // after an operator word, as after '+'
    }
    if (chains) {
      n.chained[n.depth]++;
      if (++n.total > ATTN_MAX_NESTING)
        stop = tok;
    }
    last = c;
  }
  if (!stop)
    return true;
  char msg[256];
  if (index_array)
    snprintf(msg, sizeof msg,
             "a dense array of index (array<index: ...>) is not accepted: "
             "MLIR 22's parser crashes on it; use array<i64: ...>");
  else
    snprintf(msg, sizeof msg,
             "%s nests deeper than %d levels (each open bracket, brace, "
             "parenthesis, '<' and chained operator counts one); MLIR's "
             "recursive parser would overflow its stack",
             strchr("([{<", *stop) ? "input" : "expression", ATTN_MAX_NESTING);
  MlirLocation loc = mlirLocationFileLineColGet(
      ctx, mlirStringRefCreateFromCString(filename ? filename : "<input>"),
      (unsigned)line, (unsigned)(stop - bol) + 1);
  mlirEmitError(loc, msg);
  return false;
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
