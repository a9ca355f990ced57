//===- gpu_run.c - attn-run's GPU executor: PTX through attnrt ------------===//
#include "tools/attn-run/attn_run.h"

#include "lib/Target/attn_target.h"
#include "runtime/attnrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *tool = "attn-run";

static bool fail(struct attn_executor *x, const char *what,
                 enum attnrt_status st) {
  fprintf(stderr, "%s: error: %s: %s (%s)\n", tool, what,
          attnrt_last_error(x->rt), attnrt_status_string(st));
  if (st == ATTNRT_ERR_TIMEOUT) {
    // A kernel still running cannot be stopped, and unloading its module or
    // releasing the context would wait for it: end the process, which frees
    // the GPU.
    fflush(stdout);
    fflush(stderr);
    _exit(1);
  }
  return false;
}

bool attn_gpu_executor_init(struct attn_executor *x) {
  enum attnrt_status st = attnrt_runtime_create(0, &x->rt);
  if (st != ATTNRT_OK) {
    fprintf(stderr, "%s: error: no usable GPU: %s\n", tool,
            attnrt_last_error(NULL));
    x->rt = NULL;
    return false;
  }
  // --timeout, else the runtime's ATTNRT_SYNC_TIMEOUT_S, else 5 minutes.
  const char *env = getenv(ATTNRT_SYNC_TIMEOUT_ENV);
  double timeout = x->timeout_s >= 0 ? x->timeout_s : env && *env ? -1 : 300;
  int major = 0, minor = 0;
  if ((timeout >= 0 &&
       (st = attnrt_runtime_set_sync_timeout(x->rt, timeout))) ||
      (st = attnrt_runtime_compute_capability(x->rt, &major, &minor)) ||
      (st = attnrt_runtime_device_name(x->rt, x->device, sizeof x->device)) ||
      (st = attnrt_runtime_sm_count(x->rt, &x->sms)))
    return fail(x, "cannot query the GPU", st);
  int cc = major * 10 + minor;
  if (cc < 70) {
    fprintf(stderr, "%s: error: %s has compute capability %d.%d; attn needs "
                    "7.0 or newer\n",
            tool, x->device, major, minor);
    return false;
  }
  // Hopper gets its architecture-specific target (wgmma, setmaxnreg); newer
  // chips run sm_90 PTX through the driver's JIT.
  snprintf(x->chip, sizeof x->chip, cc == 90 ? "sm_90a" : "sm_%d",
           cc > 90 ? 90 : cc);
  return true;
}

/// Whether the timed launches run on inputs rolled by one batch (see
/// gpu_execute): an attention over q, k, v alone with two batches or more.
static bool rolls(const struct job *j) {
  if (j->matmul || j->out_is_read || j->p.batch < 2)
    return false;
  for (int r = 0; r < ATTN_RUN_ROLES; ++r)
    if (j->has[r] && r != ATTN_RUN_Q && r != ATTN_RUN_K && r != ATTN_RUN_V &&
        r != j->out)
      return false;
  return true;
}

/// dst = src (n bytes, batch-major over `batches`) rolled by one batch:
/// batch b of dst is batch b + 1 of src (the last is the first).
static void roll_batches(unsigned char *dst, const unsigned char *src,
                         size_t n, int64_t batches) {
  size_t per = n / (size_t)batches;
  memcpy(dst, src + per, n - per);
  memcpy(dst + (n - per), src, per);
}

