// RUN: attn-opt %s --split-input-file --attn-tile="kernel=hopper" --lower-tile-to-hopper | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-tile="kernel=hopper block-n=64" --lower-tile-to-hopper | FileCheck %s --check-prefix=BN64
// RUN: attn-opt %s --split-input-file --attn-tile="kernel=hopper" --lower-tile-to-hopper="rope=pre persistent=false" | FileCheck %s --check-prefix=PRE
// RUN: attn-opt %S/../Inputs/hopper/h256_norope_causal.mlir --attn-fuse --attn-tile="kernel=hopper" --lower-tile-to-hopper | grep -c mbarrier.init | FileCheck %s --check-prefix=SPLIT
// RUN: attn-opt %S/../Inputs/hopper/h256_norope_causal.mlir --attn-fuse --attn-tile="kernel=hopper" --lower-tile-to-hopper=kv-barriers=joint | grep -c mbarrier.init | FileCheck %s --check-prefix=JOINT
// K and V on barriers of their own at head dim 256 by default (kv-barriers:
// 3 + 5 per stage, two stages; joint: 3 + 3 per stage), because with two
// stages a K slot then refills once Q.K has read it: 22-25% faster on an
// H200 (bench/RESULTS.md).
// SPLIT: {{^}}14
// JOINT: {{^}}10

// Head dim 256 (issue 28; it used to fall to the plain path, about 2
// TFLOP/s): FlashAttention-3's tiles, 128 query rows on two consumer
// warpgroups of 64 and key blocks of 80 (attn-tile's default at d 256), two
// stages (Q 64 KiB, K and V 80 KiB a stage: 230504 bytes with the
// barriers and the alignment slack), S by wgmma m64n80k16 over 16 steps of
// the head dim (four 64-column boxes of 128-byte swizzle, as at d 64 and
// 128) and P.V by m64n256k16 over the 5 steps of the keys; setmaxnreg 40 /
// 232. RoPE over the whole head: K rotated before by @f__rope_k (split), Q
// by the consumers (their 128 threads take its 64 slots twice).
// CHECK-LABEL: gpu.module @attn_kernels
// CHECK-SAME: attn.programs = [{inputs = ["q", "k", "v", "out"], name = "wide", steps = [{args = ["k", "k_rot"], kernel = "wide__rope_k"}, {args = ["q", "k_rot", "v", "out"], kernel = "wide__attn"}], workspace = [{bytes = 1048576 : i64, name = "k_rot"}]}]
// CHECK: llvm.func @wide__attn(
// CHECK-SAME: block = array<i32: 384, 1, 1>, dynamic_shared_bytes = 230504 : i64, grid = array<i32: 16, 1, 1>, kernel = "hopper-wgmma"
// CHECK-SAME: {box = array<i64: 64, 128, 1, 1>, dims = array<i64: 256, 512, 4, 1>, dtype = "bf16", kind = "tensormap", name = "q_map", swizzle = 128 : i64, tensor = "q"}
// CHECK-SAME: {box = array<i64: 64, 80, 1, 1>, dims = array<i64: 256, 512, 4, 1>, dtype = "bf16", kind = "tensormap", name = "k_map", swizzle = 128 : i64, tensor = "k"}
// CHECK: nvvm.setmaxregister decrease 40
// CHECK: nvvm.setmaxregister increase 232
// CHECK: llvm.call @__nv_sinf
// The bases of the descriptors are pinned where they are used (LLVM hoisted
// Q's 16 out of the block loop, and ptxas spilled them beside O).
// CHECK: llvm.inline_asm has_side_effects "", "=r,0"
// CHECK: llvm.inline_asm has_side_effects "", "=l,0"
// CHECK-COUNT-16: wgmma.mma_async.sync.aligned.m64n80k16.f32.bf16.bf16
// CHECK: scf.for
// CHECK-COUNT-16: wgmma.mma_async.sync.aligned.m64n80k16.f32.bf16.bf16
// CHECK: llvm.inline_asm has_side_effects "", "=r,0"
// CHECK-COUNT-5: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1
// CHECK: "{ .reg .pred p; setp.eq.f32 p, $0, 0fBF800000; @p bra.uni W1; wgmma.wait_group.sync.aligned 0; bra.uni W2; W1: wgmma.wait_group.sync.aligned 0; W2: }", "f"
// CHECK: llvm.func @wide__rope_k(
// CHECK-NOT: "tile.

// 64-key blocks when asked: 197736 bytes, m64n64k16 for S, 4 steps of P.V.
// BN64-LABEL: gpu.module @attn_kernels
// BN64: llvm.func @wide__attn(
// BN64-SAME: dynamic_shared_bytes = 197736 : i64
// BN64-SAME: {box = array<i64: 64, 64, 1, 1>, dims = array<i64: 256, 512, 4, 1>, dtype = "bf16", kind = "tensormap", name = "k_map"
// BN64: nvvm.setmaxregister increase 232
// BN64: scf.for
// BN64-COUNT-16: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// BN64-COUNT-4: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16

