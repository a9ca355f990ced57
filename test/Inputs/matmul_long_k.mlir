// One output tile and a long K: C[128, 128] = A[128, 4096] * B[4096, 128],
// bf16. On sm_90a attn-tile splits K (tile.matmul's split_k; one 128 x 64
// tile column pair run as slices, summed by a second kernel); the CPU and
// plain GPU paths ignore the split and loop over all of K.
func.func @long_k(%a: tensor<128x4096xbf16>, %b: tensor<4096x128xbf16>) -> tensor<128x128xbf16> {
  %zero = arith.constant 0.0 : bf16
  %empty = tensor.empty() : tensor<128x128xbf16>
  %init = linalg.fill ins(%zero : bf16) outs(%empty : tensor<128x128xbf16>) -> tensor<128x128xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<128x4096xbf16>, tensor<4096x128xbf16>) outs(%init : tensor<128x128xbf16>) -> tensor<128x128xbf16>
  return %c : tensor<128x128xbf16>
}
