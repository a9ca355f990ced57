// kernels_test.c - lib/Kernels: kernels built through the MLIR C API.
// Each @test_* owns its context and prints what FileCheck reads (with debug
// info, so that the roles' locations show). It tests the internal floors
// too, and so includes kernels_internal.h, as no file outside lib/Kernels
// but this test may.
#include "lib/IR/attn_context.h"
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <string.h>

static struct attn_diag_sink sink;

static MlirContext make_context(void) {
  MlirContext ctx = attn_context_create();
  sink = (struct attn_diag_sink){.out = stdout};
  attn_diag_attach(ctx, &sink);
  return ctx;
}

static MlirStringRef str(const char *s) {
  return mlirStringRefCreateFromCString(s);
}

static void put(MlirStringRef s, void *user) {
  fwrite(s.data, 1, s.length, user);
}

static void print(MlirOperation op) {
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  mlirOpPrintingFlagsEnableDebugInfo(flags, true, false);
  mlirOperationPrintWithFlags(op, flags, put, stdout);
  mlirOpPrintingFlagsDestroy(flags);
  printf("\n");
}

/// A module holding an empty gpu.module @attn_kernels, and its location.
static MlirModule make_module(MlirContext ctx, MlirLocation *loc,
                              MlirOperation *gm) {
  *loc = mlirLocationFileLineColGet(ctx, str("k.mlir"), 3, 7);
  MlirModule m = mlirModuleCreateEmpty(*loc);
  struct attn_builder b;
  attn_builder_init(&b, ctx, *loc);
  attn_builder_at_end(&b, mlirModuleGetBody(m));
  MlirNamedAttribute a =
      attn_b_named(&b, "sym_name", attn_b_attr_str(&b, "attn_kernels"));
  *gm = attn_b_op(&b, "gpu.module", 0, NULL, 0, NULL, 1, &a, 1);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(*gm, 0),
                             mlirBlockCreate(0, NULL, NULL));
  return m;
}

/// The vocabulary in one function: inline PTX, a shuffle, 16-bit pairs both
/// ways, libdevice sin/cos, shared-memory pointers, loads and stores; the
/// declarations made once when asked twice.
static void test_vocabulary(void) {
  printf("@test_vocabulary\n");
  MlirContext ctx = make_context();
  MlirLocation loc;
  MlirOperation gm;
  MlirModule m = make_module(ctx, &loc, &gm);
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  attn_k_declare_libdevice(&b, gm, 16);
  attn_k_declare_libdevice(&b, gm, 16);
  struct attn_b_func f;
  attn_builder_role(&b, "test.role");
  attn_k_llvm_func_open(&b, &f, "words", 1, 0, NULL);
  MlirValue tid = attn_k_sreg(&b, "tid.x");
  MlirValue smem = attn_k_addressof(&b, "attn_smem", b.t.ptr_shared);
  MlirValue p = attn_k_smem_ptr(&b, smem, attn_k_mulc(&b, tid, 4));
  MlirValue w = attn_k_load(&b, p, b.t.i32);
  MlirValue lo, hi, flo, fhi, c, s;
  attn_k_unpack2(&b, true, w, &lo, &hi);
  attn_k_unpack2(&b, false, w, &flo, &fhi);
  attn_k_sincos(&b, attn_k_shfl_xor(&b, lo, 1), &c, &s);
  attn_k_store(&b, attn_k_pack2(&b, true, attn_b_mulf(&b, hi, c), s), p);
  MlirValue out = attn_k_gep_const(&b, attn_b_func_arg(&f, 0), 0);
  attn_k_store(&b, attn_k_pack2(&b, false, flo, fhi),
               attn_k_gep(&b, out, attn_k_i64_of(&b, tid)));
  attn_k_asm0(&b, "bar.sync 0;");
  attn_k_llvm_func_close(&b, &f);
  printf("finish %d verify %d depth %d\n", attn_builder_finish(&b),
         mlirOperationVerify(mlirModuleGetOperation(m)), b.depth);
  print(mlirModuleGetOperation(m));
  mlirModuleDestroy(m);
  mlirContextDestroy(ctx);
}

