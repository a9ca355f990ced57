// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-tile

// attn-tile passes what a body captures as kernel arguments: tensors that
// are arguments of the function, read by tensor.extract. Anything else from
// above the body is an error at the op that uses it.

func.func @scalar_capture(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %off: index) -> tensor<1x2x8x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    // expected-error@+1 {{'arith.addi' in attn.fused's mask_fn uses a value from outside the body that is not a tensor argument of the function read by tensor.extract (attn-tile passes captured tensors as kernel arguments)}}
    %e = arith.addi %kv, %off : index
    %ok = arith.cmpi ule, %e, %qi : index
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @rank0_capture(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %t: tensor<f32>) -> tensor<1x2x8x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
    // expected-error@+1 {{a tensor captured by attn.fused's score_fn must have a static shape of rank >= 1 and f32, f16, bf16, i32 or i64 elements, found tensor<f32>}}
    %x = tensor.extract %t[] : tensor<f32>
    %y = arith.addf %s, %x : f32
    gpu.yield %y : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @i8_capture(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %t: tensor<8xi8>) -> tensor<1x2x8x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    // expected-error@+1 {{a tensor captured by attn.fused's mask_fn must have a static shape of rank >= 1 and f32, f16, bf16, i32 or i64 elements, found tensor<8xi8>}}
    %x = tensor.extract %t[%kv] : tensor<8xi8>
    %z = arith.constant 0 : i8
    %ok = arith.cmpi ne, %x, %z : i8
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @dynamic_capture(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %t: tensor<?xf32>) -> tensor<1x2x8x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
    // expected-error@+1 {{found tensor<?xf32>}}
    %x = tensor.extract %t[%kv] : tensor<?xf32>
    %y = arith.addf %s, %x : f32
    gpu.yield %y : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// An argument neither an operand nor captured.
// expected-error@+1 {{attn-tile expects the function to take exactly the operands of attn.fused and the tensors its bodies capture}}
func.func @unused_argument(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %t: tensor<8xf32>, %u: tensor<8xf32>) -> tensor<1x2x8x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
    %x = tensor.extract %t[%kv] : tensor<8xf32>
    %y = arith.addf %s, %x : f32
    gpu.yield %y : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}
