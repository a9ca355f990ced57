//===- attn_tile.c - attn-tile: attn.fused becomes a tile-level kernel ----===//
//
// A function whose body is one attn.fused op returning its result becomes a
// tile kernel in destination-passing style: tensors become memrefs, the
// output is a new last argument (the inputs keep the function's order and
// are named in tile.arg_names; tile.attention describes the program for the
// launch manifest), and the body is a CTA program over a grid of (query
// blocks, batch * heads):
//
//   func.func @f(%q: memref<BxHxNxD>, %k, %v, [%gate, %q_segments, ...],
//                [%capture0, ...], %out)
//       attributes {tile.kernel, tile.grid = array<i64: ceil(N/BM), B*H, 1>,
//        tile.threads = 128 : i64, tile.arg_names = [...],
//        tile.attention = {...}} {
//     %qb = "tile.program_id"() {dim = 0 : i64} ...
//     "tile.load"(%q, %qt, %b, %h, %row)          // Q tile, once per CTA
//     "tile.rope"(%qt, %row) {..., offset}        // or tile.rope_positions
//     scf.for %j = kstart to kend {               // online softmax over keys
//       "tile.load"(%k, %kt, ...) ; "tile.rope"(%kt, %col)
//       "tile.mma"(%qt, %kt, %s) {transpose_b = true, accumulate = false}
//       "tile.score_mod"(%s, %b, %h, %row, %col) {mods = ["scale"]}
//       "tile.score_fn"(%s, %b, %h, %row, %col) ({...})  // softcap, alibi,
//                                                      // gate, "fn"
//       "tile.mask"(%s, %row, %col) {causal, kv_len = M, window}
//       "tile.mask_fn"(%s, %b, %h, %row, %col) ({...})   // document, mask_fn
//       "tile.softmax_update"(%s, %m, %l, %acc) {scale = ...}
//       "tile.mma"(%s, %vt, %acc) {transpose_b = false, accumulate = true}
//     }
//     "tile.normalize"(%acc, %l) ; "tile.store"(%acc, %out, ...)
//   }
//
// One helper per block builds its part through attn_builder and the tile
// dialect's builders (build_rope, build_key_range, build_score_mods,
// build_masks, ...); each names the fused op's location by its role
// (tile.kernel, tile.prologue, tile.query_tile, tile.key_range,
// tile.key_loop, tile.softcap, tile.alibi, tile.gate, tile.score_fn,
// tile.document, tile.mask_fn, tile.epilogue; a cloned body op keeps its own
// location), and no IR is printed and parsed.
// Modifiers are applied in "mods" order: the scale by tile.score_mod;
// softcap (cap tanh(s / cap)), ALiBi (s - 2^(-max_bias (h + 1) / heads)
// |q - kv|), the gate and attn.fused's score_fn body by tile.score_fn, each a
// body, so that every path computes them as it computes any score function;
// the scale folds into the softmax's exp2 factor when nothing follows it
// (folding is exact only there), else tile.score_mod applies it in order.
// Masks come after the modifiers, so a masked score is -inf whatever they
// did: tile.mask for the affine ones, tile.mask_fn for the document mask and
// the mask_fn body. The bodies are cloned from attn.fused's regions; the
// tensors they capture (function arguments) become kernel arguments named
// capture0, ... in argument order, and tensor.extract of them a memref.load
// at indices clamped into the shape (clamp_index). The key loop visits only
// blocks a query block can see: it stops at the diagonal (causal) or right
// edge of a window and starts at its left edge. Options:
// block-m, block-n (0 picks the largest power of two up to 64 whose tiles fit
// 48 KiB, the static shared memory of the plain GPU path; with kernel=hopper,
// 128 x 128, the Hopper kernel's tiles (128 x 80 at head dim 256, 128 x 64
// with a score_mod body there); with
// kernel=mma, 128 x 64, the mma.sync kernel's) and threads (0: 128, 384
// with kernel=hopper, 2 * block-m with kernel=mma).
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
#include "dialects/body.h"
#include "dialects/tile/tile_dialect.h"
#include "lib/IR/attn_builder.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
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

/// The backward kernels' square block (b x b tiles): the largest power of
/// two from 64 down to 4 whose f32 tiles fit 48 KiB: q, k and the dq or dk
/// accumulator [b, d]; v, dO, O and dv [b, dv]; S, the raw S and dP [b, b];
/// lse and D [b]. Head dim 256 takes 4 (8 needs 57,920 bytes).
static long pick_grad_block(long d, long dv) {
  long b = 64;
  while (b > 4 && 4 * (3 * b * d + 4 * b * dv + 3 * b * b + 2 * b) > 48 * 1024)
    b /= 2;
  return b;
}

/// The kernel's parameters by role: q, k, v, then attn.fused's optional
/// inputs (enum attn_fused_extra + 3), then the output and, with lse, the
/// row log-sum-exp. attn.fused_grad's kernels take out, lse and dout as
/// inputs and write dq or dk and dv. ROLE_CAPTURE marks a function argument
/// read only by the score_fn / mask_fn bodies.
enum {
  ROLE_Q,
  ROLE_K,
  ROLE_V,
  ROLE_EXTRA0,
  ROLE_OUT = 3 + ATTN_NUM_EXTRAS,
  ROLE_LSE,
  ROLE_DOUT,
  ROLE_DQ,
  ROLE_DK,
  ROLE_DV,
  ROLE_CAPTURE
};

/// What a kernel computes: the forward, or one part of the backward.
enum kernel_part { PART_FORWARD, PART_DKDV, PART_DQ };

/// Function arguments attn-tile takes (q, k, v, the optional inputs and
/// the tensors the bodies capture).
#define MAX_ARGS 64

static const char *role_name(int role) {
  static const char *const qkv[3] = {"q", "k", "v"};
  static const char *const tail[6] = {"out", "lse", "dout", "dq", "dk", "dv"};
  return role < 3              ? qkv[role]
         : role < ROLE_OUT     ? attn_fused_extra_name(role - ROLE_EXTRA0)
         : role < ROLE_CAPTURE ? tail[role - ROLE_OUT]
                               : "?";
}

struct kernel_shape {
  int64_t q[4], k[4], v[4];
  struct attn_fused_config cfg;
  long bm, bn, threads;
  int nargs;                     // function arguments (q, k, v, inputs)
  int arg_role[MAX_ARGS];        // role of function argument i
  MlirType arg_type[MAX_ARGS];   // tensor type of function argument i
  MlirType role_type[ROLE_CAPTURE]; // tensor type of each present role
  bool grad;                     // attn.fused_grad (else attn.fused)
  enum kernel_part part;         // the kernel being built
  MlirBlock score_fn, mask_fn;   // attn.fused's bodies (null when empty)
  MlirBlock func_body;           // the function's entry block
  // attn.fused_grad's gradients into captured tensors ("grads"): what
  // each is (ATTN_GRAD_GATE or a capture's index), its function argument
  // and its type.
  int ngrads;
  int grad_target[ATTN_MAX_GRADS];
  int grad_arg[ATTN_MAX_GRADS];
  MlirType grad_type[ATTN_MAX_GRADS];
};

/// The tiles: q, k, v, scores, the accumulator (o; dq in the dq kernel, dk
/// in the dkdv kernel), then the backward's: the raw scores kept for the
/// chain's derivative, dP (then dS), dO, O and the dv accumulator.
enum { T_Q, T_K, T_V, T_S, T_ACC, T_SIN, T_DP, T_DO, T_O, T_DV, NUM_TILES };

static bool has_role(const struct kernel_shape *s, int role) {
  return !mlirTypeIsNull(s->role_type[role]);
}

/// The memref type matching a static tensor type.
static MlirType memref_of(MlirType tensor) {
  int64_t d[8];
  int rank = attn_static_shape(tensor, d);
  return mlirMemRefTypeContiguousGet(mlirShapedTypeGetElementType(tensor),
                                     rank, d, mlirAttributeGetNull());
}

//===-- The kernel, one helper per block ----------------------------------===//

/// One kernel being built: its shape, the builder, and the values the
/// blocks share (the parameters by role, the grid position, the tiles).
struct kernel {
  const struct kernel_shape *s;
  struct attn_builder b;
  MlirValue arg[ROLE_CAPTURE];
  MlirValue fn_arg[MAX_ARGS]; // the kernel argument of function argument i
  MlirValue c0, c1, bm, bn;
  MlirValue batch, head, kv_head, row; // the CTA's (b, h), K/V head, row 0
  MlirValue tile[NUM_TILES], m, l;     // the tiles; row max, sum
  MlirValue lse, d;                    // row vectors: lse; D = rowsum(dO O)
  MlirType tile_ty[NUM_TILES], row_ty;
  MlirType ct; // the compute type: f64 for f64 programs, else f32
  MlirValue grad[ATTN_MAX_GRADS]; // the gradient buffers (kernel args)
  MlirValue pid[2];               // the backward's program ids 0 and 1
  MlirValue gate_at[4];           // the indices gate_value read last
};

/// arith.constant of v in the kernel's compute type (f32: v as a float).
static MlirValue kconst(struct kernel *k, double v) {
  return attn_b_float(&k->b, k->ct, v);
}

/// Where the scale goes: folded into the softmax's exp2 constant when
/// nothing follows it (no softcap, alibi, gate or score_fn: exact only
/// there), else applied in order by tile.score_mod.
static bool scale_folds(const struct kernel_shape *s) {
  const struct attn_fused_config *c = &s->cfg;
  return c->nmods == 0 || c->mods[c->nmods - 1] == ATTN_MOD_SCALE;
}

static void grad_name(const struct kernel_shape *s, int i, char name[24]);

