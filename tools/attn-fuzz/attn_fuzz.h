//===- attn_fuzz.h - Random attention programs for attn-fuzz --------------===//
#ifndef ATTN_FUZZ_H
#define ATTN_FUZZ_H

#include "lib/IR/attn_context.h"
#include "lib/Reference/attn_reference.h"

#include <stdbool.h>
#include <stdint.h>

/// The building blocks a program may use after q.k^T (and RoPE before it).
enum fuzz_block {
  FB_ROPE,
  FB_SCALE,
  FB_CAUSAL,
  FB_WINDOW,
  FB_ALIBI,
  FB_SOFTCAP,
  FB_GATE,
  FB_DOCUMENT,
  FB_COUNT
};

/// How RoPE places one tensor's rows: at 0.., at offset.., or explicit.
enum fuzz_positions { FP_NONE, FP_OFFSET, FP_EXPLICIT };

/// Ways to make a program ill-formed; each names the diagnostic it must get.
enum fuzz_defect {
  FD_NONE,
  FD_ROPE_AFTER_QK,
  FD_PV_BEFORE_SOFTMAX,
  FD_SOFTMAX_AFTER_PV,
  FD_MODIFIER_AFTER_SOFTMAX,
  FD_KV_HEADS,
  FD_GATE_HEADS,
  FD_SEGMENTS_LENGTH,
  FD_DUPLICATE_MODIFIER,
  FD_SPLIT_SCALES,
  FD_BAD_ATTRIBUTE,
  FD_POSITIONS_AND_OFFSET,
  FD_ROTARY_DIM,
  FD_COUNT
};

/// One generated program: shapes, blocks, their parameters and order, and
/// the tile options to compile it with.
struct fuzz_case {
  int64_t b, h, hk, n, m, d, dv;
  int elem; // 0 f32, 1 f16, 2 bf16
  bool has[FB_COUNT];
  // RoPE
  double theta;
  int64_t rotary_dim;
  bool interleaved;
  enum fuzz_positions qpos, kpos;
  int64_t q_offset, k_offset;
  // Modifiers
  double scale[2]; // one or two adjacent attn.scale ops
  int nscale;
  int64_t window_left, window_right;
  double max_bias, cap;
  int64_t gate_block;
  // The modifier ops in program order (enum fuzz_block; scale may repeat)
  int order[12];
  int norder;
  // The function's arguments in order (role numbers as in attn_run.h)
  int args[8];
  int nargs;
  // Tile options
  int block_m, block_n;
  // Ill-formed variant
  enum fuzz_defect defect;
  int bad_attribute; // FD_BAD_ATTRIBUTE: which one (0 window .. 4 gate)
};

/// Draws case number index of the run with seed: every block alone and every
/// pair of blocks come first (cases 0..35), then random subsets.
void attn_fuzz_make_case(uint64_t seed, uint64_t index, struct fuzz_case *c);

/// Draws an ill-formed program: a well-formed one with one defect.
void attn_fuzz_make_invalid(uint64_t seed, uint64_t index, struct fuzz_case *c);

/// Appends the program of c as function @name in generic MLIR to b.
void attn_fuzz_emit(struct attn_strbuf *b, const char *name,
                    const struct fuzz_case *c);

/// The diagnostic text an ill-formed case must produce (a substring).
const char *attn_fuzz_expected_error(const struct fuzz_case *c);

/// The float64 reference problem of c, from the program as generated (not
/// from what the compiler made of it). Data pointers are left NULL.
void attn_fuzz_reference_problem(const struct fuzz_case *c,
                                 struct attn_ref_problem *p);

/// A one-line summary of c (shapes, blocks in order, tile options).
void attn_fuzz_describe(struct attn_strbuf *b, const struct fuzz_case *c);

#endif // ATTN_FUZZ_H
