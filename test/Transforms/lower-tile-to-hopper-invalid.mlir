// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper
// RUN: attn-opt %s --split-input-file --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="fallback=true" | FileCheck %s --check-prefix=FALLBACK
// RUN: not attn-opt %S/../Inputs/hopper/h128_rope_causal.mlir --attn-fuse --attn-tile="kernel=hopper" --lower-tile-to-hopper="stages=1" 2>&1 | FileCheck %s --check-prefix=ONE-STAGE
// RUN: not attn-opt %S/../Inputs/hopper/h64_causal.mlir --attn-fuse --attn-tile="kernel=hopper" --lower-tile-to-hopper="stages=1 rope=split" 2>&1 | FileCheck %s --check-prefix=ONE-STAGE

// Combinations with no Hopper kernel are rejected at compile time, at the
// user's op; with fallback=true they are left for lower-tile-to-gpu.
// One K/V stage is refused at every head dim: each consumer issues key
// block j's Q.K before block j-1's P.V frees its stage, so it holds two at
// once (with one, the kernel hung on an H200 at head dims 64, 128 and 256).
// ONE-STAGE: error: no Hopper kernel for '{{[a-z0-9_]+}}': the attention kernel needs 2 or more stages (each consumer holds key block j's K and block j-1's V at once) (found stages 1)
// FALLBACK-LABEL: func.func @f32
// FALLBACK: "tile.mma"
func.func @f32(%q: tensor<1x2x256x128xf32>, %k: tensor<1x2x256x128xf32>, %v: tensor<1x2x256x128xf32>) -> tensor<1x2x256x128xf32> {
  // expected-error@+1 {{no Hopper kernel for 'f32': the Hopper kernel takes bf16 or f16 tensors}}
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<1x2x256x128xf32>, tensor<1x2x256x128xf32>, tensor<1x2x256x128xf32>) -> tensor<1x2x256x128xf32>
  return %o : tensor<1x2x256x128xf32>
}

// -----

// FALLBACK-LABEL: func.func @head_dim_96
func.func @head_dim_96(%q: tensor<1x2x256x96xbf16>, %k: tensor<1x2x256x96xbf16>, %v: tensor<1x2x256x96xbf16>) -> tensor<1x2x256x96xbf16> {
  // expected-error@+1 {{no Hopper kernel for 'head_dim_96': the Hopper kernel has head dims 64, 128 and 256 (found head dim 96)}}
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<1x2x256x96xbf16>, tensor<1x2x256x96xbf16>, tensor<1x2x256x96xbf16>) -> tensor<1x2x256x96xbf16>
  return %o : tensor<1x2x256x96xbf16>
}

// -----

// Softcap, ALiBi, windows, the gate, document masks, score and mask
// functions of any form and RoPE at explicit positions have a kernel now
// (lower-tile-to-hopper.mlir, lower-tile-to-hopper-fn.mlir,
// lower-tile-to-hopper-positions.mlir; explicit positions used to be
// refused here: "the kernel does not take exactly (q, k, v, out)"). A
// program with positions is checked as any RoPE is: here its rotary dim.
// FALLBACK-LABEL: func.func @positions
func.func @positions(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>, %qp: tensor<1x256xi32>) -> tensor<1x2x256x64xbf16> {
  // expected-error@+1 {{no Hopper kernel for 'positions': the Hopper kernel's RoPE needs rotary_dim/4 to divide 96 (found rotary_dim 40)}}
  %o = "attn.fused"(%q, %k, %v, %qp) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 40 : i64, layout = "rotate_half"}} : (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x256xi32>) -> tensor<1x2x256x64xbf16>
  return %o : tensor<1x2x256x64xbf16>
}

// -----

// RoPE positions past 2^24 (offset + row) are not exact in an f32.
// FALLBACK-LABEL: func.func @far_positions
func.func @far_positions(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16> {
  // expected-error@+1 {{no Hopper kernel for 'far_positions': the Hopper kernel's RoPE positions must lie in [0, 2^24)}}
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half", offset = 16777000 : i64}} : (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16>
  return %o : tensor<1x2x256x64xbf16>
}

// -----

// More than 65535 heads: a grid of one CTA per tile, and the RoPE kernels',
// cannot hold them in y (the plain path folds such grids into x).
// FALLBACK-LABEL: func.func @many_heads
func.func @many_heads(%q: tensor<1x70000x64x64xbf16>, %k: tensor<1x70000x64x64xbf16>, %v: tensor<1x70000x64x64xbf16>) -> tensor<1x70000x64x64xbf16> {
  // expected-error@+1 {{no Hopper kernel for 'many_heads': the grid's y (heads) and z (batch) take at most 65535 CTAs (found 70000 heads, batch 1)}}
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<1x70000x64x64xbf16>, tensor<1x70000x64x64xbf16>, tensor<1x70000x64x64xbf16>) -> tensor<1x70000x64x64xbf16>
  return %o : tensor<1x70000x64x64xbf16>
}
