// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-tile --lower-tile-to-mma
// RUN: attn-opt %s --split-input-file --attn-tile --lower-tile-to-mma="fallback=true" | FileCheck %s --check-prefix=FALLBACK
// RUN: attn-opt %s --split-input-file --attn-tile --lower-tile-to-mma="grad-fallback=true" | FileCheck %s --check-prefix=FALLBACK

// The backwards lower-tile-to-mma does not build (issue 29: bf16/f16,
// head dim 64 or 128, RoPE at offsets over the whole head, score and mask
// functions reading captures only) are a diagnostic at the user's op; with
// fallback=true or grad-fallback=true both tile kernels and attn-tile's
// launch program are left for lower-tile-to-gpu. The drivers ask
// attn_mma_grad_supports first and pass grad-fallback, so they never see
// these (test/Target/to-ptx-mma-grad.test). Before, lower-tile-to-mma left
// every backward to lower-tile-to-gpu.
// Explicit RoPE positions (packed sequences) keep the plain path.
// FALLBACK-LABEL: func.func @h64_rope_positions_gqa_causal__grad__dkdv(
// FALLBACK: func.func @h64_rope_positions_gqa_causal__grad__dq(
func.func @h64_rope_positions_gqa_causal__grad(%arg0: tensor<2x8x1000x64xbf16>, %arg1: tensor<2x2x1000x64xbf16>, %arg2: tensor<2x2x1000x64xbf16>, %arg3: tensor<2x1000xi32>, %arg4: tensor<2x1000xi32>, %arg5: tensor<2x8x1000x64xbf16>, %arg6: tensor<2x8x1000xf32>, %arg7: tensor<2x8x1000x64xbf16>) -> (tensor<2x8x1000x64xbf16>, tensor<2x2x1000x64xbf16>, tensor<2x2x1000x64xbf16>) {
  // expected-error@+1 {{no mma.sync backward for 'h64_rope_positions_gqa_causal__grad__dkdv': the mma.sync backward's RoPE takes positions at offsets only}}
  %0:3 = "attn.fused_grad"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7) ({
  }, {
  }) {causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, rope = {layout = "rotate_half", rotary_dim = 64 : i64, theta = 5.000000e+05 : f64}, scale = 1.250000e-01 : f64} : (tensor<2x8x1000x64xbf16>, tensor<2x2x1000x64xbf16>, tensor<2x2x1000x64xbf16>, tensor<2x1000xi32>, tensor<2x1000xi32>, tensor<2x8x1000x64xbf16>, tensor<2x8x1000xf32>, tensor<2x8x1000x64xbf16>) -> (tensor<2x8x1000x64xbf16>, tensor<2x2x1000x64xbf16>, tensor<2x2x1000x64xbf16>)
  return %0#0, %0#1, %0#2 : tensor<2x8x1000x64xbf16>, tensor<2x2x1000x64xbf16>, tensor<2x2x1000x64xbf16>
}
// -----

// A score function reading q or k (the main kernel reads them rotated, and
// takes captures only) keeps the plain path. Softcap, ALiBi, the gate,
// windows, documents and other bodies have the mma.sync backward
// (lower-tile-to-hopper-grad.mlir, test/Target/to-ptx-hopper-grad.test).
// FALLBACK-LABEL: func.func @h64_body_reads_qk__grad__dkdv(
// FALLBACK: func.func @h64_body_reads_qk__grad__dq(
func.func @h64_body_reads_qk__grad(%arg0: tensor<1x2x200x64xbf16>, %arg1: tensor<1x2x200x64xbf16>, %arg2: tensor<1x2x200x64xbf16>, %arg3: tensor<1x200xi32>, %arg4: tensor<1x200xi32>, %arg5: tensor<1x2x200x64xbf16>, %arg6: tensor<1x2x200xf32>, %arg7: tensor<1x2x200x64xbf16>) -> (tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>) {
  // expected-error@+1 {{no mma.sync backward for 'h64_body_reads_qk__grad__dkdv': a tile.score_fn body reads a value from outside it that is not a captured tensor}}
  %0:3 = "attn.fused_grad"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7) ({
  ^bb0(%arg8: f32, %arg9: index, %arg10: index, %arg11: index, %arg12: index):
    %c0 = arith.constant 0 : index
    %extracted = tensor.extract %arg0[%arg9, %arg10, %arg11, %c0] : tensor<1x2x200x64xbf16>
    %extracted_0 = tensor.extract %arg1[%arg9, %arg10, %arg12, %c0] : tensor<1x2x200x64xbf16>
    %extracted_1 = tensor.extract %arg4[%arg9, %arg12] : tensor<1x200xi32>
    %1 = arith.extf %extracted : bf16 to f32
    %2 = arith.extf %extracted_0 : bf16 to f32
    %3 = arith.sitofp %extracted_1 : i32 to f32
    %4 = arith.mulf %1, %2 : f32
    %5 = arith.addf %4, %3 : f32
    %6 = arith.addf %arg8, %5 : f32
    gpu.yield %6 : f32
  }, {
  }) {causal = true, mods = ["scale", "fn"], operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x200xi32>, tensor<1x200xi32>, tensor<1x2x200x64xbf16>, tensor<1x2x200xf32>, tensor<1x2x200x64xbf16>) -> (tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>)
  return %0#0, %0#1, %0#2 : tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>, tensor<1x2x200x64xbf16>
}
// -----

