//===- attention_schedule.c - The attention kernel's grid and schedule ---===//
//
// The Hopper attention kernel's grid and, for the persistent kernel, its
// schedule. A tile is one query block of one (batch, head); tile t is query
// block nq - 1 - t % nq of head (t / nq) % H and batch t / (nq H), so the
// query blocks of one head are neighbours (its K and V stay in L2), longest
// first (a causal kernel's query blocks end at its last row:
// attn_hopper_query_shift). The persistent kernel's CTAs each run a list of
// tiles, decided here because every size is known at compile time: the
// tiles in that order, each given to the CTA that frees first, costing its
// key blocks (attn_hopper_key_range: the diagonal and the window bound
// them) plus tile_overhead for the tile's own work (Q, the first Q.K^T and
// the last P.V that overlap nothing, the epilogue), as the hardware's block
// scheduler would place one CTA per tile. A static round-robin
// instead measured 2-13% slower than one CTA per tile on an H200: CTAs got
// unequal work. The kernel (attention_pipeline.c) reads the lists from the
// global @<name>__tiles, built here as an llvm.mlir.global.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/LLVM.h"

#include <stdio.h>
#include <stdlib.h>

int64_t attn_hopper_query_blocks(const struct attn_hopper_kernel *k) {
  return (k->seq_q + k->block_m - 1) / k->block_m;
}

int64_t attn_hopper_key_blocks(const struct attn_hopper_kernel *k) {
  return (k->seq_k + k->block_n - 1) / k->block_n;
}

int64_t attn_hopper_tiles(const struct attn_hopper_kernel *k) {
  return attn_hopper_query_blocks(k) * k->heads * k->batch;
}

int64_t attn_hopper_query_shift(const struct attn_hopper_kernel *k) {
  if (!k->causal)
    return 0;
  return (attn_hopper_query_blocks(k) * k->block_m - k->seq_q) / 64 * 64;
}

/// The affine masks' key blocks of the query block at q_row: all of them,
/// to the diagonal (causal) or the window's right edge, from the block of
/// the window's left edge.
static void affine_range(const struct attn_hopper_kernel *k, int64_t q_row,
                         int64_t *first, int64_t *last) {
  int64_t blocks = attn_hopper_key_blocks(k), bn = k->block_n;
  *first = 0;
  *last = blocks;
  int64_t end = q_row + k->block_m; // one past the block's last row
  if (k->causal && (end + bn - 1) / bn < *last)
    *last = (end + bn - 1) / bn;
  if (k->window && k->window_right >= 0 &&
      (end + k->window_right + bn - 1) / bn < *last)
    *last = (end + k->window_right + bn - 1) / bn;
  if (k->window && k->window_left >= 0) {
    int64_t lo = q_row - k->window_left;
    *first = (lo > 0 ? lo : 0) / bn;
    if (*first > *last - 1)
      *first = *last - 1;
  }
}

void attn_hopper_key_range(const struct attn_hopper_kernel *k, int64_t q_row,
                           int64_t *first, int64_t *last) {
  if (!k->key_blocks) {
    affine_range(k, q_row, first, last);
    return;
  }
  int64_t qb = (q_row + attn_hopper_query_shift(k)) / k->block_m;
  int64_t nq = attn_hopper_query_blocks(k);
  qb = qb < 0 ? 0 : qb >= nq ? nq - 1 : qb;
  *first = k->key_blocks[qb].first;
  *last = k->key_blocks[qb].last;
}

