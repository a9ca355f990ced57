// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper | FileCheck %s
// RUN: attn-opt %s --attn-tile=kernel=mma --lower-tile-to-mma | FileCheck %s --check-prefix=MMA
// RUN: attn-translate --to-manifest %S/../Inputs/hopper/h128_alibi_causal.mlir | FileCheck %s --check-prefix=AUTO90
// RUN: attn-translate --to-manifest --chip=sm_80 %S/../Inputs/hopper/h64_mods_window_f16.mlir | FileCheck %s --check-prefix=AUTO80

// The drivers' automatic choice (attn_hopper_supports) sends these programs
// to the tensor-core kernels: Hopper on sm_90a, mma.sync from sm_80.
// AUTO90: "kernel": "hopper-wgmma"
// AUTO80: "kernel": "mma-sync"

// The score modifiers in the tensor-core kernels: softcap and ALiBi are
// the tile.score_fn bodies attn-tile writes, computed as every score
// function is (lib/Kernels/score_fn.c). S leaves the tensor cores as Q K^T
// and carries a compile-time factor f, which the softmax folds into its
// exp2 constant as it folds the scale alone; the bodies' forms keep it
// there, so the kernels compute what their special cases did.

// Softcap on scaled scores, the body cap tanh(s / cap): its s / cap joins
// the pending scale, one multiply by scale / cap before tanh.approx.f32
// (math.tanh as llvm.intr.tanh, afn), and its cap becomes f: the exp2
// constant is 30 log2(e).
// CHECK-LABEL: llvm.func @softcap(
// CHECK: arith.constant 43.2808495 : f32
// CHECK: %[[C:.*]] = arith.constant 0.00416666688 : f32
// CHECK-NEXT: %[[T:.*]] = arith.mulf %{{.*}}, %[[C]] : f32
// CHECK-NEXT: llvm.intr.tanh(%[[T]]) {fastmathFlags = #llvm.fastmath<afn>} : (f32) -> f32
// CHECK: llvm.return
// MMA-LABEL: llvm.func @softcap(
// MMA: arith.constant 43.2808495 : f32
// MMA: arith.constant 0.00416666688 : f32
// MMA-NEXT: arith.mulf
// MMA-NEXT: llvm.intr.tanh({{.*}}) {fastmathFlags = #llvm.fastmath<afn>}
// MMA: llvm.return
func.func @softcap(%q: tensor<1x2x256x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, softcap = 30.0 : f64, mods = ["scale", "softcap"]} : (tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) -> tensor<1x2x256x64xbf16>
  return %o : tensor<1x2x256x64xbf16>
}

// ALiBi after the scale, the body s - 2^(-8 (h + 1) / 4) |q - kv|: per
// tile, the head's slope (its math.exp2) times -1 / 0.125 (over f = scale,
// which the scores keep); per element |q - kv| from the fragment's row and
// key (sitofp(q - kv) as one conversion per row and block, less the
// register's column offset) in one FMA with it. The exp2 constant stays
// scale log2(e).
// CHECK-LABEL: llvm.func @alibi(
// CHECK: arith.constant 0.180336878 : f32
// CHECK: arith.uitofp
// CHECK: arith.constant -2.000000e+00 : f32
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: math.exp2
// CHECK: arith.constant -8.000000e+00 : f32
// CHECK-NEXT: %[[SLOPE:.*]] = arith.mulf
// CHECK: %[[D0:.*]] = arith.sitofp %{{.*}} : i32 to f32
// CHECK-NEXT: %[[D:.*]] = math.absf %[[D0]]
// CHECK-NEXT: math.fma %[[D]], %[[SLOPE]], %{{.*}} : f32
// CHECK: arith.constant 1.000000e+00 : f32
// CHECK-NEXT: arith.subf %[[D0]]
// CHECK-NEXT: math.absf
// CHECK-NEXT: math.fma
// CHECK: llvm.return
// MMA-LABEL: llvm.func @alibi(
// MMA: arith.constant -2.000000e+00 : f32
// MMA: math.absf
// MMA-NEXT: math.fma
// MMA: llvm.return
func.func @alibi(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, alibi = 8.0 : f64, mods = ["scale", "alibi"]} : (tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16>) -> tensor<1x4x256x64xbf16>
  return %o : tensor<1x4x256x64xbf16>
}

