//===- attn_tile_decode.c - attn-tile: attn.fused_decode as a tile kernel -===//
//
// A function whose body is one attn.fused_decode returning its result
// becomes a tile kernel in destination-passing style, as attn.fused's do
// (attn_tile.c), but with a program of its own: the key set of a decode is
// a length read at run time, which tile.mask's static kv_len cannot say, so
// the CTA program is scalar scf/memref/arith/math over the caches, the
// reference loop nest of the definition:
//
//   func.func @f(%q: memref<BxHxNqxD>, %k_cache, %v_cache,
//                %cache_seqlens: memref<Bxi32>, [%block_table], %out)
//       attributes {tile.kernel, tile.grid = array<i64: Hk, B, 1>,
//        tile.threads = 1, tile.arg_names = [...], tile.decode = {...}} {
//     %g = "tile.program_id"() {dim = 0}     // the K/V head
//     %b = "tile.program_id"() {dim = 1}     // the sequence
//     %len = clamp(cache_seqlens[%b], 0, max_seq)
//     scf.for %hq, %i {                      // its query heads and rows
//       %pos = %len - Nq + %i ; q row widened, rotated at %pos
//       scf.for %j = lo(pos) to hi(pos, len) iter_args(%m, %l) {
//         key j at row j (contiguous) or page block_table[b, j / ps],
//         row j % ps; s = q.k, the modifiers in order; online softmax;
//         acc = acc * corr + p * v
//       }
//       out[b, h, i] = acc / l (0 for a row that sees no key)
//     }
//   }
//
// With an attn.cache_append feeding the decode (its caches the decode's,
// the same lengths and table), the function is
//
//   func.func @f(%q, %k_cache, %v_cache, %cache_seqlens, [%block_table],
//                %k_new, %v_new) -> (out, k_cache, v_cache)
//
// and the kernel takes k_new and v_new before out and first writes them
// into the caches it was given (destinations, as linalg's outs: the caches
// it returns are those buffers): row i of the CTA's K/V head at position
// len - N + i (k_new rotated there with the append's rope), a negative
// position or a page outside [0, P) not written. Each CTA owns its (K/V
// head, sequence)'s keys, so it reads its own writes.
//
// One CTA per (K/V head, sequence), as the GPU kernel's groups: the query
// heads of a GQA group read the same keys. tile.decode records what the
// kernel computes (the op's attributes and the shapes) for the GPU
// lowering (lower-tile-to-decode), which replaces the whole kernel; on the
// CPU lower-tile-to-cpu runs it as is. Lengths beyond the cache are
// clamped to it and page numbers outside [0, P) read page 0, so that bad
// input never reads outside the buffers.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/tile/tile_dialect.h"
#include "lib/IR/attn_builder.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/// The memref type matching a static tensor type.
static MlirType memref_of(MlirType tensor) {
  int64_t d[8];
  int rank = attn_static_shape(tensor, d);
  return mlirMemRefTypeContiguousGet(mlirShapedTypeGetElementType(tensor),
                                     rank, d, mlirAttributeGetNull());
}

/// Whether v is argument i of block.
static bool is_arg(MlirValue v, MlirBlock block, intptr_t i) {
  return mlirValueIsABlockArgument(v) &&
         mlirBlockEqual(mlirBlockArgumentGetOwner(v), block) &&
         mlirBlockArgumentGetArgNumber(v) == i;
}

