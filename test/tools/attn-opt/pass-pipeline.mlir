// RUN: attn-opt %s --pass-pipeline='builtin.module(attn-fuse,attn-tile{block-m=32 block-n=32},canonicalize)' \
// RUN:   | FileCheck %s --check-prefix=FULL
// RUN: attn-opt %s --pass-pipeline='attn-fuse,cse' | FileCheck %s --check-prefix=BARE
// RUN: attn-opt %s --pass-pipeline=' builtin.module( attn-fuse , attn-tile { block-m=32 block-n=32 } ) ' \
// RUN:   | FileCheck %s --check-prefix=SPACES

// --pass-pipeline mixes attn passes (with options) and upstream ones, in
// the `builtin.module(...)` form or as a bare list, spaces allowed.

// FULL-LABEL: func.func @rope_causal
// FULL-SAME:    tile.grid = array<i64: 4, 2, 1>
// canonicalize hoisted the constants to the top of the kernel.
// FULL-NEXT:    arith.constant
// FULL:         "tile.alloc"() : () -> memref<32x16xf32>
// FULL-NOT:     "attn.

// BARE-LABEL: func.func @rope_causal
// BARE-NEXT:    "attn.fused"(%{{.*}}) ({
// BARE-NEXT:    }, {
// BARE-NEXT:    }) {causal = true, operandSegmentSizes = {{.*}}, rope = {{.*}}}
// BARE-NEXT:    return

// SPACES-LABEL: func.func @rope_causal
// SPACES-SAME:    tile.grid = array<i64: 4, 2, 1>
func.func @rope_causal(%q: tensor<1x2x100x16xf32>, %k: tensor<1x2x100x16xf32>, %v: tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32> {
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"} : (tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32>
  %kr = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"} : (tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>) -> tensor<1x2x100x100xf32>
  %s2 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x2x100x100xf32>) -> tensor<1x2x100x100xf32>
  %s3 = "attn.causal"(%s2) : (tensor<1x2x100x100xf32>) -> tensor<1x2x100x100xf32>
  %p = "attn.softmax"(%s3) : (tensor<1x2x100x100xf32>) -> tensor<1x2x100x100xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x100x100xf32>, tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32>
  return %o : tensor<1x2x100x16xf32>
}
