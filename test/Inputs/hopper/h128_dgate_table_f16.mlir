// Gradients into captured tensors (issue 29) on a program the Hopper backward would otherwise take: the SAS gate and a relative-position table, both marked {attn.grad}, f16, d 128, GQA. attn_hopper_grad_supports refuses its grads, so its backward takes the plain path (atomic adds into dgate and the table).
func.func @h128_dgate_table_f16(%q: tensor<1x4x200x128xf16>, %k: tensor<1x2x200x128xf16>, %v: tensor<1x2x200x128xf16>, %g: tensor<1x4x200x4xf32> {attn.grad}, %bias: tensor<399xf32> {attn.grad}) -> tensor<1x4x200x128xf16> {
  %o = "attn.fused"(%q, %k, %v, %g) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c199 = arith.constant 199 : index
    %d = arith.subi %i, %j : index
    %e = arith.addi %d, %c199 : index
    %t = tensor.extract %bias[%e] : tensor<399xf32>
    %y = arith.addf %x, %t : f32
    gpu.yield %y : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = true, softcap = 5.0 : f64, gate_block = 64 : i64, mods = ["scale", "gate", "softcap", "fn"]} : (tensor<1x4x200x128xf16>, tensor<1x2x200x128xf16>, tensor<1x2x200x128xf16>, tensor<1x4x200x4xf32>) -> tensor<1x4x200x128xf16>
  return %o : tensor<1x4x200x128xf16>
}
