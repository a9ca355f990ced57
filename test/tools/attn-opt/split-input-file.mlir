// RUN: attn-opt --split-input-file %s | FileCheck %s

// Each `// -----` chunk is parsed, verified and printed on its own: the
// three chunks define the same symbol, which one module would reject. The
// outputs are separated by `// -----` lines, as mlir-opt does.

// CHECK:      module {
// CHECK-NEXT:   func.func @same_name(%{{.*}}: tensor<1x2x8x8xf32>)
// CHECK-NEXT:     "attn.scale"
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: // -----
// CHECK-NEXT: module {
// CHECK-NEXT:   func.func @same_name(%{{.*}}: tensor<1x2x8x8xf32>)
// CHECK-NEXT:     "attn.causal"
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NEXT: // -----
// CHECK-NEXT: module {
// CHECK-NEXT:   func.func @same_name(%{{.*}}: tensor<1x2x8x8xf32>)
// CHECK-NEXT:     "attn.softmax"
// CHECK-NEXT:     return
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-NOT:  {{.}}
func.func @same_name(%s: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %0 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}

// -----

func.func @same_name(%s: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %0 = "attn.causal"(%s) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}

// -----

func.func @same_name(%s: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %0 = "attn.softmax"(%s) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}
