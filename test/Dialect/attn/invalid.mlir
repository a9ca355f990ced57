// RUN: attn-opt %s --split-input-file --verify-diagnostics

// IRDL: a required attribute is missing.
func.func @scale_missing_attr(%s: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{attribute "scale" is expected but not provided}}
  %0 = "attn.scale"(%s) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// IRDL: wrong number of operands.
func.func @qk_one_operand(%q: tensor<1x1x4x8xf32>) {
  // expected-error@+1 {{expects exactly 2 operands, but got 1}}
  %0 = "attn.qk"(%q) : (tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// IRDL: an attribute of the wrong kind.
func.func @scale_integer_attr(%s: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{expected base attribute 'builtin.float' but got 'builtin.integer'}}
  %0 = "attn.scale"(%s) {scale = 1 : i64} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// IRDL: causal must be the constant true or false.
func.func @fused_causal_not_bool(%q: tensor<1x1x4x8xf32>) {
  // expected-error@+1 {{'1 : i32' does not satisfy the constraint}}
  %0 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.0 : f64, causal = 1 : i32} : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return
}

// -----

// IRDL: memrefs are tile-level values, not attn values.
func.func @softmax_memref(%s: memref<1x1x4x4xf32>) {
  // expected-error@+1 {{expected base type 'builtin.tensor' but got 'builtin.memref'}}
  %0 = "attn.softmax"(%s) : (memref<1x1x4x4xf32>) -> memref<1x1x4x4xf32>
  return
}

// -----

// IRDL: one constraint variable binds operand and result to one type.
func.func @causal_result_type(%s: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{expected 'tensor<1x1x4x4xf32>' but got 'tensor<1x1x4x4xf16>'}}
  %0 = "attn.causal"(%s) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf16>
  return
}

// -----

func.func @qk_rank3(%q: tensor<8x16x64xf32>, %k: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{q must be a static rank-4 tensor [batch, heads, seq, dim], found tensor<8x16x64xf32>}}
  %0 = "attn.qk"(%q, %k) : (tensor<8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x16xf32>
  return
}

// -----

func.func @softmax_dynamic(%s: tensor<1x8x?x16xf32>) {
  // expected-error@+1 {{operand must be a static rank-4 tensor [batch, heads, seq, dim], found tensor<1x8x?x16xf32>}}
  %0 = "attn.softmax"(%s) : (tensor<1x8x?x16xf32>) -> tensor<1x8x?x16xf32>
  return
}

// -----

func.func @pv_result_rank3(%p: tensor<1x8x16x16xf32>, %v: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{result must be a static rank-4 tensor [batch, heads, seq, dim], found tensor<8x16x64xf32>}}
  %0 = "attn.pv"(%p, %v) : (tensor<1x8x16x16xf32>, tensor<1x8x16x64xf32>) -> tensor<8x16x64xf32>
  return
}

// -----

// f64 is an element type now (the CPU path's float64 programs); f8 is not.
func.func @qk_f8(%q: tensor<1x8x16x64xf8E4M3FN>, %k: tensor<1x8x16x64xf8E4M3FN>) {
  // expected-error@+1 {{q element type must be f32, f16, bf16 or f64, found f8E4M3FN}}
  %0 = "attn.qk"(%q, %k) : (tensor<1x8x16x64xf8E4M3FN>, tensor<1x8x16x64xf8E4M3FN>) -> tensor<1x8x16x16xf8E4M3FN>
  return
}

// -----

func.func @causal_i32(%s: tensor<1x8x16x16xi32>) {
  // expected-error@+1 {{operand element type must be f32, f16, bf16 or f64, found i32}}
  %0 = "attn.causal"(%s) : (tensor<1x8x16x16xi32>) -> tensor<1x8x16x16xi32>
  return
}

// -----

func.func @scale_empty_dim(%s: tensor<1x0x16x16xf32>) {
  // expected-error@+1 {{operand has an empty dimension}}
  %0 = "attn.scale"(%s) {scale = 2.0 : f64} : (tensor<1x0x16x16xf32>) -> tensor<1x0x16x16xf32>
  return
}

// -----

func.func @scale_zero(%s: tensor<1x8x16x16xf32>) {
  // expected-error@+1 {{scale must be positive and finite, found 0}}
  %0 = "attn.scale"(%s) {scale = 0.0 : f64} : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  return
}

// -----

// Regression (issue 4): a negative scale used to verify, and turned masked
// (-inf) scores into +inf in the kernel's softmax.
func.func @scale_negative(%s: tensor<1x8x16x16xf32>) {
  // expected-error@+1 {{scale must be positive and finite, found -2}}
  %0 = "attn.scale"(%s) {scale = -2.0 : f64} : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  return
}

// -----

func.func @scale_inf(%s: tensor<1x8x16x16xf32>) {
  // expected-error@+1 {{scale must be positive and finite, found inf}}
  %0 = "attn.scale"(%s) {scale = 0x7FF0000000000000 : f64} : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  return
}

// -----

func.func @rope_theta_zero(%x: tensor<1x4x16x64xf32>) {
  // expected-error@+1 {{rope theta must be positive and finite, found 0}}
  %0 = "attn.rope"(%x) {theta = 0.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<1x4x16x64xf32>) -> tensor<1x4x16x64xf32>
  return
}

// -----

func.func @rope_theta_nan(%x: tensor<1x4x16x64xf32>) {
  // expected-error@+1 {{rope theta must be positive and finite, found nan}}
  %0 = "attn.rope"(%x) {theta = 0x7FF8000000000000 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<1x4x16x64xf32>) -> tensor<1x4x16x64xf32>
  return
}

// -----

func.func @rope_rotary_dim_odd(%x: tensor<1x4x16x64xf32>) {
  // expected-error@+1 {{rope rotary_dim must be even and at least 2, found 63}}
  %0 = "attn.rope"(%x) {theta = 10000.0 : f64, rotary_dim = 63 : i64, layout = "interleaved"} : (tensor<1x4x16x64xf32>) -> tensor<1x4x16x64xf32>
  return
}

