//===- attention_kernel.c - Reads an attention tile kernel's problem ------===//
//
// lower-tile-to-hopper and lower-tile-to-mma both lower the attention tile
// program attn-tile writes, and both begin by reading what it computes: the
// arguments (q, k, v, out, and lse when the kernel is the forward of a
// backward: tile.attention's lse, tile.row_lse at its end), their shapes
// and element type, the tile
// allocations' block sizes and the tile.attention dictionary (mods, scale,
// causal, rope). attn_attention_describe does that once, checking each
// against the limits of the caller's kernel family (struct
// attn_attention_family), whose name opens the diagnostics. Score and mask
// functions of any form (tile.score_fn, tile.mask_fn) come with their
// bodies and the captures they read (the kernel's arguments besides q, k,
// v and out, in any place),
// which the kernels compute on their fragments (lib/Kernels/score_fn.c).
// Explicit RoPE positions (the arguments q_positions and k_positions that
// tile.rope_positions reads) come as captures too, marked as such
// (attn_hopper_kernel's q_positions, k_positions).
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels.h"
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/tile/tile_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// The ops of score and mask functions of any form (dialects/tile).
#define SCORE_FN "tile.score_fn"
#define MASK_FN "tile.mask_fn"

/// The tile ops of the attention program attn-tile writes, in order:
/// "rope?" a tile.rope when the kernel has RoPE, "scores*" any run of
/// tile.score_mod and tile.score_fn (the modifiers in mods' order), "masks*"
/// any number of tile.mask_fn, "lse?" the op after it when the kernel
/// writes lse (the row vector's tile.alloc; tile.row_lse and its
/// tile.store).
static const char *const program[] = {
    ATTN_OP_TILE_PROGRAM_ID, ATTN_OP_TILE_PROGRAM_ID, ATTN_OP_TILE_ALLOC,
    ATTN_OP_TILE_ALLOC,      ATTN_OP_TILE_ALLOC,      ATTN_OP_TILE_ALLOC,
    ATTN_OP_TILE_ALLOC,      ATTN_OP_TILE_ALLOC,      ATTN_OP_TILE_ALLOC,
    "lse?",                  ATTN_OP_TILE_ALLOC,
    ATTN_OP_TILE_LOAD,       "rope?",                 ATTN_OP_TILE_FILL,
    ATTN_OP_TILE_FILL,       ATTN_OP_TILE_FILL,       ATTN_OP_TILE_LOAD,
    "rope?",                 ATTN_OP_TILE_LOAD,       ATTN_OP_TILE_MMA,
    "scores*",               ATTN_OP_TILE_MASK,       "masks*",
    ATTN_OP_TILE_SOFTMAX_UPDATE, ATTN_OP_TILE_MMA,
    ATTN_OP_TILE_NORMALIZE,  ATTN_OP_TILE_STORE,
    "lse?",                  ATTN_OP_TILE_ROW_LSE,
    "lse?",                  ATTN_OP_TILE_STORE,
};

static MlirWalkResult collect_tile(MlirOperation op, void *user) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (n.length > 5 && !strncmp(n.data, "tile.", 5))
    attn_op_list_push(user, op);
  return MlirWalkResultAdvance;
}

void attn_tile_collect_ops(MlirOperation kernel, struct attn_op_list *out) {
  mlirOperationWalk(kernel, collect_tile, out, MlirWalkPreOrder);
}

/// Whether op rotates a tile as k says Q's (keys false) or K's rows are
/// rotated: tile.rope at offsets, or tile.rope_positions reading k's
/// positions capture.
static bool is_rope_of(MlirOperation op, const struct attn_hopper_kernel *k,
                       bool keys) {
  bool explicit = keys ? k->k_positions : k->q_positions;
  if (!explicit)
    return attn_op_is(op, ATTN_OP_TILE_ROPE);
  int c = keys ? k->k_pos_capture : k->q_pos_capture;
  return attn_op_is(op, ATTN_OP_TILE_ROPE_POSITIONS) &&
         mlirOperationGetNumOperands(op) == 4 &&
         mlirValueEqual(mlirOperationGetOperand(op, 3), k->captures[c].value);
}

