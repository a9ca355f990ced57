//===- gemm_reduce.c - The split-K GEMM's reduce kernel -------------------===//
//
// An output with few tiles leaves most SMs idle however narrow its tiles
// (512 x 512 has 32 of 128 x 64): attn-tile then records split_k K slices
// in tile.matmul (tile_matmul.c prices them), hopper_gemm.c runs split_k
// units per tile, each over a slice of K, and writes each unit's f32 sum
// into a workspace of split_k slices; the kernel here sums the slices into
// C and rounds once. lower_tile_to_hopper_gemm.c records the two as one
// launch program (`partials` is its workspace), so callers launch the GEMM
// by its name as before.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#define REDUCE_THREADS 256

/// {llvm.noalias, llvm.<access>}: a parameter's attributes.
static MlirAttribute noalias(struct attn_builder *b, const char *access) {
  MlirNamedAttribute a[] = {
      attn_b_named(b, "llvm.noalias", attn_b_attr_unit(b)),
      attn_b_named(b, access, attn_b_attr_unit(b)),
  };
  return mlirDictionaryAttrGet(b->ctx, 2, a);
}

/// The manifest entry: grid, the two pointers and the slices.
static MlirAttribute launch_attr(struct attn_builder *b,
                                 const struct attn_hopper_gemm *g) {
  const char *ty = g->bf16 ? "bf16" : "f16";
  int64_t mn = g->m * g->n; // a multiple of 8: n is
  int64_t per_block = (int64_t)REDUCE_THREADS * 4;
  int64_t grid[3] = {(mn + per_block - 1) / per_block, 1, 1};
  struct attn_k_param params[2] = {
      {.name = "partials",
       .dtype = "f32",
       .shape = {g->split_k * g->m, g->n},
       .rank = 2,
       .align = 16},
      {.name = "c", .dtype = ty, .shape = {g->m, g->n}, .rank = 2, .align = 16},
  };
  MlirNamedAttribute extra[] = {
      attn_b_named(b, "split_k", attn_b_attr_i64(b, g->split_k)),
  };
  return attn_k_launch_attr(b, "gemm-split-reduce", grid, REDUCE_THREADS, 0, 2,
                            params, 1, extra);
}

/// Thread i sums elements 4i .. 4i + 3 of every slice (16-byte loads) and
/// stores them rounded (8 bytes).
static void build_body(struct attn_builder *b, const struct attn_hopper_gemm *g,
                       MlirValue partials, MlirValue c) {
  int64_t mn = g->m * g->n;
  MlirValue tid = attn_k_sreg(b, "tid.x");
  MlirValue bid = attn_k_sreg(b, "ctaid.x");
  MlirValue i = attn_k_i64_of(
      b, attn_k_mulc(
             b, attn_b_addi(b, attn_k_mulc(b, bid, REDUCE_THREADS), tid), 4));
  MlirValue in = attn_b_cmpi(b, ATTN_B_ULT, i, attn_b_i64(b, mn));
  struct attn_b_if s;
  attn_b_if_open(b, &s, in, 0, NULL, false);
  MlirValue sum[4];
  for (int sl = 0; sl < g->split_k; ++sl) {
    MlirValue at = attn_b_addi(b, i, attn_b_i64(b, (int64_t)sl * mn));
    MlirValue ptr = attn_k_gep_elem(b, partials, at, b->t.f32);
    MlirValue v = attn_k_gemm_load_vec(b, ptr, 4, b->t.f32, 16);
    for (int j = 0; j < 4; ++j) {
      MlirValue opd[2] = {v, attn_b_i32(b, j)};
      MlirValue x =
          attn_b_op1(b, "llvm.extractelement", b->t.f32, 2, opd, 0, NULL);
      sum[j] = sl ? attn_b_addf(b, sum[j], x) : x;
    }
  }
  MlirValue w[2];
  w[0] = attn_k_pack2(b, g->bf16, sum[0], sum[1]);
  w[1] = attn_k_pack2(b, g->bf16, sum[2], sum[3]);
  MlirValue out = attn_k_gep_elem(b, c, i, g->bf16 ? b->t.bf16 : b->t.f16);
  attn_k_store_vec(b, w, 2, out);
  attn_b_if_close(b, &s, 0, NULL);
}

bool attn_kernels_build_gemm_reduce(MlirOperation gpu_module, MlirLocation loc,
                                    const struct attn_hopper_gemm *g,
                                    const char *name) {
  MlirContext ctx = mlirLocationGetContext(loc);
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  attn_builder_role(&b, "gemm.reduce");
  attn_builder_at_end(&b, attn_b_region_block(gpu_module, 0));
  int32_t maxntid[3] = {REDUCE_THREADS, 1, 1};
  MlirNamedAttribute attrs[] = {
      attn_b_named(&b, "nvvm.kernel", attn_b_attr_unit(&b)),
      attn_b_named(&b, "nvvm.maxntid", mlirDenseI32ArrayGet(ctx, 3, maxntid)),
      attn_b_named(&b, "attn.launch", launch_attr(&b, g)),
  };
  MlirType types[2] = {b.t.ptr, b.t.ptr};
  MlirAttribute args[2] = {noalias(&b, "llvm.readonly"),
                           noalias(&b, "llvm.writeonly")};
  struct attn_b_func f;
  attn_k_llvm_func_open_typed(&b, &f, name, 2, types, args, 3, attrs);
  build_body(&b, g, attn_b_func_arg(&f, 0), attn_b_func_arg(&f, 1));
  return attn_k_llvm_func_finish(&b, &f);
}
