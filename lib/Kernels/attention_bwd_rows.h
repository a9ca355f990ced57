//===- attention_bwd_rows.h - The Hopper backward's row kernels, shared ---===//
//
// attention_bwd.c builds the main kernel and the launch's four kernels in
// order; attention_bwd_rows.c the row kernels (__pre, __dq_out, __dk_out),
// the workspaces' sizes and the pieces both use.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_KERNELS_ATTENTION_BWD_ROWS_H
#define ATTN_KERNELS_ATTENTION_BWD_ROWS_H

#include "lib/Kernels/kernels_internal.h"

#define LOG2E 1.4426950408889634074

/// p (!llvm.ptr) plus off (i64) bytes.
static inline MlirValue at(struct attn_builder *b, MlirValue p, MlirValue off) {
  return attn_k_gep(b, p, off);
}

static inline MlirValue mul64(struct attn_builder *b, MlirValue x, int64_t c) {
  return attn_b_muli(b, attn_k_i64_of(b, x), attn_b_i64(b, c));
}

static inline MlirValue add64(struct attn_builder *b, MlirValue x,
                               MlirValue y) {
  return attn_b_addi(b, x, y);
}

/// Query blocks of each head (the turns of the deterministic mode).
static inline int64_t qblocks(const struct attn_hopper_bwd *g) {
  return attn_hopper_bwd_rows(g) / g->block_m;
}

/// Byte offset in rows of the turn of query block qb (i32) of head bh (i32).
static inline MlirValue turn_off(struct attn_builder *b,
                                 const struct attn_hopper_bwd *g, MlirValue bh,
                                 MlirValue qb) {
  int64_t base = 2 * 4 * g->k.batch * g->k.heads * attn_hopper_bwd_rows(g);
  return add64(b, attn_b_i64(b, base),
               mul64(b, attn_b_addi(b, attn_k_mulc(b, bh, qblocks(g)), qb), 4));
}

/// A pointer parameter of dtype with shape[0..rank) (rank 0: 4).
static inline struct attn_k_param ptr_param(const char *name,
                                            const char *dtype, int rank,
                                            int64_t s0, int64_t s1,
                                            int64_t s2, int64_t s3) {
  return (struct attn_k_param){.name = name, .dtype = dtype, .rank = rank,
                               .shape = {s0, s1, s2, s3}};
}

/// attention_bwd_rows.c (each documented there).
void attn_k_bwd_open_kernel(struct attn_builder *b, struct attn_b_func *f,
                            const struct attn_hopper_bwd *g,
                            const char *suffix, int nargs,
                            MlirAttribute arg_attrs, int threads,
                            MlirAttribute launch);
bool attn_k_bwd_build_pre_kernel(struct attn_builder *b,
                                 const struct attn_hopper_bwd *g);
/// Elements of gradient buffer i, and its manifest parameter.
int64_t attn_k_bwd_grad_elems(const struct attn_hopper_bwd *g, int i);
struct attn_k_param attn_k_bwd_grad_param(const struct attn_hopper_bwd *g,
                                          int i);
bool attn_k_bwd_build_out_kernel(struct attn_builder *b,
                                 const struct attn_hopper_bwd *g, bool dq);

#endif // ATTN_KERNELS_ATTENTION_BWD_ROWS_H
