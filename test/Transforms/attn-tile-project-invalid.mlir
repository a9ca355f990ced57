// RUN: attn-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(attn-fuse,attn-tile{kernel=hopper})'
// RUN: not attn-opt %S/../Inputs/project/layer_gqa.mlir --pass-pipeline='builtin.module(attn-fuse,attn-tile)' 2>&1 | FileCheck %s --check-prefix=PLAIN

// Functions with attn.project that attn-tile cannot turn into a program.

// The CPU and plain GPU paths have no projection kernel.
// PLAIN: error: attn.project is computed only by the Hopper kernels (attn-tile kernel=hopper, sm_90a): the CPU and plain GPU paths have no projection kernel

func.func @used_twice(%x: tensor<1x128x256xbf16>, %w: tensor<256x256xbf16>, %v: tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error@+1 {{the result of attn.project must be used once, as q, k or v of the attention}}
  %q = "attn.project"(%x, %w) : (tensor<1x128x256xbf16>, tensor<256x256xbf16>) -> tensor<1x4x128x64xbf16>
  %s = "attn.qk"(%q, %q) : (tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>) -> tensor<1x4x128x128xbf16>
  %p = "attn.softmax"(%s) : (tensor<1x4x128x128xbf16>) -> tensor<1x4x128x128xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<1x4x128x128xbf16>, tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16>
  return %o : tensor<1x4x128x64xbf16>
}

// -----

func.func @no_attention(%x: tensor<1x128x256xbf16>, %w: tensor<256x256xbf16>) -> tensor<1x4x128x64xbf16> {
  // expected-error@+1 {{attn.project must feed q, k or v of an attention (run attn-fuse first; found no attn.fused)}}
  %q = "attn.project"(%x, %w) : (tensor<1x128x256xbf16>, tensor<256x256xbf16>) -> tensor<1x4x128x64xbf16>
  return %q : tensor<1x4x128x64xbf16>
}

