// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rope=split" | FileCheck %s
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rope=split" | FileCheck %s --check-prefix=SHIFT
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="consumers=2 rope=split" | FileCheck %s --check-prefix=TWO
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rope=fused" | FileCheck %s --check-prefix=FUSED
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="consumers=3 rope=fused" | FileCheck %s --check-prefix=FUSED3
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="q-rope=producer" | FileCheck %s --check-prefix=QPROD
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="consumers=3 q-rope=producer rope=split" | FileCheck %s --check-prefix=QPROD3
// RUN: not attn-opt %s --lower-tile-to-hopper="consumers=4" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not attn-opt %S/../Inputs/hopper/h128_rope_causal.mlir --attn-fuse --attn-tile="kernel=hopper" --lower-tile-to-hopper="consumers=3" 2>&1 | FileCheck %s --check-prefix=D128

// (rope=split: at head dim 64 up to N = 4096 auto now picks ahead, whose
// producer rotates K; lower-tile-to-hopper-ahead.mlir tests it.)
// Head dim 64 from N = 4096 on: three consumer warpgroups of 64 query rows
// (192-row query blocks, 512 threads), the registers split 32 / 160, the
// empty barriers waiting for 384 consumer threads, and each consumer's RoPE
// constants for Q kept in shared memory across the tile loop (24 bytes per
// consumer thread) and the 1,024-byte tile of ones of the tensor cores' row
// sums (lower-tile-to-hopper-softmax.mlir): 167,032 bytes in all. 2 heads x
// 22 query blocks = 44 tiles. The hand-off of the tensor cores goes round
// the three: the last consumer opens the first one's barrier (4) before any
// tile.
// CHECK: llvm.func @long__attn(
// CHECK-SAME: block = array<i32: 512, 1, 1>, dynamic_shared_bytes = 167032 : i64, grid = array<i32: 44, 1, 1>
// CHECK-SAME: {box = array<i64: 64, 192, 1, 1>, dims = array<i64: 64, 4096, 2, 1>, dtype = "bf16", kind = "tensormap", name = "q_map"
// CHECK-SAME: nvvm.maxntid = array<i32: 512, 1, 1>
// CHECK: nvvm.mbarrier.init %{{.*}}, %c384_i32
// CHECK: nvvm.setmaxregister  decrease 32
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c24576_i32
// CHECK: nvvm.setmaxregister  increase 160
// CHECK: llvm.call @__nv_sinf
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr<3>
// CHECK: llvm.call_intrinsic "llvm.nvvm.barrier.cta.arrive.aligned.count"(%c4_i32{{.*}}, %c256_i32
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// At head dim 64 the loop waits for P V with a plain wait: keeping it after
// the MUFU-bound softmax, as at 128, measured 1-7% slower.
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK-NOT: setp.eq.f32 p, $0
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// Below 4096 rows two consumers, as at head dim 128.
// CHECK: llvm.func @short__attn(
// CHECK-SAME: block = array<i32: 384, 1, 1>, dynamic_shared_bytes = 148600 : i64, grid = array<i32: 16, 1, 1>
// CHECK-SAME: nvvm.maxntid = array<i32: 384, 1, 1>
// CHECK: nvvm.setmaxregister  decrease 40
// CHECK: nvvm.setmaxregister  increase 232

// A causal kernel's query blocks end at the last query row: 22 blocks of 192
// rows overshoot 4096 by 128, so block qb starts at row 192 qb - 128 (in the
// producer, which loads Q there, and in the consumers). The first block's two
// warpgroups of rows before row 0 then read one key block, where the last
// block's would have read all 32. 1024 rows are 8 whole blocks of 128: no
// shift.
// SHIFT: llvm.func @long__attn(
// SHIFT: arith.muli %{{.*}}, %c192_i32 : i32
// SHIFT-NEXT: %c-128_i32 = arith.constant -128 : i32
// SHIFT-NEXT: arith.addi
// SHIFT: arith.muli %{{.*}}, %c192_i32 : i32
// SHIFT-NEXT: %c-128_i32 = arith.constant -128 : i32
// SHIFT-NEXT: arith.addi
// SHIFT: llvm.func @short__attn(
// SHIFT-NOT: arith.constant -64 : i32
// SHIFT-NOT: arith.constant -128 : i32
// SHIFT: llvm.return

// consumers=2 asks for two at any length.
// TWO: llvm.func @long__attn(
// TWO-SAME: block = array<i32: 384, 1, 1>, dynamic_shared_bytes = 148600 : i64, grid = array<i32: 64, 1, 1>
// TWO-SAME: {box = array<i64: 64, 128, 1, 1>

// When the producer warps rotate K (fused), they need 56 registers, which
// would leave three consumers 152: the default goes back to two.
// FUSED: llvm.func @long(
// FUSED-SAME: block = array<i32: 384, 1, 1>
// FUSED: nvvm.setmaxregister  decrease 56
// FUSED: nvvm.setmaxregister  increase 224
// So does it when the producer warps rotate Q (q-rope=producer).
// QPROD: llvm.func @long__attn(
// QPROD-SAME: block = array<i32: 384, 1, 1>
// QPROD: nvvm.setmaxregister  decrease 56
// QPROD: arith.sitofp %{{.*}} : i32 to f32
// QPROD: nvvm.setmaxregister  increase 224
// With three consumers the 192-row blocks are shifted (above), so the
// producer's first block starts at row -128 and its first row's position
// must convert signed for the real rows, which step from it, to be right
// (unsigned, a GPU check failed with a relative error of 0.65).
// QPROD3: llvm.func @long__attn(
// QPROD3: nvvm.setmaxregister  decrease 56
// QPROD3: arith.muli %{{.*}}, %c192_i32 : i32
// QPROD3-NEXT: %c-128_i32 = arith.constant -128 : i32
// QPROD3-NEXT: arith.addi
// QPROD3: arith.muli %{{.*}}, %c192_i32 : i32
// QPROD3-NEXT: %c-128_i32 = arith.constant -128 : i32
// QPROD3-NEXT: %[[QROW:.*]] = arith.addi
// QPROD3-NOT: arith.uitofp
// QPROD3: arith.sitofp %{{.*}} : i32 to f32
// QPROD3: nvvm.setmaxregister  increase 152
// Asked for, three consumers get 152.
// FUSED3: llvm.func @long(
// FUSED3-SAME: block = array<i32: 512, 1, 1>
// FUSED3: nvvm.setmaxregister  decrease 56
// FUSED3: nvvm.setmaxregister  increase 152

// BAD: option 'consumers' expects 0, 2 or 3, found '4'
// D128: error: no Hopper kernel for 'h128_rope_causal': 3 consumer warpgroups need head dim 64 (their registers do not hold the accumulators of a larger one) (found head dim 128)
func.func @long(%q: tensor<1x2x4096x64xbf16>, %k: tensor<1x2x4096x64xbf16>, %v: tensor<1x2x4096x64xbf16>) -> tensor<1x2x4096x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<1x2x4096x64xbf16>, tensor<1x2x4096x64xbf16>, tensor<1x2x4096x64xbf16>) -> tensor<1x2x4096x64xbf16>
  return %o : tensor<1x2x4096x64xbf16>
}

func.func @short(%q: tensor<1x2x1024x64xbf16>, %k: tensor<1x2x1024x64xbf16>, %v: tensor<1x2x1024x64xbf16>) -> tensor<1x2x1024x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<1x2x1024x64xbf16>, tensor<1x2x1024x64xbf16>, tensor<1x2x1024x64xbf16>) -> tensor<1x2x1024x64xbf16>
  return %o : tensor<1x2x1024x64xbf16>
}
