// RUN: attn-opt %s --split-input-file --comm-schedule | FileCheck %s
// RUN: attn-opt %s --split-input-file --comm-schedule="comm-schedule-split=adaptive" | FileCheck %s --check-prefix=OPT
// RUN: attn-opt %s --split-input-file --comm-schedule="comm-schedule-sms=64" | FileCheck %s --check-prefix=SMS

// A collective's comm.schedule pins its split and communication SMs; it
// wins over the pass options. Without it the model and the options decide.
// CHECK-LABEL: @pinned(
// CHECK: "comm.fused_matmul"{{.*}}comm_sms = 12 : i64, compute_sms = 120 : i64{{.*}}split = "adaptive"
// OPT-LABEL: @pinned(
// OPT: "comm.fused_matmul"{{.*}}comm_sms = 12 : i64, compute_sms = 120 : i64{{.*}}split = "adaptive"
func.func @pinned(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>, %i: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%i : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64, comm.schedule = {split = "adaptive", comm_sms = 12 : i64}} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}

// -----

// CHECK-LABEL: @static_pin(
// CHECK: "comm.fused_matmul"{{.*}}comm_sms = 4 : i64{{.*}}split = "static"
// OPT-LABEL: @static_pin(
// OPT: "comm.fused_matmul"{{.*}}split = "static"
func.func @static_pin(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>, %i: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%i : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64, comm.schedule = {split = "static"}} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}

// -----

// sms caps the kernel's SMs (here half an H200's, as for two ranks sharing
// one GPU): the model splits those, and a pin wins over the option.
// CHECK-LABEL: @sms_pin(
// CHECK: "comm.fused_matmul"{{.*}}comm_sms = 2 : i64, compute_sms = 64 : i64, gpu_sms = 66 : i64
// SMS-LABEL: @sms_pin(
// SMS: "comm.fused_matmul"{{.*}}gpu_sms = 66 : i64
// SMS-LABEL: @unpinned(
// SMS: "comm.fused_matmul"{{.*}}gpu_sms = 64 : i64
func.func @sms_pin(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>, %i: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%i : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64, comm.schedule = {sms = 66 : i64}} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}

// -----

// CHECK-LABEL: @unpinned(
// CHECK: "comm.fused_matmul"{{.*}}gpu_sms = 132 : i64
func.func @unpinned(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>, %i: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%i : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}
