// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: %mlir_opt %s --irdl-file=%attn_src/dialects/attn/attn.irdl.mlir | FileCheck %s

// Every attn op round-trips in its valid forms: MHA and GQA shapes, f32, f16
// and bf16 elements, both RoPE layouts and a partial rotary_dim. Stock
// mlir-opt with the same IRDL accepts and prints them alike.

// CHECK-LABEL: @rope_rotate_half
// CHECK: "attn.rope"(%{{.*}}) {layout = "rotate_half", rotary_dim = 64 : i64, theta = 1.000000e+04 : f64} : (tensor<1x4x16x64xf32>) -> tensor<1x4x16x64xf32>
func.func @rope_rotate_half(%x: tensor<1x4x16x64xf32>) -> tensor<1x4x16x64xf32> {
  %0 = "attn.rope"(%x) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<1x4x16x64xf32>) -> tensor<1x4x16x64xf32>
  return %0 : tensor<1x4x16x64xf32>
}

// CHECK-LABEL: @rope_interleaved
// CHECK: "attn.rope"(%{{.*}}) {layout = "interleaved", rotary_dim = 64 : i64, theta = 5.000000e+05 : f64} : (tensor<2x4x16x64xf16>) -> tensor<2x4x16x64xf16>
func.func @rope_interleaved(%x: tensor<2x4x16x64xf16>) -> tensor<2x4x16x64xf16> {
  %0 = "attn.rope"(%x) {theta = 500000.0 : f64, rotary_dim = 64 : i64, layout = "interleaved"} : (tensor<2x4x16x64xf16>) -> tensor<2x4x16x64xf16>
  return %0 : tensor<2x4x16x64xf16>
}

// rotary_dim below the head dim rotates only the first features (GPT-NeoX).
// CHECK-LABEL: @rope_partial_rotary_dim
// CHECK: "attn.rope"(%{{.*}}) {layout = "rotate_half", rotary_dim = 32 : i64, theta = 1.000000e+04 : f64} : (tensor<1x4x16x128xbf16>) -> tensor<1x4x16x128xbf16>
func.func @rope_partial_rotary_dim(%x: tensor<1x4x16x128xbf16>) -> tensor<1x4x16x128xbf16> {
  %0 = "attn.rope"(%x) {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "rotate_half"} : (tensor<1x4x16x128xbf16>) -> tensor<1x4x16x128xbf16>
  return %0 : tensor<1x4x16x128xbf16>
}

// The smallest rotary_dim, on an interleaved layout with a narrow integer.
// CHECK-LABEL: @rope_min_rotary_dim
// CHECK: "attn.rope"(%{{.*}}) {layout = "interleaved", rotary_dim = 2 : i32, theta = 1.000000e+02 : f32}
func.func @rope_min_rotary_dim(%x: tensor<1x1x1x8xf32>) -> tensor<1x1x1x8xf32> {
  %0 = "attn.rope"(%x) {theta = 100.0 : f32, rotary_dim = 2 : i32, layout = "interleaved"} : (tensor<1x1x1x8xf32>) -> tensor<1x1x1x8xf32>
  return %0 : tensor<1x1x1x8xf32>
}

// CHECK-LABEL: @qk_mha
// CHECK: "attn.qk"(%{{.*}}, %{{.*}}) : (tensor<2x8x128x64xf32>, tensor<2x8x256x64xf32>) -> tensor<2x8x128x256xf32>
func.func @qk_mha(%q: tensor<2x8x128x64xf32>, %k: tensor<2x8x256x64xf32>) -> tensor<2x8x128x256xf32> {
  %0 = "attn.qk"(%q, %k) : (tensor<2x8x128x64xf32>, tensor<2x8x256x64xf32>) -> tensor<2x8x128x256xf32>
  return %0 : tensor<2x8x128x256xf32>
}

