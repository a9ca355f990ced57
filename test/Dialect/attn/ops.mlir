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

// A negative scale is finite and non-zero, hence valid.
// CHECK-LABEL: @scale_negative_f16
// CHECK: "attn.scale"(%{{.*}}) {scale = -2.000000e+00 : f32} : (tensor<1x1x4x4xf16>) -> tensor<1x1x4x4xf16>
func.func @scale_negative_f16(%s: tensor<1x1x4x4xf16>) -> tensor<1x1x4x4xf16> {
  %0 = "attn.scale"(%s) {scale = -2.0 : f32} : (tensor<1x1x4x4xf16>) -> tensor<1x1x4x4xf16>
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
// CHECK: "attn.fused"(%{{.*}}, %{{.*}}, %{{.*}}) {causal = false, scale = 1.250000e-01 : f64} : (tensor<2x8x128x64xf32>, tensor<2x8x256x64xf32>, tensor<2x8x256x64xf32>) -> tensor<2x8x128x64xf32>
func.func @fused_plain(%q: tensor<2x8x128x64xf32>, %k: tensor<2x8x256x64xf32>, %v: tensor<2x8x256x64xf32>) -> tensor<2x8x128x64xf32> {
  %0 = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = false} : (tensor<2x8x128x64xf32>, tensor<2x8x256x64xf32>, tensor<2x8x256x64xf32>) -> tensor<2x8x128x64xf32>
  return %0 : tensor<2x8x128x64xf32>
}

// CHECK-LABEL: @fused_causal_gqa_f16
// CHECK: "attn.fused"(%{{.*}}, %{{.*}}, %{{.*}}) {causal = true, scale = 1.250000e-01 : f64} : (tensor<1x32x64x128xf16>, tensor<1x8x64x128xf16>, tensor<1x8x64x128xf16>) -> tensor<1x32x64x128xf16>
func.func @fused_causal_gqa_f16(%q: tensor<1x32x64x128xf16>, %k: tensor<1x8x64x128xf16>, %v: tensor<1x8x64x128xf16>) -> tensor<1x32x64x128xf16> {
  %0 = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = true} : (tensor<1x32x64x128xf16>, tensor<1x8x64x128xf16>, tensor<1x8x64x128xf16>) -> tensor<1x32x64x128xf16>
  return %0 : tensor<1x32x64x128xf16>
}

// CHECK-LABEL: @fused_rope_rotate_half_bf16
// CHECK: "attn.fused"(%{{.*}}, %{{.*}}, %{{.*}}) {causal = true, rope = {layout = "rotate_half", rotary_dim = 128 : i64, theta = 1.000000e+04 : f64}, scale = 6.250000e-02 : f64} : (tensor<1x8x16x128xbf16>, tensor<1x8x16x128xbf16>, tensor<1x8x16x128xbf16>) -> tensor<1x8x16x128xbf16>
func.func @fused_rope_rotate_half_bf16(%q: tensor<1x8x16x128xbf16>, %k: tensor<1x8x16x128xbf16>, %v: tensor<1x8x16x128xbf16>) -> tensor<1x8x16x128xbf16> {
  %0 = "attn.fused"(%q, %k, %v) {scale = 0.0625 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"}} : (tensor<1x8x16x128xbf16>, tensor<1x8x16x128xbf16>, tensor<1x8x16x128xbf16>) -> tensor<1x8x16x128xbf16>
  return %0 : tensor<1x8x16x128xbf16>
}

// Interleaved RoPE on half the head dim, with GQA.
// CHECK-LABEL: @fused_rope_interleaved_partial_gqa
// CHECK: "attn.fused"(%{{.*}}, %{{.*}}, %{{.*}}) {causal = false, rope = {layout = "interleaved", rotary_dim = 32 : i64, theta = 1.000000e+04 : f64}, scale = 1.250000e-01 : f64} : (tensor<2x8x16x64xf32>, tensor<2x4x32x64xf32>, tensor<2x4x32x64xf32>) -> tensor<2x8x16x64xf32>
func.func @fused_rope_interleaved_partial_gqa(%q: tensor<2x8x16x64xf32>, %k: tensor<2x4x32x64xf32>, %v: tensor<2x4x32x64xf32>) -> tensor<2x8x16x64xf32> {
  %0 = "attn.fused"(%q, %k, %v) {scale = 0.125 : f64, causal = false, rope = {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved"}} : (tensor<2x8x16x64xf32>, tensor<2x4x32x64xf32>, tensor<2x4x32x64xf32>) -> tensor<2x8x16x64xf32>
  return %0 : tensor<2x8x16x64xf32>
}
