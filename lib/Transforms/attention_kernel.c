//===- attention_kernel.c - Reads an attention tile kernel's problem ------===//
//
// lower-tile-to-hopper and lower-tile-to-mma both lower the attention tile
// program attn-tile writes, and both begin by reading what it computes: the
// arguments (q, k, v, out), their shapes and element type, the tile
// allocations' block sizes and the tile.attention dictionary (mods, scale,
// causal, rope). attn_attention_describe does that once, checking each
// against the limits of the caller's kernel family (struct
// attn_attention_family), whose name opens the diagnostics.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels.h"
#include "lib/Transforms/transforms_internal.h"

#include "dialects/tile/tile_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// The tile ops of the attention program attn-tile writes, in order.
static const char *const program[] = {
    ATTN_OP_TILE_PROGRAM_ID, ATTN_OP_TILE_PROGRAM_ID, ATTN_OP_TILE_ALLOC,
    ATTN_OP_TILE_ALLOC,      ATTN_OP_TILE_ALLOC,      ATTN_OP_TILE_ALLOC,
    ATTN_OP_TILE_ALLOC,      ATTN_OP_TILE_ALLOC,      ATTN_OP_TILE_ALLOC,
    ATTN_OP_TILE_LOAD,       "rope?",                 ATTN_OP_TILE_FILL,
    ATTN_OP_TILE_FILL,       ATTN_OP_TILE_FILL,       ATTN_OP_TILE_LOAD,
    "rope?",                 ATTN_OP_TILE_LOAD,       ATTN_OP_TILE_MMA,
    "score_mod?",            ATTN_OP_TILE_MASK,
    ATTN_OP_TILE_SOFTMAX_UPDATE, ATTN_OP_TILE_MMA,
    ATTN_OP_TILE_NORMALIZE,  ATTN_OP_TILE_STORE,
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

/// True when kernel is the attention tile program (with tile.rope on Q and
/// K when rope is set, and a tile.score_mod when mods is).
static bool is_attention_program(MlirOperation kernel, bool rope, bool mods) {
  struct attn_op_list ops = {0};
  attn_tile_collect_ops(kernel, &ops);
  size_t i = 0;
  bool ok = !ops.failed;
  for (size_t p = 0; ok && p < sizeof program / sizeof *program; ++p) {
    if (!strcmp(program[p], "rope?")) {
      if (rope)
        ok = i < ops.n && attn_op_is(ops.ops[i++], ATTN_OP_TILE_ROPE);
      continue;
    }
    if (!strcmp(program[p], "score_mod?")) {
      if (mods)
        ok = i < ops.n && attn_op_is(ops.ops[i++], ATTN_OP_TILE_SCORE_MOD);
      continue;
    }
    ok = i < ops.n && attn_op_is(ops.ops[i++], program[p]);
  }
  ok = ok && i == ops.n;
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

/// True when the kernel's four arguments are named q, k, v and out.
static bool named_qkvo(MlirOperation kernel) {
  static const char *order[4] = {"q", "k", "v", "out"};
  MlirAttribute names = attn_attr_get(kernel, ATTN_TILE_ARG_NAMES_ATTR);
  bool ok = !mlirAttributeIsNull(names) && mlirAttributeIsAArray(names) &&
            mlirArrayAttrGetNumElements(names) == 4;
  for (int i = 0; ok && i < 4; ++i) {
    MlirAttribute n = mlirArrayAttrGetElement(names, i);
    ok = mlirAttributeIsAString(n) &&
         attn_str_eq(mlirStringAttrGetValue(n), order[i]);
  }
  return ok;
}

/// Reads the score modifiers of tile.attention (att) into k: mods, softcap,
/// alibi and window (normalised: a bound that masks no key of the problem
/// becomes -1, the right one always with causal, and a window left without
/// bounds is none); false with why (and detail) when malformed.
static bool describe_mods(MlirAttribute att,
                          const struct attn_attention_family *f,
                          struct attn_hopper_kernel *k, char *why, size_t wlen,
                          char *detail, size_t dlen) {
  MlirAttribute a = attn_dict_get(att, "softcap");
  if (!mlirAttributeIsNull(a))
    k->softcap = mlirAttributeIsAFloat(a) ? mlirFloatAttrGetValueDouble(a) : 0;
  a = attn_dict_get(att, "alibi");
  if (!mlirAttributeIsNull(a))
    k->alibi = mlirAttributeIsAFloat(a) ? mlirFloatAttrGetValueDouble(a) : 0;
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
      if (attn_str_eq(s, "softcap"))
        mod = ATTN_HOPPER_MOD_SOFTCAP;
      else if (attn_str_eq(s, "alibi"))
        mod = ATTN_HOPPER_MOD_ALIBI;
      else if (!attn_str_eq(s, "scale")) {
        snprintf(why, wlen,
                 "%s computes the modifiers scale, softcap and alibi only",
                 f->kernel);
        snprintf(detail, dlen, "'%.*s'", (int)s.length, s.data);
        return false;
      }
      for (int i = 0; i < k->nmods; ++i)
        n = k->mods[i] == mod ? -1 : n;
      if (n < 0 || k->nmods == 3)
        break;
      k->mods[k->nmods++] = mod;
    }
    if (n < 0) {
      snprintf(why, wlen, "malformed mods");
      return false;
    }
  }
  bool named[3] = {false, false, false};
  for (int i = 0; i < k->nmods; ++i)
    named[k->mods[i]] = true;
  if (!(k->softcap >= 0 && k->softcap < INFINITY) ||
      !(k->alibi >= 0 && k->alibi < INFINITY) ||
      (k->softcap > 0) != named[ATTN_HOPPER_MOD_SOFTCAP] ||
      (k->alibi > 0) != named[ATTN_HOPPER_MOD_ALIBI] ||
      (k->nmods && !named[ATTN_HOPPER_MOD_SCALE] && k->scale != 1.0)) {
    snprintf(why, wlen,
             "mods must name the scale (unless 1), and softcap and alibi "
             "exactly when they are given (positive)");
    return false;
  }
  a = attn_dict_get(att, "window");
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
    if (!attn_str_eq(key, "scale") && !attn_str_eq(key, "causal") &&
        !attn_str_eq(key, "rope") && !attn_str_eq(key, "mods") &&
        !attn_str_eq(key, "softcap") && !attn_str_eq(key, "alibi") &&
        !attn_str_eq(key, "window")) {
      snprintf(why, wlen,
               "%s computes scale, causal, softcap, alibi, window and RoPE "
               "only",
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
  if (!describe_mods(att, f, k, why, wlen, detail, dlen))
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

bool attn_attention_describe(MlirOperation kernel,
                             const struct attn_attention_family *f,
                             struct attn_hopper_kernel *k, void *user,
                             char *why, size_t wlen, char *detail,
                             size_t dlen) {
  memset(k, 0, sizeof *k);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(kernel, 0));
  if (mlirBlockGetNumArguments(body) != 4) {
    snprintf(why, wlen, "the kernel does not take exactly (q, k, v, out)");
    return false;
  }
  if (!named_qkvo(kernel)) {
    snprintf(why, wlen, "%s", f->args_why);
    return false;
  }
  int64_t q[8], kv[8], v[8];
  attn_static_shape(mlirValueGetType(mlirBlockGetArgument(body, 0)), q);
  attn_static_shape(mlirValueGetType(mlirBlockGetArgument(body, 1)), kv);
  attn_static_shape(mlirValueGetType(mlirBlockGetArgument(body, 2)), v);
  MlirType e = mlirShapedTypeGetElementType(
      mlirValueGetType(mlirBlockGetArgument(body, 0)));
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
  if (k->head_dim != 64 && k->head_dim != 128) {
    snprintf(why, wlen, "%s has head dims 64 and 128", f->kernel);
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
  if (!one_of(k->block_m, f->block_m) || !one_of(k->block_n, f->block_n)) {
    snprintf(why, wlen, "%s", f->blocks_why);
    snprintf(detail, dlen, "block-m %d, block-n %d", k->block_m, k->block_n);
    return false;
  }
  if (!describe_attention(attn_attr_get(kernel, "tile.attention"), f, k, user,
                          why, wlen, detail, dlen))
    return false;
  if (!is_attention_program(kernel, k->rope,
                            k->softcap > 0 || k->alibi > 0)) {
    snprintf(why, wlen,
             "the kernel is not the attention tile program attn-tile writes");
    return false;
  }
  return true;
}
