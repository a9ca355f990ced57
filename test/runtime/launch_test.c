// launch_test.c - unit tests of module loading and kernel launches against the mock libcuda.

#include "launch_util.h"
#include "mock_fixture.h"

#include <stdint.h>

static const char *const ptx =
    ".version 8.0\n"
    ".target sm_90a\n"
    ".address_size 64\n"
    ".visible .entry k(\n"
    "  .param .u64 k_param_q,\n"
    "  .param .u32 k_param_n,\n"
    "  .param .u64 k_param_m,\n"
    "  .param .f32 k_param_s\n"
    ")\n{\n  ret;\n}\n"
    ".visible .entry big(.param .u64 big_param_o)\n{\n  ret;\n}\n"
    ".visible .entry wide()\n{\n  ret;\n}\n";

static const char *const manifest =
    "{\"version\": 1, \"target\": \"sm_90a\", \"format\": \"ptx\", \"kernels\": [\n"
    " {\"name\": \"k\", \"grid\": [4, 8, 1], \"block\": [128, 1, 1],\n"
    "  \"static_shared_bytes\": 33024, \"dynamic_shared_bytes\": 0,\n"
    "  \"params\": [{\"name\": \"q\", \"kind\": \"ptr\", \"dtype\": \"f32\", \"shape\": [1, 4, 100, 64]},\n"
    "             {\"name\": \"n\", \"kind\": \"i32\"}, {\"name\": \"m\", \"kind\": \"i64\"},\n"
    "             {\"name\": \"s\", \"kind\": \"f32\"}]},\n"
    " {\"name\": \"big\", \"grid\": [2], \"block\": [256],\n"
    "  \"static_shared_bytes\": 16384, \"dynamic_shared_bytes\": 65536,\n"
    "  \"params\": [{\"name\": \"o\", \"kind\": \"ptr\"}]},\n"
    " {\"name\": \"wide\", \"grid\": [1], \"block\": [2048], \"params\": []}]}\n";

