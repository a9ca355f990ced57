// RUN: attn-opt %s --split-input-file --attn-tile | FileCheck %s

// The kernel: a grid of (query blocks, batch * heads), Q loaded and rotated
// once, an online-softmax loop over key blocks that stops at the diagonal.
// CHECK-LABEL: @rope_causal
// CHECK-SAME: (%[[Q:.*]]: memref<2x4x100x64xf32>, %[[K:.*]]: memref<2x4x100x64xf32>, %[[V:.*]]: memref<2x4x100x64xf32>, %[[O:.*]]: memref<2x4x100x64xf32>)
// CHECK-SAME: tile.arg_names = ["q", "k", "v", "out"]
// CHECK-SAME: tile.grid = array<i64: 4, 8, 1>, tile.kernel, tile.threads = 128 : i64
// CHECK: %[[QB:.*]] = "tile.program_id"() {dim = 0 : i64}
// CHECK: %[[BH:.*]] = "tile.program_id"() {dim = 1 : i64}
// CHECK: %[[QT:.*]] = "tile.alloc"() : () -> memref<32x64xf32>
// CHECK: %[[KT:.*]] = "tile.alloc"() : () -> memref<32x64xf32>
// CHECK: "tile.load"(%[[Q]], %[[QT]],
// CHECK-NEXT: "tile.rope"(%[[QT]], %{{.*}}) {layout = "rotate_half", rotary_dim = 64 : i64
// CHECK: arith.ceildivui
// CHECK: arith.minui
// CHECK: scf.for
// CHECK: "tile.load"(%[[K]], %[[KT]],
// CHECK-NEXT: "tile.rope"(%[[KT]],
// CHECK-NEXT: "tile.load"(%[[V]],
// CHECK-NEXT: "tile.mma"(%[[QT]], %[[KT]], %{{.*}}) {accumulate = false, transpose_b = true}
// CHECK-NEXT: "tile.mask"({{.*}}) {causal = true, kv_len = 100 : i64}
// CHECK-NEXT: "tile.softmax_update"({{.*}}) {scale = 1.250000e-01 : f64}
// CHECK-NEXT: "tile.mma"({{.*}}) {accumulate = true, transpose_b = false}
// CHECK: "tile.normalize"
// CHECK-NEXT: "tile.store"({{.*}}, %[[O]],
// CHECK-NOT: "attn.
func.func @rope_causal(%q: tensor<2x4x100x64xf32>, %k: tensor<2x4x100x64xf32>, %v: tensor<2x4x100x64xf32>) -> tensor<2x4x100x64xf32> {
  %o = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<2x4x100x64xf32>, tensor<2x4x100x64xf32>, tensor<2x4x100x64xf32>) -> tensor<2x4x100x64xf32>
  return %o : tensor<2x4x100x64xf32>
}

// -----

// Without a mask every key block is visited; without RoPE nothing rotates.
// CHECK-LABEL: @plain
// CHECK-NOT: tile.rope
// CHECK-NOT: arith.ceildivui
// CHECK: "tile.mask"({{.*}}) {causal = false
func.func @plain(%q: tensor<1x2x64x64xf32>, %k: tensor<1x2x64x64xf32>, %v: tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32> {
  %o = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = false} : (tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32>
  return %o : tensor<1x2x64x64xf32>
}

// -----

// GQA: key/value head = head / (heads / kv heads).
// CHECK-LABEL: @gqa
// CHECK-SAME: memref<1x8x64x64xbf16>, %{{.*}}: memref<1x2x64x64xbf16>
// CHECK: %[[G:.*]] = arith.constant 4 : index
// CHECK: arith.divui %{{.*}}, %[[G]]
func.func @gqa(%q: tensor<1x8x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x8x64x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<1x8x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>) -> tensor<1x8x64x64xbf16>
  return %o : tensor<1x8x64x64xbf16>
}

// -----

// Head dim 128 picks 16-row tiles so they fit 48 KiB of shared memory.
// CHECK-LABEL: @head_dim_128
// CHECK: tile.grid = array<i64: 4, 1, 1>
// CHECK: "tile.alloc"() : () -> memref<16x128xf32>
func.func @head_dim_128(%q: tensor<1x1x64x128xf32>, %k: tensor<1x1x64x128xf32>, %v: tensor<1x1x64x128xf32>) -> tensor<1x1x64x128xf32> {
  %o = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<1x1x64x128xf32>, tensor<1x1x64x128xf32>, tensor<1x1x64x128xf32>) -> tensor<1x1x64x128xf32>
  return %o : tensor<1x1x64x128xf32>
}

// -----

// Functions without attention are left alone.
// CHECK-LABEL: @untouched
// CHECK: arith.addf
func.func @untouched(%a: f32) -> f32 {
  %b = arith.addf %a, %a : f32
  return %b : f32
}
