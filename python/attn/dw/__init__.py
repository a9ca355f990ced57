"""Internal-DW: backward-only Wiener routing of a residual rollout (issue 34).

    import attn.dw
    dw = attn.dw.InternalDW(bounds=(0.1, 1.0), decay=0.9)
    block = dw.wrap(nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 64)))
    ...
    with dw.rollout():                       # one forecast rollout
        preds = model(history, horizon)      # block(h) = h + f(h), at every step
    loss = dw.backward(preds, targets, futures, loss_fn)   # instead of loss.backward()

A residual block h' = h + f(h) has two routes back to h: the identity route
(dh' itself) and the nonlinear route (J_f^T dh'). Unrolled over a
forecast horizon, full BPTT carries every future loss back through both,
and the distant losses' gradients arrive with more noise than signal: their
targets depend on the part of the drive no history predicts. Internal-DW
keeps the forward (bit for bit: the wrapper computes h + f(h)) and every
horizon loss, and weights each route of each call (a block at one rollout
step) by a bounded Wiener gain

    a = clamp(S / (S + N), lo, hi),

S the route's signal power and N its noise power, running estimates:

- P, the mean square of the route's gradient in the ordinary backward
  (signal plus noise), and N, the mean square of the same route's gradient
  when the backward is driven by noise alone: the loss gradients of the
  sampler's alternative futures (the targets the same history could have
  had, under other draws of the drive's unpredictable part) less the loss
  gradient at their mean, combined with independent random signs per
  window and sent back in one backward (to the rollout's first state: no
  parameter gradient is computed); its mean square over K - 1 is an
  unbiased estimate of the noise variance from K draws;
- S = max(P - N, 0); both as exponential moving averages (decay), the first
  batch taken as is.

The gains of a step come from the statistics of the steps before it (the
first step is full BPTT). The parameters' gradients inside f are the
ordinary ones for the gradient that reaches the block (J_theta^T dh'): the
gains weight what flows on to earlier steps, not what the block learns
from the gradient it receives. The noise model is explicit and pluggable:
futures is any [K, *targets.shape] tensor; attn.dw.testbeds has samplers
that re-simulate a system's drive.

Logged per step (InternalDW.history, one dict a step): the loss, and for
each call the gradient's magnitude at the block's output (horizon-wise
gradient magnitude), the estimated SNR S / N of each route and its gain.

attn.dw.forecast holds a residual forecaster and the methods it is compared
with (full BPTT, gradient clipping, Jacobian regularisation, TBPTT);
bench/dw_compare.py the comparison (docs/internal-dw.md).
"""
import contextlib
import math

import torch

__all__ = ["InternalDW", "DWResidual", "RouteStats", "DEFAULT_BOUNDS", "DEFAULT_DECAY",
           "DEFAULT_PROBES"]

# Defaults (docs/internal-dw.md): gains in [0.1, 1] (a route is damped, never
# cut, never amplified), statistics averaged over about ten steps, four
# alternative futures a step.
DEFAULT_BOUNDS = (0.1, 1.0)
DEFAULT_DECAY = 0.9
DEFAULT_PROBES = 4
DEFAULT_REDUCE = "batch"
REDUCTIONS = ("sample", "batch", "coherent")

_OBSERVE, _PROBE, _APPLY, _OFF = "observe", "probe", "apply", "off"


class RouteStats:
    """The running statistics and the gain of one route of one call."""
    __slots__ = ("power", "noise", "gain", "_acc", "_n")

    def __init__(self):
        self.power = None     # P: mean square in the ordinary backward
        self.noise = None     # N: mean square driven by the noise probes
        self.gain = 1.0
        self._acc = {_OBSERVE: 0.0, _PROBE: 0.0}
        self._n = {_OBSERVE: 0, _PROBE: 0}

    @property
    def signal(self):
        if self.power is None or self.noise is None:
            return None
        return max(self.power - self.noise, 0.0)

    @property
    def snr(self):
        s = self.signal
        if s is None:
            return None
        return s / self.noise if self.noise > 0 else math.inf

    def _record(self, mode, grad, reduce):
        g = grad.detach().float()
        if reduce == "batch" and g.dim() > 1:
            g = g.mean(0)
        power = g.pow(2).mean()
        if reduce == "coherent" and mode == _PROBE and g.dim() > 1:
            power = power / g.shape[0]
        self._acc[mode] = self._acc[mode] + power
        self._n[mode] += 1

    def _update(self, decay, bounds, probe_correction):
        def ema(old, new):
            return new if old is None else decay * old + (1.0 - decay) * new
        if self._n[_OBSERVE]:
            self.power = ema(self.power, float(self._acc[_OBSERVE]) / self._n[_OBSERVE])
        if self._n[_PROBE]:
            self.noise = ema(self.noise,
                             probe_correction * float(self._acc[_PROBE]) / self._n[_PROBE])
        for m in self._acc:
            self._acc[m], self._n[m] = 0.0, 0
        s = self.signal
        if s is None:
            return
        total = s + self.noise
        a = s / total if total > 0 else 1.0
        self.gain = min(max(a, bounds[0]), bounds[1])


