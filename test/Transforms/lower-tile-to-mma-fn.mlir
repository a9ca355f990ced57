// RUN: attn-opt %s --attn-tile=kernel=mma --lower-tile-to-mma | FileCheck %s
// RUN: attn-translate --to-ptx --chip=sm_80 --kernel=mma %s -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_80 -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}

// Score and mask functions of any form (tile.score_fn, tile.mask_fn) in the
// mma.sync kernel (lib/Kernels/score_fn.c): the program of
// lower-tile-to-hopper-fn.mlir (a relative-position bias times exp(h) after
// the scale, a document mask) in attn-tile's mma tiles (block-n 64), on the
// m16n8 accumulator fragments of each warp.

// The parameters are the tile kernel's arguments in its order (out last),
// the captures read only.
// The document mask reads the segments: a launch program runs the
// key-list kernel first and @fnk__attn takes the lists after out
// (lower-tile-to-hopper-key-lists.mlir).
// CHECK-LABEL: llvm.func @fnk__attn(
// CHECK-SAME: %[[BIAS:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %[[QS:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %[[KS:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr {llvm.noalias, llvm.readonly})
// CHECK-SAME: kernel = "mma-sync", params = [{dtype = "f32", kind = "ptr", name = "capture0", shape = array<i64: 599>}, {{.*}}, {dtype = "i32", kind = "ptr", name = "capture1", shape = array<i64: 1, 300>}, {dtype = "i32", kind = "ptr", name = "capture2", shape = array<i64: 1, 300>}, {{.*}}name = "out"
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

// PTX: .visible .entry fnk__attn(
// PTX: ld.global.nc.b32
// PTXAS: Function properties for fnk__attn
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
