//===- gen_program.c - Random attention programs, well- and ill-formed ----===//
//
// A case is drawn from (seed, index) alone, so any case can be rebuilt on
// its own: shapes (lengths that are not multiples of the tiles, GQA, f32,
// f16 or bf16), which blocks are present (every single block and every pair
// first, then random subsets), their parameters, the order of the score
// modifiers (random; scales adjacent), the argument order and the tile
// options. With --bodies a case may also carry attn.score_mod ops (one or
// two adjacent, composed) and attn.mask_mod ops drawn from templates with a
// parameter (softcap, a distance penalty, a head scale, a parity bonus; a
// prefix-LM, a band, a stripe and a per-head mask); the reference computes
// each template in C, so the compiler's evaluator is not its own oracle.
// The program is written as generic MLIR text, the way a user writes it;
// the reference problem is derived from the case, not from what the
// compiler makes of the program. Ill-formed cases include bodies the body
// checker must reject and score_mods attn-fuse cannot fuse.
//
//===----------------------------------------------------------------------===//
#include "tools/attn-fuzz/attn_fuzz.h"
#include "tools/attn-fuzz/gen_draws.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const elem_names[3] = {"f32", "f16", "bf16"};
static const char *const block_names[FB_ORDER_CODES] = {
    "rope",  "scale",   "causal",   "window",   "alibi",
    "softcap", "gate",  "document", "score_mod", "mask_mod"};
static const char *const score_body_names[FSB_COUNT] = {"softcap", "distance",
                                                        "head", "parity"};
static const char *const mask_body_names[FMB_COUNT] = {"prefix", "band",
                                                       "stripe", "head"};

/// Which blocks case index uses: the 8 singles, the 28 pairs, then random.
static void choose_blocks(struct attn_rng *r, uint64_t index, bool has[]) {
  memset(has, 0, sizeof(bool) * FB_COUNT);
  if (index < FB_COUNT) {
    has[index] = true;
    return;
  }
  uint64_t pair = index - FB_COUNT;
  for (int a = 0; a < FB_COUNT; ++a)
    for (int b = a + 1; b < FB_COUNT; ++b)
      if (pair-- == 0) {
        has[a] = has[b] = true;
        return;
      }
  for (int i = 0; i < FB_COUNT; ++i)
    has[i] = coin(r, 0.45);
}

static void shuffle(struct attn_rng *r, int *v, int n) {
  for (int i = n - 1; i > 0; --i) {
    int j = (int)below(r, i + 1), t = v[i];
    v[i] = v[j];
    v[j] = t;
  }
}

static bool is_mask_code(int code) {
  return code == FB_CAUSAL || code == FB_WINDOW || code == FB_DOCUMENT ||
         code == FB_MASK_BODY;
}

/// Inserts code at a random place of seq[0 .. *n).
static void insert_anywhere(struct attn_rng *r, int *seq, int *n, int code) {
  int at = (int)below(r, *n + 1);
  memmove(seq + at + 1, seq + at, sizeof *seq * (size_t)(*n - at));
  seq[at] = code;
  ++*n;
}

/// The modifier ops in a random program order: the non-commuting ones
/// (the scale group as one, the score bodies as one) shuffled, masks
/// inserted anywhere (also between two score bodies, which stay adjacent
/// otherwise), and a second scale op right after the first, possibly
/// behind masks.
static void choose_order(struct attn_rng *r, struct fuzz_case *c) {
  int seq[12], n = 0;
  static const int ordered[4] = {FB_SCALE, FB_SOFTCAP, FB_ALIBI, FB_GATE};
  for (int i = 0; i < 4; ++i)
    if (c->has[ordered[i]])
      seq[n++] = ordered[i];
  if (c->nscore_bodies > 0)
    seq[n++] = FB_SCORE_BODY;
  shuffle(r, seq, n);
  for (int i = 0; i < n && c->nscore_bodies == 2; ++i)
    if (seq[i] == FB_SCORE_BODY) {
      memmove(seq + i + 1, seq + i, sizeof *seq * (size_t)(n - i));
      ++n;
      break;
    }
  static const int masks[3] = {FB_CAUSAL, FB_WINDOW, FB_DOCUMENT};
  for (int i = 0; i < 3; ++i)
    if (c->has[masks[i]])
      insert_anywhere(r, seq, &n, masks[i]);
  for (int i = 0; i < c->nmask_bodies; ++i)
    insert_anywhere(r, seq, &n, FB_MASK_BODY);
  if (c->nscale == 2) {
    int at = 0;
    while (seq[at] != FB_SCALE)
      ++at;
    ++at;
    while (at < n && coin(r, 0.5) && is_mask_code(seq[at]))
      ++at;
    memmove(seq + at + 1, seq + at, sizeof *seq * (size_t)(n - at));
    seq[at] = FB_SCALE;
    ++n;
  }
  memcpy(c->order, seq, sizeof *seq * (size_t)n);
  c->norder = n;
}

