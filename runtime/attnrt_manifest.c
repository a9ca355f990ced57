// attnrt_manifest.c - parses and queries the JSON launch manifest that describes a module's kernels.

#include "attnrt_internal.h"

#include <cjson/cJSON.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//===-- Reading fields --===//

/// Reads the optional non-negative integer obj[key] into *out (0 when absent).
static enum attnrt_status read_unsigned(const cJSON *obj, const char *key,
                                        const char *where, unsigned *out) {
  char path[128];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  *out = 0;
  if (!v)
    return ATTNRT_OK;
  if (!attnrt_is_integer_in(v, 0, 4294967295.0))
    return attnrt_manifest_error(
        attnrt_field_path(path, sizeof path, where, key),
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
    return attnrt_manifest_error(where, "missing \"%s\"", key);
  int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
  if (n < 1 || n > 3)
    return attnrt_manifest_error(
        attnrt_field_path(path, sizeof path, where, key),
        "expected an array of 1 to 3 positive integers");
  for (int i = 0; i < 3; ++i) {
    const cJSON *d = i < n ? cJSON_GetArrayItem(v, i) : NULL;
    if (d && !attnrt_is_integer_in(d, 1, 4294967295.0))
      return attnrt_manifest_error(
          attnrt_field_path(path, sizeof path, where, key),
          "entry %d: expected a positive integer", i);
    dims[i] = d ? (unsigned)d->valuedouble : 1;
  }
  return ATTNRT_OK;
}
//===-- Parameters and kernels --===//

static enum attnrt_status read_shape(const cJSON *obj, const char *where,
                                     struct attnrt_param_info *p) {
  char path[128];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "shape");
  if (!v)
    return ATTNRT_OK;
  attnrt_field_path(path, sizeof path, where, "shape");
  if (!cJSON_IsArray(v))
    return attnrt_manifest_error(path,
                                 "expected an array of non-negative integers");
  int rank = cJSON_GetArraySize(v);
  if (rank > ATTNRT_MAX_RANK)
    return attnrt_manifest_error(path, "rank %d exceeds the maximum of %d",
                                 rank, ATTNRT_MAX_RANK);
  for (int i = 0; i < rank; ++i) {
    const cJSON *d = cJSON_GetArrayItem(v, i);
    if (!attnrt_is_integer_in(d, 0, ATTNRT_MAX_EXACT_INTEGER))
      return attnrt_manifest_error(
          path, "entry %d: expected a non-negative integer", i);
    p->shape[i] = (int64_t)d->valuedouble;
  }
  p->rank = rank;
  return ATTNRT_OK;
}

static enum attnrt_status read_param(const cJSON *obj, const char *where,
                                     const char *kernel,
                                     struct attnrt_param_info *p) {
  if (!cJSON_IsObject(obj))
    return attnrt_manifest_error(where, "expected an object");
  char *name = NULL, *dtype = NULL;
  enum attnrt_status st = attnrt_read_string(obj, "name", where, true, &name);
  p->name = name;
  if (st != ATTNRT_OK)
    return st;
  st = attnrt_read_string(obj, "dtype", where, false, &dtype);
  p->dtype = dtype;
  if (st != ATTNRT_OK)
    return st;
  st = attnrt_read_kind(obj, where, &p->kind);
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
      attnrt_field_path(path, sizeof path, where, "align");
      return attnrt_manifest_error(path,
                                   "expected a power of two in [1, 4096] on a "
                                   "\"ptr\" parameter");
    }
    p->align = u;
  }
  if (p->kind != ATTNRT_ARG_TENSORMAP)
    return st;
  return attnrt_tensormap_read(obj, where, kernel, p);
}

/// The parameters a fused communication kernel ends with, which
/// attnrt_comm_launch fills in.
static const struct {
  const char *name;
  enum attnrt_arg_kind kind;
} comm_params[ATTNRT_COMM_KEPT_ARGS] = {{"workspace", ATTNRT_ARG_PTR},
                                        {"peers", ATTNRT_ARG_PTR},
                                        {"out_peers", ATTNRT_ARG_PTR},
                                        {"rank", ATTNRT_ARG_I32},
                                        {"epoch", ATTNRT_ARG_I32}};

