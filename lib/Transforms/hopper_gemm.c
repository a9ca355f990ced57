//===- hopper_gemm.c - The persistent warp-specialised Hopper GEMM --------===//
//
// Writes the tile-level GEMM kernel of hopper_gemm.h for sm_90a as MLIR text
// (LLVM/NVVM dialects, scf/arith, inline PTX through hopper_ptx.c):
//
//   warpgroup 0 (producer)  thread 0 walks this CTA's tiles and, for each
//                           64-wide step of K, waits for a free slot of the
//                           ring ("empty"), then TMA-loads A (block_m x 64,
//                           one 128-byte-swizzled region) and B (64 x
//                           block_n, block_n/64 regions) completing on the
//                           slot's "full" mbarrier.
//   warpgroups 1, 2         block_m/2 rows each: per K step, wgmma
//   (consumers)             m64n<block_n>k16 x 4 from shared memory (B
//                           transposed: it is N-major), one group kept in
//                           flight, the previous slot released; then the
//                           epilogue: optional C read (accumulate), optional
//                           RoPE, one rounding, stores straight from
//                           registers, masked only on tail tiles.
//
// A CTA runs tiles bid, bid + ctas, ...; tile t maps to (tile row, tile
// column) in groups of group_m tile rows so that the CTAs running at once
// share A rows and B columns in L2.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/hopper_gemm.h"
#include "lib/Transforms/hopper_ptx.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define BLOCK_K 64
#define TWO_PI 6.283185307179586476925
#define PRODUCER_REGS 40
#define CONSUMER_REGS 232

struct gm {
  struct attn_ptx p;
  const struct attn_hopper_gemm *g;
  int nacc;               // accumulators per consumer thread: block_n / 2
  int64_t a_bytes;        // one A slot
  int64_t b_bytes;        // one B slot
  int64_t stage_bytes;    // A + B
  int64_t bar_off;        // full[stages], empty[stages]
  int64_t tiles_m, tiles_n, nk;
};

static void layout(struct gm *e) {
  const struct attn_hopper_gemm *g = e->g;
  e->a_bytes = (int64_t)g->block_m * BLOCK_K * 2;
  e->b_bytes = (int64_t)BLOCK_K * g->block_n * 2;
  e->stage_bytes = e->a_bytes + e->b_bytes;
  e->bar_off = e->stage_bytes * g->stages;
  e->tiles_m = (g->m + g->block_m - 1) / g->block_m;
  e->tiles_n = (g->n + g->block_n - 1) / g->block_n;
  e->nk = (g->k + BLOCK_K - 1) / BLOCK_K;
}

int64_t attn_hopper_gemm_tiles(const struct attn_hopper_gemm *g) {
  return ((g->m + g->block_m - 1) / g->block_m) *
         ((g->n + g->block_n - 1) / g->block_n);
}

int64_t attn_hopper_gemm_smem_bytes(const struct attn_hopper_gemm *g) {
  struct gm e = {.g = g};
  layout(&e);
  return e.bar_off + 16LL * g->stages + 1024;
}

void attn_hopper_gemm_defaults(struct attn_hopper_gemm *g, int gpu_sms) {
  if (!g->block_m)
    g->block_m = 128;
  if (!g->block_n)
    g->block_n = g->n <= 128 ? 128 : 256;
  if (!g->stages) {
    // As deep as 227 KiB allows, at most 6.
    int64_t stage = (int64_t)(g->block_m + g->block_n) * BLOCK_K * 2;
    g->stages = (int)((227 * 1024 - 2048) / stage);
    if (g->stages > 6)
      g->stages = 6;
  }
  if (!g->group_m)
    g->group_m = 16;
  if (!g->ctas) {
    // As many waves as 132 SMs need, then as few CTAs as keep that count:
    // 2048 tiles on 132 SMs is 16 waves either way, so 128 CTAs.
    int64_t tiles = attn_hopper_gemm_tiles(g);
    int64_t sms = gpu_sms > 0 ? gpu_sms : 132;
    int64_t waves = (tiles + sms - 1) / sms;
    g->ctas = (int)((tiles + waves - 1) / (waves ? waves : 1));
  }
}