// GQA: 8 query heads share 2 key heads.
// CHECK-LABEL: @qk_gqa
// CHECK: "attn.qk"(%{{.*}}, %{{.*}}) : (tensor<1x8x16x64xf16>, tensor<1x2x32x64xf16>) -> tensor<1x8x16x32xf16>
func.func @qk_gqa(%q: tensor<1x8x16x64xf16>, %k: tensor<1x2x32x64xf16>) -> tensor<1x8x16x32xf16> {
  %0 = "attn.qk"(%q, %k) : (tensor<1x8x16x64xf16>, tensor<1x2x32x64xf16>) -> tensor<1x8x16x32xf16>
  return %0 : tensor<1x8x16x32xf16>
}

// MQA: one key head for all query heads; scores kept in f32.
// CHECK-LABEL: @qk_mqa_bf16
// CHECK: "attn.qk"(%{{.*}}, %{{.*}}) : (tensor<1x8x16x64xbf16>, tensor<1x1x16x64xbf16>) -> tensor<1x8x16x16xf32>
func.func @qk_mqa_bf16(%q: tensor<1x8x16x64xbf16>, %k: tensor<1x1x16x64xbf16>) -> tensor<1x8x16x16xf32> {
  %0 = "attn.qk"(%q, %k) : (tensor<1x8x16x64xbf16>, tensor<1x1x16x64xbf16>) -> tensor<1x8x16x16xf32>
  return %0 : tensor<1x8x16x16xf32>
}

// CHECK-LABEL: @scale
// CHECK: "attn.scale"(%{{.*}}) {scale = 1.250000e-01 : f64} : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
func.func @scale(%s: tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> {
  %0 = "attn.scale"(%s) {scale = 0.125 : f64} : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  return %0 : tensor<1x8x16x16xf32>
}

// An f32 scale attribute on f16 scores.
// CHECK-LABEL: @scale_f32_attr_f16
// CHECK: "attn.scale"(%{{.*}}) {scale = 2.000000e+00 : f32} : (tensor<1x1x4x4xf16>) -> tensor<1x1x4x4xf16>
func.func @scale_f32_attr_f16(%s: tensor<1x1x4x4xf16>) -> tensor<1x1x4x4xf16> {
  %0 = "attn.scale"(%s) {scale = 2.0 : f32} : (tensor<1x1x4x4xf16>) -> tensor<1x1x4x4xf16>
  return %0 : tensor<1x1x4x4xf16>
}

// CHECK-LABEL: @causal
// CHECK: "attn.causal"(%{{.*}}) : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
func.func @causal(%s: tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32> {
  %0 = "attn.causal"(%s) : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  return %0 : tensor<1x8x16x16xf32>
}

// CHECK-LABEL: @softmax
// CHECK: "attn.softmax"(%{{.*}}) : (tensor<1x8x16x32xbf16>) -> tensor<1x8x16x32xbf16>
func.func @softmax(%s: tensor<1x8x16x32xbf16>) -> tensor<1x8x16x32xbf16> {
  %0 = "attn.softmax"(%s) : (tensor<1x8x16x32xbf16>) -> tensor<1x8x16x32xbf16>
  return %0 : tensor<1x8x16x32xbf16>
}

// CHECK-LABEL: @pv_mha
// CHECK: "attn.pv"(%{{.*}}, %{{.*}}) : (tensor<2x8x128x256xf32>, tensor<2x8x256x64xf32>) -> tensor<2x8x128x64xf32>
func.func @pv_mha(%p: tensor<2x8x128x256xf32>, %v: tensor<2x8x256x64xf32>) -> tensor<2x8x128x64xf32> {
  %0 = "attn.pv"(%p, %v) : (tensor<2x8x128x256xf32>, tensor<2x8x256x64xf32>) -> tensor<2x8x128x64xf32>
  return %0 : tensor<2x8x128x64xf32>
}

// GQA values, with a value dim that differs from the query/key head dim.
// CHECK-LABEL: @pv_gqa
// CHECK: "attn.pv"(%{{.*}}, %{{.*}}) : (tensor<1x8x16x32xf16>, tensor<1x2x32x96xf16>) -> tensor<1x8x16x96xf16>
func.func @pv_gqa(%p: tensor<1x8x16x32xf16>, %v: tensor<1x2x32x96xf16>) -> tensor<1x8x16x96xf16> {
  %0 = "attn.pv"(%p, %v) : (tensor<1x8x16x32xf16>, tensor<1x2x32x96xf16>) -> tensor<1x8x16x96xf16>
  return %0 : tensor<1x8x16x96xf16>
}

// The whole unfused chain that attn-fuse matches, with GQA and RoPE on q, k.
// CHECK-LABEL: @chain_gqa_rope
// CHECK: %[[Q:.*]] = "attn.rope"(%{{.*}}) {{.*}}layout = "interleaved"
// CHECK: %[[K:.*]] = "attn.rope"(%{{.*}}) {{.*}}layout = "interleaved"
// CHECK: %[[S:.*]] = "attn.qk"(%[[Q]], %[[K]])
// CHECK: %[[SC:.*]] = "attn.scale"(%[[S]])
// CHECK: %[[C:.*]] = "attn.causal"(%[[SC]])
// CHECK: %[[P:.*]] = "attn.softmax"(%[[C]])
// CHECK: %[[O:.*]] = "attn.pv"(%[[P]], %{{.*}})
// CHECK: return %[[O]]
func.func @chain_gqa_rope(%q: tensor<1x8x16x64xf32>, %k: tensor<1x2x16x64xf32>, %v: tensor<1x2x16x64xf32>) -> tensor<1x8x16x64xf32> {
  %rq = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "interleaved"} : (tensor<1x8x16x64xf32>) -> tensor<1x8x16x64xf32>
  %rk = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "interleaved"} : (tensor<1x2x16x64xf32>) -> tensor<1x2x16x64xf32>
  %s = "attn.qk"(%rq, %rk) : (tensor<1x8x16x64xf32>, tensor<1x2x16x64xf32>) -> tensor<1x8x16x16xf32>
  %ss = "attn.scale"(%s) {scale = 0.125 : f64} : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  %c = "attn.causal"(%ss) : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  %p = "attn.softmax"(%c) : (tensor<1x8x16x16xf32>) -> tensor<1x8x16x16xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x8x16x16xf32>, tensor<1x2x16x64xf32>) -> tensor<1x8x16x64xf32>
  return %o : tensor<1x8x16x64xf32>
}

