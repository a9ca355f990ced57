// Input of bench/gpu_check.sh: a document mask (packed sequences: segment ids, attn-tile's tile.mask_fn body) with causal and a sliding window (200 keys back), bf16, d 64, two batches, a tail (N = 700).
func.func @h64_document_window(%q: tensor<2x4x700x64xbf16>, %k: tensor<2x4x700x64xbf16>, %v: tensor<2x4x700x64xbf16>, %qs: tensor<2x700xi32>, %ks: tensor<2x700xi32>) -> tensor<2x4x700x64xbf16> {
  %o = "attn.fused"(%q, %k, %v, %qs, %ks) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0>, scale = 0.125 : f64, causal = true, window = array<i64: 200, 0>} : (tensor<2x4x700x64xbf16>, tensor<2x4x700x64xbf16>, tensor<2x4x700x64xbf16>, tensor<2x700xi32>, tensor<2x700xi32>) -> tensor<2x4x700x64xbf16>
  return %o : tensor<2x4x700x64xbf16>
}
