// RUN: attn-opt %s --attn-fuse --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rope=fused" | FileCheck %s --check-prefix=FUSED
// RUN: attn-opt %s --attn-fuse --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rope=split" | FileCheck %s --check-prefix=SPLIT
// RUN: attn-opt %s --attn-fuse --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rope=pre" | FileCheck %s --check-prefix=PRE
// RUN: attn-opt %s --attn-fuse --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rope=split q-rope=producer" | FileCheck %s --check-prefix=PRODQ
// RUN: attn-opt %s --attn-fuse --attn-tile=kernel=mma --lower-tile-to-mma | FileCheck %s --check-prefix=MMA
// RUN: attn-translate --to-ptx %s --hopper-options=rope=split -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not=C7513 --implicit-check-not=C7514 %}

// RoPE at explicit positions (packed sequences: attn.rope's positions
// operand, here of q and k, two batches, GQA 4/2) on the tensor-core
// kernels (issue 28; they used to refuse them, "the kernel does not take
// exactly (q, k, v, out)", and such programs ran on the plain path). The
// positions are i32 pointer parameters in the tile kernel's argument order,
// read only, and in the manifest; every thread that rotates a row loads
// that row's position of the tile's batch (clamped into the sequence) and
// computes its cos/sin afresh; the masks stay by row.

// fused: the producer's warps rotate each K tile, the consumers their Q rows.
// FUSED-LABEL: llvm.func @pos(
// FUSED-SAME: %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %[[QP:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %[[KP:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr {llvm.align = 64 : i64
// FUSED-SAME: rope = {k_positions = true, layout = "rotate_half", q_positions = true, rotary_dim = 128 : i64, theta = 1.000000e+04 : f64}
// FUSED-SAME: {dtype = "i32", kind = "ptr", name = "q_positions", shape = array<i64: 2, 300>}, {dtype = "i32", kind = "ptr", name = "k_positions", shape = array<i64: 2, 300>}, {align = 16 : i64, dtype = "bf16", kind = "ptr", name = "out"
// FUSED: nvvm.setmaxregister decrease 56
// The producer's K tile: the batch's positions, then a loop over the
// thread's rows (no cos/sin carried), each row's position loaded once.
// FUSED: %[[KB:.*]] = llvm.getelementptr %[[KP]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// FUSED: scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// FUSED: arith.maxsi
// FUSED-NEXT: arith.constant 299 : i32
// FUSED-NEXT: arith.minui
// FUSED-NEXT: arith.extui
// FUSED-NEXT: llvm.getelementptr %[[KB]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// FUSED-NEXT: %[[P:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i32
// FUSED-NEXT: arith.sitofp %[[P]] : i32 to f64
// FUSED: cvt.rni.f64.f64
// FUSED: cos.approx.f32
// FUSED: nvvm.mbarrier.arrive
// FUSED: nvvm.setmaxregister increase 224
// The consumers' Q rows, the same way from q's positions.
// FUSED: %[[QB:.*]] = llvm.getelementptr %[[QP]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// FUSED: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// FUSED: llvm.getelementptr %[[QB]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// FUSED-NEXT: llvm.load %{{.*}} : !llvm.ptr -> i32
// FUSED: cvt.rni.f64.f64
// FUSED: wgmma.mma_async
// FUSED: llvm.return

// split: K rotated once per row by @pos__rope_k, which takes k's positions
// as its third argument; the attention kernel rotates Q from q's.
// SPLIT: attn.programs = [{inputs = ["q", "k", "v", "q_positions", "k_positions", "out"], name = "pos", steps = [{args = ["k", "k_rot", "k_positions"], kernel = "pos__rope_k"}, {args = ["q", "k_rot", "v", "q_positions", "k_positions", "out"], kernel = "pos__attn"}]
// SPLIT-LABEL: llvm.func @pos__attn(
// SPLIT-SAME: %[[QP:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %{{[a-z0-9]+}}: !llvm.ptr {llvm.noalias, llvm.readonly}
// SPLIT: nvvm.setmaxregister increase 232
// SPLIT: llvm.getelementptr %[[QP]]
// SPLIT: cvt.rni.f64.f64
// SPLIT-LABEL: llvm.func @pos__rope_k(
// SPLIT-SAME: %{{[a-z0-9]+}}: !llvm.ptr {llvm.noalias, llvm.readonly}, %{{[a-z0-9]+}}: !llvm.ptr {llvm.noalias, llvm.writeonly}, %[[KP:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly})
// SPLIT-SAME: {dtype = "i32", kind = "ptr", name = "k_positions", shape = array<i64: 2, 300>}
// SPLIT: %[[KB:.*]] = llvm.getelementptr %[[KP]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// SPLIT: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// SPLIT-COUNT-2: llvm.getelementptr %[[KB]]
// SPLIT-COUNT-8: cvt.rni.f64.f64
// SPLIT-COUNT-2: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr
// SPLIT-COUNT-8: cvt.rni.f64.f64
// SPLIT: scf.if

