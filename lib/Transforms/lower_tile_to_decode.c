//===- lower_tile_to_decode.c - lower-tile-to-decode: the GPU decode kernel ===//
//
// Replaces each decode tile kernel (tile.decode, attn-tile's form of
// attn.fused_decode) by the decode kernel of lib/Kernels/decode.c in
// `gpu.module @attn_kernels`: with one split an llvm.func @f taking q,
// k_cache, v_cache, cache_seqlens, (block_table) and out, as the tile
// kernel did; with more, @f__split writing partial rows into the workspace
// `partials` and @f__combine weighing them into out, and the launch program
// @f running both (callers launch @f either way). The split is the cost
// model's (lib/CostModel/decode_split.c) for the GPU named by `gpu`: the
// CTAs without a split, the longest sequence's keys, the bytes of K and V
// a CTA reads per key. The kernel uses no sm_90a instruction (16-byte
// ld.global, shuffles, ex2/tanh.approx), so it is built for any chip from
// sm_80 on; other tile kernels are left to the other lowerings, and so,
// with fallback=true (the drivers' choice), are the decode kernels it does
// not take: lower-tile-to-gpu runs their scalar CTA program on one thread
// per CTA, slow but the same program the CPU path checks.
//
//   func.func @f(%q, %k_cache, %v_cache, %cache_seqlens, %out)
//       attributes {tile.kernel, tile.decode = {...}} { <scalar program> }
//   ==>
//   gpu.module @attn_kernels [#nvvm.target<chip = "sm_90a", ...>] {
//     llvm.func @f__split(...) attributes {nvvm.kernel, attn.launch = {
//         kernel = "decode", grid = array<i32: S, Hk * G, B>, ...}}
//     llvm.func @f__combine(%partials, %out) attributes {...}
//   } {attn.programs = [{name = "f", inputs = [...], workspace =
//       [{name = "partials", bytes = ...}], steps = [...]}]}
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/tile/tile_dialect.h"
#include "lib/CostModel/cost_model.h"
#include "lib/Kernels/kernels.h"
#include "lib/Target/attn_target.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct decode_options {
  char chip[16];
  char gpu[32];
  long splits;   // 0: the cost model's
  long rows;     // rows per CTA, 0: the group's, up to the body's most
  int body;      // 0 auto, 1 lanes, 2 mma
  long ctas;     // the GPU's SMs for the cost model, 0: the gpu's
  long occupancy; // CTAs an SM (nvvm.minctasm), 0: ptxas's registers'
  bool kv_prefetch;
  long kv_stages;
  bool fallback; // leave kernels it cannot build to lower-tile-to-gpu
};

static const struct attn_pass_option decode_options_help[] = {
    {"chip", "the target chip: sm_90a (default), sm_80, sm_86, sm_87, sm_89 "
             "or sm_90"},
    {"gpu", "the GPU the split is priced for (default H200)"},
    {"splits", "CTAs per key range, 1 to 1024 (0: the cost model's)"},
    {"rows", "query rows per CTA, 1 to 8 with body=mma, 1 to 4 with "
             "body=lanes (0: the group's rows, at most that)"},
    {"body", "the split kernel's body: mma (mma.sync tiles of 16 keys, "
             "head dims 64 and 128), lanes (FMAs and shuffles per key and "
             "row) or auto (default: mma at head dim 128, and at 64 where a "
             "CTA has 2 or more rows)"},
    {"ctas", "the SMs the split is priced over (0, the default: the gpu's; "
             "attn-run passes the GPU's, as to lower-tile-to-hopper)"},
    {"occupancy", "CTAs an SM the split kernel is built for (ptxas bounds "
                  "its registers so) and the split is priced with, 0 to 16 "
                  "(0: what its registers allow)"},
    {"kv-prefetch", "the tensor-core body loads the next step's K before "
                    "this step's arithmetic (default true: up to 6% faster "
                    "on an H200, bench/RESULTS.md)"},
    {"kv-stages", "the tensor-core body copies K and V by cp.async into a "
                  "shared-memory ring of 2 to 4 steps (0, the default: into "
                  "registers; the ring measured 1.4x slower on an H200)"},
    {"fallback", "leave decode kernels it does not take (f32, other head "
                 "dims, more than 16 rows ...) to lower-tile-to-gpu, which "
                 "runs their scalar program on one thread per CTA (default "
                 "false: a diagnostic)"},
    {NULL, NULL},
};

