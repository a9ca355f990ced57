// RUN: attn-opt %s --lower-tile-to-cpu | FileCheck %s
// RUN: attn-opt %s --lower-tile-to-cpu --attn-cpu-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: attn-opt %s --lower-tile-to-gpu | FileCheck %s --check-prefix=GPU
// RUN: attn-opt %S/../Inputs/tile/grad_step.mlir --lower-tile-to-cpu --attn-cpu-to-llvm | FileCheck %s --check-prefix=STEP
// RUN: attn-opt %S/../Inputs/tile/grad_step.mlir --lower-tile-to-gpu | FileCheck %s --check-prefix=STEP-GPU

// The backward's tile ops (issue 29) lower to loops written once for the
// CPU (one thread walks them) and the plain GPU path (the CTA's threads
// share them, a barrier after each): a [B, H, N] tensor copied row by row
// into a rank-1 tile (rows past N read 0, stores past N dropped);
// tile.row_lse (m + log2 l) ln 2, +inf where l == 0; tile.row_dot a dot
// product per row; tile.exp_lse exp2(s k - lse log2 e), 0 where s is -inf
// or lse +inf; tile.ds scale p (dp - d); tile.score_fn_grad the body
// cloned at scores_in, its value multiplying ds (a zero ds stays zero);
// tile.mma's transpose_a reading a[k, i]; tile.rope's inverse negating
// the sine. Test/Target/tile-grad.test runs them on the CPU.

// CHECK-LABEL: func.func private @rows__cta(
// CHECK-SAME: %[[LSE:.*]]: memref<1x2x12xf32>, %{{.*}}: memref<1x2x12x8xf32>, %{{.*}}: index, %[[Y:.*]]: index, %{{.*}}: index)
// CHECK: %[[N:.*]] = arith.constant 12 : index
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT: %[[R:.*]] = arith.addi %{{.*}}, %[[I]] : index
// CHECK-NEXT: %[[IN:.*]] = arith.cmpi ult, %[[R]], %[[N]] : index
// CHECK-NEXT: %[[V:.*]] = scf.if %[[IN]] -> (f32) {
// CHECK-NEXT: memref.load %[[LSE]][%{{.*}}, %[[Y]], %[[R]]] : memref<1x2x12xf32>
// CHECK: memref.store %[[V]], %{{.*}}[%[[I]]] : memref<16xf32>
// The row log-sum-exp.
// CHECK: %[[LN2:.*]] = arith.constant 0.693147182 : f32
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK: scf.for %[[J:.*]] =
// CHECK-NEXT: %[[M:.*]] = memref.load %{{.*}}[%[[J]]] : memref<16xf32>
// CHECK-NEXT: %[[L:.*]] = memref.load %{{.*}}[%[[J]]] : memref<16xf32>
// CHECK-NEXT: %[[LG:.*]] = math.log2 %[[L]] : f32
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[M]], %[[LG]] : f32
// CHECK-NEXT: %[[NONE:.*]] = arith.cmpf oeq, %[[L]], %[[ZERO]] : f32
// CHECK-NEXT: %[[NAT:.*]] = arith.mulf %[[SUM]], %[[LN2]] : f32
// CHECK-NEXT: arith.select %[[NONE]], %[[INF]], %[[NAT]] : f32
// The row dot product.
// CHECK: scf.for %[[K:.*]] =
// CHECK-NEXT: %[[D:.*]] = scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) {
// CHECK: math.fma
// CHECK: memref.store %[[D]], %{{.*}}[%[[K]]] : memref<16xf32>
// The store of a rank-1 tile drops rows past N.
// CHECK: arith.cmpi ult
// CHECK-NEXT: scf.if
// CHECK-NEXT: memref.load %{{.*}} : memref<16xf32>
// CHECK-NEXT: memref.store %{{.*}}, %[[LSE]][%{{.*}}, %[[Y]], %{{.*}}] : memref<1x2x12xf32>
// CHECK-NOT: "tile.

// GPU-LABEL: gpu.func @rows(
// GPU-SAME: workgroup(
// GPU: %[[BY:.*]] = gpu.block_id y
// GPU: %[[T:.*]] = gpu.thread_id x
// GPU-NEXT: %[[NT:.*]] = gpu.block_dim x
// GPU: scf.for %{{.*}} = %[[T]] to %{{.*}} step %[[NT]] {
// GPU: memref.load %{{.*}}[%{{.*}}, %[[BY]], %{{.*}}] : memref<1x2x12xf32>
// GPU: gpu.barrier
// GPU: math.log2
// GPU: gpu.barrier
// GPU: math.fma
// GPU: gpu.barrier
// GPU: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %[[BY]], %{{.*}}] : memref<1x2x12xf32>
// GPU: gpu.barrier
// GPU-NEXT: gpu.return
func.func @rows(%lse: memref<1x2x12xf32>, %o: memref<1x2x12x8xf32>) attributes {tile.arg_names = ["lse", "o"], tile.grid = array<i64: 1, 2, 1>, tile.kernel, tile.threads = 64 : i64} {
  %c0 = arith.constant 0 : index
  %h = "tile.program_id"() {dim = 1 : i64} : () -> index
  %m = "tile.alloc"() : () -> memref<16xf32>
  %l = "tile.alloc"() : () -> memref<16xf32>
  %t = "tile.alloc"() : () -> memref<16xf32>
  %a = "tile.alloc"() : () -> memref<16x8xf32>
  "tile.load"(%lse, %t, %c0, %h, %c0) : (memref<1x2x12xf32>, memref<16xf32>, index, index, index) -> ()
  "tile.row_lse"(%m, %l, %t) : (memref<16xf32>, memref<16xf32>, memref<16xf32>) -> ()
  "tile.row_dot"(%a, %a, %m) : (memref<16x8xf32>, memref<16x8xf32>, memref<16xf32>) -> ()
  "tile.store"(%t, %lse, %c0, %h, %c0) : (memref<16xf32>, memref<1x2x12xf32>, index, index, index) -> ()
  return
}

