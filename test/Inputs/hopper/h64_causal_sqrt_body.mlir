// Input of bench/gpu_check.sh: a score_mod body s * sqrt(q - kv + 1) with the causal mask, bf16, d 64, 500 queries and keys. Above the diagonal (kv > q + 1) the body's sqrt and its derivative are NaN where P is 0: the backward's dS must stay 0 there (the Hopper backward selects it, as the plain path's tile.score_fn_grad does), or dK and dQ are NaN.
func.func @h64_causal_sqrt_body(%q: tensor<1x4x500x64xbf16>, %k: tensor<1x4x500x64xbf16>, %v: tensor<1x4x500x64xbf16>) -> tensor<1x4x500x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
    %qf = arith.index_cast %qi : index to i64
    %kf = arith.index_cast %kv : index to i64
    %d = arith.subi %qf, %kf : i64
    %df = arith.sitofp %d : i64 to f32
    %one = arith.constant 1.0 : f32
    %a = arith.addf %df, %one : f32
    %r = math.sqrt %a : f32
    %y = arith.mulf %s, %r : f32
    gpu.yield %y : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, mods = ["scale", "fn"]} : (tensor<1x4x500x64xbf16>, tensor<1x4x500x64xbf16>, tensor<1x4x500x64xbf16>) -> tensor<1x4x500x64xbf16>
  return %o : tensor<1x4x500x64xbf16>
}
