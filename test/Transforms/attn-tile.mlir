// RUN: attn-opt %s --split-input-file --attn-tile | FileCheck %s

// The kernel: a grid of (query blocks, batch * heads), Q loaded and rotated
// once, an online-softmax loop over key blocks that stops at the diagonal.
// CHECK-LABEL: @rope_causal
// CHECK-SAME: (%[[Q:.*]]: memref<2x4x100x64xf32>, %[[K:.*]]: memref<2x4x100x64xf32>, %[[V:.*]]: memref<2x4x100x64xf32>, %[[O:.*]]: memref<2x4x100x64xf32>)
// CHECK-SAME: tile.arg_names = ["q", "k", "v", "out"]
// CHECK-SAME: tile.grid = array<i64: 4, 8, 1>, tile.kernel, tile.threads = 128 : i64
// CHECK: %[[QB:.*]] = "tile.program_id"() {dim = 0 : i64}
// CHECK: %[[BH:.*]] = "tile.program_id"() {dim = 1 : i64}
// CHECK: %[[QT:.*]] = "tile.alloc"() : () -> memref<32x64xf32>
// CHECK: %[[KT:.*]] = "tile.alloc"() : () -> memref<32x64xf32>
// CHECK: "tile.load"(%[[Q]], %[[QT]],
// CHECK-NEXT: "tile.rope"(%[[QT]], %{{.*}}) {layout = "rotate_half", rotary_dim = 64 : i64
// CHECK: arith.ceildivui
// CHECK: arith.minui
// CHECK: scf.for
// CHECK: "tile.load"(%[[K]], %[[KT]],
// CHECK-NEXT: "tile.rope"(%[[KT]],
// CHECK-NEXT: "tile.load"(%[[V]],
// CHECK-NEXT: "tile.mma"(%[[QT]], %[[KT]], %{{.*}}) {accumulate = false, transpose_b = true}
// CHECK-NEXT: "tile.mask"({{.*}}) {causal = true, kv_len = 100 : i64}
// CHECK-NEXT: "tile.softmax_update"({{.*}}) {scale = 1.250000e-01 : f64}
// CHECK-NEXT: "tile.mma"({{.*}}) {accumulate = true, transpose_b = false}
// CHECK: "tile.normalize"
// CHECK-NEXT: "tile.store"({{.*}}, %[[O]],
// CHECK-NOT: "attn.
func.func @rope_causal(%q: tensor<2x4x100x64xf32>, %k: tensor<2x4x100x64xf32>, %v: tensor<2x4x100x64xf32>) -> tensor<2x4x100x64xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<2x4x100x64xf32>, tensor<2x4x100x64xf32>, tensor<2x4x100x64xf32>) -> tensor<2x4x100x64xf32>
  return %o : tensor<2x4x100x64xf32>
}

// -----

// Without a mask every key block is visited; without RoPE nothing rotates.
// CHECK-LABEL: @plain
// CHECK-NOT: tile.rope
// CHECK-NOT: arith.ceildivui
// CHECK: "tile.mask"({{.*}}) {causal = false
func.func @plain(%q: tensor<1x2x64x64xf32>, %k: tensor<1x2x64x64xf32>, %v: tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32>
  return %o : tensor<1x2x64x64xf32>
}

// -----

// GQA: key/value head = head / (heads / kv heads).
// CHECK-LABEL: @gqa
// CHECK-SAME: memref<1x8x64x64xbf16>, %{{.*}}: memref<1x2x64x64xbf16>
// CHECK: %[[G:.*]] = arith.constant 4 : index
// CHECK: arith.divui %{{.*}}, %[[G]]
func.func @gqa(%q: tensor<1x8x64x64xbf16>, %k: tensor<1x2x64x64xbf16>, %v: tensor<1x2x64x64xbf16>) -> tensor<1x8x64x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<1x8x64x64xbf16>, tensor<1x2x64x64xbf16>, tensor<1x2x64x64xbf16>) -> tensor<1x8x64x64xbf16>
  return %o : tensor<1x8x64x64xbf16>
}

// -----