/// The decode op of func (and *app its attn.cache_append, or null) and
/// whether the body is only them and the return: a null op when func holds
/// no decode; *bad after a diagnostic otherwise.
static MlirOperation find_decode(MlirOperation func, MlirOperation *app,
                                 bool *bad) {
  MlirOperation dec = {NULL}, stray = {NULL}, ret = {NULL};
  *app = (MlirOperation){NULL};
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockIsNull(body))
    return dec;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (attn_op_is(op, ATTN_OP_FUSED_DECODE) && mlirOperationIsNull(dec))
      dec = op;
    else if (attn_op_is(op, ATTN_OP_CACHE_APPEND) && mlirOperationIsNull(*app))
      *app = op;
    else if (attn_op_is(op, "func.return"))
      ret = op;
    else if (mlirOperationIsNull(stray))
      stray = op;
  }
  if (mlirOperationIsNull(dec) && !mlirOperationIsNull(*app)) {
    *bad = true;
    attn_emit_errorf(*app, "attn-tile supports attn.cache_append feeding an "
                           "attn.fused_decode (its caches the decode's)");
    return dec;
  }
  if (!mlirOperationIsNull(dec) && !mlirOperationIsNull(stray)) {
    *bad = true;
    attn_emit_errorf(stray, "attn-tile supports functions whose body is one "
                            "attn.fused_decode op (after an optional "
                            "attn.cache_append) and the return of its "
                            "result");
  }
  if (mlirOperationIsNull(dec) || *bad)
    return dec;
  intptr_t n = mlirOperationGetNumOperands(dec);
  MlirOperation a = *app;
  if (mlirOperationIsNull(a)) {
    if (mlirBlockGetNumArguments(body) != n)
      *bad = true;
    for (intptr_t i = 0; !*bad && i < n; ++i)
      *bad = !is_arg(mlirOperationGetOperand(dec, i), body, i);
    if (*bad)
      attn_emit_errorf(dec, "attn-tile expects the function's arguments to "
                            "be attn.fused_decode's operands, in order");
    return dec;
  }
  // With the append: the decode reads its caches, the lengths and the
  // table are the same, and the arguments are q, the caches, the lengths,
  // the table, k_new and v_new.
  bool fed = mlirOperationGetNumOperands(a) == n + 1 &&
             mlirValueEqual(mlirOperationGetOperand(dec, 1),
                            mlirOperationGetResult(a, 0)) &&
             mlirValueEqual(mlirOperationGetOperand(dec, 2),
                            mlirOperationGetResult(a, 1));
  for (intptr_t i = 3; fed && i < n; ++i)
    fed = mlirValueEqual(mlirOperationGetOperand(dec, i),
                         mlirOperationGetOperand(a, i - 1));
  if (!fed) {
    *bad = true;
    attn_emit_errorf(a, "attn-tile expects attn.cache_append's caches to be "
                        "attn.fused_decode's, with the same cache_seqlens "
                        "and block_table");
    return dec;
  }
  intptr_t na = mlirOperationGetNumOperands(a);
  bool args = mlirBlockGetNumArguments(body) == n + 2 &&
              is_arg(mlirOperationGetOperand(dec, 0), body, 0);
  for (intptr_t i = 0; args && i < na; ++i)
    args = is_arg(mlirOperationGetOperand(a, i), body, i + 1);
  if (!args) {
    *bad = true;
    attn_emit_errorf(dec, "attn-tile expects the function's arguments to be "
                          "q, k_cache, v_cache, cache_seqlens, the "
                          "block_table when paged, k_new and v_new, in order");
    return dec;
  }
  bool rets = !mlirOperationIsNull(ret) &&
              mlirOperationGetNumOperands(ret) == 3 &&
              mlirValueEqual(mlirOperationGetOperand(ret, 0),
                             mlirOperationGetResult(dec, 0)) &&
              mlirValueEqual(mlirOperationGetOperand(ret, 1),
                             mlirOperationGetResult(a, 0)) &&
              mlirValueEqual(mlirOperationGetOperand(ret, 2),
                             mlirOperationGetResult(a, 1));
  if (!rets) {
    *bad = true;
    attn_emit_errorf(a, "attn-tile expects the function to return "
                        "attn.fused_decode's result and attn.cache_append's "
                        "caches, in that order (the caches are written in "
                        "place)");
  }
  return dec;
}

//===-- tile.decode: what the kernel computes -----------------------------===//

static const char *const dict_ints[] = {
    "batch",     "heads",      "kv_heads",  "seq_q",     "head_dim",
    "value_dim", "max_seq",    "page_size", "num_pages", "max_pages",
    "window_left", "window_right", "rotary_dim"};
#define NUM_DICT_INTS (sizeof dict_ints / sizeof *dict_ints)

static void dict_int_slots(struct attn_decode_config *c, int64_t *max_pages,
                           int64_t *slot[NUM_DICT_INTS]) {
  int64_t *s[NUM_DICT_INTS] = {
      &c->batch,    &c->heads,     &c->kv_heads,  &c->seq_q,
      &c->head_dim, &c->value_dim, &c->max_seq,   &c->page_size,
      &c->num_pages, max_pages,    &c->base.window_left,
      &c->base.window_right,       &c->base.rope.rotary_dim};
  memcpy(slot, s, sizeof s);
}

