//===- attn_reference.h - Float64 reference attention and test data -------===//
//
// The ground truth every kernel is checked against: attention with every
// block of the language (RoPE at offsets or explicit positions, GQA, the
// score modifiers scale, softcap, alibi and gate in program order, the
// causal, window and document masks, and modifiers of any form through two
// callbacks) computed in float64, straight from the definition, and its
// backward (attn_reference_grad: dq, dk, dv, dgate and the row
// log-sum-exp for a given dO, attn_reference_grad.c). No MLIR:
// bodies of attn.score_mod / attn.mask_mod come in as score_fn / mask_fn
// (lib/IR/attn_body_eval.h's attn_body_fns_score / attn_body_fns_mask
// evaluate them). Used by attn-run, attn-fuzz, the GPU check and
// benchmarks.
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

/// The score modifiers whose order matters.
enum attn_ref_mod {
  ATTN_REF_SCALE,   ///< s *= scale
  ATTN_REF_SOFTCAP, ///< s = softcap * tanh(s / softcap)
  ATTN_REF_ALIBI,   ///< s -= 2^(-alibi_max_bias * (h + 1) / heads) * |i - j|
  ATTN_REF_GATE,    ///< s += gate[b, h, i, j / gate_block]
  ATTN_REF_FN,      ///< s = score_fn(fn_ctx, s, b, h, i, j)
};

/// One attention problem: q [b, h, n, d], k [b, hk, m, d], v [b, hk, m, dv],
/// out [b, h, n, dv]; query head i reads key/value head i / (h / hk).
/// Fields after `interleaved` are optional: zero means absent, so a problem
/// written with designated initializers for the first ones stays valid.
struct attn_ref_problem {
  int64_t batch, heads, kv_heads, seq_q, seq_k, head_dim, value_dim;
  double scale;
  bool causal;  ///< key j is visible to query i when j <= i
  bool rope;    ///< rotate q and k before the product
  double theta;
  int64_t rotary_dim;
  bool interleaved; ///< rope layout: pairs (2i, 2i+1) instead of (i, i+r/2)

  /// Modifiers in the order applied after q.k^T; nmods == 0 means scale
  /// alone. Scale is applied at its entry, or first when mods has none.
  int nmods;
  enum attn_ref_mod mods[5];
  double softcap;        ///< cap, for ATTN_REF_SOFTCAP
  double alibi_max_bias; ///< for ATTN_REF_ALIBI
  const double *gate;    ///< [b, h, n, ceil(m / gate_block)], ATTN_REF_GATE
  int64_t gate_block;

  /// Masks, which commute: a masked key gets weight 0 whatever the
  /// modifiers do; a query that sees no key outputs 0.
  bool window;                 ///< key j visible iff i - left <= j <= i + right
  int64_t window_left, window_right; ///< -1: unbounded on that side
  const int32_t *q_segments;   ///< [b, n]; with k_segments: document mask,
  const int32_t *k_segments;   ///< [b, m]; j visible iff the ids are equal

  /// RoPE positions: row r of q is at q_positions[b, r] when given, else
  /// q_offset + r (the same for k).
  int64_t q_offset, k_offset;
  const int32_t *q_positions, *k_positions;

  /// Modifiers of any form (attn.fused's score_fn and mask_fn): score_fn
  /// maps the score of (b, h, i, j) where mods lists ATTN_REF_FN; mask_fn,
  /// when not NULL, is one more mask (true: key j is visible to query i).
  /// Both get fn_ctx.
  double (*score_fn)(void *ctx, double s, int64_t b, int64_t h, int64_t q,
                     int64_t kv);
  bool (*mask_fn)(void *ctx, int64_t b, int64_t h, int64_t q, int64_t kv);
  void *fn_ctx;

  /// The derivative of score_fn with respect to its score s, for
  /// attn_reference_grad (fn_ctx too). When NULL, attn_reference_grad
  /// takes score_fn's central difference in float64, (f(s + e) - f(s - e))
  /// / 2e with e = 1e-6 max(1, |s|): within about 1e-9 relative of the
  /// derivative for a smooth body, wrong within e of a kink (floor, a
  /// comparison).
  double (*score_fn_grad)(void *ctx, double s, int64_t b, int64_t h,
                          int64_t q, int64_t kv);
};

/// Computes out from q, k, v (row-major, float64). Returns false when the
/// problem is malformed (sizes not positive, heads not divisible, rotary dim
/// odd or too large, a modifier without its parameter, ATTN_REF_FN without
/// score_fn) or memory runs out.
bool attn_reference(const struct attn_ref_problem *p, const double *q,
                    const double *k, const double *v, double *out);

