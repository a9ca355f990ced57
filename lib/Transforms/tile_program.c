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
// project different inputs), "w_q", "w_k", "w_v", the attention's own
// names (q, k, v, gate, ...) for tensors passed straight to it, and
// "capture0", "capture1", ... (in argument order) for the tensors its
// score_fn / mask_fn bodies capture, which the attention kernel takes after
// attn.fused's operands.
//
// Only lower-tile-to-hopper computes these GEMMs (with kernel=hopper); the
// CPU and plain GPU paths have no projection kernel and say so.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/body.h"
#include "lib/IR/attn_builder.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 16
/// Names in one list: a step's operands (8 at most), captures and out.
#define MAX_STRS (MAX_ARGS + 9)

static const char *const roles[3] = {"q", "k", "v"};

struct program {
  MlirOperation func, fused;
  MlirOperation proj[3];        // projection feeding q, k, v, or null
  intptr_t nargs;               // the function's arguments
  char arg_name[MAX_ARGS][24];  // program input names
  char operand[8][24];          // what the attention step reads per operand
  intptr_t noperands;
  intptr_t capture[MAX_ARGS];   // the arguments the bodies capture, in order
  intptr_t ncaptures;
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
  // The bodies' captures (arguments of the function, which the attn
  // verifier and attn-tile check), numbered in argument order.
  bool captured[MAX_ARGS] = {false};
  MlirBlock bodies[2] = {attn_fused_score_fn(p->fused),
                         attn_fused_mask_fn(p->fused)};
  for (int r = 0; r < 2; ++r) {
    MlirValue c[MAX_ARGS];
    int n = attn_body_captures(bodies[r], c, MAX_ARGS);
    for (int i = 0; i < n && i < MAX_ARGS; ++i) {
      intptr_t a = arg_number(c[i], body);
      if (a < 0)
        return attn_emit_errorf(p->fused, "a tensor the %s body captures "
                                          "must be a function argument",
                                r ? "mask_fn" : "score_fn");
      captured[a] = true;
    }
  }
  p->ncaptures = 0;
  for (intptr_t i = 0; i < p->nargs; ++i)
    if (captured[i]) {
      char want[24];
      snprintf(want, sizeof want, "capture%ld", (long)p->ncaptures);
      if (p->arg_name[i][0])
        return attn_emit_errorf(p->func,
                                "argument %ld is used both as %s and as %s",
                                (long)i, p->arg_name[i], want);
      snprintf(p->arg_name[i], sizeof p->arg_name[0], "%s", want);
      p->capture[p->ncaptures++] = i;
    }
  for (intptr_t i = 0; i < p->nargs; ++i)
    if (!p->arg_name[i][0])
      return attn_emit_errorf(p->func, "argument %ld is not used", (long)i);
  return true;
}

/// Builds the GEMM kernel of projection role r just before the function.
static bool build_projection(struct program *p, int r, const char *fname,
                             const struct attn_tile_options *o) {
  MlirOperation op = p->proj[r];
  int64_t x[8], w[8], out[8];
  attn_static_shape(mlirValueGetType(mlirOperationGetOperand(op, 0)), x);
  attn_static_shape(mlirValueGetType(mlirOperationGetOperand(op, 1)), w);
  attn_static_shape(mlirValueGetType(mlirOperationGetResult(op, 0)), out);
  bool has;
  struct attn_rope_config rc;
  if (!attn_project_get_rope(op, &has, &rc))
    return attn_emit_errorf(op, "malformed rope entry");
  struct attn_builder b;
  attn_builder_init(&b, mlirOperationGetContext(op),
                    mlirOperationGetLocation(op));
  attn_builder_before(&b, p->func);
  MlirNamedAttribute proj[] = {
      attn_b_named(&b, "heads", attn_b_attr_i64(&b, out[1])),
      attn_b_named(&b, "seq", attn_b_attr_i64(&b, out[2])),
      attn_b_named(&b, "head_dim", attn_b_attr_i64(&b, out[3])),
  };
  MlirNamedAttribute rope[] = {
      attn_b_named(&b, "theta", attn_b_attr_f64(&b, rc.theta)),
      attn_b_named(&b, "head_dim", attn_b_attr_i64(&b, out[3])),
      attn_b_named(&b, "rotary_dim", attn_b_attr_i64(&b, rc.rotary_dim)),
      attn_b_named(&b, "seq_len", attn_b_attr_i64(&b, out[2])),
      attn_b_named(&b, "offset", attn_b_attr_i64(&b, rc.offset)),
      attn_b_named(&b, "layout",
                   attn_b_attr_str(&b, attn_rope_layout_name(rc.layout))),
  };
  MlirNamedAttribute extra[] = {
      attn_b_named(&b, "project",
                   mlirDictionaryAttrGet(b.ctx, sizeof proj / sizeof *proj,
                                         proj)),
      attn_b_named(&b, "rope",
                   mlirDictionaryAttrGet(b.ctx, sizeof rope / sizeof *rope,
                                         rope)),
  };
  char name[300];
  snprintf(name, sizeof name, "%s__proj_%s", fname, roles[r]);
  MlirOperation k = attn_tile_build_gemm_kernel(
      &b, name,
      mlirShapedTypeGetElementType(
          mlirValueGetType(mlirOperationGetResult(op, 0))),
      x[0] * x[1], w[1], x[2], o, has ? 2 : 1, extra);
  if (attn_builder_finish(&b))
    return true;
  if (!mlirOperationIsNull(k))
    mlirOperationDestroy(k);
  return false;
}

