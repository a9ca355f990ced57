//===- topology.h - Topology model: collectives and fused GEMM+comm -------===//
//
// Pure functions of a topology description (no MLIR types): the predicted
// time of a bf16 GEMM on some of a GPU's SMs, of an NCCL-style collective
// over any number of ranks (hierarchical across nodes), and of the three
// fused patterns (GEMM+AllReduce, AllGather+GEMM, GEMM+ReduceScatter) as
// one persistent kernel whose SMs are split between compute and
// communication, with the split that minimises it. docs/cost-model.md
// ("Topology model") derives every term and gives every constant's source.
//
// Errors follow cost_model.h: functions return false (or a sentinel) and
// write an LLVM-style message (lower case, no final period, expected vs
// found) into err when err is not NULL.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOPOLOGY_H
#define ATTN_TOPOLOGY_H

#include "lib/CostModel/cost_model.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

//===-- Topologies --------------------------------------------------------===//

/// GPUs in nodes: gpus_per_node GPUs share an NVLink domain (NVSwitch or a
/// direct link), nodes are joined by a network with one NIC per GPU. All
/// bandwidths are per GPU and per direction, in bytes per second.
struct attn_topo {
  const struct attn_cost_gpu *gpu; ///< compute side: SMs, bf16 peak
  int gpus_per_node;
  int nodes;
  /// NCCL bus bandwidth inside a node (busbw as nccl-tests defines it:
  /// algorithm bytes per rank / time), large messages, per collective kind.
  double nvlink_busbw_all_reduce;
  double nvlink_busbw_gather; ///< all_gather, reduce_scatter, all_to_all
  double net_busbw;           ///< between nodes, per GPU (its own NIC)
  double coll_launch_s;       ///< fixed cost of one collective call
  double nvlink_step_s;       ///< latency of one ring step inside a node
  double net_step_s;          ///< latency of one ring step between nodes
  /// A fused kernel's communication is driven by SMs (no copy engines):
  /// each communication SM moves at most this many bytes per second.
  double sm_comm_bytes_per_s;
  /// GEMM: output tile of one CTA, per-SM sustained bf16 rate (as a
  /// fraction of the GPU's dense peak per SM) and a fixed cost per GEMM.
  int gemm_tile_m, gemm_tile_n;
  double gemm_mma_eff;
  double gemm_fixed_s;
};

/// Fills t for gpus_per_node GPUs named gpu ("H200", "H100"; any case, as
/// attn_cost_gpu_lookup) in each of nodes nodes, with the link constants
/// calibrated on this project's H200s (the H100 borrows them: same NVLink4).
/// Returns false with a message when the GPU has no link description or a
/// count is not positive (at most 1024 each).
bool attn_topo_init(struct attn_topo *t, const char *gpu, int gpus_per_node,
                    int nodes, char *err, size_t errlen);

/// Fills t from a named preset: "h200x1", "h200x2", "h200x4", "h200x8"
/// (one node), "h200-2x8", "h200-4x8" (nodes x GPUs), "h100x8". Returns
/// false with a message listing the presets when unknown.
bool attn_topo_preset(struct attn_topo *t, const char *name, char *err,
                      size_t errlen);

/// The presets: attn_topo_preset_count() names, static strings.
size_t attn_topo_preset_count(void);
const char *attn_topo_preset_name(size_t i);

/// Ranks in t: gpus_per_node * nodes.
int attn_topo_world_size(const struct attn_topo *t);

/// Checks t: a GPU, positive counts, every bandwidth positive, latencies
/// not negative, tiles positive, mma efficiency in (0, 1]. Returns false
/// with a message otherwise.
bool attn_topo_check(const struct attn_topo *t, char *err, size_t errlen);

//===-- GEMM and collectives ----------------------------------------------===//

/// Seconds of a bf16 GEMM C[M,N] = A[M,K] B[K,N] on sms SMs of t's GPU:
/// waves of output tiles, each tile 2 tm tn K FLOPs at the per-SM rate,
/// plus the fixed cost. Returns a negative value with a message when a
/// size is not positive or sms is not in [1, SMs of the GPU].
double attn_topo_gemm_seconds(const struct attn_topo *t, int64_t m, int64_t n,
                              int64_t k, int sms, char *err, size_t errlen);

enum attn_coll_kind {
  ATTN_COLL_ALL_REDUCE,
  ATTN_COLL_ALL_GATHER,
  ATTN_COLL_REDUCE_SCATTER,
  ATTN_COLL_ALL_TO_ALL,
  ATTN_COLL_NUM_KINDS
};

