//===- attn_body_eval.c - Float64 evaluation of score and mask bodies -----===//
//
// attn_body_eval_create turns the block into a list of instructions over
// numbered slots (the block's arguments first, then one per op result), so
// that the per-element evaluation compares no strings and touches no MLIR.
// Integers live in their slot sign-extended from their width (index: 64),
// so that signed operations read them as they are and unsigned ones mask
// them first.
//
//===----------------------------------------------------------------------===//
#include "lib/IR/attn_body_eval.h"

#include "dialects/body.h"
#include "dialects/dialects.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// The instructions, one per allowed op.
enum opc {
  OP_CONST,
  OP_ADDF, OP_SUBF, OP_MULF, OP_DIVF, OP_NEGF,
  OP_MAXIMUMF, OP_MINIMUMF, OP_MAXNUMF, OP_MINNUMF,
  OP_ADDI, OP_SUBI, OP_MULI, OP_DIVSI, OP_DIVUI, OP_REMSI, OP_REMUI,
  OP_ANDI, OP_ORI, OP_XORI, OP_SHLI, OP_SHRSI, OP_SHRUI,
  OP_MAXSI, OP_MINSI, OP_MAXUI, OP_MINUI,
  OP_CMPI, OP_CMPF, OP_SELECT,
  OP_SEXT,   // index_cast, extsi, trunci: sign-extend from the result width
  OP_ZEXT,   // index_castui, extui: zero-extend from the operand width
  OP_SITOFP, OP_UITOFP, OP_FPTOSI, OP_FPTOUI,
  OP_FCOPY,  // extf, truncf
  OP_ABSF, OP_ABSI, OP_EXP, OP_EXP2, OP_LOG, OP_LOG2, OP_LOG1P, OP_TANH,
  OP_SQRT, OP_RSQRT, OP_SIN, OP_COS, OP_COPYSIGN, OP_POWF, OP_FLOOR,
  OP_CEIL, OP_FMA, OP_ERF,
  OP_READ,   // tensor.extract / memref.load of a capture
  OP_YIELD,
};

static const struct {
  const char *name;
  enum opc op;
} op_table[] = {
    {"arith.constant", OP_CONST},     {"arith.addf", OP_ADDF},
    {"arith.subf", OP_SUBF},          {"arith.mulf", OP_MULF},
    {"arith.divf", OP_DIVF},          {"arith.negf", OP_NEGF},
    {"arith.maximumf", OP_MAXIMUMF},  {"arith.minimumf", OP_MINIMUMF},
    {"arith.maxnumf", OP_MAXNUMF},    {"arith.minnumf", OP_MINNUMF},
    {"arith.addi", OP_ADDI},          {"arith.subi", OP_SUBI},
    {"arith.muli", OP_MULI},          {"arith.divsi", OP_DIVSI},
    {"arith.divui", OP_DIVUI},        {"arith.remsi", OP_REMSI},
    {"arith.remui", OP_REMUI},        {"arith.andi", OP_ANDI},
    {"arith.ori", OP_ORI},            {"arith.xori", OP_XORI},
    {"arith.shli", OP_SHLI},          {"arith.shrsi", OP_SHRSI},
    {"arith.shrui", OP_SHRUI},        {"arith.maxsi", OP_MAXSI},
    {"arith.minsi", OP_MINSI},        {"arith.maxui", OP_MAXUI},
    {"arith.minui", OP_MINUI},        {"arith.cmpi", OP_CMPI},
    {"arith.cmpf", OP_CMPF},          {"arith.select", OP_SELECT},
    {"arith.index_cast", OP_SEXT},    {"arith.index_castui", OP_ZEXT},
    {"arith.sitofp", OP_SITOFP},      {"arith.uitofp", OP_UITOFP},
    {"arith.fptosi", OP_FPTOSI},      {"arith.fptoui", OP_FPTOUI},
    {"arith.extf", OP_FCOPY},         {"arith.truncf", OP_FCOPY},
    {"arith.extsi", OP_SEXT},         {"arith.extui", OP_ZEXT},
    {"arith.trunci", OP_SEXT},        {"math.absf", OP_ABSF},
    {"math.absi", OP_ABSI},           {"math.exp", OP_EXP},
    {"math.exp2", OP_EXP2},           {"math.log", OP_LOG},
    {"math.log2", OP_LOG2},           {"math.log1p", OP_LOG1P},
    {"math.tanh", OP_TANH},           {"math.sqrt", OP_SQRT},
    {"math.rsqrt", OP_RSQRT},         {"math.sin", OP_SIN},
    {"math.cos", OP_COS},             {"math.copysign", OP_COPYSIGN},
    {"math.powf", OP_POWF},           {"math.floor", OP_FLOOR},
    {"math.ceil", OP_CEIL},           {"math.fma", OP_FMA},
    {"math.erf", OP_ERF},             {"tensor.extract", OP_READ},
    {"memref.load", OP_READ},         {"gpu.yield", OP_YIELD},
};

