// builder_test.c - lib/IR/attn_builder.c: IR built through the MLIR C API.
// Each @test_* builds a function, verifies it and prints it (with debug
// info, so the roles' locations show) for FileCheck; the error tests check
// that a missing operand, an unbalanced region and a wrong yield are error
// diagnostics and a failed builder, never a crash.
#include "lib/IR/attn_builder.h"
#include "lib/IR/attn_context.h"

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

static MlirModule make_module(MlirContext ctx, MlirLocation *loc) {
  *loc = mlirLocationFileLineColGet(ctx, mlirStringRefCreateFromCString("k.mlir"),
                                    3, 7);
  return mlirModuleCreateEmpty(*loc);
}

static void put(MlirStringRef s, void *user) {
  fwrite(s.data, 1, s.length, user);
}

static void print(MlirModule m) {
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  mlirOpPrintingFlagsEnableDebugInfo(flags, true, false);
  mlirOperationPrintWithFlags(mlirModuleGetOperation(m), flags,
                              put, stdout);
  mlirOpPrintingFlagsDestroy(flags);
  printf("\n");
}

static bool verified(MlirModule m) {
  return mlirOperationVerify(mlirModuleGetOperation(m));
}

/// A sum over a loop with a branch inside: scf.for with iter_args, scf.if
/// with an else, constants, arithmetic, a cast, and two roles.
static void test_loop_and_branch(void) {
  printf("@test_loop_and_branch\n");
  MlirContext ctx = make_context();
  MlirLocation loc;
  MlirModule m = make_module(ctx, &loc);
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  attn_builder_at_end(&b, mlirModuleGetBody(m));
  struct attn_b_func f;
  MlirType args[] = {b.t.index, b.t.f32};
  MlirNamedAttribute kernel =
      attn_b_named(&b, "tile.kernel", attn_b_attr_unit(&b));
  attn_b_func_open(&b, &f, "sum", 2, args, 1, &b.t.f32, 1, &kernel);
  attn_builder_role(&b, "prologue");
  MlirValue lo = attn_b_index(&b, 0), one = attn_b_index(&b, 1);
  MlirValue zero = attn_b_f32(&b, 0.0f);
  attn_builder_role(&b, "softmax");
  struct attn_b_for loop;
  attn_b_for_open(&b, &loop, lo, attn_b_func_arg(&f, 0), one, 1, &zero);
  MlirValue odd = attn_b_cmpi(&b, ATTN_B_EQ,
                              attn_b_remui(&b, loop.iv, attn_b_index(&b, 2)),
                              one);
  struct attn_b_if branch;
  attn_b_if_open(&b, &branch, odd, 1, &b.t.f32, true);
  MlirValue added = attn_b_addf(&b, loop.args[0], attn_b_func_arg(&f, 1));
  attn_b_if_else(&b, &branch, 1, &added);
  MlirValue i = attn_b_cast(&b, "arith.index_cast", loop.iv, b.t.i32);
  MlirValue x = attn_b_cast(&b, "arith.sitofp", i, b.t.f32);
  MlirValue fused = attn_b_fma(&b, x, attn_b_func_arg(&f, 1), loop.args[0]);
  attn_b_if_close(&b, &branch, 1, &fused);
  attn_b_for_close(&b, &loop, 1, branch.results);
  attn_builder_role(&b, NULL);
  attn_b_func_close(&b, &f, 1, loop.results);
  printf("finish %d verify %d depth %d\n", attn_builder_finish(&b),
         verified(m), b.depth);
  print(m);
  mlirModuleDestroy(m);
  mlirContextDestroy(ctx);
}

