//===- hopper_gemm.c - The persistent warp-specialised Hopper GEMM --------===//
//
// Builds the tile-level GEMM kernel kernels.h's struct attn_hopper_gemm
// describes, for
// sm_90a (LLVM/NVVM dialects, scf/arith, inline PTX through
// hopper_instructions.c), and its manifest entry:
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
//                           epilogue (gemm_epilogue.c): staged through
//                           shared memory and the bulk-copy engine, or
//                           stores straight from registers.
//
// A CTA runs tiles bid, bid + ctas, ...; tile t maps to (tile row, tile
// column) in groups of group_m tile rows (gemm_geometry.c) so that the CTAs
// running at once share A rows and B columns in L2. A fused kernel's
// communication CTAs and the compute CTAs' hooks are gemm_comm.c's.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/LLVM.h"

#include <string.h>

#define BLOCK_K 64
#define PRODUCER_REGS 40
#define CONSUMER_REGS 232

//===-- Pieces ------------------------------------------------------------===//

static MlirValue bar_at(struct attn_k_gemm *e, MlirValue base, MlirValue s) {
  return attn_b_addi(e->b, base, attn_k_mulc(e->b, s, 8));
}

/// Slot and parity of the ring's block number kb (i32).
static MlirValue slot_of(struct attn_k_gemm *e, MlirValue kb,
                         MlirValue *phase) {
  struct attn_builder *b = e->b;
  MlirValue s = attn_k_remc(b, kb, e->g->stages);
  *phase = attn_b_andi(b, attn_k_divc(b, kb, e->g->stages), attn_b_i32(b, 1));
  return s;
}

/// Shared-memory pointer of slot s's tile number (adaptive split).
static MlirValue tileq_ptr(struct attn_k_gemm *e, MlirValue s) {
  struct attn_builder *b = e->b;
  return attn_k_smem_ptr(
      b, e->smem,
      attn_k_addc(b, attn_k_mulc(b, s, 4), attn_k_gemm_tileq_off(e->g)));
}

/// The tile ordinal this rank runs at position p (i32) of its schedule: p,
/// except with own_last, where the last wave of every shard is run peers'
/// shards first and this rank's last.
static MlirValue ordinal_of(struct attn_k_gemm *e, MlirValue p) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_gemm *g = e->g;
  if (!g->own_last ||
      (g->comm != ATTN_GEMM_ALL_REDUCE && g->comm != ATTN_GEMM_REDUCE_SCATTER))
    return p;
  // Ordinal t belongs to shard (owner) t % world at position t / world of
  // it. Positions before `start` run ordinal p (interleaved shards); the
  // last world x `tail` (one wave, at most a shard) run the tail of shard
  // rank + 1, rank + 2, ..., rank: every peer has run this rank's tail a
  // wave or more before this rank does.
  int64_t tiles = e->tiles_m * e->tiles_n, per = tiles / g->world;
  int64_t tail = g->ctas < per ? g->ctas : per;
  int64_t start = tiles - (int64_t)g->world * tail;
  MlirValue j = attn_b_subi(b, p, attn_b_i32(b, start));
  MlirValue blk = attn_k_divc(b, j, tail);
  MlirValue k = attn_k_remc(b, j, tail);
  MlirValue shard =
      attn_k_remc(b, attn_b_addi(b, e->rank, attn_k_addc(b, blk, 1)), g->world);
  MlirValue t = attn_b_addi(
      b, shard, attn_k_mulc(b, attn_k_addc(b, k, per - tail), g->world));
  MlirValue in_tail = attn_k_cmpc(b, ATTN_B_SGE, p, start);
  return attn_b_select(b, in_tail, t, p);
}

/// Opens `scf.for %i = 0 to e->ntiles` (f) and returns the tile (i32) and
/// its ordinal i (i32) in *ord.
static MlirValue open_tile_loop(struct attn_k_gemm *e, struct attn_b_for *f,
                                MlirValue *ord) {
  struct attn_builder *b = e->b;
  MlirValue lo = attn_b_index(b, 0), st = attn_b_index(b, 1);
  attn_b_for_open(b, f, lo, e->ntiles, st, 0, NULL);
  *ord = attn_k_from_index(b, f->iv);
  return ordinal_of(e,
                    attn_b_addi(b, e->cbid, attn_k_mulc(b, *ord, e->g->ctas)));
}

