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

#include <math.h>
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

/// Whether body ops x and y compute the same function of their operands:
/// the same op, or two ops of one name, result types and attributes and
/// no regions (every op a body may hold is pure: arith, math, loads of
/// read-only captures), so that two bodies' ops on the same values (the
/// score function's and its derivative's load of the gate) are made once.
static bool same_op(MlirOperation x, MlirOperation y) {
  if (mlirOperationEqual(x, y))
    return true;
  if (!mlirIdentifierEqual(mlirOperationGetName(x), mlirOperationGetName(y)) ||
      mlirOperationGetNumRegions(x) || mlirOperationGetNumRegions(y) ||
      mlirOperationGetNumResults(x) != 1 || mlirOperationGetNumResults(y) != 1 ||
      !mlirTypeEqual(mlirValueGetType(mlirOperationGetResult(x, 0)),
                     mlirValueGetType(mlirOperationGetResult(y, 0))))
    return false;
  intptr_t n = mlirOperationGetNumAttributes(x);
  if (n != mlirOperationGetNumAttributes(y))
    return false;
  for (intptr_t i = 0; i < n; ++i) {
    MlirNamedAttribute a = mlirOperationGetAttribute(x, i);
    MlirAttribute other =
        mlirOperationGetAttributeByName(y, mlirIdentifierStr(a.name));
    if (mlirAttributeIsNull(other) || !mlirAttributeEqual(a.attribute, other))
      return false;
  }
  return true;
}

