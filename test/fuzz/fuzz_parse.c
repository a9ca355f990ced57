//===- fuzz_parse.c - attn-fuzz-parse: bytes through parse and lowering ---===//
//
// libFuzzer target: the input is MLIR text. It goes through the guarded
// entry the tools use (attn_tool_parse_module: attn_check_nesting, then
// MLIR's parser), the verifiers attn-opt runs (mlirOperationVerify and
// attn_dialects_verify), then, on a copy each, the pipelines
// attn-fuse -> attn-tile -> lower-tile-to-cpu and -> lower-tile-to-gpu.
// Errors are expected and swallowed; only crashes, hangs, leaks and
// sanitizer reports count. One MLIR context serves every input.
//
//===----------------------------------------------------------------------===//
#include "dialects/dialects.h"
#include "lib/IR/attn_context.h"
#include "lib/Transforms/transforms.h"
#include "tools/common/tool_util.h"

#include "mlir-c/Diagnostics.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static MlirContext ctx;
static MlirPassManager pms[2];
static const char *const pipelines[2] = {
    "builtin.module(attn-fuse,attn-tile,lower-tile-to-cpu)",
    "builtin.module(attn-fuse,attn-tile,lower-tile-to-gpu)",
};

/// Drops every diagnostic: bad input is expected to produce them.
static MlirLogicalResult drop_diag(MlirDiagnostic d, void *user) {
  (void)d;
  (void)user;
  return mlirLogicalResultSuccess();
}

static void drop_remark(void *user, MlirLocation loc, const char *msg) {
  (void)user;
  (void)loc;
  (void)msg;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  ctx = attn_context_create();
  // One thread: the passes then run in the same order on every run, so a
  // run with a fixed seed takes the same inputs every time (the CI step).
  mlirContextEnableMultithreading(ctx, false);
  mlirContextAttachDiagnosticHandler(ctx, drop_diag, NULL, NULL);
  attn_remark_handler_attach(ctx, drop_remark, NULL);
  if (!attn_register_all(ctx, NULL)) {
    fprintf(stderr, "attn-fuzz-parse: cannot load the attn dialects\n");
    abort();
  }
  for (int i = 0; i < 2; ++i) {
    char err[1024];
    pms[i] = mlirPassManagerCreate(ctx);
    if (!attn_pipeline_add(pms[i], pipelines[i], err, sizeof err)) {
      fprintf(stderr, "attn-fuzz-parse: %s\n", err);
      abort();
    }
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text)
    return 0;
  memcpy(text, data, size);
  text[size] = '\0'; // an embedded NUL ends the text, as for the tools
  MlirOperation module = attn_tool_parse_module(ctx, text, "fuzz.mlir");
  free(text);
  if (mlirOperationIsNull(module))
    return 0;
  if (mlirOperationVerify(module) && attn_dialects_verify(module)) {
    for (int i = 0; i < 2; ++i) {
      MlirOperation copy = mlirOperationClone(module);
      (void)mlirPassManagerRunOnOp(pms[i], copy);
      mlirOperationDestroy(copy);
    }
  }
  mlirOperationDestroy(module);
  return 0;
}
