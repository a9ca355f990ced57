//===- attn_body_interval.h - What a mask body says of a box of indices ---===//
//
// The block structure of a mask of any form (attn.mask_mod's body, and the
// tile.mask_fn it becomes), derived by the compiler as flex's BlockMask is
// by evaluation, but over whole boxes at once: the body is evaluated by
// interval arithmetic with b, h, q and kv each ranging over an interval, so
// that a box of (query block, key block) is known to be wholly visible,
// wholly masked, or neither. Exact for the masks affine in the indices
// (causal at any alignment, windows, prefix-LM, queries that end the keys
// as in chunked prefill); a body that reads a capture (a document id) or
// computes in floating point is "neither" where it matters, so its blocks
// stay partial and are masked element by element. Never wrong: ALL and NONE
// are only said when they hold for every point of the box.
//
//   struct attn_mask_program *p = attn_mask_program_compile(body);
//   struct attn_key_blocks r;
//   attn_mask_key_blocks(p, &shape, q0, q1, &r);   // per query block
//   attn_mask_program_free(p);
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_BODY_INTERVAL_H
#define ATTN_BODY_INTERVAL_H

#include "mlir-c/IR.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What a mask says of every point of a box.
enum attn_box_mask {
  ATTN_BOX_NONE, ///< no key of the box is visible
  ATTN_BOX_SOME, ///< some may be, some may not (or the body cannot tell)
  ATTN_BOX_ALL,  ///< every key of the box is visible
};

/// A box of indices, inclusive bounds: b in [lo[0], hi[0]], h in [lo[1],
/// hi[1]], q in [lo[2], hi[2]], kv in [lo[3], hi[3]].
struct attn_box {
  int64_t lo[4], hi[4];
};

/// A mask body made ready for evaluation over many boxes.
struct attn_mask_program;

/// Compiles a mask body (block arguments b, h, q, kv of type index; the
/// last op a gpu.yield of an i1). Ops it has no interval rule for become
/// unknown values, never an error. Returns NULL when the block is not of
/// that form or memory runs out.
struct attn_mask_program *attn_mask_program_compile(MlirBlock body);

void attn_mask_program_free(struct attn_mask_program *p);

/// What the body says of every point of box.
enum attn_box_mask attn_mask_program_eval(const struct attn_mask_program *p,
                                          const struct attn_box *box);

/// Whether the body yields one value at every point of box, taking b and h
/// as fixed (a run-time classification evaluates each (b, h) of its own):
/// each of q and kv is uniform where its interval is a point, an integer
/// whose interval is a point is uniform, a capture read at uniform indices
/// and any op of uniform operands are uniform. A block map read as
/// map[b, h, q / 64, kv / 64] is uniform over every 64-aligned box of 64 x
/// 64, so a classification may evaluate it once per box. false when it
/// cannot tell.
bool attn_mask_program_uniform(const struct attn_mask_program *p,
                               const struct attn_box *box);

/// The sizes a block classification needs.
struct attn_mask_shape {
  int64_t batch, heads; ///< query heads
  int64_t seq_q, seq_k; ///< N and M
  int64_t block_n;      ///< keys per key block
};

/// One query block's key blocks: [first, last) holds every key block with a
/// visible key (never empty: a query block that sees no key gets one block,
/// masked); [full_first, full_last) is a run of blocks inside it whose every
/// key is visible to every row (empty when full_first == full_last), which a
/// kernel may compute without the mask.
struct attn_key_blocks {
  int64_t first, last, full_first, full_last;
};

/// Classifies the key blocks of the query rows [q0, q1] (inclusive, within
/// [0, seq_q)) over every batch and head under the and of n masks (n = 0: a
/// mask that hides nothing; a null program: a mask that cannot be told).
void attn_mask_key_blocks(const struct attn_mask_program *const *p, int n,
                          const struct attn_mask_shape *s, int64_t q0,
                          int64_t q1, struct attn_key_blocks *out);

#ifdef __cplusplus
}
#endif

#endif // ATTN_BODY_INTERVAL_H
