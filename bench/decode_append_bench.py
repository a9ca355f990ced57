#!/usr/bin/env python3
"""A decode step that appends (issue 30): the new token's key rotated by
RoPE and its value written into the KV cache, then one query row per
sequence attending over the cache, on one GPU.

attn does it in one launch program (attn.decode(..., k_new=, v_new=):
attn.cache_append feeding attn.fused_decode, the append kernel before the
split and combine kernels). Against it, in the same process and timed in
turn:

- "attn + torch append": RoPE on the new key and the cache writes by torch
  (k_cache[b, :, pos] = ..., through the block table for a paged cache),
  then attn.decode without the append;
- "cuDNN + torch append": RoPE on q and the new key and the writes by
  torch, then SDPA's cuDNN backend over the contiguous cache (enable_gqa),
  what a torch serving loop without attn does;
- "attn (no append)": attn's decode alone, to show what the append costs.

Shapes: bf16, head dim 128, GQA 32/8, one new token per sequence at
position len - 1 (every sequence full: len = the cache's keys), RoPE theta
500000 (rotate-half); batch 1, 8 and 64; caches of 4K, 16K and 32K keys;
contiguous and paged in pages of 16 (the cuDNN row needs a contiguous
cache and is timed on that layout only).

Every implementation is checked before it is timed: its output against
float64 for 3 (sequence, head) pairs (q rotated at its position, the keys
with the new one rotated in its row), and the cache row it wrote against
the rotated new key. TB/s counts the K and V bytes read once. Each is
captured in a CUDA graph and its replay timed with triton's do_bench
(medians of --rounds rounds in turn), as decode_bench.py does.

  bash -c 'source bench/gpu_env.sh && setup && \\
           PYTHONPATH=python ATTN_LIBRARY_DIR=.carry/lib python3 bench/decode_append_bench.py'

Writes $OUT/decode_append_bench.json and .md (OUT defaults to
/tmp/decode_append_bench).
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


def cos_sin(pos, dtype=torch.float32):
    """cos and sin [B, 1, 1, D] of rotate-half RoPE at positions pos [B]."""
    inv = THETA ** (-torch.arange(0, D, 2, device=pos.device, dtype=torch.float64) / D)
    ang = pos.double()[:, None] * inv[None, :]
    ang = torch.cat([ang, ang], -1)[:, None, None, :]
    return ang.cos().to(dtype), ang.sin().to(dtype)


def rotate(x, c, s):
    half = x.shape[-1] // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * c + rot * s


def cache_rows(kc, table, bi, pos, page):
    """Index tuple of row pos[b] of sequence b in the cache (contiguous
    [B, Hk, M, D] or pages through table)."""
    if table is None:
        return (bi, slice(None), pos)
    return (table[bi, pos // page].long(), slice(None), pos % page)


def run_shape(batch, keys, layout, args, gen):
    s = db.Shape(batch, keys, HK, layout)
    q, k, v, kp, vp, lens, table = db.make_inputs(s, False, gen)
    kn = torch.randn(batch, HK, 1, D, device="cuda", dtype=DT, generator=gen)
    vn = torch.randn(batch, HK, 1, D, device="cuda", dtype=DT, generator=gen)
    bi = torch.arange(batch, device="cuda")
    pos = (lens - 1).long()
    c32, s32 = cos_sin(pos)
    import attn
    impl = {}
    args_new = [q, kp, vp, lens] + ([table] if table is not None else []) + [kn, vn]
    fused = attn.load(attn.build_decode_program(q, kp, vp, lens, table, rope=ROPE, k_new=kn,
                                                v_new=vn), "cuda")
    plain = attn.load(attn.build_decode_program(q, kp, vp, lens, table, rope=ROPE), "cuda")
    out_f, out_p = torch.empty_like(q), torch.empty_like(q)
    impl["attn"] = lambda: fused(*args_new, out_f)
    at = cache_rows(kp, table, bi, pos, s.page)

    def torch_append(kc, vc, where):
        kr = rotate(kn.float(), c32, s32).to(DT)
        kc[where] = kr[:, :, 0]
        vc[where] = vn[:, :, 0]

    def attn_torch():
        torch_append(kp, vp, at)
        return plain(*args_new[:-2], out_p)
    impl["attn + torch append"] = attn_torch
    impl["attn (no append)"] = lambda: plain(*args_new[:-2], out_p)
    if table is None:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def cudnn():
            torch_append(k, v, (bi, slice(None), pos))
            qr = rotate(q.float(), c32, s32).to(DT)
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(qr, k, v, enable_gqa=True)
        impl["cuDNN + torch append"] = cudnn
    # The float64 reference: q rotated at len - 1, the new key rotated into
    # its row (every sequence full, so the key set is the whole cache).
    pairs = [(0, 0), (batch - 1, H - 1), (batch // 2, 5)]
    c64, s64 = cos_sin(pos, torch.float64)
    qr = rotate(q.double(), c64, s64)
    kr = rotate(kn.double(), c64, s64)
    ok, err = {}, {}
    for name, fn in impl.items():
        o = fn()
        torch.cuda.synchronize()
        kc_now = kp if name != "cuDNN + torch append" else k
        vc_now = vp if name != "cuDNN + torch append" else v
        where = at if name != "cuDNN + torch append" else (bi, slice(None), pos)
        e = 0.0
        for b, h in pairs:
            g = h // (H // HK)
            kk = k[b, g].double().clone()
            vv = v[b, g].double().clone()
            kk[-1], vv[-1] = kr[b, g, 0], vn[b, g, 0].double()
            p = torch.softmax(kk @ qr[b, h, 0] / math.sqrt(D), 0)
            want = p @ vv
            e = max(e, db.rel_err(o[b, h, 0], want))
        if name != "attn (no append)":
            e = max(e, db.rel_err(kc_now[where], kr[:, :, 0]),
                    db.rel_err(vc_now[where], vn[:, :, 0].double()))
        err[name], ok[name] = e, e < db.TOL
    ms, graphed = db.time_all(impl, ok, args.rounds, True)
    tb = s.cache_bytes() / 1e12
    row = dict(shape=s.name, batch=batch, keys=keys, layout=layout, mb=s.cache_bytes() / 1e6,
               ms=ms, tbs={n: tb / (t / 1e3) for n, t in ms.items()}, err=err, ok=ok,
               graphed=graphed)
    base = ms.get("cuDNN + torch append") or ms.get("attn + torch append")
    row["vs"] = {n: base / t for n, t in ms.items()} if base else {}
    return row


NAMES = ("attn", "attn + torch append", "cuDNN + torch append", "attn (no append)")


def table(rows):
    lines = ["| shape | MB | " + " | ".join("%s ms (TB/s)" % n for n in NAMES) +
             " | attn vs torch append + cuDNN (contiguous) or + attn (paged) |",
             "|" + "---|" * (len(NAMES) + 3)]
    for r in rows:
        cells = []
        for n in NAMES:
            if n in r["ms"]:
                cells.append("%.4f (%.2f)" % (r["ms"][n], r["tbs"][n]))
            elif n in r["ok"] and not r["ok"][n]:
                cells.append("WRONG %.1e" % r["err"][n])
            else:
                cells.append("-")
        vs = r["vs"].get("attn")
        lines.append("| %s | %.0f | %s | %s |" % (r["shape"], r["mb"], " | ".join(cells),
                                                  "%.2fx" % vs if vs else "-"))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", default="1,8,64")
    ap.add_argument("--caches", default="4096,16384,32768")
    ap.add_argument("--layouts", default="contiguous,paged16")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    out = os.environ.get("OUT", "/tmp/decode_append_bench")
    os.makedirs(out, exist_ok=True)
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows, wrong = [], False
    for layout in args.layouts.split(","):
        for b in db.ints(args.batches):
            for m in db.ints(args.caches):
                r = run_shape(b, m, layout, args, gen)
                wrong |= not all(r["ok"].values())
                rows.append(r)
                print("%s: %s" % (r["shape"], ", ".join(
                    "%s %.4f ms" % (n, t) for n, t in r["ms"].items())), flush=True)
    md = table(rows)
    print(md)
    meta = db.meta(argparse.Namespace(ragged=False, rounds=args.rounds))
    with open(os.path.join(out, "decode_append_bench.json"), "w") as f:
        json.dump(dict(meta=meta, rows=rows), f, indent=1)
    with open(os.path.join(out, "decode_append_bench.md"), "w") as f:
        f.write(md + "\n")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
