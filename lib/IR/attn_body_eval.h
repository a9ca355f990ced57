//===- attn_body_eval.h - Float64 evaluation of score and mask bodies -----===//
//
// The reference's view of a body (attn.score_mod, attn.mask_mod, attn.fused's
// score_fn / mask_fn): the block's ops decoded once, then evaluated per
// element with floats in double and integers in int64 (wrapping at their
// width), so that the float64 reference computes exactly what the body
// says. Captures are caller-supplied double arrays (row-major; integer
// elements as exact integers); every read clamps its indices into the
// capture's shape, as every lowering does.
//
//   struct attn_body_eval *e = attn_body_eval_create(body, n, data, err, len);
//   double s2 = attn_body_eval_score(e, s, b, h, q, kv);
//   attn_body_eval_destroy(e);
//
// With lib/Reference (which knows no MLIR), struct attn_body_fns is the
// fn_ctx of struct attn_ref_problem and attn_body_fns_score /
// attn_body_fns_mask its score_fn / mask_fn.
//
// Conventions where the kernels' behaviour is undefined: integer division
// or remainder by zero gives 0 (INT_MIN / -1 wraps); a shift by the width
// or more gives 0 (-1 for an arithmetic right shift of a negative value);
// fptosi / fptoui saturate, NaN gives 0. Floats narrower than f64 are not
// rounded (arith.truncf is the identity).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_BODY_EVAL_H
#define ATTN_BODY_EVAL_H

#include "mlir-c/IR.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A decoded body. It keeps no MLIR handle: the IR may go once it exists.
/// Evaluating writes its scratch values, so one evaluator serves one thread
/// at a time.
struct attn_body_eval;

/// Decodes body, a score body (5 arguments) or a mask body (4) that
/// attn_body_verify accepts. captures[i] is the data of the i-th capture in
/// attn_body_captures order, as many doubles as its shape holds; ncaptures
/// must be that count. Returns NULL, with a message in err (errlen bytes),
/// for a body it cannot evaluate (not one block, an op off the allowlist,
/// a capture without a static shape or without data) or when memory runs
/// out. Caller owns the result; release with attn_body_eval_destroy.
struct attn_body_eval *attn_body_eval_create(MlirBlock body, int ncaptures,
                                             const double *const *captures,
                                             char *err, size_t errlen);

/// Releases e (NULL is a no-op).
void attn_body_eval_destroy(struct attn_body_eval *e);

/// True when e is a score body (false: a mask body).
bool attn_body_eval_is_score(const struct attn_body_eval *e);

/// The score body's value for score s at (b, h, q, kv). A mask body (or
/// NULL) returns s.
double attn_body_eval_score(struct attn_body_eval *e, double s, int64_t b,
                            int64_t h, int64_t q, int64_t kv);

/// Whether the mask body lets query q see key kv of (b, h). A score body
/// (or NULL) returns true.
bool attn_body_eval_mask(struct attn_body_eval *e, int64_t b, int64_t h,
                         int64_t q, int64_t kv);

//===-- The reference hook ------------------------------------------------===//

/// The bodies of one attn.fused op (either may be NULL): fn_ctx of struct
/// attn_ref_problem.
struct attn_body_fns {
  struct attn_body_eval *score; ///< score_fn's body, for ATTN_REF_FN
  struct attn_body_eval *mask;  ///< mask_fn's body
};

/// attn_ref_problem's score_fn: attn_body_eval_score of fns->score.
double attn_body_fns_score(void *fns, double s, int64_t b, int64_t h,
                           int64_t q, int64_t kv);

/// attn_ref_problem's mask_fn: attn_body_eval_mask of fns->mask.
bool attn_body_fns_mask(void *fns, int64_t b, int64_t h, int64_t q,
                        int64_t kv);

#ifdef __cplusplus
}
#endif

#endif // ATTN_BODY_EVAL_H
