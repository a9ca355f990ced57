// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: %mlir_opt %s --irdl-file=%attn_src/dialects/tile/tile.irdl.mlir | FileCheck %s

// The backward's tile ops and attributes (issue 29) round-trip in their
// valid forms; stock mlir-opt with the same IRDL accepts them alike.

// A [B, H, N] tensor with a rank-1 tile, indexed (batch, head, row): the
// forward's log-sum-exp and the backward's D.
// CHECK-LABEL: @load_store_rows
// CHECK: "tile.load"(%{{.*}}, %[[T:.*]], %{{.*}}, %{{.*}}, %{{.*}}) : (memref<2x8x100xf32>, memref<32xf32>, index, index, index) -> ()
// CHECK: "tile.store"(%[[T]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<32xf32>, memref<2x8x100xf32>, index, index, index) -> ()
func.func @load_store_rows(%lse: memref<2x8x100xf32>, %b: index, %h: index, %row: index) {
  %t = "tile.alloc"() : () -> memref<32xf32>
  "tile.load"(%lse, %t, %b, %h, %row) : (memref<2x8x100xf32>, memref<32xf32>, index, index, index) -> ()
  "tile.store"(%t, %lse, %b, %h, %row) : (memref<32xf32>, memref<2x8x100xf32>, index, index, index) -> ()
  return
}

// CHECK-LABEL: @rows
// CHECK: "tile.row_lse"(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<32xf32>, memref<32xf32>, memref<32xf32>) -> ()
// CHECK: "tile.row_dot"(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<32x64xf32>, memref<32x64xf32>, memref<32xf32>) -> ()
// CHECK: "tile.exp_lse"(%{{.*}}, %{{.*}}) {scale = 1.250000e-01 : f64} : (memref<32x16xf32>, memref<32xf32>) -> ()
// CHECK: "tile.ds"(%{{.*}}, %{{.*}}, %{{.*}}) {scale = 1.000000e+00 : f64} : (memref<32x16xf32>, memref<32x16xf32>, memref<32xf32>) -> ()
func.func @rows(%m: memref<32xf32>, %l: memref<32xf32>, %lse: memref<32xf32>, %o: memref<32x64xf32>, %do: memref<32x64xf32>, %s: memref<32x16xf32>, %dp: memref<32x16xf32>) {
  "tile.row_lse"(%m, %l, %lse) : (memref<32xf32>, memref<32xf32>, memref<32xf32>) -> ()
  "tile.row_dot"(%do, %o, %lse) : (memref<32x64xf32>, memref<32x64xf32>, memref<32xf32>) -> ()
  "tile.exp_lse"(%s, %lse) {scale = 0.125 : f64} : (memref<32x16xf32>, memref<32xf32>) -> ()
  "tile.ds"(%s, %dp, %lse) {scale = 1.0 : f64} : (memref<32x16xf32>, memref<32x16xf32>, memref<32xf32>) -> ()
  return
}

// dV += P^T dO: a is K x M under transpose_a; both transposes at once.
// CHECK-LABEL: @mma_transpose_a
// CHECK: "tile.mma"(%{{.*}}, %{{.*}}, %{{.*}}) {accumulate = true, transpose_a = true, transpose_b = false} : (memref<32x16xf32>, memref<32x64xf32>, memref<16x64xf32>) -> ()
// CHECK: "tile.mma"(%{{.*}}, %{{.*}}, %{{.*}}) {accumulate = false, transpose_a = true, transpose_b = true} : (memref<32x16xf32>, memref<64x32xf32>, memref<16x64xf32>) -> ()
// CHECK: "tile.mma"(%{{.*}}, %{{.*}}, %{{.*}}) {accumulate = false, transpose_a = false, transpose_b = false} : (memref<16x32xf32>, memref<32x64xf32>, memref<16x64xf32>) -> ()
func.func @mma_transpose_a(%p: memref<32x16xf32>, %do: memref<32x64xf32>, %dot: memref<64x32xf32>, %dv: memref<16x64xf32>, %a: memref<16x32xf32>) {
  "tile.mma"(%p, %do, %dv) {transpose_a = true, transpose_b = false, accumulate = true} : (memref<32x16xf32>, memref<32x64xf32>, memref<16x64xf32>) -> ()
  "tile.mma"(%p, %dot, %dv) {transpose_a = true, transpose_b = true, accumulate = false} : (memref<32x16xf32>, memref<64x32xf32>, memref<16x64xf32>) -> ()
  "tile.mma"(%a, %do, %dv) {transpose_a = false, transpose_b = false, accumulate = false} : (memref<16x32xf32>, memref<32x64xf32>, memref<16x64xf32>) -> ()
  return
}

