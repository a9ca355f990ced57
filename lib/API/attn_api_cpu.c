//===- attn_api_cpu.c - libattn: JIT-compiled CPU kernels, MLIR handles ---===//
//
// attn_cpu_kernel_*: the CPU lowering of attn_compile, JIT-compiled by MLIR's
// ExecutionEngine (as attn-run does), so that the Python binding can run
// attention on CPU tensors. Also the entry points of attn_mlir.h.
//
//===----------------------------------------------------------------------===//
#include "lib/API/attn_api_internal.h"

#include "attn/attn_mlir.h"
#include "dialects/dialects.h"
#include "lib/IR/attn_context.h"
#include "lib/Target/attn_jit.h"


#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/// One entry point: the packed wrapper `_mlir_<name>(void **args)` the
/// ExecutionEngine makes for the bare-pointer function.
struct cpu_entry {
  char *name;
  size_t nparams;
  attn_jit_entry_fn fn;
};

struct attn_cpu_kernel {
  struct attn_jit *jit;
  char *manifest;
  size_t nentries;
  struct cpu_entry *entries;
};

enum { MAX_PARAMS = 128 };

/// Reads the kernels of the manifest into k and looks up their entries.
static enum attn_status bind_entries(struct attn_session *s,
                                     struct attn_cpu_kernel *k) {
  cJSON *root = cJSON_Parse(k->manifest);
  cJSON *kernels = root ? cJSON_GetObjectItemCaseSensitive(root, "kernels")
                        : NULL;
  enum attn_status st = ATTN_OK;
  int n = cJSON_IsArray(kernels) ? cJSON_GetArraySize(kernels) : -1;
  if (n <= 0) {
    st = attn_session_fail(s, ATTN_ERR_COMPILE,
                           "the program has no kernel to run");
    goto out;
  }
  k->entries = calloc((size_t)n, sizeof *k->entries);
  if (!k->entries) {
    st = attn_session_fail(s, ATTN_ERR_OUT_OF_MEMORY, "out of memory");
    goto out;
  }
  for (int i = 0; i < n; ++i) {
    cJSON *kj = cJSON_GetArrayItem(kernels, i);
    cJSON *name = cJSON_GetObjectItemCaseSensitive(kj, "name");
    cJSON *params = cJSON_GetObjectItemCaseSensitive(kj, "params");
    if (!cJSON_IsString(name) || !cJSON_IsArray(params) ||
        cJSON_GetArraySize(params) > MAX_PARAMS) {
      st = attn_session_fail(s, ATTN_ERR_COMPILE,
                             "malformed manifest: kernel %d", i);
      goto out;
    }
    struct cpu_entry *e = &k->entries[k->nentries];
    e->name = malloc(strlen(name->valuestring) + 1);
    if (!e->name) {
      st = attn_session_fail(s, ATTN_ERR_OUT_OF_MEMORY, "out of memory");
      goto out;
    }
    strcpy(e->name, name->valuestring);
    e->nparams = (size_t)cJSON_GetArraySize(params);
    ++k->nentries;
    e->fn = attn_jit_lookup(k->jit, e->name);
    if (!e->fn) { // the JIT's reason is the session's error already
      st = attn_session_fail(s, ATTN_ERR_COMPILE,
                             "kernel '%s' did not compile for the CPU",
                             e->name);
      goto out;
    }
  }
out:
  cJSON_Delete(root);
  return st;
}

