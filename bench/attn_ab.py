#!/usr/bin/env python3
"""Same-run A/B of attention kernels compiled by different attn-translate builds.

The benchmark (attn_bench.py) times one build's kernels against the anchors;
comparing two builds across runs mixes in the machine's clocks, which move
by several percent between runs. This script loads the kernels of several
builds (or flags) into one process and, after checking each against the
float64 reference on fresh random inputs, times them in turn for ROUNDS
rounds (triton.testing.do_bench, L2 flushed), so they share the same clocks.

Environment: ATTN_LIBATTNRT as for attn_bench.py (ATTN_BIN is only needed to
import it); ATTN_AB_VARIANTS "label:bindir:rope|norope[:flags];..." (bindir
holds the attn-translate to use; flags split as a shell does, so
--tile-options='kernel=hopper block-n=64' is one flag); ATTN_AB_SHAPES "d:N,..." (B*N = 32K
tokens, H = Hkv = 32); ATTN_AB_ROUNDS (default 5). Prints each variant's
times and median, and writes $OUT/attn_ab.json.
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_bench as ab  # noqa: E402


def compile_with(bindir, B, N, d, rope_on, flags):
    with tempfile.TemporaryDirectory() as tmp:
        with open(f"{tmp}/p.mlir", "w") as f:
            f.write(ab.program(B, ab.H, ab.H, N, d, rope_on=rope_on))
        subprocess.run([os.path.join(bindir, "attn-translate"), "--to-ptx", f"{tmp}/p.mlir",
                        "-o", f"{tmp}/k.ptx", f"--manifest={tmp}/k.json", *flags], check=True)
        return open(f"{tmp}/k.ptx").read(), open(f"{tmp}/k.json").read()


def variants():
    out = []
    for spec in os.environ["ATTN_AB_VARIANTS"].split(";"):
        parts = spec.split(":")
        if len(parts) < 3 or parts[2] not in ("rope", "norope"):
            sys.exit(f"attn_ab: bad variant '{spec}' (label:bindir:rope|norope[:flags])")
        flags = shlex.split(":".join(parts[3:])) if len(parts) > 3 else []
        out.append((parts[0], parts[1], parts[2] == "rope", flags))
    return out


def main():
    shapes = [tuple(int(x) for x in s.split(":"))
              for s in os.environ.get("ATTN_AB_SHAPES", "128:4096").split(",")]
    rounds = int(os.environ.get("ATTN_AB_ROUNDS", "5"))
    rt = ab.Runtime()
    stream = rt.stream()
    rows = []
    for d, N in shapes:
        B = ab.TOKENS // N
        torch.manual_seed(N * 7 + d)
        q, k, v = (torch.randn(B, ab.H, N, d, device=ab.DEV, dtype=ab.DT) for _ in range(3))
        out = torch.empty_like(q)
        heads = [(0, 0), (B // 2, ab.H // 2), (B - 1, ab.H - 1)]
        refs, runs = {}, {}
        for label, bindir, rope_on, flags in variants():
            if rope_on not in refs:
                refs[rope_on] = ab.reference_heads(q, k, v, heads, rope_on=rope_on)
            fn, err = ab.checked(rt, *compile_with(bindir, B, N, d, rope_on, flags), q, k, v, out, stream,
                                 heads, refs=refs[rope_on])
            print(f"d={d} N={N} {label}: rel.err {err:.2e}{'' if err < 2e-2 else ', WRONG: not timed'}",
                  flush=True)
            if err < 2e-2:
                runs[label] = fn
        ms = {label: [] for label in runs}
        for _ in range(rounds):
            for label, fn in runs.items():
                ms[label].append(ab.bench(fn))
        for label, times in ms.items():
            med = sorted(times)[len(times) // 2]
            print(f"d={d} N={N} {label:10s} " + " ".join(f"{x:.3f}" for x in times)
                  + f"  median {med:.3f} ms {ab.flops(B, N, d) / med / 1e9:.0f} TFLOP/s", flush=True)
            rows.append(dict(d=d, N=N, label=label, ms=times, median=med))
    with open(os.path.join(ab.OUT, "attn_ab.json"), "w") as f:
        json.dump(dict(meta=ab.run_meta(), rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
