//===- attention_bwd_rows.c - The Hopper backward's row kernels ----------===//
//
// The kernels of the Hopper backward (attention_bwd.c) that work a row at a
// time: @<name>__pre (lse * log2(e) and D = rowsum(dO o O) per query row,
// dq_acc and the gradient buffers zeroed, the deterministic mode's turns
// reset) and @<name>__dq_out,
// @<name>__dk_out (the f32 sums times ds_scale, rotated back, in the
// element type); the workspaces' sizes; the pieces the main kernel shares.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/attention_bwd_rows.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/LLVM.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define PRE_THREADS 128  // 4 warps, 16 rows each: 64 rows a CTA
#define OUT_THREADS 256

int64_t attn_hopper_bwd_rows(const struct attn_hopper_bwd *g) {
  return (g->k.seq_q + g->block_m - 1) / g->block_m * g->block_m;
}


int64_t attn_hopper_bwd_rows_bytes(const struct attn_hopper_bwd *g) {
  int64_t bh = g->k.batch * g->k.heads;
  return 2 * 4 * bh * attn_hopper_bwd_rows(g) +
         (g->deterministic ? 4 * bh * qblocks(g) : 0);
}


int64_t attn_hopper_bwd_dq_bytes(const struct attn_hopper_bwd *g) {
  return 4 * g->k.batch * g->k.heads * attn_hopper_bwd_rows(g) * g->k.head_dim;
}

int64_t attn_hopper_bwd_dk_bytes(const struct attn_hopper_bwd *g) {
  return 4 * g->k.batch * g->k.kv_heads * g->k.seq_k * g->k.head_dim;
}



/// Opens kernel @<g name><suffix> of nargs pointer parameters (their
/// attributes arg_attrs, or none), threads threads and entry launch.
void attn_k_bwd_open_kernel(struct attn_builder *b, struct attn_b_func *f,
                        const struct attn_hopper_bwd *g, const char *suffix,
                        int nargs, MlirAttribute arg_attrs, int threads,
                        MlirAttribute launch) {
  char name[320];
  snprintf(name, sizeof name, "%s%s", g->k.name, suffix);
  MlirNamedAttribute attrs[5];
  intptr_t n = 0;
  if (!mlirAttributeIsNull(arg_attrs))
    attrs[n++] = attn_b_named(b, "arg_attrs", arg_attrs);
  n += attn_k_kernel_attrs(b, threads, launch, attrs + n);
  attn_k_llvm_func_open(b, f, name, nargs, n, attrs);
}

//===-- @<name>__pre -------------------------------------------------------===//

