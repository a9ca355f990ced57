// RUN: attn-opt %s --split-input-file --attn-tile | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-tile="block-m=16 block-n=32 block-k=8 threads=64" | FileCheck %s --check-prefix=OPT
// RUN: attn-opt %s --split-input-file --attn-tile="kernel=hopper" | FileCheck %s --check-prefix=HOPPER
// RUN: attn-opt %s --split-input-file --attn-tile="kernel=hopper block-n=256" | FileCheck %s --check-prefix=WIDE

// A linalg.matmul initialised to zero becomes a GEMM tile kernel in
// destination-passing style: (a, b, c), c only written. Tails: 130 x 70 x 50
// is no multiple of the 64 x 64 tiles and 32-wide K steps, so the grid
// rounds up (3 x 2) and the K loop runs ceil(50 / 32) = 2 steps; the loads
// and the store mask the edges.
// CHECK-LABEL: func.func @zero_init(
// CHECK-SAME: %[[A:.*]]: memref<130x50xbf16>, %[[B:.*]]: memref<50x70xbf16>, %[[C:.*]]: memref<130x70xbf16>)
// CHECK-SAME: tile.arg_names = ["a", "b", "c"]
// CHECK-SAME: tile.grid = array<i64: 3, 2, 1>
// CHECK-SAME: tile.kernel
// CHECK-SAME: tile.matmul = {accumulate = false, block_k = 32 : i64, block_m = 64 : i64, block_n = 64 : i64, k = 50 : i64, m = 130 : i64, n = 70 : i64}
// CHECK-SAME: tile.threads = 128 : i64
// CHECK: %[[PM:.*]] = "tile.program_id"() {dim = 0 : i64}
// CHECK: %[[PN:.*]] = "tile.program_id"() {dim = 1 : i64}
// CHECK-DAG: %[[BM:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[BK:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[NK:.*]] = arith.constant 2 : index
// CHECK: %[[ROW:.*]] = arith.muli %[[PM]], %[[BM]]
// CHECK: %[[COL:.*]] = arith.muli %[[PN]]
// CHECK: %[[AT:.*]] = "tile.alloc"() : () -> memref<64x32xf32>
// CHECK: %[[BT:.*]] = "tile.alloc"() : () -> memref<32x64xf32>
// CHECK: %[[CT:.*]] = "tile.alloc"() : () -> memref<64x64xf32>
// CHECK: "tile.fill"(%[[CT]]) {value = 0.000000e+00 : f32}
// CHECK: scf.for %[[KB:.*]] = %{{.*}} to %[[NK]]
// CHECK: %[[KK:.*]] = arith.muli %[[KB]], %[[BK]]
// CHECK: "tile.load"(%[[A]], %[[AT]], %[[ROW]], %[[KK]]) : (memref<130x50xbf16>, memref<64x32xf32>, index, index) -> ()
// CHECK: "tile.load"(%[[B]], %[[BT]], %[[KK]], %[[COL]]) : (memref<50x70xbf16>, memref<32x64xf32>, index, index) -> ()
// CHECK: "tile.mma"(%[[AT]], %[[BT]], %[[CT]]) {accumulate = true, transpose_b = false}
// CHECK: }
// CHECK: "tile.store"(%[[CT]], %[[C]], %[[ROW]], %[[COL]]) : (memref<64x64xf32>, memref<130x70xbf16>, index, index) -> ()
// CHECK-NOT: linalg.
// OPT-LABEL: func.func @zero_init(
// OPT-SAME: tile.grid = array<i64: 9, 3, 1>
// OPT-SAME: tile.matmul = {accumulate = false, block_k = 8 : i64, block_m = 16 : i64, block_n = 32 : i64, k = 50 : i64, m = 130 : i64, n = 70 : i64}
// OPT-SAME: tile.threads = 64 : i64
// OPT: "tile.alloc"() : () -> memref<16x8xf32>
// OPT: "tile.alloc"() : () -> memref<8x32xf32>
// OPT: "tile.alloc"() : () -> memref<16x32xf32>
// With kernel=hopper, 128-row tiles, K steps of 64 and 384 threads; four
// 128 x 64 tiles cover this output on four SMs sooner than two 128 x 256
// tiles on two (the width rule is at the end of the file). An explicit
// block-n wins.
// HOPPER-LABEL: func.func @zero_init(
// HOPPER-SAME: tile.grid = array<i64: 2, 2, 1>
// HOPPER-SAME: tile.matmul = {accumulate = false, block_k = 64 : i64, block_m = 128 : i64, block_n = 64 : i64, k = 50 : i64, m = 130 : i64, n = 70 : i64}
// HOPPER-SAME: tile.threads = 384 : i64
// HOPPER: "tile.alloc"() : () -> memref<128x64xf32>
// HOPPER: "tile.alloc"() : () -> memref<64x64xf32>
// HOPPER: "tile.alloc"() : () -> memref<128x64xf32>
// WIDE-LABEL: func.func @zero_init(
// WIDE-SAME: tile.grid = array<i64: 2, 1, 1>
// WIDE-SAME: block_n = 256 : i64
func.func @zero_init(%a: tensor<130x50xbf16>, %b: tensor<50x70xbf16>) -> tensor<130x70xbf16> {
  %zero = arith.constant 0.0 : bf16
  %empty = tensor.empty() : tensor<130x70xbf16>
  %init = linalg.fill ins(%zero : bf16) outs(%empty : tensor<130x70xbf16>) -> tensor<130x70xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<130x50xbf16>, tensor<50x70xbf16>) outs(%init : tensor<130x70xbf16>) -> tensor<130x70xbf16>
  return %c : tensor<130x70xbf16>
}

