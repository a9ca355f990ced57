// RUN: attn-opt --split-input-file --verify-diagnostics %s | FileCheck %s

// Every form of expectation (@+N, @-N, @above, @below, same line) is met,
// in parse errors and verifier errors alike, so attn-opt exits 0 and prints
// the chunks that had no error.

func.func @plus_n() {
  %0 = arith.constant 1 : i32
  // expected-error@+2 {{expected 2 operands, but found 1}}
  // A comment between the annotation and its line.
  %1 = "arith.addi"(%0) : (i32) -> i32
  return
}

// -----

func.func @minus_n() {
  %0 = arith.constant 1 : i32
  %1 = "arith.addi"(%0) : (i32) -> i32
  // expected-error@-1 {{'arith.addi' op expected 2 operands}}
  return
}

// -----

func.func @above() {
  %0 = arith.constant 1 : i32
  %1 = "arith.addi"(%0) : (i32) -> i32
  // expected-error@above {{expected 2 operands}}
  return
}

// -----

func.func @below() {
  %0 = arith.constant 1 : i32
  // expected-error@below {{expected 2 operands}}
  %1 = "arith.addi"(%0) : (i32) -> i32
  return
}

// -----

func.func @same_line() {
  %0 = arith.constant 1 : i32
  %1 = "arith.addi"(%0) : (i32) -> i32 // expected-error {{expected 2 operands}}
  return
}

// -----

func.func @parse_error(%a: i32) -> i32 {
  // expected-error@+1 {{expected SSA operand}}
  return %a, : i32
}

// -----

// CHECK-NOT:   func.func @plus_n
// CHECK-LABEL: func.func @no_error
// CHECK-NOT:   func.func
func.func @no_error() {
  return
}
