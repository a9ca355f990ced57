//===- dialect_util.c - Diagnostics, attribute and type readers -----------===//
#include "dialects/dialects.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Diagnostics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool emit_v(MlirLocation loc, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  mlirEmitError(loc, msg);
  return false;
}

bool attn_emit_errorf(MlirOperation op, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit_v(mlirOperationGetLocation(op), fmt, ap);
  va_end(ap);
  return false;
}

bool attn_emit_error_atf(MlirLocation loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit_v(loc, fmt, ap);
  va_end(ap);
  return false;
}

bool attn_op_is(MlirOperation op, const char *name) {
  return attn_str_eq(mlirIdentifierStr(mlirOperationGetName(op)), name);
}

bool attn_str_eq(MlirStringRef s, const char *lit) {
  size_t n = strlen(lit);
  return s.length == n && memcmp(s.data, lit, n) == 0;
}

MlirAttribute attn_attr_get(MlirOperation op, const char *name) {
  return mlirOperationGetAttributeByName(op,
                                         mlirStringRefCreateFromCString(name));
}

char *attn_op_name(MlirOperation op, char *buf, size_t len) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  snprintf(buf, len, "%.*s", (int)n.length, n.data);
  return buf;
}

bool attn_attr_f64(MlirOperation op, const char *name, double *out) {
  MlirAttribute a = attn_attr_get(op, name);
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAFloat(a))
    return false;
  *out = mlirFloatAttrGetValueDouble(a);
  return true;
}

bool attn_attr_i64(MlirOperation op, const char *name, int64_t *out) {
  MlirAttribute a = attn_attr_get(op, name);
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a) ||
      mlirAttributeIsABool(a))
    return false;
  *out = mlirIntegerAttrGetValueInt(a);
  return true;
}

bool attn_attr_bool(MlirOperation op, const char *name, bool *out) {
  MlirAttribute a = attn_attr_get(op, name);
  if (mlirAttributeIsNull(a) || !mlirAttributeIsABool(a))
    return false;
  *out = mlirBoolAttrGetValue(a);
  return true;
}

bool attn_attr_str(MlirOperation op, const char *name, MlirStringRef *out) {
  MlirAttribute a = attn_attr_get(op, name);
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a))
    return false;
  *out = mlirStringAttrGetValue(a);
  return true;
}

bool attn_has_symbol(MlirOperation op, const char *name) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  for (MlirOperation o = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o)) {
    MlirStringRef s;
    if (attn_attr_str(o, "sym_name", &s) && attn_str_eq(s, name))
      return true;
  }
  return false;
}

int attn_static_shape(MlirType t, int64_t dims[8]) {
  if (!mlirTypeIsAShaped(t) || !mlirShapedTypeHasRank(t) ||
      !mlirShapedTypeHasStaticShape(t))
    return -1;
  int64_t rank = mlirShapedTypeGetRank(t);
  if (rank > 8)
    return -1;
  for (int64_t i = 0; i < rank; ++i)
    dims[i] = mlirShapedTypeGetDimSize(t, i);
  return (int)rank;
}

bool attn_static_bytes(MlirType t, int64_t *bytes) {
  int64_t dims[8];
  int rank = attn_static_shape(t, dims);
  if (rank < 0)
    return false;
  MlirType e = mlirShapedTypeGetElementType(t);
  int64_t bits = -1;
  if (mlirTypeIsAInteger(e))
    bits = (int64_t)mlirIntegerTypeGetWidth(e);
  else if (mlirTypeIsAIndex(e))
    bits = 64;
  else if (mlirTypeIsAFloat(e))
    bits = (int64_t)mlirFloatTypeGetWidth(e);
  if (bits < 0)
    return false;
  int64_t n = (bits + 7) / 8;
  for (int i = 0; i < rank; ++i)
    if (dims[i] < 0 || __builtin_mul_overflow(n, dims[i], &n))
      return false;
  *bytes = n;
  return true;
}

bool attn_check_static_bytes(MlirOperation op, MlirType t, const char *what) {
  int64_t bytes;
  if (attn_static_bytes(t, &bytes))
    return true;
  char ty[128];
  return attn_emit_errorf(op,
                          "%s has more than 2^63 - 1 bytes (%s): too large "
                          "for 64-bit indexing",
                          what, attn_type_str(t, ty, sizeof ty));
}

struct str_sink {
  char *buf;
  size_t len, used;
};

static void sink_append(MlirStringRef s, void *user) {
  struct str_sink *k = user;
  size_t room = k->len - 1 - k->used;
  size_t n = s.length < room ? s.length : room;
  memcpy(k->buf + k->used, s.data, n);
  k->used += n;
  k->buf[k->used] = '\0';
}

MlirType attn_compute_type(MlirType elem) {
  return mlirTypeIsAF64(elem) ? elem
                              : mlirF32TypeGet(mlirTypeGetContext(elem));
}

char *attn_type_str(MlirType t, char *buf, size_t len) {
  struct str_sink k = {buf, len, 0};
  if (len == 0)
    return buf;
  buf[0] = '\0';
  mlirTypePrint(t, sink_append, &k);
  return buf;
}

char *attn_attribute_str(MlirAttribute a, char *buf, size_t len) {
  struct str_sink k = {buf, len, 0};
  if (len == 0)
    return buf;
  buf[0] = '\0';
  mlirAttributePrint(a, sink_append, &k);
  return buf;
}
