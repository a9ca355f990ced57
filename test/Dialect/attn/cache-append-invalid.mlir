// RUN: attn-opt %s --split-input-file --verify-diagnostics

// The C verifier's errors for attn.cache_append (issue 30), each at the op:
// the layout and attributes, RoPE, k_new and v_new against the caches, the
// caches' shapes, lengths and block table (shared with attn.fused_decode).

func.func @bad_layout(%k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>, %kn: tensor<2x2x1x64xf16>, %vn: tensor<2x2x1x64xf16>) {
  // expected-error@+1 {{cache_layout must be "contiguous" or "paged"}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "ring"} : (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>, tensor<2x2x1x64xf16>, tensor<2x2x1x64xf16>) -> (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>)
  return
}

// -----

func.func @contiguous_page_size(%k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>, %kn: tensor<2x2x1x64xf16>, %vn: tensor<2x2x1x64xf16>) {
  // expected-error@+1 {{page_size applies to a paged cache only}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous", page_size = 16 : i64} : (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>, tensor<2x2x1x64xf16>, tensor<2x2x1x64xf16>) -> (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>)
  return
}

// -----

func.func @unknown_attr(%k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>, %kn: tensor<2x2x1x64xf16>, %vn: tensor<2x2x1x64xf16>) {
  // expected-error@+1 {{attn.cache_append has no attribute 'scale' (it takes cache_layout, page_size and rope)}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous", scale = 1.0 : f64} : (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>, tensor<2x2x1x64xf16>, tensor<2x2x1x64xf16>) -> (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>)
  return
}

// -----

func.func @rope_offset(%k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>, %kn: tensor<2x2x1x64xf16>, %vn: tensor<2x2x1x64xf16>) {
  // expected-error@+1 {{rope of attn.cache_append takes theta, rotary_dim and layout: a new key's position is its sequence's length - N + its row}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous", rope = {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half", offset = 3 : i64}} : (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>, tensor<2x2x1x64xf16>, tensor<2x2x1x64xf16>) -> (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>)
  return
}

// -----

func.func @rope_dim(%k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>, %kn: tensor<2x2x1x64xf16>, %vn: tensor<2x2x1x64xf16>) {
  // expected-error@+1 {{rope rotary_dim}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous", rope = {theta = 10000.0 : f64, rotary_dim = 80 : i64, layout = "rotate_half"}} : (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>, tensor<2x2x1x64xf16>, tensor<2x2x1x64xf16>) -> (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>)
  return
}

// -----

func.func @head_dim(%k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>, %kn: tensor<2x2x1x32xf16>, %vn: tensor<2x2x1x64xf16>) {
  // expected-error@+1 {{head dim mismatch: k_new has 32, k_cache has 64}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous"} : (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>, tensor<2x2x1x32xf16>, tensor<2x2x1x64xf16>) -> (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>)
  return
}

// -----

func.func @heads(%k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>, %kn: tensor<2x1x1x64xf16>, %vn: tensor<2x2x1x64xf16>) {
  // expected-error@+1 {{k_new has 1 heads, k_cache 2}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous"} : (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>, tensor<2x1x1x64xf16>, tensor<2x2x1x64xf16>) -> (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>)
  return
}

// -----

func.func @v_new_shape(%k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>, %kn: tensor<2x2x1x64xf16>, %vn: tensor<2x2x2x64xf16>) {
  // expected-error@+1 {{v_new shape must be 2x2x1x64, found 2x2x2x64}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous"} : (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>, tensor<2x2x1x64xf16>, tensor<2x2x2x64xf16>) -> (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>)
  return
}

// -----

func.func @dtype(%k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>, %kn: tensor<2x2x1x64xbf16>, %vn: tensor<2x2x1x64xf16>) {
  // expected-error@+1 {{k_cache and k_new element types differ: f16 vs bf16}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous"} : (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>, tensor<2x2x1x64xbf16>, tensor<2x2x1x64xf16>) -> (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>)
  return
}

// -----

func.func @batch(%k: tensor<3x2x64x64xf16>, %v: tensor<3x2x64x64xf16>, %len: tensor<2xi32>, %kn: tensor<2x2x1x64xf16>, %vn: tensor<2x2x1x64xf16>) {
  // expected-error@+1 {{batch mismatch: 2 vs 3 in k_cache}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous"} : (tensor<3x2x64x64xf16>, tensor<3x2x64x64xf16>, tensor<2xi32>, tensor<2x2x1x64xf16>, tensor<2x2x1x64xf16>) -> (tensor<3x2x64x64xf16>, tensor<3x2x64x64xf16>)
  return
}

