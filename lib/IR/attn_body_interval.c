//===- attn_body_interval.c - What a mask body says of a box of indices ---===//
//
// A mask body compiled to a small list of instructions over slots, then
// evaluated by interval arithmetic: an integer slot holds [lo, hi] (every
// value it can take over the box), an i1 slot whether it can be true and
// whether it can be false, any other slot is unknown. The rules are the
// usual ones (a sum of intervals, a difference, products of the ends, the
// monotone divisions and shifts by constants, comparisons of two intervals)
// and each is exact for one op; their composition is conservative, since
// it forgets that two slots depend on the same index. A result that would
// leave its type's signed range (the op would wrap) is unknown. Nothing
// here fails: an op without a rule is unknown, and an unknown i1 can be
// both.
//
//===----------------------------------------------------------------------===//
#include "lib/IR/attn_body_interval.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdlib.h>
#include <string.h>

/// Wide enough for any sum or product of two int64 ends.
__extension__ typedef __int128 wide;

enum opcode {
  OP_UNKNOWN,
  OP_CONST_INT,
  OP_CONST_BOOL,
  OP_ADD,
  OP_SUB,
  OP_MUL,
  OP_DIVS,
  OP_DIVU,
  OP_REMS,
  OP_REMU,
  OP_MINS,
  OP_MAXS,
  OP_MINU,
  OP_MAXU,
  OP_SHL,
  OP_SHRS,
  OP_SHRU,
  OP_AND,
  OP_OR,
  OP_XOR,
  OP_CMP,
  OP_SELECT,
  OP_CAST_S, ///< index_cast, extsi, trunci: the value, signed
  OP_CAST_U, ///< index_castui, extui: the value read unsigned
};

/// cmpi's predicates, as arith numbers them.
enum { P_EQ, P_NE, P_SLT, P_SLE, P_SGT, P_SGE, P_ULT, P_ULE, P_UGT, P_UGE };

/// Most operands whose slots an instr keeps for uniformity (a
/// tensor.extract of a rank-4 capture has 5).
#define MAX_UNIFORM_ARGS 6

struct instr {
  enum opcode op;
  int width;    ///< bits of the result (64 for index); 1 for i1
  int arg[3];   ///< operand slots, -1 when unused
  /// Every operand's slot (-1: a value from outside the body, a capture or
  /// a constant above it); nall > MAX_UNIFORM_ARGS: too many to keep.
  int all[MAX_UNIFORM_ARGS];
  int nall;
  int64_t imm;  ///< the constant, or cmpi's predicate
  int result;   ///< the result slot
};

struct attn_mask_program {
  int nslots;
  int ninstrs;
  int yield; ///< the slot yielded, -1 when the body yields nothing usable
  struct instr *code;
};

/// An abstract value: an interval, a boolean's possibilities, or unknown.
enum kind { K_UNKNOWN, K_INT, K_BOOL };
struct absval {
  enum kind kind;
  bool can_true, can_false; ///< K_BOOL
  int64_t lo, hi;           ///< K_INT, inclusive
};

//===-- Compiling the body ------------------------------------------------===//

static bool name_is(MlirOperation op, const char *name) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  return s.length == strlen(name) && !memcmp(s.data, name, s.length);
}

static int type_width(MlirType t) {
  if (mlirTypeIsAIndex(t))
    return 64;
  if (mlirTypeIsAInteger(t))
    return (int)mlirIntegerTypeGetWidth(t);
  return 0; // not an integer: its slot stays unknown
}

