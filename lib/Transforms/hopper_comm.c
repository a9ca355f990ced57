//===- hopper_comm.c - Collectives fused into the persistent Hopper GEMM --===//
//
// The communication half of hopper_gemm.c's fused kernels (mKernel style):
// CTAs 0 .. comm_ctas-1 move data between the GPUs of one NVLink domain
// while the other CTAs run the GEMM, tile by tile, as tiles are finished.
// Peers are reached by load/store at the addresses NCCL's device API gives
// for the symmetric workspace, which the kernel reads from the `peers` table
// attnrt makes once per workspace (attnrt_comm_buffer_peers, computed by the
// NCCL device shim's attn_nccl_peer_table kernel). The kernel calls no shim
// function: ptxas serializes every wgmma of a kernel that has an extern call
// (C7509) and ignores its setmaxnreg (C7504). Every transfer is a push:
// a CTA reads its own GPU's memory and stores into a peer's workspace over
// NVLink, so that no warp waits for an NVLink round trip except to read a
// flag. C can be any buffer, except that a fused all-reduce whose C is a
// symmetric buffer (out_peers, attnrt_comm_launch_out) writes the peers' C.
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
//===----------------------------------------------------------------------===//
#include "lib/Transforms/hopper_gemm.h"
#include "lib/Transforms/hopper_ptx.h"

#include <stdio.h>

/// How long a wait for a peer may take before the kernel traps: 10 s.
#define ATTN_COMM_WAIT_NS 10000000000LL

// Offsets in the workspace's control block.
#define CTL_DONE 0  // CTAs of this rank that finished, over all launches
#define CTL_END 8   // ranks that finished, over all launches

#define V4 "!llvm.struct<(i32, i32, i32, i32)>"

//===-- Memory and signals ------------------------------------------------===//

/// i64 address of byte off (constant) from the i64 address base.
static int at(struct attn_gemm_em *e, int base, long long off) {
  return off ? attn_ptx_op(e->p, "arith.addi %%v%d, %%v%d : i64", base,
                           attn_ptx_ci64(e->p, off))
             : base;
}

static int addv(struct attn_gemm_em *e, int base, int off64) {
  return attn_ptx_op(e->p, "arith.addi %%v%d, %%v%d : i64", base, off64);
}

static int ptr_i64(struct attn_gemm_em *e, int ptr) {
  return attn_ptx_op(e->p, "llvm.ptrtoint %%v%d : !llvm.ptr to i64", ptr);
}

static int ext64(struct attn_gemm_em *e, int v) {
  return attn_ptx_op(e->p, "arith.extui %%v%d : i32 to i64", v);
}

/// The i64 address of rank peer's (constant) workspace: entry peer of the
/// peer table attnrt made for the workspace (attnrt_comm_buffer_peers: NCCL's
/// load/store address of each rank's copy), the workspace argument itself for
/// this rank (the table's entry for it is the same address, but the argument
/// keeps flags and data of a rank behind one address whatever the caller
/// passes). A load, not a call into the NCCL device shim: a kernel with an
/// extern call has its wgmma serialized and its setmaxnreg ignored by ptxas.
static int peer_base(struct attn_gemm_em *e, int peer) {
  const char *t[] = {"i64"};
  int addr = at(e, e->peers, 8LL * peer);
  int remote = attn_ptx_asmv(e->p, "i64", "=l,l", "ld.global.nc.u64 $0, [$1];",
                             1, &addr, t);
  return attn_ptx_sel(
      e->p, attn_ptx_cmp(e->p, "eq", attn_ptx_ci32(e->p, peer), e->rank),
      ptr_i64(e, e->ws), remote, "i64");
}

/// One thread: waits until the u32 at addr is at least target (acquire at
/// scope "sys" or "gpu"); traps after ATTN_COMM_WAIT_NS.
static void wait_ge(struct attn_gemm_em *e, int addr, int target,
                    const char *scope) {
  attn_ptx_wait_until(e->p, addr, "ge", target, scope, ATTN_COMM_WAIT_NS);
}

