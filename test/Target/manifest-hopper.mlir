// RUN: attn-translate --to-manifest %s | FileCheck %s

// The Hopper kernel's manifest: 384 threads, dynamic shared memory, and
// three tensor maps the runtime derives from q, k and v (callers pass the
// four pointers only).
// CHECK: "target": "sm_90a"
// CHECK: "name": "gqa"
// CHECK: "block": [384, 1, 1]
// CHECK: "dynamic_shared_bytes": 230496
// CHECK: "grid": [16, 1, 1]
// CHECK: "kernel": "hopper-wgmma"
// CHECK: "name": "q"
// CHECK: "name": "out"
// CHECK: "box": [64, 128, 1, 1],
// CHECK-NEXT: "dims": [128, 50, 8, 2],
// CHECK-NEXT: "dtype": "bf16",
// CHECK-NEXT: "kind": "tensormap",
// CHECK-NEXT: "name": "q_map",
// CHECK-NEXT: "swizzle": 128,
// CHECK-NEXT: "tensor": "q"
// CHECK: "dims": [128, 50, 2, 2],
// CHECK: "name": "k_map",
// CHECK: "name": "v_map",
func.func @gqa(%q: tensor<2x8x50x128xbf16>, %k: tensor<2x2x50x128xbf16>, %v: tensor<2x2x50x128xbf16>) -> tensor<2x8x50x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<2x8x50x128xbf16>, tensor<2x2x50x128xbf16>, tensor<2x2x50x128xbf16>) -> tensor<2x8x50x128xbf16>
  return %o : tensor<2x8x50x128xbf16>
}