/// Ops before an anchor, attributes of every kind, an op of an IRDL-less
/// dialect by name, and an if without results or else.
static void test_before_and_attributes(void) {
  printf("@test_before_and_attributes\n");
  MlirContext ctx = make_context();
  MlirLocation loc;
  MlirModule m = make_module(ctx, &loc);
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  attn_builder_at_end(&b, mlirModuleGetBody(m));
  struct attn_b_func f;
  int64_t shape[] = {4, 8};
  MlirType mt = attn_b_memref(&b, 2, shape, b.t.f32);
  attn_b_func_open(&b, &f, "fill", 1, &mt, 0, NULL, 0, NULL);
  MlirValue c = attn_b_f32(&b, 2.5f);
  MlirOperation ret = (MlirOperation){NULL};
  attn_b_func_close(&b, &f, 0, NULL);
  ret = mlirBlockGetTerminator(f.entry);
  attn_builder_before(&b, ret); // back inside, before the return
  MlirValue idx = attn_b_index(&b, 3);
  MlirValue opd[] = {c, attn_b_func_arg(&f, 0), idx, idx};
  attn_b_op(&b, "memref.store", 0, NULL, 4, opd, 0, NULL, 0);
  struct attn_b_if when;
  attn_b_if_open(&b, &when,
                 attn_b_cmpf(&b, ATTN_B_F_OGT, c, attn_b_f32(&b, 1.0f)), 0,
                 NULL, false);
  MlirValue opd2[] = {attn_b_f32(&b, -1.0f), attn_b_func_arg(&f, 0), idx,
                      idx};
  attn_b_op(&b, "memref.store", 0, NULL, 4, opd2, 0, NULL, 0);
  attn_b_if_close(&b, &when, 0, NULL);
  const char *names[] = {"q", "k"};
  int64_t grid[] = {3, 6, 1};
  MlirNamedAttribute attrs[] = {
      attn_b_named(&b, "a_i64", attn_b_attr_i64(&b, -5)),
      attn_b_named(&b, "b_f64", attn_b_attr_f64(&b, 0.125)),
      attn_b_named(&b, "c_bool", attn_b_attr_bool(&b, true)),
      attn_b_named(&b, "d_grid", attn_b_attr_i64s(&b, 3, grid)),
      attn_b_named(&b, "e_names", attn_b_attr_strs(&b, 2, names)),
      attn_b_named(&b, "f_type", attn_b_attr_type(&b, b.t.bf16)),
  };
  for (size_t i = 0; i < sizeof attrs / sizeof *attrs; ++i)
    mlirOperationSetAttributeByName(f.op, mlirIdentifierStr(attrs[i].name),
                                    attrs[i].attribute);
  printf("finish %d verify %d\n", attn_builder_finish(&b), verified(m));
  print(m);
  mlirModuleDestroy(m);
  mlirContextDestroy(ctx);
}

/// A null operand: one error at the current location, the builder failed,
/// later helpers given the null result make nothing, nothing crashes.
static void test_missing_operand(void) {
  printf("@test_missing_operand\n");
  MlirContext ctx = make_context();
  MlirLocation loc;
  MlirModule m = make_module(ctx, &loc);
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  attn_builder_at_end(&b, mlirModuleGetBody(m));
  struct attn_b_func f;
  attn_b_func_open(&b, &f, "bad", 0, NULL, 0, NULL, 0, NULL);
  attn_builder_role(&b, "epilogue");
  MlirValue nothing = {NULL};
  MlirValue x = attn_b_addf(&b, nothing, attn_b_f32(&b, 1.0f));
  MlirValue y = attn_b_mulf(&b, x, x);
  struct attn_b_for loop;
  attn_b_for_open(&b, &loop, y, y, y, 0, NULL);
  attn_b_for_close(&b, &loop, 0, NULL);
  attn_b_func_close(&b, &f, 0, NULL);
  printf("null %d %d finish %d errors %d depth %d\n", mlirValueIsNull(x),
         mlirValueIsNull(y), attn_builder_finish(&b), sink.errors, b.depth);
  mlirModuleDestroy(m);
  mlirContextDestroy(ctx);
}

/// Regions left open and yields of the wrong arity are errors.
static void test_unbalanced(void) {
  printf("@test_unbalanced\n");
  MlirContext ctx = make_context();
  MlirLocation loc;
  MlirModule m = make_module(ctx, &loc);
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  attn_builder_at_end(&b, mlirModuleGetBody(m));
  struct attn_b_func f;
  attn_b_func_open(&b, &f, "open", 0, NULL, 0, NULL, 0, NULL);
  printf("open finish %d\n", attn_builder_finish(&b));
  attn_b_func_close(&b, &f, 0, NULL);
  mlirModuleDestroy(m);

  m = make_module(ctx, &loc);
  attn_builder_init(&b, ctx, loc);
  attn_builder_at_end(&b, mlirModuleGetBody(m));
  attn_b_func_open(&b, &f, "arity", 0, NULL, 0, NULL, 0, NULL);
  MlirValue z = attn_b_f32(&b, 0.0f), i0 = attn_b_index(&b, 0);
  struct attn_b_for loop;
  attn_b_for_open(&b, &loop, i0, i0, i0, 1, &z);
  attn_b_for_close(&b, &loop, 0, NULL);
  attn_b_func_close(&b, &f, 0, NULL);
  printf("arity finish %d depth %d\n", attn_builder_finish(&b), b.depth);
  mlirModuleDestroy(m);

  m = make_module(ctx, &loc);
  attn_builder_init(&b, ctx, loc);
  attn_builder_at_end(&b, mlirModuleGetBody(m));
  attn_b_func_open(&b, &f, "no_else", 0, NULL, 0, NULL, 0, NULL);
  i0 = attn_b_index(&b, 0);
  struct attn_b_if s;
  attn_b_if_open(&b, &s, attn_b_cmpi(&b, ATTN_B_ULT, i0, i0), 1, &b.t.f32,
                 false);
  attn_b_if_close(&b, &s, 0, NULL);
  attn_b_func_close(&b, &f, 0, NULL);
  printf("no_else finish %d depth %d\n", attn_builder_finish(&b), b.depth);
  mlirModuleDestroy(m);
  mlirContextDestroy(ctx);
}

