//===- cost_model.h - The Rotation Calculus: where RoPE runs, its cost ---===//
//
// Pure functions of a problem description and a hardware description (no
// MLIR types): the predicted time of an attention with RoPE placed one of
// four ways, the crossover between two placements, and the best placement
// among those available. docs/cost-model.md derives every term and gives
// the source of every constant.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_COST_MODEL_H
#define ATTN_COST_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

//===-- Strategies --------------------------------------------------------===//

/// Where q and k are rotated.
enum attn_cost_strategy {
  ATTN_COST_FUSED,    ///< in the attention kernel: Q once per CTA, K per tile
  ATTN_COST_SPLIT,    ///< Q in the kernel once per CTA; K by a kernel before
  ATTN_COST_PRE,      ///< Q and K by rotation kernels before attention
  ATTN_COST_PRODUCER, ///< in the epilogue of the q/k projection (a GEMM)
  ATTN_COST_NUM_STRATEGIES
};

/// Bit of s in an availability mask.
#define ATTN_COST_BIT(s) (1u << (unsigned)(s))
#define ATTN_COST_ALL ((1u << ATTN_COST_NUM_STRATEGIES) - 1u)

/// The strategy's spelling ("fused", "split", "pre", "producer"); "?" when
/// out of range. The string is static.
const char *attn_cost_strategy_name(enum attn_cost_strategy s);

/// Parses a spelling (exact, lower case). Returns false when unknown.
bool attn_cost_strategy_parse(const char *name, enum attn_cost_strategy *out);

//===-- Hardware descriptions ---------------------------------------------===//

/// Constants of the attention kernel's cost, calibrated on one GPU and
/// assumed to carry over (in the units given) to the others.
struct attn_cost_kernel_calib {
  bool measured;            ///< calibrated on this GPU (else borrowed)
  /// Tile time = MMA FLOPs / (mma_eff * bf16 peak per SM) + score elements
  /// / (softmax_eff * sfu rate): a two-term fit, see docs/cost-model.md.
  double mma_eff;
  double softmax_eff;
  double cta_overhead_tiles;  ///< per-CTA cost, in BM x BN tiles
  double rope_cycles_per_elem; ///< SM cycles per element rotated in-kernel
  double launch_s;            ///< cost of one more kernel launch (seconds)
  double copy_fraction;       ///< achieved / datasheet HBM bandwidth
};

/// One GPU: datasheet numbers, ceilings measured here (0 when not), and the
/// attention kernel's calibration.
struct attn_cost_gpu {
  const char *name;      ///< lookup name, e.g. "H200"
  const char *full_name; ///< e.g. "NVIDIA H200 SXM 141GB"
  int sms;
  double boost_clock_hz;
  double bf16_dense_flops; ///< tensor cores, dense, FP32 accumulate
  double fp32_fma_per_sm_clk;
  double sfu_per_sm_clk;   ///< MUFU results (ex2, sin, cos) per SM per clock
  double hbm_bytes_per_s;  ///< datasheet
  double smem_bytes_per_sm;
  double regs_per_sm;      ///< 32-bit registers
  double l2_bytes;
  double measured_copy_bytes_per_s; ///< device-to-device copy, read + write
  double measured_gemm_flops;       ///< bf16 8192^3 GEMM
  /// 'no RoPE' attention at N = 16384 (B*N = 32K, H = 32, causal), as a
  /// fraction of bf16_dense_flops: d = 64 and d = 128.
  double measured_attn_eff_d64, measured_attn_eff_d128;
  struct attn_cost_kernel_calib kernel;
};

/// The GPU the passes assume when no option names one (its SM count sizes
/// persistent kernels and the GEMM's tiles).
#define ATTN_COST_DEFAULT_GPU "H200"

/// Finds a GPU by name, ignoring case and any "-", "_" or " " ("H200",
/// "h100", "a100", "rtx3090", "RTX-3090"). Returns NULL and writes an error
/// naming the known GPUs into err when unknown. The result is static.
const struct attn_cost_gpu *attn_cost_gpu_lookup(const char *name, char *err,
                                                 size_t errlen);

/// The known GPUs: attn_cost_gpu_count() entries, static.
size_t attn_cost_gpu_count(void);
const struct attn_cost_gpu *attn_cost_gpu_at(size_t i);

/// HBM bandwidth the model uses: the measured copy rate where there is one,
/// else the datasheet rate times the calibrated copy fraction.
double attn_cost_gpu_bandwidth(const struct attn_cost_gpu *g);

