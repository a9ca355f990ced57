// RUN: attn-opt %s --split-input-file --attn-tile | FileCheck %s

// attn.fused's score_fn and mask_fn bodies become tile.score_fn and
// tile.mask_fn in the key loop: the score_fn after the named modifiers (so
// the scale no longer folds into the softmax), the mask_fn after tile.mask.
// A captured tensor becomes a kernel argument named capture0, capture1, ...
// in the function's argument order, and tensor.extract of it a memref.load
// at indices clamped into its shape (maxsi with 0, then minui with dim - 1).
// CHECK-LABEL: @bias_table
// CHECK-SAME: (%[[Q:.*]]: memref<1x2x8x16xf32>, %[[K:.*]]: memref<1x2x8x16xf32>, %[[V:.*]]: memref<1x2x8x16xf32>, %[[BIAS:.*]]: memref<15xf32>, %[[O:.*]]: memref<1x2x8x16xf32>)
// CHECK-SAME: tile.arg_names = ["q", "k", "v", "capture0", "out"]
// CHECK: scf.for
// CHECK: "tile.mma"
// CHECK-NEXT: "tile.score_mod"(%[[S:.*]], %[[B:.*]], %[[H:.*]], %[[ROW:.*]], %[[COL:.*]]) {mods = ["scale"], scale = 2.500000e-01 : f64}
// CHECK-NEXT: "tile.score_fn"(%[[S]], %[[B]], %[[H]], %[[ROW]], %[[COL]]) ({
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %{{.*}}: index, %{{.*}}: index, %[[QI:.*]]: index, %[[KV:.*]]: index):
// CHECK-NEXT: %[[C7:.*]] = arith.constant 7 : index
// CHECK-NEXT: %[[D:.*]] = arith.subi %[[QI]], %[[KV]] : index
// CHECK-NEXT: %[[E:.*]] = arith.addi %[[D]], %[[C7]] : index
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[E0:.*]] = arith.maxsi %[[E]], %[[Z]] : index
// CHECK-NEXT: %[[LAST:.*]] = arith.constant 14 : index
// CHECK-NEXT: %[[EC:.*]] = arith.minui %[[E0]], %[[LAST]] : index
// CHECK-NEXT: %[[T:.*]] = memref.load %[[BIAS]][%[[EC]]] : memref<15xf32>
// CHECK-NEXT: %[[Y:.*]] = arith.addf %[[X]], %[[T]] : f32
// CHECK-NEXT: gpu.yield %[[Y]] : f32
// CHECK-NEXT: }) {seq_k = 8 : i64, seq_q = 8 : i64}
// CHECK-NEXT: "tile.mask"(%[[S]], %[[ROW]], %[[COL]]) {causal = false, kv_len = 8 : i64}
// CHECK-NEXT: "tile.mask_fn"(%[[S]], %[[B]], %[[H]], %[[ROW]], %[[COL]]) ({
// CHECK-NEXT: ^bb0(%{{.*}}: index, %{{.*}}: index, %[[MQ:.*]]: index, %[[MKV:.*]]: index):
// CHECK-NEXT: %[[OK:.*]] = arith.cmpi ule, %[[MKV]], %[[MQ]] : index
// CHECK-NEXT: gpu.yield %[[OK]] : i1
// CHECK-NEXT: }) {seq_k = 8 : i64, seq_q = 8 : i64}
// CHECK-NEXT: "tile.softmax_update"(%[[S]], {{.*}}) {scale = 1.000000e+00 : f64}
func.func @bias_table(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %bias: tensor<15xf32>) -> tensor<1x2x8x16xf32> {
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

// -----

// Captures anywhere among the arguments, numbered in argument order; a
// capture read by both bodies is one argument. An index already inside the
// shape is not clamped: a constant, or b, h, q, kv where the dimension
// holds their range (h < 4 does not fit the 3 rows of the table here; a
// dimension of 1 reads element 0).
// CHECK-LABEL: @captures
// CHECK-SAME: (%[[SL:.*]]: memref<3x2xbf16>, %[[Q:.*]]: memref<1x4x8x16xf32>, %{{.*}}: memref<1x4x8x16xf32>, %{{.*}}: memref<1x4x8x16xf32>, %[[IDS:.*]]: memref<1x8xi64>, %{{.*}}: memref<1x4x8x16xf32>)
// CHECK-SAME: tile.arg_names = ["capture0", "q", "k", "v", "capture1", "out"]
// CHECK: "tile.score_fn"
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[B:.*]]: index, %[[H:.*]]: index, %{{.*}}: index, %[[KV:.*]]: index):
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[H0:.*]] = arith.maxsi %[[H]], %[[Z]] : index
// CHECK-NEXT: %[[L:.*]] = arith.constant 2 : index
// CHECK-NEXT: %[[HC:.*]] = arith.minui %[[H0]], %[[L]] : index
// CHECK-NEXT: %[[M:.*]] = memref.load %[[SL]][%[[HC]], %[[C1]]] : memref<3x2xbf16>
// CHECK-NEXT: %[[MF:.*]] = arith.extf %[[M]] : bf16 to f32
// CHECK-NEXT: %[[ID:.*]] = memref.load %[[IDS]][%[[B]], %[[KV]]] : memref<1x8xi64>
// CHECK: gpu.yield %{{.*}} : f32
// CHECK: "tile.mask"
// CHECK-NEXT: "tile.mask_fn"
// CHECK-NEXT: ^bb0(%[[MB:.*]]: index, %{{.*}}: index, %[[MQ:.*]]: index, %{{.*}}: index):
// CHECK-NEXT: memref.load %[[IDS]][%[[MB]], %[[MQ]]] : memref<1x8xi64>
// CHECK: gpu.yield %{{.*}} : i1
// CHECK: "tile.softmax_update"({{.*}}) {scale = 1.000000e+00 : f64}
func.func @captures(%slopes: tensor<3x2xbf16>, %q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>, %ids: tensor<1x8xi64>) -> tensor<1x4x8x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
    %c1 = arith.constant 1 : index
    %m = tensor.extract %slopes[%h, %c1] : tensor<3x2xbf16>
    %mf = arith.extf %m : bf16 to f32
    %id = tensor.extract %ids[%b, %kv] : tensor<1x8xi64>
    %idf = arith.sitofp %id : i64 to f32
    %p = arith.mulf %mf, %idf : f32
    %y = arith.subf %s, %p : f32
    gpu.yield %y : f32
  }, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    %a = tensor.extract %ids[%b, %qi] : tensor<1x8xi64>
    %c = tensor.extract %ids[%b, %kv] : tensor<1x8xi64>
    %ok = arith.cmpi sge, %a, %c : i64
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, mods = ["scale", "fn"], scale = 0.25 : f64, causal = true} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// A mask_fn alone: no tile.score_fn, and the scale folds into the softmax.
// CHECK-LABEL: @prefix_lm
// CHECK-SAME: tile.arg_names = ["q", "k", "v", "out"]
// CHECK-NOT: tile.score_fn
// CHECK: "tile.mask"
// CHECK-NEXT: "tile.mask_fn"
// CHECK: "tile.softmax_update"({{.*}}) {scale = 1.250000e-01 : f64}
func.func @prefix_lm(%q: tensor<1x1x16x8xf32>, %k: tensor<1x1x16x8xf32>, %v: tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    %c4 = arith.constant 4 : index
    %pre = arith.cmpi ult, %kv, %c4 : index
    %causal = arith.cmpi ule, %kv, %qi : index
    %ok = arith.ori %pre, %causal : i1
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>) -> tensor<1x1x16x8xf32>
  return %o : tensor<1x1x16x8xf32>
}

