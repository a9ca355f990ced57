// RUN: attn-opt --attn-fuse --tile %S/../Inputs/f64_programs.mlir | FileCheck %s
// RUN: attn-opt --attn-fuse --attn-grad --tile %S/../Inputs/f64_programs.mlir | FileCheck %s --check-prefix=GRAD
// RUN: attn-opt --attn-fuse --tile --lower-tile-to-cpu %S/../Inputs/f64_programs.mlir | FileCheck %s --check-prefix=CPU
// RUN: attn-opt --attn-fuse --tile --lower-tile-to-cpu --attn-cpu-to-llvm %S/../Inputs/f64_programs.mlir | FileCheck %s --check-prefix=LLVM
// RUN: attn-opt --lower-tile-to-cpu %s | FileCheck %s --check-prefix=MOD
//
// An f64 program (issue 29: gradcheck in float64 on the CPU path) computes
// in f64 throughout: attn-tile makes f64 tiles, softmax state and
// constants, its score bodies take and yield f64, the gate and captures stay
// f64; attn-grad's lse is f64 (f32 for f32, f16 and bf16 programs:
// attn-grad.mlir) and so are the backward kernels' tiles; the CPU loops and
// their LLVM IR compute in double. f32, f16 and bf16 programs are tiled as
// before (their tile IR and PTX are byte-identical).

// CHECK-LABEL: func.func @rope_causal_f64(
// CHECK-SAME: %{{.*}}: memref<2x2x45x16xf64>, %{{.*}}: memref<2x2x45x16xf64>, %{{.*}}: memref<2x2x45x16xf64>, %{{.*}}: memref<2x2x45x16xf64>)
// CHECK: "tile.alloc"() : () -> memref<64x16xf64>
// CHECK: "tile.alloc"() : () -> memref<64x64xf64>
// CHECK: %[[M:.*]] = "tile.alloc"() : () -> memref<64xf64>
// CHECK: "tile.load"(%{{.*}}) : (memref<2x2x45x16xf64>, memref<64x16xf64>, index, index, index) -> ()
// CHECK: "tile.fill"(%[[M]]) {value = 0xFFF0000000000000 : f64} : (memref<64xf64>) -> ()
// CHECK: "tile.mma"({{.*}}) {{.*}}: (memref<64x16xf64>, memref<64x16xf64>, memref<64x64xf64>) -> ()
// CHECK: "tile.softmax_update"({{.*}}) {scale = 2.500000e-01 : f64} : (memref<64x64xf64>, memref<64xf64>, memref<64xf64>, memref<64x16xf64>) -> ()
// CHECK: "tile.store"({{.*}}) : (memref<64x16xf64>, memref<2x2x45x16xf64>, index, index, index) -> ()

// Softcap's body: an f64 score, the cap an f64 constant.
// CHECK-LABEL: func.func @softcap_f64(
// CHECK: "tile.score_fn"
// CHECK-NEXT: ^bb0(%{{.*}}: f64, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT: arith.constant 2.000000e+00 : f64
// CHECK: math.tanh %{{.*}} : f64
// CHECK: gpu.yield %{{.*}} : f64

// ALiBi's slope in f64, the gate's f64 bias, the score_mod body's f64
// capture.
// CHECK-LABEL: func.func @alibi_gate_fn_f64(
// CHECK-SAME: memref<1x2x24x3xf64>, %{{.*}}: memref<2xf64>
// CHECK: arith.uitofp %{{.*}} : i64 to f64
// CHECK: arith.sitofp %{{.*}} : i64 to f64
// CHECK: memref.load %{{.*}} : memref<1x2x24x3xf64>
// CHECK: memref.load %{{.*}} : memref<2xf64>
// CHECK: "tile.mask_fn"

