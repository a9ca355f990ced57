// attnrt_manifest.c - parses and queries the JSON launch manifest that describes a module's kernels.

#include "attnrt_internal.h"

#include <cjson/cJSON.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Largest integer a JSON number (a double) holds exactly.
#define MAX_EXACT_INTEGER 9007199254740992.0

static const struct {
  const char *name;
  enum attnrt_arg_kind kind;
} arg_kinds[] = {
    {"ptr", ATTNRT_ARG_PTR},
    {"i32", ATTNRT_ARG_I32},
    {"i64", ATTNRT_ARG_I64},
    {"f32", ATTNRT_ARG_F32},
    {"tensormap", ATTNRT_ARG_TENSORMAP},
};

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

const char *attnrt_arg_kind_name(enum attnrt_arg_kind kind) {
  for (size_t i = 0; i < sizeof arg_kinds / sizeof arg_kinds[0]; ++i)
    if (arg_kinds[i].kind == kind)
      return arg_kinds[i].name;
  return "unknown";
}

//===-- Reading fields --===//

/// Records "manifest: <where>: <message>" in the thread's error slot.
static enum attnrt_status parse_error(const char *where, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static enum attnrt_status parse_error(const char *where, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (*where)
    return attnrt_fail(NULL, ATTNRT_ERR_PARSE, "manifest: %s: %s", where, msg);
  return attnrt_fail(NULL, ATTNRT_ERR_PARSE, "manifest: %s", msg);
}

static char *dup_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *copy = malloc(n);
  if (copy)
    memcpy(copy, s, n);
  return copy;
}

static bool is_integer_in(const cJSON *v, double lo, double hi) {
  if (!cJSON_IsNumber(v))
    return false;
  double d = v->valuedouble;
  return d >= lo && d <= hi && d == (double)(int64_t)d;
}

/// Joins where and key into buf as "where.key" (or "key" at top level).
static const char *field_path(char *buf, size_t len, const char *where,
                              const char *key) {
  // Paths are short; should one not fit, mark the cut rather than hide it.
  if (snprintf(buf, len, "%s%s%s", where, *where ? "." : "", key) >= (int)len &&
      len > 4)
    memcpy(buf + len - 4, "...", 4);
  return buf;
}

/// Reads the string obj[key] into a new copy in *out; NULL when absent and
/// not required.
static enum attnrt_status read_string(const cJSON *obj, const char *key,
                                      const char *where, bool required,
                                      char **out) {
  char path[128];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  *out = NULL;
  if (!v) {
    if (required)
      return parse_error(where, "missing \"%s\"", key);
    return ATTNRT_OK;
  }
  if (!cJSON_IsString(v) || !*v->valuestring)
    return parse_error(field_path(path, sizeof path, where, key),
                       "expected a non-empty string");
  *out = dup_string(v->valuestring);
  if (!*out)
    return attnrt_fail(NULL, ATTNRT_ERR_OUT_OF_MEMORY,
                       "manifest: out of host memory");
  return ATTNRT_OK;
}

/// Reads the optional non-negative integer obj[key] into *out (0 when absent).
static enum attnrt_status read_unsigned(const cJSON *obj, const char *key,
                                        const char *where, unsigned *out) {
  char path[128];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  *out = 0;
  if (!v)
    return ATTNRT_OK;
  if (!is_integer_in(v, 0, 4294967295.0))
    return parse_error(field_path(path, sizeof path, where, key),
                       "expected a non-negative integer");
  *out = (unsigned)v->valuedouble;
  return ATTNRT_OK;
}