/// Reads the optional obj["comm"] of kernel k (whose params are read) into
/// k->comm: pattern and world_size required, workspace_bytes positive, and
/// the kernel's last arguments (parameters other than tensor maps)
/// comm_params.
static enum attnrt_status read_comm(const cJSON *obj, const char *where,
                                    struct attnrt_kernel_info *k) {
  char path[128];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "comm");
  if (!v)
    return ATTNRT_OK;
  attnrt_field_path(path, sizeof path, where, "comm");
  if (!cJSON_IsObject(v))
    return attnrt_manifest_error(path, "expected an object");
  struct attnrt_kernel_comm *c = calloc(1, sizeof *c);
  if (!c)
    return attnrt_fail(NULL, ATTNRT_ERR_OUT_OF_MEMORY,
                       "manifest: out of host memory");
  k->comm = c;
  char *pattern = NULL, *split = NULL;
  enum attnrt_status st = attnrt_read_string(v, "pattern", path, true, &pattern);
  c->pattern = pattern;
  if (st == ATTNRT_OK)
    st = attnrt_read_string(v, "split", path, false, &split);
  c->split = split;
  if (st == ATTNRT_OK)
    st = read_unsigned(v, "world_size", path, &c->world_size);
  if (st == ATTNRT_OK)
    st = read_unsigned(v, "compute_ctas", path, &c->compute_ctas);
  if (st == ATTNRT_OK)
    st = read_unsigned(v, "comm_ctas", path, &c->comm_ctas);
  if (st != ATTNRT_OK)
    return st;
  char field[160];
  if (c->world_size == 0)
    return attnrt_manifest_error(
        attnrt_field_path(field, sizeof field, path, "world_size"),
        "expected a positive integer");
  const cJSON *wb = cJSON_GetObjectItemCaseSensitive(v, "workspace_bytes");
  if (!attnrt_is_integer_in(wb, 1, 9007199254740992.0))
    return attnrt_manifest_error(
        attnrt_field_path(field, sizeof field, path, "workspace_bytes"),
        "expected a positive integer");
  c->workspace_bytes = (size_t)wb->valuedouble;
  if (k->nargs < ATTNRT_COMM_KEPT_ARGS)
    return attnrt_manifest_error(path,
                                 "a communication kernel ends with the "
                                 "parameters workspace, peers, out_peers, "
                                 "rank and epoch; kernel '%s' has %zu "
                                 "arguments",
                                 k->name, k->nargs);
  // The last arguments: parameters that are not tensor maps (which the
  // generated kernels list last).
  const struct attnrt_param_info *tail[ATTNRT_COMM_KEPT_ARGS];
  int found = ATTNRT_COMM_KEPT_ARGS;
  for (size_t j = k->nparams; j-- > 0 && found > 0;)
    if (k->params[j].kind != ATTNRT_ARG_TENSORMAP)
      tail[--found] = &k->params[j];
  for (int i = 0; i < ATTNRT_COMM_KEPT_ARGS; ++i) {
    const struct attnrt_param_info *p = tail[i];
    if (strcmp(p->name, comm_params[i].name) != 0 ||
        p->kind != comm_params[i].kind)
      return attnrt_manifest_error(
          path,
          "a communication kernel ends with the parameters workspace (ptr), "
          "peers (ptr), out_peers (ptr), rank (i32) and epoch (i32); kernel "
          "'%s' has '%s' (%s) "
          "where '%s' belongs",
          k->name, p->name, attnrt_arg_kind_name(p->kind), comm_params[i].name);
  }
  return ATTNRT_OK;
}

static enum attnrt_status read_kernel(const cJSON *obj, const char *where,
                                      struct attnrt_kernel_info *k) {
  if (!cJSON_IsObject(obj))
    return attnrt_manifest_error(where, "expected an object");
  char *name = NULL;
  enum attnrt_status st = attnrt_read_string(obj, "name", where, true, &name);
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
    return attnrt_manifest_error(where, "missing \"params\"");
  if (!cJSON_IsArray(params))
    return attnrt_manifest_error(
        attnrt_field_path(path, sizeof path, where, "params"),
        "expected an array");
  int n = cJSON_GetArraySize(params);
  if (n > ATTNRT_MAX_KERNEL_PARAMS)
    return attnrt_manifest_error(
        attnrt_field_path(path, sizeof path, where, "params"),
        "%d parameters exceed the maximum of %d", n, ATTNRT_MAX_KERNEL_PARAMS);
  if (n == 0)
    return read_comm(obj, where, k);
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
      st = attnrt_tensormap_resolve(p, path, k, infos, (size_t)i);
      if (st != ATTNRT_OK)
        return st;
      --k->nargs;
    }
    ++i;
  }
  return read_comm(obj, where, k);
}
//===-- Manifest --===//

/// Reports where cJSON stopped reading text as a line and column.
static enum attnrt_status invalid_json(const char *text, const char *stop) {
  if (!stop)
    return attnrt_manifest_error("", "invalid JSON");
  int line = 1, column = 1;
  for (const char *c = text; c < stop && *c; ++c) {
    if (*c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return attnrt_manifest_error("", "invalid JSON at line %d, column %d", line,
                               column);
}

static enum attnrt_status read_manifest(const cJSON *root, attnrt_manifest *m) {
  if (!cJSON_IsObject(root))
    return attnrt_manifest_error("", "expected a JSON object");
  const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
  if (!version)
    return attnrt_manifest_error("", "missing \"version\"");
  if (!attnrt_is_integer_in(version, 0, ATTNRT_MAX_EXACT_INTEGER))
    return attnrt_manifest_error("version", "expected an integer");
  if (version->valuedouble != 1)
    return attnrt_manifest_error("version",
                                 "unsupported version %.0f, expected 1",
                                 version->valuedouble);
  m->version = 1;
  enum attnrt_status st =
      attnrt_read_string(root, "target", "", false, &m->target);
  if (st != ATTNRT_OK)
    return st;
  st = attnrt_read_string(root, "format", "", false, &m->format);
  if (st != ATTNRT_OK)
    return st;
  if (m->format && strcmp(m->format, "ptx") != 0 &&
      strcmp(m->format, "cubin") != 0)
    return attnrt_manifest_error(
        "format", "expected \"ptx\" or \"cubin\", found \"%s\"", m->format);

  const cJSON *kernels = cJSON_GetObjectItemCaseSensitive(root, "kernels");
  if (!kernels)
    return attnrt_manifest_error("", "missing \"kernels\"");
  if (!cJSON_IsArray(kernels))
    return attnrt_manifest_error("kernels", "expected an array");
  int n = cJSON_GetArraySize(kernels);
  if (n == 0)
    return attnrt_manifest_read_programs(root, m);
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
      return attnrt_manifest_error(where, "duplicate kernel name \"%s\"",
                                   m->kernels[i].name);
    ++i;
  }
  return attnrt_manifest_read_programs(root, m);
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
    if (k->comm) {
      free((char *)k->comm->pattern);
      free((char *)k->comm->split);
      free((struct attnrt_kernel_comm *)k->comm);
    }
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
