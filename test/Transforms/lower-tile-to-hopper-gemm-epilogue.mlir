// RUN: attn-opt %s --split-input-file --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper | FileCheck %s
// RUN: attn-opt %s --split-input-file --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper="epilogue=registers" | FileCheck %s --check-prefix=REGS
// RUN: not attn-opt %s --split-input-file --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper="epilogue=staged" 2>&1 >/dev/null | FileCheck %s --check-prefix=STAGED-ERR
// RUN: not attn-opt %s --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper="epilogue=rows" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: attn-opt %s --split-input-file --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper="stages=4" | FileCheck %s --check-prefix=DEEP
// RUN: not attn-opt %s --split-input-file --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper="stages=4 epilogue=staged" 2>&1 >/dev/null | FileCheck %s --check-prefix=DEEP-ERR

// The GEMM's epilogue (lower-tile-to-hopper's epilogue option). By
// default (auto) a tile the GEMM writes as it made it is staged: each
// consumer warpgroup waits until the bulk-copy engine has read its last
// tile's rows, writes its words into shared memory (one pitch of 528 bytes
// per row, so the eight rows a warp writes start in different banks),
// orders them for the async proxy, and 64 of its threads hand one row each
// to cp.async.bulk; the end of the tile loop waits for the copies to land.
// The staging rows take 67,584 bytes, so the ring is 3 deep instead of 4:
// 216,192 bytes of shared memory against 197,760. epilogue=registers
// keeps the 4-byte stores straight from the accumulators.
// CHECK-LABEL: llvm.func @plain(
// CHECK-SAME: dynamic_shared_bytes = 216192 : i64
// CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK-COUNT-64: st.shared.b32 [$0], $1;
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK: nvvm.cp.async.bulk.global.shared.cta %{{.*}}, %{{.*}}, %c512_i32{{.*}} : <1>, <3>
// CHECK: nvvm.cp.async.bulk.commit.group
// CHECK: nvvm.cp.async.bulk.wait_group 0{{$}}
// CHECK-NOT: : i32, !llvm.ptr{{$}}
// CHECK: llvm.return
// A ring 4 deep leaves no room for the rows: auto keeps the registers, and
// an explicit staged is refused.
// DEEP-LABEL: llvm.func @plain(
// DEEP-SAME: dynamic_shared_bytes = 197760 : i64, gemm = {epilogue = "registers", group_m = 16 : i64, stages = 4 : i64}
// DEEP-ERR: error: no Hopper GEMM for 'plain': 4 stages of 128x256 tiles and the staged epilogue's rows do not fit 227 KiB of shared memory (need at least 2)
// REGS-LABEL: llvm.func @plain(
// REGS-SAME: dynamic_shared_bytes = 197760 : i64
// REGS-NOT: cp.async.bulk.global
// REGS: llvm.store %{{.*}}, %{{.*}} : i32, !llvm.ptr{{$}}
// REGS: llvm.return
func.func @plain(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %i = linalg.fill ins(%z : bf16) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%i : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %c : tensor<8192x8192xbf16>
}

// -----

// Tails: rows past M copy nothing, and the last tile column's rows copy
// (N - column) * 2 bytes, not 512.
// CHECK-LABEL: llvm.func @tails(
// CHECK-SAME: grid = array<i32: 126, 1, 1>
// CHECK: st.shared.b32
// CHECK: arith.cmpi ult, %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: scf.if
// CHECK: arith.minui
// CHECK: nvvm.cp.async.bulk.global.shared.cta
func.func @tails(%a: tensor<8000x8000xbf16>, %b: tensor<8000x8000xbf16>) -> tensor<8000x8000xbf16> {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<8000x8000xbf16>
  %i = linalg.fill ins(%z : bf16) outs(%e : tensor<8000x8000xbf16>) -> tensor<8000x8000xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<8000x8000xbf16>, tensor<8000x8000xbf16>) outs(%i : tensor<8000x8000xbf16>) -> tensor<8000x8000xbf16>
  return %c : tensor<8000x8000xbf16>
}

// -----

// A fused reduce pattern stages its partial tile too, into the owner's
// slot; the tile is posted only at the warpgroup's next flush, once its
// copies have landed (wait_group 0, then a proxy fence and the warpgroup's
// barrier before the post), so no warp waits for NVLink while they cross.
// A signaler thread of the producer warpgroup (its mailboxes: four more
// mbarriers of one arrival) takes the post and counts the tile at the
// owner with a system-scope release, which no consumer waits for (the
// mailboxes take 128 more bytes of shared memory than the plain GEMM). Its
// shards interleave, so it walks 16 / 2 tile rows of each together.
// CHECK-LABEL: llvm.func @rs(
// CHECK-SAME: dynamic_shared_bytes = 216320 : i64, gemm = {epilogue = "staged", group_m = 8 : i64, order = "interleaved", stages = 3 : i64}
// CHECK-COUNT-3: nvvm.mbarrier.init %{{.*}}, %c256_i32{{.*}} : !llvm.ptr<3>, i32
// CHECK-COUNT-4: nvvm.mbarrier.init %{{.*}}, %c1_i32{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.setmaxregister  decrease 40
// CHECK: mbarrier.try_wait.parity
// CHECK: red.release.sys.global.add.u32
// CHECK: nvvm.mbarrier.arrive
// CHECK: nvvm.setmaxregister  increase
// CHECK: nvvm.cp.async.bulk.wait_group 0{{$}}
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK-NOT: red.release.sys
// CHECK: nvvm.mbarrier.arrive
// CHECK-NOT: red.release.sys
// CHECK: nvvm.cp.async.bulk.global.shared.cta
func.func @rs(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<4096x8192xbf16> {
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 2 : i64} : (tensor<8192x8192xbf16>) -> tensor<4096x8192xbf16>
  return %r : tensor<4096x8192xbf16>
}

// -----

// An accumulating GEMM reads C in its epilogue: auto keeps the registers
// (4 stages), and an explicit staged is refused at the user's op.
// CHECK-LABEL: llvm.func @acc(
// CHECK-SAME: dynamic_shared_bytes = 197760 : i64
// CHECK-NOT: cp.async.bulk.global
// CHECK: llvm.return
// STAGED-ERR: error: no Hopper GEMM for 'acc': the staged epilogue writes row-major C as the GEMM made it: not with accumulate, RoPE, the heads layout or a split K
func.func @acc(%a: tensor<4096x4096xf16>, %b: tensor<4096x4096xf16>, %c: tensor<4096x4096xf16>) -> tensor<4096x4096xf16> {
  %r = linalg.matmul ins(%a, %b : tensor<4096x4096xf16>, tensor<4096x4096xf16>) outs(%c : tensor<4096x4096xf16>) -> tensor<4096x4096xf16>
  return %r : tensor<4096x4096xf16>
}

// BAD: option 'epilogue' expects auto, registers or staged, found 'rows'
