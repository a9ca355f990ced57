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

#include "lib/IR/attn_builder.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// Builds, before the kernel, the entry function name that loops over the
/// grid and calls name__cta; false after a diagnostic.
static bool build_entry(const char *name, MlirOperation kernel,
                        const struct attn_tile_launch *launch) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(kernel, 0));
  intptr_t n = mlirBlockGetNumArguments(body);
  if (n + 3 > ATTN_B_MAX_VALUES)
    return attn_emit_errorf(kernel, "'%s' has too many arguments for the CPU "
                                    "entry (%ld)",
                            name, (long)n);
  MlirType types[ATTN_B_MAX_VALUES];
  for (intptr_t i = 0; i < n; ++i)
    types[i] = mlirValueGetType(mlirBlockGetArgument(body, i));
  struct attn_builder b;
  attn_builder_init(&b, mlirOperationGetContext(kernel),
                    mlirOperationGetLocation(kernel));
  attn_builder_role(&b, "cpu.grid");
  attn_builder_before(&b, kernel);
  struct attn_b_func f;
  attn_b_func_open(&b, &f, name, n, types, 0, NULL, 0, NULL);
  MlirValue c0 = attn_b_index(&b, 0), c1 = attn_b_index(&b, 1);
  MlirValue grid[3];
  for (int d = 0; d < 3; ++d)
    grid[d] = attn_b_index(&b, launch->grid[d]);
  // z outermost, x innermost.
  struct attn_b_for loops[3];
  for (int d = 2; d >= 0; --d)
    attn_b_for_open(&b, &loops[d], c0, grid[d], c1, 0, NULL);
  MlirValue args[ATTN_B_MAX_VALUES];
  for (intptr_t i = 0; i < n; ++i)
    args[i] = attn_b_func_arg(&f, i);
  for (int d = 0; d < 3; ++d)
    args[n + d] = loops[d].iv;
  char cta[300];
  snprintf(cta, sizeof cta, "%s__cta", name);
  attn_b_call(&b, cta, n + 3, args, 0, NULL);
  for (int d = 0; d < 3; ++d)
    attn_b_for_close(&b, &loops[d], 0, NULL);
  attn_b_func_close(&b, &f, 0, NULL);
  return attn_builder_finish(&b);
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
      ATTN_TILE_ARG_NAMES_ATTR, "tile.attention",    ATTN_TILE_MATMUL_ATTR,
      ATTN_TILE_DECODE_ATTR};
  for (size_t i = 0; i < sizeof tile_attrs / sizeof *tile_attrs; ++i)
    mlirOperationRemoveAttributeByName(
        kernel, mlirStringRefCreateFromCString(tile_attrs[i]));
}

/// Each tile.alloc becomes a memref.alloca of the same type.
static bool allocs_to_stack(MlirOperation kernel) {
  struct attn_op_list allocs = {0};
  attn_tile_collect_allocs(kernel, &allocs);
  bool ok = !allocs.failed;
  struct attn_builder b;
  attn_builder_init(&b, mlirOperationGetContext(kernel),
                    mlirOperationGetLocation(kernel));
  for (size_t i = 0; ok && i < allocs.n; ++i) {
    MlirOperation alloc = allocs.ops[i];
    b.src = mlirOperationGetLocation(alloc);
    attn_builder_role(&b, "cpu.stack");
    attn_builder_before(&b, alloc);
    MlirValue a = attn_b_alloca(
        &b, mlirValueGetType(mlirOperationGetResult(alloc, 0)));
    if (!(ok = attn_builder_finish(&b)))
      break;
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(alloc, 0), a);
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
  if (!build_entry(name, kernel, &launch))
    return false;
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