/// The memo's entry for op on operands opd, or NULL.
static const struct entry *memo_find(const struct attn_k_fn_memo *m,
                                     MlirOperation op, intptr_t nopd,
                                     const MlirValue *opd) {
  for (size_t i = 0; m && i < m->n; ++i) {
    const struct entry *e = &m->e[i];
    if (e->nopd != nopd || !same_op(e->op, op))
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

//===-- What the kernels make of a score function besides its ops --------===//
//
// The scores carry a compile-time factor f out of the tensor cores
// (softmax.c): S = f v, v the registers, and the softmax folds f into its
// exp2 constant. A score function sees the score f v; three forms of body
// keep f out of the loop, as the softmax folds the scale (plan_of):
// - in: the score's one use multiplies or divides it by a constant C. That
//   op becomes v (f C), or v (f / C): one multiply (softcap's s / cap).
// - out: the body yields C y, C > 0 a constant. The kernel yields y and the
//   scores carry C on (softcap's cap tanh(...)).
// - add: the body yields s + a u or s - a u, where u reads neither the score
//   nor the key (it is made once per tile) and a is computed from the
//   indices alone (no score, no capture: a bias table's t u keeps its
//   multiply by f, so that such programs compile as before).
//   The kernel yields fma(a, +-u / f, v), +-u / f made per tile, and the
//   scores keep f (ALiBi's s - slope |q - kv|).
// And sitofp of q - kv (or kv - q), the element's distance, costs one add:
// q - kv = (q - kbase) - o for the fragment's key base kbase and the
// register's column offset o, so (q - kbase) is converted once per row and
// key block (distance). Exact: |q - kv| < 2^24. Neither the row nor the key
// is clamped there: a padding key's score (past seq_k) is masked, a padding
// row's (or one before row 0) never stored. (With the clamped rows LLVM,
// knowing their range, would turn each element's float add back into an
// integer add and a conversion.)

/// What a value of a body depends on (plan_of): its arguments (bit i for
/// argument i: the score, b, h, q, kv) and captures read.
enum { DEP_S = 1, DEP_KV = 16, DEP_LOAD = 32 };

/// A score function's forms (plan_of): null ops where a form does not apply.
struct fn_plan {
  MlirOperation in_op; ///< the score's one use: s * in_c, or s / in_c
  double in_c;
  bool in_div;
  MlirOperation out_op; ///< yields out_c * out_y, out_c > 0 and finite
  MlirValue out_y;
  double out_c;
  MlirOperation add_op, add_mul; ///< yields s + add_sign * (add_a * add_u)
  MlirValue add_a, add_u;
  double add_sign;
  bool loads;      ///< reads a capture
  int element_ops; ///< ops per element but casts and what the forms absorb
};

/// The operation defining v when it is named name, else a null one.
static MlirOperation def_named(MlirValue v, const char *name) {
  if (!mlirValueIsAOpResult(v) || !is_op(mlirOpResultGetOwner(v), name))
    return (MlirOperation){NULL};
  return mlirOpResultGetOwner(v);
}

/// Whether v (a body's value) has exactly one use.
static bool one_use(MlirValue v) {
  MlirOpOperand u = mlirValueGetFirstUse(v);
  return !mlirOpOperandIsNull(u) &&
         mlirOpOperandIsNull(mlirOpOperandGetNextUse(u));
}

/// Whether v is an arith.constant of f32, finite; its value in *c.
static bool const_f32(MlirValue v, double *c) {
  MlirOperation def = def_named(v, "arith.constant");
  if (mlirOperationIsNull(def) || !mlirTypeIsAF32(mlirValueGetType(v)))
    return false;
  MlirAttribute a = mlirOperationGetAttributeByName(
      def, mlirStringRefCreateFromCString("value"));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAFloat(a))
    return false;
  *c = mlirFloatAttrGetValueDouble(a);
  return isfinite(*c);
}

/// Whether op only converts an integer to another width or to index (the
/// ops distance_sign looks through, and element_ops does not count).
static bool is_int_cast(MlirOperation op) {
  return is_op(op, "arith.index_cast") || is_op(op, "arith.index_castui") ||
         is_op(op, "arith.extsi") || is_op(op, "arith.extui") ||
         is_op(op, "arith.trunci");
}

/// What v depends on, given the dependences dep[0 .. n) of the body's ops
/// ops[0 .. n) before its user.
static unsigned deps_of(MlirBlock body, MlirValue v, const MlirOperation *ops,
                        const unsigned *dep, int n) {
  if (mlirValueIsABlockArgument(v))
    return mlirBlockEqual(mlirBlockArgumentGetOwner(v), body)
               ? 1u << mlirBlockArgumentGetArgNumber(v)
               : 0;
  MlirOperation def = mlirOpResultGetOwner(v);
  for (int i = n - 1; i >= 0; --i)
    if (mlirOperationEqual(ops[i], def))
      return dep[i];
  return 0; // a capture
}

/// The forms of the score function body (above) into p.
static void plan_of(MlirBlock body, struct fn_plan *p) {
  memset(p, 0, sizeof *p);
  if (mlirBlockGetNumArguments(body) != 5)
    return;
  MlirOperation ops[256], yield = {NULL};
  unsigned dep[256];
  int n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op) && n < 256;
       op = mlirOperationGetNextInBlock(op)) {
    if (is_op(op, "gpu.yield")) {
      yield = op;
      break;
    }
    unsigned d = is_op(op, "memref.load") ? DEP_LOAD : 0;
    for (intptr_t i = 0, m = mlirOperationGetNumOperands(op); i < m; ++i)
      d |= deps_of(body, mlirOperationGetOperand(op, i), ops, dep, n);
    p->loads |= (d & DEP_LOAD) != 0;
    ops[n] = op;
    dep[n++] = d;
  }
  if (mlirOperationIsNull(yield) || mlirOperationGetNumOperands(yield) != 1)
    return;
  MlirValue s = mlirBlockGetArgument(body, 0);
  MlirValue y = mlirOperationGetOperand(yield, 0);
  double c;
  // in: the score's one use, s * C, C * s or s / C.
  MlirOpOperand u = mlirValueGetFirstUse(s);
  if (one_use(s)) {
    MlirOperation op = mlirOpOperandGetOwner(u);
    unsigned at = mlirOpOperandGetOperandNumber(u);
    bool div = is_op(op, "arith.divf") && at == 0;
    if ((div || is_op(op, "arith.mulf")) &&
        const_f32(mlirOperationGetOperand(op, 1 - at), &c) && c != 0) {
      p->in_op = op;
      p->in_c = c;
      p->in_div = div;
    }
  }
  // out: yields y * C or C * y, C > 0.
  MlirOperation top = def_named(y, "arith.mulf");
  for (int i = 0; !mlirOperationIsNull(top) && one_use(y) && i < 2; ++i)
    if (const_f32(mlirOperationGetOperand(top, i), &c) && c > 0) {
      p->out_op = top;
      p->out_y = mlirOperationGetOperand(top, 1 - i);
      p->out_c = c;
      if (mlirOperationEqual(top, p->in_op)) // s * C: out alone
        p->in_op = (MlirOperation){NULL};
      break;
    }
  // add: yields s + t, t + s or s - t, t = a * u with u made per tile.
  MlirOperation aop = def_named(y, "arith.addf");
  bool sub = mlirOperationIsNull(aop);
  if (sub)
    aop = def_named(y, "arith.subf");
  for (int i = 0; !mlirOperationIsNull(aop) && one_use(y) && i < 2; ++i) {
    if (!mlirValueEqual(mlirOperationGetOperand(aop, i), s) || (sub && i))
      continue;
    MlirValue t = mlirOperationGetOperand(aop, 1 - i);
    MlirOperation mul = def_named(t, "arith.mulf");
    for (int m = 0; !mlirOperationIsNull(mul) && one_use(t) && m < 2; ++m) {
      MlirValue a = mlirOperationGetOperand(mul, m),
                w = mlirOperationGetOperand(mul, 1 - m);
      if (deps_of(body, w, ops, dep, n) & (DEP_S | DEP_KV) ||
          deps_of(body, a, ops, dep, n) & (DEP_S | DEP_LOAD))
        continue;
      p->add_op = aop;
      p->add_mul = mul;
      p->add_a = a;
      p->add_u = w;
      p->add_sign = sub ? -1.0 : 1.0;
      break;
    }
    break;
  }
  for (int i = 0; i < n; ++i)
    p->element_ops += (dep[i] & (DEP_S | DEP_KV)) && !is_int_cast(ops[i]) &&
                      !mlirOperationEqual(ops[i], p->out_op) &&
                      !mlirOperationEqual(ops[i], p->add_mul);
}

