// Inputs of test/tools/attn-run/f64.test and test/Transforms/attn-tile-f64.mlir
// (issue 29's gradcheck needs attention in float64 on the CPU path): f64
// programs, which compute in f64 throughout (tiles, constants, the softmax
// state, lse), with RoPE and causal, GQA, softcap, a window, documents at
// explicit positions, ALiBi, the gate and score_mod / mask_mod bodies. Their
// forward and backward match the float64 reference to about 1e-15.

// RoPE (rotate-half, q and k at their own offsets) and causal, N = 45 (a
// partial last block).
func.func @rope_causal_f64(%q: tensor<2x2x45x16xf64>, %k: tensor<2x2x45x16xf64>, %v: tensor<2x2x45x16xf64>) -> tensor<2x2x45x16xf64> {
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", offset = 7 : i64} : (tensor<2x2x45x16xf64>) -> tensor<2x2x45x16xf64>
  %kr = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", offset = 3 : i64} : (tensor<2x2x45x16xf64>) -> tensor<2x2x45x16xf64>
  %s = "attn.qk"(%qr, %kr) : (tensor<2x2x45x16xf64>, tensor<2x2x45x16xf64>) -> tensor<2x2x45x45xf64>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<2x2x45x45xf64>) -> tensor<2x2x45x45xf64>
  %s2 = "attn.causal"(%s1) : (tensor<2x2x45x45xf64>) -> tensor<2x2x45x45xf64>
  %p = "attn.softmax"(%s2) : (tensor<2x2x45x45xf64>) -> tensor<2x2x45x45xf64>
  %o = "attn.pv"(%p, %v) : (tensor<2x2x45x45xf64>, tensor<2x2x45x16xf64>) -> tensor<2x2x45x16xf64>
  return %o : tensor<2x2x45x16xf64>
}

// GQA (8 query heads on 2 K/V heads), interleaved partial RoPE, causal:
// dk and dv sum over the four query heads of a group.
func.func @gqa_rope_f64(%q: tensor<1x8x40x32xf64>, %k: tensor<1x2x40x32xf64>, %v: tensor<1x2x40x32xf64>) -> tensor<1x8x40x32xf64> {
  %qr = "attn.rope"(%q) {theta = 500000.0 : f64, rotary_dim = 16 : i64, layout = "interleaved"} : (tensor<1x8x40x32xf64>) -> tensor<1x8x40x32xf64>
  %kr = "attn.rope"(%k) {theta = 500000.0 : f64, rotary_dim = 16 : i64, layout = "interleaved"} : (tensor<1x2x40x32xf64>) -> tensor<1x2x40x32xf64>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x8x40x32xf64>, tensor<1x2x40x32xf64>) -> tensor<1x8x40x40xf64>
  %s1 = "attn.scale"(%s) {scale = 0.17677669529663687 : f64} : (tensor<1x8x40x40xf64>) -> tensor<1x8x40x40xf64>
  %s2 = "attn.causal"(%s1) : (tensor<1x8x40x40xf64>) -> tensor<1x8x40x40xf64>
  %p = "attn.softmax"(%s2) : (tensor<1x8x40x40xf64>) -> tensor<1x8x40x40xf64>
  %o = "attn.pv"(%p, %v) : (tensor<1x8x40x40xf64>, tensor<1x2x40x32xf64>) -> tensor<1x8x40x32xf64>
  return %o : tensor<1x8x40x32xf64>
}

// Softcap after the scale, causal: the backward multiplies dS by
// 1 - tanh^2 (tile.score_fn_grad), in f64.
func.func @softcap_f64(%q: tensor<1x4x33x32xf64>, %k: tensor<1x4x33x32xf64>, %v: tensor<1x4x33x32xf64>) -> tensor<1x4x33x32xf64> {
  %s = "attn.qk"(%q, %k) : (tensor<1x4x33x32xf64>, tensor<1x4x33x32xf64>) -> tensor<1x4x33x33xf64>
  %s1 = "attn.scale"(%s) {scale = 0.5 : f64} : (tensor<1x4x33x33xf64>) -> tensor<1x4x33x33xf64>
  %s2 = "attn.softcap"(%s1) {cap = 2.0 : f64} : (tensor<1x4x33x33xf64>) -> tensor<1x4x33x33xf64>
  %s3 = "attn.causal"(%s2) : (tensor<1x4x33x33xf64>) -> tensor<1x4x33x33xf64>
  %p = "attn.softmax"(%s3) : (tensor<1x4x33x33xf64>) -> tensor<1x4x33x33xf64>
  %o = "attn.pv"(%p, %v) : (tensor<1x4x33x33xf64>, tensor<1x4x33x32xf64>) -> tensor<1x4x33x32xf64>
  return %o : tensor<1x4x33x32xf64>
}

