//===- rope_kernel.c - The RoPE kernel of the split and pre placements ----===//
//
// A kernel of its own that rotates every row of K (or Q) once, before the
// attention kernel reads it: 128 threads per 256 rows of one (batch, head),
// each owning 16 bytes of a row (interleaved: 4 pairs) or two 16-byte
// chunks r/2 columns apart (rotate-half: 8 pairs), with 16-byte loads and
// stores, two rows per iteration, and cos/sin stepped down the rows by a
// rotation per row. The same ops, in the same order, as
// lib/Transforms/hopper_rope.c wrote as text (rotations without fused
// multiply-adds). With explicit positions (attn_hopper_kernel's
// q_positions, k_positions: a third parameter) each row's position is
// loaded and its cos/sin computed from the frequencies in turns by the
// MUFU (attn_k_rope_turns_sincos) instead of stepped.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels_internal.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>

#define ROPE_K_THREADS 128
#define ROPE_K_ROWS 256

/// Units of 16 bytes a thread rotates per row: a chunk pair (cols c..c+7 and
/// c + r/2 ..) for rotate-half, one chunk (4 interleaved pairs) otherwise.
static int rope_k_units(const struct attn_hopper_kernel *k) {
  return (int)(k->interleaved ? k->rotary_dim / 8 : k->rotary_dim / 16);
}

bool attn_hopper_rope_k_supported(const struct attn_hopper_kernel *k) {
  int u = rope_k_units(k);
  return k->rotary_dim == k->head_dim && u > 0 && ROPE_K_THREADS % u == 0;
}

/// What the rows of one thread need: the kernel, its parameters x and x_rot
/// and vector<4xi32>.
struct rope_k {
  struct attn_builder *b;
  const struct attn_hopper_kernel *k;
  MlirValue x, x_rot;
  MlirValue positions; ///< explicit positions' parameter; null: offsets
  MlirType v4;
};

/// Element i (i32) of the vector<4xi32> v.
static MlirValue vec_elem(struct rope_k *e, MlirValue v, int i) {
  struct attn_builder *b = e->b;
  MlirValue opd[] = {v, attn_b_i32(b, i)};
  return attn_b_op1(b, "llvm.extractelement", b->t.i32, 2, opd, 0, NULL);
}

/// Byte offset of row `row` (i32) of head `head` (i64, its first row), plus
/// the thread's column offset ucol (i64).
static MlirValue row_offset(struct rope_k *e, MlirValue head, MlirValue row,
                            MlirValue ucol) {
  struct attn_builder *b = e->b;
  MlirValue r64 = attn_k_i64_of(b, row);
  MlirValue pitch = attn_b_i64(b, e->k->head_dim * 2);
  MlirValue at = attn_b_muli(b, attn_b_addi(b, head, r64), pitch);
  return attn_b_addi(b, at, ucol);
}

/// Pointer buf plus off (i64), and, for rotate-half, its partner r/2
/// columns on.
static void row_ptrs(struct rope_k *e, MlirValue buf, MlirValue off,
                     MlirValue *pa, MlirValue *pb) {
  struct attn_builder *b = e->b;
  *pa = attn_k_gep(b, buf, off);
  *pb = *pa; // interleaved: one 16-byte span, so no second pointer
  if (e->k->interleaved)
    return;
  MlirValue half = attn_b_i64(b, e->k->rotary_dim); // r/2 cols, 2 B
  *pb = attn_k_gep(b, buf, attn_b_addi(b, off, half));
}

static MlirValue load16(struct rope_k *e, MlirValue ptr) {
  struct attn_builder *b = e->b;
  MlirNamedAttribute a = attn_b_named(b, "alignment", attn_b_attr_i64(b, 16));
  return attn_b_op1(b, "llvm.load", e->v4, 1, &ptr, 1, &a);
}

/// A thread's 16 bytes (interleaved: 4 pairs) or 2 x 16 bytes (rotate-half:
/// 8 pairs) of the row at off, as the pairs' f32 x1 and x2.
static void load_row(struct rope_k *e, MlirValue off, MlirValue *x1,
                     MlirValue *x2) {
  struct attn_builder *b = e->b;
  bool bf16 = e->k->bf16;
  MlirValue pa, pb;
  row_ptrs(e, e->x, off, &pa, &pb);
  MlirValue va = load16(e, pa);
  if (e->k->interleaved) {
    for (int i = 0; i < 4; ++i)
      attn_k_unpack2(b, bf16, vec_elem(e, va, i), &x1[i], &x2[i]);
    return;
  }
  MlirValue vb = load16(e, pb);
  for (int i = 0; i < 4; ++i) {
    attn_k_unpack2(b, bf16, vec_elem(e, va, i), &x1[2 * i], &x1[2 * i + 1]);
    attn_k_unpack2(b, bf16, vec_elem(e, vb, i), &x2[2 * i], &x2[2 * i + 1]);
  }
}

