//===- gemm_comm.c - Collectives fused into the persistent Hopper GEMM ----===//
//
// The communication half of the fused GEMM + collective kernels (mKernel
// style), built: CTAs 0 .. comm_ctas-1 move data between the GPUs of one
// NVLink domain while the other CTAs run the GEMM, tile by tile, as tiles
// are finished. Peers are reached by load/store at the addresses NCCL's
// device API gives for the symmetric workspace, which the kernel reads from
// the `peers` table attnrt makes once per workspace
// (attnrt_comm_buffer_peers, computed by the NCCL device shim's
// attn_nccl_peer_table kernel). The kernel calls no shim function: ptxas
// serializes every wgmma of a kernel that has an extern call (C7509) and
// ignores its setmaxnreg (C7504). Every transfer is a push: a CTA reads its
// own GPU's memory and stores into a peer's workspace over NVLink, so that
// no warp waits for an NVLink round trip except to read a flag. C can be
// any buffer, except that a fused all-reduce whose C is a symmetric buffer
// (out_peers, attnrt_comm_launch_out) writes the peers' C.
//
//   matmul_all_reduce      compute CTAs store their bf16 partial tile into
//                          its slot in the workspace of the tile's owner
//                          (t % world) and count it in the owner's
//                          flags0[t]; the owner sums every rank's partial,
//                          writes C and the sum into every other rank's C
//                          (with out_peers) or result region, and counts it
//                          in their flags1; without out_peers the other
//                          ranks copy their result region into C.
//   matmul_reduce_scatter  the same reduction, for the tiles of each rank's
//                          rows, at that rank (tile ordinals interleave the
//                          shards, so every rank reduces while the GEMM
//                          runs); no result goes back.
//   all_gather_matmul      communication CTAs read this rank's rows of A
//                          (the argument a) and store them into every other
//                          rank's gathered copy in its workspace,
//                          block by block in the order the compute CTAs need
//                          them, and count each in that rank's
//                          flags0[block]; the TMA producer waits for a
//                          block's flag before loading it.
//
// The communication is done by warps, each taking its own tasks (a 64-row
// slab of an output tile, or 8 rows of a block of A), so that a CTA keeps a
// dozen transfers in flight. Flags are counters that grow by a fixed amount
// per launch (two consumer warpgroups per partial tile, one per reduced
// slab, sixteen parts per gathered block), compared against that
// amount times the launch number `epoch` (1, 2, ...), so the zero-filled
// workspace is never reset. The last CTA of a rank to
// finish bumps every rank's end counter and waits for all of them: no rank
// starts the next launch (and overwrites its workspace) while a peer may
// still read it. Every wait gives up after ATTN_COMM_WAIT_NS and traps, so
// a dead peer fails the launch instead of hanging it.
//
// The ops, and their order, are those of the text writer this file replaced
// (lib/Transforms/hopper_comm.c), so that the kernels' PTX is unchanged:
// where the text nested calls, their operands were made right to left (as
// GCC evaluated the arguments), and the code below names each in that
// order. Every op is located at the tile kernel named "comm" or a finer
// role (comm.signal, comm.wait, comm.finish, ...).
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"

#include <stdio.h>
#include <string.h>

/// How long a wait for a peer may take before the kernel traps: 10 s.
#define ATTN_COMM_WAIT_NS 10000000000LL

// Offsets in the workspace's control block.
#define CTL_DONE 0 // CTAs of this rank that finished, over all launches
#define CTL_END 8  // ranks that finished, over all launches

/// New ops are named role; returns the location to go back to.
static MlirLocation role(struct attn_k_gemm *e, const char *name) {
  MlirLocation prev = e->b->loc;
  attn_builder_role(e->b, name);
  return prev;
}

static void role_end(struct attn_k_gemm *e, MlirLocation prev) {
  e->b->loc = prev;
}

//===-- Memory and signals ------------------------------------------------===//

/// i64 address of byte off (constant) from the i64 address base.
static MlirValue at(struct attn_k_gemm *e, MlirValue base, long long off) {
  return off ? attn_b_addi(e->b, base, attn_b_i64(e->b, off)) : base;
}

static MlirValue addv(struct attn_k_gemm *e, MlirValue base, MlirValue off64) {
  return attn_b_addi(e->b, base, off64);
}

static MlirValue ptr_i64(struct attn_k_gemm *e, MlirValue ptr) {
  return attn_k_ptrtoint(e->b, ptr, e->b->t.i64);
}

static MlirValue ext64(struct attn_k_gemm *e, MlirValue v) {
  return attn_k_i64_of(e->b, v);
}

/// i64 product of v (i32, zero-extended) and the constant c: the constant
/// first, as the text made it.
static MlirValue mul64c(struct attn_k_gemm *e, MlirValue v, long long c) {
  MlirValue k = attn_b_i64(e->b, c);
  return attn_b_muli(e->b, ext64(e, v), k);
}

