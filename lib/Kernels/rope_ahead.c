//===- rope_ahead.c - K rotated once per row by the attention kernel ------===//
//
// The ahead placement (attn_hopper_kernel::rope_k_ahead), built: producer
// warps 1-3 of every CTA (the team) take key blocks from a queue in the
// workspace rope_sync, load each by TMA into shared memory, rotate it there
// (rope_rows.c), store it by TMA to k_rot and release its flag; the TMA
// thread waits for a block's flag (or its head's count) before it loads
// the block. The producer warpgroup has 32 registers with three consumers,
// so what only the team's leader or the TMA thread needs now and then
// lives in a context in shared memory (offsets below), read where it is
// used, and each team thread's rotation constants in a stash there. The
// same ops, in the same order, as lib/Transforms/hopper_rope.c wrote as
// text. With explicit positions each row's cos/sin come from its own
// position (read from the positions parameter) by the stashed turns.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include <stdio.h>

#define CTX_BARS 0   // the two buffers' mbarriers
#define CTX_FIRST 16 // u64: the CTA's first ticket
#define CTX_SLOTS 24 // 2 x u32: the next block (relative ticket)
#define CTX_BASE 32  // u64: this launch's first ticket
#define CTX_SYNC 40  // u64: rope_sync
#define CTX_RAW 48   // u64: the tensor map of k
#define CTX_ROT 56   // u64: the tensor map of k_rot
#define CTX_FLAG 64  // u32: this launch's flag value (its number + 1, mod 2^32)
#define CTX_LAUNCH1 72 // u64: this launch's number + 1
#define CTX_STASH 80   // 96 x 12 words: each team thread's rotation constants
#define STASH_WORDS 12 // (two f64 first, so that they are 8-aligned)

//===-- Sizes -------------------------------------------------------------===//

int64_t attn_hopper_ahead_ctx_bytes(void) {
  return CTX_STASH + 96 * 4 * STASH_WORDS;
}

int64_t attn_hopper_ahead_blocks(const struct attn_hopper_kernel *k) {
  return k->batch * k->kv_heads * attn_hopper_key_blocks(k);
}

/// Byte offset in rope_sync of the first per-head counter (u64, after the
/// counter and the flags).
static int64_t counters_off(const struct attn_hopper_kernel *k) {
  return (8 + 4 * attn_hopper_ahead_blocks(k) + 7) / 8 * 8;
}

int64_t attn_hopper_ahead_sync_bytes(const struct attn_hopper_kernel *k) {
  return counters_off(k) + 8 * k->batch * k->kv_heads;
}

//===-- The context -------------------------------------------------------===//

/// Ops built under the role "rope.ahead"; the caller's location comes back
/// after.
static MlirLocation enter_ahead(struct attn_builder *b) {
  MlirLocation outer = b->loc;
  attn_builder_role(b, "rope.ahead");
  return outer;
}

static void leave_ahead(struct attn_builder *b, MlirLocation outer) {
  b->loc = outer;
}

/// The context's field at byte off, as a shared pointer.
static MlirValue ctx_ptr(struct attn_builder *b, MlirValue ctx, int off) {
  return attn_k_inttoptr(b, attn_k_addc(b, ctx, off), b->t.ptr_shared);
}

static MlirValue ctx_load(struct attn_builder *b, MlirValue ctx, int off,
                          MlirType t) {
  return attn_k_load(b, ctx_ptr(b, ctx, off), t);
}

static void ctx_store(struct attn_builder *b, MlirValue ctx, int off,
                      MlirValue v) {
  attn_k_store(b, v, ctx_ptr(b, ctx, off));
}

void attn_k_ahead_init(struct attn_builder *b, MlirValue ctx) {
  MlirLocation outer = enter_ahead(b);
  for (int i = 0; i < 2; ++i)
    attn_k_mbar_init(b, attn_k_addc(b, ctx, CTX_BARS + 8 * i), 1);
  leave_ahead(b, outer);
}

