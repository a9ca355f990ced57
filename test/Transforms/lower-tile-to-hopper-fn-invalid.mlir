// RUN: not attn-opt %s --split-input-file --lower-tile-to-hopper 2>&1 | FileCheck %s
// RUN: not attn-opt %s --split-input-file --lower-tile-to-mma 2>&1 | FileCheck %s --check-prefix=MMA
// RUN: attn-opt %s --split-input-file --lower-tile-to-hopper=fallback=true | FileCheck %s --check-prefix=FALLBACK

// Score and mask functions the tensor-core kernels do not compute are
// located diagnostics at the tile kernel (lower-tile-to-hopper-fn.mlir's
// program, changed), or with fallback=true left to lower-tile-to-gpu.
// FALLBACK-COUNT-4: tile.kernel

// CHECK: error: no Hopper kernel for 'f64_capture': the Hopper kernel reads captured tensors of rank 1 to 4, static shape, f32, f16, bf16, i32 or i64 (found 'capture0')
// MMA: error: no mma.sync kernel for 'f64_capture': the mma.sync kernel reads captured tensors of rank 1 to 4

  func.func @f64_capture(%arg0: memref<1x2x300x64xbf16>, %arg1: memref<1x2x300x64xbf16>, %arg2: memref<1x2x300x64xbf16>, %arg3: memref<1x2x300x64xbf16>, %bias: memref<599xf64>, %qs: memref<1x300xi32>, %ks: memref<1x300xi32>) attributes {tile.arg_names = ["q", "k", "v", "out", "capture0", "capture1", "capture2"], tile.attention = {causal = true, mods = ["scale", "fn"], scale = 1.250000e-01 : f64}, tile.grid = array<i64: 3, 2, 1>, tile.kernel, tile.threads = 384 : i64} {
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
        %t = memref.load %bias[%e1] : memref<599xf64>
        %hf = arith.index_cast %h : index to i32
        %hf2 = arith.sitofp %hf : i32 to f32
        %w = math.exp %hf2 : f32
        %t32 = arith.truncf %t : f64 to f32
        %tw = arith.mulf %t32, %w : f32
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

// CHECK: error: no Hopper kernel for 'outside': a tile.score_fn body reads a value from outside it that is not a captured tensor
// MMA: error: no mma.sync kernel for 'outside': a tile.score_fn body reads a value from outside it

  func.func @outside(%arg0: memref<1x2x300x64xbf16>, %arg1: memref<1x2x300x64xbf16>, %arg2: memref<1x2x300x64xbf16>, %arg3: memref<1x2x300x64xbf16>, %bias: memref<599xf32>, %qs: memref<1x300xi32>, %ks: memref<1x300xi32>) attributes {tile.arg_names = ["q", "k", "v", "out", "capture0", "capture1", "capture2"], tile.attention = {causal = true, mods = ["scale", "fn"], scale = 1.250000e-01 : f64}, tile.grid = array<i64: 3, 2, 1>, tile.kernel, tile.threads = 384 : i64} {
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
        %d = arith.subi %qq, %5 : index
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
