// Input of bench/gpu_check.sh: packed sequences, as a user writes them: a document mask (segment ids), causal, and RoPE at each token's own position (q and k), interleaved on a partial rotary dim (32 of 64: the fused and ahead placements), GQA 4/1, f16, two batches, a tail (N = 333).
func.func @h64_rope_positions_document(%q: tensor<2x4x333x64xf16>, %k: tensor<2x1x333x64xf16>, %v: tensor<2x1x333x64xf16>, %qs: tensor<2x333xi32>, %ks: tensor<2x333xi32>, %qp: tensor<2x333xi32>, %kp: tensor<2x333xi32>) -> tensor<2x4x333x64xf16> {
  %o = "attn.fused"(%q, %k, %v, %qs, %ks, %qp, %kp) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 1, 1>, scale = 0.125 : f64, causal = true, rope = {theta = 500000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved"}} : (tensor<2x4x333x64xf16>, tensor<2x1x333x64xf16>, tensor<2x1x333x64xf16>, tensor<2x333xi32>, tensor<2x333xi32>, tensor<2x333xi32>, tensor<2x333xi32>) -> tensor<2x4x333x64xf16>
  return %o : tensor<2x4x333x64xf16>
}
