//===- body.c - The shared checker of score and mask modifier bodies ------===//
//
// One pass over the body's block: the region's shape and signature first
// (errors at the op carrying the region), then each op in order (errors at
// the body op): allowlist, no regions, scalar types, captures and constant
// indices. A body that passes can be cloned as is by every lowering and
// evaluated by lib/IR/attn_body_eval.c.
//
//===----------------------------------------------------------------------===//
#include "dialects/body.h"
#include "dialects/dialects.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <string.h>

/// The ops every path lowers and the reference evaluates, besides the read
/// of a capture (tensor.extract or memref.load by level).
static const char *const allowed_ops[] = {
    "arith.constant",     "arith.addf",     "arith.subf",
    "arith.mulf",         "arith.divf",     "arith.negf",
    "arith.maximumf",     "arith.minimumf", "arith.maxnumf",
    "arith.minnumf",      "arith.addi",     "arith.subi",
    "arith.muli",         "arith.divsi",    "arith.divui",
    "arith.remsi",        "arith.remui",    "arith.andi",
    "arith.ori",          "arith.xori",     "arith.shli",
    "arith.shrsi",        "arith.shrui",    "arith.maxsi",
    "arith.minsi",        "arith.maxui",    "arith.minui",
    "arith.cmpi",         "arith.cmpf",     "arith.select",
    "arith.index_cast",   "arith.index_castui", "arith.sitofp",
    "arith.uitofp",       "arith.fptosi",   "arith.fptoui",
    "arith.extf",         "arith.truncf",   "arith.extsi",
    "arith.extui",        "arith.trunci",   "math.absf",
    "math.absi",          "math.exp",       "math.exp2",
    "math.log",           "math.log2",      "math.log1p",
    "math.tanh",          "math.sqrt",      "math.rsqrt",
    "math.sin",           "math.cos",       "math.copysign",
    "math.powf",          "math.floor",     "math.ceil",
    "math.fma",           "math.erf",       "gpu.yield"};

static const char *read_op(enum attn_body_level level) {
  return level == ATTN_BODY_MEMREF ? "memref.load" : "tensor.extract";
}

bool attn_body_op_allowed(MlirOperation op, enum attn_body_level level) {
  if (attn_op_is(op, read_op(level)))
    return true;
  for (size_t i = 0; i < sizeof allowed_ops / sizeof *allowed_ops; ++i)
    if (attn_op_is(op, allowed_ops[i]))
      return true;
  return false;
}

int attn_body_num_args(enum attn_body_kind kind) {
  return kind == ATTN_BODY_MASK ? 4 : 5;
}

bool attn_body_is_capture(MlirBlock body, MlirValue v) {
  if (mlirValueIsABlockArgument(v))
    return !mlirBlockEqual(mlirBlockArgumentGetOwner(v), body);
  MlirBlock b = mlirOperationGetBlock(mlirOpResultGetOwner(v));
  return mlirBlockIsNull(b) || !mlirBlockEqual(b, body);
}

/// True when v is an operand of an op of body before operand i of op.
static bool used_before(MlirBlock body, MlirOperation op, intptr_t i,
                        MlirValue v) {
  for (MlirOperation o = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o)) {
    bool here = mlirOperationEqual(o, op);
    intptr_t no = here ? i : mlirOperationGetNumOperands(o);
    for (intptr_t k = 0; k < no; ++k)
      if (mlirValueEqual(mlirOperationGetOperand(o, k), v))
        return true;
    if (here)
      return false;
  }
  return false;
}

int attn_body_captures(MlirBlock body, MlirValue *out, int max) {
  int n = 0;
  if (mlirBlockIsNull(body))
    return 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    for (intptr_t i = 0, no = mlirOperationGetNumOperands(op); i < no; ++i) {
      MlirValue v = mlirOperationGetOperand(op, i);
      if (!attn_body_is_capture(body, v) || used_before(body, op, i, v))
        continue;
      if (n < max)
        out[n] = v;
      ++n;
    }
  return n;
}

