//===- attn_tile_kernel.c - attn-tile's kernels, one helper per block -----===//
//
// The blocks of attn-tile's kernels (attn_tile.c's file comment draws the
// forward kernel), each built through attn_builder and the tile dialect's
// builders and located by its role: the signature and tile.attention
// dictionary, the prologue, the query tile and its rotation, the key range
// and loop, the modifier chain and the masks as bodies cloned from
// attn.fused's regions, the epilogue. attn_tile_grad.c builds the
// backward's kernels from the same blocks.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/attn_tile_kernel.h"

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

static const char *role_name(int role) {
  static const char *const qkv[3] = {"q", "k", "v"};
  static const char *const tail[6] = {"out", "lse", "dout", "dq", "dk", "dv"};
  return role < 3              ? qkv[role]
         : role < ROLE_OUT     ? attn_fused_extra_name(role - ROLE_EXTRA0)
         : role < ROLE_CAPTURE ? tail[role - ROLE_OUT]
                               : "?";
}

bool attn_tk_has_role(const struct kernel_shape *s, int role) {
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


/// arith.constant of v in the kernel's compute type (f32: v as a float).
MlirValue attn_tk_kconst(struct kernel *k, double v) {
  return attn_b_float(&k->b, k->ct, v);
}

/// Where the scale goes: folded into the softmax's exp2 constant when
/// nothing follows it (no softcap, alibi, gate or score_fn: exact only
/// there), else applied in order by tile.score_mod.
bool attn_tk_scale_folds(const struct kernel_shape *s) {
  const struct attn_fused_config *c = &s->cfg;
  return c->nmods == 0 || c->mods[c->nmods - 1] == ATTN_MOD_SCALE;
}

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
    attn_tk_grad_name(s, i, gnames[i]);
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
/// The kernels' names of the function's arguments (tile.attn_tk_arg_names, the
/// launch program's inputs): each role's, and capture0, ... for the
/// captures in argument order (their text in captures).
void attn_tk_arg_names(const struct kernel_shape *s, const char **names,
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
void attn_tk_grad_name(const struct kernel_shape *s, int i, char name[24]) {
  if (s->grad_target[i] == ATTN_GRAD_GATE)
    snprintf(name, 24, "dgate");
  else
    snprintf(name, 24, "dcapture%d", s->grad_target[i]);
}

void attn_tk_build_signature(struct kernel *k, struct attn_b_func *f,
                             const char *name) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  MlirType types[MAX_ARGS + 2 + ATTN_MAX_GRADS];
  const char *names[MAX_ARGS + 2 + ATTN_MAX_GRADS];
  char capture_names[MAX_ARGS][24], gnames[ATTN_MAX_GRADS][24];
  attn_tk_arg_names(s, names, capture_names);
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
    attn_tk_grad_name(s, i, gnames[i]);
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
void attn_tk_build_prologue(struct kernel *k) {
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
void attn_tk_build_rope(struct kernel *k, MlirValue tile, MlirValue pos,
                        bool keys) {
  const struct kernel_shape *s = k->s;
  const struct attn_rope_config *r = &s->cfg.rope;
  int role =
      ROLE_EXTRA0 + (keys ? ATTN_EXTRA_K_POSITIONS : ATTN_EXTRA_Q_POSITIONS);
  const char *layout = attn_rope_layout_name(r->layout);
  if (attn_tk_has_role(s, role))
    attn_tile_build_rope_positions(&k->b, tile, k->batch, pos, k->arg[role],
                                   r->theta, r->rotary_dim, layout);
  else
    attn_tile_build_rope(&k->b, tile, pos, r->theta, r->rotary_dim, layout,
                         keys ? s->cfg.k_offset : s->cfg.q_offset);
}

/// Copies rows of head (batch, head) of role's tensor into a tile.
void attn_tk_build_load(struct kernel *k, int role, int tile, MlirValue head,
                        MlirValue pos) {
  MlirValue idx[] = {k->batch, head, pos};
  attn_tile_build_load(&k->b, k->arg[role], k->tile[tile], 3, idx);
}

/// Q is loaded and rotated once per CTA; the softmax state starts empty.
void attn_tk_build_query_tile(struct kernel *k) {
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.query_tile");
  attn_tk_build_load(k, ROLE_Q, T_Q, k->head, k->row);
  if (k->s->cfg.has_rope)
    attn_tk_build_rope(k, k->tile[T_Q], k->row, false);
  attn_tile_build_fill(b, k->tile[T_ACC], 0.0);
  attn_tile_build_fill(b, k->m, -INFINITY);
  attn_tile_build_fill(b, k->l, 0.0);
}

/// The key blocks a query block can see: [*lo, *hi). Blocks entirely after
/// the diagonal (causal), right of the window or left of it are never
/// visited.
void attn_tk_build_key_range(struct kernel *k, MlirValue *lo, MlirValue *hi) {
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

bool attn_tk_clone_extract(struct attn_builder *b, MlirOperation op,
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
void attn_tk_end_body(struct attn_builder *b, MlirValue y, MlirBlock block,
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
  MlirValue y = attn_b_clone_body(b, src, args, &m, attn_tk_clone_extract, &c);
  attn_b_map_free(&m);
  attn_tk_end_body(b, y, block, anchor);
}

/// Opens a tile.score_fn on the key loop's scores, its location named by
/// role: its body block (arguments s, b, h, q, kv), with k's builder at its
/// end and where it was in *block and *anchor (for attn_tk_end_body); a
/// null block when building failed.
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
MlirValue attn_tk_softcap_value(struct kernel *k, MlirValue x, MlirValue *th) {
  struct attn_builder *b = &k->b;
  MlirValue cap = attn_tk_kconst(k, k->s->cfg.softcap);
  MlirValue t = attn_b_divf(b, x, cap);
  MlirValue h = attn_b_unary(b, "math.tanh", t);
  if (th)
    *th = h;
  return attn_b_mulf(b, h, cap);
}

/// Softcap of score x in a body, as a named modifier's value (below).
static MlirValue softcap_body(struct kernel *k, MlirBlock body, MlirValue x) {
  (void)body;
  return attn_tk_softcap_value(k, x, NULL);
}

/// ALiBi of score x in a body whose arguments are body's (s, b, h, q, kv):
/// x - m_h |q - kv| with the head's slope m_h = 2^(-max_bias (h + 1) /
/// heads), computed in the body from h (the kernels make it once per tile,
/// and fold the pending scale into it: the add form of
/// lib/Kernels/score_fn.c).
MlirValue attn_tk_alibi_value(struct kernel *k, MlirBlock body, MlirValue x) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  MlirValue h1 =
      attn_b_addi(b, mlirBlockGetArgument(body, 2), attn_b_index(b, 1));
  MlirValue hf = attn_b_cast(
      b, "arith.uitofp", attn_b_cast(b, "arith.index_cast", h1, b->t.i64),
      k->ct);
  MlirValue e = attn_b_mulf(
      b, hf, attn_tk_kconst(k, -s->cfg.alibi_max_bias / (double)s->q[1]));
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
MlirValue attn_tk_gate_value(struct kernel *k, MlirBlock body, MlirValue x) {
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
  attn_tk_end_body(b, value(k, body, mlirBlockGetArgument(body, 0)), block,
                   anchor);
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
  attn_tk_end_body(b, attn_b_cmpi(b, ATTN_B_EQ, qs, ks), block, anchor);
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
void attn_tk_build_score_mods(struct kernel *k, MlirValue col) {
  const struct kernel_shape *s = k->s;
  const struct attn_fused_config *c = &s->cfg;
  bool fold = attn_tk_scale_folds(s);
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
      build_mod_body(k, col, "tile.alibi", attn_tk_alibi_value);
    } else if (step == ATTN_MOD_GATE) {
      flush_score_mod(k, col, &m);
      build_mod_body(k, col, "tile.gate", attn_tk_gate_value);
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
void attn_tk_build_masks(struct kernel *k, MlirValue col) {
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

/// The key block from key col: its K tile (rotated) and V tile.
void attn_tk_build_kv_tiles(struct kernel *k, MlirValue col) {
  attn_tk_build_load(k, ROLE_K, T_K, k->kv_head, col);
  if (k->s->cfg.has_rope)
    attn_tk_build_rope(k, k->tile[T_K], col, true);
  attn_tk_build_load(k, ROLE_V, T_V, k->kv_head, col);
}

/// The key loop: per step K (rotated) and V tiles, scores, modifiers,
/// masks, the online softmax update and P.V.
void attn_tk_build_key_loop(struct kernel *k, MlirValue lo, MlirValue hi) {
  const struct kernel_shape *s = k->s;
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.key_loop");
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, lo, hi, k->c1, 0, NULL);
  MlirValue col = attn_b_muli(b, loop.iv, k->bn);
  attn_tk_build_kv_tiles(k, col);
  attn_tile_build_mma(b, k->tile[T_Q], k->tile[T_K], k->tile[T_S], true,
                      false);
  attn_tk_build_score_mods(k, col);
  attn_tk_build_masks(k, col);
  attn_tile_build_softmax_update(b, k->tile[T_S], k->m, k->l, k->tile[T_ACC],
                                 attn_tk_scale_folds(s) ? s->cfg.scale : 1.0);
  attn_tile_build_mma(b, k->tile[T_S], k->tile[T_V], k->tile[T_ACC], false,
                      true);
  attn_b_for_close(b, &loop, 0, NULL);
}

void attn_tk_build_epilogue(struct kernel *k, struct attn_b_func *f) {
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
