//===- attn_tile.c - attn-tile: attn.fused becomes a tile-level kernel ----===//
//
// A function whose body is one attn.fused op returning its result becomes a
// tile kernel in destination-passing style: tensors become memrefs, the
// output is a new last argument (the inputs keep the function's order and
// are named in tile.arg_names; tile.attention describes the program for the
// launch manifest), and the body is a CTA program over a grid of (query
// blocks, batch * heads):
//
//   func.func @f(%q: memref<BxHxNxD>, %k, %v, [%gate, %q_segments, ...],
//                [%capture0, ...], %out)
//       attributes {tile.kernel, tile.grid = array<i64: ceil(N/BM), B*H, 1>,
//        tile.threads = 128 : i64, tile.arg_names = [...],
//        tile.attention = {...}} {
//     %qb = "tile.program_id"() {dim = 0 : i64} ...
//     "tile.load"(%q, %qt, %b, %h, %row)          // Q tile, once per CTA
//     "tile.rope"(%qt, %row) {..., offset}        // or tile.rope_positions
//     scf.for %j = kstart to kend {               // online softmax over keys
//       "tile.load"(%k, %kt, ...) ; "tile.rope"(%kt, %col)
//       "tile.mma"(%qt, %kt, %s) {transpose_b = true, accumulate = false}
//       "tile.score_mod"(%s, %b, %h, %row, %col) {mods = ["scale"]}
//       "tile.score_fn"(%s, %b, %h, %row, %col) ({...})  // softcap, alibi,
//                                                      // gate, "fn"
//       "tile.mask"(%s, %row, %col) {causal, kv_len = M, window}
//       "tile.mask_fn"(%s, %b, %h, %row, %col) ({...})   // document, mask_fn
//       "tile.softmax_update"(%s, %m, %l, %acc) {scale = ...}
//       "tile.mma"(%s, %vt, %acc) {transpose_b = false, accumulate = true}
//     }
//     "tile.normalize"(%acc, %l) ; "tile.store"(%acc, %out, ...)
//   }
//
// One helper per block builds its part through attn_builder and the tile
// dialect's builders (build_rope, build_key_range, build_score_mods,
// build_masks, ...); each names the fused op's location by its role
// (tile.kernel, tile.prologue, tile.query_tile, tile.key_range,
// tile.key_loop, tile.softcap, tile.alibi, tile.gate, tile.score_fn,
// tile.document, tile.mask_fn, tile.epilogue; a cloned body op keeps its own
// location), and no IR is printed and parsed.
// Modifiers are applied in "mods" order: the scale by tile.score_mod;
// softcap (cap tanh(s / cap)), ALiBi (s - 2^(-max_bias (h + 1) / heads)
// |q - kv|), the gate and attn.fused's score_fn body by tile.score_fn, each a
// body, so that every path computes them as it computes any score function;
// the scale folds into the softmax's exp2 factor when nothing follows it
// (folding is exact only there), else tile.score_mod applies it in order.
// Masks come after the modifiers, so a masked score is -inf whatever they
// did: tile.mask for the affine ones, tile.mask_fn for the document mask and
// the mask_fn body. The bodies are cloned from attn.fused's regions; the
// tensors they capture (function arguments) become kernel arguments named
// capture0, ... in argument order, and tensor.extract of them a memref.load
// at indices clamped into the shape (clamp_index). The key loop visits only
// blocks a query block can see: it stops at the diagonal (causal) or right
// edge of a window and starts at its left edge. Options:
// block-m, block-n (0 picks the largest power of two up to 64 whose tiles fit
// 48 KiB, the static shared memory of the plain GPU path; with kernel=hopper,
// 128 x 128, the Hopper kernel's tiles (128 x 80 at head dim 256, 128 x 64
// with a score_mod body there); with
// kernel=mma, 128 x 64, the mma.sync kernel's) and threads (0: 128, 384
// with kernel=hopper, 2 * block-m with kernel=mma).
//
// This file holds the pass: its options, the block sizes, the checks of
// the function and its attn.fused (or attn.fused_grad) op, the captured
// tensors, and build_kernel, which assembles a kernel from the blocks of
// attn_tile_kernel.c (the forward's) or attn_tile_grad.c (the backward's
// dkdv and dq kernels), both under attn_tile_kernel.h.
//
// Functions without attn ops go to tile_matmul.c, which turns a
// linalg.matmul into a GEMM tile kernel (block-k is its option). Functions
// whose q, k or v come from attn.project go to tile_program.c first, which
// writes the projections' GEMM kernels and the launch program running them
// before the attention.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/attn_tile_kernel.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/body.h"
#include "dialects/tile/tile_dialect.h"
#include "lib/IR/attn_builder.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct attn_pass_option tile_options_help[] = {
    {"block-m", "query rows per CTA; a matmul's output rows per CTA (0: pick)"},
    {"block-n", "key rows per loop step; a matmul's output columns per CTA "
                "(0: pick)"},
    {"block-k", "a matmul's K step (0: pick)"},
    {"threads", "threads per CTA (0: 128, or 384 with kernel=hopper)"},
    {"kernel", "the lowering the defaults are for: plain (lower-tile-to-cpu "
               "and lower-tile-to-gpu, default), hopper "
               "(lower-tile-to-hopper) or mma (lower-tile-to-mma)"},
    {NULL, NULL},
};