/// True when kernel is the attention tile program (with tile.rope or
/// tile.rope_positions on Q and K, as k says, when k->rope is set; with
/// k->lse, ending in tile.row_lse and its store to lse, the argument); its
/// tile.score_fn and tile.mask_fn ops, in order, go into fns (at most max
/// of each: more are counted in *nscore, *nmask, but not stored). *named is
/// set when a tile.score_mod names more than the scale (the kernels compute
/// softcap and ALiBi as the bodies attn-tile writes, not as tile.score_mod).
static bool is_attention_program(MlirOperation kernel,
                                 const struct attn_hopper_kernel *k,
                                 MlirValue lse, MlirOperation *score_fns,
                                 int *nscore,
                                 MlirOperation *mask_fns, int *nmask, int max,
                                 bool *named) {
  struct attn_op_list ops = {0};
  attn_tile_collect_ops(kernel, &ops);
  size_t i = 0;
  int nropes = 0;
  bool ok = !ops.failed;
  *nscore = *nmask = 0;
  *named = false;
  for (size_t p = 0; ok && p < sizeof program / sizeof *program; ++p) {
    if (!strcmp(program[p], "lse?")) {
      if (!k->lse)
        ++p; // not this kernel's
      continue;
    }
    if (!strcmp(program[p], "rope?")) {
      if (k->rope)
        ok = i < ops.n && is_rope_of(ops.ops[i++], k, nropes++ > 0);
      continue;
    }
    if (!strcmp(program[p], "scores*")) {
      for (; i < ops.n; ++i) {
        if (attn_op_is(ops.ops[i], ATTN_OP_TILE_SCORE_MOD)) {
          struct attn_tile_score_mods m; // the scale: the kernels read mods
          *named |= !attn_tile_score_mod_get(ops.ops[i], &m) || m.n != 1 ||
                    m.mods[0] != ATTN_MOD_SCALE;
          continue;
        }
        if (attn_op_is(ops.ops[i], SCORE_FN)) {
          if (*nscore < max)
            score_fns[*nscore] = ops.ops[i];
          ++*nscore;
        } else
          break;
      }
      continue;
    }
    if (!strcmp(program[p], "masks*")) {
      for (; i < ops.n && attn_op_is(ops.ops[i], MASK_FN); ++i) {
        if (*nmask < max)
          mask_fns[*nmask] = ops.ops[i];
        ++*nmask;
      }
      continue;
    }
    ok = i < ops.n && attn_op_is(ops.ops[i++], program[p]);
  }
  ok = ok && i == ops.n;
  if (ok && k->lse) // the last tile.store writes lse
    ok = mlirValueEqual(mlirOperationGetOperand(ops.ops[ops.n - 1], 1), lse);
  free(ops.ops);
  return ok;
}

MlirAttribute attn_dict_get(MlirAttribute dict, const char *key) {
  return mlirDictionaryAttrGetElementByName(
      dict, mlirStringRefCreateFromCString(key));
}

int64_t attn_dict_int(MlirAttribute dict, const char *key, int64_t dflt) {
  MlirAttribute a = attn_dict_get(dict, key);
  return !mlirAttributeIsNull(a) && mlirAttributeIsAInteger(a)
             ? mlirIntegerAttrGetValueInt(a)
             : dflt;
}

/// True when size (a power of two) is one of sizes, a mask of them.
static bool one_of(int size, unsigned sizes) {
  return size > 0 && !(size & (size - 1)) && (sizes & (unsigned)size);
}

/// Whether v (an argument of the kernel) is read inside the body of a
/// tile.score_fn or tile.mask_fn: a capture.
static bool read_by_body(MlirValue v) {
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u))
    for (MlirOperation p = mlirOpOperandGetOwner(u); !mlirOperationIsNull(p);
         p = mlirOperationGetParentOperation(p))
      if (attn_op_is(p, SCORE_FN) || attn_op_is(p, MASK_FN))
        return true;
  return false;
}

/// Whether v (an argument of the kernel) is the positions operand of a
/// tile.rope_positions: explicit RoPE positions.
static bool read_as_positions(MlirValue v) {
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u))
    if (mlirOpOperandGetOperandNumber(u) == 3 &&
        attn_op_is(mlirOpOperandGetOwner(u), ATTN_OP_TILE_ROPE_POSITIONS))
      return true;
  return false;
}

