// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-tile

// attn-tile passes the tensors a body captures (arguments of the function)
// as kernel arguments; the function takes nothing else but attn.fused's
// operands.

// An argument neither an operand nor captured.
// expected-error@+1 {{attn-tile expects the function to take exactly the operands of attn.fused and the tensors its bodies capture}}
func.func @unused_argument(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %t: tensor<8xf32>, %u: tensor<8xf32>) -> tensor<1x2x8x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
    %x = tensor.extract %t[%kv] : tensor<8xf32>
    %y = arith.addf %s, %x : f32
    gpu.yield %y : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, mods = ["scale", "fn"], scale = 0.25 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}