/// `llvm.inline_asm` with one i64 result over the i64 address addr.
static MlirValue asm_l(struct attn_k_gemm *e, MlirType res, const char *cons,
                       const char *text, MlirValue addr) {
  return attn_b_result(attn_k_asm(e->b, res, cons, text, 1, &addr), 0);
}

/// The i64 address of rank peer's (constant) workspace: entry peer of the
/// peer table attnrt made for the workspace (attnrt_comm_buffer_peers: NCCL's
/// load/store address of each rank's copy), the workspace argument itself for
/// this rank (the table's entry for it is the same address, but the argument
/// keeps flags and data of a rank behind one address whatever the caller
/// passes). A load, not a call into the NCCL device shim: a kernel with an
/// extern call has its wgmma serialized and its setmaxnreg ignored by ptxas.
static MlirValue peer_base(struct attn_k_gemm *e, int peer) {
  struct attn_builder *b = e->b;
  MlirValue addr = at(e, e->peers, 8LL * peer);
  // Inline PTX, as the text had it: a non-coherent 64-bit load (an
  // llvm.load with !invariant.load metadata is the upstream route, a later
  // step with a GPU check).
  MlirValue remote =
      asm_l(e, b->t.i64, "=l,l", "ld.global.nc.u64 $0, [$1];", addr);
  MlirValue local = ptr_i64(e, e->ws);
  MlirValue is_me = attn_b_cmpi(b, ATTN_B_EQ, attn_b_i32(b, peer), e->rank);
  return attn_b_select(b, is_me, local, remote);
}

/// One thread: waits until the u32 at addr is at least target (acquire at
/// scope "sys" or "gpu"); traps after ATTN_COMM_WAIT_NS.
static void wait_ge(struct attn_k_gemm *e, MlirValue addr, MlirValue target,
                    const char *scope) {
  attn_k_wait_until(e->b, addr, "ge", target, scope, ATTN_COMM_WAIT_NS);
}

/// One thread: adds 1 to the u32 at addr with release order at scope.
static void signal_add(struct attn_k_gemm *e, MlirValue addr,
                       const char *scope) {
  // Inline PTX: llvm.atomicrmw add release with a syncscope becomes a plain
  // atom.global.add under llc-22 (sm_90a), without the release.
  char text[160];
  snprintf(text, sizeof text, "red.release.%s.global.add.u32 [$0], 1;", scope);
  attn_k_asm(e->b, (MlirType){NULL}, "l", text, 1, &addr);
}

/// 16 bytes at addr (L2, not L1: peers write this memory during the kernel).
static void ld16(struct attn_k_gemm *e, MlirValue addr, MlirValue w[4]) {
  struct attn_builder *b = e->b;
  // Inline PTX, as the text had it: ld.global.cg has no upstream op.
  MlirValue r = asm_l(e, attn_k_struct(b, 4, b->t.i32), "=r,=r,=r,=r,l",
                      "ld.global.cg.v4.u32 {$0, $1, $2, $3}, [$4];", addr);
  for (int i = 0; i < 4; ++i)
    w[i] = attn_k_extract(b, r, i, b->t.i32);
}

static void st16(struct attn_k_gemm *e, MlirValue addr, const MlirValue w[4]) {
  // Inline PTX, as the text had it (a vector llvm.store is the upstream
  // route, a later step with a GPU check).
  MlirValue opd[] = {addr, w[0], w[1], w[2], w[3]};
  attn_k_asm(e->b, (MlirType){NULL}, "l,r,r,r,r",
             "st.global.v4.u32 [$0], {$1, $2, $3, $4};", 5, opd);
}

/// Sum of two words of two 16-bit floats each, in f32, rounded once.
static MlirValue add2(struct attn_k_gemm *e, MlirValue x, MlirValue y) {
  struct attn_builder *b = e->b;
  bool bf16 = e->g->bf16;
  MlirValue xlo, xhi, ylo, yhi;
  attn_k_unpack2(b, bf16, x, &xlo, &xhi);
  attn_k_unpack2(b, bf16, y, &ylo, &yhi);
  MlirValue hi = attn_b_addf(b, xhi, yhi);
  MlirValue lo = attn_b_addf(b, xlo, ylo);
  return attn_k_pack2(b, bf16, lo, hi);
}

/// The threads that move data together: one warp. Lane lane (i32) of 32;
/// a communication CTA is 12 warps, the consumer warpgroups of a compute CTA
/// that joins (adaptive split) 8; each warp takes its own tasks, so a CTA has
/// a dozen transfers in flight and a task never waits on a CTA barrier.
struct team {
  MlirValue lane, warp;
};

#define LANES 32
/// Rows of an output tile one task moves, and the share of a 128-row block
/// of A one all-gather task copies.
#define SLAB_ROWS ATTN_GEMM_SLAB_ROWS
#define GATHER_ROWS 8

