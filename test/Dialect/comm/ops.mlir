// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: %mlir_opt %s --irdl-file=%attn_src/dialects/comm/comm.irdl.mlir --allow-unregistered-dialect | FileCheck %s

// Every comm op round-trips in its valid forms, with the topology on a
// module, a function and a collective; stock mlir-opt with the same IRDL
// accepts and prints them alike (it loads comm only, so the schedules'
// tile.mma is an unregistered op there).

// CHECK-LABEL: @all_reduce_reductions
// CHECK: "comm.all_reduce"(%{{.*}}) {reduction = "sum", world_size = 8 : i64} : (tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
// CHECK: "comm.all_reduce"(%{{.*}}) {reduction = "prod", world_size = 8 : i64}
// CHECK: "comm.all_reduce"(%{{.*}}) {reduction = "max", world_size = 8 : i64}
// CHECK: "comm.all_reduce"(%{{.*}}) {reduction = "min", world_size = 8 : i64}
// CHECK: "comm.all_reduce"(%{{.*}}) {reduction = "avg", world_size = 8 : i64}
func.func @all_reduce_reductions(%x: tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32> {
  %0 = "comm.all_reduce"(%x) {reduction = "sum", world_size = 8 : i64} : (tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  %1 = "comm.all_reduce"(%0) {reduction = "prod", world_size = 8 : i64} : (tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  %2 = "comm.all_reduce"(%1) {reduction = "max", world_size = 8 : i64} : (tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  %3 = "comm.all_reduce"(%2) {reduction = "min", world_size = 8 : i64} : (tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  %4 = "comm.all_reduce"(%3) {reduction = "avg", world_size = 8 : i64} : (tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  return %4 : tensor<1x8x16x64xf32>
}

// One rank: every collective is the identity, still valid.
// CHECK-LABEL: @all_reduce_single_rank_bf16
// CHECK: "comm.all_reduce"(%{{.*}}) {reduction = "sum", world_size = 1 : i64} : (tensor<1024xbf16>) -> tensor<1024xbf16>
func.func @all_reduce_single_rank_bf16(%x: tensor<1024xbf16>) -> tensor<1024xbf16> {
  %0 = "comm.all_reduce"(%x) {reduction = "sum", world_size = 1 : i64} : (tensor<1024xbf16>) -> tensor<1024xbf16>
  return %0 : tensor<1024xbf16>
}

// CHECK-LABEL: @all_gather_dim0
// CHECK: "comm.all_gather"(%{{.*}}) {dim = 0 : i64, world_size = 4 : i64} : (tensor<2x8x16x64xf16>) -> tensor<8x8x16x64xf16>
func.func @all_gather_dim0(%x: tensor<2x8x16x64xf16>) -> tensor<8x8x16x64xf16> {
  %0 = "comm.all_gather"(%x) {dim = 0 : i64, world_size = 4 : i64} : (tensor<2x8x16x64xf16>) -> tensor<8x8x16x64xf16>
  return %0 : tensor<8x8x16x64xf16>
}

// Tensor parallelism: gather heads back from 2 ranks.
// CHECK-LABEL: @all_gather_heads
// CHECK: "comm.all_gather"(%{{.*}}) {dim = 1 : i64, world_size = 2 : i64} : (tensor<1x4x16x64xf32>) -> tensor<1x8x16x64xf32>
func.func @all_gather_heads(%x: tensor<1x4x16x64xf32>) -> tensor<1x8x16x64xf32> {
  %0 = "comm.all_gather"(%x) {dim = 1 : i64, world_size = 2 : i64} : (tensor<1x4x16x64xf32>) -> tensor<1x8x16x64xf32>
  return %0 : tensor<1x8x16x64xf32>
}

// CHECK-LABEL: @reduce_scatter
// CHECK: "comm.reduce_scatter"(%{{.*}}) {dim = 2 : i64, reduction = "sum", world_size = 4 : i64} : (tensor<1x8x16x64xf32>) -> tensor<1x8x4x64xf32>
func.func @reduce_scatter(%x: tensor<1x8x16x64xf32>) -> tensor<1x8x4x64xf32> {
  %0 = "comm.reduce_scatter"(%x) {dim = 2 : i64, reduction = "sum", world_size = 4 : i64} : (tensor<1x8x16x64xf32>) -> tensor<1x8x4x64xf32>
  return %0 : tensor<1x8x4x64xf32>
}

// CHECK-LABEL: @reduce_scatter_max_bf16
// CHECK: "comm.reduce_scatter"(%{{.*}}) {dim = 0 : i64, reduction = "max", world_size = 2 : i64} : (tensor<8x32xbf16>) -> tensor<4x32xbf16>
func.func @reduce_scatter_max_bf16(%x: tensor<8x32xbf16>) -> tensor<4x32xbf16> {
  %0 = "comm.reduce_scatter"(%x) {dim = 0 : i64, reduction = "max", world_size = 2 : i64} : (tensor<8x32xbf16>) -> tensor<4x32xbf16>
  return %0 : tensor<4x32xbf16>
}

// Sequence parallelism to head parallelism (Ulysses): split heads, gather
// the sequence.
// CHECK-LABEL: @all_to_all
// CHECK: "comm.all_to_all"(%{{.*}}) {concat_dim = 2 : i64, split_dim = 1 : i64, world_size = 4 : i64} : (tensor<1x8x16x64xf16>) -> tensor<1x2x64x64xf16>
func.func @all_to_all(%x: tensor<1x8x16x64xf16>) -> tensor<1x2x64x64xf16> {
  %0 = "comm.all_to_all"(%x) {split_dim = 1 : i64, concat_dim = 2 : i64, world_size = 4 : i64} : (tensor<1x8x16x64xf16>) -> tensor<1x2x64x64xf16>
  return %0 : tensor<1x2x64x64xf16>
}

// Splitting and concatenating along one dim keeps the shape.
// CHECK-LABEL: @all_to_all_same_dim
// CHECK: "comm.all_to_all"(%{{.*}}) {concat_dim = 0 : i64, split_dim = 0 : i64, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
func.func @all_to_all_same_dim(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "comm.all_to_all"(%x) {split_dim = 0 : i64, concat_dim = 0 : i64, world_size = 2 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

//===----------------------------------------------------------------------===//
// The topology: a comm.topology dictionary on the module, a function or a
// collective.
//===----------------------------------------------------------------------===//

// Two nodes of four GPUs: collectives over all 8 ranks and over one node's 4.
// CHECK-LABEL: module @two_nodes
// CHECK-SAME: attributes {comm.topology = {gpus_per_node = 4 : i64, net_gbps = 50 : i64, nodes = 2 : i64, nvlink_gbps = 450 : i64}}
// CHECK: "comm.all_reduce"(%{{.*}}) {reduction = "sum", world_size = 8 : i64}
// CHECK: "comm.all_gather"(%{{.*}}) {dim = 0 : i64, world_size = 4 : i64}
module @two_nodes attributes {comm.topology = {gpus_per_node = 4 : i64, nodes = 2 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} {
  func.func @all_reduce_world(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
    %0 = "comm.all_reduce"(%x) {reduction = "sum", world_size = 8 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32>
    return %0 : tensor<64x64xf32>
  }
  func.func @all_gather_in_node(%x: tensor<16x64xf32>) -> tensor<64x64xf32> {
    %0 = "comm.all_gather"(%x) {dim = 0 : i64, world_size = 4 : i64} : (tensor<16x64xf32>) -> tensor<64x64xf32>
    return %0 : tensor<64x64xf32>
  }
}

// A collective carrying its own topology: world_size = 8 nodes x 8 GPUs.
// CHECK-LABEL: @reduce_scatter_own_topology
// CHECK: "comm.reduce_scatter"(%{{.*}}) {comm.topology = {gpus_per_node = 8 : i64, net_gbps = 50 : i64, nodes = 8 : i64, nvlink_gbps = 450 : i64}, dim = 0 : i64, reduction = "sum", world_size = 64 : i64} : (tensor<128x64xbf16>) -> tensor<2x64xbf16>
func.func @reduce_scatter_own_topology(%x: tensor<128x64xbf16>) -> tensor<2x64xbf16> {
  %0 = "comm.reduce_scatter"(%x) {dim = 0 : i64, reduction = "sum", world_size = 64 : i64, comm.topology = {gpus_per_node = 8 : i64, nodes = 8 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} : (tensor<128x64xbf16>) -> tensor<2x64xbf16>
  return %0 : tensor<2x64xbf16>
}

//===----------------------------------------------------------------------===//
// Schedule level: every op and every attribute value.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: @queries
// CHECK: "comm.rank"() {scope = "world"} : () -> index
// CHECK: "comm.rank"() {scope = "local"} : () -> index
// CHECK: "comm.rank"() {scope = "node"} : () -> index
// CHECK: "comm.world_size"() {scope = "world"} : () -> index
// CHECK: "comm.world_size"() {scope = "local"} : () -> index
// CHECK: "comm.world_size"() {scope = "node"} : () -> index
// CHECK: "comm.barrier"() {scope = "world"} : () -> ()
// CHECK: "comm.barrier"() {scope = "local"} : () -> ()
func.func @queries() -> (index, index, index, index, index, index) {
  %0 = "comm.rank"() {scope = "world"} : () -> index
  %1 = "comm.rank"() {scope = "local"} : () -> index
  %2 = "comm.rank"() {scope = "node"} : () -> index
  %3 = "comm.world_size"() {scope = "world"} : () -> index
  %4 = "comm.world_size"() {scope = "local"} : () -> index
  %5 = "comm.world_size"() {scope = "node"} : () -> index
  "comm.barrier"() {scope = "world"} : () -> ()
  "comm.barrier"() {scope = "local"} : () -> ()
  return %0, %1, %2, %3, %4, %5 : index, index, index, index, index, index
}

// The peer as an attribute (in range of the function's 16 ranks) or as a
// dynamic index operand; offsets constant or dynamic.
// CHECK-LABEL: @put_get
// CHECK: "comm.put"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {peer = 15 : i64} : (memref<64x128xbf16>, memref<256x128xbf16>, index, index) -> ()
// CHECK: "comm.put"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<64x128xbf16>, memref<256x128xbf16>, index, index, index) -> ()
// CHECK: "comm.get"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {peer = 0 : i64} : (memref<64x128xbf16>, memref<256x128xbf16>, index, index) -> ()
// CHECK: "comm.get"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<64x128xbf16>, memref<256x128xbf16>, index, index, index) -> ()
func.func @put_get(%t: memref<64x128xbf16>, %buf: memref<256x128xbf16>, %row: index, %peer: index) attributes {comm.topology = {gpus_per_node = 8 : i64, nodes = 2 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} {
  %c0 = arith.constant 0 : index
  %c192 = arith.constant 192 : index
  "comm.put"(%t, %buf, %c192, %c0) {peer = 15 : i64} : (memref<64x128xbf16>, memref<256x128xbf16>, index, index) -> ()
  "comm.put"(%t, %buf, %row, %c0, %peer) : (memref<64x128xbf16>, memref<256x128xbf16>, index, index, index) -> ()
  "comm.get"(%t, %buf, %c0, %c0) {peer = 0 : i64} : (memref<64x128xbf16>, memref<256x128xbf16>, index, index) -> ()
  "comm.get"(%t, %buf, %row, %c0, %peer) : (memref<64x128xbf16>, memref<256x128xbf16>, index, index, index) -> ()
  return
}

// CHECK-LABEL: @signal_wait
// CHECK: "comm.signal"(%{{.*}}, %{{.*}}) {mode = "set", peer = 1 : i64, value = 7 : i64} : (memref<8xi64>, index) -> ()
// CHECK: "comm.signal"(%{{.*}}, %{{.*}}, %{{.*}}) {mode = "add", value = 1 : i64} : (memref<8xi64>, index, index) -> ()
// CHECK: "comm.signal"(%{{.*}}, %{{.*}}, %{{.*}}) {mode = "add", value = 0 : i64} : (memref<4xi32>, index, index) -> ()
// CHECK: "comm.wait"(%{{.*}}, %{{.*}}) {value = 7 : i64} : (memref<8xi64>, index) -> ()
// CHECK: "comm.wait"(%{{.*}}, %{{.*}}) {value = 2147483647 : i64} : (memref<4xi32>, index) -> ()
func.func @signal_wait(%f: memref<8xi64>, %g: memref<4xi32>, %i: index, %peer: index) {
  %c7 = arith.constant 7 : index
  "comm.signal"(%f, %c7) {mode = "set", value = 7 : i64, peer = 1 : i64} : (memref<8xi64>, index) -> ()
  "comm.signal"(%f, %i, %peer) {mode = "add", value = 1 : i64} : (memref<8xi64>, index, index) -> ()
  "comm.signal"(%g, %i, %peer) {mode = "add", value = 0 : i64} : (memref<4xi32>, index, index) -> ()
  "comm.wait"(%f, %c7) {value = 7 : i64} : (memref<8xi64>, index) -> ()
  "comm.wait"(%g, %i) {value = 2147483647 : i64} : (memref<4xi32>, index) -> ()
  return
}

// CHECK-LABEL: @reduce_kinds
// CHECK: "comm.reduce"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {reduction = "sum"} : (memref<512x64xf32>, memref<64x64xf32>, index, index) -> ()
// CHECK: "comm.reduce"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {reduction = "prod"}
// CHECK: "comm.reduce"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {reduction = "max"}
// CHECK: "comm.reduce"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {reduction = "min"}
func.func @reduce_kinds(%src: memref<512x64xf32>, %acc: memref<64x64xf32>, %row: index) {
  %c0 = arith.constant 0 : index
  %c448 = arith.constant 448 : index
  "comm.reduce"(%src, %acc, %c448, %c0) {reduction = "sum"} : (memref<512x64xf32>, memref<64x64xf32>, index, index) -> ()
  "comm.reduce"(%src, %acc, %row, %c0) {reduction = "prod"} : (memref<512x64xf32>, memref<64x64xf32>, index, index) -> ()
  "comm.reduce"(%src, %acc, %row, %c0) {reduction = "max"} : (memref<512x64xf32>, memref<64x64xf32>, index, index) -> ()
  "comm.reduce"(%src, %acc, %row, %c0) {reduction = "min"} : (memref<512x64xf32>, memref<64x64xf32>, index, index) -> ()
  return
}

//===----------------------------------------------------------------------===//
// Schedules: one CTA's share of the three fused patterns, for any world size
// (peers come from comm.world_size, never a constant). %step numbers the
// kernel's invocations so flags count up and are never reset.
//===----------------------------------------------------------------------===//

// GEMM + AllReduce, one-shot: push the partial C tile to every rank's slot
// for this rank, signal, then wait for every slot and sum them.
// CHECK-LABEL: @gemm_all_reduce_tile
// CHECK: "tile.mma"
// CHECK: "comm.put"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<64x64xf32>, memref<512x64xf32>, index, index, index) -> ()
// CHECK: "comm.signal"(%{{.*}}, %{{.*}}, %{{.*}}) {mode = "add", value = 1 : i64} : (memref<8xi64>, index, index) -> ()
// CHECK: "comm.wait"(%{{.*}}, %{{.*}}) {value = 1 : i64} : (memref<8xi64>, index) -> ()
// CHECK: "comm.reduce"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {reduction = "sum"} : (memref<512x64xf32>, memref<64x64xf32>, index, index) -> ()
func.func @gemm_all_reduce_tile(%a: memref<64x64xf32>, %b: memref<64x64xf32>, %c: memref<64x64xf32>, %acc: memref<64x64xf32>, %slots: memref<512x64xf32>, %flags: memref<8xi64>) attributes {comm.topology = {gpus_per_node = 8 : i64, nodes = 1 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  "tile.mma"(%a, %b, %c) {transpose_b = false, accumulate = false} : (memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>) -> ()
  %me = "comm.rank"() {scope = "world"} : () -> index
  %w = "comm.world_size"() {scope = "world"} : () -> index
  %slot = arith.muli %me, %c64 : index
  scf.for %p = %c0 to %w step %c1 {
    "comm.put"(%c, %slots, %slot, %c0, %p) : (memref<64x64xf32>, memref<512x64xf32>, index, index, index) -> ()
    "comm.signal"(%flags, %me, %p) {mode = "add", value = 1 : i64} : (memref<8xi64>, index, index) -> ()
  }
  scf.for %p = %c0 to %w step %c1 {
    %row = arith.muli %p, %c64 : index
    "comm.wait"(%flags, %p) {value = 1 : i64} : (memref<8xi64>, index) -> ()
    "comm.reduce"(%slots, %acc, %row, %c0) {reduction = "sum"} : (memref<512x64xf32>, memref<64x64xf32>, index, index) -> ()
  }
  return
}

// AllGather + GEMM: each rank pushes its A shard into every rank's gathered
// buffer, then multiplies shard p as soon as its flag arrives.
// CHECK-LABEL: @all_gather_gemm_tile
// CHECK: "comm.put"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<64x64xf32>, memref<512x64xf32>, index, index, index) -> ()
// CHECK: "comm.signal"(%{{.*}}, %{{.*}}, %{{.*}}) {mode = "set", value = 3 : i64}
// CHECK: "comm.wait"(%{{.*}}, %{{.*}}) {value = 3 : i64}
// CHECK: "comm.get"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {peer = 0 : i64}
// CHECK: "tile.mma"
func.func @all_gather_gemm_tile(%shard: memref<64x64xf32>, %gathered: memref<512x64xf32>, %flags: memref<8xi64>, %a: memref<64x64xf32>, %b: memref<64x64xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %me = "comm.rank"() {scope = "world"} : () -> index
  %w = "comm.world_size"() {scope = "world"} : () -> index
  %mine = arith.muli %me, %c64 : index
  scf.for %p = %c0 to %w step %c1 {
    "comm.put"(%shard, %gathered, %mine, %c0, %p) : (memref<64x64xf32>, memref<512x64xf32>, index, index, index) -> ()
    "comm.signal"(%flags, %me, %p) {mode = "set", value = 3 : i64} : (memref<8xi64>, index, index) -> ()
  }
  scf.for %p = %c0 to %w step %c1 {
    %row = arith.muli %p, %c64 : index
    "comm.wait"(%flags, %p) {value = 3 : i64} : (memref<8xi64>, index) -> ()
    "comm.get"(%a, %gathered, %row, %c0) {peer = 0 : i64} : (memref<64x64xf32>, memref<512x64xf32>, index, index) -> ()
    "tile.mma"(%a, %b, %c) {transpose_b = false, accumulate = true} : (memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>) -> ()
  }
  return
}

// GEMM + ReduceScatter, hierarchical: the C tile owned by rank q goes to q's
// slot for this rank; inside the NVLink domain first, then a node barrier.
// CHECK-LABEL: @gemm_reduce_scatter_tile
// CHECK: "comm.put"
// CHECK: "comm.signal"(%{{.*}}, %{{.*}}, %{{.*}}) {mode = "add", value = 1 : i64} : (memref<64xi32>, index, index) -> ()
// CHECK: "comm.barrier"() {scope = "local"}
// CHECK: "comm.wait"(%{{.*}}, %{{.*}}) {value = 1 : i64} : (memref<64xi32>, index) -> ()
// CHECK: "comm.reduce"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {reduction = "max"}
func.func @gemm_reduce_scatter_tile(%c: memref<32x128xbf16>, %slots: memref<2048x128xbf16>, %acc: memref<32x128xbf16>, %flags: memref<64xi32>, %owner: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %me = "comm.rank"() {scope = "world"} : () -> index
  %local = "comm.world_size"() {scope = "local"} : () -> index
  %slot = arith.muli %me, %c32 : index
  "comm.put"(%c, %slots, %slot, %c0, %owner) : (memref<32x128xbf16>, memref<2048x128xbf16>, index, index, index) -> ()
  "comm.signal"(%flags, %me, %owner) {mode = "add", value = 1 : i64} : (memref<64xi32>, index, index) -> ()
  "comm.barrier"() {scope = "local"} : () -> ()
  scf.for %p = %c0 to %local step %c1 {
    %row = arith.muli %p, %c32 : index
    "comm.wait"(%flags, %p) {value = 1 : i64} : (memref<64xi32>, index) -> ()
    "comm.reduce"(%slots, %acc, %row, %c0) {reduction = "max"} : (memref<2048x128xbf16>, memref<32x128xbf16>, index, index) -> ()
  }
  return
}

// comm.fused_matmul, made by --comm-schedule: one GEMM and its collective as
// a persistent kernel, one function per pattern (the attribute values here
// are illustrative; test/Transforms/comm-schedule.mlir has the model's).
// CHECK-LABEL: @fused_matmul_all_reduce
// CHECK: "comm.fused_matmul"(%{{.*}}, %{{.*}}, %{{.*}}) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 4.500000e+02 : f64, lower_bound = 3.800000e+02 : f64, sequential = 6.300000e+02 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<4096x4096xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
func.func @fused_matmul_all_reduce(%a: tensor<4096x4096xbf16>, %b: tensor<4096x8192xbf16>, %init: tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16> {
  %0 = "comm.fused_matmul"(%a, %b, %init) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 450.0 : f64, lower_bound = 380.0 : f64, sequential = 630.0 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<4096x4096xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  return %0 : tensor<4096x8192xbf16>
}

// a is one rank's shard: 8 ranks x 512 rows gathered into 4096.
// CHECK-LABEL: @fused_all_gather_matmul
// CHECK: "comm.fused_matmul"(%{{.*}}, %{{.*}}, %{{.*}}) {comm_sms = 4 : i64, compute_sms = 120 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "all_gather_matmul", {{.*}} split = "adaptive", {{.*}} world_size = 8 : i64} : (tensor<512x4096xf16>, tensor<4096x8192xf16>, tensor<4096x8192xf16>) -> tensor<4096x8192xf16>
func.func @fused_all_gather_matmul(%a: tensor<512x4096xf16>, %b: tensor<4096x8192xf16>, %init: tensor<4096x8192xf16>) -> tensor<4096x8192xf16> attributes {comm.topology = {gpus_per_node = 4 : i64, nodes = 2 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} {
  %0 = "comm.fused_matmul"(%a, %b, %init) {comm_sms = 4 : i64, compute_sms = 120 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "all_gather_matmul", predicted_us = {fused = 410.0 : f64, lower_bound = 381.0 : f64, sequential = 537.0 : f64}, split = "adaptive", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 8 : i64} : (tensor<512x4096xf16>, tensor<4096x8192xf16>, tensor<4096x8192xf16>) -> tensor<4096x8192xf16>
  return %0 : tensor<4096x8192xf16>
}

// The result keeps this rank's 4096 / 4 rows.
// CHECK-LABEL: @fused_matmul_reduce_scatter
// CHECK: "comm.fused_matmul"(%{{.*}}, %{{.*}}, %{{.*}}) {{.*}}pattern = "matmul_reduce_scatter"{{.*}}reduction = "max"{{.*}} : (tensor<4096x4096xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>) -> tensor<1024x8192xbf16>
func.func @fused_matmul_reduce_scatter(%a: tensor<4096x4096xbf16>, %b: tensor<4096x8192xbf16>, %init: tensor<4096x8192xbf16>) -> tensor<1024x8192xbf16> {
  %0 = "comm.fused_matmul"(%a, %b, %init) {comm_sms = 7 : i64, compute_sms = 125 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "matmul_reduce_scatter", predicted_us = {fused = 456.0 : f64, lower_bound = 381.0 : f64, sequential = 672.0 : f64}, reduction = "max", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 4 : i64} : (tensor<4096x4096xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>) -> tensor<1024x8192xbf16>
  return %0 : tensor<1024x8192xbf16>
}
