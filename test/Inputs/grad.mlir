// Inputs of test/tools/attn-run/grad.test (issue 29): small programs
// whose backward attn-run --grad derives (attn-grad), runs on the CPU path
// and checks against attn_reference_grad in float64: RoPE + causal, GQA,
// windows, documents, softcap, f16 and bf16, explicit positions, ALiBi,
// the gate, score_fn bodies and a mask_fn that leaves a row no key.

// RoPE (rotate-half, q and k at their own offsets) and causal, f32, N = 45
// (a partial last block).
func.func @rope_causal_f32(%q: tensor<2x2x45x16xf32>, %k: tensor<2x2x45x16xf32>, %v: tensor<2x2x45x16xf32>) -> tensor<2x2x45x16xf32> {
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", offset = 7 : i64} : (tensor<2x2x45x16xf32>) -> tensor<2x2x45x16xf32>
  %kr = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", offset = 3 : i64} : (tensor<2x2x45x16xf32>) -> tensor<2x2x45x16xf32>
  %s = "attn.qk"(%qr, %kr) : (tensor<2x2x45x16xf32>, tensor<2x2x45x16xf32>) -> tensor<2x2x45x45xf32>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<2x2x45x45xf32>) -> tensor<2x2x45x45xf32>
  %s2 = "attn.causal"(%s1) : (tensor<2x2x45x45xf32>) -> tensor<2x2x45x45xf32>
  %p = "attn.softmax"(%s2) : (tensor<2x2x45x45xf32>) -> tensor<2x2x45x45xf32>
  %o = "attn.pv"(%p, %v) : (tensor<2x2x45x45xf32>, tensor<2x2x45x16xf32>) -> tensor<2x2x45x16xf32>
  return %o : tensor<2x2x45x16xf32>
}

// GQA (8 query heads on 2 K/V heads), interleaved partial RoPE, causal,
// bf16: dk and dv sum over the four query heads of a group.
func.func @gqa_rope_bf16(%q: tensor<1x8x40x32xbf16>, %k: tensor<1x2x40x32xbf16>, %v: tensor<1x2x40x32xbf16>) -> tensor<1x8x40x32xbf16> {
  %qr = "attn.rope"(%q) {theta = 500000.0 : f64, rotary_dim = 16 : i64, layout = "interleaved"} : (tensor<1x8x40x32xbf16>) -> tensor<1x8x40x32xbf16>
  %kr = "attn.rope"(%k) {theta = 500000.0 : f64, rotary_dim = 16 : i64, layout = "interleaved"} : (tensor<1x2x40x32xbf16>) -> tensor<1x2x40x32xbf16>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x8x40x32xbf16>, tensor<1x2x40x32xbf16>) -> tensor<1x8x40x40xbf16>
  %s1 = "attn.scale"(%s) {scale = 0.17677669529663687 : f64} : (tensor<1x8x40x40xbf16>) -> tensor<1x8x40x40xbf16>
  %s2 = "attn.causal"(%s1) : (tensor<1x8x40x40xbf16>) -> tensor<1x8x40x40xbf16>
  %p = "attn.softmax"(%s2) : (tensor<1x8x40x40xbf16>) -> tensor<1x8x40x40xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<1x8x40x40xbf16>, tensor<1x2x40x32xbf16>) -> tensor<1x8x40x32xbf16>
  return %o : tensor<1x8x40x32xbf16>
}

// A window bounded on both sides, not causal, cross attention (N = 50
// queries, M = 70 keys): the backward's key and query ranges skip blocks.
func.func @window_f32(%q: tensor<1x2x50x16xf32>, %k: tensor<1x2x70x16xf32>, %v: tensor<1x2x70x24xf32>) -> tensor<1x2x50x24xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x50x16xf32>, tensor<1x2x70x16xf32>) -> tensor<1x2x50x70xf32>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x2x50x70xf32>) -> tensor<1x2x50x70xf32>
  %s2 = "attn.window"(%s1) {left = 9 : i64, right = 5 : i64} : (tensor<1x2x50x70xf32>) -> tensor<1x2x50x70xf32>
  %p = "attn.softmax"(%s2) : (tensor<1x2x50x70xf32>) -> tensor<1x2x50x70xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x50x70xf32>, tensor<1x2x70x24xf32>) -> tensor<1x2x50x24xf32>
  return %o : tensor<1x2x50x24xf32>
}