static void tile_init(void *opts) {
  struct attn_tile_options *o = opts;
  memset(o, 0, sizeof *o);
}

static bool tile_set(void *opts, const char *name, const char *value, char *err,
                     size_t errlen) {
  struct attn_tile_options *o = opts;
  if (!strcmp(name, "block-m") || !strcmp(name, "block-n") ||
      !strcmp(name, "block-k")) {
    long *dst = name[6] == 'm'   ? &o->block_m
                : name[6] == 'n' ? &o->block_n
                                 : &o->block_k;
    if (!attn_parse_int_option(name, value, 0, 256, dst, err, errlen))
      return false;
    if (*dst & (*dst - 1)) {
      snprintf(err, errlen,
               "option '%s' must be 0 or a power of two, found %ld", name,
               *dst);
      return false;
    }
    return true;
  }
  if (!strcmp(name, "threads"))
    return attn_parse_int_option(name, value, 32, 1024, &o->threads, err,
                                 errlen);
  if (!strcmp(name, "kernel")) {
    if (!strcmp(value, "plain") || !strcmp(value, "hopper") ||
        !strcmp(value, "mma")) {
      o->hopper = value[0] == 'h';
      o->mma = value[0] == 'm';
      return true;
    }
    snprintf(err, errlen,
             "option 'kernel' expects plain, hopper or mma, found '%s'", value);
    return false;
  }
  snprintf(err, errlen,
           "unknown option '%s' of pass 'attn-tile' (expected block-m, "
           "block-n, block-k, threads or kernel)",
           name);
  return false;
}

/// Bytes of f32 tiles one CTA holds: q, acc [bm, d]; k, v [bn, d]; s [bm, bn];
/// m, l [bm].
static long tile_bytes(long bm, long bn, long d, long dv) {
  return 4 * (bm * d + bm * dv + bn * d + bn * dv + bm * bn + 2 * bm);
}

static long pick_block(long d, long dv) {
  long b = 64;
  while (b > 8 && tile_bytes(b, b, d, dv) > 48 * 1024)
    b /= 2;
  return b;
}

/// The backward kernels' square block (b x b tiles): the largest power of
/// two from 64 down to 4 whose f32 tiles fit 48 KiB: q, k and the dq or dk
/// accumulator [b, d]; v, dO, O and dv [b, dv]; S, the raw S and dP [b, b];
/// lse and D [b]. Head dim 256 takes 4 (8 needs 57,920 bytes).
static long pick_grad_block(long d, long dv) {
  long b = 64;
  while (b > 4 && 4 * (3 * b * d + 4 * b * dv + 3 * b * b + 2 * b) > 48 * 1024)
    b /= 2;
  return b;
}

