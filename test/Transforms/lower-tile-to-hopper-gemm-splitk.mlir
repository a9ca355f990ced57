// RUN: attn-opt %s --attn-tile="kernel=hopper" --lower-tile-to-hopper | FileCheck %s
// RUN: attn-opt %s --attn-tile="kernel=hopper" --lower-tile-to-hopper="split-k=1" | FileCheck %s --check-prefix=ONE
// RUN: not attn-opt %s --attn-tile="kernel=hopper" --lower-tile-to-hopper="split-k=3" 2>&1 | FileCheck %s --check-prefix=NODIV
// RUN: not attn-opt %s --attn-tile="kernel=hopper" --lower-tile-to-hopper="split-k=65" 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not attn-opt %s --attn-tile="kernel=hopper" --lower-tile-to-hopper="split-k=2 epilogue=staged" 2>&1 | FileCheck %s --check-prefix=STAGED
// RUN: sed 's/bf16/f16/g' %s | attn-opt --attn-tile="kernel=hopper" --lower-tile-to-hopper | FileCheck %s --check-prefix=F16

// 512 x 512 x 8192 has 32 tiles of 128 x 64 (attn-tile's width for it), a
// quarter of the SMs: attn-tile splits the K blocks 4 ways (tile.matmul's
// split_k; 4 x 32 units on 128 CTAs, 32 K blocks each;
// hopper_gemm_splitk.c). @mm becomes a launch
// program: mm__partial writes each unit's f32 sums into its slice of the
// workspace `partials` (4 x 512 rows of 512), 8-byte stores from the
// registers (no staged epilogue: the ring takes its room, 6 stages), and
// mm__reduce sums the four slices, 4 elements per thread, and rounds once.
// CHECK: attn.programs = [{inputs = ["a", "b", "c"], name = "mm", steps = [{args = ["a", "b", "partials"], kernel = "mm__partial"}, {args = ["partials", "c"], kernel = "mm__reduce"}], workspace = [{bytes = 4194304 : i64, name = "partials"}]}]
// CHECK-LABEL: llvm.func @mm__partial(
// CHECK-SAME: gemm = {epilogue = "registers", group_m = 16 : i64, split_k = 4 : i64, stages = 6 : i64}, grid = array<i32: 128, 1, 1>, kernel = "hopper-gemm"
// CHECK-SAME: {align = 16 : i64, dtype = "f32", kind = "ptr", name = "partials", shape = array<i64: 2048, 512>}
// The unit's slice (u / 32) starts at K block 32 x slice; its tile is u % 32.
// CHECK: %[[SL:.*]] = arith.divui %{{.*}}, %c32_i32{{.*}} : i32
// CHECK-NEXT: %[[C32:.*]] = arith.constant 32 : i32
// CHECK-NEXT: arith.muli %[[SL]], %[[C32]] : i32
// CHECK: wgmma.mma_async
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<2xf32>, !llvm.ptr
// CHECK-NOT: cp.async.bulk.global
// CHECK-LABEL: llvm.func @mm__reduce(
// CHECK-SAME: grid = array<i32: 256, 1, 1>, kernel = "gemm-split-reduce"
// CHECK-SAME: params = [{align = 16 : i64, dtype = "f32", kind = "ptr", name = "partials", shape = array<i64: 2048, 512>}, {align = 16 : i64, dtype = "bf16", kind = "ptr", name = "c", shape = array<i64: 512, 512>}], split_k = 4 : i64
// CHECK-COUNT-4: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK: cvt.rn.bf16x2.f32
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 8 : i64} : vector<2xi32>, !llvm.ptr
// split-k=1 overrides attn-tile's slices (tile.matmul, copied into the
// manifest's matmul entry, keeps what attn-tile chose): one kernel, staged.
// ONE-NOT: attn.programs
// ONE-LABEL: llvm.func @mm(
// ONE-SAME: gemm = {epilogue = "staged", group_m = 16 : i64, stages = 6 : i64}, grid = array<i32: 32, 1, 1>
// ONE-SAME: split_k = 4 : i64
// ONE-NOT: llvm.func
// ONE: llvm.return
// ONE-NOT: @mm__reduce
// NODIV: error: no Hopper GEMM for 'mm': split-k 3 needs a plain local GEMM (no collective, accumulate, RoPE or heads layout) whose 128 K blocks of 64 it divides, with fewer than 2^31 partial sums
// An f16 GEMM rounds its sums to f16.
// F16-LABEL: llvm.func @mm__reduce(
// F16-SAME: {align = 16 : i64, dtype = "f16", kind = "ptr", name = "c", shape = array<i64: 512, 512>}
// F16: arith.truncf %{{.*}} : vector<2xf32> to vector<2xf16>
// F16-NOT: bf16x2
// RANGE: error: option 'split-k' expects an integer in [0, 64], found '65'
// STAGED: error: no Hopper GEMM for 'mm': the staged epilogue writes row-major C as the GEMM made it: not with accumulate, RoPE, the heads layout or a split K
func.func @mm(%a: tensor<512x8192xbf16>, %b: tensor<8192x512xbf16>) -> tensor<512x512xbf16> {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<512x512xbf16>
  %i = linalg.fill ins(%z : bf16) outs(%e : tensor<512x512xbf16>) -> tensor<512x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<512x8192xbf16>, tensor<8192x512xbf16>) outs(%i : tensor<512x512xbf16>) -> tensor<512x512xbf16>
  return %c : tensor<512x512xbf16>
}
