//===- attn_tile.c - attn-tile: attn.fused becomes a tile-level kernel ----===//
//
// A function whose body is one attn.fused op returning its result becomes a
// tile kernel in destination-passing style: tensors become memrefs, the
// output is a new last argument (the inputs keep the function's order and
// are named in tile.arg_names; tile.attention describes the program for the
// launch manifest), and the body is a CTA program over a grid of (query
// blocks, batch * heads):
//
//   func.func @f(%q: memref<BxHxNxD>, %k, %v, [%gate, %q_segments, ...], %out)
//       attributes {tile.kernel, tile.grid = array<i64: ceil(N/BM), B*H, 1>,
//        tile.threads = 128 : i64, tile.arg_names = [...],
//        tile.attention = {...}} {
//     %qb = "tile.program_id"() {dim = 0 : i64} ...
//     "tile.load"(%q, %qt, %b, %h, %row)          // Q tile, once per CTA
//     "tile.rope"(%qt, %row) {..., offset}        // or tile.rope_positions
//     scf.for %j = kstart to kend {               // online softmax over keys
//       "tile.load"(%k, %kt, ...) ; "tile.rope"(%kt, %col)
//       "tile.mma"(%qt, %kt, %s) {transpose_b = true, accumulate = false}
//       "tile.score_mod"(%s, %b, %h, %row, %col, [%gate]) {mods = [...]}
//       "tile.mask"(%s, %row, %col) {causal, kv_len = M, window}
//       "tile.document_mask"(%s, %b, %row, %col, %q_segments, %k_segments)
//       "tile.softmax_update"(%s, %m, %l, %acc) {scale = ...}
//       "tile.mma"(%s, %vt, %acc) {transpose_b = false, accumulate = true}
//     }
//     "tile.normalize"(%acc, %l) ; "tile.store"(%acc, %out, ...)
//   }
//
// One helper per block writes its part (emit_rope, emit_key_range,
// emit_score_mods, emit_masks, ...). Modifiers are applied in program order
// by tile.score_mod; the scale folds into the softmax's exp2 factor when no
// softcap, alibi or gate follows it (folding is exact only there), else
// tile.score_mod applies it in order. Masks come after the modifiers, so a
// masked score is -inf whatever they did. The key loop visits only blocks a
// query block can see: it stops at the diagonal (causal) or right edge of a
// window and starts at its left edge. Options: block-m, block-n (0 picks the
// largest power of two up to 64 whose tiles fit 48 KiB, the static shared
// memory of the plain GPU path; with kernel=hopper, 128 x 128, the Hopper
// kernel's tiles; with kernel=mma, 128 x 64, the mma.sync kernel's) and
// threads (0: 128, 384 with kernel=hopper, 2 * block-m with kernel=mma).
//
// Functions without attn ops go to tile_matmul.c, which turns a
// linalg.matmul into a GEMM tile kernel (block-k is its option). Functions
// whose q, k or v come from attn.project go to tile_program.c first, which
// writes the projections' GEMM kernels and the launch program running them
// before the attention.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/tile/tile_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct attn_pass_option tile_options_help[] = {
    {"block-m", "query rows per CTA; a matmul's output rows per CTA (0: pick)"},
    {"block-n", "key rows per loop step; a matmul's output columns per CTA "
                "(0: pick)"},
    {"block-k", "a matmul's K step (0: pick)"},
    {"threads", "threads per CTA (0: 128, or 384 with kernel=hopper)"},
    {"kernel", "the lowering the defaults are for: plain (lower-tile-to-cpu "
               "and lower-tile-to-gpu, default), hopper "
               "(lower-tile-to-hopper) or mma (lower-tile-to-mma)"},
    {NULL, NULL},
};

static void tile_init(void *opts) {
  struct attn_tile_options *o = opts;
  memset(o, 0, sizeof *o);
}

