// Decode programs with an append (issue 30): an attn.cache_append of the
// new tokens' keys and values feeding an attn.fused_decode over the caches
// it returns, as attn.decode(k_new=, v_new=) builds them.

// GQA 32/8 d128 bf16, contiguous, one new token, RoPE on q and the new key.
func.func @gqa_rope(%q: tensor<2x32x1x128xbf16>, %k: tensor<2x8x4096x128xbf16>, %v: tensor<2x8x4096x128xbf16>, %len: tensor<2xi32>, %kn: tensor<2x8x1x128xbf16>, %vn: tensor<2x8x1x128xbf16>) -> (tensor<2x32x1x128xbf16>, tensor<2x8x4096x128xbf16>, tensor<2x8x4096x128xbf16>) {
  %k2, %v2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous", rope = {theta = 500000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<2x8x4096x128xbf16>, tensor<2x8x4096x128xbf16>, tensor<2xi32>, tensor<2x8x1x128xbf16>, tensor<2x8x1x128xbf16>) -> (tensor<2x8x4096x128xbf16>, tensor<2x8x4096x128xbf16>)
  %o = "attn.fused_decode"(%q, %k2, %v2, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.08838834764831843 : f64, causal = true, cache_layout = "contiguous", rope = {theta = 500000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<2x32x1x128xbf16>, tensor<2x8x4096x128xbf16>, tensor<2x8x4096x128xbf16>, tensor<2xi32>) -> tensor<2x32x1x128xbf16>
  return %o, %k2, %v2 : tensor<2x32x1x128xbf16>, tensor<2x8x4096x128xbf16>, tensor<2x8x4096x128xbf16>
}

// Paged (pages of 16) f16 d64, 4 speculative tokens appended, interleaved
// RoPE on 32 columns, softcap.
func.func @paged_spec(%q: tensor<3x8x4x64xf16>, %k: tensor<58x2x16x64xf16>, %v: tensor<58x2x16x64xf16>, %len: tensor<3xi32>, %table: tensor<3x19xi32>, %kn: tensor<3x2x4x64xf16>, %vn: tensor<3x2x4x64xf16>) -> (tensor<3x8x4x64xf16>, tensor<58x2x16x64xf16>, tensor<58x2x16x64xf16>) {
  %k2, %v2 = "attn.cache_append"(%k, %v, %len, %table, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, cache_layout = "paged", page_size = 16 : i64, rope = {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved"}} : (tensor<58x2x16x64xf16>, tensor<58x2x16x64xf16>, tensor<3xi32>, tensor<3x19xi32>, tensor<3x2x4x64xf16>, tensor<3x2x4x64xf16>) -> (tensor<58x2x16x64xf16>, tensor<58x2x16x64xf16>)
  %o = "attn.fused_decode"(%q, %k2, %v2, %len, %table) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.125 : f64, causal = true, cache_layout = "paged", page_size = 16 : i64, softcap = 20.0 : f64, mods = ["scale", "softcap"], rope = {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved"}} : (tensor<3x8x4x64xf16>, tensor<58x2x16x64xf16>, tensor<58x2x16x64xf16>, tensor<3xi32>, tensor<3x19xi32>) -> tensor<3x8x4x64xf16>
  return %o, %k2, %v2 : tensor<3x8x4x64xf16>, tensor<58x2x16x64xf16>, tensor<58x2x16x64xf16>
}

// MHA d256 bf16, paged (pages of 64), two new tokens, no RoPE.
func.func @mha_d256(%q: tensor<2x4x2x256xbf16>, %k: tensor<17x4x64x256xbf16>, %v: tensor<17x4x64x256xbf16>, %len: tensor<2xi32>, %table: tensor<2x8xi32>, %kn: tensor<2x4x2x256xbf16>, %vn: tensor<2x4x2x256xbf16>) -> (tensor<2x4x2x256xbf16>, tensor<17x4x64x256xbf16>, tensor<17x4x64x256xbf16>) {
  %k2, %v2 = "attn.cache_append"(%k, %v, %len, %table, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, cache_layout = "paged", page_size = 64 : i64} : (tensor<17x4x64x256xbf16>, tensor<17x4x64x256xbf16>, tensor<2xi32>, tensor<2x8xi32>, tensor<2x4x2x256xbf16>, tensor<2x4x2x256xbf16>) -> (tensor<17x4x64x256xbf16>, tensor<17x4x64x256xbf16>)
  %o = "attn.fused_decode"(%q, %k2, %v2, %len, %table) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.0625 : f64, causal = true, cache_layout = "paged", page_size = 64 : i64} : (tensor<2x4x2x256xbf16>, tensor<17x4x64x256xbf16>, tensor<17x4x64x256xbf16>, tensor<2xi32>, tensor<2x8xi32>) -> tensor<2x4x2x256xbf16>
  return %o, %k2, %v2 : tensor<2x4x2x256xbf16>, tensor<17x4x64x256xbf16>, tensor<17x4x64x256xbf16>
}
