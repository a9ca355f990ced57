// comm_test.c - unit tests of the communicator layer (environment, rendezvous, NCCL init, polling, buffers, collectives) against the mock libcuda and libnccl.

#include "mock_nccl_fixture.h"
#include "free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct attnrt_comm_config config(int rank, int size, double timeout_s) {
  struct attnrt_comm_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.rank = rank;
  cfg.world_size = size;
  cfg.local_rank = 0;
  snprintf(cfg.master_addr, sizeof cfg.master_addr, "127.0.0.1");
  cfg.master_port = free_port(29500);
  cfg.timeout_s = timeout_s;
  return cfg;
}

/// Sets the torchrun variables of a healthy two-rank job, rank 0.
static void set_job_env(void) {
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("LOCAL_RANK", "0", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29500", 1);
}

/// Expects attnrt_comm_config_from_env to fail with message.
static int expect_env_error(const char *message) {
  struct attnrt_comm_config cfg;
  CHECK(attnrt_comm_config_from_env(&cfg) == ATTNRT_ERR_INVALID_ARGUMENT);
  if (strcmp(attnrt_last_error(NULL), message) != 0) {
    fprintf(stderr, "expected: %s\n     got: %s\n", message, attnrt_last_error(NULL));
    return 1;
  }
  attnrt_comm *c = (attnrt_comm *)&cfg;
  CHECK(attnrt_comm_init_from_env(&c) == ATTNRT_ERR_INVALID_ARGUMENT && c == NULL);
  CHECK(strcmp(attnrt_last_error(NULL), message) == 0);
  return 0;
}

//===-- Environment --===//

static int test_env_complete(void) {
  set_job_env();
  setenv("RANK", "1", 1);
  setenv("LOCAL_RANK", "1", 1);
  struct attnrt_comm_config cfg;
  CHECK(attnrt_comm_config_from_env(&cfg) == ATTNRT_OK);
  CHECK(cfg.rank == 1 && cfg.world_size == 2 && cfg.local_rank == 1);
  CHECK(strcmp(cfg.master_addr, "127.0.0.1") == 0 && cfg.master_port == 29500);
  CHECK(cfg.timeout_s == ATTNRT_COMM_TIMEOUT_DEFAULT_S);
  setenv(ATTNRT_COMM_TIMEOUT_ENV, "2.5", 1);
  unsetenv("LOCAL_RANK"); // defaults to RANK
  CHECK(attnrt_comm_config_from_env(&cfg) == ATTNRT_OK);
  CHECK(cfg.timeout_s == 2.5 && cfg.local_rank == 1);
  // One rank needs no rendezvous, so no MASTER_*.
  unsetenv("MASTER_ADDR");
  unsetenv("MASTER_PORT");
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "1", 1);
  CHECK(attnrt_comm_config_from_env(&cfg) == ATTNRT_OK && cfg.world_size == 1);
  CHECK(attnrt_comm_config_from_env(NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  return 0;
}

static int test_env_errors(void) {
  set_job_env();
  unsetenv("RANK");
  CHECK(expect_env_error("RANK is not set: expected the rank of this process "
                         "(torchrun sets it)") == 0);
  set_job_env();
  unsetenv("WORLD_SIZE");
  CHECK(expect_env_error("WORLD_SIZE is not set: expected the number of ranks "
                         "(torchrun sets it)") == 0);
  set_job_env();
  unsetenv("MASTER_ADDR");
  CHECK(expect_env_error("MASTER_ADDR is not set: expected the host name or "
                         "address of rank 0 (torchrun sets it)") == 0);
  set_job_env();
  unsetenv("MASTER_PORT");
  CHECK(expect_env_error("MASTER_PORT is not set: expected the TCP port rank 0 "
                         "listens on (torchrun sets it)") == 0);
  set_job_env();
  setenv("RANK", "one", 1);
  CHECK(expect_env_error("RANK='one' is not an integer: expected the rank of "
                         "this process") == 0);
  set_job_env();
  setenv("WORLD_SIZE", "2x", 1);
  CHECK(expect_env_error("WORLD_SIZE='2x' is not an integer: expected the "
                         "number of ranks") == 0);
  set_job_env();
  setenv("LOCAL_RANK", "", 1); // empty counts as unset: RANK is used
  struct attnrt_comm_config cfg;
  CHECK(attnrt_comm_config_from_env(&cfg) == ATTNRT_OK && cfg.local_rank == 0);
  setenv("LOCAL_RANK", "-1", 1);
  CHECK(expect_env_error("LOCAL_RANK=-1 is out of range: expected 0 to 2147483647") == 0);
  set_job_env();
  setenv("RANK", "2", 1);
  CHECK(expect_env_error("RANK=2 must be below WORLD_SIZE=2") == 0);
  set_job_env();
  setenv("WORLD_SIZE", "0", 1);
  CHECK(expect_env_error("WORLD_SIZE=0 is out of range: expected 1 to 2147483647") == 0);
  set_job_env();
  setenv("MASTER_PORT", "70000", 1);
  CHECK(expect_env_error("MASTER_PORT=70000 is out of range: expected 1 to 65535") == 0);
  set_job_env();
  setenv("MASTER_PORT", "http", 1);
  CHECK(expect_env_error("MASTER_PORT='http' is not an integer: expected the TCP "
                         "port rank 0 listens on") == 0);
  set_job_env();
  setenv(ATTNRT_COMM_TIMEOUT_ENV, "0", 1);
  CHECK(expect_env_error("ATTN_COMM_TIMEOUT_S='0' is not a positive number of "
                         "seconds") == 0);
  setenv(ATTNRT_COMM_TIMEOUT_ENV, "soon", 1);
  CHECK(expect_env_error("ATTN_COMM_TIMEOUT_S='soon' is not a positive number of "
                         "seconds") == 0);
  set_job_env();
  char addr[300];
  memset(addr, 'a', sizeof addr - 1);
  addr[sizeof addr - 1] = '\0';
  setenv("MASTER_ADDR", addr, 1);
  CHECK(expect_env_error("MASTER_ADDR is 299 bytes long: at most 255 are accepted") == 0);
  return 0;
}

static int test_config_errors(void) {
  attnrt_comm *c = NULL;
  struct attnrt_comm_config cfg = config(0, 2, 1.0);
  CHECK(attnrt_comm_init(&cfg, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(attnrt_comm_init(NULL, &c) == ATTNRT_ERR_INVALID_ARGUMENT);
  cfg.rank = 2;
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_ERR_INVALID_ARGUMENT && c == NULL);
  CHECK(contains(attnrt_last_error(NULL), "rank 2 must be below the world size 2"));
  cfg = config(0, 2, 0);
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "timeout 0 s must be positive"));
  cfg = config(0, 2, 1);
  cfg.master_port = 0;
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "master port 0 is out of range"));
  return 0;
}