ATTN_API enum attn_status
attn_cpu_kernel_create(const char *ir, size_t len,
                       const struct attn_compile_options *opts,
                       attn_diag_fn diag, void *user, attn_cpu_kernel **out) {
  struct attn_session s;
  if (out)
    *out = NULL;
  struct attn_compile_options o;
  attn_compile_options_init(&o);
  if (opts)
    o = *opts;
  if (!ir || !out || (o.target && strcmp(o.target, "cpu"))) {
    memset(&s, 0, sizeof s);
    s.diag = diag;
    s.user = user;
    return attn_session_fail(&s, ATTN_ERR_INVALID_ARGUMENT,
                             !ir    ? "attn_cpu_kernel_create: ir is NULL"
                             : !out ? "attn_cpu_kernel_create: out is NULL"
                                    : "attn_cpu_kernel_create needs target "
                                      "cpu, not '%s'",
                             o.target);
  }
  if (len == 0)
    len = strlen(ir);
  o.target = "cpu";
  o.format = ATTN_OUTPUT_LLVM_MLIR;
  enum attn_status st = attn_session_begin(&s, &o, diag, user);
  struct attn_cpu_kernel *k = NULL;
  MlirOperation module = {NULL};
  if (st == ATTN_OK) {
    k = calloc(1, sizeof *k);
    st = k ? attn_session_lower_cpu(&s, ir, len, &module, &k->manifest)
           : attn_session_fail(&s, ATTN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  if (st == ATTN_OK) {
    k->jit = attn_jit_create(module);
    st = !k->jit ? attn_session_fail(&s, ATTN_ERR_COMPILE,
                                     "the program did not compile for the CPU")
                 : bind_entries(&s, k);
  }
  // The engine keeps its own LLVM module: the MLIR one and its context can go.
  if (!mlirOperationIsNull(module))
    mlirOperationDestroy(module);
  attn_session_end(&s);
  if (st != ATTN_OK) {
    attn_cpu_kernel_destroy(k);
    return st;
  }
  *out = k;
  return ATTN_OK;
}

ATTN_API enum attn_status attn_cpu_kernel_run(attn_cpu_kernel *k,
                                              const char *name,
                                              void *const *buffers, size_t n) {
  if (!k) {
    attn_set_last_error("error: attn_cpu_kernel_run: kernel is NULL");
    return ATTN_ERR_INVALID_ARGUMENT;
  }
  struct cpu_entry *e = NULL;
  if (!name) {
    if (k->nentries != 1) {
      attn_set_last_error("error: the program has %zu kernels: name one",
                          k->nentries);
      return ATTN_ERR_INVALID_ARGUMENT;
    }
    e = &k->entries[0];
  }
  for (size_t i = 0; !e && i < k->nentries; ++i)
    if (!strcmp(k->entries[i].name, name))
      e = &k->entries[i];
  if (!e) {
    attn_set_last_error("error: no kernel named '%s'", name);
    return ATTN_ERR_NOT_FOUND;
  }
  if (n != e->nparams) {
    attn_set_last_error("error: kernel '%s' takes %zu buffers, got %zu",
                        e->name, e->nparams, n);
    return ATTN_ERR_INVALID_ARGUMENT;
  }
  void *ptrs[MAX_PARAMS], *args[MAX_PARAMS];
  for (size_t i = 0; i < n; ++i) {
    if (!buffers[i]) {
      attn_set_last_error("error: buffer %zu of kernel '%s' is NULL", i,
                          e->name);
      return ATTN_ERR_INVALID_ARGUMENT;
    }
    ptrs[i] = buffers[i];
    args[i] = &ptrs[i];
  }
  e->fn(args);
  return ATTN_OK;
}

ATTN_API const char *attn_cpu_kernel_manifest(const attn_cpu_kernel *k) {
  return k ? k->manifest : NULL;
}

ATTN_API void attn_cpu_kernel_destroy(attn_cpu_kernel *k) {
  if (!k)
    return;
  attn_jit_destroy(k->jit);
  for (size_t i = 0; i < k->nentries; ++i)
    free(k->entries[i].name);
  free(k->entries);
  free(k->manifest);
  free(k);
}

//===-- attn_mlir.h -------------------------------------------------------===//

static void fail_plain(attn_diag_fn diag, void *user, const char *msg) {
  attn_set_last_error("error: %s", msg);
  if (diag)
    diag(user, ATTN_SEVERITY_ERROR, NULL, 0, 0, msg);
}

struct mlir_diag_state {
  attn_diag_fn diag;
  void *user;
};

static MlirLogicalResult mlir_diag(MlirDiagnostic d, void *user) {
  struct mlir_diag_state *ds = user;
  struct attn_strbuf msg = {0};
  mlirDiagnosticPrint(d, attn_strbuf_append, &msg);
  MlirStringRef file = {NULL, 0};
  int line = 0, col = 0;
  char name[512];
  bool located = attn_location_file_line(mlirDiagnosticGetLocation(d), &file,
                                         &line, &col);
  snprintf(name, sizeof name, "%.*s", (int)file.length, file.data);
  if (mlirDiagnosticGetSeverity(d) == MlirDiagnosticError)
    fail_plain(NULL, NULL, msg.buf ? msg.buf : "");
  if (ds->diag)
    ds->diag(ds->user, (int)mlirDiagnosticGetSeverity(d),
             located ? name : NULL, line, col, msg.buf ? msg.buf : "");
  attn_strbuf_free(&msg);
  return mlirLogicalResultSuccess();
}

ATTN_API enum attn_status attn_mlir_register_dialects(MlirContext ctx,
                                                      attn_diag_fn diag,
                                                      void *user) {
  if (mlirContextIsNull(ctx)) {
    fail_plain(diag, user, "attn_mlir_register_dialects: context is null");
    return ATTN_ERR_INVALID_ARGUMENT;
  }
  struct mlir_diag_state ds = {diag, user};
  MlirDiagnosticHandlerID id =
      mlirContextAttachDiagnosticHandler(ctx, mlir_diag, &ds, NULL);
  bool ok = attn_register_all(ctx, NULL);
  mlirContextDetachDiagnosticHandler(ctx, id);
  return ok ? ATTN_OK : ATTN_ERR_COMPILE;
}

ATTN_API enum attn_status
attn_compile_module(MlirModule module, const struct attn_compile_options *opts,
                    attn_diag_fn diag, void *user, attn_result **out) {
  if (out)
    *out = NULL;
  if (mlirModuleIsNull(module)) {
    fail_plain(diag, user, "attn_compile_module: module is null");
    return ATTN_ERR_INVALID_ARGUMENT;
  }
  // Generic form with locations: the text parses in any context that has
  // the dialects, and diagnostics keep pointing at the caller's source.
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  mlirOpPrintingFlagsEnableDebugInfo(flags, true, false);
  mlirOpPrintingFlagsPrintGenericOpForm(flags);
  struct attn_strbuf b = {0};
  mlirOperationPrintWithFlags(mlirModuleGetOperation(module), flags,
                              attn_strbuf_append, &b);
  mlirOpPrintingFlagsDestroy(flags);
  enum attn_status st;
  if (b.failed || !b.buf) {
    fail_plain(diag, user, "out of memory");
    st = ATTN_ERR_OUT_OF_MEMORY;
  } else {
    st = attn_compile(b.buf, b.len, opts, diag, user, out);
  }
  attn_strbuf_free(&b);
  return st;
}
