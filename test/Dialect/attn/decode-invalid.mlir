// RUN: attn-opt %s --split-input-file --verify-diagnostics

// The C verifier's errors for attn.fused_decode (issue 30), each at the op:
// the cache layout and page size, the lengths' and block table's shapes and
// dtypes (i32), the caches against q and against each other.

func.func @bad_layout(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{cache_layout must be "contiguous" or "paged"}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "ring"} : (tensor<2x8x1x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @paged_no_page_size(%q: tensor<2x8x1x64xf16>, %k: tensor<10x2x16x64xf16>, %v: tensor<10x2x16x64xf16>, %len: tensor<2xi32>, %t: tensor<2x4xi32>) {
  // expected-error@+1 {{a paged cache needs page_size, an integer}}
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.125 : f64, causal = true, cache_layout = "paged"} : (tensor<2x8x1x64xf16>, tensor<10x2x16x64xf16>, tensor<10x2x16x64xf16>, tensor<2xi32>, tensor<2x4xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @contiguous_page_size(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{page_size applies to a paged cache only}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous", page_size = 16 : i64} : (tensor<2x8x1x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @paged_no_table(%q: tensor<2x8x1x64xf16>, %k: tensor<10x2x16x64xf16>, %v: tensor<10x2x16x64xf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{a paged cache needs a block_table operand}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "paged", page_size = 16 : i64} : (tensor<2x8x1x64xf16>, tensor<10x2x16x64xf16>, tensor<10x2x16x64xf16>, tensor<2xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @contiguous_table(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>, %t: tensor<2x4xi32>) {
  // expected-error@+1 {{a contiguous cache takes no block_table}}
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x8x1x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>, tensor<2x4xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @page_size_bool(%q: tensor<2x8x1x64xf16>, %k: tensor<10x2x16x64xf16>, %v: tensor<10x2x16x64xf16>, %len: tensor<2xi32>, %t: tensor<2x4xi32>) {
  // expected-error@+1 {{page_size must be an integer, found a boolean}}
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.125 : f64, causal = true, cache_layout = "paged", page_size = true} : (tensor<2x8x1x64xf16>, tensor<10x2x16x64xf16>, tensor<10x2x16x64xf16>, tensor<2xi32>, tensor<2x4xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @page_size_not_pow2(%q: tensor<2x8x1x64xf16>, %k: tensor<10x2x24x64xf16>, %v: tensor<10x2x24x64xf16>, %len: tensor<2xi32>, %t: tensor<2x4xi32>) {
  // expected-error@+1 {{page_size must be a power of two from 16 to 256, found 24}}
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.125 : f64, causal = true, cache_layout = "paged", page_size = 24 : i64} : (tensor<2x8x1x64xf16>, tensor<10x2x24x64xf16>, tensor<10x2x24x64xf16>, tensor<2xi32>, tensor<2x4xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @page_size_large(%q: tensor<2x8x1x64xf16>, %k: tensor<10x2x512x64xf16>, %v: tensor<10x2x512x64xf16>, %len: tensor<2xi32>, %t: tensor<2x4xi32>) {
  // expected-error@+1 {{page_size must be a power of two from 16 to 256, found 512}}
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.125 : f64, causal = true, cache_layout = "paged", page_size = 512 : i64} : (tensor<2x8x1x64xf16>, tensor<10x2x512x64xf16>, tensor<10x2x512x64xf16>, tensor<2xi32>, tensor<2x4xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @page_rows(%q: tensor<2x8x1x64xf16>, %k: tensor<10x2x32x64xf16>, %v: tensor<10x2x32x64xf16>, %len: tensor<2xi32>, %t: tensor<2x4xi32>) {
  // expected-error@+1 {{k_cache has pages of 32 rows, but page_size is 16}}
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.125 : f64, causal = true, cache_layout = "paged", page_size = 16 : i64} : (tensor<2x8x1x64xf16>, tensor<10x2x32x64xf16>, tensor<10x2x32x64xf16>, tensor<2xi32>, tensor<2x4xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @lens_dtype(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi64>) {
  // expected-error@+1 {{cache_seqlens element type must be i32, found i64}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x8x1x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi64>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @lens_shape(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<3xi32>) {
  // expected-error@+1 {{cache_seqlens shape must be 2, found 3}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x8x1x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<3xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @lens_rank(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2x1xi32>) {
  // expected-error@+1 {{cache_seqlens must be a static rank-1 tensor, found tensor<2x1xi32>}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x8x1x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2x1xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @table_dtype(%q: tensor<2x8x1x64xf16>, %k: tensor<10x2x16x64xf16>, %v: tensor<10x2x16x64xf16>, %len: tensor<2xi32>, %t: tensor<2x4xf32>) {
  // expected-error@+1 {{block_table element type must be i32, found f32}}
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.125 : f64, causal = true, cache_layout = "paged", page_size = 16 : i64} : (tensor<2x8x1x64xf16>, tensor<10x2x16x64xf16>, tensor<10x2x16x64xf16>, tensor<2xi32>, tensor<2x4xf32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @table_batch(%q: tensor<2x8x1x64xf16>, %k: tensor<10x2x16x64xf16>, %v: tensor<10x2x16x64xf16>, %len: tensor<2xi32>, %t: tensor<3x4xi32>) {
  // expected-error@+1 {{block_table shape must be 2x4, found 3x4}}
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.125 : f64, causal = true, cache_layout = "paged", page_size = 16 : i64} : (tensor<2x8x1x64xf16>, tensor<10x2x16x64xf16>, tensor<10x2x16x64xf16>, tensor<2xi32>, tensor<3x4xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @table_rank(%q: tensor<2x8x1x64xf16>, %k: tensor<10x2x16x64xf16>, %v: tensor<10x2x16x64xf16>, %len: tensor<2xi32>, %t: tensor<8xi32>) {
  // expected-error@+1 {{block_table must be a static rank-2 tensor, found tensor<8xi32>}}
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.125 : f64, causal = true, cache_layout = "paged", page_size = 16 : i64} : (tensor<2x8x1x64xf16>, tensor<10x2x16x64xf16>, tensor<10x2x16x64xf16>, tensor<2xi32>, tensor<8xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @cache_batch(%q: tensor<2x8x1x64xf16>, %k: tensor<3x2x64x64xf16>, %v: tensor<3x2x64x64xf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{batch mismatch: 2 vs 3 in k_cache}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x8x1x64xf16>, tensor<3x2x64x64xf16>, tensor<3x2x64x64xf16>, tensor<2xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @cache_heads(%q: tensor<2x8x1x64xf16>, %k: tensor<2x3x64x64xf16>, %v: tensor<2x3x64x64xf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{query heads 8 are not a multiple of k_cache heads 3}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x8x1x64xf16>, tensor<2x3x64x64xf16>, tensor<2x3x64x64xf16>, tensor<2xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @head_dim(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x128xf16>, %v: tensor<2x2x64x128xf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{head dim mismatch: q has 64, k_cache has 128}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x8x1x64xf16>, tensor<2x2x64x128xf16>, tensor<2x2x64x128xf16>, tensor<2xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @kv_rows(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x32x64xf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{k_cache and v_cache must have the same batch, heads and rows}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x8x1x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x32x64xf16>, tensor<2xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @v_dtype(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xbf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{q and v_cache element types differ: f16 vs bf16}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x8x1x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x64x64xbf16>, tensor<2xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @too_many_rows(%q: tensor<2x8x80x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{q has 80 rows but a sequence holds at most 64 keys}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x8x80x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>) -> tensor<2x8x80x64xf16>
  return
}

// -----

func.func @result_shape(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{result shape must be 2x8x1x64, found 2x8x2x64}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x8x1x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>) -> tensor<2x8x2x64xf16>
  return
}

// -----

func.func @rope_offset(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{rope of attn.fused_decode takes no offset: a query row's position is its sequence's length - Nq + its row}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous", rope = {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half", offset = 3 : i64}} : (tensor<2x8x1x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @gate(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{attn.fused_decode has no gate (gate_block)}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous", gate_block = 16 : i64} : (tensor<2x8x1x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @lse(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{attn.fused_decode has no lse result}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous", lse} : (tensor<2x8x1x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @mods_fn(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{mods names 'fn' but the score_fn region is empty}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous", mods = ["scale", "fn"]} : (tensor<2x8x1x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @softcap_range(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{softcap cap must be positive and finite, found -1}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous", softcap = -1.0 : f64} : (tensor<2x8x1x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @rope_dim(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{rope rotary_dim 128 exceeds head dim 64}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous", rope = {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<2x8x1x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>) -> tensor<2x8x1x64xf16>
  return
}

// -----

func.func @f64(%q: tensor<2x8x1x64xf64>, %k: tensor<2x2x64x64xf64>, %v: tensor<2x2x64x64xf64>, %len: tensor<2xi32>) {
  // expected-error@+1 {{attn.fused_decode takes f32, f16 or bf16 tensors, found f64}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x8x1x64xf64>, tensor<2x2x64x64xf64>, tensor<2x2x64x64xf64>, tensor<2xi32>) -> tensor<2x8x1x64xf64>
  return
}

// -----

func.func @missing_layout(%q: tensor<2x8x1x64xf16>, %k: tensor<2x2x64x64xf16>, %v: tensor<2x2x64x64xf16>, %len: tensor<2xi32>) {
  // expected-error@+1 {{attribute "cache_layout" is expected but not provided}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true} : (tensor<2x8x1x64xf16>, tensor<2x2x64x64xf16>, tensor<2x2x64x64xf16>, tensor<2xi32>) -> tensor<2x8x1x64xf16>
  return
}
