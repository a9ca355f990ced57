//===- attn_dialect.c - Readers and builders of the attn dialect ----------===//
//
// Typed readers of attn.rope's and attn.fused's attributes and the builder of
// the fused "rope" dictionary. attn.fused's layout:
//
//   "attn.fused"(%q, %k, %v, [%gate], [%q_segments, %k_segments],
//                [%q_positions], [%k_positions]) {
//       operandSegmentSizes = array<i32: 1, 1, 1, g, qs, ks, qp, kp>,
//       scale = f64, causal = bool,                 // required
//       window = array<i64: left, right>,           // optional, -1: unbounded
//       alibi = f64 (max_bias), softcap = f64 (cap),
//       gate_block = i64,                           // with a gate operand
//       rope = {theta, rotary_dim, layout,          // optional
//               offset | q_offset, k_offset,
//               strategy = "fused" | "split" | "pre" | "producer"},
//       mods = ["scale", "softcap", "alibi", "gate", "fn"]}  // order applied
//   } ({score_fn}, {mask_fn})                       // each empty or 1 block
//
// The optional inputs keep that relative order; operandSegmentSizes says
// which are present (0 or 1 each). "mods" lists the non-commuting modifiers
// in program order; "scale" may be left out (then it is applied first), and
// an absent "mods" means scale, softcap, alibi, gate. "fn" is the score_fn
// region (the chain's attn.score_mod bodies, composed by attn-fuse): named
// in "mods" exactly when that region has a body, and then "mods" is always
// written. mask_fn holds the attn.mask_mod bodies, and-ed; masks commute,
// so it has no entry. With the unit attribute lse (attn-grad) it has a
// second result, the row log-sum-exp. attn.fused_grad (its backward) has
// the same attributes and regions; its operands end in out, lse and dout,
// and its operandSegmentSizes has three more entries (1, 1, 1) for them.
// The C verifier is in attn_verify.c.
//
//===----------------------------------------------------------------------===//
#include "dialects/attn/attn_dialect.h"
#include "dialects/attn/attn_internal.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <string.h>

static const char *const mod_names[ATTN_NUM_MODS] = {
    "scale", "softcap", "alibi", "gate", "fn"};
static const char *const extra_names[ATTN_NUM_EXTRAS] = {
    "gate", "q_segments", "k_segments", "q_positions", "k_positions"};

static const char *const strategy_names[] = {"", "fused", "split", "pre",
                                             "producer"};
#define NUM_STRATEGY_NAMES (sizeof strategy_names / sizeof *strategy_names)

const char *attn_rope_strategy_name(enum attn_rope_strategy s) {
  return (unsigned)s < NUM_STRATEGY_NAMES ? strategy_names[s] : "?";
}

bool attn_rope_strategy_parse(MlirStringRef s, enum attn_rope_strategy *out) {
  for (size_t i = 1; i < NUM_STRATEGY_NAMES; ++i)
    if (attn_str_eq(s, strategy_names[i])) {
      *out = (enum attn_rope_strategy)i;
      return true;
    }
  return false;
}

const char *attn_rope_layout_name(enum attn_rope_layout layout) {
  return layout == ATTN_ROPE_INTERLEAVED ? "interleaved" : "rotate_half";
}

const char *attn_score_mod_name(enum attn_score_mod mod) {
  return mod < ATTN_NUM_MODS ? mod_names[mod] : "?";
}

const char *attn_fused_extra_name(enum attn_fused_extra role) {
  return role < ATTN_NUM_EXTRAS ? extra_names[role] : "?";
}

static bool parse_layout(MlirStringRef s, enum attn_rope_layout *out) {
  if (attn_str_eq(s, "rotate_half"))
    *out = ATTN_ROPE_ROTATE_HALF;
  else if (attn_str_eq(s, "interleaved"))
    *out = ATTN_ROPE_INTERLEAVED;
  else
    return false;
  return true;
}

