//===- run_job.c - One attention: inputs, CPU execution, reference check --===//
//
// Shared by attn-run and attn-fuzz: reads what each attn.fused op (or
// linalg.matmul) computes into a job, draws random inputs for every
// parameter (q, k, v; gate log-biases; segment ids with a few documents per
// sequence; RoPE positions; the tensors score_fn / mask_fn bodies capture;
// a GEMM's a, b and its init c), runs the kernel and compares its output
// with the float64 reference, which evaluates the bodies in float64
// (lib/IR/attn_body_eval.h) on a copy of the function.
//
//===----------------------------------------------------------------------===//
#include "tools/attn-run/attn_run.h"

#include "dialects/attn/attn_dialect.h"
#include "dialects/body.h"
#include "dialects/dialects.h"
#include "lib/IR/attn_body_eval.h"
#include "lib/Reference/comm_reference.h"
#include "lib/Target/attn_jit.h"
#include "lib/Transforms/transforms.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *tool = "attn-run";

const char *attn_run_role_name(int role) {
  static const char *const names[ATTN_RUN_ROLES] = {
      "q",          "k",          "v",          "gate",       "q_segments",
      "k_segments", "q_positions", "k_positions", "a",         "b",
      "c",          "out",        "capture0",   "capture1",   "capture2",
      "capture3",   "capture4",   "capture5",   "capture6",   "capture7",
      "capture8",   "capture9",   "capture10",  "capture11",  "capture12",
      "capture13",  "capture14",  "capture15"};
  _Static_assert(ATTN_RUN_MAX_CAPTURES == 16, "name every capture role");
  return role >= 0 && role < ATTN_RUN_ROLES ? names[role] : "?";
}

static enum attn_ref_mod ref_mod(enum attn_score_mod m) {
  switch (m) {
  case ATTN_MOD_SOFTCAP:
    return ATTN_REF_SOFTCAP;
  case ATTN_MOD_ALIBI:
    return ATTN_REF_ALIBI;
  case ATTN_MOD_GATE:
    return ATTN_REF_GATE;
  case ATTN_MOD_FN:
    return ATTN_REF_FN;
  default:
    return ATTN_REF_SCALE;
  }
}

/// The element kind of a captured tensor's type.
static enum attn_run_elem capture_elem(MlirType t) {
  MlirType e = mlirShapedTypeGetElementType(t);
  return mlirTypeIsAF32(e)    ? ATTN_RUN_F32
         : mlirTypeIsAF64(e)  ? ATTN_RUN_F64
         : mlirTypeIsAF16(e)  ? ATTN_RUN_F16
         : mlirTypeIsABF16(e) ? ATTN_RUN_BF16
         : mlirIntegerTypeGetWidth(e) == 64 ? ATTN_RUN_I64
                                            : ATTN_RUN_I32;
}

/// Marks the function arguments (of entry block body) body captures in
/// captured[]; false after a diagnostic when one is not an argument.
static bool mark_captures(MlirOperation fused, MlirBlock body, MlirBlock fb,
                          bool captured[ATTN_RUN_ROLES]) {
  MlirValue c[ATTN_RUN_MAX_CAPTURES + 1];
  int n = attn_body_captures(body, c, ATTN_RUN_MAX_CAPTURES + 1);
  if (n > ATTN_RUN_MAX_CAPTURES)
    return attn_emit_errorf(fused, "attn-run handles at most %d captured "
                                   "tensors",
                            ATTN_RUN_MAX_CAPTURES);
  for (int i = 0; i < n; ++i) {
    if (!mlirValueIsABlockArgument(c[i]) ||
        !mlirBlockEqual(mlirBlockArgumentGetOwner(c[i]), fb))
      return attn_emit_errorf(fused, "a tensor a body captures must be a "
                                     "function argument");
    intptr_t a = mlirBlockArgumentGetArgNumber(c[i]);
    if (a < ATTN_RUN_ROLES)
      captured[a] = true;
  }
  return true;
}

/// Points jb at body (of the copy of the function, whose entry block is fb)
/// and its captures at the roles of the arguments they are (role_of_arg).
static void read_body(MlirBlock body, MlirBlock fb, const int *role_of_arg,
                      struct job_body *jb) {
  MlirValue c[ATTN_RUN_MAX_CAPTURES];
  jb->block = body;
  jb->ncaptures = 0;
  if (mlirBlockIsNull(body))
    return;
  int n = attn_body_captures(body, c, ATTN_RUN_MAX_CAPTURES);
  for (int i = 0; i < n && i < ATTN_RUN_MAX_CAPTURES; ++i)
    if (mlirValueIsABlockArgument(c[i]) &&
        mlirBlockEqual(mlirBlockArgumentGetOwner(c[i]), fb))
      jb->role[jb->ncaptures++] =
          role_of_arg[mlirBlockArgumentGetArgNumber(c[i])];
}

