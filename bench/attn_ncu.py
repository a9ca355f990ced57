#!/usr/bin/env python3
"""One attn RoPE + causal attention program, for Nsight Compute.

Compiles the benchmark's program for one shape (attn_bench.program: bf16,
H = 32, B*N = 32K tokens), checks its output against the float64 reference
on fresh random inputs, exits 1 if it is wrong, and otherwise launches it
twice more. Run under `ncu -k <attention kernel> --launch-skip 1
--launch-count 1`, ncu profiles one launch in all: the attention kernel's
second (the first is the check's), so the last launch only keeps the
profiled one from being the process's last. bench/run_attn_bench.sh runs
it when ATTN_BENCH_NCU is set.

Environment: ATTN_BIN, ATTN_LIBATTNRT as for attn_bench.py; ATTN_NCU_D,
ATTN_NCU_N (head dim, sequence length); ATTN_NCU_ROPE (1, the default: RoPE
on q and k; 0: none); ATTN_NCU_FLAGS (more attn-translate flags).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attn_bench as ab  # noqa: E402


def main():
    d, N = int(os.environ["ATTN_NCU_D"]), int(os.environ["ATTN_NCU_N"])
    rope_on = os.environ.get("ATTN_NCU_ROPE", "1") == "1"
    flags = os.environ.get("ATTN_NCU_FLAGS", "").split()
    B = ab.TOKENS // N
    rt = ab.Runtime()
    stream = rt.stream()
    torch.manual_seed(N * 7 + d)
    q, k, v = (torch.randn(B, ab.H, N, d, device=ab.DEV, dtype=ab.DT) for _ in range(3))
    out = torch.empty_like(q)
    ptx, manifest, _ = ab.compile_attn(B, ab.H, ab.H, N, d, extra=flags, rope_on=rope_on)
    heads = [(0, 0), (B - 1, ab.H - 1)]
    run, err = ab.checked(rt, ptx, manifest, q, k, v, out, stream, heads, rope_on=rope_on)
    print(f"d={d} N={N} rope={rope_on} flags={flags}: rel.err {err:.2e}", flush=True)
    if not err < 2e-2:
        sys.exit(1)
    run()
    run()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
