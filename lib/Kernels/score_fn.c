//===- score_fn.c - Score and mask functions on accumulator fragments -----===//
//
// tile.score_fn and tile.mask_fn carry a body of any form (issue 28): a
// block of arith and math ops that maps (score, b, h, q, kv) to a new score,
// or (b, h, q, kv) to whether the key is visible, reading tensors (captures)
// by memref.load at indices attn-tile has already clamped into their shapes.
// The attention kernels run it on the S fragment each thread holds after
// Q.K^T (wgmma's or mma.sync's m16n8 layout: register i of a thread is row
// row0 + 8 ((i / 2) % 2), key kbase + 8 (i / 4) + i % 2, kbase = j block_n
// + 2 (lane % 4)), with q and kv clamped to seq_q - 1 and seq_k - 1 (padding
// rows and keys compute a score that is discarded; rows before row 0, a
// causal kernel's shifted first block, are clamped to 0 the same way).
//
// The body is cloned op by op with a value mapping: block arguments to the
// element's values (index casts of the kernel's i32 values), a capture's
// memref.load to an llvm.load from its pointer parameter (the kernels take
// the caller's tensors first, in the tile kernel's order:
// attn_hopper_kernel::args) at the row-major offset, gpu.yield to the
// result, math.tanh of f32 to tanh.approx.f32 (tanh_approx), every other op
// cloned with its operands mapped (the GPU pipeline lowers arith and math on
// it afterwards). A memo of the ops made, keyed by the body op and its
// mapped operands, makes each value once: at the tile's start
// (attn_k_fn_tile, outside the key loop) what depends only on b, h and the
// thread's two rows (a document mask's q_segments[b, q], a bias's per-head
// factor); per key block what depends on the key and not the row, once per
// column (both rows of a register pair's column share it); the rest per
// element.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdlib.h>
#include <string.h>

/// Most operands of a body op (a memref.load of a rank-4 capture has 5).
#define MAX_OPERANDS 6

/// One op made for a body op: the body op, its mapped operands and its
/// (one or no) result.
struct entry {
  MlirOperation op;
  intptr_t nopd;
  MlirValue opd[MAX_OPERANDS];
  MlirValue res;
};

/// The ops made for one scope (a tile's start, a key block): e[0 .. n),
/// room for cap.
struct attn_k_fn_memo {
  size_t n, cap;
  struct entry *e;
};

bool attn_k_has_fns(const struct attn_hopper_kernel *k) {
  return k->nscore_fns > 0 || k->nmask_fns > 0;
}

void attn_k_fn_init(struct attn_k_fn *fn, const struct attn_hopper_kernel *k,
                    const MlirValue *caps) {
  memset(fn, 0, sizeof *fn);
  fn->k = k;
  for (int i = 0; i < ATTN_K_FN_PTRS; ++i)
    fn->caps[i] = caps[i];
}

/// Frees m (NULL: nothing).
static void memo_free(struct attn_k_fn_memo *m) {
  if (m)
    free(m->e);
  free(m);
}

void attn_k_fn_free(struct attn_k_fn *fn) {
  memo_free(fn->tile);
  memo_free(fn->block);
  fn->tile = fn->block = NULL;
}

/// The memo's entry for op on operands opd, or NULL.
static const struct entry *memo_find(const struct attn_k_fn_memo *m,
                                     MlirOperation op, intptr_t nopd,
                                     const MlirValue *opd) {
  for (size_t i = 0; m && i < m->n; ++i) {
    const struct entry *e = &m->e[i];
    if (!mlirOperationEqual(e->op, op) || e->nopd != nopd)
      continue;
    bool same = true;
    for (intptr_t o = 0; same && o < nopd; ++o)
      same = mlirValueEqual(e->opd[o], opd[o]);
    if (same)
      return e;
  }
  return NULL;
}

/// Records that op on opd made res; false (b failed) when out of memory.
static bool memo_add(struct attn_builder *b, struct attn_k_fn_memo **mp,
                     MlirOperation op, intptr_t nopd, const MlirValue *opd,
                     MlirValue res) {
  struct attn_k_fn_memo *m = *mp;
  if (!m) {
    m = *mp = calloc(1, sizeof *m);
    if (!m) {
      attn_builder_fail(b, "out of memory building a score function");
      return false;
    }
  }
  if (m->n == m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 64;
    struct entry *e = realloc(m->e, cap * sizeof *e);
    if (!e) {
      attn_builder_fail(b, "out of memory building a score function");
      return false;
    }
    m->e = e;
    m->cap = cap;
  }
  struct entry *e = &m->e[m->n++];
  e->op = op;
  e->nopd = nopd;
  memcpy(e->opd, opd, sizeof(MlirValue) * (size_t)nopd);
  e->res = res;
  return true;
}