/// The tile.decode dictionary of c (max_pages: the table's width).
static MlirAttribute decode_dict(struct attn_builder *b,
                                 const struct attn_decode_config *c,
                                 int64_t max_pages,
                                 const struct attn_append_config *ap) {
  struct attn_decode_config cc = *c;
  int64_t mp = max_pages, *slot[NUM_DICT_INTS];
  dict_int_slots(&cc, &mp, slot);
  MlirNamedAttribute a[NUM_DICT_INTS + 16];
  intptr_t n = 0;
  for (size_t i = 0; i < NUM_DICT_INTS; ++i)
    a[n++] = attn_b_named(b, dict_ints[i], attn_b_attr_i64(b, *slot[i]));
  const struct attn_fused_config *f = &c->base;
  a[n++] = attn_b_named(b, "paged",
                        attn_b_attr_bool(b, c->layout == ATTN_CACHE_PAGED));
  a[n++] = attn_b_named(b, "causal", attn_b_attr_bool(b, f->causal));
  a[n++] = attn_b_named(b, "window", attn_b_attr_bool(b, f->has_window));
  a[n++] = attn_b_named(b, "scale", attn_b_attr_f64(b, f->scale));
  a[n++] = attn_b_named(b, "softcap",
                        attn_b_attr_f64(b, f->has_softcap ? f->softcap : 0));
  a[n++] = attn_b_named(
      b, "alibi", attn_b_attr_f64(b, f->has_alibi ? f->alibi_max_bias : 0));
  a[n++] = attn_b_named(b, "rope_theta",
                        attn_b_attr_f64(b, f->has_rope ? f->rope.theta : 0));
  a[n++] = attn_b_named(
      b, "rope_interleaved",
      attn_b_attr_bool(b, f->has_rope &&
                              f->rope.layout == ATTN_ROPE_INTERLEAVED));
  const char *mods[ATTN_NUM_MODS];
  for (int i = 0; i < f->nmods; ++i)
    mods[i] = attn_score_mod_name(f->mods[i]);
  a[n++] = attn_b_named(b, "mods", attn_b_attr_strs(b, f->nmods, mods));
  // The append (attn.cache_append feeding the decode): its rows, 0 for none.
  bool rope = ap && ap->has_rope;
  a[n++] = attn_b_named(b, "append_rows", attn_b_attr_i64(b, ap ? ap->seq_new : 0));
  a[n++] = attn_b_named(b, "append_rope_theta",
                        attn_b_attr_f64(b, rope ? ap->rope.theta : 0));
  a[n++] = attn_b_named(b, "append_rotary_dim",
                        attn_b_attr_i64(b, rope ? ap->rope.rotary_dim : 0));
  a[n++] = attn_b_named(
      b, "append_rope_interleaved",
      attn_b_attr_bool(b, rope && ap->rope.layout == ATTN_ROPE_INTERLEAVED));
  return mlirDictionaryAttrGet(b->ctx, n, a);
}

static MlirAttribute dict_at(MlirAttribute d, const char *k) {
  return mlirDictionaryAttrGetElementByName(d,
                                            mlirStringRefCreateFromCString(k));
}