MlirValue attn_k_ahead_start(struct attn_builder *b,
                             const struct attn_hopper_kernel *k, MlirValue ctx,
                             MlirValue wt, MlirValue sync, MlirValue raw_map,
                             MlirValue rot_map, int64_t ctas) {
  MlirLocation outer = enter_ahead(b);
  struct attn_b_if lead;
  attn_b_if_open(b, &lead, attn_k_cmpc(b, ATTN_B_EQ, wt, 32), 0, NULL, false);
  MlirValue first = attn_k_atom_inc64(b, sync);
  MlirValue per = attn_b_i64(b, attn_hopper_ahead_blocks(k) + ctas);
  MlirValue launch = attn_b_divui(b, first, per);
  ctx_store(b, ctx, CTX_FIRST, first);
  ctx_store(b, ctx, CTX_BASE, attn_b_muli(b, launch, per));
  ctx_store(b, ctx, CTX_SYNC, sync);
  ctx_store(b, ctx, CTX_RAW, raw_map);
  ctx_store(b, ctx, CTX_ROT, rot_map);
  MlirValue launch1 = attn_b_addi(b, launch, attn_b_i64(b, 1));
  ctx_store(b, ctx, CTX_LAUNCH1, launch1);
  ctx_store(b, ctx, CTX_FLAG,
            attn_b_cast(b, "arith.trunci", launch1, b->t.i32));
  attn_b_if_close(b, &lead, 0, NULL);
  attn_k_bar_sync(b, attn_b_i32(b, 8), 128);
  MlirValue base = ctx_load(b, ctx, CTX_BASE, b->t.i64);
  MlirValue rel = attn_b_subi(b, ctx_load(b, ctx, CTX_FIRST, b->t.i64), base);
  MlirValue r = attn_b_cast(b, "arith.trunci", rel, b->t.i32);
  leave_ahead(b, outer);
  return r;
}

//===-- Flags and counters ------------------------------------------------===//

/// The (batch, K head) index bz * kv_heads + kh (i32), the order of the
/// queue's blocks and of the counts.
static MlirValue ahead_bh(struct attn_builder *b,
                          const struct attn_hopper_kernel *k, MlirValue bz,
                          MlirValue kh) {
  return attn_b_addi(b, attn_k_mulc(b, bz, k->kv_heads), kh);
}

/// The i64 address of the counter of (batch, K head) bh (i32).
static MlirValue counter_addr(struct attn_builder *b,
                              const struct attn_hopper_kernel *k, MlirValue ctx,
                              MlirValue bh) {
  MlirValue off =
      attn_k_i64_of(b, attn_k_addc(b, attn_k_mulc(b, bh, 8), counters_off(k)));
  return attn_b_addi(b, ctx_load(b, ctx, CTX_SYNC, b->t.i64), off);
}

/// The i64 address of key block c's flag (c: i32) in rope_sync.
static MlirValue flag_addr(struct attn_builder *b, MlirValue ctx, MlirValue c) {
  MlirValue off = attn_k_i64_of(b, attn_k_addc(b, attn_k_mulc(b, c, 4), 8));
  return attn_b_addi(b, ctx_load(b, ctx, CTX_SYNC, b->t.i64), off);
}

MlirValue attn_k_ahead_head_done(struct attn_builder *b,
                                 const struct attn_hopper_kernel *k,
                                 MlirValue ctx, MlirValue bz, MlirValue kh) {
  MlirLocation outer = enter_ahead(b);
  ctx = attn_k_pin(b, ctx, "r");
  MlirValue addr = counter_addr(b, k, ctx, ahead_bh(b, k, bz, kh));
  MlirValue n = attn_k_load_acquire64(b, addr);
  MlirValue blocks = attn_b_i64(b, attn_hopper_key_blocks(k));
  MlirValue want =
      attn_b_muli(b, ctx_load(b, ctx, CTX_LAUNCH1, b->t.i64), blocks);
  MlirValue done = attn_b_cmpi(b, ATTN_B_UGE, n, want);
  // The rows were written by other CTAs' TMA; this thread's TMA reads them.
  attn_k_fence_proxy_async(b, true);
  leave_ahead(b, outer);
  return done;
}