// Head dim 128 picks 16-row tiles so they fit 48 KiB of shared memory.
// CHECK-LABEL: @head_dim_128
// CHECK: tile.grid = array<i64: 4, 1, 1>
// CHECK: "tile.alloc"() : () -> memref<16x128xf32>
func.func @head_dim_128(%q: tensor<1x1x64x128xf32>, %k: tensor<1x1x64x128xf32>, %v: tensor<1x1x64x128xf32>) -> tensor<1x1x64x128xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<1x1x64x128xf32>, tensor<1x1x64x128xf32>, tensor<1x1x64x128xf32>) -> tensor<1x1x64x128xf32>
  return %o : tensor<1x1x64x128xf32>
}

// -----

// Functions without attention are left alone.
// CHECK-LABEL: @untouched
// CHECK: arith.addf
func.func @untouched(%a: f32) -> f32 {
  %b = arith.addf %a, %a : f32
  return %b : f32
}

// -----

// Every block: the inputs keep the function's argument order (here the gate
// comes first) and are named in tile.arg_names; tile.attention describes the
// program for the manifest. RoPE on q at explicit positions, on k at an
// offset. Scale is not last in "mods", so tile.score_mod applies it in order
// and the softmax's factor is 1; softcap (cap tanh(s / cap)), ALiBi (s -
// 2^(-8 (h + 1) / 4) |q - kv|) and the gate are tile.score_fn bodies (the
// gate's key block clamped into the table) and the document mask a
// tile.mask_fn body;
// masks follow the modifiers. The loop starts at the first key block the
// window reaches and stops at the diagonal.
// CHECK-LABEL: @everything
// CHECK-SAME: (%[[G:.*]]: memref<1x4x40x3xf32>, %[[Q:.*]]: memref<1x4x40x16xf32>, %[[K:.*]]: memref<1x2x40x16xf32>, %[[V:.*]]: memref<1x2x40x16xf32>, %[[QS:.*]]: memref<1x40xi32>, %[[KS:.*]]: memref<1x40xi32>, %[[QP:.*]]: memref<1x40xi32>, %[[O:.*]]: memref<1x4x40x16xf32>)
// CHECK-SAME: tile.arg_names = ["gate", "q", "k", "v", "q_segments", "k_segments", "q_positions", "out"]
// CHECK-SAME: tile.attention = {alibi = 8.000000e+00 : f64, causal = true, document = true, gate_block = 16 : i64, mods = ["scale", "softcap", "alibi", "gate"], rope = {k_offset = 7 : i64, layout = "rotate_half", q_positions = true, rotary_dim = 16 : i64, theta = 1.000000e+04 : f64}, scale = 1.250000e-01 : f64, softcap = 3.000000e+01 : f64, window = array<i64: 20, -1>}
// CHECK: %[[B:.*]] = arith.divui
// CHECK: %[[H:.*]] = arith.remui
// CHECK: %[[ROW:.*]] = arith.muli
// CHECK: "tile.load"(%[[Q]], %[[QT:.*]], %[[B]], %[[H]], %[[ROW]])
// CHECK-NEXT: "tile.rope_positions"(%[[QT]], %[[B]], %[[ROW]], %[[QP]]) {layout = "rotate_half", rotary_dim = 16 : i64, theta = 1.000000e+04 : f64}
// CHECK: %[[LEFT:.*]] = arith.constant 20 : index
// CHECK-NEXT: %[[FIRST:.*]] = arith.subi %[[ROW]], %[[LEFT]]
// CHECK-NEXT: %[[FIRST0:.*]] = arith.maxsi %[[FIRST]]
// CHECK-NEXT: %[[KSTART:.*]] = arith.divui %[[FIRST0]]
// CHECK-NEXT: scf.for %{{.*}} = %[[KSTART]] to
// CHECK: "tile.rope"(%{{.*}}, %{{.*}}) {layout = "rotate_half", offset = 7 : i64
// CHECK: "tile.mma"
// CHECK-NEXT: "tile.score_mod"(%[[S:.*]], %[[B]], %[[H]], %[[ROW]], %[[COL:.*]]) {mods = ["scale"], scale = 1.250000e-01 : f64}
// CHECK-NEXT: "tile.score_fn"(%[[S]], %[[B]], %[[H]], %[[ROW]], %[[COL]]) ({
// CHECK-NEXT: ^bb0(%[[CS:.*]]: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT: %[[CAP:.*]] = arith.constant 3.000000e+01 : f32
// CHECK-NEXT: %[[CT:.*]] = arith.divf %[[CS]], %[[CAP]] : f32
// CHECK-NEXT: %[[CH:.*]] = math.tanh %[[CT]] : f32
// CHECK-NEXT: %[[CY:.*]] = arith.mulf %[[CH]], %[[CAP]] : f32
// CHECK-NEXT: gpu.yield %[[CY]] : f32
// CHECK-NEXT: }) {seq_k = 40 : i64, seq_q = 40 : i64}
// CHECK-NEXT: "tile.score_fn"(%[[S]], %[[B]], %[[H]], %[[ROW]], %[[COL]]) ({
// CHECK-NEXT: ^bb0(%[[AS:.*]]: f32, %{{.*}}: index, %[[AH:.*]]: index, %[[AQ:.*]]: index, %[[AKV:.*]]: index):
// CHECK-NEXT: %[[A1:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[AH1:.*]] = arith.addi %[[AH]], %[[A1]] : index
// CHECK-NEXT: %[[AH64:.*]] = arith.index_cast %[[AH1]] : index to i64
// CHECK-NEXT: %[[AHF:.*]] = arith.uitofp %[[AH64]] : i64 to f32
// CHECK-NEXT: %[[AC:.*]] = arith.constant -2.000000e+00 : f32
// CHECK-NEXT: %[[AE:.*]] = arith.mulf %[[AHF]], %[[AC]] : f32
// CHECK-NEXT: %[[SLOPE:.*]] = math.exp2 %[[AE]] : f32
// CHECK-NEXT: %[[AQ64:.*]] = arith.index_cast %[[AQ]] : index to i64
// CHECK-NEXT: %[[AK64:.*]] = arith.index_cast %[[AKV]] : index to i64
// CHECK-NEXT: %[[AD:.*]] = arith.subi %[[AQ64]], %[[AK64]] : i64
// CHECK-NEXT: %[[ADF:.*]] = arith.sitofp %[[AD]] : i64 to f32
// CHECK-NEXT: %[[AA:.*]] = math.absf %[[ADF]] : f32
// CHECK-NEXT: %[[AP:.*]] = arith.mulf %[[AA]], %[[SLOPE]] : f32
// CHECK-NEXT: %[[AY:.*]] = arith.subf %[[AS]], %[[AP]] : f32
// CHECK-NEXT: gpu.yield %[[AY]] : f32
// CHECK-NEXT: }) {seq_k = 40 : i64, seq_q = 40 : i64}
// CHECK-NEXT: "tile.score_fn"(%[[S]], %[[B]], %[[H]], %[[ROW]], %[[COL]]) ({
// CHECK-NEXT: ^bb0(%[[GS:.*]]: f32, %[[GB:.*]]: index, %[[GH:.*]]: index, %[[GQ:.*]]: index, %[[GKV:.*]]: index):
// CHECK-NEXT: %[[GBLK:.*]] = arith.constant 16 : index
// CHECK-NEXT: %[[GJ:.*]] = arith.divui %[[GKV]], %[[GBLK]]
// CHECK-NEXT: %[[GLAST:.*]] = arith.constant 2 : index
// CHECK-NEXT: %[[GJC:.*]] = arith.minui %[[GJ]], %[[GLAST]]
// CHECK-NEXT: %[[GV:.*]] = memref.load %[[G]][%[[GB]], %[[GH]], %[[GQ]], %[[GJC]]] : memref<1x4x40x3xf32>
// CHECK-NEXT: %[[GY:.*]] = arith.addf %[[GS]], %[[GV]] : f32
// CHECK-NEXT: gpu.yield %[[GY]] : f32
// CHECK-NEXT: }) {seq_k = 40 : i64, seq_q = 40 : i64}
// CHECK-NEXT: "tile.mask"(%[[S]], %[[ROW]], %[[COL]]) {causal = true, kv_len = 40 : i64, window = array<i64: 20, -1>}
// CHECK-NEXT: "tile.mask_fn"(%[[S]], %[[B]], %[[H]], %[[ROW]], %[[COL]]) ({
// CHECK-NEXT: ^bb0(%[[DB:.*]]: index, %{{.*}}: index, %[[DQ:.*]]: index, %[[DKV:.*]]: index):
// CHECK-NEXT: %[[DQS:.*]] = memref.load %[[QS]][%[[DB]], %[[DQ]]] : memref<1x40xi32>
// CHECK-NEXT: %[[DKS:.*]] = memref.load %[[KS]][%[[DB]], %[[DKV]]] : memref<1x40xi32>
// CHECK-NEXT: %[[DEQ:.*]] = arith.cmpi eq, %[[DQS]], %[[DKS]] : i32
// CHECK-NEXT: gpu.yield %[[DEQ]] : i1
// CHECK-NEXT: }) {seq_k = 40 : i64, seq_q = 40 : i64}
// CHECK-NEXT: "tile.softmax_update"(%[[S]], {{.*}}) {scale = 1.000000e+00 : f64}
func.func @everything(%g: tensor<1x4x40x3xf32>, %q: tensor<1x4x40x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>, %qs: tensor<1x40xi32>, %ks: tensor<1x40xi32>, %qp: tensor<1x40xi32>) -> tensor<1x4x40x16xf32> {
  %o = "attn.fused"(%q, %k, %v, %g, %qs, %ks, %qp) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, window = array<i64: 20, -1>, alibi = 8.0 : f64, softcap = 30.0 : f64, gate_block = 16 : i64, mods = ["scale", "softcap", "alibi", "gate"], rope = {theta = 1.0e4 : f64, rotary_dim = 16 : i64, layout = "rotate_half", k_offset = 7 : i64}} : (tensor<1x4x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x4x40x3xf32>, tensor<1x40xi32>, tensor<1x40xi32>, tensor<1x40xi32>) -> tensor<1x4x40x16xf32>
  return %o : tensor<1x4x40x16xf32>
}

