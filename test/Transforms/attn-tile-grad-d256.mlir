// RUN: attn-opt %s --attn-grad --attn-tile | FileCheck %s
// RUN: attn-translate %s --grad --to-ptx --chip=sm_80 -o - | FileCheck %s --check-prefix=PTX
// RUN: attn-run %s --grad | FileCheck %s --check-prefix=CPU
// CPU-NOT: FAIL
// CPU: 1 passed, 0 failed
// Head dim 256 on the plain path's backward: attn-tile's square backward
// block shrinks until its f32 tiles (q, k and dq or dk [b, 256]; v, dO, O
// and dv [b, 256]; S, the raw S and dP [b, b]; lse and D [b]) fit the 48 KiB
// a CTA addresses statically: 4 here (8 needed 57,920 bytes, and
// lower-tile-to-gpu refused the kernel). The plain backward is what other
// chips than sm_90a get (sm_80 here), and sm_90a for programs the Hopper
// backward does not take (partial RoPE).

// The forward keeps its own block (8: its tiles are fewer).
// CHECK: func.func @f({{.*}}) attributes {{{.*}}tile.grid = array<i64: 38, 4, 1>
// CHECK: func.func @f__grad__dkdv({{.*}}) attributes {{{.*}}tile.grid = array<i64: 75, 4, 1>
// CHECK: memref<4x256xf32>
// CHECK: func.func @f__grad__dq({{.*}}) attributes {{{.*}}tile.grid = array<i64: 75, 4, 1>

// PTX: .entry f__grad__dkdv
// PTX: .entry f__grad__dq
func.func @f(%q: tensor<1x4x300x256xbf16>, %k: tensor<1x4x300x256xbf16>, %v: tensor<1x4x300x256xbf16>) -> tensor<1x4x300x256xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.0625 : f64, causal = true} : (tensor<1x4x300x256xbf16>, tensor<1x4x300x256xbf16>, tensor<1x4x300x256xbf16>) -> tensor<1x4x300x256xbf16>
  return %o : tensor<1x4x300x256xbf16>
}
