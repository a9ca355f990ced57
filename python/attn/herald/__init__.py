"""Herald: a prefill-time harm probe from cross-layer activation trajectories
(issue 35).

    import attn.herald as herald
    probe = herald.Herald.fit(states, labels)     # states [n, L, d]: last-token states
    probe.train_classifier(states, labels)        # the 288-parameter MLP on the features
    p = probe.predict_proba(states)               # P(harmful) per prompt
    with probe.attach(model.layers) as run:       # read while the prefill runs
        model(prompt_ids)
    p = run.proba()
    with probe.intervene(model.layers, layer=probe.peak_layer(states, labels)):
        model.generate(...)                        # the harm direction zero-projected

The probe, as the seed describes it (docs/herald.md has every definition):

1. per layer l, a linear discriminant direction w_l from labelled
   last-token states (closed form: the shrunk pooled within-class
   covariance's inverse applied to the difference of the class means,
   Ledoit-Wolf shrinkage towards a scaled identity; solved through the
   n x n Gram matrix when there are fewer samples than dimensions), unit
   norm, with the midpoint of the two classes' mean projections and their
   pooled standard deviation;
2. the trajectory: z_l = (w_l . h_l - midpoint_l) / scale_l over the
   layers, for each prompt's last-token states h_l;
3. seven features of the trajectory (features()): level, slope,
   curvature, monotonicity, onset, peak and peak depth;
4. a 7 -> 32 -> 1 MLP (tanh; 288 parameters: 7 x 32 + 32 + 32) on the
   standardised features, trained with Adam on the logistic loss.

Save and load (save(path), Herald.load(path)): the directions in float16
(32 x 4096 of them: 262,144 bytes), the per-layer midpoint and scale, the
feature standardisation and the MLP, in one torch file. fit() rounds the
directions to float16 before anything uses them, so a loaded probe
computes what the saved one did.
"""
import contextlib
import math

import torch

__all__ = ["Herald", "lda_direction", "features", "read_states", "FEATURES", "HIDDEN"]

FEATURES = ("level", "slope", "curvature", "monotonicity", "onset", "peak", "peak_depth")
HIDDEN = 32
ONSET_Z = 1.0


def _check_states(states, labels=None):
    if not isinstance(states, torch.Tensor) or states.dim() != 3:
        raise ValueError("attn.herald: states must be a [n, layers, d] tensor, got %s"
                         % ((tuple(states.shape),) if isinstance(states, torch.Tensor)
                            else type(states).__name__))
    if labels is not None:
        if not isinstance(labels, torch.Tensor) or labels.shape != (states.shape[0],):
            raise ValueError("attn.herald: labels must be a [n] tensor of 0 and 1 beside "
                             "states [n, layers, d]")
        ones = int((labels == 1).sum())
        zeros = int((labels == 0).sum())
        if ones + zeros != labels.numel():
            raise ValueError("attn.herald: labels must be 0 (harmless) or 1 (harmful)")
        if ones < 2 or zeros < 2:
            raise ValueError("attn.herald: at least 2 prompts of each class are needed, got "
                             "%d harmful and %d harmless" % (ones, zeros))