//===-- Loading NCCL, init --===//

static int test_missing_nccl(void) {
  const char *path = "/nonexistent/attnrt-test/libnccl.so.2";
  setenv(ATTNRT_NCCL_LIBRARY_ENV, path, 1);
  struct attnrt_comm_config cfg = config(0, 1, 1.0);
  attnrt_comm *c = NULL;
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_ERR_NCCL && c == NULL);
  CHECK(contains(attnrt_last_error(NULL), "cannot load NCCL library"));
  CHECK(contains(attnrt_last_error(NULL), path));
  setenv(ATTNRT_NCCL_LIBRARY_ENV, "libm.so.6", 1);
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_ERR_NCCL && c == NULL);
  CHECK(contains(attnrt_last_error(NULL),
                 "NCCL library 'libm.so.6' has no entry point ncclGetVersion"));
  return 0;
}

static int test_local_rank_without_device(void) {
  setenv("MOCK_CUDA_DEVICES", "2", 1);
  struct attnrt_comm_config cfg = config(0, 1, 1.0);
  cfg.local_rank = 2;
  attnrt_comm *c = NULL;
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_ERR_NOT_FOUND && c == NULL);
  CHECK(strcmp(attnrt_last_error(NULL),
               "LOCAL_RANK=2 (rank 0): device ordinal 2 not found: 2 devices "
               "are visible") == 0);
  return 0;
}

