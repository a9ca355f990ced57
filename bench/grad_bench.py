#!/usr/bin/env python3
"""Training benchmark (issue 29): attn's forward + backward against RoPE +
cuDNN, RoPE + flex_attention and RoPE + SDPA flash, one H200, one process.

Programs (bf16, H = 32, B * N = 32K tokens, causal, RoPE rotate-half theta
10000 over the whole head dim, unless stated):

  rope-d{64,128}-{1024..16384}  RoPE + causal
  softcap-4096                  RoPE + causal + softcap 30 (d 128)
  gqa-4096                      RoPE + causal, GQA 32/8 (d 128)
  gate-8192                     RoPE + causal + SAS's gate (block 64), the
                                gate a constant
  dgate-8192                    the same with the gate requiring grad (SAS
                                training: dgate too; flex's backward of it
                                does not fit an H200's shared memory)
  d256-4096                     head dim 256, RoPE + causal

Each implementation is called as a training step calls it: the inputs
require grad, fwd+bwd is o = f(q, k, v); o.backward(dO), and bwd alone is
o.backward(dO, retain_graph=True) on one kept graph. The anchors' RoPE is
a torch.compile'd rotate-half on q and k with tables made once (its
backward is part of their time, as attn's rotation back is of attn's).

  attn        attn.attention(q, k, v, rope=, mask="causal", softcap=, gate=)
  cudnn       SDPA, SDPBackend.CUDNN_ATTENTION, is_causal (no softcap/gate)
  flex        torch.compile(flex_attention), causal block mask, score_mod
              for softcap and the gate
  flash       SDPA, SDPBackend.FLASH_ATTENTION (FA2), is_causal

Before anything is timed, each implementation's o, dq, dk and dv for the
program's options at B=1, H=4 (GQA 4/1), N=1000 (a ragged tail) are
checked against float64 autograd through a torch reference; an error
(relative, Frobenius) above 2e-2 is WRONG, not timed, and exit status 1.
The timed shapes' outputs and gradients must be finite.

Timing: --rounds rounds in turn over the implementations of a program,
each a triton.testing.do_bench median (L2 flushed), or CUDA events for
calls over 250 ms (attn's plain GPU path). TFLOP/s: causal forward
4*B*H*N^2*d/2; fwd+bwd 3.5x that, bwd 2.5x (the anchors' convention,
../shared/notes/anchors-h200.md). Writes $OUT/grad_bench.md and .json.

  bash -c 'source bench/gpu_env.sh && setup && \\
           PYTHONPATH=python ATTN_LIBRARY_DIR=.carry/lib python3 bench/grad_bench.py'
  --programs=rope-d128,softcap   only programs with these name prefixes
  --max-seconds=540              skip programs not started by then
"""
import argparse
import json
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mods_bench as mb  # noqa: E402  (its timer, RoPE tables, environment)

TOL = 2e-2
CAP = 30.0
GATE_BLOCK = 64


