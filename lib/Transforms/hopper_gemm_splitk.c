//===- hopper_gemm_splitk.c - The Hopper GEMM with its K split ------------===//
//
// An output with few tiles leaves most SMs idle however narrow its tiles
// (512 x 512 has 32 of 128 x 64): attn-tile then records split_k K slices
// in tile.matmul (tile_matmul.c prices them), hopper_gemm.c runs split_k
// units per tile, each over a slice of K, and writes each unit's f32 sum
// into a workspace of split_k slices; the kernel here sums the slices into
// C and rounds once. lower_tile_to_hopper.c records the two as one launch
// program (`partials` is its workspace), so callers launch the GEMM by its
// name as before.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/hopper_gemm.h"
#include "lib/Transforms/hopper_launch.h"
#include "lib/Transforms/hopper_ptx.h"

#define REDUCE_THREADS 256

void attn_hopper_gemm_emit_reduce(struct attn_strbuf *b,
                                  const struct attn_hopper_gemm *g,
                                  const char *name) {
  struct attn_ptx ptx, *p = &ptx;
  attn_ptx_init(p, b, g->bf16);
  const char *ty = g->bf16 ? "bf16" : "f16";
  int64_t mn = g->m * g->n; // a multiple of 8: n is
  int64_t per_block = (int64_t)REDUCE_THREADS * 4;
  attn_strbuf_printf(
      b,
      "llvm.func @%s(%%partials: !llvm.ptr {llvm.noalias, llvm.readonly}, "
      "%%c: !llvm.ptr {llvm.noalias, llvm.writeonly}) attributes "
      "{nvvm.kernel, nvvm.maxntid = array<i32: %d, 1, 1>, ",
      name, REDUCE_THREADS);
  int64_t grid[3] = {(mn + per_block - 1) / per_block, 1, 1};
  attn_hopper_emit_launch_head(b, "gemm-split-reduce", grid, REDUCE_THREADS,
                               0);
  int64_t partials[2] = {g->split_k * g->m, g->n}, c[2] = {g->m, g->n};
  attn_hopper_emit_param(b, "partials", "f32", 2, partials, 16);
  attn_strbuf_printf(b, ", ");
  attn_hopper_emit_param(b, "c", ty, 2, c, 16);
  attn_strbuf_printf(b, "], split_k = %d : i64}} {\n", g->split_k);

  // Thread i sums elements 4i .. 4i + 3 of every slice (16-byte loads) and
  // stores them rounded (8 bytes).
  int tid = attn_ptx_op(p, "nvvm.read.ptx.sreg.tid.x : i32");
  int bid = attn_ptx_op(p, "nvvm.read.ptx.sreg.ctaid.x : i32");
  int i = attn_ptx_op(
      p, "arith.extui %%v%d : i32 to i64",
      attn_ptx_mulc(p, attn_ptx_addi(p, attn_ptx_mulc(p, bid, REDUCE_THREADS),
                                     tid),
                    4));
  int in = attn_ptx_op(p, "arith.cmpi ult, %%v%d, %%v%d : i64", i,
                       attn_ptx_ci64(p, mn));
  attn_ptx_line(p, "scf.if %%v%d {", in);
  int sum[4];
  for (int s = 0; s < g->split_k; ++s) {
    int at = attn_ptx_op(p, "arith.addi %%v%d, %%v%d : i64", i,
                         attn_ptx_ci64(p, (long long)s * mn));
    int ptr = attn_ptx_op(p,
                          "llvm.getelementptr %%partials[%%v%d] : (!llvm.ptr, "
                          "i64) -> !llvm.ptr, f32",
                          at);
    int v = attn_ptx_op(p,
                        "llvm.load %%v%d {alignment = 16 : i64} : !llvm.ptr "
                        "-> vector<4xf32>",
                        ptr);
    for (int j = 0; j < 4; ++j) {
      int x = attn_ptx_op(p, "llvm.extractelement %%v%d[%%v%d : i32] : "
                             "vector<4xf32>",
                          v, attn_ptx_ci32(p, j));
      sum[j] = s ? attn_ptx_fadd(p, sum[j], x) : x;
    }
  }
  int w[2] = {attn_ptx_pack2(p, sum[0], sum[1]),
              attn_ptx_pack2(p, sum[2], sum[3])};
  int out = attn_ptx_op(p,
                        "llvm.getelementptr %%c[%%v%d] : (!llvm.ptr, i64) -> "
                        "!llvm.ptr, %s",
                        i, ty);
  attn_ptx_store_vec(p, w, 2, "i32", out);
  attn_ptx_line(p, "}");
  attn_ptx_line(p, "llvm.return");
  attn_strbuf_printf(b, "}\n");
}