// A window of 200 keys back and 16 ahead (not causal): each tile reads the
// key blocks [max(q0 - 200, 0) / 128, ceil((q0 + 128 + 16) / 128)), capped
// at the last block and never empty, in the producer (TMA of K and V) and
// the consumers alike; the mask's branch opens on blocks that cross either
// edge (the left one signed: a causal kernel's shifted rows are negative),
// and each element's test is the plain path's (k + left < q, k > q + right).
// CHECK-LABEL: llvm.func @window(
// CHECK: arith.constant 144 : i32
// CHECK-NEXT: arith.addi
// CHECK: arith.ceildivui
// CHECK-NEXT: %[[LAST:.*]] = arith.minui
// CHECK: arith.constant -200 : i32
// CHECK-NEXT: arith.addi
// CHECK-NEXT: %[[LO:.*]] = arith.maxsi
// CHECK: %[[FIRST:.*]] = arith.divui %[[LO]]
// CHECK-NEXT: %[[KB0:.*]] = arith.minui %[[FIRST]]
// CHECK-NEXT: arith.subi %[[LAST]], %[[KB0]] : i32
// CHECK: cp.async.bulk.tensor
// CHECK: arith.constant 200 : i32
// CHECK-NEXT: arith.addi
// CHECK-NEXT: arith.cmpi slt
// CHECK: arith.constant 200 : i32
// CHECK-NEXT: arith.addi
// CHECK-NEXT: arith.cmpi ult
// CHECK: llvm.return
// A warp of the mma.sync kernel also skips the blocks wholly outside its
// 16 rows' window: above row0 + 15 + 16, or ending (key + 63) with key +
// 200 before row0.
// MMA-LABEL: llvm.func @window(
// MMA: arith.constant 144 : i32
// MMA: arith.maxsi
// MMA: arith.constant 31 : i32
// MMA: arith.cmpi ugt
// MMA: arith.constant 263 : i32
// MMA-NEXT: arith.addi
// MMA-NEXT: arith.cmpi ult
// MMA-NEXT: arith.ori
// MMA: llvm.return
func.func @window(%q: tensor<1x2x1024x64xbf16>, %k: tensor<1x2x1024x64xbf16>, %v: tensor<1x2x1024x64xbf16>) -> tensor<1x2x1024x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, window = array<i64: 200, 16>} : (tensor<1x2x1024x64xbf16>, tensor<1x2x1024x64xbf16>, tensor<1x2x1024x64xbf16>) -> tensor<1x2x1024x64xbf16>
  return %o : tensor<1x2x1024x64xbf16>
}

// Softcap and ALiBi as bodies take no more registers than as the special
// cases they were (attn_hopper_fns_light): at head dim 64 from 2048 rows
// the Hopper kernel keeps three consumers (512 threads) for them, as for a
// program without functions.
// CHECK-LABEL: llvm.func @light_d64(
// CHECK-SAME: block = array<i32: 512, 1, 1>
func.func @light_d64(%q: tensor<1x2x2048x64xbf16>, %k: tensor<1x2x2048x64xbf16>, %v: tensor<1x2x2048x64xbf16>) -> tensor<1x2x2048x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, alibi = 8.0 : f64, softcap = 30.0 : f64, mods = ["scale", "alibi", "softcap"]} : (tensor<1x2x2048x64xbf16>, tensor<1x2x2048x64xbf16>, tensor<1x2x2048x64xbf16>) -> tensor<1x2x2048x64xbf16>
  return %o : tensor<1x2x2048x64xbf16>
}