//===-- Problems and costs ------------------------------------------------===//

/// One attention: q [batch, heads, seq_q, head_dim], k and v [batch,
/// kv_heads, seq_k, head_dim]; RoPE on rotary_dim features (0: no RoPE).
struct attn_cost_problem {
  int64_t batch, heads, kv_heads, seq_q, seq_k, head_dim, rotary_dim;
  bool causal;
  int dtype_bytes;        ///< 2 (bf16, f16) or 4 (f32)
  int block_m, block_n;   ///< query rows per CTA, keys per step
};

/// A prediction and its terms. Times in seconds.
struct attn_cost {
  double time_s;           ///< total
  double attention_s;      ///< the attention kernel without RoPE work
  double rope_in_kernel_s; ///< rotation inside the attention kernel
  double rope_kernels_s;   ///< separate rotation kernels (bytes / bandwidth)
  double launch_s;         ///< launches beyond the attention kernel's
  double flops;            ///< useful FLOPs (unmasked scores only)
  double executed_flops;   ///< FLOPs of every tile the kernel visits
  double efficiency;       ///< flops / (attention_s * peak)
  double rope_bytes;       ///< HBM bytes of the rotation kernels (r + w)
  double q_rotated, k_rotated; ///< elements rotated, all places together
  double k_repeat;         ///< k_rotated / elements of K's rotary part
  int64_t ctas, tiles;     ///< CTAs and BM x BN tiles of the attention
  int kernels;             ///< kernels launched
};

/// Checks p: every size positive, heads divisible by kv_heads, rotary_dim
/// even and at most head_dim (or 0), dtype_bytes 2 or 4. Returns false with
/// an LLVM-style message in err otherwise.
bool attn_cost_check_problem(const struct attn_cost_problem *p, char *err,
                             size_t errlen);

/// Predicts p's time on g with RoPE placed by s. Returns false with a
/// message in err when p is invalid. Without RoPE (rotary_dim 0) every
/// strategy costs the attention alone.
bool attn_cost_estimate(const struct attn_cost_problem *p,
                        const struct attn_cost_gpu *g,
                        enum attn_cost_strategy s, struct attn_cost *out,
                        char *err, size_t errlen);

/// The cheapest strategy among those whose bit is set in available (ties go
/// to the earlier one in enum order); its cost in *best when not NULL.
/// Returns ATTN_COST_NUM_STRATEGIES when p is invalid or none is available.
enum attn_cost_strategy attn_cost_choose(const struct attn_cost_problem *p,
                                         const struct attn_cost_gpu *g,
                                         unsigned available,
                                         struct attn_cost *best);

/// The crossover of strategies a and b: with batch fixed, seq_q swept over
/// [lo, hi] and seq_k kept in its ratio to seq_q, the smallest N (found by
/// bisection, assuming one change of sign) at which the cheaper of the two
/// is no longer the one cheaper at lo. Returns false when both ends favour
/// the same strategy ("none in [lo, hi]") or p is invalid.
bool attn_cost_crossover(const struct attn_cost_problem *p,
                         const struct attn_cost_gpu *g,
                         enum attn_cost_strategy a, enum attn_cost_strategy b,
                         int64_t lo, int64_t hi, int64_t *n_star);

//===-- Decode: the split of the keys (decode_split.c) --------------------===//

/// One decode kernel's shape as the split model sees it: CTAs without a
/// split (sequences x K/V heads x row groups), the keys of the longest
/// sequence, the bytes read per key per CTA (K and V rows), the kernel's
/// key step (the split is rounded up to it), the query rows (sequences x
/// heads x rows) and their value dim (the partials' size), and how many
/// CTAs an SM holds at once.
struct attn_cost_decode {
  int64_t ctas, keys, bytes_per_key, key_step, rows, value_dim;
  int ctas_per_sm;
};

/// Predicted seconds of the decode with `splits` CTAs per key range
/// (INFINITY for an invalid problem).
double attn_cost_decode_time(const struct attn_cost_decode *p,
                             const struct attn_cost_gpu *g, int splits);

/// The split in [1, max_splits] of least predicted time (the smallest on a
/// tie); never one that leaves a split without keys. 1 for an invalid
/// problem.
int attn_cost_decode_splits(const struct attn_cost_decode *p,
                            const struct attn_cost_gpu *g, int max_splits);

#ifdef __cplusplus
}
#endif

#endif // ATTN_COST_MODEL_H
