//===- lower_tile_to_hopper.c - lower-tile-to-hopper: wgmma/TMA kernels ---===//
//
// Lowers an attention tile kernel, as attn-tile writes it, to one
// warp-specialised sm_90a kernel, built by lib/Kernels
// (attn_kernels_build_hopper_attention): TMA loads into a
// multi-stage shared-memory ring completing on mbarriers, a producer
// warpgroup, two consumer warpgroups (three at head dim 64 from N = 2048,
// option consumers) running wgmma for Q.K^T and P.V with
// an exp2 online softmax in registers, masks only on diagonal and tail
// blocks, and no visit to fully masked causal blocks. The result is an
// llvm.func in `gpu.module @attn_kernels` whose `attn.launch` attribute is
// its manifest entry, including the three TMA descriptors the runtime
// derives from q, k and v. Matmul tile kernels (tile.matmul) become the
// Hopper GEMM: lower_tile_to_hopper_gemm.c, with the GEMM's share of the
// options below. Backward tile kernels (tile.attention_grad) become the
// Hopper backward: lower_tile_to_hopper_grad.c.
//
// RoPE placements (option rope; auto takes the program's rope.strategy from
// attn-fuse, else asks the Rotation Calculus (lib/CostModel) for the GPU of
// option gpu, H200 by default):
//   fused  Q rotated by the consumers once per CTA, K by the producer warps
//          in shared memory for every tile they load: one kernel, but K is
//          rotated again by every query block that reads it.
//   split  K rotated once per row by `@f__rope_k` into a workspace before
//          the attention kernel `@f__attn`, which rotates Q once per CTA.
//   pre    Q and K rotated by `@f__rope_q` and `@f__rope_k`; `@f__attn`
//          sees rotated inputs.
//   ahead  K rotated once per row by producer warps of the attention kernel
//          `@f__attn` itself, into a workspace, ahead of the CTAs that read
//          it (auto's choice over split at head dim 64 up to N = 4096).
// split, pre and ahead record a launch program `@f` (attn.programs on the
// gpu.module: inputs q, k, v, out; workspaces; steps) that callers run with
// attnrt_program_launch (launch_programs.c keeps attn.programs); the
// kernels have other names so that no kernel can be launched alone by
// mistake. They need rotary_dim == head dim;
// other programs use fused.
//
//   func.func @f(%q: memref<BxHxNx128xbf16>, ...) attributes {tile.kernel,
//       tile.attention = {...}} { <attention tile program, BM=128> }
//   ==>
//   gpu.module @attn_kernels [#nvvm.target<chip = "sm_90a", ...>] {
//     llvm.func @f(%q: !llvm.ptr, ..., %q_map: !llvm.ptr {llvm.byval = ...,
//         nvvm.grid_constant}, ...) attributes {nvvm.kernel,
//         nvvm.maxntid = array<i32: 384, 1, 1>, attn.launch = {...}}
//   }
//
// Supported: bf16/f16, head dim 64, 128 or 256 (v's equal to q's), block-m
// 128 (the kernel's query block is 64 rows per consumer), block-n 64 or 128
// (64 or 80 at head dim 256, two consumers, two stages: check_wide_blocks),
// MHA or GQA, any sequence length, causal or not,
// a sliding window (lib/Kernels/softmax.c; the key blocks outside it are
// skipped), score and mask functions of any form (tile.score_fn,
// tile.mask_fn: softcap, ALiBi, a gate, a document mask, a bias table ...;
// lib/Kernels/score_fn.c) with up to 8 captured tensors (pointer
// parameters and launch program inputs in the tile kernel's argument
// order, which is the program's with out last), RoPE with
// rotary_dim/4 dividing 96 (64, 128, 32, ...), or rotary_dim 256 at head
// dim 256 placed split or pre (the producer's 96 rotating threads do not
// divide its 64 slots), its positions from offsets
// or explicit (packed sequences: tile.rope_positions' i32 q_positions and
// k_positions [batch, rows], pointer parameters like the captures, in
// every placement; the rotation kernels of split and pre take theirs as a
// third argument; each rotated row's cos/sin is computed from its own
// position, by the MUFU from the frequencies in turns, where offsets step
// it down the rows). Anything else is a diagnostic, or with fallback=true
// is left to lower-tile-to-gpu.
//
//===----------------------------------------------------------------------===//
#include "lib/CostModel/cost_model.h"
#include "lib/Kernels/kernels.h"
#include "lib/Target/attn_target.h"
#include "lib/Transforms/lower_tile_to_hopper.h"
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/tile/tile_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/// Where RoPE runs: see the file comment.
enum placement { PLACE_AUTO, PLACE_FUSED, PLACE_SPLIT, PLACE_PRE, PLACE_AHEAD };


struct hopper_options {
  char chip[16];        // must be sm_90a: the kernel uses wgmma and setmaxnreg
  char gpu[32];         // the cost model's hardware: rope=auto, SM count
  bool fallback;
  bool grad_fallback;   // backward kernels without a Hopper backward stay
  long stages;          // 0: by head dim
  enum placement rope;  // auto: the program's rope.strategy, else split
  bool persistent;      // a few CTAs looping over the tiles
  bool persistent_given; // persistent was set (else it follows the masks)
  long ctas;            // how many (0: one per SM of gpu)
  bool q_by_producer;   // q-rope=producer (else consumers)
  long tile_overhead;   // the schedule's cost of a tile beyond its key blocks
  long consumers;       // consumer warpgroups (0: by head dim)
  enum attn_hopper_epilogue epilogue;
  long group_m;         // GEMM: tile rows walked together (0: 16)
  int own_last;         // fused reduce patterns: own tiles in the last
                        // wave (1), not (0), for all-reduce only (-1)
  long split_k;         // GEMM: K slices (0: by shape)
  int rescale;          // attention: lazy (1), eager (0), by head dim (-1)
  int row_sum;          // attention: mma (1), alu (0), by head dim (-1)
  int pv_wait;          // attention: late (1), early (0), by head dim (-1)
  int kv_barriers;      // attention: split (1), joint (0), by head dim (-1)
  struct attn_hopper_bwd_choices bwd; // backward: dq-reduce, dp-issue,
                                      // ds-buffers
};

