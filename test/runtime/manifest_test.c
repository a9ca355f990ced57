// manifest_test.c - unit tests of attnrt_manifest_parse and the manifest queries; needs no driver.

#include "attnrt.h"
#include "test_util.h"

#include <stdint.h>
#include <stdlib.h>

static const char *const full_manifest =
    "{\"version\": 1, \"target\": \"sm_90a\", \"format\": \"ptx\",\n"
    " \"kernels\": [{\"name\": \"k\", \"grid\": [4, 8, 1], \"block\": [128, 1, 1],\n"
    "              \"static_shared_bytes\": 33024, \"dynamic_shared_bytes\": 0,\n"
    "              \"params\": [{\"name\": \"q\", \"kind\": \"ptr\", \"dtype\": \"f32\",\n"
    "                          \"shape\": [1, 4, 100, 64]},\n"
    "                         {\"name\": \"n\", \"kind\": \"i32\"}]},\n"
    "             {\"name\": \"tail\", \"grid\": [7], \"block\": [32, 2],\n"
    "              \"params\": [{\"name\": \"x\", \"kind\": \"i64\"},\n"
    "                         {\"name\": \"s\", \"kind\": \"f32\"}]}]}\n";

static int test_parse_full_manifest(void) {
  attnrt_manifest *m = NULL;
  CHECK(attnrt_manifest_parse(full_manifest, &m) == ATTNRT_OK);
  CHECK(attnrt_manifest_kernel_count(m) == 2);
  CHECK(strcmp(attnrt_manifest_target(m), "sm_90a") == 0);
  CHECK(strcmp(attnrt_manifest_format(m), "ptx") == 0);

  const struct attnrt_kernel_info *k = attnrt_manifest_kernel(m, "k");
  CHECK(k && k == attnrt_manifest_kernel_at(m, 0));
  CHECK(k->grid[0] == 4 && k->grid[1] == 8 && k->grid[2] == 1);
  CHECK(k->block[0] == 128 && k->block[1] == 1 && k->block[2] == 1);
  CHECK(k->static_shared_bytes == 33024 && k->dynamic_shared_bytes == 0);
  CHECK(k->nparams == 2);
  CHECK(strcmp(k->params[0].name, "q") == 0 && k->params[0].kind == ATTNRT_ARG_PTR);
  CHECK(strcmp(k->params[0].dtype, "f32") == 0 && k->params[0].rank == 4);
  CHECK(k->params[0].shape[0] == 1 && k->params[0].shape[1] == 4 &&
        k->params[0].shape[2] == 100 && k->params[0].shape[3] == 64 &&
        k->params[0].shape[4] == 0);
  CHECK(strcmp(k->params[1].name, "n") == 0 && k->params[1].kind == ATTNRT_ARG_I32);
  CHECK(k->params[1].dtype == NULL && k->params[1].rank == 0);

  const struct attnrt_kernel_info *t = attnrt_manifest_kernel_at(m, 1);
  CHECK(t && strcmp(t->name, "tail") == 0);
  CHECK(t->grid[0] == 7 && t->grid[1] == 1 && t->grid[2] == 1);
  CHECK(t->block[0] == 32 && t->block[1] == 2 && t->block[2] == 1);
  CHECK(t->static_shared_bytes == 0 && t->dynamic_shared_bytes == 0);
  CHECK(t->params[0].kind == ATTNRT_ARG_I64 && t->params[1].kind == ATTNRT_ARG_F32);

  CHECK(attnrt_manifest_kernel(m, "absent") == NULL);
  CHECK(attnrt_manifest_kernel(m, NULL) == NULL);
  CHECK(attnrt_manifest_kernel_at(m, 2) == NULL);
  CHECK(attnrt_manifest_kernel_at(m, -1) == NULL);
  attnrt_manifest_destroy(m);
  return 0;
}

