// runtime_test.c - unit tests of runtime creation, errors, memory, streams and events against the mock libcuda.

#include "mock_fixture.h"

#include <pthread.h>
#include <unistd.h>

//===-- Runtime creation --===//

static int test_missing_library(void) {
  const char *path = "/nonexistent/attnrt-test/libcuda.so.1";
  setenv(ATTNRT_CUDA_LIBRARY_ENV, path, 1);
  attnrt_runtime *rt = (attnrt_runtime *)&rt;
  CHECK(attnrt_runtime_create(0, &rt) == ATTNRT_ERR_NO_DEVICE);
  CHECK(rt == NULL);
  CHECK(contains(attnrt_last_error(NULL), "cannot load CUDA driver library"));
  CHECK(contains(attnrt_last_error(NULL), path));
  return 0;
}

static int test_library_without_entry_points(void) {
  setenv(ATTNRT_CUDA_LIBRARY_ENV, "libm.so.6", 1);
  attnrt_runtime *rt = NULL;
  CHECK(attnrt_runtime_create(0, &rt) == ATTNRT_ERR_NO_DEVICE && rt == NULL);
  CHECK(contains(attnrt_last_error(NULL),
                 "CUDA driver library 'libm.so.6' has no entry point cuInit"));
  return 0;
}

static int test_init_no_device(void) {
  setenv("MOCK_CUDA_FAIL", "cuInit", 1);
  setenv("MOCK_CUDA_FAIL_CODE", "100", 1);
  attnrt_runtime *rt = NULL;
  CHECK(attnrt_runtime_create(0, &rt) == ATTNRT_ERR_NO_DEVICE && rt == NULL);
  CHECK(contains(attnrt_last_error(NULL),
                 "cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"));
  return 0;
}

static int test_init_other_failure(void) {
  setenv("MOCK_CUDA_FAIL", "cuInit", 1);
  attnrt_runtime *rt = NULL;
  CHECK(attnrt_runtime_create(0, &rt) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(NULL), "cuInit failed: CUDA_ERROR_UNKNOWN"));
  // A CUresult the driver cannot name is still reported by number.
  setenv("MOCK_CUDA_FAIL_CODE", "12345", 1);
  CHECK(attnrt_runtime_create(0, &rt) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(NULL), "cuInit failed: CUresult 12345"));
  return 0;
}

static int test_no_devices(void) {
  setenv("MOCK_CUDA_DEVICES", "0", 1);
  attnrt_runtime *rt = NULL;
  CHECK(attnrt_runtime_create(0, &rt) == ATTNRT_ERR_NO_DEVICE && rt == NULL);
  CHECK(contains(attnrt_last_error(NULL), "no CUDA device is visible"));
  return 0;
}

static int test_bad_device_ordinal(void) {
  setenv("MOCK_CUDA_DEVICES", "2", 1);
  attnrt_runtime *rt = NULL;
  CHECK(attnrt_runtime_create(2, &rt) == ATTNRT_ERR_NOT_FOUND && rt == NULL);
  CHECK(contains(attnrt_last_error(NULL), "device ordinal 2 not found: 2 devices are visible"));
  CHECK(attnrt_runtime_create(-1, &rt) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "device ordinal -1 is negative"));
  CHECK(attnrt_runtime_create(1, &rt) == ATTNRT_OK);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_context_retain_failure(void) {
  setenv("MOCK_CUDA_FAIL", "cuDevicePrimaryCtxRetain", 1);
  setenv("MOCK_CUDA_FAIL_CODE", "2", 1);
  attnrt_runtime *rt = NULL;
  CHECK(attnrt_runtime_create(0, &rt) == ATTNRT_ERR_OUT_OF_MEMORY && rt == NULL);
  CHECK(contains(attnrt_last_error(NULL), "cuDevicePrimaryCtxRetain(device 0) failed"));
  return 0;
}

