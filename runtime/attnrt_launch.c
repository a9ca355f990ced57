// attnrt_launch.c - checks launch arguments against the manifest, encodes tensor map parameters and queues kernels with cuLaunchKernel.

#include "attnrt_internal.h"

#include <assert.h>
#include <stdio.h>

// Marks a parameter in arg_of that has no caller argument (a tensormap).
#define DERIVED ((size_t)-1)

/// Checks args against the parameters of kernel k that callers pass and
/// stores in arg_of[i] the index in args of parameter i (DERIVED for
/// tensormaps). Returns ATTNRT_ERR_INVALID_ARGUMENT naming the kernel and
/// parameter.
static enum attnrt_status check_args(attnrt_runtime *rt,
                                     const struct attnrt_kernel_info *k,
                                     const struct attnrt_arg *args,
                                     size_t nargs, size_t *arg_of) {
  size_t derived = k->nparams - k->nargs;
  if (nargs != k->nargs && derived == 0)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "kernel '%s' expects %zu argument%s, got %zu", k->name,
                       k->nargs, k->nargs == 1 ? "" : "s", nargs);
  if (nargs != k->nargs)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "kernel '%s' expects %zu argument%s, got %zu: %zu of "
                       "its %zu parameters %s derived by attnrt (tensor maps) "
                       "and not passed",
                       k->name, k->nargs, k->nargs == 1 ? "" : "s", nargs,
                       derived, k->nparams, derived == 1 ? "is" : "are");
  if (nargs > 0 && !args)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "kernel '%s': args is NULL but %zu arguments are expected",
                       k->name, nargs);
  size_t a = 0;
  for (size_t i = 0; i < k->nparams; ++i) {
    const struct attnrt_param_info *p = &k->params[i];
    if (p->kind == ATTNRT_ARG_TENSORMAP) {
      arg_of[i] = DERIVED;
      continue;
    }
    arg_of[i] = a;
    if (args[a].kind != p->kind && a == i)
      return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                         "kernel '%s' parameter %zu ('%s') expects %s, got %s",
                         k->name, i, p->name, attnrt_arg_kind_name(p->kind),
                         attnrt_arg_kind_name(args[a].kind));
    if (args[a].kind != p->kind)
      return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                         "kernel '%s' parameter %zu ('%s', argument %zu) "
                         "expects %s, got %s",
                         k->name, i, p->name, a, attnrt_arg_kind_name(p->kind),
                         attnrt_arg_kind_name(args[a].kind));
    if (p->kind == ATTNRT_ARG_PTR && p->align > 1 &&
        args[a].v.ptr % p->align != 0)
      return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                         "kernel '%s' parameter %zu ('%s') needs a %u-byte "
                         "aligned pointer, got 0x%llx",
                         k->name, i, p->name, p->align,
                         (unsigned long long)args[a].v.ptr);
    ++a;
  }
  return ATTNRT_OK;
}

//===-- Tensor maps --===//

/// Returns the address a tensormap parameter p encodes: the argument of its
/// "tensor" parameter.
static attnrt_devptr tensormap_address(const struct attnrt_param_info *p,
                                       const struct attnrt_arg *args,
                                       const size_t *arg_of) {
  return args[arg_of[p->tensormap.tensor]].v.ptr;
}

/// Checks the addresses of k's tensormaps: TMA needs them 16-byte aligned.
static enum attnrt_status check_tensormap_addresses(
    attnrt_runtime *rt, const struct attnrt_kernel_info *k,
    const struct attnrt_arg *args, const size_t *arg_of) {
  for (size_t i = 0; i < k->nparams; ++i) {
    const struct attnrt_param_info *p = &k->params[i];
    if (p->kind != ATTNRT_ARG_TENSORMAP)
      continue;
    attnrt_devptr address = tensormap_address(p, args, arg_of);
    if (address == 0 || address % 16 != 0)
      return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                         "kernel '%s' tensor map '%s': address 0x%llx of "
                         "parameter '%s' is %s",
                         k->name, p->name, (unsigned long long)address,
                         k->params[p->tensormap.tensor].name,
                         address == 0 ? "null" : "not 16-byte aligned");
  }
  if (k->nargs != k->nparams && !rt->cu.TensorMapEncodeTiled)
    return attnrt_fail(rt, ATTNRT_ERR_NO_DEVICE,
                       "kernel '%s' has tensor map parameters but the CUDA "
                       "driver has no cuTensorMapEncodeTiled (CUDA 12.0 or "
                       "later is needed)",
                       k->name);
  return ATTNRT_OK;
}

