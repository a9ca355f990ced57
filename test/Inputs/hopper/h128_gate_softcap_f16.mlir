// Input of bench/gpu_check.sh: the SAS gate (a per-key-block log bias, attn-tile's body) between the scale and softcap, f16, d 128, GQA, not causal, a tail (N = 600) and a partial last gate block.
func.func @h128_gate_softcap_f16(%q: tensor<1x4x600x128xf16>, %k: tensor<1x2x600x128xf16>, %v: tensor<1x2x600x128xf16>, %g: tensor<1x4x600x10xf32>) -> tensor<1x4x600x128xf16> {
  %o = "attn.fused"(%q, %k, %v, %g) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = false, softcap = 5.0 : f64, gate_block = 64 : i64, mods = ["scale", "gate", "softcap"]} : (tensor<1x4x600x128xf16>, tensor<1x2x600x128xf16>, tensor<1x2x600x128xf16>, tensor<1x4x600x10xf32>) -> tensor<1x4x600x128xf16>
  return %o : tensor<1x4x600x128xf16>
}