/// The backward of attn_reference for a given dO (dout, like out): the
/// gradients of L = sum(out * dout) with respect to q, k and v, in float64
/// from the definition (docs/dialects.md, "The backward's ops"): P = exp(s -
/// lse), dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dO O)), then dS
/// through each modifier in reverse (scale: * scale; softcap: * (1 -
/// tanh^2(s_in / cap)); alibi, gate: * 1; ATTN_REF_FN: * score_fn_grad, or
/// score_fn's central difference when that is NULL), dq = R_q^T (dS K_rot),
/// dk = R_k^T (dS^T Q_rot) with the inverse rotation, dk and dv of a kv
/// head summed over its query heads (GQA). Every block of attn_reference
/// is covered; masked keys and queries that see no key get no gradient.
///
/// Writes dq [b, h, n, d], dk [b, hk, m, d] and dv [b, hk, m, dv]
/// (required); dgate [b, h, n, ceil(m / gate_block)], the gradient of the
/// gate table, when not NULL and mods has ATTN_REF_GATE (left alone
/// otherwise); lse [b, h, n], the row log-sum-exp ln sum_j exp(s_ij) of
/// the final scores (+inf for a query that sees no key), when not NULL.
/// Returns false, writing nothing, where attn_reference does (a malformed
/// problem, memory).
bool attn_reference_grad(const struct attn_ref_problem *p, const double *q,
                         const double *k, const double *v, const double *dout,
                         double *dq, double *dk, double *dv, double *dgate,
                         double *lse);

/// The gradient of L = sum(out * dout) with respect to the values x[0..n)
/// a score_fn of p reads (a captured tensor's data, which p's fn_ctx sees:
/// changed in place during the call, put back after), by central
/// differences of attn_reference of step 1e-6 max(1, |x|), written to
/// grad[0..n): attn_reference takes no derivative with respect to a
/// capture, and a difference shares nothing with the kernels (its rounding,
/// about 1e-16 / 1e-6 relative, bounds how close it is). Returns false
/// where attn_reference does (a malformed problem, memory), or for a null
/// tensor.
bool attn_reference_capture_grad(const struct attn_ref_problem *p,
                                 const double *q, const double *k,
                                 const double *v, const double *dout,
                                 double *x, size_t n, double *grad);

/// One decode problem (attn.fused_decode): q [b, h, n, d]; a contiguous
/// cache k [b, hk, max_seq, d], v [b, hk, max_seq, dv], or a paged one
/// k [num_pages, hk, page_size, d] addressed by block_table [b, max_pages];
/// seqlens [b] keys per sequence. Query row i of sequence b sits at
/// position seqlens[b] - n + i (its q row is rotated there when rope; the
/// cache holds rotated keys) and sees keys j < seqlens[b], j <= its position
/// when causal, within the window; ALiBi's distance is position - j.
struct attn_ref_decode {
  int64_t batch, heads, kv_heads, seq_q, head_dim, value_dim;
  double scale;
  bool causal;
  bool rope;
  double theta;
  int64_t rotary_dim;
  bool interleaved;
  int nmods; ///< of ATTN_REF_SCALE, ATTN_REF_SOFTCAP, ATTN_REF_ALIBI
  enum attn_ref_mod mods[5];
  double softcap, alibi_max_bias;
  bool window;
  int64_t window_left, window_right; ///< -1: unbounded
  int64_t max_seq; ///< keys a sequence may hold (max_pages * page_size paged)
  bool paged;
  int64_t page_size, num_pages, max_pages;
  const int32_t *seqlens;     ///< [batch]
  const int32_t *block_table; ///< [batch, max_pages], paged only
};

/// Computes out [b, h, n, dv] (float64, row-major); a row that sees no key
/// is 0. Returns false when the problem is malformed, a length is outside
/// [0, max_seq], a page the keys reach is outside [0, num_pages), or memory
/// runs out.
bool attn_reference_decode(const struct attn_ref_decode *p, const double *q,
                           const double *k_cache, const double *v_cache,
                           double *out);

/// An append before a decode (attn.cache_append): rows new keys and values
/// [b, hk, rows, d] / [.., dv] of sequence b written at positions
/// seqlens[b] - rows + i of the cache, the keys rotated there with their
/// own RoPE when rope.
struct attn_ref_append {
  int64_t rows;
  bool rope, interleaved;
  double theta;
  int64_t rotary_dim;
};

/// Writes k_new and v_new into k_cache and v_cache (float64, p's layout
/// and lengths) as a describes; a negative position is not written.
/// Returns false when a length is outside [0, max_seq] or a page it
/// writes is outside [0, num_pages).
bool attn_reference_cache_append(const struct attn_ref_decode *p,
                                 const struct attn_ref_append *a,
                                 const double *k_new, const double *v_new,
                                 double *k_cache, double *v_cache);

/// Rotates x [rows, dim] in place as RoPE does, row r at position pos0 + r.
void attn_reference_rope(double *x, int64_t rows, int64_t dim,
                         int64_t rotary_dim, double theta, bool interleaved,
                         int64_t pos0);

/// Same, row r at position pos[r] (pos0 + r when pos is NULL).
void attn_reference_rope_at(double *x, int64_t rows, int64_t dim,
                            int64_t rotary_dim, double theta, bool interleaved,
                            const int32_t *pos, int64_t pos0);

/// The inverse of attn_reference_rope_at (R^T: every angle negated), the
/// backward of the rotation.
void attn_reference_rope_inverse_at(double *x, int64_t rows, int64_t dim,
                                    int64_t rotary_dim, double theta,
                                    bool interleaved, const int32_t *pos,
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

/// A uniform sample in (0, 1).
double attn_rng_uniform(struct attn_rng *r);

/// A uniform integer in [0, n) (0 when n is 0).
uint64_t attn_rng_below(struct attn_rng *r, uint64_t n);

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
