//===- gen_program.c - Random attention programs, well- and ill-formed ----===//
//
// A case is drawn from (seed, index) alone, so any case can be rebuilt on
// its own: shapes (lengths that are not multiples of the tiles, GQA, f32,
// f16 or bf16), which blocks are present (every single block and every pair
// first, then random subsets), their parameters, the order of the score
// modifiers (random; scales adjacent), the argument order and the tile
// options. The program is written as generic MLIR text, the way a user
// writes it; the reference problem is derived from the case, not from what
// the compiler makes of the program.
//
//===----------------------------------------------------------------------===//
#include "tools/attn-fuzz/attn_fuzz.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const elem_names[3] = {"f32", "f16", "bf16"};
static const char *const block_names[FB_COUNT] = {
    "rope",  "scale",   "causal", "window",
    "alibi", "softcap", "gate",   "document"};

/// SplitMix64: decorrelates the per-case seeds.
static uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static int64_t below(struct attn_rng *r, int64_t n) {
  return (int64_t)attn_rng_below(r, (uint64_t)n);
}

static bool coin(struct attn_rng *r, double p) {
  return attn_rng_uniform(r) < p;
}

static int64_t pick(struct attn_rng *r, const int64_t *v, int n) {
  return v[below(r, n)];
}

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

/// The modifier ops in a random program order: the non-commuting ones
/// (the scale group as one) shuffled, masks inserted anywhere, and a second
/// scale op right after the first, possibly behind masks.
static void choose_order(struct attn_rng *r, struct fuzz_case *c) {
  int seq[12], n = 0;
  static const int ordered[4] = {FB_SCALE, FB_SOFTCAP, FB_ALIBI, FB_GATE};
  for (int i = 0; i < 4; ++i)
    if (c->has[ordered[i]])
      seq[n++] = ordered[i];
  shuffle(r, seq, n);
  static const int masks[3] = {FB_CAUSAL, FB_WINDOW, FB_DOCUMENT};
  for (int i = 0; i < 3; ++i) {
    if (!c->has[masks[i]])
      continue;
    int at = (int)below(r, n + 1);
    memmove(seq + at + 1, seq + at, sizeof *seq * (size_t)(n - at));
    seq[at] = masks[i];
    ++n;
  }
  if (c->nscale == 2) {
    int at = 0;
    while (seq[at] != FB_SCALE)
      ++at;
    ++at;
    while (at < n && coin(r, 0.5) &&
           (seq[at] == FB_CAUSAL || seq[at] == FB_WINDOW ||
            seq[at] == FB_DOCUMENT))
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

static void draw(struct attn_rng *r, uint64_t index, struct fuzz_case *c) {
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
  choose_order(r, c);
  choose_args(r, c);
  static const int64_t tiles[5] = {0, 8, 16, 32, 64};
  c->block_m = (int)pick(r, tiles, 5);
  c->block_n = (int)pick(r, tiles, 5);
}

void attn_fuzz_make_case(uint64_t seed, uint64_t index, struct fuzz_case *c) {
  struct attn_rng r;
  attn_rng_seed(&r, mix(seed ^ mix(index)));
  draw(&r, index, c);
}

void attn_fuzz_make_invalid(uint64_t seed, uint64_t index,
                            struct fuzz_case *c) {
  struct attn_rng r;
  attn_rng_seed(&r, mix(~seed ^ mix(index)));
  draw(&r, FB_COUNT + 28 + index, c);
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
  choose_args(&r, c);
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

void attn_fuzz_emit(struct attn_strbuf *b, const char *name,
                    const struct fuzz_case *c) {
  struct types t;
  make_types(c, &t);
  static const char *const arg_names[8] = {"%q",  "%k",  "%v",  "%g",
                                           "%qs", "%ks", "%qp", "%kp"};
  const char *arg_types[8] = {t.q, t.k, t.v, t.g, t.qs, t.ks, t.qp, t.kp};
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
  int scale_no = 0;
  for (int j = 0; j < c->norder; ++j, ++i) {
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
    default:
      break;
    }
  }
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
  for (int i = 0; i < c->norder; ++i, any = true)
    attn_strbuf_printf(b, "%s%s", any ? "," : "", block_names[c->order[i]]);
  if (!any)
    attn_strbuf_printf(b, "none");
}
