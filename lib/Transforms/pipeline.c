//===- pipeline.c - Parses --pass-pipeline text mixing attn and MLIR passes -===//
#include "lib/Transforms/transforms.h"

#include "dialects/dialects.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool attn_pipeline_run(MlirOperation module, const char *pipeline) {
  MlirPassManager pm = mlirPassManagerCreate(mlirOperationGetContext(module));
  char err[1024];
  bool ok = attn_pipeline_add(pm, pipeline, err, sizeof err);
  if (!ok)
    attn_emit_errorf(module, "%s", err);
  else
    ok = mlirLogicalResultIsSuccess(mlirPassManagerRunOnOp(pm, module));
  mlirPassManagerDestroy(pm);
  return ok;
}

// bf16 arithmetic runs in f32, and the bf16 conversions become integer
// arithmetic before LLVM sees them: an x86-64 without AVX512-BF16 lowers an
// f32 -> bf16 truncation to a libcall (__truncsfbf2) that not every libgcc
// has (attn_jit.h also resolves it, and the f16 ones, for what reaches LLVM).
// Math ops without an LLVM intrinsic (math.erf of a score_mod body) become
// calls of libm (erff), which the JIT resolves in the process.
const char attn_cpu_to_llvm_pipeline[] =
    "arith-emulate-unsupported-floats{source-types=bf16 target-type=f32},"
    "arith-expand{include-bf16=true},"
    "convert-scf-to-cf,convert-math-to-llvm,convert-math-to-libm,"
    "convert-arith-to-llvm,"
    "expand-strided-metadata,finalize-memref-to-llvm,"
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1},"
    "convert-cf-to-llvm,reconcile-unrealized-casts";

/// Returns the end of the element starting at s: the first ',' (or NUL or an
/// unmatched ')') outside braces, parentheses and quotes.
static const char *element_end(const char *s) {
  int depth = 0;
  bool quoted = false;
  for (; *s; ++s) {
    if (quoted) {
      quoted = *s != '"';
      continue;
    }
    if (*s == '"')
      quoted = true;
    else if (*s == '(' || *s == '{')
      ++depth;
    else if (*s == ')' || *s == '}') {
      if (depth == 0)
        return s;
      --depth;
    } else if (*s == ',' && depth == 0)
      return s;
  }
  return s;
}

static const char *skip_space(const char *s, const char *end) {
  while (s < end && isspace((unsigned char)*s))
    ++s;
  return s;
}

static const char *trim_end(const char *s, const char *end) {
  while (end > s && isspace((unsigned char)end[-1]))
    --end;
  return end;
}

/// True when an attn pass name occurs as a word in [s, end).
static bool mentions_attn_pass(const char *s, const char *end,
                               const char **which, size_t *len) {
  // Only words in pass position count: right after '(' or ',' and outside
  // option braces and quotes, so option values such as `=tile` do not.
  int braces = 0;
  bool quoted = false, pass_pos = false;
  for (; s < end; ++s) {
    if (quoted) {
      quoted = *s != '"';
      continue;
    }
    if (*s == '"')
      quoted = true;
    else if (*s == '{')
      ++braces;
    else if (*s == '}')
      --braces;
    else if (braces == 0 && (*s == '(' || *s == ','))
      pass_pos = true;
    else if (pass_pos && !isspace((unsigned char)*s)) {
      const char *w = s;
      while (s < end && (isalnum((unsigned char)*s) || *s == '-' || *s == '_'))
        ++s;
      if (s > w && attn_pass_lookup(w, (size_t)(s - w))) {
        *which = w;
        *len = (size_t)(s - w);
        return true;
      }
      pass_pos = false;
      --s;
    }
  }
  return false;
}

struct err_sink {
  char *buf;
  size_t len, used;
};

static void collect_error(MlirStringRef msg, void *user) {
  struct err_sink *e = user;
  if (e->used + 1 >= e->len)
    return;
  int n = snprintf(e->buf + e->used, e->len - e->used, "%.*s",
                   (int)msg.length, msg.data);
  if (n > 0)
    e->used += (size_t)n < e->len - e->used ? (size_t)n : e->len - e->used - 1;
}

/// True for the caret line under MLIR's echo of the pipeline text.
static bool is_caret_line(const char *s, const char *end) {
  s = skip_space(s, end);
  return s < end && *s == '^' && skip_space(s + 1, end) == end;
}

