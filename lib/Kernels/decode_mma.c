//===- decode_mma.c - The decode kernel's tensor-core body ----------------===//
//
// With several rows a CTA (GQA groups, speculative rows) the lanes body
// spends 8 FMAs and a 4-step butterfly per key and row; here each warp
// takes 16 keys a step and mma.sync m16n8k16 does the arithmetic, with the
// rows as the tile's n (8) so that no accumulator is padding:
//
// - S^T (16 keys x 8 rows) = K q^T: K is the A operand straight from its
//   16-byte loads (lane l loads keys l/4 and l/4 + 8, columns 32 i + 8 (l%4)
//   .. + 7), q^T the B operand from q's rows loaded the same way (row l/4);
//   the dot product does not care in which order the columns are summed,
//   so the columns of each k-chunk are the ones the loads give.
// - The online softmax on S^T's fragment: lane l holds keys l/4 and l/4 +
//   8 of rows 2 (l%4) and the next; a row's max over the 16 keys is three
//   shuffles across the lanes of the same l%4.
// - P^T as the B operand of O^T += V^T P^T: the two 8x8 halves of S^T's
//   fragment transposed by movmatrix. V^T is the A operand: lane l loads
//   keys 2 (l%4), +1, +8, +9 at columns 64 r + 8 (l/4) .. + 7, and two
//   keys' 16-bit words of a column are paired by byte permutes; the output
//   columns of O^T's tiles are a permutation that the epilogue undoes.
// - Keys past the split's end are clamped to its last key for the loads
//   (never an unwritten row: 0 times NaN would poison the tile) and masked.
//   A split starts on a multiple of 16 keys, so a paged cache (pages of at
//   least 16) needs one block-table entry per warp step.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/decode_common.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/// The thread's rows (2 (lane % 4) and the next) and q^T's B fragments of
/// row lane / 4 (zero past the CTA's rows).
void dk_mma_rows(struct dec *e) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  attn_builder_role(b, "decode.rows");
  e->folded = false;
  MlirValue q4 = attn_k_andc(b, e->lane, 3), gq = attn_k_divc(b, e->lane, 4);
  MlirValue base = attn_k_mulc(b, e->rg, e->rb);
  for (int x = 0; x < 2; ++x) {
    MlirValue r = attn_k_addc(b, attn_k_mulc(b, q4, 2), x);
    e->row[x] = dk_row_info(e, attn_b_addi(b, base, r));
    e->row[x].ok = attn_b_andi(b, e->row[x].ok, attn_k_cmpc(b, ATTN_B_ULT, r, e->rb));
  }
  struct drow qr = dk_row_info(e, attn_b_addi(b, base, gq));
  MlirValue live = attn_b_andi(b, qr.ok, attn_k_cmpc(b, ATTN_B_ULT, gq, e->rb));
  MlirValue zero_w = c32(e, 0);
  for (int64_t i = 0; i < k->head_dim / 32; ++i) {
    MlirValue y[8];
    dk_load_q8(e, &qr, attn_k_addc(b, attn_k_mulc(b, q4, 8), 32 * i), y);
    attn_builder_role(b, "decode.rows");
    for (int c2 = 0; c2 < 2; ++c2)
      for (int h = 0; h < 2; ++h) {
        MlirValue w = attn_k_pack2(b, k->bf16, y[4 * c2 + 2 * h], y[4 * c2 + 2 * h + 1]);
        e->qb[2 * i + c2][h] = attn_b_select(b, live, w, zero_w);
      }
  }
}

/// lo: the low 16-bit halves of x and y as one word (x's low); else the
/// high halves.
static MlirValue pair_halves(struct dec *e, MlirValue x, MlirValue y, bool lo) {
  struct attn_builder *b = e->b;
  if (lo)
    return attn_b_ori(b, attn_b_andi(b, x, c32(e, 0xffff)),
                      attn_b_binary(b, "arith.shli", y, c32(e, 16)));
  return attn_b_ori(b, attn_b_binary(b, "arith.shrui", x, c32(e, 16)),
                    attn_b_andi(b, y, c32(e, (int32_t)0xffff0000u)));
}