def programs():
    out = []
    for d in (64, 128):
        for N in (1024, 2048, 4096, 8192, 16384):
            out.append(dict(name="rope-d%d-%d" % (d, N), d=d, N=N, H=32, Hkv=32))
    out.append(dict(name="softcap-4096", d=128, N=4096, H=32, Hkv=32, softcap=CAP))
    out.append(dict(name="gqa-4096", d=128, N=4096, H=32, Hkv=8))
    out.append(dict(name="gate-8192", d=128, N=8192, H=32, Hkv=32, gate=True))
    out.append(dict(name="dgate-8192", d=128, N=8192, H=32, Hkv=32, gate=True, dgate=True))
    out.append(dict(name="d256-4096", d=256, N=4096, H=32, Hkv=32))
    for p in out:
        p["B"] = max(1, 32768 // p["N"])
    return out


def flops(p, factor):
    return 4.0 * p["B"] * p["H"] * p["N"] * p["N"] * p["d"] / 2 * factor


class Impl:
    """One implementation of a program: call(q, k, v, extra) -> o."""

    def __init__(self, key, label, call):
        self.key, self.label, self.call = key, label, call


def implementations(ctx, p):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
    gqa = p["Hkv"] != p["H"]
    impls = []
    attn = ctx.attn

    def attn_call(q, k, v, extra):
        kw = dict(rope=dict(theta=mb.THETA), mask="causal")
        if p.get("softcap"):
            kw["softcap"] = p["softcap"]
        if p.get("gate"):
            kw["gate"] = (extra["gate"], GATE_BLOCK)
        return attn.attention(q, k, v, **kw)
    if attn is not None:
        impls.append(Impl("attn", "attn", attn_call))

    def roped(q, k, extra):
        cos, sin = extra["tables"]
        return ctx.rope(q, k, cos, sin)

    if not p.get("softcap") and not p.get("gate"):
        for key, label, be in (("cudnn", "RoPE + cuDNN", SDPBackend.CUDNN_ATTENTION),
                               ("flash", "RoPE + SDPA flash", SDPBackend.FLASH_ATTENTION)):
            def sdpa(q, k, v, extra, be=be):
                rq, rk = roped(q, k, extra)
                kw = dict(is_causal=True)
                if gqa:
                    kw["enable_gqa"] = True
                with sdpa_kernel([be]):
                    return F.scaled_dot_product_attention(rq, rk, v, **kw)
            impls.append(Impl(key, label, sdpa))

    def flex(q, k, v, extra):
        rq, rk = roped(q, k, extra)
        gate = extra.get("gate")

        def score_mod(s, b, h, qi, ki):
            if p.get("softcap"):
                s = p["softcap"] * torch.tanh(s / p["softcap"])
            if gate is not None:
                s = s + gate[b, h, qi, ki // GATE_BLOCK]
            return s
        kw = dict(block_mask=extra["block_mask"])
        if p.get("softcap") or gate is not None:
            kw["score_mod"] = score_mod
        if gqa:
            kw["enable_gqa"] = True
        return ctx.flex(rq, rk, v, **kw)
    impls.append(Impl("flex", "RoPE + flex", flex))
    return impls


def inputs(p, B, H, Hkv, N, device, dtype, seed, ctx):
    g = torch.Generator(device=device).manual_seed(seed)
    q = torch.randn(B, H, N, p["d"], device=device, dtype=dtype, generator=g)
    k = torch.randn(B, Hkv, N, p["d"], device=device, dtype=dtype, generator=g)
    v = torch.randn(B, Hkv, N, p["d"], device=device, dtype=dtype, generator=g)
    do = torch.randn(B, H, N, p["d"], device=device, dtype=dtype, generator=g)
    extra = dict(tables=mb.rope_tables(N, p["d"], dtype, device))
    if p.get("gate"):
        nb = (N + GATE_BLOCK - 1) // GATE_BLOCK
        extra["gate"] = torch.randn(B, H, N, nb, device=device, generator=g) * 0.5
        if p.get("dgate"):
            extra["gate"].requires_grad_()
    causal = lambda b, h, qi, ki: qi >= ki  # noqa: E731
    extra["block_mask"] = ctx.create_block_mask(causal, None, None, N, N, device=device)
    return [t.requires_grad_() for t in (q, k, v)], do, extra


def reference(p, q, k, v, extra):
    """float64 autograd through torch ops: RoPE, GQA, scale, softcap, gate, causal."""
    cos, sin = (t.to(torch.float64) for t in mb.rope_tables(q.shape[2], p["d"], torch.float64,
                                                            q.device))
    rq, rk = mb.rope_qk(q, k, cos, sin)
    rep = q.shape[1] // k.shape[1]
    rk, rv = rk.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    s = rq @ rk.transpose(-1, -2) / math.sqrt(p["d"])
    if p.get("softcap"):
        s = p["softcap"] * torch.tanh(s / p["softcap"])
    if p.get("gate"):
        g = extra["gate"].to(torch.float64).repeat_interleave(GATE_BLOCK, -1)[..., :s.shape[-1]]
        s = s + g
    n = s.shape[-1]
    s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1),
                      float("-inf"))
    return s.softmax(-1) @ rv


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return ((a - b).norm() / b.norm()).item()


