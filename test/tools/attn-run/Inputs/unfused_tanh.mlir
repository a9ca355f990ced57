// A math.tanh between attn.qk and attn.softmax: attn-fuse cannot fuse it.
func.func @tanh(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %t = math.tanh %s : tensor<1x1x4x4xf32>
  %p = "attn.softmax"(%t) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}
