// bench_common.h - what gemm_bench and comm_bench share: cuBLAS and the CUDA runtime through dlopen, seeded bf16 inputs any rank can rebuild, float64 checks of sampled rows, CUDA-event timing.
//
// Internal to bench/: the benchmarks are programs, not a library. They use
// the public attnrt API for devices, memory, events and communicators; the
// CUDA runtime (the libcudart cuBLAS brings) is used only for what attnrt
// does not offer: a raw CUstream to hand to cuBLAS and cross-stream waits.

#ifndef ATTN_BENCH_COMMON_H
#define ATTN_BENCH_COMMON_H

#include "attnrt.h"
#include "lib/Reference/comm_reference.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//===-- Tolerances --===//

// A bf16 output is rounded once (relative error up to 2^-9, RMS about 1.1e-3
// for values spread evenly); the f32 accumulation over K <= 8192 adds less
// than 1e-5; a reducing collective rounds once more (RMS about 2e-3 relative
// to the sum). A wrong tile, a transposed operand or stale memory gives
// errors of order 1. So a result passes when
//   ||got - ref||_2 / ||ref||_2            <= BENCH_TOL_REL_L2  and
//   max |got - ref| / rms(ref)             <= BENCH_TOL_MAX_REL and
//   every sampled element is finite (outputs are poisoned with NaN first).
#define BENCH_TOL_REL_L2 1e-2
#define BENCH_TOL_MAX_REL 5e-2

//===-- Vendor libraries (dlopen) --===//

/// Environment variable naming the cuBLAS library to load first.
#define BENCH_CUBLAS_ENV "ATTN_CUBLAS_LIBRARY"

/// cuBLAS, the CUDA runtime under it, and one cuBLAS handle on one device.
struct bench_vendor {
  void *cublas_lib;
  void *cudart_lib;       ///< NULL when cudart came through cublas_lib
  void *handle;           ///< cublasHandle_t
  attnrt_devptr workspace; ///< cuBLAS workspace (attnrt_mem_alloc)
  attnrt_runtime *rt;     ///< borrowed: owns workspace
  void *stream;           ///< the stream the handle is set to
  char cublas_path[256];
  int cublas_version;     ///< cublasGetVersion: 130100 for 13.1.0
  int cudart_version;     ///< cudaRuntimeGetVersion: 13000 for 13.0
  // The CUDA runtime.
  int (*SetDevice)(int);
  int (*StreamCreateWithFlags)(void **, unsigned);
  int (*StreamDestroy)(void *);
  int (*EventCreateWithFlags)(void **, unsigned);
  int (*EventDestroy)(void *);
  int (*EventRecord)(void *, void *);
  int (*StreamWaitEvent)(void *, void *, unsigned);
  const char *(*GetErrorString)(int);
  int (*RuntimeGetVersion)(int *);
  // cuBLAS.
  int (*Create)(void **);
  int (*Destroy)(void *);
  int (*SetStream)(void *, void *);
  int (*SetWorkspace)(void *, void *, size_t); ///< optional
  int (*GetVersion)(void *, int *);
  const char *(*GetStatusString)(int);         ///< optional
  int (*GemmEx)(void *, int, int, int, int, int, const void *, const void *,
                int, int, const void *, int, int, const void *, void *, int,
                int, int, int);
};

/// A stream of the CUDA runtime wrapped for attnrt: raw for cuBLAS and
/// cross-stream waits, wrapped for attnrt's copies, events and collectives.
struct bench_stream {
  void *cu;          ///< cudaStream_t (a CUstream of rt's primary context)
  attnrt_stream *s;  ///< attnrt_stream_wrap of cu
};

/// Loads cuBLAS ($ATTN_CUBLAS_LIBRARY, then libcublas.so.13, .so.12, .so)
/// and the CUDA runtime it links, makes device current for the runtime,
/// creates a handle with a 32 MiB workspace from rt. Returns false with a
/// message in err (v is then closed). Release with bench_vendor_close.
bool bench_vendor_open(struct bench_vendor *v, attnrt_runtime *rt, int device,
                       char *err, size_t errlen);

/// Destroys the handle and the workspace; the libraries stay mapped.
void bench_vendor_close(struct bench_vendor *v);

