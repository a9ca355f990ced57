// comm_dev_test.c - unit tests of device communicators (attnrt_comm_dev_create/destroy) and of the peer tables made with them (attnrt_comm_buffer_peers) against the mock libcuda and libnccl: the layout kernels receive, NCCL failures, pending creation, cleanup.

#include "mock_nccl_fixture.h"
#include "free_port.h"

#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

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

//===-- Peer tables --===//

/// Where the mock's attn_nccl_peer_table puts rank p's copy of a buffer.
#define FAKE_PEER_ADDRESS(p) (UINT64_C(0x7e0000000000) + ((uint64_t)(p) << 32))

/// attn_nccl_peer_table on the mock (runtime/nccl/attn_nccl_device.cu):
/// params (dev_comm, window, local, table, nranks); the ranks of this rank's
/// LSA team (from the ncclDevComm the mock libnccl wrote) get a fake address,
/// this rank local, the others 0, as ncclGetPeerPointer's NULL.
static void peer_table_kernel(const struct mock_cuda_launch *l) {
  const unsigned char *dev = (const unsigned char *)(uintptr_t)l->params[0];
  int rank = read_i32(dev, DEV_COMM_NCCL_OFFSET + 0);
  int lsa_rank = read_i32(dev, DEV_COMM_NCCL_OFFSET + 12);
  int lsa_size = read_i32(dev, DEV_COMM_NCCL_OFFSET + 16);
  uint64_t *table = (uint64_t *)(uintptr_t)l->params[3];
  for (int p = 0; p < (int)l->params[4]; ++p) {
    int lsa_peer = lsa_rank + p - rank;
    table[p] = p == rank                              ? l->params[2]
               : lsa_peer >= 0 && lsa_peer < lsa_size ? FAKE_PEER_ADDRESS(p)
                                                      : 0;
  }
}

static uint64_t read_u64(attnrt_runtime *rt, attnrt_devptr p) {
  uint64_t v = 0;
  if (attnrt_memcpy_dtoh(rt, &v, p, sizeof v, NULL) != ATTNRT_OK)
    return UINT64_MAX;
  return v;
}

/// A library built without the shim cannot make tables: a clear error.
static int expect_no_shim(attnrt_comm *c) {
  attnrt_comm_buffer *b = NULL;
  attnrt_devptr dev = 0, peers = 1;
  CHECK(attnrt_comm_buffer_alloc(c, 4096, &b) == ATTNRT_OK);
  CHECK(attnrt_comm_dev_create(c, 0, &dev) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_peers(b, dev, &peers) == ATTNRT_ERR_NOT_FOUND && peers == 0);
  CHECK(contains(attnrt_last_error(attnrt_comm_runtime(c)),
                 "built without the NCCL device shim"));
  CHECK(attnrt_comm_dev_destroy(c, dev) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_free(b) == ATTNRT_OK);
  attnrt_comm_destroy(c);
  return 0;
}