static const char *const tensormap_manifest =
    "{\"version\": 1, \"kernels\": [\n"
    " {\"name\": \"fa\", \"grid\": [64, 32, 4], \"block\": [384],\n"
    "  \"params\": [{\"name\": \"q\", \"kind\": \"ptr\", \"dtype\": \"bf16\"},\n"
    "             {\"name\": \"q_map\", \"kind\": \"tensormap\", \"tensor\": \"q\",\n"
    "              \"dtype\": \"bf16\", \"dims\": [128, 8192, 32, 4],\n"
    "              \"box\": [64, 128, 1, 1], \"swizzle\": 128},\n"
    "             {\"name\": \"n\", \"kind\": \"i32\"},\n"
    "             {\"name\": \"o_map\", \"kind\": \"tensormap\", \"tensor\": \"o\",\n"
    "              \"dtype\": \"f32\", \"dims\": [100, 7], \"strides\": [512],\n"
    "              \"box\": [4, 7]},\n"
    "             {\"name\": \"o\", \"kind\": \"ptr\"},\n"
    "             {\"name\": \"v_map\", \"kind\": \"tensormap\", \"tensor\": \"q\",\n"
    "              \"dtype\": \"f8e4m3\", \"dims\": [4096], \"box\": [32],\n"
    "              \"swizzle\": 32}]},\n"
    " {\"name\": \"plain\", \"grid\": [1], \"block\": [1],\n"
    "  \"params\": [{\"name\": \"x\", \"kind\": \"ptr\"}]}]}\n";

static int test_parse_tensormap(void) {
  attnrt_manifest *m = NULL;
  CHECK(attnrt_manifest_parse(tensormap_manifest, &m) == ATTNRT_OK);
  const struct attnrt_kernel_info *k = attnrt_manifest_kernel(m, "fa");
  CHECK(k && k->nparams == 6 && k->nargs == 3);

  const struct attnrt_param_info *q = &k->params[1];
  CHECK(strcmp(q->name, "q_map") == 0 && q->kind == ATTNRT_ARG_TENSORMAP);
  CHECK(strcmp(q->dtype, "bf16") == 0 && q->rank == 0);
  const struct attnrt_tensormap_info *t = &q->tensormap;
  CHECK(t->tensor == 0 && t->elem_bytes == 2 && t->rank == 4);
  CHECK(t->dims[0] == 128 && t->dims[1] == 8192 && t->dims[2] == 32 &&
        t->dims[3] == 4 && t->dims[4] == 0);
  // Contiguous defaults: 128 * 2, then times 8192, then times 32.
  CHECK(t->strides[0] == 256 && t->strides[1] == 256 * 8192 &&
        t->strides[2] == UINT64_C(256) * 8192 * 32 && t->strides[3] == 0);
  CHECK(t->box[0] == 64 && t->box[1] == 128 && t->box[2] == 1 &&
        t->box[3] == 1 && t->box[4] == 0);
  CHECK(t->swizzle == 128);

  // A map may name a ptr listed after it; strides given; swizzle defaults to 0.
  const struct attnrt_tensormap_info *o = &k->params[3].tensormap;
  CHECK(k->params[3].kind == ATTNRT_ARG_TENSORMAP && o->tensor == 4);
  CHECK(o->elem_bytes == 4 && o->rank == 2 && o->dims[0] == 100 &&
        o->dims[1] == 7 && o->strides[0] == 512 && o->box[0] == 4 &&
        o->box[1] == 7 && o->swizzle == 0);

  const struct attnrt_tensormap_info *v = &k->params[5].tensormap;
  CHECK(v->tensor == 0 && v->elem_bytes == 1 && v->rank == 1 &&
        v->dims[0] == 4096 && v->strides[0] == 0 && v->box[0] == 32 &&
        v->swizzle == 32);

  // Other parameters carry no tensor map.
  CHECK(k->params[0].kind == ATTNRT_ARG_PTR && k->params[0].tensormap.rank == 0 &&
        k->params[0].tensormap.tensor == 0 && k->params[2].tensormap.dims[0] == 0);

  const struct attnrt_kernel_info *plain = attnrt_manifest_kernel(m, "plain");
  CHECK(plain && plain->nparams == 1 && plain->nargs == 1);
  attnrt_manifest_destroy(m);

  // Kernels without tensor maps: nargs is nparams.
  CHECK(attnrt_manifest_parse(full_manifest, &m) == ATTNRT_OK);
  CHECK(attnrt_manifest_kernel_at(m, 0)->nargs == 2);
  CHECK(attnrt_manifest_kernel_at(m, 1)->nargs == 2);
  attnrt_manifest_destroy(m);
  return 0;
}

