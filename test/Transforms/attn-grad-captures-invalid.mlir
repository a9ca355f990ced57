// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-grad

// Issue 29: {attn.grad} asks attn-grad for the gradient of a captured
// tensor or the gate. On anything else it is an error at the argument.

// expected-error@+1 {{attn-grad: {attn.grad} on q: q, k and v always get their gradients}}
func.func @on_q(%q: tensor<1x2x8x16xf32> {attn.grad}, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// expected-error@+1 {{attn-grad: {attn.grad} on argument 3, which is not a float tensor read by the program (segment ids and positions have no gradient)}}
func.func @on_segments(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %qs: tensor<1x8xi32> {attn.grad}, %ks: tensor<1x8xi32>) -> tensor<1x2x8x16xf32> {
  %o = "attn.fused"(%q, %k, %v, %qs, %ks) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0>, scale = 0.25 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x8xi32>, tensor<1x8xi32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// An index table the score body reads: integers have no gradient.
// expected-error@+1 {{attn-grad: {attn.grad} on argument 3, which is not a float tensor read by the program (found tensor<8xi32>)}}
func.func @integer_capture(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %ids: tensor<8xi32> {attn.grad}) -> tensor<1x2x8x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %t = tensor.extract %ids[%j] : tensor<8xi32>
    %f = arith.sitofp %t : i32 to f32
    %y = arith.addf %x, %f : f32
    gpu.yield %y : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = false, mods = ["scale", "fn"]} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// A float tensor only the mask body reads.
// expected-error@+1 {{attn-grad: {attn.grad} on argument 3, which only a mask_mod reads (masks have no gradient)}}
func.func @mask_only(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %lim: tensor<8xf32> {attn.grad}) -> tensor<1x2x8x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %t = tensor.extract %lim[%j] : tensor<8xf32>
    %z = arith.constant 0.0 : f32
    %ok = arith.cmpf ogt, %t, %z : f32
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// An argument nothing reads.
// expected-error@+1 {{attn-grad: {attn.grad} on argument 3, which is not a float tensor read by the program}}
func.func @unread(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %t: tensor<8xf32> {attn.grad}) -> tensor<1x2x8x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}
