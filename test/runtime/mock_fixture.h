// mock_fixture.h - per-test set-up and leak checks for the unit tests that run attnrt against the mock libcuda.

#ifndef ATTNRT_MOCK_FIXTURE_H
#define ATTNRT_MOCK_FIXTURE_H

#include "attnrt.h"
#include "mock_cuda.h"
#include "../test_util.h"

#include <stdlib.h>

// The mock this binary is linked with; ATTNRT_CUDA_LIBRARY, when set, must
// name the same file so the runtime's dlopen finds the already loaded copy.
static char mock_library[4096];

static inline void mock_fixture_init(void) {
  const char *path = getenv(ATTNRT_CUDA_LIBRARY_ENV);
  snprintf(mock_library, sizeof mock_library, "%s",
           path && *path ? path : ATTNRT_TEST_MOCK_LIBRARY);
}

/// Before each test: the mock with default behaviour and zeroed counters.
static inline void mock_fixture_before(void) {
  static const char *const vars[] = {"MOCK_CUDA_FAIL", "MOCK_CUDA_FAIL_CODE",
                                     "MOCK_CUDA_FAIL_AT", "MOCK_CUDA_DEVICES",
                                     "MOCK_CUDA_CC", "MOCK_CUDA_JIT_LOG",
                                     "MOCK_CUDA_NO_PROC_ADDRESS",
                                     "MOCK_CUDA_STREAM_BUSY", "MOCK_CUDA_SMS"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; ++i)
    unsetenv(vars[i]);
  setenv(ATTNRT_CUDA_LIBRARY_ENV, mock_library, 1);
  mock_cuda_reset();
}

/// After each test: everything the runtime made through the driver is gone.
static inline int mock_fixture_after(void) {
  const struct mock_cuda_state *s = mock_cuda_state();
  CHECK(s->live_allocations == 0);
  CHECK(s->live_modules == 0);
  CHECK(s->live_streams == 0);
  CHECK(s->live_events == 0);
  CHECK(s->primary_ctx_refs == 0);
  CHECK(s->ctx_depth == 0);
  return 0;
}

/// Creates a runtime on device 0 of the mock or fails the calling test.
#define CREATE_RUNTIME(rt)                                                     \
  attnrt_runtime *rt = NULL;                                                   \
  CHECK(attnrt_runtime_create(0, &rt) == ATTNRT_OK && rt != NULL)

#endif // ATTNRT_MOCK_FIXTURE_H
