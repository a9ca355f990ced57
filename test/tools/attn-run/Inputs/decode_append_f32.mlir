// Decode programs with an append on the CPU path: f32, a value dim other
// than the head dim, more new rows than query rows (a chunk of keys
// appended, its last token's query attending), a paged cache with pages
// enough for every sequence (shared pages would make two sequences write
// one row).
func.func @contiguous_dv40_f32(%q: tensor<3x4x1x48xf32>, %k: tensor<3x2x50x48xf32>, %v: tensor<3x2x50x40xf32>, %len: tensor<3xi32>, %kn: tensor<3x2x5x48xf32>, %vn: tensor<3x2x5x40xf32>) -> (tensor<3x4x1x40xf32>, tensor<3x2x50x48xf32>, tensor<3x2x50x40xf32>) {
  %k2, %v2 = "attn.cache_append"(%k, %v, %len, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>, cache_layout = "contiguous", rope = {theta = 100.0 : f64, rotary_dim = 32 : i64, layout = "rotate_half"}} : (tensor<3x2x50x48xf32>, tensor<3x2x50x40xf32>, tensor<3xi32>, tensor<3x2x5x48xf32>, tensor<3x2x5x40xf32>) -> (tensor<3x2x50x48xf32>, tensor<3x2x50x40xf32>)
  %o = "attn.fused_decode"(%q, %k2, %v2, %len) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>, scale = 0.144 : f64, causal = true, cache_layout = "contiguous", rope = {theta = 100.0 : f64, rotary_dim = 32 : i64, layout = "rotate_half"}} : (tensor<3x4x1x48xf32>, tensor<3x2x50x48xf32>, tensor<3x2x50x40xf32>, tensor<3xi32>) -> tensor<3x4x1x40xf32>
  return %o, %k2, %v2 : tensor<3x4x1x40xf32>, tensor<3x2x50x48xf32>, tensor<3x2x50x40xf32>
}

func.func @paged_window_f32(%q: tensor<2x2x3x32xf32>, %k: tensor<9x1x16x32xf32>, %v: tensor<9x1x16x32xf32>, %len: tensor<2xi32>, %table: tensor<2x4xi32>, %kn: tensor<2x1x3x32xf32>, %vn: tensor<2x1x3x32xf32>) -> (tensor<2x2x3x32xf32>, tensor<9x1x16x32xf32>, tensor<9x1x16x32xf32>) {
  %k2, %v2 = "attn.cache_append"(%k, %v, %len, %table, %kn, %vn) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>, cache_layout = "paged", page_size = 16 : i64, rope = {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved"}} : (tensor<9x1x16x32xf32>, tensor<9x1x16x32xf32>, tensor<2xi32>, tensor<2x4xi32>, tensor<2x1x3x32xf32>, tensor<2x1x3x32xf32>) -> (tensor<9x1x16x32xf32>, tensor<9x1x16x32xf32>)
  %o = "attn.fused_decode"(%q, %k2, %v2, %len, %table) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.177 : f64, causal = true, cache_layout = "paged", page_size = 16 : i64, window = array<i64: 9, -1>, rope = {theta = 10000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved"}} : (tensor<2x2x3x32xf32>, tensor<9x1x16x32xf32>, tensor<9x1x16x32xf32>, tensor<2xi32>, tensor<2x4xi32>) -> tensor<2x2x3x32xf32>
  return %o, %k2, %v2 : tensor<2x2x3x32xf32>, tensor<9x1x16x32xf32>, tensor<9x1x16x32xf32>
}