/// One thread: adds 1 to the u32 at addr with release order at scope.
static void signal_add(struct attn_gemm_em *e, int addr, const char *scope) {
  char text[160];
  snprintf(text, sizeof text,
           "red.release.%s.global.add.u32 [$0], 1;", scope);
  const char *t[] = {"i64"};
  attn_ptx_asmv(e->p, NULL, "l", text, 1, &addr, t);
}

/// 16 bytes at addr (L2, not L1: peers write this memory during the kernel).
static void ld16(struct attn_gemm_em *e, int addr, int w[4]) {
  const char *t[] = {"i64"};
  int r = attn_ptx_asmv(e->p, V4, "=r,=r,=r,=r,l",
                        "ld.global.cg.v4.u32 {$0, $1, $2, $3}, [$4];", 1,
                        &addr, t);
  for (int i = 0; i < 4; ++i)
    w[i] = attn_ptx_op(e->p, "llvm.extractvalue %%v%d[%d] : " V4, r, i);
}

static void st16(struct attn_gemm_em *e, int addr, const int w[4]) {
  int ids[] = {addr, w[0], w[1], w[2], w[3]};
  const char *t[] = {"i64", "i32", "i32", "i32", "i32"};
  attn_ptx_asmv(e->p, NULL, "l,r,r,r,r",
                "st.global.v4.u32 [$0], {$1, $2, $3, $4};", 5, ids, t);
}

/// Sum of two words of two 16-bit floats each, in f32, rounded once.
static int add2(struct attn_gemm_em *e, int a, int b) {
  int alo, ahi, blo, bhi;
  attn_ptx_unpack2(e->p, a, &alo, &ahi);
  attn_ptx_unpack2(e->p, b, &blo, &bhi);
  return attn_ptx_pack2(e->p, attn_ptx_fadd(e->p, alo, blo),
                        attn_ptx_fadd(e->p, ahi, bhi));
}

/// The threads that move data together: one warp. Lane lane (i32) of 32;
/// a communication CTA is 12 warps, the consumer warpgroups of a compute CTA
/// that joins (adaptive split) 8; each warp takes its own tasks, so a CTA has
/// a dozen transfers in flight and a task never waits on a CTA barrier.
struct team {
  int lane, warp;
};

#define LANES 32
/// Rows of an output tile one task moves, and the share of a 128-row block
/// of A one all-gather task copies.
#define SLAB_ROWS ATTN_GEMM_SLAB_ROWS
#define GATHER_ROWS 8

static void if_first(struct attn_gemm_em *e, const struct team *tm) {
  attn_ptx_line(e->p, "scf.if %%v%d {", attn_ptx_cmpc(e->p, "eq", tm->lane, 0));
}

/// The warp meets again after lane 0's wait (and orders its lanes' memory).
static void sync_team(struct attn_gemm_em *e) {
  attn_ptx_asm0(e->p, "bar.warp.sync -1;");
}

static void if_thread0(struct attn_gemm_em *e) {
  attn_ptx_line(e->p, "scf.if %%v%d {", attn_ptx_cmpc(e->p, "eq", e->tid, 0));
}

static void sync_cta(struct attn_gemm_em *e) {
  attn_ptx_asm0(e->p, "bar.sync 0;");
}

/// The workspace base of rank `rank` (i32) among the world's bases.
static int select_base(struct attn_gemm_em *e, const int *bases, int rank) {
  int b = bases[0];
  for (int p = 1; p < e->g->world; ++p)
    b = attn_ptx_sel(e->p, attn_ptx_cmpc(e->p, "eq", rank, p), bases[p], b,
                     "i64");
  return b;
}

//===-- Tiles -------------------------------------------------------------===//

