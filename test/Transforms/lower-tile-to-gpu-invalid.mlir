// RUN: not attn-opt %s --attn-tile="block-m=64 block-n=64" --lower-tile-to-gpu 2>&1 >/dev/null | FileCheck %s
// RUN: not attn-opt %s --lower-tile-to-gpu="chip=sm_90a features=+ptx70" 2>&1 >/dev/null | FileCheck %s --check-prefix=PTX
// RUN: not attn-opt %s --lower-tile-to-gpu="chip=sm_42" 2>&1 >/dev/null | FileCheck %s --check-prefix=CHIP
// RUN: sed -n '/^\/\/ GRID-INPUT:/s///p' %s > %t.mlir
// RUN: not attn-opt %t.mlir --attn-tile="block-m=32 block-n=32" --lower-tile-to-gpu 2>&1 >/dev/null | FileCheck %s --check-prefix=GRID

// Tiles that do not fit static shared memory are rejected at the user's op.
// CHECK: lower-tile-to-gpu-invalid.mlir:[[@LINE+4]]:8: error: tiles of 'big' need 147968 bytes of shared memory, more than the 49152 a CTA can address statically; choose a smaller block-m or block-n
// PTX: error: sm_90a needs PTX ISA 8.0 or newer, found features=+ptx70
// CHIP: attn-opt: error: unknown chip 'sm_42'
func.func @big(%q: tensor<1x1x64x128xf32>, %k: tensor<1x1x64x128xf32>, %v: tensor<1x1x64x128xf32>) -> tensor<1x1x64x128xf32> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true} : (tensor<1x1x64x128xf32>, tensor<1x1x64x128xf32>, tensor<1x1x64x128xf32>) -> tensor<1x1x64x128xf32>
  return %o : tensor<1x1x64x128xf32>
}

// A grid of more CTAs than a launch can have, even folded into x (the
// plain path folds y and z into x beyond 65535; lower-tile-to-gpu.mlir):
// GRID: error: 'huge' needs a grid of 2 x 1089000000 x 1 CTAs, more than the 2^31 - 1 a launch can have; choose a larger block-m
// GRID-INPUT: func.func @huge(%q: tensor<33000x33000x40x16xf32>, %k: tensor<33000x33000x40x16xf32>, %v: tensor<33000x33000x40x16xf32>) -> tensor<33000x33000x40x16xf32> {
// GRID-INPUT:   %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true} : (tensor<33000x33000x40x16xf32>, tensor<33000x33000x40x16xf32>, tensor<33000x33000x40x16xf32>) -> tensor<33000x33000x40x16xf32>
// GRID-INPUT:   return %o : tensor<33000x33000x40x16xf32>
// GRID-INPUT: }
