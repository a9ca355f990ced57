// RUN: attn-opt %s --attn-fuse --attn-grad --attn-tile --lower-tile-to-hopper="fallback=true" | FileCheck %s
// The default is dq-reduce=bulk (measured faster on the H200); red is checked explicitly.
// RUN: attn-opt %s --attn-fuse --attn-grad --attn-tile --lower-tile-to-hopper="fallback=true" | FileCheck %s --check-prefix=BULK
// RUN: attn-opt %s --attn-fuse --attn-grad --attn-tile --lower-tile-to-hopper="fallback=true dq-reduce=red dp-issue=late" | FileCheck %s --check-prefix=MAIN
// RUN: attn-opt %s --attn-fuse --attn-grad --attn-tile --lower-tile-to-hopper="fallback=true dq-reduce=bulk" | FileCheck %s --check-prefix=BULK
// RUN: not attn-opt %s --lower-tile-to-hopper="dq-reduce=tree" 2>&1 | FileCheck %s --check-prefix=BADDQ
// RUN: attn-opt %s --attn-fuse --attn-grad --attn-tile --lower-tile-to-hopper="fallback=true" | FileCheck %s --check-prefix=SCHED
// RUN: attn-opt %s --attn-fuse --attn-grad --attn-tile --lower-tile-to-hopper="fallback=true dp-issue=late ds-buffers=1" | FileCheck %s --check-prefix=LATE
// RUN: attn-opt %s --attn-fuse --attn-grad --attn-tile --lower-tile-to-hopper="fallback=true dp-issue=early ds-buffers=2" | FileCheck %s --check-prefix=EARLY
// RUN: not attn-opt %s --lower-tile-to-hopper="dp-issue=soon" 2>&1 | FileCheck %s --check-prefix=BADDP
// RUN: attn-opt %s --attn-fuse --attn-grad --attn-tile --lower-tile-to-hopper="fallback=true deterministic=true" | FileCheck %s --check-prefix=DET
// RUN: attn-opt %S/../Inputs/hopper/h256_rope_causal.mlir --attn-fuse --attn-grad --attn-tile=kernel=hopper --lower-tile-to-hopper | FileCheck %s --check-prefix=D256
// RUN: attn-opt %S/../Inputs/hopper/h256_rope_causal.mlir --attn-fuse --attn-grad --attn-tile=kernel=hopper --lower-tile-to-hopper=dq-reduce=red | FileCheck %s --check-prefix=D256RED
// RUN: not attn-opt %s --lower-tile-to-hopper="deterministic=maybe" 2>&1 | FileCheck %s --check-prefix=BADDET
// RUN: not attn-opt %s --lower-tile-to-hopper="ds-buffers=3" 2>&1 | FileCheck %s --check-prefix=BADDS

