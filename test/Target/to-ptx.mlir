// RUN: attn-translate --to-ptx %s | FileCheck %s
// RUN: attn-translate --to-ptx %s -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: attn-translate --to-ptx --chip=sm_80 %s | FileCheck %s --check-prefix=SM80

// attn IR goes through attn-fuse, attn-tile and lower-tile-to-gpu on its way
// to PTX for sm_90a; the kernel is an entry with one pointer per tensor.
// CHECK: .version 8.0
// CHECK: .target sm_90a
// CHECK: .visible .entry rope_causal(
// CHECK-COUNT-4: .param .u64 .ptr
// CHECK: .maxntid 128, 1, 1
// CHECK: bar.sync
// CHECK: fma.rn.f32
// CHECK: ex2.approx

// ptxas accepts it and nothing spills.
// PTXAS: Compiling entry function 'rope_causal' for 'sm_90a'
// PTXAS: 0 bytes spill stores, 0 bytes spill loads

// SM80: .target sm_80
func.func @rope_causal(%q: tensor<1x4x100x64xf32>, %k: tensor<1x4x100x64xf32>, %v: tensor<1x4x100x64xf32>) -> tensor<1x4x100x64xf32> {
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<1x4x100x64xf32>) -> tensor<1x4x100x64xf32>
  %kr = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<1x4x100x64xf32>) -> tensor<1x4x100x64xf32>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x4x100x64xf32>, tensor<1x4x100x64xf32>) -> tensor<1x4x100x100xf32>
  %s1 = "attn.scale"(%s) {scale = 0.125 : f64} : (tensor<1x4x100x100xf32>) -> tensor<1x4x100x100xf32>
  %s2 = "attn.causal"(%s1) : (tensor<1x4x100x100xf32>) -> tensor<1x4x100x100xf32>
  %p = "attn.softmax"(%s2) : (tensor<1x4x100x100xf32>) -> tensor<1x4x100x100xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x4x100x100xf32>, tensor<1x4x100x64xf32>) -> tensor<1x4x100x64xf32>
  return %o : tensor<1x4x100x64xf32>
}
