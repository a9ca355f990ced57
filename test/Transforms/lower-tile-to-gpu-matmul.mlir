// RUN: attn-opt %s --attn-tile --lower-tile-to-gpu | FileCheck %s
// RUN: not attn-opt %s --attn-tile="block-m=128 block-n=64 block-k=32" --lower-tile-to-gpu 2>&1 | FileCheck %s --check-prefix=BIG

// A GEMM kernel (attn-tile on linalg.matmul) on the plain GPU path: one
// gpu.func over the 3 x 2 grid, the A, B and C tiles in shared memory
// (32 KiB), tile.matmul carried to the manifest as attn.matmul, the tile ops
// as loops over the CTA's threads with a barrier after each: the C fill, then
// per K step the two masked loads and the product, then the store.
// CHECK: gpu.module @attn_kernels
// CHECK: gpu.func @gemm(%[[A:.*]]: memref<130x50xbf16>, %[[B:.*]]: memref<50x70xbf16>, %[[C:.*]]: memref<130x70xbf16>)
// CHECK-SAME: workgroup(%[[AT:.*]] : memref<64x32xf32, #gpu.address_space<workgroup>>, %[[BT:.*]] : memref<32x64xf32, #gpu.address_space<workgroup>>, %[[CT:.*]] : memref<64x64xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: kernel attributes {attn.arg_names = ["a", "b", "c"], attn.matmul = {accumulate = false, block_k = 32 : i64, block_m = 64 : i64, block_n = 64 : i64, k = 50 : i64, m = 130 : i64, n = 70 : i64}, known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 3, 2, 1>}
// CHECK: %[[BX:.*]] = gpu.block_id x
// CHECK: %[[BY:.*]] = gpu.block_id y
// CHECK: arith.muli %[[BX]]
// CHECK: arith.muli %[[BY]]
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[NT:.*]] = gpu.block_dim x
// CHECK: scf.for %{{.*}} = %[[TID]] to %{{.*}} step %[[NT]]
// CHECK: memref.store %{{.*}}, %[[CT]]
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: arith.andi
// CHECK: memref.load %[[A]]
// CHECK: memref.store %{{.*}}, %[[AT]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[B]]
// CHECK: memref.store %{{.*}}, %[[BT]]
// CHECK: gpu.barrier
// CHECK: math.fma
// CHECK: gpu.barrier
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: memref.store %{{.*}}, %[[C]]
// CHECK: gpu.barrier
// CHECK-NOT: "tile.
// CHECK-NOT: func.func

// 128 x 64 output tiles with 32-wide K steps need 4 * (128*32 + 32*64 +
// 128*64) = 57344 bytes of f32 tiles.
// BIG: error: tiles of 'gemm' need 57344 bytes of shared memory, more than the 49152 a CTA can address statically
func.func @gemm(%a: tensor<130x50xbf16>, %b: tensor<50x70xbf16>) -> tensor<130x70xbf16> {
  %zero = arith.constant 0.0 : bf16
  %empty = tensor.empty() : tensor<130x70xbf16>
  %init = linalg.fill ins(%zero : bf16) outs(%empty : tensor<130x70xbf16>) -> tensor<130x70xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<130x50xbf16>, tensor<50x70xbf16>) outs(%init : tensor<130x70xbf16>) -> tensor<130x70xbf16>
  return %c : tensor<130x70xbf16>
}
