//===- tile_program.c - attn-tile: projections and attention, one program -===//
//
// Part of the attn-tile pass (attn_tile.c calls attn_tile_program on every
// function first). A function whose q, k or v come from attn.project
// becomes several kernels and the launch program that runs them:
//
//   func.func @f(%x: tensor<BxNxC>, %wq: tensor<Cx(H*D)>, %wk, %v) {
//     %q = "attn.project"(%x, %wq) {rope = {...}}   // producer placement
//     %k = "attn.project"(%x, %wk) {rope = {...}}
//     %o = "attn.fused"(%q, %k, %v) {...} ; return %o
//   }
//   ==>
//   func.func @f__proj_q(%a: memref<(B*N)xC>, %b: memref<Cx(H*D)>,
//       %c: memref<(B*N)x(H*D)>) attributes {tile.kernel, tile.matmul = {
//       ..., project = {heads = H, seq = N, head_dim = D},
//       rope = {theta, head_dim, rotary_dim, seq_len = N, offset, layout}}}
//   func.func @f__proj_k(...)                       // likewise
//   func.func @f__attn(%q: memref<BxHxNxD>, %k, %v, %out)  // attn_tile.c
//   module attributes {tile.programs = [{name = "f", inputs = ["x", "w_q",
//       "w_k", "v", "out"], workspace = [{name = "q_proj", bytes = ..},
//       {name = "k_proj", ..}], steps = [{kernel = "f__proj_q", args = ["x",
//       "w_q", "q_proj"]}, ..., {kernel = "f__attn", args = ["q_proj",
//       "k_proj", "v", "out"]}]}]}
//
// A projection's GEMM is x viewed as (B*N) x C times w; "project" says its
// output element (r, c) is stored at [r / N, c / D, r % N, c % D], i.e. the
// heads layout attention reads, so no transpose runs between them. The
// function's inputs are named by use: "x" (or "x_q", ... when q, k and v
// project different inputs), "w_q", "w_k", "w_v", and the attention's own
// names (q, k, v, gate, ...) for tensors passed straight to it.
//
// Only lower-tile-to-hopper computes these GEMMs (with kernel=hopper); the
// CPU and plain GPU paths have no projection kernel and say so.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <string.h>

#define MAX_ARGS 16

static const char *const roles[3] = {"q", "k", "v"};

struct program {
  MlirOperation func, fused;
  MlirOperation proj[3];        // projection feeding q, k, v, or null
  intptr_t nargs;               // the function's arguments
  char arg_name[MAX_ARGS][24];  // program input names
  char operand[8][24];          // what the attention step reads per operand
  intptr_t noperands;
};

/// The block argument number of v in body, or -1.
static intptr_t arg_number(MlirValue v, MlirBlock body) {
  if (!mlirValueIsABlockArgument(v) ||
      !mlirBlockEqual(mlirBlockArgumentGetOwner(v), body))
    return -1;
  return mlirBlockArgumentGetArgNumber(v);
}

