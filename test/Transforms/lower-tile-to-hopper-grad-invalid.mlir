// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-tile --lower-tile-to-hopper
// RUN: attn-opt %s --split-input-file --attn-tile --lower-tile-to-hopper="fallback=true" | FileCheck %s --check-prefix=FALLBACK

// The backwards lower-tile-to-hopper does not build yet (issue 29: the
// first case is bf16/f16, head dim 64 or 128, scale, causal, RoPE at
// offsets over the whole head) are a diagnostic at the user's op; with
// fallback=true both tile kernels and attn-tile's launch program are left
// for lower-tile-to-gpu. The drivers ask attn_hopper_grad_supports first,
// so they never see these (test/Target/to-ptx-hopper-grad.test).
// A softcap (or any modifier but the scale) keeps the plain path.
// FALLBACK-LABEL: func.func @softcap__grad__dkdv(
// FALLBACK: func.func @softcap__grad__dq(
func.func @softcap__grad(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>, %out: tensor<1x2x256x64xbf16>, %lse: tensor<1x2x256xf32>, %dout: tensor<1x2x256x64xbf16>) -> (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) {
  // expected-error@+1 {{no Hopper backward for 'softcap__grad__dkdv': the Hopper backward computes the scale and the causal mask only (no other modifier yet)}}
  %0:3 = "attn.fused_grad"(%q, %k, %v, %out, %lse, %dout) ({}, {}) {causal = false, mods = ["scale", "softcap"], scale = 1.250000e-01 : f64, softcap = 3.000000e+01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>} : (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256xf32>, tensor<1x2x256x64xbf16>) -> (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>)
  return %0#0, %0#1, %0#2 : tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>
}
// -----

// A sliding window, likewise.
// FALLBACK-LABEL: func.func @window__grad__dkdv(
// FALLBACK: func.func @window__grad__dq(
func.func @window__grad(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>, %out: tensor<1x2x256x64xbf16>, %lse: tensor<1x2x256xf32>, %dout: tensor<1x2x256x64xbf16>) -> (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) {
  // expected-error@+1 {{no Hopper backward for 'window__grad__dkdv': the Hopper backward computes scale, causal and RoPE only (no other modifier or mask yet)}}
  %0:3 = "attn.fused_grad"(%q, %k, %v, %out, %lse, %dout) ({}, {}) {causal = true, scale = 1.250000e-01 : f64, window = array<i64: 16, -1>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>} : (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256xf32>, tensor<1x2x256x64xbf16>) -> (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>)
  return %0#0, %0#1, %0#2 : tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>
}
// -----

// f32 has no wgmma kernel.
// FALLBACK-LABEL: func.func @f32__grad__dkdv(
// FALLBACK: func.func @f32__grad__dq(
func.func @f32__grad(%q: tensor<1x2x256x64xf32>, %k: tensor<1x2x256x64xf32>, %v: tensor<1x2x256x64xf32>, %out: tensor<1x2x256x64xf32>, %lse: tensor<1x2x256xf32>, %dout: tensor<1x2x256x64xf32>) -> (tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>) {
  // expected-error@+1 {{no Hopper backward for 'f32__grad__dkdv': the Hopper backward takes bf16 or f16}}
  %0:3 = "attn.fused_grad"(%q, %k, %v, %out, %lse, %dout) ({}, {}) {causal = false, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>} : (tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256xf32>, tensor<1x2x256x64xf32>) -> (tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>)
  return %0#0, %0#1, %0#2 : tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>, tensor<1x2x256x64xf32>
}
// -----

// Head dim 32 (and 256) are not built yet.
// FALLBACK-LABEL: func.func @d32__grad__dkdv(
// FALLBACK: func.func @d32__grad__dq(
func.func @d32__grad(%q: tensor<1x2x256x32xbf16>, %k: tensor<1x2x256x32xbf16>, %v: tensor<1x2x256x32xbf16>, %out: tensor<1x2x256x32xbf16>, %lse: tensor<1x2x256xf32>, %dout: tensor<1x2x256x32xbf16>) -> (tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>) {
  // expected-error@+1 {{no Hopper backward for 'd32__grad__dkdv': the Hopper backward has head dims 64 and 128}}
  %0:3 = "attn.fused_grad"(%q, %k, %v, %out, %lse, %dout) ({}, {}) {causal = false, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>} : (tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>, tensor<1x2x256xf32>, tensor<1x2x256x32xbf16>) -> (tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>)
  return %0#0, %0#1, %0#2 : tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>, tensor<1x2x256x32xbf16>
}
// -----

// RoPE over part of the head: the pre placement's kernels rotate whole rows.
// FALLBACK-LABEL: func.func @partial__grad__dkdv(
// FALLBACK: func.func @partial__grad__dq(
func.func @partial__grad(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>, %out: tensor<1x2x256x64xbf16>, %lse: tensor<1x2x256xf32>, %dout: tensor<1x2x256x64xbf16>) -> (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) {
  // expected-error@+1 {{no Hopper backward for 'partial__grad__dkdv': the Hopper backward's RoPE needs rotary_dim equal to the head dim}}
  %0:3 = "attn.fused_grad"(%q, %k, %v, %out, %lse, %dout) ({}, {}) {causal = true, rope = {layout = "rotate_half", rotary_dim = 32 : i64, theta = 1.000000e+04 : f64}, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>} : (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256xf32>, tensor<1x2x256x64xbf16>) -> (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>)
  return %0#0, %0#1, %0#2 : tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>
}

// -----

// More rows than 32-bit indices reach (B H N = 2^32 here).
// FALLBACK-LABEL: func.func @huge__grad__dkdv(
// FALLBACK: func.func @huge__grad__dq(
func.func @huge__grad(%q: tensor<1024x512x8192x64xbf16>, %k: tensor<1024x512x8192x64xbf16>, %v: tensor<1024x512x8192x64xbf16>, %out: tensor<1024x512x8192x64xbf16>, %lse: tensor<1024x512x8192xf32>, %dout: tensor<1024x512x8192x64xbf16>) -> (tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>) {
  // expected-error@+1 {{no Hopper backward for 'huge__grad__dkdv': the tensors are too large for the Hopper backward's 32-bit row indices}}
  %0:3 = "attn.fused_grad"(%q, %k, %v, %out, %lse, %dout) ({}, {}) {causal = true, scale = 1.250000e-01 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1>} : (tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192xf32>, tensor<1024x512x8192x64xbf16>) -> (tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>)
  return %0#0, %0#1, %0#2 : tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>, tensor<1024x512x8192x64xbf16>
}
