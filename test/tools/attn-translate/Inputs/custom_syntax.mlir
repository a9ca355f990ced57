func.func @f(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32> {
  %s = attn.qk %q, %k : tensor<1x1x4x8xf32>
  return %s : tensor<1x1x4x4xf32>
}
