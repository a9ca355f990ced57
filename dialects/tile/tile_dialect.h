//===- tile_dialect.h - Op names, readers and builders of the tile dialect ===//
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
#define ATTN_OP_TILE_DOCUMENT_MASK "tile.document_mask"
#define ATTN_OP_TILE_SCORE_MOD "tile.score_mod"
#define ATTN_OP_TILE_SOFTMAX_UPDATE "tile.softmax_update"
#define ATTN_OP_TILE_NORMALIZE "tile.normalize"

/// Attributes on a func.func that is a tile kernel.
#define ATTN_TILE_KERNEL_ATTR "tile.kernel"   // unit: this func is a kernel
#define ATTN_TILE_GRID_ATTR "tile.grid"       // array<i64: x, y, z> CTAs
#define ATTN_TILE_THREADS_ATTR "tile.threads" // i64: threads per CTA
#define ATTN_TILE_ARG_NAMES_ATTR "tile.arg_names" // array of strings
#define ATTN_TILE_MATMUL_ATTR "tile.matmul"   // dictionary: a GEMM kernel

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

/// What a tile.score_mod op applies, in order (enum attn_score_mod from
/// attn_dialect.h), with the parameters of each modifier.
struct attn_tile_score_mods {
  int n;
  int mods[4];
  double scale, softcap, alibi; ///< alibi: max_bias
  int64_t heads;                ///< query heads, for alibi slopes
  int64_t gate_block;
};

/// Reads a tile.score_mod op. Returns false (no diagnostic) when its
/// attributes are missing or malformed; the verifier reports those.
bool attn_tile_score_mod_get(MlirOperation op,
                             struct attn_tile_score_mods *out);

/// Reads tile.mask's optional window into *left, *right. Returns false when
/// there is none (or it is malformed).
bool attn_tile_mask_get_window(MlirOperation op, int64_t *left, int64_t *right);

//===-- Builders ----------------------------------------------------------===//
//
// IRDL gives the tile ops no generated builders; these make one op each at
// the insertion point and location of b (lib/IR/attn_builder.h), with the
// attributes the C verifier above reads. A null operand, or an op MLIR
// refuses, marks b failed with a diagnostic (see attn_builder_finish); the
// value builders then return a null value.

struct attn_builder;

/// tile.program_id {dim}: this CTA's index along grid dimension dim.
MlirValue attn_tile_build_program_id(struct attn_builder *b, int64_t dim);

/// tile.alloc: a CTA-local tile of type tile (a static f32 memref).
MlirValue attn_tile_build_alloc(struct attn_builder *b, MlirType tile);

/// tile.fill {value : f32}: sets every element of tile to value.
void attn_tile_build_fill(struct attn_builder *b, MlirValue tile, double value);

/// tile.load(source, tile, idx[0..n)): copies part of source into tile.
void attn_tile_build_load(struct attn_builder *b, MlirValue source,
                          MlirValue tile, intptr_t n, const MlirValue *idx);

/// tile.store(tile, dest, idx[0..n)): copies tile into part of dest.
void attn_tile_build_store(struct attn_builder *b, MlirValue tile,
                           MlirValue dest, intptr_t n, const MlirValue *idx);

/// tile.rope(tile, pos) {theta, rotary_dim, layout, offset}: rotates tile,
/// whose row 0 is position offset + pos ("offset" is left out when 0).
void attn_tile_build_rope(struct attn_builder *b, MlirValue tile,
                          MlirValue pos, double theta, int64_t rotary_dim,
                          const char *layout, int64_t offset);

/// tile.rope_positions(tile, batch, row, positions) {theta, rotary_dim,
/// layout}: rotates tile at the positions positions[batch, row + r].
void attn_tile_build_rope_positions(struct attn_builder *b, MlirValue tile,
                                    MlirValue batch, MlirValue row,
                                    MlirValue positions, double theta,
                                    int64_t rotary_dim, const char *layout);

/// tile.mma(a, b, c) {transpose_b, accumulate}: c (+)= a * b or a * b^T.
void attn_tile_build_mma(struct attn_builder *b, MlirValue a, MlirValue bt,
                         MlirValue c, bool transpose_b, bool accumulate);

/// tile.mask(scores, row, col) {causal, kv_len, window}: window (left,
/// right) is left out when NULL.
void attn_tile_build_mask(struct attn_builder *b, MlirValue scores,
                          MlirValue row, MlirValue col, bool causal,
                          int64_t kv_len, const int64_t *window);

/// tile.document_mask(scores, batch, row, col, q_segments, k_segments).
void attn_tile_build_document_mask(struct attn_builder *b, MlirValue scores,
                                   MlirValue batch, MlirValue row,
                                   MlirValue col, MlirValue q_segments,
                                   MlirValue k_segments);

/// tile.score_mod(scores, batch, head, row, col[, gate]) applying mods in
/// order, with the attributes of each modifier named (scale; softcap;
/// alibi and heads; gate_block, whose gate must then not be null).
void attn_tile_build_score_mod(struct attn_builder *b, MlirValue scores,
                               MlirValue batch, MlirValue head, MlirValue row,
                               MlirValue col, MlirValue gate,
                               const struct attn_tile_score_mods *mods);

/// tile.softmax_update(scores, row_max, row_sum, acc) {scale : f64}.
void attn_tile_build_softmax_update(struct attn_builder *b, MlirValue scores,
                                    MlirValue row_max, MlirValue row_sum,
                                    MlirValue acc, double scale);

/// tile.normalize(acc, row_sum): acc[i, :] /= row_sum[i].
void attn_tile_build_normalize(struct attn_builder *b, MlirValue acc,
                               MlirValue row_sum);

#endif // ATTN_TILE_DIALECT_H
