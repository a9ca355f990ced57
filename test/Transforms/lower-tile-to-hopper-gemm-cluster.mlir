// RUN: attn-opt %s --attn-tile="kernel=hopper" --lower-tile-to-hopper="cluster=2" | FileCheck %s
// RUN: attn-opt %s --attn-tile="kernel=hopper" --lower-tile-to-hopper | FileCheck %s --check-prefix=ONE
// RUN: not attn-opt %s --attn-tile="kernel=hopper" --lower-tile-to-hopper="cluster=3" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not attn-opt %s --attn-tile="kernel=hopper" --lower-tile-to-hopper="cluster=2 group-m=3" 2>&1 | FileCheck %s --check-prefix=GROUP

// cluster=2: CTAs 2c and 2c+1 form a cluster (nvvm.cluster_dim, PTX
// .reqnctapercluster) and run neighbouring tiles of one tile column. Each
// producer loads its own A and half of the common B block (two of the four
// 64-column regions) into both CTAs' slots by TMA multicast (mask 0b11),
// so a slot still expects A and all of B (49,152 bytes). A slot is free
// once the consumers of both CTAs released it: its empty barrier counts
// 16 arrivals (lane r of each of the 8 consumer warps arrives at rank r,
// predicated, without the release fence of cluster scope), not 256. The
// CTAs meet at a cluster barrier after initialising their barriers and
// before they exit. The manifest records the choice. What cannot be paired
// is refused: lower-tile-to-hopper-gemm-cluster-invalid.mlir.
// CHECK-LABEL: llvm.func @mm(
// CHECK-SAME: gemm = {cluster = 2 : i64, epilogue = "staged", group_m = 16 : i64, stages = 3 : i64}
// CHECK-SAME: grid = array<i32: 32, 1, 1>
// CHECK-SAME: nvvm.cluster_dim = array<i32: 2, 1, 1>
// CHECK: nvvm.read.ptx.sreg.cluster.ctarank : i32
// CHECK: %[[SIXTEEN:.*]] = arith.constant 16 : i32
// CHECK-NEXT: nvvm.mbarrier.init %{{.*}}, %[[SIXTEEN]] : !llvm.ptr<3>, i32
// CHECK: nvvm.fence.mbarrier.init
// CHECK: "barrier.cluster.arrive.release; barrier.cluster.wait.acquire;"
// CHECK: arith.constant 49152 : i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} : !llvm.ptr<7>, !llvm.ptr
// CHECK: %[[MASK:.*]] = arith.constant 3 : i16
// CHECK-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} multicast_mask = %[[MASK]] : !llvm.ptr<7>, !llvm.ptr
// CHECK: multicast_mask
// CHECK-NOT: multicast_mask
// CHECK: wgmma.mma_async
// CHECK: setp.lt.u32 p, $1, 2; rem.u32 r, $1, 2; mapa.shared::cluster.u32 a, $0, r; @p mbarrier.arrive.shared::cluster.b64 _, [a];
// CHECK-NOT: mbarrier.arrive.release.cluster
// CHECK: "barrier.cluster.arrive.release; barrier.cluster.wait.acquire;"
// CHECK-NEXT: llvm.return
// The default is one CTA per cluster: none of the above.
// ONE-LABEL: llvm.func @mm(
// ONE-NOT: nvvm.cluster_dim
// ONE-SAME: gemm = {cluster = 1 : i64,
// ONE-NOT: multicast_mask
// ONE-NOT: mapa
// ONE-NOT: barrier.cluster
// ONE: llvm.return
// BAD: error: option 'cluster' expects an integer in [0, 2], found '3'
// GROUP: error: no Hopper GEMM for 'mm': cluster 2 pairs the tiles of two neighbouring tile rows: it needs an even number of tile rows (8), an even group-m (3) and CTA count (32), block-n 128 or 256 (256), and no fused collective
func.func @mm(%a: tensor<1024x1024xbf16>, %b: tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16> {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<1024x1024xbf16>
  %i = linalg.fill ins(%z : bf16) outs(%e : tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<1024x1024xbf16>, tensor<1024x1024xbf16>) outs(%i : tensor<1024x1024xbf16>) -> tensor<1024x1024xbf16>
  return %c : tensor<1024x1024xbf16>
}
