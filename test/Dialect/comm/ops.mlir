// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: %mlir_opt %s --irdl-file=%attn_src/dialects/comm/comm.irdl.mlir | FileCheck %s

// All four collectives round-trip in their valid forms; stock mlir-opt with
// the same IRDL accepts and prints them alike.

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
