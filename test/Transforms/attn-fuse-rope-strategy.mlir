// RUN: attn-opt %s --attn-fuse | FileCheck %s --check-prefix=NONE
// RUN: attn-opt %s --attn-fuse=rope-strategy=fused | FileCheck %s --check-prefix=FUSED
// RUN: attn-opt %s --attn-fuse=rope-strategy=split | FileCheck %s --check-prefix=SPLIT
// RUN: attn-opt %s --pass-pipeline='builtin.module(attn-fuse{rope-strategy=pre})' | FileCheck %s --check-prefix=PRE
// RUN: attn-opt %s --attn-fuse=rope-strategy=auto | FileCheck %s --check-prefix=AUTO
// RUN: attn-opt %s --attn-fuse="rope-strategy=auto gpu=a100" | FileCheck %s --check-prefix=AUTO
// RUN: attn-opt %s --attn-fuse=rope-strategy=split --attn-tile | FileCheck %s --check-prefix=TILE

// rope-strategy records where RoPE runs as rope.strategy (issue 5); auto
// asks the cost model (lib/CostModel, docs/cost-model.md) with the fused
// op's shapes. Without the option nothing is recorded; chains without RoPE
// ignore it. attn-tile copies the choice into tile.attention's rope.

// NONE-LABEL:  @bench_shape
// NONE:        rope = {layout = "rotate_half", rotary_dim = 128 : i64, theta = 5.000000e+05 : f64}, scale
// FUSED-LABEL: @bench_shape
// FUSED:       rope = {layout = "rotate_half", rotary_dim = 128 : i64, strategy = "fused", theta = 5.000000e+05 : f64}
// SPLIT-LABEL: @bench_shape
// SPLIT:       strategy = "split"
// PRE-LABEL:   @bench_shape
// PRE:         strategy = "pre"
// AUTO-LABEL:  @bench_shape
// AUTO:        strategy = "split"
// TILE-LABEL:  @bench_shape
// TILE:        tile.attention = {{{.*}}rope = {layout = "rotate_half", rotary_dim = 128 : i64, strategy = "split", theta = 5.000000e+05 : f64}
// A bench/RESULTS.md shape: split is measured fastest (3.957 ms vs 6.995 ms
// fused) and the model picks it.
func.func @bench_shape(%q: tensor<4x32x8192x128xbf16>, %k: tensor<4x32x8192x128xbf16>, %v: tensor<4x32x8192x128xbf16>) -> tensor<4x32x8192x128xbf16> {
  %qr = "attn.rope"(%q) {theta = 5.0e5 : f64, rotary_dim = 128 : i64, layout = "rotate_half"} : (tensor<4x32x8192x128xbf16>) -> tensor<4x32x8192x128xbf16>
  %kr = "attn.rope"(%k) {theta = 5.0e5 : f64, rotary_dim = 128 : i64, layout = "rotate_half"} : (tensor<4x32x8192x128xbf16>) -> tensor<4x32x8192x128xbf16>
  %s = "attn.qk"(%qr, %kr) : (tensor<4x32x8192x128xbf16>, tensor<4x32x8192x128xbf16>) -> tensor<4x32x8192x8192xbf16>
  %s1 = "attn.scale"(%s) {scale = 0.125 : f64} : (tensor<4x32x8192x8192xbf16>) -> tensor<4x32x8192x8192xbf16>
  %s2 = "attn.causal"(%s1) : (tensor<4x32x8192x8192xbf16>) -> tensor<4x32x8192x8192xbf16>
  %p = "attn.softmax"(%s2) : (tensor<4x32x8192x8192xbf16>) -> tensor<4x32x8192x8192xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<4x32x8192x8192xbf16>, tensor<4x32x8192x128xbf16>) -> tensor<4x32x8192x128xbf16>
  return %o : tensor<4x32x8192x128xbf16>
}