/// The dictionary tile.attention: everything the kernel computes, for the
/// launch manifest.
static MlirAttribute attention_dict(struct attn_builder *b,
                                    const struct kernel_shape *s) {
  const struct attn_fused_config *c = &s->cfg;
  MlirNamedAttribute d[14], r[8];
  int n = 0, nr = 0;
  d[n++] = attn_b_named(b, "causal", attn_b_attr_bool(b, c->causal));
  d[n++] = attn_b_named(b, "scale", attn_b_attr_f64(b, c->scale));
  int64_t window[2] = {c->window_left, c->window_right};
  if (c->has_window)
    d[n++] = attn_b_named(b, "window", attn_b_attr_i64s(b, 2, window));
  if (c->has_alibi)
    d[n++] = attn_b_named(b, "alibi", attn_b_attr_f64(b, c->alibi_max_bias));
  if (c->has_softcap)
    d[n++] = attn_b_named(b, "softcap", attn_b_attr_f64(b, c->softcap));
  if (c->has_gate)
    d[n++] = attn_b_named(b, "gate_block", attn_b_attr_i64(b, c->gate_block));
  if (c->document)
    d[n++] = attn_b_named(b, "document", attn_b_attr_bool(b, true));
  const char *mods[ATTN_NUM_MODS];
  for (int i = 0; i < c->nmods; ++i)
    mods[i] = attn_score_mod_name(c->mods[i]);
  d[n++] = attn_b_named(b, "mods", attn_b_attr_strs(b, c->nmods, mods));
  if (c->has_rope) {
    r[nr++] = attn_b_named(
        b, "layout", attn_b_attr_str(b, attn_rope_layout_name(c->rope.layout)));
    r[nr++] =
        attn_b_named(b, "rotary_dim", attn_b_attr_i64(b, c->rope.rotary_dim));
    r[nr++] = attn_b_named(b, "theta", attn_b_attr_f64(b, c->rope.theta));
    if (c->q_offset)
      r[nr++] = attn_b_named(b, "q_offset", attn_b_attr_i64(b, c->q_offset));
    if (c->k_offset)
      r[nr++] = attn_b_named(b, "k_offset", attn_b_attr_i64(b, c->k_offset));
    if (c->extra[ATTN_EXTRA_Q_POSITIONS] >= 0)
      r[nr++] = attn_b_named(b, "q_positions", attn_b_attr_bool(b, true));
    if (c->extra[ATTN_EXTRA_K_POSITIONS] >= 0)
      r[nr++] = attn_b_named(b, "k_positions", attn_b_attr_bool(b, true));
    if (c->rope_strategy != ATTN_ROPE_STRATEGY_NONE)
      r[nr++] = attn_b_named(
          b, "strategy",
          attn_b_attr_str(b, attn_rope_strategy_name(c->rope_strategy)));
    d[n++] = attn_b_named(b, "rope", mlirDictionaryAttrGet(b->ctx, nr, r));
  }
  if (c->lse)
    d[n++] = attn_b_named(b, "lse", attn_b_attr_bool(b, true));
  if (s->part != PART_FORWARD)
    d[n++] = attn_b_named(
        b, "part", attn_b_attr_str(b, s->part == PART_DQ ? "dq" : "dkdv"));
  // The gradients into captured tensors, by their kernel names (the
  // tensor-core backward computes none: its lowering refuses the key).
  char gnames[ATTN_MAX_GRADS][24];
  const char *gn[ATTN_MAX_GRADS];
  for (int i = 0; s->part != PART_FORWARD && i < s->ngrads; ++i) {
    grad_name(s, i, gnames[i]);
    gn[i] = gnames[i];
  }
  if (s->part != PART_FORWARD && s->ngrads)
    d[n++] = attn_b_named(b, "grads", attn_b_attr_strs(b, s->ngrads, gn));
  return mlirDictionaryAttrGet(b->ctx, n, d);
}

/// The roles a kernel writes, after the function's arguments: out (and lse
/// with lse) for the forward, dk and dv, or dq. Returns how many.
static int output_roles(const struct kernel_shape *s, int out[2]) {
  if (s->part == PART_DKDV) {
    out[0] = ROLE_DK;
    out[1] = ROLE_DV;
    return 2;
  }
  out[0] = s->part == PART_DQ ? ROLE_DQ : ROLE_OUT;
  out[1] = ROLE_LSE;
  return s->part == PART_FORWARD && s->cfg.lse ? 2 : 1;
}

/// Opens the kernel function: arguments by role, then the outputs (out,
/// [lse]; or dk, dv; or dq); launch attributes (the dkdv kernel's grid
/// runs over key blocks and K/V heads). Fills k->arg.
/// The kernels' names of the function's arguments (tile.arg_names, the
/// launch program's inputs): each role's, and capture0, ... for the
/// captures in argument order (their text in captures).
static void arg_names(const struct kernel_shape *s, const char **names,
                      char captures[][24]) {
  int ncaptures = 0;
  for (int i = 0; i < s->nargs; ++i) {
    if (s->arg_role[i] == ROLE_CAPTURE) {
      snprintf(captures[i], sizeof captures[i], "capture%d", ncaptures++);
      names[i] = captures[i];
    } else {
      names[i] = role_name(s->arg_role[i]);
    }
  }
}

/// The kernels' name of gradient i: dgate, dcapture<c>.
static void grad_name(const struct kernel_shape *s, int i, char name[24]) {
  if (s->grad_target[i] == ATTN_GRAD_GATE)
    snprintf(name, 24, "dgate");
  else
    snprintf(name, 24, "dcapture%d", s->grad_target[i]);
}

static void build_signature(struct kernel *k, struct attn_b_func *f,
                            const char *name) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  MlirType types[MAX_ARGS + 2 + ATTN_MAX_GRADS];
  const char *names[MAX_ARGS + 2 + ATTN_MAX_GRADS];
  char capture_names[MAX_ARGS][24], gnames[ATTN_MAX_GRADS][24];
  arg_names(s, names, capture_names);
  for (int i = 0; i < s->nargs; ++i)
    types[i] = memref_of(s->arg_type[i]);
  int out[2];
  int nout = output_roles(s, out);
  for (int i = 0; i < nout; ++i) {
    types[s->nargs + i] = memref_of(s->role_type[out[i]]);
    names[s->nargs + i] = role_name(out[i]);
  }
  // The backward's kernels both take the gradient buffers: the dkdv
  // kernel (launched first) zeroes them, the dq kernel accumulates.
  int ngrads = s->part == PART_FORWARD ? 0 : s->ngrads;
  for (int i = 0; i < ngrads; ++i) {
    grad_name(s, i, gnames[i]);
    types[s->nargs + nout + i] = memref_of(s->grad_type[i]);
    names[s->nargs + nout + i] = gnames[i];
  }
  int64_t grid[3] = {(s->q[2] + s->bm - 1) / s->bm, s->q[0] * s->q[1], 1};
  if (s->part == PART_DKDV) {
    grid[0] = (s->k[2] + s->bn - 1) / s->bn;
    grid[1] = s->k[0] * s->k[1];
  }
  MlirNamedAttribute attrs[] = {
      attn_b_named(b, ATTN_TILE_KERNEL_ATTR, attn_b_attr_unit(b)),
      attn_b_named(b, ATTN_TILE_GRID_ATTR, attn_b_attr_i64s(b, 3, grid)),
      attn_b_named(b, ATTN_TILE_THREADS_ATTR, attn_b_attr_i64(b, s->threads)),
      attn_b_named(b, ATTN_TILE_ARG_NAMES_ATTR,
                   attn_b_attr_strs(b, s->nargs + nout + ngrads, names)),
      attn_b_named(b,
                   s->part == PART_FORWARD ? "tile.attention"
                                           : "tile.attention_grad",
                   attention_dict(b, s)),
  };
  attn_builder_role(b, "tile.kernel");
  attn_b_func_open(b, f, name, s->nargs + nout + ngrads, types, 0, NULL,
                   sizeof attrs / sizeof *attrs, attrs);
  for (int i = 0; i < s->nargs; ++i) {
    k->fn_arg[i] = attn_b_func_arg(f, i);
    if (s->arg_role[i] != ROLE_CAPTURE)
      k->arg[s->arg_role[i]] = k->fn_arg[i];
  }
  for (int i = 0; i < nout; ++i)
    k->arg[out[i]] = attn_b_func_arg(f, s->nargs + i);
  for (int i = 0; i < ngrads; ++i)
    k->grad[i] = attn_b_func_arg(f, s->nargs + nout + i);
}

/// Grid position, index constants and the CTA's tiles.
static void build_prologue(struct kernel *k) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.prologue");
  MlirValue qb = attn_tile_build_program_id(b, 0);
  MlirValue bh = attn_tile_build_program_id(b, 1);
  k->c0 = attn_b_index(b, 0);
  k->c1 = attn_b_index(b, 1);
  MlirValue heads = attn_b_index(b, s->q[1]);
  MlirValue group = attn_b_index(b, s->q[1] / s->k[1]);
  k->bm = attn_b_index(b, s->bm);
  k->bn = attn_b_index(b, s->bn);
  k->batch = attn_b_divui(b, bh, heads);
  k->head = attn_b_remui(b, bh, heads);
  k->kv_head = attn_b_divui(b, k->head, group);
  k->row = attn_b_muli(b, qb, k->bm);
  for (int i = 0; i < 5; ++i)
    k->tile[i] = attn_tile_build_alloc(b, k->tile_ty[i]);
  k->m = attn_tile_build_alloc(b, k->row_ty);
  k->l = attn_tile_build_alloc(b, k->row_ty);
  if (s->cfg.lse)
    k->lse = attn_tile_build_alloc(b, k->row_ty);
}

/// Rotates tile whose row 0 is sequence row pos: at explicit positions
/// (tile.rope_positions) or at offset + row (tile.rope).
static void build_rope(struct kernel *k, MlirValue tile, MlirValue pos,
                       bool keys) {
  const struct kernel_shape *s = k->s;
  const struct attn_rope_config *r = &s->cfg.rope;
  int role =
      ROLE_EXTRA0 + (keys ? ATTN_EXTRA_K_POSITIONS : ATTN_EXTRA_Q_POSITIONS);
  const char *layout = attn_rope_layout_name(r->layout);
  if (has_role(s, role))
    attn_tile_build_rope_positions(&k->b, tile, k->batch, pos, k->arg[role],
                                   r->theta, r->rotary_dim, layout);
  else
    attn_tile_build_rope(&k->b, tile, pos, r->theta, r->rotary_dim, layout,
                         keys ? s->cfg.k_offset : s->cfg.q_offset);
}

