//===- comm_schedule.c - comm-schedule: fuse a GEMM with its collective ---===//
//
// Replaces each of three GEMM + collective pairs on tensors by one
// comm.fused_matmul op, the persistent kernel whose SMs are split between
// multiplying and communicating, with the split the topology model
// (lib/CostModel/topology.h, attn_topo_fused) predicts fastest:
//
//   GEMM + AllReduce       %c = linalg.matmul ins(%a, %b) outs(%init)
//                          %r = comm.all_reduce(%c)          (only use of %c)
//   AllGather + GEMM       %g = comm.all_gather(%a) {dim = 0}
//                          %r = linalg.matmul ins(%g, %b) outs(%init)
//                                                (%g only used as A)
//   GEMM + ReduceScatter   %c = linalg.matmul ins(%a, %b) outs(%init)
//                          %r = comm.reduce_scatter(%c) {dim = 0}
//
// For example, on 4 H200s (before, then after, generic form):
//
//   %c = linalg.matmul ins(%a, %b : tensor<8192x8192xbf16>, ...)
//          outs(%init : tensor<8192x8192xbf16>) -> tensor<8192x8192xbf16>
//   %r = "comm.all_reduce"(%c) {reduction = "sum", world_size = 4 : i64}
//
//   %r = "comm.fused_matmul"(%a, %b, %init) {comm_sms = .., compute_sms = ..,
//          gpu_sms = 132 : i64, pattern = "matmul_all_reduce",
//          predicted_us = {fused = .., lower_bound = .., sequential = ..},
//          reduction = "sum", split = "static", tile_m = 128 : i64,
//          tile_n = 256 : i64, world_size = 4 : i64} : (...) -> tensor<...>
//
// The matmul is the plain row-major one (default indexing maps); a, b,
// init and the collective share one element type, bf16 or f16 (the model
// prices 2-byte elements on the tensor cores; f32 and others are left
// alone); shapes are static; the all_gather or reduce_scatter works on
// rows (dim 0) and world_size is at least 2. M, N, K given to the model
// are one rank's GEMM: for AllGather + GEMM, M is the gathered rows.
//
// The topology is the comm.topology dictionary on the collective, else its
// function, else the module. Its nvlink_gbps and net_gbps scale the model's
// calibrated H200 bandwidths by their ratio to 450 GB/s (NVLink4 per
// direction) and 50 GB/s (one 400 Gb/s NIC). Without a comm.topology
// attribute the machine is one node of world_size GPUs (gpus_per_node =
// world_size, nodes = 1). A collective whose world_size differs from the
// topology's ranks (a subgroup) is left alone: the model prices whole
// communicators only.
//
// Options:
//   comm-schedule-gpu=h200       the GPU (h200 default; h100 shares its
//                                NVLink4 constants)
//   comm-schedule-split=static   "static" (default) or "adaptive", recorded
//                                as split (adaptive: the kernel may move
//                                SMs at run time; comm_sms is its start)
//   comm-schedule-comm-sms=N     force N communication SMs instead of the
//                                model's choice (an error at the op when N
//                                is not below the kernel's SMs)
//   comm-schedule-sms=N          the SMs the fused kernel may take, 2 to the
//                                GPU's (default 0: all of them), e.g. to
//                                leave SMs to work on other streams; the
//                                kernel's grid is at most N CTAs
//   comm-schedule-strict=false   true: a candidate pair that cannot be
//                                fused is an error (the C API has no
//                                remarks) and the pass fails
//
// A program can pin the schedule of one collective with a discardable
// attribute on it, which takes precedence over the options:
//   "comm.all_reduce"(%c) {..., comm.schedule = {split = "adaptive",
//                                                comm_sms = 8 : i64,
//                                                sms = 66 : i64}}
// (any key may be left out). Bad option values fail when the pipeline
// is built; a malformed comm.schedule is an error at the op.
// lower-tile-to-hopper lowers comm.fused_matmul (after attn-tile) to one
// persistent kernel.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/comm/comm_dialect.h"
#include "lib/CostModel/cost_model.h"
#include "lib/CostModel/topology.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// The nominal H200 links that the model's constants were measured on.
#define NOMINAL_NVLINK_GBPS 450.0
#define NOMINAL_NET_GBPS 50.0