static void decode_init(void *opts) {
  struct decode_options *o = opts;
  snprintf(o->chip, sizeof o->chip, "sm_90a");
  snprintf(o->gpu, sizeof o->gpu, "%s", ATTN_COST_DEFAULT_GPU);
  o->splits = 0;
  o->rows = 0;
  o->body = 0;
  o->ctas = 0;
  o->occupancy = 0;
  o->kv_prefetch = true;
  o->kv_stages = 0;
  o->fallback = false;
}

static bool decode_set(void *opts, const char *name, const char *value,
                       char *err, size_t errlen) {
  struct decode_options *o = opts;
  if (!strcmp(name, "chip")) {
    if (attn_chip_min_ptx(value, strlen(value)) < 0 ||
        strncmp(value, "sm_", 3) || atoi(value + 3) < 80) {
      snprintf(err, errlen,
               "unknown chip '%s' (expected sm_80, sm_86, sm_87, sm_89, sm_90 "
               "or sm_90a)",
               value);
      return false;
    }
    snprintf(o->chip, sizeof o->chip, "%s", value);
    return true;
  }
  if (!strcmp(name, "gpu")) {
    if (!attn_cost_gpu_lookup(value, err, errlen))
      return false;
    snprintf(o->gpu, sizeof o->gpu, "%s", value);
    return true;
  }
  if (!strcmp(name, "splits"))
    return attn_parse_int_option(name, value, 0, 1024, &o->splits, err, errlen);
  if (!strcmp(name, "rows"))
    return attn_parse_int_option(name, value, 0, ATTN_DECODE_MAX_ROWS, &o->rows,
                                 err, errlen);
  if (!strcmp(name, "ctas"))
    return attn_parse_int_option(name, value, 0, 65536, &o->ctas, err, errlen);
  if (!strcmp(name, "occupancy"))
    return attn_parse_int_option(name, value, 0, 16, &o->occupancy, err, errlen);
  if (!strcmp(name, "kv-stages")) {
    if (!attn_parse_int_option(name, value, 0, 4, &o->kv_stages, err, errlen))
      return false;
    if (o->kv_stages == 1) {
      snprintf(err, errlen, "option 'kv-stages' expects 0 or 2 to 4, found '1'");
      return false;
    }
    return true;
  }
  if (!strcmp(name, "kv-prefetch")) {
    if (attn_parse_bool_option(value, &o->kv_prefetch))
      return true;
    snprintf(err, errlen,
             "option 'kv-prefetch' expects true or false, found '%s'", value);
    return false;
  }
  if (!strcmp(name, "body")) {
    static const char *const bodies[] = {"auto", "lanes", "mma"};
    for (int i = 0; i < 3; ++i)
      if (!strcmp(value, bodies[i])) {
        o->body = i;
        return true;
      }
    snprintf(err, errlen, "option 'body' expects auto, lanes or mma, found '%s'",
             value);
    return false;
  }
  if (!strcmp(name, "fallback")) {
    if (attn_parse_bool_option(value, &o->fallback))
      return true;
    snprintf(err, errlen, "option 'fallback' expects true or false, found '%s'",
             value);
    return false;
  }
  snprintf(err, errlen,
           "unknown option '%s' of pass 'lower-tile-to-decode' (expected "
           "chip, gpu, splits, rows, body, ctas, occupancy, kv-prefetch, "
           "kv-stages or fallback)",
           name);
  return false;
}

