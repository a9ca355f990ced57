// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper | FileCheck %s
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rope=fused" | FileCheck %s --check-prefix=FUSED
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rope=pre" | FileCheck %s --check-prefix=PRE
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="persistent=false" | FileCheck %s --check-prefix=GRID
// RUN: not attn-opt %s --lower-tile-to-hopper="rope=later" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="ctas=5" | FileCheck %s --check-prefix=CTAS
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="q-rope=producer" | FileCheck %s --check-prefix=PRODQ
// RUN: not attn-opt %s --lower-tile-to-hopper="q-rope=both" 2>&1 | FileCheck %s --check-prefix=BADQ
// RUN: not attn-opt %s --lower-tile-to-hopper="persistent=maybe" 2>&1 | FileCheck %s --check-prefix=BADP
// RUN: not attn-opt %s --lower-tile-to-hopper="ctas=-1" 2>&1 | FileCheck %s --check-prefix=BADC
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="ctas=5 tile-overhead=1" | FileCheck %s --check-prefix=OV1
// RUN: not attn-opt %s --lower-tile-to-hopper="tile-overhead=65" 2>&1 | FileCheck %s --check-prefix=BADOV

// The attention tile program becomes one warp-specialised sm_90a kernel:
// 384 threads, three TMA descriptors as grid-constant parameters, wgmma for
// both products, mbarrier-completed TMA loads, setmaxnreg per role. With
// RoPE, K is rotated once per row by a second kernel (split, the default),
// and a launch program runs both. The kernel is persistent: 64 tiles (4
// query blocks x 8 heads x 2 batches) on min(64, 132 SMs) CTAs, each looping
// over its tiles; the consumers rotate Q. With persistent=false there is one
// CTA per tile.
// CHECK: gpu.module @attn_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">]
// CHECK-SAME: attn.programs = [{inputs = ["q", "k", "v", "out"], name = "attn", steps = [{args = ["k", "k_rot"], kernel = "attn__rope_k"}, {args = ["q", "k_rot", "v", "out"], kernel = "attn__attn"}], workspace = [{bytes = 2097152 : i64, name = "k_rot"}]}]
// CHECK: llvm.mlir.global external @attn_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.func @attn__attn(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}
// CHECK-SAME: attn.launch = {{{.*}}block = array<i32: 384, 1, 1>, dynamic_shared_bytes = 230496 : i64, grid = array<i32: 64, 1, 1>, kernel = "hopper-wgmma"
// CHECK-SAME: {box = array<i64: 64, 128, 1, 1>, dims = array<i64: 128, 512, 8, 2>, dtype = "bf16", kind = "tensormap", name = "q_map", swizzle = 128 : i64, tensor = "q"}
// CHECK-SAME: nvvm.kernel, nvvm.maxntid = array<i32: 384, 1, 1>
// CHECK: nvvm.read.ptx.sreg.nctaid.x
// CHECK: nvvm.mbarrier.init %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.setmaxregister decrease 40
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: nvvm.setmaxregister increase 232
// CHECK: llvm.call @__nv_sinf
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, {${{[0-9]+}}, ${{[0-9]+}}, ${{[0-9]+}}, ${{[0-9]+}}}, ${{[0-9]+}}, p, 1, 1, 1
// At head dim 128 the wait for P V comes after the softmax, in both arms
// of a branch on the new row sum, so that ptxas cannot move it above the
// exponentials (it moves a plain wait up to just after the last one).
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: "{ .reg .pred p; setp.eq.f32 p, $0, 0fBF800000; @p bra.uni W1; wgmma.wait_group.sync.aligned 0; bra.uni W2; W1: wgmma.wait_group.sync.aligned 0; W2: }", "f"
// CHECK: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// The rotation kernel reads and writes 16 bytes at a time, two rows per
// iteration (four loads before the stores), through pointers that alias
// nothing.
// CHECK: llvm.func @attn__rope_k(%{{.*}}: !llvm.ptr {llvm.noalias, llvm.readonly}, %{{.*}}: !llvm.ptr {llvm.noalias, llvm.writeonly}) attributes {attn.launch = {{{.*}}kernel = "rope-k"
// CHECK: scf.for
// CHECK-COUNT-4: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xi32>
// CHECK-COUNT-2: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr
// CHECK: scf.if
// CHECK-COUNT-2: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr
// CHECK-NOT: "tile.