/// memref.load op of a capture: the element at the row-major offset of its
/// mapped indices idx (index) from the capture's pointer ptr.
static MlirValue load_capture(struct attn_builder *b, MlirOperation op,
                              MlirValue ptr, intptr_t nidx,
                              const MlirValue *idx) {
  MlirType t = mlirValueGetType(mlirOperationGetOperand(op, 0));
  MlirValue off = nidx ? idx[0] : attn_b_index(b, 0);
  for (intptr_t d = 1; d < nidx; ++d)
    off = attn_b_addi(
        b, attn_b_muli(b, off, attn_b_index(b, mlirShapedTypeGetDimSize(t, d))),
        idx[d]);
  MlirType elem = mlirShapedTypeGetElementType(t);
  MlirValue p = attn_k_gep_elem(
      b, ptr, attn_b_cast(b, "arith.index_cast", off, b->t.i64), elem);
  return attn_k_load(b, p, elem);
}

/// Clones body op op at the insertion point with operands opd: its result.
static MlirValue clone_op(struct attn_builder *b, MlirOperation op,
                          const MlirValue *opd) {
  for (intptr_t i = 0, n = mlirOperationGetNumOperands(op); i < n; ++i)
    if (mlirValueIsNull(opd[i])) {
      attn_builder_fail(b, "an operand of a score function's op is missing "
                           "(a bug in attn)");
      return (MlirValue){NULL};
    }
  if (mlirBlockIsNull(b->block)) {
    attn_builder_fail(b, "the builder has no insertion point (a bug in attn)");
    return (MlirValue){NULL};
  }
  MlirOperation c = mlirOperationClone(op);
  for (intptr_t i = 0, n = mlirOperationGetNumOperands(c); i < n; ++i)
    mlirOperationSetOperand(c, i, opd[i]);
  mlirOperationSetLocation(c, b->loc);
  if (mlirOperationIsNull(b->anchor))
    mlirBlockAppendOwnedOperation(b->block, c);
  else
    mlirBlockInsertOwnedOperationBefore(b->block, b->anchor, c);
  return attn_b_result(c, 0);
}

/// tanh.approx.f32 of x (f32): llvm.intr.tanh with the afn flag, which
/// NVPTX selects as that instruction (sm_75 and newer; LLVM 22 has no
/// llvm.nvvm.tanh.approx intrinsic any more). One MUFU op, as
/// FlashAttention-3's and flex_attention's softcap, where convert-gpu-to-nvvm
/// would call libdevice's __nv_tanhf (about twenty instructions); relative
/// error 2^-11 (PTX ISA), which moves a logit of magnitude |x| by |x| 2^-11.
static MlirValue tanh_approx(struct attn_builder *b, MlirValue x) {
  MlirAttribute afn = mlirAttributeParseGet(
      b->ctx, mlirStringRefCreateFromCString("#llvm.fastmath<afn>"));
  MlirNamedAttribute fm = attn_b_named(b, "fastmathFlags", afn);
  return attn_b_op1(b, "llvm.intr.tanh", b->t.f32, 1, &x, 1, &fm);
}

/// Whether op is named name.
static bool is_op(MlirOperation op, const char *name) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  return n.length == strlen(name) && !strncmp(n.data, name, n.length);
}

/// Whether body op op is math.tanh of f32 (the kernels' tanh_approx).
static bool is_tanh_f32(MlirOperation op) {
  return is_op(op, "math.tanh") &&
         mlirTypeIsAF32(mlirValueGetType(mlirOperationGetResult(op, 0)));
}

/// What one evaluation of a body maps: its arguments' values, and the
/// values made for its ops (in the block's order).
struct eval {
  MlirBlock body;
  MlirValue args[5];
  MlirValue vals[256];
  MlirOperation ops[256];
  int nops;
};

/// The mapped value of v (an operand of a body op), or null when it is not
/// mapped (yet). A capture maps to its pointer parameter.
static MlirValue lookup(const struct attn_k_fn *fn, const struct eval *e,
                        MlirValue v) {
  if (mlirValueIsABlockArgument(v)) {
    if (mlirBlockEqual(mlirBlockArgumentGetOwner(v), e->body))
      return e->args[mlirBlockArgumentGetArgNumber(v)];
  } else if (mlirValueIsAOpResult(v)) {
    MlirOperation def = mlirOpResultGetOwner(v);
    for (int i = e->nops - 1; i >= 0; --i)
      if (mlirOperationEqual(e->ops[i], def))
        return e->vals[i];
  }
  for (int i = 0; i < fn->k->ncaptures; ++i)
    if (mlirValueEqual(fn->k->captures[i].value, v))
      return fn->caps[i];
  for (int r = 0; r < 3; ++r) // q, k or v read by the body
    if (!mlirValueIsNull(fn->k->inputs[r]) &&
        mlirValueEqual(fn->k->inputs[r], v))
      return fn->caps[ATTN_HOPPER_MAX_CAPTURES + r];
  return (MlirValue){NULL};
}