/// Reads the required launch dimensions obj[key] (1 to 3 positive integers,
/// missing trailing ones are 1) into dims.
static enum attnrt_status read_dims(const cJSON *obj, const char *key,
                                    const char *where, unsigned dims[3]) {
  char path[128];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v)
    return parse_error(where, "missing \"%s\"", key);
  int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
  if (n < 1 || n > 3)
    return parse_error(field_path(path, sizeof path, where, key),
                       "expected an array of 1 to 3 positive integers");
  for (int i = 0; i < 3; ++i) {
    const cJSON *d = i < n ? cJSON_GetArrayItem(v, i) : NULL;
    if (d && !is_integer_in(d, 1, 4294967295.0))
      return parse_error(field_path(path, sizeof path, where, key),
                         "entry %d: expected a positive integer", i);
    dims[i] = d ? (unsigned)d->valuedouble : 1;
  }
  return ATTNRT_OK;
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
    where = field_path(path, sizeof path, where, field);
  return parse_error(where, "tensor map '%s' of kernel '%s': %s", param, kernel,
                     msg);
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
    if (!is_integer_in(d, lo, hi)) {
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

/// Reads and checks the fields of a "tensormap" parameter p of kernel kernel,
/// except "tensor", which resolve_tensormap_tensor reads once every parameter
/// is known.
static enum attnrt_status read_tensormap(const cJSON *obj, const char *where,
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
    if (!is_integer_in(swizzle, 0, 128) ||
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

/// Resolves obj["tensor"] of tensormap params[index] to the index of a "ptr"
/// parameter of the same kernel k.
static enum attnrt_status
resolve_tensormap_tensor(const cJSON *obj, const char *where,
                         const struct attnrt_kernel_info *k,
                         struct attnrt_param_info *params, size_t index) {
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

//===-- Parameters and kernels --===//

static enum attnrt_status read_kind(const cJSON *obj, const char *where,
                                    enum attnrt_arg_kind *out) {
  char path[128];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "kind");
  if (!v)
    return parse_error(where, "missing \"kind\"");
  field_path(path, sizeof path, where, "kind");
  if (!cJSON_IsString(v))
    return parse_error(path, "expected a string");
  for (size_t i = 0; i < sizeof arg_kinds / sizeof arg_kinds[0]; ++i) {
    if (strcmp(v->valuestring, arg_kinds[i].name) == 0) {
      *out = arg_kinds[i].kind;
      return ATTNRT_OK;
    }
  }
  return parse_error(path,
                     "expected \"ptr\", \"i32\", \"i64\", \"f32\" or "
                     "\"tensormap\", found \"%s\"",
                     v->valuestring);
}

static enum attnrt_status read_shape(const cJSON *obj, const char *where,
                                     struct attnrt_param_info *p) {
  char path[128];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "shape");
  if (!v)
    return ATTNRT_OK;
  field_path(path, sizeof path, where, "shape");
  if (!cJSON_IsArray(v))
    return parse_error(path, "expected an array of non-negative integers");
  int rank = cJSON_GetArraySize(v);
  if (rank > ATTNRT_MAX_RANK)
    return parse_error(path, "rank %d exceeds the maximum of %d", rank,
                       ATTNRT_MAX_RANK);
  for (int i = 0; i < rank; ++i) {
    const cJSON *d = cJSON_GetArrayItem(v, i);
    if (!is_integer_in(d, 0, MAX_EXACT_INTEGER))
      return parse_error(path, "entry %d: expected a non-negative integer", i);
    p->shape[i] = (int64_t)d->valuedouble;
  }
  p->rank = rank;
  return ATTNRT_OK;
}

static enum attnrt_status read_param(const cJSON *obj, const char *where,
                                     const char *kernel,
                                     struct attnrt_param_info *p) {
  if (!cJSON_IsObject(obj))
    return parse_error(where, "expected an object");
  char *name = NULL, *dtype = NULL;
  enum attnrt_status st = read_string(obj, "name", where, true, &name);
  p->name = name;
  if (st != ATTNRT_OK)
    return st;
  st = read_string(obj, "dtype", where, false, &dtype);
  p->dtype = dtype;
  if (st != ATTNRT_OK)
    return st;
  st = read_kind(obj, where, &p->kind);
  if (st != ATTNRT_OK)
    return st;
  st = read_shape(obj, where, p);
  if (st != ATTNRT_OK)
    return st;
  const cJSON *align = cJSON_GetObjectItemCaseSensitive(obj, "align");
  if (align) {
    double v = cJSON_IsNumber(align) ? align->valuedouble : -1;
    unsigned u = v >= 1 && v <= 4096 && v == (double)(unsigned)v ? (unsigned)v : 0;
    if (!u || (u & (u - 1)) || p->kind != ATTNRT_ARG_PTR) {
      char path[160];
      field_path(path, sizeof path, where, "align");
      return parse_error(path, "expected a power of two in [1, 4096] on a "
                               "\"ptr\" parameter");
    }
    p->align = u;
  }
  if (p->kind != ATTNRT_ARG_TENSORMAP)
    return st;
  return read_tensormap(obj, where, kernel, p);
}

static enum attnrt_status read_kernel(const cJSON *obj, const char *where,
                                      struct attnrt_kernel_info *k) {
  if (!cJSON_IsObject(obj))
    return parse_error(where, "expected an object");
  char *name = NULL;
  enum attnrt_status st = read_string(obj, "name", where, true, &name);
  k->name = name;
  if (st == ATTNRT_OK)
    st = read_dims(obj, "grid", where, k->grid);
  if (st == ATTNRT_OK)
    st = read_dims(obj, "block", where, k->block);
  if (st == ATTNRT_OK)
    st = read_unsigned(obj, "static_shared_bytes", where,
                       &k->static_shared_bytes);
  if (st == ATTNRT_OK)
    st = read_unsigned(obj, "dynamic_shared_bytes", where,
                       &k->dynamic_shared_bytes);
  if (st != ATTNRT_OK)
    return st;

  char path[128];
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(obj, "params");
  if (!params)
    return parse_error(where, "missing \"params\"");
  if (!cJSON_IsArray(params))
    return parse_error(field_path(path, sizeof path, where, "params"),
                       "expected an array");
  int n = cJSON_GetArraySize(params);
  if (n > ATTNRT_MAX_KERNEL_PARAMS)
    return parse_error(field_path(path, sizeof path, where, "params"),
                       "%d parameters exceed the maximum of %d", n,
                       ATTNRT_MAX_KERNEL_PARAMS);
  if (n == 0)
    return ATTNRT_OK;
  struct attnrt_param_info *infos = calloc((size_t)n, sizeof *infos);
  if (!infos)
    return attnrt_fail(NULL, ATTNRT_ERR_OUT_OF_MEMORY,
                       "manifest: out of host memory");
  k->params = infos;
  k->nparams = (size_t)n;
  int i = 0;
  const cJSON *p;
  cJSON_ArrayForEach(p, params) {
    snprintf(path, sizeof path, "%s.params[%d]", where, i);
    st = read_param(p, path, k->name, &infos[i++]);
    if (st != ATTNRT_OK)
      return st;
  }
  // Tensor maps may name a ptr parameter listed after them.
  k->nargs = k->nparams;
  i = 0;
  cJSON_ArrayForEach(p, params) {
    if (infos[i].kind == ATTNRT_ARG_TENSORMAP) {
      snprintf(path, sizeof path, "%s.params[%d]", where, i);
      st = resolve_tensormap_tensor(p, path, k, infos, (size_t)i);
      if (st != ATTNRT_OK)
        return st;
      --k->nargs;
    }
    ++i;
  }
  return ATTNRT_OK;
}

//===-- Programs --===//

/// Returns the index of name among the n strings of names, or -1.
static int find_name(char *const *names, size_t n, const char *name) {
  for (size_t i = 0; i < n; ++i)
    if (names[i] && strcmp(names[i], name) == 0)
      return (int)i;
  return -1;
}

/// Returns the bytes parameter index of kernel k reads at most: the product
/// of its "shape" times the size of its "dtype" (when both are given and the
/// dtype is a known one), and the extent of every tensor map over it. *what
/// names the largest ("shape" or a tensor map's name).
static double param_extent(const struct attnrt_kernel_info *k, size_t index,
                           const char **what) {
  const struct attnrt_param_info *p = &k->params[index];
  double need = 0;
  *what = "shape";
  int dtype = find_tensormap_dtype(p->dtype);
  if (p->rank > 0 && dtype >= 0) {
    need = tensormap_dtypes[dtype].bytes;
    for (int i = 0; i < p->rank; ++i)
      need *= (double)p->shape[i];
  }
  for (size_t j = 0; j < k->nparams; ++j) {
    const struct attnrt_tensormap_info *t = &k->params[j].tensormap;
    if (k->params[j].kind != ATTNRT_ARG_TENSORMAP || (size_t)t->tensor != index)
      continue;
    double extent = (double)t->dims[0] * t->elem_bytes;
    for (int i = 1; i < t->rank; ++i)
      extent += (double)(t->dims[i] - 1) * (double)t->strides[i - 1];
    if (extent > need) {
      need = extent;
      *what = k->params[j].name;
    }
  }
  return need;
}

/// Reads the required array obj["inputs"] of unique names into p.
static enum attnrt_status read_program_inputs(const cJSON *obj,
                                              const char *where,
                                              struct attnrt_program *p) {
  char path[128];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "inputs");
  if (!v)
    return parse_error(where, "missing \"inputs\"");
  if (!cJSON_IsArray(v))
    return parse_error(field_path(path, sizeof path, where, "inputs"),
                       "expected an array of names");
  int n = cJSON_GetArraySize(v);
  if (n == 0)
    return ATTNRT_OK;
  p->inputs = calloc((size_t)n, sizeof *p->inputs);
  if (!p->inputs)
    return attnrt_fail(NULL, ATTNRT_ERR_OUT_OF_MEMORY,
                       "manifest: out of host memory");
  p->info.ninputs = (size_t)n;
  p->info.inputs = (const char *const *)p->inputs;
  int i = 0;
  const cJSON *name;
  cJSON_ArrayForEach(name, v) {
    snprintf(path, sizeof path, "%s.inputs[%d]", where, i);
    if (!cJSON_IsString(name) || !*name->valuestring)
      return parse_error(path, "expected a non-empty string");
    if (find_name(p->inputs, (size_t)i, name->valuestring) >= 0)
      return parse_error(path, "duplicate input name \"%s\"",
                         name->valuestring);
    p->inputs[i] = dup_string(name->valuestring);
    if (!p->inputs[i++])
      return attnrt_fail(NULL, ATTNRT_ERR_OUT_OF_MEMORY,
                         "manifest: out of host memory");
  }
  return ATTNRT_OK;
}

/// Reads the optional array obj["workspace"] of {"name", "bytes"} into p and
/// lays the buffers out, each ATTNRT_WORKSPACE_ALIGN-aligned.
static enum attnrt_status read_program_workspace(const cJSON *obj,
                                                 const char *where,
                                                 struct attnrt_program *p) {
  char path[128];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "workspace");
  if (!v)
    return ATTNRT_OK;
  if (!cJSON_IsArray(v))
    return parse_error(field_path(path, sizeof path, where, "workspace"),
                       "expected an array");
  int n = cJSON_GetArraySize(v);
  if (n == 0)
    return ATTNRT_OK;
  p->workspace = calloc((size_t)n, sizeof *p->workspace);
  p->workspace_offset = calloc((size_t)n, sizeof *p->workspace_offset);
  p->workspace_size = calloc((size_t)n, sizeof *p->workspace_size);
  if (!p->workspace || !p->workspace_offset || !p->workspace_size)
    return attnrt_fail(NULL, ATTNRT_ERR_OUT_OF_MEMORY,
                       "manifest: out of host memory");
  p->info.nworkspace = (size_t)n;
  int i = 0;
  const cJSON *buffer;
  cJSON_ArrayForEach(buffer, v) {
    snprintf(path, sizeof path, "%s.workspace[%d]", where, i);
    if (!cJSON_IsObject(buffer))
      return parse_error(path, "expected an object");
    enum attnrt_status st =
        read_string(buffer, "name", path, true, &p->workspace[i]);
    if (st != ATTNRT_OK)
      return st;
    const char *name = p->workspace[i];
    if (find_name(p->inputs, p->info.ninputs, name) >= 0)
      return parse_error(path, "workspace name \"%s\" is also an input", name);
    if (find_name(p->workspace, (size_t)i, name) >= 0)
      return parse_error(path, "duplicate workspace name \"%s\"", name);
    const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(buffer, "bytes");
    if (!bytes)
      return parse_error(path, "missing \"bytes\"");
    char bytes_path[160];
    snprintf(bytes_path, sizeof bytes_path, "%s.bytes", path);
    if (!is_integer_in(bytes, 1, MAX_EXACT_INTEGER)) {
      if (cJSON_IsNumber(bytes))
        return parse_error(bytes_path,
                           "expected a positive integer, found %.17g",
                           bytes->valuedouble);
      return parse_error(bytes_path, "expected a positive integer");
    }
    size_t size = (size_t)bytes->valuedouble;
    size_t rounded = (size + ATTNRT_WORKSPACE_ALIGN - 1) /
                     ATTNRT_WORKSPACE_ALIGN * ATTNRT_WORKSPACE_ALIGN;
    if (rounded > SIZE_MAX - p->info.workspace_bytes)
      return parse_error(bytes_path,
                         "the program's workspace exceeds %zu bytes in total",
                         (size_t)SIZE_MAX);
    p->workspace_size[i] = size;
    p->workspace_offset[i] = p->info.workspace_bytes;
    p->info.workspace_bytes += rounded;
    ++i;
  }
  return ATTNRT_OK;
}