static int test_minimal_manifest(void) {
  attnrt_manifest *m = NULL;
  CHECK(attnrt_manifest_parse("{\"version\": 1, \"kernels\": []}", &m) == ATTNRT_OK);
  CHECK(attnrt_manifest_kernel_count(m) == 0);
  CHECK(attnrt_manifest_target(m) == NULL && attnrt_manifest_format(m) == NULL);
  CHECK(attnrt_manifest_kernel_at(m, 0) == NULL);
  attnrt_manifest_destroy(m);
  return 0;
}

#define K(body) "{\"version\": 1, \"kernels\": [" body "]}"
#define GOOD_DIMS "\"name\": \"k\", \"grid\": [1], \"block\": [32]"

static const struct {
  const char *json, *message;
} bad_manifests[] = {
    {"", "manifest: invalid JSON at line 1, column 1"},
    {"{\"version\": 1,", "manifest: invalid JSON at line 1"},
    {"{\"version\": 1,\n \"kernels\": [\n  oops]}", "invalid JSON at line 3, column 3"},
    {K("") " trailing", "manifest: invalid JSON"},
    {"[]", "manifest: expected a JSON object"},
    {"{\"kernels\": []}", "manifest: missing \"version\""},
    {"{\"version\": \"1\", \"kernels\": []}", "manifest: version: expected an integer"},
    {"{\"version\": 2, \"kernels\": []}", "manifest: version: unsupported version 2, expected 1"},
    {"{\"version\": 1}", "manifest: missing \"kernels\""},
    {"{\"version\": 1, \"kernels\": {}}", "manifest: kernels: expected an array"},
    {"{\"version\": 1, \"target\": 90, \"kernels\": []}", "manifest: target: expected a non-empty string"},
    {"{\"version\": 1, \"format\": \"sass\", \"kernels\": []}",
     "manifest: format: expected \"ptx\" or \"cubin\", found \"sass\""},
    {K("7"), "manifest: kernels[0]: expected an object"},
    {K("{\"grid\": [1], \"block\": [1], \"params\": []}"), "manifest: kernels[0]: missing \"name\""},
    {K("{\"name\": \"k\", \"block\": [1], \"params\": []}"), "manifest: kernels[0]: missing \"grid\""},
    {K("{\"name\": \"k\", \"grid\": [1], \"params\": []}"), "manifest: kernels[0]: missing \"block\""},
    {K("{\"name\": \"k\", \"grid\": [0], \"block\": [1], \"params\": []}"),
     "manifest: kernels[0].grid: entry 0: expected a positive integer"},
    {K("{\"name\": \"k\", \"grid\": [1, 1, 1, 1], \"block\": [1], \"params\": []}"),
     "manifest: kernels[0].grid: expected an array of 1 to 3 positive integers"},
    {K("{\"name\": \"k\", \"grid\": [1], \"block\": \"32\", \"params\": []}"),
     "manifest: kernels[0].block: expected an array of 1 to 3 positive integers"},
    {K("{\"name\": \"k\", \"grid\": [1], \"block\": [1.5], \"params\": []}"),
     "manifest: kernels[0].block: entry 0: expected a positive integer"},
    {K("{" GOOD_DIMS ", \"static_shared_bytes\": -1, \"params\": []}"),
     "manifest: kernels[0].static_shared_bytes: expected a non-negative integer"},
    {K("{" GOOD_DIMS ", \"dynamic_shared_bytes\": 0.5, \"params\": []}"),
     "manifest: kernels[0].dynamic_shared_bytes: expected a non-negative integer"},
    {K("{" GOOD_DIMS "}"), "manifest: kernels[0]: missing \"params\""},
    {K("{" GOOD_DIMS ", \"params\": {}}"), "manifest: kernels[0].params: expected an array"},
    {K("{" GOOD_DIMS ", \"params\": [1]}"), "manifest: kernels[0].params[0]: expected an object"},
    {K("{" GOOD_DIMS ", \"params\": [{\"kind\": \"ptr\"}]}"),
     "manifest: kernels[0].params[0]: missing \"name\""},
    {K("{" GOOD_DIMS ", \"params\": [{\"name\": \"q\"}]}"),
     "manifest: kernels[0].params[0]: missing \"kind\""},
    {K("{" GOOD_DIMS ", \"params\": [{\"name\": \"q\", \"kind\": \"ptr\"}, {\"name\": \"n\", \"kind\": \"u8\"}]}"),
     "manifest: kernels[0].params[1].kind: expected \"ptr\", \"i32\", \"i64\", \"f32\" or \"tensormap\", found \"u8\""},
    {K("{" GOOD_DIMS ", \"params\": [{\"name\": \"q\", \"kind\": 3}]}"),
     "manifest: kernels[0].params[0].kind: expected a string"},
    {K("{" GOOD_DIMS ", \"params\": [{\"name\": \"q\", \"kind\": \"ptr\", \"dtype\": 1}]}"),
     "manifest: kernels[0].params[0].dtype: expected a non-empty string"},
    {K("{" GOOD_DIMS ", \"params\": [{\"name\": \"q\", \"kind\": \"ptr\", \"shape\": [1, 2, 3, 4, 5, 6, 7, 8, 9]}]}"),
     "manifest: kernels[0].params[0].shape: rank 9 exceeds the maximum of 8"},
    {K("{" GOOD_DIMS ", \"params\": [{\"name\": \"q\", \"kind\": \"ptr\", \"shape\": [1, -2]}]}"),
     "manifest: kernels[0].params[0].shape: entry 1: expected a non-negative integer"},
    {K("{" GOOD_DIMS ", \"params\": [{\"name\": \"q\", \"kind\": \"ptr\", \"shape\": 4}]}"),
     "manifest: kernels[0].params[0].shape: expected an array of non-negative integers"},
    {K("{" GOOD_DIMS ", \"params\": []}, {" GOOD_DIMS ", \"params\": []}"),
     "manifest: kernels[1]: duplicate kernel name \"k\""},
};