/// Opens the region of the team's lane 0.
static void if_first(struct attn_k_gemm *e, const struct team *tm,
                     struct attn_b_if *s) {
  attn_b_if_open(e->b, s, attn_k_cmpc(e->b, ATTN_B_EQ, tm->lane, 0), 0, NULL,
                 false);
}

/// The warp meets again after lane 0's wait (and orders its lanes' memory).
static void sync_team(struct attn_k_gemm *e) {
  attn_k_warp_sync(e->b);
}

/// Opens the region of the CTA's thread 0.
static void if_thread0(struct attn_k_gemm *e, struct attn_b_if *s) {
  attn_b_if_open(e->b, s, attn_k_cmpc(e->b, ATTN_B_EQ, e->tid, 0), 0, NULL,
                 false);
}

static void sync_cta(struct attn_k_gemm *e) {
  attn_k_bar_sync(e->b, (MlirValue){NULL}, 0);
}

/// The workspace base of rank `rank` (i32) among the world's bases.
static MlirValue select_base(struct attn_k_gemm *e, const MlirValue *bases,
                             MlirValue rank) {
  MlirValue base = bases[0];
  for (int p = 1; p < e->g->world; ++p)
    base = attn_b_select(e->b, attn_k_cmpc(e->b, ATTN_B_EQ, rank, p),
                         bases[p], base);
  return base;
}

/// i1 not x.
static MlirValue not1(struct attn_k_gemm *e, MlirValue x) {
  MlirValue t = attn_b_constant(e->b, attn_b_attr_bool(e->b, true));
  return attn_b_xori(e->b, x, t);
}

//===-- Tiles -------------------------------------------------------------===//

/// Byte offset (i64) in an m x n (or m/world x n) matrix of chunk ci (i32,
/// 16 bytes: 8 elements) of the slab whose first element is (row0, col0).
static MlirValue chunk_off(struct attn_k_gemm *e, MlirValue ci, MlirValue row0,
                           MlirValue col0) {
  struct attn_builder *b = e->b;
  int per_row = e->g->block_n / 8;
  MlirValue row = attn_b_addi(b, row0, attn_k_divc(b, ci, per_row));
  MlirValue col =
      attn_b_addi(b, col0, attn_k_mulc(b, attn_k_remc(b, ci, per_row), 8));
  MlirValue col64 = ext64(e, col);
  MlirValue rows = mul64c(e, row, e->g->n);
  MlirValue elems = attn_b_addi(b, rows, col64);
  return attn_b_muli(b, elems, attn_b_i64(b, 2));
}

/// Reduces (nsrc > 1) or copies (nsrc == 1) one slab of SLAB_ROWS rows:
/// for every chunk of this lane, the sum of the chunk at srcs[i] + off,
/// stored at each dsts[j] + off' (off' with the destination's own row
/// origin drow0[j]). Eight chunks at a time, all loads first, so that many
/// NVLink reads are in flight. With padded rows (g->m_rows), the chunks of
/// destination rows from limit on (drow0[0]'s count) are not stored, nor
/// on the last tile column the chunks past n.
static void move_slab(struct attn_k_gemm *e, const struct team *tm,
                      const MlirValue *srcs, int nsrc, const MlirValue *dsts,
                      const MlirValue *drow0, int ndst, MlirValue row0,
                      MlirValue col0) {
  struct attn_builder *b = e->b;
  int64_t limit = e->g->m_rows / attn_gemm_shards(e->g);
  bool tail_n = e->g->n % e->g->block_n != 0;
  int total = SLAB_ROWS * e->g->block_n / 8;
  int per = total / LANES; // chunks per lane: SLAB_ROWS * block_n / 256
  // Up to 16 loads of 16 bytes in flight per lane (8 with more than two
  // destinations, whose addresses take registers too): the latency of each
  // round, not bandwidth, bounds a warp; more spills registers.
  int budget = ndst > 2 ? 8 : 16;
  int unroll = budget / nsrc < 1 ? 1 : budget / nsrc;
  while (per % unroll)
    --unroll;
  // Rounds of `unroll` chunks: an scf.for, so the code stays one round long.
  MlirValue step = attn_b_index(b, unroll);
  MlirValue hi = attn_b_index(b, per);
  MlirValue lo = attn_b_index(b, 0);
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, lo, hi, step, 0, NULL);
  MlirValue j0 = attn_k_from_index(b, loop.iv);
  MlirValue first = attn_b_addi(b, tm->lane, attn_k_mulc(b, j0, LANES));
  MlirValue w[32][8][4], cis[32];
  for (int j = 0; j < unroll; ++j) {
    cis[j] = attn_k_addc(b, first, (long long)j * LANES);
    MlirValue off = chunk_off(e, cis[j], row0, col0);
    for (int s = 0; s < nsrc; ++s)
      ld16(e, addv(e, srcs[s], off), w[j][s]);
  }
  for (int j = 0; j < unroll; ++j) {
    MlirValue sum[4];
    for (int i = 0; i < 4; ++i) {
      sum[i] = w[j][0][i];
      for (int s = 1; s < nsrc; ++s)
        sum[i] = add2(e, sum[i], w[j][s][i]);
    }
    MlirValue keep = {NULL};
    if (limit) {
      MlirValue row = attn_b_addi(
          b, drow0[0], attn_k_divc(b, cis[j], e->g->block_n / 8));
      keep = attn_k_cmpc(b, ATTN_B_SLT, row, limit);
    }
    if (tail_n) {
      MlirValue col = attn_b_addi(
          b, col0,
          attn_k_mulc(b, attn_k_remc(b, cis[j], e->g->block_n / 8), 8));
      MlirValue in = attn_k_cmpc(b, ATTN_B_SLT, col, e->g->n);
      keep = mlirValueIsNull(keep) ? in : attn_b_andi(b, keep, in);
    }
    struct attn_b_if kept;
    if (!mlirValueIsNull(keep))
      attn_b_if_open(b, &kept, keep, 0, NULL, false);
    for (int d = 0; d < ndst; ++d)
      st16(e, addv(e, dsts[d], chunk_off(e, cis[j], drow0[d], col0)), sum);
    if (!mlirValueIsNull(keep))
      attn_b_if_close(b, &kept, 0, NULL);
  }
  attn_b_for_close(b, &loop, 0, NULL);
}

