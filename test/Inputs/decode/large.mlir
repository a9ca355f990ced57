// Larger decode programs for the GPU check only (bench/gpu_check.sh's
// decode stage; too slow for the CPU suite's float64 reference): 32K keys
// at batch 1 (many splits), a batch of 8 paged sequences in pages of 16,
// speculative rows with softcap on a paged MHA cache, a sliding window
// over 16K keys, head dim 256 in pages of 256; lengths and tables are
// drawn by attn-run.

func.func @b1_32k_gqa_rope(%q: tensor<1x32x1x128xbf16>, %k: tensor<1x8x32768x128xbf16>, %v: tensor<1x8x32768x128xbf16>, %len: tensor<1xi32>) -> tensor<1x32x1x128xbf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.08838834764831843 : f64, causal = true, cache_layout = "contiguous", rope = {theta = 500000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<1x32x1x128xbf16>, tensor<1x8x32768x128xbf16>, tensor<1x8x32768x128xbf16>, tensor<1xi32>) -> tensor<1x32x1x128xbf16>
  return %o : tensor<1x32x1x128xbf16>
}

func.func @b8_8k_paged16_gqa(%q: tensor<8x32x1x128xbf16>, %k: tensor<4096x8x16x128xbf16>, %v: tensor<4096x8x16x128xbf16>, %len: tensor<8xi32>, %t: tensor<8x512xi32>) -> tensor<8x32x1x128xbf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.08838834764831843 : f64, causal = true, cache_layout = "paged", page_size = 16 : i64} : (tensor<8x32x1x128xbf16>, tensor<4096x8x16x128xbf16>, tensor<4096x8x16x128xbf16>, tensor<8xi32>, tensor<8x512xi32>) -> tensor<8x32x1x128xbf16>
  return %o : tensor<8x32x1x128xbf16>
}

func.func @b4_8k_paged64_mha_spec4(%q: tensor<4x16x4x128xf16>, %k: tensor<520x16x64x128xf16>, %v: tensor<520x16x64x128xf16>, %len: tensor<4xi32>, %t: tensor<4x128xi32>) -> tensor<4x16x4x128xf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.08838834764831843 : f64, causal = true, cache_layout = "paged", page_size = 64 : i64, softcap = 30.0 : f64, mods = ["scale", "softcap"]} : (tensor<4x16x4x128xf16>, tensor<520x16x64x128xf16>, tensor<520x16x64x128xf16>, tensor<4xi32>, tensor<4x128xi32>) -> tensor<4x16x4x128xf16>
  return %o : tensor<4x16x4x128xf16>
}

func.func @b2_16k_d64_window(%q: tensor<2x16x2x64xf16>, %k: tensor<2x4x16384x64xf16>, %v: tensor<2x4x16384x64xf16>, %len: tensor<2xi32>) -> tensor<2x16x2x64xf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous", window = array<i64: 4095, -1>} : (tensor<2x16x2x64xf16>, tensor<2x4x16384x64xf16>, tensor<2x4x16384x64xf16>, tensor<2xi32>) -> tensor<2x16x2x64xf16>
  return %o : tensor<2x16x2x64xf16>
}

func.func @b2_4k_d256_paged256(%q: tensor<2x8x1x256xbf16>, %k: tensor<34x2x256x256xbf16>, %v: tensor<34x2x256x256xbf16>, %len: tensor<2xi32>, %t: tensor<2x16xi32>) -> tensor<2x8x1x256xbf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.0625 : f64, causal = true, cache_layout = "paged", page_size = 256 : i64, rope = {theta = 500000.0 : f64, rotary_dim = 256 : i64, layout = "rotate_half"}} : (tensor<2x8x1x256xbf16>, tensor<34x2x256x256xbf16>, tensor<34x2x256x256xbf16>, tensor<2xi32>, tensor<2x16xi32>) -> tensor<2x8x1x256xbf16>
  return %o : tensor<2x8x1x256xbf16>
}