// A kernel "k" with ptr "q", i32 "n" and the tensor map fields given.
#define TM(fields)                                                             \
  K("{" GOOD_DIMS ", \"params\": [{\"name\": \"q\", \"kind\": \"ptr\"}, "           \
    "{\"name\": \"n\", \"kind\": \"i32\"}, "                                     \
    "{\"name\": \"q_map\", \"kind\": \"tensormap\"" fields "}]}")
#define TM_OK_TENSOR "\"tensor\": \"q\", \"dtype\": \"bf16\""
#define TM_WHERE "manifest: kernels[0].params[2]"
#define TM_WHO "tensor map 'q_map' of kernel 'k': "

static const struct {
  const char *json, *message;
} bad_tensormaps[] = {
    {TM(", \"dtype\": \"bf16\", \"dims\": [64], \"box\": [64]"),
     TM_WHERE ": " TM_WHO "missing \"tensor\""},
    {TM(", \"tensor\": 1, \"dtype\": \"bf16\", \"dims\": [64], \"box\": [64]"),
     TM_WHERE ".tensor: " TM_WHO "expected the name of a ptr parameter"},
    {TM(", \"tensor\": \"x\", \"dtype\": \"bf16\", \"dims\": [64], \"box\": [64]"),
     TM_WHERE ".tensor: " TM_WHO "kernel has no parameter named 'x'"},
    {TM(", \"tensor\": \"n\", \"dtype\": \"bf16\", \"dims\": [64], \"box\": [64]"),
     TM_WHERE ".tensor: " TM_WHO "parameter 'n' is i32, expected a ptr parameter"},
    {TM(", \"tensor\": \"q_map\", \"dtype\": \"bf16\", \"dims\": [64], \"box\": [64]"),
     TM_WHERE ".tensor: " TM_WHO "parameter 'q_map' is tensormap, expected a ptr parameter"},
    {TM(", \"tensor\": \"q\", \"dims\": [64], \"box\": [64]"),
     TM_WHERE ": " TM_WHO "missing \"dtype\""},
    {TM(", \"tensor\": \"q\", \"dtype\": \"f4\", \"dims\": [64], \"box\": [64]"),
     TM_WHERE ".dtype: " TM_WHO "expected one of u8, i8, f8e4m3, f8e5m2, u16, i16, f16, "
              "bf16, u32, i32, f32, tf32, u64, i64, f64, found \"f4\""},
    {TM(", " TM_OK_TENSOR ", \"box\": [64]"), TM_WHERE ": " TM_WHO "missing \"dims\""},
    {TM(", " TM_OK_TENSOR ", \"dims\": [], \"box\": []"),
     TM_WHERE ".dims: " TM_WHO "expected an array of 1 to 5 integers"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [8, 1, 1, 1, 1, 1], \"box\": [8, 1, 1, 1, 1, 1]"),
     TM_WHERE ".dims: " TM_WHO "expected an array of 1 to 5 integers"},
    {TM(", " TM_OK_TENSOR ", \"dims\": 64, \"box\": [64]"),
     TM_WHERE ".dims: " TM_WHO "expected an array of 1 to 5 integers"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [64, 0], \"box\": [64, 1]"),
     TM_WHERE ".dims: " TM_WHO "entry 1: expected an integer in [1, 4294967296], found 0"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [64, 4294967297], \"box\": [64, 1]"),
     TM_WHERE ".dims: " TM_WHO "entry 1: expected an integer in [1, 4294967296], found 4294967297"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [64, \"8\"], \"box\": [64, 1]"),
     TM_WHERE ".dims: " TM_WHO "entry 1: expected an integer in [1, 4294967296]"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [64]"), TM_WHERE ": " TM_WHO "missing \"box\""},
    {TM(", " TM_OK_TENSOR ", \"dims\": [64, 8], \"box\": [64]"),
     TM_WHERE ".box: " TM_WHO "expected an array of 2 integers (the rank of \"dims\")"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [64, 8], \"box\": [64, 0]"),
     TM_WHERE ".box: " TM_WHO "entry 1: expected an integer in [1, 256], found 0"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [64, 8], \"box\": [64, 257]"),
     TM_WHERE ".box: " TM_WHO "entry 1: expected an integer in [1, 256], found 257"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [64, 8], \"box\": [4, 8]"),
     TM_WHERE ".box: " TM_WHO "inner box of 4 bf16 elements is 8 bytes, not a multiple of 16"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [128, 8], \"box\": [128, 8], \"swizzle\": 128"),
     TM_WHERE ".box: " TM_WHO "inner box of 128 bf16 elements is 256 bytes, more than the "
              "128-byte swizzle"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [64, 8], \"box\": [32, 8], \"swizzle\": 32"),
     TM_WHERE ".box: " TM_WHO "inner box of 32 bf16 elements is 64 bytes, more than the "
              "32-byte swizzle"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [64, 8], \"box\": [8, 8], \"swizzle\": 16"),
     TM_WHERE ".swizzle: " TM_WHO "expected 0, 32, 64 or 128 (bytes)"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [64, 8], \"box\": [8, 8], \"swizzle\": \"128B\""),
     TM_WHERE ".swizzle: " TM_WHO "expected 0, 32, 64 or 128 (bytes)"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [64, 8, 2], \"box\": [8, 8, 1], \"strides\": [128]"),
     TM_WHERE ".strides: " TM_WHO "expected an array of 2 integers (one less than the rank "
              "of \"dims\")"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [64, 8], \"box\": [8, 8], \"strides\": [136]"),
     TM_WHERE ".strides: " TM_WHO "entry 0: 136 bytes is not a multiple of 16"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [64, 8], \"box\": [8, 8], \"strides\": [0]"),
     TM_WHERE ".strides: " TM_WHO "entry 0: expected an integer in [16, 1099511627775], found 0"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [64, 8], \"box\": [8, 8], \"strides\": [1099511627776]"),
     TM_WHERE ".strides: " TM_WHO "entry 0: expected an integer in [16, 1099511627775]"},
    {TM(", " TM_OK_TENSOR ", \"dims\": [100, 8], \"box\": [8, 8]"),
     TM_WHERE ": " TM_WHO "contiguous stride of dimension 1 is 200 bytes, not a multiple of "
              "16; give \"strides\""},
    {TM(", " TM_OK_TENSOR ", \"dims\": [4294967296, 4294967296, 8], \"box\": [8, 8, 8]"),
     TM_WHERE ": " TM_WHO "contiguous stride of dimension 2 exceeds 2^40 - 1 bytes; give "
              "\"strides\""},
};