/// One slot: a float (in double) or an integer (sign-extended).
union slot {
  double f;
  int64_t i;
};

#define MAX_OPERANDS 9 // a read of a rank-8 capture

struct insn {
  enum opc op;
  int res;                  // result slot (-1: none)
  int nargs;
  int arg[MAX_OPERANDS];    // operand slots (a read: indices only)
  int w, win;               // result / first operand integer width (0: float)
  int pred;                 // cmpi / cmpf predicate
  int cap;                  // capture of a read
  union slot imm;           // constant
};

struct capture {
  const double *data;
  int rank;
  int64_t dims[8];
  int w; // element integer width, 0 for floats
};

struct attn_body_eval {
  bool score;
  int nargs;
  int ninsns;
  struct insn *insns;
  int ncaps;
  struct capture *caps;
  union slot *slots;
  int result; // the yielded slot
};

static int64_t sext(int64_t x, int w) {
  if (w >= 64 || w <= 0)
    return x;
  uint64_t m = (uint64_t)1 << (w - 1), mask = (m << 1) - 1;
  uint64_t u = ((uint64_t)x & mask) ^ m;
  return (int64_t)(u - m);
}

static uint64_t zext(int64_t x, int w) {
  if (w >= 64 || w <= 0)
    return (uint64_t)x;
  return (uint64_t)x & (((uint64_t)1 << w) - 1);
}

/// The integer width of t (index: 64), or 0 for a float.
static int int_width(MlirType t) {
  if (mlirTypeIsAIndex(t))
    return 64;
  if (mlirTypeIsAInteger(t))
    return (int)mlirIntegerTypeGetWidth(t);
  return 0;
}

static bool fail(char *err, size_t errlen, const char *fmt, const char *what) {
  snprintf(err, errlen, fmt, what);
  return false;
}

/// The slot of v: a block argument's number, or the slot of the op that
/// made it among ops[0 .. n). -1 when v is neither.
static int slot_of(const struct attn_body_eval *e, MlirBlock body,
                   const MlirOperation *ops, int n, MlirValue v) {
  if (mlirValueIsABlockArgument(v))
    return mlirBlockEqual(mlirBlockArgumentGetOwner(v), body)
               ? (int)mlirBlockArgumentGetArgNumber(v)
               : -1;
  MlirOperation d = mlirOpResultGetOwner(v);
  for (int k = 0; k < n; ++k)
    if (mlirOperationEqual(ops[k], d))
      return e->insns[k].res;
  return -1;
}

