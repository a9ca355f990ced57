// Input of bench/gpu_check.sh: a sliding window of 300 keys written as a mask function (q - kv < 300) beside the named causal mask, 1050 queries and keys (the Hopper kernel's first query block starts 64 rows before row 0), f16, d 64. The table of key blocks (attn_hopper_key_table) starts each query block at its window's left edge and leaves the blocks inside the window unmasked.
func.func @h64_window_body_causal(%q: tensor<1x4x1050x64xf16>, %k: tensor<1x4x1050x64xf16>, %v: tensor<1x4x1050x64xf16>) -> tensor<1x4x1050x64xf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    %w = arith.constant 300 : index
    %d = arith.subi %qi, %kv : index
    %ok = arith.cmpi slt, %d, %w : index
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<1x4x1050x64xf16>, tensor<1x4x1050x64xf16>, tensor<1x4x1050x64xf16>) -> tensor<1x4x1050x64xf16>
  return %o : tensor<1x4x1050x64xf16>
}
