// comm_dev_test.c - unit tests of device communicators (attnrt_comm_dev_create/destroy) against the mock libcuda and libnccl: the layout kernels receive, NCCL failures, pending creation, cleanup.

#include "mock_nccl_fixture.h"

#include <stdint.h>

// The device communicator's layout (docs/runtime.md, attnrt_internal.h): the
// LSA barrier handle at 0, the ncclDevComm from byte 64, 1088 bytes in all.
#define DEV_COMM_NCCL_OFFSET 64
#define DEV_COMM_BYTES 1088

/// A one-rank communicator over the mocks (no rendezvous).
static attnrt_comm *init_one_rank(void) {
  struct attnrt_comm_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_size = 1;
  cfg.timeout_s = 5.0;
  attnrt_comm *c = NULL;
  if (attnrt_comm_init(&cfg, &c) != ATTNRT_OK) {
    fprintf(stderr, "attnrt_comm_init: %s\n", attnrt_last_error(NULL));
    return NULL;
  }
  return c;
}

static int32_t read_i32(const unsigned char *blob, size_t offset) {
  int32_t v;
  memcpy(&v, blob + offset, sizeof v);
  return v;
}

//===-- Tests --===//

static int test_layout(void) {
  attnrt_comm *c = init_one_rank();
  CHECK(c != NULL);
  attnrt_runtime *rt = attnrt_comm_runtime(c);
  attnrt_devptr dev = 0;
  CHECK(attnrt_comm_dev_create(c, 4, &dev) == ATTNRT_OK && dev != 0);
  const struct mock_nccl_state *s = mock_nccl_state();
  CHECK(s->dev_comm_creates == 1 && s->live_dev_comms == 1);
  // One resource: the 4 barriers over a team of 1, (3 * 4 + 4 * 1) words.
  CHECK(s->dev_comm_resources == 1 && s->dev_comm_resource_bytes == 64);
  CHECK(mock_cuda_state()->last_alloc_bytes == DEV_COMM_BYTES);
  unsigned char blob[DEV_COMM_BYTES];
  CHECK(attnrt_memcpy_dtoh(rt, blob, dev, sizeof blob, NULL) == ATTNRT_OK);
  CHECK(read_i32(blob, 0) == 1); // the buffer handle NCCL assigned
  CHECK(read_i32(blob, 4) == 4); // barriers
  for (size_t i = 8; i < DEV_COMM_NCCL_OFFSET; ++i)
    CHECK(blob[i] == 0);
  CHECK(read_i32(blob, DEV_COMM_NCCL_OFFSET + 0) == 0);  // rank
  CHECK(read_i32(blob, DEV_COMM_NCCL_OFFSET + 4) == 1);  // nRanks
  CHECK(read_i32(blob, DEV_COMM_NCCL_OFFSET + 12) == 0); // lsaRank
  CHECK(read_i32(blob, DEV_COMM_NCCL_OFFSET + 16) == 1); // lsaSize
  CHECK(attnrt_comm_dev_destroy(c, dev) == ATTNRT_OK);
  CHECK(s->live_dev_comms == 0);

  // Without barriers NCCL gets no resource and the handle stays zero.
  CHECK(attnrt_comm_dev_create(c, 0, &dev) == ATTNRT_OK && dev != 0);
  CHECK(s->dev_comm_resources == 0);
  CHECK(attnrt_memcpy_dtoh(rt, blob, dev, sizeof blob, NULL) == ATTNRT_OK);
  CHECK(read_i32(blob, 0) == 0 && read_i32(blob, 4) == 0);
  CHECK(attnrt_comm_dev_destroy(c, dev) == ATTNRT_OK);
  attnrt_comm_destroy(c);
  return 0;
}

static int test_several(void) {
  attnrt_comm *c = init_one_rank();
  CHECK(c != NULL);
  attnrt_devptr a = 0, b = 0;
  CHECK(attnrt_comm_dev_create(c, 1, &a) == ATTNRT_OK);
  CHECK(attnrt_comm_dev_create(c, 2, &b) == ATTNRT_OK && b != a);
  CHECK(mock_nccl_state()->live_dev_comms == 2);
  CHECK(attnrt_comm_dev_destroy(c, a) == ATTNRT_OK);
  CHECK(attnrt_comm_dev_destroy(c, a) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(attnrt_comm_runtime(c)),
                 "is not a device communicator of this communicator"));
  CHECK(attnrt_comm_dev_destroy(c, b) == ATTNRT_OK);
  CHECK(attnrt_comm_dev_destroy(c, 0) == ATTNRT_OK);
  attnrt_comm_destroy(c);
  return 0;
}

