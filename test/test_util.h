// test_util.h - CHECK macro and test runner shared by the C unit tests
// (runtime, cost model, references).

#ifndef ATTNRT_TEST_UTIL_H
#define ATTNRT_TEST_UTIL_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                            \
  do { if (!(cond)) { fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); return 1; } } while (0)

struct test_case {
  const char *name;
  int (*run)(void);
};

#define TEST(fn) {#fn, fn}

static inline bool contains(const char *text, const char *part) {
  return text && strstr(text, part) != NULL;
}

/// Runs every test with the optional before/after hooks (after returns
/// non-zero to fail the test), prints "N passed, M failed" and returns the
/// process exit status.
static inline int run_tests(const struct test_case *tests, size_t n,
                            void (*before)(void), int (*after)(void)) {
  int passed = 0, failed = 0;
  for (size_t i = 0; i < n; ++i) {
    if (before)
      before();
    int bad = tests[i].run();
    if (!bad && after)
      bad = after();
    if (bad) {
      fprintf(stderr, "FAIL: %s\n", tests[i].name);
      ++failed;
    } else {
      ++passed;
    }
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

#endif // ATTNRT_TEST_UTIL_H
