//===- program_test.c - Programs and their workspace against the mock -----===//

#include "launch_util.h"
#include "mock_fixture.h"

// attn__rope_k writes K rotated into the workspace buffer k_rot; attn reads q
// and k_rot through tensor maps and writes lse to a second buffer. The program
// "attn" runs both; "copy" runs plain twice and has no workspace.
static const char *const prog_ptx =
    ".version 8.0\n"
    ".target sm_90a\n"
    ".address_size 64\n"
    ".visible .entry attn__rope_k(.param .u64 r_k, .param .u64 r_k_rot)\n{\n  ret;\n}\n"
    ".visible .entry attn(\n"
    "  .param .u64 a_q,\n"
    "  .param .align 64 .b8 a_q_map[128],\n"
    "  .param .align 64 .b8 a_k_map[128],\n"
    "  .param .u64 a_k_rot,\n"
    "  .param .u64 a_v,\n"
    "  .param .u64 a_out,\n"
    "  .param .u64 a_lse\n"
    ")\n{\n  ret;\n}\n"
    ".visible .entry plain(.param .u64 plain_param_x)\n{\n  ret;\n}\n";

static const char *const prog_manifest =
    "{\"version\": 1, \"format\": \"ptx\", \"kernels\": [\n"
    " {\"name\": \"attn__rope_k\", \"grid\": [8], \"block\": [64],\n"
    "  \"params\": [{\"name\": \"k\", \"kind\": \"ptr\"}, {\"name\": \"k_rot\", \"kind\": \"ptr\"}]},\n"
    " {\"name\": \"attn\", \"grid\": [2, 4], \"block\": [128],\n"
    "  \"params\": [{\"name\": \"q\", \"kind\": \"ptr\"},\n"
    "   {\"name\": \"q_map\", \"kind\": \"tensormap\", \"tensor\": \"q\", \"dtype\": \"bf16\",\n"
    "    \"dims\": [64, 32], \"box\": [64, 32], \"swizzle\": 128},\n"
    "   {\"name\": \"k_map\", \"kind\": \"tensormap\", \"tensor\": \"k_rot\", \"dtype\": \"bf16\",\n"
    "    \"dims\": [64, 256], \"box\": [64, 64], \"swizzle\": 128},\n"
    "   {\"name\": \"k_rot\", \"kind\": \"ptr\"}, {\"name\": \"v\", \"kind\": \"ptr\"},\n"
    "   {\"name\": \"out\", \"kind\": \"ptr\"}, {\"name\": \"lse\", \"kind\": \"ptr\"}]},\n"
    " {\"name\": \"plain\", \"grid\": [1], \"block\": [32],\n"
    "  \"params\": [{\"name\": \"x\", \"kind\": \"ptr\"}]}],\n"
    " \"programs\": [\n"
    "  {\"name\": \"attn\", \"inputs\": [\"q\", \"k\", \"v\", \"out\"],\n"
    "   \"workspace\": [{\"name\": \"lse\", \"bytes\": 100}, {\"name\": \"k_rot\", \"bytes\": 32768}],\n"
    "   \"steps\": [{\"kernel\": \"attn__rope_k\", \"args\": [\"k\", \"k_rot\"]},\n"
    "             {\"kernel\": \"attn\", \"args\": [\"q\", \"k_rot\", \"v\", \"out\", \"lse\"]}]},\n"
    "  {\"name\": \"copy\", \"inputs\": [\"src\", \"dst\"],\n"
    "   \"steps\": [{\"kernel\": \"plain\", \"args\": [\"src\"]},\n"
    "             {\"kernel\": \"plain\", \"args\": [\"dst\"]}]}]}\n";

// The workspace of "attn": lse at its start, k_rot 256 bytes in.
#define PROG_WORKSPACE_BYTES (256 + 32768)
#define K_ROT_OFFSET 256

#define LOAD_PROGRAM_MODULE(rt, m)                                             \
  attnrt_module *m = NULL;                                                     \
  CHECK(attnrt_module_load_ptx(rt, prog_ptx, 0, prog_manifest, &m) == ATTNRT_OK)

