// RUN: attn-opt %s --comm-schedule | FileCheck %s
// RUN: attn-opt %s --pass-pipeline='builtin.module(comm-schedule)' | FileCheck %s
// RUN: attn-opt %s --comm-schedule | attn-opt | FileCheck %s
// RUN: attn-opt %s --pass-pipeline='builtin.module(comm-schedule{comm-schedule-split=adaptive comm-schedule-comm-sms=16})' | FileCheck %s --check-prefix=FORCED
// RUN: attn-opt %s --comm-schedule="comm-schedule-gpu=h100 comm-schedule-strict=false" | FileCheck %s --check-prefix=H100

// comm-schedule fuses GEMM+AllReduce, AllGather+GEMM and GEMM+ReduceScatter
// into comm.fused_matmul. The splits (comm_sms, compute_sms) and the
// predicted times are the topology model's (attn_topo_fused on H200s), copied
// from the pass's output: 2, 4 and 8 GPUs, each pattern, at 8192^3 and
// M x N x K = 4096 x 8192 x 4096 (one rank's GEMM; AllGather+GEMM's M is the
// gathered rows). Without comm.topology the machine is one node of
// world_size GPUs. The third RUN re-parses the output: the fused ops verify.

// Forced split and the adaptive flag, through --pass-pipeline options.
// FORCED-LABEL: @ar_8192cube_w2(
// FORCED: "comm.fused_matmul"{{.*}}comm_sms = 16 : i64, compute_sms = 116 : i64{{.*}}split = "adaptive"

// The H100 shares the H200's SM count and link constants.
// H100-LABEL: @ar_8192cube_w2(
// H100: "comm.fused_matmul"{{.*}}comm_sms = 4 : i64, compute_sms = 128 : i64, gpu_sms = 132 : i64

// CHECK-LABEL: @ar_8192cube_w2(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[B:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<8192x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 4 : i64, compute_sms = 128 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.456000e+03 : f64, lower_bound = 1.396930e+03 : f64, sequential = 1.891000e+03 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @ar_8192cube_w2(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>, %init: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%init : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}

// CHECK-LABEL: @ag_8192cube_w2(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4096x8192xbf16>, %[[B:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<8192x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 4 : i64, compute_sms = 128 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "all_gather_matmul", predicted_us = {fused = 1.426780e+03 : f64, lower_bound = 1.396930e+03 : f64, sequential = 1.717690e+03 : f64}, split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<4096x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @ag_8192cube_w2(%a: tensor<4096x8192xbf16>, %b: tensor<8192x8192xbf16>, %init: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 2 : i64} : (tensor<4096x8192xbf16>) -> tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%init : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %c : tensor<8192x8192xbf16>
}

// CHECK-LABEL: @rs_8192cube_w2(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[B:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<8192x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 4 : i64, compute_sms = 128 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "matmul_reduce_scatter", predicted_us = {fused = 1.426780e+03 : f64, lower_bound = 1.396930e+03 : f64, sequential = 1.717690e+03 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<4096x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @rs_8192cube_w2(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>, %init: tensor<8192x8192xbf16>) -> tensor<4096x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%init : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.reduce_scatter"(%c) {dim = 0 : i64, reduction = "sum", world_size = 2 : i64} : (tensor<8192x8192xbf16>) -> tensor<4096x8192xbf16>
  return %r : tensor<4096x8192xbf16>
}

// CHECK-LABEL: @ar_8192cube_w4(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[B:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<8192x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 4 : i64, compute_sms = 128 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.504410e+03 : f64, lower_bound = 1.396930e+03 : f64, sequential = 2.137530e+03 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 4 : i64} : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @ar_8192cube_w4(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>, %init: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%init : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 4 : i64} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}

// CHECK-LABEL: @ag_8192cube_w4(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2048x8192xbf16>, %[[B:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<8192x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 4 : i64, compute_sms = 128 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "all_gather_matmul", predicted_us = {fused = 1.441530e+03 : f64, lower_bound = 1.396930e+03 : f64, sequential = 1.875320e+03 : f64}, split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 4 : i64} : (tensor<2048x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @ag_8192cube_w4(%a: tensor<2048x8192xbf16>, %b: tensor<8192x8192xbf16>, %init: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 4 : i64} : (tensor<2048x8192xbf16>) -> tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%init : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %c : tensor<8192x8192xbf16>
}

