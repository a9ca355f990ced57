// Causal without RoPE, batch 3, N=130 (two tiles and a 2-row tail).
func.func @causal_f32(%q: tensor<3x2x130x16xf32>, %k: tensor<3x2x130x16xf32>, %v: tensor<3x2x130x16xf32>) -> tensor<3x2x130x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<3x2x130x16xf32>, tensor<3x2x130x16xf32>) -> tensor<3x2x130x130xf32>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<3x2x130x130xf32>) -> tensor<3x2x130x130xf32>
  %s2 = "attn.causal"(%s1) : (tensor<3x2x130x130xf32>) -> tensor<3x2x130x130xf32>
  %p = "attn.softmax"(%s2) : (tensor<3x2x130x130xf32>) -> tensor<3x2x130x130xf32>
  %o = "attn.pv"(%p, %v) : (tensor<3x2x130x130xf32>, tensor<3x2x130x16xf32>) -> tensor<3x2x130x16xf32>
  return %o : tensor<3x2x130x16xf32>
}
