// attnrt_module.c - loads PTX or cubin images with their manifests and resolves the kernels they describe.

#include "attnrt_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Above this much shared memory per block a kernel must opt in through
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.
#define DEFAULT_SHARED_LIMIT (48u * 1024u)
#define JIT_LOG_BYTES 8192

enum image_format { IMAGE_PTX, IMAGE_CUBIN };

static const char *format_name(enum image_format format) {
  return format == IMAGE_PTX ? "ptx" : "cubin";
}

/// Looks up every manifest kernel in m->module and opts kernels that need more
/// than 48 KiB of shared memory into their dynamic size. Runs in rt's context.
static enum attnrt_status resolve_kernels(attnrt_module *m) {
  attnrt_runtime *rt = m->rt;
  for (size_t i = 0; i < m->manifest->nkernels; ++i) {
    const struct attnrt_kernel_info *k = &m->manifest->kernels[i];
    CUresult res = rt->cu.ModuleGetFunction(&m->functions[i], m->module, k->name);
    if (res == CUDA_ERROR_NOT_FOUND)
      return attnrt_fail(rt, ATTNRT_ERR_NOT_FOUND,
                         "kernel '%s' of the manifest is not in the image",
                         k->name);
    enum attnrt_status st =
        attnrt_check_cu(rt, res, "cuModuleGetFunction('%s')", k->name);
    if (st != ATTNRT_OK)
      return st;
    uint64_t shared = (uint64_t)k->static_shared_bytes + k->dynamic_shared_bytes;
    if (shared <= DEFAULT_SHARED_LIMIT)
      continue;
    st = attnrt_check_cu(
        rt,
        rt->cu.FuncSetAttribute(m->functions[i],
                                CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                (int)k->dynamic_shared_bytes),
        "cuFuncSetAttribute('%s', MAX_DYNAMIC_SHARED_SIZE_BYTES, %u)", k->name,
        k->dynamic_shared_bytes);
    if (st != ATTNRT_OK)
      return st;
  }
  return ATTNRT_OK;
}

/// Loads image (NUL-terminated PTX or a cubin) into m->module, putting the JIT
/// error log into the message on failure. Runs in rt's context.
static enum attnrt_status load_image(attnrt_module *m, const void *image) {
  attnrt_runtime *rt = m->rt;
  char *log = calloc(1, JIT_LOG_BYTES);
  if (!log)
    return attnrt_fail(rt, ATTNRT_ERR_OUT_OF_MEMORY,
                       "attnrt_module_load: out of host memory");
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, (void *)(uintptr_t)JIT_LOG_BYTES};
  CUresult res = rt->cu.ModuleLoadDataEx(&m->module, image, 2, options, values);
  enum attnrt_status st = attnrt_check_cu(rt, res, "cuModuleLoadDataEx");
  if (st != ATTNRT_OK) {
    m->module = NULL;
    log[JIT_LOG_BYTES - 1] = '\0';
    size_t n = strlen(log);
    while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == ' '))
      log[--n] = '\0';
    attnrt_append_error(rt, " for target %s on a device of compute capability %d.%d",
                        m->manifest->target ? m->manifest->target : "(unset)",
                        rt->cc_major, rt->cc_minor);
    if (n > 0)
      attnrt_append_error(rt, "; JIT log:\n%s", log);
  }
  free(log);
  return st;
}

/// Shared body of the two loaders: image is NUL-terminated PTX or a cubin;
/// format is what the caller was given (PTX linked into a cubin stays PTX
/// for the manifest's "format").
static enum attnrt_status load_module(attnrt_runtime *rt, const void *image,
                                      enum image_format format,
                                      const char *manifest_json,
                                      attnrt_module **out) {
  attnrt_module *m = calloc(1, sizeof *m);
  if (!m)
    return attnrt_fail(rt, ATTNRT_ERR_OUT_OF_MEMORY,
                       "attnrt_module_load: out of host memory");
  m->rt = rt;
  enum attnrt_status st = attnrt_manifest_parse(manifest_json, &m->manifest);
  if (st != ATTNRT_OK) {
    attnrt_fail(rt, st, "%s", attnrt_thread_error());
    goto out_free;
  }
  const char *declared = m->manifest->format;
  if (declared && strcmp(declared, format_name(format)) != 0) {
    st = attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                     "manifest format is \"%s\" but a %s image was given",
                     declared, format_name(format));
    goto out_destroy_manifest;
  }
  if (m->manifest->nkernels > 0) {
    m->functions = calloc(m->manifest->nkernels, sizeof *m->functions);
    if (!m->functions) {
      st = attnrt_fail(rt, ATTNRT_ERR_OUT_OF_MEMORY,
                       "attnrt_module_load: out of host memory");
      goto out_destroy_manifest;
    }
  }
  size_t nmaps =
      attnrt_manifest_maps_before(m->manifest, m->manifest->nkernels);
  if (nmaps > 0) {
    // The size is a multiple of the alignment, as aligned_alloc requires.
    size_t bytes = nmaps * sizeof *m->maps;
    m->maps = aligned_alloc(_Alignof(struct attnrt_tensormap_slot), bytes);
    if (!m->maps) {
      st = attnrt_fail(rt, ATTNRT_ERR_OUT_OF_MEMORY,
                       "attnrt_module_load: out of host memory");
      goto out_destroy_manifest;
    }
    memset(m->maps, 0, bytes);
  }
  if (m->manifest->nprograms > 0) {
    m->workspace = calloc(m->manifest->nprograms, sizeof *m->workspace);
    m->workspace_zeroed =
        calloc(m->manifest->nprograms, sizeof *m->workspace_zeroed);
    if (!m->workspace || !m->workspace_zeroed) {
      st = attnrt_fail(rt, ATTNRT_ERR_OUT_OF_MEMORY,
                       "attnrt_module_load: out of host memory");
      goto out_destroy_manifest;
    }
  }
  st = attnrt_ctx_enter(rt);
  if (st != ATTNRT_OK)
    goto out_destroy_manifest;
  st = load_image(m, image);
  if (st != ATTNRT_OK)
    goto out_leave_ctx;
  st = resolve_kernels(m);
  if (st != ATTNRT_OK)
    goto out_unload_module;
  st = attnrt_ctx_leave(rt, ATTNRT_OK);
  if (st != ATTNRT_OK) {
    // The pop failed, so no context was pushed that still needs popping.
    rt->cu.ModuleUnload(m->module);
    goto out_destroy_manifest;
  }
  *out = m;
  return ATTNRT_OK;