/// The Hopper instructions in one function: mbarriers, fences, setmaxnreg,
/// wgmma (both forms, with its descriptor), TMA loads and stores, bulk
/// copies and the staged rows, flags in global memory, register fences,
/// the swizzle and the 16-bit conversions. It verifies, and each prints as
/// the text vocabulary wrote it.
static void test_hopper_vocabulary(void) {
  printf("@test_hopper_vocabulary\n");
  MlirContext ctx = make_context();
  MlirLocation loc;
  MlirOperation gm;
  MlirModule m = make_module(ctx, &loc, &gm);
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  attn_k_declare_libdevice(&b, gm, 1024);
  struct attn_b_func f;
  attn_builder_role(&b, "test.hopper");
  attn_k_llvm_func_open(&b, &f, "hopper", 2, 0, NULL);
  MlirValue tid = attn_k_sreg(&b, "tid.x");
  MlirValue bar = attn_k_mulc(&b, tid, 8);
  attn_k_mbar_init(&b, bar, 1);
  attn_k_fence_mbar_init(&b);
  attn_k_mbar_expect_tx(&b, bar, 16384);
  attn_k_mbar_arrive(&b, bar);
  attn_k_mbar_wait(&b, bar, attn_k_andc(&b, tid, 1));
  attn_k_setmaxnreg(&b, true, 240);
  attn_k_setmaxnreg(&b, false, 24);
  attn_k_fence_proxy_async(&b, true);
  attn_k_fence_proxy_async(&b, false);
  MlirValue map = attn_k_ptrtoint(&b, attn_b_func_arg(&f, 1), b.t.i64);
  MlirValue c[4] = {tid, tid, tid, tid};
  attn_k_tma_load(&b, bar, map, c, bar);
  attn_k_tma_store(&b, bar, map, c);
  attn_k_bulk_commit(&b);
  attn_k_bulk_wait(&b, 0, true);
  MlirValue desc = attn_k_make_desc(&b, bar, 16, 1024);
  MlirValue acc[4];
  for (int i = 0; i < 4; ++i)
    acc[i] = attn_b_f32(&b, 0.0f);
  attn_k_wgmma_fence(&b);
  attn_k_wgmma_ss(&b, true, acc, 4, desc, attn_k_desc_add(&b, desc, 32),
                  attn_b_i32(&b, 0), false);
  MlirValue a[4] = {tid, tid, tid, tid};
  attn_k_wgmma_rs(&b, false, acc, 4, a, desc, true);
  attn_k_wgmma_commit(&b);
  attn_k_wgmma_wait(&b, 1);
  attn_k_wgmma_wait_after(&b, acc[0]);
  attn_k_reg_fence(&b, acc, 4, "f");
  MlirValue sw = attn_k_swz(&b, bar, 128, tid, tid);
  MlirValue flag = attn_k_i64_of(&b, sw);
  attn_k_wait_until(&b, flag, "ge", tid, "gpu", 1000);
  attn_k_store_release(&b, flag, tid);
  attn_k_atom_inc64(&b, flag);
  MlirValue pinned = attn_k_pin(&b, acc[1], "f");
  MlirValue h = attn_k_from_f32_16(&b, true, attn_k_rcp(&b, pinned));
  MlirValue back = attn_k_to_f32_16(&b, false, h);
  MlirValue w[4] = {tid, tid, tid, tid};
  attn_k_quad_transpose(&b, attn_k_remc(&b, tid, 4), w);
  MlirValue out = attn_b_func_arg(&f, 0);
  attn_k_store16_if(&b, w, out, attn_k_cmpc(&b, ATTN_B_ULT, tid, 64));
  MlirValue fv[2] = {back, acc[2]};
  attn_k_store_vec(&b, fv, 2, out);
  struct attn_k_rows rows = {bar, tid, attn_b_i32(&b, 1),
                             attn_k_rows_pitch(128)};
  attn_k_rows_drain(&b, &rows, ATTN_K_DRAIN_PUBLISHED, true);
  attn_k_rows_put(&b, true, &rows, acc, 4, NULL);
  attn_k_rows_ready(&b, &rows);
  struct attn_b_if copy;
  attn_k_rows_copy_open(&b, &rows, &copy);
  attn_k_rows_copy_n(&b, &rows, map, 128);
  attn_k_rows_copy_close(&b, &copy);
  attn_k_llvm_func_close(&b, &f);
  printf("finish %d verify %d depth %d\n", attn_builder_finish(&b),
         mlirOperationVerify(mlirModuleGetOperation(m)), b.depth);
  print(mlirModuleGetOperation(m));
  mlirModuleDestroy(m);
  mlirContextDestroy(ctx);
}

/// The built attn.launch entry is the attribute hopper_launch.c's text
/// parses to (pointers of rank 4 and 2, a tensor map, an extra key).
static void test_launch_attr(void) {
  printf("@test_launch_attr\n");
  MlirContext ctx = make_context();
  struct attn_builder b;
  attn_builder_init(&b, ctx, mlirLocationUnknownGet(ctx));
  MlirAttribute att = mlirAttributeParseGet(ctx, str("{causal = true}"));
  int64_t grid[3] = {3, 8, 2};
  struct attn_k_param params[3] = {
      {"q", "bf16", {2, 8, 300, 64}, 16, 4, NULL, {0}, 0},
      {"out", "bf16", {4800, 64}, 1, 2, NULL, {0}, 0},
      {"q_map", "bf16", {0}, 0, 0, "q", {64, 300, 8, 2}, 128},
  };
  MlirNamedAttribute extra = attn_b_named(&b, "attention", att);
  MlirAttribute built = attn_k_launch_attr(&b, "mma-sync", grid, 256, 65536,
                                           3, params, 1, &extra);
  MlirAttribute text = mlirAttributeParseGet(
      ctx, str("{grid = array<i32: 3, 8, 2>, block = array<i32: 256, 1, 1>, "
               "static_shared_bytes = 0 : i64, dynamic_shared_bytes = 65536 "
               ": i64, kernel = \"mma-sync\", params = [{name = \"q\", kind = "
               "\"ptr\", dtype = \"bf16\", shape = array<i64: 2, 8, 300, 64>, "
               "align = 16 : i64}, {name = \"out\", kind = \"ptr\", dtype = "
               "\"bf16\", shape = array<i64: 4800, 64>}, {name = \"q_map\", "
               "kind = \"tensormap\", tensor = \"q\", dtype = \"bf16\", "
               "dims = array<i64: 64, 300, 8, 2>, box = array<i64: 64, 128, 1, "
               "1>, swizzle = 128 : i64}], attention = {causal = true}}"));
  printf("equal %d\n", mlirAttributeEqual(built, text));
  mlirContextDestroy(ctx);
}