// AUTO-LABEL:  @tiny
// AUTO:        strategy = "fused"
// SPLIT-LABEL: @tiny
// SPLIT:       strategy = "split"
// Sixteen CTAs: a second launch costs more than rotating K per tile.
func.func @tiny(%q: tensor<1x8x256x64xbf16>, %k: tensor<1x8x256x64xbf16>, %v: tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16> {
  %qr = "attn.rope"(%q) {theta = 5.0e5 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16>
  %kr = "attn.rope"(%k) {theta = 5.0e5 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x8x256x64xbf16>, tensor<1x8x256x64xbf16>) -> tensor<1x8x256x256xbf16>
  %s1 = "attn.scale"(%s) {scale = 0.125 : f64} : (tensor<1x8x256x256xbf16>) -> tensor<1x8x256x256xbf16>
  %s2 = "attn.causal"(%s1) : (tensor<1x8x256x256xbf16>) -> tensor<1x8x256x256xbf16>
  %p = "attn.softmax"(%s2) : (tensor<1x8x256x256xbf16>) -> tensor<1x8x256x256xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<1x8x256x256xbf16>, tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16>
  return %o : tensor<1x8x256x64xbf16>
}

// AUTO-LABEL:  @partial_rotary
// AUTO:        rotary_dim = 64 : i64, strategy = "fused"
// Partial RoPE: the rotation kernels need rotary_dim = d, so auto keeps it
// in the kernel.
func.func @partial_rotary(%q: tensor<4x32x8192x128xbf16>, %k: tensor<4x32x8192x128xbf16>, %v: tensor<4x32x8192x128xbf16>) -> tensor<4x32x8192x128xbf16> {
  %qr = "attn.rope"(%q) {theta = 5.0e5 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<4x32x8192x128xbf16>) -> tensor<4x32x8192x128xbf16>
  %kr = "attn.rope"(%k) {theta = 5.0e5 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<4x32x8192x128xbf16>) -> tensor<4x32x8192x128xbf16>
  %s = "attn.qk"(%qr, %kr) : (tensor<4x32x8192x128xbf16>, tensor<4x32x8192x128xbf16>) -> tensor<4x32x8192x8192xbf16>
  %s1 = "attn.scale"(%s) {scale = 0.125 : f64} : (tensor<4x32x8192x8192xbf16>) -> tensor<4x32x8192x8192xbf16>
  %s2 = "attn.causal"(%s1) : (tensor<4x32x8192x8192xbf16>) -> tensor<4x32x8192x8192xbf16>
  %p = "attn.softmax"(%s2) : (tensor<4x32x8192x8192xbf16>) -> tensor<4x32x8192x8192xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<4x32x8192x8192xbf16>, tensor<4x32x8192x128xbf16>) -> tensor<4x32x8192x128xbf16>
  return %o : tensor<4x32x8192x128xbf16>
}

// AUTO-LABEL:  @no_rope
// AUTO-NOT:    strategy
// AUTO:        return
// FUSED-LABEL: @no_rope
// FUSED-NOT:   rope =
// FUSED:       return
// No RoPE: the option changes nothing.
func.func @no_rope(%q: tensor<1x8x256x64xbf16>, %k: tensor<1x8x256x64xbf16>, %v: tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16> {
  %s = "attn.qk"(%q, %k) : (tensor<1x8x256x64xbf16>, tensor<1x8x256x64xbf16>) -> tensor<1x8x256x256xbf16>
  %s1 = "attn.scale"(%s) {scale = 0.125 : f64} : (tensor<1x8x256x256xbf16>) -> tensor<1x8x256x256xbf16>
  %s2 = "attn.causal"(%s1) : (tensor<1x8x256x256xbf16>) -> tensor<1x8x256x256xbf16>
  %p = "attn.softmax"(%s2) : (tensor<1x8x256x256xbf16>) -> tensor<1x8x256x256xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<1x8x256x256xbf16>, tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16>
  return %o : tensor<1x8x256x64xbf16>
}