struct sched_options {
  char gpu[16];  // validated by attn_topo_init
  bool adaptive; // split = "adaptive"
  int comm_sms;  // 0: the model's choice
  int sms;       // the SMs the kernel may take; 0: the GPU's
  bool strict;
};

static const struct attn_pass_option sched_options_help[] = {
    {"comm-schedule-gpu", "GPU the topology model prices (default h200; "
                          "h100)"},
    {"comm-schedule-split", "static (default) or adaptive"},
    {"comm-schedule-comm-sms", "force this many communication SMs (default "
                               "0: the model's choice)"},
    {"comm-schedule-sms", "the SMs the fused kernel may take (default 0: "
                          "all of the GPU's)"},
    {"comm-schedule-strict", "report pairs that cannot be fused as errors "
                             "(default false)"},
    {NULL, NULL},
};

static void sched_init(void *opts) {
  struct sched_options *o = opts;
  memset(o, 0, sizeof *o);
  snprintf(o->gpu, sizeof o->gpu, "%s", ATTN_COST_DEFAULT_GPU);
}

static bool sched_set(void *opts, const char *name, const char *value,
                      char *err, size_t errlen) {
  struct sched_options *o = opts;
  if (!strcmp(name, "comm-schedule-gpu")) {
    struct attn_topo t;
    if (strlen(value) >= sizeof o->gpu) {
      snprintf(err, errlen, "option 'comm-schedule-gpu' expects h200 or "
                            "h100, found '%s'",
               value);
      return false;
    }
    if (!attn_topo_init(&t, value, 1, 1, err, errlen))
      return false;
    snprintf(o->gpu, sizeof o->gpu, "%s", value);
    return true;
  }
  if (!strcmp(name, "comm-schedule-split")) {
    if (strcmp(value, "static") && strcmp(value, "adaptive")) {
      snprintf(err, errlen, "option 'comm-schedule-split' expects static or "
                            "adaptive, found '%s'",
               value);
      return false;
    }
    o->adaptive = !strcmp(value, "adaptive");
    return true;
  }
  int *count = !strcmp(name, "comm-schedule-comm-sms") ? &o->comm_sms
               : !strcmp(name, "comm-schedule-sms")      ? &o->sms
                                                         : NULL;
  if (count) {
    long v;
    if (!attn_parse_int_option(name, value, 0, 1024, &v, err, errlen))
      return false;
    *count = (int)v;
    return true;
  }
  if (!strcmp(name, "comm-schedule-strict")) {
    if (!attn_parse_bool_option(value, &o->strict)) {
      snprintf(err, errlen, "option 'comm-schedule-strict' expects true or "
                            "false, found '%s'",
               value);
      return false;
    }
    return true;
  }
  snprintf(err, errlen,
           "unknown option '%s' of pass 'comm-schedule' (expected "
           "comm-schedule-gpu, comm-schedule-split, comm-schedule-comm-sms, "
           "comm-schedule-sms or comm-schedule-strict)",
           name);
  return false;
}

/// One candidate pair: the matmul, the collective, which comes first.
struct pair {
  enum attn_comm_fused_pattern pattern;
  MlirOperation matmul, coll;
  MlirOperation first, second; // program order; second is replaced
};

static bool has_one_use(MlirValue v) {
  MlirOpOperand use = mlirValueGetFirstUse(v);
  return !mlirOpOperandIsNull(use) &&
         mlirOpOperandIsNull(mlirOpOperandGetNextUse(use));
}

/// Rejects the pair: silently, or with an error when strict.
static bool reject(const struct sched_options *o, MlirOperation op,
                   bool *failed, const char *why) {
  if (o->strict) {
    attn_emit_errorf(op, "comm-schedule: cannot fuse: %s", why);
    *failed = true;
  }
  return false;
}

/// True when the matmul has the default row-major indexing maps.
static bool plain_matmul(MlirOperation mm) {
  MlirAttribute maps = attn_attr_get(mm, "indexing_maps");
  if (mlirAttributeIsNull(maps))
    return true;
  MlirAttribute want = mlirAttributeParseGet(
      mlirOperationGetContext(mm),
      mlirStringRefCreateFromCString(
          "[affine_map<(d0, d1, d2) -> (d0, d2)>, "
          "affine_map<(d0, d1, d2) -> (d2, d1)>, "
          "affine_map<(d0, d1, d2) -> (d0, d1)>]"));
  return !mlirAttributeIsNull(want) && mlirAttributeEqual(maps, want);
}

