// Programs asking for gradients into captured tensors ({attn.grad}), in
// f64: test/tools/attn-run/grad-captures.test runs them with attn-run
// --grad (grad_captures_f32.mlir holds the same in f32).
func.func @gate_after_scale_f64(%q: tensor<1x2x20x8xf64>, %k: tensor<1x2x24x8xf64>, %v: tensor<1x2x24x8xf64>, %g: tensor<1x2x20x3xf64> {attn.grad}) -> tensor<1x2x20x8xf64> {
  %o = "attn.fused"(%q, %k, %v, %g) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.35 : f64, causal = true, mods = ["scale", "gate"], gate_block = 10 : i64} : (tensor<1x2x20x8xf64>, tensor<1x2x24x8xf64>, tensor<1x2x24x8xf64>, tensor<1x2x20x3xf64>) -> tensor<1x2x20x8xf64>
  return %o : tensor<1x2x20x8xf64>
}
func.func @gate_then_scale_f64(%q: tensor<1x2x20x8xf64>, %k: tensor<1x2x24x8xf64>, %v: tensor<1x2x24x8xf64>, %g: tensor<1x2x20x3xf64> {attn.grad}) -> tensor<1x2x20x8xf64> {
  %o = "attn.fused"(%q, %k, %v, %g) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.35 : f64, causal = false, mods = ["gate", "scale"], gate_block = 10 : i64} : (tensor<1x2x20x8xf64>, tensor<1x2x24x8xf64>, tensor<1x2x24x8xf64>, tensor<1x2x20x3xf64>) -> tensor<1x2x20x8xf64>
  return %o : tensor<1x2x20x8xf64>
}
func.func @gate_softcap_gqa_f64(%q: tensor<1x4x20x8xf64>, %k: tensor<1x2x24x8xf64>, %v: tensor<1x2x24x8xf64>, %g: tensor<1x4x20x3xf64> {attn.grad}) -> tensor<1x4x20x8xf64> {
  %o = "attn.fused"(%q, %k, %v, %g) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.35 : f64, causal = false, mods = ["scale", "gate", "softcap"], gate_block = 10 : i64, softcap = 2.0 : f64, window = array<i64: 6, 3>} : (tensor<1x4x20x8xf64>, tensor<1x2x24x8xf64>, tensor<1x2x24x8xf64>, tensor<1x4x20x3xf64>) -> tensor<1x4x20x8xf64>
  return %o : tensor<1x4x20x8xf64>
}
func.func @gate_table_f64(%q: tensor<1x2x20x8xf64>, %k: tensor<1x2x24x8xf64>, %v: tensor<1x2x24x8xf64>, %g: tensor<1x2x20x3xf64> {attn.grad}, %bias: tensor<47xf64> {attn.grad}, %slope: tensor<4xf64> {attn.grad}) -> tensor<1x2x20x8xf64> {
  %o = "attn.fused"(%q, %k, %v, %g) ({
  ^bb0(%x: f64, %b: index, %h: index, %i: index, %j: index):
    %c23 = arith.constant 23 : index
    %d = arith.subi %i, %j : index
    %ix = arith.addi %d, %c23 : index
    %t = tensor.extract %bias[%ix] : tensor<47xf64>
    %m = tensor.extract %slope[%h] : tensor<4xf64>
    %u = tensor.extract %bias[%j] : tensor<47xf64>
    %y = arith.addf %x, %t : f64
    %y2 = arith.mulf %y, %m : f64
    %y3 = arith.addf %y2, %u : f64
    %z = math.tanh %y3 : f64
    gpu.yield %z : f64
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.35 : f64, causal = true, mods = ["scale", "gate", "fn"], gate_block = 10 : i64} : (tensor<1x2x20x8xf64>, tensor<1x2x24x8xf64>, tensor<1x2x24x8xf64>, tensor<1x2x20x3xf64>) -> tensor<1x2x20x8xf64>
  return %o : tensor<1x2x20x8xf64>
}
func.func @table_only_f64(%q: tensor<1x2x20x8xf64>, %k: tensor<1x2x24x8xf64>, %v: tensor<1x2x24x8xf64>, %bias: tensor<47xf64> {attn.grad}, %slope: tensor<4xf64>) -> tensor<1x2x20x8xf64> {
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%x: f64, %b: index, %h: index, %i: index, %j: index):
    %c23 = arith.constant 23 : index
    %d = arith.subi %i, %j : index
    %ix = arith.addi %d, %c23 : index
    %t = tensor.extract %bias[%ix] : tensor<47xf64>
    %m = tensor.extract %slope[%h] : tensor<4xf64>
    %u = tensor.extract %bias[%j] : tensor<47xf64>
    %y = arith.addf %x, %t : f64
    %y2 = arith.mulf %y, %m : f64
    %y3 = arith.addf %y2, %u : f64
    %z = math.tanh %y3 : f64
    gpu.yield %z : f64
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.35 : f64, causal = true, mods = ["scale", "fn"]} : (tensor<1x2x20x8xf64>, tensor<1x2x24x8xf64>, tensor<1x2x24x8xf64>) -> tensor<1x2x20x8xf64>
  return %o : tensor<1x2x20x8xf64>
}
