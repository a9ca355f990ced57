// RUN: not attn-opt %s --no-such-pass 2>&1 >/dev/null | FileCheck %s
// RUN: not attn-opt %s --pass-pipeline='builtin.module(attn-fuse,no-such-pass)' 2>&1 >/dev/null \
// RUN:   | FileCheck %s
// RUN: not attn-opt %s --canonicalize=no-such-option=1 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=UPSTREAM-OPT

// An unknown pass is one line naming it, not MLIR's echo of the pipeline
// text with a caret (it used to be three lines after a doubled `error:`).

// CHECK:     attn-opt: error: 'no-such-pass' does not refer to a registered pass or pass pipeline
// CHECK-NOT: {{.}}

// UPSTREAM-OPT:     attn-opt: error: no such option no-such-option; failed to add `canonicalize` with options `no-such-option=1`
// UPSTREAM-OPT-NOT: {{.}}
func.func @f() {
  return
}
