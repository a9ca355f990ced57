// body_eval_test.c - lib/IR/attn_body_eval.c: score and mask bodies
// evaluated in float64 / int64. Each test parses a function whose
// attn.score_mod or attn.mask_mod carries a body, checks it with the attn
// verifier, decodes the body and compares its value at many (b, h, q, kv)
// with the same formula written in C: clamped capture reads, integer
// wrapping and division conventions, casts, every math op, the reference
// hook (struct attn_body_fns, with lib/Reference: bodies written as the
// named modifiers give what those give) and the decoder's errors.
#include "dialects/body.h"
#include "dialects/dialects.h"
#include "lib/IR/attn_body_eval.h"
#include "lib/IR/attn_context.h"
#include "lib/Reference/attn_reference.h"
#include "test/test_util.h"

#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdint.h>

static MlirContext ctx;
static MlirModule mod;
static struct attn_diag_sink sink;

/// Parses text into mod (a fresh context each time) and verifies it.
static bool parse(const char *text) {
  ctx = attn_context_create();
  sink = (struct attn_diag_sink){.out = stderr};
  attn_diag_attach(ctx, &sink);
  if (!attn_register_all(ctx, NULL))
    return false;
  mod = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(text));
  return !mlirModuleIsNull(mod) &&
         attn_dialects_verify(mlirModuleGetOperation(mod));
}

static void release(void) {
  if (!mlirModuleIsNull(mod))
    mlirModuleDestroy(mod);
  mod = (MlirModule){NULL};
  mlirContextDestroy(ctx);
}

