//===- body.h - Checking the bodies of score and mask modifiers ----------===//
//
// attn.score_mod, attn.mask_mod, attn.fused's score_fn / mask_fn regions and
// tile.score_fn / tile.mask_fn carry a body: one block of scalar arith and
// math ops that every path (the CPU and plain GPU lowerings, the Hopper and
// mma kernels, the float64 reference) can compute. This header is the one
// checker all their verifiers share: the allowlist of ops, the scalar types,
// the captures (tensors, or memrefs at the tile level, defined above the
// body and read only by tensor.extract / memref.load) and the bounds of
// constant indices.
//
//   score body: ^bb0(%score: f32, %b: index, %h: index, %q: index,
//                    %kv: index): ... gpu.yield %new : f32
//   mask body:  ^bb0(%b: index, %h: index, %q: index, %kv: index):
//                    ... gpu.yield %visible : i1
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_BODY_H
#define ATTN_BODY_H

#include "mlir-c/IR.h"

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What a body computes.
enum attn_body_kind {
  ATTN_BODY_SCORE, ///< (f32 score, index b, h, q, kv) -> f32 (f64 in f64
                   ///< programs: the type attn_compute_type gives)
  ATTN_BODY_MASK,  ///< (index b, h, q, kv) -> i1, true: the key is visible
  ATTN_BODY_CAPTURE_GRAD, ///< a score body's arguments -> (f32 derivative,
                          ///< index, ...): tile.capture_grad's, the
                          ///< derivative and where it accumulates
};

/// How a body reads its captures.
enum attn_body_level {
  ATTN_BODY_TENSOR, ///< attn level: tensor.extract of tensors from above
  ATTN_BODY_MEMREF, ///< tile level: memref.load of memrefs from above
};

//===-- Checking ----------------------------------------------------------===//

/// Checks that region (a region of op) is a body of the given kind: one
/// block with the kind's arguments, ending in gpu.yield of ftype (score) or
/// i1 (mask), where ftype is the program's compute type (f32, or f64 in an
/// f64 program: attn_compute_type), the score argument's type too; every op on the allowlist (arith.constant, the arith and math
/// ops the contract lists, tensor.extract or memref.load by level,
/// gpu.yield last), without regions; every value f32, f16, i1, i8, i32, i64
/// or index, and bf16 only as a capture's element read and converted by
/// arith.extf; every value from above a capture (a static shaped type of
/// rank >= 1 without empty dimensions, element f32, f16, bf16, i32 or i64)
/// used only as the source of the read (f64 values and captures are
/// allowed in f64 programs only); every index that is an
/// arith.constant of the body inside the capture's shape. what names the
/// body in messages ("attn.score_mod", "score_fn of attn.fused"); a null
/// region is an error too (IR that IRDL has not verified). Returns
/// false after one error diagnostic: at op for the region's shape and
/// signature, at the offending body op otherwise.
bool attn_body_verify(MlirOperation op, MlirRegion region,
                      enum attn_body_kind kind, enum attn_body_level level,
                      MlirType ftype, const char *what);

/// True when op's name is on the body allowlist of level (gpu.yield
/// included; tensor.extract at the attn level, memref.load at the tile
/// level).
bool attn_body_op_allowed(MlirOperation op, enum attn_body_level level);

//===-- Reading -----------------------------------------------------------===//

/// The block arguments a body of kind has: 5 (score) or 4 (mask).
int attn_body_num_args(enum attn_body_kind kind);

/// Writes into out (at most max) the values defined outside body that its
/// ops use (its captures), in first-use order, each once. Returns how many
/// there are (which may exceed max; only max are written). A null block
/// has none.
int attn_body_captures(MlirBlock body, MlirValue *out, int max);

/// True when v is defined outside body (neither one of its arguments nor
/// the result of one of its ops).
bool attn_body_is_capture(MlirBlock body, MlirValue v);

#ifdef __cplusplus
}
#endif

#endif // ATTN_BODY_H
