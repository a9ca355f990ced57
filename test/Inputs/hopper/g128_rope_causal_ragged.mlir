// Input of bench/gpu_check.sh's backward checks (issue 29): head dim 128,
// causal, RoPE (rotate-half over the whole head), bf16, N = 777 (a partial
// last key block and query block).
func.func @g128_rope_causal_ragged(%q: tensor<1x4x777x128xbf16>, %k: tensor<1x4x777x128xbf16>, %v: tensor<1x4x777x128xbf16>) -> tensor<1x4x777x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<1x4x777x128xbf16>, tensor<1x4x777x128xbf16>, tensor<1x4x777x128xbf16>) -> tensor<1x4x777x128xbf16>
  return %o : tensor<1x4x777x128xbf16>
}