bool attn_rope_get_config(MlirOperation rope, struct attn_rope_config *out) {
  MlirStringRef layout;
  out->offset = 0;
  MlirAttribute off = attn_attr_get(rope, "offset");
  if (!mlirAttributeIsNull(off) && !attn_attr_i64(rope, "offset", &out->offset))
    return false;
  return attn_attr_f64(rope, "theta", &out->theta) &&
         attn_attr_i64(rope, "rotary_dim", &out->rotary_dim) &&
         attn_attr_str(rope, "layout", &layout) &&
         parse_layout(layout, &out->layout);
}

static MlirAttribute dict_get(MlirAttribute dict, const char *name) {
  return mlirDictionaryAttrGetElementByName(
      dict, mlirStringRefCreateFromCString(name));
}

static bool is_int(MlirAttribute a) {
  return !mlirAttributeIsNull(a) && mlirAttributeIsAInteger(a) &&
         !mlirAttributeIsABool(a);
}

static bool is_float(MlirAttribute a) {
  return !mlirAttributeIsNull(a) && mlirAttributeIsAFloat(a);
}

/// Reads an optional integer entry of d into *out (kept when absent).
static bool dict_opt_int(MlirAttribute d, const char *name, int64_t *out) {
  MlirAttribute a = dict_get(d, name);
  if (mlirAttributeIsNull(a))
    return true;
  if (!is_int(a))
    return false;
  *out = mlirIntegerAttrGetValueInt(a);
  return true;
}

static bool rope_from_dict(MlirAttribute d, struct attn_fused_config *out,
                           char *err, size_t errlen) {
  static const char *const known[] = {"theta",    "rotary_dim", "layout",
                                      "offset",   "q_offset",   "k_offset",
                                      "strategy"};
  MlirAttribute theta = dict_get(d, "theta");
  MlirAttribute dim = dict_get(d, "rotary_dim");
  MlirAttribute layout = dict_get(d, "layout");
  if (!is_float(theta) || !is_int(dim) || mlirAttributeIsNull(layout) ||
      !mlirAttributeIsAString(layout) ||
      !parse_layout(mlirStringAttrGetValue(layout), &out->rope.layout)) {
    snprintf(err, errlen,
             "rope must be a dictionary {theta: f64, rotary_dim: "
             "i64, layout: rotate_half or interleaved}");
    return false;
  }
  for (intptr_t i = 0, n = mlirDictionaryAttrGetNumElements(d); i < n; ++i) {
    MlirStringRef key =
        mlirIdentifierStr(mlirDictionaryAttrGetElement(d, i).name);
    size_t k = 0;
    while (k < sizeof known / sizeof *known && !attn_str_eq(key, known[k]))
      ++k;
    if (k == sizeof known / sizeof *known) {
      snprintf(err, errlen,
               "unknown rope entry '%.*s' (expected theta, "
               "rotary_dim, layout, offset, q_offset, k_offset or "
               "strategy)",
               (int)key.length, key.data);
      return false;
    }
  }
  out->rope.theta = mlirFloatAttrGetValueDouble(theta);
  out->rope.rotary_dim = mlirIntegerAttrGetValueInt(dim);
  out->rope.offset = 0;
  int64_t offset = 0;
  bool shared = !mlirAttributeIsNull(dict_get(d, "offset"));
  bool split = !mlirAttributeIsNull(dict_get(d, "q_offset")) ||
               !mlirAttributeIsNull(dict_get(d, "k_offset"));
  if (!dict_opt_int(d, "offset", &offset) ||
      !dict_opt_int(d, "q_offset", &out->q_offset) ||
      !dict_opt_int(d, "k_offset", &out->k_offset)) {
    snprintf(err, errlen, "rope offsets must be integers");
    return false;
  }
  if (shared && split) {
    snprintf(err, errlen,
             "rope offset applies to q and k; it cannot be "
             "combined with q_offset or k_offset");
    return false;
  }
  if (shared)
    out->q_offset = out->k_offset = offset;
  MlirAttribute strategy = dict_get(d, "strategy");
  out->rope_strategy = ATTN_ROPE_STRATEGY_NONE;
  if (mlirAttributeIsNull(strategy))
    return true;
  MlirStringRef sv = mlirAttributeIsAString(strategy)
                         ? mlirStringAttrGetValue(strategy)
                         : mlirStringRefCreateFromCString("");
  if (!attn_rope_strategy_parse(sv, &out->rope_strategy)) {
    snprintf(err, errlen,
             "rope strategy must be \"fused\", \"split\", \"pre\" or "
             "\"producer\", found %s%.*s%s",
             mlirAttributeIsAString(strategy) ? "\"" : "a non-string",
             (int)sv.length, sv.data,
             mlirAttributeIsAString(strategy) ? "\"" : "");
    return false;
  }
  return true;
}

