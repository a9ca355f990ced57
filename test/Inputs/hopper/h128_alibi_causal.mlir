// Input of bench/gpu_check.sh: ALiBi (max_bias 8), causal, a tail (N = 777).
func.func @h128_alibi_causal(%q: tensor<2x4x777x128xbf16>, %k: tensor<2x4x777x128xbf16>, %v: tensor<2x4x777x128xbf16>) -> tensor<2x4x777x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = true, alibi = 8.0 : f64, mods = ["scale", "alibi"]} : (tensor<2x4x777x128xbf16>, tensor<2x4x777x128xbf16>, tensor<2x4x777x128xbf16>) -> tensor<2x4x777x128xbf16>
  return %o : tensor<2x4x777x128xbf16>
}
