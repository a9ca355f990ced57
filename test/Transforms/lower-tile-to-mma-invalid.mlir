// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-tile=kernel=mma --lower-tile-to-mma
// RUN: attn-opt %s --split-input-file --attn-tile=kernel=mma --lower-tile-to-mma="fallback=true" | FileCheck %s --check-prefix=FALLBACK

// Combinations with no mma.sync kernel are rejected at compile time, at the
// user's op; with fallback=true they are left for lower-tile-to-gpu.
// FALLBACK-LABEL: func.func @f32
// FALLBACK: "tile.mma"
func.func @f32(%q: tensor<1x2x256x128xf32>, %k: tensor<1x2x256x128xf32>, %v: tensor<1x2x256x128xf32>) -> tensor<1x2x256x128xf32> {
  // expected-error@+1 {{no mma.sync kernel for 'f32': the mma.sync kernel takes bf16 or f16 tensors}}
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<1x2x256x128xf32>, tensor<1x2x256x128xf32>, tensor<1x2x256x128xf32>) -> tensor<1x2x256x128xf32>
  return %o : tensor<1x2x256x128xf32>
}

// -----

// FALLBACK-LABEL: func.func @head_dim_96
func.func @head_dim_96(%q: tensor<1x2x256x96xbf16>, %k: tensor<1x2x256x96xbf16>, %v: tensor<1x2x256x96xbf16>) -> tensor<1x2x256x96xbf16> {
  // expected-error@+1 {{no mma.sync kernel for 'head_dim_96': the mma.sync kernel has head dims 64 and 128 (found head dim 96)}}
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<1x2x256x96xbf16>, tensor<1x2x256x96xbf16>, tensor<1x2x256x96xbf16>) -> tensor<1x2x256x96xbf16>
  return %o : tensor<1x2x256x96xbf16>
}

// -----

// Head dim 256 (issue 28): the Hopper kernel's only; here its O alone takes
// half a thread's registers, and ptxas spilled.
// FALLBACK-LABEL: func.func @head_dim_256
func.func @head_dim_256(%q: tensor<1x2x256x256xbf16>, %k: tensor<1x2x256x256xbf16>, %v: tensor<1x2x256x256xbf16>) -> tensor<1x2x256x256xbf16> {
  // expected-error@+1 {{no mma.sync kernel for 'head_dim_256': the mma.sync kernel has head dims 64 and 128 (at 256 a thread's O takes 128 of its 255 registers and ptxas spilled; sm_90a's Hopper kernel has it) (found head dim 256)}}
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.0625 : f64, causal = true} : (tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>) -> tensor<1x2x256x256xbf16>
  return %o : tensor<1x2x256x256xbf16>
}

// -----

// Softcap, ALiBi, windows, the gate, document masks, score and mask
// functions of any form and RoPE at explicit positions have a kernel now
// (lower-tile-to-mma.mlir, lower-tile-to-hopper-fn.mlir,
// lower-tile-to-hopper-positions.mlir; explicit positions used to be
// refused here: "the kernel does not take exactly (q, k, v, out)"). A
// program with positions is checked as any RoPE is: here its rotary dim.
// FALLBACK-LABEL: func.func @positions
func.func @positions(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>, %qp: tensor<1x256xi32>) -> tensor<1x2x256x64xbf16> {
  // expected-error@+1 {{no mma.sync kernel for 'positions': the mma.sync kernel's RoPE needs rotary_dim a multiple of 4 up to the head dim (found rotary_dim 18)}}
  %o = "attn.fused"(%q, %k, %v, %qp) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 18 : i64, layout = "rotate_half"}} : (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x256xi32>) -> tensor<1x2x256x64xbf16>
  return %o : tensor<1x2x256x64xbf16>
}

// -----

// v's head dim differs from q's.
// FALLBACK-LABEL: func.func @dv_differs
func.func @dv_differs(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x128xbf16>) -> tensor<1x2x256x128xbf16> {
  // expected-error@+1 {{no mma.sync kernel for 'dv_differs': the mma.sync kernel needs v's head dim equal to q's}}
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x128xbf16>) -> tensor<1x2x256x128xbf16>
  return %o : tensor<1x2x256x128xbf16>
}

// -----

// RoPE on 6 columns: slots of two pairs need a multiple of 4.
// FALLBACK-LABEL: func.func @rotary_6
func.func @rotary_6(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16> {
  // expected-error@+1 {{no mma.sync kernel for 'rotary_6': the mma.sync kernel's RoPE needs rotary_dim a multiple of 4 up to the head dim (found rotary_dim 6)}}
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 6 : i64, layout = "rotate_half"}} : (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16>
  return %o : tensor<1x2x256x64xbf16>
}

// -----

// RoPE positions past 2^24 (offset + row) are not exact in an f32.
// FALLBACK-LABEL: func.func @far_positions
func.func @far_positions(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16> {
  // expected-error@+1 {{no mma.sync kernel for 'far_positions': the mma.sync kernel's RoPE needs theta > 0 and positions in [0, 2^24)}}
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half", offset = 16777000 : i64}} : (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16>
  return %o : tensor<1x2x256x64xbf16>
}

// -----

// More than 65535 heads: the grid's y cannot hold them (the plain path folds
// such grids into x; lower-tile-to-gpu.mlir).
// FALLBACK-LABEL: func.func @many_heads
func.func @many_heads(%q: tensor<1x70000x64x64xbf16>, %k: tensor<1x70000x64x64xbf16>, %v: tensor<1x70000x64x64xbf16>) -> tensor<1x70000x64x64xbf16> {
  // expected-error@+1 {{no mma.sync kernel for 'many_heads': the grid's y (heads) and z (batch) take at most 65535 CTAs (found 70000 heads, batch 1)}}
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<1x70000x64x64xbf16>, tensor<1x70000x64x64xbf16>, tensor<1x70000x64x64xbf16>) -> tensor<1x70000x64x64xbf16>
  return %o : tensor<1x70000x64x64xbf16>
}
