// One function per family of the language's blocks (issue 4), each as a
// model writes it; attn-run checks every one against the float64 reference.

// Gemma-2 style: GQA in bf16, scale, logit softcap, causal sliding window.
func.func @gemma_bf16(%q: tensor<1x8x150x64xbf16>, %k: tensor<1x4x150x64xbf16>, %v: tensor<1x4x150x64xbf16>) -> tensor<1x8x150x64xbf16> {
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<1x8x150x64xbf16>) -> tensor<1x8x150x64xbf16>
  %kr = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 64 : i64, layout = "rotate_half"} : (tensor<1x4x150x64xbf16>) -> tensor<1x4x150x64xbf16>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x8x150x64xbf16>, tensor<1x4x150x64xbf16>) -> tensor<1x8x150x150xbf16>
  %s1 = "attn.scale"(%s) {scale = 0.125 : f64} : (tensor<1x8x150x150xbf16>) -> tensor<1x8x150x150xbf16>
  %s2 = "attn.softcap"(%s1) {cap = 50.0 : f64} : (tensor<1x8x150x150xbf16>) -> tensor<1x8x150x150xbf16>
  %s3 = "attn.causal"(%s2) : (tensor<1x8x150x150xbf16>) -> tensor<1x8x150x150xbf16>
  %s4 = "attn.window"(%s3) {left = 32 : i64, right = -1 : i64} : (tensor<1x8x150x150xbf16>) -> tensor<1x8x150x150xbf16>
  %p = "attn.softmax"(%s4) : (tensor<1x8x150x150xbf16>) -> tensor<1x8x150x150xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<1x8x150x150xbf16>, tensor<1x4x150x64xbf16>) -> tensor<1x8x150x64xbf16>
  return %o : tensor<1x8x150x64xbf16>
}

// ALiBi (BLOOM/MPT) with a causal mask in f16, no RoPE.
func.func @alibi_f16(%q: tensor<2x8x97x32xf16>, %k: tensor<2x8x97x32xf16>, %v: tensor<2x8x97x32xf16>) -> tensor<2x8x97x32xf16> {
  %s = "attn.qk"(%q, %k) : (tensor<2x8x97x32xf16>, tensor<2x8x97x32xf16>) -> tensor<2x8x97x97xf16>
  %s1 = "attn.scale"(%s) {scale = 0.17677669529663687 : f64} : (tensor<2x8x97x97xf16>) -> tensor<2x8x97x97xf16>
  %s2 = "attn.alibi"(%s1) {max_bias = 8.0 : f64} : (tensor<2x8x97x97xf16>) -> tensor<2x8x97x97xf16>
  %s3 = "attn.causal"(%s2) : (tensor<2x8x97x97xf16>) -> tensor<2x8x97x97xf16>
  %p = "attn.softmax"(%s3) : (tensor<2x8x97x97xf16>) -> tensor<2x8x97x97xf16>
  %o = "attn.pv"(%p, %v) : (tensor<2x8x97x97xf16>, tensor<2x8x97x32xf16>) -> tensor<2x8x97x32xf16>
  return %o : tensor<2x8x97x32xf16>
}

// SAS: per-block log-biases on cross attention (70 queries, 130 keys in
// blocks of 32), the gate applied before the scale.
func.func @sas_gate_f32(%q: tensor<1x4x70x32xf32>, %k: tensor<1x2x130x32xf32>, %v: tensor<1x2x130x48xf32>, %g: tensor<1x4x70x5xf32>) -> tensor<1x4x70x48xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x4x70x32xf32>, tensor<1x2x130x32xf32>) -> tensor<1x4x70x130xf32>
  %s1 = "attn.gate"(%s, %g) {block_size = 32 : i64} : (tensor<1x4x70x130xf32>, tensor<1x4x70x5xf32>) -> tensor<1x4x70x130xf32>
  %s2 = "attn.scale"(%s1) {scale = 0.17677669529663687 : f64} : (tensor<1x4x70x130xf32>) -> tensor<1x4x70x130xf32>
  %p = "attn.softmax"(%s2) : (tensor<1x4x70x130xf32>) -> tensor<1x4x70x130xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x4x70x130xf32>, tensor<1x2x130x48xf32>) -> tensor<1x4x70x48xf32>
  return %o : tensor<1x4x70x48xf32>
}

// Packed sequences: documents, RoPE at each token's own position, causal.
func.func @packed_f32(%q: tensor<2x4x90x32xf32>, %k: tensor<2x4x90x32xf32>, %v: tensor<2x4x90x32xf32>, %seg: tensor<2x90xi32>, %kseg: tensor<2x90xi32>, %qpos: tensor<2x90xi32>, %kpos: tensor<2x90xi32>) -> tensor<2x4x90x32xf32> {
  %qr = "attn.rope"(%q, %qpos) {theta = 500000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved"} : (tensor<2x4x90x32xf32>, tensor<2x90xi32>) -> tensor<2x4x90x32xf32>
  %kr = "attn.rope"(%k, %kpos) {theta = 500000.0 : f64, rotary_dim = 32 : i64, layout = "interleaved"} : (tensor<2x4x90x32xf32>, tensor<2x90xi32>) -> tensor<2x4x90x32xf32>
  %s = "attn.qk"(%qr, %kr) : (tensor<2x4x90x32xf32>, tensor<2x4x90x32xf32>) -> tensor<2x4x90x90xf32>
  %s1 = "attn.document"(%s, %seg, %kseg) : (tensor<2x4x90x90xf32>, tensor<2x90xi32>, tensor<2x90xi32>) -> tensor<2x4x90x90xf32>
  %s2 = "attn.causal"(%s1) : (tensor<2x4x90x90xf32>) -> tensor<2x4x90x90xf32>
  %s3 = "attn.scale"(%s2) {scale = 0.17677669529663687 : f64} : (tensor<2x4x90x90xf32>) -> tensor<2x4x90x90xf32>
  %p = "attn.softmax"(%s3) : (tensor<2x4x90x90xf32>) -> tensor<2x4x90x90xf32>
  %o = "attn.pv"(%p, %v) : (tensor<2x4x90x90xf32>, tensor<2x4x90x32xf32>) -> tensor<2x4x90x32xf32>
  return %o : tensor<2x4x90x32xf32>
}

// Decoding with a KV cache: 5 new queries at positions 115.., keys from 0,
// partial rotary dim (GPT-NeoX).
func.func @decode_f32(%q: tensor<1x4x5x64xf32>, %k: tensor<1x1x120x64xf32>, %v: tensor<1x1x120x64xf32>) -> tensor<1x4x5x64xf32> {
  %qr = "attn.rope"(%q) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half", offset = 115 : i64} : (tensor<1x4x5x64xf32>) -> tensor<1x4x5x64xf32>
  %kr = "attn.rope"(%k) {theta = 10000.0 : f64, rotary_dim = 16 : i64, layout = "rotate_half"} : (tensor<1x1x120x64xf32>) -> tensor<1x1x120x64xf32>
  %s = "attn.qk"(%qr, %kr) : (tensor<1x4x5x64xf32>, tensor<1x1x120x64xf32>) -> tensor<1x4x5x120xf32>
  %s1 = "attn.scale"(%s) {scale = 0.125 : f64} : (tensor<1x4x5x120xf32>) -> tensor<1x4x5x120xf32>
  %p = "attn.softmax"(%s1) : (tensor<1x4x5x120xf32>) -> tensor<1x4x5x120xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x4x5x120xf32>, tensor<1x1x120x64xf32>) -> tensor<1x4x5x64xf32>
  return %o : tensor<1x4x5x64xf32>
}
