// RUN: not attn-opt %s --split-input-file --lower-tile-to-hopper 2>&1 | FileCheck %s
// RUN: not attn-opt %s --split-input-file --lower-tile-to-mma 2>&1 | FileCheck %s --check-prefix=MMA
// RUN: attn-opt %s --split-input-file --lower-tile-to-hopper=fallback=true | FileCheck %s --check-prefix=FALLBACK

// Explicit RoPE positions (issue 28) in tile programs written by hand
// (attn-tile's, changed), which the tile verifier takes but the
// tensor-core kernels cannot read as written: located diagnostics at the
// tile kernel, or with fallback=true left to lower-tile-to-gpu.
// FALLBACK-COUNT-3: tile.kernel

// Positions of another length than q's rows.
// CHECK: error: no Hopper kernel for 'short': the Hopper kernel reads RoPE positions as i32 [batch, rows] (found 'q_positions')
// MMA: error: no mma.sync kernel for 'short': the mma.sync kernel reads RoPE positions as i32 [batch, rows] (found 'q_positions')
module {
  func.func @short(%arg0: memref<1x2x256x64xbf16>, %arg1: memref<1x2x256x64xbf16>, %arg2: memref<1x2x256x64xbf16>, %arg3: memref<1x300xi32>, %arg4: memref<1x2x256x64xbf16>) attributes {tile.arg_names = ["q", "k", "v", "q_positions", "out"], tile.attention = {causal = true, mods = ["scale"], rope = {layout = "rotate_half", q_positions = true, rotary_dim = 64 : i64, theta = 1.000000e+04 : f64}, scale = 1.250000e-01 : f64}, tile.grid = array<i64: 2, 2, 1>, tile.kernel, tile.threads = 384 : i64} {
    %0 = "tile.program_id"() {dim = 0 : i64} : () -> index
    %1 = "tile.program_id"() {dim = 1 : i64} : () -> index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c1_0 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c128_1 = arith.constant 128 : index
    %2 = arith.divui %1, %c2 : index
    %3 = arith.remui %1, %c2 : index
    %4 = arith.divui %3, %c1_0 : index
    %5 = arith.muli %0, %c128 : index
    %6 = "tile.alloc"() : () -> memref<128x64xf32>
    %7 = "tile.alloc"() : () -> memref<128x64xf32>
    %8 = "tile.alloc"() : () -> memref<128x64xf32>
    %9 = "tile.alloc"() : () -> memref<128x128xf32>
    %10 = "tile.alloc"() : () -> memref<128x64xf32>
    %11 = "tile.alloc"() : () -> memref<128xf32>
    %12 = "tile.alloc"() : () -> memref<128xf32>
    "tile.load"(%arg0, %6, %2, %3, %5) : (memref<1x2x256x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
    "tile.rope_positions"(%6, %2, %5, %arg3) {layout = "rotate_half", rotary_dim = 64 : i64, theta = 1.000000e+04 : f64} : (memref<128x64xf32>, index, index, memref<1x300xi32>) -> ()
    "tile.fill"(%10) {value = 0.000000e+00 : f32} : (memref<128x64xf32>) -> ()
    "tile.fill"(%11) {value = 0xFF800000 : f32} : (memref<128xf32>) -> ()
    "tile.fill"(%12) {value = 0.000000e+00 : f32} : (memref<128xf32>) -> ()
    %c2_2 = arith.constant 2 : index
    %13 = arith.addi %5, %c128 : index
    %14 = arith.ceildivui %13, %c128_1 : index
    %15 = arith.minui %14, %c2_2 : index
    scf.for %arg5 = %c0 to %15 step %c1 {
      %16 = arith.muli %arg5, %c128_1 : index
      "tile.load"(%arg1, %7, %2, %4, %16) : (memref<1x2x256x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.rope"(%7, %16) {layout = "rotate_half", rotary_dim = 64 : i64, theta = 1.000000e+04 : f64} : (memref<128x64xf32>, index) -> ()
      "tile.load"(%arg2, %8, %2, %4, %16) : (memref<1x2x256x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.mma"(%6, %7, %9) {accumulate = false, transpose_b = true} : (memref<128x64xf32>, memref<128x64xf32>, memref<128x128xf32>) -> ()
      "tile.mask"(%9, %5, %16) {causal = true, kv_len = 256 : i64} : (memref<128x128xf32>, index, index) -> ()
      "tile.softmax_update"(%9, %11, %12, %10) {scale = 1.250000e-01 : f64} : (memref<128x128xf32>, memref<128xf32>, memref<128xf32>, memref<128x64xf32>) -> ()
      "tile.mma"(%9, %8, %10) {accumulate = true, transpose_b = false} : (memref<128x128xf32>, memref<128x64xf32>, memref<128x64xf32>) -> ()
    }
    "tile.normalize"(%10, %12) : (memref<128x64xf32>, memref<128xf32>) -> ()
    "tile.store"(%10, %arg4, %2, %3, %5) : (memref<128x64xf32>, memref<1x2x256x64xbf16>, index, index, index) -> ()
    return
  }
}

// -----

// tile.rope_positions reads q_positions, but tile.attention's rope does not
// say so (the launch manifest would not either).
// CHECK: error: no Hopper kernel for 'unnamed': tile.attention's rope must name q_positions and k_positions exactly when tile.rope_positions reads them
// MMA: error: no mma.sync kernel for 'unnamed': tile.attention's rope must name q_positions and k_positions exactly when tile.rope_positions reads them
module {
  func.func @unnamed(%arg0: memref<1x2x256x64xbf16>, %arg1: memref<1x2x256x64xbf16>, %arg2: memref<1x2x256x64xbf16>, %arg3: memref<1x256xi32>, %arg4: memref<1x2x256x64xbf16>) attributes {tile.arg_names = ["q", "k", "v", "q_positions", "out"], tile.attention = {causal = true, mods = ["scale"], rope = {layout = "rotate_half", rotary_dim = 64 : i64, theta = 1.000000e+04 : f64}, scale = 1.250000e-01 : f64}, tile.grid = array<i64: 2, 2, 1>, tile.kernel, tile.threads = 384 : i64} {
    %0 = "tile.program_id"() {dim = 0 : i64} : () -> index
    %1 = "tile.program_id"() {dim = 1 : i64} : () -> index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c1_0 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c128_1 = arith.constant 128 : index
    %2 = arith.divui %1, %c2 : index
    %3 = arith.remui %1, %c2 : index
    %4 = arith.divui %3, %c1_0 : index
    %5 = arith.muli %0, %c128 : index
    %6 = "tile.alloc"() : () -> memref<128x64xf32>
    %7 = "tile.alloc"() : () -> memref<128x64xf32>
    %8 = "tile.alloc"() : () -> memref<128x64xf32>
    %9 = "tile.alloc"() : () -> memref<128x128xf32>
    %10 = "tile.alloc"() : () -> memref<128x64xf32>
    %11 = "tile.alloc"() : () -> memref<128xf32>
    %12 = "tile.alloc"() : () -> memref<128xf32>
    "tile.load"(%arg0, %6, %2, %3, %5) : (memref<1x2x256x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
    "tile.rope_positions"(%6, %2, %5, %arg3) {layout = "rotate_half", rotary_dim = 64 : i64, theta = 1.000000e+04 : f64} : (memref<128x64xf32>, index, index, memref<1x256xi32>) -> ()
    "tile.fill"(%10) {value = 0.000000e+00 : f32} : (memref<128x64xf32>) -> ()
    "tile.fill"(%11) {value = 0xFF800000 : f32} : (memref<128xf32>) -> ()
    "tile.fill"(%12) {value = 0.000000e+00 : f32} : (memref<128xf32>) -> ()
    %c2_2 = arith.constant 2 : index
    %13 = arith.addi %5, %c128 : index
    %14 = arith.ceildivui %13, %c128_1 : index
    %15 = arith.minui %14, %c2_2 : index
    scf.for %arg5 = %c0 to %15 step %c1 {
      %16 = arith.muli %arg5, %c128_1 : index
      "tile.load"(%arg1, %7, %2, %4, %16) : (memref<1x2x256x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.rope"(%7, %16) {layout = "rotate_half", rotary_dim = 64 : i64, theta = 1.000000e+04 : f64} : (memref<128x64xf32>, index) -> ()
      "tile.load"(%arg2, %8, %2, %4, %16) : (memref<1x2x256x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.mma"(%6, %7, %9) {accumulate = false, transpose_b = true} : (memref<128x64xf32>, memref<128x64xf32>, memref<128x128xf32>) -> ()
      "tile.mask"(%9, %5, %16) {causal = true, kv_len = 256 : i64} : (memref<128x128xf32>, index, index) -> ()
      "tile.softmax_update"(%9, %11, %12, %10) {scale = 1.250000e-01 : f64} : (memref<128x128xf32>, memref<128xf32>, memref<128xf32>, memref<128x64xf32>) -> ()
      "tile.mma"(%9, %8, %10) {accumulate = true, transpose_b = false} : (memref<128x128xf32>, memref<128x64xf32>, memref<128x64xf32>) -> ()
    }
    "tile.normalize"(%10, %12) : (memref<128x64xf32>, memref<128xf32>) -> ()
    "tile.store"(%10, %arg4, %2, %3, %5) : (memref<128x64xf32>, memref<1x2x256x64xbf16>, index, index, index) -> ()
    return
  }
}

// -----

// tile.attention's rope names k_positions, which no tile.rope_positions reads.
// CHECK: error: no Hopper kernel for 'extra': tile.attention's rope must name q_positions and k_positions exactly when tile.rope_positions reads them
// MMA: error: no mma.sync kernel for 'extra': tile.attention's rope must name q_positions and k_positions exactly when tile.rope_positions reads them
module {
  func.func @extra(%arg0: memref<1x2x256x64xbf16>, %arg1: memref<1x2x256x64xbf16>, %arg2: memref<1x2x256x64xbf16>, %arg3: memref<1x256xi32>, %arg4: memref<1x2x256x64xbf16>) attributes {tile.arg_names = ["q", "k", "v", "q_positions", "out"], tile.attention = {causal = true, mods = ["scale"], rope = {layout = "rotate_half", k_positions = true, q_positions = true, rotary_dim = 64 : i64, theta = 1.000000e+04 : f64}, scale = 1.250000e-01 : f64}, tile.grid = array<i64: 2, 2, 1>, tile.kernel, tile.threads = 384 : i64} {
    %0 = "tile.program_id"() {dim = 0 : i64} : () -> index
    %1 = "tile.program_id"() {dim = 1 : i64} : () -> index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c1_0 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c128_1 = arith.constant 128 : index
    %2 = arith.divui %1, %c2 : index
    %3 = arith.remui %1, %c2 : index
    %4 = arith.divui %3, %c1_0 : index
    %5 = arith.muli %0, %c128 : index
    %6 = "tile.alloc"() : () -> memref<128x64xf32>
    %7 = "tile.alloc"() : () -> memref<128x64xf32>
    %8 = "tile.alloc"() : () -> memref<128x64xf32>
    %9 = "tile.alloc"() : () -> memref<128x128xf32>
    %10 = "tile.alloc"() : () -> memref<128x64xf32>
    %11 = "tile.alloc"() : () -> memref<128xf32>
    %12 = "tile.alloc"() : () -> memref<128xf32>
    "tile.load"(%arg0, %6, %2, %3, %5) : (memref<1x2x256x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
    "tile.rope_positions"(%6, %2, %5, %arg3) {layout = "rotate_half", rotary_dim = 64 : i64, theta = 1.000000e+04 : f64} : (memref<128x64xf32>, index, index, memref<1x256xi32>) -> ()
    "tile.fill"(%10) {value = 0.000000e+00 : f32} : (memref<128x64xf32>) -> ()
    "tile.fill"(%11) {value = 0xFF800000 : f32} : (memref<128xf32>) -> ()
    "tile.fill"(%12) {value = 0.000000e+00 : f32} : (memref<128xf32>) -> ()
    %c2_2 = arith.constant 2 : index
    %13 = arith.addi %5, %c128 : index
    %14 = arith.ceildivui %13, %c128_1 : index
    %15 = arith.minui %14, %c2_2 : index
    scf.for %arg5 = %c0 to %15 step %c1 {
      %16 = arith.muli %arg5, %c128_1 : index
      "tile.load"(%arg1, %7, %2, %4, %16) : (memref<1x2x256x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.rope"(%7, %16) {layout = "rotate_half", rotary_dim = 64 : i64, theta = 1.000000e+04 : f64} : (memref<128x64xf32>, index) -> ()
      "tile.load"(%arg2, %8, %2, %4, %16) : (memref<1x2x256x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.mma"(%6, %7, %9) {accumulate = false, transpose_b = true} : (memref<128x64xf32>, memref<128x64xf32>, memref<128x128xf32>) -> ()
      "tile.mask"(%9, %5, %16) {causal = true, kv_len = 256 : i64} : (memref<128x128xf32>, index, index) -> ()
      "tile.softmax_update"(%9, %11, %12, %10) {scale = 1.250000e-01 : f64} : (memref<128x128xf32>, memref<128xf32>, memref<128xf32>, memref<128x64xf32>) -> ()
      "tile.mma"(%9, %8, %10) {accumulate = true, transpose_b = false} : (memref<128x128xf32>, memref<128x64xf32>, memref<128x64xf32>) -> ()
    }
    "tile.normalize"(%10, %12) : (memref<128x64xf32>, memref<128xf32>) -> ()
    "tile.store"(%10, %arg4, %2, %3, %5) : (memref<128x64xf32>, memref<1x2x256x64xbf16>, index, index, index) -> ()
    return
  }
}
