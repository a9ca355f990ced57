//===- attn_builder_body.c - Clones a modifier body at a builder ----------===//
//
// attn.score_mod / attn.mask_mod bodies (and the tile.score_fn /
// tile.mask_fn bodies attn-tile makes of them) are small blocks of upstream
// arith and math ops ending in gpu.yield. Every stage that computes one
// (attn-tile, the loop lowerings, the tensor-core kernels) copies the block's
// ops to where the element is computed, with its arguments replaced by the
// element's values: attn_b_clone_body does that through a value map, and a
// hook lets the caller build some ops itself (attn-tile's tensor.extract of
// a capture becomes a clamped memref.load; the kernels' memref.load a global
// load). Cloned ops keep their own locations: a diagnostic about one leads
// back to the line of the body that wrote it.
//
//===----------------------------------------------------------------------===//
#include "lib/IR/attn_builder.h"

#include <stdlib.h>

void attn_b_map_add(struct attn_b_map *m, MlirValue from, MlirValue to) {
  if (m->n == m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 32;
    MlirValue *f = realloc(m->from, cap * sizeof *f);
    if (f)
      m->from = f;
    MlirValue *t = f ? realloc(m->to, cap * sizeof *t) : NULL;
    if (t)
      m->to = t;
    if (!f || !t) {
      m->failed = true;
      return;
    }
    m->cap = cap;
  }
  m->from[m->n] = from;
  m->to[m->n++] = to;
}

MlirValue attn_b_map_get(const struct attn_b_map *m, MlirValue v) {
  // Latest first: a value mapped again (a body cloned twice) takes its
  // newest image.
  for (size_t i = m->n; i-- > 0;)
    if (mlirValueEqual(m->from[i], v))
      return m->to[i];
  return v;
}

void attn_b_map_free(struct attn_b_map *m) {
  free(m->from);
  free(m->to);
  m->from = m->to = NULL;
  m->n = m->cap = 0;
}

MlirValue attn_b_clone_body(struct attn_builder *b, MlirBlock body,
                            const MlirValue *args, struct attn_b_map *m,
                            attn_b_clone_hook hook, void *user) {
  MlirValue none = {NULL};
  if (mlirBlockIsNull(body) || mlirBlockIsNull(b->block)) {
    attn_builder_fail(b, "a modifier body to clone is missing (a bug in "
                         "attn)");
    return none;
  }
  for (intptr_t i = 0, n = mlirBlockGetNumArguments(body); i < n; ++i)
    attn_b_map_add(m, mlirBlockGetArgument(body, i), args[i]);
  MlirOperation term = mlirBlockGetTerminator(body);
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op) && !b->failed;
       op = mlirOperationGetNextInBlock(op)) {
    if (mlirOperationEqual(op, term))
      break;
    if (hook && hook(b, op, m, user))
      continue;
    MlirOperation c = mlirOperationClone(op);
    for (intptr_t i = 0, n = mlirOperationGetNumOperands(c); i < n; ++i)
      mlirOperationSetOperand(c, i,
                              attn_b_map_get(m, mlirOperationGetOperand(op, i)));
    if (mlirOperationIsNull(b->anchor))
      mlirBlockAppendOwnedOperation(b->block, c);
    else
      mlirBlockInsertOwnedOperationBefore(b->block, b->anchor, c);
    for (intptr_t i = 0, n = mlirOperationGetNumResults(op); i < n; ++i)
      attn_b_map_add(m, mlirOperationGetResult(op, i),
                     mlirOperationGetResult(c, i));
  }
  if (m->failed)
    attn_builder_fail(b, "out of memory while cloning a modifier body");
  if (b->failed)
    return none;
  if (mlirOperationIsNull(term) || mlirOperationGetNumOperands(term) < 1) {
    attn_builder_fail(b, "a modifier body must end in gpu.yield of a value");
    return none;
  }
  return attn_b_map_get(m, mlirOperationGetOperand(term, 0));
}
