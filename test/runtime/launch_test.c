// launch_test.c - unit tests of module loading and kernel launches against the mock libcuda.

#include "mock_fixture.h"

#include <cuda.h>

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

static struct attnrt_arg arg_ptr(attnrt_devptr p) {
  struct attnrt_arg a = {ATTNRT_ARG_PTR, {.ptr = p}};
  return a;
}
static struct attnrt_arg arg_i32(int32_t v) {
  struct attnrt_arg a = {ATTNRT_ARG_I32, {.i32 = v}};
  return a;
}
static struct attnrt_arg arg_i64(int64_t v) {
  struct attnrt_arg a = {ATTNRT_ARG_I64, {.i64 = v}};
  return a;
}
static struct attnrt_arg arg_f32(float v) {
  struct attnrt_arg a = {ATTNRT_ARG_F32, {.f32 = v}};
  return a;
}

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

//===-- Tensor map parameters --===//

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

/// Reads word i of a mock tensor map's bytes.
static uint64_t map_word(const unsigned char *bytes, int i) {
  uint64_t w;
  memcpy(&w, bytes + 8 * i, sizeof w);
  return w;
}

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

//===-- Programs --===//

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
      TEST(test_tensormap_launch),
      TEST(test_tensormap_argument_errors),
      TEST(test_tensormap_encode_failure),
      TEST(test_tensormap_without_driver_support),
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
