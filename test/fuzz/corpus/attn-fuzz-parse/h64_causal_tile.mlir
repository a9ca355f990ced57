// h64_causal.mlir after attn-opt --attn-fuse --attn-tile=kernel=hopper: a tile
// kernel, for the C API's tile-level path to lower-tile-to-hopper (test/CAPI).
module {
  func.func @h64_causal(%arg0: memref<1x8x2048x64xbf16>, %arg1: memref<1x8x2048x64xbf16>, %arg2: memref<1x8x2048x64xbf16>, %arg3: memref<1x8x2048x64xbf16>) attributes {tile.arg_names = ["q", "k", "v", "out"], tile.attention = {causal = true, mods = ["scale"], scale = 1.250000e-01 : f64}, tile.grid = array<i64: 16, 8, 1>, tile.kernel, tile.threads = 384 : i64} {
    %0 = "tile.program_id"() {dim = 0 : i64} : () -> index
    %1 = "tile.program_id"() {dim = 1 : i64} : () -> index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c1_0 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c128_1 = arith.constant 128 : index
    %2 = arith.divui %1, %c8 : index
    %3 = arith.remui %1, %c8 : index
    %4 = arith.divui %3, %c1_0 : index
    %5 = arith.muli %0, %c128 : index
    %6 = "tile.alloc"() : () -> memref<128x64xf32>
    %7 = "tile.alloc"() : () -> memref<128x64xf32>
    %8 = "tile.alloc"() : () -> memref<128x64xf32>
    %9 = "tile.alloc"() : () -> memref<128x128xf32>
    %10 = "tile.alloc"() : () -> memref<128x64xf32>
    %11 = "tile.alloc"() : () -> memref<128xf32>
    %12 = "tile.alloc"() : () -> memref<128xf32>
    "tile.load"(%arg0, %6, %2, %3, %5) : (memref<1x8x2048x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
    "tile.fill"(%10) {value = 0.000000e+00 : f32} : (memref<128x64xf32>) -> ()
    "tile.fill"(%11) {value = 0xFF800000 : f32} : (memref<128xf32>) -> ()
    "tile.fill"(%12) {value = 0.000000e+00 : f32} : (memref<128xf32>) -> ()
    %c16 = arith.constant 16 : index
    %13 = arith.addi %5, %c128 : index
    %14 = arith.ceildivui %13, %c128_1 : index
    %15 = arith.minui %14, %c16 : index
    scf.for %arg4 = %c0 to %15 step %c1 {
      %16 = arith.muli %arg4, %c128_1 : index
      "tile.load"(%arg1, %7, %2, %4, %16) : (memref<1x8x2048x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.load"(%arg2, %8, %2, %4, %16) : (memref<1x8x2048x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
      "tile.mma"(%6, %7, %9) {accumulate = false, transpose_b = true} : (memref<128x64xf32>, memref<128x64xf32>, memref<128x128xf32>) -> ()
      "tile.mask"(%9, %5, %16) {causal = true, kv_len = 2048 : i64} : (memref<128x128xf32>, index, index) -> ()
      "tile.softmax_update"(%9, %11, %12, %10) {scale = 1.250000e-01 : f64} : (memref<128x128xf32>, memref<128xf32>, memref<128xf32>, memref<128x64xf32>) -> ()
      "tile.mma"(%9, %8, %10) {accumulate = true, transpose_b = false} : (memref<128x128xf32>, memref<128x64xf32>, memref<128x64xf32>) -> ()
    }
    "tile.normalize"(%10, %12) : (memref<128x64xf32>, memref<128xf32>) -> ()
    "tile.store"(%10, %arg3, %2, %3, %5) : (memref<128x64xf32>, memref<1x8x2048x64xbf16>, index, index, index) -> ()
    return
  }
}
