// RUN: attn-opt --attn-fuse --split-input-file --verify-diagnostics %s
// RUN: attn-opt --attn-fuse --split-input-file %s 2>&1 >/dev/null | FileCheck %s
// Issue 25: a chain attn-fuse cannot fuse used to be left alone without a
// word (attn-tile then said "run attn-fuse first"). Each gets a remark at
// the op that stopped the match, saying why, and stays unfused.

// CHECK: attn-fuse-remarks.mlir:[[@LINE+5]]:8: remark: attn-fuse did not fuse this attention: 'math.tanh' between attn.qk and attn.softmax is not a score modifier
// CHECK-NOT: error
func.func @tanh_between_qk_and_softmax(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  // expected-remark@+1 {{'math.tanh' between attn.qk and attn.softmax is not a score modifier (expected attn.scale, attn.causal}}
  %t = math.tanh %s : tensor<1x1x4x4xf32>
  %p = "attn.softmax"(%t) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// -----

func.func @scores_used_twice(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>) -> (tensor<1x1x4x8xf32>, tensor<1x1x4x4xf32>) {
  %s = "attn.qk"(%q, %k) : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  // expected-remark@+1 {{the result of 'attn.causal' has 2 uses (every value inside the chain must have one)}}
  %c = "attn.causal"(%s) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %p = "attn.softmax"(%c) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %o, %c : tensor<1x1x4x8xf32>, tensor<1x1x4x4xf32>
}

// -----

func.func @qk_used_twice(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>) -> (tensor<1x1x4x8xf32>, tensor<1x1x4x4xf32>) {
  // expected-remark@+1 {{the result of 'attn.qk' has 2 uses}}
  %s = "attn.qk"(%q, %k) : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %p = "attn.softmax"(%s) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %o, %s : tensor<1x1x4x8xf32>, tensor<1x1x4x4xf32>
}

// -----

func.func @probabilities_used_twice(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>) -> (tensor<1x1x4x8xf32>, tensor<1x1x4x4xf32>) {
  %s = "attn.qk"(%q, %k) : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %p = "attn.softmax"(%s) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  // expected-remark@-1 {{the result of 'attn.softmax' has 2 uses}}
  %o = "attn.pv"(%p, %v) : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %o, %p : tensor<1x1x4x8xf32>, tensor<1x1x4x4xf32>
}

// -----

func.func @scores_are_an_argument(%s: tensor<1x1x4x4xf32>, %v: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {
  // expected-remark@+1 {{the operand of 'attn.softmax' is a block argument, not the result of attn.qk}}
  %p = "attn.softmax"(%s) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// -----

func.func @mixed_element_types(%q: tensor<1x1x4x8xf16>, %k: tensor<1x1x4x8xf16>, %v: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x1x4x8xf16>, tensor<1x1x4x8xf16>) -> tensor<1x1x4x4xf32>
  %p = "attn.softmax"(%s) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  // expected-remark@+1 {{q, k, v and the result of attn.pv have different element types}}
  %o = "attn.pv"(%p, %v) : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// -----

// A chain that fuses gets no remark (--verify-diagnostics fails on one).
func.func @fuses_without_remark(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x4xf32>
  %p = "attn.softmax"(%s) : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x1x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}