/// Decodes op (the i-th of the block) into e->insns[i].
static bool decode(struct attn_body_eval *e, MlirBlock body,
                   const MlirOperation *ops, int i, const MlirValue *caps,
                   char *err, size_t errlen) {
  MlirOperation op = ops[i];
  struct insn *in = &e->insns[i];
  char name[64];
  attn_op_name(op, name, sizeof name);
  size_t k = 0;
  while (k < sizeof op_table / sizeof *op_table &&
         strcmp(op_table[k].name, name) != 0)
    ++k;
  if (k == sizeof op_table / sizeof *op_table)
    return fail(err, errlen, "cannot evaluate '%s' in a body", name);
  in->op = op_table[k].op;
  intptr_t nres = mlirOperationGetNumResults(op);
  intptr_t nops = mlirOperationGetNumOperands(op);
  if (nres > 1 || nops > MAX_OPERANDS)
    return fail(err, errlen, "cannot evaluate '%s' in a body", name);
  in->res = nres ? e->nargs + i : -1;
  in->w = nres ? int_width(mlirValueGetType(mlirOperationGetResult(op, 0)))
               : 0;
  in->win = nops ? int_width(mlirValueGetType(mlirOperationGetOperand(op, 0)))
                 : 0;
  int first = 0;
  if (in->op == OP_READ) {
    MlirValue src = mlirOperationGetOperand(op, 0);
    in->cap = -1;
    for (int c = 0; c < e->ncaps; ++c)
      if (mlirValueEqual(caps[c], src))
        in->cap = c;
    if (in->cap < 0)
      return fail(err, errlen, "'%s' in a body reads a value that is not a "
                               "capture",
                  name);
    if (nops - 1 != e->caps[in->cap].rank)
      return fail(err, errlen, "'%s' in a body has the wrong number of "
                               "indices",
                  name);
    first = 1;
  }
  in->nargs = (int)nops - first;
  for (intptr_t a = first; a < nops; ++a) {
    MlirValue v = mlirOperationGetOperand(op, a);
    int s = slot_of(e, body, ops, i, v);
    if (s < 0)
      return fail(err, errlen, "'%s' in a body uses a value defined outside "
                               "it that is not a capture's read",
                  name);
    in->arg[a - first] = s;
  }
  if (in->op == OP_CMPI || in->op == OP_CMPF) {
    MlirAttribute p = attn_attr_get(op, "predicate");
    if (mlirAttributeIsNull(p) || !mlirAttributeIsAInteger(p))
      return fail(err, errlen, "'%s' in a body has no predicate", name);
    in->pred = (int)mlirIntegerAttrGetValueInt(p);
  }
  if (in->op == OP_CONST) {
    MlirAttribute v = attn_attr_get(op, "value");
    if (!mlirAttributeIsNull(v) && mlirAttributeIsAFloat(v))
      in->imm.f = mlirFloatAttrGetValueDouble(v);
    else if (!mlirAttributeIsNull(v) && mlirAttributeIsAInteger(v))
      in->imm.i = sext(mlirIntegerAttrGetValueInt(v), in->w);
    else
      return fail(err, errlen, "'%s' in a body is not a scalar constant",
                  name);
  }
  if (in->op == OP_YIELD) {
    if (in->nargs != 1 || i != e->ninsns - 1)
      return fail(err, errlen, "'%s' must end a body with one value", name);
    e->result = in->arg[0];
  }
  return true;
}

/// Reads the captures' shapes and data.
static bool decode_captures(struct attn_body_eval *e, const MlirValue *caps,
                            const double *const *data, char *err,
                            size_t errlen) {
  for (int c = 0; c < e->ncaps; ++c) {
    struct capture *cp = &e->caps[c];
    MlirType t = mlirValueGetType(caps[c]);
    cp->rank = attn_static_shape(t, cp->dims);
    if (cp->rank < 1)
      return fail(err, errlen, "a capture of a body %s",
                  "has no static shape");
    for (int d = 0; d < cp->rank; ++d)
      if (cp->dims[d] <= 0)
        return fail(err, errlen, "a capture of a body %s",
                    "has an empty dimension");
    if (!data || !data[c])
      return fail(err, errlen, "a capture of a body %s", "has no data");
    cp->data = data[c];
    cp->w = int_width(mlirShapedTypeGetElementType(t));
  }
  return true;
}

