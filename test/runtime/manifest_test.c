// manifest_test.c - unit tests of attnrt_manifest_parse and the manifest queries; needs no driver.

#include "attnrt.h"
#include "test_util.h"

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
     "manifest: kernels[0].params[1].kind: expected \"ptr\", \"i32\", \"i64\" or \"f32\", found \"u8\""},
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
      TEST(test_minimal_manifest),
      TEST(test_parse_errors),
      TEST(test_too_many_params),
      TEST(test_null_arguments),
  };
  return run_tests(tests, sizeof tests / sizeof tests[0], NULL, NULL);
}