/// The whole mma.sync kernel through the public entry, twice into one
/// gpu.module (one set of declarations): it verifies, and its ops are
/// located at the tile kernel named by their roles.
static void test_mma_kernel(void) {
  printf("@test_mma_kernel\n");
  MlirContext ctx = make_context();
  MlirLocation loc;
  MlirOperation gm;
  MlirModule m = make_module(ctx, &loc, &gm);
  struct attn_hopper_kernel k;
  memset(&k, 0, sizeof k);
  k.bf16 = true;
  k.batch = 1, k.heads = 2, k.kv_heads = 1, k.seq_q = 100, k.seq_k = 100;
  k.head_dim = 64, k.block_m = 64, k.block_n = 32, k.stages = 2;
  k.causal = true, k.scale = 0.125;
  k.rope = true, k.theta = 10000.0, k.rotary_dim = 64;
  k.name = "mma_a";
  bool a = attn_kernels_build_mma_attention(gm, loc, &k, (MlirAttribute){NULL});
  k.name = "mma_b", k.rope = false, k.causal = false, k.bf16 = false;
  bool b = attn_kernels_build_mma_attention(gm, loc, &k, (MlirAttribute){NULL});
  printf("built %d %d verify %d errors %d threads %d smem %lld\n", a, b,
         mlirOperationVerify(mlirModuleGetOperation(m)), sink.errors,
         attn_kernels_mma_threads(&k),
         (long long)attn_kernels_mma_smem_bytes(&k));
  print(mlirModuleGetOperation(m));
  mlirModuleDestroy(m);
  mlirContextDestroy(ctx);
}

/// The Hopper GEMM with a split K and its reduce kernel through the public
/// entries: the description is one the pass accepts, the module verifies,
/// @attn_smem is 1024-byte aligned, the tensor maps are passed by value, and
/// the ops are located at the tile kernel named by their roles.
static void test_gemm_kernel(void) {
  printf("@test_gemm_kernel\n");
  MlirContext ctx = make_context();
  MlirLocation loc;
  MlirOperation gm;
  MlirModule m = make_module(ctx, &loc, &gm);
  struct attn_hopper_gemm g;
  memset(&g, 0, sizeof g);
  g.name = "mm__partial";
  g.bf16 = true;
  g.m = 256, g.n = 128, g.k = 512, g.split_k = 2, g.sms = 132;
  attn_hopper_gemm_defaults(&g, g.sms);
  char why[256] = "";
  bool ok = attn_hopper_gemm_supported(&g, why, sizeof why);
  bool a = attn_kernels_build_hopper_gemm(gm, loc, &g, (MlirAttribute){NULL});
  bool b = attn_kernels_build_gemm_reduce(gm, loc, &g, "mm__reduce");
  printf("supported %d%s built %d %d verify %d errors %d\n", ok, why, a, b,
         mlirOperationVerify(mlirModuleGetOperation(m)), sink.errors);
  print(mlirModuleGetOperation(m));
  mlirModuleDestroy(m);
  mlirContextDestroy(ctx);
}

/// A null value given to the vocabulary: one error diagnostic at the
/// role's location, a failed builder, nothing crashes.
static void test_missing_value(void) {
  printf("@test_missing_value\n");
  MlirContext ctx = make_context();
  MlirLocation loc;
  MlirOperation gm;
  MlirModule m = make_module(ctx, &loc, &gm);
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  attn_builder_at_end(&b, attn_b_region_block(gm, 0));
  struct attn_b_func f;
  attn_builder_role(&b, "mma.load");
  attn_k_llvm_func_open(&b, &f, "broken", 1, 0, NULL);
  MlirValue none = {NULL};
  MlirValue x = attn_k_pack2(&b, true, none, attn_b_f32(&b, 1.0f));
  attn_k_store(&b, x, attn_k_gep(&b, attn_b_func_arg(&f, 0), none));
  attn_k_llvm_func_close(&b, &f);
  printf("null %d finish %d errors %d depth %d\n", mlirValueIsNull(x),
         attn_builder_finish(&b), sink.errors, b.depth);
  mlirModuleDestroy(m);
  mlirContextDestroy(ctx);
}

int main(void) {
  test_vocabulary();
  test_hopper_vocabulary();
  test_launch_attr();
  test_mma_kernel();
  test_gemm_kernel();
  test_missing_value();
  return 0;
}