/// Copies rows of head (batch, head) of role's tensor into a tile.
static void build_load(struct kernel *k, int role, int tile, MlirValue head,
                       MlirValue pos) {
  MlirValue idx[] = {k->batch, head, pos};
  attn_tile_build_load(&k->b, k->arg[role], k->tile[tile], 3, idx);
}

/// Q is loaded and rotated once per CTA; the softmax state starts empty.
static void build_query_tile(struct kernel *k) {
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.query_tile");
  build_load(k, ROLE_Q, T_Q, k->head, k->row);
  if (k->s->cfg.has_rope)
    build_rope(k, k->tile[T_Q], k->row, false);
  attn_tile_build_fill(b, k->tile[T_ACC], 0.0);
  attn_tile_build_fill(b, k->m, -INFINITY);
  attn_tile_build_fill(b, k->l, 0.0);
}

/// The key blocks a query block can see: [*lo, *hi). Blocks entirely after
/// the diagonal (causal), right of the window or left of it are never
/// visited.
static void build_key_range(struct kernel *k, MlirValue *lo, MlirValue *hi) {
  const struct kernel_shape *s = k->s;
  const struct attn_fused_config *c = &s->cfg;
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.key_range");
  MlirValue nkb = attn_b_index(b, (s->k[2] + s->bn - 1) / s->bn);
  *lo = k->c0;
  *hi = nkb;
  bool right = c->causal || (c->has_window && c->window_right >= 0);
  if (right) {
    // Query rows [row, row + bm) see keys up to row + bm - 1 + reach.
    int64_t reach = c->causal ? 0 : c->window_right;
    MlirValue last = attn_b_addi(b, k->row, k->bm);
    if (reach)
      last = attn_b_addi(b, last, attn_b_index(b, reach));
    MlirValue diag = attn_b_ceildivui(b, last, k->bn);
    *hi = attn_b_minui(b, diag, nkb);
  }
  if (c->has_window && c->window_left >= 0) {
    // Row `row` sees keys from row - left on.
    MlirValue left = attn_b_index(b, c->window_left);
    MlirValue first = attn_b_subi(b, k->row, left);
    MlirValue first0 = attn_b_binary(b, "arith.maxsi", first, k->c0);
    *lo = attn_b_divui(b, first0, k->bn);
  }
}

//===-- Bodies: score_fn, mask_fn, the gate and the document mask --------===//

/// attn.fused's bodies being cloned into tile.score_fn / tile.mask_fn: a
/// captured tensor (a function argument) becomes the kernel's memref
/// argument, and tensor.extract of it a memref.load at clamped indices.
struct body_clone {
  struct kernel *k;
  MlirBlock src;     // the body being cloned
  int64_t bound[5];  // its arguments' ranges: b < B, h < H, q < N, kv < M
  MlirOperation seed; // a read whose clamped indices to keep (or null)
  MlirValue seed_idx[8];
  int seed_n;         // how many seed_idx holds (0: seed not cloned yet)
};

/// Index v (of the source body; image its clone) clamped into [0, dim):
/// maxsi with 0 (v may be negative when an index was computed by
/// subtraction), then minui with dim - 1. Kept as is when it is already in
/// range: a constant inside the shape, or an index argument (b, h, q, kv)
/// whose range fits; a dimension of 1 reads element 0.
static MlirValue clamp_index(struct attn_builder *b,
                             const struct body_clone *c, MlirValue v,
                             MlirValue image, int64_t dim) {
  if (mlirValueIsAOpResult(v) &&
      attn_op_is(mlirOpResultGetOwner(v), "arith.constant")) {
    MlirAttribute a = attn_attr_get(mlirOpResultGetOwner(v), "value");
    if (mlirAttributeIsAInteger(a)) {
      int64_t k = mlirIntegerAttrGetValueInt(a);
      if (k >= 0 && k < dim)
        return image;
    }
  }
  if (mlirValueIsABlockArgument(v) &&
      mlirBlockEqual(mlirBlockArgumentGetOwner(v), c->src)) {
    intptr_t n = mlirBlockGetNumArguments(c->src);
    intptr_t i = mlirBlockArgumentGetArgNumber(v) + (5 - n);
    if (i >= 1 && c->bound[i] <= dim)
      return image;
  }
  if (dim == 1)
    return attn_b_index(b, 0);
  MlirValue lo = attn_b_binary(b, "arith.maxsi", image, attn_b_index(b, 0));
  return attn_b_minui(b, lo, attn_b_index(b, dim - 1));
}

/// The kernel argument of function argument v (a capture), or null.
static MlirValue capture_arg(const struct kernel *k, MlirValue v) {
  if (!mlirValueIsABlockArgument(v) ||
      !mlirBlockEqual(mlirBlockArgumentGetOwner(v), k->s->func_body))
    return (MlirValue){NULL};
  return k->fn_arg[mlirBlockArgumentGetArgNumber(v)];
}

static bool clone_extract(struct attn_builder *b, MlirOperation op,
                          struct attn_b_map *m, void *user) {
  struct body_clone *c = user;
  if (!attn_op_is(op, "tensor.extract"))
    return false;
  MlirValue src = mlirOperationGetOperand(op, 0);
  MlirValue mem = capture_arg(c->k, src);
  int64_t dims[8];
  int rank = attn_static_shape(mlirValueGetType(src), dims);
  MlirValue idx[8];
  intptr_t n = mlirOperationGetNumOperands(op) - 1;
  if (mlirValueIsNull(mem) || rank != n) {
    attn_builder_fail(b, "a tensor.extract in a modifier body does not read "
                         "a captured function argument (a bug in attn)");
    return true;
  }
  MlirLocation saved = b->loc;
  b->loc = mlirOperationGetLocation(op);
  for (intptr_t i = 0; i < n; ++i) {
    MlirValue v = mlirOperationGetOperand(op, i + 1);
    idx[i] = clamp_index(b, c, v, attn_b_map_get(m, v), dims[i]);
  }
  MlirValue x = attn_b_load(b, mem, n, idx);
  b->loc = saved;
  attn_b_map_add(m, mlirOperationGetResult(op, 0), x);
  if (!mlirOperationIsNull(c->seed) && mlirOperationEqual(op, c->seed)) {
    memcpy(c->seed_idx, idx, sizeof(MlirValue) * (size_t)n);
    c->seed_n = (int)n;
  }
  return true;
}

/// Ends a body block being built with gpu.yield y and puts b back where it
/// was.
static void end_body(struct attn_builder *b, MlirValue y, MlirBlock block,
                     MlirOperation anchor) {
  attn_b_op(b, "gpu.yield", 0, NULL, 1, &y, 0, NULL, 0);
  b->block = block;
  b->anchor = anchor;
}

/// Clones src (attn.fused's score_fn or mask_fn) into the fresh body block
/// dst of a tile.score_fn / tile.mask_fn.
static void clone_body(struct kernel *k, MlirBlock dst, MlirBlock src) {
  struct attn_builder *b = &k->b;
  if (mlirBlockIsNull(dst))
    return;
  MlirBlock block = b->block;
  MlirOperation anchor = b->anchor;
  attn_builder_at_end(b, dst);
  MlirValue args[5];
  intptr_t n = mlirBlockGetNumArguments(dst);
  for (intptr_t i = 0; i < n && i < 5; ++i)
    args[i] = mlirBlockGetArgument(dst, i);
  const struct kernel_shape *s = k->s;
  struct body_clone c = {k, src, {0, s->q[0], s->q[1], s->q[2], s->k[2]},
                         {NULL}, {{NULL}}, 0};
  struct attn_b_map m = {0};
  MlirValue y = attn_b_clone_body(b, src, args, &m, clone_extract, &c);
  attn_b_map_free(&m);
  end_body(b, y, block, anchor);
}

/// Opens a tile.score_fn on the key loop's scores, its location named by
/// role: its body block (arguments s, b, h, q, kv), with k's builder at its
/// end and where it was in *block and *anchor (for end_body); a null block
/// when building failed.
static MlirBlock open_score_fn(struct kernel *k, MlirValue col,
                               const char *role, MlirBlock *block,
                               MlirOperation *anchor) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  attn_builder_role(b, role);
  MlirBlock body = attn_tile_build_score_fn(b, k->tile[T_S], k->batch,
                                            k->head, k->row, col, s->q[2],
                                            s->k[2]);
  if (mlirBlockIsNull(body))
    return body;
  *block = b->block;
  *anchor = b->anchor;
  attn_builder_at_end(b, body);
  return body;
}

/// Softcap of score x in a body: cap tanh(x / cap); *th (when not NULL)
/// gets tanh(x / cap), for the derivative 1 - th^2.
static MlirValue softcap_value(struct kernel *k, MlirValue x, MlirValue *th) {
  struct attn_builder *b = &k->b;
  MlirValue cap = kconst(k, k->s->cfg.softcap);
  MlirValue t = attn_b_divf(b, x, cap);
  MlirValue h = attn_b_unary(b, "math.tanh", t);
  if (th)
    *th = h;
  return attn_b_mulf(b, h, cap);
}

/// Softcap of score x in a body, as a named modifier's value (below).
static MlirValue softcap_body(struct kernel *k, MlirBlock body, MlirValue x) {
  (void)body;
  return softcap_value(k, x, NULL);
}