static int test_create_and_query(void) {
  setenv("MOCK_CUDA_CC", "8.6", 1);
  CREATE_RUNTIME(rt);
  CHECK(mock_cuda_state()->init_calls == 1);
  CHECK(mock_cuda_state()->primary_ctx_refs == 1);
  CHECK(mock_cuda_state()->proc_address_hits > 0);
  char name[64];
  CHECK(attnrt_runtime_device_name(rt, name, sizeof name) == ATTNRT_OK);
  CHECK(strcmp(name, "Mock GPU 0") == 0);
  CHECK(attnrt_runtime_device_name(rt, name, 5) == ATTNRT_OK);
  CHECK(strcmp(name, "Mock") == 0);
  int major = 0, minor = 0, version = 0;
  CHECK(attnrt_runtime_compute_capability(rt, &major, &minor) == ATTNRT_OK);
  CHECK(major == 8 && minor == 6);
  CHECK(attnrt_runtime_driver_version(rt, &version) == ATTNRT_OK && version == 13000);
  int sms = 0;
  CHECK(attnrt_runtime_sm_count(rt, &sms) == ATTNRT_OK && sms == 132);
  CHECK(attnrt_runtime_synchronize(rt) == ATTNRT_OK);
  CHECK(strcmp(attnrt_last_error(rt), "") == 0);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_sm_count(void) {
  CREATE_RUNTIME(rt);
  // Read from the driver at every call, like the device name.
  setenv("MOCK_CUDA_SMS", "114", 1);
  int sms = 0;
  CHECK(attnrt_runtime_sm_count(rt, &sms) == ATTNRT_OK && sms == 114);
  setenv("MOCK_CUDA_SMS", "0", 1);
  sms = -1;
  CHECK(attnrt_runtime_sm_count(rt, &sms) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(rt),
                 "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT, device 0) failed: "
                 "CUDA_ERROR_INVALID_VALUE"));
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_dlsym_fallback(void) {
  setenv("MOCK_CUDA_NO_PROC_ADDRESS", "1", 1);
  CREATE_RUNTIME(rt);
  CHECK(mock_cuda_state()->proc_address_hits == 0);
  attnrt_devptr p = 0;
  CHECK(attnrt_mem_alloc(rt, 16, &p) == ATTNRT_OK);
  CHECK(attnrt_mem_free(rt, p) == ATTNRT_OK);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_real_stub_library(void) {
  const char *stub = ATTNRT_TEST_STUB_LIBRARY;
  if (!*stub || access(stub, R_OK) != 0) {
    fprintf(stderr, "note: no CUDA stub libcuda found; skipping\n");
    return 0;
  }
  setenv(ATTNRT_CUDA_LIBRARY_ENV, stub, 1);
  attnrt_runtime *rt = NULL;
  CHECK(attnrt_runtime_create(0, &rt) == ATTNRT_ERR_NO_DEVICE && rt == NULL);
  CHECK(contains(attnrt_last_error(NULL), "cuInit failed: CUDA_ERROR_STUB_LIBRARY"));
  return 0;
}

static int test_runtime_synchronize_failure(void) {
  CREATE_RUNTIME(rt);
  setenv("MOCK_CUDA_FAIL", "cuCtxSynchronize", 1);
  setenv("MOCK_CUDA_FAIL_CODE", "700", 1);
  CHECK(attnrt_runtime_synchronize(rt) == ATTNRT_ERR_CUDA);
  CHECK(strcmp(attnrt_last_error(rt),
               "cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS "
               "(an illegal memory access was encountered)") == 0);
  attnrt_runtime_destroy(rt);
  return 0;
}

/// A sync timeout turns GPU work that never finishes into ATTNRT_ERR_TIMEOUT
/// (the mock's queries answer "not ready" while MOCK_CUDA_STREAM_BUSY is
/// set); 0, the default, waits as the driver does.
static int test_sync_timeout(void) {
  CREATE_RUNTIME(rt);
  CHECK(attnrt_runtime_set_sync_timeout(rt, -1) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt),
                 "attnrt_runtime_set_sync_timeout: -1 is not a number of seconds"));
  CHECK(attnrt_runtime_set_sync_timeout(rt, 0.0 / 0.0) ==
        ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(attnrt_runtime_set_sync_timeout(NULL, 1) == ATTNRT_ERR_INVALID_ARGUMENT);
  attnrt_stream *s = NULL;
  CHECK(attnrt_stream_create(rt, &s) == ATTNRT_OK);
  setenv("MOCK_CUDA_STREAM_BUSY", "1", 1);
  // No limit: the driver's own synchronize (which the mock answers at once).
  CHECK(attnrt_runtime_synchronize(rt) == ATTNRT_OK);
  CHECK(attnrt_stream_synchronize(s) == ATTNRT_OK);
  CHECK(attnrt_runtime_set_sync_timeout(rt, 0.05) == ATTNRT_OK);
  CHECK(attnrt_runtime_synchronize(rt) == ATTNRT_ERR_TIMEOUT);
  CHECK(contains(attnrt_last_error(rt),
                 "attnrt_runtime_synchronize: the GPU work is still running "
                 "after 0.05 s (ATTNRT_SYNC_TIMEOUT_S)"));
  CHECK(attnrt_stream_synchronize(s) == ATTNRT_ERR_TIMEOUT);
  CHECK(contains(attnrt_last_error(rt),
                 "attnrt_stream_synchronize: the GPU work is still running"));
  unsetenv("MOCK_CUDA_STREAM_BUSY");
  CHECK(attnrt_runtime_synchronize(rt) == ATTNRT_OK);
  CHECK(attnrt_stream_synchronize(s) == ATTNRT_OK);
  // A failed query is the driver's error, not a timeout.
  setenv("MOCK_CUDA_FAIL", "cuEventQuery", 1);
  setenv("MOCK_CUDA_FAIL_CODE", "700", 1);
  CHECK(attnrt_runtime_synchronize(rt) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(rt), "cuEventQuery failed"));
  unsetenv("MOCK_CUDA_FAIL");
  attnrt_stream_destroy(s);
  attnrt_runtime_destroy(rt);

  // The default of a new runtime comes from ATTNRT_SYNC_TIMEOUT_S.
  setenv(ATTNRT_SYNC_TIMEOUT_ENV, "soon", 1);
  attnrt_runtime *bad = NULL;
  CHECK(attnrt_runtime_create(0, &bad) == ATTNRT_ERR_INVALID_ARGUMENT && !bad);
  CHECK(contains(attnrt_last_error(NULL),
                 "ATTNRT_SYNC_TIMEOUT_S='soon' is not a number of seconds"));
  setenv(ATTNRT_SYNC_TIMEOUT_ENV, "0.05", 1);
  CREATE_RUNTIME(env);
  unsetenv(ATTNRT_SYNC_TIMEOUT_ENV);
  setenv("MOCK_CUDA_STREAM_BUSY", "1", 1);
  CHECK(attnrt_runtime_synchronize(env) == ATTNRT_ERR_TIMEOUT);
  unsetenv("MOCK_CUDA_STREAM_BUSY");
  attnrt_runtime_destroy(env);
  return 0;
}