/// Reads operandSegmentSizes into out->extra (IRDL has checked it sums to
/// the operand count and holds 0 or 1 for each optional input).
static bool read_extras(MlirOperation op, struct attn_fused_config *out,
                        char *err, size_t errlen) {
  MlirAttribute a = attn_attr_get(op, "operandSegmentSizes");
  bool grad = attn_op_is(op, ATTN_OP_FUSED_GRAD);
  int tail = grad ? ATTN_FUSED_GRAD_TAIL : 0;
  int entries = 3 + ATTN_NUM_EXTRAS + tail;
  if (mlirAttributeIsNull(a)) {
    if (!grad && mlirOperationGetNumOperands(op) == 3)
      return true; // only possible before IRDL verification
    snprintf(err, errlen, "%s needs operandSegmentSizes",
             grad ? ATTN_OP_FUSED_GRAD : ATTN_OP_FUSED);
    return false;
  }
  if (!mlirAttributeIsADenseI32Array(a) ||
      mlirDenseArrayGetNumElements(a) != entries) {
    snprintf(err, errlen,
             "operandSegmentSizes must be array<i32> with %d "
             "entries (q, k, v, gate, q_segments, k_segments, "
             "q_positions, k_positions%s)",
             entries, grad ? ", out, lse, dout" : "");
    return false;
  }
  int next = 0;
  for (int i = 0; i < entries; ++i) {
    int32_t n = mlirDenseI32ArrayGetElement(a, i);
    bool one = i < 3 || i >= 3 + ATTN_NUM_EXTRAS;
    if (n != (one ? 1 : n > 0)) {
      snprintf(err, errlen,
               "operandSegmentSizes entry %d must be %s, found "
               "%d",
               i, one ? "1" : "0 or 1", (int)n);
      return false;
    }
    if (i >= 3 && i < 3 + ATTN_NUM_EXTRAS && n)
      out->extra[i - 3] = next;
    next += n;
  }
  if (next != mlirOperationGetNumOperands(op)) {
    snprintf(err, errlen,
             "operandSegmentSizes adds up to %d operands, the op "
             "has %ld",
             next, (long)mlirOperationGetNumOperands(op));
    return false;
  }
  return true;
}

