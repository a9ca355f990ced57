// RUN: attn-translate --to-ptx %s -o %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not=C7513 --implicit-check-not=C7514 %}
// RUN: attn-translate --to-ptx --kernel=plain %s | FileCheck %s --check-prefix=PLAIN

// bf16 RoPE + causal attention at d=128 takes the Hopper kernel by default
// on sm_90a: wgmma from shared memory and from registers, TMA loads on
// mbarriers, setmaxnreg; K's RoPE is its own small kernel.
// CHECK: .target sm_90a
// CHECK-DAG: .visible .entry attn__rope_k(
// CHECK-DAG: .visible .entry attn__attn(
// CHECK-DAG: .param .align 64 .b8 attn__attn_param_4[128]
// CHECK-DAG: setmaxnreg.inc.sync.aligned.u32
// CHECK-DAG: mbarrier.init.shared.b64
// CHECK-DAG: mbarrier.arrive.expect_tx.shared.b64
// CHECK-DAG: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// CHECK-DAG: mbarrier.try_wait.parity.shared::cta.b64
// CHECK-DAG: mbarrier.arrive.shared.b64
// CHECK-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK-DAG: wgmma.wait_group.sync.aligned {{.*}}1

// ptxas accepts both kernels with no spills.
// PTXAS: Compiling entry function 'attn__rope_k' for 'sm_90a'
// PTXAS-NEXT: Function properties for attn__rope_k
// PTXAS-NEXT: frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS: Compiling entry function 'attn__attn' for 'sm_90a'
// PTXAS-NEXT: Function properties for attn__attn
// PTXAS-NEXT: frame, 0 bytes spill stores, 0 bytes spill loads

// --kernel=plain keeps the plain path.
// PLAIN-NOT: wgmma
// PLAIN: .visible .entry attn(
func.func @attn(%q: tensor<2x4x1024x128xbf16>, %k: tensor<2x4x1024x128xbf16>, %v: tensor<2x4x1024x128xbf16>) -> tensor<2x4x1024x128xbf16> {
  %qr = "attn.rope"(%q) {theta = 500000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"} : (tensor<2x4x1024x128xbf16>) -> tensor<2x4x1024x128xbf16>
  %kr = "attn.rope"(%k) {theta = 500000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"} : (tensor<2x4x1024x128xbf16>) -> tensor<2x4x1024x128xbf16>
  %s = "attn.qk"(%qr, %kr) : (tensor<2x4x1024x128xbf16>, tensor<2x4x1024x128xbf16>) -> tensor<2x4x1024x1024xbf16>
  %s1 = "attn.scale"(%s) {scale = 0.08838834764831845 : f64} : (tensor<2x4x1024x1024xbf16>) -> tensor<2x4x1024x1024xbf16>
  %s2 = "attn.causal"(%s1) : (tensor<2x4x1024x1024xbf16>) -> tensor<2x4x1024x1024xbf16>
  %p = "attn.softmax"(%s2) : (tensor<2x4x1024x1024xbf16>) -> tensor<2x4x1024x1024xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<2x4x1024x1024xbf16>, tensor<2x4x1024x128xbf16>) -> tensor<2x4x1024x128xbf16>
  return %o : tensor<2x4x1024x128xbf16>
}
