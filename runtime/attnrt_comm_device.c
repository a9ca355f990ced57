// attnrt_comm_device.c - what kernels use to reach the other ranks: NCCL device communicators (attnrt_comm_dev_create, for kernels that call NCCL's device API through the shim), per-buffer tables of the peers' addresses (attnrt_comm_buffer_peers, computed once by the shim's attn_nccl_peer_table kernel, for attn's fused kernels, which call nothing), and the launch of those fused kernels with their workspace, table, the output's table when it is a symmetric buffer, rank and launch number (attnrt_comm_launch, attnrt_comm_launch_out).

#include "attnrt_comm_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//===-- Device communicators --===//

/// Frees what attnrt_comm_dev_destroy was not called for: device and host
/// memory only, since NCCL releases its side with the communicator.
void attnrt_comm_free_dev_comms(attnrt_comm *c) {
  if (!c->dev_comms)
    return;
  bool entered = attnrt_ctx_enter(c->rt) == ATTNRT_OK;
  while (c->dev_comms) {
    struct dev_comm *d = c->dev_comms;
    c->dev_comms = d->next;
    if (entered && d->device)
      attnrt_check_cu(c->rt, c->rt->cu.MemFree((CUdeviceptr)d->device),
                      "cuMemFree(device communicator)");
    free(d);
  }
  if (entered)
    attnrt_ctx_leave(c->rt, ATTNRT_OK);
}

/// Fails unless the loaded NCCL has the 2.28 device API the shim follows.
static enum attnrt_status check_device_api(attnrt_comm *c, const char *caller) {
  if (c->version < nccl_version_code(2, 28, 0) || c->version >= nccl_version_code(2, 29, 0))
    return attnrt_fail(c->rt, ATTNRT_ERR_NCCL,
                       "%s: NCCL %d is not 2.28: attnrt's device communicators "
                       "and the NCCL device shim follow the NCCL 2.28 device ABI",
                       caller, c->version);
  if (!c->nccl.DevCommCreate || !c->nccl.DevCommDestroy || !c->nccl.TeamLsa ||
      !c->nccl.LsaBarrierCreateRequirement)
    return attnrt_fail(c->rt, ATTNRT_ERR_NCCL,
                       "%s: NCCL %d lacks the device API (%s)", caller, c->version,
                       !c->nccl.DevCommCreate    ? "ncclDevCommCreate"
                       : !c->nccl.DevCommDestroy ? "ncclDevCommDestroy"
                       : !c->nccl.TeamLsa        ? "ncclTeamLsa"
                                                 : "ncclLsaBarrierCreateRequirement");
  return ATTNRT_OK;
}

/// Runs ncclDevCommCreate into d->blob with lsa_barriers barriers of
/// attnrt's own over the LSA team. Needs the runtime's context current.
static enum attnrt_status create_nccl_dev_comm(attnrt_comm *c, struct dev_comm *d,
                                               int lsa_barriers) {
  // Zeroed and larger than NCCL 2.28's structs, which NCCL copies whole.
  _Alignas(16) unsigned char requirements[NCCL_REQUIREMENTS_BYTES];
  _Alignas(16) unsigned char barrier[NCCL_REQUIREMENTS_BYTES];
  memset(requirements, 0, sizeof requirements);
  memset(barrier, 0, sizeof barrier);
  if (lsa_barriers > 0) {
    // attnrt's barriers rather than requirements.lsaBarrierCount, whose
    // offset and ncclDevComm::lsaBarrier's changed within 2.28; the handle's
    // buffer is assigned when creation completes.
    struct nccl_team lsa = c->nccl.TeamLsa(c->comm);
    nccl_result res =
        c->nccl.LsaBarrierCreateRequirement(lsa, lsa_barriers, d->blob, barrier);
    if (res != NCCL_SUCCESS)
      return attnrt_comm_fail_nccl(c, res, "ncclLsaBarrierCreateRequirement(%d barriers)",
                       lsa_barriers);
    void *list = barrier;
    memcpy(requirements, &list, sizeof list); // resourceRequirementsList
  }
  return attnrt_comm_finish_call(c,
                     c->nccl.DevCommCreate(c->comm, requirements,
                                           d->blob + ATTNRT_DEV_COMM_NCCL_OFFSET),
                     "ncclDevCommCreate");
}

