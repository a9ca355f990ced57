// RUN: attn-opt %s --split-input-file --verify-diagnostics --test-attn-print-cost
// RUN: not attn-opt %s --test-attn-print-cost=gpu=b200 2>&1 >/dev/null | FileCheck %s --check-prefix=GPU
// RUN: not attn-opt %s --test-attn-print-cost=gpu= 2>&1 >/dev/null | FileCheck %s --check-prefix=EMPTY
// RUN: not attn-opt %s --test-attn-print-cost=chip=sm_90a 2>&1 >/dev/null | FileCheck %s --check-prefix=OPTION

// Shapes the cost model cannot price are errors, from the verifier (empty
// dimensions, heads that do not group) or from the pass (sizes beyond the
// model's range); an unknown GPU is an option error naming the known ones.

// GPU:    attn-opt: error: unknown gpu 'b200' (expected H100, H200, A100 or RTX3090)
// EMPTY:  attn-opt: error: unknown gpu '' (expected H100, H200, A100 or RTX3090)
// OPTION: attn-opt: error: unknown option 'chip' of pass 'test-attn-print-cost' (expected gpu)

func.func @empty_sequence(%q: tensor<1x2x0x64xbf16>, %k: tensor<1x2x8x64xbf16>, %v: tensor<1x2x8x64xbf16>) -> tensor<1x2x0x64xbf16> {
  // expected-error@+1 {{q has an empty dimension}}
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<1x2x0x64xbf16>, tensor<1x2x8x64xbf16>, tensor<1x2x8x64xbf16>) -> tensor<1x2x0x64xbf16>
  return %0 : tensor<1x2x0x64xbf16>
}

// -----

func.func @heads_do_not_group(%q: tensor<1x6x8x64xbf16>, %k: tensor<1x4x8x64xbf16>, %v: tensor<1x4x8x64xbf16>) -> tensor<1x6x8x64xbf16> {
  // expected-error@+1 {{query heads 6 are not a multiple of k heads 4}}
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<1x6x8x64xbf16>, tensor<1x4x8x64xbf16>, tensor<1x4x8x64xbf16>) -> tensor<1x6x8x64xbf16>
  return %0 : tensor<1x6x8x64xbf16>
}

// -----

func.func @too_long(%q: tensor<1x1x33554432x64xbf16>, %k: tensor<1x1x33554432x64xbf16>, %v: tensor<1x1x33554432x64xbf16>) -> tensor<1x1x33554432x64xbf16> {
  // expected-error@+1 {{cannot price this attention: problem too large for the cost model (batch, heads and sequence lengths up to 2^24, head dim up to 1024)}}
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<1x1x33554432x64xbf16>, tensor<1x1x33554432x64xbf16>, tensor<1x1x33554432x64xbf16>) -> tensor<1x1x33554432x64xbf16>
  return %0 : tensor<1x1x33554432x64xbf16>
}
