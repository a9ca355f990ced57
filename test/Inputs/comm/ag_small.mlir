// A small all_gather + GEMM for test/runtime/fused_gpu_test.c: 256 rows per
// rank gathered to 512, times 256 x 512, bf16.
func.func @ag(%a: tensor<256x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<512x512xbf16> {
  %e = tensor.empty() : tensor<512x512xbf16>
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 2 : i64} : (tensor<256x256xbf16>) -> tensor<512x256xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<512x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<512x512xbf16>) -> tensor<512x512xbf16>
  return %c : tensor<512x512xbf16>
}