/// Finds the projections and the attention of func; false after a
/// diagnostic when the body is not projections, one attn.fused and return.
static bool collect(struct program *p, bool *any) {
  MlirBlock body =
      mlirRegionGetFirstBlock(mlirOperationGetRegion(p->func, 0));
  *any = false;
  if (mlirBlockIsNull(body))
    return true;
  MlirOperation first_proj = {NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (attn_op_is(op, ATTN_OP_PROJECT)) {
      if (mlirOperationIsNull(first_proj))
        first_proj = op;
    } else if (attn_op_is(op, ATTN_OP_FUSED) &&
               mlirOperationIsNull(p->fused)) {
      p->fused = op;
    } else if (!attn_op_is(op, "func.return")) {
      if (mlirOperationIsNull(first_proj))
        continue; // not a projection program: attn_tile.c reports it
      char n[64];
      return attn_emit_errorf(
          op,
          "cannot tile '%s' in a function with attn.project: such a "
          "function holds projections, one attention (attn.fused after "
          "attn-fuse) and the return of its result",
          attn_op_name(op, n, sizeof n));
    }
  }
  if (mlirOperationIsNull(first_proj))
    return true;
  *any = true;
  if (mlirOperationIsNull(p->fused))
    return attn_emit_errorf(first_proj,
                            "attn.project must feed q, k or v of an attention "
                            "(run attn-fuse first; found no attn.fused)");
  p->nargs = mlirBlockGetNumArguments(body);
  if (p->nargs > MAX_ARGS)
    return attn_emit_errorf(p->func, "too many arguments (at most %d)",
                            MAX_ARGS);
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (!attn_op_is(op, ATTN_OP_PROJECT))
      continue;
    MlirValue r = mlirOperationGetResult(op, 0);
    MlirOpOperand use = mlirValueGetFirstUse(r);
    int role = -1;
    if (!mlirOpOperandIsNull(use) &&
        mlirOpOperandIsNull(mlirOpOperandGetNextUse(use)) &&
        mlirOperationEqual(mlirOpOperandGetOwner(use), p->fused) &&
        mlirOpOperandGetOperandNumber(use) < 3)
      role = (int)mlirOpOperandGetOperandNumber(use);
    if (role < 0)
      return attn_emit_errorf(op, "the result of attn.project must be used "
                                  "once, as q, k or v of the attention");
    for (int i = 0; i < 2; ++i)
      if (arg_number(mlirOperationGetOperand(op, i), body) < 0)
        return attn_emit_errorf(op, "the operands of attn.project must be "
                                    "function arguments");
    p->proj[role] = op;
  }
  MlirOperation ret = mlirBlockGetTerminator(body);
  if (mlirOperationGetNumOperands(ret) != 1 ||
      !mlirValueEqual(mlirOperationGetOperand(ret, 0),
                      mlirOperationGetResult(p->fused, 0)))
    return attn_emit_errorf(p->func, "the function must return the result of "
                                     "attn.fused and nothing else");
  return true;
}

/// Names every argument by its use (see the file comment) and what the
/// attention step reads for each of its operands.
static bool name_args(struct program *p) {
  MlirBlock body =
      mlirRegionGetFirstBlock(mlirOperationGetRegion(p->func, 0));
  struct attn_fused_config cfg;
  if (!attn_fused_get_config(p->fused, &cfg))
    return attn_emit_errorf(p->fused, "malformed attn.fused attributes");
  for (intptr_t i = 0; i < p->nargs; ++i)
    p->arg_name[i][0] = 0;
  // One input x for all projections, or one per role.
  intptr_t x0 = -1;
  bool shared_x = true;
  for (int r = 0; r < 3; ++r)
    if (!mlirOperationIsNull(p->proj[r])) {
      intptr_t x = arg_number(mlirOperationGetOperand(p->proj[r], 0), body);
      shared_x &= x0 < 0 || x == x0;
      x0 = x0 < 0 ? x : x0;
    }
  p->noperands = mlirOperationGetNumOperands(p->fused);
  for (intptr_t i = 0; i < p->noperands; ++i) {
    const char *role = i < 3 ? roles[i] : "";
    for (int e = 0; e < ATTN_NUM_EXTRAS; ++e)
      if (cfg.extra[e] == i)
        role = attn_fused_extra_name((enum attn_fused_extra)e);
    char want[2][24];
    intptr_t at[2];
    int n = 0;
    if (i < 3 && !mlirOperationIsNull(p->proj[i])) {
      snprintf(p->operand[i], sizeof p->operand[i], "%s_proj", role);
      at[n] = arg_number(mlirOperationGetOperand(p->proj[i], 0), body);
      snprintf(want[n++], sizeof want[0], shared_x ? "x" : "x_%s", role);
      at[n] = arg_number(mlirOperationGetOperand(p->proj[i], 1), body);
      snprintf(want[n++], sizeof want[0], "w_%s", role);
    } else {
      at[n] = arg_number(mlirOperationGetOperand(p->fused, i), body);
      if (at[n] < 0)
        return attn_emit_errorf(p->fused, "operand %ld of attn.fused must be "
                                          "a function argument or an "
                                          "attn.project result",
                                (long)i);
      snprintf(want[n++], sizeof want[0], "%s", role);
      snprintf(p->operand[i], sizeof p->operand[i], "%s", role);
    }
    for (int j = 0; j < n; ++j) {
      char *have = p->arg_name[at[j]];
      if (have[0] && strcmp(have, want[j]))
        return attn_emit_errorf(p->func,
                                "argument %ld is used both as %s and as %s",
                                (long)at[j], have, want[j]);
      snprintf(have, sizeof p->arg_name[0], "%s", want[j]);
    }
  }
  for (intptr_t i = 0; i < p->nargs; ++i)
    if (!p->arg_name[i][0])
      return attn_emit_errorf(p->func, "argument %ld is not used", (long)i);
  return true;
}

