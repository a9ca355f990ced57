// RUN: attn-opt %s --attn-tile="kernel=hopper" --lower-tile-to-hopper | FileCheck %s
// RUN: attn-opt %s --attn-tile="kernel=hopper" --lower-tile-to-hopper="q-rope=producer" | FileCheck %s --check-prefix=QPROD

// rope=auto: the Rotation Calculus picks split for all three; split becomes
// ahead (K rotated by the kernel's own producer warps, one kernel over the
// workspaces k_rot and rope_sync) at head dim 64 up to N = 4096 only.
// CHECK-DAG: name = "d64_n4096", steps = [{args = ["q", "k", "v", "out", "k_rot", "rope_sync"], kernel = "d64_n4096__attn"}]
// CHECK-DAG: name = "d64_n8192", steps = [{args = ["k", "k_rot"], kernel = "d64_n8192__rope_k"}, {args = ["q", "k_rot", "v", "out"], kernel = "d64_n8192__attn"}]
// CHECK-DAG: name = "d128_n4096", steps = [{args = ["k", "k_rot"], kernel = "d128_n4096__rope_k"}, {args = ["q", "k_rot", "v", "out"], kernel = "d128_n4096__attn"}]

// Not when producer warps rotate Q (q-rope=producer), the warps the team
// would be (nor with O staged: lower-tile-to-hopper-ahead.mlir).
// QPROD: name = "d64_n4096", steps = [{args = ["k", "k_rot"], kernel = "d64_n4096__rope_k"}

func.func @d64_n4096(%q: tensor<1x2x4096x64xbf16>, %k: tensor<1x2x4096x64xbf16>, %v: tensor<1x2x4096x64xbf16>) -> tensor<1x2x4096x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 500000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<1x2x4096x64xbf16>, tensor<1x2x4096x64xbf16>, tensor<1x2x4096x64xbf16>) -> tensor<1x2x4096x64xbf16>
  return %o : tensor<1x2x4096x64xbf16>
}

func.func @d64_n8192(%q: tensor<1x2x8192x64xbf16>, %k: tensor<1x2x8192x64xbf16>, %v: tensor<1x2x8192x64xbf16>) -> tensor<1x2x8192x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 500000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<1x2x8192x64xbf16>, tensor<1x2x8192x64xbf16>, tensor<1x2x8192x64xbf16>) -> tensor<1x2x8192x64xbf16>
  return %o : tensor<1x2x8192x64xbf16>
}

func.func @d128_n4096(%q: tensor<1x2x4096x128xbf16>, %k: tensor<1x2x4096x128xbf16>, %v: tensor<1x2x4096x128xbf16>) -> tensor<1x2x4096x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = true, rope = {theta = 500000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<1x2x4096x128xbf16>, tensor<1x2x4096x128xbf16>, tensor<1x2x4096x128xbf16>) -> tensor<1x2x4096x128xbf16>
  return %o : tensor<1x2x4096x128xbf16>
}
