// RUN: attn-opt %s --split-input-file --attn-tile="block-m=32 block-n=32" --lower-tile-to-gpu | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-tile="block-m=32 block-n=32" --lower-tile-to-gpu="chip=sm_80" | FileCheck %s --check-prefix=SM80

// One gpu.func per kernel in @attn_kernels with the NVVM target; tiles in
// workgroup memory; block ids replace program ids; barriers after tile ops.
// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @attn_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">]
// CHECK: gpu.func @attn(%{{.*}}: memref<1x2x40x16xf32>, %{{.*}}: memref<1x2x40x16xf32>, %{{.*}}: memref<1x2x40x16xf32>, %{{.*}}: memref<1x2x40x16xf32>)
// CHECK-SAME: workgroup(%{{.*}} : memref<32x16xf32, #gpu.address_space<workgroup>>
// CHECK-SAME: kernel attributes
// CHECK-SAME: attn.arg_names = ["q", "k", "v", "out"]
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 2, 2, 1>
// CHECK: gpu.block_id x
// CHECK: gpu.thread_id x
// CHECK: gpu.barrier
// CHECK-NOT: "tile.
// CHECK-NOT: func.func

// SM80: #nvvm.target<O = 3, chip = "sm_80", features = "+ptx70">
func.func @attn(%q: tensor<1x2x40x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>) -> tensor<1x2x40x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true} : (tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>) -> tensor<1x2x40x16xf32>
  return %o : tensor<1x2x40x16xf32>
}

// The score ops share the loop generator: the same loops spread over the
// CTA's threads, a barrier after each (softcap is a tile.score_fn body, its
// math.tanh lowered as the GPU pipeline lowers math); the inputs stay global
// memrefs and are named in attn.arg_names.
// CHECK: gpu.func @blocks(
// CHECK-SAME: memref<1x2x40x3xf32>, %{{.*}}: memref<1x40xi32>, %{{.*}}: memref<1x40xi32>
// CHECK-SAME: attn.arg_names = ["q", "k", "v", "gate", "q_segments", "k_segments", "out"]
// CHECK: math.tanh
// CHECK: gpu.barrier
// CHECK: memref.load %{{.*}} : memref<1x2x40x3xf32>
// CHECK: gpu.barrier
// CHECK: arith.cmpi eq, %{{.*}}, %{{.*}} : i32
// CHECK: gpu.barrier
func.func @blocks(%q: tensor<1x2x40x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>, %g: tensor<1x2x40x3xf32>, %qs: tensor<1x40xi32>, %ks: tensor<1x40xi32>) -> tensor<1x2x40x16xf32> {
  %o = "attn.fused"(%q, %k, %v, %g, %qs, %ks) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 0, 0>, scale = 0.25 : f64, causal = true, softcap = 30.0 : f64, gate_block = 16 : i64, mods = ["softcap", "gate", "scale"]} : (tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x3xf32>, tensor<1x40xi32>, tensor<1x40xi32>) -> tensor<1x2x40x16xf32>
  return %o : tensor<1x2x40x16xf32>
}

// -----

// More than 65535 batch-heads: CUDA's grid takes that many CTAs along x
// only, so the grid is folded into x and each CTA recovers its indices.
// CHECK-LABEL: gpu.func @wide(
// CHECK-SAME: known_grid_size = array<i32: 140000, 1, 1>
// CHECK: %[[BID:.*]] = gpu.block_id x
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C70K:.*]] = arith.constant 70000 : index
// CHECK: arith.remui %[[BID]], %[[C2]] : index
// CHECK: %[[REST:.*]] = arith.divui %[[BID]], %[[C2]] : index
// CHECK: arith.remui %[[REST]], %[[C70K]] : index
// CHECK: arith.divui %[[REST]], %[[C70K]] : index
// CHECK-NOT: gpu.block_id y
func.func @wide(%q: tensor<1x70000x40x16xf32>, %k: tensor<1x70000x40x16xf32>, %v: tensor<1x70000x40x16xf32>) -> tensor<1x70000x40x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true} : (tensor<1x70000x40x16xf32>, tensor<1x70000x40x16xf32>, tensor<1x70000x40x16xf32>) -> tensor<1x70000x40x16xf32>
  return %o : tensor<1x70000x40x16xf32>
}