/// With the forms add and in, the body sees the score arguments' raw value v
/// (the register); otherwise f v.
static bool sees_raw(const struct fn_plan *p) {
  return !mlirOperationIsNull(p->in_op) || !mlirOperationIsNull(p->add_op);
}

double attn_k_fn_factor(const struct attn_hopper_kernel *k, int fi, double f) {
  struct fn_plan p;
  plan_of(k->score_fns[fi], &p);
  if (!mlirOperationIsNull(p.add_op))
    return f;
  return mlirOperationIsNull(p.out_op) ? 1.0 : p.out_c;
}

double attn_k_fn_factor_after(const struct attn_hopper_kernel *k, int i,
                              int fi, double f) {
  return k->mods[i] == ATTN_HOPPER_MOD_SCALE ? f * k->scale
                                             : attn_k_fn_factor(k, fi, f);
}

/// The factor the scores carry before modifier n of k's order.
static double factor_upto(const struct attn_hopper_kernel *k, int n) {
  double f = 1.0;
  for (int i = 0, fi = 0; i < n && i < k->nmods; ++i) {
    f = attn_k_fn_factor_after(k, i, fi, f);
    fi += k->mods[i] == ATTN_HOPPER_MOD_FN;
  }
  return f;
}

double attn_k_score_factor(const struct attn_hopper_kernel *k) {
  return k->nmods == 0 ? k->scale : factor_upto(k, k->nmods);
}

double attn_k_fn_factor_into(const struct attn_hopper_kernel *k, int fi) {
  int i = 0;
  for (int n = 0; i < k->nmods; ++i)
    if (k->mods[i] == ATTN_HOPPER_MOD_FN && n++ == fi)
      break;
  return factor_upto(k, i);
}

bool attn_hopper_fns_light(const struct attn_hopper_kernel *k) {
  if (k->nmask_fns)
    return false;
  for (int i = 0; i < k->nscore_fns; ++i) {
    struct fn_plan p;
    plan_of(k->score_fns[i], &p);
    bool formed = !mlirOperationIsNull(p.in_op) ||
                  !mlirOperationIsNull(p.out_op) ||
                  !mlirOperationIsNull(p.add_op);
    if (p.loads || !formed || p.element_ops > ATTN_HOPPER_LIGHT_FN_OPS)
      return false;
  }
  return true;
}

