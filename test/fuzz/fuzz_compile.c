//===- fuzz_compile.c - attn-fuzz-compile: attn_compile on valid programs -===//
//
// libFuzzer target, structure-aware: the input's bytes drive a generator,
// not a parser, so that most inputs are valid programs and reach the
// lowerings and the kernel builders behind attn_compile.
//
//   byte 0       mode: bit 0 set: the rest, after the option bytes, is IR
//                text compiled as it is (the seed corpus holds test/Inputs
//                programs this way); else a generated program
//   generated:   bytes 1-8 a seed and byte 9 an index for attn-fuzz's
//                generator (tools/attn-fuzz/gen_program.c: every building
//                block alone and in pairs first, then random subsets), bit 1
//                of the mode an ill-formed variant of it, bit 2 a program
//                that may carry attn.score_mod / attn.mask_mod bodies (the
//                score and mask functions the kernels clone); then edits, two
//                bytes each until the option bytes: shapes (batch, heads, q
//                and k lengths, head dims, GQA), the element type, RoPE and
//                modifier parameters, tile sizes
//   options:     5 bytes: target (cpu and every GPU chip), output format,
//                tile options (block sizes, the Hopper kernel), PTX
//                features, Hopper options (persistent CTAs)
//
// Every byte missing reads as 0, so any input is a case. A cubin would run
// ptxas in a child process, so it is asked for as PTX instead. With
// ATTN_FUZZ_VERBOSE set, each compile's status and first error go to stderr.
//
//===----------------------------------------------------------------------===//
#include "attn/attn.h"
#include "tools/attn-fuzz/attn_fuzz.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct reader {
  const uint8_t *p;
  size_t n;
};

static unsigned next(struct reader *r) {
  if (!r->n)
    return 0;
  --r->n;
  return *r->p++;
}

#define COUNT(a) (sizeof(a) / sizeof *(a))

/// One edit of a generated case, chosen and parameterised by two bytes.
static void edit_case(struct fuzz_case *c, unsigned what, unsigned v) {
  static const int64_t lens[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63,
                                 64, 65, 100, 127, 128, 129, 255, 256, 513};
  static const int64_t dims[] = {2, 4, 8, 12, 16, 24, 32, 40, 48, 64, 80,
                                 96, 128, 160, 256};
  static const int64_t tiles[] = {0, 1, 8, 16, 24, 32, 48, 64, 96, 128, 256};
  switch (what % 16) {
  case 0:
    c->n = lens[v % COUNT(lens)];
    break;
  case 1:
    c->m = lens[v % COUNT(lens)];
    break;
  case 2:
    c->d = dims[v % COUNT(dims)];
    if (c->rotary_dim > c->d)
      c->rotary_dim = c->d - c->d % 2;
    break;
  case 3:
    c->dv = dims[v % COUNT(dims)];
    break;
  case 4:
    c->elem = (int)(v % 3);
    break;
  case 5:
    c->b = 1 + v % 4;
    break;
  case 6: // heads: keep h a multiple of hk unless the low bit says not
    c->hk = 1 + (v >> 1) % 4;
    c->h = c->hk * (1 + (v >> 3) % 4) + (v & 1);
    break;
  case 7:
    c->block_m = (int)tiles[v % COUNT(tiles)];
    break;
  case 8:
    c->block_n = (int)tiles[v % COUNT(tiles)];
    break;
  case 9:
    c->rotary_dim = 2 * (1 + (int64_t)v % 128);
    c->interleaved = v & 1;
    break;
  case 10:
    c->q_offset = (int64_t)v * 97;
    c->k_offset = (int64_t)(v >> 4) * 31;
    break;
  case 11:
    c->window_left = (int64_t)(v % 64) - 1;
    c->window_right = (int64_t)(v / 4) - 1;
    break;
  case 12:
    c->gate_block = 1 + v % 70;
    break;
  case 13:
    c->cap = 0.5 + v;
    c->max_bias = 0.25 + v / 8.0;
    break;
  case 14:
    c->scale[0] = (1 + v) / 64.0;
    break;
  case 15:
    c->theta = 10.0 + 1000.0 * v;
    break;
  }
}

