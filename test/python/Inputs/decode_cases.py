"""attn.decode's cases, run on the CPU (decode.test) or CUDA
(decode_cuda.test): each against a float64 torch reference written here
from the definition (gather each sequence's keys, bottom-right causal
mask, RoPE on q at its positions), then the errors."""
import math

import torch

import attn

TOL = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 2e-2}


def rope_rows(x, pos, theta, rdim, interleaved):
    """x [..., D] float64 rotated at positions pos (broadcast over x's rows)."""
    half = rdim // 2
    i = torch.arange(half, dtype=torch.float64)
    ang = pos[..., None].double() * theta ** (-2.0 * i / rdim)
    c, s = torch.cos(ang), torch.sin(ang)
    y = x.clone()
    a = (2 * torch.arange(half)) if interleaved else torch.arange(half)
    b = a + 1 if interleaved else a + half
    x1, x2 = x[..., a], x[..., b]
    y[..., a] = x1 * c - x2 * s
    y[..., b] = x2 * c + x1 * s
    return y


def reference(q, kc, vc, lens, table, causal=True, scale=None, softcap=None, alibi=None,
              window=None, rope=None):
    q, kc, vc = q.double().cpu(), kc.double().cpu(), vc.double().cpu()
    lens = lens.cpu().tolist()
    b, h, nq, d = q.shape
    hk = kc.shape[1]
    g = h // hk
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    out = torch.zeros(b, h, nq, vc.shape[3], dtype=torch.float64)
    for s in range(b):
        n = lens[s]
        if table is None:
            k, v = kc[s, :, :n], vc[s, :, :n]
        else:
            ps = kc.shape[2]
            pages = table[s].cpu().tolist()[:(n + ps - 1) // ps]
            k = torch.cat([kc[p] for p in pages], 1)[:, :n]
            v = torch.cat([vc[p] for p in pages], 1)[:, :n]
        k = k.repeat_interleave(g, 0)
        v = v.repeat_interleave(g, 0)
        pos = torch.arange(nq) + n - nq
        qq = q[s]
        if rope:
            r = {} if rope is True else rope
            qq = rope_rows(qq, pos, r.get("theta", 10000.0), r.get("rotary_dim", d),
                           r.get("layout") == "interleaved")
        sc = qq @ k.transpose(-1, -2) * scale
        if softcap:
            sc = softcap * torch.tanh(sc / softcap)
        j = torch.arange(n)
        if alibi:
            slope = 2.0 ** (-alibi * (torch.arange(h, dtype=torch.float64) + 1) / h)
            sc = sc - slope[:, None, None] * (pos[:, None] - j[None, :]).abs().double()
        vis = torch.ones(nq, n, dtype=torch.bool)
        if causal:
            vis &= j[None, :] <= pos[:, None]
        if window:
            left, right = window
            if left >= 0:
                vis &= j[None, :] >= pos[:, None] - left
            if right >= 0:
                vis &= j[None, :] <= pos[:, None] + right
        sc = sc.masked_fill(~vis, float("-inf"))
        p = torch.softmax(sc, -1).nan_to_num(0.0)
        out[s] = p @ v
    return out


def make(device, dtype, b, h, hk, nq, d, keys, page=None, seed=0):
    """Random q and caches, lengths in [nq, keys] (the first full), and for
    a paged cache a shuffled table with -1 past each sequence's pages."""
    gen = torch.Generator().manual_seed(seed)
    lens = [keys] + [int(x) for x in torch.randint(nq, keys + 1, (b - 1,), generator=gen)]
    q = torch.randn(b, h, nq, d, generator=gen).to(dtype)
    if page is None:
        kc = torch.randn(b, hk, keys, d, generator=gen).to(dtype)
        vc = torch.randn(b, hk, keys, d, generator=gen).to(dtype)
        table = None
    else:
        mp = (keys + page - 1) // page
        npages = b * mp + 3
        kc = torch.randn(npages, hk, page, d, generator=gen).to(dtype)
        vc = torch.randn(npages, hk, page, d, generator=gen).to(dtype)
        perm = torch.randperm(npages, generator=gen).tolist()
        table = torch.full((b, mp), -1, dtype=torch.int32)
        nxt = 0
        for s in range(b):
            for e in range((lens[s] + page - 1) // page):
                table[s, e] = perm[nxt]
                nxt += 1
        table = table.to(device)
    lens = torch.tensor(lens, dtype=torch.int32, device=device)
    return q.to(device), kc.to(device), vc.to(device), lens, table


CASES = [
    ("contiguous_mha", torch.float16, dict(b=3, h=4, hk=4, nq=1, d=64, keys=200), {}),
    ("contiguous_gqa_rope", torch.bfloat16, dict(b=2, h=8, hk=2, nq=3, d=128, keys=150),
     dict(rope=True)),
    ("paged16_softcap", torch.float16, dict(b=3, h=8, hk=2, nq=1, d=64, keys=100, page=16),
     dict(softcap=15.0)),
    ("paged64_spec_alibi_window", torch.bfloat16,
     dict(b=2, h=4, hk=1, nq=8, d=128, keys=300, page=64),
     dict(alibi=4.0, window=(60, -1))),
    ("paged16_interleaved_noncausal", torch.float16,
     dict(b=2, h=2, hk=1, nq=2, d=64, keys=70, page=16),
     dict(causal=False, rope=dict(theta=500.0, layout="interleaved"))),
]


# Chunked prefill (more than 16 query rows a sequence).
CHUNK_CASES = [
    ("chunk_contiguous_gqa_rope", torch.float16, dict(b=3, h=8, hk=2, nq=20, d=64, keys=120),
     dict(rope=True)),
    ("chunk_paged16_alibi_window_softcap", torch.bfloat16,
     dict(b=2, h=4, hk=1, nq=24, d=128, keys=100, page=16),
     dict(softcap=20.0, alibi=4.0, window=(30, -1),
          rope=dict(layout="interleaved", rotary_dim=32))),
    ("chunk_paged64_noncausal", torch.float16, dict(b=2, h=2, hk=2, nq=40, d=64, keys=150,
                                                    page=64), dict(causal=False)),
]

# Appending (k_new, v_new written into the caches in the same launch):
# (name, dtype, make's shape, new rows, decode's options).
APPEND_CASES = [
    ("append_contiguous_gqa_rope", torch.bfloat16,
     dict(b=3, h=8, hk=2, nq=1, d=128, keys=150), 1, dict(rope=dict(theta=500000.0))),
    ("append_paged16_spec_interleaved", torch.float16,
     dict(b=2, h=4, hk=2, nq=4, d=64, keys=100, page=16), 4,
     dict(rope=dict(layout="interleaved", rotary_dim=32), softcap=20.0)),
    ("append_paged64_chunk_mha", torch.bfloat16,
     dict(b=2, h=2, hk=2, nq=1, d=128, keys=200, page=64), 6, {}),
]


def appended(kc, vc, lens, table, kn, vn, rope):
    """float64 copies of the caches with k_new (rotated at its positions
    where rope applies) and v_new written as rows len - N + i, and which
    (sequence or page, row) were written."""
    kr, vr = kc.double().cpu(), vc.double().cpu()
    written = torch.zeros(kc.shape[0], kc.shape[2], dtype=torch.bool)
    n = kn.shape[2]
    d = kn.shape[3]
    for s, length in enumerate(lens.cpu().tolist()):
        pos = torch.arange(n) + length - n
        k = kn[s].double().cpu()
        if rope:
            r = {} if rope is True else rope
            k = rope_rows(k, pos, r.get("theta", 10000.0), r.get("rotary_dim", d),
                          r.get("layout") == "interleaved")
        for i, p in enumerate(pos.tolist()):
            if table is None:
                blk, row = s, p
            else:
                ps = kc.shape[2]
                blk, row = int(table[s, p // ps]), p % ps
            kr[blk, :, row] = k[:, i]
            vr[blk, :, row] = vn[s, :, i].double().cpu()
            written[blk, row] = True
    return kr, vr, written


FAILED = []


def verdict(name, ok, err=None):
    """PASS, or FAIL (recorded in FAILED: the tests exit 1 on any)."""
    if ok:
        return "PASS"
    FAILED.append(name)
    return "FAIL" if err is None else "FAIL %.3e" % err


def rel(a, b):
    return ((a - b).norm() / b.norm()).item()


def run(device):
    for name, dtype, shape, opts in CASES:
        q, kc, vc, lens, table = make(device, dtype, **shape)
        o = attn.decode(q, kc, vc, cache_seqlens=lens, block_table=table, **opts)
        want = reference(q, kc, vc, lens, table, **opts)
        e = rel(o.double().cpu(), want)
        print("%s: %s %s rel_error<tol %s" % (name, tuple(o.shape), str(o.dtype),
                                             verdict(name, e < TOL[dtype], e)))
    for name, dtype, shape, n, opts in APPEND_CASES:
        q, kc, vc, lens, table = make(device, dtype, **shape)
        gen = torch.Generator().manual_seed(7)
        kn = torch.randn(shape["b"], shape["hk"], n, shape["d"], generator=gen).to(dtype)
        vn = torch.randn(shape["b"], shape["hk"], n, shape["d"], generator=gen).to(dtype)
        kn, vn = kn.to(device), vn.to(device)
        kr, vr, written = appended(kc, vc, lens, table, kn, vn, opts.get("rope"))
        o = attn.decode(q, kc, vc, cache_seqlens=lens, block_table=table, k_new=kn, v_new=vn,
                        **opts)
        want = reference(q, kr, vr, lens, table, **opts)
        e = rel(o.double().cpu(), want)
        # The written rows of k_cache within its rounding, every other row
        # and all of v_cache exactly as expected.
        got_k = kc.double().cpu().permute(0, 2, 1, 3)
        want_k = kr.permute(0, 2, 1, 3)
        ek = rel(got_k[written], want_k[written])
        rest = (got_k[~written] - want_k[~written]).abs().max().item()
        ev = (vc.double().cpu() - vr).abs().max().item()
        ok = e < TOL[dtype] and ek < TOL[dtype] / 4 and rest == 0 and ev == 0
        print("%s: %s out, new k rows rel_error<tol, the rest and v_cache exact %s"
              % (name, tuple(o.shape), verdict(name, ok, max(e, ek, rest, ev))))
    # Chunked prefill: more query rows than the decode kernel takes (16) go
    # through attn.attention's prefill kernels over the same cache.
    for name, dtype, shape, opts in CHUNK_CASES:
        q, kc, vc, lens, table = make(device, dtype, **shape)
        o = attn.decode(q, kc, vc, cache_seqlens=lens, block_table=table, **opts)
        e = rel(o.double().cpu(), reference(q, kc, vc, lens, table, **opts))
        print("%s: %s %s rel_error<tol %s" % (name, tuple(o.shape), str(o.dtype),
                                             verdict(name, e < TOL[dtype], e)))
    # A chunk appended and attended: 32 new keys, their 32 queries.
    q, kc, vc, lens, table = make(device, torch.bfloat16, b=2, h=4, hk=2, nq=32, d=64,
                                  keys=96, page=16)
    gen = torch.Generator().manual_seed(9)
    kn = torch.randn(2, 2, 32, 64, generator=gen).to(torch.bfloat16).to(device)
    vn = torch.randn(2, 2, 32, 64, generator=gen).to(torch.bfloat16).to(device)
    kr, vr, written = appended(kc, vc, lens, table, kn, vn, True)
    o = attn.decode(q, kc, vc, lens, table, rope=True, k_new=kn, v_new=vn)
    e = rel(o.double().cpu(), reference(q, kr, vr, lens, table, rope=True))
    got_k = kc.double().cpu().permute(0, 2, 1, 3)
    ek = rel(got_k[written], kr.permute(0, 2, 1, 3)[written])
    ev = (vc.double().cpu() - vr).abs().max().item()
    print("chunk_append_paged16: %s" % verdict("chunk_append", e < TOL[torch.bfloat16] and
                                               ek < TOL[torch.bfloat16] / 4 and ev == 0,
                                               max(e, ek, ev)))
    # attn.attention with a cache is attn.decode: the same kernel, the
    # same rows.
    q, kc, vc, lens, table = make(device, torch.bfloat16, b=2, h=8, hk=2, nq=2, d=64, keys=90,
                                  page=16)
    want = attn.decode(q, kc, vc, lens, table, rope=True, window=(30, -1), softcap=10.0)
    got = attn.attention(q, kc, vc, cache_seqlens=lens, block_table=table, mask="causal",
                         rope=True, window=(30, None), softcap=10.0)
    e = rel(got.double().cpu(), reference(q, kc, vc, lens, table, rope=True, window=(30, -1),
                                          softcap=10.0))
    print("attention over a cache: equal to decode %s, %s" % (
        torch.equal(got, want), verdict("attention cache", torch.equal(got, want) and
                                        e < TOL[torch.bfloat16], e)))
    # A length of q's rows only: each row sees up to its own key.
    q, kc, vc, lens, table = make(device, torch.float16, b=2, h=2, hk=1, nq=4, d=64, keys=40)
    lens = torch.tensor([4, 40], dtype=torch.int32, device=device)
    o = attn.decode(q, kc, vc, lens)
    e = rel(o.double().cpu(), reference(q, kc, vc, lens, None))
    print("short: %s" % verdict("short", e < 5e-3, e))
    # Again with new lengths: the fast path finds the kernel (no compile,
    # no lookup in the memory cache), the lengths are inputs.
    before = attn.cache_stats()
    lens2 = torch.tensor([4, 17], dtype=torch.int32, device=device)
    o2 = attn.decode(q, kc, vc, lens2)
    after = attn.cache_stats()
    e = rel(o2.double().cpu(), reference(q, kc, vc, lens2, None))
    print("again: compiles +%d memory_hits +%d %s" % (
        after["compiles"] - before["compiles"], after["memory_hits"] - before["memory_hits"],
        verdict("again", e < 5e-3, e)))
    errors(device)


def expect(what, fn, exc=(ValueError, TypeError)):
    try:
        fn()
        print("%s: no error" % what)
    except exc as e:
        print("%s: %s: %s" % (what, type(e).__name__, e))


def errors(device):
    q, kc, vc, lens, table = make(device, torch.float16, b=2, h=4, hk=2, nq=1, d=64, keys=64,
                                  page=16)
    expect("length past the cache", lambda: attn.decode(
        q, kc, vc, torch.tensor([64, 65], dtype=torch.int32, device=device), table))
    expect("length below q's rows", lambda: attn.decode(
        q, kc, vc, torch.tensor([0, 10], dtype=torch.int32, device=device), table))
    bad = table.clone()
    bad[1, 0] = 99
    expect("page out of range", lambda: attn.decode(q, kc, vc, lens, bad))
    expect("int64 lengths", lambda: attn.decode(q, kc, vc, lens.long(), table))
    expect("lengths' shape", lambda: attn.decode(q, kc, vc, lens[:1], table))
    expect("table's batch", lambda: attn.decode(q, kc, vc, lens, table[:1]))
    expect("table's dtype", lambda: attn.decode(q, kc, vc, lens, table.float()))
    expect("page size", lambda: attn.decode(q, kc[:, :, :12], vc[:, :, :12], lens, table))
    expect("heads", lambda: attn.decode(q[:, :3], kc, vc, lens, table))
    expect("dtype", lambda: attn.decode(q.float(), kc, vc, lens, table))
    expect("k and v", lambda: attn.decode(q, kc, vc[:, :1], lens, table))
    qc, kcc, vcc, lc, _ = make(device, torch.float16, b=2, h=4, hk=2, nq=1, d=64, keys=64)
    expect("contiguous batch", lambda: attn.decode(qc, kcc[:1], vcc[:1], lc))
    expect("rope offset", lambda: attn.decode(qc, kcc, vcc, lc, rope=dict(offset=3)))
    expect("window", lambda: attn.decode(qc, kcc, vcc, lc, window=(5,)))
    expect("causal", lambda: attn.decode(qc, kcc, vcc, lc, causal="yes"))
    expect("kernel options", lambda: attn.decode(qc, kcc, vcc, lc, kernel_options=3))
    kn = torch.zeros(2, 2, 1, 64, dtype=torch.float16, device=device)
    expect("k_new alone", lambda: attn.decode(qc, kcc, vcc, lc, k_new=kn))
    expect("k_new's heads", lambda: attn.decode(qc, kcc, vcc, lc, k_new=kn[:, :1],
                                                v_new=kn[:, :1]))
    expect("k_new's dtype", lambda: attn.decode(qc, kcc, vcc, lc, k_new=kn.float(), v_new=kn))
    expect("rows of k_new and v_new", lambda: attn.decode(
        qc, kcc, vcc, lc, k_new=kn, v_new=torch.cat([kn, kn], 2)))
    expect("strided cache", lambda: attn.decode(qc, kcc[:, :, ::2], vcc[:, :, ::2], lc,
                                                k_new=kn, v_new=kn))
    expect("attention: block_table alone", lambda: attn.attention(qc, kcc, vcc,
                                                                  block_table=table))
    expect("attention: gate with a cache", lambda: attn.attention(
        qc, kcc, vcc, cache_seqlens=lc, gate=(torch.zeros(2, 4, 1, 1, device=device), 64)))
    expect("attention: mask", lambda: attn.attention(qc, kcc, vcc, cache_seqlens=lc,
                                                     mask="full"))
    q20 = torch.zeros(2, 4, 20, 64, dtype=torch.float16, device=device)
    expect("chunk with kernel_options", lambda: attn.decode(q20, kcc, vcc, lc + 20,
                                                            kernel_options="splits=2"))
    kn4 = torch.zeros(2, 2, 4, 64, dtype=torch.float16, device=device)
    expect("length below k_new's rows", lambda: attn.decode(
        qc, kcc, vcc, torch.tensor([3, 10], dtype=torch.int32, device=device), k_new=kn4,
        v_new=kn4))