static int test_pending(void) {
  attnrt_comm *c = init_one_rank();
  CHECK(c != NULL);
  attnrt_devptr dev = 0;
  setenv("MOCK_NCCL_PENDING", "3", 1);
  CHECK(attnrt_comm_dev_create(c, 2, &dev) == ATTNRT_OK && dev != 0);
  unsetenv("MOCK_NCCL_PENDING");
  CHECK(attnrt_comm_dev_destroy(c, dev) == ATTNRT_OK);

  // Creation that ends in an asynchronous error aborts the communicator.
  setenv("MOCK_NCCL_PENDING", "1", 1);
  setenv("MOCK_NCCL_ASYNC", "6", 1);
  CHECK(attnrt_comm_dev_create(c, 2, &dev) == ATTNRT_ERR_NCCL && dev == 0);
  CHECK(contains(attnrt_last_error(attnrt_comm_runtime(c)),
                 "ncclDevCommCreate: NCCL reported an asynchronous error"));
  unsetenv("MOCK_NCCL_ASYNC");
  CHECK(attnrt_comm_dev_create(c, 2, &dev) == ATTNRT_ERR_NCCL);
  CHECK(contains(attnrt_last_error(attnrt_comm_runtime(c)), "was aborted"));
  attnrt_comm_destroy(c);
  // The abort took NCCL's device communicator along; the mock only counts.
  mock_nccl_reset();
  return 0;
}

static int test_nccl_failures(void) {
  attnrt_comm *c = init_one_rank();
  CHECK(c != NULL);
  attnrt_runtime *rt = attnrt_comm_runtime(c);
  attnrt_devptr dev = 1;
  setenv("MOCK_NCCL_FAIL", "ncclDevCommCreate", 1);
  setenv("MOCK_NCCL_FAIL_CODE", "5", 1);
  CHECK(attnrt_comm_dev_create(c, 1, &dev) == ATTNRT_ERR_NCCL && dev == 0);
  CHECK(contains(attnrt_last_error(rt), "ncclDevCommCreate failed: invalid usage"));
  setenv("MOCK_NCCL_FAIL", "ncclLsaBarrierCreateRequirement", 1);
  CHECK(attnrt_comm_dev_create(c, 1, &dev) == ATTNRT_ERR_NCCL);
  CHECK(contains(attnrt_last_error(rt),
                 "ncclLsaBarrierCreateRequirement(1 barriers) failed: invalid usage"));
  // No barriers, no requirement to make.
  CHECK(attnrt_comm_dev_create(c, 0, &dev) == ATTNRT_OK);
  setenv("MOCK_NCCL_FAIL", "ncclDevCommDestroy", 1);
  CHECK(attnrt_comm_dev_destroy(c, dev) == ATTNRT_ERR_NCCL);
  CHECK(contains(attnrt_last_error(rt), "ncclDevCommDestroy failed: invalid usage"));
  unsetenv("MOCK_NCCL_FAIL");
  // The failed destroy released the memory and forgot the address.
  CHECK(attnrt_comm_dev_destroy(c, dev) == ATTNRT_ERR_INVALID_ARGUMENT);
  attnrt_comm_destroy(c);
  return 0;
}

