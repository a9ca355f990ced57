// RUN: attn-opt %s --attn-tile=kernel=hopper | FileCheck %s

// A projected attention whose bodies capture tensors: the launch program
// names them capture0, capture1 (in argument order, here before v) and
// passes them to the attention kernel after attn.fused's operands, which
// takes them in that order.
// CHECK: tile.programs = [{inputs = ["x", "w_q", "w_k", "capture0", "v", "capture1", "out"], name = "layer", steps = [{args = ["x", "w_q", "q_proj"], kernel = "layer__proj_q"}, {args = ["x", "w_k", "k_proj"], kernel = "layer__proj_k"}, {args = ["q_proj", "k_proj", "v", "capture0", "capture1", "out"], kernel = "layer__attn"}]
// CHECK: func.func @layer__attn(%{{.*}}: memref<2x4x256x128xbf16>, %{{.*}}: memref<2x2x256x128xbf16>, %{{.*}}: memref<2x2x256x128xbf16>, %[[BIAS:.*]]: memref<511xf32>, %[[IDS:.*]]: memref<2x256xi32>, %{{.*}}: memref<2x4x256x128xbf16>)
// CHECK-SAME: tile.arg_names = ["q", "k", "v", "capture0", "capture1", "out"]
// CHECK: "tile.score_fn"
// CHECK: memref.load %[[BIAS]]
// CHECK: "tile.mask_fn"
// CHECK: memref.load %[[IDS]]
func.func @layer(%x: tensor<2x256x512xbf16>, %wq: tensor<512x512xbf16>, %wk: tensor<512x256xbf16>, %bias: tensor<511xf32>, %v: tensor<2x2x256x128xbf16>, %ids: tensor<2x256xi32>) -> tensor<2x4x256x128xbf16> {
  %q = "attn.project"(%x, %wq) : (tensor<2x256x512xbf16>, tensor<512x512xbf16>) -> tensor<2x4x256x128xbf16>
  %k = "attn.project"(%x, %wk) : (tensor<2x256x512xbf16>, tensor<512x256xbf16>) -> tensor<2x2x256x128xbf16>
  %o = "attn.fused"(%q, %k, %v) ({
  ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
    %c255 = arith.constant 255 : index
    %d = arith.subi %qi, %kv : index
    %e = arith.addi %d, %c255 : index
    %t = tensor.extract %bias[%e] : tensor<511xf32>
    %y = arith.addf %s, %t : f32
    gpu.yield %y : f32
  }, {
  ^bb0(%b: index, %h: index, %qi: index, %kv: index):
    %a = tensor.extract %ids[%b, %qi] : tensor<2x256xi32>
    %c = tensor.extract %ids[%b, %kv] : tensor<2x256xi32>
    %ok = arith.cmpi eq, %a, %c : i32
    gpu.yield %ok : i1
  }) {causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, mods = ["scale", "fn"], scale = 0.088388347648318447 : f64} : (tensor<2x4x256x128xbf16>, tensor<2x2x256x128xbf16>, tensor<2x2x256x128xbf16>) -> tensor<2x4x256x128xbf16>
  return %o : tensor<2x4x256x128xbf16>
}