/// Copies func (whose attn.fused has bodies) into j->func_copy and reads
/// the copy's bodies.
static bool copy_bodies(MlirOperation func, struct job *j) {
  j->func_copy = mlirOperationClone(func);
  MlirBlock fb =
      mlirRegionGetFirstBlock(mlirOperationGetRegion(j->func_copy, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(fb);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (attn_op_is(op, ATTN_OP_FUSED)) {
      read_body(attn_fused_score_fn(op), fb, j->role_of_arg, &j->score_fn);
      read_body(attn_fused_mask_fn(op), fb, j->role_of_arg, &j->mask_fn);
      return true;
    }
  mlirOperationDestroy(j->func_copy);
  j->func_copy = (MlirOperation){NULL};
  return attn_emit_errorf(func, "internal: the copy of the function has no "
                                "attn.fused");
}

/// Reads func's {attn.grad} arguments (attn-grad's opt-in, which the
/// forward keeps) into j's grads: each a gate's or a capture's.
static void read_grads(MlirOperation func, struct job *j) {
  MlirAttribute all = attn_attr_get(func, "arg_attrs");
  if (mlirAttributeIsNull(all) || !mlirAttributeIsAArray(all))
    return;
  for (intptr_t i = 0; i < j->nargs && i < mlirArrayAttrGetNumElements(all);
       ++i) {
    MlirAttribute d = mlirArrayAttrGetElement(all, i);
    if (!mlirAttributeIsADictionary(d) ||
        mlirAttributeIsNull(mlirDictionaryAttrGetElementByName(
            d, mlirStringRefCreateFromCString(ATTN_ARG_GRAD_ATTR))) ||
        j->ngrads == ATTN_RUN_MAX_GRADS)
      continue;
    int r = j->role_of_arg[i];
    if (r != ATTN_RUN_GATE && r < ATTN_RUN_CAPTURE0)
      continue; // attn-grad refuses it
    j->grad_role[j->ngrads] = r;
    if (r == ATTN_RUN_GATE)
      snprintf(j->grad_name[j->ngrads], 24, "dgate");
    else
      snprintf(j->grad_name[j->ngrads], 24, "dcapture%d",
               r - ATTN_RUN_CAPTURE0);
    ++j->ngrads;
  }
}

/// Reads the problem of the attn.fused op in func into j.
static bool describe(MlirOperation func, MlirOperation fused, struct job *j) {
  struct attn_fused_config c;
  MlirStringRef sym;
  int64_t q[8], k[8], v[8];
  memset(j, 0, sizeof *j);
  if (!attn_fused_get_config(fused, &c) ||
      !attn_attr_str(func, "sym_name", &sym))
    return false;
  snprintf(j->name, sizeof j->name, "%.*s", (int)sym.length, sym.data);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  intptr_t nops = mlirOperationGetNumOperands(fused);
  intptr_t nargs = mlirBlockGetNumArguments(body);
  bool captured[ATTN_RUN_ROLES] = {false};
  MlirBlock score_fn = attn_fused_score_fn(fused),
            mask_fn = attn_fused_mask_fn(fused);
  if (nargs > ATTN_RUN_ROLES)
    return attn_emit_errorf(func, "attn-run handles at most %d arguments",
                            ATTN_RUN_ROLES);
  if (!mark_captures(fused, score_fn, body, captured) ||
      !mark_captures(fused, mask_fn, body, captured))
    return false;
  // A tensor that is also an operand (q_segments read by a body) keeps its
  // operand's role; the body reads that buffer.
  for (intptr_t i = 0; i < nops; ++i) {
    MlirValue a = mlirOperationGetOperand(fused, i);
    if (mlirValueIsABlockArgument(a) &&
        mlirBlockEqual(mlirBlockArgumentGetOwner(a), body))
      captured[mlirBlockArgumentGetArgNumber(a)] = false;
  }
  for (intptr_t i = 0; i < nargs; ++i) {
    MlirType t = mlirValueGetType(mlirBlockGetArgument(body, i));
    int64_t d[8];
    int rank = attn_static_shape(t, d);
    if (!captured[i] || rank < 1)
      continue;
    if (j->ncaptures == ATTN_RUN_MAX_CAPTURES)
      return attn_emit_errorf(fused, "attn-run handles at most %d captured "
                                     "tensors",
                              ATTN_RUN_MAX_CAPTURES);
    struct job_capture *jc = &j->captures[j->ncaptures];
    jc->elem = capture_elem(t);
    jc->count = 1;
    for (int r = 0; r < rank; ++r)
      jc->count *= (size_t)d[r];
    j->role_of_arg[i] = ATTN_RUN_CAPTURE0 + j->ncaptures;
    j->has[ATTN_RUN_CAPTURE0 + j->ncaptures] = true;
    ++j->ncaptures;
  }
  if (nargs != nops + j->ncaptures)
    return attn_emit_errorf(func, "attn-run expects functions taking exactly "
                                  "the operands of attn.fused and the "
                                  "tensors its bodies capture");
  int role_of_operand[ATTN_RUN_OUT] = {ATTN_RUN_Q, ATTN_RUN_K, ATTN_RUN_V};
  for (int r = 0; r < ATTN_NUM_EXTRAS; ++r)
    if (c.extra[r] >= 0)
      role_of_operand[c.extra[r]] = ATTN_RUN_GATE + r;
  j->nargs = (int)nargs;
  for (intptr_t i = 0; i < nops; ++i) {
    MlirValue a = mlirOperationGetOperand(fused, i);
    if (!mlirValueIsABlockArgument(a))
      return attn_emit_errorf(fused, "operands must be function arguments");
    j->role_of_arg[mlirBlockArgumentGetArgNumber(a)] = role_of_operand[i];
    j->has[role_of_operand[i]] = true;
  }
  j->has[ATTN_RUN_OUT] = true;
  j->out = ATTN_RUN_OUT;
  j->lse = c.lse;
  read_grads(func, j);
  attn_static_shape(mlirValueGetType(mlirOperationGetOperand(fused, 0)), q);
  attn_static_shape(mlirValueGetType(mlirOperationGetOperand(fused, 1)), k);
  attn_static_shape(mlirValueGetType(mlirOperationGetOperand(fused, 2)), v);
  MlirType e = mlirShapedTypeGetElementType(
      mlirValueGetType(mlirOperationGetOperand(fused, 0)));
  j->elem_bits = mlirTypeIsAF64(e) ? 64 : mlirTypeIsAF32(e) ? 32 : 16;
  j->elem_bf16 = mlirTypeIsABF16(e);
  struct attn_ref_problem *p = &j->p;
  *p = (struct attn_ref_problem){.batch = q[0],
                                 .heads = q[1],
                                 .kv_heads = k[1],
                                 .seq_q = q[2],
                                 .seq_k = k[2],
                                 .head_dim = q[3],
                                 .value_dim = v[3],
                                 .scale = c.scale,
                                 .causal = c.causal,
                                 .rope = c.has_rope,
                                 .theta = c.rope.theta,
                                 .rotary_dim = c.rope.rotary_dim,
                                 .interleaved =
                                     c.rope.layout == ATTN_ROPE_INTERLEAVED,
                                 .softcap = c.softcap,
                                 .alibi_max_bias = c.alibi_max_bias,
                                 .gate_block = c.gate_block,
                                 .window = c.has_window,
                                 .window_left = c.window_left,
                                 .window_right = c.window_right,
                                 .q_offset = c.q_offset,
                                 .k_offset = c.k_offset};
  p->nmods = c.nmods;
  for (int i = 0; i < c.nmods; ++i)
    p->mods[i] = ref_mod(c.mods[i]);
  if (!mlirBlockIsNull(score_fn) || !mlirBlockIsNull(mask_fn))
    return copy_bodies(func, j);
  return true;
}

/// Reads the GEMM of func (attn_matmul_find accepted it) into j: the kernel
/// takes a, b and c, and reads c first when the matmul accumulates.
static bool describe_matmul(MlirOperation func,
                            const struct attn_matmul_info *mm, struct job *j) {
  MlirStringRef sym;
  memset(j, 0, sizeof *j);
  if (!attn_attr_str(func, "sym_name", &sym))
    return false;
  snprintf(j->name, sizeof j->name, "%.*s", (int)sym.length, sym.data);
  j->matmul = true;
  j->m = mm->m;
  j->n = mm->n;
  j->k = mm->k;
  j->nargs = 2;
  j->role_of_arg[0] = ATTN_RUN_A;
  j->role_of_arg[1] = ATTN_RUN_B;
  j->has[ATTN_RUN_A] = j->has[ATTN_RUN_B] = j->has[ATTN_RUN_C] = true;
  j->out = ATTN_RUN_C;
  j->out_is_read = mm->accumulate;
  j->elem_bits = mlirTypeIsAF32(mm->elem) ? 32 : 16;
  j->elem_bf16 = mlirTypeIsABF16(mm->elem);
  return true;
}

/// Reads the job of func into jobs[*n], if it has one; false after a
/// diagnostic.
static bool collect_function(MlirOperation f, struct job *jobs, int max,
                             int *n) {
  MlirBlock fb = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
  for (MlirOperation op = mlirBlockIsNull(fb) ? (MlirOperation){NULL}
                                              : mlirBlockGetFirstOperation(fb);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (attn_op_is(op, ATTN_OP_FUSED) || attn_op_is(op, ATTN_OP_FUSED_DECODE)) {
      if (*n == max)
        return attn_emit_errorf(op, "attn-run handles at most %d kernels", max);
      if (attn_op_is(op, ATTN_OP_FUSED) ? !describe(f, op, &jobs[*n])
                                        : !attn_run_describe_decode(
                                              f, op, &jobs[*n]))
        return false;
      ++*n;
      return true;
    }
  struct attn_matmul_info mm;
  int found = attn_matmul_find(f, &mm, true);
  if (found <= 0)
    return found == 0;
  if (*n == max)
    return attn_emit_errorf(mm.matmul, "attn-run handles at most %d kernels",
                            max);
  if (!describe_matmul(f, &mm, &jobs[*n]))
    return false;
  ++*n;
  return true;
}

void attn_run_jobs_release(struct job *jobs, int n) {
  for (int i = 0; i < n; ++i)
    if (!mlirOperationIsNull(jobs[i].func_copy)) {
      mlirOperationDestroy(jobs[i].func_copy);
      jobs[i].func_copy = (MlirOperation){NULL};
    }
}

bool attn_run_collect_jobs(MlirOperation module, struct job *jobs, int max,
                           int *n) {
  *n = 0;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation f = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(f); f = mlirOperationGetNextInBlock(f))
    if (attn_op_is(f, "func.func") && !collect_function(f, jobs, max, n))
      return false;
  if (*n == 0)
    return attn_emit_errorf(module, "nothing to run: the program has no "
                                    "attn.fused op after attn-fuse, no "
                                    "attn.fused_decode and no linalg.matmul");
  return true;
}

//===-- Inputs ------------------------------------------------------------===//

/// Fills a tensor with N(0,1) samples rounded to the element type: the
/// device buffer gets the rounded bits, ref gets the same values in float64
/// (f64 programs: the samples themselves).
static void fill(struct attn_rng *rng, const struct job *j, void *buf,
                 double *ref, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    double x64 = attn_rng_normal(rng);
    float x = (float)x64;
    if (j->elem_bits == 64) {
      ((double *)buf)[i] = x64;
      ref[i] = x64;
    } else if (j->elem_bits == 32) {
      ((float *)buf)[i] = x;
      ref[i] = x;
    } else {
      uint16_t h = j->elem_bf16 ? attn_f32_to_bf16(x) : attn_f32_to_f16(x);
      ((uint16_t *)buf)[i] = h;
      ref[i] = j->elem_bf16 ? attn_bf16_to_f32(h) : attn_f16_to_f32(h);
    }
  }
}

/// Gate log-biases: N(0,1) in f32 (in f64 for f64 programs, wide).
static void fill_gate(struct attn_rng *rng, void *buf, double *ref, size_t n,
                      bool wide) {
  for (size_t i = 0; i < n; ++i) {
    double x = attn_rng_normal(rng);
    if (wide)
      ref[i] = ((double *)buf)[i] = x;
    else
      ref[i] = ((float *)buf)[i] = (float)x;
  }
}

/// Segment ids of `rows` rows: ndocs documents as sorted runs 0, 1, ...
static void fill_segments(struct attn_rng *rng, int32_t *ids, int64_t rows,
                          int ndocs) {
  int64_t cuts[8];
  for (int d = 0; d + 1 < ndocs; ++d)
    cuts[d] = (int64_t)attn_rng_below(rng, (uint64_t)rows + 1);
  for (int64_t r = 0; r < rows; ++r) {
    int32_t id = 0;
    for (int d = 0; d + 1 < ndocs; ++d)
      id += r >= cuts[d];
    ids[r] = id;
  }
}

/// RoPE positions of `rows` rows: increasing with small gaps from a random
/// start, or uniformly random.
static void fill_positions(struct attn_rng *rng, int32_t *pos, int64_t rows) {
  bool sorted = attn_rng_below(rng, 2);
  int64_t p = (int64_t)attn_rng_below(rng, 128);
  for (int64_t r = 0; r < rows; ++r) {
    pos[r] = sorted ? (int32_t)p : (int32_t)attn_rng_below(rng, 2 * rows + 64);
    p += 1 + (int64_t)attn_rng_below(rng, 3);
  }
}

static double to_double(const struct job *j, const void *buf, size_t i) {
  if (j->elem_bits == 64)
    return ((const double *)buf)[i];
  if (j->elem_bits == 32)
    return ((const float *)buf)[i];
  uint16_t h = ((const uint16_t *)buf)[i];
  return j->elem_bf16 ? attn_bf16_to_f32(h) : attn_f16_to_f32(h);
}

/// Element counts of every role of j.
static void role_sizes(const struct job *j, size_t n[ATTN_RUN_ROLES]) {
  const struct attn_ref_problem *p = &j->p;
  size_t b = (size_t)p->batch, h = (size_t)p->heads, hk = (size_t)p->kv_heads;
  size_t sq = (size_t)p->seq_q, sk = (size_t)p->seq_k;
  size_t nb = p->gate_block > 0
                  ? (sk + (size_t)p->gate_block - 1) / (size_t)p->gate_block
                  : 0;
  size_t m = (size_t)j->m, n_ = (size_t)j->n, k = (size_t)j->k;
  size_t all[ATTN_RUN_ROLES] = {b * h * sq * (size_t)p->head_dim,
                                b * hk * sk * (size_t)p->head_dim,
                                b * hk * sk * (size_t)p->value_dim,
                                b * h * sq * nb,
                                b * sq,
                                b * sk,
                                b * sq,
                                b * sk,
                                m * k,
                                k * n_,
                                m * n_,
                                b * h * sq * (size_t)p->value_dim};
  for (int r = 0; r < ATTN_RUN_CAPTURE0; ++r)
    n[r] = j->has[r] ? all[r] : 0;
  for (int c = 0; c < ATTN_RUN_MAX_CAPTURES; ++c)
    n[ATTN_RUN_CAPTURE0 + c] = c < j->ncaptures ? j->captures[c].count : 0;
}

/// Bytes of one element of role r.
static size_t role_elem_bytes(const struct job *j, int r) {
  if (r <= ATTN_RUN_V || r == ATTN_RUN_OUT)
    return (size_t)j->elem_bits / 8;
  if (r == ATTN_RUN_GATE) // the compute type's
    return j->elem_bits == 64 ? 8 : 4;
  if (r < ATTN_RUN_CAPTURE0)
    return 4;
  switch (j->captures[r - ATTN_RUN_CAPTURE0].elem) {
  case ATTN_RUN_F16:
  case ATTN_RUN_BF16:
    return 2;
  case ATTN_RUN_I64:
  case ATTN_RUN_F64:
    return 8;
  default:
    return 4;
  }
}

/// A captured tensor: floats uniform in [-1, 1] rounded to the element
/// type, integers uniform in [0, ids); ref gets the same values in float64.
static void fill_capture(struct attn_rng *rng, const struct job_capture *c,
                         void *buf, double *ref, int64_t ids) {
  for (size_t i = 0; i < c->count; ++i) {
    double x64 = 2.0 * attn_rng_uniform(rng) - 1.0;
    float x = (float)x64;
    int64_t id = (int64_t)attn_rng_below(rng, (uint64_t)ids);
    switch (c->elem) {
    case ATTN_RUN_F64:
      ((double *)buf)[i] = x64;
      ref[i] = x64;
      break;
    case ATTN_RUN_F32:
      ((float *)buf)[i] = x;
      ref[i] = x;
      break;
    case ATTN_RUN_F16: {
      uint16_t h = attn_f32_to_f16(x);
      ((uint16_t *)buf)[i] = h;
      ref[i] = attn_f16_to_f32(h);
      break;
    }
    case ATTN_RUN_BF16: {
      uint16_t h = attn_f32_to_bf16(x);
      ((uint16_t *)buf)[i] = h;
      ref[i] = attn_bf16_to_f32(h);
      break;
    }
    case ATTN_RUN_I32:
      ((int32_t *)buf)[i] = (int32_t)id;
      ref[i] = (double)id;
      break;
    case ATTN_RUN_I64:
      ((int64_t *)buf)[i] = id;
      ref[i] = (double)id;
      break;
    }
  }
}

/// The evaluator of body jb over the float64 data of the roles it reads
/// (data[role]), or NULL (none, or an error printed).
static struct attn_body_eval *body_eval(const struct job *j,
                                        const struct job_body *jb,
                                        double *const data_of[ATTN_RUN_ROLES],
                                        bool *ok) {
  if (mlirBlockIsNull(jb->block))
    return NULL;
  const double *data[ATTN_RUN_MAX_CAPTURES];
  for (int i = 0; i < jb->ncaptures; ++i)
    data[i] = data_of[jb->role[i]];
  char err[256];
  struct attn_body_eval *e =
      attn_body_eval_create(jb->block, jb->ncaptures, data, err, sizeof err);
  if (!e) {
    fprintf(stderr, "%s: error: cannot evaluate a body of '%s': %s\n", tool,
            j->name, err);
    *ok = false;
  }
  return e;
}

/// Draws the inputs of every present role into bufs (device layout) and refs
/// (float64 copies of q, k, v and gate); ids and positions are shared.
static void draw_inputs(struct attn_rng *rng, const struct job *j,
                        void *const bufs[ATTN_RUN_ROLES], double *const refs[4],
                        const size_t n[ATTN_RUN_ROLES]) {
  for (int r = ATTN_RUN_Q; r <= ATTN_RUN_V; ++r)
    fill(rng, j, bufs[r], refs[r], n[r]);
  if (j->has[ATTN_RUN_GATE])
    fill_gate(rng, bufs[ATTN_RUN_GATE], refs[3], n[ATTN_RUN_GATE],
              j->elem_bits == 64);
  const struct attn_ref_problem *p = &j->p;
  for (int64_t b = 0; b < p->batch; ++b) {
    if (j->has[ATTN_RUN_Q_SEGMENTS]) {
      int ndocs = 1 + (int)attn_rng_below(rng, 4);
      int32_t *ks = (int32_t *)bufs[ATTN_RUN_K_SEGMENTS] + b * p->seq_k;
      int32_t *qs = (int32_t *)bufs[ATTN_RUN_Q_SEGMENTS] + b * p->seq_q;
      fill_segments(rng, ks, p->seq_k, ndocs);
      if (p->seq_q == p->seq_k)
        memcpy(qs, ks, sizeof *qs * (size_t)p->seq_q);
      else
        fill_segments(rng, qs, p->seq_q, ndocs);
    }
    if (j->has[ATTN_RUN_Q_POSITIONS])
      fill_positions(rng, (int32_t *)bufs[ATTN_RUN_Q_POSITIONS] + b * p->seq_q,
                     p->seq_q);
    if (j->has[ATTN_RUN_K_POSITIONS])
      fill_positions(rng, (int32_t *)bufs[ATTN_RUN_K_POSITIONS] + b * p->seq_k,
                     p->seq_k);
  }
}

static void print_features(FILE *out, const struct job *j);

/// The start of a job's result line: its name (and suffix), the problem's
/// shape, causal, rope and the other blocks it uses.
static void print_problem(FILE *out, const struct job *j, const char *suffix) {
  const struct attn_ref_problem *p = &j->p;
  fprintf(out,
          "%s%s: b=%lld h=%lld hk=%lld n=%lld m=%lld d=%lld dv=%lld causal=%d "
          "rope=%d",
          j->name, suffix, (long long)p->batch, (long long)p->heads,
          (long long)p->kv_heads, (long long)p->seq_q, (long long)p->seq_k,
          (long long)p->head_dim, (long long)p->value_dim, p->causal, p->rope);
  print_features(out, j);
}

/// Appends the blocks a job uses beyond causal and rope to the result line.
static void print_features(FILE *out, const struct job *j) {
  const struct attn_ref_problem *p = &j->p;
  static const char *const mod_names[5] = {"scale", "softcap", "alibi", "gate",
                                           "fn"};
  if (p->window)
    fprintf(out, " window=%lld,%lld", (long long)p->window_left,
            (long long)p->window_right);
  if (j->has[ATTN_RUN_Q_SEGMENTS])
    fprintf(out, " document=1");
  if (j->has[ATTN_RUN_Q_POSITIONS] || j->has[ATTN_RUN_K_POSITIONS])
    fprintf(out, " positions=1");
  if (p->nmods > 1) {
    fprintf(out, " mods=");
    for (int i = 0; i < p->nmods; ++i)
      fprintf(out, "%s%s", i ? "," : "", mod_names[p->mods[i]]);
  }
  if (!mlirBlockIsNull(j->mask_fn.block))
    fprintf(out, " mask_fn=1");
  if (j->ncaptures)
    fprintf(out, " captures=%d", j->ncaptures);
}

/// The default tolerances of the relative error: f64 programs compute in
/// float64 as the reference does, and their errors measured 1e-16 to 1e-14
/// (forward and backward, test/tools/attn-run/f64.test's programs), so
/// 1e-10 leaves four orders of margin and still fails any f32 rounding.
static double default_tolerance(const struct job *j, double tolerance) {
  return tolerance > 0        ? tolerance
         : j->elem_bits == 64 ? 1e-10
         : j->elem_bits == 32 ? 1e-4
         : j->elem_bf16       ? 2e-2
                              : 5e-3;
}

static const char *elem_label(const struct job *j) {
  return j->elem_bits == 64   ? "f64"
         : j->elem_bits == 32 ? "f32"
         : j->elem_bf16       ? "bf16"
                              : "f16";
}

/// Runs job j on x and compares output buffer `role` (count values, read
/// into got) with want: *err is the relative error; false (with the
/// executor's message printed) when the kernel did not run.
static bool execute_and_compare(struct attn_executor *x, const struct job *j,
                                void *const bufs[ATTN_RUN_ROLES],
                                const size_t bytes[ATTN_RUN_ROLES], int role,
                                size_t count, const double *want, double *got,
                                double *err, double *ms) {
  if (!x->execute(x, j, bufs, bytes, ms))
    return false;
  for (size_t i = 0; i < count; ++i)
    got[i] = to_double(j, bufs[role], i);
  *err = attn_rel_error(got, want, count);
  return true;
}

/// Ends a job's line: element type, error, tolerance, verdict and time.
/// Returns 0 on PASS, 1 on FAIL (NaN fails).
static int print_verdict(FILE *out, const struct job *j, double err,
                         double tolerance, double ms) {
  double tol = default_tolerance(j, tolerance);
  bool pass = err <= tol;
  fprintf(out, " %s rel_error=%.3e tolerance=%.1e %s", elem_label(j), err, tol,
          pass ? "PASS" : "FAIL");
  if (ms >= 0)
    fprintf(out, " median_ms=%.4f", ms);
  fprintf(out, "\n");
  return pass ? 0 : 1;
}

/// A GEMM job: a, b (and c when it accumulates) drawn from N(0,1) in the
/// element type; the reference c + a * b in float64 from the same values.
static int run_matmul_job(struct attn_executor *x, const struct job *j,
                          double tolerance, struct attn_rng *rng, FILE *out) {
  size_t n[ATTN_RUN_ROLES], bytes[ATTN_RUN_ROLES];
  void *bufs[ATTN_RUN_ROLES] = {NULL};
  double *ra = NULL, *rb = NULL, *want = NULL, *got = NULL;
  size_t es = (size_t)j->elem_bits / 8;
  int rc = -1;
  double ms = -1;
  char err[128];
  role_sizes(j, n);
  bool ok = true;
  for (int r = ATTN_RUN_A; r <= ATTN_RUN_C; ++r) {
    bytes[r] = n[r] * es;
    ok &= (bufs[r] = malloc(bytes[r])) != NULL;
  }
  size_t nc = n[ATTN_RUN_C];
  ok &= (ra = malloc(8 * n[ATTN_RUN_A])) != NULL &&
        (rb = malloc(8 * n[ATTN_RUN_B])) != NULL &&
        (want = malloc(8 * nc)) != NULL && (got = malloc(8 * nc)) != NULL;
  if (!ok) {
    fprintf(stderr, "%s: error: out of memory for '%s'\n", tool, j->name);
    goto out;
  }
  fill(rng, j, bufs[ATTN_RUN_A], ra, n[ATTN_RUN_A]);
  fill(rng, j, bufs[ATTN_RUN_B], rb, n[ATTN_RUN_B]);
  if (j->out_is_read)
    fill(rng, j, bufs[ATTN_RUN_C], want, nc); // want starts as the init
  else
    memset(bufs[ATTN_RUN_C], 0xff, bytes[ATTN_RUN_C]); // NaN poison
  if (!attn_reference_matmul(j->m, j->n, j->k, ra, rb,
                             j->out_is_read ? want : NULL, want, err,
                             sizeof err)) {
    fprintf(stderr, "%s: error: malformed problem for '%s': %s\n", tool,
            j->name, err);
    goto out;
  }
  double e;
  if (!execute_and_compare(x, j, bufs, bytes, ATTN_RUN_C, nc, want, got, &e,
                           &ms))
    goto out;
  fprintf(out, "%s: matmul m=%lld n=%lld k=%lld accumulate=%d", j->name,
          (long long)j->m, (long long)j->n, (long long)j->k, j->out_is_read);
  rc = print_verdict(out, j, e, tolerance, ms);
out:
  for (int r = 0; r < ATTN_RUN_ROLES; ++r)
    free(bufs[r]);
  free(ra);
  free(rb);
  free(want);
  free(got);
  return rc;
}

/// What the float64 reference reads beside the tensors: float64 copies of
/// the i32 inputs and the bodies' evaluators over them.
struct ref_bodies {
  double *ids[ATTN_RUN_ROLES];
  struct attn_body_fns fns;
};

/// Points p at the job's inputs (the gate's float64 copy, the segments and
/// positions as drawn) and, unless p brings hooks of its own (attn-fuzz's
/// reference bodies, written independently), its score and mask bodies at
/// their float64 evaluation over refs, caps and rb's copies. False when a
/// body cannot be evaluated (body_eval has said why).
static bool bind_reference(const struct job *j, void *const bufs[],
                           double *const refs[4], double *const caps[],
                           const size_t n[], struct ref_bodies *rb,
                           struct attn_ref_problem *p) {
  if (!p->score_fn && !p->mask_fn) {
    double *data_of[ATTN_RUN_ROLES] = {NULL}; // what the bodies read, by role
    for (int r = 0; r < 3; ++r)
      data_of[r] = refs[r];
    data_of[ATTN_RUN_GATE] = refs[3];
    for (int r = ATTN_RUN_Q_SEGMENTS; r <= ATTN_RUN_K_POSITIONS; ++r)
      if (j->has[r] && (rb->ids[r] = malloc(8 * (n[r] ? n[r] : 1))) != NULL) {
        for (size_t i = 0; i < n[r]; ++i)
          rb->ids[r][i] = ((const int32_t *)bufs[r])[i];
        data_of[r] = rb->ids[r];
      }
    for (int c = 0; c < j->ncaptures; ++c)
      data_of[ATTN_RUN_CAPTURE0 + c] = caps[c];
    bool ok = true;
    rb->fns.score = body_eval(j, &j->score_fn, data_of, &ok);
    rb->fns.mask = body_eval(j, &j->mask_fn, data_of, &ok);
    if (!ok)
      return false;
    if (rb->fns.score)
      p->score_fn = attn_body_fns_score;
    if (rb->fns.mask)
      p->mask_fn = attn_body_fns_mask;
    if (rb->fns.score || rb->fns.mask)
      p->fn_ctx = &rb->fns;
  }
  p->gate = refs[3];
  p->q_segments = bufs[ATTN_RUN_Q_SEGMENTS];
  p->k_segments = bufs[ATTN_RUN_K_SEGMENTS];
  p->q_positions = bufs[ATTN_RUN_Q_POSITIONS];
  p->k_positions = bufs[ATTN_RUN_K_POSITIONS];
  return true;
}

/// Frees what bind_reference made.
static void free_reference(struct ref_bodies *rb) {
  for (int r = 0; r < ATTN_RUN_ROLES; ++r)
    free(rb->ids[r]);
  attn_body_eval_destroy(rb->fns.score);
  attn_body_eval_destroy(rb->fns.mask);
}

static int run_lse_job(struct attn_executor *x, const struct job *j,
                       double tolerance, struct attn_rng *rng, FILE *out,
                       bool backward);

int attn_run_job(struct attn_executor *x, const struct job *j, double tolerance,
                 struct attn_rng *rng, FILE *out) {
  if (j->matmul)
    return run_matmul_job(x, j, tolerance, rng, out);
  if (j->decode)
    return attn_run_decode_job(x, j, tolerance, rng, out);
  if (j->lse) // a forward that writes lse too: both are checked
    return run_lse_job(x, j, tolerance, rng, out, false);
  struct attn_ref_problem p = j->p;
  size_t n[ATTN_RUN_ROLES], bytes[ATTN_RUN_ROLES];
  void *bufs[ATTN_RUN_ROLES] = {NULL};
  double *refs[4] = {NULL}, *want = NULL, *got = NULL;
  double *caps[ATTN_RUN_MAX_CAPTURES] = {NULL};
  struct ref_bodies rb = {{NULL}, {NULL, NULL}};
  int rc = -1;
  double ms = -1;
  role_sizes(j, n);
  bool ok = true;
  for (int r = 0; r < ATTN_RUN_ROLES; ++r) {
    bytes[r] = n[r] * role_elem_bytes(j, r);
    if (j->has[r])
      ok &= (bufs[r] = malloc(bytes[r] ? bytes[r] : 1)) != NULL;
    if (r < 3 || (r == ATTN_RUN_GATE && j->has[r]))
      ok &= (refs[r < 3 ? r : 3] = malloc(8 * (n[r] ? n[r] : 1))) != NULL;
  }
  for (int c = 0; c < j->ncaptures; ++c)
    ok &= (caps[c] = malloc(8 * j->captures[c].count)) != NULL;
  size_t no = n[ATTN_RUN_OUT];
  ok &= (want = malloc(no * 8)) != NULL && (got = malloc(no * 8)) != NULL;
  if (!ok) {
    fprintf(stderr, "%s: error: out of memory for '%s'\n", tool, j->name);
    goto out;
  }
  draw_inputs(rng, j, bufs, refs, n);
  for (int c = 0; c < j->ncaptures; ++c)
    fill_capture(rng, &j->captures[c], bufs[ATTN_RUN_CAPTURE0 + c], caps[c],
                 x->capture_ids > 0 ? x->capture_ids : 4);
  if (!bind_reference(j, bufs, refs, caps, n, &rb, &p))
    goto out;
  memset(bufs[ATTN_RUN_OUT], 0xff, bytes[ATTN_RUN_OUT]); // NaN poison
  if (!attn_reference(&p, refs[0], refs[1], refs[2], want)) {
    fprintf(stderr, "%s: error: malformed problem for '%s'\n", tool, j->name);
    goto out;
  }
  double err;
  if (!execute_and_compare(x, j, bufs, bytes, ATTN_RUN_OUT, no, want, got,
                           &err, &ms))
    goto out;
  print_problem(out, j, "");
  rc = print_verdict(out, j, err, tolerance, ms);
out:
  for (int r = 0; r < ATTN_RUN_ROLES; ++r)
    free(bufs[r]);
  for (int r = 0; r < 4; ++r)
    free(refs[r]);
  for (int c = 0; c < ATTN_RUN_MAX_CAPTURES; ++c)
    free(caps[c]);
  free_reference(&rb);
  free(want);
  free(got);
  return rc;
}

//===-- The backward (attn-run --grad) ------------------------------------===//

/// The relative error of lse (count values of f32, or of f64 when wide)
/// against want, over the rows where both are finite; +inf when a row is
/// +inf in one and not the other (a row that sees no key must say so).
static double lse_error(const void *lse, bool wide, const double *want,
                        size_t count, double *scratch_got,
                        double *scratch_want) {
  size_t n = 0;
  for (size_t i = 0; i < count; ++i) {
    double got = wide ? ((const double *)lse)[i] : ((const float *)lse)[i];
    bool gi = isinf(got) && got > 0, wi = isinf(want[i]) && want[i] > 0;
    if (gi != wi || isnan(got))
      return INFINITY;
    if (gi)
      continue;
    scratch_got[n] = got;
    scratch_want[n++] = want[i];
  }
  return attn_rel_error(scratch_got, scratch_want, n);
}

/// True when p's chain has a score_fn body, whose derivative
/// attn_reference_grad takes by a central difference of step 1e-6 |s|:
/// its rounding (about 1e-16 / 1e-6 relative) bounds how close an f64
/// backward can be checked (measured up to 9e-11, test/tools/attn-run/
/// f64.test), so f64 backwards with one are held to 1e-8, which f32
/// rounding (1e-7 and more) still fails.
static bool has_fn_body(const struct attn_ref_problem *p) {
  for (int i = 0; i < p->nmods; ++i)
    if (p->mods[i] == ATTN_REF_FN)
      return true;
  return false;
}

/// The buffers of one backward job, by what they are.
enum { G_OUT, G_LSE, G_DOUT, G_DQ, G_DK, G_DV, G_NUM };

int attn_run_grad_job(struct attn_executor *x, const struct job *j,
                      double tolerance, struct attn_rng *rng, FILE *out) {
  if (j->matmul)
    return attn_run_job(x, j, tolerance, rng, out);
  if (j->decode) {
    fprintf(stderr, "%s: error: '%s' is a decode (attn.fused_decode), which "
                    "has no backward\n",
            tool, j->name);
    return -1;
  }
  return run_lse_job(x, j, tolerance, rng, out, true);
}

/// The forward with lse (out and lse checked against float64), then with
/// backward the backward on a fresh dO (dq, dk and dv checked too): one
/// line each job.
static int run_lse_job(struct attn_executor *x, const struct job *j,
                       double tolerance, struct attn_rng *rng, FILE *out,
                       bool backward) {
  static const char *const gname[G_NUM] = {"out", "lse", "dout",
                                           "dq",  "dk",  "dv"};
  struct attn_ref_problem p = j->p;
  size_t n[ATTN_RUN_ROLES], bytes[ATTN_RUN_ROLES];
  void *bufs[ATTN_RUN_ROLES] = {NULL};
  double *refs[4] = {NULL};
  double *caps[ATTN_RUN_MAX_CAPTURES] = {NULL};
  struct ref_bodies rb = {{NULL}, {NULL, NULL}};
  void *g[G_NUM] = {NULL};
  size_t gn[G_NUM], gbytes[G_NUM];
  double *want[G_NUM] = {NULL}, *got = NULL, *scratch = NULL, *dout = NULL;
  double *want_out = NULL; // out in float64 (want[G_OUT] is unused)
  // The gradients into captured tensors ({attn.grad}): the kernels' (of
  // the compute type) and the reference's.
  void *cg[ATTN_RUN_MAX_GRADS] = {NULL};
  double *cwant[ATTN_RUN_MAX_GRADS] = {NULL};
  size_t cn[ATTN_RUN_MAX_GRADS], cbytes[ATTN_RUN_MAX_GRADS];
  int rc = -1;
  role_sizes(j, n);
  size_t es = (size_t)j->elem_bits / 8;
  gn[G_OUT] = gn[G_DOUT] = n[ATTN_RUN_OUT];
  gn[G_LSE] = (size_t)(p.batch * p.heads * p.seq_q);
  gn[G_DQ] = n[ATTN_RUN_Q];
  gn[G_DK] = n[ATTN_RUN_K];
  gn[G_DV] = n[ATTN_RUN_V];
  size_t most = 0;
  bool ok = true;
  for (int i = 0; i < G_NUM; ++i) {
    // lse is of the compute type: f64 for f64 programs, else f32.
    gbytes[i] = gn[i] * (i == G_LSE ? (es == 8 ? 8 : 4) : es);
    ok &= (g[i] = malloc(gbytes[i] ? gbytes[i] : 1)) != NULL;
    if (i != G_OUT)
      ok &= (want[i] = malloc(8 * (gn[i] ? gn[i] : 1))) != NULL;
    most = gn[i] > most ? gn[i] : most;
  }
  for (int r = 0; r < ATTN_RUN_ROLES; ++r) {
    bytes[r] = n[r] * role_elem_bytes(j, r);
    if (j->has[r] && r != ATTN_RUN_OUT)
      ok &= (bufs[r] = malloc(bytes[r] ? bytes[r] : 1)) != NULL;
    if (r < 3 || (r == ATTN_RUN_GATE && j->has[r]))
      ok &= (refs[r < 3 ? r : 3] = malloc(8 * (n[r] ? n[r] : 1))) != NULL;
  }
  for (int c = 0; c < j->ncaptures; ++c)
    ok &= (caps[c] = malloc(8 * j->captures[c].count)) != NULL;
  for (int i = 0; i < j->ngrads; ++i) {
    int r = j->grad_role[i];
    cn[i] = r == ATTN_RUN_GATE ? n[r]
                               : j->captures[r - ATTN_RUN_CAPTURE0].count;
    cbytes[i] = cn[i] * (es == 8 ? 8 : 4);
    most = cn[i] > most ? cn[i] : most;
    ok &= (cg[i] = malloc(cbytes[i] ? cbytes[i] : 1)) != NULL &&
          (cwant[i] = malloc(8 * (cn[i] ? cn[i] : 1))) != NULL;
  }
  ok &= (got = malloc(8 * (most ? most : 1))) != NULL &&
        (scratch = malloc(8 * (most ? most : 1))) != NULL &&
        (want_out = malloc(8 * (gn[G_OUT] ? gn[G_OUT] : 1))) != NULL;
  if (!ok) {
    fprintf(stderr, "%s: error: out of memory for '%s'\n", tool, j->name);
    goto out;
  }
  bufs[ATTN_RUN_OUT] = g[G_OUT];
  draw_inputs(rng, j, bufs, refs, n);
  for (int c = 0; c < j->ncaptures; ++c)
    fill_capture(rng, &j->captures[c], bufs[ATTN_RUN_CAPTURE0 + c], caps[c],
                 x->capture_ids > 0 ? x->capture_ids : 4);
  dout = want[G_DOUT];
  fill(rng, j, g[G_DOUT], dout, gn[G_DOUT]);
  if (!bind_reference(j, bufs, refs, caps, n, &rb, &p))
    goto out;
  double *want_dgate = NULL;
  for (int i = 0; i < j->ngrads; ++i)
    if (j->grad_role[i] == ATTN_RUN_GATE)
      want_dgate = cwant[i];
  if (!attn_reference_grad(&p, refs[0], refs[1], refs[2], dout, want[G_DQ],
                           want[G_DK], want[G_DV], want_dgate, want[G_LSE]) ||
      !attn_reference(&p, refs[0], refs[1], refs[2], want_out)) {
    fprintf(stderr, "%s: error: malformed problem for '%s'\n", tool, j->name);
    goto out;
  }
  for (int i = 0; backward && i < j->ngrads; ++i) {
    int c = j->grad_role[i] - ATTN_RUN_CAPTURE0;
    // The reference's bodies read caps[c]: the difference changes it.
    if (c >= 0 && !attn_reference_capture_grad(&p, refs[0], refs[1], refs[2],
                                               dout, caps[c], cn[i],
                                               cwant[i])) {
      fprintf(stderr, "%s: error: malformed problem for '%s'\n", tool,
              j->name);
      goto out;
    }
  }
  // The calls' arguments: the function's, then out and lse (forward); out,
  // lse, dout, then dk and dv, dq, or all three (the program).
  struct attn_run_arg args[ATTN_RUN_ROLES + G_NUM + ATTN_RUN_MAX_GRADS];
  int na = 0;
  for (int a = 0; a < j->nargs; ++a) {
    int r = j->role_of_arg[a];
    args[na++] = (struct attn_run_arg){attn_run_role_name(r), bufs[r],
                                       bytes[r], false, false};
  }
  for (int i = 0; i < G_NUM; ++i)
    memset(g[i], 0xff, i == G_DOUT ? 0 : gbytes[i]); // NaN poison
  args[na] = (struct attn_run_arg){gname[G_OUT], g[G_OUT], gbytes[G_OUT], true, false};
  args[na + 1] =
      (struct attn_run_arg){gname[G_LSE], g[G_LSE], gbytes[G_LSE], true, false};
  if (!x->call(x, j->name, na + 2, args))
    goto out;
  double err[G_NUM] = {0};
  err[G_LSE] =
      lse_error(g[G_LSE], es == 8, want[G_LSE], gn[G_LSE], got, scratch);
  for (size_t e = 0; e < gn[G_OUT]; ++e)
    got[e] = to_double(j, g[G_OUT], e);
  err[G_OUT] = attn_rel_error(got, want_out, gn[G_OUT]);
  double tol = default_tolerance(j, tolerance);
  // lse: 1e-4 for f32 (measured 5e-8), 1e-3 for f16 and bf16, whose
  // tensor-core forwards may sum the row from P rounded to 16 bits
  // (row-sum=mma: measured 1.05e-4 at head dim 256 on the H200), 1e-10
  // for f64.
  double lse_tol = tolerance > 0 ? tolerance
                   : es == 8    ? 1e-10
                   : es == 2    ? 1e-3
                                : 1e-4;
  if (!backward) {
    bool pass = err[G_LSE] <= lse_tol && err[G_OUT] <= tol;
    print_problem(out, j, "");
    fprintf(out, " %s lse=%.3e rel_error=%.3e tolerance=%.1e %s\n",
            elem_label(j), err[G_LSE], err[G_OUT], tol, pass ? "PASS" : "FAIL");
    rc = pass ? 0 : 1;
    goto out;
  }
  for (int i = G_OUT; i <= G_DOUT; ++i)
    args[na + i] = (struct attn_run_arg){gname[i], g[i], gbytes[i], false, false};
  char prog[300], kernel[320];
  snprintf(prog, sizeof prog, "%s__grad", j->name);
  // The gradient buffers follow each call's outputs; the backward zeroes
  // them itself (poisoned here), and both kernels take them.
  int ng = j->ngrads;
  for (int i = 0; i < ng; ++i)
    memset(cg[i], 0xff, cbytes[i]);
  if (x->has(x, prog)) {
    for (int i = G_DQ; i <= G_DV; ++i)
      args[na + i] = (struct attn_run_arg){gname[i], g[i], gbytes[i], true, false};
    for (int i = 0; i < ng; ++i)
      args[na + G_NUM + i] =
          (struct attn_run_arg){j->grad_name[i], cg[i], cbytes[i], true, false};
    if (!x->call(x, prog, na + G_NUM + ng, args))
      goto out;
  } else {
    args[na + 3] = (struct attn_run_arg){gname[G_DK], g[G_DK], gbytes[G_DK],
                                         true, false};
    args[na + 4] = (struct attn_run_arg){gname[G_DV], g[G_DV], gbytes[G_DV],
                                         true, false};
    for (int i = 0; i < ng; ++i)
      args[na + 5 + i] =
          (struct attn_run_arg){j->grad_name[i], cg[i], cbytes[i], true, false};
    snprintf(kernel, sizeof kernel, "%s__dkdv", prog);
    if (!x->call(x, kernel, na + 5 + ng, args))
      goto out;
    args[na + 3] = (struct attn_run_arg){gname[G_DQ], g[G_DQ], gbytes[G_DQ],
                                         true, false};
    // dq's gradient buffers hold what dkdv cleared: read, then written.
    for (int i = 0; i < ng; ++i)
      args[na + 4 + i] =
          (struct attn_run_arg){j->grad_name[i], cg[i], cbytes[i], false, false};
    snprintf(kernel, sizeof kernel, "%s__dq", prog);
    if (!x->call(x, kernel, na + 4 + ng, args))
      goto out;
  }
  for (int i = G_DQ; i <= G_DV; ++i) {
    for (size_t e = 0; e < gn[i]; ++e)
      got[e] = to_double(j, g[i], e);
    err[i] = attn_rel_error(got, want[i], gn[i]);
  }
  if (tolerance <= 0 && es == 8 && has_fn_body(&p))
    tol = 1e-8; // the reference's derivative of a body is a difference
  // A table's reference is a difference of the whole loss
  // (attn_reference_capture_grad: its rounding holds f64 tables to 1e-7);
  // dgate's is exact.
  double ctol = tol, cerr[ATTN_RUN_MAX_GRADS];
  for (int i = 0; i < ng; ++i) {
    bool wide = es == 8;
    for (size_t e = 0; e < cn[i]; ++e)
      got[e] = wide ? ((const double *)cg[i])[e] : ((const float *)cg[i])[e];
    cerr[i] = attn_rel_error(got, cwant[i], cn[i]);
    if (j->grad_role[i] != ATTN_RUN_GATE && tolerance <= 0 && wide)
      ctol = 1e-7;
  }
  double worst = err[G_OUT];
  for (int i = G_DQ; i <= G_DV; ++i)
    worst = err[i] > worst || isnan(err[i]) ? err[i] : worst;
  bool pass = err[G_LSE] <= lse_tol && worst <= tol;
  for (int i = 0; i < ng; ++i) {
    pass &= cerr[i] <= ctol;
    worst = cerr[i] > worst || isnan(cerr[i]) ? cerr[i] : worst;
  }
  print_problem(out, j, "__grad");
  fprintf(out, " %s lse=%.3e dq=%.3e dk=%.3e dv=%.3e", elem_label(j),
          err[G_LSE], err[G_DQ], err[G_DK], err[G_DV]);
  for (int i = 0; i < ng; ++i)
    fprintf(out, " %s=%.3e", j->grad_name[i], cerr[i]);
  if (ng && ctol != tol)
    fprintf(out, " (tolerance %.1e)", ctol);
  fprintf(out, " out=%.3e rel_error=%.3e tolerance=%.1e %s\n", err[G_OUT],
          worst, tol, pass ? "PASS" : "FAIL");
  rc = pass ? 0 : 1;
out:
  for (int r = 0; r < ATTN_RUN_ROLES; ++r)
    if (r != ATTN_RUN_OUT)
      free(bufs[r]);
  for (int r = 0; r < 4; ++r)
    free(refs[r]);
  for (int c = 0; c < ATTN_RUN_MAX_CAPTURES; ++c)
    free(caps[c]);
  free_reference(&rb);
  for (int i = 0; i < G_NUM; ++i) {
    free(g[i]);
    free(want[i]);
  }
  for (int i = 0; i < ATTN_RUN_MAX_GRADS; ++i) {
    free(cg[i]);
    free(cwant[i]);
  }
  free(got);
  free(scratch);
  free(want_out);
  return rc;
}

//===-- The CPU executor --------------------------------------------------===//

/// Runs the CPU entry of a job: `_mlir_<name>(void **)`, the packed wrapper
/// the ExecutionEngine makes for the bare-pointer function.
static bool cpu_execute(struct attn_executor *x, const struct job *j,
                        void *const bufs[ATTN_RUN_ROLES],
                        const size_t bytes[ATTN_RUN_ROLES], double *ms) {
  void *ptrs[ATTN_RUN_ROLES + 1], *args[ATTN_RUN_ROLES + 1];
  int n = 0;
  for (int a = 0; a < j->nargs; ++a)
    ptrs[n++] = bufs[j->role_of_arg[a]];
  ptrs[n++] = bufs[j->out];
  for (int a = 0; a < n; ++a)
    args[a] = &ptrs[a];
  attn_jit_entry_fn entry = attn_jit_lookup(x->jit, j->name);
  if (!entry) { // its diagnostic came when the module was compiled
    fprintf(stderr, "%s: error: kernel '%s' did not compile for the CPU\n",
            tool, j->name);
    return false;
  }
  entry(args);
  *ms = -1;
  return true;
}

static bool cpu_has(struct attn_executor *x, const char *name) {
  return attn_jit_lookup(x->jit, name) != NULL;
}

/// Runs the CPU entry `name` on args[0..n) in order.
static bool cpu_call(struct attn_executor *x, const char *name, int n,
                     const struct attn_run_arg *args) {
  void *ptrs[ATTN_RUN_ROLES + 8], *packed[ATTN_RUN_ROLES + 8];
  if (n > ATTN_RUN_ROLES + 8)
    return false;
  for (int a = 0; a < n; ++a) {
    ptrs[a] = args[a].buf;
    packed[a] = &ptrs[a];
  }
  attn_jit_entry_fn entry = attn_jit_lookup(x->jit, name);
  if (!entry) {
    fprintf(stderr, "%s: error: kernel '%s' did not compile for the CPU\n",
            tool, name);
    return false;
  }
  entry(packed);
  return true;
}

bool attn_cpu_executor_load(struct attn_executor *x, MlirOperation module) {
  x->execute = cpu_execute;
  x->has = cpu_has;
  x->call = cpu_call;
  x->jit = attn_jit_create(module);
  return x->jit != NULL;
}

void attn_cpu_executor_release(struct attn_executor *x) {
  attn_jit_destroy(x->jit);
  x->jit = NULL;
}
