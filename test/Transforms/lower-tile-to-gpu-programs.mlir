// RUN: attn-opt %s --lower-tile-to-gpu="chip=sm_80" | FileCheck %s
// RUN: attn-translate --to-manifest --kernel=plain --chip=sm_80 %s | FileCheck %s --check-prefix=MANIFEST

// lower-tile-to-gpu moves attn-tile's launch programs (tile.programs, here
// a backward's f__grad running its two kernels in order) into the
// gpu.module's attn.programs, as lower-tile-to-hopper does, so that the
// plain path's manifest has the program too (issue 29).
// CHECK-LABEL: module attributes {gpu.container_module} {
// CHECK: gpu.module @attn_kernels [#nvvm.target<O = 3, chip = "sm_80", features = "+ptx70">] attributes {attn.programs = [{inputs = ["x", "y"], name = "f__grad", steps = [{args = ["x", "y"], kernel = "f__grad__dkdv"}, {args = ["y", "x"], kernel = "f__grad__dq"}], workspace = []}]} {
// CHECK: gpu.func @f__grad__dkdv(
// CHECK: gpu.func @f__grad__dq(
// CHECK-NOT: tile.programs
// MANIFEST: "programs": [{
// MANIFEST-NEXT: "inputs": ["x", "y"],
// MANIFEST-NEXT: "name": "f__grad",
// MANIFEST: "kernel": "f__grad__dkdv"
// MANIFEST: "kernel": "f__grad__dq"
// MANIFEST: "kernels": [{
module attributes {tile.programs = [{name = "f__grad", inputs = ["x", "y"], workspace = [], steps = [{kernel = "f__grad__dkdv", args = ["x", "y"]}, {kernel = "f__grad__dq", args = ["y", "x"]}]}]} {
  func.func @f__grad__dkdv(%x: memref<1x1x12xf32>, %y: memref<1x1x12xf32>) attributes {tile.arg_names = ["x", "y"], tile.grid = array<i64: 1, 1, 1>, tile.kernel, tile.threads = 32 : i64} {
    %c0 = arith.constant 0 : index
    %t = "tile.alloc"() : () -> memref<16xf32>
    "tile.load"(%x, %t, %c0, %c0, %c0) : (memref<1x1x12xf32>, memref<16xf32>, index, index, index) -> ()
    "tile.store"(%t, %y, %c0, %c0, %c0) : (memref<16xf32>, memref<1x1x12xf32>, index, index, index) -> ()
    return
  }
  func.func @f__grad__dq(%y: memref<1x1x12xf32>, %x: memref<1x1x12xf32>) attributes {tile.arg_names = ["y", "x"], tile.grid = array<i64: 1, 1, 1>, tile.kernel, tile.threads = 32 : i64} {
    %c0 = arith.constant 0 : index
    %t = "tile.alloc"() : () -> memref<16xf32>
    "tile.load"(%y, %t, %c0, %c0, %c0) : (memref<1x1x12xf32>, memref<16xf32>, index, index, index) -> ()
    "tile.store"(%t, %x, %c0, %c0, %c0) : (memref<16xf32>, memref<1x1x12xf32>, index, index, index) -> ()
    return
  }
}