bool attn_tile_get_decode(MlirOperation kernel, struct attn_decode_config *c,
                          int64_t *max_pages, struct attn_append_config *ap) {
  MlirAttribute d = attn_attr_get(kernel, ATTN_TILE_DECODE_ATTR);
  memset(c, 0, sizeof *c);
  memset(ap, 0, sizeof *ap);
  if (mlirAttributeIsNull(d) || !mlirAttributeIsADictionary(d))
    return false;
  int64_t *slot[NUM_DICT_INTS];
  dict_int_slots(c, max_pages, slot);
  for (size_t i = 0; i < NUM_DICT_INTS; ++i) {
    MlirAttribute v = dict_at(d, dict_ints[i]);
    if (mlirAttributeIsNull(v) || !mlirAttributeIsAInteger(v))
      return false;
    *slot[i] = mlirIntegerAttrGetValueInt(v);
  }
  static const char *const bools[4] = {"paged", "causal", "window",
                                       "rope_interleaved"};
  bool bv[4];
  for (int i = 0; i < 4; ++i) {
    MlirAttribute v = dict_at(d, bools[i]);
    if (mlirAttributeIsNull(v) || !mlirAttributeIsABool(v))
      return false;
    bv[i] = mlirBoolAttrGetValue(v);
  }
  static const char *const floats[4] = {"scale", "softcap", "alibi",
                                        "rope_theta"};
  double fv[4];
  for (int i = 0; i < 4; ++i) {
    MlirAttribute v = dict_at(d, floats[i]);
    if (mlirAttributeIsNull(v) || !mlirAttributeIsAFloat(v))
      return false;
    fv[i] = mlirFloatAttrGetValueDouble(v);
  }
  struct attn_fused_config *f = &c->base;
  c->layout = bv[0] ? ATTN_CACHE_PAGED : ATTN_CACHE_CONTIGUOUS;
  c->has_table = bv[0];
  f->causal = bv[1];
  f->has_window = bv[2];
  f->rope.layout = bv[3] ? ATTN_ROPE_INTERLEAVED : ATTN_ROPE_ROTATE_HALF;
  f->scale = fv[0];
  f->has_softcap = fv[1] > 0;
  f->softcap = fv[1];
  f->has_alibi = fv[2] > 0;
  f->alibi_max_bias = fv[2];
  f->has_rope = fv[3] > 0;
  f->rope.theta = fv[3];
  MlirAttribute mods = dict_at(d, "mods");
  if (mlirAttributeIsNull(mods) || !mlirAttributeIsAArray(mods) ||
      mlirArrayAttrGetNumElements(mods) > ATTN_NUM_MODS)
    return false;
  f->nmods = (int)mlirArrayAttrGetNumElements(mods);
  for (int i = 0; i < f->nmods; ++i) {
    MlirAttribute e = mlirArrayAttrGetElement(mods, i);
    if (!mlirAttributeIsAString(e))
      return false;
    MlirStringRef s = mlirStringAttrGetValue(e);
    f->mods[i] = attn_str_eq(s, "softcap") ? ATTN_MOD_SOFTCAP
                 : attn_str_eq(s, "alibi") ? ATTN_MOD_ALIBI
                                           : ATTN_MOD_SCALE;
  }
  MlirAttribute rows = dict_at(d, "append_rows");
  MlirAttribute theta = dict_at(d, "append_rope_theta");
  MlirAttribute rdim = dict_at(d, "append_rotary_dim");
  MlirAttribute inter = dict_at(d, "append_rope_interleaved");
  if (mlirAttributeIsNull(rows) || !mlirAttributeIsAInteger(rows) ||
      mlirAttributeIsNull(theta) || !mlirAttributeIsAFloat(theta) ||
      mlirAttributeIsNull(rdim) || !mlirAttributeIsAInteger(rdim) ||
      mlirAttributeIsNull(inter) || !mlirAttributeIsABool(inter))
    return false;
  // The append's shapes are the decode's but its rows.
  ap->layout = c->layout;
  ap->page_size = c->page_size;
  ap->has_table = c->has_table;
  ap->batch = c->batch;
  ap->kv_heads = c->kv_heads;
  ap->seq_new = mlirIntegerAttrGetValueInt(rows);
  ap->head_dim = c->head_dim;
  ap->value_dim = c->value_dim;
  ap->max_seq = c->max_seq;
  ap->num_pages = c->num_pages;
  ap->rope.theta = mlirFloatAttrGetValueDouble(theta);
  ap->has_rope = ap->rope.theta > 0;
  ap->rope.rotary_dim = mlirIntegerAttrGetValueInt(rdim);
  ap->rope.layout = mlirBoolAttrGetValue(inter) ? ATTN_ROPE_INTERLEAVED
                                                : ATTN_ROPE_ROTATE_HALF;
  return ap->seq_new >= 0;
}

//===-- The CTA program ---------------------------------------------------===//

/// What the CTA program's helpers share.
struct dk {
  struct attn_builder b;
  const struct attn_decode_config *c;
  MlirValue q, kc, vc, lens, table, k_new, v_new, out;
  MlirValue bi, g; // the sequence and the K/V head
  MlirValue qrow, acc;
  MlirType elem;
};

static MlirValue idx(struct dk *k, int64_t v) { return attn_b_index(&k->b, v); }

static MlirValue widen(struct dk *k, MlirValue x) {
  return mlirTypeIsAF32(k->elem) ? x
                                 : attn_b_cast(&k->b, "arith.extf", x,
                                               k->b.t.f32);
}

static MlirValue f64_of_index(struct dk *k, MlirValue x) {
  MlirValue i = attn_b_cast(&k->b, "arith.index_cast", x, k->b.t.i64);
  return attn_b_cast(&k->b, "arith.sitofp", i, k->b.t.f64);
}