/// True for the scalar types a body computes with (bf16 counted: its
/// placement is checked apart); f64 in the bodies of f64 programs (wide).
static bool is_scalar(MlirType t, bool wide) {
  if (mlirTypeIsAF32(t) || mlirTypeIsAF16(t) || mlirTypeIsABF16(t) ||
      mlirTypeIsAIndex(t) || (wide && mlirTypeIsAF64(t)))
    return true;
  if (!mlirTypeIsAInteger(t) || !mlirIntegerTypeIsSignless(t))
    return false;
  unsigned w = mlirIntegerTypeGetWidth(t);
  return w == 1 || w == 8 || w == 32 || w == 64;
}

/// True for the element types of a capture (f64 too in f64 programs).
static bool is_capture_elem(MlirType t, bool wide) {
  if (mlirTypeIsAF32(t) || mlirTypeIsAF16(t) || mlirTypeIsABF16(t) ||
      (wide && mlirTypeIsAF64(t)))
    return true;
  return mlirTypeIsAInteger(t) && mlirIntegerTypeIsSignless(t) &&
         (mlirIntegerTypeGetWidth(t) == 32 || mlirIntegerTypeGetWidth(t) == 64);
}

static const char *const scalar_list =
    "f32, f16, i1, i8, i32, i64 and index (bf16 only as a capture's "
    "element, converted with arith.extf)";
static const char *const scalar_list_wide =
    "f64, f32, f16, i1, i8, i32, i64 and index (bf16 only as a capture's "
    "element, converted with arith.extf)";

/// Checks the capture v, read by op (the body's tensor.extract or
/// memref.load) as operand 0.
static bool check_capture(MlirOperation op, MlirValue v,
                          enum attn_body_level level, bool wide,
                          const char *what) {
  MlirType t = mlirValueGetType(v);
  char ty[128], n[64];
  bool kind_ok = level == ATTN_BODY_MEMREF ? mlirTypeIsAMemRef(t)
                                           : mlirTypeIsARankedTensor(t);
  int64_t dims[8];
  int rank = kind_ok ? attn_static_shape(t, dims) : -1;
  if (rank < 1)
    return attn_emit_errorf(
        op,
        "'%s' in the body of %s reads %s; a capture must be a statically "
        "shaped %s of rank 1 to 8",
        attn_op_name(op, n, sizeof n), what, attn_type_str(t, ty, sizeof ty),
        level == ATTN_BODY_MEMREF ? "memref" : "tensor");
  for (int i = 0; i < rank; ++i)
    if (dims[i] <= 0)
      return attn_emit_errorf(op,
                              "'%s' in the body of %s reads %s, which has "
                              "an empty dimension",
                              attn_op_name(op, n, sizeof n), what,
                              attn_type_str(t, ty, sizeof ty));
  MlirType e = mlirShapedTypeGetElementType(t);
  if (!is_capture_elem(e, wide))
    return attn_emit_errorf(op,
                            "'%s' in the body of %s reads %s; a capture's "
                            "element type must be %s, i32 or i64",
                            attn_op_name(op, n, sizeof n), what,
                            attn_type_str(t, ty, sizeof ty),
                            wide ? "f64, f32, f16, bf16" : "f32, f16, bf16");
  return true;
}