/// Creates a stream that synchronizes with the legacy default stream and
/// wraps it for rt. Returns false with a message in err.
bool bench_stream_create(struct bench_vendor *v, attnrt_runtime *rt,
                         struct bench_stream *out, char *err, size_t errlen);

/// Destroys the wrapper and the stream. A zeroed stream is a no-op.
void bench_stream_destroy(struct bench_vendor *v, struct bench_stream *s);

/// Makes `waiter` wait for the work queued so far on `signaler` (an event of
/// the runtime, recorded and waited on). ev is a timing-disabled event from
/// bench_event_create. Returns false with a message in err.
bool bench_stream_wait(struct bench_vendor *v, struct bench_stream *waiter,
                       struct bench_stream *signaler, void *ev, char *err,
                       size_t errlen);

/// A timing-disabled event of the CUDA runtime for bench_stream_wait; NULL
/// with a message in err on failure. Release with bench_event_destroy.
void *bench_event_create(struct bench_vendor *v, char *err, size_t errlen);
void bench_event_destroy(struct bench_vendor *v, void *ev);

/// Queues C[m,n] = A[m,k] B[k,n] on s: row-major bf16 in and out, f32
/// accumulation (cublasGemmEx computing C^T = B^T A^T column-major).
/// Returns false with cuBLAS's message in err.
bool bench_cublas_gemm(struct bench_vendor *v, struct bench_stream *s,
                       attnrt_devptr a, attnrt_devptr b, attnrt_devptr c,
                       int64_t m, int64_t n, int64_t k, char *err,
                       size_t errlen);

//===-- Seeded inputs --===//

/// Element `index` of tensor `tensor` of rank `rank`: bf16 bits of a value
/// spread evenly over [-1, 1). Any element can be computed alone, so each
/// rank rebuilds its peers' inputs for the reference without communicating.
uint16_t bench_rand_bf16(uint64_t seed, uint32_t tensor, uint32_t rank,
                         uint64_t index);

/// The value of bf16 bits.
double bench_bf16_to_double(uint16_t bits);

/// host[i] = bench_rand_bf16(seed, tensor, rank, i) for i < count, on
/// several threads.
void bench_fill_bf16(uint16_t *host, size_t count, uint64_t seed,
                     uint32_t tensor, uint32_t rank);

/// count distinct sorted row indices in [0, limit) from seed: the first and
/// the last row (edge tiles), the rest random. count <= limit.
void bench_sample_rows(uint64_t seed, int count, int64_t limit, int64_t *rows);

/// Threads for host work: $ATTN_BENCH_THREADS, else the online CPUs divided
/// by $LOCAL_WORLD_SIZE (default 1), capped at 32, at least 1.
int bench_threads(void);

//===-- Checks against float64 --===//

/// A comparison of GPU values with float64 ones, accumulated.
struct bench_check {
  double sum_d2;  ///< sum of squared differences
  double sum_r2;  ///< sum of squared reference values
  double max_abs; ///< largest |got - ref|
  long count;     ///< values compared
  long nonfinite; ///< NaN or Inf values got
};

/// Adds n values to c.
void bench_check_add(struct bench_check *c, const uint16_t *got,
                     const double *want, size_t n);

/// ||got - ref|| / ||ref|| (0 when nothing was compared; inf for a zero ref
/// with a difference).
double bench_check_rel_l2(const struct bench_check *c);

/// max |got - ref| / rms(ref).
double bench_check_max_rel(const struct bench_check *c);

/// True when c is within the tolerances above and compared something.
bool bench_check_pass(const struct bench_check *c);

/// Sampled rows of one rank's result of a GEMM + collective pattern (a plain
/// GEMM is matmul_all_reduce over a world of 1), checked column block by
/// column block on several threads with attn_comm_reference.
struct bench_ref_check {
  /// The pattern over the sampled rows: m is the number of rows of the
  /// gathered A or of the product (the sample), n and k the full sizes.
  struct attn_comm_ref_problem problem;
  /// Per slot q < world: the sampled rows of A (attn_comm_ref_a_rows x k).
  const double *const *a;
  /// Per slot q: the rank whose B (tensor b_tensor, [k, n] row-major) the
  /// slot uses.
  const int *b_rank;
  uint64_t seed;
  uint32_t b_tensor;
  int out_slot;        ///< which slot's result is compared
  const uint16_t *got; ///< the GPU's rows: attn_comm_ref_out_rows x n, bf16
  /// When not NULL, slot out_slot's reference rows are stored here too
  /// (attn_comm_ref_out_rows x n), to compare more outputs with
  /// bench_check_add later; got may then be NULL.
  double *want;
};

