// RUN: attn-opt %s --attn-tile --lower-tile-to-cpu | FileCheck %s
// RUN: attn-opt %s --attn-tile --lower-tile-to-cpu --attn-cpu-to-llvm | FileCheck %s --check-prefix=LLVM

// A GEMM kernel (attn-tile on linalg.matmul) on the CPU: the entry loops
// over the 3 x 2 grid of 64 x 64 output tiles; the CTA function keeps its
// tiles on the stack. A and B tiles are read through windows bounded in rows
// and columns (zeros past 130 x 50 and 50 x 70), widened from bf16; the K
// loop runs 2 steps of 32 with fma; the store drops what falls past 130 x 70
// and rounds once to bf16. No tile op or tile attribute is left.
// CHECK-LABEL: func.func @gemm(
// CHECK-SAME: %[[A:.*]]: memref<130x50xbf16>, %[[B:.*]]: memref<50x70xbf16>, %[[C:.*]]: memref<130x70xbf16>)
// CHECK-DAG: %[[GX:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[GY:.*]] = arith.constant 2 : index
// CHECK: scf.for %[[Y:.*]] = %{{.*}} to %[[GY]]
// CHECK: scf.for %[[X:.*]] = %{{.*}} to %[[GX]]
// CHECK: func.call @gemm__cta(%[[A]], %[[B]], %[[C]], %[[X]], %[[Y]], %{{.*}})
// CHECK-LABEL: func.func private @gemm__cta(
// CHECK-NOT: tile.
// CHECK: memref.alloca() : memref<64x32xf32>
// CHECK: memref.alloca() : memref<32x64xf32>
// CHECK: memref.alloca() : memref<64x64xf32>
// CHECK: %[[ROWS:.*]] = arith.constant 130 : index
// CHECK: %[[COLS:.*]] = arith.constant 50 : index
// CHECK: %[[R:.*]] = arith.cmpi ult, %{{.*}}, %[[ROWS]] : index
// CHECK: %[[CC:.*]] = arith.cmpi ult, %{{.*}}, %[[COLS]] : index
// CHECK: %[[IN:.*]] = arith.andi %[[R]], %[[CC]] : i1
// CHECK: scf.if %[[IN]] -> (f32)
// CHECK: memref.load %[[A]][%{{.*}}, %{{.*}}] : memref<130x50xbf16>
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: memref.load %[[B]][%{{.*}}, %{{.*}}] : memref<50x70xbf16>
// CHECK: math.fma
// CHECK: arith.andi
// CHECK: scf.if
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: memref.store %{{.*}}, %[[C]][%{{.*}}, %{{.*}}] : memref<130x70xbf16>
// CHECK-NOT: "tile.

// LLVM: llvm.func @gemm(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// LLVM: llvm.func @gemm__cta(
// LLVM-NOT: memref.
// LLVM-NOT: scf.
func.func @gemm(%a: tensor<130x50xbf16>, %b: tensor<50x70xbf16>) -> tensor<130x70xbf16> {
  %zero = arith.constant 0.0 : bf16
  %empty = tensor.empty() : tensor<130x70xbf16>
  %init = linalg.fill ins(%zero : bf16) outs(%empty : tensor<130x70xbf16>) -> tensor<130x70xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<130x50xbf16>, tensor<50x70xbf16>) outs(%init : tensor<130x70xbf16>) -> tensor<130x70xbf16>
  return %c : tensor<130x70xbf16>
}