/// Rotates the row buffer k->qrow (q's, or a new key's) in place by rope
/// at position pos (an index, may be negative: that q row sees no key and
/// its rotation does not matter).
static void build_rope(struct dk *k, const struct attn_rope_config *rope,
                       MlirValue pos) {
  struct attn_builder *b = &k->b;
  int64_t r = rope->rotary_dim, half = r / 2;
  bool inter = rope->layout == ATTN_ROPE_INTERLEAVED;
  attn_builder_role(b, "tile.decode.rope");
  MlirValue p = f64_of_index(k, pos);
  struct attn_b_for t;
  attn_b_for_open(b, &t, idx(k, 0), idx(k, half), idx(k, 1), 0, NULL);
  // theta^(-2t/r) = exp(t * (-2 ln(theta) / r)), in f64 as the reference.
  MlirValue inv = attn_b_unary(
      b, "math.exp",
      attn_b_mulf(b, f64_of_index(k, t.iv),
                  attn_b_f64(b, -2.0 * log(rope->theta) / (double)r)));
  MlirValue ang = attn_b_mulf(b, p, inv);
  MlirValue cs = attn_b_cast(b, "arith.truncf", attn_b_unary(b, "math.cos", ang),
                             b->t.f32);
  MlirValue sn = attn_b_cast(b, "arith.truncf", attn_b_unary(b, "math.sin", ang),
                             b->t.f32);
  MlirValue ia = inter ? attn_b_muli(b, t.iv, idx(k, 2)) : t.iv;
  MlirValue ib = attn_b_addi(b, ia, idx(k, inter ? 1 : half));
  MlirValue x1 = attn_b_load(b, k->qrow, 1, &ia);
  MlirValue x2 = attn_b_load(b, k->qrow, 1, &ib);
  attn_b_store(b, attn_b_subf(b, attn_b_mulf(b, x1, cs), attn_b_mulf(b, x2, sn)),
               k->qrow, 1, &ia);
  attn_b_store(b, attn_b_fma(b, x1, sn, attn_b_mulf(b, x2, cs)), k->qrow, 1,
               &ib);
  attn_b_for_close(b, &t, 0, NULL);
}

/// The score after the modifiers in order (scale first when mods has none:
/// attn_fused_config always lists it).
static MlirValue build_mods(struct dk *k, MlirValue s, MlirValue h,
                            MlirValue pos, MlirValue j) {
  struct attn_builder *b = &k->b;
  const struct attn_fused_config *f = &k->c->base;
  for (int m = 0; m < f->nmods; ++m) {
    if (f->mods[m] == ATTN_MOD_SCALE) {
      s = attn_b_mulf(b, s, attn_b_f32(b, (float)f->scale));
    } else if (f->mods[m] == ATTN_MOD_SOFTCAP) {
      MlirValue t = attn_b_unary(
          b, "math.tanh", attn_b_mulf(b, s, attn_b_f32(b, (float)(1.0 / f->softcap))));
      s = attn_b_mulf(b, t, attn_b_f32(b, (float)f->softcap));
    } else if (f->mods[m] == ATTN_MOD_ALIBI) {
      // slope 2^(-max_bias (h + 1) / H), distance |pos - j|.
      MlirValue h1 = attn_b_cast(
          b, "arith.sitofp",
          attn_b_cast(b, "arith.index_cast", attn_b_addi(b, h, idx(k, 1)),
                      b->t.i64),
          b->t.f32);
      MlirValue slope = attn_b_unary(
          b, "math.exp2",
          attn_b_mulf(b, h1,
                      attn_b_f32(b, (float)(-f->alibi_max_bias /
                                            (double)k->c->heads))));
      MlirValue dist = attn_b_cast(
          b, "arith.sitofp",
          attn_b_cast(b, "arith.index_cast", attn_b_subi(b, pos, j), b->t.i64),
          b->t.f32);
      dist = attn_b_unary(b, "math.absf", dist);
      s = attn_b_subf(b, s, attn_b_mulf(b, slope, dist));
    }
  }
  return s;
}

/// The cache's (page or sequence, row) of key j; *valid (when asked) says
/// whether its page is in [0, P) (else it is page 0's row, for reads), a
/// null value for a contiguous cache.
static void key_at(struct dk *k, MlirValue j, MlirValue *blk, MlirValue *row,
                   MlirValue *valid) {
  struct attn_builder *b = &k->b;
  if (k->c->layout != ATTN_CACHE_PAGED) {
    *blk = k->bi;
    *row = j;
    if (valid)
      *valid = (MlirValue){NULL};
    return;
  }
  MlirValue ps = idx(k, k->c->page_size);
  MlirValue at[2] = {k->bi, attn_b_divui(b, j, ps)};
  MlirValue page = attn_b_cast(b, "arith.index_cast",
                               attn_b_load(b, k->table, 2, at), b->t.index);
  MlirValue ok = attn_b_andi(
      b, attn_b_cmpi(b, ATTN_B_SGE, page, idx(k, 0)),
      attn_b_cmpi(b, ATTN_B_SLT, page, idx(k, k->c->num_pages)));
  *blk = attn_b_select(b, ok, page, idx(k, 0));
  *row = attn_b_remui(b, j, ps);
  if (valid)
    *valid = ok;
}

