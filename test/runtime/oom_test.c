//===- oom_test.c - Device out of memory at every allocating driver call --===//
//
// Runs a launch program's whole life (runtime, module, stream, buffers, two
// launches of a program with a workspace and tensor maps, a program without
// one, then every destroy) against the mock libcuda, once per driver call
// that can allocate: run N makes the Nth such call answer
// CUDA_ERROR_OUT_OF_MEMORY (MOCK_CUDA_FAIL_AT=N). Every failure must be
// ATTNRT_ERR_OUT_OF_MEMORY with a message naming the call, a failed launch
// must leave the module launchable, and after the destroys nothing the
// runtime made through the driver may be left (allocations, modules,
// streams, events, context references, pushed contexts; as many frees as
// allocations).

#include "launch_util.h"
#include "mock_fixture.h"

#include <stdio.h>

// As program_test.c: attn__rope_k writes K rotated into the workspace buffer
// k_rot; attn reads q and k_rot through tensor maps and writes lse to a
// second buffer. "copy" runs plain twice and has no workspace.
static const char *const oom_ptx =
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

static const char *const oom_manifest =
    "{\"version\": 1, \"format\": \"ptx\", \"kernels\": [\n"
    " {\"name\": \"attn__rope_k\", \"grid\": [8], \"block\": [64],\n"
    "  \"params\": [{\"name\": \"k\", \"kind\": \"ptr\"}, {\"name\": \"k_rot\", \"kind\": \"ptr\"}]},\n"
    " {\"name\": \"attn\", \"grid\": [2, 4], \"block\": [128], \"dynamic_shared_bytes\": 65536,\n"
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

// The driver calls that can report CUDA_ERROR_OUT_OF_MEMORY on the way
// (context retain, module load and its functions, streams, events, memory,
// the workspace's memset, tensor maps, launches). Frees, unloads and pops are
// not listed: a driver that refuses to free leaks by definition.
static const char *const allocating_calls =
    "cuDevicePrimaryCtxRetain,cuModuleLoadDataEx,cuModuleGetFunction,"
    "cuFuncSetAttribute,cuStreamCreate,cuEventCreate,cuMemAlloc,"
    "cuMemsetD8Async,cuTensorMapEncodeTiled,cuLaunchKernel";

/// What the sweep saw: which kinds of failure some run hit.
struct seen {
  int runs, failures;
  bool runtime, module, stream, buffer, workspace, memset, map, step0, step1;
  bool plain;
};

/// Checks that st is OUT_OF_MEMORY with a driver message naming the failure
/// (the message is rt's, or the thread's when rt is NULL).
static int check_oom(attnrt_runtime *rt, enum attnrt_status st) {
  CHECK(st == ATTNRT_ERR_OUT_OF_MEMORY);
  CHECK(strcmp(attnrt_status_string(st), "out of memory") == 0);
  CHECK(contains(attnrt_last_error(rt), "failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"));
  return 0;
}