/// Finds the kernel's nargs arguments q, k, v, out and lse (the forward of
/// a backward: attn-tile writes it after out) by their tile.arg_names
/// (attn-tile keeps the program's argument order, out last; the others are
/// captures: "gate", "q_segments", "capture0", ...): their positions in
/// pos[0 .. 4] (the enum attn_hopper_arg order; pos[4] -1 without lse).
/// False unless each of the first four is there once, and lse at most once.
static bool find_qkvo(MlirOperation kernel, intptr_t nargs,
                      int pos[ATTN_HOPPER_ARG_CAPTURE]) {
  static const char *role[ATTN_HOPPER_ARG_CAPTURE] = {"q", "k", "v", "out",
                                                      "lse"};
  MlirAttribute names = attn_attr_get(kernel, ATTN_TILE_ARG_NAMES_ATTR);
  bool ok = !mlirAttributeIsNull(names) && mlirAttributeIsAArray(names) &&
            mlirArrayAttrGetNumElements(names) == nargs;
  for (int r = 0; r < ATTN_HOPPER_ARG_CAPTURE; ++r)
    pos[r] = -1;
  for (intptr_t i = 0; ok && i < nargs; ++i) {
    MlirAttribute n = mlirArrayAttrGetElement(names, i);
    ok = mlirAttributeIsAString(n);
    for (int r = 0; ok && r < ATTN_HOPPER_ARG_CAPTURE; ++r)
      if (attn_str_eq(mlirStringAttrGetValue(n), role[r])) {
        ok = pos[r] < 0;
        pos[r] = (int)i;
      }
  }
  for (int r = 0; ok && r < 4; ++r)
    ok = pos[r] >= 0;
  return ok;
}

/// Reads the score modifiers of tile.attention (att) into k: mods (softcap,
/// alibi, gate and fn each a tile.score_fn: attn-tile writes them as bodies)
/// and window (normalised: a bound that masks no key of the problem
/// becomes -1, the right one always with causal, and a window left without
/// bounds is none); false with why (and detail) when malformed.
bool attn_attention_describe_mods(MlirAttribute att,
                                  const struct attn_attention_family *f,
                                  struct attn_hopper_kernel *k, char *why,
                                  size_t wlen, char *detail, size_t dlen) {
  MlirAttribute mods = attn_dict_get(att, "mods");
  if (!mlirAttributeIsNull(mods)) {
    intptr_t n = mlirAttributeIsAArray(mods)
                     ? mlirArrayAttrGetNumElements(mods)
                     : -1;
    for (intptr_t m = 0; m < n; ++m) {
      MlirAttribute e = mlirArrayAttrGetElement(mods, m);
      MlirStringRef s = mlirAttributeIsAString(e) ? mlirStringAttrGetValue(e)
                                                  : mlirStringRefCreate("", 0);
      enum attn_hopper_mod mod = ATTN_HOPPER_MOD_SCALE;
      if (attn_str_eq(s, "fn") || attn_str_eq(s, "gate") ||
          attn_str_eq(s, "softcap") || attn_str_eq(s, "alibi"))
        mod = ATTN_HOPPER_MOD_FN; // a tile.score_fn
      else if (!attn_str_eq(s, "scale")) {
        snprintf(why, wlen,
                 "%s computes the modifiers scale, softcap, alibi, gate and "
                 "score functions only",
                 f->kernel);
        snprintf(detail, dlen, "'%.*s'", (int)s.length, s.data);
        return false;
      }
      for (int i = 0; i < k->nmods && mod != ATTN_HOPPER_MOD_FN; ++i)
        n = k->mods[i] == mod ? -1 : n;
      if (n < 0 || k->nmods == ATTN_HOPPER_MAX_MODS) {
        n = -1;
        break;
      }
      k->mods[k->nmods++] = mod;
    }
    if (n < 0) {
      snprintf(why, wlen, "malformed mods");
      return false;
    }
  }
  bool scaled = false;
  for (int i = 0; i < k->nmods; ++i)
    scaled |= k->mods[i] == ATTN_HOPPER_MOD_SCALE;
  if (k->nmods && !scaled && k->scale != 1.0) {
    snprintf(why, wlen, "mods must name the scale (unless 1)");
    return false;
  }
  MlirAttribute a = attn_dict_get(att, "window");
  if (mlirAttributeIsNull(a))
    return true;
  if (!mlirAttributeIsADenseI64Array(a) ||
      mlirDenseArrayGetNumElements(a) != 2 ||
      mlirDenseI64ArrayGetElement(a, 0) < -1 ||
      mlirDenseI64ArrayGetElement(a, 1) < -1) {
    snprintf(why, wlen, "malformed window");
    return false;
  }
  k->window_left = mlirDenseI64ArrayGetElement(a, 0);
  k->window_right = mlirDenseI64ArrayGetElement(a, 1);
  // Rows are below seq_q and keys below seq_k: a bound beyond masks
  // nothing (and the kernels' i32 sums stay below 2^25).
  if (k->window_left >= k->seq_q)
    k->window_left = -1;
  if (k->window_right >= k->seq_k || k->causal)
    k->window_right = -1;
  k->window = k->window_left >= 0 || k->window_right >= 0;
  return true;
}

