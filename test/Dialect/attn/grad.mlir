// RUN: attn-opt %s | attn-opt | FileCheck %s

// attn.fused with the unit attribute lse has two results: out and the row
// log-sum-exp [B, H, N] in f32 (issue 29). attn.fused_grad, its backward,
// takes attn.fused's inputs, then out, lse and dout, and gives dq, dk, dv.

// CHECK-LABEL: @fused_lse
// CHECK: %{{.*}}:2 = "attn.fused"(%{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK: }) {causal = true, lse, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<2x8x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>) -> (tensor<2x8x16x64xf16>, tensor<2x8x16xf32>)
func.func @fused_lse(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x16x64xf16>, %v: tensor<2x2x16x64xf16>) -> (tensor<2x8x16x64xf16>, tensor<2x8x16xf32>) {
  %o, %lse = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, lse} : (tensor<2x8x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>) -> (tensor<2x8x16x64xf16>, tensor<2x8x16xf32>)
  return %o, %lse : tensor<2x8x16x64xf16>, tensor<2x8x16xf32>
}

// CHECK-LABEL: @fused_grad_plain
// CHECK: %{{.*}}:3 = "attn.fused_grad"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK: }) {causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, rope = {layout = "rotate_half", rotary_dim = 64 : i64, theta = 1.000000e+04 : f64}, scale = 1.250000e-01 : f64}
func.func @fused_grad_plain(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x16x64xf16>, %v: tensor<2x2x16x64xf16>, %o: tensor<2x8x16x64xf16>, %lse: tensor<2x8x16xf32>, %do: tensor<2x8x16x64xf16>) -> (tensor<2x8x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>) {
  %dq, %dk, %dv = "attn.fused_grad"(%q, %k, %v, %o, %lse, %do) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<2x8x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x8x16x64xf16>, tensor<2x8x16xf32>, tensor<2x8x16x64xf16>) -> (tensor<2x8x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>)
  return %dq, %dk, %dv : tensor<2x8x16x64xf16>, tensor<2x2x16x64xf16>, tensor<2x2x16x64xf16>
}

// The optional inputs (document segment ids here) and the bodies come as
// attn.fused's do.
// CHECK-LABEL: @fused_grad_document_softcap_fn
// CHECK: "attn.fused_grad"
// CHECK: arith.mulf
// CHECK: gpu.yield
// CHECK: operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>
func.func @fused_grad_document_softcap_fn(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %qs: tensor<1x8xi32>, %ks: tensor<1x8xi32>, %o: tensor<1x2x8x16xf32>, %lse: tensor<1x2x8xf32>, %do: tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {
  %dq, %dk, %dv = "attn.fused_grad"(%q, %k, %v, %qs, %ks, %o, %lse, %do) ({
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 2.0 : f32
    %y = arith.mulf %s, %c : f32
    gpu.yield %y : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = false, softcap = 30.0 : f64, mods = ["scale", "softcap", "fn"]} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x8xi32>, tensor<1x8xi32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return %dq, %dk, %dv : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
}

// Gradients into captured tensors: dgate and a table's, named by grads.
// CHECK-LABEL: func.func @grads_gate_capture
// CHECK: "attn.fused_grad"
// CHECK: }) {
// CHECK-SAME: grads = ["gate", "capture0"]
// CHECK-SAME: resultSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0>
// CHECK-SAME: -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x2xf32>, tensor<15xf32>)
func.func @grads_gate_capture(%q: tensor<1x2x8x16xf32>, %l: tensor<1x2x8xf32>, %g: tensor<1x2x8x2xf32>, %t: tensor<15xf32>) {
  %0:5 = "attn.fused_grad"(%q, %q, %q, %g, %q, %l, %q) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c7 = arith.constant 7 : index
    %d = arith.subi %i, %j : index
    %e = arith.addi %d, %c7 : index
    %y = tensor.extract %t[%e] : tensor<15xf32>
    %z = arith.addf %x, %y : f32
    gpu.yield %z : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0>, grads = ["gate", "capture0"], gate_block = 4 : i64, mods = ["scale", "gate", "fn"], scale = 1.0 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x2xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x2xf32>, tensor<15xf32>)
  return
}
