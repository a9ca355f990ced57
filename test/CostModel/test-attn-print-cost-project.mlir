// RUN: attn-opt %S/../Inputs/project/layer_gqa.mlir --pass-pipeline='builtin.module(attn-fuse,test-attn-print-cost)' 2>&1 >/dev/null | FileCheck %s
// RUN: attn-opt %S/../Inputs/project/layer_gqa.mlir --pass-pipeline='builtin.module(attn-fuse{rope-strategy=auto})' | FileCheck %s --check-prefix=AUTO

// When q and k come from attn.project, producer (RoPE in the projections'
// GEMM epilogue) is available: it adds no traffic and no repeated work, so
// the model prices it as the attention alone and auto picks it.

// CHECK:      cost @layer on H200: B=2 H=4 Hkv=2 N=256 M=256 d=128 rotary=128 causal bf16 tiles=128x128
// CHECK:      producer: 0.013 ms = attention 0.013 + rope in kernel 0.000 + rope kernels 0.000 + launches 0.000;
// CHECK-NOT:  unavailable
// CHECK:      choice: producer

// AUTO: "attn.project"(%arg0, %arg1) {rope = {{{.*}}strategy = "producer"
// AUTO: "attn.project"(%arg0, %arg2) {rope = {{{.*}}strategy = "producer"
// AUTO: "attn.fused"
// AUTO-NOT: rope