static void choose_params(struct attn_rng *r, struct fuzz_case *c) {
  static const int64_t thetas[4] = {10000, 500000, 100, 1000000};
  c->theta = (double)pick(r, thetas, 4);
  c->rotary_dim = 2 * (1 + below(r, c->d / 2));
  c->interleaved = coin(r, 0.5);
  if (c->has[FB_ROPE]) {
    c->qpos = (enum fuzz_positions)below(r, 3);
    c->kpos = (enum fuzz_positions)below(r, 3);
  }
  c->q_offset = c->qpos == FP_OFFSET ? 1 + below(r, 300) : 0;
  c->k_offset = c->kpos == FP_OFFSET ? 1 + below(r, 300) : 0;
  c->nscale = c->has[FB_SCALE] ? 1 + coin(r, 0.3) : 0;
  for (int i = 0; i < 2; ++i)
    c->scale[i] = coin(r, 0.3) ? 1.0 / sqrt((double)c->d)
                               : 0.05 + 0.95 * attn_rng_uniform(r);
  c->window_left = coin(r, 0.2) ? -1 : below(r, 48);
  c->window_right = coin(r, 0.3) ? -1 : below(r, 48);
  c->max_bias = coin(r, 0.5) ? 8.0 : 0.5 + 15.5 * attn_rng_uniform(r);
  c->cap = coin(r, 0.3) ? 1.0 + 4.0 * attn_rng_uniform(r)
                        : 5.0 + 45.0 * attn_rng_uniform(r);
  static const int64_t blocks[5] = {1, 3, 16, 64, 7};
  c->gate_block = coin(r, 0.2) ? 1 + below(r, 40) : pick(r, blocks, 5);
}

/// Function arguments: q, k, v and the inputs the blocks need, sometimes
/// in a shuffled order.
static void choose_args(struct attn_rng *r, struct fuzz_case *c) {
  c->nargs = 0;
  for (int role = 0; role < 3; ++role)
    c->args[c->nargs++] = role;
  if (c->has[FB_GATE])
    c->args[c->nargs++] = 3;
  if (c->has[FB_DOCUMENT]) {
    c->args[c->nargs++] = 4;
    c->args[c->nargs++] = 5;
  }
  if (c->has[FB_ROPE] && c->qpos == FP_EXPLICIT)
    c->args[c->nargs++] = 6;
  if (c->has[FB_ROPE] && c->kpos == FP_EXPLICIT)
    c->args[c->nargs++] = 7;
  if (coin(r, 0.3))
    shuffle(r, c->args, c->nargs);
}

/// The bodies of a case with --bodies: each kind present with probability
/// one half, one or two of it, templates and parameters at random.
static void choose_bodies(struct attn_rng *r, struct fuzz_case *c) {
  if (coin(r, 0.5)) {
    c->nscore_bodies = 1 + coin(r, 0.3);
    for (int i = 0; i < c->nscore_bodies; ++i) {
      c->score_body[i] = (int)below(r, FSB_COUNT);
      static const double lo[FSB_COUNT] = {2.0, 0.01, 0.05, 0.1};
      static const double hi[FSB_COUNT] = {30.0, 0.5, 0.5, 2.0};
      int t = c->score_body[i];
      // An f32 constant in the body: the reference uses the same value.
      c->score_param[i] =
          (double)(float)(lo[t] + (hi[t] - lo[t]) * attn_rng_uniform(r));
    }
  }
  if (coin(r, 0.5)) {
    c->nmask_bodies = 1 + coin(r, 0.3);
    for (int i = 0; i < c->nmask_bodies; ++i) {
      c->mask_body[i] = (int)below(r, FMB_COUNT);
      static const int64_t lo[FMB_COUNT] = {1, 0, 2, 0};
      static const int64_t span[FMB_COUNT] = {16, 25, 4, 1};
      int t = c->mask_body[i];
      c->mask_param[i] = lo[t] + below(r, span[t]);
    }
  }
}

static void draw(struct attn_rng *r, uint64_t index, bool bodies,
                 struct fuzz_case *c) {
  memset(c, 0, sizeof *c);
  double e = attn_rng_uniform(r);
  c->elem = e < 0.5 ? 0 : e < 0.75 ? 1 : 2;
  c->b = 1 + below(r, 2);
  c->hk = 1 + below(r, 2);
  c->h = c->hk * (1 + below(r, 3));
  c->n = coin(r, 0.15) ? 1 + below(r, 8) : 1 + below(r, 96);
  c->m = coin(r, 0.6) ? c->n : 1 + below(r, 96);
  static const int64_t dims[6] = {4, 8, 12, 16, 32, 64};
  c->d = pick(r, dims, 6);
  static const int64_t vdims[5] = {4, 8, 16, 24, 40};
  c->dv = coin(r, 0.6) ? c->d : pick(r, vdims, 5);
  choose_blocks(r, index, c->has);
  choose_params(r, c);
  if (bodies)
    choose_bodies(r, c);
  choose_order(r, c);
  choose_args(r, c);
  static const int64_t tiles[5] = {0, 8, 16, 32, 64};
  c->block_m = (int)pick(r, tiles, 5);
  c->block_n = (int)pick(r, tiles, 5);
}