/// The tile of unit u (i32): u itself, or with a split K tile u % tiles,
/// its slice (e->slice) u / tiles and first K block (e->kblk0).
static MlirValue unit_tile(struct attn_k_gemm *e, MlirValue u) {
  struct attn_builder *b = e->b;
  if (e->g->split_k <= 1)
    return u;
  int64_t tiles = e->tiles_m * e->tiles_n;
  e->slice = attn_k_divc(b, u, tiles);
  e->kblk0 = attn_k_mulc(b, e->slice, e->nk);
  return attn_k_remc(b, u, tiles);
}

/// Opens the adaptive split's tile loop (w): `scf.while` claiming tiles
/// from the workspace counter (producer) or reading them from the ring's
/// slots (consumers), carrying the ring position kb. Returns the tile and
/// *kb of the body; w->results are the loop's (tile, kb at the exit).
static MlirValue open_claim_loop(struct attn_k_gemm *e, struct attn_k_while *w,
                                 bool producer, MlirValue *kb) {
  struct attn_builder *b = e->b;
  MlirType i32x2[2] = {b->t.i32, b->t.i32};
  attn_k_while_open(b, w, attn_b_i32(b, 0), 2, i32x2);
  MlirValue t, go;
  if (producer) {
    t = attn_k_gemm_claim(e, ATTN_GEMM_CTL_TILE);
    go = attn_k_cmpc(b, ATTN_B_ULT, t, e->tiles_m * e->tiles_n);
  } else {
    MlirValue ph, s = slot_of(e, w->arg, &ph);
    attn_k_mbar_wait(b, bar_at(e, e->full, s), ph);
    t = attn_k_load(b, tileq_ptr(e, s), b->t.i32);
    go = attn_k_cmpc(b, ATTN_B_SGE, t, 0);
  }
  MlirValue vals[2] = {t, w->arg};
  attn_k_while_cond(b, w, go, vals);
  *kb = w->args[1];
  return w->args[0];
}

static void close_claim_loop(struct attn_k_gemm *e, struct attn_k_while *w,
                             MlirValue kb) {
  attn_k_while_close(e->b, w, attn_k_addc(e->b, kb, e->nk));
}

//===-- Producer ----------------------------------------------------------===//

/// The producer's loads of tile t (i32) into ring blocks kb0, kb0 + 1, ...
/// With the adaptive split, each slot also carries t for the consumers.
static void producer_tile(struct attn_k_gemm *e, MlirValue t, MlirValue kb0) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_gemm *g = e->g;
  MlirValue tm, tn;
  attn_k_gemm_tile_coords(e, t, &tm, &tn);
  MlirValue row = attn_k_mulc(b, tm, g->block_m), a_map = e->a_map;
  if (g->comm == ATTN_GEMM_REDUCE_SCATTER && g->m_rows) {
    // The tile's first real row; the rows of the next shard below it, if
    // any, land in padding rows, which are never stored.
    MlirValue valid;
    attn_k_gemm_real_row(e, row, false, &row, &valid);
  }
  if (g->comm == ATTN_GEMM_ALL_GATHER) {
    // This rank's rows come from a (its shard), the others' from the
    // gathered copy in the workspace once they have arrived.
    int64_t rows = g->m / g->world;
    MlirValue mine = attn_b_cmpi(
        b, ATTN_B_EQ, attn_k_divc(b, tm, rows / g->block_m), e->rank);
    attn_k_gemm_comm_wait_rows(e, tm, mine);
    a_map = attn_b_select(b, mine, e->a_map, e->g_map);
    row = attn_b_select(
        b, mine, attn_b_subi(b, row, attn_k_mulc(b, e->rank, rows)), row);
  }
  MlirValue col = attn_k_mulc(b, tn, g->block_n);
  MlirValue lo = attn_b_index(b, 0), hi = attn_b_index(b, e->nk),
            st = attn_b_index(b, 1);
  struct attn_b_for f;
  attn_b_for_open(b, &f, lo, hi, st, 0, NULL);
  MlirValue j = attn_k_from_index(b, f.iv), ph;
  MlirValue s = slot_of(e, attn_b_addi(b, kb0, j), &ph);
  attn_k_mbar_wait(b, bar_at(e, e->empty, s),
                   attn_b_xori(b, ph, attn_b_i32(b, 1)));
  MlirValue full = bar_at(e, e->full, s);
  if (g->adaptive)
    attn_k_store(b, t, tileq_ptr(e, s));
  attn_k_mbar_expect_tx(b, full, e->stage_bytes);
  MlirValue slot = attn_b_addi(b, e->sbase, attn_k_mulc(b, s, e->stage_bytes));
  MlirValue kcol = attn_k_mulc(
                b, g->split_k > 1 ? attn_b_addi(b, e->kblk0, j) : j, BLOCK_K),
            zero = attn_b_i32(b, 0);
  MlirValue ca[4] = {kcol, row, zero, zero};
  attn_k_tma_load(b, slot, a_map, ca, full);
  for (int r = 0; r < g->block_n / 64; ++r) {
    MlirValue cb[4] = {attn_k_addc(b, col, 64 * r), kcol, zero, zero};
    attn_k_tma_load(
        b, attn_k_addc(b, slot, e->a_bytes + (int64_t)r * BLOCK_K * 128),
        e->b_map, cb, full);
  }
  attn_b_for_close(b, &f, 0, NULL);
}

