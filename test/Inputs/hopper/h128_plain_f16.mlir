// Input of test/GPU/hopper.test (h128_plain_f16).
func.func @h128_plain_f16(%q: tensor<1x4x256x128xf16>, %k: tensor<1x4x256x128xf16>, %v: tensor<1x4x256x128xf16>) -> tensor<1x4x256x128xf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = false} : (tensor<1x4x256x128xf16>, tensor<1x4x256x128xf16>, tensor<1x4x256x128xf16>) -> tensor<1x4x256x128xf16>
  return %o : tensor<1x4x256x128xf16>
}
