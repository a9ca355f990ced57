// The benchmark's shapes of issue 30 (bf16, d 128, one query row), for
// the split the cost model picks (lib/CostModel/decode_split.c): batch 1,
// 8 and 64 over GQA 32/8 and MHA 32/32 caches of 4K to 128K keys.

func.func @b1_128k_gqa(%q: tensor<1x32x1x128xbf16>, %k: tensor<1x8x131072x128xbf16>, %v: tensor<1x8x131072x128xbf16>, %len: tensor<1xi32>) -> tensor<1x32x1x128xbf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.088 : f64, causal = true, cache_layout = "contiguous"} : (tensor<1x32x1x128xbf16>, tensor<1x8x131072x128xbf16>, tensor<1x8x131072x128xbf16>, tensor<1xi32>) -> tensor<1x32x1x128xbf16>
  return %o : tensor<1x32x1x128xbf16>
}

func.func @b8_16k_gqa(%q: tensor<8x32x1x128xbf16>, %k: tensor<8x8x16384x128xbf16>, %v: tensor<8x8x16384x128xbf16>, %len: tensor<8xi32>) -> tensor<8x32x1x128xbf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.088 : f64, causal = true, cache_layout = "contiguous"} : (tensor<8x32x1x128xbf16>, tensor<8x8x16384x128xbf16>, tensor<8x8x16384x128xbf16>, tensor<8xi32>) -> tensor<8x32x1x128xbf16>
  return %o : tensor<8x32x1x128xbf16>
}

func.func @b64_4k_gqa(%q: tensor<64x32x1x128xbf16>, %k: tensor<64x8x4096x128xbf16>, %v: tensor<64x8x4096x128xbf16>, %len: tensor<64xi32>) -> tensor<64x32x1x128xbf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.088 : f64, causal = true, cache_layout = "contiguous"} : (tensor<64x32x1x128xbf16>, tensor<64x8x4096x128xbf16>, tensor<64x8x4096x128xbf16>, tensor<64xi32>) -> tensor<64x32x1x128xbf16>
  return %o : tensor<64x32x1x128xbf16>
}

func.func @b1_4k_mha(%q: tensor<1x32x1x128xbf16>, %k: tensor<1x32x4096x128xbf16>, %v: tensor<1x32x4096x128xbf16>, %len: tensor<1xi32>) -> tensor<1x32x1x128xbf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.088 : f64, causal = true, cache_layout = "contiguous"} : (tensor<1x32x1x128xbf16>, tensor<1x32x4096x128xbf16>, tensor<1x32x4096x128xbf16>, tensor<1xi32>) -> tensor<1x32x1x128xbf16>
  return %o : tensor<1x32x1x128xbf16>
}

func.func @b64_4k_mha(%q: tensor<64x32x1x128xbf16>, %k: tensor<64x32x4096x128xbf16>, %v: tensor<64x32x4096x128xbf16>, %len: tensor<64xi32>) -> tensor<64x32x1x128xbf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.088 : f64, causal = true, cache_layout = "contiguous"} : (tensor<64x32x1x128xbf16>, tensor<64x32x4096x128xbf16>, tensor<64x32x4096x128xbf16>, tensor<64xi32>) -> tensor<64x32x1x128xbf16>
  return %o : tensor<64x32x1x128xbf16>
}
