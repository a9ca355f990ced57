// RoPE + causal attention, the program the README compiles: Llama-style
// rotate-half RoPE on q and k, scale 1/sqrt(64), causal mask, softmax, and
// the product with v. B=1, H=8, N=1000 (not a multiple of the tile), d=64.
func.func @rope_causal(%q: tensor<1x8x1000x64xf32>, %k: tensor<1x8x1000x64xf32>,
                       %v: tensor<1x8x1000x64xf32>) -> tensor<1x8x1000x64xf32> {
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}
      : (tensor<1x8x1000x64xf32>) -> tensor<1x8x1000x64xf32>
  %kr = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}
      : (tensor<1x8x1000x64xf32>) -> tensor<1x8x1000x64xf32>
  %s = "attn.qk"(%qr, %kr)
      : (tensor<1x8x1000x64xf32>, tensor<1x8x1000x64xf32>) -> tensor<1x8x1000x1000xf32>
  %ss = "attn.scale"(%s) {scale = 0.125 : f64}
      : (tensor<1x8x1000x1000xf32>) -> tensor<1x8x1000x1000xf32>
  %sc = "attn.causal"(%ss) : (tensor<1x8x1000x1000xf32>) -> tensor<1x8x1000x1000xf32>
  %p = "attn.softmax"(%sc) : (tensor<1x8x1000x1000xf32>) -> tensor<1x8x1000x1000xf32>
  %o = "attn.pv"(%p, %v)
      : (tensor<1x8x1000x1000xf32>, tensor<1x8x1000x64xf32>) -> tensor<1x8x1000x64xf32>
  return %o : tensor<1x8x1000x64xf32>
}