ATTNRT_API enum attnrt_status attnrt_comm_dev_create(attnrt_comm *c,
                                                     int lsa_barriers,
                                                     attnrt_devptr *dev_comm) {
  if (!c)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_dev_create: communicator is NULL");
  if (!dev_comm)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_dev_create: dev_comm is NULL");
  *dev_comm = 0;
  if (lsa_barriers < 0)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_dev_create: barrier count %d is negative",
                       lsa_barriers);
  enum attnrt_status st = attnrt_comm_check_usable(c, "attnrt_comm_dev_create");
  if (st == ATTNRT_OK)
    st = check_device_api(c, "attnrt_comm_dev_create");
  if (st != ATTNRT_OK)
    return st;
  struct dev_comm *d = aligned_alloc(_Alignof(struct dev_comm), sizeof *d);
  if (!d)
    return attnrt_fail(c->rt, ATTNRT_ERR_OUT_OF_MEMORY,
                       "attnrt_comm_dev_create: out of host memory");
  memset(d, 0, sizeof *d);
  st = attnrt_ctx_enter(c->rt);
  if (st != ATTNRT_OK)
    goto out_free;
  st = create_nccl_dev_comm(c, d, lsa_barriers);
  if (st != ATTNRT_OK)
    goto out_leave;
  CUdeviceptr p = 0;
  st = attnrt_check_cu(c->rt, c->rt->cu.MemAlloc(&p, sizeof d->blob),
                       "cuMemAlloc(device communicator, %zu bytes)", sizeof d->blob);
  if (st == ATTNRT_OK) {
    st = attnrt_check_cu(c->rt, c->rt->cu.MemcpyHtoD(p, d->blob, sizeof d->blob),
                         "cuMemcpyHtoD(device communicator)");
    if (st != ATTNRT_OK)
      c->rt->cu.MemFree(p);
  }
  if (st != ATTNRT_OK) {
    // The message stays the driver's; NCCL's side goes back regardless.
    c->nccl.DevCommDestroy(c->comm, d->blob + ATTNRT_DEV_COMM_NCCL_OFFSET);
    goto out_leave;
  }
  d->device = (attnrt_devptr)p;
  d->next = c->dev_comms;
  c->dev_comms = d;
  *dev_comm = d->device;
  return attnrt_ctx_leave(c->rt, ATTNRT_OK);

out_leave:
  attnrt_ctx_leave(c->rt, st);
out_free:
  free(d);
  return st;
}

ATTNRT_API enum attnrt_status attnrt_comm_dev_destroy(attnrt_comm *c,
                                                      attnrt_devptr dev_comm) {
  if (!c)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_dev_destroy: communicator is NULL");
  if (dev_comm == 0)
    return ATTNRT_OK;
  struct dev_comm **link = &c->dev_comms;
  while (*link && (*link)->device != dev_comm)
    link = &(*link)->next;
  struct dev_comm *d = *link;
  if (!d)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_dev_destroy: 0x%llx is not a device "
                       "communicator of this communicator",
                       (unsigned long long)dev_comm);
  *link = d->next;
  enum attnrt_status st = attnrt_ctx_enter(c->rt);
  bool entered = st == ATTNRT_OK;
  // After an abort NCCL's side went with the communicator.
  if (entered && c->comm)
    st = attnrt_comm_finish_call(c,
                     c->nccl.DevCommDestroy(c->comm, d->blob + ATTNRT_DEV_COMM_NCCL_OFFSET),
                     "ncclDevCommDestroy");
  if (entered) {
    enum attnrt_status freed = attnrt_check_cu(
        c->rt, c->rt->cu.MemFree((CUdeviceptr)d->device), "cuMemFree(device communicator)");
    st = attnrt_ctx_leave(c->rt, st != ATTNRT_OK ? st : freed);
  }
  free(d);
  return st;
}

//===-- Peer tables --===//

/// Unloads the shim module of attnrt_comm_buffer_peers, if loaded.
void attnrt_comm_unload_shim(attnrt_comm *c) {
  if (!c->shim || attnrt_ctx_enter(c->rt) != ATTNRT_OK)
    return;
  attnrt_check_cu(c->rt, c->rt->cu.ModuleUnload(c->shim), "cuModuleUnload(NCCL device shim)");
  c->shim = NULL;
  c->peer_table = NULL;
  attnrt_ctx_leave(c->rt, ATTNRT_OK);
}

