//===- lower_tile_to_hopper_gemm.c - lower-tile-to-hopper's GEMMs -------===//
//
// The matmul half of lower-tile-to-hopper (lower_tile_to_hopper.c holds the
// pass, its options and the attention half): reads a matmul tile kernel
// (tile.matmul, as attn-tile writes it for linalg.matmul, or comm-schedule
// for a matmul fused with a collective) into struct attn_hopper_gemm and
// replaces it with the Hopper GEMM (lib/Kernels/hopper_gemm.c builds it),
// and with a split K the reduce kernel (lib/Kernels/gemm_reduce.c) and the
// launch program that runs both.
//
//===----------------------------------------------------------------------===//
#include "lib/Kernels/kernels.h"
#include "lib/Target/attn_target.h"
#include "lib/Transforms/lower_tile_to_hopper.h"
#include "lib/Transforms/transforms_internal.h"

#include "dialects/tile/tile_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// Appends the program of a GEMM with its K split: the GEMM's f32 slices
/// into the workspace `partials`, then their sum into c.
static bool add_split_program(MlirOperation gm,
                              const struct attn_hopper_gemm *g,
                              const char *name) {
  struct attn_strbuf t = {0};
  attn_strbuf_printf(
      &t,
      "{name = \"%s\", inputs = [\"a\", \"b\", \"c\"], workspace = "
      "[{name = \"partials\", bytes = %lld : i64}], steps = [{kernel = "
      "\"%s__partial\", args = [\"a\", \"b\", \"partials\"]}, {kernel = "
      "\"%s__reduce\", args = [\"partials\", \"c\"]}]}",
      name, (long long)(g->split_k * g->m * g->n * 4), name, name);
  return attn_programs_append(gm, ATTN_PROGRAMS_ATTR, &t);
}

/// The tile ops of the GEMM program attn-tile writes, in order; the C tile
/// starts from a fill, or from a load when it accumulates. A matmul fused
/// with a collective has no tile ops.
static bool is_gemm_program(MlirOperation kernel, bool fused,
                            bool accumulate) {
  static const char *const program[] = {
      ATTN_OP_TILE_PROGRAM_ID, ATTN_OP_TILE_PROGRAM_ID, ATTN_OP_TILE_ALLOC,
      ATTN_OP_TILE_ALLOC,      ATTN_OP_TILE_ALLOC,      NULL /* fill|load */,
      ATTN_OP_TILE_LOAD,       ATTN_OP_TILE_LOAD,       ATTN_OP_TILE_MMA,
      ATTN_OP_TILE_STORE};
  struct attn_op_list ops = {0};
  attn_tile_collect_ops(kernel, &ops);
  size_t n = fused ? 0 : sizeof program / sizeof *program;
  bool ok = !ops.failed && ops.n == n;
  for (size_t i = 0; ok && i < n; ++i)
    ok = attn_op_is(ops.ops[i],
                    program[i] ? program[i]
                    : accumulate ? ATTN_OP_TILE_LOAD
                                 : ATTN_OP_TILE_FILL);
  free(ops.ops);
  return ok;
}

