//===- comm_reference.h - Float64 reference of GEMM + collective patterns -===//
//
// The ground truth the fused GEMM + collective kernels (comm.fused_matmul,
// issue 6) and the cuBLAS + NCCL baselines are checked against: every rank
// of a world simulated in one process, in float64, straight from the
// definition of the collective. No MLIR, no GPU.
//
//   matmul_all_reduce      out_r = reduce_q (C_q + A_q B_q)               [M, N]
//   all_gather_matmul      out_r = C_r + concat_q(A_q) B_r (A_q: M/W rows) [M, N]
//   matmul_reduce_scatter  out_r = rows r*M/W .. (r+1)*M/W of
//                                  reduce_q (C_q + A_q B_q)            [M/W, N]
//
// as comm.fused_matmul defines them (docs/dialects.md), C being the
// matmul's init. A is row-major [M, K] (M/W rows for all_gather_matmul), B
// row-major [K, N] and C row-major [M, N] on every rank.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_COMM_REFERENCE_H
#define ATTN_COMM_REFERENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum attn_comm_ref_pattern {
  ATTN_COMM_REF_MATMUL_ALL_REDUCE,
  ATTN_COMM_REF_ALL_GATHER_MATMUL,
  ATTN_COMM_REF_MATMUL_REDUCE_SCATTER,
};

enum attn_comm_ref_reduction {
  ATTN_COMM_REF_SUM,
  ATTN_COMM_REF_PROD,
  ATTN_COMM_REF_MAX,
  ATTN_COMM_REF_MIN,
};

/// One pattern over `world` ranks. m is the full row count of the result
/// of the collective (the gathered A, or the product before the scatter);
/// all_gather_matmul and matmul_reduce_scatter need it divisible by world.
/// reduction is ignored by all_gather_matmul.
struct attn_comm_ref_problem {
  enum attn_comm_ref_pattern pattern;
  enum attn_comm_ref_reduction reduction;
  int world;
  int64_t m, n, k;
};

/// Rows of rank r's A (m, or m / world when A is gathered) and of its
/// result (m, or m / world when the result is scattered); 0 when the
/// problem is malformed.
int64_t attn_comm_ref_a_rows(const struct attn_comm_ref_problem *p);
int64_t attn_comm_ref_out_rows(const struct attn_comm_ref_problem *p);

/// The GEMM every pattern starts from, alone: out[m, n] = init + a[m, k] *
/// b[k, n] in float64 (init may be NULL for zeros; out may be init). The
/// reference of the tile-level GEMM (attn-tile's linalg.matmul kernels).
/// Returns false with a message in err (when err is not NULL) when a size
/// is not positive or overflows, or a, b or out is NULL.
bool attn_reference_matmul(int64_t m, int64_t n, int64_t k, const double *a,
                           const double *b, const double *init, double *out,
                           char *err, size_t errlen);

/// Computes out[r] for every rank r from a[r], b[r] and init[r] (arrays of
/// `world` pointers; init may be NULL for zeros). Returns false with a
/// message in err (when err is not NULL) when the problem is malformed or
/// memory runs out; out is then untouched.
bool attn_comm_reference(const struct attn_comm_ref_problem *p,
                         const double *const *a, const double *const *b,
                         const double *const *init, double *const *out,
                         char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif // ATTN_COMM_REFERENCE_H
