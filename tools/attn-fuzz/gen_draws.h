//===- gen_draws.h - The random generators' draws ------------------------===//
//
// What gen_program.c and gen_decode.c draw their cases with: SplitMix64 to
// decorrelate per-case seeds, and uniform integers, coins and picks from
// lib/Reference's attn_rng.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_FUZZ_GEN_DRAWS_H
#define ATTN_FUZZ_GEN_DRAWS_H

#include "lib/Reference/attn_reference.h" // attn_rng

#include <stdbool.h>
#include <stdint.h>

/// SplitMix64: decorrelates the per-case seeds.
static inline uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static inline int64_t below(struct attn_rng *r, int64_t n) {
  return (int64_t)attn_rng_below(r, (uint64_t)n);
}

static inline bool coin(struct attn_rng *r, double p) {
  return attn_rng_uniform(r) < p;
}

static inline int64_t pick(struct attn_rng *r, const int64_t *v, int n) {
  return v[below(r, n)];
}

#endif // ATTN_FUZZ_GEN_DRAWS_H