/// Checks the read op's indices that are constants of the body against the
/// capture's shape.
static bool check_constant_indices(MlirOperation op, MlirBlock body,
                                   const char *what) {
  MlirType t = mlirValueGetType(mlirOperationGetOperand(op, 0));
  int64_t dims[8];
  char ty[128], n[64];
  int rank = attn_static_shape(t, dims);
  for (intptr_t i = 1, no = mlirOperationGetNumOperands(op); i < no; ++i) {
    MlirValue x = mlirOperationGetOperand(op, i);
    if (!mlirValueIsAOpResult(x) || attn_body_is_capture(body, x))
      continue;
    MlirOperation d = mlirOpResultGetOwner(x);
    MlirAttribute a = attn_attr_get(d, "value");
    if (!attn_op_is(d, "arith.constant") || mlirAttributeIsNull(a) ||
        !mlirAttributeIsAInteger(a))
      continue;
    int64_t c = mlirIntegerAttrGetValueInt(a);
    if (i - 1 < rank && (c < 0 || c >= dims[i - 1]))
      return attn_emit_errorf(op,
                              "'%s' in the body of %s reads index %lld of "
                              "dimension %ld of %s, outside [0, %lld)",
                              attn_op_name(op, n, sizeof n), what,
                              (long long)c, (long)(i - 1),
                              attn_type_str(t, ty, sizeof ty),
                              (long long)dims[i - 1]);
  }
  return true;
}

/// Checks one value's type: a scalar of the list, bf16 only as the result
/// of the read (result) or an operand of arith.extf (!result).
static bool check_value_type(MlirOperation op, MlirType t, bool result,
                             enum attn_body_level level, bool wide,
                             const char *what) {
  char ty[64], n[64];
  attn_op_name(op, n, sizeof n);
  if (!is_scalar(t, wide))
    return attn_emit_errorf(op,
                            "'%s' in the body of %s %s a value of type %s; "
                            "bodies compute with %s",
                            n, what, result ? "makes" : "uses",
                            attn_type_str(t, ty, sizeof ty),
                            wide ? scalar_list_wide : scalar_list);
  if (!mlirTypeIsABF16(t))
    return true;
  if (result ? attn_op_is(op, read_op(level))
             : attn_op_is(op, "arith.extf"))
    return true;
  return attn_emit_errorf(op,
                          "'%s' in the body of %s %s a bf16 value; bf16 is "
                          "only a capture's element, read and converted with "
                          "arith.extf",
                          n, what, result ? "makes" : "uses");
}

/// Checks one op of the body (not its terminator's type: the caller does).
static bool check_op(MlirOperation op, MlirBlock body,
                     enum attn_body_level level, bool wide, const char *what) {
  char n[64];
  attn_op_name(op, n, sizeof n);
  if (!attn_body_op_allowed(op, level))
    return attn_emit_errorf(op,
                            "'%s' cannot appear in the body of %s (allowed: "
                            "arith.constant, scalar arith and math ops, %s "
                            "of a capture, gpu.yield)",
                            n, what, read_op(level));
  bool reads = attn_op_is(op, read_op(level));
  for (intptr_t i = 0, no = mlirOperationGetNumOperands(op); i < no; ++i) {
    MlirValue v = mlirOperationGetOperand(op, i);
    // The read's source: a capture, or a value of a body op, whose own
    // (non-scalar) result type was rejected before.
    if (reads && i == 0 && attn_body_is_capture(body, v)) {
      if (!check_capture(op, v, level, wide, what))
        return false;
      continue;
    }
    if (attn_body_is_capture(body, v)) {
      char ty[128];
      return attn_emit_errorf(op,
                              "'%s' in the body of %s uses a value of type "
                              "%s defined outside the body; bodies read "
                              "values from above only as captures, with %s",
                              n, what,
                              attn_type_str(mlirValueGetType(v), ty,
                                            sizeof ty),
                              read_op(level));
    }
    if (!check_value_type(op, mlirValueGetType(v), false, level, wide, what))
      return false;
  }
  for (intptr_t i = 0, nr = mlirOperationGetNumResults(op); i < nr; ++i)
    if (!check_value_type(op, mlirValueGetType(mlirOperationGetResult(op, i)),
                          true, level, wide, what))
      return false;
  return !reads || check_constant_indices(op, body, what);
}

