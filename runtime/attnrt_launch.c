// attnrt_launch.c - checks launch arguments against the manifest and queues kernels with cuLaunchKernel.

#include "attnrt_internal.h"

/// Checks args against kernel k's manifest parameters.
/// Returns ATTNRT_ERR_INVALID_ARGUMENT naming the kernel and parameter.
static enum attnrt_status check_args(attnrt_runtime *rt,
                                     const struct attnrt_kernel_info *k,
                                     const struct attnrt_arg *args,
                                     size_t nargs) {
  if (nargs != k->nparams)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "kernel '%s' expects %zu argument%s, got %zu", k->name,
                       k->nparams, k->nparams == 1 ? "" : "s", nargs);
  if (nargs > 0 && !args)
    return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "kernel '%s': args is NULL but %zu arguments are expected",
                       k->name, nargs);
  for (size_t i = 0; i < nargs; ++i) {
    const struct attnrt_param_info *p = &k->params[i];
    if (args[i].kind != p->kind)
      return attnrt_fail(rt, ATTNRT_ERR_INVALID_ARGUMENT,
                         "kernel '%s' parameter %zu ('%s') expects %s, got %s",
                         k->name, i, p->name, attnrt_arg_kind_name(p->kind),
                         attnrt_arg_kind_name(args[i].kind));
  }
  return ATTNRT_OK;
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
  enum attnrt_status st = check_args(rt, k, args, nargs);
  if (st != ATTNRT_OK)
    return st;
  CUstream stream = NULL;
  st = attnrt_stream_resolve(rt, s, "attnrt_launch", &stream);
  if (st != ATTNRT_OK)
    return st;

  // Every union member starts at the value's address, so each argument can be
  // passed in place; cuLaunchKernel only reads through these pointers.
  void *params[ATTNRT_MAX_KERNEL_PARAMS];
  for (size_t i = 0; i < nargs; ++i)
    params[i] = (void *)&args[i].v;

  st = attnrt_ctx_enter(rt);
  if (st != ATTNRT_OK)
    return st;
  st = attnrt_check_cu(
      rt,
      rt->cu.LaunchKernel(m->functions[index], k->grid[0], k->grid[1],
                          k->grid[2], k->block[0], k->block[1], k->block[2],
                          k->dynamic_shared_bytes, stream,
                          nargs > 0 ? params : NULL, NULL),
      "cuLaunchKernel('%s', grid %ux%ux%u, block %ux%ux%u, %u dynamic shared "
      "bytes)",
      k->name, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
      k->block[2], k->dynamic_shared_bytes);
  return attnrt_ctx_leave(rt, st);
}