/// s as a string attribute.
static MlirAttribute str_attr(MlirContext ctx, const char *s) {
  return mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(s));
}

/// {key[i] = val[i], ...} of n entries.
static MlirAttribute dict(MlirContext ctx, intptr_t n, const char *const *key,
                          const MlirAttribute *val) {
  MlirNamedAttribute e[4];
  for (intptr_t i = 0; i < n && i < 4; ++i)
    e[i] = mlirNamedAttributeGet(
        mlirIdentifierGet(ctx, mlirStringRefCreateFromCString(key[i])), val[i]);
  return mlirDictionaryAttrGet(ctx, n < 4 ? n : 4, e);
}

/// [s[0], ..., s[n - 1]] of strings.
static MlirAttribute str_array(MlirContext ctx, intptr_t n,
                               const char *const *s) {
  MlirAttribute e[MAX_STRS];
  for (intptr_t i = 0; i < n && i < MAX_STRS; ++i)
    e[i] = str_attr(ctx, s[i]);
  return mlirArrayAttrGet(ctx, n < MAX_STRS ? n : MAX_STRS, e);
}

/// Records the launch program on the module (appended to tile.programs).
static void record_program(struct program *p, const char *fname) {
  MlirOperation module = mlirOperationGetParentOperation(p->func);
  MlirContext ctx = mlirOperationGetContext(module);
  MlirBlock body =
      mlirRegionGetFirstBlock(mlirOperationGetRegion(p->func, 0));
  const char *s[MAX_STRS];
  for (intptr_t i = 0; i < p->nargs; ++i)
    s[i] = p->arg_name[i];
  s[p->nargs] = "out";
  MlirAttribute inputs = str_array(ctx, p->nargs + 1, s);
  MlirAttribute work[3], steps[4];
  char ws_name[3][16], kernel[3][300];
  int nwork = 0, nsteps = 0;
  static const char *const ws_keys[2] = {"name", "bytes"};
  static const char *const step_keys[2] = {"kernel", "args"};
  for (int r = 0; r < 3; ++r)
    if (!mlirOperationIsNull(p->proj[r])) {
      int64_t d[8];
      MlirType ty = mlirValueGetType(mlirOperationGetResult(p->proj[r], 0));
      attn_static_shape(ty, d);
      MlirType e = mlirShapedTypeGetElementType(ty);
      int64_t bytes = d[0] * d[1] * d[2] * d[3] * (mlirTypeIsAF32(e) ? 4 : 2);
      snprintf(ws_name[r], sizeof ws_name[r], "%s_proj", roles[r]);
      MlirAttribute v[2] = {str_attr(ctx, ws_name[r]),
                            mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64),
                                               bytes)};
      work[nwork++] = dict(ctx, 2, ws_keys, v);
    }
  for (int r = 0; r < 3; ++r)
    if (!mlirOperationIsNull(p->proj[r])) {
      snprintf(kernel[r], sizeof kernel[r], "%s__proj_%s", fname, roles[r]);
      const char *args[3] = {
          p->arg_name[arg_number(mlirOperationGetOperand(p->proj[r], 0), body)],
          p->arg_name[arg_number(mlirOperationGetOperand(p->proj[r], 1), body)],
          ws_name[r]};
      MlirAttribute v[2] = {str_attr(ctx, kernel[r]), str_array(ctx, 3, args)};
      steps[nsteps++] = dict(ctx, 2, step_keys, v);
    }
  char attn[300];
  snprintf(attn, sizeof attn, "%s__attn", fname);
  intptr_t ns = 0;
  for (intptr_t i = 0; i < p->noperands; ++i)
    s[ns++] = p->operand[i];
  for (intptr_t i = 0; i < p->ncaptures; ++i)
    s[ns++] = p->arg_name[p->capture[i]];
  s[ns++] = "out";
  MlirAttribute v[2] = {str_attr(ctx, attn), str_array(ctx, ns, s)};
  steps[nsteps++] = dict(ctx, 2, step_keys, v);
  static const char *const keys[4] = {"name", "inputs", "workspace", "steps"};
  MlirAttribute prog[4] = {str_attr(ctx, fname), inputs,
                           mlirArrayAttrGet(ctx, nwork, work),
                           mlirArrayAttrGet(ctx, nsteps, steps)};
  attn_tile_programs_append(module, dict(ctx, 4, keys, prog));
}

