// Input of bench/gpu_check.sh: head dim 256, f16, GQA 8/2, not causal, tails of the query (N = 333) and key blocks.
func.func @h256_gqa_plain_f16(%q: tensor<1x8x333x256xf16>, %k: tensor<1x2x333x256xf16>, %v: tensor<1x2x333x256xf16>) -> tensor<1x8x333x256xf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.0625 : f64, causal = false} : (tensor<1x8x333x256xf16>, tensor<1x2x333x256xf16>, tensor<1x2x333x256xf16>) -> tensor<1x8x333x256xf16>
  return %o : tensor<1x8x333x256xf16>
}