/// Rows of bz, h (i32) from row0 (i32): a warp per row, each lane two
/// 16-bit pairs of out and dout at a time, summed across the warp.
static void build_pre(struct attn_builder *b, const struct attn_hopper_bwd *g,
                      const struct attn_b_func *f) {
  const struct attn_hopper_kernel *k = &g->k;
  int64_t d = k->head_dim, n = k->seq_q, np = attn_hopper_bwd_rows(g);
  int64_t bhn = k->batch * k->heads * np;
  MlirValue out = attn_b_func_arg(f, 0), dout = attn_b_func_arg(f, 1),
            lse = attn_b_func_arg(f, 2), rows = attn_b_func_arg(f, 3),
            dq = attn_b_func_arg(f, 4);
  MlirValue tid = attn_k_sreg(b, "tid.x"), bx = attn_k_sreg(b, "ctaid.x");
  MlirValue h = attn_k_sreg(b, "ctaid.y"), bz = attn_k_sreg(b, "ctaid.z");
  MlirValue warp = attn_k_divc(b, tid, 32), lane = attn_k_remc(b, tid, 32);
  MlirValue bh = attn_b_addi(b, attn_k_mulc(b, bz, k->heads), h);
  MlirValue row0 =
      attn_b_addi(b, attn_k_mulc(b, bx, 64), attn_k_mulc(b, warp, 16));
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, attn_b_index(b, 0), attn_b_index(b, 16),
                  attn_b_index(b, 1), 0, NULL);
  MlirValue row = attn_b_addi(b, row0, attn_k_from_index(b, loop.iv));
  MlirValue in = attn_k_cmpc(b, ATTN_B_ULT, row, n);
  MlirValue rc = attn_b_minui(b, row, attn_b_i32(b, n - 1)); // loads in bounds
  MlirValue seqrow = attn_b_addi(b, attn_k_mulc(b, bh, n), rc);
  MlirValue base = mul64(b, seqrow, d * 2);
  MlirValue acc = attn_b_f32(b, 0.0f);
  for (int64_t w = 0; w < d / 64; ++w) {
    MlirValue off = add64(
        b, base, attn_k_i64_of(b, attn_k_mulc(b, attn_k_addc(b, lane, 32 * w), 4)));
    MlirValue o = attn_k_load(b, at(b, out, off), b->t.i32);
    MlirValue y = attn_k_load(b, at(b, dout, off), b->t.i32);
    MlirValue o0, o1, y0, y1;
    attn_k_unpack2(b, k->bf16, o, &o0, &o1);
    attn_k_unpack2(b, k->bf16, y, &y0, &y1);
    acc = attn_b_fma(b, o0, y0, acc);
    acc = attn_b_fma(b, o1, y1, acc);
  }
  for (int m = 16; m >= 1; m /= 2)
    acc = attn_b_addf(b, acc, attn_k_shfl_xor(b, acc, m));
  struct attn_b_if first;
  attn_b_if_open(b, &first, attn_k_cmpc(b, ATTN_B_EQ, lane, 0), 0, NULL,
                 false);
  MlirValue l = attn_k_load(b, at(b, lse, mul64(b, seqrow, 4)), b->t.f32);
  MlirValue l2 = attn_b_select(b, in, attn_b_mulf(b, l, attn_b_f32(b, (float)LOG2E)),
                               attn_b_f32(b, INFINITY));
  MlirValue dv = attn_b_select(b, in, acc, attn_b_f32(b, 0.0f));
  MlirValue at_row =
      attn_b_addi(b, attn_k_mulc(b, bh, np), row); // < bhn: i32 suffices
  if (g->deterministic) {
    // The query block's turn back to the first warpgroup (of the first
    // key block that sees it), by the lane writing its first row.
    struct attn_b_if t0;
    attn_b_if_open(b, &t0, attn_k_cmpc(b, ATTN_B_EQ, attn_k_remc(b, row, 64), 0),
                   0, NULL, false);
    attn_k_store(b, attn_b_i32(b, 0),
                 at(b, rows, turn_off(b, g, bh, bx)));
    attn_b_if_close(b, &t0, 0, NULL);
  }
  attn_k_store(b, l2, at(b, rows, mul64(b, at_row, 4)));
  attn_k_store(b, dv, at(b, rows, add64(b, mul64(b, at_row, 4),
                                        attn_b_i64(b, 4 * bhn))));
  attn_b_if_close(b, &first, 0, NULL);
  attn_b_for_close(b, &loop, 0, NULL);
  // dq_acc's 64 rows of the CTA, 16 bytes a thread at a time.
  MlirValue z = attn_b_f32(b, 0.0f);
  MlirValue zs[4] = {z, z, z, z};
  MlirValue cta = mul64(b, attn_b_addi(b, attn_k_mulc(b, bh, np),
                                       attn_k_mulc(b, bx, 64)),
                        d * 4);
  for (int64_t i = 0; i < 64 * d / 4 / PRE_THREADS; ++i) {
    MlirValue off = add64(
        b, cta,
        mul64(b, attn_k_addc(b, tid, i * PRE_THREADS), 16));
    attn_k_store_vec(b, zs, 4, at(b, dq, off));
  }
  // The gradient buffers zeroed, the grid's threads striding over them.
  int64_t ctas = np / 64 * k->heads * k->batch;
  MlirValue me = attn_b_addi(
      b, tid,
      attn_k_mulc(b, attn_b_addi(b, attn_k_mulc(b, bh, np / 64), bx),
                  PRE_THREADS));
  for (int j = 0; j < g->ngrads; ++j) {
    struct attn_b_for z;
    attn_b_for_open(b, &z, attn_k_to_index(b, me),
                    attn_b_index(b, attn_k_bwd_grad_elems(g, j)),
                    attn_b_index(b, ctas * PRE_THREADS), 0, NULL);
    attn_k_store(b, attn_b_f32(b, 0.0f),
                 at(b, attn_b_func_arg(f, 5 + j),
                    mul64(b, attn_k_from_index(b, z.iv), 4)));
    attn_b_for_close(b, &z, 0, NULL);
  }
}

