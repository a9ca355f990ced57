// comm: collectives on tensors across the ranks of one communicator. They
// need no lowering yet; shapes are checked by the C verifier in
// comm_dialect.c.
irdl.dialect @comm {
  // Element-wise reduction of x over all ranks; every rank gets the result.
  irdl.operation @all_reduce {
    %t = irdl.base "!builtin.tensor"
    %s = irdl.base "#builtin.string"
    %i = irdl.base "#builtin.integer"
    irdl.attributes {"reduction" = %s, "world_size" = %i}
    irdl.operands(x: %t)
    irdl.results(out: %t)
  }
  // Concatenates every rank's x along dim.
  irdl.operation @all_gather {
    %x = irdl.base "!builtin.tensor"
    %o = irdl.base "!builtin.tensor"
    %d = irdl.base "#builtin.integer"
    %w = irdl.base "#builtin.integer"
    irdl.attributes {"dim" = %d, "world_size" = %w}
    irdl.operands(x: %x)
    irdl.results(out: %o)
  }
  // Reduces over ranks, then each rank keeps its slice along dim.
  irdl.operation @reduce_scatter {
    %x = irdl.base "!builtin.tensor"
    %o = irdl.base "!builtin.tensor"
    %s = irdl.base "#builtin.string"
    %d = irdl.base "#builtin.integer"
    %w = irdl.base "#builtin.integer"
    irdl.attributes {"dim" = %d, "reduction" = %s, "world_size" = %w}
    irdl.operands(x: %x)
    irdl.results(out: %o)
  }
  // Splits x along split_dim, sends slice r to rank r, concatenates what
  // arrives along concat_dim.
  irdl.operation @all_to_all {
    %x = irdl.base "!builtin.tensor"
    %o = irdl.base "!builtin.tensor"
    %sd = irdl.base "#builtin.integer"
    %cd = irdl.base "#builtin.integer"
    %w = irdl.base "#builtin.integer"
    irdl.attributes {"split_dim" = %sd, "concat_dim" = %cd, "world_size" = %w}
    irdl.operands(x: %x)
    irdl.results(out: %o)
  }
}
