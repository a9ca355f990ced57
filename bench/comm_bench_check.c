// comm_bench_check.c - comm_bench's checks before timing: sampled rows of every variant's output against lib/Reference's float64 result, rebuilt on each rank from the seeded inputs, and the ranks' agreement on the verdict.

#include "bench/comm_bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//===-- Checks --===//

void poison(struct bench *b, attnrt_devptr p, size_t bytes) {
  check_rt(b, attnrt_memset_d8(b->rt, p, 0xff, bytes, b->main.s),
           "attnrt_memset_d8");
}

/// Copies rows[i] * stride + offset .. of the device matrix (cols bf16 per
/// row) into got[i * cols ..].
static void download_rows(struct bench *b, attnrt_devptr base, int64_t cols,
                          const int64_t *rows, int count, int64_t row_offset,
                          uint16_t *got) {
  for (int i = 0; i < count; ++i)
    check_rt(b,
             attnrt_memcpy_dtoh(b->rt, got + i * cols,
                                base + (attnrt_devptr)((row_offset + rows[i]) *
                                                       cols * 2),
                                (size_t)cols * 2, NULL),
             "attnrt_memcpy_dtoh");
}

/// Sampled rows `rows` of matrix `tensor` of rank q (cols columns) as
/// doubles, row_offset added to each row index, into out[i * cols ..].
static void seeded_rows(struct bench *b, uint32_t tensor, int q, int64_t cols,
                        const int64_t *rows, int count, int64_t row_offset,
                        double *out) {
  for (int i = 0; i < count; ++i)
    for (int64_t j = 0; j < cols; ++j)
      out[i * cols + j] = bench_bf16_to_double(bench_rand_bf16(
          (uint64_t)b->o->seed, tensor, (uint32_t)q,
          (uint64_t)((row_offset + rows[i]) * cols + j)));
}

/// Checks the pattern's result in out (layout of the sequential variant's
/// output: [M,N], or [M/W,N] for reducescatter) against float64.
void check_pattern(struct bench *b, attnrt_devptr out,
                   struct bench_check *res) {
  if (b->ref_valid) {
    int64_t count = (b->pattern == COMM_ALL_GATHER_GEMM ? b->world : 1) *
                    (int64_t)b->nrows * b->n;
    uint16_t *got = malloc((size_t)count * 2);
    if (!got)
      fatal("out of host memory for the check");
    if (b->pattern == COMM_ALL_GATHER_GEMM)
      for (int q = 0; q < b->world; ++q)
        download_rows(b, out, b->n, b->rows_shard, b->nrows,
                      (int64_t)q * (b->m / b->world),
                      got + (size_t)q * (size_t)b->nrows * (size_t)b->n);
    else
      download_rows(b, out, b->n,
                    b->pattern == COMM_GEMM_ALL_REDUCE ? b->rows_full
                                                       : b->rows_shard,
                    b->nrows, 0, got);
    memset(res, 0, sizeof *res);
    bench_check_add(res, got, b->ref, (size_t)count);
    free(got);
    return;
  }
  int w = b->world, s = b->nrows;
  int64_t shard = b->m / w, n = b->n, k = b->k;
  bool gathered = b->pattern == COMM_ALL_GATHER_GEMM;
  int64_t got_rows = gathered ? (int64_t)w * s : s;
  // The reference problem's m: the sampled rows of the gathered A or of the
  // product before the scatter.
  int64_t ref_m = b->pattern == COMM_GEMM_ALL_REDUCE ? s : (int64_t)w * s;
  int64_t a_rows = gathered ? s : ref_m; // rows of each slot's A
  uint16_t *got = malloc((size_t)(got_rows * n) * 2);
  double *a_all = malloc((size_t)(w * a_rows * k) * sizeof *a_all);
  free(b->ref);
  b->ref = malloc((size_t)(got_rows * n) * sizeof *b->ref);
  if (!got || !a_all || !b->ref)
    fatal("out of host memory for the check");
  const double *a[MAX_WORLD];
  int b_rank[MAX_WORLD];
  for (int q = 0; q < w; ++q) {
    double *aq = a_all + (size_t)(q * a_rows * k);
    a[q] = aq;
    switch (b->pattern) {
    case COMM_GEMM_ALL_REDUCE: // rows of A_q
      seeded_rows(b, TENSOR_A, q, k, b->rows_full, s, 0, aq);
      b_rank[q] = q;
      break;
    case COMM_ALL_GATHER_GEMM: // rows of A_q's shard; only this rank's B
      seeded_rows(b, TENSOR_A_SHARD, q, k, b->rows_shard, s, 0, aq);
      b_rank[q] = b->rank;
      break;
    case COMM_GEMM_REDUCE_SCATTER: // the sampled rows of every block of A_q
      for (int p = 0; p < w; ++p)
        seeded_rows(b, TENSOR_A, q, k, b->rows_shard, s, (int64_t)p * shard,
                    aq + (size_t)(p * s * k));
      b_rank[q] = q;
      break;
    }
  }
  switch (b->pattern) {
  case COMM_GEMM_ALL_REDUCE:
    download_rows(b, out, n, b->rows_full, s, 0, got);
    break;
  case COMM_ALL_GATHER_GEMM:
    for (int q = 0; q < w; ++q)
      download_rows(b, out, n, b->rows_shard, s, (int64_t)q * shard,
                    got + (size_t)(q * s * n));
    break;
  case COMM_GEMM_REDUCE_SCATTER:
    download_rows(b, out, n, b->rows_shard, s, 0, got);
    break;
  }
  static const enum attn_comm_ref_pattern ref[NPATTERNS] = {
      ATTN_COMM_REF_MATMUL_ALL_REDUCE, ATTN_COMM_REF_ALL_GATHER_MATMUL,
      ATTN_COMM_REF_MATMUL_REDUCE_SCATTER};
  struct bench_ref_check rc = {
      .problem = {ref[b->pattern], ATTN_COMM_REF_SUM, w, ref_m, n, k},
      .a = a,
      .b_rank = b_rank,
      .seed = (uint64_t)b->o->seed,
      .b_tensor = TENSOR_B,
      .out_slot = b->rank,
      .got = got,
      .want = b->ref};
  char err[600];
  if (!bench_ref_check_run(&rc, res, err, sizeof err))
    fatal("%s", err);
  b->ref_valid = true;
  free(got);
  free(a_all);
}

