// RUN: attn-opt %s --attn-tile="block-m=16 block-n=64 threads=256" | FileCheck %s
// RUN: attn-opt %s --pass-pipeline="builtin.module(attn-tile{block-m=16 block-n=64 threads=256})" | FileCheck %s
// RUN: attn-opt %s --tile=block-m=16,block-n=64,threads=256 | FileCheck %s

// Tile sizes and threads are pass options.
// CHECK-LABEL: @options
// CHECK-SAME: tile.grid = array<i64: 7, 2, 1>
// CHECK-SAME: tile.threads = 256 : i64
// CHECK: "tile.alloc"() : () -> memref<16x32xf32>
// CHECK: "tile.alloc"() : () -> memref<64x32xf32>
// CHECK: "tile.alloc"() : () -> memref<16x64xf32>
func.func @options(%q: tensor<1x2x100x32xf32>, %k: tensor<1x2x100x32xf32>, %v: tensor<1x2x100x32xf32>) -> tensor<1x2x100x32xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 32 : i64, layout = "rotate_half"}} : (tensor<1x2x100x32xf32>, tensor<1x2x100x32xf32>, tensor<1x2x100x32xf32>) -> tensor<1x2x100x32xf32>
  return %o : tensor<1x2x100x32xf32>
}

// kernel=mma: the mma.sync kernel's tiles, 128 query rows (eight warps of
// 16 rows) and 64 keys, 256 threads; block-m=64 gives 128 threads.
// RUN: attn-opt %s --split-input-file --attn-tile="kernel=mma" | FileCheck %s --check-prefix=MMA
// RUN: attn-opt %s --split-input-file --attn-tile="kernel=mma block-m=64" | FileCheck %s --check-prefix=MMA64
// MMA-LABEL: @options
// MMA-SAME: tile.grid = array<i64: 1, 2, 1>
// MMA-SAME: tile.threads = 256 : i64
// MMA: "tile.alloc"() : () -> memref<128x32xf32>
// MMA: "tile.alloc"() : () -> memref<64x32xf32>
// MMA64: tile.grid = array<i64: 2, 2, 1>
// MMA64-SAME: tile.threads = 128 : i64
