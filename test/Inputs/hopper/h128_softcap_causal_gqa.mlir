// Input of bench/gpu_check.sh: softcap (Gemma 2's, on scaled scores), causal, GQA, a tail (N = 1000).
func.func @h128_softcap_causal_gqa(%q: tensor<1x8x1000x128xbf16>, %k: tensor<1x2x1000x128xbf16>, %v: tensor<1x2x1000x128xbf16>) -> tensor<1x8x1000x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = true, softcap = 2.0 : f64, mods = ["scale", "softcap"]} : (tensor<1x8x1000x128xbf16>, tensor<1x2x1000x128xbf16>, tensor<1x2x1000x128xbf16>) -> tensor<1x8x1000x128xbf16>
  return %o : tensor<1x8x1000x128xbf16>
}