void attn_fuzz_make_case(uint64_t seed, uint64_t index, bool bodies,
                         struct fuzz_case *c) {
  struct attn_rng r;
  attn_rng_seed(&r, mix(seed ^ mix(index)));
  draw(&r, index, bodies, c);
}

void attn_fuzz_make_invalid(uint64_t seed, uint64_t index,
                            struct fuzz_case *c) {
  struct attn_rng r;
  attn_rng_seed(&r, mix(~seed ^ mix(index)));
  draw(&r, FB_COUNT + 28 + index, false, c);
  c->defect = (enum fuzz_defect)(1 + below(&r, FD_COUNT - 1));
  c->bad_attribute = (int)below(&r, 5);
  // Make sure the blocks the defect needs are there.
  switch (c->defect) {
  case FD_GATE_HEADS:
    c->has[FB_GATE] = true;
    break;
  case FD_SEGMENTS_LENGTH:
    c->has[FB_DOCUMENT] = true;
    break;
  case FD_DUPLICATE_MODIFIER:
    c->has[FB_CAUSAL] = true;
    break;
  case FD_SPLIT_SCALES:
    c->has[FB_SCALE] = c->has[FB_SOFTCAP] = true;
    c->nscale = 2;
    break;
  case FD_BAD_ATTRIBUTE: {
    static const int need[5] = {FB_WINDOW, FB_SOFTCAP, FB_ALIBI, FB_SCALE,
                                FB_GATE};
    c->has[need[c->bad_attribute]] = true;
    if (c->bad_attribute == 3 && c->nscale == 0)
      c->nscale = 1;
    break;
  }
  case FD_POSITIONS_AND_OFFSET:
  case FD_ROTARY_DIM:
    c->has[FB_ROPE] = true;
    c->qpos = c->defect == FD_POSITIONS_AND_OFFSET ? FP_EXPLICIT : c->qpos;
    break;
  case FD_BODY_OP:
  case FD_BODY_F64:
  case FD_BODY_SIGNATURE:
  case FD_BODY_CONST_INDEX:
    // The first score body is the defective one (softcap: it has a tanh).
    c->nscore_bodies = 1;
    c->score_body[0] = FSB_SOFTCAP;
    c->score_param[0] = 8.0;
    break;
  case FD_BODY_MASK_YIELD:
    c->nmask_bodies = 1;
    c->mask_body[0] = FMB_PREFIX;
    c->mask_param[0] = 4;
    break;
  case FD_SCORE_MODS_APART:
    c->has[FB_SOFTCAP] = true;
    c->nscore_bodies = 2;
    c->score_body[0] = FSB_DISTANCE;
    c->score_body[1] = FSB_HEAD;
    c->score_param[0] = c->score_param[1] = 0.25;
    break;
  default:
    break;
  }
  if (c->has[FB_SCALE] && c->nscale == 0)
    c->nscale = 1;
  choose_order(&r, c);
  if (c->defect == FD_SPLIT_SCALES) {
    // scale, softcap, scale: the second scale is not adjacent.
    int n = 0;
    c->order[n++] = FB_SCALE;
    c->order[n++] = FB_SOFTCAP;
    c->order[n++] = FB_SCALE;
    c->norder = n;
    c->has[FB_ALIBI] = c->has[FB_GATE] = false;
    c->has[FB_CAUSAL] = c->has[FB_WINDOW] = c->has[FB_DOCUMENT] = false;
  }
  if (c->defect == FD_SCORE_MODS_APART) {
    // score_mod, softcap, score_mod: one score_fn cannot hold both.
    int n = 0;
    c->order[n++] = FB_SCORE_BODY;
    c->order[n++] = FB_SOFTCAP;
    c->order[n++] = FB_SCORE_BODY;
    c->norder = n;
    c->nscale = 0;
    c->has[FB_SCALE] = c->has[FB_ALIBI] = c->has[FB_GATE] = false;
    c->has[FB_CAUSAL] = c->has[FB_WINDOW] = c->has[FB_DOCUMENT] = false;
  }
  choose_args(&r, c);
  if (c->defect == FD_BODY_CONST_INDEX)
    c->args[c->nargs++] = 8; // the capture the body reads
}

