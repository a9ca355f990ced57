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
  %0 = "attn.fused"(%q, %q, %q) {scale = 1.0 : f64, causal = 1 : i32} : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
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

func.func @qk_f64(%q: tensor<1x8x16x64xf64>, %k: tensor<1x8x16x64xf64>) {
  // expected-error@+1 {{q element type must be f32, f16 or bf16, found f64}}
  %0 = "attn.qk"(%q, %k) : (tensor<1x8x16x64xf64>, tensor<1x8x16x64xf64>) -> tensor<1x8x16x16xf64>
  return
}

// -----

func.func @causal_i32(%s: tensor<1x8x16x16xi32>) {
  // expected-error@+1 {{operand element type must be f32, f16 or bf16, found i32}}
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
  // expected-error@+1 {{scale must be finite and non-zero, found 0}}
  %0 = "attn.scale"(%s) {scale = 0.0 : f64} : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  return
}

// -----

func.func @scale_inf(%s: tensor<1x8x16x16xf32>) {
  // expected-error@+1 {{scale must be finite and non-zero, found inf}}
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
  %0 = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = false} : (tensor<1x8x16x64xf32>, tensor<8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_heads_not_grouped(%q: tensor<1x8x16x64xf32>, %k: tensor<1x5x16x64xf32>, %v: tensor<1x5x16x64xf32>) {
  // expected-error@+1 {{query heads 8 are not a multiple of k heads 5}}
  %0 = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = false} : (tensor<1x8x16x64xf32>, tensor<1x5x16x64xf32>, tensor<1x5x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

// Regression: v's batch was not compared with q's, so this was accepted.
func.func @fused_v_batch_mismatch(%q: tensor<1x8x16x64xf32>, %k: tensor<1x8x16x64xf32>, %v: tensor<2x8x16x64xf32>) {
  // expected-error@+1 {{batch mismatch: 1 vs 2 in v}}
  %0 = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = false} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<2x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_v_elem_mismatch(%q: tensor<1x8x16x64xf16>, %k: tensor<1x8x16x64xf16>, %v: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{q and v element types differ: f16 vs f32}}
  %0 = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = false} : (tensor<1x8x16x64xf16>, tensor<1x8x16x64xf16>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf16>
  return
}

// -----

func.func @fused_head_dim_mismatch(%q: tensor<1x8x16x64xf32>, %k: tensor<1x8x16x32xf32>, %v: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{head dim mismatch: q has 64, k has 32}}
  %0 = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = false} : (tensor<1x8x16x64xf32>, tensor<1x8x16x32xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_kv_seq_mismatch(%q: tensor<1x8x16x64xf32>, %k: tensor<1x2x32x64xf32>, %v: tensor<1x2x16x64xf32>) {
  // expected-error@+1 {{k and v must have the same heads and sequence length}}
  %0 = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = true} : (tensor<1x8x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_result_shape(%q: tensor<1x8x16x64xf32>, %k: tensor<1x8x32x64xf32>, %v: tensor<1x8x32x64xf32>) {
  // expected-error@+1 {{result shape must be 1x8x16x64, found 1x8x32x64}}
  %0 = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = false} : (tensor<1x8x16x64xf32>, tensor<1x8x32x64xf32>, tensor<1x8x32x64xf32>) -> tensor<1x8x32x64xf32>
  return
}

// -----

func.func @fused_result_elem(%q: tensor<1x8x16x64xbf16>, %k: tensor<1x8x16x64xbf16>, %v: tensor<1x8x16x64xbf16>) {
  // expected-error@+1 {{q and result element types differ: bf16 vs f32}}
  %0 = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = false} : (tensor<1x8x16x64xbf16>, tensor<1x8x16x64xbf16>, tensor<1x8x16x64xbf16>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_rope_not_dict(%q: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{rope must be a dictionary {theta: f64, rotary_dim: i64, layout: rotate_half or interleaved}}}
  %0 = "attn.fused"(%q, %q, %q) {scale = 0.125 : f64, causal = false, rope = "yes"} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_rope_missing_layout(%q: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{rope must be a dictionary}}
  %0 = "attn.fused"(%q, %q, %q) {scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = 64 : i64}} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_rope_bad_layout(%q: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{rope must be a dictionary}}
  %0 = "attn.fused"(%q, %q, %q) {scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "neox"}} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

// Regression: a boolean rotary_dim in the dictionary was read as -1.
func.func @fused_rope_rotary_dim_bool(%q: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{rope must be a dictionary}}
  %0 = "attn.fused"(%q, %q, %q) {scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = true, layout = "interleaved"}} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_scale_zero(%q: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{scale must be finite and non-zero, found 0}}
  %0 = "attn.fused"(%q, %q, %q) {scale = 0.0 : f64, causal = false} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_rope_theta_negative(%q: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{rope theta must be positive and finite, found -1}}
  %0 = "attn.fused"(%q, %q, %q) {scale = 0.125 : f64, causal = true, rope = {theta = -1.0 : f64, rotary_dim = 64 : i64, layout = "interleaved"}} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_rope_rotary_dim_odd(%q: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{rope rotary_dim must be even and at least 2, found 33}}
  %0 = "attn.fused"(%q, %q, %q) {scale = 0.125 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 33 : i64, layout = "interleaved"}} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @fused_rope_rotary_dim_too_big(%q: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{rope rotary_dim 96 exceeds head dim 64}}
  %0 = "attn.fused"(%q, %q, %q) {scale = 0.125 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 96 : i64, layout = "rotate_half"}} : (tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>, tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}
