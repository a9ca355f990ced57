//===- dialects.c - Loading attn's dialects, and their verifiers' walk ----===//
//
// attn_dialects_load (the IRDL of attn, tile and comm, embedded at build
// time or read from a file) and attn_dialects_verify (each op of a module
// through its dialect's C verifier: attn_verify.c, tile_dialect.c,
// comm_dialect.c). The readers and diagnostics the verifiers use are
// dialect_util.c's, which calls none of them.
//
//===----------------------------------------------------------------------===//
#include "dialects/dialects.h"

#include "mlir-c/Diagnostics.h"
#include "mlir-c/Dialect/IRDL.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char attn_attn_irdl_source[];
extern const char attn_tile_irdl_source[];
extern const char attn_comm_irdl_source[];

static bool load_irdl_text(MlirContext ctx, const char *text, const char *what) {
  MlirModule m = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(text));
  if (mlirModuleIsNull(m)) {
    attn_emit_error_atf(mlirLocationUnknownGet(ctx),
                        "cannot parse the IRDL of %s", what);
    return false;
  }
  bool ok = mlirLogicalResultIsSuccess(mlirLoadIRDLDialects(m));
  if (!ok)
    attn_emit_error_atf(mlirLocationUnknownGet(ctx),
                        "cannot load the IRDL dialects of %s", what);
  mlirModuleDestroy(m);
  return ok;
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  size_t n;
  while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (cap - len - 1 == 0) {
      char *grown = realloc(buf, cap *= 2);
      if (!grown) {
        free(buf);
        buf = NULL;
      }
      buf = grown;
    }
  }
  fclose(f);
  if (buf)
    buf[len] = '\0';
  return buf;
}

bool attn_dialects_load(MlirContext ctx, const char *irdl_override) {
  if (irdl_override) {
    char *text = read_file(irdl_override);
    if (!text)
      return attn_emit_error_atf(mlirLocationUnknownGet(ctx),
                                 "cannot read IRDL file '%s'", irdl_override);
    bool ok = load_irdl_text(ctx, text, irdl_override);
    free(text);
    return ok;
  }
  return load_irdl_text(ctx, attn_attn_irdl_source, "attn") &&
         load_irdl_text(ctx, attn_tile_irdl_source, "tile") &&
         load_irdl_text(ctx, attn_comm_irdl_source, "comm");
}

static MlirWalkResult verify_one(MlirOperation op, void *user) {
  bool *ok = user;
  MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(op));
  *ok &= attn_comm_verify_topology(op);
  if (attn_str_eq(name, "func.func"))
    *ok &= attn_tile_verify_matmul_kernel(op);
  if (name.length > 5 && strncmp(name.data, "attn.", 5) == 0)
    *ok &= attn_attn_verify_op(op);
  else if (name.length > 5 && strncmp(name.data, "tile.", 5) == 0)
    *ok &= attn_tile_verify_op(op);
  else if (name.length > 5 && strncmp(name.data, "comm.", 5) == 0)
    *ok &= attn_comm_verify_op(op);
  return MlirWalkResultAdvance;
}

bool attn_dialects_verify(MlirOperation root) {
  bool ok = true;
  mlirOperationWalk(root, verify_one, &ok, MlirWalkPreOrder);
  return ok;
}
