// attn: the attention language users write. Value semantics on tensors
// [batch, heads, seq, head_dim]; a program is
//
//   rope(q), rope(k) -> qk -> score modifiers in any order -> softmax -> pv
//
// where q, k and v may come from attn.project (x times a weight, into heads).
//
// Shapes, attribute ranges and that order are checked by the C verifier in
// attn_verify.c, which IRDL cannot express. Optional attributes are not
// declared here (IRDL has none); the C verifier checks them.
irdl.dialect @attn {
  // RoPE on q or k before the product: rotate pairs of features by an angle
  // pos * theta^(-2i/rotary_dim). Row r sits at position offset + r
  // (optional "offset" : i64, default 0) or, with the optional operand
  // positions : tensor<B x N x i32>, at positions[b, r] (then no offset).
  irdl.operation @rope {
    %t = irdl.base "!builtin.tensor"
    %p = irdl.base "!builtin.tensor"
    %f = irdl.base "#builtin.float"
    %i = irdl.base "#builtin.integer"
    %s = irdl.base "#builtin.string"
    irdl.attributes {"theta" = %f, "rotary_dim" = %i, "layout" = %s}
    irdl.operands(x: %t, positions: optional %p)
    irdl.results(out: %t)
  }
  // A linear projection into heads: x [B, N, C] times w [C, H*D], viewed
  // as [B, H, N, D] (out[b, h, n, d] = sum_c x[b, n, c] * w[c, h*D + d]).
  // It produces q, k or v. The optional "rope" dictionary ({theta,
  // rotary_dim, layout, offset, strategy}) is attn-fuse's: with
  // rope-strategy=producer it moves the attn.rope that followed into the
  // projection, which rotates its output (the GEMM's epilogue).
  irdl.operation @project {
    %tx = irdl.base "!builtin.tensor"
    %tw = irdl.base "!builtin.tensor"
    %to = irdl.base "!builtin.tensor"
    irdl.operands(x: %tx, w: %tw)
    irdl.results(out: %to)
  }
  // Scores q . k^T per (batch, head); k may have fewer heads (GQA).
  irdl.operation @qk {
    %tq = irdl.base "!builtin.tensor"
    %tk = irdl.base "!builtin.tensor"
    %ts = irdl.base "!builtin.tensor"
    irdl.operands(q: %tq, k: %tk)
    irdl.results(scores: %ts)
  }
  // Multiplies scores by a positive constant.
  irdl.operation @scale {
    %t = irdl.base "!builtin.tensor"
    %f = irdl.base "#builtin.float"
    irdl.attributes {"scale" = %f}
    irdl.operands(scores: %t)
    irdl.results(out: %t)
  }
  // Mask: key j is visible to query i iff j <= i.
  irdl.operation @causal {
    %t = irdl.base "!builtin.tensor"
    irdl.operands(scores: %t)
    irdl.results(out: %t)
  }
  // Mask: key j is visible to query i iff i - left <= j <= i + right; -1
  // leaves that side unbounded.
  irdl.operation @window {
    %t = irdl.base "!builtin.tensor"
    %l = irdl.base "#builtin.integer"
    %r = irdl.base "#builtin.integer"
    irdl.attributes {"left" = %l, "right" = %r}
    irdl.operands(scores: %t)
    irdl.results(out: %t)
  }
  // s[b,h,i,j] -= m_h * |i - j|, m_h = 2^(-max_bias * (h + 1) / H).
  irdl.operation @alibi {
    %t = irdl.base "!builtin.tensor"
    %f = irdl.base "#builtin.float"
    irdl.attributes {"max_bias" = %f}
    irdl.operands(scores: %t)
    irdl.results(out: %t)
  }
  // s <- cap * tanh(s / cap).
  irdl.operation @softcap {
    %t = irdl.base "!builtin.tensor"
    %f = irdl.base "#builtin.float"
    irdl.attributes {"cap" = %f}
    irdl.operands(scores: %t)
    irdl.results(out: %t)
  }
  // Per-block log-bias: s[b,h,i,j] += bias[b,h,i, j / block_size], bias :
  // tensor<B x H x N x ceil(M / block_size) x f32>.
  irdl.operation @gate {
    %t = irdl.base "!builtin.tensor"
    %g = irdl.base "!builtin.tensor"
    %i = irdl.base "#builtin.integer"
    irdl.attributes {"block_size" = %i}
    irdl.operands(scores: %t, bias: %g)
    irdl.results(out: %t)
  }
  // Mask: key j is visible to query i iff q_segments[b,i] == k_segments[b,j]
  // (tensor<B x N x i32>, tensor<B x M x i32>).
  irdl.operation @document {
    %t = irdl.base "!builtin.tensor"
    %qs = irdl.base "!builtin.tensor"
    %ks = irdl.base "!builtin.tensor"
    irdl.operands(scores: %t, q_segments: %qs, k_segments: %ks)
    irdl.results(out: %t)
  }
  // A score modifier of any form: the body maps one score and its indices
  // to a new score,
  //   ^bb0(%score: f32, %b: index, %h: index, %q: index, %kv: index):
  //     ... gpu.yield %new : f32
  // with upstream arith and math ops, reading tensors defined above it (a
  // bias table, per-head slopes: its captures) with tensor.extract. The C
  // verifier checks the body. IRDL cannot declare a terminator, so the body
  // ends with upstream's parent-agnostic gpu.yield.
  irdl.operation @score_mod {
    %t = irdl.base "!builtin.tensor"
    %r = irdl.region
    irdl.operands(scores: %t)
    irdl.results(out: %t)
    irdl.regions(body: %r)
  }
  // A mask of any form: the body says whether key kv is visible to query q,
  //   ^bb0(%b: index, %h: index, %q: index, %kv: index):
  //     ... gpu.yield %visible : i1
  // with the same ops and captures as attn.score_mod's.
  irdl.operation @mask_mod {
    %t = irdl.base "!builtin.tensor"
    %r = irdl.region
    irdl.operands(scores: %t)
    irdl.results(out: %t)
    irdl.regions(body: %r)
  }
  // Softmax over the key axis.
  irdl.operation @softmax {
    %t = irdl.base "!builtin.tensor"
    irdl.operands(scores: %t)
    irdl.results(probs: %t)
  }
  // Probabilities times values; v may have fewer heads (GQA).
  irdl.operation @pv {
    %tp = irdl.base "!builtin.tensor"
    %tv = irdl.base "!builtin.tensor"
    %to = irdl.base "!builtin.tensor"
    irdl.operands(probs: %tp, v: %tv)
    irdl.results(out: %to)
  }
  // One attention computed by one kernel: what attn-fuse produces. The
  // inputs after v are optional (operandSegmentSizes = array<i32: 1, 1, 1,
  // gate, q_segments, k_segments, q_positions, k_positions>, each 0 or 1).
  // Optional attributes: window = array<i64: left, right>, alibi = f64
  // (max_bias), softcap = f64 (cap), gate_block = i64, rope = {theta,
  // rotary_dim, layout, offset | q_offset, k_offset}, mods = [names of
  // "scale", "softcap", "alibi", "gate", "fn" in the order applied]. Two
  // regions, each empty or one block: score_fn (the attn.score_mod bodies of
  // the chain, applied where "mods" says "fn") and mask_fn (the attn.mask_mod
  // bodies, and-ed with the other masks). The optional unit attribute lse
  // (set by attn-grad) adds a second result: the row log-sum-exp (natural
  // log) of the final scores, tensor<B x H x N x f32>, +inf for a row that
  // sees no key.
  irdl.operation @fused {
    %tq = irdl.base "!builtin.tensor"
    %tk = irdl.base "!builtin.tensor"
    %tv = irdl.base "!builtin.tensor"
    %tg = irdl.base "!builtin.tensor"
    %tqs = irdl.base "!builtin.tensor"
    %tks = irdl.base "!builtin.tensor"
    %tqp = irdl.base "!builtin.tensor"
    %tkp = irdl.base "!builtin.tensor"
    %to = irdl.base "!builtin.tensor"
    %rs = irdl.region
    %rm = irdl.region
    %f = irdl.base "#builtin.float"
    %yes = irdl.is true
    %no = irdl.is false
    %b = irdl.any_of(%yes, %no)
    irdl.attributes {"scale" = %f, "causal" = %b}
    irdl.operands(q: %tq, k: %tk, v: %tv, gate: optional %tg,
                  q_segments: optional %tqs, k_segments: optional %tks,
                  q_positions: optional %tqp, k_positions: optional %tkp)
    %tl = irdl.base "!builtin.tensor"
    irdl.results(out: %to, lse: optional %tl)
    irdl.regions(score_fn: %rs, mask_fn: %rm)
  }
  // One decode attention over a KV cache (issue 30): the few query rows of
  // each sequence sit at the end of its keys. Operands q [B, H, Nq, D],
  // k_cache and v_cache ([B, Hk, M, D] contiguous, or [P, Hk, page_size, D]
  // pages), cache_seqlens (tensor<B x i32>: keys per sequence, the new
  // tokens' included) and, for a paged cache, block_table (tensor<B x
  // max_pages x i32>: page j of sequence b is k_cache[table[b, j]]);
  // operandSegmentSizes = array<i32: 1, 1, 1, 1, t>. cache_layout is
  // "contiguous" or "paged"; page_size (i64) goes with "paged". Optional
  // attributes as attn.fused's: window, alibi, softcap, rope {theta,
  // rotary_dim, layout} (q rotated at its position, the cache holding
  // rotated keys), mods (of "scale", "softcap", "alibi").
  irdl.operation @fused_decode {
    %tq = irdl.base "!builtin.tensor"
    %tk = irdl.base "!builtin.tensor"
    %tv = irdl.base "!builtin.tensor"
    %tl = irdl.base "!builtin.tensor"
    %tt = irdl.base "!builtin.tensor"
    %to = irdl.base "!builtin.tensor"
    %f = irdl.base "#builtin.float"
    %s = irdl.base "#builtin.string"
    %yes = irdl.is true
    %no = irdl.is false
    %b = irdl.any_of(%yes, %no)
    irdl.attributes {"scale" = %f, "causal" = %b, "cache_layout" = %s}
    irdl.operands(q: %tq, k_cache: %tk, v_cache: %tv, cache_seqlens: %tl,
                  block_table: optional %tt)
    irdl.results(out: %to)
  }
  // The new tokens' keys and values written into a KV cache (issue 30):
  // k_new and v_new [B, Hk, N, D] / [B, Hk, N, Dv] become rows
  // cache_seqlens[b] - N + i of sequence b, so cache_seqlens counts them
  // (as attn.fused_decode's). Operands k_cache, v_cache (the layouts of
  // attn.fused_decode), cache_seqlens, block_table with a paged cache,
  // k_new, v_new; operandSegmentSizes = array<i32: 1, 1, 1, t, 1, 1>.
  // Results: the caches with those rows written, of the caches' types.
  // cache_layout and page_size as attn.fused_decode's; optional rope
  // {theta, rotary_dim, layout}: k_new rotated at its positions first.
  irdl.operation @cache_append {
    %tk = irdl.base "!builtin.tensor"
    %tv = irdl.base "!builtin.tensor"
    %tl = irdl.base "!builtin.tensor"
    %tt = irdl.base "!builtin.tensor"
    %tkn = irdl.base "!builtin.tensor"
    %tvn = irdl.base "!builtin.tensor"
    %s = irdl.base "#builtin.string"
    irdl.attributes {"cache_layout" = %s}
    irdl.operands(k_cache: %tk, v_cache: %tv, cache_seqlens: %tl,
                  block_table: optional %tt, k_new: %tkn, v_new: %tvn)
    irdl.results(k_cache_out: %tk, v_cache_out: %tv)
  }
  // The backward of one attn.fused (what attn-grad derives): the same
  // inputs, attributes and regions, then the forward's output out, its
  // lse (tensor<B x H x N x f32>) and dout, the gradient of out (out's
  // type); results dq, dk, dv (the types of q, k and v), then the
  // gradients of captured tensors that asked for one (attn-grad's
  // {attn.grad} argument attribute): the optional string array "grads"
  // names each ("gate", or "capture<i>": the i-th captured tensor in
  // argument order), of its tensor's shape and the compute type (f32, f64
  // in f64 programs), at most eight (optional results: IRDL unifies the
  // types of one variadic's values). operandSegmentSizes has eleven
  // entries: 1, 1, 1, the five optional inputs (0 or 1), 1, 1, 1;
  // resultSegmentSizes eleven too: 1, 1, 1, then len(grads) ones and
  // zeros. The segment ids and positions get no gradient.
  irdl.operation @fused_grad {
    %tq = irdl.base "!builtin.tensor"
    %tk = irdl.base "!builtin.tensor"
    %tv = irdl.base "!builtin.tensor"
    %tg = irdl.base "!builtin.tensor"
    %tqs = irdl.base "!builtin.tensor"
    %tks = irdl.base "!builtin.tensor"
    %tqp = irdl.base "!builtin.tensor"
    %tkp = irdl.base "!builtin.tensor"
    %to = irdl.base "!builtin.tensor"
    %tl = irdl.base "!builtin.tensor"
    %tdo = irdl.base "!builtin.tensor"
    %tdq = irdl.base "!builtin.tensor"
    %tdk = irdl.base "!builtin.tensor"
    %tdv = irdl.base "!builtin.tensor"
    %tg0 = irdl.base "!builtin.tensor"
    %tg1 = irdl.base "!builtin.tensor"
    %tg2 = irdl.base "!builtin.tensor"
    %tg3 = irdl.base "!builtin.tensor"
    %tg4 = irdl.base "!builtin.tensor"
    %tg5 = irdl.base "!builtin.tensor"
    %tg6 = irdl.base "!builtin.tensor"
    %tg7 = irdl.base "!builtin.tensor"
    %rs = irdl.region
    %rm = irdl.region
    %f = irdl.base "#builtin.float"
    %yes = irdl.is true
    %no = irdl.is false
    %b = irdl.any_of(%yes, %no)
    irdl.attributes {"scale" = %f, "causal" = %b}
    irdl.operands(q: %tq, k: %tk, v: %tv, gate: optional %tg,
                  q_segments: optional %tqs, k_segments: optional %tks,
                  q_positions: optional %tqp, k_positions: optional %tkp,
                  out: %to, lse: %tl, dout: %tdo)
    irdl.results(dq: %tdq, dk: %tdk, dv: %tdv, grad0: optional %tg0,
                 grad1: optional %tg1, grad2: optional %tg2,
                 grad3: optional %tg3, grad4: optional %tg4,
                 grad5: optional %tg5, grad6: optional %tg6,
                 grad7: optional %tg7)
    irdl.regions(score_fn: %rs, mask_fn: %rm)
  }
}