/// Reads step obj of program p against the kernels of m.
static enum attnrt_status read_step(const cJSON *obj, const char *where,
                                    const attnrt_manifest *m,
                                    const struct attnrt_program *p,
                                    struct attnrt_program_step *step) {
  char path[128];
  if (!cJSON_IsObject(obj))
    return parse_error(where, "expected an object");
  const cJSON *kernel = cJSON_GetObjectItemCaseSensitive(obj, "kernel");
  if (!kernel)
    return parse_error(where, "missing \"kernel\"");
  field_path(path, sizeof path, where, "kernel");
  if (!cJSON_IsString(kernel) || !*kernel->valuestring)
    return parse_error(path, "expected a non-empty string");
  int index = attnrt_manifest_find(m, kernel->valuestring);
  if (index < 0)
    return parse_error(path, "manifest has no kernel \"%s\"",
                       kernel->valuestring);
  step->kernel = (size_t)index;
  const struct attnrt_kernel_info *k = &m->kernels[index];

  const cJSON *args = cJSON_GetObjectItemCaseSensitive(obj, "args");
  if (!args)
    return parse_error(where, "missing \"args\"");
  field_path(path, sizeof path, where, "args");
  if (!cJSON_IsArray(args))
    return parse_error(path, "expected an array of names");
  size_t n = (size_t)cJSON_GetArraySize(args);
  if (n != k->nargs && k->nargs == k->nparams)
    return parse_error(path, "kernel '%s' takes %zu argument%s, found %zu",
                       k->name, k->nargs, k->nargs == 1 ? "" : "s", n);
  if (n != k->nargs)
    return parse_error(path,
                       "kernel '%s' takes %zu argument%s, found %zu (plus %zu "
                       "tensor map parameter%s attnrt derives, not bound)",
                       k->name, k->nargs, k->nargs == 1 ? "" : "s", n,
                       k->nparams - k->nargs,
                       k->nparams - k->nargs == 1 ? "" : "s");
  if (n == 0)
    return ATTNRT_OK;
  step->slots = calloc(n, sizeof *step->slots);
  if (!step->slots)
    return attnrt_fail(NULL, ATTNRT_ERR_OUT_OF_MEMORY,
                       "manifest: out of host memory");
  size_t a = 0;
  for (size_t i = 0; i < k->nparams; ++i) {
    const struct attnrt_param_info *param = &k->params[i];
    if (param->kind == ATTNRT_ARG_TENSORMAP)
      continue;
    char arg_path[160];
    snprintf(arg_path, sizeof arg_path, "%s.args[%zu]", where, a);
    const cJSON *name = cJSON_GetArrayItem(args, (int)a);
    if (!cJSON_IsString(name) || !*name->valuestring)
      return parse_error(arg_path, "expected a non-empty string");
    if (param->kind != ATTNRT_ARG_PTR)
      return parse_error(arg_path,
                         "parameter '%s' of kernel '%s' is %s; programs bind "
                         "only ptr parameters",
                         param->name, k->name,
                         attnrt_arg_kind_name(param->kind));
    int input = find_name(p->inputs, p->info.ninputs, name->valuestring);
    int buffer = find_name(p->workspace, p->info.nworkspace, name->valuestring);
    if (input < 0 && buffer < 0)
      return parse_error(arg_path,
                         "program has no input or workspace named \"%s\"",
                         name->valuestring);
    if (input >= 0) {
      step->slots[a++] = (size_t)input;
      continue;
    }
    step->slots[a++] = p->info.ninputs + (size_t)buffer;
    const char *what;
    double need = param_extent(k, i, &what);
    size_t have = p->workspace_size[buffer];
    if (need > (double)have && strcmp(what, "shape") == 0)
      return parse_error(arg_path,
                         "workspace \"%s\" has %zu bytes but parameter '%s' of "
                         "kernel '%s' needs %.0f (its shape)",
                         name->valuestring, have, param->name, k->name, need);
    if (need > (double)have)
      return parse_error(arg_path,
                         "workspace \"%s\" has %zu bytes but parameter '%s' of "
                         "kernel '%s' needs %.0f (tensor map '%s')",
                         name->valuestring, have, param->name, k->name, need,
                         what);
  }
  return ATTNRT_OK;
}