/// SMs of option gpu (checked when the option was set): one persistent CTA
/// each.
static int gpu_sms(const struct hopper_options *o) {
  return attn_cost_gpu_lookup(o->gpu, NULL, 0)->sms;
}

static const struct attn_pass_option hopper_options_help[] = {
    {"fallback", "leave kernels without a Hopper lowering to lower-tile-to-gpu "
                 "instead of failing (default false)"},
    {"grad-fallback", "leave backward kernels (tile.attention_grad) without a "
                      "Hopper backward to lower-tile-to-gpu instead of failing, "
                      "the forwards still held to the Hopper kernel (default "
                      "false; the drivers set it for a module with a backward)"},
    {"chip", "the target chip; the kernel needs sm_90a (default)"},
    {"gpu", "hardware the cost model prices rope=auto for, and whose SMs "
            "the persistent kernels fill (default H200)"},
    {"stages", "K/V pipeline depth (0: 2 for head dim 256, 3 for 128, 4 for 64; attention needs 2 or more)"},
    {"persistent", "one CTA per SM of gpu, each looping over query blocks, "
                   "so that a tile's epilogue overlaps the next tile's loads "
                   "(default true, but false with a mask function that "
                   "reads a tensor: its tiles' work is known at run time "
                   "only; false: one CTA per query block)"},
    {"ctas", "CTAs of the persistent kernel (0: one per SM of gpu, the "
             "default)"},
    {"consumers", "consumer warpgroups of 64 query rows: 2 or 3 (3 only at "
                  "head dim 64; 0: by head dim, the default)"},
    {"epilogue",
     "how the kernels write their output tiles: registers (4-byte stores "
     "straight from the accumulators), staged (through shared memory, "
     "whole rows by the bulk-copy engine; not for a GEMM that accumulates, "
     "applies RoPE or writes the heads layout, nor where the rows do not "
     "fit, as at attention head dim 128) or auto (the default: staged for "
     "every GEMM that can be, registers for attention)"},
    {"group-m", "the GEMM's tile rows walked together, so that the CTAs "
                "running at once share A rows and B columns in L2 (for "
                "reduce-scatter, per shard; 0, the default: 16, and 16 / "
                "world per shard for reduce-scatter)"},
    {"split-k", "the GEMM's K slices: 1 none, 2 to 64 that many (a second "
                "kernel sums them into C), 0 (the default) what attn-tile "
                "chose (tile.matmul's split_k: slices where an output has "
                "too few tiles to fill the GPU)"},
    {"own-last", "fused all-reduce and reduce-scatter: each rank runs the "
                 "tiles it owns in its last wave and the peers' tiles of "
                 "those rows in the waves before, so that no partial of the "
                 "last wave crosses NVLink after the GEMM: true, false or "
                 "auto (the default: all-reduce only, measured faster there "
                 "and slower for reduce-scatter)"},
    {"rescale", "attention's online softmax: eager (O and l rescaled at "
                "every block whose row maximum grew), lazy (a row's maximum "
                "moves only when it grows by more than 2^8, and a warp skips "
                "the rescale when none of its rows moved) or auto (the "
                "default: by head dim)"},
    {"row-sum", "attention's softmax row sums: alu (each consumer thread "
                "adds its P values) or mma (the tensor cores, P times a tile "
                "of ones beside each P.V) or auto (the default: by head "
                "dim)"},
    {"pv-wait", "attention's wait for the previous block's P.V: late (after "
                "the block's softmax, which then runs under it), early "
                "(where ptxas puts it: before the softmax) or auto (the "
                "default: by head dim)"},
    {"kv-barriers", "attention's K/V ring: split (K and V of a stage on "
                    "barriers of their own, so that a K slot refills once "
                    "Q.K has read it), joint (one pair per stage) or auto "
                    "(the default: split at head dim 256)"},
    {"dq-reduce", "how the backward's main kernel adds dQ into its f32 "
                  "workspace: red (a red.global.add.f32 per element from "
                  "the registers) or bulk (each consumer warpgroup's tile "
                  "through shared memory, a cp.reduce.async.bulk add per "
                  "row; the default: 1.22x faster at head dim 128, 1.40x "
                  "at 64 on an H200)"},
    {"dp-issue", "when the backward's main kernel issues dP^T = V dO^T: "
                 "late (after P), early (with S^T = K Q^T, so that the "
                 "tensor cores run it while P is computed) or auto (the "
                 "default: early, 0.4-1.5% faster on an H200, but late where "
                 "the modifier chain has a derivative)"},
    {"deterministic", "the backward's dQ added in one order every run "
                      "(true: each query block's key blocks take turns, by "
                      "red.global.add; false, the default: in whatever order "
                      "the CTAs reach it)"},
    {"ds-buffers", "the backward's dS^T tiles in shared memory: 1 (the "
                   "consumers meet at a barrier before storing it), 2 (by "
                   "step parity, without that barrier; 16 KiB more) or auto "
                   "(the default: 2 at head dim 64, 1 at 128)"},
    {"tile-overhead", "what a tile costs the persistent kernel's schedule "
                      "beyond its key blocks, in key blocks (0: 2)"},
    {"q-rope", "who rotates Q in a persistent kernel whose K comes rotated "
               "(split): producer (warps 1-3, overlapping the previous "
               "tile) or consumers (each its rows at the start of the tile, "
               "the default)"},
    {"rope", "where RoPE runs: auto (the program's rope.strategy, else the "
             "cost model's choice), fused (Q and K in the kernel, K per tile), "
             "split (K by a "
             "kernel before, once per row; Q in the kernel), pre (Q and K by "
             "kernels before), ahead (K once per row by producer warps of "
             "the attention kernel, ahead of the CTAs that read it; Q in the "
             "kernel)"},
    {NULL, NULL},
};