static bool tile_set(void *opts, const char *name, const char *value, char *err,
                     size_t errlen) {
  struct attn_tile_options *o = opts;
  if (!strcmp(name, "block-m") || !strcmp(name, "block-n") ||
      !strcmp(name, "block-k")) {
    long *dst = name[6] == 'm'   ? &o->block_m
                : name[6] == 'n' ? &o->block_n
                                 : &o->block_k;
    if (!attn_parse_int_option(name, value, 0, 256, dst, err, errlen))
      return false;
    if (*dst & (*dst - 1)) {
      snprintf(err, errlen,
               "option '%s' must be 0 or a power of two, found %ld", name,
               *dst);
      return false;
    }
    return true;
  }
  if (!strcmp(name, "threads"))
    return attn_parse_int_option(name, value, 32, 1024, &o->threads, err,
                                 errlen);
  if (!strcmp(name, "kernel")) {
    if (!strcmp(value, "plain") || !strcmp(value, "hopper") ||
        !strcmp(value, "mma")) {
      o->hopper = value[0] == 'h';
      o->mma = value[0] == 'm';
      return true;
    }
    snprintf(err, errlen,
             "option 'kernel' expects plain, hopper or mma, found '%s'", value);
    return false;
  }
  snprintf(err, errlen,
           "unknown option '%s' of pass 'attn-tile' (expected block-m, "
           "block-n, block-k, threads or kernel)",
           name);
  return false;
}

/// Bytes of f32 tiles one CTA holds: q, acc [bm, d]; k, v [bn, d]; s [bm, bn];
/// m, l [bm].
static long tile_bytes(long bm, long bn, long d, long dv) {
  return 4 * (bm * d + bm * dv + bn * d + bn * dv + bm * bn + 2 * bm);
}

static long pick_block(long d, long dv) {
  long b = 64;
  while (b > 8 && tile_bytes(b, b, d, dv) > 48 * 1024)
    b /= 2;
  return b;
}

static const char *elem_name(MlirType t) {
  MlirType e = mlirShapedTypeGetElementType(t);
  return mlirTypeIsAF16(e) ? "f16" : mlirTypeIsABF16(e) ? "bf16" : "f32";
}

/// The kernel's parameters by role: q, k, v, then attn.fused's optional
/// inputs (enum attn_fused_extra + 3), then the output.
enum { ROLE_Q, ROLE_K, ROLE_V, ROLE_EXTRA0, ROLE_OUT = 3 + ATTN_NUM_EXTRAS };

static const char *role_name(int role) {
  static const char *const qkv[3] = {"q", "k", "v"};
  return role < 3          ? qkv[role]
         : role < ROLE_OUT ? attn_fused_extra_name(role - ROLE_EXTRA0)
                           : "out";
}

struct kernel_shape {
  int64_t q[4], k[4], v[4];
  const char *elem;
  struct attn_fused_config cfg;
  long bm, bn, threads;
  int nargs;                     // function arguments (q, k, v, inputs)
  int arg_role[ROLE_OUT];        // role of function argument i
  MlirType role_type[ROLE_OUT + 1]; // tensor type of each present role
  char tile_ty[5][64];           // q, k, v, scores, acc tiles
  char row_ty[64];               // m, l
};

enum { T_Q, T_K, T_V, T_S, T_ACC };

/// Prints the memref type matching a static tensor type.
static void print_memref_of(struct attn_strbuf *b, MlirType tensor) {
  int64_t d[8];
  int rank = attn_static_shape(tensor, d);
  attn_strbuf_printf(b, "memref<");
  for (int i = 0; i < rank; ++i)
    attn_strbuf_printf(b, "%lldx", (long long)d[i]);
  attn_strbuf_type(b, mlirShapedTypeGetElementType(tensor));
  attn_strbuf_printf(b, ">");
}

static void print_role_type(struct attn_strbuf *b, const struct kernel_shape *s,
                            int role) {
  print_memref_of(b, s->role_type[role]);
}

static bool has_role(const struct kernel_shape *s, int role) {
  return !mlirTypeIsNull(s->role_type[role]);
}

//===-- Kernel text, one helper per block ---------------------------------===//

/// Where the scale goes: folded into the softmax's exp2 constant when no
/// softcap, alibi or gate follows it (exact only there), else applied in
/// order by tile.score_mod.
static bool scale_folds(const struct attn_fused_config *c) {
  return c->nmods == 0 || c->mods[c->nmods - 1] == ATTN_MOD_SCALE;
}

