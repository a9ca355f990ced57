//===- decode_common.h - What the decode kernel's files share ------------===//
//
// Internal to lib/Kernels/decode*.c (the decode kernel of kernels.h):
//
//   decode_common.c the rows of a CTA (which query head and row, position,
//                   key bounds, ALiBi's slope), q's loads and RoPE, a key's
//                   row in the cache, a score's modifiers and masks, the
//                   kernels' parameters and manifest dictionary
//   decode_lanes.c  the lanes body: 8 columns of a key row a lane, FMAs and
//                   a butterfly per key and row
//   decode_mma.c    the tensor-core body: 16 keys a warp step by mma.sync
//   decode_append.c the append kernel: the new tokens' K (rotated) and V
//                   written into the caches
//   decode.c        the split kernel (either body, then the warps' merge and
//                   the stores) and the combine kernel, assembled
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_KERNELS_DECODE_COMMON_H
#define ATTN_KERNELS_DECODE_COMMON_H

#include "lib/Kernels/kernels_internal.h"

#define NW (ATTN_DECODE_THREADS / 32)
#define KEY_STEPS ATTN_DECODE_KEY_STEPS
#define RMAX ATTN_DECODE_MAX_ROWS
#define LANES_RMAX ATTN_DECODE_LANES_MAX_ROWS
#define MMA_KEYS ATTN_DECODE_MMA_KEYS
/// Shared memory: per warp and row (max, sum), then per warp and row the
/// O of every column (f32); row r of warp w at w * rows_per_cta + r; after
/// them a kv_stages ring.
#define ML_BYTES (NW * RMAX * 8)

/// One query row of a CTA: whether it is one of the group's, its query
/// head and row, its position, the keys [lo, hi) it sees, ALiBi's slope.
struct drow {
  MlirValue ok, h, i, pos, lo, hi, slope;
};

/// What the split kernel's helpers share.
struct dec {
  struct attn_builder *b;
  const struct attn_decode_kernel *k;
  int lpk, kpw;  // lanes per key row, keys per warp step
  int rb;        // rows of this CTA
  MlirValue q, kc, vc, lens, table, out; // parameters (out: or partials)
  MlirValue tid, lane, warp, ks, dp;     // i32
  MlirValue split, g, rg, bi;            // i32
  MlirValue len, start, end;             // i32
  struct drow row[RMAX]; // lanes body: the CTA's rows; mma: the thread's two
  MlirValue qv[RMAX][8];  // lanes body: q at the lane's columns
  MlirValue qb[16][2];    // mma: q^T's B fragments, two words a k-chunk
  bool folded;   // scale (and log2 e) folded into q
  MlirValue ninf, zero;
};

static inline MlirValue c32(struct dec *e, int64_t v) { return attn_b_i32(e->b, v); }
static inline MlirValue f32c(struct dec *e, double v) {
  return attn_b_f32(e->b, (float)v);
}
static inline MlirValue smin(struct dec *e, MlirValue x, MlirValue y) {
  return attn_b_binary(e->b, "arith.minsi", x, y);
}
static inline MlirValue smax(struct dec *e, MlirValue x, MlirValue y) {
  return attn_b_binary(e->b, "arith.maxsi", x, y);
}
static inline MlirValue i64v(struct dec *e, MlirValue x) {
  return attn_b_cast(e->b, "arith.extsi", x, e->b->t.i64);
}
static inline MlirType elem16(struct dec *e) { return e->b->t.i16; }

/// m, or 0 where it is -inf (so that 2^(x - m) of -inf rows stays 0).
static inline MlirValue usable_max(struct dec *e, MlirValue m) {
  return attn_b_select(e->b, attn_b_cmpf(e->b, ATTN_B_F_OEQ, m, e->ninf),
                       e->zero, m);
}

static inline MlirValue smem_at(struct dec *e, MlirValue smem, MlirValue byte_off) {
  return attn_k_smem_ptr(e->b, smem, byte_off);
}

