// RUN: attn-opt %s --attn-tile="block-m=32 block-n=32" --lower-tile-to-cpu | FileCheck %s
// RUN: attn-opt %s --attn-tile="block-m=32 block-n=32" --lower-tile-to-cpu --attn-cpu-to-llvm | FileCheck %s --check-prefix=LLVM

// The kernel becomes an entry looping over the grid and a private CTA
// function; tiles live on the stack and no tile op is left.
// CHECK-LABEL: func.func @attn(
// CHECK-SAME: %[[Q:.*]]: memref<1x2x40x16xf32>, %{{.*}}, %{{.*}}, %[[O:.*]]: memref<1x2x40x16xf32>)
// CHECK-DAG: %[[GX:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[GY:.*]] = arith.constant 2 : index
// CHECK: scf.for %[[Z:.*]] = %{{.*}} to %{{.*}}
// CHECK: scf.for %[[Y:.*]] = %{{.*}} to %[[GY]]
// CHECK: scf.for %[[X:.*]] = %{{.*}} to %[[GX]]
// CHECK: func.call @attn__cta(%[[Q]], %{{.*}}, %{{.*}}, %[[O]], %[[X]], %[[Y]], %[[Z]])
// CHECK-LABEL: func.func private @attn__cta(
// CHECK-SAME: %{{.*}}: index, %{{.*}}: index, %{{.*}}: index)
// CHECK-NOT: tile.kernel
// CHECK: memref.alloca() : memref<32x16xf32>
// CHECK: math.cos
// CHECK: math.exp2
// CHECK: math.fma
// CHECK-NOT: "tile.

// LLVM: llvm.func @attn(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// LLVM: llvm.func @attn__cta(
// LLVM-NOT: memref.
// LLVM-NOT: scf.
func.func @attn(%q: tensor<1x2x40x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>) -> tensor<1x2x40x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 16 : i64, layout = "rotate_half"}} : (tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>) -> tensor<1x2x40x16xf32>
  return %o : tensor<1x2x40x16xf32>
}

// The score ops lower to loops too: modifiers in order, softcap's, ALiBi's
// and the gate's tile.score_fn bodies (cap tanh(s / cap); s - 2^(..) |i -
// j|; the gate's) each cloned into the element loop at q and kv clamped
// into the sequence (the gate's key block clamped into the table by
// attn-tile), the window mask, the document mask's
// tile.mask_fn body (-inf where it yields false), RoPE at explicit positions
// (i32 loads).
// CHECK-LABEL: func.func private @blocks__cta(
// CHECK: memref.load %{{.*}} : memref<1x40xi32>
// CHECK: arith.sitofp %{{.*}} : i32 to f32
// CHECK: math.tanh
// CHECK: math.exp2
// CHECK: arith.sitofp %{{.*}} : i64 to f32
// CHECK-NEXT: math.absf
// CHECK: %[[Q:.*]] = arith.minui %{{.*}}, %[[QL:c39.*]] : index
// CHECK: %[[KV:.*]] = arith.minui %{{.*}}, %[[KL:c39.*]] : index
// CHECK: %[[X:.*]] = memref.load %alloca{{.*}} : memref<32x32xf32>
// CHECK: %[[BLK:.*]] = arith.divui %[[KV]], %{{.*}} : index
// CHECK: %[[J:.*]] = arith.minui %[[BLK]], %{{.*}} : index
// CHECK: %[[G:.*]] = memref.load %{{.*}}[%{{.*}}, %{{.*}}, %[[Q]], %[[J]]] : memref<1x2x40x3xf32>
// CHECK: %[[Y:.*]] = arith.addf %[[X]], %[[G]] : f32
// CHECK: memref.store %[[Y]]
// CHECK: arith.cmpi ult
// CHECK: %[[DQ:.*]] = arith.minui %{{.*}} : index
// CHECK: %[[DKV:.*]] = arith.minui %{{.*}} : index
// CHECK: %[[DX:.*]] = memref.load %alloca{{.*}} : memref<32x32xf32>
// CHECK: %[[QS:.*]] = memref.load %{{.*}}[%{{.*}}, %[[DQ]]] : memref<1x40xi32>
// CHECK: %[[KS:.*]] = memref.load %{{.*}}[%{{.*}}, %[[DKV]]] : memref<1x40xi32>
// CHECK: %[[SAME:.*]] = arith.cmpi eq, %[[QS]], %[[KS]] : i32
// CHECK: arith.select %[[SAME]], %[[DX]], %{{.*}} : f32
// CHECK-NOT: "tile.
// LLVM: llvm.func @blocks(
func.func @blocks(%q: tensor<1x2x40x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>, %g: tensor<1x2x40x3xf32>, %qs: tensor<1x40xi32>, %ks: tensor<1x40xi32>, %qp: tensor<1x40xi32>) -> tensor<1x2x40x16xf32> {
  %o = "attn.fused"(%q, %k, %v, %g, %qs, %ks, %qp) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0>, scale = 0.25 : f64, causal = false, window = array<i64: 8, -1>, softcap = 30.0 : f64, alibi = 8.0 : f64, gate_block = 16 : i64, mods = ["softcap", "alibi", "gate"], rope = {theta = 1.0e4 : f64, rotary_dim = 16 : i64, layout = "interleaved"}} : (tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x3xf32>, tensor<1x40xi32>, tensor<1x40xi32>, tensor<1x40xi32>) -> tensor<1x2x40x16xf32>
  return %o : tensor<1x2x40x16xf32>
}