bool attn_hopper_gemm_supported(const struct attn_hopper_gemm *g, char *why,
                                size_t why_len) {
  if (g->m <= 0 || g->n <= 0 || g->k <= 0) {
    snprintf(why, why_len, "the matrices must not be empty");
    return false;
  }
  if (g->k % 8 || g->n % 8) {
    snprintf(why, why_len,
             "k and n must be multiples of 8 (16-byte TMA row strides), "
             "found k = %lld, n = %lld",
             (long long)g->k, (long long)g->n);
    return false;
  }
  if (g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX ||
      (g->m * g->n) / g->n != g->m) {
    snprintf(why, why_len, "the matrices are too large for 32-bit indices");
    return false;
  }
  if (g->block_m != 128) {
    snprintf(why, why_len, "block-m must be 128, found %d", g->block_m);
    return false;
  }
  if (g->block_n < 64 || g->block_n > 256 || g->block_n % 64) {
    snprintf(why, why_len, "block-n must be 64, 128, 192 or 256, found %d",
             g->block_n);
    return false;
  }
  if (g->stages < 2 || attn_hopper_gemm_smem_bytes(g) > 227 * 1024) {
    snprintf(why, why_len,
             "%d stages of %dx%d tiles do not fit 227 KiB of shared memory "
             "(need at least 2)",
             g->stages, g->block_m, g->block_n);
    return false;
  }
  if (g->ctas < 1 || g->group_m < 1) {
    snprintf(why, why_len, "ctas and group-m must be positive");
    return false;
  }
  if (g->rope) {
    if (g->head_dim <= 0 || g->n % g->head_dim || g->head_dim % 16 ||
        g->block_n % g->head_dim) {
      snprintf(why, why_len,
               "RoPE in the epilogue needs a head dim that is a multiple of "
               "16 and divides block-n (%d) and n, found %lld",
               g->block_n, (long long)g->head_dim);
      return false;
    }
    if (g->rotary_dim <= 0 || g->rotary_dim > g->head_dim ||
        g->rotary_dim % 16 || g->seq_len <= 0) {
      snprintf(why, why_len,
               "RoPE in the epilogue needs a rotary dim that is a multiple "
               "of 16 up to the head dim and a positive sequence length");
      return false;
    }
  }
  return true;
}

//===-- Pieces ------------------------------------------------------------===//

static int bar_at(struct gm *e, int base, int s) {
  return attn_ptx_addi(&e->p, base, attn_ptx_mulc(&e->p, s, 8));
}

/// Slot and parity of the ring's block number kb (i32).
static int slot_of(struct gm *e, int kb, int *phase) {
  int s = attn_ptx_remc(&e->p, kb, e->g->stages);
  *phase = attn_ptx_op(&e->p, "arith.andi %%v%d, %%v%d : i32",
                       attn_ptx_divc(&e->p, kb, e->g->stages),
                       attn_ptx_ci32(&e->p, 1));
  return s;
}

/// Tile t (i32) -> tile row *tm and tile column *tn, grouped by group_m
/// tile rows.
static void tile_coords(struct gm *e, int t, int *tm, int *tn) {
  int64_t per_group = (int64_t)e->g->group_m * e->tiles_n;
  int group = attn_ptx_divc(&e->p, t, per_group);
  int first = attn_ptx_mulc(&e->p, group, e->g->group_m);
  int left = attn_ptx_op(&e->p, "arith.subi %%v%d, %%v%d : i32",
                         attn_ptx_ci32(&e->p, e->tiles_m), first);
  int size = attn_ptx_op(&e->p, "arith.minui %%v%d, %%v%d : i32", left,
                         attn_ptx_ci32(&e->p, e->g->group_m));
  int in = attn_ptx_remc(&e->p, t, per_group);
  *tm = attn_ptx_addi(&e->p, first,
                      attn_ptx_op(&e->p, "arith.remui %%v%d, %%v%d : i32", in,
                                  size));
  *tn = attn_ptx_op(&e->p, "arith.divui %%v%d, %%v%d : i32", in, size);
}

struct ids {
  int smem, sbase, tid, bid, a_map, b_map, c;
  int full, empty;     // i32 shared addresses of slot 0's mbarriers
  int ntiles;          // tiles this CTA runs (index)
};