/// After the timed launches: whether the output on the device (dev[j->out])
/// equals the first launch's (bufs[j->out]), rolled by one batch when the
/// timed launches ran on rolled inputs; an error if not.
static bool same_as_first(struct attn_executor *x, const struct job *j,
                          const attnrt_devptr dev[ATTN_RUN_ROLES],
                          const size_t bytes[ATTN_RUN_ROLES],
                          void *const bufs[ATTN_RUN_ROLES], bool rolled) {
  size_t n = bytes[j->out];
  unsigned char *last = malloc(n), *want = malloc(n);
  if (!last || !want) {
    free(last);
    free(want);
    fprintf(stderr, "%s: error: out of memory\n", tool);
    return false;
  }
  if (rolled)
    roll_batches(want, bufs[j->out], n, j->p.batch);
  else
    memcpy(want, bufs[j->out], n);
  enum attnrt_status st =
      attnrt_memcpy_dtoh(x->rt, last, dev[j->out], n, NULL);
  bool same = st == ATTNRT_OK && memcmp(last, want, n) == 0;
  free(last);
  free(want);
  if (st != ATTNRT_OK)
    return fail(x, "cannot read the last launch's output", st);
  if (!same)
    fprintf(stderr,
            "%s: error: '%s': the output of the last timed launch differs "
            "from the first launch's%s\n",
            tool, j->name, rolled ? " (on inputs rolled by one batch)" : "");
  return same;
}

/// Before the timed launches: uploads q, k and v rolled by one batch, so
/// that a kernel that wrongly reuses what an earlier launch left in its
/// workspace (rope=ahead's rotated K) gives a different output.
static bool upload_rolled(struct attn_executor *x, const struct job *j,
                          const attnrt_devptr dev[ATTN_RUN_ROLES],
                          const size_t bytes[ATTN_RUN_ROLES],
                          void *const bufs[ATTN_RUN_ROLES]) {
  int roles[3] = {ATTN_RUN_Q, ATTN_RUN_K, ATTN_RUN_V};
  for (int i = 0; i < 3; ++i) {
    int r = roles[i];
    unsigned char *tmp = malloc(bytes[r]);
    if (!tmp) {
      fprintf(stderr, "%s: error: out of memory\n", tool);
      return false;
    }
    roll_batches(tmp, bufs[r], bytes[r], j->p.batch);
    enum attnrt_status st =
        attnrt_memcpy_htod(x->rt, dev[r], tmp, bytes[r], NULL);
    free(tmp);
    if (st != ATTNRT_OK)
      return fail(x, "cannot upload the rolled inputs", st);
  }
  return true;
}

