//===- attn_dialect.h - Op names and readers of the attn dialect ----------===//
#ifndef ATTN_ATTN_DIALECT_H
#define ATTN_ATTN_DIALECT_H

#include "dialects/body.h"
#include "dialects/dialects.h"

#define ATTN_OP_PROJECT "attn.project"
#define ATTN_OP_ROPE "attn.rope"
#define ATTN_OP_QK "attn.qk"
#define ATTN_OP_SCALE "attn.scale"
#define ATTN_OP_CAUSAL "attn.causal"
#define ATTN_OP_WINDOW "attn.window"
#define ATTN_OP_ALIBI "attn.alibi"
#define ATTN_OP_SOFTCAP "attn.softcap"
#define ATTN_OP_GATE "attn.gate"
#define ATTN_OP_DOCUMENT "attn.document"
#define ATTN_OP_SCORE_MOD "attn.score_mod"
#define ATTN_OP_MASK_MOD "attn.mask_mod"
#define ATTN_OP_SOFTMAX "attn.softmax"
#define ATTN_OP_PV "attn.pv"
#define ATTN_OP_FUSED "attn.fused"
#define ATTN_OP_FUSED_GRAD "attn.fused_grad"
#define ATTN_OP_FUSED_DECODE "attn.fused_decode"
#define ATTN_OP_CACHE_APPEND "attn.cache_append"

/// The unit attribute of attn.fused asking for its second result, the row
/// log-sum-exp (attn-grad sets it).
#define ATTN_FUSED_LSE_ATTR "lse"

/// attn.fused_grad's operands after the optional inputs: out, lse, dout.
#define ATTN_FUSED_GRAD_TAIL 3
/// attn.fused_grad's string array naming its results after dv ("gate",
/// "capture<i>"), and the function argument attribute that asks attn-grad
/// for one.
#define ATTN_FUSED_GRAD_GRADS_ATTR "grads"
#define ATTN_ARG_GRAD_ATTR "attn.grad"
/// The most captured-tensor gradients one attn.fused_grad computes.
#define ATTN_MAX_GRADS 8

/// RoPE layouts: rotate-half pairs feature i with i + rotary_dim/2 (Llama);
/// interleaved pairs 2i with 2i + 1 (GPT-J).
enum attn_rope_layout { ATTN_ROPE_ROTATE_HALF, ATTN_ROPE_INTERLEAVED };

/// A RoPE configuration as carried by attn.rope and attn.fused's "rope".
/// Row r of a tensor without explicit positions sits at position offset + r.
struct attn_rope_config {
  double theta;
  int64_t rotary_dim;
  enum attn_rope_layout layout;
  int64_t offset;
};

/// Where RoPE runs, as attn.fused's rope.strategy records it (attn-fuse's
/// rope-strategy option; lib/CostModel prices each): in the attention kernel
/// (Q once per CTA, K per tile), split (Q in the kernel, K by a kernel
/// before), pre (Q and K by kernels before), producer (in the epilogue of
/// the projection producing q and k). NONE: not recorded.
enum attn_rope_strategy {
  ATTN_ROPE_STRATEGY_NONE,
  ATTN_ROPE_STRATEGY_FUSED,
  ATTN_ROPE_STRATEGY_SPLIT,
  ATTN_ROPE_STRATEGY_PRE,
  ATTN_ROPE_STRATEGY_PRODUCER,
};

/// The score modifiers whose order matters, as attn.fused's "mods" names
/// them ("scale", "softcap", "alibi", "gate", "fn"). Masks commute and are
/// not listed. ATTN_MOD_FN is the score_fn region: the chain's
/// attn.score_mod bodies, composed.
enum attn_score_mod {
  ATTN_MOD_SCALE,
  ATTN_MOD_SOFTCAP,
  ATTN_MOD_ALIBI,
  ATTN_MOD_GATE,
  ATTN_MOD_FN,
  ATTN_NUM_MODS
};

/// The optional inputs of attn.fused after q, k, v, in the order they appear
/// (entries 3.. of its operandSegmentSizes).
enum attn_fused_extra {
  ATTN_EXTRA_GATE,        ///< tensor<B x H x N x ceil(M / gate_block) x f32>
  ATTN_EXTRA_Q_SEGMENTS,  ///< tensor<B x N x i32>
  ATTN_EXTRA_K_SEGMENTS,  ///< tensor<B x M x i32>
  ATTN_EXTRA_Q_POSITIONS, ///< tensor<B x N x i32>
  ATTN_EXTRA_K_POSITIONS, ///< tensor<B x M x i32>
  ATTN_NUM_EXTRAS
};

