// RUN: attn-translate --to-manifest --kernel=plain %s | FileCheck %s
// RUN: attn-translate --to-ptx --kernel=plain %S/../Inputs/bodies.mlir -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t.ptx -o %t.cubin %}
// RUN: attn-translate --to-ptx --kernel=plain %S/../Inputs/body_ops.mlir -o %t.ops.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a %t.ops.ptx -o %t.ops.cubin %}

// The tensors score_mod / mask_mod bodies capture are kernel parameters
// after the attention's own inputs, named capture0, capture1, ... in
// argument order, each with its element type and static shape, so that a
// launcher (attnrt, lib/API, Python) passes them as it passes q, k and v.
// The plain GPU path compiles every body of Inputs/bodies.mlir (captures
// of each element type, rank 1 to 3) and the body of every allowed op
// (Inputs/body_ops.mlir) to PTX that ptxas accepts.
// CHECK: "name": "bodies"
// CHECK: "mods": ["scale", "fn"]
// CHECK: "params":
// CHECK: "name": "q",
// CHECK: "name": "k",
// CHECK: "name": "v",
// CHECK: "name": "capture0",
// CHECK-NEXT: "kind": "ptr",
// CHECK-NEXT: "dtype": "bf16",
// CHECK-NEXT: "shape": [2]
// CHECK: "name": "capture1",
// CHECK-NEXT: "kind": "ptr",
// CHECK-NEXT: "dtype": "i64",
// CHECK-NEXT: "shape": [1, 2, 8]
// CHECK: "name": "capture2",
// CHECK-NEXT: "kind": "ptr",
// CHECK-NEXT: "dtype": "i32",
// CHECK-NEXT: "shape": [1, 8]
// CHECK: "name": "out",
func.func @bodies(%q: tensor<1x2x8x16xf16>, %k: tensor<1x2x8x16xf16>, %v: tensor<1x2x8x16xf16>, %hs: tensor<2xbf16>, %ids: tensor<1x2x8xi64>, %keep: tensor<1x8xi32>) -> tensor<1x2x8x16xf16> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>) -> tensor<1x2x8x8xf16>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x2x8x8xf16>) -> tensor<1x2x8x8xf16>
  %s2 = "attn.score_mod"(%s1) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %m = tensor.extract %hs[%h] : tensor<2xbf16>
    %mf = arith.extf %m : bf16 to f32
    %id = tensor.extract %ids[%b, %h, %j] : tensor<1x2x8xi64>
    %idf = arith.sitofp %id : i64 to f32
    %p = arith.mulf %mf, %idf : f32
    %y = arith.addf %x, %p : f32
    gpu.yield %y : f32
  }) : (tensor<1x2x8x8xf16>) -> tensor<1x2x8x8xf16>
  %s3 = "attn.mask_mod"(%s2) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %w = tensor.extract %keep[%b, %j] : tensor<1x8xi32>
    %z = arith.constant 0 : i32
    %ok = arith.cmpi ne, %w, %z : i32
    gpu.yield %ok : i1
  }) : (tensor<1x2x8x8xf16>) -> tensor<1x2x8x8xf16>
  %p = "attn.softmax"(%s3) : (tensor<1x2x8x8xf16>) -> tensor<1x2x8x8xf16>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x8x8xf16>, tensor<1x2x8x16xf16>) -> tensor<1x2x8x16xf16>
  return %o : tensor<1x2x8x16xf16>
}