/// Appends " name [a, b, c]" for the first n entries of v to rt's message.
static void append_list(attnrt_runtime *rt, const char *name,
                        const uint64_t *v, int n) {
  attnrt_append_error(rt, " %s [", name);
  for (int i = 0; i < n; ++i)
    attnrt_append_error(rt, "%s%llu", i ? ", " : "",
                        (unsigned long long)v[i]);
  attnrt_append_error(rt, "]");
}

/// Makes slot hold the tensor map of parameter p over address, encoding it
/// unless slot already holds that address's map. Runs in rt's context.
static enum attnrt_status encode_tensormap(attnrt_runtime *rt,
                                           const struct attnrt_kernel_info *k,
                                           const struct attnrt_param_info *p,
                                           attnrt_devptr address,
                                           struct attnrt_tensormap_slot *slot) {
  if (slot->valid && slot->address == address)
    return ATTNRT_OK;
  slot->valid = false;
  const struct attnrt_tensormap_info *t = &p->tensormap;
  CUtensorMapDataType type = CU_TENSOR_MAP_DATA_TYPE_UINT8;
  bool known = attnrt_tensormap_data_type(p->dtype, &type);
  assert(known && "the manifest parser checks tensormap dtypes");
  (void)known;
  cuuint64_t dims[ATTNRT_TENSORMAP_MAX_RANK];
  cuuint64_t strides[ATTNRT_TENSORMAP_MAX_RANK - 1] = {0};
  cuuint32_t box[ATTNRT_TENSORMAP_MAX_RANK];
  cuuint32_t element_strides[ATTNRT_TENSORMAP_MAX_RANK];
  for (int i = 0; i < t->rank; ++i) {
    dims[i] = t->dims[i];
    box[i] = t->box[i];
    element_strides[i] = 1;
    if (i + 1 < t->rank)
      strides[i] = t->strides[i];
  }
  CUtensorMapSwizzle swizzle = t->swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                               : t->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                               : t->swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                  : CU_TENSOR_MAP_SWIZZLE_NONE;
  CUresult res = rt->cu.TensorMapEncodeTiled(
      &slot->map, type, (cuuint32_t)t->rank, (void *)(uintptr_t)address, dims,
      strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  enum attnrt_status st = attnrt_check_cu(
      rt, res, "cuTensorMapEncodeTiled('%s' of kernel '%s')", p->name, k->name);
  if (st != ATTNRT_OK) {
    attnrt_append_error(rt, "; %s over '%s' at 0x%llx,", p->dtype,
                        k->params[t->tensor].name,
                        (unsigned long long)address);
    append_list(rt, "dims", t->dims, t->rank);
    append_list(rt, "strides", t->strides, t->rank - 1);
    uint64_t box64[ATTNRT_TENSORMAP_MAX_RANK];
    for (int i = 0; i < t->rank; ++i)
      box64[i] = t->box[i];
    append_list(rt, "box", box64, t->rank);
    attnrt_append_error(rt, " swizzle %u", t->swizzle);
    return st;
  }
  slot->address = address;
  slot->valid = true;
  return ATTNRT_OK;
}

//===-- Launch --===//

/// Checks args against kernel k (see check_args) and the addresses of its
/// tensor maps, filling arg_of.
static enum attnrt_status check_launch(attnrt_runtime *rt,
                                       const struct attnrt_kernel_info *k,
                                       const struct attnrt_arg *args,
                                       size_t nargs, size_t *arg_of) {
  enum attnrt_status st = check_args(rt, k, args, nargs, arg_of);
  if (st != ATTNRT_OK)
    return st;
  return check_tensormap_addresses(rt, k, args, arg_of);
}

/// Encodes the tensor maps of kernel index of m and queues it on stream with
/// args checked by check_launch. Runs in rt's context.
static enum attnrt_status queue_kernel(attnrt_module *m, size_t index,
                                       const struct attnrt_arg *args,
                                       const size_t *arg_of, CUstream stream) {
  attnrt_runtime *rt = m->rt;
  const struct attnrt_kernel_info *k = &m->manifest->kernels[index];
  // Every union member starts at the value's address, so each argument can be
  // passed in place; tensor maps are passed from the module's slots, which
  // outlive the call. cuLaunchKernel only reads through these pointers.
  void *params[ATTNRT_MAX_KERNEL_PARAMS];
  struct attnrt_tensormap_slot *slot = NULL;
  if (k->nargs != k->nparams)
    slot = m->maps + attnrt_manifest_maps_before(m->manifest, index);
  for (size_t i = 0; i < k->nparams; ++i) {
    const struct attnrt_param_info *p = &k->params[i];
    if (p->kind != ATTNRT_ARG_TENSORMAP) {
      params[i] = (void *)&args[arg_of[i]].v;
      continue;
    }
    enum attnrt_status st =
        encode_tensormap(rt, k, p, tensormap_address(p, args, arg_of), slot);
    if (st != ATTNRT_OK)
      return st;
    params[i] = &slot->map;
    ++slot;
  }
  return attnrt_check_cu(
      rt,
      rt->cu.LaunchKernel(m->functions[index], k->grid[0], k->grid[1],
                          k->grid[2], k->block[0], k->block[1], k->block[2],
                          k->dynamic_shared_bytes, stream,
                          k->nparams > 0 ? params : NULL, NULL),
      "cuLaunchKernel('%s', grid %ux%ux%u, block %ux%ux%u, %u dynamic shared "
      "bytes)",
      k->name, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
      k->block[2], k->dynamic_shared_bytes);
}

ATTNRT_API enum attnrt_status attnrt_launch(attnrt_module *m,
                                            const char *kernel,
                                            const struct attnrt_arg *args,
                                            size_t nargs, attnrt_stream *s) {
  if (!m)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_launch: module is NULL");
  attnrt_runtime *rt = m->rt;
  if (!kernel)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_launch: kernel name is NULL");
  int index = attnrt_manifest_find(m->manifest, kernel);
  if (index < 0)
    return attnrt_fail(rt, ATTNRT_ERR_NOT_FOUND,
                       "attnrt_launch: module has no kernel '%s'", kernel);
  const struct attnrt_kernel_info *k = &m->manifest->kernels[index];
  size_t arg_of[ATTNRT_MAX_KERNEL_PARAMS];
  enum attnrt_status st = check_launch(rt, k, args, nargs, arg_of);
  if (st != ATTNRT_OK)
    return st;
  CUstream stream = NULL;
  st = attnrt_stream_resolve(rt, s, "attnrt_launch", &stream);
  if (st != ATTNRT_OK)
    return st;
  st = attnrt_ctx_enter(rt);
  if (st != ATTNRT_OK)
    return st;
  st = queue_kernel(m, (size_t)index, args, arg_of, stream);
  return attnrt_ctx_leave(rt, st);
}

//===-- Programs --===//

/// Checks the caller's args against the inputs of program p: one ptr each.
static enum attnrt_status check_inputs(attnrt_runtime *rt,
                                       const struct attnrt_program *p,
                                       const struct attnrt_arg *args,
                                       size_t nargs) {
  const struct attnrt_program_info *info = &p->info;
  if (nargs != info->ninputs) {
    attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                "program '%s' expects %zu argument%s, got %zu", info->name,
                info->ninputs, info->ninputs == 1 ? "" : "s", nargs);
    for (size_t i = 0; i < info->ninputs; ++i)
      attnrt_append_error(rt, "%s%s", i ? ", " : " (", info->inputs[i]);
    if (info->ninputs > 0)
      attnrt_append_error(rt, ")");
    return ATTNRT_ERR_INVALID_ARGUMENT;
  }
  if (nargs > 0 && !args)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "program '%s': args is NULL but %zu arguments are "
                       "expected",
                       info->name, nargs);
  for (size_t i = 0; i < nargs; ++i)
    if (args[i].kind != ATTNRT_ARG_PTR)
      return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                         "program '%s' input %zu ('%s') expects ptr, got %s",
                         info->name, i, info->inputs[i],
                         attnrt_arg_kind_name(args[i].kind));
  return ATTNRT_OK;
}

