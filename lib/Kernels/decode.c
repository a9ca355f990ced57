//===- decode.c - The decode kernel over a KV cache, and its combine ------===//
//
// attn.fused_decode on the GPU (issue 30), memory bound: what matters is to
// read each K/V byte once, in 16-byte loads, with enough of them in
// flight. Grid (splits, Hk * row groups, B), 128 threads (4 warps):
//
// - The CTA's rows: rows_per_cta of the G * Nq query rows of K/V head g
//   (G query heads of the GQA group, Nq rows each), so one pass over the
//   keys serves them all. Each lane holds, for every row, the 8 elements
//   of q at its columns (16 bytes of q, rotated at the row's position
//   len - Nq + i with the partner columns loaded too, pre-multiplied by
//   scale * log2(e) when the scale comes first; RoPE's angles as fractions
//   of a turn in f64, sin and cos by the MUFU), its O accumulator for
//   those columns, and a running max and sum.
// - The keys: head_dim / 8 lanes per key row, so a warp reads 32 / (d / 8)
//   consecutive rows per step, and each lane issues ATTN_DECODE_KEY_STEPS
//   steps' K and V loads (16 bytes each, 8 in flight) before it computes.
//   A paged cache reads the row's page from the block table (an entry out
//   of [0, P) reads page 0, as the CPU path); keys past the split's end are
//   clamped to its last for the load and masked.
// - Scores: 8 FMAs and a butterfly over the key's lanes, the modifiers in
//   order (softcap by tanh.approx, ALiBi's slope per row), the row's masks
//   (causal: keys up to its position; the window), then the online softmax
//   over the steps' keys in exp2 form (one rescale per row per iteration;
//   -inf rows keep a zero state).
// - The end: lanes of different keys merge by shuffles, the 4 warps
//   through shared memory; with one split the CTA writes out (16-byte
//   stores), else its normalised O and log2-sum-exp into `partials`, and
//   the combine kernel (a warp per row) weighs the splits by 2^(lse - max).
//
// The split of a sequence's keys is made at run time from its length: the
// keys [lo, len) its rows can see (lo: the window's left edge of its first
// row) are cut into `splits` chunks, rounded up to the CTA's step, so
// that short sequences of a batch finish early and every split of a long
// one has work. lower-tile-to-decode picks `splits` (the cost model,
// lib/CostModel/decode_split.c).
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/decode_common.h"

#include "dialects/dialects.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int64_t attn_decode_workspace_bytes(const struct attn_decode_kernel *k) {
  if (k->splits <= 1)
    return 0;
  int64_t rows = k->batch * k->heads * k->seq_q;
  return rows * k->splits * (k->head_dim + 1) * 4;
}

bool attn_decode_supported(const struct attn_decode_kernel *k, char *why,
                           size_t wlen) {
  const char *w = NULL;
  int64_t d = k->head_dim;
  if (d != 64 && d != 128 && d != 256)
    w = "the decode kernel has head dims 64, 128 and 256 (value dim equal)";
  else if (k->seq_q < 1 || k->seq_q > 16)
    w = "the decode kernel takes 1 to 16 query rows per sequence";
  else if (k->rows_per_cta < 1 ||
           k->rows_per_cta > (k->mma ? RMAX : LANES_RMAX))
    w = k->mma ? "rows per CTA must be 1 to 8 (the tensor-core body)"
               : "rows per CTA must be 1 to 4 (the lanes body)";
  else if (k->mma && d == 256)
    w = "the decode kernel's tensor-core body has head dims 64 and 128";
  else if (k->splits < 1 || k->splits > 1024)
    w = "splits must be 1 to 1024";
  else if (k->batch > 65535 || k->kv_heads * attn_decode_row_groups(k) > 65535)
    w = "the decode grid takes at most 65535 sequences and K/V heads times "
        "row groups";
  else if (k->rope && k->interleaved && k->rotary_dim % 8)
    w = "the decode kernel's interleaved RoPE needs rotary_dim a multiple of "
        "8";
  else if (k->rope && !k->interleaved && k->rotary_dim % 16)
    w = "the decode kernel's rotate-half RoPE needs rotary_dim a multiple of "
        "16";
  else if (k->max_seq > 0x7fffffffLL - 4096)
    w = "the cache holds too many keys for 32-bit key indices";
  else if (k->append_rows < 0 || k->append_rows > k->max_seq)
    w = "the append's rows must be 0 to the cache's keys";
  else if (k->append_rows &&
           k->batch * k->kv_heads * k->append_rows * (d / 8) > 0x7fffffffLL)
    w = "the append kernel takes fewer than 2^31 16-byte chunks of new rows";
  else if (k->append_rope && k->append_interleaved && k->append_rotary_dim % 8)
    w = "the append kernel's interleaved RoPE needs rotary_dim a multiple of "
        "8";
  else if (k->append_rope && !k->append_interleaved && k->append_rotary_dim % 16)
    w = "the append kernel's rotate-half RoPE needs rotary_dim a multiple of "
        "16";
  if (w)
    snprintf(why, wlen, "%s", w);
  return w == NULL;
}