/// Loads the NCCL device shim as a module of c's runtime (once) and finds
/// its attn_nccl_peer_table kernel. The shim defines every function it
/// calls, so the driver compiles it alone, without nvJitLink. Needs the
/// runtime's context current.
static enum attnrt_status load_shim(attnrt_comm *c) {
  if (c->shim)
    return ATTNRT_OK;
  const char *ptx = attnrt_nccl_shim_ptx(NULL);
  char log[2048] = "";
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, (void *)(uintptr_t)sizeof log};
  CUmodule m = NULL;
  enum attnrt_status st = attnrt_check_cu(
      c->rt, c->rt->cu.ModuleLoadDataEx(&m, ptx, 2, options, values),
      "cuModuleLoadDataEx(NCCL device shim)");
  if (st != ATTNRT_OK) {
    log[sizeof log - 1] = '\0';
    if (log[0])
      attnrt_append_error(c->rt, "; JIT log:\n%s", log);
    return st;
  }
  CUfunction f = NULL;
  st = attnrt_check_cu(c->rt, c->rt->cu.ModuleGetFunction(&f, m, "attn_nccl_peer_table"),
                       "cuModuleGetFunction(attn_nccl_peer_table)");
  if (st != ATTNRT_OK) {
    c->rt->cu.ModuleUnload(m);
    return st;
  }
  c->shim = m;
  c->peer_table = f;
  return ATTNRT_OK;
}

/// Fails naming the ranks whose entries in table (n entries) are 0.
static enum attnrt_status check_reachable(attnrt_comm *c, const uint64_t *table, int n) {
  int missing = 0;
  for (int p = 0; p < n; ++p)
    missing += table[p] == 0;
  if (missing == 0)
    return ATTNRT_OK;
  attnrt_fail(c->rt, ATTNRT_ERR_NCCL,
              "attnrt_comm_buffer_peers: rank %d cannot reach the buffer of %d "
              "of %d ranks by load/store (NCCL gives no peer pointer: they are "
              "outside its LSA team, e.g. on another node or without NVLink); "
              "unreachable ranks:",
              c->rank, missing, n);
  const char *sep = " ";
  for (int p = 0; p < n; ++p)
    if (table[p] == 0) {
      attnrt_append_error(c->rt, "%s%d", sep, p);
      sep = ", ";
    }
  return ATTNRT_ERR_NCCL;
}

/// Runs attn_nccl_peer_table for b into new device memory, reads it back and
/// checks it. Needs the runtime's context current.
static enum attnrt_status make_peer_table(attnrt_comm_buffer *b, attnrt_devptr dev_comm,
                                          CUdeviceptr *out) {
  attnrt_comm *c = b->c;
  attnrt_runtime *rt = c->rt;
  size_t bytes = (size_t)c->size * sizeof(uint64_t);
  uint64_t *host = malloc(bytes);
  if (!host)
    return attnrt_fail(rt, ATTNRT_ERR_OUT_OF_MEMORY,
                       "attnrt_comm_buffer_peers: out of host memory");
  CUdeviceptr table = 0;
  enum attnrt_status st = attnrt_check_cu(rt, rt->cu.MemAlloc(&table, bytes),
                                          "cuMemAlloc(peer table, %zu bytes)", bytes);
  if (st != ATTNRT_OK) {
    free(host);
    return st;
  }
  CUdeviceptr comm_arg = (CUdeviceptr)dev_comm, local = (CUdeviceptr)(uintptr_t)b->ptr;
  void *window = b->window;
  int nranks = c->size;
  void *params[] = {&comm_arg, &window, &local, &table, &nranks};
  unsigned threads = nranks < 128 ? 32u * (unsigned)((nranks + 31) / 32) : 128u;
  st = attnrt_check_cu(rt,
                       rt->cu.LaunchKernel(c->peer_table, 1, 1, 1, threads, 1, 1, 0,
                                           NULL, params, NULL),
                       "cuLaunchKernel(attn_nccl_peer_table)");
  // Synchronous on the legacy stream: it waits for the kernel, and reports
  // its failure.
  if (st == ATTNRT_OK)
    st = attnrt_check_cu(rt, rt->cu.MemcpyDtoH(host, table, bytes),
                         "cuMemcpyDtoH(peer table)");
  if (st == ATTNRT_OK)
    st = check_reachable(c, host, nranks);
  free(host);
  if (st != ATTNRT_OK) {
    rt->cu.MemFree(table);
    return st;
  }
  *out = table;
  return ATTNRT_OK;
}