// CHECK-LABEL: func.func private @probs__cta(
// CHECK-SAME: %{{.*}}: memref<1x1x16x16xf32>, %[[G:.*]]: memref<4xf32>,
// exp_lse: k = 0.5 log2 e, then lse log2 e.
// CHECK: %[[K:.*]] = arith.constant 0.72134751 : f32
// CHECK: %[[LOG2E:.*]] = arith.constant 1.44269502 : f32
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[PINF:.*]] = arith.constant 0x7F800000 : f32
// CHECK: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: scf.for
// CHECK: %[[S:.*]] = memref.load %{{.*}} : memref<16x16xf32>
// CHECK-NEXT: %[[LS:.*]] = memref.load %{{.*}} : memref<16xf32>
// CHECK-NEXT: %[[L2:.*]] = arith.mulf %[[LS]], %[[LOG2E]] : f32
// CHECK-NEXT: %[[SK:.*]] = arith.mulf %[[S]], %[[K]] : f32
// CHECK-NEXT: %[[X:.*]] = arith.subf %[[SK]], %[[L2]] : f32
// CHECK-NEXT: %[[P:.*]] = math.exp2 %[[X]] : f32
// CHECK-NEXT: %[[MASKED:.*]] = arith.cmpf oeq, %[[S]], %[[NINF]] : f32
// CHECK-NEXT: %[[EMPTY:.*]] = arith.cmpf oeq, %[[LS]], %[[PINF]] : f32
// CHECK-NEXT: %[[DEAD:.*]] = arith.ori %[[MASKED]], %[[EMPTY]] : i1
// CHECK-NEXT: arith.select %[[DEAD]], %[[Z]], %[[P]] : f32
// ds: scale p (dp - d).
// CHECK: %[[SC:.*]] = arith.constant 2.500000e-01 : f32
// CHECK: scf.for
// CHECK: %[[PP:.*]] = memref.load %{{.*}} : memref<16x16xf32>
// CHECK-NEXT: %[[DP:.*]] = memref.load %{{.*}} : memref<16x16xf32>
// CHECK-NEXT: %[[DD:.*]] = memref.load %{{.*}} : memref<16xf32>
// CHECK-NEXT: %[[PS:.*]] = arith.mulf %[[PP]], %[[SC]] : f32
// CHECK-NEXT: %[[DIFF:.*]] = arith.subf %[[DP]], %[[DD]] : f32
// CHECK-NEXT: %[[DS:.*]] = arith.mulf %[[PS]], %[[DIFF]] : f32
// CHECK-NEXT: memref.store %[[DS]]
// score_fn_grad: the body at scores_in (operand 1), q and kv clamped.
// CHECK: %[[QL:.*]] = arith.constant 19 : index
// CHECK: %[[KL:.*]] = arith.constant 29 : index
// CHECK: %[[GZ:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: scf.for
// CHECK: arith.minui %{{.*}}, %[[QL]] : index
// CHECK: %[[KV:.*]] = arith.minui %{{.*}}, %[[KL]] : index
// CHECK-NEXT: %[[SIN:.*]] = memref.load %[[SIN_T:.*]][%{{.*}}, %{{.*}}] : memref<16x16xf32>
// CHECK: %[[GV:.*]] = memref.load %[[G]][%{{.*}}] : memref<4xf32>
// CHECK-NEXT: %[[DER:.*]] = arith.mulf %[[SIN]], %[[GV]] : f32
// CHECK-NEXT: %[[OLD:.*]] = memref.load %[[DS_T:.*]][%{{.*}}, %{{.*}}] : memref<16x16xf32>
// CHECK-NEXT: %[[ZD:.*]] = arith.cmpf oeq, %[[OLD]], %[[GZ]] : f32
// CHECK-NEXT: %[[PROD:.*]] = arith.mulf %[[OLD]], %[[DER]] : f32
// CHECK-NEXT: %[[NEW:.*]] = arith.select %[[ZD]], %[[GZ]], %[[PROD]] : f32
// CHECK-NEXT: memref.store %[[NEW]], %[[DS_T]][
// CHECK-NOT: "tile.
// CHECK-NOT: gpu.yield

