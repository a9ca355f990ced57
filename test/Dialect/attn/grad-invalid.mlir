// RUN: attn-opt %s --split-input-file --verify-diagnostics

// The C verifier's errors for attn.fused's lse result and attn.fused_grad
// (issue 29), each at the op.

func.func @lse_one_result(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{attn.fused with lse has two results (out, lse), found 1}}
  %0 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false, lse} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @two_results_without_lse(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{attn.fused without lse has one result, found 2 (the unit attribute lse asks for the second)}}
  %0:2 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return
}

// -----

func.func @lse_not_unit(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{lse must be a unit attribute}}
  %0:2 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false, lse = true} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  return
}

// -----

func.func @lse_wrong_shape(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{lse result shape must be 1x2x8, found 1x2x16}}
  %0:2 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false, lse} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x16xf32>)
  return
}

// -----

func.func @lse_f16(%q: tensor<1x2x8x16xf16>) {
  // expected-error@+1 {{lse result element type must be f32, found f16}}
  %0:2 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false, lse} : (tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>) -> (tensor<1x2x8x16xf16>, tensor<1x2x8xf16>)
  return
}

// -----

func.func @grad_out_shape(%q: tensor<1x2x8x16xf32>, %o: tensor<1x2x8x8xf32>, %l: tensor<1x2x8xf32>) {
  // expected-error@+1 {{out shape must be 1x2x8x16, found 1x2x8x8}}
  %0:3 = "attn.fused_grad"(%q, %q, %q, %o, %l, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return
}

// -----

func.func @grad_lse_shape(%q: tensor<1x2x8x16xf32>, %l: tensor<1x8x2xf32>) {
  // expected-error@+1 {{lse shape must be 1x2x8, found 1x8x2}}
  %0:3 = "attn.fused_grad"(%q, %q, %q, %q, %l, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x8x2xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return
}

// -----

func.func @grad_dout_elem(%q: tensor<1x2x8x16xf16>, %l: tensor<1x2x8xf32>, %do: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{q and dout element types differ: f16 vs f32}}
  %0:3 = "attn.fused_grad"(%q, %q, %q, %q, %l, %do) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false} : (tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>)
  return
}

// -----

func.func @grad_dk_type(%q: tensor<1x4x8x16xf32>, %k: tensor<1x2x8x16xf32>, %l: tensor<1x4x8xf32>) {
  // expected-error@+1 {{result dk must have the type of k, tensor<1x2x8x16xf32>, found tensor<1x4x8x16xf32>}}
  %0:3 = "attn.fused_grad"(%q, %k, %k, %q, %l, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false} : (tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8xf32>, tensor<1x4x8x16xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>)
  return
}

// -----

func.func @grad_lse_attribute(%q: tensor<1x2x8x16xf32>, %l: tensor<1x2x8xf32>) {
  // expected-error@+1 {{attn.fused_grad takes lse as an operand, not as an attribute}}
  %0:3 = "attn.fused_grad"(%q, %q, %q, %q, %l, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false, lse} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return
}

// -----

func.func @grad_window(%q: tensor<1x2x8x16xf32>, %l: tensor<1x2x8xf32>) {
  // expected-error@+1 {{window left must be -1 (unbounded) or non-negative, found -3}}
  %0:3 = "attn.fused_grad"(%q, %q, %q, %q, %l, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false, window = array<i64: -3, 0>} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
  return
}

// -----

// lse is of the program's compute type: f64 for an f64 program.
func.func @lse_f32_in_f64_program(%q: tensor<1x2x8x16xf64>) {
  // expected-error@+1 {{lse result element type must be f64 (the program is f64), found f32}}
  %0:2 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false, lse} : (tensor<1x2x8x16xf64>, tensor<1x2x8x16xf64>, tensor<1x2x8x16xf64>) -> (tensor<1x2x8x16xf64>, tensor<1x2x8xf32>)
  return
}

// -----

func.func @grad_lse_f32_in_f64_program(%q: tensor<1x2x8x16xf64>, %lse: tensor<1x2x8xf32>) {
  // expected-error@+1 {{lse element type must be f64 (the program is f64), found f32}}
  %0:3 = "attn.fused_grad"(%q, %q, %q, %q, %lse, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false} : (tensor<1x2x8x16xf64>, tensor<1x2x8x16xf64>, tensor<1x2x8x16xf64>, tensor<1x2x8x16xf64>, tensor<1x2x8xf32>, tensor<1x2x8x16xf64>) -> (tensor<1x2x8x16xf64>, tensor<1x2x8x16xf64>, tensor<1x2x8x16xf64>)
  return
}