static void producer(struct attn_k_gemm *e, MlirValue wt) {
  struct attn_builder *b = e->b;
  if (attn_gemm_has_mail(e->g)) {
    attn_k_gemm_signaler(e, wt);
    attn_builder_role(b, "gemm.producer");
  }
  struct attn_b_if one;
  attn_b_if_open(b, &one, attn_k_cmpc(b, ATTN_B_EQ, wt, 0), 0, NULL, false);
  if (!e->g->adaptive) {
    struct attn_b_for f;
    MlirValue ord, t = unit_tile(e, open_tile_loop(e, &f, &ord));
    producer_tile(e, t, attn_k_mulc(b, ord, e->nk));
    attn_b_for_close(b, &f, 0, NULL);
  } else {
    struct attn_k_while w;
    MlirValue kb, t = open_claim_loop(e, &w, true, &kb);
    producer_tile(e, ordinal_of(e, t), kb);
    close_claim_loop(e, &w, kb);
    // No tile left: a slot holding -1 tells the consumers.
    MlirValue ph,
        s = slot_of(e, attn_b_addi(b, w.results[1], attn_b_i32(b, 0)), &ph);
    attn_k_mbar_wait(b, bar_at(e, e->empty, s),
                     attn_b_xori(b, ph, attn_b_i32(b, 1)));
    attn_k_store(b, attn_b_i32(b, -1), tileq_ptr(e, s));
    attn_k_mbar_arrive(b, bar_at(e, e->full, s));
  }
  attn_b_if_close(b, &one, 0, NULL);
}

//===-- Consumers ---------------------------------------------------------===//

/// Issues the four k16 steps of one K block for this consumer's 64 rows.
static void issue_block(struct attn_k_gemm *e, MlirValue slot, MlirValue cw,
                        MlirValue *acc) {
  struct attn_builder *b = e->b;
  MlirValue a = attn_b_addi(b, slot, attn_k_mulc(b, cw, 64 * 128));
  MlirValue desc_a = attn_k_make_desc(b, a, 16, 1024);
  MlirValue desc_b = attn_k_make_desc(b, attn_k_addc(b, slot, e->a_bytes),
                                      (int64_t)BLOCK_K * 128, 1024);
  MlirValue one = attn_b_i32(b, 1);
  attn_k_wgmma_fence(b);
  for (int kk = 0; kk < BLOCK_K / 16; ++kk)
    attn_k_wgmma_ss(
        b, e->g->bf16, acc, e->nacc, attn_k_desc_add(b, desc_a, kk * 32),
        attn_k_desc_add(b, desc_b, (int64_t)kk * 16 * 128), one, true);
  attn_k_wgmma_commit(b);
}

