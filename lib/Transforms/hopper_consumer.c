//===- hopper_consumer.c - The Hopper attention kernel's consumers -------===//
//
// The consumer warpgroups of the attention kernel hopper_emit.c assembles
// (FlashAttention-3's schedule): each takes 64 query rows of the tile,
// rotates them (RoPE) unless the producer did, then per key block issues
// S = Q.K^T and the previous block's O += P.V back to back on the tensor
// cores, in turns with the other consumers (named barriers, a ring when
// there are three), and computes the block's mask and online softmax
// (hopper_softmax.c) while those run; the tile's last P.V and its epilogue
// (hopper_epilogue.c) end it. The state it shares with the producer is in
// hopper_attention.h.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/hopper_attention.h"

#include <math.h>
#include <string.h>

/// Whether those consumers take their first row's cos/sin from the
/// frequencies in turns (attn_hopper_rope_rows_turns, in f32) rather than
/// __nv_sinf and __nv_cosf: with rope_k_ahead, where it measured 1.4%
/// faster at N = 2K and level at 4K (bench/RESULTS.md); with split ptxas
/// spilled 4 bytes for it.
static bool q_turns(const struct attn_hopper_kernel *k) {
  return attn_hopper_stashes_rope(k) && k->rope_k_ahead;
}

/// The per-consumer values every block step needs (sm: what the softmax
/// needs, hopper_softmax.c).
struct cons {
  int cw, desc_q, nz;
  struct attn_hopper_softmax sm;
  int sched_me, sched_other; // named barrier ids (i32)
};

/// S = Q K_j^T for the stage's K tile (issued and committed, not waited).
/// With fence false the caller has issued wgmma.fence already.
static void issue_qk(struct attn_hopper_em *e, const struct cons *c, int kt,
                     int *sv, bool fence) {
  const struct attn_hopper_kernel *k = e->k;
  int desc_k = attn_ptx_make_desc(&e->p, kt, 16, 1024);
  // The first wgmma ignores its accumulators (scale-d = 0): feed it undefined
  // values, so nothing writes those registers inside the wgmma pipeline.
  int undef = attn_ptx_op(&e->p, "llvm.mlir.undef : f32");
  for (int i = 0; i < e->ns; ++i)
    sv[i] = undef;
  if (fence)
    attn_ptx_wgmma_fence(&e->p);
  for (int kk = 0; kk < k->head_dim / 16; ++kk) {
    long long region_q = (long long)(kk / 4) * k->block_m * 128;
    long long region_k = (long long)(kk / 4) * k->block_n * 128;
    attn_ptx_wgmma_ss(
        &e->p, sv, e->ns,
        attn_ptx_desc_add(&e->p, c->desc_q, region_q + (kk % 4) * 32),
        attn_ptx_desc_add(&e->p, desc_k, region_k + (kk % 4) * 32),
        attn_ptx_ci32(&e->p, kk ? 1 : 0), false);
  }
  attn_ptx_wgmma_commit(&e->p);
}

/// O += P V for the stage's V tile (issued and committed, not waited), and
/// with row_sum_mma l += P times ones (in ov[no..no+4), every column the
/// row's sum). The caller has fenced O and P (fence_acc, reg_fence) and
/// issued wgmma.fence.
static void issue_pv(struct attn_hopper_em *e, const struct attn_hopper_ids *x,
                     int vt, int *ov, int *a) {
  const struct attn_hopper_kernel *k = e->k;
  int desc_v = attn_ptx_make_desc(&e->p, vt, (long long)k->block_n * 128, 1024);
  for (int kk = 0; kk < k->block_n / 16; ++kk)
    attn_ptx_wgmma_rs(
        &e->p, ov, e->no, &a[4 * kk],
        attn_ptx_desc_add(&e->p, desc_v, (long long)kk * 16 * 128), true);
  if (k->row_sum_mma) {
    // Every 16 keys read the same 8 x 16 ones, K-major.
    int desc_1 = attn_ptx_make_desc(
        &e->p, attn_ptx_addc(&e->p, x->sbase, e->ones_off), 16, 1024);
    for (int kk = 0; kk < k->block_n / 16; ++kk)
      attn_ptx_wgmma_rs(&e->p, ov + e->no, 4, &a[4 * kk], desc_1, false);
  }
  attn_ptx_wgmma_commit(&e->p);
}

