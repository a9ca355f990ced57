//===- gemm_ops.c - Ops the Hopper GEMM builds beyond the vocabulary ------===//
//
// What the GEMM's kernels need that instructions.c does not make:
//
//   scf.while  the loops whose trip count is known only on the GPU: the
//              adaptive split's tile loops (tiles claimed from a counter,
//              or read from the ring's slots) and a signaler's loop over
//              its consumer's posts. Each carries one i32; struct
//              attn_k_while opens and closes its two regions as
//              attn_b_for_open and attn_b_for_close do an scf.for's.
//   kernels    an llvm.func of any parameter types with attributes on its
//              parameters (tensor maps by value, no-alias pointers).
//   memory     getelementptr of any element type, and vector loads.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/LLVM.h"

#include <stdint.h>

#include <string.h>

void attn_k_while_open(struct attn_builder *b, struct attn_k_while *w,
                       MlirValue init, intptr_t n, const MlirType *types) {
  memset(w, 0, sizeof *w);
  if (n > 4) {
    attn_builder_fail(b, "too many results for one scf.while (a bug in attn)");
    n = 0;
  }
  w->n = n;
  w->op = attn_b_op(b, "scf.while", n, types, 1, &init, 0, NULL, 2);
  w->outer_block = b->block;
  w->outer_anchor = b->anchor;
  ++b->depth;
  if (mlirOperationIsNull(w->op))
    return;
  MlirType i32 = b->t.i32;
  MlirLocation locs[4] = {b->loc, b->loc, b->loc, b->loc};
  MlirBlock before = mlirBlockCreate(1, &i32, locs);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(w->op, 0), before);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(w->op, 1),
                             mlirBlockCreate(n, types, locs));
  w->arg = mlirBlockGetArgument(before, 0);
  attn_builder_at_end(b, before);
}

void attn_k_while_cond(struct attn_builder *b, struct attn_k_while *w,
                       MlirValue cond, const MlirValue *vals) {
  if (mlirOperationIsNull(w->op))
    return;
  MlirValue opd[5] = {cond};
  for (intptr_t i = 0; i < w->n; ++i)
    opd[1 + i] = vals[i];
  attn_b_op(b, "scf.condition", 0, NULL, 1 + w->n, opd, 0, NULL, 0);
  MlirBlock after = attn_b_region_block(w->op, 1);
  for (intptr_t i = 0; i < w->n; ++i)
    w->args[i] = mlirBlockGetArgument(after, i);
  attn_builder_at_end(b, after);
}

void attn_k_while_close(struct attn_builder *b, struct attn_k_while *w,
                        MlirValue next) {
  if (!mlirOperationIsNull(w->op)) {
    attn_b_op(b, "scf.yield", 0, NULL, 1, &next, 0, NULL, 0);
    for (intptr_t i = 0; i < w->n; ++i)
      w->results[i] = attn_b_result(w->op, i);
  }
  b->block = w->outer_block;
  b->anchor = w->outer_anchor;
  --b->depth;
}

//===-- Memory ------------------------------------------------------------===//

MlirValue attn_k_gemm_load_vec(struct attn_builder *b, MlirValue p, int n,
                               MlirType elem, int64_t align) {
  int64_t shape[1] = {n};
  MlirNamedAttribute a[] = {
      attn_b_named(b, "alignment", attn_b_attr_i64(b, align)),
  };
  return attn_b_op1(b, "llvm.load", mlirVectorTypeGet(1, shape, elem), 1, &p, 1,
                    a);
}