/// Whether body op op is sitofp (to f32) of q - kv (1) or kv - q (-1)
/// through integer casts of index or of 32 bits and more (which keep values
/// below 2^24 and their differences): the sign, or 0.
static int distance_sign(MlirOperation op, MlirBlock body) {
  if (!is_op(op, "arith.sitofp") ||
      !mlirTypeIsAF32(mlirValueGetType(mlirOperationGetResult(op, 0))))
    return 0;
  MlirValue x = mlirOperationGetOperand(op, 0);
  for (;;) { // casts of the difference keep its sign
    MlirOperation d = mlirValueIsAOpResult(x) ? mlirOpResultGetOwner(x)
                                              : (MlirOperation){NULL};
    if (mlirOperationIsNull(d) ||
        !(is_op(d, "arith.index_cast") || is_op(d, "arith.extsi")))
      break;
    x = mlirOperationGetOperand(d, 0);
  }
  MlirOperation sub = def_named(x, "arith.subi");
  MlirType t = mlirValueGetType(x);
  if (mlirOperationIsNull(sub) ||
      !(mlirTypeIsAIndex(t) ||
        (mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) >= 32)))
    return 0;
  int arg[2];
  for (int i = 0; i < 2; ++i) {
    MlirValue v = mlirOperationGetOperand(sub, i);
    while (mlirValueIsAOpResult(v) && is_int_cast(mlirOpResultGetOwner(v)) &&
           !is_op(mlirOpResultGetOwner(v), "arith.trunci") &&
           (mlirTypeIsAIndex(mlirValueGetType(v)) ||
            mlirIntegerTypeGetWidth(mlirValueGetType(v)) >= 32))
      v = mlirOperationGetOperand(mlirOpResultGetOwner(v), 0);
    arg[i] = mlirValueIsABlockArgument(v) &&
                     mlirBlockEqual(mlirBlockArgumentGetOwner(v), body)
                 ? (int)mlirBlockArgumentGetArgNumber(v)
                 : -1;
  }
  return arg[0] == 3 && arg[1] == 4 ? 1 : arg[0] == 4 && arg[1] == 3 ? -1 : 0;
}

/// What one evaluation of a body computes for: the element's row r (0, 1;
/// fn->q) and column c (fn->kv; -1: the tile's scope, no key), and for a
/// score function on an element (plan non-null) the values of its forms.
struct elem {
  int r, c;
  const struct fn_plan *plan;
  MlirValue in;    ///< in: plan->in_op's value, v times the folded factor
  MlirValue score; ///< the register v
  MlirValue coef;  ///< add: +-u / f of row r (fn->coef)
};

/// The element el's distance q - kv (sign 1) or kv - q (-1), f32: (row -
/// kbase) converted once per row and key block, then the column's offset.
static MlirValue distance(struct attn_builder *b, struct attn_k_fn *fn,
                          const struct elem *el, int sign) {
  MlirValue *d0 = &fn->d0[el->r][sign < 0];
  if (mlirValueIsNull(*d0))
    *d0 = attn_b_cast(b, "arith.sitofp",
                      sign > 0 ? attn_b_subi(b, fn->row[el->r], fn->kbase)
                               : attn_b_subi(b, fn->kbase, fn->row[el->r]),
                      b->t.f32);
  int off = 8 * (el->c >> 1) + (el->c & 1);
  if (!off)
    return *d0;
  MlirValue o = attn_b_f32(b, (float)off);
  return sign > 0 ? attn_b_subf(b, *d0, o) : attn_b_addf(b, *d0, o);
}

/// What one evaluation of a body maps: its arguments' values, and the
/// values made for its ops (in the block's order).
struct eval {
  MlirBlock body;
  MlirValue args[5];
  MlirValue vals[256];
  MlirOperation ops[256];
  int nops;
  /// With ys: the values a yield of nys operands gives (null where
  /// unknown), its first returned.
  MlirValue *ys;
  int nys;
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
    if (mlirValueEqual(fn->k->captures[i].value, v) ||
        (!mlirValueIsNull(fn->k->captures[i].alias) &&
         mlirValueEqual(fn->k->captures[i].alias, v)))
      return fn->caps[i];
  for (int r = 0; r < 3; ++r) // q, k or v read by the body
    if (!mlirValueIsNull(fn->k->inputs[r]) &&
        mlirValueEqual(fn->k->inputs[r], v))
      return fn->caps[ATTN_HOPPER_MAX_CAPTURES + r];
  return (MlirValue){NULL};
}

