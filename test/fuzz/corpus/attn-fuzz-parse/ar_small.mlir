// A small GEMM + all_reduce for the two-GPU fused-kernel test
// (test/runtime/fused_gpu_test.c): 256 x 512 x 256 per rank, bf16.
func.func @ar(%a: tensor<256x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<256x512xbf16> {
  %e = tensor.empty() : tensor<256x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<256x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<256x512xbf16>) -> tensor<256x512xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<256x512xbf16>) -> tensor<256x512xbf16>
  return %r : tensor<256x512xbf16>
}