/// Reads "mods" into out->mods (scale first when not named).
static bool read_mods(MlirOperation op, struct attn_fused_config *out,
                      char *err, size_t errlen) {
  bool present[ATTN_NUM_MODS] = {true, out->has_softcap, out->has_alibi,
                                 out->has_gate, out->has_score_fn};
  MlirAttribute a = attn_attr_get(op, "mods");
  out->nmods = 0;
  if (mlirAttributeIsNull(a) && out->has_score_fn) {
    snprintf(err, errlen,
             "attn.fused with a score_fn body needs \"mods\", naming "
             "\"fn\" where the body applies");
    return false;
  }
  if (mlirAttributeIsNull(a)) {
    for (int m = 0; m < ATTN_NUM_MODS; ++m)
      if (present[m])
        out->mods[out->nmods++] = (enum attn_score_mod)m;
    return true;
  }
  if (!mlirAttributeIsAArray(a)) {
    snprintf(err, errlen, "mods must be an array of modifier names");
    return false;
  }
  bool seen[ATTN_NUM_MODS] = {false};
  enum attn_score_mod listed[ATTN_NUM_MODS];
  int nlisted = 0;
  for (intptr_t i = 0, n = mlirArrayAttrGetNumElements(a); i < n; ++i) {
    MlirAttribute e = mlirArrayAttrGetElement(a, i);
    int m = 0;
    if (mlirAttributeIsAString(e))
      while (m < ATTN_NUM_MODS &&
             !attn_str_eq(mlirStringAttrGetValue(e), mod_names[m]))
        ++m;
    if (!mlirAttributeIsAString(e) || m == ATTN_NUM_MODS) {
      snprintf(err, errlen,
               "mods entry %ld must be one of \"scale\", "
               "\"softcap\", \"alibi\", \"gate\", \"fn\"",
               (long)i);
      return false;
    }
    if (seen[m]) {
      snprintf(err, errlen, "mods names '%s' twice", mod_names[m]);
      return false;
    }
    if (!present[m] && m == ATTN_MOD_FN) {
      snprintf(err, errlen, "mods names 'fn' but the score_fn region is "
                            "empty");
      return false;
    }
    if (!present[m]) {
      snprintf(err, errlen, "mods names '%s' but the op has no '%s' attribute",
               mod_names[m], m == ATTN_MOD_GATE ? "gate_block" : mod_names[m]);
      return false;
    }
    seen[m] = true;
    listed[nlisted++] = (enum attn_score_mod)m;
  }
  for (int m = 1; m < ATTN_NUM_MODS; ++m)
    if (present[m] && !seen[m]) {
      snprintf(err, errlen,
               "mods must name every modifier present; '%s' is "
               "missing%s",
               mod_names[m],
               m == ATTN_MOD_FN ? " (the score_fn region has a body)" : "");
      return false;
    }
  if (!seen[ATTN_MOD_SCALE])
    out->mods[out->nmods++] = ATTN_MOD_SCALE;
  for (int i = 0; i < nlisted; ++i)
    out->mods[out->nmods++] = listed[i];
  return true;
}

/// Reads the optional modifier and mask attributes.
static bool read_options(MlirOperation op, struct attn_fused_config *out,
                         char *err, size_t errlen) {
  MlirAttribute w = attn_attr_get(op, "window");
  if (!mlirAttributeIsNull(w)) {
    if (!mlirAttributeIsADenseI64Array(w) ||
        mlirDenseArrayGetNumElements(w) != 2) {
      snprintf(err, errlen, "window must be array<i64: left, right>");
      return false;
    }
    out->has_window = true;
    out->window_left = mlirDenseI64ArrayGetElement(w, 0);
    out->window_right = mlirDenseI64ArrayGetElement(w, 1);
  }
  static const struct {
    const char *name;
    bool is_float;
  } opts[3] = {{"alibi", true}, {"softcap", true}, {"gate_block", false}};
  for (int i = 0; i < 3; ++i) {
    if (mlirAttributeIsNull(attn_attr_get(op, opts[i].name)))
      continue;
    bool ok = opts[i].is_float
                  ? attn_attr_f64(op, opts[i].name,
                                  i == 0 ? &out->alibi_max_bias : &out->softcap)
                  : attn_attr_i64(op, opts[i].name, &out->gate_block);
    if (!ok) {
      snprintf(err, errlen, "%s must be %s", opts[i].name,
               opts[i].is_float ? "a float" : "an integer");
      return false;
    }
    *(i == 0   ? &out->has_alibi
      : i == 1 ? &out->has_softcap
               : &out->has_gate) = true;
  }
  return true;
}

