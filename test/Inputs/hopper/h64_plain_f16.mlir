// Input of test/GPU/hopper.test (h64_plain_f16): head dim 64, f16, not causal,
// 300 query rows against 451 keys (tails in both).
func.func @h64_plain_f16(%q: tensor<1x4x300x64xf16>, %k: tensor<1x4x451x64xf16>, %v: tensor<1x4x451x64xf16>) -> tensor<1x4x300x64xf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x4x300x64xf16>, tensor<1x4x451x64xf16>, tensor<1x4x451x64xf16>) -> tensor<1x4x300x64xf16>
  return %o : tensor<1x4x300x64xf16>
}
