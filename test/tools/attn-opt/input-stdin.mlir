// RUN: attn-opt < %s | FileCheck %s
// RUN: attn-opt - < %s | FileCheck %s
// RUN: not attn-opt - < %S/Inputs/syntax-error.mlir 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=ERR

// With no input argument, or `-`, attn-opt reads standard input; its
// diagnostics name the buffer <stdin>.

// CHECK-LABEL: func.func @read_from_stdin
// CHECK-NEXT:    "attn.causal"
func.func @read_from_stdin(%s: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %0 = "attn.causal"(%s) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}

// ERR: <stdin>:3:13: error: expected SSA operand