/// Builds the tile kernel s->part of one attn.fused or attn.fused_grad op
/// (located at fused, named by role) just before func. Returns it, or a
/// null op after a diagnostic.
static MlirOperation build_kernel(MlirOperation func, MlirOperation fused,
                                  const char *name,
                                  const struct kernel_shape *s) {
  struct kernel k;
  memset(&k, 0, sizeof k);
  k.s = s;
  struct attn_builder *b = &k.b;
  attn_builder_init(b, mlirOperationGetContext(func),
                    mlirOperationGetLocation(fused));
  attn_builder_before(b, func);
  // Tiles, constants, the softmax state and lse are of the compute type.
  k.ct = attn_compute_type(mlirShapedTypeGetElementType(s->role_type[ROLE_Q]));
  // The accumulator is o [bm, dv] (forward), dq [bm, d] or dk [bn, d].
  int64_t acc_rows = s->part == PART_DKDV ? s->bn : s->bm;
  int64_t acc_cols = s->part == PART_FORWARD ? s->v[3] : s->q[3];
  int64_t cols[NUM_TILES] = {s->q[3], s->k[3], s->v[3], s->bn,    acc_cols,
                             s->bn,   s->bn,   s->v[3], s->v[3], s->v[3]};
  int64_t rows[NUM_TILES] = {s->bm, s->bn, s->bn, s->bm, acc_rows,
                             s->bm, s->bm, s->bm, s->bm, s->bn};
  int ntiles = s->part == PART_FORWARD ? 5 : NUM_TILES;
  for (int i = 0; i < ntiles; ++i)
    k.tile_ty[i] = attn_b_memref(b, 2, (int64_t[]){rows[i], cols[i]}, k.ct);
  k.row_ty = attn_b_memref(b, 1, (int64_t[]){s->bm}, k.ct);
  struct attn_b_func f;
  MlirValue lo, hi, col;
  attn_tk_build_signature(&k, &f, name);
  if (s->part == PART_FORWARD) {
    attn_tk_build_prologue(&k);
    attn_tk_build_query_tile(&k);
    attn_tk_build_key_range(&k, &lo, &hi);
    attn_tk_build_key_loop(&k, lo, hi);
    attn_tk_build_epilogue(&k, &f);
  } else {
    attn_tk_build_grad_prologue(&k, &col);
    if (s->part == PART_DKDV)
      attn_tk_build_dkdv(&k, col);
    else
      attn_tk_build_dq(&k);
    attn_b_func_close(b, &f, 0, NULL);
  }
  if (attn_builder_finish(b))
    return f.op;
  if (!mlirOperationIsNull(f.op))
    mlirOperationDestroy(f.op);
  return (MlirOperation){NULL};
}

/// Finds the single attn.fused op of func and checks the body is only that
/// op and the return of its result. Returns a null op when func holds no
/// attn op; emits an error and sets *bad when the body is not supported.
static MlirOperation find_fused(MlirOperation func, bool *bad) {
  MlirOperation fused = {NULL}, other = {NULL}, stray = {NULL};
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockIsNull(body))
    return fused;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
    bool is_attn = n.length > 5 && !strncmp(n.data, "attn.", 5);
    if ((attn_op_is(op, ATTN_OP_FUSED) || attn_op_is(op, ATTN_OP_FUSED_GRAD)) &&
        mlirOperationIsNull(fused))
      fused = op;
    else if (is_attn && mlirOperationIsNull(other))
      other = op;
    else if (!is_attn && !attn_op_is(op, "func.return") &&
             mlirOperationIsNull(stray))
      stray = op;
  }
  if (!mlirOperationIsNull(other)) {
    MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(other));
    *bad = true;
    if (attn_op_is(other, ATTN_OP_FUSED) ||
        attn_op_is(other, ATTN_OP_FUSED_GRAD))
      attn_emit_errorf(other, "attn-tile supports one attn.fused op per "
                              "function");
    else
      attn_emit_errorf(other,
                       "cannot tile '%.*s': it is not part of an attn.fused "
                       "op (run attn-fuse first; a chain rope -> qk -> "
                       "score modifiers -> softmax -> pv fuses)",
                       (int)n.length, n.data);
  } else if (!mlirOperationIsNull(fused) && !mlirOperationIsNull(stray)) {
    *bad = true;
    attn_emit_errorf(stray, "attn-tile supports functions whose body is one "
                            "attn.fused op and the return of its result");
  }
  return fused;
}

