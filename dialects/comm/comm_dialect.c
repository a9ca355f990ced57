//===- comm_dialect.c - C verifier of the comm dialect --------------------===//
//
// Checks what IRDL cannot: world sizes are positive, reductions are known,
// dims are in range, and gathered/scattered shapes agree with world_size.
//
//===----------------------------------------------------------------------===//
#include "dialects/comm/comm_dialect.h"

#include "mlir-c/BuiltinTypes.h"

#include <string.h>

static bool get_shapes(MlirOperation op, int64_t x[8], int64_t o[8],
                       int *rank) {
  char ty[128];
  MlirType xt = mlirValueGetType(mlirOperationGetOperand(op, 0));
  MlirType ot = mlirValueGetType(mlirOperationGetResult(op, 0));
  *rank = attn_static_shape(xt, x);
  if (*rank < 1)
    return attn_emit_errorf(op, "operand must be a static tensor of rank at "
                                "least 1, found %s",
                            attn_type_str(xt, ty, sizeof ty));
  if (attn_static_shape(ot, o) != *rank)
    return attn_emit_errorf(op, "result must be a static tensor of rank %d, "
                                "found %s",
                            *rank, attn_type_str(ot, ty, sizeof ty));
  if (!mlirTypeEqual(mlirShapedTypeGetElementType(xt),
                     mlirShapedTypeGetElementType(ot)))
    return attn_emit_errorf(op, "operand and result element types differ");
  return true;
}

static bool check_reduction(MlirOperation op) {
  MlirStringRef r;
  if (!attn_attr_str(op, "reduction", &r))
    return true; // IRDL reports a missing attribute
  if (attn_str_eq(r, "sum") || attn_str_eq(r, "max") ||
      attn_str_eq(r, "min") || attn_str_eq(r, "prod") || attn_str_eq(r, "avg"))
    return true;
  return attn_emit_errorf(op, "unknown reduction '%.*s' (expected sum, prod, "
                              "max, min or avg)",
                          (int)r.length, r.data);
}

static bool get_dim(MlirOperation op, const char *name, int rank,
                    int64_t *out) {
  bool b;
  if (attn_attr_bool(op, name, &b))
    return attn_emit_errorf(op, "%s must be an integer, found a boolean",
                            name);
  if (!attn_attr_i64(op, name, out))
    return false; // IRDL reports a missing attribute
  if (*out < 0 || *out >= rank)
    return attn_emit_errorf(op, "%s %lld is out of range for rank %d", name,
                            (long long)*out, rank);
  return true;
}

/// Checks o equals x except along dim, where o[dim] == x[dim] * mul / div.
static bool check_resized(MlirOperation op, const int64_t x[8],
                          const int64_t o[8], int rank, int64_t dim,
                          int64_t mul, int64_t div) {
  for (int i = 0; i < rank; ++i) {
    if (i == dim) {
      if (x[i] * mul % div != 0)
        return attn_emit_errorf(op, "dim %d of size %lld is not divisible by "
                                    "world_size %lld",
                                i, (long long)x[i], (long long)div);
      if (o[i] != x[i] * mul / div)
        return attn_emit_errorf(op, "result dim %d must be %lld, found %lld",
                                i, (long long)(x[i] * mul / div),
                                (long long)o[i]);
    } else if (o[i] != x[i]) {
      return attn_emit_errorf(op, "result dim %d must be %lld, found %lld", i,
                              (long long)x[i], (long long)o[i]);
    }
  }
  return true;
}

bool attn_comm_verify_op(MlirOperation op) {
  int64_t x[8], o[8], w, dim, cdim;
  int rank;
  bool b;
  if (attn_attr_bool(op, "world_size", &b))
    return attn_emit_errorf(op, "world_size must be an integer, found a "
                                "boolean");
  if (!attn_attr_i64(op, "world_size", &w))
    return true; // IRDL reports a missing attribute
  if (w < 1)
    return attn_emit_errorf(op, "world_size must be positive, found %lld",
                            (long long)w);
  if (!get_shapes(op, x, o, &rank) || !check_reduction(op))
    return false;
  if (attn_op_is(op, ATTN_OP_COMM_ALL_REDUCE))
    return true; // IRDL's shared constraint already makes the types equal
  if (attn_op_is(op, ATTN_OP_COMM_ALL_GATHER))
    return get_dim(op, "dim", rank, &dim) &&
           check_resized(op, x, o, rank, dim, w, 1);
  if (attn_op_is(op, ATTN_OP_COMM_REDUCE_SCATTER))
    return get_dim(op, "dim", rank, &dim) &&
           check_resized(op, x, o, rank, dim, 1, w);
  if (attn_op_is(op, ATTN_OP_COMM_ALL_TO_ALL)) {
    if (!get_dim(op, "split_dim", rank, &dim) ||
        !get_dim(op, "concat_dim", rank, &cdim))
      return false;
    if (x[dim] % w != 0)
      return attn_emit_errorf(op, "split dim %lld of size %lld is not "
                                  "divisible by world_size %lld",
                              (long long)dim, (long long)x[dim], (long long)w);
    if (dim == cdim)
      return check_resized(op, x, o, rank, dim, 1, 1);
    int64_t mid[8];
    memcpy(mid, x, sizeof mid);
    mid[dim] = x[dim] / w;
    return check_resized(op, mid, o, rank, cdim, w, 1);
  }
  return true;
}