/// One tile t (i32) from ring blocks kb0, kb0 + 1, ...; with waited, the
/// first block's full barrier has been waited for already.
static void consumer_tile(struct attn_k_gemm *e, MlirValue t, MlirValue kb0,
                          MlirValue cw, MlirValue wt, bool waited) {
  struct attn_builder *b = e->b;
  int n = e->nacc;
  MlirValue tm, tn;
  attn_k_gemm_tile_coords(e, t, &tm, &tn);
  // The wgmma descriptors depend on the ring slot only, and LLVM hoists
  // those of every slot it can name out of the tile loop: the first
  // block's when nk is a multiple of stages, all of them (64 registers)
  // when it also unrolls a short K loop (nk = stages = 4, K = 256). The
  // plain epilogue leaves room for them; RoPE's sin/cos does not, so with
  // RoPE they are recomputed per tile (a few integer ops per K block).
  MlirValue sbase = e->g->rope ? attn_k_pin(b, e->sbase, "r") : e->sbase;
  MlirValue zero = attn_b_f32(b, 0.0f);
  MlirValue acc[ATTN_K_MAX_REGS];
  for (int i = 0; i < n; ++i)
    acc[i] = zero;
  // K block 0 outside the loop: every later step releases the slot before it.
  {
    MlirValue ph, s = slot_of(e, kb0, &ph);
    if (!waited)
      attn_k_mbar_wait(b, bar_at(e, e->full, s), ph);
    issue_block(e, attn_b_addi(b, sbase, attn_k_mulc(b, s, e->stage_bytes)), cw,
                acc);
  }
  MlirValue lo = attn_b_index(b, 1), hi = attn_b_index(b, e->nk),
            st = attn_b_index(b, 1);
  struct attn_b_for f;
  attn_b_for_open(b, &f, lo, hi, st, n, acc);
  {
    MlirValue a2[ATTN_K_MAX_REGS];
    memcpy(a2, f.args, sizeof(MlirValue) * (size_t)n);
    MlirValue kb = attn_b_addi(b, kb0, attn_k_from_index(b, f.iv)), ph, php;
    MlirValue s = slot_of(e, kb, &ph);
    MlirValue sp = slot_of(e, attn_k_addc(b, kb, -1), &php);
    attn_k_mbar_wait(b, bar_at(e, e->full, s), ph);
    issue_block(e, attn_b_addi(b, sbase, attn_k_mulc(b, s, e->stage_bytes)), cw,
                a2);
    // The previous block's wgmmas are done once at most one group is left.
    attn_k_wgmma_wait(b, 1);
    attn_k_mbar_arrive(b, bar_at(e, e->empty, sp));
    attn_b_for_close(b, &f, n, a2);
  }
  MlirValue nz = attn_b_f32(b, -0.0f);
  for (int i = 0; i < n; ++i)
    acc[i] = attn_b_addf(b, f.results[i], nz);
  attn_k_wgmma_wait(b, 0);
  attn_k_reg_fence(b, acc, n, "f");
  {
    MlirValue ph, s = slot_of(e, attn_k_addc(b, kb0, e->nk - 1), &ph);
    attn_k_mbar_arrive(b, bar_at(e, e->empty, s));
  }
  attn_k_gemm_epilogue(e, acc, t, tm, tn, cw, wt);
  attn_builder_role(b, "gemm.consumer");
}

static void consumer(struct attn_k_gemm *e, MlirValue wg, MlirValue wt) {
  struct attn_builder *b = e->b;
  MlirValue cw = attn_k_addc(b, wg, -1);
  attn_k_gemm_epilogue_open(e, cw, wt);
  attn_builder_role(b, "gemm.consumer");
  if (!e->g->adaptive) {
    struct attn_b_for f;
    MlirValue ord, t = unit_tile(e, open_tile_loop(e, &f, &ord));
    consumer_tile(e, t, attn_k_mulc(b, ord, e->nk), cw, wt, false);
    attn_b_for_close(b, &f, 0, NULL);
    attn_k_gemm_epilogue_close(e, cw, wt);
    return;
  }
  struct attn_k_while w;
  MlirValue kb, t = open_claim_loop(e, &w, false, &kb);
  consumer_tile(e, t, kb, cw, wt, true);
  close_claim_loop(e, &w, kb);
  attn_k_gemm_epilogue_close(e, cw, wt);
  attn_builder_role(b, "gemm.consumer");
  // The GEMM is done on this SM: its consumers help communicate.
  if (e->g->comm != ATTN_GEMM_LOCAL)
    attn_k_gemm_comm_help(e, attn_k_addc(b, e->tid, -128));
}

