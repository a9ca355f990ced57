// RUN: attn-opt %S/../Inputs/hopper/h256_lse_rope_gqa.mlir --attn-tile=kernel=hopper --lower-tile-to-hopper | FileCheck %s --check-prefix=IR
// RUN: attn-opt %S/../Inputs/hopper/h128_rope_causal.mlir --attn-fuse --attn-grad --attn-tile=kernel=mma --lower-tile-to-mma="chip=sm_80" | FileCheck %s --check-prefix=MMA
// RUN: attn-opt %S/../Inputs/hopper/h256_softcap_window_partial.mlir --attn-fuse --attn-grad --attn-tile=kernel=hopper --lower-tile-to-hopper=grad-fallback=true | FileCheck %s --check-prefix=BWD
// RUN: not attn-opt %S/../Inputs/hopper/h256_softcap_window_partial.mlir --attn-fuse --attn-grad --attn-tile=kernel=hopper --lower-tile-to-hopper 2>&1 | FileCheck %s --check-prefix=BWD-ERR
// RUN: attn-opt %S/../Inputs/hopper/h64_causal.mlir --attn-fuse --attn-grad --attn-tile=kernel=hopper --lower-tile-to-hopper | FileCheck %s --check-prefix=HBWD
// RUN: attn-opt %s --split-input-file --verify-diagnostics --lower-tile-to-hopper
// RUN: not attn-opt %s --split-input-file --lower-tile-to-mma="chip=sm_80" 2>&1 | FileCheck %s --check-prefix=MMA-ERR

// The forward of a backward (attn-grad's attn.fused with lse, issue 29):
// the tile kernel's argument lse after out (tile.attention's lse = true,
// tile.row_lse and its store at the end) becomes one pointer parameter more
// after out, in the manifest ([B, H, N] f32) and the launch program's inputs
// and steps; each row's (m + log2 l) ln 2 by lg2.approx, stored by a
// predicated st.global.f32 (lane 0 of the quad). Head dim 256, GQA, RoPE
// split (the program: rotation, then attention). The mma.sync kernel
// (sm_80) the same; it builds the backward's kernels (tile.attention_grad)
// as the mma.sync backward (lower-tile-to-mma-grad.mlir; before, it left
// them to lower-tile-to-gpu). lower-tile-to-hopper builds the
// backward where the Hopper backward computes it (h64_causal: __pre,
// __main, __dq_out, __dk_out) and otherwise (RoPE over part of the head)
// fails, or with
// grad-fallback=true leaves it to lower-tile-to-gpu, the forward still
// held to the Hopper kernel. It used to be refused: the argument lse was neither q, k, v,
// out nor a capture ("the kernel does not take exactly (q, k, v, out)").
// IR: attn.programs = [{inputs = ["q", "k", "v", "out", "lse"], name = "h256_lse_rope_gqa", steps = [{args = ["k", "k_rot"], kernel = "h256_lse_rope_gqa__rope_k"}, {args = ["q", "k_rot", "v", "out", "lse"], kernel = "h256_lse_rope_gqa__attn"}]
// IR: llvm.func @h256_lse_rope_gqa__attn(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: !llvm.ptr, %arg4: !llvm.ptr, %arg5: !llvm.ptr {llvm.align = 64 : i64, llvm.byval
// IR-SAME: {align = 16 : i64, dtype = "bf16", kind = "ptr", name = "out", shape = array<i64: 1, 4, 200, 256>}, {align = 4 : i64, dtype = "f32", kind = "ptr", name = "lse", shape = array<i64: 1, 4, 200>}, {box
// IR: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// IR: llvm.inline_asm has_side_effects "{ .reg .pred p; setp.ne.b32 p, $2, 0; @p st.global.f32 [$0], $1; }"
// IR: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// IR: llvm.inline_asm has_side_effects "{ .reg .pred p; setp.ne.b32 p, $2, 0; @p st.global.f32 [$0], $1; }"
// MMA-NOT: func.func @h128_rope_causal__grad__dkdv(
// MMA: llvm.func @h128_rope_causal(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: !llvm.ptr, %arg4: !llvm.ptr)
// MMA-SAME: kernel = "mma-sync", params = [{{.*}}{align = 4 : i64, dtype = "f32", kind = "ptr", name = "lse", shape = array<i64: 1, 4, 300>}]
// MMA: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// MMA: llvm.store
// MMA: llvm.call_intrinsic "llvm.nvvm.lg2.approx.ftz.f"
// MMA: llvm.func @h128_rope_causal__grad__main(
// MMA-SAME: kernel = "mma-sync-bwd"
// BWD: func.func @h256_softcap_window_partial__grad__dkdv({{.*}} tile.attention_grad = {{.*}} tile.kernel, tile.threads = 128 : i64}
// BWD: func.func @h256_softcap_window_partial__grad__dq(
// BWD: llvm.func @h256_softcap_window_partial(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: !llvm.ptr, %arg4: !llvm.ptr, %arg5: !llvm.ptr {llvm.align = 64
// BWD-ERR: error: no Hopper backward for 'h256_softcap_window_partial__grad__dkdv': the Hopper backward's RoPE needs rotary_dim equal to the head dim
// HBWD-DAG: llvm.func @h64_causal(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, %arg3: !llvm.ptr, %arg4: !llvm.ptr, %arg5: !llvm.ptr {llvm.align = 64
// HBWD-DAG: llvm.func @h64_causal__grad__pre(
// HBWD-DAG: llvm.func @h64_causal__grad__main(
// HBWD-DAG: llvm.func @h64_causal__grad__dq_out(
// HBWD-DAG: llvm.func @h64_causal__grad__dk_out(
// HBWD-NOT: tile.attention_grad

