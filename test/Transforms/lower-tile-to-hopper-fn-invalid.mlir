// RUN: not attn-opt %s --split-input-file --lower-tile-to-hopper 2>&1 | FileCheck %s
// RUN: not attn-opt %s --split-input-file --lower-tile-to-mma 2>&1 | FileCheck %s --check-prefix=MMA
// RUN: attn-opt %s --split-input-file --lower-tile-to-hopper=fallback=true | FileCheck %s --check-prefix=FALLBACK

// Score and mask functions the tile verifier takes but the tensor-core
// kernels do not compute are located diagnostics at the tile kernel
// (lower-tile-to-hopper-fn.mlir's program as a tile program written by
// hand, captures after out, changed), or with fallback=true left to
// lower-tile-to-gpu.
// FALLBACK-COUNT-5: tile.kernel

// CHECK: error: no Hopper kernel for 'rank5': the Hopper kernel reads captured tensors of rank 1 to 4, static shape, f32, f16, bf16, i32 or i64 (found 'capture0')
// MMA: error: no mma.sync kernel for 'rank5': the mma.sync kernel reads captured tensors of rank 1 to 4

  func.func @rank5(%arg0: memref<1x2x300x64xbf16>, %arg1: memref<1x2x300x64xbf16>, %arg2: memref<1x2x300x64xbf16>, %arg3: memref<1x2x300x64xbf16>, %bias: memref<1x1x1x1x599xf32>, %qs: memref<1x300xi32>, %ks: memref<1x300xi32>) attributes {tile.arg_names = ["q", "k", "v", "out", "capture0", "capture1", "capture2"], tile.attention = {causal = true, mods = ["scale", "fn"], scale = 1.250000e-01 : f64}, tile.grid = array<i64: 3, 2, 1>, tile.kernel, tile.threads = 384 : i64} {
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
    "tile.load"(%arg0, %6, %2, %3, %5) : (memref<1x2x300x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
    "tile.fill"(%10) {value = 0.000000e+00 : f32} : (memref<128x64xf32>) -> ()
    "tile.fill"(%11) {value = 0xFF800000 : f32} : (memref<128xf32>) -> ()
    "tile.fill"(%12) {value = 0.000000e+00 : f32} : (memref<128xf32>) -> ()
    %c3 = arith.constant 3 : index
    %13 = arith.addi %5, %c128 : index
    %14 = arith.ceildivui %13, %c128_1 : index
    %15 = arith.minui %14, %c3 : index
    scf.for %arg4 = %c0 to %15 step %c1 {
      %16 = arith.muli %arg4, %c128_1 : index
      "tile.load"(%arg1, %7, %2, %4, %16) : (memref<1x2x300x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.load"(%arg2, %8, %2, %4, %16) : (memref<1x2x300x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.mma"(%6, %7, %9) {accumulate = false, transpose_b = true} : (memref<128x64xf32>, memref<128x64xf32>, memref<128x128xf32>) -> ()
      "tile.score_mod"(%9, %2, %3, %5, %16) {mods = ["scale"], scale = 1.250000e-01 : f64, heads = 2 : i64} : (memref<128x128xf32>, index, index, index, index) -> ()
      "tile.score_fn"(%9, %2, %3, %5, %16) ({
      ^bb0(%x: f32, %b: index, %h: index, %qq: index, %kv: index):
        %d = arith.subi %qq, %kv : index
        %c299 = arith.constant 299 : index
        %e = arith.addi %d, %c299 : index
        %z = arith.constant 0 : index
        %e0 = arith.maxsi %e, %z : index
        %c598 = arith.constant 598 : index
        %e1 = arith.minui %e0, %c598 : index
        %t = memref.load %bias[%z, %z, %z, %z, %e1] : memref<1x1x1x1x599xf32>
        %hf = arith.index_cast %h : index to i32
        %hf2 = arith.sitofp %hf : i32 to f32
        %w = math.exp %hf2 : f32
        %tw = arith.mulf %t, %w : f32
        %y = arith.addf %x, %tw : f32
        gpu.yield %y : f32
      }) {seq_q = 300 : i64, seq_k = 300 : i64} : (memref<128x128xf32>, index, index, index, index) -> ()
      "tile.mask"(%9, %5, %16) {causal = true, kv_len = 300 : i64} : (memref<128x128xf32>, index, index) -> ()
      "tile.mask_fn"(%9, %2, %3, %5, %16) ({
      ^bb0(%b: index, %h: index, %qq: index, %kv: index):
        %q1 = memref.load %qs[%b, %qq] : memref<1x300xi32>
        %k1 = memref.load %ks[%b, %kv] : memref<1x300xi32>
        %eq = arith.cmpi eq, %q1, %k1 : i32
        gpu.yield %eq : i1
      }) {seq_q = 300 : i64, seq_k = 300 : i64} : (memref<128x128xf32>, index, index, index, index) -> ()
      "tile.softmax_update"(%9, %11, %12, %10) {scale = 1.000000e+00 : f64} : (memref<128x128xf32>, memref<128xf32>, memref<128xf32>, memref<128x64xf32>) -> ()
      "tile.mma"(%9, %8, %10) {accumulate = true, transpose_b = false} : (memref<128x128xf32>, memref<128x64xf32>, memref<128x64xf32>) -> ()
    }
    "tile.normalize"(%10, %12) : (memref<128x64xf32>, memref<128xf32>) -> ()
    "tile.store"(%10, %arg3, %2, %3, %5) : (memref<128x64xf32>, memref<1x2x300x64xbf16>, index, index, index) -> ()
    return
  }

// -----

// CHECK: error: no Hopper kernel for 'nine': the Hopper kernel reads at most 8 captured tensors (found 10)
// MMA: error: no mma.sync kernel for 'nine': the mma.sync kernel reads at most 8 captured tensors

  func.func @nine(%arg0: memref<1x2x300x64xbf16>, %arg1: memref<1x2x300x64xbf16>, %arg2: memref<1x2x300x64xbf16>, %arg3: memref<1x2x300x64xbf16>, %bias: memref<599xf32>, %qs: memref<1x300xi32>, %ks: memref<1x300xi32>, %x0: memref<1x300xi32>, %x1: memref<1x300xi32>, %x2: memref<1x300xi32>, %x3: memref<1x300xi32>, %x4: memref<1x300xi32>, %x5: memref<1x300xi32>, %x6: memref<1x300xi32>) attributes {tile.arg_names = ["q", "k", "v", "out", "capture0", "capture1", "capture2", "capture3", "capture4", "capture5", "capture6", "capture7", "capture8", "capture9"], tile.attention = {causal = true, mods = ["scale", "fn"], scale = 1.250000e-01 : f64}, tile.grid = array<i64: 3, 2, 1>, tile.kernel, tile.threads = 384 : i64} {
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
    "tile.load"(%arg0, %6, %2, %3, %5) : (memref<1x2x300x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
    "tile.fill"(%10) {value = 0.000000e+00 : f32} : (memref<128x64xf32>) -> ()
    "tile.fill"(%11) {value = 0xFF800000 : f32} : (memref<128xf32>) -> ()
    "tile.fill"(%12) {value = 0.000000e+00 : f32} : (memref<128xf32>) -> ()
    %c3 = arith.constant 3 : index
    %13 = arith.addi %5, %c128 : index
    %14 = arith.ceildivui %13, %c128_1 : index
    %15 = arith.minui %14, %c3 : index
    scf.for %arg4 = %c0 to %15 step %c1 {
      %16 = arith.muli %arg4, %c128_1 : index
      "tile.load"(%arg1, %7, %2, %4, %16) : (memref<1x2x300x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.load"(%arg2, %8, %2, %4, %16) : (memref<1x2x300x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.mma"(%6, %7, %9) {accumulate = false, transpose_b = true} : (memref<128x64xf32>, memref<128x64xf32>, memref<128x128xf32>) -> ()
      "tile.score_mod"(%9, %2, %3, %5, %16) {mods = ["scale"], scale = 1.250000e-01 : f64, heads = 2 : i64} : (memref<128x128xf32>, index, index, index, index) -> ()
      "tile.score_fn"(%9, %2, %3, %5, %16) ({
      ^bb0(%x: f32, %b: index, %h: index, %qq: index, %kv: index):
        %d = arith.subi %qq, %kv : index
        %c299 = arith.constant 299 : index
        %e = arith.addi %d, %c299 : index
        %z = arith.constant 0 : index
        %e0 = arith.maxsi %e, %z : index
        %c598 = arith.constant 598 : index
        %e1 = arith.minui %e0, %c598 : index
        %t = memref.load %bias[%e1] : memref<599xf32>
        %hf = arith.index_cast %h : index to i32
        %hf2 = arith.sitofp %hf : i32 to f32
        %w = math.exp %hf2 : f32
        %tw = arith.mulf %t, %w : f32
        %y = arith.addf %x, %tw : f32
        gpu.yield %y : f32
      }) {seq_q = 300 : i64, seq_k = 300 : i64} : (memref<128x128xf32>, index, index, index, index) -> ()
      "tile.mask"(%9, %5, %16) {causal = true, kv_len = 300 : i64} : (memref<128x128xf32>, index, index) -> ()
      "tile.mask_fn"(%9, %2, %3, %5, %16) ({
      ^bb0(%b: index, %h: index, %qq: index, %kv: index):
        %q1 = memref.load %qs[%b, %qq] : memref<1x300xi32>
        %k1 = memref.load %ks[%b, %kv] : memref<1x300xi32>
        %l0 = memref.load %x0[%b, %kv] : memref<1x300xi32>
        %s0 = arith.addi %k1, %l0 : i32
        %l1 = memref.load %x1[%b, %kv] : memref<1x300xi32>
        %s1 = arith.addi %s0, %l1 : i32
        %l2 = memref.load %x2[%b, %kv] : memref<1x300xi32>
        %s2 = arith.addi %s1, %l2 : i32
        %l3 = memref.load %x3[%b, %kv] : memref<1x300xi32>
        %s3 = arith.addi %s2, %l3 : i32
        %l4 = memref.load %x4[%b, %kv] : memref<1x300xi32>
        %s4 = arith.addi %s3, %l4 : i32
        %l5 = memref.load %x5[%b, %kv] : memref<1x300xi32>
        %s5 = arith.addi %s4, %l5 : i32
        %l6 = memref.load %x6[%b, %kv] : memref<1x300xi32>
        %s6 = arith.addi %s5, %l6 : i32
        %eq = arith.cmpi eq, %q1, %s6 : i32
        gpu.yield %eq : i1
      }) {seq_q = 300 : i64, seq_k = 300 : i64} : (memref<128x128xf32>, index, index, index, index) -> ()
      "tile.softmax_update"(%9, %11, %12, %10) {scale = 1.000000e+00 : f64} : (memref<128x128xf32>, memref<128xf32>, memref<128xf32>, memref<128x64xf32>) -> ()
      "tile.mma"(%9, %8, %10) {accumulate = true, transpose_b = false} : (memref<128x128xf32>, memref<128x64xf32>, memref<128x64xf32>) -> ()
    }
    "tile.normalize"(%10, %12) : (memref<128x64xf32>, memref<128xf32>) -> ()
    "tile.store"(%10, %arg3, %2, %3, %5) : (memref<128x64xf32>, memref<1x2x300x64xbf16>, index, index, index) -> ()
    return
  }

// -----

// CHECK: error: no Hopper kernel for 'no_fn_mod': mods must name "fn" once per tile.score_fn (found 0 of 1)
// MMA: error: no mma.sync kernel for 'no_fn_mod': mods must name "fn" once per tile.score_fn

  func.func @no_fn_mod(%arg0: memref<1x2x300x64xbf16>, %arg1: memref<1x2x300x64xbf16>, %arg2: memref<1x2x300x64xbf16>, %arg3: memref<1x2x300x64xbf16>, %bias: memref<599xf32>, %qs: memref<1x300xi32>, %ks: memref<1x300xi32>) attributes {tile.arg_names = ["q", "k", "v", "out", "capture0", "capture1", "capture2"], tile.attention = {causal = true, mods = ["scale"], scale = 1.250000e-01 : f64}, tile.grid = array<i64: 3, 2, 1>, tile.kernel, tile.threads = 384 : i64} {
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
    "tile.load"(%arg0, %6, %2, %3, %5) : (memref<1x2x300x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
    "tile.fill"(%10) {value = 0.000000e+00 : f32} : (memref<128x64xf32>) -> ()
    "tile.fill"(%11) {value = 0xFF800000 : f32} : (memref<128xf32>) -> ()
    "tile.fill"(%12) {value = 0.000000e+00 : f32} : (memref<128xf32>) -> ()
    %c3 = arith.constant 3 : index
    %13 = arith.addi %5, %c128 : index
    %14 = arith.ceildivui %13, %c128_1 : index
    %15 = arith.minui %14, %c3 : index
    scf.for %arg4 = %c0 to %15 step %c1 {
      %16 = arith.muli %arg4, %c128_1 : index
      "tile.load"(%arg1, %7, %2, %4, %16) : (memref<1x2x300x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.load"(%arg2, %8, %2, %4, %16) : (memref<1x2x300x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.mma"(%6, %7, %9) {accumulate = false, transpose_b = true} : (memref<128x64xf32>, memref<128x64xf32>, memref<128x128xf32>) -> ()
      "tile.score_mod"(%9, %2, %3, %5, %16) {mods = ["scale"], scale = 1.250000e-01 : f64, heads = 2 : i64} : (memref<128x128xf32>, index, index, index, index) -> ()
      "tile.score_fn"(%9, %2, %3, %5, %16) ({
      ^bb0(%x: f32, %b: index, %h: index, %qq: index, %kv: index):
        %d = arith.subi %qq, %kv : index
        %c299 = arith.constant 299 : index
        %e = arith.addi %d, %c299 : index
        %z = arith.constant 0 : index
        %e0 = arith.maxsi %e, %z : index
        %c598 = arith.constant 598 : index
        %e1 = arith.minui %e0, %c598 : index
        %t = memref.load %bias[%e1] : memref<599xf32>
        %hf = arith.index_cast %h : index to i32
        %hf2 = arith.sitofp %hf : i32 to f32
        %w = math.exp %hf2 : f32
        %tw = arith.mulf %t, %w : f32
        %y = arith.addf %x, %tw : f32
        gpu.yield %y : f32
      }) {seq_q = 300 : i64, seq_k = 300 : i64} : (memref<128x128xf32>, index, index, index, index) -> ()
      "tile.mask"(%9, %5, %16) {causal = true, kv_len = 300 : i64} : (memref<128x128xf32>, index, index) -> ()
      "tile.mask_fn"(%9, %2, %3, %5, %16) ({
      ^bb0(%b: index, %h: index, %qq: index, %kv: index):
        %q1 = memref.load %qs[%b, %qq] : memref<1x300xi32>
        %k1 = memref.load %ks[%b, %kv] : memref<1x300xi32>
        %eq = arith.cmpi eq, %q1, %k1 : i32
        gpu.yield %eq : i1
      }) {seq_q = 300 : i64, seq_k = 300 : i64} : (memref<128x128xf32>, index, index, index, index) -> ()
      "tile.softmax_update"(%9, %11, %12, %10) {scale = 1.000000e+00 : f64} : (memref<128x128xf32>, memref<128xf32>, memref<128xf32>, memref<128x64xf32>) -> ()
      "tile.mma"(%9, %8, %10) {accumulate = true, transpose_b = false} : (memref<128x128xf32>, memref<128x64xf32>, memref<128x64xf32>) -> ()
    }
    "tile.normalize"(%10, %12) : (memref<128x64xf32>, memref<128xf32>) -> ()
    "tile.store"(%10, %arg3, %2, %3, %5) : (memref<128x64xf32>, memref<1x2x300x64xbf16>, index, index, index) -> ()
    return
  }

// -----

// CHECK: error: no Hopper kernel for 'mask_seq': malformed tile.mask_fn (its block, seq_q or seq_k)
// MMA: error: no mma.sync kernel for 'mask_seq': malformed tile.mask_fn

  func.func @mask_seq(%arg0: memref<1x2x300x64xbf16>, %arg1: memref<1x2x300x64xbf16>, %arg2: memref<1x2x300x64xbf16>, %arg3: memref<1x2x300x64xbf16>, %bias: memref<599xf32>, %qs: memref<1x300xi32>, %ks: memref<1x300xi32>) attributes {tile.arg_names = ["q", "k", "v", "out", "capture0", "capture1", "capture2"], tile.attention = {causal = true, mods = ["scale", "fn"], scale = 1.250000e-01 : f64}, tile.grid = array<i64: 3, 2, 1>, tile.kernel, tile.threads = 384 : i64} {
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
    "tile.load"(%arg0, %6, %2, %3, %5) : (memref<1x2x300x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
    "tile.fill"(%10) {value = 0.000000e+00 : f32} : (memref<128x64xf32>) -> ()
    "tile.fill"(%11) {value = 0xFF800000 : f32} : (memref<128xf32>) -> ()
    "tile.fill"(%12) {value = 0.000000e+00 : f32} : (memref<128xf32>) -> ()
    %c3 = arith.constant 3 : index
    %13 = arith.addi %5, %c128 : index
    %14 = arith.ceildivui %13, %c128_1 : index
    %15 = arith.minui %14, %c3 : index
    scf.for %arg4 = %c0 to %15 step %c1 {
      %16 = arith.muli %arg4, %c128_1 : index
      "tile.load"(%arg1, %7, %2, %4, %16) : (memref<1x2x300x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.load"(%arg2, %8, %2, %4, %16) : (memref<1x2x300x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.mma"(%6, %7, %9) {accumulate = false, transpose_b = true} : (memref<128x64xf32>, memref<128x64xf32>, memref<128x128xf32>) -> ()
      "tile.score_mod"(%9, %2, %3, %5, %16) {mods = ["scale"], scale = 1.250000e-01 : f64, heads = 2 : i64} : (memref<128x128xf32>, index, index, index, index) -> ()
      "tile.score_fn"(%9, %2, %3, %5, %16) ({
      ^bb0(%x: f32, %b: index, %h: index, %qq: index, %kv: index):
        %d = arith.subi %qq, %kv : index
        %c299 = arith.constant 299 : index
        %e = arith.addi %d, %c299 : index
        %z = arith.constant 0 : index
        %e0 = arith.maxsi %e, %z : index
        %c598 = arith.constant 598 : index
        %e1 = arith.minui %e0, %c598 : index
        %t = memref.load %bias[%e1] : memref<599xf32>
        %hf = arith.index_cast %h : index to i32
        %hf2 = arith.sitofp %hf : i32 to f32
        %w = math.exp %hf2 : f32
        %tw = arith.mulf %t, %w : f32
        %y = arith.addf %x, %tw : f32
        gpu.yield %y : f32
      }) {seq_q = 300 : i64, seq_k = 300 : i64} : (memref<128x128xf32>, index, index, index, index) -> ()
      "tile.mask"(%9, %5, %16) {causal = true, kv_len = 300 : i64} : (memref<128x128xf32>, index, index) -> ()
      "tile.mask_fn"(%9, %2, %3, %5, %16) ({
      ^bb0(%b: index, %h: index, %qq: index, %kv: index):
        %q1 = memref.load %qs[%b, %qq] : memref<1x300xi32>
        %k1 = memref.load %ks[%b, %kv] : memref<1x300xi32>
        %eq = arith.cmpi eq, %q1, %k1 : i32
        gpu.yield %eq : i1
      }) {seq_q = 300 : i64, seq_k = 200 : i64} : (memref<128x128xf32>, index, index, index, index) -> ()
      "tile.softmax_update"(%9, %11, %12, %10) {scale = 1.000000e+00 : f64} : (memref<128x128xf32>, memref<128xf32>, memref<128xf32>, memref<128x64xf32>) -> ()
      "tile.mma"(%9, %8, %10) {accumulate = true, transpose_b = false} : (memref<128x128xf32>, memref<128x64xf32>, memref<128x64xf32>) -> ()
    }
    "tile.normalize"(%10, %12) : (memref<128x64xf32>, memref<128xf32>) -> ()
    "tile.store"(%10, %arg3, %2, %3, %5) : (memref<128x64xf32>, memref<1x2x300x64xbf16>, index, index, index) -> ()
    return
  }

// -----

// A softcap (or ALiBi) named in tile.score_mod, as a tile program written by
// hand may have it: the tensor-core kernels compute tile.score_mod's scale
// only, softcap and ALiBi as the tile.score_fn bodies attn-tile writes.
// CHECK: error: no Hopper kernel for 'named_mods': the Hopper kernel computes tile.score_mod's scale only (softcap and ALiBi as tile.score_fn bodies, as attn-tile writes them)
// MMA: error: no mma.sync kernel for 'named_mods': the mma.sync kernel computes tile.score_mod's scale only

  func.func @named_mods(%arg0: memref<1x8x2048x64xbf16>, %arg1: memref<1x8x2048x64xbf16>, %arg2: memref<1x8x2048x64xbf16>, %arg3: memref<1x8x2048x64xbf16>) attributes {tile.arg_names = ["q", "k", "v", "out"], tile.attention = {causal = true, mods = ["scale", "softcap"], scale = 1.250000e-01 : f64, softcap = 3.000000e+01 : f64}, tile.grid = array<i64: 16, 8, 1>, tile.kernel, tile.threads = 384 : i64} {
    %0 = "tile.program_id"() {dim = 0 : i64} : () -> index
    %1 = "tile.program_id"() {dim = 1 : i64} : () -> index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c1_0 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c128_1 = arith.constant 128 : index
    %2 = arith.divui %1, %c8 : index
    %3 = arith.remui %1, %c8 : index
    %4 = arith.divui %3, %c1_0 : index
    %5 = arith.muli %0, %c128 : index
    %6 = "tile.alloc"() : () -> memref<128x64xf32>
    %7 = "tile.alloc"() : () -> memref<128x64xf32>
    %8 = "tile.alloc"() : () -> memref<128x64xf32>
    %9 = "tile.alloc"() : () -> memref<128x128xf32>
    %10 = "tile.alloc"() : () -> memref<128x64xf32>
    %11 = "tile.alloc"() : () -> memref<128xf32>
    %12 = "tile.alloc"() : () -> memref<128xf32>
    "tile.load"(%arg0, %6, %2, %3, %5) : (memref<1x8x2048x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
    "tile.fill"(%10) {value = 0.000000e+00 : f32} : (memref<128x64xf32>) -> ()
    "tile.fill"(%11) {value = 0xFF800000 : f32} : (memref<128xf32>) -> ()
    "tile.fill"(%12) {value = 0.000000e+00 : f32} : (memref<128xf32>) -> ()
    %c16 = arith.constant 16 : index
    %13 = arith.addi %5, %c128 : index
    %14 = arith.ceildivui %13, %c128_1 : index
    %15 = arith.minui %14, %c16 : index
    scf.for %arg4 = %c0 to %15 step %c1 {
      %16 = arith.muli %arg4, %c128_1 : index
      "tile.load"(%arg1, %7, %2, %4, %16) : (memref<1x8x2048x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.load"(%arg2, %8, %2, %4, %16) : (memref<1x8x2048x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.mma"(%6, %7, %9) {accumulate = false, transpose_b = true} : (memref<128x64xf32>, memref<128x64xf32>, memref<128x128xf32>) -> ()
      "tile.score_mod"(%9, %2, %3, %5, %16) {mods = ["scale", "softcap"], scale = 1.250000e-01 : f64, softcap = 3.000000e+01 : f64} : (memref<128x128xf32>, index, index, index, index) -> ()
      "tile.mask"(%9, %5, %16) {causal = true, kv_len = 2048 : i64} : (memref<128x128xf32>, index, index) -> ()
      "tile.softmax_update"(%9, %11, %12, %10) {scale = 1.000000e+00 : f64} : (memref<128x128xf32>, memref<128xf32>, memref<128xf32>, memref<128x64xf32>) -> ()
      "tile.mma"(%9, %8, %10) {accumulate = true, transpose_b = false} : (memref<128x128xf32>, memref<128x64xf32>, memref<128x64xf32>) -> ()
    }
    "tile.normalize"(%10, %12) : (memref<128x64xf32>, memref<128xf32>) -> ()
    "tile.store"(%10, %arg3, %2, %3, %5) : (memref<128x64xf32>, memref<1x8x2048x64xbf16>, index, index, index) -> ()
    return
  }
