// The fused GEMM + collective kernels at 2, 3, 4 and 8 ranks, for
// test/runtime/fused_loopback_gpu_test.c, which runs every rank of a kernel
// on one GPU: each collective's comm.schedule holds the kernel to 132 / world
// SMs (sms), so the ranks' kernels are resident together. bf16; one rank's
// GEMM is m x n x k as the types say (m gathered for all_gather). Splits:
// the drivers' adaptive unless the schedule says static; shapes with more
// tiles than a rank's compute CTAs (rs2_waves and the 4- and 8-rank ones)
// run several waves. The *_rows kernels have rows that are not a multiple
// of 128 x ranks: all-reduces of 1000, 300 and 1, reduce-scatters of 1000
// and 308 (500 and 77 per rank), all-gathers of 900 and 104 (300 and 13).
// The *_cols kernels have N = 200, 1000 and 72, which no tile width
// divides: their last tile column is a tail.
func.func @ar2(%a: tensor<256x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<256x512xbf16> {
  %e = tensor.empty() : tensor<256x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<256x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<256x512xbf16>) -> tensor<256x512xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64, comm.schedule = {sms = 66 : i64}} : (tensor<256x512xbf16>) -> tensor<256x512xbf16>
  return %r : tensor<256x512xbf16>
}
func.func @ar2_static(%a: tensor<256x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<256x512xbf16> {
  %e = tensor.empty() : tensor<256x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<256x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<256x512xbf16>) -> tensor<256x512xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64, comm.schedule = {sms = 66 : i64, split = "static"}} : (tensor<256x512xbf16>) -> tensor<256x512xbf16>
  return %r : tensor<256x512xbf16>
}
func.func @rs2(%a: tensor<512x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<256x512xbf16> {
  %e = tensor.empty() : tensor<512x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<512x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<512x512xbf16>) -> tensor<512x512xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 2 : i64, comm.schedule = {sms = 66 : i64, split = "static"}} : (tensor<512x512xbf16>) -> tensor<256x512xbf16>
  return %r : tensor<256x512xbf16>
}
func.func @rs2_waves(%a: tensor<2048x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<1024x512xbf16> {
  %e = tensor.empty() : tensor<2048x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<2048x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<2048x512xbf16>) -> tensor<2048x512xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 2 : i64, comm.schedule = {sms = 66 : i64, split = "adaptive"}} : (tensor<2048x512xbf16>) -> tensor<1024x512xbf16>
  return %r : tensor<1024x512xbf16>
}
func.func @ag2(%a: tensor<256x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<512x512xbf16> {
  %e = tensor.empty() : tensor<512x512xbf16>
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 2 : i64, comm.schedule = {sms = 66 : i64}} : (tensor<256x256xbf16>) -> tensor<512x256xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<512x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<512x512xbf16>) -> tensor<512x512xbf16>
  return %c : tensor<512x512xbf16>
}
func.func @ar3(%a: tensor<768x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<768x512xbf16> {
  %e = tensor.empty() : tensor<768x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<768x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<768x512xbf16>) -> tensor<768x512xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 3 : i64, comm.schedule = {sms = 44 : i64}} : (tensor<768x512xbf16>) -> tensor<768x512xbf16>
  return %r : tensor<768x512xbf16>
}
func.func @rs3(%a: tensor<1536x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<512x512xbf16> {
  %e = tensor.empty() : tensor<1536x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<1536x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<1536x512xbf16>) -> tensor<1536x512xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 3 : i64, comm.schedule = {sms = 44 : i64}} : (tensor<1536x512xbf16>) -> tensor<512x512xbf16>
  return %r : tensor<512x512xbf16>
}
func.func @ag3(%a: tensor<256x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<768x512xbf16> {
  %e = tensor.empty() : tensor<768x512xbf16>
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 3 : i64, comm.schedule = {sms = 44 : i64}} : (tensor<256x256xbf16>) -> tensor<768x256xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<768x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<768x512xbf16>) -> tensor<768x512xbf16>
  return %c : tensor<768x512xbf16>
}
func.func @ar4(%a: tensor<1024x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<1024x512xbf16> {
  %e = tensor.empty() : tensor<1024x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<1024x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<1024x512xbf16>) -> tensor<1024x512xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 4 : i64, comm.schedule = {sms = 33 : i64}} : (tensor<1024x512xbf16>) -> tensor<1024x512xbf16>
  return %r : tensor<1024x512xbf16>
}
func.func @ar4_static(%a: tensor<1024x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<1024x512xbf16> {
  %e = tensor.empty() : tensor<1024x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<1024x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<1024x512xbf16>) -> tensor<1024x512xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 4 : i64, comm.schedule = {sms = 33 : i64, split = "static"}} : (tensor<1024x512xbf16>) -> tensor<1024x512xbf16>
  return %r : tensor<1024x512xbf16>
}
func.func @rs4(%a: tensor<2048x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<512x512xbf16> {
  %e = tensor.empty() : tensor<2048x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<2048x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<2048x512xbf16>) -> tensor<2048x512xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 4 : i64, comm.schedule = {sms = 33 : i64, split = "adaptive"}} : (tensor<2048x512xbf16>) -> tensor<512x512xbf16>
  return %r : tensor<512x512xbf16>
}
func.func @rs4_static(%a: tensor<2048x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<512x512xbf16> {
  %e = tensor.empty() : tensor<2048x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<2048x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<2048x512xbf16>) -> tensor<2048x512xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 4 : i64, comm.schedule = {sms = 33 : i64, split = "static"}} : (tensor<2048x512xbf16>) -> tensor<512x512xbf16>
  return %r : tensor<512x512xbf16>
}
func.func @ag4(%a: tensor<256x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<1024x512xbf16> {
  %e = tensor.empty() : tensor<1024x512xbf16>
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 4 : i64, comm.schedule = {sms = 33 : i64}} : (tensor<256x256xbf16>) -> tensor<1024x256xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<1024x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<1024x512xbf16>) -> tensor<1024x512xbf16>
  return %c : tensor<1024x512xbf16>
}
func.func @ar8(%a: tensor<1024x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<1024x512xbf16> {
  %e = tensor.empty() : tensor<1024x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<1024x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<1024x512xbf16>) -> tensor<1024x512xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 8 : i64, comm.schedule = {sms = 16 : i64}} : (tensor<1024x512xbf16>) -> tensor<1024x512xbf16>
  return %r : tensor<1024x512xbf16>
}
func.func @ar8_static(%a: tensor<1024x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<1024x512xbf16> {
  %e = tensor.empty() : tensor<1024x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<1024x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<1024x512xbf16>) -> tensor<1024x512xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 8 : i64, comm.schedule = {sms = 16 : i64, split = "static"}} : (tensor<1024x512xbf16>) -> tensor<1024x512xbf16>
  return %r : tensor<1024x512xbf16>
}
func.func @rs8(%a: tensor<2048x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<256x512xbf16> {
  %e = tensor.empty() : tensor<2048x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<2048x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<2048x512xbf16>) -> tensor<2048x512xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 8 : i64, comm.schedule = {sms = 16 : i64, split = "adaptive"}} : (tensor<2048x512xbf16>) -> tensor<256x512xbf16>
  return %r : tensor<256x512xbf16>
}
func.func @rs8_static(%a: tensor<2048x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<256x512xbf16> {
  %e = tensor.empty() : tensor<2048x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<2048x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<2048x512xbf16>) -> tensor<2048x512xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 8 : i64, comm.schedule = {sms = 16 : i64, split = "static"}} : (tensor<2048x512xbf16>) -> tensor<256x512xbf16>
  return %r : tensor<256x512xbf16>
}
func.func @ag8(%a: tensor<128x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<1024x512xbf16> {
  %e = tensor.empty() : tensor<1024x512xbf16>
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 8 : i64, comm.schedule = {sms = 16 : i64}} : (tensor<128x256xbf16>) -> tensor<1024x256xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<1024x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<1024x512xbf16>) -> tensor<1024x512xbf16>
  return %c : tensor<1024x512xbf16>
}
func.func @ar2_rows(%a: tensor<1000x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<1000x512xbf16> {
  %e = tensor.empty() : tensor<1000x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<1000x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<1000x512xbf16>) -> tensor<1000x512xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64, comm.schedule = {sms = 66 : i64}} : (tensor<1000x512xbf16>) -> tensor<1000x512xbf16>
  return %r : tensor<1000x512xbf16>
}
func.func @ar4_rows(%a: tensor<300x256xbf16>, %b: tensor<256x256xbf16>) -> tensor<300x256xbf16> {
  %e = tensor.empty() : tensor<300x256xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<300x256xbf16>, tensor<256x256xbf16>) outs(%e : tensor<300x256xbf16>) -> tensor<300x256xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 4 : i64, comm.schedule = {sms = 33 : i64, split = "static"}} : (tensor<300x256xbf16>) -> tensor<300x256xbf16>
  return %r : tensor<300x256xbf16>
}
func.func @ar8_rows(%a: tensor<1x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<1x512xbf16> {
  %e = tensor.empty() : tensor<1x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<1x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<1x512xbf16>) -> tensor<1x512xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 8 : i64, comm.schedule = {sms = 16 : i64}} : (tensor<1x512xbf16>) -> tensor<1x512xbf16>
  return %r : tensor<1x512xbf16>
}
func.func @rs2_rows(%a: tensor<1000x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<500x512xbf16> {
  %e = tensor.empty() : tensor<1000x512xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<1000x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<1000x512xbf16>) -> tensor<1000x512xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 2 : i64, comm.schedule = {sms = 66 : i64}} : (tensor<1000x512xbf16>) -> tensor<500x512xbf16>
  return %r : tensor<500x512xbf16>
}
func.func @rs4_rows(%a: tensor<308x264xbf16>, %b: tensor<264x256xbf16>) -> tensor<77x256xbf16> {
  %e = tensor.empty() : tensor<308x256xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<308x264xbf16>, tensor<264x256xbf16>) outs(%e : tensor<308x256xbf16>) -> tensor<308x256xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 4 : i64, comm.schedule = {sms = 33 : i64, split = "static"}} : (tensor<308x256xbf16>) -> tensor<77x256xbf16>
  return %r : tensor<77x256xbf16>
}
func.func @ag3_rows(%a: tensor<300x256xbf16>, %b: tensor<256x512xbf16>) -> tensor<900x512xbf16> {
  %e = tensor.empty() : tensor<900x512xbf16>
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 3 : i64, comm.schedule = {sms = 44 : i64}} : (tensor<300x256xbf16>) -> tensor<900x256xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<900x256xbf16>, tensor<256x512xbf16>) outs(%e : tensor<900x512xbf16>) -> tensor<900x512xbf16>
  return %c : tensor<900x512xbf16>
}
func.func @ag8_rows(%a: tensor<13x256xbf16>, %b: tensor<256x256xbf16>) -> tensor<104x256xbf16> {
  %e = tensor.empty() : tensor<104x256xbf16>
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 8 : i64, comm.schedule = {sms = 16 : i64}} : (tensor<13x256xbf16>) -> tensor<104x256xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<104x256xbf16>, tensor<256x256xbf16>) outs(%e : tensor<104x256xbf16>) -> tensor<104x256xbf16>
  return %c : tensor<104x256xbf16>
}
func.func @ar2_cols(%a: tensor<1000x256xbf16>, %b: tensor<256x200xbf16>) -> tensor<1000x200xbf16> {
  %e = tensor.empty() : tensor<1000x200xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<1000x256xbf16>, tensor<256x200xbf16>) outs(%e : tensor<1000x200xbf16>) -> tensor<1000x200xbf16>
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64, comm.schedule = {sms = 66 : i64}} : (tensor<1000x200xbf16>) -> tensor<1000x200xbf16>
  return %r : tensor<1000x200xbf16>
}
func.func @rs4_cols(%a: tensor<1024x136xbf16>, %b: tensor<136x1000xbf16>) -> tensor<256x1000xbf16> {
  %e = tensor.empty() : tensor<1024x1000xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<1024x136xbf16>, tensor<136x1000xbf16>) outs(%e : tensor<1024x1000xbf16>) -> tensor<1024x1000xbf16>
  %r = "comm.reduce_scatter"(%c) {reduction = "sum", dim = 0 : i64, world_size = 4 : i64, comm.schedule = {sms = 33 : i64, split = "static"}} : (tensor<1024x1000xbf16>) -> tensor<256x1000xbf16>
  return %r : tensor<256x1000xbf16>
}
func.func @ag3_cols(%a: tensor<128x256xbf16>, %b: tensor<256x72xbf16>) -> tensor<384x72xbf16> {
  %e = tensor.empty() : tensor<384x72xbf16>
  %g = "comm.all_gather"(%a) {dim = 0 : i64, world_size = 3 : i64, comm.schedule = {sms = 44 : i64}} : (tensor<128x256xbf16>) -> tensor<384x256xbf16>
  %c = linalg.matmul ins(%g, %b : tensor<384x256xbf16>, tensor<256x72xbf16>) outs(%e : tensor<384x72xbf16>) -> tensor<384x72xbf16>
  return %c : tensor<384x72xbf16>
}
