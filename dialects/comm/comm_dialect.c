//===- comm_dialect.c - C verifier and readers of the comm dialect --------===//
//
// Checks what IRDL cannot. Collectives: world sizes are positive, reductions
// are known, dims are in range, gathered/scattered shapes agree with
// world_size, and world_size agrees with the topology. Schedule ops: tiles and
// buffers are static rank-2 memrefs of one element type and the tile fits,
// flags are rank-1 integer memrefs, flag values are non-negative, the peer is
// given once and lies in [0, world size). comm.fused_matmul: a known pattern
// and split, positive SM counts within gpu_sms, reduction and dim as the
// pattern needs, predicted_us complete, shapes as the pattern implies. The
// comm.topology dictionary is checked on whatever op carries it.
//
//===----------------------------------------------------------------------===//
#include "dialects/comm/comm_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static bool is_int_attr(MlirAttribute a) {
  return !mlirAttributeIsNull(a) && mlirAttributeIsAInteger(a) &&
         !mlirAttributeIsABool(a);
}

/// Reads v when it is defined by an arith.constant of integer or index type.
static bool const_index(MlirValue v, int64_t *out) {
  if (!mlirValueIsAOpResult(v))
    return false;
  MlirOperation def = mlirOpResultGetOwner(v);
  if (!attn_op_is(def, "arith.constant"))
    return false;
  MlirAttribute a = attn_attr_get(def, "value");
  if (!is_int_attr(a))
    return false;
  *out = mlirIntegerAttrGetValueInt(a);
  return true;
}

//===-- Topology ----------------------------------------------------------===//

static const char *const topology_keys[4] = {
    ATTN_COMM_TOPOLOGY_GPUS_PER_NODE, ATTN_COMM_TOPOLOGY_NODES,
    ATTN_COMM_TOPOLOGY_NVLINK_GBPS, ATTN_COMM_TOPOLOGY_NET_GBPS};

/// Reads a topology dictionary; when report is not null, says why it is
/// malformed at that op.
static bool read_topology(MlirAttribute a, struct attn_comm_topology *out,
                          MlirOperation *report) {
  char s[256];
  int64_t v[4];
  if (!mlirAttributeIsADictionary(a))
    return report && attn_emit_errorf(*report, "comm.topology must be a "
                                               "dictionary, found %s",
                                      attn_attribute_str(a, s, sizeof s));
  for (intptr_t i = 0, n = mlirDictionaryAttrGetNumElements(a); i < n; ++i) {
    MlirStringRef key =
        mlirIdentifierStr(mlirDictionaryAttrGetElement(a, i).name);
    int k = 0;
    while (k < 4 && !attn_str_eq(key, topology_keys[k]))
      ++k;
    if (k == 4)
      return report && attn_emit_errorf(*report, "comm.topology has unknown "
                                                 "key '%.*s' (expected "
                                                 "gpus_per_node, nodes, "
                                                 "nvlink_gbps, net_gbps)",
                                        (int)key.length, key.data);
  }
  for (int k = 0; k < 4; ++k) {
    MlirAttribute e = mlirDictionaryAttrGetElementByName(
        a, mlirStringRefCreateFromCString(topology_keys[k]));
    if (mlirAttributeIsNull(e))
      return report && attn_emit_errorf(*report, "comm.topology is missing "
                                                 "'%s'",
                                        topology_keys[k]);
    if (!is_int_attr(e) || (v[k] = mlirIntegerAttrGetValueInt(e)) < 1)
      return report && attn_emit_errorf(*report, "comm.topology '%s' must be "
                                                 "a positive integer, found "
                                                 "%s",
                                        topology_keys[k],
                                        attn_attribute_str(e, s, sizeof s));
  }
  if (v[0] > INT32_MAX / v[1])
    return report && attn_emit_errorf(*report, "comm.topology describes "
                                               "%lld nodes x %lld GPUs, more "
                                               "than 2^31 - 1 ranks",
                                      (long long)v[1], (long long)v[0]);
  out->gpus_per_node = v[0];
  out->nodes = v[1];
  out->nvlink_gbps = v[2];
  out->net_gbps = v[3];
  return true;
}

bool attn_comm_topology_read(MlirAttribute attr,
                             struct attn_comm_topology *out) {
  return read_topology(attr, out, NULL);
}