/// Opens `scf.for %i = 0 to x->ntiles` and returns the tile (i32) and its
/// ordinal i (i32) in *ord.
static int open_tile_loop(struct gm *e, const struct ids *x, int *ord) {
  int lo = attn_ptx_cidx(&e->p, 0), st = attn_ptx_cidx(&e->p, 1);
  int it = e->p.next++;
  attn_ptx_line(&e->p, "scf.for %%v%d = %%v%d to %%v%d step %%v%d {", it, lo,
                x->ntiles, st);
  *ord = attn_ptx_from_index(&e->p, it);
  return attn_ptx_addi(&e->p, x->bid, attn_ptx_mulc(&e->p, *ord, e->g->ctas));
}

//===-- Producer ----------------------------------------------------------===//

static void producer(struct gm *e, const struct ids *x, int wt) {
  const struct attn_hopper_gemm *g = e->g;
  attn_ptx_line(&e->p, "scf.if %%v%d {", attn_ptx_cmpc(&e->p, "eq", wt, 0));
  int ord, t = open_tile_loop(e, x, &ord), tm, tn;
  tile_coords(e, t, &tm, &tn);
  int row = attn_ptx_mulc(&e->p, tm, g->block_m);
  int col = attn_ptx_mulc(&e->p, tn, g->block_n);
  int kb0 = attn_ptx_mulc(&e->p, ord, e->nk);
  int lo = attn_ptx_cidx(&e->p, 0), hi = attn_ptx_cidx(&e->p, e->nk),
      st = attn_ptx_cidx(&e->p, 1);
  int it = e->p.next++;
  attn_ptx_line(&e->p, "scf.for %%v%d = %%v%d to %%v%d step %%v%d {", it, lo,
                hi, st);
  int j = attn_ptx_from_index(&e->p, it), ph;
  int s = slot_of(e, attn_ptx_addi(&e->p, kb0, j), &ph);
  attn_ptx_mbar_wait(&e->p, bar_at(e, x->empty, s),
                     attn_ptx_op(&e->p, "arith.xori %%v%d, %%v%d : i32", ph,
                                 attn_ptx_ci32(&e->p, 1)));
  int full = bar_at(e, x->full, s);
  attn_ptx_mbar_expect_tx(&e->p, full, e->stage_bytes);
  int slot = attn_ptx_addi(&e->p, x->sbase,
                           attn_ptx_mulc(&e->p, s, e->stage_bytes));
  int kcol = attn_ptx_mulc(&e->p, j, BLOCK_K), zero = attn_ptx_ci32(&e->p, 0);
  int ca[4] = {kcol, row, zero, zero};
  attn_ptx_tma_load(&e->p, slot, x->a_map, ca, full);
  for (int r = 0; r < g->block_n / 64; ++r) {
    int cb[4] = {attn_ptx_addc(&e->p, col, 64 * r), kcol, zero, zero};
    attn_ptx_tma_load(
        &e->p, attn_ptx_addc(&e->p, slot, e->a_bytes + (int64_t)r * BLOCK_K * 128),
        x->b_map, cb, full);
  }
  attn_ptx_line(&e->p, "}");
  attn_ptx_line(&e->p, "}");
  attn_ptx_line(&e->p, "}");
}

//===-- Consumers ---------------------------------------------------------===//

/// Issues the four k16 steps of one K block for this consumer's 64 rows.
static void issue_block(struct gm *e, int slot, int cw, int *acc) {
  int a = attn_ptx_addi(&e->p, slot, attn_ptx_mulc(&e->p, cw, 64 * 128));
  int desc_a = attn_ptx_make_desc(&e->p, a, 16, 1024);
  int desc_b = attn_ptx_make_desc(&e->p, attn_ptx_addc(&e->p, slot, e->a_bytes),
                                  (long long)BLOCK_K * 128, 1024);
  int one = attn_ptx_ci32(&e->p, 1);
  attn_ptx_asm0(&e->p, "wgmma.fence.sync.aligned;");
  for (int kk = 0; kk < BLOCK_K / 16; ++kk)
    attn_ptx_wgmma_ss(&e->p, acc, e->nacc,
                      attn_ptx_desc_add(&e->p, desc_a, kk * 32),
                      attn_ptx_desc_add(&e->p, desc_b, (long long)kk * 16 * 128),
                      one, true);
  attn_ptx_asm0(&e->p, "wgmma.commit_group.sync.aligned;");
}