/// What an attn.fused op computes, read from its attributes and operands.
struct attn_fused_config {
  double scale;
  bool causal;
  bool has_window;
  int64_t window_left, window_right; ///< -1: unbounded on that side
  bool has_alibi;
  double alibi_max_bias;
  bool has_softcap;
  double softcap;
  bool has_gate;
  int64_t gate_block;
  bool document; ///< q_segments and k_segments are operands
  bool has_score_fn; ///< region score_fn has a body ("fn" is in mods)
  bool has_mask_fn;  ///< region mask_fn has a body
  bool has_rope;
  struct attn_rope_config rope; ///< rope.offset is unused: see q/k_offset
  enum attn_rope_strategy rope_strategy; ///< rope.strategy, or NONE
  int64_t q_offset, k_offset;   ///< RoPE positions of row 0 of q and k
  /// Every non-commuting modifier in the order applied; scale is always
  /// listed (first when "mods" does not name it).
  int nmods;
  enum attn_score_mod mods[ATTN_NUM_MODS];
  /// Operand index of each extra role, or -1 when absent.
  int extra[ATTN_NUM_EXTRAS];
  /// attn.fused: the unit attribute lse is set (a second result, the row
  /// log-sum-exp). attn.fused_grad: always false.
  bool lse;
};

/// Reads an attn.rope op's attributes. Returns false (no diagnostic) when
/// they are missing or malformed; the verifier reports those.
bool attn_rope_get_config(MlirOperation rope, struct attn_rope_config *out);

/// Reads the "rope" dictionary attn-fuse puts on an attn.project (producer
/// placement): *has is false when there is none. Returns false (no
/// diagnostic) when it is malformed; the verifier reports that.
bool attn_project_get_rope(MlirOperation project, bool *has,
                           struct attn_rope_config *out);

/// Reads an attn.fused op's attributes and extra operands; false as above.
/// attn.fused_grad is read the same way (its operands out, lse and dout
/// follow the optional inputs and are not part of the configuration).
bool attn_fused_get_config(MlirOperation fused, struct attn_fused_config *out);

/// How attn.fused_decode's cache is laid out: one [B, Hk, M, D] tensor per
/// cache (contiguous), or pages [P, Hk, page_size, D] addressed through a
/// block table [B, max_pages] (paged, as vLLM's and FlashInfer's HND).
enum attn_cache_layout { ATTN_CACHE_CONTIGUOUS, ATTN_CACHE_PAGED };

/// The page sizes a paged cache may have: powers of two in this range.
#define ATTN_DECODE_MIN_PAGE 16
#define ATTN_DECODE_MAX_PAGE 256

/// What an attn.fused_decode op computes. Query row i of sequence b sits at
/// position len[b] - Nq + i and, when causal, sees keys j < len[b] - Nq + i
/// + 1 (else every j < len[b]); its q row is rotated at that position.
struct attn_decode_config {
  /// scale, causal, window, alibi, softcap, rope (no offsets) and mods, as
  /// attn.fused's; no gate, bodies, extras or lse.
  struct attn_fused_config base;
  enum attn_cache_layout layout;
  int64_t page_size; ///< paged: the cache's pages' rows; else 0
  bool has_table;    ///< the block_table operand is present (operand 4)
  int64_t batch, heads, kv_heads, seq_q, head_dim, value_dim;
  int64_t max_seq;   ///< keys a sequence may hold: M, or max_pages * page_size
  int64_t num_pages; ///< paged: P; else 0
};

/// attn.fused_decode's operands: q, k_cache, v_cache, cache_seqlens, then
/// block_table when paged.
enum {
  ATTN_DECODE_Q,
  ATTN_DECODE_K_CACHE,
  ATTN_DECODE_V_CACHE,
  ATTN_DECODE_SEQLENS,
  ATTN_DECODE_TABLE
};

/// Reads an attn.fused_decode op's attributes and shapes; false (no
/// diagnostic) when they are malformed: the verifier reports those.
bool attn_decode_get_config(MlirOperation op, struct attn_decode_config *out);