static int test_tensormap_errors(void) {
  for (size_t i = 0; i < sizeof bad_tensormaps / sizeof bad_tensormaps[0]; ++i) {
    attnrt_manifest *m = (attnrt_manifest *)&m; // must be reset to NULL
    enum attnrt_status st = attnrt_manifest_parse(bad_tensormaps[i].json, &m);
    if (st != ATTNRT_ERR_PARSE || m != NULL ||
        !contains(attnrt_last_error(NULL), bad_tensormaps[i].message)) {
      fprintf(stderr, "case %zu: status %d, message '%s', expected '%s'\n", i,
              (int)st, attnrt_last_error(NULL), bad_tensormaps[i].message);
      CHECK(0);
    }
  }
  // Every dtype of the list is accepted, with its element size.
  static const struct {
    const char *dtype;
    unsigned bytes;
  } dtypes[] = {{"u8", 1},  {"i8", 1},   {"f8e4m3", 1}, {"f8e5m2", 1}, {"u16", 2},
                {"i16", 2}, {"f16", 2},  {"bf16", 2},   {"u32", 4},    {"i32", 4},
                {"f32", 4}, {"tf32", 4}, {"u64", 8},    {"i64", 8},    {"f64", 8}};
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; ++i) {
    char json[512];
    snprintf(json, sizeof json,
             TM(", \"tensor\": \"q\", \"dtype\": \"%s\", \"dims\": [256, 3], "
                "\"box\": [16, 3]"),
             dtypes[i].dtype);
    attnrt_manifest *m = NULL;
    CHECK(attnrt_manifest_parse(json, &m) == ATTNRT_OK);
    const struct attnrt_tensormap_info *t =
        &attnrt_manifest_kernel_at(m, 0)->params[2].tensormap;
    CHECK(t->elem_bytes == dtypes[i].bytes && t->strides[0] == 256 * dtypes[i].bytes);
    attnrt_manifest_destroy(m);
  }
  return 0;
}