/// Evaluates body with arguments args (a null argument: unknown): the value
/// it yields, null when it depends on an unknown one. Each op is taken from
/// fn's tile memo, else the block memo, else made and recorded in the memo
/// *into (tile or block).
static MlirValue eval_body(struct attn_builder *b, struct attn_k_fn *fn,
                           MlirBlock body, const MlirValue *args, int nargs,
                           struct attn_k_fn_memo **into) {
  struct eval e;
  e.body = body;
  e.nops = 0;
  for (int i = 0; i < 5; ++i)
    e.args[i] = i < nargs ? args[i] : (MlirValue){NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    intptr_t nopd = mlirOperationGetNumOperands(op);
    MlirValue opd[MAX_OPERANDS];
    bool known = nopd <= MAX_OPERANDS;
    for (intptr_t i = 0; known && i < nopd; ++i) {
      opd[i] = lookup(fn, &e, mlirOperationGetOperand(op, i));
      known = !mlirValueIsNull(opd[i]);
    }
    MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(op));
    if (!strncmp(name.data, "gpu.yield", name.length) && name.length == 9)
      return known && nopd == 1 ? opd[0] : (MlirValue){NULL};
    MlirValue res = {NULL};
    if (known && e.nops < 256) {
      const struct entry *hit = memo_find(fn->tile, op, nopd, opd);
      if (!hit)
        hit = memo_find(fn->block, op, nopd, opd);
      if (hit) {
        res = hit->res;
      } else {
        bool load = name.length == 11 && !strncmp(name.data, "memref.load", 11);
        res = load              ? load_capture(b, op, opd[0], nopd - 1, opd + 1)
              : is_tanh_f32(op) ? tanh_approx(b, opd[0])
                                : clone_op(b, op, opd);
        if (mlirValueIsNull(res) || !memo_add(b, into, op, nopd, opd, res))
          return (MlirValue){NULL};
      }
    }
    if (e.nops == 256) {
      attn_builder_fail(b, "a score function has more than 256 ops");
      return (MlirValue){NULL};
    }
    e.ops[e.nops] = op;
    e.vals[e.nops++] = res;
  }
  return (MlirValue){NULL};
}

/// x (i32) clamped into [0, n - 1] (signed: a shifted causal block's rows
/// may lie before row 0), as an index.
static MlirValue clamp_index(struct attn_builder *b, MlirValue x, int64_t n,
                             bool signed_lo) {
  if (signed_lo)
    x = attn_b_binary(b, "arith.maxsi", x, attn_b_i32(b, 0));
  x = attn_b_binary(b, signed_lo ? "arith.minsi" : "arith.minui", x,
                    attn_b_i32(b, n - 1));
  return attn_k_to_index(b, x);
}

void attn_k_fn_tile(struct attn_builder *b, struct attn_k_fn *fn, MlirValue bz,
                    MlirValue h, MlirValue row0) {
  const struct attn_hopper_kernel *k = fn->k;
  memo_free(fn->tile);
  memo_free(fn->block);
  fn->tile = fn->block = NULL;
  fn->block_j = (MlirValue){NULL};
  fn->b = attn_k_to_index(b, bz);
  fn->h = attn_k_to_index(b, h);
  for (int r = 0; r < 2; ++r)
    fn->q[r] = clamp_index(b, r ? attn_k_addc(b, row0, 8) : row0, k->seq_q,
                           true);
  // Everything of the bodies that the score and the key do not reach.
  for (int r = 0; r < 2; ++r) {
    MlirValue sa[5] = {{NULL}, fn->b, fn->h, fn->q[r], {NULL}};
    for (int i = 0; i < k->nscore_fns; ++i)
      eval_body(b, fn, k->score_fns[i], sa, 5, &fn->tile);
    for (int i = 0; i < k->nmask_fns; ++i)
      eval_body(b, fn, k->mask_fns[i], sa + 1, 4, &fn->tile);
  }
}

/// Sets fn's keys for key block j (i32) in the current block, lane lr in the
/// quad: made once per block, for the score and the mask functions alike.
static void block_keys(struct attn_builder *b, struct attn_k_fn *fn,
                       MlirValue lr, MlirValue j) {
  const struct attn_hopper_kernel *k = fn->k;
  if (!mlirValueIsNull(fn->block_j) && mlirValueEqual(fn->block_j, j) &&
      mlirBlockEqual(fn->block_where, b->block))
    return;
  memo_free(fn->block);
  fn->block = NULL;
  fn->block_j = j;
  fn->block_where = b->block;
  MlirValue kbase =
      attn_b_addi(b, attn_k_mulc(b, j, k->block_n), attn_k_mulc(b, lr, 2));
  for (int c = 0; c < k->block_n / 4; ++c) // column c: registers 4(c/2) + c%2
    fn->kv[c] = clamp_index(
        b, attn_k_addc(b, kbase, 8 * (c >> 1) + (c & 1)), k->seq_k, false);
}