struct attn_body_eval *attn_body_eval_create(MlirBlock body, int ncaptures,
                                             const double *const *captures,
                                             char *err, size_t errlen) {
  if (errlen)
    err[0] = '\0';
  if (mlirBlockIsNull(body) ||
      !mlirBlockIsNull(mlirBlockGetNextInRegion(body))) {
    fail(err, errlen, "%s", "a body must be one block");
    return NULL;
  }
  struct attn_body_eval *e = calloc(1, sizeof *e);
  MlirOperation *ops = NULL;
  MlirValue *caps = NULL;
  if (!e)
    goto oom;
  e->nargs = (int)mlirBlockGetNumArguments(body);
  e->score = e->nargs == 5;
  if (e->nargs != 5 && e->nargs != 4) {
    fail(err, errlen, "%s", "a body takes 5 (score) or 4 (mask) arguments");
    goto out;
  }
  for (MlirOperation o = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o))
    ++e->ninsns;
  e->ncaps = attn_body_captures(body, NULL, 0);
  if (e->ncaps != ncaptures) {
    snprintf(err, errlen, "the body has %d captures, %d given", e->ncaps,
             ncaptures);
    goto out;
  }
  ops = calloc((size_t)e->ninsns + 1, sizeof *ops);
  caps = calloc((size_t)e->ncaps + 1, sizeof *caps);
  e->insns = calloc((size_t)e->ninsns + 1, sizeof *e->insns);
  e->caps = calloc((size_t)e->ncaps + 1, sizeof *e->caps);
  e->slots = calloc((size_t)(e->nargs + e->ninsns), sizeof *e->slots);
  if (!ops || !caps || !e->insns || !e->caps || !e->slots)
    goto oom;
  attn_body_captures(body, caps, e->ncaps);
  if (!decode_captures(e, caps, captures, err, errlen))
    goto out;
  int n = 0;
  for (MlirOperation o = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o))
    ops[n++] = o;
  e->result = -1;
  for (int i = 0; i < n; ++i)
    if (!decode(e, body, ops, i, caps, err, errlen))
      goto out;
  if (e->result < 0) {
    fail(err, errlen, "%s", "a body must end with gpu.yield");
    goto out;
  }
  free(ops);
  free(caps);
  return e;
oom:
  fail(err, errlen, "%s", "out of memory decoding a body");
out:
  free(ops);
  free(caps);
  attn_body_eval_destroy(e);
  return NULL;
}

void attn_body_eval_destroy(struct attn_body_eval *e) {
  if (!e)
    return;
  free(e->insns);
  free(e->caps);
  free(e->slots);
  free(e);
}

bool attn_body_eval_is_score(const struct attn_body_eval *e) {
  return e && e->score;
}

static bool cmpf(int pred, double a, double b) {
  bool uno = isnan(a) || isnan(b);
  switch (pred) {
  case 0: return false;                 // false
  case 1: return !uno && a == b;        // oeq
  case 2: return !uno && a > b;         // ogt
  case 3: return !uno && a >= b;        // oge
  case 4: return !uno && a < b;         // olt
  case 5: return !uno && a <= b;        // ole
  case 6: return !uno && a != b;        // one
  case 7: return !uno;                  // ord
  case 8: return uno || a == b;         // ueq
  case 9: return uno || a > b;          // ugt
  case 10: return uno || a >= b;        // uge
  case 11: return uno || a < b;         // ult
  case 12: return uno || a <= b;        // ule
  case 13: return uno || a != b;        // une
  case 14: return uno;                  // uno
  default: return true;                 // true
  }
}

static bool cmpi(int pred, int64_t a, int64_t b, int w) {
  uint64_t ua = zext(a, w), ub = zext(b, w);
  switch (pred) {
  case 0: return a == b;   // eq
  case 1: return a != b;   // ne
  case 2: return a < b;    // slt
  case 3: return a <= b;   // sle
  case 4: return a > b;    // sgt
  case 5: return a >= b;   // sge
  case 6: return ua < ub;  // ult
  case 7: return ua <= ub; // ule
  case 8: return ua > ub;  // ugt
  default: return ua >= ub; // uge
  }
}

static int64_t divsi(int64_t a, int64_t b, bool rem) {
  if (b == 0)
    return 0;
  if (b == -1)
    return rem ? 0 : (int64_t)(0 - (uint64_t)a); // INT64_MIN / -1 wraps
  return rem ? a % b : a / b;
}