//===-- Tasks -------------------------------------------------------------===//

/// What every task needs: the ranks' workspace bases, this rank's, and C.
/// All-reduce also needs, for the other ranks (rank + j) % world, j = 1 ..
/// world - 1, at index j - 1: their workspace (others) and where their
/// copy of a sum goes (sums): straight into their C when C is a symmetric
/// buffer (direct: out_peers is not 0), else into their result region.
struct comm_ctx {
  MlirValue bases[8];
  MlirValue local, c, a;
  MlirValue others[8], sums[8];
  MlirValue direct, results; // i1: out_peers given, and not
};

static int slabs(const struct attn_k_gemm *e) {
  return e->g->block_m / SLAB_ROWS;
}

/// Tasks of the reduce patterns, one slab of SLAB_ROWS rows each: task q is
/// slab q % slabs of tile ordinal i = q / slabs (all-reduce: every tile;
/// reduce-scatter: this rank's ordinals rank + world i). Every rank's
/// partial of the tile is in the owner's workspace, one slot per rank, once
/// flags0[t] there reached 2 world epoch. The owner sums the slots into C.
/// For all-reduce it also writes the sum into every other rank's C when C is
/// a symmetric buffer (a rank's C is free to write once its partial of the
/// tile is in: it runs this launch, so its stream has finished with C's old
/// contents, and the end barrier keeps its kernel running until the sums
/// have landed), else into every other rank's result region, and counts the
/// slab in every other rank's flags1[q] either way: with release order, so
/// the sums are visible there before the count, and so that the counts keep
/// up with the launch number when a workspace serves launches of both
/// kinds. Without out_peers a rank that does not own the tile copies its
/// result region into C once the slab is counted.
/// Every access to another GPU is a store: no warp waits for an NVLink
/// round trip except to read a flag.
static void task_reduce(struct attn_k_gemm *e, const struct team *tm,
                        const struct comm_ctx *x, MlirValue q) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_gemm *g = e->g;
  bool all = g->comm == ATTN_GEMM_ALL_REDUCE;
  int64_t mn = g->m * g->n * 2;
  MlirValue i = attn_k_divc(b, q, slabs(e));
  MlirValue slab = attn_k_remc(b, q, slabs(e));
  MlirValue t =
      all ? i : attn_b_addi(b, e->rank, attn_k_mulc(b, i, g->world));
  MlirValue tr, tc;
  attn_k_gemm_tile_coords(e, t, &tr, &tc);
  MlirValue slab_row = attn_k_mulc(b, slab, SLAB_ROWS);
  MlirValue row0 =
      attn_b_addi(b, attn_k_mulc(b, tr, g->block_m), slab_row);
  MlirValue col0 = attn_k_mulc(b, tc, g->block_n);
  MlirValue srcs[8];
  for (int p = 0; p < g->world; ++p)
    srcs[p] = at(e, x->local, e->ws_at.data + (int64_t)p * mn);
  struct attn_b_if owner;
  if (all) {
    MlirValue mine =
        attn_b_cmpi(b, ATTN_B_EQ, attn_k_remc(b, t, g->world), e->rank);
    attn_b_if_open(b, &owner, mine, 0, NULL, true);
  }
  struct attn_b_if first;
  if_first(e, tm, &first);
  MlirValue target = attn_k_mulc(b, e->epoch, 2 * g->world);
  MlirValue foff = ext64(e, attn_k_mulc(b, t, 4));
  wait_ge(e, addv(e, at(e, x->local, e->ws_at.flags0), foff), target, "sys");
  attn_b_if_close(b, &first, 0, NULL);
  sync_team(e);
  if (!all) {
    MlirValue shard = attn_k_mulc(b, e->rank, g->m / g->world);
    MlirValue drow = attn_b_subi(b, row0, shard);
    move_slab(e, tm, srcs, g->world, &x->c, &drow, 1, row0, col0);
    return;
  }
  // C here, and every other rank's C or result region.
  MlirValue dsts[8], drow[8];
  dsts[0] = x->c;
  drow[0] = row0;
  for (int j = 1; j < g->world; ++j) {
    dsts[j] = x->sums[j - 1];
    drow[j] = row0;
  }
  move_slab(e, tm, srcs, g->world, dsts, drow, g->world, row0, col0);
  sync_team(e);
  if_first(e, tm, &first);
  MlirValue qoff = ext64(e, attn_k_mulc(b, q, 4));
  for (int j = 1; j < g->world; ++j)
    signal_add(e, addv(e, at(e, x->others[j - 1], e->ws_at.flags1), qoff),
               "sys");
  attn_b_if_close(b, &first, 0, NULL);
  attn_b_if_else(b, &owner, 0, NULL);
  struct attn_b_if copy;
  attn_b_if_open(b, &copy, x->results, 0, NULL, false);
  if_first(e, tm, &first);
  qoff = ext64(e, attn_k_mulc(b, q, 4));
  wait_ge(e, addv(e, at(e, x->local, e->ws_at.flags1), qoff), e->epoch,
          "sys");
  attn_b_if_close(b, &first, 0, NULL);
  sync_team(e);
  MlirValue src = at(e, x->local, e->ws_at.data + (int64_t)g->world * mn);
  move_slab(e, tm, &src, 1, &x->c, &row0, 1, row0, col0);
  attn_b_if_close(b, &copy, 0, NULL);
  attn_b_if_close(b, &owner, 0, NULL);
}