int64_t attn_comm_topology_world_size(const struct attn_comm_topology *t) {
  return t->gpus_per_node * t->nodes;
}

bool attn_comm_get_topology(MlirOperation op, struct attn_comm_topology *out,
                            MlirOperation *from) {
  for (; !mlirOperationIsNull(op); op = mlirOperationGetParentOperation(op)) {
    MlirAttribute a = attn_attr_get(op, ATTN_COMM_TOPOLOGY_ATTR);
    if (mlirAttributeIsNull(a))
      continue;
    if (from)
      *from = op;
    return read_topology(a, out, NULL);
  }
  return false;
}

bool attn_comm_verify_topology(MlirOperation op) {
  struct attn_comm_topology t;
  MlirAttribute a = attn_attr_get(op, ATTN_COMM_TOPOLOGY_ATTR);
  return mlirAttributeIsNull(a) || read_topology(a, &t, &op);
}

//===-- Readers -----------------------------------------------------------===//

static const char *const reduction_names[5] = {"sum", "prod", "max", "min",
                                               "avg"};

int attn_comm_get_reduction(MlirOperation op) {
  MlirStringRef r;
  if (!attn_attr_str(op, "reduction", &r))
    return -1;
  for (int k = 0; k < 5; ++k)
    if (attn_str_eq(r, reduction_names[k]))
      return k;
  return -1;
}

static const char *const scope_names[3] = {"world", "local", "node"};

int attn_comm_get_scope(MlirOperation op) {
  MlirStringRef s;
  if (!attn_attr_str(op, "scope", &s))
    return -1;
  for (int k = 0; k < 3; ++k)
    if (attn_str_eq(s, scope_names[k]))
      return k;
  return -1;
}

/// Operands before the optional peer operand.
static intptr_t fixed_operands(MlirOperation op) {
  return attn_op_is(op, ATTN_OP_COMM_SIGNAL) ? 2 : 4;
}

bool attn_comm_get_const_peer(MlirOperation op, int64_t *peer) {
  MlirAttribute a = attn_attr_get(op, "peer");
  intptr_t fixed = fixed_operands(op);
  if (mlirOperationGetNumOperands(op) > fixed)
    return mlirAttributeIsNull(a) &&
           const_index(mlirOperationGetOperand(op, fixed), peer);
  if (!is_int_attr(a))
    return false;
  *peer = mlirIntegerAttrGetValueInt(a);
  return true;
}

//===-- Schedule ops ------------------------------------------------------===//

/// Reads operand i as a static rank-2 memref.
static bool rank2(MlirOperation op, int i, const char *what, int64_t d[8]) {
  MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
  char ty[128];
  if (attn_static_shape(t, d) != 2)
    return attn_emit_errorf(op, "%s must be a static rank-2 memref, found %s",
                            what, attn_type_str(t, ty, sizeof ty));
  return true;
}

static void offset_str(bool known, int64_t v, char *buf, size_t len) {
  if (known)
    snprintf(buf, len, "%lld", (long long)v);
  else
    snprintf(buf, len, "?");
}

/// Checks the tile (operand tile) lies inside the buffer (operand buf) at
/// the offsets of operands 2 and 3 (checked when they are constants).
static bool verify_tile_in_buffer(MlirOperation op, int tile,
                                  const char *tile_name, int buf,
                                  const char *buf_name) {
  int64_t t[8], b[8], off[2] = {0, 0};
  bool known[2];
  char s1[64], s2[64];
  if (!rank2(op, tile, tile_name, t) || !rank2(op, buf, buf_name, b))
    return false;
  MlirType te = mlirShapedTypeGetElementType(
      mlirValueGetType(mlirOperationGetOperand(op, tile)));
  MlirType be = mlirShapedTypeGetElementType(
      mlirValueGetType(mlirOperationGetOperand(op, buf)));
  if (!mlirTypeEqual(te, be))
    return attn_emit_errorf(op, "%s and %s element types differ: %s vs %s",
                            tile_name, buf_name,
                            attn_type_str(te, s1, sizeof s1),
                            attn_type_str(be, s2, sizeof s2));
  for (int k = 0; k < 2; ++k) {
    known[k] = const_index(mlirOperationGetOperand(op, 2 + k), &off[k]);
    if (known[k] && off[k] < 0)
      return attn_emit_errorf(op, "%s offset %lld is negative",
                              k == 0 ? "row" : "col", (long long)off[k]);
  }
  // Subtract: a huge constant offset must not overflow the addition.
  if (t[0] <= b[0] && t[1] <= b[1] && off[0] <= b[0] - t[0] &&
      off[1] <= b[1] - t[1])
    return true;
  if (!known[0] && !known[1])
    return attn_emit_errorf(op, "%s of %lldx%lld does not fit in %s of "
                                "%lldx%lld",
                            tile_name, (long long)t[0], (long long)t[1],
                            buf_name, (long long)b[0], (long long)b[1]);
  offset_str(known[0], off[0], s1, sizeof s1);
  offset_str(known[1], off[1], s2, sizeof s2);
  return attn_emit_errorf(op, "%s of %lldx%lld at (%s, %s) does not fit in "
                              "%s of %lldx%lld",
                          tile_name, (long long)t[0], (long long)t[1], s1, s2,
                          buf_name, (long long)b[0], (long long)b[1]);
}

