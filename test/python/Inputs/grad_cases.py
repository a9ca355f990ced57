"""attn.attention's gradients (issue 29): each case runs attention on
tensors that require grad, backward on a random dO, and compares o, dq, dk
and dv with float64 autograd through the torch references
(torch_reference.attention for the named blocks, mods_cases.reference for
score_mod / mask_mod: the same functions on the full score matrix). Used by
autograd_cpu.test and autograd_cuda.test."""
import torch

import mods_cases
import torch_reference


def _rel(got, want):
    got = got.detach().cpu().to(torch.float64)
    want = want.detach().cpu()
    return ((got - want).norm() / want.norm().clamp_min(1e-300)).item()


def _named_cases(device, gen):
    """(name, shapes (q, k, v), dtype, attention's keyword arguments) of
    the named blocks: everything attn-grad differentiates."""
    S = ((2, 4, 45, 16), (2, 4, 45, 16), (2, 4, 45, 16))
    G = ((1, 8, 40, 32), (1, 2, 40, 32), (1, 2, 40, 32))
    out = [
        ("plain", S, torch.float32, dict()),
        ("causal", S, torch.float32, dict(mask="causal")),
        ("rope_causal_gqa", G, torch.float32, dict(rope=dict(theta=10000.0), mask="causal")),
        ("rope_interleaved_partial_offset", S, torch.float32,
         dict(rope=dict(theta=500.0, rotary_dim=8, layout="interleaved", offset=7))),
        ("softcap_scale", S, torch.float32, dict(softcap=2.0, scale=0.4, mask="causal")),
        ("alibi", S, torch.float32, dict(alibi=8.0, mask="causal")),
        ("window", S, torch.float32, dict(window=(6, 2))),
        ("cross_dv", ((1, 2, 20, 16), (1, 2, 53, 16), (1, 2, 53, 24)), torch.float32, dict()),
    ]
    g = torch.randn(2, 4, 45, 6, generator=gen).to(device)  # a constant log-gate per 8 keys
    out.append(("gate_constant", S, torch.float32, dict(gate=(g, 8), mask="causal")))
    qs = torch.tensor([[0] * 20 + [1] * 25, [0] * 5 + [1] * 40], dtype=torch.int32).to(device)
    out.append(("segment_ids", S, torch.float32, dict(segment_ids=(qs, qs), mask="causal")))
    pos = torch.randint(0, 300, (2, 45), generator=gen).to(device)
    out.append(("rope_positions", S, torch.float32,
                dict(rope=dict(q_positions=pos, k_positions=pos), mask="causal")))
    return out


def _reference_named(q, k, v, kw):
    rope = kw.get("rope")
    if isinstance(rope, dict) and "q_positions" in rope:
        rope = dict(positions=rope["q_positions"].cpu())
        qd = torch_reference.rope(q, **rope)
        kd = torch_reference.rope(k, **rope)
        return torch_reference.attention(qd, kd, v, None, **{n: x for n, x in kw.items()
                                                             if n != "rope"})
    gate = kw.get("gate")
    seg = kw.get("segment_ids")
    rest = {n: x for n, x in kw.items() if n not in ("rope", "gate", "segment_ids")}
    return torch_reference.attention(
        q, k, v, rope, gate=None if gate is None else (gate[0].cpu(), gate[1]),
        segment_ids=None if seg is None else (seg[0].cpu(), seg[1].cpu()), **rest)


def check(device, name, shapes, dtype, kw, gen, reference, tol):
    """o, dq, dk, dv of attn against float64 autograd through reference:
    PASS or FAIL with the relative errors."""
    import attn
    q, k, v = (torch.randn(s, generator=gen).to(device=device, dtype=dtype).requires_grad_()
               for s in shapes)
    o = attn.attention(q, k, v, **kw)
    dout = torch.randn(o.shape, generator=gen).to(device=device, dtype=dtype)
    o.backward(dout)
    qd, kd, vd = (t.detach().cpu().to(torch.float64).requires_grad_() for t in (q, k, v))
    want = reference(qd, kd, vd)
    want.backward(dout.cpu().to(torch.float64))
    errs = [_rel(o, want), _rel(q.grad, qd.grad), _rel(k.grad, kd.grad), _rel(v.grad, vd.grad)]
    ok = all(e < tol for e in errs) and o.grad_fn is not None
    print("%s: %s" % (name, "PASS" if ok else "FAIL o=%.2e dq=%.2e dk=%.2e dv=%.2e" % tuple(errs)))


def _tol(dtype):
    return 1e-4 if dtype == torch.float32 else 3e-2


def run(device, half=()):
    """What autograd_cpu.test and autograd_cuda.test print; half: the
    reduced-precision dtypes to run the named cases in too (CUDA)."""
    gen = torch.Generator().manual_seed(29)
    for name, shapes, dtype, kw in _named_cases(device, gen):
        for dt in (dtype,) + tuple(half):
            label = name if dt == dtype else "%s %s" % (name, str(dt).replace("torch.", ""))
            check(device, label, shapes, dt, kw, gen,
                  lambda q, k, v, kw=kw: _reference_named(q, k, v, kw), _tol(dt))
        if not half:
            check(device, name + " (16x16 tiles)", shapes, dtype,
                  dict(kw, tile_options="block-m=16 block-n=16"), gen,
                  lambda q, k, v, kw=kw: _reference_named(q, k, v, kw), _tol(dtype))
    for name, shapes, dtype, kw in mods_cases.cases(device, gen):
        check(device, name, shapes, dtype, kw, gen,
              lambda q, k, v, kw=kw: mods_cases.reference(
                  q.to(device), k.to(device), v.to(device), kw.get("score_mod"),
                  kw.get("mask_mod"), kw.get("scale"), kw.get("mask")), _tol(dtype))
    captured_grads(device)
    refusals(device)


