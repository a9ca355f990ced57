// Input of bench/gpu_check.sh: explicit RoPE positions of q only (k's from offset 0), a sliding window (100 keys back, 20 ahead) on the rows, rotary dim 48 of 64 (12 slots: the consumers rotate Q pair by pair), bf16, N = 260 queries over M = 390 keys, GQA 6/2.
func.func @h64_rope_positions_q_window(%q: tensor<1x6x260x64xbf16>, %k: tensor<1x2x390x64xbf16>, %v: tensor<1x2x390x64xbf16>, %qp: tensor<1x260xi32>) -> tensor<1x6x260x64xbf16> {
  %o = "attn.fused"(%q, %k, %v, %qp) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 0>, scale = 0.125 : f64, causal = false, window = array<i64: 100, 20>, rope = {theta = 10000.0 : f64, rotary_dim = 48 : i64, layout = "rotate_half"}} : (tensor<1x6x260x64xbf16>, tensor<1x2x390x64xbf16>, tensor<1x2x390x64xbf16>, tensor<1x260xi32>) -> tensor<1x6x260x64xbf16>
  return %o : tensor<1x6x260x64xbf16>
}
