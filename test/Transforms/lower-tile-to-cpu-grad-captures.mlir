// RUN: attn-opt %s --attn-grad --attn-tile="block-m=16 block-n=8" --lower-tile-to-cpu | FileCheck %s
// RUN: attn-opt %s --attn-grad --attn-tile="block-m=16 block-n=8" --lower-tile-to-cpu --attn-cpu-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: attn-opt %s --attn-grad --attn-tile="block-m=16 block-n=8" --lower-tile-to-gpu | FileCheck %s --check-prefix=GPU

// Issue 29: the gradients into captured tensors as loops. tile.clear: one
// loop over the buffer's elements (64 of the gate's 1x2x16x2), stores of 0,
// under the first CTA's scf.if. tile.capture_grad: per score element, the
// body's derivative times ds, 0 where ds is 0 (a masked score), added by
// memref.atomic_rmw addf at the indices the body yields; on the CPU an
// llvm.atomicrmw fadd, on the GPU the same op, spread over the CTA's
// threads (PTX atom.global.add.f32: test/GPU/grad-captures.test runs it).

// CHECK-LABEL: func.func private @gate_table__grad__dkdv__cta(
// CHECK: scf.if %{{.*}} {
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[N:.*]] = arith.constant 64 : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[N]]
// CHECK: memref.store %[[Z]], %arg10[
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %arg11[
// CHECK-LABEL: func.func private @gate_table__grad__dq__cta(
// CHECK: memref.atomic_rmw addf %{{.*}}, %arg9[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : (f32, memref<1x2x16x2xf32>) -> f32
// CHECK: memref.atomic_rmw addf %{{.*}}, %arg10[%{{.*}}] : (f32, memref<31xf32>) -> f32
// CHECK-NOT: "tile.

// LLVM-COUNT-2: llvm.atomicrmw fadd

// GPU: gpu.func @gate_table__grad__dq(
// GPU: gpu.thread_id x
// GPU: memref.atomic_rmw addf {{.*}} : (f32, memref<1x2x16x2xf32>) -> f32
// GPU: memref.atomic_rmw addf {{.*}} : (f32, memref<31xf32>) -> f32
func.func @gate_table(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %g: tensor<1x2x16x2xf32> {attn.grad}, %bias: tensor<31xf32> {attn.grad}) -> tensor<1x2x16x8xf32> {
  %o = "attn.fused"(%q, %k, %v, %g) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c15 = arith.constant 15 : index
    %d = arith.subi %i, %j : index
    %e = arith.addi %d, %c15 : index
    %t = tensor.extract %bias[%e] : tensor<31xf32>
    %y = arith.addf %x, %t : f32
    gpu.yield %y : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.5 : f64, causal = true, gate_block = 8 : i64, mods = ["scale", "gate", "fn"]} : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x2xf32>) -> tensor<1x2x16x8xf32>
  return %o : tensor<1x2x16x8xf32>
}
