//===- attn_reference_grad.c - Float64 reference of attention's backward --===//
//
// attn_reference_grad (attn_reference.h): the gradients of attention with
// every block of attn_reference, for a given dO, computed in float64 from
// the definition, row by row: the final scores and, for each, the
// derivative of the modifier chain at it; P from the row's log-sum-exp;
// dV += P^T dO; dS = P (dP - D) with dP = dO V^T and D = rowsum(dO O);
// dS through the chain; dQ_rot += dS_raw K_rot, dK_rot += dS_raw^T Q_rot;
// finally the inverse rotation of dq and dk. It shares nothing with the
// kernels but the definition, which is the point. attn_reference_capture_
// grad takes the gradient into a captured tensor (a table a score_fn
// reads) by central differences of the loss.
//
//===----------------------------------------------------------------------===//
#include "lib/Reference/attn_reference.h"
#include "lib/Reference/attn_reference_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/// One score through the modifier chain: its final value, the derivative
/// of the final value with respect to the product q.k (d), and with
/// respect to the gate's value (d_gate: the product of the derivatives of
/// the steps after the gate).
struct chain {
  double s, d, d_gate;
};

/// score_fn's derivative at s: score_fn_grad, else a central difference.
static double fn_derivative(const struct attn_ref_problem *p, double s,
                            int64_t b, int64_t h, int64_t i, int64_t j) {
  if (p->score_fn_grad)
    return p->score_fn_grad(p->fn_ctx, s, b, h, i, j);
  double e = 1e-6 * fmax(1.0, fabs(s));
  double hi = p->score_fn(p->fn_ctx, s + e, b, h, i, j);
  double lo = p->score_fn(p->fn_ctx, s - e, b, h, i, j);
  return (hi - lo) / (2.0 * e);
}

/// attn_reference's modify, keeping each step's derivative.
static void modify_grad(const struct attn_ref_problem *p, int64_t b, int64_t h,
                        int64_t i, int64_t j, double s, struct chain *c) {
  double der[6];
  int n = 0, gate_at = -1;
  bool scaled = false;
  for (int k = 0; k < p->nmods; ++k)
    scaled |= p->mods[k] == ATTN_REF_SCALE;
  if (!scaled) {
    s *= p->scale;
    der[n++] = p->scale;
  }
  for (int k = 0; k < p->nmods; ++k) {
    switch (p->mods[k]) {
    case ATTN_REF_SCALE:
      s *= p->scale;
      der[n++] = p->scale;
      break;
    case ATTN_REF_SOFTCAP: {
      double t = tanh(s / p->softcap);
      s = p->softcap * t;
      der[n++] = 1.0 - t * t;
      break;
    }
    case ATTN_REF_ALIBI: {
      double slope = exp2(-p->alibi_max_bias * (double)(h + 1) /
                          (double)p->heads);
      s -= slope * fabs((double)(i - j));
      der[n++] = 1.0;
      break;
    }
    case ATTN_REF_GATE: {
      int64_t nb = (p->seq_k + p->gate_block - 1) / p->gate_block;
      s +=
          p->gate[((b * p->heads + h) * p->seq_q + i) * nb + j / p->gate_block];
      gate_at = n;
      der[n++] = 1.0;
      break;
    }
    case ATTN_REF_FN:
      der[n++] = fn_derivative(p, s, b, h, i, j);
      s = p->score_fn(p->fn_ctx, s, b, h, i, j);
      break;
    }
  }
  c->s = s;
  c->d = 1.0;
  c->d_gate = 1.0;
  for (int k = 0; k < n; ++k) {
    c->d *= der[k];
    if (gate_at >= 0 && k > gate_at)
      c->d_gate *= der[k];
  }
}

/// Whether mods has the gate.
static bool has_gate(const struct attn_ref_problem *p) {
  for (int k = 0; k < p->nmods; ++k)
    if (p->mods[k] == ATTN_REF_GATE)
      return true;
  return false;
}

