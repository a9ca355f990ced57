// RUN: attn-opt %s --split-input-file --verify-diagnostics
// RUN: %mlir_opt %s --irdl-file=%attn_src/dialects/attn/attn.irdl.mlir --split-input-file --verify-diagnostics

// IRDL-level errors of the attn dialect: attn-opt and stock mlir-opt loading
// the same IRDL must report each alike (STYLE 2.7). The C verifier's checks
// are unknown to mlir-opt; they live in invalid.mlir only.

func.func @scale_missing_attr(%s: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{attribute "scale" is expected but not provided}}
  %0 = "attn.scale"(%s) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @rope_missing_layout(%x: tensor<1x1x4x8xf32>) {
  // expected-error@+1 {{attribute "layout" is expected but not provided}}
  %0 = "attn.rope"(%x) {theta = 10000.0 : f64, rotary_dim = 8 : i64} : (tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return
}

// -----

func.func @qk_one_operand(%q: tensor<1x1x4x8xf32>) {
  // expected-error@+1 {{expects exactly 2 operands, but got 1}}
  %0 = "attn.qk"(%q) : (tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @softmax_no_result(%s: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{expects exactly 1 results, but got 0}}
  "attn.softmax"(%s) : (tensor<1x1x4x4xf32>) -> ()
  return
}

// -----

func.func @scale_integer_attr(%s: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{expected base attribute 'builtin.float' but got 'builtin.integer'}}
  %0 = "attn.scale"(%s) {scale = 1 : i64} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @rope_layout_not_string(%x: tensor<1x1x4x8xf32>) {
  // expected-error@+1 {{expected base attribute 'builtin.string' but got 'builtin.integer'}}
  %0 = "attn.rope"(%x) {theta = 10000.0 : f64, rotary_dim = 8 : i64, layout = 0 : i64} : (tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return
}

// -----

func.func @fused_causal_not_bool(%q: tensor<1x1x4x8xf32>) {
  // expected-error@+1 {{'1 : i32' does not satisfy the constraint}}
  %0 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = 1 : i32} : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return
}

// -----

func.func @softmax_memref(%s: memref<1x1x4x4xf32>) {
  // expected-error@+1 {{expected base type 'builtin.tensor' but got 'builtin.memref'}}
  %0 = "attn.softmax"(%s) : (memref<1x1x4x4xf32>) -> memref<1x1x4x4xf32>
  return
}

// -----

func.func @pv_unranked(%p: tensor<*xf32>, %v: tensor<1x1x4x8xf32>) {
  // expected-error@+1 {{expected base type 'builtin.tensor' but got 'builtin.unranked_tensor'}}
  %0 = "attn.pv"(%p, %v) : (tensor<*xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return
}

// -----

func.func @causal_result_type(%s: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{expected 'tensor<1x1x4x4xf32>' but got 'tensor<1x1x4x4xf16>'}}
  %0 = "attn.causal"(%s) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf16>
  return
}

// -----

// attn.fused's optional inputs are told apart by operandSegmentSizes.
func.func @fused_no_segment_sizes(%q: tensor<1x1x4x8xf32>) {
  // expected-error@+1 {{'operandSegmentSizes' attribute is expected but not provided}}
  %0 = "attn.fused"(%q, %q, %q) ({}, {}) {scale = 1.0 : f64, causal = false} : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return
}

// -----

func.func @fused_two_gates(%q: tensor<1x1x4x8xf32>, %g: tensor<1x1x4x1xf32>) {
  // expected-error@+1 {{element 3 in 'operandSegmentSizes' attribute must be equal to 0 or 1}}
  %0 = "attn.fused"(%q, %q, %q, %g, %g) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 2, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false, gate_block = 8 : i64} : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x1xf32>, tensor<1x1x4x1xf32>) -> tensor<1x1x4x8xf32>
  return
}

// -----

func.func @window_missing_right(%s: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{attribute "right" is expected but not provided}}
  %0 = "attn.window"(%s) {left = 2 : i64} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @document_one_segment(%s: tensor<1x1x4x4xf32>, %ids: tensor<1x4xi32>) {
  // expected-error@+1 {{expects exactly 3 operands, but got 2}}
  %0 = "attn.document"(%s, %ids) : (tensor<1x1x4x4xf32>, tensor<1x4xi32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// Issue 28: attn.score_mod / attn.mask_mod carry one region, attn.fused two
// (always, empty when unused), and a modifier's result has its operand's
// type.
func.func @score_mod_no_region(%s: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{unexpected number of regions: expected 1 but got 0}}
  %0 = "attn.score_mod"(%s) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @fused_one_region(%q: tensor<1x1x4x8xf32>) {
  // expected-error@+1 {{unexpected number of regions: expected 2 but got 1}}
  %0 = "attn.fused"(%q, %q, %q) ({}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false} : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return
}

// -----

func.func @mask_mod_result_type(%s: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{expected 'tensor<1x1x4x4xf32>' but got 'tensor<1x1x4x4xf16>'}}
  %0 = "attn.mask_mod"(%s) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %ok = arith.cmpi ule, %j, %i : index
    gpu.yield %ok : i1
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf16>
  return
}

// -----

// attn.fused_grad (issue 29): eleven operand segments, eleven result
// segments (dq, dk, dv and eight optional grads) summing to its results.
func.func @grad_segment_sizes(%q: tensor<1x2x8x16xf32>, %l: tensor<1x2x8xf32>) {
  // expected-error@+1 {{'operandSegmentSizes' attribute for specifying operand segments must have 11 elements, but got 8}}
  %0:3 = "attn.fused_grad"(%q, %q, %q, %q, %l, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return
}

// -----

func.func @grad_one_result(%q: tensor<1x2x8x16xf32>, %l: tensor<1x2x8xf32>) {
  // expected-error@+1 {{sum of elements in 'resultSegmentSizes' attribute must be equal to the number of results}}
  %0 = "attn.fused_grad"(%q, %q, %q, %q, %l, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}
