// comm_fused.h - where comm_bench plugs in attn's fused GEMM + collective kernels (comm.fused_matmul): the three calls a fused variant implements in comm_fused.c.
//
// comm_bench measures, for each pattern and shape, cuBLAS + NCCL sequential,
// on two streams, on NCCL symmetric buffers, and the fused variant through
// these calls. The harness does everything else: it asks comm_fused_prepare
// on every rank and goes on only when all ranks said ATTNRT_OK; it then
// allocates the symmetric buffers below with attnrt_comm_buffer_alloc (the
// workspace with the size prepare asked for, zero-filled), fills a and b
// with the same seeded inputs as the baselines, poisons out with NaN, calls
// comm_fused_run once, checks `out` against the float64 reference of the
// pattern (sampled rows, the tolerance of bench_common.h), then times
// comm_fused_run like the baselines (a barrier between iterations, CUDA
// events on the stream, median per rank, max over ranks) and frees
// everything with comm_fused_release.
//
// Shapes follow the anchors (notes/anchors-h200.md, B4): M x N x K is one
// rank's GEMM C[M,N] = A[M,K] B[K,N], row-major bf16, f32 accumulation:
//   COMM_GEMM_ALL_REDUCE      out = sum over ranks of A_r B_r         [M, N]
//   COMM_ALL_GATHER_GEMM      out = concat_r(A_r) B (A_r: M/W rows)    [M, N]
//   COMM_GEMM_REDUCE_SCATTER  out = rows rank*M/W.. of sum_r A_r B_r  [M/W, N]

#ifndef ATTN_BENCH_COMM_FUSED_H
#define ATTN_BENCH_COMM_FUSED_H

#include "attnrt.h"

#include <stddef.h>
#include <stdint.h>

enum comm_pattern {
  COMM_GEMM_ALL_REDUCE,
  COMM_ALL_GATHER_GEMM,
  COMM_GEMM_REDUCE_SCATTER,
};

/// What is to be computed, on which communicator.
struct comm_fused_problem {
  enum comm_pattern pattern;
  int64_t m, n, k;      ///< one rank's GEMM, as above
  int rank, world;
  attnrt_comm *comm;    ///< borrowed
  attnrt_runtime *rt;   ///< the communicator's runtime (borrowed)
};

/// The symmetric buffers (attnrt_comm_buffer_alloc on comm) of one run.
struct comm_fused_buffers {
  /// this rank's A: [M, K], or its shard [M/W, K] for COMM_ALL_GATHER_GEMM
  attnrt_comm_buffer *a;
  attnrt_comm_buffer *b;    ///< this rank's B: [K, N]
  /// the result: [M, N], or this rank's rows [M/W, N] for
  /// COMM_GEMM_REDUCE_SCATTER
  attnrt_comm_buffer *out;
  /// the workspace prepare asked for, zeros before the first run; NULL for 0
  attnrt_comm_buffer *work;
};

/// A prepared fused variant (compiled, loaded); opaque to the harness.
struct comm_fused;

/// Prepares the fused kernel of p: compiles and loads it, storing it in *out
/// and the symmetric workspace bytes it needs in *work_bytes. Returns
/// ATTNRT_ERR_NOT_FOUND when no fused kernel exists for p (the harness
/// prints "not built"), another status with a message in why on failure.
/// Every rank calls it, in the same order as its other collective calls, so
/// it may make collective calls on p->comm (attnrt_comm_dev_create, for the
/// workspace's peer table) provided every rank makes the same ones; the
/// harness agrees on the outcome across ranks afterwards.
enum attnrt_status comm_fused_prepare(const struct comm_fused_problem *p,
                                      struct comm_fused **out,
                                      size_t *work_bytes, char *why,
                                      size_t why_len);

/// Queues one fused GEMM + collective on s (collective: every rank calls it
/// once per iteration). Must not synchronize, except that the first call
/// (the harness's check run, untimed) may do one-time set-up such as the
/// workspace's peer table. Returns a status with a message in why on
/// failure.
enum attnrt_status comm_fused_run(struct comm_fused *f,
                                  const struct comm_fused_buffers *b,
                                  attnrt_stream *s, char *why, size_t why_len);

/// Frees f (its module and anything prepare made, such as a device
/// communicator: every rank calls it at the same point). NULL is a no-op.
void comm_fused_release(struct comm_fused *f);

#endif // ATTN_BENCH_COMM_FUSED_H