/// ALiBi of score x in a body whose arguments are body's (s, b, h, q, kv):
/// x - m_h |q - kv| with the head's slope m_h = 2^(-max_bias (h + 1) /
/// heads), computed in the body from h (the kernels make it once per tile,
/// and fold the pending scale into it: the add form of
/// lib/Kernels/score_fn.c).
static MlirValue alibi_value(struct kernel *k, MlirBlock body, MlirValue x) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  MlirValue h1 =
      attn_b_addi(b, mlirBlockGetArgument(body, 2), attn_b_index(b, 1));
  MlirValue hf = attn_b_cast(
      b, "arith.uitofp", attn_b_cast(b, "arith.index_cast", h1, b->t.i64),
      k->ct);
  MlirValue e = attn_b_mulf(
      b, hf, kconst(k, -s->cfg.alibi_max_bias / (double)s->q[1]));
  MlirValue slope = attn_b_unary(b, "math.exp2", e);
  MlirValue q = attn_b_cast(b, "arith.index_cast",
                            mlirBlockGetArgument(body, 3), b->t.i64);
  MlirValue kv = attn_b_cast(b, "arith.index_cast",
                             mlirBlockGetArgument(body, 4), b->t.i64);
  MlirValue d = attn_b_cast(b, "arith.sitofp", attn_b_subi(b, q, kv), k->ct);
  MlirValue p = attn_b_mulf(b, attn_b_unary(b, "math.absf", d), slope);
  return attn_b_subf(b, x, p);
}

/// The gate of score x in a body whose arguments are body's: x + gate[b,
/// h, q, min(kv / gate_block, blocks - 1)] (q is already clamped into the
/// sequence).
static MlirValue gate_value(struct kernel *k, MlirBlock body, MlirValue x) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  MlirValue gate = k->arg[ROLE_EXTRA0 + ATTN_EXTRA_GATE];
  int64_t g[8];
  attn_static_shape(mlirValueGetType(gate), g);
  MlirValue kv = mlirBlockGetArgument(body, 4);
  MlirValue blk = attn_b_divui(b, kv, attn_b_index(b, s->cfg.gate_block));
  MlirValue at[4] = {mlirBlockGetArgument(body, 1),
                     mlirBlockGetArgument(body, 2),
                     mlirBlockGetArgument(body, 3),
                     attn_b_minui(b, blk, attn_b_index(b, g[3] - 1))};
  memcpy(k->gate_at, at, sizeof at);
  return attn_b_addf(b, x, attn_b_load(b, gate, 4, at));
}

/// A named modifier's value of score x in a body whose arguments are
/// body's (s, b, h, q, kv).
typedef MlirValue (*mod_value_fn)(struct kernel *k, MlirBlock body,
                                  MlirValue x);

/// tile.score_fn of a named modifier (softcap, ALiBi, the gate) located at
/// role: its value of the body's score (the kernels keep their scale
/// folding: lib/Kernels/score_fn.c's in, out and add forms).
static void build_mod_body(struct kernel *k, MlirValue col, const char *role,
                           mod_value_fn value) {
  struct attn_builder *b = &k->b;
  MlirBlock block;
  MlirOperation anchor;
  MlirBlock body = open_score_fn(k, col, role, &block, &anchor);
  if (mlirBlockIsNull(body))
    return;
  end_body(b, value(k, body, mlirBlockGetArgument(body, 0)), block, anchor);
  attn_builder_role(b, "tile.key_loop");
}

/// tile.mask_fn of the document mask: q_segments[b, q] == k_segments[b, kv].
static void build_document(struct kernel *k, MlirValue col) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.document");
  MlirBlock body = attn_tile_build_mask_fn(b, k->tile[T_S], k->batch, k->head,
                                           k->row, col, s->q[2], s->k[2]);
  if (mlirBlockIsNull(body))
    return;
  MlirBlock block = b->block;
  MlirOperation anchor = b->anchor;
  attn_builder_at_end(b, body);
  MlirValue bq[2] = {mlirBlockGetArgument(body, 0),
                     mlirBlockGetArgument(body, 2)};
  MlirValue bk[2] = {bq[0], mlirBlockGetArgument(body, 3)};
  MlirValue qs =
      attn_b_load(b, k->arg[ROLE_EXTRA0 + ATTN_EXTRA_Q_SEGMENTS], 2, bq);
  MlirValue ks =
      attn_b_load(b, k->arg[ROLE_EXTRA0 + ATTN_EXTRA_K_SEGMENTS], 2, bk);
  end_body(b, attn_b_cmpi(b, ATTN_B_EQ, qs, ks), block, anchor);
  attn_builder_role(b, "tile.key_loop");
}

/// tile.score_mod of the named modifiers m (emptied after), when any.
static void flush_score_mod(struct kernel *k, MlirValue col,
                            struct attn_tile_score_mods *m) {
  if (m->n == 0)
    return;
  attn_tile_build_score_mod(&k->b, k->tile[T_S], k->batch, k->head, k->row,
                            col, m);
  m->n = 0;
}

/// The score modifiers applied inside the loop, in program order: the
/// scale as tile.score_mod; softcap, ALiBi, the gate and the score_fn body
/// as tile.score_fn, each a body, so that every path computes them as it
/// computes any score function. The scale is left out when it folds into
/// the softmax.
static void build_score_mods(struct kernel *k, MlirValue col) {
  const struct kernel_shape *s = k->s;
  const struct attn_fused_config *c = &s->cfg;
  bool fold = scale_folds(s);
  struct attn_tile_score_mods m;
  memset(&m, 0, sizeof m);
  m.scale = c->scale;
  for (int i = 0; i < c->nmods; ++i) {
    int step = c->mods[i];
    if (step == ATTN_MOD_SOFTCAP) {
      flush_score_mod(k, col, &m);
      build_mod_body(k, col, "tile.softcap", softcap_body);
    } else if (step == ATTN_MOD_ALIBI) {
      flush_score_mod(k, col, &m);
      build_mod_body(k, col, "tile.alibi", alibi_value);
    } else if (step == ATTN_MOD_GATE) {
      flush_score_mod(k, col, &m);
      build_mod_body(k, col, "tile.gate", gate_value);
    } else if (step == ATTN_MOD_FN) {
      flush_score_mod(k, col, &m);
      attn_builder_role(&k->b, "tile.score_fn");
      clone_body(k,
                 attn_tile_build_score_fn(&k->b, k->tile[T_S], k->batch,
                                          k->head, k->row, col, s->q[2],
                                          s->k[2]),
                 s->score_fn);
      attn_builder_role(&k->b, "tile.key_loop");
    } else if (step != ATTN_MOD_SCALE || !(fold || c->scale == 1.0)) {
      m.mods[m.n++] = step;
    }
  }
  flush_score_mod(k, col, &m);
}

/// Masks after the modifiers: padding keys, causal, window (tile.mask, the
/// affine masks), then documents and the mask_fn body (tile.mask_fn). A
/// masked score is -inf whatever the modifiers did (masks commute).
static void build_masks(struct kernel *k, MlirValue col) {
  const struct kernel_shape *s = k->s;
  const struct attn_fused_config *c = &s->cfg;
  int64_t window[2] = {c->window_left, c->window_right};
  attn_tile_build_mask(&k->b, k->tile[T_S], k->row, col, c->causal, s->k[2],
                       c->has_window ? window : NULL);
  if (c->document)
    build_document(k, col);
  if (!mlirBlockIsNull(s->mask_fn)) {
    attn_builder_role(&k->b, "tile.mask_fn");
    clone_body(k,
               attn_tile_build_mask_fn(&k->b, k->tile[T_S], k->batch, k->head,
                                       k->row, col, s->q[2], s->k[2]),
               s->mask_fn);
    attn_builder_role(&k->b, "tile.key_loop");
  }
}

/// The key loop: per step K (rotated) and V tiles, scores, modifiers,
/// masks, the online softmax update and P.V.
static void build_key_loop(struct kernel *k, MlirValue lo, MlirValue hi) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.key_loop");
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, lo, hi, k->c1, 0, NULL);
  MlirValue col = attn_b_muli(b, loop.iv, k->bn);
  build_load(k, ROLE_K, T_K, k->kv_head, col);
  if (s->cfg.has_rope)
    build_rope(k, k->tile[T_K], col, true);
  build_load(k, ROLE_V, T_V, k->kv_head, col);
  attn_tile_build_mma(b, k->tile[T_Q], k->tile[T_K], k->tile[T_S], true,
                      false);
  build_score_mods(k, col);
  build_masks(k, col);
  attn_tile_build_softmax_update(b, k->tile[T_S], k->m, k->l, k->tile[T_ACC],
                                 scale_folds(s) ? s->cfg.scale : 1.0);
  attn_tile_build_mma(b, k->tile[T_S], k->tile[T_V], k->tile[T_ACC], false,
                      true);
  attn_b_for_close(b, &loop, 0, NULL);
}

static void build_epilogue(struct kernel *k, struct attn_b_func *f) {
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.epilogue");
  attn_tile_build_normalize(b, k->tile[T_ACC], k->l);
  MlirValue idx[] = {k->batch, k->head, k->row};
  attn_tile_build_store(b, k->tile[T_ACC], k->arg[ROLE_OUT], 3, idx);
  if (k->s->cfg.lse) {
    // The row log-sum-exp, for the backward: from the softmax's m and l.
    attn_tile_build_row_lse(b, k->m, k->l, k->lse);
    attn_tile_build_store(b, k->lse, k->arg[ROLE_LSE], 3, idx);
  }
  attn_b_func_close(b, f, 0, NULL);
}

