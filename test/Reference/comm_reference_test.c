// comm_reference_test.c - unit tests of lib/Reference/comm_reference.c: the
// float64 reference of matmul_all_reduce, all_gather_matmul and
// matmul_reduce_scatter over simulated ranks.

#include "lib/Reference/comm_reference.h"
#include "test/test_util.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_WORLD = 8 };

/// Ranks' buffers for one problem: A and B filled with N(0,1) values from a
/// fixed-seed generator (never zeros), the outputs poisoned with NaN.
struct ranks {
  double *a[MAX_WORLD], *b[MAX_WORLD], *out[MAX_WORLD];
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double uniform(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(void) {
  return sqrt(-2 * log(uniform())) * cos(6.283185307179586 * uniform());
}

static bool alloc_ranks(struct ranks *x, const struct attn_comm_ref_problem *p) {
  int64_t ar = attn_comm_ref_a_rows(p), orows = attn_comm_ref_out_rows(p);
  for (int r = 0; r < p->world; ++r) {
    x->a[r] = malloc((size_t)(ar * p->k) * sizeof(double));
    x->b[r] = malloc((size_t)(p->k * p->n) * sizeof(double));
    x->out[r] = malloc((size_t)(orows * p->n) * sizeof(double));
    if (!x->a[r] || !x->b[r] || !x->out[r])
      return false;
    for (int64_t i = 0; i < ar * p->k; ++i)
      x->a[r][i] = normal();
    for (int64_t i = 0; i < p->k * p->n; ++i)
      x->b[r][i] = normal();
    for (int64_t i = 0; i < orows * p->n; ++i)
      x->out[r][i] = NAN;
  }
  return true;
}

static void free_ranks(struct ranks *x, int world) {
  for (int r = 0; r < world; ++r) {
    free(x->a[r]);
    free(x->b[r]);
    free(x->out[r]);
  }
}

static bool run(const struct attn_comm_ref_problem *p, struct ranks *x) {
  char err[128];
  return attn_comm_reference(p, (const double *const *)x->a,
                             (const double *const *)x->b, NULL, x->out, err,
                             sizeof err);
}

/// Two ranks, 2x2 by hand: A_0 = [1 2; 3 4], A_1 = I, B_0 = I,
/// B_1 = [0 1; 1 0]. Products [1 2; 3 4] and [0 1; 1 0].
static int test_all_reduce_by_hand(void) {
  double a0[] = {1, 2, 3, 4}, a1[] = {1, 0, 0, 1};
  double b0[] = {1, 0, 0, 1}, b1[] = {0, 1, 1, 0};
  double o0[4], o1[4];
  const double *a[] = {a0, a1}, *b[] = {b0, b1};
  double *out[] = {o0, o1};
  struct attn_comm_ref_problem p = {ATTN_COMM_REF_MATMUL_ALL_REDUCE,
                                    ATTN_COMM_REF_SUM, 2, 2, 2, 2};
  CHECK(attn_comm_reference(&p, a, b, NULL, out, NULL, 0));
  double sum[] = {1, 3, 4, 4};
  for (int i = 0; i < 4; ++i)
    CHECK(o0[i] == sum[i] && o1[i] == sum[i]);
  p.reduction = ATTN_COMM_REF_MAX;
  CHECK(attn_comm_reference(&p, a, b, NULL, out, NULL, 0));
  double max[] = {1, 2, 3, 4};
  for (int i = 0; i < 4; ++i)
    CHECK(o0[i] == max[i] && o1[i] == max[i]);
  p.reduction = ATTN_COMM_REF_MIN;
  CHECK(attn_comm_reference(&p, a, b, NULL, out, NULL, 0));
  double min[] = {0, 1, 1, 0};
  for (int i = 0; i < 4; ++i)
    CHECK(o1[i] == min[i]);
  p.reduction = ATTN_COMM_REF_PROD;
  CHECK(attn_comm_reference(&p, a, b, NULL, out, NULL, 0));
  double prod[] = {0, 2, 3, 0};
  for (int i = 0; i < 4; ++i)
    CHECK(o0[i] == prod[i]);
  return 0;
}

/// Two ranks gather one row each: [1 2] and [3 4] make A = [1 2; 3 4];
/// rank 1 multiplies by B_1 = [0 1; 1 0], which swaps the columns.
static int test_all_gather_by_hand(void) {
  double a0[] = {1, 2}, a1[] = {3, 4};
  double b0[] = {1, 0, 0, 1}, b1[] = {0, 1, 1, 0};
  double o0[4], o1[4];
  const double *a[] = {a0, a1}, *b[] = {b0, b1};
  double *out[] = {o0, o1};
  struct attn_comm_ref_problem p = {ATTN_COMM_REF_ALL_GATHER_MATMUL,
                                    ATTN_COMM_REF_SUM, 2, 2, 2, 2};
  CHECK(attn_comm_ref_a_rows(&p) == 1 && attn_comm_ref_out_rows(&p) == 2);
  CHECK(attn_comm_reference(&p, a, b, NULL, out, NULL, 0));
  double r0[] = {1, 2, 3, 4}, r1[] = {2, 1, 4, 3};
  for (int i = 0; i < 4; ++i)
    CHECK(o0[i] == r0[i] && o1[i] == r1[i]);
  return 0;
}

/// matmul_reduce_scatter hands rank r rows r*M/W.. of matmul_all_reduce's
/// result, for every reduction and world sizes 1 to 8.
static int test_reduce_scatter_is_a_slice_of_all_reduce(void) {
  for (int w = 1; w <= MAX_WORLD; ++w)
    for (int red = ATTN_COMM_REF_SUM; red <= ATTN_COMM_REF_MIN; ++red) {
      struct attn_comm_ref_problem ar = {ATTN_COMM_REF_MATMUL_ALL_REDUCE, red,
                                         w, 3 * w, 5, 7};
      struct attn_comm_ref_problem rs = ar;
      rs.pattern = ATTN_COMM_REF_MATMUL_REDUCE_SCATTER;
      struct ranks x = {0}, y = {0};
      CHECK(alloc_ranks(&x, &ar) && alloc_ranks(&y, &rs));
      for (int r = 0; r < w; ++r) {
        memcpy(y.a[r], x.a[r], (size_t)(ar.m * ar.k) * sizeof(double));
        memcpy(y.b[r], x.b[r], (size_t)(ar.k * ar.n) * sizeof(double));
      }
      CHECK(run(&ar, &x) && run(&rs, &y));
      for (int r = 0; r < w; ++r)
        for (int64_t i = 0; i < 3 * ar.n; ++i) {
          CHECK(!isnan(y.out[r][i]));
          CHECK(y.out[r][i] == x.out[0][r * 3 * ar.n + i]);
          CHECK(x.out[r][r * 3 * ar.n + i] == x.out[0][r * 3 * ar.n + i]);
        }
      free_ranks(&x, w);
      free_ranks(&y, w);
    }
  return 0;
}

/// One rank: every pattern is a plain matmul (checked against a sum
/// written out here in long double).
static int test_one_rank_is_a_matmul(void) {
  for (int pat = ATTN_COMM_REF_MATMUL_ALL_REDUCE;
       pat <= ATTN_COMM_REF_MATMUL_REDUCE_SCATTER; ++pat) {
    struct attn_comm_ref_problem p = {pat, ATTN_COMM_REF_SUM, 1, 9, 4, 6};
    struct ranks x = {0};
    CHECK(alloc_ranks(&x, &p) && run(&p, &x));
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        long double s = 0;
        for (int64_t l = 0; l < p.k; ++l)
          s += (long double)x.a[0][i * p.k + l] * x.b[0][l * p.n + j];
        CHECK(fabs(x.out[0][i * p.n + j] - (double)s) <=
              1e-12 * (1 + fabs((double)s)));
      }
    free_ranks(&x, 1);
  }
  return 0;
}

/// Sum over W ranks holding the same A and B is W times the product.
static int test_sum_of_equal_shards(void) {
  for (int w = 2; w <= MAX_WORLD; w *= 2) {
    struct attn_comm_ref_problem p = {ATTN_COMM_REF_MATMUL_ALL_REDUCE,
                                      ATTN_COMM_REF_SUM, w, 4, 3, 5};
    struct ranks x = {0};
    CHECK(alloc_ranks(&x, &p));
    for (int r = 1; r < w; ++r) {
      memcpy(x.a[r], x.a[0], (size_t)(p.m * p.k) * sizeof(double));
      memcpy(x.b[r], x.b[0], (size_t)(p.k * p.n) * sizeof(double));
    }
    CHECK(run(&p, &x));
    struct attn_comm_ref_problem one = p;
    one.world = 1;
    struct ranks y = {0};
    CHECK(alloc_ranks(&y, &one));
    memcpy(y.a[0], x.a[0], (size_t)(p.m * p.k) * sizeof(double));
    memcpy(y.b[0], x.b[0], (size_t)(p.k * p.n) * sizeof(double));
    CHECK(run(&one, &y));
    for (int64_t i = 0; i < p.m * p.n; ++i)
      CHECK(fabs(x.out[w - 1][i] - w * y.out[0][i]) <=
            1e-12 * (1 + fabs(w * y.out[0][i])));
    free_ranks(&x, w);
    free_ranks(&y, 1);
  }
  return 0;
}

/// all_gather_matmul: rank r's rows q*M/W.. are A_q B_r, whatever W is.
static int test_all_gather_rows_come_from_their_shard(void) {
  for (int w = 1; w <= MAX_WORLD; ++w) {
    struct attn_comm_ref_problem p = {ATTN_COMM_REF_ALL_GATHER_MATMUL,
                                      ATTN_COMM_REF_SUM, w, 2 * w, 3, 4};
    struct ranks x = {0};
    CHECK(alloc_ranks(&x, &p) && run(&p, &x));
    for (int r = 0; r < w; ++r)
      for (int q = 0; q < w; ++q)
        for (int64_t i = 0; i < 2; ++i)
          for (int64_t j = 0; j < p.n; ++j) {
            double s = 0;
            for (int64_t l = 0; l < p.k; ++l)
              s += x.a[q][i * p.k + l] * x.b[r][l * p.n + j];
            CHECK(fabs(x.out[r][(q * 2 + i) * p.n + j] - s) <=
                  1e-12 * (1 + fabs(s)));
          }
    free_ranks(&x, w);
  }
  return 0;
}

static int expect_error(const struct attn_comm_ref_problem *p,
                        const char *part) {
  double buf[64] = {1};
  const double *a[2] = {buf, buf}, *b[2] = {buf, buf};
  double out0[64], out1[64];
  double *out[2] = {out0, out1};
  char err[128] = "";
  CHECK(!attn_comm_reference(p, a, b, NULL, out, err, sizeof err));
  CHECK(contains(err, part));
  return 0;
}

static int test_errors(void) {
  struct attn_comm_ref_problem ok = {ATTN_COMM_REF_MATMUL_REDUCE_SCATTER,
                                     ATTN_COMM_REF_SUM, 2, 4, 2, 2};
  struct attn_comm_ref_problem p = ok;
  p.world = 0;
  CHECK(expect_error(&p, "world size") == 0);
  p = ok;
  p.m = 3;
  CHECK(expect_error(&p, "divisible") == 0);
  CHECK(attn_comm_ref_out_rows(&p) == 0 && attn_comm_ref_a_rows(&p) == 0);
  p = ok;
  p.k = 0;
  CHECK(expect_error(&p, "positive") == 0);
  p = ok;
  p.pattern = (enum attn_comm_ref_pattern)7;
  CHECK(expect_error(&p, "unknown pattern") == 0);
  p = ok;
  p.reduction = (enum attn_comm_ref_reduction)9;
  CHECK(expect_error(&p, "unknown reduction") == 0);
  p = ok;
  p.m = INT64_MAX / 2 + 1;
  p.m -= p.m % 2;
  CHECK(expect_error(&p, "overflow") == 0);
  char err[64] = "";
  CHECK(!attn_comm_reference(NULL, NULL, NULL, NULL, NULL, err, sizeof err));
  CHECK(contains(err, "no problem"));
  CHECK(!attn_comm_reference(&ok, NULL, NULL, NULL, NULL, err, sizeof err));
  CHECK(contains(err, "every rank"));
  double buf[8] = {1};
  const double *a[2] = {buf, NULL}, *b[2] = {buf, buf};
  double *out[2] = {buf, buf};
  CHECK(!attn_comm_reference(&ok, a, b, NULL, out, NULL, 0)); // no err buffer
  return 0;
}

/// matmul_all_reduce never needs m divisible by the world, and every rank
/// gets the same result.
static int test_all_reduce_any_m(void) {
  struct attn_comm_ref_problem p = {ATTN_COMM_REF_MATMUL_ALL_REDUCE,
                                    ATTN_COMM_REF_SUM, 3, 7, 2, 5};
  struct ranks x = {0};
  CHECK(alloc_ranks(&x, &p) && run(&p, &x));
  for (int r = 1; r < 3; ++r)
    CHECK(memcmp(x.out[r], x.out[0], (size_t)(7 * 2) * sizeof(double)) == 0);
  free_ranks(&x, 3);
  return 0;
}

/// The matmul's init is added on every rank before the collective: summing
/// C + A B over two ranks with C all ones adds 2 to every element.
static int test_init_is_added_before_the_collective(void) {
  double a0[] = {1, 2, 3, 4}, a1[] = {1, 0, 0, 1};
  double b0[] = {1, 0, 0, 1}, b1[] = {0, 1, 1, 0};
  double c0[] = {1, 1, 1, 1}, c1[] = {1, 1, 1, 1};
  double o0[4], o1[4];
  const double *a[] = {a0, a1}, *b[] = {b0, b1}, *c[] = {c0, c1};
  double *out[] = {o0, o1};
  struct attn_comm_ref_problem p = {ATTN_COMM_REF_MATMUL_ALL_REDUCE,
                                    ATTN_COMM_REF_SUM, 2, 2, 2, 2};
  CHECK(attn_comm_reference(&p, a, b, c, out, NULL, 0));
  double sum[] = {3, 5, 6, 6};
  for (int i = 0; i < 4; ++i)
    CHECK(o0[i] == sum[i] && o1[i] == sum[i]);
  // all_gather_matmul adds each rank's own init once, after the product.
  double g0[] = {1, 2}, g1[] = {3, 4};
  const double *ga[] = {g0, g1};
  p.pattern = ATTN_COMM_REF_ALL_GATHER_MATMUL;
  c1[2] = 10;
  CHECK(attn_comm_reference(&p, ga, b, c, out, NULL, 0));
  double r1[] = {3, 2, 14, 4};
  for (int i = 0; i < 4; ++i)
    CHECK(o1[i] == r1[i]);
  return 0;
}

/// The GEMM alone (attn-tile's linalg.matmul kernels): by hand, with an
/// init, in place (out == init), and as one rank of matmul_all_reduce.
static int test_matmul_by_hand(void) {
  double a[] = {1, 2, 3, 4, 5, 6}; // 2x3
  double b[] = {1, 0, 0, 1, 1, 1}; // 3x2
  double out[4], c[] = {10, 20, 30, 40};
  CHECK(attn_reference_matmul(2, 2, 3, a, b, NULL, out, NULL, 0));
  double prod[] = {4, 5, 10, 11};
  for (int i = 0; i < 4; ++i)
    CHECK(out[i] == prod[i]);
  CHECK(attn_reference_matmul(2, 2, 3, a, b, c, out, NULL, 0));
  for (int i = 0; i < 4; ++i)
    CHECK(out[i] == prod[i] + (i + 1) * 10);
  CHECK(attn_reference_matmul(2, 2, 3, a, b, c, c, NULL, 0));
  for (int i = 0; i < 4; ++i)
    CHECK(c[i] == out[i]);
  double o1[4];
  const double *pa[] = {a}, *pb[] = {b};
  double *po[] = {o1};
  struct attn_comm_ref_problem p = {ATTN_COMM_REF_MATMUL_ALL_REDUCE,
                                    ATTN_COMM_REF_SUM, 1, 2, 2, 3};
  CHECK(attn_comm_reference(&p, pa, pb, NULL, po, NULL, 0));
  for (int i = 0; i < 4; ++i)
    CHECK(o1[i] == prod[i]);
  return 0;
}

static int test_matmul_errors(void) {
  double x[4] = {0}, out[4];
  char err[128];
  CHECK(!attn_reference_matmul(0, 2, 2, x, x, NULL, out, err, sizeof err));
  CHECK(strstr(err, "must be positive") != NULL);
  CHECK(!attn_reference_matmul(2, 2, 2, NULL, x, NULL, out, err, sizeof err));
  CHECK(strstr(err, "must be given") != NULL);
  CHECK(!attn_reference_matmul(INT64_MAX, 2, 2, x, x, NULL, out, err,
                               sizeof err));
  CHECK(strstr(err, "overflow") != NULL);
  CHECK(!attn_reference_matmul(2, 2, 2, x, x, NULL, NULL, NULL, 0));
  return 0;
}

int main(void) {
  static const struct test_case tests[] = {
      TEST(test_all_reduce_by_hand),
      TEST(test_all_gather_by_hand),
      TEST(test_reduce_scatter_is_a_slice_of_all_reduce),
      TEST(test_one_rank_is_a_matmul),
      TEST(test_sum_of_equal_shards),
      TEST(test_all_gather_rows_come_from_their_shard),
      TEST(test_errors),
      TEST(test_all_reduce_any_m),
      TEST(test_init_is_added_before_the_collective),
      TEST(test_matmul_by_hand),
      TEST(test_matmul_errors),
  };
  return run_tests(tests, sizeof tests / sizeof *tests, NULL, NULL);
}
