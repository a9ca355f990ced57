// comm_gpu_test.c - two-GPU check of the communicator: forks one process per rank (torchrun's variables set for each), all-reduces, all-gathers and reduce-scatters random data and compares with a host reference.
//
// Needs a real libcuda, libnccl and ATTN_TEST_RANKS (default 2) GPUs; lit runs
// it only with the gpu2 feature. Prints one line per rank and check, then
// "N passed, M failed" over the ranks.

#include "attnrt.h"
#include "free_port.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define COUNT (1u << 20)

/// Value i of rank r's data: a hash spread over [-1, 1).
static float value(int r, size_t i) {
  uint64_t x = (uint64_t)(r + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)i * 0xbf58476d1ce4e5b9ull;
  x ^= x >> 31;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 29;
  return (float)((double)(x >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

#define TRY(call)                                                              \
  do {                                                                         \
    enum attnrt_status st_ = (call);                                           \
    if (st_ != ATTNRT_OK) {                                                    \
      printf("rank %d: %s failed: %s: %s\n", rank, #call,                     \
             attnrt_status_string(st_),                                        \
             attnrt_last_error(c ? attnrt_comm_runtime(c) : NULL));            \
      fflush(stdout);                                                          \
      return 1;                                                                \
    }                                                                          \
  } while (0)

/// Compares got with want; prints the result for rank and name.
static int report(int rank, const char *name, const float *got,
                  const double *want, size_t n) {
  double max_err = 0;
  for (size_t i = 0; i < n; ++i) {
    double e = fabs((double)got[i] - want[i]);
    if (!(e <= max_err))
      max_err = isnan(e) ? INFINITY : e;
  }
  bool ok = max_err <= 1e-5;
  printf("rank %d: %s n=%zu max_abs_err=%.3g %s\n", rank, name, n, max_err,
         ok ? "PASS" : "FAIL");
  fflush(stdout);
  return ok ? 0 : 1;
}

static int run_rank(int rank, int size) {
  attnrt_comm *c = NULL;
  TRY(attnrt_comm_init_from_env(&c));
  attnrt_runtime *rt = attnrt_comm_runtime(c);
  char name[128] = "";
  attnrt_runtime_device_name(rt, name, sizeof name);
  printf("rank %d of %d: %s, NCCL %d\n", rank, attnrt_comm_size(c), name,
         attnrt_comm_nccl_version(c));
  size_t bytes = COUNT * sizeof(float);
  float *host = malloc(bytes * (size_t)size);
  double *want = malloc(sizeof(double) * COUNT * (size_t)size);
  for (size_t i = 0; i < COUNT; ++i)
    host[i] = value(rank, i);
  int bad = 0;

  // All-reduce of plain cuMemAlloc buffers on a stream.
  attnrt_devptr send = 0, recv = 0;
  TRY(attnrt_mem_alloc(rt, bytes, &send));
  TRY(attnrt_mem_alloc(rt, bytes * (size_t)size, &recv));
  attnrt_stream *s = NULL;
  TRY(attnrt_stream_create(rt, &s));
  TRY(attnrt_memcpy_htod(rt, send, host, bytes, NULL));
  TRY(attnrt_comm_all_reduce(c, send, recv, COUNT, ATTNRT_COMM_F32, ATTNRT_COMM_SUM, s));
  TRY(attnrt_comm_wait(c, s));
  TRY(attnrt_memcpy_dtoh(rt, host, recv, bytes, NULL));
  for (size_t i = 0; i < COUNT; ++i) {
    want[i] = 0;
    for (int r = 0; r < size; ++r)
      want[i] += (double)value(r, i);
  }
  bad |= report(rank, "all_reduce", host, want, COUNT);

  // All-gather: rank r's data at offset r * COUNT.
  for (size_t i = 0; i < COUNT; ++i)
    host[i] = value(rank, i);
  TRY(attnrt_memcpy_htod(rt, send, host, bytes, NULL));
  TRY(attnrt_comm_all_gather(c, send, recv, COUNT, ATTNRT_COMM_F32, s));
  TRY(attnrt_comm_wait(c, s));
  TRY(attnrt_memcpy_dtoh(rt, host, recv, bytes * (size_t)size, NULL));
  for (int r = 0; r < size; ++r)
    for (size_t i = 0; i < COUNT; ++i)
      want[(size_t)r * COUNT + i] = value(r, i);
  bad |= report(rank, "all_gather", host, want, COUNT * (size_t)size);

  // Reduce-scatter of COUNT elements: rank r gets block r of the sum.
  size_t block = COUNT / (size_t)size;
  for (size_t i = 0; i < COUNT; ++i)
    host[i] = value(rank, i);
  TRY(attnrt_memcpy_htod(rt, send, host, bytes, NULL));
  TRY(attnrt_comm_reduce_scatter(c, send, recv, block, ATTNRT_COMM_F32,
                                 ATTNRT_COMM_SUM, s));
  TRY(attnrt_comm_wait(c, s));
  TRY(attnrt_memcpy_dtoh(rt, host, recv, block * sizeof(float), NULL));
  for (size_t i = 0; i < block; ++i) {
    want[i] = 0;
    for (int r = 0; r < size; ++r)
      want[i] += (double)value(r, (size_t)rank * block + i);
  }
  bad |= report(rank, "reduce_scatter", host, want, block);

  // In-place all-reduce on a symmetric window buffer (NCCL 2.27+).
  attnrt_comm_buffer *win = NULL;
  enum attnrt_status st = attnrt_comm_buffer_alloc(c, bytes, &win);
  if (st == ATTNRT_OK) {
    attnrt_devptr p = attnrt_comm_buffer_ptr(win);
    for (size_t i = 0; i < COUNT; ++i)
      host[i] = value(rank, i);
    TRY(attnrt_memcpy_htod(rt, p, host, bytes, NULL));
    TRY(attnrt_comm_all_reduce(c, p, p, COUNT, ATTNRT_COMM_F32, ATTNRT_COMM_SUM, s));
    TRY(attnrt_comm_wait(c, s));
    TRY(attnrt_memcpy_dtoh(rt, host, p, bytes, NULL));
    for (size_t i = 0; i < COUNT; ++i) {
      want[i] = 0;
      for (int r = 0; r < size; ++r)
        want[i] += (double)value(r, i);
    }
    bad |= report(rank, "all_reduce_window", host, want, COUNT);
    TRY(attnrt_comm_buffer_free(win));
  } else {
    printf("rank %d: symmetric window: %s\n", rank,
           attnrt_last_error(attnrt_comm_runtime(c)));
    bad = 1;
  }

  attnrt_stream_destroy(s);
  TRY(attnrt_mem_free(rt, send));
  TRY(attnrt_mem_free(rt, recv));
  attnrt_comm_destroy(c);
  free(host);
  free(want);
  return bad;
}

/// Rank 1 of --dead-peer: takes the NCCL id from rank 0 the way attnrt does
/// (hello: magic, protocol 1, rank, world size, big-endian), then exits
/// without joining NCCL, as a rank that crashes would.
static int dead_peer(int port) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
      uint32_t hello[4] = {htonl(0x4154434eu), htonl(1), htonl(1), htonl(2)};
      unsigned char reply[8 + 128];
      size_t got = 0;
      if (write(fd, hello, sizeof hello) == (ssize_t)sizeof hello)
        for (ssize_t k; got < sizeof reply &&
                        (k = read(fd, reply + got, sizeof reply - got)) > 0;)
          got += (size_t)k;
      close(fd);
      printf("dead peer: took the id (%zu bytes) and exits\n", got);
      fflush(stdout);
      return got == sizeof reply ? 0 : 1;
    }
    close(fd);
    nanosleep(&(struct timespec){0, 50000000}, NULL);
  }
  return 1;
}