const char *attn_fuzz_expected_error(const struct fuzz_case *c) {
  static const char *const bad[5] = {
      "window left must be -1", "softcap cap must be positive",
      "alibi max_bias must be positive", "scale must be positive",
      "gate block_size must be positive"};
  switch (c->defect) {
  case FD_ROPE_AFTER_QK:
    return "attn.rope must rotate q or k before attn.qk";
  case FD_PV_BEFORE_SOFTMAX:
    return "probabilities of attn.pv must come from attn.softmax";
  case FD_SOFTMAX_AFTER_PV:
    return "attn.softmax applies to scores from attn.qk, found the result of "
           "'attn.pv'";
  case FD_MODIFIER_AFTER_SOFTMAX:
    return "found the result of 'attn.softmax'";
  case FD_KV_HEADS:
    return "are not a multiple of k heads";
  case FD_GATE_HEADS:
    return "gate bias shape must be";
  case FD_SEGMENTS_LENGTH:
    return "q_segments shape must be";
  case FD_DUPLICATE_MODIFIER:
    return "attn.causal may appear once per attention";
  case FD_SPLIT_SCALES:
    return "scales must be adjacent";
  case FD_BAD_ATTRIBUTE:
    return bad[c->bad_attribute];
  case FD_POSITIONS_AND_OFFSET:
    return "rope offset cannot be combined with explicit positions";
  case FD_ROTARY_DIM:
    return "exceeds head dim";
  case FD_BODY_OP:
    return "'math.atan' cannot appear in the body of attn.score_mod";
  case FD_BODY_F64:
    return "in the body of attn.score_mod makes a value of type f64";
  case FD_BODY_MASK_YIELD:
    return "the body of attn.mask_mod must yield one i1";
  case FD_BODY_SIGNATURE:
    return "the body of attn.score_mod must take (f32 score, index b, index "
           "h, index q, index kv), found (index, index, index, index)";
  case FD_BODY_CONST_INDEX:
    return "reads index 7 of dimension 0 of tensor<7xf32>, outside [0, 7)";
  case FD_SCORE_MODS_APART:
    return "attn.score_mod ops must be adjacent in the chain to fuse; found "
           "'attn.softcap' between two";
  default:
    return "";
  }
}

//===-- Program text ------------------------------------------------------===//

struct types {
  char q[96], k[96], v[96], s[96], o[96], g[96], qs[64], ks[64], qp[64], kp[64];
};

static void make_types(const struct fuzz_case *c, struct types *t) {
  const char *e = elem_names[c->elem];
  long long b = c->b, h = c->h, n = c->n, m = c->m;
  long long hk = c->defect == FD_KV_HEADS ? h + 1 : c->hk;
  long long gh = c->defect == FD_GATE_HEADS ? h + 1 : h;
  long long sn = c->defect == FD_SEGMENTS_LENGTH ? n + 1 : n;
  long long nb = (m + c->gate_block - 1) / c->gate_block;
  snprintf(t->q, sizeof t->q, "tensor<%lldx%lldx%lldx%lldx%s>", b, h, n,
           (long long)c->d, e);
  snprintf(t->k, sizeof t->k, "tensor<%lldx%lldx%lldx%lldx%s>", b, hk, m,
           (long long)c->d, e);
  snprintf(t->v, sizeof t->v, "tensor<%lldx%lldx%lldx%lldx%s>", b, hk, m,
           (long long)c->dv, e);
  snprintf(t->s, sizeof t->s, "tensor<%lldx%lldx%lldx%lldx%s>", b, h, n, m, e);
  snprintf(t->o, sizeof t->o, "tensor<%lldx%lldx%lldx%lldx%s>", b, h, n,
           (long long)c->dv, e);
  snprintf(t->g, sizeof t->g, "tensor<%lldx%lldx%lldx%lldxf32>", b, gh, n,
           c->gate_block > 0 ? nb : 1);
  snprintf(t->qs, sizeof t->qs, "tensor<%lldx%lldxi32>", b, sn);
  snprintf(t->ks, sizeof t->ks, "tensor<%lldx%lldxi32>", b, m);
  snprintf(t->qp, sizeof t->qp, "tensor<%lldx%lldxi32>", b, n);
  snprintf(t->kp, sizeof t->kp, "tensor<%lldx%lldxi32>", b, m);
}

static void emit_rope(struct attn_strbuf *b, const struct fuzz_case *c,
                      const char *res, const char *x, const char *ty, bool keys,
                      const struct types *t) {
  enum fuzz_positions pos = keys ? c->kpos : c->qpos;
  int64_t offset = keys ? c->k_offset : c->q_offset;
  int64_t dim = c->defect == FD_ROTARY_DIM ? c->d + 2 : c->rotary_dim;
  if (pos == FP_EXPLICIT)
    attn_strbuf_printf(b, "  %s = \"attn.rope\"(%s, %s) {", res, x,
                       keys ? "%kp" : "%qp");
  else
    attn_strbuf_printf(b, "  %s = \"attn.rope\"(%s) {", res, x);
  attn_strbuf_printf(b,
                     "theta = %.17e : f64, rotary_dim = %lld : i64, layout "
                     "= \"%s\"",
                     c->theta, (long long)dim,
                     c->interleaved ? "interleaved" : "rotate_half");
  if (pos == FP_OFFSET)
    attn_strbuf_printf(b, ", offset = %lld : i64", (long long)offset);
  if (pos == FP_EXPLICIT && !keys && c->defect == FD_POSITIONS_AND_OFFSET)
    attn_strbuf_printf(b, ", offset = 3 : i64");
  attn_strbuf_printf(b, "} : (%s%s%s) -> %s\n", ty,
                     pos == FP_EXPLICIT ? ", " : "",
                     pos == FP_EXPLICIT ? (keys ? t->kp : t->qp) : "", ty);
}

