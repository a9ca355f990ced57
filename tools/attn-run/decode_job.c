//===- decode_job.c - attn-run's decode jobs: inputs, run, reference ------===//
//
// A function holding attn.fused_decode is a decode job: random q and caches
// (N(0,1) in the element type), lengths per sequence drawn in [Nq, max
// keys] (the first sequence full, the second, when there is one, as short
// as its rows allow), and for a paged cache a block table of distinct pages
// in random order with the entries past each sequence's pages set to -1, so
// that a kernel reading a page it should not has an out-of-range page.
// The kernel runs through the executor's call (by parameter order on the
// CPU, by name on the GPU) and its output is compared with
// attn_reference_decode in float64. With an attn.cache_append feeding the
// decode, random k_new and v_new too (lengths at least their rows): the
// caches are written in place, the reference appends to its copies first,
// and the caches the kernel leaves are compared as well.
//
//===----------------------------------------------------------------------===//
#include "tools/attn-run/attn_run.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/dialects.h"

#include "mlir-c/BuiltinTypes.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *tool = "attn-run";

static enum attn_ref_mod ref_mod(enum attn_score_mod m) {
  return m == ATTN_MOD_SOFTCAP ? ATTN_REF_SOFTCAP
         : m == ATTN_MOD_ALIBI ? ATTN_REF_ALIBI
                               : ATTN_REF_SCALE;
}

bool attn_run_describe_decode(MlirOperation func, MlirOperation dec,
                              struct job *j) {
  struct attn_decode_config c;
  MlirStringRef sym;
  memset(j, 0, sizeof *j);
  if (!attn_decode_get_config(dec, &c) ||
      !attn_attr_str(func, "sym_name", &sym))
    return attn_emit_errorf(dec, "malformed attn.fused_decode attributes");
  snprintf(j->name, sizeof j->name, "%.*s", (int)sym.length, sym.data);
  j->decode = true;
  MlirType e = mlirShapedTypeGetElementType(
      mlirValueGetType(mlirOperationGetOperand(dec, 0)));
  j->elem_bits = mlirTypeIsAF32(e) ? 32 : 16;
  j->elem_bf16 = mlirTypeIsABF16(e);
  int64_t t[8] = {0, 0};
  if (c.has_table)
    attn_static_shape(mlirValueGetType(mlirOperationGetOperand(dec, 4)), t);
  const struct attn_fused_config *f = &c.base;
  struct attn_ref_decode *p = &j->dp;
  *p = (struct attn_ref_decode){
      .batch = c.batch,
      .heads = c.heads,
      .kv_heads = c.kv_heads,
      .seq_q = c.seq_q,
      .head_dim = c.head_dim,
      .value_dim = c.value_dim,
      .scale = f->scale,
      .causal = f->causal,
      .rope = f->has_rope,
      .theta = f->rope.theta,
      .rotary_dim = f->rope.rotary_dim,
      .interleaved = f->rope.layout == ATTN_ROPE_INTERLEAVED,
      .softcap = f->softcap,
      .alibi_max_bias = f->alibi_max_bias,
      .window = f->has_window,
      .window_left = f->window_left,
      .window_right = f->window_right,
      .max_seq = c.max_seq,
      .paged = c.layout == ATTN_CACHE_PAGED,
      .page_size = c.page_size,
      .num_pages = c.num_pages,
      .max_pages = t[1]};
  p->nmods = f->nmods;
  for (int i = 0; i < f->nmods; ++i)
    p->mods[i] = ref_mod(f->mods[i]);
  // The append: the op whose results are the decode's caches.
  MlirValue kc = mlirOperationGetOperand(dec, 1);
  if (mlirValueIsAOpResult(kc)) {
    MlirOperation app = mlirOpResultGetOwner(kc);
    struct attn_append_config a;
    if (attn_op_is(app, ATTN_OP_CACHE_APPEND)) {
      if (!attn_cache_append_get_config(app, &a))
        return attn_emit_errorf(app, "malformed attn.cache_append attributes");
      j->ap = (struct attn_ref_append){
          .rows = a.seq_new,
          .rope = a.has_rope,
          .interleaved = a.rope.layout == ATTN_ROPE_INTERLEAVED,
          .theta = a.rope.theta,
          .rotary_dim = a.rope.rotary_dim};
    }
  }
  return true;
}

/// N(0,1) samples rounded to the job's element type into buf, the same
/// values into ref.
static void fill(struct attn_rng *rng, const struct job *j, void *buf,
                 double *ref, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float x = (float)attn_rng_normal(rng);
    if (j->elem_bits == 32) {
      ((float *)buf)[i] = x;
      ref[i] = x;
      continue;
    }
    uint16_t h = j->elem_bf16 ? attn_f32_to_bf16(x) : attn_f32_to_f16(x);
    ((uint16_t *)buf)[i] = h;
    ref[i] = j->elem_bf16 ? attn_bf16_to_f32(h) : attn_f16_to_f32(h);
  }
}