static const struct {
  const char *name;
  enum opcode op;
} op_table[] = {
    {"arith.addi", OP_ADD},          {"arith.subi", OP_SUB},
    {"arith.muli", OP_MUL},          {"arith.divsi", OP_DIVS},
    {"arith.divui", OP_DIVU},        {"arith.remsi", OP_REMS},
    {"arith.remui", OP_REMU},        {"arith.minsi", OP_MINS},
    {"arith.maxsi", OP_MAXS},        {"arith.minui", OP_MINU},
    {"arith.maxui", OP_MAXU},        {"arith.shli", OP_SHL},
    {"arith.shrsi", OP_SHRS},        {"arith.shrui", OP_SHRU},
    {"arith.andi", OP_AND},          {"arith.ori", OP_OR},
    {"arith.xori", OP_XOR},          {"arith.cmpi", OP_CMP},
    {"arith.select", OP_SELECT},     {"arith.index_cast", OP_CAST_S},
    {"arith.extsi", OP_CAST_S},      {"arith.trunci", OP_CAST_S},
    {"arith.index_castui", OP_CAST_U}, {"arith.extui", OP_CAST_U},
};

/// The slot of v: a block argument's or an earlier result's; -1 for a value
/// from outside the body (a capture), which reads as unknown.
static int slot_of(MlirValue *vals, int n, MlirValue v) {
  for (int i = 0; i < n; ++i)
    if (mlirValueEqual(vals[i], v))
      return i;
  return -1;
}

/// Reads arith.constant's value into in (an integer or an i1).
static void read_constant(MlirOperation op, struct instr *in) {
  MlirAttribute a = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("value"));
  if (mlirAttributeIsNull(a))
    return;
  if (mlirAttributeIsABool(a)) {
    in->op = OP_CONST_BOOL;
    in->imm = mlirBoolAttrGetValue(a);
  } else if (mlirAttributeIsAInteger(a) && in->width > 1) {
    in->op = OP_CONST_INT;
    in->imm = mlirIntegerAttrGetValueInt(a);
  }
}

struct attn_mask_program *attn_mask_program_compile(MlirBlock body) {
  if (mlirBlockIsNull(body) || mlirBlockGetNumArguments(body) != 4)
    return NULL;
  int nops = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    ++nops;
  struct attn_mask_program *p = calloc(1, sizeof *p);
  MlirValue *vals = malloc(sizeof *vals * (size_t)(4 + nops));
  if (p)
    p->code = calloc((size_t)(nops ? nops : 1), sizeof *p->code);
  if (!p || !vals || !p->code) {
    free(vals);
    attn_mask_program_free(p);
    return NULL;
  }
  int n = 0;
  for (intptr_t i = 0; i < 4; ++i)
    vals[n++] = mlirBlockGetArgument(body, i);
  p->yield = -1;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    intptr_t nargs = mlirOperationGetNumOperands(op);
    if (mlirOperationGetNumResults(op) != 1) {
      if (name_is(op, "gpu.yield") && nargs == 1)
        p->yield = slot_of(vals, n, mlirOperationGetOperand(op, 0));
      continue;
    }
    struct instr *in = &p->code[p->ninstrs++];
    MlirValue r = mlirOperationGetResult(op, 0);
    in->op = OP_UNKNOWN;
    in->width = type_width(mlirValueGetType(r));
    in->arg[0] = in->arg[1] = in->arg[2] = -1;
    for (intptr_t i = 0; i < nargs && i < 3; ++i)
      in->arg[i] = slot_of(vals, n, mlirOperationGetOperand(op, i));
    in->nall = (int)nargs;
    for (intptr_t i = 0; i < nargs && i < MAX_UNIFORM_ARGS; ++i)
      in->all[i] = slot_of(vals, n, mlirOperationGetOperand(op, i));
    if (in->width > 0 && name_is(op, "arith.constant")) {
      read_constant(op, in);
    } else if (in->width > 0) {
      for (size_t t = 0; t < sizeof op_table / sizeof *op_table; ++t)
        if (name_is(op, op_table[t].name))
          in->op = op_table[t].op;
      if (in->op == OP_CMP) {
        MlirAttribute a = mlirOperationGetAttributeByName(
            op, mlirStringRefCreateFromCString("predicate"));
        if (mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a))
          in->op = OP_UNKNOWN;
        else
          in->imm = mlirIntegerAttrGetValueInt(a);
      }
    }
    in->result = n;
    vals[n++] = r;
  }
  p->nslots = n;
  free(vals);
  return p;
}