static int test_context_push_failure(void) {
  CREATE_RUNTIME(rt);
  setenv("MOCK_CUDA_FAIL", "cuCtxPushCurrent", 1);
  attnrt_devptr p = 0;
  CHECK(attnrt_mem_alloc(rt, 16, &p) == ATTNRT_ERR_CUDA && p == 0);
  CHECK(contains(attnrt_last_error(rt), "cuCtxPushCurrent failed"));
  unsetenv("MOCK_CUDA_FAIL");
  attnrt_runtime_destroy(rt);
  return 0;
}

//===-- Memory --===//

static int test_memory_round_trip(void) {
  CREATE_RUNTIME(rt);
  unsigned char in[256], out[256];
  for (int i = 0; i < 256; ++i)
    in[i] = (unsigned char)i;
  attnrt_devptr p = 0;
  CHECK(attnrt_mem_alloc(rt, sizeof in, &p) == ATTNRT_OK && p != 0);
  CHECK(mock_cuda_state()->live_allocations == 1);
  CHECK(attnrt_memcpy_htod(rt, p, in, sizeof in, NULL) == ATTNRT_OK);
  CHECK(attnrt_memset_d8(rt, p + 16, 0xab, 8, NULL) == ATTNRT_OK);
  CHECK(attnrt_memcpy_dtoh(rt, out, p, sizeof out, NULL) == ATTNRT_OK);
  CHECK(out[15] == 15 && out[16] == 0xab && out[23] == 0xab && out[24] == 24);
  CHECK(attnrt_mem_free(rt, p) == ATTNRT_OK);
  CHECK(attnrt_mem_free(rt, 0) == ATTNRT_OK);
  CHECK(mock_cuda_state()->ctx_depth == 0);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_memory_errors(void) {
  CREATE_RUNTIME(rt);
  attnrt_devptr p = 0;
  unsigned char buf[8] = {0};
  CHECK(attnrt_mem_alloc(rt, 0, &p) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_mem_alloc: size is 0"));
  CHECK(attnrt_mem_alloc(rt, 8, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(attnrt_mem_alloc(rt, sizeof buf, &p) == ATTNRT_OK);
  CHECK(attnrt_memcpy_htod(rt, 0, buf, 8, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_memcpy_htod: device pointer is NULL"));
  CHECK(attnrt_memcpy_htod(rt, p, NULL, 8, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_memcpy_htod: host pointer is NULL"));
  CHECK(attnrt_memcpy_dtoh(rt, buf, p, 0, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_memcpy_dtoh: size is 0"));
  CHECK(attnrt_memset_d8(rt, 0, 1, 8, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  // Past the end of the allocation: the driver's error comes back.
  CHECK(attnrt_memcpy_htod(rt, p, buf, 9, NULL) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(rt), "cuMemcpyHtoD(9 bytes) failed: CUDA_ERROR_INVALID_VALUE"));
  CHECK(attnrt_mem_free(rt, p + 1) == ATTNRT_ERR_CUDA);
  CHECK(attnrt_mem_free(rt, p) == ATTNRT_OK);

  setenv("MOCK_CUDA_FAIL", "cuMemAlloc", 1);
  setenv("MOCK_CUDA_FAIL_CODE", "2", 1);
  p = 1;
  CHECK(attnrt_mem_alloc(rt, 1u << 30, &p) == ATTNRT_ERR_OUT_OF_MEMORY && p == 0);
  CHECK(contains(attnrt_last_error(rt),
                 "cuMemAlloc(1073741824 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"));
  attnrt_runtime_destroy(rt);
  return 0;
}

//===-- Streams and events --===//

static int test_streams(void) {
  CREATE_RUNTIME(rt);
  attnrt_stream *s = NULL, *borrowed = NULL, *legacy = NULL;
  CHECK(attnrt_stream_create(rt, &s) == ATTNRT_OK && s);
  CHECK(mock_cuda_state()->live_streams == 1);
  CHECK(attnrt_stream_wrap(rt, mock_cuda_state()->last_stream, &borrowed) == ATTNRT_OK);
  CHECK(attnrt_stream_wrap(rt, NULL, &legacy) == ATTNRT_OK);

  unsigned char in[32] = {1, 2, 3}, out[32] = {0};
  attnrt_devptr p = 0;
  CHECK(attnrt_mem_alloc(rt, sizeof in, &p) == ATTNRT_OK);
  CHECK(attnrt_memcpy_htod(rt, p, in, sizeof in, s) == ATTNRT_OK);
  CHECK(attnrt_memset_d8(rt, p + 1, 9, 1, borrowed) == ATTNRT_OK);
  CHECK(attnrt_memcpy_dtoh(rt, out, p, sizeof out, legacy) == ATTNRT_OK);
  CHECK(attnrt_stream_synchronize(s) == ATTNRT_OK);
  CHECK(attnrt_stream_synchronize(legacy) == ATTNRT_OK);
  CHECK(out[0] == 1 && out[1] == 9 && out[2] == 3);

  // Destroying a wrapper leaves the CUstream alone.
  attnrt_stream_destroy(borrowed);
  attnrt_stream_destroy(legacy);
  CHECK(mock_cuda_state()->live_streams == 1);

  // Work on one runtime cannot use another runtime's stream.
  CREATE_RUNTIME(other);
  CHECK(attnrt_memcpy_htod(other, p, in, 4, s) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(other), "attnrt_memcpy_htod: stream belongs to another runtime"));
  attnrt_runtime_destroy(other);

  setenv("MOCK_CUDA_FAIL", "cuStreamSynchronize", 1);
  CHECK(attnrt_stream_synchronize(s) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(rt), "cuStreamSynchronize failed"));
  unsetenv("MOCK_CUDA_FAIL");

  CHECK(attnrt_mem_free(rt, p) == ATTNRT_OK);
  attnrt_stream_destroy(s);
  attnrt_runtime_destroy(rt);
  return 0;
}

static int test_events(void) {
  CREATE_RUNTIME(rt);
  attnrt_event *start = NULL, *end = NULL;
  attnrt_stream *s = NULL;
  CHECK(attnrt_event_create(rt, &start) == ATTNRT_OK);
  CHECK(attnrt_event_create(rt, &end) == ATTNRT_OK);
  CHECK(attnrt_stream_create(rt, &s) == ATTNRT_OK);
  float ms = -1;
  CHECK(attnrt_event_elapsed_ms(start, end, &ms) == ATTNRT_ERR_CUDA);
  CHECK(contains(attnrt_last_error(rt), "cuEventElapsedTime failed: CUDA_ERROR_INVALID_HANDLE"));
  CHECK(attnrt_event_record(start, s) == ATTNRT_OK);
  CHECK(attnrt_event_record(end, NULL) == ATTNRT_OK);
  CHECK(attnrt_event_elapsed_ms(start, end, &ms) == ATTNRT_OK && ms == 0.5f);
  CHECK(attnrt_event_elapsed_ms(start, end, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);

  CREATE_RUNTIME(other);
  attnrt_event *foreign = NULL;
  CHECK(attnrt_event_create(other, &foreign) == ATTNRT_OK);
  CHECK(attnrt_event_elapsed_ms(start, foreign, &ms) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "events belong to different runtimes"));
  CHECK(attnrt_event_record(foreign, s) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(other), "attnrt_event_record: stream belongs to another runtime"));
  attnrt_event_destroy(foreign);
  attnrt_runtime_destroy(other);

  attnrt_event_destroy(start);
  attnrt_event_destroy(end);
  attnrt_stream_destroy(s);
  attnrt_runtime_destroy(rt);
  return 0;
}

//===-- Misuse and error reporting --===//

static int expect_null_handle(enum attnrt_status st, const char *message) {
  CHECK(st == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), message));
  return 0;
}

static int test_null_arguments(void) {
  char name[8];
  int i = 0;
  float ms = 0;
  attnrt_devptr p = 0;
  attnrt_stream *s = NULL;
  attnrt_event *e = NULL;
  unsigned char byte = 0;
  CHECK(!expect_null_handle(attnrt_runtime_create(0, NULL), "attnrt_runtime_create: out is NULL"));
  CHECK(!expect_null_handle(attnrt_runtime_device_name(NULL, name, sizeof name), "runtime is NULL"));
  CHECK(!expect_null_handle(attnrt_runtime_compute_capability(NULL, &i, &i), "runtime is NULL"));
  CHECK(!expect_null_handle(attnrt_runtime_driver_version(NULL, &i), "runtime is NULL"));
  CHECK(!expect_null_handle(attnrt_runtime_sm_count(NULL, &i), "attnrt_runtime_sm_count: runtime is NULL"));
  CHECK(!expect_null_handle(attnrt_runtime_synchronize(NULL), "runtime is NULL"));
  CHECK(!expect_null_handle(attnrt_mem_alloc(NULL, 8, &p), "attnrt_mem_alloc: runtime is NULL"));
  CHECK(!expect_null_handle(attnrt_mem_free(NULL, 8), "attnrt_mem_free: runtime is NULL"));
  CHECK(!expect_null_handle(attnrt_memcpy_htod(NULL, 8, &byte, 1, NULL), "attnrt_memcpy_htod: runtime is NULL"));
  CHECK(!expect_null_handle(attnrt_memcpy_dtoh(NULL, &byte, 8, 1, NULL), "attnrt_memcpy_dtoh: runtime is NULL"));
  CHECK(!expect_null_handle(attnrt_memset_d8(NULL, 8, 0, 1, NULL), "attnrt_memset_d8: runtime is NULL"));
  CHECK(!expect_null_handle(attnrt_stream_create(NULL, &s), "attnrt_stream_create: runtime is NULL"));
  CHECK(!expect_null_handle(attnrt_stream_wrap(NULL, NULL, &s), "attnrt_stream_wrap: runtime is NULL"));
  CHECK(!expect_null_handle(attnrt_stream_synchronize(NULL), "use attnrt_runtime_synchronize"));
  CHECK(!expect_null_handle(attnrt_event_create(NULL, &e), "attnrt_event_create: runtime is NULL"));
  CHECK(!expect_null_handle(attnrt_event_record(NULL, NULL), "attnrt_event_record: event is NULL"));
  CHECK(!expect_null_handle(attnrt_event_elapsed_ms(NULL, NULL, &ms), "start event is NULL"));

  CREATE_RUNTIME(rt);
  CHECK(attnrt_runtime_device_name(rt, NULL, 8) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(attnrt_runtime_device_name(rt, name, 0) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(attnrt_runtime_compute_capability(rt, NULL, &i) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(attnrt_runtime_driver_version(rt, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(attnrt_runtime_sm_count(rt, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_runtime_sm_count: count is NULL"));
  CHECK(attnrt_stream_create(rt, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(attnrt_stream_wrap(rt, NULL, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(attnrt_event_create(rt, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_event_create: out is NULL"));
  attnrt_runtime_destroy(rt);

  attnrt_runtime_destroy(NULL);
  attnrt_module_destroy(NULL);
  attnrt_stream_destroy(NULL);
  attnrt_event_destroy(NULL);
  attnrt_manifest_destroy(NULL);
  return 0;
}

static void *fail_in_thread(void *arg) {
  char *seen = arg;
  // A fresh thread starts with an empty message.
  snprintf(seen, 256, "%s|", attnrt_last_error(NULL));
  attnrt_devptr p;
  attnrt_mem_alloc(NULL, 8, &p);
  strncat(seen, attnrt_last_error(NULL), 200);
  return NULL;
}

static int test_thread_local_error(void) {
  CHECK(attnrt_runtime_create(0, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  char seen[256] = "";
  pthread_t thread;
  CHECK(pthread_create(&thread, NULL, fail_in_thread, seen) == 0);
  CHECK(pthread_join(thread, NULL) == 0);
  CHECK(strcmp(seen, "|attnrt_mem_alloc: runtime is NULL") == 0);
  CHECK(strcmp(attnrt_last_error(NULL), "attnrt_runtime_create: out is NULL") == 0);
  return 0;
}

static int test_status_strings(void) {
  static const char *const expected[] = {
      "success",      "invalid argument",  "not found",     "no CUDA device",
      "CUDA driver error", "NCCL error", "out of memory", "invalid manifest",
      "timed out"};
  for (int st = ATTNRT_OK; st <= ATTNRT_ERR_TIMEOUT; ++st)
    CHECK(strcmp(attnrt_status_string((enum attnrt_status)st), expected[st]) == 0);
  CHECK(strcmp(attnrt_status_string((enum attnrt_status)42), "unknown status") == 0);
  return 0;
}

int main(void) {
  static const struct test_case tests[] = {
      TEST(test_missing_library),
      TEST(test_library_without_entry_points),
      TEST(test_init_no_device),
      TEST(test_init_other_failure),
      TEST(test_no_devices),
      TEST(test_bad_device_ordinal),
      TEST(test_context_retain_failure),
      TEST(test_create_and_query),
      TEST(test_sm_count),
      TEST(test_dlsym_fallback),
      TEST(test_real_stub_library),
      TEST(test_runtime_synchronize_failure),
      TEST(test_sync_timeout),
      TEST(test_context_push_failure),
      TEST(test_memory_round_trip),
      TEST(test_memory_errors),
      TEST(test_streams),
      TEST(test_events),
      TEST(test_null_arguments),
      TEST(test_thread_local_error),
      TEST(test_status_strings),
  };
  mock_fixture_init();
  return run_tests(tests, sizeof tests / sizeof tests[0], mock_fixture_before,
                   mock_fixture_after);
}