/// True when s's score_fn body reads v with tensor.extract.
static bool body_reads(const struct kernel_shape *s, MlirValue v) {
  for (MlirOperation op = mlirBlockGetFirstOperation(s->score_fn);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (attn_op_is(op, "tensor.extract") &&
        mlirValueEqual(mlirOperationGetOperand(op, 0), v))
      return true;
  return false;
}

/// True when v is defined in block (an argument or an op's result there).
static bool defined_in(MlirValue v, MlirBlock block) {
  if (mlirValueIsABlockArgument(v))
    return mlirBlockEqual(mlirBlockArgumentGetOwner(v), block);
  return mlirBlockEqual(mlirOperationGetBlock(mlirOpResultGetOwner(v)), block);
}

/// True for the element types a captured tensor may hold (f64 ones too;
/// the attn verifier allows them in f64 programs only).
static bool capture_elem_ok(MlirType e) {
  return mlirTypeIsAF32(e) || mlirTypeIsAF16(e) || mlirTypeIsABF16(e) ||
         mlirTypeIsAF64(e) ||
         (mlirTypeIsAInteger(e) && (mlirIntegerTypeGetWidth(e) == 32 ||
                                    mlirIntegerTypeGetWidth(e) == 64));
}

/// Marks in captured[] the function arguments body (attn.fused's region
/// what) reads: every value it uses from above must be a tensor argument of
/// the function (static shape, rank >= 1, f32, f16, bf16, i32 or i64) read
/// by tensor.extract, which attn-tile turns into a load from the kernel's
/// argument. False after a diagnostic at the op that uses it.
static bool collect_captures(MlirBlock body, MlirBlock func_body,
                             const char *what, bool captured[MAX_ARGS]) {
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    char name[64];
    attn_op_name(op, name, sizeof name);
    if (mlirOperationGetNumRegions(op) > 0)
      return attn_emit_errorf(op, "'%s' in attn.fused's %s has regions; a "
                                  "modifier body is one block of arith and "
                                  "math ops",
                              name, what);
    bool extract = attn_op_is(op, "tensor.extract");
    for (intptr_t i = 0, n = mlirOperationGetNumOperands(op); i < n; ++i) {
      MlirValue v = mlirOperationGetOperand(op, i);
      bool outer = !defined_in(v, body);
      if (extract && i == 0 && !outer)
        return attn_emit_errorf(op, "tensor.extract in attn.fused's %s must "
                                    "read a tensor argument of the function",
                                what);
      if (!outer)
        continue;
      if (!extract || i != 0 || !mlirValueIsABlockArgument(v) ||
          !mlirBlockEqual(mlirBlockArgumentGetOwner(v), func_body))
        return attn_emit_errorf(op, "'%s' in attn.fused's %s uses a value "
                                    "from outside the body that is not a "
                                    "tensor argument of the function read "
                                    "by tensor.extract (attn-tile passes "
                                    "captured tensors as kernel arguments)",
                                name, what);
      MlirType t = mlirValueGetType(v);
      int64_t dims[8];
      char ty[128];
      if (!mlirTypeIsATensor(t) || attn_static_shape(t, dims) < 1 ||
          !capture_elem_ok(mlirShapedTypeGetElementType(t)))
        return attn_emit_errorf(op, "a tensor captured by attn.fused's %s "
                                    "must have a static shape of rank >= 1 "
                                    "and f32, f16, bf16, i32 or i64 "
                                    "elements, found %s",
                                what, attn_type_str(t, ty, sizeof ty));
      intptr_t arg = mlirBlockArgumentGetArgNumber(v);
      if (arg < MAX_ARGS)
        captured[arg] = true;
    }
  }
  return true;
}