/// Evaluates body with arguments args (a null argument: unknown) for el
/// into e: the value it yields, null when it depends on an unknown one
/// (with e->ys, every value of its yield into them).
/// Each op is taken from fn's tile memo, else the block memo, else made and
/// recorded in the memo *into (tile or block); with el->plan, the ops its
/// forms absorb are not made (their values come at the yield) and a
/// distance is made by distance.
static MlirValue eval_run(struct attn_builder *b, struct attn_k_fn *fn,
                          MlirBlock body, const MlirValue *args, int nargs,
                          struct attn_k_fn_memo **into,
                          const struct elem *el, struct eval *e) {
  const struct fn_plan *p = el->plan;
  e->body = body;
  e->nops = 0;
  for (int i = 0; i < 5; ++i)
    e->args[i] = i < nargs ? args[i] : (MlirValue){NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    intptr_t nopd = mlirOperationGetNumOperands(op);
    MlirValue opd[MAX_OPERANDS];
    bool known = nopd <= MAX_OPERANDS;
    for (intptr_t i = 0; known && i < nopd; ++i) {
      opd[i] = lookup(fn, e, mlirOperationGetOperand(op, i));
      known = !mlirValueIsNull(opd[i]);
    }
    if (is_op(op, "gpu.yield") && e->ys) {
      for (int i = 0; i < e->nys; ++i)
        e->ys[i] = i < nopd ? lookup(fn, e, mlirOperationGetOperand(op, i))
                            : (MlirValue){NULL};
      return nopd == e->nys ? e->ys[0] : (MlirValue){NULL};
    }
    if (is_op(op, "gpu.yield")) {
      MlirValue y =
          nopd == 1 ? mlirOperationGetOperand(op, 0) : (MlirValue){NULL};
      MlirOperation ydef = !mlirValueIsNull(y) && mlirValueIsAOpResult(y)
                               ? mlirOpResultGetOwner(y)
                               : (MlirOperation){NULL};
      if (p && !mlirOperationIsNull(p->add_op) &&
          mlirOperationEqual(ydef, p->add_op)) {
        MlirValue a = lookup(fn, e, p->add_a);
        return mlirValueIsNull(a) || mlirValueIsNull(el->coef)
                   ? (MlirValue){NULL}
                   : attn_b_fma(b, a, el->coef, el->score);
      }
      if (p && !mlirOperationIsNull(p->out_op) &&
          mlirOperationEqual(ydef, p->out_op))
        return lookup(fn, e, p->out_y);
      return known && nopd == 1 ? opd[0] : (MlirValue){NULL};
    }
    MlirValue res = {NULL};
    bool absorbed = p && (mlirOperationEqual(op, p->out_op) ||
                          mlirOperationEqual(op, p->add_op) ||
                          mlirOperationEqual(op, p->add_mul));
    int sign = p && el->c >= 0 ? distance_sign(op, body) : 0;
    if (p && mlirOperationEqual(op, p->in_op)) {
      res = el->in;
    } else if (absorbed) {
      // made at the yield
    } else if (known && sign && e->nops < 256) {
      res = distance(b, fn, el, sign);
    } else if (known && e->nops < 256) {
      const struct entry *hit = memo_find(fn->tile, op, nopd, opd);
      if (!hit)
        hit = memo_find(fn->block, op, nopd, opd);
      if (hit) {
        res = hit->res;
      } else {
        bool load = is_op(op, "memref.load");
        double c;
        res = load              ? load_capture(b, op, opd[0], nopd - 1, opd + 1)
              : is_tanh_f32(op) ? tanh_approx(b, opd[0])
              // The kernels' LLVM has no lowering of math.absi on index.
              : is_op(op, "math.absi") ? attn_b_absi(b, opd[0])
              : fn->recip_div && is_op(op, "arith.divf") &&
                      const_f32(mlirOperationGetOperand(op, 1), &c) && c != 0
                  ? attn_b_mulf(b, opd[0], attn_b_f32(b, (float)(1.0 / c)))
                  : clone_op(b, op, opd);
        if (mlirValueIsNull(res) || !memo_add(b, into, op, nopd, opd, res))
          return (MlirValue){NULL};
      }
    }
    if (e->nops == 256) {
      attn_builder_fail(b, "a score function has more than 256 ops");
      return (MlirValue){NULL};
    }
    e->ops[e->nops] = op;
    e->vals[e->nops++] = res;
  }
  return (MlirValue){NULL};
}

/// eval_run for the value a body yields alone.
static MlirValue eval_body(struct attn_builder *b, struct attn_k_fn *fn,
                           MlirBlock body, const MlirValue *args, int nargs,
                           struct attn_k_fn_memo **into,
                           const struct elem *el, struct eval *e) {
  e->ys = NULL;
  e->nys = 0;
  return eval_run(b, fn, body, args, nargs, into, el, e);
}

/// x (i32) clamped into [0, n - 1] (signed: a shifted causal block's rows
/// may lie before row 0).
static MlirValue clamp_i32(struct attn_builder *b, MlirValue x, int64_t n,
                           bool signed_lo) {
  if (signed_lo)
    x = attn_b_binary(b, "arith.maxsi", x, attn_b_i32(b, 0));
  return attn_b_binary(b, signed_lo ? "arith.minsi" : "arith.minui", x,
                       attn_b_i32(b, n - 1));
}

