// jit_test.c - lib/Target/attn_jit.c: kernels of an LLVM-dialect module run
// through the JIT; a kernel calling a symbol nothing defines fails alone,
// with the JIT's message at its location, and the others still run; the
// f16/bf16 conversion routines the JIT resolves LLVM's libcalls to round
// like the hardware (GCC's _Float16 where the compiler has it).
#include "lib/IR/attn_context.h"
#include "lib/Target/attn_jit.h"

#include "../test_util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static MlirContext ctx;
static struct attn_diag_sink sink;
static char diags[8192];

static void before(void) {
  ctx = attn_context_create();
  memset(diags, 0, sizeof diags);
  FILE *f = fmemopen(diags, sizeof diags - 1, "w");
  sink = (struct attn_diag_sink){.out = f};
  attn_diag_attach(ctx, &sink);
}

static int after(void) {
  fclose(sink.out);
  mlirContextDestroy(ctx);
  return 0;
}

static MlirOperation parse(const char *text) {
  MlirModule m = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(text));
  return mlirModuleIsNull(m) ? (MlirOperation){NULL} : mlirModuleGetOperation(m);
}

// Two kernels storing a constant through their pointer argument, and one
// calling a function nothing defines.
static const char two_good_one_bad[] =
    "module {\n"
    "  llvm.func @store_seven(%p: !llvm.ptr) {\n"
    "    %c = llvm.mlir.constant(7 : i32) : i32\n"
    "    llvm.store %c, %p : i32, !llvm.ptr\n"
    "    llvm.return\n"
    "  }\n"
    "  llvm.func @attn_test_no_such_symbol(i32) -> i32\n"
    "  llvm.func @calls_nothing(%p: !llvm.ptr) {\n"
    "    %c = llvm.mlir.constant(1 : i32) : i32\n"
    "    %r = llvm.call @attn_test_no_such_symbol(%c) : (i32) -> i32\n"
    "    llvm.store %r, %p : i32, !llvm.ptr\n"
    "    llvm.return\n"
    "  } loc(\"bad.mlir\":3:4)\n"
    "  llvm.func @store_nine(%p: !llvm.ptr) {\n"
    "    %c = llvm.mlir.constant(9 : i32) : i32\n"
    "    llvm.store %c, %p : i32, !llvm.ptr\n"
    "    llvm.return\n"
    "  }\n"
    "}\n";

static int run_i32(struct attn_jit *jit, const char *name, int32_t *out) {
  attn_jit_entry_fn fn = attn_jit_lookup(jit, name);
  if (!fn)
    return 0;
  void *ptr = out;
  void *args[] = {&ptr};
  fn(args);
  return 1;
}

static int bad_kernel_fails_alone(void) {
  MlirOperation m = parse(two_good_one_bad);
  CHECK(!mlirOperationIsNull(m));
  struct attn_jit *jit = attn_jit_create(m);
  fflush(sink.out);
  CHECK(jit != NULL);
  int32_t a = 0, b = 0, c = 0;
  CHECK(run_i32(jit, "store_seven", &a) && a == 7);
  CHECK(run_i32(jit, "store_nine", &b) && b == 9);
  CHECK(!run_i32(jit, "calls_nothing", &c));
  CHECK(attn_jit_lookup(jit, "attn_test_no_such_symbol") == NULL);
  CHECK(attn_jit_lookup(jit, "no_kernel_of_this_name") == NULL);
  // One error, located at the bad kernel, with the JIT's own reason.
  CHECK(sink.errors == 1);
  CHECK(contains(diags, "bad.mlir:3:4: error: cannot JIT-compile kernel "
                        "'calls_nothing' for this CPU"));
  CHECK(contains(diags, "attn_test_no_such_symbol"));
  attn_jit_destroy(jit);
  mlirOperationDestroy(m);
  return 0;
}

static int only_bad_kernel_is_null(void) {
  MlirOperation m = parse(
      "module {\n"
      "  llvm.func @attn_test_no_such_symbol(i32) -> i32\n"
      "  llvm.func @k(%p: !llvm.ptr) {\n"
      "    %c = llvm.mlir.constant(1 : i32) : i32\n"
      "    %r = llvm.call @attn_test_no_such_symbol(%c) : (i32) -> i32\n"
      "    llvm.return\n"
      "  } loc(\"one.mlir\":2:3)\n"
      "}\n");
  CHECK(!mlirOperationIsNull(m));
  CHECK(attn_jit_create(m) == NULL);
  fflush(sink.out);
  CHECK(sink.errors == 1);
  CHECK(contains(diags, "one.mlir:2:3: error: cannot JIT-compile kernel 'k'"));
  CHECK(contains(diags, "attn_test_no_such_symbol"));
  mlirOperationDestroy(m);
  return 0;
}

