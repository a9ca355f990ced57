//===- hardware.c - GPU descriptions of the cost model --------------------===//
//
// Datasheet numbers, the ceilings measured on this project's H200, and the
// attention kernel's calibration. docs/cost-model.md gives the source of
// each constant; the comments below say which kind it is:
//   [ds]   NVIDIA datasheet or architecture whitepaper
//   [pg]   CUDA C++ Programming Guide, arithmetic instruction throughput
//   [here] measured on this project's H200 (shared notes/anchors-h200.md,
//          bench/RESULTS.md, bench/raw/2026-11-30-attn-bench.json)
//   [fit]  fitted to [here] measurements (docs/cost-model.md, "Calibration")
//   [assumed]
//
//===----------------------------------------------------------------------===//
#include "lib/CostModel/cost_model.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/// The H200's calibration of the Hopper kernel (bench/raw, 2026-11-30).
/// Other GPUs borrow it with measured = false: nothing here is measured on
/// them, and their attention kernel is not the Hopper one.
#define H200_KERNEL(is_measured)                                               \
  {                                                                            \
    .measured = (is_measured),                                                 \
    .mma_eff = 0.943,              /* [fit] 10 'no RoPE' MHA rows */           \
    .softmax_eff = 0.975,          /* [fit] same rows */                       \
    .cta_overhead_tiles = 2.48,    /* [fit] same rows */                       \
    .rope_cycles_per_elem = 0.192, /* [fit] 'K fused' - 'no RoPE', 12 rows */  \
    .launch_s = 5e-6,              /* [assumed] */                             \
    .copy_fraction = 0.8906,       /* [here] 4.275 / 4.8 TB/s */               \
  }

static const struct attn_cost_gpu gpus[] = {
    {
        .name = "H100",
        .full_name = "NVIDIA H100 SXM5 80GB",
        .sms = 132,                  // [ds]
        .boost_clock_hz = 1.98e9,    // [ds] max SM clock (nvidia-smi)
        .bf16_dense_flops = 989.4e12, // [ds]
        .fp32_fma_per_sm_clk = 128,  // [ds] 128 FP32 lanes per SM
        .sfu_per_sm_clk = 16,        // [pg] cc 9.0
        .hbm_bytes_per_s = 3.35e12,  // [ds] HBM3
        .smem_bytes_per_sm = 228 * 1024, // [ds]
        .regs_per_sm = 65536,        // [ds]
        .l2_bytes = 50.0 * 1024 * 1024, // [ds]
        .kernel = H200_KERNEL(false),
    },
    {
        .name = "H200",
        .full_name = "NVIDIA H200 SXM 141GB",
        .sms = 132,                  // [ds] [here]
        .boost_clock_hz = 1.98e9,    // [here] max SM clock 1980 MHz
        .bf16_dense_flops = 989.4e12, // [ds] same GH100 die as H100 SXM
        .fp32_fma_per_sm_clk = 128,  // [ds]
        .sfu_per_sm_clk = 16,        // [pg] cc 9.0
        .hbm_bytes_per_s = 4.8e12,   // [ds] HBM3e
        .smem_bytes_per_sm = 228 * 1024, // [ds]
        .regs_per_sm = 65536,        // [ds]
        .l2_bytes = 60.0 * 1024 * 1024, // [here] torch reports 60 MiB
        .measured_copy_bytes_per_s = 4.275e12, // [here] 2 GiB d2d copy
        .measured_gemm_flops = 705e12,         // [here] 708 and 701 TF
        .measured_attn_eff_d64 = 0.476,        // [here] 4.669 ms
        .measured_attn_eff_d128 = 0.622,       // [here] 7.143 ms
        .kernel = H200_KERNEL(true),
    },
    {
        .name = "A100",
        .full_name = "NVIDIA A100 SXM4 80GB",
        .sms = 108,                  // [ds]
        .boost_clock_hz = 1.41e9,    // [ds]
        .bf16_dense_flops = 312e12,  // [ds]
        .fp32_fma_per_sm_clk = 64,   // [ds] 19.5 TFLOP/s FP32
        .sfu_per_sm_clk = 16,        // [pg] cc 8.0
        .hbm_bytes_per_s = 2.039e12, // [ds] HBM2e
        .smem_bytes_per_sm = 164 * 1024, // [ds]
        .regs_per_sm = 65536,        // [ds]
        .l2_bytes = 40.0 * 1024 * 1024, // [ds]
        .kernel = H200_KERNEL(false),
    },
    {
        .name = "RTX3090",
        .full_name = "NVIDIA GeForce RTX 3090",
        .sms = 82,                   // [ds]
        .boost_clock_hz = 1.695e9,   // [ds]
        .bf16_dense_flops = 71e12,   // [ds] GA102, FP32 accumulate
        .fp32_fma_per_sm_clk = 128,  // [ds] 35.6 TFLOP/s FP32
        .sfu_per_sm_clk = 16,        // [pg] cc 8.6
        .hbm_bytes_per_s = 936e9,    // [ds] GDDR6X
        .smem_bytes_per_sm = 100 * 1024, // [ds] of 128 KiB L1/shared
        .regs_per_sm = 65536,        // [ds]
        .l2_bytes = 6.0 * 1024 * 1024, // [ds]
        .kernel = H200_KERNEL(false),
    },
};

#define NUM_GPUS (sizeof gpus / sizeof gpus[0])

size_t attn_cost_gpu_count(void) { return NUM_GPUS; }

const struct attn_cost_gpu *attn_cost_gpu_at(size_t i) {
  return i < NUM_GPUS ? &gpus[i] : NULL;
}

/// Lower-cases s into out without '-', '_' and ' '.
static void normalize(const char *s, char *out, size_t len) {
  size_t n = 0;
  for (; *s && n + 1 < len; ++s)
    if (*s != '-' && *s != '_' && *s != ' ')
      out[n++] = (char)tolower((unsigned char)*s);
  out[n] = '\0';
}

const struct attn_cost_gpu *attn_cost_gpu_lookup(const char *name, char *err,
                                                 size_t errlen) {
  char want[64], have[64];
  normalize(name ? name : "", want, sizeof want);
  for (size_t i = 0; i < NUM_GPUS; ++i) {
    normalize(gpus[i].name, have, sizeof have);
    if (want[0] && !strcmp(want, have))
      return &gpus[i];
  }
  if (err && errlen) {
    int n = snprintf(err, errlen, "unknown gpu '%s' (expected ",
                     name ? name : "");
    for (size_t i = 0; i < NUM_GPUS && n >= 0 && (size_t)n < errlen; ++i)
      n += snprintf(err + n, errlen - (size_t)n, "%s%s",
                    i == 0              ? ""
                    : i + 1 == NUM_GPUS ? " or "
                                        : ", ",
                    gpus[i].name);
    if (n >= 0 && (size_t)n < errlen)
      snprintf(err + n, errlen - (size_t)n, ")");
  }
  return NULL;
}

double attn_cost_gpu_bandwidth(const struct attn_cost_gpu *g) {
  if (g->measured_copy_bytes_per_s > 0)
    return g->measured_copy_bytes_per_s;
  return g->hbm_bytes_per_s * g->kernel.copy_fraction;
}
