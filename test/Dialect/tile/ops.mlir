// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: %mlir_opt %s --irdl-file=%attn_src/dialects/tile/tile.irdl.mlir | FileCheck %s

// Every tile op round-trips in its valid forms; stock mlir-opt with the same
// IRDL accepts and prints them alike.

// CHECK-LABEL: @program_id
// CHECK: "tile.program_id"() {dim = 0 : i64} : () -> index
// CHECK: "tile.program_id"() {dim = 1 : i64} : () -> index
// CHECK: "tile.program_id"() {dim = 2 : i32} : () -> index
func.func @program_id() -> (index, index, index) {
  %x = "tile.program_id"() {dim = 0 : i64} : () -> index
  %y = "tile.program_id"() {dim = 1 : i64} : () -> index
  %z = "tile.program_id"() {dim = 2 : i32} : () -> index
  return %x, %y, %z : index, index, index
}

// CHECK-LABEL: @alloc_fill
// CHECK: %[[T:.*]] = "tile.alloc"() : () -> memref<64x128xf32>
// CHECK: %[[R:.*]] = "tile.alloc"() : () -> memref<64xf32>
// CHECK: "tile.fill"(%[[T]]) {value = 0.000000e+00 : f32} : (memref<64x128xf32>) -> ()
// CHECK: "tile.fill"(%[[R]]) {value = 0xFF800000 : f32} : (memref<64xf32>) -> ()
func.func @alloc_fill() {
  %t = "tile.alloc"() : () -> memref<64x128xf32>
  %r = "tile.alloc"() : () -> memref<64xf32>
  "tile.fill"(%t) {value = 0.0 : f32} : (memref<64x128xf32>) -> ()
  "tile.fill"(%r) {value = 0xFF800000 : f32} : (memref<64xf32>) -> ()
  return
}

// CHECK-LABEL: @load_store_f32
// CHECK: "tile.load"(%{{.*}}, %[[T:.*]], %{{.*}}, %{{.*}}, %{{.*}}) : (memref<2x8x128x64xf32>, memref<32x64xf32>, index, index, index) -> ()
// CHECK: "tile.store"(%[[T]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<32x64xf32>, memref<2x8x128x64xf32>, index, index, index) -> ()
func.func @load_store_f32(%src: memref<2x8x128x64xf32>, %dst: memref<2x8x128x64xf32>, %b: index, %h: index, %row: index) {
  %t = "tile.alloc"() : () -> memref<32x64xf32>
  "tile.load"(%src, %t, %b, %h, %row) : (memref<2x8x128x64xf32>, memref<32x64xf32>, index, index, index) -> ()
  "tile.store"(%t, %dst, %b, %h, %row) : (memref<32x64xf32>, memref<2x8x128x64xf32>, index, index, index) -> ()
  return
}

// Half-precision tensors: tiles stay f32, the copy converts.
// CHECK-LABEL: @load_store_f16_bf16
// CHECK: "tile.load"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<1x4x16x64xf16>, memref<16x64xf32>, index, index, index) -> ()
// CHECK: "tile.store"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<16x64xf32>, memref<1x4x16x64xbf16>, index, index, index) -> ()
func.func @load_store_f16_bf16(%src: memref<1x4x16x64xf16>, %dst: memref<1x4x16x64xbf16>, %i: index) {
  %t = "tile.alloc"() : () -> memref<16x64xf32>
  "tile.load"(%src, %t, %i, %i, %i) : (memref<1x4x16x64xf16>, memref<16x64xf32>, index, index, index) -> ()
  "tile.store"(%t, %dst, %i, %i, %i) : (memref<16x64xf32>, memref<1x4x16x64xbf16>, index, index, index) -> ()
  return
}

// A matrix is indexed (row, col): a window of the tile's size, any width
// (the GEMM kernels attn-tile makes from linalg.matmul).
// CHECK-LABEL: @load_store_matrix
// CHECK: "tile.load"(%{{.*}}, %[[T:.*]], %{{.*}}, %{{.*}}) : (memref<130x50xbf16>, memref<64x32xf32>, index, index) -> ()
// CHECK: "tile.store"(%[[T]], %{{.*}}, %{{.*}}, %{{.*}}) : (memref<64x32xf32>, memref<130x70xf32>, index, index) -> ()
func.func @load_store_matrix(%a: memref<130x50xbf16>, %c: memref<130x70xf32>, %row: index, %col: index) {
  %t = "tile.alloc"() : () -> memref<64x32xf32>
  "tile.load"(%a, %t, %row, %col) : (memref<130x50xbf16>, memref<64x32xf32>, index, index) -> ()
  "tile.store"(%t, %c, %row, %col) : (memref<64x32xf32>, memref<130x70xf32>, index, index) -> ()
  return
}