/// The peer is given once (operand or attribute) and, when constant, lies in
/// [0, world size of the nearest topology).
static bool verify_peer(MlirOperation op) {
  MlirAttribute a = attn_attr_get(op, "peer");
  bool has_operand = mlirOperationGetNumOperands(op) > fixed_operands(op);
  bool has_attr = !mlirAttributeIsNull(a);
  struct attn_comm_topology t;
  int64_t p;
  char s[128];
  if (has_operand && has_attr)
    return attn_emit_errorf(op, "peer is given twice, as an operand and as "
                                "an attribute");
  if (!has_operand && !has_attr)
    return attn_emit_errorf(op, "peer is missing: give an index operand or "
                                "an integer attribute 'peer'");
  if (has_attr && !is_int_attr(a))
    return attn_emit_errorf(op, "peer must be an integer, found %s",
                            attn_attribute_str(a, s, sizeof s));
  if (!attn_comm_get_const_peer(op, &p))
    return true;
  if (p < 0)
    return attn_emit_errorf(op, "peer must be non-negative, found %lld",
                            (long long)p);
  if (attn_comm_get_topology(op, &t, NULL) &&
      p >= attn_comm_topology_world_size(&t))
    return attn_emit_errorf(op, "peer %lld is out of range for world size "
                                "%lld",
                            (long long)p,
                            (long long)attn_comm_topology_world_size(&t));
  return true;
}

/// flags (operand 0) is a static rank-1 memref of i32 or i64; a constant
/// index (operand 1) is in range; "value" is a non-negative integer that
/// fits the flag width.
static bool verify_flag_op(MlirOperation op) {
  MlirType t = mlirValueGetType(mlirOperationGetOperand(op, 0));
  int64_t d[8], idx, v;
  unsigned width = 0;
  bool b;
  char ty[128];
  if (attn_static_shape(t, d) == 1) {
    MlirType e = mlirShapedTypeGetElementType(t);
    if (mlirTypeIsAInteger(e))
      width = mlirIntegerTypeGetWidth(e);
  }
  if (width != 32 && width != 64)
    return attn_emit_errorf(op, "flags must be a static rank-1 memref of i32 "
                                "or i64, found %s",
                            attn_type_str(t, ty, sizeof ty));
  if (const_index(mlirOperationGetOperand(op, 1), &idx) &&
      (idx < 0 || idx >= d[0]))
    return attn_emit_errorf(op, "flag index %lld is out of range for %lld "
                                "flags",
                            (long long)idx, (long long)d[0]);
  if (attn_attr_bool(op, "value", &b))
    return attn_emit_errorf(op, "value must be an integer, found a boolean");
  if (!attn_attr_i64(op, "value", &v))
    return true; // IRDL reports a missing attribute
  if (v < 0)
    return attn_emit_errorf(op, "value must be non-negative, found %lld",
                            (long long)v);
  if (width == 32 && v > INT32_MAX)
    return attn_emit_errorf(op, "value %lld does not fit in i32 flags",
                            (long long)v);
  return true;
}

static bool verify_scope(MlirOperation op, bool allow_node) {
  MlirStringRef s;
  if (!attn_attr_str(op, "scope", &s))
    return true; // IRDL reports a missing attribute
  int k = attn_comm_get_scope(op);
  if (k >= 0 && (allow_node || k != ATTN_COMM_SCOPE_NODE))
    return true;
  return attn_emit_errorf(op, allow_node ? "scope must be \"world\", "
                                           "\"local\" or \"node\", found "
                                           "'%.*s'"
                                         : "barrier scope must be "
                                           "\"world\" or \"local\", found "
                                           "'%.*s'",
                          (int)s.length, s.data);
}

