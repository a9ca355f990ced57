// RUN: attn-opt %s --split-input-file --verify-diagnostics

// IRDL: a required attribute is missing.
func.func @mma_missing_accumulate(%a: memref<16x16xf32>) {
  // expected-error@+1 {{attribute "accumulate" is expected but not provided}}
  "tile.mma"(%a, %a, %a) {transpose_b = false} : (memref<16x16xf32>, memref<16x16xf32>, memref<16x16xf32>) -> ()
  return
}

// -----

// IRDL: wrong number of operands.
func.func @load_no_tile(%src: memref<1x1x16x16xf32>) {
  // expected-error@+1 {{expects at least 2 operands, but got 1}}
  "tile.load"(%src) : (memref<1x1x16x16xf32>) -> ()
  return
}

// -----

// IRDL: an attribute of the wrong kind.
func.func @fill_integer_value(%t: memref<16x16xf32>) {
  // expected-error@+1 {{expected base attribute 'builtin.float' but got 'builtin.integer'}}
  "tile.fill"(%t) {value = 0 : i32} : (memref<16x16xf32>) -> ()
  return
}

// -----

// IRDL: program ids are indices.
func.func @program_id_i64() {
  // expected-error@+1 {{expected 'index' but got 'i64'}}
  %0 = "tile.program_id"() {dim = 0 : i64} : () -> i64
  return
}

// -----

// IRDL: tiles are memrefs.
func.func @alloc_tensor() {
  // expected-error@+1 {{expected base type 'builtin.memref' but got 'builtin.tensor'}}
  %0 = "tile.alloc"() : () -> tensor<16x16xf32>
  return
}

// -----

func.func @program_id_dim_3() {
  // expected-error@+1 {{dim must be 0, 1 or 2, found 3}}
  %0 = "tile.program_id"() {dim = 3 : i64} : () -> index
  return
}

// -----

func.func @program_id_dim_negative() {
  // expected-error@+1 {{dim must be 0, 1 or 2, found -1}}
  %0 = "tile.program_id"() {dim = -1 : i64} : () -> index
  return
}

// -----

// Regression: a boolean dim passes IRDL's integer constraint and used to
// skip the range check.
func.func @program_id_dim_bool() {
  // expected-error@+1 {{dim must be an integer, found a boolean}}
  %0 = "tile.program_id"() {dim = true} : () -> index
  return
}

// -----

func.func @alloc_rank3() {
  // expected-error@+1 {{tile must be a static rank-1 or rank-2 memref, found memref<2x16x16xf32>}}
  %0 = "tile.alloc"() : () -> memref<2x16x16xf32>
  return
}

// -----

func.func @alloc_dynamic() {
  // expected-error@+1 {{tile must be a static rank-1 or rank-2 memref, found memref<?x16xf32>}}
  %0 = "tile.alloc"() : () -> memref<?x16xf32>
  return
}

// -----

func.func @alloc_f16() {
  // expected-error@+1 {{tiles hold f32 (f64 in f64 programs) in this version, found memref<16x16xf16>}}
  %0 = "tile.alloc"() : () -> memref<16x16xf16>
  return
}

// -----

func.func @fill_rank0(%t: memref<f32>) {
  // expected-error@+1 {{tile must be a static memref}}
  "tile.fill"(%t) {value = 1.0 : f32} : (memref<f32>) -> ()
  return
}

// -----

func.func @fill_bf16(%t: memref<16xbf16>) {
  // expected-error@+1 {{tile must hold f32 or f64, found bf16}}
  "tile.fill"(%t) {value = 1.0 : f32} : (memref<16xbf16>) -> ()
  return
}

// -----

// A rank-3 tensor [B, H, N] holds one value per row: its tile is rank 1.
func.func @load_source_rank3(%src: memref<8x16x64xf32>, %t: memref<16x64xf32>, %i: index) {
  // expected-error@+1 {{tile must be a static rank-1 memref, found memref<16x64xf32>}}
  "tile.load"(%src, %t, %i, %i, %i) : (memref<8x16x64xf32>, memref<16x64xf32>, index, index, index) -> ()
  return
}

// -----

func.func @load_tile_rank1(%src: memref<1x8x16x64xf32>, %t: memref<64xf32>, %i: index) {
  // expected-error@+1 {{tile must be a static rank-2 memref, found memref<64xf32>}}
  "tile.load"(%src, %t, %i, %i, %i) : (memref<1x8x16x64xf32>, memref<64xf32>, index, index, index) -> ()
  return
}