/// The append: row i of k_new and v_new of the CTA's K/V head into the
/// caches at position len - N + i (k_new rotated there first), where that
/// position is not negative and its page is in [0, P).
static void build_append(struct dk *k, const struct attn_append_config *ap,
                         MlirValue len) {
  struct attn_builder *b = &k->b;
  attn_builder_role(b, "tile.decode.append");
  MlirValue one = idx(k, 1);
  struct attn_b_for i;
  attn_b_for_open(b, &i, idx(k, 0), idx(k, ap->seq_new), one, 0, NULL);
  MlirValue pos = attn_b_addi(b, attn_b_subi(b, len, idx(k, ap->seq_new)), i.iv);
  MlirValue blk, row, valid;
  key_at(k, attn_b_binary(b, "arith.maxsi", pos, idx(k, 0)), &blk, &row, &valid);
  MlirValue write = attn_b_cmpi(b, ATTN_B_SGE, pos, idx(k, 0));
  if (!mlirValueIsNull(valid))
    write = attn_b_andi(b, valid, write);
  struct attn_b_if w;
  attn_b_if_open(b, &w, write, 0, NULL, false);
  struct attn_b_for d;
  attn_b_for_open(b, &d, idx(k, 0), idx(k, ap->head_dim), one, 0, NULL);
  MlirValue ni[4] = {k->bi, k->g, i.iv, d.iv};
  attn_b_store(b, widen(k, attn_b_load(b, k->k_new, 4, ni)), k->qrow, 1, &d.iv);
  attn_b_for_close(b, &d, 0, NULL);
  if (ap->has_rope)
    build_rope(k, &ap->rope, pos);
  struct attn_b_for e;
  attn_b_for_open(b, &e, idx(k, 0), idx(k, ap->head_dim), one, 0, NULL);
  MlirValue x = attn_b_load(b, k->qrow, 1, &e.iv);
  if (!mlirTypeIsAF32(k->elem))
    x = attn_b_cast(b, "arith.truncf", x, k->elem);
  MlirValue ki[4] = {blk, k->g, row, e.iv};
  attn_b_store(b, x, k->kc, 4, ki);
  attn_b_for_close(b, &e, 0, NULL);
  struct attn_b_for v;
  attn_b_for_open(b, &v, idx(k, 0), idx(k, ap->value_dim), one, 0, NULL);
  MlirValue vn[4] = {k->bi, k->g, i.iv, v.iv};
  MlirValue vi[4] = {blk, k->g, row, v.iv};
  attn_b_store(b, attn_b_load(b, k->v_new, 4, vn), k->vc, 4, vi);
  attn_b_for_close(b, &v, 0, NULL);
  attn_b_if_close(b, &w, 0, NULL);
  attn_b_for_close(b, &i, 0, NULL);
}

