// RUN: attn-opt %s --split-input-file --verify-diagnostics --comm-schedule=comm-schedule-strict=true
// RUN: not attn-opt %s --comm-schedule=comm-schedule-gpu=v100 2>&1 >/dev/null | FileCheck %s --check-prefix=GPU
// RUN: not attn-opt %s --comm-schedule=comm-schedule-gpu=a100 2>&1 >/dev/null | FileCheck %s --check-prefix=NO-LINKS
// RUN: not attn-opt %s --comm-schedule=comm-schedule-split=dynamic 2>&1 >/dev/null | FileCheck %s --check-prefix=SPLIT
// RUN: not attn-opt %s --pass-pipeline='builtin.module(comm-schedule{comm-schedule-comm-sms=2000})' 2>&1 >/dev/null | FileCheck %s --check-prefix=SMS-RANGE
// RUN: not attn-opt %s --comm-schedule=comm-schedule-comm-sms=many 2>&1 >/dev/null | FileCheck %s --check-prefix=SMS-INT
// RUN: not attn-opt %s --pass-pipeline='builtin.module(comm-schedule{comm-schedule-sms=-1})' 2>&1 >/dev/null | FileCheck %s --check-prefix=KERNEL-SMS
// RUN: not attn-opt %S/comm-schedule.mlir --comm-schedule=comm-schedule-sms=1 2>&1 >/dev/null | FileCheck %s --check-prefix=KERNEL-SMS-ONE
// RUN: not attn-opt %s --comm-schedule=comm-schedule-strict=maybe 2>&1 >/dev/null | FileCheck %s --check-prefix=STRICT
// RUN: not attn-opt %s --comm-schedule=split=static 2>&1 >/dev/null | FileCheck %s --check-prefix=UNKNOWN
// RUN: not attn-opt %S/comm-schedule.mlir --comm-schedule=comm-schedule-comm-sms=132 2>&1 >/dev/null | FileCheck %s --check-prefix=SMS-GPU

// Bad options fail when the pipeline is built, before any IR is read or
// printed. A forced split the GPU cannot hold fails at the first fused pair.
// GPU:       attn-opt: error: unknown gpu 'v100' (expected H100, H200, A100 or RTX3090)
// NO-LINKS:  attn-opt: error: no link description for gpu 'A100' (expected H100 or H200)
// SPLIT:     attn-opt: error: option 'comm-schedule-split' expects static or adaptive, found 'dynamic'
// SMS-RANGE: attn-opt: error: option 'comm-schedule-comm-sms' expects an integer in [0, 1024], found '2000'
// SMS-INT:   attn-opt: error: option 'comm-schedule-comm-sms' expects an integer in [0, 1024], found 'many'
// KERNEL-SMS: attn-opt: error: option 'comm-schedule-sms' expects an integer in [0, 1024], found '-1'
// KERNEL-SMS-ONE: comm-schedule.mlir:{{[0-9]+}}:8: error: comm-schedule: total sms must be in [2, 132] (0: all), found 1
// STRICT:    attn-opt: error: option 'comm-schedule-strict' expects true or false, found 'maybe'
// UNKNOWN:   attn-opt: error: unknown option 'split' of pass 'comm-schedule' (expected comm-schedule-gpu, comm-schedule-split, comm-schedule-comm-sms, comm-schedule-sms or comm-schedule-strict)
// SMS-GPU:   comm-schedule.mlir:{{[0-9]+}}:8: error: comm-schedule: communication sms must be in [1, 131], found 132

// With comm-schedule-strict=true a matched pair that cannot be fused is an
// error at the collective (the C API has no remarks); without it the pair is
// left alone (comm-schedule.mlir).

// The matmul's result has a second use: left alone.
func.func @no_fuse_matmul_two_uses(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>, %init: tensor<256x256xbf16>) -> (tensor<256x256xbf16>, tensor<256x256xbf16>) {
  %c = linalg.matmul ins(%a, %b : tensor<256x256xbf16>, tensor<256x256xbf16>) outs(%init : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  // expected-error@+1 {{comm-schedule: cannot fuse: the matmul's result has other uses (expected only the collective)}}
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<256x256xbf16>) -> tensor<256x256xbf16>
  return %r, %c : tensor<256x256xbf16>, tensor<256x256xbf16>
}

// -----

// f32: the topology model prices bf16 and f16 only.
func.func @no_fuse_f32(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>, %init: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %c = linalg.matmul ins(%a, %b : tensor<256x256xf32>, tensor<256x256xf32>) outs(%init : tensor<256x256xf32>) -> tensor<256x256xf32>
  // expected-error@+1 {{comm-schedule: cannot fuse: element type f32 is not priced by the topology model (expected bf16 or f16)}}
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<256x256xf32>) -> tensor<256x256xf32>
  return %r : tensor<256x256xf32>
}

// -----

