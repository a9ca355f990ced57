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
    ATTN_OP_TILE_MASK,       ATTN_OP_TILE_SOFTMAX_UPDATE, ATTN_OP_TILE_MMA,
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
/// K when rope is set).
static bool is_attention_program(MlirOperation kernel, bool rope) {
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
    if (attn_str_eq(key, "mods") && mlirAttributeIsAArray(el.attribute)) {
      // "scale" only (or nothing): the other score modifiers have no
      // tensor-core kernel yet.
      bool scale_only = true;
      for (intptr_t m = 0; m < mlirArrayAttrGetNumElements(el.attribute); ++m) {
        MlirAttribute s = mlirArrayAttrGetElement(el.attribute, m);
        scale_only &= mlirAttributeIsAString(s) &&
                      attn_str_eq(mlirStringAttrGetValue(s), "scale");
      }
      if (scale_only)
        continue;
    }
    if (!attn_str_eq(key, "scale") && !attn_str_eq(key, "causal") &&
        !attn_str_eq(key, "rope")) {
      snprintf(why, wlen, "%s computes scale, causal and RoPE only", f->kernel);
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
  if (!is_attention_program(kernel, k->rope)) {
    snprintf(why, wlen,
             "the kernel is not the attention tile program attn-tile writes");
    return false;
  }
  return true;
}
