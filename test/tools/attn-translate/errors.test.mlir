// Input of errors.test: q and k disagree on the head dim.
func.func @bad(%q: tensor<1x1x8x64xf32>, %k: tensor<1x1x8x32xf32>, %v: tensor<1x1x8x64xf32>) -> tensor<1x1x8x64xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<1x1x8x64xf32>, tensor<1x1x8x32xf32>, tensor<1x1x8x64xf32>) -> tensor<1x1x8x64xf32>
  return %o : tensor<1x1x8x64xf32>
}
