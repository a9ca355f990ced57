// tile: a kernel over a grid of CTAs with tiles as memref values. Loops and
// scalar math stay upstream (scf, arith); tile adds what they lack. Shape
// agreement is checked by the C verifier in tile_dialect.c.
irdl.dialect @tile {
  // Index of this CTA along grid dimension "dim" (0, 1 or 2).
  irdl.operation @program_id {
    %i = irdl.base "#builtin.integer"
    %idx = irdl.is index
    irdl.attributes {"dim" = %i}
    irdl.results(id: %idx)
  }
  // A CTA-local tile; the lowering decides where it lives (shared memory on
  // the GPU path, the stack on the CPU path).
  irdl.operation @alloc {
    %m = irdl.base "!builtin.memref"
    irdl.results(tile: %m)
  }
  // Sets every element of a tile.
  irdl.operation @fill {
    %m = irdl.base "!builtin.memref"
    %f = irdl.base "#builtin.float"
    irdl.attributes {"value" = %f}
    irdl.operands(tile: %m)
  }
  // Copies part of a tensor into a tile. Indices (batch, head, row) for a
  // [B, H, N, D] tensor: rows [row, row + tile rows) of head (b, h), all D
  // columns; rows past N read as zero. Indices (batch, head, row) for a
  // [B, H, N] tensor (one value per row: the log-sum-exp, D = rowsum(dO O))
  // and a rank-1 tile: the same rows. Indices (row, col) for an [M, N]
  // matrix: the tile-sized window at (row, col); elements past either edge
  // read as zero, or as the optional "pad" : f64 (the backward's lse loads:
  // +inf, a padding row that sees no key). The C verifier checks the count
  // against the rank.
  irdl.operation @load {
    %src = irdl.base "!builtin.memref"
    %dst = irdl.base "!builtin.memref"
    %idx = irdl.is index
    irdl.operands(source: %src, tile: %dst, indices: variadic %idx)
  }
  // Copies a tile into part of a tensor, indexed as tile.load; elements
  // that fall past the tensor's edges are dropped.
  irdl.operation @store {
    %src = irdl.base "!builtin.memref"
    %dst = irdl.base "!builtin.memref"
    %idx = irdl.is index
    irdl.operands(tile: %src, dest: %dst, indices: variadic %idx)
  }
  // Rotates a tile in place: row r holds position offset + pos + r (optional
  // "offset" : i64, default 0). Optional "inverse" : bool (default false):
  // rotate by minus the angle (R^T, the backward of the rotation).
  irdl.operation @rope {
    %m = irdl.base "!builtin.memref"
    %idx = irdl.is index
    %f = irdl.base "#builtin.float"
    %i = irdl.base "#builtin.integer"
    %s = irdl.base "#builtin.string"
    irdl.attributes {"theta" = %f, "rotary_dim" = %i, "layout" = %s}
    irdl.operands(tile: %m, pos: %idx)
  }
  // Rotates a tile in place at explicit positions: row r holds position
  // positions[batch, row + r] (positions : memref<B x N x i32>; rows past N
  // read position N - 1, their values are padding). Optional "inverse" as
  // tile.rope's.
  irdl.operation @rope_positions {
    %m = irdl.base "!builtin.memref"
    %p = irdl.base "!builtin.memref"
    %idx = irdl.is index
    %f = irdl.base "#builtin.float"
    %i = irdl.base "#builtin.integer"
    %s = irdl.base "#builtin.string"
    irdl.attributes {"theta" = %f, "rotary_dim" = %i, "layout" = %s}
    irdl.operands(tile: %m, batch: %idx, row: %idx, positions: %p)
  }
  // c = a * b (or a * b^T), added to c when accumulate is true. Optional
  // "transpose_a" : bool (default false): a^T in place of a (a is K x M).
  irdl.operation @mma {
    %a = irdl.base "!builtin.memref"
    %b = irdl.base "!builtin.memref"
    %c = irdl.base "!builtin.memref"
    %yes = irdl.is true
    %no = irdl.is false
    %tb = irdl.any_of(%yes, %no)
    %ac = irdl.any_of(%yes, %no)
    irdl.attributes {"transpose_b" = %tb, "accumulate" = %ac}
    irdl.operands(a: %a, b: %b, c: %c)
  }
  // Sets score (i, j) to -inf when key j' = col + j is past kv_len or, for
  // query i' = row + i, if causal and j' > i', or outside the optional
  // window = array<i64: left, right> (i' - left <= j' <= i' + right; -1:
  // unbounded).
  irdl.operation @mask {
    %m = irdl.base "!builtin.memref"
    %idx = irdl.is index
    %i = irdl.base "#builtin.integer"
    %yes = irdl.is true
    %no = irdl.is false
    %bool = irdl.any_of(%yes, %no)
    irdl.attributes {"causal" = %bool, "kv_len" = %i}
    irdl.operands(scores: %m, row: %idx, col: %idx)
  }
  // Applies score modifiers to a score tile in the order "mods" names them,
  // for query rows row + i and keys col + j of head (batch, head):
  //   "scale":   s *= scale                           (attribute scale : f64)
  //   "softcap": s = softcap * tanh(s / softcap)      (softcap : f64)
  //   "alibi":   s -= 2^(-alibi * (head + 1) / heads) * |i' - j'|
  //                                                   (alibi, heads : i64)
  // A gate (attn.gate) and a document mask (attn.document) are not named
  // here: attn-tile writes them as tile.score_fn / tile.mask_fn bodies.
  irdl.operation @score_mod {
    %m = irdl.base "!builtin.memref"
    %idx = irdl.is index
    %a = irdl.base "#builtin.array"
    irdl.attributes {"mods" = %a}
    irdl.operands(scores: %m, batch: %idx, head: %idx, row: %idx, col: %idx)
  }
  // A score modifier of any form on a score tile: score (i, j) of query
  // q = min(row + i, seq_q - 1) and key kv = min(col + j, seq_k - 1) of head
  // (batch, head) becomes the body's value,
  //   ^bb0(%score: f32, %b: index, %h: index, %q: index, %kv: index):
  //     ... gpu.yield %new : f32
  // (attn.score_mod's body, its tensor captures now memrefs defined above,
  // read by memref.load at indices attn-tile has clamped into their shapes).
  // Attributes seq_q, seq_k : i64.
  irdl.operation @score_fn {
    %m = irdl.base "!builtin.memref"
    %idx = irdl.is index
    %n = irdl.base "#builtin.integer"
    %mk = irdl.base "#builtin.integer"
    %r = irdl.region
    irdl.attributes {"seq_q" = %n, "seq_k" = %mk}
    irdl.operands(scores: %m, batch: %idx, head: %idx, row: %idx, col: %idx)
    irdl.regions(body: %r)
  }
  // A mask of any form on a score tile: score (i, j), indexed as in
  // tile.score_fn, becomes -inf where the body yields false,
  //   ^bb0(%b: index, %h: index, %q: index, %kv: index):
  //     ... gpu.yield %visible : i1
  irdl.operation @mask_fn {
    %m = irdl.base "!builtin.memref"
    %idx = irdl.is index
    %n = irdl.base "#builtin.integer"
    %mk = irdl.base "#builtin.integer"
    %r = irdl.region
    irdl.attributes {"seq_q" = %n, "seq_k" = %mk}
    irdl.operands(scores: %m, batch: %idx, head: %idx, row: %idx, col: %idx)
    irdl.regions(body: %r)
  }
  // Online softmax step over one key block: updates the running row max m
  // and sum l (log2 domain), rescales acc, and turns scores into weights.
  irdl.operation @softmax_update {
    %s = irdl.base "!builtin.memref"
    %m = irdl.base "!builtin.memref"
    %l = irdl.base "!builtin.memref"
    %acc = irdl.base "!builtin.memref"
    %f = irdl.base "#builtin.float"
    irdl.attributes {"scale" = %f}
    irdl.operands(scores: %s, row_max: %m, row_sum: %l, acc: %acc)
  }
  // acc[i, :] /= l[i].
  irdl.operation @normalize {
    %acc = irdl.base "!builtin.memref"
    %l = irdl.base "!builtin.memref"
    irdl.operands(acc: %acc, row_sum: %l)
  }
  // The row log-sum-exp (natural log) from softmax_update's running max m
  // and sum l (log2 domain): lse[i] = (m[i] + log2(l[i])) * ln 2, +inf
  // where l[i] == 0 (a row that sees no key).
  irdl.operation @row_lse {
    %m = irdl.base "!builtin.memref"
    %l = irdl.base "!builtin.memref"
    %lse = irdl.base "!builtin.memref"
    irdl.operands(row_max: %m, row_sum: %l, lse: %lse)
  }
  // d[i] = sum_j a[i, j] * b[i, j] (D = rowsum(dO * O) of the backward).
  irdl.operation @row_dot {
    %a = irdl.base "!builtin.memref"
    %b = irdl.base "!builtin.memref"
    %d = irdl.base "!builtin.memref"
    irdl.operands(a: %a, b: %b, d: %d)
  }
  // Scores into probabilities, in place, from the forward's log-sum-exp:
  // s[i, j] = exp(scale * s[i, j] - lse[i]); 0 where s is -inf or lse[i]
  // is +inf.
  irdl.operation @exp_lse {
    %s = irdl.base "!builtin.memref"
    %lse = irdl.base "!builtin.memref"
    %f = irdl.base "#builtin.float"
    irdl.attributes {"scale" = %f}
    irdl.operands(scores: %s, lse: %lse)
  }
  // The softmax backward, in place in dp: dp[i, j] = scale * p[i, j] *
  // (dp[i, j] - d[i]) (scale as in tile.exp_lse).
  irdl.operation @ds {
    %p = irdl.base "!builtin.memref"
    %dp = irdl.base "!builtin.memref"
    %d = irdl.base "!builtin.memref"
    %f = irdl.base "#builtin.float"
    irdl.attributes {"scale" = %f}
    irdl.operands(p: %p, dp: %dp, d: %d)
  }
  // The backward of a tile.score_fn: ds[i, j] *= body(s_in[i, j], b, h, q,
  // kv), indexed as in tile.score_fn, where the body (of tile.score_fn's
  // form) yields the derivative of the forward body with respect to its
  // score at s_in. Attributes seq_q, seq_k : i64.
  irdl.operation @score_fn_grad {
    %ds = irdl.base "!builtin.memref"
    %s = irdl.base "!builtin.memref"
    %idx = irdl.is index
    %n = irdl.base "#builtin.integer"
    %mk = irdl.base "#builtin.integer"
    %r = irdl.region
    irdl.attributes {"seq_q" = %n, "seq_k" = %mk}
    irdl.operands(ds: %ds, scores_in: %s, batch: %idx, head: %idx, row: %idx,
                  col: %idx)
    irdl.regions(body: %r)
  }
  // Zeroes dst, a gradient buffer in global memory (a kernel argument) of
  // any rank: every element, by the CTA that runs it (attn-tile puts it
  // under an scf.if on the first CTA of a kernel launched before the ones
  // that accumulate into dst).
  irdl.operation @clear {
    %d = irdl.base "!builtin.memref"
    irdl.operands(dst: %d)
  }
  // Gradient into a captured tensor (issue 29): per element (i, j) of the
  // tile, the body (tile.score_fn's arguments, at scores_in[i, j]) yields
  // t, the derivative of the modifier chain's value with respect to one
  // value it loads, then that value's indices into grad; grad[indices] +=
  // scale * ds[i, j] * t, atomically (elements of one CTA and of several
  // CTAs may meet), nothing where ds is 0 (a masked score). Attributes
  // seq_q, seq_k : i64 as tile.score_fn's, scale : f64.
  irdl.operation @capture_grad {
    %ds = irdl.base "!builtin.memref"
    %s = irdl.base "!builtin.memref"
    %g = irdl.base "!builtin.memref"
    %idx = irdl.is index
    %n = irdl.base "#builtin.integer"
    %mk = irdl.base "#builtin.integer"
    %f = irdl.base "#builtin.float"
    %r = irdl.region
    irdl.attributes {"seq_q" = %n, "seq_k" = %mk, "scale" = %f}
    irdl.operands(ds: %ds, scores_in: %s, grad: %g, batch: %idx, head: %idx,
                  row: %idx, col: %idx)
    irdl.regions(body: %r)
  }
}