bool attn_fused_read(MlirOperation op, struct attn_fused_config *out, char *err,
                     size_t errlen) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < ATTN_NUM_EXTRAS; ++i)
    out->extra[i] = -1;
  if (!attn_attr_f64(op, "scale", &out->scale) ||
      !attn_attr_bool(op, "causal", &out->causal)) {
    snprintf(err, errlen, "attn.fused needs scale (f64) and causal (bool)");
    return false;
  }
  out->has_score_fn = !mlirBlockIsNull(attn_fused_score_fn(op));
  out->has_mask_fn = !mlirBlockIsNull(attn_fused_mask_fn(op));
  MlirAttribute rope = attn_attr_get(op, "rope");
  if (!mlirAttributeIsNull(rope)) {
    out->has_rope = true;
    if (!mlirAttributeIsADictionary(rope)) {
      snprintf(err, errlen,
               "rope must be a dictionary {theta: f64, "
               "rotary_dim: i64, layout: rotate_half or "
               "interleaved}");
      return false;
    }
    if (!rope_from_dict(rope, out, err, errlen))
      return false;
  }
  // attn.fused_decode has its own operands (attn_decode_read) and no gate.
  bool decode = attn_op_is(op, ATTN_OP_FUSED_DECODE);
  if (!read_options(op, out, err, errlen) ||
      (!decode && !read_extras(op, out, err, errlen)))
    return false;
  if (decode && out->has_gate) {
    snprintf(err, errlen, "attn.fused_decode has no gate (gate_block)");
    return false;
  }
  if (!read_mods(op, out, err, errlen))
    return false;
  MlirAttribute lse = attn_attr_get(op, ATTN_FUSED_LSE_ATTR);
  if (!mlirAttributeIsNull(lse)) {
    if (decode) {
      snprintf(err, errlen, "attn.fused_decode has no lse result");
      return false;
    }
    if (!mlirAttributeIsAUnit(lse) || attn_op_is(op, ATTN_OP_FUSED_GRAD)) {
      snprintf(err, errlen, "%s",
               attn_op_is(op, ATTN_OP_FUSED_GRAD)
                   ? "attn.fused_grad takes lse as an operand, not as an "
                     "attribute"
                   : "lse must be a unit attribute");
      return false;
    }
    out->lse = true;
  }
  const int *x = out->extra;
  out->document = x[ATTN_EXTRA_Q_SEGMENTS] >= 0;
  if (out->has_gate != (x[ATTN_EXTRA_GATE] >= 0)) {
    snprintf(err, errlen, "gate_block and a \"gate\" operand go together");
    return false;
  }
  if ((x[ATTN_EXTRA_Q_SEGMENTS] >= 0) != (x[ATTN_EXTRA_K_SEGMENTS] >= 0)) {
    snprintf(err, errlen,
             "document masking needs both q_segments and "
             "k_segments");
    return false;
  }
  bool qpos = x[ATTN_EXTRA_Q_POSITIONS] >= 0,
       kpos = x[ATTN_EXTRA_K_POSITIONS] >= 0;
  if ((qpos || kpos) && !out->has_rope) {
    snprintf(err, errlen, "q_positions and k_positions need a rope attribute");
    return false;
  }
  if ((qpos && out->q_offset) || (kpos && out->k_offset)) {
    snprintf(err, errlen,
             "a rope offset cannot be combined with explicit "
             "positions for the same tensor");
    return false;
  }
  return true;
}

/// The first block of op's region i, or a null block when op has no such
/// region or it is empty.
static MlirBlock region_body(MlirOperation op, intptr_t i) {
  if (mlirOperationGetNumRegions(op) <= i)
    return (MlirBlock){NULL};
  return mlirRegionGetFirstBlock(mlirOperationGetRegion(op, i));
}

intptr_t attn_fused_grad_out_index(MlirOperation grad) {
  struct attn_fused_config c;
  char err[256];
  memset(&c, 0, sizeof c);
  if (!read_extras(grad, &c, err, sizeof err))
    return -1;
  return mlirOperationGetNumOperands(grad) - ATTN_FUSED_GRAD_TAIL;
}