/// The shared address (i32) of this thread's chunk 0 in slot (i32), after
/// the warps' states.
static MlirValue slot_addr(struct dec *e, MlirValue slot) {
  struct attn_builder *b = e->b;
  MlirValue smem = attn_k_addressof(b, "attn_smem", b->t.ptr_shared);
  MlirValue base = attn_k_ptrtoint(b, smem, b->t.i32);
  MlirValue off = attn_b_addi(b, attn_k_mulc(b, slot, slot_bytes(e->k)),
                              attn_k_addc(b, attn_k_mulc(b, e->tid, 16),
                                          states_bytes(e->k)));
  return attn_b_addi(b, base, off);
}

/// The step's K at keys kb + lane / 4 and + 8 (kw[s][i]: columns 32 i + 8
/// (lane % 4) .. + 7 of key kb + lane / 4 + 8 s) or V at keys kb + 2
/// (lane % 4), +1, +8, +9 (vw[x][r]: columns 64 r + 8 (lane / 4) .. + 7),
/// each clamped to last (>= 0), their page that of min(kb, last).
static void load_kv_mma(struct dec *e, MlirValue kb, MlirValue last, bool v,
                        MlirValue w[4][4][4], MlirValue dst) {
  struct attn_builder *b = e->b;
  int64_t d = e->k->head_dim;
  MlirValue q4 = attn_k_andc(b, e->lane, 3), gq = attn_k_divc(b, e->lane, 4);
  MlirValue pb = smin(e, kb, last);
  MlirValue rowb = dk_key_row(e, pb, NULL);
  for (int x = 0; x < (v ? 4 : 2); ++x) {
    MlirValue j = v ? attn_b_addi(b, kb, attn_k_addc(b, attn_k_mulc(b, q4, 2),
                                                     (x & 1) + 8 * (x >> 1)))
                    : attn_b_addi(b, kb, attn_k_addc(b, gq, 8 * x));
    MlirValue kk = attn_b_subi(b, smin(e, j, last), pb);
    MlirValue col = v ? attn_k_mulc(b, gq, 8) : attn_k_mulc(b, q4, 8);
    MlirValue off = attn_b_addi(
        b, rowb, i64v(e, attn_b_addi(b, attn_k_mulc(b, kk, d), col)));
    int64_t stride = v ? 64 : 32;
    for (int64_t r = 0; r < d / stride; ++r) {
      MlirValue at = attn_b_addi(b, off, attn_b_i64(b, stride * r));
      if (mlirValueIsNull(dst)) {
        dk_load4w(e, v ? e->vc : e->kc, at, w[x][r]);
        continue;
      }
      // kv_stages: 16 bytes by cp.async into the thread's chunk c of the
      // slot at dst (chunk c of every thread together: no bank conflicts).
      int64_t c = v ? 2 * (d / 32) + x * (d / 64) + r : x * (d / 32) + r;
      MlirValue src = attn_k_ptrtoint(
          b, attn_k_gep_elem(b, v ? e->vc : e->kc, at, elem16(e)), b->t.i64);
      attn_k_cp_async16(b, attn_k_addc(b, dst, c * ATTN_DECODE_THREADS * 16), src,
                        c32(e, 16));
    }
  }
}

/// kv_stages: the step's K and V (as load_kv_mma's) from the slot whose
/// chunk 0 of this thread is at the shared address at (i32).
static void read_kv_slot(struct dec *e, MlirValue at, MlirValue kw[4][4][4],
                         MlirValue vw[4][4][4]) {
  struct attn_builder *b = e->b;
  int64_t d = e->k->head_dim;
  MlirValue smem = attn_k_addressof(b, "attn_smem", b->t.ptr_shared);
  MlirValue base = attn_k_ptrtoint(b, smem, b->t.i32);
  for (int v = 0; v < 2; ++v)
    for (int x = 0; x < (v ? 4 : 2); ++x) {
      int64_t stride = v ? 64 : 32;
      for (int64_t r = 0; r < d / stride; ++r) {
        int64_t c = v ? 2 * (d / 32) + x * (d / 64) + r : x * (d / 32) + r;
        MlirValue off = attn_b_subi(
            b, attn_k_addc(b, at, c * ATTN_DECODE_THREADS * 16), base);
        MlirValue vec = attn_k_gemm_load_vec(b, smem_at(e, smem, off), 4,
                                             b->t.i32, 16);
        for (int y = 0; y < 4; ++y) {
          MlirValue opd[2] = {vec, attn_b_i32(b, y)};
          (v ? vw : kw)[x][r][y] =
              attn_b_op1(b, "llvm.extractelement", b->t.i32, 2, opd, 0, NULL);
        }
      }
    }
}

