// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-grad

// What attn-grad does not take is refused with an error at the op. (Every
// op a verified score_fn body may hold has a derivative rule, so "no
// derivative for" cannot be reached from verified IR.)

func.func @unfused(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32> {
  // expected-error@+1 {{attn-grad: 'attn.qk' is not part of an attn.fused op (run attn-fuse first)}}
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  return %s : tensor<1x2x8x8xf32>
}

// -----

func.func @project(%x: tensor<1x8x32xf32>, %w: tensor<32x32xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error@+1 {{attn-grad: no backward for attn.project yet (q, k and v must be function arguments)}}
  %q = "attn.project"(%x, %w) : (tensor<1x8x32xf32>, tensor<32x32xf32>) -> tensor<1x2x8x16xf32>
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @already_lse(%q: tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>) {
  // expected-error@+1 {{attn-grad: attn.fused already has lse (attn-grad runs once)}}
  %o:2 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true, lse} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return %o#0, %o#1 : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>
}

// -----

// expected-error@+1 {{attn-grad: a symbol named 'f__grad' exists already}}
func.func @f(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}
func.func @f__grad() {
  return
}

// -----

func.func @stray(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  // expected-error@+1 {{attn-grad differentiates functions whose body is one attn.fused op and the return of its result, found 'arith.addf'}}
  %p = arith.addf %o, %o : tensor<1x2x8x16xf32>
  return %p : tensor<1x2x8x16xf32>
}
