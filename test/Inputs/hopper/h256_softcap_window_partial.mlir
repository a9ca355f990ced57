// Input of bench/gpu_check.sh: head dim 256 with softcap (Gemma 2's, on scaled scores), a causal sliding window of 300 keys, GQA 4/2, and interleaved RoPE over half the head (rotary dim 128: K rotated by the producer warps, fused), two batches, a tail (N = 700).
func.func @h256_softcap_window_partial(%q: tensor<2x4x700x256xbf16>, %k: tensor<2x2x700x256xbf16>, %v: tensor<2x2x700x256xbf16>) -> tensor<2x4x700x256xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.0625 : f64, causal = true, softcap = 30.0 : f64, mods = ["scale", "softcap"], window = array<i64: 300, -1>, rope = {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "interleaved"}} : (tensor<2x4x700x256xbf16>, tensor<2x2x700x256xbf16>, tensor<2x2x700x256xbf16>) -> tensor<2x4x700x256xbf16>
  return %o : tensor<2x4x700x256xbf16>
}
