// score_mod / mask_mod bodies of flex_attention's idioms (issue 28), for
// attn-run on the CPU path against the float64 reference, which evaluates
// the same bodies: a relative-position bias table, prefix LM, ALiBi written
// as a body, a document mask as a body, and captures of every element type
// and of rank 1 to 3.

// A relative-position bias table bias[q - kv + M - 1] after the scale,
// causal; M != N so that the table's index range is asymmetric.
func.func @rel_bias_f32(%q: tensor<1x2x40x16xf32>, %k: tensor<1x2x48x16xf32>, %v: tensor<1x2x48x16xf32>, %bias: tensor<87xf32>) -> tensor<1x2x40x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x40x16xf32>, tensor<1x2x48x16xf32>) -> tensor<1x2x40x48xf32>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x2x40x48xf32>) -> tensor<1x2x40x48xf32>
  %s2 = "attn.score_mod"(%s1) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c47 = arith.constant 47 : index
    %d = arith.subi %i, %j : index
    %e = arith.addi %d, %c47 : index
    %t = tensor.extract %bias[%e] : tensor<87xf32>
    %y = arith.addf %x, %t : f32
    gpu.yield %y : f32
  }) : (tensor<1x2x40x48xf32>) -> tensor<1x2x40x48xf32>
  %s3 = "attn.causal"(%s2) : (tensor<1x2x40x48xf32>) -> tensor<1x2x40x48xf32>
  %p = "attn.softmax"(%s3) : (tensor<1x2x40x48xf32>) -> tensor<1x2x40x48xf32>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x40x48xf32>, tensor<1x2x48x16xf32>) -> tensor<1x2x40x16xf32>
  return %o : tensor<1x2x40x16xf32>
}

// Prefix LM: the first 10 keys are visible to every query, the rest
// causally.
func.func @prefix_lm_f32(%q: tensor<2x2x33x16xf32>, %k: tensor<2x2x33x16xf32>, %v: tensor<2x2x33x16xf32>) -> tensor<2x2x33x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<2x2x33x16xf32>, tensor<2x2x33x16xf32>) -> tensor<2x2x33x33xf32>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<2x2x33x33xf32>) -> tensor<2x2x33x33xf32>
  %s2 = "attn.mask_mod"(%s1) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %c10 = arith.constant 10 : index
    %pre = arith.cmpi ult, %j, %c10 : index
    %past = arith.cmpi ule, %j, %i : index
    %ok = arith.ori %pre, %past : i1
    gpu.yield %ok : i1
  }) : (tensor<2x2x33x33xf32>) -> tensor<2x2x33x33xf32>
  %p = "attn.softmax"(%s2) : (tensor<2x2x33x33xf32>) -> tensor<2x2x33x33xf32>
  %o = "attn.pv"(%p, %v) : (tensor<2x2x33x33xf32>, tensor<2x2x33x16xf32>) -> tensor<2x2x33x16xf32>
  return %o : tensor<2x2x33x16xf32>
}