/// The key loop of the tensor-core body: state [4 mt ..] O^T's tile mt,
/// then the two rows' max and (this lane's part of) sum, then with
/// kv_prefetch the next step's K (loaded before this step's arithmetic).
void dk_mma_key_loop(struct dec *e, MlirValue *out) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  int64_t d = k->head_dim, mt_n = d / 16, kwn = 2 * (d / 32) * 4;
  int ns0 = (int)(4 * mt_n + 4);
  int ns = ns0 + (k->kv_prefetch ? (int)kwn : 0);
  MlirValue init[4 * 8 + 4 + 32];
  for (int i = 0; i < ns0; ++i)
    init[i] = e->zero;
  init[4 * mt_n] = init[4 * mt_n + 1] = e->ninf;
  attn_builder_role(b, "decode.key_loop");
  MlirValue step0 = attn_k_mulc(b, e->warp, MMA_KEYS);
  MlirValue kw[4][4][4], vw[4][4][4];
  if (k->kv_prefetch) {
    // The first step's K (clamped to key 0 of an empty split: a row that
    // exists, never used).
    MlirValue last0 = smax(e, attn_k_addc(b, e->end, -1), c32(e, 0));
    load_kv_mma(e, attn_b_addi(b, e->start, step0), last0, false, kw,
                (MlirValue){NULL});
    for (int s = 0, n = 0; s < 2; ++s)
      for (int64_t i = 0; i < d / 32; ++i)
        for (int x = 0; x < 4; ++x)
          init[ns0 + n++] = kw[s][i][x];
  }
  if (k->kv_stages > 1) {
    // The first stages - 1 steps in flight (clamped as above).
    MlirValue last0 = smax(e, attn_k_addc(b, e->end, -1), c32(e, 0));
    for (int64_t sl = 0; sl + 1 < k->kv_stages; ++sl) {
      MlirValue kb0 = attn_b_addi(b, e->start, attn_k_addc(b, step0, sl * NW * MMA_KEYS));
      load_kv_mma(e, kb0, last0, false, kw, slot_addr(e, c32(e, sl)));
      load_kv_mma(e, kb0, last0, true, vw, slot_addr(e, c32(e, sl)));
      attn_k_cp_async_commit(b);
    }
  }
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, attn_k_to_index(b, e->start),
                  attn_k_to_index(b, e->end), attn_b_index(b, NW * MMA_KEYS), ns,
                  init);
  MlirValue kb = attn_b_addi(b, attn_k_from_index(b, loop.iv), step0);
  MlirValue last = attn_k_addc(b, e->end, -1);
  MlirValue kj[2];
  MlirValue gq = attn_k_divc(b, e->lane, 4);
  for (int s = 0; s < 2; ++s)
    kj[s] = attn_b_addi(b, kb, attn_k_addc(b, gq, 8 * s));
  MlirValue y[4 * 8 + 4 + 32];
  if (k->kv_prefetch) {
    for (int s = 0, n = 0; s < 2; ++s)
      for (int64_t i = 0; i < d / 32; ++i)
        for (int x = 0; x < 4; ++x)
          kw[s][i][x] = loop.args[ns0 + n++];
    load_kv_mma(e, kb, last, true, vw, (MlirValue){NULL});
    MlirValue kn[4][4][4];
    load_kv_mma(e, attn_k_addc(b, kb, NW * MMA_KEYS), last, false, kn,
                (MlirValue){NULL});
    for (int s = 0, n = 0; s < 2; ++s)
      for (int64_t i = 0; i < d / 32; ++i)
        for (int x = 0; x < 4; ++x)
          y[ns0 + n++] = kn[s][i][x];
  } else if (k->kv_stages > 1) {
    // Step i + stages - 1 into its slot, then step i's (landed: at most
    // stages - 1 groups in flight) out of its slot. The slot written was
    // read in the previous step, whose mma had those registers before this
    // step's copies issue.
    int64_t n = k->kv_stages;
    MlirValue it = attn_k_divc(b, attn_b_subi(b, attn_k_from_index(b, loop.iv), e->start),
                               NW * MMA_KEYS);
    MlirValue wslot = attn_k_remc(b, attn_k_addc(b, it, n - 1), n);
    MlirValue rslot = attn_k_remc(b, it, n);
    load_kv_mma(e, attn_k_addc(b, kb, (n - 1) * NW * MMA_KEYS), last, false, kw,
                slot_addr(e, wslot));
    load_kv_mma(e, attn_k_addc(b, kb, (n - 1) * NW * MMA_KEYS), last, true, vw,
                slot_addr(e, wslot));
    attn_k_cp_async_commit(b);
    attn_k_cp_async_wait(b, (int)n - 1);
    read_kv_slot(e, slot_addr(e, rslot), kw, vw);
  } else {
    load_kv_mma(e, kb, last, false, kw, (MlirValue){NULL});
    load_kv_mma(e, kb, last, true, vw, (MlirValue){NULL});
  }
  attn_builder_role(b, "decode.softmax");
  // S^T in two chains of k-chunks (even, odd), summed: half the latency of
  // one chain of d / 16 dependent mma.
  MlirValue c[2][4];
  for (int h = 0; h < 2; ++h)
    for (int x = 0; x < 4; ++x)
      c[h][x] = e->zero;
  for (int64_t kc = 0; kc < d / 16; ++kc) {
    int64_t i = kc / 2, c2 = kc % 2;
    MlirValue a[4] = {kw[0][i][2 * c2], kw[1][i][2 * c2], kw[0][i][2 * c2 + 1],
                      kw[1][i][2 * c2 + 1]};
    attn_k_mma16816(b, k->bf16, c[c2], a, e->qb[kc][0], e->qb[kc][1]);
  }
  MlirValue sc[4];
  for (int x = 0; x < 4; ++x)
    sc[x] = attn_b_addf(b, c[0][x], c[1][x]);
  MlirValue corr[2], pw[2][2];
  for (int x = 0; x < 2; ++x) {
    MlirValue st[2];
    for (int s = 0; s < 2; ++s)
      st[s] = dk_score(e, &e->row[x], sc[2 * s + x], kj[s],
                    attn_b_cmpi(b, ATTN_B_SLT, kj[s], e->end));
    MlirValue mc = attn_b_maxnumf(b, st[0], st[1]);
    for (int o = 4; o < 32; o <<= 1)
      mc = attn_b_maxnumf(b, mc, attn_k_shfl_xor(b, mc, o));
    MlirValue m = loop.args[4 * mt_n + x], l = loop.args[4 * mt_n + 2 + x];
    MlirValue mnew = attn_b_maxnumf(b, m, mc);
    MlirValue mu = usable_max(e, mnew);
    corr[x] = attn_k_ex2(b, attn_b_subf(b, m, mu));
    MlirValue p0 = attn_k_ex2(b, attn_b_subf(b, st[0], mu));
    MlirValue p1 = attn_k_ex2(b, attn_b_subf(b, st[1], mu));
    y[4 * mt_n + x] = mnew;
    y[4 * mt_n + 2 + x] = attn_b_addf(b, attn_b_mulf(b, l, corr[x]), attn_b_addf(b, p0, p1));
    pw[x][0] = p0;
    pw[x][1] = p1;
  }
  // P^T's B fragment: keys 2 (lane % 4), +1 (b0b1) and +8, +9 (b2b3) of
  // row lane / 4, from S^T's fragment (key lane / 4, rows 2 (lane % 4), +1).
  MlirValue pb01 = attn_k_movmatrix_t(b, attn_k_pack2(b, k->bf16, pw[0][0], pw[1][0]));
  MlirValue pb23 = attn_k_movmatrix_t(b, attn_k_pack2(b, k->bf16, pw[0][1], pw[1][1]));
  for (int64_t mt = 0; mt < mt_n; ++mt) {
    int64_t r = mt / 4, w = mt % 4;
    MlirValue a[4] = {
        pair_halves(e, vw[0][r][w], vw[1][r][w], true),
        pair_halves(e, vw[0][r][w], vw[1][r][w], false),
        pair_halves(e, vw[2][r][w], vw[3][r][w], true),
        pair_halves(e, vw[2][r][w], vw[3][r][w], false),
    };
    MlirValue o[4];
    for (int x = 0; x < 4; ++x)
      o[x] = attn_b_mulf(b, loop.args[4 * mt + x], corr[x & 1]);
    attn_k_mma16816(b, k->bf16, o, a, pb01, pb23);
    for (int x = 0; x < 4; ++x)
      y[4 * mt + x] = o[x];
  }
  attn_b_for_close(b, &loop, ns, y);
  if (k->kv_stages > 1)
    attn_k_cp_async_wait(b, 0); // the copies past the end, before the exit
  for (int i = 0; i < ns0; ++i)
    out[i] = loop.results[i];
}

