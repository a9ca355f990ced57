"""Attention in float64 with plain torch ops, the semantics of lib/Reference:
RoPE, GQA, scale/softcap/alibi/gate in program order, causal/window/document
masks; a query that sees no key outputs 0."""
import math

import torch


def rope(x, theta=10000.0, rotary_dim=None, layout="rotate_half", offset=0, positions=None):
    """x [B, H, N, D] rotated: row r at position offset + r, or at
    positions[b, r] (a [B, N] tensor) when given."""
    x = x.clone()
    n, d = x.shape[-2], x.shape[-1]
    r = d if rotary_dim is None else rotary_dim
    half = r // 2
    if positions is None:
        pos = torch.arange(offset, offset + n, dtype=torch.float64)
    else:
        pos = positions.to(torch.float64)[:, None, :]  # [B, 1, N]: every head
    inv = theta ** (-2.0 * torch.arange(half, dtype=torch.float64) / r)
    ang = pos[..., None] * inv
    c, s = torch.cos(ang), torch.sin(ang)
    if layout == "interleaved":
        a, b = x[..., 0:r:2].clone(), x[..., 1:r:2].clone()
        x[..., 0:r:2], x[..., 1:r:2] = a * c - b * s, b * c + a * s
    else:
        a, b = x[..., :half].clone(), x[..., half:r].clone()
        x[..., :half], x[..., half:r] = a * c - b * s, b * c + a * s
    return x


def attention(q, k, v, rope_cfg=None, mask=None, window=None, softcap=None, alibi=None,
              gate=None, segment_ids=None, scale=None, order=("softcap", "alibi", "gate")):
    q, k, v = (t.to(torch.float64) for t in (q, k, v))
    B, H, N, D = q.shape
    Hk, M = k.shape[1], k.shape[2]
    if rope_cfg is not None:
        cfg = {} if rope_cfg is True else rope_cfg
        q, k = rope(q, **cfg), rope(k, **cfg)
    k = k.repeat_interleave(H // Hk, dim=1)
    v = v.repeat_interleave(H // Hk, dim=1)
    s = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(D) if scale is None else scale)
    i = torch.arange(N)[:, None]
    j = torch.arange(M)[None, :]
    for m in order:
        if m == "softcap" and softcap is not None:
            s = softcap * torch.tanh(s / softcap)
        elif m == "alibi" and alibi is not None:
            slopes = 2.0 ** (-alibi * torch.arange(1, H + 1, dtype=torch.float64) / H)
            s = s - slopes[None, :, None, None] * (i - j).abs()[None, None]
        elif m == "gate" and gate is not None:
            g, bs = gate
            s = s + g.to(torch.float64).repeat_interleave(bs, dim=-1)[..., :M]
    visible = torch.ones(B, H, N, M, dtype=torch.bool)
    if mask == "causal":
        visible &= (j <= i)[None, None]
    if window is not None:
        left, right = window
        if left is not None and left >= 0:
            visible &= (j >= i - left)[None, None]
        if right is not None and right >= 0:
            visible &= (j <= i + right)[None, None]
    if segment_ids is not None:
        qs, ks = segment_ids
        visible &= (qs[:, None, :, None] == ks[:, None, None, :])
    s = s.masked_fill(~visible, float("-inf"))
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    return p @ v


def rel_error(got, want):
    got = got.to(torch.float64)
    return ((got - want).norm() / want.norm().clamp_min(1e-300)).item()