/// cos and sin of an f64 angle: reduced to [-pi, pi] in f64 (exact enough
/// for angles up to 2^24 rad), then the f32 approximations (absolute error
/// below 1e-6, far under a 16-bit output's rounding).
static void sincos_reduced(struct gm *e, int angle, int *c, int *s) {
  const char *t[] = {"f64"};
  int turns = attn_ptx_op(
      &e->p, "arith.mulf %%v%d, %%v%d : f64", angle,
      attn_ptx_op(&e->p, "arith.constant %.17e : f64", 1.0 / TWO_PI));
  int k = attn_ptx_asmv(&e->p, "f64", "=d,d", "cvt.rni.f64.f64 $0, $1;", 1,
                        &turns, t);
  int r = attn_ptx_op(
      &e->p, "arith.subf %%v%d, %%v%d : f64", angle,
      attn_ptx_op(&e->p, "arith.mulf %%v%d, %%v%d : f64", k,
                  attn_ptx_op(&e->p, "arith.constant %.17e : f64", TWO_PI)));
  int rf = attn_ptx_op(&e->p, "arith.truncf %%v%d : f64 to f32", r);
  const char *tf[] = {"f32"};
  *c = attn_ptx_asmv(&e->p, "f32", "=f,f", "cos.approx.ftz.f32 $0, $1;", 1,
                     &rf, tf);
  *s = attn_ptx_asmv(&e->p, "f32", "=f,f", "sin.approx.ftz.f32 $0, $1;", 1,
                     &rf, tf);
}

/// Rotates the accumulators in place. Register i holds column col0 +
/// 8 (i / 4) + (i & 1) of row rows[(i >> 1) & 1], col0 = tile column +
/// 2 (lane % 4). A tile holds whole heads (head_dim divides block_n and is
/// a multiple of 16), so chunk c's in-head column is 8c % head_dim + col0 %
/// 8, and both columns of every pair are in this thread's registers.
/// inv_freq(pair) = theta^(-2 pair / rotary_dim) splits into a per-thread
/// factor (of col0 % 8) and a constant per chunk.
static void rope_epilogue(struct gm *e, int *acc, int col0, const int rows[2]) {
  const struct attn_hopper_gemm *g = e->g;
  double cexp = -2.0 * log2(g->theta) / (double)g->rotary_dim;
  int lr2 = attn_ptx_remc(&e->p, col0, 8); // 2 * (lane % 4)
  // Pair index of the thread's first column: lr2 (rotate-half) or lr2 / 2.
  int tp = g->interleaved ? attn_ptx_divc(&e->p, lr2, 2) : lr2;
  int ft = attn_ptx_op(
      &e->p, "llvm.call @__nv_exp2(%%v%d) : (f64) -> f64",
      attn_ptx_op(&e->p, "arith.mulf %%v%d, %%v%d : f64",
                  attn_ptx_op(&e->p, "arith.uitofp %%v%d : i32 to f64", tp),
                  attn_ptx_op(&e->p, "arith.constant %.17e : f64", cexp)));
  int pos[2];
  for (int r = 0; r < 2; ++r)
    pos[r] = attn_ptx_op(
        &e->p, "arith.uitofp %%v%d : i32 to f64",
        attn_ptx_addc(&e->p, attn_ptx_remc(&e->p, rows[r], g->seq_len),
                      g->rope_offset));
  int half = (int)(g->rotary_dim / 2);
  for (int c = 0; c < g->block_n / 8; ++c) {
    int hc = (8 * c) % (int)g->head_dim;
    if (hc >= g->rotary_dim || (!g->interleaved && hc >= half))
      continue; // not rotated, or written with its partner chunk
    for (int b = 0; b < (g->interleaved ? 1 : 2); ++b) {
      int i1 = g->interleaved ? 4 * c : 4 * c + b;
      int i2 = g->interleaved ? 4 * c + 1 : 4 * (c + half / 8) + b;
      double pconst = g->interleaved ? hc / 2 : hc + b;
      int f = attn_ptx_op(
          &e->p, "arith.mulf %%v%d, %%v%d : f64", ft,
          attn_ptx_op(&e->p, "arith.constant %.17e : f64",
                      exp2(cexp * pconst)));
      for (int r = 0; r < 2; ++r) {
        int cs, sn;
        sincos_reduced(
            e, attn_ptx_op(&e->p, "arith.mulf %%v%d, %%v%d : f64", pos[r], f),
            &cs, &sn);
        int x1 = acc[i1 + 2 * r], x2 = acc[i2 + 2 * r];
        acc[i1 + 2 * r] = attn_ptx_fsub(&e->p, attn_ptx_fmul(&e->p, x1, cs),
                                        attn_ptx_fmul(&e->p, x2, sn));
        acc[i2 + 2 * r] = attn_ptx_fadd(&e->p, attn_ptx_fmul(&e->p, x2, cs),
                                        attn_ptx_fmul(&e->p, x1, sn));
      }
    }
  }
}

