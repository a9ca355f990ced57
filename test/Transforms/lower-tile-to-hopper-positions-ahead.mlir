// RUN: attn-opt %s --split-input-file --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rope=ahead consumers=3" | FileCheck %s
// RUN: attn-translate --to-ptx %s --hopper-options="rope=ahead consumers=3" -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not=C7513 --implicit-check-not=C7514 %}

// Explicit RoPE positions (issue 28) with K rotated once per row by the
// attention kernel's own producer warps (rope=ahead) and three consumer
// warpgroups, f16, GQA 4/1: the team reads k's positions of each key
// block's batch (the block's index gives its batch), the consumers q's of
// the tile's; cos/sin come from the frequencies in turns (the team's f64
// ones from its stash, the consumers' f32 ones from theirs), a row's
// position loaded once per row a thread rotates.

// Nothing spills (the stack frame is libdevice's sin/cos).
// PTXAS: Compiling entry function 'pairs__attn' for 'sm_90a'
// PTXAS-NEXT: Function properties for pairs__attn
// PTXAS-NEXT: 32 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS: Compiling entry function 'packed__attn' for 'sm_90a'
// PTXAS-NEXT: Function properties for packed__attn
// PTXAS-NEXT: 32 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// CHECK-LABEL: llvm.func @packed__attn(
// CHECK-SAME: %[[QP:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %[[KP:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}
// CHECK: nvvm.setmaxregister decrease 32
// The team: per key block (c) its batch c / 8 (8 key blocks per head, one
// K head), then the block's rows.
// CHECK: scf.while
// CHECK: ld.shared.b64 $0, [$1];
// CHECK: arith.constant 8 : i32
// CHECK-NEXT: %[[BH:.*]] = arith.divui %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: arith.constant 1 : i32
// CHECK-NEXT: %[[BZ:.*]] = arith.divui %[[BH]], %{{.*}} : i32
// CHECK-NEXT: arith.constant 1024 : i32
// CHECK-NEXT: %[[OFF:.*]] = arith.muli %[[BZ]], %{{.*}} : i32
// CHECK-NEXT: %[[OFF64:.*]] = arith.extui %[[OFF]] : i32 to i64
// CHECK-NEXT: %[[KB:.*]] = llvm.getelementptr %[[KP]][%[[OFF64]]] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK: llvm.getelementptr %[[KB]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// CHECK-NEXT: %[[P:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i32
// CHECK-NEXT: arith.sitofp %[[P]] : i32 to f64
// CHECK: cvt.rni.f64.f64
// CHECK: cos.approx.f32
// CHECK: nvvm.setmaxregister increase 160
// The consumers: q's positions of the tile's batch, the f32 turns from
// the stash, the product split exactly by an FMA.
// CHECK: %[[QB:.*]] = llvm.getelementptr %[[QP]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// CHECK: llvm.getelementptr %[[QB]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// CHECK-NEXT: %[[QPOS:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i32
// CHECK-NEXT: arith.sitofp %[[QPOS]] : i32 to f32
// CHECK: math.fma
// CHECK-NEXT: cvt.rni.f32.f32
// CHECK: wgmma.mma_async
// CHECK: llvm.return
func.func @packed(%q: tensor<2x4x1024x64xf16>, %k: tensor<2x1x1024x64xf16>, %v: tensor<2x1x1024x64xf16>, %qp: tensor<2x1024xi32>, %kp: tensor<2x1024xi32>) -> tensor<2x4x1024x64xf16> {
  %o = "attn.fused"(%q, %k, %v, %qp, %kp) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 1>, scale = 0.125 : f64, causal = true, rope = {theta = 500000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<2x4x1024x64xf16>, tensor<2x1x1024x64xf16>, tensor<2x1x1024x64xf16>, tensor<2x1024xi32>, tensor<2x1024xi32>) -> tensor<2x4x1024x64xf16>
  return %o : tensor<2x4x1024x64xf16>
}

// -----

// A rotary dim of 48 (12 slots, which do not divide a consumer's 128
// threads): the consumers rotate Q pair by pair, each item loading its
// row's position.
// CHECK-LABEL: llvm.func @pairs__attn(
// CHECK-SAME: %[[QP:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}
// CHECK: nvvm.setmaxregister increase 160
// CHECK: %[[QB:.*]] = llvm.getelementptr %[[QP]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: arith.divui %{{.*}}, %{{.*}} : i32
// CHECK: llvm.getelementptr %[[QB]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// CHECK-NEXT: %[[P:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i32
// CHECK: arith.sitofp %[[P]] : i32 to f32
// CHECK: llvm.call @__nv_sinf
// CHECK: wgmma.mma_async
func.func @pairs(%q: tensor<2x4x1024x64xf16>, %k: tensor<2x1x1024x64xf16>, %v: tensor<2x1x1024x64xf16>, %qp: tensor<2x1024xi32>, %kp: tensor<2x1024xi32>) -> tensor<2x4x1024x64xf16> {
  %o = "attn.fused"(%q, %k, %v, %qp, %kp) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 1>, scale = 0.125 : f64, causal = true, rope = {theta = 500000.0 : f64, rotary_dim = 48 : i64, layout = "rotate_half"}} : (tensor<2x4x1024x64xf16>, tensor<2x1x1024x64xf16>, tensor<2x1x1024x64xf16>, tensor<2x1024xi32>, tensor<2x1024xi32>) -> tensor<2x4x1024x64xf16>
  return %o : tensor<2x4x1024x64xf16>
}
