// Input of bench/gpu_check.sh's backward checks (issue 29): head dim 64,
// no mask, RoPE (rotate-half over the whole head, q and k at their own
// offsets), f16, N = 512 (whole blocks).
func.func @g64_rope_full_f16(%q: tensor<1x4x512x64xf16>, %k: tensor<1x4x512x64xf16>, %v: tensor<1x4x512x64xf16>) -> tensor<1x4x512x64xf16> {
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half", offset = 7 : i64} : (tensor<1x4x512x64xf16>) -> tensor<1x4x512x64xf16>
  %kr = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half", offset = 3 : i64} : (tensor<1x4x512x64xf16>) -> tensor<1x4x512x64xf16>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x4x512x64xf16>, tensor<1x4x512x64xf16>) -> tensor<1x4x512x512xf16>
  %s1 = "attn.scale"(%s) {scale = 0.125 : f64} : (tensor<1x4x512x512xf16>) -> tensor<1x4x512x512xf16>
  %p = "attn.softmax"(%s1) : (tensor<1x4x512x512xf16>) -> tensor<1x4x512x512xf16>
  %o = "attn.pv"(%p, %v) : (tensor<1x4x512x512xf16>, tensor<1x4x512x64xf16>) -> tensor<1x4x512x64xf16>
  return %o : tensor<1x4x512x64xf16>
}