/// Reads attn.fused_grad's grads into s (after the roles): the function
/// argument of each, the gate operand or the capture of its index, whose
/// shape its result must have. False after a diagnostic at fused.
static bool find_grads(MlirOperation fused, struct kernel_shape *s) {
  int n = attn_fused_grad_targets(fused, s->grad_target, ATTN_MAX_GRADS);
  if (n < 0 || n != mlirOperationGetNumResults(fused) - 3)
    return attn_emit_errorf(fused, "malformed attn.fused_grad grads");
  s->ngrads = n;
  for (int i = 0; i < n; ++i) {
    int want = s->grad_target[i], found = -1, ncap = 0;
    for (int a = 0; a < s->nargs && found < 0; ++a) {
      if (want == ATTN_GRAD_GATE
              ? s->arg_role[a] == ROLE_EXTRA0 + ATTN_EXTRA_GATE
              : s->arg_role[a] == ROLE_CAPTURE && ncap++ == want)
        found = a;
    }
    if (found < 0)
      return attn_emit_errorf(fused, want == ATTN_GRAD_GATE
                                         ? "grads names the gate, which "
                                           "attn.fused_grad does not have"
                                         : "grads names capture%d, which the "
                                           "bodies do not read",
                              want);
    MlirValue arg = mlirBlockGetArgument(s->func_body, found);
    if (want != ATTN_GRAD_GATE &&
        (mlirBlockIsNull(s->score_fn) ||
         !attn_body_is_capture(s->score_fn, arg) || !body_reads(s, arg)))
      return attn_emit_errorf(fused, "grads names capture%d, which the "
                                     "score_fn body does not read (a mask "
                                     "has no gradient)",
                              want);
    int64_t a[8], r[8];
    MlirType rt = mlirValueGetType(mlirOperationGetResult(fused, 3 + i));
    int rank = attn_static_shape(s->arg_type[found], a);
    bool same = rank == attn_static_shape(rt, r);
    for (int d = 0; same && d < rank; ++d)
      same = a[d] == r[d];
    if (!same)
      return attn_emit_errorf(fused, "grad result %d must have the shape of "
                                     "the tensor it is the gradient of",
                              i);
    s->grad_arg[i] = found;
    s->grad_type[i] = rt;
  }
  return true;
}

