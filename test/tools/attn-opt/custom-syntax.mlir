// RUN: not attn-opt %s 2>&1 | FileCheck %s
// RUN: attn-opt --verify-diagnostics %s
// Issue 25: attn ops written in a custom syntax (IRDL gives them none) made
// attn-opt exit 1 printing nothing; the hint is the C API's, located at the
// op.
func.func @f(%q: tensor<1x1x1x8xf32>) {
  // CHECK: custom-syntax.mlir:[[@LINE+2]]:8: error: cannot parse 'attn.causal' in custom syntax (attn, tile and comm ops take MLIR's generic form: "attn.causal"(...)
  // expected-error@+1 {{cannot parse 'attn.causal' in custom syntax}}
  %r = attn.causal %q : tensor<1x1x1x8xf32>
  return
}