/// Reads tile.attention into k; false with why (and detail) when the kernel
/// computes something f's kernel does not.
static bool describe_attention(MlirAttribute att,
                               const struct attn_attention_family *f,
                               struct attn_hopper_kernel *k, void *user,
                               char *why, size_t wlen, char *detail,
                               size_t dlen) {
  if (mlirAttributeIsNull(att) || !mlirAttributeIsADictionary(att)) {
    snprintf(why, wlen, "the kernel has no tile.attention description");
    return false;
  }
  for (intptr_t i = 0, n = mlirDictionaryAttrGetNumElements(att); i < n; ++i) {
    MlirNamedAttribute el = mlirDictionaryAttrGetElement(att, i);
    MlirStringRef key = mlirIdentifierStr(el.name);
    // Softcap, ALiBi, the gate and the document mask come as bodies
    // (tile.score_fn, tile.mask_fn); their keys only describe them.
    if (!attn_str_eq(key, "scale") && !attn_str_eq(key, "causal") &&
        !attn_str_eq(key, "rope") && !attn_str_eq(key, "mods") &&
        !attn_str_eq(key, "softcap") && !attn_str_eq(key, "alibi") &&
        !attn_str_eq(key, "window") && !attn_str_eq(key, "gate_block") &&
        !attn_str_eq(key, "document") && !attn_str_eq(key, "lse")) {
      snprintf(why, wlen,
               "%s computes scale, causal, softcap, alibi, window, RoPE, "
               "score and mask functions and lse only",
               f->kernel);
      snprintf(detail, dlen, "'%.*s'", (int)key.length, key.data);
      return false;
    }
  }
  MlirAttribute a = attn_dict_get(att, "scale");
  k->scale = mlirAttributeIsAFloat(a) ? mlirFloatAttrGetValueDouble(a) : 1.0;
  if (f->positive_scale && !(k->scale > 0)) {
    snprintf(why, wlen, "%s needs a positive scale", f->kernel);
    return false;
  }
  a = attn_dict_get(att, "causal");
  k->causal = mlirAttributeIsABool(a) && mlirBoolAttrGetValue(a);
  a = attn_dict_get(att, "lse");
  k->lse = !mlirAttributeIsNull(a) && mlirAttributeIsABool(a) &&
           mlirBoolAttrGetValue(a);
  if (!attn_attention_describe_mods(att, f, k, why, wlen, detail, dlen))
    return false;
  MlirAttribute rope = attn_dict_get(att, "rope");
  if (mlirAttributeIsNull(rope))
    return true;
  bool dict = mlirAttributeIsADictionary(rope);
  MlirAttribute t = dict ? attn_dict_get(rope, "theta") : rope,
                r = dict ? attn_dict_get(rope, "rotary_dim") : rope,
                l = dict ? attn_dict_get(rope, "layout") : rope;
  if (!dict || !mlirAttributeIsAFloat(t) || !mlirAttributeIsAInteger(r) ||
      !mlirAttributeIsAString(l)) {
    snprintf(why, wlen, "malformed rope description");
    return false;
  }
  k->rope = true;
  k->theta = mlirFloatAttrGetValueDouble(t);
  k->rotary_dim = mlirIntegerAttrGetValueInt(r);
  k->interleaved = attn_str_eq(mlirStringAttrGetValue(l), "interleaved");
  int64_t shared = attn_dict_int(rope, "offset", 0);
  k->rope_offset = attn_dict_int(rope, "q_offset", shared);
  k->rope_offset_k = attn_dict_int(rope, "k_offset", shared);
  return f->check_rope(rope, k, user, why, wlen, detail, dlen);
}

bool attn_attention_rope_positions_ok(const struct attn_hopper_kernel *k) {
  return k->rope_offset >= 0 && k->rope_offset_k >= 0 &&
         k->rope_offset + k->seq_q <= (1LL << 24) &&
         k->rope_offset_k + k->seq_k <= (1LL << 24);
}

