// Input of bench/gpu_check.sh: a score function reading the attention's own inputs (q and k at column 0, the document mask's k_segments), which the kernels take once, under their roles; causal, bf16, d 64, N = 200.
func.func @h64_body_reads_qk(%q: tensor<1x2x200x64xbf16>, %k: tensor<1x2x200x64xbf16>, %v: tensor<1x2x200x64xbf16>, %qs: tensor<1x200xi32>, %ks: tensor<1x200xi32>) -> tensor<1x2x200x64xbf16> {
  %o = "attn.fused"(%q, %k, %v, %qs, %ks) ({
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
    %c0 = arith.constant 0 : index
    %t = tensor.extract %q[%b, %h, %qi, %c0] : tensor<1x2x200x64xbf16>
    %u = tensor.extract %k[%b, %h, %kv, %c0] : tensor<1x2x200x64xbf16>
    %seg = tensor.extract %ks[%b, %kv] : tensor<1x200xi32>
    %tf = arith.extf %t : bf16 to f32
    %uf = arith.extf %u : bf16 to f32
    %sf = arith.sitofp %seg : i32 to f32
    %p = arith.mulf %tf, %uf : f32
    %w = arith.addf %p, %sf : f32
    %y = arith.addf %s, %w : f32
    gpu.yield %y : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0>, scale = 0.125 : f64, causal = true, mods = ["scale", "fn"]} : (tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x200xi32>, tensor<1x200xi32>) -> tensor<1x2x200x64xbf16>
  return %o : tensor<1x2x200x64xbf16>
}
