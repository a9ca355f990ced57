// fused_check.h - what the tests of attn's fused GEMM + collective kernels (fused_gpu_test.c on several GPUs, fused_loopback_gpu_test.c with every rank on one) share: each rank's inputs, the float64 reference of a pattern over any number of ranks, bf16 conversions, the comparison and reading a file.

#ifndef ATTNRT_FUSED_CHECK_H
#define ATTNRT_FUSED_CHECK_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// Element i of rank r's matrix `which` (0: A, 1: B): a hash spread over
/// [-1, 1), rounded to bf16. All-gather multiplies rank 0's B on every rank.
static inline float fused_value(int r, int which, size_t i) {
  uint64_t x = ((uint64_t)(r + 1) * 0x9e3779b97f4a7c15ull) ^
               ((uint64_t)(which + 7) * 0x632be59bd9b4e019ull) ^
               ((uint64_t)i * 0xbf58476d1ce4e5b9ull);
  x ^= x >> 31;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 29;
  float f = (float)((double)(x >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
  uint32_t u;
  memcpy(&u, &f, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u; // round to bf16
  memcpy(&f, &u, 4);
  return f;
}

static inline uint16_t fused_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline float fused_from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/// One kernel's problem: the pattern ("ar", "rs" or "ag"), the ranks, and
/// one rank's A rows, K, N and C rows.
struct fused_problem {
  const char *pattern;
  int world;
  int64_t a_rows, k, n, c_rows;
};

/// Fills h (a_rows x k, then k x n elements) with rank r's A or B as bf16.
static inline void fused_fill(const struct fused_problem *p, int r, int which,
                              uint16_t *h) {
  size_t count = which ? (size_t)(p->k * p->n) : (size_t)(p->a_rows * p->k);
  int owner = which && !strcmp(p->pattern, "ag") ? 0 : r;
  for (size_t i = 0; i < count; ++i)
    h[i] = fused_to_bf16(fused_value(owner, which, i));
}

/// The float64 result every rank's C is a part of, or NULL when out of
/// memory: for all-reduce and reduce-scatter the sum over the ranks of
/// A_r B_r (a_rows x n), of which rank r holds rows [r c_rows, (r + 1)
/// c_rows) after a reduce-scatter and all after an all-reduce; for
/// all-gather the ranks' A stacked in rank order (world a_rows rows) times
/// B, all of it on every rank. Caller frees.
static inline double *fused_reference(const struct fused_problem *p) {
  bool ag = !strcmp(p->pattern, "ag");
  int64_t rows = ag ? p->world * p->a_rows : p->a_rows, n = p->n, k = p->k;
  double *want = calloc((size_t)(rows * n), sizeof *want);
  double *a = malloc(sizeof *a * (size_t)(p->a_rows * k));
  double *b = malloc(sizeof *b * (size_t)(k * n));
  if (!want || !a || !b) {
    free(want), free(a), free(b);
    return NULL;
  }
  for (int r = 0; r < p->world; ++r) {
    for (int64_t i = 0; i < p->a_rows * k; ++i)
      a[i] = fused_value(r, 0, (size_t)i);
    if (r == 0 || !ag)
      for (int64_t i = 0; i < k * n; ++i)
        b[i] = fused_value(ag ? 0 : r, 1, (size_t)i);
    double *out = ag ? want + r * p->a_rows * n : want;
    for (int64_t i = 0; i < p->a_rows; ++i)
      for (int64_t l = 0; l < k; ++l) {
        double x = a[i * k + l];
        for (int64_t j = 0; j < n; ++j)
          out[i * n + j] += x * b[l * n + j];
      }
  }
  free(a);
  free(b);
  return want;
}

/// The part of fused_reference's result rank r's C must hold.
static inline const double *fused_want(const struct fused_problem *p,
                                       const double *full, int r) {
  return strcmp(p->pattern, "rs") ? full : full + r * p->c_rows * p->n;
}

/// Compares C (c_rows x n bf16) with want: the relative L2 error in *rel,
/// the largest absolute error (infinite for a NaN) in *worst. Returns
/// whether rel is at most 1e-2 and nothing is NaN.
static inline bool fused_compare(const struct fused_problem *p,
                                 const uint16_t *c, const double *want,
                                 double *rel, double *worst) {
  double err2 = 0, ref2 = 0;
  *worst = 0;
  for (int64_t i = 0; i < p->c_rows * p->n; ++i) {
    double d = (double)fused_from_bf16(c[i]) - want[i];
    err2 += d * d;
    ref2 += want[i] * want[i];
    if (!(fabs(d) <= *worst))
      *worst = isnan(d) ? INFINITY : fabs(d);
  }
  *rel = sqrt(err2 / ref2);
  return *rel <= 1e-2 && isfinite(*worst);
}

/// The file's bytes with a 0 after them, or NULL. Caller frees.
static inline char *fused_read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf)
    buf[n] = 0;
  return buf;
}

#endif // ATTNRT_FUSED_CHECK_H
