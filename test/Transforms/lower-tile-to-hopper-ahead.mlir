// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rope=ahead" | FileCheck %s
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rope=ahead consumers=2" | FileCheck %s --check-prefix=TWO
// RUN: not attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rope=ahead stages=4 epilogue=staged consumers=3" 2>&1 | FileCheck %s --check-prefix=BIG
// RUN: attn-opt %s --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="epilogue=staged" | FileCheck %s --check-prefix=STAGED

// rope=ahead: K rotated once per row by the attention kernel itself. A
// launch program runs the one kernel over two workspaces: k_rot (K rotated)
// and rope_sync (a u64 ticket counter, a u32 flag for each of the 2 x 2 x 16
// key blocks, a u64 count per (batch, K head): 8 + 256 + 32 = 296 bytes).
// The kernel reads raw k through a fourth tensor map and loads K from k_rot.
// CHECK: attn.programs = [{inputs = ["q", "k", "v", "out"], name = "attn", steps = [{args = ["q", "k", "v", "out", "k_rot", "rope_sync"], kernel = "attn__attn"}], workspace = [{bytes = 1048576 : i64, name = "k_rot"}, {bytes = 296 : i64, name = "rope_sync"}]}]
// CHECK: llvm.func @attn__attn(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr {{{.*}}nvvm.grid_constant}, %{{.*}}: !llvm.ptr {{{.*}}nvvm.grid_constant}, %{{.*}}: !llvm.ptr {{{.*}}nvvm.grid_constant}, %{{.*}}: !llvm.ptr {{{.*}}nvvm.grid_constant})
// CHECK-SAME: block = array<i32: 512, 1, 1>
// CHECK-SAME: {align = 16 : i64, dtype = "bf16", kind = "ptr", name = "k_rot", shape = array<i64: 2, 2, 2048, 64>}
// CHECK-SAME: {align = 8 : i64, dtype = "u32", kind = "ptr", name = "rope_sync", shape = array<i64: 74>}
// CHECK-SAME: name = "k_map", swizzle = 128 : i64, tensor = "k_rot"}
// CHECK-SAME: name = "k_raw_map", swizzle = 128 : i64, tensor = "k"}
// The team's constants are computed and stashed before the producer gives
// up its registers (three consumers leave it 32); its leader takes the
// CTA's first ticket, which tells every producer thread this launch's.
// CHECK: llvm.call @__nv_sinf
// CHECK: st.shared.b64 [$0], $1;
// CHECK: nvvm.setmaxregister decrease 32
// CHECK: llvm.atomicrmw add %{{.*}}, %{{.*}} syncscope("device") monotonic
// CHECK: nvvm.barrier id = %c8_i32{{.*}} number_of_threads = %c128_i32
// The TMA thread: a head's count once per tile, and where it is short of
// all blocks a wait for each block's flag (which traps after 10 s).
// CHECK: llvm.load %{{.*}} atomic syncscope("device") acquire {alignment = 8 : i64} : !llvm.ptr<1> -> i64
// CHECK: ld.acquire.gpu.global.u32 v, [$0]; setp.eq.u32 p, v, $1; @p bra.uni DONE; nanosleep.u32 64;{{.*}}@p trap;
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.global>}
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// The team: tickets until the queue is empty; each block loaded by TMA,
// rotated in shared memory (the first row's cos/sin from the angle's turns,
// then steps), stored by TMA, and flagged and counted once the store has
// landed.
// CHECK: scf.while
// CHECK: llvm.atomicrmw add %{{.*}}, %{{.*}} syncscope("device") monotonic
// CHECK: nvvm.cp.async.bulk.wait_group 0{{$}}
// CHECK: llvm.store %{{.*}}, %{{.*}} atomic syncscope("device") release {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK: red.release.gpu.global.add.u64
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: mbarrier.try_wait.parity.shared::cta.b64
// CHECK: cvt.rni.f64.f64
// CHECK: cos.approx.f32
// CHECK: ld.shared.b32
// CHECK: st.shared.b32
// CHECK: nvvm.barrier id = %c9_i32{{.*}} number_of_threads = %c96_i32
// CHECK: nvvm.cp.async.bulk.tensor.global.shared.cta %{{.*}}, %{{.*}}, box[
// CHECK: nvvm.cp.async.bulk.commit.group
// CHECK: scf.yield
// The last block's flag after the loop.
// CHECK: nvvm.cp.async.bulk.wait_group 0{{$}}
// CHECK: llvm.store %{{.*}}, %{{.*}} atomic syncscope("device") release {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK: nvvm.setmaxregister increase 160
// Each consumer thread's first row of Q per tile: cos/sin from its
// frequencies in turns (f32), the product's rounding error by an FMA, the
// fraction of a turn by one rounding, then the MUFU (no range reduction).
// CHECK: math.fma
// CHECK-NEXT: cvt.rni.f32.f32
// CHECK: sin.approx.f32
// CHECK-NOT: @attn__rope_k

// rope=auto picks ahead here (head dim 64, N = 2048:
// lower-tile-to-hopper-ahead-auto.mlir), but not with O staged, whose rows
// leave the team's buffers no room: split, with its rotation kernel.
// STAGED: steps = [{args = ["k", "k_rot"], kernel = "attn__rope_k"}

// Two consumers: the producer keeps 40 registers, the consumers 232.
// TWO: block = array<i32: 384, 1, 1>
// TWO: nvvm.setmaxregister decrease 40
// TWO: nvvm.setmaxregister increase 232

// The two key-block buffers (32 KiB) beside four stages, three consumers'
// Q and their staged rows of O do not fit: a clear error.
// BIG: error: no Hopper kernel for 'attn': rope=ahead's two key-block buffers do not fit the 227 KiB of shared memory beside the tiles (found {{[0-9]+}} bytes with 4 stages; fewer stages may fit)
func.func @attn(%q: tensor<2x8x2048x64xbf16>, %k: tensor<2x2x2048x64xbf16>, %v: tensor<2x2x2048x64xbf16>) -> tensor<2x8x2048x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<2x8x2048x64xbf16>, tensor<2x2x2048x64xbf16>, tensor<2x2x2048x64xbf16>) -> tensor<2x8x2048x64xbf16>
  return %o : tensor<2x8x2048x64xbf16>
}
