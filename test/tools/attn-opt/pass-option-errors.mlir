// RUN: not attn-opt %s --attn-tile=block-q=3 2>&1 >/dev/null | FileCheck %s --check-prefix=UNKNOWN
// RUN: not attn-opt %s --pass-pipeline='attn-tile{block-q=3}' 2>&1 >/dev/null | FileCheck %s --check-prefix=UNKNOWN
// RUN: not attn-opt %s --attn-tile=block-m=abc 2>&1 >/dev/null | FileCheck %s --check-prefix=NOT-INT
// RUN: not attn-opt %s --attn-tile=block-m=-1 2>&1 >/dev/null | FileCheck %s --check-prefix=NEGATIVE
// RUN: not attn-opt %s --attn-tile=block-m= 2>&1 >/dev/null | FileCheck %s --check-prefix=EMPTY
// RUN: not attn-opt %s --attn-tile=block-m 2>&1 >/dev/null | FileCheck %s --check-prefix=NO-VALUE
// RUN: not attn-opt %s --attn-fuse --attn-tile=block-m=48 2>&1 >/dev/null | FileCheck %s --check-prefix=POW2
// RUN: not attn-opt %s --attn-tile=block-k=24 2>&1 >/dev/null | FileCheck %s --check-prefix=POW2-K
// RUN: not attn-opt %s --attn-tile=kernel=wgmma 2>&1 >/dev/null | FileCheck %s --check-prefix=KERNEL
// RUN: not attn-opt %s --lower-tile-to-gpu=chip=sm_99 2>&1 >/dev/null | FileCheck %s --check-prefix=CHIP
// RUN: not attn-opt %s --lower-tile-to-gpu=features=+ptx10 2>&1 >/dev/null | FileCheck %s --check-prefix=FEATURES
// RUN: not attn-opt %s --lower-tile-to-cpu=x=1 2>&1 >/dev/null | FileCheck %s --check-prefix=NO-OPTIONS
// RUN: not attn-opt %s --attn-fuse=x=1 2>&1 >/dev/null | FileCheck %s --check-prefix=FUSE-UNKNOWN
// RUN: not attn-opt %s --attn-fuse=rope-strategy=best 2>&1 >/dev/null | FileCheck %s --check-prefix=STRATEGY
// RUN: not attn-opt %s --attn-fuse=gpu=v100 2>&1 >/dev/null | FileCheck %s --check-prefix=GPU

// A bad pass option is reported with the option, the expected values and
// what was found; attn-opt exits 1 and prints no IR.

// UNKNOWN:    attn-opt: error: unknown option 'block-q' of pass 'attn-tile' (expected block-m, block-n, block-k, threads or kernel)
// NOT-INT:    attn-opt: error: option 'block-m' expects an integer in [0, 256], found 'abc'
// NEGATIVE:   attn-opt: error: option 'block-m' expects an integer in [0, 256], found '-1'
// EMPTY:      attn-opt: error: option 'block-m' expects an integer in [0, 256], found ''
// NO-VALUE:   attn-opt: error: option 'block-m' of pass 'attn-tile' needs a value (name=value)
// POW2:       attn-opt: error: option 'block-m' must be 0 or a power of two, found 48
// POW2-K:     attn-opt: error: option 'block-k' must be 0 or a power of two, found 24
// KERNEL:     attn-opt: error: option 'kernel' expects plain, hopper or mma, found 'wgmma'
// CHIP:       attn-opt: error: unknown chip 'sm_99' (expected {{.*}}sm_90a)
// FEATURES:   attn-opt: error: features must be +ptxNN with NN in [60, 88], found '+ptx10'
// NO-OPTIONS: attn-opt: error: pass 'lower-tile-to-cpu' takes no options
// FUSE-UNKNOWN: attn-opt: error: unknown option 'x' of pass 'attn-fuse' (expected rope-strategy or gpu)
// STRATEGY:   attn-opt: error: option 'rope-strategy' expects auto, fused, split, pre or producer, found 'best'
// GPU:        attn-opt: error: unknown gpu 'v100' (expected H100, H200, A100 or RTX3090)
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
