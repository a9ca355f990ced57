// comm_bench.h - what comm_bench's files share (bench/comm_bench.c: options, steps, variants, timing and main; comm_bench_check.c: the float64 checks; comm_bench_report.c: the markdown table and JSON of rank 0).

#ifndef ATTN_BENCH_COMM_BENCH_H
#define ATTN_BENCH_COMM_BENCH_H

#include "attnrt.h"
#include "bench/bench_common.h"
#include "bench/comm_fused.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { TENSOR_A = 1, TENSOR_B = 2, TENSOR_A_SHARD = 3, TENSOR_R = 4 };

#define MAX_SHAPES 8
#define MAX_WORLD 16
#define DEFAULT_SHAPES "8192x8192x8192,4096x8192x4096"
#define NPATTERNS 3

extern const char *const pattern_names[NPATTERNS];

enum variant { V_GEMM, V_COMM, V_SEQ, V_TWO, V_SYM, V_FUSED, NVARIANTS };
extern const char *const variant_names[NVARIANTS];

struct options {
  int64_t shape[MAX_SHAPES][3];
  int nshapes;
  bool pattern[NPATTERNS];
  long iters, warmup, check_rows, seed;
  long cooldown_ms; // idle GPU time before each variant's warm-up
  long rounds;      // rounds timing the fused variant and the sequential one
                    // in turn
  bool symmetric, fused;
  const char *json_path;
};

#define MAX_SAMPLES 256
#define MAX_ROUNDS 8

struct variant_result {
  const char *status; // "ok", "check failed", "not built", "error", "skipped"
  char error[400];
  bool checked;
  double rel_l2, max_rel; // worst over ranks
  bool timed;
  double ms;              // max over ranks of each rank's median
  double ms_min;          // smallest iteration of any rank
  double ms_aligned;      // median over iterations of the max over ranks
  double ms_rank[MAX_WORLD];
  // The max over ranks of each timed iteration, in order (the first
  // MAX_SAMPLES): the JSON's ms_iterations, to see a spread, not just a median.
  int nsamples;
  float samples[MAX_SAMPLES];
  // With rounds in turn (the fused variant and the sequential baseline):
  // each round's ms; ms, ms_aligned and ms_rank are then their means over
  // the rounds, ms_min the least, samples every round's in order.
  int nrounds;
  double round_ms[MAX_ROUNDS];
};

struct pattern_result {
  int64_t m, n, k;
  enum comm_pattern pattern;
  double comm_bytes;
  struct variant_result v[NVARIANTS];
};

/// Device buffers of one shape on this rank (see the patterns above).
struct buffers {
  attnrt_devptr a;       // [M,K]   A (allreduce, reducescatter)
  attnrt_devptr a_sh;    // [M/W,K] this rank's shard of A (allgather)
  attnrt_devptr a_full;  // [M,K]   gathered A
  attnrt_devptr a_full2; // [M,K]   gathered A of the two-stream collective
  attnrt_devptr b;       // [K,N]
  attnrt_devptr c;       // [M,N]
  attnrt_devptr c2;      // [M,N]   the two-stream GEMM's output
  attnrt_devptr x;       // [M,N]   random R: the two-stream collective's input
  attnrt_devptr c_sh;    // [M/W,N]
  attnrt_devptr c_sh2;   // [M/W,N] the two-stream reduce_scatter's output
};

struct bench {
  const struct options *o;
  attnrt_comm *comm;
  attnrt_runtime *rt;
  int rank, world;
  struct bench_vendor vendor;
  struct bench_stream main, side;
  void *ev_fork, *ev_join;
  attnrt_devptr barrier;  // one float
  attnrt_devptr agree;    // 8 doubles
  attnrt_devptr times;    // (world + 1) * iters floats
  // The shape.
  int64_t m, n, k;
  struct buffers d;
  uint16_t *host_a, *host_a_sh, *host_b, *host_r;
  int nrows;
  int64_t *rows_full;  // sampled rows of [0, M)
  int64_t *rows_shard; // sampled rows of [0, M/W)
  enum comm_pattern pattern;
  // check_pattern's float64 rows, computed once per pattern (the sequential,
  // symmetric and fused outputs share them).
  double *ref;
  bool ref_valid;
  // The variant run through struct variant_ops.
  const struct variant_ops *ops;
  void *state;
  struct comm_fused_buffers sym;
  // Results and their metadata (rank 0 writes them).
  struct pattern_result results[MAX_SHAPES * NPATTERNS];
  int nresults;
  char gpu[128], date[64];
  int driver, nccl;
};

//===-- comm_bench.c --===//

/// Prints the message, writes what rank 0 has, aborts the communicator (the
/// peers' next wait fails instead of hanging) and exits 1.
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/// fatal() with the runtime's message when st is not ATTNRT_OK.
void check_rt(struct bench *b, enum attnrt_status st, const char *what);
/// Every rank's vals[0..n) replaced by the maximum over ranks.
void agree_max(struct bench *b, double *vals, int n);
/// The A the pattern's GEMM reads on this rank.
attnrt_devptr gemm_a(struct bench *b);

//===-- comm_bench_check.c --===//

/// Fills bytes at p with NaN (0xff bytes), so an output never written fails.
void poison(struct bench *b, attnrt_devptr p, size_t bytes);
/// Checks sampled rows of out, the pattern's result on this rank, against
/// the float64 reference (computed once per pattern and kept in b->ref).
void check_pattern(struct bench *b, attnrt_devptr out, struct bench_check *res);
/// Checks the GEMM alone (b->d.c) and the two-stream collective's output.
void check_local_gemm(struct bench *b, struct bench_check *res);
void check_two_collective(struct bench *b, struct bench_check *res);
/// Agrees on n checks over the ranks (the worst wins) and records them in
/// r; true when all passed.
bool agree_checks(struct bench *b, const struct bench_check *checks, int n,
                  struct variant_result *r);

//===-- comm_bench_report.c --===//

/// Rank 0: the markdown table on stdout; the JSON at o->json_path.
void print_table(struct bench *b);
void write_results(struct bench *b);

#endif // ATTN_BENCH_COMM_BENCH_H