static int test_single_rank(void) {
  struct attnrt_comm_config cfg = config(0, 1, 5.0);
  attnrt_comm *c = NULL;
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_OK && c != NULL);
  CHECK(attnrt_comm_rank(c) == 0 && attnrt_comm_size(c) == 1);
  CHECK(attnrt_comm_nccl_version(c) == 22809);
  CHECK(attnrt_comm_runtime(c) != NULL);
  const struct mock_nccl_state *s = mock_nccl_state();
  CHECK(s->init_calls == 1 && s->init_blocking == 0);
  CHECK(s->init_config_version == 22800 && s->init_config_size == 80);
  CHECK(s->init_nranks == 1 && s->init_rank == 0);
  CHECK(strncmp(s->init_id, "mock-nccl-id ", 13) == 0);
  CHECK(s->live_comms == 1);
  CHECK(attnrt_comm_poll(c, 0) == ATTNRT_OK);
  CHECK(attnrt_comm_wait(c, NULL) == ATTNRT_OK);
  attnrt_comm_destroy(c);
  CHECK(s->finalize_calls == 1 && s->destroy_calls == 1 && s->abort_calls == 0);
  attnrt_comm_destroy(NULL);
  return 0;
}

static int test_init_from_env(void) {
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "1", 1);
  attnrt_comm *c = NULL;
  CHECK(attnrt_comm_init_from_env(&c) == ATTNRT_OK && c != NULL);
  CHECK(attnrt_comm_size(c) == 1);
  attnrt_comm_destroy(c);
  CHECK(attnrt_comm_init_from_env(NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  return 0;
}

static int test_older_nccl(void) {
  const struct mock_nccl_state *s = mock_nccl_state();
  struct attnrt_comm_config cfg = config(0, 1, 5.0);
  attnrt_comm *c = NULL;
  // 2.14 to 2.27: the config prefix NCCL 2.14 defined.
  setenv("MOCK_NCCL_VERSION", "22600", 1);
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_OK);
  CHECK(s->init_blocking == 0 && s->init_config_version == 21400 &&
        s->init_config_size == 40);
  attnrt_comm_destroy(c);
  // Before 2.14: blocking ncclCommInitRank.
  setenv("MOCK_NCCL_VERSION", "21300", 1);
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_OK);
  CHECK(s->init_blocking == -1);
  attnrt_comm_destroy(c);
  setenv("MOCK_NCCL_VERSION", "21100", 1);
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_ERR_NCCL && c == NULL);
  CHECK(contains(attnrt_last_error(NULL), "is version 21100: attnrt needs 2.12 or later"));
  return 0;
}

static int test_init_failure(void) {
  setenv("MOCK_NCCL_FAIL", "ncclCommInitRankConfig", 1);
  setenv("MOCK_NCCL_FAIL_CODE", "2", 1);
  struct attnrt_comm_config cfg = config(0, 1, 5.0);
  attnrt_comm *c = NULL;
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_ERR_NCCL && c == NULL);
  CHECK(strcmp(attnrt_last_error(NULL),
               "ncclCommInitRankConfig(rank 0 of 1) failed: unhandled system "
               "error (run with NCCL_DEBUG=INFO for details) (ncclResult 2): "
               "mock: last error") == 0);
  setenv("MOCK_NCCL_FAIL", "ncclGetUniqueId", 1);
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_ERR_NCCL && c == NULL);
  CHECK(contains(attnrt_last_error(NULL), "ncclGetUniqueId failed: unhandled system error"));
  return 0;
}

static int test_init_in_progress(void) {
  setenv("MOCK_NCCL_PENDING", "3", 1);
  struct attnrt_comm_config cfg = config(0, 1, 5.0);
  attnrt_comm *c = NULL;
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_OK && c != NULL);
  CHECK(mock_nccl_state()->async_polls == 4);
  attnrt_comm_destroy(c); // finalize is in progress three polls too
  CHECK(mock_nccl_state()->destroy_calls == 1 && mock_nccl_state()->abort_calls == 0);
  return 0;
}