//===-- The backward (attn.fused_grad) ------------------------------------===//
//
// Two kernels, deterministic (each output element is written by one CTA):
//
//   @f__grad__dkdv, grid (ceil(M / BN), B * Hkv): K and V of one key block
//   (K rotated), dK = dV = 0; for each query head of the K/V head's group,
//   for each query block that sees the key block:
//     Q (rotated), dO, O, lse; D = rowsum(dO O)         tile.row_dot
//     S = Q K^T [S_in = Q K^T]; modifiers; masks          as the forward
//     P = exp(scale S - lse)                              tile.exp_lse
//     dV += P^T dO                                        tile.mma transpose_a
//     dP = dO V^T; dS = scale P (dP - D)                  tile.ds
//     [dS *= d chain / d s_raw at S_in]                   tile.score_fn_grad
//     dK += dS^T Q
//   then dK rotated back (tile.rope inverse) and dK, dV stored.
//
//   @f__grad__dq, grid (ceil(N / BM), B * H): Q (rotated), dO, O, lse, D,
//   dQ = 0; for each key block the query block sees: K (rotated), V, S,
//   P, dP, dS as above, dQ += dS K; then dQ rotated back and stored.
//
// The scale: folded into exp_lse when the forward folds it into the
// softmax (nothing after it), and then also into tile.ds, since dS with
// respect to the raw score is scale dS. When the modifier chain is
// nonlinear (softcap or a score_fn body), dS is multiplied by the chain's
// derivative with respect to the raw score, at the raw score S_in (a
// second tile.mma: the tile dialect has no copy): a tile.score_fn_grad
// whose body is the chain differentiated in forward mode (softcap's
// 1 - tanh^2; the score_fn body's ops by attn_grad_body.c's rules; the
// scale, ALiBi and the gate add or multiply by constants). A linear chain
// (scale, ALiBi, gate) has the constant derivative scale, which tile.ds
// applies.
//
// Gradients into captured tensors (attn.fused_grad's grads): both kernels
// take the gradient buffers after their outputs; the dkdv kernel's first
// CTA zeroes them (tile.clear), and the dq kernel, which visits each
// (query, key) pair of a head once, keeps S_in and, after tile.ds,
// accumulates one tile.capture_grad per read of the tensor (the gate's,
// each tensor.extract of it in the score_fn body): the chain again from
// S_in in forward mode, the tangent seeded at that read, times dS times
// exp_scale / ds_scale (dS with respect to the chain's value), added at
// the read's indices (atomically: not bitwise deterministic on the GPU).

/// True when the modifier chain after the raw score is nonlinear (softcap
/// or a score_fn body): its derivative is then not a constant.
static bool chain_nonlinear(const struct kernel_shape *s) {
  return s->cfg.has_softcap || s->cfg.has_score_fn;
}

/// The scale tile.exp_lse applies: the forward's softmax factor.
static double exp_scale(const struct kernel_shape *s) {
  return scale_folds(s) ? s->cfg.scale : 1.0;
}

/// The scale tile.ds applies: d final score / d raw score where it is a
/// constant (a linear chain), else what is left of the scale after the
/// chain's derivative (the folded scale).
static double ds_scale(const struct kernel_shape *s) {
  return chain_nonlinear(s) ? exp_scale(s) : s->cfg.scale;
}

/// tile.score_fn_grad on dS (T_DP) at the raw scores T_SIN: its body is
/// the derivative of the modifiers build_score_mods applies, in order,
/// with respect to the raw score.
static void build_chain_grad(struct kernel *k, MlirValue col) {
  const struct kernel_shape *s = k->s;
  const struct attn_fused_config *c = &s->cfg;
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.score_fn_grad");
  MlirBlock body = attn_tile_build_score_fn_grad(
      b, k->tile[T_DP], k->tile[T_SIN], k->batch, k->head, k->row, col,
      s->q[2], s->k[2]);
  if (mlirBlockIsNull(body))
    return;
  MlirBlock block = b->block;
  MlirOperation anchor = b->anchor;
  attn_builder_at_end(b, body);
  MlirValue x = mlirBlockGetArgument(body, 0);
  MlirValue t = kconst(k, 1.0);
  bool fold = scale_folds(s);
  for (int i = 0; i < c->nmods && !b->failed; ++i) {
    int step = c->mods[i];
    if (step == ATTN_MOD_SCALE) {
      if (fold || c->scale == 1.0)
        continue; // in tile.ds's scale
      MlirValue sc = kconst(k, c->scale);
      x = attn_b_mulf(b, x, sc);
      t = attn_b_mulf(b, t, sc);
    } else if (step == ATTN_MOD_SOFTCAP) {
      MlirValue th;
      x = softcap_value(k, x, &th);
      t = attn_b_mulf(
          b, t, attn_b_subf(b, kconst(k, 1.0), attn_b_mulf(b, th, th)));
    } else if (step == ATTN_MOD_ALIBI) {
      x = alibi_value(k, body, x);
    } else if (step == ATTN_MOD_GATE) {
      x = gate_value(k, body, x);
    } else if (step == ATTN_MOD_FN) {
      MlirValue args[5] = {x};
      for (int a = 1; a < 5; ++a)
        args[a] = mlirBlockGetArgument(body, a);
      struct body_clone bc = {k, s->score_fn,
                              {0, s->q[0], s->q[1], s->q[2], s->k[2]},
                              {NULL}, {{NULL}}, 0};
      struct attn_b_map m = {0};
      MlirValue dt;
      x = attn_grad_clone_tangent(b, s->score_fn, args, t, &m, clone_extract,
                                  &bc, &dt);
      attn_b_map_free(&m);
      t = mlirValueIsNull(dt) ? kconst(k, 0.0) : dt;
    }
  }
  end_body(b, t, block, anchor);
}

/// True when a backward kernel keeps the raw scores S_in: for the chain's
/// derivative (a nonlinear chain), and in the dq kernel for the gradients
/// into captured tensors, whose chain is evaluated again from S_in.
static bool keeps_raw(const struct kernel_shape *s) {
  return chain_nonlinear(s) || (s->part == PART_DQ && s->ngrads > 0);
}

/// Builds, in body (a tile.capture_grad's, builder at its end), the chain
/// build_score_mods applies with, in forward mode, the derivative of its
/// value with respect to one value it reads: the gate's (gate) or what
/// the score_fn body's read seed loads; ends the body with gpu.yield of
/// that derivative and the read's indices.
static void build_site_body(struct kernel *k, MlirBlock body,
                            MlirOperation seed, bool gate) {
  const struct kernel_shape *s = k->s;
  const struct attn_fused_config *c = &s->cfg;
  struct attn_builder *b = &k->b;
  MlirValue x = mlirBlockGetArgument(body, 0), t = {NULL};
  MlirValue idx[8];
  int nidx = 0;
  bool fold = scale_folds(s);
  for (int i = 0; i < c->nmods && !b->failed; ++i) {
    int step = c->mods[i];
    if (step == ATTN_MOD_SCALE) {
      if (fold || c->scale == 1.0)
        continue; // in the factor tile.capture_grad's scale undoes
      MlirValue sc = kconst(k, c->scale);
      x = attn_b_mulf(b, x, sc);
      if (!mlirValueIsNull(t))
        t = attn_b_mulf(b, t, sc);
    } else if (step == ATTN_MOD_SOFTCAP) {
      MlirValue th;
      x = softcap_value(k, x, &th);
      if (!mlirValueIsNull(t))
        t = attn_b_mulf(
            b, t, attn_b_subf(b, kconst(k, 1.0), attn_b_mulf(b, th, th)));
    } else if (step == ATTN_MOD_ALIBI) {
      x = alibi_value(k, body, x);
    } else if (step == ATTN_MOD_GATE) {
      x = gate_value(k, body, x);
      if (gate) {
        t = kconst(k, 1.0); // d (x + g) / d g; nothing before reads g
        memcpy(idx, k->gate_at, sizeof k->gate_at);
        nidx = 4;
      }
    } else if (step == ATTN_MOD_FN) {
      MlirValue args[5] = {x};
      for (int a = 1; a < 5; ++a)
        args[a] = mlirBlockGetArgument(body, a);
      struct body_clone bc = {k, s->score_fn,
                              {0, s->q[0], s->q[1], s->q[2], s->k[2]},
                              gate ? (MlirOperation){NULL} : seed,
                              {{NULL}},
                              0};
      struct attn_b_map m = {0};
      MlirValue dt;
      x = attn_grad_clone_tangent_at(b, s->score_fn, args, t, bc.seed, &m,
                                     clone_extract, &bc, &dt);
      attn_b_map_free(&m);
      t = dt;
      if (bc.seed_n) {
        memcpy(idx, bc.seed_idx, sizeof(MlirValue) * (size_t)bc.seed_n);
        nidx = bc.seed_n;
      }
    }
  }
  if (b->failed)
    return;
  if (nidx == 0) {
    attn_builder_fail(b, "a gradient into a captured tensor found no read "
                         "of it in the modifier chain (a bug in attn)");
    return;
  }
  MlirValue y[9] = {mlirValueIsNull(t) ? kconst(k, 0.0) : t};
  memcpy(y + 1, idx, sizeof(MlirValue) * (size_t)nidx);
  attn_b_op(b, "gpu.yield", 0, NULL, 1 + nidx, y, 0, NULL, 0);
}

/// One tile.capture_grad into gradient buffer i, for the read seed (null:
/// the gate), after tile.ds: dS (T_DP, still the gradient with respect to
/// the chain's value times ds_scale / exp_scale) at the raw scores T_SIN.
static void build_capture_grad(struct kernel *k, MlirValue col, int i,
                               MlirOperation seed) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.capture_grad");
  MlirBlock body = attn_tile_build_capture_grad(
      b, k->tile[T_DP], k->tile[T_SIN], k->grad[i], k->batch, k->head, k->row,
      col, s->q[2], s->k[2], exp_scale(s) / ds_scale(s));
  if (mlirBlockIsNull(body))
    return;
  MlirBlock block = b->block;
  MlirOperation anchor = b->anchor;
  attn_builder_at_end(b, body);
  build_site_body(k, body, seed, s->grad_target[i] == ATTN_GRAD_GATE);
  b->block = block;
  b->anchor = anchor;
}

/// The gradients into captured tensors, in the dq kernel (each (query,
/// key) pair of a head is visited once there): one tile.capture_grad for
/// the gate, and one per tensor.extract of a captured tensor in the
/// score_fn body (a table read at several indices gets each).
static void build_capture_grads(struct kernel *k, MlirValue col) {
  const struct kernel_shape *s = k->s;
  for (int i = 0; i < s->ngrads && !k->b.failed; ++i) {
    if (s->grad_target[i] == ATTN_GRAD_GATE) {
      build_capture_grad(k, col, i, (MlirOperation){NULL});
      continue;
    }
    MlirValue arg = mlirBlockGetArgument(s->func_body, s->grad_arg[i]);
    for (MlirOperation op = mlirBlockGetFirstOperation(s->score_fn);
         !mlirOperationIsNull(op) && !k->b.failed;
         op = mlirOperationGetNextInBlock(op))
      if (attn_op_is(op, "tensor.extract") &&
          mlirValueEqual(mlirOperationGetOperand(op, 0), arg))
        build_capture_grad(k, col, i, op);
  }
}