static bool is_2byte_float(MlirType t) {
  return mlirTypeIsABF16(t) || mlirTypeIsAF16(t);
}

/// Reads the pair's GEMM (one rank's M x N x K, M gathered for all_gather)
/// and checks what the model needs. Returns false (after an error when
/// strict) when the pair is left alone.
static bool check_pair(const struct sched_options *o, const struct pair *p,
                       int64_t *m, int64_t *n, int64_t *k, int64_t *w,
                       bool *failed) {
  int64_t a[8], b[8], c[8], x[8];
  char why[160];
  MlirOperation at = p->coll;
  if (mlirOperationGetNumOperands(p->matmul) != 3 ||
      mlirOperationGetNumResults(p->matmul) != 1)
    return reject(o, at, failed, "the matmul is not on tensors");
  MlirValue av = mlirOperationGetOperand(p->matmul, 0);
  MlirValue bv = mlirOperationGetOperand(p->matmul, 1);
  MlirValue cv = mlirOperationGetOperand(p->matmul, 2);
  if (attn_static_shape(mlirValueGetType(av), a) != 2 ||
      attn_static_shape(mlirValueGetType(bv), b) != 2 ||
      attn_static_shape(mlirValueGetType(cv), c) != 2 ||
      !mlirTypeIsARankedTensor(mlirValueGetType(cv)) ||
      attn_static_shape(mlirValueGetType(mlirOperationGetOperand(p->coll, 0)),
                        x) != 2)
    return reject(o, at, failed, "shapes must be static rank-2 tensors");
  if (!plain_matmul(p->matmul))
    return reject(o, at, failed, "the matmul has non-default indexing maps");
  MlirType e = mlirShapedTypeGetElementType(mlirValueGetType(av));
  MlirType coll_e = mlirShapedTypeGetElementType(
      mlirValueGetType(mlirOperationGetResult(p->coll, 0)));
  if (!mlirTypeEqual(e, mlirShapedTypeGetElementType(mlirValueGetType(bv))) ||
      !mlirTypeEqual(e, mlirShapedTypeGetElementType(mlirValueGetType(cv))) ||
      !mlirTypeEqual(e, coll_e))
    return reject(o, at, failed, "a, b, init and the collective must share "
                                 "one element type");
  if (!is_2byte_float(e)) {
    char ty[64];
    snprintf(why, sizeof why,
             "element type %s is not priced by the topology model (expected "
             "bf16 or f16)",
             attn_type_str(e, ty, sizeof ty));
    return reject(o, at, failed, why);
  }
  if (!attn_attr_i64(p->coll, "world_size", w))
    return false; // the verifier reported it
  if (*w < 2) {
    snprintf(why, sizeof why,
             "world_size %lld leaves nothing to communicate (expected at "
             "least 2)",
             (long long)*w);
    return reject(o, at, failed, why);
  }
  int64_t dim = 0;
  if (p->pattern != ATTN_COMM_FUSED_MATMUL_ALL_REDUCE &&
      attn_attr_i64(p->coll, "dim", &dim) && dim != 0) {
    snprintf(why, sizeof why,
             "the collective works on dim %lld, expected 0 (rows)",
             (long long)dim);
    return reject(o, at, failed, why);
  }
  if (p->pattern != ATTN_COMM_FUSED_ALL_GATHER_MATMUL) {
    int r = attn_comm_get_reduction(p->coll);
    if (r < 0 || r == ATTN_COMM_REDUCE_AVG) {
      // avg has no tile-level comm.reduce to lower to
      return reject(o, at, failed, "the reduction must be sum, prod, max or "
                                   "min");
    }
  }
  struct attn_comm_topology t;
  if (attn_comm_get_topology(p->coll, &t, NULL) &&
      attn_comm_topology_world_size(&t) != *w) {
    snprintf(why, sizeof why,
             "world_size %lld differs from the %lld ranks of comm.topology",
             (long long)*w, (long long)attn_comm_topology_world_size(&t));
    return reject(o, at, failed, why);
  }
  *m = c[0];
  *n = c[1];
  *k = a[1];
  return true;
}

