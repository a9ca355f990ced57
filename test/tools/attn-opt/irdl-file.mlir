// RUN: cp %attn_src/dialects/attn/attn.irdl.mlir %t.irdl.mlir
// RUN: attn-opt %s --irdl-file=%t.irdl.mlir | FileCheck %s
// RUN: not attn-opt %s --irdl-file=%t.does-not-exist.irdl.mlir 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=MISSING
// RUN: not attn-opt %s --irdl-file=%S/Inputs/syntax-error.mlir 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=BAD-IRDL

// --irdl-file= loads the dialects from a copy of the IRDL instead of the
// built-in one; a file that cannot be read or parsed is an error.

// CHECK-LABEL: func.func @irdl_from_file
// CHECK-NEXT:    "attn.scale"
// MISSING:  error: cannot read IRDL file '{{.*}}does-not-exist.irdl.mlir'
// MISSING-NOT: error
// BAD-IRDL: error: cannot parse the IRDL of {{.*}}syntax-error.mlir
func.func @irdl_from_file(%s: tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32> {
  %0 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}