static int test_init_async_error(void) {
  setenv("MOCK_NCCL_PENDING", "2", 1);
  setenv("MOCK_NCCL_ASYNC", "6", 1);
  struct attnrt_comm_config cfg = config(0, 1, 5.0);
  attnrt_comm *c = NULL;
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_ERR_NCCL && c == NULL);
  CHECK(contains(attnrt_last_error(NULL),
                 "ncclCommInitRankConfig: NCCL reported an asynchronous error; it "
                 "failed: remote process exited or there was a network error"));
  CHECK(contains(attnrt_last_error(NULL), "the communicator was aborted"));
  CHECK(mock_nccl_state()->abort_calls == 1);
  return 0;
}

static int test_init_timeout(void) {
  setenv("MOCK_NCCL_ASYNC", "7", 1); // in progress forever: a peer never came
  struct attnrt_comm_config cfg = config(0, 1, 0.2);
  attnrt_comm *c = NULL;
  double start = now_s();
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_ERR_TIMEOUT && c == NULL);
  double took = now_s() - start;
  CHECK(took >= 0.2 && took < 5.0);
  CHECK(contains(attnrt_last_error(NULL),
                 "ncclCommInitRankConfig: still in progress after 0.2 s "
                 "(ATTN_COMM_TIMEOUT_S)"));
  CHECK(mock_nccl_state()->abort_calls == 1);
  return 0;
}

//===-- Polling and waiting --===//

static int test_async_error_during_poll(void) {
  struct attnrt_comm_config cfg = config(0, 1, 5.0);
  attnrt_comm *c = NULL;
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_OK);
  attnrt_runtime *rt = attnrt_comm_runtime(c);
  setenv("MOCK_NCCL_ASYNC", "6", 1);
  CHECK(attnrt_comm_poll(c, 1.0) == ATTNRT_ERR_NCCL);
  CHECK(contains(attnrt_last_error(rt),
                 "attnrt_comm_poll: NCCL reported an asynchronous error; it failed: "
                 "remote process exited or there was a network error (ncclResult 6)"));
  CHECK(mock_nccl_state()->abort_calls == 1);
  // Aborted: every later call says so, and destroy does not finalize.
  CHECK(attnrt_comm_poll(c, 0) == ATTNRT_ERR_NCCL);
  CHECK(contains(attnrt_last_error(rt), "the communicator was aborted"));
  attnrt_devptr p = 0x1000;
  CHECK(attnrt_comm_all_reduce(c, p, p, 4, ATTNRT_COMM_F32, ATTNRT_COMM_SUM, NULL) ==
        ATTNRT_ERR_NCCL);
  attnrt_comm_destroy(c);
  CHECK(mock_nccl_state()->finalize_calls == 0 && mock_nccl_state()->abort_calls == 1);
  return 0;
}

static int test_poll_timeout(void) {
  struct attnrt_comm_config cfg = config(0, 1, 5.0);
  attnrt_comm *c = NULL;
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_OK);
  setenv("MOCK_NCCL_ASYNC", "7", 1);
  double start = now_s();
  CHECK(attnrt_comm_poll(c, 0.1) == ATTNRT_ERR_TIMEOUT);
  CHECK(now_s() - start < 5.0);
  CHECK(contains(attnrt_last_error(attnrt_comm_runtime(c)),
                 "attnrt_comm_poll: still in progress after 0.1 s"));
  CHECK(mock_nccl_state()->abort_calls == 1);
  attnrt_comm_destroy(c);
  CHECK(attnrt_comm_poll(NULL, 0) == ATTNRT_ERR_INVALID_ARGUMENT);
  return 0;
}

static int test_wait(void) {
  struct attnrt_comm_config cfg = config(0, 1, 0.2);
  attnrt_comm *c = NULL;
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_OK);
  attnrt_runtime *rt = attnrt_comm_runtime(c);
  attnrt_stream *s = NULL;
  CHECK(attnrt_stream_create(rt, &s) == ATTNRT_OK);
  CHECK(attnrt_comm_wait(c, s) == ATTNRT_OK);
  // A stream that never drains (a collective waiting on a dead peer).
  setenv("MOCK_CUDA_STREAM_BUSY", "1", 1);
  double start = now_s();
  CHECK(attnrt_comm_wait(c, s) == ATTNRT_ERR_TIMEOUT);
  CHECK(now_s() - start < 5.0);
  CHECK(contains(attnrt_last_error(rt), "attnrt_comm_wait: the stream is still busy after 0.2 s"));
  CHECK(mock_nccl_state()->abort_calls == 1);
  unsetenv("MOCK_CUDA_STREAM_BUSY");
  attnrt_stream_destroy(s);
  attnrt_comm_destroy(c);

  // An async error while the stream is busy ends the wait at once.
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_OK);
  setenv("MOCK_CUDA_STREAM_BUSY", "1", 1);
  setenv("MOCK_NCCL_ASYNC", "6", 1);
  CHECK(attnrt_comm_wait(c, NULL) == ATTNRT_ERR_NCCL);
  CHECK(contains(attnrt_last_error(attnrt_comm_runtime(c)), "attnrt_comm_wait: NCCL reported"));
  attnrt_comm_destroy(c);
  return 0;
}

