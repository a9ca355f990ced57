//===- attention_consumer.c - The Hopper attention kernel's consumers -----===//
//
// The consumer warpgroups of the attention kernel hopper_attention.c
// assembles (FlashAttention-3's schedule): each takes 64 query rows of the
// tile, rotates them (RoPE) unless the producer did, then per key block
// issues S = Q.K^T and the previous block's O += P.V back to back on the
// tensor cores, in turns with the other consumers (named barriers, a ring
// when there are three), and computes the block's score modifiers, mask and
// online softmax (softmax.c) while those run; the tile's last P.V and its
// epilogue (attention_epilogue.c) end it. The state it shares with the
// producer is attention_pipeline.c's. Ops are named "consumer", "softmax",
// "rope" and "epilogue".
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include <math.h>
#include <string.h>

/// Whether those consumers take their first row's cos/sin from the
/// frequencies in turns (attn_k_rope_rows_turns, in f32) rather than
/// __nv_sinf and __nv_cosf: with rope_k_ahead, where it measured 1.4%
/// faster at N = 2K and level at 4K (bench/RESULTS.md); with split ptxas
/// spilled 4 bytes for it. With explicit positions every row's cos/sin is
/// computed (none stepped), and always from the turns: in f32 from the
/// stash, in f64 otherwise.
static bool q_turns(const struct attn_hopper_kernel *k) {
  return attn_hopper_stashes_rope(k) && (k->rope_k_ahead || k->q_positions);
}

/// The per-consumer values every block step needs (sm: what the softmax
/// needs, softmax.c).
struct cons {
  MlirValue cw, desc_q, nz;
  struct attn_k_softmax sm;
  MlirValue sched_me, sched_other; // named barrier ids (i32)
};

/// S = Q K_j^T for the stage's K tile (issued and committed, not waited).
/// With fence false the caller has issued wgmma.fence already.
static void issue_qk(const struct attn_k_att *a, const struct cons *c,
                     MlirValue kt, MlirValue *sv, bool fence) {
  const struct attn_hopper_kernel *k = a->k;
  struct attn_builder *b = a->b;
  // At head dim 256 LLVM would hoist Q's 16 descriptors (64-bit) out of the
  // block loop, and make K's of both stages there to select from: dozens of
  // registers beside O. Their bases are pinned in the loop instead.
  bool pin = k->head_dim == 256;
  MlirValue desc_k = attn_k_make_desc(b, pin ? attn_k_pin(b, kt, "r") : kt,
                                      16, 1024);
  MlirValue desc_q = pin ? attn_k_pin(b, c->desc_q, "l") : c->desc_q;
  // The first wgmma ignores its accumulators (scale-d = 0): feed it undefined
  // values, so nothing writes those registers inside the wgmma pipeline.
  MlirValue undef =
      attn_b_op1(b, "llvm.mlir.undef", b->t.f32, 0, NULL, 0, NULL);
  for (int i = 0; i < a->ns; ++i)
    sv[i] = undef;
  if (fence)
    attn_k_wgmma_fence(b);
  for (int kk = 0; kk < k->head_dim / 16; ++kk) {
    int64_t region_q = (int64_t)(kk / 4) * k->block_m * 128;
    int64_t region_k = (int64_t)(kk / 4) * k->block_n * 128;
    attn_k_wgmma_ss(b, k->bf16, sv, a->ns,
                    attn_k_desc_add(b, desc_q, region_q + (kk % 4) * 32),
                    attn_k_desc_add(b, desc_k, region_k + (kk % 4) * 32),
                    attn_b_i32(b, kk ? 1 : 0), false);
  }
  attn_k_wgmma_commit(b);
}