void attn_tile_programs_append(MlirOperation module, MlirAttribute program) {
  MlirStringRef attr = mlirStringRefCreateFromCString(ATTN_TILE_PROGRAMS_ATTR);
  MlirAttribute old = mlirOperationGetAttributeByName(module, attr);
  intptr_t n = !mlirAttributeIsNull(old) && mlirAttributeIsAArray(old)
                   ? mlirArrayAttrGetNumElements(old)
                   : 0;
  MlirAttribute *all = malloc(sizeof *all * (size_t)(n + 1));
  if (!all)
    return;
  for (intptr_t i = 0; i < n; ++i)
    all[i] = mlirArrayAttrGetElement(old, i);
  all[n] = program;
  mlirOperationSetAttributeByName(
      module, attr,
      mlirArrayAttrGet(mlirOperationGetContext(module), n + 1, all));
  free(all);
}

/// Leaves func as @<f>__attn(operands of attn.fused, captures) -> result:
/// one new argument per operand and per capture of the bodies (in argument
/// order), the projections and the old arguments gone.
static void keep_attention(struct program *p, const char *fname) {
  MlirContext ctx = mlirOperationGetContext(p->func);
  MlirBlock body =
      mlirRegionGetFirstBlock(mlirOperationGetRegion(p->func, 0));
  MlirType in[8 + MAX_ARGS];
  for (intptr_t i = 0; i < p->noperands; ++i) {
    MlirValue v = mlirOperationGetOperand(p->fused, i);
    in[i] = mlirValueGetType(v);
    MlirValue a = mlirBlockAddArgument(body, in[i],
                                       mlirOperationGetLocation(p->fused));
    mlirOperationSetOperand(p->fused, i, a);
  }
  for (intptr_t i = 0; i < p->ncaptures; ++i) {
    MlirValue old = mlirBlockGetArgument(body, p->capture[i]);
    in[p->noperands + i] = mlirValueGetType(old);
    MlirValue a = mlirBlockAddArgument(body, in[p->noperands + i],
                                       mlirOperationGetLocation(p->fused));
    mlirValueReplaceAllUsesOfWith(old, a);
  }
  for (int r = 0; r < 3; ++r)
    if (!mlirOperationIsNull(p->proj[r]))
      mlirOperationDestroy(p->proj[r]);
  for (intptr_t i = p->nargs - 1; i >= 0; --i)
    mlirBlockEraseArgument(body, (unsigned)i);
  MlirType out = mlirValueGetType(mlirOperationGetResult(p->fused, 0));
  mlirOperationSetAttributeByName(
      p->func, mlirStringRefCreateFromCString("function_type"),
      mlirTypeAttrGet(mlirFunctionTypeGet(ctx, p->noperands + p->ncaptures,
                                          in, 1, &out)));
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
    if (!mlirOperationIsNull(p.proj[r]) && !build_projection(&p, r, fname, o))
      return false;
  record_program(&p, fname);
  keep_attention(&p, fname);
  return true;
}
