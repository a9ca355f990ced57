//===- tile_dialect.h - Op names and readers of the tile dialect ----------===//
#ifndef ATTN_TILE_DIALECT_H
#define ATTN_TILE_DIALECT_H

#include "dialects/dialects.h"

#define ATTN_OP_TILE_PROGRAM_ID "tile.program_id"
#define ATTN_OP_TILE_ALLOC "tile.alloc"
#define ATTN_OP_TILE_FILL "tile.fill"
#define ATTN_OP_TILE_LOAD "tile.load"
#define ATTN_OP_TILE_STORE "tile.store"
#define ATTN_OP_TILE_ROPE "tile.rope"
#define ATTN_OP_TILE_MMA "tile.mma"
#define ATTN_OP_TILE_ROPE_POSITIONS "tile.rope_positions"
#define ATTN_OP_TILE_MASK "tile.mask"
#define ATTN_OP_TILE_SCORE_MOD "tile.score_mod"
#define ATTN_OP_TILE_SCORE_FN "tile.score_fn"
#define ATTN_OP_TILE_MASK_FN "tile.mask_fn"
#define ATTN_OP_TILE_SOFTMAX_UPDATE "tile.softmax_update"
#define ATTN_OP_TILE_NORMALIZE "tile.normalize"
#define ATTN_OP_TILE_ROW_LSE "tile.row_lse"
#define ATTN_OP_TILE_ROW_DOT "tile.row_dot"
#define ATTN_OP_TILE_EXP_LSE "tile.exp_lse"
#define ATTN_OP_TILE_DS "tile.ds"
#define ATTN_OP_TILE_SCORE_FN_GRAD "tile.score_fn_grad"
#define ATTN_OP_TILE_CLEAR "tile.clear"
#define ATTN_OP_TILE_CAPTURE_GRAD "tile.capture_grad"

/// Attributes on a func.func that is a tile kernel.
#define ATTN_TILE_KERNEL_ATTR "tile.kernel"   // unit: this func is a kernel
#define ATTN_TILE_GRID_ATTR "tile.grid"       // array<i64: x, y, z> CTAs
#define ATTN_TILE_THREADS_ATTR "tile.threads" // i64: threads per CTA
#define ATTN_TILE_ARG_NAMES_ATTR "tile.arg_names" // array of strings
#define ATTN_TILE_MATMUL_ATTR "tile.matmul"   // dictionary: a GEMM kernel
#define ATTN_TILE_DECODE_ATTR "tile.decode"   // dictionary: a decode kernel
/// The module attribute where attn-tile records launch programs (array of
/// {name, inputs, workspace, steps}); lower-tile-to-hopper moves them into
/// the gpu.module's attn.programs, the CPU manifest lists them.
#define ATTN_TILE_PROGRAMS_ATTR "tile.programs"

/// A tile kernel's launch shape, read from its function attributes.
struct attn_tile_launch {
  int64_t grid[3];
  int64_t threads;
};

/// Reads the launch shape of a tile kernel function. Returns false, with an
/// error at func, when the attributes are missing or out of range.
bool attn_tile_get_launch(MlirOperation func, struct attn_tile_launch *out);

/// True when func is a func.func marked as a tile kernel.
bool attn_tile_is_kernel(MlirOperation func);

/// What a GEMM kernel computes (tile.matmul = {m, n, k, block_m, block_n,
/// block_k : i64, accumulate : bool} on a kernel attn-tile made from a
/// linalg.matmul): c[m, n] = (accumulate ? c : 0) + a[m, k] * b[k, n], with
/// output tiles of block_m x block_n and K steps of block_k.
struct attn_tile_matmul {
  int64_t m, n, k;
  int64_t block_m, block_n, block_k;
  bool accumulate;
};

/// Reads the tile.matmul of a kernel function. Returns false (no diagnostic)
/// when it is absent or malformed: a missing key, a size below 1, or
/// accumulate not a boolean.
bool attn_tile_get_matmul(MlirOperation func, struct attn_tile_matmul *out);

/// True when func's tile.matmul fuses a collective (a `comm` entry, from
/// comm.fused_matmul): only lower-tile-to-hopper lowers such a kernel.
bool attn_tile_matmul_is_fused(MlirOperation func);

/// Emits the error of a lowering that cannot take a fused kernel and
/// returns false.
bool attn_tile_reject_fused(MlirOperation func, const char *pass);

/// What a tile.score_mod op applies, in order (ATTN_MOD_SCALE, _SOFTCAP or
/// _ALIBI of enum attn_score_mod from attn_dialect.h; the gate is a
/// tile.score_fn body), with the parameters of each modifier.
struct attn_tile_score_mods {
  int n;
  int mods[3];
  double scale, softcap, alibi; ///< alibi: max_bias
  int64_t heads;                ///< query heads, for alibi slopes
};

/// Reads a tile.score_mod op. Returns false (no diagnostic) when its
/// attributes are missing or malformed; the verifier reports those.
bool attn_tile_score_mod_get(MlirOperation op,
                             struct attn_tile_score_mods *out);

/// Reads an optional boolean attribute of a tile op (tile.mma's
/// transpose_a, tile.rope's and tile.rope_positions' inverse): false when
/// it is absent (the verifier rejects one that is not a boolean).
bool attn_tile_flag(MlirOperation op, const char *name);

/// Reads tile.mask's optional window into *left, *right. Returns false when
/// there is none (or it is malformed).
bool attn_tile_mask_get_window(MlirOperation op, int64_t *left, int64_t *right);

#endif // ATTN_TILE_DIALECT_H