struct attn_key_blocks *
attn_hopper_key_table(const struct attn_hopper_kernel *k, int64_t shift) {
  if (k->nmask_fns <= 0)
    return NULL;
  int64_t nq = attn_hopper_query_blocks(k);
  struct attn_mask_program *p[ATTN_HOPPER_MAX_FNS];
  struct attn_key_blocks *t = calloc((size_t)nq, sizeof *t);
  int n = 0;
  for (; t && n < k->nmask_fns; ++n)
    p[n] = attn_mask_program_compile(k->mask_fns[n]); // NULL: cannot tell
  struct attn_mask_shape shape = {k->batch, k->heads, k->seq_q, k->seq_k,
                                  k->block_n};
  bool useful = false;
  for (int64_t qb = 0; t && qb < nq; ++qb) {
    int64_t q_row = qb * k->block_m - shift, first, last;
    affine_range(k, q_row, &first, &last);
    int64_t q0 = q_row < 0 ? 0 : q_row, q1 = q_row + k->block_m - 1;
    if (q1 > k->seq_q - 1)
      q1 = k->seq_q - 1;
    struct attn_key_blocks r = {first, last, first, first};
    if (q0 <= q1)
      attn_mask_key_blocks((const struct attn_mask_program *const *)p, n,
                           &shape, q0, q1, &r);
    // Within the affine bounds; never empty (one block, wholly masked).
    int64_t f = r.first > first ? r.first : first;
    int64_t l = r.last < last ? r.last : last;
    if (f >= l) {
      f = r.first < first ? first : r.first > last - 1 ? last - 1 : r.first;
      l = f + 1;
    }
    int64_t ff = r.full_first > f ? r.full_first : f;
    int64_t fl = r.full_last < l ? r.full_last : l;
    if (ff >= fl)
      ff = fl = f;
    t[qb] = (struct attn_key_blocks){f, l, ff, fl};
    useful = useful || f != first || l != last || ff < fl;
  }
  for (int i = 0; i < n; ++i)
    attn_mask_program_free(p[i]);
  if (!useful) {
    free(t);
    return NULL;
  }
  return t;
}

/// Key blocks of query block qb.
static int64_t key_blocks(const struct attn_hopper_kernel *k, int64_t qb) {
  int64_t first, last;
  attn_hopper_key_range(k, qb * k->block_m - attn_hopper_query_shift(k),
                        &first, &last);
  return last - first;
}

/// Restores the min-heap of (finish time, CTA) below slot i.
static void sift_down(int64_t *fin, int32_t *cta, int64_t n, int64_t i) {
  for (;;) {
    int64_t m = i, l = 2 * i + 1, r = l + 1;
    if (l < n && (fin[l] < fin[m] || (fin[l] == fin[m] && cta[l] < cta[m])))
      m = l;
    if (r < n && (fin[r] < fin[m] || (fin[r] == fin[m] && cta[r] < cta[m])))
      m = r;
    if (m == i)
      return;
    int64_t f = fin[i];
    fin[i] = fin[m];
    fin[m] = f;
    int32_t c = cta[i];
    cta[i] = cta[m];
    cta[m] = c;
    i = m;
  }
}

/// The persistent kernel's schedule for g CTAs and t tiles: see the file
/// comment. Returns g + 1 offsets then the t tile indices, CTA c's being
/// [g + 1 + off[c], g + 1 + off[c + 1]); NULL when out of memory.
static int32_t *schedule(const struct attn_hopper_kernel *k, int64_t g,
                         int64_t t) {
  int64_t nq = attn_hopper_query_blocks(k);
  int64_t *fin = calloc((size_t)g, sizeof *fin);
  int32_t *cta = malloc((size_t)g * sizeof *cta);
  int32_t *owner = malloc((size_t)t * sizeof *owner);
  int32_t *out = calloc((size_t)(g + 1 + t), sizeof *out);
  if (!fin || !cta || !owner || !out) {
    free(fin), free(cta), free(owner), free(out);
    return NULL;
  }
  for (int64_t c = 0; c < g; ++c)
    cta[c] = (int32_t)c;
  for (int64_t i = 0; i < t; ++i) {
    owner[i] = cta[0];
    fin[0] += key_blocks(k, nq - 1 - i % nq) + k->tile_overhead;
    sift_down(fin, cta, g, 0);
  }
  for (int64_t i = 0; i < t; ++i)
    ++out[owner[i] + 1];
  for (int64_t c = 0; c < g; ++c)
    out[c + 1] += out[c];
  int32_t *next = cta; // reused: the next free slot of each CTA
  for (int64_t c = 0; c < g; ++c)
    next[c] = out[c];
  for (int64_t i = 0; i < t; ++i)
    out[g + 1 + next[owner[i]]++] = (int32_t)i;
  free(fin), free(cta), free(owner);
  return out;
}