// Fused: K rotated by the producer warps in shared memory, one kernel.
// FUSED-NOT: attn.programs
// FUSED: llvm.func @attn(
// FUSED: nvvm.setmaxregister decrease 56
// FUSED: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// FUSED-NOT: @attn__rope_k
// Pre: Q and K rotated by kernels before an attention kernel without RoPE.
// PRE: attn.programs = [{inputs = ["q", "k", "v", "out"], name = "attn", steps = [{args = ["q", "q_rot"], kernel = "attn__rope_q"}, {args = ["k", "k_rot"], kernel = "attn__rope_k"}, {args = ["q_rot", "k_rot", "v", "out"], kernel = "attn__attn"}], workspace = [{bytes = 2097152 : i64, name = "q_rot"}, {bytes = 2097152 : i64, name = "k_rot"}]}]
// PRE: llvm.func @attn__attn(
// PRE-NOT: llvm.call @__nv_sinf
// PRE: llvm.func @attn__rope_k(
// PRE: llvm.func @attn__rope_q(

// BAD: attn-opt: error: option 'rope' expects auto, fused, split, pre or ahead, found 'later'
func.func @attn(%q: tensor<2x8x512x128xbf16>, %k: tensor<2x8x512x128xbf16>, %v: tensor<2x8x512x128xbf16>) -> tensor<2x8x512x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<2x8x512x128xbf16>, tensor<2x8x512x128xbf16>, tensor<2x8x512x128xbf16>) -> tensor<2x8x512x128xbf16>
  return %o : tensor<2x8x512x128xbf16>
}

// GRID: llvm.func @attn__attn(
// GRID-SAME: grid = array<i32: 4, 8, 2>, kernel = "hopper-wgmma"
// GRID: nvvm.setmaxregister decrease 40
// GRID: nvvm.read.ptx.sreg.ctaid.y
// GRID: nvvm.setmaxregister increase 232
// GRID: llvm.call @__nv_sinf
// q-rope=producer: producer warps 1-3 rotate each tile's Q (the consumers
// compute no sin/cos) and the registers move to the producer.
// PRODQ: nvvm.setmaxregister decrease 56
// PRODQ: nvvm.cp.async.bulk.tensor.shared.cluster.global
// PRODQ: mbarrier.try_wait.parity.shared::cta.b64
// PRODQ: llvm.call @__nv_sinf
// PRODQ: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// PRODQ: nvvm.setmaxregister increase 224
// PRODQ-NOT: llvm.call @__nv_sinf
// PRODQ: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// BADQ: option 'q-rope' expects producer or consumers, found 'both'
// With 5 CTAs the schedule is decided at compile time, as the block
// scheduler would place the 64 tiles (costs 4, 3, 2, 1 key blocks for
// query blocks 3..0 of each head, + 2 for the tile): 6 offsets, then the
// tiles of each CTA.
// CTAS: llvm.mlir.global internal constant @attn__attn__tiles(dense<[0, 13, 25, 39, 51, 64, 0, 8, 15,
// CTAS-SAME: tensor<70xi32>) {addr_space = 1 : i32}
// CTAS: llvm.func @attn__attn(
// CTAS-SAME: grid = array<i32: 5, 1, 1>, kernel = "hopper-wgmma"
// tile-overhead=1 prices each tile's own work lower: other offsets.
// OV1: llvm.mlir.global internal constant @attn__attn__tiles(dense<[0, 12, 26, 39, 51, 64, 0, 8, 16,
// BADOV: option 'tile-overhead' expects an integer in [0, 64], found '65'
// BADC: option 'ctas' expects an integer in [0, 65536], found '-1'
// BADP: option 'persistent' expects true or false, found 'maybe'
