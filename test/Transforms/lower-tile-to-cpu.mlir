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
  %o = "attn.fused"(%q, %k, %v) {scale = 0.25 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 16 : i64, layout = "rotate_half"}} : (tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>) -> tensor<1x2x40x16xf32>
  return %o : tensor<1x2x40x16xf32>
}