static void hopper_init(void *opts) {
  struct hopper_options *o = opts;
  snprintf(o->chip, sizeof o->chip, "sm_90a");
  snprintf(o->gpu, sizeof o->gpu, "%s", ATTN_COST_DEFAULT_GPU);
  o->fallback = false;
  o->grad_fallback = false;
  o->stages = 0;
  o->rope = PLACE_AUTO;
  o->persistent = true;
  o->persistent_given = false;
  o->ctas = 0;
  o->q_by_producer = false;
  o->tile_overhead = 0;
  o->consumers = 0;
  o->epilogue = ATTN_HOPPER_EPILOGUE_AUTO;
  o->group_m = 0;
  o->own_last = -1;
  o->split_k = 0;
  o->rescale = -1;
  o->row_sum = -1;
  o->pv_wait = -1;
  o->kv_barriers = -1;
  o->bwd.dq_bulk = true; // measured faster (bench/RESULTS.md)
  o->bwd.dp_early = -1;
  o->bwd.ds_ring = -1;
  o->bwd.deterministic = false;
}

/// Option `name`'s value among auto, a and b: *out = -1, 0 or 1; false with
/// err if it is none of them.
static bool parse_choice(const char *name, const char *value, const char *a,
                         const char *b, int *out, char *err, size_t errlen) {
  const char *names[3] = {"auto", a, b};
  for (int i = 0; i < 3; ++i)
    if (!strcmp(value, names[i])) {
      *out = i - 1;
      return true;
    }
  snprintf(err, errlen, "option '%s' expects auto, %s or %s, found '%s'", name,
           a, b, value);
  return false;
}

static bool parse_placement(const char *v, enum placement *out) {
  static const char *names[] = {"auto", "fused", "split", "pre", "ahead"};
  for (int i = 0; i < 5; ++i)
    if (!strcmp(v, names[i])) {
      *out = (enum placement)i;
      return true;
    }
  return false;
}

static bool hopper_set(void *opts, const char *name, const char *value,
                       char *err, size_t errlen) {
  struct hopper_options *o = opts;
  if (!strcmp(name, "fallback")) {
    if (attn_parse_bool_option(value, &o->fallback))
      return true;
    snprintf(err, errlen, "option 'fallback' expects true or false, found '%s'",
             value);
    return false;
  }
  if (!strcmp(name, "grad-fallback")) {
    if (attn_parse_bool_option(value, &o->grad_fallback))
      return true;
    snprintf(err, errlen,
             "option 'grad-fallback' expects true or false, found '%s'", value);
    return false;
  }
  if (!strcmp(name, "own-last")) {
    bool b;
    if (!strcmp(value, "auto")) {
      o->own_last = -1;
      return true;
    }
    if (attn_parse_bool_option(value, &b)) {
      o->own_last = b;
      return true;
    }
    snprintf(err, errlen,
             "option 'own-last' expects auto, true or false, found '%s'",
             value);
    return false;
  }
  if (!strcmp(name, "persistent")) {
    o->persistent_given = true;
    if (attn_parse_bool_option(value, &o->persistent))
      return true;
    snprintf(err, errlen,
             "option 'persistent' expects true or false, found '%s'", value);
    return false;
  }
  if (!strcmp(name, "gpu")) {
    if (!attn_cost_gpu_lookup(value, err, errlen))
      return false;
    snprintf(o->gpu, sizeof o->gpu, "%s", value);
    return true;
  }
  if (!strcmp(name, "chip")) {
    snprintf(o->chip, sizeof o->chip, "%s", value);
    return true;
  }
  if (!strcmp(name, "q-rope")) {
    o->q_by_producer = !strcmp(value, "producer");
    if (o->q_by_producer || !strcmp(value, "consumers"))
      return true;
    snprintf(err, errlen,
             "option 'q-rope' expects producer or consumers, found '%s'",
             value);
    return false;
  }
  if (!strcmp(name, "rescale"))
    return parse_choice(name, value, "eager", "lazy", &o->rescale, err,
                        errlen);
  if (!strcmp(name, "row-sum"))
    return parse_choice(name, value, "alu", "mma", &o->row_sum, err, errlen);
  if (!strcmp(name, "pv-wait"))
    return parse_choice(name, value, "early", "late", &o->pv_wait, err,
                        errlen);
  if (!strcmp(name, "kv-barriers"))
    return parse_choice(name, value, "joint", "split", &o->kv_barriers, err,
                        errlen);
  if (!strcmp(name, "dq-reduce")) {
    o->bwd.dq_bulk = !strcmp(value, "bulk");
    if (o->bwd.dq_bulk || !strcmp(value, "red"))
      return true;
    snprintf(err, errlen, "option 'dq-reduce' expects red or bulk, found '%s'",
             value);
    return false;
  }
  if (!strcmp(name, "dp-issue"))
    return parse_choice(name, value, "late", "early", &o->bwd.dp_early, err,
                        errlen);
  if (!strcmp(name, "deterministic")) {
    if (attn_parse_bool_option(value, &o->bwd.deterministic))
      return true;
    snprintf(err, errlen,
             "option 'deterministic' expects true or false, found '%s'", value);
    return false;
  }
  if (!strcmp(name, "ds-buffers"))
    return parse_choice(name, value, "1", "2", &o->bwd.ds_ring, err, errlen);
  if (!strcmp(name, "tile-overhead"))
    return attn_parse_int_option(name, value, 0, 64, &o->tile_overhead, err,
                                 errlen);
  if (!strcmp(name, "consumers")) {
    if (!strcmp(value, "0") || !strcmp(value, "2") || !strcmp(value, "3")) {
      o->consumers = value[0] - '0';
      return true;
    }
    snprintf(err, errlen, "option 'consumers' expects 0, 2 or 3, found '%s'",
             value);
    return false;
  }
  if (!strcmp(name, "epilogue")) {
    static const char *names[] = {"auto", "registers", "staged"};
    for (int i = 0; i < 3; ++i)
      if (!strcmp(value, names[i])) {
        o->epilogue = (enum attn_hopper_epilogue)i;
        return true;
      }
    snprintf(err, errlen,
             "option 'epilogue' expects auto, registers or staged, "
             "found '%s'",
             value);
    return false;
  }
  if (!strcmp(name, "group-m"))
    return attn_parse_int_option(name, value, 0, 1 << 16, &o->group_m, err,
                                 errlen);
  if (!strcmp(name, "split-k"))
    return attn_parse_int_option(name, value, 0, 64, &o->split_k, err,
                                 errlen);
  if (!strcmp(name, "ctas"))
    return attn_parse_int_option(name, value, 0, 1 << 16, &o->ctas, err,
                                 errlen);
  if (!strcmp(name, "stages"))
    return attn_parse_int_option(name, value, 0, 4, &o->stages, err, errlen);
  if (!strcmp(name, "rope")) {
    if (parse_placement(value, &o->rope))
      return true;
    snprintf(err, errlen,
             "option 'rope' expects auto, fused, split, pre or ahead, found "
             "'%s'",
             value);
    return false;
  }
  snprintf(err, errlen,
           "unknown option '%s' of pass 'lower-tile-to-hopper' (expected "
           "chip, gpu, fallback, grad-fallback, stages, rope, persistent, ctas, q-rope, "
           "tile-overhead, consumers, rescale, row-sum, pv-wait, kv-barriers, epilogue, "
           "group-m, own-last, split-k, dq-reduce, dp-issue, ds-buffers or "
           "deterministic)",
           name);
  return false;
}

