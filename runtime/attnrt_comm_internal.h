// attnrt_comm_internal.h - private declarations shared by attnrt_comm.c and attnrt_rendezvous.c; never included from outside runtime/.

#ifndef ATTNRT_COMM_INTERNAL_H
#define ATTNRT_COMM_INTERNAL_H

#include "attnrt_internal.h"

#include <errno.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

//===-- The ncclUniqueId --===//

// The rest of the NCCL ABI attnrt uses is declared in attnrt_comm.c, which
// checks this one against nccl.h as well when the build has it.
#define NCCL_ID_BYTES 128
typedef struct {
  char internal[NCCL_ID_BYTES];
} nccl_unique_id;

//===-- Time --===//

static inline double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void sleep_s(double s) {
  if (s <= 0)
    return;
  struct timespec ts;
  ts.tv_sec = (time_t)s;
  ts.tv_nsec = (long)((s - (double)ts.tv_sec) * 1e9);
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

//===-- Configuration and rendezvous (attnrt_rendezvous.c) --===//

/// Checks a configuration; caller names the API function. Errors go to the
/// thread slot.
enum attnrt_status attnrt_comm_check_config(const struct attnrt_comm_config *cfg,
                                            const char *caller);

/// Rank 0: serves id to the other cfg->world_size - 1 ranks before the
/// deadline (a now_s() time). Errors go to rt (the thread slot when NULL).
enum attnrt_status attnrt_comm_serve_id(attnrt_runtime *rt,
                                        const struct attnrt_comm_config *cfg,
                                        const nccl_unique_id *id,
                                        double deadline);

/// Ranks other than 0: fetches the id from rank 0, retrying the connection
/// until the deadline (a now_s() time). Errors go to rt.
enum attnrt_status attnrt_comm_fetch_id(attnrt_runtime *rt,
                                        const struct attnrt_comm_config *cfg,
                                        nccl_unique_id *id, double deadline);

#ifdef __cplusplus
}
#endif

#endif // ATTNRT_COMM_INTERNAL_H