/// Byte address of element (row, col) of C, i32 row and column.
static int c_addr(struct gm *e, const struct ids *x, int row, int col) {
  int rowb = attn_ptx_op(
      &e->p, "arith.muli %%v%d, %%v%d : i64",
      attn_ptx_op(&e->p, "arith.extui %%v%d : i32 to i64", row),
      attn_ptx_ci64(&e->p, e->g->n * 2));
  int colb = attn_ptx_op(&e->p, "arith.extui %%v%d : i32 to i64",
                         attn_ptx_mulc(&e->p, col, 2));
  return attn_ptx_op(
      &e->p,
      "llvm.getelementptr %%v%d[%%v%d] : (!llvm.ptr, i64) -> !llvm.ptr, i8",
      x->c, attn_ptx_op(&e->p, "arith.addi %%v%d, %%v%d : i64", rowb, colb));
}

/// Writes (and with accumulate, first reads) this thread's part of the
/// tile: register i holds row row0 + 8 ((i >> 1) & 1) and column col0 +
/// 8 (i / 4) + (i & 1).
static void epilogue(struct gm *e, const struct ids *x, int *acc, int tm,
                     int tn, int cw, int wt) {
  const struct attn_hopper_gemm *g = e->g;
  int warp = attn_ptx_divc(&e->p, wt, 32), lane = attn_ptx_remc(&e->p, wt, 32);
  int row0 = attn_ptx_addi(
      &e->p, attn_ptx_mulc(&e->p, tm, g->block_m),
      attn_ptx_addi(&e->p, attn_ptx_mulc(&e->p, cw, 64),
                    attn_ptx_addi(&e->p, attn_ptx_mulc(&e->p, warp, 16),
                                  attn_ptx_divc(&e->p, lane, 4))));
  int col0 = attn_ptx_addi(&e->p, attn_ptx_mulc(&e->p, tn, g->block_n),
                           attn_ptx_mulc(&e->p, attn_ptx_remc(&e->p, lane, 4), 2));
  int rows[2] = {row0, attn_ptx_addc(&e->p, row0, 8)};
  bool tail_m = g->m % g->block_m != 0, tail_n = g->n % g->block_n != 0;
  int chunks = g->block_n / 8;
  if (g->accumulate) {
    // Read C first (RoPE rotates the whole sum); rows and columns past the
    // end read element (0, 0) instead, and are not stored.
    int zero = attn_ptx_ci32(&e->p, 0);
    for (int r = 0; r < 2; ++r) {
      int row = tail_m ? attn_ptx_sel(&e->p,
                                      attn_ptx_cmpc(&e->p, "ult", rows[r], g->m),
                                      rows[r], zero, "i32")
                       : rows[r];
      for (int c = 0; c < chunks; ++c) {
        int col = attn_ptx_addc(&e->p, col0, 8 * c);
        if (tail_n)
          col = attn_ptx_sel(&e->p, attn_ptx_cmpc(&e->p, "ult", col, g->n), col,
                             zero, "i32");
        int w = attn_ptx_op(&e->p, "llvm.load %%v%d : !llvm.ptr -> i32",
                            c_addr(e, x, row, col));
        int lo, hi;
        attn_ptx_unpack2(&e->p, w, &lo, &hi);
        acc[4 * c + 2 * r] = attn_ptx_fadd(&e->p, acc[4 * c + 2 * r], lo);
        acc[4 * c + 2 * r + 1] =
            attn_ptx_fadd(&e->p, acc[4 * c + 2 * r + 1], hi);
      }
    }
  }
  if (g->rope)
    rope_epilogue(e, acc, col0, rows);
  for (int r = 0; r < 2; ++r) {
    if (tail_m)
      attn_ptx_line(&e->p, "scf.if %%v%d {",
                    attn_ptx_cmpc(&e->p, "ult", rows[r], g->m));
    for (int c = 0; c < chunks; ++c) {
      int col = attn_ptx_addc(&e->p, col0, 8 * c);
      if (tail_n)
        attn_ptx_line(&e->p, "scf.if %%v%d {",
                      attn_ptx_cmpc(&e->p, "ult", col, g->n));
      int w = attn_ptx_pack2(&e->p, acc[4 * c + 2 * r], acc[4 * c + 2 * r + 1]);
      attn_ptx_line(&e->p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr", w,
                    c_addr(e, x, rows[r], col));
      if (tail_n)
        attn_ptx_line(&e->p, "}");
    }
    if (tail_m)
      attn_ptx_line(&e->p, "}");
  }
}

