// RUN: attn-translate --to-manifest %s | FileCheck %s
// RUN: attn-translate --to-ptx %s -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: FileCheck %s --check-prefix=HOPPER < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: not attn-translate --to-ptx --chip=sm_80 %s 2>&1 | FileCheck %s --check-prefix=SM80

// A matmul and its all_reduce compile, from the user's program, to one
// fused kernel: the drivers run comm-schedule with the adaptive split, then
// attn-tile and lower-tile-to-hopper. The kernel loads its peers' addresses
// from the table attnrt makes (attnrt_comm_buffer_peers) and calls nothing,
// so ptxas compiles it whole (no -c, no link with the NCCL device shim) and
// neither serializes its wgmma nor ignores its setmaxnreg. Regression test
// for issue 6: while the kernel called attn_nccl_peer_ptr, ptxas reported
// C7509 (wgmma serialized due to extern calls) and C7504 (setmaxnreg
// ignored) for every fused kernel.
// CHECK: "comm": {
// CHECK-NEXT: "comm_ctas": 4,
// CHECK-NEXT: "compute_ctas": 128,
// CHECK-NEXT: "pattern": "matmul_all_reduce",
// CHECK-NEXT: "split": "adaptive",
// CHECK-NEXT: "workspace_bytes": 402681856,
// CHECK-NEXT: "world_size": 2
// CHECK: "grid": [132, 1, 1],
// CHECK-NEXT: "kernel": "hopper-gemm-comm",
// PTX-NOT: .extern .func
// PTX: .visible .entry ar(
// PTX-NOT: call
// PTX: ld.global.nc.u64
// PTX-NOT: call
// PTX: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// PTX-NOT: call
// PTX: red.release.sys.global.add.u32
// The GEMM's Hopper instructions, from NVVM ops (mbarriers, TMA, setmaxnreg,
// wgmma fence/commit/wait) and inline PTX (try_wait loop, wgmma).
// HOPPER-DAG: mbarrier.init.shared.b64
// HOPPER-DAG: fence.mbarrier_init.release.cluster
// HOPPER-DAG: setmaxnreg.dec.sync.aligned.u32 {{.*}}40
// HOPPER-DAG: setmaxnreg.inc.sync.aligned.u32 {{.*}}232
// HOPPER-DAG: mbarrier.arrive.expect_tx.shared.b64
// HOPPER-DAG: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// HOPPER-DAG: mbarrier.try_wait.parity.shared::cta.b64
// HOPPER-DAG: wgmma.fence.sync.aligned
// HOPPER-DAG: wgmma.commit_group.sync.aligned
// HOPPER-DAG: wgmma.wait_group.sync.aligned {{.*}}1
// HOPPER-DAG: mbarrier.arrive.shared.b64
// PTX-NOT: call
// PTXAS-NOT: C7509
// PTXAS-NOT: C7504
// PTXAS-NOT: Potential Performance Loss
// PTXAS: 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: Potential Performance Loss
// The plain path has no communication: a clear error, not a kernel.
// SM80: error: lower-tile-to-gpu cannot lower a matmul fused with a collective
func.func @ar(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %i = linalg.fill ins(%z : bf16) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%i : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}