int64_t attn_k_bwd_grad_elems(const struct attn_hopper_bwd *g, int i) {
  int64_t n = 1;
  for (int d = 0; d < g->grads[i].rank; ++d)
    n *= g->grads[i].shape[d];
  return n;
}

struct attn_k_param attn_k_bwd_grad_param(const struct attn_hopper_bwd *g,
                                          int i) {
  const struct attn_hopper_grad_buffer *gb = &g->grads[i];
  struct attn_k_param p = ptr_param(gb->name, "f32", gb->rank, gb->shape[0],
                                    gb->shape[1], gb->shape[2], gb->shape[3]);
  p.align = 4;
  return p;
}

bool attn_k_bwd_build_pre_kernel(struct attn_builder *b,
                             const struct attn_hopper_bwd *g) {
  const struct attn_hopper_kernel *k = &g->k;
  const char *ty = k->bf16 ? "bf16" : "f16";
  int64_t np = attn_hopper_bwd_rows(g);
  struct attn_k_param p[5 + ATTN_HOPPER_MAX_GRADS] = {
      ptr_param("out", ty, 4, k->batch, k->heads, k->seq_q, k->head_dim),
      ptr_param("dout", ty, 4, k->batch, k->heads, k->seq_q, k->head_dim),
      ptr_param("lse", "f32", 3, k->batch, k->heads, k->seq_q, 0),
      ptr_param("rows", "f32", 1, attn_hopper_bwd_rows_bytes(g) / 4, 0, 0, 0),
      ptr_param("dq_acc", "f32", 1, attn_hopper_bwd_dq_bytes(g) / 4, 0, 0, 0),
  };
  p[0].align = p[1].align = 4;
  p[3].align = p[4].align = 16;
  int np5 = 5;
  for (int i = 0; i < g->ngrads; ++i)
    p[np5++] = attn_k_bwd_grad_param(g, i);
  int64_t grid[3] = {np / 64, k->heads, k->batch};
  MlirAttribute launch =
      attn_k_launch_attr(b, "hopper-bwd-pre", grid, PRE_THREADS, 0, np5, p, 0,
                         NULL);
  struct attn_b_func f;
  attn_builder_role(b, "bwd.pre");
  attn_k_bwd_open_kernel(b, &f, g, "__pre", np5, (MlirAttribute){NULL},
                         PRE_THREADS, launch);
  if (!mlirOperationIsNull(f.op))
    build_pre(b, g, &f);
  return attn_k_llvm_func_finish(b, &f);
}

//===-- @<name>__dq_out and @<name>__dk_out --------------------------------===//