void attn_mask_program_free(struct attn_mask_program *p) {
  if (!p)
    return;
  free(p->code);
  free(p);
}

//===-- Interval rules ----------------------------------------------------===//

static const struct absval unknown = {K_UNKNOWN, true, true, 0, 0};

static struct absval boolean(bool can_true, bool can_false) {
  struct absval v = {K_BOOL, can_true, can_false, 0, 0};
  return v;
}

/// [lo, hi] as a value of width bits, unknown when it leaves the signed
/// range (the op would wrap there).
static struct absval interval(wide lo, wide hi, int width) {
  wide max = width >= 64 ? (wide)INT64_MAX
                             : (((wide)1 << (width - 1)) - 1);
  if (width <= 1 || lo < -max - 1 || hi > max || lo > hi)
    return unknown;
  struct absval v = {K_INT, true, true, (int64_t)lo, (int64_t)hi};
  return v;
}

static wide min2(wide a, wide b) { return a < b ? a : b; }
static wide max2(wide a, wide b) { return a > b ? a : b; }

/// The interval of x / c (truncating) for a constant c > 0: monotone.
static struct absval div_const(struct absval a, int64_t c, int width) {
  return interval((wide)a.lo / c, (wide)a.hi / c, width);
}

static bool is_const(struct absval a) {
  return a.kind == K_INT && a.lo == a.hi;
}

static bool nonneg(struct absval a) { return a.kind == K_INT && a.lo >= 0; }

static struct absval compare(int64_t pred, struct absval a, struct absval b) {
  if (a.kind != K_INT || b.kind != K_INT)
    return unknown;
  if (pred >= P_ULT) { // unsigned: the same as signed for non-negative ends
    if (!nonneg(a) || !nonneg(b))
      return unknown;
    pred -= P_ULT - P_SLT;
  }
  bool overlap = a.lo <= b.hi && b.lo <= a.hi;
  bool same = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
  switch (pred) {
  case P_EQ:
    return boolean(overlap, !same);
  case P_NE:
    return boolean(!same, overlap);
  case P_SLT:
    return boolean(a.lo < b.hi, a.hi >= b.lo);
  case P_SLE:
    return boolean(a.lo <= b.hi, a.hi > b.lo);
  case P_SGT:
    return boolean(a.hi > b.lo, a.lo <= b.hi);
  case P_SGE:
    return boolean(a.hi >= b.lo, a.lo < b.hi);
  }
  return unknown;
}

static struct absval join(struct absval a, struct absval b) {
  if (a.kind == K_BOOL && b.kind == K_BOOL)
    return boolean(a.can_true || b.can_true, a.can_false || b.can_false);
  if (a.kind == K_INT && b.kind == K_INT) {
    struct absval v = a;
    v.lo = a.lo < b.lo ? a.lo : b.lo;
    v.hi = a.hi > b.hi ? a.hi : b.hi;
    return v;
  }
  return unknown;
}

/// i1 logic on the possibilities of a and b.
static struct absval logic(enum opcode op, struct absval a, struct absval b) {
  if (a.kind != K_BOOL || b.kind != K_BOOL)
    return unknown;
  switch (op) {
  case OP_AND:
    return boolean(a.can_true && b.can_true, a.can_false || b.can_false);
  case OP_OR:
    return boolean(a.can_true || b.can_true, a.can_false && b.can_false);
  default: // xor
    return boolean((a.can_true && b.can_false) || (a.can_false && b.can_true),
                   (a.can_true && b.can_true) || (a.can_false && b.can_false));
  }
}