/// The dictionary tile.attention: everything the kernel computes, for the
/// launch manifest.
static void emit_attention_dict(struct attn_strbuf *b,
                                const struct kernel_shape *s) {
  const struct attn_fused_config *c = &s->cfg;
  attn_strbuf_printf(b, "tile.attention = {causal = %s, scale = %.17e : f64",
                     c->causal ? "true" : "false", c->scale);
  if (c->has_window)
    attn_strbuf_printf(b, ", window = array<i64: %lld, %lld>",
                       (long long)c->window_left, (long long)c->window_right);
  if (c->has_alibi)
    attn_strbuf_printf(b, ", alibi = %.17e : f64", c->alibi_max_bias);
  if (c->has_softcap)
    attn_strbuf_printf(b, ", softcap = %.17e : f64", c->softcap);
  if (c->has_gate)
    attn_strbuf_printf(b, ", gate_block = %lld : i64",
                       (long long)c->gate_block);
  if (c->document)
    attn_strbuf_printf(b, ", document = true");
  attn_strbuf_printf(b, ", mods = [");
  for (int i = 0; i < c->nmods; ++i)
    attn_strbuf_printf(b, "%s\"%s\"", i ? ", " : "",
                       attn_score_mod_name(c->mods[i]));
  attn_strbuf_printf(b, "]");
  if (c->has_rope) {
    attn_strbuf_printf(b,
                       ", rope = {layout = \"%s\", rotary_dim = %lld : i64, "
                       "theta = %.17e : f64",
                       attn_rope_layout_name(c->rope.layout),
                       (long long)c->rope.rotary_dim, c->rope.theta);
    if (c->q_offset)
      attn_strbuf_printf(b, ", q_offset = %lld : i64", (long long)c->q_offset);
    if (c->k_offset)
      attn_strbuf_printf(b, ", k_offset = %lld : i64", (long long)c->k_offset);
    if (c->extra[ATTN_EXTRA_Q_POSITIONS] >= 0)
      attn_strbuf_printf(b, ", q_positions = true");
    if (c->extra[ATTN_EXTRA_K_POSITIONS] >= 0)
      attn_strbuf_printf(b, ", k_positions = true");
    if (c->rope_strategy != ATTN_ROPE_STRATEGY_NONE)
      attn_strbuf_printf(b, ", strategy = \"%s\"",
                         attn_rope_strategy_name(c->rope_strategy));
    attn_strbuf_printf(b, "}");
  }
  attn_strbuf_printf(b, "}");
}

/// The signature: function arguments by role, then out; launch attributes.
static void emit_signature(struct attn_strbuf *b, const char *name,
                           const struct kernel_shape *s) {
  attn_strbuf_printf(b, "func.func @%s(", name);
  for (int i = 0; i < s->nargs; ++i) {
    attn_strbuf_printf(b, "%%%s: ", role_name(s->arg_role[i]));
    print_role_type(b, s, s->arg_role[i]);
    attn_strbuf_printf(b, ", ");
  }
  attn_strbuf_printf(b, "%%out: ");
  print_role_type(b, s, ROLE_OUT);
  attn_strbuf_printf(b,
                     ") attributes {tile.kernel, tile.grid = array<i64: %lld, "
                     "%lld, 1>, tile.threads = %ld : i64, tile.arg_names = [",
                     (long long)((s->q[2] + s->bm - 1) / s->bm),
                     (long long)(s->q[0] * s->q[1]), s->threads);
  for (int i = 0; i < s->nargs; ++i)
    attn_strbuf_printf(b, "\"%s\", ", role_name(s->arg_role[i]));
  attn_strbuf_printf(b, "\"out\"], ");
  emit_attention_dict(b, s);
  attn_strbuf_printf(b, "} {\n");
}

