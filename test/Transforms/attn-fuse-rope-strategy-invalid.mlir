// RUN: attn-opt %s --split-input-file --verify-diagnostics --attn-fuse=rope-strategy=producer

// rope-strategy=producer needs q and k to come from attn.project (whose
// GEMM epilogue rotates); here they are plain inputs. The error is at the
// attention (attn.pv, which becomes the fused op).

func.func @producer(%q: tensor<1x8x256x64xbf16>, %k: tensor<1x8x256x64xbf16>, %v: tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16> {
  %qr = "attn.rope"(%q) {theta = 5.0e5 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16>
  %kr = "attn.rope"(%k) {theta = 5.0e5 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x8x256x64xbf16>, tensor<1x8x256x64xbf16>) -> tensor<1x8x256x256xbf16>
  %s1 = "attn.scale"(%s) {scale = 0.125 : f64} : (tensor<1x8x256x256xbf16>) -> tensor<1x8x256x256xbf16>
  %s2 = "attn.causal"(%s1) : (tensor<1x8x256x256xbf16>) -> tensor<1x8x256x256xbf16>
  %p = "attn.softmax"(%s2) : (tensor<1x8x256x256xbf16>) -> tensor<1x8x256x256xbf16>
  // expected-error@+1 {{rope-strategy=producer needs q and k to be attn.project results used only by their attn.rope, with no explicit positions}}
  %o = "attn.pv"(%p, %v) : (tensor<1x8x256x256xbf16>, tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16>
  return %o : tensor<1x8x256x64xbf16>
}

// -----

// Without RoPE there is nothing to place: no error.
func.func @producer_without_rope(%q: tensor<1x8x256x64xbf16>, %k: tensor<1x8x256x64xbf16>, %v: tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16> {
  %s = "attn.qk"(%q, %k) : (tensor<1x8x256x64xbf16>, tensor<1x8x256x64xbf16>) -> tensor<1x8x256x256xbf16>
  %s1 = "attn.scale"(%s) {scale = 0.125 : f64} : (tensor<1x8x256x256xbf16>) -> tensor<1x8x256x256xbf16>
  %s2 = "attn.causal"(%s1) : (tensor<1x8x256x256xbf16>) -> tensor<1x8x256x256xbf16>
  %p = "attn.softmax"(%s2) : (tensor<1x8x256x256xbf16>) -> tensor<1x8x256x256xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<1x8x256x256xbf16>, tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16>
  return %o : tensor<1x8x256x64xbf16>
}

// -----

// Only k is projected: producer needs both.
func.func @producer_k_only(%q: tensor<1x8x256x64xbf16>, %x: tensor<1x256x512xbf16>, %wk: tensor<512x512xbf16>, %v: tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16> {
  %k = "attn.project"(%x, %wk) : (tensor<1x256x512xbf16>, tensor<512x512xbf16>) -> tensor<1x8x256x64xbf16>
  %qr = "attn.rope"(%q) {theta = 5.0e5 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16>
  %kr = "attn.rope"(%k) {theta = 5.0e5 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x8x256x64xbf16>, tensor<1x8x256x64xbf16>) -> tensor<1x8x256x256xbf16>
  %p = "attn.softmax"(%s) : (tensor<1x8x256x256xbf16>) -> tensor<1x8x256x256xbf16>
  // expected-error@+1 {{rope-strategy=producer needs q and k to be attn.project results}}
  %o = "attn.pv"(%p, %v) : (tensor<1x8x256x256xbf16>, tensor<1x8x256x64xbf16>) -> tensor<1x8x256x64xbf16>
  return %o : tensor<1x8x256x64xbf16>
}