/// The RoPE the Hopper kernel applies: placed fused, split, pre or ahead (the
/// program's rope.strategy into *user, an enum placement), positions in
/// [0, 2^24), rotary_dim/4 dividing 96.
static bool check_rope(MlirAttribute rope, struct attn_hopper_kernel *k,
                       void *user, char *why, size_t wlen, char *detail,
                       size_t dlen) {
  enum placement *strategy = user;
  MlirAttribute strat = attn_dict_get(rope, "strategy");
  if (!mlirAttributeIsNull(strat) && mlirAttributeIsAString(strat)) {
    MlirStringRef sv = mlirStringAttrGetValue(strat);
    char buf[16];
    snprintf(buf, sizeof buf, "%.*s", (int)sv.length, sv.data);
    if (!parse_placement(buf, strategy) || *strategy == PLACE_AUTO) {
      snprintf(why, wlen,
               "the Hopper kernel places RoPE fused, split, pre or ahead");
      snprintf(detail, dlen, "strategy '%s'", buf);
      return false;
    }
  }
  if (!attn_attention_rope_positions_ok(k)) {
    snprintf(why, wlen,
             "the Hopper kernel's RoPE positions must lie in [0, 2^24)");
    return false;
  }
  // The producer's 96 rotating threads (fused, ahead, q-rope=producer) need
  // rotary_dim/4 to divide 96; the consumers' 128 rotate Q at rotary dim 256
  // too, where K is rotated before (split, pre): lower_kernel checks the
  // placement (producer_rope_ok).
  if (k->rotary_dim % 4 != 0 ||
      (96 % (k->rotary_dim / 4) != 0 &&
       !(k->head_dim == 256 && k->rotary_dim == 256))) {
    snprintf(why, wlen,
             k->head_dim == 256
                 ? "the Hopper kernel's RoPE needs rotary_dim/4 to divide 96, "
                   "or rotary_dim 256, at head dim 256"
                 : "the Hopper kernel's RoPE needs rotary_dim/4 to divide 96");
    snprintf(detail, dlen, "rotary_dim %lld", (long long)k->rotary_dim);
    return false;
  }
  return true;
}

static const struct attn_attention_family hopper_family = {
    .kernel = "the Hopper kernel",
    .args_why = "the kernel's arguments are not in the order (q, k, v, out)",
    .head_dims = 64 | 128 | 256,
    .head_dims_why = "the Hopper kernel has head dims 64, 128 and 256",
    .block_m = 128,
    .block_n = 64 | 128,
    .block_n_extra = 80,
    .blocks_why = "the Hopper kernel needs block-m 128 and block-n 64 or 128 "
                  "(64 or 80 at head dim 256)",
    .check_rope = check_rope,
};

/// The softmax's choices for k's head dim and consumers, where the options
/// leave them to auto (bench/RESULTS.md, same-run comparisons on an H200):
/// lazy rescaling was 2-3% faster at head dim 128 (N = 4K-8K) and, with the
/// tensor cores' row sums, 3-7% at head dim 64 with three consumers; level
/// at N = 2K with two. The row sums by wgmma cost tensor-core time: 4-7%
/// slower at head dim 128 and with two consumers, where the tensor cores are
/// the bottleneck; three consumers at head dim 64 are bound by issue slots
/// and the MUFU instead. The late P.V wait measured 4-7% faster at head dim
/// 128; at 64, early or late with either softmax, level to 7% slower. Head
/// dim 256 takes 128's choices (not measured apart: its P.V, twice as long,
/// has more to hide the softmax under).
static void choose_softmax(struct attn_hopper_kernel *k,
                           const struct hopper_options *o) {
  k->lazy_rescale = o->rescale != 0;
  k->row_sum_mma = o->row_sum == 1 || (o->row_sum < 0 && k->consumers == 3);
  k->pv_wait_late = o->pv_wait == 1 || (o->pv_wait < 0 && k->head_dim >= 128);
  k->kv_split =
      o->kv_barriers == 1 || (o->kv_barriers < 0 && k->head_dim == 256);
}