/// Checks the two-stream GEMM's output c2: this rank's product (the
/// gathered one for allgather+gemm).
void check_local_gemm(struct bench *b, struct bench_check *res) {
  if (b->pattern == COMM_ALL_GATHER_GEMM) {
    check_pattern(b, b->d.c2, res);
    return;
  }
  int s = b->nrows;
  uint16_t *got = malloc((size_t)(s * b->n) * 2);
  double *a = malloc((size_t)(s * b->k) * sizeof *a);
  if (!got || !a)
    fatal("out of host memory for the check");
  seeded_rows(b, TENSOR_A, b->rank, b->k, b->rows_full, s, 0, a);
  download_rows(b, b->d.c2, b->n, b->rows_full, s, 0, got);
  const double *slots[1] = {a};
  const int b_rank[1] = {b->rank};
  struct bench_ref_check rc = {
      .problem = {ATTN_COMM_REF_MATMUL_ALL_REDUCE, ATTN_COMM_REF_SUM, 1, s,
                  b->n, b->k},
      .a = slots,
      .b_rank = b_rank,
      .seed = (uint64_t)b->o->seed,
      .b_tensor = TENSOR_B,
      .out_slot = 0,
      .got = got};
  char err[600];
  if (!bench_ref_check_run(&rc, res, err, sizeof err))
    fatal("%s", err);
  free(got);
  free(a);
}

/// Checks the two-stream collective's output against float64 sums of the
/// seeded inputs (R for the reductions, the shards for the gather).
void check_two_collective(struct bench *b, struct bench_check *res) {
  int w = b->world, s = b->nrows;
  int64_t shard = b->m / w;
  bool gather = b->pattern == COMM_ALL_GATHER_GEMM;
  int64_t cols = gather ? b->k : b->n;
  int64_t nrows = gather ? (int64_t)w * s : s;
  uint16_t *got = malloc((size_t)(nrows * cols) * 2);
  double *want = calloc((size_t)(nrows * cols), sizeof *want);
  double *tmp = malloc((size_t)(s * cols) * sizeof *tmp);
  if (!got || !want || !tmp)
    fatal("out of host memory for the check");
  memset(res, 0, sizeof *res);
  switch (b->pattern) {
  case COMM_GEMM_ALL_REDUCE:
    download_rows(b, b->d.x, cols, b->rows_full, s, 0, got);
    for (int q = 0; q < w; ++q) {
      seeded_rows(b, TENSOR_R, q, cols, b->rows_full, s, 0, tmp);
      for (int64_t i = 0; i < s * cols; ++i)
        want[i] += tmp[i];
    }
    break;
  case COMM_ALL_GATHER_GEMM:
    for (int q = 0; q < w; ++q) {
      download_rows(b, b->d.a_full2, cols, b->rows_shard, s,
                    (int64_t)q * shard, got + (size_t)(q * s * cols));
      seeded_rows(b, TENSOR_A_SHARD, q, cols, b->rows_shard, s, 0,
                  want + (size_t)(q * s * cols));
    }
    break;
  case COMM_GEMM_REDUCE_SCATTER:
    download_rows(b, b->d.c_sh2, cols, b->rows_shard, s, 0, got);
    for (int q = 0; q < w; ++q) {
      seeded_rows(b, TENSOR_R, q, cols, b->rows_shard, s,
                  (int64_t)b->rank * shard, tmp);
      for (int64_t i = 0; i < s * cols; ++i)
        want[i] += tmp[i];
    }
    break;
  }
  bench_check_add(res, got, want, (size_t)(nrows * cols));
  free(got);
  free(want);
  free(tmp);
}

/// Agrees on the checks of all ranks into r (worst values); true when all
/// passed everywhere.
bool agree_checks(struct bench *b, const struct bench_check *checks,
                  int n, struct variant_result *r) {
  double v[3] = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    double rel = bench_check_rel_l2(&checks[i]);
    double mx = bench_check_max_rel(&checks[i]);
    // Infinity does not survive every reduction path: cap it.
    v[0] = fmax(v[0], isfinite(rel) ? rel : 1e30);
    v[1] = fmax(v[1], isfinite(mx) ? mx : 1e30);
    v[2] = fmax(v[2], bench_check_pass(&checks[i]) ? 0.0 : 1.0);
  }
  agree_max(b, v, 3);
  r->checked = true;
  r->rel_l2 = v[0];
  r->max_rel = v[1];
  if (v[2] != 0) {
    r->status = "check failed";
    snprintf(r->error, sizeof r->error,
             "rel_l2 %.3g (tol %.0e), max_abs/rms %.3g (tol %.0e), worst over "
             "ranks",
             v[0], BENCH_TOL_REL_L2, v[1], BENCH_TOL_MAX_REL);
    return false;
  }
  return true;
}