// ALiBi as a body: s - 2^(-8 (h + 1) / H) |i - j|, the slope computed in
// the body (as attn.alibi does), on bf16 inputs, GQA.
func.func @alibi_body_bf16(%q: tensor<1x4x30x16xbf16>, %k: tensor<1x2x30x16xbf16>, %v: tensor<1x2x30x16xbf16>) -> tensor<1x4x30x16xbf16> {
  %s = "attn.qk"(%q, %k) : (tensor<1x4x30x16xbf16>, tensor<1x2x30x16xbf16>) -> tensor<1x4x30x30xbf16>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<1x4x30x30xbf16>) -> tensor<1x4x30x30xbf16>
  %s2 = "attn.score_mod"(%s1) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %c1 = arith.constant 1 : index
    %h1 = arith.addi %h, %c1 : index
    %h64 = arith.index_cast %h1 : index to i64
    %hf = arith.sitofp %h64 : i64 to f32
    %coef = arith.constant -2.0 : f32
    %e = arith.mulf %hf, %coef : f32
    %slope = math.exp2 %e : f32
    %i64 = arith.index_cast %i : index to i64
    %j64 = arith.index_cast %j : index to i64
    %d = arith.subi %i64, %j64 : i64
    %df = arith.sitofp %d : i64 to f32
    %ad = math.absf %df : f32
    %p = arith.mulf %slope, %ad : f32
    %y = arith.subf %x, %p : f32
    gpu.yield %y : f32
  }) : (tensor<1x4x30x30xbf16>) -> tensor<1x4x30x30xbf16>
  %s3 = "attn.causal"(%s2) : (tensor<1x4x30x30xbf16>) -> tensor<1x4x30x30xbf16>
  %p = "attn.softmax"(%s3) : (tensor<1x4x30x30xbf16>) -> tensor<1x4x30x30xbf16>
  %o = "attn.pv"(%p, %v) : (tensor<1x4x30x30xbf16>, tensor<1x2x30x16xbf16>) -> tensor<1x4x30x16xbf16>
  return %o : tensor<1x4x30x16xbf16>
}

// A document mask as a body: ids[b, i] == ids[b, j] (i32 ids in [0, 4)),
// with a sliding window beside it.
func.func @document_body_f32(%q: tensor<2x2x37x16xf32>, %k: tensor<2x2x37x16xf32>, %v: tensor<2x2x37x16xf32>, %ids: tensor<2x37xi32>) -> tensor<2x2x37x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<2x2x37x16xf32>, tensor<2x2x37x16xf32>) -> tensor<2x2x37x37xf32>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<2x2x37x37xf32>) -> tensor<2x2x37x37xf32>
  %s2 = "attn.window"(%s1) {left = 20 : i64, right = 3 : i64} : (tensor<2x2x37x37xf32>) -> tensor<2x2x37x37xf32>
  %s3 = "attn.mask_mod"(%s2) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %a = tensor.extract %ids[%b, %i] : tensor<2x37xi32>
    %c = tensor.extract %ids[%b, %j] : tensor<2x37xi32>
    %ok = arith.cmpi eq, %a, %c : i32
    gpu.yield %ok : i1
  }) : (tensor<2x2x37x37xf32>) -> tensor<2x2x37x37xf32>
  %p = "attn.softmax"(%s3) : (tensor<2x2x37x37xf32>) -> tensor<2x2x37x37xf32>
  %o = "attn.pv"(%p, %v) : (tensor<2x2x37x37xf32>, tensor<2x2x37x16xf32>) -> tensor<2x2x37x16xf32>
  return %o : tensor<2x2x37x16xf32>
}