class _Route(torch.autograd.Function):
    """Identity forward; backward: records the route's gradient, then scales
    it by the route's gain (1 when routing is off)."""

    @staticmethod
    def forward(ctx, x, stats, controller):
        ctx.stats, ctx.controller = stats, controller
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        mode = ctx.controller._mode
        if mode == _OFF:
            return grad, None, None
        if mode != _APPLY:
            ctx.stats._record(mode, grad, ctx.controller.reduce)
        return grad * ctx.stats.gain, None, None


class DWResidual(torch.nn.Module):
    """h + f(h), its two routes back to h weighted by the controller's gains.

    The forward is the plain residual's, bit for bit. Each call inside a
    controller's rollout() is its own call index (its step of the rollout),
    with its own statistics and gains; outside a rollout, or with the
    controller disabled, the block is the plain residual."""

    def __init__(self, f, controller, name=None):
        super().__init__()
        self.f = f
        self._controller = controller
        self.block_id = name if name is not None else len(controller._blocks)
        controller._blocks.append(self)

    def forward(self, h):
        c = self._controller
        if not c.enabled or not c._in_rollout or not torch.is_grad_enabled():
            return h + self.f(h)
        call, ident, nonlin = c._slots(self.block_id)
        if call == 0 and h.requires_grad and not any(h is r for r in c._roots):
            c._roots.append(h)
        return _Route.apply(h, ident, c) + self.f(_Route.apply(h, nonlin, c))