/// fptosi / fptoui, saturating at the result width; NaN gives 0.
static int64_t fp_to_int(double x, int w, bool is_unsigned) {
  if (isnan(x))
    return 0;
  x = trunc(x);
  if (is_unsigned) {
    double hi = ldexp(1.0, w) - 1.0; // exact below 2^53, rounds up above
    if (x <= 0)
      return 0;
    if (x >= hi)
      return sext((int64_t)(w >= 64 ? UINT64_MAX
                                    : (((uint64_t)1 << w) - 1)),
                  w);
    return sext((int64_t)(uint64_t)x, w);
  }
  double lo = -ldexp(1.0, w - 1), hi = ldexp(1.0, w - 1);
  if (x <= lo)
    return sext((int64_t)((uint64_t)1 << (w - 1)), w); // the minimum
  if (x >= hi)
    return sext((int64_t)(((uint64_t)1 << (w - 1)) - 1), w);
  return (int64_t)x;
}

/// Reads capture c at the clamped indices.
static union slot read_capture(const struct capture *c, const union slot *s,
                               const int *arg) {
  int64_t off = 0;
  for (int d = 0; d < c->rank; ++d) {
    int64_t x = s[arg[d]].i;
    x = x < 0 ? 0 : x >= c->dims[d] ? c->dims[d] - 1 : x;
    off = off * c->dims[d] + x;
  }
  union slot r;
  double v = c->data[off];
  if (c->w == 0)
    r.f = v;
  else
    r.i = isfinite(v) && fabs(v) < 9.2e18 ? sext((int64_t)v, c->w) : 0;
  return r;
}

