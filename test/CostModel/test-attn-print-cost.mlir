// RUN: attn-opt %s --test-attn-print-cost 2>&1 >/dev/null | FileCheck %s
// RUN: attn-opt %s --test-attn-print-cost=gpu=h200 2>&1 >/dev/null | FileCheck %s
// RUN: attn-opt %s --pass-pipeline='builtin.module(test-attn-print-cost{gpu=RTX3090})' 2>&1 >/dev/null | FileCheck %s --check-prefix=RTX

// The Rotation Calculus's predictions for each RoPE placement (issue 5):
// one line per strategy, then the choice and the crossovers. The numbers
// pin the model (docs/cost-model.md); the IR is unchanged.

// CHECK-LABEL: cost @bench_d128_n8192 on H200: B=4 H=32 Hkv=32 N=8192 M=8192 d=128 rotary=128 causal bf16 tiles=128x128
// CHECK-NEXT:    fused:    7.036 ms = attention 3.733 + rope in kernel 3.303 + rope kernels 0.000 + launches 0.000; efficiency 0.60, ctas 8192, tiles 266240, {{.*}} (x32.5), rope bytes 0, kernels 1
// CHECK-NEXT:    split:    3.962 ms = attention 3.733 + rope in kernel 0.099 + rope kernels 0.126 + launches 0.005; {{.*}} (x1.0), rope bytes 5.37e+08, kernels 2
// CHECK-NEXT:    pre:      3.994 ms = attention 3.733 + rope in kernel 0.000 + rope kernels 0.251 + launches 0.010; {{.*}} rope bytes 1.07e+09, kernels 3
// CHECK-NEXT:    producer: 3.733 ms = attention 3.733 + {{.*}} kernels 1 (unavailable: no q/k projection in the program)
// CHECK-NEXT:    choice: split
// CHECK-NEXT:    N*: fused vs pre 513, split vs pre none in [16, 1048576]
// RTX-LABEL:     cost @bench_d128_n8192 on RTX3090:
// RTX:           choice: split
// A row of bench/RESULTS.md (measured: split 3.957 ms, K fused 6.995 ms).
func.func @bench_d128_n8192(%q: tensor<4x32x8192x128xbf16>, %k: tensor<4x32x8192x128xbf16>, %v: tensor<4x32x8192x128xbf16>) -> tensor<4x32x8192x128xbf16> {
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 5.0e5 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<4x32x8192x128xbf16>, tensor<4x32x8192x128xbf16>, tensor<4x32x8192x128xbf16>) -> tensor<4x32x8192x128xbf16>
  return %0 : tensor<4x32x8192x128xbf16>
}

// CHECK-LABEL: cost @gqa on H200: B=4 H=32 Hkv=8 N=8192
// CHECK-NEXT:    fused:    7.036 ms = {{.*}} (x130.0), rope bytes 0, kernels 1
// CHECK-NEXT:    split:    3.868 ms = {{.*}} rope bytes 1.34e+08, kernels 2
// CHECK-NEXT:    pre:      3.900 ms
// CHECK-NEXT:    producer: 3.733 ms
// CHECK-NEXT:    choice: split
// GQA: split rotates a quarter of the K rows; fused still rotates per query head.
func.func @gqa(%q: tensor<4x32x8192x128xbf16>, %k: tensor<4x8x8192x128xbf16>, %v: tensor<4x8x8192x128xbf16>) -> tensor<4x32x8192x128xbf16> {
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 5.0e5 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<4x32x8192x128xbf16>, tensor<4x8x8192x128xbf16>, tensor<4x8x8192x128xbf16>) -> tensor<4x32x8192x128xbf16>
  return %0 : tensor<4x32x8192x128xbf16>
}