static int test_peer_table(void) {
  attnrt_comm *c = init_one_rank();
  CHECK(c != NULL);
  if (!attnrt_nccl_shim_available())
    return expect_no_shim(c);
  mock_cuda_set_kernel("attn_nccl_peer_table", peer_table_kernel);
  attnrt_runtime *rt = attnrt_comm_runtime(c);
  attnrt_comm_buffer *b = NULL, *b2 = NULL;
  attnrt_devptr dev = 0, peers = 0, again = 0, peers2 = 0;
  CHECK(attnrt_comm_buffer_alloc(c, 8192, &b) == ATTNRT_OK);
  CHECK(attnrt_comm_dev_create(c, 0, &dev) == ATTNRT_OK);
  int modules = mock_cuda_state()->live_modules;
  CHECK(attnrt_comm_buffer_peers(b, dev, &peers) == ATTNRT_OK && peers != 0);
  // The shim, loaded on its own (PTX for the driver, no nvJitLink), ran
  // once: one block, dev_comm, the window, the buffer's address, the table
  // and the number of ranks.
  const struct mock_cuda_state *s = mock_cuda_state();
  CHECK(s->live_modules == modules + 1);
  CHECK(s->launches == 1);
  const struct mock_cuda_launch *l = &s->last_launch;
  CHECK(strcmp(l->kernel, "attn_nccl_peer_table") == 0);
  CHECK(l->grid[0] == 1 && l->grid[1] == 1 && l->grid[2] == 1 && l->block[0] >= 1);
  CHECK(l->nparams == 5 && l->param_size[4] == 4);
  CHECK(l->params[0] == dev);
  CHECK(l->params[1] == (uint64_t)(uintptr_t)attnrt_comm_buffer_window(b));
  CHECK(l->params[2] == attnrt_comm_buffer_ptr(b));
  CHECK(l->params[3] == peers && l->params[4] == 1);
  CHECK(l->stream == NULL);
  CHECK(mock_cuda_state()->last_alloc_bytes == 8); // one rank, one u64
  CHECK(read_u64(rt, peers) == attnrt_comm_buffer_ptr(b));
  // Made once per buffer: later calls return it without a launch, even once
  // the device communicator is gone.
  CHECK(attnrt_comm_dev_destroy(c, dev) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_peers(b, 0, &again) == ATTNRT_OK && again == peers);
  CHECK(s->launches == 1);
  // Another buffer has its own table; the shim stays loaded.
  CHECK(attnrt_comm_buffer_alloc(c, 4096, &b2) == ATTNRT_OK);
  CHECK(attnrt_comm_dev_create(c, 0, &dev) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_peers(b2, dev, &peers2) == ATTNRT_OK && peers2 != peers);
  CHECK(read_u64(rt, peers2) == attnrt_comm_buffer_ptr(b2));
  CHECK(s->launches == 2 && s->live_modules == modules + 1);
  // Tables go with their buffers, the shim with the communicator (the
  // fixture checks that nothing is left).
  CHECK(attnrt_comm_dev_destroy(c, dev) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_free(b) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_free(b2) == ATTNRT_OK);
  attnrt_comm_destroy(c);
  return 0;
}