ATTNRT_API enum attnrt_status attnrt_comm_buffer_peers(attnrt_comm_buffer *b,
                                                       attnrt_devptr dev_comm,
                                                       attnrt_devptr *peers) {
  if (!b)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_buffer_peers: buffer is NULL");
  attnrt_comm *c = b->c;
  if (!peers)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_buffer_peers: peers is NULL");
  *peers = 0;
  if (b->peers) {
    *peers = b->peers;
    return ATTNRT_OK;
  }
  struct dev_comm *d = c->dev_comms;
  while (d && (dev_comm == 0 || d->device != dev_comm))
    d = d->next;
  if (!d)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_buffer_peers: dev_comm 0x%llx is not a device "
                       "communicator of the buffer's communicator (make one with "
                       "attnrt_comm_dev_create)",
                       (unsigned long long)dev_comm);
  enum attnrt_status st = attnrt_comm_check_usable(c, "attnrt_comm_buffer_peers");
  if (st != ATTNRT_OK)
    return st;
  if (!attnrt_nccl_shim_available())
    return attnrt_fail(c->rt, ATTNRT_ERR_NOT_FOUND,
                       "attnrt_comm_buffer_peers: this libattnrt was built without "
                       "the NCCL device shim, whose attn_nccl_peer_table computes the "
                       "table (CMake found no nvcc or no NCCL 2.28 nccl_device.h; see "
                       "docs/runtime.md)");
  st = attnrt_ctx_enter(c->rt);
  if (st != ATTNRT_OK)
    return st;
  CUdeviceptr table = 0;
  st = load_shim(c);
  if (st == ATTNRT_OK)
    st = make_peer_table(b, dev_comm, &table);
  if (st == ATTNRT_OK)
    *peers = b->peers = (attnrt_devptr)table;
  return attnrt_ctx_leave(c->rt, st);
}

//===-- Launching fused communication kernels --===//

static bool same_string(const char *a, const char *b) {
  return a && b ? strcmp(a, b) == 0 : a == b;
}

/// Two kernels whose comm entries differ lay out a workspace's flags
/// differently, even under one name (a program recompiled for another
/// shape).
static bool same_comm(const struct attnrt_kernel_comm *a,
                      const struct attnrt_kernel_comm *b) {
  return same_string(a->pattern, b->pattern) &&
         a->world_size == b->world_size &&
         a->workspace_bytes == b->workspace_bytes &&
         same_string(a->split, b->split) &&
         a->compute_ctas == b->compute_ctas && a->comm_ctas == b->comm_ctas;
}

/// The comm entry of a kernel as text, for messages.
static void comm_layout(const struct attnrt_kernel_comm *kc, char *buf,
                        size_t len) {
  snprintf(buf, len, "%s, %u ranks, %zu bytes, %u+%u CTAs, %s split",
           kc->pattern, kc->world_size, kc->workspace_bytes, kc->compute_ctas,
           kc->comm_ctas, kc->split ? kc->split : "default");
}