// CHECK-LABEL: @rs_8192cube_w4(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[B:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<8192x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 4 : i64, compute_sms = 128 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "matmul_reduce_scatter", predicted_us = {fused = 1.441530e+03 : f64, lower_bound = 1.396930e+03 : f64, sequential = 1.875320e+03 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 4 : i64} : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<2048x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @rs_8192cube_w4(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>, %init: tensor<8192x8192xbf16>) -> tensor<2048x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%init : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.reduce_scatter"(%c) {dim = 0 : i64, reduction = "sum", world_size = 4 : i64} : (tensor<8192x8192xbf16>) -> tensor<2048x8192xbf16>
  return %r : tensor<2048x8192xbf16>
}

// CHECK-LABEL: @ar_8192cube_w8(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[B:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<8192x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.532940e+03 : f64, lower_bound = 1.396930e+03 : f64, sequential = 2.269800e+03 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 8 : i64} : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @ar_8192cube_w8(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>, %init: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%init : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 8 : i64} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}

// CHECK-LABEL: @ag_8192cube_w8(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<1024x8192xbf16>, %[[B:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<8192x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 4 : i64, compute_sms = 128 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "all_gather_matmul", predicted_us = {fused = 1.449190e+03 : f64, lower_bound = 1.396930e+03 : f64, sequential = 1.958630e+03 : f64}, split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 8 : i64} : (tensor<1024x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @ag_8192cube_w8(%a: tensor<1024x8192xbf16>, %b: tensor<8192x8192xbf16>, %init: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 8 : i64} : (tensor<1024x8192xbf16>) -> tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%init : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %c : tensor<8192x8192xbf16>
}

// CHECK-LABEL: @rs_8192cube_w8(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[B:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<8192x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 4 : i64, compute_sms = 128 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "matmul_reduce_scatter", predicted_us = {fused = 1.449190e+03 : f64, lower_bound = 1.396930e+03 : f64, sequential = 1.958630e+03 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 8 : i64} : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<1024x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @rs_8192cube_w8(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>, %init: tensor<8192x8192xbf16>) -> tensor<1024x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%init : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.reduce_scatter"(%c) {dim = 0 : i64, reduction = "sum", world_size = 8 : i64} : (tensor<8192x8192xbf16>) -> tensor<1024x8192xbf16>
  return %r : tensor<1024x8192xbf16>
}

// CHECK-LABEL: @ar_4096x8192x4096_w2(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4096x4096xbf16>, %[[B:[a-z0-9]+]]: tensor<4096x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<4096x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 4.514600e+02 : f64, lower_bound = 3.809600e+02 : f64, sequential = 6.344900e+02 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<4096x4096xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @ar_4096x8192x4096_w2(%a: tensor<4096x4096xbf16>, %b: tensor<4096x8192xbf16>, %init: tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<4096x4096xbf16>, tensor<4096x8192xbf16>) outs(%init : tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  return %r : tensor<4096x8192xbf16>
}

// CHECK-LABEL: @ag_4096x8192x4096_w2(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<2048x4096xbf16>, %[[B:[a-z0-9]+]]: tensor<4096x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<4096x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 4 : i64, compute_sms = 128 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "all_gather_matmul", predicted_us = {fused = 3.969600e+02 : f64, lower_bound = 3.809600e+02 : f64, sequential = 4.697700e+02 : f64}, split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<2048x4096xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @ag_4096x8192x4096_w2(%a: tensor<2048x4096xbf16>, %b: tensor<4096x8192xbf16>, %init: tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16> {
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 2 : i64} : (tensor<2048x4096xbf16>) -> tensor<4096x4096xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<4096x4096xbf16>, tensor<4096x8192xbf16>) outs(%init : tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  return %c : tensor<4096x8192xbf16>
}

// CHECK-LABEL: @rs_4096x8192x4096_w2(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4096x4096xbf16>, %[[B:[a-z0-9]+]]: tensor<4096x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<4096x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 4 : i64, compute_sms = 128 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "matmul_reduce_scatter", predicted_us = {fused = 4.115200e+02 : f64, lower_bound = 3.809600e+02 : f64, sequential = 5.470900e+02 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 2 : i64} : (tensor<4096x4096xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>) -> tensor<2048x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @rs_4096x8192x4096_w2(%a: tensor<4096x4096xbf16>, %b: tensor<4096x8192xbf16>, %init: tensor<4096x8192xbf16>) -> tensor<2048x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<4096x4096xbf16>, tensor<4096x8192xbf16>) outs(%init : tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  %r = "comm.reduce_scatter"(%c) {dim = 0 : i64, reduction = "sum", world_size = 2 : i64} : (tensor<4096x8192xbf16>) -> tensor<2048x8192xbf16>
  return %r : tensor<2048x8192xbf16>
}