// -----

// The init as the function's third argument: accumulate = true, and c is
// read (tile.load instead of tile.fill) before it is overwritten. f32 keeps
// the plain tiles even with kernel=hopper: the Hopper GEMM takes 16-bit
// elements only.
// CHECK-LABEL: func.func @accumulate(
// CHECK-SAME: %[[A:.*]]: memref<64x32xf32>, %[[B:.*]]: memref<32x48xf32>, %[[C:.*]]: memref<64x48xf32>)
// CHECK-SAME: tile.matmul = {accumulate = true, block_k = 32 : i64, block_m = 64 : i64, block_n = 64 : i64, k = 32 : i64, m = 64 : i64, n = 48 : i64}
// CHECK: %[[CT:.*]] = "tile.alloc"() : () -> memref<64x64xf32>
// CHECK-NOT: "tile.fill"
// CHECK: "tile.load"(%[[C]], %[[CT]], %[[ROW:.*]], %[[COL:.*]]) : (memref<64x48xf32>, memref<64x64xf32>, index, index) -> ()
// CHECK: scf.for
// CHECK: "tile.mma"
// CHECK: "tile.store"(%[[CT]], %[[C]], %[[ROW]], %[[COL]])
// HOPPER-LABEL: func.func @accumulate(
// HOPPER-SAME: tile.matmul = {accumulate = true, block_k = 32 : i64, block_m = 64 : i64, block_n = 64 : i64, k = 32 : i64, m = 64 : i64, n = 48 : i64}
// HOPPER-SAME: tile.threads = 128 : i64
func.func @accumulate(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>, %c0: tensor<64x48xf32>) -> tensor<64x48xf32> {
  %c = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x48xf32>) outs(%c0 : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %c : tensor<64x48xf32>
}

// -----

// A tensor.empty init is zeros. Small matrices get small tiles: each block
// is the smallest power of two covering its dimension (at most 64, 64, 32).
// CHECK-LABEL: func.func @small_f16(
// CHECK-SAME: tile.grid = array<i64: 1, 1, 1>
// CHECK-SAME: tile.matmul = {accumulate = false, block_k = 8 : i64, block_m = 8 : i64, block_n = 4 : i64, k = 7 : i64, m = 5 : i64, n = 3 : i64}
// CHECK: "tile.fill"
// HOPPER-LABEL: func.func @small_f16(
// HOPPER-SAME: tile.matmul = {accumulate = false, block_k = 64 : i64, block_m = 128 : i64, block_n = 64 : i64, k = 7 : i64, m = 5 : i64, n = 3 : i64}
func.func @small_f16(%a: tensor<5x7xf16>, %b: tensor<7x3xf16>) -> tensor<5x3xf16> {
  %empty = tensor.empty() : tensor<5x3xf16>
  %c = linalg.matmul ins(%a, %b : tensor<5x7xf16>, tensor<7x3xf16>) outs(%empty : tensor<5x3xf16>) -> tensor<5x3xf16>
  return %c : tensor<5x3xf16>
}

// -----

// The default indexing maps, written out, are the plain matmul; functions
// without a matmul or attn op are left alone.
// CHECK-LABEL: func.func @explicit_maps(
// CHECK-SAME: tile.kernel
// CHECK-LABEL: func.func @not_a_matmul(
// CHECK-NOT: tile.kernel
// CHECK: arith.addf
func.func @explicit_maps(%a: tensor<8x4xf32>, %b: tensor<4x8xf32>, %c0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %c = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<8x4xf32>, tensor<4x8xf32>) outs(%c0 : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %c : tensor<8x8xf32>
}

