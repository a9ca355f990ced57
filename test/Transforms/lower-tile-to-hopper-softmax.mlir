// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper | FileCheck %s
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rescale=eager row-sum=alu" | FileCheck %s --check-prefix=EAGER
// RUN: attn-opt %S/../Inputs/hopper/h128_norope_causal.mlir --attn-fuse --attn-tile="kernel=hopper" --lower-tile-to-hopper | FileCheck %s --check-prefix=D128
// RUN: attn-opt %S/../Inputs/hopper/h128_norope_causal.mlir --attn-fuse --attn-tile="kernel=hopper" --lower-tile-to-hopper="row-sum=mma pv-wait=early" | FileCheck %s --check-prefix=D128MMA
// RUN: not attn-opt %s --lower-tile-to-hopper="rescale=sometimes" 2>&1 | FileCheck %s --check-prefix=BAD1
// RUN: not attn-opt %s --lower-tile-to-hopper="row-sum=fma" 2>&1 | FileCheck %s --check-prefix=BAD2
// RUN: not attn-opt %s --lower-tile-to-hopper="pv-wait=never" 2>&1 | FileCheck %s --check-prefix=BAD3

// The attention kernel's online softmax (lower-tile-to-hopper's rescale,
// row-sum and pv-wait options). At head dim 64 with three consumers the
// defaults are lazy rescaling and the row sums by the tensor cores:
// - 256 threads each write a word of two bf16 1.0s, a 1,024-byte tile, and
//   fence it for wgmma before the CTA's first barrier;
// - a row's maximum moves only when the block's exceeds it by more than 8
//   (log2 units), so most blocks leave every factor exactly 1, and a warp
//   rescales O and l only if one of its lanes' factors is not (vote.any);
// - each P.V is followed by eight m64n8k16 wgmma of P times the ones
//   (K-major B: trans-b 0), whose accumulators are the rows' sums: no
//   per-element adds, and no sum across the quad in the epilogue;
// - the P.V wait stays where ptxas puts it (early).
// CHECK-LABEL: llvm.func @long(
// CHECK: llvm.store %c1065369472_i32, %{{.*}} : i32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.barrier{{$}}
// CHECK: arith.constant 8.000000e+00 : f32
// CHECK: arith.cmpf ogt
// CHECK: nvvm.vote.sync any %c-1_i32{{.*}}, %{{.*}} -> i1
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}} p, 1, 1, 1; }
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0, $1, $2, $3}, {$8, $9, $10, $11}, $12, p, 1, 1, 0; }
// CHECK-NOT: setp.eq.f32 p, $0
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK-NOT: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c1_i32
// CHECK: nvvm.rcp.approx.ftz.f
// CHECK: llvm.return

// Eager and by the ALUs, as before: no threshold, no vote, no ones.
// EAGER-LABEL: llvm.func @long(
// EAGER-NOT: 1065369472
// EAGER-NOT: vote.sync
// EAGER-NOT: m64n8k16
// EAGER: llvm.return

// At head dim 128 (two consumers, bound by the tensor cores) lazy rescaling
// with the ALUs' sums, and the late wait: after the softmax, in both arms
// of a branch on the row sum.
// D128-LABEL: llvm.func @h128_norope_causal(
// D128: arith.cmpf ogt
// D128: nvvm.vote.sync any
// D128-NOT: m64n8k16
// D128: setp.eq.f32 p, $0, 0fBF800000
// D128: llvm.return
// Asked for there, the ones wgmma have n = 8 whatever the head dim, and the
// early wait has no branch.
// D128MMA-LABEL: llvm.func @h128_norope_causal(
// D128MMA: m64n128k16.f32.bf16.bf16 {{.*}} p, 1, 1, 1; }
// D128MMA-COUNT-8: m64n8k16.f32.bf16.bf16
// D128MMA-NOT: setp.eq.f32 p, $0
// D128MMA: llvm.return

// BAD1: option 'rescale' expects auto, eager or lazy, found 'sometimes'
// BAD2: option 'row-sum' expects auto, alu or mma, found 'fma'
// BAD3: option 'pv-wait' expects auto, early or late, found 'never'
func.func @long(%q: tensor<1x2x4096x64xbf16>, %k: tensor<1x2x4096x64xbf16>, %v: tensor<1x2x4096x64xbf16>) -> tensor<1x2x4096x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<1x2x4096x64xbf16>, tensor<1x2x4096x64xbf16>, tensor<1x2x4096x64xbf16>) -> tensor<1x2x4096x64xbf16>
  return %o : tensor<1x2x4096x64xbf16>
}
