// RUN: attn-translate --to-manifest --kernel=plain %s | FileCheck %s
// RUN: attn-translate --to-ptx --kernel=plain %s --manifest=%t.json -o /dev/null
// RUN: FileCheck %s < %t.json

// The launch manifest: name, grid, block, shared memory, what the kernel
// computes, and one bare pointer per tensor in argument order.
// CHECK: "version": 1
// CHECK: "target": "sm_90a"
// CHECK: "name": "gqa"
// CHECK: "grid": [4, 16, 1]
// CHECK: "block": [128, 1, 1]
// CHECK: "static_shared_bytes": 33920
// CHECK: "attention":
// CHECK: "causal": true
// CHECK: "scale": 0.125
// CHECK: "params":
// CHECK: "name": "q",
// CHECK-NEXT: "kind": "ptr",
// CHECK-NEXT: "dtype": "bf16",
// CHECK-NEXT: "shape": [2, 8, 50, 128]
// CHECK: "name": "k",
// CHECK: "shape": [2, 2, 50, 128]
// CHECK: "name": "v",
// CHECK: "name": "out",
func.func @gqa(%q: tensor<2x8x50x128xbf16>, %k: tensor<2x2x50x128xbf16>, %v: tensor<2x2x50x128xbf16>) -> tensor<2x8x50x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<2x8x50x128xbf16>, tensor<2x2x50x128xbf16>, tensor<2x2x50x128xbf16>) -> tensor<2x8x50x128xbf16>
  return %o : tensor<2x8x50x128xbf16>
}

// The attention dictionary describes the whole program (issue 4): masks,
// modifiers in order; inputs after v are named parameters (i32 segment ids).
// CHECK: "name": "gemma"
// CHECK: "attention":
// CHECK-NEXT: "causal": true
// CHECK-NEXT: "document": true
// CHECK-NEXT: "mods": ["scale", "softcap"]
// CHECK-NEXT: "scale": 0.125
// CHECK-NEXT: "softcap": 50
// CHECK-NEXT: "window": [16, 0]
// CHECK: "name": "v",
// CHECK: "name": "q_segments",
// CHECK-NEXT: "kind": "ptr",
// CHECK-NEXT: "dtype": "i32",
// CHECK-NEXT: "shape": [1, 50]
// CHECK: "name": "k_segments",
// CHECK: "name": "out",
func.func @gemma(%q: tensor<1x8x50x64xbf16>, %k: tensor<1x4x50x64xbf16>, %v: tensor<1x4x50x64xbf16>, %qs: tensor<1x50xi32>, %ks: tensor<1x50xi32>) -> tensor<1x8x50x64xbf16> {
  %o = "attn.fused"(%q, %k, %v, %qs, %ks) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0>, scale = 0.125 : f64, causal = true, window = array<i64: 16, 0>, softcap = 50.0 : f64, mods = ["scale", "softcap"]} : (tensor<1x8x50x64xbf16>, tensor<1x4x50x64xbf16>, tensor<1x4x50x64xbf16>, tensor<1x50xi32>, tensor<1x50xi32>) -> tensor<1x8x50x64xbf16>
  return %o : tensor<1x8x50x64xbf16>
}