/// One query row i of head h: q widened and rotated, the keys it sees with
/// an online softmax, the normalised row stored.
static void build_row(struct dk *k, MlirValue len, MlirValue h, MlirValue i) {
  struct attn_builder *b = &k->b;
  const struct attn_decode_config *c = k->c;
  const struct attn_fused_config *f = &c->base;
  attn_builder_role(b, "tile.decode.query");
  MlirValue pos = attn_b_addi(b, attn_b_subi(b, len, idx(k, c->seq_q)), i);
  struct attn_b_for d;
  attn_b_for_open(b, &d, idx(k, 0), idx(k, c->head_dim), idx(k, 1), 0, NULL);
  MlirValue qi[4] = {k->bi, h, i, d.iv};
  attn_b_store(b, widen(k, attn_b_load(b, k->q, 4, qi)), k->qrow, 1, &d.iv);
  attn_b_for_close(b, &d, 0, NULL);
  if (f->has_rope)
    build_rope(k, &f->rope, pos);
  attn_builder_role(b, "tile.decode.key_range");
  MlirValue one = idx(k, 1);
  MlirValue lo = idx(k, 0);
  MlirValue hi = f->causal
                     ? attn_b_binary(b, "arith.minsi", len,
                                     attn_b_addi(b, pos, one))
                     : len;
  if (f->has_window && f->window_left >= 0)
    lo = attn_b_binary(b, "arith.maxsi", lo,
                       attn_b_subi(b, pos, idx(k, f->window_left)));
  if (f->has_window && f->window_right >= 0)
    hi = attn_b_binary(b, "arith.minsi", hi,
                       attn_b_addi(b, pos, idx(k, f->window_right + 1)));
  // scf.for runs nothing when hi <= lo; keep lo <= hi for it anyway.
  hi = attn_b_binary(b, "arith.maxsi", hi, lo);
  struct attn_b_for z;
  attn_b_for_open(b, &z, idx(k, 0), idx(k, c->value_dim), one, 0, NULL);
  attn_b_store(b, attn_b_f32(b, 0.0f), k->acc, 1, &z.iv);
  attn_b_for_close(b, &z, 0, NULL);
  attn_builder_role(b, "tile.decode.key_loop");
  MlirValue init[2] = {attn_b_f32(b, -INFINITY), attn_b_f32(b, 0.0f)};
  struct attn_b_for j;
  attn_b_for_open(b, &j, lo, hi, one, 2, init);
  MlirValue blk, row;
  key_at(k, j.iv, &blk, &row, NULL);
  struct attn_b_for e;
  MlirValue zero_k = attn_b_f32(b, 0.0f);
  attn_b_for_open(b, &e, idx(k, 0), idx(k, c->head_dim), one, 1, &zero_k);
  MlirValue ki[4] = {blk, k->g, row, e.iv};
  MlirValue dot = attn_b_fma(b, attn_b_load(b, k->qrow, 1, &e.iv),
                             widen(k, attn_b_load(b, k->kc, 4, ki)), e.args[0]);
  attn_b_for_close(b, &e, 1, &dot);
  MlirValue s = build_mods(k, e.results[0], h, pos, j.iv);
  MlirValue mnew = attn_b_maxnumf(b, j.args[0], s);
  MlirValue corr = attn_b_unary(b, "math.exp", attn_b_subf(b, j.args[0], mnew));
  MlirValue p = attn_b_unary(b, "math.exp", attn_b_subf(b, s, mnew));
  MlirValue lnew = attn_b_fma(b, j.args[1], corr, p);
  struct attn_b_for v;
  attn_b_for_open(b, &v, idx(k, 0), idx(k, c->value_dim), one, 0, NULL);
  MlirValue vi[4] = {blk, k->g, row, v.iv};
  MlirValue a = attn_b_load(b, k->acc, 1, &v.iv);
  attn_b_store(b,
               attn_b_fma(b, p, widen(k, attn_b_load(b, k->vc, 4, vi)),
                          attn_b_mulf(b, a, corr)),
               k->acc, 1, &v.iv);
  attn_b_for_close(b, &v, 0, NULL);
  MlirValue y[2] = {mnew, lnew};
  attn_b_for_close(b, &j, 2, y);
  attn_builder_role(b, "tile.decode.epilogue");
  MlirValue l = j.results[1], zero = attn_b_f32(b, 0.0f);
  MlirValue inv = attn_b_select(b, attn_b_cmpf(b, ATTN_B_F_OGT, l, zero),
                                attn_b_divf(b, attn_b_f32(b, 1.0f), l), zero);
  struct attn_b_for o;
  attn_b_for_open(b, &o, idx(k, 0), idx(k, c->value_dim), one, 0, NULL);
  MlirValue x = attn_b_mulf(b, attn_b_load(b, k->acc, 1, &o.iv), inv);
  if (!mlirTypeIsAF32(k->elem))
    x = attn_b_cast(b, "arith.truncf", x, k->elem);
  MlirValue oi[4] = {k->bi, h, i, o.iv};
  attn_b_store(b, x, k->out, 4, oi);
  attn_b_for_close(b, &o, 0, NULL);
}

