//===- attn_reference.h - Float64 reference attention and test data -------===//
//
// The ground truth every kernel is checked against: attention with RoPE,
// scale, causal mask and GQA computed in float64, straight from the
// definition. No MLIR; used by attn-run, the GPU check and benchmarks.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_REFERENCE_H
#define ATTN_REFERENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// One attention problem: q [b, h, n, d], k [b, hk, m, d], v [b, hk, m, dv],
/// out [b, h, n, dv]; query head i reads key/value head i / (h / hk).
struct attn_ref_problem {
  int64_t batch, heads, kv_heads, seq_q, seq_k, head_dim, value_dim;
  double scale;
  bool causal;  ///< key j is visible to query i when j <= i
  bool rope;    ///< rotate q and k (positions 0..n-1) before the product
  double theta;
  int64_t rotary_dim;
  bool interleaved; ///< rope layout: pairs (2i, 2i+1) instead of (i, i+r/2)
};

/// Computes out from q, k, v (row-major, float64). Returns false when the
/// problem is malformed (sizes not positive, heads not divisible, rotary dim
/// odd or too large) or memory runs out.
bool attn_reference(const struct attn_ref_problem *p, const double *q,
                    const double *k, const double *v, double *out);

/// Rotates x [rows, dim] in place as RoPE does, row r at position pos0 + r.
void attn_reference_rope(double *x, int64_t rows, int64_t dim,
                         int64_t rotary_dim, double theta, bool interleaved,
                         int64_t pos0);

/// ||a - b||_2 / ||b||_2 over n elements (NaN anywhere gives NaN; a zero
/// reference gives the absolute norm).
double attn_rel_error(const double *a, const double *b, size_t n);

//===-- Test data ---------------------------------------------------------===//

/// A small PRNG (xorshift64*); seed 0 is replaced by a fixed non-zero value.
struct attn_rng {
  uint64_t s;
};

void attn_rng_seed(struct attn_rng *r, uint64_t seed);

/// A standard normal sample.
double attn_rng_normal(struct attn_rng *r);

/// A seed that differs from run to run (time and process id).
uint64_t attn_fresh_seed(void);

//===-- 16-bit floats -----------------------------------------------------===//

/// Round-to-nearest-even conversions between float and bf16/f16 bit
/// patterns.
uint16_t attn_f32_to_bf16(float f);
float attn_bf16_to_f32(uint16_t h);
uint16_t attn_f32_to_f16(float f);
float attn_f16_to_f32(uint16_t h);

#ifdef __cplusplus
}
#endif

#endif // ATTN_REFERENCE_H