/// Shared bytes of one kv_stages slot: every thread's 16-byte chunks of a
/// step's K and V (head_dim / 8 of them).
static inline int64_t slot_bytes(const struct attn_decode_kernel *k) {
  return (k->head_dim / 8) * ATTN_DECODE_THREADS * 16;
}

/// Shared bytes of the warps' states.
static inline int64_t states_bytes(const struct attn_decode_kernel *k) {
  return ML_BYTES + (int64_t)NW * k->rows_per_cta * k->head_dim * 4;
}

/// decode_common.c (beside kernels.h's attn_decode_group_rows and
/// attn_decode_row_groups): the 16 bytes at element offset off (i64) of the 16-bit tensor p,
/// as 8 f32 values.
void dk_load8(struct dec *e, MlirValue p, MlirValue off, MlirValue out[8]);
/// The same 16 bytes as four i32 words.
void dk_load4w(struct dec *e, MlirValue p, MlirValue off, MlirValue w[4]);
/// The launch parameter `name` of k's kernels: k_cache or v_cache (the
/// cache's shape: [B or P, Hk, M or page_size, D]), cache_seqlens,
/// block_table.
struct attn_k_param dk_cache_param(const struct attn_decode_kernel *k,
                                   const char *name);
/// The element offset (i64) of column 0 of key j (i32, < len) of K/V head g
/// in the cache (a paged cache through the block table); *valid, when
/// asked, whether its page is in [0, P) (else it is page 0's row; null
/// value for a contiguous cache).
MlirValue dk_key_row(struct dec *e, MlirValue j, MlirValue *valid);
/// RoPE as a kernel applies it: on, theta, rotary_dim, interleaved.
struct dk_rope {
  bool on, interleaved;
  double theta;
  int64_t rotary_dim;
};
/// The 16 bytes of the 16-bit tensor p at element offset base + col (base
/// i64, col i32 < the row's length), 8 f32 values rotated by r at position
/// pos (i32) where r is on (the partner columns loaded too).
void dk_load_rot8(struct dec *e, MlirValue p, MlirValue base, MlirValue col,
                  MlirValue pos, const struct dk_rope *r, MlirValue y[8]);
/// Row gr (i32) of the K/V head's group.
struct drow dk_row_info(struct dec *e, MlirValue gr);
/// q at w's row, 8 columns from col (i32), rotated where RoPE applies.
void dk_load_q8(struct dec *e, const struct drow *w, MlirValue col,
                MlirValue y[8]);
/// The score of row w for key j from its dot product: the modifiers not
/// folded into q, then log2 e; -inf where masked.
MlirValue dk_score(struct dec *e, const struct drow *w, MlirValue dot,
                   MlirValue j, MlirValue in_split);

/// decode_lanes.c: the CTA's rows and q; the key loop (state[r * 10 + 0] max, [1]
/// sum, [2 ..] O of the lane's 8 columns); the merge across the lanes of
/// other keys; the warp states into shared memory.
void dk_lanes_rows(struct dec *e);
void dk_lanes_key_loop(struct dec *e, MlirValue *out);
void dk_lanes_merge(struct dec *e, MlirValue *st);
void dk_lanes_store(struct dec *e, MlirValue *st);

/// decode_append.c: the append kernel @name of k (append_rows > 0).
bool dk_build_append(MlirOperation gm, MlirLocation loc,
                     const struct attn_decode_kernel *k, const char *name);
/// {llvm.noalias, llvm.<access>}, a kernel parameter's attributes.
MlirAttribute dk_param_attrs(struct attn_builder *b, const char *access);
/// The manifest's "decode" dictionary of k's kernels: what they compute
/// beside their parameters.
MlirAttribute dk_decode_info(struct attn_builder *b,
                             const struct attn_decode_kernel *k);

/// decode_mma.c: the thread's two rows and q^T's B fragments; the key loop
/// (state [4 mt ..] O^T's tile mt, then the two rows' max and sum); the
/// warp states into shared memory.
void dk_mma_rows(struct dec *e);
void dk_mma_key_loop(struct dec *e, MlirValue *out);
void dk_mma_store(struct dec *e, MlirValue *st);

#endif // ATTN_KERNELS_DECODE_COMMON_H
