// Gradients into captured tensors on the Hopper backward at head dim 256 (issue 29): both consumer warpgroups compute the same 64 keys' S^T, so the first alone adds dgate; the SAS gate {attn.grad} with RoPE, causal, bf16, N = 200.
func.func @h256_dgate_rope_causal(%q: tensor<1x2x200x256xbf16>, %k: tensor<1x2x200x256xbf16>, %v: tensor<1x2x200x256xbf16>, %g: tensor<1x2x200x4xf32> {attn.grad}) -> tensor<1x2x200x256xbf16> {
  %o = "attn.fused"(%q, %k, %v, %g) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0>, scale = 0.0625 : f64, causal = true, gate_block = 64 : i64, mods = ["scale", "gate"], rope = {theta = 10000.0 : f64, rotary_dim = 256 : i64, layout = "rotate_half"}} : (tensor<1x2x200x256xbf16>, tensor<1x2x200x256xbf16>, tensor<1x2x200x256xbf16>, tensor<1x2x200x4xf32>) -> tensor<1x2x200x256xbf16>
  return %o : tensor<1x2x200x256xbf16>
}
