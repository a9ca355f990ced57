// Modifiers of any form (issue 28): a bias table read by q - kv and a
// prefix-LM mask, then the same as attn.fused's two regions.
func.func @bodies_f32(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %bias: tensor<15xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %s1 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c7 = arith.constant 7 : index
    %d = arith.subi %i, %j : index
    %e = arith.addi %d, %c7 : index
    %t = tensor.extract %bias[%e] : tensor<15xf32>
    %y = arith.addf %x, %t : f32
    gpu.yield %y : f32
  }) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s2 = "attn.mask_mod"(%s1) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c2 = arith.constant 2 : index
    %pre = arith.cmpi ult, %j, %c2 : index
    %cau = arith.cmpi ule, %j, %i : index
    %ok = arith.ori %pre, %cau : i1
    gpu.yield %ok : i1
  }) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s2) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %f = "attn.fused"(%q, %k, %v) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c7 = arith.constant 7 : index
    %d = arith.subi %i, %j : index
    %e = arith.addi %d, %c7 : index
    %t = tensor.extract %bias[%e] : tensor<15xf32>
    %y = arith.addf %x, %t : f32
    gpu.yield %y : f32
  }, {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %ok = arith.cmpi ule, %j, %i : index
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = false, mods = ["scale", "fn"]} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o, %f : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
}