def lda_direction(x, y):
    """The linear discriminant direction of one layer: x [n, d] (float64 is
    used inside), y [n] in {0, 1}. Returns (w unit [d], shrinkage alpha).
    w = S^-1 (mu1 - mu0), S = (1 - alpha) C + alpha (tr C / d) I with C the
    pooled within-class covariance and alpha Ledoit-Wolf's estimate."""
    x = x.double()
    y = y.bool()
    mu1, mu0 = x[y].mean(0), x[~y].mean(0)
    xc = torch.cat([x[y] - mu1, x[~y] - mu0])            # within-class residuals [n, d]
    n, d = xc.shape
    dof = max(n - 2, 1)
    gram = xc @ xc.T                                       # [n, n]
    # Ledoit-Wolf on S = X^T X / n: beta = sum_i ||x_i x_i^T - S||_F^2 / n^2,
    # delta = ||S - mu I||_F^2, alpha = min(1, beta / delta); all through
    # the Gram matrix.
    sq = torch.diagonal(gram)                              # ||x_i||^2
    s_fro2 = float((gram ** 2).sum()) / n ** 2             # ||S||_F^2
    mu = float(sq.sum()) / (n * d)                         # tr S / d
    xsx = (gram ** 2).sum(1) / n                           # x_i^T S x_i
    beta = float((sq ** 2 - 2 * xsx + s_fro2).sum()) / n ** 2
    delta = s_fro2 - d * mu * mu
    alpha = 1.0 if delta <= 0 else min(1.0, max(0.0, beta / delta))
    diff = mu1 - mu0
    scale = float(sq.sum()) / (dof * d)                    # tr C / d
    c = alpha * scale
    if c <= 0:
        c = 1e-12 * max(scale, 1e-300)
    # (c I + U U^T)^-1 diff, U = sqrt((1 - alpha) / dof) xc^T: Woodbury, an
    # n x n system (n <= d), or the d x d one.
    k = (1.0 - alpha) / dof
    if n <= d:
        inner = c * torch.eye(n, dtype=x.dtype) + k * gram
        t = torch.linalg.solve(inner, k * (xc @ diff))
        w = (diff - xc.T @ t) / c
    else:
        cov = k * (xc.T @ xc) + c * torch.eye(d, dtype=x.dtype)
        w = torch.linalg.solve(cov, diff)
    norm = float(w.norm())
    if not math.isfinite(norm) or norm == 0:
        raise ValueError("attn.herald: the two classes' means coincide at a layer: no "
                         "direction to learn")
    return w / norm, alpha


def features(z):
    """The seven features of trajectories z [n, L] (L >= 3), as a [n, 7]
    tensor in FEATURES' order. With t_l = l / (L - 1) the depth in [0, 1]:
    level: mean of z; slope: the least-squares slope of z on t; curvature:
    the second-order coefficient of the least-squares quadratic in
    (t - 1/2); monotonicity: (#rises - #falls) / (L - 1) of consecutive
    steps; onset: the smallest t_l with z above ONSET_Z (1: one pooled
    standard deviation above the midpoint) at l and l + 1 (at the last
    layer: at l), 1 when there is none; peak: max z; peak_depth: t at the
    max."""
    if z.dim() != 2 or z.shape[1] < 3:
        raise ValueError("attn.herald.features: trajectories must be [n, L >= 3], got %s"
                         % (tuple(z.shape),))
    z = z.double()
    n, L = z.shape
    t = torch.linspace(0.0, 1.0, L, dtype=z.dtype)
    tc = t - 0.5
    level = z.mean(1)
    slope = ((z - level[:, None]) * tc).sum(1) / (tc * tc).sum()
    basis = torch.stack([torch.ones_like(tc), tc, tc * tc], 1)      # [L, 3]
    coef = torch.linalg.lstsq(basis, z.T).solution                  # [3, n]
    curvature = coef[2]
    dz = z[:, 1:] - z[:, :-1]
    mono = ((dz > 0).double().sum(1) - (dz < 0).double().sum(1)) / (L - 1)
    # onset: the first layer at which z exceeds ONSET_Z and stays above it
    # at the next layer too (the last layer counts alone): a crossing, not
    # a single noisy excursion.
    above = z > ONSET_Z
    held = torch.cat([above[:, :-1] & above[:, 1:], above[:, -1:]], 1)
    first = torch.where(held.any(1), held.double().argmax(1).double() / (L - 1),
                        torch.ones(n, dtype=z.dtype))
    peak, arg = z.max(1)
    return torch.stack([level, slope, curvature, mono, first, peak,
                        arg.double() / (L - 1)], 1)


def _last_token(out):
    h = out[0] if isinstance(out, (tuple, list)) else out
    if not isinstance(h, torch.Tensor) or h.dim() != 3:
        raise ValueError("attn.herald: a hooked layer must return [batch, tokens, d] (or a "
                         "tuple starting with it), got %s"
                         % ((tuple(h.shape),) if isinstance(h, torch.Tensor) else type(h).__name__))
    return h


class _Run:
    """The states one prefill read (stacked() [batch, L, d]); with a probe,
    its proba() / trajectory() / features() of them."""

    def __init__(self, probe, n_layers):
        self.probe = probe
        self.states = [None] * n_layers

    def stacked(self):
        if any(s is None for s in self.states):
            raise ValueError("attn.herald: the attached prefill did not run every hooked layer")
        return torch.stack(self.states, 1)

    def trajectory(self):
        return self.probe.trajectory(self.stacked())

    def features(self):
        return self.probe.features(self.stacked())

    def proba(self):
        return self.probe.predict_proba(self.stacked())


