// RUN: attn-translate --to-ptx --chip=sm_80 %s -o %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_80 -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: %if ptxas %{ %ptxas -arch=sm_86 -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: attn-translate --to-ptx --chip=sm_80 --kernel=plain %s | FileCheck %s --check-prefix=PLAIN
// RUN: attn-translate --to-manifest --chip=sm_86 %s | FileCheck %s --check-prefix=MANIFEST
// RUN: attn-translate --to-ptx --chip=sm_90a --kernel=mma %s | FileCheck %s --check-prefix=FORCED
// RUN: attn-translate --to-ptx --chip=sm_75 %s | FileCheck %s --check-prefix=PLAIN

// bf16 RoPE + causal attention at d = 128 takes the mma.sync kernel by
// default on chips from sm_80 on other than sm_90a: cp.async loads,
// ldmatrix (plain and transposed), mma.sync m16n8k16, RoPE in the kernel.
// CHECK: .target sm_80
// CHECK: .visible .entry attn(
// CHECK-DAG: cp.async.cg.shared.global
// CHECK-DAG: cp.async.wait_group 1;
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-DAG: ex2.approx.ftz.f32

// ptxas accepts it with no spills on sm_80 and sm_86 (the stack frame is
// libdevice's sin/cos slow path).
// PTXAS: Compiling entry function 'attn' for 'sm_8{{[06]}}'
// PTXAS: 0 bytes spill stores, 0 bytes spill loads

// --kernel=plain keeps the plain path, as do chips before sm_80.
// PLAIN-NOT: mma.sync
// PLAIN: .visible .entry attn(

// The manifest entry launches it like any kernel: 256 threads, grid
// (N/128, H, B), 96 KiB of dynamic shared memory on sm_86 (2 stages).
// MANIFEST: "target": "sm_86"
// MANIFEST: "name": "attn"
// MANIFEST-DAG: "grid": [8, 4, 2]
// MANIFEST-DAG: "block": [256, 1, 1]
// MANIFEST-DAG: "dynamic_shared_bytes": 98304
// MANIFEST-DAG: "kernel": "mma-sync"

// --kernel=mma demands it, on sm_90a too.
// FORCED: .target sm_90a
// FORCED-NOT: wgmma
// FORCED: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
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