// Pre: Q and K rotated by kernels before; one CTA per tile.
// PRE-LABEL: gpu.module @attn_kernels
// PRE-SAME: steps = [{args = ["q", "q_rot"], kernel = "wide__rope_q"}, {args = ["k", "k_rot"], kernel = "wide__rope_k"}, {args = ["q_rot", "k_rot", "v", "out"], kernel = "wide__attn"}]
// PRE: llvm.func @wide__attn(
// PRE-SAME: grid = array<i32: 4, 4, 1>, kernel = "hopper-wgmma"
// PRE-NOT: llvm.call @__nv_sinf
// PRE: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// PRE: llvm.func @wide__rope_k(
// PRE: llvm.func @wide__rope_q(
func.func @wide(%q: tensor<1x4x512x256xbf16>, %k: tensor<1x4x512x256xbf16>, %v: tensor<1x4x512x256xbf16>) -> tensor<1x4x512x256xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.0625 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 256 : i64, layout = "rotate_half"}} : (tensor<1x4x512x256xbf16>, tensor<1x4x512x256xbf16>, tensor<1x4x512x256xbf16>) -> tensor<1x4x512x256xbf16>
  return %o : tensor<1x4x512x256xbf16>
}

// -----

// f16, GQA 8/2, not causal, no RoPE: one kernel, the producer's K and V
// maps over the two key/value heads.
// CHECK-LABEL: gpu.module @attn_kernels
// CHECK-NOT: attn.programs
// CHECK: llvm.func @wide_gqa_f16(
// CHECK-SAME: {box = array<i64: 64, 80, 1, 1>, dims = array<i64: 256, 333, 2, 1>, dtype = "f16", kind = "tensormap", name = "k_map"
// CHECK: wgmma.mma_async.sync.aligned.m64n80k16.f32.f16.f16
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16
// BN64-LABEL: gpu.module @attn_kernels
// BN64: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// PRE-LABEL: gpu.module @attn_kernels
// PRE: wgmma.mma_async.sync.aligned.m64n80k16.f32.f16.f16
func.func @wide_gqa_f16(%q: tensor<1x8x333x256xf16>, %k: tensor<1x2x333x256xf16>, %v: tensor<1x2x333x256xf16>) -> tensor<1x8x333x256xf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.0625 : f64, causal = false} : (tensor<1x8x333x256xf16>, tensor<1x2x333x256xf16>, tensor<1x2x333x256xf16>) -> tensor<1x8x333x256xf16>
  return %o : tensor<1x8x333x256xf16>
}

// -----

// RoPE over half the head (rotary dim 128, interleaved): K rotated by the
// producer warps in shared memory (fused; the split kernel needs the whole
// head), which keep 56 registers and leave the consumers 224.
// CHECK-LABEL: gpu.module @attn_kernels
// CHECK-NOT: attn.programs
// CHECK: llvm.func @wide_partial(
// CHECK: nvvm.setmaxregister decrease 56
// CHECK: nvvm.setmaxregister increase 224
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
func.func @wide_partial(%q: tensor<1x4x300x256xbf16>, %k: tensor<1x4x300x256xbf16>, %v: tensor<1x4x300x256xbf16>) -> tensor<1x4x300x256xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.0625 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 128 : i64, layout = "interleaved"}} : (tensor<1x4x300x256xbf16>, tensor<1x4x300x256xbf16>, tensor<1x4x300x256xbf16>) -> tensor<1x4x300x256xbf16>
  return %o : tensor<1x4x300x256xbf16>
}

// -----

// A score_mod body: attn-tile takes 64-key blocks at head dim 256 (its
// values per element spilled beside 80).
// CHECK-LABEL: gpu.module @attn_kernels
// CHECK: llvm.func @wide_score_fn(
// CHECK-SAME: {box = array<i64: 64, 64, 1, 1>, dims = array<i64: 256, 256, 2, 1>, dtype = "bf16", kind = "tensormap", name = "k_map"
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// BN64-LABEL: gpu.module @attn_kernels
// PRE-LABEL: gpu.module @attn_kernels
func.func @wide_score_fn(%q: tensor<1x2x256x256xbf16>, %k: tensor<1x2x256x256xbf16>, %v: tensor<1x2x256x256xbf16>, %slopes: tensor<2xf32>) -> tensor<1x2x256x256xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
    %m = tensor.extract %slopes[%h] : tensor<2xf32>
    %y = arith.mulf %s, %m : f32
    gpu.yield %y : f32
  }, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.0625 : f64, causal = true, mods = ["scale", "fn"]} : (tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>) -> tensor<1x2x256x256xbf16>
  return %o : tensor<1x2x256x256xbf16>
}