// -----

func.func @lse_f64_in_f32_program(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{lse result element type must be f32, found f64}}
  %0:2 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = false, lse} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf64>)
  return
}

// -----

// Gradients into captured tensors (issue 29): attn.fused_grad's grads and
// its results after dv, each case one error.
func.func @grads_not_strings(%q: tensor<1x2x8x16xf32>, %l: tensor<1x2x8xf32>, %g: tensor<1x2x8x2xf32>) {
  // expected-error@+1 {{grads must be an array of at most 8 strings "gate" or "capture<i>"}}
  %0:5 = "attn.fused_grad"(%q, %q, %q, %g, %q, %l, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0>, grads = ["gate", "capture01"], gate_block = 4 : i64, mods = ["scale", "gate"], scale = 1.0 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x2xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x2xf32>, tensor<4xf32>)
  return
}
// -----

func.func @grads_count(%q: tensor<1x2x8x16xf32>, %l: tensor<1x2x8xf32>, %g: tensor<1x2x8x2xf32>) {
  // expected-error@+1 {{attn.fused_grad has 1 grads and 2 results after dv: one per entry}}
  %0:5 = "attn.fused_grad"(%q, %q, %q, %g, %q, %l, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0>, grads = ["gate"], gate_block = 4 : i64, mods = ["scale", "gate"], scale = 1.0 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x2xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x2xf32>, tensor<4xf32>)
  return
}
// -----

func.func @grads_segments(%q: tensor<1x2x8x16xf32>, %l: tensor<1x2x8xf32>, %g: tensor<1x2x8x2xf32>) {
  // expected-error@+1 {{attn.fused_grad needs resultSegmentSizes with 11 entries: 1, 1, 1 (dq, dk, dv), then 1 ones (its grads) and zeros}}
  %0:4 = "attn.fused_grad"(%q, %q, %q, %g, %q, %l, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0>, grads = ["gate"], gate_block = 4 : i64, mods = ["scale", "gate"], scale = 1.0 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x2xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x2xf32>)
  return
}
// -----

func.func @grads_twice(%q: tensor<1x2x8x16xf32>, %l: tensor<1x2x8xf32>, %g: tensor<1x2x8x2xf32>) {
  // expected-error@+1 {{grads names one tensor twice (entry 1)}}
  %0:5 = "attn.fused_grad"(%q, %q, %q, %g, %q, %l, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0>, grads = ["capture0", "capture0"], gate_block = 4 : i64, mods = ["scale", "gate"], scale = 1.0 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x2xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}
// -----

func.func @grad_type(%q: tensor<1x2x8x16xf32>, %l: tensor<1x2x8xf32>, %g: tensor<1x2x8x2xf32>) {
  // expected-error@+1 {{grad result 0 must be a static tensor of the compute type (f32), found tensor<4xf16>}}
  %0:4 = "attn.fused_grad"(%q, %q, %q, %g, %q, %l, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0>, grads = ["capture0"], gate_block = 4 : i64, mods = ["scale", "gate"], scale = 1.0 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x2xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<4xf16>)
  return
}
// -----

func.func @gate_grad_without_gate(%q: tensor<1x2x8x16xf32>, %l: tensor<1x2x8xf32>, %g: tensor<1x2x8x2xf32>) {
  // expected-error@+1 {{grads names the gate, but attn.fused_grad has no gate operand}}
  %0:4 = "attn.fused_grad"(%q, %q, %q, %q, %l, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0>, grads = ["gate"], scale = 1.0 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x2xf32>)
  return
}
// -----

func.func @gate_grad_shape(%q: tensor<1x2x8x16xf32>, %l: tensor<1x2x8xf32>, %g: tensor<1x2x8x2xf32>) {
  // expected-error@+1 {{the gate's grad must have the gate's shape, found tensor<1x2x8x3xf32>}}
  %0:4 = "attn.fused_grad"(%q, %q, %q, %g, %q, %l, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0>, grads = ["gate"], gate_block = 4 : i64, mods = ["scale", "gate"], scale = 1.0 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x2xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x3xf32>)
  return
}