static int test_load_and_launch(void) {
  CREATE_RUNTIME(rt);
  attnrt_module *m = NULL;
  CHECK(attnrt_module_load_ptx(rt, ptx, 0, manifest, &m) == ATTNRT_OK && m);
  CHECK(mock_cuda_state()->live_modules == 1);
  CHECK(mock_cuda_state()->jit_log_bytes > 0);
  CHECK(attnrt_module_kernel_count(m) == 3);
  const struct attnrt_kernel_info *k = attnrt_module_kernel(m, "k");
  CHECK(k && k->nparams == 4 && k->params[0].rank == 4);
  CHECK(attnrt_module_kernel(m, "absent") == NULL);
  CHECK(attnrt_manifest_kernel_count(attnrt_module_manifest(m)) == 3);

  attnrt_devptr q = 0;
  CHECK(attnrt_mem_alloc(rt, 4 * 100 * 64 * sizeof(float), &q) == ATTNRT_OK);
  struct attnrt_arg args[] = {arg_ptr(q), arg_i32(-100), arg_i64(INT64_C(1) << 40),
                              arg_f32(0.125f)};
  CHECK(attnrt_launch(m, "k", args, 4, NULL) == ATTNRT_OK);
  const struct mock_cuda_launch *l = &mock_cuda_state()->last_launch;
  CHECK(mock_cuda_state()->launches == 1);
  CHECK(strcmp(l->kernel, "k") == 0);
  CHECK(l->grid[0] == 4 && l->grid[1] == 8 && l->grid[2] == 1);
  CHECK(l->block[0] == 128 && l->block[1] == 1 && l->block[2] == 1);
  CHECK(l->shared_bytes == 0 && l->stream == NULL);
  CHECK(l->nparams == 4);
  CHECK(l->params[0] == q);
  CHECK(l->params[1] == (uint32_t)-100);
  CHECK(l->params[2] == UINT64_C(1) << 40);
  float s;
  uint32_t bits = (uint32_t)l->params[3];
  memcpy(&s, &bits, sizeof s);
  CHECK(s == 0.125f);

  // More than 48 KiB of shared memory: the attribute was raised at load.
  attnrt_stream *stream = NULL;
  CHECK(attnrt_stream_create(rt, &stream) == ATTNRT_OK);
  struct attnrt_arg out = arg_ptr(q);
  CHECK(attnrt_launch(m, "big", &out, 1, stream) == ATTNRT_OK);
  CHECK(strcmp(l->kernel, "big") == 0);
  CHECK(l->grid[0] == 2 && l->grid[1] == 1 && l->block[0] == 256 && l->block[2] == 1);
  CHECK(l->shared_bytes == 65536 && l->max_dynamic_shared == 65536);
  CHECK(l->stream == mock_cuda_state()->last_stream);
  CHECK(l->params[0] == q);
  CHECK(mock_cuda_state()->ctx_depth == 0);

  attnrt_stream_destroy(stream);
  CHECK(attnrt_mem_free(rt, q) == ATTNRT_OK);
  attnrt_module_destroy(m);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_load_ptx_with_length(void) {
  CREATE_RUNTIME(rt);
  // Exactly strlen(ptx) bytes with no NUL after them: the runtime must copy.
  size_t len = strlen(ptx);
  char *text = malloc(len);
  CHECK(text);
  memcpy(text, ptx, len);
  attnrt_module *m = NULL;
  enum attnrt_status st = attnrt_module_load_ptx(rt, text, len, manifest, &m);
  free(text);
  CHECK(st == ATTNRT_OK);
  CHECK(attnrt_launch(m, "wide", NULL, 0, NULL) == ATTNRT_ERR_CUDA);
  attnrt_module_destroy(m);
  CHECK(attnrt_module_load_ptx(rt, "", 0, manifest, &m) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_module_load_ptx: ptx is empty"));
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_load_cubin(void) {
  CREATE_RUNTIME(rt);
  static const char image[] = "\x7f" "ELF fake cubin .entry big(.param .u64 o)";
  static const char cubin_manifest[] =
      "{\"version\": 1, \"format\": \"cubin\", \"kernels\": [{\"name\": \"big\","
      " \"grid\": [1], \"block\": [32], \"params\": [{\"name\": \"o\", \"kind\": \"ptr\"}]}]}";
  attnrt_module *m = NULL;
  CHECK(attnrt_module_load_cubin(rt, image, sizeof image, cubin_manifest, &m) == ATTNRT_OK);
  CHECK(attnrt_module_kernel_count(m) == 1);
  attnrt_module_destroy(m);
  CHECK(attnrt_module_load_cubin(rt, image, 0, cubin_manifest, &m) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "image length is 0"));
  CHECK(attnrt_module_load_cubin(rt, image, sizeof image, manifest, &m) ==
        ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt),
                 "manifest format is \"ptx\" but a cubin image was given"));
  CHECK(attnrt_module_load_ptx(rt, ptx, 0, cubin_manifest, &m) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(m == NULL);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_jit_failure_carries_log(void) {
  CREATE_RUNTIME(rt);
  setenv("MOCK_CUDA_FAIL", "cuModuleLoadDataEx", 1);
  setenv("MOCK_CUDA_FAIL_CODE", "218", 1);
  setenv("MOCK_CUDA_JIT_LOG", "ptxas application ptx input, line 7; error   : "
                              "Unknown symbol 'bogus'\n", 1);
  attnrt_module *m = (attnrt_module *)&m;
  CHECK(attnrt_module_load_ptx(rt, ptx, 0, manifest, &m) == ATTNRT_ERR_CUDA);
  CHECK(m == NULL);
  const char *msg = attnrt_last_error(rt);
  CHECK(contains(msg, "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX "
                      "(a PTX JIT compilation failed)"));
  CHECK(contains(msg, "for target sm_90a on a device of compute capability 9.0"));
  CHECK(contains(msg, "JIT log:\nptxas application ptx input, line 7; error   : "
                      "Unknown symbol 'bogus'"));
  CHECK(msg[strlen(msg) - 1] == '\'');
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_kernel_missing_from_image(void) {
  CREATE_RUNTIME(rt);
  static const char missing[] =
      "{\"version\": 1, \"kernels\": [{\"name\": \"k\", \"grid\": [1], \"block\": [1],"
      " \"params\": []}, {\"name\": \"nope\", \"grid\": [1], \"block\": [1], \"params\": []}]}";
  attnrt_module *m = NULL;
  CHECK(attnrt_module_load_ptx(rt, ptx, 0, missing, &m) == ATTNRT_ERR_NOT_FOUND);
  CHECK(contains(attnrt_last_error(rt), "kernel 'nope' of the manifest is not in the image"));
  CHECK(m == NULL && mock_cuda_state()->live_modules == 0);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_shared_memory_opt_in_failure(void) {
  CREATE_RUNTIME(rt);
  setenv("MOCK_CUDA_FAIL", "cuFuncSetAttribute", 1);
  setenv("MOCK_CUDA_FAIL_CODE", "1", 1);
  attnrt_module *m = NULL;
  CHECK(attnrt_module_load_ptx(rt, ptx, 0, manifest, &m) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(rt),
                 "cuFuncSetAttribute('big', MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536) "
                 "failed: CUDA_ERROR_INVALID_VALUE"));
  CHECK(m == NULL && mock_cuda_state()->live_modules == 0);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_bad_manifest_on_load(void) {
  CREATE_RUNTIME(rt);
  attnrt_module *m = NULL;
  CHECK(attnrt_module_load_ptx(rt, ptx, 0, "{\"version\": 1", &m) == ATTNRT_ERR_PARSE);
  CHECK(contains(attnrt_last_error(rt), "manifest: invalid JSON at line 1"));
  CHECK(attnrt_module_load_ptx(rt, ptx, 0, "{\"version\": 1, \"kernels\": [{}]}", &m) ==
        ATTNRT_ERR_PARSE);
  CHECK(contains(attnrt_last_error(rt), "manifest: kernels[0]: missing \"name\""));
  CHECK(m == NULL && mock_cuda_state()->live_modules == 0);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_launch_argument_errors(void) {
  CREATE_RUNTIME(rt);
  attnrt_module *m = NULL;
  CHECK(attnrt_module_load_ptx(rt, ptx, 0, manifest, &m) == ATTNRT_OK);
  struct attnrt_arg args[] = {arg_ptr(64), arg_i32(1), arg_i64(2), arg_f32(3)};

  CHECK(attnrt_launch(m, "k", args, 3, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "kernel 'k' expects 4 arguments, got 3"));
  CHECK(attnrt_launch(m, "big", args, 2, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "kernel 'big' expects 1 argument, got 2"));
  args[1] = arg_f32(1);
  CHECK(attnrt_launch(m, "k", args, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "kernel 'k' parameter 1 ('n') expects i32, got f32"));
  args[1] = arg_i32(1);
  args[0] = arg_i64(64);
  CHECK(attnrt_launch(m, "k", args, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "kernel 'k' parameter 0 ('q') expects ptr, got i64"));
  args[0] = arg_ptr(64);
  CHECK(attnrt_launch(m, "nope", args, 4, NULL) == ATTNRT_ERR_NOT_FOUND);
  CHECK(contains(attnrt_last_error(rt), "attnrt_launch: module has no kernel 'nope'"));
  CHECK(attnrt_launch(m, NULL, args, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_launch: kernel name is NULL"));
  CHECK(attnrt_launch(m, "k", NULL, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "kernel 'k': args is NULL but 4 arguments are expected"));
  CHECK(attnrt_launch(NULL, "k", args, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "attnrt_launch: module is NULL"));

  CREATE_RUNTIME(other);
  attnrt_stream *foreign = NULL;
  CHECK(attnrt_stream_create(other, &foreign) == ATTNRT_OK);
  CHECK(attnrt_launch(m, "k", args, 4, foreign) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_launch: stream belongs to another runtime"));
  attnrt_stream_destroy(foreign);
  attnrt_runtime_destroy(other);

  CHECK(mock_cuda_state()->launches == 0);
  CHECK(attnrt_launch(m, "k", args, 4, NULL) == ATTNRT_OK);
  CHECK(mock_cuda_state()->launches == 1);
  attnrt_module_destroy(m);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_launch_driver_failure(void) {
  CREATE_RUNTIME(rt);
  attnrt_module *m = NULL;
  CHECK(attnrt_module_load_ptx(rt, ptx, 0, manifest, &m) == ATTNRT_OK);
  // 2048 threads per block: the driver refuses the launch.
  CHECK(attnrt_launch(m, "wide", NULL, 0, NULL) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(rt),
                 "cuLaunchKernel('wide', grid 1x1x1, block 2048x1x1, 0 dynamic "
                 "shared bytes) failed: CUDA_ERROR_INVALID_VALUE"));
  setenv("MOCK_CUDA_FAIL", "cuLaunchKernel", 1);
  setenv("MOCK_CUDA_FAIL_CODE", "701", 1);
  struct attnrt_arg out = arg_ptr(64);
  CHECK(attnrt_launch(m, "big", &out, 1, NULL) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(rt), "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"));
  CHECK(mock_cuda_state()->ctx_depth == 0 && mock_cuda_state()->launches == 0);
  unsetenv("MOCK_CUDA_FAIL");
  attnrt_module_destroy(m);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_module_null_arguments(void) {
  attnrt_module *m = NULL;
  CHECK(attnrt_module_load_ptx(NULL, ptx, 0, manifest, &m) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "attnrt_module_load_ptx: runtime is NULL"));
  CHECK(attnrt_module_load_cubin(NULL, ptx, 4, manifest, &m) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "attnrt_module_load_cubin: runtime is NULL"));
  CREATE_RUNTIME(rt);
  CHECK(attnrt_module_load_ptx(rt, NULL, 0, manifest, &m) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_module_load_ptx: ptx is NULL"));
  CHECK(attnrt_module_load_ptx(rt, ptx, 0, NULL, &m) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_module_load_ptx: manifest is NULL"));
  CHECK(attnrt_module_load_ptx(rt, ptx, 0, manifest, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_module_load_ptx: out is NULL"));
  CHECK(attnrt_module_load_cubin(rt, NULL, 4, manifest, &m) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_module_load_cubin: cubin is NULL"));
  CHECK(attnrt_module_kernel_count(NULL) == 0);
  CHECK(attnrt_module_kernel(NULL, "k") == NULL);
  CHECK(attnrt_module_manifest(NULL) == NULL);
  CHECK(attnrt_module_program_count(NULL) == 0);
  CHECK(attnrt_module_program(NULL, "attn") == NULL);
  attnrt_module_destroy(NULL);
  attnrt_runtime_destroy(rt);
  return 0;
}

/// A kernel doing 16-byte vector loads says so ("align"): a misaligned
/// pointer is refused before the launch, and a bad "align" at parse time.
static int test_pointer_alignment(void) {
  static const char *aligned =
      "{\"version\": 1, \"kernels\": [{\"name\": \"big\", \"grid\": [1], "
      "\"block\": [32], \"params\": [{\"name\": \"o\", \"kind\": \"ptr\", "
      "\"align\": 16}]}]}";
  CREATE_RUNTIME(rt);
  attnrt_module *m = NULL;
  CHECK(attnrt_module_load_ptx(rt, ptx, 0, aligned, &m) == ATTNRT_OK);
  CHECK(attnrt_module_kernel(m, "big")->params[0].align == 16);
  struct attnrt_arg ok = arg_ptr(0x10000), bad = arg_ptr(0x10008);
  CHECK(attnrt_launch(m, "big", &ok, 1, NULL) == ATTNRT_OK);
  CHECK(attnrt_launch(m, "big", &bad, 1, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt),
                 "kernel 'big' parameter 0 ('o') needs a 16-byte aligned "
                 "pointer, got 0x10008"));
  attnrt_module_destroy(m);
  static const char *not_pow2 =
      "{\"version\": 1, \"kernels\": [{\"name\": \"big\", \"grid\": [1], "
      "\"block\": [32], \"params\": [{\"name\": \"o\", \"kind\": \"ptr\", "
      "\"align\": 12}]}]}";
  CHECK(attnrt_module_load_ptx(rt, ptx, 0, not_pow2, &m) == ATTNRT_ERR_PARSE);
  CHECK(contains(attnrt_last_error(rt), "align"));
  CHECK(contains(attnrt_last_error(rt), "power of two"));
  attnrt_runtime_destroy(rt);
  return 0;
}

int main(void) {
  static const struct test_case tests[] = {
      TEST(test_pointer_alignment),
      TEST(test_load_and_launch),
      TEST(test_load_ptx_with_length),
      TEST(test_load_cubin),
      TEST(test_jit_failure_carries_log),
      TEST(test_kernel_missing_from_image),
      TEST(test_shared_memory_opt_in_failure),
      TEST(test_bad_manifest_on_load),
      TEST(test_launch_argument_errors),
      TEST(test_launch_driver_failure),
      TEST(test_module_null_arguments),
  };
  mock_fixture_init();
  return run_tests(tests, sizeof tests / sizeof tests[0], mock_fixture_before,
                   mock_fixture_after);
}
