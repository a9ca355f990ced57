// RUN: attn-opt %s --split-input-file --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="persistent=true ctas=4" | FileCheck %s --check-prefix=PERSIST
// RUN: not attn-opt %s --split-input-file --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="rope=ahead" 2>&1 | FileCheck %s --check-prefix=AHEAD
// RUN: attn-opt %s --split-input-file --attn-tile=kernel=mma --lower-tile-to-mma | FileCheck %s --check-prefix=MMA

// Key lists made at run time (lib/Kernels/key_lists.c): a mask function
// that reads a tensor says nothing of its blocks at compile time, so the
// launch program runs @<name>__attn__key_lists first. It classifies every
// (query block, key block) within the affine bounds of @<name>__attn__keys
// into the workspace key_lists (one row per query block of each batch the
// body reads: 1 + key blocks i32), and the attention kernel reads each
// tile's list: its count, then 2 kb + full per visible block. Where the
// body compares a value of the row with a value of the key, their ranges
// over each block decide it first (disjoint: no key; one value: all keys);
// the other blocks are evaluated at every point. Without
// persistent= the kernel takes one CTA per tile (the lists shrink tiles
// unevenly), and rope=ahead, whose queue of key blocks does not follow
// them, is refused.

// A document mask over per-batch ids: the body reads b, so two batches of
// rows; 4 query blocks of 5 words (4 key blocks + the count) each.
// CHECK-LABEL: func.func private @doc_marker
// CHECK: attn.programs = [{inputs = ["q", "k", "v", "q_segments", "k_segments", "out"], name = "doc"
// CHECK-SAME: steps = [{args = ["q", "k", "v", "q_segments", "k_segments", "out", "key_lists"], kernel = "doc__attn__key_lists"}, {args = ["q", "k", "v", "q_segments", "k_segments", "out", "key_lists"], kernel = "doc__attn"}]
// CHECK-SAME: workspace = [{bytes = 160 : i64, name = "key_lists"}]
// CHECK: llvm.mlir.global internal constant @doc__attn__keys(dense<[0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0]>
// CHECK: llvm.func @doc__attn(
// CHECK-SAME: %arg6: !llvm.ptr {llvm.noalias, llvm.readonly}
// CHECK-SAME: grid = array<i32: 4, 4, 2>
// CHECK-SAME: {dtype = "i32", kind = "ptr", name = "key_lists", shape = array<i64: 40>}
// CHECK: llvm.func @doc__attn__key_lists(
// CHECK-SAME: %arg6: !llvm.ptr {llvm.writeonly}
// CHECK-SAME: block = array<i32: 1024, 1, 1>, dynamic_shared_bytes = 224 : i64, grain = 1 : i64, grid = array<i32: 4, 1, 2>
// CHECK: llvm.mlir.addressof @doc__attn__keys
// The ranges pass first: q_segments[b, q] == k_segments[b, kv] compares a
// row's value with a key's, so the row values' [min, max] over the query
// block and the key values' over each key block (signed, i64) tell most
// blocks (disjoint: none visible; one value on both sides: all); only the
// rest are evaluated at every point.
// CHECK: red.shared.min.s64
// CHECK: red.shared.max.s64
// CHECK: red.shared.min.s64
// CHECK: red.shared.max.s64
// CHECK: red.shared.or.b32
// The row written by the whole CTA: each block placed by a warp ballot and
// the counts of the warps before it.
// CHECK: nvvm.vote.sync ballot
// CHECK: llvm.intr.ctpop
// PERSIST-LABEL: func.func private @doc_marker
// PERSIST: llvm.func @doc__attn(
// PERSIST-SAME: grid = array<i32: 4, 1, 1>
// The mma.sync kernel takes the same lists (its blocks: 128 rows, 64 keys:
// 8 key blocks + the count per row).
// MMA-LABEL: func.func private @doc_marker
// MMA: steps = [{args = ["q", "k", "v", "q_segments", "k_segments", "out", "key_lists"], kernel = "doc__attn__key_lists"}, {args = ["q", "k", "v", "q_segments", "k_segments", "out", "key_lists"], kernel = "doc__attn"}]
// MMA: llvm.func @doc__attn(
// MMA-SAME: {dtype = "i32", kind = "ptr", name = "key_lists", shape = array<i64: 72>}
// MMA: llvm.func @doc__attn__key_lists(
// MMA-SAME: grain = 1 : i64, grid = array<i32: 4, 1, 2>
// AHEAD: error: no Hopper kernel for 'doc': rope=ahead cannot run with a mask function that reads a tensor
func.func private @doc_marker()
func.func @doc(%q: tensor<2x4x512x64xbf16>, %k: tensor<2x4x512x64xbf16>, %v: tensor<2x4x512x64xbf16>, %qs: tensor<2x512xi32>, %ks: tensor<2x512xi32>) -> tensor<2x4x512x64xbf16> {
  %o = "attn.fused"(%q, %k, %v, %qs, %ks) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1, 0, 0>, scale = 0.125 : f64, causal = true, rope = {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"}} : (tensor<2x4x512x64xbf16>, tensor<2x4x512x64xbf16>, tensor<2x4x512x64xbf16>, tensor<2x512xi32>, tensor<2x512xi32>) -> tensor<2x4x512x64xbf16>
  return %o : tensor<2x4x512x64xbf16>
}

// -----

// A block map read at (q / 64, kv / 64): one value over every aligned
// 64 x 64 box, so the key-list kernel evaluates one point per box (grain
// 64) with 256 threads; the body reads neither b nor h, so one row per
// query block.
// CHECK-LABEL: func.func private @map_marker
// CHECK: llvm.func @map__attn__key_lists(
// CHECK-SAME: block = array<i32: 256, 1, 1>, dynamic_shared_bytes = 48 : i64, grain = 64 : i64, grid = array<i32: 4, 1, 1>
// PERSIST-LABEL: func.func private @map_marker
// MMA-LABEL: func.func private @map_marker
// MMA: llvm.func @map__attn__key_lists(
func.func private @map_marker()
func.func @map(%m: tensor<8x8xi32>, %q: tensor<1x4x512x64xbf16>, %k: tensor<1x4x512x64xbf16>, %v: tensor<1x4x512x64xbf16>) -> tensor<1x4x512x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    %c64 = arith.constant 64 : index
    %i = arith.divui %qi, %c64 : index
    %j = arith.divui %kv, %c64 : index
    %x = tensor.extract %m[%i, %j] : tensor<8x8xi32>
    %z = arith.constant 0 : i32
    %ok = arith.cmpi ne, %x, %z : i32
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x4x512x64xbf16>, tensor<1x4x512x64xbf16>, tensor<1x4x512x64xbf16>) -> tensor<1x4x512x64xbf16>
  return %o : tensor<1x4x512x64xbf16>
}

