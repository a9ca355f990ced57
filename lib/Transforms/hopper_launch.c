//===- hopper_launch.c - The attn.launch entries of the GPU kernels -------===//
//
// See hopper_launch.h. MLIR parses the text into a dictionary attribute,
// so the order of its keys here does not reach the manifest.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/hopper_launch.h"
#include "lib/Transforms/hopper_emit.h"

void attn_hopper_emit_launch_head(struct attn_strbuf *b, const char *kernel,
                                  const int64_t grid[3], int threads,
                                  int64_t smem_bytes) {
  attn_strbuf_printf(b,
                     "attn.launch = {grid = array<i32: %lld, %lld, %lld>, "
                     "block = array<i32: %d, 1, 1>, static_shared_bytes = 0 "
                     ": i64, dynamic_shared_bytes = %lld : i64, kernel = "
                     "\"%s\", params = [",
                     (long long)grid[0], (long long)grid[1],
                     (long long)grid[2], threads, (long long)smem_bytes,
                     kernel);
}

void attn_hopper_emit_param(struct attn_strbuf *b, const char *name,
                            const char *ty, int rank, const int64_t *shape,
                            int align) {
  attn_strbuf_printf(b,
                     "{name = \"%s\", kind = \"ptr\", dtype = \"%s\", shape = "
                     "array<i64: ",
                     name, ty);
  for (int i = 0; i < rank; ++i)
    attn_strbuf_printf(b, "%s%lld", i ? ", " : "", (long long)shape[i]);
  attn_strbuf_printf(b, ">");
  if (align > 1)
    attn_strbuf_printf(b, ", align = %d : i64", align);
  attn_strbuf_printf(b, "}");
}

void attn_hopper_emit_map(struct attn_strbuf *b, const char *name,
                          const char *tensor, const char *ty,
                          const int64_t dims[4], int box_rows) {
  attn_strbuf_printf(
      b,
      "{name = \"%s\", kind = \"tensormap\", tensor = \"%s\", dtype = \"%s\", "
      "dims = array<i64: %lld, %lld, %lld, %lld>, box = array<i64: 64, %d, 1, "
      "1>, swizzle = 128 : i64}",
      name, tensor, ty, (long long)dims[0], (long long)dims[1],
      (long long)dims[2], (long long)dims[3], box_rows);
}

void attn_hopper_emit_launch_open(struct attn_strbuf *b,
                                  const struct attn_hopper_kernel *k,
                                  const char *kernel, const int64_t grid[3],
                                  int threads, int64_t smem_bytes, int align,
                                  int out_align) {
  const char *ty = k->bf16 ? "bf16" : "f16";
  int64_t q[4] = {k->batch, k->heads, k->seq_q, k->head_dim};
  int64_t kv[4] = {k->batch, k->kv_heads, k->seq_k, k->head_dim};
  attn_hopper_emit_launch_head(b, kernel, grid, threads, smem_bytes);
  attn_hopper_emit_param(b, "q", ty, 4, q, align);
  attn_strbuf_printf(b, ", ");
  attn_hopper_emit_param(b, "k", ty, 4, kv, align);
  attn_strbuf_printf(b, ", ");
  attn_hopper_emit_param(b, "v", ty, 4, kv, align);
  attn_strbuf_printf(b, ", ");
  attn_hopper_emit_param(b, "out", ty, 4, q, out_align);
}

void attn_hopper_emit_launch_close(struct attn_strbuf *b,
                                   const char *attention) {
  attn_strbuf_printf(b, "]");
  if (attention)
    attn_strbuf_printf(b, ", attention = %s", attention);
  attn_strbuf_printf(b, "}");
}
