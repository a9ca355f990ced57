// Gradients into captured tensors on the Hopper backward (issue 29): the SAS gate g[b, h, q, kv / 64] marked {attn.grad}, scale + gate (a linear chain: dgate made from dS after dP), causal, bf16, d 128, GQA 4/2, two batches, a ragged N = 300 and a partial last gate block. The main kernel sums each query column's contributions over the warp's keys (a reduce-scatter over the lane bits 2-4) and adds two columns a lane.
func.func @h128_sas_dgate_bf16(%q: tensor<2x4x300x128xbf16>, %k: tensor<2x2x300x128xbf16>, %v: tensor<2x2x300x128xbf16>, %g: tensor<2x4x300x5xf32> {attn.grad}) -> tensor<2x4x300x128xbf16> {
  %o = "attn.fused"(%q, %k, %v, %g) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.08838834764831845 : f64, causal = true, gate_block = 64 : i64, mods = ["scale", "gate"]} : (tensor<2x4x300x128xbf16>, tensor<2x2x300x128xbf16>, tensor<2x2x300x128xbf16>, tensor<2x4x300x5xf32>) -> tensor<2x4x300x128xbf16>
  return %o : tensor<2x4x300x128xbf16>
}