/// Grid position, index constants and the CTA's tiles.
static void emit_prologue(struct attn_strbuf *b, const struct kernel_shape *s) {
  attn_strbuf_printf(
      b,
      "  %%qb = \"tile.program_id\"() {dim = 0 : i64} : () -> index\n"
      "  %%bh = \"tile.program_id\"() {dim = 1 : i64} : () -> index\n"
      "  %%c0 = arith.constant 0 : index\n"
      "  %%c1 = arith.constant 1 : index\n"
      "  %%heads = arith.constant %lld : index\n"
      "  %%group = arith.constant %lld : index\n"
      "  %%bm = arith.constant %ld : index\n"
      "  %%bn = arith.constant %ld : index\n"
      "  %%b = arith.divui %%bh, %%heads : index\n"
      "  %%h = arith.remui %%bh, %%heads : index\n"
      "  %%kh = arith.divui %%h, %%group : index\n"
      "  %%row = arith.muli %%qb, %%bm : index\n",
      (long long)s->q[1], (long long)(s->q[1] / s->k[1]), s->bm, s->bn);
  static const char *const names[5] = {"qt", "kt", "vt", "st", "acc"};
  for (int i = 0; i < 5; ++i)
    attn_strbuf_printf(b, "  %%%s = \"tile.alloc\"() : () -> %s\n", names[i],
                       s->tile_ty[i]);
  attn_strbuf_printf(b,
                     "  %%m = \"tile.alloc\"() : () -> %s\n"
                     "  %%l = \"tile.alloc\"() : () -> %s\n",
                     s->row_ty, s->row_ty);
}

/// Rotates tile %<tile> whose row 0 is sequence row %<pos>: at explicit
/// positions (tile.rope_positions) or at offset + row (tile.rope).
static void emit_rope(struct attn_strbuf *b, const struct kernel_shape *s,
                      const char *tile, const char *tile_ty, const char *pos,
                      bool keys) {
  const struct attn_rope_config *r = &s->cfg.rope;
  int role =
      ROLE_EXTRA0 + (keys ? ATTN_EXTRA_K_POSITIONS : ATTN_EXTRA_Q_POSITIONS);
  int64_t offset = keys ? s->cfg.k_offset : s->cfg.q_offset;
  if (has_role(s, role))
    attn_strbuf_printf(b, "  \"tile.rope_positions\"(%s, %%b, %s, %%%s) {",
                       tile, pos, role_name(role));
  else
    attn_strbuf_printf(b, "  \"tile.rope\"(%s, %s) {", tile, pos);
  attn_strbuf_printf(b, "theta = %.17e : f64, rotary_dim = %lld : i64, "
                        "layout = \"%s\"",
                     r->theta, (long long)r->rotary_dim,
                     attn_rope_layout_name(r->layout));
  if (offset && !has_role(s, role))
    attn_strbuf_printf(b, ", offset = %lld : i64", (long long)offset);
  attn_strbuf_printf(b, "} : (%s, ", tile_ty);
  if (has_role(s, role)) {
    attn_strbuf_printf(b, "index, index, ");
    print_role_type(b, s, role);
  } else {
    attn_strbuf_printf(b, "index");
  }
  attn_strbuf_printf(b, ") -> ()\n");
}

/// Copies rows of head (%b, %<head>) of role's tensor into a tile.
static void emit_load(struct attn_strbuf *b, const struct kernel_shape *s,
                      int role, const char *tile, int tile_kind,
                      const char *head, const char *pos) {
  attn_strbuf_printf(b, "  \"tile.load\"(%%%s, %s, %%b, %s, %s) : (",
                     role_name(role), tile, head, pos);
  print_role_type(b, s, role);
  attn_strbuf_printf(b, ", %s, index, index, index) -> ()\n",
                     s->tile_ty[tile_kind]);
}

/// Q is loaded and rotated once per CTA; the softmax state starts empty.
static void emit_query_tile(struct attn_strbuf *b,
                            const struct kernel_shape *s) {
  emit_load(b, s, ROLE_Q, "%qt", T_Q, "%h", "%row");
  if (s->cfg.has_rope)
    emit_rope(b, s, "%qt", s->tile_ty[T_Q], "%row", false);
  attn_strbuf_printf(
      b,
      "  \"tile.fill\"(%%acc) {value = 0.0 : f32} : (%s) -> ()\n"
      "  \"tile.fill\"(%%m) {value = 0xFF800000 : f32} : (%s) -> ()\n"
      "  \"tile.fill\"(%%l) {value = 0.0 : f32} : (%s) -> ()\n",
      s->tile_ty[T_ACC], s->row_ty, s->row_ty);
}