/// Allocates the workspace of program index of m unless it has one already
/// (attnrt_program_launch zero-fills it once its checks pass).
static enum attnrt_status ensure_workspace(attnrt_module *m, size_t index) {
  const struct attnrt_program *p = &m->manifest->programs[index];
  if (p->info.workspace_bytes == 0 || m->workspace[index] != 0)
    return ATTNRT_OK;
  attnrt_devptr base = 0;
  enum attnrt_status st =
      attnrt_mem_alloc(m->rt, p->info.workspace_bytes, &base);
  if (st != ATTNRT_OK) {
    attnrt_append_error(m->rt, "; workspace of program '%s' (",
                        p->info.name);
    for (size_t i = 0; i < p->info.nworkspace; ++i)
      attnrt_append_error(m->rt, "%s%s: %zu bytes", i ? ", " : "",
                          p->workspace[i], p->workspace_size[i]);
    attnrt_append_error(m->rt, ")");
    return st;
  }
  // cuMemAlloc aligns to 256 bytes; the offsets keep that for every buffer.
  m->workspace[index] = base;
  return ATTNRT_OK;
}

/// Fills args with the arguments of step of program p: the caller's inputs
/// and the addresses of the workspace buffers at base.
static void bind_step(const struct attnrt_program *p,
                      const struct attnrt_program_step *step, size_t nargs,
                      const struct attnrt_arg *inputs, attnrt_devptr base,
                      struct attnrt_arg *args) {
  for (size_t i = 0; i < nargs; ++i) {
    size_t slot = step->slots[i];
    args[i].kind = ATTNRT_ARG_PTR;
    args[i].v.ptr = slot < p->info.ninputs
                        ? inputs[slot].v.ptr
                        : base + p->workspace_offset[slot - p->info.ninputs];
  }
}

