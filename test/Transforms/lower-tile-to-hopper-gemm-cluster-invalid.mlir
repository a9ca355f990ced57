// RUN: attn-opt %s --split-input-file --verify-diagnostics --comm-schedule --attn-tile="kernel=hopper" --lower-tile-to-hopper="cluster=2"

// cluster=2 (lower-tile-to-hopper-gemm-cluster.mlir) on GEMMs whose tiles
// it cannot pair: a located error at the user's op.

// Three tile rows.
func.func @odd(%a: tensor<384x1024xbf16>, %b: tensor<1024x1024xbf16>) -> tensor<384x1024xbf16> {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<384x1024xbf16>
  %i = linalg.fill ins(%z : bf16) outs(%e : tensor<384x1024xbf16>) -> tensor<384x1024xbf16>
  // expected-error@+1 {{no Hopper GEMM for 'odd': cluster 2 pairs the tiles of two neighbouring tile rows: it needs an even number of tile rows (3), an even group-m (16) and CTA count (12), block-n 128 or 256 (256), and no fused collective}}
  %c = linalg.matmul ins(%a, %b : tensor<384x1024xbf16>, tensor<1024x1024xbf16>) outs(%i : tensor<384x1024xbf16>) -> tensor<384x1024xbf16>
  return %c : tensor<384x1024xbf16>
}

// -----

// A fused kernel: its communication CTAs and the adaptive split's claimed
// tiles are per CTA.
func.func @ar(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16> {
  %e = tensor.empty() : tensor<8192x8192xbf16>
  %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16>) outs(%e : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  // expected-error@+1 {{no Hopper GEMM for 'ar': cluster 2 pairs the tiles of two neighbouring tile rows: it needs an even number of tile rows (64), an even group-m (16) and CTA count (128), block-n 128 or 256 (256), and no fused collective}}
  %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 2 : i64} : (tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
  return %r : tensor<8192x8192xbf16>
}