// -----

// A scale after the other modifiers folds into the softmax's exp2 factor
// (exactly: it is the last one); no tile.score_mod is left, softcap is a
// tile.score_fn body.
// CHECK-LABEL: @scale_last_folds
// CHECK-NOT: "tile.score_mod"
// CHECK: "tile.score_fn"
// CHECK: math.tanh
// CHECK: "tile.softmax_update"({{.*}}) {scale = 2.500000e-01 : f64}
func.func @scale_last_folds(%q: tensor<1x2x64x16xf32>, %k: tensor<1x2x64x16xf32>, %v: tensor<1x2x64x16xf32>) -> tensor<1x2x64x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = false, softcap = 20.0 : f64, mods = ["softcap", "scale"]} : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>) -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}

// -----

// A window bounded on the right skips the key blocks past row + bm + right;
// without a modifier there is no tile.score_mod.
// CHECK-LABEL: @window_right_bound
// CHECK-NOT: tile.score_mod
// CHECK: %[[LAST:.*]] = arith.addi
// CHECK-NEXT: %[[REACH:.*]] = arith.constant 5 : index
// CHECK-NEXT: %[[LASTR:.*]] = arith.addi %[[LAST]], %[[REACH]]
// CHECK-NEXT: %[[DIAG:.*]] = arith.ceildivui %[[LASTR]]
// CHECK-NEXT: %[[KEND:.*]] = arith.minui %[[DIAG]]
// CHECK-NEXT: scf.for %{{.*}} = %{{.*}} to %[[KEND]]
// CHECK-NOT: tile.score_mod
// CHECK: "tile.mask"({{.*}}) {causal = false, kv_len = 64 : i64, window = array<i64: -1, 5>}
func.func @window_right_bound(%q: tensor<1x2x64x16xf32>, %k: tensor<1x2x64x16xf32>, %v: tensor<1x2x64x16xf32>) -> tensor<1x2x64x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = false, window = array<i64: -1, 5>} : (tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>, tensor<1x2x64x16xf32>) -> tensor<1x2x64x16xf32>
  return %o : tensor<1x2x64x16xf32>
}

// -----

// rope.strategy (attn-fuse's rope-strategy) is copied into tile.attention's
// rope for the lowering to read; the tile program itself does not change.
// CHECK-LABEL: @rope_strategy_copied
// CHECK-SAME: rope = {layout = "rotate_half", rotary_dim = 16 : i64, strategy = "pre", theta = 1.000000e+04 : f64}
// CHECK: "tile.rope"
// CHECK: "tile.rope"
func.func @rope_strategy_copied(%q: tensor<1x2x64x16xbf16>, %k: tensor<1x2x64x16xbf16>, %v: tensor<1x2x64x16xbf16>) -> tensor<1x2x64x16xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", strategy = "pre"}} : (tensor<1x2x64x16xbf16>, tensor<1x2x64x16xbf16>, tensor<1x2x64x16xbf16>) -> tensor<1x2x64x16xbf16>
  return %o : tensor<1x2x64x16xbf16>
}
