// Gradients into captured tensors on the Hopper backward (issue 29), one per form of index the main kernel sums by: a score_fn body adding tb[h, q / 64, kv / 64] (one element per 64 x 64 block: the warp's 32 elements into one add) and tr[h, q / 64, kv] (read by query blocks: a row's 16 columns and 4 lanes first), both {attn.grad}, with the gate (no gradient) before it; a nonlinear chain (the body's tanh), so the sites' derivatives are made at the raw score beside the chain's. f16, d 64, not causal, N = 200 queries on M = 260 keys.
func.func @h64_dgate_block_tables(%q: tensor<1x2x200x64xf16>, %k: tensor<1x2x260x64xf16>, %v: tensor<1x2x260x64xf16>, %g: tensor<1x2x200x5xf32>, %tb: tensor<2x4x5xf32> {attn.grad}, %tr: tensor<2x4x260xf32> {attn.grad}) -> tensor<1x2x200x64xf16> {
  %o = "attn.fused"(%q, %k, %v, %g) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c64 = arith.constant 64 : index
    %qb = arith.divui %i, %c64 : index
    %kb = arith.divui %j, %c64 : index
    %t1 = tensor.extract %tb[%h, %qb, %kb] : tensor<2x4x5xf32>
    %t2 = tensor.extract %tr[%h, %qb, %j] : tensor<2x4x260xf32>
    %c4 = arith.constant 4.0 : f32
    %xs = arith.divf %x, %c4 : f32
    %th = math.tanh %xs : f32
    %y0 = arith.mulf %th, %c4 : f32
    %y1 = arith.addf %y0, %t1 : f32
    %y = arith.addf %y1, %t2 : f32
    gpu.yield %y : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, gate_block = 64 : i64, mods = ["scale", "gate", "fn"]} : (tensor<1x2x200x64xf16>, tensor<1x2x260x64xf16>, tensor<1x2x260x64xf16>, tensor<1x2x200x5xf32>) -> tensor<1x2x200x64xf16>
  return %o : tensor<1x2x200x64xf16>
}
