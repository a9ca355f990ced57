#!/usr/bin/env python3
"""The parts of bench/mods_bench.py that need no GPU, checked on the CPU
(test/bench/mods-bench.test; /usr/bin/python3 with torch 1.13 will do): the
argument parsing and program list, the FLOP counting against brute-force
masks, the float64 row reference against a dense one written apart, the
flex score_mod / mask_mod functions (the general programs' too) emulated on
index tensors as flex calls them, the block-sparse program's lists against
its mask by loops, the ALiBi bias tensor, and attn's CPU kernels against
the reference (block_mask= for the block-sparse program).
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mods_bench import (CAP, MAX_BIAS, PREFIX, THETA, Program, alibi_bias,  # noqa: E402
                        alibi_slopes, check_heads, check_rows, doc_ids, first_line,
                        flex_mask_mod, flex_score_mod, general_mods, import_attn,
                        output_error, parse_args, programs, reference_rows, rel_err,
                        rope_qk, rope_tables, select, sparse_lists, visible_mask,
                        visible_pairs)

def dense_reference(q, k, v, prog):
    """A second float64 reference, written apart from reference_rows: the
    whole [B, H, N, M] score tensor, RoPE by pairs, the bias and masks by
    loops. For tiny CPU tensors only."""
    q, k, v = q.double(), k.double(), v.double()
    B, H, N, d = q.shape
    Hk, M = k.shape[1], k.shape[2]
    if prog.rope:
        def rot(x):
            n, half = x.shape[2], d // 2
            pos = torch.arange(n, dtype=torch.float64)
            ang = pos[:, None] * THETA ** (-2.0 * torch.arange(half, dtype=torch.float64) / d)
            c, s = ang.cos(), ang.sin()
            a, b = x[..., :half], x[..., half:]
            return torch.cat([a * c - b * s, b * c + a * s], dim=-1)
        q, k = rot(q), rot(k)
    k = k.repeat_interleave(H // Hk, dim=1)
    v = v.repeat_interleave(H // Hk, dim=1)
    s = torch.einsum("bhnd,bhmd->bhnm", q, k) / math.sqrt(d)
    if prog.softcap is not None:
        s = prog.softcap * torch.tanh(s / prog.softcap)
    bias = torch.zeros(H, N, M, dtype=torch.float64)
    hide = torch.zeros(N, M, dtype=torch.bool)
    for i in range(N):
        for j in range(M):
            if prog.alibi is not None:
                for h in range(H):
                    bias[h, i, j] = -(2.0 ** (-prog.alibi * (h + 1) / H)) * abs(i - j)
            if prog.causal and j > i:
                hide[i, j] = True
            if prog.window is not None:
                left, right = prog.window
                if left >= 0 and j < i - left or right >= 0 and j > i + right:
                    hide[i, j] = True
    s = (s + bias[None]).masked_fill(hide, float("-inf"))
    return torch.softmax(s, dim=-1).nan_to_num(0.0) @ v


def self_test():
    """The parts that need no GPU, on this machine's torch (1.13 works)."""
    fails = []

    def expect(cond, what):
        print("%s %s" % ("ok  " if cond else "FAIL", what))
        if not cond:
            fails.append(what)

    # Arguments.
    a = parse_args(["--quick", "--skip-slow", "--programs=alibi", "--out=/tmp/x"])
    expect(a.quick and a.skip_slow and a.rounds == 2 and a.out == "/tmp/x", "parse --quick ...")
    a = parse_args([])
    expect(a.rounds == 5 and a.slow_seconds == 3.0 and a.alibi_bias == "efficient",
           "parse defaults")
    full = programs()
    expect([p.name for p in select(full, "alibi")] == ["alibi-4096", "alibi-8192"],
           "--programs prefix")
    expect([p.name for p in full] == ["softcap-4096", "alibi-4096", "alibi-8192", "window-32768",
                                      "rope-8192", "rope-32768", "document-16384", "relbias-4096",
                                      "gate-8192", "prefix-8192", "d256-4096", "prefill-1024",
                                      "sparse-32768"],
           "program names")
    pf = [p for p in full if p.general == "prefill"][0]
    i, j = torch.arange(pf.N)[:, None], torch.arange(pf.keys)[None, :]
    expect(pf.visible == int((j <= i + pf.q_offset).sum()) and pf.q_offset == 15360,
           "chunked prefill: visible pairs, queries at 15360..")
    doc = [p for p in full if p.general == "document"][0]
    ids = doc_ids(doc.N, "cpu")
    expect(len(set(ids.tolist())) == 8 and doc.visible == int(
        ((ids[:, None] == ids[None, :]) & torch.ones(doc.N, doc.N, dtype=torch.bool).tril()).sum()),
           "document: 8 documents, visible pairs counted")
    pre = [p for p in full if p.general == "prefix"][0]
    i, j = torch.arange(pre.N)[:, None], torch.arange(pre.N)[None, :]
    expect(pre.visible == int(((j <= i) | (j < PREFIX)).sum()), "prefix-LM visible pairs")
    sp = [p for p in full if p.general == "sparse"][0]
    counts, indices, blk = sparse_lists(sp, torch.Generator().manual_seed(1))
    expect(blk == 128 and indices.shape == (1, 32, 256, 256) and int(counts.min()) == 16
           and int(counts.max()) == 16 and sp.visible == sp.N * sp.N // 16 and not sp.causal,
           "block-sparse: 16 of 256 key blocks of 128 per query block, 1/16 visible")
    expect(bool((indices.sort(dim=-1).values == torch.arange(256, dtype=torch.int32)).all()),
           "block-sparse: each row of kv_indices a permutation of the key blocks")
    expect(all(p.B * p.N == 32768 for p in full) and all(p.B * p.N == 4096 for p in programs(True)),
           "32K tokens per shape (4K quick)")
    try:
        select(full, "nope")
        expect(False, "unknown program refused")
    except SystemExit:
        expect(True, "unknown program refused")

    # FLOP counting: visible pairs against a brute-force mask.
    for N, causal, window in ((17, True, None), (17, True, (4, 0)), (17, False, (3, 2)),
                              (16, False, None), (9, True, (0, 0)), (12, True, (20, 0))):
        i = torch.arange(N)[:, None]
        j = torch.arange(N)[None, :]
        p = Program("t", "t", N=N, B=1, causal=causal, window=window)
        expect(visible_pairs(N, N, causal, window) == int(visible_mask(i, j, p).sum()),
               "visible pairs N=%d causal=%s window=%s" % (N, causal, window))
    w = [p for p in full if p.window][0]
    W = w.window[0] + 1
    expect(w.visible == W * (W + 1) // 2 + (w.N - W) * W, "window 4096 band at 32K")
    c = [p for p in full if p.name == "rope-32768"][0]
    expect(c.visible == c.N * (c.N + 1) // 2, "causal N(N+1)/2")
    expect(abs(c.flops - 4 * 32 * 128 * 32768 * 32769 / 2) < 1, "causal FLOPs at 32K")
    print("     window/causal visible at 32K: %.4f" % (w.visible / c.visible))
    for p in full:
        print("     %-13s %.3f TFLOP, visible %.4f of N x M" % (p.name, p.flops / 1e12,
                                                              p.visible / (p.N * p.keys)))

    # The float64 row reference against the dense one, and the flex mods and
    # the ALiBi bias emulated with plain torch, on tiny tensors.
    tiny = [Program("softcap", "", N=24, B=2, H=4, Hkv=2, d=16, softcap=CAP),
            Program("softcap-small-cap", "", N=24, B=2, H=4, Hkv=2, d=16, softcap=0.5),
            Program("alibi", "", N=24, B=2, H=4, Hkv=4, d=16, alibi=MAX_BIAS),
            Program("window", "", N=24, B=1, H=4, Hkv=4, d=16, rope=True, window=(5, 0)),
            Program("rope", "", N=24, B=2, H=4, Hkv=4, d=16, rope=True),
            Program("all", "", N=24, B=1, H=4, Hkv=2, d=16, rope=True, window=(7, 0),
                    softcap=2.0, alibi=MAX_BIAS),
            Program("document", "", N=40, B=2, H=4, Hkv=2, d=16, rope=True, general="document"),
            Program("relbias", "", N=24, B=2, H=4, Hkv=4, d=16, general="relbias"),
            Program("gate", "", N=24, B=2, H=4, Hkv=4, d=16, general="gate"),
            Program("prefix", "", N=24, B=1, H=4, Hkv=4, d=16, causal=False, general="prefix"),
            Program("prefill", "", N=12, M=40, B=2, H=4, Hkv=2, d=16, causal=False, rope=True,
                    general="prefill"),
            Program("sparse", "", N=128, M=128, B=1, H=4, Hkv=2, d=16, causal=False,
                    general="sparse")]
    attn, attn_err = import_attn()
    for p in tiny:
        torch.manual_seed(1)
        q = torch.randn(p.B, p.H, p.N, p.d) * 2
        k = torch.randn(p.B, p.Hkv, p.keys, p.d) * 2
        v = torch.randn(p.B, p.Hkv, p.keys, p.d)
        mods = general_mods(p, "cpu") if p.general else None
        heads = check_heads(p)
        rows = check_rows(p)
        refs = [reference_rows(q, k, v, p, b, h, rows, mods=mods) for b, h in heads]
        if mods is None:  # the dense reference knows the named blocks only
            dense = dense_reference(q, k, v, p)
            expect(output_error(dense, refs, heads, rows) < 1e-12,
                   "%s: row reference = dense" % p.name)
            all_rows = torch.arange(p.N)
            full_refs = [reference_rows(q, k, v, p, b, h, all_rows)
                         for b in range(p.B) for h in range(p.H)]
            expect(max(rel_err(dense[b, h], r) for (b, h), r in
                       zip([(b, h) for b in range(p.B) for h in range(p.H)], full_refs)) < 1e-12,
                   "%s: every head and row" % p.name)
        if mods is not None and mods.get("lists"):
            # The lists by loops: every key of a kept block visible, no other.
            counts, indices, blk = mods["lists"]
            loops = torch.zeros(p.B, p.H, p.N, p.keys, dtype=torch.bool)
            for h in range(p.H):
                for qb in range(indices.shape[2]):
                    for n in range(int(counts[0, h, qb])):
                        kb = int(indices[0, h, qb, n])
                        loops[:, h, qb * blk:(qb + 1) * blk, kb * blk:(kb + 1) * blk] = True
            hi4 = torch.arange(p.H)[None, :, None, None]
            mm_dense = mods["mask_mod"](None, hi4, torch.arange(p.N)[None, None, :, None],
                                        torch.arange(p.keys)[None, None, None, :])
            expect(torch.equal(mm_dense.expand_as(loops), loops)
                   and int(loops[0].sum()) == p.visible * p.H,
                   "%s: the reference's mask = the lists by loops, visible %d per head"
                   % (p.name, p.visible))
        # flex's score_mod / mask_mod on index tensors, as flex calls them.
        qq, kk = q.double(), k.double().repeat_interleave(p.H // p.Hkv, dim=1)
        vv = v.double().repeat_interleave(p.H // p.Hkv, dim=1)
        if p.rope:
            ck, sk = rope_tables(p.keys, p.d, torch.float64, "cpu")
            cos, sin = ck[p.q_offset:], sk[p.q_offset:]
            qq, kk = rope_qk(qq, kk, cos, sin, ck, sk)
        s = qq @ kk.transpose(-1, -2) / math.sqrt(p.d)
        bi = torch.arange(p.B)[:, None, None, None]
        hi = torch.arange(p.H)[None, :, None, None]
        qi = torch.arange(p.N)[None, None, :, None]
        ki = torch.arange(p.keys)[None, None, None, :]
        sm = flex_score_mod(p, alibi_slopes(p.H, p.alibi, "cpu", torch.float64)
                            if p.alibi is not None else None)
        if mods is not None and mods["score_mod"] is not None:
            sm = mods["score_mod"]
        mm = flex_mask_mod(p, mods["mask_mod"] if mods else None)
        if sm is not None:
            s = sm(s, bi, hi, qi, ki)
        if mm is not None:
            s = s.masked_fill(~mm(bi, hi, qi, ki), float("-inf"))
        flex_like = torch.softmax(s, dim=-1).nan_to_num(0.0) @ vv
        expect(output_error(flex_like, refs, heads, rows) < 1e-12, "%s: flex mods" % p.name)
        expect(p.sdpa == (p.softcap is None and p.alibi is None and p.window is None
                          and p.general is None),
               "%s: SDPA expressible = %s" % (p.name, p.sdpa))
        if p.alibi is not None and p.window is None and not p.rope and p.softcap is None:
            bias = alibi_bias(p, torch.float64, "cpu")
            sdpa_like = torch.softmax(qq @ kk.transpose(-1, -2) / math.sqrt(p.d) + bias, -1) @ vv
            expect(output_error(sdpa_like, refs, heads, rows) < 1e-12, "%s: ALiBi bias" % p.name)
            b16 = alibi_bias(p, torch.bfloat16, "cpu").double()
            e16 = output_error(torch.softmax(qq @ kk.transpose(-1, -2) / math.sqrt(p.d) + b16, -1)
                               @ vv, refs, heads, rows)
            print("     %s: the bias rounded to bf16 alone gives rel.err %.1e" % (p.name, e16))
        # attn's CPU kernels (float32) compute what the reference says.
        if attn is None:
            print("skip %s: attn on the CPU (%s)" % (p.name, attn_err))
            continue
        try:
            kw = p.attn_kwargs()
            if mods is not None and mods.get("attn_block_mask"):
                kw.update(block_mask=mods["attn_block_mask"]())
            elif mods is not None:
                kw.update(score_mod=mods["score_mod"], mask_mod=mods["mask_mod"])
            o = attn.attention(q, k, v, **kw)
            e = output_error(o, refs, heads, rows)
            expect(e < 1e-4, "%s: attn.attention on the CPU, rel.err %.1e" % (p.name, e))
        except Exception as ex:
            expect(False, "%s: attn.attention on the CPU: %s" % (p.name, first_line(ex)))
    print("self-test: %s" % ("%d failed" % len(fails) if fails else "all passed"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(self_test())