static struct absval arith(const struct instr *in, struct absval a,
                           struct absval b) {
  int w = in->width;
  if (w == 1 && (in->op == OP_AND || in->op == OP_OR || in->op == OP_XOR))
    return logic(in->op, a, b);
  if (a.kind != K_INT || b.kind != K_INT)
    return unknown;
  switch (in->op) {
  case OP_ADD:
    return interval((wide)a.lo + b.lo, (wide)a.hi + b.hi, w);
  case OP_SUB:
    return interval((wide)a.lo - b.hi, (wide)a.hi - b.lo, w);
  case OP_MUL: {
    wide p[4] = {(wide)a.lo * b.lo, (wide)a.lo * b.hi,
                     (wide)a.hi * b.lo, (wide)a.hi * b.hi};
    return interval(min2(min2(p[0], p[1]), min2(p[2], p[3])),
                    max2(max2(p[0], p[1]), max2(p[2], p[3])), w);
  }
  case OP_DIVS:
    return is_const(b) && b.lo > 0 ? div_const(a, b.lo, w) : unknown;
  case OP_DIVU:
    return is_const(b) && b.lo > 0 && nonneg(a) ? div_const(a, b.lo, w)
                                                : unknown;
  case OP_REMS:
  case OP_REMU:
    if (!is_const(b) || b.lo <= 0 || (in->op == OP_REMU && !nonneg(a)))
      return unknown;
    if (nonneg(a) && a.lo / b.lo == a.hi / b.lo) // one period: exact
      return interval(a.lo % b.lo, a.hi % b.lo, w);
    return interval(nonneg(a) ? 0 : -(b.lo - 1), b.lo - 1, w);
  case OP_MINU:
  case OP_MAXU:
    if (!nonneg(a) || !nonneg(b))
      return unknown;
    return in->op == OP_MINU ? interval(min2(a.lo, b.lo), min2(a.hi, b.hi), w)
                             : interval(max2(a.lo, b.lo), max2(a.hi, b.hi), w);
  case OP_MINS:
    return interval(min2(a.lo, b.lo), min2(a.hi, b.hi), w);
  case OP_MAXS:
    return interval(max2(a.lo, b.lo), max2(a.hi, b.hi), w);
  case OP_SHL:
    if (!is_const(b) || b.lo < 0 || b.lo >= w)
      return unknown;
    return interval((wide)a.lo << b.lo, (wide)a.hi << b.lo, w);
  case OP_SHRS:
  case OP_SHRU:
    if (!is_const(b) || b.lo < 0 || b.lo >= w ||
        (in->op == OP_SHRU && !nonneg(a)))
      return unknown;
    return interval(a.lo >> b.lo, a.hi >> b.lo, w);
  case OP_AND: // x & y of non-negatives lies in [0, min(x, y)]
    return nonneg(a) && nonneg(b) ? interval(0, min2(a.hi, b.hi), w)
                                  : unknown;
  default:
    return unknown;
  }
}

static struct absval step(const struct instr *in, const struct absval *s) {
  struct absval a = in->arg[0] >= 0 ? s[in->arg[0]] : unknown;
  struct absval b = in->arg[1] >= 0 ? s[in->arg[1]] : unknown;
  switch (in->op) {
  case OP_UNKNOWN:
    return in->width == 1 ? boolean(true, true) : unknown;
  case OP_CONST_INT:
    return interval(in->imm, in->imm, in->width);
  case OP_CONST_BOOL:
    return boolean(in->imm != 0, in->imm == 0);
  case OP_CMP:
    return compare(in->imm, a, b);
  case OP_SELECT: {
    struct absval c = a, x = b;
    struct absval y = in->arg[2] >= 0 ? s[in->arg[2]] : unknown;
    if (c.kind == K_BOOL && !c.can_false)
      return x;
    if (c.kind == K_BOOL && !c.can_true)
      return y;
    return join(x, y);
  }
  case OP_CAST_S:
    return a.kind == K_INT ? interval(a.lo, a.hi, in->width) : unknown;
  case OP_CAST_U:
    return nonneg(a) ? interval(a.lo, a.hi, in->width) : unknown;
  default:
    return arith(in, a, b);
  }
}

