// comm: communication across the ranks of one communicator, at two levels.
//
// Program level: collectives on tensors (all_reduce, all_gather,
// reduce_scatter, all_to_all), fused with their producer or consumer by
// --comm-schedule.
//
// Schedule level: what a fused GEMM + collective kernel does per tile, on
// memrefs like the tile dialect: rank/world_size queries, one-sided
// put/get to and from a peer's symmetric buffer, signal/wait on flags, a
// local reduce of an arrived tile and a barrier. A "symmetric buffer" is a
// memref that every rank allocated with the same shape and registered with
// the communicator (a kernel argument; the runtime registers it as an NCCL
// window), so (peer, buffer, offset) names memory on the peer. Nothing here
// assumes a world size; peers are ranks in [0, world_size).
//
// The topology. IRDL cannot give an attribute custom syntax without C++, so
// the topology is a plain builtin DictionaryAttr, which every tool (and stock
// mlir-opt) prints and parses unchanged, under the discardable name
// "comm.topology", on any op: the module (the machine a program targets), a
// function, or one collective:
//
//   comm.topology = {gpus_per_node = 4 : i64, nodes = 2 : i64,
//                    nvlink_gbps = 450 : i64, net_gbps = 50 : i64}
//
//   gpus_per_node  GPUs in one NVLink domain (ranks per node)
//   nodes          NVLink domains (nodes) joined by the network
//   nvlink_gbps    NVLink bandwidth per GPU and direction, GB/s (10^9 B/s)
//   net_gbps       inter-node (RDMA) bandwidth per GPU and direction, GB/s
//
// All four keys are required integers >= 1, and no other key is allowed;
// world size = gpus_per_node * nodes. The C verifier in comm_dialect.c checks
// it wherever it appears, checks a collective's world_size against its own
// topology (equal) or an enclosing one (at most), and checks a constant peer
// against the nearest topology. Ops reach the topology through the nearest
// op (themselves included) that carries one.
//
// Shapes, attribute values and the peer rules are checked in comm_dialect.c.
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

  // A GEMM and its collective as one persistent kernel, made by
  // --comm-schedule: "pattern" says which pair it replaces, with operands
  // (a, b, init) of the linalg.matmul in each case:
  //   matmul_all_reduce      all_reduce(matmul(a, b, init))
  //   all_gather_matmul      matmul(all_gather(a, dim 0), b, init)
  //   matmul_reduce_scatter  reduce_scatter(matmul(a, b, init), dim 0)
  // "reduction" (all_reduce, reduce_scatter) and "dim" (all_gather,
  // reduce_scatter; 0) are checked in C. comm_sms SMs communicate while
  // compute_sms SMs multiply, out of gpu_sms; "split" is "static" (fixed)
  // or "adaptive" (comm_sms is the starting point); tile_m x tile_n is the
  // output tile of one CTA; "predicted_us" is the topology model's
  // {sequential, fused, lower_bound} in microseconds. No lowering yet.
  irdl.operation @fused_matmul {
    %ta = irdl.base "!builtin.tensor"
    %tb = irdl.base "!builtin.tensor"
    %tc = irdl.base "!builtin.tensor"
    %to = irdl.base "!builtin.tensor"
    %p = irdl.base "#builtin.string"
    %sp = irdl.base "#builtin.string"
    %w = irdl.base "#builtin.integer"
    %cs = irdl.base "#builtin.integer"
    %ks = irdl.base "#builtin.integer"
    %gs = irdl.base "#builtin.integer"
    %tm = irdl.base "#builtin.integer"
    %tn = irdl.base "#builtin.integer"
    %d = irdl.base "#builtin.dictionary"
    irdl.attributes {"pattern" = %p, "world_size" = %w, "comm_sms" = %cs,
                     "compute_sms" = %ks, "gpu_sms" = %gs, "tile_m" = %tm,
                     "tile_n" = %tn, "split" = %sp, "predicted_us" = %d}
    irdl.operands(a: %ta, b: %tb, init: %tc)
    irdl.results(out: %to)
  }

  //===-- Schedule level -------------------------------------------------===//

  // This rank's index in a scope: "world" (in [0, world_size)), "local"
  // (within its NVLink domain, in [0, gpus_per_node)) or "node" (its node,
  // in [0, nodes)).
  irdl.operation @rank {
    %s = irdl.base "#builtin.string"
    %idx = irdl.is index
    irdl.attributes {"scope" = %s}
    irdl.results(rank: %idx)
  }
  // The number of ranks in a scope: "world" (world_size), "local"
  // (gpus_per_node) or "node" (nodes).
  irdl.operation @world_size {
    %s = irdl.base "#builtin.string"
    %idx = irdl.is index
    irdl.attributes {"scope" = %s}
    irdl.results(size: %idx)
  }
  // Copies a tile into rows [row, row + R) and columns [col, col + C) of the
  // symmetric buffer dest on rank peer. The peer is an index operand or an
  // i64 attribute "peer", never both. Not ordered with later ops until a
  // comm.signal to the same peer.
  irdl.operation @put {
    %t = irdl.base "!builtin.memref"
    %b = irdl.base "!builtin.memref"
    %idx = irdl.is index
    irdl.operands(tile: %t, dest: %b, row: %idx, col: %idx,
                  peer: optional %idx)
  }
  // Copies rows [row, row + R) and columns [col, col + C) of the symmetric
  // buffer source on rank peer into a local tile (peer as for comm.put).
  // Complete when the op returns; with peer = this rank it is a local load.
  irdl.operation @get {
    %t = irdl.base "!builtin.memref"
    %b = irdl.base "!builtin.memref"
    %idx = irdl.is index
    irdl.operands(tile: %t, source: %b, row: %idx, col: %idx,
                  peer: optional %idx)
  }
  // On rank peer, sets (mode "set") or adds to (mode "add") flags[index] the
  // integer "value" >= 0, after every earlier comm.put to that peer is visible
  // there (release). flags is a symmetric rank-1 memref of i32 or i64; peer
  // as for comm.put.
  irdl.operation @signal {
    %f = irdl.base "!builtin.memref"
    %idx = irdl.is index
    %s = irdl.base "#builtin.string"
    %i = irdl.base "#builtin.integer"
    irdl.attributes {"mode" = %s, "value" = %i}
    irdl.operands(flags: %f, index: %idx, peer: optional %idx)
  }
  // Waits until this rank's flags[index] >= "value" (>= 0); later ops see
  // what the signalling peers put before signalling (acquire).
  irdl.operation @wait {
    %f = irdl.base "!builtin.memref"
    %idx = irdl.is index
    %i = irdl.base "#builtin.integer"
    irdl.attributes {"value" = %i}
    irdl.operands(flags: %f, index: %idx)
  }
  // acc = acc (+) source[row : row + R, col : col + C], element-wise, with
  // "reduction" one of sum, max, min, prod. source is a local memref,
  // typically the symmetric buffer peers put their partial tiles into.
  irdl.operation @reduce {
    %b = irdl.base "!builtin.memref"
    %t = irdl.base "!builtin.memref"
    %idx = irdl.is index
    %s = irdl.base "#builtin.string"
    irdl.attributes {"reduction" = %s}
    irdl.operands(source: %b, acc: %t, row: %idx, col: %idx)
  }
  // Every rank of the scope ("world" or "local": this rank's NVLink domain)
  // waits until all of them reach the barrier; puts issued before it are
  // visible after it.
  irdl.operation @barrier {
    %s = irdl.base "#builtin.string"
    irdl.attributes {"scope" = %s}
  }
}