/// Stores load_row's pairs, rotated (y1, y2), into x_rot at off.
static void store_row(struct rope_k *e, MlirValue off, const MlirValue *y1,
                      const MlirValue *y2) {
  struct attn_builder *b = e->b;
  bool bf16 = e->k->bf16;
  MlirValue pa, pb;
  row_ptrs(e, e->x_rot, off, &pa, &pb);
  MlirValue wa[4], wb[4];
  if (e->k->interleaved) {
    for (int i = 0; i < 4; ++i)
      wa[i] = attn_k_pack2(b, bf16, y1[i], y2[i]);
    attn_k_store_vec(b, wa, 4, pa);
    return;
  }
  for (int i = 0; i < 4; ++i) {
    wa[i] = attn_k_pack2(b, bf16, y1[2 * i], y1[2 * i + 1]);
    wb[i] = attn_k_pack2(b, bf16, y2[2 * i], y2[2 * i + 1]);
  }
  attn_k_store_vec(b, wa, 4, pa);
  attn_k_store_vec(b, wb, 4, pb);
}

/// What both bodies start from: the rows of (batch, head) a CTA rotates,
/// each thread's unit of a row and its first row (rows first, first +
/// groups, ... up to end), and the sizes behind them.
struct rows {
  int64_t heads, seq;
  int units, groups, nf; ///< nf: frequencies per unit
  MlirValue tid, h, bz, unit, g, first, end;
};

static void rows_of(struct rope_k *e, bool q, struct rows *r) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_kernel *k = e->k;
  r->heads = q ? k->heads : k->kv_heads;
  r->seq = q ? k->seq_q : k->seq_k;
  r->units = rope_k_units(k);
  r->groups = ROPE_K_THREADS / r->units;
  r->nf = k->interleaved ? 4 : 8;
  r->tid = attn_k_sreg(b, "tid.x");
  MlirValue bx = attn_k_sreg(b, "ctaid.x");
  r->h = attn_k_sreg(b, "ctaid.y");
  r->bz = attn_k_sreg(b, "ctaid.z");
  r->unit = attn_k_remc(b, r->tid, r->units);
  r->g = attn_k_divc(b, r->tid, r->units);
  MlirValue row0 = attn_k_mulc(b, bx, ROPE_K_ROWS);
  r->first = attn_b_addi(b, row0, r->g);
  MlirValue seq_v = attn_b_i32(b, r->seq);
  r->end = attn_b_minui(b, attn_k_addc(b, row0, ROPE_K_ROWS), seq_v);
}

/// The kernel's body: k's rows of K (Q when q) from x into x_rot.
static void build_body(struct rope_k *e, bool q) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_kernel *k = e->k;
  int64_t offset = q ? k->rope_offset : k->rope_offset_k;
  struct rows r;
  rows_of(e, q, &r);
  int64_t heads = r.heads, seq = r.seq;
  int groups = r.groups, nf = r.nf;
  MlirValue h = r.h, bz = r.bz, unit = r.unit;
  MlirValue first = r.first, end = r.end;
  // Frequencies of the unit's pairs, cos/sin at the first row and per step.
  MlirValue p0 = attn_k_mulc(b, unit, nf);
  MlirValue c[8], s[8], sc[8], ss[8];
  MlirValue pos = attn_k_uitofp(b, attn_k_addc(b, first, offset), b->t.f32);
  MlirValue gf = attn_b_f32(b, (float)groups);
  for (int i = 0; i < nf; ++i) {
    MlirValue f = attn_k_rope_inv_freq(b, k, attn_k_addc(b, p0, i));
    attn_k_sincos(b, attn_b_mulf(b, pos, f), &c[i], &s[i]);
    attn_k_sincos(b, attn_b_mulf(b, gf, f), &sc[i], &ss[i]);
  }
  MlirValue head = attn_k_i64_of(
      b, attn_k_mulc(b, attn_b_addi(b, attn_k_mulc(b, bz, heads), h), seq));
  MlirValue ucol = attn_k_i64_of(b, attn_k_mulc(b, unit, 16));
  // Two rows per iteration (row and row + groups), so that each thread has
  // four 16-byte loads in flight rather than two: the kernel is bound by
  // memory latency. cos/sin step by one row, twice per iteration.
  MlirValue lo = attn_k_to_index(b, first);
  MlirValue hi = attn_k_to_index(b, end);
  MlirValue st = attn_b_index(b, 2 * groups);
  MlirValue init[16];
  for (int i = 0; i < nf; ++i) {
    init[2 * i] = c[i];
    init[2 * i + 1] = s[i];
  }
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, lo, hi, st, 2 * nf, init);
  MlirValue ac[8], as[8];
  for (int i = 0; i < nf; ++i) {
    ac[i] = loop.args[2 * i];
    as[i] = loop.args[2 * i + 1];
  }
  MlirValue row = attn_k_from_index(b, loop.iv);
  // The second row, when it is past the end, loads the first again and
  // stores nothing.
  MlirValue row2 = attn_k_addc(b, row, groups);
  MlirValue has2 = attn_b_cmpi(b, ATTN_B_ULT, row2, end);
  MlirValue row2c = attn_b_select(b, has2, row2, row);
  MlirValue off = row_offset(e, head, row, ucol);
  MlirValue off2 = row_offset(e, head, row2c, ucol);
  MlirValue x1[8], x2[8], z1[8], z2[8];
  load_row(e, off, x1, x2);
  load_row(e, off2, z1, z2);
  MlirValue y1[8], y2[8], bc[8], bs[8];
  for (int i = 0; i < nf; ++i) {
    attn_k_rotate(b, x1[i], x2[i], ac[i], as[i], &y1[i], &y2[i]);
    attn_k_rotate(b, ac[i], as[i], sc[i], ss[i], &bc[i], &bs[i]);
  }
  store_row(e, off, y1, y2);
  for (int i = 0; i < nf; ++i)
    attn_k_rotate(b, z1[i], z2[i], bc[i], bs[i], &y1[i], &y2[i]);
  struct attn_b_if second;
  attn_b_if_open(b, &second, has2, 0, NULL, false);
  store_row(e, off2, y1, y2);
  attn_b_if_close(b, &second, 0, NULL);
  MlirValue nxt[16];
  for (int i = 0; i < nf; ++i)
    attn_k_rotate(b, bc[i], bs[i], sc[i], ss[i], &nxt[2 * i], &nxt[2 * i + 1]);
  attn_b_for_close(b, &loop, 2 * nf, nxt);
}