static enum attnrt_status read_program(const cJSON *obj, const char *where,
                                       const attnrt_manifest *m,
                                       struct attnrt_program *p) {
  if (!cJSON_IsObject(obj))
    return parse_error(where, "expected an object");
  char *name = NULL;
  enum attnrt_status st = read_string(obj, "name", where, true, &name);
  p->info.name = name;
  if (st == ATTNRT_OK)
    st = read_program_inputs(obj, where, p);
  if (st == ATTNRT_OK)
    st = read_program_workspace(obj, where, p);
  if (st != ATTNRT_OK)
    return st;

  char path[128];
  const cJSON *steps = cJSON_GetObjectItemCaseSensitive(obj, "steps");
  if (!steps)
    return parse_error(where, "missing \"steps\"");
  int n = cJSON_IsArray(steps) ? cJSON_GetArraySize(steps) : 0;
  if (n == 0)
    return parse_error(field_path(path, sizeof path, where, "steps"),
                       "expected a non-empty array");
  p->steps = calloc((size_t)n, sizeof *p->steps);
  if (!p->steps)
    return attnrt_fail(NULL, ATTNRT_ERR_OUT_OF_MEMORY,
                       "manifest: out of host memory");
  p->info.nsteps = (size_t)n;
  int i = 0;
  const cJSON *step;
  cJSON_ArrayForEach(step, steps) {
    snprintf(path, sizeof path, "%s.steps[%d]", where, i);
    st = read_step(step, path, m, p, &p->steps[i++]);
    if (st != ATTNRT_OK)
      return st;
  }
  return ATTNRT_OK;
}

