//===- test_attn_print_cost.c - test-attn-print-cost: the model's view ---===//
//
// An analysis printer (it changes nothing): for every attn.fused op, the
// Rotation Calculus's prediction for each RoPE placement on the GPU named
// by option gpu (default H200), with the terms that make it up, the
// placement rope-strategy=auto would choose, and the crossovers of fused
// and split against pre. Lines go to stderr (like MLIR's test printers):
//
//   cost @f on H200: B=4 H=32 Hkv=32 N=8192 M=8192 d=128 rotary=128 causal
//     bf16 tiles=128x128   (one line)
//     fused:    7.037 ms = attention 3.733 + rope in kernel 3.304 + ...
//     split:    3.962 ms = ...
//     pre:      ...
//     producer: 3.733 ms = ... (unavailable: no q/k projection in the program)
//
// (producer is available when q and k are attn.project results.)
//     choice: split
//     N*: fused vs pre 256, split vs pre none in [16, 1048576]
//
// N* holds the batch fixed and sweeps N (M in its ratio to N); see
// attn_cost_crossover. Times are in ms; the shapes are attn.fused's, the
// tiles the Hopper kernel's (128 x 128). Without RoPE only the attention's
// line is printed. An op the model cannot price (sizes beyond its range)
// is an error at the op.
//
//===----------------------------------------------------------------------===//
#include "lib/Transforms/transforms_internal.h"

#include "dialects/attn/attn_dialect.h"
#include "lib/CostModel/cost_model.h"

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SWEEP_LO 16
#define SWEEP_HI (1LL << 20)

struct print_options {
  const struct attn_cost_gpu *gpu; // static table entry
};

static const struct attn_pass_option print_options_help[] = {
    {"gpu", "GPU to price for (default H200; H100, H200, A100, RTX3090)"},
    {NULL, NULL},
};

static void print_init(void *opts) {
  struct print_options *o = opts;
  o->gpu = attn_cost_gpu_lookup(ATTN_COST_DEFAULT_GPU, NULL, 0);
}

static bool print_set(void *opts, const char *name, const char *value,
                      char *err, size_t errlen) {
  struct print_options *o = opts;
  if (!strcmp(name, "gpu")) {
    o->gpu = attn_cost_gpu_lookup(value, err, errlen);
    return o->gpu != NULL;
  }
  snprintf(err, errlen,
           "unknown option '%s' of pass 'test-attn-print-cost' (expected gpu)",
           name);
  return false;
}

/// The symbol name of the function around op, or "?".
static void parent_name(MlirOperation op, char *buf, size_t len) {
  MlirOperation f = mlirOperationGetParentOperation(op);
  MlirStringRef s;
  if (!mlirOperationIsNull(f) && attn_attr_str(f, "sym_name", &s))
    snprintf(buf, len, "%.*s", (int)s.length, s.data);
  else
    snprintf(buf, len, "?");
}

static const char *elem_name(MlirValue v) {
  MlirType e = mlirShapedTypeGetElementType(mlirValueGetType(v));
  return mlirTypeIsAF32(e) ? "f32" : mlirTypeIsAF16(e) ? "f16" : "bf16";
}

static void print_cost(const char *label, const struct attn_cost *c,
                       const char *note) {
  fprintf(stderr,
          "  %-9s %.3f ms = attention %.3f + rope in kernel %.3f + rope "
          "kernels %.3f + launches %.3f; efficiency %.2f, ctas %lld, tiles "
          "%lld, q rotated %.3g, k rotated %.3g (x%.1f), rope bytes %.3g, "
          "kernels %d%s\n",
          label, c->time_s * 1e3, c->attention_s * 1e3,
          c->rope_in_kernel_s * 1e3, c->rope_kernels_s * 1e3,
          c->launch_s * 1e3, c->efficiency, (long long)c->ctas,
          (long long)c->tiles, c->q_rotated, c->k_rotated, c->k_repeat,
          c->rope_bytes, c->kernels, note);
}