/// Head dim 256's tiles (FlashAttention-3's for d = 256): 128 query rows,
/// two consumers of 64, keys in blocks of 80 (attn-tile's default) or 64,
/// so that each consumer's O (64 x 256 f32: 128 registers a thread) and S
/// of a block (40 or 32) fit its 232 registers (lib/Kernels/
/// hopper_attention.c; ptxas spilled none at 80 keys, lib/Kernels/
/// attention_consumer.c says how); two stages, the most that fit beside Q
/// (64 KiB) at 80 keys (K and V 80 KiB a stage). False with
/// why for block-n 128 (its S and P would not fit beside O) and for 80
/// keys at a smaller head dim (not built there).
static bool check_wide_blocks(struct attn_hopper_kernel *k, char *why,
                              size_t wlen, char *detail, size_t dlen) {
  if (k->head_dim == 256 && k->block_n == 128) {
    snprintf(why, wlen,
             "the Hopper kernel needs block-n 64 or 80 at head dim 256 (S "
             "and P of 128 keys do not fit beside O in the consumers' "
             "registers)");
    snprintf(detail, dlen, "block-n %d", k->block_n);
    return false;
  }
  if (k->head_dim != 256 && k->block_n == 80) {
    snprintf(why, wlen,
             "the Hopper kernel takes block-n 80 at head dim 256 only");
    snprintf(detail, dlen, "head dim %lld", (long long)k->head_dim);
    return false;
  }
  return true;
}

/// Reads the kernel's problem; returns false with why when the Hopper
/// kernel cannot compute it.
static bool describe(MlirOperation kernel, const struct hopper_options *o,
                     struct attn_hopper_kernel *k, enum placement *strategy,
                     char *why, size_t wlen, char *detail, size_t dlen) {
  *strategy = PLACE_AUTO;
  if (!attn_attention_describe(kernel, &hopper_family, k, strategy, why, wlen,
                               detail, dlen))
    return false;
  if (!check_wide_blocks(k, why, wlen, detail, dlen))
    return false;
  k->stages = o->stages           ? (int)o->stages
              : k->head_dim == 256 ? 2
              : k->head_dim == 128 ? 3
                                   : 4;
  // Each consumer issues Q.K of key block j before P.V of block j-1 frees
  // its stage (attention_consumer.c), so it holds two stages at once: with
  // one the producer would wait for a stage that is never freed (a hang on
  // an H200, at every head dim).
  if (k->stages < 2) {
    snprintf(why, wlen,
             "the attention kernel needs 2 or more stages (each consumer "
             "holds key block j's K and block j-1's V at once)");
    snprintf(detail, dlen, "stages %d", k->stages);
    return false;
  }
  // The kernel's query block is its consumers' 64 rows each, whatever block-m
  // attn-tile chose. A third consumer leaves each 152-160 registers
  // (lib/Kernels/hopper_attention.c): room for S and O of head dim 64, not 128.
  // At head dim 64 the softmax's exponentials take the MUFU as long as the two
  // GEMMs take the tensor cores, and with three consumers each has two others'
  // GEMMs to hide its softmax under: on an H200 (bench/RESULTS.md) from N = 4K
  // 3-9% faster without RoPE and 0-6% with it, 12% slower at 1K (a sixth of the
  // 192-row tiles is padding); at 2K no faster with the old softmax, and 1-4.5%
  // faster with lazy rescaling and the tensor cores' row sums (which need three
  // consumers, below). lower_kernel goes back to 2 when producer warps rotate K
  // or Q.
  // Score and mask functions take registers per element: with three
  // consumers' 160 ptxas spilled (a bias table and a document mask: 600
  // bytes), with two none, so they keep two unless asked; light ones
  // (softcap's and ALiBi's bodies, which took three consumers as special
  // cases; attn_hopper_fns_light) do not.
  k->consumers = o->consumers ? (int)o->consumers
                 : k->head_dim == 64 && k->seq_q >= 2048 &&
                         attn_hopper_fns_light(k)
                     ? 3
                     : 2;
  if (k->consumers == 3 && k->head_dim != 64) {
    snprintf(why, wlen,
             "3 consumer warpgroups need head dim 64 (their registers do "
             "not hold the accumulators of a larger one)");
    snprintf(detail, dlen, "head dim %lld", (long long)k->head_dim);
    return false;
  }
  k->block_m = 64 * k->consumers;
  k->persistent_ctas = !o->persistent ? 0 : o->ctas ? o->ctas : gpu_sms(o);
  if (attn_hopper_tiles(k) > ATTN_HOPPER_MAX_SCHEDULED_TILES)
    k->persistent_ctas = 0;
  // Producer warps could rotate Q while the consumers finish the previous
  // tile, but 96 threads rotate 128 rows where each consumer warpgroup's 128
  // rotate 64, 2.7 times the rows per thread; on an H200 (bench/RESULTS.md)
  // that was never consistently faster, so the consumers rotate Q unless
  // asked otherwise.
  k->rope_q_by_producer = o->q_by_producer;
  // A tile's own work (see attn_hopper_kernel::tile_overhead): 2 key blocks
  // measured best or within noise of the best of 1, 2, 4 and 8 on an H200
  // at d 64 and 128, N 1K to 8K (8 was best at N = 1K only).
  k->tile_overhead = o->tile_overhead ? (int)o->tile_overhead : 2;
  choose_softmax(k, o);
  // A grid of one CTA per tile, and the RoPE kernels', are (blocks, heads,
  // batch): y and z take 65535 CTAs at most (the plain path folds larger
  // grids into x).
  if (k->heads > 65535 || k->batch > 65535) {
    snprintf(why, wlen, "the grid's y (heads) and z (batch) take at most "
                        "65535 CTAs");
    snprintf(detail, dlen, "%lld heads, batch %lld", (long long)k->heads,
             (long long)k->batch);
    return false;
  }
  if (attn_hopper_smem_bytes(k) > ATTN_KERNELS_SMEM_LIMIT) {
    snprintf(why, wlen,
             "the tiles do not fit the 227 KiB of shared memory of a CTA");
    snprintf(detail, dlen, "%lld bytes with %d stages",
             (long long)attn_hopper_smem_bytes(k), k->stages);
    return false;
  }
  return true;
}

