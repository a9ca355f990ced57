// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper | FileCheck %s
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper=consumers=3 | FileCheck %s --check-prefix=C3
// RUN: attn-translate --to-ptx %s -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not=C7513 --implicit-check-not=C7514 %}

// Score and mask functions of any form (tile.score_fn, tile.mask_fn) in the
// Hopper kernel (lib/Kernels/score_fn.c): a relative-position bias table
// times a per-head factor after the scale (mods = ["scale", "fn"]), and a
// document mask written as a mask function, on the wgmma accumulator
// fragments.

// The kernel's first parameters are the tile kernel's arguments in its
// order (the program's, out last), the captures (the bias, the query's and
// the key's segments) read only; so are its manifest's params. The document
// mask reads the segments, so a launch program runs the key-list kernel
// first (lower-tile-to-hopper-key-lists.mlir) and @fnk__attn takes its
// lists after out.
// CHECK-LABEL: llvm.func @fnk__attn(
// CHECK-SAME: %[[BIAS:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %[[QS:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %[[KS:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr {llvm.noalias, llvm.readonly}, %{{[a-z0-9]+}}: !llvm.ptr {llvm.align = 64 : i64
// CHECK-SAME: block = array<i32: 384, 1, 1>
// CHECK-SAME: params = [{dtype = "f32", kind = "ptr", name = "capture0", shape = array<i64: 599>}, {{.*}}name = "q"{{.*}}name = "k"{{.*}}name = "v"{{.*}}, {dtype = "i32", kind = "ptr", name = "capture1", shape = array<i64: 1, 300>}, {dtype = "i32", kind = "ptr", name = "capture2", shape = array<i64: 1, 300>}, {{.*}}name = "out"{{.*}}name = "q_map"
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
// PTX: .visible .entry fnk__attn(
// PTX: ld.global.nc.b32
// PTXAS: Compiling entry function 'fnk__attn' for 'sm_90a'
// PTXAS-NEXT: Function properties for fnk__attn
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
func.func @fnk(%bias: tensor<599xf32>, %q: tensor<1x2x300x64xbf16>, %k: tensor<1x2x300x64xbf16>, %v: tensor<1x2x300x64xbf16>, %qs: tensor<1x300xi32>, %ks: tensor<1x300xi32>) -> tensor<1x2x300x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%x: f32, %b: index, %h: index, %qq: index, %kv: index):
    %d = arith.subi %qq, %kv : index
    %c299 = arith.constant 299 : index
    %e = arith.addi %d, %c299 : index
    %t = tensor.extract %bias[%e] : tensor<599xf32>
    %hi = arith.index_cast %h : index to i32
    %hf = arith.sitofp %hi : i32 to f32
    %w = math.exp %hf : f32
    %tw = arith.mulf %t, %w : f32
    %y = arith.addf %x, %tw : f32
    gpu.yield %y : f32
  }, {
  ^bb0(%b: index, %h: index, %qq: index, %kv: index):
    %q1 = tensor.extract %qs[%b, %qq] : tensor<1x300xi32>
    %k1 = tensor.extract %ks[%b, %kv] : tensor<1x300xi32>
    %eq = arith.cmpi eq, %q1, %k1 : i32
    gpu.yield %eq : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, mods = ["scale", "fn"]} : (tensor<1x2x300x64xbf16>, tensor<1x2x300x64xbf16>, tensor<1x2x300x64xbf16>) -> tensor<1x2x300x64xbf16>
  return %o : tensor<1x2x300x64xbf16>
}
