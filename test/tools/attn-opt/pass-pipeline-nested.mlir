// RUN: attn-opt %s --pass-pipeline='builtin.module(func.func(cse))' | FileCheck %s
// RUN: attn-opt %s --pass-pipeline='func.func(cse),attn-fuse' | FileCheck %s
// RUN: not attn-opt %s --pass-pipeline='builtin.module(func.func(attn-fuse))' 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=ERR
// RUN: not attn-opt %s --pass-pipeline='func.func(cse,tile{block-m=16})' 2>&1 >/dev/null \
// RUN:   | FileCheck %s --check-prefix=ERR-ALIAS

// Upstream passes nest under func.func; attn passes run on builtin.module
// only and say so when nested.

// CHECK-LABEL: func.func @cse_nested
// CHECK-NEXT:    %[[A:.*]] = arith.addi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:    return %[[A]], %[[A]] : i32, i32
func.func @cse_nested(%x: i32) -> (i32, i32) {
  %a = arith.addi %x, %x : i32
  %b = arith.addi %x, %x : i32
  return %a, %b : i32, i32
}

// ERR: attn-opt: error: attn pass 'attn-fuse' runs on builtin.module and cannot be nested under 'func.func'
// ERR-ALIAS: attn-opt: error: attn pass 'tile' runs on builtin.module and cannot be nested under 'func.func'