/// Reads the optional top-level "programs" array, after the kernels.
static enum attnrt_status read_programs(const cJSON *root, attnrt_manifest *m) {
  const cJSON *programs = cJSON_GetObjectItemCaseSensitive(root, "programs");
  if (!programs)
    return ATTNRT_OK;
  if (!cJSON_IsArray(programs))
    return parse_error("programs", "expected an array");
  int n = cJSON_GetArraySize(programs);
  if (n == 0)
    return ATTNRT_OK;
  m->programs = calloc((size_t)n, sizeof *m->programs);
  if (!m->programs)
    return attnrt_fail(NULL, ATTNRT_ERR_OUT_OF_MEMORY,
                       "manifest: out of host memory");
  m->nprograms = (size_t)n;
  int i = 0;
  const cJSON *p;
  cJSON_ArrayForEach(p, programs) {
    char where[32];
    snprintf(where, sizeof where, "programs[%d]", i);
    enum attnrt_status st = read_program(p, where, m, &m->programs[i]);
    if (st != ATTNRT_OK)
      return st;
    if (attnrt_manifest_find_program(m, m->programs[i].info.name) != i)
      return parse_error(where, "duplicate program name \"%s\"",
                         m->programs[i].info.name);
    ++i;
  }
  return ATTNRT_OK;
}

