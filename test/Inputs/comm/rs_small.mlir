// A small GEMM + reduce_scatter for test/runtime/fused_gpu_test.c, with the
// static split pinned: 512 x 512 x 256 per rank, bf16.
func.func @rs(%a: tensor<512x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<256x512xbf16> {
  %e = tensor.empty() : tensor<512x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<512x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<512x512xbf16>) -> tensor<512x512xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 2 : i64, comm.schedule = {split = "static"}} : (tensor<512x512xbf16>) -> tensor<256x512xbf16>
  return %r : tensor<256x512xbf16>
}
