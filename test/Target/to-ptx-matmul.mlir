// RUN: attn-translate --to-ptx %s | FileCheck %s
// RUN: attn-translate --to-ptx %s -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS %}
// RUN: attn-translate --to-manifest %s | FileCheck %s --check-prefix=MANIFEST
// RUN: attn-translate --to-manifest %S/../Inputs/matmul_bf16.mlir | FileCheck %s --check-prefix=AUTO
// RUN: attn-translate --to-manifest --tile-options="kernel=hopper block-n=256" %S/../Inputs/matmul_bf16.mlir | FileCheck %s --check-prefix=WIDE
// RUN: attn-translate --to-manifest --tile-options="block-n=256,kernel=hopper" %S/../Inputs/matmul_bf16.mlir | FileCheck %s --check-prefix=WIDE
// RUN: attn-translate --to-manifest --kernel=plain %S/../Inputs/matmul_bf16.mlir | FileCheck %s --check-prefix=PLAIN
// RUN: attn-translate --to-manifest --chip=sm_80 %S/../Inputs/matmul_bf16.mlir | FileCheck %s --check-prefix=PLAIN

// A linalg.matmul program goes through attn-tile and a GPU lowering on its
// way to PTX. Here K = 50 and N = 70 are not multiples of 8, which the
// Hopper GEMM's TMA strides need, so even on sm_90a the driver takes the
// plain path: one entry with a pointer per matrix, f32 tiles in shared
// memory, fma, barriers between the tile loops.
// CHECK: .target sm_90a
// CHECK: .visible .entry tails(
// CHECK-COUNT-3: .param .u64 .ptr
// CHECK: .maxntid 128, 1, 1
// CHECK: bar.sync
// CHECK: fma.rn.f32

// PTXAS: Compiling entry function 'tails' for 'sm_90a'
// PTXAS: 0 bytes spill stores, 0 bytes spill loads

// The manifest says what the kernel computes ("matmul", from tile.matmul)
// and names the parameters a, b, c.
// MANIFEST: "name": "tails"
// MANIFEST: "grid": [3, 2, 1]
// MANIFEST: "block": [128, 1, 1]
// MANIFEST: "static_shared_bytes": 32768
// MANIFEST: "matmul": {
// MANIFEST-NEXT: "accumulate": false,
// MANIFEST-NEXT: "block_k": 32,
// MANIFEST-NEXT: "block_m": 64,
// MANIFEST-NEXT: "block_n": 64,
// MANIFEST-NEXT: "k": 50,
// MANIFEST-NEXT: "m": 130,
// MANIFEST-NEXT: "n": 70
// MANIFEST: "name": "a",
// MANIFEST-NEXT: "kind": "ptr",
// MANIFEST-NEXT: "dtype": "bf16",
// MANIFEST-NEXT: "shape": [130, 50]
// MANIFEST: "name": "b",
// MANIFEST: "name": "c",
// MANIFEST-NEXT: "kind": "ptr",
// MANIFEST-NEXT: "dtype": "bf16",
// MANIFEST-NEXT: "shape": [130, 70]

// A bf16 GEMM the Hopper GEMM computes takes it on sm_90a by default
// (attn-tile's kernel=hopper tiles: 128 rows, K steps of 64, and here 64
// columns, as 256 x 512 has too few wider tiles to fill the GPU), and the
// plain path when asked or on another chip. Tile options that name
// kernel=hopper keep the Hopper path: block-n=256 the wide tile (options
// separated by spaces or commas, as attn-tile reads them).
// AUTO: "name": "gemm"
// AUTO: "kernel": "hopper-gemm"
// AUTO: "block_k": 64,
// AUTO-NEXT: "block_m": 128,
// AUTO-NEXT: "block_n": 64,
// WIDE: "kernel": "hopper-gemm"
// WIDE: "block_n": 256,
// PLAIN: "name": "gemm"
// PLAIN: "block": [128, 1, 1]
// PLAIN-NOT: hopper-gemm
// PLAIN: "block_m": 64,
// PLAIN-NEXT: "block_n": 64,
func.func @tails(%a: tensor<130x50xbf16>, %b: tensor<50x70xbf16>) -> tensor<130x70xbf16> {
  %zero = arith.constant 0.0 : bf16
  %empty = tensor.empty() : tensor<130x70xbf16>
  %init = linalg.fill ins(%zero : bf16) outs(%empty : tensor<130x70xbf16>) -> tensor<130x70xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<130x50xbf16>, tensor<50x70xbf16>) outs(%init : tensor<130x70xbf16>) -> tensor<130x70xbf16>
  return %c : tensor<130x70xbf16>
}