/// Checks fused's operands are distinct arguments of func, that func takes
/// nothing else but the tensors its bodies capture and returns exactly
/// fused's result; fills s->arg_role and s->arg_type.
static bool check_signature(MlirOperation func, MlirOperation fused,
                            struct kernel_shape *s) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  intptr_t nops = mlirOperationGetNumOperands(fused);
  intptr_t nargs = mlirBlockGetNumArguments(body);
  bool captured[MAX_ARGS] = {false};
  s->func_body = body;
  if (nargs > MAX_ARGS)
    return attn_emit_errorf(func, "attn-tile takes at most %d function "
                                  "arguments, found %ld",
                            MAX_ARGS, (long)nargs);
  if ((!mlirBlockIsNull(s->score_fn) &&
       !collect_captures(s->score_fn, body, "score_fn", captured)) ||
      (!mlirBlockIsNull(s->mask_fn) &&
       !collect_captures(s->mask_fn, body, "mask_fn", captured)))
    return false;
  for (intptr_t i = 0; i < nops; ++i) {
    MlirValue v = mlirOperationGetOperand(fused, i);
    if (mlirValueIsABlockArgument(v) &&
        mlirBlockEqual(mlirBlockArgumentGetOwner(v), body))
      captured[mlirBlockArgumentGetArgNumber(v)] = false;
  }
  intptr_t ncaptured = 0;
  for (intptr_t i = 0; i < nargs; ++i)
    ncaptured += captured[i];
  if (nargs != nops + ncaptured)
    return attn_emit_errorf(func, nops == 3 && !ncaptured
                                      ? "attn-tile expects the function to "
                                        "take exactly q, k and v"
                                  : ncaptured
                                      ? "attn-tile expects the function to "
                                        "take exactly the operands of "
                                        "attn.fused and the tensors its "
                                        "bodies capture"
                                      : "attn-tile expects the function to "
                                        "take exactly the operands of "
                                        "attn.fused");
  for (intptr_t i = 0; i < nargs; ++i) {
    s->arg_role[i] = ROLE_CAPTURE;
    s->arg_type[i] = mlirValueGetType(mlirBlockGetArgument(body, i));
  }
  int role_of_operand[ROLE_CAPTURE] = {ROLE_Q, ROLE_K, ROLE_V};
  for (int r = 0; r < ATTN_NUM_EXTRAS; ++r)
    if (s->cfg.extra[r] >= 0)
      role_of_operand[s->cfg.extra[r]] = ROLE_EXTRA0 + r;
  // attn.fused_grad's last three operands: out, lse and dout.
  if (s->grad) {
    if (nops < 6 || nops > ROLE_CAPTURE)
      return attn_emit_errorf(fused, "malformed attn.fused_grad operands");
    for (int i = 0; i < ATTN_FUSED_GRAD_TAIL; ++i)
      role_of_operand[nops - ATTN_FUSED_GRAD_TAIL + i] = ROLE_OUT + i;
  }
  s->nargs = (int)nargs;
  for (intptr_t i = 0; i < nops; ++i) {
    MlirValue v = mlirOperationGetOperand(fused, i);
    if (!mlirValueIsABlockArgument(v) ||
        !mlirBlockEqual(mlirBlockArgumentGetOwner(v), body))
      return attn_emit_errorf(fused, "operand %ld of attn.fused must be a "
                                     "function argument",
                              (long)i);
    for (intptr_t j = 0; j < i; ++j)
      if (mlirValueEqual(mlirOperationGetOperand(fused, j), v))
        return attn_emit_errorf(fused, nops == 3
                                           ? "q, k and v must be distinct "
                                             "arguments"
                                           : "the operands of attn.fused "
                                             "must be distinct arguments");
    int role = role_of_operand[i];
    s->arg_role[mlirBlockArgumentGetArgNumber(v)] = role;
    s->role_type[role] = mlirValueGetType(v);
  }
  MlirOperation ret = mlirBlockGetTerminator(body);
  intptr_t nres = mlirOperationGetNumResults(fused);
  bool returns = mlirOperationGetNumOperands(ret) == nres;
  for (intptr_t i = 0; returns && i < nres; ++i)
    returns = mlirValueEqual(mlirOperationGetOperand(ret, i),
                             mlirOperationGetResult(fused, i));
  if (!returns)
    return attn_emit_errorf(func, s->grad ? "the function must return the "
                                            "results of attn.fused_grad (dq, "
                                            "dk, dv and its grads) and "
                                            "nothing else"
                                  : nres == 2
                                      ? "the function must return the "
                                        "results of attn.fused (out, lse) "
                                        "and nothing else"
                                      : "the function must return the "
                                        "result of attn.fused and nothing "
                                        "else");
  if (s->grad) {
    for (int i = 0; i < 3; ++i)
      s->role_type[ROLE_DQ + i] =
          mlirValueGetType(mlirOperationGetResult(fused, i));
    if (!find_grads(fused, s))
      return false;
  } else {
    s->role_type[ROLE_OUT] =
        mlirValueGetType(mlirOperationGetResult(fused, 0));
    if (nres == 2)
      s->role_type[ROLE_LSE] =
          mlirValueGetType(mlirOperationGetResult(fused, 1));
  }
  return true;
}

