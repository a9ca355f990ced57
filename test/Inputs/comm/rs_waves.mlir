// A GEMM + reduce_scatter for test/runtime/fused_gpu_test.c whose shards
// outlast a wave of the compute CTAs: 2048 x 512 x 256 per rank, bf16, 16
// tiles per shard on 11 compute CTAs, adaptive split (compute CTAs claim
// tiles, then join the reduction). The small one (rs_small.mlir) runs one
// wave, static.
func.func @rs(%a: tensor<2048x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<1024x512xbf16> {
  %e = tensor.empty() : tensor<2048x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<2048x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<2048x512xbf16>) -> tensor<2048x512xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 2 : i64, comm.schedule = {split = "adaptive"}} : (tensor<2048x512xbf16>) -> tensor<1024x512xbf16>
  return %r : tensor<1024x512xbf16>
}