// A sliding window over cross attention (50 queries, 70 keys, v wider).
func.func @window_cross_f64(%q: tensor<1x2x50x16xf64>, %k: tensor<1x2x70x16xf64>, %v: tensor<1x2x70x24xf64>) -> tensor<1x2x50x24xf64> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x50x16xf64>, tensor<1x2x70x16xf64>) -> tensor<1x2x50x70xf64>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x2x50x70xf64>) -> tensor<1x2x50x70xf64>
  %s2 = "attn.window"(%s1) {left = 9 : i64, right = 5 : i64} : (tensor<1x2x50x70xf64>) -> tensor<1x2x50x70xf64>
  %p = "attn.softmax"(%s2) : (tensor<1x2x50x70xf64>) -> tensor<1x2x50x70xf64>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x50x70xf64>, tensor<1x2x70x24xf64>) -> tensor<1x2x50x24xf64>
  return %o : tensor<1x2x50x24xf64>
}

// Documents (packed sequences) with causal and RoPE at explicit positions.
func.func @document_positions_f64(%q: tensor<2x2x36x16xf64>, %k: tensor<2x2x36x16xf64>, %v: tensor<2x2x36x16xf64>, %seg: tensor<2x36xi32>, %kseg: tensor<2x36xi32>, %qpos: tensor<2x36xi32>, %kpos: tensor<2x36xi32>) -> tensor<2x2x36x16xf64> {
  %qr = "attn.rope"(%q, %qpos) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"} : (tensor<2x2x36x16xf64>, tensor<2x36xi32>) -> tensor<2x2x36x16xf64>
  %kr = "attn.rope"(%k, %kpos) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"} : (tensor<2x2x36x16xf64>, tensor<2x36xi32>) -> tensor<2x2x36x16xf64>
  %s = "attn.qk"(%qr, %kr) : (tensor<2x2x36x16xf64>, tensor<2x2x36x16xf64>) -> tensor<2x2x36x36xf64>
  %s1 = "attn.document"(%s, %seg, %kseg) : (tensor<2x2x36x36xf64>, tensor<2x36xi32>, tensor<2x36xi32>) -> tensor<2x2x36x36xf64>
  %s2 = "attn.causal"(%s1) : (tensor<2x2x36x36xf64>) -> tensor<2x2x36x36xf64>
  %s3 = "attn.scale"(%s2) {scale = 0.25 : f64} : (tensor<2x2x36x36xf64>) -> tensor<2x2x36x36xf64>
  %p = "attn.softmax"(%s3) : (tensor<2x2x36x36xf64>) -> tensor<2x2x36x36xf64>
  %o = "attn.pv"(%p, %v) : (tensor<2x2x36x36xf64>, tensor<2x2x36x16xf64>) -> tensor<2x2x36x16xf64>
  return %o : tensor<2x2x36x16xf64>
}

// ALiBi, the gate (an f64 bias: the program's compute type), a score_mod
// body in f64 reading an f64 capture (a per-head bias), and a mask_mod
// hiding every key from query row 0, whose lse is then +inf.
func.func @alibi_gate_fn_f64(%q: tensor<1x2x24x16xf64>, %k: tensor<1x2x24x16xf64>, %v: tensor<1x2x24x16xf64>, %g: tensor<1x2x24x3xf64>, %hb: tensor<2xf64>) -> tensor<1x2x24x16xf64> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x24x16xf64>, tensor<1x2x24x16xf64>) -> tensor<1x2x24x24xf64>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x2x24x24xf64>) -> tensor<1x2x24x24xf64>
  %s2 = "attn.alibi"(%s1) {max_bias = 8.0 : f64} : (tensor<1x2x24x24xf64>) -> tensor<1x2x24x24xf64>
  %s3 = "attn.gate"(%s2, %g) {block_size = 8 : i64} : (tensor<1x2x24x24xf64>, tensor<1x2x24x3xf64>) -> tensor<1x2x24x24xf64>
  %s4 = "attn.score_mod"(%s3) ({
  ^bb0(%x: f64, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 0.5 : f64
    %hx = arith.mulf %x, %c : f64
    %t = math.tanh %hx : f64
    %e = math.exp %t : f64
    %bias = tensor.extract %hb[%h] : tensor<2xf64>
    %xe = arith.mulf %x, %e : f64
    %y = arith.addf %xe, %bias : f64
    gpu.yield %y : f64
  }) : (tensor<1x2x24x24xf64>) -> tensor<1x2x24x24xf64>
  %s5 = "attn.mask_mod"(%s4) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c1 = arith.constant 1 : index
    %vis = arith.cmpi uge, %i, %c1 : index
    gpu.yield %vis : i1
  }) : (tensor<1x2x24x24xf64>) -> tensor<1x2x24x24xf64>
  %p = "attn.softmax"(%s5) : (tensor<1x2x24x24xf64>) -> tensor<1x2x24x24xf64>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x24x24xf64>, tensor<1x2x24x16xf64>) -> tensor<1x2x24x16xf64>
  return %o : tensor<1x2x24x16xf64>
}
