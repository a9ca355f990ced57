// A layer's attention from its input: q and k projected from x into heads
// (GQA 4/2, d=128), RoPE on both, causal attention with v given. The
// producer placement rotates q and k in the projections' GEMM epilogue.
func.func @layer(%x: tensor<2x256x512xbf16>, %wq: tensor<512x512xbf16>, %wk: tensor<512x256xbf16>,
                 %v: tensor<2x2x256x128xbf16>) -> tensor<2x4x256x128xbf16> {
  %q = "attn.project"(%x, %wq) : (tensor<2x256x512xbf16>, tensor<512x512xbf16>) -> tensor<2x4x256x128xbf16>
  %k = "attn.project"(%x, %wk) : (tensor<2x256x512xbf16>, tensor<512x256xbf16>) -> tensor<2x2x256x128xbf16>
  %qr = "attn.rope"(%q) {theta = 500000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"} : (tensor<2x4x256x128xbf16>) -> tensor<2x4x256x128xbf16>
  %kr = "attn.rope"(%k) {theta = 500000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"} : (tensor<2x2x256x128xbf16>) -> tensor<2x2x256x128xbf16>
  %s = "attn.qk"(%qr, %kr) : (tensor<2x4x256x128xbf16>, tensor<2x2x256x128xbf16>) -> tensor<2x4x256x256xbf16>
  %ss = "attn.scale"(%s) {scale = 0.08838834764831845 : f64} : (tensor<2x4x256x256xbf16>) -> tensor<2x4x256x256xbf16>
  %sc = "attn.causal"(%ss) : (tensor<2x4x256x256xbf16>) -> tensor<2x4x256x256xbf16>
  %p = "attn.softmax"(%sc) : (tensor<2x4x256x256xbf16>) -> tensor<2x4x256x256xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<2x4x256x256xbf16>, tensor<2x2x256x128xbf16>) -> tensor<2x4x256x128xbf16>
  return %o : tensor<2x4x256x128xbf16>
}
