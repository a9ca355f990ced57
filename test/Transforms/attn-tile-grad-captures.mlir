// RUN: attn-opt %s --split-input-file --attn-grad --attn-tile="block-m=16 block-n=8" | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-grad --attn-tile="block-m=16 block-n=8" | attn-opt --split-input-file | FileCheck %s

// Issue 29: gradients into captured tensors at the tile level. Both
// backward kernels take the gradient buffers after their outputs (dgate,
// dcapture<i>, in tile.arg_names and the program's steps): the dkdv kernel,
// launched first, zeroes them in its first CTA (tile.clear under scf.if),
// and the dq kernel, which visits each (query, key) pair of a head once,
// keeps the raw scores and accumulates after tile.ds one tile.capture_grad
// per read: the gate's, yielding d chain / d gate and the gate's four
// indices, and the score body's table read, yielding its derivative and
// the clamped index. The factor exp_scale / ds_scale is tile.ds's scale
// undone (1 here: the chain ends in a body, so tile.ds applies the
// folded scale only).

// CHECK-LABEL: module attributes {tile.programs = [{inputs = ["q", "k", "v", "gate", "capture0", "out", "lse", "dout", "dq", "dk", "dv", "dgate", "dcapture0"], name = "gate_table__grad", steps = [{args = ["q", "k", "v", "gate", "capture0", "out", "lse", "dout", "dk", "dv", "dgate", "dcapture0"], kernel = "gate_table__grad__dkdv"}, {args = ["q", "k", "v", "gate", "capture0", "out", "lse", "dout", "dq", "dgate", "dcapture0"], kernel = "gate_table__grad__dq"}]
// CHECK: func.func @gate_table__grad__dkdv(
// CHECK-SAME: %[[DG:arg10]]: memref<1x2x16x2xf32>, %[[DC:arg11]]: memref<31xf32>)
// CHECK-SAME: tile.arg_names = ["q", "k", "v", "gate", "capture0", "out", "lse", "dout", "dk", "dv", "dgate", "dcapture0"]
// CHECK: %[[X:.*]] = "tile.program_id"() {dim = 0 : i64}
// CHECK: %[[Y:.*]] = "tile.program_id"() {dim = 1 : i64}
// CHECK-DAG: arith.cmpi eq, %[[X]], %{{.*}} : index
// CHECK-DAG: arith.cmpi eq, %[[Y]], %{{.*}} : index
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: "tile.clear"(%[[DG]]) : (memref<1x2x16x2xf32>) -> ()
// CHECK-NEXT: "tile.clear"(%[[DC]]) : (memref<31xf32>) -> ()
// CHECK-NOT: "tile.capture_grad"
// CHECK: func.func @gate_table__grad__dq(
// CHECK-SAME: %[[QG:arg9]]: memref<1x2x16x2xf32>, %[[QC:arg10]]: memref<31xf32>)
// CHECK-NOT: "tile.clear"
// CHECK: "tile.mma"(%[[QT:.*]], %[[KT:.*]], %[[S:.*]]) {accumulate = false, transpose_b = true}
// CHECK-NEXT: "tile.mma"(%[[QT]], %[[KT]], %[[SIN:.*]]) {accumulate = false, transpose_b = true}
// CHECK: "tile.ds"(%[[S]], %[[DP:.*]], %{{.*}}) {scale = 1.000000e+00 : f64}
// CHECK-NEXT: "tile.capture_grad"(%[[DP]], %[[SIN]], %[[QG]], {{.*}}) ({
// CHECK: %[[GB:.*]] = arith.minui
// CHECK-NEXT: memref.load %arg3[%arg13, %arg14, %arg15, %[[GB]]]
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: gpu.yield %[[ONE]], %arg13, %arg14, %arg15, %[[GB]] : f32, index, index, index, index
// CHECK-NEXT: }) {scale = 1.000000e+00 : f64, seq_k = 16 : i64, seq_q = 16 : i64}
// CHECK-NEXT: "tile.capture_grad"(%[[DP]], %[[SIN]], %[[QC]], {{.*}}) ({
// CHECK: %[[TI:.*]] = arith.minui %{{.*}}, %c30
// CHECK-NEXT: memref.load %arg4[%[[TI]]] : memref<31xf32>
// CHECK: gpu.yield %{{.*}}, %[[TI]] : f32, index
// CHECK: "tile.score_fn_grad"(%[[DP]], %[[SIN]],
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

// -----

// A linear chain (scale then the gate): tile.ds applies the scale (d final
// / d raw), so tile.capture_grad divides it out (scale 4 = 1 / 0.25); the
// raw scores are kept for it alone (no tile.score_fn_grad).
// CHECK-LABEL: func.func @gate_linear__grad__dq(
// CHECK: "tile.mma"(%[[QT:.*]], %[[KT:.*]], %{{.*}}) {accumulate = false, transpose_b = true}
// CHECK-NEXT: "tile.mma"(%[[QT]], %[[KT]], %{{.*}}) {accumulate = false, transpose_b = true}
// CHECK: "tile.ds"({{.*}}) {scale = 2.500000e-01 : f64}
// CHECK-NEXT: "tile.capture_grad"
// CHECK: }) {scale = 4.000000e+00 : f64
// CHECK-NOT: "tile.score_fn_grad"
// CHECK: return
func.func @gate_linear(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %g: tensor<1x2x16x2xf32> {attn.grad}) -> tensor<1x2x16x8xf32> {
  %o = "attn.fused"(%q, %k, %v, %g) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.25 : f64, causal = false, gate_block = 8 : i64, mods = ["scale", "gate"]} : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x2xf32>) -> tensor<1x2x16x8xf32>
  return %o : tensor<1x2x16x8xf32>
}
