// No RoPE, no mask, f16, N=200.
func.func @plain_f16(%q: tensor<1x4x200x64xf16>, %k: tensor<1x4x200x64xf16>, %v: tensor<1x4x200x64xf16>) -> tensor<1x4x200x64xf16> {
  %s = "attn.qk"(%q, %k) : (tensor<1x4x200x64xf16>, tensor<1x4x200x64xf16>) -> tensor<1x4x200x200xf16>
  %s1 = "attn.scale"(%s) {scale = 0.125 : f64} : (tensor<1x4x200x200xf16>) -> tensor<1x4x200x200xf16>
  %p = "attn.softmax"(%s1) : (tensor<1x4x200x200xf16>) -> tensor<1x4x200x200xf16>
  %o = "attn.pv"(%p, %v) : (tensor<1x4x200x200xf16>, tensor<1x4x200x64xf16>) -> tensor<1x4x200x64xf16>
  return %o : tensor<1x4x200x64xf16>
}