/// Byte offset (i64) in an m x n (or m/world x n) matrix of chunk ci (i32,
/// 16 bytes: 8 elements) of the slab whose first element is (row0, col0).
static int chunk_off(struct attn_gemm_em *e, int ci, int row0, int col0) {
  int per_row = e->g->block_n / 8;
  int row = attn_ptx_addi(e->p, row0, attn_ptx_divc(e->p, ci, per_row));
  int col = attn_ptx_addi(e->p, col0,
                          attn_ptx_mulc(e->p, attn_ptx_remc(e->p, ci, per_row), 8));
  int elems = attn_ptx_op(e->p, "arith.addi %%v%d, %%v%d : i64",
                          attn_ptx_op(e->p, "arith.muli %%v%d, %%v%d : i64",
                                      ext64(e, row), attn_ptx_ci64(e->p, e->g->n)),
                          ext64(e, col));
  return attn_ptx_op(e->p, "arith.muli %%v%d, %%v%d : i64", elems,
                     attn_ptx_ci64(e->p, 2));
}

/// Reduces (nsrc > 1) or copies (nsrc == 1) one slab of SLAB_ROWS rows:
/// for every chunk of this lane, the sum of the chunk at srcs[i] + off,
/// stored at each dsts[j] + off' (off' with the destination's own row
/// origin drow0[j]). Eight chunks at a time, all loads first, so that many
/// NVLink reads are in flight. With padded rows (g->m_rows), the chunks of
/// destination rows from limit on (drow0[0]'s count) are not stored, nor
/// on the last tile column the chunks past n.
static void move_slab(struct attn_gemm_em *e, const struct team *tm,
                      const int *srcs, int nsrc, const int *dsts,
                      const int *drow0, int ndst, int row0, int col0) {
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
  int it = e->p->next++;
  attn_ptx_line(e->p, "scf.for %%v%d = %%v%d to %%v%d step %%v%d {", it,
                attn_ptx_cidx(e->p, 0), attn_ptx_cidx(e->p, per),
                attn_ptx_cidx(e->p, unroll));
  int j0 = attn_ptx_from_index(e->p, it);
  int first = attn_ptx_addi(e->p, tm->lane, attn_ptx_mulc(e->p, j0, LANES));
  int w[32][8][4], cis[32];
  for (int j = 0; j < unroll; ++j) {
    cis[j] = attn_ptx_addc(e->p, first, (long long)j * LANES);
    int off = chunk_off(e, cis[j], row0, col0);
    for (int s = 0; s < nsrc; ++s)
      ld16(e, addv(e, srcs[s], off), w[j][s]);
  }
  for (int j = 0; j < unroll; ++j) {
    int sum[4];
    for (int i = 0; i < 4; ++i) {
      sum[i] = w[j][0][i];
      for (int s = 1; s < nsrc; ++s)
        sum[i] = add2(e, sum[i], w[j][s][i]);
    }
    int keep = -1;
    if (limit) {
      int row = attn_ptx_addi(e->p, drow0[0],
                              attn_ptx_divc(e->p, cis[j], e->g->block_n / 8));
      keep = attn_ptx_cmpc(e->p, "slt", row, limit);
    }
    if (tail_n) {
      int col = attn_ptx_addi(
          e->p, col0,
          attn_ptx_mulc(e->p, attn_ptx_remc(e->p, cis[j], e->g->block_n / 8),
                        8));
      int in = attn_ptx_cmpc(e->p, "slt", col, e->g->n);
      keep = keep < 0 ? in
                      : attn_ptx_op(e->p, "arith.andi %%v%d, %%v%d : i1",
                                    keep, in);
    }
    if (keep >= 0)
      attn_ptx_line(e->p, "scf.if %%v%d {", keep);
    for (int d = 0; d < ndst; ++d)
      st16(e, addv(e, dsts[d], chunk_off(e, cis[j], drow0[d], col0)), sum);
    if (keep >= 0)
      attn_ptx_line(e->p, "}");
  }
  attn_ptx_line(e->p, "}");
}

//===-- Tasks -------------------------------------------------------------===//

