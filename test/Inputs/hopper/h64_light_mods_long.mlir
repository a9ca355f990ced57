// Input of bench/gpu_check.sh: ALiBi then softcap (attn-tile's bodies) on scaled scores, causal, GQA 4/2, f16, d 64, N = 2100 (a tail): with them alone the Hopper kernel keeps its three consumers (attn_hopper_fns_light), as it did when they were special cases.
func.func @h64_light_mods_long(%q: tensor<1x4x2100x64xf16>, %k: tensor<1x2x2100x64xf16>, %v: tensor<1x2x2100x64xf16>) -> tensor<1x4x2100x64xf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, alibi = 8.0 : f64, softcap = 20.0 : f64, mods = ["scale", "alibi", "softcap"]} : (tensor<1x4x2100x64xf16>, tensor<1x2x2100x64xf16>, tensor<1x2x2100x64xf16>) -> tensor<1x4x2100x64xf16>
  return %o : tensor<1x4x2100x64xf16>
}
