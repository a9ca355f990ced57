"""The shared residual forecaster of the Internal-DW comparison (issue 34)
and the training methods it is compared under.

    model = Forecaster(tb.d_in, tb.d_out, tb.window, controller=dw)
    preds = model(history, horizon)              # [n, horizon, d_out]
    result = train("dw", tb, seed=0, horizon=32)  # or bptt, clip, jacreg, tbptt

The forecaster encodes the history window into a state h0 (two layers) and
rolls it out: h(k+1) = blocks(h(k)), each block a DWResidual h + f(h)
(f: Linear, tanh, Linear), and reads each step's prediction out of h(k). It
is the same network under every method; the methods differ only in the
backward or the objective:

- "bptt": full backpropagation through the rollout;
- "dw": Internal-DW (attn.dw), the testbed's sampler as noise model, its
  futures' spread scaled by `sampler_scale` about their mean (1: the
  system's own drive);
- "clip": BPTT with the gradient's norm clipped to `clip`;
- "jacreg": BPTT of the loss plus `jac` times the blocks' squared Jacobian
  norm, ||f(h + eps v) - f(h)||^2 / eps^2 for a random unit-variance v
  (Hutchinson's estimate of ||J_f||_F^2 by finite differences), averaged
  over every fourth step of the rollout;
- "tbptt": the state detached every `truncate` steps (the forward values
  unchanged).

Every method: Adam (lr 3e-3), the same batches (the seed's), the same steps,
mean squared error over the horizon. The error reported is the RMSE over
the evaluation horizon on held-out windows, in the testbed's normalised
units (the targets' standard deviation is about 1).
"""
import math
import time

import torch

from . import InternalDW, DEFAULT_BOUNDS, DEFAULT_DECAY, DEFAULT_PROBES, DEFAULT_REDUCE

METHODS = ("bptt", "dw", "clip", "jacreg", "tbptt")
JAC_EPS = 1e-2
JAC_EVERY = 4      # the penalty's steps: every fourth (an unbiased sample of the rollout's)


def mse(preds, targets):
    return (preds - targets).pow(2).mean()


class Forecaster(torch.nn.Module):
    def __init__(self, d_in, d_out, window, hidden=32, blocks=1, controller=None):
        super().__init__()
        self.controller = controller if controller is not None else InternalDW(enabled=False)
        self.enc = torch.nn.Sequential(torch.nn.Linear(window * d_in, hidden), torch.nn.Tanh(),
                                       torch.nn.Linear(hidden, hidden))
        fs = []
        for _ in range(blocks):
            f = torch.nn.Sequential(torch.nn.Linear(hidden, hidden), torch.nn.Tanh(),
                                    torch.nn.Linear(hidden, hidden))
            with torch.no_grad():
                f[2].weight.mul_(0.1)     # a small residual at first: a stable rollout
                f[2].bias.zero_()
            fs.append(self.controller.wrap(f))
        self.blocks = torch.nn.ModuleList(fs)
        self.readout = torch.nn.Linear(hidden, d_out)

    def forward(self, history, horizon, truncate=None, jac_weight=0.0):
        """The rollout's predictions [n, horizon, d_out]; with jac_weight,
        (predictions, the Jacobian penalty)."""
        h = self.enc(history.flatten(1))
        preds, penalty = [], history.new_zeros(())
        for k in range(horizon):
            for b in self.blocks:
                if jac_weight and k % JAC_EVERY == 0:
                    v = torch.randn_like(h)
                    fh = b.f(h)
                    penalty = penalty + (b.f(h + JAC_EPS * v) - fh).pow(2).sum(-1).mean() \
                        / (JAC_EPS ** 2 * len(range(0, horizon, JAC_EVERY)) * len(self.blocks))
                h = b(h)
            preds.append(self.readout(h))
            if truncate and (k + 1) % truncate == 0:
                h = h.detach()
        preds = torch.stack(preds, 1)
        return (preds, penalty) if jac_weight else preds


def scaled_futures(futures, scale):
    if scale == 1.0:
        return futures
    m = futures.mean(0, keepdim=True)
    return m + scale * (futures - m)


def evaluate(model, data, horizon, batch=512):
    """RMSE over the first `horizon` steps, and per step, on data (on the
    model's device)."""
    dev = next(model.parameters()).device
    per = torch.zeros(horizon, dtype=torch.float64)
    model.eval()
    with torch.no_grad():
        for i in range(0, len(data), batch):
            d = data.take(slice(i, i + batch))
            e = (model(d.history.to(dev), horizon) - d.targets[:, :horizon].to(dev)).double()
            per += e.pow(2).mean(-1).sum(0).cpu()
    model.train()
    per /= len(data)
    return math.sqrt(float(per.mean())), per.sqrt().tolist()


def make_model(method, tb, seed, hidden=32, blocks=1, bounds=DEFAULT_BOUNDS,
               decay=DEFAULT_DECAY, probes=DEFAULT_PROBES, reduce=DEFAULT_REDUCE):
    torch.manual_seed(seed)
    dw = InternalDW(bounds=bounds, decay=decay, probes=probes, enabled=(method == "dw"),
                    reduce=reduce)
    return Forecaster(tb.d_in, tb.d_out, tb.window, hidden, blocks, dw), dw