int attn_fused_grad_targets(MlirOperation grad, int *out, int max) {
  MlirAttribute a = attn_attr_get(grad, ATTN_FUSED_GRAD_GRADS_ATTR);
  if (mlirAttributeIsNull(a))
    return 0;
  if (!mlirAttributeIsAArray(a) || mlirArrayAttrGetNumElements(a) > max)
    return -1;
  int n = (int)mlirArrayAttrGetNumElements(a);
  for (int i = 0; i < n; ++i) {
    MlirAttribute e = mlirArrayAttrGetElement(a, i);
    if (!mlirAttributeIsAString(e))
      return -1;
    MlirStringRef s = mlirStringAttrGetValue(e);
    if (attn_str_eq(s, "gate")) {
      out[i] = ATTN_GRAD_GATE;
      continue;
    }
    // capture<i>: decimal digits, no sign, no leading zero but "0".
    if (s.length < 8 || s.length > 10 || strncmp(s.data, "capture", 7) ||
        (s.data[7] == '0' && s.length > 8))
      return -1;
    int c = 0;
    for (size_t j = 7; j < s.length; ++j) {
      if (s.data[j] < '0' || s.data[j] > '9')
        return -1;
      c = c * 10 + (s.data[j] - '0');
    }
    out[i] = c;
  }
  return n;
}

MlirBlock attn_fused_score_fn(MlirOperation fused) {
  return region_body(fused, 0);
}

MlirBlock attn_fused_mask_fn(MlirOperation fused) {
  return region_body(fused, 1);
}

bool attn_fused_get_config(MlirOperation fused, struct attn_fused_config *out) {
  char err[256];
  return attn_fused_read(fused, out, err, sizeof err);
}

bool attn_project_get_rope(MlirOperation project, bool *has,
                           struct attn_rope_config *out) {
  MlirAttribute rope = attn_attr_get(project, "rope");
  *has = !mlirAttributeIsNull(rope);
  if (!*has)
    return true;
  struct attn_fused_config c;
  char err[256];
  memset(&c, 0, sizeof c);
  if (!mlirAttributeIsADictionary(rope) ||
      !rope_from_dict(rope, &c, err, sizeof err) || c.q_offset != c.k_offset)
    return false;
  *out = c.rope;
  out->offset = c.q_offset;
  return true;
}

/// cache_layout and page_size of attn.fused_decode or attn.cache_append.
static bool read_cache_layout(MlirOperation op, enum attn_cache_layout *layout,
                              int64_t *page_size, char *err, size_t errlen) {
  MlirStringRef l;
  if (!attn_attr_str(op, "cache_layout", &l) ||
      !(attn_str_eq(l, "contiguous") || attn_str_eq(l, "paged"))) {
    snprintf(err, errlen, "cache_layout must be \"contiguous\" or \"paged\"");
    return false;
  }
  *layout = attn_str_eq(l, "paged") ? ATTN_CACHE_PAGED : ATTN_CACHE_CONTIGUOUS;
  MlirAttribute ps = attn_attr_get(op, "page_size");
  if (*layout == ATTN_CACHE_PAGED && !is_int(ps)) {
    snprintf(err, errlen, "a paged cache needs page_size, an integer");
    return false;
  }
  if (*layout == ATTN_CACHE_CONTIGUOUS && !mlirAttributeIsNull(ps)) {
    snprintf(err, errlen, "page_size applies to a paged cache only");
    return false;
  }
  *page_size = *layout == ATTN_CACHE_PAGED ? mlirIntegerAttrGetValueInt(ps) : 0;
  return true;
}

/// The block table (operand i, rank 2) of a paged cache k [P, Hk,
/// page_size, *]: *num_pages = P, *max_seq = its width times page_size.
static bool read_table(MlirOperation op, intptr_t i, const int64_t k[4],
                       int64_t *num_pages, int64_t *max_seq, char *err,
                       size_t errlen) {
  int64_t t[8];
  MlirType tt = mlirValueGetType(mlirOperationGetOperand(op, i));
  if (attn_static_shape(tt, t) != 2) {
    char ty[128];
    snprintf(err, errlen, "block_table must be a static rank-2 tensor, "
                          "found %s",
             attn_type_str(tt, ty, sizeof ty));
    return false;
  }
  *num_pages = k[0];
  *max_seq = t[1] * k[2];
  return true;
}

