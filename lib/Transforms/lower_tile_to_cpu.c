//===- lower_tile_to_cpu.c - lower-tile-to-cpu: tile kernels as CPU loops -===//
//
// A tile kernel @k becomes two functions:
//
//   func.func private @k__cta(<args>, %x: index, %y: index, %z: index)
//       -- one CTA: tile.program_id reads %x/%y/%z, tiles live on the stack
//          (memref.alloca), tile ops are loops run by one thread
//   func.func @k(<args>) -- loops over the grid and calls @k__cta
//
// The result is plain func/scf/arith/memref/math; the upstream passes in
// attn_cpu_to_llvm_pipeline take it to the LLVM dialect, and MLIR's
// ExecutionEngine runs it with bare pointers as arguments (the GPU ABI).
// This is how numerics are checked without a GPU.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/tile/tile_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// Writes the grid-loop entry function that calls name__cta.
static void emit_entry(struct attn_strbuf *b, const char *name,
                       MlirOperation kernel,
                       const struct attn_tile_launch *launch) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(kernel, 0));
  intptr_t n = mlirBlockGetNumArguments(body);
  struct attn_strbuf types = {0};
  for (intptr_t i = 0; i < n; ++i) {
    attn_strbuf_printf(&types, "%s", i ? ", " : "");
    attn_strbuf_type(&types, mlirValueGetType(mlirBlockGetArgument(body, i)));
  }
  // A declaration of the CTA function lets the call verify; only the entry
  // function is kept.
  attn_strbuf_printf(b,
                     "module {\nfunc.func private @%s__cta(%s, index, index, "
                     "index)\nfunc.func @%s(",
                     name, types.buf ? types.buf : "", name);
  for (intptr_t i = 0; i < n; ++i) {
    MlirType t = mlirValueGetType(mlirBlockGetArgument(body, i));
    attn_strbuf_printf(b, "%s%%a%ld: ", i ? ", " : "", (long)i);
    attn_strbuf_type(b, t);
  }
  attn_strbuf_printf(b,
                     ") {\n"
                     "  %%c0 = arith.constant 0 : index\n"
                     "  %%c1 = arith.constant 1 : index\n"
                     "  %%gx = arith.constant %lld : index\n"
                     "  %%gy = arith.constant %lld : index\n"
                     "  %%gz = arith.constant %lld : index\n"
                     "  scf.for %%z = %%c0 to %%gz step %%c1 {\n"
                     "  scf.for %%y = %%c0 to %%gy step %%c1 {\n"
                     "  scf.for %%x = %%c0 to %%gx step %%c1 {\n"
                     "  func.call @%s__cta(",
                     (long long)launch->grid[0], (long long)launch->grid[1],
                     (long long)launch->grid[2], name);
  for (intptr_t i = 0; i < n; ++i)
    attn_strbuf_printf(b, "%%a%ld, ", (long)i);
  attn_strbuf_printf(b, "%%x, %%y, %%z) : (%s, index, index, index) -> ()\n"
                        "  }\n  }\n  }\n  return\n}\n}\n",
                     types.buf ? types.buf : "");
  if (types.failed)
    b->failed = true;
  attn_strbuf_free(&types);
}

/// Turns the kernel into name__cta taking the CTA's grid position.
static void make_cta_function(MlirOperation kernel, const char *name) {
  MlirContext ctx = mlirOperationGetContext(kernel);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(kernel, 0));
  MlirType index = mlirIndexTypeGet(ctx);
  MlirLocation loc = mlirOperationGetLocation(kernel);
  MlirValue ids[3];
  for (int i = 0; i < 3; ++i)
    ids[i] = mlirBlockAddArgument(body, index, loc);
  attn_tile_replace_program_ids(kernel, ids);
  intptr_t n = mlirBlockGetNumArguments(body);
  MlirType inputs[n];
  for (intptr_t i = 0; i < n; ++i)
    inputs[i] = mlirValueGetType(mlirBlockGetArgument(body, i));
  MlirType fty = mlirFunctionTypeGet(ctx, n, inputs, 0, NULL);
  char cta[300];
  snprintf(cta, sizeof cta, "%s__cta", name);
  mlirOperationSetAttributeByName(kernel,
                                  mlirStringRefCreateFromCString("function_type"),
                                  mlirTypeAttrGet(fty));
  mlirOperationSetAttributeByName(
      kernel, mlirStringRefCreateFromCString("sym_name"),
      mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(cta)));
  mlirOperationSetAttributeByName(
      kernel, mlirStringRefCreateFromCString("sym_visibility"),
      mlirStringAttrGet(ctx, mlirStringRefCreateFromCString("private")));
  static const char *tile_attrs[] = {
      ATTN_TILE_KERNEL_ATTR,    ATTN_TILE_GRID_ATTR, ATTN_TILE_THREADS_ATTR,
      ATTN_TILE_ARG_NAMES_ATTR, "tile.attention",    ATTN_TILE_MATMUL_ATTR};
  for (size_t i = 0; i < sizeof tile_attrs / sizeof *tile_attrs; ++i)
    mlirOperationRemoveAttributeByName(
        kernel, mlirStringRefCreateFromCString(tile_attrs[i]));
}