/// The add form's coefficient of score function fi for row r: +-u / f,
/// with u as e (the tile's evaluation of the body) made it and f the factor
/// the scores carry into the function (attn_k_fn_factor_into).
static MlirValue coefficient(struct attn_builder *b, struct attn_k_fn *fn,
                             const struct eval *e, const struct fn_plan *p,
                             int fi, int r) {
  MlirValue u = lookup(fn, e, p->add_u);
  if (mlirValueIsNull(u)) {
    attn_builder_fail(b, "a score function's per-tile factor is not made "
                         "(a bug in attn)");
    return u;
  }
  if (r == 1 && mlirValueEqual(u, fn->coef_u[fi]))
    return fn->coef[fi][0];
  fn->coef_u[fi] = u;
  double m = p->add_sign / attn_k_fn_factor_into(fn->k, fi);
  return m == 1.0 ? u : attn_b_mulf(b, u, attn_b_f32(b, (float)m));
}

/// Starts fn's tile for batch bz and head h (i32): no op of an earlier tile
/// is reused, b and h become index values.
static void start_tile(struct attn_builder *b, struct attn_k_fn *fn,
                       MlirValue bz, MlirValue h) {
  memo_free(fn->tile);
  memo_free(fn->block);
  fn->tile = fn->block = NULL;
  fn->block_j = (MlirValue){NULL};
  fn->b = attn_k_to_index(b, bz);
  fn->h = attn_k_to_index(b, h);
}

