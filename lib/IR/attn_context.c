//===- attn_context.c - Context set-up and the tools' diagnostic handler --===//
#include "lib/IR/attn_context.h"
#include "dialects/dialects.h"

#include "mlir-c/Diagnostics.h"
#include "mlir-c/RegisterEverything.h"

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