static int test_destroy_finalize_failure(void) {
  struct attnrt_comm_config cfg = config(0, 1, 5.0);
  attnrt_comm *c = NULL;
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_OK);
  setenv("MOCK_NCCL_FAIL", "ncclCommFinalize", 1);
  attnrt_comm_destroy(c); // falls back to an abort; the after hook checks leaks
  CHECK(mock_nccl_state()->abort_calls == 1 && mock_nccl_state()->destroy_calls == 0);
  // A failing ncclCommDestroy is not followed by an abort of the same handle.
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_OK);
  setenv("MOCK_NCCL_FAIL", "ncclCommDestroy", 1);
  attnrt_comm_destroy(c);
  CHECK(mock_nccl_state()->abort_calls == 1 && mock_nccl_state()->destroy_calls == 0);
  CHECK(mock_nccl_state()->finalize_calls == 1);
  return 0;
}

//===-- Rendezvous --===//

static int test_rendezvous_rank_never_connects(void) {
  struct attnrt_comm_config cfg = config(0, 3, 0.3);
  attnrt_comm *c = NULL;
  double start = now_s();
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_ERR_TIMEOUT && c == NULL);
  CHECK(now_s() - start < 5.0);
  CHECK(contains(attnrt_last_error(NULL),
                 "rendezvous: 2 of 2 ranks did not connect to rank 0"));
  CHECK(contains(attnrt_last_error(NULL), "within 0.3 s (ATTN_COMM_TIMEOUT_S); missing ranks: 1 2"));
  CHECK(mock_nccl_state()->init_calls == 0);
  return 0;
}

static int test_rendezvous_no_rank0(void) {
  struct attnrt_comm_config cfg = config(1, 2, 0.3);
  attnrt_comm *c = NULL;
  double start = now_s();
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_ERR_TIMEOUT && c == NULL);
  CHECK(now_s() - start < 5.0);
  CHECK(contains(attnrt_last_error(NULL),
                 "rendezvous: rank 1 could not get the NCCL id from rank 0 at 127.0.0.1:"));
  CHECK(contains(attnrt_last_error(NULL), "last error: connect: Connection refused"));
  return 0;
}

/// Connects to 127.0.0.1:port, retrying for up to 5 s, sends 16 bytes that
/// are not a hello and closes: a stray client rank 0 must ignore.
static void send_junk(int port) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
      if (write(fd, "GET / HTTP/1.0\r\n", 16) != 16)
        fprintf(stderr, "send_junk: short write\n");
      close(fd);
      return;
    }
    close(fd);
    nanosleep(&(struct timespec){0, 50000000}, NULL);
  }
}

/// Runs rank 1 of cfg in a child process that writes the id NCCL received
/// (128 bytes) to fd, then exits with 0 on success, 1 on failure. With junk
/// it first plays a stray client (send_junk).
static pid_t spawn_rank1(struct attnrt_comm_config cfg, int fd, int world_size,
                         bool junk) {
  pid_t pid = fork();
  if (pid != 0)
    return pid;
  if (junk)
    send_junk(cfg.master_port);
  cfg.rank = 1;
  cfg.world_size = world_size;
  attnrt_comm *c = NULL;
  enum attnrt_status st = attnrt_comm_init(&cfg, &c);
  char msg[128 + 256];
  memset(msg, 0, sizeof msg);
  memcpy(msg, mock_nccl_state()->init_id, 128);
  snprintf(msg + 128, 256, "%s", st == ATTNRT_OK ? "" : attnrt_last_error(NULL));
  if (write(fd, msg, sizeof msg) != (ssize_t)sizeof msg)
    st = ATTNRT_ERR_NCCL;
  attnrt_comm_destroy(c);
  _exit(st == ATTNRT_OK ? 0 : 1);
}

