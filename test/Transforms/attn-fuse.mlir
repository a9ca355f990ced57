// RUN: attn-opt %s --split-input-file --attn-fuse | FileCheck %s
// RUN: attn-opt %s --split-input-file --fuse-rope | FileCheck %s

// CHECK-LABEL: @fuse_rope_causal
// CHECK: "attn.fused"(%arg0, %arg1, %arg2) {{.*}}causal = true, rope = {layout = "rotate_half", rotary_dim = 16 : i64, theta = 1.000000e+04 : f64}, scale = 2.500000e-01 : f64
// CHECK-NOT: "attn.rope"
// CHECK-NOT: "attn.qk"
// CHECK-NOT: "attn.softmax"
// CHECK-NOT: "attn.pv"
func.func @fuse_rope_causal(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"} : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %kr = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"} : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s2 = "attn.causal"(%s1) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s2) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Without RoPE, scale or mask the fused op has causal = false, scale = 1.
// CHECK-LABEL: @fuse_plain
// CHECK: "attn.fused"(%arg0, %arg1, %arg2) {causal = false, scale = 1.000000e+00 : f64}
// CHECK-NOT: rope
func.func @fuse_plain(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Scales multiply; causal may come before or after them.
// CHECK-LABEL: @fuse_scales_around_causal
// CHECK: "attn.fused"{{.*}}causal = true, scale = 1.250000e-01 : f64
func.func @fuse_scales_around_causal(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %s1 = "attn.scale"(%s) {scale = 0.5 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s2 = "attn.causal"(%s1) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s3 = "attn.scale"(%s2) {scale = 0.25 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s3) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Scores used twice cannot live only inside a kernel: nothing fuses.
// CHECK-LABEL: @no_fuse_when_scores_escape
// CHECK: "attn.qk"
// CHECK: "attn.softmax"
// CHECK: "attn.pv"
// CHECK-NOT: "attn.fused"
func.func @no_fuse_when_scores_escape(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>) {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o, %s : tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>
}

// -----

// q and k rotated differently: attention fuses, RoPE stays outside.
// CHECK-LABEL: @rope_mismatch_stays_outside
// CHECK: %[[QR:.*]] = "attn.rope"(%arg0)
// CHECK: %[[KR:.*]] = "attn.rope"(%arg1)
// CHECK: "attn.fused"(%[[QR]], %[[KR]], %arg2) {causal = false, scale = 1.000000e+00 : f64}
func.func @rope_mismatch_stays_outside(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"} : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %kr = "attn.rope"(%k) {theta = 500000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"} : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// GQA in bf16 with interleaved, partial RoPE.
// CHECK-LABEL: @fuse_gqa_bf16
// CHECK: "attn.fused"(%arg0, %arg1, %arg2) {{.*}}rope = {layout = "interleaved", rotary_dim = 8 : i64{{.*}}} : (tensor<1x8x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>) -> tensor<1x8x8x16xbf16>
func.func @fuse_gqa_bf16(%q: tensor<1x8x8x16xbf16>, %k: tensor<1x2x8x16xbf16>, %v: tensor<1x2x8x16xbf16>) -> tensor<1x8x8x16xbf16> {
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 8 : i64, layout = "interleaved"} : (tensor<1x8x8x16xbf16>) -> tensor<1x8x8x16xbf16>
  %kr = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 8 : i64, layout = "interleaved"} : (tensor<1x2x8x16xbf16>) -> tensor<1x2x8x16xbf16>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x8x8x16xbf16>, tensor<1x2x8x16xbf16>) -> tensor<1x8x8x8xbf16>
  %s1 = "attn.causal"(%s) : (tensor<1x8x8x8xbf16>) -> tensor<1x8x8x8xbf16>
  %p = "attn.softmax"(%s1) : (tensor<1x8x8x8xbf16>) -> tensor<1x8x8x8xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<1x8x8x8xbf16>, tensor<1x2x8x16xbf16>) -> tensor<1x8x8x16xbf16>
  return %o : tensor<1x8x8x16xbf16>
}

// -----

// Regression (foundation issue): f16 inputs with an f32 result used to fuse
// into an attn.fused op that failed verification. Mixed element types now
// stay unfused.
// CHECK-LABEL: @no_fuse_mixed_element_types
// CHECK: "attn.qk"
// CHECK-NOT: "attn.fused"
func.func @no_fuse_mixed_element_types(%q: tensor<1x2x8x16xf16>, %k: tensor<1x2x8x16xf16>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}