static void consumer(struct gm *e, const struct ids *x, int wg, int wt) {
  int n = e->nacc;
  int cw = attn_ptx_addc(&e->p, wg, -1);
  int ord, t = open_tile_loop(e, x, &ord), tm, tn;
  tile_coords(e, t, &tm, &tn);
  int kb0 = attn_ptx_mulc(&e->p, ord, e->nk);
  int zero = attn_ptx_cf32(&e->p, 0.0f);
  int acc[256];
  const char *tys[256];
  for (int i = 0; i < n; ++i) {
    acc[i] = zero;
    tys[i] = "f32";
  }
  // K block 0 outside the loop: every later step releases the slot before it.
  {
    int ph, s = slot_of(e, kb0, &ph);
    attn_ptx_mbar_wait(&e->p, bar_at(e, x->full, s), ph);
    issue_block(e, attn_ptx_addi(&e->p, x->sbase,
                                 attn_ptx_mulc(&e->p, s, e->stage_bytes)),
                cw, acc);
  }
  int lo = attn_ptx_cidx(&e->p, 1), hi = attn_ptx_cidx(&e->p, e->nk),
      st = attn_ptx_cidx(&e->p, 1);
  int it = e->p.next++, res = e->p.next++;
  struct attn_strbuf hdr = {0};
  attn_strbuf_printf(&hdr,
                     "%%v%d:%d = scf.for %%v%d = %%v%d to %%v%d step %%v%d "
                     "iter_args(",
                     res, n, it, lo, hi, st);
  int arg[256];
  for (int i = 0; i < n; ++i) {
    arg[i] = e->p.next++;
    attn_strbuf_printf(&hdr, "%s%%v%d = %%v%d", i ? ", " : "", arg[i], acc[i]);
  }
  attn_strbuf_printf(&hdr, ") -> (");
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(&hdr, "%sf32", i ? ", " : "");
  attn_strbuf_printf(&hdr, ") {");
  attn_ptx_line(&e->p, "%s", hdr.buf);
  attn_strbuf_free(&hdr);
  {
    int a2[256];
    memcpy(a2, arg, sizeof(int) * (size_t)n);
    int kb = attn_ptx_addi(&e->p, kb0, attn_ptx_from_index(&e->p, it)), ph, php;
    int s = slot_of(e, kb, &ph);
    int sp = slot_of(e, attn_ptx_addc(&e->p, kb, -1), &php);
    attn_ptx_mbar_wait(&e->p, bar_at(e, x->full, s), ph);
    issue_block(e, attn_ptx_addi(&e->p, x->sbase,
                                 attn_ptx_mulc(&e->p, s, e->stage_bytes)),
                cw, a2);
    // The previous block's wgmmas are done once at most one group is left.
    attn_ptx_asm0(&e->p, "wgmma.wait_group.sync.aligned 1;");
    attn_ptx_mbar_arrive(&e->p, bar_at(e, x->empty, sp));
    attn_ptx_yield_list(&e->p, "scf.yield", a2, n, tys);
  }
  attn_ptx_line(&e->p, "}");
  int nz = attn_ptx_cf32(&e->p, -0.0f);
  for (int i = 0; i < n; ++i)
    acc[i] = attn_ptx_op(&e->p, "arith.addf %%v%d#%d, %%v%d : f32", res, i, nz);
  attn_ptx_asm0(&e->p, "wgmma.wait_group.sync.aligned 0;");
  attn_ptx_reg_fence(&e->p, acc, n, "f32", "f");
  {
    int ph, s = slot_of(e, attn_ptx_addc(&e->p, kb0, e->nk - 1), &ph);
    attn_ptx_mbar_arrive(&e->p, bar_at(e, x->empty, s));
  }
  epilogue(e, x, acc, tm, tn, cw, wt);
  attn_ptx_line(&e->p, "}");
}

