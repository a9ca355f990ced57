// RUN: attn-opt %s --split-input-file --attn-grad | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-grad | attn-opt --split-input-file | FileCheck %s

// Issue 29: arguments marked {attn.grad} (the gate, a table a score body
// reads) get gradients: @f__grad returns them after dq, dk, dv, of their
// shapes and the compute type, named by grads in argument order. The
// backward's arguments carry no marks (it has three more arguments than
// @f), the forward keeps them. The result verifies (second RUN).

// CHECK-LABEL: func.func @gate_table(
// CHECK-SAME: %arg3: tensor<1x2x20x3xf32> {attn.grad}, %arg4: tensor<4xf32>, %arg5: tensor<39xf32> {attn.grad})
// CHECK: func.func @gate_table__grad(%arg0: tensor<1x2x20x8xf32>, %arg1: tensor<1x2x20x8xf32>, %arg2: tensor<1x2x20x8xf32>, %arg3: tensor<1x2x20x3xf32>, %arg4: tensor<4xf32>, %arg5: tensor<39xf32>, %arg6: tensor<1x2x20x8xf32>, %arg7: tensor<1x2x20xf32>, %arg8: tensor<1x2x20x8xf32>) -> (tensor<1x2x20x8xf32>, tensor<1x2x20x8xf32>, tensor<1x2x20x8xf32>, tensor<1x2x20x3xf32>, tensor<39xf32>)
// CHECK: %[[G:.*]]:5 = "attn.fused_grad"
// CHECK: grads = ["gate", "capture1"]
// CHECK-SAME: resultSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0>
// CHECK: return %[[G]]#0, %[[G]]#1, %[[G]]#2, %[[G]]#3, %[[G]]#4
func.func @gate_table(%q: tensor<1x2x20x8xf32>, %k: tensor<1x2x20x8xf32>, %v: tensor<1x2x20x8xf32>, %g: tensor<1x2x20x3xf32> {attn.grad}, %slopes: tensor<4xf32>, %bias: tensor<39xf32> {attn.grad}) -> tensor<1x2x20x8xf32> {
  %o = "attn.fused"(%q, %k, %v, %g) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c19 = arith.constant 19 : index
    %d = arith.subi %i, %j : index
    %e = arith.addi %d, %c19 : index
    %t = tensor.extract %bias[%e] : tensor<39xf32>
    %m = tensor.extract %slopes[%h] : tensor<4xf32>
    %y = arith.addf %x, %t : f32
    %y2 = arith.mulf %y, %m : f32
    %z = math.tanh %y2 : f32
    gpu.yield %z : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.35 : f64, causal = true, gate_block = 8 : i64, mods = ["scale", "gate", "fn"]} : (tensor<1x2x20x8xf32>, tensor<1x2x20x8xf32>, tensor<1x2x20x8xf32>, tensor<1x2x20x3xf32>) -> tensor<1x2x20x8xf32>
  return %o : tensor<1x2x20x8xf32>
}

// -----

// An f64 program's gradients are f64; a bf16 table's gradient is f32.
// CHECK-LABEL: func.func @f64_table__grad(
// CHECK-SAME: -> (tensor<1x1x8x4xf64>, tensor<1x1x8x4xf64>, tensor<1x1x8x4xf64>, tensor<8xf64>)
// CHECK: grads = ["capture0"]
// CHECK-LABEL: func.func @bf16_table__grad(
// CHECK-SAME: -> (tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<8xf32>)
func.func @f64_table(%q: tensor<1x1x8x4xf64>, %k: tensor<1x1x8x4xf64>, %v: tensor<1x1x8x4xf64>, %w: tensor<8xf64> {attn.grad}) -> tensor<1x1x8x4xf64> {
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%x: f64, %b: index, %h: index, %i: index, %j: index):
    %t = tensor.extract %w[%j] : tensor<8xf64>
    %y = arith.addf %x, %t : f64
    gpu.yield %y : f64
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.5 : f64, causal = false, mods = ["scale", "fn"]} : (tensor<1x1x8x4xf64>, tensor<1x1x8x4xf64>, tensor<1x1x8x4xf64>) -> tensor<1x1x8x4xf64>
  return %o : tensor<1x1x8x4xf64>
}
func.func @bf16_table(%q: tensor<1x1x8x4xf32>, %k: tensor<1x1x8x4xf32>, %v: tensor<1x1x8x4xf32>, %w: tensor<8xbf16> {attn.grad}) -> tensor<1x1x8x4xf32> {
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %t = tensor.extract %w[%j] : tensor<8xbf16>
    %t32 = arith.extf %t : bf16 to f32
    %y = arith.addf %x, %t32 : f32
    gpu.yield %y : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.5 : f64, causal = false, mods = ["scale", "fn"]} : (tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>, tensor<1x1x8x4xf32>) -> tensor<1x1x8x4xf32>
  return %o : tensor<1x1x8x4xf32>
}
