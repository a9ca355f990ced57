// RUN: attn-opt %s --attn-fuse --attn-grad --attn-tile=kernel=mma --lower-tile-to-mma="chip=sm_80 fallback=true" | FileCheck %s
// RUN: attn-opt %s --attn-fuse --attn-grad --attn-tile=kernel=mma --lower-tile-to-mma="chip=sm_80 fallback=true" | FileCheck %s --check-prefix=PLAIN
// RUN: attn-opt %s --attn-fuse --attn-grad --attn-tile=kernel=mma --lower-tile-to-mma="chip=sm_86 fallback=true" | FileCheck %s --check-prefix=SM86
// RUN: attn-opt %s --attn-fuse --attn-grad --attn-tile=kernel=mma --lower-tile-to-mma="chip=sm_80 fallback=true grad-block-n=64" | FileCheck %s --check-prefix=K64
// RUN: not attn-opt %s --lower-tile-to-mma="grad-block-n=96" 2>&1 | FileCheck %s --check-prefix=BADN
// RUN: not attn-opt %s --lower-tile-to-mma="grad-fallback=maybe" 2>&1 | FileCheck %s --check-prefix=BADOPT

// The backward of an attention (issue 29) on the mma.sync path (sm_80 and
// newer): lower-tile-to-mma turns attn-tile's @f__grad__dkdv and
// @f__grad__dq into the kernels of lib/Kernels/mma_attention_bwd.c and one
// launch program @f__grad, which replaces attn-tile's: the Hopper
// backward's program (the pre placement's RoPE kernels into q_rot and
// k_rot, __pre, __main, __dq_out, __dk_out) with an mma.sync main kernel.
// Before, lower-tile-to-mma left every backward to lower-tile-to-gpu
// (scalar FMA loops). d32__grad (head dim 32) still is, with its program.
// CHECK: tile.programs = [{inputs = ["q", "k", "v", "out", "lse", "dout", "dq", "dk", "dv"], name = "d32__grad"
// CHECK-LABEL: func.func @d32(
// CHECK: func.func @d32__grad__dkdv(
// CHECK: func.func @d32__grad__dq(
// CHECK-NOT: func.func @rope_causal__grad
// CHECK: gpu.module @attn_kernels [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx70">]
// CHECK-SAME: attn.programs = [{inputs = ["q", "k", "v", "out", "lse", "dout", "dq", "dk", "dv"], name = "rope_causal__grad", steps = [{args = ["q", "q_rot"], kernel = "rope_causal__grad__rope_q"}, {args = ["k", "k_rot"], kernel = "rope_causal__grad__rope_k"}, {args = ["out", "dout", "lse", "rows", "dq_acc"], kernel = "rope_causal__grad__pre"}, {args = ["q_rot", "k_rot", "v", "dout", "dv", "rows", "dq_acc", "dk_acc"], kernel = "rope_causal__grad__main"}, {args = ["dq_acc", "dq"], kernel = "rope_causal__grad__dq_out"}, {args = ["dk_acc", "dk"], kernel = "rope_causal__grad__dk_out"}], workspace = [{bytes = 153600 : i64, name = "q_rot"}, {bytes = 153600 : i64, name = "k_rot"}, {bytes = 5120 : i64, name = "rows"}, {bytes = 327680 : i64, name = "dq_acc"}, {bytes = 307200 : i64, name = "dk_acc"}]}
// CHECK-SAME: name = "plain_f16__grad", steps = [{args = ["out", "dout", "lse", "rows", "dq_acc"], kernel = "plain_f16__grad__pre"}, {args = ["q", "k", "v", "dout", "dv", "rows", "dq_acc", "dk_acc"], kernel = "plain_f16__grad__main"}
// CHECK-SAME: name = "softcap__grad"
// CHECK-SAME: name = "gqa_window__grad"
// CHECK: llvm.func @rope_causal(
// CHECK-SAME: kernel = "mma-sync"
// CHECK: llvm.func @rope_causal__grad__rope_q(
// CHECK: llvm.func @rope_causal__grad__rope_k(
// CHECK: llvm.func @rope_causal__grad__pre(
// CHECK-SAME: kernel = "hopper-bwd-pre"
// The main kernel: a CTA of 8 warps per 128 keys of a K/V head (grid 3 x
// 2 x 1 for 300 keys), K and V (8 cp.async of 16 bytes a thread each) in
// the first step's commit group with its Q and dO (4 each), lse2 and D;
// two stages (148,480 bytes at head dim 128 on sm_80).
// CHECK-LABEL: llvm.func @rope_causal__grad__main(
// CHECK-SAME: block = array<i32: 256, 1, 1>, dynamic_shared_bytes = 148480 : i64, grid = array<i32: 3, 2, 1>, kernel = "mma-sync-bwd"
// CHECK-SAME: name = "q", shape = array<i64: 1, 2, 300, 128>
// CHECK-SAME: name = "dk_acc", shape = array<i64: 76800>
// CHECK-COUNT-16: cp.async.cg.shared.global [$0], [$1], 16, $2;
// CHECK: scf.if
// CHECK-COUNT-8: cp.async.cg.shared.global [$0], [$1], 16, $2;
// CHECK: nvvm.cp.async.commit.group
// Per step: the step's group waited for (2 stages: all), a barrier, the
// next step's loads issued, then S^T = K_w Q^T (ldmatrix of both, mma.sync
// m16n8k16), P^T by exp2 (32 elements a thread), masked only where the
// block reaches the diagonal or the end of the keys.
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.barrier
// CHECK: nvvm.cp.async.commit.group
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-COUNT-32: nvvm.ex2.approx.ftz.f
// CHECK: arith.cmpi ugt
// CHECK: scf.if
// dP^T = V_w dO^T, dS^T stored (16 pairs a thread), dV += P^T dO and dK +=
// dS^T Q (B by ldmatrix.trans), a barrier, then dQ of 16 query rows and
// half the columns a warp (dS^T and K by ldmatrix.trans): 32
// red.global.add.f32 a thread at head dim 128.
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-COUNT-16: : i32, !llvm.ptr<3>
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK: nvvm.barrier
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-COUNT-32: red.global.add.f32
// CHECK-NOT: red.global.add.f32
// CHECK: scf.yield
// No copy in flight at the end; dV (16-bit pairs) and dK (f32 pairs into
// dk_acc) of the rows below 300.
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: arith.cmpi ult, %{{.*}}, %c300_i32
// CHECK: llvm.store {{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr
// CHECK-LABEL: llvm.func @rope_causal__grad__dq_out(
// CHECK-SAME: kernel = "hopper-bwd-out"
// CHECK-LABEL: llvm.func @rope_causal__grad__dk_out(
// The softcap's chain on S^T (the scale, 30 tanh(s / 30)) and its
// derivative, per element.
// CHECK-LABEL: llvm.func @softcap__grad__main(
// CHECK: tanh
// CHECK: red.global.add.f32
// GQA (4 query heads on 2 K/V heads): 2 heads a K/V head's steps; a
// window of 100 keys left of the causal diagonal.
// CHECK-LABEL: llvm.func @gqa_window__grad__main(
// CHECK-SAME: grid = array<i32: 2, 2, 1>, kernel = "mma-sync-bwd"
// CHECK-COUNT-32: nvvm.ex2.approx.ftz.f
// CHECK: scf.if
// CHECK-COUNT-16: red.global.add.f32
// CHECK-NOT: red.global.add.f32
// CHECK: scf.yield

