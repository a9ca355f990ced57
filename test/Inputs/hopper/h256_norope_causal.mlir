// Input of bench/gpu_check.sh (h256_norope_causal): head dim 256, causal, no RoPE, a tail (N = 200).
func.func @h256_norope_causal(%q: tensor<1x2x200x256xbf16>, %k: tensor<1x2x200x256xbf16>, %v: tensor<1x2x200x256xbf16>) -> tensor<1x2x200x256xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.0625 : f64, causal = true} : (tensor<1x2x200x256xbf16>, tensor<1x2x200x256xbf16>, tensor<1x2x200x256xbf16>) -> tensor<1x2x200x256xbf16>
  return %o : tensor<1x2x200x256xbf16>
}