/// Launches program name of m; on failure (the injected one) checks it and
/// launches again, which must succeed. *failed tells whether it failed.
static int launch_twice(attnrt_module *m, attnrt_runtime *rt, const char *name,
                        const struct attnrt_arg *args, size_t nargs,
                        attnrt_stream *s, struct seen *seen, bool *failed) {
  const struct mock_cuda_state *st = mock_cuda_state();
  int before = st->launches;
  enum attnrt_status r = attnrt_program_launch(m, name, args, nargs, s);
  *failed = r != ATTNRT_OK;
  if (r == ATTNRT_OK)
    return 0;
  if (check_oom(rt, r))
    return 1;
  const char *msg = attnrt_last_error(rt);
  bool unzeroed = false;
  CHECK(st->ctx_depth == 0);
  if (contains(msg, "; workspace of program 'attn' (lse: 100 bytes, k_rot: 32768 bytes)")) {
    seen->workspace = true;
    CHECK(contains(msg, "cuMemAlloc(33024 bytes) failed"));
    CHECK(st->launches == before); // nothing queued
  } else if (contains(msg, "(zeroing the workspace of program 'attn')")) {
    seen->memset = unzeroed = true;
    CHECK(st->launches == before);
  } else if (contains(msg, "(step 0 of program 'attn'; 0 of its 2 steps queued)")) {
    seen->step0 = true;
    CHECK(st->launches == before);
  } else if (contains(msg, "(step 1 of program 'attn'; 1 of its 2 steps queued)")) {
    // The map of step 1's q, or step 1's launch, after step 0 was queued.
    if (contains(msg, "cuTensorMapEncodeTiled"))
      seen->map = true;
    else
      seen->step1 = true;
    CHECK(st->launches == before + 1);
  } else if (contains(msg, "of program 'copy'")) {
    seen->plain = true;
  } else {
    fprintf(stderr, "unexpected message: %s\n", msg);
    CHECK(false);
  }
  before = st->launches;
  CHECK(attnrt_program_launch(m, name, args, nargs, s) == ATTNRT_OK);
  CHECK(st->launches == before + 2);
  if (unzeroed) {
    // The retry zero-filled the workspace the failed launch allocated
    // (the mock's memory starts as 0xA5; lse is its first buffer).
    const unsigned char *w = (const unsigned char *)(uintptr_t)st->last_launch.params[6];
    for (size_t i = 0; i < 33024; ++i)
      CHECK(w[i] == 0);
  }
  return 0;
}

/// One life of a program with the Nth allocating call failing (at <= 0: none).
static int run_once(int at, struct seen *seen) {
  mock_cuda_reset();
  if (at > 0)
    setenv("MOCK_CUDA_FAIL", allocating_calls, 1);
  else
    unsetenv("MOCK_CUDA_FAIL");
  setenv("MOCK_CUDA_FAIL_CODE", "2", 1); // CUDA_ERROR_OUT_OF_MEMORY
  char n[16];
  snprintf(n, sizeof n, "%d", at);
  setenv("MOCK_CUDA_FAIL_AT", n, 1);
  const struct mock_cuda_state *st = mock_cuda_state();

  attnrt_runtime *rt = NULL;
  attnrt_module *m = NULL;
  attnrt_stream *s = NULL;
  attnrt_devptr buf[4] = {0, 0, 0, 0};
  enum attnrt_status r = attnrt_runtime_create(0, &rt);
  if (r != ATTNRT_OK) {
    seen->runtime = true;
    CHECK(rt == NULL);
    if (check_oom(NULL, r))
      return 1;
    goto done;
  }
  r = attnrt_module_load_ptx(rt, oom_ptx, 0, oom_manifest, &m);
  if (r != ATTNRT_OK) {
    seen->module = true;
    CHECK(m == NULL);
    if (check_oom(rt, r))
      return 1;
    goto done;
  }
  r = attnrt_stream_create(rt, &s);
  if (r != ATTNRT_OK) {
    seen->stream = true;
    CHECK(s == NULL);
    if (check_oom(rt, r))
      return 1;
    goto done;
  }
  for (int i = 0; i < 4; ++i) {
    r = attnrt_mem_alloc(rt, 4096, &buf[i]);
    if (r != ATTNRT_OK) {
      seen->buffer = true;
      CHECK(buf[i] == 0);
      if (check_oom(rt, r) || !contains(attnrt_last_error(rt), "cuMemAlloc(4096 bytes)"))
        return 1;
      goto done;
    }
  }
  struct attnrt_arg args[] = {arg_ptr(buf[0]), arg_ptr(buf[1]), arg_ptr(buf[2]),
                              arg_ptr(buf[3])};
  bool failed;
  if (launch_twice(m, rt, "attn", args, 4, s, seen, &failed))
    return 1;
  // The second launch reuses the workspace: at most the launches can fail.
  int allocs = st->allocs;
  if (launch_twice(m, rt, "attn", args, 4, s, seen, &failed))
    return 1;
  CHECK(st->allocs == allocs);
  if (launch_twice(m, rt, "copy", args, 2, s, seen, &failed))
    return 1;
  CHECK(attnrt_stream_synchronize(s) == ATTNRT_OK);

done:
  attnrt_stream_destroy(s);
  for (int i = 0; i < 4; ++i)
    if (buf[i])
      CHECK(attnrt_mem_free(rt, buf[i]) == ATTNRT_OK);
  attnrt_module_destroy(m);
  attnrt_runtime_destroy(rt);
  CHECK(st->live_allocations == 0 && st->allocs == st->frees);
  CHECK(st->live_modules == 0 && st->live_streams == 0 && st->live_events == 0);
  CHECK(st->primary_ctx_refs == 0 && st->ctx_depth == 0);
  CHECK(st->injected_failures == (at > 0 && at <= st->listed_calls ? 1 : 0));
  ++seen->runs;
  seen->failures += st->injected_failures;
  return 0;
}

