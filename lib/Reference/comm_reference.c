//===- comm_reference.c - Float64 reference of GEMM + collective patterns -===//
//
// Straight from the definitions in comm_reference.h: each rank's product in
// float64 with a plain triple loop, then the collective over the simulated
// ranks. Slow on purpose; correctness is all it is for.
//
//===----------------------------------------------------------------------===//
#include "lib/Reference/comm_reference.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool fail(char *err, size_t errlen, const char *msg) {
  if (err && errlen)
    snprintf(err, errlen, "%s", msg);
  return false;
}

/// Why p is malformed, or NULL.
static const char *check(const struct attn_comm_ref_problem *p) {
  if (!p)
    return "no problem given";
  if ((unsigned)p->pattern > ATTN_COMM_REF_MATMUL_REDUCE_SCATTER)
    return "unknown pattern";
  if ((unsigned)p->reduction > ATTN_COMM_REF_MIN)
    return "unknown reduction";
  if (p->world < 1)
    return "world size must be at least 1";
  if (p->m < 1 || p->n < 1 || p->k < 1)
    return "m, n and k must be positive";
  if (p->pattern != ATTN_COMM_REF_MATMUL_ALL_REDUCE && p->m % p->world != 0)
    return "m must be divisible by the world size for this pattern";
  if (p->m > INT64_MAX / p->n || p->m > INT64_MAX / p->k ||
      p->k > INT64_MAX / p->n)
    return "sizes overflow";
  return NULL;
}

int64_t attn_comm_ref_a_rows(const struct attn_comm_ref_problem *p) {
  if (check(p))
    return 0;
  return p->pattern == ATTN_COMM_REF_ALL_GATHER_MATMUL ? p->m / p->world
                                                       : p->m;
}

int64_t attn_comm_ref_out_rows(const struct attn_comm_ref_problem *p) {
  if (check(p))
    return 0;
  return p->pattern == ATTN_COMM_REF_MATMUL_REDUCE_SCATTER ? p->m / p->world
                                                           : p->m;
}

/// c[rows, n] = init[rows, n] + a[rows, k] b[k, n] (init NULL: zeros; init
/// may be c).
static void matmul(const double *a, const double *b, const double *init,
                   double *c, int64_t rows, int64_t n, int64_t k) {
  if (!init)
    memset(c, 0, (size_t)(rows * n) * sizeof *c);
  else if (init != c)
    memcpy(c, init, (size_t)(rows * n) * sizeof *c);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t l = 0; l < k; ++l) {
      double x = a[i * k + l];
      for (int64_t j = 0; j < n; ++j)
        c[i * n + j] += x * b[l * n + j];
    }
}

bool attn_reference_matmul(int64_t m, int64_t n, int64_t k, const double *a,
                           const double *b, const double *init, double *out,
                           char *err, size_t errlen) {
  if (m < 1 || n < 1 || k < 1)
    return fail(err, errlen, "m, n and k must be positive");
  if (m > INT64_MAX / n || m > INT64_MAX / k || k > INT64_MAX / n ||
      m * n > (int64_t)(SIZE_MAX / sizeof *out))
    return fail(err, errlen, "sizes overflow");
  if (!a || !b || !out)
    return fail(err, errlen, "a, b and out must be given");
  matmul(a, b, init, out, m, n, k);
  return true;
}

static double combine(enum attn_comm_ref_reduction r, double x, double y) {
  switch (r) {
  case ATTN_COMM_REF_SUM:
    return x + y;
  case ATTN_COMM_REF_PROD:
    return x * y;
  case ATTN_COMM_REF_MAX:
    return x > y ? x : y;
  case ATTN_COMM_REF_MIN:
    return x < y ? x : y;
  }
  return x;
}

bool attn_comm_reference(const struct attn_comm_ref_problem *p,
                         const double *const *a, const double *const *b,
                         const double *const *init, double *const *out,
                         char *err, size_t errlen) {
  const char *why = check(p);
  if (why)
    return fail(err, errlen, why);
  if (!a || !b || !out)
    return fail(err, errlen, "a, b and out must be given for every rank");
  for (int r = 0; r < p->world; ++r)
    if (!a[r] || !b[r] || !out[r])
      return fail(err, errlen, "a, b and out must be given for every rank");

  int64_t m = p->m, n = p->n, k = p->k, w = p->world;
  if (p->pattern == ATTN_COMM_REF_ALL_GATHER_MATMUL) {
    int64_t shard = m / w;
    double *gathered = malloc((size_t)(m * k) * sizeof *gathered);
    if (!gathered)
      return fail(err, errlen, "out of memory");
    for (int64_t q = 0; q < w; ++q)
      memcpy(gathered + q * shard * k, a[q],
             (size_t)(shard * k) * sizeof *gathered);
    for (int64_t r = 0; r < w; ++r)
      matmul(gathered, b[r], init ? init[r] : NULL, out[r], m, n, k);
    free(gathered);
    return true;
  }

  // Both reducing patterns: reduce every rank's product, then hand out all
  // of it or each rank's rows.
  double *acc = malloc((size_t)(m * n) * sizeof *acc);
  double *part = malloc((size_t)(m * n) * sizeof *part);
  if (!acc || !part) {
    free(acc);
    free(part);
    return fail(err, errlen, "out of memory");
  }
  matmul(a[0], b[0], init ? init[0] : NULL, acc, m, n, k);
  for (int64_t q = 1; q < w; ++q) {
    matmul(a[q], b[q], init ? init[q] : NULL, part, m, n, k);
    for (int64_t i = 0; i < m * n; ++i)
      acc[i] = combine(p->reduction, acc[i], part[i]);
  }
  int64_t rows = attn_comm_ref_out_rows(p);
  for (int64_t r = 0; r < w; ++r) {
    int64_t first = p->pattern == ATTN_COMM_REF_MATMUL_REDUCE_SCATTER
                        ? r * rows
                        : 0;
    memcpy(out[r], acc + first * n, (size_t)(rows * n) * sizeof *acc);
  }
  free(acc);
  free(part);
  return true;
}