/// Whether the producer's 96 rotating threads (warps 1-3) divide into k's
/// RoPE slots, as fused, ahead and q-rope=producer need (not at rotary dim
/// 256: 64 slots).
static bool producer_rope_ok(const struct attn_hopper_kernel *k) {
  return !k->rope || 96 % attn_hopper_rope_slots(k) == 0;
}

/// The placement the Rotation Calculus prices lowest for k on gpu (split
/// when the model cannot say).
static enum placement cheapest(const struct attn_hopper_kernel *k,
                               const char *gpu) {
  const struct attn_cost_gpu *g = attn_cost_gpu_lookup(gpu, NULL, 0);
  struct attn_cost_problem p = {
      .batch = k->batch, .heads = k->heads, .kv_heads = k->kv_heads,
      .seq_q = k->seq_q, .seq_k = k->seq_k, .head_dim = k->head_dim,
      .rotary_dim = k->rotary_dim, .causal = k->causal, .dtype_bytes = 2,
      .block_m = k->block_m, .block_n = k->block_n};
  unsigned avail = producer_rope_ok(k) ? 1u << ATTN_COST_FUSED : 0;
  if (attn_hopper_rope_k_supported(k))
    avail |= (1u << ATTN_COST_SPLIT) | (1u << ATTN_COST_PRE);
  switch (g ? attn_cost_choose(&p, g, avail, NULL) : ATTN_COST_SPLIT) {
  case ATTN_COST_FUSED:
    return PLACE_FUSED;
  case ATTN_COST_PRE:
    return PLACE_PRE;
  default:
    return PLACE_SPLIT;
  }
}

/// The attention dictionary without its "rope" entry.
static MlirAttribute without_rope(MlirAttribute dict) {
  intptr_t n = mlirDictionaryAttrGetNumElements(dict), m = 0;
  MlirNamedAttribute kept[n > 0 ? n : 1];
  for (intptr_t i = 0; i < n; ++i) {
    MlirNamedAttribute e = mlirDictionaryAttrGetElement(dict, i);
    if (!attn_str_eq(mlirIdentifierStr(e.name), "rope"))
      kept[m++] = e;
  }
  return mlirDictionaryAttrGet(mlirAttributeGetContext(dict), m, kept);
}

/// Appends to the gpu.module's attn.programs the program of a placement
/// whose rotation needs workspaces: split and pre run the rotation kernels
/// into them, then attention on them; ahead runs the attention kernel alone,
/// with the workspaces its producer warps rotate K into (k_rot) and keep
/// their queue and flags in (rope_sync, zero-filled when allocated and never
/// reset: see attn_hopper_ahead_blocks).
static bool add_program(MlirOperation gm, const struct attn_hopper_kernel *k,
                        enum placement place, bool lists) {
  long long kbytes = (long long)(k->batch * k->kv_heads * k->seq_k *
                                 k->head_dim * 2);
  long long qbytes = (long long)(k->batch * k->heads * k->seq_q *
                                 k->head_dim * 2);
  bool pre = place == PLACE_PRE, ahead = place == PLACE_AHEAD;
  // The inputs are the tile kernel's arguments (the captures of score and
  // mask functions among them), in its order, as the attention kernel's
  // first parameters are.
  struct attn_strbuf t = {0};
  attn_strbuf_printf(&t, "{name = \"%s\", inputs = [", k->name);
  attn_attention_arg_names(&t, k, "q", "k");
  bool rot = pre || ahead || place == PLACE_SPLIT;
  attn_strbuf_printf(&t, "], workspace = [");
  if (pre)
    attn_strbuf_printf(&t, "{name = \"q_rot\", bytes = %lld : i64}, ", qbytes);
  if (rot)
    attn_strbuf_printf(&t, "{name = \"k_rot\", bytes = %lld : i64}", kbytes);
  if (ahead)
    attn_strbuf_printf(&t, ", {name = \"rope_sync\", bytes = %lld : i64}",
                       (long long)attn_hopper_ahead_sync_bytes(k));
  // The run-time key lists (key_lists.c): their kernel reads the caller's
  // tensors, then the attention kernel reads the lists.
  if (lists)
    attn_strbuf_printf(&t, "%s{name = \"key_lists\", bytes = %lld : i64}",
                       rot ? ", " : "",
                       (long long)(4 * attn_hopper_key_lists_words(k)));
  attn_strbuf_printf(&t, "], steps = [");
  if (ahead) {
    attn_strbuf_printf(&t, "{kernel = \"%s__attn\", args = [", k->name);
    attn_attention_arg_names(&t, k, "q", "k");
    attn_strbuf_printf(&t, ", \"k_rot\", \"rope_sync\"]}]}");
    return attn_programs_append(gm, ATTN_PROGRAMS_ATTR, &t);
  }
  // The rotation kernels read explicit positions as their third argument.
  if (pre)
    attn_strbuf_printf(
        &t, "{kernel = \"%s__rope_q\", args = [\"q\", \"q_rot\"%s]}, ", k->name,
        k->q_positions ? ", \"q_positions\"" : "");
  if (rot)
    attn_strbuf_printf(
        &t, "{kernel = \"%s__rope_k\", args = [\"k\", \"k_rot\"%s]}, ",
        k->name, k->k_positions ? ", \"k_positions\"" : "");
  if (lists) {
    attn_strbuf_printf(&t, "{kernel = \"%s__attn__key_lists\", args = [",
                       k->name);
    attn_attention_arg_names(&t, k, "q", "k");
    attn_strbuf_printf(&t, ", \"key_lists\"]}, ");
  }
  attn_strbuf_printf(&t, "{kernel = \"%s__attn\", args = [", k->name);
  attn_attention_arg_names(&t, k, pre ? "q_rot" : "q", rot ? "k_rot" : "k");
  attn_strbuf_printf(&t, "%s]}]}", lists ? ", \"key_lists\"" : "");
  return attn_programs_append(gm, ATTN_PROGRAMS_ATTR, &t);
}