/// Builds the kernel @name before func; false after a diagnostic. app: the
/// attn.cache_append feeding dec, or null (ap its configuration).
static bool build_kernel(MlirOperation func, MlirOperation dec,
                         MlirOperation app, const char *name,
                         const struct attn_decode_config *c,
                         const struct attn_append_config *ap) {
  struct dk k;
  memset(&k, 0, sizeof k);
  k.c = c;
  struct attn_builder *b = &k.b;
  attn_builder_init(b, mlirOperationGetContext(func),
                    mlirOperationGetLocation(dec));
  attn_builder_before(b, func);
  bool append = !mlirOperationIsNull(app);
  // q, the caches, the lengths, the table; then k_new and v_new; out.
  intptr_t n = mlirOperationGetNumOperands(dec), na = n;
  MlirType types[8];
  const char *argn[8];
  static const char *const names[5] = {"q", "k_cache", "v_cache",
                                       "cache_seqlens", "block_table"};
  for (intptr_t i = 0; i < n; ++i) {
    types[i] = memref_of(mlirValueGetType(mlirOperationGetOperand(dec, i)));
    argn[i] = names[i];
  }
  if (append) {
    for (int i = 0; i < 2; ++i) {
      types[na] = memref_of(mlirValueGetType(
          mlirOperationGetOperand(app, attn_append_k_new(ap) + i)));
      argn[na++] = i ? "v_new" : "k_new";
    }
  }
  types[na] = memref_of(mlirValueGetType(mlirOperationGetResult(dec, 0)));
  argn[na] = "out";
  k.elem = mlirShapedTypeGetElementType(types[0]);
  int64_t t[8] = {0, 0};
  if (c->has_table)
    attn_static_shape(mlirValueGetType(mlirOperationGetOperand(dec, 4)), t);
  int64_t grid[3] = {c->kv_heads, c->batch, 1};
  MlirNamedAttribute attrs[] = {
      attn_b_named(b, ATTN_TILE_KERNEL_ATTR, attn_b_attr_unit(b)),
      attn_b_named(b, ATTN_TILE_GRID_ATTR, attn_b_attr_i64s(b, 3, grid)),
      attn_b_named(b, ATTN_TILE_THREADS_ATTR, attn_b_attr_i64(b, 1)),
      attn_b_named(b, ATTN_TILE_ARG_NAMES_ATTR,
                   attn_b_attr_strs(b, na + 1, argn)),
      attn_b_named(b, ATTN_TILE_DECODE_ATTR,
                   decode_dict(b, c, t[1], append ? ap : NULL)),
  };
  attn_builder_role(b, "tile.kernel");
  struct attn_b_func f;
  attn_b_func_open(b, &f, name, na + 1, types, 0, NULL,
                   sizeof attrs / sizeof *attrs, attrs);
  k.q = attn_b_func_arg(&f, 0);
  k.kc = attn_b_func_arg(&f, 1);
  k.vc = attn_b_func_arg(&f, 2);
  k.lens = attn_b_func_arg(&f, 3);
  if (c->has_table)
    k.table = attn_b_func_arg(&f, 4);
  if (append) {
    k.k_new = attn_b_func_arg(&f, n);
    k.v_new = attn_b_func_arg(&f, n + 1);
  }
  k.out = attn_b_func_arg(&f, na);
  attn_builder_role(b, "tile.decode.prologue");
  k.g = attn_tile_build_program_id(b, 0);
  k.bi = attn_tile_build_program_id(b, 1);
  k.qrow = attn_tile_build_alloc(
      b, attn_b_memref(b, 1, (int64_t[]){c->head_dim}, b->t.f32));
  k.acc = attn_tile_build_alloc(
      b, attn_b_memref(b, 1, (int64_t[]){c->value_dim}, b->t.f32));
  MlirValue len = attn_b_cast(b, "arith.index_cast",
                              attn_b_load(b, k.lens, 1, &k.bi), b->t.index);
  len = attn_b_binary(b, "arith.minsi",
                      attn_b_binary(b, "arith.maxsi", len, idx(&k, 0)),
                      idx(&k, c->max_seq));
  if (append)
    build_append(&k, ap, len);
  attn_builder_role(b, "tile.decode.query");
  int64_t group = c->heads / c->kv_heads;
  struct attn_b_for hq, i;
  attn_b_for_open(b, &hq, idx(&k, 0), idx(&k, group), idx(&k, 1), 0, NULL);
  MlirValue h = attn_b_addi(b, attn_b_muli(b, k.g, idx(&k, group)), hq.iv);
  attn_b_for_open(b, &i, idx(&k, 0), idx(&k, c->seq_q), idx(&k, 1), 0, NULL);
  build_row(&k, len, h, i.iv);
  attn_b_for_close(b, &i, 0, NULL);
  attn_b_for_close(b, &hq, 0, NULL);
  attn_b_func_close(b, &f, 0, NULL);
  if (attn_builder_finish(b))
    return true;
  if (!mlirOperationIsNull(f.op))
    mlirOperationDestroy(f.op);
  return false;
}

int attn_tile_decode(MlirOperation func) {
  bool bad = false;
  MlirOperation app;
  MlirOperation dec = find_decode(func, &app, &bad);
  if (bad)
    return -1;
  if (mlirOperationIsNull(dec))
    return 0;
  struct attn_decode_config c;
  struct attn_append_config ap;
  memset(&ap, 0, sizeof ap);
  if (!attn_decode_get_config(dec, &c))
    return attn_emit_errorf(dec, "malformed attn.fused_decode attributes"),
           -1;
  if (!mlirOperationIsNull(app) && !attn_cache_append_get_config(app, &ap))
    return attn_emit_errorf(app, "malformed attn.cache_append attributes"),
           -1;
  MlirStringRef sym;
  if (!attn_attr_str(func, "sym_name", &sym))
    return attn_emit_errorf(func, "function has no name"), -1;
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)sym.length, sym.data);
  if (!build_kernel(func, dec, app, name, &c, &ap))
    return -1;
  mlirOperationDestroy(func);
  return 1;
}
