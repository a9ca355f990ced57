//===- attn_dialect.h - Op names and readers of the attn dialect ----------===//
#ifndef ATTN_ATTN_DIALECT_H
#define ATTN_ATTN_DIALECT_H

#include "dialects/dialects.h"

#define ATTN_OP_ROPE "attn.rope"
#define ATTN_OP_QK "attn.qk"
#define ATTN_OP_SCALE "attn.scale"
#define ATTN_OP_CAUSAL "attn.causal"
#define ATTN_OP_SOFTMAX "attn.softmax"
#define ATTN_OP_PV "attn.pv"
#define ATTN_OP_FUSED "attn.fused"

/// RoPE layouts: rotate-half pairs feature i with i + rotary_dim/2 (Llama);
/// interleaved pairs 2i with 2i + 1 (GPT-J).
enum attn_rope_layout { ATTN_ROPE_ROTATE_HALF, ATTN_ROPE_INTERLEAVED };

/// A RoPE configuration as carried by attn.rope and attn.fused's "rope".
struct attn_rope_config {
  double theta;
  int64_t rotary_dim;
  enum attn_rope_layout layout;
};

/// What an attn.fused op computes, read from its attributes.
struct attn_fused_config {
  double scale;
  bool causal;
  bool has_rope;
  struct attn_rope_config rope;
};

/// Reads an attn.rope op's attributes. Returns false (no diagnostic) when
/// they are missing or malformed; the verifier reports those.
bool attn_rope_get_config(MlirOperation rope, struct attn_rope_config *out);

/// Reads an attn.fused op's attributes; false as above.
bool attn_fused_get_config(MlirOperation fused, struct attn_fused_config *out);

/// Checks a RoPE configuration against a head dim; emits an error at op and
/// returns false when theta, rotary_dim or the head dim are out of range.
bool attn_rope_check(MlirOperation op, const struct attn_rope_config *c,
                     int64_t head_dim);

/// Builds the dictionary attribute attn.fused carries as "rope".
MlirAttribute attn_rope_config_to_attr(MlirContext ctx,
                                       const struct attn_rope_config *c);

/// The layout's spelling in IR ("rotate_half", "interleaved").
const char *attn_rope_layout_name(enum attn_rope_layout layout);

#endif // ATTN_ATTN_DIALECT_H