static int test_oom_at_every_allocating_call(void) {
  struct seen seen = {0};
  // Without a failure: how many allocating calls one life makes.
  CHECK(run_once(0, &seen) == 0);
  CHECK(seen.failures == 0);
  CHECK(run_once(1000000, &seen) == 0); // counts them, failing none
  int calls = mock_cuda_state()->listed_calls;
  CHECK(calls >= 10);
  for (int at = 1; at <= calls; ++at) {
    if (run_once(at, &seen)) {
      fprintf(stderr, "with the allocating call %d of %d failing\n", at, calls);
      return 1;
    }
  }
  CHECK(seen.failures == calls);
  // Every stage was reached by some run.
  CHECK(seen.runtime && seen.module && seen.stream && seen.buffer);
  CHECK(seen.workspace && seen.memset && seen.map && seen.step0 && seen.step1);
  CHECK(seen.plain);
  printf("out of memory at each of %d allocating driver calls: statuses, no leaks\n", calls);
  return 0;
}

/// The workspace's allocation failing repeatedly, then succeeding: each
/// failure queues nothing and allocates nothing; the module keeps one
/// workspace, freed by attnrt_module_destroy.
static int test_oom_workspace_until_memory_frees(void) {
  CREATE_RUNTIME(rt);
  attnrt_module *m = NULL;
  CHECK(attnrt_module_load_ptx(rt, oom_ptx, 0, oom_manifest, &m) == ATTNRT_OK);
  const struct mock_cuda_state *st = mock_cuda_state();
  struct attnrt_arg args[] = {arg_ptr(0x1000), arg_ptr(0x2000), arg_ptr(0x3000),
                              arg_ptr(0x4000)};
  setenv("MOCK_CUDA_FAIL", "cuMemAlloc", 1);
  setenv("MOCK_CUDA_FAIL_CODE", "2", 1);
  for (int i = 0; i < 3; ++i) {
    CHECK(attnrt_program_launch(m, "attn", args, 4, NULL) == ATTNRT_ERR_OUT_OF_MEMORY);
    CHECK(contains(attnrt_last_error(rt),
                   "cuMemAlloc(33024 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory); "
                   "workspace of program 'attn' (lse: 100 bytes, k_rot: 32768 bytes)"));
  }
  CHECK(st->allocs == 0 && st->live_allocations == 0 && st->launches == 0);
  CHECK(st->ctx_depth == 0);
  unsetenv("MOCK_CUDA_FAIL");
  CHECK(attnrt_program_launch(m, "attn", args, 4, NULL) == ATTNRT_OK);
  CHECK(attnrt_program_launch(m, "attn", args, 4, NULL) == ATTNRT_OK);
  CHECK(st->allocs == 1 && st->live_allocations == 1 && st->launches == 4);
  attnrt_module_destroy(m);
  CHECK(st->frees == 1 && st->live_allocations == 0);
  attnrt_runtime_destroy(rt);
  return 0;
}

int main(void) {
  static const struct test_case tests[] = {
      TEST(test_oom_at_every_allocating_call),
      TEST(test_oom_workspace_until_memory_frees),
  };
  mock_fixture_init();
  return run_tests(tests, sizeof tests / sizeof tests[0], mock_fixture_before,
                   mock_fixture_after);
}