/// Fills the model's topology for the pair: comm.topology (scaled links)
/// or one node of w GPUs.
static bool pair_topology(const struct sched_options *o, MlirOperation coll,
                          int64_t w, struct attn_topo *t) {
  struct attn_comm_topology ct;
  char err[256];
  bool have = attn_comm_get_topology(coll, &ct, NULL);
  int gpn = have ? (int)ct.gpus_per_node : (int)w;
  int nodes = have ? (int)ct.nodes : 1;
  if (!attn_topo_init(t, o->gpu, gpn, nodes, err, sizeof err))
    return attn_emit_errorf(coll, "comm-schedule: %s", err);
  if (have) {
    double nv = (double)ct.nvlink_gbps / NOMINAL_NVLINK_GBPS;
    t->nvlink_busbw_all_reduce *= nv;
    t->nvlink_busbw_gather *= nv;
    t->net_busbw *= (double)ct.net_gbps / NOMINAL_NET_GBPS;
  }
  return true;
}

/// Microseconds of s, rounded to 0.01 us.
static double micros(double s) { return round(s * 1e8) / 100.0; }

static MlirNamedAttribute named(MlirContext ctx, const char *name,
                                MlirAttribute a) {
  return mlirNamedAttributeGet(
      mlirIdentifierGet(ctx, mlirStringRefCreateFromCString(name)), a);
}

static MlirAttribute str_attr(MlirContext ctx, const char *s) {
  return mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(s));
}

/// Replaces the pair by one comm.fused_matmul with c's split.
static void rewrite_pair(const struct sched_options *o, const struct pair *p,
                         int64_t w, const struct attn_topo *t,
                         const struct attn_fused_cost *c) {
  MlirContext ctx = mlirOperationGetContext(p->coll);
  MlirOperationState st = mlirOperationStateGet(
      mlirStringRefCreateFromCString(ATTN_OP_COMM_FUSED_MATMUL),
      mlirOperationGetLocation(p->second));
  MlirValue operands[3] = {
      p->pattern == ATTN_COMM_FUSED_ALL_GATHER_MATMUL
          ? mlirOperationGetOperand(p->coll, 0)
          : mlirOperationGetOperand(p->matmul, 0),
      mlirOperationGetOperand(p->matmul, 1),
      mlirOperationGetOperand(p->matmul, 2)};
  mlirOperationStateAddOperands(&st, 3, operands);
  MlirValue out = mlirOperationGetResult(p->second, 0);
  MlirType result = mlirValueGetType(out);
  mlirOperationStateAddResults(&st, 1, &result);
  MlirType i64 = mlirIntegerTypeGet(ctx, 64);
  MlirType f64 = mlirF64TypeGet(ctx);
  MlirNamedAttribute pred[3] = {
      named(ctx, "sequential",
            mlirFloatAttrDoubleGet(ctx, f64, micros(c->sequential_s))),
      named(ctx, "fused", mlirFloatAttrDoubleGet(ctx, f64, micros(c->fused_s))),
      named(ctx, "lower_bound",
            mlirFloatAttrDoubleGet(ctx, f64, micros(c->lower_bound_s))),
  };
  MlirNamedAttribute attrs[12];
  int na = 0;
  attrs[na++] = named(ctx, "pattern",
                      str_attr(ctx, attn_comm_fused_pattern_name(p->pattern)));
  attrs[na++] = named(ctx, "world_size", mlirIntegerAttrGet(i64, w));
  if (p->pattern != ATTN_COMM_FUSED_ALL_GATHER_MATMUL)
    attrs[na++] = named(ctx, "reduction", attn_attr_get(p->coll, "reduction"));
  if (p->pattern != ATTN_COMM_FUSED_MATMUL_ALL_REDUCE)
    attrs[na++] = named(ctx, "dim", mlirIntegerAttrGet(i64, 0));
  attrs[na++] = named(ctx, "comm_sms", mlirIntegerAttrGet(i64, c->comm_sms));
  attrs[na++] =
      named(ctx, "compute_sms", mlirIntegerAttrGet(i64, c->compute_sms));
  attrs[na++] = named(ctx, "gpu_sms", mlirIntegerAttrGet(i64, c->total_sms));
  attrs[na++] = named(ctx, "tile_m", mlirIntegerAttrGet(i64, t->gemm_tile_m));
  attrs[na++] = named(ctx, "tile_n", mlirIntegerAttrGet(i64, t->gemm_tile_n));
  attrs[na++] =
      named(ctx, "split", str_attr(ctx, o->adaptive ? "adaptive" : "static"));
  attrs[na++] =
      named(ctx, "predicted_us", mlirDictionaryAttrGet(ctx, 3, pred));
  mlirOperationStateAddAttributes(&st, na, attrs);
  MlirOperation fused = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(p->second),
                                      p->second, fused);
  mlirValueReplaceAllUsesOfWith(out, mlirOperationGetResult(fused, 0));
  mlirOperationDestroy(p->second);
  mlirOperationDestroy(p->first);
}