static MlirWalkResult find_mod(MlirOperation op, void *user) {
  if (attn_op_is(op, "attn.score_mod") || attn_op_is(op, "attn.mask_mod") ||
      attn_op_is(op, "attn.fused")) {
    *(MlirOperation *)user = op;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

/// The body of the first modifier (region `region` of it).
static MlirBlock first_body(int region) {
  MlirOperation op = {NULL};
  mlirOperationWalk(mlirModuleGetOperation(mod), find_mod, &op,
                    MlirWalkPreOrder);
  if (mlirOperationIsNull(op))
    return (MlirBlock){NULL};
  return mlirRegionGetFirstBlock(mlirOperationGetRegion(op, region));
}

#define SCORES "tensor<1x2x8x8xf32>"

/// A relative-position bias table [15] read at q - kv + 7 (clamped when
/// outside), plus a per-head slope [2] in bf16 converted with extf.
static int test_bias_table(void) {
  const char *text =
      "func.func @f(%s: " SCORES ", %bias: tensor<15xf32>, %slope: "
      "tensor<2xbf16>) -> " SCORES " {\n"
      "  %0 = \"attn.score_mod\"(%s) ({\n"
      "  ^bb0(%x: f32, %b: index, %h: index, %q: index, %kv: index):\n"
      "    %c7 = arith.constant 7 : index\n"
      "    %d = arith.subi %q, %kv : index\n"
      "    %e = arith.addi %d, %c7 : index\n"
      "    %t = tensor.extract %bias[%e] : tensor<15xf32>\n"
      "    %m = tensor.extract %slope[%h] : tensor<2xbf16>\n"
      "    %mf = arith.extf %m : bf16 to f32\n"
      "    %u = arith.mulf %t, %mf : f32\n"
      "    %y = arith.addf %x, %u : f32\n"
      "    gpu.yield %y : f32\n"
      "  }) : (" SCORES ") -> " SCORES "\n"
      "  return %0 : " SCORES "\n}\n";
  CHECK(parse(text));
  MlirBlock body = first_body(0);
  MlirValue caps[4];
  CHECK(attn_body_captures(body, caps, 4) == 2);
  double bias[15], slope[2] = {0.5, -2.0};
  for (int i = 0; i < 15; ++i)
    bias[i] = 0.25 * i - 1.0;
  const double *data[2] = {bias, slope};
  char err[256];
  struct attn_body_eval *e = attn_body_eval_create(body, 2, data, err,
                                                   sizeof err);
  CHECK(e);
  CHECK(attn_body_eval_is_score(e));
  // Keys past the table's range (q - kv + 7 outside [0, 15)) read its end.
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t q = 0; q < 12; ++q)
      for (int64_t kv = 0; kv < 12; ++kv) {
        int64_t at = q - kv + 7;
        at = at < 0 ? 0 : at > 14 ? 14 : at;
        double want = 1.5 + bias[at] * slope[h];
        CHECK(attn_body_eval_score(e, 1.5, 0, h, q, kv) == want);
      }
  // The hook the reference calls; a mask it lacks lets every key through.
  struct attn_body_fns fns = {e, NULL};
  CHECK(attn_body_fns_score(&fns, 2.0, 0, 1, 3, 3) == 2.0 + bias[7] * -2.0);
  CHECK(attn_body_fns_mask(&fns, 0, 1, 3, 3));
  CHECK(attn_body_eval_mask(e, 0, 0, 0, 0)); // a score body is no mask
  attn_body_eval_destroy(e);
  release();
  printf("@test_bias_table ok\n");
  return 0;
}

/// A document mask on i32 ids [1, 8] or a prefix: (ids[b, q] == ids[b, kv])
/// and (kv <= q or kv < 3), through cmpi, ori, andi and select.
static int test_document_prefix_mask(void) {
  const char *text =
      "func.func @f(%s: " SCORES ", %ids: tensor<1x8xi32>) -> " SCORES " {\n"
      "  %0 = \"attn.mask_mod\"(%s) ({\n"
      "  ^bb0(%b: index, %h: index, %q: index, %kv: index):\n"
      "    %qi = tensor.extract %ids[%b, %q] : tensor<1x8xi32>\n"
      "    %ki = tensor.extract %ids[%b, %kv] : tensor<1x8xi32>\n"
      "    %same = arith.cmpi eq, %qi, %ki : i32\n"
      "    %c3 = arith.constant 3 : index\n"
      "    %pre = arith.cmpi ult, %kv, %c3 : index\n"
      "    %cau = arith.cmpi ule, %kv, %q : index\n"
      "    %vis = arith.ori %pre, %cau : i1\n"
      "    %f = arith.constant false\n"
      "    %ok = arith.select %same, %vis, %f : i1\n"
      "    %t = arith.constant true\n"
      "    %ok2 = arith.andi %ok, %t : i1\n"
      "    gpu.yield %ok2 : i1\n"
      "  }) : (" SCORES ") -> " SCORES "\n"
      "  return %0 : " SCORES "\n}\n";
  CHECK(parse(text));
  double ids[8] = {0, 0, 0, 1, 1, 2, 2, 2};
  const double *data[1] = {ids};
  char err[256];
  struct attn_body_eval *e =
      attn_body_eval_create(first_body(0), 1, data, err, sizeof err);
  CHECK(e);
  CHECK(!attn_body_eval_is_score(e));
  for (int64_t q = 0; q < 8; ++q)
    for (int64_t kv = 0; kv < 8; ++kv) {
      bool want = ids[q] == ids[kv] && (kv <= q || kv < 3);
      CHECK(attn_body_eval_mask(e, 0, 0, q, kv) == want);
    }
  CHECK(attn_body_eval_score(e, 4.0, 0, 0, 1, 1) == 4.0);
  attn_body_eval_destroy(e);
  release();
  printf("@test_document_prefix_mask ok\n");
  return 0;
}

/// Integer semantics: i8 wrapping, signed and unsigned division with the
/// by-zero convention, shifts past the width, unsigned min/max and
/// comparisons, index casts both ways, fptosi saturation.
static int test_integers(void) {
  const char *text =
      "func.func @f(%s: " SCORES ") -> " SCORES " {\n"
      "  %0 = \"attn.score_mod\"(%s) ({\n"
      "  ^bb0(%x: f32, %b: index, %h: index, %q: index, %kv: index):\n"
      "    %q8 = arith.index_cast %q : index to i8\n"
      "    %c100 = arith.constant 100 : i8\n"
      "    %w = arith.addi %q8, %c100 : i8\n"           // wraps past 127
      "    %ws = arith.extsi %w : i8 to i32\n"
      "    %wu = arith.extui %w : i8 to i32\n"
      "    %k32 = arith.index_cast %kv : index to i32\n"
      "    %dq = arith.divsi %ws, %k32 : i32\n"        // kv = 0: 0
      "    %rq = arith.remui %wu, %k32 : i32\n"
      "    %c31 = arith.constant 31 : i32\n"
      "    %c40 = arith.constant 40 : i32\n"
      "    %sh = arith.shli %k32, %c31 : i32\n"       // 1 << 31 < 0
      "    %shr = arith.shrsi %sh, %c40 : i32\n"      // past the width: -1
      "    %mx = arith.maxui %ws, %k32 : i32\n"       // -x is large unsigned
      "    %a = arith.addi %dq, %rq : i32\n"
      "    %a2 = arith.addi %a, %shr : i32\n"
      "    %m2 = arith.minsi %mx, %a2 : i32\n"
      "    %mi = arith.index_castui %m2 : i32 to index\n"
      "    %mi32 = arith.index_cast %mi : index to i32\n"
      "    %f = arith.sitofp %mi32 : i32 to f32\n"
      "    %big = arith.constant 1.0e10 : f32\n"
      "    %sat = arith.fptosi %big : f32 to i32\n"
      "    %satf = arith.sitofp %sat : i32 to f32\n"
      "    %one = arith.constant 1.0 : f32\n"
      "    %small = arith.divf %satf, %big : f32\n"
      "    %g = arith.addf %f, %small : f32\n"
      "    %y = arith.addf %x, %g : f32\n"
      "    gpu.yield %y : f32\n"
      "  }) : (" SCORES ") -> " SCORES "\n"
      "  return %0 : " SCORES "\n}\n";
  CHECK(parse(text));
  char err[256];
  struct attn_body_eval *e =
      attn_body_eval_create(first_body(0), 0, NULL, err, sizeof err);
  CHECK(e);
  for (int64_t q = 0; q < 60; q += 7)
    for (int64_t kv = 0; kv < 5; ++kv) {
      int8_t w = (int8_t)(uint8_t)(q + 100);
      int32_t ws = w, k = (int32_t)kv;
      uint32_t wu = (uint8_t)w;
      int32_t dq = k ? ws / k : 0;
      int32_t rq = k ? (int32_t)(wu % (uint32_t)k) : 0;
      int32_t sh = (int32_t)((uint32_t)k << 31);
      int32_t shr = sh < 0 ? -1 : 0;
      int32_t mx = (uint32_t)ws > (uint32_t)k ? ws : k;
      int32_t a2 = dq + rq + shr;
      int32_t m2 = mx < a2 ? mx : a2;
      double want = 0.5 + ((double)m2 + 2147483647.0 / 1.0e10);
      double got = attn_body_eval_score(e, 0.5, 0, 0, q, kv);
      if (got != want)
        fprintf(stderr, "q %lld kv %lld: got %.17g want %.17g\n",
                (long long)q, (long long)kv, got, want);
      CHECK(got == want);
    }
  attn_body_eval_destroy(e);
  release();
  printf("@test_integers ok\n");
  return 0;
}

/// Every float and math op, against libm in double.
static int test_math(void) {
  const char *text =
      "func.func @f(%s: " SCORES ") -> " SCORES " {\n"
      "  %0 = \"attn.score_mod\"(%s) ({\n"
      "  ^bb0(%x: f32, %b: index, %h: index, %q: index, %kv: index):\n"
      "    %a = math.absf %x : f32\n"
      "    %e = math.exp %x : f32\n"
      "    %e2 = math.exp2 %x : f32\n"
      "    %c1 = arith.constant 1.0 : f32\n"
      "    %p = arith.addf %a, %c1 : f32\n"
      "    %l = math.log %p : f32\n"
      "    %l2 = math.log2 %p : f32\n"
      "    %l1 = math.log1p %a : f32\n"
      "    %t = math.tanh %x : f32\n"
      "    %r = math.sqrt %p : f32\n"
      "    %rs = math.rsqrt %p : f32\n"
      "    %sn = math.sin %x : f32\n"
      "    %cs = math.cos %x : f32\n"
      "    %cp = math.copysign %c1, %x : f32\n"
      "    %pw = math.powf %p, %x : f32\n"
      "    %fl = math.floor %x : f32\n"
      "    %ce = math.ceil %x : f32\n"
      "    %fm = math.fma %x, %x, %c1 : f32\n"
      "    %er = math.erf %x : f32\n"
      "    %n = arith.negf %x : f32\n"
      "    %mx = arith.maximumf %x, %n : f32\n"
      "    %mn = arith.minnumf %x, %n : f32\n"
      "    %s1 = arith.addf %e, %e2 : f32\n"
      "    %s2 = arith.subf %l, %l2 : f32\n"
      "    %s3 = arith.mulf %l1, %t : f32\n"
      "    %s4 = arith.divf %r, %rs : f32\n"
      "    %s5 = arith.addf %sn, %cs : f32\n"
      "    %s6 = arith.mulf %cp, %pw : f32\n"
      "    %s7 = arith.subf %fl, %ce : f32\n"
      "    %s8 = arith.addf %fm, %er : f32\n"
      "    %s9 = arith.subf %mx, %mn : f32\n"
      "    %t1 = arith.addf %s1, %s2 : f32\n"
      "    %t2 = arith.addf %s3, %s4 : f32\n"
      "    %t3 = arith.addf %s5, %s6 : f32\n"
      "    %t4 = arith.addf %s7, %s8 : f32\n"
      "    %u1 = arith.addf %t1, %t2 : f32\n"
      "    %u2 = arith.addf %t3, %t4 : f32\n"
      "    %u3 = arith.addf %u1, %u2 : f32\n"
      "    %big = arith.cmpf ogt, %x, %c1 : f32\n"
      "    %y0 = arith.addf %u3, %s9 : f32\n"
      "    %y = arith.select %big, %y0, %u3 : f32\n"
      "    gpu.yield %y : f32\n"
      "  }) : (" SCORES ") -> " SCORES "\n"
      "  return %0 : " SCORES "\n}\n";
  CHECK(parse(text));
  char err[256];
  struct attn_body_eval *e =
      attn_body_eval_create(first_body(0), 0, NULL, err, sizeof err);
  CHECK(e);
  for (double x = -3.0; x <= 3.0; x += 0.37) {
    double a = fabs(x), p = a + 1.0;
    double s1 = exp(x) + exp2(x), s2 = log(p) - log2(p),
           s3 = log1p(a) * tanh(x), s4 = sqrt(p) / (1.0 / sqrt(p)),
           s5 = sin(x) + cos(x), s6 = copysign(1.0, x) * pow(p, x),
           s7 = floor(x) - ceil(x), s8 = fma(x, x, 1.0) + erf(x),
           s9 = fmax(x, -x) - fmin(x, -x);
    double u3 = ((s1 + s2) + (s3 + s4)) + ((s5 + s6) + (s7 + s8));
    double want = x > 1.0 ? u3 + s9 : u3;
    CHECK(attn_body_eval_score(e, x, 0, 0, 0, 0) == want);
  }
  attn_body_eval_destroy(e);
  release();
  printf("@test_math ok\n");
  return 0;
}

/// The decoder refuses what it cannot evaluate, with a message: a count of
/// captures other than the body's, missing data, no body.
static int test_errors(void) {
  const char *text =
      "func.func @f(%s: " SCORES ", %t: tensor<4xf32>) -> " SCORES " {\n"
      "  %0 = \"attn.score_mod\"(%s) ({\n"
      "  ^bb0(%x: f32, %b: index, %h: index, %q: index, %kv: index):\n"
      "    %v = tensor.extract %t[%kv] : tensor<4xf32>\n"
      "    %y = arith.addf %x, %v : f32\n"
      "    gpu.yield %y : f32\n"
      "  }) : (" SCORES ") -> " SCORES "\n"
      "  return %0 : " SCORES "\n}\n";
  CHECK(parse(text));
  char err[256];
  CHECK(!attn_body_eval_create(first_body(0), 0, NULL, err, sizeof err));
  CHECK(contains(err, "the body has 1 captures, 0 given"));
  const double *none[1] = {NULL};
  CHECK(!attn_body_eval_create(first_body(0), 1, none, err, sizeof err));
  CHECK(contains(err, "has no data"));
  CHECK(!attn_body_eval_create((MlirBlock){NULL}, 0, NULL, err, sizeof err));
  CHECK(contains(err, "one block"));
  attn_body_eval_destroy(NULL);
  CHECK(attn_body_eval_score(NULL, 3.0, 0, 0, 0, 0) == 3.0);
  CHECK(attn_body_eval_mask(NULL, 0, 0, 0, 0));
  release();
  printf("@test_errors ok\n");
  return 0;
}

/// The reference hook end to end: softcap and ALiBi written as one score
/// body (after the scale, "fn" in mods) and causal + a window as a mask body
/// give the reference what the named modifiers give it.
static int test_reference_hook(void) {
  const char *text =
      "func.func @f(%q: tensor<1x2x8x16xf32>, %slopes: tensor<2xf32>) -> "
      "tensor<1x2x8x16xf32> {\n"
      "  %0 = \"attn.fused\"(%q, %q, %q) ({\n"
      "  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):\n"
      "    %cap = arith.constant 5.0 : f32\n"
      "    %r = arith.divf %x, %cap : f32\n"
      "    %t = math.tanh %r : f32\n"
      "    %c = arith.mulf %t, %cap : f32\n"
      "    %m = tensor.extract %slopes[%h] : tensor<2xf32>\n"
      "    %i64 = arith.index_cast %i : index to i64\n"
      "    %j64 = arith.index_cast %j : index to i64\n"
      "    %d = arith.subi %i64, %j64 : i64\n"
      "    %df = arith.sitofp %d : i64 to f32\n"
      "    %a = math.absf %df : f32\n"
      "    %p = arith.mulf %m, %a : f32\n"
      "    %y = arith.subf %c, %p : f32\n"
      "    gpu.yield %y : f32\n"
      "  }, {\n"
      "  ^bb0(%b: index, %h: index, %i: index, %j: index):\n"
      "    %cau = arith.cmpi ule, %j, %i : index\n"
      "    %c3 = arith.constant 3 : index\n"
      "    %lo = arith.addi %j, %c3 : index\n"
      "    %win = arith.cmpi uge, %lo, %i : index\n"
      "    %ok = arith.andi %cau, %win : i1\n"
      "    gpu.yield %ok : i1\n"
      "  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, "
      "scale = 0.25 : f64, causal = false, mods = [\"scale\", \"fn\"]} : "
      "(tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) "
      "-> tensor<1x2x8x16xf32>\n"
      "  return %0 : tensor<1x2x8x16xf32>\n}\n";
  CHECK(parse(text));
  double slopes[2] = {exp2(-4.0), exp2(-8.0)}; // alibi max_bias 8, 2 heads
  const double *data[1] = {slopes};
  char err[256];
  struct attn_body_fns fns = {
      attn_body_eval_create(first_body(0), 1, data, err, sizeof err),
      attn_body_eval_create(first_body(1), 0, NULL, err, sizeof err)};
  CHECK(fns.score && fns.mask);
  enum { N = 8, D = 16, H = 2 };
  static double q[H * N * D], k[H * N * D], v[H * N * D], o1[H * N * D],
      o2[H * N * D];
  struct attn_rng rng;
  attn_rng_seed(&rng, 28);
  for (int i = 0; i < H * N * D; ++i) {
    q[i] = attn_rng_normal(&rng);
    k[i] = attn_rng_normal(&rng);
    v[i] = attn_rng_normal(&rng);
  }
  struct attn_ref_problem named = {
      .batch = 1, .heads = H, .kv_heads = H, .seq_q = N, .seq_k = N,
      .head_dim = D, .value_dim = D, .scale = 0.25, .causal = true,
      .nmods = 3, .mods = {ATTN_REF_SCALE, ATTN_REF_SOFTCAP, ATTN_REF_ALIBI},
      .softcap = 5.0, .alibi_max_bias = 8.0, .window = true,
      .window_left = 3, .window_right = -1};
  struct attn_ref_problem bodies = {
      .batch = 1, .heads = H, .kv_heads = H, .seq_q = N, .seq_k = N,
      .head_dim = D, .value_dim = D, .scale = 0.25,
      .nmods = 2, .mods = {ATTN_REF_SCALE, ATTN_REF_FN},
      .score_fn = attn_body_fns_score, .mask_fn = attn_body_fns_mask,
      .fn_ctx = &fns};
  CHECK(attn_reference(&named, q, k, v, o1));
  CHECK(attn_reference(&bodies, q, k, v, o2));
  CHECK(attn_rel_error(o2, o1, H * N * D) < 1e-14);
  // ATTN_REF_FN without a score_fn is a malformed problem.
  bodies.score_fn = NULL;
  CHECK(!attn_reference(&bodies, q, k, v, o2));
  attn_body_eval_destroy(fns.score);
  attn_body_eval_destroy(fns.mask);
  release();
  printf("@test_reference_hook ok\n");
  return 0;
}

/// The tile level (ATTN_BODY_MEMREF, for tile.score_fn / tile.mask_fn):
/// the checker accepts a body reading a memref capture with memref.load
/// and rejects tensor.extract and a constant index past the end, with one
/// error each; the evaluator reads the memref capture, clamped.
static int test_memref_level(void) {
  const char *text =
      "func.func @f(%s: " SCORES ", %m: memref<2x4xf32>, %t: tensor<4xf32>) "
      "-> " SCORES " {\n"
      "  %0 = \"attn.score_mod\"(%s) ({\n"
      "  ^bb0(%x: f32, %b: index, %h: index, %q: index, %kv: index):\n"
      "    %v = memref.load %m[%h, %kv] : memref<2x4xf32>\n"
      "    %y = arith.addf %x, %v : f32\n"
      "    gpu.yield %y : f32\n"
      "  }) : (" SCORES ") -> " SCORES "\n"
      "  %1 = \"attn.score_mod\"(%s) ({\n"
      "  ^bb0(%x: f32, %b: index, %h: index, %q: index, %kv: index):\n"
      "    %v = tensor.extract %t[%kv] : tensor<4xf32>\n"
      "    gpu.yield %v : f32\n"
      "  }) : (" SCORES ") -> " SCORES "\n"
      "  %2 = \"attn.score_mod\"(%s) ({\n"
      "  ^bb0(%x: f32, %b: index, %h: index, %q: index, %kv: index):\n"
      "    %c4 = arith.constant 4 : index\n"
      "    %v = memref.load %m[%h, %c4] : memref<2x4xf32>\n"
      "    gpu.yield %v : f32\n"
      "  }) : (" SCORES ") -> " SCORES "\n"
      "  return %0 : " SCORES "\n}\n";
  // The attn verifier rejects memref.load (attn level): parse without it.
  ctx = attn_context_create();
  sink = (struct attn_diag_sink){.out = stdout};
  attn_diag_attach(ctx, &sink);
  CHECK(attn_register_all(ctx, NULL));
  mod = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(text));
  CHECK(!mlirModuleIsNull(mod));
  MlirOperation ops[3];
  int n = 0;
  MlirBlock fb = mlirRegionGetFirstBlock(mlirOperationGetRegion(
      mlirBlockGetFirstOperation(mlirModuleGetBody(mod)), 0));
  for (MlirOperation o = mlirBlockGetFirstOperation(fb);
       !mlirOperationIsNull(o) && n < 3; o = mlirOperationGetNextInBlock(o))
    if (attn_op_is(o, "attn.score_mod"))
      ops[n++] = o;
  CHECK(n == 3);
  MlirType f32 = mlirF32TypeGet(ctx);
  CHECK(attn_body_verify(ops[0], mlirOperationGetRegion(ops[0], 0),
                         ATTN_BODY_SCORE, ATTN_BODY_MEMREF, f32,
                         "tile.score_fn"));
  CHECK(sink.errors == 0);
  CHECK(!attn_body_verify(ops[1], mlirOperationGetRegion(ops[1], 0),
                          ATTN_BODY_SCORE, ATTN_BODY_MEMREF, f32,
                         "tile.score_fn"));
  CHECK(!attn_body_verify(ops[2], mlirOperationGetRegion(ops[2], 0),
                          ATTN_BODY_SCORE, ATTN_BODY_MEMREF, f32,
                         "tile.score_fn"));
  CHECK(!attn_body_verify(ops[0], (MlirRegion){NULL}, ATTN_BODY_SCORE,
                          ATTN_BODY_MEMREF, f32,
                         "tile.score_fn"));
  CHECK(sink.errors == 3);
  double m[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const double *data[1] = {m};
  char err[256];
  struct attn_body_eval *e = attn_body_eval_create(
      mlirRegionGetFirstBlock(mlirOperationGetRegion(ops[0], 0)), 1, data,
      err, sizeof err);
  CHECK(e);
  CHECK(attn_body_eval_score(e, 0.5, 0, 1, 0, 2) == 0.5 + 7);
  CHECK(attn_body_eval_score(e, 0.5, 0, 5, 0, 9) == 0.5 + 8); // clamped
  attn_body_eval_destroy(e);
  release();
  printf("@test_memref_level ok\n");
  return 0;
}

int main(void) {
  static const struct test_case tests[] = {
      TEST(test_bias_table), TEST(test_document_prefix_mask),
      TEST(test_integers),   TEST(test_math),
      TEST(test_errors),     TEST(test_reference_hook),
      TEST(test_memref_level),
  };
  return run_tests(tests, sizeof tests / sizeof *tests, NULL, NULL);
}