// CHECK-LABEL: @fused_plain
// CHECK: "attn.fused"(%{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<2x8x128x64xf32>, tensor<2x8x256x64xf32>, tensor<2x8x256x64xf32>) -> tensor<2x8x128x64xf32>
func.func @fused_plain(%q: tensor<2x8x128x64xf32>, %k: tensor<2x8x256x64xf32>, %v: tensor<2x8x256x64xf32>) -> tensor<2x8x128x64xf32> {
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<2x8x128x64xf32>, tensor<2x8x256x64xf32>, tensor<2x8x256x64xf32>) -> tensor<2x8x128x64xf32>
  return %0 : tensor<2x8x128x64xf32>
}

// CHECK-LABEL: @fused_causal_gqa_f16
// CHECK: "attn.fused"(%{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.250000e-01 : f64} : (tensor<1x32x64x128xf16>, tensor<1x8x64x128xf16>, tensor<1x8x64x128xf16>) -> tensor<1x32x64x128xf16>
func.func @fused_causal_gqa_f16(%q: tensor<1x32x64x128xf16>, %k: tensor<1x8x64x128xf16>, %v: tensor<1x8x64x128xf16>) -> tensor<1x32x64x128xf16> {
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<1x32x64x128xf16>, tensor<1x8x64x128xf16>, tensor<1x8x64x128xf16>) -> tensor<1x32x64x128xf16>
  return %0 : tensor<1x32x64x128xf16>
}