// -----

func.func @rope_rotary_dim_zero(%x: tensor<1x4x16x64xf32>) {
  // expected-error@+1 {{rope rotary_dim must be even and at least 2, found 0}}
  %0 = "attn.rope"(%x) {theta = 10000.0 : f64, rotary_dim = 0 : i64, layout = "rotate_half"} : (tensor<1x4x16x64xf32>) -> tensor<1x4x16x64xf32>
  return
}

// -----

func.func @rope_rotary_dim_too_big(%x: tensor<1x4x16x64xf16>) {
  // expected-error@+1 {{rope rotary_dim 128 exceeds head dim 64}}
  %0 = "attn.rope"(%x) {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"} : (tensor<1x4x16x64xf16>) -> tensor<1x4x16x64xf16>
  return
}

// -----

// Regression: a boolean rotary_dim passes IRDL's integer constraint and used
// to be reported as a bad layout.
func.func @rope_rotary_dim_bool(%x: tensor<1x4x16x64xf32>) {
  // expected-error@+1 {{rope rotary_dim must be an integer, found a boolean}}
  %0 = "attn.rope"(%x) {theta = 10000.0 : f64, rotary_dim = true, layout = "rotate_half"} : (tensor<1x4x16x64xf32>) -> tensor<1x4x16x64xf32>
  return
}

// -----

func.func @rope_bad_layout(%x: tensor<1x4x16x64xf32>) {
  // expected-error@+1 {{rope layout must be "rotate_half" or "interleaved"}}
  %0 = "attn.rope"(%x) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "neox"} : (tensor<1x4x16x64xf32>) -> tensor<1x4x16x64xf32>
  return
}

// -----

func.func @qk_batch_mismatch(%q: tensor<2x8x16x64xf32>, %k: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{batch mismatch: 2 vs 1 in k}}
  %0 = "attn.qk"(%q, %k) : (tensor<2x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<2x8x16x16xf32>
  return
}

// -----

func.func @qk_heads_not_grouped(%q: tensor<1x8x16x64xf32>, %k: tensor<1x3x16x64xf32>) {
  // expected-error@+1 {{query heads 8 are not a multiple of k heads 3}}
  %0 = "attn.qk"(%q, %k) : (tensor<1x8x16x64xf32>, tensor<1x3x16x64xf32>) -> tensor<1x8x16x16xf32>
  return
}

// -----

func.func @qk_elem_mismatch(%q: tensor<1x8x16x64xf16>, %k: tensor<1x8x16x64xbf16>) {
  // expected-error@+1 {{q and k element types differ: f16 vs bf16}}
  %0 = "attn.qk"(%q, %k) : (tensor<1x8x16x64xf16>, tensor<1x8x16x64xbf16>) -> tensor<1x8x16x16xf32>
  return
}

// -----

func.func @qk_head_dim_mismatch(%q: tensor<1x8x16x64xf32>, %k: tensor<1x8x16x128xf32>) {
  // expected-error@+1 {{head dim mismatch: q has 64, k has 128}}
  %0 = "attn.qk"(%q, %k) : (tensor<1x8x16x64xf32>, tensor<1x8x16x128xf32>) -> tensor<1x8x16x16xf32>
  return
}

// -----

func.func @qk_scores_shape(%q: tensor<1x8x16x64xf32>, %k: tensor<1x2x32x64xf32>) {
  // expected-error@+1 {{scores shape must be 1x8x16x32, found 1x2x16x32}}
  %0 = "attn.qk"(%q, %k) : (tensor<1x8x16x64xf32>, tensor<1x2x32x64xf32>) -> tensor<1x2x16x32xf32>
  return
}

// -----

