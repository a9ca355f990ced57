// Input of bench/gpu_check.sh: a document mask and causal written as one mask function (ids[b, q] == ids[b, kv] and kv <= q), both comparisons of a row value with a key value, so the run-time key lists' ranges pass (lib/Kernels/key_lists.c) decides the blocks it can and evaluates the rest point by point; bf16, d 128, GQA 4/2, two batches, N = 600.
func.func @h128_document_causal_body(%ids: tensor<2x600xi32>, %q: tensor<2x4x600x128xbf16>, %k: tensor<2x2x600x128xbf16>, %v: tensor<2x2x600x128xbf16>) -> tensor<2x4x600x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    %a = tensor.extract %ids[%b, %qi] : tensor<2x600xi32>
    %c = tensor.extract %ids[%b, %kv] : tensor<2x600xi32>
    %same = arith.cmpi eq, %a, %c : i32
    %past = arith.cmpi ule, %kv, %qi : index
    %ok = arith.andi %same, %past : i1
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = false} : (tensor<2x4x600x128xbf16>, tensor<2x2x600x128xbf16>, tensor<2x2x600x128xbf16>) -> tensor<2x4x600x128xbf16>
  return %o : tensor<2x4x600x128xbf16>
}