//===-- The kernel --------------------------------------------------------===//

void attn_hopper_gemm_emit_aliases(struct attn_strbuf *b,
                                   const struct attn_hopper_gemm *g) {
  int n = g->block_n / 2;
  attn_strbuf_printf(b, "!acc_f32%d = !llvm.struct<(", n);
  for (int i = 0; i < n; ++i)
    attn_strbuf_printf(b, "%sf32", i ? ", " : "");
  attn_strbuf_printf(b, ")>\n");
}

static void emit_matrix(struct attn_strbuf *b, const char *name, const char *ty,
                        int64_t rows, int64_t cols) {
  attn_strbuf_printf(b,
                     "{name = \"%s\", kind = \"ptr\", dtype = \"%s\", shape = "
                     "array<i64: %lld, %lld>, align = 16 : i64}",
                     name, ty, (long long)rows, (long long)cols);
}

static void emit_map(struct attn_strbuf *b, const char *name,
                     const char *tensor, const char *ty, int64_t rows,
                     int64_t cols, int box_rows) {
  attn_strbuf_printf(
      b,
      "{name = \"%s\", kind = \"tensormap\", tensor = \"%s\", dtype = \"%s\", "
      "dims = array<i64: %lld, %lld, 1, 1>, box = array<i64: 64, %d, 1, 1>, "
      "swizzle = 128 : i64}",
      name, tensor, ty, (long long)cols, (long long)rows, box_rows);
}