static bool verify_schedule_op(MlirOperation op) {
  if (attn_op_is(op, ATTN_OP_COMM_RANK) ||
      attn_op_is(op, ATTN_OP_COMM_WORLD_SIZE))
    return verify_scope(op, true);
  if (attn_op_is(op, ATTN_OP_COMM_BARRIER))
    return verify_scope(op, false);
  if (attn_op_is(op, ATTN_OP_COMM_PUT))
    return verify_tile_in_buffer(op, 0, "tile", 1, "dest") && verify_peer(op);
  if (attn_op_is(op, ATTN_OP_COMM_GET))
    return verify_tile_in_buffer(op, 0, "tile", 1, "source") &&
           verify_peer(op);
  if (attn_op_is(op, ATTN_OP_COMM_SIGNAL)) {
    MlirStringRef m;
    if (attn_attr_str(op, "mode", &m) && !attn_str_eq(m, "set") &&
        !attn_str_eq(m, "add"))
      return attn_emit_errorf(op, "mode must be \"set\" or \"add\", found "
                                  "'%.*s'",
                              (int)m.length, m.data);
    return verify_flag_op(op) && verify_peer(op);
  }
  if (attn_op_is(op, ATTN_OP_COMM_WAIT))
    return verify_flag_op(op);
  if (attn_op_is(op, ATTN_OP_COMM_REDUCE)) {
    MlirStringRef r;
    int k = attn_comm_get_reduction(op);
    if (attn_attr_str(op, "reduction", &r) &&
        (k < 0 || k == ATTN_COMM_REDUCE_AVG))
      return attn_emit_errorf(op, "unknown reduction '%.*s' (expected sum, "
                                  "prod, max or min)",
                              (int)r.length, r.data);
    return verify_tile_in_buffer(op, 1, "acc", 0, "source");
  }
  return true;
}

//===-- Collectives -------------------------------------------------------===//

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
  return attn_check_static_bytes(op, xt, "operand") &&
         attn_check_static_bytes(op, ot, "result");
}

