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
#define ATTN_OP_TILE_MASK "tile.mask"
#define ATTN_OP_TILE_SOFTMAX_UPDATE "tile.softmax_update"
#define ATTN_OP_TILE_NORMALIZE "tile.normalize"

/// Attributes on a func.func that is a tile kernel.
#define ATTN_TILE_KERNEL_ATTR "tile.kernel"   // unit: this func is a kernel
#define ATTN_TILE_GRID_ATTR "tile.grid"       // array<i64: x, y, z> CTAs
#define ATTN_TILE_THREADS_ATTR "tile.threads" // i64: threads per CTA

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

#endif // ATTN_TILE_DIALECT_H
