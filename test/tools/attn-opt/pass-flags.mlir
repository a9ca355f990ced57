// RUN: attn-opt %s --attn-fuse --attn-tile | FileCheck %s --check-prefix=ORDER
// RUN: not attn-opt %s --attn-tile --attn-fuse 2>&1 >/dev/null | FileCheck %s --check-prefix=REVERSED
// RUN: attn-opt %s --attn-fuse --attn-tile="block-m=16 block-n=16" | FileCheck %s --check-prefix=OPTS
// RUN: attn-opt %s --fuse-rope --tile=block-m=16,block-n=16 | FileCheck %s --check-prefix=OPTS
// RUN: attn-opt %s --attn-fuse --attn-tile=block-m=32 --canonicalize --cse | FileCheck %s --check-prefix=UPSTREAM

// Short flags run in command-line order (attn-tile needs attn-fuse first);
// pass options go after `=`; aliases and upstream passes work as flags.

// ORDER-LABEL: func.func @rope_causal
// ORDER-SAME:    tile.kernel

// OPTS-LABEL: func.func @rope_causal
// OPTS-SAME:    tile.grid = array<i64: 7, 2, 1>
// OPTS:         "tile.alloc"() : () -> memref<16x16xf32>

// UPSTREAM-LABEL: func.func @rope_causal
// UPSTREAM-SAME:    tile.grid = array<i64: 4, 2, 1>
// UPSTREAM-NEXT:    arith.constant
// UPSTREAM:         "tile.alloc"() : () -> memref<32x16xf32>

func.func @rope_causal(%q: tensor<1x2x100x16xf32>, %k: tensor<1x2x100x16xf32>, %v: tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32> {
  // REVERSED: pass-flags.mlir:[[@LINE+1]]:9: error: cannot tile 'attn.rope': it is not part of an attn.fused op
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"} : (tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32>
  %kr = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"} : (tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x2x100x16xf32>, tensor<1x2x100x16xf32>) -> tensor<1x2x100x100xf32>
  %s2 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x2x100x100xf32>) -> tensor<1x2x100x100xf32>
  %s3 = "attn.causal"(%s2) : (tensor<1x2x100x100xf32>) -> tensor<1x2x100x100xf32>
  %p = "attn.softmax"(%s3) : (tensor<1x2x100x100xf32>) -> tensor<1x2x100x100xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x100x100xf32>, tensor<1x2x100x16xf32>) -> tensor<1x2x100x16xf32>
  return %o : tensor<1x2x100x16xf32>
}
