# rope_causal.py - attn.attention on CPU torch tensors (RoPE, causal, GQA 8/2)
# against the same attention in plain float64 torch. The README's Python
# example is this file from its import on (test/scripts/readme-python.test).
#
#   PYTHONPATH=python /usr/bin/python3 examples/rope_causal.py

import torch, attn

q = torch.randn(1, 8, 256, 64)                 # [batch, heads, seq, head_dim]
k = torch.randn(1, 2, 256, 64)                 # 2 key/value heads: GQA
v = torch.randn(1, 2, 256, 64)
o = attn.attention(q, k, v, rope=dict(theta=10000.0), mask="causal")

# the same thing in plain torch, in float64
def rope(x):
    half = x.shape[-1] // 2
    ang = torch.arange(x.shape[-2], dtype=torch.float64)[:, None] * \
          10000.0 ** (-torch.arange(half, dtype=torch.float64) / half)
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * ang.cos() - b * ang.sin(), b * ang.cos() + a * ang.sin()], -1)
qd, kd, vd = (t.double().repeat_interleave(q.shape[1] // t.shape[1], 1) for t in (q, k, v))
s = rope(qd) @ rope(kd).transpose(-1, -2) / 8.0
s = s.masked_fill(torch.ones(256, 256).triu(1).bool(), float("-inf"))
print("max error", (o.double() - s.softmax(-1) @ vd).abs().max().item())
print(attn.cache_stats())
