// manifest_test.c - unit tests of attnrt_manifest_parse and the manifest queries; needs no driver.

#include "attnrt.h"
#include "../test_util.h"

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

/// A manifest attnrt_manifest_parse must refuse, and its message.
struct bad_manifest {
  const char *json, *message;
};

/// Parses each of the n cases: ATTNRT_ERR_PARSE, no manifest, the message.
static int expect_parse_errors(const struct bad_manifest *cases, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    attnrt_manifest *m = (attnrt_manifest *)&m; // must be reset to NULL
    enum attnrt_status st = attnrt_manifest_parse(cases[i].json, &m);
    if (st != ATTNRT_ERR_PARSE || m != NULL ||
        !contains(attnrt_last_error(NULL), cases[i].message)) {
      fprintf(stderr, "case %zu: status %d, message '%s', expected '%s'\n", i,
              (int)st, attnrt_last_error(NULL), cases[i].message);
      CHECK(0);
    }
  }
  return 0;
}

static const struct bad_manifest bad_manifests[] = {
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

static const struct bad_manifest bad_tensormaps[] = {
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
  if (expect_parse_errors(bad_tensormaps, sizeof bad_tensormaps / sizeof bad_tensormaps[0]))
    return 1;
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
  if (expect_parse_errors(bad_manifests, sizeof bad_manifests / sizeof bad_manifests[0]))
    return 1;
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

//===-- Programs --===//

// A K rotation writing k_rot, and attention reading it through a tensor map;
// "attn" names both a kernel and the program that runs the two.
static const char *const program_manifest =
    "{\"version\": 1, \"kernels\": [\n"
    " {\"name\": \"attn__rope_k\", \"grid\": [1], \"block\": [32],\n"
    "  \"params\": [{\"name\": \"k\", \"kind\": \"ptr\"},\n"
    "             {\"name\": \"k_rot\", \"kind\": \"ptr\", \"dtype\": \"bf16\",\n"
    "              \"shape\": [256, 64]}]},\n"
    " {\"name\": \"attn\", \"grid\": [2], \"block\": [128],\n"
    "  \"params\": [{\"name\": \"q\", \"kind\": \"ptr\"},\n"
    "             {\"name\": \"k_map\", \"kind\": \"tensormap\", \"tensor\": \"k_rot\",\n"
    "              \"dtype\": \"bf16\", \"dims\": [64, 256], \"box\": [64, 64],\n"
    "              \"swizzle\": 128},\n"
    "             {\"name\": \"k_rot\", \"kind\": \"ptr\"},\n"
    "             {\"name\": \"out\", \"kind\": \"ptr\"}]}],\n"
    " \"programs\": [\n"
    "  {\"name\": \"attn\", \"inputs\": [\"q\", \"k\", \"out\"],\n"
    "   \"workspace\": [{\"name\": \"pad\", \"bytes\": 100},\n"
    "                 {\"name\": \"k_rot\", \"bytes\": 32768}],\n"
    "   \"steps\": [{\"kernel\": \"attn__rope_k\", \"args\": [\"k\", \"k_rot\"]},\n"
    "             {\"kernel\": \"attn\", \"args\": [\"q\", \"k_rot\", \"out\"]}]},\n"
    "  {\"name\": \"rope\", \"inputs\": [\"src\", \"dst\"],\n"
    "   \"steps\": [{\"kernel\": \"attn__rope_k\", \"args\": [\"src\", \"dst\"]}]}]}\n";

static int test_parse_programs(void) {
  attnrt_manifest *m = NULL;
  CHECK(attnrt_manifest_parse(program_manifest, &m) == ATTNRT_OK);
  CHECK(attnrt_manifest_kernel_count(m) == 2 && attnrt_manifest_program_count(m) == 2);
  const struct attnrt_program_info *p = attnrt_manifest_program(m, "attn");
  CHECK(p && p == attnrt_manifest_program_at(m, 0));
  CHECK(strcmp(p->name, "attn") == 0 && p->ninputs == 3 && p->nsteps == 2);
  CHECK(strcmp(p->inputs[0], "q") == 0 && strcmp(p->inputs[1], "k") == 0 &&
        strcmp(p->inputs[2], "out") == 0);
  // 100 bytes take one 256-byte slot, then 32768 bytes.
  CHECK(p->nworkspace == 2 && p->workspace_bytes == 256 + 32768);
  CHECK(p->workspace_bytes % ATTNRT_WORKSPACE_ALIGN == 0);
  CHECK(attnrt_manifest_kernel(m, "attn") != NULL); // the kernel is still there

  const struct attnrt_program_info *r = attnrt_manifest_program_at(m, 1);
  CHECK(r && strcmp(r->name, "rope") == 0 && r->ninputs == 2 && r->nsteps == 1);
  CHECK(r->nworkspace == 0 && r->workspace_bytes == 0);

  CHECK(attnrt_manifest_program(m, "attn__rope_k") == NULL); // a kernel only
  CHECK(attnrt_manifest_program(m, NULL) == NULL);
  CHECK(attnrt_manifest_program_at(m, 2) == NULL);
  CHECK(attnrt_manifest_program_at(m, -1) == NULL);
  attnrt_manifest_destroy(m);

  // No "programs", or an empty array: none.
  CHECK(attnrt_manifest_parse(full_manifest, &m) == ATTNRT_OK);
  CHECK(attnrt_manifest_program_count(m) == 0 && attnrt_manifest_program_at(m, 0) == NULL);
  attnrt_manifest_destroy(m);
  CHECK(attnrt_manifest_parse("{\"version\": 1, \"kernels\": [], \"programs\": []}", &m) ==
        ATTNRT_OK);
  CHECK(attnrt_manifest_program_count(m) == 0);
  attnrt_manifest_destroy(m);
  return 0;
}

// Kernels "two" (ptr a; ptr b of 64 f32), "tm" (ptr x; a tensor map over x of
// 1024 bytes) and "sc" (ptr p; i32 n), then the opening of "programs".
#define PK_KERNELS                                                             \
  "{\"version\": 1, \"kernels\": ["                                            \
  "{\"name\": \"two\", \"grid\": [1], \"block\": [32], \"params\": ["           \
  "{\"name\": \"a\", \"kind\": \"ptr\"}, "                                     \
  "{\"name\": \"b\", \"kind\": \"ptr\", \"dtype\": \"f32\", \"shape\": [64]}]}, " \
  "{\"name\": \"tm\", \"grid\": [1], \"block\": [32], \"params\": ["            \
  "{\"name\": \"x\", \"kind\": \"ptr\"}, "                                     \
  "{\"name\": \"x_map\", \"kind\": \"tensormap\", \"tensor\": \"x\", "         \
  "\"dtype\": \"f32\", \"dims\": [64, 4], \"box\": [64, 1]}]}, "               \
  "{\"name\": \"sc\", \"grid\": [1], \"block\": [32], \"params\": ["            \
  "{\"name\": \"p\", \"kind\": \"ptr\"}, {\"name\": \"n\", \"kind\": \"i32\"}]}]," \
  " \"programs\": ["
// Those kernels and the programs given.
#define PK(programs) PK_KERNELS programs "]}"
// A program "p" with inputs a and b, the workspace and the steps given.
#define PROG(workspace, steps)                                                 \
  PK("{\"name\": \"p\", \"inputs\": [\"a\", \"b\"]" workspace                  \
     ", \"steps\": [" steps "]}")
#define STEP_TWO "{\"kernel\": \"two\", \"args\": [\"a\", \"b\"]}"
#define W(name, bytes) "{\"name\": \"" name "\", \"bytes\": " bytes "}"
#define PW "manifest: programs[0]"

static const struct bad_manifest bad_programs[] = {
    {"{\"version\": 1, \"kernels\": [], \"programs\": {}}",
     "manifest: programs: expected an array"},
    {PK("7"), PW ": expected an object"},
    {PK("{\"inputs\": [], \"steps\": [" STEP_TWO "]}"), PW ": missing \"name\""},
    {PK("{\"name\": \"\", \"inputs\": [], \"steps\": [" STEP_TWO "]}"),
     PW ".name: expected a non-empty string"},
    {PK("{\"name\": \"p\", \"steps\": [" STEP_TWO "]}"), PW ": missing \"inputs\""},
    {PK("{\"name\": \"p\", \"inputs\": \"a\", \"steps\": [" STEP_TWO "]}"),
     PW ".inputs: expected an array of names"},
    {PK("{\"name\": \"p\", \"inputs\": [1], \"steps\": [" STEP_TWO "]}"),
     PW ".inputs[0]: expected a non-empty string"},
    {PK("{\"name\": \"p\", \"inputs\": [\"a\", \"\"], \"steps\": [" STEP_TWO "]}"),
     PW ".inputs[1]: expected a non-empty string"},
    {PK("{\"name\": \"p\", \"inputs\": [\"a\", \"a\"], \"steps\": [" STEP_TWO "]}"),
     PW ".inputs[1]: duplicate input name \"a\""},
    {PROG(", \"workspace\": {}", STEP_TWO), PW ".workspace: expected an array"},
    {PROG(", \"workspace\": [3]", STEP_TWO), PW ".workspace[0]: expected an object"},
    {PROG(", \"workspace\": [{\"bytes\": 4}]", STEP_TWO), PW ".workspace[0]: missing \"name\""},
    {PROG(", \"workspace\": [{\"name\": \"w\"}]", STEP_TWO),
     PW ".workspace[0]: missing \"bytes\""},
    {PROG(", \"workspace\": [" W("w", "0") "]", STEP_TWO),
     PW ".workspace[0].bytes: expected a positive integer, found 0"},
    {PROG(", \"workspace\": [" W("w", "-5") "]", STEP_TWO),
     PW ".workspace[0].bytes: expected a positive integer, found -5"},
    {PROG(", \"workspace\": [" W("w", "1.5") "]", STEP_TWO),
     PW ".workspace[0].bytes: expected a positive integer, found 1.5"},
    {PROG(", \"workspace\": [" W("w", "\"4\"") "]", STEP_TWO),
     PW ".workspace[0].bytes: expected a positive integer"},
    {PROG(", \"workspace\": [" W("w", "1e300") "]", STEP_TWO),
     PW ".workspace[0].bytes: expected a positive integer, found 1.0000000000000001e+300"},
    {PROG(", \"workspace\": [" W("w", "4") ", " W("b", "4") "]", STEP_TWO),
     PW ".workspace[1]: workspace name \"b\" is also an input"},
    {PROG(", \"workspace\": [" W("w", "4") ", " W("w", "8") "]", STEP_TWO),
     PW ".workspace[1]: duplicate workspace name \"w\""},
    {PK("{\"name\": \"p\", \"inputs\": []}"), PW ": missing \"steps\""},
    {PROG("", ""), PW ".steps: expected a non-empty array"},
    {PK("{\"name\": \"p\", \"inputs\": [], \"steps\": {}}"),
     PW ".steps: expected a non-empty array"},
    {PROG("", "5"), PW ".steps[0]: expected an object"},
    {PROG("", "{\"args\": []}"), PW ".steps[0]: missing \"kernel\""},
    {PROG("", "{\"kernel\": 3, \"args\": []}"),
     PW ".steps[0].kernel: expected a non-empty string"},
    {PROG("", STEP_TWO ", {\"kernel\": \"nope\", \"args\": []}"),
     PW ".steps[1].kernel: manifest has no kernel \"nope\""},
    {PROG("", "{\"kernel\": \"two\"}"), PW ".steps[0]: missing \"args\""},
    {PROG("", "{\"kernel\": \"two\", \"args\": \"a\"}"),
     PW ".steps[0].args: expected an array of names"},
    {PROG("", "{\"kernel\": \"two\", \"args\": [\"a\"]}"),
     PW ".steps[0].args: kernel 'two' takes 2 arguments, found 1"},
    {PROG("", "{\"kernel\": \"tm\", \"args\": [\"a\", \"b\"]}"),
     PW ".steps[0].args: kernel 'tm' takes 1 argument, found 2 (plus 1 tensor map "
        "parameter attnrt derives, not bound)"},
    {PROG("", "{\"kernel\": \"two\", \"args\": [\"a\", 3]}"),
     PW ".steps[0].args[1]: expected a non-empty string"},
    {PROG("", "{\"kernel\": \"two\", \"args\": [\"a\", \"zz\"]}"),
     PW ".steps[0].args[1]: program has no input or workspace named \"zz\""},
    {PROG("", "{\"kernel\": \"sc\", \"args\": [\"a\", \"b\"]}"),
     PW ".steps[0].args[1]: parameter 'n' of kernel 'sc' is i32; programs bind only "
        "ptr parameters"},
    {PROG(", \"workspace\": [" W("w", "255") "]", "{\"kernel\": \"two\", \"args\": [\"a\", \"w\"]}"),
     PW ".steps[0].args[1]: workspace \"w\" has 255 bytes but parameter 'b' of kernel "
        "'two' needs 256 (its shape)"},
    {PROG(", \"workspace\": [" W("w", "1023") "]", "{\"kernel\": \"tm\", \"args\": [\"w\"]}"),
     PW ".steps[0].args[0]: workspace \"w\" has 1023 bytes but parameter 'x' of kernel "
        "'tm' needs 1024 (tensor map 'x_map')"},
    {PK("{\"name\": \"p\", \"inputs\": [], \"steps\": [{\"kernel\": \"tm\", \"args\": [\"a\"]}]}, "
        "{\"name\": \"p\", \"inputs\": [\"a\"], \"steps\": [{\"kernel\": \"tm\", \"args\": [\"a\"]}]}"),
     "manifest: programs[0].steps[0].args[0]: program has no input or workspace named \"a\""},
    {PK("{\"name\": \"p\", \"inputs\": [\"a\"], \"steps\": [{\"kernel\": \"tm\", \"args\": [\"a\"]}]}, "
        "{\"name\": \"p\", \"inputs\": [\"a\"], \"steps\": [{\"kernel\": \"tm\", \"args\": [\"a\"]}]}"),
     "manifest: programs[1]: duplicate program name \"p\""},
};

static int test_program_errors(void) {
  if (expect_parse_errors(bad_programs, sizeof bad_programs / sizeof bad_programs[0]))
    return 1;
  // The sizes that just fit are accepted; a workspace bound where no shape or
  // map says what is read needs only to exist, and a program may share a
  // kernel's name.
  static const char *const good[] = {
      PROG(", \"workspace\": [" W("w", "256") "]",
           "{\"kernel\": \"two\", \"args\": [\"a\", \"w\"]}"),
      PROG(", \"workspace\": [" W("w", "1024") "]", "{\"kernel\": \"tm\", \"args\": [\"w\"]}"),
      PROG(", \"workspace\": [" W("w", "1") "]", "{\"kernel\": \"two\", \"args\": [\"w\", \"a\"]}"),
      PK("{\"name\": \"two\", \"inputs\": [\"a\"], \"steps\": [{\"kernel\": \"two\", "
         "\"args\": [\"a\", \"a\"]}]}"),
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; ++i) {
    attnrt_manifest *m = NULL;
    if (attnrt_manifest_parse(good[i], &m) != ATTNRT_OK) {
      fprintf(stderr, "good case %zu: %s\n", i, attnrt_last_error(NULL));
      CHECK(0);
    }
    CHECK(attnrt_manifest_program_count(m) == 1);
    attnrt_manifest_destroy(m);
  }
  return 0;
}

static int test_workspace_total_overflow(void) {
  // 2048 buffers of 2^53 bytes: the last one takes the total to 2^64.
  size_t cap = 512 + 48 * 2048;
  char *json = malloc(cap);
  CHECK(json);
  size_t n = (size_t)snprintf(
      json, cap, PK_KERNELS "{\"name\": \"p\", \"inputs\": [\"a\"], \"workspace\": [");
  for (int i = 0; i < 2048; ++i)
    n += (size_t)snprintf(json + n, cap - n, "%s{\"name\": \"w%d\", \"bytes\": 9007199254740992}",
                          i ? ", " : "", i);
  snprintf(json + n, cap - n,
           "], \"steps\": [{\"kernel\": \"tm\", \"args\": [\"a\"]}]}]}");
  attnrt_manifest *m = NULL;
  enum attnrt_status st = attnrt_manifest_parse(json, &m);
  free(json);
  CHECK(st == ATTNRT_ERR_PARSE && m == NULL);
  CHECK(contains(attnrt_last_error(NULL),
                 "manifest: programs[0].workspace[2047].bytes: the program's workspace "
                 "exceeds 18446744073709551615 bytes in total"));
  return 0;
}

// A fused communication kernel "g": a, b, c, then the five parameters
// attnrt_comm_launch fills in (or the ones given), and the comm fields given.
#define COMM_TAIL                                                              \
  "{\"name\": \"workspace\", \"kind\": \"ptr\"}, {\"name\": \"peers\", "        \
  "\"kind\": \"ptr\"}, {\"name\": \"out_peers\", \"kind\": \"ptr\"}, "           \
  "{\"name\": \"rank\", \"kind\": \"i32\"}, {\"name\": \"epoch\", \"kind\": "    \
  "\"i32\"}"
#define COMM_KERNEL(tail, comm)                                                \
  K("{\"name\": \"g\", \"grid\": [132], \"block\": [384], \"params\": ["       \
    "{\"name\": \"a\", \"kind\": \"ptr\"}, {\"name\": \"b\", \"kind\": \"ptr\"}, " \
    "{\"name\": \"c\", \"kind\": \"ptr\"}, " tail                              \
    ", {\"name\": \"a_map\", \"kind\": \"tensormap\", \"tensor\": \"a\", "      \
    "\"dtype\": \"bf16\", \"dims\": [64, 64], \"box\": [64, 64]}], "             \
    "\"comm\": {" comm "}}")
#define COMM_OK                                                                \
  "\"pattern\": \"matmul_all_reduce\", \"world_size\": 4, \"compute_ctas\": "  \
  "128, \"comm_ctas\": 4, \"workspace_bytes\": 1048832, \"split\": "          \
  "\"adaptive\""

static int test_parse_comm(void) {
  attnrt_manifest *m = NULL;
  CHECK(attnrt_manifest_parse(COMM_KERNEL(COMM_TAIL, COMM_OK), &m) == ATTNRT_OK);
  const struct attnrt_kernel_info *k = attnrt_manifest_kernel(m, "g");
  CHECK(k && k->nparams == 9 && k->nargs == 8 && k->comm);
  CHECK(strcmp(k->comm->pattern, "matmul_all_reduce") == 0);
  CHECK(k->comm->world_size == 4 && k->comm->workspace_bytes == 1048832);
  CHECK(strcmp(k->comm->split, "adaptive") == 0);
  CHECK(k->comm->compute_ctas == 128 && k->comm->comm_ctas == 4);
  attnrt_manifest_destroy(m);
  // Kernels without the entry have none.
  CHECK(attnrt_manifest_parse(full_manifest, &m) == ATTNRT_OK);
  CHECK(attnrt_manifest_kernel(m, "k")->comm == NULL);
  attnrt_manifest_destroy(m);
  return 0;
}

static const struct bad_manifest bad_comm[] = {
    {COMM_KERNEL(COMM_TAIL, "\"world_size\": 2, \"workspace_bytes\": 64"),
     "manifest: kernels[0].comm: missing \"pattern\""},
    {COMM_KERNEL(COMM_TAIL, "\"pattern\": \"x\", \"workspace_bytes\": 64"),
     "manifest: kernels[0].comm.world_size: expected a positive integer"},
    {COMM_KERNEL(COMM_TAIL, "\"pattern\": \"x\", \"world_size\": -2, "
                            "\"workspace_bytes\": 64"),
     "manifest: kernels[0].comm.world_size: expected a non-negative integer"},
    {COMM_KERNEL(COMM_TAIL, "\"pattern\": \"x\", \"world_size\": 2"),
     "manifest: kernels[0].comm.workspace_bytes: expected a positive integer"},
    {COMM_KERNEL(COMM_TAIL, "\"pattern\": \"x\", \"world_size\": 2, "
                            "\"workspace_bytes\": 0"),
     "manifest: kernels[0].comm.workspace_bytes: expected a positive integer"},
    {COMM_KERNEL(COMM_TAIL, "\"pattern\": \"x\", \"world_size\": 2, "
                            "\"workspace_bytes\": 64, \"split\": 1"),
     "manifest: kernels[0].comm.split: expected a non-empty string"},
    {COMM_KERNEL("{\"name\": \"workspace\", \"kind\": \"ptr\"}, {\"name\": "
                 "\"peers\", \"kind\": \"ptr\"}, {\"name\": \"out_peers\", "
                 "\"kind\": \"ptr\"}, {\"name\": \"epoch\", \"kind\": \"i32\"}, "
                 "{\"name\": \"rank\", \"kind\": \"i32\"}",
                 COMM_OK),
     "manifest: kernels[0].comm: a communication kernel ends with the parameters "
     "workspace (ptr), peers (ptr), out_peers (ptr), rank (i32) and epoch "
     "(i32); kernel 'g' has 'epoch' (i32) where 'rank' belongs"},
    {COMM_KERNEL("{\"name\": \"workspace\", \"kind\": \"ptr\"}, {\"name\": "
                 "\"peers\", \"kind\": \"i64\"}, {\"name\": \"out_peers\", "
                 "\"kind\": \"ptr\"}, {\"name\": \"rank\", \"kind\": "
                 "\"i32\"}, {\"name\": \"epoch\", \"kind\": \"i32\"}",
                 COMM_OK),
     "kernel 'g' has 'peers' (i64) where 'peers' belongs"},
    // A kernel of the four parameters before out_peers (attn 0.1's first
    // fused kernels) is refused by name.
    {COMM_KERNEL("{\"name\": \"workspace\", \"kind\": \"ptr\"}, {\"name\": "
                 "\"peers\", \"kind\": \"ptr\"}, {\"name\": \"rank\", "
                 "\"kind\": \"i32\"}, {\"name\": \"epoch\", \"kind\": \"i32\"}",
                 COMM_OK),
     "kernel 'g' has 'c' (ptr) where 'workspace' belongs"},
    {K("{" GOOD_DIMS ", \"params\": [], \"comm\": {" COMM_OK "}}"),
     "manifest: kernels[0].comm: a communication kernel ends with the parameters "
     "workspace, peers, out_peers, rank and epoch; kernel 'k' has 0 arguments"},
    {K("{" GOOD_DIMS ", \"params\": [], \"comm\": []}"),
     "manifest: kernels[0].comm: expected an object"},
};

static int test_comm_errors(void) {
  if (expect_parse_errors(bad_comm, sizeof bad_comm / sizeof bad_comm[0]))
    return 1;
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
  CHECK(attnrt_manifest_program_count(NULL) == 0);
  CHECK(attnrt_manifest_program(NULL, "p") == NULL);
  CHECK(attnrt_manifest_program_at(NULL, 0) == NULL);
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
      TEST(test_parse_programs),
      TEST(test_program_errors),
      TEST(test_workspace_total_overflow),
      TEST(test_null_arguments),
      TEST(test_parse_comm),
      TEST(test_comm_errors),
  };
  return run_tests(tests, sizeof tests / sizeof tests[0], NULL, NULL);
}