/// Writes and inserts the GEMM kernel of projection role r.
static bool emit_projection(struct program *p, int r, const char *fname,
                            const struct attn_tile_options *o) {
  MlirOperation op = p->proj[r];
  int64_t x[8], w[8], out[8];
  attn_static_shape(mlirValueGetType(mlirOperationGetOperand(op, 0)), x);
  attn_static_shape(mlirValueGetType(mlirOperationGetOperand(op, 1)), w);
  attn_static_shape(mlirValueGetType(mlirOperationGetResult(op, 0)), out);
  struct attn_strbuf extra = {0}, text = {0};
  attn_strbuf_printf(&extra,
                     "project = {heads = %lld : i64, seq = %lld : i64, "
                     "head_dim = %lld : i64}",
                     (long long)out[1], (long long)out[2], (long long)out[3]);
  bool has;
  struct attn_rope_config rc;
  if (!attn_project_get_rope(op, &has, &rc))
    return attn_emit_errorf(op, "malformed rope entry");
  if (has)
    attn_strbuf_printf(
        &extra,
        ", rope = {theta = %.17e : f64, head_dim = %lld : i64, rotary_dim = "
        "%lld : i64, seq_len = %lld : i64, offset = %lld : i64, layout = "
        "\"%s\"}",
        rc.theta, (long long)out[3], (long long)rc.rotary_dim,
        (long long)out[2], (long long)rc.offset,
        attn_rope_layout_name(rc.layout));
  char name[300];
  snprintf(name, sizeof name, "%s__proj_%s", fname, roles[r]);
  attn_tile_emit_gemm(
      &text, name,
      mlirShapedTypeGetElementType(mlirValueGetType(mlirOperationGetResult(op, 0))),
      x[0] * x[1], w[1], x[2], o, extra.failed ? "" : extra.buf);
  bool ok = !extra.failed && !text.failed;
  attn_strbuf_free(&extra);
  MlirOperation k = ok ? attn_insert_parsed_before(p->func, text.buf,
                                                   mlirOperationGetLocation(op))
                       : (MlirOperation){NULL};
  attn_strbuf_free(&text);
  if (mlirOperationIsNull(k))
    return attn_emit_errorf(op, "attn-tile produced a kernel MLIR cannot "
                                "parse (a bug in attn)");
  return true;
}