/// Two ranks meet: rank 1 (a child) and rank 0 (this process). With late,
/// rank 0 starts 0.3 s after rank 1, whose first connections are refused;
/// with junk a stray client connects first.
static int rendezvous_two_processes(bool late, bool junk) {
  struct attnrt_comm_config cfg = config(0, 2, 10.0);
  int fds[2];
  CHECK(pipe(fds) == 0);
  fflush(NULL);
  pid_t pid = spawn_rank1(cfg, fds[1], 2, junk);
  CHECK(pid > 0);
  close(fds[1]);
  if (late)
    nanosleep(&(struct timespec){0, 300000000}, NULL);
  attnrt_comm *c = NULL;
  enum attnrt_status st = attnrt_comm_init(&cfg, &c);
  char msg[128 + 256];
  ssize_t got = read(fds[0], msg, sizeof msg);
  close(fds[0]);
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(st == ATTNRT_OK && c != NULL);
  CHECK(got == (ssize_t)sizeof msg);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fprintf(stderr, "rank 1: %s\n", msg + 128);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // Both ranks gave NCCL the id rank 0 made.
  const struct mock_nccl_state *s = mock_nccl_state();
  CHECK(s->init_nranks == 2 && s->init_rank == 0);
  CHECK(strncmp(s->init_id, "mock-nccl-id ", 13) == 0);
  CHECK(memcmp(s->init_id, msg, 128) == 0);
  attnrt_comm_destroy(c);
  return 0;
}

static int test_rendezvous_two_processes(void) {
  return rendezvous_two_processes(false, false);
}

static int test_rendezvous_rank0_late(void) {
  return rendezvous_two_processes(true, false);
}

static int test_rendezvous_stray_client(void) {
  return rendezvous_two_processes(false, true);
}

static int test_rendezvous_world_size_mismatch(void) {
  struct attnrt_comm_config cfg = config(0, 2, 10.0);
  int fds[2];
  CHECK(pipe(fds) == 0);
  fflush(NULL);
  pid_t pid = spawn_rank1(cfg, fds[1], 3, false);
  CHECK(pid > 0);
  close(fds[1]);
  attnrt_comm *c = NULL;
  enum attnrt_status st = attnrt_comm_init(&cfg, &c);
  char msg[128 + 256];
  ssize_t got = read(fds[0], msg, sizeof msg);
  close(fds[0]);
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(st == ATTNRT_ERR_INVALID_ARGUMENT && c == NULL);
  CHECK(contains(attnrt_last_error(NULL), "rendezvous: rank 1 says WORLD_SIZE=3, rank 0 has 2"));
  CHECK(got == (ssize_t)sizeof msg && WIFEXITED(status) && WEXITSTATUS(status) == 1);
  CHECK(contains(msg + 128, "refused rank 1: WORLD_SIZE differs"));
  return 0;
}

//===-- Buffers and collectives --===//