/// The key blocks a query block can see: [%kstart, %kend). Blocks entirely
/// after the diagonal (causal), right of the window or left of it are never
/// visited. Writes the bound names into lo and hi.
static void emit_key_range(struct attn_strbuf *b, const struct kernel_shape *s,
                           const char **lo, const char **hi) {
  const struct attn_fused_config *c = &s->cfg;
  long nkb = (long)((s->k[2] + s->bn - 1) / s->bn);
  attn_strbuf_printf(b, "  %%nkb = arith.constant %ld : index\n", nkb);
  *lo = "%c0";
  *hi = "%nkb";
  bool right = c->causal || (c->has_window && c->window_right >= 0);
  if (right) {
    // Query rows [row, row + bm) see keys up to row + bm - 1 + reach.
    long long reach = c->causal ? 0 : (long long)c->window_right;
    attn_strbuf_printf(b, "  %%last = arith.addi %%row, %%bm : index\n");
    if (reach)
      attn_strbuf_printf(b,
                         "  %%reach = arith.constant %lld : index\n"
                         "  %%lastr = arith.addi %%last, %%reach : index\n",
                         reach);
    attn_strbuf_printf(b,
                       "  %%diag = arith.ceildivui %s, %%bn : index\n"
                       "  %%kend = arith.minui %%diag, %%nkb : index\n",
                       reach ? "%lastr" : "%last");
    *hi = "%kend";
  }
  if (c->has_window && c->window_left >= 0) {
    // Row `row` sees keys from row - left on.
    attn_strbuf_printf(b,
                       "  %%left = arith.constant %lld : index\n"
                       "  %%first = arith.subi %%row, %%left : index\n"
                       "  %%first0 = arith.maxsi %%first, %%c0 : index\n"
                       "  %%kstart = arith.divui %%first0, %%bn : index\n",
                       (long long)c->window_left);
    *lo = "%kstart";
  }
}

/// tile.score_mod for the modifiers applied inside the loop, in program
/// order; the scale is left out when it folds into the softmax.
static void emit_score_mods(struct attn_strbuf *b,
                            const struct kernel_shape *s) {
  const struct attn_fused_config *c = &s->cfg;
  bool fold = scale_folds(c);
  struct attn_strbuf names = {0};
  int n = 0;
  for (int i = 0; i < c->nmods; ++i) {
    if (c->mods[i] == ATTN_MOD_SCALE && (fold || c->scale == 1.0))
      continue;
    attn_strbuf_printf(&names, "%s\"%s\"", n++ ? ", " : "",
                       attn_score_mod_name(c->mods[i]));
  }
  if (n == 0) {
    attn_strbuf_free(&names);
    return;
  }
  bool gate = has_role(s, ROLE_EXTRA0 + ATTN_EXTRA_GATE);
  attn_strbuf_printf(b,
                     "  \"tile.score_mod\"(%%st, %%b, %%h, %%row, %%col%s) "
                     "{mods = [%s]",
                     gate ? ", %gate" : "", names.buf ? names.buf : "");
  attn_strbuf_free(&names);
  if (!fold && c->scale != 1.0)
    attn_strbuf_printf(b, ", scale = %.17e : f64", c->scale);
  if (c->has_softcap)
    attn_strbuf_printf(b, ", softcap = %.17e : f64", c->softcap);
  if (c->has_alibi)
    attn_strbuf_printf(b, ", alibi = %.17e : f64, heads = %lld : i64",
                       c->alibi_max_bias, (long long)s->q[1]);
  if (gate)
    attn_strbuf_printf(b, ", gate_block = %lld : i64",
                       (long long)c->gate_block);
  attn_strbuf_printf(b, "} : (%s, index, index, index, index", s->tile_ty[T_S]);
  if (gate) {
    attn_strbuf_printf(b, ", ");
    print_role_type(b, s, ROLE_EXTRA0 + ATTN_EXTRA_GATE);
  }
  attn_strbuf_printf(b, ") -> ()\n");
}