static int gather_parts(const struct attn_k_gemm *e) {
  return e->g->block_m / GATHER_ROWS;
}

/// All-gather task q: rows [GATHER_ROWS p, GATHER_ROWS (p + 1)) (p = q %
/// parts) of this rank's row block b = l % rbs (l = q / parts), written
/// into their place in the gathered copy of rank r = rank + 1 + l / rbs
/// (mod world) and counted in r's flags0 for its TMA producer.
static void task_gather(struct attn_k_gemm *e, const struct team *tm,
                        const struct comm_ctx *x, MlirValue q) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_gemm *g = e->g;
  int64_t rbs = e->tiles_m / g->world; // row blocks per rank
  int64_t blk = (int64_t)g->block_m * g->k * 2;
  int64_t part = (int64_t)GATHER_ROWS * g->k * 2, chunks = part / 16;
  MlirValue l = attn_k_divc(b, q, gather_parts(e));
  MlirValue pi = attn_k_remc(b, q, gather_parts(e));
  MlirValue r = attn_k_remc(
      b, attn_b_addi(b, e->rank, attn_k_addc(b, attn_k_divc(b, l, rbs), 1)),
      g->world);
  MlirValue bk = attn_k_remc(b, l, rbs);
  MlirValue rb = attn_b_addi(b, attn_k_mulc(b, e->rank, rbs), bk);
  MlirValue poff = mul64c(e, pi, part);
  MlirValue from = addv(e, addv(e, x->a, mul64c(e, bk, blk)), poff);
  MlirValue peer = select_base(e, x->bases, r);
  MlirValue to_blk = mul64c(e, rb, blk);
  MlirValue to = addv(e, addv(e, at(e, peer, e->ws_at.data), to_blk), poff);
  // With padded rows (g->m_rows), the rows from this rank's last real one
  // on are neither read (a has no more) nor written; the part is counted
  // all the same.
  int64_t real = g->m_rows / g->world, row_chunks = g->k * 2 / 16;
  MlirValue first_row = {NULL};
  struct attn_b_if real_rows;
  if (g->m_rows) {
    MlirValue part_row = attn_k_mulc(b, pi, GATHER_ROWS);
    first_row = attn_b_addi(b, attn_k_mulc(b, bk, g->block_m), part_row);
    attn_b_if_open(b, &real_rows,
                   attn_k_cmpc(b, ATTN_B_SLT, first_row, real), 0, NULL,
                   false);
  }
  // 16-byte chunks, 16 per lane per step, loads first (local reads, remote
  // writes).
  const int unroll = 16;
  long long step = (long long)LANES * unroll;
  MlirValue vstep = attn_b_index(b, step);
  MlirValue vend = attn_b_index(b, chunks);
  MlirValue vlane = attn_k_to_index(b, tm->lane);
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, vlane, vend, vstep, 0, NULL);
  MlirValue i = attn_k_from_index(b, loop.iv);
  MlirValue w[16][4], offs[16];
  for (int j = 0; j < unroll; ++j) {
    MlirValue ci = attn_k_addc(b, i, (long long)j * LANES);
    if (chunks % step)
      ci = attn_b_minui(b, ci, attn_b_i32(b, chunks - 1)); // repeats the last
    if (g->m_rows && real % GATHER_ROWS) {
      // A part across the last real row: its chunks past that row repeat
      // the row's last chunk, and are not stored.
      MlirValue one = attn_b_i32(b, 1);
      MlirValue left = attn_b_subi(b, attn_b_i32(b, real), first_row);
      MlirValue last =
          attn_b_subi(b, attn_k_mulc(b, left, row_chunks), one);
      ci = attn_b_binary(b, "arith.minsi", ci, last);
    }
    offs[j] = mul64c(e, ci, 16);
    ld16(e, addv(e, from, offs[j]), w[j]);
  }
  for (int j = 0; j < unroll; ++j)
    st16(e, addv(e, to, offs[j]), w[j]);
  attn_b_for_close(b, &loop, 0, NULL);
  if (g->m_rows)
    attn_b_if_close(b, &real_rows, 0, NULL);
  sync_team(e);
  struct attn_b_if first;
  if_first(e, tm, &first);
  MlirValue foff = ext64(e, attn_k_mulc(b, rb, 4));
  signal_add(e, addv(e, at(e, peer, e->ws_at.flags0), foff), "sys");
  attn_b_if_close(b, &first, 0, NULL);
}

