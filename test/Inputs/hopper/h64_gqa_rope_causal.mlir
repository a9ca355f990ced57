// Input of test/GPU/hopper.test (h64_gqa_rope_causal).
func.func @h64_gqa_rope_causal(%q: tensor<2x8x1000x64xbf16>, %k: tensor<2x2x1000x64xbf16>, %v: tensor<2x2x1000x64xbf16>) -> tensor<2x8x1000x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 500000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<2x8x1000x64xbf16>, tensor<2x2x1000x64xbf16>, tensor<2x2x1000x64xbf16>) -> tensor<2x8x1000x64xbf16>
  return %o : tensor<2x8x1000x64xbf16>
}