/// build_body with explicit positions (e->positions): rows row and row2c's
/// positions loaded once each per iteration, every pair's cos/sin from the
/// frequencies in turns.
static void build_body_positions(struct rope_k *e, bool q) {
  struct attn_builder *b = e->b;
  const struct attn_hopper_kernel *k = e->k;
  struct rows r;
  rows_of(e, q, &r);
  int64_t heads = r.heads, seq = r.seq;
  int groups = r.groups, nf = r.nf;
  MlirValue h = r.h, bz = r.bz, unit = r.unit;
  MlirValue first = r.first, end = r.end;
  MlirValue p0 = attn_k_mulc(b, unit, nf);
  MlirValue turns[8];
  for (int i = 0; i < nf; ++i)
    turns[i] =
        attn_k_rope_turns(b, attn_k_rope_inv_freq(b, k, attn_k_addc(b, p0, i)));
  struct attn_k_rope_pos pp = {
      .base = attn_k_rope_pos_base(b, e->positions, bz, seq), .len = seq};
  MlirValue head = attn_k_i64_of(
      b, attn_k_mulc(b, attn_b_addi(b, attn_k_mulc(b, bz, heads), h), seq));
  MlirValue ucol = attn_k_i64_of(b, attn_k_mulc(b, unit, 16));
  MlirValue lo = attn_k_to_index(b, first);
  MlirValue hi = attn_k_to_index(b, end);
  MlirValue st = attn_b_index(b, 2 * groups);
  struct attn_b_for loop;
  attn_b_for_open(b, &loop, lo, hi, st, 0, NULL);
  MlirValue row = attn_k_from_index(b, loop.iv);
  MlirValue row2 = attn_k_addc(b, row, groups);
  MlirValue has2 = attn_b_cmpi(b, ATTN_B_ULT, row2, end);
  MlirValue row2c = attn_b_select(b, has2, row2, row);
  MlirValue off = row_offset(e, head, row, ucol);
  MlirValue off2 = row_offset(e, head, row2c, ucol);
  MlirValue x1[8], x2[8], z1[8], z2[8];
  load_row(e, off, x1, x2);
  load_row(e, off2, z1, z2);
  MlirValue pos = attn_k_rope_pos_at(b, &pp, row);
  MlirValue pos2 = attn_k_rope_pos_at(b, &pp, row2c);
  MlirValue y1[8], y2[8], c, sn;
  for (int i = 0; i < nf; ++i) {
    attn_k_rope_turns_sincos(b, pos, turns[i], &c, &sn);
    attn_k_rotate(b, x1[i], x2[i], c, sn, &y1[i], &y2[i]);
  }
  store_row(e, off, y1, y2);
  for (int i = 0; i < nf; ++i) {
    attn_k_rope_turns_sincos(b, pos2, turns[i], &c, &sn);
    attn_k_rotate(b, z1[i], z2[i], c, sn, &y1[i], &y2[i]);
  }
  struct attn_b_if second;
  attn_b_if_open(b, &second, has2, 0, NULL, false);
  store_row(e, off2, y1, y2);
  attn_b_if_close(b, &second, 0, NULL);
  attn_b_for_close(b, &loop, 0, NULL);
}

