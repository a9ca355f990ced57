// Input of bench/gpu_check.sh: h64_gqa_rope_causal with RoPE at explicit positions of q and k (packed sequences), so that each placement, three consumers (their stashed f32 turns) and Q by the producer run it as they run the offsets' program: GQA 8/2, bf16, d 64, two batches, a tail (N = 1000).
func.func @h64_rope_positions_gqa_causal(%q: tensor<2x8x1000x64xbf16>, %k: tensor<2x2x1000x64xbf16>, %v: tensor<2x2x1000x64xbf16>, %qp: tensor<2x1000xi32>, %kp: tensor<2x1000xi32>) -> tensor<2x8x1000x64xbf16> {
  %o = "attn.fused"(%q, %k, %v, %qp, %kp) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 1>, scale = 0.125 : f64, causal = true, rope = {theta = 500000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<2x8x1000x64xbf16>, tensor<2x2x1000x64xbf16>, tensor<2x2x1000x64xbf16>, tensor<2x1000xi32>, tensor<2x1000xi32>) -> tensor<2x8x1000x64xbf16>
  return %o : tensor<2x8x1000x64xbf16>
}