/// O += P V for the stage's V tile (issued and committed, not waited), and
/// with row_sum_mma l += P times ones (in ov[no..no+4), every column the
/// row's sum). The caller has fenced O and P (fence_acc, reg_fence) and
/// issued wgmma.fence.
static void issue_pv(const struct attn_k_att *a,
                     const struct attn_k_att_vals *x, MlirValue vt,
                     MlirValue *ov, const MlirValue *p) {
  const struct attn_hopper_kernel *k = a->k;
  struct attn_builder *b = a->b;
  // (Pinned at head dim 256, as issue_qk's.)
  MlirValue desc_v = attn_k_make_desc(
      b, k->head_dim == 256 ? attn_k_pin(b, vt, "r") : vt,
      (int64_t)k->block_n * 128, 1024);
  for (int kk = 0; kk < k->block_n / 16; ++kk)
    attn_k_wgmma_rs(b, k->bf16, ov, a->no, &p[4 * kk],
                    attn_k_desc_add(b, desc_v, (int64_t)kk * 16 * 128), true);
  if (k->row_sum_mma) {
    // Every 16 keys read the same 8 x 16 ones, K-major.
    MlirValue desc_1 =
        attn_k_make_desc(b, attn_k_addc(b, x->sbase, a->ones_off), 16, 1024);
    for (int kk = 0; kk < k->block_n / 16; ++kk)
      attn_k_wgmma_rs(b, k->bf16, ov + a->no, 4, &p[4 * kk], desc_1, false);
  }
  attn_k_wgmma_commit(b);
}

/// reg_fence of the accumulators the P V wgmma writes (O, and l with
/// row_sum_mma).
static void fence_acc(const struct attn_k_att *a, MlirValue *ov) {
  attn_k_reg_fence(a->b, ov, a->no, "f");
  if (a->na > a->no)
    attn_k_reg_fence(a->b, ov + a->no, a->na - a->no, "f");
}

/// Packs probabilities to 16-bit pairs, the A registers of the P V wgmma.
/// Done only once the previous P V has completed, so that the new registers
/// never overwrite ones an in-flight wgmma still reads.
static void pack_p(const struct attn_k_att *a, const MlirValue *p,
                   MlirValue *out) {
  for (int i = 0; i < a->ns / 2; ++i)
    out[i] = attn_k_pack2(a->b, a->k->bf16, p[2 * i], p[2 * i + 1]);
}

/// Stores (store) or loads this consumer thread's RoPE constants of r in its
/// ATTN_K_ATT_STASH_BYTES of the stash (see attn_hopper_stashes_rope): its
/// inverse frequencies, or with q_turns its frequencies in turns rounded to
/// f32 (rope_rows.c bounds what that costs the angle), then its steps.
static void stash_rope(const struct attn_k_att *a,
                       const struct attn_k_att_vals *x, MlirValue wg,
                       MlirValue wt, struct attn_k_rope_rows *r, bool store) {
  struct attn_builder *b = a->b;
  bool turns = q_turns(a->k);
  MlirValue *v[6] = {turns ? &r->turns0 : &r->f0,
                     turns ? &r->turns1 : &r->f1,
                     &r->step_c0,
                     &r->step_s0,
                     &r->step_c1,
                     &r->step_s1};
  MlirValue slot = attn_b_addi(b, attn_k_mulc(b, wg, 128), wt);
  MlirValue base =
      attn_k_addc(b, attn_k_mulc(b, slot, ATTN_K_ATT_STASH_BYTES),
                  a->stash_off - 128 * ATTN_K_ATT_STASH_BYTES);
  for (int i = 0; i < 6; ++i) {
    MlirValue ptr = attn_k_smem_ptr(b, x->smem, attn_k_addc(b, base, 4 * i));
    if (store) {
      MlirValue w = turns && i < 2 ? attn_k_truncf(b, *v[i], b->t.f32) : *v[i];
      attn_k_store(b, w, ptr);
    } else {
      *v[i] = attn_k_load(b, ptr, b->t.f32);
    }
  }
  r->turns32 = turns && !store;
}

/// What the epilogue (attention_epilogue.c) needs of consumer c's values.
static struct attn_k_att_out out_of(const struct attn_k_att *a,
                                    const struct attn_k_att_vals *x,
                                    const struct cons *c, MlirValue wt) {
  return (struct attn_k_att_out){.out = x->out,
                                 .lse = x->lse,
                                 .bz = x->bz,
                                 .h = x->h,
                                 .wg_row = c->sm.wg_row,
                                 .row0 = c->sm.row0,
                                 .lr = c->sm.lr,
                                 .cw = c->cw,
                                 .wt = wt,
                                 .sbase = x->sbase,
                                 .zero = c->sm.zero,
                                 .staging_off = a->staging_off,
                                 .pitch = a->pitch};
}