class InternalDW:
    """The routes' statistics and gains of a set of DWResidual blocks.

    bounds: (lo, hi), 0 <= lo <= hi <= 1, the range of every gain; decay:
    the moving averages' decay in [0, 1); probes: the number K of
    alternative futures dw.backward expects (at least 2); enabled=False
    makes every block the plain residual (full BPTT) with the same code."""

    def __init__(self, bounds=DEFAULT_BOUNDS, decay=DEFAULT_DECAY, probes=DEFAULT_PROBES,
                 enabled=True, reduce=DEFAULT_REDUCE):
        lo, hi = bounds
        if not (0.0 <= lo <= hi <= 1.0):
            raise ValueError("attn.dw: bounds must satisfy 0 <= lo <= hi <= 1, got %r"
                             % (bounds,))
        if not (0.0 <= decay < 1.0):
            raise ValueError("attn.dw: decay must be in [0, 1), got %r" % (decay,))
        if int(probes) != probes or probes < 2:
            raise ValueError("attn.dw: probes must be an integer >= 2, got %r" % (probes,))
        self.bounds, self.decay, self.probes = (float(lo), float(hi)), float(decay), int(probes)
        if reduce not in REDUCTIONS:
            raise ValueError("attn.dw: reduce must be one of %s, got %r"
                             % (", ".join(map(repr, REDUCTIONS)), reduce))
        self.enabled, self.reduce = enabled, reduce
        self.history = []
        self.stats = {}          # (block_id, call, "identity" | "nonlinear") -> RouteStats
        self._blocks = []
        self._calls = {}
        self._in_rollout = False
        self._mode = _OFF
        self._roots = []         # the rollout's first inputs that require grad

    def wrap(self, f, name=None):
        """A DWResidual block h + f(h) under this controller."""
        return DWResidual(f, self, name)

    @contextlib.contextmanager
    def rollout(self):
        """One rollout: the blocks' calls inside it are numbered from 0."""
        self._calls, self._roots, self._in_rollout = {}, [], True
        try:
            yield self
        finally:
            self._in_rollout = False

    def _slots(self, block_id):
        call = self._calls.get(block_id, 0)
        self._calls[block_id] = call + 1
        out = []
        for route in ("identity", "nonlinear"):
            key = (block_id, call, route)
            if key not in self.stats:
                self.stats[key] = RouteStats()
            out.append(self.stats[key])
        return [call] + out

    @contextlib.contextmanager
    def applying(self):
        """Backward passes inside it (any autograd call) apply the current
        gains and record nothing: the routed gradient of any loss, for
        measurements (attn.dw.forecast.recovery)."""
        old, self._mode = self._mode, _APPLY
        try:
            yield self
        finally:
            self._mode = old

    def gains(self):
        """{(block_id, call, route): gain}."""
        return {k: s.gain for k, s in self.stats.items()}

    def backward(self, preds, targets, futures, loss_fn):
        """The training step's backward: loss_fn(preds, targets).backward()
        with the current gains (parameters' .grad accumulate as usual), then
        the noise probes (no .grad written), then the gains updated for the
        next step. futures: [K, *targets.shape], the sampler's alternative
        targets. Returns the loss (detached)."""
        if futures.shape[1:] != targets.shape or futures.shape[0] < 2:
            raise ValueError("attn.dw.backward: futures must be [K >= 2, %s], got %s"
                             % (", ".join(map(str, targets.shape)), tuple(futures.shape)))
        loss = loss_fn(preds, targets)
        if not self.enabled:
            loss.backward()
            self.history.append(dict(loss=float(loss.detach())))
            return loss.detach()
        k = futures.shape[0]
        # The noise-only injection at the predictions: the loss gradients at
        # the alternative futures less the one at their mean, combined with
        # independent random signs per window, sum_j s_j e_j. Its routes'
        # mean square is, in expectation over the signs, sum_j of the
        # e_j's, (k - 1) times the noise variance: one backward for all k.
        p = preds.detach().requires_grad_(True)
        with torch.enable_grad():
            mean_grad = torch.autograd.grad(loss_fn(p, futures.mean(0)), p)[0]
            signs = torch.randint(0, 2, (k, preds.shape[0]) + (1,) * (preds.dim() - 1),
                                  device=preds.device).to(preds.dtype) * 2 - 1
            injection = sum(signs[j] * (torch.autograd.grad(loss_fn(p, futures[j]), p)[0]
                                        - mean_grad) for j in range(k))
        self._mode = _OBSERVE
        try:
            loss.backward(retain_graph=True)
            self._mode = _PROBE
            torch.autograd.grad(preds, self._probe_inputs(), grad_outputs=injection,
                                allow_unused=True)
        finally:
            self._mode = _OFF
        for s in self.stats.values():
            s._update(self.decay, self.bounds, 1.0 / (k - 1.0))
        self.history.append(self._log(float(loss.detach())))
        return loss.detach()

    def _probe_inputs(self):
        # What the probe backward differentiates for (the result is dropped;
        # no .grad is written): the rollout's first inputs when they require
        # grad (an encoder's state: every call's two routes lie on the way
        # back to them, and no parameter gradient is computed), else the
        # blocks' parameters.
        if self._roots:
            return self._roots
        ps = [p for b in self._blocks for p in b.parameters() if p.requires_grad]
        if not ps:
            raise ValueError("attn.dw.backward: nothing in the rollout requires grad")
        return ps

    def _log(self, loss):
        calls = {}
        for (block, call, route), s in self.stats.items():
            c = calls.setdefault((block, call), {})
            c[route] = dict(gain=s.gain, snr=s.snr, power=s.power, noise=s.noise)
        return dict(loss=loss, calls=calls)

    def horizon_profile(self, block_id=None):
        """Per call (rollout step), for one block (the first by default): the
        gradient magnitude at its output (sqrt of the identity route's P),
        the SNR and gain of both routes; a list ordered by call."""
        if block_id is None:
            if not self._blocks:
                return []
            block_id = self._blocks[0].block_id
        rows = []
        call = 0
        while (block_id, call, "identity") in self.stats:
            i = self.stats[(block_id, call, "identity")]
            n = self.stats[(block_id, call, "nonlinear")]
            rows.append(dict(call=call,
                             grad_rms=None if i.power is None else math.sqrt(i.power),
                             snr_identity=i.snr, snr_nonlinear=n.snr,
                             gain_identity=i.gain, gain_nonlinear=n.gain))
            call += 1
        return rows

    def predicted_reduction(self):
        """The estimator's predicted reliability: the fraction of the routes'
        gradient error (against their signal) that the current gains remove
        if S and N are exact. Unweighted, a route's error is N; weighted by a
        it is (1 - a)^2 S + a^2 N. Returns sum(N - that) / sum(N) over the
        routes with statistics (0: nothing gained; the Wiener gain of a route
        at S = N removes half), or None before any."""
        num = den = 0.0
        for s in self.stats.values():
            sig = s.signal
            if sig is None:
                continue
            a = s.gain
            num += s.noise - ((1.0 - a) ** 2 * sig + a * a * s.noise)
            den += s.noise
        return None if den == 0 else num / den
