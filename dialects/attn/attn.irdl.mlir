// attn: the attention language users write. Value semantics on tensors
// [batch, heads, seq, head_dim]; shapes and attribute ranges are checked by
// the C verifier in attn_dialect.c, which IRDL cannot express.
irdl.dialect @attn {
  // RoPE on q or k before the product: rotate pairs of features by an angle
  // pos * theta^(-2i/rotary_dim).
  irdl.operation @rope {
    %t = irdl.base "!builtin.tensor"
    %f = irdl.base "#builtin.float"
    %i = irdl.base "#builtin.integer"
    %s = irdl.base "#builtin.string"
    irdl.attributes {"theta" = %f, "rotary_dim" = %i, "layout" = %s}
    irdl.operands(x: %t)
    irdl.results(out: %t)
  }
  // Scores q . k^T per (batch, head); k may have fewer heads (GQA).
  irdl.operation @qk {
    %tq = irdl.base "!builtin.tensor"
    %tk = irdl.base "!builtin.tensor"
    %ts = irdl.base "!builtin.tensor"
    irdl.operands(q: %tq, k: %tk)
    irdl.results(scores: %ts)
  }
  // Multiplies scores by a constant.
  irdl.operation @scale {
    %t = irdl.base "!builtin.tensor"
    %f = irdl.base "#builtin.float"
    irdl.attributes {"scale" = %f}
    irdl.operands(scores: %t)
    irdl.results(out: %t)
  }
  // Masks key j > query i with -inf.
  irdl.operation @causal {
    %t = irdl.base "!builtin.tensor"
    irdl.operands(scores: %t)
    irdl.results(out: %t)
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
  // optional "rope" dictionary {theta, rotary_dim, layout} says RoPE is
  // applied to q and k inside the kernel.
  irdl.operation @fused {
    %tq = irdl.base "!builtin.tensor"
    %tk = irdl.base "!builtin.tensor"
    %tv = irdl.base "!builtin.tensor"
    %to = irdl.base "!builtin.tensor"
    %f = irdl.base "#builtin.float"
    %yes = irdl.is true
    %no = irdl.is false
    %b = irdl.any_of(%yes, %no)
    irdl.attributes {"scale" = %f, "causal" = %b}
    irdl.operands(q: %tq, k: %tk, v: %tv)
    irdl.results(out: %to)
  }
}
