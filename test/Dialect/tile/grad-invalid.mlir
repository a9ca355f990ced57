// RUN: attn-opt %s --split-input-file --verify-diagnostics

// The C verifier's errors on the backward's tile ops and attributes
// (issue 29), each located at the op.

func.func @rows_tile_rank2(%lse: memref<2x8x100xf32>, %t: memref<32x4xf32>, %i: index) {
  // expected-error@+1 {{tile must be a static rank-1 memref, found memref<32x4xf32>}}
  "tile.load"(%lse, %t, %i, %i, %i) : (memref<2x8x100xf32>, memref<32x4xf32>, index, index, index) -> ()
  return
}

// -----

func.func @rows_two_indices(%lse: memref<2x8x100xf32>, %t: memref<32xf32>, %i: index) {
  // expected-error@+1 {{a rank-3 dest takes batch, head and row indices, found 2}}
  "tile.store"(%t, %lse, %i, %i) : (memref<32xf32>, memref<2x8x100xf32>, index, index) -> ()
  return
}

// -----

func.func @rows_i32(%lse: memref<2x8x100xi32>, %t: memref<32xf32>, %i: index) {
  // expected-error@+1 {{source element type must be f32, f16, bf16 or f64, found i32}}
  "tile.load"(%lse, %t, %i, %i, %i) : (memref<2x8x100xi32>, memref<32xf32>, index, index, index) -> ()
  return
}

// -----

func.func @copy_rank5(%x: memref<1x2x8x100x4xf32>, %t: memref<32x4xf32>, %i: index) {
  // expected-error@+1 {{source must be a static rank-4, rank-3 or rank-2 memref, found memref<1x2x8x100x4xf32>}}
  "tile.load"(%x, %t, %i, %i, %i) : (memref<1x2x8x100x4xf32>, memref<32x4xf32>, index, index, index) -> ()
  return
}

// -----

func.func @row_lse_lengths(%m: memref<32xf32>, %l: memref<16xf32>) {
  // expected-error@+1 {{row_sum has 16 rows, expected 32}}
  "tile.row_lse"(%m, %l, %m) : (memref<32xf32>, memref<16xf32>, memref<32xf32>) -> ()
  return
}

// -----

func.func @row_lse_tile(%m: memref<32x2xf32>, %l: memref<32xf32>) {
  // expected-error@+1 {{row_max must be a static rank-1 memref, found memref<32x2xf32>}}
  "tile.row_lse"(%m, %l, %l) : (memref<32x2xf32>, memref<32xf32>, memref<32xf32>) -> ()
  return
}

// -----

func.func @row_dot_shapes(%a: memref<32x64xf32>, %b: memref<32x32xf32>, %d: memref<32xf32>) {
  // expected-error@+1 {{b is 32x32 but a is 32x64}}
  "tile.row_dot"(%a, %b, %d) : (memref<32x64xf32>, memref<32x32xf32>, memref<32xf32>) -> ()
  return
}

// -----

func.func @row_dot_rows(%a: memref<32x64xf32>, %d: memref<64xf32>) {
  // expected-error@+1 {{d has 64 rows, expected 32}}
  "tile.row_dot"(%a, %a, %d) : (memref<32x64xf32>, memref<32x64xf32>, memref<64xf32>) -> ()
  return
}

// -----

func.func @row_dot_f16(%a: memref<32x64xf16>, %d: memref<32xf32>) {
  // expected-error@+1 {{a must hold f32 or f64, found f16}}
  "tile.row_dot"(%a, %a, %d) : (memref<32x64xf16>, memref<32x64xf16>, memref<32xf32>) -> ()
  return
}

// -----

func.func @exp_lse_no_scale(%s: memref<32x16xf32>, %lse: memref<32xf32>) {
  // expected-error@+1 {{attribute "scale" is expected but not provided}}
  "tile.exp_lse"(%s, %lse) : (memref<32x16xf32>, memref<32xf32>) -> ()
  return
}