static void print_crossover(const struct attn_cost_problem *p,
                            const struct attn_cost_gpu *g,
                            enum attn_cost_strategy a,
                            enum attn_cost_strategy b, const char *sep) {
  int64_t n;
  fprintf(stderr, "%s vs %s ", attn_cost_strategy_name(a),
          attn_cost_strategy_name(b));
  if (attn_cost_crossover(p, g, a, b, SWEEP_LO, SWEEP_HI, &n))
    fprintf(stderr, "%lld%s", (long long)n, sep);
  else
    fprintf(stderr, "none in [%d, %lld]%s", SWEEP_LO, (long long)SWEEP_HI,
            sep);
}

static bool print_op(MlirOperation op, const struct attn_cost_gpu *g) {
  struct attn_fused_config cfg;
  if (!attn_fused_get_config(op, &cfg))
    return attn_emit_errorf(op, "malformed attn.fused attributes");
  struct attn_cost_problem p;
  MlirValue q = mlirOperationGetOperand(op, 0);
  unsigned avail =
      attn_rope_cost_problem(q, mlirOperationGetOperand(op, 1), &cfg, &p);
  if (attn_rope_producer_available(q, mlirOperationGetOperand(op, 1)) &&
      cfg.extra[ATTN_EXTRA_Q_POSITIONS] < 0 &&
      cfg.extra[ATTN_EXTRA_K_POSITIONS] < 0)
    avail |= ATTN_COST_BIT(ATTN_COST_PRODUCER);
  char err[256], fn[128];
  if (!attn_cost_check_problem(&p, err, sizeof err))
    return attn_emit_errorf(op, "cannot price this attention: %s", err);
  parent_name(op, fn, sizeof fn);
  fprintf(stderr,
          "cost @%s on %s: B=%lld H=%lld Hkv=%lld N=%lld M=%lld d=%lld "
          "rotary=%lld %s %s tiles=%dx%d\n",
          fn, g->name, (long long)p.batch, (long long)p.heads,
          (long long)p.kv_heads, (long long)p.seq_q, (long long)p.seq_k,
          (long long)p.head_dim, (long long)p.rotary_dim,
          p.causal ? "causal" : "non-causal", elem_name(q), p.block_m,
          p.block_n);
  struct attn_cost c;
  if (p.rotary_dim == 0) {
    attn_cost_estimate(&p, g, ATTN_COST_FUSED, &c, err, sizeof err);
    print_cost("no rope:", &c, "");
    fprintf(stderr, "  choice: none (no RoPE)\n");
    return true;
  }
  for (int s = 0; s < ATTN_COST_NUM_STRATEGIES; ++s) {
    char label[16];
    snprintf(label, sizeof label, "%s:",
             attn_cost_strategy_name((enum attn_cost_strategy)s));
    attn_cost_estimate(&p, g, (enum attn_cost_strategy)s, &c, err, sizeof err);
    const char *note =
        avail & ATTN_COST_BIT(s) ? ""
        : s == ATTN_COST_PRODUCER
            ? " (unavailable: no q/k projection in the program)"
            : " (unavailable: the rotation kernels need rotary_dim = d)";
    print_cost(label, &c, note);
  }
  enum attn_cost_strategy best = attn_cost_choose(&p, g, avail, NULL);
  fprintf(stderr, "  choice: %s\n  N*: ", attn_cost_strategy_name(best));
  print_crossover(&p, g, ATTN_COST_FUSED, ATTN_COST_PRE, ", ");
  print_crossover(&p, g, ATTN_COST_SPLIT, ATTN_COST_PRE, "\n");
  return true;
}

static bool print_cost_run(MlirOperation module, const void *opts) {
  const struct print_options *o = opts;
  struct attn_op_list ops = {0};
  attn_op_list_collect(&ops, module, ATTN_OP_FUSED);
  bool ok = !ops.failed;
  // Each op's lines are finished before the next op's diagnostics.
  for (size_t i = 0; i < ops.n; ++i)
    ok = print_op(ops.ops[i], o->gpu) && ok;
  fflush(stderr);
  free(ops.ops);
  return ok;
}

const struct attn_pass_def test_attn_print_cost_pass = {
    .argument = "test-attn-print-cost",
    .description = "Print the Rotation Calculus's cost of each RoPE placement "
                   "for every attn.fused op (to stderr)",
    .options = print_options_help,
    .options_size = sizeof(struct print_options),
    .init_options = print_init,
    .set_option = print_set,
    .run = print_cost_run,
};
