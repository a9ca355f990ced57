// RUN: not attn-opt --verify-diagnostics %s 2>&1 >/dev/null | FileCheck %s

// An error with no expectation fails the run; it is reported once, as
// unexpected, with its line and message (not also printed as usual).

func.func @unexpected() {
  %0 = arith.constant 1 : i32
  // CHECK: verify-diagnostics-unexpected.mlir:[[@LINE+1]]: error: unexpected error: 'arith.addi' op expected 2 operands, but found 1
  %1 = "arith.addi"(%0) : (i32) -> i32
  return
}
// CHECK-NOT: error
