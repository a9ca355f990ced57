// RUN: rm -f %t
// RUN: attn-opt %s -o %t > %t.stdout
// RUN: FileCheck %s < %t
// RUN: FileCheck %s --check-prefix=STDOUT --allow-empty < %t.stdout

// `-o <file>` writes the output there, and nothing to stdout.

// CHECK-LABEL: func.func @written_to_file
// CHECK-NEXT:    "attn.softmax"
// STDOUT-NOT:  {{.}}
func.func @written_to_file(%s: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %0 = "attn.softmax"(%s) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}
