// RUN: attn-opt %s | attn-opt | FileCheck %s

// attn.fused_decode (issue 30): a few query rows per sequence over a KV
// cache, contiguous with a length per sequence or paged through a block
// table. Both forms verify and round-trip.

// CHECK-LABEL: @contiguous
// CHECK: "attn.fused_decode"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {{.*}}cache_layout = "contiguous"
func.func @contiguous(%q: tensor<2x8x1x64xbf16>, %k: tensor<2x2x256x64xbf16>,
                      %v: tensor<2x2x256x64xbf16>, %len: tensor<2xi32>) -> tensor<2x8x1x64xbf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<2x8x1x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2x2x256x64xbf16>, tensor<2xi32>) -> tensor<2x8x1x64xbf16>
  return %o : tensor<2x8x1x64xbf16>
}

// CHECK-LABEL: @paged
// CHECK: "attn.fused_decode"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {{.*}}cache_layout = "paged"{{.*}}page_size = 16
func.func @paged(%q: tensor<2x8x4x128xf16>, %k: tensor<40x2x16x128xf16>,
                 %v: tensor<40x2x16x128xf16>, %len: tensor<2xi32>,
                 %table: tensor<2x20xi32>) -> tensor<2x8x4x128xf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len, %table) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.088 : f64, causal = true, cache_layout = "paged", page_size = 16 : i64, softcap = 30.0 : f64, alibi = 8.0 : f64, window = array<i64: 128, -1>, mods = ["scale", "softcap", "alibi"], rope = {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<2x8x4x128xf16>, tensor<40x2x16x128xf16>, tensor<40x2x16x128xf16>, tensor<2xi32>, tensor<2x20xi32>) -> tensor<2x8x4x128xf16>
  return %o : tensor<2x8x4x128xf16>
}
