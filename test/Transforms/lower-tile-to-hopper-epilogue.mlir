// RUN: attn-opt %S/../Inputs/hopper/h64_causal.mlir --attn-fuse --attn-tile="kernel=hopper" --lower-tile-to-hopper="epilogue=staged" | FileCheck %s
// RUN: attn-opt %S/../Inputs/hopper/h64_causal.mlir --attn-fuse --attn-tile="kernel=hopper" --lower-tile-to-hopper | FileCheck %s --check-prefix=AUTO
// RUN: not attn-opt %S/../Inputs/hopper/h128_rope_causal.mlir --attn-fuse --attn-tile="kernel=hopper" --lower-tile-to-hopper="epilogue=staged" 2>&1 | FileCheck %s --check-prefix=D128

// The attention kernel's epilogue (lower-tile-to-hopper's epilogue option;
// the GEMM's is lower-tile-to-hopper-gemm-epilogue.mlir's). Staged: each
// consumer warpgroup waits until the bulk-copy engine has read its last
// tile's rows of O, writes its 16 normalised words per thread into shared
// memory (a pitch of 144 bytes per 128-byte row, so the eight rows a warp
// writes start in different banks), orders them for the async proxy, and
// thread r < 64 copies row r if it is a query row; the kernel waits for
// the last copies before it ends. At N = 2048 the kernel has three
// consumers: their rows take 27,648 bytes beside the tiles and the tile of
// ones (185,472 bytes against 157,816).
// CHECK-LABEL: llvm.func @h64_causal(
// CHECK-SAME: dynamic_shared_bytes = 185472 : i64
// CHECK: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK-COUNT-16: st.shared.b32 [$0], $1;
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK: arith.cmpi ult, %{{.*}}, %c2048_i32{{.*}} : i32
// CHECK: nvvm.cp.async.bulk.global.shared.cta %{{.*}}, %{{.*}}, %c128_i32
// CHECK: nvvm.cp.async.bulk.commit.group
// CHECK: nvvm.cp.async.bulk.wait_group 0{{$}}
// CHECK: llvm.return

// auto keeps the stores from registers for attention: on an H200 the
// staged O was not consistently faster (bench/RESULTS.md). Each quad of
// lanes (one row) transposes its words of four 8-column chunks by two
// rounds of shuffles (xor 2, then xor 1; two words each), so that every
// lane stores one chunk's 16 bytes: out must be 16-byte aligned. The stores
// are predicated on the row's test, not branched around (1 / l by the MUFU:
// no slow-path call either; both cost the three-consumer kernel spills).
// AUTO-LABEL: llvm.func @h64_causal(
// AUTO-SAME: dynamic_shared_bytes = 157816 : i64
// AUTO-SAME: {align = 16 : i64, dtype = "bf16", kind = "ptr", name = "out"
// AUTO-NOT: cp.async.bulk.global
// AUTO-NOT: arith.divf
// AUTO-COUNT-2: nvvm.rcp.approx.ftz.f %
// AUTO: cvt.rn.bf16x2.f32
// AUTO-COUNT-2: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c2_i32{{.*}}
// AUTO-COUNT-2: nvvm.shfl.sync bfly %{{.*}}, %{{.*}}, %c1_i32{{.*}}
// AUTO: arith.cmpi ult, %{{.*}}, %c2048_i32
// AUTO: "{ .reg .pred p; setp.ne.b32 p, $5, 0; @p st.global.v4.b32 [$0], {$1, $2, $3, $4}; }"
// AUTO-NOT: llvm.store %{{.*}}, %{{.*}} : i32, !llvm.ptr{{$}}
// AUTO: llvm.return

// At head dim 128 the rows do not fit beside three stages of K and V.
// D128: error: no Hopper kernel for 'h128_rope_causal': the staged epilogue's rows do not fit the 227 KiB of shared memory beside the tiles (found 265344 bytes with 3 stages)
