#!/usr/bin/env python3
"""Chunked prefill over a KV cache (issue 30): a chunk of N new queries per
sequence at the end of its keys (positions len - N + i), causal over the
cache, on one GPU.

attn: attn.decode(q, k_cache, v_cache, cache_seqlens, block_table,
rope=...) with N > 16 rows, which runs attn.attention's prefill kernel
(the Hopper kernel on an H200) over the cache (a paged one gathered first)
with a mask_mod reading the lengths (key lists skip the blocks past each
length) and q rotated at its positions. Against it, in the same process
and timed in turn, over the contiguous cache:

- "flex": torch.compile(flex_attention) with a BlockMask made from the
  same mask_mod (lengths per sequence, bottom-right causal), q rotated by
  torch first (enable_gqa);
- "SDPA lower-right" (every sequence full only): SDPA with torch's
  causal_lower_right bias (the flash or mem-efficient backend torch picks),
  q rotated by torch first, K and V repeated to the query heads.

Shapes: bf16, head dim 128, GQA 32/8, RoPE theta 500000 on q (the cache
holds rotated keys); batch 4; chunks of 1K and 2K queries; caches of 16K
and 32K keys; every sequence full, or --ragged lengths in [N, M]; attn's
cache contiguous and paged in pages of 64. TFLOP/s counts 4 * N * len * D
per (sequence, head), halved over the chunk's own keys (causal): the
visible pairs.

Every output is checked against float64 first (3 (sequence, head) pairs,
8 query rows each, over their visible keys); WRONG implementations are
not timed. Each is replayed from a CUDA graph where it captures and timed
with triton's do_bench (medians of --rounds rounds in turn).

  bash -c 'source bench/gpu_env.sh && setup && \\
           PYTHONPATH=python ATTN_LIBRARY_DIR=.carry/lib python3 bench/chunked_prefill_bench.py'

Writes $OUT/chunked_prefill_bench.json and .md (OUT defaults to
/tmp/chunked_prefill_bench).
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decode_bench as db  # noqa: E402

D, H, HK, DT, THETA = 128, 32, 8, torch.bfloat16, 500000.0
ROPE = dict(theta=THETA)


def rotate(x, pos):
    """x [B, Hx, N, D] rotated (rotate-half) at positions pos [B, N], in
    float32, back to x's dtype (what attn's chunked prefill does too)."""
    half = D // 2
    inv = THETA ** (-torch.arange(half, device=x.device, dtype=torch.float64) * 2 / D)
    ang = pos.double()[:, None, :, None] * inv
    c, s = ang.cos().float(), ang.sin().float()
    y = x.float()
    x1, x2 = y[..., :half], y[..., half:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1).to(x.dtype)


def flops(lens, n):
    """Visible (query, key) pairs times 4 D times H."""
    tot = 0
    for m in lens:
        tot += n * (m - n) + n * (n + 1) / 2
    return 4.0 * D * H * tot


def run_shape(n, m, layout, ragged, args, gen):
    s = db.Shape(4, m, HK, layout)
    _, k, v, kp, vp, lens, table = db.make_inputs(s, False, gen)
    b = s.batch
    if ragged:
        lens = torch.randint(n, m + 1, (b,), device="cuda", generator=gen, dtype=torch.int32)
        lens[0] = m
    q = torch.randn(b, H, n, D, device="cuda", dtype=DT, generator=gen)
    pos = lens.long()[:, None] - n + torch.arange(n, device="cuda")[None, :]
    import attn
    impl = {}
    impl["attn"] = lambda: attn.decode(q, kp, vp, lens, table, rope=ROPE, check_values=False)
    lens_l = lens.long()
    qr = rotate(q, pos)

    def mask_mod(bi, h, q_idx, kv_idx):
        p = lens_l[bi] - n + q_idx
        return (kv_idx < lens_l[bi]) & (kv_idx <= p)
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        flex = torch.compile(flex_attention, dynamic=False)
        bm = create_block_mask(mask_mod, b, None, n, m, device="cuda")
        impl["flex"] = lambda: flex(rotate(q, pos), k, v, block_mask=bm, enable_gqa=True)
    except ImportError:
        pass
    if not ragged:
        from torch.nn.attention.bias import causal_lower_right
        bias = causal_lower_right(n, m)
        g = H // HK

        def sdpa():
            kk = k.repeat_interleave(g, 1)
            vv = v.repeat_interleave(g, 1)
            return F.scaled_dot_product_attention(rotate(q, pos), kk, vv, attn_mask=bias)
        impl["SDPA lower-right"] = sdpa
    # float64 check: 3 (sequence, head) pairs, 8 rows each.
    pairs = [(0, 0), (b - 1, H - 1), (b // 2, 7)]
    rows = torch.linspace(0, n - 1, 8).long().tolist()
    ok, err = {}, {}
    for name, fn in impl.items():
        try:
            o = fn()
            torch.cuda.synchronize()
        except Exception as e:  # an anchor that cannot run this shape
            print("%s: %s failed: %s" % (s.name, name, str(e).splitlines()[0][:200]))
            ok[name], err[name] = False, float("inf")
            continue
        e = 0.0
        for bi, h in pairs:
            ln = int(lens[bi])
            kk = k[bi, h // (H // HK), :ln].double()
            vv = v[bi, h // (H // HK), :ln].double()
            for i in rows:
                p = ln - n + i
                sc = (kk[:p + 1] @ qr[bi, h, i].double()) / math.sqrt(D)
                want = torch.softmax(sc, 0) @ vv[:p + 1]
                e = max(e, db.rel_err(o[bi, h, i], want))
        err[name], ok[name] = e, e < db.TOL
    ms, graphed = db.time_all(impl, ok, args.rounds, True)
    fl = flops(lens.tolist(), n)
    row = dict(shape="4 x %dK chunk %d %s%s" % (m // 1024, n, layout, " ragged" if ragged
                                                  else ""),
               n=n, keys=m, layout=layout, ragged=ragged, lens=lens.tolist(), ms=ms,
               tflops={k2: fl / (t / 1e3) / 1e12 for k2, t in ms.items()}, err=err, ok=ok,
               graphed=graphed)
    best = min((t for k2, t in ms.items() if k2 != "attn"), default=None)
    row["attn_over_best"] = ms["attn"] / best if best and "attn" in ms else None
    return row


NAMES = ("attn", "flex", "SDPA lower-right")


def table(rows):
    lines = ["| shape | " + " | ".join("%s ms (TFLOP/s)" % x for x in NAMES) +
             " | attn / best anchor |", "|" + "---|" * (len(NAMES) + 2)]
    for r in rows:
        cells = []
        for x in NAMES:
            if x in r["ms"]:
                cells.append("%.3f (%.0f)%s" % (r["ms"][x], r["tflops"][x],
                                                "" if r["graphed"].get(x) else " eager"))
            elif x in r["ok"] and not r["ok"][x]:
                cells.append("WRONG %.1e" % r["err"][x])
            else:
                cells.append("-")
        a = r["attn_over_best"]
        lines.append("| %s | %s | %s |" % (r["shape"], " | ".join(cells),
                                           "%.2f" % a if a else "-"))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", default="1024,2048")
    ap.add_argument("--caches", default="16384,32768")
    ap.add_argument("--layouts", default="contiguous,paged64")
    ap.add_argument("--ragged", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    out = os.environ.get("OUT", "/tmp/chunked_prefill_bench")
    os.makedirs(out, exist_ok=True)
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows, wrong = [], False
    for layout in args.layouts.split(","):
        for m in db.ints(args.caches):
            for n in db.ints(args.chunks):
                r = run_shape(n, m, layout, args.ragged, args, gen)
                wrong |= not r["ok"].get("attn", False)
                rows.append(r)
                print("%s: %s" % (r["shape"], ", ".join("%s %.3f ms" % (x, t)
                                                       for x, t in r["ms"].items())),
                      flush=True)
    md = table(rows)
    print(md)
    meta = db.meta(argparse.Namespace(ragged=args.ragged, rounds=args.rounds))
    with open(os.path.join(out, "chunked_prefill_bench.json"), "w") as f:
        json.dump(dict(meta=meta, rows=rows), f, indent=1)
    with open(os.path.join(out, "chunked_prefill_bench.md"), "w") as f:
        f.write(md + "\n")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