// -----

func.func @lens_dtype(%k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi64>, %kn: tensor<2x2x1x64xf16>, %vn: tensor<2x2x1x64xf16>) {
  // expected-error@+1 {{cache_seqlens element type must be i32, found i64}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous"} : (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi64>, tensor<2x2x1x64xf16>, tensor<2x2x1x64xf16>) -> (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>)
  return
}

// -----

func.func @too_many(%k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>, %kn: tensor<2x2x65x64xf16>, %vn: tensor<2x2x65x64xf16>) {
  // expected-error@+1 {{k_new has 65 rows but a sequence holds at most 64 keys}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous"} : (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>, tensor<2x2x65x64xf16>, tensor<2x2x65x64xf16>) -> (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>)
  return
}

// -----

func.func @paged_page_size(%k: tensor<10x2x16x64xf16>, %v: tensor<10x2x16x64xf16>, %len: tensor<2xi32>, %t: tensor<2x4xi32>, %kn: tensor<2x2x1x64xf16>, %vn: tensor<2x2x1x64xf16>) {
  // expected-error@+1 {{k_cache has pages of 16 rows, but page_size is 32}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %t, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, cache_layout = "paged", page_size = 32 : i64} : (tensor<10x2x16x64xf16>, tensor<10x2x16x64xf16>, tensor<2xi32>, tensor<2x4xi32>, tensor<2x2x1x64xf16>, tensor<2x2x1x64xf16>) -> (tensor<10x2x16x64xf16>, tensor<10x2x16x64xf16>)
  return
}

// -----

func.func @table_shape(%k: tensor<10x2x16x64xf16>, %v: tensor<10x2x16x64xf16>, %len: tensor<2xi32>, %t: tensor<3x4xi32>, %kn: tensor<2x2x1x64xf16>, %vn: tensor<2x2x1x64xf16>) {
  // expected-error@+1 {{block_table shape must be 2x4, found 3x4}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %t, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, cache_layout = "paged", page_size = 16 : i64} : (tensor<10x2x16x64xf16>, tensor<10x2x16x64xf16>, tensor<2xi32>, tensor<3x4xi32>, tensor<2x2x1x64xf16>, tensor<2x2x1x64xf16>) -> (tensor<10x2x16x64xf16>, tensor<10x2x16x64xf16>)
  return
}

// -----

func.func @paged_no_table(%k: tensor<10x2x16x64xf16>, %v: tensor<10x2x16x64xf16>, %len: tensor<2xi32>, %kn: tensor<2x2x1x64xf16>, %vn: tensor<2x2x1x64xf16>) {
  // expected-error@+1 {{attn.cache_append takes k_cache, v_cache, cache_seqlens, block_table (a paged cache), k_new and v_new, found 5 operands}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "paged", page_size = 16 : i64} : (tensor<10x2x16x64xf16>, tensor<10x2x16x64xf16>, tensor<2xi32>, tensor<2x2x1x64xf16>, tensor<2x2x1x64xf16>) -> (tensor<10x2x16x64xf16>, tensor<10x2x16x64xf16>)
  return
}

// -----

func.func @f64(%k: tensor<2x2x64x64xf64>, %v: tensor<2x2x64x64xf64>, %len: tensor<2xi32>, %kn: tensor<2x2x1x64xf64>, %vn: tensor<2x2x1x64xf64>) {
  // expected-error@+1 {{attn.cache_append takes f32, f16 or bf16 tensors, found f64}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous"} : (tensor<2x2x64x64xf64>, tensor<2x2x64x64xf64>, tensor<2xi32>, tensor<2x2x1x64xf64>, tensor<2x2x1x64xf64>) -> (tensor<2x2x64x64xf64>, tensor<2x2x64x64xf64>)
  return
}

// -----

// The results are the caches: IRDL unifies their types with the operands'.
func.func @result_type(%k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>, %kn: tensor<2x2x1x64xf16>, %vn: tensor<2x2x1x64xf16>) {
  // expected-error@+1 {{expected 'tensor<2x2x64x64xf16>' but got 'tensor<2x2x32x64xf16>'}}
  %r:2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous"} : (tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>, tensor<2x2x1x64xf16>, tensor<2x2x1x64xf16>) -> (tensor<2x2x64x64xf16>, tensor<2x2x32x64xf16>)
  return
}