int64_t attn_decode_smem_bytes(const struct attn_decode_kernel *k) {
  return states_bytes(k) +
         (k->mma && k->kv_stages > 1 ? k->kv_stages * slot_bytes(k) : 0);
}

/// The 4 warps' states (in shared memory) merged, each thread one row's 8
/// columns: out (one split) or the partials and lse (splits).
static void merge_warps(struct dec *e) {
  struct attn_builder *b = e->b;
  const struct attn_decode_kernel *k = e->k;
  int64_t d = k->head_dim;
  attn_builder_role(b, "decode.epilogue");
  MlirValue smem = attn_k_addressof(b, "attn_smem", b->t.ptr_shared);
  attn_k_bar_sync(b, (MlirValue){NULL}, 0);
  int64_t chunks = d / 8, tasks = (int64_t)e->rb * chunks;
  struct attn_b_if act;
  attn_b_if_open(b, &act, attn_k_cmpc(b, ATTN_B_ULT, e->tid, tasks), 0, NULL,
                 false);
  MlirValue r = attn_k_divc(b, e->tid, chunks), c = attn_k_remc(b, e->tid, chunks);
  MlirValue m[NW], l[NW];
  MlirValue mm = e->ninf;
  for (int w = 0; w < NW; ++w) {
    MlirValue mo = attn_k_mulc(b, attn_k_addc(b, r, (int64_t)w * e->rb), 8);
    m[w] = attn_k_load(b, smem_at(e, smem, mo), b->t.f32);
    l[w] = attn_k_load(b, smem_at(e, smem, attn_k_addc(b, mo, 4)), b->t.f32);
    mm = attn_b_maxnumf(b, mm, m[w]);
  }
  MlirValue mu = usable_max(e, mm), lsum = e->zero, o[8];
  for (int x = 0; x < 8; ++x)
    o[x] = e->zero;
  for (int w = 0; w < NW; ++w) {
    MlirValue a = attn_k_ex2(b, attn_b_subf(b, m[w], mu));
    lsum = attn_b_fma(b, l[w], a, lsum);
    MlirValue ob = attn_k_addc(
        b,
        attn_k_mulc(b, attn_b_addi(b, attn_k_mulc(b, attn_k_addc(b, r, (int64_t)w * e->rb), d),
                                   attn_k_mulc(b, c, 8)),
                    4),
        ML_BYTES);
    for (int hv = 0; hv < 2; ++hv) {
      MlirValue v = attn_k_gemm_load_vec(
          b, smem_at(e, smem, attn_k_addc(b, ob, 16 * hv)), 4, b->t.f32, 16);
      for (int x = 0; x < 4; ++x) {
        MlirValue opd[2] = {v, attn_b_i32(b, x)};
        MlirValue f = attn_b_op1(b, "llvm.extractelement", b->t.f32, 2, opd, 0,
                                 NULL);
        o[hv * 4 + x] = attn_b_fma(b, f, a, o[hv * 4 + x]);
      }
    }
  }
  MlirValue pos = attn_b_cmpf(b, ATTN_B_F_OGT, lsum, e->zero);
  MlirValue inv = attn_b_select(b, pos, attn_b_divf(b, f32c(e, 1.0), lsum),
                                e->zero);
  for (int x = 0; x < 8; ++x)
    o[x] = attn_b_mulf(b, o[x], inv);
  // Which of the group's rows r is.
  struct drow w = dk_row_info(e, attn_b_addi(b, attn_k_mulc(b, e->rg, e->rb), r));
  MlirValue ok = w.ok, h = w.h, i = w.i;
  struct attn_b_if wr;
  attn_b_if_open(b, &wr, ok, 0, NULL, false);
  MlirValue orow = attn_b_addi(
      b, attn_b_muli(b, attn_b_addi(b, attn_k_mulc(b, e->bi, k->heads), h),
                     c32(e, k->seq_q)),
      i);
  if (k->splits <= 1) {
    MlirValue w4[4];
    for (int x = 0; x < 4; ++x)
      w4[x] = attn_k_pack2(b, k->bf16, o[2 * x], o[2 * x + 1]);
    MlirValue off = attn_b_addi(b, attn_b_muli(b, i64v(e, orow), attn_b_i64(b, d)),
                                i64v(e, attn_k_mulc(b, c, 8)));
    attn_k_store_vec(b, w4, 4, attn_k_gep_elem(b, e->out, off, elem16(e)));
  } else {
    MlirValue slot = attn_b_addi(b, attn_k_mulc(b, orow, k->splits), e->split);
    MlirValue off = attn_b_addi(b, attn_b_muli(b, i64v(e, slot), attn_b_i64(b, d)),
                                i64v(e, attn_k_mulc(b, c, 8)));
    MlirValue p = attn_k_gep_elem(b, e->out, off, b->t.f32);
    attn_k_store_vec(b, &o[0], 4, p);
    attn_k_store_vec(b, &o[4], 4, attn_k_gep_elem(b, p, attn_b_i64(b, 4), b->t.f32));
    struct attn_b_if c0;
    attn_b_if_open(b, &c0, attn_k_cmpc(b, ATTN_B_EQ, c, 0), 0, NULL, false);
    int64_t lse_base = k->batch * k->heads * k->seq_q * k->splits * d;
    MlirValue lse = attn_b_select(
        b, pos, attn_b_addf(b, mm, attn_k_lg2(b, lsum)), e->ninf);
    attn_k_store(b, lse,
                 attn_k_gep_elem(b, e->out,
                                 attn_b_addi(b, attn_b_i64(b, lse_base), i64v(e, slot)),
                                 b->t.f32));
    attn_b_if_close(b, &c0, 0, NULL);
  }
  attn_b_if_close(b, &wr, 0, NULL);
  attn_b_if_close(b, &act, 0, NULL);
}

