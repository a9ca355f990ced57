// Input of test/GPU/hopper.test (h128_interleaved_full): GQA 4/2, bf16,
// causal, interleaved RoPE on all 128 dims (so K is rotated by its own
// kernel, interleaved), 777 rows.
func.func @h128_interleaved_full(%q: tensor<1x4x777x128xbf16>, %k: tensor<1x2x777x128xbf16>, %v: tensor<1x2x777x128xbf16>) -> tensor<1x4x777x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "interleaved"}} : (tensor<1x4x777x128xbf16>, tensor<1x2x777x128xbf16>, tensor<1x2x777x128xbf16>) -> tensor<1x4x777x128xbf16>
  return %o : tensor<1x4x777x128xbf16>
}