/// What an attn.cache_append op writes: k_new and v_new [B, Hk, N, *] as
/// rows len[b] - N + i of sequence b's cache (k_new rotated at those
/// positions first when RoPE applies); rows at negative positions are not
/// written.
struct attn_append_config {
  enum attn_cache_layout layout;
  int64_t page_size; ///< paged: the cache's pages' rows; else 0
  bool has_table;    ///< the block_table operand is present (operand 3)
  bool has_rope;
  struct attn_rope_config rope; ///< theta, rotary_dim, layout (no offset)
  int64_t batch, kv_heads, seq_new, head_dim, value_dim;
  int64_t max_seq;   ///< keys a sequence may hold: M, or max_pages * page_size
  int64_t num_pages; ///< paged: P; else 0
};

/// attn.cache_append's operands: k_cache, v_cache, cache_seqlens, then
/// block_table when paged, then k_new and v_new (at attn_append_k_new).
enum {
  ATTN_APPEND_K_CACHE,
  ATTN_APPEND_V_CACHE,
  ATTN_APPEND_SEQLENS,
  ATTN_APPEND_TABLE
};
static inline int attn_append_k_new(const struct attn_append_config *c) {
  return 3 + (c->has_table ? 1 : 0);
}

/// Reads an attn.cache_append op's attributes and shapes; false (no
/// diagnostic) when they are malformed: the verifier reports those.
bool attn_cache_append_get_config(MlirOperation op,
                                  struct attn_append_config *out);

/// What attn.fused_grad's result 3 + i is the gradient of: ATTN_GRAD_GATE
/// (the gate's table) or the index c of a captured tensor ("capture<c>",
/// captures numbered in the function's argument order).
#define ATTN_GRAD_GATE (-1)

/// Reads attn.fused_grad's "grads" into out[0..max) (ATTN_GRAD_GATE or a
/// capture index). Returns how many there are (0 without the attribute),
/// -1 when it is malformed (not an array of "gate" / "capture<i>" strings,
/// or more than max); no diagnostic (the verifier reports it).
int attn_fused_grad_targets(MlirOperation grad, int *out, int max);

/// The operand index of attn.fused_grad's out (lse and dout follow it):
/// the number of operands before the three, read from operandSegmentSizes
/// (-1 when it is malformed).
intptr_t attn_fused_grad_out_index(MlirOperation grad);

/// The body of attn.fused's score_fn region (the composed attn.score_mod
/// bodies), or a null block when the region is empty.
MlirBlock attn_fused_score_fn(MlirOperation fused);

/// The body of attn.fused's mask_fn region (the attn.mask_mod bodies,
/// and-ed), or a null block when the region is empty.
MlirBlock attn_fused_mask_fn(MlirOperation fused);

// attn_body_captures(MlirBlock body, MlirValue *out, int max), declared in
// dialects/body.h (included above), lists a body's captures in first-use
// order.

/// Checks a RoPE configuration against a head dim; emits an error at op and
/// returns false when theta, rotary_dim or the head dim are out of range.
bool attn_rope_check(MlirOperation op, const struct attn_rope_config *c,
                     int64_t head_dim);

/// Builds the dictionary attribute attn.fused carries as "rope": theta,
/// rotary_dim, layout, and "offset" when q_offset == k_offset != 0, else
/// "q_offset"/"k_offset" where non-zero; "strategy" unless NONE.
MlirAttribute attn_rope_config_to_attr(MlirContext ctx,
                                       const struct attn_rope_config *c,
                                       int64_t q_offset, int64_t k_offset,
                                       enum attn_rope_strategy strategy);

/// The strategy's spelling in IR ("fused", "split", "pre", "producer"; ""
/// for NONE).
const char *attn_rope_strategy_name(enum attn_rope_strategy s);

/// Parses a spelling of a strategy (not NONE). Returns false when unknown.
bool attn_rope_strategy_parse(MlirStringRef s, enum attn_rope_strategy *out);

/// The layout's spelling in IR ("rotate_half", "interleaved").
const char *attn_rope_layout_name(enum attn_rope_layout layout);

/// The modifier's spelling in "mods" ("scale", "softcap", "alibi", "gate",
/// "fn").
const char *attn_score_mod_name(enum attn_score_mod mod);

/// True for the ops that sit between qk and softmax: scale, causal, window,
/// alibi, softcap, gate, document, score_mod and mask_mod.
bool attn_is_score_mod(MlirOperation op);

/// The optional input's name ("gate", "q_segments", ...), as in IRDL.
const char *attn_fused_extra_name(enum attn_fused_extra role);

#endif // ATTN_ATTN_DIALECT_H
