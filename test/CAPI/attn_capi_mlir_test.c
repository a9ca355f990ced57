//===- attn_capi_mlir_test.c - libattn's attn_mlir.h entry points ---------===//
//
// RUN by test/CAPI/attn-mlir.test. A caller with its own MLIR context loads
// the attn dialects, parses a module and hands it to attn_compile_module.
//
//===----------------------------------------------------------------------===//
#include "attn/attn_mlir.h"

#include "mlir-c/RegisterEverything.h"

#include <stdio.h>
#include <string.h>

static void print_diag(void *user, int severity, const char *file, int line,
                       int col, const char *message) {
  if (severity != ATTN_SEVERITY_NOTE)
    printf("diag %d %s:%d:%d: %s\n", severity, file ? file : "-", line, col,
           message);
}

static const char program[] =
    "func.func @tiny(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>,\n"
    "                %v: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {\n"
    "  %s = \"attn.qk\"(%q, %k) : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>)"
    " -> tensor<1x1x4x4xf32>\n"
    "  %p = \"attn.softmax\"(%s) : (tensor<1x1x4x4xf32>) -> "
    "tensor<1x1x4x4xf32>\n"
    "  %o = \"attn.pv\"(%p, %v) : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>)"
    " -> tensor<1x1x4x8xf32>\n"
    "  return %o : tensor<1x1x4x8xf32>\n"
    "}\n";

int main(void) {
  printf("@test_compile_module\n");
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  MlirContext ctx = mlirContextCreateWithRegistry(registry, false);
  mlirDialectRegistryDestroy(registry);
  printf("register %s\n",
         attn_status_string(attn_mlir_register_dialects(ctx, print_diag, NULL)));
  MlirModule m = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(program));
  printf("parsed %d\n", !mlirModuleIsNull(m));
  attn_result *r = NULL;
  enum attn_status st = attn_compile_module(m, NULL, print_diag, NULL, &r);
  const char *ptx = attn_result_data(r, NULL);
  printf("compile %s\n", attn_status_string(st));
  printf("%s", ptx && strstr(ptx, ".visible .entry tiny(") ? ".visible .entry tiny(\n" : "");
  attn_result_destroy(r);
  // The caller's module is left alone: still attn-level.
  MlirOperation first = mlirBlockGetFirstOperation(
      mlirModuleGetBody(m));
  MlirOperation op = mlirBlockGetFirstOperation(
      mlirRegionGetFirstBlock(mlirOperationGetRegion(first, 0)));
  MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(op));
  printf("first op %.*s\n", (int)name.length, name.data);
  mlirModuleDestroy(m);

  printf("@test_compile_module_errors\n");
  printf("null %s\n", attn_status_string(attn_compile_module(
                          (MlirModule){NULL}, NULL, print_diag, NULL, &r)));
  printf("null ctx %s\n", attn_status_string(attn_mlir_register_dialects(
                              (MlirContext){NULL}, print_diag, NULL)));
  // Locations survive the trip through text.
  MlirModule bad = mlirModuleCreateParse(
      ctx, mlirStringRefCreateFromCString(
               "func.func @f(%q: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {\n"
               "  %r = \"attn.softmax\"(%q) : (tensor<1x1x4x8xf32>) -> "
               "tensor<1x1x4x8xf32>\n"
               "  return %r : tensor<1x1x4x8xf32>\n}\n"));
  struct attn_compile_options o;
  attn_compile_options_init(&o);
  o.target = "cpu";
  printf("not attention %s\n",
         attn_status_string(attn_compile_module(bad, &o, print_diag, NULL, &r)));
  mlirModuleDestroy(bad);
  mlirContextDestroy(ctx);
  return 0;
}