// GPU-LABEL: gpu.func @probs(
// GPU: math.exp2
// GPU: gpu.barrier
// GPU: arith.subf
// GPU: gpu.barrier
// GPU: memref.load %{{.*}} : memref<4xf32>
// GPU: arith.select
// GPU: gpu.barrier
func.func @probs(%x: memref<1x1x16x16xf32>, %g: memref<4xf32>) attributes {tile.arg_names = ["x", "g"], tile.grid = array<i64: 1, 1, 1>, tile.kernel, tile.threads = 64 : i64} {
  %c0 = arith.constant 0 : index
  %s = "tile.alloc"() : () -> memref<16x16xf32>
  %dp = "tile.alloc"() : () -> memref<16x16xf32>
  %r = "tile.alloc"() : () -> memref<16xf32>
  "tile.exp_lse"(%s, %r) {scale = 0.5 : f64} : (memref<16x16xf32>, memref<16xf32>) -> ()
  "tile.ds"(%s, %dp, %r) {scale = 0.25 : f64} : (memref<16x16xf32>, memref<16x16xf32>, memref<16xf32>) -> ()
  "tile.score_fn_grad"(%dp, %s, %c0, %c0, %c0, %c0) ({
  ^bb0(%v: f32, %b: index, %h: index, %q: index, %kv: index):
    %c3 = arith.constant 3 : index
    %j = arith.minui %kv, %c3 : index
    %w = memref.load %g[%j] : memref<4xf32>
    %y = arith.mulf %v, %w : f32
    gpu.yield %y : f32
  }) {seq_q = 20 : i64, seq_k = 30 : i64} : (memref<16x16xf32>, memref<16x16xf32>, index, index, index, index) -> ()
  "tile.store"(%dp, %x, %c0, %c0, %c0) : (memref<16x16xf32>, memref<1x1x16x16xf32>, index, index, index) -> ()
  return
}

// transpose_a: c[i, j] += sum_k a[k, i] b[k, j] over a's 32 rows; the
// inverse rotation negates the sine.
// CHECK-LABEL: func.func private @back__cta(
// CHECK: %[[A:.*]] = memref.alloca() : memref<32x16xf32>
// CHECK: %[[B:.*]] = memref.alloca() : memref<32x8xf32>
// CHECK: %[[KD:.*]] = arith.constant 32 : index
// CHECK: scf.for %[[E:.*]] =
// CHECK: %[[CI:.*]] = arith.divui %[[E]]
// CHECK-NEXT: %[[CJ:.*]] = arith.remui %[[E]]
// CHECK: scf.for %[[KK:.*]] = %{{.*}} to %[[KD]] step
// CHECK-NEXT: memref.load %[[A]][%[[KK]], %[[CI]]] : memref<32x16xf32>
// CHECK-NEXT: memref.load %[[B]][%[[KK]], %[[CJ]]] : memref<32x8xf32>
// CHECK: %[[COS:.*]] = math.cos %[[ANG:.*]] : f32
// CHECK-NEXT: %[[SN:.*]] = math.sin %[[ANG]] : f32
// CHECK-NEXT: %[[NSN:.*]] = arith.negf %[[SN]] : f32
// CHECK: %[[X1:.*]] = memref.load
// CHECK-NEXT: %[[X2:.*]] = memref.load
// CHECK-NEXT: arith.mulf %[[X1]], %[[COS]] : f32
// CHECK-NEXT: arith.mulf %[[X2]], %[[NSN]] : f32
// CHECK-NOT: "tile.
// LLVM-LABEL: llvm.func @back(
// LLVM-NOT: "tile.
func.func @back(%x: memref<1x1x16x8xf32>) attributes {tile.arg_names = ["x"], tile.grid = array<i64: 1, 1, 1>, tile.kernel, tile.threads = 64 : i64} {
  %c0 = arith.constant 0 : index
  %p = "tile.alloc"() : () -> memref<32x16xf32>
  %d = "tile.alloc"() : () -> memref<32x8xf32>
  %c = "tile.alloc"() : () -> memref<16x8xf32>
  "tile.mma"(%p, %d, %c) {transpose_a = true, transpose_b = false, accumulate = true} : (memref<32x16xf32>, memref<32x8xf32>, memref<16x8xf32>) -> ()
  "tile.rope"(%c, %c0) {theta = 10000.0 : f64, rotary_dim = 8 : i64, layout = "rotate_half", inverse = true} : (memref<16x8xf32>, index) -> ()
  "tile.store"(%c, %x, %c0, %c0, %c0) : (memref<16x8xf32>, memref<1x1x16x8xf32>, index, index, index) -> ()
  return
}

// The whole forward and backward step of Inputs/tile/grad_step.mlir lower
// on both paths, every tile op gone.
// STEP: llvm.func @fwd_a(
// STEP: llvm.func @bwd_a(
// STEP: llvm.func @fwd_b(
// STEP: llvm.func @bwd_b(
// STEP-NOT: "tile.
// STEP-GPU: gpu.func @fwd_a(
// STEP-GPU: gpu.func @bwd_a(
// STEP-GPU: gpu.func @fwd_b(
// STEP-GPU: gpu.func @bwd_b(
// STEP-GPU-NOT: "tile.