void attn_k_fn_tile(struct attn_builder *b, struct attn_k_fn *fn, MlirValue bz,
                    MlirValue h, MlirValue row0) {
  const struct attn_hopper_kernel *k = fn->k;
  start_tile(b, fn, bz, h);
  for (int r = 0; r < 2; ++r) {
    fn->row[r] = r ? attn_k_addc(b, row0, 8) : row0;
    fn->q[r] = attn_k_to_index(b, clamp_i32(b, fn->row[r], k->seq_q, true));
  }
  // Everything of the bodies that the score and the key do not reach, and
  // the add forms' coefficients.
  for (int r = 0; r < 2; ++r) {
    MlirValue sa[5] = {{NULL}, fn->b, fn->h, fn->q[r], {NULL}};
    struct elem el = {.r = r, .c = -1};
    struct eval e;
    for (int i = 0; i < k->nscore_fns; ++i) {
      eval_body(b, fn, k->score_fns[i], sa, 5, &fn->tile, &el, &e);
      struct fn_plan p;
      plan_of(k->score_fns[i], &p);
      fn->coef[i][r] = mlirOperationIsNull(p.add_op)
                           ? (MlirValue){NULL}
                           : coefficient(b, fn, &e, &p, i, r);
    }
    for (int i = 0; i < k->nmask_fns; ++i)
      eval_body(b, fn, k->mask_fns[i], sa + 1, 4, &fn->tile, &el, &e);
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
  for (int r = 0; r < 2; ++r)
    fn->d0[r][0] = fn->d0[r][1] = (MlirValue){NULL};
  fn->kbase =
      attn_b_addi(b, attn_k_mulc(b, j, k->block_n), attn_k_mulc(b, lr, 2));
  for (int c = 0; c < k->block_n / 4; ++c) // column c: registers 4(c/2) + c%2
    fn->kv[c] = attn_k_to_index(
        b, clamp_i32(b, attn_k_addc(b, fn->kbase, 8 * (c >> 1) + (c & 1)),
                     k->seq_k, false));
}

/// The column (fn->kv index) of register i.
static int column_of(int i) { return 2 * (i >> 2) + (i & 1); }

void attn_k_fn_scores(struct attn_builder *b, struct attn_k_fn *fn, int fi,
                      MlirValue lr, MlirValue j, double f, MlirValue *sv) {
  const struct attn_hopper_kernel *k = fn->k;
  block_keys(b, fn, lr, j);
  struct fn_plan p;
  plan_of(k->score_fns[fi], &p);
  // The factor multiplied in first: f, or in's f C (f / C), or none (add).
  double g = !mlirOperationIsNull(p.in_op)
                 ? (p.in_div ? f / p.in_c : f * p.in_c)
             : !mlirOperationIsNull(p.add_op) ? 1.0
                                              : f;
  MlirValue fc = g != 1.0 ? attn_b_f32(b, (float)g) : (MlirValue){NULL};
  for (int i = 0; i < k->block_n / 2; ++i) {
    MlirValue x = mlirValueIsNull(fc) ? sv[i] : attn_b_mulf(b, sv[i], fc);
    int r = (i >> 1) & 1;
    struct elem el = {.r = r, .c = column_of(i), .plan = &p, .in = x,
                      .score = sv[i], .coef = fn->coef[fi][r]};
    MlirValue a[5] = {sees_raw(&p) ? sv[i] : x, fn->b, fn->h, fn->q[r],
                      fn->kv[el.c]};
    struct eval e;
    sv[i] = eval_body(b, fn, k->score_fns[fi], a, 5, &fn->block, &el, &e);
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
      struct elem el = {.r = (i >> 1) & 1, .c = column_of(i)};
      MlirValue a[4] = {fn->b, fn->h, fn->q[el.r], fn->kv[el.c]};
      struct eval e;
      MlirValue vis =
          eval_body(b, fn, k->mask_fns[m], a, 4, &fn->block, &el, &e);
      if (mlirValueIsNull(vis)) {
        attn_builder_fail(b, "a mask function yields no value (a bug in attn)");
        return;
      }
      sv[i] = attn_b_select(b, vis, sv[i], ninf);
    }
}

/// Every mask body at the point a (unknown arguments null), what it can
/// make of it recorded in *into.
static void point_masks(struct attn_builder *b, struct attn_k_fn *fn,
                        const MlirValue a[4], struct attn_k_fn_memo **into) {
  struct elem el = {.r = 0, .c = -1};
  struct eval e;
  for (int i = 0; i < fn->k->nmask_fns; ++i)
    eval_body(b, fn, fn->k->mask_fns[i], a, 4, into, &el, &e);
}

void attn_k_fn_point_tile(struct attn_builder *b, struct attn_k_fn *fn,
                          MlirValue bz, MlirValue h) {
  start_tile(b, fn, bz, h);
  MlirValue a[4] = {fn->b, fn->h, {NULL}, {NULL}};
  point_masks(b, fn, a, &fn->tile);
}

void attn_k_fn_point_key(struct attn_builder *b, struct attn_k_fn *fn,
                         MlirValue kv) {
  memo_free(fn->block);
  fn->block = NULL;
  fn->block_j = (MlirValue){NULL};
  fn->kv[0] = attn_k_to_index(b, kv);
  MlirValue a[4] = {fn->b, fn->h, {NULL}, fn->kv[0]};
  point_masks(b, fn, a, &fn->block);
}

MlirValue attn_k_fn_point_visible(struct attn_builder *b, struct attn_k_fn *fn,
                                  MlirValue q) {
  const struct attn_hopper_kernel *k = fn->k;
  struct attn_k_fn_memo *here = NULL;
  MlirValue a[4] = {fn->b, fn->h, attn_k_to_index(b, q), fn->kv[0]};
  MlirValue all = {NULL};
  struct elem el = {.r = 0, .c = -1};
  struct eval e;
  for (int i = 0; i < k->nmask_fns; ++i) {
    MlirValue vis = eval_body(b, fn, k->mask_fns[i], a, 4, &here, &el, &e);
    if (mlirValueIsNull(vis)) {
      attn_builder_fail(b, "a mask function yields no value (a bug in attn)");
      break;
    }
    all = mlirValueIsNull(all) ? vis : attn_b_andi(b, all, vis);
  }
  memo_free(here);
  return all;
}

MlirValue attn_k_fn_point_value(struct attn_builder *b, struct attn_k_fn *fn,
                                int fi, MlirValue want, MlirValue q,
                                MlirValue kv) {
  struct attn_k_fn_memo *here = NULL;
  MlirBlock body = fn->k->mask_fns[fi];
  MlirValue a[4] = {fn->b, fn->h,
                    mlirValueIsNull(q) ? q : attn_k_to_index(b, q),
                    mlirValueIsNull(kv) ? kv : attn_k_to_index(b, kv)};
  if (mlirValueIsABlockArgument(want) &&
      mlirBlockEqual(mlirBlockArgumentGetOwner(want), body)) // b, h, q, kv
    return a[mlirBlockArgumentGetArgNumber(want) & 3];
  struct elem el = {.r = 0, .c = -1};
  struct eval e;
  eval_body(b, fn, body, a, 4, &here, &el, &e); // want is among e's values
  MlirValue v = lookup(fn, &e, want);
  memo_free(here);
  if (mlirValueIsNull(v))
    attn_builder_fail(b, "a mask function's value cannot be made at a row "
                         "or a key alone (a bug in attn)");
  return v;
}

MlirValue attn_k_fn_point_body(struct attn_builder *b, struct attn_k_fn *fn,
                               MlirBlock body, MlirValue s, MlirValue q,
                               MlirValue kv) {
  MlirValue a[5] = {s, fn->b, fn->h, q, kv};
  bool score = !mlirValueIsNull(s);
  struct elem el = {.r = 0, .c = -1};
  struct eval e;
  MlirValue v = eval_body(b, fn, body, score ? a : a + 1, score ? 5 : 4,
                          &fn->block, &el, &e);
  if (mlirValueIsNull(v) && !b->failed)
    attn_builder_fail(b, "a score or mask function yields no value at a "
                         "point (a bug in attn)");
  return v;
}

int attn_k_fn_point_yields(struct attn_builder *b, struct attn_k_fn *fn,
                           MlirBlock body, MlirValue s, MlirValue q,
                           MlirValue kv, MlirValue *ys, int nys) {
  MlirValue a[5] = {s, fn->b, fn->h, q, kv};
  struct elem el = {.r = 0, .c = -1};
  struct eval e;
  e.ys = ys;
  e.nys = nys;
  eval_run(b, fn, body, a, 5, &fn->block, &el, &e);
  int known = 0;
  for (int i = 0; i < nys; ++i)
    known += !mlirValueIsNull(ys[i]);
  return known;
}

/// Whether v is an arith.constant of an integer attribute: into *c.
static bool const_int(MlirValue v, int64_t *c) {
  if (!mlirValueIsAOpResult(v))
    return false;
  MlirOperation d = mlirOpResultGetOwner(v);
  if (!is_op(d, "arith.constant"))
    return false;
  MlirAttribute a = mlirOperationGetAttributeByName(d, mlirStringRefCreateFromCString("value"));
  if (!mlirAttributeIsAInteger(a))
    return false;
  *c = mlirIntegerAttrGetValueInt(a);
  return true;
}

/// The ops of a body its gpu.yield depends on (the others' values are
/// never used, wherever they are evaluated).
struct live {
  MlirOperation ops[256];
  int n;
};

static bool is_live(const struct live *l, MlirOperation op) {
  for (int i = 0; i < l->n; ++i)
    if (mlirOperationEqual(l->ops[i], op))
      return true;
  return false;
}

static void live_of(MlirBlock body, struct live *l) {
  l->n = 0;
  MlirOperation last = mlirBlockGetTerminator(body);
  if (mlirOperationIsNull(last))
    return;
  l->ops[l->n++] = last;
  // Backwards over the block: an op is live when a live op uses a result.
  for (MlirOperation op = last; !mlirOperationIsNull(op);) {
    MlirOperation prev = {NULL};
    for (MlirOperation o = mlirBlockGetFirstOperation(body);
         !mlirOperationIsNull(o) && !mlirOperationEqual(o, op);
         o = mlirOperationGetNextInBlock(o))
      prev = o;
    op = prev;
    if (mlirOperationIsNull(op) || l->n == 256)
      break;
    bool used = false;
    for (intptr_t r = 0; !used && r < mlirOperationGetNumResults(op); ++r)
      for (MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(op, r));
           !used && !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u))
        used = is_live(l, mlirOpOperandGetOwner(u));
    if (used)
      l->ops[l->n++] = op;
  }
}