/// The kernel description of a decode tile kernel.
static void describe(const struct attn_decode_config *c, int64_t max_pages,
                     const struct attn_append_config *ap, MlirType elem,
                     const struct decode_options *o, const char *name,
                     struct attn_decode_kernel *k) {
  const struct attn_fused_config *f = &c->base;
  memset(k, 0, sizeof *k);
  k->name = name;
  k->bf16 = mlirTypeIsABF16(elem);
  k->batch = c->batch;
  k->heads = c->heads;
  k->kv_heads = c->kv_heads;
  k->seq_q = c->seq_q;
  k->head_dim = c->head_dim;
  k->paged = c->layout == ATTN_CACHE_PAGED;
  k->page_size = c->page_size;
  k->num_pages = c->num_pages;
  k->max_pages = max_pages;
  k->max_seq = c->max_seq;
  k->scale = f->scale;
  k->causal = f->causal;
  k->has_window = f->has_window;
  k->window_left = f->window_left;
  k->window_right = f->window_right;
  k->softcap = f->softcap;
  k->alibi_max_bias = f->alibi_max_bias;
  k->nmods = f->nmods > 3 ? 3 : f->nmods;
  for (int i = 0; i < k->nmods; ++i)
    k->mods[i] = f->mods[i] == ATTN_MOD_SOFTCAP ? ATTN_DECODE_SOFTCAP
                 : f->mods[i] == ATTN_MOD_ALIBI ? ATTN_DECODE_ALIBI
                                                : ATTN_DECODE_SCALE;
  k->rope = f->has_rope;
  k->interleaved = f->rope.layout == ATTN_ROPE_INTERLEAVED;
  k->theta = f->rope.theta;
  k->rotary_dim = f->rope.rotary_dim;
  int64_t grows = c->heads / c->kv_heads * c->seq_q;
  // The tensor-core body at head dim 128, and at 64 where a CTA has
  // several rows (one row is the lanes body's best case: 8 FMAs a key).
  // At 128 it won with one row too (MHA on an H200, bench/RESULTS.md
  // session 27: 1-5% faster than the lanes body at every shape, priced at
  // the 3 CTAs an SM its 154 registers allow).
  int64_t rows = o->rows ? o->rows : grows;
  bool mma_fits = c->head_dim == 128 || (c->head_dim == 64 && rows >= 2);
  k->mma = o->body == 2 || (o->body == 0 && mma_fits);
  int most = k->mma ? ATTN_DECODE_MAX_ROWS : ATTN_DECODE_LANES_MAX_ROWS;
  k->rows_per_cta = o->rows ? (int)o->rows : grows < most ? (int)grows : most;
  k->kv_stages = k->mma ? (int)o->kv_stages : 0;
  k->kv_prefetch = k->mma && o->kv_prefetch && k->kv_stages < 2;
  k->ctas_per_sm = (int)o->occupancy;
  k->splits = 1;
  k->append_rows = ap->seq_new;
  k->append_rope = ap->has_rope;
  k->append_interleaved = ap->rope.layout == ATTN_ROPE_INTERLEAVED;
  k->append_theta = ap->rope.theta;
  k->append_rotary_dim = ap->rope.rotary_dim;
}

/// The cost model's split for k on the GPU named gpu.
static int choose_splits(const struct attn_decode_kernel *k, const char *gpu,
                         long ctas) {
  const struct attn_cost_gpu *found = attn_cost_gpu_lookup(gpu, NULL, 0);
  if (!found)
    return 1;
  struct attn_cost_gpu gg = *found;
  if (ctas > 0)
    gg.sms = (int)ctas;
  const struct attn_cost_gpu *g = &gg;
  int64_t lpk = k->head_dim / 8;
  struct attn_cost_decode p = {
      .ctas = k->batch * k->kv_heads * attn_decode_row_groups(k),
      .keys = k->max_seq,
      .bytes_per_key = 2 * 2 * k->head_dim,
      .key_step = k->mma ? (int64_t)(ATTN_DECODE_THREADS / 32) * ATTN_DECODE_MMA_KEYS
                         : (int64_t)(ATTN_DECODE_THREADS / 32) * (32 / lpk) *
                               ATTN_DECODE_KEY_STEPS,
      .rows = k->batch * k->heads * k->seq_q,
      .value_dim = k->head_dim,
      // CTAs an SM holds, from ptxas's registers (test/Target/
      // to-ptx-decode.test): 144 to 166 for the tensor-core body and for
      // the lanes body with several rows (3 CTAs of 128 threads in 64K
      // registers), 76 to 96 for the lanes body with one (5).
      .ctas_per_sm = k->ctas_per_sm > 0                  ? k->ctas_per_sm
                     : k->mma || k->rows_per_cta > 1 ? 3
                                                         : 5,
  };
  // Shared memory bounds them too (a kv-stages ring; 1 KiB of each CTA's
  // is the system's).
  int64_t smem = attn_decode_smem_bytes(k) + 1024;
  int fit = (int)(g->smem_bytes_per_sm / (double)smem);
  if (fit >= 1 && fit < p.ctas_per_sm)
    p.ctas_per_sm = fit;
  return attn_cost_decode_splits(&p, g, 256);
}

