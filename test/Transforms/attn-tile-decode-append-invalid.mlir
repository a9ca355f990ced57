// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-tile -o /dev/null

// attn-tile's errors for an attn.cache_append that does not feed an
// attn.fused_decode as the decode kernel's append (issue 30), at the op
// they name.

func.func @append_alone(%k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>, %len: tensor<2xi32>, %kn: tensor<2x2x1x16xf32>, %vn: tensor<2x2x1x16xf32>) -> (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) {
  // expected-error@+1 {{attn-tile supports attn.cache_append feeding an attn.fused_decode (its caches the decode's)}}
  %k2, %v2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous"} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2xi32>, tensor<2x2x1x16xf32>, tensor<2x2x1x16xf32>) -> (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  return %k2, %v2 : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
}

// -----

func.func @not_fed(%q: tensor<2x2x1x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>, %len: tensor<2xi32>, %kn: tensor<2x2x1x16xf32>, %vn: tensor<2x2x1x16xf32>) -> (tensor<2x2x1x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) {
  // expected-error@+1 {{attn-tile expects attn.cache_append's caches to be attn.fused_decode's, with the same cache_seqlens and block_table}}
  %k2, %v2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous"} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2xi32>, tensor<2x2x1x16xf32>, tensor<2x2x1x16xf32>) -> (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  %o = "attn.fused_decode"(%q, %k, %v2, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.25 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x2x1x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2xi32>) -> tensor<2x2x1x16xf32>
  return %o, %k2, %v2 : tensor<2x2x1x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
}

// -----

func.func @args_out_of_order(%q: tensor<2x2x1x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>, %len: tensor<2xi32>, %vn: tensor<2x2x1x16xf32>, %kn: tensor<2x2x1x16xf32>) -> (tensor<2x2x1x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) {
  %k2, %v2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous"} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2xi32>, tensor<2x2x1x16xf32>, tensor<2x2x1x16xf32>) -> (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  // expected-error@+1 {{attn-tile expects the function's arguments to be q, k_cache, v_cache, cache_seqlens, the block_table when paged, k_new and v_new, in order}}
  %o = "attn.fused_decode"(%q, %k2, %v2, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.25 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x2x1x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2xi32>) -> tensor<2x2x1x16xf32>
  return %o, %k2, %v2 : tensor<2x2x1x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>
}

// -----

func.func @caches_not_returned(%q: tensor<2x2x1x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<2x2x8x16xf32>, %len: tensor<2xi32>, %kn: tensor<2x2x1x16xf32>, %vn: tensor<2x2x1x16xf32>) -> tensor<2x2x1x16xf32> {
  // expected-error@+1 {{attn-tile expects the function to return attn.fused_decode's result and attn.cache_append's caches, in that order (the caches are written in place)}}
  %k2, %v2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous"} : (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2xi32>, tensor<2x2x1x16xf32>, tensor<2x2x1x16xf32>) -> (tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>)
  %o = "attn.fused_decode"(%q, %k2, %v2, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.25 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x2x1x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2xi32>) -> tensor<2x2x1x16xf32>
  return %o : tensor<2x2x1x16xf32>
}
