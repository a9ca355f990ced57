// RUN: attn-opt %s --split-input-file --attn-tile="block-m=128 block-n=128 threads=384" --lower-tile-to-hopper="persistent=false" | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-tile=kernel=mma --lower-tile-to-mma | FileCheck %s --check-prefix=MMA

// The key blocks of a mask function (lib/Kernels/attention_schedule.c,
// attn_hopper_key_table): its body is classified over each (query block,
// key block) by interval arithmetic (lib/IR/attn_body_interval.c), and
// when that narrows the affine masks' bounds or leaves whole blocks, both
// kernels read each query block's [first, last) and its run of unmasked
// blocks [full_first, full_last) from @<name>__keys, and compute the mask
// function only outside that run.

// Prefix-LM, not causal: the first 100 keys visible to every query, causal
// after them. 512 queries and keys: query block i (128 rows) reads key
// blocks [0, i + 1), the first i of them wholly visible; with the mma
// kernel's 64-key blocks, [0, 2 i + 2) and the first max(1, 2 i).
// CHECK-LABEL: llvm.mlir.global internal constant @prefix__keys
// CHECK-SAME: dense<[0, 1, 0, 0, 0, 2, 0, 1, 0, 3, 0, 2, 0, 4, 0, 3]>
// CHECK: llvm.func @prefix(
// CHECK: llvm.load {{.*}}invariant
// MMA-LABEL: llvm.mlir.global internal constant @prefix__keys
// MMA-SAME: dense<[0, 2, 0, 1, 0, 4, 0, 2, 0, 6, 0, 4, 0, 8, 0, 6]>
func.func @prefix(%q: tensor<1x4x512x64xbf16>, %k: tensor<1x4x512x64xbf16>, %v: tensor<1x4x512x64xbf16>) -> tensor<1x4x512x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    %c100 = arith.constant 100 : index
    %pre = arith.cmpi ult, %kv, %c100 : index
    %past = arith.cmpi ule, %kv, %qi : index
    %ok = arith.ori %pre, %past : i1
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x4x512x64xbf16>, tensor<1x4x512x64xbf16>, tensor<1x4x512x64xbf16>) -> tensor<1x4x512x64xbf16>
  return %o : tensor<1x4x512x64xbf16>
}

// -----

// Chunked prefill: 256 queries at the end of 512 keys (causal aligned to
// the bottom right, kv <= q + 256), and the named causal mask's bounds
// widened by nothing: every query block reads to its diagonal.
// CHECK-LABEL: llvm.mlir.global internal constant @prefill__keys
// CHECK-SAME: dense<[0, 3, 0, 2, 0, 4, 0, 3]>
func.func @prefill(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x4x512x64xbf16>, %v: tensor<1x4x512x64xbf16>) -> tensor<1x4x256x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    %c256 = arith.constant 256 : index
    %e = arith.addi %qi, %c256 : index
    %ok = arith.cmpi ule, %kv, %e : index
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = false} : (tensor<1x4x256x64xbf16>, tensor<1x4x512x64xbf16>, tensor<1x4x512x64xbf16>) -> tensor<1x4x256x64xbf16>
  return %o : tensor<1x4x256x64xbf16>
}

// -----

// A mask that reads a capture (a document mask) tells nothing at compile
// time: both kernels' tables hold the affine bounds (causal: query block i
// to its diagonal, no full run; the mma kernel's 64-key blocks: two per
// query block of 128 rows), within which their key lists are made at run time
// (lower-tile-to-hopper-key-lists.mlir).
// CHECK-LABEL: func.func private @doc_table_absent
// CHECK: llvm.mlir.global internal constant @doc__attn__keys
// CHECK-SAME: dense<[0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0]>
// MMA-LABEL: func.func private @doc_table_absent
// MMA: llvm.mlir.global internal constant @doc__attn__keys
// MMA-SAME: dense<[0, 2, 0, 0, 0, 4, 0, 0, 0, 6, 0, 0, 0, 8, 0, 0]>
func.func private @doc_table_absent()
func.func @doc(%ids: tensor<512xi32>, %q: tensor<1x4x512x64xbf16>, %k: tensor<1x4x512x64xbf16>, %v: tensor<1x4x512x64xbf16>) -> tensor<1x4x512x64xbf16> {
  %o = "attn.fused"(%q, %k, %v) ({}, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    %a = tensor.extract %ids[%qi] : tensor<512xi32>
    %c = tensor.extract %ids[%kv] : tensor<512xi32>
    %ok = arith.cmpi eq, %a, %c : i32
    gpu.yield %ok : i1
  }) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.125 : f64, causal = true} : (tensor<1x4x512x64xbf16>, tensor<1x4x512x64xbf16>, tensor<1x4x512x64xbf16>) -> tensor<1x4x512x64xbf16>
  return %o : tensor<1x4x512x64xbf16>
}