/// Whether the kernel rotating K (Q when q) reads explicit positions.
static bool rope_k_positions(const struct attn_hopper_kernel *k, bool q) {
  return q ? k->q_positions : k->k_positions;
}

/// The attn.launch entry: the grid (row blocks, heads, batch), 128 threads,
/// no shared memory, kernel "rope-k" (or "rope-q") and the parameters x and
/// x_rot, 16-byte aligned (attnrt checks the pointers for the vector loads
/// and stores), and with explicit positions q_positions (k_positions).
static MlirAttribute launch_attr(struct attn_builder *b,
                                 const struct attn_hopper_kernel *k, bool q) {
  const char *x = q ? "q" : "k";
  int64_t heads = q ? k->heads : k->kv_heads;
  int64_t seq = q ? k->seq_q : k->seq_k;
  int64_t grid[3] = {(seq + ROPE_K_ROWS - 1) / ROPE_K_ROWS, heads, k->batch};
  char kind[8], rot[8];
  snprintf(kind, sizeof kind, "rope-%s", x);
  snprintf(rot, sizeof rot, "%s_rot", x);
  const char *ty = k->bf16 ? "bf16" : "f16";
  struct attn_k_param p[3] = {
      {.name = x,
       .dtype = ty,
       .shape = {k->batch, heads, seq, k->head_dim},
       .align = 16,
       .rank = 4},
      {.name = rot,
       .dtype = ty,
       .shape = {k->batch, heads, seq, k->head_dim},
       .align = 16,
       .rank = 4},
      {.name = q ? "q_positions" : "k_positions",
       .dtype = "i32",
       .shape = {k->batch, seq},
       .rank = 2},
  };
  return attn_k_launch_attr(b, kind, grid, ROPE_K_THREADS, 0,
                            rope_k_positions(k, q) ? 3 : 2, p, 0, NULL);
}

/// {llvm.noalias, llvm.<access>}: x and x_rot are distinct buffers, so the
/// loads of the next rows may pass the stores of this one.
static MlirAttribute arg_attr(struct attn_builder *b, const char *access) {
  MlirNamedAttribute a[] = {
      attn_b_named(b, "llvm.noalias", attn_b_attr_unit(b)),
      attn_b_named(b, access, attn_b_attr_unit(b)),
  };
  return mlirDictionaryAttrGet(b->ctx, 2, a);
}

bool attn_kernels_build_hopper_rope(MlirOperation gpu_module, MlirLocation loc,
                                    const struct attn_hopper_kernel *k,
                                    bool q) {
  MlirContext ctx = mlirLocationGetContext(loc);
  struct attn_builder b;
  attn_builder_init(&b, ctx, loc);
  attn_k_declare_libdevice(&b, gpu_module, 1024);
  char name[320];
  snprintf(name, sizeof name, "%s__rope_%s", k->name, q ? "q" : "k");
  int32_t maxntid[3] = {ROPE_K_THREADS, 1, 1};
  int nargs = rope_k_positions(k, q) ? 3 : 2;
  MlirAttribute args[3] = {arg_attr(&b, "llvm.readonly"),
                           arg_attr(&b, "llvm.writeonly"),
                           arg_attr(&b, "llvm.readonly")};
  MlirNamedAttribute attrs[] = {
      attn_b_named(&b, "arg_attrs", mlirArrayAttrGet(ctx, nargs, args)),
      attn_b_named(&b, "nvvm.kernel", attn_b_attr_unit(&b)),
      attn_b_named(&b, "nvvm.maxntid", mlirDenseI32ArrayGet(ctx, 3, maxntid)),
      attn_b_named(&b, "attn.launch", launch_attr(&b, k, q)),
  };
  struct attn_b_func f;
  attn_builder_role(&b, "rope.kernel");
  attn_k_llvm_func_open(&b, &f, name, nargs, 4, attrs);
  struct rope_k e = {.b = &b, .k = k};
  if (!mlirOperationIsNull(f.op)) {
    e.x = attn_b_func_arg(&f, 0);
    e.x_rot = attn_b_func_arg(&f, 1);
    if (nargs == 3)
      e.positions = attn_b_func_arg(&f, 2);
  }
  e.v4 = mlirVectorTypeGet(1, (int64_t[]){4}, b.t.i32);
  attn_builder_role(&b, "rope");
  if (nargs == 3)
    build_body_positions(&e, q);
  else
    build_body(&e, q);
  attn_builder_role(&b, "rope.kernel");
  return attn_k_llvm_func_finish(&b, &f);
}