func.func @pv_batch_mismatch(%p: tensor<1x8x16x16xf32>, %v: tensor<2x8x16x64xf32>) {
  // expected-error@+1 {{batch mismatch: 1 vs 2 in v}}
  %0 = "attn.pv"(%p, %v) : (tensor<1x8x16x16xf32>, tensor<2x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @pv_heads_not_grouped(%p: tensor<1x6x16x16xf32>, %v: tensor<1x4x16x64xf32>) {
  // expected-error@+1 {{query heads 6 are not a multiple of v heads 4}}
  %0 = "attn.pv"(%p, %v) : (tensor<1x6x16x16xf32>, tensor<1x4x16x64xf32>) -> tensor<1x6x16x64xf32>
  return
}

// -----

func.func @pv_keys_mismatch(%p: tensor<1x8x16x32xf32>, %v: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{probs have 32 keys but v has 16 rows}}
  %0 = "attn.pv"(%p, %v) : (tensor<1x8x16x32xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @pv_result_shape(%p: tensor<1x8x16x16xf32>, %v: tensor<1x2x16x96xf32>) {
  // expected-error@+1 {{result shape must be 1x8x16x96, found 1x8x16x64}}
  %0 = "attn.pv"(%p, %v) : (tensor<1x8x16x16xf32>, tensor<1x2x16x96xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_k_rank(%q: tensor<1x8x16x64xf32>, %k: tensor<8x16x64xf32>, %v: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{k must be a static rank-4 tensor}}
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x8x16x64xf32>, tensor<8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_heads_not_grouped(%q: tensor<1x8x16x64xf32>, %k: tensor<1x5x16x64xf32>, %v: tensor<1x5x16x64xf32>) {
  // expected-error@+1 {{query heads 8 are not a multiple of k heads 5}}
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x8x16x64xf32>, tensor<1x5x16x64xf32>, tensor<1x5x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

// Regression: v's batch was not compared with q's, so this was accepted.
func.func @fused_v_batch_mismatch(%q: tensor<1x8x16x64xf32>, %k: tensor<1x8x16x64xf32>, %v: tensor<2x8x16x64xf32>) {
  // expected-error@+1 {{batch mismatch: 1 vs 2 in v}}
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<2x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_v_elem_mismatch(%q: tensor<1x8x16x64xf16>, %k: tensor<1x8x16x64xf16>, %v: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{q and v element types differ: f16 vs f32}}
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf16>
  return
}

// -----

func.func @fused_head_dim_mismatch(%q: tensor<1x8x16x64xf32>, %k: tensor<1x8x16x32xf32>, %v: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{head dim mismatch: q has 64, k has 32}}
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x8x16x64xf32>, tensor<1x8x16x32xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_kv_seq_mismatch(%q: tensor<1x8x16x64xf32>, %k: tensor<1x2x32x64xf32>, %v: tensor<1x2x16x64xf32>) {
  // expected-error@+1 {{k and v must have the same heads and sequence length}}
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<1x8x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_result_shape(%q: tensor<1x8x16x64xf32>, %k: tensor<1x8x32x64xf32>, %v: tensor<1x8x32x64xf32>) {
  // expected-error@+1 {{result shape must be 1x8x16x64, found 1x8x32x64}}
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x8x16x64xf32>, tensor<1x8x32x64xf32>, tensor<1x8x32x64xf32>) -> tensor<1x8x32x64xf32>
  return
}

// -----

func.func @fused_result_elem(%q: tensor<1x8x16x64xbf16>, %k: tensor<1x8x16x64xbf16>, %v: tensor<1x8x16x64xbf16>) {
  // expected-error@+1 {{q and result element types differ: bf16 vs f32}}
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x8x16x64xbf16>, tensor<1x8x16x64xbf16>, tensor<1x8x16x64xbf16>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_rope_not_dict(%q: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{rope must be a dictionary {theta: f64, rotary_dim: i64, layout: rotate_half or interleaved}}}
  %0 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, rope = "yes"} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_rope_missing_layout(%q: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{rope must be a dictionary}}
  %0 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = 64 : i64}} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_rope_bad_layout(%q: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{rope must be a dictionary}}
  %0 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "neox"}} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

// Regression: a boolean rotary_dim in the dictionary was read as -1.
func.func @fused_rope_rotary_dim_bool(%q: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{rope must be a dictionary}}
  %0 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = true, layout = "interleaved"}} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_scale_zero(%q: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{scale must be positive and finite, found 0}}
  %0 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.0 : f64, causal = false} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_rope_theta_negative(%q: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{rope theta must be positive and finite, found -1}}
  %0 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = -1.0 : f64, rotary_dim = 64 : i64, layout = "interleaved"}} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_rope_rotary_dim_odd(%q: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{rope rotary_dim must be even and at least 2, found 33}}
  %0 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 33 : i64, layout = "interleaved"}} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_rope_rotary_dim_too_big(%q: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{rope rotary_dim 96 exceeds head dim 64}}
  %0 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 96 : i64, layout = "rotate_half"}} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