@contextlib.contextmanager
def read_states(layers, last_index=None, probe=None):
    """Reads each layer's last-token state while a prefill runs: forward
    hooks on `layers` (the model's L blocks, in order, each returning
    [batch, tokens, d] or a tuple starting with it), which only read.
    last_index: [batch] positions of each prompt's last token (left- or
    right-padded batches); default the last position. Yields a run whose
    stacked() are the states ([batch, L, d]: what fit() takes)."""
    layers = list(layers)
    run = _Run(probe, len(layers))
    handles = []

    def hook_for(i):
        def hook(module, inputs, out):
            h = _last_token(out)
            if last_index is None:
                run.states[i] = h[:, -1].detach()
            else:
                idx = last_index.to(h.device).long()
                run.states[i] = h[torch.arange(h.shape[0], device=h.device), idx].detach()
            return None
        return hook
    try:
        for i, layer in enumerate(layers):
            handles.append(layer.register_forward_hook(hook_for(i)))
        yield run
    finally:
        for h in handles:
            h.remove()


class Herald:
    """The fitted probe: directions [L, d] (float32 in memory, float16 when
    saved), midpoint and scale [L], the shrinkage per layer, the features'
    mean and std, and the MLP (None before train_classifier)."""

    def __init__(self, directions, midpoint, scale, shrinkage=None):
        self.directions = directions.float()
        self.midpoint = midpoint.float()
        self.scale = scale.float()
        self.shrinkage = shrinkage
        self.feature_mean = None
        self.feature_std = None
        self.mlp = None

    @property
    def layers(self):
        return self.directions.shape[0]

    @classmethod
    def fit(cls, states, labels):
        """Fits every layer's direction from last-token states [n, L, d] and
        labels [n] (1 harmful, 0 harmless)."""
        _check_states(states, labels)
        y = labels.bool()
        dirs, mids, scales, alphas = [], [], [], []
        for layer in range(states.shape[1]):
            x = states[:, layer].double()
            w, alpha = lda_direction(x, y)
            # Kept at float16 precision, as saved: the midpoint, the scale and
            # the classifier see the directions a loaded probe has.
            w = w.half().double()
            p = x @ w
            m1, m0 = p[y].mean(), p[~y].mean()
            if m1 < m0:               # harmful projects above the midpoint
                w, p, m1, m0 = -w, -p, -m1, -m0
            var = (((p[y] - m1) ** 2).sum() + ((p[~y] - m0) ** 2).sum()) / max(len(p) - 2, 1)
            dirs.append(w)
            mids.append((m1 + m0) / 2)
            scales.append(var.sqrt().clamp_min(1e-12))
            alphas.append(alpha)
        return cls(torch.stack(dirs), torch.stack(mids), torch.stack(scales), alphas)

    def _check(self, states):
        _check_states(states)
        if states.shape[1:] != self.directions.shape:
            raise ValueError("attn.herald: states [n, %d, %d] expected by this probe, got %s"
                             % (self.layers, self.directions.shape[1], tuple(states.shape)))

    def trajectory(self, states):
        """z [n, L]: each layer's standardised projection."""
        self._check(states)
        d = self.directions.to(states.device, torch.float32)
        p = torch.einsum("nld,ld->nl", states.float(), d)
        return (p - self.midpoint.to(p.device)) / self.scale.to(p.device)

    def features(self, states):
        return features(self.trajectory(states).cpu())

    def _mlp_input(self, states):
        f = self.features(states).float()
        return (f - self.feature_mean) / self.feature_std

    def train_classifier(self, states, labels, steps=500, lr=1e-2, weight_decay=1e-4, seed=0):
        """Trains the 288-parameter MLP on the standardised features of
        states (full batch, Adam, logistic loss). Returns the last loss."""
        _check_states(states, labels)
        f = self.features(states).float()
        self.feature_mean = f.mean(0)
        self.feature_std = f.std(0).clamp_min(1e-6)
        x = (f - self.feature_mean) / self.feature_std
        y = labels.float()
        g = torch.Generator().manual_seed(seed)
        lin1 = torch.nn.Linear(len(FEATURES), HIDDEN)
        lin2 = torch.nn.Linear(HIDDEN, 1, bias=False)
        with torch.no_grad():
            for p in list(lin1.parameters()) + list(lin2.parameters()):
                p.copy_(torch.randn(p.shape, generator=g) * (1.0 / math.sqrt(p.shape[-1])))
        self.mlp = torch.nn.Sequential(lin1, torch.nn.Tanh(), lin2)
        opt = torch.optim.Adam(self.mlp.parameters(), lr=lr, weight_decay=weight_decay)
        loss = None
        for _ in range(steps):
            opt.zero_grad()
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                self.mlp(x).squeeze(1), y)
            loss.backward()
            opt.step()
        return float(loss.detach())

    def predict_proba(self, states):
        if self.mlp is None:
            raise ValueError("attn.herald: the classifier is not trained (train_classifier)")
        with torch.no_grad():
            return torch.sigmoid(self.mlp(self._mlp_input(states)).squeeze(1))

    def predict(self, states, threshold=0.5):
        return (self.predict_proba(states) >= threshold).long()

    def peak_layer(self, states, labels):
        """The layer of peak monotonicity: the layer l >= 1 into which the
        most harmful prompts' z rises (the fraction whose z rises from l - 1
        to l minus the fraction whose z falls; ties: the earlier layer)."""
        _check_states(states, labels)
        z = self.trajectory(states)[labels.bool()]
        dz = z[:, 1:] - z[:, :-1]
        rise = (dz > 0).float().mean(0) - (dz < 0).float().mean(0)
        return int(torch.argmax(rise).item()) + 1

    def parameters_count(self):
        return 0 if self.mlp is None else sum(p.numel() for p in self.mlp.parameters())

    def save(self, path):
        """Directions in float16 (fit() keeps them at that precision); the
        rest in float32."""
        if self.mlp is None:
            raise ValueError("attn.herald.save: train the classifier first")
        torch.save(dict(format="attn.herald/1", directions=self.directions.half(),
                        midpoint=self.midpoint, scale=self.scale,
                        feature_mean=self.feature_mean, feature_std=self.feature_std,
                        mlp=self.mlp.state_dict()), path)

    @classmethod
    def load(cls, path):
        try:
            d = torch.load(path, map_location="cpu")
        except OSError:
            raise
        except Exception as e:          # (a file torch cannot read: pickle's errors vary)
            raise ValueError("attn.herald.load: %s is not a saved Herald probe: %s"
                             % (path, e)) from None
        if not isinstance(d, dict) or d.get("format") != "attn.herald/1":
            raise ValueError("attn.herald.load: %s is not a saved Herald probe" % path)
        h = cls(d["directions"].float(), d["midpoint"], d["scale"])
        h.feature_mean, h.feature_std = d["feature_mean"], d["feature_std"]
        h.mlp = torch.nn.Sequential(torch.nn.Linear(len(FEATURES), HIDDEN), torch.nn.Tanh(),
                                    torch.nn.Linear(HIDDEN, 1, bias=False))
        h.mlp.load_state_dict(d["mlp"])
        return h

    def direction_bytes(self):
        return self.directions.numel() * 2

    @contextlib.contextmanager
    def attach(self, layers, last_index=None):
        """read_states() on this probe's L layers: the run's proba(),
        trajectory() and features() read the states the prefill left."""
        layers = list(layers)
        if len(layers) != self.layers:
            raise ValueError("attn.herald.attach: %d layers given, the probe has %d"
                             % (len(layers), self.layers))
        with read_states(layers, last_index, probe=self) as run:
            yield run

    @contextlib.contextmanager
    def intervene(self, layers, layer):
        """Zero-projects the harm direction of layer `layer` (an index, or a
        list of them) out of that layer's output at every token
        (h - (h . w) w), as forward hooks, while the context is open."""
        layers = list(layers)
        which = [layer] if isinstance(layer, int) else list(layer)
        if len(layers) != self.layers or not which or any(
                not isinstance(i, int) or not 0 <= i < len(layers) for i in which):
            raise ValueError("attn.herald.intervene: layer %r of %d (the probe has %d)"
                             % (layer, len(layers), self.layers))

        def hook_for(w):
            def hook(module, inputs, out):
                h = _last_token(out)
                u = w.to(h.device, h.dtype)
                new = h - (h @ u)[..., None] * u
                if isinstance(out, tuple):
                    return (new,) + tuple(out[1:])
                if isinstance(out, list):
                    return [new] + list(out[1:])
                return new
            return hook
        handles = []
        try:
            for i in which:
                handles.append(layers[i].register_forward_hook(hook_for(self.directions[i])))
            yield
        finally:
            for h in handles:
                h.remove()