//===-- The manifest entry ------------------------------------------------===//

/// A row-major matrix parameter, 16-byte aligned (TMA and the bulk copies).
static struct attn_k_param matrix(const char *name, const char *ty,
                                  int64_t rows, int64_t cols) {
  struct attn_k_param p = {
      .name = name, .dtype = ty, .shape = {rows, cols}, .rank = 2, .align = 16};
  return p;
}

/// The tensor map of a row-major rows x cols matrix, box_rows x 64 boxes.
static struct attn_k_param map(const char *name, const char *tensor,
                               const char *ty, int64_t rows, int64_t cols,
                               int box_rows) {
  struct attn_k_param p = {.name = name,
                           .dtype = ty,
                           .tensor = tensor,
                           .dims = {cols, rows, 1, 1},
                           .box_rows = box_rows};
  return p;
}

/// {name, kind = "ptr", dtype = "i64", shape = array<i64: n>}.
static MlirAttribute i64_array_param(struct attn_builder *b, const char *name,
                                     int64_t n) {
  MlirNamedAttribute a[] = {
      attn_b_named(b, "name", attn_b_attr_str(b, name)),
      attn_b_named(b, "kind", attn_b_attr_str(b, "ptr")),
      attn_b_named(b, "dtype", attn_b_attr_str(b, "i64")),
      attn_b_named(b, "shape", attn_b_attr_i64s(b, 1, &n)),
  };
  return mlirDictionaryAttrGet(b->ctx, 4, a);
}

/// {name, kind = "i32"}.
static MlirAttribute i32_param(struct attn_builder *b, const char *name) {
  MlirNamedAttribute a[] = {
      attn_b_named(b, "name", attn_b_attr_str(b, name)),
      attn_b_named(b, "kind", attn_b_attr_str(b, "i32")),
  };
  return mlirDictionaryAttrGet(b->ctx, 2, a);
}

/// The fused kernel's own parameters, after c: the workspace, the ranks'
/// workspaces and outputs, the rank and the launch count.
static intptr_t fused_params(struct attn_builder *b,
                             const struct attn_hopper_gemm *g,
                             MlirAttribute *out) {
  MlirNamedAttribute ws[] = {
      attn_b_named(b, "name", attn_b_attr_str(b, "workspace")),
      attn_b_named(b, "kind", attn_b_attr_str(b, "ptr")),
      attn_b_named(b, "align", attn_b_attr_i64(b, 256)),
  };
  out[0] = mlirDictionaryAttrGet(b->ctx, 3, ws);
  out[1] = i64_array_param(b, "peers", g->world);
  out[2] = i64_array_param(b, "out_peers", g->world);
  out[3] = i32_param(b, "rank");
  out[4] = i32_param(b, "epoch");
  return 5;
}

/// The manifest's "comm" entry of a fused kernel.
static MlirAttribute comm_attr(struct attn_builder *b,
                               const struct attn_k_gemm *e) {
  static const char *names[] = {"", "matmul_all_reduce", "all_gather_matmul",
                                "matmul_reduce_scatter"};
  const struct attn_hopper_gemm *g = e->g;
  MlirNamedAttribute a[] = {
      attn_b_named(b, "pattern", attn_b_attr_str(b, names[g->comm])),
      attn_b_named(b, "world_size", attn_b_attr_i64(b, g->world)),
      attn_b_named(b, "compute_ctas", attn_b_attr_i64(b, g->ctas)),
      attn_b_named(b, "comm_ctas", attn_b_attr_i64(b, g->comm_ctas)),
      attn_b_named(b, "workspace_bytes", attn_b_attr_i64(b, e->ws_at.bytes)),
      attn_b_named(b, "split",
                   attn_b_attr_str(b, g->adaptive ? "adaptive" : "static")),
  };
  return mlirDictionaryAttrGet(b->ctx, 6, a);
}

