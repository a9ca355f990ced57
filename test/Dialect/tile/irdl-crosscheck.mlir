// RUN: attn-opt %s --split-input-file --verify-diagnostics
// RUN: %mlir_opt %s --irdl-file=%attn_src/dialects/tile/tile.irdl.mlir --split-input-file --verify-diagnostics

// IRDL-level errors of the tile dialect: attn-opt and stock mlir-opt loading
// the same IRDL must report each alike (STYLE 2.7). The C verifier's checks
// are unknown to mlir-opt; they live in invalid.mlir only.

func.func @mma_missing_accumulate(%a: memref<16x16xf32>) {
  // expected-error@+1 {{attribute "accumulate" is expected but not provided}}
  "tile.mma"(%a, %a, %a) {transpose_b = false} : (memref<16x16xf32>, memref<16x16xf32>, memref<16x16xf32>) -> ()
  return
}

// -----

func.func @program_id_missing_dim() {
  // expected-error@+1 {{attribute "dim" is expected but not provided}}
  %0 = "tile.program_id"() : () -> index
  return
}

// -----

func.func @load_no_tile(%src: memref<1x1x16x16xf32>) {
  // expected-error@+1 {{expects at least 2 operands, but got 1}}
  "tile.load"(%src) : (memref<1x1x16x16xf32>) -> ()
  return
}

// -----

func.func @fill_with_result(%t: memref<16x16xf32>) {
  // expected-error@+1 {{expects exactly 0 results, but got 1}}
  %0 = "tile.fill"(%t) {value = 0.0 : f32} : (memref<16x16xf32>) -> memref<16x16xf32>
  return
}

// -----

func.func @fill_integer_value(%t: memref<16x16xf32>) {
  // expected-error@+1 {{expected base attribute 'builtin.float' but got 'builtin.integer'}}
  "tile.fill"(%t) {value = 0 : i32} : (memref<16x16xf32>) -> ()
  return
}

// -----

func.func @mask_causal_not_bool(%s: memref<16x16xf32>, %i: index) {
  // expected-error@+1 {{'"yes"' does not satisfy the constraint}}
  "tile.mask"(%s, %i, %i) {causal = "yes", kv_len = 16 : i64} : (memref<16x16xf32>, index, index) -> ()
  return
}

// -----

func.func @program_id_i64() {
  // expected-error@+1 {{expected 'index' but got 'i64'}}
  %0 = "tile.program_id"() {dim = 0 : i64} : () -> i64
  return
}

// -----

func.func @store_i64_row(%t: memref<16x16xf32>, %dst: memref<1x1x16x16xf32>, %i: index, %r: i64) {
  // expected-error@+1 {{expected 'index' but got 'i64'}}
  "tile.store"(%t, %dst, %i, %i, %r) : (memref<16x16xf32>, memref<1x1x16x16xf32>, index, index, i64) -> ()
  return
}

// -----

func.func @alloc_tensor() {
  // expected-error@+1 {{expected base type 'builtin.memref' but got 'builtin.tensor'}}
  %0 = "tile.alloc"() : () -> tensor<16x16xf32>
  return
}
