"""flex_attention's idioms written as attn.attention's score_mod / mask_mod,
and their float64 reference: the same functions called on the full score
matrix (torch broadcasting the index tensors b, h, q_idx, kv_idx), as flex
computes them. Used by mods_text.test (the traced text), mods_cpu.test and
mods_cuda.test (the kernels against the reference)."""
import math

import torch


def reference(q, k, v, score_mod=None, mask_mod=None, scale=None, mask=None, rope=None):
    """softmax(mask(score_mod(q kᵀ scale))) v in float64, RoPE (a dict of
    torch_reference.rope's options) on q and k first; a query that sees no
    key outputs 0 (lib/Reference's rule)."""
    # On q's device: the functions read captured tensors that live there.
    dev = q.device
    q, k, v = (t.to(torch.float64) for t in (q, k, v))
    if rope is not None:
        import torch_reference
        q = torch_reference.rope(q.cpu(), **rope).to(dev)
        k = torch_reference.rope(k.cpu(), **rope).to(dev)
    B, H, N, D = q.shape
    Hk, M = k.shape[1], k.shape[2]
    k = k.repeat_interleave(H // Hk, dim=1)
    v = v.repeat_interleave(H // Hk, dim=1)
    s = q @ k.transpose(-1, -2) * (1.0 / math.sqrt(D) if scale is None else scale)
    b = torch.arange(B, device=dev).view(B, 1, 1, 1)
    h = torch.arange(H, device=dev).view(1, H, 1, 1)
    qi = torch.arange(N, device=dev).view(1, 1, N, 1)
    ki = torch.arange(M, device=dev).view(1, 1, 1, M)
    if score_mod is not None:
        s = torch.as_tensor(score_mod(s, b, h, qi, ki)).to(torch.float64).expand(B, H, N, M)
    visible = torch.ones(B, H, N, M, dtype=torch.bool, device=dev)
    if mask_mod is not None:
        visible = visible & torch.as_tensor(mask_mod(b, h, qi, ki)).expand(B, H, N, M)
    if mask == "causal":
        visible = visible & (ki <= qi)
    s = s.masked_fill(~visible, float("-inf"))
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    return (p @ v).cpu()


def rel_error(got, want):
    got = got.cpu().to(torch.float64)
    return ((got - want).norm() / want.norm().clamp_min(1e-300)).item()


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def cases(device, gen):
    """(name, shapes (q, k, v), dtype, attention's keyword arguments) of each idiom."""
    def rand(*shape):
        return torch.randn(*shape, generator=gen).to(device)

    out = []
    S = ((1, 2, 37, 16), (1, 2, 37, 16), (1, 2, 37, 16))

    def relative_position(score, b, h, q_idx, kv_idx):
        return score + 0.1 * (q_idx - kv_idx)
    out.append(("relative_position", S, torch.float32, dict(score_mod=relative_position)))

    H = 4
    slopes = torch.tensor([2.0 ** (-8.0 * (i + 1) / H) for i in range(H)]).to(device)

    def alibi(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx)
    out.append(("alibi", ((1, H, 40, 16), (1, H, 40, 16), (1, H, 40, 16)), torch.float32,
                dict(score_mod=alibi, mask_mod=causal)))

    cap = 1.5

    def softcap(score, b, h, q_idx, kv_idx):
        score = score / cap
        score = torch.tanh(score)
        return score * cap
    out.append(("softcap", S, torch.float32, dict(score_mod=softcap, scale=0.5)))

    window = 5

    def sliding_window(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx <= window)
    out.append(("sliding_window", S, torch.float32, dict(mask_mod=sliding_window)))

    prefix = 9

    def prefix_lm(b, h, q_idx, kv_idx):
        return (kv_idx <= prefix) | (q_idx >= kv_idx)
    out.append(("prefix_lm", S, torch.float32, dict(mask_mod=prefix_lm)))

    prefix_lengths = torch.tensor([3, 20], dtype=torch.int64).to(device)

    def prefix_lm_per_batch(b, h, q_idx, kv_idx):
        return (kv_idx < prefix_lengths[b]) | causal(b, h, q_idx, kv_idx)
    out.append(("prefix_lm_per_batch", ((2, 2, 30, 16), (2, 2, 30, 16), (2, 2, 30, 16)),
                torch.float32, dict(mask_mod=prefix_lm_per_batch)))

    document_id = torch.tensor([0] * 10 + [1] * 17 + [2] * 10, dtype=torch.int32).to(device)

    def document(b, h, q_idx, kv_idx):
        return causal(b, h, q_idx, kv_idx) & (document_id[q_idx] == document_id[kv_idx])
    out.append(("document", S, torch.float32, dict(mask_mod=document)))

    N = 37
    rel_bias = rand(2 * N - 1)

    def bias_table(score, b, h, q_idx, kv_idx):
        return score + rel_bias[q_idx - kv_idx + N - 1]
    out.append(("bias_table", S, torch.float32, dict(score_mod=bias_table)))

    head_bias = rand(2, 37, 37).to(torch.bfloat16)

    def full_bias(score, b, h, q_idx, kv_idx):
        return score + head_bias[h, q_idx, kv_idx]
    out.append(("full_bias_bf16", S, torch.float32, dict(score_mod=full_bias)))

    keep = torch.rand(37, generator=gen).to(device) > 0.3  # a padding mask, bool

    def padding(b, h, q_idx, kv_idx):
        return keep[kv_idx]
    out.append(("padding_bool", S, torch.float32, dict(mask_mod=padding)))

    # GQA, cross attention (N != M), f16, with the named causal mask.
    gqa = ((1, 8, 24, 32), (1, 2, 50, 32), (1, 2, 50, 24))
    table = rand(8, 50).to(torch.float16)

    def per_head_key_bias(score, b, h, q_idx, kv_idx):
        return score + table[h, kv_idx].float() * 0.5
    out.append(("gqa_cross_f16", gqa, torch.float16,
                dict(score_mod=per_head_key_bias, mask=None)))

    def integer_tricks(score, b, h, q_idx, kv_idx):
        blocks = (q_idx // 4 - kv_idx // 4).abs()
        odd = (kv_idx % 3 == 1)
        return torch.where(odd, score - 0.25 * blocks, score * 2.0) + (h + b) * 0.125
    out.append(("integer_tricks", S, torch.float32,
                dict(score_mod=integer_tricks, mask="causal")))

    def float_ops(score, b, h, q_idx, kv_idx):
        x = torch.clamp(score, -1.0, 1.0) + torch.sigmoid(score) * torch.exp(-score.abs())
        return torch.maximum(x, score.float() ** 2 - 2) + torch.sqrt(kv_idx + 1.0) * 0.01
    out.append(("float_ops", S, torch.float32,
                dict(score_mod=float_ops, mask_mod=lambda b, h, q, kv: ~(kv > q + 3))))
    return out


CORNER_SHAPES = ((2, 3, 21, 8), (2, 3, 26, 8), (2, 3, 26, 8))


def corners(device):
    """(name, score_mod, mask_mod) for the corners of torch's semantics the
    tracer reproduces: // and % toward -inf for either sign and traced
    divisors, bool and integer promotion, truncating .long(), bit
    operations, integer powers, where and clamp, math functions, -inf,
    clamped capture reads."""
    d = torch.tensor([5, -3, 0, 7, -8, 2], dtype=torch.int64).to(device)
    out = [
        ("int floordiv and mod, both signs",
         lambda s, b, h, q, k: s + (q - k) // 3 + (q - k) % 3 + (q - k) // -4 + (q - k) % -4),
        ("traced divisors", lambda s, b, h, q, k: s + (q - k) // (k * 2 - 41)
         + (q - k) % (k * 2 - 41) + q // (k + 1) + torch.remainder(q - 30, k + 1)),
        ("float floordiv and mod", lambda s, b, h, q, k: s // 0.7 + s % 0.7 + s % -1.3
         + torch.floor_divide(s, -0.9) + torch.div(s, 0.3, rounding_mode="floor")
         + torch.div(s, -0.3, rounding_mode="trunc")
         + torch.div(q - k, 4, rounding_mode="trunc")
         + (q - k).div(-3, rounding_mode="floor")),
        ("bool promotion", lambda s, b, h, q, k: s * (q > k) + True + ((q > k) < (k > 5)) * 2
         + (q >= k) + (h == 1)),
        ("bits", lambda s, b, h, q, k: s + ((q ^ k) & 7 | (h << 2) >> 1) - (~(q - k))
         + torch.bitwise_and(q, 5)),
        ("truncation", lambda s, b, h, q, k: (s * 3).long() + (s * -2.5).int() * 0.5
         + s.bool() + (s > 0).float() * 0.25),
        ("powers", lambda s, b, h, q, k: (q - k) ** 3 * 0.001 + s ** 2 + s.abs() ** 0.5
         + torch.pow(s.abs(), 1.5) + (q - k) ** 0 + s.square()),
        ("where and clamp", lambda s, b, h, q, k: torch.where(q > k, q, k * 0.5)
         + torch.clamp(q - k, min=-3, max=3) + s.clamp(max=1.0) + torch.clip(s, -0.5)
         + torch.where(k % 2 == 0, s, -s)),
        ("math", lambda s, b, h, q, k: torch.sigmoid(s) + torch.erf(s) + torch.exp2(s * 0.1)
         + torch.log1p(s.abs()) + torch.rsqrt(s.abs() + 1) + torch.sin(s) * torch.cos(s)
         + torch.copysign(s, q - k - 0.5) + torch.log2(k + 1.0)
         + torch.ceil(s) - torch.floor(s)
         + torch.maximum(s, q * 0.1) - torch.minimum(s, k * 1.0) + torch.relu(s)
         + torch.special.expit(s) + s.tanh() + s.exp() * 0.01
         + torch.sqrt(s.abs()) + torch.log(s.abs() + 1)),
        ("-inf and captures", lambda s, b, h, q, k: torch.where(d[(q - k) % 6] > 0, s,
                                                                float("-inf")) + d[h + b] * 0.5),
        ("clamp as an index", lambda s, b, h, q, k: s + d[torch.clamp(q - k, 0, 5)]),
        ("logical mask", None, lambda b, h, q, k: torch.logical_xor(q > 3, k > 3)
         | torch.logical_and(q == k, torch.logical_not(h == 2)) | (d[b + 3] == 7)),
        ("negative and not", None, lambda b, h, q, k: ~((q - k).abs() > 4) ^ (k % 5 == 0)),
    ]
    return [e if len(e) == 3 else e + (None,) for e in out]


TOL = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 2e-2}


def check(device, name, shapes, dtype, kw, gen):
    """attn.attention on device against the reference: PASS, FAIL or the
    compiler's first diagnostic."""
    import attn
    q, k, v = (torch.randn(s, generator=gen).to(device=device, dtype=dtype) for s in shapes)
    try:
        o = attn.attention(q, k, v, **kw)
    except attn.CompileError as e:
        print("%s: CompileError %s" % (name, str(e).splitlines()[0]))
        return
    want = reference(q, k, v, kw.get("score_mod"), kw.get("mask_mod"), kw.get("scale"),
                     kw.get("mask"))
    err = rel_error(o, want)
    print("%s: %s" % (name, "PASS" if err <= TOL[dtype] else "FAIL rel_error=%.3e" % err))


def run(device):
    """What mods_cpu.test and mods_cuda.test print."""
    import attn
    gen = torch.Generator().manual_seed(5)
    for name, shapes, dtype, kw in cases(device, gen):
        check(device, name, shapes, dtype, kw, gen)
        # Tiles smaller than the sequences: padding rows and keys inside a tile.
        check(device, name + " (16x16 tiles)", shapes, dtype,
              dict(kw, tile_options="block-m=16 block-n=16"), gen)
    for name, score_mod, mask_mod in corners(device):
        check(device, name, CORNER_SHAPES, torch.float32,
              dict(score_mod=score_mod, mask_mod=mask_mod), gen)

    # Named modifiers with the mods: softcap and causal, then score_mod.
    q, k, v = (torch.randn(1, 2, 30, 16, generator=gen).to(device) for _ in range(3))
    bias = [torch.randn(59, generator=gen).to(device)]

    def rel(score, b, h, q_idx, kv_idx):
        return score + bias[0][q_idx - kv_idx + 29]

    o = attn.attention(q, k, v, softcap=4.0, mask="causal", score_mod=rel)
    err = rel_error(o, reference(q, k, v, lambda s, b, h, qi, ki: rel(
        4.0 * torch.tanh(s / 4.0), b, h, qi, ki), mask="causal"))
    print("softcap then score_mod: %s" % ("PASS" if err <= 1e-4 else "FAIL %.3e" % err))

    # Every input at once: RoPE, the gate and segment ids (inputs before the
    # captures), a score_mod and a mask_mod with captures of their own.
    g = torch.randn(1, 2, 30, 4, generator=gen).to(device)
    seg = torch.tensor([[0] * 10 + [1] * 12 + [2] * 8], dtype=torch.int32).to(device)
    keep = (torch.arange(30) % 7 != 3).to(device)
    o = attn.attention(q, k, v, rope=dict(theta=500.0), gate=(g, 8), segment_ids=(seg, seg),
                       score_mod=rel, mask_mod=lambda b, h, q_idx, kv_idx: keep[kv_idx])
    want = reference(
        q, k, v, lambda s, b, h, qi, ki: rel(s + g[b, h, qi, ki // 8], b, h, qi, ki),
        lambda b, h, qi, ki: keep[ki] & (seg[b, qi] == seg[b, ki]),
        rope=dict(theta=500.0))
    err = rel_error(o, want)
    print("rope, gate, segments and mods: %s" % ("PASS" if err <= 1e-4 else "FAIL %.3e" % err))

    # The cached call: one compile, the captured tensor read at each call.
    stats = attn.cache_stats()
    o1 = attn.attention(q, k, v, score_mod=rel, mask_mod=causal)
    bias[0].mul_(-1.0)  # in place
    o2 = attn.attention(q, k, v, score_mod=rel, mask_mod=causal)
    want2 = reference(q, k, v, rel, causal)
    bias[0] = torch.randn(59, generator=gen).to(device)  # replaced in the list rel reads
    o3 = attn.attention(q, k, v, score_mod=rel, mask_mod=causal)
    want3 = reference(q, k, v, rel, causal)
    after = attn.cache_stats()
    print("cached: compiles +%d, in place %s, replaced %s" % (
        after["compiles"] - stats["compiles"],
        "PASS" if rel_error(o2, want2) <= 1e-4 and not torch.equal(o1, o2) else "FAIL",
        "PASS" if rel_error(o3, want3) <= 1e-4 else "FAIL"))