static int test_peer_table_errors(void) {
  attnrt_devptr peers = 1;
  CHECK(attnrt_comm_buffer_peers(NULL, 8, &peers) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "attnrt_comm_buffer_peers: buffer is NULL"));
  attnrt_comm *c = init_one_rank();
  CHECK(c != NULL);
  if (!attnrt_nccl_shim_available())
    return expect_no_shim(c);
  mock_cuda_set_kernel("attn_nccl_peer_table", peer_table_kernel);
  attnrt_runtime *rt = attnrt_comm_runtime(c);
  attnrt_comm_buffer *b = NULL;
  attnrt_devptr dev = 0;
  CHECK(attnrt_comm_buffer_alloc(c, 4096, &b) == ATTNRT_OK);
  CHECK(attnrt_comm_dev_create(c, 0, &dev) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_peers(b, dev, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_comm_buffer_peers: peers is NULL"));
  CHECK(attnrt_comm_buffer_peers(b, 0, &peers) == ATTNRT_ERR_INVALID_ARGUMENT && peers == 0);
  CHECK(contains(attnrt_last_error(rt), "dev_comm 0x0 is not a device communicator"));
  CHECK(attnrt_comm_buffer_peers(b, dev + 64, &peers) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(mock_cuda_state()->launches == 0);

  // Each driver failure is reported, leaves nothing behind, and the next
  // call tries again.
  static const struct {
    const char *fail, *code, *message;
    enum attnrt_status status;
  } driver[] = {
      // The driver's JIT log of a shim it refuses ends the message.
      {"cuModuleLoadDataEx", "218",
       "cuModuleLoadDataEx(NCCL device shim) failed: CUDA_ERROR_INVALID_PTX (a PTX JIT "
       "compilation failed); JIT log:\nptxas fatal: bad shim",
       ATTNRT_ERR_CUDA},
      {"cuModuleGetFunction", "500",
       "cuModuleGetFunction(attn_nccl_peer_table) failed", ATTNRT_ERR_CUDA},
      {"cuMemAlloc", "2", "cuMemAlloc(peer table, 8 bytes) failed", ATTNRT_ERR_OUT_OF_MEMORY},
      {"cuLaunchKernel", "999", "cuLaunchKernel(attn_nccl_peer_table) failed", ATTNRT_ERR_CUDA},
      // The kernel failed (read back on the legacy stream, which waits for it).
      {"cuMemcpyDtoH", "700", "cuMemcpyDtoH(peer table) failed", ATTNRT_ERR_CUDA},
  };
  setenv("MOCK_CUDA_JIT_LOG", "ptxas fatal: bad shim", 1);
  for (size_t i = 0; i < sizeof driver / sizeof driver[0]; ++i) {
    setenv("MOCK_CUDA_FAIL", driver[i].fail, 1);
    setenv("MOCK_CUDA_FAIL_CODE", driver[i].code, 1);
    peers = 1;
    enum attnrt_status st = attnrt_comm_buffer_peers(b, dev, &peers);
    unsetenv("MOCK_CUDA_FAIL");
    if (st != driver[i].status || peers != 0 ||
        !contains(attnrt_last_error(rt), driver[i].message)) {
      fprintf(stderr, "%s: status %d, message: %s\n", driver[i].fail, (int)st,
              attnrt_last_error(rt));
      return 1;
    }
    CHECK(mock_cuda_state()->live_allocations == 2); // the buffer, dev_comm
  }
  unsetenv("MOCK_CUDA_JIT_LOG");
  CHECK(attnrt_comm_buffer_peers(b, dev, &peers) == ATTNRT_OK && peers != 0);

  // An aborted communicator makes no table.
  attnrt_comm_buffer *b2 = NULL;
  CHECK(attnrt_comm_buffer_alloc(c, 4096, &b2) == ATTNRT_OK);
  attnrt_comm_abort(c);
  CHECK(attnrt_comm_buffer_peers(b2, dev, &peers) == ATTNRT_ERR_NCCL && peers == 0);
  CHECK(contains(attnrt_last_error(rt), "attnrt_comm_buffer_peers: the communicator was aborted"));
  CHECK(attnrt_comm_dev_destroy(c, dev) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_free(b) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_free(b2) == ATTNRT_OK);
  attnrt_comm_destroy(c);
  mock_nccl_reset(); // NCCL's side went with the aborted communicator
  return 0;
}

//===-- attnrt_comm_launch --===//

// Fused communication kernels as attn writes them (a, b, c, then workspace,
// peers, out_peers, rank, epoch), for one rank ("g", "g2") and for four
// ("g4"), and a kernel without a "comm" entry. c is 16 x 16 bf16 (512 bytes).
static const char *const fused_ptx =
    ".version 8.0\n.target sm_90a\n.address_size 64\n"
#define FUSED_ENTRY(n)                                                         \
  ".visible .entry " n "(.param .u64 " n "_a, .param .u64 " n "_b, "           \
  ".param .u64 " n "_c, .param .u64 " n "_w, .param .u64 " n "_p, "            \
  ".param .u64 " n "_o, .param .u32 " n "_r, .param .u32 " n "_e)\n{\n"         \
  "  ret;\n}\n"
    FUSED_ENTRY("g") FUSED_ENTRY("g2") FUSED_ENTRY("g4")
    ".visible .entry plain(.param .u64 plain_x)\n{\n  ret;\n}\n";
#define FUSED_KERNEL(n, world)                                                 \
  "{\"name\": \"" n "\", \"grid\": [2], \"block\": [128], \"params\": ["      \
  "{\"name\": \"a\", \"kind\": \"ptr\"}, {\"name\": \"b\", \"kind\": \"ptr\"}, " \
  "{\"name\": \"c\", \"kind\": \"ptr\", \"dtype\": \"bf16\", \"shape\": "   \
  "[16, 16]}, {\"name\": \"workspace\", \"kind\": \"ptr\", \"align\": 256}, "  \
  "{\"name\": \"peers\", \"kind\": \"ptr\"}, {\"name\": \"out_peers\", "       \
  "\"kind\": \"ptr\"}, {\"name\": \"rank\", \"kind\": \"i32\"}, {\"name\": "   \
  "\"epoch\", \"kind\": \"i32\"}], \"comm\": {\"pattern\": "                    \
  "\"matmul_all_reduce\", \"world_size\": " world                             \
  ", \"workspace_bytes\": 4096}}"
static const char *const fused_manifest =
    "{\"version\": 1, \"format\": \"ptx\", \"kernels\": [" FUSED_KERNEL("g", "1")
    ", " FUSED_KERNEL("g2", "1") ", " FUSED_KERNEL("g4", "4")
    ", {\"name\": \"plain\", \"grid\": [1], \"block\": [32], \"params\": "
    "[{\"name\": \"x\", \"kind\": \"ptr\"}]}]}";

// A one-rank fused kernel whose c has no shape and dtype.
#define UNSIZED_C_KERNEL(n, bytes)                                             \
  "{\"version\": 1, \"format\": \"ptx\", \"kernels\": [{\"name\": \"" n        \
  "\", \"grid\": [2], \"block\": [128], \"params\": [{\"name\": \"a\", "       \
  "\"kind\": \"ptr\"}, {\"name\": \"b\", \"kind\": \"ptr\"}, {\"name\": \"c\", "  \
  "\"kind\": \"ptr\"}, {\"name\": \"workspace\", \"kind\": \"ptr\"}, "           \
  "{\"name\": \"peers\", \"kind\": \"ptr\"}, {\"name\": \"out_peers\", "       \
  "\"kind\": \"ptr\"}, {\"name\": \"rank\", \"kind\": \"i32\"}, {\"name\": "   \
  "\"epoch\", \"kind\": \"i32\"}], \"comm\": {\"pattern\": "                    \
  "\"matmul_all_reduce\", \"world_size\": 1, \"workspace_bytes\": " bytes "}}]}"

// g again, compiled for a smaller problem: the same name, another layout.
static const char *const other_g_manifest = UNSIZED_C_KERNEL("g", "2048");

// g2 whose c has no shape and dtype: attnrt_comm_launch_out cannot size it.
static const char *const unsized_c_manifest = UNSIZED_C_KERNEL("g2", "1024");

/// True when attnrt_comm_launch_out refuses (ATTNRT_ERR_INVALID_ARGUMENT)
/// with a message containing msg; else prints what it got.
static bool out_refused(attnrt_runtime *rt, attnrt_module *m, const char *name,
                        attnrt_comm_buffer *w, attnrt_comm_buffer *out,
                        attnrt_devptr dev, const struct attnrt_arg *args,
                        size_t nargs, const char *msg) {
  enum attnrt_status st =
      attnrt_comm_launch_out(m, name, w, out, dev, args, nargs, NULL);
  if (st == ATTNRT_ERR_INVALID_ARGUMENT && contains(attnrt_last_error(rt), msg))
    return true;
  fprintf(stderr, "attnrt_comm_launch_out: status %d, message: %s\n", (int)st,
          attnrt_last_error(rt));
  return false;
}

static int test_comm_launch(void) {
  CHECK(attnrt_comm_launch(NULL, "g", NULL, 0, NULL, 0, NULL) ==
        ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "attnrt_comm_launch: workspace is NULL"));
  attnrt_comm *c = init_one_rank();
  CHECK(c != NULL);
  attnrt_runtime *rt = attnrt_comm_runtime(c);
  attnrt_module *m = NULL;
  CHECK(attnrt_module_load_ptx(rt, fused_ptx, 0, fused_manifest, &m) == ATTNRT_OK);
  attnrt_comm_buffer *w = NULL, *small = NULL;
  attnrt_devptr dev = 0, abc = 0;
  CHECK(attnrt_comm_buffer_alloc(c, 4096, &w) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_alloc(c, 1024, &small) == ATTNRT_OK);
  CHECK(attnrt_comm_dev_create(c, 0, &dev) == ATTNRT_OK);
  CHECK(attnrt_mem_alloc(rt, 3 * 256, &abc) == ATTNRT_OK);
  struct attnrt_arg args[3];
  for (int i = 0; i < 3; ++i) {
    args[i].kind = ATTNRT_ARG_PTR;
    args[i].v.ptr = abc + 256 * (attnrt_devptr)i;
  }

  // What the caller gets wrong is named before anything runs.
  static const struct {
    const char *kernel;
    int small, nargs;
    enum attnrt_status status;
    const char *message;
  } bad[] = {
      {"absent", 0, 3, ATTNRT_ERR_NOT_FOUND,
       "attnrt_comm_launch: the module has no kernel 'absent'"},
      {"plain", 0, 1, ATTNRT_ERR_INVALID_ARGUMENT,
       "kernel 'plain' is not a fused communication kernel"},
      {"g4", 0, 3, ATTNRT_ERR_INVALID_ARGUMENT,
       "kernel 'g4' was compiled for 4 ranks, but the workspace's communicator "
       "has 1 (compile the program with world_size = 1)"},
      {"g", 1, 3, ATTNRT_ERR_INVALID_ARGUMENT,
       "the workspace has 1024 bytes, kernel 'g' needs 4096"},
      {"g", 0, 2, ATTNRT_ERR_INVALID_ARGUMENT,
       "kernel 'g' takes 3 arguments before its workspace, peers, out_peers, "
       "rank and epoch; got 2"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    enum attnrt_status st =
        attnrt_comm_launch(m, bad[i].kernel, bad[i].small ? small : w, dev,
                           args, (size_t)bad[i].nargs, NULL);
    if (st != bad[i].status || !contains(attnrt_last_error(rt), bad[i].message)) {
      fprintf(stderr, "case %zu: status %d, message: %s\n", i, (int)st,
              attnrt_last_error(rt));
      return 1;
    }
  }
  CHECK(mock_cuda_state()->launches == 0);
  if (!attnrt_nccl_shim_available()) {
    // No table, no launch.
    CHECK(attnrt_comm_launch(m, "g", w, dev, args, 3, NULL) == ATTNRT_ERR_NOT_FOUND);
    CHECK(contains(attnrt_last_error(rt), "built without the NCCL device shim"));
  } else {
    mock_cuda_set_kernel("attn_nccl_peer_table", peer_table_kernel);
    // The first launch makes the table, then runs the kernel with the
    // caller's arguments, the workspace, its table, the rank and launch 1.
    CHECK(attnrt_comm_launch(m, "g", w, dev, args, 3, NULL) == ATTNRT_OK);
    const struct mock_cuda_state *s = mock_cuda_state();
    const struct mock_cuda_launch *l = &s->last_launch;
    attnrt_devptr peers = 0;
    CHECK(attnrt_comm_buffer_peers(w, 0, &peers) == ATTNRT_OK && peers != 0);
    CHECK(s->launches == 2 && strcmp(l->kernel, "g") == 0 && l->nparams == 8);
    CHECK(l->params[0] == abc && l->params[2] == abc + 512);
    CHECK(l->params[3] == attnrt_comm_buffer_ptr(w) && l->params[4] == peers);
    CHECK(l->params[5] == 0 && l->params[6] == 0 && l->params[7] == 1);
    // Later launches keep the table (dev_comm may be 0) and count on.
    CHECK(attnrt_comm_launch(m, "g", w, 0, args, 3, NULL) == ATTNRT_OK);
    CHECK(s->launches == 3 && l->params[7] == 2);
    // A launch the driver refuses is not counted.
    setenv("MOCK_CUDA_FAIL", "cuLaunchKernel", 1);
    CHECK(attnrt_comm_launch(m, "g", w, 0, args, 3, NULL) == ATTNRT_ERR_CUDA);
    unsetenv("MOCK_CUDA_FAIL");
    CHECK(attnrt_comm_launch(m, "g", w, 0, args, 3, NULL) == ATTNRT_OK);
    CHECK(l->params[7] == 3);
    // With the output in a symmetric buffer: its table is made (with
    // dev_comm) and passed as out_peers; c must be the buffer's address.
    attnrt_comm_buffer *out = NULL, *tiny = NULL;
    CHECK(attnrt_comm_buffer_alloc(c, 512, &out) == ATTNRT_OK);
    CHECK(attnrt_comm_buffer_alloc(c, 256, &tiny) == ATTNRT_OK);
    struct attnrt_arg oargs[3] = {args[0], args[1], args[2]};
    CHECK(out_refused(rt, m, "g", w, out, dev, oargs, 3,
                      "attnrt_comm_launch_out: kernel 'g' writes its output c "
                      "into out, so its argument c must be out's address"));
    oargs[2].v.ptr = attnrt_comm_buffer_ptr(tiny);
    CHECK(out_refused(rt, m, "g", w, tiny, dev, oargs, 3,
                      "attnrt_comm_launch_out: out has 256 bytes, kernel 'g' "
                      "writes 512 into c"));
    CHECK(out_refused(rt, m, "g", w, NULL, dev, oargs, 3,
                      "attnrt_comm_launch_out: out is NULL"));
    // The checks of attnrt_comm_launch name the function called.
    CHECK(out_refused(rt, m, "g", w, out, dev, oargs, 2,
                      "attnrt_comm_launch_out: kernel 'g' takes 3 arguments"));
    CHECK(s->launches == 4);
    oargs[2].v.ptr = attnrt_comm_buffer_ptr(out);
    CHECK(attnrt_comm_launch_out(m, "g", w, out, dev, oargs, 3, NULL) ==
          ATTNRT_OK);
    attnrt_devptr out_peers = 0;
    CHECK(attnrt_comm_buffer_peers(out, 0, &out_peers) == ATTNRT_OK);
    CHECK(out_peers != 0 && out_peers != peers);
    CHECK(s->launches == 6 && l->params[2] == attnrt_comm_buffer_ptr(out));
    CHECK(l->params[4] == peers && l->params[5] == out_peers);
    CHECK(l->params[7] == 4);
    // A plain launch again passes no table (the kernels count their flags
    // alike either way, so a workspace may serve both kinds).
    CHECK(attnrt_comm_launch(m, "g", w, 0, args, 3, NULL) == ATTNRT_OK);
    CHECK(s->launches == 7 && l->params[5] == 0 && l->params[7] == 5);
    CHECK(attnrt_comm_buffer_free(out) == ATTNRT_OK);
    CHECK(attnrt_comm_buffer_free(tiny) == ATTNRT_OK);
    // The workspace holds g's flags: another kernel is refused.
    CHECK(attnrt_comm_launch(m, "g2", w, 0, args, 3, NULL) ==
          ATTNRT_ERR_INVALID_ARGUMENT);
    CHECK(contains(attnrt_last_error(rt),
                   "the workspace holds the flags of kernel 'g'; a workspace "
                   "serves one kernel (allocate another for 'g2')"));
    // So is another build of g (recompiled for another shape: its flags are
    // laid out differently), though its name is the same.
    attnrt_module *other = NULL;
    CHECK(attnrt_module_load_ptx(rt, fused_ptx, 0, other_g_manifest, &other) ==
          ATTNRT_OK);
    CHECK(attnrt_comm_launch(other, "g", w, 0, args, 3, NULL) ==
          ATTNRT_ERR_INVALID_ARGUMENT);
    CHECK(contains(attnrt_last_error(rt),
                   "the workspace holds the flags of another build of kernel "
                   "'g' (matmul_all_reduce, 1 ranks, 4096 bytes, 0+0 CTAs, "
                   "default split; this one: matmul_all_reduce, 1 ranks, 2048 "
                   "bytes"));
    CHECK(s->launches == 7 && l->params[7] == 5);
    attnrt_module_destroy(other);
  }
  // A module of another runtime.
  CREATE_RUNTIME(rt2);
  attnrt_module *m2 = NULL;
  CHECK(attnrt_module_load_ptx(rt2, fused_ptx, 0, fused_manifest, &m2) == ATTNRT_OK);
  CHECK(attnrt_comm_launch(m2, "g", w, dev, args, 3, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "loaded on another runtime"));
  CHECK(attnrt_comm_launch(m, NULL, w, dev, args, 3, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_comm_launch: name is NULL"));
  attnrt_module_destroy(m2);
  attnrt_runtime_destroy(rt2);
  // The workspace as the output, and a kernel whose c attnrt cannot size.
  CHECK(out_refused(rt, m, "g", w, w, dev, args, 3,
                    "attnrt_comm_launch_out: out is the workspace"));
  attnrt_module *unsized = NULL;
  CHECK(attnrt_module_load_ptx(rt, fused_ptx, 0, unsized_c_manifest,
                               &unsized) == ATTNRT_OK);
  attnrt_comm_buffer *w2 = NULL, *o2 = NULL;
  CHECK(attnrt_comm_buffer_alloc(c, 1024, &w2) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_alloc(c, 1024, &o2) == ATTNRT_OK);
  struct attnrt_arg uargs[3] = {args[0], args[1], args[2]};
  uargs[2].v.ptr = attnrt_comm_buffer_ptr(o2);
  CHECK(out_refused(rt, unsized, "g2", w2, o2, dev, uargs, 3,
                    "attnrt_comm_launch_out: kernel 'g2' has no argument 'c' "
                    "(a ptr with a shape and dtype) to write into out"));
  CHECK(attnrt_comm_buffer_free(w2) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_free(o2) == ATTNRT_OK);
  attnrt_module_destroy(unsized);
  // An output of another communicator.
  attnrt_comm *c2 = init_one_rank();
  CHECK(c2 != NULL);
  attnrt_comm_buffer *out2 = NULL;
  CHECK(attnrt_comm_buffer_alloc(c2, 512, &out2) == ATTNRT_OK);
  CHECK(out_refused(rt, m, "g", w, out2, dev, args, 3,
                    "attnrt_comm_launch_out: out belongs to another "
                    "communicator than the workspace"));
  CHECK(attnrt_comm_buffer_free(out2) == ATTNRT_OK);
  attnrt_comm_destroy(c2);
  CHECK(attnrt_mem_free(rt, abc) == ATTNRT_OK);
  CHECK(attnrt_comm_dev_destroy(c, dev) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_free(w) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_free(small) == ATTNRT_OK);
  attnrt_module_destroy(m);
  attnrt_comm_destroy(c);
  return 0;
}

/// Rank 0 of a two-rank communicator over the mocks (rank 1, a child
/// process, joins and leaves), with LSA teams of lsa_size ranks: the peer
/// table of a buffer. Stores the table's entries in got (0, 0 when it
/// failed) and the status and message of attnrt_comm_buffer_peers.
static int two_rank_table(const char *lsa_size, enum attnrt_status *st, uint64_t got[2],
                          uint64_t *local, char *msg, size_t msg_len) {
  struct attnrt_comm_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_size = 2;
  cfg.timeout_s = 10.0;
  snprintf(cfg.master_addr, sizeof cfg.master_addr, "127.0.0.1");
  cfg.master_port = free_port(29533);
  setenv("MOCK_NCCL_LSA_SIZE", lsa_size, 1);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    cfg.rank = 1;
    attnrt_comm *c1 = NULL;
    enum attnrt_status s1 = attnrt_comm_init(&cfg, &c1);
    attnrt_comm_destroy(c1);
    _exit(s1 == ATTNRT_OK ? 0 : 1);
  }
  CHECK(pid > 0);
  attnrt_comm *c = NULL;
  enum attnrt_status init = attnrt_comm_init(&cfg, &c);
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK(init == ATTNRT_OK);
  attnrt_comm_buffer *b = NULL;
  attnrt_devptr dev = 0, peers = 0;
  CHECK(attnrt_comm_buffer_alloc(c, 4096, &b) == ATTNRT_OK);
  CHECK(attnrt_comm_dev_create(c, 0, &dev) == ATTNRT_OK);
  *local = attnrt_comm_buffer_ptr(b);
  *st = attnrt_comm_buffer_peers(b, dev, &peers);
  snprintf(msg, msg_len, "%s", attnrt_last_error(attnrt_comm_runtime(c)));
  got[0] = got[1] = 0;
  if (*st == ATTNRT_OK)
    CHECK(attnrt_memcpy_dtoh(attnrt_comm_runtime(c), got, peers, 16, NULL) == ATTNRT_OK);
  else
    CHECK(peers == 0);
  CHECK(attnrt_comm_dev_destroy(c, dev) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_free(b) == ATTNRT_OK);
  attnrt_comm_destroy(c);
  return 0;
}

static int test_peer_table_two_ranks(void) {
  if (!attnrt_nccl_shim_available()) {
    attnrt_comm *c = init_one_rank();
    CHECK(c != NULL);
    return expect_no_shim(c);
  }
  mock_cuda_set_kernel("attn_nccl_peer_table", peer_table_kernel);
  enum attnrt_status st;
  uint64_t got[2], local;
  char msg[512];
  // One node of two GPUs: both ranks reachable.
  CHECK(two_rank_table("2", &st, got, &local, msg, sizeof msg) == 0);
  CHECK(st == ATTNRT_OK && got[0] == local && got[1] == FAKE_PEER_ADDRESS(1));
  CHECK(mock_cuda_state()->last_launch.params[4] == 2);
  // Two nodes of one GPU: rank 1 is not reachable by load/store, which the
  // fused kernels need; a clear error instead of a kernel that would fault.
  CHECK(two_rank_table("1", &st, got, &local, msg, sizeof msg) == 0);
  if (st != ATTNRT_ERR_NCCL ||
      !contains(msg, "attnrt_comm_buffer_peers: rank 0 cannot reach the buffer of 1 of 2 "
                     "ranks by load/store") ||
      !contains(msg, "unreachable ranks: 1")) {
    fprintf(stderr, "status %d: %s\n", (int)st, msg);
    return 1;
  }
  unsetenv("MOCK_NCCL_LSA_SIZE");
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
      TEST(test_peer_table),
      TEST(test_peer_table_errors),
      TEST(test_peer_table_two_ranks),
      TEST(test_comm_launch),
  };
  mock_nccl_fixture_init();
  return run_tests(tests, sizeof tests / sizeof tests[0],
                   mock_nccl_fixture_before, mock_nccl_fixture_after);
}
