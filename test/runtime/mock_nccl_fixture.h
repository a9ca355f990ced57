// mock_nccl_fixture.h - per-test set-up and leak checks for the unit tests that run attnrt's communicators against the mock libcuda and libnccl (comm_test.c, comm_dev_test.c).

#ifndef ATTNRT_MOCK_NCCL_FIXTURE_H
#define ATTNRT_MOCK_NCCL_FIXTURE_H

#include "mock_fixture.h"
#include "mock_nccl.h"

#include <stdlib.h>

// The mock libnccl this binary is linked with (ATTNRT_NCCL_LIBRARY, when
// set, must name the same file).
static char mock_nccl_library[4096];

/// Once, before the tests: both mocks' paths.
static inline void mock_nccl_fixture_init(void) {
  mock_fixture_init();
  const char *path = getenv(ATTNRT_NCCL_LIBRARY_ENV);
  snprintf(mock_nccl_library, sizeof mock_nccl_library, "%s",
           path && *path ? path : ATTNRT_TEST_MOCK_NCCL_LIBRARY);
}

/// Before each test: both mocks with default behaviour, no torchrun
/// variables, zeroed counters.
static inline void mock_nccl_fixture_before(void) {
  mock_fixture_before();
  static const char *const vars[] = {
      "MOCK_NCCL_FAIL", "MOCK_NCCL_FAIL_CODE", "MOCK_NCCL_VERSION",
      "MOCK_NCCL_PENDING", "MOCK_NCCL_ASYNC", "MOCK_NCCL_LSA_SIZE", "RANK", "WORLD_SIZE",
      "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", ATTNRT_COMM_TIMEOUT_ENV};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; ++i)
    unsetenv(vars[i]);
  setenv(ATTNRT_NCCL_LIBRARY_ENV, mock_nccl_library, 1);
  mock_nccl_reset();
}

/// After each test: nothing made through either mock is left.
static inline int mock_nccl_fixture_after(void) {
  if (mock_fixture_after() != 0)
    return 1;
  const struct mock_nccl_state *s = mock_nccl_state();
  CHECK(s->live_comms == 0);
  CHECK(s->live_memory == 0);
  CHECK(s->live_windows == 0);
  CHECK(s->live_dev_comms == 0);
  return 0;
}

#endif // ATTNRT_MOCK_NCCL_FIXTURE_H