/// Reads a matmul tile kernel (tile.matmul, as attn-tile writes it for
/// linalg.matmul) into *g; false with why when the Hopper GEMM cannot
/// compute it.
static bool describe_gemm(MlirOperation kernel, MlirAttribute mm,
                          const struct attn_hopper_gemm_options *o,
                          struct attn_hopper_gemm *g, char *why, size_t wlen) {
  memset(g, 0, sizeof *g);
  g->sms = o->sms;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(kernel, 0));
  if (mlirBlockGetNumArguments(body) != 3) {
    snprintf(why, wlen, "the kernel does not take exactly (a, b, c)");
    return false;
  }
  MlirType e = mlirShapedTypeGetElementType(
      mlirValueGetType(mlirBlockGetArgument(body, 0)));
  if (!mlirTypeIsABF16(e) && !mlirTypeIsAF16(e)) {
    snprintf(why, wlen, "the Hopper GEMM takes bf16 or f16 matrices");
    return false;
  }
  g->bf16 = mlirTypeIsABF16(e);
  g->m = attn_dict_int(mm, "m", 0);
  g->n = attn_dict_int(mm, "n", 0);
  g->k = attn_dict_int(mm, "k", 0);
  g->block_m = (int)attn_dict_int(mm, "block_m", 0);
  g->block_n = (int)attn_dict_int(mm, "block_n", 0);
  if (attn_dict_int(mm, "block_k", 64) != 64) {
    snprintf(why, wlen, "the Hopper GEMM steps K by 64, found block-k %lld",
             (long long)attn_dict_int(mm, "block_k", 64));
    return false;
  }
  MlirAttribute acc = mlirDictionaryAttrGetElementByName(
      mm, mlirStringRefCreateFromCString("accumulate"));
  g->accumulate = !mlirAttributeIsNull(acc) && mlirAttributeIsABool(acc) &&
                  mlirBoolAttrGetValue(acc);
  g->stages = (int)attn_dict_int(mm, "stages", o->stages);
  g->group_m = (int)attn_dict_int(mm, "group_m", o->group_m);
  // attn-tile's K slices, unless the option says otherwise.
  g->split_k = o->split_k ? (int)o->split_k
                          : (int)attn_dict_int(mm, "split_k", 1);
  g->ctas = (int)attn_dict_int(mm, "ctas", 0);
  MlirAttribute rope = mlirDictionaryAttrGetElementByName(
      mm, mlirStringRefCreateFromCString("rope"));
  if (!mlirAttributeIsNull(rope)) {
    if (!mlirAttributeIsADictionary(rope)) {
      snprintf(why, wlen, "malformed rope description");
      return false;
    }
    MlirAttribute t = mlirDictionaryAttrGetElementByName(
        rope, mlirStringRefCreateFromCString("theta"));
    MlirAttribute l = mlirDictionaryAttrGetElementByName(
        rope, mlirStringRefCreateFromCString("layout"));
    g->rope = true;
    g->theta = mlirAttributeIsAFloat(t) ? mlirFloatAttrGetValueDouble(t) : 0;
    g->head_dim = attn_dict_int(rope, "head_dim", 0);
    g->rotary_dim = attn_dict_int(rope, "rotary_dim", g->head_dim);
    g->seq_len = attn_dict_int(rope, "seq_len", 0);
    g->rope_offset = attn_dict_int(rope, "offset", 0);
    g->interleaved = !mlirAttributeIsNull(l) && mlirAttributeIsAString(l) &&
                     attn_str_eq(mlirStringAttrGetValue(l), "interleaved");
    if (!(g->theta > 0) || g->rope_offset < 0 ||
        g->rope_offset + g->seq_len > (1LL << 24)) {
      snprintf(why, wlen,
               "the epilogue's RoPE needs theta > 0 and positions in "
               "[0, 2^24)");
      return false;
    }
  }
  MlirAttribute proj = mlirDictionaryAttrGetElementByName(
      mm, mlirStringRefCreateFromCString("project"));
  if (!mlirAttributeIsNull(proj)) {
    g->out_seq =
        mlirAttributeIsADictionary(proj) ? attn_dict_int(proj, "seq", -1) : -1;
    g->out_head_dim = mlirAttributeIsADictionary(proj)
                          ? attn_dict_int(proj, "head_dim", -1)
                          : -1;
    if (g->out_seq <= 0 || g->out_head_dim <= 0 ||
        (g->rope && (g->head_dim != g->out_head_dim ||
                     g->seq_len != g->out_seq))) {
      snprintf(why, wlen, "malformed project description (it needs seq and "
                          "head_dim, equal to rope's seq_len and head_dim)");
      return false;
    }
  }
  // Staged where it can be (auto), or as the option says: an explicit
  // staged on a tile it cannot write fails in attn_hopper_gemm_supported.
  // Set before the defaults, which leave room for the staging rows.
  g->staged = o->epilogue == ATTN_HOPPER_EPILOGUE_STAGED ||
              (o->epilogue == ATTN_HOPPER_EPILOGUE_AUTO &&
               attn_hopper_gemm_stages_tiles(g));
  MlirAttribute comm = mlirDictionaryAttrGetElementByName(
      mm, mlirStringRefCreateFromCString("comm"));
  if (!mlirAttributeIsNull(comm)) {
    MlirAttribute pat = mlirDictionaryAttrGetElementByName(
        comm, mlirStringRefCreateFromCString("pattern"));
    static const char *pats[] = {"matmul_all_reduce", "all_gather_matmul",
                                 "matmul_reduce_scatter"};
    for (int i = 0; i < 3; ++i)
      if (mlirAttributeIsAString(pat) &&
          attn_str_eq(mlirStringAttrGetValue(pat), pats[i]))
        g->comm = (enum attn_gemm_comm)(ATTN_GEMM_ALL_REDUCE + i);
    if (g->comm == ATTN_GEMM_LOCAL) {
      snprintf(why, wlen,
               "the fused collective must be matmul_all_reduce, "
               "all_gather_matmul or matmul_reduce_scatter");
      return false;
    }
    g->world = (int)attn_dict_int(comm, "world_size", 0);
    // Rows that do not split into whole tiles per shard are padded: each
    // shard (the whole matrix for all-reduce) rounded up to block_m rows,
    // and the kernel runs at least world tile rows (attn_hopper_gemm's
    // m_rows). A reduce-scatter or all-gather whose m the ranks do not
    // divide is left to attn_hopper_gemm_supported's message.
    int shards = attn_gemm_shards(g);
    if (g->world > 0 && g->block_m > 0 && g->m > 0 && g->m <= INT32_MAX &&
        g->m % shards == 0 &&
        g->m % ((int64_t)g->block_m * g->world)) {
      int64_t part = g->m / shards;
      int64_t padded = (part + g->block_m - 1) / g->block_m * g->block_m;
      g->m_rows = g->m;
      g->m = padded * shards;
      int64_t unit = (int64_t)g->block_m * g->world;
      g->m = (g->m + unit - 1) / unit * unit; // all-reduce: tiles per rank
    }
    MlirAttribute split = mlirDictionaryAttrGetElementByName(
        comm, mlirStringRefCreateFromCString("split"));
    g->adaptive = !mlirAttributeIsNull(split) && mlirAttributeIsAString(split) &&
                  attn_str_eq(mlirStringAttrGetValue(split), "adaptive");
    g->comm_ctas = (int)attn_dict_int(comm, "comm_sms", 0);
    g->own_last = o->own_last < 0 ? g->comm == ATTN_GEMM_ALL_REDUCE
                                  : o->own_last == 1;
    int64_t compute = attn_dict_int(comm, "compute_sms", 0);
    if (g->comm_ctas < 1 || compute < 1) {
      snprintf(why, wlen, "the fused kernel needs comm_sms and compute_sms "
                          "(from comm-schedule)");
      return false;
    }
    // The compute CTAs keep the wave count of compute_sms SMs.
    attn_hopper_gemm_defaults(g, (int)compute);
  }
  if (!is_gemm_program(kernel, g->comm != ATTN_GEMM_LOCAL, g->accumulate)) {
    snprintf(why, wlen, "the kernel is not the GEMM tile program attn-tile "
                        "writes");
    return false;
  }
  // As many CTAs as the waves on the SMs of option gpu need.
  attn_hopper_gemm_defaults(g, o->sms);
  // The default depth leaves room for the staging rows; a depth the caller
  // chose may not (stages=4 at 128 x 256): auto then keeps the registers.
  if (o->epilogue == ATTN_HOPPER_EPILOGUE_AUTO && g->staged &&
      attn_hopper_gemm_smem_bytes(g) > ATTN_KERNELS_SMEM_LIMIT)
    g->staged = false;
  return attn_hopper_gemm_supported(g, why, wlen);
}