/// One modifier op: %s<i+1> = op(%s<i>).
static void emit_modifier(struct attn_strbuf *b, const struct fuzz_case *c,
                          int kind, int i, int scale_no,
                          const struct types *t) {
  const char *s = t->s;
  bool bad = c->defect == FD_BAD_ATTRIBUTE;
  attn_strbuf_printf(b, "  %%s%d = \"attn.%s\"(%%s%d", i + 1, block_names[kind],
                     i);
  switch (kind) {
  case FB_SCALE:
    attn_strbuf_printf(b, ") {scale = %.17e : f64} : (%s) -> %s\n",
                       bad && c->bad_attribute == 3 ? -c->scale[scale_no]
                                                    : c->scale[scale_no],
                       s, s);
    break;
  case FB_CAUSAL:
    attn_strbuf_printf(b, ") : (%s) -> %s\n", s, s);
    break;
  case FB_WINDOW:
    attn_strbuf_printf(b,
                       ") {left = %lld : i64, right = %lld : i64} : (%s) "
                       "-> %s\n",
                       bad && c->bad_attribute == 0 ? -2 - c->window_left - 1
                                                    : (long long)c->window_left,
                       (long long)c->window_right, s, s);
    break;
  case FB_ALIBI:
    attn_strbuf_printf(
        b, ") {max_bias = %.17e : f64} : (%s) -> %s\n",
        bad && c->bad_attribute == 2 ? -c->max_bias : c->max_bias, s, s);
    break;
  case FB_SOFTCAP:
    attn_strbuf_printf(b, ") {cap = %.17e : f64} : (%s) -> %s\n",
                       bad && c->bad_attribute == 1 ? 0.0 : c->cap, s, s);
    break;
  case FB_GATE:
    attn_strbuf_printf(b, ", %%g) {block_size = %lld : i64} : (%s, %s) -> %s\n",
                       bad && c->bad_attribute == 4 ? 0LL
                                                    : (long long)c->gate_block,
                       s, t->g, s);
    break;
  case FB_DOCUMENT:
    attn_strbuf_printf(b, ", %%qs, %%ks) : (%s, %s, %s) -> %s\n", s, t->qs,
                       t->ks, s);
    break;
  }
}

/// The ops of score body template t with parameter p; names start with z
/// (unique in the function), the score is zx, the indices zb, zh, zq, zkv;
/// the value is zy. Defects of ill-formed cases change them.
static void emit_score_ops(struct attn_strbuf *b, const char *z, int t,
                           double p, enum fuzz_defect defect) {
#define L(...) attn_strbuf_printf(b, __VA_ARGS__)
  switch (t) {
  case FSB_SOFTCAP:
    L("    %sc = arith.constant %.9e : f32\n", z, p);
    if (defect == FD_BODY_F64) {
      L("    %sw = arith.extf %sx : f32 to f64\n", z, z);
      L("    %sn = arith.truncf %sw : f64 to f32\n", z, z);
      L("    %sr = arith.divf %sn, %sc : f32\n", z, z, z);
    } else if (defect == FD_BODY_SIGNATURE) {
      L("    %sr = arith.divf %sc, %sc : f32\n", z, z, z);
    } else {
      L("    %sr = arith.divf %sx, %sc : f32\n", z, z, z);
    }
    L("    %st = math.%s %sr : f32\n", z, defect == FD_BODY_OP ? "atan" : "tanh",
      z);
    L("    %sy = arith.mulf %st, %sc : f32\n", z, z, z);
    break;
  case FSB_DISTANCE:
    L("    %sqi = arith.index_cast %sq : index to i64\n", z, z);
    L("    %ski = arith.index_cast %skv : index to i64\n", z, z);
    L("    %sd = arith.subi %sqi, %ski : i64\n", z, z, z);
    L("    %sdf = arith.sitofp %sd : i64 to f32\n", z, z);
    L("    %sa = math.absf %sdf : f32\n", z, z);
    L("    %sc = arith.constant %.9e : f32\n", z, p);
    L("    %sm = arith.mulf %sc, %sa : f32\n", z, z, z);
    L("    %sy = arith.subf %sx, %sm : f32\n", z, z, z);
    break;
  case FSB_HEAD:
    L("    %shi = arith.index_castui %sh : index to i32\n", z, z);
    L("    %shf = arith.uitofp %shi : i32 to f32\n", z, z);
    L("    %sc = arith.constant %.9e : f32\n", z, p);
    L("    %sone = arith.constant 1.0 : f32\n", z);
    L("    %sf = math.fma %shf, %sc, %sone : f32\n", z, z, z, z);
    L("    %sbi = arith.index_cast %sb : index to i32\n", z, z);
    L("    %sbf = arith.sitofp %sbi : i32 to f32\n", z, z);
    L("    %se = arith.constant 0.125 : f32\n", z);
    L("    %sbo = arith.mulf %sbf, %se : f32\n", z, z, z);
    L("    %ss = arith.mulf %sx, %sf : f32\n", z, z, z);
    L("    %sy = arith.addf %ss, %sbo : f32\n", z, z, z);
    break;
  default: // FSB_PARITY
    L("    %ss2 = arith.addi %sq, %skv : index\n", z, z, z);
    L("    %stwo = arith.constant 2 : index\n", z);
    L("    %sr = arith.remui %ss2, %stwo : index\n", z, z, z);
    L("    %szero = arith.constant 0 : index\n", z);
    L("    %seven = arith.cmpi eq, %sr, %szero : index\n", z, z, z);
    L("    %sc = arith.constant %.9e : f32\n", z, p);
    L("    %sa = arith.addf %sx, %sc : f32\n", z, z, z);
    L("    %sn = arith.negf %sc : f32\n", z, z);
    L("    %sm = arith.maximumf %sx, %sn : f32\n", z, z, z);
    L("    %sy = arith.select %seven, %sa, %sm : f32\n", z, z, z, z);
    break;
  }
}