/// reg_fence of the accumulators the P V wgmma writes (O, and l with
/// row_sum_mma).
static void fence_acc(struct attn_hopper_em *e, int *ov) {
  attn_ptx_reg_fence(&e->p, ov, e->no, "f32", "f");
  if (e->na > e->no)
    attn_ptx_reg_fence(&e->p, ov + e->no, e->na - e->no, "f32", "f");
}

/// Packs probabilities to 16-bit pairs, the A registers of the P V wgmma.
/// Done only once the previous P V has completed, so that the new registers
/// never overwrite ones an in-flight wgmma still reads.
static void pack_p(struct attn_hopper_em *e, const int *p, int *a) {
  for (int i = 0; i < e->ns / 2; ++i)
    a[i] = attn_ptx_pack2(&e->p, p[2 * i], p[2 * i + 1]);
}

/// Stores (store) or loads this consumer thread's RoPE constants of r in its
/// ATTN_HOPPER_STASH_BYTES of the stash (see attn_hopper_stashes_rope): its
/// inverse frequencies, or with q_turns its frequencies in turns rounded to f32
/// (turns32_sincos in hopper_rope.c bounds what that costs the angle), then its
/// steps.
static void stash_rope(struct attn_hopper_em *e,
                       const struct attn_hopper_ids *x, int wg, int wt,
                       struct attn_hopper_rope_rows *r, bool store) {
  bool turns = q_turns(e->k);
  int *v[6] = {turns ? &r->turns0 : &r->f0,
               turns ? &r->turns1 : &r->f1,
               &r->step_c0,
               &r->step_s0,
               &r->step_c1,
               &r->step_s1};
  int slot = attn_ptx_addi(&e->p, attn_ptx_mulc(&e->p, wg, 128), wt);
  int base =
      attn_ptx_addc(&e->p, attn_ptx_mulc(&e->p, slot, ATTN_HOPPER_STASH_BYTES),
                    e->stash_off - 128 * ATTN_HOPPER_STASH_BYTES);
  for (int i = 0; i < 6; ++i) {
    int ptr =
        attn_ptx_smem_ptr(&e->p, x->smem, attn_ptx_addc(&e->p, base, 4 * i));
    if (store) {
      int w = turns && i < 2
                  ? attn_ptx_op(&e->p, "arith.truncf %%v%d : f64 to f32", *v[i])
                  : *v[i];
      attn_ptx_line(&e->p, "llvm.store %%v%d, %%v%d : f32, !llvm.ptr<3>", w,
                    ptr);
    } else {
      *v[i] = attn_ptx_op(&e->p, "llvm.load %%v%d : !llvm.ptr<3> -> f32", ptr);
    }
  }
  r->turns32 = turns && !store;
}

/// What the epilogue (hopper_epilogue.c) needs of consumer c's values.
static struct attn_hopper_out out_of(struct attn_hopper_em *e,
                                     const struct attn_hopper_ids *x,
                                     const struct cons *c, int wt) {
  return (struct attn_hopper_out){.out = x->out,
                                  .b = x->b,
                                  .h = x->h,
                                  .wg_row = c->sm.wg_row,
                                  .row0 = c->sm.row0,
                                  .lr = c->sm.lr,
                                  .cw = c->cw,
                                  .wt = wt,
                                  .sbase = x->sbase,
                                  .zero = c->sm.zero,
                                  .staging_off = e->staging_off,
                                  .pitch = e->pitch};
}

