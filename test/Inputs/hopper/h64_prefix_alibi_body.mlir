// Input of bench/gpu_check.sh: ALiBi written as a score function (a slope per head from a captured table, s - slope |q - kv|) before the scale, and a prefix-LM mask function (the first 100 keys visible to every query, causal after), GQA, bf16, d 64, N = 1000, RoPE (ahead by default: a launch program, whose inputs keep the program's order), the captured tensor before q.
func.func @h64_prefix_alibi_body(%slopes: tensor<8xf32>, %q: tensor<1x8x1000x64xbf16>, %k: tensor<1x2x1000x64xbf16>, %v: tensor<1x2x1000x64xbf16>) -> tensor<1x8x1000x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
    %m = tensor.extract %slopes[%h] : tensor<8xf32>
    %qf = arith.index_cast %qi : index to i64
    %kf = arith.index_cast %kv : index to i64
    %d = arith.subi %qf, %kf : i64
    %df = arith.sitofp %d : i64 to f32
    %a = math.absf %df : f32
    %p = arith.mulf %m, %a : f32
    %y = arith.subf %s, %p : f32
    gpu.yield %y : f32
  }, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    %c100 = arith.constant 100 : index
    %pre = arith.cmpi ult, %kv, %c100 : index
    %past = arith.cmpi ule, %kv, %qi : index
    %ok = arith.ori %pre, %past : i1
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, mods = ["fn", "scale"], rope = {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<1x8x1000x64xbf16>, tensor<1x2x1000x64xbf16>, tensor<1x2x1000x64xbf16>) -> tensor<1x8x1000x64xbf16>
  return %o : tensor<1x8x1000x64xbf16>
}
