// RUN: attn-opt %s --split-input-file --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper | FileCheck %s
// RUN: attn-opt %s --split-input-file --pass-pipeline='builtin.module(comm-schedule{comm-schedule-split=adaptive},attn-tile{kernel=hopper},lower-tile-to-hopper)' | FileCheck %s --check-prefix=ADAPT
// RUN: attn-opt %s --split-input-file --comm-schedule --attn-tile="kernel=hopper" | FileCheck %s --check-prefix=TILE
// RUN: attn-opt %s --split-input-file --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper | FileCheck %s --check-prefix=NOCALL
// RUN: not attn-opt %s --split-input-file --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper="gpu=A100" 2>&1 | FileCheck %s --check-prefix=SMS

// comm-schedule split an H200's 132 SMs; lowered for an A100 (108), the
// compute and communication CTAs no longer get an SM each.
// SMS: error: no Hopper GEMM for 'ar': a fused kernel's 128 compute and 4 communication CTAs need an SM each, and the GPU of option gpu has 108 (comm-schedule split the SMs of another)

// A matmul and its collective, fused by comm-schedule, become one kernel:
// the model's 4 communication CTAs (block numbers 0-3) beside 128 compute
// CTAs, the NCCL symmetric workspace (three 128 MiB regions for all-reduce:
// each rank's partials, then the owners' sums) and its peer table (one i64
// per rank, from attnrt_comm_buffer_peers) as parameters, then the peer
// table of C when C is a symmetric buffer (attnrt_comm_launch_out; 0
// otherwise), peers' workspaces loaded from the table, never reached through
// a call (an extern call serializes wgmma: C7509), written, never read, and
// flags counted per launch (epoch). With out_peers the owner's sums go to
// the other rank's C (its entry of that table), else to its workspace.
// TILE-LABEL: func.func @ar(
// TILE-SAME: tile.matmul = {accumulate = false, block_k = 64 : i64, block_m = 128 : i64, block_n = 256 : i64, comm = {comm_sms = 4 : i64, compute_sms = 128 : i64, pattern = "matmul_all_reduce", split = "static", world_size = 2 : i64}, k = 8192 : i64, m = 8192 : i64, n = 8192 : i64}
// TILE-NEXT: return
// CHECK-NOT: attn_nccl
// CHECK-LABEL: llvm.func @ar(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: !llvm.ptr {llvm.align
// CHECK-SAME: comm = {comm_ctas = 4 : i64, compute_ctas = 128 : i64, pattern = "matmul_all_reduce", split = "static", workspace_bytes = 402681856 : i64, world_size = 2 : i64}
// CHECK-SAME: grid = array<i32: 132, 1, 1>, kernel = "hopper-gemm-comm"
// CHECK-SAME: {align = 256 : i64, kind = "ptr", name = "workspace"}, {dtype = "i64", kind = "ptr", name = "peers", shape = array<i64: 2>}, {dtype = "i64", kind = "ptr", name = "out_peers", shape = array<i64: 2>}, {kind = "i32", name = "rank"}, {kind = "i32", name = "epoch"}
// CHECK: %[[PEERS:.*]] = llvm.ptrtoint %arg4 : !llvm.ptr to i64
// CHECK: %[[OUTP:.*]] = llvm.ptrtoint %arg5 : !llvm.ptr to i64
// CHECK: arith.cmpi ult, %{{.*}}, %c4_i32
// CHECK: "ld.global.nc.u64 $0, [$1];"
// CHECK: %[[DIRECT:.*]] = arith.cmpi ne, %[[OUTP]], %{{.*}} : i64
// CHECK: %[[TABLE:.*]] = arith.select %[[DIRECT]], %[[OUTP]], %[[PEERS]] : i64
// CHECK: %[[OTHER:.*]] = arith.remui %{{.*}}, %c2_i32 : i32
// CHECK: %[[OFF:.*]] = arith.muli %[[OTHER]], %c8_i32 : i32
// CHECK: %[[OFF64:.*]] = arith.extui %[[OFF]] : i32 to i64
// CHECK: %[[ADDR:.*]] = arith.addi %[[TABLE]], %[[OFF64]] : i64
// CHECK: %[[OTHERC:.*]] = llvm.inline_asm has_side_effects "ld.global.nc.u64 $0, [$1];", "=l,l" %[[ADDR]]
// CHECK: arith.select %[[DIRECT]], %[[OTHERC]], %{{.*}} : i64
// No kernel of any pattern calls a function (the NCCL device shim's or any).
// NOCALL-NOT: llvm.call
// NOCALL-NOT: attn_nccl
// CHECK: ld.acquire.sys.global.u32
// CHECK: ld.global.cg.v4.u32
// CHECK: st.global.v4.u32
// CHECK: nvvm.bar.warp.sync %c-1_i32
// CHECK: red.release.sys.global.add.u32
// The signalers count the consumers' landed partials at the owners.
// CHECK: red.release.sys.global.add.u32
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// CHECK: atom.acq_rel.gpu.global.add.u32
// ADAPT-LABEL: llvm.func @ar(
// ADAPT-SAME: split = "adaptive"
// ADAPT: atom.relaxed.gpu.global.add.u32
// ADAPT: scf.while
// ADAPT: scf.condition
// ADAPT: nvvm.shfl.sync idx %c-1_i32{{.*}} : i32 -> i32
func.func @ar(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %i = linalg.fill ins(%z : bf16) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%i : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}