/// Appends the launch program @name: the append kernel (with one), the
/// split kernel (into `partials` with splits > 1, else into out), then the
/// combine kernel into out (splits > 1).
static bool add_program(MlirOperation gm, const struct attn_decode_kernel *k,
                        const char *name) {
  struct attn_strbuf t = {0};
  const char *table = k->paged ? ", \"block_table\"" : "";
  const char *news = k->append_rows > 0 ? ", \"k_new\", \"v_new\"" : "";
  bool split = k->splits > 1;
  attn_strbuf_printf(&t,
                     "{name = \"%s\", inputs = [\"q\", \"k_cache\", "
                     "\"v_cache\", \"cache_seqlens\"%s%s, \"out\"], "
                     "workspace = [",
                     name, table, news);
  if (split)
    attn_strbuf_printf(&t, "{name = \"partials\", bytes = %lld : i64}",
                       (long long)attn_decode_workspace_bytes(k));
  attn_strbuf_printf(&t, "], steps = [");
  if (k->append_rows > 0)
    attn_strbuf_printf(&t,
                       "{kernel = \"%s__append\", args = [\"k_new\", "
                       "\"v_new\", \"cache_seqlens\"%s, \"k_cache\", "
                       "\"v_cache\"]}, ",
                       name, table);
  attn_strbuf_printf(&t,
                     "{kernel = \"%s__split\", args = [\"q\", \"k_cache\", "
                     "\"v_cache\", \"cache_seqlens\"%s, \"%s\"]}",
                     name, table, split ? "partials" : "out");
  if (split)
    attn_strbuf_printf(&t,
                       ", {kernel = \"%s__combine\", args = [\"partials\", "
                       "\"out\"]}",
                       name);
  attn_strbuf_printf(&t, "]}");
  return attn_programs_append(gm, ATTN_PROGRAMS_ATTR, &t);
}

static bool lower_kernel(MlirOperation kernel, const struct decode_options *o) {
  struct attn_decode_config c;
  int64_t max_pages = 0;
  MlirStringRef sym;
  attn_attr_str(kernel, "sym_name", &sym);
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)sym.length, sym.data);
  struct attn_append_config ap;
  if (!attn_tile_get_decode(kernel, &c, &max_pages, &ap))
    return attn_emit_errorf(kernel, "malformed tile.decode on '%s'", name);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(kernel, 0));
  MlirType elem = mlirShapedTypeGetElementType(
      mlirValueGetType(mlirBlockGetArgument(body, 0)));
  char why[160] = "";
  if (!mlirTypeIsABF16(elem) && !mlirTypeIsAF16(elem))
    snprintf(why, sizeof why, "the decode kernel takes f16 or bf16");
  else if (c.value_dim != c.head_dim)
    snprintf(why, sizeof why, "the decode kernel needs the value dim equal "
                              "to the head dim");
  struct attn_decode_kernel k;
  describe(&c, max_pages, &ap, elem, o, name, &k);
  k.splits = o->splits ? (int)o->splits : choose_splits(&k, o->gpu, o->ctas);
  if (!*why)
    attn_decode_supported(&k, why, sizeof why);
  // Options that contradict each other are errors even with fallback.
  if (!k.mma && o->rows > ATTN_DECODE_LANES_MAX_ROWS)
    return attn_emit_errorf(kernel,
                            "no decode kernel for '%s': rows per CTA must be "
                            "1 to 4 (the lanes body)",
                            name);
  if (*why && o->fallback)
    return true; // lower-tile-to-gpu runs the scalar program
  if (*why)
    return attn_emit_errorf(kernel, "no decode kernel for '%s': %s", name, why);
  MlirOperation gm = attn_kernel_gpu_module(kernel, o->chip, 80);
  if (mlirOperationIsNull(gm))
    return false;
  MlirOperation before = attn_hopper_last_op(gm);
  if (!attn_kernels_build_decode(gm, mlirOperationGetLocation(kernel), &k))
    return false;
  attn_hopper_dump_built(gm, before);
  if (attn_decode_has_program(&k) && !add_program(gm, &k, name))
    return attn_emit_errorf(kernel, "cannot record the launch program of '%s'",
                            name);
  mlirOperationDestroy(kernel);
  return true;
}

static bool lower_tile_to_decode_run(MlirOperation module, const void *opts) {
  const struct decode_options *o = opts;
  struct attn_op_list funcs = {0};
  attn_op_list_collect(&funcs, module, "func.func");
  bool ok = !funcs.failed;
  for (size_t i = 0; ok && i < funcs.n; ++i)
    if (attn_tile_is_kernel(funcs.ops[i]) &&
        !mlirAttributeIsNull(attn_attr_get(funcs.ops[i], ATTN_TILE_DECODE_ATTR)))
      ok = lower_kernel(funcs.ops[i], o);
  free(funcs.ops);
  return ok;
}

const struct attn_pass_def lower_tile_to_decode_pass = {
    .argument = "lower-tile-to-decode",
    .description = "Lower decode tile kernels (attn.fused_decode) to the "
                   "memory-bound sm_80+ decode kernel, split across CTAs by "
                   "the cost model, with its combine kernel",
    .options = decode_options_help,
    .options_size = sizeof(struct decode_options),
    .init_options = decode_init,
    .set_option = decode_set,
    .run = lower_tile_to_decode_run,
};