/// Masks after the modifiers: padding keys, causal, window, documents. A
/// masked score is -inf whatever the modifiers did (masks commute).
static void emit_masks(struct attn_strbuf *b, const struct kernel_shape *s) {
  const struct attn_fused_config *c = &s->cfg;
  attn_strbuf_printf(b,
                     "  \"tile.mask\"(%%st, %%row, %%col) {causal = %s, "
                     "kv_len = %lld : i64",
                     c->causal ? "true" : "false", (long long)s->k[2]);
  if (c->has_window)
    attn_strbuf_printf(b, ", window = array<i64: %lld, %lld>",
                       (long long)c->window_left, (long long)c->window_right);
  attn_strbuf_printf(b, "} : (%s, index, index) -> ()\n", s->tile_ty[T_S]);
  if (!c->document)
    return;
  attn_strbuf_printf(b, "  \"tile.document_mask\"(%%st, %%b, %%row, %%col, "
                        "%%q_segments, %%k_segments) : (%s, index, index, "
                        "index, ",
                     s->tile_ty[T_S]);
  print_role_type(b, s, ROLE_EXTRA0 + ATTN_EXTRA_Q_SEGMENTS);
  attn_strbuf_printf(b, ", ");
  print_role_type(b, s, ROLE_EXTRA0 + ATTN_EXTRA_K_SEGMENTS);
  attn_strbuf_printf(b, ") -> ()\n");
}

/// One step of the key loop: K (rotated) and V tiles, scores, modifiers,
/// masks, the online softmax update and P.V.
static void emit_key_step(struct attn_strbuf *b, const struct kernel_shape *s,
                          const char *lo, const char *hi) {
  attn_strbuf_printf(b,
                     "  scf.for %%j = %s to %s step %%c1 {\n"
                     "  %%col = arith.muli %%j, %%bn : index\n",
                     lo, hi);
  emit_load(b, s, ROLE_K, "%kt", T_K, "%kh", "%col");
  if (s->cfg.has_rope)
    emit_rope(b, s, "%kt", s->tile_ty[T_K], "%col", true);
  emit_load(b, s, ROLE_V, "%vt", T_V, "%kh", "%col");
  attn_strbuf_printf(b,
                     "  \"tile.mma\"(%%qt, %%kt, %%st) {transpose_b = true, "
                     "accumulate = false} : (%s, %s, %s) -> ()\n",
                     s->tile_ty[T_Q], s->tile_ty[T_K], s->tile_ty[T_S]);
  emit_score_mods(b, s);
  emit_masks(b, s);
  attn_strbuf_printf(
      b,
      "  \"tile.softmax_update\"(%%st, %%m, %%l, %%acc) {scale = %.17e : f64} "
      ": (%s, %s, %s, %s) -> ()\n"
      "  \"tile.mma\"(%%st, %%vt, %%acc) {transpose_b = false, accumulate = "
      "true} : (%s, %s, %s) -> ()\n"
      "  }\n",
      scale_folds(&s->cfg) ? s->cfg.scale : 1.0, s->tile_ty[T_S], s->row_ty,
      s->row_ty, s->tile_ty[T_ACC], s->tile_ty[T_S], s->tile_ty[T_V],
      s->tile_ty[T_ACC]);
}

static void emit_epilogue(struct attn_strbuf *b, const struct kernel_shape *s) {
  attn_strbuf_printf(b,
                     "  \"tile.normalize\"(%%acc, %%l) : (%s, %s) -> ()\n"
                     "  \"tile.store\"(%%acc, %%out, %%b, %%h, %%row) : (%s, ",
                     s->tile_ty[T_ACC], s->row_ty, s->tile_ty[T_ACC]);
  print_role_type(b, s, ROLE_OUT);
  attn_strbuf_printf(b, ", index, index, index) -> ()\n  return\n}\n");
}

/// Writes the tile kernel for one attn.fused op as MLIR text.
static void emit_kernel(struct attn_strbuf *b, const char *name,
                        const struct kernel_shape *s) {
  const char *lo, *hi;
  emit_signature(b, name, s);
  emit_prologue(b, s);
  emit_query_tile(b, s);
  emit_key_range(b, s, &lo, &hi);
  emit_key_step(b, s, lo, hi);
  emit_epilogue(b, s);
}