// Captures of every element type and rank 1 to 3, a score_mod between
// named modifiers (softcap before, scale after), and two score_mods
// composed: per-(head, query) f16 biases, bf16 per-head scales, an i64
// per-key bucket table indexing an f32 table per head, an i32 key mask.
func.func @captures_f16(%q: tensor<1x2x24x16xf16>, %k: tensor<1x2x40x16xf16>, %v: tensor<1x2x40x16xf16>, %hb: tensor<2x24xf16>, %hs: tensor<2xbf16>, %bucket: tensor<40xi64>, %tab: tensor<2x1x8xf32>, %keep: tensor<1x40xi32>) -> tensor<1x2x24x16xf16> {
  %s = "attn.qk"(%q, %k) : (tensor<1x2x24x16xf16>, tensor<1x2x40x16xf16>) -> tensor<1x2x24x40xf16>
  %s1 = "attn.softcap"(%s) {cap = 30.0 : f64} : (tensor<1x2x24x40xf16>) -> tensor<1x2x24x40xf16>
  %s2 = "attn.score_mod"(%s1) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %t = tensor.extract %hb[%h, %i] : tensor<2x24xf16>
    %tf = arith.extf %t : f16 to f32
    %m = tensor.extract %hs[%h] : tensor<2xbf16>
    %mf = arith.extf %m : bf16 to f32
    %y0 = arith.mulf %x, %mf : f32
    %y = arith.addf %y0, %tf : f32
    gpu.yield %y : f32
  }) : (tensor<1x2x24x40xf16>) -> tensor<1x2x24x40xf16>
  %s3 = "attn.score_mod"(%s2) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %bk = tensor.extract %bucket[%j] : tensor<40xi64>
    %c0 = arith.constant 0 : index
    %bi = arith.index_cast %bk : i64 to index
    %t = tensor.extract %tab[%h, %c0, %bi] : tensor<2x1x8xf32>
    %y = arith.subf %x, %t : f32
    gpu.yield %y : f32
  }) : (tensor<1x2x24x40xf16>) -> tensor<1x2x24x40xf16>
  %s4 = "attn.scale"(%s3) {scale = 0.25 : f64} : (tensor<1x2x24x40xf16>) -> tensor<1x2x24x40xf16>
  %s5 = "attn.mask_mod"(%s4) ({
  ^bb0(%b: index, %h: index, %i: index, %j: index):
    %w = tensor.extract %keep[%b, %j] : tensor<1x40xi32>
    %z = arith.constant 0 : i32
    %ok = arith.cmpi ne, %w, %z : i32
    %c3 = arith.constant 3 : index
    %near = arith.cmpi ult, %j, %c3 : index
    %vis = arith.ori %ok, %near : i1
    gpu.yield %vis : i1
  }) : (tensor<1x2x24x40xf16>) -> tensor<1x2x24x40xf16>
  %p = "attn.softmax"(%s5) : (tensor<1x2x24x40xf16>) -> tensor<1x2x24x40xf16>
  %o = "attn.pv"(%p, %v) : (tensor<1x2x24x40xf16>, tensor<1x2x40x16xf16>) -> tensor<1x2x24x16xf16>
  return %o : tensor<1x2x24x16xf16>
}

// A body reading an input of a named block too: the document mask's
// q_segments and k_segments, here also a bias by the key's segment. The
// kernel takes the tensor once, as k_segments; the reference reads the same
// ids.
func.func @segment_bias_f32(%q: tensor<2x2x29x16xf32>, %k: tensor<2x2x29x16xf32>, %v: tensor<2x2x29x16xf32>, %qs: tensor<2x29xi32>, %ks: tensor<2x29xi32>) -> tensor<2x2x29x16xf32> {
  %s = "attn.qk"(%q, %k) : (tensor<2x2x29x16xf32>, tensor<2x2x29x16xf32>) -> tensor<2x2x29x29xf32>
  %s1 = "attn.scale"(%s) {scale = 0.25 : f64} : (tensor<2x2x29x29xf32>) -> tensor<2x2x29x29xf32>
  %s2 = "attn.document"(%s1, %qs, %ks) : (tensor<2x2x29x29xf32>, tensor<2x29xi32>, tensor<2x29xi32>) -> tensor<2x2x29x29xf32>
  %s3 = "attn.score_mod"(%s2) ({
  ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
    %t = tensor.extract %ks[%b, %j] : tensor<2x29xi32>
    %tf = arith.sitofp %t : i32 to f32
    %c = arith.constant 0.25 : f32
    %y = arith.addf %x, %tf : f32
    %z = arith.mulf %y, %c : f32
    gpu.yield %z : f32
  }) : (tensor<2x2x29x29xf32>) -> tensor<2x2x29x29xf32>
  %p = "attn.softmax"(%s3) : (tensor<2x2x29x29xf32>) -> tensor<2x2x29x29xf32>
  %o = "attn.pv"(%p, %v) : (tensor<2x2x29x29xf32>, tensor<2x2x29x16xf32>) -> tensor<2x2x29x16xf32>
  return %o : tensor<2x2x29x16xf32>
}
