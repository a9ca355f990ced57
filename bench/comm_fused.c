// comm_fused.c - the fused GEMM + collective variant of comm_bench (see comm_fused.h): attn compiles the pattern's program (linalg.matmul and its comm collective, fused by comm-schedule) and attnrt runs the one kernel.
//
// comm_fused_prepare writes the program a user writes for the pattern,
// compiles it with attn_compile for sm_90a (comm-schedule picks the SM split
// for the H200 topology; COMM_FUSED_SPLIT=static|adaptive and
// COMM_FUSED_COMM_SMS=n in the environment pin the split and the
// communication CTAs with a comm.schedule attribute on the collective, which
// is how the static-versus-adaptive comparison is run;
// COMM_FUSED_HOPPER_OPTIONS passes lower-tile-to-hopper options), loads it with
// attnrt_module_load_ptx (plain PTX: the kernel calls no NCCL device shim
// function) and creates the device communicator that the workspace's peer
// table is made with. comm_fused_run launches the kernel with the buffers a,
// b, out, the zero-filled symmetric workspace and its peer table
// (attnrt_comm_buffer_peers: made, synchronously, by the first run, then
// kept by the workspace), plus the launch number (epoch) the kernel's flags
// are counted against. The output is a symmetric buffer, so the launch is
// attnrt_comm_launch_out (COMM_FUSED_OUT=workspace: attnrt_comm_launch).

#include "bench/comm_fused.h"
#include "bench/bench_common.h"

#include "attn/attn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct comm_fused {
  attn_result *result;
  attnrt_module *module;
  attnrt_comm *comm;
  attnrt_devptr dev_comm;
  char name[32];
  enum comm_pattern pattern;
  /// The output is the harness's symmetric buffer, so the kernel is
  /// launched with it (attnrt_comm_launch_out: the all-reduce writes the
  /// peers' C directly) unless COMM_FUSED_OUT=workspace asks for the plain
  /// launch (the sums go through the workspace), for A/B runs.
  bool symmetric_out;
};

/// The program of p, as MLIR text (malloc'd), with its function name.
static char *program(const struct comm_fused_problem *p, const char **name) {
  long long m = p->m, n = p->n, k = p->k, w = p->world;
  const char *split = getenv("COMM_FUSED_SPLIT");
  const char *sms = getenv("COMM_FUSED_COMM_SMS");
  // The schedule the environment pins on the collective (comm.schedule).
  char pin[160] = "";
  if ((split && *split) || (sms && *sms))
    snprintf(pin, sizeof pin, ", comm.schedule = {split = \"%s\"%s%s%s}",
             split && *split ? split : "static",
             sms && *sms ? ", comm_sms = " : "", sms && *sms ? sms : "",
             sms && *sms ? " : i64" : "");
  size_t cap = 4096;
  char *s = malloc(cap);
  if (!s)
    return NULL;
  const char *fill = "  %%z = arith.constant 0.0 : bf16\n"
                     "  %%e = tensor.empty() : tensor<%lldx%lldxbf16>\n"
                     "  %%i = linalg.fill ins(%%z : bf16) outs(%%e : "
                     "tensor<%lldx%lldxbf16>) -> tensor<%lldx%lldxbf16>\n";
  char init[512];
  snprintf(init, sizeof init, fill, m, n, m, n, m, n);
  switch (p->pattern) {
  case COMM_GEMM_ALL_REDUCE:
    *name = "fused_ar";
    snprintf(s, cap,
             "func.func @fused_ar(%%a: tensor<%lldx%lldxbf16>, %%b: "
             "tensor<%lldx%lldxbf16>) -> tensor<%lldx%lldxbf16> {\n%s"
             "  %%c = linalg.matmul ins(%%a, %%b : tensor<%lldx%lldxbf16>, "
             "tensor<%lldx%lldxbf16>) outs(%%i : tensor<%lldx%lldxbf16>) -> "
             "tensor<%lldx%lldxbf16>\n"
             "  %%r = \"comm.all_reduce\"(%%c) {reduction = \"sum\", "
             "world_size = %lld : i64%s} : (tensor<%lldx%lldxbf16>) -> "
             "tensor<%lldx%lldxbf16>\n"
             "  return %%r : tensor<%lldx%lldxbf16>\n}\n",
             m, k, k, n, m, n, init, m, k, k, n, m, n, m, n, w, pin, m, n, m, n,
             m, n);
    break;
  case COMM_ALL_GATHER_GEMM:
    *name = "fused_ag";
    snprintf(s, cap,
             "func.func @fused_ag(%%a: tensor<%lldx%lldxbf16>, %%b: "
             "tensor<%lldx%lldxbf16>) -> tensor<%lldx%lldxbf16> {\n%s"
             "  %%g = \"comm.all_gather\"(%%a) {dim = 0 : i64, world_size = "
             "%lld : i64%s} : (tensor<%lldx%lldxbf16>) -> tensor<%lldx%lldxbf16>\n"
             "  %%c = linalg.matmul ins(%%g, %%b : tensor<%lldx%lldxbf16>, "
             "tensor<%lldx%lldxbf16>) outs(%%i : tensor<%lldx%lldxbf16>) -> "
             "tensor<%lldx%lldxbf16>\n"
             "  return %%c : tensor<%lldx%lldxbf16>\n}\n",
             m / w, k, k, n, m, n, init, w, pin, m / w, k, m, k, m, k, k, n, m,
             n, m, n, m, n);
    break;
  case COMM_GEMM_REDUCE_SCATTER:
    *name = "fused_rs";
    snprintf(s, cap,
             "func.func @fused_rs(%%a: tensor<%lldx%lldxbf16>, %%b: "
             "tensor<%lldx%lldxbf16>) -> tensor<%lldx%lldxbf16> {\n%s"
             "  %%c = linalg.matmul ins(%%a, %%b : tensor<%lldx%lldxbf16>, "
             "tensor<%lldx%lldxbf16>) outs(%%i : tensor<%lldx%lldxbf16>) -> "
             "tensor<%lldx%lldxbf16>\n"
             "  %%r = \"comm.reduce_scatter\"(%%c) {reduction = \"sum\", dim "
             "= 0 : i64, world_size = %lld : i64%s} : (tensor<%lldx%lldxbf16>) "
             "-> tensor<%lldx%lldxbf16>\n"
             "  return %%r : tensor<%lldx%lldxbf16>\n}\n",
             m, k, k, n, m / w, n, init, m, k, k, n, m, n, m, n, w, pin, m, n,
             m / w, n, m / w, n);
    break;
  }
  return s;
}