/// The ops of mask body template t with parameter p (value zok).
static void emit_mask_ops(struct attn_strbuf *b, const char *z, int t,
                          int64_t p) {
  switch (t) {
  case FMB_PREFIX:
    L("    %sp = arith.constant %lld : index\n", z, (long long)p);
    L("    %spre = arith.cmpi ult, %skv, %sp : index\n", z, z, z);
    L("    %scau = arith.cmpi ule, %skv, %sq : index\n", z, z, z);
    L("    %sok = arith.ori %spre, %scau : i1\n", z, z, z);
    break;
  case FMB_BAND:
    L("    %sqi = arith.index_cast %sq : index to i64\n", z, z);
    L("    %ski = arith.index_cast %skv : index to i64\n", z, z);
    L("    %sd = arith.subi %sqi, %ski : i64\n", z, z, z);
    L("    %sa = math.absi %sd : i64\n", z, z);
    L("    %sw = arith.constant %lld : i64\n", z, (long long)p);
    L("    %sok = arith.cmpi sle, %sa, %sw : i64\n", z, z, z);
    break;
  case FMB_STRIPE:
    L("    %sp = arith.constant %lld : index\n", z, (long long)p);
    L("    %sr = arith.remui %skv, %sp : index\n", z, z, z);
    L("    %szero = arith.constant 0 : index\n", z);
    L("    %snz = arith.cmpi ne, %sr, %szero : index\n", z, z, z);
    L("    %sdg = arith.cmpi eq, %skv, %sq : index\n", z, z, z);
    L("    %sok = arith.ori %snz, %sdg : i1\n", z, z, z);
    break;
  default: // FMB_HEAD
    L("    %shi = arith.index_castui %sh : index to i32\n", z, z);
    L("    %sone = arith.constant 1 : i32\n", z);
    L("    %slo = arith.andi %shi, %sone : i32\n", z, z, z);
    L("    %szero = arith.constant 0 : i32\n", z);
    L("    %sev = arith.cmpi eq, %slo, %szero : i32\n", z, z, z);
    L("    %scau = arith.cmpi ule, %skv, %sq : index\n", z, z, z);
    L("    %sok = arith.ori %sev, %scau : i1\n", z, z, z);
    break;
  }
}

/// attn.score_mod (score) or attn.mask_mod op i: %s<i+1> = op(%s<i>) with
/// body number no of its kind; the first body carries c's body defect.
static void emit_body_op(struct attn_strbuf *b, const struct fuzz_case *c,
                         bool score, int i, int no, const struct types *t) {
  char z[16];
  snprintf(z, sizeof z, "%%z%d", i);
  enum fuzz_defect defect = no == 0 ? c->defect : FD_NONE;
  L("  %%s%d = \"attn.%s\"(%%s%d) ({\n", i + 1,
    score ? "score_mod" : "mask_mod", i);
  if (score && defect == FD_BODY_SIGNATURE)
    L("  ^bb0(%sb: index, %sh: index, %sq: index, %skv: index):\n", z, z, z,
      z);
  else if (score)
    L("  ^bb0(%sx: f32, %sb: index, %sh: index, %sq: index, %skv: index):\n",
      z, z, z, z, z);
  else
    L("  ^bb0(%sb: index, %sh: index, %sq: index, %skv: index):\n", z, z, z,
      z);
  if (score) {
    emit_score_ops(b, z, c->score_body[no], c->score_param[no], defect);
    if (defect == FD_BODY_CONST_INDEX) {
      L("    %sc7 = arith.constant 7 : index\n", z);
      L("    %sg = tensor.extract %%cap0[%sc7] : tensor<7xf32>\n", z, z);
      L("    %sy2 = arith.addf %sy, %sg : f32\n", z, z, z);
      L("    gpu.yield %sy2 : f32\n", z);
    } else {
      L("    gpu.yield %sy : f32\n", z);
    }
  } else if (defect == FD_BODY_MASK_YIELD) {
    L("    %sf = arith.constant 1.0 : f32\n", z);
    L("    gpu.yield %sf : f32\n", z);
  } else {
    emit_mask_ops(b, z, c->mask_body[no], c->mask_param[no]);
    L("    gpu.yield %sok : i1\n", z);
  }
  L("  }) : (%s) -> %s\n", t->s, t->s);
#undef L
}

