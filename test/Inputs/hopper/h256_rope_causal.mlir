// Input of bench/gpu_check.sh (h256_rope_causal): head dim 256 (Gemma's), RoPE over the whole head, causal, a tail (N = 300).
func.func @h256_rope_causal(%q: tensor<1x4x300x256xbf16>, %k: tensor<1x4x300x256xbf16>, %v: tensor<1x4x300x256xbf16>) -> tensor<1x4x300x256xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.0625 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 256 : i64, layout = "rotate_half"}} : (tensor<1x4x300x256xbf16>, tensor<1x4x300x256xbf16>, tensor<1x4x300x256xbf16>) -> tensor<1x4x300x256xbf16>
  return %o : tensor<1x4x300x256xbf16>
}