/// Whether every use of v (through index casts) by a live op divides it by
/// a positive constant multiple of span.
static bool only_divided(MlirValue v, int64_t span, int depth,
                         const struct live *l) {
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation op = mlirOpOperandGetOwner(u);
    int64_t c;
    if (!is_live(l, op))
      continue;
    if (is_op(op, "arith.index_cast") || is_op(op, "arith.index_castui")) {
      if (depth > 4 || !only_divided(mlirOperationGetResult(op, 0), span,
                                     depth + 1, l))
        return false;
    } else if (!((is_op(op, "arith.divui") || is_op(op, "arith.divsi") ||
                  is_op(op, "arith.floordivsi")) &&
                 mlirOpOperandGetOperandNumber(u) == 0 &&
                 const_int(mlirOperationGetOperand(op, 1), &c) && c > 0 &&
                 c % span == 0)) {
      return false;
    }
  }
  return true;
}

bool attn_k_fn_body_blocked(MlirBlock body, bool kv, int64_t span) {
  intptr_t n = mlirBlockGetNumArguments(body);
  if (n < 4)
    return false;
  struct live l;
  live_of(body, &l);
  return only_divided(mlirBlockGetArgument(body, n - (kv ? 1 : 2)), span, 0,
                      &l);
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
  return 4 + k->ncaptures + (k->lse ? 1 : 0);
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
                       const struct attn_k_param base[ATTN_HOPPER_ARG_CAPTURE],
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
