// grad_captures.mlir's programs in f32, for the CPU and the plain GPU
// path (test/tools/attn-run/grad-captures.test, test/GPU/grad-captures.test).
func.func @gate_after_scale_f32(%q: tensor<1x2x20x8xf32>, %k: tensor<1x2x24x8xf32>, %v: tensor<1x2x24x8xf32>, %g: tensor<1x2x20x3xf32> {attn.grad}) -> tensor<1x2x20x8xf32> {
  %o = "attn.fused"(%q, %k, %v, %g) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.35 : f64, causal = true, mods = ["scale", "gate"], gate_block = 10 : i64} : (tensor<1x2x20x8xf32>, tensor<1x2x24x8xf32>, tensor<1x2x24x8xf32>, tensor<1x2x20x3xf32>) -> tensor<1x2x20x8xf32>
  return %o : tensor<1x2x20x8xf32>
}
func.func @gate_then_scale_f32(%q: tensor<1x2x20x8xf32>, %k: tensor<1x2x24x8xf32>, %v: tensor<1x2x24x8xf32>, %g: tensor<1x2x20x3xf32> {attn.grad}) -> tensor<1x2x20x8xf32> {
  %o = "attn.fused"(%q, %k, %v, %g) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.35 : f64, causal = false, mods = ["gate", "scale"], gate_block = 10 : i64} : (tensor<1x2x20x8xf32>, tensor<1x2x24x8xf32>, tensor<1x2x24x8xf32>, tensor<1x2x20x3xf32>) -> tensor<1x2x20x8xf32>
  return %o : tensor<1x2x20x8xf32>
}
func.func @gate_softcap_gqa_f32(%q: tensor<1x4x20x8xf32>, %k: tensor<1x2x24x8xf32>, %v: tensor<1x2x24x8xf32>, %g: tensor<1x4x20x3xf32> {attn.grad}) -> tensor<1x4x20x8xf32> {
  %o = "attn.fused"(%q, %k, %v, %g) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.35 : f64, causal = false, mods = ["scale", "gate", "softcap"], gate_block = 10 : i64, softcap = 2.0 : f64, window = array<i64: 6, 3>} : (tensor<1x4x20x8xf32>, tensor<1x2x24x8xf32>, tensor<1x2x24x8xf32>, tensor<1x4x20x3xf32>) -> tensor<1x4x20x8xf32>
  return %o : tensor<1x4x20x8xf32>
}
func.func @gate_table_f32(%q: tensor<1x2x20x8xf32>, %k: tensor<1x2x24x8xf32>, %v: tensor<1x2x24x8xf32>, %g: tensor<1x2x20x3xf32> {attn.grad}, %bias: tensor<47xf32> {attn.grad}, %slope: tensor<4xf32> {attn.grad}) -> tensor<1x2x20x8xf32> {
  %o = "attn.fused"(%q, %k, %v, %g) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c23 = arith.constant 23 : index
    %d = arith.subi %i, %j : index
    %ix = arith.addi %d, %c23 : index
    %t = tensor.extract %bias[%ix] : tensor<47xf32>
    %m = tensor.extract %slope[%h] : tensor<4xf32>
    %u = tensor.extract %bias[%j] : tensor<47xf32>
    %y = arith.addf %x, %t : f32
    %y2 = arith.mulf %y, %m : f32
    %y3 = arith.addf %y2, %u : f32
    %z = math.tanh %y3 : f32
    gpu.yield %z : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.35 : f64, causal = true, mods = ["scale", "gate", "fn"], gate_block = 10 : i64} : (tensor<1x2x20x8xf32>, tensor<1x2x24x8xf32>, tensor<1x2x24x8xf32>, tensor<1x2x20x3xf32>) -> tensor<1x2x20x8xf32>
  return %o : tensor<1x2x20x8xf32>
}
func.func @table_only_f32(%q: tensor<1x2x20x8xf32>, %k: tensor<1x2x24x8xf32>, %v: tensor<1x2x24x8xf32>, %bias: tensor<47xf32> {attn.grad}, %slope: tensor<4xf32>) -> tensor<1x2x20x8xf32> {
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c23 = arith.constant 23 : index
    %d = arith.subi %i, %j : index
    %ix = arith.addi %d, %c23 : index
    %t = tensor.extract %bias[%ix] : tensor<47xf32>
    %m = tensor.extract %slope[%h] : tensor<4xf32>
    %u = tensor.extract %bias[%j] : tensor<47xf32>
    %y = arith.addf %x, %t : f32
    %y2 = arith.mulf %y, %m : f32
    %y3 = arith.addf %y2, %u : f32
    %z = math.tanh %y3 : f32
    gpu.yield %z : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.35 : f64, causal = true, mods = ["scale", "fn"]} : (tensor<1x2x20x8xf32>, tensor<1x2x24x8xf32>, tensor<1x2x24x8xf32>) -> tensor<1x2x20x8xf32>
  return %o : tensor<1x2x20x8xf32>
}