/// Checks that kernel k of m can run on workspace b with nargs caller
/// arguments (see attnrt_comm_launch).
static enum attnrt_status check_comm_launch(const char *fn,
                                            const attnrt_module *m,
                                            const char *name,
                                            const struct attnrt_kernel_info *k,
                                            const attnrt_comm_buffer *b,
                                            const struct attnrt_arg *args,
                                            size_t nargs) {
  attnrt_comm *c = b->c;
  const struct attnrt_kernel_comm *kc = k->comm;
  if (!kc)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: kernel '%s' is not a fused "
                       "communication kernel (its manifest entry has no "
                       "\"comm\"); launch it with attnrt_launch",
                       fn, name);
  if (m->rt != c->rt)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: the module of '%s' was loaded on "
                       "another runtime than the workspace's communicator's "
                       "(load it on attnrt_comm_runtime)",
                       fn, name);
  if (kc->world_size != (unsigned)c->size)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: kernel '%s' was compiled for %u "
                       "ranks, but the workspace's communicator has %d "
                       "(compile the program with world_size = %d)",
                       fn, name, kc->world_size, c->size, c->size);
  if (b->bytes < kc->workspace_bytes)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: the workspace has %zu bytes, "
                       "kernel '%s' needs %zu (its comm.workspace_bytes)",
                       fn, b->bytes, name, kc->workspace_bytes);
  if (b->kernel && strcmp(b->kernel, name) != 0)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: the workspace holds the flags of "
                       "kernel '%s'; a workspace serves one kernel (allocate "
                       "another for '%s')",
                       fn, b->kernel, name);
  if (b->kernel && !same_comm(&b->served, kc)) {
    char served[256], layout[256];
    comm_layout(&b->served, served, sizeof served);
    comm_layout(kc, layout, sizeof layout);
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: the workspace holds the flags of "
                       "another build of kernel '%s' (%s; this one: %s); a "
                       "workspace serves one kernel (allocate another)",
                       fn, name, served, layout);
  }
  if (nargs + ATTNRT_COMM_KEPT_ARGS != k->nargs || (nargs && !args))
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: kernel '%s' takes %zu arguments "
                       "before its workspace, peers, out_peers, rank and "
                       "epoch; got %zu%s",
                       fn, name, k->nargs - ATTNRT_COMM_KEPT_ARGS, nargs,
                       nargs && !args ? " and no array" : "");
  if (b->launches == INT32_MAX)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: the workspace has served 2^31 - 1 "
                       "launches, the most its flags count; allocate another",
                       fn);
  return ATTNRT_OK;
}

/// Checks out, the symmetric buffer kernel k of m writes its output c into
/// (see attnrt_comm_launch_out), against the workspace and the caller's
/// arguments (already checked against the manifest's count).
static enum attnrt_status check_out(const char *name,
                                    const struct attnrt_kernel_info *k,
                                    const attnrt_comm_buffer *workspace,
                                    const attnrt_comm_buffer *out,
                                    const struct attnrt_arg *args,
                                    size_t nargs) {
  attnrt_comm *c = workspace->c;
  if (out->c != c)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_launch_out: out belongs to another "
                       "communicator than the workspace");
  if (out == workspace)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_launch_out: out is the workspace (the "
                       "kernel's flags live there; allocate another buffer "
                       "for c)");
  // The caller's argument for parameter "c" (arguments skip tensor maps).
  size_t a = 0;
  for (size_t i = 0; i < k->nparams && a < nargs; ++i) {
    const struct attnrt_param_info *p = &k->params[i];
    if (p->kind == ATTNRT_ARG_TENSORMAP)
      continue;
    double bytes = strcmp(p->name, "c") == 0 && p->kind == ATTNRT_ARG_PTR
                       ? attnrt_param_shape_bytes(p)
                       : 0;
    if (bytes > 0) {
      if (args[a].kind != ATTNRT_ARG_PTR ||
          args[a].v.ptr != attnrt_comm_buffer_ptr((attnrt_comm_buffer *)out))
        return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                           "attnrt_comm_launch_out: kernel '%s' writes its "
                           "output c into out, so its argument c must be "
                           "out's address (attnrt_comm_buffer_ptr)",
                           name);
      if ((double)out->bytes < bytes)
        return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                           "attnrt_comm_launch_out: out has %zu bytes, "
                           "kernel '%s' writes %.0f into c",
                           out->bytes, name, bytes);
      return ATTNRT_OK;
    }
    ++a;
  }
  return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                     "attnrt_comm_launch_out: kernel '%s' has no argument "
                     "'c' (a ptr with a shape and dtype) to write into out",
                     name);
}