/// The tensor-core body's warp states into shared memory: each row's sum
/// across the lanes of its keys, O^T's tiles back in column order.
void dk_mma_store(struct dec *e, MlirValue *st) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  int64_t d = k->head_dim, mt_n = d / 16;
  attn_builder_role(b, "decode.epilogue");
  MlirValue smem = attn_k_addressof(b, "attn_smem", b->t.ptr_shared);
  MlirValue q4 = attn_k_andc(b, e->lane, 3), gq = attn_k_divc(b, e->lane, 4);
  MlirValue l[2];
  for (int x = 0; x < 2; ++x) {
    l[x] = st[4 * mt_n + 2 + x];
    for (int o = 4; o < 32; o <<= 1)
      l[x] = attn_b_addf(b, l[x], attn_k_shfl_xor(b, l[x], o));
  }
  for (int x = 0; x < 2; ++x) {
    MlirValue r = attn_k_addc(b, attn_k_mulc(b, q4, 2), x);
    struct attn_b_if in;
    attn_b_if_open(b, &in, attn_k_cmpc(b, ATTN_B_ULT, r, e->rb), 0, NULL, false);
    MlirValue wr = attn_b_addi(b, attn_k_mulc(b, e->warp, e->rb), r);
    for (int64_t rr = 0; rr < d / 64; ++rr) {
      // Columns 64 rr + 8 (lane / 4) + 2 w (O^T tile 4 rr + w, its first
      // m-slot) and the next (its second).
      MlirValue v[8];
      for (int w = 0; w < 4; ++w) {
        v[2 * w] = st[4 * (4 * rr + w) + x];
        v[2 * w + 1] = st[4 * (4 * rr + w) + 2 + x];
      }
      MlirValue col = attn_k_addc(b, attn_k_mulc(b, gq, 8), 64 * rr);
      MlirValue ob = attn_k_addc(
          b, attn_k_mulc(b, attn_b_addi(b, attn_k_mulc(b, wr, d), col), 4), ML_BYTES);
      attn_k_store_vec(b, &v[0], 4, smem_at(e, smem, ob));
      attn_k_store_vec(b, &v[4], 4, smem_at(e, smem, attn_k_addc(b, ob, 16)));
    }
    struct attn_b_if l0;
    attn_b_if_open(b, &l0, attn_k_cmpc(b, ATTN_B_EQ, gq, 0), 0, NULL, false);
    MlirValue mo = attn_k_mulc(b, wr, 8);
    attn_k_store(b, st[4 * mt_n + x], smem_at(e, smem, mo));
    attn_k_store(b, l[x], smem_at(e, smem, attn_k_addc(b, mo, 4)));
    attn_b_if_close(b, &l0, 0, NULL);
    attn_b_if_close(b, &in, 0, NULL);
  }
}

