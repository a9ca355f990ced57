// Decode programs (attn.fused_decode, issue 30) that the CPU path, the GPU
// decode kernel (lower-tile-to-decode) and bench/gpu_check.sh check against
// attn_reference_decode: contiguous and paged caches (pages of 16 to 256),
// MHA and GQA, 1 to 16 query rows, head dims 64, 128 and 256, f16 and bf16,
// RoPE (rotate-half, interleaved, partial), softcap before or after the
// scale, ALiBi, windows; attn-run draws the lengths per sequence (the
// first full, the second as short as its rows allow) and the block table.

func.func @mha_contiguous_d64(%q: tensor<3x4x1x64xf16>, %k: tensor<3x4x300x64xf16>, %v: tensor<3x4x300x64xf16>, %len: tensor<3xi32>) -> tensor<3x4x1x64xf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = false, cache_layout = "contiguous"} : (tensor<3x4x1x64xf16>, tensor<3x4x300x64xf16>, tensor<3x4x300x64xf16>, tensor<3xi32>) -> tensor<3x4x1x64xf16>
  return %o : tensor<3x4x1x64xf16>
}

func.func @gqa_rope_d128(%q: tensor<2x8x4x128xbf16>, %k: tensor<2x2x200x128xbf16>, %v: tensor<2x2x200x128xbf16>, %len: tensor<2xi32>) -> tensor<2x8x4x128xbf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.08838834764831843 : f64, causal = true, cache_layout = "contiguous", rope = {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<2x8x4x128xbf16>, tensor<2x2x200x128xbf16>, tensor<2x2x200x128xbf16>, tensor<2xi32>) -> tensor<2x8x4x128xbf16>
  return %o : tensor<2x8x4x128xbf16>
}

func.func @paged16_softcap_d64(%q: tensor<3x8x1x64xf16>, %k: tensor<40x2x16x64xf16>, %v: tensor<40x2x16x64xf16>, %len: tensor<3xi32>, %t: tensor<3x12xi32>) -> tensor<3x8x1x64xf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.125 : f64, causal = true, cache_layout = "paged", page_size = 16 : i64, softcap = 20.0 : f64, mods = ["scale", "softcap"]} : (tensor<3x8x1x64xf16>, tensor<40x2x16x64xf16>, tensor<40x2x16x64xf16>, tensor<3xi32>, tensor<3x12xi32>) -> tensor<3x8x1x64xf16>
  return %o : tensor<3x8x1x64xf16>
}

func.func @paged64_spec16_alibi_window(%q: tensor<2x4x16x128xbf16>, %k: tensor<12x1x64x128xbf16>, %v: tensor<12x1x64x128xbf16>, %len: tensor<2xi32>, %t: tensor<2x6xi32>) -> tensor<2x4x16x128xbf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.08838834764831843 : f64, causal = true, cache_layout = "paged", page_size = 64 : i64, alibi = 8.0 : f64, window = array<i64: 100, -1>, mods = ["scale", "alibi"]} : (tensor<2x4x16x128xbf16>, tensor<12x1x64x128xbf16>, tensor<12x1x64x128xbf16>, tensor<2xi32>, tensor<2x6xi32>) -> tensor<2x4x16x128xbf16>
  return %o : tensor<2x4x16x128xbf16>
}

func.func @paged256_d256_interleaved(%q: tensor<2x4x2x256xf16>, %k: tensor<5x2x256x256xf16>, %v: tensor<5x2x256x256xf16>, %len: tensor<2xi32>, %t: tensor<2x3xi32>) -> tensor<2x4x2x256xf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.0625 : f64, causal = true, cache_layout = "paged", page_size = 256 : i64, rope = {theta = 10000.0 : f64, rotary_dim = 256 : i64, layout = "interleaved"}} : (tensor<2x4x2x256xf16>, tensor<5x2x256x256xf16>, tensor<5x2x256x256xf16>, tensor<2xi32>, tensor<2x3xi32>) -> tensor<2x4x2x256xf16>
  return %o : tensor<2x4x2x256xf16>
}

func.func @contiguous_d256_softcap_first(%q: tensor<1x2x3x256xbf16>, %k: tensor<1x1x130x256xbf16>, %v: tensor<1x1x130x256xbf16>, %len: tensor<1xi32>) -> tensor<1x2x3x256xbf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.0625 : f64, causal = true, cache_layout = "contiguous", softcap = 5.0 : f64, mods = ["softcap", "scale"]} : (tensor<1x2x3x256xbf16>, tensor<1x1x130x256xbf16>, tensor<1x1x130x256xbf16>, tensor<1xi32>) -> tensor<1x2x3x256xbf16>
  return %o : tensor<1x2x3x256xbf16>
}

func.func @gqa4_partial_rope_window(%q: tensor<2x16x8x64xf16>, %k: tensor<20x4x32x64xf16>, %v: tensor<20x4x32x64xf16>, %len: tensor<2xi32>, %t: tensor<2x10xi32>) -> tensor<2x16x8x64xf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.125 : f64, causal = true, cache_layout = "paged", page_size = 32 : i64, rope = {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "rotate_half"}, window = array<i64: 40, 3>} : (tensor<2x16x8x64xf16>, tensor<20x4x32x64xf16>, tensor<20x4x32x64xf16>, tensor<2xi32>, tensor<2x10xi32>) -> tensor<2x16x8x64xf16>
  return %o : tensor<2x16x8x64xf16>
}
