// RUN: attn-opt %s --attn-tile | FileCheck %s

// attn-tile of an attn.cache_append feeding attn.fused_decode (issue 30):
// one decode kernel taking k_new and v_new before out, whose CTA (K/V
// head, sequence) first writes its new rows into the caches it was given,
// in place: row i at position len - N + i (len clamped to the cache),
// skipped when that position is negative or its page is outside [0, P);
// k_new rotated there with the append's RoPE; then the decode reads them.

// CHECK-LABEL: func.func @paged_spec
// CHECK-SAME: %[[KC:[^:]*]]: memref<58x2x16x64xf16>, %[[VC:[^:]*]]: memref<58x2x16x64xf16>, %{{.*}}: memref<3xi32>, %[[T:[^:]*]]: memref<3x19xi32>, %[[KN:[^:]*]]: memref<3x2x4x64xf16>, %[[VN:[^:]*]]: memref<3x2x4x64xf16>, %{{.*}}: memref<3x8x4x64xf16>
// CHECK-SAME: tile.arg_names = ["q", "k_cache", "v_cache", "cache_seqlens", "block_table", "k_new", "v_new", "out"]
// CHECK-SAME: append_rope_interleaved = true, append_rope_theta = 1.000000e+04 : f64, append_rotary_dim = 32 : i64, append_rows = 4 : i64
// The append, before the query rows: the page of the new row's position,
// the write guarded by its page's range and the position's sign.
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %c4 step
// CHECK: memref.load %[[T]]
// CHECK: %[[OK:.*]] = arith.andi
// CHECK: arith.cmpi sge
// CHECK: scf.if
// CHECK: memref.load %[[KN]][%{{.*}}, %{{.*}}, %[[I]], %{{.*}}]
// CHECK: math.cos
// CHECK: memref.store %{{.*}}, %[[KC]][
// CHECK: memref.load %[[VN]]
// CHECK: memref.store %{{.*}}, %[[VC]][
// Then the query rows read the caches.
// CHECK: memref.load %[[KC]][
// CHECK: memref.load %[[VC]][
// CHECK-NOT: memref.store %{{.*}}, %[[KC]][
// CHECK: return

// A contiguous cache without RoPE: every position is a row of the
// sequence, the value copied as is.
// CHECK-LABEL: func.func @plain
// CHECK-SAME: append_rope_interleaved = false, append_rope_theta = 0.000000e+00 : f64, append_rotary_dim = 0 : i64, append_rows = 2 : i64
// CHECK: scf.if
// CHECK-NOT: math.cos
// CHECK: memref.store
// CHECK: return

func.func @paged_spec(%q: tensor<3x8x4x64xf16>, %k: tensor<58x2x16x64xf16>, %v: tensor<58x2x16x64xf16>, %len: tensor<3xi32>, %table: tensor<3x19xi32>, %kn: tensor<3x2x4x64xf16>, %vn: tensor<3x2x4x64xf16>) -> (tensor<3x8x4x64xf16>, tensor<58x2x16x64xf16>, tensor<58x2x16x64xf16>) {
  %k2, %v2 = "attn.cache_append"(%k, %v, %len, %table, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, cache_layout = "paged", page_size = 16 : i64, rope = {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved"}} : (tensor<58x2x16x64xf16>, tensor<58x2x16x64xf16>, tensor<3xi32>, tensor<3x19xi32>, tensor<3x2x4x64xf16>, tensor<3x2x4x64xf16>) -> (tensor<58x2x16x64xf16>, tensor<58x2x16x64xf16>)
  %o = "attn.fused_decode"(%q, %k2, %v2, %len, %table) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.125 : f64, causal = true, cache_layout = "paged", page_size = 16 : i64, rope = {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved"}} : (tensor<3x8x4x64xf16>, tensor<58x2x16x64xf16>, tensor<58x2x16x64xf16>, tensor<3xi32>, tensor<3x19xi32>) -> tensor<3x8x4x64xf16>
  return %o, %k2, %v2 : tensor<3x8x4x64xf16>, tensor<58x2x16x64xf16>, tensor<58x2x16x64xf16>
}

func.func @plain(%q: tensor<2x4x1x32xf32>, %k: tensor<2x2x40x32xf32>, %v: tensor<2x2x40x32xf32>, %len: tensor<2xi32>, %kn: tensor<2x2x2x32xf32>, %vn: tensor<2x2x2x32xf32>) -> (tensor<2x4x1x32xf32>, tensor<2x2x40x32xf32>, tensor<2x2x40x32xf32>) {
  %k2, %v2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous"} : (tensor<2x2x40x32xf32>, tensor<2x2x40x32xf32>, tensor<2xi32>, tensor<2x2x2x32xf32>, tensor<2x2x2x32xf32>) -> (tensor<2x2x40x32xf32>, tensor<2x2x40x32xf32>)
  %o = "attn.fused_decode"(%q, %k2, %v2, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.177 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x4x1x32xf32>, tensor<2x2x40x32xf32>, tensor<2x2x40x32xf32>, tensor<2xi32>) -> tensor<2x4x1x32xf32>
  return %o, %k2, %v2 : tensor<2x4x1x32xf32>, tensor<2x2x40x32xf32>, tensor<2x2x40x32xf32>
}
