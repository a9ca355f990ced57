// RUN: not attn-opt --split-input-file %s 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR < %t.err

// A failing chunk does not stop the others, its diagnostics keep the line
// numbers of the whole file, and it adds no `// -----` to the output (it
// used to leave a dangling one after the last good chunk). Exit code 1.

// CHECK-LABEL: func.func @first_ok
// CHECK:       // -----
// CHECK-NEXT:  module {
// CHECK-NEXT:    func.func @second_ok
// CHECK:       }
// CHECK-NEXT:  }
// CHECK-NOT:   {{.}}
func.func @first_ok() {
  return
}

// -----

func.func @second_ok() {
  return
}

// -----

func.func @third_fails() {
  %0 = arith.constant 1 : i32
  // ERR: split-input-file-errors.mlir:[[@LINE+1]]:8: error: 'arith.addi' op expected 2 operands, but found 1
  %1 = "arith.addi"(%0) : (i32) -> i32
  return
}

// -----

func.func @fourth_fails() {
  // ERR: split-input-file-errors.mlir:[[@LINE+1]]:13: error: expected SSA operand
  return %a, : i32
}
