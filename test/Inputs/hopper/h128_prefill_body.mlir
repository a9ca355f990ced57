// Input of bench/gpu_check.sh: chunked prefill written as a mask function, 1000 queries at the end of 3000 keys (key kv visible to query q when kv <= q + 2000: causal aligned to the bottom right), GQA 8/2, bf16, d 128. Its body is affine, so both kernels read each query block's key blocks from a table (attn_hopper_key_table), most of them unmasked.
func.func @h128_prefill_body(%q: tensor<1x8x1000x128xbf16>, %k: tensor<1x2x3000x128xbf16>, %v: tensor<1x2x3000x128xbf16>) -> tensor<1x8x1000x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    %c = arith.constant 2000 : index
    %e = arith.addi %qi, %c : index
    %ok = arith.cmpi ule, %kv, %e : index
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.088388 : f64, causal = false} : (tensor<1x8x1000x128xbf16>, tensor<1x2x3000x128xbf16>, tensor<1x2x3000x128xbf16>) -> tensor<1x8x1000x128xbf16>
  return %o : tensor<1x8x1000x128xbf16>
}