/// attnrt_comm_launch (out NULL) and attnrt_comm_launch_out; messages name
/// fn, the API function called.
static enum attnrt_status comm_launch(const char *fn, attnrt_module *m,
                                      const char *name,
                                      attnrt_comm_buffer *workspace,
                                      attnrt_comm_buffer *out,
                                      attnrt_devptr dev_comm,
                                      const struct attnrt_arg *args,
                                      size_t nargs, attnrt_stream *s) {
  if (!workspace)
    return attnrt_fail(NULL, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: workspace is NULL", fn);
  attnrt_comm *c = workspace->c;
  if (!m || !name)
    return attnrt_fail(c->rt, ATTNRT_ERR_INVALID_ARGUMENT,
                       "%s: %s is NULL", fn, m ? "name" : "module");
  const struct attnrt_kernel_info *k = attnrt_module_kernel(m, name);
  if (!k)
    return attnrt_fail(c->rt, ATTNRT_ERR_NOT_FOUND,
                       "%s: the module has no kernel '%s'",
                       fn, name);
  enum attnrt_status st =
      check_comm_launch(fn, m, name, k, workspace, args, nargs);
  if (st != ATTNRT_OK)
    return st;
  if (out &&
      (st = check_out(name, k, workspace, out, args, nargs)) != ATTNRT_OK)
    return st;
  attnrt_devptr peers = 0, out_peers = 0;
  st = attnrt_comm_buffer_peers(workspace, dev_comm, &peers);
  if (st == ATTNRT_OK && out)
    st = attnrt_comm_buffer_peers(out, dev_comm, &out_peers);
  if (st != ATTNRT_OK)
    return st;
  // The first launch records the kernel the workspace will serve.
  char *kernel = NULL;
  struct attnrt_kernel_comm served = *k->comm;
  if (!workspace->kernel) {
    kernel = attnrt_dup_string(name);
    served.pattern =
        k->comm->pattern ? attnrt_dup_string(k->comm->pattern) : NULL;
    served.split = k->comm->split ? attnrt_dup_string(k->comm->split) : NULL;
    if (!kernel || (k->comm->pattern && !served.pattern) ||
        (k->comm->split && !served.split)) {
      free(kernel);
      free((char *)served.pattern);
      free((char *)served.split);
      return attnrt_fail(c->rt, ATTNRT_ERR_OUT_OF_MEMORY,
                         "%s: out of host memory", fn);
    }
  }
  struct attnrt_arg all[ATTNRT_MAX_KERNEL_PARAMS];
  if (nargs)
    memcpy(all, args, nargs * sizeof *args);
  all[nargs].kind = all[nargs + 1].kind = all[nargs + 2].kind = ATTNRT_ARG_PTR;
  all[nargs].v.ptr = attnrt_comm_buffer_ptr(workspace);
  all[nargs + 1].v.ptr = peers;
  all[nargs + 2].v.ptr = out_peers;
  all[nargs + 3].kind = all[nargs + 4].kind = ATTNRT_ARG_I32;
  all[nargs + 3].v.i32 = c->rank;
  all[nargs + 4].v.i32 = workspace->launches + 1;
  st = attnrt_launch(m, name, all, nargs + ATTNRT_COMM_KEPT_ARGS, s);
  if (st != ATTNRT_OK) {
    if (kernel) {
      free(kernel);
      free((char *)served.pattern);
      free((char *)served.split);
    }
    return st;
  }
  ++workspace->launches;
  if (kernel) {
    workspace->kernel = kernel;
    workspace->served = served;
  }
  return ATTNRT_OK;
}

ATTNRT_API enum attnrt_status
attnrt_comm_launch(attnrt_module *m, const char *name,
                   attnrt_comm_buffer *workspace, attnrt_devptr dev_comm,
                   const struct attnrt_arg *args, size_t nargs,
                   attnrt_stream *s) {
  return comm_launch("attnrt_comm_launch", m, name, workspace, NULL, dev_comm,
                     args, nargs, s);
}

ATTNRT_API enum attnrt_status
attnrt_comm_launch_out(attnrt_module *m, const char *name,
                       attnrt_comm_buffer *workspace, attnrt_comm_buffer *out,
                       attnrt_devptr dev_comm, const struct attnrt_arg *args,
                       size_t nargs, attnrt_stream *s) {
  if (!out)
    return attnrt_fail(workspace ? workspace->c->rt : NULL,
                       ATTNRT_ERR_INVALID_ARGUMENT,
                       "attnrt_comm_launch_out: out is NULL (use "
                       "attnrt_comm_launch for an output in any buffer)");
  return comm_launch("attnrt_comm_launch_out", m, name, workspace, out,
                     dev_comm, args, nargs, s);
}
