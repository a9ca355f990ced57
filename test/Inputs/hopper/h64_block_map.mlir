// Input of bench/gpu_check.sh: a block map of 64 x 64 blocks per (batch, head) read by a mask function at (b, h, q / 64, kv / 64), the form attn.BlockMask traces: one value over every aligned 64 x 64 box, so the run-time key lists (lib/Kernels/key_lists.c) evaluate one point per box (grain 64); bf16, d 64, two batches, a tail (N = 700).
func.func @h64_block_map(%map: tensor<2x4x11x11xi32>, %q: tensor<2x4x700x64xbf16>, %k: tensor<2x4x700x64xbf16>, %v: tensor<2x4x700x64xbf16>) -> tensor<2x4x700x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    %c64 = arith.constant 64 : index
    %i = arith.divsi %qi, %c64 : index
    %j = arith.divsi %kv, %c64 : index
    %x = tensor.extract %map[%b, %h, %i, %j] : tensor<2x4x11x11xi32>
    %z = arith.constant 0 : i32
    %ok = arith.cmpi ne, %x, %z : i32
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<2x4x700x64xbf16>, tensor<2x4x700x64xbf16>, tensor<2x4x700x64xbf16>) -> tensor<2x4x700x64xbf16>
  return %o : tensor<2x4x700x64xbf16>
}