/// --dead-peer: rank 0 must give up on ncclCommInitRankConfig within
/// ATTN_COMM_TIMEOUT_S with ATTNRT_ERR_TIMEOUT, not hang.
static int run_dead_peer(int port) {
  setenv("WORLD_SIZE", "2", 1);
  setenv("RANK", "0", 1);
  setenv("LOCAL_RANK", "0", 1);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0)
    _exit(dead_peer(port));
  attnrt_comm *c = NULL;
  enum attnrt_status st = attnrt_comm_init_from_env(&c);
  printf("dead peer: rank 0 got %s: %s\n", attnrt_status_string(st),
         attnrt_last_error(NULL));
  int status = 0;
  waitpid(pid, &status, 0);
  attnrt_comm_destroy(c);
  bool ok = st == ATTNRT_ERR_TIMEOUT || st == ATTNRT_ERR_NCCL;
  printf("dead_peer %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *n = getenv("ATTN_TEST_RANKS");
  int size = n && *n ? atoi(n) : 2;
  if (size < 1 || size > 64) {
    printf("bad ATTN_TEST_RANKS\n");
    return 1;
  }
  char port[16], text[16];
  snprintf(port, sizeof port, "%d", free_port(29511));
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", port, 1);
  snprintf(text, sizeof text, "%d", size);
  setenv("WORLD_SIZE", text, 1);
  if (!getenv(ATTNRT_COMM_TIMEOUT_ENV))
    setenv(ATTNRT_COMM_TIMEOUT_ENV, "120", 1);
  if (argc > 1 && strcmp(argv[1], "--dead-peer") == 0)
    return run_dead_peer(atoi(port));
  fflush(stdout);
  pid_t pids[64];
  for (int r = 0; r < size; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      snprintf(text, sizeof text, "%d", r);
      setenv("RANK", text, 1);
      setenv("LOCAL_RANK", text, 1);
      _exit(run_rank(r, size));
    }
  }
  int passed = 0, failed = 0;
  for (int r = 0; r < size; ++r) {
    int status = 0;
    if (pids[r] > 0 && waitpid(pids[r], &status, 0) == pids[r] &&
        WIFEXITED(status) && WEXITSTATUS(status) == 0)
      ++passed;
    else
      ++failed;
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