static int test_parse_errors(void) {
  for (size_t i = 0; i < sizeof bad_manifests / sizeof bad_manifests[0]; ++i) {
    attnrt_manifest *m = (attnrt_manifest *)&m; // must be reset to NULL
    enum attnrt_status st = attnrt_manifest_parse(bad_manifests[i].json, &m);
    if (st != ATTNRT_ERR_PARSE || m != NULL ||
        !contains(attnrt_last_error(NULL), bad_manifests[i].message)) {
      fprintf(stderr, "case %zu: status %d, message '%s', expected '%s'\n", i,
              (int)st, attnrt_last_error(NULL), bad_manifests[i].message);
      CHECK(0);
    }
  }
  return 0;
}

static int test_too_many_params(void) {
  size_t cap = 64 + 40 * (ATTNRT_MAX_KERNEL_PARAMS + 1);
  char *json = malloc(cap);
  CHECK(json);
  size_t n = (size_t)snprintf(json, cap, "{\"version\": 1, \"kernels\": [{" GOOD_DIMS ", \"params\": [");
  for (int i = 0; i <= ATTNRT_MAX_KERNEL_PARAMS; ++i)
    n += (size_t)snprintf(json + n, cap - n, "%s{\"name\": \"p%d\", \"kind\": \"i32\"}",
                          i ? ", " : "", i);
  snprintf(json + n, cap - n, "]}]}");
  attnrt_manifest *m = NULL;
  enum attnrt_status st = attnrt_manifest_parse(json, &m);
  free(json);
  CHECK(st == ATTNRT_ERR_PARSE && m == NULL);
  CHECK(contains(attnrt_last_error(NULL), "129 parameters exceed the maximum of 128"));
  return 0;
}

static int test_null_arguments(void) {
  attnrt_manifest *m = NULL;
  CHECK(attnrt_manifest_parse(NULL, &m) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "json is NULL"));
  CHECK(attnrt_manifest_parse(full_manifest, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "out is NULL"));
  attnrt_manifest_destroy(NULL);
  CHECK(attnrt_manifest_kernel_count(NULL) == 0);
  CHECK(attnrt_manifest_kernel(NULL, "k") == NULL);
  CHECK(attnrt_manifest_kernel_at(NULL, 0) == NULL);
  CHECK(attnrt_manifest_target(NULL) == NULL);
  CHECK(attnrt_manifest_format(NULL) == NULL);
  return 0;
}

int main(void) {
  static const struct test_case tests[] = {
      TEST(test_parse_full_manifest),
      TEST(test_parse_tensormap),
      TEST(test_minimal_manifest),
      TEST(test_parse_errors),
      TEST(test_tensormap_errors),
      TEST(test_too_many_params),
      TEST(test_null_arguments),
  };
  return run_tests(tests, sizeof tests / sizeof tests[0], NULL, NULL);
}