static int test_buffers(void) {
  struct attnrt_comm_config cfg = config(0, 1, 5.0);
  attnrt_comm *c = NULL;
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_OK);
  attnrt_runtime *rt = attnrt_comm_runtime(c);
  attnrt_comm_buffer *b = NULL;
  CHECK(attnrt_comm_buffer_alloc(c, 1000, &b) == ATTNRT_OK && b != NULL);
  CHECK(attnrt_comm_buffer_ptr(b) != 0 && attnrt_comm_buffer_ptr(b) % 4096 == 0);
  CHECK(attnrt_comm_buffer_window(b) != NULL);
  CHECK(mock_nccl_state()->live_windows == 1 && mock_nccl_state()->live_memory == 1);
  CHECK(attnrt_comm_buffer_free(b) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_free(NULL) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_ptr(NULL) == 0 && attnrt_comm_buffer_window(NULL) == NULL);

  // Registration that completes asynchronously.
  setenv("MOCK_NCCL_PENDING", "2", 1);
  CHECK(attnrt_comm_buffer_alloc(c, 64, &b) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_free(b) == ATTNRT_OK);
  unsetenv("MOCK_NCCL_PENDING");

  CHECK(attnrt_comm_buffer_alloc(c, 0, &b) == ATTNRT_ERR_INVALID_ARGUMENT && b == NULL);
  CHECK(contains(attnrt_last_error(rt), "attnrt_comm_buffer_alloc: size is 0"));
  CHECK(attnrt_comm_buffer_alloc(NULL, 8, &b) == ATTNRT_ERR_INVALID_ARGUMENT);
  setenv("MOCK_NCCL_FAIL", "ncclCommWindowRegister", 1);
  setenv("MOCK_NCCL_FAIL_CODE", "5", 1);
  CHECK(attnrt_comm_buffer_alloc(c, 64, &b) == ATTNRT_ERR_NCCL && b == NULL);
  CHECK(contains(attnrt_last_error(rt), "ncclCommWindowRegister failed: invalid usage"));
  setenv("MOCK_NCCL_FAIL", "ncclMemAlloc", 1);
  setenv("MOCK_NCCL_FAIL_CODE", "1", 1);
  CHECK(attnrt_comm_buffer_alloc(c, 64, &b) == ATTNRT_ERR_NCCL && b == NULL);
  CHECK(contains(attnrt_last_error(rt), "ncclMemAlloc(64 bytes) failed: unhandled cuda error"));
  unsetenv("MOCK_NCCL_FAIL");
  attnrt_comm_destroy(c);

  // A library without windows.
  setenv("MOCK_NCCL_VERSION", "22600", 1);
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_OK);
  CHECK(attnrt_comm_buffer_alloc(c, 64, &b) == ATTNRT_ERR_NCCL);
  CHECK(contains(attnrt_last_error(attnrt_comm_runtime(c)),
                 "NCCL 22600 has no symmetric windows (ncclCommWindowRegister needs NCCL 2.27)"));
  attnrt_comm_destroy(c);
  return 0;
}