/// Rewrites the multi-line text MLIR's pipeline parser wrote into err as one
/// line: drops the `MLIR Textual PassPipeline Parser:L:C: error: ` and
/// `<Pass-Options-Parser>: ` prefixes and the echoed text with its caret,
/// and joins what is left with "; ". Names the pass when nothing is left.
static void tidy_error(char *err, size_t errlen, const char *name,
                       size_t name_len) {
  static const char parser[] = "MLIR Textual PassPipeline Parser:";
  static const char options[] = "<Pass-Options-Parser>: ";
  char in[1024];
  snprintf(in, sizeof in, "%s", err);
  size_t out = 0;
  for (const char *line = in, *next; *line && out + 1 < errlen; line = next) {
    const char *nl = strchr(line, '\n');
    const char *end = nl ? nl : line + strlen(line);
    next = nl ? nl + 1 : end;
    const char *after_end = strchr(next, '\n');
    if (is_caret_line(next, after_end ? after_end : next + strlen(next)))
      continue; // the echoed pipeline text; its caret line follows
    end = trim_end(line, end);
    line = skip_space(line, end);
    if (!strncmp(line, parser, sizeof parser - 1)) {
      const char *e = strstr(line, "error: ");
      line = e && e < end ? e + 7 : end;
    } else if (!strncmp(line, options, sizeof options - 1)) {
      line += sizeof options - 1;
    }
    if (line == end || is_caret_line(line, end))
      continue;
    int n = snprintf(err + out, errlen - out, "%s%.*s", out ? "; " : "",
                     (int)(end - line), line);
    if (n > 0)
      out += (size_t)n < errlen - out ? (size_t)n : errlen - out - 1;
  }
  if (!out)
    snprintf(err, errlen, "cannot add pass '%.*s'", (int)name_len, name);
}

static bool add_element(MlirPassManager pm, const char *s, const char *end,
                        char *err, size_t errlen) {
  const char *name_end = s;
  while (name_end < end && *name_end != '{' && *name_end != '(' &&
         !isspace((unsigned char)*name_end))
    ++name_end;
  size_t name_len = (size_t)(name_end - s);
  const struct attn_pass_def *def = attn_pass_lookup(s, name_len);
  const char *rest = skip_space(name_end, end);
  if (def) {
    char opts[512] = "";
    if (rest < end && *rest == '{') {
      const char *close = trim_end(rest, end);
      if (close[-1] != '}') {
        snprintf(err, errlen, "unbalanced '{' in options of '%s'",
                 def->argument);
        return false;
      }
      snprintf(opts, sizeof opts, "%.*s", (int)(close - rest - 2), rest + 1);
    } else if (rest < end) {
      snprintf(err, errlen, "unexpected '%.*s' after pass '%s'",
               (int)(end - rest), rest, def->argument);
      return false;
    }
    MlirPass pass = attn_pass_create(def, opts, err, errlen);
    if (!pass.ptr)
      return false;
    mlirPassManagerAddOwnedPass(pm, pass);
    return true;
  }
  const char *which;
  size_t wlen;
  if (mentions_attn_pass(name_end, end, &which, &wlen)) {
    snprintf(err, errlen,
             "attn pass '%.*s' runs on builtin.module and cannot be nested "
             "under '%.*s'",
             (int)wlen, which, (int)name_len, s);
    return false;
  }
  char *text = strndup(s, (size_t)(end - s));
  if (!text) {
    snprintf(err, errlen, "out of memory");
    return false;
  }
  struct err_sink sink = {err, errlen, 0};
  if (errlen)
    err[0] = '\0';
  MlirLogicalResult r = mlirOpPassManagerAddPipeline(
      mlirPassManagerGetAsOpPassManager(pm),
      mlirStringRefCreateFromCString(text), collect_error, &sink);
  free(text);
  if (mlirLogicalResultIsFailure(r) && errlen)
    tidy_error(err, errlen, s, name_len);
  return mlirLogicalResultIsSuccess(r);
}

bool attn_pipeline_add(MlirPassManager pm, const char *pipeline, char *err,
                       size_t errlen) {
  const char *s = pipeline, *end = pipeline + strlen(pipeline);
  s = skip_space(s, end);
  end = trim_end(s, end);
  static const char anchor[] = "builtin.module";
  if ((size_t)(end - s) > sizeof anchor &&
      !strncmp(s, anchor, sizeof anchor - 1)) {
    const char *open = skip_space(s + sizeof anchor - 1, end);
    if (*open != '(' || end[-1] != ')') {
      snprintf(err, errlen, "expected 'builtin.module(...)'");
      return false;
    }
    s = open + 1;
    --end;
  }
  while (s < end) {
    s = skip_space(s, end);
    const char *e = element_end(s);
    if (e > end)
      e = end;
    if ((*e == ')' || *e == '}') && e < end) {
      snprintf(err, errlen, "unbalanced '%c' in pass pipeline", *e);
      return false;
    }
    const char *te = trim_end(s, e);
    if (te == s) {
      snprintf(err, errlen, "empty pass name in pipeline");
      return false;
    }
    if (!add_element(pm, s, te, err, errlen))
      return false;
    s = e < end ? e + 1 : e;
    if (e < end && skip_space(s, end) == end) {
      snprintf(err, errlen, "empty pass name in pipeline");
      return false;
    }
  }
  return true;
}
