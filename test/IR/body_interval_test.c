// body_interval_test.c - lib/IR/attn_body_interval.c: what a mask body says
// of a box of (b, h, q, kv). Each case parses one attn.mask_mod, compiles
// its body and prints the verdict for boxes whose answer is known by hand
// (FileCheck in body-interval.test): exact for the affine masks, SOME for a
// body that reads a capture or computes in floating point, SOME where an op
// would wrap; then the key blocks of query blocks; and whether a body yields
// one value over a box (a block map read at a point of each aligned box).
#include "lib/IR/attn_body_interval.h"
#include "lib/IR/attn_context.h"

#include "mlir-c/BuiltinAttributes.h"

#include <stdio.h>
#include <string.h>

static const char *verdict(enum attn_box_mask m) {
  return m == ATTN_BOX_ALL ? "ALL" : m == ATTN_BOX_NONE ? "NONE" : "SOME";
}

/// The body of the first attn.mask_mod in text (a func taking %s
/// [1x2x4096x16384] scores and %ids a tensor<16384xi32>), compiled.
static struct attn_mask_program *compile(MlirContext ctx, const char *body,
                                         MlirModule *m) {
  char text[4096];
  snprintf(text, sizeof text,
           "func.func @f(%%s: tensor<1x2x4096x16384xf32>, %%ids: "
           "tensor<16384xi32>) -> tensor<1x2x4096x16384xf32> {\n"
           "  %%r = \"attn.mask_mod\"(%%s) ({\n"
           "  ^bb0(%%b: index, %%h: index, %%q: index, %%kv: index):\n"
           "%s"
           "  }) : (tensor<1x2x4096x16384xf32>) -> tensor<1x2x4096x16384xf32>\n"
           "  return %%r : tensor<1x2x4096x16384xf32>\n}\n",
           body);
  *m = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(text));
  if (mlirModuleIsNull(*m)) {
    printf("parse failed\n");
    return NULL;
  }
  MlirOperation func =
      mlirBlockGetFirstOperation(mlirModuleGetBody(*m));
  MlirBlock fb = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  MlirOperation mask = mlirBlockGetFirstOperation(fb);
  return attn_mask_program_compile(
      mlirRegionGetFirstBlock(mlirOperationGetRegion(mask, 0)));
}

/// Prints the verdict for q in [q0, q1] and kv in [k0, k1], every b and h.
static void box(const struct attn_mask_program *p, const char *what,
                int64_t q0, int64_t q1, int64_t k0, int64_t k1) {
  struct attn_box x = {{0, 0, q0, k0}, {0, 1, q1, k1}};
  printf("%s q[%lld,%lld] kv[%lld,%lld]: %s\n", what, (long long)q0,
         (long long)q1, (long long)k0, (long long)k1,
         verdict(attn_mask_program_eval(p, &x)));
}

/// Prints whether the body yields one value over q in [q0, q1] and kv in
/// [k0, k1] (b and h fixed: attn_mask_program_uniform).
static void uniform(const struct attn_mask_program *p, const char *what,
                    int64_t q0, int64_t q1, int64_t k0, int64_t k1) {
  struct attn_box x = {{0, 0, q0, k0}, {0, 1, q1, k1}};
  printf("%s uniform q[%lld,%lld] kv[%lld,%lld]: %s\n", what, (long long)q0,
         (long long)q1, (long long)k0, (long long)k1,
         attn_mask_program_uniform(p, &x) ? "yes" : "no");
}

static void blocks(const struct attn_mask_program *p, const char *what,
                   int64_t q0, int64_t q1, int64_t m, int64_t bn) {
  struct attn_mask_shape s = {1, 2, 4096, m, bn};
  struct attn_key_blocks r;
  attn_mask_key_blocks(&p, p ? 1 : 0, &s, q0, q1, &r);
  printf("%s rows [%lld,%lld]: [%lld,%lld) full [%lld,%lld)\n", what,
         (long long)q0, (long long)q1, (long long)r.first, (long long)r.last,
         (long long)r.full_first, (long long)r.full_last);
}