// CHECK-LABEL: @ar_4096x8192x4096_w4(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4096x4096xbf16>, %[[B:[a-z0-9]+]]: tensor<4096x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<4096x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 4.654900e+02 : f64, lower_bound = 3.809600e+02 : f64, sequential = 760.75999999999999 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 4 : i64} : (tensor<4096x4096xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @ar_4096x8192x4096_w4(%a: tensor<4096x4096xbf16>, %b: tensor<4096x8192xbf16>, %init: tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<4096x4096xbf16>, tensor<4096x8192xbf16>) outs(%init : tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 4 : i64} : (tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  return %r : tensor<4096x8192xbf16>
}

// CHECK-LABEL: @ag_4096x8192x4096_w4(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<1024x4096xbf16>, %[[B:[a-z0-9]+]]: tensor<4096x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<4096x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 4 : i64, compute_sms = 128 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "all_gather_matmul", predicted_us = {fused = 4.046200e+02 : f64, lower_bound = 3.809600e+02 : f64, sequential = 5.114300e+02 : f64}, split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 4 : i64} : (tensor<1024x4096xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @ag_4096x8192x4096_w4(%a: tensor<1024x4096xbf16>, %b: tensor<4096x8192xbf16>, %init: tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16> {
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 4 : i64} : (tensor<1024x4096xbf16>) -> tensor<4096x4096xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<4096x4096xbf16>, tensor<4096x8192xbf16>) outs(%init : tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  return %c : tensor<4096x8192xbf16>
}

// CHECK-LABEL: @rs_4096x8192x4096_w4(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4096x4096xbf16>, %[[B:[a-z0-9]+]]: tensor<4096x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<4096x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 4 : i64, compute_sms = 128 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "matmul_reduce_scatter", predicted_us = {fused = 4.264600e+02 : f64, lower_bound = 3.809600e+02 : f64, sequential = 627.39999999999998 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 4 : i64} : (tensor<4096x4096xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>) -> tensor<1024x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @rs_4096x8192x4096_w4(%a: tensor<4096x4096xbf16>, %b: tensor<4096x8192xbf16>, %init: tensor<4096x8192xbf16>) -> tensor<1024x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<4096x4096xbf16>, tensor<4096x8192xbf16>) outs(%init : tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  %r = "comm.reduce_scatter"(%c) {dim = 0 : i64, reduction = "sum", world_size = 4 : i64} : (tensor<4096x8192xbf16>) -> tensor<1024x8192xbf16>
  return %r : tensor<1024x8192xbf16>
}

// CHECK-LABEL: @ar_4096x8192x4096_w8(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4096x4096xbf16>, %[[B:[a-z0-9]+]]: tensor<4096x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<4096x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 4.989700e+02 : f64, lower_bound = 4.519300e+02 : f64, sequential = 832.88999999999999 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 8 : i64} : (tensor<4096x4096xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @ar_4096x8192x4096_w8(%a: tensor<4096x4096xbf16>, %b: tensor<4096x8192xbf16>, %init: tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<4096x4096xbf16>, tensor<4096x8192xbf16>) outs(%init : tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 8 : i64} : (tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  return %r : tensor<4096x8192xbf16>
}

// CHECK-LABEL: @ag_4096x8192x4096_w8(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<512x4096xbf16>, %[[B:[a-z0-9]+]]: tensor<4096x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<4096x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 4 : i64, compute_sms = 128 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "all_gather_matmul", predicted_us = {fused = 4.090100e+02 : f64, lower_bound = 3.809600e+02 : f64, sequential = 5.367600e+02 : f64}, split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 8 : i64} : (tensor<512x4096xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @ag_4096x8192x4096_w8(%a: tensor<512x4096xbf16>, %b: tensor<4096x8192xbf16>, %init: tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16> {
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 8 : i64} : (tensor<512x4096xbf16>) -> tensor<4096x4096xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<4096x4096xbf16>, tensor<4096x8192xbf16>) outs(%init : tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  return %c : tensor<4096x8192xbf16>
}