// -----

func.func @load_tile_f16(%src: memref<1x8x16x64xf16>, %t: memref<16x64xf16>, %i: index) {
  // expected-error@+1 {{tile must hold f32 or f64, found f16}}
  "tile.load"(%src, %t, %i, %i, %i) : (memref<1x8x16x64xf16>, memref<16x64xf16>, index, index, index) -> ()
  return
}

// -----

// Regression: the tensor's element type was not checked, and the lowering
// read an f64 tensor as f32. f64 tensors load into f64 tiles only.
func.func @load_source_f64(%src: memref<1x8x16x64xf64>, %t: memref<16x64xf32>, %i: index) {
  // expected-error@+1 {{source element type f64 needs a tile of f64, found a tile of f32}}
  "tile.load"(%src, %t, %i, %i, %i) : (memref<1x8x16x64xf64>, memref<16x64xf32>, index, index, index) -> ()
  return
}

// -----

// The index count follows the rank: (batch, head, row) for a rank-4 tensor,
// (row, col) for a matrix.
func.func @load_no_row(%src: memref<1x1x16x16xf32>, %t: memref<16x16xf32>, %i: index) {
  // expected-error@+1 {{a rank-4 source takes batch, head and row indices, found 2}}
  "tile.load"(%src, %t, %i, %i) : (memref<1x1x16x16xf32>, memref<16x16xf32>, index, index) -> ()
  return
}

// -----

func.func @load_matrix_three_indices(%src: memref<40x30xbf16>, %t: memref<16x8xf32>, %i: index) {
  // expected-error@+1 {{a rank-2 source takes row and column indices, found 3}}
  "tile.load"(%src, %t, %i, %i, %i) : (memref<40x30xbf16>, memref<16x8xf32>, index, index, index) -> ()
  return
}

// -----

func.func @store_matrix_one_index(%t: memref<16x8xf32>, %dst: memref<40x30xf32>, %i: index) {
  // expected-error@+1 {{a rank-2 dest takes row and column indices, found 1}}
  "tile.store"(%t, %dst, %i) : (memref<16x8xf32>, memref<40x30xf32>, index) -> ()
  return
}

// -----

func.func @load_matrix_f64(%src: memref<40x30xf64>, %t: memref<16x8xf32>, %i: index) {
  // expected-error@+1 {{source element type f64 needs a tile of f64, found a tile of f32}}
  "tile.load"(%src, %t, %i, %i) : (memref<40x30xf64>, memref<16x8xf32>, index, index) -> ()
  return
}

// -----

func.func @load_columns(%src: memref<1x8x16x64xf32>, %t: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{tile has 32 columns but the tensor's head dim is 64}}
  "tile.load"(%src, %t, %i, %i, %i) : (memref<1x8x16x64xf32>, memref<16x32xf32>, index, index, index) -> ()
  return
}

// -----

func.func @store_dest_dynamic(%t: memref<16x64xf32>, %dst: memref<1x8x?x64xf32>, %i: index) {
  // expected-error@+1 {{dest must be a static rank-4, rank-3 or rank-2 memref, found memref<1x8x?x64xf32>}}
  "tile.store"(%t, %dst, %i, %i, %i) : (memref<16x64xf32>, memref<1x8x?x64xf32>, index, index, index) -> ()
  return
}

// -----

func.func @store_dest_i32(%t: memref<16x64xf32>, %dst: memref<1x8x16x64xi32>, %i: index) {
  // expected-error@+1 {{dest element type must be f32, f16, bf16 or f64, found i32}}
  "tile.store"(%t, %dst, %i, %i, %i) : (memref<16x64xf32>, memref<1x8x16x64xi32>, index, index, index) -> ()
  return
}

// -----

func.func @store_columns(%t: memref<16x128xf32>, %dst: memref<1x8x16x64xbf16>, %i: index) {
  // expected-error@+1 {{tile has 128 columns but the tensor's head dim is 64}}
  "tile.store"(%t, %dst, %i, %i, %i) : (memref<16x128xf32>, memref<1x8x16x64xbf16>, index, index, index) -> ()
  return
}

// -----

func.func @rope_tile_rank1(%t: memref<64xf32>, %pos: index) {
  // expected-error@+1 {{tile must be a static rank-2 memref, found memref<64xf32>}}
  "tile.rope"(%t, %pos) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (memref<64xf32>, index) -> ()
  return
}

// -----

func.func @rope_bad_layout(%t: memref<16x64xf32>, %pos: index) {
  // expected-error@+1 {{rope layout must be "rotate_half" or "interleaved"}}
  "tile.rope"(%t, %pos) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "gptj"} : (memref<16x64xf32>, index) -> ()
  return
}