/// The column (fn->kv index) of register i.
static int column_of(int i) { return 2 * (i >> 2) + (i & 1); }

void attn_k_fn_scores(struct attn_builder *b, struct attn_k_fn *fn, int fi,
                      MlirValue lr, MlirValue j, double f, MlirValue *sv) {
  const struct attn_hopper_kernel *k = fn->k;
  block_keys(b, fn, lr, j);
  MlirValue fc = f != 1.0 ? attn_b_f32(b, (float)f) : (MlirValue){NULL};
  for (int i = 0; i < k->block_n / 2; ++i) {
    MlirValue x = mlirValueIsNull(fc) ? sv[i] : attn_b_mulf(b, sv[i], fc);
    MlirValue a[5] = {x, fn->b, fn->h, fn->q[(i >> 1) & 1],
                      fn->kv[column_of(i)]};
    sv[i] = eval_body(b, fn, k->score_fns[fi], a, 5, &fn->block);
    if (mlirValueIsNull(sv[i])) {
      attn_builder_fail(b, "a score function yields no value (a bug in attn)");
      return;
    }
  }
}

void attn_k_fn_masks(struct attn_builder *b, struct attn_k_fn *fn,
                     MlirValue lr, MlirValue j, MlirValue ninf,
                     MlirValue *sv) {
  const struct attn_hopper_kernel *k = fn->k;
  block_keys(b, fn, lr, j);
  for (int i = 0; i < k->block_n / 2; ++i)
    for (int m = 0; m < k->nmask_fns; ++m) {
      MlirValue a[4] = {fn->b, fn->h, fn->q[(i >> 1) & 1],
                        fn->kv[column_of(i)]};
      MlirValue vis = eval_body(b, fn, k->mask_fns[m], a, 4, &fn->block);
      if (mlirValueIsNull(vis)) {
        attn_builder_fail(b, "a mask function yields no value (a bug in attn)");
        return;
      }
      sv[i] = attn_b_select(b, vis, sv[i], ninf);
    }
}

struct attn_k_param attn_k_fn_capture_param(const struct attn_hopper_kernel *k,
                                            int i) {
  const struct attn_hopper_capture *c = &k->captures[i];
  struct attn_k_param p = {.name = c->name, .dtype = c->dtype, .rank = c->rank};
  for (int d = 0; d < c->rank && d < 4; ++d)
    p.shape[d] = c->shape[d];
  return p;
}

MlirAttribute attn_k_fn_capture_attrs(struct attn_builder *b) {
  MlirNamedAttribute a[] = {
      attn_b_named(b, "llvm.noalias", attn_b_attr_unit(b)),
      attn_b_named(b, "llvm.readonly", attn_b_attr_unit(b)),
  };
  return mlirDictionaryAttrGet(b->ctx, 2, a);
}

int attn_hopper_nargs(const struct attn_hopper_kernel *k) {
  return 4 + k->ncaptures;
}

int attn_hopper_arg_at(const struct attn_hopper_kernel *k, int i) {
  return k->nargs ? k->args[i] : i;
}

int attn_hopper_arg_index(const struct attn_hopper_kernel *k, int arg) {
  for (int i = 0; i < k->nargs; ++i)
    if (k->args[i] == arg)
      return i;
  return arg;
}

int attn_k_args_params(const struct attn_hopper_kernel *k,
                       const struct attn_k_param base[4],
                       struct attn_k_param *out) {
  int n = attn_hopper_nargs(k);
  for (int i = 0; i < n; ++i) {
    int a = attn_hopper_arg_at(k, i);
    out[i] = a < ATTN_HOPPER_ARG_CAPTURE
                 ? base[a]
                 : attn_k_fn_capture_param(k, a - ATTN_HOPPER_ARG_CAPTURE);
  }
  return n;
}

MlirValue attn_k_arg(const struct attn_hopper_kernel *k,
                     const struct attn_b_func *f, int arg) {
  return attn_b_func_arg(f, attn_hopper_arg_index(k, arg));
}

void attn_k_capture_args(const struct attn_hopper_kernel *k,
                         const struct attn_b_func *f, MlirValue *caps) {
  for (int i = 0; i < ATTN_K_FN_PTRS; ++i)
    caps[i] = (MlirValue){NULL};
  for (int i = 0; i < k->ncaptures; ++i)
    caps[i] = attn_k_arg(k, f, ATTN_HOPPER_ARG_CAPTURE + i);
  for (int r = 0; r < 3; ++r)
    caps[ATTN_HOPPER_MAX_CAPTURES + r] = attn_k_arg(k, f, r);
}