/// The end of a tile: the last block's P V (from the loop's results res),
/// l summed across the quad, O normalised and written.
static void finish_tile(struct attn_hopper_em *e,
                        const struct attn_hopper_ids *x, const struct cons *c,
                        int res, int wt) {
  const struct attn_hopper_kernel *k = e->k;
  int na = e->na, np = e->ns / 2;
  int ov[256], al[2], pa[128], lf[2];
  for (int i = 0; i < na; ++i)
    ov[i] =
        attn_ptx_op(&e->p, "arith.addf %%v%d#%d, %%v%d : f32", res, i, c->nz);
  for (int r = 0; r < 2; ++r) {
    lf[r] = attn_ptx_op(&e->p, "arith.addf %%v%d#%d, %%v%d : f32", res,
                        na + 2 + r, c->nz);
    al[r] = attn_ptx_op(&e->p, "arith.addf %%v%d#%d, %%v%d : f32", res,
                        na + 4 + r, c->nz);
  }
  for (int i = 0; i < np; ++i)
    pa[i] = attn_ptx_op(&e->p, "arith.addi %%v%d#%d, %%v%d : i32", res,
                        na + 6 + i, attn_ptx_ci32(&e->p, 0));
  int last = attn_ptx_addc(&e->p, x->nkb, -1), phl;
  int sl = attn_hopper_stage_of(e, x, last, &phl);
  attn_hopper_rescale(&e->p, k, ov, e->na, al);
  fence_acc(e, ov);
  attn_ptx_reg_fence(&e->p, pa, np, "i32", "r");
  int vl = attn_ptx_addc(&e->p, attn_hopper_tile_k(e, x, sl), e->tile_bytes);
  attn_ptx_asm_r(&e->p, "bar.sync $0, 256;", c->sched_me);
  attn_ptx_wgmma_fence(&e->p);
  issue_pv(e, x, vl, ov, pa);
  attn_ptx_asm_r(&e->p, "bar.arrive $0, 256;", c->sched_other);
  attn_ptx_wgmma_wait(&e->p, 0);
  fence_acc(e, ov);
  attn_ptx_mbar_arrive(&e->p, attn_hopper_bar_at(e, x->bar_empty, sl));
  if (k->row_sum_mma) { // whole rows, in columns 0 (row r0) and 2 (r0 + 8)
    lf[0] = ov[e->no];
    lf[1] = ov[e->no + 2];
  }

  struct attn_hopper_out o = out_of(e, x, c, wt);
  attn_hopper_emit_out(&e->p, k, &o, ov, e->no, lf);
}

