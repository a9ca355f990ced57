"""Attention in float64 in plain Python, straight from the definition (the
semantics of lib/Reference): RoPE, GQA, scale/softcap/alibi/gate in program
order, causal/window/document masks; a query that sees no key outputs 0."""
import math


def _rope(x, n, d, rope, heads):
    theta = rope.get("theta", 10000.0)
    r = rope.get("rotary_dim", d)
    inter = rope.get("layout", "rotate_half") == "interleaved"
    off = rope.get("offset", 0)
    out = list(x)
    half = r // 2
    for row in range(len(x) // d):
        pos = off + row % n
        base = row * d
        for i in range(half):
            ang = pos * theta ** (-2.0 * i / r)
            c, s = math.cos(ang), math.sin(ang)
            a, b = (2 * i, 2 * i + 1) if inter else (i, i + half)
            x1, x2 = x[base + a], x[base + b]
            out[base + a] = x1 * c - x2 * s
            out[base + b] = x2 * c + x1 * s
    return out


def attention(q, k, v, qs, ks, vs, rope=None, causal=False, window=None, scale=None,
              mods=(), softcap=None, alibi=None, gate=None, gate_block=None, segments=None):
    """q, k, v: flat lists of shapes qs, ks, vs. mods: the order of 'softcap',
    'alibi', 'gate' after scale. gate: flat [B, H, N, ceil(M/bs)]; segments:
    (flat qseg [B, N], flat kseg [B, M]). Returns the flat output."""
    B, H, N, D = qs
    Hk, M, Dv = ks[1], ks[2], vs[3]
    if rope:
        rope = {} if rope is True else rope
        q = _rope(q, N, D, rope, H)
        k = _rope(k, M, D, rope, Hk)
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    nb = -(-M // gate_block) if gate_block else 0
    out = [0.0] * (B * H * N * Dv)
    for b in range(B):
        for h in range(H):
            hk = h // (H // Hk)
            for i in range(N):
                qrow = q[((b * H + h) * N + i) * D:][:D]
                scores = []
                for j in range(M):
                    if causal and j > i:
                        continue
                    if window is not None:
                        left, right = window
                        if (left is not None and left >= 0 and j < i - left) or \
                           (right is not None and right >= 0 and j > i + right):
                            continue
                    if segments and segments[0][b * N + i] != segments[1][b * M + j]:
                        continue
                    krow = k[((b * Hk + hk) * M + j) * D:][:D]
                    s = sum(x * y for x, y in zip(qrow, krow)) * scale
                    for m in mods:
                        if m == "softcap":
                            s = softcap * math.tanh(s / softcap)
                        elif m == "alibi":
                            s -= 2.0 ** (-alibi * (h + 1) / H) * abs(i - j)
                        elif m == "gate":
                            s += gate[((b * H + h) * N + i) * nb + j // gate_block]
                    scores.append((j, s))
                if not scores:
                    continue
                top = max(s for _, s in scores)
                w = [(j, math.exp(s - top)) for j, s in scores]
                z = sum(x for _, x in w)
                for c in range(Dv):
                    out[((b * H + h) * N + i) * Dv + c] = sum(
                        x * v[((b * Hk + hk) * M + j) * Dv + c] for j, x in w) / z
    return out


def rel_error(got, want):
    num = math.sqrt(sum((a - b) ** 2 for a, b in zip(got, want)))
    den = math.sqrt(sum(b * b for b in want)) or 1.0
    return num / den if all(math.isfinite(a) for a in got) else float("nan")
