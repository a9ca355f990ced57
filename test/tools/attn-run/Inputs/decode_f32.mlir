// f32 decode programs for attn-run's CPU check (the GPU decode kernel
// takes f16 and bf16): a paged cache whose table has fewer pages than the
// sequences need (pages shared between them), and head dim 48.
func.func @paged_shared_pages_f32(%q: tensor<4x6x2x48xf32>, %k: tensor<6x3x16x48xf32>, %v: tensor<6x3x16x40xf32>, %len: tensor<4xi32>, %t: tensor<4x5xi32>) -> tensor<4x6x2x40xf32> {
  %o = "attn.fused_decode"(%q, %k, %v, %len, %t) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.144 : f64, causal = true, cache_layout = "paged", page_size = 16 : i64, alibi = 4.0 : f64, softcap = 10.0 : f64, mods = ["alibi", "scale", "softcap"], rope = {theta = 500.0 : f64, rotary_dim = 48 : i64, layout = "rotate_half"}} : (tensor<4x6x2x48xf32>, tensor<6x3x16x48xf32>, tensor<6x3x16x40xf32>, tensor<4xi32>, tensor<4x5xi32>) -> tensor<4x6x2x40xf32>
  return %o : tensor<4x6x2x40xf32>
}

func.func @contiguous_noncausal_window_f32(%q: tensor<2x2x5x32xf32>, %k: tensor<2x1x90x32xf32>, %v: tensor<2x1x90x32xf32>, %len: tensor<2xi32>) -> tensor<2x2x5x32xf32> {
  %o = "attn.fused_decode"(%q, %k, %v, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.2 : f64, causal = false, cache_layout = "contiguous", window = array<i64: 7, 2>} : (tensor<2x2x5x32xf32>, tensor<2x1x90x32xf32>, tensor<2x1x90x32xf32>, tensor<2xi32>) -> tensor<2x2x5x32xf32>
  return %o : tensor<2x2x5x32xf32>
}
