#!/usr/bin/env python3
"""The Hopper backward's schedule options against each other
(lower-tile-to-hopper's dq-reduce, dp-issue, ds-buffers; docs/passes.md
"The backward on sm_90a"), and against the mma.sync backward (variant
"mma": docs/passes.md "The backward on sm_80 and newer"), on one H200.

Programs: bf16, H = 32, causal, RoPE rotate-half theta 10000 over the
whole head dim, at head dims 128 and 64, at B x N of --shapes (default
8 x 4096). A variant is a hopper_options string (a bare word w stands for
dq-reduce=w), loaded as

  attn.load(attn.build_program(q, k, v, rope=dict(theta=10000.0), mask="causal"),
            "cuda", hopper_options=<variant>, grad=True)

and its backward called as kernel.backward(q, k, v, o, lse, dout) with the
forward's o and lse (kernel(q, k, v) returns them). The variant "mma" is
loaded with tile_options="kernel=mma" instead: the mma.sync forward and
backward (lib/Kernels/mma_attention_bwd.c) on the H200.

Before anything is timed, at B=1, H=4, N=1000 (a ragged tail) each
variant's dq, dk and dv are checked against float64 autograd through a
torch reference (relative Frobenius error above 2e-2: WRONG) and against
the other variant's (above 5e-3: DIFFER; they are not bitwise equal, as
dq_acc is summed in whatever order the CTAs reach it), and run five times
(a variant with deterministic=true whose gradients are not bitwise the
same each time: NOT-DETERMINISTIC). Any makes the variant untimed and the
exit status 1. The timed shapes' gradients must be
finite.

Timing: triton.testing.do_bench median of kernel.backward alone (L2
flushed between calls by do_bench), ms and TFLOP/s with the causal
backward's 2.5 x 4*B*H*N^2*d/2 FLOPs (the anchors' convention).

  bash -c 'source bench/gpu_env.sh && setup && \\
           PYTHONPATH=python ATTN_LIBRARY_DIR=.carry/lib python3 bench/grad_variants.py'
  --dims=128,64         head dims to run (default both)
  --variants=red,bulk   variants, ';'-separated hopper_options strings
                        (',' also separates when no variant has a space)
  --shapes=8x4096       B x N pairs, ','-separated
  --rounds=3            rounds of timings over the variants, in turn
Writes $OUT/grad_variants.json when OUT is set.
"""
import argparse
import json
import math
import os
import sys

import torch

import attn