// CHECK-LABEL: @fused_rope_rotate_half_bf16
// CHECK: "attn.fused"(%{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, rope = {layout = "rotate_half", rotary_dim = 128 : i64, theta = 1.000000e+04 : f64}, scale = 6.250000e-02 : f64} : (tensor<1x8x16x128xbf16>, tensor<1x8x16x128xbf16>, tensor<1x8x16x128xbf16>) -> tensor<1x8x16x128xbf16>
func.func @fused_rope_rotate_half_bf16(%q: tensor<1x8x16x128xbf16>, %k: tensor<1x8x16x128xbf16>, %v: tensor<1x8x16x128xbf16>) -> tensor<1x8x16x128xbf16> {
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.0625 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<1x8x16x128xbf16>, tensor<1x8x16x128xbf16>, tensor<1x8x16x128xbf16>) -> tensor<1x8x16x128xbf16>
  return %0 : tensor<1x8x16x128xbf16>
}

// Interleaved RoPE on half the head dim, with GQA.
// CHECK-LABEL: @fused_rope_interleaved_partial_gqa
// CHECK: "attn.fused"(%{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, rope = {layout = "interleaved", rotary_dim = 32 : i64, theta = 1.000000e+04 : f64}, scale = 1.250000e-01 : f64} : (tensor<2x8x16x64xf32>, tensor<2x4x32x64xf32>, tensor<2x4x32x64xf32>) -> tensor<2x8x16x64xf32>
func.func @fused_rope_interleaved_partial_gqa(%q: tensor<2x8x16x64xf32>, %k: tensor<2x4x32x64xf32>, %v: tensor<2x4x32x64xf32>) -> tensor<2x8x16x64xf32> {
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved"}} : (tensor<2x8x16x64xf32>, tensor<2x4x32x64xf32>, tensor<2x4x32x64xf32>) -> tensor<2x8x16x64xf32>
  return %0 : tensor<2x8x16x64xf32>
}