// -----

// All-gather: a is this rank's 4096 rows; a third tensor map reads the
// gathered rows from the workspace once their flag is set, and the
// communication CTAs write this rank's rows into the peers' workspaces.
// TILE-LABEL: func.func @ag(
// TILE-SAME: %{{.*}}: memref<4096x8192xbf16>, %{{.*}}: memref<8192x8192xbf16>, %{{.*}}: memref<8192x8192xbf16>
// CHECK-LABEL: llvm.func @ag(
// CHECK-SAME: pattern = "all_gather_matmul"
// CHECK-SAME: {align = 16 : i64, dtype = "bf16", kind = "ptr", name = "a", shape = array<i64: 4096, 8192>}
// CHECK-SAME: {box = array<i64: 64, 128, 1, 1>, dims = array<i64: 8192, 8192, 1, 1>, dtype = "bf16", kind = "tensormap", name = "g_map", swizzle = 128 : i64, tensor = "workspace"}
// CHECK: red.release.sys.global.add.u32
// CHECK: ld.acquire.sys.global.u32
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
func.func @ag(%a: tensor<4096x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 2 : i64} : (tensor<4096x8192xbf16>) -> tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %c : tensor<8192x8192xbf16>
}

// -----

// Reduce-scatter on 4 GPUs: c is this rank's quarter of the rows.
// TILE-LABEL: func.func @rs4(
// TILE-SAME: %{{.*}}: memref<1024x8192xbf16>
// CHECK-LABEL: llvm.func @rs4(
// CHECK-SAME: pattern = "matmul_reduce_scatter"
// CHECK-SAME: world_size = 4 : i64
// CHECK-SAME: {align = 16 : i64, dtype = "bf16", kind = "ptr", name = "c", shape = array<i64: 1024, 8192>}
// CHECK-SAME: {dtype = "i64", kind = "ptr", name = "peers", shape = array<i64: 4>}, {dtype = "i64", kind = "ptr", name = "out_peers", shape = array<i64: 4>}
func.func @rs4(%a: tensor<4096x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<1024x8192xbf16> {
  %e = tensor.empty() : tensor<4096x8192xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<4096x8192xbf16>, tensor<8192x8192xbf16>) outs(%e : tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 4 : i64} : (tensor<4096x8192xbf16>) -> tensor<1024x8192xbf16>
  return %r : tensor<1024x8192xbf16>
}

// -----

// An all-reduce whose rows are not a multiple of 128 x ranks: the kernel
// runs 512 rows (16 tiles), A's tensor map has the 384 real ones (TMA reads
// zeros below them), the workspace holds 512-row partials and sums, and the
// slabs' stores into C (and into the other ranks' C or sums) stop at row 384.
// CHECK-LABEL: llvm.func @ar_rows(
// CHECK-SAME: comm = {comm_ctas = 8 : i64, compute_ctas = 16 : i64, pattern = "matmul_all_reduce", split = "static", workspace_bytes = 3149824 : i64, world_size = 2 : i64}
// CHECK-SAME: name = "a", shape = array<i64: 384, 1024>
// CHECK-SAME: name = "c", shape = array<i64: 384, 1024>
// CHECK-SAME: dims = array<i64: 1024, 384, 1, 1>, dtype = "bf16", kind = "tensormap", name = "a_map"
// CHECK: arith.cmpi slt, %{{.*}}, %c384_i32
func.func @ar_rows(%a: tensor<384x1024xbf16>, %b: tensor<1024x1024xbf16>) -> tensor<384x1024xbf16> {
  %e = tensor.empty() : tensor<384x1024xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<384x1024xbf16>, tensor<1024x1024xbf16>) outs(%e : tensor<384x1024xbf16>) -> tensor<384x1024xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<384x1024xbf16>) -> tensor<384x1024xbf16>
  return %r : tensor<384x1024xbf16>
}