/// Rows of heads heads of seq rows each, pitch rows apart in acc (f32):
/// each thread one pair of a row, times the scale, rotated back, stored.
static void build_out(struct attn_builder *b, const struct attn_hopper_bwd *g,
                      const struct attn_b_func *f, bool dq) {
  const struct attn_hopper_kernel *k = &g->k;
  int64_t d = k->head_dim, pairs = d / 2, rpc = OUT_THREADS / pairs;
  int64_t heads = dq ? k->heads : k->kv_heads, seq = dq ? k->seq_q : k->seq_k;
  int64_t pitch = dq ? attn_hopper_bwd_rows(g) : seq;
  int64_t total = k->batch * heads * seq;
  MlirValue acc = attn_b_func_arg(f, 0), outp = attn_b_func_arg(f, 1);
  MlirValue tid = attn_k_sreg(b, "tid.x"), bx = attn_k_sreg(b, "ctaid.x");
  MlirValue gr = attn_b_addi(b, attn_k_mulc(b, bx, rpc),
                             attn_k_divc(b, tid, pairs));
  MlirValue pair = attn_k_remc(b, tid, pairs);
  struct attn_b_if in;
  attn_b_if_open(b, &in, attn_k_cmpc(b, ATTN_B_ULT, gr, total), 0, NULL,
                 false);
  MlirValue bh = attn_k_divc(b, gr, seq), i = attn_k_remc(b, gr, seq);
  MlirValue src = attn_b_addi(b, attn_k_mulc(b, bh, pitch), i);
  MlirValue c1, c2;
  if (k->rope) {
    attn_k_rope_pair_cols(b, k, pair, &c1, &c2);
  } else {
    c1 = attn_k_mulc(b, pair, 2);
    c2 = attn_k_addc(b, c1, 1);
  }
  MlirValue sa = mul64(b, src, d * 4);
  MlirValue x1 = attn_k_load(b, at(b, acc, add64(b, sa, mul64(b, c1, 4))),
                             b->t.f32);
  MlirValue x2 = attn_k_load(b, at(b, acc, add64(b, sa, mul64(b, c2, 4))),
                             b->t.f32);
  MlirValue sc = attn_b_f32(b, (float)g->ds_scale);
  MlirValue y1 = attn_b_mulf(b, x1, sc), y2 = attn_b_mulf(b, x2, sc);
  if (k->rope) {
    // The transposed rotation: the angle of rope_kernel.c's, negated.
    int64_t offset = dq ? k->rope_offset : k->rope_offset_k;
    MlirValue pos = attn_k_uitofp(b, attn_k_addc(b, i, offset), b->t.f32);
    MlirValue fq = attn_k_rope_inv_freq(b, k, pair), c, s;
    attn_k_sincos(b, attn_b_mulf(b, pos, fq), &c, &s);
    attn_k_rotate(b, y1, y2, c, attn_b_negf(b, s), &y1, &y2);
  }
  MlirValue da = mul64(b, gr, d * 2);
  if (k->rope && !k->interleaved) {
    attn_k_store(b, attn_k_from_f32_16(b, k->bf16, y1),
                 at(b, outp, add64(b, da, mul64(b, c1, 2))));
    attn_k_store(b, attn_k_from_f32_16(b, k->bf16, y2),
                 at(b, outp, add64(b, da, mul64(b, c2, 2))));
  } else {
    attn_k_store(b, attn_k_pack2(b, k->bf16, y1, y2),
                 at(b, outp, add64(b, da, mul64(b, c1, 2))));
  }
  attn_b_if_close(b, &in, 0, NULL);
}

bool attn_k_bwd_build_out_kernel(struct attn_builder *b,
                             const struct attn_hopper_bwd *g, bool dq) {
  const struct attn_hopper_kernel *k = &g->k;
  const char *ty = k->bf16 ? "bf16" : "f16";
  int64_t heads = dq ? k->heads : k->kv_heads, seq = dq ? k->seq_q : k->seq_k;
  int64_t bytes = dq ? attn_hopper_bwd_dq_bytes(g) : attn_hopper_bwd_dk_bytes(g);
  struct attn_k_param p[2] = {
      ptr_param(dq ? "dq_acc" : "dk_acc", "f32", 1, bytes / 4, 0, 0, 0),
      ptr_param(dq ? "dq" : "dk", ty, 4, k->batch, heads, seq, k->head_dim),
  };
  p[0].align = 4;
  p[1].align = 4;
  int64_t rpc = OUT_THREADS / (k->head_dim / 2);
  int64_t grid[3] = {(k->batch * heads * seq + rpc - 1) / rpc, 1, 1};
  MlirAttribute launch = attn_k_launch_attr(b, "hopper-bwd-out", grid,
                                            OUT_THREADS, 0, 2, p, 0, NULL);
  struct attn_b_func f;
  attn_builder_role(b, "bwd.out");
  attn_k_bwd_open_kernel(b, &f, g, dq ? "__dq_out" : "__dk_out", 2,
                         (MlirAttribute){NULL}, OUT_THREADS, launch);
  if (!mlirOperationIsNull(f.op))
    build_out(b, g, &f, dq);
  return attn_k_llvm_func_finish(b, &f);
}