static int test_driver_failures(void) {
  attnrt_comm *c = init_one_rank();
  CHECK(c != NULL);
  attnrt_runtime *rt = attnrt_comm_runtime(c);
  attnrt_devptr dev = 1;
  setenv("MOCK_CUDA_FAIL", "cuMemAlloc", 1);
  setenv("MOCK_CUDA_FAIL_CODE", "2", 1); // CUDA_ERROR_OUT_OF_MEMORY
  CHECK(attnrt_comm_dev_create(c, 1, &dev) == ATTNRT_ERR_OUT_OF_MEMORY && dev == 0);
  CHECK(contains(attnrt_last_error(rt), "cuMemAlloc(device communicator, 1088 bytes) failed"));
  CHECK(mock_nccl_state()->live_dev_comms == 0);
  setenv("MOCK_CUDA_FAIL", "cuMemcpyHtoD", 1);
  setenv("MOCK_CUDA_FAIL_CODE", "999", 1);
  CHECK(attnrt_comm_dev_create(c, 1, &dev) == ATTNRT_ERR_CUDA && dev == 0);
  CHECK(contains(attnrt_last_error(rt), "cuMemcpyHtoD(device communicator) failed"));
  CHECK(mock_nccl_state()->live_dev_comms == 0);
  unsetenv("MOCK_CUDA_FAIL");
  attnrt_comm_destroy(c);
  return 0;
}

static int test_nccl_version(void) {
  setenv("MOCK_NCCL_VERSION", "22700", 1);
  attnrt_comm *c = init_one_rank();
  CHECK(c != NULL);
  attnrt_devptr dev = 1;
  CHECK(attnrt_comm_dev_create(c, 1, &dev) == ATTNRT_ERR_NCCL && dev == 0);
  CHECK(contains(attnrt_last_error(attnrt_comm_runtime(c)),
                 "attnrt_comm_dev_create: NCCL 22700 is not 2.28"));
  attnrt_comm_destroy(c);
  // A later NCCL changed the device ABI again (2.29 versions its structs).
  setenv("MOCK_NCCL_VERSION", "22903", 1);
  c = init_one_rank();
  CHECK(c != NULL);
  CHECK(attnrt_comm_dev_create(c, 1, &dev) == ATTNRT_ERR_NCCL);
  CHECK(contains(attnrt_last_error(attnrt_comm_runtime(c)), "NCCL 22903 is not 2.28"));
  attnrt_comm_destroy(c);
  CHECK(mock_nccl_state()->dev_comm_creates == 0);
  return 0;
}

static int test_arguments(void) {
  attnrt_devptr dev = 1;
  CHECK(attnrt_comm_dev_create(NULL, 1, &dev) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "attnrt_comm_dev_create: communicator is NULL"));
  CHECK(attnrt_comm_dev_destroy(NULL, 8) == ATTNRT_ERR_INVALID_ARGUMENT);
  attnrt_comm *c = init_one_rank();
  CHECK(c != NULL);
  attnrt_runtime *rt = attnrt_comm_runtime(c);
  CHECK(attnrt_comm_dev_create(c, 1, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_comm_dev_create: dev_comm is NULL"));
  CHECK(attnrt_comm_dev_create(c, -1, &dev) == ATTNRT_ERR_INVALID_ARGUMENT && dev == 0);
  CHECK(contains(attnrt_last_error(rt), "barrier count -1 is negative"));
  attnrt_comm_destroy(c);
  return 0;
}

static int test_left_to_the_communicator(void) {
  // A device communicator not destroyed goes with its communicator (the
  // fixture checks that its device memory was freed).
  attnrt_comm *c = init_one_rank();
  CHECK(c != NULL);
  attnrt_devptr dev = 0;
  CHECK(attnrt_comm_dev_create(c, 2, &dev) == ATTNRT_OK);
  attnrt_comm_destroy(c);
  mock_nccl_reset(); // NCCL's side went with the communicator

  // After an abort, destroying only frees memory.
  c = init_one_rank();
  CHECK(c != NULL);
  CHECK(attnrt_comm_dev_create(c, 2, &dev) == ATTNRT_OK);
  attnrt_comm_abort(c);
  CHECK(attnrt_comm_dev_destroy(c, dev) == ATTNRT_OK);
  attnrt_comm_destroy(c);
  mock_nccl_reset();
  return 0;
}

int main(void) {
  static const struct test_case tests[] = {
      TEST(test_layout),
      TEST(test_several),
      TEST(test_pending),
      TEST(test_nccl_failures),
      TEST(test_driver_failures),
      TEST(test_nccl_version),
      TEST(test_arguments),
      TEST(test_left_to_the_communicator),
  };
  mock_nccl_fixture_init();
  return run_tests(tests, sizeof tests / sizeof tests[0],
                   mock_nccl_fixture_before, mock_nccl_fixture_after);
}