// -----

func.func @exp_lse_negative_scale(%s: memref<32x16xf32>, %lse: memref<32xf32>) {
  // expected-error@+1 {{scale must be positive and finite, found -0.5}}
  "tile.exp_lse"(%s, %lse) {scale = -0.5 : f64} : (memref<32x16xf32>, memref<32xf32>) -> ()
  return
}

// -----

func.func @exp_lse_rows(%s: memref<32x16xf32>, %lse: memref<16xf32>) {
  // expected-error@+1 {{lse has 16 rows, expected 32}}
  "tile.exp_lse"(%s, %lse) {scale = 1.0 : f64} : (memref<32x16xf32>, memref<16xf32>) -> ()
  return
}

// -----

func.func @ds_shapes(%p: memref<32x16xf32>, %dp: memref<16x32xf32>, %d: memref<32xf32>) {
  // expected-error@+1 {{dp is 16x32 but p is 32x16}}
  "tile.ds"(%p, %dp, %d) {scale = 1.0 : f64} : (memref<32x16xf32>, memref<16x32xf32>, memref<32xf32>) -> ()
  return
}

// -----

func.func @ds_scale_inf(%p: memref<32x16xf32>, %d: memref<32xf32>) {
  // expected-error@+1 {{scale must be positive and finite, found inf}}
  "tile.ds"(%p, %p, %d) {scale = 0x7FF0000000000000 : f64} : (memref<32x16xf32>, memref<32x16xf32>, memref<32xf32>) -> ()
  return
}

// -----

func.func @mma_transpose_a_shapes(%p: memref<16x32xf32>, %do: memref<32x64xf32>, %dv: memref<16x64xf32>) {
  // expected-error@+1 {{reduction dims differ: a has 16, b has 32}}
  "tile.mma"(%p, %do, %dv) {transpose_a = true, transpose_b = false, accumulate = true} : (memref<16x32xf32>, memref<32x64xf32>, memref<16x64xf32>) -> ()
  return
}

// -----

func.func @mma_transpose_a_c(%p: memref<32x16xf32>, %do: memref<32x64xf32>, %dv: memref<32x64xf32>) {
  // expected-error@+1 {{c must be 16x64, found 32x64}}
  "tile.mma"(%p, %do, %dv) {transpose_a = true, transpose_b = false, accumulate = true} : (memref<32x16xf32>, memref<32x64xf32>, memref<32x64xf32>) -> ()
  return
}

// -----

func.func @mma_transpose_a_int(%a: memref<16x16xf32>) {
  // expected-error@+1 {{transpose_a must be a boolean}}
  "tile.mma"(%a, %a, %a) {transpose_a = 1 : i64, transpose_b = false, accumulate = false} : (memref<16x16xf32>, memref<16x16xf32>, memref<16x16xf32>) -> ()
  return
}

// -----

func.func @rope_inverse_string(%t: memref<16x64xf32>, %i: index) {
  // expected-error@+1 {{inverse must be a boolean}}
  "tile.rope"(%t, %i) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half", inverse = "yes"} : (memref<16x64xf32>, index) -> ()
  return
}

// -----

func.func @rope_positions_inverse_int(%t: memref<16x64xf32>, %i: index, %pos: memref<2x100xi32>) {
  // expected-error@+1 {{inverse must be a boolean}}
  "tile.rope_positions"(%t, %i, %i, %pos) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half", inverse = 1 : i64} : (memref<16x64xf32>, index, index, memref<2x100xi32>) -> ()
  return
}

// -----