/// Finds the single attn.fused op of func and checks the body is only that
/// op and the return of its result. Returns a null op when func holds no
/// attn op; emits an error and sets *bad when the body is not supported.
static MlirOperation find_fused(MlirOperation func, bool *bad) {
  MlirOperation fused = {NULL}, other = {NULL}, stray = {NULL};
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockIsNull(body))
    return fused;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
    bool is_attn = n.length > 5 && !strncmp(n.data, "attn.", 5);
    if (attn_op_is(op, ATTN_OP_FUSED) && mlirOperationIsNull(fused))
      fused = op;
    else if (is_attn && mlirOperationIsNull(other))
      other = op;
    else if (!is_attn && !attn_op_is(op, "func.return") &&
             mlirOperationIsNull(stray))
      stray = op;
  }
  if (!mlirOperationIsNull(other)) {
    MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(other));
    *bad = true;
    if (attn_op_is(other, ATTN_OP_FUSED))
      attn_emit_errorf(other, "attn-tile supports one attn.fused op per "
                              "function");
    else
      attn_emit_errorf(other,
                       "cannot tile '%.*s': it is not part of an attn.fused "
                       "op (run attn-fuse first; a chain rope -> qk -> "
                       "score modifiers -> softmax -> pv fuses)",
                       (int)n.length, n.data);
  } else if (!mlirOperationIsNull(fused) && !mlirOperationIsNull(stray)) {
    *bad = true;
    attn_emit_errorf(stray, "attn-tile supports functions whose body is one "
                            "attn.fused op and the return of its result");
  }
  return fused;
}

/// Checks fused's operands are distinct arguments of func, that func takes
/// nothing else and returns exactly fused's result; fills s->arg_role.
static bool check_signature(MlirOperation func, MlirOperation fused,
                            struct kernel_shape *s) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  intptr_t nops = mlirOperationGetNumOperands(fused);
  if (mlirBlockGetNumArguments(body) != nops)
    return attn_emit_errorf(func, nops == 3
                                      ? "attn-tile expects the function to "
                                        "take exactly q, k and v"
                                      : "attn-tile expects the function to "
                                        "take exactly the operands of "
                                        "attn.fused");
  int role_of_operand[ROLE_OUT] = {ROLE_Q, ROLE_K, ROLE_V};
  for (int r = 0; r < ATTN_NUM_EXTRAS; ++r)
    if (s->cfg.extra[r] >= 0)
      role_of_operand[s->cfg.extra[r]] = ROLE_EXTRA0 + r;
  s->nargs = (int)nops;
  for (intptr_t i = 0; i < nops; ++i) {
    MlirValue v = mlirOperationGetOperand(fused, i);
    if (!mlirValueIsABlockArgument(v) ||
        !mlirBlockEqual(mlirBlockArgumentGetOwner(v), body))
      return attn_emit_errorf(fused, "operand %ld of attn.fused must be a "
                                     "function argument",
                              (long)i);
    for (intptr_t j = 0; j < i; ++j)
      if (mlirValueEqual(mlirOperationGetOperand(fused, j), v))
        return attn_emit_errorf(fused, nops == 3
                                           ? "q, k and v must be distinct "
                                             "arguments"
                                           : "the operands of attn.fused "
                                             "must be distinct arguments");
    int role = role_of_operand[i];
    s->arg_role[mlirBlockArgumentGetArgNumber(v)] = role;
    s->role_type[role] = mlirValueGetType(v);
  }
  MlirOperation ret = mlirBlockGetTerminator(body);
  if (mlirOperationGetNumOperands(ret) != 1 ||
      !mlirValueEqual(mlirOperationGetOperand(ret, 0),
                      mlirOperationGetResult(fused, 0)))
    return attn_emit_errorf(func, "the function must return the result of "
                                  "attn.fused and nothing else");
  s->role_type[ROLE_OUT] = mlirValueGetType(mlirOperationGetResult(fused, 0));
  return true;
}