// CHECK-LABEL: @rope_inverse
// CHECK: "tile.rope"(%{{.*}}, %{{.*}}) {inverse = true, layout = "rotate_half", offset = 7 : i64, rotary_dim = 64 : i64, theta = 1.000000e+04 : f64} : (memref<16x64xf32>, index) -> ()
// CHECK: "tile.rope_positions"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {inverse = true, layout = "interleaved", rotary_dim = 32 : i64, theta = 5.000000e+05 : f64} : (memref<16x64xf32>, index, index, memref<2x100xi32>) -> ()
// CHECK: "tile.rope"(%{{.*}}, %{{.*}}) {inverse = false, layout = "rotate_half", rotary_dim = 64 : i64, theta = 1.000000e+04 : f64} : (memref<16x64xf32>, index) -> ()
func.func @rope_inverse(%t: memref<16x64xf32>, %i: index, %pos: memref<2x100xi32>) {
  "tile.rope"(%t, %i) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half", offset = 7 : i64, inverse = true} : (memref<16x64xf32>, index) -> ()
  "tile.rope_positions"(%t, %i, %i, %pos) {theta = 500000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved", inverse = true} : (memref<16x64xf32>, index, index, memref<2x100xi32>) -> ()
  "tile.rope"(%t, %i) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half", inverse = false} : (memref<16x64xf32>, index) -> ()
  return
}

// The derivative of softcap's body, cap tanh(s / cap): 1 - tanh^2(s / cap),
// with a capture read as tile.score_fn reads it.
// CHECK-LABEL: @score_fn_grad
// CHECK: "tile.score_fn_grad"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK: math.tanh
// CHECK: memref.load %{{.*}} : memref<2x8x80x2xf32>
// CHECK: gpu.yield %{{.*}} : f32
// CHECK-NEXT: }) {seq_k = 100 : i64, seq_q = 80 : i64} : (memref<16x32xf32>, memref<16x32xf32>, index, index, index, index) -> ()
func.func @score_fn_grad(%ds: memref<16x32xf32>, %s: memref<16x32xf32>, %b: index, %h: index, %row: index, %col: index, %g: memref<2x8x80x2xf32>) {
  "tile.score_fn_grad"(%ds, %s, %b, %h, %row, %col) ({
  ^bb0(%x: f32, %bb: index, %hh: index, %q: index, %kv: index):
    %inv = arith.constant 0.0333333 : f32
    %one = arith.constant 1.0 : f32
    %u = arith.mulf %x, %inv : f32
    %t = math.tanh %u : f32
    %t2 = arith.mulf %t, %t : f32
    %d = arith.subf %one, %t2 : f32
    %c0 = arith.constant 0 : index
    %gv = memref.load %g[%bb, %hh, %q, %c0] : memref<2x8x80x2xf32>
    %y = arith.mulf %d, %gv : f32
    gpu.yield %y : f32
  }) {seq_q = 80 : i64, seq_k = 100 : i64} : (memref<16x32xf32>, memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// Gradients into captured tensors: tile.clear zeroes a buffer of any rank;
// tile.capture_grad's body yields the derivative, then the buffer's
// indices.
// CHECK-LABEL: func.func @capture_grad_ops
// CHECK: "tile.clear"(%arg1) : (memref<2x8x3xf32>) -> ()
// CHECK: "tile.capture_grad"(%arg0, %arg0, %arg1, %arg2, %arg2, %arg2, %arg2)
// CHECK: gpu.yield %{{.*}}, %arg4, %arg5, %{{.*}} : f32, index, index, index
// CHECK: {scale = 2.000000e+00 : f64, seq_k = 32 : i64, seq_q = 16 : i64}
func.func @capture_grad_ops(%ds: memref<16x32xf32>, %g: memref<2x8x3xf32>, %i: index) {
  "tile.clear"(%g) : (memref<2x8x3xf32>) -> ()
  "tile.capture_grad"(%ds, %ds, %g, %i, %i, %i, %i) ({
  ^bb0(%s: f32, %b: index, %h: index, %q: index, %kv: index):
    %c8 = arith.constant 8 : index
    %blk = arith.divui %kv, %c8 : index
    %one = arith.constant 1.0 : f32
    gpu.yield %one, %b, %h, %blk : f32, index, index, index
  }) {seq_q = 16 : i64, seq_k = 32 : i64, scale = 2.0 : f64} : (memref<16x32xf32>, memref<16x32xf32>, memref<2x8x3xf32>, index, index, index, index) -> ()
  return
}