/// The manifest's name of a capture's element type, or NULL when the
/// kernels do not read it.
static const char *capture_dtype(MlirType e) {
  if (mlirTypeIsAF32(e))
    return "f32";
  if (mlirTypeIsAF16(e))
    return "f16";
  if (mlirTypeIsABF16(e))
    return "bf16";
  if (mlirTypeIsAInteger(e) && mlirIntegerTypeGetWidth(e) == 32)
    return "i32";
  if (mlirTypeIsAInteger(e) && mlirIntegerTypeGetWidth(e) == 64)
    return "i64";
  return NULL;
}

bool attn_attention_add_capture(MlirValue value, MlirStringRef name,
                                const char *kernel,
                                struct attn_hopper_kernel *k, char *why,
                                size_t wlen, char *detail, size_t dlen) {
  if (k->ncaptures == ATTN_HOPPER_MAX_CAPTURES) {
    snprintf(why, wlen, "%s reads at most %d captured tensors", kernel,
             ATTN_HOPPER_MAX_CAPTURES);
    snprintf(detail, dlen, "'%.*s'", (int)name.length, name.data);
    return false;
  }
  struct attn_hopper_capture *c = &k->captures[k->ncaptures++];
  c->value = value;
  MlirType t = mlirValueGetType(c->value);
  snprintf(c->name, sizeof c->name, "%.*s", (int)name.length, name.data);
  int64_t shape[8];
  c->rank = mlirTypeIsAMemRef(t) ? attn_static_shape(t, shape) : -1;
  c->dtype =
      c->rank > 0 ? capture_dtype(mlirShapedTypeGetElementType(t)) : NULL;
  if (c->rank < 1 || c->rank > 4 || !c->dtype) {
    snprintf(why, wlen,
             "%s reads captured tensors of rank 1 to 4, static shape, f32, "
             "f16, bf16, i32 or i64",
             kernel);
    snprintf(detail, dlen, "'%s'", c->name);
    return false;
  }
  for (int d = 0; d < c->rank; ++d)
    c->shape[d] = shape[d];
  bool qpos = !strcmp(c->name, "q_positions"),
       kpos = !strcmp(c->name, "k_positions");
  if ((qpos || kpos) && read_as_positions(c->value)) {
    int64_t seq = qpos ? k->seq_q : k->seq_k;
    if (strcmp(c->dtype, "i32") || c->rank != 2 || c->shape[0] != k->batch ||
        c->shape[1] != seq) {
      snprintf(why, wlen, "%s reads RoPE positions as i32 [batch, rows]",
               kernel);
      snprintf(detail, dlen, "'%s'", c->name);
      return false;
    }
    *(qpos ? &k->q_positions : &k->k_positions) = true;
    *(qpos ? &k->q_pos_capture : &k->k_pos_capture) = k->ncaptures - 1;
  }
  return true;
}

/// Reads the kernel's arguments but q, k, v and out (at pos) as captures
/// into k, and their order into k->args; false with why (and detail) when
/// the kernels cannot take one.
static bool describe_captures(MlirOperation kernel, MlirBlock body,
                              const int pos[ATTN_HOPPER_ARG_CAPTURE],
                              const struct attn_attention_family *f,
                              struct attn_hopper_kernel *k, char *why,
                              size_t wlen, char *detail, size_t dlen) {
  intptr_t n = mlirBlockGetNumArguments(body);
  intptr_t roles = pos[ATTN_HOPPER_ARG_LSE] >= 0 ? 5 : 4;
  if (n - roles > ATTN_HOPPER_MAX_CAPTURES) {
    snprintf(why, wlen, "%s reads at most %d captured tensors", f->kernel,
             ATTN_HOPPER_MAX_CAPTURES);
    snprintf(detail, dlen, "%ld", (long)(n - roles));
    return false;
  }
  MlirAttribute names = attn_attr_get(kernel, ATTN_TILE_ARG_NAMES_ATTR);
  k->nargs = (int)n;
  for (intptr_t i = 0; i < n; ++i) {
    int role = -1;
    for (int r = 0; r < ATTN_HOPPER_ARG_CAPTURE; ++r)
      role = pos[r] == i ? r : role;
    if (role >= 0) {
      k->args[i] = role;
      continue;
    }
    k->args[i] = ATTN_HOPPER_ARG_CAPTURE + k->ncaptures;
    if (!attn_attention_add_capture(
            mlirBlockGetArgument(body, i),
            mlirStringAttrGetValue(mlirArrayAttrGetElement(names, i)),
            f->kernel, k, why, wlen, detail, dlen))
      return false;
  }
  return true;
}