// Tile kernels that are not what attn-tile writes for lse: the argument
// without tile.attention's lse, lse of another shape, lse without
// tile.row_lse. The mma.sync kernel refuses them for the same reasons.
// MMA-ERR: error: no mma.sync kernel for 'no_lse_attr': tile.attention's lse must be set exactly when the kernel takes an argument lse
// MMA-ERR: error: no mma.sync kernel for 'lse_shape': the mma.sync kernel writes lse as f32 [batch, heads, rows]
// MMA-ERR: error: no mma.sync kernel for 'no_row_lse': the kernel is not the attention tile program attn-tile writes

// expected-error@+1 {{no Hopper kernel for 'no_lse_attr': tile.attention's lse must be set exactly when the kernel takes an argument lse}}
func.func @no_lse_attr(%arg0: memref<1x1x128x64xbf16>, %arg1: memref<1x1x128x64xbf16>, %arg2: memref<1x1x128x64xbf16>, %arg3: memref<1x1x128x64xbf16>, %arg4: memref<1x1x128xf32>) attributes {tile.arg_names = ["q", "k", "v", "out", "lse"], tile.attention = {causal = false, mods = ["scale"], scale = 1.250000e-01 : f64}, tile.grid = array<i64: 1, 1, 1>, tile.kernel, tile.threads = 384 : i64} {
  %0 = "tile.program_id"() {dim = 0 : i64} : () -> index
  %1 = "tile.program_id"() {dim = 1 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1_0 = arith.constant 1 : index
  %c1_1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %c128_2 = arith.constant 128 : index
  %2 = arith.divui %1, %c1_0 : index
  %3 = arith.remui %1, %c1_0 : index
  %4 = arith.divui %3, %c1_1 : index
  %5 = arith.muli %0, %c128 : index
  %6 = "tile.alloc"() : () -> memref<128x64xf32>
  %7 = "tile.alloc"() : () -> memref<128x64xf32>
  %8 = "tile.alloc"() : () -> memref<128x64xf32>
  %9 = "tile.alloc"() : () -> memref<128x128xf32>
  %10 = "tile.alloc"() : () -> memref<128x64xf32>
  %11 = "tile.alloc"() : () -> memref<128xf32>
  %12 = "tile.alloc"() : () -> memref<128xf32>
  %13 = "tile.alloc"() : () -> memref<128xf32>
  "tile.load"(%arg0, %6, %2, %3, %5) : (memref<1x1x128x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
  "tile.fill"(%10) {value = 0.000000e+00 : f32} : (memref<128x64xf32>) -> ()
  "tile.fill"(%11) {value = 0xFF800000 : f32} : (memref<128xf32>) -> ()
  "tile.fill"(%12) {value = 0.000000e+00 : f32} : (memref<128xf32>) -> ()
  %c1_3 = arith.constant 1 : index
  scf.for %arg5 = %c0 to %c1_3 step %c1 {
    %14 = arith.muli %arg5, %c128_2 : index
    "tile.load"(%arg1, %7, %2, %4, %14) : (memref<1x1x128x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
    "tile.load"(%arg2, %8, %2, %4, %14) : (memref<1x1x128x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
    "tile.mma"(%6, %7, %9) {accumulate = false, transpose_b = true} : (memref<128x64xf32>, memref<128x64xf32>, memref<128x128xf32>) -> ()
    "tile.mask"(%9, %5, %14) {causal = false, kv_len = 128 : i64} : (memref<128x128xf32>, index, index) -> ()
    "tile.softmax_update"(%9, %11, %12, %10) {scale = 1.250000e-01 : f64} : (memref<128x128xf32>, memref<128xf32>, memref<128xf32>, memref<128x64xf32>) -> ()
    "tile.mma"(%9, %8, %10) {accumulate = true, transpose_b = false} : (memref<128x128xf32>, memref<128x64xf32>, memref<128x64xf32>) -> ()
  }
  "tile.normalize"(%10, %12) : (memref<128x64xf32>, memref<128xf32>) -> ()
  "tile.store"(%10, %arg3, %2, %3, %5) : (memref<128x64xf32>, memref<1x1x128x64xbf16>, index, index, index) -> ()
  "tile.row_lse"(%11, %12, %13) : (memref<128xf32>, memref<128xf32>, memref<128xf32>) -> ()
  "tile.store"(%13, %arg4, %2, %3, %5) : (memref<128xf32>, memref<1x1x128xf32>, index, index, index) -> ()
  return
}

// -----

// expected-error@+1 {{no Hopper kernel for 'lse_shape': the Hopper kernel writes lse as f32 [batch, heads, rows]}}
func.func @lse_shape(%arg0: memref<1x1x128x64xbf16>, %arg1: memref<1x1x128x64xbf16>, %arg2: memref<1x1x128x64xbf16>, %arg3: memref<1x1x128x64xbf16>, %arg4: memref<1x1x64xf32>) attributes {tile.arg_names = ["q", "k", "v", "out", "lse"], tile.attention = {causal = false, lse = true, mods = ["scale"], scale = 1.250000e-01 : f64}, tile.grid = array<i64: 1, 1, 1>, tile.kernel, tile.threads = 384 : i64} {
  %0 = "tile.program_id"() {dim = 0 : i64} : () -> index
  %1 = "tile.program_id"() {dim = 1 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1_0 = arith.constant 1 : index
  %c1_1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %c128_2 = arith.constant 128 : index
  %2 = arith.divui %1, %c1_0 : index
  %3 = arith.remui %1, %c1_0 : index
  %4 = arith.divui %3, %c1_1 : index
  %5 = arith.muli %0, %c128 : index
  %6 = "tile.alloc"() : () -> memref<128x64xf32>
  %7 = "tile.alloc"() : () -> memref<128x64xf32>
  %8 = "tile.alloc"() : () -> memref<128x64xf32>
  %9 = "tile.alloc"() : () -> memref<128x128xf32>
  %10 = "tile.alloc"() : () -> memref<128x64xf32>
  %11 = "tile.alloc"() : () -> memref<128xf32>
  %12 = "tile.alloc"() : () -> memref<128xf32>
  %13 = "tile.alloc"() : () -> memref<128xf32>
  "tile.load"(%arg0, %6, %2, %3, %5) : (memref<1x1x128x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
  "tile.fill"(%10) {value = 0.000000e+00 : f32} : (memref<128x64xf32>) -> ()
  "tile.fill"(%11) {value = 0xFF800000 : f32} : (memref<128xf32>) -> ()
  "tile.fill"(%12) {value = 0.000000e+00 : f32} : (memref<128xf32>) -> ()
  %c1_3 = arith.constant 1 : index
  scf.for %arg5 = %c0 to %c1_3 step %c1 {
    %14 = arith.muli %arg5, %c128_2 : index
    "tile.load"(%arg1, %7, %2, %4, %14) : (memref<1x1x128x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
    "tile.load"(%arg2, %8, %2, %4, %14) : (memref<1x1x128x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
    "tile.mma"(%6, %7, %9) {accumulate = false, transpose_b = true} : (memref<128x64xf32>, memref<128x64xf32>, memref<128x128xf32>) -> ()
    "tile.mask"(%9, %5, %14) {causal = false, kv_len = 128 : i64} : (memref<128x128xf32>, index, index) -> ()
    "tile.softmax_update"(%9, %11, %12, %10) {scale = 1.250000e-01 : f64} : (memref<128x128xf32>, memref<128xf32>, memref<128xf32>, memref<128x64xf32>) -> ()
    "tile.mma"(%9, %8, %10) {accumulate = true, transpose_b = false} : (memref<128x128xf32>, memref<128x64xf32>, memref<128x64xf32>) -> ()
  }
  "tile.normalize"(%10, %12) : (memref<128x64xf32>, memref<128xf32>) -> ()
  "tile.store"(%10, %arg3, %2, %3, %5) : (memref<128x64xf32>, memref<1x1x128x64xbf16>, index, index, index) -> ()
  "tile.row_lse"(%11, %12, %13) : (memref<128xf32>, memref<128xf32>, memref<128xf32>) -> ()
  "tile.store"(%13, %arg4, %2, %3, %5) : (memref<128xf32>, memref<1x1x64xf32>, index, index, index) -> ()
  return
}

// -----

// expected-error@+1 {{no Hopper kernel for 'no_row_lse': the kernel is not the attention tile program attn-tile writes}}
func.func @no_row_lse(%arg0: memref<1x1x128x64xbf16>, %arg1: memref<1x1x128x64xbf16>, %arg2: memref<1x1x128x64xbf16>, %arg3: memref<1x1x128x64xbf16>, %arg4: memref<1x1x128xf32>) attributes {tile.arg_names = ["q", "k", "v", "out", "lse"], tile.attention = {causal = false, lse = true, mods = ["scale"], scale = 1.250000e-01 : f64}, tile.grid = array<i64: 1, 1, 1>, tile.kernel, tile.threads = 384 : i64} {
  %0 = "tile.program_id"() {dim = 0 : i64} : () -> index
  %1 = "tile.program_id"() {dim = 1 : i64} : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1_0 = arith.constant 1 : index
  %c1_1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %c128_2 = arith.constant 128 : index
  %2 = arith.divui %1, %c1_0 : index
  %3 = arith.remui %1, %c1_0 : index
  %4 = arith.divui %3, %c1_1 : index
  %5 = arith.muli %0, %c128 : index
  %6 = "tile.alloc"() : () -> memref<128x64xf32>
  %7 = "tile.alloc"() : () -> memref<128x64xf32>
  %8 = "tile.alloc"() : () -> memref<128x64xf32>
  %9 = "tile.alloc"() : () -> memref<128x128xf32>
  %10 = "tile.alloc"() : () -> memref<128x64xf32>
  %11 = "tile.alloc"() : () -> memref<128xf32>
  %12 = "tile.alloc"() : () -> memref<128xf32>
  %13 = "tile.alloc"() : () -> memref<128xf32>
  "tile.load"(%arg0, %6, %2, %3, %5) : (memref<1x1x128x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
  "tile.fill"(%10) {value = 0.000000e+00 : f32} : (memref<128x64xf32>) -> ()
  "tile.fill"(%11) {value = 0xFF800000 : f32} : (memref<128xf32>) -> ()
  "tile.fill"(%12) {value = 0.000000e+00 : f32} : (memref<128xf32>) -> ()
  %c1_3 = arith.constant 1 : index
  scf.for %arg5 = %c0 to %c1_3 step %c1 {
    %14 = arith.muli %arg5, %c128_2 : index
    "tile.load"(%arg1, %7, %2, %4, %14) : (memref<1x1x128x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
    "tile.load"(%arg2, %8, %2, %4, %14) : (memref<1x1x128x64xbf16>, memref<128x64xf32>, index, index, index) -> ()
    "tile.mma"(%6, %7, %9) {accumulate = false, transpose_b = true} : (memref<128x64xf32>, memref<128x64xf32>, memref<128x128xf32>) -> ()
    "tile.mask"(%9, %5, %14) {causal = false, kv_len = 128 : i64} : (memref<128x128xf32>, index, index) -> ()
    "tile.softmax_update"(%9, %11, %12, %10) {scale = 1.250000e-01 : f64} : (memref<128x128xf32>, memref<128xf32>, memref<128xf32>, memref<128x64xf32>) -> ()
    "tile.mma"(%9, %8, %10) {accumulate = true, transpose_b = false} : (memref<128x128xf32>, memref<128x64xf32>, memref<128x64xf32>) -> ()
  }
  "tile.normalize"(%10, %12) : (memref<128x64xf32>, memref<128xf32>) -> ()
  "tile.store"(%10, %arg3, %2, %3, %5) : (memref<128x64xf32>, memref<1x1x128x64xbf16>, index, index, index) -> ()
  return
}
