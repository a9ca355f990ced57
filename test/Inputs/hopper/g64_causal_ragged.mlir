// Input of bench/gpu_check.sh's backward checks (issue 29): head dim 64,
// causal, no RoPE, bf16, two batches, N = 1000 (the last key block of 128
// holds 104 keys, the last query block of 64 holds 40 rows).
func.func @g64_causal_ragged(%q: tensor<2x4x1000x64xbf16>, %k: tensor<2x4x1000x64xbf16>, %v: tensor<2x4x1000x64xbf16>) -> tensor<2x4x1000x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<2x4x1000x64xbf16>, tensor<2x4x1000x64xbf16>, tensor<2x4x1000x64xbf16>) -> tensor<2x4x1000x64xbf16>
  return %o : tensor<2x4x1000x64xbf16>
}