/// Whether tile.attention's rope dictionary says what the captures hold:
/// q_positions (k_positions) exactly when Q's (K's) are a capture read by
/// tile.rope_positions.
static bool positions_agree(MlirAttribute att,
                            const struct attn_hopper_kernel *k) {
  MlirAttribute rope = attn_dict_get(att, "rope");
  bool has = !mlirAttributeIsNull(rope) && mlirAttributeIsADictionary(rope);
  bool q = has && !mlirAttributeIsNull(attn_dict_get(rope, "q_positions")),
       kk = has && !mlirAttributeIsNull(attn_dict_get(rope, "k_positions"));
  return q == k->q_positions && kk == k->k_positions;
}

/// Whether v is one of k's captures, or its q, k or v (a body may read
/// those too).
static bool is_capture(const struct attn_hopper_kernel *k, MlirValue v) {
  for (int i = 0; i < k->ncaptures; ++i)
    if (mlirValueEqual(k->captures[i].value, v) ||
        (!mlirValueIsNull(k->captures[i].alias) &&
         mlirValueEqual(k->captures[i].alias, v)))
      return true;
  for (int r = 0; r < 3; ++r)
    if (mlirValueEqual(k->inputs[r], v))
      return true;
  return false;
}

/// Checks that the body of a tile.score_fn or tile.mask_fn (op) is one the
/// kernels clone (lib/Kernels/score_fn.c): one block of nargs arguments,
/// ops without regions, of at most one result and six operands, each
/// operand the block's (or, as a memref.load's memref, a capture), ended by
/// a gpu.yield of one value; attributes seq_q and seq_k the kernel's. The
/// block, or a null one with why.
MlirBlock attn_attention_fn_body(MlirOperation op,
                                 const struct attn_hopper_kernel *k,
                                 intptr_t nargs, char *why, size_t wlen) {
  return attn_attention_body_of(op, k, nargs, 1,
                                nargs == 5 ? "tile.score_fn" : "tile.mask_fn",
                                why, wlen);
}

MlirBlock attn_attention_body_of(MlirOperation op,
                                 const struct attn_hopper_kernel *k,
                                 intptr_t nargs, intptr_t nyield,
                                 const char *what, char *why, size_t wlen) {
  MlirBlock none = {NULL};
  MlirBlock body = mlirOperationGetNumRegions(op) == 1
                       ? mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0))
                       : none;
  MlirAttribute sq = attn_attr_get(op, "seq_q"), sk = attn_attr_get(op, "seq_k");
  if (mlirBlockIsNull(body) || mlirBlockGetNumArguments(body) != nargs ||
      mlirAttributeIsNull(sq) || !mlirAttributeIsAInteger(sq) ||
      mlirAttributeIsNull(sk) || !mlirAttributeIsAInteger(sk) ||
      mlirIntegerAttrGetValueInt(sq) != k->seq_q ||
      mlirIntegerAttrGetValueInt(sk) != k->seq_k) {
    snprintf(why, wlen, "malformed %s (its block, seq_q or seq_k)", what);
    return none;
  }
  int nops = 0;
  for (MlirOperation o = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o)) {
    bool load = attn_op_is(o, "memref.load"), yield = attn_op_is(o, "gpu.yield");
    intptr_t n = mlirOperationGetNumOperands(o);
    if (++nops > 256 || mlirOperationGetNumRegions(o) ||
        mlirOperationGetNumResults(o) > 1 || (!yield && n > 6) ||
        (yield && (n != nyield || !mlirOperationIsNull(
                                 mlirOperationGetNextInBlock(o))))) {
      snprintf(why, wlen,
               "a %s body the kernels cannot clone (at most 256 ops of one "
               "result and 6 operands, no regions, ended by gpu.yield)",
               what);
      return none;
    }
    for (intptr_t i = 0; i < n; ++i) {
      MlirValue v = mlirOperationGetOperand(o, i);
      bool inside =
          mlirValueIsABlockArgument(v)
              ? mlirBlockEqual(mlirBlockArgumentGetOwner(v), body)
              : mlirBlockEqual(mlirOperationGetBlock(mlirOpResultGetOwner(v)),
                               body);
      if (load && i == 0 ? !is_capture(k, v) : !inside) {
        snprintf(why, wlen,
                 "a %s body reads a value from outside it that is not a "
                 "captured tensor",
                 what);
        return none;
      }
    }
  }
  MlirOperation last = mlirBlockGetTerminator(body);
  if (mlirOperationIsNull(last) || !attn_op_is(last, "gpu.yield")) {
    snprintf(why, wlen, "a %s body must end with gpu.yield", what);
    return none;
  }
  return body;
}