// A GEMM kernel's description (attn-tile writes it for linalg.matmul).
// CHECK-LABEL: @matmul_kernel
// CHECK-SAME: tile.matmul = {accumulate = true, block_k = 32 : i64, block_m = 64 : i64, block_n = 64 : i64, k = 50 : i64, m = 130 : i64, n = 70 : i64}
func.func @matmul_kernel(%a: memref<130x50xbf16>, %b: memref<50x70xbf16>, %c: memref<130x70xbf16>) attributes {tile.kernel, tile.grid = array<i64: 3, 2, 1>, tile.threads = 128 : i64, tile.arg_names = ["a", "b", "c"], tile.matmul = {m = 130 : i64, n = 70 : i64, k = 50 : i64, block_m = 64 : i64, block_n = 64 : i64, block_k = 32 : i64, accumulate = true}} {
  return
}

// CHECK-LABEL: @rope_layouts
// CHECK: "tile.rope"(%{{.*}}, %{{.*}}) {layout = "rotate_half", rotary_dim = 128 : i64, theta = 1.000000e+04 : f64} : (memref<64x128xf32>, index) -> ()
// CHECK: "tile.rope"(%{{.*}}, %{{.*}}) {layout = "interleaved", rotary_dim = 128 : i64, theta = 1.000000e+04 : f64} : (memref<64x128xf32>, index) -> ()
func.func @rope_layouts(%t: memref<64x128xf32>, %pos: index) {
  "tile.rope"(%t, %pos) {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"} : (memref<64x128xf32>, index) -> ()
  "tile.rope"(%t, %pos) {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "interleaved"} : (memref<64x128xf32>, index) -> ()
  return
}

// CHECK-LABEL: @rope_partial_rotary_dim
// CHECK: "tile.rope"(%{{.*}}, %{{.*}}) {layout = "interleaved", rotary_dim = 32 : i64, theta = 5.000000e+05 : f64} : (memref<64x128xf32>, index) -> ()
func.func @rope_partial_rotary_dim(%t: memref<64x128xf32>, %pos: index) {
  "tile.rope"(%t, %pos) {theta = 500000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved"} : (memref<64x128xf32>, index) -> ()
  return
}

// s = q k^T, then acc += p v.
// CHECK-LABEL: @mma_forms
// CHECK: "tile.mma"(%{{.*}}, %{{.*}}, %{{.*}}) {accumulate = false, transpose_b = true} : (memref<64x128xf32>, memref<32x128xf32>, memref<64x32xf32>) -> ()
// CHECK: "tile.mma"(%{{.*}}, %{{.*}}, %{{.*}}) {accumulate = true, transpose_b = false} : (memref<64x32xf32>, memref<32x96xf32>, memref<64x96xf32>) -> ()
func.func @mma_forms(%q: memref<64x128xf32>, %k: memref<32x128xf32>, %s: memref<64x32xf32>, %v: memref<32x96xf32>, %acc: memref<64x96xf32>) {
  "tile.mma"(%q, %k, %s) {transpose_b = true, accumulate = false} : (memref<64x128xf32>, memref<32x128xf32>, memref<64x32xf32>) -> ()
  "tile.mma"(%s, %v, %acc) {transpose_b = false, accumulate = true} : (memref<64x32xf32>, memref<32x96xf32>, memref<64x96xf32>) -> ()
  return
}

// CHECK-LABEL: @mask_forms
// CHECK: "tile.mask"(%{{.*}}, %{{.*}}, %{{.*}}) {causal = true, kv_len = 1000 : i64} : (memref<64x32xf32>, index, index) -> ()
// CHECK: "tile.mask"(%{{.*}}, %{{.*}}, %{{.*}}) {causal = false, kv_len = 1 : i64} : (memref<64x32xf32>, index, index) -> ()
func.func @mask_forms(%s: memref<64x32xf32>, %row: index, %col: index) {
  "tile.mask"(%s, %row, %col) {causal = true, kv_len = 1000 : i64} : (memref<64x32xf32>, index, index) -> ()
  "tile.mask"(%s, %row, %col) {causal = false, kv_len = 1 : i64} : (memref<64x32xf32>, index, index) -> ()
  return
}

// CHECK-LABEL: @softmax_update_normalize
// CHECK: "tile.softmax_update"(%[[S:.*]], %[[M:.*]], %[[L:.*]], %[[A:.*]]) {scale = 1.250000e-01 : f64} : (memref<64x32xf32>, memref<64xf32>, memref<64xf32>, memref<64x128xf32>) -> ()
// CHECK: "tile.normalize"(%[[A]], %[[L]]) : (memref<64x128xf32>, memref<64xf32>) -> ()
func.func @softmax_update_normalize(%s: memref<64x32xf32>, %m: memref<64xf32>, %l: memref<64xf32>, %acc: memref<64x128xf32>) {
  "tile.softmax_update"(%s, %m, %l, %acc) {scale = 0.125 : f64} : (memref<64x32xf32>, memref<64xf32>, memref<64xf32>, memref<64x128xf32>) -> ()
  "tile.normalize"(%acc, %l) : (memref<64x128xf32>, memref<64xf32>) -> ()
  return
}

// A whole kernel as attn-tile writes it (GQA 8/2 heads, causal, RoPE).
// CHECK-LABEL: @kernel
// CHECK-SAME: tile.grid = array<i64: 2, 8, 1>
// CHECK: %[[QB:.*]] = "tile.program_id"() {dim = 0 : i64}
// CHECK: %[[QT:.*]] = "tile.alloc"() : () -> memref<16x64xf32>
// CHECK: "tile.load"(%{{.*}}, %[[QT]],
// CHECK: "tile.rope"(%[[QT]],
// CHECK: scf.for
// CHECK: "tile.mma"(%[[QT]], %{{.*}}, %[[ST:.*]]) {accumulate = false, transpose_b = true}
// CHECK: "tile.mask"(%[[ST]],
// CHECK: "tile.softmax_update"(%[[ST]],
// CHECK: "tile.mma"(%[[ST]], %{{.*}}, %[[ACC:.*]]) {accumulate = true, transpose_b = false}
// CHECK: "tile.normalize"(%[[ACC]],
// CHECK: "tile.store"(%[[ACC]],
func.func @kernel(%q: memref<1x8x32x64xf16>, %k: memref<1x2x32x64xf16>, %v: memref<1x2x32x64xf16>, %out: memref<1x8x32x64xf16>) attributes {tile.kernel, tile.grid = array<i64: 2, 8, 1>, tile.threads = 128 : i64} {
  %qb = "tile.program_id"() {dim = 0 : i64} : () -> index
  %bh = "tile.program_id"() {dim = 1 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %heads = arith.constant 8 : index
  %group = arith.constant 4 : index
  %bm = arith.constant 16 : index
  %bn = arith.constant 16 : index
  %nkb = arith.constant 2 : index
  %b = arith.divui %bh, %heads : index
  %h = arith.remui %bh, %heads : index
  %kh = arith.divui %h, %group : index
  %row = arith.muli %qb, %bm : index
  %qt = "tile.alloc"() : () -> memref<16x64xf32>
  %kt = "tile.alloc"() : () -> memref<16x64xf32>
  %vt = "tile.alloc"() : () -> memref<16x64xf32>
  %st = "tile.alloc"() : () -> memref<16x16xf32>
  %acc = "tile.alloc"() : () -> memref<16x64xf32>
  %m = "tile.alloc"() : () -> memref<16xf32>
  %l = "tile.alloc"() : () -> memref<16xf32>
  "tile.load"(%q, %qt, %b, %h, %row) : (memref<1x8x32x64xf16>, memref<16x64xf32>, index, index, index) -> ()
  "tile.rope"(%qt, %row) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (memref<16x64xf32>, index) -> ()
  "tile.fill"(%acc) {value = 0.0 : f32} : (memref<16x64xf32>) -> ()
  "tile.fill"(%m) {value = 0xFF800000 : f32} : (memref<16xf32>) -> ()
  "tile.fill"(%l) {value = 0.0 : f32} : (memref<16xf32>) -> ()
  scf.for %j = %c0 to %nkb step %c1 {
    %col = arith.muli %j, %bn : index
    "tile.load"(%k, %kt, %b, %kh, %col) : (memref<1x2x32x64xf16>, memref<16x64xf32>, index, index, index) -> ()
    "tile.rope"(%kt, %col) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (memref<16x64xf32>, index) -> ()
    "tile.load"(%v, %vt, %b, %kh, %col) : (memref<1x2x32x64xf16>, memref<16x64xf32>, index, index, index) -> ()
    "tile.mma"(%qt, %kt, %st) {transpose_b = true, accumulate = false} : (memref<16x64xf32>, memref<16x64xf32>, memref<16x16xf32>) -> ()
    "tile.mask"(%st, %row, %col) {causal = true, kv_len = 32 : i64} : (memref<16x16xf32>, index, index) -> ()
    "tile.softmax_update"(%st, %m, %l, %acc) {scale = 0.125 : f64} : (memref<16x16xf32>, memref<16xf32>, memref<16xf32>, memref<16x64xf32>) -> ()
    "tile.mma"(%st, %vt, %acc) {transpose_b = false, accumulate = true} : (memref<16x16xf32>, memref<16x64xf32>, memref<16x64xf32>) -> ()
  }
  "tile.normalize"(%acc, %l) : (memref<16x64xf32>, memref<16xf32>) -> ()
  "tile.store"(%acc, %out, %b, %h, %row) : (memref<16x64xf32>, memref<1x8x32x64xf16>, index, index, index) -> ()
  return
}

// RoPE at an offset and at explicit positions (row + r of batch b).
// CHECK-LABEL: @rope_offset_positions
// CHECK: "tile.rope"(%{{.*}}, %{{.*}}) {layout = "rotate_half", offset = 100 : i64, rotary_dim = 64 : i64, theta = 1.000000e+04 : f64} : (memref<16x64xf32>, index) -> ()
// CHECK: "tile.rope_positions"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {layout = "interleaved", rotary_dim = 32 : i64, theta = 1.000000e+04 : f64} : (memref<16x64xf32>, index, index, memref<2x100xi32>) -> ()
func.func @rope_offset_positions(%t: memref<16x64xf32>, %b: index, %row: index, %pos: memref<2x100xi32>) {
  "tile.rope"(%t, %row) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half", offset = 100 : i64} : (memref<16x64xf32>, index) -> ()
  "tile.rope_positions"(%t, %b, %row, %pos) {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved"} : (memref<16x64xf32>, index, index, memref<2x100xi32>) -> ()
  return
}

// A window mask; the document mask as a tile.mask_fn body (as attn-tile
// writes it), of (b, h, q, kv), reading captured memrefs.
// CHECK-LABEL: @mask_window_document
// CHECK: "tile.mask"(%{{.*}}, %{{.*}}, %{{.*}}) {causal = false, kv_len = 100 : i64, window = array<i64: 16, -1>} : (memref<16x32xf32>, index, index) -> ()
// CHECK: "tile.mask_fn"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK-NEXT: ^bb0(%[[B:.*]]: index, %{{.*}}: index, %[[Q:.*]]: index, %[[KV:.*]]: index):
// CHECK-NEXT: memref.load %{{.*}}[%[[B]], %[[Q]]] : memref<2x80xi32>
// CHECK-NEXT: memref.load %{{.*}}[%[[B]], %[[KV]]] : memref<2x100xi32>
// CHECK-NEXT: arith.cmpi eq
// CHECK-NEXT: gpu.yield %{{.*}} : i1
// CHECK-NEXT: }) {seq_k = 100 : i64, seq_q = 80 : i64} : (memref<16x32xf32>, index, index, index, index) -> ()
func.func @mask_window_document(%s: memref<16x32xf32>, %b: index, %h: index, %row: index, %col: index, %qs: memref<2x80xi32>, %ks: memref<2x100xi32>) {
  "tile.mask"(%s, %row, %col) {causal = false, kv_len = 100 : i64, window = array<i64: 16, -1>} : (memref<16x32xf32>, index, index) -> ()
  "tile.mask_fn"(%s, %b, %h, %row, %col) ({
  ^bb0(%bb: index, %hh: index, %q: index, %kv: index):
    %x = memref.load %qs[%bb, %q] : memref<2x80xi32>
    %y = memref.load %ks[%bb, %kv] : memref<2x100xi32>
    %e = arith.cmpi eq, %x, %y : i32
    gpu.yield %e : i1
  }) {seq_q = 80 : i64, seq_k = 100 : i64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// Named score modifiers in order; the gate as a tile.score_fn body.
// CHECK-LABEL: @score_mod_forms
// CHECK: "tile.score_mod"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {mods = ["softcap"], softcap = 3.000000e+01 : f64} : (memref<16x32xf32>, index, index, index, index) -> ()
// CHECK: "tile.score_mod"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {alibi = 8.000000e+00 : f64, heads = 8 : i64, mods = ["scale", "softcap", "alibi"], scale = 1.250000e-01 : f64, softcap = 3.000000e+01 : f64} : (memref<16x32xf32>, index, index, index, index) -> ()
// CHECK: "tile.score_fn"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK: memref.load %{{.*}} : memref<2x8x80x2xf32>
// CHECK: gpu.yield %{{.*}} : f32
// CHECK-NEXT: }) {seq_k = 100 : i64, seq_q = 80 : i64}
func.func @score_mod_forms(%s: memref<16x32xf32>, %b: index, %h: index, %row: index, %col: index, %g: memref<2x8x80x2xf32>) {
  "tile.score_mod"(%s, %b, %h, %row, %col) {mods = ["softcap"], softcap = 30.0 : f64} : (memref<16x32xf32>, index, index, index, index) -> ()
  "tile.score_mod"(%s, %b, %h, %row, %col) {mods = ["scale", "softcap", "alibi"], scale = 0.125 : f64, softcap = 30.0 : f64, alibi = 8.0 : f64, heads = 8 : i64} : (memref<16x32xf32>, index, index, index, index) -> ()
  "tile.score_fn"(%s, %b, %h, %row, %col) ({
  ^bb0(%x: f32, %bb: index, %hh: index, %q: index, %kv: index):
    %c64 = arith.constant 64 : index
    %c1 = arith.constant 1 : index
    %blk = arith.divui %kv, %c64 : index
    %j = arith.minui %blk, %c1 : index
    %gv = memref.load %g[%bb, %hh, %q, %j] : memref<2x8x80x2xf32>
    %y = arith.addf %x, %gv : f32
    gpu.yield %y : f32
  }) {seq_q = 80 : i64, seq_k = 100 : i64} : (memref<16x32xf32>, index, index, index, index) -> ()
  return
}

// f64 tiles, the tiles of f64 programs (the CPU path's float64 programs):
// an f64 tensor loads into them, and a score body takes an f64 score.
// CHECK-LABEL: @f64_tiles
// CHECK: "tile.load"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<1x2x16x8xf64>, memref<16x8xf64>, index, index, index) -> ()
// CHECK: "tile.mma"(%{{.*}}, %{{.*}}, %{{.*}}) {accumulate = false, transpose_b = true} : (memref<16x8xf64>, memref<16x8xf64>, memref<16x16xf64>) -> ()
// CHECK: ^bb0(%{{.*}}: f64, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK: "tile.softmax_update"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {scale = 1.250000e-01 : f64} : (memref<16x16xf64>, memref<16xf64>, memref<16xf64>, memref<16x8xf64>) -> ()
func.func @f64_tiles(%src: memref<1x2x16x8xf64>, %q: memref<16x8xf64>, %k: memref<16x8xf64>, %s: memref<16x16xf64>, %m: memref<16xf64>, %l: memref<16xf64>, %acc: memref<16x8xf64>, %i: index) {
  "tile.load"(%src, %q, %i, %i, %i) : (memref<1x2x16x8xf64>, memref<16x8xf64>, index, index, index) -> ()
  "tile.mma"(%q, %k, %s) {transpose_b = true, accumulate = false} : (memref<16x8xf64>, memref<16x8xf64>, memref<16x16xf64>) -> ()
  "tile.score_fn"(%s, %i, %i, %i, %i) ({
  ^bb0(%x: f64, %b: index, %h: index, %r: index, %c: index):
    %t = math.tanh %x : f64
    gpu.yield %t : f64
  }) {seq_q = 16 : i64, seq_k = 16 : i64} : (memref<16x16xf64>, index, index, index, index) -> ()
  "tile.softmax_update"(%s, %m, %l, %acc) {scale = 0.125 : f64} : (memref<16x16xf64>, memref<16xf64>, memref<16xf64>, memref<16x8xf64>) -> ()
  return
}