/// Consumer warpgroups, FlashAttention-3 schedule: in step j each issues
/// S_j = Q K_j^T and O += P_{j-1} V_{j-1} back to back, then lets the next
/// warpgroup issue its pair (ping-pong on named barriers, round a ring when
/// there are three) and computes the softmax of S_j while its GEMMs and the
/// others' run. They keep taking turns across the tiles of a persistent
/// kernel.
void attn_hopper_consumer(struct attn_hopper_em *e,
                          const struct attn_hopper_ids *tiles, int wg, int wt) {
  const struct attn_hopper_kernel *k = e->k;
  int ns = e->ns, na = e->na, np = ns / 2;
  struct cons c;
  c.cw = attn_ptx_addc(&e->p, wg, -1);
  int warp = attn_ptx_divc(&e->p, wt, 32), lane = attn_ptx_remc(&e->p, wt, 32);
  int lq = attn_ptx_divc(&e->p, lane, 4);
  c.sm.lr = attn_ptx_remc(&e->p, lane, 4);
  int wrow = attn_ptx_addi(&e->p, attn_ptx_mulc(&e->p, warp, 16),
                           lq); // row in the warpgroup
  // Named barriers: 0 the CTA's, 1 .. W each consumer's own (RoPE of Q),
  // W + 1 + cw the turn of consumer cw, which hands it to cw + 1 (mod W).
  int W = k->consumers;
  c.sched_me = attn_ptx_addc(&e->p, c.cw, W + 1);
  c.sched_other = attn_ptx_addc(
      &e->p, attn_ptx_remc(&e->p, attn_ptx_addc(&e->p, c.cw, 1), W), W + 1);
  // Each thread owns two RoPE pairs of Q and steps cos/sin down its rows.
  bool steps = attn_hopper_q_steps(k);
  struct attn_hopper_rope_rows rq;
  if (steps) {
    attn_hopper_rope_rows_setup(&e->p, e->k, wt, 128, &rq);
    if (q_turns(k))
      attn_hopper_rope_rows_turns(&e->p, &rq);
    if (attn_hopper_stashes_rope(k))
      stash_rope(e, tiles, wg, wt, &rq, true);
  }
  // The first consumer goes first: the last opens its barrier.
  int last_cw = attn_ptx_cmpc(&e->p, "eq", c.cw, W - 1);
  attn_ptx_line(&e->p, "scf.if %%v%d {", last_cw);
  attn_ptx_asm_r(&e->p, "bar.arrive $0, 256;", attn_ptx_ci32(&e->p, W + 1));
  attn_ptx_line(&e->p, "}");

  struct attn_hopper_ids t = *tiles, *x = &t;
  attn_hopper_open_tiles(e, x);
  c.sm.wg_row = attn_ptx_addi(&e->p, x->q_row, attn_ptx_mulc(&e->p, c.cw, 64));
  // The query row of register pairs 0-1.
  c.sm.row0 = attn_ptx_addi(&e->p, c.sm.wg_row, wrow);
  attn_ptx_mbar_wait(&e->p,
                     attn_hopper_q_by_producer(k) ? x->bar_qready : x->bar_q,
                     attn_hopper_q_parity(e, x));
  if (k->rope && !attn_hopper_q_by_producer(k)) {
    if (steps) {
      if (attn_hopper_stashes_rope(k))
        stash_rope(e, x, wg, wt, &rq, false);
      int first = attn_ptx_mulc(&e->p, c.cw, 64);
      attn_hopper_rope_rows(
          &e->p, e->k, x->smem, attn_ptx_ci32(&e->p, (int)e->q_off), k->block_m,
          first, 64, attn_ptx_addc(&e->p, c.sm.wg_row, k->rope_offset), &rq);
      attn_ptx_fence_proxy_async(&e->p, false);
    } else {
      attn_hopper_rope_q_pairs(&e->p, e->k, x->smem, wt, x->q_row, c.cw);
    }
    attn_ptx_asm_r(&e->p, "bar.sync $0, 128;", attn_ptx_addc(&e->p, c.cw, 1));
  }
  int qaddr = attn_ptx_addi(&e->p, attn_ptx_addc(&e->p, x->sbase, e->q_off),
                            attn_ptx_mulc(&e->p, c.cw, 64 * 128));
  c.desc_q = attn_ptx_make_desc(&e->p, qaddr, 16, 1024);
  c.sm.scale_log2 =
      attn_ptx_cf32(&e->p, (float)(k->scale * 1.4426950408889634));
  c.sm.ninf = attn_ptx_cf32(&e->p, -INFINITY);
  c.sm.zero = attn_ptx_cf32(&e->p, 0.0f);
  c.nz = attn_ptx_cf32(&e->p,
                       -0.0f); // x + -0.0 == x: names one result of a region op
  int ready = k->rope && k->rope_k_in_kernel ? x->bar_kready : x->bar_full;

  // Step 0: S_0 and its softmax; O starts at zero.
  int sv[256], a[128], pf[256], m[2], l[2], alpha[2];
  int m0[2] = {c.sm.ninf, c.sm.ninf}, l0[2] = {c.sm.zero, c.sm.zero};
  {
    int z = attn_ptx_ci32(&e->p, 0), ph;
    int s = attn_hopper_stage_of(e, x, z, &ph);
    attn_ptx_mbar_wait(&e->p, attn_hopper_bar_at(e, ready, s), ph);
    attn_ptx_asm_r(&e->p, "bar.sync $0, 256;", c.sched_me);
    issue_qk(e, &c, attn_hopper_tile_k(e, x, s), sv, true);
    attn_ptx_asm_r(&e->p, "bar.arrive $0, 256;", c.sched_other);
    attn_ptx_wgmma_wait(&e->p, 0);
    attn_ptx_reg_fence(&e->p, sv, ns, "f32", "f");
    attn_hopper_mask(&e->p, k, &c.sm, z, sv);
    attn_hopper_softmax(&e->p, k, &c.sm, sv, m0, l0, m, l, alpha, pf);
    pack_p(e, pf, a);
  }

  // Steps 1 .. nkb-1, carrying O, m, l, alpha and P of the previous block.
  int lo = attn_ptx_cidx(&e->p, 1), hi = attn_ptx_to_index(&e->p, x->nkb),
      st = attn_ptx_cidx(&e->p, 1);
  int it = e->p.next++, res = e->p.next++;
  int ncarry = na + 6 + np;
  int init[512], arg[512];
  const char *tys[512];
  int n = 0;
  for (int i = 0; i < na; ++i, ++n) {
    init[n] = c.sm.zero;
    tys[n] = "f32";
  }
  for (int r = 0; r < 2; ++r, ++n) {
    init[n] = m[r];
    tys[n] = "f32";
  }
  for (int r = 0; r < 2; ++r, ++n) {
    init[n] = l[r];
    tys[n] = "f32";
  }
  for (int r = 0; r < 2; ++r, ++n) {
    init[n] = alpha[r];
    tys[n] = "f32";
  }
  for (int i = 0; i < np; ++i, ++n) {
    init[n] = a[i];
    tys[n] = "i32";
  }
  attn_ptx_open_for(&e->p, res, it, lo, hi, st, ncarry, init, arg, tys);
  {
    int ov[256], pa[128], mi[2], li[2], al[2];
    memcpy(ov, arg, sizeof(int) * (size_t)na);
    mi[0] = arg[na];
    mi[1] = arg[na + 1];
    li[0] = arg[na + 2];
    li[1] = arg[na + 3];
    al[0] = arg[na + 4];
    al[1] = arg[na + 5];
    memcpy(pa, arg + na + 6, sizeof(int) * (size_t)np);
    int j = attn_ptx_from_index(&e->p, it), ph, php;
    int s = attn_hopper_stage_of(e, x, j, &ph);
    int sp = attn_hopper_stage_of(e, x, attn_ptx_addc(&e->p, j, -1), &php);
    // Registers the GEMMs read are written before the wgmma pipeline starts.
    attn_hopper_rescale(&e->p, k, ov, e->na, al);
    fence_acc(e, ov);
    attn_ptx_reg_fence(&e->p, pa, np, "i32", "r");
    int kt = attn_hopper_tile_k(e, x, s),
        vt = attn_ptx_addc(&e->p, attn_hopper_tile_k(e, x, sp), e->tile_bytes);
    attn_ptx_mbar_wait(&e->p, attn_hopper_bar_at(e, ready, s), ph);
    attn_ptx_asm_r(&e->p, "bar.sync $0, 256;", c.sched_me);
    attn_ptx_wgmma_fence(&e->p);
    issue_qk(e, &c, kt, sv, false);
    issue_pv(e, x, vt, ov, pa);
    attn_ptx_asm_r(&e->p, "bar.arrive $0, 256;", c.sched_other);
    attn_ptx_wgmma_wait(&e->p, 1);
    attn_ptx_reg_fence(&e->p, sv, ns, "f32", "f");
    attn_hopper_mask(&e->p, k, &c.sm, j, sv);
    int mo[2], lo2[2], an[2], pn[128], pf2[256];
    attn_hopper_softmax(&e->p, k, &c.sm, sv, mi, li, mo, lo2, an, pf2);
    // The last block's P V runs under this block's softmax (else ptxas
    // waits for it first): after the row sums, or the last exponential when
    // the tensor cores sum.
    if (k->pv_wait_late)
      attn_ptx_wgmma_wait_after(&e->p, k->row_sum_mma ? pf2[ns - 1] : lo2[1]);
    else
      attn_ptx_wgmma_wait(&e->p, 0);
    fence_acc(e, ov);
    attn_ptx_reg_fence(&e->p, pf2, ns, "f32", "f");
    pack_p(e, pf2, pn);
    attn_ptx_mbar_arrive(&e->p, attn_hopper_bar_at(e, x->bar_empty, sp));
    int out[512];
    int nn = 0;
    for (int i = 0; i < na; ++i)
      out[nn++] = ov[i];
    out[nn++] = mo[0];
    out[nn++] = mo[1];
    out[nn++] = lo2[0];
    out[nn++] = lo2[1];
    out[nn++] = an[0];
    out[nn++] = an[1];
    for (int i = 0; i < np; ++i)
      out[nn++] = pn[i];
    attn_ptx_yield_list(&e->p, "scf.yield", out, nn, tys);
  }
  attn_ptx_line(&e->p, "}");
  // Every S of the tile is done: the producer may load the next tile's Q.
  attn_ptx_mbar_arrive(&e->p, x->bar_qempty);

  finish_tile(e, x, &c, res, wt);
  attn_hopper_close_tiles(e, x);
  if (k->staged_out) {
    // The last tile's rows land before the kernel ends.
    struct attn_hopper_out o = out_of(e, x, &c, wt);
    struct attn_ptx_rows r;
    attn_hopper_out_rows(&e->p, &o, &r);
    attn_ptx_rows_drain(&e->p, &r, ATTN_PTX_DRAIN_LANDED, false);
  }
  // The last consumer's last arrive has no partner: the first takes it.
  int first = attn_ptx_cmpc(&e->p, "eq", c.cw, 0);
  attn_ptx_line(&e->p, "scf.if %%v%d {", first);
  attn_ptx_asm_r(&e->p, "bar.sync $0, 256;", attn_ptx_ci32(&e->p, W + 1));
  attn_ptx_line(&e->p, "}");
}