static bool gpu_execute(struct attn_executor *x, const struct job *j,
                        void *const bufs[ATTN_RUN_ROLES],
                        const size_t bytes[ATTN_RUN_ROLES], double *ms) {
  // What the caller passes: a program's inputs when the compiler made one
  // (several kernels, e.g. RoPE of K before attention), else the kernel's
  // non-derived parameters (tensor maps are derived by attnrt).
  const struct attnrt_program_info *prog =
      attnrt_module_program(x->module, j->name);
  const struct attnrt_kernel_info *k = attnrt_module_kernel(x->module, j->name);
  const char *names[ATTN_RUN_ROLES];
  size_t nparams = 0, want = (size_t)j->nargs + 1;
  if (prog) {
    for (size_t i = 0; i < prog->ninputs && nparams < ATTN_RUN_ROLES; ++i)
      names[nparams++] = prog->inputs[i];
  } else if (k) {
    for (size_t a = 0; a < k->nparams && nparams < ATTN_RUN_ROLES; ++a)
      if (k->params[a].kind != ATTNRT_ARG_TENSORMAP)
        names[nparams++] = k->params[a].name;
  }
  if (nparams != want) {
    fprintf(stderr, "%s: error: '%s' is not in the manifest with %zu "
                    "arguments\n",
            tool, j->name, want);
    return false;
  }
  attnrt_devptr dev[ATTN_RUN_ROLES] = {0};
  struct attnrt_arg args[ATTN_RUN_ROLES];
  attnrt_event *ev[2] = {NULL, NULL};
  float *times = NULL;
  enum attnrt_status st = ATTNRT_OK;
  bool ok = false;
  for (int i = 0; i < ATTN_RUN_ROLES; ++i) {
    if (!j->has[i])
      continue;
    bool in = i != j->out || j->out_is_read;
    if ((st = attnrt_mem_alloc(x->rt, bytes[i], &dev[i])) ||
        (st = in ? attnrt_memcpy_htod(x->rt, dev[i], bufs[i], bytes[i], NULL)
                 : attnrt_memset_d8(x->rt, dev[i], 0xff, bytes[i], NULL))) {
      fail(x, "cannot set up device buffers", st);
      goto out;
    }
  }
  for (size_t a = 0; a < nparams; ++a) {
    int r = 0;
    while (r < ATTN_RUN_ROLES &&
           (strcmp(names[a], attn_run_role_name(r)) || !j->has[r]))
      ++r;
    if (r == ATTN_RUN_ROLES) {
      fprintf(stderr, "%s: error: unknown parameter '%s' of '%s'\n", tool,
              names[a], j->name);
      goto out;
    }
    args[a] = (struct attnrt_arg){.kind = ATTNRT_ARG_PTR, .v.ptr = dev[r]};
  }
  if ((st = attnrt_program_launch(x->module, j->name, args, nparams, NULL)) ||
      (st = attnrt_runtime_synchronize(x->rt)) ||
      (st = attnrt_memcpy_dtoh(x->rt, bufs[j->out], dev[j->out],
                               bytes[j->out], NULL))) {
    fail(x, "kernel launch failed", st);
    goto out;
  }
  *ms = -1;
  if (x->iters > 0) {
    times = malloc(sizeof *times * (size_t)x->iters);
    if (!times || (st = attnrt_event_create(x->rt, &ev[0])) ||
        (st = attnrt_event_create(x->rt, &ev[1]))) {
      fail(x, "cannot create timing events", st);
      goto out;
    }
    if (!j->out_is_read &&
        (st = attnrt_memset_d8(x->rt, dev[j->out], 0xff, bytes[j->out],
                               NULL))) {
      fail(x, "cannot poison the output", st);
      goto out;
    }
    bool rolled = rolls(j);
    if (rolled && !upload_rolled(x, j, dev, bytes, bufs))
      goto out;
    for (int w = 0; w < 3; ++w)
      if ((st = attnrt_program_launch(x->module, j->name, args, nparams,
                                      NULL))) {
        fail(x, "warm-up launch failed", st);
        goto out;
      }
    for (int it = 0; it < x->iters; ++it)
      if ((st = attnrt_event_record(ev[0], NULL)) ||
          (st = attnrt_program_launch(x->module, j->name, args, nparams, NULL)) ||
          (st = attnrt_event_record(ev[1], NULL)) ||
          (st = attnrt_runtime_synchronize(x->rt)) ||
          (st = attnrt_event_elapsed_ms(ev[0], ev[1], &times[it]))) {
        fail(x, "timing failed", st);
        goto out;
      }
    for (int a = 1; a < x->iters; ++a) // insertion sort for the median
      for (int b = a; b > 0 && times[b - 1] > times[b]; --b) {
        float t = times[b];
        times[b] = times[b - 1];
        times[b - 1] = t;
      }
    *ms = times[x->iters / 2];
    // The last launch must give what the first gave, on inputs rolled by
    // one batch where the job allows (a kernel that keeps state in its
    // program's workspace between launches, as rope=ahead does, is checked
    // here). Its output was poisoned before the warm-up.
    if (!j->out_is_read && !same_as_first(x, j, dev, bytes, bufs, rolled))
      goto out;
  }
  ok = true;
out:
  free(times);
  attnrt_event_destroy(ev[0]);
  attnrt_event_destroy(ev[1]);
  for (int i = 0; i < ATTN_RUN_ROLES; ++i)
    if (dev[i])
      attnrt_mem_free(x->rt, dev[i]);
  return ok;
}

static bool gpu_has(struct attn_executor *x, const char *name) {
  return attnrt_module_program(x->module, name) ||
         attnrt_module_kernel(x->module, name);
}

