// RUN: attn-opt %s --attn-tile --lower-tile-to-decode=splits=3 | FileCheck %s
// RUN: attn-opt %s --attn-tile --lower-tile-to-decode="splits=1 rows=2 chip=sm_80" | FileCheck %s --check-prefix=ONE

// lower-tile-to-decode replaces the decode tile kernel by the decode
// kernel: with splits=3 a __split kernel over a grid of (3 splits, K/V
// heads x row groups, sequences) writing `partials`, a __combine kernel,
// and the launch program @gqa running both; with one split the kernel
// keeps the function's name and writes out. rows=2 cuts the group's 4
// rows (4 query heads x 1 row) into 2 CTAs of 2.

// CHECK: gpu.module @attn_kernels [#nvvm.target<{{.*}}chip = "sm_90a"
// CHECK-SAME: attn.programs = [{inputs = ["q", "k_cache", "v_cache", "cache_seqlens", "block_table", "out"], name = "gqa", steps = [{args = ["q", "k_cache", "v_cache", "cache_seqlens", "block_table", "partials"], kernel = "gqa__split"}, {args = ["partials", "out"], kernel = "gqa__combine"}], workspace = [{bytes = {{[0-9]+}} : i64, name = "partials"}]}]
// CHECK: llvm.func @gqa__split(
// CHECK-SAME: attn.launch = {{{.*}}decode = {{{.*}}rows_per_cta = 4 : i64{{.*}}splits = 3 : i64}
// CHECK-SAME: grid = array<i32: 3, 2, 2>
// CHECK-SAME: kernel = "decode"
// CHECK: nvvm.read.ptx.sreg.ctaid.z
// CHECK: scf.for
// CHECK: llvm.load {{.*}}vector<4xi32>
// CHECK: nvvm.shfl.sync bfly
// CHECK: nvvm.barrier
// CHECK: llvm.func @gqa__combine(
// CHECK-SAME: kernel = "decode-combine"
// CHECK-NOT: tile.decode

// ONE: #nvvm.target<{{.*}}chip = "sm_80"
// ONE: llvm.func @gqa(
// ONE-SAME: grid = array<i32: 1, 4, 2>
// ONE-NOT: __combine
// ONE-NOT: attn.programs
func.func @gqa(%q: tensor<2x8x1x128xbf16>, %k: tensor<24x2x64x128xbf16>,
               %v: tensor<24x2x64x128xbf16>, %len: tensor<2xi32>,
               %table: tensor<2x12xi32>) -> tensor<2x8x1x128xbf16> {
  %o = "attn.fused_decode"(%q, %k, %v, %len, %table) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>, scale = 0.088 : f64, causal = true, cache_layout = "paged", page_size = 64 : i64} : (tensor<2x8x1x128xbf16>, tensor<24x2x64x128xbf16>, tensor<24x2x64x128xbf16>, tensor<2xi32>, tensor<2x12xi32>) -> tensor<2x8x1x128xbf16>
  return %o : tensor<2x8x1x128xbf16>
}