void attn_k_ahead_wait(struct attn_builder *b,
                       const struct attn_hopper_kernel *k, MlirValue ctx,
                       MlirValue bz, MlirValue kh, MlirValue j,
                       long long timeout_ns) {
  MlirLocation outer = enter_ahead(b);
  // Pinned in the TMA thread's loop: the context's addresses are
  // recomputed there rather than kept (64-bit) across it.
  ctx = attn_k_pin(b, ctx, "r");
  MlirValue c = attn_b_addi(
      b, attn_k_mulc(b, ahead_bh(b, k, bz, kh), attn_hopper_key_blocks(k)), j);
  // Equal, not at least: the flag is the launch number mod 2^32, and every
  // launch sets every flag, so an old value is never this launch's.
  MlirValue flag = ctx_load(b, ctx, CTX_FLAG, b->t.i32);
  attn_k_wait_until(b, flag_addr(b, ctx, c), "eq", flag, "gpu", timeout_ns);
  // The rows were written by another CTA's TMA; this thread's TMA reads them.
  attn_k_fence_proxy_async(b, true);
  leave_ahead(b, outer);
}

//===-- The team's key blocks ---------------------------------------------===//

/// The TMA coordinates of key block c (i32), region r of the head dim.
static void ahead_coords(struct attn_builder *b,
                         const struct attn_hopper_kernel *k, MlirValue c, int r,
                         MlirValue xy[4]) {
  int64_t nb = attn_hopper_key_blocks(k);
  MlirValue bh = attn_k_divc(b, c, nb);
  xy[0] = attn_b_i32(b, 64 * r);
  xy[1] = attn_k_mulc(b, attn_k_remc(b, c, nb), k->block_n);
  xy[2] = attn_k_remc(b, bh, k->kv_heads);
  xy[3] = attn_k_divc(b, bh, k->kv_heads);
}

/// The shared address (i32) of buffer `which` (i32, 0 or 1).
static MlirValue ahead_buf(struct attn_builder *b,
                           const struct attn_hopper_kernel *k, MlirValue buf0,
                           MlirValue which) {
  return attn_b_addi(
      b, buf0, attn_k_mulc(b, which, (int64_t)k->block_n * k->head_dim * 2));
}

/// The shared address (i32) of buffer which's mbarrier.
static MlirValue ahead_bar(struct attn_builder *b, MlirValue ctx,
                           MlirValue which) {
  MlirValue off = attn_k_mulc(b, which, 8);
  return attn_b_addi(b, attn_k_addc(b, ctx, CTX_BARS), off);
}

/// The leader: the TMA load of key block c (i32) into buffer `which`,
/// completing on that buffer's mbarrier.
static void ahead_load(struct attn_builder *b,
                       const struct attn_hopper_kernel *k, MlirValue ctx,
                       MlirValue buf0, MlirValue c, MlirValue which) {
  MlirValue bar = ahead_bar(b, ctx, which);
  MlirValue dst = ahead_buf(b, k, buf0, which);
  attn_k_mbar_expect_tx(b, bar, (int64_t)k->block_n * k->head_dim * 2);
  MlirValue map = ctx_load(b, ctx, CTX_RAW, b->t.i64);
  for (int r = 0; r < (int)k->head_dim / 64; ++r) {
    MlirValue xy[4];
    ahead_coords(b, k, c, r, xy);
    attn_k_tma_load(b, attn_k_addc(b, dst, (int64_t)r * k->block_n * 128), map,
                    xy, bar);
  }
}

/// The leader: waits for the team's last TMA store to land, then releases
/// key block c's flag and counts it done for its head (c < 0: none).
static void ahead_publish(struct attn_builder *b,
                          const struct attn_hopper_kernel *k, MlirValue ctx,
                          MlirValue c) {
  attn_k_bulk_wait(b, 0, false);
  struct attn_b_if some;
  attn_b_if_open(b, &some, attn_k_cmpc(b, ATTN_B_SGE, c, 0), 0, NULL, false);
  attn_k_fence_proxy_async(b, true);
  MlirValue flag = ctx_load(b, ctx, CTX_FLAG, b->t.i32);
  attn_k_store_release(b, flag_addr(b, ctx, c), flag);
  MlirValue cnt =
      counter_addr(b, k, ctx, attn_k_divc(b, c, attn_hopper_key_blocks(k)));
  // Inline PTX: llvm.atomicrmw add release syncscope("device") becomes a
  // plain atom.global.add.u64 under llc-22 (sm_90a), without the release.
  attn_k_asm(b, (MlirType){NULL}, "l",
             "red.release.gpu.global.add.u64 [$0], 1;", 1, &cnt);
  attn_b_if_close(b, &some, 0, NULL);
}