/// Each tile.alloc becomes a memref.alloca of the same type. (Built op by
/// op: a lone alloca does not parse outside an allocation scope.)
static bool allocs_to_stack(MlirOperation kernel) {
  struct attn_op_list allocs = {0};
  attn_tile_collect_allocs(kernel, &allocs);
  bool ok = !allocs.failed;
  MlirContext ctx = mlirOperationGetContext(kernel);
  int32_t segments[2] = {0, 0};
  MlirNamedAttribute seg = mlirNamedAttributeGet(
      mlirIdentifierGet(ctx,
                        mlirStringRefCreateFromCString("operandSegmentSizes")),
      mlirDenseI32ArrayGet(ctx, 2, segments));
  for (size_t i = 0; ok && i < allocs.n; ++i) {
    MlirOperation alloc = allocs.ops[i];
    MlirOperationState st =
        mlirOperationStateGet(mlirStringRefCreateFromCString("memref.alloca"),
                              mlirOperationGetLocation(alloc));
    MlirType t = mlirValueGetType(mlirOperationGetResult(alloc, 0));
    mlirOperationStateAddResults(&st, 1, &t);
    mlirOperationStateAddAttributes(&st, 1, &seg);
    MlirOperation a = mlirOperationCreate(&st);
    mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(alloc), alloc, a);
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(alloc, 0),
                                  mlirOperationGetResult(a, 0));
    mlirOperationDestroy(alloc);
  }
  free(allocs.ops);
  return ok;
}

static bool lower_kernel(MlirOperation kernel) {
  if (attn_tile_matmul_is_fused(kernel))
    return attn_tile_reject_fused(kernel, "lower-tile-to-cpu");
  struct attn_tile_launch launch;
  MlirStringRef sym;
  if (!attn_tile_get_launch(kernel, &launch) ||
      !attn_attr_str(kernel, "sym_name", &sym))
    return false;
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)sym.length, sym.data);
  struct attn_strbuf text = {0};
  emit_entry(&text, name, kernel, &launch);
  MlirOperation wrapper =
      text.failed ? (MlirOperation){NULL}
                  : attn_parse_op(mlirOperationGetContext(kernel), text.buf,
                                  "lower-tile-to-cpu");
  attn_strbuf_free(&text);
  if (mlirOperationIsNull(wrapper))
    return attn_emit_errorf(kernel, "cannot build the CPU entry of '%s'", name);
  MlirBlock wb = mlirRegionGetFirstBlock(mlirOperationGetRegion(wrapper, 0));
  MlirOperation entry =
      mlirOperationGetNextInBlock(mlirBlockGetFirstOperation(wb));
  mlirOperationRemoveFromParent(entry);
  mlirOperationDestroy(wrapper);
  attn_set_locations(entry, mlirOperationGetLocation(kernel));
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(kernel), kernel,
                                      entry);
  make_cta_function(kernel, name);
  return allocs_to_stack(kernel) &&
         attn_tile_lower_compute_ops(kernel, ATTN_TILE_CPU);
}

static bool lower_tile_to_cpu_run(MlirOperation module, const void *opts) {
  struct attn_op_list funcs = {0};
  attn_op_list_collect(&funcs, module, "func.func");
  bool ok = !funcs.failed;
  for (size_t i = 0; ok && i < funcs.n; ++i)
    if (attn_tile_is_kernel(funcs.ops[i]))
      ok = lower_kernel(funcs.ops[i]);
  free(funcs.ops);
  return ok;
}

const struct attn_pass_def lower_tile_to_cpu_pass = {
    .argument = "lower-tile-to-cpu",
    .description = "Lower tile kernels to loops over the grid in "
                   "func/scf/memref/arith/math, runnable by the ExecutionEngine",
    .run = lower_tile_to_cpu_run,
};