/// The gradients of query head (b, h), accumulated into dq (its rows),
/// dk_rot and dv (its kv head's rows, still in the rotated frame for dk),
/// dgate and lse; qh and kh hold the rotated q and k of the head, the
/// other pointers scratch rows of m.
struct head {
  const double *qh, *kh, *vh, *dout;
  double *dq, *dk, *dv, *dgate, *lse;
  struct chain *c;
  double *pr;
  bool *vis;
};

static void grad_head(const struct attn_ref_problem *p, int64_t b, int64_t h,
                      const struct head *x) {
  int64_t n = p->seq_q, m = p->seq_k, d = p->head_dim, dv = p->value_dim;
  int64_t nb = p->gate_block > 0 ? (p->seq_k + p->gate_block - 1) /
                                       p->gate_block
                                 : 0;
  for (int64_t i = 0; i < n; ++i) {
    double mx = -INFINITY;
    for (int64_t j = 0; j < m; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < d; ++c)
        dot += x->qh[i * d + c] * x->kh[j * d + c];
      x->vis[j] = attn_ref_visible(p, b, h, i, j);
      if (x->vis[j]) {
        modify_grad(p, b, h, i, j, dot, &x->c[j]);
        mx = fmax(mx, x->c[j].s);
      }
    }
    double sum = 0;
    for (int64_t j = 0; j < m; ++j)
      sum += x->vis[j] ? exp(x->c[j].s - mx) : 0.0;
    double lse = sum > 0 ? mx + log(sum) : INFINITY;
    if (x->lse)
      x->lse[i] = lse;
    if (!(sum > 0))
      continue; // sees no key: no gradient
    for (int64_t j = 0; j < m; ++j)
      x->pr[j] = x->vis[j] ? exp(x->c[j].s - lse) : 0.0;
    const double *dor = x->dout + i * dv;
    // D = rowsum(dO * O), O = P V.
    double dd = 0;
    for (int64_t c = 0; c < dv; ++c) {
      double o = 0;
      for (int64_t j = 0; j < m; ++j)
        o += x->pr[j] * x->vh[j * dv + c];
      dd += dor[c] * o;
    }
    for (int64_t j = 0; j < m; ++j) {
      if (!x->vis[j])
        continue;
      double dp = 0;
      for (int64_t c = 0; c < dv; ++c) {
        dp += dor[c] * x->vh[j * dv + c];
        x->dv[j * dv + c] += x->pr[j] * dor[c];
      }
      double ds = x->pr[j] * (dp - dd);
      double dsr = ds * x->c[j].d;
      for (int64_t c = 0; c < d; ++c) {
        x->dq[i * d + c] += dsr * x->kh[j * d + c];
        x->dk[j * d + c] += dsr * x->qh[i * d + c];
      }
      if (x->dgate)
        x->dgate[i * nb + j / p->gate_block] += ds * x->c[j].d_gate;
    }
  }
}

