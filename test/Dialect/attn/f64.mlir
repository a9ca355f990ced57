// RUN: attn-opt %s | attn-opt | FileCheck %s

// f64 programs (issue 29's gradcheck on the CPU path): q, k, v of f64, and
// what the program computes in, its compute type, f64 too: the gate bias,
// the lse result and input, and the score bodies' score (f64 values and
// captures in bodies are f64 programs' only: f64-invalid.mlir).

// CHECK-LABEL: @chain_f64
// CHECK: "attn.gate"(%{{.*}}, %{{.*}}) {block_size = 8 : i64} : (tensor<1x2x16x16xf64>, tensor<1x2x16x2xf64>) -> tensor<1x2x16x16xf64>
// CHECK: "attn.score_mod"
// CHECK: ^bb0(%{{.*}}: f64, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK: tensor.extract %{{.*}} : tensor<2xf64>
// CHECK: gpu.yield %{{.*}} : f64
func.func @chain_f64(%q: tensor<1x2x16x8xf64>, %k: tensor<1x2x16x8xf64>, %v: tensor<1x2x16x8xf64>, %g: tensor<1x2x16x2xf64>, %bias: tensor<2xf64>) -> tensor<1x2x16x8xf64> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>) -> tensor<1x2x16x16xf64>
  %s1 = "attn.scale"(%s) {scale = 0.5 : f64} : (tensor<1x2x16x16xf64>) -> tensor<1x2x16x16xf64>
  %s2 = "attn.gate"(%s1, %g) {block_size = 8 : i64} : (tensor<1x2x16x16xf64>, tensor<1x2x16x2xf64>) -> tensor<1x2x16x16xf64>
  %s3 = "attn.score_mod"(%s2) ({
  ^bb0(%x: f64, %b: index, %h: index, %i: index, %j: index):
    %c = tensor.extract %bias[%h] : tensor<2xf64>
    %y = arith.addf %x, %c : f64
    gpu.yield %y : f64
  }) : (tensor<1x2x16x16xf64>) -> tensor<1x2x16x16xf64>
  %p = "attn.softmax"(%s3) : (tensor<1x2x16x16xf64>) -> tensor<1x2x16x16xf64>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x16x16xf64>, tensor<1x2x16x8xf64>) -> tensor<1x2x16x8xf64>
  return %o : tensor<1x2x16x8xf64>
}

// CHECK-LABEL: @fused_lse_f64
// CHECK: -> (tensor<1x2x16x8xf64>, tensor<1x2x16xf64>)
func.func @fused_lse_f64(%q: tensor<1x2x16x8xf64>) -> (tensor<1x2x16x8xf64>, tensor<1x2x16xf64>) {
  %o, %lse = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = true, lse} : (tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>) -> (tensor<1x2x16x8xf64>, tensor<1x2x16xf64>)
  return %o, %lse : tensor<1x2x16x8xf64>, tensor<1x2x16xf64>
}

// CHECK-LABEL: @fused_grad_f64
// CHECK: "attn.fused_grad"
// CHECK: ^bb0(%{{.*}}: f64,
// CHECK: (tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>, tensor<1x2x16xf64>, tensor<1x2x16x8xf64>) -> (tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>)
func.func @fused_grad_f64(%q: tensor<1x2x16x8xf64>, %o: tensor<1x2x16x8xf64>, %lse: tensor<1x2x16xf64>, %do: tensor<1x2x16x8xf64>) -> (tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>) {
  %dq, %dk, %dv = "attn.fused_grad"(%q, %q, %q, %o, %lse, %do) ({
  ^bb0(%s: f64, %b: index, %h: index, %i: index, %j: index):
    %t = math.tanh %s : f64
    gpu.yield %t : f64
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = false, mods = ["scale", "fn"]} : (tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>, tensor<1x2x16xf64>, tensor<1x2x16x8xf64>) -> (tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>)
  return %dq, %dk, %dv : tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>, tensor<1x2x16x8xf64>
}