/// The query blocks that see key block [col, col + bn): [*lo, *hi).
/// Causal: rows from col on (key j is visible to row i iff j <= i); a
/// window's right edge: rows from col - right on; its left edge: rows up to
/// col + bn - 1 + left.
static void build_query_range(struct kernel *k, MlirValue col, MlirValue *lo,
                              MlirValue *hi) {
  const struct kernel_shape *s = k->s;
  const struct attn_fused_config *c = &s->cfg;
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.query_range");
  MlirValue nqb = attn_b_index(b, (s->q[2] + s->bm - 1) / s->bm);
  *lo = k->c0;
  *hi = nqb;
  if (c->causal) {
    *lo = attn_b_divui(b, col, k->bm);
  } else if (c->has_window && c->window_right >= 0) {
    MlirValue first =
        attn_b_subi(b, col, attn_b_index(b, c->window_right));
    MlirValue first0 = attn_b_binary(b, "arith.maxsi", first, k->c0);
    *lo = attn_b_divui(b, first0, k->bm);
  }
  if (c->has_window && c->window_left >= 0) {
    MlirValue end = attn_b_addi(b, attn_b_addi(b, col, k->bn),
                                attn_b_index(b, c->window_left));
    *hi = attn_b_minui(b, attn_b_ceildivui(b, end, k->bm), nqb);
  }
}

/// Loads the query block's dO, O and lse and computes D = rowsum(dO O).
static void build_grad_rows(struct kernel *k) {
  struct attn_builder *b = &k->b;
  build_load(k, ROLE_DOUT, T_DO, k->head, k->row);
  build_load(k, ROLE_OUT, T_O, k->head, k->row);
  MlirValue idx[] = {k->batch, k->head, k->row};
  // Padding rows (past N) read lse = +inf, a row that sees no key, so that
  // tile.exp_lse gives them P = 0: with 0 a score function's large scores
  // overflowed exp2 there, and P dO (dO 0 there) made dV and dK NaN.
  attn_tile_build_load_padded(b, k->arg[ROLE_LSE], k->lse, 3, idx, INFINITY);
  attn_tile_build_row_dot(b, k->tile[T_DO], k->tile[T_O], k->d);
}

/// One (query block, key block) step of the backward, with Q, K, V, dO, O,
/// lse and D in place: S, the modifiers and masks, P, then dV += P^T dO
/// (dkdv), dP, dS, the chain's derivative; dK += dS^T Q (dkdv) or dQ +=
/// dS K (dq).
static void build_grad_step(struct kernel *k, MlirValue col) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  bool dkdv = s->part == PART_DKDV;
  attn_tile_build_mma(b, k->tile[T_Q], k->tile[T_K], k->tile[T_S], true,
                      false);
  if (keeps_raw(s))
    attn_tile_build_mma(b, k->tile[T_Q], k->tile[T_K], k->tile[T_SIN], true,
                        false);
  build_score_mods(k, col);
  build_masks(k, col);
  attn_builder_role(b, "tile.backward");
  attn_tile_build_exp_lse(b, k->tile[T_S], k->lse, exp_scale(s));
  if (dkdv)
    attn_tile_build_mma_t(b, k->tile[T_S], k->tile[T_DO], k->tile[T_DV], true,
                          false, true);
  attn_tile_build_mma(b, k->tile[T_DO], k->tile[T_V], k->tile[T_DP], true,
                      false);
  attn_tile_build_ds(b, k->tile[T_S], k->tile[T_DP], k->d, ds_scale(s));
  if (!dkdv && s->ngrads)
    build_capture_grads(k, col);
  if (chain_nonlinear(s))
    build_chain_grad(k, col);
  attn_builder_role(b, "tile.backward");
  if (dkdv)
    attn_tile_build_mma_t(b, k->tile[T_DP], k->tile[T_Q], k->tile[T_ACC], true,
                          false, true);
  else
    attn_tile_build_mma(b, k->tile[T_DP], k->tile[T_K], k->tile[T_ACC], false,
                        true);
}

/// Rotates a gradient tile back (R^T) whose row 0 is sequence row pos.
static void build_rope_back(struct kernel *k, MlirValue tile, MlirValue pos,
                            bool keys) {
  const struct kernel_shape *s = k->s;
  const struct attn_rope_config *r = &s->cfg.rope;
  int role =
      ROLE_EXTRA0 + (keys ? ATTN_EXTRA_K_POSITIONS : ATTN_EXTRA_Q_POSITIONS);
  const char *layout = attn_rope_layout_name(r->layout);
  if (has_role(s, role))
    attn_tile_build_rope_positions_inverse(&k->b, tile, k->batch, pos,
                                           k->arg[role], r->theta,
                                           r->rotary_dim, layout);
  else
    attn_tile_build_rope_inverse(&k->b, tile, pos, r->theta, r->rotary_dim,
                                 layout,
                                 keys ? s->cfg.k_offset : s->cfg.q_offset);
}

/// The backward kernels' grid position, constants and tiles. dkdv: the
/// CTA's key block, batch and K/V head (k->head, k->row are set per query
/// head and block in the loops); dq: as the forward's.
static void build_grad_prologue(struct kernel *k, MlirValue *col) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.prologue");
  MlirValue blk = attn_tile_build_program_id(b, 0);
  MlirValue bh = attn_tile_build_program_id(b, 1);
  k->pid[0] = blk;
  k->pid[1] = bh;
  k->c0 = attn_b_index(b, 0);
  k->c1 = attn_b_index(b, 1);
  k->bm = attn_b_index(b, s->bm);
  k->bn = attn_b_index(b, s->bn);
  if (s->part == PART_DKDV) {
    MlirValue kv_heads = attn_b_index(b, s->k[1]);
    k->batch = attn_b_divui(b, bh, kv_heads);
    k->kv_head = attn_b_remui(b, bh, kv_heads);
    *col = attn_b_muli(b, blk, k->bn);
  } else {
    MlirValue heads = attn_b_index(b, s->q[1]);
    MlirValue group = attn_b_index(b, s->q[1] / s->k[1]);
    k->batch = attn_b_divui(b, bh, heads);
    k->head = attn_b_remui(b, bh, heads);
    k->kv_head = attn_b_divui(b, k->head, group);
    k->row = attn_b_muli(b, blk, k->bm);
  }
  static const int tiles[] = {T_Q, T_K, T_V, T_S, T_ACC, T_DP, T_DO, T_O};
  for (size_t i = 0; i < sizeof tiles / sizeof *tiles; ++i)
    k->tile[tiles[i]] = attn_tile_build_alloc(b, k->tile_ty[tiles[i]]);
  if (keeps_raw(s))
    k->tile[T_SIN] = attn_tile_build_alloc(b, k->tile_ty[T_SIN]);
  if (s->part == PART_DKDV)
    k->tile[T_DV] = attn_tile_build_alloc(b, k->tile_ty[T_DV]);
  k->lse = attn_tile_build_alloc(b, k->row_ty);
  k->d = attn_tile_build_alloc(b, k->row_ty);
}

/// The dkdv kernel's body after its prologue.
static void build_dkdv(struct kernel *k, MlirValue col) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  if (s->ngrads) {
    // The gradient buffers start at zero: cleared by the first CTA of
    // this kernel, which runs before the dq kernel accumulates into them.
    attn_builder_role(b, "tile.clear");
    MlirValue first =
        attn_b_andi(b, attn_b_cmpi(b, ATTN_B_EQ, k->pid[0], k->c0),
                    attn_b_cmpi(b, ATTN_B_EQ, k->pid[1], k->c0));
    struct attn_b_if once;
    attn_b_if_open(b, &once, first, 0, NULL, false);
    for (int i = 0; i < s->ngrads; ++i)
      attn_tile_build_clear(b, k->grad[i]);
    attn_b_if_close(b, &once, 0, NULL);
  }
  attn_builder_role(b, "tile.key_tile");
  build_load(k, ROLE_K, T_K, k->kv_head, col);
  if (s->cfg.has_rope)
    build_rope(k, k->tile[T_K], col, true);
  build_load(k, ROLE_V, T_V, k->kv_head, col);
  attn_tile_build_fill(b, k->tile[T_ACC], 0.0);
  attn_tile_build_fill(b, k->tile[T_DV], 0.0);
  MlirValue lo, hi;
  build_query_range(k, col, &lo, &hi);
  attn_builder_role(b, "tile.query_loop");
  struct attn_b_for heads, blocks;
  MlirValue group = attn_b_index(b, s->q[1] / s->k[1]);
  attn_b_for_open(b, &heads, k->c0, group, k->c1, 0, NULL);
  k->head = attn_b_addi(b, attn_b_muli(b, k->kv_head, group), heads.iv);
  attn_b_for_open(b, &blocks, lo, hi, k->c1, 0, NULL);
  k->row = attn_b_muli(b, blocks.iv, k->bm);
  build_load(k, ROLE_Q, T_Q, k->head, k->row);
  if (s->cfg.has_rope)
    build_rope(k, k->tile[T_Q], k->row, false);
  build_grad_rows(k);
  build_grad_step(k, col);
  attn_builder_role(b, "tile.query_loop");
  attn_b_for_close(b, &blocks, 0, NULL);
  attn_b_for_close(b, &heads, 0, NULL);
  attn_builder_role(b, "tile.epilogue");
  if (s->cfg.has_rope)
    build_rope_back(k, k->tile[T_ACC], col, true);
  MlirValue idx[] = {k->batch, k->kv_head, col};
  attn_tile_build_store(b, k->tile[T_ACC], k->arg[ROLE_DK], 3, idx);
  attn_tile_build_store(b, k->tile[T_DV], k->arg[ROLE_DV], 3, idx);
}