static double out_value(const struct job *j, const void *buf, size_t i) {
  if (j->elem_bits == 32)
    return ((const float *)buf)[i];
  uint16_t h = ((const uint16_t *)buf)[i];
  return j->elem_bf16 ? attn_bf16_to_f32(h) : attn_f16_to_f32(h);
}

/// Lengths in [least, max_seq]: the first full, the second minimal.
static void draw_lengths(struct attn_rng *rng, const struct attn_ref_decode *p,
                         int64_t least, int32_t *lens) {
  for (int64_t b = 0; b < p->batch; ++b) {
    int64_t span = p->max_seq - least + 1;
    lens[b] = (int32_t)(b == 0   ? p->max_seq
                        : b == 1 ? least
                                 : least + (int64_t)attn_rng_below(
                                               rng, (uint64_t)span));
  }
}

/// Relative error of the caches the kernel left (k, v in the element type)
/// against the reference's (rk, rv): the keys within rounding, and so the
/// values (copied: exact but for the element type's rounding, none).
static double cache_error(const struct job *j, const void *k, const void *v,
                          const double *rk, const double *rv, size_t nk,
                          size_t nv, double *got) {
  for (size_t i = 0; i < nk; ++i)
    got[i] = out_value(j, k, i);
  double ek = attn_rel_error(got, rk, nk);
  for (size_t i = 0; i < nv; ++i)
    got[i] = out_value(j, v, i);
  double ev = attn_rel_error(got, rv, nv);
  return ek > ev ? ek : ev;
}

/// A block table of distinct pages in random order where there are enough
/// (else pages drawn at random, shared between sequences), -1 past each
/// sequence's pages.
static void draw_table(struct attn_rng *rng, const struct attn_ref_decode *p,
                       const int32_t *lens, int32_t *table, int32_t *perm) {
  for (int64_t i = 0; i < p->num_pages; ++i)
    perm[i] = (int32_t)i;
  for (int64_t i = p->num_pages - 1; i > 0; --i) {
    int64_t r = (int64_t)attn_rng_below(rng, (uint64_t)i + 1);
    int32_t t = perm[i];
    perm[i] = perm[r];
    perm[r] = t;
  }
  int64_t next = 0;
  for (int64_t b = 0; b < p->batch; ++b) {
    int64_t used = (lens[b] + p->page_size - 1) / p->page_size;
    for (int64_t e = 0; e < p->max_pages; ++e) {
      int32_t page = -1;
      if (e < used)
        page = next < p->num_pages
                   ? perm[next++]
                   : (int32_t)attn_rng_below(rng, (uint64_t)p->num_pages);
      table[b * p->max_pages + e] = page;
    }
  }
}