/// What every task needs: the ranks' workspace bases, this rank's, and C.
/// All-reduce also needs, for the other ranks (rank + j) % world, j = 1 ..
/// world - 1, at index j - 1: their workspace (others) and where their
/// copy of a sum goes (sums): straight into their C when C is a symmetric
/// buffer (direct: out_peers is not 0), else into their result region.
struct comm_ctx {
  int bases[8];
  int local, c, a;
  int others[8], sums[8];
  int direct, results; // i1: out_peers given, and not
};

static int slabs(const struct attn_gemm_em *e) {
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
static void task_reduce(struct attn_gemm_em *e, const struct team *tm,
                        const struct comm_ctx *x, int q) {
  const struct attn_hopper_gemm *g = e->g;
  bool all = g->comm == ATTN_GEMM_ALL_REDUCE;
  int64_t mn = g->m * g->n * 2;
  int i = attn_ptx_divc(e->p, q, slabs(e));
  int slab = attn_ptx_remc(e->p, q, slabs(e));
  int t = all ? i
              : attn_ptx_addi(e->p, e->rank, attn_ptx_mulc(e->p, i, g->world));
  int tr, tc;
  attn_gemm_tile_coords(e, t, &tr, &tc);
  int row0 = attn_ptx_addi(e->p, attn_ptx_mulc(e->p, tr, g->block_m),
                           attn_ptx_mulc(e->p, slab, SLAB_ROWS));
  int col0 = attn_ptx_mulc(e->p, tc, g->block_n);
  int srcs[8];
  for (int p = 0; p < g->world; ++p)
    srcs[p] = at(e, x->local, e->ws_at.data + (int64_t)p * mn);
  int mine = 1;
  if (all) {
    mine = attn_ptx_cmp(e->p, "eq", attn_ptx_remc(e->p, t, g->world), e->rank);
    attn_ptx_line(e->p, "scf.if %%v%d {", mine);
  }
  if_first(e, tm);
  wait_ge(e,
          addv(e, at(e, x->local, e->ws_at.flags0),
               ext64(e, attn_ptx_mulc(e->p, t, 4))),
          attn_ptx_mulc(e->p, e->epoch, 2 * g->world), "sys");
  attn_ptx_line(e->p, "}");
  sync_team(e);
  if (!all) {
    int drow = attn_ptx_op(e->p, "arith.subi %%v%d, %%v%d : i32", row0,
                           attn_ptx_mulc(e->p, e->rank, g->m / g->world));
    move_slab(e, tm, srcs, g->world, &x->c, &drow, 1, row0, col0);
    return;
  }
  // C here, and every other rank's C or result region.
  int dsts[8], drow[8];
  dsts[0] = x->c;
  drow[0] = row0;
  for (int j = 1; j < g->world; ++j) {
    dsts[j] = x->sums[j - 1];
    drow[j] = row0;
  }
  move_slab(e, tm, srcs, g->world, dsts, drow, g->world, row0, col0);
  sync_team(e);
  if_first(e, tm);
  int foff = ext64(e, attn_ptx_mulc(e->p, q, 4));
  for (int j = 1; j < g->world; ++j)
    signal_add(e, addv(e, at(e, x->others[j - 1], e->ws_at.flags1), foff),
               "sys");
  attn_ptx_line(e->p, "}");
  attn_ptx_line(e->p, "} else {");
  attn_ptx_line(e->p, "scf.if %%v%d {", x->results);
  if_first(e, tm);
  wait_ge(e,
          addv(e, at(e, x->local, e->ws_at.flags1),
               ext64(e, attn_ptx_mulc(e->p, q, 4))),
          e->epoch, "sys");
  attn_ptx_line(e->p, "}");
  sync_team(e);
  int src = at(e, x->local, e->ws_at.data + (int64_t)g->world * mn);
  move_slab(e, tm, &src, 1, &x->c, &row0, 1, row0, col0);
  attn_ptx_line(e->p, "}");
  attn_ptx_line(e->p, "}");
}

static int gather_parts(const struct attn_gemm_em *e) {
  return e->g->block_m / GATHER_ROWS;
}

/// All-gather task q: rows [GATHER_ROWS p, GATHER_ROWS (p + 1)) (p = q %
/// parts) of this rank's row block b = l % rbs (l = q / parts), written
/// into their place in the gathered copy of rank r = rank + 1 + l / rbs
/// (mod world) and counted in r's flags0 for its TMA producer.
static void task_gather(struct attn_gemm_em *e, const struct team *tm,
                        const struct comm_ctx *x, int q) {
  const struct attn_hopper_gemm *g = e->g;
  int64_t rbs = e->tiles_m / g->world; // row blocks per rank
  int64_t blk = (int64_t)g->block_m * g->k * 2;
  int64_t part = (int64_t)GATHER_ROWS * g->k * 2, chunks = part / 16;
  int l = attn_ptx_divc(e->p, q, gather_parts(e));
  int pi = attn_ptx_remc(e->p, q, gather_parts(e));
  int r = attn_ptx_remc(
      e->p, attn_ptx_addi(e->p, e->rank,
                          attn_ptx_addc(e->p, attn_ptx_divc(e->p, l, rbs), 1)),
      g->world);
  int b = attn_ptx_remc(e->p, l, rbs);
  int rb = attn_ptx_addi(e->p, attn_ptx_mulc(e->p, e->rank, rbs), b);
  int poff = attn_ptx_op(e->p, "arith.muli %%v%d, %%v%d : i64", ext64(e, pi),
                         attn_ptx_ci64(e->p, part));
  int from = addv(e, addv(e, x->a,
                          attn_ptx_op(e->p, "arith.muli %%v%d, %%v%d : i64",
                                      ext64(e, b), attn_ptx_ci64(e->p, blk))),
                  poff);
  int peer = select_base(e, x->bases, r);
  int to = addv(e, addv(e, at(e, peer, e->ws_at.data),
                        attn_ptx_op(e->p, "arith.muli %%v%d, %%v%d : i64",
                                    ext64(e, rb), attn_ptx_ci64(e->p, blk))),
                poff);
  // With padded rows (g->m_rows), the rows from this rank's last real one
  // on are neither read (a has no more) nor written; the part is counted
  // all the same.
  int64_t real = g->m_rows / g->world, row_chunks = g->k * 2 / 16;
  int first_row = -1;
  if (g->m_rows) {
    first_row = attn_ptx_addi(e->p, attn_ptx_mulc(e->p, b, g->block_m),
                              attn_ptx_mulc(e->p, pi, GATHER_ROWS));
    attn_ptx_line(e->p, "scf.if %%v%d {",
                  attn_ptx_cmpc(e->p, "slt", first_row, real));
  }
  // 16-byte chunks, 16 per lane per step, loads first (local reads, remote
  // writes).
  const int unroll = 16;
  long long step = (long long)LANES * unroll;
  int it = e->p->next++;
  attn_ptx_line(e->p, "scf.for %%v%d = %%v%d to %%v%d step %%v%d {", it,
                attn_ptx_to_index(e->p, tm->lane), attn_ptx_cidx(e->p, chunks),
                attn_ptx_cidx(e->p, step));
  int i = attn_ptx_from_index(e->p, it);
  int w[16][4], offs[16];
  for (int j = 0; j < unroll; ++j) {
    int ci = attn_ptx_addc(e->p, i, (long long)j * LANES);
    if (chunks % step)
      ci = attn_ptx_op(e->p, "arith.minui %%v%d, %%v%d : i32", ci,
                       attn_ptx_ci32(e->p, chunks - 1)); // repeats the last
    if (g->m_rows && real % GATHER_ROWS) {
      // A part across the last real row: its chunks past that row repeat
      // the row's last chunk, and are not stored.
      int last = attn_ptx_op(
          e->p, "arith.subi %%v%d, %%v%d : i32",
          attn_ptx_mulc(e->p,
                        attn_ptx_op(e->p, "arith.subi %%v%d, %%v%d : i32",
                                    attn_ptx_ci32(e->p, real), first_row),
                        row_chunks),
          attn_ptx_ci32(e->p, 1));
      ci = attn_ptx_op(e->p, "arith.minsi %%v%d, %%v%d : i32", ci, last);
    }
    offs[j] = attn_ptx_op(e->p, "arith.muli %%v%d, %%v%d : i64", ext64(e, ci),
                          attn_ptx_ci64(e->p, 16));
    ld16(e, addv(e, from, offs[j]), w[j]);
  }
  for (int j = 0; j < unroll; ++j)
    st16(e, addv(e, to, offs[j]), w[j]);
  attn_ptx_line(e->p, "}");
  if (g->m_rows)
    attn_ptx_line(e->p, "}");
  sync_team(e);
  if_first(e, tm);
  signal_add(e,
             addv(e, at(e, peer, e->ws_at.flags0),
                  ext64(e, attn_ptx_mulc(e->p, rb, 4))),
             "sys");
  attn_ptx_line(e->p, "}");
}

static int64_t ntasks(const struct attn_gemm_em *e) {
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

static void task(struct attn_gemm_em *e, const struct team *tm,
                 const struct comm_ctx *x, int q) {
  if (e->g->comm == ATTN_GEMM_ALL_GATHER)
    task_gather(e, tm, x, q);
  else
    task_reduce(e, tm, x, q);
}

static void comm_ctx_init(struct attn_gemm_em *e, struct comm_ctx *x) {
  const struct attn_hopper_gemm *g = e->g;
  for (int p = 0; p < g->world; ++p)
    x->bases[p] = peer_base(e, p);
  x->local = ptr_i64(e, e->ws);
  x->c = ptr_i64(e, e->c);
  x->a = attn_ptx_op(e->p, "llvm.ptrtoint %%a : !llvm.ptr to i64");
  if (g->comm != ATTN_GEMM_ALL_REDUCE)
    return;
  x->direct = attn_ptx_op(e->p, "arith.cmpi ne, %%v%d, %%v%d : i64",
                          e->out_peers, attn_ptx_ci64(e->p, 0));
  x->results = attn_ptx_op(e->p, "arith.xori %%v%d, %%v%d : i1", x->direct,
                           attn_ptx_op(e->p, "arith.constant true"));
  // Without out_peers the entry is read from the workspace's table (any
  // valid address) and not used.
  int table = attn_ptx_sel(e->p, x->direct, e->out_peers, e->peers, "i64");
  int64_t results = e->ws_at.data + (int64_t)g->world * g->m * g->n * 2;
  const char *t[] = {"i64"};
  for (int j = 1; j < g->world; ++j) {
    int p = attn_ptx_remc(e->p, attn_ptx_addc(e->p, e->rank, j), g->world);
    x->others[j - 1] = select_base(e, x->bases, p);
    int addr = addv(e, table, ext64(e, attn_ptx_mulc(e->p, p, 8)));
    int c = attn_ptx_asmv(e->p, "i64", "=l,l", "ld.global.nc.u64 $0, [$1];",
                          1, &addr, t);
    x->sums[j - 1] = attn_ptx_sel(e->p, x->direct, c,
                                  at(e, x->others[j - 1], results), "i64");
  }
}

int attn_gemm_claim(struct attn_gemm_em *e, int ctl) {
  int addr = at(e, ptr_i64(e, e->ws), e->ws_at.ctl + ctl);
  const char *t[] = {"i64"};
  return attn_ptx_asmv(e->p, "i32", "=r,l",
                       "atom.relaxed.gpu.global.add.u32 $0, [$1], 1;", 1,
                       &addr, t);
}

/// Adaptive split: the warp claims tasks from the workspace counter until
/// none is left; lane 0 claims and broadcasts with a shuffle.
static void claim_tasks(struct attn_gemm_em *e, const struct team *tm,
                        const struct comm_ctx *x) {
  const char *ti[] = {"i32"};
  int res = e->p->next++;
  attn_ptx_line(e->p, "%%v%d = scf.while : () -> i32 {", res);
  int claimed = e->p->next++;
  attn_ptx_line(e->p, "%%v%d = scf.if %%v%d -> (i32) {", claimed,
                attn_ptx_cmpc(e->p, "eq", tm->lane, 0));
  attn_ptx_line(e->p, "scf.yield %%v%d : i32",
                attn_gemm_claim(e, ATTN_GEMM_CTL_TASK));
  attn_ptx_line(e->p, "} else {");
  attn_ptx_line(e->p, "scf.yield %%v%d : i32", attn_ptx_ci32(e->p, 0));
  attn_ptx_line(e->p, "}");
  int q = attn_ptx_asmv(e->p, "i32", "=r,r",
                        "shfl.sync.idx.b32 $0, $1, 0, 0x1f, 0xffffffff;", 1,
                        &claimed, ti);
  attn_ptx_line(e->p, "scf.condition(%%v%d) %%v%d : i32",
                attn_ptx_cmpc(e->p, "ult", q, ntasks(e)), q);
  int bq = e->p->next++;
  attn_ptx_line(e->p, "} do {");
  attn_ptx_line(e->p, "^bb0(%%v%d: i32):", bq);
  task(e, tm, x, bq);
  attn_ptx_line(e->p, "scf.yield");
  attn_ptx_line(e->p, "}");
}

void attn_gemm_comm_role(struct attn_gemm_em *e) {
  struct comm_ctx x;
  comm_ctx_init(e, &x);
  struct team tm = {attn_ptx_remc(e->p, e->tid, LANES),
                    attn_ptx_divc(e->p, e->tid, LANES)};
  if (e->g->adaptive) {
    claim_tasks(e, &tm, &x);
    return;
  }
  // Static split: warp w of CTA b takes tasks b * 12 + w, then every
  // comm_ctas * 12-th.
  int warps = ATTN_HOPPER_GEMM_THREADS / LANES;
  int first = attn_ptx_addi(e->p, attn_ptx_mulc(e->p, e->bid, warps), tm.warp);
  int it = e->p->next++;
  attn_ptx_line(e->p, "scf.for %%v%d = %%v%d to %%v%d step %%v%d {", it,
                attn_ptx_to_index(e->p, first), attn_ptx_cidx(e->p, ntasks(e)),
                attn_ptx_cidx(e->p, (long long)e->g->comm_ctas * warps));
  task(e, &tm, &x, attn_ptx_from_index(e->p, it));
  attn_ptx_line(e->p, "}");
}

void attn_gemm_comm_help(struct attn_gemm_em *e, int tid) {
  struct comm_ctx x;
  comm_ctx_init(e, &x);
  struct team tm = {attn_ptx_remc(e->p, tid, LANES),
                    attn_ptx_divc(e->p, tid, LANES)};
  claim_tasks(e, &tm, &x);
}

//===-- Hooks in the compute CTAs -----------------------------------------===//

/// The owner of tile t (tile row tm): t % world for all-reduce, the rank
/// whose rows it holds for reduce-scatter.
static int owner_of(struct attn_gemm_em *e, int t, int tm) {
  const struct attn_hopper_gemm *g = e->g;
  return g->comm == ATTN_GEMM_ALL_REDUCE
             ? attn_ptx_remc(e->p, t, g->world)
             : attn_ptx_divc(e->p, tm, e->tiles_m / g->world);
}

void attn_gemm_comm_consumer_init(struct attn_gemm_em *e) {
  for (int p = 0; p < e->g->world; ++p)
    e->pbase[p] = peer_base(e, p);
}

int attn_gemm_comm_out(struct attn_gemm_em *e, int t, int tm) {
  int64_t mn = e->g->m * e->g->n * 2;
  int base = select_base(e, e->pbase, owner_of(e, t, tm));
  int slot = attn_ptx_op(e->p, "arith.muli %%v%d, %%v%d : i64",
                         ext64(e, e->rank), attn_ptx_ci64(e->p, mn));
  return attn_ptx_op(e->p, "llvm.inttoptr %%v%d : i64 to !llvm.ptr",
                     addv(e, at(e, base, e->ws_at.data), slot));
}

void attn_gemm_comm_signal(struct attn_gemm_em *e, int t, int tm) {
  signal_add(e,
             addv(e,
                  at(e, select_base(e, e->pbase, owner_of(e, t, tm)),
                     e->ws_at.flags0),
                  ext64(e, attn_ptx_mulc(e->p, t, 4))),
             "sys");
}

void attn_gemm_comm_tile_done(struct attn_gemm_em *e, int t, int tm, int cw,
                              int wt) {
  // This warpgroup's 64 rows are in the owner's slot: count them there.
  attn_ptx_asm_r(e->p, "bar.sync $0, 128;", attn_ptx_addc(e->p, cw, 1));
  attn_ptx_line(e->p, "scf.if %%v%d {", attn_ptx_cmpc(e->p, "eq", wt, 0));
  attn_gemm_comm_signal(e, t, tm);
  attn_ptx_line(e->p, "}");
}

void attn_gemm_comm_wait_rows(struct attn_gemm_em *e, int tm, int mine) {
  int other = attn_ptx_op(e->p, "arith.xori %%v%d, %%v%d : i1", mine,
                          attn_ptx_op(e->p, "arith.constant true"));
  attn_ptx_line(e->p, "scf.if %%v%d {", other);
  wait_ge(e,
          addv(e, at(e, ptr_i64(e, e->ws), e->ws_at.flags0),
               ext64(e, attn_ptx_mulc(e->p, tm, 4))),
          attn_ptx_mulc(e->p, e->epoch, gather_parts(e)), "sys");
  attn_ptx_fence_proxy_async(e->p, true);
  attn_ptx_line(e->p, "}");
}

void attn_gemm_comm_finish(struct attn_gemm_em *e) {
  const struct attn_hopper_gemm *g = e->g;
  sync_cta(e);
  if_thread0(e);
  int local = ptr_i64(e, e->ws);
  const char *t[] = {"i64"};
  int addr = at(e, local, e->ws_at.ctl + CTL_DONE);
  int old = attn_ptx_asmv(e->p, "i32", "=r,l",
                          "atom.acq_rel.gpu.global.add.u32 $0, [$1], 1;", 1,
                          &addr, t);
  int grid = g->ctas + g->comm_ctas;
  int last = attn_ptx_cmp(e->p, "eq", attn_ptx_addc(e->p, old, 1),
                          attn_ptx_mulc(e->p, e->epoch, grid));
  attn_ptx_line(e->p, "scf.if %%v%d {", last);
  if (g->adaptive) {
    // Every CTA of this rank is past its last claim: reset for the next
    // launch (which starts after this kernel ends).
    for (int ctl = ATTN_GEMM_CTL_TILE; ctl <= ATTN_GEMM_CTL_TASK; ctl += 4)
      attn_ptx_line(e->p, "llvm.store %%v%d, %%v%d : i32, !llvm.ptr",
                    attn_ptx_ci32(e->p, 0),
                    attn_ptx_op(e->p, "llvm.inttoptr %%v%d : i64 to !llvm.ptr",
                                at(e, local, e->ws_at.ctl + ctl)));
  }
  for (int p = 0; p < g->world; ++p)
    signal_add(e, at(e, peer_base(e, p), e->ws_at.ctl + CTL_END),
               "sys");
  wait_ge(e, at(e, local, e->ws_at.ctl + CTL_END),
          attn_ptx_mulc(e->p, e->epoch, g->world), "sys");
  attn_ptx_line(e->p, "}");
  attn_ptx_line(e->p, "}");
}
