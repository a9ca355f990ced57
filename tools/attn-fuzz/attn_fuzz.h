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

/// Entries of fuzz_case.order beyond the named blocks: one attn.score_mod or
/// attn.mask_mod op (issue 28), drawn only with --bodies.
enum { FB_SCORE_BODY = FB_COUNT, FB_MASK_BODY, FB_ORDER_CODES };

/// The bodies a well-formed case may carry (templates with a parameter;
/// the reference computes each in C, independently of the compiler).
enum fuzz_score_body {
  FSB_SOFTCAP,  ///< p * tanh(s / p)
  FSB_DISTANCE, ///< s - p * |q - kv|
  FSB_HEAD,     ///< s * (1 + p * h) + b / 8
  FSB_PARITY,   ///< (q + kv) even ? s + p : max(s, -p)
  FSB_COUNT
};
enum fuzz_mask_body {
  FMB_PREFIX, ///< kv < p or kv <= q (prefix LM)
  FMB_BAND,   ///< |q - kv| <= p
  FMB_STRIPE, ///< kv mod p != 0 or kv == q
  FMB_HEAD,   ///< h even or kv <= q
  FMB_COUNT
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
  FD_BODY_OP,            ///< math.atan in a score body
  FD_BODY_F64,           ///< an f64 value in a score body
  FD_BODY_MASK_YIELD,    ///< a mask body yielding f32
  FD_BODY_SIGNATURE,     ///< a score body without the score argument
  FD_BODY_CONST_INDEX,   ///< a capture read at a constant past its end
  FD_SCORE_MODS_APART,   ///< softcap between two score_mods (attn-fuse)
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
  // Bodies (--bodies): the attn.score_mod ops' templates, adjacent and
  // composed in program order, and the attn.mask_mod ops' (enum
  // fuzz_score_body / fuzz_mask_body), each with its parameter.
  int nscore_bodies, score_body[2];
  double score_param[2];
  int nmask_bodies, mask_body[2];
  int64_t mask_param[2];
  // The modifier ops in program order (enum fuzz_block, FB_SCORE_BODY,
  // FB_MASK_BODY; scale and the bodies may repeat)
  int order[12];
  int norder;
  // The function's arguments in order (role numbers as in attn_run.h, and
  // 8: a capture, only in ill-formed cases)
  int args[9];
  int nargs;
  // Tile options
  int block_m, block_n;
  // Ill-formed variant
  enum fuzz_defect defect;
  int bad_attribute; // FD_BAD_ATTRIBUTE: which one (0 window .. 4 gate)
};

/// Draws case number index of the run with seed: every block alone and every
/// pair of blocks come first (cases 0..35), then random subsets. With
/// bodies, a case may also carry attn.score_mod / attn.mask_mod ops (the
/// named blocks are drawn as without).
void attn_fuzz_make_case(uint64_t seed, uint64_t index, bool bodies,
                         struct fuzz_case *c);

/// Draws an ill-formed program: a well-formed one with one defect.
void attn_fuzz_make_invalid(uint64_t seed, uint64_t index, struct fuzz_case *c);

/// Appends the program of c as function @name in generic MLIR to b.
void attn_fuzz_emit(struct attn_strbuf *b, const char *name,
                    const struct fuzz_case *c);

/// The diagnostic text an ill-formed case must produce (a substring).
const char *attn_fuzz_expected_error(const struct fuzz_case *c);

/// The float64 reference problem of c, from the program as generated (not
/// from what the compiler made of it). Data pointers are left NULL; the
/// bodies' score_fn / mask_fn read c (fn_ctx), which must outlive p.
void attn_fuzz_reference_problem(const struct fuzz_case *c,
                                 struct attn_ref_problem *p);

/// A one-line summary of c (shapes, blocks in order, tile options).
void attn_fuzz_describe(struct attn_strbuf *b, const struct fuzz_case *c);

//===-- Decode programs (gen_decode.c) ------------------------------------===//

enum fuzz_decode_mod { FDM_SCALE, FDM_SOFTCAP, FDM_ALIBI };

/// Ways to make a decode program ill-formed; each names the verifier's
/// diagnostic it must get (attn_fuzz_decode_expected_error).
enum fuzz_decode_defect {
  FDD_NONE,
  FDD_PAGE_SIZE,   // page_size not a power of two
  FDD_PAGE_ROWS,   // the cache's pages hold other than page_size rows
  FDD_LENS_I64,    // cache_seqlens of i64
  FDD_LENS_SHAPE,  // one length too many
  FDD_TABLE_BATCH, // block_table with one row too many
  FDD_HEADS,       // query heads not a multiple of the cache's
  FDD_HEAD_DIM,    // k_cache's head dim differs from q's
  FDD_KV_ROWS,     // v_cache's rows differ from k_cache's
  FDD_SOFTCAP,     // a negative softcap
  FDD_ROTARY,      // rotary_dim past the head dim
  FDD_RESULT,      // the result's rows differ from q's
  FDD_COUNT
};

/// A random attn.fused_decode program.
struct fuzz_decode {
  int64_t b, h, hk, nq, d, dv, keys;
  int elem; // 0 f32, 1 f16, 2 bf16
  bool paged;
  int64_t page, num_pages, max_pages;
  bool causal;
  double scale, softcap, alibi;
  int nmods;
  int mods[3]; // enum fuzz_decode_mod, in program order; scale always
  bool window;
  int64_t window_left, window_right;
  bool rope, interleaved;
  double theta;
  int64_t rotary_dim;
  enum fuzz_decode_defect defect; // FDD_NONE: well-formed
};

/// Draws decode case number index of the run with seed.
void attn_fuzz_make_decode(uint64_t seed, uint64_t index, struct fuzz_decode *c);
/// Appends the program of c as function @name in generic MLIR to b.
void attn_fuzz_emit_decode(struct attn_strbuf *b, const char *name,
                           const struct fuzz_decode *c);
/// The float64 reference problem of c (lengths and table left NULL: the
/// decode job draws them).
void attn_fuzz_decode_reference(const struct fuzz_decode *c,
                                struct attn_ref_decode *p);
/// Draws an ill-formed decode program: a well-formed one with one defect
/// that applies to it.
void attn_fuzz_make_decode_invalid(uint64_t seed, uint64_t index,
                                   struct fuzz_decode *c);
/// The diagnostic text the ill-formed c must produce, into buf.
void attn_fuzz_decode_expected_error(const struct fuzz_decode *c, char *buf,
                                     size_t n);
/// A one-line summary of c.
void attn_fuzz_describe_decode(struct attn_strbuf *b, const struct fuzz_decode *c);

#endif // ATTN_FUZZ_H
