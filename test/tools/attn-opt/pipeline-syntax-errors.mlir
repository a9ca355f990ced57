// RUN: not attn-opt %s --pass-pipeline='attn-tile{block-m=32' 2>&1 >/dev/null | FileCheck %s --check-prefix=OPEN-BRACE
// RUN: not attn-opt %s --pass-pipeline='builtin.module(attn-tile{block-m=32)' 2>&1 >/dev/null | FileCheck %s --check-prefix=OPEN-BRACE
// RUN: not attn-opt %s --pass-pipeline='attn-tile{block-m=32}}' 2>&1 >/dev/null | FileCheck %s --check-prefix=CLOSE-BRACE
// RUN: not attn-opt %s --pass-pipeline='builtin.module(attn-fuse' 2>&1 >/dev/null | FileCheck %s --check-prefix=OPEN-PAREN
// RUN: not attn-opt %s --pass-pipeline='builtin.module(attn-fuse))' 2>&1 >/dev/null | FileCheck %s --check-prefix=CLOSE-PAREN
// RUN: not attn-opt %s --pass-pipeline='func.func(cse' 2>&1 >/dev/null | FileCheck %s --check-prefix=UPSTREAM-PAREN
// RUN: not attn-opt %s --pass-pipeline='attn-fuse,,cse' 2>&1 >/dev/null | FileCheck %s --check-prefix=EMPTY
// RUN: not attn-opt %s --pass-pipeline='attn-fuse,' 2>&1 >/dev/null | FileCheck %s --check-prefix=EMPTY
// RUN: not attn-opt %s --pass-pipeline='builtin.module(attn-fuse, )' 2>&1 >/dev/null | FileCheck %s --check-prefix=EMPTY
// RUN: not attn-opt %s --pass-pipeline='attn-fuse' --cse 2>&1 >/dev/null | FileCheck %s --check-prefix=MIXED
// RUN: not attn-opt %s --pass-pipeline='attn-fuse' --pass-pipeline='cse' 2>&1 >/dev/null | FileCheck %s --check-prefix=TWICE

// Malformed pipeline text is one clear error, never a crash or a silently
// dropped character. A stray `}` and a trailing `,` used to be accepted,
// and --pass-pipeline with pass flags gave "expected 'builtin.module(...)'".

// OPEN-BRACE:     attn-opt: error: unbalanced '{' in options of 'attn-tile'
// CLOSE-BRACE:    attn-opt: error: unbalanced '}' in pass pipeline
// OPEN-PAREN:     attn-opt: error: expected 'builtin.module(...)'
// CLOSE-PAREN:    attn-opt: error: unbalanced ')' in pass pipeline
// UPSTREAM-PAREN: attn-opt: error: encountered unbalanced parentheses while parsing pipeline
// EMPTY:          attn-opt: error: empty pass name in pipeline
// MIXED:          attn-opt: error: --pass-pipeline cannot be combined with pass flags such as '--cse'
// TWICE:          attn-opt: error: --pass-pipeline given more than once
func.func @f() {
  return
}