bool attn_attention_describe(MlirOperation kernel,
                             const struct attn_attention_family *f,
                             struct attn_hopper_kernel *k, void *user,
                             char *why, size_t wlen, char *detail,
                             size_t dlen) {
  memset(k, 0, sizeof *k);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(kernel, 0));
  intptr_t nargs = mlirBlockGetNumArguments(body);
  int pos[ATTN_HOPPER_ARG_CAPTURE];
  bool named = nargs >= 4 && find_qkvo(kernel, nargs, pos);
  for (intptr_t i = 0; named && i < nargs; ++i) // the others: captures
    named = i == pos[0] || i == pos[1] || i == pos[2] || i == pos[3] ||
            i == pos[4] || read_by_body(mlirBlockGetArgument(body, i)) ||
            read_as_positions(mlirBlockGetArgument(body, i));
  if (!named && nargs != 4) {
    snprintf(why, wlen, "the kernel does not take exactly (q, k, v, out)");
    return false;
  }
  if (!named || (nargs == 4 && (pos[0] | (pos[1] ^ 1) | (pos[2] ^ 2) |
                                (pos[3] ^ 3)))) {
    snprintf(why, wlen, "%s", f->args_why);
    return false;
  }
  for (int r = 0; r < 3; ++r)
    k->inputs[r] = mlirBlockGetArgument(body, pos[r]);
  int64_t q[8], kv[8], v[8];
  attn_static_shape(mlirValueGetType(mlirBlockGetArgument(body, pos[0])), q);
  attn_static_shape(mlirValueGetType(mlirBlockGetArgument(body, pos[1])), kv);
  attn_static_shape(mlirValueGetType(mlirBlockGetArgument(body, pos[2])), v);
  MlirType e = mlirShapedTypeGetElementType(
      mlirValueGetType(mlirBlockGetArgument(body, pos[0])));
  if (!mlirTypeIsABF16(e) && !mlirTypeIsAF16(e)) {
    snprintf(why, wlen, "%s takes bf16 or f16 tensors", f->kernel);
    return false;
  }
  k->bf16 = mlirTypeIsABF16(e);
  k->batch = q[0];
  k->heads = q[1];
  k->kv_heads = kv[1];
  k->seq_q = q[2];
  k->seq_k = kv[2];
  k->head_dim = q[3];
  if (k->head_dim > 1024 || !one_of((int)k->head_dim, f->head_dims)) {
    snprintf(why, wlen, "%s", f->head_dims_why);
    snprintf(detail, dlen, "head dim %lld", (long long)k->head_dim);
    return false;
  }
  if (v[3] != k->head_dim) {
    snprintf(why, wlen, "%s needs v's head dim equal to q's", f->kernel);
    return false;
  }
  if (k->seq_q > (1LL << 24) || k->seq_k > (1LL << 24) ||
      k->batch * k->heads * k->seq_q > (1LL << 31) ||
      (f->kv_index32 && k->batch * k->kv_heads * k->seq_k > (1LL << 31))) {
    snprintf(why, wlen, "the tensors are too large for 32-bit indexing");
    return false;
  }
  struct attn_op_list allocs = {0};
  attn_tile_collect_allocs(kernel, &allocs);
  int64_t qt[8] = {0}, kt[8] = {0};
  if (allocs.n >= 2) {
    attn_static_shape(
        mlirValueGetType(mlirOperationGetResult(allocs.ops[0], 0)), qt);
    attn_static_shape(
        mlirValueGetType(mlirOperationGetResult(allocs.ops[1], 0)), kt);
  }
  free(allocs.ops);
  k->block_m = (int)qt[0];
  k->block_n = (int)kt[0];
  if (!one_of(k->block_m, f->block_m) ||
      !(one_of(k->block_n, f->block_n) ||
        (f->block_n_extra && k->block_n == f->block_n_extra))) {
    snprintf(why, wlen, "%s", f->blocks_why);
    snprintf(detail, dlen, "block-m %d, block-n %d", k->block_m, k->block_n);
    return false;
  }
  if (!describe_attention(attn_attr_get(kernel, "tile.attention"), f, k, user,
                          why, wlen, detail, dlen))
    return false;
  // lse: [B, H, N] f32, the argument attn-tile names so, exactly when
  // tile.attention says the kernel writes it.
  MlirValue lse = {NULL};
  if (pos[ATTN_HOPPER_ARG_LSE] >= 0) {
    lse = mlirBlockGetArgument(body, pos[ATTN_HOPPER_ARG_LSE]);
    int64_t l[8];
    MlirType t = mlirValueGetType(lse);
    if (!mlirTypeIsAMemRef(t) || attn_static_shape(t, l) != 3 ||
        l[0] != k->batch || l[1] != k->heads || l[2] != k->seq_q ||
        !mlirTypeIsAF32(mlirShapedTypeGetElementType(t))) {
      snprintf(why, wlen, "%s writes lse as f32 [batch, heads, rows]",
               f->kernel);
      return false;
    }
  }
  if (k->lse != !mlirValueIsNull(lse)) {
    snprintf(why, wlen,
             "tile.attention's lse must be set exactly when the kernel takes "
             "an argument lse");
    return false;
  }
  if (!describe_captures(kernel, body, pos, f, k, why, wlen, detail, dlen))
    return false;
  if (!positions_agree(attn_attr_get(kernel, "tile.attention"), k)) {
    snprintf(why, wlen,
             "tile.attention's rope must name q_positions and k_positions "
             "exactly when tile.rope_positions reads them");
    return false;
  }
  MlirOperation score_fns[ATTN_HOPPER_MAX_FNS], mask_fns[ATTN_HOPPER_MAX_FNS];
  int nscore, nmask;
  bool score_mods;
  if (!is_attention_program(kernel, k, lse, score_fns, &nscore, mask_fns,
                            &nmask, ATTN_HOPPER_MAX_FNS, &score_mods)) {
    snprintf(why, wlen,
             "the kernel is not the attention tile program attn-tile writes");
    return false;
  }
  if (score_mods) {
    snprintf(why, wlen,
             "%s computes tile.score_mod's scale only (softcap and ALiBi as "
             "tile.score_fn bodies, as attn-tile writes them)",
             f->kernel);
    return false;
  }
  int nfn = 0;
  for (int i = 0; i < k->nmods; ++i)
    nfn += k->mods[i] == ATTN_HOPPER_MOD_FN;
  if (nscore != nfn) {
    snprintf(why, wlen, "mods must name \"fn\" once per tile.score_fn");
    snprintf(detail, dlen, "%d of %d", nfn, nscore);
    return false;
  }
  if (nscore > ATTN_HOPPER_MAX_FNS || nmask > ATTN_HOPPER_MAX_FNS) {
    snprintf(why, wlen, "%s computes at most %d score and %d mask functions",
             f->kernel, ATTN_HOPPER_MAX_FNS, ATTN_HOPPER_MAX_FNS);
    snprintf(detail, dlen, "%d and %d", nscore, nmask);
    return false;
  }
  for (int i = 0; i < nscore; ++i)
    if (mlirBlockIsNull(k->score_fns[k->nscore_fns++] =
                            attn_attention_fn_body(score_fns[i], k, 5, why, wlen)))
      return false;
  for (int i = 0; i < nmask; ++i)
    if (mlirBlockIsNull(k->mask_fns[k->nmask_fns++] =
                            attn_attention_fn_body(mask_fns[i], k, 4, why, wlen)))
      return false;
  return true;
}

void attn_attention_arg_names(struct attn_strbuf *b,
                              const struct attn_hopper_kernel *k,
                              const char *q_as, const char *k_as) {
  const char *role[ATTN_HOPPER_ARG_CAPTURE] = {q_as, k_as, "v", "out", "lse"};
  for (int i = 0; i < attn_hopper_nargs(k); ++i) {
    int a = attn_hopper_arg_at(k, i);
    attn_strbuf_printf(b, "%s\"%s\"", i ? ", " : "",
                       a < ATTN_HOPPER_ARG_CAPTURE
                           ? role[a]
                           : k->captures[a - ATTN_HOPPER_ARG_CAPTURE].name);
  }
}