// CHECK-LABEL: cost @tiny on H200: B=1 H=8 Hkv=8 N=256 M=256 d=64 rotary=64 causal bf16
// CHECK-NEXT:    fused:    0.012 ms
// CHECK-NEXT:    split:    0.016 ms
// CHECK-NEXT:    pre:      0.020 ms
// CHECK-NEXT:    producer: 0.010 ms
// CHECK-NEXT:    choice: fused
// CHECK-NEXT:    N*: fused vs pre 1665, split vs pre none in [16, 1048576]
// RTX-LABEL:     cost @tiny on RTX3090:
// RTX:           choice: fused
// Sixteen CTAs: the extra launches of split and pre cost more than rotating
// K in the kernel, so fused wins.
func.func @tiny(%q: tensor<1x8x256x64xbf16>, %k: tensor<1x8x256x64xbf16>, %v: tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16> {
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 5.0e5 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<1x8x256x64xbf16>, tensor<1x8x256x64xbf16>, tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16>
  return %0 : tensor<1x8x256x64xbf16>
}

// CHECK-LABEL: cost @partial_rotary on H200: B=4 H=32 Hkv=32 N=8192 M=8192 d=128 rotary=64
// CHECK-NEXT:    fused:    5.384 ms
// CHECK-NEXT:    split:    3.913 ms {{.*}} (unavailable: the rotation kernels need rotary_dim = d)
// CHECK-NEXT:    pre:      3.994 ms {{.*}} (unavailable: the rotation kernels need rotary_dim = d)
// CHECK-NEXT:    producer: 3.733 ms
// CHECK-NEXT:    choice: fused
// Partial RoPE: the rotation kernels rotate whole rows only, so fused is the
// only placement left (half the in-kernel work of full RoPE).
func.func @partial_rotary(%q: tensor<4x32x8192x128xbf16>, %k: tensor<4x32x8192x128xbf16>, %v: tensor<4x32x8192x128xbf16>) -> tensor<4x32x8192x128xbf16> {
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 5.0e5 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<4x32x8192x128xbf16>, tensor<4x32x8192x128xbf16>, tensor<4x32x8192x128xbf16>) -> tensor<4x32x8192x128xbf16>
  return %0 : tensor<4x32x8192x128xbf16>
}

// CHECK-LABEL: cost @non_causal on H200: B=1 H=32 Hkv=32 N=4096 M=4096 d=128 rotary=128 non-causal f16
// CHECK-NEXT:    fused:    0.871 ms {{.*}} tiles 32768, {{.*}} (x32.0)
// CHECK-NEXT:    split:    0.497 ms
// CHECK:         choice: split
// Non-causal: every CTA reads every K tile.
func.func @non_causal(%q: tensor<1x32x4096x128xf16>, %k: tensor<1x32x4096x128xf16>, %v: tensor<1x32x4096x128xf16>) -> tensor<1x32x4096x128xf16> {
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, rope = {theta = 5.0e5 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<1x32x4096x128xf16>, tensor<1x32x4096x128xf16>, tensor<1x32x4096x128xf16>) -> tensor<1x32x4096x128xf16>
  return %0 : tensor<1x32x4096x128xf16>
}

// CHECK-LABEL: cost @no_rope on H200: B=2 H=32 Hkv=32 N=16384 M=16384 d=64 rotary=0 causal bf16
// CHECK-NEXT:    no rope:  4.677 ms = attention 4.677 + rope in kernel 0.000 + rope kernels 0.000 + launches 0.000; efficiency 0.48, ctas 8192, tiles 528384
// CHECK-NEXT:    choice: none (no RoPE)
// Without RoPE only the attention is priced (measured 'no RoPE': 4.669 ms).
func.func @no_rope(%q: tensor<2x32x16384x64xbf16>, %k: tensor<2x32x16384x64xbf16>, %v: tensor<2x32x16384x64xbf16>) -> tensor<2x32x16384x64xbf16> {
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<2x32x16384x64xbf16>, tensor<2x32x16384x64xbf16>, tensor<2x32x16384x64xbf16>) -> tensor<2x32x16384x64xbf16>
  return %0 : tensor<2x32x16384x64xbf16>
}
