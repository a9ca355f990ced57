// RUN: attn-opt %s --split-input-file --attn-fuse | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-fuse | attn-opt --split-input-file | FileCheck %s

// Issue 28: attn-fuse composes attn.score_mod bodies into attn.fused's
// score_fn region and attn.mask_mod bodies into mask_fn. The result
// verifies (second RUN) and keeps the captures as values from above.

// One score_mod after the scale: its body is score_fn, "fn" after "scale".
// CHECK-LABEL: @fuse_bias_table
// CHECK: "attn.fused"(%arg0, %arg1, %arg2) ({
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[B:.*]]: index, %[[H:.*]]: index, %[[Q:.*]]: index, %[[KV:.*]]: index):
// CHECK-NEXT: %[[C7:.*]] = arith.constant 7 : index
// CHECK-NEXT: %[[D:.*]] = arith.subi %[[Q]], %[[KV]] : index
// CHECK-NEXT: %[[E:.*]] = arith.addi %[[D]], %[[C7]] : index
// CHECK-NEXT: %[[T:.*]] = tensor.extract %arg3[%[[E]]] : tensor<15xf32>
// CHECK-NEXT: %[[Y:.*]] = arith.addf %[[X]], %[[T]] : f32
// CHECK-NEXT: gpu.yield %[[Y]] : f32
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {causal = true, mods = ["scale", "fn"], operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 2.500000e-01 : f64}
// CHECK-NOT: "attn.score_mod"
func.func @fuse_bias_table(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %bias: tensor<15xf32>) -> tensor<1x2x8x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s2 = "attn.score_mod"(%s1) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c7 = arith.constant 7 : index
    %d = arith.subi %i, %j : index
    %e = arith.addi %d, %c7 : index
    %t = tensor.extract %bias[%e] : tensor<15xf32>
    %y = arith.addf %x, %t : f32
    gpu.yield %y : f32
  }) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s3 = "attn.causal"(%s2) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s3) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Adjacent score_mods compose in program order (a mask between them
// commutes): the second body's score is the first body's value. Before the
// scale, "fn" comes first in mods.
// CHECK-LABEL: @fuse_two_score_mods
// CHECK: "attn.fused"(%arg0, %arg1, %arg2) ({
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %{{.*}}: index, %[[H:.*]]: index, %{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT: %[[M:.*]] = tensor.extract %arg3[%[[H]]] : tensor<2xf32>
// CHECK-NEXT: %[[Y1:.*]] = arith.mulf %[[X]], %[[M]] : f32
// CHECK-NEXT: %[[CAP:.*]] = arith.constant 2.000000e+01 : f32
// CHECK-NEXT: %[[R:.*]] = arith.divf %[[Y1]], %[[CAP]] : f32
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[R]] : f32
// CHECK-NEXT: %[[Y2:.*]] = arith.mulf %[[T]], %[[CAP]] : f32
// CHECK-NEXT: gpu.yield %[[Y2]] : f32
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {causal = false, mods = ["fn", "scale"], {{.*}}scale = 1.250000e-01 : f64, window = array<i64: 4, 0>}
func.func @fuse_two_score_mods(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %w: tensor<2xf32>) -> tensor<1x2x8x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %s1 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %m = tensor.extract %w[%h] : tensor<2xf32>
    %y = arith.mulf %x, %m : f32
    gpu.yield %y : f32
  }) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s2 = "attn.window"(%s1) {left = 4 : i64, right = 0 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s3 = "attn.score_mod"(%s2) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %cap = arith.constant 20.0 : f32
    %r = arith.divf %x, %cap : f32
    %t = math.tanh %r : f32
    %y = arith.mulf %t, %cap : f32
    gpu.yield %y : f32
  }) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s4 = "attn.scale"(%s3) {scale = 0.125 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s4) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Masks: every attn.mask_mod body goes into mask_fn, and-ed in program
// order; the named masks stay attributes; no score_fn, so no "mods".
// CHECK-LABEL: @fuse_masks
// CHECK: "attn.fused"(%arg0, %arg1, %arg2, %arg4, %arg5) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: ^bb0(%[[B:.*]]: index, %{{.*}}: index, %[[Q:.*]]: index, %[[KV:.*]]: index):
// CHECK-NEXT: %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT: %[[PRE:.*]] = arith.cmpi ult, %[[KV]], %[[C4]] : index
// CHECK-NEXT: %[[QI:.*]] = tensor.extract %arg3[%[[B]], %[[Q]]] : tensor<1x8xi32>
// CHECK-NEXT: %[[KI:.*]] = tensor.extract %arg3[%[[B]], %[[KV]]] : tensor<1x8xi32>
// CHECK-NEXT: %[[SAME:.*]] = arith.cmpi eq, %[[QI]], %[[KI]] : i32
// CHECK-NEXT: %[[AND:.*]] = arith.andi %[[PRE]], %[[SAME]] : i1
// CHECK-NEXT: gpu.yield %[[AND]] : i1
// CHECK-NEXT: }) {causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0>, scale = 1.000000e+00 : f64}
// CHECK-NOT: "attn.mask_mod"
func.func @fuse_masks(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %ids: tensor<1x8xi32>, %qs: tensor<1x8xi32>, %ks: tensor<1x8xi32>) -> tensor<1x2x8x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %s1 = "attn.mask_mod"(%s) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c4 = arith.constant 4 : index
    %pre = arith.cmpi ult, %j, %c4 : index
    gpu.yield %pre : i1
  }) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s2 = "attn.causal"(%s1) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s3 = "attn.document"(%s2, %qs, %ks) : (tensor<1x2x8x8xf32>, tensor<1x8xi32>, tensor<1x8xi32>) -> tensor<1x2x8x8xf32>
  %s4 = "attn.mask_mod"(%s3) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %qi = tensor.extract %ids[%b, %i] : tensor<1x8xi32>
    %ki = tensor.extract %ids[%b, %j] : tensor<1x8xi32>
    %same = arith.cmpi eq, %qi, %ki : i32
    gpu.yield %same : i1
  }) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s4) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Both forms beside the named non-commuting modifiers: "fn" sits between
// softcap and alibi, where the score_mod was; the mask body goes to
// mask_fn; RoPE still fuses.
// CHECK-LABEL: @fuse_bodies_among_named
// CHECK: "attn.fused"(%arg0, %arg1, %arg2) ({
// CHECK-NEXT: ^bb0(
// CHECK: math.exp
// CHECK: gpu.yield %{{.*}} : f32
// CHECK-NEXT: }, {
// CHECK-NEXT: ^bb0(
// CHECK: gpu.yield %{{.*}} : i1
// CHECK-NEXT: }) {alibi = 8.000000e+00 : f64, causal = false, mods = ["scale", "softcap", "fn", "alibi"], {{.*}}rope = {{.*}}softcap = 3.000000e+01 : f64}
func.func @fuse_bodies_among_named(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"} : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %kr = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"} : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s2 = "attn.softcap"(%s1) {cap = 30.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s3 = "attn.score_mod"(%s2) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %e = math.exp %x : f32
    gpu.yield %e : f32
  }) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s4 = "attn.mask_mod"(%s3) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %ok = arith.cmpi ne, %i, %j : index
    gpu.yield %ok : i1
  }) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s5 = "attn.alibi"(%s4) {max_bias = 8.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s5) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}
