//===- staged_rows.c - Output rows staged through shared memory, built ----===//
//
// The staged epilogues of the Hopper GEMM and attention kernels
// (kernels_internal.h's "Staged output rows"): a consumer warpgroup writes
// its 64 output rows into shared memory, and its threads 0-63 each hand one
// row to the bulk-copy engine (cp.async.bulk), then go on while the rows are
// written. The same ops, in the same order, as the text vocabulary's
// attn_ptx_rows_* wrote (lib/Transforms/hopper_ptx.c, until issue 26).
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include <stdio.h>

int64_t attn_k_rows_pitch(int64_t bytes) { return bytes + 16; }

/// Opens the copying threads' region: scf.if wt < 64.
static void if_copier(struct attn_builder *b, const struct attn_k_rows *r,
                      struct attn_b_if *s) {
  attn_b_if_open(b, s, attn_k_cmpc(b, ATTN_B_ULT, r->wt, 64), 0, NULL, false);
}

void attn_k_rows_drain(struct attn_builder *b, const struct attn_k_rows *r,
                       enum attn_k_drain how, bool meet) {
  struct attn_b_if s;
  if_copier(b, r, &s);
  attn_k_bulk_wait(b, 0, how == ATTN_K_DRAIN_READ);
  if (how == ATTN_K_DRAIN_PUBLISHED)
    attn_k_fence_proxy_async(b, true);
  attn_b_if_close(b, &s, 0, NULL);
  if (meet)
    attn_k_bar_sync(b, r->bar, 128);
}

void attn_k_rows_put(struct attn_builder *b, bool bf16,
                     const struct attn_k_rows *r, const MlirValue *acc, int n,
                     const MlirValue *scale) {
  MlirValue warp = attn_k_divc(b, r->wt, 32), lane = attn_k_remc(b, r->wt, 32);
  MlirValue row =
      attn_b_addi(b, attn_k_mulc(b, warp, 16), attn_k_divc(b, lane, 4));
  MlirValue base = attn_b_addi(
      b, r->base,
      attn_b_addi(b, attn_k_mulc(b, row, r->pitch),
                  attn_k_mulc(b, attn_k_remc(b, lane, 4), 4)));
  // Register i + 2 h (i % 4 < 2) is row + 8 h, 16-byte chunk i / 4.
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < n; i += 4) {
      MlirValue lo = acc[i + 2 * h], hi = acc[i + 2 * h + 1];
      if (scale) {
        hi = attn_b_mulf(b, hi, scale[h]);
        lo = attn_b_mulf(b, lo, scale[h]);
      }
      MlirValue w = attn_k_pack2(b, bf16, lo, hi);
      // Inline PTX, as the text had it: a 32-bit shared address (an
      // llvm.store through !llvm.ptr<3> takes a 64-bit one here).
      attn_k_asm_rr(b, "st.shared.b32 [$0], $1;",
                    attn_k_addc(b, base, 8 * h * r->pitch + 4LL * i), w);
    }
}

void attn_k_rows_ready(struct attn_builder *b, const struct attn_k_rows *r) {
  attn_k_fence_proxy_async(b, false);
  attn_k_bar_sync(b, r->bar, 128);
}

void attn_k_rows_copy_open(struct attn_builder *b, const struct attn_k_rows *r,
                           struct attn_b_if *s) {
  if_copier(b, r, s);
}

/// The shared address (i32) of this thread's row.
static MlirValue own_row(struct attn_builder *b, const struct attn_k_rows *r) {
  return attn_b_addi(b, r->base, attn_k_mulc(b, r->wt, r->pitch));
}

void attn_k_rows_copy(struct attn_builder *b, const struct attn_k_rows *r,
                      MlirValue dst, MlirValue bytes) {
  attn_k_bulk_copy_out(b, dst, own_row(b, r), bytes);
}

void attn_k_rows_copy_n(struct attn_builder *b, const struct attn_k_rows *r,
                        MlirValue dst, int64_t n) {
  attn_k_bulk_copy_out(b, dst, own_row(b, r), attn_b_i32(b, n));
}

void attn_k_rows_copy_close(struct attn_builder *b, struct attn_b_if *s) {
  attn_k_bulk_commit(b);
  attn_b_if_close(b, s, 0, NULL);
}
