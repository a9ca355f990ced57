//===- attnrt_tensormap.c - Tensor map parameters of the manifest ---------===//
//
// Reads and checks the "tensormap" parameters of a manifest's kernels (dtype,
// dims, box, strides, swizzle against cuTensorMapEncodeTiled's limits) and
// maps their dtypes to the driver's CUtensorMapDataType.

#include "attnrt_internal.h"

#include <cjson/cJSON.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

// Element types a tensormap may name. TMA copies bytes, so the 1-byte float
// formats travel as UINT8, as in CUTLASS and Triton.
static const struct {
  const char *name;
  CUtensorMapDataType type;
  unsigned bytes;
} tensormap_dtypes[] = {
    {"u8", CU_TENSOR_MAP_DATA_TYPE_UINT8, 1},
    {"i8", CU_TENSOR_MAP_DATA_TYPE_UINT8, 1},
    {"f8e4m3", CU_TENSOR_MAP_DATA_TYPE_UINT8, 1},
    {"f8e5m2", CU_TENSOR_MAP_DATA_TYPE_UINT8, 1},
    {"u16", CU_TENSOR_MAP_DATA_TYPE_UINT16, 2},
    {"i16", CU_TENSOR_MAP_DATA_TYPE_UINT16, 2},
    {"f16", CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2},
    {"bf16", CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2},
    {"u32", CU_TENSOR_MAP_DATA_TYPE_UINT32, 4},
    {"i32", CU_TENSOR_MAP_DATA_TYPE_INT32, 4},
    {"f32", CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4},
    {"tf32", CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, 4},
    {"u64", CU_TENSOR_MAP_DATA_TYPE_UINT64, 8},
    {"i64", CU_TENSOR_MAP_DATA_TYPE_INT64, 8},
    {"f64", CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 8},
};

/// Returns the index of dtype in tensormap_dtypes, or -1.
static int find_tensormap_dtype(const char *dtype) {
  size_t n = sizeof tensormap_dtypes / sizeof tensormap_dtypes[0];
  for (size_t i = 0; dtype && i < n; ++i)
    if (strcmp(tensormap_dtypes[i].name, dtype) == 0)
      return (int)i;
  return -1;
}

bool attnrt_tensormap_data_type(const char *dtype, CUtensorMapDataType *type) {
  int i = find_tensormap_dtype(dtype);
  if (i < 0)
    return false;
  *type = tensormap_dtypes[i].type;
  return true;
}

unsigned attnrt_tensormap_elem_bytes(const char *dtype) {
  int i = find_tensormap_dtype(dtype);
  return i < 0 ? 0 : tensormap_dtypes[i].bytes;
}

double attnrt_param_shape_bytes(const struct attnrt_param_info *p) {
  unsigned elem_bytes = attnrt_tensormap_elem_bytes(p->dtype);
  if (p->rank <= 0 || elem_bytes == 0)
    return 0;
  double bytes = elem_bytes;
  for (int i = 0; i < p->rank; ++i)
    bytes *= (double)p->shape[i];
  return bytes;
}

//===-- Tensor map parameters --===//
// Limits of cuTensorMapEncodeTiled.
#define MAX_TENSORMAP_DIM 4294967296.0    // 2^32
#define MAX_TENSORMAP_STRIDE 1099511627775.0 // 2^40 - 1
#define MAX_TENSORMAP_BOX 256
#define TENSORMAP_ALIGN 16

/// Records "manifest: <where>[.<field>]: tensor map '<param>' of kernel
/// '<kernel>': <message>"; field "" names the parameter itself.
static enum attnrt_status tensormap_error(const char *where, const char *field,
                                          const char *kernel, const char *param,
                                          const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static enum attnrt_status tensormap_error(const char *where, const char *field,
                                          const char *kernel, const char *param,
                                          const char *fmt, ...) {
  char path[128], msg[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (*field)
    where = attnrt_field_path(path, sizeof path, where, field);
  return attnrt_manifest_error(where, "tensor map '%s' of kernel '%s': %s",
                               param, kernel, msg);
}

/// Reads the required array obj[key] of min_len to max_len integers in
/// [lo, hi] into out, its length into *len.
static enum attnrt_status
read_tensormap_array(const cJSON *obj, const char *key, const char *where,
                     const char *kernel, const char *param, int min_len,
                     int max_len, double lo, double hi, uint64_t *out,
                     int *len) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v)
    return tensormap_error(where, "", kernel, param, "missing \"%s\"", key);
  int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1;
  if (n < min_len || n > max_len) {
    if (min_len == max_len)
      return tensormap_error(where, key, kernel, param,
                             "expected an array of %d integer%s (%s)", min_len,
                             min_len == 1 ? "" : "s",
                             strcmp(key, "box") == 0
                                 ? "the rank of \"dims\""
                                 : "one less than the rank of \"dims\"");
    return tensormap_error(where, key, kernel, param,
                           "expected an array of %d to %d integers", min_len,
                           max_len);
  }
  for (int i = 0; i < n; ++i) {
    const cJSON *d = cJSON_GetArrayItem(v, i);
    if (!attnrt_is_integer_in(d, lo, hi)) {
      if (cJSON_IsNumber(d))
        return tensormap_error(where, key, kernel, param,
                               "entry %d: expected an integer in [%.0f, %.0f], "
                               "found %.17g",
                               i, lo, hi, d->valuedouble);
      return tensormap_error(where, key, kernel, param,
                             "entry %d: expected an integer in [%.0f, %.0f]", i,
                             lo, hi);
    }
    out[i] = (uint64_t)d->valuedouble;
  }
  *len = n;
  return ATTNRT_OK;
}

