//===- tile_gen.c - The loops tile ops lower to, for CPU and GPU ----------===//
//
// The vocabulary every tile-op lowering (tile_lowering.c, its scores in
// tile_lowering_scores.c, the backward's in tile_lowering_grad.c) writes its
// loop nests with: the op's operands, constants, and one loop over a tile's
// elements, walked by one thread on the CPU and by the CTA's threads
// (tid, tid + ntid, ...) then a barrier on the GPU. Kept apart so that the
// lowerings call it and not each other.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "lib/IR/attn_builder.h"

MlirValue attn_gen_arg(struct attn_tile_gen *g, int i) {
  return mlirOperationGetOperand(g->op, i);
}

MlirValue attn_gen_float(struct attn_tile_gen *g, double v) {
  return attn_b_float(g->b, g->ct, v);
}

MlirValue attn_gen_index(struct attn_tile_gen *g, long long v) {
  return attn_b_index(g->b, v);
}

MlirValue attn_gen_open_loop(struct attn_tile_gen *g, struct attn_b_for *loop,
                             long long total) {
  struct attn_builder *b = g->b;
  MlirValue tid, nt;
  if (g->target == ATTN_TILE_GPU) {
    tid = attn_b_thread_id(b, ATTN_B_X);
    nt = attn_b_block_dim(b, ATTN_B_X);
  } else {
    tid = attn_b_index(b, 0);
    nt = attn_b_index(b, 1);
  }
  g->c0 = attn_b_index(b, 0);
  g->c1 = attn_b_index(b, 1);
  MlirValue hi = attn_b_index(b, total);
  attn_b_for_open(b, loop, tid, hi, nt, 0, NULL);
  return loop->iv;
}

void attn_gen_close_loop(struct attn_tile_gen *g, struct attn_b_for *loop) {
  attn_b_for_close(g->b, loop, 0, NULL);
  if (g->target == ATTN_TILE_GPU)
    attn_b_barrier(g->b);
}

void attn_gen_split_index(struct attn_tile_gen *g, MlirValue e,
                          long long cols, MlirValue *i, MlirValue *j) {
  MlirValue c = attn_gen_index(g, cols);
  *i = attn_b_divui(g->b, e, c);
  *j = attn_b_remui(g->b, e, c);
}