/// Fills the tile types of s from the shapes and block sizes.
static void set_tile_types(struct kernel_shape *s) {
  long cols[5] = {(long)s->q[3], (long)s->k[3], (long)s->v[3], s->bn,
                  (long)s->v[3]};
  long rows[5] = {s->bm, s->bn, s->bn, s->bm, s->bm};
  for (int i = 0; i < 5; ++i)
    snprintf(s->tile_ty[i], sizeof s->tile_ty[i], "memref<%ldx%ldxf32>",
             rows[i], cols[i]);
  snprintf(s->row_ty, sizeof s->row_ty, "memref<%ldxf32>", s->bm);
}

static bool tile_function(MlirOperation func,
                          const struct attn_tile_options *o) {
  bool bad = false;
  // Projections become GEMM kernels; func is then the attention alone.
  if (!attn_tile_program(func, o))
    return false;
  MlirOperation fused = find_fused(func, &bad);
  if (bad)
    return false;
  if (mlirOperationIsNull(fused))
    return attn_tile_matmul(func, o);
  struct kernel_shape s;
  memset(&s, 0, sizeof s);
  if (!attn_fused_get_config(fused, &s.cfg))
    return attn_emit_errorf(fused, "malformed attn.fused attributes");
  if (!check_signature(func, fused, &s))
    return false;
  for (int i = 0; i < 3; ++i) {
    int64_t *dst = i == 0 ? s.q : i == 1 ? s.k : s.v;
    int64_t dims[8];
    attn_static_shape(mlirValueGetType(mlirOperationGetOperand(fused, i)),
                      dims);
    memcpy(dst, dims, 4 * sizeof *dst);
  }
  s.elem = elem_name(mlirValueGetType(mlirOperationGetOperand(fused, 0)));
  long d = (long)s.q[3], dv = (long)s.v[3];
  // The Hopper kernel's tiles: 128 query rows (two consumer warpgroups),
  // 128 keys, 384 threads.
  // The mma.sync kernel's: 128 query rows (eight warps of 16), 64 keys.
  s.bm = o->block_m ? o->block_m
         : o->hopper || o->mma ? 128
                               : pick_block(d, dv);
  s.bn = o->block_n ? o->block_n
         : o->hopper ? 128
         : o->mma    ? 64
                     : pick_block(d, dv);
  s.threads = o->threads ? o->threads
              : o->hopper ? 384
              : o->mma    ? 2 * s.bm
                          : 128;
  set_tile_types(&s);
  MlirStringRef name;
  if (!attn_attr_str(func, "sym_name", &name))
    return attn_emit_errorf(func, "function has no name");
  char fname[256];
  snprintf(fname, sizeof fname, "%.*s", (int)name.length, name.data);
  struct attn_strbuf text = {0};
  emit_kernel(&text, fname, &s);
  if (text.failed) {
    attn_strbuf_free(&text);
    return attn_emit_errorf(func, "attn-tile: out of memory");
  }
  MlirOperation kernel = attn_insert_parsed_before(
      func, text.buf, mlirOperationGetLocation(fused));
  attn_strbuf_free(&text);
  if (mlirOperationIsNull(kernel))
    return attn_emit_errorf(fused, "attn-tile produced a kernel MLIR cannot "
                                   "parse (a bug in attn)");
  mlirOperationDestroy(func);
  return true;
}

static bool attn_tile_run(MlirOperation module, const void *opts) {
  const struct attn_tile_options *o = opts;
  struct attn_op_list funcs = {0};
  attn_op_list_collect(&funcs, module, "func.func");
  bool ok = !funcs.failed;
  for (size_t i = 0; ok && i < funcs.n; ++i)
    ok = tile_function(funcs.ops[i], o);
  free(funcs.ops);
  return ok;
}

const struct attn_pass_def attn_tile_pass = {
    .argument = "attn-tile",
    .alias = "tile",
    .description = "Turn each attn.fused op into a tile kernel (query "
                   "blocks, online softmax over key blocks) and each "
                   "linalg.matmul into a GEMM tile kernel",
    .options = tile_options_help,
    .options_size = sizeof(struct attn_tile_options),
    .init_options = tile_init,
    .set_option = tile_set,
    .run = attn_tile_run,
};
