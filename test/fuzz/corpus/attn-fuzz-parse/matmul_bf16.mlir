// A bf16 GEMM as a program writes it: C[256, 512] = A[256, 128] * B[128, 512],
// row-major, zero-initialised. attn-tile makes it a tile kernel (a, b, c);
// kernel=hopper tiles it for lower-tile-to-hopper (128 x 64 x 64: its
// output has too few 128 x 256 tiles to fill the GPU).
func.func @gemm(%a: tensor<256x128xbf16>, %b: tensor<128x512xbf16>) -> tensor<256x512xbf16> {
  %zero = arith.constant 0.0 : bf16
  %empty = tensor.empty() : tensor<256x512xbf16>
  %init = linalg.fill ins(%zero : bf16) outs(%empty : tensor<256x512xbf16>) -> tensor<256x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<256x128xbf16>, tensor<128x512xbf16>) outs(%init : tensor<256x512xbf16>) -> tensor<256x512xbf16>
  return %c : tensor<256x512xbf16>
}