static int64_t ntasks(const struct attn_k_gemm *e) {
  const struct attn_hopper_gemm *g = e->g;
  int64_t tiles = e->tiles_m * e->tiles_n;
  switch (g->comm) {
  case ATTN_GEMM_ALL_REDUCE:
    return tiles * slabs(e);
  case ATTN_GEMM_REDUCE_SCATTER:
    return tiles / g->world * slabs(e);
  case ATTN_GEMM_ALL_GATHER:
    return (int64_t)(g->world - 1) * (e->tiles_m / g->world) * gather_parts(e);
  default:
    return 0;
  }
}

static void task(struct attn_k_gemm *e, const struct team *tm,
                 const struct comm_ctx *x, MlirValue q) {
  if (e->g->comm == ATTN_GEMM_ALL_GATHER)
    task_gather(e, tm, x, q);
  else
    task_reduce(e, tm, x, q);
}

static void comm_ctx_init(struct attn_k_gemm *e, struct comm_ctx *x) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_gemm *g = e->g;
  for (int p = 0; p < g->world; ++p)
    x->bases[p] = peer_base(e, p);
  x->local = ptr_i64(e, e->ws);
  x->c = ptr_i64(e, e->c);
  x->a = ptr_i64(e, e->a);
  if (g->comm != ATTN_GEMM_ALL_REDUCE)
    return;
  x->direct = attn_b_cmpi(b, ATTN_B_NE, e->out_peers, attn_b_i64(b, 0));
  x->results = not1(e, x->direct);
  // Without out_peers the entry is read from the workspace's table (any
  // valid address) and not used.
  MlirValue table = attn_b_select(b, x->direct, e->out_peers, e->peers);
  int64_t results = e->ws_at.data + (int64_t)g->world * g->m * g->n * 2;
  for (int j = 1; j < g->world; ++j) {
    MlirValue p = attn_k_remc(b, attn_k_addc(b, e->rank, j), g->world);
    x->others[j - 1] = select_base(e, x->bases, p);
    MlirValue addr = addv(e, table, ext64(e, attn_k_mulc(b, p, 8)));
    MlirValue c =
        asm_l(e, b->t.i64, "=l,l", "ld.global.nc.u64 $0, [$1];", addr);
    x->sums[j - 1] =
        attn_b_select(b, x->direct, c, at(e, x->others[j - 1], results));
  }
}

MlirValue attn_k_gemm_claim(struct attn_k_gemm *e, int ctl) {
  MlirLocation prev = role(e, "comm.claim");
  MlirValue addr = at(e, ptr_i64(e, e->ws), e->ws_at.ctl + ctl);
  // Inline PTX, not yet moved: llvm.atomicrmw add monotonic at the
  // "device" syncscope gives the same atom (relaxed, gpu) as
  // attn_k_atom_inc64 does; the fused kernels' cubins are still to be
  // compared.
  MlirValue n = asm_l(e, e->b->t.i32, "=r,l",
                      "atom.relaxed.gpu.global.add.u32 $0, [$1], 1;", addr);
  role_end(e, prev);
  return n;
}