func.func @not_a_matmul(%x: f32) -> f32 {
  %y = arith.addf %x, %x : f32
  return %y : f32
}

// -----

// The Hopper GEMM's tile width (attn_tile_hopper_gemm_shape): waves on
// 132 SMs times the time of a K step, which a 128 x 64 or 128 x 128 tile
// takes 0.39 or 0.54 of a 128 x 256 tile's. 4096 x 4096 has 512 wide
// tiles (4 waves): 256. 512 x 4096 has 64 wide tiles, 128 of 128 columns (one
// wave, 0.54) and 256 of 64 (two waves, 0.78): 128. 1024 x 1024 has 32
// wide tiles and 128 narrow ones, still one wave: 64. Measured on an H200
// (bench/RESULTS.md): the rule picked the fastest of the three each time.
// HOPPER-LABEL: func.func @square(
// HOPPER-SAME: block_n = 256 : i64
// HOPPER-LABEL: func.func @short(
// HOPPER-SAME: block_n = 128 : i64
// HOPPER-LABEL: func.func @small(
// HOPPER-SAME: block_n = 64 : i64
// WIDE-LABEL: func.func @small(
// WIDE-SAME: block_n = 256 : i64
func.func @square(%a: tensor<4096x64xbf16>, %b: tensor<64x4096xbf16>) -> tensor<4096x4096xbf16> {
  %e = tensor.empty() : tensor<4096x4096xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<4096x64xbf16>, tensor<64x4096xbf16>) outs(%e : tensor<4096x4096xbf16>) -> tensor<4096x4096xbf16>
  return %c : tensor<4096x4096xbf16>
}
func.func @short(%a: tensor<512x64xbf16>, %b: tensor<64x4096xbf16>) -> tensor<512x4096xbf16> {
  %e = tensor.empty() : tensor<512x4096xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<512x64xbf16>, tensor<64x4096xbf16>) outs(%e : tensor<512x4096xbf16>) -> tensor<512x4096xbf16>
  return %c : tensor<512x4096xbf16>
}
func.func @small(%a: tensor<1024x64xbf16>, %b: tensor<64x1024xbf16>) -> tensor<1024x1024xbf16> {
  %e = tensor.empty() : tensor<1024x1024xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<1024x64xbf16>, tensor<64x1024xbf16>) outs(%e : tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16>
  return %c : tensor<1024x1024xbf16>
}

// -----

// Where even 128 x 64 tiles leave SMs idle and K is long, the rule splits K
// too (waves x K steps per unit x the step's cost, plus 6 wide steps for
// the second kernel and the f32 partials' traffic) and records the slices:
// 512 x 512 x 8192 is 32 tiles of 128 x 64, run as 4 slices of 32 K steps.
// An accumulating GEMM is not split.
// HOPPER-LABEL: func.func @split(
// HOPPER-SAME: tile.matmul = {accumulate = false, block_k = 64 : i64, block_m = 128 : i64, block_n = 64 : i64, k = 8192 : i64, m = 512 : i64, n = 512 : i64, split_k = 4 : i64}
// HOPPER-LABEL: func.func @split_acc(
// HOPPER-SAME: tile.matmul = {accumulate = true, block_k = 64 : i64, block_m = 128 : i64, block_n = 64 : i64, k = 8192 : i64, m = 512 : i64, n = 512 : i64}
// WIDE-LABEL: func.func @split(
// WIDE-SAME: block_n = 256 : i64
// WIDE-SAME: split_k = 8 : i64
func.func @split(%a: tensor<512x8192xbf16>, %b: tensor<8192x512xbf16>) -> tensor<512x512xbf16> {
  %e = tensor.empty() : tensor<512x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<512x8192xbf16>, tensor<8192x512xbf16>) outs(%e : tensor<512x512xbf16>) -> tensor<512x512xbf16>
  return %c : tensor<512x512xbf16>
}
func.func @split_acc(%a: tensor<512x8192xbf16>, %b: tensor<8192x512xbf16>, %c0: tensor<512x512xbf16>) -> tensor<512x512xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<512x8192xbf16>, tensor<8192x512xbf16>) outs(%c0 : tensor<512x512xbf16>) -> tensor<512x512xbf16>
  return %c : tensor<512x512xbf16>
}