/// The end of a tile: the last block's P V (from the results of the block
/// loop), l summed across the quad, O normalised and written.
static void finish_tile(const struct attn_k_att *a,
                        const struct attn_k_att_vals *x, const struct cons *c,
                        MlirOperation loop, MlirValue wt) {
  const struct attn_hopper_kernel *k = a->k;
  struct attn_builder *b = a->b;
  int na = a->na, np = a->ns / 2;
  MlirValue ov[ATTN_K_MAX_REGS], al[2], pa[ATTN_K_MAX_REGS], lf[2];
  MlirValue mf[2] = {{NULL}, {NULL}};
  for (int i = 0; i < na; ++i)
    ov[i] = attn_k_result_f32(b, loop, i, c->nz);
  for (int r = 0; r < 2; ++r) {
    lf[r] = attn_k_result_f32(b, loop, na + 2 + r, c->nz);
    al[r] = attn_k_result_f32(b, loop, na + 4 + r, c->nz);
  }
  for (int r = 0; k->lse && r < 2; ++r) // the final maxima, for lse
    mf[r] = attn_k_result_f32(b, loop, na + r, c->nz);
  for (int i = 0; i < np; ++i)
    pa[i] = attn_b_addi(b, attn_b_result(loop, na + 6 + i), attn_b_i32(b, 0));
  MlirValue last = attn_k_addc(b, x->nkb, -1), phl;
  MlirValue sl = attn_k_att_stage_of(a, x, last, &phl);
  attn_builder_role(b, "softmax");
  attn_k_rescale(b, k, ov, a->na, al);
  attn_builder_role(b, "consumer");
  fence_acc(a, ov);
  attn_k_reg_fence(b, pa, np, "r");
  MlirValue vl =
      attn_k_addc(b, attn_k_att_tile_k(a, x, sl), a->tile_bytes);
  if (k->kv_split)
    attn_k_mbar_wait(b, attn_k_att_bar_at(a, x->bar_vfull, sl), phl);
  attn_k_bar_sync(b, c->sched_me, 256);
  attn_k_wgmma_fence(b);
  issue_pv(a, x, vl, ov, pa);
  attn_k_bar_arrive(b, c->sched_other, 256);
  attn_k_wgmma_wait(b, 0);
  fence_acc(a, ov);
  attn_k_mbar_arrive(
      b, attn_k_att_bar_at(a, k->kv_split ? x->bar_vempty : x->bar_empty, sl));
  if (k->row_sum_mma) { // whole rows, in columns 0 (row r0) and 2 (r0 + 8)
    lf[0] = ov[a->no];
    lf[1] = ov[a->no + 2];
  }

  struct attn_k_att_out o = out_of(a, x, c, wt);
  attn_builder_role(b, "epilogue");
  attn_k_att_out(b, k, &o, ov, a->no, mf, lf);
  attn_builder_role(b, "consumer");
}