void attn_hopper_gemm_emit_kernel(struct attn_strbuf *b,
                                  const struct attn_hopper_gemm *g,
                                  const char *matmul_attr) {
  struct gm e = {.g = g};
  attn_ptx_init(&e.p, b, g->bf16);
  e.nacc = g->block_n / 2;
  layout(&e);
  const char *ty = g->bf16 ? "bf16" : "f16";

  attn_strbuf_printf(b,
                     "llvm.func @%s(%%a: !llvm.ptr, %%b: !llvm.ptr, %%c: "
                     "!llvm.ptr",
                     g->name);
  static const char *maps[2] = {"a_map", "b_map"};
  for (int i = 0; i < 2; ++i)
    attn_strbuf_printf(b,
                       ", %%%s: !llvm.ptr {llvm.align = 64 : i64, llvm.byval "
                       "= !llvm.array<128 x i8>, nvvm.grid_constant}",
                       maps[i]);
  attn_strbuf_printf(
      b,
      ") attributes {nvvm.kernel, nvvm.maxntid = array<i32: %d, 1, 1>, "
      "nvvm.minctasm = 1 : i32, attn.launch = {grid = array<i32: %d, 1, 1>, "
      "block = array<i32: %d, 1, 1>, static_shared_bytes = 0 : i64, "
      "dynamic_shared_bytes = %lld : i64, kernel = \"hopper-gemm\", params = [",
      ATTN_HOPPER_GEMM_THREADS, g->ctas, ATTN_HOPPER_GEMM_THREADS,
      (long long)attn_hopper_gemm_smem_bytes(g));
  emit_matrix(b, "a", ty, g->m, g->k);
  attn_strbuf_printf(b, ", ");
  emit_matrix(b, "b", ty, g->k, g->n);
  attn_strbuf_printf(b, ", ");
  emit_matrix(b, "c", ty, g->m, g->n);
  attn_strbuf_printf(b, ", ");
  emit_map(b, "a_map", "a", ty, g->m, g->k, g->block_m);
  attn_strbuf_printf(b, ", ");
  emit_map(b, "b_map", "b", ty, g->k, g->n, BLOCK_K);
  attn_strbuf_printf(b, "]");
  if (matmul_attr)
    attn_strbuf_printf(b, ", matmul = %s", matmul_attr);
  attn_strbuf_printf(b, "}} {\n");

  struct ids x;
  x.tid = attn_ptx_op(&e.p, "nvvm.read.ptx.sreg.tid.x : i32");
  x.bid = attn_ptx_op(&e.p, "nvvm.read.ptx.sreg.ctaid.x : i32");
  int64_t tiles = e.tiles_m * e.tiles_n;
  // Tiles of this CTA: ceil((tiles - bid) / ctas).
  x.ntiles = attn_ptx_to_index(
      &e.p, attn_ptx_divc(&e.p,
                          attn_ptx_op(&e.p, "arith.subi %%v%d, %%v%d : i32",
                                      attn_ptx_ci32(&e.p, tiles + g->ctas - 1),
                                      x.bid),
                          g->ctas));
  int raw = attn_ptx_op(&e.p, "llvm.mlir.addressof @attn_smem : !llvm.ptr<3>");
  int raw_i =
      attn_ptx_op(&e.p, "llvm.ptrtoint %%v%d : !llvm.ptr<3> to i32", raw);
  int pad = attn_ptx_op(&e.p, "arith.subi %%v%d, %%v%d : i32",
                        attn_ptx_op(&e.p, "arith.andi %%v%d, %%v%d : i32",
                                    attn_ptx_addc(&e.p, raw_i, 1023),
                                    attn_ptx_ci32(&e.p, ~1023)),
                        raw_i);
  x.smem = attn_ptx_smem_ptr(&e.p, raw, pad);
  x.sbase = attn_ptx_addi(&e.p, raw_i, pad);
  x.a_map = attn_ptx_op(&e.p, "llvm.ptrtoint %%a_map : !llvm.ptr to i64");
  x.b_map = attn_ptx_op(&e.p, "llvm.ptrtoint %%b_map : !llvm.ptr to i64");
  x.c = attn_ptx_op(&e.p,
                    "llvm.getelementptr %%c[0] : (!llvm.ptr) -> !llvm.ptr, i8");
  x.full = attn_ptx_addc(&e.p, x.sbase, e.bar_off);
  x.empty = attn_ptx_addc(&e.p, x.full, 8LL * g->stages);

  attn_ptx_line(&e.p, "scf.if %%v%d {", attn_ptx_cmpc(&e.p, "eq", x.tid, 0));
  for (int s = 0; s < g->stages; ++s) {
    attn_ptx_mbar_init(&e.p, attn_ptx_addc(&e.p, x.full, 8 * s), 1);
    attn_ptx_mbar_init(&e.p, attn_ptx_addc(&e.p, x.empty, 8 * s), 256);
  }
  attn_ptx_asm0(&e.p, "fence.mbarrier_init.release.cluster;");
  attn_ptx_line(&e.p, "}");
  attn_ptx_asm0(&e.p, "bar.sync 0;");

  int wg = attn_ptx_divc(&e.p, x.tid, 128),
      wt = attn_ptx_remc(&e.p, x.tid, 128);
  attn_ptx_line(&e.p, "scf.if %%v%d {", attn_ptx_cmpc(&e.p, "eq", wg, 0));
  char text[96];
  snprintf(text, sizeof text, "setmaxnreg.dec.sync.aligned.u32 %d;",
           PRODUCER_REGS);
  attn_ptx_asm0(&e.p, text);
  producer(&e, &x, wt);
  attn_ptx_line(&e.p, "} else {");
  snprintf(text, sizeof text, "setmaxnreg.inc.sync.aligned.u32 %d;",
           CONSUMER_REGS);
  attn_ptx_asm0(&e.p, text);
  consumer(&e, &x, wg, wt);
  attn_ptx_line(&e.p, "}");
  attn_ptx_line(&e.p, "llvm.return");
  attn_strbuf_printf(b, "}\n");
}
