//===- tensormap_test.c - Tensor map parameters against the mock libcuda --===//

#include "launch_util.h"
#include "mock_fixture.h"

#include <cuda.h>

#include <stdint.h>

// tk mixes ptr, i32, f32 and tensormap parameters; its second map names a ptr
// listed after it. t2 has one map; plain none.
static const char *const tm_ptx =
    ".version 8.0\n"
    ".target sm_90a\n"
    ".address_size 64\n"
    ".visible .entry tk(\n"
    "  .param .u64 tk_param_q,\n"
    "  .param .align 64 .b8 tk_param_q_map[128],\n"
    "  .param .u32 tk_param_n,\n"
    "  .param .align 64 .b8 tk_param_k_map[128],\n"
    "  .param .u64 tk_param_k,\n"
    "  .param .f32 tk_param_s\n"
    ")\n{\n  ret;\n}\n"
    ".visible .entry t2(.param .align 64 .b8 t2_param_o_map[128], .param .u64 t2_param_o)\n"
    "{\n  ret;\n}\n"
    ".visible .entry plain(.param .u64 plain_param_x)\n{\n  ret;\n}\n";

static const char *const tm_manifest =
    "{\"version\": 1, \"target\": \"sm_90a\", \"format\": \"ptx\", \"kernels\": [\n"
    " {\"name\": \"plain\", \"grid\": [1], \"block\": [32],\n"
    "  \"params\": [{\"name\": \"x\", \"kind\": \"ptr\"}]},\n"
    " {\"name\": \"tk\", \"grid\": [64, 32, 4], \"block\": [384],\n"
    "  \"params\": [{\"name\": \"q\", \"kind\": \"ptr\", \"dtype\": \"bf16\"},\n"
    "   {\"name\": \"q_map\", \"kind\": \"tensormap\", \"tensor\": \"q\", \"dtype\": \"bf16\",\n"
    "    \"dims\": [128, 8192, 32, 4], \"box\": [64, 128, 1, 1], \"swizzle\": 128},\n"
    "   {\"name\": \"n\", \"kind\": \"i32\"},\n"
    "   {\"name\": \"k_map\", \"kind\": \"tensormap\", \"tensor\": \"k\", \"dtype\": \"f16\",\n"
    "    \"dims\": [64, 300], \"strides\": [160], \"box\": [32, 64], \"swizzle\": 64},\n"
    "   {\"name\": \"k\", \"kind\": \"ptr\"},\n"
    "   {\"name\": \"s\", \"kind\": \"f32\"}]},\n"
    " {\"name\": \"t2\", \"grid\": [1], \"block\": [128],\n"
    "  \"params\": [{\"name\": \"o_map\", \"kind\": \"tensormap\", \"tensor\": \"o\",\n"
    "    \"dtype\": \"f32\", \"dims\": [1000], \"box\": [256]},\n"
    "   {\"name\": \"o\", \"kind\": \"ptr\"}]}]}\n";

/// Loads tm_ptx and allocates q and k (16-byte aligned, like cuMemAlloc's).
#define LOAD_TENSORMAP_MODULE(rt, m, q, k)                                     \
  attnrt_module *m = NULL;                                                     \
  CHECK(attnrt_module_load_ptx(rt, tm_ptx, 0, tm_manifest, &m) == ATTNRT_OK);  \
  attnrt_devptr q = 0, k = 0;                                                  \
  CHECK(attnrt_mem_alloc(rt, 4096, &q) == ATTNRT_OK && q % 16 == 0);           \
  CHECK(attnrt_mem_alloc(rt, 4096, &k) == ATTNRT_OK && k % 16 == 0)

