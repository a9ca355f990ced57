// Input of bench/gpu_check.sh: RoPE at explicit positions of q and k (packed sequences: a position per (batch, row), attn-run draws them increasing with gaps or at random), causal on the rows, GQA 4/2, bf16, d 128 (rotary dim 128: every placement), two batches, a tail (N = 300).
func.func @h128_rope_positions_causal(%q: tensor<2x4x300x128xbf16>, %k: tensor<2x2x300x128xbf16>, %v: tensor<2x2x300x128xbf16>, %qp: tensor<2x300xi32>, %kp: tensor<2x300xi32>) -> tensor<2x4x300x128xbf16> {
  %o = "attn.fused"(%q, %k, %v, %qp, %kp) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 1>, scale = 0.08838834764831845 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<2x4x300x128xbf16>, tensor<2x2x300x128xbf16>, tensor<2x2x300x128xbf16>, tensor<2x300xi32>, tensor<2x300xi32>) -> tensor<2x4x300x128xbf16>
  return %o : tensor<2x4x300x128xbf16>
}