// RoPE at an offset (a KV cache of 100 earlier tokens) and at explicit
// positions.
// CHECK-LABEL: @rope_offset_and_positions
// CHECK: "attn.rope"(%{{.*}}) {layout = "rotate_half", offset = 100 : i64, rotary_dim = 64 : i64, theta = 1.000000e+04 : f64} : (tensor<1x4x16x64xf32>) -> tensor<1x4x16x64xf32>
// CHECK: "attn.rope"(%{{.*}}, %{{.*}}) {layout = "interleaved", rotary_dim = 32 : i64, theta = 1.000000e+04 : f64} : (tensor<1x4x16x64xf32>, tensor<1x16xi32>) -> tensor<1x4x16x64xf32>
func.func @rope_offset_and_positions(%x: tensor<1x4x16x64xf32>, %pos: tensor<1x16xi32>) -> (tensor<1x4x16x64xf32>, tensor<1x4x16x64xf32>) {
  %0 = "attn.rope"(%x) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half", offset = 100 : i64} : (tensor<1x4x16x64xf32>) -> tensor<1x4x16x64xf32>
  %1 = "attn.rope"(%x, %pos) {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved"} : (tensor<1x4x16x64xf32>, tensor<1x16xi32>) -> tensor<1x4x16x64xf32>
  return %0, %1 : tensor<1x4x16x64xf32>, tensor<1x4x16x64xf32>
}

// The score modifiers on a block argument (scores from elsewhere).
// CHECK-LABEL: @score_modifiers
// CHECK: "attn.window"(%{{.*}}) {left = 128 : i64, right = 0 : i64} : (tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32>
// CHECK: "attn.window"(%{{.*}}) {left = -1 : i64, right = 4 : i64} : (tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32>
// CHECK: "attn.alibi"(%{{.*}}) {max_bias = 8.000000e+00 : f64} : (tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32>
// CHECK: "attn.softcap"(%{{.*}}) {cap = 3.000000e+01 : f64} : (tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32>
// CHECK: "attn.gate"(%{{.*}}, %{{.*}}) {block_size = 8 : i64} : (tensor<1x4x16x32xf32>, tensor<1x4x16x4xf32>) -> tensor<1x4x16x32xf32>
// CHECK: "attn.document"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<1x4x16x32xf32>, tensor<1x16xi32>, tensor<1x32xi32>) -> tensor<1x4x16x32xf32>
func.func @score_modifiers(%s: tensor<1x4x16x32xf32>, %g: tensor<1x4x16x4xf32>, %qs: tensor<1x16xi32>, %ks: tensor<1x32xi32>) -> (tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>) {
  %0 = "attn.window"(%s) {left = 128 : i64, right = 0 : i64} : (tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32>
  %1 = "attn.window"(%s) {left = -1 : i64, right = 4 : i64} : (tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32>
  %2 = "attn.alibi"(%s) {max_bias = 8.0 : f64} : (tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32>
  %3 = "attn.softcap"(%s) {cap = 30.0 : f64} : (tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32>
  %4 = "attn.gate"(%s, %g) {block_size = 8 : i64} : (tensor<1x4x16x32xf32>, tensor<1x4x16x4xf32>) -> tensor<1x4x16x32xf32>
  %5 = "attn.document"(%s, %qs, %ks) : (tensor<1x4x16x32xf32>, tensor<1x16xi32>, tensor<1x32xi32>) -> tensor<1x4x16x32xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>
}

// A chain with every modifier, in an order where it matters: a scale, then
// softcap, alibi and gate, with masks between them.
// CHECK-LABEL: @chain_every_modifier
// CHECK: "attn.qk"
// CHECK-NEXT: "attn.scale"
// CHECK-NEXT: "attn.causal"
// CHECK-NEXT: "attn.softcap"
// CHECK-NEXT: "attn.window"
// CHECK-NEXT: "attn.alibi"
// CHECK-NEXT: "attn.gate"
// CHECK-NEXT: "attn.document"
// CHECK-NEXT: "attn.softmax"
func.func @chain_every_modifier(%q: tensor<1x4x16x64xf32>, %k: tensor<1x2x32x64xf32>, %v: tensor<1x2x32x64xf32>, %g: tensor<1x4x16x4xf32>, %qs: tensor<1x16xi32>, %ks: tensor<1x32xi32>) -> tensor<1x4x16x64xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x4x16x64xf32>, tensor<1x2x32x64xf32>) -> tensor<1x4x16x32xf32>
  %s1 = "attn.scale"(%s) {scale = 0.125 : f64} : (tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32>
  %s2 = "attn.causal"(%s1) : (tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32>
  %s3 = "attn.softcap"(%s2) {cap = 30.0 : f64} : (tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32>
  %s4 = "attn.window"(%s3) {left = 8 : i64, right = -1 : i64} : (tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32>
  %s5 = "attn.alibi"(%s4) {max_bias = 8.0 : f64} : (tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32>
  %s6 = "attn.gate"(%s5, %g) {block_size = 8 : i64} : (tensor<1x4x16x32xf32>, tensor<1x4x16x4xf32>) -> tensor<1x4x16x32xf32>
  %s7 = "attn.document"(%s6, %qs, %ks) : (tensor<1x4x16x32xf32>, tensor<1x16xi32>, tensor<1x32xi32>) -> tensor<1x4x16x32xf32>
  %p = "attn.softmax"(%s7) : (tensor<1x4x16x32xf32>) -> tensor<1x4x16x32xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x4x16x32xf32>, tensor<1x2x32x64xf32>) -> tensor<1x4x16x64xf32>
  return %o : tensor<1x4x16x64xf32>
}

// attn.fused with every optional input and attribute.
// CHECK-LABEL: @fused_everything
// CHECK: "attn.fused"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {alibi = 8.000000e+00 : f64, causal = true, gate_block = 8 : i64, mods = ["scale", "softcap", "alibi", "gate"], operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1>, rope = {layout = "rotate_half", rotary_dim = 64 : i64, theta = 1.000000e+04 : f64}, scale = 1.250000e-01 : f64, softcap = 3.000000e+01 : f64, window = array<i64: 8, -1>}
func.func @fused_everything(%q: tensor<1x4x16x64xf32>, %k: tensor<1x2x32x64xf32>, %v: tensor<1x2x32x64xf32>, %g: tensor<1x4x16x4xf32>, %qs: tensor<1x16xi32>, %ks: tensor<1x32xi32>, %qp: tensor<1x16xi32>, %kp: tensor<1x32xi32>) -> tensor<1x4x16x64xf32> {
  %0 = "attn.fused"(%q, %k, %v, %g, %qs, %ks, %qp, %kp) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1>, scale = 0.125 : f64, causal = true, window = array<i64: 8, -1>, alibi = 8.0 : f64, softcap = 30.0 : f64, gate_block = 8 : i64, mods = ["scale", "softcap", "alibi", "gate"], rope = {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<1x4x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x4x16x4xf32>, tensor<1x16xi32>, tensor<1x32xi32>, tensor<1x16xi32>, tensor<1x32xi32>) -> tensor<1x4x16x64xf32>
  return %0 : tensor<1x4x16x64xf32>
}

// rope.strategy records where RoPE runs (attn-fuse's rope-strategy): each
// of the four placements round-trips.
// CHECK-LABEL: @fused_rope_strategies
// CHECK: rope = {layout = "rotate_half", rotary_dim = 16 : i64, strategy = "fused", theta = 1.000000e+04 : f64}
// CHECK: strategy = "split"
// CHECK: strategy = "pre"
// CHECK: strategy = "producer"
func.func @fused_rope_strategies(%q: tensor<1x2x8x16xbf16>) -> (tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>) {
  %0 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", strategy = "fused"}} : (tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>) -> tensor<1x2x8x16xbf16>
  %1 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", strategy = "split"}} : (tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>) -> tensor<1x2x8x16xbf16>
  %2 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", strategy = "pre"}} : (tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>) -> tensor<1x2x8x16xbf16>
  %3 = "attn.fused"(%q, %q, %q) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", strategy = "producer"}} : (tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>) -> tensor<1x2x8x16xbf16>
  return %0, %1, %2, %3 : tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>
}

// "mods" may leave out the scale (applied first) or be absent (scale,
// softcap, alibi, gate); RoPE offsets per tensor.
// CHECK-LABEL: @fused_default_order_offsets
// CHECK: "attn.fused"(%{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {alibi = 4.000000e+00 : f64, causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, rope = {k_offset = 0 : i64, layout = "interleaved", q_offset = 16 : i64, rotary_dim = 32 : i64, theta = 1.000000e+04 : f64}, scale = 1.250000e-01 : f64, softcap = 2.000000e+01 : f64}
// CHECK: "attn.fused"(%{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {alibi = 4.000000e+00 : f64, causal = false, mods = ["alibi", "softcap"]
func.func @fused_default_order_offsets(%q: tensor<1x4x16x64xf32>, %k: tensor<1x2x32x64xf32>, %v: tensor<1x2x32x64xf32>) -> (tensor<1x4x16x64xf32>, tensor<1x4x16x64xf32>) {
  %0 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, alibi = 4.0 : f64, softcap = 20.0 : f64, rope = {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved", q_offset = 16 : i64, k_offset = 0 : i64}} : (tensor<1x4x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>) -> tensor<1x4x16x64xf32>
  %1 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false, alibi = 4.0 : f64, softcap = 20.0 : f64, mods = ["alibi", "softcap"]} : (tensor<1x4x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>) -> tensor<1x4x16x64xf32>
  return %0, %1 : tensor<1x4x16x64xf32>, tensor<1x4x16x64xf32>
}

// attn.project: x [B, N, C] times w [C, H*D] into heads [B, H, N, D]; the
// rope entry is what attn-fuse's producer placement writes.
// CHECK-LABEL: @project
// CHECK: "attn.project"(%{{.*}}, %{{.*}}) : (tensor<2x16x64xbf16>, tensor<64x128xbf16>) -> tensor<2x2x16x64xbf16>
// CHECK: "attn.project"(%{{.*}}, %{{.*}}) {rope = {layout = "rotate_half", offset = 3 : i64, rotary_dim = 32 : i64, strategy = "producer", theta = 1.000000e+04 : f64}}
func.func @project(%x: tensor<2x16x64xbf16>, %w: tensor<64x128xbf16>) -> (tensor<2x2x16x64xbf16>, tensor<2x2x16x64xbf16>) {
  %0 = "attn.project"(%x, %w) : (tensor<2x16x64xbf16>, tensor<64x128xbf16>) -> tensor<2x2x16x64xbf16>
  %1 = "attn.project"(%x, %w) {rope = {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "rotate_half", offset = 3 : i64, strategy = "producer"}} : (tensor<2x16x64xbf16>, tensor<64x128xbf16>) -> tensor<2x2x16x64xbf16>
  return %0, %1 : tensor<2x2x16x64xbf16>, tensor<2x2x16x64xbf16>
}

// attn.score_mod and attn.mask_mod (issue 28): bodies of any form over the
// score and its indices, reading captured tensors (a bias table indexed by
// q - kv, an i32 id table) with tensor.extract; they repeat in a chain and
// sit among the named modifiers.
// CHECK-LABEL: @score_and_mask_mods
// CHECK: "attn.score_mod"(%{{.*}}) ({
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %[[B:.*]]: index, %[[H:.*]]: index, %[[Q:.*]]: index, %[[KV:.*]]: index):
// CHECK-NEXT: %[[C15:.*]] = arith.constant 15 : index
// CHECK-NEXT: %[[D:.*]] = arith.subi %[[Q]], %[[KV]] : index
// CHECK-NEXT: %[[E:.*]] = arith.addi %[[D]], %[[C15]] : index
// CHECK-NEXT: %[[T:.*]] = tensor.extract %{{.*}}[%[[E]]] : tensor<31xf32>
// CHECK-NEXT: %[[Y:.*]] = arith.addf %[[S]], %[[T]] : f32
// CHECK-NEXT: gpu.yield %[[Y]] : f32
// CHECK-NEXT: }) : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32>
// CHECK: "attn.causal"
// CHECK: "attn.score_mod"
// CHECK: math.tanh
// CHECK: "attn.mask_mod"(%{{.*}}) ({
// CHECK-NEXT: ^bb0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<1x16xi32>
// CHECK: arith.cmpi eq, %{{.*}}, %{{.*}} : i32
// CHECK: gpu.yield %{{.*}} : i1
// CHECK: "attn.mask_mod"
// CHECK: "attn.softmax"
func.func @score_and_mask_mods(%q: tensor<1x4x16x64xf32>, %k: tensor<1x4x16x64xf32>, %v: tensor<1x4x16x64xf32>, %bias: tensor<31xf32>, %ids: tensor<1x16xi32>) -> tensor<1x4x16x64xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x4x16x64xf32>, tensor<1x4x16x64xf32>) -> tensor<1x4x16x16xf32>
  %s1 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c15 = arith.constant 15 : index
    %d = arith.subi %i, %j : index
    %e = arith.addi %d, %c15 : index
    %t = tensor.extract %bias[%e] : tensor<31xf32>
    %y = arith.addf %x, %t : f32
    gpu.yield %y : f32
  }) : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32>
  %s2 = "attn.causal"(%s1) : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32>
  %s3 = "attn.score_mod"(%s2) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %cap = arith.constant 20.0 : f32
    %r = arith.divf %x, %cap : f32
    %t = math.tanh %r : f32
    %y = arith.mulf %t, %cap : f32
    gpu.yield %y : f32
  }) : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32>
  %s4 = "attn.mask_mod"(%s3) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %qi = tensor.extract %ids[%b, %i] : tensor<1x16xi32>
    %ki = tensor.extract %ids[%b, %j] : tensor<1x16xi32>
    %ok = arith.cmpi eq, %qi, %ki : i32
    gpu.yield %ok : i1
  }) : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32>
  %s5 = "attn.mask_mod"(%s4) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c4 = arith.constant 4 : index
    %pre = arith.cmpi ult, %j, %c4 : index
    %cau = arith.cmpi ule, %j, %i : index
    %ok = arith.ori %pre, %cau : i1
    gpu.yield %ok : i1
  }) : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32>
  %p = "attn.softmax"(%s5) : (tensor<1x4x16x16xf32>) -> tensor<1x4x16x16xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x4x16x16xf32>, tensor<1x4x16x64xf32>) -> tensor<1x4x16x64xf32>
  return %o : tensor<1x4x16x64xf32>
}