static int test_tensormap_launch(void) {
  CREATE_RUNTIME(rt);
  LOAD_TENSORMAP_MODULE(rt, m, q, k);
  const struct attnrt_kernel_info *info = attnrt_module_kernel(m, "tk");
  CHECK(info && info->nparams == 6 && info->nargs == 4);
  CHECK(attnrt_module_kernel(m, "plain")->nargs == 1);

  struct attnrt_arg args[] = {arg_ptr(q), arg_i32(77), arg_ptr(k), arg_f32(0.5f)};
  CHECK(attnrt_launch(m, "tk", args, 4, NULL) == ATTNRT_OK);
  const struct mock_cuda_state *st = mock_cuda_state();
  CHECK(st->launches == 1 && st->tensor_map_encodes == 2 && st->ctx_depth == 0);

  // What the encoder got for q_map: the manifest's layout over q.
  const struct mock_cuda_tensor_map *qm = &st->tensor_maps[0];
  CHECK(qm->result == CUDA_SUCCESS);
  CHECK(qm->data_type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 && qm->rank == 4);
  CHECK(qm->address == q);
  CHECK(qm->dims[0] == 128 && qm->dims[1] == 8192 && qm->dims[2] == 32 && qm->dims[3] == 4);
  CHECK(qm->strides[0] == 256 && qm->strides[1] == 256 * 8192 &&
        qm->strides[2] == UINT64_C(256) * 8192 * 32);
  CHECK(qm->box[0] == 64 && qm->box[1] == 128 && qm->box[2] == 1 && qm->box[3] == 1);
  for (int i = 0; i < 4; ++i)
    CHECK(qm->element_strides[i] == 1);
  CHECK(qm->interleave == CU_TENSOR_MAP_INTERLEAVE_NONE);
  CHECK(qm->swizzle == CU_TENSOR_MAP_SWIZZLE_128B);
  CHECK(qm->l2_promotion == CU_TENSOR_MAP_L2_PROMOTION_L2_128B);
  CHECK(qm->oob_fill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  CHECK(qm->map_alignment >= 64);
  // k_map: explicit strides, 64-byte swizzle, over the ptr listed after it.
  const struct mock_cuda_tensor_map *km = &st->tensor_maps[1];
  CHECK(km->data_type == CU_TENSOR_MAP_DATA_TYPE_FLOAT16 && km->rank == 2);
  CHECK(km->address == k && km->dims[0] == 64 && km->dims[1] == 300);
  CHECK(km->strides[0] == 160 && km->box[0] == 32 && km->box[1] == 64);
  CHECK(km->swizzle == CU_TENSOR_MAP_SWIZZLE_64B && km->map_alignment >= 64);

  // What the kernel got: arguments in place, the 128 encoded bytes by value.
  const struct mock_cuda_launch *l = &st->last_launch;
  CHECK(strcmp(l->kernel, "tk") == 0 && l->nparams == 6);
  CHECK(l->grid[0] == 64 && l->grid[1] == 32 && l->grid[2] == 4 && l->block[0] == 384);
  CHECK(l->param_size[0] == 8 && l->params[0] == q);
  CHECK(l->param_size[1] == 128 && memcmp(l->param_data[1], qm->bytes, 128) == 0);
  CHECK(map_word(l->param_data[1], 0) == MOCK_CUDA_TENSOR_MAP_MAGIC);
  CHECK(map_word(l->param_data[1], 1) == q);
  CHECK(map_word(l->param_data[1], 15) == ~MOCK_CUDA_TENSOR_MAP_MAGIC);
  CHECK(l->param_size[2] == 4 && l->params[2] == 77);
  CHECK(l->param_size[3] == 128 && memcmp(l->param_data[3], km->bytes, 128) == 0);
  CHECK(map_word(l->param_data[3], 1) == k);
  CHECK(l->params[4] == k);
  float s;
  uint32_t bits = (uint32_t)l->params[5];
  memcpy(&s, &bits, sizeof s);
  CHECK(s == 0.5f);

  // The same addresses again: the maps are reused, not encoded again.
  args[1] = arg_i32(78);
  CHECK(attnrt_launch(m, "tk", args, 4, NULL) == ATTNRT_OK);
  CHECK(st->launches == 2 && st->tensor_map_encodes == 2 && l->params[2] == 78);
  CHECK(memcmp(l->param_data[1], qm->bytes, 128) == 0);
  CHECK(memcmp(l->param_data[3], km->bytes, 128) == 0);

  // A new k: only k_map is encoded again.
  attnrt_devptr k2 = 0;
  CHECK(attnrt_mem_alloc(rt, 4096, &k2) == ATTNRT_OK);
  args[2] = arg_ptr(k2);
  CHECK(attnrt_launch(m, "tk", args, 4, NULL) == ATTNRT_OK);
  CHECK(st->tensor_map_encodes == 3 && st->tensor_maps[2].address == k2);
  CHECK(memcmp(l->param_data[1], qm->bytes, 128) == 0);
  CHECK(memcmp(l->param_data[3], st->tensor_maps[2].bytes, 128) == 0);
  CHECK(map_word(l->param_data[3], 1) == k2 && l->params[4] == k2);

  // Another kernel's map has its own slot: t2 does not disturb tk's.
  struct attnrt_arg o = arg_ptr(q);
  CHECK(attnrt_launch(m, "t2", &o, 1, NULL) == ATTNRT_OK);
  const struct mock_cuda_tensor_map *om = &st->tensor_maps[3];
  CHECK(st->tensor_map_encodes == 4 && om->address == q && om->rank == 1);
  CHECK(om->data_type == CU_TENSOR_MAP_DATA_TYPE_FLOAT32 && om->dims[0] == 1000);
  CHECK(om->box[0] == 256 && om->swizzle == CU_TENSOR_MAP_SWIZZLE_NONE);
  CHECK(strcmp(l->kernel, "t2") == 0 && l->param_size[0] == 128 && l->params[1] == q);
  CHECK(memcmp(l->param_data[0], om->bytes, 128) == 0);
  CHECK(attnrt_launch(m, "tk", args, 4, NULL) == ATTNRT_OK);
  CHECK(st->tensor_map_encodes == 4);
  CHECK(memcmp(l->param_data[1], qm->bytes, 128) == 0);

  // Kernels without tensor maps take one argument per parameter, as before.
  CHECK(attnrt_launch(m, "plain", &o, 1, NULL) == ATTNRT_OK);
  CHECK(st->tensor_map_encodes == 4 && l->params[0] == q);

  CHECK(attnrt_mem_free(rt, k2) == ATTNRT_OK);
  CHECK(attnrt_mem_free(rt, k) == ATTNRT_OK);
  CHECK(attnrt_mem_free(rt, q) == ATTNRT_OK);
  attnrt_module_destroy(m);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_tensormap_argument_errors(void) {
  CREATE_RUNTIME(rt);
  LOAD_TENSORMAP_MODULE(rt, m, q, k);
  struct attnrt_arg args[] = {arg_ptr(q), arg_i32(1), arg_ptr(k), arg_f32(2), arg_f32(3),
                              arg_f32(4)};

  // One argument per parameter is one too many per map.
  CHECK(attnrt_launch(m, "tk", args, 6, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt),
                 "kernel 'tk' expects 4 arguments, got 6: 2 of its 6 parameters are "
                 "derived by attnrt (tensor maps) and not passed"));
  CHECK(attnrt_launch(m, "t2", args, 2, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt),
                 "kernel 't2' expects 1 argument, got 2: 1 of its 2 parameters is "
                 "derived by attnrt (tensor maps) and not passed"));
  // Kinds are checked against the parameters callers pass.
  args[1] = arg_f32(1);
  CHECK(attnrt_launch(m, "tk", args, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt),
                 "kernel 'tk' parameter 2 ('n', argument 1) expects i32, got f32"));
  args[1] = arg_i32(1);
  args[2].kind = ATTNRT_ARG_TENSORMAP;
  CHECK(attnrt_launch(m, "tk", args, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt),
                 "kernel 'tk' parameter 4 ('k', argument 2) expects ptr, got tensormap"));
  args[2].kind = ATTNRT_ARG_PTR;
  args[0].kind = ATTNRT_ARG_I64;
  CHECK(attnrt_launch(m, "tk", args, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "kernel 'tk' parameter 0 ('q') expects ptr, got i64"));
  args[0].kind = ATTNRT_ARG_PTR;

  // The addresses TMA reads must be 16-byte aligned and not null.
  args[0] = arg_ptr(q + 8);
  CHECK(attnrt_launch(m, "tk", args, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  char expected[160];
  snprintf(expected, sizeof expected,
           "kernel 'tk' tensor map 'q_map': address 0x%llx of parameter 'q' is "
           "not 16-byte aligned",
           (unsigned long long)(q + 8));
  CHECK(contains(attnrt_last_error(rt), expected));
  args[0] = arg_ptr(q);
  args[2] = arg_ptr(0);
  CHECK(attnrt_launch(m, "tk", args, 4, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt),
                 "kernel 'tk' tensor map 'k_map': address 0x0 of parameter 'k' is null"));
  struct attnrt_arg o = arg_ptr(k + 4);
  CHECK(attnrt_launch(m, "t2", &o, 1, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "kernel 't2' tensor map 'o_map'"));
  // An unaligned address is fine where no map reads it.
  CHECK(attnrt_launch(m, "plain", &o, 1, NULL) == ATTNRT_OK);

  CHECK(mock_cuda_state()->tensor_map_encodes == 0);
  CHECK(mock_cuda_state()->launches == 1 && mock_cuda_state()->ctx_depth == 0);
  CHECK(attnrt_mem_free(rt, k) == ATTNRT_OK);
  CHECK(attnrt_mem_free(rt, q) == ATTNRT_OK);
  attnrt_module_destroy(m);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_tensormap_encode_failure(void) {
  CREATE_RUNTIME(rt);
  LOAD_TENSORMAP_MODULE(rt, m, q, k);
  struct attnrt_arg args[] = {arg_ptr(q), arg_i32(1), arg_ptr(k), arg_f32(2)};
  setenv("MOCK_CUDA_FAIL", "cuTensorMapEncodeTiled", 1);
  setenv("MOCK_CUDA_FAIL_CODE", "1", 1);
  CHECK(attnrt_launch(m, "tk", args, 4, NULL) == ATTNRT_ERR_CUDA);
  char expected[512];
  snprintf(expected, sizeof expected,
           "cuTensorMapEncodeTiled('q_map' of kernel 'tk') failed: "
           "CUDA_ERROR_INVALID_VALUE (invalid argument); bf16 over 'q' at 0x%llx, "
           "dims [128, 8192, 32, 4] strides [256, 2097152, 67108864] "
           "box [64, 128, 1, 1] swizzle 128",
           (unsigned long long)q);
  CHECK(contains(attnrt_last_error(rt), expected));
  CHECK(mock_cuda_state()->tensor_map_encodes == 1);
  CHECK(mock_cuda_state()->launches == 0 && mock_cuda_state()->ctx_depth == 0);

  // A failed map is not kept: the next launch encodes it again.
  unsetenv("MOCK_CUDA_FAIL");
  CHECK(attnrt_launch(m, "tk", args, 4, NULL) == ATTNRT_OK);
  CHECK(mock_cuda_state()->tensor_map_encodes == 3);
  CHECK(mock_cuda_state()->tensor_maps[1].result == CUDA_SUCCESS);

  // A launch that fails after a new map was encoded leaves the context stack
  // as it was.
  setenv("MOCK_CUDA_FAIL", "cuLaunchKernel", 1);
  args[2] = arg_ptr(k + 16);
  CHECK(attnrt_launch(m, "tk", args, 4, NULL) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(rt), "cuLaunchKernel('tk', grid 64x32x4, block 384x1x1"));
  CHECK(mock_cuda_state()->tensor_map_encodes == 4 && mock_cuda_state()->ctx_depth == 0);
  unsetenv("MOCK_CUDA_FAIL");

  CHECK(attnrt_mem_free(rt, k) == ATTNRT_OK);
  CHECK(attnrt_mem_free(rt, q) == ATTNRT_OK);
  attnrt_module_destroy(m);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_tensormap_without_driver_support(void) {
  // Found only through cuGetProcAddress, as on drivers before CUDA 12.0 the
  // entry point is missing: the runtime still works, tensor map kernels fail.
  setenv("MOCK_CUDA_NO_PROC_ADDRESS", "1", 1);
  CREATE_RUNTIME(rt);
  LOAD_TENSORMAP_MODULE(rt, m, q, k);
  struct attnrt_arg args[] = {arg_ptr(q), arg_i32(1), arg_ptr(k), arg_f32(2)};
  CHECK(attnrt_launch(m, "tk", args, 4, NULL) == ATTNRT_ERR_NO_DEVICE);
  CHECK(contains(attnrt_last_error(rt),
                 "kernel 'tk' has tensor map parameters but the CUDA driver has no "
                 "cuTensorMapEncodeTiled (CUDA 12.0 or later is needed)"));
  CHECK(attnrt_launch(m, "plain", args, 1, NULL) == ATTNRT_OK);
  CHECK(mock_cuda_state()->launches == 1 && mock_cuda_state()->ctx_depth == 0);
  CHECK(attnrt_mem_free(rt, k) == ATTNRT_OK);
  CHECK(attnrt_mem_free(rt, q) == ATTNRT_OK);
  attnrt_module_destroy(m);
  attnrt_runtime_destroy(rt);
  return 0;
}

int main(void) {
  static const struct test_case tests[] = {
      TEST(test_tensormap_launch),
      TEST(test_tensormap_argument_errors),
      TEST(test_tensormap_encode_failure),
      TEST(test_tensormap_without_driver_support),
  };
  mock_fixture_init();
  return run_tests(tests, sizeof tests / sizeof tests[0], mock_fixture_before,
                   mock_fixture_after);
}
