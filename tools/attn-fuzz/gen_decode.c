//===- gen_decode.c - Random decode programs (attn.fused_decode) ----------===//
//
// A decode case is drawn from (seed, index) alone: batch, K/V heads and the
// GQA group, query rows per sequence (1 to 16, mostly 1, 2 and 4), head
// and value dims (64, 128, 256 mostly, some the GPU kernel does not take),
// the element type, the cache's keys, a contiguous cache or pages of 16 to
// 256 rows with spare pages and table columns, causal or not, the
// modifiers (scale always, softcap and ALiBi in a random order), a window
// and RoPE (rotate-half or interleaved, full or partial). The program is
// written as generic MLIR text; the float64 reference problem comes from
// the case, not from what the compiler reads of the op.
//
//===----------------------------------------------------------------------===//
#include "tools/attn-fuzz/attn_fuzz.h"
#include "tools/attn-fuzz/gen_draws.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const elem_names[3] = {"f32", "f16", "bf16"};

void attn_fuzz_make_decode(uint64_t seed, uint64_t index,
                           struct fuzz_decode *c) {
  struct attn_rng r;
  attn_rng_seed(&r, mix(seed ^ mix(index ^ 0xdec0de)));
  memset(c, 0, sizeof *c);
  static const int64_t groups[] = {1, 1, 2, 3, 4, 4, 6, 8};
  static const int64_t nqs[] = {1, 1, 1, 2, 2, 3, 4, 4, 5, 8, 16};
  static const int64_t dims[] = {64, 64, 128, 128, 128, 256, 32, 48};
  static const int64_t pages[] = {16, 16, 32, 64, 128, 256};
  c->b = 1 + below(&r, 4);
  c->hk = 1 + below(&r, 3);
  c->h = c->hk * pick(&r, groups, 8);
  c->nq = pick(&r, nqs, 11);
  c->d = pick(&r, dims, 8);
  c->dv = coin(&r, 0.9) ? c->d : pick(&r, dims, 8);
  c->elem = coin(&r, 0.15) ? 0 : 1 + (int)below(&r, 2);
  c->paged = coin(&r, 0.5);
  if (c->paged) {
    c->page = pick(&r, pages, 6);
    int64_t need = (c->nq + c->page - 1) / c->page;
    c->max_pages = need + below(&r, 600 / c->page + 2);
    c->num_pages = c->b * c->max_pages + below(&r, 4);
    c->keys = c->max_pages * c->page;
  } else {
    c->keys = c->nq + below(&r, 700);
  }
  c->causal = coin(&r, 0.8);
  c->scale = (0.5 + attn_rng_uniform(&r)) / sqrt((double)c->d);
  // The modifiers in order: scale, and softcap and ALiBi at random places.
  c->nmods = 0;
  bool cap = coin(&r, 0.3), alibi = coin(&r, 0.25);
  int order[3] = {FDM_SCALE, FDM_SOFTCAP, FDM_ALIBI};
  for (int i = 2; i > 0; --i) {
    int j = (int)below(&r, i + 1), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (int i = 0; i < 3; ++i)
    if (order[i] == FDM_SCALE || (order[i] == FDM_SOFTCAP && cap) ||
        (order[i] == FDM_ALIBI && alibi))
      c->mods[c->nmods++] = order[i];
  c->softcap = 5.0 + 45.0 * attn_rng_uniform(&r);
  c->alibi = 1.0 + 7.0 * attn_rng_uniform(&r);
  c->window = coin(&r, 0.25);
  if (c->window) {
    c->window_left = coin(&r, 0.2) ? -1 : below(&r, c->keys + 1);
    c->window_right = c->causal || coin(&r, 0.5) ? -1 : below(&r, 8);
  }
  c->rope = coin(&r, 0.35) && c->d % 2 == 0;
  if (c->rope) {
    c->interleaved = coin(&r, 0.3);
    int64_t step = c->interleaved ? 8 : 16;
    c->rotary_dim = coin(&r, 0.7) ? c->d : step * (1 + below(&r, c->d / step));
    if (c->rotary_dim > c->d)
      c->rotary_dim = c->d;
    c->theta = coin(&r, 0.5) ? 10000.0 : 500000.0;
  }
}

void attn_fuzz_emit_decode(struct attn_strbuf *b, const char *name,
                           const struct fuzz_decode *c) {
  const char *t = elem_names[c->elem];
  enum fuzz_decode_defect df = c->defect;
  int64_t rows = c->paged ? c->num_pages : c->b;
  int64_t crows = c->paged ? c->page : c->keys;
  // The shapes as written: a defect changes one of them.
  int64_t qh = c->h + (df == FDD_HEADS), kd = c->d + 8 * (df == FDD_HEAD_DIM);
  int64_t vrows = crows + (df == FDD_KV_ROWS), kcrows = crows;
  if (df == FDD_PAGE_ROWS)
    kcrows = vrows = crows * 2;
  int64_t onq = c->nq + (df == FDD_RESULT);
  char q[96], k[96], v[96], l[32], tb[48], o[96];
  snprintf(q, sizeof q, "tensor<%ldx%ldx%ldx%ldx%s>", (long)c->b, (long)qh,
           (long)c->nq, (long)c->d, t);
  snprintf(k, sizeof k, "tensor<%ldx%ldx%ldx%ldx%s>", (long)rows, (long)c->hk,
           (long)kcrows, (long)kd, t);
  snprintf(v, sizeof v, "tensor<%ldx%ldx%ldx%ldx%s>", (long)rows, (long)c->hk,
           (long)vrows, (long)c->dv, t);
  snprintf(l, sizeof l, "tensor<%ldx%s>", (long)c->b + (df == FDD_LENS_SHAPE),
           df == FDD_LENS_I64 ? "i64" : "i32");
  snprintf(tb, sizeof tb, "tensor<%ldx%ldxi32>", (long)c->b + (df == FDD_TABLE_BATCH),
           (long)c->max_pages);
  snprintf(o, sizeof o, "tensor<%ldx%ldx%ldx%ldx%s>", (long)c->b, (long)qh,
           (long)onq, (long)c->dv, t);
  attn_strbuf_printf(b, "func.func @%s(%%q: %s, %%k: %s, %%v: %s, %%len: %s%s%s) -> %s {\n",
                     name, q, k, v, l, c->paged ? ", %t: " : "", c->paged ? tb : "", o);
  attn_strbuf_printf(b,
                     "  %%o = \"attn.fused_decode\"(%%q, %%k, %%v, %%len%s) "
                     "{operandSegmentSizes = array<i32: 1, 1, 1, 1, %d>, scale = %.17g : f64, "
                     "causal = %s, cache_layout = \"%s\"",
                     c->paged ? ", %t" : "", c->paged ? 1 : 0, c->scale,
                     c->causal ? "true" : "false", c->paged ? "paged" : "contiguous");
  if (c->paged)
    attn_strbuf_printf(b, ", page_size = %ld : i64",
                       (long)(df == FDD_PAGE_SIZE ? c->page + 8 : c->page));
  static const char *const mod_names[] = {"scale", "softcap", "alibi"};
  for (int i = 0; i < c->nmods; ++i) {
    if (c->mods[i] == FDM_SOFTCAP)
      attn_strbuf_printf(b, ", softcap = %.17g : f64",
                         df == FDD_SOFTCAP ? -c->softcap : c->softcap);
    if (c->mods[i] == FDM_ALIBI)
      attn_strbuf_printf(b, ", alibi = %.17g : f64", c->alibi);
  }
  attn_strbuf_printf(b, ", mods = [");
  for (int i = 0; i < c->nmods; ++i)
    attn_strbuf_printf(b, "%s\"%s\"", i ? ", " : "", mod_names[c->mods[i]]);
  attn_strbuf_printf(b, "]");
  if (c->window)
    attn_strbuf_printf(b, ", window = array<i64: %ld, %ld>", (long)c->window_left,
                       (long)c->window_right);
  if (c->rope)
    attn_strbuf_printf(b,
                       ", rope = {theta = %.1f : f64, rotary_dim = %ld : i64, "
                       "layout = \"%s\"}",
                       c->theta, (long)(df == FDD_ROTARY ? c->d + 2 : c->rotary_dim),
                       c->interleaved ? "interleaved" : "rotate_half");
  attn_strbuf_printf(b, "} : (%s, %s, %s, %s%s%s) -> %s\n  return %%o : %s\n}\n", q, k,
                     v, l, c->paged ? ", " : "", c->paged ? tb : "", o, o);
}

void attn_fuzz_decode_reference(const struct fuzz_decode *c,
                                struct attn_ref_decode *p) {
  static const enum attn_ref_mod refs[] = {ATTN_REF_SCALE, ATTN_REF_SOFTCAP,
                                           ATTN_REF_ALIBI};
  *p = (struct attn_ref_decode){
      .batch = c->b,
      .heads = c->h,
      .kv_heads = c->hk,
      .seq_q = c->nq,
      .head_dim = c->d,
      .value_dim = c->dv,
      .scale = c->scale,
      .causal = c->causal,
      .rope = c->rope,
      .theta = c->theta,
      .rotary_dim = c->rotary_dim,
      .interleaved = c->interleaved,
      .softcap = c->softcap,
      .alibi_max_bias = c->alibi,
      .window = c->window,
      .window_left = c->window_left,
      .window_right = c->window_right,
      .max_seq = c->keys,
      .paged = c->paged,
      .page_size = c->paged ? c->page : 0,
      .num_pages = c->paged ? c->num_pages : 0,
      .max_pages = c->paged ? c->max_pages : 0,
  };
  p->nmods = c->nmods;
  for (int i = 0; i < c->nmods; ++i)
    p->mods[i] = refs[c->mods[i]];
}

void attn_fuzz_describe_decode(struct attn_strbuf *b, const struct fuzz_decode *c) {
  static const char *const mod_names[] = {"scale", "softcap", "alibi"};
  attn_strbuf_printf(b, "b=%ld h=%ld hk=%ld nq=%ld d=%ld dv=%ld %s keys=%ld %s",
                     (long)c->b, (long)c->h, (long)c->hk, (long)c->nq, (long)c->d,
                     (long)c->dv, elem_names[c->elem], (long)c->keys,
                     c->paged ? "paged" : "contiguous");
  if (c->paged)
    attn_strbuf_printf(b, " page=%ld pages=%ld", (long)c->page, (long)c->num_pages);
  attn_strbuf_printf(b, "%s mods=", c->causal ? " causal" : "");
  for (int i = 0; i < c->nmods; ++i)
    attn_strbuf_printf(b, "%s%s", i ? "," : "", mod_names[c->mods[i]]);
  if (c->window)
    attn_strbuf_printf(b, " window=%ld,%ld", (long)c->window_left, (long)c->window_right);
  if (c->rope)
    attn_strbuf_printf(b, " rope=%ld%s", (long)c->rotary_dim,
                       c->interleaved ? "i" : "");
  attn_strbuf_printf(b, "\n");
}

void attn_fuzz_make_decode_invalid(uint64_t seed, uint64_t index,
                                   struct fuzz_decode *c) {
  attn_fuzz_make_decode(seed ^ 0x1badc0deull, index, c);
  struct attn_rng r;
  attn_rng_seed(&r, mix(seed ^ mix(index ^ 0xbadbad)));
  // Draw until the defect applies to the case (a cache layout, a head
  // count that a defect can break, a modifier present).
  for (;;) {
    enum fuzz_decode_defect d = (enum fuzz_decode_defect)(1 + below(&r, FDD_COUNT - 1));
    bool softcap = false;
    for (int i = 0; i < c->nmods; ++i)
      softcap |= c->mods[i] == FDM_SOFTCAP;
    bool ok = (d != FDD_PAGE_SIZE && d != FDD_PAGE_ROWS && d != FDD_TABLE_BATCH) ||
              c->paged;
    ok = ok && (d != FDD_HEADS || c->hk > 1);
    ok = ok && (d != FDD_SOFTCAP || softcap) && (d != FDD_ROTARY || c->rope);
    if (ok) {
      c->defect = d;
      return;
    }
  }
}

void attn_fuzz_decode_expected_error(const struct fuzz_decode *c, char *buf,
                                     size_t n) {
  int64_t crows = c->paged ? c->page : c->keys;
  switch (c->defect) {
  case FDD_NONE:
  case FDD_COUNT:
    snprintf(buf, n, "(none)");
    break;
  case FDD_PAGE_SIZE:
    snprintf(buf, n, "page_size must be a power of two from 16 to 256, found %ld",
             (long)(c->page + 8));
    break;
  case FDD_PAGE_ROWS:
    snprintf(buf, n, "k_cache has pages of %ld rows, but page_size is %ld",
             (long)(2 * c->page), (long)c->page);
    break;
  case FDD_LENS_I64:
    snprintf(buf, n, "cache_seqlens element type must be i32, found i64");
    break;
  case FDD_LENS_SHAPE:
    snprintf(buf, n, "cache_seqlens shape must be %ld, found %ld", (long)c->b,
             (long)c->b + 1);
    break;
  case FDD_TABLE_BATCH:
    snprintf(buf, n, "block_table shape must be %ldx%ld, found %ldx%ld", (long)c->b,
             (long)c->max_pages, (long)c->b + 1, (long)c->max_pages);
    break;
  case FDD_HEADS:
    snprintf(buf, n, "query heads %ld are not a multiple of k_cache heads %ld",
             (long)c->h + 1, (long)c->hk);
    break;
  case FDD_HEAD_DIM:
    snprintf(buf, n, "head dim mismatch: q has %ld, k_cache has %ld", (long)c->d,
             (long)c->d + 8);
    break;
  case FDD_KV_ROWS:
    snprintf(buf, n, "k_cache and v_cache must have the same %s, heads and rows",
             c->paged ? "pages" : "batch");
    (void)crows;
    break;
  case FDD_SOFTCAP:
    snprintf(buf, n, "softcap cap must be positive and finite, found %g",
             -c->softcap);
    break;
  case FDD_ROTARY:
    snprintf(buf, n, "rope rotary_dim %ld exceeds head dim %ld", (long)c->d + 2,
             (long)c->d);
    break;
  case FDD_RESULT:
    snprintf(buf, n, "result shape must be %ldx%ldx%ldx%ld, found %ldx%ldx%ldx%ld",
             (long)c->b, (long)c->h, (long)c->nq, (long)c->dv, (long)c->b,
             (long)c->h, (long)c->nq + 1, (long)c->dv);
    break;
  }
}
