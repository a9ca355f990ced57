// RUN: attn-opt %s --split-input-file --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper | FileCheck %s
// RUN: attn-opt %s --split-input-file --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper="own-last=false" | FileCheck %s --check-prefix=OFF
// RUN: attn-opt %s --split-input-file --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper="own-last=true" | FileCheck %s --check-prefix=ON
// RUN: not attn-opt %s --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper="own-last=maybe" 2>&1 | FileCheck %s --check-prefix=BAD

// The order in which a rank runs the tiles of a fused reduce pattern. Tile
// ordinal t belongs to rank t % 2 (its owner: all-reduce) or shard (reduce-
// scatter); flags, slots and owners keep that meaning. With own-last the
// last 2 x 128 positions (two waves of 128 compute CTAs; 2048 tiles, so
// from position 1792 on) run the peer's tiles of ordinals 1792-2047 first
// and this rank's last: ordinal shard + 2 (896 + k) for k < 128, shard =
// (rank + 1 + block) % 2. No partial of a rank's last wave then crosses
// NVLink after the GEMM. The default (auto) does so for all-reduce, where
// it measured 0.5% (8192^3) and 2.3% (4096x8192x4096) faster on two H200s,
// not for reduce-scatter, where it measured 0.2% and 1.5% slower
// (bench/RESULTS.md). The manifest's gemm entry says which order ran.
// CHECK-LABEL: llvm.func @ar(
// CHECK-SAME: gemm = {epilogue = "staged", group_m = 16 : i64, order = "own-last", stages = 3 : i64}
// CHECK: %[[START:.*]] = arith.constant 1792 : i32
// CHECK-NEXT: %[[J:.*]] = arith.subi %[[P:.*]], %[[START]] : i32
// CHECK: %[[BLK:.*]] = arith.divui %[[J]], %{{.*}} : i32
// CHECK: %[[K:.*]] = arith.remui %[[J]], %{{.*}} : i32
// CHECK: %[[NEXT:.*]] = arith.addi %[[BLK]], %{{.*}} : i32
// CHECK: %[[R:.*]] = arith.addi %{{.*}}, %[[NEXT]] : i32
// CHECK: %[[SHARD:.*]] = arith.remui %[[R]], %{{.*}} : i32
// CHECK: %[[C896:.*]] = arith.constant 896 : i32
// CHECK-NEXT: %[[IN:.*]] = arith.addi %[[K]], %[[C896]] : i32
// CHECK: %[[T2:.*]] = arith.muli %[[IN]], %{{.*}} : i32
// CHECK-NEXT: %[[T:.*]] = arith.addi %[[SHARD]], %[[T2]] : i32
// CHECK: %[[TAIL:.*]] = arith.cmpi sge, %[[P]], %{{.*}} : i32
// CHECK-NEXT: arith.select %[[TAIL]], %[[T]], %[[P]] : i32
// OFF-LABEL: llvm.func @ar(
// OFF-SAME: order = "interleaved"
// OFF-NOT: arith.constant 1792 : i32
// OFF: llvm.return
// ON-LABEL: llvm.func @ar(
// ON-SAME: order = "own-last"
// BAD: error: option 'own-last' expects auto, true or false, found 'maybe'
func.func @ar(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}

// -----

// CHECK-LABEL: llvm.func @rs(
// CHECK-SAME: order = "interleaved"
// CHECK-NOT: arith.constant 1792 : i32
// CHECK: llvm.return
// ON-LABEL: llvm.func @rs(
// ON-SAME: order = "own-last"
// ON: arith.constant 1792 : i32
func.func @rs(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<4096x8192xbf16> {
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 2 : i64} : (tensor<8192x8192xbf16>) -> tensor<4096x8192xbf16>
  return %r : tensor<4096x8192xbf16>
}

// -----

// All-gather has no owner: its order is unchanged and not recorded.
// CHECK-LABEL: llvm.func @ag(
// CHECK-SAME: gemm = {epilogue = "staged", group_m = 16 : i64, stages = 3 : i64}
// ON-LABEL: llvm.func @ag(
// ON-NOT: order =
// ON: llvm.return
func.func @ag(%a: tensor<4096x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 2 : i64} : (tensor<4096x8192xbf16>) -> tensor<8192x8192xbf16>
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %c : tensor<8192x8192xbf16>
}