static bool build_split(MlirOperation gm, MlirLocation loc,
                        const struct attn_decode_kernel *k, const char *name) {
  struct attn_builder bb;
  struct attn_builder *b = &bb;
  attn_builder_init(b, mlirLocationGetContext(loc), loc);
  attn_builder_role(b, "decode.setup");
  attn_builder_at_end(b, attn_b_region_block(gm, 0));
  attn_k_declare_libdevice(b, gm, 16);
  const char *ty = k->bf16 ? "bf16" : "f16";
  int64_t grid[3] = {k->splits, k->kv_heads * attn_decode_row_groups(k),
                     k->batch};
  struct attn_k_param params[6];
  int np = 0;
  params[np++] = (struct attn_k_param){
      .name = "q", .dtype = ty, .align = 16,
      .shape = {k->batch, k->heads, k->seq_q, k->head_dim}};
  params[np++] = dk_cache_param(k, "k_cache");
  params[np++] = dk_cache_param(k, "v_cache");
  params[np++] = dk_cache_param(k, "cache_seqlens");
  if (k->paged)
    params[np++] = dk_cache_param(k, "block_table");
  if (k->splits <= 1)
    params[np++] = (struct attn_k_param){
        .name = "out", .dtype = ty, .align = 16,
        .shape = {k->batch, k->heads, k->seq_q, k->head_dim}};
  else
    params[np++] = (struct attn_k_param){
        .name = "partials", .dtype = "f32", .align = 16, .rank = 1,
        .shape = {attn_decode_workspace_bytes(k) / 4}};
  MlirNamedAttribute extra[] = {
      attn_b_named(b, "decode", dk_decode_info(b, k)),
  };
  MlirAttribute launch = attn_k_launch_attr(b, "decode", grid,
                                            ATTN_DECODE_THREADS, attn_decode_smem_bytes(k),
                                            np, params, 1, extra);
  MlirNamedAttribute attrs[4];
  intptr_t na = attn_k_kernel_attrs(b, ATTN_DECODE_THREADS, launch, attrs);
  // ctas_per_sm: ptxas keeps the registers to what that many CTAs allow.
  if (k->ctas_per_sm > 1)
    attrs[2] = attn_b_named(b, "nvvm.minctasm", attn_b_attr_i32(b, k->ctas_per_sm));
  MlirType types[6];
  MlirAttribute args[6];
  for (int i = 0; i < np; ++i) {
    types[i] = b->t.ptr;
    args[i] = dk_param_attrs(b, i == np - 1 ? "llvm.writeonly" : "llvm.readonly");
  }
  struct attn_b_func f;
  attn_k_llvm_func_open_typed(b, &f, name, np, types, args, na, attrs);
  struct dec e;
  memset(&e, 0, sizeof e);
  e.b = b;
  e.k = k;
  e.lpk = (int)(k->head_dim / 8);
  e.kpw = 32 / e.lpk;
  e.rb = k->rows_per_cta;
  int a = 0;
  e.q = attn_b_func_arg(&f, a++);
  e.kc = attn_b_func_arg(&f, a++);
  e.vc = attn_b_func_arg(&f, a++);
  e.lens = attn_b_func_arg(&f, a++);
  if (k->paged)
    e.table = attn_b_func_arg(&f, a++);
  e.out = attn_b_func_arg(&f, a++);
  e.ninf = f32c(&e, -INFINITY);
  e.zero = f32c(&e, 0.0);
  e.tid = attn_k_sreg(b, "tid.x");
  e.lane = attn_k_andc(b, e.tid, 31);
  e.warp = attn_k_divc(b, e.tid, 32);
  e.ks = attn_k_divc(b, e.lane, e.lpk);
  e.dp = attn_k_remc(b, e.lane, e.lpk);
  e.split = attn_k_sreg(b, "ctaid.x");
  MlirValue gy = attn_k_sreg(b, "ctaid.y");
  int64_t groups = attn_decode_row_groups(k);
  e.g = attn_k_divc(b, gy, groups);
  e.rg = attn_k_remc(b, gy, groups);
  e.bi = attn_k_sreg(b, "ctaid.z");
  MlirValue len = attn_k_load(
      b, attn_k_gep_elem(b, e.lens, i64v(&e, e.bi), b->t.i32), b->t.i32);
  e.len = smin(&e, smax(&e, len, c32(&e, 0)), c32(&e, k->max_seq));
  // The keys the CTA's rows may see, [lo, len), cut into splits chunks of
  // whole iterations.
  MlirValue lo = c32(&e, 0);
  if (k->has_window && k->window_left >= 0)
    lo = smax(&e, lo, attn_k_addc(b, e.len, -k->seq_q - k->window_left));
  lo = smin(&e, lo, e.len);
  int64_t ki = k->mma ? (int64_t)NW * MMA_KEYS : (int64_t)NW * e.kpw * KEY_STEPS;
  if (k->mma) // splits start on whole warp steps (one page each)
    lo = attn_b_andi(b, lo, c32(&e, -MMA_KEYS));
  MlirValue n = attn_b_subi(b, e.len, lo);
  MlirValue chunk = attn_k_mulc(
      b, attn_k_divc(b, attn_k_addc(b, n, (int64_t)k->splits * ki - 1),
                     (int64_t)k->splits * ki),
      ki);
  e.start = smin(&e, attn_b_addi(b, lo, attn_b_muli(b, e.split, chunk)), e.len);
  e.end = smin(&e, attn_b_addi(b, e.start, chunk), e.len);
  if (k->mma) {
    dk_mma_rows(&e);
    MlirValue st[4 * 8 + 4];
    dk_mma_key_loop(&e, st);
    dk_mma_store(&e, st);
  } else {
    dk_lanes_rows(&e);
    MlirValue st[10 * LANES_RMAX];
    dk_lanes_key_loop(&e, st);
    dk_lanes_merge(&e, st);
    dk_lanes_store(&e, st);
  }
  merge_warps(&e);
  return attn_k_llvm_func_finish(b, &f);
}

