// One query, one key: the smallest attention.
func.func @tiny_f32(%q: tensor<1x1x1x8xf32>, %k: tensor<1x1x1x8xf32>, %v: tensor<1x1x1x8xf32>) -> tensor<1x1x1x8xf32> {
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 8 : i64, layout = "rotate_half"} : (tensor<1x1x1x8xf32>) -> tensor<1x1x1x8xf32>
  %kr = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 8 : i64, layout = "rotate_half"} : (tensor<1x1x1x8xf32>) -> tensor<1x1x1x8xf32>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x1x1x8xf32>, tensor<1x1x1x8xf32>) -> tensor<1x1x1x1xf32>
  %s1 = "attn.scale"(%s) {scale = 0.35355339059327373 : f64} : (tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
  %s2 = "attn.causal"(%s1) : (tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
  %p = "attn.softmax"(%s2) : (tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x1x1x1xf32>, tensor<1x1x1x8xf32>) -> tensor<1x1x1x8xf32>
  return %o : tensor<1x1x1x8xf32>
}
