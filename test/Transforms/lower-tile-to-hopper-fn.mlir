// RUN: attn-opt %s --lower-tile-to-hopper | FileCheck %s
// RUN: attn-opt %s --lower-tile-to-hopper=consumers=3 | FileCheck %s --check-prefix=C3
// RUN: attn-translate --to-ptx %s -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not=C7513 --implicit-check-not=C7514 %}

// Score and mask functions of any form (tile.score_fn, tile.mask_fn) in the
// Hopper kernel (lib/Kernels/score_fn.c): a relative-position bias table
// times a per-head factor after the scale (mods = ["scale", "fn"]), and a
// document mask, on the wgmma accumulator fragments. The tile program is
// written by hand as attn-tile writes it: the captures (bias, the query's
// and the key's segments) are the kernel's arguments after out.

// The captures are the kernel's last parameters, read only, and its
// manifest's last params.
// CHECK-LABEL: llvm.func @fnk(
// CHECK-SAME: %[[BIAS:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %[[QS:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %[[KS:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly})
// CHECK-SAME: block = array<i32: 384, 1, 1>
// CHECK-SAME: {dtype = "f32", kind = "ptr", name = "capture0", shape = array<i64: 599>}, {dtype = "i32", kind = "ptr", name = "capture1", shape = array<i64: 1, 300>}, {dtype = "i32", kind = "ptr", name = "capture2", shape = array<i64: 1, 300>}
// Once per tile, before its first S: the head's factor exp(h) and the
// query segments of the thread's two rows (row and row + 8, clamped to
// [0, 299]).
// CHECK: arith.constant -0.000000e+00 : f32
// CHECK-NEXT: arith.index_cast %{{.*}} : i32 to index
// CHECK-NEXT: %[[H:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: arith.maxsi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: arith.constant 299 : i32
// CHECK-NEXT: arith.minsi
// CHECK: arith.index_cast %[[H]] : index to i32
// CHECK-NEXT: arith.sitofp
// CHECK-NEXT: %[[EXPH:.*]] = math.exp
// CHECK-COUNT-2: llvm.getelementptr %[[QS]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// CHECK: wgmma.mma_async
// Per element of S: the score times the pending scale (the softmax's
// factor is then 1), the bias at q - kv + 299 clamped, times exp(h).
// CHECK: %[[SC:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-NEXT: arith.mulf %{{.*}}, %[[SC]] : f32
// CHECK-NEXT: arith.subi
// CHECK-NEXT: arith.addi
// CHECK-NEXT: arith.maxsi
// CHECK-NEXT: arith.minui
// CHECK-NEXT: arith.index_cast %{{.*}} : index to i64
// CHECK-NEXT: llvm.getelementptr %[[BIAS]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT: %[[T:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK-NEXT: %[[TW:.*]] = arith.mulf %[[T]], %[[EXPH]] : f32
// CHECK-NEXT: arith.addf %{{.*}}, %[[TW]] : f32
// The document mask after the causal one, on every block: a key's segment
// once per column (both rows of a register pair share it), no query
// segment reloaded.
// CHECK-NOT: llvm.getelementptr %[[QS]]
// CHECK: llvm.getelementptr %[[KS]]
// CHECK-NEXT: %[[K0:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i32
// CHECK-NEXT: %[[V0:.*]] = arith.cmpi eq, %[[Q0:.*]], %[[K0]] : i32
// CHECK-NEXT: arith.select %[[V0]], %{{.*}}, %[[NINF:.*]] : f32
// CHECK: llvm.getelementptr %[[KS]]
// CHECK-NEXT: %[[K1:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i32
// CHECK-NEXT: %[[V1:.*]] = arith.cmpi eq, %[[Q0]], %[[K1]] : i32
// CHECK-NEXT: arith.select %[[V1]], %{{.*}}, %[[NINF]] : f32
// CHECK-NEXT: %[[V2:.*]] = arith.cmpi eq, %[[Q1:.*]], %[[K0]] : i32
// CHECK-NEXT: arith.select %[[V2]], %{{.*}}, %[[NINF]] : f32
// CHECK-NEXT: %[[V3:.*]] = arith.cmpi eq, %[[Q1]], %[[K1]] : i32
// CHECK-NEXT: arith.select %[[V3]], %{{.*}}, %[[NINF]] : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: llvm.return
// C3: block = array<i32: 512, 1, 1>

// The global loads of the captures go through the read-only data cache.
// PTX: .visible .entry fnk(
// PTX: ld.global.nc.b32
// PTXAS: Compiling entry function 'fnk' for 'sm_90a'
// PTXAS-NEXT: Function properties for fnk
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
module {
  func.func @fnk(%arg0: memref<1x2x300x64xbf16>, %arg1: memref<1x2x300x64xbf16>, %arg2: memref<1x2x300x64xbf16>, %arg3: memref<1x2x300x64xbf16>, %bias: memref<599xf32>, %qs: memref<1x300xi32>, %ks: memref<1x300xi32>) attributes {tile.arg_names = ["q", "k", "v", "out", "capture0", "capture1", "capture2"], tile.attention = {causal = true, mods = ["scale", "fn"], scale = 1.250000e-01 : f64}, tile.grid = array<i64: 3, 2, 1>, tile.kernel, tile.threads = 384 : i64} {
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
}