void attn_fuzz_emit(struct attn_strbuf *b, const char *name,
                    const struct fuzz_case *c) {
  struct types t;
  make_types(c, &t);
  static const char *const arg_names[9] = {"%q",  "%k",  "%v",
                                           "%g",  "%qs", "%ks",
                                           "%qp", "%kp", "%cap0"};
  const char *arg_types[9] = {t.q,  t.k,  t.v,  t.g,          t.qs,
                              t.ks, t.qp, t.kp, "tensor<7xf32>"};
  const char *out_ty = t.o;
  attn_strbuf_printf(b, "func.func @%s(", name);
  for (int i = 0; i < c->nargs; ++i)
    attn_strbuf_printf(b, "%s%s: %s", i ? ", " : "", arg_names[c->args[i]],
                       arg_types[c->args[i]]);
  attn_strbuf_printf(b, ") -> %s {\n", out_ty);
  const char *q = "%q", *k = "%k";
  if (c->has[FB_ROPE]) {
    emit_rope(b, c, "%qr", "%q", t.q, false, &t);
    emit_rope(b, c, "%kr", "%k", t.k, true, &t);
    q = "%qr";
    k = "%kr";
  }
  attn_strbuf_printf(b, "  %%s0 = \"attn.qk\"(%s, %s) : (%s, %s) -> %s\n", q, k,
                     t.q, t.k, t.s);
  int i = 0;
  if (c->defect == FD_ROPE_AFTER_QK) {
    attn_strbuf_printf(b,
                       "  %%s1 = \"attn.rope\"(%%s0) {theta = 1.0e4 : f64, "
                       "rotary_dim = 2 : i64, layout = \"rotate_half\"} : "
                       "(%s) -> %s\n",
                       t.s, t.s);
    i = 1;
  }
  int scale_no = 0, score_no = 0, mask_no = 0;
  for (int j = 0; j < c->norder; ++j, ++i) {
    if (c->order[j] == FB_SCORE_BODY)
      emit_body_op(b, c, true, i, score_no++, &t);
    else if (c->order[j] == FB_MASK_BODY)
      emit_body_op(b, c, false, i, mask_no++, &t);
    else
      emit_modifier(b, c, c->order[j], i, scale_no, &t);
    scale_no += c->order[j] == FB_SCALE;
    if (c->defect == FD_DUPLICATE_MODIFIER && c->order[j] == FB_CAUSAL)
      emit_modifier(b, c, FB_CAUSAL, ++i, 0, &t);
  }
  attn_strbuf_printf(b, "  %%p = \"attn.softmax\"(%%s%d) : (%s) -> %s\n", i,
                     t.s, t.s);
  const char *probs = "%p";
  char last[16];
  if (c->defect == FD_PV_BEFORE_SOFTMAX) {
    snprintf(last, sizeof last, "%%s%d", i);
    probs = last;
  } else if (c->defect == FD_MODIFIER_AFTER_SOFTMAX) {
    attn_strbuf_printf(b, "  %%pc = \"attn.causal\"(%%p) : (%s) -> %s\n", t.s,
                       t.s);
    probs = "%pc";
  }
  attn_strbuf_printf(b, "  %%o = \"attn.pv\"(%s, %%v) : (%s, %s) -> %s\n",
                     probs, t.s, t.v, t.o);
  if (c->defect == FD_SOFTMAX_AFTER_PV) {
    attn_strbuf_printf(b, "  %%x = \"attn.softmax\"(%%o) : (%s) -> %s\n", t.o,
                       t.o);
    attn_strbuf_printf(b, "  return %%x : %s\n}\n", t.o);
  } else {
    attn_strbuf_printf(b, "  return %%o : %s\n}\n", t.o);
  }
}

//===-- Reference and summary ---------------------------------------------===//

