// gpu_ranks.h - what the multi-GPU tests (comm_gpu_test.c, fused_gpu_test.c) share: the torchrun environment for one process per rank, forking and reaping the ranks, and a TRY that reports a failed runtime call with its message.

#ifndef ATTNRT_GPU_RANKS_H
#define ATTNRT_GPU_RANKS_H

#include "attnrt.h"
#include "free_port.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/// Reports a failed call of rank `rank` (communicator `c`, may be NULL) and
/// returns 1 from the enclosing function.
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

/// Sets MASTER_ADDR, MASTER_PORT (a free port from first_port on, stored in
/// port), WORLD_SIZE and, unless set, the communicator timeout (seconds).
static inline void gpu_ranks_env(int size, int first_port, const char *timeout,
                                 int *port) {
  char text[16];
  *port = free_port(first_port);
  snprintf(text, sizeof text, "%d", *port);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", text, 1);
  snprintf(text, sizeof text, "%d", size);
  setenv("WORLD_SIZE", text, 1);
  if (!getenv(ATTNRT_COMM_TIMEOUT_ENV))
    setenv(ATTNRT_COMM_TIMEOUT_ENV, timeout, 1);
}

/// Forks one process per rank (RANK and LOCAL_RANK set), each exiting with
/// fn(rank, user); waits for all, prints "N passed, M failed" and returns 1
/// when any rank failed.
static inline int gpu_ranks_run(int size, int (*fn)(int rank, void *user),
                                void *user) {
  fflush(stdout);
  pid_t pids[64];
  for (int r = 0; r < size && r < 64; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      char text[16];
      snprintf(text, sizeof text, "%d", r);
      setenv("RANK", text, 1);
      setenv("LOCAL_RANK", text, 1);
      _exit(fn(r, user));
    }
  }
  int passed = 0, failed = 0;
  for (int r = 0; r < size && r < 64; ++r) {
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

#endif // ATTNRT_GPU_RANKS_H