def check(ctx, p, impl):
    """max relative error of o, dq, dk, dv (and dgate) at a small shape of p's options."""
    Hkv = 1 if p["Hkv"] != p["H"] else 4
    (q, k, v), do, extra = inputs(p, 1, 4, Hkv, 1000, "cuda", torch.bfloat16, 29, ctx)
    o = impl.call(q, k, v, extra)
    o.backward(do)
    qd, kd, vd = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref = dict(extra)
    if p.get("dgate"):
        ref["gate"] = extra["gate"].detach().double().requires_grad_()
    want = reference(p, qd, kd, vd, ref)
    want.backward(do.double())
    errs = [rel(o, want), rel(q.grad, qd.grad), rel(k.grad, kd.grad), rel(v.grad, vd.grad)]
    if p.get("dgate"):
        if extra["gate"].grad is None:
            raise RuntimeError("no gradient into the gate")
        errs.append(rel(extra["gate"].grad, ref["gate"].grad))
    return max(errs)


def run_program(ctx, p, args):
    row = dict(program=p["name"], B=p["B"], H=p["H"], Hkv=p["Hkv"], N=p["N"], d=p["d"],
               softcap=p.get("softcap"), gate=bool(p.get("gate")), impls={})
    impls = implementations(ctx, p)
    live = []
    for impl in impls:
        r = row["impls"][impl.key] = dict(label=impl.label)
        try:
            r["error"] = check(ctx, p, impl)
        except Exception as ex:  # an implementation that cannot run this program
            r["failed"] = mb.first_line(ex)
            continue
        if not (r["error"] < TOL):
            r["wrong"] = True
            continue
        live.append(impl)
    (q, k, v), do, extra = inputs(p, p["B"], p["H"], p["Hkv"], p["N"], "cuda", torch.bfloat16,
                                  1, ctx)
    steps = {}
    for impl in list(live):
        r = row["impls"][impl.key]
        try:
            for t in (q, k, v, extra.get("gate")):
                if t is not None:
                    t.grad = None

            def fwd_bwd(impl=impl):
                impl.call(q, k, v, extra).backward(do)
            t0 = time.perf_counter()
            o = impl.call(q, k, v, extra)
            o.backward(do, retain_graph=True)
            torch.cuda.synchronize()
            one = (time.perf_counter() - t0) * 1e3
            grads = [o, q.grad, k.grad, v.grad] + ([extra["gate"].grad] if p.get("dgate") else [])
            finite = all(x is not None and torch.isfinite(x).all().item() for x in grads)
            if not finite:
                r["wrong"] = True
                r["failed"] = "non-finite output or gradient at the timed shape"
                live.remove(impl)
                continue
            steps[impl.key] = (fwd_bwd, (lambda o=o: o.backward(do, retain_graph=True)), one)
        except Exception as ex:
            r["failed"] = mb.first_line(ex)
            live.remove(impl)
    for _ in range(args.rounds):
        for impl in live:
            fb, bw, one = steps[impl.key]
            r = row["impls"][impl.key]
            r.setdefault("fwd_bwd", []).append(ctx.timer.median_ms(fb, one))
            r.setdefault("bwd", []).append(ctx.timer.median_ms(bw, one))
    for impl in live:
        r = row["impls"][impl.key]
        for what, factor in (("fwd_bwd", 3.5), ("bwd", 2.5)):
            r[what + "_ms"] = sorted(r[what])[len(r[what]) // 2]
            r[what + "_tflops"] = flops(p, factor) / r[what + "_ms"] / 1e9
    del steps, q, k, v, do, extra
    torch.cuda.empty_cache()
    return row


def table(rows, meta):
    keys = [("attn", "attn"), ("cudnn", "RoPE + cuDNN"), ("flex", "RoPE + flex"),
            ("flash", "RoPE + SDPA flash")]
    lines = ["# attn training benchmark (bench/grad_bench.py)", "",
             "%s, %s (%d SMs), driver %s, torch %s (CUDA %s, cuDNN %s), triton %s, attn %s, "
             "commit %s" % (meta["date"], meta["gpu"], meta["sms"], meta["driver"], meta["torch"],
                            meta["cuda"], meta["cudnn"], meta["triton"], meta["attn"],
                            meta["commit"]), "",
             "bf16, causal, RoPE; ms are medians of %d rounds; TFLOP/s: causal fwd 4BHN^2d/2, "
             "fwd+bwd x3.5, bwd x2.5; err: max relative error of o, dq, dk, dv against float64 at "
             "B=1, H=4, N=1000." % meta["rounds"], "",
             "| program | B | H/Hkv | N | d | " + " | ".join(
                 "%s fwd+bwd ms (TFLOP/s) | %s bwd ms" % (l, l) for _, l in keys) +
             " | attn/cuDNN | attn/flex | attn err |",
             "|" + "---|" * (5 + 2 * len(keys) + 3)]
    for r in rows:
        cells = []
        for key, _ in keys:
            x = r["impls"].get(key)
            if x is None:
                cells += ["—", "—"]
            elif "fwd_bwd_ms" in x:
                cells += ["%.2f (%.0f)" % (x["fwd_bwd_ms"], x["fwd_bwd_tflops"]),
                          "%.2f" % x["bwd_ms"]]
            else:
                why = "WRONG %.1e" % x["error"] if x.get("wrong") and "error" in x else \
                    x.get("failed", "not timed")
                cells += [why[:60], "—"]

        def ratio(other):
            a, b = r["impls"].get("attn", {}), r["impls"].get(other, {})
            return "%.2f" % (a["fwd_bwd_ms"] / b["fwd_bwd_ms"]) \
                if "fwd_bwd_ms" in a and "fwd_bwd_ms" in b else "—"
        err = r["impls"].get("attn", {}).get("error")
        lines.append("| %s | %d | %d/%d | %d | %d | %s | %s | %s | %s |" % (
            r["program"], r["B"], r["H"], r["Hkv"], r["N"], r["d"], " | ".join(cells),
            ratio("cudnn"), ratio("flex"), "—" if err is None else "%.1e" % err))
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description="attn training benchmark")
    ap.add_argument("--programs", default="")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=25)
    ap.add_argument("--rep", type=int, default=100)
    ap.add_argument("--max-seconds", type=float, default=540)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    start = time.time()
    ctx = mb.Ctx(args)
    meta = mb.run_meta(args)
    progs = [p for p in programs()
             if not args.programs or any(p["name"].startswith(x)
                                         for x in args.programs.split(","))]
    rows, wrong = [], False
    for p in progs:
        if time.time() - start > args.max_seconds:
            rows.append(dict(program=p["name"], B=p["B"], H=p["H"], Hkv=p["Hkv"], N=p["N"],
                             d=p["d"], impls={}, skipped="out of time"))
            continue
        row = run_program(ctx, p, args)
        rows.append(row)
        wrong |= any(x.get("wrong") for x in row["impls"].values())
        print(json.dumps({k: row[k] for k in ("program", "N", "d")}),
              {k: (round(x["fwd_bwd_ms"], 3), round(x["bwd_ms"], 3)) if "fwd_bwd_ms" in x
               else x.get("failed", "WRONG") for k, x in row["impls"].items()}, flush=True)
    text = table(rows, meta)
    print(text)
    out = os.environ.get("OUT", "/tmp")
    with open(os.path.join(out, "grad_bench.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "grad_bench.json"), "w") as f:
        json.dump(dict(meta=meta, rows=rows), f, indent=1)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
