// RUN: attn-opt %s --split-input-file --attn-fuse --attn-grad | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-fuse --attn-grad | attn-opt --split-input-file | FileCheck %s

// Issue 29: attn-grad derives the backward of each fused attention. The
// forward keeps its row log-sum-exp (attn.fused gets lse and returns it
// too) and @f__grad takes f's arguments, then out, lse and dout, and
// returns dq, dk, dv from one attn.fused_grad with the forward's
// attributes. The result verifies (second RUN).

// The DSL chain: attn-fuse first, then attn-grad.
// CHECK-LABEL: func.func @causal(
// CHECK-SAME: -> (tensor<3x2x130x16xf32>, tensor<3x2x130xf32>)
// CHECK: %[[F:.*]]:2 = "attn.fused"(%arg0, %arg1, %arg2) ({
// CHECK: }) {causal = true, lse, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 2.500000e-01 : f64} : (tensor<3x2x130x16xf32>, tensor<3x2x130x16xf32>, tensor<3x2x130x16xf32>) -> (tensor<3x2x130x16xf32>, tensor<3x2x130xf32>)
// CHECK: return %[[F]]#0, %[[F]]#1 : tensor<3x2x130x16xf32>, tensor<3x2x130xf32>
// CHECK: func.func @causal__grad(%arg0: tensor<3x2x130x16xf32>, %arg1: tensor<3x2x130x16xf32>, %arg2: tensor<3x2x130x16xf32>, %arg3: tensor<3x2x130x16xf32>, %arg4: tensor<3x2x130xf32>, %arg5: tensor<3x2x130x16xf32>) -> (tensor<3x2x130x16xf32>, tensor<3x2x130x16xf32>, tensor<3x2x130x16xf32>)
// CHECK: %[[G:.*]]:3 = "attn.fused_grad"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5) ({
// CHECK: }) {causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 2.500000e-01 : f64}
// CHECK: return %[[G]]#0, %[[G]]#1, %[[G]]#2
func.func @causal(%q: tensor<3x2x130x16xf32>, %k: tensor<3x2x130x16xf32>, %v: tensor<3x2x130x16xf32>) -> tensor<3x2x130x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<3x2x130x16xf32>, tensor<3x2x130x16xf32>) -> tensor<3x2x130x130xf32>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<3x2x130x130xf32>) -> tensor<3x2x130x130xf32>
  %s2 = "attn.causal"(%s1) : (tensor<3x2x130x130xf32>) -> tensor<3x2x130x130xf32>
  %p = "attn.softmax"(%s2) : (tensor<3x2x130x130xf32>) -> tensor<3x2x130x130xf32>
  %o = "attn.pv"(%p, %v) : (tensor<3x2x130x130xf32>, tensor<3x2x130x16xf32>) -> tensor<3x2x130x16xf32>
  return %o : tensor<3x2x130x16xf32>
}

// -----

// GQA, RoPE at an offset, documents and a score_fn body reading a
// captured table: the backward clones the body, whose capture stays the
// argument it was (%arg5), and the extra operands keep their segments.
// CHECK-LABEL: func.func @gqa_rope_document_fn(
// CHECK-SAME: -> (tensor<1x4x16x32xf16>, tensor<1x4x16xf32>)
// CHECK: "attn.fused"(%arg0, %arg1, %arg2, %arg3, %arg4) ({
// CHECK: tensor.extract %arg5
// CHECK: math.tanh
// CHECK: lse, mods = ["scale", "fn"], operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0>, rope = {layout = "rotate_half", offset = 3 : i64, rotary_dim = 32 : i64, theta = 1.000000e+04 : f64}
// CHECK: func.func @gqa_rope_document_fn__grad(%arg0: tensor<1x4x16x32xf16>, %arg1: tensor<1x2x16x32xf16>, %arg2: tensor<1x2x16x32xf16>, %arg3: tensor<1x16xi32>, %arg4: tensor<1x16xi32>, %arg5: tensor<31xf32>, %arg6: tensor<1x4x16x32xf16>, %arg7: tensor<1x4x16xf32>, %arg8: tensor<1x4x16x32xf16>) -> (tensor<1x4x16x32xf16>, tensor<1x2x16x32xf16>, tensor<1x2x16x32xf16>)
// CHECK: "attn.fused_grad"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg6, %arg7, %arg8) ({
// CHECK: tensor.extract %arg5
// CHECK: math.tanh
// CHECK: {causal = true, mods = ["scale", "fn"], operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, rope = {layout = "rotate_half", offset = 3 : i64, rotary_dim = 32 : i64, theta = 1.000000e+04 : f64}, scale = 1.250000e-01 : f64}
func.func @gqa_rope_document_fn(%q: tensor<1x4x16x32xf16>, %k: tensor<1x2x16x32xf16>, %v: tensor<1x2x16x32xf16>, %qs: tensor<1x16xi32>, %ks: tensor<1x16xi32>, %bias: tensor<31xf32>) -> tensor<1x4x16x32xf16> {
  %o = "attn.fused"(%q, %k, %v, %qs, %ks) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c15 = arith.constant 15 : index
    %d = arith.subi %i, %j : index
    %e = arith.addi %d, %c15 : index
    %t = tensor.extract %bias[%e] : tensor<31xf32>
    %y = arith.addf %x, %t : f32
    %z = math.tanh %y : f32
    gpu.yield %z : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0>, scale = 0.125 : f64, causal = true, mods = ["scale", "fn"], rope = {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "rotate_half", offset = 3 : i64}} : (tensor<1x4x16x32xf16>, tensor<1x2x16x32xf16>, tensor<1x2x16x32xf16>, tensor<1x16xi32>, tensor<1x16xi32>) -> tensor<1x4x16x32xf16>
  return %o : tensor<1x4x16x32xf16>
}

// -----

// Softcap, window and explicit positions; a GEMM function beside it is
// left alone.
// CHECK-LABEL: func.func @softcap_window_positions(
// CHECK: lse, mods = ["scale", "softcap"], operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 1>
// CHECK: softcap = 3.000000e+01 : f64, window = array<i64: 4, 0>
// CHECK: func.func @softcap_window_positions__grad(
// CHECK: "attn.fused_grad"
// CHECK: operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>
// CHECK-SAME: softcap = 3.000000e+01 : f64, window = array<i64: 4, 0>
// CHECK-LABEL: func.func @gemm(
// CHECK-NOT: __grad
func.func @softcap_window_positions(%q: tensor<2x2x16x16xbf16>, %k: tensor<2x2x16x16xbf16>, %v: tensor<2x2x16x16xbf16>, %qp: tensor<2x16xi32>, %kp: tensor<2x16xi32>) -> tensor<2x2x16x16xbf16> {
  %o = "attn.fused"(%q, %k, %v, %qp, %kp) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 1>, scale = 0.25 : f64, causal = true, softcap = 30.0 : f64, window = array<i64: 4, 0>, mods = ["scale", "softcap"], rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "interleaved"}} : (tensor<2x2x16x16xbf16>, tensor<2x2x16x16xbf16>, tensor<2x2x16x16xbf16>, tensor<2x16xi32>, tensor<2x16xi32>) -> tensor<2x2x16x16xbf16>
  return %o : tensor<2x2x16x16xbf16>
}
func.func @gemm(%a: tensor<16x32xf32>, %b: tensor<32x8xf32>) -> tensor<16x8xf32> {
  %e = tensor.empty() : tensor<16x8xf32>
  %c = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x8xf32>) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %c : tensor<16x8xf32>
}