// The backward of an attention (issue 29) on sm_90a: lower-tile-to-hopper
// turns attn-tile's @f__grad__dkdv and @f__grad__dq into the kernels of
// lib/Kernels/attention_bwd.c and one launch program @f__grad, which
// replaces attn-tile's (whose d32__grad, left to the plain path: head dim
// 32, is moved into attn.programs as before). With RoPE, Q and K
// are rotated first by the pre placement's kernels, into q_rot and k_rot,
// which the main kernel reads. Before, both tile kernels were left to
// lower-tile-to-gpu (scalar FMA loops). A softcap gets the Hopper backward
// too: the chain (the scale, then 30 tanh(s / 30)) on the raw S^T, and
// dS times its derivative; tile.ds's scale (1: the derivative holds the
// scale) at the end.
// CHECK-NOT: tile.programs
// CHECK-LABEL: func.func @rope_causal(
// CHECK-NOT: func.func @rope_causal__grad
// CHECK-LABEL: func.func @plain_f16(
// CHECK-NOT: func.func @plain_f16__grad
// CHECK-LABEL: func.func @d32(
// CHECK: func.func @d32__grad__dkdv(
// CHECK: func.func @d32__grad__dq(
// CHECK-LABEL: func.func @softcap(
// CHECK-NOT: func.func @softcap__grad
// CHECK: gpu.module @attn_kernels
// CHECK-SAME: attn.programs = [{inputs = ["q", "k", "v", "out", "lse", "dout", "dq", "dk", "dv"], name = "d32__grad", steps = [{args = ["q", "k", "v", "out", "lse", "dout", "dk", "dv"], kernel = "d32__grad__dkdv"}, {args = ["q", "k", "v", "out", "lse", "dout", "dq"], kernel = "d32__grad__dq"}], workspace = []}
// CHECK-SAME: {inputs = ["q", "k", "v", "out", "lse", "dout", "dq", "dk", "dv"], name = "rope_causal__grad", steps = [{args = ["q", "q_rot"], kernel = "rope_causal__grad__rope_q"}, {args = ["k", "k_rot"], kernel = "rope_causal__grad__rope_k"}, {args = ["out", "dout", "lse", "rows", "dq_acc"], kernel = "rope_causal__grad__pre"}, {args = ["q_rot", "k_rot", "v", "dout", "dv", "rows", "dq_acc", "dk_acc"], kernel = "rope_causal__grad__main"}, {args = ["dq_acc", "dq"], kernel = "rope_causal__grad__dq_out"}, {args = ["dk_acc", "dk"], kernel = "rope_causal__grad__dk_out"}], workspace = [{bytes = 153600 : i64, name = "q_rot"}, {bytes = 153600 : i64, name = "k_rot"}, {bytes = 5120 : i64, name = "rows"}, {bytes = 327680 : i64, name = "dq_acc"}, {bytes = 307200 : i64, name = "dk_acc"}]}
// CHECK-SAME: {inputs = ["q", "k", "v", "out", "lse", "dout", "dq", "dk", "dv"], name = "plain_f16__grad", steps = [{args = ["out", "dout", "lse", "rows", "dq_acc"], kernel = "plain_f16__grad__pre"}, {args = ["q", "k", "v", "dout", "dv", "rows", "dq_acc", "dk_acc"], kernel = "plain_f16__grad__main"}, {args = ["dq_acc", "dq"], kernel = "plain_f16__grad__dq_out"}, {args = ["dk_acc", "dk"], kernel = "plain_f16__grad__dk_out"}], workspace = [{bytes = 4096 : i64, name = "rows"}, {bytes = 131072 : i64, name = "dq_acc"}, {bytes = 131072 : i64, name = "dk_acc"}]}
// CHECK-SAME: {inputs = ["q", "k", "v", "out", "lse", "dout", "dq", "dk", "dv"], name = "softcap__grad", steps = [{args = ["out", "dout", "lse", "rows", "dq_acc"], kernel = "softcap__grad__pre"}, {args = ["q", "k", "v", "dout", "dv", "rows", "dq_acc", "dk_acc"], kernel = "softcap__grad__main"}
// CHECK: llvm.func @rope_causal__grad__rope_q(
// CHECK: llvm.func @rope_causal__grad__rope_k(
// The preprocess: 64 padded rows a CTA (300 rows: 5 blocks), D by a warp
// per row, lse * log2(e) and D into rows, dq_acc zeroed.
// CHECK-LABEL: llvm.func @rope_causal__grad__pre(
// CHECK-SAME: grid = array<i32: 5, 2, 1>, kernel = "hopper-bwd-pre"
// CHECK: nvvm.shfl.sync bfly
// CHECK: llvm.store {{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr
// The finishing kernels: the scale, RoPE's inverse rotation (sin negated),
// 16-bit stores (rotate-half: the pair's columns 64 apart).
// CHECK-LABEL: llvm.func @rope_causal__grad__dq_out(
// CHECK-SAME: grid = array<i32: 150, 1, 1>, kernel = "hopper-bwd-out"
// CHECK: llvm.call @__nv_sinf
// CHECK: arith.negf
// CHECK: llvm.store {{.*}} : i16, !llvm.ptr
// CHECK-LABEL: llvm.func @rope_causal__grad__dk_out(
// Without RoPE: a pair of adjacent columns, one 4-byte store.
// CHECK-LABEL: llvm.func @plain_f16__grad__dq_out(
// CHECK-NOT: __nv_sinf
// CHECK: llvm.store {{.*}} : i32, !llvm.ptr
// CHECK-LABEL: llvm.func @plain_f16__grad__dk_out(