// f32 has no mma.sync kernel.
// FALLBACK-LABEL: func.func @f32__grad__dkdv(
// FALLBACK: func.func @f32__grad__dq(
func.func @f32__grad(%q: tensor<1x2x256x64xf32>, %k: tensor<1x2x256x64xf32>, %v: tensor<1x2x256x64xf32>, %out: tensor<1x2x256x64xf32>, %lse: tensor<1x2x256xf32>, %dout: tensor<1x2x256x64xf32>) -> (tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>) {
  // expected-error@+1 {{no mma.sync backward for 'f32__grad__dkdv': the mma.sync backward takes bf16 or f16}}
  %0:3 = "attn.fused_grad"(%q, %k, %v, %out, %lse, %dout) ({}, {}) {causal = false, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256xf32>, tensor<1x2x256x64xf32>) -> (tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>)
  return %0#0, %0#1, %0#2 : tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>
}
// -----

// Head dim 32 is not built.
// FALLBACK-LABEL: func.func @d32__grad__dkdv(
// FALLBACK: func.func @d32__grad__dq(
func.func @d32__grad(%q: tensor<1x2x256x32xbf16>, %k: tensor<1x2x256x32xbf16>, %v: tensor<1x2x256x32xbf16>, %out: tensor<1x2x256x32xbf16>, %lse: tensor<1x2x256xf32>, %dout: tensor<1x2x256x32xbf16>) -> (tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>) {
  // expected-error@+1 {{no mma.sync backward for 'd32__grad__dkdv': the mma.sync backward has head dims 64 and 128}}
  %0:3 = "attn.fused_grad"(%q, %k, %v, %out, %lse, %dout) ({}, {}) {causal = false, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>, tensor<1x2x256xf32>, tensor<1x2x256x32xbf16>) -> (tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>)
  return %0#0, %0#1, %0#2 : tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>
}
// -----

// RoPE over part of the head: the pre placement's kernels rotate whole rows.
// FALLBACK-LABEL: func.func @partial__grad__dkdv(
// FALLBACK: func.func @partial__grad__dq(
func.func @partial__grad(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>, %out: tensor<1x2x256x64xbf16>, %lse: tensor<1x2x256xf32>, %dout: tensor<1x2x256x64xbf16>) -> (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) {
  // expected-error@+1 {{no mma.sync backward for 'partial__grad__dkdv': the mma.sync backward's RoPE needs rotary_dim equal to the head dim}}
  %0:3 = "attn.fused_grad"(%q, %k, %v, %out, %lse, %dout) ({}, {}) {causal = true, rope = {layout = "rotate_half", rotary_dim = 32 : i64, theta = 1.000000e+04 : f64}, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256xf32>, tensor<1x2x256x64xbf16>) -> (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>)
  return %0#0, %0#1, %0#2 : tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>
}

// -----

// More rows than 32-bit indices reach (B H N = 2^32 here).
// FALLBACK-LABEL: func.func @huge__grad__dkdv(
// FALLBACK: func.func @huge__grad__dq(
func.func @huge__grad(%q: tensor<1024x512x8192x64xbf16>, %k: tensor<1024x512x8192x64xbf16>, %v: tensor<1024x512x8192x64xbf16>, %out: tensor<1024x512x8192x64xbf16>, %lse: tensor<1024x512x8192xf32>, %dout: tensor<1024x512x8192x64xbf16>) -> (tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>) {
  // expected-error@+1 {{no mma.sync backward for 'huge__grad__dkdv': the tensors are too large for the mma.sync backward's 32-bit row indices}}
  %0:3 = "attn.fused_grad"(%q, %k, %v, %out, %lse, %dout) ({}, {}) {causal = true, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192xf32>, tensor<1024x512x8192x64xbf16>) -> (tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>)
  return %0#0, %0#1, %0#2 : tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>
}
// -----

// Head dim 256: dK and dV alone would take 256 f32 registers a thread
// (sm_90a's Hopper backward has it).
// FALLBACK-LABEL: func.func @d256__grad__dkdv(
// FALLBACK: func.func @d256__grad__dq(
func.func @d256__grad(%q: tensor<1x2x256x256xbf16>, %k: tensor<1x2x256x256xbf16>, %v: tensor<1x2x256x256xbf16>, %out: tensor<1x2x256x256xbf16>, %lse: tensor<1x2x256xf32>, %dout: tensor<1x2x256x256xbf16>) -> (tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>) {
  // expected-error@+1 {{no mma.sync backward for 'd256__grad__dkdv': the mma.sync backward has head dims 64 and 128 (at 256 a thread's dK and dV alone take 256 f32 registers; sm_90a's Hopper backward has it)}}
  %0:3 = "attn.fused_grad"(%q, %k, %v, %out, %lse, %dout) ({}, {}) {causal = false, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>, resultSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>, tensor<1x2x256xf32>, tensor<1x2x256x256xbf16>) -> (tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>)
  return %0#0, %0#1, %0#2 : tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>, tensor<1x2x256x256xbf16>
}
