// Input of test/GPU/hopper.test (h128_norope_causal).
func.func @h128_norope_causal(%q: tensor<1x2x128x128xbf16>, %k: tensor<1x2x128x128xbf16>, %v: tensor<1x2x128x128xbf16>) -> tensor<1x2x128x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = true} : (tensor<1x2x128x128xbf16>, tensor<1x2x128x128xbf16>, tensor<1x2x128x128xbf16>) -> tensor<1x2x128x128xbf16>
  return %o : tensor<1x2x128x128xbf16>
}
