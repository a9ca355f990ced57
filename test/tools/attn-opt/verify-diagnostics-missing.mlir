// RUN: not attn-opt --split-input-file --verify-diagnostics %s 2>&1 >/dev/null \
// RUN:   | FileCheck %s

// An expectation that no diagnostic meets fails the run and is named with
// its line and text.

func.func @never_fails() {
  // CHECK: verify-diagnostics-missing.mlir:[[@LINE+1]]: error: expected error "this never happens" was not produced
  %0 = arith.constant 1 : i32 // expected-error {{this never happens}}
  return
}

// -----

// An error on another line than expected is both unmatched and unexpected.

func.func @wrong_line() {
  %0 = arith.constant 1 : i32
  // CHECK: verify-diagnostics-missing.mlir:[[@LINE+2]]: error: unexpected error: 'arith.addi' op expected 2 operands, but found 1
  // CHECK: verify-diagnostics-missing.mlir:[[@LINE+3]]: error: expected error "expected 2 operands" was not produced
  %1 = "arith.addi"(%0) : (i32) -> i32
  // expected-error@+1 {{expected 2 operands}}
  return
}
