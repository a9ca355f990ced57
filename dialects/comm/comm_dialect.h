//===- comm_dialect.h - Op names and readers of the comm dialect ----------===//
#ifndef ATTN_COMM_DIALECT_H
#define ATTN_COMM_DIALECT_H

#include "dialects/dialects.h"

//===-- Op names ----------------------------------------------------------===//

/// Collectives on tensors (program level).
#define ATTN_OP_COMM_ALL_REDUCE "comm.all_reduce"
#define ATTN_OP_COMM_ALL_GATHER "comm.all_gather"
#define ATTN_OP_COMM_REDUCE_SCATTER "comm.reduce_scatter"
#define ATTN_OP_COMM_ALL_TO_ALL "comm.all_to_all"

/// A GEMM fused with its collective (one persistent kernel; --comm-schedule).
#define ATTN_OP_COMM_FUSED_MATMUL "comm.fused_matmul"

/// Tile-level ops on memrefs (schedule level).
#define ATTN_OP_COMM_RANK "comm.rank"
#define ATTN_OP_COMM_WORLD_SIZE "comm.world_size"
#define ATTN_OP_COMM_PUT "comm.put"
#define ATTN_OP_COMM_GET "comm.get"
#define ATTN_OP_COMM_SIGNAL "comm.signal"
#define ATTN_OP_COMM_WAIT "comm.wait"
#define ATTN_OP_COMM_REDUCE "comm.reduce"
#define ATTN_OP_COMM_BARRIER "comm.barrier"

//===-- Topology ----------------------------------------------------------===//

/// The discardable attribute that carries the topology, on any op (usually
/// the module): a DictionaryAttr with the four integer keys below.
#define ATTN_COMM_TOPOLOGY_ATTR "comm.topology"
#define ATTN_COMM_TOPOLOGY_GPUS_PER_NODE "gpus_per_node"
#define ATTN_COMM_TOPOLOGY_NODES "nodes"
#define ATTN_COMM_TOPOLOGY_NVLINK_GBPS "nvlink_gbps"
#define ATTN_COMM_TOPOLOGY_NET_GBPS "net_gbps"

/// A machine: nodes NVLink domains of gpus_per_node GPUs each; bandwidths
/// per GPU in GB/s. Every field is >= 1 once read.
struct attn_comm_topology {
  int64_t gpus_per_node;
  int64_t nodes;
  int64_t nvlink_gbps;
  int64_t net_gbps;
};

/// Reads a comm.topology dictionary. Returns false (no diagnostic) when attr
/// is not a well-formed topology; attn_comm_verify_topology reports why.
bool attn_comm_topology_read(MlirAttribute attr,
                             struct attn_comm_topology *out);

/// Reads the topology of the nearest op carrying comm.topology: op itself,
/// else its closest ancestor. Returns false (no diagnostic) when there is
/// none or it is malformed. *from, when not NULL, receives the carrier.
bool attn_comm_get_topology(MlirOperation op, struct attn_comm_topology *out,
                            MlirOperation *from);

/// gpus_per_node * nodes.
int64_t attn_comm_topology_world_size(const struct attn_comm_topology *t);

//===-- Readers -----------------------------------------------------------===//

/// Reduction kinds of comm.all_reduce, comm.reduce_scatter and comm.reduce.
enum attn_comm_reduction {
  ATTN_COMM_REDUCE_SUM,
  ATTN_COMM_REDUCE_PROD,
  ATTN_COMM_REDUCE_MAX,
  ATTN_COMM_REDUCE_MIN,
  ATTN_COMM_REDUCE_AVG, ///< collectives only
};

/// Reads op's "reduction" attribute. Returns -1 when it is missing or not a
/// known kind.
int attn_comm_get_reduction(MlirOperation op);

/// Scopes of comm.rank, comm.world_size and comm.barrier.
enum attn_comm_scope {
  ATTN_COMM_SCOPE_WORLD, ///< every rank of the communicator
  ATTN_COMM_SCOPE_LOCAL, ///< the ranks of this rank's NVLink domain
  ATTN_COMM_SCOPE_NODE,  ///< the nodes (rank/world_size only)
};

/// Reads op's "scope" attribute. Returns -1 when it is missing or unknown.
int attn_comm_get_scope(MlirOperation op);

/// Reads the peer of comm.put, comm.get or comm.signal when it is a constant
/// (the "peer" attribute, or an index operand defined by arith.constant).
/// Returns false when it is dynamic or malformed.
bool attn_comm_get_const_peer(MlirOperation op, int64_t *peer);

//===-- comm.fused_matmul -------------------------------------------------===//

/// The pairs comm.fused_matmul replaces ("pattern").
enum attn_comm_fused_pattern {
  ATTN_COMM_FUSED_MATMUL_ALL_REDUCE,     ///< "matmul_all_reduce"
  ATTN_COMM_FUSED_ALL_GATHER_MATMUL,     ///< "all_gather_matmul"
  ATTN_COMM_FUSED_MATMUL_REDUCE_SCATTER, ///< "matmul_reduce_scatter"
};

/// The "pattern" string of p; "?" when out of range. Static.
const char *attn_comm_fused_pattern_name(enum attn_comm_fused_pattern p);

/// Reads op's "pattern" attribute. Returns -1 when it is missing or unknown.
int attn_comm_get_fused_pattern(MlirOperation op);

#endif // ATTN_COMM_DIALECT_H