// Structure: RoPE applies to q or k, not to scores.
func.func @rope_after_qk(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>) {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  // expected-error@+1 {{attn.rope must rotate q or k before attn.qk, found the result of 'attn.qk'}}
  %r = "attn.rope"(%s) {theta = 10000.0 : f64, rotary_dim = 8 : i64, layout = "rotate_half"} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

// Structure: scores are no query tensor.
func.func @qk_of_scores(%q: tensor<1x2x16x16xf32>, %k: tensor<1x2x16x16xf32>) {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  %p = "attn.softmax"(%s) : (tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  // expected-error@+1 {{q of attn.qk must not be scores, found the result of 'attn.softmax'}}
  %s2 = "attn.qk"(%p, %k) : (tensor<1x2x16x16xf32>, tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  return
}

// -----

// Structure: pv takes probabilities from softmax (pv before softmax).
func.func @pv_before_softmax(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %c = "attn.causal"(%s) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  // expected-error@+1 {{probabilities of attn.pv must come from attn.softmax, found the result of 'attn.causal'}}
  %o = "attn.pv"(%c, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

// Structure: v is no score tensor.
func.func @pv_v_from_scores(%p: tensor<1x2x8x8xf32>, %q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>) {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  // expected-error@+1 {{v of attn.pv must not be scores, found the result of 'attn.qk'}}
  %o = "attn.pv"(%p, %s) : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

// Structure: softmax after pv is a shape error (here d == M, so only the
// structure tells).
func.func @softmax_after_pv(%p: tensor<1x2x8x8xf32>, %v: tensor<1x2x8x8xf32>) {
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  // expected-error@+1 {{attn.softmax applies to scores from attn.qk, found the result of 'attn.pv'}}
  %x = "attn.softmax"(%o) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

// Structure: modifiers apply before softmax.
func.func @causal_after_softmax(%s: tensor<1x2x8x8xf32>) {
  %p = "attn.softmax"(%s) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  // expected-error@+1 {{attn.causal applies to scores from attn.qk, found the result of 'attn.softmax'}}
  %c = "attn.causal"(%p) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

// Structure: a modifier other than scale appears once per chain.
func.func @softcap_twice(%s: tensor<1x2x8x8xf32>) {
  %a = "attn.softcap"(%s) {cap = 30.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %c = "attn.causal"(%a) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  // expected-error@+1 {{attn.softcap may appear once per attention, found another above it}}
  %b = "attn.softcap"(%c) {cap = 20.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

// Structure: scales multiply only when adjacent (masks may sit between).
func.func @scales_split_by_alibi(%s: tensor<1x2x8x8xf32>) {
  %a = "attn.scale"(%s) {scale = 0.5 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %b = "attn.alibi"(%a) {max_bias = 8.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %c = "attn.causal"(%b) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  // expected-error@+1 {{scales must be adjacent in the modifier chain, found 'attn.alibi' between two attn.scale ops}}
  %d = "attn.scale"(%c) {scale = 0.5 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

// Mismatched heads: the gate bias has the query heads.
func.func @gate_heads_mismatch(%s: tensor<1x2x8x8xf32>, %g: tensor<1x1x8x2xf32>) {
  // expected-error@+1 {{gate bias shape must be 1x2x8x2, found 1x1x8x2}}
  %a = "attn.gate"(%s, %g) {block_size = 4 : i64} : (tensor<1x2x8x8xf32>, tensor<1x1x8x2xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @gate_blocks_mismatch(%s: tensor<1x2x8x8xf32>, %g: tensor<1x2x8x2xf32>) {
  // expected-error@+1 {{gate bias shape must be 1x2x8x3, found 1x2x8x2}}
  %a = "attn.gate"(%s, %g) {block_size = 3 : i64} : (tensor<1x2x8x8xf32>, tensor<1x2x8x2xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @gate_bias_f16(%s: tensor<1x2x8x8xf32>, %g: tensor<1x2x8x2xf16>) {
  // expected-error@+1 {{gate bias element type must be f32, found f16}}
  %a = "attn.gate"(%s, %g) {block_size = 4 : i64} : (tensor<1x2x8x8xf32>, tensor<1x2x8x2xf16>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @gate_bias_rank3(%s: tensor<1x2x8x8xf32>, %g: tensor<2x8x2xf32>) {
  // expected-error@+1 {{gate bias must be a static rank-4 tensor, found tensor<2x8x2xf32>}}
  %a = "attn.gate"(%s, %g) {block_size = 4 : i64} : (tensor<1x2x8x8xf32>, tensor<2x8x2xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @gate_block_zero(%s: tensor<1x2x8x8xf32>, %g: tensor<1x2x8x2xf32>) {
  // expected-error@+1 {{gate block_size must be positive, found 0}}
  %a = "attn.gate"(%s, %g) {block_size = 0 : i64} : (tensor<1x2x8x8xf32>, tensor<1x2x8x2xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @document_q_segments_length(%s: tensor<1x2x8x8xf32>, %qs: tensor<1x7xi32>, %ks: tensor<1x8xi32>) {
  // expected-error@+1 {{q_segments shape must be 1x8, found 1x7}}
  %a = "attn.document"(%s, %qs, %ks) : (tensor<1x2x8x8xf32>, tensor<1x7xi32>, tensor<1x8xi32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @document_k_segments_i64(%s: tensor<1x2x8x8xf32>, %qs: tensor<1x8xi32>, %ks: tensor<1x8xi64>) {
  // expected-error@+1 {{k_segments element type must be i32, found i64}}
  %a = "attn.document"(%s, %qs, %ks) : (tensor<1x2x8x8xf32>, tensor<1x8xi32>, tensor<1x8xi64>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @window_left_below_minus_one(%s: tensor<1x2x8x8xf32>) {
  // expected-error@+1 {{window left must be -1 (unbounded) or non-negative, found -2}}
  %a = "attn.window"(%s) {left = -2 : i64, right = 0 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @window_right_bool(%s: tensor<1x2x8x8xf32>) {
  // expected-error@+1 {{right must be an integer, found a boolean}}
  %a = "attn.window"(%s) {left = 4 : i64, right = true} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @softcap_zero(%s: tensor<1x2x8x8xf32>) {
  // expected-error@+1 {{softcap cap must be positive and finite, found 0}}
  %a = "attn.softcap"(%s) {cap = 0.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @alibi_negative(%s: tensor<1x2x8x8xf32>) {
  // expected-error@+1 {{alibi max_bias must be positive and finite, found -8}}
  %a = "attn.alibi"(%s) {max_bias = -8.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @rope_positions_length(%x: tensor<1x2x8x16xf32>, %p: tensor<1x9xi32>) {
  // expected-error@+1 {{positions shape must be 1x8, found 1x9}}
  %a = "attn.rope"(%x, %p) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"} : (tensor<1x2x8x16xf32>, tensor<1x9xi32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @rope_positions_and_offset(%x: tensor<1x2x8x16xf32>, %p: tensor<1x8xi32>) {
  // expected-error@+1 {{rope offset cannot be combined with explicit positions}}
  %a = "attn.rope"(%x, %p) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", offset = 4 : i64} : (tensor<1x2x8x16xf32>, tensor<1x8xi32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @rope_offset_float(%x: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{rope offset must be an integer}}
  %a = "attn.rope"(%x) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", offset = 4.0 : f64} : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_window_rank(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{window must be array<i64: left, right>}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, window = array<i64: 4>} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_window_bounds(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{window right must be -1 (unbounded) or non-negative, found -3}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, window = array<i64: 4, -3>} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_alibi_int(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{alibi must be a float}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, alibi = 8 : i64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_softcap_negative(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{softcap cap must be positive and finite, found -1}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, softcap = -1.0 : f64, mods = ["softcap"]} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_gate_block_bool(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{gate_block must be an integer, found a boolean}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, gate_block = true} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_mods_unknown(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{mods entry 1 must be one of "scale", "softcap", "alibi", "gate", "fn"}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, softcap = 30.0 : f64, mods = ["softcap", "causal"]} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_mods_twice(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{mods names 'softcap' twice}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, softcap = 30.0 : f64, mods = ["softcap", "softcap"]} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_mods_without_attr(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{mods names 'alibi' but the op has no 'alibi' attribute}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, mods = ["alibi"]} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_mods_missing(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{mods must name every modifier present; 'alibi' is missing}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, softcap = 30.0 : f64, alibi = 8.0 : f64, mods = ["softcap"]} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_mods_not_array(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{mods must be an array of modifier names}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, softcap = 30.0 : f64, mods = "softcap"} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_gate_without_operand(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{gate_block and a "gate" operand go together}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, gate_block = 4 : i64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_gate_without_block(%q: tensor<1x2x8x16xf32>, %g: tensor<1x2x8x2xf32>) {
  // expected-error@+1 {{gate_block and a "gate" operand go together}}
  %o = "attn.fused"(%q, %q, %q, %g) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x2xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_q_segments_alone(%q: tensor<1x2x8x16xf32>, %s: tensor<1x8xi32>) {
  // expected-error@+1 {{document masking needs both q_segments and k_segments}}
  %o = "attn.fused"(%q, %q, %q, %s) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x8xi32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_positions_without_rope(%q: tensor<1x2x8x16xf32>, %p: tensor<1x8xi32>) {
  // expected-error@+1 {{q_positions and k_positions need a rope attribute}}
  %o = "attn.fused"(%q, %q, %q, %p) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x8xi32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_positions_and_offset(%q: tensor<1x2x8x16xf32>, %p: tensor<1x8xi32>) {
  // expected-error@+1 {{a rope offset cannot be combined with explicit positions for the same tensor}}
  %o = "attn.fused"(%q, %q, %q, %p) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 1>, scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", k_offset = 2 : i64}} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x8xi32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_k_positions_shape(%q: tensor<1x2x8x16xf32>, %p: tensor<1x16xi32>) {
  // expected-error@+1 {{k_positions shape must be 1x8, found 1x16}}
  %o = "attn.fused"(%q, %q, %q, %p) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 1>, scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"}} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x16xi32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_gate_shape(%q: tensor<1x2x8x16xf32>, %g: tensor<1x2x8x4xf32>) {
  // expected-error@+1 {{gate bias shape must be 1x2x8x2, found 1x2x8x4}}
  %o = "attn.fused"(%q, %q, %q, %g) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, gate_block = 4 : i64, mods = ["gate"]} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_rope_unknown_entry(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{unknown rope entry 'positions' (expected theta, rotary_dim, layout, offset, q_offset, k_offset or strategy)}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", positions = 1 : i64}} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_rope_unknown_strategy(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{rope strategy must be "fused", "split", "pre" or "producer", found "auto"}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", strategy = "auto"}} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_rope_strategy_not_string(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{rope strategy must be "fused", "split", "pre" or "producer", found a non-string}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", strategy = 1 : i64}} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_rope_offset_float(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{rope offsets must be integers}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", offset = 1.0 : f64}} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_rope_offset_and_q_offset(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{rope offset applies to q and k; it cannot be combined with q_offset or k_offset}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", offset = 1 : i64, q_offset = 2 : i64}} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_scale_negative(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{scale must be positive and finite, found -0.125}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = -0.125 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @project_rank(%x: tensor<16x64xbf16>, %w: tensor<64x128xbf16>) {
  // expected-error@+1 {{x must be a static rank-3 tensor [batch, seq, features], found tensor<16x64xbf16>}}
  %0 = "attn.project"(%x, %w) : (tensor<16x64xbf16>, tensor<64x128xbf16>) -> tensor<1x2x16x64xbf16>
  return
}

// -----

func.func @project_features(%x: tensor<2x16x32xbf16>, %w: tensor<64x128xbf16>) {
  // expected-error@+1 {{x has 32 features but w has 64 rows}}
  %0 = "attn.project"(%x, %w) : (tensor<2x16x32xbf16>, tensor<64x128xbf16>) -> tensor<2x2x16x64xbf16>
  return
}

// -----

func.func @project_heads(%x: tensor<2x16x64xbf16>, %w: tensor<64x128xbf16>) {
  // expected-error@+1 {{result must be [2, heads, 16, head_dim] with heads * head_dim = 128 (w's columns), found [2, 4, 16, 64]}}
  %0 = "attn.project"(%x, %w) : (tensor<2x16x64xbf16>, tensor<64x128xbf16>) -> tensor<2x4x16x64xbf16>
  return
}

// -----

func.func @project_elem(%x: tensor<2x16x64xbf16>, %w: tensor<64x128xf16>) {
  // expected-error@+1 {{x and w element types differ: bf16 vs f16}}
  %0 = "attn.project"(%x, %w) : (tensor<2x16x64xbf16>, tensor<64x128xf16>) -> tensor<2x2x16x64xbf16>
  return
}

// -----

func.func @project_rope(%x: tensor<2x16x64xbf16>, %w: tensor<64x128xbf16>) {
  // expected-error@+1 {{rope rotary_dim 128 exceeds head dim 64}}
  %0 = "attn.project"(%x, %w) {rope = {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<2x16x64xbf16>, tensor<64x128xbf16>) -> tensor<2x2x16x64xbf16>
  return
}

// -----

func.func @project_rope_offsets(%x: tensor<2x16x64xbf16>, %w: tensor<64x128xbf16>) {
  // expected-error@+1 {{rope must be a dictionary}}
  %0 = "attn.project"(%x, %w) {rope = {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half", q_offset = 1 : i64}} : (tensor<2x16x64xbf16>, tensor<64x128xbf16>) -> tensor<2x2x16x64xbf16>
  return
}

// -----

// Range checks for the integers that reach index arithmetic (issue 27: a
// RoPE offset of 2^63 - 1 used to be accepted). RoPE positions are i32.
func.func @rope_offset_max_i64(%x: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{rope offset must be in [0, 2147483647] (positions are i32), found 9223372036854775807}}
  %a = "attn.rope"(%x) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", offset = 9223372036854775807 : i64} : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @rope_offset_negative(%x: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{rope offset must be in [0, 2147483647] (positions are i32), found -1}}
  %a = "attn.rope"(%x) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", offset = -1 : i64} : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @rope_offset_last_row_past_i32(%x: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{rope offset 2147483641 puts the last of 8 rows at position 2147483648, past 2147483647 (positions are i32)}}
  %a = "attn.rope"(%x) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", offset = 2147483641 : i64} : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_rope_k_offset_past_i32(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{rope k_offset 2147483647 puts the last of 8 rows at position 2147483654, past 2147483647 (positions are i32)}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", k_offset = 2147483647 : i64}} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_rope_q_offset_negative(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{rope q_offset must be in [0, 2147483647] (positions are i32), found -5}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", q_offset = -5 : i64}} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_rope_offset_max_i64(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{rope q_offset must be in [0, 2147483647] (positions are i32), found 9223372036854775807}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", offset = 9223372036854775807 : i64}} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @project_rope_offset_max_i64(%x: tensor<2x16x64xbf16>, %w: tensor<64x128xbf16>) {
  // expected-error@+1 {{rope offset must be in [0, 2147483647] (positions are i32), found 9223372036854775807}}
  %0 = "attn.project"(%x, %w) {rope = {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half", offset = 9223372036854775807 : i64}} : (tensor<2x16x64xbf16>, tensor<64x128xbf16>) -> tensor<2x2x16x64xbf16>
  return
}

// -----

// Shapes whose size in bytes overflows i64: the plain lowerings index every
// tensor with 64-bit (index) arithmetic.
func.func @operand_bytes_overflow_i64(%s: tensor<65536x65536x65536x65536xf32>) {
  // expected-error@+1 {{operand has more than 2^63 - 1 bytes (tensor<65536x65536x65536x65536xf32>): too large for 64-bit indexing}}
  %a = "attn.causal"(%s) : (tensor<65536x65536x65536x65536xf32>) -> tensor<65536x65536x65536x65536xf32>
  return
}

// -----

// q and k fit; their scores (2^31 x 2^31 f32 per head) do not.
func.func @scores_bytes_overflow_i64(%q: tensor<1x1x2147483648x64xf32>) {
  // expected-error@+1 {{scores has more than 2^63 - 1 bytes (tensor<1x1x2147483648x2147483648xf32>): too large for 64-bit indexing}}
  %s = "attn.qk"(%q, %q) : (tensor<1x1x2147483648x64xf32>, tensor<1x1x2147483648x64xf32>) -> tensor<1x1x2147483648x2147483648xf32>
  return
}

// -----

func.func @project_x_bytes_overflow_i64(%x: tensor<4611686018427387904x2x64xbf16>, %w: tensor<64x128xbf16>) {
  // expected-error@+1 {{result has more than 2^63 - 1 bytes (tensor<4611686018427387904x2x2x64xbf16>): too large for 64-bit indexing}}
  %0 = "attn.project"(%x, %w) : (tensor<4611686018427387904x2x64xbf16>, tensor<64x128xbf16>) -> tensor<4611686018427387904x2x2x64xbf16>
  return
}

// -----

// Windows and gate blocks add to or divide row indices.
func.func @window_left_past_i32(%s: tensor<1x2x8x8xf32>) {
  // expected-error@+1 {{window left must be at most 2147483647 (-1 for unbounded), found 9223372036854775807}}
  %a = "attn.window"(%s) {left = 9223372036854775807 : i64, right = 0 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @fused_window_right_past_i32(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{window right must be at most 2147483647 (-1 for unbounded), found 2147483648}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, window = array<i64: 4, 2147483648>} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

// Used to compute the bias shape as (8 + block_size - 1) / block_size, an
// i64 overflow.
func.func @gate_block_max_i64(%s: tensor<1x2x8x8xf32>, %g: tensor<1x2x8x1xf32>) {
  // expected-error@+1 {{gate block_size must be at most 2147483647, found 9223372036854775807}}
  %a = "attn.gate"(%s, %g) {block_size = 9223372036854775807 : i64} : (tensor<1x2x8x8xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x8xf32>
  return
}

// -----

func.func @fused_gate_block_past_i32(%q: tensor<1x2x8x16xf32>, %g: tensor<1x2x8x1xf32>) {
  // expected-error@+1 {{gate block_size must be at most 2147483647, found 4294967296}}
  %o = "attn.fused"(%q, %q, %q, %g) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, gate_block = 4294967296 : i64} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x1xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

// attn.score_mod and attn.mask_mod (issue 28): the body checker
// (dialects/body.c) rejects, at the op or at the body op, every body some
// path cannot compute.
func.func @score_mod_no_body(%s: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{attn.score_mod needs a body: one block (f32 score, index b, index h, index q, index kv) ending in gpu.yield of f32}}
  %0 = "attn.score_mod"(%s) ({}) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @mask_mod_no_body(%s: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{attn.mask_mod needs a body: one block (index b, index h, index q, index kv) ending in gpu.yield of i1}}
  %0 = "attn.mask_mod"(%s) ({}) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @score_mod_two_blocks(%s: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{the body of attn.score_mod must be one block}}
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    gpu.yield %x : f32
  ^bb1(%y: f32):
    gpu.yield %y : f32
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @score_mod_mask_signature(%s: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{the body of attn.score_mod must take (f32 score, index b, index h, index q, index kv), found (index, index, index, index)}}
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 0.0 : f32
    gpu.yield %c : f32
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @mask_mod_sees_no_score(%s: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{the body of attn.mask_mod must take (index b, index h, index q, index kv), found (f32, index, index, index, index)}}
  %0 = "attn.mask_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %ok = arith.cmpi ule, %j, %i : index
    gpu.yield %ok : i1
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @score_mod_i32_index(%s: tensor<1x1x4x4xf32>) {
  // expected-error@+1 {{the body of attn.score_mod must take (f32 score, index b, index h, index q, index kv), found (f32, i32, index, index, index)}}
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: i32, %h: index, %i: index, %j: index):
    gpu.yield %x : f32
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @score_mod_op_not_allowed(%s: tensor<1x1x4x4xf32>) {
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error@+1 {{'math.atan' cannot appear in the body of attn.score_mod (allowed: arith.constant, scalar arith and math ops, tensor.extract of a capture, gpu.yield)}}
    %y = math.atan %x : f32
    gpu.yield %y : f32
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// A nested region: scf.if is not on the allowlist.
func.func @mask_mod_nested_region(%s: tensor<1x1x4x4xf32>) {
  %0 = "attn.mask_mod"(%s) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c = arith.cmpi ule, %j, %i : index
    // expected-error@+1 {{'scf.if' cannot appear in the body of attn.mask_mod}}
    %ok = scf.if %c -> i1 {
      scf.yield %c : i1
    } else {
      scf.yield %c : i1
    }
    gpu.yield %ok : i1
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @score_mod_f64(%s: tensor<1x1x4x4xf32>) {
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error@+1 {{'arith.extf' in the body of attn.score_mod makes a value of type f64; bodies compute with f32, f16, i1, i8, i32, i64 and index (bf16 only as a capture's element, converted with arith.extf)}}
    %d = arith.extf %x : f32 to f64
    %y = arith.truncf %d : f64 to f32
    gpu.yield %y : f32
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @score_mod_vector(%s: tensor<1x1x4x4xf32>) {
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error@+1 {{'arith.constant' in the body of attn.score_mod makes a value of type vector<4xf32>; bodies compute with}}
    %v = arith.constant dense<1.0> : vector<4xf32>
    gpu.yield %x : f32
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @score_mod_bf16_arith(%s: tensor<1x1x4x4xf32>) {
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error@+1 {{'arith.truncf' in the body of attn.score_mod makes a bf16 value; bf16 is only a capture's element, read and converted with arith.extf}}
    %t = arith.truncf %x : f32 to bf16
    %y = arith.extf %t : bf16 to f32
    gpu.yield %y : f32
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @score_mod_bf16_used(%s: tensor<1x1x4x4xf32>, %t: tensor<4xbf16>) {
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %e = tensor.extract %t[%j] : tensor<4xbf16>
    // expected-error@+1 {{'arith.addf' in the body of attn.score_mod uses a bf16 value; bf16 is only a capture's element, read and converted with arith.extf}}
    %f = arith.addf %e, %e : bf16
    %y = arith.extf %f : bf16 to f32
    gpu.yield %y : f32
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// A value from above that is not read as a capture.
func.func @score_mod_scalar_from_above(%s: tensor<1x1x4x4xf32>, %c: f32) {
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error@+1 {{'arith.addf' in the body of attn.score_mod uses a value of type f32 defined outside the body; bodies read values from above only as captures, with tensor.extract}}
    %y = arith.addf %x, %c : f32
    gpu.yield %y : f32
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// An index from above is not a capture either.
func.func @score_mod_index_from_above(%s: tensor<1x1x4x4xf32>, %t: tensor<4xf32>, %k: index) {
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error@+1 {{'tensor.extract' in the body of attn.score_mod uses a value of type index defined outside the body}}
    %e = tensor.extract %t[%k] : tensor<4xf32>
    %y = arith.addf %x, %e : f32
    gpu.yield %y : f32
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @score_mod_rank0_capture(%s: tensor<1x1x4x4xf32>, %t: tensor<f32>) {
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error@+1 {{'tensor.extract' in the body of attn.score_mod reads tensor<f32>; a capture must be a statically shaped tensor of rank 1 to 8}}
    %e = tensor.extract %t[] : tensor<f32>
    %y = arith.addf %x, %e : f32
    gpu.yield %y : f32
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @score_mod_dynamic_capture(%s: tensor<1x1x4x4xf32>, %t: tensor<?xf32>) {
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error@+1 {{'tensor.extract' in the body of attn.score_mod reads tensor<?xf32>; a capture must be a statically shaped tensor of rank 1 to 8}}
    %e = tensor.extract %t[%j] : tensor<?xf32>
    %y = arith.addf %x, %e : f32
    gpu.yield %y : f32
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @score_mod_empty_capture(%s: tensor<1x1x4x4xf32>, %t: tensor<4x0xf32>) {
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error@+1 {{'tensor.extract' in the body of attn.score_mod reads tensor<4x0xf32>, which has an empty dimension}}
    %e = tensor.extract %t[%i, %j] : tensor<4x0xf32>
    %y = arith.addf %x, %e : f32
    gpu.yield %y : f32
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @mask_mod_i8_capture(%s: tensor<1x1x4x4xf32>, %t: tensor<4xi8>) {
  %0 = "attn.mask_mod"(%s) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    // expected-error@+1 {{'tensor.extract' in the body of attn.mask_mod reads tensor<4xi8>; a capture's element type must be f32, f16, bf16, i32 or i64}}
    %e = tensor.extract %t[%j] : tensor<4xi8>
    %z = arith.constant 0 : i8
    %ok = arith.cmpi ne, %e, %z : i8
    gpu.yield %ok : i1
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// A constant index outside the capture's shape (the index is known, so the
// clamping that every path applies would hide a mistake).
func.func @score_mod_constant_index_out_of_shape(%s: tensor<1x1x4x4xf32>, %t: tensor<2x15xf32>) {
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c15 = arith.constant 15 : index
    // expected-error@+1 {{'tensor.extract' in the body of attn.score_mod reads index 15 of dimension 1 of tensor<2x15xf32>, outside [0, 15)}}
    %e = tensor.extract %t[%h, %c15] : tensor<2x15xf32>
    %y = arith.addf %x, %e : f32
    gpu.yield %y : f32
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @mask_mod_negative_constant_index(%s: tensor<1x1x4x4xf32>, %t: tensor<4xi32>) {
  %0 = "attn.mask_mod"(%s) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %m1 = arith.constant -1 : index
    // expected-error@+1 {{'tensor.extract' in the body of attn.mask_mod reads index -1 of dimension 0 of tensor<4xi32>, outside [0, 4)}}
    %e = tensor.extract %t[%m1] : tensor<4xi32>
    %z = arith.constant 0 : i32
    %ok = arith.cmpi ne, %e, %z : i32
    gpu.yield %ok : i1
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @score_mod_yields_i1(%s: tensor<1x1x4x4xf32>) {
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %ok = arith.cmpi ule, %j, %i : index
    // expected-error@+1 {{the body of attn.score_mod must yield one f32 (the new score), found a value of type i1}}
    gpu.yield %ok : i1
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @mask_mod_yields_nothing(%s: tensor<1x1x4x4xf32>) {
  %0 = "attn.mask_mod"(%s) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    // expected-error@+1 {{the body of attn.mask_mod must yield one i1 (true where the key is visible), found 0 values}}
    gpu.yield
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// Structure: the two forms are score modifiers, so they take scores.
func.func @score_mod_of_probs(%s: tensor<1x1x4x4xf32>) {
  %p = "attn.softmax"(%s) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  // expected-error@+1 {{attn.score_mod applies to scores from attn.qk, found the result of 'attn.softmax'}}
  %0 = "attn.score_mod"(%p) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    gpu.yield %x : f32
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// A score_mod does not commute with a scale: scales around it cannot
// become attn.fused's one scale.
func.func @scales_around_score_mod(%s: tensor<1x1x4x4xf32>) {
  %0 = "attn.scale"(%s) {scale = 0.5 : f64} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %1 = "attn.score_mod"(%0) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %y = math.tanh %x : f32
    gpu.yield %y : f32
  }) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  // expected-error@+1 {{scales must be adjacent in the modifier chain, found 'attn.score_mod' between two attn.scale ops}}
  %2 = "attn.scale"(%1) {scale = 0.5 : f64} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// attn.fused's regions: "fn" in mods exactly when score_fn has a body.
func.func @fused_score_fn_without_mods(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{attn.fused with a score_fn body needs "mods", naming "fn" where the body applies}}
  %o = "attn.fused"(%q, %q, %q) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    gpu.yield %x : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_mods_fn_missing(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{mods must name every modifier present; 'fn' is missing (the score_fn region has a body)}}
  %o = "attn.fused"(%q, %q, %q) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    gpu.yield %x : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, mods = ["scale"]} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_mods_fn_without_body(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{mods names 'fn' but the score_fn region is empty}}
  %o = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, mods = ["fn"]} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_score_fn_yields_i1(%q: tensor<1x2x8x16xf32>) {
  %o = "attn.fused"(%q, %q, %q) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %ok = arith.cmpi ule, %j, %i : index
    // expected-error@+1 {{the body of score_fn of attn.fused must yield one f32 (the new score), found a value of type i1}}
    gpu.yield %ok : i1
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, mods = ["fn"]} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_mask_fn_signature(%q: tensor<1x2x8x16xf32>) {
  // expected-error@+1 {{the body of mask_fn of attn.fused must take (index b, index h, index q, index kv), found (f32, index, index, index, index)}}
  %o = "attn.fused"(%q, %q, %q) ({}, {
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %ok = arith.cmpi ule, %j, %i : index
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

func.func @fused_mask_fn_constant_index(%q: tensor<1x2x8x16xf32>, %ids: tensor<1x16xi32>) {
  %o = "attn.fused"(%q, %q, %q) ({}, {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c16 = arith.constant 16 : index
    // expected-error@+1 {{'tensor.extract' in the body of mask_fn of attn.fused reads index 16 of dimension 1 of tensor<1x16xi32>, outside [0, 16)}}
    %e = tensor.extract %ids[%b, %c16] : tensor<1x16xi32>
    %z = arith.constant 0 : i32
    %ok = arith.cmpi ne, %e, %z : i32
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return
}

// -----

// f64 programs compute in f64 (docs/dialects.md): the gate bias too.
func.func @gate_f32_in_f64_program(%s: tensor<1x2x16x16xf64>, %g: tensor<1x2x16x2xf32>) {
  // expected-error@+1 {{gate bias element type must be f64 (the program is f64), found f32}}
  %0 = "attn.gate"(%s, %g) {block_size = 8 : i64} : (tensor<1x2x16x16xf64>, tensor<1x2x16x2xf32>) -> tensor<1x2x16x16xf64>
  return
}

// -----

func.func @score_mod_f32_body_in_f64_program(%s: tensor<1x2x16x16xf64>) {
  // expected-error@+1 {{the body of attn.score_mod must take (f64 score, index b, index h, index q, index kv), found (f32, index, index, index, index)}}
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    gpu.yield %x : f32
  }) : (tensor<1x2x16x16xf64>) -> tensor<1x2x16x16xf64>
  return
}

// -----

func.func @score_mod_f64_yield_f32(%s: tensor<1x2x16x16xf64>) {
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f64, %b: index, %h: index, %i: index, %j: index):
    %y = arith.truncf %x : f64 to f32
    // expected-error@+1 {{the body of attn.score_mod must yield one f64 (the new score), found a value of type f32}}
    gpu.yield %y : f32
  }) : (tensor<1x2x16x16xf64>) -> tensor<1x2x16x16xf64>
  return
}

// -----

// f64 captures are f64 programs' only.
func.func @f64_capture_in_f32_program(%s: tensor<1x2x16x16xf32>, %c: tensor<2xf64>) {
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error@+1 {{'tensor.extract' in the body of attn.score_mod reads tensor<2xf64>; a capture's element type must be f32, f16, bf16, i32 or i64}}
    %y = tensor.extract %c[%h] : tensor<2xf64>
    gpu.yield %x : f32
  }) : (tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  return
}

// -----

func.func @i8_capture_in_f64_program(%s: tensor<1x2x16x16xf64>, %c: tensor<2xi8>) {
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f64, %b: index, %h: index, %i: index, %j: index):
    // expected-error@+1 {{'tensor.extract' in the body of attn.score_mod reads tensor<2xi8>; a capture's element type must be f64, f32, f16, bf16, i32 or i64}}
    %y = tensor.extract %c[%h] : tensor<2xi8>
    gpu.yield %x : f64
  }) : (tensor<1x2x16x16xf64>) -> tensor<1x2x16x16xf64>
  return
}
