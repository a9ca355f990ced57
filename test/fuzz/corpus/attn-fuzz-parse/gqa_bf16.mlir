// GQA 8/2 in bf16, causal, partial interleaved RoPE (64 of 128 dims, theta 5e5), N=333.
func.func @gqa_bf16(%q: tensor<2x8x333x128xbf16>, %k: tensor<2x2x333x128xbf16>, %v: tensor<2x2x333x128xbf16>) -> tensor<2x8x333x128xbf16> {
  %qr = "attn.rope"(%q) {theta = 500000.0 : f64, rotary_dim = 64 : i64, layout = "interleaved"} : (tensor<2x8x333x128xbf16>) -> tensor<2x8x333x128xbf16>
  %kr = "attn.rope"(%k) {theta = 500000.0 : f64, rotary_dim = 64 : i64, layout = "interleaved"} : (tensor<2x2x333x128xbf16>) -> tensor<2x2x333x128xbf16>
  %s = "attn.qk"(%qr, %kr) : (tensor<2x8x333x128xbf16>, tensor<2x2x333x128xbf16>) -> tensor<2x8x333x333xbf16>
  %s1 = "attn.scale"(%s) {scale = 0.08838834764831845 : f64} : (tensor<2x8x333x333xbf16>) -> tensor<2x8x333x333xbf16>
  %s2 = "attn.causal"(%s1) : (tensor<2x8x333x333xbf16>) -> tensor<2x8x333x333xbf16>
  %p = "attn.softmax"(%s2) : (tensor<2x8x333x333xbf16>) -> tensor<2x8x333x333xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<2x8x333x333xbf16>, tensor<2x2x333x128xbf16>) -> tensor<2x8x333x128xbf16>
  return %o : tensor<2x8x333x128xbf16>
}
