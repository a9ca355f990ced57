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
  %o = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = true} : (tensor<2x8x50x128xbf16>, tensor<2x2x50x128xbf16>, tensor<2x2x50x128xbf16>) -> tensor<2x8x50x128xbf16>
  return %o : tensor<2x8x50x128xbf16>
}
