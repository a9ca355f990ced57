// RUN: not attn-opt %s 2>&1 >/dev/null | FileCheck %s
// RUN: not attn-opt --split-input-file %s 2>&1 >/dev/null | FileCheck %s

// Malformed IR is reported at file:line:col by the parser; exit 1.

func.func @syntax_error(%a: i32) -> i32 {
  // CHECK: syntax-error.mlir:[[@LINE+1]]:13: error: expected SSA operand
  return %a, : i32
}
