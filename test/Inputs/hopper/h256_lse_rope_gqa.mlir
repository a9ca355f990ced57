// Input of bench/gpu_check.sh and test/Target/to-ptx-lse.test: the forward of a backward (attn-grad's attn.fused with lse, written out: the plain path's backward has no tiles at head dim 256, so attn-run --grad cannot run it) at head dim 256, GQA 4/2, RoPE over the whole head (split), causal, a tail (N = 200); attn-run checks out and lse.
func.func @h256_lse_rope_gqa(%q: tensor<1x4x200x256xbf16>, %k: tensor<1x2x200x256xbf16>, %v: tensor<1x2x200x256xbf16>) -> (tensor<1x4x200x256xbf16>, tensor<1x4x200xf32>) {
  %o:2 = "attn.fused"(%q, %k, %v) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, scale = 0.0625 : f64, causal = true, lse, rope = {theta = 10000.0 : f64, rotary_dim = 256 : i64, layout = "rotate_half"}} : (tensor<1x4x200x256xbf16>, tensor<1x2x200x256xbf16>, tensor<1x2x200x256xbf16>) -> (tensor<1x4x200x256xbf16>, tensor<1x4x200xf32>)
  return %o#0, %o#1 : tensor<1x4x200x256xbf16>, tensor<1x4x200xf32>
}