/// Adaptive split: the warp claims tasks from the workspace counter until
/// none is left; lane 0 claims and broadcasts with a shuffle. An scf.while
/// whose before region claims (yielding the task to its after region) and
/// whose after region runs it.
static void claim_tasks(struct attn_k_gemm *e, const struct team *tm,
                        const struct comm_ctx *x) {
  struct attn_builder *b = e->b;
  MlirOperation loop =
      attn_b_op(b, "scf.while", 1, &b->t.i32, 0, NULL, 0, NULL, 2);
  if (mlirOperationIsNull(loop))
    return;
  MlirLocation loc = b->loc;
  MlirBlock before = mlirBlockCreate(0, NULL, NULL);
  MlirBlock after = mlirBlockCreate(1, &b->t.i32, &loc);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(loop, 0), before);
  mlirRegionAppendOwnedBlock(mlirOperationGetRegion(loop, 1), after);
  MlirBlock outer = b->block;
  MlirOperation outer_anchor = b->anchor;
  ++b->depth;

  attn_builder_at_end(b, before);
  struct attn_b_if lane0;
  attn_b_if_open(b, &lane0, attn_k_cmpc(b, ATTN_B_EQ, tm->lane, 0), 1,
                 &b->t.i32, true);
  MlirValue mine = attn_k_gemm_claim(e, ATTN_GEMM_CTL_TASK);
  attn_b_if_else(b, &lane0, 1, &mine);
  MlirValue none = attn_b_i32(b, 0);
  attn_b_if_close(b, &lane0, 1, &none);
  MlirValue q = attn_k_shfl_idx(b, lane0.results[0], 0);
  MlirValue cond[] = {attn_k_cmpc(b, ATTN_B_ULT, q, ntasks(e)), q};
  attn_b_op(b, "scf.condition", 0, NULL, 2, cond, 0, NULL, 0);

  attn_builder_at_end(b, after);
  task(e, tm, x, mlirBlockGetArgument(after, 0));
  attn_b_op(b, "scf.yield", 0, NULL, 0, NULL, 0, NULL, 0);

  b->block = outer;
  b->anchor = outer_anchor;
  --b->depth;
}

void attn_k_gemm_comm_role(struct attn_k_gemm *e) {
  struct attn_builder *b = e->b;
  MlirLocation prev = role(e, "comm");
  struct comm_ctx x;
  comm_ctx_init(e, &x);
  struct team tm;
  tm.lane = attn_k_remc(b, e->tid, LANES);
  tm.warp = attn_k_divc(b, e->tid, LANES);
  if (e->g->adaptive) {
    claim_tasks(e, &tm, &x);
    role_end(e, prev);
    return;
  }
  // Static split: warp w of CTA b takes tasks b * 12 + w, then every
  // comm_ctas * 12-th.
  int warps = ATTN_HOPPER_GEMM_THREADS / LANES;
  MlirValue first = attn_b_addi(b, attn_k_mulc(b, e->bid, warps), tm.warp);
  MlirValue step = attn_b_index(b, (long long)e->g->comm_ctas * warps);
  MlirValue end = attn_b_index(b, ntasks(e));
  MlirValue start = attn_k_to_index(b, first);
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, start, end, step, 0, NULL);
  task(e, &tm, &x, attn_k_from_index(b, loop.iv));
  attn_b_for_close(b, &loop, 0, NULL);
  role_end(e, prev);
}

void attn_k_gemm_comm_help(struct attn_k_gemm *e, MlirValue tid) {
  struct attn_builder *b = e->b;
  MlirLocation prev = role(e, "comm.help");
  struct comm_ctx x;
  comm_ctx_init(e, &x);
  struct team tm;
  tm.lane = attn_k_remc(b, tid, LANES);
  tm.warp = attn_k_divc(b, tid, LANES);
  claim_tasks(e, &tm, &x);
  role_end(e, prev);
}

//===-- Hooks in the compute CTAs -----------------------------------------===//

/// The owner of tile t (tile row tm): t % world for all-reduce, the rank
/// whose rows it holds for reduce-scatter.
static MlirValue owner_of(struct attn_k_gemm *e, MlirValue t, MlirValue tm) {
  const struct attn_hopper_gemm *g = e->g;
  return g->comm == ATTN_GEMM_ALL_REDUCE
             ? attn_k_remc(e->b, t, g->world)
             : attn_k_divc(e->b, tm, e->tiles_m / g->world);
}

void attn_k_gemm_comm_consumer_init(struct attn_k_gemm *e) {
  MlirLocation prev = role(e, "comm.peers");
  for (int p = 0; p < e->g->world; ++p)
    e->pbase[p] = peer_base(e, p);
  role_end(e, prev);
}