// Head dim 64, f16, no mask: 82,944 bytes, f16 mma.sync, no select
// between P and dP^T (neither causal nor a partial key block), 16 adds (32
// columns a warp).
// PLAIN-LABEL: llvm.func @plain_f16__grad__main(
// PLAIN-SAME: dynamic_shared_bytes = 82944 : i64, grid = array<i32: 2, 2, 1>, kernel = "mma-sync-bwd"
// PLAIN: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PLAIN-COUNT-32: nvvm.ex2.approx.ftz.f
// PLAIN-NOT: arith.select
// PLAIN: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PLAIN-COUNT-16: red.global.add.f32
// PLAIN-NOT: red.global.add.f32
// PLAIN: scf.yield

// sm_86 (99 KiB a CTA): head dim 128 takes 64 keys (4 warps) and one
// stage (74,240 bytes): per step a barrier (the stage is free), the step's
// loads, all waited for, a barrier. Head dim 64 keeps 128 keys, two stages.
// SM86: gpu.module @attn_kernels [#nvvm.target<O = 3, chip = "sm_86", features = "+ptx71">]
// SM86-LABEL: llvm.func @rope_causal__grad__main(
// SM86-SAME: block = array<i32: 128, 1, 1>, dynamic_shared_bytes = 74240 : i64
// SM86: nvvm.cp.async.commit.group
// SM86: scf.for
// SM86-NEXT: arith.index_cast
// SM86: nvvm.barrier
// SM86: nvvm.cp.async.commit.group
// SM86-NEXT: nvvm.cp.async.wait.group 0
// SM86-NEXT: nvvm.barrier
// SM86-LABEL: llvm.func @plain_f16__grad__main(
// SM86-SAME: block = array<i32: 256, 1, 1>, dynamic_shared_bytes = 82944 : i64