// The main kernel: a CTA per 128 keys of a K/V head (grid 3 x 2 x 1 for
// 300 keys), 384 threads, the four tensor maps (Q and dO in boxes of 64
// rows, K and V of 128), two stages.
// MAIN-LABEL: llvm.func @rope_causal__grad__main(
// MAIN-SAME: nvvm.grid_constant
// MAIN-SAME: block = array<i32: 384, 1, 1>, dynamic_shared_bytes = 150568 : i64, grid = array<i32: 3, 2, 1>, kernel = "hopper-bwd"
// MAIN-SAME: {box = array<i64: 64, 64, 1, 1>, dims = array<i64: 128, 300, 2, 1>, dtype = "bf16", kind = "tensormap", name = "q_map", swizzle = 128 : i64, tensor = "q"}
// MAIN-SAME: {box = array<i64: 64, 128, 1, 1>, dims = array<i64: 128, 300, 2, 1>, dtype = "bf16", kind = "tensormap", name = "k_map", swizzle = 128 : i64, tensor = "k"}
// MAIN-SAME: name = "dout_map", swizzle = 128 : i64, tensor = "dout"
// MAIN: nvvm.setmaxregister  decrease 24
// Thread 0: K and V once (two 64-column regions each), then per step Q and
// dO by TMA and their rows' lse2 and D by bulk copies, on the stage's
// full barrier.
// MAIN: nvvm.cp.async.bulk.tensor.shared.cluster.global
// MAIN: nvvm.cp.async.bulk.shared.cluster.global
// MAIN: nvvm.cp.async.bulk.shared.cluster.global
// MAIN: nvvm.setmaxregister  increase 240
// S^T = K Q^T (m64n64, both K-major), then P^T by exp2, masked only on
// blocks at the diagonal or the end of the keys.
// MAIN: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}} p, 1, 1, 0, 0; }
// MAIN: nvvm.ex2.approx.ftz.f
// MAIN: scf.if
// MAIN: arith.select
// dP^T = V dO^T (dp-issue=late: after P; waited for: no register of a
// wgmma in flight is read),
// dS^T into shared memory between the consumers' barriers, then dV += P^T
// dO and dK += dS^T Q with P and dS in registers (dO and Q N-major), and
// dQ = dS K with both operands M/N-major, added into dq_acc.
// MAIN: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}} p, 1, 1, 0, 0; }
// MAIN: nvvm.wgmma.wait.group.sync.aligned 0
// MAIN: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// MAIN: nvvm.fence.proxy
// MAIN: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}} p, 1, 1, 1; }
// MAIN: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}} p, 1, 1, 1; }
// MAIN: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// MAIN: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}} p, 1, 1, 1, 1; }
// MAIN: nvvm.wgmma.wait.group.sync.aligned 0
// MAIN: nvvm.mbarrier.arrive
// MAIN-COUNT-32: red.global.add.f32
// MAIN-NOT: cp.reduce.async.bulk
// MAIN-NOT: nvvm.cp.async.bulk.wait_group
// MAIN: scf.yield
// The epilogue: dV (16-bit pairs) and dK (f32 into dk_acc) of rows < 300.
// MAIN: arith.cmpi ult, %{{.*}}, %c300_i32
// MAIN: llvm.store {{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr
// MAIN-LABEL: llvm.func @plain_f16__grad__main(
// MAIN-SAME: grid = array<i32: 2, 2, 1>, kernel = "hopper-bwd"
// MAIN: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// No mask: neither causal nor a partial key block.
// MAIN-NOT: arith.select
// MAIN: red.global.add.f32

// The softcap's main kernel: per element the scale, s / 30 as s (1 / 30)
// (no division), tanh.approx, 30 tanh, and the derivative's 1 - tanh^2
// (its tanh the same op, merged by LLVM); dS = P g (dP - D); the finishing
// kernels multiply by tile.ds's scale, 1.
// MAIN-LABEL: llvm.func @softcap__grad__main(
// MAIN-NOT: arith.divf
// MAIN: arith.constant 0.0333333351 : f32
// MAIN: llvm.intr.tanh({{.*}}) {fastmathFlags = #llvm.fastmath<afn>}
// MAIN: wgmma.mma_async
// MAIN-LABEL: llvm.func @softcap__grad__dq_out(
// MAIN: arith.constant 1.000000e+00 : f32
// MAIN-NEXT: arith.mulf %{{.*}}, %cst