// -----

// "fn" among the named modifiers: the score_fn applies where "mods" puts
// it, between ALiBi's and softcap's bodies (tile.score_fn each); a scale
// after everything folds.
// CHECK-LABEL: @fn_between
// CHECK: "tile.mma"
// CHECK-NEXT: "tile.score_fn"
// CHECK: math.exp2
// CHECK: math.absf
// CHECK: gpu.yield
// CHECK-NEXT: })
// CHECK-NEXT: "tile.score_fn"
// CHECK: math.tanh
// CHECK: gpu.yield
// CHECK-NEXT: })
// CHECK-NEXT: "tile.score_fn"
// CHECK: arith.constant 2.000000e+01 : f32
// CHECK-NEXT: arith.divf
// CHECK-NEXT: math.tanh
// CHECK-NEXT: arith.mulf
// CHECK: gpu.yield
// CHECK-NEXT: })
// CHECK-NEXT: "tile.mask"
// CHECK-NEXT: "tile.softmax_update"({{.*}}) {scale = 1.250000e-01 : f64}
func.func @fn_between(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32> {
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
    %t = math.tanh %s : f32
    gpu.yield %t : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, mods = ["alibi", "fn", "softcap", "scale"], alibi = 4.0 : f64, softcap = 20.0 : f64, scale = 0.125 : f64, causal = false} : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
  return %o : tensor<1x2x16x8xf32>
}
