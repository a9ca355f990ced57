// Input of test/GPU/hopper.test (h64_interleaved_partial): head dim 64, f16,
// causal, interleaved RoPE on the first 32 dims, 451 rows.
func.func @h64_interleaved_partial(%q: tensor<1x3x451x64xf16>, %k: tensor<1x3x451x64xf16>, %v: tensor<1x3x451x64xf16>) -> tensor<1x3x451x64xf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved"}} : (tensor<1x3x451x64xf16>, tensor<1x3x451x64xf16>, tensor<1x3x451x64xf16>) -> tensor<1x3x451x64xf16>
  return %o : tensor<1x3x451x64xf16>
}