/// Records the launch program on the module (appended to tile.programs).
static bool record_program(struct program *p, const char *fname) {
  MlirOperation module = mlirOperationGetParentOperation(p->func);
  struct attn_strbuf t = {0};
  attn_strbuf_printf(&t, "{name = \"%s\", inputs = [", fname);
  for (intptr_t i = 0; i < p->nargs; ++i)
    attn_strbuf_printf(&t, "\"%s\", ", p->arg_name[i]);
  attn_strbuf_printf(&t, "\"out\"], workspace = [");
  bool first = true;
  for (int r = 0; r < 3; ++r)
    if (!mlirOperationIsNull(p->proj[r])) {
      int64_t d[8];
      MlirType ty = mlirValueGetType(mlirOperationGetResult(p->proj[r], 0));
      attn_static_shape(ty, d);
      MlirType e = mlirShapedTypeGetElementType(ty);
      long long bytes = (long long)(d[0] * d[1] * d[2] * d[3]) *
                        (mlirTypeIsAF32(e) ? 4 : 2);
      attn_strbuf_printf(&t, "%s{name = \"%s_proj\", bytes = %lld : i64}",
                         first ? "" : ", ", roles[r], bytes);
      first = false;
    }
  attn_strbuf_printf(&t, "], steps = [");
  MlirBlock body =
      mlirRegionGetFirstBlock(mlirOperationGetRegion(p->func, 0));
  for (int r = 0; r < 3; ++r)
    if (!mlirOperationIsNull(p->proj[r]))
      attn_strbuf_printf(
          &t, "{kernel = \"%s__proj_%s\", args = [\"%s\", \"%s\", \"%s_proj\"]}, ",
          fname, roles[r],
          p->arg_name[arg_number(mlirOperationGetOperand(p->proj[r], 0), body)],
          p->arg_name[arg_number(mlirOperationGetOperand(p->proj[r], 1), body)],
          roles[r]);
  attn_strbuf_printf(&t, "{kernel = \"%s__attn\", args = [", fname);
  for (intptr_t i = 0; i < p->noperands; ++i)
    attn_strbuf_printf(&t, "\"%s\", ", p->operand[i]);
  attn_strbuf_printf(&t, "\"out\"]}]}");
  if (!attn_programs_append(module, ATTN_TILE_PROGRAMS_ATTR, &t))
    return attn_emit_errorf(p->func, "attn-tile: cannot record the launch "
                                     "program (a bug in attn)");
  return true;
}

/// Leaves func as @<f>__attn(operands of attn.fused) -> result: one new
/// argument per operand, the projections and the old arguments gone.
static void keep_attention(struct program *p, const char *fname) {
  MlirContext ctx = mlirOperationGetContext(p->func);
  MlirBlock body =
      mlirRegionGetFirstBlock(mlirOperationGetRegion(p->func, 0));
  MlirType in[8];
  for (intptr_t i = 0; i < p->noperands; ++i) {
    MlirValue v = mlirOperationGetOperand(p->fused, i);
    in[i] = mlirValueGetType(v);
    MlirValue a = mlirBlockAddArgument(body, in[i],
                                       mlirOperationGetLocation(p->fused));
    mlirOperationSetOperand(p->fused, i, a);
  }
  for (int r = 0; r < 3; ++r)
    if (!mlirOperationIsNull(p->proj[r]))
      mlirOperationDestroy(p->proj[r]);
  for (intptr_t i = p->nargs - 1; i >= 0; --i)
    mlirBlockEraseArgument(body, (unsigned)i);
  MlirType out = mlirValueGetType(mlirOperationGetResult(p->fused, 0));
  mlirOperationSetAttributeByName(
      p->func, mlirStringRefCreateFromCString("function_type"),
      mlirTypeAttrGet(mlirFunctionTypeGet(ctx, p->noperands, in, 1, &out)));
  char name[300];
  snprintf(name, sizeof name, "%s__attn", fname);
  mlirOperationSetAttributeByName(
      p->func, mlirStringRefCreateFromCString("sym_name"),
      mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(name)));
}

bool attn_tile_program(MlirOperation func, const struct attn_tile_options *o) {
  struct program p;
  memset(&p, 0, sizeof p);
  p.func = func;
  bool any;
  if (!collect(&p, &any))
    return false;
  if (!any)
    return true;
  MlirOperation first = {NULL};
  for (int r = 0; r < 3 && mlirOperationIsNull(first); ++r)
    first = p.proj[r];
  if (!o->hopper)
    return attn_emit_errorf(first,
                            "attn.project is computed only by the Hopper "
                            "kernels (attn-tile kernel=hopper, sm_90a): the "
                            "CPU and plain GPU paths have no projection "
                            "kernel");
  MlirStringRef sym;
  if (!attn_attr_str(func, "sym_name", &sym))
    return attn_emit_errorf(func, "function has no name");
  char fname[256];
  snprintf(fname, sizeof fname, "%.*s", (int)sym.length, sym.data);
  if (!name_args(&p))
    return false;
  for (int r = 0; r < 3; ++r)
    if (!mlirOperationIsNull(p.proj[r]) && !emit_projection(&p, r, fname, o))
      return false;
  if (!record_program(&p, fname))
    return false;
  keep_attention(&p, fname);
  return true;
}