static int test_collectives(void) {
  struct attnrt_comm_config cfg = config(0, 1, 5.0);
  attnrt_comm *c = NULL;
  CHECK(attnrt_comm_init(&cfg, &c) == ATTNRT_OK);
  attnrt_runtime *rt = attnrt_comm_runtime(c);
  float in[64], out[64];
  for (int i = 0; i < 64; ++i)
    in[i] = (float)i * 0.5f;
  attnrt_devptr send = 0, recv = 0;
  CHECK(attnrt_mem_alloc(rt, sizeof in, &send) == ATTNRT_OK);
  CHECK(attnrt_mem_alloc(rt, sizeof out, &recv) == ATTNRT_OK);
  CHECK(attnrt_memcpy_htod(rt, send, in, sizeof in, NULL) == ATTNRT_OK);
  attnrt_stream *s = NULL;
  CHECK(attnrt_stream_create(rt, &s) == ATTNRT_OK);
  const struct mock_nccl_state *ms = mock_nccl_state();

  CHECK(attnrt_comm_all_reduce(c, send, recv, 64, ATTNRT_COMM_F32, ATTNRT_COMM_SUM, s) ==
        ATTNRT_OK);
  CHECK(strcmp(ms->last.name, "ncclAllReduce") == 0 && ms->last.count == 64);
  CHECK(ms->last.dtype == 7 && ms->last.op == 0 && ms->last.stream == mock_cuda_state()->last_stream);
  CHECK(ms->last.send == (const void *)(uintptr_t)send);
  CHECK(attnrt_comm_wait(c, s) == ATTNRT_OK);
  CHECK(attnrt_memcpy_dtoh(rt, out, recv, sizeof out, NULL) == ATTNRT_OK);
  CHECK(memcmp(in, out, sizeof in) == 0);

  CHECK(attnrt_comm_all_gather(c, send, recv, 32, ATTNRT_COMM_BF16, NULL) == ATTNRT_OK);
  CHECK(strcmp(ms->last.name, "ncclAllGather") == 0 && ms->last.dtype == 9 &&
        ms->last.op == -1 && ms->last.stream == NULL);
  CHECK(attnrt_comm_reduce_scatter(c, send, recv, 16, ATTNRT_COMM_F16, ATTNRT_COMM_MAX, s) ==
        ATTNRT_OK);
  CHECK(strcmp(ms->last.name, "ncclReduceScatter") == 0 && ms->last.dtype == 6 &&
        ms->last.op == 2 && ms->last.count == 16);
  CHECK(ms->collectives == 3);

  CHECK(attnrt_comm_all_reduce(NULL, send, recv, 1, ATTNRT_COMM_F32, ATTNRT_COMM_SUM, s) ==
        ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(attnrt_comm_all_reduce(c, 0, recv, 1, ATTNRT_COMM_F32, ATTNRT_COMM_SUM, s) ==
        ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_comm_all_reduce: send buffer is NULL"));
  CHECK(attnrt_comm_all_gather(c, send, recv, 0, ATTNRT_COMM_F32, s) ==
        ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "attnrt_comm_all_gather: count is 0"));
  CHECK(attnrt_comm_reduce_scatter(c, send, recv, 1, (enum attnrt_comm_dtype)42,
                                   ATTNRT_COMM_SUM, s) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "unknown element type 42"));
  CHECK(attnrt_comm_all_reduce(c, send, recv, 1, ATTNRT_COMM_F32, (enum attnrt_comm_op)9, s) ==
        ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(rt), "unknown reduction 9"));
  CHECK(ms->collectives == 3);

  setenv("MOCK_NCCL_FAIL", "ncclAllReduce", 1);
  setenv("MOCK_NCCL_FAIL_CODE", "4", 1);
  CHECK(attnrt_comm_all_reduce(c, send, recv, 64, ATTNRT_COMM_F32, ATTNRT_COMM_SUM, s) ==
        ATTNRT_ERR_NCCL);
  CHECK(contains(attnrt_last_error(rt), "ncclAllReduce failed: invalid argument"));
  unsetenv("MOCK_NCCL_FAIL");
  CHECK(mock_cuda_state()->ctx_depth == 0);

  attnrt_stream_destroy(s);
  CHECK(attnrt_mem_free(rt, send) == ATTNRT_OK);
  CHECK(attnrt_mem_free(rt, recv) == ATTNRT_OK);
  attnrt_comm_destroy(c);
  return 0;
}

static int test_null_handles(void) {
  CHECK(attnrt_comm_rank(NULL) == -1 && attnrt_comm_size(NULL) == -1);
  CHECK(attnrt_comm_runtime(NULL) == NULL && attnrt_comm_nccl_version(NULL) == -1);
  CHECK(attnrt_comm_wait(NULL, NULL) == ATTNRT_ERR_INVALID_ARGUMENT);
  CHECK(contains(attnrt_last_error(NULL), "attnrt_comm_wait: communicator is NULL"));
  attnrt_comm_abort(NULL);
  CHECK(strcmp(attnrt_status_string(ATTNRT_ERR_TIMEOUT), "timed out") == 0);
  return 0;
}

int main(void) {
  static const struct test_case tests[] = {
      TEST(test_env_complete),
      TEST(test_env_errors),
      TEST(test_config_errors),
      TEST(test_missing_nccl),
      TEST(test_local_rank_without_device),
      TEST(test_single_rank),
      TEST(test_init_from_env),
      TEST(test_older_nccl),
      TEST(test_init_failure),
      TEST(test_init_in_progress),
      TEST(test_init_async_error),
      TEST(test_init_timeout),
      TEST(test_async_error_during_poll),
      TEST(test_poll_timeout),
      TEST(test_wait),
      TEST(test_destroy_finalize_failure),
      TEST(test_rendezvous_rank_never_connects),
      TEST(test_rendezvous_no_rank0),
      TEST(test_rendezvous_two_processes),
      TEST(test_rendezvous_rank0_late),
      TEST(test_rendezvous_stray_client),
      TEST(test_rendezvous_world_size_mismatch),
      TEST(test_buffers),
      TEST(test_collectives),
      TEST(test_null_handles),
  };
  mock_nccl_fixture_init();
  return run_tests(tests, sizeof tests / sizeof tests[0],
                   mock_nccl_fixture_before, mock_nccl_fixture_after);
}