bool attn_hopper_lower_gemm(MlirOperation kernel, MlirAttribute mm,
                            const struct attn_hopper_gemm_options *o,
                            bool *lowered) {
  *lowered = false;
  struct attn_hopper_gemm g;
  char why[256];
  MlirStringRef sym;
  attn_attr_str(kernel, "sym_name", &sym);
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)sym.length, sym.data);
  if (!describe_gemm(kernel, mm, o, &g, why, sizeof why)) {
    // A fused collective has no other lowering: fail here, with the reason.
    if (o->fallback && !attn_tile_matmul_is_fused(kernel))
      return true;
    return attn_emit_errorf(kernel, "no Hopper GEMM for '%s': %s", name, why);
  }
  // A split K: kernels <name>__partial and <name>__reduce, run by the
  // launch program <name>.
  char partial[280], reduce[280];
  snprintf(partial, sizeof partial, "%s__partial", name);
  snprintf(reduce, sizeof reduce, "%s__reduce", name);
  g.name = g.split_k > 1 ? partial : name;
  MlirOperation gm = attn_kernel_gpu_module(kernel, "sm_90a", 80);
  if (mlirOperationIsNull(gm))
    return false;
  // The kernel writers report their own failure, at the kernel.
  MlirLocation loc = mlirOperationGetLocation(kernel);
  MlirOperation before = attn_hopper_last_op(gm);
  if (!attn_kernels_build_hopper_gemm(gm, loc, &g, mm))
    return false;
  if (g.split_k > 1 && !attn_kernels_build_gemm_reduce(gm, loc, &g, reduce))
    return false;
  attn_hopper_dump_built(gm, before);
  if (g.split_k > 1 && !add_split_program(gm, &g, name))
    return attn_emit_errorf(kernel, "cannot record the launch program of '%s'",
                            name);
  mlirOperationDestroy(kernel);
  *lowered = true;
  return true;
}
