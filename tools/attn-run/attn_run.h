//===- attn_run.h - What attn-run's executors and attn-fuzz share ---------===//
#ifndef ATTN_RUN_H
#define ATTN_RUN_H

#include "lib/Reference/attn_reference.h"
#include "lib/Transforms/transforms.h"

#include "mlir-c/IR.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/// The tensors an attention's score_fn / mask_fn bodies may capture.
#define ATTN_RUN_MAX_CAPTURES 16
/// The most gradients into captured tensors one job checks (attn.fused_grad's
/// ATTN_MAX_GRADS).
#define ATTN_RUN_MAX_GRADS 8

/// A kernel parameter's role: q, k, v, attn.fused's optional inputs (gate,
/// q_segments, k_segments, q_positions, k_positions) and out, or a GEMM's
/// a, b and c, then the tensors the bodies capture (capture0, ...), as named
/// in tile.arg_names and the launch manifest.
enum {
  ATTN_RUN_Q,
  ATTN_RUN_K,
  ATTN_RUN_V,
  ATTN_RUN_GATE,
  ATTN_RUN_Q_SEGMENTS,
  ATTN_RUN_K_SEGMENTS,
  ATTN_RUN_Q_POSITIONS,
  ATTN_RUN_K_POSITIONS,
  ATTN_RUN_A,
  ATTN_RUN_B,
  ATTN_RUN_C,
  ATTN_RUN_OUT,
  ATTN_RUN_CAPTURE0,
  ATTN_RUN_ROLES = ATTN_RUN_CAPTURE0 + ATTN_RUN_MAX_CAPTURES
};

/// The role's parameter name ("q", ..., "k_positions", "a", "b", "c",
/// "out", "capture0", ...).
const char *attn_run_role_name(int role);

/// Element types a captured tensor may hold.
enum attn_run_elem {
  ATTN_RUN_F32,
  ATTN_RUN_F16,
  ATTN_RUN_BF16,
  ATTN_RUN_I32,
  ATTN_RUN_I64,
  ATTN_RUN_F64 // in f64 programs
};

/// One tensor the bodies capture (role ATTN_RUN_CAPTURE0 + its index).
struct job_capture {
  enum attn_run_elem elem;
  size_t count; // elements
};

/// A body of the job's attn.fused (score_fn or mask_fn): the block, in the
/// job's copy of the function, and its captures in attn_body_captures
/// order as the roles of the tensors they are (a capture's, or an
/// operand's such as q_segments when the body reads it too).
struct job_body {
  MlirBlock block; // null: none
  int ncaptures;
  int role[ATTN_RUN_MAX_CAPTURES];
};

/// One kernel to run: its function name, the role of each argument, which
/// roles it has and the reference problem: an attention, or a GEMM
/// (linalg.matmul) when matmul is set.
struct job {
  char name[256];
  int nargs;                       // arguments before the output
  int role_of_arg[ATTN_RUN_ROLES]; // role of argument i
  bool has[ATTN_RUN_ROLES];        // roles present (the output always)
  int out;          // the output's role: ATTN_RUN_OUT, or ATTN_RUN_C
  bool lse;         // attn.fused writes lse too (attn-grad's forward)
  bool out_is_read; // the output holds an input on entry (c += a * b)
  struct attn_ref_problem p;
  bool matmul;
  int64_t m, n, k; // the GEMM: a m x k, b k x n, c m x n
  int elem_bits;  // 64 (f64 programs), 32 or 16
  bool elem_bf16; // which 16-bit kind
  /// The bodies and what they capture; func_copy is the function copied
  /// (the compiled one is rewritten) for the reference to evaluate them,
  /// released by attn_run_jobs_release.
  int ncaptures;
  struct job_capture captures[ATTN_RUN_MAX_CAPTURES];
  struct job_body score_fn, mask_fn;
  MlirOperation func_copy;
  /// The gradients into captured tensors the function asks for ({attn.grad}
  /// arguments), in argument order: the role of the tensor (ATTN_RUN_GATE
  /// or a capture's) and the backward's name of its gradient (dgate,
  /// dcapture<i>).
  int ngrads;
  int grad_role[ATTN_RUN_MAX_GRADS];
  char grad_name[ATTN_RUN_MAX_GRADS][24];
  /// A decode (attn.fused_decode, decode_job.c): its problem, lengths and
  /// table drawn at each run.
  bool decode;
  struct attn_ref_decode dp;
  /// The attn.cache_append feeding the decode (ap.rows 0: none): k_new and
  /// v_new drawn too, the caches written in place and checked after.
  struct attn_ref_append ap;
};

struct attn_jit;
struct attnrt_runtime;
struct attnrt_module;

/// One buffer of a call by name (attn_executor.call): the parameter name
/// it binds (as in tile.arg_names and the launch manifest), its host
/// memory and size, and whether the call writes it (then it is copied back
/// and not uploaded) or reads and writes it (inout: uploaded, then copied
/// back: a cache the kernel appends to).
struct attn_run_arg {
  const char *name;
  void *buf;
  size_t bytes;
  bool out;
  bool inout;
};