def train(method, tb, seed, horizon=32, eval_horizon=None, steps=200, batch=64, lr=3e-3,
          data=None, clip=1e-2, jac=1e-1, truncate=8, sampler_scale=1.0,
          bounds=DEFAULT_BOUNDS, decay=DEFAULT_DECAY, probes=DEFAULT_PROBES, hidden=32,
          reduce=DEFAULT_REDUCE, device="cpu"):
    """Trains the forecaster on tb under `method`; returns a dict with the
    validation and test RMSE at eval_horizon (default: horizon), the test
    error per step, the training losses and, for "dw", the horizon profile
    of gradient magnitude, SNR and gains and the predicted reduction."""
    if method not in METHODS:
        raise ValueError("attn.dw.forecast: unknown method %r (one of %s)"
                         % (method, ", ".join(METHODS)))
    eval_horizon = eval_horizon or horizon
    if data is None:
        data = datasets(tb, seed, max(horizon, eval_horizon))
    train_d, val_d, test_d = data
    model, dw = make_model(method, tb, seed, hidden=hidden, bounds=bounds, decay=decay,
                           probes=probes, reduce=reduce)
    model.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(1000 + seed)
    sgen = torch.Generator().manual_seed(2000 + seed)
    losses, t0 = [], time.time()
    for step in range(steps):
        idx = torch.randint(0, len(train_d), (batch,), generator=gen)
        d = train_d.take(idx)
        history, targets = d.history.to(device), d.targets[:, :horizon].to(device)
        opt.zero_grad(set_to_none=True)
        if method == "dw":
            with dw.rollout():
                preds = model(history, horizon)
            futures = scaled_futures(tb.futures(d.state, dw.probes, horizon, sgen),
                                     sampler_scale).to(device)
            loss = dw.backward(preds, targets, futures, mse)
        elif method == "jacreg":
            preds, pen = model(history, horizon, jac_weight=jac)
            loss = mse(preds, targets)
            (loss + jac * pen).backward()
        else:
            preds = model(history, horizon, truncate=truncate if method == "tbptt" else None)
            loss = mse(preds, targets)
            loss.backward()
            if method == "clip":
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        losses.append(float(loss.detach()))
    out = dict(method=method, system=tb.name, setting=tb.setting, seed=seed, horizon=horizon,
               eval_horizon=eval_horizon, steps=steps, seconds=time.time() - t0,
               loss_first=losses[0], loss_last=sum(losses[-20:]) / len(losses[-20:]))
    out["val"], _ = evaluate(model, val_d, eval_horizon)
    out["test"], out["test_per_step"] = evaluate(model, test_d, eval_horizon)
    if method == "dw":
        out["profile"] = dw.horizon_profile()
        out["predicted_reduction"] = dw.predicted_reduction()
    out["_model"], out["_dw"] = model, dw
    return out


def datasets(tb, seed, horizon, n_train=2048, n_val=512, n_test=1024):
    """The seed's training, validation and test windows (disjoint seeds)."""
    return (tb.dataset(n_train, 10 * seed + 1, horizon), tb.dataset(n_val, 10 * seed + 2, horizon),
            tb.dataset(n_test, 10 * seed + 3, horizon))


def param_grad(model, loss):
    ps = [p for p in model.parameters()]
    gs = torch.autograd.grad(loss, ps, retain_graph=True, allow_unused=True)
    return torch.cat([(g if g is not None else torch.zeros_like(p)).flatten()
                      for g, p in zip(gs, ps)])


def recovery(model, dw, tb, data, horizon, batches=8, batch=64, seed=7, warmup=20,
             clip=1.0, truncate=8):
    """The known-SNR control's measurement: on held-out windows whose
    conditional mean targets are known (data.mean), the predictable
    gradient g* (full BPTT against the mean targets) and each method's
    estimate from the observed targets. Internal-DW's gains are first
    estimated on `warmup` batches of data (no parameter update). Returns
    {method: dict(rel_error=E||g - g*||^2 / E||g*||^2, cosine)}."""
    if data.mean is None:
        raise ValueError("attn.dw.forecast.recovery: the testbed has no known mean targets")
    gen = torch.Generator().manual_seed(seed)
    sgen = torch.Generator().manual_seed(seed + 1)
    n = len(data)

    def batch_of():
        return data.take(torch.randint(0, n, (batch,), generator=gen))

    was = dw.enabled
    dw.enabled = True
    for _ in range(warmup):
        d = batch_of()
        with dw.rollout():
            preds = model(d.history, horizon)
        dw.backward(preds, d.targets[:, :horizon],
                    tb.futures(d.state, dw.probes, horizon, sgen), mse)
    model.zero_grad(set_to_none=True)
    acc = {m: [0.0, 0.0] for m in ("bptt", "dw", "clip", "tbptt")}
    truth_sq = 0.0
    for _ in range(batches):
        d = batch_of()
        tgt, mean = d.targets[:, :horizon], d.mean[:, :horizon]
        dw.enabled = False
        preds = model(d.history, horizon)
        g_true = param_grad(model, mse(preds, mean))
        g_bptt = param_grad(model, mse(preds, tgt))
        norm = float(g_bptt.norm())
        g_clip = g_bptt * min(1.0, clip / (norm + 1e-6))
        g_tb = param_grad(model, mse(model(d.history, horizon, truncate=truncate), tgt))
        dw.enabled = True
        with dw.rollout():
            preds = model(d.history, horizon)
        with dw.applying():
            g_dw = param_grad(model, mse(preds, tgt))
        truth_sq += float(g_true.pow(2).sum())
        for m, g in (("bptt", g_bptt), ("dw", g_dw), ("clip", g_clip), ("tbptt", g_tb)):
            acc[m][0] += float((g - g_true).pow(2).sum())
            acc[m][1] += float(torch.nn.functional.cosine_similarity(g, g_true, 0))
    dw.enabled = was
    return {m: dict(rel_error=v[0] / truth_sq, cosine=v[1] / batches) for m, v in acc.items()}
