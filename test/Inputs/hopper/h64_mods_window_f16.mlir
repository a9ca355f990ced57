// Input of bench/gpu_check.sh: f16, ALiBi then softcap (the program's order), a two-sided window (100 keys back, 40 ahead), not causal, a tail (N = 600).
func.func @h64_mods_window_f16(%q: tensor<1x4x600x64xf16>, %k: tensor<1x4x600x64xf16>, %v: tensor<1x4x600x64xf16>) -> tensor<1x4x600x64xf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, window = array<i64: 100, 40>, alibi = 4.0 : f64, softcap = 3.0 : f64, mods = ["scale", "alibi", "softcap"]} : (tensor<1x4x600x64xf16>, tensor<1x4x600x64xf16>, tensor<1x4x600x64xf16>) -> tensor<1x4x600x64xf16>
  return %o : tensor<1x4x600x64xf16>
}
