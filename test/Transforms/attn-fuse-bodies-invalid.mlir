// RUN: attn-opt %s --split-input-file --attn-fuse --verify-diagnostics

// Issue 28: score_fn is one block applied at one place in "mods", so two
// attn.score_mod ops with a named non-commuting modifier between them
// cannot fuse yet: an error at the later one.
func.func @score_mods_apart(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %s1 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %y = math.tanh %x : f32
    gpu.yield %y : f32
  }) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s2 = "attn.softcap"(%s1) {cap = 30.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s3 = "attn.causal"(%s2) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  // expected-error@+1 {{attn.score_mod ops must be adjacent in the chain to fuse; found 'attn.softcap' between two}}
  %s4 = "attn.score_mod"(%s3) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %y = math.exp %x : f32
    gpu.yield %y : f32
  }) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s4) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// A scale counts too (attn.fused has one scale); the op named is the one
// next to the later score_mod.
func.func @score_mods_apart_scale(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %s1 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %y = math.tanh %x : f32
    gpu.yield %y : f32
  }) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s2 = "attn.alibi"(%s1) {max_bias = 8.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s3 = "attn.scale"(%s2) {scale = 0.5 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  // expected-error@+1 {{attn.score_mod ops must be adjacent in the chain to fuse; found 'attn.scale' between two}}
  %s4 = "attn.score_mod"(%s3) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %y = math.exp %x : f32
    gpu.yield %y : f32
  }) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s4) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}