// CHECK-LABEL: @rs_4096x8192x4096_w8(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4096x4096xbf16>, %[[B:[a-z0-9]+]]: tensor<4096x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<4096x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 7 : i64, compute_sms = 125 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "matmul_reduce_scatter", predicted_us = {fused = 4.556300e+02 : f64, lower_bound = 3.809600e+02 : f64, sequential = 6.720600e+02 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 8 : i64} : (tensor<4096x4096xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>) -> tensor<512x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @rs_4096x8192x4096_w8(%a: tensor<4096x4096xbf16>, %b: tensor<4096x8192xbf16>, %init: tensor<4096x8192xbf16>) -> tensor<512x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<4096x4096xbf16>, tensor<4096x8192xbf16>) outs(%init : tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  %r = "comm.reduce_scatter"(%c) {dim = 0 : i64, reduction = "sum", world_size = 8 : i64} : (tensor<4096x8192xbf16>) -> tensor<512x8192xbf16>
  return %r : tensor<512x8192xbf16>
}

// With a topology.

// Two nodes of 8 GPUs (comm.topology on the function): the model goes
// hierarchical over the network, and the split moves.
// CHECK-LABEL: @ar_two_nodes_w16(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[B:[a-z0-9]+]]: tensor<8192x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<8192x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 8 : i64, compute_sms = 124 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.555810e+03 : f64, lower_bound = 1.396930e+03 : f64, sequential = 2.658630e+03 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 16 : i64} : (tensor<8192x8192xbf16>, tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @ar_two_nodes_w16(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>, %init: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> attributes {comm.topology = {gpus_per_node = 8 : i64, nodes = 2 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} {
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%init : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 16 : i64} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}

