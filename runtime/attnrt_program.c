//===- attnrt_program.c - Programs of the manifest ------------------------===//
//
// Reads the manifest's "programs": named sequences of kernel launches whose
// ptr arguments are bound to program inputs or to workspace buffers attnrt
// lays out, checked against the kernels' shapes and tensor maps.

#include "attnrt_internal.h"

#include <cjson/cJSON.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  double need = attnrt_param_shape_bytes(&k->params[index]);
  *what = "shape";
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
    return attnrt_manifest_error(where, "missing \"inputs\"");
  if (!cJSON_IsArray(v))
    return attnrt_manifest_error(
        attnrt_field_path(path, sizeof path, where, "inputs"),
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
      return attnrt_manifest_error(path, "expected a non-empty string");
    if (find_name(p->inputs, (size_t)i, name->valuestring) >= 0)
      return attnrt_manifest_error(path, "duplicate input name \"%s\"",
                                   name->valuestring);
    p->inputs[i] = attnrt_dup_string(name->valuestring);
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
    return attnrt_manifest_error(
        attnrt_field_path(path, sizeof path, where, "workspace"),
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
      return attnrt_manifest_error(path, "expected an object");
    enum attnrt_status st =
        attnrt_read_string(buffer, "name", path, true, &p->workspace[i]);
    if (st != ATTNRT_OK)
      return st;
    const char *name = p->workspace[i];
    if (find_name(p->inputs, p->info.ninputs, name) >= 0)
      return attnrt_manifest_error(
          path, "workspace name \"%s\" is also an input", name);
    if (find_name(p->workspace, (size_t)i, name) >= 0)
      return attnrt_manifest_error(path, "duplicate workspace name \"%s\"",
                                   name);
    const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(buffer, "bytes");
    if (!bytes)
      return attnrt_manifest_error(path, "missing \"bytes\"");
    char bytes_path[160];
    snprintf(bytes_path, sizeof bytes_path, "%s.bytes", path);
    if (!attnrt_is_integer_in(bytes, 1, ATTNRT_MAX_EXACT_INTEGER)) {
      if (cJSON_IsNumber(bytes))
        return attnrt_manifest_error(bytes_path,
                                     "expected a positive integer, found %.17g",
                                     bytes->valuedouble);
      return attnrt_manifest_error(bytes_path, "expected a positive integer");
    }
    size_t size = (size_t)bytes->valuedouble;
    size_t rounded = (size + ATTNRT_WORKSPACE_ALIGN - 1) /
                     ATTNRT_WORKSPACE_ALIGN * ATTNRT_WORKSPACE_ALIGN;
    if (rounded > SIZE_MAX - p->info.workspace_bytes)
      return attnrt_manifest_error(
          bytes_path, "the program's workspace exceeds %zu bytes in total",
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
    return attnrt_manifest_error(where, "expected an object");
  const cJSON *kernel = cJSON_GetObjectItemCaseSensitive(obj, "kernel");
  if (!kernel)
    return attnrt_manifest_error(where, "missing \"kernel\"");
  attnrt_field_path(path, sizeof path, where, "kernel");
  if (!cJSON_IsString(kernel) || !*kernel->valuestring)
    return attnrt_manifest_error(path, "expected a non-empty string");
  int index = attnrt_manifest_find(m, kernel->valuestring);
  if (index < 0)
    return attnrt_manifest_error(path, "manifest has no kernel \"%s\"",
                                 kernel->valuestring);
  step->kernel = (size_t)index;
  const struct attnrt_kernel_info *k = &m->kernels[index];

  const cJSON *args = cJSON_GetObjectItemCaseSensitive(obj, "args");
  if (!args)
    return attnrt_manifest_error(where, "missing \"args\"");
  attnrt_field_path(path, sizeof path, where, "args");
  if (!cJSON_IsArray(args))
    return attnrt_manifest_error(path, "expected an array of names");
  size_t n = (size_t)cJSON_GetArraySize(args);
  if (n != k->nargs && k->nargs == k->nparams)
    return attnrt_manifest_error(
        path, "kernel '%s' takes %zu argument%s, found %zu", k->name, k->nargs,
        k->nargs == 1 ? "" : "s", n);
  if (n != k->nargs)
    return attnrt_manifest_error(
        path,
        "kernel '%s' takes %zu argument%s, found %zu (plus %zu "
        "tensor map parameter%s attnrt derives, not bound)",
        k->name, k->nargs, k->nargs == 1 ? "" : "s", n, k->nparams - k->nargs,
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
      return attnrt_manifest_error(arg_path, "expected a non-empty string");
    if (param->kind != ATTNRT_ARG_PTR)
      return attnrt_manifest_error(
          arg_path,
          "parameter '%s' of kernel '%s' is %s; programs bind "
          "only ptr parameters",
          param->name, k->name, attnrt_arg_kind_name(param->kind));
    int input = find_name(p->inputs, p->info.ninputs, name->valuestring);
    int buffer = find_name(p->workspace, p->info.nworkspace, name->valuestring);
    if (input < 0 && buffer < 0)
      return attnrt_manifest_error(
          arg_path, "program has no input or workspace named \"%s\"",
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
      return attnrt_manifest_error(
          arg_path,
          "workspace \"%s\" has %zu bytes but parameter '%s' of "
          "kernel '%s' needs %.0f (its shape)",
          name->valuestring, have, param->name, k->name, need);
    if (need > (double)have)
      return attnrt_manifest_error(
          arg_path,
          "workspace \"%s\" has %zu bytes but parameter '%s' of "
          "kernel '%s' needs %.0f (tensor map '%s')",
          name->valuestring, have, param->name, k->name, need, what);
  }
  return ATTNRT_OK;
}

static enum attnrt_status read_program(const cJSON *obj, const char *where,
                                       const attnrt_manifest *m,
                                       struct attnrt_program *p) {
  if (!cJSON_IsObject(obj))
    return attnrt_manifest_error(where, "expected an object");
  char *name = NULL;
  enum attnrt_status st = attnrt_read_string(obj, "name", where, true, &name);
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
    return attnrt_manifest_error(where, "missing \"steps\"");
  int n = cJSON_IsArray(steps) ? cJSON_GetArraySize(steps) : 0;
  if (n == 0)
    return attnrt_manifest_error(
        attnrt_field_path(path, sizeof path, where, "steps"),
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

enum attnrt_status attnrt_manifest_read_programs(const cJSON *root,
                                                 attnrt_manifest *m) {
  const cJSON *programs = cJSON_GetObjectItemCaseSensitive(root, "programs");
  if (!programs)
    return ATTNRT_OK;
  if (!cJSON_IsArray(programs))
    return attnrt_manifest_error("programs", "expected an array");
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
      return attnrt_manifest_error(where, "duplicate program name \"%s\"",
                                   m->programs[i].info.name);
    ++i;
  }
  return ATTNRT_OK;
}