/// Consumer warpgroups, FlashAttention-3 schedule: in step j each issues
/// S_j = Q K_j^T and O += P_{j-1} V_{j-1} back to back, then lets the next
/// warpgroup issue its pair (ping-pong on named barriers, round a ring when
/// there are three) and computes the softmax of S_j while its GEMMs and the
/// others' run. They keep taking turns across the tiles of a persistent
/// kernel.
void attn_k_att_consumer(const struct attn_k_att *a,
                         const struct attn_k_att_vals *tiles, MlirValue wg,
                         MlirValue wt) {
  const struct attn_hopper_kernel *k = a->k;
  struct attn_builder *b = a->b;
  int ns = a->ns, na = a->na, np = ns / 2;
  attn_builder_role(b, "consumer");
  struct cons c;
  struct attn_k_fn fn;
  c.sm.fn = NULL;
  if (attn_k_has_fns(k)) {
    attn_k_fn_init(&fn, k, tiles->caps);
    c.sm.fn = &fn;
  }
  c.cw = attn_k_addc(b, wg, -1);
  MlirValue warp = attn_k_divc(b, wt, 32), lane = attn_k_remc(b, wt, 32);
  MlirValue lq = attn_k_divc(b, lane, 4);
  c.sm.lr = attn_k_remc(b, lane, 4);
  MlirValue wrow = attn_b_addi(b, attn_k_mulc(b, warp, 16),
                               lq); // row in the warpgroup
  // Named barriers: 0 the CTA's, 1 .. W each consumer's own (RoPE of Q),
  // W + 1 + cw the turn of consumer cw, which hands it to cw + 1 (mod W).
  int W = k->consumers;
  c.sched_me = attn_k_addc(b, c.cw, W + 1);
  c.sched_other = attn_k_addc(
      b, attn_k_remc(b, attn_k_addc(b, c.cw, 1), W), W + 1);
  // Each thread owns two RoPE pairs of Q and steps cos/sin down its rows.
  bool steps = attn_hopper_q_steps(k);
  struct attn_k_rope_rows rq;
  memset(&rq, 0, sizeof rq);
  if (steps) {
    attn_builder_role(b, "rope");
    attn_k_rope_rows_setup(b, k, wt, 128, &rq);
    if (q_turns(k) || k->q_positions)
      attn_k_rope_rows_turns(b, &rq);
    if (attn_hopper_stashes_rope(k))
      stash_rope(a, tiles, wg, wt, &rq, true);
    attn_builder_role(b, "consumer");
  }
  // The first consumer goes first: the last opens its barrier.
  MlirValue last_cw = attn_k_cmpc(b, ATTN_B_EQ, c.cw, W - 1);
  struct attn_b_if opens;
  attn_b_if_open(b, &opens, last_cw, 0, NULL, false);
  attn_k_bar_arrive(b, attn_b_i32(b, W + 1), 256);
  attn_b_if_close(b, &opens, 0, NULL);

  struct attn_k_att_vals t = *tiles, *x = &t;
  struct attn_b_for tile_loop;
  attn_k_att_open_tiles(a, x, &tile_loop);
  c.sm.wg_row = attn_b_addi(b, x->q_row, attn_k_mulc(b, c.cw, 64));
  c.sm.kff = x->kff;
  c.sm.kfl = x->kfl;
  // The query row of register pairs 0-1.
  c.sm.row0 = attn_b_addi(b, c.sm.wg_row, wrow);
  attn_k_mbar_wait(b, attn_hopper_q_by_producer(k) ? x->bar_qready : x->bar_q,
                   attn_k_att_q_parity(a, x));
  if (k->rope && !attn_hopper_q_by_producer(k)) {
    attn_builder_role(b, "rope");
    // Explicit positions: those of the tile's batch.
    struct attn_k_rope_pos pp = {.base = {NULL}, .len = k->seq_q};
    if (k->q_positions)
      pp.base =
          attn_k_rope_pos_base(b, x->caps[k->q_pos_capture], x->bz, k->seq_q);
    if (steps) {
      if (attn_hopper_stashes_rope(k))
        stash_rope(a, x, wg, wt, &rq, false);
      MlirValue first = attn_k_mulc(b, c.cw, 64);
      attn_k_rope_rows(b, k, x->smem, attn_b_i32(b, (int)a->q_off), k->block_m,
                       first, 64, attn_k_addc(b, c.sm.wg_row, k->rope_offset),
                       &rq, &pp);
      attn_k_fence_proxy_async(b, false);
    } else {
      attn_k_rope_q_pairs(b, k, x->smem, wt, x->q_row, c.cw, &pp);
    }
    attn_builder_role(b, "consumer");
    attn_k_bar_sync(b, attn_k_addc(b, c.cw, 1), 128);
  }
  MlirValue qaddr = attn_b_addi(b, attn_k_addc(b, x->sbase, a->q_off),
                                attn_k_mulc(b, c.cw, 64 * 128));
  c.desc_q = attn_k_make_desc(b, qaddr, 16, 1024);
  c.sm.scale_log2 =
      attn_b_f32(b, (float)(attn_k_score_factor(k) * 1.4426950408889634));
  c.sm.group_rows = 64;
  c.sm.ninf = attn_b_f32(b, -INFINITY);
  c.sm.zero = attn_b_f32(b, 0.0f);
  c.nz = attn_b_f32(b, -0.0f); // x + -0.0 == x: names one result of a region op
  if (c.sm.fn) { // per tile: what the functions read of its head and rows
    attn_builder_role(b, "softmax");
    attn_k_fn_tile(b, c.sm.fn, x->bz, x->h, c.sm.row0);
    attn_builder_role(b, "consumer");
  }
  MlirValue ready =
      k->rope && k->rope_k_in_kernel ? x->bar_kready : x->bar_full;

  // Step 0: S_0 and its softmax; O starts at zero.
  MlirValue sv[ATTN_K_MAX_REGS], p0[ATTN_K_MAX_REGS], pf[ATTN_K_MAX_REGS];
  MlirValue m[2], l[2], alpha[2];
  MlirValue m0[2] = {c.sm.ninf, c.sm.ninf}, l0[2] = {c.sm.zero, c.sm.zero};
  {
    MlirValue z = attn_b_i32(b, 0), ph;
    MlirValue s = attn_k_att_stage_of(a, x, z, &ph);
    attn_k_mbar_wait(b, attn_k_att_bar_at(a, ready, s), ph);
    attn_k_bar_sync(b, c.sched_me, 256);
    issue_qk(a, &c, attn_k_att_tile_k(a, x, s), sv, true);
    attn_k_bar_arrive(b, c.sched_other, 256);
    attn_k_wgmma_wait(b, 0);
    attn_k_reg_fence(b, sv, ns, "f");
    if (k->kv_split) // Q.K has read K_0: its slot may refill
      attn_k_mbar_arrive(b, attn_k_att_bar_at(a, x->bar_empty, s));
    attn_builder_role(b, "softmax");
    MlirValue kb = attn_k_att_key_entry(a, x, z, &c.sm.fn_full);
    attn_k_score_mods(b, k, &c.sm, kb, sv);
    attn_k_mask(b, k, &c.sm, kb, sv);
    attn_k_softmax(b, k, &c.sm, sv, m0, l0, m, l, alpha, pf);
    attn_builder_role(b, "consumer");
    pack_p(a, pf, p0);
  }

  // Steps 1 .. nkb-1, carrying O, m, l, alpha and P of the previous block.
  MlirValue lo = attn_b_index(b, 1), hi = attn_k_to_index(b, x->nkb),
            st = attn_b_index(b, 1);
  int ncarry = na + 6 + np;
  MlirValue init[ATTN_B_MAX_VALUES];
  int n = 0;
  for (int i = 0; i < na; ++i)
    init[n++] = c.sm.zero;
  for (int r = 0; r < 2; ++r)
    init[n++] = m[r];
  for (int r = 0; r < 2; ++r)
    init[n++] = l[r];
  for (int r = 0; r < 2; ++r)
    init[n++] = alpha[r];
  for (int i = 0; i < np; ++i)
    init[n++] = p0[i];
  struct attn_b_for blocks;
  attn_b_for_open(b, &blocks, lo, hi, st, ncarry, init);
  {
    const MlirValue *arg = blocks.args;
    MlirValue ov[ATTN_K_MAX_REGS], pa[ATTN_K_MAX_REGS], mi[2], li[2], al[2];
    memcpy(ov, arg, sizeof(MlirValue) * (size_t)na);
    mi[0] = arg[na];
    mi[1] = arg[na + 1];
    li[0] = arg[na + 2];
    li[1] = arg[na + 3];
    al[0] = arg[na + 4];
    al[1] = arg[na + 5];
    memcpy(pa, arg + na + 6, sizeof(MlirValue) * (size_t)np);
    MlirValue j = attn_k_from_index(b, blocks.iv), ph, php;
    MlirValue s = attn_k_att_stage_of(a, x, j, &ph);
    MlirValue sp = attn_k_att_stage_of(a, x, attn_k_addc(b, j, -1), &php);
    // Registers the GEMMs read are written before the wgmma pipeline starts.
    attn_builder_role(b, "softmax");
    attn_k_rescale(b, k, ov, a->na, al);
    attn_builder_role(b, "consumer");
    fence_acc(a, ov);
    attn_k_reg_fence(b, pa, np, "r");
    MlirValue kt = attn_k_att_tile_k(a, x, s),
              vt = attn_k_addc(b, attn_k_att_tile_k(a, x, sp), a->tile_bytes);
    attn_k_mbar_wait(b, attn_k_att_bar_at(a, ready, s), ph);
    if (k->kv_split)
      attn_k_mbar_wait(b, attn_k_att_bar_at(a, x->bar_vfull, sp), php);
    attn_k_bar_sync(b, c.sched_me, 256);
    attn_k_wgmma_fence(b);
    issue_qk(a, &c, kt, sv, false);
    issue_pv(a, x, vt, ov, pa);
    attn_k_bar_arrive(b, c.sched_other, 256);
    attn_k_wgmma_wait(b, 1);
    attn_k_reg_fence(b, sv, ns, "f");
    if (k->kv_split) // Q.K has read K_j: its slot may refill
      attn_k_mbar_arrive(b, attn_k_att_bar_at(a, x->bar_empty, s));
    attn_builder_role(b, "softmax");
    MlirValue kb = attn_k_att_key_entry(a, x, j, &c.sm.fn_full);
    attn_k_score_mods(b, k, &c.sm, kb, sv);
    attn_k_mask(b, k, &c.sm, kb, sv);
    MlirValue mo[2], lo2[2], an[2], pn[ATTN_K_MAX_REGS], pf2[ATTN_K_MAX_REGS];
    attn_k_softmax(b, k, &c.sm, sv, mi, li, mo, lo2, an, pf2);
    attn_builder_role(b, "consumer");
    // The last block's P V runs under this block's softmax (else ptxas
    // waits for it first): after the row sums, or the last exponential when
    // the tensor cores sum.
    if (k->pv_wait_late)
      attn_k_wgmma_wait_after(b, k->row_sum_mma ? pf2[ns - 1] : lo2[1]);
    else
      attn_k_wgmma_wait(b, 0);
    fence_acc(a, ov);
    attn_k_reg_fence(b, pf2, ns, "f");
    pack_p(a, pf2, pn);
    attn_k_mbar_arrive(
        b, attn_k_att_bar_at(a, k->kv_split ? x->bar_vempty : x->bar_empty, sp));
    MlirValue out[ATTN_B_MAX_VALUES];
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
    attn_b_for_close(b, &blocks, nn, out);
  }
  // Every S of the tile is done: the producer may load the next tile's Q.
  attn_k_mbar_arrive(b, x->bar_qempty);

  finish_tile(a, x, &c, blocks.op, wt);
  attn_k_att_close_tiles(a, x, &tile_loop);
  if (k->staged_out) {
    // The last tile's rows land before the kernel ends.
    struct attn_k_att_out o = out_of(a, x, &c, wt);
    struct attn_k_rows r;
    attn_builder_role(b, "epilogue");
    attn_k_att_out_rows(b, &o, &r);
    attn_k_rows_drain(b, &r, ATTN_K_DRAIN_LANDED, false);
    attn_builder_role(b, "consumer");
  }
  // The last consumer's last arrive has no partner: the first takes it.
  MlirValue first = attn_k_cmpc(b, ATTN_B_EQ, c.cw, 0);
  struct attn_b_if takes;
  attn_b_if_open(b, &takes, first, 0, NULL, false);
  attn_k_bar_sync(b, attn_b_i32(b, W + 1), 256);
  attn_b_if_close(b, &takes, 0, NULL);
  if (c.sm.fn)
    attn_k_fn_free(c.sm.fn);
}