static bool check_reduction(MlirOperation op) {
  MlirStringRef r;
  if (!attn_attr_str(op, "reduction", &r))
    return true; // IRDL reports a missing attribute
  if (attn_comm_get_reduction(op) >= 0)
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
      int64_t scaled;
      if (__builtin_mul_overflow(x[i], mul, &scaled))
        return attn_emit_errorf(op, "dim %d of size %lld times world_size "
                                    "%lld overflows i64",
                                i, (long long)x[i], (long long)mul);
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

/// A collective's world_size equals the ranks of its own comm.topology and
/// does not exceed those of an enclosing one (a collective over a group).
static bool check_world_size_topology(MlirOperation op, int64_t w) {
  struct attn_comm_topology t;
  MlirOperation from;
  if (!attn_comm_get_topology(op, &t, &from))
    return true;
  int64_t tw = attn_comm_topology_world_size(&t);
  if (mlirOperationEqual(from, op) && w != tw)
    return attn_emit_errorf(op, "world_size %lld does not match comm.topology "
                                "of %lld nodes x %lld GPUs per node",
                            (long long)w, (long long)t.nodes,
                            (long long)t.gpus_per_node);
  if (w > tw)
    return attn_emit_errorf(op, "world_size %lld exceeds the %lld ranks of "
                                "the enclosing comm.topology",
                            (long long)w, (long long)tw);
  return true;
}

//===-- comm.fused_matmul -------------------------------------------------===//

static const char *const fused_pattern_names[3] = {
    "matmul_all_reduce", "all_gather_matmul", "matmul_reduce_scatter"};

const char *attn_comm_fused_pattern_name(enum attn_comm_fused_pattern p) {
  return (unsigned)p < 3 ? fused_pattern_names[p] : "?";
}

int attn_comm_get_fused_pattern(MlirOperation op) {
  MlirStringRef s;
  if (!attn_attr_str(op, "pattern", &s))
    return -1;
  for (int k = 0; k < 3; ++k)
    if (attn_str_eq(s, fused_pattern_names[k]))
      return k;
  return -1;
}

/// Reads the integer attribute name (present: IRDL checked) into *v and
/// checks it is at least lo.
static bool get_int_at_least(MlirOperation op, const char *name, int64_t lo,
                             int64_t *v) {
  bool b;
  if (attn_attr_bool(op, name, &b))
    return attn_emit_errorf(op, "%s must be an integer, found a boolean",
                            name);
  if (!attn_attr_i64(op, name, v))
    return attn_emit_errorf(op, "%s is missing", name);
  if (*v < lo)
    return attn_emit_errorf(op, "%s must be at least %lld, found %lld", name,
                            (long long)lo, (long long)*v);
  return true;
}

/// predicted_us is {sequential, fused, lower_bound}, each a float >= 0.
static bool verify_predicted(MlirOperation op) {
  static const char *const keys[3] = {"sequential", "fused", "lower_bound"};
  MlirAttribute d = attn_attr_get(op, "predicted_us");
  char s[128];
  if (mlirAttributeIsNull(d) || !mlirAttributeIsADictionary(d))
    return true; // IRDL reports it
  if (mlirDictionaryAttrGetNumElements(d) != 3)
    return attn_emit_errorf(op, "predicted_us must have exactly the keys "
                                "sequential, fused and lower_bound");
  for (int k = 0; k < 3; ++k) {
    MlirAttribute e = mlirDictionaryAttrGetElementByName(
        d, mlirStringRefCreateFromCString(keys[k]));
    if (mlirAttributeIsNull(e))
      return attn_emit_errorf(op, "predicted_us is missing '%s'", keys[k]);
    if (!mlirAttributeIsAFloat(e) || !(mlirFloatAttrGetValueDouble(e) >= 0))
      return attn_emit_errorf(op, "predicted_us '%s' must be a non-negative "
                                  "float, found %s",
                              keys[k], attn_attribute_str(e, s, sizeof s));
  }
  return true;
}

/// The operands and result are static rank-2 tensors of one element type
/// shaped as the pattern says (M x K, K x N, init M x N; the all_gather's
/// a is one rank's M / world_size rows, the reduce_scatter's result keeps
/// M / world_size rows).
static bool verify_fused_shapes(MlirOperation op, int pattern, int64_t w) {
  int64_t d[4][8];
  char ty[128];
  static const char *const what[4] = {"a", "b", "init", "result"};
  MlirType elem = {NULL};
  for (int i = 0; i < 4; ++i) {
    MlirType t = i < 3 ? mlirValueGetType(mlirOperationGetOperand(op, i))
                       : mlirValueGetType(mlirOperationGetResult(op, 0));
    if (attn_static_shape(t, d[i]) != 2 || !mlirTypeIsARankedTensor(t))
      return attn_emit_errorf(op, "%s must be a static rank-2 tensor, found "
                                  "%s",
                              what[i], attn_type_str(t, ty, sizeof ty));
    if (!attn_check_static_bytes(op, t, what[i]))
      return false;
    MlirType e = mlirShapedTypeGetElementType(t);
    if (i == 0)
      elem = e;
    else if (!mlirTypeEqual(e, elem))
      return attn_emit_errorf(op, "%s element type %s differs from a's",
                              what[i], attn_type_str(e, ty, sizeof ty));
  }
  int64_t m = d[0][0], k = d[0][1], n = d[1][1];
  if (d[1][0] != k)
    return attn_emit_errorf(op, "b must have %lld rows (a's columns), found "
                                "%lld",
                            (long long)k, (long long)d[1][0]);
  if (pattern == ATTN_COMM_FUSED_ALL_GATHER_MATMUL) {
    if (m > INT64_MAX / w)
      return attn_emit_errorf(op, "gathered rows overflow");
    m *= w; // a is one rank's shard
  }
  if (d[2][0] != m || d[2][1] != n)
    return attn_emit_errorf(op, "init must be %lldx%lld, found %lldx%lld",
                            (long long)m, (long long)n, (long long)d[2][0],
                            (long long)d[2][1]);
  int64_t rows = m;
  if (pattern == ATTN_COMM_FUSED_MATMUL_REDUCE_SCATTER) {
    if (m % w != 0)
      return attn_emit_errorf(op, "rows %lld are not divisible by world_size "
                                  "%lld",
                              (long long)m, (long long)w);
    rows = m / w;
  }
  if (d[3][0] != rows || d[3][1] != n)
    return attn_emit_errorf(op, "result must be %lldx%lld, found %lldx%lld",
                            (long long)rows, (long long)n, (long long)d[3][0],
                            (long long)d[3][1]);
  return true;
}

static bool verify_fused_matmul(MlirOperation op) {
  MlirStringRef s;
  int64_t w, comm, compute, total, tm, tn, dim;
  int p = attn_comm_get_fused_pattern(op);
  if (!attn_attr_str(op, "pattern", &s))
    return true; // IRDL reports a missing attribute
  if (p < 0)
    return attn_emit_errorf(op, "unknown pattern '%.*s' (expected "
                                "matmul_all_reduce, all_gather_matmul or "
                                "matmul_reduce_scatter)",
                            (int)s.length, s.data);
  if (attn_attr_str(op, "split", &s) && !attn_str_eq(s, "static") &&
      !attn_str_eq(s, "adaptive"))
    return attn_emit_errorf(op, "split must be \"static\" or \"adaptive\", "
                                "found '%.*s'",
                            (int)s.length, s.data);
  if (!get_int_at_least(op, "world_size", 1, &w) ||
      !check_world_size_topology(op, w) ||
      !get_int_at_least(op, "comm_sms", 1, &comm) ||
      !get_int_at_least(op, "compute_sms", 1, &compute) ||
      !get_int_at_least(op, "gpu_sms", 2, &total) ||
      !get_int_at_least(op, "tile_m", 1, &tm) ||
      !get_int_at_least(op, "tile_n", 1, &tn))
    return false;
  if (comm > total - compute)
    return attn_emit_errorf(op, "comm_sms %lld + compute_sms %lld exceed the "
                                "GPU's %lld SMs",
                            (long long)comm, (long long)compute,
                            (long long)total);
  bool reduces = p != ATTN_COMM_FUSED_ALL_GATHER_MATMUL;
  bool has_dim = p != ATTN_COMM_FUSED_MATMUL_ALL_REDUCE;
  bool has_reduction = !mlirAttributeIsNull(attn_attr_get(op, "reduction"));
  if (reduces && !has_reduction)
    return attn_emit_errorf(op, "pattern '%s' needs a reduction",
                            fused_pattern_names[p]);
  if (!reduces && has_reduction)
    return attn_emit_errorf(op, "pattern '%s' takes no reduction",
                            fused_pattern_names[p]);
  if (reduces) {
    if (!attn_attr_str(op, "reduction", &s))
      return attn_emit_errorf(op, "reduction must be a string");
    if (!check_reduction(op))
      return false;
  }
  if (has_dim != !mlirAttributeIsNull(attn_attr_get(op, "dim")))
    return attn_emit_errorf(op, has_dim ? "pattern '%s' needs dim = 0"
                                        : "pattern '%s' takes no dim",
                            fused_pattern_names[p]);
  if (has_dim) {
    if (!get_int_at_least(op, "dim", 0, &dim))
      return false;
    if (dim != 0)
      return attn_emit_errorf(op, "dim must be 0 (rows), found %lld",
                              (long long)dim);
  }
  return verify_predicted(op) && verify_fused_shapes(op, p, w);
}

bool attn_comm_verify_op(MlirOperation op) {
  int64_t x[8], o[8], w, dim, cdim;
  int rank;
  bool b;
  if (attn_op_is(op, ATTN_OP_COMM_FUSED_MATMUL))
    return verify_fused_matmul(op);
  if (!attn_op_is(op, ATTN_OP_COMM_ALL_REDUCE) &&
      !attn_op_is(op, ATTN_OP_COMM_ALL_GATHER) &&
      !attn_op_is(op, ATTN_OP_COMM_REDUCE_SCATTER) &&
      !attn_op_is(op, ATTN_OP_COMM_ALL_TO_ALL))
    return verify_schedule_op(op);
  if (attn_attr_bool(op, "world_size", &b))
    return attn_emit_errorf(op, "world_size must be an integer, found a "
                                "boolean");
  if (!attn_attr_i64(op, "world_size", &w))
    return true; // IRDL reports a missing attribute
  if (w < 1)
    return attn_emit_errorf(op, "world_size must be positive, found %lld",
                            (long long)w);
  if (!check_world_size_topology(op, w) || !get_shapes(op, x, o, &rank) ||
      !check_reduction(op))
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