/// Reads a collective's comm.schedule dictionary into o: split ("static" or
/// "adaptive"), comm_sms and sms (integers >= 1), each optional. Returns
/// false after an error at coll.
static bool read_pin(MlirOperation coll, MlirAttribute pin,
                     struct sched_options *o) {
  static const char *const ints[] = {"comm_sms", "sms"};
  bool bad = !mlirAttributeIsADictionary(pin);
  MlirAttribute sp = bad ? (MlirAttribute){NULL}
                         : mlirDictionaryAttrGetElementByName(
                               pin, mlirStringRefCreateFromCString("split"));
  bad = bad || (!mlirAttributeIsNull(sp) &&
                (!mlirAttributeIsAString(sp) ||
                 (!attn_str_eq(mlirStringAttrGetValue(sp), "static") &&
                  !attn_str_eq(mlirStringAttrGetValue(sp), "adaptive"))));
  int64_t v[2] = {0, 0};
  for (int i = 0; i < 2 && !bad; ++i) {
    MlirAttribute a = mlirDictionaryAttrGetElementByName(
        pin, mlirStringRefCreateFromCString(ints[i]));
    if (mlirAttributeIsNull(a))
      continue;
    bad = !mlirAttributeIsAInteger(a) || mlirAttributeIsABool(a) ||
          (v[i] = mlirIntegerAttrGetValueInt(a)) < 1 || v[i] > 1024;
  }
  if (bad)
    return attn_emit_errorf(coll, "comm.schedule must be {split = \"static\" "
                                  "or \"adaptive\", comm_sms = 1 to 1024, "
                                  "sms = 1 to 1024}, every key optional");
  if (!mlirAttributeIsNull(sp))
    o->adaptive = attn_str_eq(mlirStringAttrGetValue(sp), "adaptive");
  if (v[0])
    o->comm_sms = (int)v[0];
  if (v[1])
    o->sms = (int)v[1];
  return true;
}

/// The fused kernel's tile width for an output n columns wide: the widest
/// of 256, 192, 128 and 64 that divides n; where none does, the last tile
/// column is a tail: 128 up to 128 columns, else 256.
static int64_t fused_tile_n(int64_t n) {
  static const int64_t widths[] = {256, 192, 128, 64};
  for (int i = 0; i < 4; ++i)
    if (n % widths[i] == 0)
      return widths[i];
  return n <= 128 ? 128 : 256;
}

/// Prices and rewrites one pair. Returns false after an error.
static bool schedule_pair(const struct sched_options *o, const struct pair *p,
                          bool *failed) {
  static const enum attn_fused_pattern model[3] = {
      ATTN_FUSED_GEMM_ALL_REDUCE, ATTN_FUSED_ALL_GATHER_GEMM,
      ATTN_FUSED_GEMM_REDUCE_SCATTER};
  int64_t m, n, k, w;
  struct attn_topo t;
  struct attn_fused_cost c;
  char err[256];
  if (!check_pair(o, p, &m, &n, &k, &w, failed))
    return !*failed;
  if (!pair_topology(o, p->coll, w, &t))
    return false;
  t.gemm_tile_n = (int)fused_tile_n(n);
  struct sched_options mine = *o;
  MlirAttribute pin = attn_attr_get(p->coll, "comm.schedule");
  if (!mlirAttributeIsNull(pin) && !read_pin(p->coll, pin, &mine))
    return false;
  o = &mine;
  bool ok = o->comm_sms
                ? attn_topo_fused_at(&t, model[p->pattern], m, n, k, (int)w,
                                     o->sms, o->comm_sms, &c, err, sizeof err)
                : attn_topo_fused(&t, model[p->pattern], m, n, k, (int)w,
                                  o->sms, &c, err, sizeof err);
  if (!ok)
    return attn_emit_errorf(p->coll, "comm-schedule: %s", err);
  rewrite_pair(o, p, w, &t, &c);
  return true;
}

