// RUN: attn-opt %s --split-input-file --attn-fuse | FileCheck %s
// RUN: attn-opt %s --split-input-file --fuse-rope | FileCheck %s

// CHECK-LABEL: @fuse_rope_causal
// CHECK: "attn.fused"(%arg0, %arg1, %arg2) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {{.*}}causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, rope = {layout = "rotate_half", rotary_dim = 16 : i64, theta = 1.000000e+04 : f64}, scale = 2.500000e-01 : f64
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
// CHECK: "attn.fused"(%arg0, %arg1, %arg2) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.000000e+00 : f64}
// CHECK-NOT: rope
// CHECK-NOT: mods
func.func @fuse_plain(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Scales multiply; causal may come before or after them.
// CHECK-LABEL: @fuse_scales_around_causal
// CHECK: "attn.fused"
// CHECK: }) {causal = true, operandSegmentSizes = {{.*}}, scale = 1.250000e-01 : f64
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
// CHECK: "attn.fused"(%[[QR]], %[[KR]], %arg2) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {causal = false, operandSegmentSizes = {{.*}}, scale = 1.000000e+00 : f64}
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
// CHECK: "attn.fused"(%arg0, %arg1, %arg2) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {{.*}}rope = {layout = "interleaved", rotary_dim = 8 : i64{{.*}}} : (tensor<1x8x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>) -> tensor<1x8x8x16xbf16>
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

// -----

// Every block at once, modifiers in program order: "mods" keeps the order of
// scale, softcap, alibi and gate; masks become attributes (causal, window)
// or inputs (segments); the inputs follow q, k, v in their fixed order.
// CHECK-LABEL: @fuse_everything
// CHECK: "attn.fused"(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: })
// CHECK-SAME: alibi = 8.000000e+00 : f64, causal = true, gate_block = 16 : i64
// CHECK-SAME: mods = ["softcap", "scale", "gate", "alibi"]
// CHECK-SAME: operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 1>
// CHECK-SAME: rope = {layout = "rotate_half", rotary_dim = 8 : i64, theta = 1.000000e+04 : f64}
// CHECK-SAME: scale = 1.250000e-01 : f64, softcap = 3.000000e+01 : f64, window = array<i64: 4, -1>
// CHECK-NOT: "attn.
func.func @fuse_everything(%q: tensor<1x4x32x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>, %g: tensor<1x4x32x3xf32>, %qs: tensor<1x32xi32>, %ks: tensor<1x40xi32>, %qp: tensor<1x32xi32>, %kp: tensor<1x40xi32>) -> tensor<1x4x32x16xf32> {
  %qr = "attn.rope"(%q, %qp) {theta = 10000.0 : f64, rotary_dim = 8 : i64, layout = "rotate_half"} : (tensor<1x4x32x16xf32>, tensor<1x32xi32>) -> tensor<1x4x32x16xf32>
  %kr = "attn.rope"(%k, %kp) {theta = 10000.0 : f64, rotary_dim = 8 : i64, layout = "rotate_half"} : (tensor<1x2x40x16xf32>, tensor<1x40xi32>) -> tensor<1x2x40x16xf32>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x4x32x16xf32>, tensor<1x2x40x16xf32>) -> tensor<1x4x32x40xf32>
  %s1 = "attn.document"(%s, %qs, %ks) : (tensor<1x4x32x40xf32>, tensor<1x32xi32>, tensor<1x40xi32>) -> tensor<1x4x32x40xf32>
  %s2 = "attn.softcap"(%s1) {cap = 30.0 : f64} : (tensor<1x4x32x40xf32>) -> tensor<1x4x32x40xf32>
  %s3 = "attn.scale"(%s2) {scale = 0.5 : f64} : (tensor<1x4x32x40xf32>) -> tensor<1x4x32x40xf32>
  %s4 = "attn.causal"(%s3) : (tensor<1x4x32x40xf32>) -> tensor<1x4x32x40xf32>
  %s5 = "attn.scale"(%s4) {scale = 0.25 : f64} : (tensor<1x4x32x40xf32>) -> tensor<1x4x32x40xf32>
  %s6 = "attn.gate"(%s5, %g) {block_size = 16 : i64} : (tensor<1x4x32x40xf32>, tensor<1x4x32x3xf32>) -> tensor<1x4x32x40xf32>
  %s7 = "attn.window"(%s6) {left = 4 : i64, right = -1 : i64} : (tensor<1x4x32x40xf32>) -> tensor<1x4x32x40xf32>
  %s8 = "attn.alibi"(%s7) {max_bias = 8.0 : f64} : (tensor<1x4x32x40xf32>) -> tensor<1x4x32x40xf32>
  %p = "attn.softmax"(%s8) : (tensor<1x4x32x40xf32>) -> tensor<1x4x32x40xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x4x32x40xf32>, tensor<1x2x40x16xf32>) -> tensor<1x4x32x16xf32>
  return %o : tensor<1x4x32x16xf32>
}