enum attnrt_status comm_fused_prepare(const struct comm_fused_problem *p,
                                      struct comm_fused **out,
                                      size_t *work_bytes, char *why,
                                      size_t why_len) {
  *out = NULL;
  *work_bytes = 0;
  struct comm_fused *f = calloc(1, sizeof *f);
  const char *name = "";
  char *ir = f ? program(p, &name) : NULL;
  if (!f || !ir) {
    free(f);
    snprintf(why, why_len, "out of host memory");
    return ATTNRT_ERR_OUT_OF_MEMORY;
  }
  struct attn_compile_options opts;
  attn_compile_options_init(&opts);
  opts.target = "sm_90a";
  opts.format = ATTN_OUTPUT_PTX;
  opts.source_name = "comm_fused.mlir";
  // lower-tile-to-hopper's options for the A/B runs of a kernel change
  // (e.g. gemm-epilogue=staged).
  const char *hopper = getenv("COMM_FUSED_HOPPER_OPTIONS");
  if (hopper && *hopper)
    opts.hopper_options = hopper;
  char first[BENCH_DIAG_LEN] = "";
  enum attn_status st = attn_compile(ir, 0, &opts, bench_first_error, first, &f->result);
  free(ir);
  if (st != ATTN_OK) {
    snprintf(why, why_len, "attn_compile: %s: %s", attn_status_string(st),
             first[0] ? first : attn_last_error() ? attn_last_error() : "");
    free(f);
    // A shape the fused kernel does not take is "not built" for it (the
    // diagnostic says why); anything else is an error.
    return strstr(why, "no Hopper GEMM for") ? ATTNRT_ERR_NOT_FOUND
                                             : ATTNRT_ERR_INVALID_ARGUMENT;
  }
  const char *manifest = attn_result_manifest(f->result);
  size_t size = 0;
  const void *ptx = attn_result_data(f->result, &size);
  enum attnrt_status rs =
      attnrt_module_load_ptx(p->rt, ptx, size, manifest, &f->module);
  if (rs != ATTNRT_OK) {
    snprintf(why, why_len, "attnrt_module_load_ptx: %s",
             attnrt_last_error(p->rt));
    comm_fused_release(f);
    return rs;
  }
  const struct attnrt_kernel_info *ki =
      attnrt_manifest_kernel(attnrt_module_manifest(f->module), name);
  if (!ki) {
    snprintf(why, why_len, "the manifest has no kernel '%s'", name);
    comm_fused_release(f);
    return ATTNRT_ERR_NOT_FOUND;
  }
  if (!ki->comm) {
    snprintf(why, why_len, "kernel '%s' has no comm entry", name);
    comm_fused_release(f);
    return ATTNRT_ERR_INVALID_ARGUMENT;
  }
  rs = attnrt_comm_dev_create(p->comm, 0, &f->dev_comm);
  if (rs != ATTNRT_OK) {
    snprintf(why, why_len, "attnrt_comm_dev_create: %s",
             attnrt_last_error(p->rt));
    comm_fused_release(f);
    return rs;
  }
  f->comm = p->comm;
  const char *out_mode = getenv("COMM_FUSED_OUT");
  f->symmetric_out = !(out_mode && !strcmp(out_mode, "workspace"));
  snprintf(f->name, sizeof f->name, "%s", name);
  f->pattern = p->pattern;
  *work_bytes = ki->comm->workspace_bytes;
  *out = f;
  return ATTNRT_OK;
}

enum attnrt_status comm_fused_run(struct comm_fused *f,
                                  const struct comm_fused_buffers *b,
                                  attnrt_stream *s, char *why, size_t why_len) {
  // attnrt adds the workspace, its peer table and out's (made,
  // synchronously, by the first run: the harness's untimed check run), the
  // rank and the launch number.
  struct attnrt_arg args[3];
  attnrt_comm_buffer *abc[3] = {b->a, b->b, b->out};
  for (int i = 0; i < 3; ++i) {
    args[i].kind = ATTNRT_ARG_PTR;
    args[i].v.ptr = attnrt_comm_buffer_ptr(abc[i]);
  }
  enum attnrt_status st =
      f->symmetric_out
          ? attnrt_comm_launch_out(f->module, f->name, b->work, b->out,
                                   f->dev_comm, args, 3, s)
          : attnrt_comm_launch(f->module, f->name, b->work, f->dev_comm, args,
                               3, s);
  if (st != ATTNRT_OK)
    snprintf(why, why_len, "%s: %s",
             f->symmetric_out ? "attnrt_comm_launch_out" : "attnrt_comm_launch",
             attnrt_last_error(attnrt_comm_runtime(f->comm)));
  return st;
}

void comm_fused_release(struct comm_fused *f) {
  if (!f)
    return;
  if (f->dev_comm)
    attnrt_comm_dev_destroy(f->comm, f->dev_comm);
  attnrt_module_destroy(f->module);
  attn_result_destroy(f->result);
  free(f);
}
