// GEMMs whose sizes are not multiples of any tile (attn-tile's linalg.matmul
// kernels, issue: tile-level GEMM): zero-initialised and accumulating, in
// bf16, f16 and f32. attn-run checks each against the float64 reference.

// c = a * b, the init a linalg.fill of 0.0: 130 x 70 x 50.
func.func @tails_bf16(%a: tensor<130x50xbf16>, %b: tensor<50x70xbf16>) -> tensor<130x70xbf16> {
  %zero = arith.constant 0.0 : bf16
  %empty = tensor.empty() : tensor<130x70xbf16>
  %init = linalg.fill ins(%zero : bf16) outs(%empty : tensor<130x70xbf16>) -> tensor<130x70xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<130x50xbf16>, tensor<50x70xbf16>) outs(%init : tensor<130x70xbf16>) -> tensor<130x70xbf16>
  return %c : tensor<130x70xbf16>
}

// c = c0 + a * b: the init is the function's third argument.
func.func @tails_acc_f32(%a: tensor<130x50xf32>, %b: tensor<50x70xf32>, %c0: tensor<130x70xf32>) -> tensor<130x70xf32> {
  %c = linalg.matmul ins(%a, %b : tensor<130x50xf32>, tensor<50x70xf32>) outs(%c0 : tensor<130x70xf32>) -> tensor<130x70xf32>
  return %c : tensor<130x70xf32>
}

// The same in bf16: c is read in bf16, accumulated in f32, rounded once.
func.func @tails_acc_bf16(%a: tensor<130x50xbf16>, %b: tensor<50x70xbf16>, %c0: tensor<130x70xbf16>) -> tensor<130x70xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<130x50xbf16>, tensor<50x70xbf16>) outs(%c0 : tensor<130x70xbf16>) -> tensor<130x70xbf16>
  return %c : tensor<130x70xbf16>
}

// A tensor.empty init counts as zeros. K spans several steps: 3 x 200.
func.func @long_k_f16(%a: tensor<33x200xf16>, %b: tensor<200x17xf16>) -> tensor<33x17xf16> {
  %empty = tensor.empty() : tensor<33x17xf16>
  %c = linalg.matmul ins(%a, %b : tensor<33x200xf16>, tensor<200x17xf16>) outs(%empty : tensor<33x17xf16>) -> tensor<33x17xf16>
  return %c : tensor<33x17xf16>
}

// Degenerate shapes: a row times a column, and a single element.
func.func @outer_f32(%a: tensor<65x1xf32>, %b: tensor<1x3xf32>) -> tensor<65x3xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<65x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%empty : tensor<65x3xf32>) -> tensor<65x3xf32>
  %c = linalg.matmul ins(%a, %b : tensor<65x1xf32>, tensor<1x3xf32>) outs(%init : tensor<65x3xf32>) -> tensor<65x3xf32>
  return %c : tensor<65x3xf32>
}

func.func @scalar_f32(%a: tensor<1x1xf32>, %b: tensor<1x1xf32>, %c0: tensor<1x1xf32>) -> tensor<1x1xf32> {
  %c = linalg.matmul ins(%a, %b : tensor<1x1xf32>, tensor<1x1xf32>) outs(%c0 : tensor<1x1xf32>) -> tensor<1x1xf32>
  return %c : tensor<1x1xf32>
}
