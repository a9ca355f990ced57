// RUN: attn-opt %s | FileCheck %s
// RUN: attn-opt %s -o - | FileCheck %s

// attn-opt reads the file named on the command line, wraps top-level ops in
// a module and prints it to stdout.

// CHECK:      module {
// CHECK-LABEL:  func.func @read_from_file
// CHECK-NEXT:     %[[S:.*]] = "attn.scale"(%{{.*}}) {scale = 2.500000e-01 : f64}
// CHECK-NEXT:     return %[[S]]
// CHECK-NEXT:   }
// CHECK-NEXT: }
func.func @read_from_file(%s: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %0 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}