bool attn_decode_read(MlirOperation op, struct attn_decode_config *out,
                      char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (!attn_fused_read(op, &out->base, err, errlen))
    return false;
  MlirAttribute rope = attn_attr_get(op, "rope");
  if (out->base.has_rope &&
      (!mlirAttributeIsNull(dict_get(rope, "offset")) ||
       !mlirAttributeIsNull(dict_get(rope, "q_offset")) ||
       !mlirAttributeIsNull(dict_get(rope, "k_offset")))) {
    snprintf(err, errlen,
             "rope of attn.fused_decode takes no offset: a query row's "
             "position is its sequence's length - Nq + its row");
    return false;
  }
  if (!read_cache_layout(op, &out->layout, &out->page_size, err, errlen))
    return false;
  intptr_t n = mlirOperationGetNumOperands(op);
  out->has_table = n == 5;
  if (n != 4 && n != 5) {
    snprintf(err, errlen,
             "attn.fused_decode takes q, k_cache, v_cache, cache_seqlens and "
             "an optional block_table, found %ld operands",
             (long)n);
    return false;
  }
  if (out->layout == ATTN_CACHE_PAGED && !out->has_table) {
    snprintf(err, errlen, "a paged cache needs a block_table operand");
    return false;
  }
  if (out->layout == ATTN_CACHE_CONTIGUOUS && out->has_table) {
    snprintf(err, errlen, "a contiguous cache takes no block_table");
    return false;
  }
  int64_t q[8], k[8], v[8];
  if (attn_static_shape(mlirValueGetType(mlirOperationGetOperand(op, 0)), q) !=
          4 ||
      attn_static_shape(mlirValueGetType(mlirOperationGetOperand(op, 1)), k) !=
          4 ||
      attn_static_shape(mlirValueGetType(mlirOperationGetOperand(op, 2)), v) !=
          4) {
    snprintf(err, errlen, "q, k_cache and v_cache must be static rank-4 "
                          "tensors");
    return false;
  }
  out->batch = q[0];
  out->heads = q[1];
  out->seq_q = q[2];
  out->head_dim = q[3];
  out->kv_heads = k[1];
  out->value_dim = v[3];
  out->max_seq = k[2];
  return !out->has_table ||
         read_table(op, 4, k, &out->num_pages, &out->max_seq, err, errlen);
}