/// The memory and GPU helpers: a host function with a stack buffer, loads,
/// stores and a call, and a gpu.func kernel in a gpu.module with a workgroup
/// buffer, thread and block ids, the block size and a barrier.
static void test_memory_and_gpu(void) {
  printf("@test_memory_and_gpu\n");
  MlirContext ctx = make_context();
  MlirLocation loc;
  MlirModule m = make_module(ctx, &loc);
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  attn_builder_at_end(&b, mlirModuleGetBody(m));
  int64_t shape[] = {4, 8};
  MlirType mt = attn_b_memref(&b, 2, shape, b.t.f32);
  struct attn_b_func callee, f;
  attn_b_func_open(&b, &callee, "use", 1, &mt, 0, NULL, 0, NULL);
  attn_b_func_close(&b, &callee, 0, NULL);
  attn_b_func_open(&b, &f, "host", 1, &mt, 0, NULL, 0, NULL);
  attn_builder_role(&b, "cpu.stack");
  MlirValue buf = attn_b_alloca(&b, mt);
  attn_builder_role(&b, NULL);
  MlirValue ij[2] = {attn_b_index(&b, 1), attn_b_index(&b, 2)};
  MlirValue x = attn_b_load(&b, attn_b_func_arg(&f, 0), 2, ij);
  attn_b_store(&b, x, buf, 2, ij);
  MlirOperation call = attn_b_call(&b, "use", 1, &buf, 0, NULL);
  attn_b_func_close(&b, &f, 0, NULL);

  MlirNamedAttribute name =
      attn_b_named(&b, "sym_name", attn_b_attr_str(&b, "kernels"));
  MlirOperation gm = attn_b_op(&b, "gpu.module", 0, NULL, 0, NULL, 1, &name, 1);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(gm, 0),
                             mlirBlockCreate(0, NULL, NULL));
  attn_builder_at_end(&b, attn_b_region_block(gm, 0));
  MlirType wg = attn_b_memref_in(&b, 2, shape, b.t.f32,
                                 attn_b_attr_workgroup(&b));
  int32_t block[] = {128, 1, 1};
  MlirNamedAttribute bs = attn_b_named(&b, "known_block_size",
                                       mlirDenseI32ArrayGet(ctx, 3, block));
  struct attn_b_func k;
  attn_builder_role(&b, "gpu.threads");
  attn_b_gpu_func_open(&b, &k, "kern", 1, &mt, 1, &wg, 1, &bs);
  MlirValue tid = attn_b_thread_id(&b, ATTN_B_X);
  MlirValue nt = attn_b_block_dim(&b, ATTN_B_X);
  MlirValue by = attn_b_block_id(&b, ATTN_B_Y);
  MlirValue at[2] = {attn_b_addi(&b, tid, by), attn_b_remui(&b, nt, tid)};
  MlirValue y = attn_b_load(&b, attn_b_func_arg(&k, 0), 2, at);
  attn_b_store(&b, y, attn_b_func_arg(&k, 1), 2, at);
  attn_b_barrier(&b);
  attn_b_gpu_func_close(&b, &k);
  printf("finish %d verify %d call %d depth %d\n", attn_builder_finish(&b),
         verified(m), !mlirOperationIsNull(call), b.depth);
  print(m);
  mlirModuleDestroy(m);
  mlirContextDestroy(ctx);
}

int main(void) {
  test_loop_and_branch();
  test_before_and_attributes();
  test_missing_operand();
  test_unbalanced();
  test_memory_and_gpu();
  return 0;
}