MlirValue attn_k_gemm_comm_out(struct attn_k_gemm *e, MlirValue t,
                               MlirValue tm) {
  MlirLocation prev = role(e, "comm.out");
  int64_t mn = e->g->m * e->g->n * 2;
  MlirValue base = select_base(e, e->pbase, owner_of(e, t, tm));
  MlirValue slot = mul64c(e, e->rank, mn);
  MlirValue out = attn_k_inttoptr(
      e->b, addv(e, at(e, base, e->ws_at.data), slot), e->b->t.ptr);
  role_end(e, prev);
  return out;
}

/// comm_signal's ops, at the caller's location.
static void signal_tile(struct attn_k_gemm *e, MlirValue t, MlirValue tm) {
  MlirValue foff = ext64(e, attn_k_mulc(e->b, t, 4));
  MlirValue owner = select_base(e, e->pbase, owner_of(e, t, tm));
  signal_add(e, addv(e, at(e, owner, e->ws_at.flags0), foff), "sys");
}

void attn_k_gemm_comm_signal(struct attn_k_gemm *e, MlirValue t,
                             MlirValue tm) {
  MlirLocation prev = role(e, "comm.signal");
  signal_tile(e, t, tm);
  role_end(e, prev);
}

void attn_k_gemm_comm_tile_done(struct attn_k_gemm *e, MlirValue t,
                                MlirValue tm, MlirValue cw, MlirValue wt) {
  struct attn_builder *b = e->b;
  MlirLocation prev = role(e, "comm.signal");
  // This warpgroup's 64 rows are in the owner's slot: count them there.
  attn_k_bar_sync(b, attn_k_addc(b, cw, 1), 128);
  struct attn_b_if one;
  attn_b_if_open(b, &one, attn_k_cmpc(b, ATTN_B_EQ, wt, 0), 0, NULL, false);
  signal_tile(e, t, tm);
  attn_b_if_close(b, &one, 0, NULL);
  role_end(e, prev);
}

void attn_k_gemm_comm_wait_rows(struct attn_k_gemm *e, MlirValue tm,
                                MlirValue mine) {
  struct attn_builder *b = e->b;
  MlirLocation prev = role(e, "comm.wait");
  MlirValue other = not1(e, mine);
  struct attn_b_if theirs;
  attn_b_if_open(b, &theirs, other, 0, NULL, false);
  MlirValue target = attn_k_mulc(b, e->epoch, gather_parts(e));
  MlirValue foff = ext64(e, attn_k_mulc(b, tm, 4));
  wait_ge(e, addv(e, at(e, ptr_i64(e, e->ws), e->ws_at.flags0), foff), target,
          "sys");
  attn_k_fence_proxy_async(b, true);
  attn_b_if_close(b, &theirs, 0, NULL);
  role_end(e, prev);
}

void attn_k_gemm_comm_finish(struct attn_k_gemm *e) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_gemm *g = e->g;
  MlirLocation prev = role(e, "comm.finish");
  sync_cta(e);
  struct attn_b_if one;
  if_thread0(e, &one);
  MlirValue local = ptr_i64(e, e->ws);
  MlirValue addr = at(e, local, e->ws_at.ctl + CTL_DONE);
  // Inline PTX: llc-22 (sm_90a) drops the ordering of an llvm.atomicrmw
  // that releases (a plain atom.global.add, no .acq_rel).
  MlirValue old = asm_l(e, b->t.i32, "=r,l",
                        "atom.acq_rel.gpu.global.add.u32 $0, [$1], 1;", addr);
  int grid = g->ctas + g->comm_ctas;
  MlirValue launches = attn_k_mulc(b, e->epoch, grid);
  MlirValue last =
      attn_b_cmpi(b, ATTN_B_EQ, attn_k_addc(b, old, 1), launches);
  struct attn_b_if is_last;
  attn_b_if_open(b, &is_last, last, 0, NULL, false);
  if (g->adaptive) {
    // Every CTA of this rank is past its last claim: reset for the next
    // launch (which starts after this kernel ends).
    for (int ctl = ATTN_GEMM_CTL_TILE; ctl <= ATTN_GEMM_CTL_TASK; ctl += 4) {
      MlirValue p =
          attn_k_inttoptr(b, at(e, local, e->ws_at.ctl + ctl), b->t.ptr);
      attn_k_store(b, attn_b_i32(b, 0), p);
    }
  }
  for (int p = 0; p < g->world; ++p)
    signal_add(e, at(e, peer_base(e, p), e->ws_at.ctl + CTL_END), "sys");
  MlirValue ranks = attn_k_mulc(b, e->epoch, g->world);
  wait_ge(e, at(e, local, e->ws_at.ctl + CTL_END), ranks, "sys");
  attn_b_if_close(b, &is_last, 0, NULL);
  attn_b_if_close(b, &one, 0, NULL);
  role_end(e, prev);
}