/// Runs compiled kernels on host buffers indexed by role.
struct attn_executor {
  /// Runs job j; writes its output into bufs[j->out] and, when timed, the
  /// median launch time in *ms (else -1). bufs/bytes of absent roles are
  /// NULL/0. Returns false after printing an error.
  bool (*execute)(struct attn_executor *x, const struct job *j,
                  void *const bufs[ATTN_RUN_ROLES],
                  const size_t bytes[ATTN_RUN_ROLES], double *ms);
  /// Whether the compiled module has a kernel or launch program name.
  bool (*has)(struct attn_executor *x, const char *name);
  /// Runs kernel or launch program name on args[0..n) (attn-run --grad's
  /// forward with lse and backward kernels): the CPU passes them in order,
  /// the GPU binds them by name. False after printing an error.
  bool (*call)(struct attn_executor *x, const char *name, int n,
               const struct attn_run_arg *args);
  int iters;
  int64_t capture_ids;          // integer captures in [0, capture_ids)
  double timeout_s;             // GPU: how long a synchronize may wait
                                // (< 0: the default)
  struct attn_jit *jit;         // CPU
  struct attnrt_runtime *rt;    // GPU
  struct attnrt_module *module; // GPU
  char chip[16];                // GPU target, from the device or --chip
  enum attn_gpu_kernel kernel;  // the kernel family chosen
  char device[128];             // GPU name
  int sms;                      // the GPU's SM count
};

//===-- Jobs (run_job.c) --------------------------------------------------===//

/// Reads the problem of every function of module holding an attn.fused op
/// (after attn-fuse) or a linalg.matmul into jobs (at most max). Returns
/// false after a diagnostic when there is none, too many, or one is
/// unsupported.
bool attn_run_collect_jobs(MlirOperation module, struct job *jobs, int max,
                           int *n);

/// Releases what attn_run_collect_jobs made for jobs[0..n) (the copies of
/// functions with bodies).
void attn_run_jobs_release(struct job *jobs, int n);

/// Draws fresh inputs from rng, runs job j on x, compares with the float64
/// reference and prints one line to out. tolerance <= 0 picks one by element
/// type. Captured tensors are uniform in [-1, 1] (floats) or in
/// [0, x->capture_ids) (integers; 4 when 0). The reference evaluates j's
/// bodies unless j->p already has a score_fn or mask_fn hook (the caller's
/// own). A forward that writes lse as well (attn.fused with lse, the
/// program's own) is called with out and lse, and both are compared (lse
/// with attn_reference_grad's, as attn_run_grad_job compares it). Returns 0
/// pass, 1 fail, -1 error (printed to stderr).
int attn_run_job(struct attn_executor *x, const struct job *j, double tolerance,
                 struct attn_rng *rng, FILE *out);

/// attn-run --grad: job j is a forward @f that attn-grad gave lse and a
/// backward @f__grad (attn-tile's kernels f__grad__dkdv and f__grad__dq,
/// or the launch program f__grad where the lowering made one). Draws
/// fresh inputs and dO, runs the forward with lse then the backward, and
/// compares lse, dq, dk and dv with attn_reference_grad and the forward's
/// out with attn_reference in float64, printing one line to out.
/// tolerance <= 0 picks one by element type (lse always 1e-4 then). Returns
/// as attn_run_job does.
int attn_run_grad_job(struct attn_executor *x, const struct job *j,
                      double tolerance, struct attn_rng *rng, FILE *out);

//===-- Decode jobs (decode_job.c) ----------------------------------------===//

/// Reads the decode problem of dec (an attn.fused_decode in func) into j;
/// false after a diagnostic.
bool attn_run_describe_decode(MlirOperation func, MlirOperation dec,
                              struct job *j);

/// Draws q, the caches, lengths and (paged) a block table, runs decode job
/// j through x->call and compares with attn_reference_decode, printing one
/// line; returns as attn_run_job does.
int attn_run_decode_job(struct attn_executor *x, const struct job *j,
                        double tolerance, struct attn_rng *rng, FILE *out);

/// Makes x run jobs of module (after lower-tile-to-cpu and the LLVM
/// lowering) through MLIR's ExecutionEngine. Returns false after printing an
/// error; release with attn_cpu_executor_release.
bool attn_cpu_executor_load(struct attn_executor *x, MlirOperation module);

/// Releases the JIT (safe when never loaded).
void attn_cpu_executor_release(struct attn_executor *x);

//===-- GPU (gpu_run.c) ---------------------------------------------------===//

/// Opens GPU 0, picks the chip to compile for and reads the SM count.
/// Returns false after printing a readable error (no driver, no GPU,
/// unsupported chip).
bool attn_gpu_executor_init(struct attn_executor *x);

/// Compiles module (after lower-tile-to-gpu) to PTX and loads it. Returns
/// false after printing an error.
bool attn_gpu_executor_load(struct attn_executor *x, MlirOperation module);

/// Releases the GPU runtime and module (safe when never initialised).
void attn_gpu_executor_release(struct attn_executor *x);

#endif // ATTN_RUN_H
