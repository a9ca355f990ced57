// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-tile

// The GEMMs attn-tile does not take, each reported at the op that makes it
// so (the function when it is its signature).

func.func @dynamic(%a: tensor<?x50xf32>, %b: tensor<50x70xf32>, %c0: tensor<?x70xf32>) -> tensor<?x70xf32> {
  // expected-error@+1 {{attn-tile takes a linalg.matmul on static rank-2 tensors; a is tensor<?x50xf32>}}
  %c = linalg.matmul ins(%a, %b : tensor<?x50xf32>, tensor<50x70xf32>) outs(%c0 : tensor<?x70xf32>) -> tensor<?x70xf32>
  return %c : tensor<?x70xf32>
}

// -----

func.func @mixed(%a: tensor<16x8xbf16>, %b: tensor<8x16xbf16>, %c0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  // expected-error@+1 {{attn-tile takes a linalg.matmul with one element type, found bf16 x bf16 -> f32}}
  %c = linalg.matmul ins(%a, %b : tensor<16x8xbf16>, tensor<8x16xbf16>) outs(%c0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %c : tensor<16x16xf32>
}

// -----

// MLIR 22 writes matmul_transpose_b as linalg.matmul with indexing maps.
func.func @transpose_b(%a: tensor<16x8xf32>, %b: tensor<16x8xf32>, %c0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  // expected-error@+1 {{cannot tile a linalg.matmul with non-default indexing_maps (transposed or broadcast operands)}}
  %c = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<16x8xf32>, tensor<16x8xf32>) outs(%c0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %c : tensor<16x16xf32>
}

// -----

func.func @batch(%a: tensor<2x16x8xf32>, %b: tensor<2x8x16xf32>, %c0: tensor<2x16x16xf32>) -> tensor<2x16x16xf32> {
  // expected-error@+1 {{cannot tile 'linalg.batch_matmul': attn-tile takes linalg.matmul only (no batched, transposed or quantized variants)}}
  %c = linalg.batch_matmul ins(%a, %b : tensor<2x16x8xf32>, tensor<2x8x16xf32>) outs(%c0 : tensor<2x16x16xf32>) -> tensor<2x16x16xf32>
  return %c : tensor<2x16x16xf32>
}

// -----

func.func @integer(%a: tensor<16x8xi32>, %b: tensor<8x16xi32>, %c0: tensor<16x16xi32>) -> tensor<16x16xi32> {
  // expected-error@+1 {{attn-tile takes a linalg.matmul on bf16, f16 or f32, found i32}}
  %c = linalg.matmul ins(%a, %b : tensor<16x8xi32>, tensor<8x16xi32>) outs(%c0 : tensor<16x16xi32>) -> tensor<16x16xi32>
  return %c : tensor<16x16xi32>
}

// -----

func.func @f64(%a: tensor<16x8xf64>, %b: tensor<8x16xf64>, %c0: tensor<16x16xf64>) -> tensor<16x16xf64> {
  // expected-error@+1 {{attn-tile takes a linalg.matmul on bf16, f16 or f32, found f64}}
  %c = linalg.matmul ins(%a, %b : tensor<16x8xf64>, tensor<8x16xf64>) outs(%c0 : tensor<16x16xf64>) -> tensor<16x16xf64>
  return %c : tensor<16x16xf64>
}

// -----

func.func @on_memrefs(%a: memref<16x8xf32>, %b: memref<8x16xf32>, %c: memref<16x16xf32>) {
  // expected-error@+1 {{attn-tile takes a linalg.matmul on tensors (two inputs, one init, one result)}}
  linalg.matmul ins(%a, %b : memref<16x8xf32>, memref<8x16xf32>) outs(%c : memref<16x16xf32>)
  return
}

// -----

func.func @fill_one(%a: tensor<16x8xf32>, %b: tensor<8x16xf32>) -> tensor<16x16xf32> {
  %one = arith.constant 1.0 : f32
  %empty = tensor.empty() : tensor<16x16xf32>
  // expected-error@+1 {{a matmul initialised to 1 is not supported (expected a fill of 0.0, or the init as the function's third argument)}}
  %init = linalg.fill ins(%one : f32) outs(%empty : tensor<16x16xf32>) -> tensor<16x16xf32>
  %c = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x16xf32>) outs(%init : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %c : tensor<16x16xf32>
}

// -----

func.func @fill_argument(%a: tensor<16x8xf32>, %b: tensor<8x16xf32>, %x: f32) -> tensor<16x16xf32> {
  %empty = tensor.empty() : tensor<16x16xf32>
  // expected-error@+1 {{the linalg.fill that initialises the matmul must fill a float constant}}
  %init = linalg.fill ins(%x : f32) outs(%empty : tensor<16x16xf32>) -> tensor<16x16xf32>
  %c = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x16xf32>) outs(%init : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %c : tensor<16x16xf32>
}

// -----

func.func @init_computed(%a: tensor<16x8xf32>, %b: tensor<8x16xf32>, %c0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %d = arith.addf %c0, %c0 : tensor<16x16xf32>
  // expected-error@+1 {{the matmul's init must be the function's third argument, a tensor.empty or a linalg.fill of 0.0 into one}}
  %c = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x16xf32>) outs(%d : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %c : tensor<16x16xf32>
}

// -----

func.func @epilogue(%a: tensor<16x8xf32>, %b: tensor<8x16xf32>, %c0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %c = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x16xf32>) outs(%c0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %d = arith.addf %c, %c : tensor<16x16xf32>
  // expected-error@+1 {{the function must return the result of linalg.matmul and nothing else}}
  return %d : tensor<16x16xf32>
}

// -----

func.func @stray(%a: tensor<16x8xf32>, %b: tensor<8x16xf32>, %c0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  // expected-error@+1 {{attn-tile supports functions whose body is one linalg.matmul (with its init) and the return of its result}}
  %unused = arith.constant 2.0 : f32
  %c = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x16xf32>) outs(%c0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %c : tensor<16x16xf32>
}

// -----

func.func @two(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>, %c0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %c = linalg.matmul ins(%a, %b : tensor<16x16xf32>, tensor<16x16xf32>) outs(%c0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  // expected-error@+1 {{attn-tile supports one linalg.matmul per function}}
  %d = linalg.matmul ins(%c, %b : tensor<16x16xf32>, tensor<16x16xf32>) outs(%c0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %d : tensor<16x16xf32>
}

// -----

func.func @swapped(%b: tensor<8x16xf32>, %a: tensor<16x8xf32>, %c0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  // expected-error@+1 {{the matmul's a and b must be the function's first and second arguments}}
  %c = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x16xf32>) outs(%c0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %c : tensor<16x16xf32>
}

// -----

func.func @square(%a: tensor<16x16xf32>, %c0: tensor<16x16xf32>) -> tensor<16x16xf32> {
  // expected-error@+1 {{the matmul's a and b must be the function's first and second arguments}}
  %c = linalg.matmul ins(%a, %a : tensor<16x16xf32>, tensor<16x16xf32>) outs(%c0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %c : tensor<16x16xf32>
}

// -----

// expected-error@+1 {{a matmul function takes exactly (a, b), or (a, b, c) with c the matmul's init}}
func.func @extra_argument(%a: tensor<16x8xf32>, %b: tensor<8x16xf32>, %x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %empty = tensor.empty() : tensor<16x16xf32>
  %c = linalg.matmul ins(%a, %b : tensor<16x8xf32>, tensor<8x16xf32>) outs(%empty : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %c : tensor<16x16xf32>
}

// -----

func.func @empty_dim(%a: tensor<0x8xf32>, %b: tensor<8x16xf32>, %c0: tensor<0x16xf32>) -> tensor<0x16xf32> {
  // expected-error@+1 {{the matmul has an empty dimension (0x16x8)}}
  %c = linalg.matmul ins(%a, %b : tensor<0x8xf32>, tensor<8x16xf32>) outs(%c0 : tensor<0x16xf32>) -> tensor<0x16xf32>
  return %c : tensor<0x16xf32>
}

// -----

// A collective attn-tile meets unfused: with its matmul (comm-schedule did not
// run), and alone.
func.func @unfused(%a: tensor<256x256xbf16>, %b: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  %e = tensor.empty() : tensor<256x256xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<256x256xbf16>, tensor<256x256xbf16>) outs(%e : tensor<256x256xbf16>) -> tensor<256x256xbf16>
  // expected-error@+1 {{'comm.all_reduce' must first be fused with the matmul by comm-schedule (attn-translate and attn_compile do so for sm_90a); a collective has no CPU or plain-GPU lowering}}
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<256x256xbf16>) -> tensor<256x256xbf16>
  return %r : tensor<256x256xbf16>
}

// -----

func.func @alone(%x: tensor<256x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error@+1 {{'comm.all_reduce' has no linalg.matmul to fuse with: attn compiles a collective only into the kernel of the GEMM that produces or consumes it (comm-schedule); for one on its own, call NCCL through attnrt (attnrt_comm_all_reduce, attnrt_comm_all_gather, attnrt_comm_reduce_scatter)}}
  %r = "comm.all_reduce"(%x) {reduction = "sum", world_size = 2 : i64} : (tensor<256x256xbf16>) -> tensor<256x256xbf16>
  return %r : tensor<256x256xbf16>
}

// -----

func.func @alone_all_to_all(%x: tensor<2x128x256xbf16>) -> tensor<2x128x256xbf16> {
  // expected-error@+1 {{'comm.all_to_all' has no linalg.matmul to fuse with: attn compiles a collective only into the kernel of the GEMM that produces or consumes it (comm-schedule); for one on its own, call NCCL (attnrt has no all_to_all)}}
  %r = "comm.all_to_all"(%x) {split_dim = 0 : i64, concat_dim = 0 : i64, world_size = 2 : i64} : (tensor<2x128x256xbf16>) -> tensor<2x128x256xbf16>
  return %r : tensor<2x128x256xbf16>
}

// -----

// Found inside a region too.
func.func @nested(%x: tensor<256x256xbf16>, %p: i1) -> tensor<256x256xbf16> {
  %r = scf.if %p -> tensor<256x256xbf16> {
    // expected-error@+1 {{'comm.all_gather' has no linalg.matmul to fuse with}}
    %g = "comm.all_gather"(%x) {dim = 0 : i64, world_size = 1 : i64} : (tensor<256x256xbf16>) -> tensor<256x256xbf16>
    scf.yield %g : tensor<256x256xbf16>
  } else {
    scf.yield %x : tensor<256x256xbf16>
  }
  return %r : tensor<256x256xbf16>
}