/// Runs program or kernel name with its parameters bound by name to
/// args[0..n): uploads the inputs, poisons the outputs (NaN), launches,
/// synchronises and copies the outputs back.
static bool gpu_call(struct attn_executor *x, const char *name, int n,
                     const struct attn_run_arg *args) {
  const struct attnrt_program_info *prog =
      attnrt_module_program(x->module, name);
  const struct attnrt_kernel_info *k = attnrt_module_kernel(x->module, name);
  enum { MAX_PARAMS = ATTN_RUN_ROLES + 8 };
  const char *names[MAX_PARAMS];
  size_t nparams = 0;
  if (prog) {
    for (size_t i = 0; i < prog->ninputs && nparams < MAX_PARAMS; ++i)
      names[nparams++] = prog->inputs[i];
  } else if (k) {
    for (size_t a = 0; a < k->nparams && nparams < MAX_PARAMS; ++a)
      if (k->params[a].kind != ATTNRT_ARG_TENSORMAP)
        names[nparams++] = k->params[a].name;
  } else {
    fprintf(stderr, "%s: error: '%s' is not in the manifest\n", tool, name);
    return false;
  }
  if (n > MAX_PARAMS || nparams != (size_t)n) {
    fprintf(stderr, "%s: error: '%s' is not in the manifest with %d "
                    "arguments\n",
            tool, name, n);
    return false;
  }
  attnrt_devptr dev[MAX_PARAMS] = {0};
  struct attnrt_arg launch[MAX_PARAMS];
  enum attnrt_status st = ATTNRT_OK;
  bool ok = false;
  for (int i = 0; i < n; ++i)
    if ((st = attnrt_mem_alloc(x->rt, args[i].bytes ? args[i].bytes : 1,
                               &dev[i])) ||
        (st = args[i].out && !args[i].inout
                  ? attnrt_memset_d8(x->rt, dev[i], 0xff, args[i].bytes, NULL)
                  : attnrt_memcpy_htod(x->rt, dev[i], args[i].buf,
                                       args[i].bytes, NULL))) {
      fail(x, "cannot set up device buffers", st);
      goto out;
    }
  for (size_t a = 0; a < nparams; ++a) {
    int i = 0;
    while (i < n && strcmp(names[a], args[i].name))
      ++i;
    if (i == n) {
      fprintf(stderr, "%s: error: unknown parameter '%s' of '%s'\n", tool,
              names[a], name);
      goto out;
    }
    launch[a] = (struct attnrt_arg){.kind = ATTNRT_ARG_PTR, .v.ptr = dev[i]};
  }
  if ((st = attnrt_program_launch(x->module, name, launch, nparams, NULL)) ||
      (st = attnrt_runtime_synchronize(x->rt))) {
    fail(x, "kernel launch failed", st);
    goto out;
  }
  for (int i = 0; i < n; ++i)
    if ((args[i].out || args[i].inout) &&
        (st = attnrt_memcpy_dtoh(x->rt, args[i].buf, dev[i], args[i].bytes,
                                 NULL))) {
      fail(x, "cannot read an output", st);
      goto out;
    }
  ok = true;
out:
  for (int i = 0; i < n; ++i)
    if (dev[i])
      attnrt_mem_free(x->rt, dev[i]);
  return ok;
}

bool attn_gpu_executor_load(struct attn_executor *x, MlirOperation module) {
  struct attn_binary bin;
  if (!attn_target_emit(module, ATTN_FORMAT_PTX, NULL, &bin))
    return false;
  enum attnrt_status st = attnrt_module_load_ptx(x->rt, bin.data, bin.size,
                                                 bin.manifest, &x->module);
  attn_binary_free(&bin);
  if (st != ATTNRT_OK) {
    x->module = NULL;
    return fail(x, "cannot load the PTX", st);
  }
  x->execute = gpu_execute;
  x->has = gpu_has;
  x->call = gpu_call;
  return true;
}

void attn_gpu_executor_release(struct attn_executor *x) {
  attnrt_module_destroy(x->module);
  attnrt_runtime_destroy(x->rt);
  x->module = NULL;
  x->rt = NULL;
}
