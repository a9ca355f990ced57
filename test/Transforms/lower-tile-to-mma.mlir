// RUN: attn-opt %s --split-input-file --attn-tile=kernel=mma --lower-tile-to-mma | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-tile=kernel=mma --lower-tile-to-mma=chip=sm_86 | FileCheck %s --check-prefix=SM86
// RUN: attn-opt %s --split-input-file --attn-tile="kernel=mma block-m=64 block-n=32" --lower-tile-to-mma="stages=4" | FileCheck %s --check-prefix=SMALL
// RUN: not attn-opt %s --lower-tile-to-mma=chip=sm_61 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: not attn-opt %s --lower-tile-to-mma=stages=1 2>&1 | FileCheck %s --check-prefix=STAGES

// Every configuration the kernel supports becomes one sm_80 llvm.func in
// @attn_kernels: cp.async loads in commit groups (Q, then stages - 1 key
// blocks before the loop, one per block in it), ldmatrix for Q and K and
// ldmatrix.trans for V, mma.sync m16n8k16 with f32 accumulators for both
// products, an exp2 online softmax with quad shuffles, RoPE of Q and K in
// shared memory with libdevice's sin/cos. The launch: grid (ceil(N/128), H,
// B), 256 threads, (128 + 2 * 3 * 64) * D * 2 bytes of dynamic shared
// memory (3 stages), four pointers, q, k and v 16-byte aligned.

// CHECK: gpu.module @attn_kernels [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx70">]
// CHECK: llvm.mlir.global external @attn_smem() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK-LABEL: llvm.func @d64_gqa_rope_causal(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK-SAME: attn.launch = {attention = {causal = true, mods = ["scale"], rope = {layout = "rotate_half", rotary_dim = 64 : i64, theta = 1.000000e+04 : f64}, scale = 1.250000e-01 : f64}, block = array<i32: 256, 1, 1>, dynamic_shared_bytes = 65536 : i64, grid = array<i32: 3, 8, 2>, kernel = "mma-sync", params = [{align = 16 : i64, dtype = "bf16", kind = "ptr", name = "q", shape = array<i64: 2, 8, 300, 64>}, {align = 16 : i64, dtype = "bf16", kind = "ptr", name = "k", shape = array<i64: 2, 2, 300, 64>}, {align = 16 : i64, dtype = "bf16", kind = "ptr", name = "v", shape = array<i64: 2, 2, 300, 64>}, {align = 4 : i64, dtype = "bf16", kind = "ptr", name = "out", shape = array<i64: 2, 8, 300, 64>}], static_shared_bytes = 0 : i64}
// CHECK-SAME: nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>, nvvm.minctasm = 1 : i32
// CHECK: cp.async.cg.shared.global [$0], [$1], 16, $2;
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.cp.async.wait.group 2
// CHECK: llvm.call @__nv_sinf
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 1
// CHECK: nvvm.barrier{{$}}
// CHECK: llvm.call @__nv_cosf
// CHECK: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: nvvm.shfl.sync bfly
// CHECK: cvt.rn.bf16x2.f32
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK: llvm.return
// CHECK-NOT: "tile.
// SM86-LABEL: llvm.func @d64_gqa_rope_causal
// SM86-SAME: dynamic_shared_bytes = 65536 : i64
// SMALL-LABEL: llvm.func @d64_gqa_rope_causal
// SMALL-SAME: block = array<i32: 128, 1, 1>, dynamic_shared_bytes = 40960 : i64, grid = array<i32: 5, 8, 2>
// SMALL: nvvm.cp.async.wait.group 3
// CHIP: attn-opt: error: unknown chip 'sm_61' (expected sm_80, sm_86, sm_87, sm_89, sm_90 or sm_90a)
// STAGES: attn-opt: error: option 'stages' must be 0 or 2 to 4, found 1
func.func @d64_gqa_rope_causal(%q: tensor<2x8x300x64xbf16>, %k: tensor<2x2x300x64xbf16>, %v: tensor<2x2x300x64xbf16>) -> tensor<2x8x300x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<2x8x300x64xbf16>, tensor<2x2x300x64xbf16>, tensor<2x2x300x64xbf16>) -> tensor<2x8x300x64xbf16>
  return %o : tensor<2x8x300x64xbf16>
}

