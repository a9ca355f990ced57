// Input of bench/gpu_check.sh's backward checks (issue 29): head dim 128,
// no mask, no RoPE, bf16, 200 queries on 333 keys (both ragged).
func.func @g128_cross_plain(%q: tensor<2x2x200x128xbf16>, %k: tensor<2x2x333x128xbf16>, %v: tensor<2x2x333x128xbf16>) -> tensor<2x2x200x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = false} : (tensor<2x2x200x128xbf16>, tensor<2x2x333x128xbf16>, tensor<2x2x333x128xbf16>) -> tensor<2x2x200x128xbf16>
  return %o : tensor<2x2x200x128xbf16>
}