static int no_kernel_is_an_error(void) {
  MlirOperation m = parse("module {\n  llvm.func @decl(i32) -> i32\n}\n");
  CHECK(!mlirOperationIsNull(m));
  CHECK(attn_jit_create(m) == NULL);
  fflush(sink.out);
  CHECK(contains(diags, "error: the module has no kernel to JIT-compile"));
  mlirOperationDestroy(m);
  return 0;
}

//===-- Conversions -------------------------------------------------------===//

static uint32_t bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static float from_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/// f32 -> bf16 by the definition: the nearer of the two bf16 values around
/// x, the even one on a tie (exact in double).
static uint16_t bf16_by_definition(float x) {
  uint32_t u = bits(x);
  if (isnan(x))
    return (uint16_t)((u >> 16) | 0x40);
  uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
  double dlo = fabs((double)from_bits(lo)), dx = fabs((double)x);
  double dhi = ((hi >> 23) & 0xff) == 0xff ? ldexp(1.0, 128)
                                           : fabs((double)from_bits(hi));
  if (((lo >> 23) & 0xff) == 0xff) // x is infinite
    return (uint16_t)(lo >> 16);
  double below = dx - dlo, above = dhi - dx;
  bool up = above < below || (above == below && ((lo >> 16) & 1));
  return (uint16_t)((up ? hi : lo) >> 16);
}

/// Edge values and a spread of random bit patterns.
static float sample(uint64_t *state, int i) {
  static const uint32_t edges[] = {
      0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001,
      0xffc00001, 0x00000001, 0x007fffff, 0x00800000, 0x33000000, 0x33000001,
      0x33800000, 0x387fe000, 0x387ff000, 0x38800000, 0x38801000, 0x477fe000,
      0x477fefff, 0x477ff000, 0x477fffff, 0x47800000, 0x3f800000, 0x3f808000,
      0x3f818000, 0x3f7fffff, 0x7f7fffff, 0x7f7f8000, 0x3f801000, 0x3f803000};
  int ne = (int)(sizeof edges / sizeof *edges);
  if (i < ne)
    return from_bits(edges[i]);
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return from_bits((uint32_t)(*state >> 32));
}

static int bf16_rounds_to_nearest_even(void) {
  uint64_t state = 1;
  for (int i = 0; i < 2000000; ++i) {
    float x = sample(&state, i);
    uint16_t got = attn_jit_f32_to_bf16(x), want = bf16_by_definition(x);
    if (got != want) {
      fprintf(stderr, "bf16(%08x): got %04x, want %04x\n", bits(x), got, want);
      return 1;
    }
  }
  return 0;
}

#if defined(__FLT16_MAX__)
__extension__ typedef _Float16 half_t; // ISO C11 lacks it; GCC 12 has it

static int f16_matches_the_compiler(void) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    half_t v;
    uint16_t h16 = (uint16_t)h;
    memcpy(&v, &h16, sizeof v);
    float want = (float)v, got = attn_jit_f16_to_f32(h16);
    if (bits(want) != bits(got) && !(isnan(want) && isnan(got))) {
      fprintf(stderr, "f16 %04x -> f32: got %08x, want %08x\n", h, bits(got),
              bits(want));
      return 1;
    }
  }
  uint64_t state = 7;
  for (int i = 0; i < 2000000; ++i) {
    float x = sample(&state, i);
    half_t v = (half_t)x;
    uint16_t want, got = attn_jit_f32_to_f16(x);
    memcpy(&want, &v, sizeof want);
    bool both_nan = isnan(x) && (got & 0x7c00) == 0x7c00 && (got & 0x3ff);
    if (got != want && !both_nan) {
      fprintf(stderr, "f16(%08x): got %04x, want %04x\n", bits(x), got, want);
      return 1;
    }
  }
  return 0;
}
#else
static int f16_matches_the_compiler(void) {
  // No _Float16 here: check the round trip of every finite f16 instead.
  for (uint32_t h = 0; h < 0x10000; ++h)
    if ((h & 0x7c00) != 0x7c00 &&
        attn_jit_f32_to_f16(attn_jit_f16_to_f32((uint16_t)h)) != h)
      return 1;
  return 0;
}
#endif

static int nans_stay_quiet_nans(void) {
  float snan = from_bits(0x7f800001u);
  CHECK((attn_jit_f32_to_f16(snan) & 0x7e00) == 0x7e00);
  CHECK((attn_jit_f32_to_bf16(snan) & 0x7fc0) == 0x7fc0);
  CHECK((attn_jit_f32_to_bf16(from_bits(0xff800001u)) & 0x8000) != 0);
  CHECK(isnan(attn_jit_f16_to_f32(0x7e01)));
  return 0;
}

int main(void) {
  const struct test_case tests[] = {
      TEST(bad_kernel_fails_alone),   TEST(only_bad_kernel_is_null),
      TEST(no_kernel_is_an_error),    TEST(bf16_rounds_to_nearest_even),
      TEST(f16_matches_the_compiler), TEST(nans_stay_quiet_nans),
  };
  return run_tests(tests, sizeof tests / sizeof *tests, before, after);
}
