// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-tile -o /dev/null

// attn-tile's errors for a function holding attn.fused_decode, at the op
// they name.

func.func @operands_out_of_order(%len: tensor<2xi32>, %q: tensor<2x2x1x16xf32>, %k: tensor<2x2x8x16xf32>) -> tensor<2x2x1x16xf32> {
  // expected-error@+1 {{attn-tile expects the function's arguments to be attn.fused_decode's operands, in order}}
  %o = "attn.fused_decode"(%q, %k, %k, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.25 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x2x1x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2xi32>) -> tensor<2x2x1x16xf32>
  return %o : tensor<2x2x1x16xf32>
}

// -----

func.func @stray_op(%q: tensor<2x2x1x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>, %len: tensor<2xi32>) -> tensor<2x2x1x16xf32> {
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.25 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x2x1x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2xi32>) -> tensor<2x2x1x16xf32>
  // expected-error@+1 {{attn-tile supports functions whose body is one attn.fused_decode op (after an optional attn.cache_append) and the return of its result}}
  %z = arith.addf %o, %o : tensor<2x2x1x16xf32>
  return %z : tensor<2x2x1x16xf32>
}
