// RUN: attn-translate --to-ptx --hopper-options=rope=split %s -o %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not=C7513 --implicit-check-not=C7514 %}
// RUN: attn-translate --to-ptx --hopper-options="rope=ahead consumers=2" %s -o %t.ahead2.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ahead2.ptx -o %t.ahead2.cubin 2>&1 | FileCheck %s --check-prefix=AHEAD2 --implicit-check-not=C7513 --implicit-check-not=C7514 %}
// RUN: attn-translate --to-ptx %s -o %t.ahead3.ptx
// RUN: FileCheck %s --check-prefix=DEFAULT < %t.ahead3.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ahead3.ptx -o %t.ahead3.cubin 2>&1 | FileCheck %s --check-prefix=AHEAD3 --implicit-check-not=C7513 --implicit-check-not=C7514 %}

// bf16 RoPE + causal attention at d=64, N=4096 (rope=split): three consumer warpgroups
// (512 threads), lazy rescaling (a warp votes on its factors) and the row
// sums by the tensor cores (m64n8k16 wgmma of P times ones), O stored by
// predicated 16-byte stores.
// CHECK: .target sm_90a
// CHECK-DAG: .visible .entry attn__rope_k(
// CHECK-DAG: .visible .entry attn__attn(
// CHECK-DAG: .maxntid 512, 1, 1
// CHECK-DAG: vote.sync.any.pred
// CHECK-DAG: wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16
// CHECK-DAG: rcp.approx.ftz.f32
// CHECK-DAG: @p st.global.v4.b32

// ptxas accepts both kernels with no spills and no serialised wgmma. (With
// the epilogue's stores in a branch, this kernel spilled 16 bytes.)
// PTXAS: Compiling entry function 'attn__rope_k' for 'sm_90a'
// PTXAS-NEXT: Function properties for attn__rope_k
// PTXAS-NEXT: frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS: Compiling entry function 'attn__attn' for 'sm_90a'
// PTXAS-NEXT: Function properties for attn__attn
// PTXAS-NEXT: frame, 0 bytes spill stores, 0 bytes spill loads
// rope=ahead (K rotated by the kernel's producer warps; the default here, at
// head dim 64 and N = 4096): one kernel, no spills and no serialised wgmma,
// with two consumers (the producer keeps 40 registers) and with three (it
// keeps 32).
// AHEAD2-NOT: attn__rope_k
// AHEAD2: Compiling entry function 'attn__attn' for 'sm_90a'
// AHEAD2-NEXT: Function properties for attn__attn
// AHEAD2-NEXT: frame, 0 bytes spill stores, 0 bytes spill loads
// The default is that kernel: no rotation kernel, and the team's tickets.
// DEFAULT-NOT: .entry attn__rope_k
// DEFAULT: .visible .entry attn__attn(
// DEFAULT: atom.global.add.u64
// AHEAD3: Compiling entry function 'attn__attn' for 'sm_90a'
// AHEAD3-NEXT: Function properties for attn__attn
// AHEAD3-NEXT: frame, 0 bytes spill stores, 0 bytes spill loads
func.func @attn(%q: tensor<1x2x4096x64xbf16>, %k: tensor<1x2x4096x64xbf16>, %v: tensor<1x2x4096x64xbf16>) -> tensor<1x2x4096x64xbf16> {
  %qr = "attn.rope"(%q) {theta = 500000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<1x2x4096x64xbf16>) -> tensor<1x2x4096x64xbf16>
  %kr = "attn.rope"(%k) {theta = 500000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<1x2x4096x64xbf16>) -> tensor<1x2x4096x64xbf16>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x2x4096x64xbf16>, tensor<1x2x4096x64xbf16>) -> tensor<1x2x4096x4096xbf16>
  %s1 = "attn.scale"(%s) {scale = 0.125 : f64} : (tensor<1x2x4096x4096xbf16>) -> tensor<1x2x4096x4096xbf16>
  %s2 = "attn.causal"(%s1) : (tensor<1x2x4096x4096xbf16>) -> tensor<1x2x4096x4096xbf16>
  %p = "attn.softmax"(%s2) : (tensor<1x2x4096x4096xbf16>) -> tensor<1x2x4096x4096xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x4096x4096xbf16>, tensor<1x2x4096x64xbf16>) -> tensor<1x2x4096x64xbf16>
  return %o : tensor<1x2x4096x64xbf16>
}