// Documents (packed sequences) with causal and RoPE at explicit positions.
func.func @document_positions_f32(%q: tensor<2x2x36x16xf32>, %k: tensor<2x2x36x16xf32>, %v: tensor<2x2x36x16xf32>, %seg: tensor<2x36xi32>, %kseg: tensor<2x36xi32>, %qpos: tensor<2x36xi32>, %kpos: tensor<2x36xi32>) -> tensor<2x2x36x16xf32> {
  %qr = "attn.rope"(%q, %qpos) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"} : (tensor<2x2x36x16xf32>, tensor<2x36xi32>) -> tensor<2x2x36x16xf32>
  %kr = "attn.rope"(%k, %kpos) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"} : (tensor<2x2x36x16xf32>, tensor<2x36xi32>) -> tensor<2x2x36x16xf32>
  %s = "attn.qk"(%qr, %kr) : (tensor<2x2x36x16xf32>, tensor<2x2x36x16xf32>) -> tensor<2x2x36x36xf32>
  %s1 = "attn.document"(%s, %seg, %kseg) : (tensor<2x2x36x36xf32>, tensor<2x36xi32>, tensor<2x36xi32>) -> tensor<2x2x36x36xf32>
  %s2 = "attn.causal"(%s1) : (tensor<2x2x36x36xf32>) -> tensor<2x2x36x36xf32>
  %s3 = "attn.scale"(%s2) {scale = 0.25 : f64} : (tensor<2x2x36x36xf32>) -> tensor<2x2x36x36xf32>
  %p = "attn.softmax"(%s3) : (tensor<2x2x36x36xf32>) -> tensor<2x2x36x36xf32>
  %o = "attn.pv"(%p, %v) : (tensor<2x2x36x36xf32>, tensor<2x2x36x16xf32>) -> tensor<2x2x36x16xf32>
  return %o : tensor<2x2x36x16xf32>
}

// Softcap after the scale, causal, f16: the chain is nonlinear, so the
// backward multiplies dS by 1 - tanh^2 (tile.score_fn_grad). A small cap
// makes the derivative matter.
func.func @softcap_f16(%q: tensor<1x4x33x32xf16>, %k: tensor<1x4x33x32xf16>, %v: tensor<1x4x33x32xf16>) -> tensor<1x4x33x32xf16> {
  %s = "attn.qk"(%q, %k) : (tensor<1x4x33x32xf16>, tensor<1x4x33x32xf16>) -> tensor<1x4x33x33xf16>
  %s1 = "attn.scale"(%s) {scale = 0.5 : f64} : (tensor<1x4x33x33xf16>) -> tensor<1x4x33x33xf16>
  %s2 = "attn.softcap"(%s1) {cap = 2.0 : f64} : (tensor<1x4x33x33xf16>) -> tensor<1x4x33x33xf16>
  %s3 = "attn.causal"(%s2) : (tensor<1x4x33x33xf16>) -> tensor<1x4x33x33xf16>
  %p = "attn.softmax"(%s3) : (tensor<1x4x33x33xf16>) -> tensor<1x4x33x33xf16>
  %o = "attn.pv"(%p, %v) : (tensor<1x4x33x33xf16>, tensor<1x4x33x32xf16>) -> tensor<1x4x33x32xf16>
  return %o : tensor<1x4x33x32xf16>
}

// Plain f16, no mask, no RoPE.
func.func @plain_f16(%q: tensor<1x2x30x64xf16>, %k: tensor<1x2x30x64xf16>, %v: tensor<1x2x30x64xf16>) -> tensor<1x2x30x64xf16> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x30x64xf16>, tensor<1x2x30x64xf16>) -> tensor<1x2x30x30xf16>
  %s1 = "attn.scale"(%s) {scale = 0.125 : f64} : (tensor<1x2x30x30xf16>) -> tensor<1x2x30x30xf16>
  %p = "attn.softmax"(%s1) : (tensor<1x2x30x30xf16>) -> tensor<1x2x30x30xf16>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x30x30xf16>, tensor<1x2x30x64xf16>) -> tensor<1x2x30x64xf16>
  return %o : tensor<1x2x30x64xf16>
}