// Every type a body computes with: f16 arithmetic, bf16 and i64 captures
// read and converted, i8 and i64 integers, index casts; the math ops.
// CHECK-LABEL: @score_mod_types
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.trunci %{{.*}} : i64 to i8
// CHECK: math.erf
func.func @score_mod_types(%s: tensor<1x2x8x8xf32>, %slopes: tensor<2xbf16>, %w: tensor<2x8xf16>, %n: tensor<8xi64>) -> tensor<1x2x8x8xf32> {
  %0 = "attn.score_mod"(%s) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %m = tensor.extract %slopes[%h] : tensor<2xbf16>
    %mf = arith.extf %m : bf16 to f32
    %wh = tensor.extract %w[%h, %j] : tensor<2x8xf16>
    %two = arith.constant 2.0 : f16
    %wh2 = arith.mulf %wh, %two : f16
    %wf = arith.extf %wh2 : f16 to f32
    %nj = tensor.extract %n[%j] : tensor<8xi64>
    %n8 = arith.trunci %nj : i64 to i8
    %n32 = arith.extsi %n8 : i8 to i32
    %nf = arith.sitofp %n32 : i32 to f32
    %i64 = arith.index_cast %i : index to i64
    %j64 = arith.index_castui %j : index to i64
    %d = arith.subi %i64, %j64 : i64
    %df = arith.sitofp %d : i64 to f32
    %a = math.absf %df : f32
    %p = arith.mulf %mf, %a : f32
    %e = math.erf %wf : f32
    %f = math.fma %e, %nf, %p : f32
    %y = arith.subf %x, %f : f32
    gpu.yield %y : f32
  }) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  return %0 : tensor<1x2x8x8xf32>
}