/// The choices the defaults made, for the manifest's reader ("gemm").
static MlirAttribute choices_attr(struct attn_builder *b,
                                  const struct attn_hopper_gemm *g) {
  MlirNamedAttribute a[5];
  intptr_t n = 0;
  a[n++] = attn_b_named(b, "stages", attn_b_attr_i64(b, g->stages));
  a[n++] = attn_b_named(b, "group_m", attn_b_attr_i64(b, g->group_m));
  a[n++] = attn_b_named(b, "epilogue",
                        attn_b_attr_str(b, g->staged ? "staged" : "registers"));
  if (g->comm == ATTN_GEMM_ALL_REDUCE || g->comm == ATTN_GEMM_REDUCE_SCATTER)
    a[n++] = attn_b_named(
        b, "order",
        attn_b_attr_str(b, g->own_last ? "own-last" : "interleaved"));
  if (g->split_k > 1)
    a[n++] = attn_b_named(b, "split_k", attn_b_attr_i64(b, g->split_k));
  return mlirDictionaryAttrGet(b->ctx, n, a);
}

/// The attn.launch entry: the matrices, a fused kernel's own parameters,
/// the tensor maps, then "comm", "gemm" and "matmul" (when not null).
static MlirAttribute launch_attr(struct attn_k_gemm *e, MlirAttribute matmul) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_gemm *g = e->g;
  const char *ty = g->bf16 ? "bf16" : "f16";
  bool fused = g->comm != ATTN_GEMM_LOCAL;
  int64_t rows = g->m_rows ? g->m_rows : g->m;
  int64_t c_rows = g->comm == ATTN_GEMM_REDUCE_SCATTER ? rows / g->world : rows;
  bool ag = g->comm == ATTN_GEMM_ALL_GATHER;
  int64_t a_rows = ag ? rows / g->world : rows;
  struct attn_k_param p[6];
  intptr_t np = 0;
  p[np++] = matrix("a", ty, a_rows, g->k);
  p[np++] = matrix("b", ty, g->k, g->n);
  p[np++] = g->split_k > 1 ? matrix("partials", "f32", g->split_k * g->m, g->n)
                           : matrix("c", ty, c_rows, g->n);
  p[np++] = map("a_map", "a", ty, a_rows, g->k, g->block_m);
  p[np++] = map("b_map", "b", ty, g->k, g->n, BLOCK_K);
  if (ag)
    p[np++] = map("g_map", "workspace", ty, g->m, g->k, g->block_m);
  MlirNamedAttribute extra[3];
  intptr_t nx = 0;
  if (fused)
    extra[nx++] = attn_b_named(b, "comm", comm_attr(b, e));
  extra[nx++] = attn_b_named(b, "gemm", choices_attr(b, g));
  if (!mlirAttributeIsNull(matmul))
    extra[nx++] = attn_b_named(b, "matmul", matmul);
  int64_t grid[3] = {g->ctas + (fused ? g->comm_ctas : 0), 1, 1};
  MlirAttribute launch =
      attn_k_launch_attr(b, fused ? "hopper-gemm-comm" : "hopper-gemm", grid,
                         ATTN_HOPPER_GEMM_THREADS,
                         attn_hopper_gemm_smem_bytes(g), np, p, nx, extra);
  if (!fused)
    return launch;
  // A fused kernel's own parameters go between c and the maps.
  MlirAttribute old = mlirDictionaryAttrGetElementByName(
      launch, mlirStringRefCreateFromCString("params"));
  MlirAttribute ps[ATTN_K_MAX_PARAMS];
  intptr_t n = 0;
  for (intptr_t i = 0; i < 3; ++i)
    ps[n++] = mlirArrayAttrGetElement(old, i);
  n += fused_params(b, g, ps + n);
  for (intptr_t i = 3; i < mlirArrayAttrGetNumElements(old); ++i)
    ps[n++] = mlirArrayAttrGetElement(old, i);
  MlirNamedAttribute keys[ATTN_K_MAX_PARAMS];
  intptr_t nk = mlirDictionaryAttrGetNumElements(launch);
  for (intptr_t i = 0; i < nk; ++i) {
    keys[i] = mlirDictionaryAttrGetElement(launch, i);
    if (mlirStringRefEqual(mlirIdentifierStr(keys[i].name),
                           mlirStringRefCreateFromCString("params")))
      keys[i].attribute = mlirArrayAttrGet(b->ctx, n, ps);
  }
  return mlirDictionaryAttrGet(b->ctx, nk, keys);
}