// -----

// f16, d 128, no mask, no RoPE: 3 stages on sm_80 (128 KiB), 2 on sm_86,
// whose CTAs have 99 KiB (96 KiB). No sin/cos, no mask code.
// CHECK-LABEL: llvm.func @d128_f16_plain
// CHECK-SAME: dynamic_shared_bytes = 131072 : i64, grid = array<i32: 2, 2, 1>
// CHECK-NOT: llvm.call @__nv_sinf
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// CHECK-NOT: scf.if
// CHECK: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK: arith.truncf %{{.*}} : vector<2xf32> to vector<2xf16>
// SM86-LABEL: llvm.func @d128_f16_plain
// SM86-SAME: dynamic_shared_bytes = 98304 : i64
// SM86: nvvm.cp.async.wait.group 1
// SM86: nvvm.cp.async.wait.group 0
func.func @d128_f16_plain(%q: tensor<1x2x256x128xf16>, %k: tensor<1x2x256x128xf16>, %v: tensor<1x2x256x128xf16>) -> tensor<1x2x256x128xf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = false} : (tensor<1x2x256x128xf16>, tensor<1x2x256x128xf16>, tensor<1x2x256x128xf16>) -> tensor<1x2x256x128xf16>
  return %o : tensor<1x2x256x128xf16>
}

// -----

// bf16, d 128, causal, interleaved RoPE on 32 of 128 columns, 513 rows (a
// tail block of one row), different q and k offsets; 8 slots of two pairs
// divide the 256 threads, so cos/sin step down the rows.
// CHECK-LABEL: llvm.func @d128_interleaved_partial
// CHECK-SAME: rope = {k_offset = 5 : i64, layout = "interleaved", q_offset = 7 : i64, rotary_dim = 32 : i64
// CHECK-SAME: grid = array<i32: 5, 2, 1>
// CHECK: llvm.call @__nv_sinf
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
func.func @d128_interleaved_partial(%q: tensor<1x2x513x128xbf16>, %k: tensor<1x2x513x128xbf16>, %v: tensor<1x2x513x128xbf16>) -> tensor<1x2x513x128xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = true, rope = {theta = 1.0e4 : f64, rotary_dim = 32 : i64, layout = "interleaved", q_offset = 7 : i64, k_offset = 5 : i64}} : (tensor<1x2x513x128xbf16>, tensor<1x2x513x128xbf16>, tensor<1x2x513x128xbf16>) -> tensor<1x2x513x128xbf16>
  return %o : tensor<1x2x513x128xbf16>
}

// -----

// RoPE on 96 columns: 24 slots do not divide 256 threads, so every (row,
// slot) item computes its own angles; cross attention (N != M), f16.
// CHECK-LABEL: llvm.func @d128_rope96_cross
// CHECK-SAME: grid = array<i32: 1, 4, 1>
// CHECK: llvm.call @__nv_exp2
// CHECK: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
func.func @d128_rope96_cross(%q: tensor<1x4x100x128xf16>, %k: tensor<1x4x77x128xf16>, %v: tensor<1x4x77x128xf16>) -> tensor<1x4x100x128xf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.5 : f64, causal = false, rope = {theta = 5.0e5 : f64, rotary_dim = 96 : i64, layout = "rotate_half"}} : (tensor<1x4x100x128xf16>, tensor<1x4x77x128xf16>, tensor<1x4x77x128xf16>) -> tensor<1x4x100x128xf16>
  return %o : tensor<1x4x100x128xf16>
}
