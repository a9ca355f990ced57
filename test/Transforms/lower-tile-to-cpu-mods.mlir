// RUN: attn-opt %s --attn-tile --lower-tile-to-cpu | FileCheck %s
// RUN: attn-opt %s --attn-tile --lower-tile-to-cpu --attn-cpu-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: attn-opt %s --attn-tile --lower-tile-to-gpu | FileCheck %s --check-prefix=GPU

// tile.score_fn and tile.mask_fn lower by cloning their body into the loop
// over the score tile's elements: the block arguments become the element's
// score, b, h and q = min(row + i, seq_q - 1), kv = min(col + j, seq_k - 1);
// score_fn stores the body's value, mask_fn -inf where it yields false. The
// capture is the kernel's memref argument, read at the index attn-tile
// clamped.
// CHECK-LABEL: func.func private @bias__cta(
// CHECK-SAME: %[[BIAS:.*]]: memref<15xf32>, %{{.*}}: memref<1x2x8x16xf32>,
// The scale's loop (tile.score_mod), then the score_fn's.
// CHECK: arith.mulf
// CHECK: scf.for %[[E:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT: %[[W:.*]] = arith.constant 64 : index
// CHECK-NEXT: %[[I:.*]] = arith.divui %[[E]], %[[W]]
// CHECK-NEXT: %[[J:.*]] = arith.remui %[[E]], %[[W]]
// CHECK-NEXT: %[[QR:.*]] = arith.addi %{{.*}}, %[[I]]
// CHECK-NEXT: %[[Q:.*]] = arith.minui %[[QR]], %{{.*}}
// CHECK-NEXT: %[[KR:.*]] = arith.addi %{{.*}}, %[[J]]
// CHECK-NEXT: %[[KV:.*]] = arith.minui %[[KR]], %{{.*}}
// CHECK-NEXT: %[[X:.*]] = memref.load %{{.*}}[%[[I]], %[[J]]] : memref<64x64xf32>
// CHECK-NEXT: %[[C7:.*]] = arith.constant 7 : index
// CHECK-NEXT: %[[D:.*]] = arith.subi %[[Q]], %[[KV]]
// CHECK-NEXT: %[[IX:.*]] = arith.addi %[[D]], %[[C7]]
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: %[[IX0:.*]] = arith.maxsi %[[IX]]
// CHECK-NEXT: arith.constant 14 : index
// CHECK-NEXT: %[[IXC:.*]] = arith.minui %[[IX0]]
// CHECK-NEXT: %[[T:.*]] = memref.load %[[BIAS]][%[[IXC]]] : memref<15xf32>
// CHECK-NEXT: %[[Y:.*]] = arith.addf %[[X]], %[[T]] : f32
// CHECK-NEXT: memref.store %[[Y]], %{{.*}}[%[[I]], %[[J]]]
// CHECK-NEXT: }
// The mask_fn after tile.mask's loop.
// CHECK: arith.cmpi uge
// CHECK: scf.for
// CHECK: %[[MQ:.*]] = arith.minui
// CHECK: %[[MKV:.*]] = arith.minui
// CHECK-NEXT: %[[MX:.*]] = memref.load
// CHECK-NEXT: %[[OK:.*]] = arith.cmpi ule, %[[MKV]], %[[MQ]] : index
// CHECK-NEXT: %[[MY:.*]] = arith.select %[[OK]], %[[MX]], %{{.*}} : f32
// CHECK-NEXT: memref.store %[[MY]]
// CHECK-NOT: "tile.
// CHECK-NOT: gpu.yield

// LLVM: llvm.func @bias(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// LLVM-NOT: gpu.yield

// On the GPU the capture is a global memref argument named in
// attn.arg_names; the loops are spread over the CTA's threads.
// GPU: gpu.func @bias(%{{.*}}: memref<15xf32>, %{{.*}}: memref<1x2x8x16xf32>, %{{.*}}: memref<1x2x8x16xf32>, %{{.*}}: memref<1x2x8x16xf32>, %{{.*}}: memref<1x2x8x16xf32>)
// GPU-SAME: attn.arg_names = ["capture0", "q", "k", "v", "out"]
// GPU: memref.load %{{.*}} : memref<15xf32>
// GPU: gpu.barrier
// GPU: arith.cmpi ule
// GPU: gpu.barrier
// GPU-NOT: gpu.yield
func.func @bias(%bias: tensor<15xf32>, %q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
    %c7 = arith.constant 7 : index
    %d = arith.subi %qi, %kv : index
    %e = arith.addi %d, %c7 : index
    %t = tensor.extract %bias[%e] : tensor<15xf32>
    %y = arith.addf %s, %t : f32
    gpu.yield %y : f32
  }, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    %ok = arith.cmpi ule, %kv, %qi : index
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, mods = ["scale", "fn"], scale = 0.25 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}