// A collective over 4 of the topology's 8 ranks (a subgroup).
func.func @no_fuse_subgroup(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>, %init: tensor<256x256xbf16>) -> tensor<256x256xbf16> attributes {comm.topology = {gpus_per_node = 8 : i64, nodes = 1 : i64, nvlink_gbps = 450 : i64, net_gbps = 50 : i64}} {
  %c = linalg.matmul ins(%a, %b : tensor<256x256xbf16>, tensor<256x256xbf16>) outs(%init : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  // expected-error@+1 {{comm-schedule: cannot fuse: world_size 4 differs from the 8 ranks of comm.topology}}
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 4 : i64} : (tensor<256x256xbf16>) -> tensor<256x256xbf16>
  return %r : tensor<256x256xbf16>
}

// -----

// The all_gather concatenates columns (dim 1), not rows.
func.func @no_fuse_all_gather_dim1(%a: tensor<256x128xbf16>, %b: tensor<256x256xbf16>, %init: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error@+1 {{comm-schedule: cannot fuse: the collective works on dim 1, expected 0 (rows)}}
  %g = "comm.all_gather"(%a) {dim = 1 : i64, world_size = 2 : i64} : (tensor<256x128xbf16>) -> tensor<256x256xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<256x256xbf16>, tensor<256x256xbf16>) outs(%init : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}

// -----

// The gathered tensor is the matmul's B, not its A.
func.func @no_fuse_all_gather_as_b(%a: tensor<256x256xbf16>, %b: tensor<128x256xbf16>, %init: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error@+1 {{comm-schedule: cannot fuse: the gathered tensor must have one use, as the matmul's A}}
  %g = "comm.all_gather"(%b) {dim = 0 : i64, world_size = 2 : i64} : (tensor<128x256xbf16>) -> tensor<256x256xbf16>
  %c = linalg.matmul ins(%a, %g : tensor<256x256xbf16>, tensor<256x256xbf16>) outs(%init : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}

// -----

// B transposed through indexing maps.
func.func @no_fuse_transposed_b(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>, %init: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  %c = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<256x256xbf16>, tensor<256x256xbf16>) outs(%init : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  // expected-error@+1 {{comm-schedule: cannot fuse: the matmul has non-default indexing maps}}
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<256x256xbf16>) -> tensor<256x256xbf16>
  return %r : tensor<256x256xbf16>
}

// -----

// The reduce_scatter splits columns (dim 1).
func.func @no_fuse_reduce_scatter_dim1(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>, %init: tensor<256x256xbf16>) -> tensor<256x128xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<256x256xbf16>, tensor<256x256xbf16>) outs(%init : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  // expected-error@+1 {{comm-schedule: cannot fuse: the collective works on dim 1, expected 0 (rows)}}
  %r = "comm.reduce_scatter"(%c) {dim = 1 : i64, reduction = "sum", world_size = 2 : i64} : (tensor<256x256xbf16>) -> tensor<256x128xbf16>
  return %r : tensor<256x128xbf16>
}

// -----

// One rank: nothing to communicate.
func.func @no_fuse_world_size_1(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>, %init: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<256x256xbf16>, tensor<256x256xbf16>) outs(%init : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  // expected-error@+1 {{comm-schedule: cannot fuse: world_size 1 leaves nothing to communicate (expected at least 2)}}
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 1 : i64} : (tensor<256x256xbf16>) -> tensor<256x256xbf16>
  return %r : tensor<256x256xbf16>
}

// -----

// An all_reduce of a function argument: no matmul to fuse, no error.
func.func @no_fuse_no_matmul(%x: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  %r = "comm.all_reduce"(%x) {reduction = "sum", world_size = 2 : i64} : (tensor<256x256xbf16>) -> tensor<256x256xbf16>
  return %r : tensor<256x256xbf16>
}

// -----

func.func @bad_pin(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>, %i: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%i : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  // expected-error@+1 {{comm.schedule must be {split = "static" or "adaptive", comm_sms = 1 to 1024, sms = 1 to 1024}, every key optional}}
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64, comm.schedule = {split = "sometimes"}} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}

// -----

func.func @bad_pin_sms(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>, %i: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%i : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  // expected-error@+1 {{comm.schedule must be {split = "static" or "adaptive", comm_sms = 1 to 1024, sms = 1 to 1024}, every key optional}}
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64, comm.schedule = {sms = 0 : i64}} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}

// -----

// More SMs than an H200 has.
func.func @pin_sms_over_gpu(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>, %i: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%i : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  // expected-error@+1 {{comm-schedule: total sms must be in [2, 132] (0: all), found 200}}
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64, comm.schedule = {sms = 200 : i64}} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}

// -----

// The communication SMs must leave the kernel a compute SM.
func.func @pin_comm_sms_over_sms(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>, %i: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%i : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  // expected-error@+1 {{comm-schedule: communication sms must be in [1, 15], found 16}}
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64, comm.schedule = {sms = 16 : i64, comm_sms = 16 : i64}} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}
