// RUN: attn-opt %s --attn-grad --attn-tile="block-m=16 block-n=8" | FileCheck %s
// RUN: attn-opt %s --attn-grad --attn-tile="block-m=16 block-n=8" | attn-opt | FileCheck %s
// RUN: attn-opt %s --attn-grad --attn-tile="block-m=16 block-n=8" | FileCheck %s --check-prefix=PAD
// The backward's kernels load lse with pad = +inf: a padding row (past N)
// sees no key, so tile.exp_lse gives it P = 0 (with zero, a score function's
// large scores overflowed exp2 there and P dO made dK and dV NaN).
// PAD-COUNT-2: "tile.load"({{.*}}) {pad = 0x7FF0000000000000 : f64} : (memref<1x4x40xf32>, memref<{{[0-9]+}}xf32>, index, index, index) -> ()

// Issue 29: attn-tile's forward with lse and attn.fused_grad's two kernels
// (the contract of session 20). GQA 4/2, RoPE, causal and a softcap after
// the scale: the chain is nonlinear, so the backward keeps the raw scores
// (a second tile.mma) for tile.score_fn_grad, whose body is the chain's
// derivative (scale * (1 - tanh^2)), and tile.ds / tile.exp_lse have scale 1.

// CHECK: module attributes {tile.programs = [{inputs = ["q", "k", "v", "out", "lse", "dout", "dq", "dk", "dv"], name = "f__grad", steps = [{args = ["q", "k", "v", "out", "lse", "dout", "dk", "dv"], kernel = "f__grad__dkdv"}, {args = ["q", "k", "v", "out", "lse", "dout", "dq"], kernel = "f__grad__dq"}], workspace = []}]}

// The forward: one more argument, lse, written from m and l.
// CHECK: func.func @f(%[[Q:[0-9a-z_]+]]: memref<1x4x40x16xf32>, %{{.*}}: memref<1x2x40x16xf32>, %{{.*}}: memref<1x2x40x16xf32>, %[[OUT:[0-9a-z_]+]]: memref<1x4x40x16xf32>, %[[LSE:[0-9a-z_]+]]: memref<1x4x40xf32>) attributes {tile.arg_names = ["q", "k", "v", "out", "lse"], tile.attention = {causal = true, lse = true, mods = ["scale", "softcap"]
// CHECK: "tile.softmax_update"(%{{.*}}, %[[M:[0-9a-z_]+]], %[[L:[0-9a-z_]+]], %{{.*}})
// CHECK: "tile.normalize"
// CHECK-NEXT: "tile.store"(%{{.*}}, %[[OUT]],
// CHECK-NEXT: "tile.row_lse"(%[[M]], %[[L]], %[[LT:[0-9a-z_]+]]) :
// CHECK-NEXT: "tile.store"(%[[LT]], %[[LSE]], %{{.*}}, %{{.*}}, %{{.*}}) : (memref<16xf32>, memref<1x4x40xf32>, index, index, index) -> ()

// dK and dV: a CTA per key block of 8 and K/V head (5 x 2), looping over
// the group's query heads and the query blocks that see the key block.
// CHECK: func.func @f__grad__dkdv({{.*}}%[[DK:[0-9a-z_]+]]: memref<1x2x40x16xf32>, %[[DV:[0-9a-z_]+]]: memref<1x2x40x16xf32>) attributes {tile.arg_names = ["q", "k", "v", "out", "lse", "dout", "dk", "dv"], tile.attention_grad = {causal = true, mods = ["scale", "softcap"], part = "dkdv", rope = {{{.*}}}, scale = 2.500000e-01 : f64, softcap = 5.000000e+00 : f64}, tile.grid = array<i64: 5, 2, 1>
// CHECK: scf.for
// CHECK: scf.for
// CHECK: "tile.row_dot"
// CHECK: "tile.mma"(%[[QT:[0-9a-z_]+]], %[[KT:[0-9a-z_]+]], %[[S:[0-9a-z_]+]]) {accumulate = false, transpose_b = true}
// CHECK-NEXT: "tile.mma"(%[[QT]], %[[KT]], %[[SIN:[0-9a-z_]+]]) {accumulate = false, transpose_b = true}
// CHECK: "tile.mask"(%[[S]]
// CHECK-NEXT: "tile.exp_lse"(%[[S]], %{{.*}}) {scale = 1.000000e+00 : f64}
// CHECK-NEXT: "tile.mma"(%[[S]], %[[DOT:[0-9a-z_]+]], %[[DVT:[0-9a-z_]+]]) {accumulate = true, transpose_a = true, transpose_b = false}
// CHECK-NEXT: "tile.mma"(%[[DOT]], %{{.*}}, %[[DP:[0-9a-z_]+]]) {accumulate = false, transpose_b = true}
// CHECK-NEXT: "tile.ds"(%[[S]], %[[DP]], %{{.*}}) {scale = 1.000000e+00 : f64}
// CHECK-NEXT: "tile.score_fn_grad"(%[[DP]], %[[SIN]],
// CHECK: math.tanh
// CHECK: arith.subf
// CHECK: gpu.yield
// CHECK: "tile.mma"(%[[DP]], %[[QT]], %[[DKT:[0-9a-z_]+]]) {accumulate = true, transpose_a = true, transpose_b = false}
// CHECK: "tile.rope"(%[[DKT]], %{{.*}}) {inverse = true, layout = "rotate_half"
// CHECK-NEXT: "tile.store"(%[[DKT]], %[[DK]],
// CHECK-NEXT: "tile.store"(%[[DVT]], %[[DV]],

// dQ: a CTA per query block of 16 and query head (3 x 4).
// CHECK: func.func @f__grad__dq({{.*}}%[[DQ:[0-9a-z_]+]]: memref<1x4x40x16xf32>) attributes {tile.arg_names = ["q", "k", "v", "out", "lse", "dout", "dq"], tile.attention_grad = {{{.*}}part = "dq"{{.*}}}, tile.grid = array<i64: 3, 4, 1>
// CHECK: scf.for
// CHECK: "tile.score_fn_grad"(%[[DP2:[0-9a-z_]+]], %{{.*}},
// CHECK: "tile.mma"(%[[DP2]], %{{.*}}, %[[DQT:[0-9a-z_]+]]) {accumulate = true, transpose_b = false}
// CHECK: "tile.rope"(%[[DQT]], %{{.*}}) {inverse = true
// CHECK-NEXT: "tile.store"(%[[DQT]], %[[DQ]],
// CHECK-NOT: func.func @f__grad(
func.func @f(%q: tensor<1x4x40x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>) -> tensor<1x4x40x16xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true, softcap = 5.0 : f64, mods = ["scale", "softcap"], rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"}} : (tensor<1x4x40x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>) -> tensor<1x4x40x16xf32>
  return %o : tensor<1x4x40x16xf32>
}
