// RUN: attn-opt %s | attn-opt | FileCheck %s

// attn.cache_append (issue 30): the new tokens' keys and values written
// into a KV cache, contiguous or paged, k_new rotated first with rope; the
// results are the caches (their types: IRDL unifies them). Both forms
// verify and round-trip, alone and feeding attn.fused_decode.

// CHECK-LABEL: @contiguous
// CHECK: "attn.cache_append"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {{.*}}cache_layout = "contiguous"
func.func @contiguous(%k: tensor<2x2x256x64xbf16>, %v: tensor<2x2x256x64xbf16>, %len: tensor<2xi32>,
                      %kn: tensor<2x2x1x64xbf16>, %vn: tensor<2x2x1x64xbf16>)
    -> (tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>) {
  %k2, %v2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous"} : (tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2xi32>, tensor<2x2x1x64xbf16>, tensor<2x2x1x64xbf16>) -> (tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>)
  return %k2, %v2 : tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>
}

// CHECK-LABEL: @paged_then_decode
// CHECK: %[[C:.*]]:2 = "attn.cache_append"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {{.*}}cache_layout = "paged"{{.*}}page_size = 16{{.*}}rope =
// CHECK: "attn.fused_decode"(%{{.*}}, %[[C]]#0, %[[C]]#1,
func.func @paged_then_decode(%q: tensor<2x8x4x128xf16>, %k: tensor<40x2x16x128xf16>,
                             %v: tensor<40x2x16x128xf16>, %len: tensor<2xi32>,
                             %table: tensor<2x20xi32>, %kn: tensor<2x2x4x128xf16>,
                             %vn: tensor<2x2x4x128xf16>)
    -> (tensor<2x8x4x128xf16>, tensor<40x2x16x128xf16>, tensor<40x2x16x128xf16>) {
  %k2, %v2 = "attn.cache_append"(%k, %v, %len, %table, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, cache_layout = "paged", page_size = 16 : i64, rope = {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<40x2x16x128xf16>, tensor<40x2x16x128xf16>, tensor<2xi32>, tensor<2x20xi32>, tensor<2x2x4x128xf16>, tensor<2x2x4x128xf16>) -> (tensor<40x2x16x128xf16>, tensor<40x2x16x128xf16>)
  %o = "attn.fused_decode"(%q, %k2, %v2, %len, %table) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.088 : f64, causal = true, cache_layout = "paged", page_size = 16 : i64, rope = {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<2x8x4x128xf16>, tensor<40x2x16x128xf16>, tensor<40x2x16x128xf16>, tensor<2xi32>, tensor<2x20xi32>) -> tensor<2x8x4x128xf16>
  return %o, %k2, %v2 : tensor<2x8x4x128xf16>, tensor<40x2x16x128xf16>, tensor<40x2x16x128xf16>
}