/// The global constant `name` of n i32 values in global memory.
static MlirOperation i32_global(struct attn_builder *b, const char *name,
                                int64_t n, const int32_t *vals) {
  MlirType tensor = mlirRankedTensorTypeGet(1, &n, b->t.i32,
                                            mlirAttributeGetNull());
  MlirAttribute value = mlirDenseElementsAttrInt32Get(tensor, n, vals);
  // The attributes the parser gives `llvm.mlir.global internal constant`.
  MlirNamedAttribute a[] = {
      attn_b_named(b, "sym_name", attn_b_attr_str(b, name)),
      attn_b_named(b, "global_type",
                   attn_b_attr_type(b, mlirLLVMArrayTypeGet(b->t.i32,
                                                            (unsigned)n))),
      attn_b_named(b, "constant", attn_b_attr_unit(b)),
      attn_b_named(b, "linkage", mlirLLVMLinkageAttrGet(
                                     b->ctx, MlirLLVMLinkageInternal)),
      attn_b_named(b, "value", value),
      attn_b_named(b, "addr_space", attn_b_attr_i32(b, 1)),
      attn_b_named(b, "visibility_", attn_b_attr_i64(b, 0)),
      attn_b_named(b, "unnamed_addr", attn_b_attr_i64(b, 0)),
  };
  return attn_b_op(b, "llvm.mlir.global", 0, NULL, 0, NULL,
                   (intptr_t)(sizeof a / sizeof a[0]), a, 1);
}

MlirOperation attn_k_att_schedule(struct attn_builder *b,
                                  const struct attn_hopper_kernel *k) {
  int64_t grid[3], t = attn_hopper_tiles(k);
  attn_hopper_grid(k, grid);
  int32_t *s = schedule(k, grid[0], t);
  if (!s) {
    char what[320];
    snprintf(what, sizeof what, "out of memory scheduling '%s'", k->name);
    attn_builder_fail(b, what);
    return (MlirOperation){NULL};
  }
  char name[320];
  snprintf(name, sizeof name, "%s__tiles", k->name);
  MlirOperation g = i32_global(b, name, grid[0] + 1 + t, s);
  free(s);
  return g;
}

MlirOperation attn_k_att_key_table(struct attn_builder *b,
                                   const struct attn_hopper_kernel *k) {
  int64_t nq = attn_hopper_query_blocks(k);
  int32_t *v = malloc(sizeof *v * (size_t)(4 * nq));
  if (!v) {
    char what[320];
    snprintf(what, sizeof what, "out of memory tabling '%s'", k->name);
    attn_builder_fail(b, what);
    return (MlirOperation){NULL};
  }
  for (int64_t qb = 0; qb < nq; ++qb) {
    v[4 * qb] = (int32_t)k->key_blocks[qb].first;
    v[4 * qb + 1] = (int32_t)k->key_blocks[qb].last;
    v[4 * qb + 2] = (int32_t)k->key_blocks[qb].full_first;
    v[4 * qb + 3] = (int32_t)k->key_blocks[qb].full_last;
  }
  char name[320];
  snprintf(name, sizeof name, "%s__keys", k->name);
  MlirOperation g = i32_global(b, name, 4 * nq, v);
  free(v);
  return g;
}

void attn_hopper_grid(const struct attn_hopper_kernel *k, int64_t grid[3]) {
  int64_t tiles = attn_hopper_tiles(k);
  if (k->persistent_ctas) {
    grid[0] = tiles < k->persistent_ctas ? tiles : k->persistent_ctas;
    grid[1] = grid[2] = 1;
    return;
  }
  grid[0] = attn_hopper_query_blocks(k);
  grid[1] = k->heads;
  grid[2] = k->batch;
}
