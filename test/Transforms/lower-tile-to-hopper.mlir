// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper | FileCheck %s
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rope=fused" | FileCheck %s --check-prefix=FUSED
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rope=pre" | FileCheck %s --check-prefix=PRE
// RUN: not attn-opt %s --lower-tile-to-hopper="rope=later" 2>&1 | FileCheck %s --check-prefix=BAD

// The attention tile program becomes one warp-specialised sm_90a kernel:
// 384 threads, three TMA descriptors as grid-constant parameters, wgmma for
// both products, mbarrier-completed TMA loads, setmaxnreg per role. With
// RoPE, K is rotated once per row by a second kernel (split, the default),
// and a launch program runs both.
// CHECK: gpu.module @attn_kernels [#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">]
// CHECK-SAME: attn.programs = [{inputs = ["q", "k", "v", "out"], name = "attn", steps = [{args = ["k", "k_rot"], kernel = "attn__rope_k"}, {args = ["q", "k_rot", "v", "out"], kernel = "attn__attn"}], workspace = [{bytes = 2097152 : i64, name = "k_rot"}]}]
// CHECK: llvm.mlir.global external @attn_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.func @attn__attn(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}
// CHECK-SAME: attn.launch = {{{.*}}block = array<i32: 384, 1, 1>, dynamic_shared_bytes = 230480 : i64, grid = array<i32: 4, 8, 2>, kernel = "hopper-wgmma"
// CHECK-SAME: {box = array<i64: 64, 128, 1, 1>, dims = array<i64: 128, 512, 8, 2>, dtype = "bf16", kind = "tensormap", name = "q_map", swizzle = 128 : i64, tensor = "q"}
// CHECK-SAME: nvvm.kernel, nvvm.maxntid = array<i32: 384, 1, 1>
// CHECK: nvvm.mbarrier.init %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: setmaxnreg.dec.sync.aligned.u32 40
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: setmaxnreg.inc.sync.aligned.u32 232
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK: wgmma.commit_group.sync.aligned
// CHECK: ex2.approx.ftz.f32
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, {${{[0-9]+}}, ${{[0-9]+}}, ${{[0-9]+}}, ${{[0-9]+}}}, ${{[0-9]+}}, p, 1, 1, 1
// CHECK: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// CHECK: llvm.func @attn__rope_k(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) attributes {attn.launch = {{{.*}}kernel = "rope-k"
// CHECK: vector<4xi32>
// CHECK-NOT: "tile.

// Fused: K rotated by the producer warps in shared memory, one kernel.
// FUSED-NOT: attn.programs
// FUSED: llvm.func @attn(
// FUSED: setmaxnreg.dec.sync.aligned.u32 56
// FUSED: fence.proxy.async.shared::cta
// FUSED-NOT: @attn__rope_k
// Pre: Q and K rotated by kernels before an attention kernel without RoPE.
// PRE: attn.programs = [{inputs = ["q", "k", "v", "out"], name = "attn", steps = [{args = ["q", "q_rot"], kernel = "attn__rope_q"}, {args = ["k", "k_rot"], kernel = "attn__rope_k"}, {args = ["q_rot", "k_rot", "v", "out"], kernel = "attn__attn"}], workspace = [{bytes = 2097152 : i64, name = "q_rot"}, {bytes = 2097152 : i64, name = "k_rot"}]}]
// PRE: llvm.func @attn__attn(
// PRE-NOT: llvm.call @__nv_sinf
// PRE: llvm.func @attn__rope_k(
// PRE: llvm.func @attn__rope_q(

// BAD: attn-opt: error: option 'rope' expects auto, fused, split or pre, found 'later'
func.func @attn(%q: tensor<2x8x512x128xbf16>, %k: tensor<2x8x512x128xbf16>, %v: tensor<2x8x512x128xbf16>) -> tensor<2x8x512x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<2x8x512x128xbf16>, tensor<2x8x512x128xbf16>, tensor<2x8x512x128xbf16>) -> tensor<2x8x512x128xbf16>
  return %o : tensor<2x8x512x128xbf16>
}