//===-- The kernel --------------------------------------------------------===//

/// {llvm.align = 64, llvm.byval = !llvm.array<128 x i8>,
/// nvvm.grid_constant}: a tensor map passed by value.
static MlirAttribute map_arg_attrs(struct attn_builder *b) {
  MlirNamedAttribute a[] = {
      attn_b_named(b, "llvm.align", attn_b_attr_i64(b, 64)),
      attn_b_named(b, "llvm.byval",
                   attn_b_attr_type(b, mlirLLVMArrayTypeGet(b->t.i8, 128))),
      attn_b_named(b, "nvvm.grid_constant", attn_b_attr_unit(b)),
  };
  return mlirDictionaryAttrGet(b->ctx, 3, a);
}

/// The kernel's body: the shared values, the communication role of a fused
/// kernel's first CTAs, the barriers, and the producer and consumer
/// warpgroups.
static void build_body(struct attn_k_gemm *e, const struct attn_b_func *f) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_gemm *g = e->g;
  bool fused = g->comm != ATTN_GEMM_LOCAL;
  intptr_t maps = fused ? 8 : 3; // the first tensor map's argument
  attn_builder_role(b, "gemm");
  e->tid = attn_k_sreg(b, "tid.x");
  e->bid = attn_k_sreg(b, "ctaid.x");
  // Communication CTAs come first (lowest block numbers start first).
  e->cbid = fused ? attn_k_addc(b, e->bid, -g->comm_ctas) : e->bid;
  int64_t tiles = e->tiles_m * e->tiles_n * g->split_k;
  e->a = attn_b_func_arg(f, 0);
  e->c = attn_k_gep_const(b, attn_b_func_arg(f, 2), 0);
  e->out = e->c;
  if (fused) {
    e->ws = attn_k_gep_const(b, attn_b_func_arg(f, 3), 0);
    e->peers = attn_k_ptrtoint(b, attn_b_func_arg(f, 4), b->t.i64);
    e->out_peers = attn_k_ptrtoint(b, attn_b_func_arg(f, 5), b->t.i64);
    e->rank = attn_b_addi(b, attn_b_func_arg(f, 6), attn_b_i32(b, 0));
    e->epoch = attn_b_addi(b, attn_b_func_arg(f, 7), attn_b_i32(b, 0));
    if (g->comm == ATTN_GEMM_ALL_GATHER)
      e->g_map = attn_k_ptrtoint(b, attn_b_func_arg(f, maps + 2), b->t.i64);
    if (g->comm != ATTN_GEMM_ALL_GATHER)
      e->out = attn_k_gep_const(b, e->ws, (int32_t)e->ws_at.data);
  }
  // Tiles of this compute CTA: ceil((tiles - cbid) / ctas).
  e->ntiles = attn_k_to_index(
      b, attn_k_divc(
             b, attn_b_subi(b, attn_b_i32(b, tiles + g->ctas - 1), e->cbid),
             g->ctas));
  MlirValue raw = attn_k_addressof(b, "attn_smem", b->t.ptr_shared);
  MlirValue raw_i = attn_k_ptrtoint(b, raw, b->t.i32);
  MlirValue pad = attn_b_subi(
      b, attn_b_andi(b, attn_k_addc(b, raw_i, 1023), attn_b_i32(b, ~1023)),
      raw_i);
  e->smem = attn_k_smem_ptr(b, raw, pad);
  e->sbase = attn_b_addi(b, raw_i, pad);
  e->a_map = attn_k_ptrtoint(b, attn_b_func_arg(f, maps), b->t.i64);
  e->b_map = attn_k_ptrtoint(b, attn_b_func_arg(f, maps + 1), b->t.i64);
  e->full = attn_k_addc(b, e->sbase, e->bar_off);
  e->empty = attn_k_addc(b, e->full, 8LL * g->stages);

  struct attn_b_if role, init, split;
  if (fused) {
    attn_b_if_open(b, &role, attn_k_cmpc(b, ATTN_B_ULT, e->bid, g->comm_ctas),
                   0, NULL, true);
    attn_k_gemm_comm_role(e);
    attn_b_if_else(b, &role, 0, NULL);
  }
  attn_b_if_open(b, &init, attn_k_cmpc(b, ATTN_B_EQ, e->tid, 0), 0, NULL,
                 false);
  for (int s = 0; s < g->stages; ++s) {
    attn_k_mbar_init(b, attn_k_addc(b, e->full, 8 * s), 1);
    attn_k_mbar_init(b, attn_k_addc(b, e->empty, 8 * s), 256);
  }
  if (attn_gemm_has_mail(g))
    attn_k_gemm_mail_init(e);
  attn_k_fence_mbar_init(b);
  attn_b_if_close(b, &init, 0, NULL);
  attn_k_bar_sync(b, (MlirValue){NULL}, 0);

  MlirValue wg = attn_k_divc(b, e->tid, 128), wt = attn_k_remc(b, e->tid, 128);
  attn_b_if_open(b, &split, attn_k_cmpc(b, ATTN_B_EQ, wg, 0), 0, NULL, true);
  attn_builder_role(b, "gemm.producer");
  attn_k_setmaxnreg(b, false, PRODUCER_REGS);
  producer(e, wt);
  attn_b_if_else(b, &split, 0, NULL);
  attn_builder_role(b, "gemm.consumer");
  attn_k_setmaxnreg(b, true, CONSUMER_REGS);
  consumer(e, wg, wt);
  attn_builder_role(b, "gemm");
  attn_b_if_close(b, &split, 0, NULL);
  if (fused) {
    attn_b_if_close(b, &role, 0, NULL);
    attn_k_gemm_comm_finish(e);
  }
}

