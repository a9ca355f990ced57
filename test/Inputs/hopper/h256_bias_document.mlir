// Input of bench/gpu_check.sh: score and mask functions in the tensor-core kernels (lib/Kernels/score_fn.c): a relative-position bias table (f32) times a per-head factor (a bf16 table), after the scale, and a document mask (segment ids, attn-tile's body), causal, bf16, d 256 (64-key blocks: attn-tile's choice with a score_mod body), two batches, a tail (N = 700).
func.func @h256_bias_document(%q: tensor<2x4x700x256xbf16>, %k: tensor<2x4x700x256xbf16>, %v: tensor<2x4x700x256xbf16>, %qs: tensor<2x700xi32>, %ks: tensor<2x700xi32>, %bias: tensor<1399xf32>, %hw: tensor<4xbf16>) -> tensor<2x4x700x256xbf16> {
  %o = "attn.fused"(%q, %k, %v, %qs, %ks) ({
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
    %c699 = arith.constant 699 : index
    %d = arith.subi %qi, %kv : index
    %e = arith.addi %d, %c699 : index
    %t = tensor.extract %bias[%e] : tensor<1399xf32>
    %w16 = tensor.extract %hw[%h] : tensor<4xbf16>
    %w = arith.extf %w16 : bf16 to f32
    %y = math.fma %t, %w, %s : f32
    gpu.yield %y : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0>, scale = 0.0625 : f64, causal = true, mods = ["scale", "fn"]} : (tensor<2x4x700x256xbf16>, tensor<2x4x700x256xbf16>, tensor<2x4x700x256xbf16>, tensor<2x700xi32>, tensor<2x700xi32>) -> tensor<2x4x700x256xbf16>
  return %o : tensor<2x4x700x256xbf16>
}