int attn_run_decode_job(struct attn_executor *x, const struct job *j,
                        double tolerance, struct attn_rng *rng, FILE *out) {
  struct attn_ref_decode p = j->dp;
  size_t es = (size_t)j->elem_bits / 8;
  int64_t rows = p.paged ? p.num_pages * p.page_size : p.batch * p.max_seq;
  size_t nq = (size_t)(p.batch * p.heads * p.seq_q * p.head_dim);
  size_t nk = (size_t)(rows * p.kv_heads * p.head_dim);
  size_t nv = (size_t)(rows * p.kv_heads * p.value_dim);
  size_t no = (size_t)(p.batch * p.heads * p.seq_q * p.value_dim);
  size_t nt = p.paged ? (size_t)(p.batch * p.max_pages) : 0;
  void *bq = malloc(nq * es), *bk = malloc(nk * es), *bv = malloc(nv * es),
       *bo = malloc(no * es);
  double *rq = malloc(8 * nq), *rk = malloc(8 * nk), *rv = malloc(8 * nv),
         *want = malloc(8 * no), *got = malloc(8 * no);
  int32_t *lens = malloc(4 * (size_t)p.batch);
  int32_t *table = malloc(4 * (nt ? nt : 1));
  int32_t *perm = malloc(4 * (size_t)(p.num_pages ? p.num_pages : 1));
  const struct attn_ref_append *ap = &j->ap;
  size_t nn = (size_t)(p.batch * p.kv_heads * (ap->rows ? ap->rows : 1) *
                       p.head_dim);
  size_t nnv = nn / (size_t)p.head_dim * (size_t)p.value_dim;
  void *bkn = malloc(nn * es), *bvn = malloc(nnv * es);
  double *rkn = malloc(8 * nn), *rvn = malloc(8 * nnv);
  double *cgot = malloc(8 * (nk > nv ? nk : nv));
  int rc = -1;
  if (!bq || !bk || !bv || !bo || !rq || !rk || !rv || !want || !got ||
      !lens || !table || !perm || !bkn || !bvn || !rkn || !rvn || !cgot) {
    fprintf(stderr, "%s: error: out of memory for '%s'\n", tool, j->name);
    goto done;
  }
  fill(rng, j, bq, rq, nq);
  fill(rng, j, bk, rk, nk);
  fill(rng, j, bv, rv, nv);
  if (ap->rows) {
    fill(rng, j, bkn, rkn, nn);
    fill(rng, j, bvn, rvn, nnv);
  }
  draw_lengths(rng, &p, ap->rows > p.seq_q ? ap->rows : p.seq_q, lens);
  if (p.paged)
    draw_table(rng, &p, lens, table, perm);
  p.seqlens = lens;
  p.block_table = p.paged ? table : NULL;
  memset(bo, 0xff, no * es); // NaN poison
  if ((ap->rows && !attn_reference_cache_append(&p, ap, rkn, rvn, rk, rv)) ||
      !attn_reference_decode(&p, rq, rk, rv, want)) {
    fprintf(stderr, "%s: error: malformed decode problem for '%s'\n", tool,
            j->name);
    goto done;
  }
  bool app = ap->rows > 0;
  struct attn_run_arg args[8];
  int n = 0;
  args[n++] = (struct attn_run_arg){"q", bq, nq * es, false, false};
  args[n++] = (struct attn_run_arg){"k_cache", bk, nk * es, false, app};
  args[n++] = (struct attn_run_arg){"v_cache", bv, nv * es, false, app};
  args[n++] = (struct attn_run_arg){"cache_seqlens", lens,
                                    4 * (size_t)p.batch, false, false};
  if (p.paged)
    args[n++] =
        (struct attn_run_arg){"block_table", table, 4 * nt, false, false};
  if (app) {
    args[n++] = (struct attn_run_arg){"k_new", bkn, nn * es, false, false};
    args[n++] = (struct attn_run_arg){"v_new", bvn, nnv * es, false, false};
  }
  args[n++] = (struct attn_run_arg){"out", bo, no * es, true, false};
  if (!x->call(x, j->name, n, args))
    goto done;
  for (size_t i = 0; i < no; ++i)
    got[i] = out_value(j, bo, i);
  double err = attn_rel_error(got, want, no);
  double tol = tolerance > 0        ? tolerance
               : j->elem_bits == 32 ? 1e-4
               : j->elem_bf16       ? 2e-2
                                    : 5e-3;
  // The caches after the append: every row as the reference's, the new
  // keys within their rounding (a tenth of the output's tolerance).
  double cerr = app ? cache_error(j, bk, bv, rk, rv, nk, nv, cgot) : 0.0;
  bool pass = err <= tol && cerr <= tol / 10;
  fprintf(out,
          "%s: decode b=%lld h=%lld hk=%lld nq=%lld keys=%lld d=%lld "
          "dv=%lld layout=%s",
          j->name, (long long)p.batch, (long long)p.heads,
          (long long)p.kv_heads, (long long)p.seq_q, (long long)p.max_seq,
          (long long)p.head_dim, (long long)p.value_dim,
          p.paged ? "paged" : "contiguous");
  if (p.paged)
    fprintf(out, " page=%lld", (long long)p.page_size);
  fprintf(out, " causal=%d rope=%d", p.causal, p.rope);
  if (app)
    fprintf(out, " append=%lld(rope=%d)", (long long)ap->rows, ap->rope);
  if (p.window)
    fprintf(out, " window=%lld,%lld", (long long)p.window_left,
            (long long)p.window_right);
  static const char *const mod_names[3] = {"scale", "softcap", "alibi"};
  if (p.nmods > 1) {
    fprintf(out, " mods=");
    for (int i = 0; i < p.nmods; ++i)
      fprintf(out, "%s%s", i ? "," : "", mod_names[p.mods[i]]);
  }
  fprintf(out, " lens=");
  for (int64_t b = 0; b < p.batch && b < 8; ++b)
    fprintf(out, "%s%d", b ? "," : "", (int)lens[b]);
  fprintf(out, "%s %s rel_error=%.3e", p.batch > 8 ? ",..." : "",
          j->elem_bits == 32 ? "f32" : j->elem_bf16 ? "bf16" : "f16", err);
  if (app)
    fprintf(out, " cache_error=%.3e", cerr);
  fprintf(out, " tolerance=%.1e %s\n", tol, pass ? "PASS" : "FAIL");
  rc = pass ? 0 : 1;
done:
  free(bq);
  free(bk);
  free(bv);
  free(bo);
  free(rq);
  free(rk);
  free(rv);
  free(want);
  free(got);
  free(lens);
  free(table);
  free(perm);
  free(bkn);
  free(bvn);
  free(rkn);
  free(rvn);
  free(cgot);
  return rc;
}
