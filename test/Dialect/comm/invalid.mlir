// RUN: attn-opt %s --split-input-file --verify-diagnostics

// IRDL: a required attribute is missing.
func.func @all_reduce_missing_world_size(%x: tensor<16xf32>) {
  // expected-error@+1 {{attribute "world_size" is expected but not provided}}
  %0 = "comm.all_reduce"(%x) {reduction = "sum"} : (tensor<16xf32>) -> tensor<16xf32>
  return
}

// -----

// IRDL: wrong number of operands.
func.func @all_gather_two_operands(%x: tensor<16xf32>) {
  // expected-error@+1 {{expects exactly 1 operands, but got 2}}
  %0 = "comm.all_gather"(%x, %x) {dim = 0 : i64, world_size = 2 : i64} : (tensor<16xf32>, tensor<16xf32>) -> tensor<32xf32>
  return
}

// -----

// IRDL: an attribute of the wrong kind.
func.func @reduce_scatter_integer_reduction(%x: tensor<16xf32>) {
  // expected-error@+1 {{expected base attribute 'builtin.string' but got 'builtin.integer'}}
  %0 = "comm.reduce_scatter"(%x) {dim = 0 : i64, reduction = 0 : i64, world_size = 2 : i64} : (tensor<16xf32>) -> tensor<8xf32>
  return
}

// -----

// IRDL: all_reduce binds operand and result to one type.
func.func @all_reduce_result_type(%x: tensor<16xf32>) {
  // expected-error@+1 {{expected 'tensor<16xf32>' but got 'tensor<16xf16>'}}
  %0 = "comm.all_reduce"(%x) {reduction = "sum", world_size = 2 : i64} : (tensor<16xf32>) -> tensor<16xf16>
  return
}

// -----

func.func @world_size_zero(%x: tensor<16xf32>) {
  // expected-error@+1 {{world_size must be positive, found 0}}
  %0 = "comm.all_reduce"(%x) {reduction = "sum", world_size = 0 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  return
}

// -----

// Regression: a boolean world_size passes IRDL's integer constraint and used
// to skip every check of the op.
func.func @world_size_bool(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{world_size must be an integer, found a boolean}}
  %0 = "comm.all_gather"(%x) {dim = 0 : i64, world_size = true} : (tensor<4x8xf32>) -> tensor<5x8xf32>
  return
}

// -----