THETA = 10000.0
TOL_REF = 2e-2
TOL_PAIR = 5e-3


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def reference(q, k, v):
    """float64 attention with RoPE (rotate-half, positions 0..N-1) and the
    causal mask, scale 1/sqrt(d)."""
    N, d = q.shape[2], q.shape[3]
    inv = 1.0 / (THETA ** (torch.arange(0, d, 2, device=q.device, dtype=torch.float64) / d))
    ang = torch.outer(torch.arange(N, device=q.device, dtype=torch.float64), inv)
    emb = torch.cat([ang, ang], dim=-1)
    cos, sin = emb.cos(), emb.sin()
    rq, rk = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
    s = rq @ rk.transpose(-1, -2) / math.sqrt(d)
    s = s.masked_fill(torch.ones(N, N, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return s.softmax(-1) @ v


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return ((a - b).norm() / b.norm()).item()


def inputs(B, H, N, d, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v, do = (torch.randn(B, H, N, d, device="cuda", dtype=torch.bfloat16, generator=g)
                   for _ in range(4))
    return q, k, v, do


def load(q, k, v, variant):
    text = attn.build_program(q, k, v, rope=dict(theta=THETA), mask="causal")
    if variant == "mma":
        return attn.load(text, "cuda", tile_options="kernel=mma", grad=True)
    opts = variant if "=" in variant else "dq-reduce=" + variant
    return attn.load(text, "cuda", hopper_options=opts, grad=True)


def backward(kernel, q, k, v, do):
    o, lse = kernel(q, k, v)
    return o, lse, kernel.backward(q, k, v, o, lse, do)


def check(d, variants):
    """Errors of each variant's (dq, dk, dv) at B=1, H=4, N=1000: against
    float64 and against the first variant. Returns {variant: (ref, pair)}."""
    q, k, v, do = inputs(1, 4, 1000, d, 29)
    qd, kd, vd = (t.double().requires_grad_() for t in (q, k, v))
    reference(qd, kd, vd).backward(do.double())
    want = (qd.grad, kd.grad, vd.grad)
    grads, same = {}, {}
    for var in variants:
        kern = load(q, k, v, var)
        _, _, grads[var] = backward(kern, q, k, v, do)
        # Bitwise the same on a second run and a fifth (deterministic=true
        # must be; the default need not).
        same[var] = all(all(torch.equal(a, b) for a, b in zip(grads[var], again))
                        for again in (backward(kern, q, k, v, do)[2] for _ in range(4)))
    torch.cuda.synchronize()
    out = {}
    first = grads[variants[0]]
    for var in variants:
        ref = max(rel(g, w) for g, w in zip(grads[var], want))
        pair = max(rel(g, f) for g, f in zip(grads[var], first))
        out[var] = (ref, pair, same[var])
    return out


def do_bench(fn):
    import triton.testing as tt
    try:
        return tt.do_bench(fn, warmup=25, rep=200, return_mode="median")
    except TypeError:  # an older triton: quantiles only
        return tt.do_bench(fn, warmup=25, rep=200, quantiles=[0.5])[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dims", default="128,64")
    ap.add_argument("--variants", default="red,bulk")
    ap.add_argument("--shapes", default="8x4096")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    dims = [int(x) for x in args.dims.split(",")]
    sep = ";" if ";" in args.variants or " " in args.variants else ","
    variants = [v.strip() for v in args.variants.split(sep) if v.strip()]
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    H = 32
    print("GPU: %s, torch %s" % (torch.cuda.get_device_name(), torch.__version__))
    status, rows = 0, []
    for d in dims:
        errs = check(d, variants)
        ok = []
        for var in variants:
            ref, pair, same = errs[var]
            bad = ("WRONG" if ref > TOL_REF else "DIFFER" if pair > TOL_PAIR
                   else "NOT-DETERMINISTIC" if "deterministic=true" in var and not same
                   else "")
            print("d=%d [%s]: max rel err vs float64 %.2e, vs [%s] %.2e, bitwise "
                  "repeatable over 5 runs: %s %s"
                  % (d, var, ref, variants[0], pair, "yes" if same else "no", bad))
            if bad:
                status = 1
            else:
                ok.append(var)
        for B, N in shapes:
            status |= time_shape(d, B, H, N, ok, errs, args.rounds, rows)
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "grad_variants.json"), "w") as f:
            json.dump(rows, f, indent=1)
    return status


def time_shape(d, B, H, N, ok, errs, rounds, rows):
    """Times the variants ok at one shape, in turn; rows gets the results.
    Returns 1 where a variant's gradients were not finite, else 0."""
    status = 0
    q, k, v, do = inputs(B, H, N, d, 1)
    flop = 2.5 * 4 * B * H * N * N * d / 2
    kernels = {}
    for var in ok:
        kern = load(q, k, v, var)
        o, lse, g = backward(kern, q, k, v, do)
        if not all(torch.isfinite(t).all().item() for t in g):
            print("d=%d [%s]: non-finite gradients at N=%d, not timed" % (d, var, N))
            status = 1
            continue
        kernels[var] = (kern, o, lse)
    times = {var: [] for var in kernels}
    for _ in range(rounds):
        for var, (kern, o, lse) in kernels.items():
            times[var].append(do_bench(
                lambda kern=kern, o=o, lse=lse: kern.backward(q, k, v, o, lse, do)))
    for var, ts in times.items():
        ms = sorted(ts)[len(ts) // 2]
        tf = flop / (ms * 1e-3) / 1e12
        print("d=%d B=%d H=%d N=%d causal RoPE [%s]: bwd %.3f ms, %.1f TFLOP/s "
              "(rounds: %s)" % (d, B, H, N, var, ms, tf,
                                ", ".join("%.3f" % t for t in ts)))
        rows.append(dict(d=d, B=B, H=H, N=N, variant=var, ms=ms, tflops=tf, rounds=ts,
                         err_ref=errs[var][0], err_pair=errs[var][1],
                         repeatable=errs[var][2]))
    del q, k, v, do, kernels
    torch.cuda.empty_cache()
    return status


if __name__ == "__main__":
    sys.exit(main())