// attn.fused carrying bodies: score_fn where "mods" names "fn" (here after
// the scale), mask_fn and-ed with the causal mask; captures stay implicit.
// CHECK-LABEL: @fused_with_bodies
// CHECK: "attn.fused"(%{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK: tensor.extract
// CHECK: gpu.yield %{{.*}} : f32
// CHECK-NEXT: }, {
// CHECK-NEXT: ^bb0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK: gpu.yield %{{.*}} : i1
// CHECK-NEXT: }) {causal = true, mods = ["scale", "fn"], operandSegmentSizes
func.func @fused_with_bodies(%q: tensor<1x2x8x16xf32>, %bias: tensor<2x8xf32>) -> tensor<1x2x8x16xf32> {
  %0 = "attn.fused"(%q, %q, %q) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %t = tensor.extract %bias[%h, %j] : tensor<2x8xf32>
    %y = arith.addf %x, %t : f32
    gpu.yield %y : f32
  }, {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c2 = arith.constant 2 : index
    %r = arith.remui %j, %c2 : index
    %c0 = arith.constant 0 : index
    %ok = arith.cmpi eq, %r, %c0 : index
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = true, mods = ["scale", "fn"]} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %0 : tensor<1x2x8x16xf32>
}

// Only a mask body: no "mods" needed.
// CHECK-LABEL: @fused_mask_fn_only
// CHECK: "attn.fused"(%{{.*}}, %{{.*}}, %{{.*}}) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: ^bb0
// CHECK: }) {causal = false, operandSegmentSizes
func.func @fused_mask_fn_only(%q: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %0 = "attn.fused"(%q, %q, %q) ({}, {
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %ok = arith.cmpi uge, %i, %j : index
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.25 : f64, causal = false} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %0 : tensor<1x2x8x16xf32>
}
