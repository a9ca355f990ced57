#!/usr/bin/env python3
"""Where the time of attn's RoPE + causal attention program goes, kernel by kernel.

attn_bench.py times the whole program as a user calls it (one launch of the
program: the K rotation kernel, then the attention kernel). This script
splits that time: for each shape and RoPE placement it runs the program 20
times under torch.profiler and reports each kernel's mean GPU time, so that
the rotation kernels and the attention kernel's own share of RoPE can be
told apart (the 'norope' placement is the attention kernel on pre-rotated
inputs). Every program's output is checked against the float64 reference
first, on fresh random inputs, and nothing is timed if it is wrong.
Back-to-back launches without an L2 flush: these are not the benchmark's
numbers (attn_bench.py flushes L2 between runs), only their breakdown.

Environment: ATTN_BIN, ATTN_LIBATTNRT as for attn_bench.py;
ATTN_PROFILE_SHAPES ("d:N,...", B*N = 32K tokens, H = Hkv = 32; default
64:4096,128:4096,64:8192); ATTN_PROFILE_PLACEMENTS ("label:rope|norope[:flag]..."
separated by ';', as ATTN_BENCH_VARIANTS; default split, pre and no RoPE).
Writes $OUT/attn_profile.json and prints one line per placement.
"""
import collections
import json
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_bench as ab  # noqa: E402

LAUNCHES = 20


def placements():
    return ab.parse_variants(os.environ.get(
        "ATTN_PROFILE_PLACEMENTS", "split:rope;pre:rope:--hopper-options=rope=pre;norope:norope"))


def kernel_times(fn):
    """Mean GPU ms of each kernel fn launches, over LAUNCHES calls."""
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(LAUNCHES):
            fn()
        torch.cuda.synchronize()
    times = collections.defaultdict(list)
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            times[e.name].append(e.device_time / 1000.0)
    return {name: sum(t) / len(t) for name, t in times.items()}


def main():
    shapes = [tuple(int(x) for x in s.split(":")) for s in
              os.environ.get("ATTN_PROFILE_SHAPES", "64:4096,128:4096,64:8192").split(",")]
    rt = ab.Runtime()
    stream = rt.stream()
    rows = []
    for d, N in shapes:
        B, H = ab.TOKENS // N, ab.H
        torch.manual_seed(N * 7 + d)
        q, k, v = (torch.randn(B, H, N, d, device=ab.DEV, dtype=ab.DT) for _ in range(3))
        out = torch.empty_like(q)
        heads = [(0, 0), (B // 2, H // 2), (B - 1, H - 1)]
        for label, rope_on, extra in placements():
            ptx, manifest, _ = ab.compile_attn(B, H, H, N, d, extra=extra, rope_on=rope_on)
            run, err = ab.checked(rt, ptx, manifest, q, k, v, out, stream, heads, rope_on=rope_on)
            row = dict(d=d, N=N, B=B, H=H, placement=label, relerr=err)
            if err < 2e-2:
                for _ in range(5):
                    run()
                torch.cuda.synchronize()
                row["kernels_ms"] = kernel_times(run)
            rows.append(row)
            parts = ", ".join(f"{n} {ms:.4f} ms" for n, ms in row.get("kernels_ms", {}).items())
            print(f"d={d} N={N} B={B} {label}: rel.err {err:.1e}; {parts or 'WRONG, not timed'}", flush=True)
    with open(os.path.join(ab.OUT, "attn_profile.json"), "w") as f:
        json.dump(dict(meta=ab.run_meta(), launches=LAUNCHES, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
