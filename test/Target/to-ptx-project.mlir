// RUN: attn-translate --to-ptx --rope-strategy=producer %S/../Inputs/project/layer_gqa.mlir -o %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not="bytes spill" --implicit-check-not="Potential Performance Loss" %}
// RUN: attn-translate --to-ptx --rope-strategy=producer %s -o %t.k256.ptx
// RUN: FileCheck %s < %t.k256.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.k256.ptx -o %t.k256.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not="bytes spill" --implicit-check-not="Potential Performance Loss" %}

// A layer's projections with RoPE in their GEMM epilogue (the producer
// placement), then the attention: three kernels, and ptxas spills in none.
// Regression test: the rotation's per-column f64 frequencies are constants
// of the thread, LLVM hoisted them out of the tile loop, and they stayed
// live through the wgmma K loop beside the 128 accumulators, so both
// projections of test/Inputs/project/layer_gqa.mlir (K = 512) spilled 40
// bytes. With K = 256 (the program below) the K loop is four blocks, one
// per ring slot; LLVM unrolled it and hoisted every slot's wgmma
// descriptors as well, and the projections spilled 72 and 80 bytes.
//
// A 256-column tile holds two heads, which share their angles: a thread
// computes one cos/sin for each of its 16 rotated pair columns (of 64 per
// head) in each of its 2 rows, 32 in all, and applies each to both heads.
// CHECK: .visible .entry layer__proj_q(
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK-COUNT-32: cos.approx.ftz.f32
// CHECK-NOT: cos.approx.ftz.f32
// CHECK: .visible .entry layer__proj_k(
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK-COUNT-32: cos.approx.ftz.f32
// CHECK-NOT: cos.approx.ftz.f32
// CHECK: .visible .entry layer__attn(
// CHECK-NOT: cos.approx

// ptxas prints one spill line per kernel, and no performance warning (such
// as C7509, wgmma serialized).
// PTXAS-COUNT-3: bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
func.func @layer(%x: tensor<2x256x256xbf16>, %wq: tensor<256x512xbf16>, %wk: tensor<256x256xbf16>,
                 %v: tensor<2x2x256x128xbf16>) -> tensor<2x4x256x128xbf16> {
  %q = "attn.project"(%x, %wq) : (tensor<2x256x256xbf16>, tensor<256x512xbf16>) -> tensor<2x4x256x128xbf16>
  %k = "attn.project"(%x, %wk) : (tensor<2x256x256xbf16>, tensor<256x256xbf16>) -> tensor<2x2x256x128xbf16>
  %qr = "attn.rope"(%q) {theta = 500000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"} : (tensor<2x4x256x128xbf16>) -> tensor<2x4x256x128xbf16>
  %kr = "attn.rope"(%k) {theta = 500000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"} : (tensor<2x2x256x128xbf16>) -> tensor<2x2x256x128xbf16>
  %s = "attn.qk"(%qr, %kr) : (tensor<2x4x256x128xbf16>, tensor<2x2x256x128xbf16>) -> tensor<2x4x256x256xbf16>
  %ss = "attn.scale"(%s) {scale = 0.08838834764831845 : f64} : (tensor<2x4x256x256xbf16>) -> tensor<2x4x256x256xbf16>
  %sc = "attn.causal"(%ss) : (tensor<2x4x256x256xbf16>) -> tensor<2x4x256x256xbf16>
  %p = "attn.softmax"(%sc) : (tensor<2x4x256x256xbf16>) -> tensor<2x4x256x256xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<2x4x256x256xbf16>, tensor<2x2x256x128xbf16>) -> tensor<2x4x256x128xbf16>
  return %o : tensor<2x4x256x128xbf16>
}