static int test_program_launch(void) {
  CREATE_RUNTIME(rt);
  LOAD_PROGRAM_MODULE(rt, m);
  CHECK(attnrt_module_program_count(m) == 2);
  const struct attnrt_program_info *info = attnrt_module_program(m, "attn");
  CHECK(info && info->ninputs == 4 && info->nsteps == 2 && info->nworkspace == 2);
  CHECK(info->workspace_bytes == PROG_WORKSPACE_BYTES);
  CHECK(strcmp(info->inputs[3], "out") == 0);
  CHECK(attnrt_module_program(m, "plain") == NULL);

  attnrt_devptr q = 0, k = 0, v = 0, out = 0, out2 = 0;
  CHECK(attnrt_mem_alloc(rt, 4096, &q) == ATTNRT_OK);
  CHECK(attnrt_mem_alloc(rt, 4096, &k) == ATTNRT_OK);
  CHECK(attnrt_mem_alloc(rt, 4096, &v) == ATTNRT_OK);
  CHECK(attnrt_mem_alloc(rt, 4096, &out) == ATTNRT_OK);
  CHECK(attnrt_mem_alloc(rt, 4096, &out2) == ATTNRT_OK);
  attnrt_stream *stream = NULL;
  CHECK(attnrt_stream_create(rt, &stream) == ATTNRT_OK);
  const struct mock_cuda_state *st = mock_cuda_state();
  CHECK(st->allocs == 5);

  struct attnrt_arg args[] = {arg_ptr(q), arg_ptr(k), arg_ptr(v), arg_ptr(out)};
  CHECK(attnrt_program_launch(m, "attn", args, 4, stream) == ATTNRT_OK);
  // The first launch allocates the workspace, once, 256-byte aligned.
  CHECK(st->allocs == 6 && st->last_alloc_bytes == PROG_WORKSPACE_BYTES);
  CHECK(st->launches == 2 && st->ctx_depth == 0);
  const struct mock_cuda_launch *rope = &st->launch_log[0], *attn = &st->launch_log[1];
  CHECK(strcmp(rope->kernel, "attn__rope_k") == 0 && strcmp(attn->kernel, "attn") == 0);
  CHECK(rope->grid[0] == 8 && rope->block[0] == 64);
  CHECK(attn->grid[0] == 2 && attn->grid[1] == 4 && attn->block[0] == 128);
  CHECK(rope->stream == st->last_stream && attn->stream == st->last_stream);
  attnrt_devptr k_rot = rope->params[1];
  attnrt_devptr base = k_rot - K_ROT_OFFSET;
  CHECK(rope->nparams == 2 && rope->params[0] == k);
  CHECK(base != 0 && base % ATTNRT_WORKSPACE_ALIGN == 0);
  CHECK(base != q && base != k && base != v && base != out);
  // attn gets the same k_rot, directly and through its tensor map.
  CHECK(attn->nparams == 7 && attn->params[0] == q);
  CHECK(attn->param_size[1] == 128 && map_word(attn->param_data[1], 1) == q);
  CHECK(attn->param_size[2] == 128 && map_word(attn->param_data[2], 1) == k_rot);
  CHECK(attn->params[3] == k_rot && attn->params[4] == v && attn->params[5] == out);
  CHECK(attn->params[6] == base);
  CHECK(st->tensor_map_encodes == 2 && st->tensor_maps[1].address == k_rot);
  CHECK(st->tensor_maps[1].dims[1] == 256);

  // The workspace starts zero-filled (kernels may keep counters there).
  for (size_t i = 0; i < PROG_WORKSPACE_BYTES; ++i)
    CHECK(((const unsigned char *)(uintptr_t)base)[i] == 0);
  // What a launch leaves there is still there at the next: zeroed once.
  ((unsigned char *)(uintptr_t)base)[0] = 7;

  // Later launches reuse the workspace (and so the tensor maps).
  args[3] = arg_ptr(out2);
  CHECK(attnrt_program_launch(m, "attn", args, 4, stream) == ATTNRT_OK);
  CHECK(st->allocs == 6 && st->launches == 4 && st->tensor_map_encodes == 2);
  CHECK(strcmp(st->launch_log[2].kernel, "attn__rope_k") == 0);
  CHECK(st->launch_log[2].params[1] == k_rot);
  CHECK(strcmp(st->launch_log[3].kernel, "attn") == 0);
  CHECK(st->launch_log[3].params[3] == k_rot && st->launch_log[3].params[6] == base);
  CHECK(st->launch_log[3].params[5] == out2);
  CHECK(map_word(st->launch_log[3].param_data[2], 1) == k_rot);
  CHECK(((const unsigned char *)(uintptr_t)base)[0] == 7);

  // The kernel named like the program is still reachable through attnrt_launch.
  struct attnrt_arg kernel_args[] = {arg_ptr(q), arg_ptr(k), arg_ptr(v), arg_ptr(out),
                                     arg_ptr(v)};
  CHECK(attnrt_launch(m, "attn", kernel_args, 5, NULL) == ATTNRT_OK);
  CHECK(st->launches == 5 && strcmp(st->launch_log[4].kernel, "attn") == 0);
  CHECK(st->launch_log[4].params[3] == k && st->launch_log[4].stream == NULL);

  // A program without workspace allocates nothing; steps may share a kernel.
  struct attnrt_arg copy[] = {arg_ptr(q), arg_ptr(out)};
  CHECK(attnrt_program_launch(m, "copy", copy, 2, NULL) == ATTNRT_OK);
  CHECK(st->allocs == 6 && st->launches == 7);
  CHECK(strcmp(st->launch_log[5].kernel, "plain") == 0 && st->launch_log[5].params[0] == q);
  CHECK(strcmp(st->launch_log[6].kernel, "plain") == 0 && st->launch_log[6].params[0] == out);

  attnrt_stream_destroy(stream);
  attnrt_devptr buffers[] = {q, k, v, out, out2};
  for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; ++i)
    CHECK(attnrt_mem_free(rt, buffers[i]) == ATTNRT_OK);
  CHECK(st->frees == 5 && st->live_allocations == 1); // the workspace
  attnrt_module_destroy(m);
  CHECK(st->frees == 6 && st->live_allocations == 0);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_program_falls_back_to_kernel(void) {
  CREATE_RUNTIME(rt);
  LOAD_PROGRAM_MODULE(rt, m);
  const struct mock_cuda_state *st = mock_cuda_state();
  struct attnrt_arg x[] = {arg_ptr(0x1000), arg_ptr(0x2000)};
  CHECK(attnrt_program_launch(m, "plain", x, 1, NULL) == ATTNRT_OK);
  CHECK(st->launches == 1 && strcmp(st->last_launch.kernel, "plain") == 0);
  CHECK(st->last_launch.params[0] == 0x1000);
  CHECK(attnrt_program_launch(m, "attn__rope_k", x, 2, NULL) == ATTNRT_OK);
  CHECK(st->launches == 2 && strcmp(st->last_launch.kernel, "attn__rope_k") == 0);
  CHECK(st->last_launch.params[1] == 0x2000);
  // Kernels keep attnrt_launch's checks and messages.
  CHECK(attnrt_program_launch(m, "plain", x, 2, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "kernel 'plain' expects 1 argument, got 2"));
  CHECK(attnrt_program_launch(m, "nope", x, 1, NULL) == ATTNRT_ERR_NOT_FOUND);
  CHECK(contains(attnrt_last_error(rt),
                 "attnrt_program_launch: module has no program or kernel 'nope'"));
  CHECK(st->launches == 2 && st->allocs == 0 && st->ctx_depth == 0);
  attnrt_module_destroy(m);
  CHECK(st->frees == 0);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_program_argument_errors(void) {
  CREATE_RUNTIME(rt);
  LOAD_PROGRAM_MODULE(rt, m);
  const struct mock_cuda_state *st = mock_cuda_state();
  struct attnrt_arg args[] = {arg_ptr(0x1000), arg_ptr(0x2000), arg_ptr(0x3000),
                              arg_ptr(0x4000), arg_ptr(0x5000)};

  CHECK(attnrt_program_launch(m, "attn", args, 3, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "program 'attn' expects 4 arguments, got 3 (q, k, v, out)"));
  CHECK(attnrt_program_launch(m, "attn", args, 5, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "program 'attn' expects 4 arguments, got 5"));
  args[2] = arg_i32(7);
  CHECK(attnrt_program_launch(m, "attn", args, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "program 'attn' input 2 ('v') expects ptr, got i32"));
  args[2] = arg_ptr(0x3000);
  args[0].kind = ATTNRT_ARG_TENSORMAP;
  CHECK(attnrt_program_launch(m, "attn", args, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "program 'attn' input 0 ('q') expects ptr, got tensormap"));
  args[0].kind = ATTNRT_ARG_PTR;
  CHECK(attnrt_program_launch(m, "attn", NULL, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt),
                 "program 'attn': args is NULL but 4 arguments are expected"));
  CHECK(attnrt_program_launch(m, NULL, args, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_program_launch: name is NULL"));
  CHECK(attnrt_program_launch(NULL, "attn", args, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "attnrt_program_launch: module is NULL"));
  CREATE_RUNTIME(other);
  attnrt_stream *foreign = NULL;
  CHECK(attnrt_stream_create(other, &foreign) == ATTNRT_OK);
  CHECK(attnrt_program_launch(m, "attn", args, 4, foreign) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_program_launch: stream belongs to another runtime"));
  attnrt_stream_destroy(foreign);
  attnrt_runtime_destroy(other);
  // None of these allocated or queued anything.
  CHECK(st->allocs == 0 && st->launches == 0);

  // Every step is checked before any is queued: q feeds a tensor map of step 1.
  args[0] = arg_ptr(0);
  CHECK(attnrt_program_launch(m, "attn", args, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt),
                 "kernel 'attn' tensor map 'q_map': address 0x0 of parameter 'q' is null "
                 "(step 1 of program 'attn')"));
  args[0] = arg_ptr(0x1008);
  CHECK(attnrt_program_launch(m, "attn", args, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "is not 16-byte aligned (step 1 of program 'attn')"));
  CHECK(st->launches == 0 && st->tensor_map_encodes == 0 && st->ctx_depth == 0);
  args[0] = arg_ptr(0x1000);
  CHECK(attnrt_program_launch(m, "attn", args, 4, NULL) == ATTNRT_OK);
  CHECK(st->launches == 2 && st->allocs == 1);
  attnrt_module_destroy(m);
  CHECK(st->frees == 1);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_program_workspace_allocation_failure(void) {
  CREATE_RUNTIME(rt);
  LOAD_PROGRAM_MODULE(rt, m);
  const struct mock_cuda_state *st = mock_cuda_state();
  struct attnrt_arg args[] = {arg_ptr(0x1000), arg_ptr(0x2000), arg_ptr(0x3000),
                              arg_ptr(0x4000)};
  setenv("MOCK_CUDA_FAIL", "cuMemAlloc", 1);
  setenv("MOCK_CUDA_FAIL_CODE", "2", 1);
  CHECK(attnrt_program_launch(m, "attn", args, 4, NULL) == ATTNRT_ERR_OUT_OF_MEMORY);
  CHECK(contains(attnrt_last_error(rt),
                 "cuMemAlloc(33024 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory); "
                 "workspace of program 'attn' (lse: 100 bytes, k_rot: 32768 bytes)"));
  // Another driver failure keeps its own status.
  setenv("MOCK_CUDA_FAIL_CODE", "999", 1);
  CHECK(attnrt_program_launch(m, "attn", args, 4, NULL) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(rt), "CUDA_ERROR_UNKNOWN"));
  CHECK(contains(attnrt_last_error(rt), "workspace of program 'attn'"));
  CHECK(st->launches == 0 && st->allocs == 0 && st->ctx_depth == 0);
  // Programs without workspace and plain kernels still run.
  CHECK(attnrt_program_launch(m, "copy", args, 2, NULL) == ATTNRT_OK);
  CHECK(st->launches == 2);
  // The next launch tries again.
  unsetenv("MOCK_CUDA_FAIL");
  CHECK(attnrt_program_launch(m, "attn", args, 4, NULL) == ATTNRT_OK);
  CHECK(st->allocs == 1 && st->launches == 4);
  attnrt_module_destroy(m);
  CHECK(st->frees == 1);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_program_step_failure(void) {
  CREATE_RUNTIME(rt);
  LOAD_PROGRAM_MODULE(rt, m);
  const struct mock_cuda_state *st = mock_cuda_state();
  struct attnrt_arg args[] = {arg_ptr(0x1000), arg_ptr(0x2000), arg_ptr(0x3000),
                              arg_ptr(0x4000)};
  setenv("MOCK_CUDA_FAIL", "cuLaunchKernel", 1);
  CHECK(attnrt_program_launch(m, "attn", args, 4, NULL) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(rt), "cuLaunchKernel('attn__rope_k', grid 8x1x1"));
  CHECK(contains(attnrt_last_error(rt), "(step 0 of program 'attn'; 0 of its 2 steps queued)"));
  CHECK(st->launches == 0 && st->ctx_depth == 0);
  // A map of step 1 fails to encode after step 0 was queued.
  setenv("MOCK_CUDA_FAIL", "cuTensorMapEncodeTiled", 1);
  CHECK(attnrt_program_launch(m, "attn", args, 4, NULL) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(rt), "cuTensorMapEncodeTiled('q_map' of kernel 'attn')"));
  CHECK(contains(attnrt_last_error(rt), "(step 1 of program 'attn'; 1 of its 2 steps queued)"));
  CHECK(st->launches == 1 && st->ctx_depth == 0);
  unsetenv("MOCK_CUDA_FAIL");
  CHECK(attnrt_program_launch(m, "attn", args, 4, NULL) == ATTNRT_OK);
  CHECK(st->launches == 3 && st->allocs == 1);
  attnrt_module_destroy(m);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_program_workspace_per_module(void) {
  CREATE_RUNTIME(rt);
  LOAD_PROGRAM_MODULE(rt, m1);
  LOAD_PROGRAM_MODULE(rt, m2);
  LOAD_PROGRAM_MODULE(rt, idle);
  const struct mock_cuda_state *st = mock_cuda_state();
  struct attnrt_arg args[] = {arg_ptr(0x1000), arg_ptr(0x2000), arg_ptr(0x3000),
                              arg_ptr(0x4000)};
  CHECK(attnrt_program_launch(m1, "attn", args, 4, NULL) == ATTNRT_OK);
  CHECK(attnrt_program_launch(m2, "attn", args, 4, NULL) == ATTNRT_OK);
  CHECK(attnrt_program_launch(m1, "attn", args, 4, NULL) == ATTNRT_OK);
  CHECK(st->allocs == 2 && st->live_allocations == 2);
  attnrt_devptr w1 = st->launch_log[0].params[1], w2 = st->launch_log[2].params[1];
  CHECK(w1 != w2 && st->launch_log[4].params[1] == w1);
  attnrt_module_destroy(idle); // never launched: nothing to free
  CHECK(st->frees == 0);
  attnrt_module_destroy(m1);
  CHECK(st->frees == 1 && st->live_allocations == 1);
  attnrt_module_destroy(m2);
  CHECK(st->frees == 2 && st->live_allocations == 0);
  attnrt_runtime_destroy(rt);
  return 0;
}

int main(void) {
  static const struct test_case tests[] = {
      TEST(test_program_launch),
      TEST(test_program_falls_back_to_kernel),
      TEST(test_program_argument_errors),
      TEST(test_program_workspace_allocation_failure),
      TEST(test_program_step_failure),
      TEST(test_program_workspace_per_module),
  };
  mock_fixture_init();
  return run_tests(tests, sizeof tests / sizeof tests[0], mock_fixture_before,
                   mock_fixture_after);
}