/// Matches the pair around a collective, if any.
static bool match_pair(const struct sched_options *o, MlirOperation coll,
                       struct pair *p, bool *failed) {
  memset(p, 0, sizeof *p);
  p->coll = coll;
  if (attn_op_is(coll, ATTN_OP_COMM_ALL_GATHER)) {
    MlirValue g = mlirOperationGetResult(coll, 0);
    MlirOpOperand use = mlirValueGetFirstUse(g);
    if (mlirOpOperandIsNull(use))
      return false;
    MlirOperation user = mlirOpOperandGetOwner(use);
    if (!attn_op_is(user, "linalg.matmul"))
      return false;
    if (!has_one_use(g) || mlirOpOperandGetOperandNumber(use) != 0)
      return reject(o, coll, failed, "the gathered tensor must have one use, "
                                     "as the matmul's A");
    if (!mlirBlockEqual(mlirOperationGetBlock(user),
                        mlirOperationGetBlock(coll)))
      return reject(o, coll, failed, "the matmul is in another block");
    p->pattern = ATTN_COMM_FUSED_ALL_GATHER_MATMUL;
    p->matmul = user;
    p->first = coll;
    p->second = user;
    return true;
  }
  MlirValue x = mlirOperationGetOperand(coll, 0);
  if (!mlirValueIsAOpResult(x))
    return false;
  MlirOperation def = mlirOpResultGetOwner(x);
  if (!attn_op_is(def, "linalg.matmul"))
    return false;
  if (!has_one_use(x))
    return reject(o, coll, failed, "the matmul's result has other uses (expected "
                                   "only the collective)");
  if (!mlirBlockEqual(mlirOperationGetBlock(def),
                      mlirOperationGetBlock(coll)))
    return reject(o, coll, failed, "the matmul is in another block");
  p->pattern = attn_op_is(coll, ATTN_OP_COMM_ALL_REDUCE)
                   ? ATTN_COMM_FUSED_MATMUL_ALL_REDUCE
                   : ATTN_COMM_FUSED_MATMUL_REDUCE_SCATTER;
  p->matmul = def;
  p->first = def;
  p->second = coll;
  return true;
}

static MlirWalkResult collect_colls(MlirOperation op, void *user) {
  if (attn_op_is(op, ATTN_OP_COMM_ALL_REDUCE) ||
      attn_op_is(op, ATTN_OP_COMM_ALL_GATHER) ||
      attn_op_is(op, ATTN_OP_COMM_REDUCE_SCATTER))
    attn_op_list_push(user, op);
  return MlirWalkResultAdvance;
}

static bool comm_schedule_run(MlirOperation module, const void *opts) {
  const struct sched_options *o = opts;
  struct attn_op_list colls = {0};
  mlirOperationWalk(module, collect_colls, &colls, MlirWalkPostOrder);
  bool ok = !colls.failed, failed = false;
  for (size_t i = 0; i < colls.n && ok; ++i) {
    struct pair p;
    if (match_pair(o, colls.ops[i], &p, &failed))
      ok = schedule_pair(o, &p, &failed);
    ok = ok && !failed;
  }
  bool oom = colls.failed;
  free(colls.ops);
  if (oom)
    return attn_emit_errorf(module, "comm-schedule: out of memory");
  return ok;
}

const struct attn_pass_def comm_schedule_pass = {
    .argument = "comm-schedule",
    .alias = NULL,
    .description = "Fuse GEMM+all_reduce, all_gather+GEMM and "
                   "GEMM+reduce_scatter into comm.fused_matmul with the "
                   "topology model's SM split",
    .options = sched_options_help,
    .options_size = sizeof(struct sched_options),
    .init_options = sched_init,
    .set_option = sched_set,
    .run = comm_schedule_run,
};