def captured_grads(device):
    """Gradients into the gate's g and into tensors score_mod captures
    (issue 29), against torch's autograd of the same attention in float64:
    a gate (float32, and float16 with f16 q, k, v: its gradient comes back
    in its dtype),
    a relative-position table read at two indices with a per-head slope
    that does not train, the table alone training (q, k, v detached), and
    a cached call whose table starts requiring grad after a detached one
    (the fast path's key does not know it: the full path runs)."""
    import attn
    gen = torch.Generator().manual_seed(29)
    S = (1, 2, 16, 8)

    def leaf(shape, dtype=torch.float32, grad=True):
        return torch.randn(shape, generator=gen).to(dtype).to(device).requires_grad_(grad)

    def ref(q, k, v, g=None, table=None, slope=None):
        q, k, v = (t.detach().double().cpu().requires_grad_() for t in (q, k, v))
        s = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
        i = torch.arange(16)[:, None]
        j = torch.arange(16)[None, :]
        gd = None
        if g is not None:
            gd = g.detach().double().cpu().requires_grad_()
            s = s + gd[:, :, i, j // 8]  # g[b, h, i, j / block]
        td = None
        if table is not None:
            td = table.detach().double().cpu().requires_grad_()
            sl = slope.double().cpu()[None, :, None, None]
            s = (s + td[i - j + 15]) * (1 + sl) + td[j]
        o = s.softmax(-1) @ v
        return o, q, k, v, gd, td

    def report(name, pairs, tol=1e-4):
        worst = max(_rel(got, want) for got, want in pairs) if pairs else float("inf")
        print("%s: %s" % (name, "PASS" if worst < tol else "FAIL %.3e" % worst))

    for gdt in (torch.float32, torch.float16):
        q, k, v = leaf(S, gdt), leaf(S, gdt), leaf(S, gdt)
        g = leaf((1, 2, 16, 2), gdt)
        o = attn.attention(q, k, v, gate=(g, 8))
        dout = torch.randn(o.shape, generator=gen).to(gdt).to(device)
        o.backward(dout)
        r, rq, rk, rv, rg, _ = ref(q, k, v, g=g)
        r.backward(dout.double().cpu())
        ok = g.grad is not None and g.grad.dtype == gdt
        report("dgate (%s)" % str(gdt)[6:], [(q.grad, rq.grad), (k.grad, rk.grad),
                                              (g.grad.float(), rg.grad)] if ok else [],
               1e-4 if gdt == torch.float32 else 1e-2)
    q, k, v = leaf(S), leaf(S), leaf(S)
    table = leaf(31)
    slope = torch.rand(2, generator=gen).to(device)

    def rel_table(s, b, h, i, j):
        return (s + table[i - j + 15]) * (1 + slope[h]) + table[j]
    o = attn.attention(q, k, v, score_mod=rel_table)
    dout = torch.randn(o.shape, generator=gen).to(device)
    o.backward(dout)
    r, rq, _, _, _, rt = ref(q, k, v, table=table, slope=slope)
    r.backward(dout.double().cpu())
    report("table read twice", [(q.grad, rq.grad), (table.grad, rt.grad)])
    table.grad = None
    qd, kd, vd = (t.detach() for t in (q, k, v))
    o = attn.attention(qd, kd, vd, score_mod=rel_table)
    o.backward(dout)
    report("table alone trains", [(table.grad, rt.grad)])
    bias = leaf(16, grad=False)

    def read_bias(s, b, h, i, j):
        return s + bias[j]
    attn.attention(qd, kd, vd, score_mod=read_bias)  # detached: cached forward
    bias.requires_grad_()
    o = attn.attention(qd, kd, vd, score_mod=read_bias)
    o.sum().backward()
    s0 = qd.double().cpu() @ kd.double().cpu().transpose(-1, -2) * 8 ** -0.5
    bd = bias.detach().double().cpu().requires_grad_()
    ((s0 + bd).softmax(-1) @ vd.double().cpu()).sum().backward()
    report("cached call, table starts training", [(bias.grad, bd.grad)])


def refusals(device):
    """What attn refuses rather than return a wrong or missing gradient."""
    import attn
    S = (1, 2, 16, 8)
    q, k, v = (torch.randn(S).to(device).requires_grad_() for _ in range(3))
    limit = torch.zeros(16, device=device, requires_grad=True)
    try:
        attn.attention(q, k, v, mask_mod=lambda b, h, i, j: limit[j] >= 0)
        print("mask_mod capture requires grad: no error")
    except ValueError as e:
        print("mask_mod capture requires grad: ValueError %s" % e)
    o = attn.attention(q, k, v, mask="causal")
    (gq,) = torch.autograd.grad(o.sum(), q, create_graph=True)
    try:
        gq.sum().backward()
        print("double backward: no error")
    except RuntimeError as e:
        print("double backward: RuntimeError %s" % str(e).splitlines()[0])
    with torch.no_grad():
        o = attn.attention(q, k, v)
    print("no_grad: grad_fn %s" % o.grad_fn)
    o = attn.attention(q.detach(), k.detach(), v.detach())
    print("detached: grad_fn %s" % o.grad_fn)
