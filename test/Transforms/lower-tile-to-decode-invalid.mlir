// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-tile --lower-tile-to-decode -o /dev/null

// What the decode kernel does not take is an error at the op (the CPU
// path computes all of it).

func.func @f32(%q: tensor<1x2x1x64xf32>, %k: tensor<1x1x64x64xf32>, %v: tensor<1x1x64x64xf32>, %len: tensor<1xi32>) -> tensor<1x2x1x64xf32> {
  // expected-error@+1 {{no decode kernel for 'f32': the decode kernel takes f16 or bf16}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<1x2x1x64xf32>, tensor<1x1x64x64xf32>, tensor<1x1x64x64xf32>, tensor<1xi32>) -> tensor<1x2x1x64xf32>
  return %o : tensor<1x2x1x64xf32>
}

// -----

func.func @d96(%q: tensor<1x2x1x96xf16>, %k: tensor<1x1x64x96xf16>, %v: tensor<1x1x64x96xf16>, %len: tensor<1xi32>) -> tensor<1x2x1x96xf16> {
  // expected-error@+1 {{no decode kernel for 'd96': the decode kernel has head dims 64, 128 and 256 (value dim equal)}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<1x2x1x96xf16>, tensor<1x1x64x96xf16>, tensor<1x1x64x96xf16>, tensor<1xi32>) -> tensor<1x2x1x96xf16>
  return %o : tensor<1x2x1x96xf16>
}

// -----

func.func @rows17(%q: tensor<1x2x17x64xf16>, %k: tensor<1x1x64x64xf16>, %v: tensor<1x1x64x64xf16>, %len: tensor<1xi32>) -> tensor<1x2x17x64xf16> {
  // expected-error@+1 {{no decode kernel for 'rows17': the decode kernel takes 1 to 16 query rows per sequence}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<1x2x17x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1xi32>) -> tensor<1x2x17x64xf16>
  return %o : tensor<1x2x17x64xf16>
}

// -----

func.func @value_dim(%q: tensor<1x2x1x64xf16>, %k: tensor<1x1x64x64xf16>, %v: tensor<1x1x64x128xf16>, %len: tensor<1xi32>) -> tensor<1x2x1x128xf16> {
  // expected-error@+1 {{no decode kernel for 'value_dim': the decode kernel needs the value dim equal to the head dim}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous"} : (tensor<1x2x1x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x128xf16>, tensor<1xi32>) -> tensor<1x2x1x128xf16>
  return %o : tensor<1x2x1x128xf16>
}

// -----

func.func @rope24(%q: tensor<1x2x1x64xf16>, %k: tensor<1x1x64x64xf16>, %v: tensor<1x1x64x64xf16>, %len: tensor<1xi32>) -> tensor<1x2x1x64xf16> {
  // expected-error@+1 {{no decode kernel for 'rope24': the decode kernel's rotate-half RoPE needs rotary_dim a multiple of 16}}
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.125 : f64, causal = true, cache_layout = "contiguous", rope = {theta = 10000.0 : f64, rotary_dim = 24 : i64, layout = "rotate_half"}} : (tensor<1x2x1x64xf16>, tensor<1x1x64x64xf16>, tensor<1x1x64x64xf16>, tensor<1xi32>) -> tensor<1x2x1x64xf16>
  return %o : tensor<1x2x1x64xf16>
}