/// Computes the reference of r and compares slot r->out_slot with r->got
/// (when given) into *result. Returns false with a message in err when the
/// reference cannot be computed (a malformed problem, no memory).
bool bench_ref_check_run(const struct bench_ref_check *r,
                         struct bench_check *result, char *err, size_t errlen);

//===-- Timing --===//

/// One queued step of a benchmark: returns false with a message in err.
typedef bool (*bench_step_fn)(void *user, char *err, size_t errlen);

/// Runs step warmup times, then iters times, each between two attnrt events
/// recorded on s; between(user), when given, runs before each iteration
/// outside the events (comm_bench's barrier); finish(user) waits for s (NULL:
/// attnrt_stream_synchronize). Stores each iteration's milliseconds in ms.
bool bench_time(attnrt_runtime *rt, attnrt_stream *s, bench_step_fn step,
                bench_step_fn between, bench_step_fn finish, void *user,
                int warmup, int iters, float *ms, char *err, size_t errlen);

/// Which of two variants timed in turn runs j-th (j = 0, 1) in round
/// `round`: 0 then 1 in even rounds, 1 then 0 in odd ones, so that neither
/// always meets the GPU the other has just warmed.
static inline int bench_in_turn(int round, int j) {
  return round % 2 ? 1 - j : j;
}

/// Order statistics of n timings.
struct bench_stats {
  double median, min, max, mean;
};
void bench_stats_of(const float *ms, int n, struct bench_stats *out);

//===-- Small helpers --===//

/// Parses "MxNxK" into *m, *n, *k (positive). Returns false when malformed.
bool bench_parse_shape(const char *text, int64_t *m, int64_t *n, int64_t *k);
/// Parses a comma-separated list of MxNxK shapes into shapes[0..*n), at
/// most max of them; false on a malformed shape, too many, or none.
bool bench_parse_shapes(const char *text, int64_t (*shapes)[3], int max,
                        int *n);

/// If arg is "--name=value" returns value, else NULL.
const char *bench_flag_value(const char *arg, const char *name);

/// Parses a positive int from text into *out; false when malformed.
bool bench_parse_int(const char *text, long min, long max, long *out);

/// The timing and checking flags gemm_bench and comm_bench share, where
/// they go and the largest values each program takes.
struct bench_common_flags {
  long *iters, *warmup, *cooldown_ms, *check_rows, *seed;
  const char **json_path;
  long max_iters, max_check_rows;
};

/// When arg is one of --iters, --warmup (at most max_iters too),
/// --cooldown-ms (0 to 60000), --check-rows, --seed or --json, stores its
/// value, sets *ok to whether it was good and returns true; false for any
/// other argument.
bool bench_parse_common_flag(const char *arg,
                             const struct bench_common_flags *f, bool *ok);

/// The current UTC date as "YYYY-MM-DD HH:MM UTC" into buf.
void bench_utc_date(char *buf, size_t len);

/// The attnrt status and the runtime's message as one line into err.
void bench_attnrt_error(char *err, size_t errlen, const char *what,
                        enum attnrt_status st, const attnrt_runtime *rt);

/// Seconds on the monotonic clock, for progress lines and compile times.
double bench_now_s(void);

/// Lets the GPU idle for ms milliseconds (after the caller synchronized it)
/// before a variant is timed: under sustained load an H200 steps its clocks
/// down, so back-to-back variants would each start as hot as the previous
/// one left it (bench/RESULTS.md has the steps).
void bench_cooldown(long ms);

/// Size of the buffer bench_first_error writes into.
#define BENCH_DIAG_LEN 600

/// An attn_diag_fn (attn/attn.h) keeping the first error diagnostic, with
/// its location, in user: a char[BENCH_DIAG_LEN] that starts empty.
void bench_first_error(void *user, int severity, const char *file, int line,
                       int col, const char *message);

#endif // ATTN_BENCH_COMMON_H