ATTNRT_API enum attnrt_status
attnrt_program_launch(attnrt_module *m, const char *name,
                      const struct attnrt_arg *args, size_t nargs,
                      attnrt_stream *s) {
  if (!m)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_program_launch: module is NULL");
  attnrt_runtime *rt = m->rt;
  if (!name)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_program_launch: name is NULL");
  int index = attnrt_manifest_find_program(m->manifest, name);
  if (index < 0) {
    if (attnrt_manifest_find(m->manifest, name) >= 0)
      return attnrt_launch(m, name, args, nargs, s);
    return attnrt_fail(rt, ATTNRT_ERR_NOT_FOUND,
                       "attnrt_program_launch: module has no program or "
                       "kernel '%s'",
                       name);
  }
  const struct attnrt_program *p = &m->manifest->programs[index];
  enum attnrt_status st = check_inputs(rt, p, args, nargs);
  if (st != ATTNRT_OK)
    return st;
  CUstream stream = NULL;
  st = attnrt_stream_resolve(rt, s, "attnrt_program_launch", &stream);
  if (st != ATTNRT_OK)
    return st;
  st = ensure_workspace(m, (size_t)index);
  if (st != ATTNRT_OK)
    return st;

  // Check every step before queuing any, so a bad call queues nothing.
  attnrt_devptr base = m->workspace[index];
  struct attnrt_arg step_args[ATTNRT_MAX_KERNEL_PARAMS];
  size_t arg_of[ATTNRT_MAX_KERNEL_PARAMS];
  for (size_t i = 0; i < p->info.nsteps; ++i) {
    const struct attnrt_kernel_info *k =
        &m->manifest->kernels[p->steps[i].kernel];
    bind_step(p, &p->steps[i], k->nargs, args, base, step_args);
    st = check_launch(rt, k, step_args, k->nargs, arg_of);
    if (st != ATTNRT_OK) {
      attnrt_append_error(rt, " (step %zu of program '%s')", i, name);
      return st;
    }
  }
  // The workspace is zero-filled once, on the stream of the first launch
  // that got this far (so a call that fails its checks queues nothing):
  // kernels may keep state there from launch to launch (the ahead RoPE
  // placement's ticket counter and flags), counting on zeros at the start.
  if (p->info.workspace_bytes > 0 && !m->workspace_zeroed[index]) {
    st = attnrt_memset_d8(rt, base, 0, p->info.workspace_bytes, s);
    if (st != ATTNRT_OK) {
      attnrt_append_error(rt, " (zeroing the workspace of program '%s')",
                          name);
      return st;
    }
    m->workspace_zeroed[index] = true;
  }
  st = attnrt_ctx_enter(rt);
  if (st != ATTNRT_OK)
    return st;
  for (size_t i = 0; i < p->info.nsteps && st == ATTNRT_OK; ++i) {
    const struct attnrt_kernel_info *k =
        &m->manifest->kernels[p->steps[i].kernel];
    bind_step(p, &p->steps[i], k->nargs, args, base, step_args);
    st = check_launch(rt, k, step_args, k->nargs, arg_of);
    if (st == ATTNRT_OK)
      st = queue_kernel(m, p->steps[i].kernel, step_args, arg_of, stream);
    if (st != ATTNRT_OK)
      attnrt_append_error(rt, " (step %zu of program '%s'; %zu of its %zu "
                          "steps queued)",
                          i, name, i, p->info.nsteps);
  }
  return attnrt_ctx_leave(rt, st);
}