/// Appends to the module's tile.programs the program `name` of the
/// backward: inputs (the function's arguments as the kernels name them,
/// then dq, dk, dv), steps dkdv (args ..., dk, dv) then dq (args ..., dq),
/// no workspace.
static void record_grad_program(MlirOperation func,
                                const struct kernel_shape *s, const char *name,
                                char kernels[2][300]) {
  struct attn_builder b;
  attn_builder_init(&b, mlirOperationGetContext(func),
                    mlirOperationGetLocation(func));
  const char *args[MAX_ARGS + 3 + ATTN_MAX_GRADS];
  char capture_names[MAX_ARGS][24], gnames[ATTN_MAX_GRADS][24];
  attn_tk_arg_names(s, args, capture_names);
  int n = s->nargs, g = s->ngrads;
  for (int i = 0; i < g; ++i)
    attn_tk_grad_name(s, i, gnames[i]);
  MlirAttribute steps[2];
  // Each step's outputs, then the gradient buffers (cleared by dkdv,
  // accumulated by dq).
  args[n] = "dk";
  args[n + 1] = "dv";
  for (int i = 0; i < g; ++i)
    args[n + 2 + i] = gnames[i];
  MlirNamedAttribute step0[2] = {
      attn_b_named(&b, "kernel", attn_b_attr_str(&b, kernels[0])),
      attn_b_named(&b, "args", attn_b_attr_strs(&b, n + 2 + g, args))};
  steps[0] = mlirDictionaryAttrGet(b.ctx, 2, step0);
  args[n] = "dq";
  for (int i = 0; i < g; ++i)
    args[n + 1 + i] = gnames[i];
  MlirNamedAttribute step1[2] = {
      attn_b_named(&b, "kernel", attn_b_attr_str(&b, kernels[1])),
      attn_b_named(&b, "args", attn_b_attr_strs(&b, n + 1 + g, args))};
  steps[1] = mlirDictionaryAttrGet(b.ctx, 2, step1);
  args[n + 1] = "dk";
  args[n + 2] = "dv";
  for (int i = 0; i < g; ++i)
    args[n + 3 + i] = gnames[i];
  MlirNamedAttribute prog[4] = {
      attn_b_named(&b, "name", attn_b_attr_str(&b, name)),
      attn_b_named(&b, "inputs", attn_b_attr_strs(&b, n + 3 + g, args)),
      attn_b_named(&b, "workspace", mlirArrayAttrGet(b.ctx, 0, NULL)),
      attn_b_named(&b, "steps", mlirArrayAttrGet(b.ctx, 2, steps))};
  attn_tile_programs_append(mlirOperationGetParentOperation(func),
                            mlirDictionaryAttrGet(b.ctx, 4, prog));
}

