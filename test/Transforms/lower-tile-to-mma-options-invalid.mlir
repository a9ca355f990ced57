// RUN: not attn-opt %s --attn-tile=kernel=mma --lower-tile-to-mma=chip=sm_75 2>&1 >/dev/null | FileCheck %s --check-prefix=CHIP
// RUN: not attn-opt %s --attn-tile="kernel=mma block-n=256" --lower-tile-to-mma 2>&1 >/dev/null | FileCheck %s --check-prefix=TILES
// RUN: not attn-opt %s --attn-tile=kernel=mma --lower-tile-to-mma="chip=sm_86 stages=4" 2>&1 >/dev/null | FileCheck %s --check-prefix=SMEM
// RUN: attn-opt %s --attn-tile=kernel=mma --lower-tile-to-mma="chip=sm_75 fallback=true" | FileCheck %s --check-prefix=FALLBACK

// What the options make impossible, each at the user's op: a chip before
// sm_80 (no mma.sync on bf16, no cp.async), tiles of 256 keys, and shared
// memory beyond the chip's (four stages of d 128 on sm_86's 99 KiB).
// fallback=true leaves the kernel to lower-tile-to-gpu.
// CHIP: lower-tile-to-mma-options-invalid.mlir:16:8: error: the mma.sync kernel needs sm_80 or newer, found sm_75
// TILES: lower-tile-to-mma-options-invalid.mlir:16:8: error: no mma.sync kernel for 'attn': the mma.sync kernel needs block-m 64 or 128 and block-n 32, 64 or 128 (found block-m 128, block-n 256)
// SMEM: lower-tile-to-mma-options-invalid.mlir:16:8: error: no mma.sync kernel for 'attn': the tiles do not fit the shared memory of a CTA (found 163840 bytes with 4 stages, 101376 on sm_86)
// FALLBACK: "tile.mma"
// FALLBACK-NOT: gpu.module
func.func @attn(%q: tensor<1x2x256x128xbf16>, %k: tensor<1x2x256x128xbf16>, %v: tensor<1x2x256x128xbf16>) -> tensor<1x2x256x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>, tensor<1x2x256x128xbf16>) -> tensor<1x2x256x128xbf16>
  return %o : tensor<1x2x256x128xbf16>
}