// GRAD-LABEL: func.func @rope_causal_f64(
// GRAD-SAME: %{{.*}}: memref<2x2x45x16xf64>, %{{.*}}: memref<2x2x45xf64>)
// GRAD-NOT: func.func
// GRAD: "tile.row_lse"(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<64xf64>, memref<64xf64>, memref<64xf64>) -> ()
// GRAD: "tile.store"(%{{.*}}) : (memref<64xf64>, memref<2x2x45xf64>, index, index, index) -> ()
// GRAD-LABEL: func.func @rope_causal_f64__grad__dkdv(
// GRAD-SAME: %{{.*}}: memref<2x2x45xf64>
// GRAD: "tile.exp_lse"({{.*}}) {{.*}}: (memref<{{[0-9]+}}x{{[0-9]+}}xf64>, memref<{{[0-9]+}}xf64>) -> ()
// GRAD: "tile.ds"({{.*}}) {{.*}}: (memref<{{[0-9]+}}x{{[0-9]+}}xf64>, memref<{{[0-9]+}}x{{[0-9]+}}xf64>, memref<{{[0-9]+}}xf64>) -> ()
// GRAD: "tile.rope"({{.*}}) {inverse = true
// GRAD-LABEL: func.func @rope_causal_f64__grad__dq(
// GRAD: "tile.row_dot"({{.*}}) : (memref<{{[0-9]+}}x16xf64>, memref<{{[0-9]+}}x16xf64>, memref<{{[0-9]+}}xf64>) -> ()
// GRAD-LABEL: func.func @softcap_f64__grad__dkdv(
// GRAD: "tile.score_fn_grad"
// GRAD-NEXT: ^bb0(%{{.*}}: f64,
// GRAD: gpu.yield %{{.*}} : f64

// The loops: f64 loads and arithmetic; the softmax's exp2 factor is
// scale * log2(e) in double (0.360673755 as an f32).
// CPU-LABEL: func.func private @rope_causal_f64__cta(
// CPU: memref.alloca() : memref<64x16xf64>
// CPU: math.cos %{{.*}} : f64
// CPU: arith.constant 0.36067376022224085 : f64
// CPU: math.exp2 %{{.*}} : f64

// LLVM-LABEL: llvm.func @rope_causal_f64__cta(
// LLVM: llvm.intr.exp2(%{{.*}}) : (f64) -> f64
// LLVM-LABEL: llvm.func @softcap_f64__cta(
// LLVM: llvm.intr.tanh(%{{.*}}) : (f64) -> f64

// tile.score_mod on an f64 tile: the scale and ALiBi's slope in f64, and
// softcap by math.tanh (libm's tanh), not the f32 loops' exp form and
// series, which are within 3e-7 of tanh only.
// MOD-LABEL: func.func private @score_mod_f64__cta(
// MOD: arith.constant 5.000000e-01 : f64
// MOD: arith.uitofp %{{.*}} : i64 to f64
// MOD: %[[X:.*]] = memref.load %{{.*}} : memref<16x16xf64>
// MOD: %[[S:.*]] = arith.mulf %[[X]], %{{.*}} : f64
// MOD: %[[T:.*]] = arith.mulf %[[S]], %{{.*}} : f64
// MOD-NEXT: %[[H:.*]] = math.tanh %[[T]] : f64
// MOD-NEXT: arith.mulf %[[H]], %{{.*}} : f64
// MOD-NOT: math.copysign
// MOD: arith.sitofp %{{.*}} : i64 to f64
func.func @score_mod_f64(%s: memref<16x16xf64>) attributes {tile.kernel, tile.grid = array<i64: 1, 1, 1>, tile.threads = 128 : i64} {
  %c0 = arith.constant 0 : index
  %t = "tile.alloc"() : () -> memref<16x16xf64>
  "tile.score_mod"(%t, %c0, %c0, %c0, %c0) {mods = ["scale", "softcap", "alibi"], scale = 0.5 : f64, softcap = 30.0 : f64, alibi = 8.0 : f64, heads = 4 : i64} : (memref<16x16xf64>, index, index, index, index) -> ()
  return
}