// dq-reduce=bulk: each consumer warpgroup's dQ tile (64 rows by 64
// columns, f32) goes through a buffer of its own (rows of 272 bytes, two
// of them: 34,816 bytes more), then the bulk-copy engine adds it into
// dq_acc a row at a time. Before the tile is stored, the issuing threads
// (the warpgroup's first 64) wait until the last step's reduces have read
// it, and the warpgroup meets on its own named barrier (2 or 3, not the
// consumers' 1 nor bar.sync 0); after, a proxy fence and the barrier
// again, then a reduce of 256 bytes per issuing thread, committed. After
// the loop the issuers wait for their last reduces.
// BULK-LABEL: llvm.func @rope_causal__grad__main(
// BULK-SAME: dynamic_shared_bytes = 185384 : i64
// BULK: nvvm.mbarrier.arrive
// BULK-NOT: red.global.add.f32
// BULK: %[[ID:.*]] = arith.addi %{{.*}}, %c2_i32{{.*}} : i32
// BULK: %[[ISSUER:.*]] = arith.cmpi ult, %{{.*}}, %c64_i32{{.*}} : i32
// BULK-NEXT: scf.if %[[ISSUER]] {
// BULK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// BULK-NEXT: }
// BULK-NEXT: %[[N1:.*]] = arith.constant 128 : i32
// BULK-NEXT: nvvm.barrier id = %[[ID]] number_of_threads = %[[N1]]
// BULK-COUNT-16: llvm.store {{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr<3>
// BULK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// BULK-NEXT: %[[N2:.*]] = arith.constant 128 : i32
// BULK-NEXT: nvvm.barrier id = %[[ID]] number_of_threads = %[[N2]]
// BULK-NEXT: scf.if %[[ISSUER]] {
// BULK: arith.constant 272 : i32
// BULK: llvm.inline_asm has_side_effects "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [$0], [$1], 256;", "l,r" %{{.*}}, %{{.*}} : (!llvm.ptr, i32) -> ()
// BULK-NEXT: nvvm.cp.async.bulk.commit.group
// BULK-NEXT: }
// BULK-NEXT: scf.yield
// BULK: scf.if
// BULK-NEXT: nvvm.cp.async.bulk.wait_group 0{{$}}
// BULK-LABEL: llvm.func @plain_f16__grad__main(
// BULK-SAME: dynamic_shared_bytes = 136232 : i64
// BULK-NOT: red.global.add.f32
// BULK: cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32
// BULK-NOT: red.global.add.f32

// BADDQ: option 'dq-reduce' expects red or bulk, found 'tree'

// The schedule options. dp-issue=early: dP^T = V dO^T is issued right
// after S^T = K Q^T (two commit groups, a wait for the first), so the
// tensor cores run it while P is computed, and waited for after; auto
// takes it where the chain is linear (rope_causal), not with a derivative
// (softcap's tanh: its registers spilled). ds-buffers=2: dS^T in two tiles
// by step parity (16 KiB more), so the consumers store it without meeting
// first: one named barrier a step (before dQ) instead of two; auto at head
// dim 64 (plain_f16), not 128 (rope_causal).
// SCHED-LABEL: llvm.func @rope_causal__grad__main(
// SCHED-SAME: dynamic_shared_bytes = 185384 : i64
// SCHED: nvvm.wgmma.commit.group.sync.aligned
// SCHED-NOT: nvvm.wgmma.wait.group
// SCHED: wgmma.mma_async.sync.aligned.m64n64k16
// SCHED: nvvm.wgmma.commit.group.sync.aligned
// SCHED-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// SCHED-NOT: wgmma.mma_async
// SCHED: nvvm.ex2.approx.ftz.f
// SCHED: nvvm.wgmma.wait.group.sync.aligned 0
// SCHED: nvvm.barrier id = %[[CB:[0-9a-z_]+]] number_of_threads = %c256
// SCHED: nvvm.barrier id = %[[CB]] number_of_threads = %c256
// SCHED-LABEL: llvm.func @plain_f16__grad__main(
// SCHED-SAME: dynamic_shared_bytes = 136232 : i64
// SCHED: nvvm.wgmma.wait.group.sync.aligned 1
// SCHED-NOT: number_of_threads = %c256
// SCHED: nvvm.barrier id = %{{.*}} number_of_threads = %c256
// SCHED-NOT: number_of_threads = %c256
// SCHED: llvm.func @plain_f16__grad__dq_out(
// SCHED-LABEL: llvm.func @softcap__grad__main(
// SCHED-NOT: nvvm.wgmma.wait.group.sync.aligned 1
// SCHED: llvm.func @softcap__grad__dq_out(
// LATE-LABEL: llvm.func @plain_f16__grad__main(
// LATE-SAME: dynamic_shared_bytes = 119848 : i64
// LATE-NOT: nvvm.wgmma.wait.group.sync.aligned 1
// LATE: llvm.func @plain_f16__grad__dq_out(
// EARLY-LABEL: llvm.func @rope_causal__grad__main(
// EARLY-SAME: dynamic_shared_bytes = 201768 : i64
// EARLY-LABEL: llvm.func @softcap__grad__main(
// EARLY: nvvm.wgmma.wait.group.sync.aligned 1
// BADDP: option 'dp-issue' expects auto, late or early, found 'soon'

