// RUN: attn-opt %S/../Inputs/project/layer_gqa.mlir --pass-pipeline='builtin.module(attn-fuse{rope-strategy=producer},attn-tile{kernel=hopper})' | FileCheck %s --check-prefix=TILE
// RUN: attn-opt %S/../Inputs/project/layer_gqa.mlir --pass-pipeline='builtin.module(attn-fuse{rope-strategy=auto},attn-tile{kernel=hopper},lower-tile-to-hopper)' | FileCheck %s --check-prefix=PRODUCER
// RUN: attn-opt %S/../Inputs/project/layer_gqa.mlir --pass-pipeline='builtin.module(attn-fuse{rope-strategy=split},attn-tile{kernel=hopper},lower-tile-to-hopper)' | FileCheck %s --check-prefix=SPLIT
// RUN: attn-opt %S/../Inputs/project/layer_gqa.mlir --pass-pipeline='builtin.module(attn-fuse{rope-strategy=pre},attn-tile{kernel=hopper},lower-tile-to-hopper)' | FileCheck %s --check-prefix=PRE

// Projections (attn.project) become GEMM tile kernels writing the heads
// layout, the function the attention over their results, and the module
// records the launch program; lower-tile-to-hopper moves it into the
// gpu.module, splicing in the rotation kernels a split or pre attention
// adds (issue 5, the producer placement).

// With producer, the rope goes into each projection's GEMM (tile.matmul's
// rope, positions row % 256) and the attention has none.
// TILE: module attributes {tile.programs = [{inputs = ["x", "w_q", "w_k", "v", "out"], name = "layer", steps = [{args = ["x", "w_q", "q_proj"], kernel = "layer__proj_q"}, {args = ["x", "w_k", "k_proj"], kernel = "layer__proj_k"}, {args = ["q_proj", "k_proj", "v", "out"], kernel = "layer__attn"}], workspace = [{bytes = 524288 : i64, name = "q_proj"}, {bytes = 262144 : i64, name = "k_proj"}]}]}
// TILE: func.func @layer__proj_q(%{{.*}}: memref<512x512xbf16>, %{{.*}}: memref<512x512xbf16>, %{{.*}}: memref<512x512xbf16>)
// TILE-SAME: project = {head_dim = 128 : i64, heads = 4 : i64, seq = 256 : i64}, rope = {head_dim = 128 : i64, layout = "rotate_half", offset = 0 : i64, rotary_dim = 128 : i64, seq_len = 256 : i64, theta = 5.000000e+05 : f64}
// TILE: func.func @layer__proj_k(%{{.*}}: memref<512x512xbf16>, %{{.*}}: memref<512x256xbf16>, %{{.*}}: memref<512x256xbf16>)
// TILE-SAME: project = {head_dim = 128 : i64, heads = 2 : i64, seq = 256 : i64}, rope =
// TILE: func.func @layer__attn(%{{.*}}: memref<2x4x256x128xbf16>, %{{.*}}: memref<2x2x256x128xbf16>, %{{.*}}: memref<2x2x256x128xbf16>, %{{.*}}: memref<2x4x256x128xbf16>)
// TILE-SAME: tile.arg_names = ["q", "k", "v", "out"], tile.attention = {causal = true, mods = ["scale"], scale = 0.088388347648318447 : f64}
// TILE-NOT: rope

// auto (the Rotation Calculus) picks producer: no extra traffic, no
// repeated work. Three kernels; the GEMMs rotate (sin/cos) in the epilogue.
// PRODUCER: gpu.module @attn_kernels
// PRODUCER-SAME: attn.programs = [{inputs = ["x", "w_q", "w_k", "v", "out"], name = "layer", steps = [{args = ["x", "w_q", "q_proj"], kernel = "layer__proj_q"}, {args = ["x", "w_k", "k_proj"], kernel = "layer__proj_k"}, {args = ["q_proj", "k_proj", "v", "out"], kernel = "layer__attn"}]
// PRODUCER-DAG: llvm.func @layer__proj_q(
// PRODUCER-DAG: llvm.func @layer__proj_k(
// PRODUCER-DAG: llvm.func @layer__attn(
// PRODUCER-NOT: __rope_k

// split: plain projections, then the attention's own K rotation kernel,
// spliced into the one program with its workspace renamed.
// SPLIT: attn.programs = [{inputs = ["x", "w_q", "w_k", "v", "out"], name = "layer", steps = [{args = ["x", "w_q", "q_proj"], kernel = "layer__proj_q"}, {args = ["x", "w_k", "k_proj"], kernel = "layer__proj_k"}, {args = ["k_proj", "layer__attn.k_rot"], kernel = "layer__attn__rope_k"}, {args = ["q_proj", "layer__attn.k_rot", "v", "out"], kernel = "layer__attn__attn"}], workspace = [{bytes = 524288 : i64, name = "q_proj"}, {bytes = 262144 : i64, name = "k_proj"}, {bytes = 262144 : i64, name = "layer__attn.k_rot"}]}]
// SPLIT-NOT: name = "layer__attn",

// pre: both rotation kernels.
// PRE: steps = [{args = ["x", "w_q", "q_proj"], kernel = "layer__proj_q"}, {args = ["x", "w_k", "k_proj"], kernel = "layer__proj_k"}, {args = ["q_proj", "layer__attn.q_rot"], kernel = "layer__attn__rope_q"}, {args = ["k_proj", "layer__attn.k_rot"], kernel = "layer__attn__rope_k"}, {args = ["layer__attn.q_rot", "layer__attn.k_rot", "v", "out"], kernel = "layer__attn__attn"}]