// -----

// The key-list kernel stays within 48 KiB of shared memory (every chip from
// sm_80 gives that without asking): at 1500 key blocks the two comparisons'
// ranges would take 48,000 bytes beside the 6,000 of the words, so the
// ranges pass is left out and every block is evaluated point by point.
// CHECK-LABEL: func.func private @long_marker
// CHECK: llvm.func @long__attn__key_lists(
// CHECK-SAME: dynamic_shared_bytes = 6128 : i64, grain = 1 : i64
// CHECK-NOT: red.shared.min
// CHECK: red.shared.or.b32
// PERSIST-LABEL: func.func private @long_marker
// MMA-LABEL: func.func private @long_marker
func.func private @long_marker()
func.func @long(%ids: tensor<192000xi32>, %q: tensor<1x1x128x64xbf16>, %k: tensor<1x1x192000x64xbf16>, %v: tensor<1x1x192000x64xbf16>) -> tensor<1x1x128x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    %a = tensor.extract %ids[%qi] : tensor<192000xi32>
    %c = tensor.extract %ids[%kv] : tensor<192000xi32>
    %same = arith.cmpi eq, %a, %c : i32
    %past = arith.cmpi ule, %kv, %qi : index
    %ok = arith.andi %same, %past : i1
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x1x128x64xbf16>, tensor<1x1x192000x64xbf16>, tensor<1x1x192000x64xbf16>) -> tensor<1x1x128x64xbf16>
  return %o : tensor<1x1x128x64xbf16>
}

// -----

// Past that, at 16,000 key blocks (the words alone take 64,000 bytes), no
// lists: the mask function runs on every block of the bounds, as it did
// before key lists.
// CHECK-LABEL: func.func private @longer_marker
// CHECK-NOT: __key_lists
// CHECK: llvm.func @longer(
// CHECK-NOT: __key_lists
// PERSIST-LABEL: func.func private @longer_marker
// MMA-LABEL: func.func private @longer_marker
func.func private @longer_marker()
func.func @longer(%ids: tensor<2048000xi32>, %q: tensor<1x1x128x64xbf16>, %k: tensor<1x1x2048000x64xbf16>, %v: tensor<1x1x2048000x64xbf16>) -> tensor<1x1x128x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    %a = tensor.extract %ids[%qi] : tensor<2048000xi32>
    %c = tensor.extract %ids[%kv] : tensor<2048000xi32>
    %ok = arith.cmpi eq, %a, %c : i32
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x1x128x64xbf16>, tensor<1x1x2048000x64xbf16>, tensor<1x1x2048000x64xbf16>) -> tensor<1x1x128x64xbf16>
  return %o : tensor<1x1x128x64xbf16>
}