// deterministic=true: dQ's adds take turns. The rows workspace gets a u32
// turn per query block of each head after lse2 and D (5120 + 4 * 2 * 5
// bytes), which __pre zeroes; in __main each consumer warpgroup's thread 0
// polls (acquire) until the turn is its own, 2 (key block - the first that
// sees the query block) + its index, the warpgroup meets on its own
// barrier, adds by red.global.add (never the bulk reduce, which
// deterministic overrides), meets again, and thread 0 passes the turn on
// (a release store of the turn + 1).
// DET: name = "rope_causal__grad"
// DET-SAME: {bytes = 5160 : i64, name = "rows"}
// DET-LABEL: llvm.func @rope_causal__grad__pre(
// DET: llvm.store %{{.*}} : i32, !llvm.ptr
// DET-LABEL: llvm.func @rope_causal__grad__main(
// DET-NOT: cp.reduce.async.bulk
// DET: ld.acquire.gpu.global.u32 v, [$0]; setp.eq.u32 p, v, $1;
// DET: %[[N1:.*]] = arith.constant 128 : i32
// DET-NEXT: nvvm.barrier id = %[[WB:[0-9a-z_]+]] number_of_threads = %[[N1]]
// DET-COUNT-32: red.global.add.f32
// DET-NEXT: %[[N2:.*]] = arith.constant 128 : i32
// DET-NEXT: nvvm.barrier id = %[[WB]] number_of_threads = %[[N2]]
// DET-NEXT: scf.if
// DET: llvm.store %{{.*}} atomic syncscope("device") release {alignment = 4 : i64} : i32, !llvm.ptr<1>
// DET-NOT: cp.reduce.async.bulk
// DET-LABEL: llvm.func @rope_causal__grad__dq_out(
// BADDET: option 'deterministic' expects true or false, found 'maybe'

// Head dim 256: a CTA per 64 keys (300 keys: 5), both consumers on them.
// Each computes S^T = K Q^T over the 256 columns (16 m64n64k16 steps),
// keeps dV and dK for its 128 columns (m64n128k16 from P and dS in
// registers), stores half of dS^T (its 8 of the 16 pairs a thread holds),
// and adds dQ as two 64-column tiles (m64n64k16 over the 64 keys, twice).
// dq-reduce=bulk (the default) leaves one stage of the ring (176,152
// bytes of shared memory), red two (207,912).
// D256-LABEL: llvm.func @h256_rope_causal__grad__main(
// D256-SAME: dynamic_shared_bytes = 176152 : i64, grid = array<i32: 5, 4, 1>, kernel = "hopper-bwd"
// D256-COUNT-16: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}} p, 1, 1, 0, 0; }
// D256: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// D256: cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32
// D256: cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32
// D256-LABEL: llvm.func @h256_rope_causal__grad__dq_out(
// D256RED-LABEL: llvm.func @h256_rope_causal__grad__main(
// D256RED-SAME: dynamic_shared_bytes = 207912 : i64, grid = array<i32: 5, 4, 1>
// D256RED-COUNT-64: red.global.add.f32
// D256RED-NOT: red.global.add.f32
// D256RED-LABEL: llvm.func @h256_rope_causal__grad__dq_out(
// BADDS: option 'ds-buffers' expects auto, 1 or 2, found '3'

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