static bool lower_kernel(MlirOperation kernel, const struct hopper_options *o,
                         bool *lowered) {
  *lowered = false;
  struct attn_hopper_kernel k;
  char why[160], detail[128] = "";
  MlirStringRef sym;
  attn_attr_str(kernel, "sym_name", &sym);
  char name[256];
  snprintf(name, sizeof name, "%.*s", (int)sym.length, sym.data);
  enum placement strategy;
  if (!describe(kernel, o, &k, &strategy, why, sizeof why, detail,
                sizeof detail)) {
    if (o->fallback)
      return true;
    return attn_emit_errorf(kernel, "no Hopper kernel for '%s': %s%s%s%s",
                            name, why, detail[0] ? " (found " : "", detail,
                            detail[0] ? ")" : "");
  }
  k.name = name;
  // Where RoPE runs: the option, else the program's choice (attn-fuse's
  // rope-strategy), else split: K rotated once per row by its own kernel
  // rather than by every CTA that reads the tile (attention re-reads K per
  // query block). The rotation kernels need rotary_dim == head dim; other
  // programs rotate in the kernel.
  enum placement place = o->rope != PLACE_AUTO ? o->rope
                         : strategy != PLACE_AUTO ? strategy
                                                  : cheapest(&k, o->gpu);
  // auto at head dim 64 up to N = 4096: split's rotation kernel moves into
  // the attention kernel (ahead), where it runs under the attention of
  // earlier heads. On an H200 (bench/RESULTS.md) that measured 1.7-6% faster
  // end to end at N = 1K-4K and level from 8K; at head dim 128 its buffers
  // do not fit beside three stages.
  // (Not with q-rope=producer, which asks for split's idle producer warps.)
  if (o->rope == PLACE_AUTO && strategy == PLACE_AUTO &&
      place == PLACE_SPLIT && k.head_dim == 64 && k.seq_k <= 4096 &&
      o->epilogue != ATTN_HOPPER_EPILOGUE_STAGED && !o->q_by_producer)
    place = PLACE_AHEAD;
  // Masks that read data get key lists at run time, which the ahead
  // placement's queue of key blocks does not follow: split (or fused)
  // instead, unless asked for.
  if (place == PLACE_AHEAD && k.rope && attn_hopper_masks_read_data(&k)) {
    if (o->rope == PLACE_AHEAD)
      return attn_emit_errorf(
          kernel,
          "no Hopper kernel for '%s': rope=ahead cannot run with a mask "
          "function that reads a tensor (its key blocks are listed at run "
          "time); use rope=split or rope=fused",
          name);
    place = PLACE_SPLIT;
  }
  // ahead rotates key blocks in shared memory, any rotary dim.
  if (!k.rope || (!attn_hopper_rope_k_supported(&k) && place != PLACE_AHEAD))
    place = PLACE_FUSED;
  bool split = k.rope && place == PLACE_SPLIT, pre = k.rope && place == PLACE_PRE;
  bool ahead = k.rope && place == PLACE_AHEAD;
  k.rope_k_in_kernel = k.rope && place == PLACE_FUSED;
  k.rope_k_ahead = ahead;
  // (q-rope=producer as attn_hopper_q_by_producer reads it: a persistent
  // kernel of split, whose K comes rotated.)
  bool q_by_producer = split && k.persistent_ctas && k.rope_q_by_producer;
  if (k.rope && !producer_rope_ok(&k) &&
      (k.rope_k_in_kernel || ahead || q_by_producer))
    return attn_emit_errorf(
        kernel,
        "no Hopper kernel for '%s': %s rotates with the producer's 96 "
        "threads, which need rotary_dim/4 to divide 96 (found rotary_dim "
        "%lld; rope=split or pre rotate K before the kernel)",
        name,
        k.rope_k_in_kernel ? "rope=fused"
        : ahead            ? "rope=ahead"
                           : "q-rope=producer",
        (long long)k.rotary_dim);
  // Producer warps that rotate K (or Q, q-rope=producer) need 56
  // registers, which leaves three consumers 152 and ptxas then serialises
  // their wgmma.
  // (The pre placement's attention kernel has no RoPE: nothing rotates.)
  if (!o->consumers && !pre && attn_hopper_producer_rotates(&k) &&
      k.consumers == 3) {
    k.consumers = 2;
    k.block_m = 128;
    choose_softmax(&k, o);
  }
  // O through shared memory only when asked: at head dim 64 on an H200
  // (bench/RESULTS.md) it was, with RoPE, 2-4% slower at N = 1K-2K and 3%
  // faster from 4K; without RoPE level at 1K-2K and 2-3% slower from 4K. So
  // auto keeps the registers. At head dim 128 the rows do not fit beside
  // three stages.
  k.staged_out = o->epilogue == ATTN_HOPPER_EPILOGUE_STAGED;
  // The tiles alone were checked above; what ahead or staging adds is
  // checked now, and named.
  int64_t bytes = attn_hopper_smem_bytes(&k);
  if ((ahead || k.staged_out) && bytes > ATTN_KERNELS_SMEM_LIMIT)
    return attn_emit_errorf(
        kernel,
        "no Hopper kernel for '%s': %s the 227 KiB of shared memory beside "
        "the tiles (found %lld bytes with %d stages%s)",
        name,
        ahead ? "rope=ahead's two key-block buffers do not fit"
              : "the staged epilogue's rows do not fit",
        (long long)bytes, k.stages,
        ahead && k.stages > 2 ? "; fewer stages may fit" : "");
  MlirOperation gm = attn_kernel_gpu_module(kernel, "sm_90a", 80);
  if (mlirOperationIsNull(gm))
    return false;

  // The ops built below go after the module's last op now (for the dump).
  MlirOperation before = attn_hopper_last_op(gm);
  MlirAttribute att = mlirOperationGetAttributeByName(
      kernel, mlirStringRefCreateFromCString("tile.attention"));
  // With a launch program the attention kernel is one of its steps; the
  // attention kernel of the pre placement sees rotated inputs (and its
  // manifest entry says so: no rope).
  struct attn_hopper_kernel main = k;
  char attn_name[300];
  snprintf(attn_name, sizeof attn_name, "%s__attn", name);
  main.rope = k.rope && !pre;
  if (pre)
    att = without_rope(att);
  // The key blocks each query block reads under the mask functions, when
  // their bodies narrow the affine masks' bounds or leave whole blocks;
  // for functions that read data, the affine bounds within which the
  // key-list kernel lists them at run time.
  int64_t shift = attn_hopper_query_shift(&main);
  struct attn_key_blocks *keys = attn_hopper_key_table(&main, shift);
  if (!keys && attn_hopper_masks_read_data(&main))
    keys = attn_hopper_key_bounds(&main, shift);
  main.key_blocks = keys;
  bool lists = attn_hopper_plan_key_lists(&main, shift);
  // The persistent schedule prices tiles by the affine bounds, which key
  // lists made at run time shrink unevenly (a document mask's tiles): one
  // CTA per tile lets the hardware balance them (on an H200, 6% faster on
  // the benchmark's document mask at N = 16K).
  if (lists && !o->persistent_given)
    main.persistent_ctas = 0;
  if (split || pre || ahead || lists)
    main.name = attn_name;
  // The kernel writers report their own failure, at the kernel.
  MlirLocation loc = mlirOperationGetLocation(kernel);
  bool built = attn_kernels_build_hopper_attention(gm, loc, &main, att) &&
               (!lists || attn_kernels_build_key_lists(gm, loc, &main));
  free(keys);
  if (!built)
    return false;
  if ((split || pre) && !attn_kernels_build_hopper_rope(gm, loc, &k, false))
    return false;
  if (pre && !attn_kernels_build_hopper_rope(gm, loc, &k, true))
    return false;
  attn_hopper_dump_built(gm, before);
  k.key_lists = main.key_lists; // the program's workspace and steps
  k.key_lists_batch = main.key_lists_batch;
  k.key_lists_heads = main.key_lists_heads;
  if ((split || pre || ahead || lists) && !add_program(gm, &k, place, lists))
    return attn_emit_errorf(kernel, "cannot record the launch program");
  mlirOperationDestroy(kernel);
  *lowered = true;
  return true;
}