enum attnrt_status attnrt_tensormap_read(const cJSON *obj, const char *where,
                                         const char *kernel,
                                         struct attnrt_param_info *p) {
  struct attnrt_tensormap_info *t = &p->tensormap;
  const char *name = p->name;
  if (!p->dtype)
    return tensormap_error(where, "", kernel, name, "missing \"dtype\"");
  int type = find_tensormap_dtype(p->dtype);
  if (type < 0)
    return tensormap_error(where, "dtype", kernel, name,
                           "expected one of u8, i8, f8e4m3, f8e5m2, u16, i16, "
                           "f16, bf16, u32, i32, f32, tf32, u64, i64, f64, "
                           "found \"%s\"",
                           p->dtype);
  t->elem_bytes = tensormap_dtypes[type].bytes;

  uint64_t values[ATTNRT_TENSORMAP_MAX_RANK];
  int n = 0;
  enum attnrt_status st = read_tensormap_array(
      obj, "dims", where, kernel, name, 1, ATTNRT_TENSORMAP_MAX_RANK, 1,
      MAX_TENSORMAP_DIM, t->dims, &t->rank);
  if (st != ATTNRT_OK)
    return st;
  st = read_tensormap_array(obj, "box", where, kernel, name, t->rank, t->rank,
                            1, MAX_TENSORMAP_BOX, values, &n);
  if (st != ATTNRT_OK)
    return st;
  for (int i = 0; i < n; ++i)
    t->box[i] = (uint32_t)values[i];

  // Strides: given, or those of the contiguous layout.
  if (cJSON_GetObjectItemCaseSensitive(obj, "strides")) {
    st = read_tensormap_array(obj, "strides", where, kernel, name,
                              t->rank - 1, t->rank - 1, TENSORMAP_ALIGN,
                              MAX_TENSORMAP_STRIDE, t->strides, &n);
    if (st != ATTNRT_OK)
      return st;
    for (int i = 0; i < n; ++i)
      if (t->strides[i] % TENSORMAP_ALIGN != 0)
        return tensormap_error(where, "strides", kernel, name,
                               "entry %d: %llu bytes is not a multiple of %d",
                               i, (unsigned long long)t->strides[i],
                               TENSORMAP_ALIGN);
  } else {
    double stride = (double)t->elem_bytes;
    for (int i = 0; i + 1 < t->rank; ++i) {
      stride *= (double)t->dims[i];
      if (stride > MAX_TENSORMAP_STRIDE)
        return tensormap_error(where, "", kernel, name,
                               "contiguous stride of dimension %d exceeds "
                               "2^40 - 1 bytes; give \"strides\"",
                               i + 1);
      t->strides[i] = (uint64_t)stride;
      if (t->strides[i] % TENSORMAP_ALIGN != 0)
        return tensormap_error(where, "", kernel, name,
                               "contiguous stride of dimension %d is %llu "
                               "bytes, not a multiple of %d; give \"strides\"",
                               i + 1, (unsigned long long)t->strides[i],
                               TENSORMAP_ALIGN);
    }
  }

  const cJSON *swizzle = cJSON_GetObjectItemCaseSensitive(obj, "swizzle");
  if (swizzle) {
    if (!attnrt_is_integer_in(swizzle, 0, 128) ||
        (swizzle->valuedouble != 0 && swizzle->valuedouble != 32 &&
         swizzle->valuedouble != 64 && swizzle->valuedouble != 128))
      return tensormap_error(where, "swizzle", kernel, name,
                             "expected 0, 32, 64 or 128 (bytes)");
    t->swizzle = (unsigned)swizzle->valuedouble;
  }

  unsigned inner = t->box[0] * t->elem_bytes;
  if (inner % TENSORMAP_ALIGN != 0)
    return tensormap_error(where, "box", kernel, name,
                           "inner box of %u %s elements is %u bytes, not a "
                           "multiple of %d",
                           t->box[0], p->dtype, inner, TENSORMAP_ALIGN);
  if (t->swizzle > 0 && inner > t->swizzle)
    return tensormap_error(where, "box", kernel, name,
                           "inner box of %u %s elements is %u bytes, more than "
                           "the %u-byte swizzle",
                           t->box[0], p->dtype, inner, t->swizzle);
  return ATTNRT_OK;
}

enum attnrt_status attnrt_tensormap_resolve(const cJSON *obj, const char *where,
                                            const struct attnrt_kernel_info *k,
                                            struct attnrt_param_info *params,
                                            size_t index) {
  struct attnrt_param_info *p = &params[index];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "tensor");
  if (!v)
    return tensormap_error(where, "", k->name, p->name, "missing \"tensor\"");
  if (!cJSON_IsString(v) || !*v->valuestring)
    return tensormap_error(where, "tensor", k->name, p->name,
                           "expected the name of a ptr parameter");
  for (size_t j = 0; j < k->nparams; ++j) {
    if (strcmp(params[j].name, v->valuestring) != 0)
      continue;
    if (params[j].kind != ATTNRT_ARG_PTR)
      return tensormap_error(where, "tensor", k->name, p->name,
                             "parameter '%s' is %s, expected a ptr parameter",
                             params[j].name,
                             attnrt_arg_kind_name(params[j].kind));
    p->tensormap.tensor = (int)j;
    return ATTNRT_OK;
  }
  return tensormap_error(where, "tensor", k->name, p->name,
                         "kernel has no parameter named '%s'", v->valuestring);
}