/// The dq kernel's body after its prologue.
static void build_dq(struct kernel *k) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.query_tile");
  build_load(k, ROLE_Q, T_Q, k->head, k->row);
  if (s->cfg.has_rope)
    build_rope(k, k->tile[T_Q], k->row, false);
  build_grad_rows(k);
  attn_tile_build_fill(b, k->tile[T_ACC], 0.0);
  MlirValue lo, hi;
  build_key_range(k, &lo, &hi);
  attn_builder_role(b, "tile.key_loop");
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, lo, hi, k->c1, 0, NULL);
  MlirValue col = attn_b_muli(b, loop.iv, k->bn);
  build_load(k, ROLE_K, T_K, k->kv_head, col);
  if (s->cfg.has_rope)
    build_rope(k, k->tile[T_K], col, true);
  build_load(k, ROLE_V, T_V, k->kv_head, col);
  build_grad_step(k, col);
  attn_builder_role(b, "tile.key_loop");
  attn_b_for_close(b, &loop, 0, NULL);
  attn_builder_role(b, "tile.epilogue");
  if (s->cfg.has_rope)
    build_rope_back(k, k->tile[T_ACC], k->row, false);
  MlirValue idx[] = {k->batch, k->head, k->row};
  attn_tile_build_store(b, k->tile[T_ACC], k->arg[ROLE_DQ], 3, idx);
}

/// Builds the tile kernel s->part of one attn.fused or attn.fused_grad op
/// (located at fused, named by role) just before func. Returns it, or a
/// null op after a diagnostic.
static MlirOperation build_kernel(MlirOperation func, MlirOperation fused,
                                  const char *name,
                                  const struct kernel_shape *s) {
  struct kernel k;
  memset(&k, 0, sizeof k);
  k.s = s;
  struct attn_builder *b = &k.b;
  attn_builder_init(b, mlirOperationGetContext(func),
                    mlirOperationGetLocation(fused));
  attn_builder_before(b, func);
  // Tiles, constants, the softmax state and lse are of the compute type.
  k.ct = attn_compute_type(mlirShapedTypeGetElementType(s->role_type[ROLE_Q]));
  // The accumulator is o [bm, dv] (forward), dq [bm, d] or dk [bn, d].
  int64_t acc_rows = s->part == PART_DKDV ? s->bn : s->bm;
  int64_t acc_cols = s->part == PART_FORWARD ? s->v[3] : s->q[3];
  int64_t cols[NUM_TILES] = {s->q[3], s->k[3], s->v[3], s->bn,    acc_cols,
                             s->bn,   s->bn,   s->v[3], s->v[3], s->v[3]};
  int64_t rows[NUM_TILES] = {s->bm, s->bn, s->bn, s->bm, acc_rows,
                             s->bm, s->bm, s->bm, s->bm, s->bn};
  int ntiles = s->part == PART_FORWARD ? 5 : NUM_TILES;
  for (int i = 0; i < ntiles; ++i)
    k.tile_ty[i] = attn_b_memref(b, 2, (int64_t[]){rows[i], cols[i]}, k.ct);
  k.row_ty = attn_b_memref(b, 1, (int64_t[]){s->bm}, k.ct);
  struct attn_b_func f;
  MlirValue lo, hi, col;
  build_signature(&k, &f, name);
  if (s->part == PART_FORWARD) {
    build_prologue(&k);
    build_query_tile(&k);
    build_key_range(&k, &lo, &hi);
    build_key_loop(&k, lo, hi);
    build_epilogue(&k, &f);
  } else {
    build_grad_prologue(&k, &col);
    if (s->part == PART_DKDV)
      build_dkdv(&k, col);
    else
      build_dq(&k);
    attn_b_func_close(b, &f, 0, NULL);
  }
  if (attn_builder_finish(b))
    return f.op;
  if (!mlirOperationIsNull(f.op))
    mlirOperationDestroy(f.op);
  return (MlirOperation){NULL};
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
    if ((attn_op_is(op, ATTN_OP_FUSED) || attn_op_is(op, ATTN_OP_FUSED_GRAD)) &&
        mlirOperationIsNull(fused))
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
    if (attn_op_is(other, ATTN_OP_FUSED) ||
        attn_op_is(other, ATTN_OP_FUSED_GRAD))
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

/// True when s's score_fn body reads v with tensor.extract.
static bool body_reads(const struct kernel_shape *s, MlirValue v) {
  for (MlirOperation op = mlirBlockGetFirstOperation(s->score_fn);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (attn_op_is(op, "tensor.extract") &&
        mlirValueEqual(mlirOperationGetOperand(op, 0), v))
      return true;
  return false;
}

/// True when v is defined in block (an argument or an op's result there).
static bool defined_in(MlirValue v, MlirBlock block) {
  if (mlirValueIsABlockArgument(v))
    return mlirBlockEqual(mlirBlockArgumentGetOwner(v), block);
  return mlirBlockEqual(mlirOperationGetBlock(mlirOpResultGetOwner(v)), block);
}

/// True for the element types a captured tensor may hold (f64 ones too;
/// the attn verifier allows them in f64 programs only).
static bool capture_elem_ok(MlirType e) {
  return mlirTypeIsAF32(e) || mlirTypeIsAF16(e) || mlirTypeIsABF16(e) ||
         mlirTypeIsAF64(e) ||
         (mlirTypeIsAInteger(e) && (mlirIntegerTypeGetWidth(e) == 32 ||
                                    mlirIntegerTypeGetWidth(e) == 64));
}

/// Marks in captured[] the function arguments body (attn.fused's region
/// what) reads: every value it uses from above must be a tensor argument of
/// the function (static shape, rank >= 1, f32, f16, bf16, i32 or i64) read
/// by tensor.extract, which attn-tile turns into a load from the kernel's
/// argument. False after a diagnostic at the op that uses it.
static bool collect_captures(MlirBlock body, MlirBlock func_body,
                             const char *what, bool captured[MAX_ARGS]) {
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    char name[64];
    attn_op_name(op, name, sizeof name);
    if (mlirOperationGetNumRegions(op) > 0)
      return attn_emit_errorf(op, "'%s' in attn.fused's %s has regions; a "
                                  "modifier body is one block of arith and "
                                  "math ops",
                              name, what);
    bool extract = attn_op_is(op, "tensor.extract");
    for (intptr_t i = 0, n = mlirOperationGetNumOperands(op); i < n; ++i) {
      MlirValue v = mlirOperationGetOperand(op, i);
      bool outer = !defined_in(v, body);
      if (extract && i == 0 && !outer)
        return attn_emit_errorf(op, "tensor.extract in attn.fused's %s must "
                                    "read a tensor argument of the function",
                                what);
      if (!outer)
        continue;
      if (!extract || i != 0 || !mlirValueIsABlockArgument(v) ||
          !mlirBlockEqual(mlirBlockArgumentGetOwner(v), func_body))
        return attn_emit_errorf(op, "'%s' in attn.fused's %s uses a value "
                                    "from outside the body that is not a "
                                    "tensor argument of the function read "
                                    "by tensor.extract (attn-tile passes "
                                    "captured tensors as kernel arguments)",
                                name, what);
      MlirType t = mlirValueGetType(v);
      int64_t dims[8];
      char ty[128];
      if (!mlirTypeIsATensor(t) || attn_static_shape(t, dims) < 1 ||
          !capture_elem_ok(mlirShapedTypeGetElementType(t)))
        return attn_emit_errorf(op, "a tensor captured by attn.fused's %s "
                                    "must have a static shape of rank >= 1 "
                                    "and f32, f16, bf16, i32 or i64 "
                                    "elements, found %s",
                                what, attn_type_str(t, ty, sizeof ty));
      intptr_t arg = mlirBlockArgumentGetArgNumber(v);
      if (arg < MAX_ARGS)
        captured[arg] = true;
    }
  }
  return true;
}

/// Reads attn.fused_grad's grads into s (after the roles): the function
/// argument of each, the gate operand or the capture of its index, whose
/// shape its result must have. False after a diagnostic at fused.
static bool find_grads(MlirOperation fused, struct kernel_shape *s) {
  int n = attn_fused_grad_targets(fused, s->grad_target, ATTN_MAX_GRADS);
  if (n < 0 || n != mlirOperationGetNumResults(fused) - 3)
    return attn_emit_errorf(fused, "malformed attn.fused_grad grads");
  s->ngrads = n;
  for (int i = 0; i < n; ++i) {
    int want = s->grad_target[i], found = -1, ncap = 0;
    for (int a = 0; a < s->nargs && found < 0; ++a) {
      if (want == ATTN_GRAD_GATE
              ? s->arg_role[a] == ROLE_EXTRA0 + ATTN_EXTRA_GATE
              : s->arg_role[a] == ROLE_CAPTURE && ncap++ == want)
        found = a;
    }
    if (found < 0)
      return attn_emit_errorf(fused, want == ATTN_GRAD_GATE
                                         ? "grads names the gate, which "
                                           "attn.fused_grad does not have"
                                         : "grads names capture%d, which the "
                                           "bodies do not read",
                              want);
    MlirValue arg = mlirBlockGetArgument(s->func_body, found);
    if (want != ATTN_GRAD_GATE &&
        (mlirBlockIsNull(s->score_fn) ||
         !attn_body_is_capture(s->score_fn, arg) || !body_reads(s, arg)))
      return attn_emit_errorf(fused, "grads names capture%d, which the "
                                     "score_fn body does not read (a mask "
                                     "has no gradient)",
                              want);
    int64_t a[8], r[8];
    MlirType rt = mlirValueGetType(mlirOperationGetResult(fused, 3 + i));
    int rank = attn_static_shape(s->arg_type[found], a);
    bool same = rank == attn_static_shape(rt, r);
    for (int d = 0; same && d < rank; ++d)
      same = a[d] == r[d];
    if (!same)
      return attn_emit_errorf(fused, "grad result %d must have the shape of "
                                     "the tensor it is the gradient of",
                              i);
    s->grad_arg[i] = found;
    s->grad_type[i] = rt;
  }
  return true;
}

/// Checks fused's operands are distinct arguments of func, that func takes
/// nothing else but the tensors its bodies capture and returns exactly
/// fused's result; fills s->arg_role and s->arg_type.
static bool check_signature(MlirOperation func, MlirOperation fused,
                            struct kernel_shape *s) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  intptr_t nops = mlirOperationGetNumOperands(fused);
  intptr_t nargs = mlirBlockGetNumArguments(body);
  bool captured[MAX_ARGS] = {false};
  s->func_body = body;
  if (nargs > MAX_ARGS)
    return attn_emit_errorf(func, "attn-tile takes at most %d function "
                                  "arguments, found %ld",
                            MAX_ARGS, (long)nargs);
  if ((!mlirBlockIsNull(s->score_fn) &&
       !collect_captures(s->score_fn, body, "score_fn", captured)) ||
      (!mlirBlockIsNull(s->mask_fn) &&
       !collect_captures(s->mask_fn, body, "mask_fn", captured)))
    return false;
  for (intptr_t i = 0; i < nops; ++i) {
    MlirValue v = mlirOperationGetOperand(fused, i);
    if (mlirValueIsABlockArgument(v) &&
        mlirBlockEqual(mlirBlockArgumentGetOwner(v), body))
      captured[mlirBlockArgumentGetArgNumber(v)] = false;
  }
  intptr_t ncaptured = 0;
  for (intptr_t i = 0; i < nargs; ++i)
    ncaptured += captured[i];
  if (nargs != nops + ncaptured)
    return attn_emit_errorf(func, nops == 3 && !ncaptured
                                      ? "attn-tile expects the function to "
                                        "take exactly q, k and v"
                                  : ncaptured
                                      ? "attn-tile expects the function to "
                                        "take exactly the operands of "
                                        "attn.fused and the tensors its "
                                        "bodies capture"
                                      : "attn-tile expects the function to "
                                        "take exactly the operands of "
                                        "attn.fused");
  for (intptr_t i = 0; i < nargs; ++i) {
    s->arg_role[i] = ROLE_CAPTURE;
    s->arg_type[i] = mlirValueGetType(mlirBlockGetArgument(body, i));
  }
  int role_of_operand[ROLE_CAPTURE] = {ROLE_Q, ROLE_K, ROLE_V};
  for (int r = 0; r < ATTN_NUM_EXTRAS; ++r)
    if (s->cfg.extra[r] >= 0)
      role_of_operand[s->cfg.extra[r]] = ROLE_EXTRA0 + r;
  // attn.fused_grad's last three operands: out, lse and dout.
  if (s->grad) {
    if (nops < 6 || nops > ROLE_CAPTURE)
      return attn_emit_errorf(fused, "malformed attn.fused_grad operands");
    for (int i = 0; i < ATTN_FUSED_GRAD_TAIL; ++i)
      role_of_operand[nops - ATTN_FUSED_GRAD_TAIL + i] = ROLE_OUT + i;
  }
  s->nargs = (int)nargs;
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
  intptr_t nres = mlirOperationGetNumResults(fused);
  bool returns = mlirOperationGetNumOperands(ret) == nres;
  for (intptr_t i = 0; returns && i < nres; ++i)
    returns = mlirValueEqual(mlirOperationGetOperand(ret, i),
                             mlirOperationGetResult(fused, i));
  if (!returns)
    return attn_emit_errorf(func, s->grad ? "the function must return the "
                                            "results of attn.fused_grad (dq, "
                                            "dk, dv and its grads) and "
                                            "nothing else"
                                  : nres == 2
                                      ? "the function must return the "
                                        "results of attn.fused (out, lse) "
                                        "and nothing else"
                                      : "the function must return the "
                                        "result of attn.fused and nothing "
                                        "else");
  if (s->grad) {
    for (int i = 0; i < 3; ++i)
      s->role_type[ROLE_DQ + i] =
          mlirValueGetType(mlirOperationGetResult(fused, i));
    if (!find_grads(fused, s))
      return false;
  } else {
    s->role_type[ROLE_OUT] =
        mlirValueGetType(mlirOperationGetResult(fused, 0));
    if (nres == 2)
      s->role_type[ROLE_LSE] =
          mlirValueGetType(mlirOperationGetResult(fused, 1));
  }
  return true;
}