// pre: Q and K by their kernels, each with its positions; the attention
// kernel has no RoPE (it still takes the positions, unread).
// PRE: steps = [{args = ["q", "q_rot", "q_positions"], kernel = "pos__rope_q"}, {args = ["k", "k_rot", "k_positions"], kernel = "pos__rope_k"}, {args = ["q_rot", "k_rot", "v", "q_positions", "k_positions", "out"], kernel = "pos__attn"}]
// PRE-LABEL: llvm.func @pos__attn(
// PRE-NOT: cvt.rni.f64.f64
// PRE-LABEL: llvm.func @pos__rope_k(
// PRE-SAME: {dtype = "i32", kind = "ptr", name = "k_positions", shape = array<i64: 2, 300>}
// PRE: cvt.rni.f64.f64
// PRE-LABEL: llvm.func @pos__rope_q(
// PRE-SAME: {dtype = "i32", kind = "ptr", name = "q_positions", shape = array<i64: 2, 300>}
// PRE: cvt.rni.f64.f64

// q-rope=producer: the producer's warps rotate each tile's Q from q's
// positions.
// PRODQ-LABEL: llvm.func @pos__attn(
// PRODQ-SAME: %[[QP:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}
// PRODQ: nvvm.setmaxregister decrease 56
// PRODQ: llvm.getelementptr %[[QP]]
// PRODQ: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} : i32 {
// PRODQ: cvt.rni.f64.f64
// PRODQ: nvvm.mbarrier.arrive
// PRODQ: nvvm.setmaxregister increase

// mma.sync: positions parameters as the captures are; Q once, each K tile
// per block, every row's cos/sin from its loaded position.
// MMA-LABEL: llvm.func @pos(
// MMA-SAME: %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %[[QP:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %[[KP:[a-z0-9]+]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %{{[a-z0-9]+}}: !llvm.ptr)
// MMA-SAME: kernel = "mma-sync"
// MMA-SAME: {dtype = "i32", kind = "ptr", name = "q_positions", shape = array<i64: 2, 300>}
// MMA: %[[QB:.*]] = llvm.getelementptr %[[QP]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// MMA: %[[KB:.*]] = llvm.getelementptr %[[KP]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// MMA: scf.for
// MMA: llvm.getelementptr %[[QB]]
// MMA-NEXT: llvm.load %{{.*}} : !llvm.ptr -> i32
// MMA-NEXT: arith.sitofp %{{.*}} : i32 to f32
// MMA: llvm.call @__nv_sinf
// MMA: llvm.getelementptr %[[KB]]
// MMA-NEXT: llvm.load %{{.*}} : !llvm.ptr -> i32
// MMA: mma.sync.aligned.m16n8k16

// The positions load through the read-only data cache; nothing spills.
// PTX: .visible .entry pos__attn(
// PTX: ld.global.nc.b32
// PTX: .visible .entry pos__rope_k(
// PTX: ld.global.nc.b32
// PTXAS: Compiling entry function 'pos__rope_k' for 'sm_90a'
// PTXAS-NEXT: Function properties for pos__rope_k
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS: Compiling entry function 'pos__attn' for 'sm_90a'
// PTXAS-NEXT: Function properties for pos__attn
// PTXAS-NEXT: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
func.func @pos(%q: tensor<2x4x300x128xbf16>, %k: tensor<2x2x300x128xbf16>, %v: tensor<2x2x300x128xbf16>, %qp: tensor<2x300xi32>, %kp: tensor<2x300xi32>) -> tensor<2x4x300x128xbf16> {
  %qr = "attn.rope"(%q, %qp) {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"} : (tensor<2x4x300x128xbf16>, tensor<2x300xi32>) -> tensor<2x4x300x128xbf16>
  %kr = "attn.rope"(%k, %kp) {theta = 10000.0 : f64, rotary_dim = 128 : i64, layout = "rotate_half"} : (tensor<2x2x300x128xbf16>, tensor<2x300xi32>) -> tensor<2x2x300x128xbf16>
  %s = "attn.qk"(%qr, %kr) : (tensor<2x4x300x128xbf16>, tensor<2x2x300x128xbf16>) -> tensor<2x4x300x300xbf16>
  %s1 = "attn.causal"(%s) : (tensor<2x4x300x300xbf16>) -> tensor<2x4x300x300xbf16>
  %s2 = "attn.scale"(%s1) {scale = 0.08838834764831845 : f64} : (tensor<2x4x300x300xbf16>) -> tensor<2x4x300x300xbf16>
  %p = "attn.softmax"(%s2) : (tensor<2x4x300x300xbf16>) -> tensor<2x4x300x300xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<2x4x300x300xbf16>, tensor<2x2x300x128xbf16>) -> tensor<2x4x300x128xbf16>
  return %o : tensor<2x4x300x128xbf16>
}