bool attn_kernels_build_hopper_gemm(MlirOperation gpu_module, MlirLocation loc,
                                    const struct attn_hopper_gemm *g,
                                    MlirAttribute matmul) {
  MlirContext ctx = mlirLocationGetContext(loc);
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  struct attn_k_gemm e = {.b = &b, .g = g};
  e.nacc = g->block_n / 2;
  attn_k_gemm_layout(&e);
  bool fused = g->comm != ATTN_GEMM_LOCAL;

  attn_k_declare_libdevice(&b, gpu_module, 1024);
  // (a, b, c[, ws, peers, out_peers, rank, epoch], a_map, b_map[, g_map])
  MlirType types[11];
  MlirAttribute args[11];
  intptr_t nargs = 0;
  MlirAttribute none = mlirDictionaryAttrGet(ctx, 0, NULL);
  for (int i = 0; i < (fused ? 6 : 3); ++i) {
    types[nargs] = b.t.ptr;
    args[nargs++] = none;
  }
  if (fused)
    for (int i = 0; i < 2; ++i) {
      types[nargs] = b.t.i32;
      args[nargs++] = none;
    }
  for (int i = 0; i < (g->comm == ATTN_GEMM_ALL_GATHER ? 3 : 2); ++i) {
    types[nargs] = b.t.ptr;
    args[nargs++] = map_arg_attrs(&b);
  }
  MlirNamedAttribute attrs[4];
  intptr_t nattrs = attn_k_kernel_attrs(&b, ATTN_HOPPER_GEMM_THREADS,
                                        launch_attr(&e, matmul), attrs);
  struct attn_b_func f;
  attn_builder_role(&b, "gemm");
  attn_k_llvm_func_open_typed(&b, &f, g->name, nargs, types, args, nattrs, attrs);
  build_body(&e, &f);
  attn_builder_role(&b, "gemm");
  return attn_k_llvm_func_finish(&b, &f);
}