/// Appends to the module's tile.programs the program `name` of the
/// backward: inputs (the function's arguments as the kernels name them,
/// then dq, dk, dv), steps dkdv (args ..., dk, dv) then dq (args ..., dq),
/// no workspace.
static void record_grad_program(MlirOperation func,
                                const struct kernel_shape *s, const char *name,
                                char kernels[2][300]) {
  struct attn_builder b;
  attn_builder_init(&b, mlirOperationGetContext(func),
                    mlirOperationGetLocation(func));
  const char *args[MAX_ARGS + 3 + ATTN_MAX_GRADS];
  char capture_names[MAX_ARGS][24], gnames[ATTN_MAX_GRADS][24];
  arg_names(s, args, capture_names);
  int n = s->nargs, g = s->ngrads;
  for (int i = 0; i < g; ++i)
    grad_name(s, i, gnames[i]);
  MlirAttribute steps[2];
  // Each step's outputs, then the gradient buffers (cleared by dkdv,
  // accumulated by dq).
  args[n] = "dk";
  args[n + 1] = "dv";
  for (int i = 0; i < g; ++i)
    args[n + 2 + i] = gnames[i];
  MlirNamedAttribute step0[2] = {
      attn_b_named(&b, "kernel", attn_b_attr_str(&b, kernels[0])),
      attn_b_named(&b, "args", attn_b_attr_strs(&b, n + 2 + g, args))};
  steps[0] = mlirDictionaryAttrGet(b.ctx, 2, step0);
  args[n] = "dq";
  for (int i = 0; i < g; ++i)
    args[n + 1 + i] = gnames[i];
  MlirNamedAttribute step1[2] = {
      attn_b_named(&b, "kernel", attn_b_attr_str(&b, kernels[1])),
      attn_b_named(&b, "args", attn_b_attr_strs(&b, n + 1 + g, args))};
  steps[1] = mlirDictionaryAttrGet(b.ctx, 2, step1);
  args[n + 1] = "dk";
  args[n + 2] = "dv";
  for (int i = 0; i < g; ++i)
    args[n + 3 + i] = gnames[i];
  MlirNamedAttribute prog[4] = {
      attn_b_named(&b, "name", attn_b_attr_str(&b, name)),
      attn_b_named(&b, "inputs", attn_b_attr_strs(&b, n + 3 + g, args)),
      attn_b_named(&b, "workspace", mlirArrayAttrGet(b.ctx, 0, NULL)),
      attn_b_named(&b, "steps", mlirArrayAttrGet(b.ctx, 2, steps))};
  attn_tile_programs_append(mlirOperationGetParentOperation(func),
                            mlirDictionaryAttrGet(b.ctx, 4, prog));
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
  s.grad = attn_op_is(fused, ATTN_OP_FUSED_GRAD);
  if (!attn_fused_get_config(fused, &s.cfg))
    return attn_emit_errorf(fused, "malformed attn.fused attributes");
  s.score_fn = attn_fused_score_fn(fused);
  s.mask_fn = attn_fused_mask_fn(fused);
  if (!check_signature(func, fused, &s))
    return false;
  for (int i = 0; i < 3; ++i) {
    int64_t *dst = i == 0 ? s.q : i == 1 ? s.k : s.v;
    int64_t dims[8];
    attn_static_shape(mlirValueGetType(mlirOperationGetOperand(fused, i)),
                      dims);
    memcpy(dst, dims, 4 * sizeof *dst);
  }
  long d = (long)s.q[3], dv = (long)s.v[3];
  // The Hopper kernel's tiles: 128 query rows (two consumer warpgroups),
  // 128 keys (80 at head dim 256, FlashAttention-3's: S of 80 keys fits
  // beside O in the consumers' registers; 64 there with a score_mod body,
  // whose values per element spilled beside 80), 384 threads.
  // The mma.sync kernel's: 128 query rows (eight warps of 16), 64 keys.
  // The backward has no tensor-core kernel yet: its kernels keep the plain
  // path's tiles under kernel=hopper and kernel=mma too (the drivers send
  // them on to lower-tile-to-gpu, the forward to the tensor cores).
  bool hopper = o->hopper && !s.grad, mma = o->mma && !s.grad;
  s.bm = o->block_m ? o->block_m
         : hopper || mma ? 128
         : s.grad        ? pick_grad_block(d, dv)
                         : pick_block(d, dv);
  s.bn = o->block_n ? o->block_n
         : hopper ? (d != 256 || dv != 256       ? 128
                     : mlirBlockIsNull(s.score_fn) ? 80
                                                   : 64)
         : mma    ? 64
         : s.grad ? pick_grad_block(d, dv)
                  : pick_block(d, dv);
  s.threads = o->threads ? o->threads
              : hopper ? 384
              : mma    ? 2 * s.bm
                       : 128;
  MlirStringRef name;
  if (!attn_attr_str(func, "sym_name", &name))
    return attn_emit_errorf(func, "function has no name");
  char fname[256];
  snprintf(fname, sizeof fname, "%.*s", (int)name.length, name.data);
  if (s.grad) {
    // The dkdv kernel, then the dq kernel, and the program running both.
    char kname[2][300];
    for (int p = 0; p < 2; ++p) {
      s.part = p == 0 ? PART_DKDV : PART_DQ;
      snprintf(kname[p], sizeof kname[p], "%s__%s", fname,
               p == 0 ? "dkdv" : "dq");
      if (mlirOperationIsNull(build_kernel(func, fused, kname[p], &s)))
        return false;
    }
    record_grad_program(func, &s, fname, kname);
    mlirOperationDestroy(func);
    return true;
  }
  if (mlirOperationIsNull(build_kernel(func, fused, fname, &s)))
    return false;
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
