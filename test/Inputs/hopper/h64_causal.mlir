// Input of test/GPU/hopper.test (h64_causal).
func.func @h64_causal(%q: tensor<1x8x2048x64xbf16>, %k: tensor<1x8x2048x64xbf16>, %v: tensor<1x8x2048x64xbf16>) -> tensor<1x8x2048x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<1x8x2048x64xbf16>, tensor<1x8x2048x64xbf16>, tensor<1x8x2048x64xbf16>) -> tensor<1x8x2048x64xbf16>
  return %o : tensor<1x8x2048x64xbf16>
}