// -----

// Regression: a boolean rotary_dim used to be reported as a bad layout.
func.func @rope_rotary_dim_bool(%t: memref<16x64xf32>, %pos: index) {
  // expected-error@+1 {{rope rotary_dim must be an integer, found a boolean}}
  "tile.rope"(%t, %pos) {theta = 10000.0 : f64, rotary_dim = false, layout = "interleaved"} : (memref<16x64xf32>, index) -> ()
  return
}

// -----

func.func @rope_theta_inf(%t: memref<16x64xf32>, %pos: index) {
  // expected-error@+1 {{rope theta must be positive and finite, found inf}}
  "tile.rope"(%t, %pos) {theta = 0x7FF0000000000000 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (memref<16x64xf32>, index) -> ()
  return
}

// -----

func.func @rope_rotary_dim_odd(%t: memref<16x64xf32>, %pos: index) {
  // expected-error@+1 {{rope rotary_dim must be even and at least 2, found 7}}
  "tile.rope"(%t, %pos) {theta = 10000.0 : f64, rotary_dim = 7 : i64, layout = "rotate_half"} : (memref<16x64xf32>, index) -> ()
  return
}

// -----

func.func @rope_rotary_dim_too_big(%t: memref<16x64xf32>, %pos: index) {
  // expected-error@+1 {{rope rotary_dim 128 exceeds head dim 64}}
  "tile.rope"(%t, %pos) {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "interleaved"} : (memref<16x64xf32>, index) -> ()
  return
}

// -----

func.func @mma_a_rank1(%a: memref<64xf32>, %b: memref<64x16xf32>, %c: memref<1x16xf32>) {
  // expected-error@+1 {{a must be a static rank-2 memref, found memref<64xf32>}}
  "tile.mma"(%a, %b, %c) {transpose_b = false, accumulate = false} : (memref<64xf32>, memref<64x16xf32>, memref<1x16xf32>) -> ()
  return
}

// -----

func.func @mma_b_f16(%a: memref<16x64xf32>, %b: memref<64x16xf16>, %c: memref<16x16xf32>) {
  // expected-error@+1 {{b must hold f32 or f64, found f16}}
  "tile.mma"(%a, %b, %c) {transpose_b = false, accumulate = false} : (memref<16x64xf32>, memref<64x16xf16>, memref<16x16xf32>) -> ()
  return
}

// -----

func.func @mma_reduction_mismatch(%a: memref<16x64xf32>, %b: memref<32x16xf32>, %c: memref<16x16xf32>) {
  // expected-error@+1 {{reduction dims differ: a has 64, b has 32}}
  "tile.mma"(%a, %b, %c) {transpose_b = false, accumulate = true} : (memref<16x64xf32>, memref<32x16xf32>, memref<16x16xf32>) -> ()
  return
}

// -----

// With transpose_b, b is [n, k]: the same b no longer matches a.
func.func @mma_reduction_mismatch_transposed(%a: memref<16x64xf32>, %b: memref<64x32xf32>, %c: memref<16x64xf32>) {
  // expected-error@+1 {{reduction dims differ: a has 64, b has 32}}
  "tile.mma"(%a, %b, %c) {transpose_b = true, accumulate = false} : (memref<16x64xf32>, memref<64x32xf32>, memref<16x64xf32>) -> ()
  return
}

// -----

func.func @mma_c_shape(%a: memref<16x64xf32>, %b: memref<32x64xf32>, %c: memref<16x64xf32>) {
  // expected-error@+1 {{c must be 16x32, found 16x64}}
  "tile.mma"(%a, %b, %c) {transpose_b = true, accumulate = false} : (memref<16x64xf32>, memref<32x64xf32>, memref<16x64xf32>) -> ()
  return
}

// -----

func.func @mask_scores_f16(%s: memref<16x16xf16>, %i: index) {
  // expected-error@+1 {{scores must hold f32 or f64, found f16}}
  "tile.mask"(%s, %i, %i) {causal = true, kv_len = 16 : i64} : (memref<16x16xf16>, index, index) -> ()
  return
}

// -----

func.func @mask_kv_len_zero(%s: memref<16x16xf32>, %i: index) {
  // expected-error@+1 {{kv_len must be positive, found 0}}
  "tile.mask"(%s, %i, %i) {causal = false, kv_len = 0 : i64} : (memref<16x16xf32>, index, index) -> ()
  return
}

// -----

// Regression: a boolean kv_len used to skip the range check.
func.func @mask_kv_len_bool(%s: memref<16x16xf32>, %i: index) {
  // expected-error@+1 {{kv_len must be an integer, found a boolean}}
  "tile.mask"(%s, %i, %i) {causal = false, kv_len = true} : (memref<16x16xf32>, index, index) -> ()
  return
}

// -----

func.func @softmax_update_scores_rank1(%s: memref<16xf32>, %m: memref<16xf32>, %acc: memref<16x64xf32>) {
  // expected-error@+1 {{scores must be a static rank-2 memref, found memref<16xf32>}}
  "tile.softmax_update"(%s, %m, %m, %acc) {scale = 0.125 : f64} : (memref<16xf32>, memref<16xf32>, memref<16xf32>, memref<16x64xf32>) -> ()
  return
}

// -----

func.func @softmax_update_row_max_rows(%s: memref<16x16xf32>, %m: memref<32xf32>, %l: memref<16xf32>, %acc: memref<16x64xf32>) {
  // expected-error@+1 {{row_max has 32 rows, expected 16}}
  "tile.softmax_update"(%s, %m, %l, %acc) {scale = 0.125 : f64} : (memref<16x16xf32>, memref<32xf32>, memref<16xf32>, memref<16x64xf32>) -> ()
  return
}

// -----

func.func @softmax_update_row_sum_rank2(%s: memref<16x16xf32>, %m: memref<16xf32>, %l: memref<16x1xf32>, %acc: memref<16x64xf32>) {
  // expected-error@+1 {{row_sum must be a static rank-1 memref, found memref<16x1xf32>}}
  "tile.softmax_update"(%s, %m, %l, %acc) {scale = 0.125 : f64} : (memref<16x16xf32>, memref<16xf32>, memref<16x1xf32>, memref<16x64xf32>) -> ()
  return
}

// -----

func.func @softmax_update_acc_rows(%s: memref<16x16xf32>, %m: memref<16xf32>, %acc: memref<32x64xf32>) {
  // expected-error@+1 {{acc has 32 rows, scores have 16}}
  "tile.softmax_update"(%s, %m, %m, %acc) {scale = 0.125 : f64} : (memref<16x16xf32>, memref<16xf32>, memref<16xf32>, memref<32x64xf32>) -> ()
  return
}

// -----

func.func @softmax_update_scale_zero(%s: memref<16x16xf32>, %m: memref<16xf32>, %acc: memref<16x64xf32>) {
  // expected-error@+1 {{scale must be positive and finite, found 0}}
  "tile.softmax_update"(%s, %m, %m, %acc) {scale = 0.0 : f64} : (memref<16x16xf32>, memref<16xf32>, memref<16xf32>, memref<16x64xf32>) -> ()
  return
}

// -----

func.func @normalize_acc_f16(%acc: memref<16x64xf16>, %l: memref<16xf32>) {
  // expected-error@+1 {{acc must hold f32 or f64, found f16}}
  "tile.normalize"(%acc, %l) : (memref<16x64xf16>, memref<16xf32>) -> ()
  return
}

// -----

func.func @normalize_row_sum_rows(%acc: memref<16x64xf32>, %l: memref<64xf32>) {
  // expected-error@+1 {{row_sum has 64 rows, expected 16}}
  "tile.normalize"(%acc, %l) : (memref<16x64xf32>, memref<64xf32>) -> ()
  return
}

// -----

func.func @normalize_row_sum_f16(%acc: memref<16x64xf32>, %l: memref<16xf16>) {
  // expected-error@+1 {{row_sum must hold f32 or f64, found f16}}
  "tile.normalize"(%acc, %l) : (memref<16x64xf32>, memref<16xf16>) -> ()
  return
}

// -----

func.func @rope_offset_bool(%t: memref<16x64xf32>, %i: index) {
  // expected-error@+1 {{rope offset must be an integer}}
  "tile.rope"(%t, %i) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half", offset = true} : (memref<16x64xf32>, index) -> ()
  return
}

// -----

func.func @rope_positions_with_offset(%t: memref<16x64xf32>, %i: index, %p: memref<1x16xi32>) {
  // expected-error@+1 {{rope offset cannot be combined with explicit positions}}
  "tile.rope_positions"(%t, %i, %i, %p) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half", offset = 1 : i64} : (memref<16x64xf32>, index, index, memref<1x16xi32>) -> ()
  return
}

// -----

func.func @rope_positions_f32(%t: memref<16x64xf32>, %i: index, %p: memref<1x16xf32>) {
  // expected-error@+1 {{positions must hold i32, found f32}}
  "tile.rope_positions"(%t, %i, %i, %p) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (memref<16x64xf32>, index, index, memref<1x16xf32>) -> ()
  return
}

// -----

func.func @rope_positions_rank1(%t: memref<16x64xf32>, %i: index, %p: memref<16xi32>) {
  // expected-error@+1 {{positions must be a static rank-2 memref, found memref<16xi32>}}
  "tile.rope_positions"(%t, %i, %i, %p) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (memref<16x64xf32>, index, index, memref<16xi32>) -> ()
  return
}

// -----

func.func @mask_window_one_bound(%s: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{window must be array<i64: left, right>}}
  "tile.mask"(%s, %i, %i) {causal = false, kv_len = 16 : i64, window = array<i64: 4>} : (memref<16x32xf32>, index, index) -> ()
  return
}

