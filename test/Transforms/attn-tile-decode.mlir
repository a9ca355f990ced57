// RUN: attn-opt %s --attn-tile | FileCheck %s

// attn-tile makes attn.fused_decode a tile kernel of its own: one CTA per
// (K/V head, sequence), the length read from cache_seqlens and clamped to
// the cache, each key's page read from the block table (an out-of-range
// page reads page 0), the online softmax over the keys the row sees.

// CHECK-LABEL: func.func @paged
// CHECK-SAME: %{{.*}}: memref<2x8x4x64xf16>, %{{.*}}: memref<40x2x16x64xf16>, %{{.*}}: memref<40x2x16x64xf16>, %{{.*}}: memref<2xi32>, %{{.*}}: memref<2x20xi32>, %{{.*}}: memref<2x8x4x64xf16>
// CHECK-SAME: tile.arg_names = ["q", "k_cache", "v_cache", "cache_seqlens", "block_table", "out"]
// CHECK-SAME: tile.decode = {{{.*}}causal = true{{.*}}max_pages = 20 : i64, max_seq = 320 : i64{{.*}}num_pages = 40 : i64, page_size = 16 : i64, paged = true
// CHECK-SAME: tile.grid = array<i64: 2, 2, 1>, tile.kernel, tile.threads = 1
// CHECK: %[[G:.*]] = "tile.program_id"() {dim = 0 : i64}
// CHECK: %[[B:.*]] = "tile.program_id"() {dim = 1 : i64}
// CHECK: %[[LEN:.*]] = memref.load %{{.*}}[%[[B]]] : memref<2xi32>
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: scf.for
// CHECK: math.cos
// CHECK: scf.for {{.*}} iter_args
// CHECK: arith.divui
// CHECK: memref.load %{{.*}}[%[[B]], %{{.*}}] : memref<2x20xi32>
// CHECK: arith.select
// CHECK: arith.remui
// CHECK: math.exp
// CHECK-NOT: attn.fused_decode
func.func @paged(%q: tensor<2x8x4x64xf16>, %k: tensor<40x2x16x64xf16>,
                 %v: tensor<40x2x16x64xf16>, %len: tensor<2xi32>,
                 %table: tensor<2x20xi32>) -> tensor<2x8x4x64xf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len, %table) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.125 : f64, causal = true, cache_layout = "paged", page_size = 16 : i64, rope = {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<2x8x4x64xf16>, tensor<40x2x16x64xf16>, tensor<40x2x16x64xf16>, tensor<2xi32>, tensor<2x20xi32>) -> tensor<2x8x4x64xf16>
  return %o : tensor<2x8x4x64xf16>
}
