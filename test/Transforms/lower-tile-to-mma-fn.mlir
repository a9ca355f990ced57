// RUN: attn-opt %s --lower-tile-to-mma | FileCheck %s
// RUN: attn-translate --to-ptx --chip=sm_80 --kernel=mma %s -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_80 -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// Score and mask functions of any form (tile.score_fn, tile.mask_fn) in the
// mma.sync kernel (lib/Kernels/score_fn.c): the program of
// lower-tile-to-hopper-fn.mlir (a relative-position bias times exp(h) after
// the scale, a document mask) in attn-tile's mma tiles (block-n 64), on the
// m16n8 accumulator fragments of each warp.

// The captures are the kernel's parameters after out, read only.
// CHECK-LABEL: llvm.func @fnk(
// CHECK-SAME: %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %[[BIAS:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %[[QS:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %[[KS:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly})
// CHECK-SAME: kernel = "mma-sync", params = [{{.*}}{dtype = "f32", kind = "ptr", name = "capture0", shape = array<i64: 599>}, {dtype = "i32", kind = "ptr", name = "capture1", shape = array<i64: 1, 300>}, {dtype = "i32", kind = "ptr", name = "capture2", shape = array<i64: 1, 300>}]
// Once per CTA, before the key loop: the head's factor and the warp's two
// rows' query segments.
// CHECK: %[[EXPH:.*]] = math.exp
// CHECK-COUNT-2: llvm.getelementptr %[[QS]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// CHECK: scf.for
// Per element of the block's S (32 per thread): the bias; per column (16):
// the key's segment.
// CHECK-COUNT-32: llvm.getelementptr %[[BIAS]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NOT: llvm.getelementptr %[[BIAS]]
// CHECK-NOT: llvm.getelementptr %[[QS]]
// CHECK-COUNT-16: llvm.getelementptr %[[KS]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// CHECK-NOT: llvm.getelementptr %[[KS]]
// CHECK: llvm.return

// PTX: .visible .entry fnk(
// PTX: ld.global.nc.b32
// PTXAS: Function properties for fnk
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
module {
  func.func @fnk(%arg0: memref<1x2x300x64xbf16>, %arg1: memref<1x2x300x64xbf16>, %arg2: memref<1x2x300x64xbf16>, %arg3: memref<1x2x300x64xbf16>, %bias: memref<599xf32>, %qs: memref<1x300xi32>, %ks: memref<1x300xi32>) attributes {tile.arg_names = ["q", "k", "v", "out", "capture0", "capture1", "capture2"], tile.attention = {causal = true, mods = ["scale", "fn"], scale = 1.250000e-01 : f64}, tile.grid = array<i64: 3, 2, 1>, tile.kernel, tile.threads = 256 : i64} {
    %0 = "tile.program_id"() {dim = 0 : i64} : () -> index
    %1 = "tile.program_id"() {dim = 1 : i64} : () -> index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c1_0 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c64 = arith.constant 64 : index
    %2 = arith.divui %1, %c2 : index
    %3 = arith.remui %1, %c2 : index
    %4 = arith.divui %3, %c1_0 : index
    %5 = arith.muli %0, %c128 : index
    %6 = "tile.alloc"() : () -> memref<128x64xf32>
    %7 = "tile.alloc"() : () -> memref<64x64xf32>
    %8 = "tile.alloc"() : () -> memref<64x64xf32>
    %9 = "tile.alloc"() : () -> memref<128x64xf32>
    %10 = "tile.alloc"() : () -> memref<128x64xf32>
    %11 = "tile.alloc"() : () -> memref<128xf32>
    %12 = "tile.alloc"() : () -> memref<128xf32>
    "tile.load"(%arg0, %6, %2, %3, %5) : (memref<1x2x300x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
    "tile.fill"(%10) {value = 0.000000e+00 : f32} : (memref<128x64xf32>) -> ()
    "tile.fill"(%11) {value = 0xFF800000 : f32} : (memref<128xf32>) -> ()
    "tile.fill"(%12) {value = 0.000000e+00 : f32} : (memref<128xf32>) -> ()
    %c5 = arith.constant 5 : index
    %13 = arith.addi %5, %c128 : index
    %14 = arith.ceildivui %13, %c64 : index
    %15 = arith.minui %14, %c5 : index
    scf.for %arg4 = %c0 to %15 step %c1 {
      %16 = arith.muli %arg4, %c64 : index
      "tile.load"(%arg1, %7, %2, %4, %16) : (memref<1x2x300x64xbf16>, memref<64x64xf32>, index, index, index) -> ()
      "tile.load"(%arg2, %8, %2, %4, %16) : (memref<1x2x300x64xbf16>, memref<64x64xf32>, index, index, index) -> ()
      "tile.mma"(%6, %7, %9) {accumulate = false, transpose_b = true} : (memref<128x64xf32>, memref<64x64xf32>, memref<128x64xf32>) -> ()
      "tile.score_mod"(%9, %2, %3, %5, %16) {mods = ["scale"], scale = 1.250000e-01 : f64, heads = 2 : i64} : (memref<128x64xf32>, index, index, index, index) -> ()
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
      }) {seq_q = 300 : i64, seq_k = 300 : i64} : (memref<128x64xf32>, index, index, index, index) -> ()
      "tile.mask"(%9, %5, %16) {causal = true, kv_len = 300 : i64} : (memref<128x64xf32>, index, index) -> ()
      "tile.mask_fn"(%9, %2, %3, %5, %16) ({
      ^bb0(%b: index, %h: index, %qq: index, %kv: index):
        %q1 = memref.load %qs[%b, %qq] : memref<1x300xi32>
        %k1 = memref.load %ks[%b, %kv] : memref<1x300xi32>
        %eq = arith.cmpi eq, %q1, %k1 : i32
        gpu.yield %eq : i1
      }) {seq_q = 300 : i64, seq_k = 300 : i64} : (memref<128x64xf32>, index, index, index, index) -> ()
      "tile.softmax_update"(%9, %11, %12, %10) {scale = 1.000000e+00 : f64} : (memref<128x64xf32>, memref<128xf32>, memref<128xf32>, memref<128x64xf32>) -> ()
      "tile.mma"(%9, %8, %10) {accumulate = true, transpose_b = false} : (memref<128x64xf32>, memref<64x64xf32>, memref<128x64xf32>) -> ()
    }
    "tile.normalize"(%10, %12) : (memref<128x64xf32>, memref<128xf32>) -> ()
    "tile.store"(%10, %arg3, %2, %3, %5) : (memref<128x64xf32>, memref<1x2x300x64xbf16>, index, index, index) -> ()
    return
  }
}