// -----

func.func @mask_window_negative(%s: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{window bounds must be -1 (unbounded) or non-negative, found [4, -5]}}
  "tile.mask"(%s, %i, %i) {causal = false, kv_len = 16 : i64, window = array<i64: 4, -5>} : (memref<16x32xf32>, index, index) -> ()
  return
}

// -----

func.func @score_mod_empty(%s: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{mods must be a non-empty array of at most 3 modifier names}}
  "tile.score_mod"(%s, %i, %i, %i, %i) {mods = []} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @score_mod_unknown(%s: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{mods entry 0 must be one of "scale", "softcap", "alibi" (a gate is a tile.score_fn body)}}
  "tile.score_mod"(%s, %i, %i, %i, %i) {mods = ["tanh"]} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

// The gate is a tile.score_fn body, not a named modifier.
func.func @score_mod_gate(%s: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{mods entry 0 must be one of "scale", "softcap", "alibi" (a gate is a tile.score_fn body)}}
  "tile.score_mod"(%s, %i, %i, %i, %i) {mods = ["gate"], gate_block = 4 : i64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @score_mod_twice(%s: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{mods names 'scale' twice}}
  "tile.score_mod"(%s, %i, %i, %i, %i) {mods = ["scale", "scale"], scale = 2.0 : f64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @score_mod_missing_attr(%s: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{modifier 'alibi' needs attribute 'heads'}}
  "tile.score_mod"(%s, %i, %i, %i, %i) {mods = ["alibi"], alibi = 8.0 : f64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @score_mod_softcap_int(%s: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{scale, softcap and alibi must be floats; heads an integer}}
  "tile.score_mod"(%s, %i, %i, %i, %i) {mods = ["softcap"], softcap = 30 : i64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @score_mod_softcap_zero(%s: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{softcap must be positive and finite, found 0}}
  "tile.score_mod"(%s, %i, %i, %i, %i) {mods = ["softcap"], softcap = 0.0 : f64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @score_mod_heads_zero(%s: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{heads must be positive, found 0}}
  "tile.score_mod"(%s, %i, %i, %i, %i) {mods = ["alibi"], alibi = 8.0 : f64, heads = 0 : i64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @score_fn_scores_f16(%s: memref<16x32xf16>, %i: index) {
  // expected-error@+1 {{scores must hold f32 or f64, found f16}}
  "tile.score_fn"(%s, %i, %i, %i, %i) ({
  ^bb0(%x: f32, %b: index, %h: index, %q: index, %kv: index):
    gpu.yield %x : f32
  }) {seq_q = 16 : i64, seq_k = 32 : i64} : (memref<16x32xf16>, index, index, index, index) -> ()
  return
}

// -----

func.func @score_fn_seq_zero(%s: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{seq_k must be positive, found 0}}
  "tile.score_fn"(%s, %i, %i, %i, %i) ({
  ^bb0(%x: f32, %b: index, %h: index, %q: index, %kv: index):
    gpu.yield %x : f32
  }) {seq_q = 16 : i64, seq_k = 0 : i64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @score_fn_seq_bool(%s: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{seq_q must be an integer}}
  "tile.score_fn"(%s, %i, %i, %i, %i) ({
  ^bb0(%x: f32, %b: index, %h: index, %q: index, %kv: index):
    gpu.yield %x : f32
  }) {seq_q = true, seq_k = 32 : i64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @score_fn_empty(%s: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{tile.score_fn needs a body: one block (f32 score, index b, index h, index q, index kv) ending in gpu.yield of f32}}
  "tile.score_fn"(%s, %i, %i, %i, %i) ({
  }) {seq_q = 16 : i64, seq_k = 32 : i64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @score_fn_args(%s: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{the body of tile.score_fn must take (f32 score, index b, index h, index q, index kv), found (index, index, index, index)}}
  "tile.score_fn"(%s, %i, %i, %i, %i) ({
  ^bb0(%b: index, %h: index, %q: index, %kv: index):
    %x = arith.constant 0.0 : f32
    gpu.yield %x : f32
  }) {seq_q = 16 : i64, seq_k = 32 : i64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @score_fn_yield_i1(%s: memref<16x32xf32>, %i: index) {
  "tile.score_fn"(%s, %i, %i, %i, %i) ({
  ^bb0(%x: f32, %b: index, %h: index, %q: index, %kv: index):
    %t = arith.cmpi ule, %kv, %q : index
    // expected-error@+1 {{the body of tile.score_fn must yield one f32 (the new score), found a value of type i1}}
    gpu.yield %t : i1
  }) {seq_q = 16 : i64, seq_k = 32 : i64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @mask_fn_yield_f32(%s: memref<16x32xf32>, %i: index) {
  "tile.mask_fn"(%s, %i, %i, %i, %i) ({
  ^bb0(%b: index, %h: index, %q: index, %kv: index):
    %x = arith.constant 0.0 : f32
    // expected-error@+1 {{the body of tile.mask_fn must yield one i1 (true where the key is visible), found a value of type f32}}
    gpu.yield %x : f32
  }) {seq_q = 16 : i64, seq_k = 32 : i64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @mask_fn_args(%s: memref<16x32xf32>, %i: index) {
  // expected-error@+1 {{the body of tile.mask_fn must take (index b, index h, index q, index kv), found (f32, index, index, index, index)}}
  "tile.mask_fn"(%s, %i, %i, %i, %i) ({
  ^bb0(%x: f32, %b: index, %h: index, %q: index, %kv: index):
    %t = arith.cmpi ule, %kv, %q : index
    gpu.yield %t : i1
  }) {seq_q = 16 : i64, seq_k = 32 : i64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @mask_fn_nested(%s: memref<16x32xf32>, %i: index) {
  "tile.mask_fn"(%s, %i, %i, %i, %i) ({
  ^bb0(%b: index, %h: index, %q: index, %kv: index):
    %t = arith.cmpi ule, %kv, %q : index
    // expected-error@+1 {{'scf.if' cannot appear in the body of tile.mask_fn (allowed: arith.constant, scalar arith and math ops, memref.load of a capture, gpu.yield)}}
    %u = scf.if %t -> (i1) {
      scf.yield %t : i1
    } else {
      scf.yield %t : i1
    }
    gpu.yield %u : i1
  }) {seq_q = 16 : i64, seq_k = 32 : i64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}
// -----

func.func @score_fn_constant_index(%s: memref<16x32xf32>, %i: index, %bias: memref<15xf32>) {
  "tile.score_fn"(%s, %i, %i, %i, %i) ({
  ^bb0(%x: f32, %b: index, %h: index, %q: index, %kv: index):
    %c15 = arith.constant 15 : index
    // expected-error@+1 {{'memref.load' in the body of tile.score_fn reads index 15 of dimension 0 of memref<15xf32>, outside [0, 15)}}
    %t = memref.load %bias[%c15] : memref<15xf32>
    %y = arith.addf %x, %t : f32
    gpu.yield %y : f32
  }) {seq_q = 16 : i64, seq_k = 32 : i64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// -----

// A GEMM kernel's tile.matmul (attn-tile's, read by the lowerings) is
// checked against the kernel's arguments.
// expected-error@+1 {{tile.matmul must be {m, n, k, block_m, block_n, block_k: integers >= 1, accumulate: bool}}}
func.func @matmul_missing_key(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %c: memref<8x16xf32>) attributes {tile.kernel, tile.matmul = {m = 8 : i64, n = 16 : i64, k = 4 : i64, block_m = 8 : i64, block_n = 16 : i64, accumulate = false}} {
  return
}

// -----

// expected-error@+1 {{tile.matmul must be {m, n, k, block_m, block_n, block_k: integers >= 1, accumulate: bool}}}
func.func @matmul_accumulate_int(%a: memref<8x4xf32>, %b: memref<4x16xf32>, %c: memref<8x16xf32>) attributes {tile.kernel, tile.matmul = {m = 8 : i64, n = 16 : i64, k = 4 : i64, block_m = 8 : i64, block_n = 16 : i64, block_k = 4 : i64, accumulate = 1 : i64}} {
  return
}

// -----

// expected-error@+1 {{tile.matmul of 8x16x4 needs the arguments a: 8x4, b: 4x16, c: 8x16 (memrefs of one element type)}}
func.func @matmul_wrong_shape(%a: memref<8x4xf32>, %b: memref<16x4xf32>, %c: memref<8x16xf32>) attributes {tile.kernel, tile.matmul = {m = 8 : i64, n = 16 : i64, k = 4 : i64, block_m = 8 : i64, block_n = 16 : i64, block_k = 4 : i64, accumulate = false}} {
  return
}

// -----

// expected-error@+1 {{tile.matmul of 8x16x4 needs the arguments a: 8x4, b: 4x16, c: 8x16 (memrefs of one element type)}}
func.func @matmul_mixed_types(%a: memref<8x4xbf16>, %b: memref<4x16xbf16>, %c: memref<8x16xf32>) attributes {tile.kernel, tile.matmul = {m = 8 : i64, n = 16 : i64, k = 4 : i64, block_m = 8 : i64, block_n = 16 : i64, block_k = 4 : i64, accumulate = true}} {
  return
}

// -----

// The tiles of one op hold one type: f32, or f64 in f64 programs.
func.func @mma_mixed_f64_f32(%a: memref<16x8xf64>, %b: memref<16x8xf32>, %c: memref<16x16xf64>) {
  // expected-error@+1 {{b holds f32 but operand 0 holds f64; the tiles of one op hold one type}}
  "tile.mma"(%a, %b, %c) {transpose_b = true, accumulate = false} : (memref<16x8xf64>, memref<16x8xf32>, memref<16x16xf64>) -> ()
  return
}

// -----

func.func @load_f32_into_f64_tile(%src: memref<1x8x16x64xf32>, %t: memref<16x64xf64>, %i: index) {
  // expected-error@+1 {{source element type f32 needs a tile of f32, found a tile of f64}}
  "tile.load"(%src, %t, %i, %i, %i) : (memref<1x8x16x64xf32>, memref<16x64xf64>, index, index, index) -> ()
  return
}

// -----

func.func @score_fn_f32_body_on_f64_scores(%s: memref<16x16xf64>, %i: index) {
  // expected-error@+1 {{the body of tile.score_fn must take (f64 score, index b, index h, index q, index kv), found (f32, index, index, index, index)}}
  "tile.score_fn"(%s, %i, %i, %i, %i) ({
  ^bb0(%x: f32, %b: index, %h: index, %r: index, %c: index):
    gpu.yield %x : f32
  }) {seq_q = 16 : i64, seq_k = 16 : i64} : (memref<16x16xf64>, index, index, index, index) -> ()
  return
}

// -----

func.func @load_pad_not_float(%src: memref<1x1x16x8xf32>) {
  %t = "tile.alloc"() : () -> memref<16x8xf32>
  %c0 = arith.constant 0 : index
  // expected-error@+1 {{pad must be a float (what elements past the source's edges read as)}}
  "tile.load"(%src, %t, %c0, %c0, %c0) {pad = "inf"} : (memref<1x1x16x8xf32>, memref<16x8xf32>, index, index, index) -> ()
  return
}