//===-- Manifest --===//

/// Reports where cJSON stopped reading text as a line and column.
static enum attnrt_status invalid_json(const char *text, const char *stop) {
  if (!stop)
    return parse_error("", "invalid JSON");
  int line = 1, column = 1;
  for (const char *c = text; c < stop && *c; ++c) {
    if (*c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return parse_error("", "invalid JSON at line %d, column %d", line, column);
}

static enum attnrt_status read_manifest(const cJSON *root, attnrt_manifest *m) {
  if (!cJSON_IsObject(root))
    return parse_error("", "expected a JSON object");
  const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
  if (!version)
    return parse_error("", "missing \"version\"");
  if (!is_integer_in(version, 0, MAX_EXACT_INTEGER))
    return parse_error("version", "expected an integer");
  if (version->valuedouble != 1)
    return parse_error("version", "unsupported version %.0f, expected 1",
                       version->valuedouble);
  m->version = 1;
  enum attnrt_status st = read_string(root, "target", "", false, &m->target);
  if (st != ATTNRT_OK)
    return st;
  st = read_string(root, "format", "", false, &m->format);
  if (st != ATTNRT_OK)
    return st;
  if (m->format && strcmp(m->format, "ptx") != 0 &&
      strcmp(m->format, "cubin") != 0)
    return parse_error("format", "expected \"ptx\" or \"cubin\", found \"%s\"",
                       m->format);

  const cJSON *kernels = cJSON_GetObjectItemCaseSensitive(root, "kernels");
  if (!kernels)
    return parse_error("", "missing \"kernels\"");
  if (!cJSON_IsArray(kernels))
    return parse_error("kernels", "expected an array");
  int n = cJSON_GetArraySize(kernels);
  if (n == 0)
    return read_programs(root, m);
  m->kernels = calloc((size_t)n, sizeof *m->kernels);
  if (!m->kernels)
    return attnrt_fail(NULL, ATTNRT_ERR_OUT_OF_MEMORY,
                       "manifest: out of host memory");
  m->nkernels = (size_t)n;
  int i = 0;
  const cJSON *k;
  cJSON_ArrayForEach(k, kernels) {
    char where[32];
    snprintf(where, sizeof where, "kernels[%d]", i);
    st = read_kernel(k, where, &m->kernels[i]);
    if (st != ATTNRT_OK)
      return st;
    if (attnrt_manifest_find(m, m->kernels[i].name) != i)
      return parse_error(where, "duplicate kernel name \"%s\"",
                         m->kernels[i].name);
    ++i;
  }
  return read_programs(root, m);
}

ATTNRT_API enum attnrt_status attnrt_manifest_parse(const char *json,
                                                    attnrt_manifest **out) {
  if (!out)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_manifest_parse: out is NULL");
  *out = NULL;
  if (!json)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_manifest_parse: json is NULL");
  const char *stop = NULL;
  cJSON *root = cJSON_ParseWithOpts(json, &stop, 1);
  if (!root)
    return invalid_json(json, stop);
  enum attnrt_status st = ATTNRT_ERR_OUT_OF_MEMORY;
  attnrt_manifest *m = calloc(1, sizeof *m);
  if (!m) {
    attnrt_fail(NULL, st, "manifest: out of host memory");
    goto out_delete_json;
  }
  st = read_manifest(root, m);
  if (st != ATTNRT_OK)
    goto out_destroy_manifest;
  *out = m;
  cJSON_Delete(root);
  return ATTNRT_OK;

out_destroy_manifest:
  attnrt_manifest_destroy(m);
out_delete_json:
  cJSON_Delete(root);
  return st;
}

ATTNRT_API void attnrt_manifest_destroy(attnrt_manifest *m) {
  if (!m)
    return;
  for (size_t i = 0; i < m->nkernels; ++i) {
    struct attnrt_kernel_info *k = &m->kernels[i];
    for (size_t j = 0; j < k->nparams; ++j) {
      free((char *)k->params[j].name);
      free((char *)k->params[j].dtype);
    }
    free((struct attnrt_param_info *)k->params);
    free((char *)k->name);
  }
  free(m->kernels);
  for (size_t i = 0; i < m->nprograms; ++i) {
    struct attnrt_program *p = &m->programs[i];
    for (size_t j = 0; p->inputs && j < p->info.ninputs; ++j)
      free(p->inputs[j]);
    for (size_t j = 0; p->workspace && j < p->info.nworkspace; ++j)
      free(p->workspace[j]);
    for (size_t j = 0; p->steps && j < p->info.nsteps; ++j)
      free(p->steps[j].slots);
    free(p->inputs);
    free(p->workspace);
    free(p->workspace_offset);
    free(p->workspace_size);
    free(p->steps);
    free((char *)p->info.name);
  }
  free(m->programs);
  free(m->target);
  free(m->format);
  free(m);
}

size_t attnrt_manifest_maps_before(const attnrt_manifest *m, size_t index) {
  size_t n = 0;
  for (size_t i = 0; i < index && i < m->nkernels; ++i)
    n += m->kernels[i].nparams - m->kernels[i].nargs;
  return n;
}

int attnrt_manifest_find(const attnrt_manifest *m, const char *name) {
  if (!m || !name)
    return -1;
  for (size_t i = 0; i < m->nkernels; ++i)
    if (m->kernels[i].name && strcmp(m->kernels[i].name, name) == 0)
      return (int)i;
  return -1;
}

int attnrt_manifest_find_program(const attnrt_manifest *m, const char *name) {
  if (!m || !name)
    return -1;
  for (size_t i = 0; i < m->nprograms; ++i)
    if (m->programs[i].info.name &&
        strcmp(m->programs[i].info.name, name) == 0)
      return (int)i;
  return -1;
}

ATTNRT_API int attnrt_manifest_program_count(const attnrt_manifest *m) {
  return m ? (int)m->nprograms : 0;
}

ATTNRT_API const struct attnrt_program_info *
attnrt_manifest_program(const attnrt_manifest *m, const char *name) {
  int i = attnrt_manifest_find_program(m, name);
  return i < 0 ? NULL : &m->programs[i].info;
}

ATTNRT_API const struct attnrt_program_info *
attnrt_manifest_program_at(const attnrt_manifest *m, int index) {
  if (!m || index < 0 || (size_t)index >= m->nprograms)
    return NULL;
  return &m->programs[index].info;
}

ATTNRT_API int attnrt_manifest_kernel_count(const attnrt_manifest *m) {
  return m ? (int)m->nkernels : 0;
}

ATTNRT_API const struct attnrt_kernel_info *
attnrt_manifest_kernel(const attnrt_manifest *m, const char *name) {
  int i = attnrt_manifest_find(m, name);
  return i < 0 ? NULL : &m->kernels[i];
}

ATTNRT_API const struct attnrt_kernel_info *
attnrt_manifest_kernel_at(const attnrt_manifest *m, int index) {
  if (!m || index < 0 || (size_t)index >= m->nkernels)
    return NULL;
  return &m->kernels[index];
}

ATTNRT_API const char *attnrt_manifest_target(const attnrt_manifest *m) {
  return m ? m->target : NULL;
}

ATTNRT_API const char *attnrt_manifest_format(const attnrt_manifest *m) {
  return m ? m->format : NULL;
}