static bool tile_function(MlirOperation func,
                          const struct attn_tile_options *o) {
  bool bad = false;
  // Projections become GEMM kernels; func is then the attention alone.
  if (!attn_tile_program(func, o))
    return false;
  // Decode over a KV cache has a kernel of its own.
  int decode = attn_tile_decode(func);
  if (decode)
    return decode > 0;
  MlirOperation fused = find_fused(func, &bad);
  if (bad)
    return false;
  if (mlirOperationIsNull(fused))
    return attn_tile_matmul(func, o);
  struct kernel_shape s;
  memset(&s, 0, sizeof s);
  s.grad = attn_op_is(fused, ATTN_OP_FUSED_GRAD);
  if (!attn_fused_get_config(fused, &s.cfg))
    return attn_emit_errorf(fused, "malformed attn.fused attributes");
  s.score_fn = attn_fused_score_fn(fused);
  s.mask_fn = attn_fused_mask_fn(fused);
  if (!check_signature(func, fused, &s))
    return false;
  for (int i = 0; i < 3; ++i) {
    int64_t *dst = i == 0 ? s.q : i == 1 ? s.k : s.v;
    int64_t dims[8];
    attn_static_shape(mlirValueGetType(mlirOperationGetOperand(fused, i)),
                      dims);
    memcpy(dst, dims, 4 * sizeof *dst);
  }
  long d = (long)s.q[3], dv = (long)s.v[3];
  // The Hopper kernel's tiles: 128 query rows (two consumer warpgroups),
  // 128 keys (80 at head dim 256, FlashAttention-3's: S of 80 keys fits
  // beside O in the consumers' registers; 64 there with a score_mod body,
  // whose values per element spilled beside 80), 384 threads.
  // The mma.sync kernel's: 128 query rows (eight warps of 16), 64 keys.
  // The backward has no tensor-core kernel yet: its kernels keep the plain
  // path's tiles under kernel=hopper and kernel=mma too (the drivers send
  // them on to lower-tile-to-gpu, the forward to the tensor cores).
  bool hopper = o->hopper && !s.grad, mma = o->mma && !s.grad;
  s.bm = o->block_m ? o->block_m
         : hopper || mma ? 128
         : s.grad        ? pick_grad_block(d, dv)
                         : pick_block(d, dv);
  s.bn = o->block_n ? o->block_n
         : hopper ? (d != 256 || dv != 256       ? 128
                     : mlirBlockIsNull(s.score_fn) ? 80
                                                   : 64)
         : mma    ? 64
         : s.grad ? pick_grad_block(d, dv)
                  : pick_block(d, dv);
  s.threads = o->threads ? o->threads
              : hopper ? 384
              : mma    ? 2 * s.bm
                       : 128;
  MlirStringRef name;
  if (!attn_attr_str(func, "sym_name", &name))
    return attn_emit_errorf(func, "function has no name");
  char fname[256];
  snprintf(fname, sizeof fname, "%.*s", (int)name.length, name.data);
  if (s.grad) {
    // The dkdv kernel, then the dq kernel, and the program running both.
    char kname[2][300];
    for (int p = 0; p < 2; ++p) {
      s.part = p == 0 ? PART_DKDV : PART_DQ;
      snprintf(kname[p], sizeof kname[p], "%s__%s", fname,
               p == 0 ? "dkdv" : "dq");
      if (mlirOperationIsNull(build_kernel(func, fused, kname[p], &s)))
        return false;
    }
    record_grad_program(func, &s, fname, kname);
    mlirOperationDestroy(func);
    return true;
  }
  if (mlirOperationIsNull(build_kernel(func, fused, fname, &s)))
    return false;
  mlirOperationDestroy(func);
  return true;
}

static bool attn_tile_run(MlirOperation module, const void *opts) {
  const struct attn_tile_options *o = opts;
  struct attn_op_list funcs = {0};
  attn_op_list_collect(&funcs, module, "func.func");
  bool ok = !funcs.failed;
  for (size_t i = 0; ok && i < funcs.n; ++i)
    ok = tile_function(funcs.ops[i], o);
  free(funcs.ops);
  return ok;
}

const struct attn_pass_def attn_tile_pass = {
    .argument = "attn-tile",
    .alias = "tile",
    .description = "Turn each attn.fused op into a tile kernel (query "
                   "blocks, online softmax over key blocks) and each "
                   "linalg.matmul into a GEMM tile kernel",
    .options = tile_options_help,
    .options_size = sizeof(struct attn_tile_options),
    .init_options = tile_init,
    .set_option = tile_set,
    .run = attn_tile_run,
};