out_unload_module:
  rt->cu.ModuleUnload(m->module);
out_leave_ctx:
  attnrt_ctx_leave(rt, st);
out_destroy_manifest:
  free(m->workspace);
  free(m->workspace_zeroed);
  free(m->maps);
  free(m->functions);
  attnrt_manifest_destroy(m->manifest);
out_free:
  free(m);
  return st;
}

ATTNRT_API enum attnrt_status
attnrt_module_load_ptx(attnrt_runtime *rt, const char *ptx, size_t len,
                       const char *manifest_json, attnrt_module **out) {
  if (out)
    *out = NULL;
  if (!rt)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_module_load_ptx: runtime is NULL");
  if (!ptx || !manifest_json || !out)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_module_load_ptx: %s is NULL",
                       !ptx ? "ptx" : !manifest_json ? "manifest" : "out");
  // The driver reads PTX up to its NUL: copy text given by length unless the
  // NUL is already inside it.
  const char *text = ptx;
  char *copy = NULL;
  if (len == 0) {
    len = strlen(ptx);
  } else if (memchr(ptx, '\0', len) == NULL) {
    copy = malloc(len + 1);
    if (!copy)
      return attnrt_fail(rt, ATTNRT_ERR_OUT_OF_MEMORY,
                         "attnrt_module_load_ptx: out of host memory");
    memcpy(copy, ptx, len);
    copy[len] = '\0';
    text = copy;
  }
  enum attnrt_status st;
  if (len == 0 || text[0] == '\0') {
    st = attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                     "attnrt_module_load_ptx: ptx is empty");
  } else if (attnrt_ptx_needs_nccl_shim(text, 0)) {
    // nvJitLink links the PTX with the NCCL device shim into one cubin,
    // which the driver loads in the PTX's place.
    void *cubin = NULL;
    size_t cubin_len = 0;
    st = attnrt_ptx_link(text, 0, NULL, &cubin, &cubin_len);
    if (st != ATTNRT_OK)
      attnrt_fail(rt, st, "attnrt_module_load_ptx: %s", attnrt_thread_error());
    else
      st = load_module(rt, cubin, IMAGE_PTX, manifest_json, out);
    attnrt_cubin_free(cubin);
  } else {
    st = load_module(rt, text, IMAGE_PTX, manifest_json, out);
  }
  free(copy);
  return st;
}

ATTNRT_API enum attnrt_status
attnrt_module_load_cubin(attnrt_runtime *rt, const void *cubin, size_t len,
                         const char *manifest_json, attnrt_module **out) {
  if (out)
    *out = NULL;
  if (!rt)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_module_load_cubin: runtime is NULL");
  if (!cubin || !manifest_json || !out)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_module_load_cubin: %s is NULL",
                       !cubin ? "cubin" : !manifest_json ? "manifest" : "out");
  if (len == 0)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_module_load_cubin: image length is 0");
  return load_module(rt, cubin, IMAGE_CUBIN, manifest_json, out);
}

ATTNRT_API void attnrt_module_destroy(attnrt_module *m) {
  if (!m)
    return;
  attnrt_runtime *rt = m->rt;
  // A void function cannot report: failures stay in attnrt_last_error(rt).
  if (attnrt_ctx_enter(rt) == ATTNRT_OK) {
    for (size_t i = 0; i < m->manifest->nprograms; ++i)
      if (m->workspace[i] != 0)
        attnrt_check_cu(rt, rt->cu.MemFree((CUdeviceptr)m->workspace[i]),
                        "cuMemFree(workspace of program '%s')",
                        m->manifest->programs[i].info.name);
    attnrt_check_cu(rt, rt->cu.ModuleUnload(m->module), "cuModuleUnload");
    attnrt_ctx_leave(rt, ATTNRT_OK);
  }
  free(m->workspace);
  free(m->workspace_zeroed);
  free(m->maps);
  free(m->functions);
  attnrt_manifest_destroy(m->manifest);
  free(m);
}

ATTNRT_API int attnrt_module_kernel_count(const attnrt_module *m) {
  return m ? attnrt_manifest_kernel_count(m->manifest) : 0;
}

ATTNRT_API const struct attnrt_kernel_info *
attnrt_module_kernel(const attnrt_module *m, const char *name) {
  return m ? attnrt_manifest_kernel(m->manifest, name) : NULL;
}

ATTNRT_API int attnrt_module_program_count(const attnrt_module *m) {
  return m ? attnrt_manifest_program_count(m->manifest) : 0;
}

ATTNRT_API const struct attnrt_program_info *
attnrt_module_program(const attnrt_module *m, const char *name) {
  return m ? attnrt_manifest_program(m->manifest, name) : NULL;
}

ATTNRT_API const attnrt_manifest *attnrt_module_manifest(const attnrt_module *m) {
  return m ? m->manifest : NULL;
}