//===-- The team's rotation constants (its stash) -------------------------===//

/// The fields of attn_k_rope_rows a team thread stashes, in order: 3 i32, 4
/// f32, 2 f64.
static MlirValue *stash_field(struct attn_k_rope_rows *r, int i) {
  MlirValue *v[] = {&r->slot_c1, &r->slot_c2, &r->g,
                    &r->step_c0, &r->step_s0, &r->step_c1,
                    &r->step_s1, &r->turns0,  &r->turns1};
  return v[i];
}

/// Field i's type, asm constraint letter and width (b32, b64).
static MlirType stash_type(struct attn_builder *b, int i) {
  return i < 3 ? b->t.i32 : i < 7 ? b->t.f32 : b->t.f64;
}

static char stash_cons(int i) { return i < 3 ? 'r' : i < 7 ? 'f' : 'd'; }

static const char *stash_bits(int i) { return i < 7 ? "b32" : "b64"; }

/// The shared address (i32) of field i of team thread rt's stash.
static MlirValue stash_at(struct attn_builder *b, MlirValue ctx, MlirValue rt,
                          int i) {
  int word = i < 7 ? 4 + i : 2 * (i - 7);
  return attn_b_addi(b, ctx,
                     attn_k_addc(b, attn_k_mulc(b, rt, 4 * STASH_WORDS),
                                 CTX_STASH + 4 * word));
}

void attn_k_ahead_setup(struct attn_builder *b,
                        const struct attn_hopper_kernel *k, MlirValue wt,
                        MlirValue ctx) {
  MlirLocation outer = enter_ahead(b);
  MlirValue rt = attn_k_addc(b, wt, -32);
  struct attn_b_if team;
  attn_b_if_open(b, &team, attn_k_cmpc(b, ATTN_B_UGE, wt, 32), 0, NULL, false);
  struct attn_k_rope_rows r;
  attn_k_rope_rows_setup(b, k, rt, 96, &r);
  attn_k_rope_rows_turns(b, &r);
  for (int i = 0; i < 9; ++i) {
    MlirValue opd[] = {stash_at(b, ctx, rt, i), *stash_field(&r, i)};
    char cons[8], text[40];
    snprintf(cons, sizeof cons, "r,%c", stash_cons(i));
    snprintf(text, sizeof text, "st.shared.%s [$0], $1;", stash_bits(i));
    attn_k_asm(b, (MlirType){NULL}, cons, text, 2, opd);
  }
  attn_b_if_close(b, &team, 0, NULL);
  leave_ahead(b, outer);
}

/// The team thread's constants, loaded from its stash where they are used
/// (they would not fit its registers across the loop).
static struct attn_k_rope_rows stash_load(struct attn_builder *b,
                                          const struct attn_hopper_kernel *k,
                                          MlirValue ctx, MlirValue rt,
                                          MlirValue sbase) {
  // Every field set here: the ones the stash holds below, turns0 and turns1
  // (f64) in place of f0 and f1.
  struct attn_k_rope_rows r = {.groups = 96 / attn_hopper_rope_slots(k),
                               .sbase32 = sbase,
                               .turns32 = false};
  for (int i = 0; i < 9; ++i) {
    MlirValue a = stash_at(b, ctx, rt, i);
    char cons[8], text[40];
    snprintf(cons, sizeof cons, "=%c,r", stash_cons(i));
    snprintf(text, sizeof text, "ld.shared.%s $0, [$1];", stash_bits(i));
    *stash_field(&r, i) =
        attn_b_result(attn_k_asm(b, stash_type(b, i), cons, text, 1, &a), 0);
  }
  return r;
}

//===-- The team's loop ---------------------------------------------------===//

/// One scf.while of n i32 values being written: the before region (the
/// condition) first, then the after region (the body).
struct ahead_while {
  MlirOperation op;
  MlirBlock before, after;
  MlirBlock outer_block;
  MlirOperation outer_anchor;
  MlirValue results[3];
};