int main(void) {
  MlirContext ctx = attn_context_create();
  if (!attn_register_all(ctx, NULL)) {
    printf("the dialects did not load\n");
    return 1;
  }
  MlirModule m;
  struct attn_mask_program *p;

  // causal, top-left aligned
  p = compile(ctx, "    %v = arith.cmpi ule, %kv, %q : index\n"
                   "    gpu.yield %v : i1\n", &m);
  box(p, "causal", 0, 127, 0, 127);
  box(p, "causal", 128, 255, 0, 127);
  box(p, "causal", 0, 127, 128, 255);
  blocks(p, "causal", 256, 383, 1024, 128);
  blocks(p, "causal", 250, 383, 1024, 128);
  attn_mask_program_free(p);
  mlirModuleDestroy(m);

  // prefix LM: the first 1024 keys bidirectional, causal after them
  p = compile(ctx, "    %c = arith.constant 1024 : index\n"
                   "    %a = arith.cmpi ule, %kv, %q : index\n"
                   "    %p = arith.cmpi ult, %kv, %c : index\n"
                   "    %v = arith.ori %a, %p : i1\n"
                   "    gpu.yield %v : i1\n", &m);
  box(p, "prefix", 0, 127, 512, 639);
  box(p, "prefix", 0, 127, 2048, 2175);
  box(p, "prefix", 0, 127, 960, 1087);
  blocks(p, "prefix", 0, 127, 8192, 128);
  blocks(p, "prefix", 2048, 2175, 8192, 128);
  attn_mask_program_free(p);
  mlirModuleDestroy(m);

  // chunked prefill: 4096 queries ending 16384 keys, causal bottom-right;
  // the offset computed in i32 after index casts
  p = compile(ctx, "    %off = arith.constant 12288 : i32\n"
                   "    %qi = arith.index_cast %q : index to i32\n"
                   "    %ki = arith.index_cast %kv : index to i32\n"
                   "    %e = arith.addi %qi, %off : i32\n"
                   "    %v = arith.cmpi sle, %ki, %e : i32\n"
                   "    gpu.yield %v : i1\n", &m);
  box(p, "prefill", 0, 127, 0, 12287);
  box(p, "prefill", 0, 127, 12416, 16383);
  blocks(p, "prefill", 0, 127, 16384, 128);
  blocks(p, "prefill", 3968, 4095, 16384, 128);
  attn_mask_program_free(p);
  mlirModuleDestroy(m);

  // a sliding window of 256 as a body, with a select and a division
  p = compile(ctx, "    %w = arith.constant 256 : index\n"
                   "    %c64 = arith.constant 64 : index\n"
                   "    %d = arith.subi %q, %kv : index\n"
                   "    %near = arith.cmpi slt, %d, %w : index\n"
                   "    %past = arith.cmpi sge, %d, %c64 : index\n"
                   "    %qb = arith.divui %q, %c64 : index\n"
                   "    %kb = arith.divui %kv, %c64 : index\n"
                   "    %same = arith.cmpi eq, %qb, %kb : index\n"
                   "    %f = arith.constant false\n"
                   "    %in = arith.select %same, %f, %near : i1\n"
                   "    %a = arith.andi %in, %past : i1\n"
                   "    gpu.yield %a : i1\n", &m);
  box(p, "window", 1024, 1087, 832, 895);
  box(p, "window", 1024, 1087, 0, 511);
  box(p, "window", 1024, 1087, 1024, 1087);
  box(p, "window", 1024, 1087, 960, 1023);
  attn_mask_program_free(p);
  mlirModuleDestroy(m);

  // a document mask reads a capture: it cannot be told
  p = compile(ctx, "    %a = tensor.extract %ids[%q] : tensor<16384xi32>\n"
                   "    %c = tensor.extract %ids[%kv] : tensor<16384xi32>\n"
                   "    %v = arith.cmpi eq, %a, %c : i32\n"
                   "    gpu.yield %v : i1\n", &m);
  box(p, "document", 0, 127, 0, 127);
  blocks(p, "document", 0, 127, 1024, 128);
  uniform(p, "document", 0, 63, 0, 63);
  uniform(p, "document", 5, 5, 7, 7);
  attn_mask_program_free(p);
  mlirModuleDestroy(m);

  // floating point, and an op that would wrap, are unknown; a constant
  // mask is exact, and a query block that sees nothing gets one block
  p = compile(ctx, "    %i = arith.index_cast %q : index to i64\n"
                   "    %f = arith.sitofp %i : i64 to f32\n"
                   "    %z = arith.constant 0.0 : f32\n"
                   "    %v = arith.cmpf oge, %f, %z : f32\n"
                   "    gpu.yield %v : i1\n", &m);
  box(p, "float", 0, 127, 0, 127);
  attn_mask_program_free(p);
  mlirModuleDestroy(m);
  p = compile(ctx, "    %big = arith.constant 4611686018427387904 : index\n"
                   "    %x = arith.muli %q, %big : index\n"
                   "    %z = arith.constant 0 : index\n"
                   "    %v = arith.cmpi sge, %x, %z : index\n"
                   "    gpu.yield %v : i1\n", &m);
  box(p, "wrap", 0, 127, 0, 127);
  box(p, "wrap", 0, 1, 0, 127);
  attn_mask_program_free(p);
  mlirModuleDestroy(m);
  p = compile(ctx, "    %f = arith.constant false\n"
                   "    gpu.yield %f : i1\n", &m);
  box(p, "never", 0, 127, 0, 127);
  blocks(p, "never", 0, 127, 1024, 128);
  attn_mask_program_free(p);
  mlirModuleDestroy(m);

  blocks(NULL, "none", 0, 127, 1000, 128);

  // a block map of 64 x 64 blocks (256 key blocks a row), read at a point
  // of every aligned 64 x 64 box: one value there, not over larger or
  // unaligned boxes
  p = compile(ctx, "    %c64 = arith.constant 64 : index\n"
                   "    %c256 = arith.constant 256 : index\n"
                   "    %qi = arith.divui %q, %c64 : index\n"
                   "    %ki = arith.divui %kv, %c64 : index\n"
                   "    %r = arith.muli %qi, %c256 : index\n"
                   "    %i = arith.addi %r, %ki : index\n"
                   "    %x = tensor.extract %ids[%i] : tensor<16384xi32>\n"
                   "    %z = arith.constant 0 : i32\n"
                   "    %v = arith.cmpi ne, %x, %z : i32\n"
                   "    gpu.yield %v : i1\n", &m);
  box(p, "blockmap", 0, 63, 0, 63);
  uniform(p, "blockmap", 0, 63, 0, 63);
  uniform(p, "blockmap", 640, 703, 4096, 4159);
  uniform(p, "blockmap", 0, 127, 0, 63);
  uniform(p, "blockmap", 32, 95, 0, 63);
  attn_mask_program_free(p);
  mlirModuleDestroy(m);

  // causal is one value over a box off the diagonal, not across it
  p = compile(ctx, "    %v = arith.cmpi ule, %kv, %q : index\n"
                   "    gpu.yield %v : i1\n", &m);
  uniform(p, "causal", 128, 255, 0, 127);
  uniform(p, "causal", 0, 127, 0, 127);
  attn_mask_program_free(p);
  mlirModuleDestroy(m);

  // two masks and-ed: causal, and the keys of the query's 1024-block
  struct attn_mask_program *two[2];
  MlirModule m2;
  two[0] = compile(ctx, "    %v = arith.cmpi ule, %kv, %q : index\n"
                        "    gpu.yield %v : i1\n", &m);
  two[1] = compile(ctx, "    %c = arith.constant 1024 : index\n"
                        "    %a = arith.divui %q, %c : index\n"
                        "    %b2 = arith.divui %kv, %c : index\n"
                        "    %v = arith.cmpi eq, %a, %b2 : index\n"
                        "    gpu.yield %v : i1\n", &m2);
  struct attn_mask_shape s2 = {1, 2, 4096, 4096, 128};
  struct attn_key_blocks r2;
  attn_mask_key_blocks((const struct attn_mask_program *const *)two, 2, &s2,
                       1536, 1663, &r2);
  printf("two rows [1536,1663]: [%lld,%lld) full [%lld,%lld)\n",
         (long long)r2.first, (long long)r2.last, (long long)r2.full_first,
         (long long)r2.full_last);
  attn_mask_program_free(two[0]);
  attn_mask_program_free(two[1]);
  mlirModuleDestroy(m);
  mlirModuleDestroy(m2);
  mlirContextDestroy(ctx);
  return 0;
}
