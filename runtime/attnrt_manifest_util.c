// attnrt_manifest_util.c - what the manifest's readers share: its errors,
// field paths, integers, strings and argument kinds, and the lookups of a
// kernel or program by name. attnrt_manifest.c (kernels and parameters),
// attnrt_program.c (launch programs) and attnrt_tensormap.c (tensor maps)
// call these and not each other's, except attnrt_manifest.c reading the
// programs and tensor maps it holds.

#include "attnrt_internal.h"

#include <cjson/cJSON.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

const char *attnrt_arg_kind_name(enum attnrt_arg_kind kind) {
  for (size_t i = 0; i < sizeof arg_kinds / sizeof arg_kinds[0]; ++i)
    if (arg_kinds[i].kind == kind)
      return arg_kinds[i].name;
  return "unknown";
}

//===-- Reading fields --===//

enum attnrt_status attnrt_manifest_error(const char *where, const char *fmt,
                                         ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (*where)
    return attnrt_fail(NULL, ATTNRT_ERR_PARSE, "manifest: %s: %s", where, msg);
  return attnrt_fail(NULL, ATTNRT_ERR_PARSE, "manifest: %s", msg);
}

char *attnrt_dup_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *copy = malloc(n);
  if (copy)
    memcpy(copy, s, n);
  return copy;
}

bool attnrt_is_integer_in(const cJSON *v, double lo, double hi) {
  if (!cJSON_IsNumber(v))
    return false;
  double d = v->valuedouble;
  return d >= lo && d <= hi && d == (double)(int64_t)d;
}

const char *attnrt_field_path(char *buf, size_t len, const char *where,
                              const char *key) {
  // Paths are short; should one not fit, mark the cut rather than hide it.
  if (snprintf(buf, len, "%s%s%s", where, *where ? "." : "", key) >= (int)len &&
      len > 4)
    memcpy(buf + len - 4, "...", 4);
  return buf;
}

enum attnrt_status attnrt_read_string(const cJSON *obj, const char *key,
                                      const char *where, bool required,
                                      char **out) {
  char path[128];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  *out = NULL;
  if (!v) {
    if (required)
      return attnrt_manifest_error(where, "missing \"%s\"", key);
    return ATTNRT_OK;
  }
  if (!cJSON_IsString(v) || !*v->valuestring)
    return attnrt_manifest_error(
        attnrt_field_path(path, sizeof path, where, key),
        "expected a non-empty string");
  *out = attnrt_dup_string(v->valuestring);
  if (!*out)
    return attnrt_fail(NULL, ATTNRT_ERR_OUT_OF_MEMORY,
                       "manifest: out of host memory");
  return ATTNRT_OK;
}

enum attnrt_status attnrt_read_kind(const cJSON *obj, const char *where,
                                    enum attnrt_arg_kind *out) {
  char path[128];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "kind");
  if (!v)
    return attnrt_manifest_error(where, "missing \"kind\"");
  attnrt_field_path(path, sizeof path, where, "kind");
  if (!cJSON_IsString(v))
    return attnrt_manifest_error(path, "expected a string");
  for (size_t i = 0; i < sizeof arg_kinds / sizeof arg_kinds[0]; ++i) {
    if (strcmp(v->valuestring, arg_kinds[i].name) == 0) {
      *out = arg_kinds[i].kind;
      return ATTNRT_OK;
    }
  }
  return attnrt_manifest_error(path,
                               "expected \"ptr\", \"i32\", \"i64\", \"f32\" or "
                               "\"tensormap\", found \"%s\"",
                               v->valuestring);
}

//===-- Lookups --===//

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