// ALiBi, then the gate (a constant bias to the backward: no dgate), then a
// score_mod body (a nonlinear one: x * sigmoid-like tanh, through
// attn_grad_body.c's rules), and a mask_mod hiding every key from query
// row 0, whose lse is then +inf and whose gradients are 0.
func.func @alibi_gate_fn_f32(%q: tensor<1x2x24x16xf32>, %k: tensor<1x2x24x16xf32>, %v: tensor<1x2x24x16xf32>, %g: tensor<1x2x24x3xf32>) -> tensor<1x2x24x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x24x16xf32>, tensor<1x2x24x16xf32>) -> tensor<1x2x24x24xf32>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x2x24x24xf32>) -> tensor<1x2x24x24xf32>
  %s2 = "attn.alibi"(%s1) {max_bias = 8.0 : f64} : (tensor<1x2x24x24xf32>) -> tensor<1x2x24x24xf32>
  %s3 = "attn.gate"(%s2, %g) {block_size = 8 : i64} : (tensor<1x2x24x24xf32>, tensor<1x2x24x3xf32>) -> tensor<1x2x24x24xf32>
  %s4 = "attn.score_mod"(%s3) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 0.5 : f32
    %hx = arith.mulf %x, %c : f32
    %t = math.tanh %hx : f32
    %e = math.exp %t : f32
    %y = arith.mulf %x, %e : f32
    gpu.yield %y : f32
  }) : (tensor<1x2x24x24xf32>) -> tensor<1x2x24x24xf32>
  %s5 = "attn.mask_mod"(%s4) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c1 = arith.constant 1 : index
    %vis = arith.cmpi uge, %i, %c1 : index
    gpu.yield %vis : i1
  }) : (tensor<1x2x24x24xf32>) -> tensor<1x2x24x24xf32>
  %p = "attn.softmax"(%s5) : (tensor<1x2x24x24xf32>) -> tensor<1x2x24x24xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x24x24xf32>, tensor<1x2x24x16xf32>) -> tensor<1x2x24x16xf32>
  return %o : tensor<1x2x24x16xf32>
}

// Every float op with a derivative rule (lib/Transforms/attn_grad_body.c),
// smooth where the scores fall (logs and roots of |s| + 0.5, powf with an
// exponent that depends on the score; absf, copysign and the min/max only
// kink on a set of measure zero), in one score_mod body: attn-tile builds
// its derivative by forward mode, the reference takes central differences.
// (body_ops.mlir's every-op body is not one: its floor, ceil, f16 rounding
// and score-dependent select are discontinuous, where a gradient is not
// defined.)
func.func @rules_f32(%q: tensor<1x2x20x16xf32>, %k: tensor<1x2x20x16xf32>, %v: tensor<1x2x20x16xf32>) -> tensor<1x2x20x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x20x16xf32>, tensor<1x2x20x16xf32>) -> tensor<1x2x20x20xf32>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x2x20x20xf32>) -> tensor<1x2x20x20xf32>
  %s2 = "attn.score_mod"(%s1) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %half = arith.constant 0.5 : f32
    %tenth = arith.constant 0.1 : f32
    %ax = math.absf %x : f32
    %p = arith.addf %ax, %half : f32
    %e = math.exp %x : f32
    %e2 = math.exp2 %tenth : f32
    %e3 = math.exp2 %x : f32
    %l = math.log %p : f32
    %l2 = math.log2 %p : f32
    %l1 = math.log1p %p : f32
    %t = math.tanh %x : f32
    %r = math.sqrt %p : f32
    %rs = math.rsqrt %p : f32
    %sn = math.sin %x : f32
    %cs = math.cos %x : f32
    %er = math.erf %x : f32
    %ex = arith.mulf %t, %tenth : f32
    %ep = arith.addf %ex, %half : f32
    %pw = math.powf %p, %ep : f32
    %cp = math.copysign %p, %x : f32
    %a0 = arith.addf %l, %l2 : f32
    %a1 = arith.subf %a0, %l1 : f32
    %a2 = arith.mulf %a1, %r : f32
    %a3 = arith.divf %a2, %p : f32
    %a4 = math.fma %rs, %sn, %a3 : f32
    %a5 = arith.addf %a4, %cs : f32
    %a6 = arith.addf %a5, %er : f32
    %a7 = arith.addf %a6, %pw : f32
    %a8 = arith.addf %a7, %cp : f32
    %m0 = arith.maximumf %a8, %t : f32
    %m1 = arith.minimumf %m0, %e : f32
    %m2 = arith.maxnumf %m1, %sn : f32
    %m3 = arith.minnumf %m2, %e3 : f32
    %ng = arith.negf %m3 : f32
    %c7 = arith.constant 7 : index
    %lt = arith.cmpi ult, %j, %c7 : index
    %sel = arith.select %lt, %ng, %a8 : f32
    %w = arith.mulf %sel, %e2 : f32
    %sc = arith.mulf %w, %tenth : f32
    %y = arith.addf %x, %sc : f32
    gpu.yield %y : f32
  }) : (tensor<1x2x20x20xf32>) -> tensor<1x2x20x20xf32>
  %p2 = "attn.softmax"(%s2) : (tensor<1x2x20x20xf32>) -> tensor<1x2x20x20xf32>
  %o = "attn.pv"(%p2, %v) : (tensor<1x2x20x20xf32>, tensor<1x2x20x16xf32>) -> tensor<1x2x20x16xf32>
  return %o : tensor<1x2x20x16xf32>
}