func.func @score_fn_grad_shapes(%ds: memref<16x32xf32>, %s: memref<16x16xf32>, %i: index) {
  // expected-error@+1 {{scores_in is 16x16 but ds is 16x32}}
  "tile.score_fn_grad"(%ds, %s, %i, %i, %i, %i) ({
  ^bb0(%x: f32, %b: index, %h: index, %q: index, %kv: index):
    gpu.yield %x : f32
  }) {seq_q = 16 : i64, seq_k = 32 : i64} : (memref<16x32xf32>, memref<16x16xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @score_fn_grad_seq(%ds: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{seq_q must be positive, found 0}}
  "tile.score_fn_grad"(%ds, %ds, %i, %i, %i, %i) ({
  ^bb0(%x: f32, %b: index, %h: index, %q: index, %kv: index):
    gpu.yield %x : f32
  }) {seq_q = 0 : i64, seq_k = 32 : i64} : (memref<16x32xf32>, memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

// The body is checked as tile.score_fn's, located at the offending op.
func.func @score_fn_grad_body_op(%ds: memref<16x32xf32>, %i: index) {
  "tile.score_fn_grad"(%ds, %ds, %i, %i, %i, %i) ({
  ^bb0(%x: f32, %b: index, %h: index, %q: index, %kv: index):
    // expected-error@+1 {{'math.atan' cannot appear in the body of tile.score_fn_grad}}
    %y = math.atan %x : f32
    gpu.yield %y : f32
  }) {seq_q = 16 : i64, seq_k = 32 : i64} : (memref<16x32xf32>, memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @score_fn_grad_mask_body(%ds: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{the body of tile.score_fn_grad must take (f32 score, index b, index h, index q, index kv), found (index, index, index, index)}}
  "tile.score_fn_grad"(%ds, %ds, %i, %i, %i, %i) ({
  ^bb0(%b: index, %h: index, %q: index, %kv: index):
    %t = arith.constant true
    gpu.yield %t : i1
  }) {seq_q = 16 : i64, seq_k = 32 : i64} : (memref<16x32xf32>, memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @clear_integer(%g: memref<8xi32>) {
  // expected-error@+1 {{dst must be a static memref of f32 or f64 of rank >= 1, found memref<8xi32>}}
  "tile.clear"(%g) : (memref<8xi32>) -> ()
  return
}

// -----

func.func @capture_grad_elem(%ds: memref<16x32xf32>, %g: memref<8xf64>, %i: index) {
  // expected-error@+1 {{grad must hold the tiles' element type}}
  "tile.capture_grad"(%ds, %ds, %g, %i, %i, %i, %i) ({
  ^bb0(%s: f32, %b: index, %h: index, %q: index, %kv: index):
    gpu.yield %s, %kv : f32, index
  }) {seq_q = 16 : i64, seq_k = 32 : i64, scale = 1.0 : f64} : (memref<16x32xf32>, memref<16x32xf32>, memref<8xf64>, index, index, index, index) -> ()
  return
}

// -----

func.func @capture_grad_rank(%ds: memref<16x32xf32>, %g: memref<2x8xf32>, %i: index) {
  "tile.capture_grad"(%ds, %ds, %g, %i, %i, %i, %i) ({
  ^bb0(%s: f32, %b: index, %h: index, %q: index, %kv: index):
    // expected-error@+1 {{the body of tile.capture_grad must yield the derivative and 2 indices (grad's rank), found 2 values}}
    gpu.yield %s, %kv : f32, index
  }) {seq_q = 16 : i64, seq_k = 32 : i64, scale = 1.0 : f64} : (memref<16x32xf32>, memref<16x32xf32>, memref<2x8xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @capture_grad_index_type(%ds: memref<16x32xf32>, %g: memref<8xf32>, %i: index) {
  "tile.capture_grad"(%ds, %ds, %g, %i, %i, %i, %i) ({
  ^bb0(%s: f32, %b: index, %h: index, %q: index, %kv: index):
    // expected-error@+1 {{the body of tile.capture_grad must yield one f32 (the derivative), then the indices it accumulates at}}
    gpu.yield %s, %s : f32, f32
  }) {seq_q = 16 : i64, seq_k = 32 : i64, scale = 1.0 : f64} : (memref<16x32xf32>, memref<16x32xf32>, memref<8xf32>, index, index, index, index) -> ()
  return
}
