// RUN: attn-opt %s --split-input-file --attn-tile="kernel=hopper" --lower-tile-to-hopper | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-tile="kernel=hopper" --lower-tile-to-hopper="group-m=4 stages=2" | FileCheck %s --check-prefix=OPTS
// RUN: not attn-opt %s --attn-tile="kernel=hopper" --lower-tile-to-hopper="group-m=-1" 2>&1 | FileCheck %s --check-prefix=BADGROUP
// RUN: attn-opt %s --split-input-file --attn-tile="kernel=hopper" --lower-tile-to-hopper="gpu=A100" | FileCheck %s --check-prefix=A100

// A bf16 linalg.matmul becomes the persistent warp-specialised GEMM: 384
// threads, TMA descriptors for A (128x64 boxes) and B (64x64 boxes, four
// per 256-column tile), a 3-deep mbarrier ring beside the staged
// epilogue's rows (216,192 bytes of shared memory; the epilogue is
// lower-tile-to-hopper-gemm-epilogue.mlir's), wgmma m64n256k16 with B
// transposed (it is N-major), and as many CTAs as keep the wave count of
// 132 SMs: 2048 tiles in 16 waves of 128. The launch entry says what the
// defaults chose (gemm = {...}): 16 tile rows walked together. The options
// group-m and stages override them.
// OPTS-LABEL: llvm.func @mm8k(
// OPTS-SAME: gemm = {epilogue = "staged", group_m = 4 : i64, stages = 2 : i64}
// BADGROUP: error: option 'group-m' expects an integer in [0, 65536], found '-1'
// Option gpu sets the SMs the CTA count fills: 2048 tiles on an A100's 108
// are 19 waves of 108.
// A100-LABEL: llvm.func @mm8k(
// A100-SAME: grid = array<i32: 108, 1, 1>, kernel = "hopper-gemm"
// CHECK-LABEL: llvm.func @mm8k(
// CHECK-SAME: %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}
// CHECK-SAME: attn.launch = {block = array<i32: 384, 1, 1>, dynamic_shared_bytes = 216192 : i64, gemm = {epilogue = "staged", group_m = 16 : i64, stages = 3 : i64}, grid = array<i32: 128, 1, 1>, kernel = "hopper-gemm"
// CHECK-SAME: matmul = {accumulate = false, block_k = 64 : i64, block_m = 128 : i64, block_n = 256 : i64, k = 8192 : i64, m = 8192 : i64, n = 8192 : i64}
// CHECK-SAME: {align = 16 : i64, dtype = "bf16", kind = "ptr", name = "c", shape = array<i64: 8192, 8192>}
// CHECK-SAME: {box = array<i64: 64, 128, 1, 1>, dims = array<i64: 8192, 8192, 1, 1>, dtype = "bf16", kind = "tensormap", name = "a_map", swizzle = 128 : i64, tensor = "a"}
// CHECK-SAME: {box = array<i64: 64, 64, 1, 1>, dims = array<i64: 8192, 8192, 1, 1>, dtype = "bf16", kind = "tensormap", name = "b_map", swizzle = 128 : i64, tensor = "b"}
// CHECK: nvvm.mbarrier.init %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.setmaxregister decrease 40
// CHECK: %[[TX:.*]] = arith.constant 49152 : i32
// CHECK-NEXT: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %[[TX]] : !llvm.ptr<3>, i32
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global %{{.*}}, %{{.*}}, %{{.*}}, box[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : !llvm.ptr<7>, !llvm.ptr
// CHECK: nvvm.setmaxregister increase 232
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0, 1; }
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: cvt.rn.bf16x2.f32
// CHECK-NOT: "tile.
func.func @mm8k(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %i = linalg.fill ins(%z : bf16) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%i : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %c : tensor<8192x8192xbf16>
}

// -----

// Tails (8000 = 62.5 tiles of 128 rows, 31.25 of 256 columns) are masked
// stores; TMA reads zeros past the edges. An accumulating f16 GEMM reads C
// in its epilogue.
// CHECK-LABEL: llvm.func @tails(
// CHECK-SAME: grid = array<i32: 126, 1, 1>
// CHECK-SAME: accumulate = true
// CHECK: wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> i32
// CHECK: arith.cmpi ult
// CHECK: scf.if
// CHECK: arith.truncf %{{.*}} : vector<2xf32> to vector<2xf16>
func.func @tails(%a: tensor<8000x8000xf16>, %b: tensor<8000x8000xf16>, %c: tensor<8000x8000xf16>) -> tensor<8000x8000xf16> {
  %r = linalg.matmul ins(%a, %b : tensor<8000x8000xf16>, tensor<8000x8000xf16>) outs(%c : tensor<8000x8000xf16>) -> tensor<8000x8000xf16>
  return %r : tensor<8000x8000xf16>
}

// -----

// RoPE in the epilogue (the Rotation Calculus's producer placement), on a
// hand-written GEMM tile program: positions row % seq_len + offset, angles
// reduced in f64, cos/sin approximations.
// CHECK-LABEL: llvm.func @rope(
// CHECK-SAME: rope = {head_dim = 128 : i64, layout = "rotate_half", offset = 3 : i64, rotary_dim = 128 : i64, seq_len = 1000 : i64, theta = 5.000000e+05 : f64}
// CHECK: llvm.call @__nv_exp2
// CHECK: cvt.rni.f64.f64
// CHECK: cos.approx.ftz.f32
// CHECK: sin.approx.ftz.f32
func.func @rope(%a: memref<1024x512xbf16>, %b: memref<512x1024xbf16>, %c: memref<1024x1024xbf16>) attributes {tile.kernel, tile.grid = array<i64: 8, 4, 1>, tile.threads = 384 : i64, tile.arg_names = ["a", "b", "c"], tile.matmul = {m = 1024 : i64, n = 1024 : i64, k = 512 : i64, block_m = 128 : i64, block_n = 256 : i64, block_k = 64 : i64, accumulate = false, rope = {theta = 5.0e5 : f64, head_dim = 128 : i64, rotary_dim = 128 : i64, seq_len = 1000 : i64, offset = 3 : i64, layout = "rotate_half"}}} {
  %pm = "tile.program_id"() {dim = 0 : i64} : () -> index
  %pn = "tile.program_id"() {dim = 1 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bm = arith.constant 128 : index
  %bn = arith.constant 256 : index
  %bk = arith.constant 64 : index
  %nk = arith.constant 8 : index
  %row = arith.muli %pm, %bm : index
  %col = arith.muli %pn, %bn : index
  %at = "tile.alloc"() : () -> memref<128x64xf32>
  %bt = "tile.alloc"() : () -> memref<64x256xf32>
  %ct = "tile.alloc"() : () -> memref<128x256xf32>
  "tile.fill"(%ct) {value = 0.0 : f32} : (memref<128x256xf32>) -> ()
  scf.for %kb = %c0 to %nk step %c1 {
    %kk = arith.muli %kb, %bk : index
    "tile.load"(%a, %at, %row, %kk) : (memref<1024x512xbf16>, memref<128x64xf32>, index, index) -> ()
    "tile.load"(%b, %bt, %kk, %col) : (memref<512x1024xbf16>, memref<64x256xf32>, index, index) -> ()
    "tile.mma"(%at, %bt, %ct) {transpose_b = false, accumulate = true} : (memref<128x64xf32>, memref<64x256xf32>, memref<128x256xf32>) -> ()
  }
  "tile.store"(%ct, %c, %row, %col) : (memref<128x256xf32>, memref<1024x1024xbf16>, index, index) -> ()
  return
}