/// The combine kernel: a warp per query row, each lane 8 columns; the
/// splits' partial O weighed by 2^(lse - max lse).
static bool build_combine(MlirOperation gm, MlirLocation loc,
                          const struct attn_decode_kernel *k,
                          const char *name) {
  struct attn_builder bb;
  struct attn_builder *b = &bb;
  attn_builder_init(b, mlirLocationGetContext(loc), loc);
  attn_builder_role(b, "decode.combine");
  attn_builder_at_end(b, attn_b_region_block(gm, 0));
  const char *ty = k->bf16 ? "bf16" : "f16";
  int64_t rows = k->batch * k->heads * k->seq_q, d = k->head_dim;
  int64_t grid[3] = {(rows + NW - 1) / NW, 1, 1};
  struct attn_k_param params[2] = {
      {.name = "partials", .dtype = "f32", .align = 16, .rank = 1,
       .shape = {attn_decode_workspace_bytes(k) / 4}},
      {.name = "out", .dtype = ty, .align = 16,
       .shape = {k->batch, k->heads, k->seq_q, d}},
  };
  MlirNamedAttribute extra[] = {
      attn_b_named(b, "decode", dk_decode_info(b, k)),
  };
  MlirAttribute launch = attn_k_launch_attr(b, "decode-combine", grid,
                                            ATTN_DECODE_THREADS, 0, 2, params,
                                            1, extra);
  MlirNamedAttribute attrs[4];
  intptr_t na = attn_k_kernel_attrs(b, ATTN_DECODE_THREADS, launch, attrs);
  MlirType types[2] = {b->t.ptr, b->t.ptr};
  MlirAttribute args[2] = {dk_param_attrs(b, "llvm.readonly"),
                           dk_param_attrs(b, "llvm.writeonly")};
  struct attn_b_func f;
  attn_k_llvm_func_open_typed(b, &f, name, 2, types, args, na, attrs);
  MlirValue part = attn_b_func_arg(&f, 0), out = attn_b_func_arg(&f, 1);
  MlirValue ninf = attn_b_f32(b, -INFINITY), zero = attn_b_f32(b, 0.0f);
  MlirValue tid = attn_k_sreg(b, "tid.x");
  MlirValue lane = attn_k_andc(b, tid, 31);
  MlirValue row = attn_b_addi(b, attn_k_mulc(b, attn_k_sreg(b, "ctaid.x"), NW),
                              attn_k_divc(b, tid, 32));
  MlirValue act = attn_b_andi(b, attn_k_cmpc(b, ATTN_B_ULT, row, rows),
                              attn_k_cmpc(b, ATTN_B_ULT, lane, d / 8));
  struct attn_b_if s;
  attn_b_if_open(b, &s, act, 0, NULL, false);
  int64_t lse_base = rows * k->splits * d;
  MlirValue slot0 = attn_b_muli(b, attn_b_cast(b, "arith.extui", row, b->t.i64),
                                attn_b_i64(b, k->splits));
  MlirValue lsep = attn_k_gep_elem(
      b, part, attn_b_addi(b, attn_b_i64(b, lse_base), slot0), b->t.f32);
  struct attn_b_for l1;
  attn_b_for_open(b, &l1, attn_b_index(b, 0), attn_b_index(b, k->splits),
                  attn_b_index(b, 1), 1, &ninf);
  MlirValue si = attn_b_cast(b, "arith.index_cast", l1.iv, b->t.i64);
  MlirValue lv = attn_k_load(b, attn_k_gep_elem(b, lsep, si, b->t.f32), b->t.f32);
  MlirValue mx = attn_b_maxnumf(b, l1.args[0], lv);
  attn_b_for_close(b, &l1, 1, &mx);
  MlirValue mm = l1.results[0];
  MlirValue mu = attn_b_select(b, attn_b_cmpf(b, ATTN_B_F_OEQ, mm, ninf), zero,
                               mm);
  MlirValue init[9];
  for (int i = 0; i < 9; ++i)
    init[i] = zero;
  struct attn_b_for l2;
  attn_b_for_open(b, &l2, attn_b_index(b, 0), attn_b_index(b, k->splits),
                  attn_b_index(b, 1), 9, init);
  si = attn_b_cast(b, "arith.index_cast", l2.iv, b->t.i64);
  lv = attn_k_load(b, attn_k_gep_elem(b, lsep, si, b->t.f32), b->t.f32);
  MlirValue live = attn_b_cmpf(b, ATTN_B_F_ONE, lv, ninf);
  MlirValue w = attn_b_select(b, live, attn_k_ex2(b, attn_b_subf(b, lv, mu)),
                              zero);
  MlirValue y[9];
  y[0] = attn_b_addf(b, l2.args[0], w);
  MlirValue off = attn_b_addi(
      b, attn_b_muli(b, attn_b_addi(b, slot0, si), attn_b_i64(b, d)),
      attn_b_cast(b, "arith.extui", attn_k_mulc(b, lane, 8), b->t.i64));
  MlirValue p = attn_k_gep_elem(b, part, off, b->t.f32);
  for (int hv = 0; hv < 2; ++hv) {
    MlirValue v = attn_k_gemm_load_vec(
        b, attn_k_gep_elem(b, p, attn_b_i64(b, 4 * hv), b->t.f32), 4, b->t.f32,
        16);
    for (int x = 0; x < 4; ++x) {
      MlirValue opd[2] = {v, attn_b_i32(b, x)};
      MlirValue fx =
          attn_b_op1(b, "llvm.extractelement", b->t.f32, 2, opd, 0, NULL);
      // A dead split's partials were never written: weigh them out by
      // select, not by multiplying (0 * NaN).
      y[1 + hv * 4 + x] = attn_b_select(
          b, live, attn_b_fma(b, fx, w, l2.args[1 + hv * 4 + x]),
          l2.args[1 + hv * 4 + x]);
    }
  }
  attn_b_for_close(b, &l2, 9, y);
  MlirValue lsum = l2.results[0];
  MlirValue inv = attn_b_select(b, attn_b_cmpf(b, ATTN_B_F_OGT, lsum, zero),
                                attn_b_divf(b, attn_b_f32(b, 1.0f), lsum),
                                zero);
  MlirValue w4[4];
  for (int x = 0; x < 4; ++x)
    w4[x] = attn_k_pack2(b, k->bf16,
                         attn_b_mulf(b, l2.results[1 + 2 * x], inv),
                         attn_b_mulf(b, l2.results[2 + 2 * x], inv));
  MlirValue oo = attn_b_addi(
      b, attn_b_muli(b, attn_b_cast(b, "arith.extui", row, b->t.i64),
                     attn_b_i64(b, d)),
      attn_b_cast(b, "arith.extui", attn_k_mulc(b, lane, 8), b->t.i64));
  attn_k_store_vec(b, w4, 4, attn_k_gep_elem(b, out, oo, b->t.i16));
  attn_b_if_close(b, &s, 0, NULL);
  return attn_k_llvm_func_finish(b, &f);
}

bool attn_decode_has_program(const struct attn_decode_kernel *k) {
  return k->splits > 1 || k->append_rows > 0;
}

bool attn_kernels_build_decode(MlirOperation gpu_module, MlirLocation loc,
                               const struct attn_decode_kernel *k) {
  char why[160];
  if (!attn_decode_supported(k, why, sizeof why))
    return attn_emit_error_atf(loc, "no decode kernel for '%s': %s", k->name,
                               why);
  if (!attn_decode_has_program(k))
    return build_split(gpu_module, loc, k, k->name);
  char append[300], split[300], combine[300];
  snprintf(append, sizeof append, "%s__append", k->name);
  snprintf(split, sizeof split, "%s__split", k->name);
  snprintf(combine, sizeof combine, "%s__combine", k->name);
  return (k->append_rows <= 0 || dk_build_append(gpu_module, loc, k, append)) &&
         build_split(gpu_module, loc, k, split) &&
         (k->splits <= 1 || build_combine(gpu_module, loc, k, combine));
}