bool attn_body_verify(MlirOperation op, MlirRegion region,
                      enum attn_body_kind kind, enum attn_body_level level,
                      MlirType ftype, const char *what) {
  if (mlirRegionIsNull(region))
    return attn_emit_errorf(op, "%s needs a body region", what);
  MlirBlock body = mlirRegionGetFirstBlock(region);
  char ty[64];
  bool score = kind != ATTN_BODY_MASK;
  bool indices = kind == ATTN_BODY_CAPTURE_GRAD; // yields f, index, ...
  bool wide = mlirTypeIsAF64(ftype);
  const char *fname = wide ? "f64" : "f32";
  const char *sig =
      !score ? "(index b, index h, index q, index kv)"
      : wide ? "(f64 score, index b, index h, index q, index kv)"
             : "(f32 score, index b, index h, index q, index kv)";
  if (mlirBlockIsNull(body))
    return attn_emit_errorf(op, "%s needs a body: one block %s ending in "
                                "gpu.yield of %s",
                            what, sig, score ? fname : "i1");
  if (!mlirBlockIsNull(mlirBlockGetNextInRegion(body)))
    return attn_emit_errorf(op, "the body of %s must be one block", what);
  intptr_t nargs = mlirBlockGetNumArguments(body);
  bool args_ok = nargs == attn_body_num_args(kind);
  for (intptr_t i = 0; args_ok && i < nargs; ++i) {
    MlirType t = mlirValueGetType(mlirBlockGetArgument(body, i));
    args_ok = score && i == 0 ? mlirTypeEqual(t, ftype) : mlirTypeIsAIndex(t);
  }
  if (!args_ok) {
    char found[160] = "(";
    for (intptr_t i = 0; i < nargs; ++i) {
      size_t l = strlen(found);
      snprintf(found + l, sizeof found - l, "%s%s", i ? ", " : "",
               attn_type_str(mlirValueGetType(mlirBlockGetArgument(body, i)),
                             ty, sizeof ty));
    }
    size_t l = strlen(found);
    snprintf(found + l, sizeof found - l, ")");
    return attn_emit_errorf(op, "the body of %s must take %s, found %s", what,
                            sig, found);
  }
  MlirOperation last = {NULL};
  for (MlirOperation o = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o)) {
    if (!check_op(o, body, level, wide, what))
      return false;
    last = o;
  }
  const char *want = score ? fname : "i1";
  if (mlirOperationIsNull(last) || !attn_op_is(last, "gpu.yield"))
    return attn_emit_errorf(op, "the body of %s must end with gpu.yield of "
                                "%s",
                            what, want);
  intptr_t nyield = mlirOperationGetNumOperands(last);
  MlirType yt = nyield == 1 || (indices && nyield > 1)
                    ? mlirValueGetType(mlirOperationGetOperand(last, 0))
                    : (MlirType){NULL};
  for (intptr_t i = 1; indices && i < nyield && !mlirTypeIsNull(yt); ++i)
    if (!mlirTypeIsAIndex(mlirValueGetType(mlirOperationGetOperand(last, i))))
      yt = (MlirType){NULL};
  if (indices && mlirTypeIsNull(yt))
    return attn_emit_errorf(last, "the body of %s must yield one %s (the "
                                  "derivative), then the indices it "
                                  "accumulates at",
                            what, fname);
  bool yield_ok = !mlirTypeIsNull(yt) &&
                  (score ? mlirTypeEqual(yt, ftype)
                         : mlirTypeIsAInteger(yt) &&
                               mlirIntegerTypeGetWidth(yt) == 1);
  if (!yield_ok) {
    intptr_t ny = mlirOperationGetNumOperands(last);
    char found[96];
    if (ny == 1)
      snprintf(found, sizeof found, "a value of type %s",
               attn_type_str(yt, ty, sizeof ty));
    else
      snprintf(found, sizeof found, "%ld values", (long)ny);
    return attn_emit_errorf(last,
                            "the body of %s must yield one %s (%s), found %s",
                            what, want,
                            score ? "the new score"
                                  : "true where the key is visible",
                            found);
  }
  return true;
}