/// Opens `scf.while (init[0..3)) : (i32, i32, i32)`; new ops go into its
/// before region, whose arguments are args.
static void while_open(struct attn_builder *b, struct ahead_while *w,
                       const MlirValue init[3], MlirValue args[3]) {
  MlirType t[3] = {b->t.i32, b->t.i32, b->t.i32};
  MlirLocation locs[3] = {b->loc, b->loc, b->loc};
  w->op = attn_b_op(b, "scf.while", 3, t, 3, init, 0, NULL, 2);
  w->outer_block = b->block;
  w->outer_anchor = b->anchor;
  w->before = mlirBlockCreate(3, t, locs);
  w->after = mlirBlockCreate(3, t, locs);
  if (!mlirOperationIsNull(w->op)) {
    mlirRegionAppendOwnedBlock(mlirOperationGetRegion(w->op, 0), w->before);
    mlirRegionAppendOwnedBlock(mlirOperationGetRegion(w->op, 1), w->after);
  }
  for (int i = 0; i < 3; ++i)
    args[i] = mlirBlockGetArgument(w->before, i);
  attn_builder_at_end(b, w->before);
}

/// Ends the before region with `scf.condition(cond) vals`; new ops go into
/// the after region, whose arguments are args.
static void while_do(struct attn_builder *b, struct ahead_while *w,
                     MlirValue cond, const MlirValue vals[3],
                     MlirValue args[3]) {
  MlirValue opd[4] = {cond, vals[0], vals[1], vals[2]};
  attn_b_op(b, "scf.condition", 0, NULL, 4, opd, 0, NULL, 0);
  for (int i = 0; i < 3; ++i)
    args[i] = mlirBlockGetArgument(w->after, i);
  attn_builder_at_end(b, w->after);
}

/// Ends the after region with `scf.yield yields` and goes back to after the
/// loop; fills w->results (null if the loop could not be made, whose
/// regions are then dropped).
static void while_close(struct attn_builder *b, struct ahead_while *w,
                        const MlirValue yields[3]) {
  attn_b_op(b, "scf.yield", 0, NULL, 3, yields, 0, NULL, 0);
  b->block = w->outer_block;
  b->anchor = w->outer_anchor;
  for (int i = 0; i < 3; ++i)
    w->results[i] = attn_b_result(w->op, i);
  if (mlirOperationIsNull(w->op)) {
    mlirBlockDestroy(w->before);
    mlirBlockDestroy(w->after);
  }
}