bool attn_cache_append_read(MlirOperation op, struct attn_append_config *out,
                            char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (!read_cache_layout(op, &out->layout, &out->page_size, err, errlen))
    return false;
  static const char *const known[] = {"cache_layout", "page_size", "rope",
                                      "operandSegmentSizes"};
  for (intptr_t i = 0, n = mlirOperationGetNumAttributes(op); i < n; ++i) {
    MlirStringRef key = mlirIdentifierStr(mlirOperationGetAttribute(op, i).name);
    size_t k = 0;
    while (k < sizeof known / sizeof *known && !attn_str_eq(key, known[k]))
      ++k;
    if (k == sizeof known / sizeof *known) {
      snprintf(err, errlen,
               "attn.cache_append has no attribute '%.*s' (it takes "
               "cache_layout, page_size and rope)",
               (int)key.length, key.data);
      return false;
    }
  }
  MlirAttribute rope = attn_attr_get(op, "rope");
  if (!mlirAttributeIsNull(rope)) {
    struct attn_fused_config f;
    memset(&f, 0, sizeof f);
    if (!mlirAttributeIsADictionary(rope)) {
      snprintf(err, errlen, "rope must be a dictionary {theta: f64, rotary_dim: "
                            "i64, layout: rotate_half or interleaved}");
      return false;
    }
    if (!rope_from_dict(rope, &f, err, errlen))
      return false;
    if (!mlirAttributeIsNull(dict_get(rope, "offset")) ||
        !mlirAttributeIsNull(dict_get(rope, "q_offset")) ||
        !mlirAttributeIsNull(dict_get(rope, "k_offset")) ||
        f.rope_strategy != ATTN_ROPE_STRATEGY_NONE) {
      snprintf(err, errlen,
               "rope of attn.cache_append takes theta, rotary_dim and layout: "
               "a new key's position is its sequence's length - N + its row");
      return false;
    }
    out->has_rope = true;
    out->rope = f.rope;
  }
  intptr_t n = mlirOperationGetNumOperands(op);
  out->has_table = out->layout == ATTN_CACHE_PAGED;
  if (n != 5 + out->has_table) {
    snprintf(err, errlen,
             "attn.cache_append takes k_cache, v_cache, cache_seqlens, %sk_new "
             "and v_new, found %ld operands",
             out->has_table ? "block_table (a paged cache), " : "", (long)n);
    return false;
  }
  int64_t k[8], v[8], kn[8];
  if (attn_static_shape(mlirValueGetType(mlirOperationGetOperand(op, 0)), k) != 4 ||
      attn_static_shape(mlirValueGetType(mlirOperationGetOperand(op, 1)), v) != 4 ||
      attn_static_shape(mlirValueGetType(mlirOperationGetOperand(
                            op, attn_append_k_new(out))), kn) != 4) {
    snprintf(err, errlen, "k_cache, v_cache, k_new and v_new must be static "
                          "rank-4 tensors");
    return false;
  }
  out->batch = kn[0];
  out->kv_heads = kn[1];
  out->seq_new = kn[2];
  out->head_dim = kn[3];
  out->value_dim = v[3];
  out->max_seq = k[2];
  return !out->has_table ||
         read_table(op, 3, k, &out->num_pages, &out->max_seq, err, errlen);
}

bool attn_cache_append_get_config(MlirOperation op,
                                  struct attn_append_config *out) {
  char err[256];
  return attn_cache_append_read(op, out, err, sizeof err);
}

bool attn_decode_get_config(MlirOperation op, struct attn_decode_config *out) {
  char err[256];
  return attn_decode_read(op, out, err, sizeof err);
}

static MlirNamedAttribute named(MlirContext ctx, const char *name,
                                MlirAttribute a) {
  return mlirNamedAttributeGet(
      mlirIdentifierGet(ctx, mlirStringRefCreateFromCString(name)), a);
}

MlirAttribute attn_rope_config_to_attr(MlirContext ctx,
                                       const struct attn_rope_config *c,
                                       int64_t q_offset, int64_t k_offset,
                                       enum attn_rope_strategy strategy) {
  MlirType i64 = mlirIntegerTypeGet(ctx, 64);
  MlirNamedAttribute elems[6];
  int n = 0;
  elems[n++] = named(
      ctx, "theta", mlirFloatAttrDoubleGet(ctx, mlirF64TypeGet(ctx), c->theta));
  elems[n++] = named(ctx, "rotary_dim", mlirIntegerAttrGet(i64, c->rotary_dim));
  elems[n++] =
      named(ctx, "layout",
            mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(
                                       attn_rope_layout_name(c->layout))));
  if (q_offset == k_offset && q_offset != 0) {
    elems[n++] = named(ctx, "offset", mlirIntegerAttrGet(i64, q_offset));
  } else {
    if (q_offset)
      elems[n++] = named(ctx, "q_offset", mlirIntegerAttrGet(i64, q_offset));
    if (k_offset)
      elems[n++] = named(ctx, "k_offset", mlirIntegerAttrGet(i64, k_offset));
  }
  if (strategy != ATTN_ROPE_STRATEGY_NONE)
    elems[n++] = named(ctx, "strategy",
                       mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(
                                                  attn_rope_strategy_name(
                                                      strategy))));
  return mlirDictionaryAttrGet(ctx, n, elems);
}
