// A GEMM whose output has too few tiles to fill the GPU and whose K is
// long: C[500, 504] = A[500, 8160] * B[8160, 504], bf16. On sm_90a its 32
// tiles of 128 x 64 run 4 slices of K each (hopper_gemm_splitk.c), and a
// second kernel sums them; every dimension has a tail (8160 = 127.5 K
// blocks, 500 and 504 rows and columns of 128 x 64 tiles).
func.func @split(%a: tensor<500x8160xbf16>, %b: tensor<8160x504xbf16>) -> tensor<500x504xbf16> {
  %zero = arith.constant 0.0 : bf16
  %empty = tensor.empty() : tensor<500x504xbf16>
  %init = linalg.fill ins(%zero : bf16) outs(%empty : tensor<500x504xbf16>) -> tensor<500x504xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<500x8160xbf16>, tensor<8160x504xbf16>) outs(%init : tensor<500x504xbf16>) -> tensor<500x504xbf16>
  return %c : tensor<500x504xbf16>
}
