// comm_fused.c - the fused GEMM + collective variant of comm_bench (see comm_fused.h); not built yet: every pattern answers "not built".
//
// To plug in attn's fused kernel: in comm_fused_prepare, compile the
// pattern's program (a linalg.matmul with comm.all_reduce / all_gather /
// reduce_scatter, through comm-schedule to comm.fused_matmul) with
// attn_compile for sm_90a, load it with attnrt_module_load_ptx on p->rt,
// keep the module in struct comm_fused and return ATTNRT_OK with the
// workspace bytes; in comm_fused_run, launch it with attnrt_program_launch
// on s with the buffers' pointers (attnrt_comm_buffer_ptr) and, for the NCCL
// device API, their windows (attnrt_comm_buffer_window). Nothing else in
// comm_bench changes: checking, timing and reporting are the harness's.
// Link libattn into comm_bench (bench/CMakeLists.txt) when it compiles here.

#include "bench/comm_fused.h"

#include <stdio.h>
#include <stdlib.h>

struct comm_fused {
  attnrt_module *module;
};

enum attnrt_status comm_fused_prepare(const struct comm_fused_problem *p,
                                      struct comm_fused **out,
                                      size_t *work_bytes, char *why,
                                      size_t why_len) {
  (void)p;
  *out = NULL;
  *work_bytes = 0;
  snprintf(why, why_len, "not built");
  return ATTNRT_ERR_NOT_FOUND;
}

enum attnrt_status comm_fused_run(struct comm_fused *f,
                                  const struct comm_fused_buffers *b,
                                  attnrt_stream *s, char *why, size_t why_len) {
  (void)f;
  (void)b;
  (void)s;
  snprintf(why, why_len, "not built");
  return ATTNRT_ERR_NOT_FOUND;
}

void comm_fused_release(struct comm_fused *f) {
  if (!f)
    return;
  attnrt_module_destroy(f->module);
  free(f);
}
