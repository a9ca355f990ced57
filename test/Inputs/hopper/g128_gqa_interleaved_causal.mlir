// Input of bench/gpu_check.sh's backward checks (issue 29): head dim 128,
// GQA (8 query heads on 2 K/V heads: dk and dv sum over a group's four),
// causal, interleaved RoPE over the whole head, bf16, N = 384.
func.func @g128_gqa_interleaved_causal(%q: tensor<1x8x384x128xbf16>, %k: tensor<1x2x384x128xbf16>, %v: tensor<1x2x384x128xbf16>) -> tensor<1x8x384x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = true, rope = {theta = 500000.0 : f64, rotary_dim = 128 : i64, layout = "interleaved"}} : (tensor<1x8x384x128xbf16>, tensor<1x2x384x128xbf16>, tensor<1x2x384x128xbf16>) -> tensor<1x8x384x128xbf16>
  return %o : tensor<1x8x384x128xbf16>
}
