// Input of bench/gpu_check.sh: a causal sliding window of 300 keys with RoPE, GQA, a tail (N = 1500): key blocks before the window are skipped.
func.func @h64_window_rope(%q: tensor<1x4x1500x64xbf16>, %k: tensor<1x2x1500x64xbf16>, %v: tensor<1x2x1500x64xbf16>) -> tensor<1x4x1500x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, window = array<i64: 300, -1>, rope = {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<1x4x1500x64xbf16>, tensor<1x2x1500x64xbf16>, tensor<1x2x1500x64xbf16>) -> tensor<1x4x1500x64xbf16>
  return %o : tensor<1x4x1500x64xbf16>
}