// -----

// A subset: softcap alone names no scale in "mods" (no attn.scale was
// written); the window is the only mask.
// CHECK-LABEL: @fuse_softcap_window
// CHECK: "attn.fused"(%arg0, %arg1, %arg2) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {causal = false, mods = ["softcap"], operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 1.000000e+00 : f64, softcap = 5.000000e+01 : f64, window = array<i64: 8, 8>}
func.func @fuse_softcap_window(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %s1 = "attn.window"(%s) {left = 8 : i64, right = 8 : i64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %s2 = "attn.softcap"(%s1) {cap = 50.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s2) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// RoPE offsets: q and k at different offsets (decoding with a cache) give
// q_offset and k_offset; equal offsets give one "offset".
// CHECK-LABEL: @fuse_rope_offsets
// CHECK: "attn.fused"(%arg0, %arg1, %arg2) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {{.*}}rope = {k_offset = 3 : i64, layout = "interleaved", q_offset = 7 : i64, rotary_dim = 16 : i64
// CHECK-LABEL: @fuse_rope_same_offset
// CHECK: "attn.fused"(%arg0, %arg1, %arg2) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {{.*}}rope = {layout = "interleaved", offset = 5 : i64, rotary_dim = 16 : i64
func.func @fuse_rope_offsets(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "interleaved", offset = 7 : i64} : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %kr = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "interleaved", offset = 3 : i64} : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}
func.func @fuse_rope_same_offset(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "interleaved", offset = 5 : i64} : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %kr = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "interleaved", offset = 5 : i64} : (tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// A gate bias used by another op still fuses: inputs may have other uses,
// only intermediate scores must not.
// CHECK-LABEL: @fuse_gate_shared_input
// CHECK: "attn.fused"(%arg0, %arg1, %arg2, %arg3) ({
// CHECK-NEXT: }, {
// CHECK-NEXT: }) {causal = false, gate_block = 4 : i64, mods = ["gate"], operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>
// CHECK: return {{.*}}, %arg3
func.func @fuse_gate_shared_input(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %g: tensor<1x2x8x2xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x2xf32>) {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %s1 = "attn.gate"(%s, %g) {block_size = 4 : i64} : (tensor<1x2x8x8xf32>, tensor<1x2x8x2xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s1) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o, %g : tensor<1x2x8x16xf32>, tensor<1x2x8x2xf32>
}

// -----

// A modifier's result used twice: nothing fuses.
// CHECK-LABEL: @no_fuse_when_modified_scores_escape
// CHECK: "attn.alibi"
// CHECK-NOT: "attn.fused"
func.func @no_fuse_when_modified_scores_escape(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>) {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  %s1 = "attn.alibi"(%s) {max_bias = 8.0 : f64} : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %p = "attn.softmax"(%s1) : (tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o, %s1 : tensor<1x2x8x16xf32>, tensor<1x2x8x8xf32>
}