/// The reference's score_fn: the case's score bodies in program order.
static double ref_score(void *ctx, double s, int64_t b, int64_t h, int64_t q,
                        int64_t kv) {
  const struct fuzz_case *c = ctx;
  for (int i = 0; i < c->nscore_bodies; ++i) {
    double p = c->score_param[i];
    switch (c->score_body[i]) {
    case FSB_SOFTCAP:
      s = p * tanh(s / p);
      break;
    case FSB_DISTANCE:
      s -= p * fabs((double)(q - kv));
      break;
    case FSB_HEAD:
      s = s * fma((double)h, p, 1.0) + (double)b * 0.125;
      break;
    default:
      s = (q + kv) % 2 == 0 ? s + p : fmax(s, -p);
      break;
    }
  }
  return s;
}

/// The reference's mask_fn: every mask body of the case holds.
static bool ref_mask(void *ctx, int64_t b, int64_t h, int64_t q, int64_t kv) {
  const struct fuzz_case *c = ctx;
  (void)b;
  bool ok = true;
  for (int i = 0; i < c->nmask_bodies; ++i) {
    int64_t p = c->mask_param[i];
    switch (c->mask_body[i]) {
    case FMB_PREFIX:
      ok &= kv < p || kv <= q;
      break;
    case FMB_BAND:
      ok &= (q > kv ? q - kv : kv - q) <= p;
      break;
    case FMB_STRIPE:
      ok &= kv % p != 0 || kv == q;
      break;
    default:
      ok &= h % 2 == 0 || kv <= q;
      break;
    }
  }
  return ok;
}

void attn_fuzz_reference_problem(const struct fuzz_case *c,
                                 struct attn_ref_problem *p) {
  memset(p, 0, sizeof *p);
  p->batch = c->b;
  p->heads = c->h;
  p->kv_heads = c->hk;
  p->seq_q = c->n;
  p->seq_k = c->m;
  p->head_dim = c->d;
  p->value_dim = c->dv;
  p->scale = 1.0;
  for (int i = 0; i < c->nscale; ++i)
    p->scale *= c->scale[i];
  p->causal = c->has[FB_CAUSAL];
  p->rope = c->has[FB_ROPE];
  p->theta = c->theta;
  p->rotary_dim = c->rotary_dim;
  p->interleaved = c->interleaved;
  p->q_offset = c->q_offset;
  p->k_offset = c->k_offset;
  p->window = c->has[FB_WINDOW];
  p->window_left = c->window_left;
  p->window_right = c->window_right;
  p->softcap = c->cap;
  p->alibi_max_bias = c->max_bias;
  p->gate_block = c->gate_block;
  // The modifiers in program order; adjacent scales are one entry.
  bool scaled = false;
  for (int i = 0; i < c->norder; ++i) {
    switch (c->order[i]) {
    case FB_SCALE:
      if (!scaled)
        p->mods[p->nmods++] = ATTN_REF_SCALE;
      scaled = true;
      break;
    case FB_SOFTCAP:
      p->mods[p->nmods++] = ATTN_REF_SOFTCAP;
      break;
    case FB_ALIBI:
      p->mods[p->nmods++] = ATTN_REF_ALIBI;
      break;
    case FB_GATE:
      p->mods[p->nmods++] = ATTN_REF_GATE;
      break;
    case FB_SCORE_BODY: // adjacent bodies compose: one entry
      if (p->nmods == 0 || p->mods[p->nmods - 1] != ATTN_REF_FN)
        p->mods[p->nmods++] = ATTN_REF_FN;
      break;
    default:
      break;
    }
  }
  p->fn_ctx = (void *)c; // read only
  if (c->nscore_bodies)
    p->score_fn = ref_score;
  if (c->nmask_bodies)
    p->mask_fn = ref_mask;
}

void attn_fuzz_describe(struct attn_strbuf *b, const struct fuzz_case *c) {
  attn_strbuf_printf(b,
                     "%s b=%lld h=%lld hk=%lld n=%lld m=%lld d=%lld "
                     "dv=%lld tile=%d,%d blocks=",
                     elem_names[c->elem], (long long)c->b, (long long)c->h,
                     (long long)c->hk, (long long)c->n, (long long)c->m,
                     (long long)c->d, (long long)c->dv, c->block_m, c->block_n);
  bool any = false;
  if (c->has[FB_ROPE]) {
    static const char *const pos[3] = {"", "@offset", "@positions"};
    attn_strbuf_printf(b, "rope%s/%s", pos[c->qpos], pos[c->kpos]);
    any = true;
  }
  int score_no = 0, mask_no = 0;
  for (int i = 0; i < c->norder; ++i, any = true) {
    int code = c->order[i];
    attn_strbuf_printf(b, "%s%s", any ? "," : "", block_names[code]);
    if (code == FB_SCORE_BODY)
      attn_strbuf_printf(b, ":%s",
                         score_body_names[c->score_body[score_no++]]);
    else if (code == FB_MASK_BODY)
      attn_strbuf_printf(b, ":%s", mask_body_names[c->mask_body[mask_no++]]);
  }
  if (!any)
    attn_strbuf_printf(b, "none");
}