// grad-block-n=64: 4 warps of 16 keys a CTA (grid 5 x 2 x 1), dQ of all
// 128 columns a warp, 64 columns at a time (64 adds).
// K64-LABEL: llvm.func @rope_causal__grad__main(
// K64-SAME: block = array<i32: 128, 1, 1>, dynamic_shared_bytes = 107520 : i64, grid = array<i32: 5, 2, 1>
// K64-COUNT-64: red.global.add.f32
// K64-NOT: red.global.add.f32
// K64: scf.yield
// K64-LABEL: llvm.func @plain_f16__grad__main(
// K64-SAME: dynamic_shared_bytes = 58368 : i64, grid = array<i32: 4, 2, 1>
// K64-COUNT-32: red.global.add.f32
// K64-NOT: red.global.add.f32
// K64: scf.yield

// BADOPT: option 'grad-fallback' expects true or false, found 'maybe'
// BADN: option 'grad-block-n' must be 0, 64 or 128, found 96

func.func @rope_causal(%q: tensor<1x2x300x128xbf16>, %k: tensor<1x2x300x128xbf16>, %v: tensor<1x2x300x128xbf16>) -> tensor<1x2x300x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<1x2x300x128xbf16>, tensor<1x2x300x128xbf16>, tensor<1x2x300x128xbf16>) -> tensor<1x2x300x128xbf16>
  return %o : tensor<1x2x300x128xbf16>
}

func.func @plain_f16(%q: tensor<1x2x256x64xf16>, %k: tensor<1x2x256x64xf16>, %v: tensor<1x2x256x64xf16>) -> tensor<1x2x256x64xf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x2x256x64xf16>, tensor<1x2x256x64xf16>, tensor<1x2x256x64xf16>) -> tensor<1x2x256x64xf16>
  return %o : tensor<1x2x256x64xf16>
}

func.func @d32(%q: tensor<1x2x256x32xbf16>, %k: tensor<1x2x256x32xbf16>, %v: tensor<1x2x256x32xbf16>) -> tensor<1x2x256x32xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.17677669529663687 : f64, causal = true} : (tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>) -> tensor<1x2x256x32xbf16>
  return %o : tensor<1x2x256x32xbf16>
}

func.func @softcap(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, mods = ["scale", "softcap"], softcap = 30.0 : f64} : (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16>
  return %o : tensor<1x2x256x64xbf16>
}

func.func @gqa_window(%q: tensor<1x4x200x64xbf16>, %k: tensor<1x2x200x64xbf16>, %v: tensor<1x2x200x64xbf16>) -> tensor<1x4x200x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, window = array<i64: 100, 0>} : (tensor<1x4x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>) -> tensor<1x4x200x64xbf16>
  return %o : tensor<1x4x200x64xbf16>
}