// The topology on an enclosing module; f16 and a max reduction.
// CHECK-LABEL: @rs_module_topology_f16(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4096x4096xf16>, %[[B:[a-z0-9]+]]: tensor<4096x8192xf16>, %[[I:[a-z0-9]+]]: tensor<4096x8192xf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 4 : i64, compute_sms = 128 : i64, dim = 0 : i64, gpu_sms = 132 : i64, pattern = "matmul_reduce_scatter", predicted_us = {fused = 4.264600e+02 : f64, lower_bound = 3.809600e+02 : f64, sequential = 627.39999999999998 : f64}, reduction = "max", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 4 : i64} : (tensor<4096x4096xf16>, tensor<4096x8192xf16>, tensor<4096x8192xf16>) -> tensor<1024x8192xf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
module attributes {comm.topology = {gpus_per_node = 4 : i64, nodes = 1 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} {
  func.func @rs_module_topology_f16(%a: tensor<4096x4096xf16>, %b: tensor<4096x8192xf16>, %init: tensor<4096x8192xf16>) -> tensor<1024x8192xf16> {
    %c = linalg.matmul ins(%a, %b : tensor<4096x4096xf16>, tensor<4096x8192xf16>) outs(%init : tensor<4096x8192xf16>) -> tensor<4096x8192xf16>
    %r = "comm.reduce_scatter"(%c) {dim = 0 : i64, reduction = "max", world_size = 4 : i64} : (tensor<4096x8192xf16>) -> tensor<1024x8192xf16>
    return %r : tensor<1024x8192xf16>
  }
}

// A slower NVLink (nvlink_gbps 150, a third of 450) makes communication
// dearer than on the same 8 GPUs without a topology (@ar_4096x8192x4096_w8).
// CHECK-LABEL: @ar_slow_nvlink_w8(
// CHECK-SAME: %[[A:[a-z0-9]+]]: tensor<4096x4096xbf16>, %[[B:[a-z0-9]+]]: tensor<4096x8192xbf16>, %[[I:[a-z0-9]+]]: tensor<4096x8192xbf16>
// CHECK-NOT: linalg.matmul
// CHECK: %[[R:.*]] = "comm.fused_matmul"(%[[A]], %[[B]], %[[I]]) {comm_sms = 96 : i64, compute_sms = 36 : i64, gpu_sms = 132 : i64, pattern = "matmul_all_reduce", predicted_us = {fused = 1.337590e+03 : f64, lower_bound = 1.293800e+03 : f64, sequential = 1.674760e+03 : f64}, reduction = "sum", split = "static", tile_m = 128 : i64, tile_n = 256 : i64, world_size = 8 : i64} : (tensor<4096x4096xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
// CHECK-NOT: "comm.
// CHECK: return %[[R]]
func.func @ar_slow_nvlink_w8(%a: tensor<4096x4096xbf16>, %b: tensor<4096x8192xbf16>, %init: tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16> attributes {comm.topology = {gpus_per_node = 8 : i64, nodes = 1 : i64, nvlink_gbps = 150 : i64, net_gbps = 50 : i64}} {
  %c = linalg.matmul ins(%a, %b : tensor<4096x4096xbf16>, tensor<4096x8192xbf16>) outs(%init : tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 8 : i64} : (tensor<4096x8192xbf16>) -> tensor<4096x8192xbf16>
  return %r : tensor<4096x8192xbf16>
}

// Left alone.

// The matmul's result has a second use: left alone.
// CHECK-LABEL: @no_fuse_matmul_two_uses(
// CHECK: linalg.matmul
// CHECK: "comm.all_reduce"
// CHECK-NOT: comm.fused_matmul
func.func @no_fuse_matmul_two_uses(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>, %init: tensor<256x256xbf16>) -> (tensor<256x256xbf16>, tensor<256x256xbf16>) {
  %c = linalg.matmul ins(%a, %b : tensor<256x256xbf16>, tensor<256x256xbf16>) outs(%init : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<256x256xbf16>) -> tensor<256x256xbf16>
  return %r, %c : tensor<256x256xbf16>, tensor<256x256xbf16>
}

// f32: the topology model prices bf16 and f16 only.
// CHECK-LABEL: @no_fuse_f32(
// CHECK: linalg.matmul
// CHECK: "comm.all_reduce"
// CHECK-NOT: comm.fused_matmul
func.func @no_fuse_f32(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>, %init: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %c = linalg.matmul ins(%a, %b : tensor<256x256xf32>, tensor<256x256xf32>) outs(%init : tensor<256x256xf32>) -> tensor<256x256xf32>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<256x256xf32>) -> tensor<256x256xf32>
  return %r : tensor<256x256xf32>
}

// A collective over 4 of the topology's 8 ranks (a subgroup).
// CHECK-LABEL: @no_fuse_subgroup(
// CHECK: linalg.matmul
// CHECK: "comm.all_reduce"
// CHECK-NOT: comm.fused_matmul
func.func @no_fuse_subgroup(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>, %init: tensor<256x256xbf16>) -> tensor<256x256xbf16> attributes {comm.topology = {gpus_per_node = 8 : i64, nodes = 1 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} {
  %c = linalg.matmul ins(%a, %b : tensor<256x256xbf16>, tensor<256x256xbf16>) outs(%init : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 4 : i64} : (tensor<256x256xbf16>) -> tensor<256x256xbf16>
  return %r : tensor<256x256xbf16>
}

// The all_gather concatenates columns (dim 1), not rows.
// CHECK-LABEL: @no_fuse_all_gather_dim1(
// CHECK: "comm.all_gather"
// CHECK: linalg.matmul
// CHECK-NOT: comm.fused_matmul
func.func @no_fuse_all_gather_dim1(%a: tensor<256x128xbf16>, %b: tensor<256x256xbf16>, %init: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  %g = "comm.all_gather"(%a) {dim = 1 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>) -> tensor<256x256xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<256x256xbf16>, tensor<256x256xbf16>) outs(%init : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}

// The gathered tensor is the matmul's B, not its A.
// CHECK-LABEL: @no_fuse_all_gather_as_b(
// CHECK: "comm.all_gather"
// CHECK: linalg.matmul
// CHECK-NOT: comm.fused_matmul
func.func @no_fuse_all_gather_as_b(%a: tensor<256x256xbf16>, %b: tensor<128x256xbf16>, %init: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  %g = "comm.all_gather"(%b) {dim = 0 : i64, world_size = 2 : i64} : (tensor<128x256xbf16>) -> tensor<256x256xbf16>
  %c = linalg.matmul ins(%a, %g : tensor<256x256xbf16>, tensor<256x256xbf16>) outs(%init : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}

// B transposed through indexing maps.
// CHECK-LABEL: @no_fuse_transposed_b(
// CHECK: linalg.matmul
// CHECK: "comm.all_reduce"
// CHECK-NOT: comm.fused_matmul
func.func @no_fuse_transposed_b(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>, %init: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  %c = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<256x256xbf16>, tensor<256x256xbf16>) outs(%init : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<256x256xbf16>) -> tensor<256x256xbf16>
  return %r : tensor<256x256xbf16>
}

// The reduce_scatter splits columns (dim 1).
// CHECK-LABEL: @no_fuse_reduce_scatter_dim1(
// CHECK: linalg.matmul
// CHECK: "comm.reduce_scatter"
// CHECK-NOT: comm.fused_matmul
func.func @no_fuse_reduce_scatter_dim1(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>, %init: tensor<256x256xbf16>) -> tensor<256x128xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<256x256xbf16>, tensor<256x256xbf16>) outs(%init : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  %r = "comm.reduce_scatter"(%c) {dim = 1 : i64, reduction = "sum", world_size = 2 : i64} : (tensor<256x256xbf16>) -> tensor<256x128xbf16>
  return %r : tensor<256x128xbf16>
}

// One rank: nothing to communicate.
// CHECK-LABEL: @no_fuse_world_size_1(
// CHECK: linalg.matmul
// CHECK: "comm.all_reduce"
// CHECK-NOT: comm.fused_matmul
func.func @no_fuse_world_size_1(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>, %init: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<256x256xbf16>, tensor<256x256xbf16>) outs(%init : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 1 : i64} : (tensor<256x256xbf16>) -> tensor<256x256xbf16>
  return %r : tensor<256x256xbf16>
}

