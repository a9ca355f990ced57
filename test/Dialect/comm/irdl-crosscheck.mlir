// RUN: attn-opt %s --split-input-file --verify-diagnostics
// RUN: %mlir_opt %s --irdl-file=%attn_src/dialects/comm/comm.irdl.mlir --split-input-file --verify-diagnostics

// IRDL-level errors of the comm dialect: attn-opt and stock mlir-opt loading
// the same IRDL must report each alike (STYLE 2.7). The C verifier's checks
// are unknown to mlir-opt; they live in invalid.mlir only.

func.func @all_reduce_missing_world_size(%x: tensor<16xf32>) {
  // expected-error@+1 {{attribute "world_size" is expected but not provided}}
  %0 = "comm.all_reduce"(%x) {reduction = "sum"} : (tensor<16xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @all_to_all_missing_split_dim(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{attribute "split_dim" is expected but not provided}}
  %0 = "comm.all_to_all"(%x) {concat_dim = 0 : i64, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @all_gather_two_operands(%x: tensor<16xf32>) {
  // expected-error@+1 {{expects exactly 1 operands, but got 2}}
  %0 = "comm.all_gather"(%x, %x) {dim = 0 : i64, world_size = 2 : i64} : (tensor<16xf32>, tensor<16xf32>) -> tensor<32xf32>
  return
}

// -----

func.func @reduce_scatter_integer_reduction(%x: tensor<16xf32>) {
  // expected-error@+1 {{expected base attribute 'builtin.string' but got 'builtin.integer'}}
  %0 = "comm.reduce_scatter"(%x) {dim = 0 : i64, reduction = 0 : i64, world_size = 2 : i64} : (tensor<16xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @all_gather_float_world_size(%x: tensor<16xf32>) {
  // expected-error@+1 {{expected base attribute 'builtin.integer' but got 'builtin.float'}}
  %0 = "comm.all_gather"(%x) {dim = 0 : i64, world_size = 2.0 : f32} : (tensor<16xf32>) -> tensor<32xf32>
  return
}

// -----

func.func @all_reduce_result_type(%x: tensor<16xf32>) {
  // expected-error@+1 {{expected 'tensor<16xf32>' but got 'tensor<16xf16>'}}
  %0 = "comm.all_reduce"(%x) {reduction = "sum", world_size = 2 : i64} : (tensor<16xf32>) -> tensor<16xf16>
  return
}

// -----

func.func @all_reduce_memref(%x: memref<16xf32>) {
  // expected-error@+1 {{expected base type 'builtin.tensor' but got 'builtin.memref'}}
  %0 = "comm.all_reduce"(%x) {reduction = "sum", world_size = 2 : i64} : (memref<16xf32>) -> memref<16xf32>
  return
}

// -----

func.func @put_three_operands(%t: memref<64x64xf32>, %i: index) {
  // expected-error@+1 {{expects at least 4 operands, but got 3}}
  "comm.put"(%t, %t, %i) {peer = 0 : i64} : (memref<64x64xf32>, memref<64x64xf32>, index) -> ()
  return
}

// -----

func.func @put_tensor_tile(%t: tensor<64x64xf32>, %b: memref<64x64xf32>, %i: index) {
  // expected-error@+1 {{expected base type 'builtin.memref' but got 'builtin.tensor'}}
  "comm.put"(%t, %b, %i, %i) {peer = 0 : i64} : (tensor<64x64xf32>, memref<64x64xf32>, index, index) -> ()
  return
}

// -----

func.func @signal_missing_mode(%f: memref<8xi64>, %i: index) {
  // expected-error@+1 {{attribute "mode" is expected but not provided}}
  "comm.signal"(%f, %i) {value = 1 : i64, peer = 0 : i64} : (memref<8xi64>, index) -> ()
  return
}

// -----

func.func @wait_i32_index(%f: memref<8xi64>, %i: i32) {
  // expected-error@+1 {{expected 'index' but got 'i32'}}
  "comm.wait"(%f, %i) {value = 1 : i64} : (memref<8xi64>, i32) -> ()
  return
}

// -----

func.func @reduce_missing_reduction(%s: memref<64x64xf32>, %i: index) {
  // expected-error@+1 {{attribute "reduction" is expected but not provided}}
  "comm.reduce"(%s, %s, %i, %i) : (memref<64x64xf32>, memref<64x64xf32>, index, index) -> ()
  return
}

// -----

func.func @rank_i64_result() {
  // expected-error@+1 {{expected 'index' but got 'i64'}}
  %0 = "comm.rank"() {scope = "world"} : () -> i64
  return
}

// -----

func.func @barrier_integer_scope() {
  // expected-error@+1 {{expected base attribute 'builtin.string' but got 'builtin.integer'}}
  "comm.barrier"() {scope = 0 : i64} : () -> ()
  return
}

// -----

func.func @fused_matmul_missing_predicted_us(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{attribute "predicted_us" is expected but not provided}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}
