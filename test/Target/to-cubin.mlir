// REQUIRES: ptxas
// RUN: attn-translate --to-cubin %s -o %t.cubin --manifest=%t.json
// RUN: od -A n -t x1 -N 4 %t.cubin | FileCheck %s --check-prefix=ELF
// RUN: FileCheck %s --check-prefix=JSON < %t.json

// A cubin from the toolkit's ptxas, and a manifest that says so.
// ELF: 7f 45 4c 46
// JSON: "format": "cubin"
func.func @plain(%q: tensor<1x1x64x64xf16>, %k: tensor<1x1x64x64xf16>, %v: tensor<1x1x64x64xf16>) -> tensor<1x1x64x64xf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>) -> tensor<1x1x64x64xf16>
  return %o : tensor<1x1x64x64xf16>
}