// An all_reduce of a function argument: no matmul to fuse.
// CHECK-LABEL: @no_fuse_no_matmul(
// CHECK: "comm.all_reduce"
// CHECK-NOT: comm.fused_matmul
func.func @no_fuse_no_matmul(%x: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  %r = "comm.all_reduce"(%x) {reduction = "sum", world_size = 2 : i64} : (tensor<256x256xbf16>) -> tensor<256x256xbf16>
  return %r : tensor<256x256xbf16>
}

// The tile width is the widest of 256, 192, 128 and 64 that divides N;
// where none does, the last tile column is a tail: 128 wide up to N = 128
// (N = 100), else 256 (N = 200).
// CHECK-LABEL: @tile_n_384(
// CHECK: "comm.fused_matmul"{{.*}}tile_n = 192 : i64
func.func @tile_n_384(%a: tensor<1024x512xbf16>, %b: tensor<512x384xbf16>, %init: tensor<1024x384xbf16>) -> tensor<1024x384xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<1024x512xbf16>, tensor<512x384xbf16>) outs(%init : tensor<1024x384xbf16>) -> tensor<1024x384xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<1024x384xbf16>) -> tensor<1024x384xbf16>
  return %r : tensor<1024x384xbf16>
}
// CHECK-LABEL: @tile_n_640(
// CHECK: "comm.fused_matmul"{{.*}}tile_n = 128 : i64
func.func @tile_n_640(%a: tensor<1024x512xbf16>, %b: tensor<512x640xbf16>, %init: tensor<1024x640xbf16>) -> tensor<512x640xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<1024x512xbf16>, tensor<512x640xbf16>) outs(%init : tensor<1024x640xbf16>) -> tensor<1024x640xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 2 : i64} : (tensor<1024x640xbf16>) -> tensor<512x640xbf16>
  return %r : tensor<512x640xbf16>
}
// CHECK-LABEL: @tile_n_320(
// CHECK: "comm.fused_matmul"{{.*}}tile_n = 64 : i64
func.func @tile_n_320(%a: tensor<512x512xbf16>, %b: tensor<512x320xbf16>, %init: tensor<1024x320xbf16>) -> tensor<1024x320xbf16> {
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 2 : i64} : (tensor<512x512xbf16>) -> tensor<1024x512xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<1024x512xbf16>, tensor<512x320xbf16>) outs(%init : tensor<1024x320xbf16>) -> tensor<1024x320xbf16>
  return %c : tensor<1024x320xbf16>
}
// CHECK-LABEL: @tile_n_100(
// CHECK: "comm.fused_matmul"{{.*}}tile_n = 128 : i64
func.func @tile_n_100(%a: tensor<1024x512xbf16>, %b: tensor<512x100xbf16>, %init: tensor<1024x100xbf16>) -> tensor<1024x100xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<1024x512xbf16>, tensor<512x100xbf16>) outs(%init : tensor<1024x100xbf16>) -> tensor<1024x100xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<1024x100xbf16>) -> tensor<1024x100xbf16>
  return %r : tensor<1024x100xbf16>
}
// CHECK-LABEL: @tile_n_200(
// CHECK: "comm.fused_matmul"{{.*}}tile_n = 256 : i64
func.func @tile_n_200(%a: tensor<1024x512xbf16>, %b: tensor<512x200xbf16>, %init: tensor<1024x200xbf16>) -> tensor<512x200xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<1024x512xbf16>, tensor<512x200xbf16>) outs(%init : tensor<1024x200xbf16>) -> tensor<1024x200xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 2 : i64} : (tensor<1024x200xbf16>) -> tensor<512x200xbf16>
  return %r : tensor<512x200xbf16>
}
