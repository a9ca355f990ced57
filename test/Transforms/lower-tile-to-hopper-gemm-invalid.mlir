// RUN: attn-opt %s --split-input-file --verify-diagnostics --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper
// RUN: not attn-opt %s --split-input-file --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper="fallback=true" 2>/dev/null | FileCheck %s --check-prefix=FALLBACK
// RUN: not attn-opt %S/../Inputs/comm/ar_small.mlir --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper="fallback=true gpu=A100" 2>&1 >/dev/null | FileCheck %s --check-prefix=FALLBACK-ERR
// RUN: attn-opt %S/../Inputs/matmul_bf16.mlir --attn-tile="kernel=hopper" | sed "s/block_k = 64 : i64/block_k = 64 : i64, stages = 13 : i64/" | not attn-opt --lower-tile-to-hopper 2>&1 | FileCheck %s --check-prefix=STAGES

// A fused kernel has no plain fallback: one the lowering refuses (here the
// split of an H200's SMs lowered for an A100) fails with fallback=true too.
// FALLBACK-ERR: error: no Hopper GEMM for 'ar': a fused kernel's 2 compute and 129 communication CTAs need an SM each, and the GPU of option gpu has 108

// A tile.matmul asking for more stages than the ring's tile numbers have
// room for (4 bytes each before the pending tiles at 48) is refused.
// STAGES: error: no Hopper GEMM for 'gemm': at most 12 stages, found 13

// GEMMs the Hopper kernel cannot compute are rejected at the user's op;
// with fallback=true plain GEMMs are left for lower-tile-to-gpu, but a
// matmul fused with a collective has no other lowering and still fails.
// FALLBACK-LABEL: func.func @f32
// FALLBACK: "tile.mma"
func.func @f32(%a: tensor<256x64xf32>, %b: tensor<64x256xf32>) -> tensor<256x256xf32> {
  %e = tensor.empty() : tensor<256x256xf32>
  // expected-error@+1 {{no Hopper GEMM for 'f32': the Hopper GEMM takes bf16 or f16 matrices}}
  %c = linalg.matmul ins(%a, %b : tensor<256x64xf32>, tensor<64x256xf32>) outs(%e : tensor<256x256xf32>) -> tensor<256x256xf32>
  return %c : tensor<256x256xf32>
}

// -----

// FALLBACK-LABEL: func.func @k12
func.func @k12(%a: tensor<256x12xbf16>, %b: tensor<12x64xbf16>) -> tensor<256x64xbf16> {
  %e = tensor.empty() : tensor<256x64xbf16>
  // expected-error@+1 {{no Hopper GEMM for 'k12': k and n must be multiples of 8 (16-byte TMA row strides), found k = 12, n = 64}}
  %c = linalg.matmul ins(%a, %b : tensor<256x12xbf16>, tensor<12x64xbf16>) outs(%e : tensor<256x64xbf16>) -> tensor<256x64xbf16>
  return %c : tensor<256x64xbf16>
}

// -----

// A fused matmul adds nothing to its init: the init must be zero.
func.func @init_arg(%a: tensor<256x1024xbf16>, %b: tensor<1024x1024xbf16>, %i: tensor<256x1024xbf16>) -> tensor<256x1024xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<256x1024xbf16>, tensor<1024x1024xbf16>) outs(%i : tensor<256x1024xbf16>) -> tensor<256x1024xbf16>
  // expected-error@+1 {{a matmul fused with a collective does not add to its init: initialise it with a linalg.fill of 0.0 or a tensor.empty}}
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<256x1024xbf16>) -> tensor<256x1024xbf16>
  return %r : tensor<256x1024xbf16>
}
