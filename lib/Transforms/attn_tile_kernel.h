//===- attn_tile_kernel.h - attn-tile's kernels: shapes, builder, blocks -===//
//
// What attn_tile.c (the pass), attn_tile_kernel.c (a kernel's blocks: its
// signature, prologue, tiles, key range and loop, the modifier and mask
// bodies, the forward's epilogue) and attn_tile_grad.c (the backward's
// kernels, dkdv and dq) share: the kernel's shape (what attn.fused or
// attn.fused_grad computes, at which tile sizes), the kernel being built,
// and the blocks each file builds for the others.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_ATTN_TILE_KERNEL_H
#define ATTN_TRANSFORMS_ATTN_TILE_KERNEL_H

#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "lib/IR/attn_builder.h"

#include <stdbool.h>
#include <stdint.h>

/// The kernel's parameters by role: q, k, v, then attn.fused's optional
/// inputs (enum attn_fused_extra + 3), then the output and, with lse, the
/// row log-sum-exp. attn.fused_grad's kernels take out, lse and dout as
/// inputs and write dq or dk and dv. ROLE_CAPTURE marks a function argument
/// read only by the score_fn / mask_fn bodies.
enum {
  ROLE_Q,
  ROLE_K,
  ROLE_V,
  ROLE_EXTRA0,
  ROLE_OUT = 3 + ATTN_NUM_EXTRAS,
  ROLE_LSE,
  ROLE_DOUT,
  ROLE_DQ,
  ROLE_DK,
  ROLE_DV,
  ROLE_CAPTURE
};

/// What a kernel computes: the forward, or one part of the backward.
enum kernel_part { PART_FORWARD, PART_DKDV, PART_DQ };

/// Function arguments attn-tile takes (q, k, v, the optional inputs and
/// the tensors the bodies capture).
#define MAX_ARGS 64

struct kernel_shape {
  int64_t q[4], k[4], v[4];
  struct attn_fused_config cfg;
  long bm, bn, threads;
  int nargs;                     // function arguments (q, k, v, inputs)
  int arg_role[MAX_ARGS];        // role of function argument i
  MlirType arg_type[MAX_ARGS];   // tensor type of function argument i
  MlirType role_type[ROLE_CAPTURE]; // tensor type of each present role
  bool grad;                     // attn.fused_grad (else attn.fused)
  enum kernel_part part;         // the kernel being built
  MlirBlock score_fn, mask_fn;   // attn.fused's bodies (null when empty)
  MlirBlock func_body;           // the function's entry block
  // attn.fused_grad's gradients into captured tensors ("grads"): what
  // each is (ATTN_GRAD_GATE or a capture's index), its function argument
  // and its type.
  int ngrads;
  int grad_target[ATTN_MAX_GRADS];
  int grad_arg[ATTN_MAX_GRADS];
  MlirType grad_type[ATTN_MAX_GRADS];
};

/// The tiles: q, k, v, scores, the accumulator (o; dq in the dq kernel, dk
/// in the dkdv kernel), then the backward's: the raw scores kept for the
/// chain's derivative, dP (then dS), dO, O and the dv accumulator.
enum { T_Q, T_K, T_V, T_S, T_ACC, T_SIN, T_DP, T_DO, T_O, T_DV, NUM_TILES };

/// One kernel being built: its shape, the builder, and the values the
/// blocks share (the parameters by role, the grid position, the tiles).
struct kernel {
  const struct kernel_shape *s;
  struct attn_builder b;
  MlirValue arg[ROLE_CAPTURE];
  MlirValue fn_arg[MAX_ARGS]; // the kernel argument of function argument i
  MlirValue c0, c1, bm, bn;
  MlirValue batch, head, kv_head, row; // the CTA's (b, h), K/V head, row 0
  MlirValue tile[NUM_TILES], m, l;     // the tiles; row max, sum
  MlirValue lse, d;                    // row vectors: lse; D = rowsum(dO O)
  MlirType tile_ty[NUM_TILES], row_ty;
  MlirType ct; // the compute type: f64 for f64 programs, else f32
  MlirValue grad[ATTN_MAX_GRADS]; // the gradient buffers (kernel args)
  MlirValue pid[2];               // the backward's program ids 0 and 1
  MlirValue gate_at[4];           // the indices gate_value read last
};

/// attn.fused's bodies being cloned into tile.score_fn / tile.mask_fn: a
/// captured tensor (a function argument) becomes the kernel's memref
/// argument, and tensor.extract of it a memref.load at clamped indices.
struct body_clone {
  struct kernel *k;
  MlirBlock src;     // the body being cloned
  int64_t bound[5];  // its arguments' ranges: b < B, h < H, q < N, kv < M
  MlirOperation seed; // a read whose clamped indices to keep (or null)
  MlirValue seed_idx[8];
  int seed_n;         // how many seed_idx holds (0: seed not cloned yet)
};

//===-- attn_tile_kernel.c: the blocks (each documented there) ----------===//

bool attn_tk_has_role(const struct kernel_shape *s, int role);
MlirValue attn_tk_kconst(struct kernel *k, double v);
bool attn_tk_scale_folds(const struct kernel_shape *s);
void attn_tk_grad_name(const struct kernel_shape *s, int i, char name[24]);
void attn_tk_arg_names(const struct kernel_shape *s, const char **names,
                       char captures[][24]);
void attn_tk_build_signature(struct kernel *k, struct attn_b_func *f,
                             const char *name);
void attn_tk_build_prologue(struct kernel *k);
void attn_tk_build_rope(struct kernel *k, MlirValue tile, MlirValue pos,
                        bool keys);
void attn_tk_build_load(struct kernel *k, int role, int tile, MlirValue head,
                        MlirValue pos);
void attn_tk_build_query_tile(struct kernel *k);
void attn_tk_build_key_range(struct kernel *k, MlirValue *lo, MlirValue *hi);
bool attn_tk_clone_extract(struct attn_builder *b, MlirOperation op,
                           struct attn_b_map *m, void *user);
void attn_tk_end_body(struct attn_builder *b, MlirValue y, MlirBlock block,
                      MlirOperation anchor);
MlirValue attn_tk_softcap_value(struct kernel *k, MlirValue x, MlirValue *th);
MlirValue attn_tk_alibi_value(struct kernel *k, MlirBlock body, MlirValue x);
MlirValue attn_tk_gate_value(struct kernel *k, MlirBlock body, MlirValue x);
void attn_tk_build_score_mods(struct kernel *k, MlirValue col);
void attn_tk_build_masks(struct kernel *k, MlirValue col);
void attn_tk_build_kv_tiles(struct kernel *k, MlirValue col);
void attn_tk_build_key_loop(struct kernel *k, MlirValue lo, MlirValue hi);
void attn_tk_build_epilogue(struct kernel *k, struct attn_b_func *f);

//===-- attn_tile_grad.c: the backward's kernels ------------------------===//

void attn_tk_build_grad_prologue(struct kernel *k, MlirValue *col);
void attn_tk_build_dkdv(struct kernel *k, MlirValue col);
void attn_tk_build_dq(struct kernel *k);

#endif // ATTN_TRANSFORMS_ATTN_TILE_KERNEL_H
