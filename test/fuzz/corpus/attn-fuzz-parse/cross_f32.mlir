// 100 queries over 257 keys, value dim 48 != head dim 32, GQA 2/1, RoPE, f32.
func.func @cross_f32(%q: tensor<1x2x100x32xf32>, %k: tensor<1x1x257x32xf32>, %v: tensor<1x1x257x48xf32>) -> tensor<1x2x100x48xf32> {
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "rotate_half"} : (tensor<1x2x100x32xf32>) -> tensor<1x2x100x32xf32>
  %kr = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "rotate_half"} : (tensor<1x1x257x32xf32>) -> tensor<1x1x257x32xf32>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x2x100x32xf32>, tensor<1x1x257x32xf32>) -> tensor<1x2x100x257xf32>
  %s1 = "attn.scale"(%s) {scale = 0.17677669529663687 : f64} : (tensor<1x2x100x257xf32>) -> tensor<1x2x100x257xf32>
  %p = "attn.softmax"(%s1) : (tensor<1x2x100x257xf32>) -> tensor<1x2x100x257xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x100x257xf32>, tensor<1x1x257x48xf32>) -> tensor<1x2x100x48xf32>
  return %o : tensor<1x2x100x48xf32>
}
