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
  // Copies rows [row, row + tile rows) of head (b, h) of a [B, H, N, D]
  // tensor into a tile; rows past N read as zero.
  irdl.operation @load {
    %src = irdl.base "!builtin.memref"
    %dst = irdl.base "!builtin.memref"
    %idx = irdl.is index
    irdl.operands(source: %src, tile: %dst, batch: %idx, head: %idx, row: %idx)
  }
  // Copies a tile to rows [row, ...) of head (b, h); rows past N are dropped.
  irdl.operation @store {
    %src = irdl.base "!builtin.memref"
    %dst = irdl.base "!builtin.memref"
    %idx = irdl.is index
    irdl.operands(tile: %src, dest: %dst, batch: %idx, head: %idx, row: %idx)
  }
  // Rotates a tile in place: row r holds position pos + r.
  irdl.operation @rope {
    %m = irdl.base "!builtin.memref"
    %idx = irdl.is index
    %f = irdl.base "#builtin.float"
    %i = irdl.base "#builtin.integer"
    %s = irdl.base "#builtin.string"
    irdl.attributes {"theta" = %f, "rotary_dim" = %i, "layout" = %s}
    irdl.operands(tile: %m, pos: %idx)
  }
  // c = a * b (or a * b^T), added to c when accumulate is true.
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
  // Sets score (i, j) to -inf when key col + j is past kv_len or, if causal,
  // after query row + i.
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
}