bool attn_reference_grad(const struct attn_ref_problem *p, const double *q,
                         const double *k, const double *v, const double *dout,
                         double *dq, double *dk, double *dv, double *dgate,
                         double *lse) {
  if (!attn_ref_valid(p) || !q || !k || !v || !dout || !dq || !dk || !dv)
    return false;
  int64_t n = p->seq_q, m = p->seq_k, d = p->head_dim, dvd = p->value_dim;
  int64_t group = p->heads / p->kv_heads;
  double *qh = malloc(sizeof(double) * (size_t)(n * d));
  double *kh = malloc(sizeof(double) * (size_t)(m * d));
  struct chain *c = malloc(sizeof(struct chain) * (size_t)m);
  double *pr = malloc(sizeof(double) * (size_t)m);
  bool *vis = malloc(sizeof(bool) * (size_t)m);
  bool ok = qh && kh && c && pr && vis;
  if (ok) {
    memset(dq, 0, sizeof(double) * (size_t)(p->batch * p->heads * n * d));
    memset(dk, 0, sizeof(double) * (size_t)(p->batch * p->kv_heads * m * d));
    memset(dv, 0,
           sizeof(double) * (size_t)(p->batch * p->kv_heads * m * dvd));
    if (!has_gate(p))
      dgate = NULL;
    if (dgate)
      memset(dgate, 0,
             sizeof(double) * (size_t)(p->batch * p->heads * n *
                                       ((m + p->gate_block - 1) /
                                        p->gate_block)));
  }
  int64_t nb = dgate ? (m + p->gate_block - 1) / p->gate_block : 0;
  for (int64_t b = 0; ok && b < p->batch; ++b)
    for (int64_t h = 0; h < p->heads; ++h) {
      int64_t hk = h / group;
      const int32_t *qpos = p->q_positions ? p->q_positions + b * n : NULL;
      const int32_t *kpos = p->k_positions ? p->k_positions + b * m : NULL;
      memcpy(qh, q + ((b * p->heads + h) * n) * d,
             sizeof(double) * (size_t)(n * d));
      memcpy(kh, k + ((b * p->kv_heads + hk) * m) * d,
             sizeof(double) * (size_t)(m * d));
      if (p->rope) {
        attn_reference_rope_at(qh, n, d, p->rotary_dim, p->theta,
                               p->interleaved, qpos, p->q_offset);
        attn_reference_rope_at(kh, m, d, p->rotary_dim, p->theta,
                               p->interleaved, kpos, p->k_offset);
      }
      struct head x = {
          .qh = qh,
          .kh = kh,
          .vh = v + ((b * p->kv_heads + hk) * m) * dvd,
          .dout = dout + ((b * p->heads + h) * n) * dvd,
          .dq = dq + ((b * p->heads + h) * n) * d,
          .dk = dk + ((b * p->kv_heads + hk) * m) * d,
          .dv = dv + ((b * p->kv_heads + hk) * m) * dvd,
          .dgate = dgate ? dgate + ((b * p->heads + h) * n) * nb : NULL,
          .lse = lse ? lse + (b * p->heads + h) * n : NULL,
          .c = c,
          .pr = pr,
          .vis = vis,
      };
      grad_head(p, b, h, &x);
      if (p->rope)
        attn_reference_rope_inverse_at(x.dq, n, d, p->rotary_dim, p->theta,
                                       p->interleaved, qpos, p->q_offset);
      // dk of a kv head is whole once its group's last head is done.
      if (p->rope && h % group == group - 1)
        attn_reference_rope_inverse_at(x.dk, m, d, p->rotary_dim, p->theta,
                                       p->interleaved, kpos, p->k_offset);
    }
  free(qh);
  free(kh);
  free(c);
  free(pr);
  free(vis);
  return ok;
}

/// sum(out * dout) of attn_reference; NaN when it fails. out: scratch.
static double loss(const struct attn_ref_problem *p, const double *q,
                   const double *k, const double *v, const double *dout,
                   double *out, size_t no) {
  if (!attn_reference(p, q, k, v, out))
    return NAN;
  double l = 0;
  for (size_t e = 0; e < no; ++e)
    l += out[e] * dout[e];
  return l;
}

bool attn_reference_capture_grad(const struct attn_ref_problem *p,
                                 const double *q, const double *k,
                                 const double *v, const double *dout,
                                 double *x, size_t n, double *grad) {
  if (!attn_ref_valid(p) || !q || !k || !v || !dout || (n && (!x || !grad)))
    return false;
  size_t no = (size_t)(p->batch * p->heads * p->seq_q * p->value_dim);
  double *out = malloc(sizeof(double) * (no ? no : 1));
  if (!out)
    return false;
  bool ok = true;
  for (size_t e = 0; ok && e < n; ++e) {
    double saved = x[e], h = 1e-6 * fmax(1.0, fabs(saved));
    x[e] = saved + h;
    double hi = loss(p, q, k, v, dout, out, no);
    x[e] = saved - h;
    double lo = loss(p, q, k, v, dout, out, no);
    x[e] = saved;
    ok = !isnan(hi) && !isnan(lo);
    grad[e] = (hi - lo) / (2.0 * h);
  }
  free(out);
  return ok;
}