enum attn_box_mask attn_mask_program_eval(const struct attn_mask_program *p,
                                          const struct attn_box *box) {
  if (!p || p->yield < 0)
    return ATTN_BOX_SOME;
  struct absval small[64];
  struct absval *s = p->nslots <= 64 ? small
                                     : malloc(sizeof *s * (size_t)p->nslots);
  if (!s)
    return ATTN_BOX_SOME;
  for (int i = 0; i < 4; ++i)
    s[i] = interval(box->lo[i], box->hi[i], 64);
  for (int i = 0; i < p->ninstrs; ++i)
    s[p->code[i].result] = step(&p->code[i], s);
  struct absval y = s[p->yield];
  if (s != small)
    free(s);
  if (y.kind != K_BOOL || (y.can_true && y.can_false))
    return ATTN_BOX_SOME;
  return y.can_true ? ATTN_BOX_ALL : ATTN_BOX_NONE;
}

bool attn_mask_program_uniform(const struct attn_mask_program *p,
                               const struct attn_box *box) {
  if (!p || p->yield < 0)
    return false;
  struct absval small[64];
  bool usmall[64];
  bool big = p->nslots > 64;
  struct absval *s = big ? malloc(sizeof *s * (size_t)p->nslots) : small;
  bool *u = big ? malloc(sizeof *u * (size_t)p->nslots) : usmall;
  if (!s || !u) {
    if (big) {
      free(s);
      free(u);
    }
    return false;
  }
  // b and h are one value per row of the lists; q and kv are uniform where
  // their interval is a point.
  for (int i = 0; i < 4; ++i) {
    s[i] = interval(box->lo[i], box->hi[i], 64);
    u[i] = i < 2 || box->lo[i] == box->hi[i];
  }
  for (int i = 0; i < p->ninstrs; ++i) {
    const struct instr *in = &p->code[i];
    struct absval v = step(in, s);
    // Every op of a body is pure: all operands uniform, the result too;
    // an integer whose interval is a point is uniform whatever it reads.
    bool uni = in->nall <= MAX_UNIFORM_ARGS;
    for (int a = 0; uni && a < in->nall; ++a)
      uni = in->all[a] < 0 || u[in->all[a]];
    if (is_const(v) || (v.kind == K_BOOL && !(v.can_true && v.can_false)))
      uni = true;
    s[in->result] = v;
    u[in->result] = uni;
  }
  bool r = u[p->yield];
  if (big) {
    free(s);
    free(u);
  }
  return r;
}

//===-- Key blocks of a query block ---------------------------------------===//

/// The and of n masks over box: NONE when one says NONE, ALL when all say
/// ALL.
static enum attn_box_mask all_of(const struct attn_mask_program *const *p,
                                 int n, const struct attn_box *box) {
  enum attn_box_mask r = ATTN_BOX_ALL;
  for (int i = 0; i < n && r != ATTN_BOX_NONE; ++i) {
    enum attn_box_mask m = attn_mask_program_eval(p[i], box);
    if (m != ATTN_BOX_ALL)
      r = m;
  }
  return r;
}

void attn_mask_key_blocks(const struct attn_mask_program *const *p, int n,
                          const struct attn_mask_shape *s, int64_t q0,
                          int64_t q1, struct attn_key_blocks *out) {
  int64_t nkb = (s->seq_k + s->block_n - 1) / s->block_n;
  struct attn_box box = {{0, 0, q0, 0},
                         {s->batch - 1, s->heads - 1, q1, 0}};
  int64_t first = -1, last = -1, run = 0, best = 0, best_at = 0;
  for (int64_t kb = 0; kb < nkb; ++kb) {
    box.lo[3] = kb * s->block_n;
    box.hi[3] = kb * s->block_n + s->block_n - 1;
    if (box.hi[3] > s->seq_k - 1)
      box.hi[3] = s->seq_k - 1;
    enum attn_box_mask m = all_of(p, n, &box);
    if (m != ATTN_BOX_NONE) {
      if (first < 0)
        first = kb;
      last = kb + 1;
    }
    run = m == ATTN_BOX_ALL ? run + 1 : 0;
    if (run > best) {
      best = run;
      best_at = kb + 1 - run;
    }
  }
  if (first < 0) { // nothing visible: one block, wholly masked
    *out = (struct attn_key_blocks){0, 1, 0, 0};
    return;
  }
  *out = (struct attn_key_blocks){first, last, best_at, best_at + best};
}
