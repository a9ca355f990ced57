// RUN: attn-translate --to-manifest %s | FileCheck %s
// RUN: attn-translate --to-ptx %s -o %t.ptx
// RUN: %if ptxas %{ %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not="bytes spill" --implicit-check-not="Potential Performance Loss" %}

// The three fused patterns for 4 and 8 GPUs of one NVLink node (issue 7
// runs them on the x4 and x8 machines) compile from the user's program, at
// the benchmark's 8192^3 per rank, to kernels that ptxas assembles without
// a spill or a warning: the peer table, the owners' bases and the flags
// scale with the world size. The topology model gives all-reduce on 8 GPUs
// 8 communication CTAs (17 waves of 121 compute CTAs); the others keep 4.
// CHECK: "name": "ar4",
// CHECK: "comm": {
// CHECK-NEXT: "comm_ctas": 4,
// CHECK-NEXT: "compute_ctas": 128,
// CHECK-NEXT: "pattern": "matmul_all_reduce",
// CHECK: "world_size": 4
// CHECK: "name": "peers",
// CHECK-NEXT: "shape": [4]
// CHECK: "name": "ag4",
// CHECK: "pattern": "all_gather_matmul",
// CHECK: "world_size": 4
// CHECK: "name": "rs4",
// CHECK: "pattern": "matmul_reduce_scatter",
// CHECK: "world_size": 4
// CHECK: "name": "ar8",
// CHECK: "comm": {
// CHECK-NEXT: "comm_ctas": 8,
// CHECK-NEXT: "compute_ctas": 121,
// CHECK-NEXT: "pattern": "matmul_all_reduce",
// CHECK: "world_size": 8
// CHECK: "name": "peers",
// CHECK-NEXT: "shape": [8]
// CHECK: "name": "ag8",
// CHECK: "world_size": 8
// CHECK: "name": "rs8",
// CHECK: "world_size": 8
// PTXAS-COUNT-6: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

func.func @ar4(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 4 : i64} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}

func.func @ag4(%a: tensor<2048x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 4 : i64} : (tensor<2048x8192xbf16>) -> tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %c : tensor<8192x8192xbf16>
}

func.func @rs4(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<2048x8192xbf16> {
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 4 : i64} : (tensor<8192x8192xbf16>) -> tensor<2048x8192xbf16>
  return %r : tensor<2048x8192xbf16>
}

func.func @ar8(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 8 : i64} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}

func.func @ag8(%a: tensor<1024x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 8 : i64} : (tensor<1024x8192xbf16>) -> tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %c : tensor<8192x8192xbf16>
}

func.func @rs8(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<1024x8192xbf16> {
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 8 : i64} : (tensor<8192x8192xbf16>) -> tensor<1024x8192xbf16>
  return %r : tensor<1024x8192xbf16>
}
