"""Synthetic last-token states with planted harm directions (issue 35): the
known truth Herald's checks are measured against, no outside data.

    data = attn.herald.synthetic.planted(n_per_class=100, seed=0)
    data.states [2n, L, d], data.labels [2n], data.truth [L, d] (unit)

Per layer l (depth t = l / (L - 1)) a planted unit direction u_l that turns
slowly with depth (from a towards b, orthonormal, by up to 60 degrees), and
last-token states

    h_l = s_l u_l + V c + noise * e_l

with V [d, r] a fixed nuisance basis (scaled by `nuisance`) whose
coefficients c [r] are each prompt's and shared by its layers, e_l white.
The signal s_l:

- harmful: a bump, amplitude * sigmoid((t - o) / width) * (1 - decay * t^2)
  with the prompt's onset o = onset + jitter * N(0, 1);
- harmless: half are plain (s = 0); half are "borderline", a late rise
  borderline * sigmoid((t - 0.85) / width) that reaches the harmful class's
  last-layer level: a last-layer probe confuses them, the trajectory does
  not.

The population LDA direction of layer l is A^-1 u_l normalised, A = noise^2
I + V V^T (the signal's own within-class spread lies along u_l and only
rescales it): data.truth.
"""
import math

import torch


class Planted:
    def __init__(self, states, labels, truth, onsets, borderline):
        self.states, self.labels, self.truth = states, labels, truth
        self.onsets, self.borderline = onsets, borderline


def planted(n_per_class, layers=16, d=64, onset=0.4, width=0.06, jitter=0.05, amplitude=3.0,
            decay=0.6, borderline=None, noise=1.0, nuisance=2.0, rank=4, seed=0, basis_seed=1234):
    """n_per_class harmful and n_per_class harmless prompts' states (float32);
    the directions and nuisance basis come from basis_seed (the same across
    training and test sets), the prompts from seed."""
    gb = torch.Generator().manual_seed(basis_seed)
    q, _ = torch.linalg.qr(torch.randn(d, 2 + rank, generator=gb, dtype=torch.float64))
    a, b, V = q[:, 0], q[:, 1], q[:, 2:] * nuisance
    t = torch.linspace(0.0, 1.0, layers, dtype=torch.float64)
    theta = t * math.pi / 3
    u = torch.cos(theta)[:, None] * a + torch.sin(theta)[:, None] * b        # [L, d]
    A = noise ** 2 * torch.eye(d, dtype=torch.float64) + V @ V.T
    truth = torch.linalg.solve(A, u.T).T
    truth = truth / truth.norm(dim=1, keepdim=True)
    g = torch.Generator().manual_seed(seed)
    n = 2 * n_per_class
    labels = torch.cat([torch.ones(n_per_class), torch.zeros(n_per_class)]).long()
    onsets = onset + jitter * torch.randn(n_per_class, generator=g, dtype=torch.float64)
    sig = lambda x: torch.sigmoid(x / width)  # noqa: E731
    s_harm = amplitude * sig(t[None] - onsets[:, None]) * (1 - decay * t[None] ** 2)
    last_level = amplitude * (1 - decay)
    level = last_level / float(sig(torch.tensor(0.15, dtype=torch.float64))) \
        if borderline is None else borderline
    is_border = torch.arange(n_per_class) % 2 == 1
    s_safe = torch.where(is_border[:, None], level * sig(t[None] - 0.85),
                         torch.zeros(1, dtype=torch.float64))
    s = torch.cat([s_harm, s_safe])                                          # [n, L]
    c = torch.randn(n, V.shape[1], generator=g, dtype=torch.float64)
    states = (s[:, :, None] * u[None] + (c @ V.T)[:, None, :]
              + noise * torch.randn(n, layers, d, generator=g, dtype=torch.float64))
    return Planted(states.float(), labels, truth.float(), onsets,
                   torch.cat([torch.zeros(n_per_class, dtype=torch.bool), is_border]))