/// Runs every instruction; returns the yielded slot.
static union slot run(struct attn_body_eval *e) {
  union slot *s = e->slots;
  for (int k = 0; k < e->ninsns; ++k) {
    const struct insn *in = &e->insns[k];
    const int *a = in->arg;
    union slot r = {.i = 0};
    double x = in->nargs > 0 ? s[a[0]].f : 0, y = in->nargs > 1 ? s[a[1]].f : 0;
    int64_t i = in->nargs > 0 ? s[a[0]].i : 0, j = in->nargs > 1 ? s[a[1]].i : 0;
    int w = in->w;
    switch (in->op) {
    case OP_CONST: r = in->imm; break;
    case OP_ADDF: r.f = x + y; break;
    case OP_SUBF: r.f = x - y; break;
    case OP_MULF: r.f = x * y; break;
    case OP_DIVF: r.f = x / y; break;
    case OP_NEGF: r.f = -x; break;
    case OP_MAXIMUMF: r.f = isnan(x) || isnan(y) ? NAN : fmax(x, y); break;
    case OP_MINIMUMF: r.f = isnan(x) || isnan(y) ? NAN : fmin(x, y); break;
    case OP_MAXNUMF: r.f = fmax(x, y); break;
    case OP_MINNUMF: r.f = fmin(x, y); break;
    case OP_ADDI: r.i = sext((int64_t)((uint64_t)i + (uint64_t)j), w); break;
    case OP_SUBI: r.i = sext((int64_t)((uint64_t)i - (uint64_t)j), w); break;
    case OP_MULI: r.i = sext((int64_t)((uint64_t)i * (uint64_t)j), w); break;
    case OP_DIVSI: r.i = sext(divsi(i, j, false), w); break;
    case OP_REMSI: r.i = sext(divsi(i, j, true), w); break;
    case OP_DIVUI:
    case OP_REMUI: {
      uint64_t ui = zext(i, w), uj = zext(j, w);
      uint64_t q = uj == 0 ? 0 : in->op == OP_DIVUI ? ui / uj : ui % uj;
      r.i = sext((int64_t)q, w);
      break;
    }
    case OP_ANDI: r.i = i & j; break;
    case OP_ORI: r.i = i | j; break;
    case OP_XORI: r.i = sext(i ^ j, w); break;
    case OP_SHLI: {
      uint64_t sh = zext(j, w);
      r.i = sh >= (uint64_t)w ? 0 : sext((int64_t)((uint64_t)i << sh), w);
      break;
    }
    case OP_SHRSI: {
      uint64_t sh = zext(j, w);
      r.i = sh >= (uint64_t)w ? (i < 0 ? -1 : 0) : i >> sh;
      break;
    }
    case OP_SHRUI: {
      uint64_t sh = zext(j, w);
      r.i = sh >= (uint64_t)w ? 0 : sext((int64_t)(zext(i, w) >> sh), w);
      break;
    }
    case OP_MAXSI: r.i = i > j ? i : j; break;
    case OP_MINSI: r.i = i < j ? i : j; break;
    case OP_MAXUI: r.i = zext(i, w) > zext(j, w) ? i : j; break;
    case OP_MINUI: r.i = zext(i, w) < zext(j, w) ? i : j; break;
    case OP_CMPI: r.i = cmpi(in->pred, i, j, in->win) ? -1 : 0; break;
    case OP_CMPF: r.i = cmpf(in->pred, x, y) ? -1 : 0; break;
    case OP_SELECT: r = i ? s[a[1]] : s[a[2]]; break;
    case OP_SEXT: r.i = sext(i, w); break;
    case OP_ZEXT: r.i = sext((int64_t)zext(i, in->win), w); break;
    case OP_SITOFP: r.f = (double)i; break;
    case OP_UITOFP: r.f = (double)zext(i, in->win); break;
    case OP_FPTOSI: r.i = fp_to_int(x, w, false); break;
    case OP_FPTOUI: r.i = fp_to_int(x, w, true); break;
    case OP_FCOPY: r.f = x; break;
    case OP_ABSF: r.f = fabs(x); break;
    case OP_ABSI: r.i = sext(i < 0 ? (int64_t)(0 - (uint64_t)i) : i, w); break;
    case OP_EXP: r.f = exp(x); break;
    case OP_EXP2: r.f = exp2(x); break;
    case OP_LOG: r.f = log(x); break;
    case OP_LOG2: r.f = log2(x); break;
    case OP_LOG1P: r.f = log1p(x); break;
    case OP_TANH: r.f = tanh(x); break;
    case OP_SQRT: r.f = sqrt(x); break;
    case OP_RSQRT: r.f = 1.0 / sqrt(x); break;
    case OP_SIN: r.f = sin(x); break;
    case OP_COS: r.f = cos(x); break;
    case OP_COPYSIGN: r.f = copysign(x, y); break;
    case OP_POWF: r.f = pow(x, y); break;
    case OP_FLOOR: r.f = floor(x); break;
    case OP_CEIL: r.f = ceil(x); break;
    case OP_FMA: r.f = fma(x, y, s[a[2]].f); break;
    case OP_ERF: r.f = erf(x); break;
    case OP_READ: r = read_capture(&e->caps[in->cap], s, a); break;
    case OP_YIELD: continue;
    }
    s[in->res] = r;
  }
  return s[e->result];
}

double attn_body_eval_score(struct attn_body_eval *e, double s, int64_t b,
                            int64_t h, int64_t q, int64_t kv) {
  if (!e || !e->score)
    return s;
  e->slots[0].f = s;
  e->slots[1].i = b;
  e->slots[2].i = h;
  e->slots[3].i = q;
  e->slots[4].i = kv;
  return run(e).f;
}

bool attn_body_eval_mask(struct attn_body_eval *e, int64_t b, int64_t h,
                         int64_t q, int64_t kv) {
  if (!e || e->score)
    return true;
  e->slots[0].i = b;
  e->slots[1].i = h;
  e->slots[2].i = q;
  e->slots[3].i = kv;
  return run(e).i != 0;
}

double attn_body_fns_score(void *fns, double s, int64_t b, int64_t h,
                           int64_t q, int64_t kv) {
  return attn_body_eval_score(((struct attn_body_fns *)fns)->score, s, b, h,
                              q, kv);
}

bool attn_body_fns_mask(void *fns, int64_t b, int64_t h, int64_t q,
                        int64_t kv) {
  return attn_body_eval_mask(((struct attn_body_fns *)fns)->mask, b, h, q,
                             kv);
}