/// Options from five bytes; the strings live in bufs.
static void draw_options(struct reader *r, struct attn_compile_options *o,
                         char *tile, size_t tile_len, char *hopper,
                         size_t hopper_len) {
  static const char *const targets[] = {"cpu",   "sm_90a", "sm_80", "sm_70",
                                        "sm_75", "sm_86",  "sm_89", "sm_90",
                                        NULL,    "cpu",    "sm_87", "sm_90a"};
  static const char *const features[] = {NULL,     NULL,     "+ptx80",
                                         "+ptx90", "+ptx63", "+ptx87",
                                         "ptx80",  "+ptx"};
  static const int64_t blocks[] = {0, 16, 32, 64, 128, 7, 48, 256};
  attn_compile_options_init(o);
  o->source_name = "fuzz.mlir";
  o->target = targets[next(r) % COUNT(targets)];
  unsigned f = next(r);
  o->format = (enum attn_output_format)(f % 5);
  if (o->format == ATTN_OUTPUT_CUBIN)
    o->format = ATTN_OUTPUT_PTX; // ptxas is a child process: too slow here
  unsigned t = next(r);
  int64_t bm = blocks[t % 8], bn = blocks[(t >> 3) % 8];
  static const char *const kernels[4] = {"", "kernel=hopper ", "kernel=plain ",
                                         ""};
  size_t used = (size_t)snprintf(tile, tile_len, "%s", kernels[t >> 6]);
  if (bm)
    used += (size_t)snprintf(tile + used, tile_len - used, "block-m=%lld ",
                             (long long)bm);
  if (bn)
    snprintf(tile + used, tile_len - used, "block-n=%lld", (long long)bn);
  o->tile_options = tile[0] ? tile : NULL;
  o->features = features[next(r) % COUNT(features)];
  // The backward too (attn-grad, then its kernels) on one draw in two.
  o->grad = f / 5 % 2;
  unsigned h = next(r);
  // The Hopper backward's schedule choices, beside the persistent CTAs.
  static const char *const bwd[4] = {
      "dq-reduce=red", "deterministic=true", "dp-issue=late ds-buffers=2",
      "dq-reduce=bulk dp-issue=early ds-buffers=1"};
  if (h % 4 == 1)
    snprintf(hopper, hopper_len, "ctas=%u", 1 + h / 4);
  else if (h % 4 == 2)
    snprintf(hopper, hopper_len, "ctas=0");
  else if (h % 4 == 3)
    snprintf(hopper, hopper_len, "%s", bwd[h / 4 % 4]);
  o->hopper_options = h % 4 ? hopper : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct reader r = {data, size};
  unsigned mode = next(&r);
  struct attn_compile_options o;
  char tile[96], hopper[64];
  char *text = NULL;
  size_t len = 0;
  if (mode & 1) {
    draw_options(&r, &o, tile, sizeof tile, hopper, sizeof hopper);
    text = malloc(r.n + 1);
    if (!text)
      return 0;
    memcpy(text, r.p, r.n);
    len = r.n;
  } else {
    uint64_t seed = 0;
    for (int i = 0; i < 8; ++i)
      seed = seed << 8 | next(&r);
    unsigned index = next(&r);
    struct fuzz_case c;
    if (mode & 2)
      attn_fuzz_make_invalid(seed, index, &c);
    else
      attn_fuzz_make_case(seed, index, (mode & 4) != 0, &c);
    // The last five bytes are the options; the ones before them edit c.
    while (r.n > 5) {
      unsigned what = next(&r);
      edit_case(&c, what, next(&r));
    }
    draw_options(&r, &o, tile, sizeof tile, hopper, sizeof hopper);
    if (!o.tile_options && (c.block_m || c.block_n)) {
      snprintf(tile, sizeof tile, "block-m=%d block-n=%d", c.block_m,
               c.block_n);
      if (!c.block_m || !c.block_n)
        snprintf(tile, sizeof tile, "%s=%d", c.block_m ? "block-m" : "block-n",
                 c.block_m ? c.block_m : c.block_n);
      o.tile_options = tile;
    }
    struct attn_strbuf b = {0};
    attn_fuzz_emit(&b, "attn", &c);
    if (b.failed) {
      attn_strbuf_free(&b);
      return 0;
    }
    text = b.buf; // handed over: freed below
    len = b.len;
  }
  attn_result *res = NULL;
  if (len) {
    enum attn_status s = attn_compile(text, len, &o, NULL, NULL, &res);
    if (getenv("ATTN_FUZZ_VERBOSE"))
      fprintf(stderr, "attn-fuzz-compile: %s (target %s, tile '%s'): %s\n",
              attn_status_string(s), o.target ? o.target : "default",
              o.tile_options ? o.tile_options : "",
              s == ATTN_OK ? "" : attn_last_error());
    if ((s == ATTN_OK) != (res != NULL))
      abort(); // a result exactly on success
    if (res) {
      size_t n = 0;
      const void *img = attn_result_data(res, &n);
      const char *manifest = attn_result_manifest(res);
      if (!img || !n || !manifest)
        abort(); // a successful compile has an image and a manifest
    }
  }
  attn_result_destroy(res);
  free(text);
  return 0;
}