void attn_k_rope_ahead(struct attn_builder *b,
                       const struct attn_hopper_kernel *k, MlirValue rt,
                       MlirValue smem, MlirValue sbase, int64_t buf_off,
                       MlirValue ctx, MlirValue first, MlirValue positions) {
  MlirLocation outer = enter_ahead(b);
  int64_t blocks = attn_hopper_ahead_blocks(k);
  MlirValue leader = attn_k_cmpc(b, ATTN_B_EQ, rt, 0);
  MlirValue buf0 = attn_k_addc(b, sbase, buf_off);
  struct attn_b_if s, t;
  attn_b_if_open(b, &s, leader, 0, NULL, false);
  attn_b_if_open(b, &t, attn_k_cmpc(b, ATTN_B_ULT, first, blocks), 0, NULL,
                 false);
  ahead_load(b, k, ctx, buf0, first, attn_b_i32(b, 0));
  attn_b_if_close(b, &t, 0, NULL);
  attn_b_if_close(b, &s, 0, NULL);
  // (i, block, previous block): blocks i = 0, 1, ... alternate buffers; a
  // block is a ticket less this launch's first, valid below blocks.
  MlirValue none = attn_b_i32(b, -1);
  MlirValue init[3] = {attn_b_i32(b, 0), first, none};
  MlirValue w_args[3], args[3];
  struct ahead_while w;
  while_open(b, &w, init, w_args);
  while_do(b, &w, attn_k_cmpc(b, ATTN_B_ULT, w_args[1], blocks), w_args, args);
  MlirValue i = args[0], c = args[1], prev = args[2];
  // The context's addresses are recomputed in the loop from ctx rather than
  // kept across it (with buf0 pinned too, ptxas spilled 4 bytes).
  MlirValue ctx_out = ctx;
  ctx = attn_k_pin(b, ctx, "r");
  MlirValue which = attn_b_andi(b, i, attn_b_i32(b, 1));
  MlirValue other = attn_b_xori(b, which, attn_b_i32(b, 1));
  MlirValue slot_off = attn_k_mulc(b, other, 4);
  MlirValue slot_other = attn_k_inttoptr(
      b, attn_b_addi(b, attn_k_addc(b, ctx, CTX_SLOTS), slot_off),
      b->t.ptr_shared);
  // The leader takes the next ticket and, once the other buffer's store has
  // landed (and its block's flag is out), loads the next block into it.
  attn_b_if_open(b, &s, leader, 0, NULL, false);
  MlirValue base = ctx_load(b, ctx, CTX_BASE, b->t.i64);
  MlirValue ticket = attn_k_atom_inc64(b, ctx_load(b, ctx, CTX_SYNC, b->t.i64));
  MlirValue next =
      attn_b_cast(b, "arith.trunci", attn_b_subi(b, ticket, base), b->t.i32);
  attn_k_store(b, next, slot_other);
  ahead_publish(b, k, ctx, prev);
  attn_b_if_open(b, &t, attn_k_cmpc(b, ATTN_B_ULT, next, blocks), 0, NULL,
                 false);
  ahead_load(b, k, ctx, buf0, next, other);
  attn_b_if_close(b, &t, 0, NULL);
  attn_b_if_close(b, &s, 0, NULL);
  // Everyone: the block lands, is rotated in place, and goes out.
  MlirValue one = attn_b_i32(b, 1);
  MlirValue parity = attn_b_andi(b, attn_k_divc(b, i, 2), one);
  attn_k_mbar_wait(b, ahead_bar(b, ctx, which), parity);
  MlirValue buf = ahead_buf(b, k, attn_b_i32(b, buf_off), which);
  MlirValue pos0 = attn_k_addc(
      b,
      attn_k_mulc(b, attn_k_remc(b, c, attn_hopper_key_blocks(k)), k->block_n),
      k->rope_offset_k);
  MlirValue sb = attn_k_pin(b, sbase, "r");
  struct attn_k_rope_rows r = stash_load(b, k, ctx, rt, sb);
  // Explicit positions: those of the block's batch, from its first row.
  struct attn_k_rope_pos pp = {.base = {NULL}, .len = k->seq_k};
  if (k->k_positions) {
    MlirValue bh = attn_k_divc(b, c, attn_hopper_key_blocks(k));
    pp.base = attn_k_rope_pos_base(b, positions,
                                   attn_k_divc(b, bh, k->kv_heads), k->seq_k);
  }
  attn_k_rope_rows(b, k, smem, buf, k->block_n, attn_b_i32(b, 0), k->block_n,
                   pos0, &r, &pp);
  attn_k_fence_proxy_async(b, false);
  attn_k_bar_sync(b, attn_b_i32(b, 9), 96);
  attn_b_if_open(b, &s, leader, 0, NULL, false);
  MlirValue src = ahead_buf(b, k, buf0, which);
  MlirValue map = ctx_load(b, ctx, CTX_ROT, b->t.i64);
  for (int rg = 0; rg < (int)k->head_dim / 64; ++rg) {
    MlirValue xy[4];
    ahead_coords(b, k, c, rg, xy);
    attn_k_tma_store(b, attn_k_addc(b, src, (int64_t)rg * k->block_n * 128),
                     map, xy);
  }
  attn_k_bulk_commit(b);
  attn_b_if_close(b, &s, 0, NULL);
  // The next block, which the leader wrote before the barrier.
  MlirValue cn = attn_k_load(b, slot_other, b->t.i32);
  MlirValue yields[3] = {attn_k_addc(b, i, 1), cn, c};
  while_close(b, &w, yields);
  // The last block's flag.
  ctx = ctx_out;
  attn_b_if_open(b, &s, leader, 0, NULL, false);
  ahead_publish(b, k, ctx, attn_k_addc(b, w.results[2], 0));
  attn_b_if_close(b, &s, 0, NULL);
  leave_ahead(b, outer);
}