/// The GEMM's share of the options (lower_tile_to_hopper_gemm.c).
static struct attn_hopper_gemm_options gemm_options(
    const struct hopper_options *o) {
  return (struct attn_hopper_gemm_options){
      .fallback = o->fallback, .stages = (int)o->stages,
      .group_m = (int)o->group_m, .split_k = (int)o->split_k,
      .epilogue = o->epilogue, .own_last = o->own_last, .sms = gpu_sms(o)};
}

static bool lower_tile_to_hopper_run(MlirOperation module, const void *opts) {
  const struct hopper_options *o = opts;
  if (strcmp(o->chip, "sm_90a") && !o->fallback)
    return attn_emit_errorf(module,
                            "the Hopper kernel needs chip sm_90a (wgmma, "
                            "setmaxnreg), found %s",
                            o->chip);
  if (strcmp(o->chip, "sm_90a"))
    return true; // fallback: everything goes to lower-tile-to-gpu
  struct attn_hopper_gemm_options go = gemm_options(o);
  struct attn_op_list funcs = {0};
  attn_op_list_collect(&funcs, module, "func.func");
  bool ok = !funcs.failed;
  for (size_t i = 0; ok && i < funcs.n; ++i) {
    bool lowered;
    if (!attn_tile_is_kernel(funcs.ops[i]))
      continue;
    MlirAttribute mm = mlirOperationGetAttributeByName(
        funcs.ops[i], mlirStringRefCreateFromCString("tile.matmul"));
    MlirAttribute grad = mlirOperationGetAttributeByName(
        funcs.ops[i], mlirStringRefCreateFromCString("tile.attention_grad"));
    ok = !mlirAttributeIsNull(mm) && mlirAttributeIsADictionary(mm)
             ? attn_hopper_lower_gemm(funcs.ops[i], mm, &go, &lowered)
         : !mlirAttributeIsNull(grad) && mlirAttributeIsADictionary(grad)
             ? attn_hopper_lower_grad(funcs.ops[i], grad,
                                      o->fallback || o->grad_fallback,
                                      &o->bwd, &lowered)
             : lower_kernel(funcs.ops[i], o, &lowered);
  }
  free(funcs.ops);
  return ok && attn_programs_move(module);
}

const struct attn_pass_def lower_tile_to_hopper_pass = {
    .argument = "lower-tile-to-hopper",
    .description = "Lower attention tile kernels to warp-specialised sm_90a "
                   "kernels: TMA, mbarrier pipeline, wgmma, RoPE in the kernel",
    .options = hopper_options_help,
    .options_size = sizeof(struct hopper_options),
    .init_options = hopper_init,
    .set_option = hopper_set,
    .run = lower_tile_to_hopper_run,
};