/// "all_reduce", "all_gather", "reduce_scatter", "all_to_all"; "?" when out
/// of range. Static.
const char *attn_coll_kind_name(enum attn_coll_kind k);

/// A collective's predicted time and its terms. Bytes are per rank.
struct attn_coll_cost {
  double time_s;
  double nvlink_bytes;  ///< sent over NVLink by each rank
  double net_bytes;     ///< sent over the network by each rank
  double nvlink_s, net_s, latency_s; ///< the three terms of time_s
  int nvlink_steps, net_steps;
};

/// Time of one collective over world ranks of t on a buffer of bytes (the
/// all_reduce buffer, the all_gather output, the reduce_scatter input, the
/// all_to_all send buffer of one rank). Ring algorithm inside a node;
/// across nodes hierarchical (reduce or gather inside the node, per-node
/// aggregates over the network, then inside the node again). comm_sms > 0
/// caps NVLink throughput at comm_sms * sm_comm_bytes_per_s (a fused
/// kernel's SM-driven transfers); 0 means NCCL's own channels (no cap).
/// Returns false with a message when bytes is not positive, world is not
/// t's world size, comm_sms is negative or more than the GPU's SMs.
bool attn_topo_collective(const struct attn_topo *t, enum attn_coll_kind kind,
                          double bytes, int world, int comm_sms,
                          struct attn_coll_cost *out, char *err,
                          size_t errlen);

//===-- Fused GEMM + collective -------------------------------------------===//

enum attn_fused_pattern {
  ATTN_FUSED_GEMM_ALL_REDUCE,     ///< C = A B (K sharded), all_reduce(C)
  ATTN_FUSED_ALL_GATHER_GEMM,     ///< all_gather(A rows), C = A B
  ATTN_FUSED_GEMM_REDUCE_SCATTER, ///< C = A B, reduce_scatter(C rows)
  ATTN_FUSED_NUM_PATTERNS
};

/// "gemm+all_reduce", "all_gather+gemm", "gemm+reduce_scatter"; "?" when out
/// of range. Static.
const char *attn_fused_pattern_name(enum attn_fused_pattern p);

/// The fused kernel's prediction at its best split, and the baselines.
struct attn_fused_cost {
  int total_sms;        ///< SMs of the persistent kernel
  int comm_sms;         ///< chosen: SMs that communicate
  int compute_sms;      ///< total_sms - comm_sms
  double fused_s;       ///< predicted fused time at the chosen split
  double compute_s;     ///< the GEMM on compute_sms SMs
  double comm_s;        ///< the collective driven by comm_sms SMs
  int64_t steps;        ///< pipeline steps (waves of output tiles)
  double sequential_s;  ///< GEMM on every SM, then the NCCL collective
  double gemm_s;        ///< GEMM on every SM (of the GPU)
  double nccl_s;        ///< the NCCL collective alone
  double lower_bound_s; ///< max(gemm_s, nccl_s)
  double coll_bytes;    ///< the collective's buffer (bytes, per rank)
};

/// Predicts pattern p for the per-rank bf16 GEMM M x N x K over world ranks
/// of t, as one persistent kernel on total_sms SMs (0: every SM of the GPU)
/// split into compute and communication SMs. Every split with at least one
/// SM on each side is tried (none when world is 1: nothing to send); the
/// fastest is returned (ties: fewer communication SMs). Fused time =
/// max(compute, comm) + min(compute, comm) / steps: the first wave's
/// compute and the last wave's transfer are not overlapped. Returns false
/// with a message when a size is not positive, world does not match t, M
/// (all_gather, reduce_scatter) is not a multiple of world, or total_sms is
/// out of range.
bool attn_topo_fused(const struct attn_topo *t, enum attn_fused_pattern p,
                     int64_t m, int64_t n, int64_t k, int world, int total_sms,
                     struct attn_fused_cost *out, char *err, size_t errlen);

/// The fused time of p at one given split (comm_sms in [1, total_sms - 1],
/// or 0 when world is 1); the same checks and terms as attn_topo_fused.
bool attn_topo_fused_at(const struct attn_topo *t, enum attn_fused_pattern p,
                        int64_t m, int64_t n, int64_t k, int world,
                        int total_sms, int comm_sms,
                        struct attn_fused_cost *out, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif // ATTN_TOPOLOGY_H