func.func @operand_dynamic(%x: tensor<?x8xf32>) {
  // expected-error@+1 {{operand must be a static tensor of rank at least 1, found tensor<?x8xf32>}}
  %0 = "comm.all_reduce"(%x) {reduction = "sum", world_size = 2 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

// Regression: this used to read "operand must be a statically shaped tensor"
// although tensor<f32> is one.
func.func @operand_rank0(%x: tensor<f32>) {
  // expected-error@+1 {{operand must be a static tensor of rank at least 1, found tensor<f32>}}
  %0 = "comm.all_reduce"(%x) {reduction = "sum", world_size = 2 : i64} : (tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @all_gather_result_rank(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result must be a static tensor of rank 2, found tensor<64xf32>}}
  %0 = "comm.all_gather"(%x) {dim = 0 : i64, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<64xf32>
  return
}

// -----

func.func @all_to_all_result_dynamic(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result must be a static tensor of rank 2, found tensor<?x8xf32>}}
  %0 = "comm.all_to_all"(%x) {split_dim = 0 : i64, concat_dim = 1 : i64, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @all_gather_elem_mismatch(%x: tensor<4x8xf16>) {
  // expected-error@+1 {{operand and result element types differ}}
  %0 = "comm.all_gather"(%x) {dim = 0 : i64, world_size = 2 : i64} : (tensor<4x8xf16>) -> tensor<8x8xf32>
  return
}

// -----

func.func @all_reduce_unknown_reduction(%x: tensor<16xf32>) {
  // expected-error@+1 {{unknown reduction 'mean' (expected sum, prod, max, min or avg)}}
  %0 = "comm.all_reduce"(%x) {reduction = "mean", world_size = 2 : i64} : (tensor<16xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @reduce_scatter_unknown_reduction(%x: tensor<16xf32>) {
  // expected-error@+1 {{unknown reduction 'SUM' (expected sum, prod, max, min or avg)}}
  %0 = "comm.reduce_scatter"(%x) {dim = 0 : i64, reduction = "SUM", world_size = 2 : i64} : (tensor<16xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @all_gather_dim_out_of_range(%x: tensor<1x8x16x64xf32>) {
  // expected-error@+1 {{dim 4 is out of range for rank 4}}
  %0 = "comm.all_gather"(%x) {dim = 4 : i64, world_size = 2 : i64} : (tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return
}

// -----

func.func @reduce_scatter_dim_negative(%x: tensor<8x8xf32>) {
  // expected-error@+1 {{dim -1 is out of range for rank 2}}
  %0 = "comm.reduce_scatter"(%x) {dim = -1 : i64, reduction = "sum", world_size = 2 : i64} : (tensor<8x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

// Regression: a boolean dim failed verification without any diagnostic.
func.func @all_gather_dim_bool(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{dim must be an integer, found a boolean}}
  %0 = "comm.all_gather"(%x) {dim = true, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @all_to_all_split_dim_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{split_dim 2 is out of range for rank 2}}
  %0 = "comm.all_to_all"(%x) {split_dim = 2 : i64, concat_dim = 0 : i64, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @all_to_all_concat_dim_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{concat_dim 5 is out of range for rank 2}}
  %0 = "comm.all_to_all"(%x) {split_dim = 0 : i64, concat_dim = 5 : i64, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @all_to_all_concat_dim_bool(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{concat_dim must be an integer, found a boolean}}
  %0 = "comm.all_to_all"(%x) {split_dim = 0 : i64, concat_dim = false, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @all_gather_gathered_dim(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result dim 0 must be 16, found 8}}
  %0 = "comm.all_gather"(%x) {dim = 0 : i64, world_size = 4 : i64} : (tensor<4x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @all_gather_other_dim(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result dim 1 must be 8, found 16}}
  %0 = "comm.all_gather"(%x) {dim = 0 : i64, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @reduce_scatter_not_divisible(%x: tensor<6x8xf32>) {
  // expected-error@+1 {{dim 0 of size 6 is not divisible by world_size 4}}
  %0 = "comm.reduce_scatter"(%x) {dim = 0 : i64, reduction = "sum", world_size = 4 : i64} : (tensor<6x8xf32>) -> tensor<1x8xf32>
  return
}

// -----

func.func @reduce_scatter_scattered_dim(%x: tensor<8x8xf32>) {
  // expected-error@+1 {{result dim 1 must be 4, found 8}}
  %0 = "comm.reduce_scatter"(%x) {dim = 1 : i64, reduction = "avg", world_size = 2 : i64} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @all_to_all_not_divisible(%x: tensor<2x6x16xf32>) {
  // expected-error@+1 {{split dim 1 of size 6 is not divisible by world_size 4}}
  %0 = "comm.all_to_all"(%x) {split_dim = 1 : i64, concat_dim = 2 : i64, world_size = 4 : i64} : (tensor<2x6x16xf32>) -> tensor<2x1x64xf32>
  return
}

// -----

// Regression: with split_dim == concat_dim the split was not checked, so a
// dim of 3 was "split" over 2 ranks.
func.func @all_to_all_same_dim_not_divisible(%x: tensor<3x8xf32>) {
  // expected-error@+1 {{split dim 0 of size 3 is not divisible by world_size 2}}
  %0 = "comm.all_to_all"(%x) {split_dim = 0 : i64, concat_dim = 0 : i64, world_size = 2 : i64} : (tensor<3x8xf32>) -> tensor<3x8xf32>
  return
}

// -----

func.func @all_to_all_concat_size(%x: tensor<2x8x16xf32>) {
  // expected-error@+1 {{result dim 2 must be 64, found 16}}
  %0 = "comm.all_to_all"(%x) {split_dim = 1 : i64, concat_dim = 2 : i64, world_size = 4 : i64} : (tensor<2x8x16xf32>) -> tensor<2x2x16xf32>
  return
}

// -----

func.func @all_to_all_split_size(%x: tensor<2x8x16xf32>) {
  // expected-error@+1 {{result dim 1 must be 2, found 8}}
  %0 = "comm.all_to_all"(%x) {split_dim = 1 : i64, concat_dim = 2 : i64, world_size = 4 : i64} : (tensor<2x8x16xf32>) -> tensor<2x8x64xf32>
  return
}

// -----

func.func @all_to_all_same_dim_resized(%x: tensor<4x8xf32>) {
  // expected-error@+1 {{result dim 0 must be 4, found 8}}
  %0 = "comm.all_to_all"(%x) {split_dim = 0 : i64, concat_dim = 0 : i64, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// comm.topology
//===----------------------------------------------------------------------===//

// expected-error@+1 {{comm.topology must be a dictionary, found 8 : i64}}
module attributes {comm.topology = 8 : i64} {
}

// -----

// expected-error@+1 {{comm.topology has unknown key 'gpus' (expected gpus_per_node, nodes, nvlink_gbps, net_gbps)}}
func.func @topology_unknown_key() attributes {comm.topology = {gpus = 4 : i64, gpus_per_node = 4 : i64, nodes = 1 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} {
  return
}

// -----

// expected-error@+1 {{comm.topology is missing 'net_gbps'}}
func.func @topology_missing_key() attributes {comm.topology = {gpus_per_node = 4 : i64, nodes = 1 : i64, nvlink_gbps = 450 : i64}} {
  return
}

// -----

// expected-error@+1 {{comm.topology 'nodes' must be a positive integer, found 0 : i64}}
func.func @topology_zero_nodes() attributes {comm.topology = {gpus_per_node = 4 : i64, nodes = 0 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} {
  return
}

// -----

// A boolean is an i1 IntegerAttr; it must not pass as a count.
// expected-error@+1 {{comm.topology 'gpus_per_node' must be a positive integer, found true}}
func.func @topology_bool() attributes {comm.topology = {gpus_per_node = true, nodes = 1 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} {
  return
}

// -----

// expected-error@+1 {{comm.topology 'nvlink_gbps' must be a positive integer, found 4.500000e+02 : f32}}
func.func @topology_float_bandwidth() attributes {comm.topology = {gpus_per_node = 4 : i64, nodes = 1 : i64, nvlink_gbps = 450.0 : f32, net_gbps = 50 : i64}} {
  return
}

// -----

// expected-error@+1 {{comm.topology describes 65536 nodes x 65536 GPUs, more than 2^31 - 1 ranks}}
func.func @topology_too_many_ranks() attributes {comm.topology = {gpus_per_node = 65536 : i64, nodes = 65536 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} {
  return
}

// -----

func.func @collective_own_topology_mismatch(%x: tensor<16xf32>) {
  // expected-error@+1 {{world_size 8 does not match comm.topology of 2 nodes x 2 GPUs per node}}
  %0 = "comm.all_reduce"(%x) {reduction = "sum", world_size = 8 : i64, comm.topology = {gpus_per_node = 2 : i64, nodes = 2 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} : (tensor<16xf32>) -> tensor<16xf32>
  return
}

// -----

module attributes {comm.topology = {gpus_per_node = 8 : i64, nodes = 1 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} {
  func.func @collective_exceeds_enclosing_topology(%x: tensor<4x8xf32>) {
    // expected-error@+1 {{world_size 16 exceeds the 8 ranks of the enclosing comm.topology}}
    %0 = "comm.all_gather"(%x) {dim = 0 : i64, world_size = 16 : i64} : (tensor<4x8xf32>) -> tensor<64x8xf32>
    return
  }
}

// -----

//===----------------------------------------------------------------------===//
// comm.rank, comm.world_size, comm.barrier
//===----------------------------------------------------------------------===//

func.func @rank_unknown_scope() {
  // expected-error@+1 {{scope must be "world", "local" or "node", found 'global'}}
  %0 = "comm.rank"() {scope = "global"} : () -> index
  return
}

// -----

func.func @world_size_unknown_scope() {
  // expected-error@+1 {{scope must be "world", "local" or "node", found 'WORLD'}}
  %0 = "comm.world_size"() {scope = "WORLD"} : () -> index
  return
}

// -----

func.func @barrier_node_scope() {
  // expected-error@+1 {{barrier scope must be "world" or "local", found 'node'}}
  "comm.barrier"() {scope = "node"} : () -> ()
  return
}

// -----

//===----------------------------------------------------------------------===//
// comm.put, comm.get: tiles and buffers
//===----------------------------------------------------------------------===//

func.func @put_tile_rank1(%t: memref<64xf32>, %buf: memref<256x64xf32>, %i: index) {
  // expected-error@+1 {{tile must be a static rank-2 memref, found memref<64xf32>}}
  "comm.put"(%t, %buf, %i, %i) {peer = 0 : i64} : (memref<64xf32>, memref<256x64xf32>, index, index) -> ()
  return
}

// -----

func.func @put_dest_dynamic(%t: memref<64x64xf32>, %buf: memref<?x64xf32>, %i: index) {
  // expected-error@+1 {{dest must be a static rank-2 memref, found memref<?x64xf32>}}
  "comm.put"(%t, %buf, %i, %i) {peer = 0 : i64} : (memref<64x64xf32>, memref<?x64xf32>, index, index) -> ()
  return
}

// -----

func.func @get_source_rank3(%t: memref<64x64xf32>, %buf: memref<2x64x64xf32>, %i: index) {
  // expected-error@+1 {{source must be a static rank-2 memref, found memref<2x64x64xf32>}}
  "comm.get"(%t, %buf, %i, %i) {peer = 0 : i64} : (memref<64x64xf32>, memref<2x64x64xf32>, index, index) -> ()
  return
}

// -----

func.func @put_element_types(%t: memref<64x64xf32>, %buf: memref<256x64xbf16>, %i: index) {
  // expected-error@+1 {{tile and dest element types differ: f32 vs bf16}}
  "comm.put"(%t, %buf, %i, %i) {peer = 0 : i64} : (memref<64x64xf32>, memref<256x64xbf16>, index, index) -> ()
  return
}

// -----

func.func @get_negative_row(%t: memref<64x64xf32>, %buf: memref<256x64xf32>, %i: index) {
  %c = arith.constant -64 : index
  // expected-error@+1 {{row offset -64 is negative}}
  "comm.get"(%t, %buf, %c, %i) {peer = 0 : i64} : (memref<64x64xf32>, memref<256x64xf32>, index, index) -> ()
  return
}

// -----

func.func @put_tile_larger_than_dest(%t: memref<64x64xf32>, %buf: memref<32x64xf32>, %i: index) {
  // expected-error@+1 {{tile of 64x64 does not fit in dest of 32x64}}
  "comm.put"(%t, %buf, %i, %i) {peer = 0 : i64} : (memref<64x64xf32>, memref<32x64xf32>, index, index) -> ()
  return
}

// -----

func.func @put_tile_past_the_end(%t: memref<64x64xf32>, %buf: memref<256x64xf32>, %i: index) {
  %c = arith.constant 224 : index
  // expected-error@+1 {{tile of 64x64 at (224, ?) does not fit in dest of 256x64}}
  "comm.put"(%t, %buf, %c, %i) {peer = 0 : i64} : (memref<64x64xf32>, memref<256x64xf32>, index, index) -> ()
  return
}

// -----

//===----------------------------------------------------------------------===//
// The peer of comm.put, comm.get, comm.signal
//===----------------------------------------------------------------------===//

func.func @put_peer_twice(%t: memref<64x64xf32>, %buf: memref<256x64xf32>, %i: index) {
  // expected-error@+1 {{peer is given twice, as an operand and as an attribute}}
  "comm.put"(%t, %buf, %i, %i, %i) {peer = 1 : i64} : (memref<64x64xf32>, memref<256x64xf32>, index, index, index) -> ()
  return
}

// -----

func.func @get_peer_missing(%t: memref<64x64xf32>, %buf: memref<256x64xf32>, %i: index) {
  // expected-error@+1 {{peer is missing: give an index operand or an integer attribute 'peer'}}
  "comm.get"(%t, %buf, %i, %i) : (memref<64x64xf32>, memref<256x64xf32>, index, index) -> ()
  return
}

// -----

func.func @signal_peer_string(%f: memref<8xi64>, %i: index) {
  // expected-error@+1 {{peer must be an integer, found "next"}}
  "comm.signal"(%f, %i) {mode = "set", value = 1 : i64, peer = "next"} : (memref<8xi64>, index) -> ()
  return
}

// -----

func.func @put_peer_negative(%t: memref<64x64xf32>, %buf: memref<256x64xf32>, %i: index) {
  // expected-error@+1 {{peer must be non-negative, found -1}}
  "comm.put"(%t, %buf, %i, %i) {peer = -1 : i64} : (memref<64x64xf32>, memref<256x64xf32>, index, index) -> ()
  return
}

// -----

func.func @put_peer_out_of_range(%t: memref<64x64xf32>, %buf: memref<256x64xf32>, %i: index) attributes {comm.topology = {gpus_per_node = 4 : i64, nodes = 2 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} {
  // expected-error@+1 {{peer 8 is out of range for world size 8}}
  "comm.put"(%t, %buf, %i, %i) {peer = 8 : i64} : (memref<64x64xf32>, memref<256x64xf32>, index, index) -> ()
  return
}

// -----

// A constant peer operand is checked like the attribute, against the
// module's topology.
module attributes {comm.topology = {gpus_per_node = 8 : i64, nodes = 2 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} {
  func.func @signal_const_peer_out_of_range(%f: memref<8xi64>, %i: index) {
    %p = arith.constant 16 : index
    // expected-error@+1 {{peer 16 is out of range for world size 16}}
    "comm.signal"(%f, %i, %p) {mode = "add", value = 1 : i64} : (memref<8xi64>, index, index) -> ()
    return
  }
}

// -----

//===----------------------------------------------------------------------===//
// comm.signal, comm.wait: flags and values
//===----------------------------------------------------------------------===//

func.func @signal_unknown_mode(%f: memref<8xi64>, %i: index) {
  // expected-error@+1 {{mode must be "set" or "add", found 'inc'}}
  "comm.signal"(%f, %i) {mode = "inc", value = 1 : i64, peer = 0 : i64} : (memref<8xi64>, index) -> ()
  return
}

// -----

func.func @wait_float_flags(%f: memref<8xf32>, %i: index) {
  // expected-error@+1 {{flags must be a static rank-1 memref of i32 or i64, found memref<8xf32>}}
  "comm.wait"(%f, %i) {value = 1 : i64} : (memref<8xf32>, index) -> ()
  return
}

// -----

func.func @signal_rank2_flags(%f: memref<2x4xi64>, %i: index) {
  // expected-error@+1 {{flags must be a static rank-1 memref of i32 or i64, found memref<2x4xi64>}}
  "comm.signal"(%f, %i) {mode = "set", value = 1 : i64, peer = 0 : i64} : (memref<2x4xi64>, index) -> ()
  return
}

// -----

func.func @wait_index_out_of_range(%f: memref<8xi64>) {
  %c8 = arith.constant 8 : index
  // expected-error@+1 {{flag index 8 is out of range for 8 flags}}
  "comm.wait"(%f, %c8) {value = 1 : i64} : (memref<8xi64>, index) -> ()
  return
}

// -----

func.func @signal_value_bool(%f: memref<8xi64>, %i: index) {
  // expected-error@+1 {{value must be an integer, found a boolean}}
  "comm.signal"(%f, %i) {mode = "set", value = true, peer = 0 : i64} : (memref<8xi64>, index) -> ()
  return
}

// -----

func.func @wait_value_negative(%f: memref<8xi64>, %i: index) {
  // expected-error@+1 {{value must be non-negative, found -1}}
  "comm.wait"(%f, %i) {value = -1 : i64} : (memref<8xi64>, index) -> ()
  return
}

// -----

func.func @signal_value_too_wide(%f: memref<8xi32>, %i: index) {
  // expected-error@+1 {{value 4294967296 does not fit in i32 flags}}
  "comm.signal"(%f, %i) {mode = "add", value = 4294967296 : i64, peer = 0 : i64} : (memref<8xi32>, index) -> ()
  return
}

// -----

//===----------------------------------------------------------------------===//
// comm.reduce
//===----------------------------------------------------------------------===//

// avg is a collective's reduction; a tile reduce would need the count.
func.func @reduce_avg(%src: memref<256x64xf32>, %acc: memref<64x64xf32>, %i: index) {
  // expected-error@+1 {{unknown reduction 'avg' (expected sum, prod, max or min)}}
  "comm.reduce"(%src, %acc, %i, %i) {reduction = "avg"} : (memref<256x64xf32>, memref<64x64xf32>, index, index) -> ()
  return
}

// -----

func.func @reduce_acc_rank1(%src: memref<256x64xf32>, %acc: memref<64xf32>, %i: index) {
  // expected-error@+1 {{acc must be a static rank-2 memref, found memref<64xf32>}}
  "comm.reduce"(%src, %acc, %i, %i) {reduction = "sum"} : (memref<256x64xf32>, memref<64xf32>, index, index) -> ()
  return
}

// -----

func.func @reduce_element_types(%src: memref<256x64xf16>, %acc: memref<64x64xf32>, %i: index) {
  // expected-error@+1 {{acc and source element types differ: f32 vs f16}}
  "comm.reduce"(%src, %acc, %i, %i) {reduction = "sum"} : (memref<256x64xf16>, memref<64x64xf32>, index, index) -> ()
  return
}

// -----

func.func @reduce_acc_wider_than_source(%src: memref<256x32xf32>, %acc: memref<64x64xf32>, %i: index) {
  // expected-error@+1 {{acc of 64x64 does not fit in source of 256x32}}
  "comm.reduce"(%src, %acc, %i, %i) {reduction = "max"} : (memref<256x32xf32>, memref<64x64xf32>, index, index) -> ()
  return
}

// -----

// Regression: the fit check added the offset to the tile size, which
// overflows for an offset near 2^63.
func.func @get_huge_col(%t: memref<64x64xf32>, %buf: memref<256x64xf32>, %i: index) {
  %c = arith.constant 9223372036854775807 : index
  // expected-error@+1 {{tile of 64x64 at (?, 9223372036854775807) does not fit in source of 256x64}}
  "comm.get"(%t, %buf, %i, %c) {peer = 0 : i64} : (memref<64x64xf32>, memref<256x64xf32>, index, index) -> ()
  return
}

// -----

// comm.fused_matmul: pattern, split, SM counts, reduction/dim per pattern,
// predicted_us and the shapes each pattern implies.
func.func @fused_unknown_pattern(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{unknown pattern 'matmul_all_to_all' (expected matmul_all_reduce, all_gather_matmul or matmul_reduce_scatter)}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_to_all", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_bad_split(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{split must be "static" or "adaptive", found 'dynamic'}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "dynamic", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_zero_comm_sms(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{comm_sms must be at least 1, found 0}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 0 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_zero_compute_sms(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{compute_sms must be at least 1, found 0}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 0 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_sms_exceed_gpu(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{comm_sms 8 + compute_sms 128 exceed the GPU's 132 SMs}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 128 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_zero_tile(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{tile_n must be at least 1, found 0}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 0 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_all_reduce_no_reduction(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{pattern 'matmul_all_reduce' needs a reduction}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_all_reduce_avg_unknown(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{unknown reduction 'mean'}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "mean", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_all_reduce_with_dim(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{pattern 'matmul_all_reduce' takes no dim}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_all_gather_with_reduction(%a: tensor<128x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{pattern 'all_gather_matmul' takes no reduction}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "all_gather_matmul", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<128x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_reduce_scatter_no_dim(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{pattern 'matmul_reduce_scatter' needs dim = 0}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_reduce_scatter", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<128x64xbf16>
  return
}

// -----

func.func @fused_reduce_scatter_dim1(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{dim must be 0 (rows), found 1}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, dim = 1 : i64, gpu_sms = 132 : i64, pattern = "matmul_reduce_scatter", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<128x64xbf16>
  return
}

// -----

func.func @fused_predicted_missing_key(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{predicted_us is missing 'sequential'}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential_s = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_predicted_negative(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{predicted_us 'fused' must be a non-negative float, found -1.000000e+00 : f64}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = -1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_predicted_extra_key(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{predicted_us must have exactly the keys sequential, fused and lower_bound}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64, comm = 1.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_world_size_topology(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) attributes {comm.topology = {gpus_per_node = 1 : i64, nodes = 1 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} {
  // expected-error@+1 {{world_size 2 exceeds the 1 ranks of the enclosing comm.topology}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_all_gather_rows(%a: tensor<128x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{init must be 512x64, found 256x64}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "all_gather_matmul", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 4 : i64} : (tensor<128x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_b_rows(%a: tensor<256x128xbf16>, %b: tensor<64x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{b must have 128 rows (a's columns), found 64}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<64x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_reduce_scatter_result(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{result must be 128x64, found 256x64}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "matmul_reduce_scatter", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

func.func @fused_element_types(%a: tensor<256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xf32>) {
  // expected-error@+1 {{init element type f32 differs from a's}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xf32>) -> tensor<256x64xf32>
  return
}

// -----

func.func @fused_rank3(%a: tensor<2x256x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<256x64xbf16>) {
  // expected-error@+1 {{a must be a static rank-2 tensor, found tensor<2x256x128xbf16>}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<2x256x128xbf16>, tensor<128x64xbf16>, tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return
}

// -----

// Issue 27: shapes whose size in bytes overflows i64 (the kernels compute
// byte offsets in 64 bits).
func.func @all_reduce_bytes_overflow_i64(%x: tensor<4611686018427387904x4xf32>) {
  // expected-error@+1 {{operand has more than 2^63 - 1 bytes (tensor<4611686018427387904x4xf32>): too large for 64-bit indexing}}
  %0 = "comm.all_reduce"(%x) {reduction = "sum", world_size = 2 : i64} : (tensor<4611686018427387904x4xf32>) -> tensor<4611686018427387904x4xf32>
  return
}

// -----

// The gathered size used to be computed as dim * world_size, an i64
// overflow.
func.func @all_gather_dim_times_world_overflows(%x: tensor<4611686018427387904xi8>) {
  // expected-error@+1 {{dim 0 of size 4611686018427387904 times world_size 4 overflows i64}}
  %0 = "comm.all_gather"(%x) {dim = 0 : i64, world_size = 4 : i64} : (tensor<4611686018427387904xi8>) -> tensor<4611686018427387904xi8>
  return
}

// -----

func.func @fused_matmul_bytes_overflow_i64(%a: tensor<4611686018427387904x128xbf16>, %b: tensor<128x64xbf16>, %i: tensor<4611686018427387904x64xbf16>) {
  // expected-error@+1 {{a has more than 2^63 - 1 bytes (tensor<4611686018427387904x128xbf16>): too large for 64-bit indexing}}
  %0 = "comm.fused_matmul"(%a, %b, %i) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.0 : f64, lower_bound = 1.0 : f64, sequential = 2.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<4611686018427387904x128xbf16>, tensor<128x64xbf16>, tensor<4611686018427387904x64xbf16>) -> tensor<4611686018427387904x64xbf16>
  return
}
