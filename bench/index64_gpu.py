#!/usr/bin/env python3
"""A program whose tensors have more than 2^31 elements, on the GPU (issue 27,
item 4): attn.attention on float32 tensors (the plain path: lower-tile-to-gpu,
whose index arithmetic is 64-bit) of B x H x N x D elements, more than 2^31
each and more than 2^33 bytes, so that element offsets overflow i32 and byte
offsets u32. Fresh random inputs; the output is checked against a float64
reference computed by torch on the GPU for sampled (batch, head) pairs: the
first, the last (whose elements lie beyond 2^31), those on either side of
element 2^31, and random ones. Prints one line per check and a verdict; exits
1 on a mismatch.

  PYTHONPATH=python ATTN_LIBRARY_DIR=build/lib python3 bench/index64_gpu.py
      [--batch 9000] [--heads 64] [--seq 64] [--dim 64] [--samples 48]
"""
import argparse
import math
import sys
import time

import attn
import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=9000)
    ap.add_argument("--heads", type=int, default=64)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--samples", type=int, default=48)
    ap.add_argument("--seed", type=int, default=27)
    a = ap.parse_args()
    B, H, N, D = a.batch, a.heads, a.seq, a.dim
    elems = B * H * N * D
    print("shape [%d, %d, %d, %d]: %d elements per tensor (2^31 = %d), %.2f GiB"
          % (B, H, N, D, elems, 2 ** 31, elems * 4 / 2 ** 30))
    if elems <= 2 ** 31:
        sys.exit("index64: the shape must have more than 2^31 elements")
    gen = torch.Generator(device="cuda").manual_seed(a.seed)
    q, k, v = (torch.randn((B, H, N, D), device="cuda", dtype=torch.float32,
                           generator=gen) for _ in range(3))
    t0 = time.time()
    o = attn.attention(q, k, v, mask="causal")
    torch.cuda.synchronize()
    print("first call (compile, load, run): %.2f s" % (time.time() - t0))
    # (b, h) pairs: the first, the last, those around element 2^31, random ones.
    per_bh = N * D
    cross = 2 ** 31 // per_bh
    pairs = {(0, 0), (B - 1, H - 1), divmod(cross - 1, H), divmod(cross, H),
             divmod(min(cross + 1, B * H - 1), H)}
    rng = torch.Generator().manual_seed(a.seed + 1)
    while len(pairs) < a.samples:
        i = int(torch.randint(0, B * H, (1,), generator=rng))
        pairs.add(divmod(i, H))
    worst = 0.0
    mask = torch.ones((N, N), device="cuda", dtype=torch.bool).tril()
    for b, h in sorted(pairs):
        qd, kd, vd = (t[b, h].double() for t in (q, k, v))
        s = (qd @ kd.T) / math.sqrt(D)
        s = s.masked_fill(~mask, -math.inf)
        ref = torch.softmax(s, dim=-1) @ vd
        err = float((o[b, h].double() - ref).abs().max() / ref.abs().max())
        worst = max(worst, err)
        first = (b * H + h) * per_bh
        print("  (b=%d, h=%d) elements [%d, %d): rel_error %.3e%s"
              % (b, h, first, first + per_bh, err, "  > 2^31" if first >= 2 ** 31 else ""))
    ok = worst <= 1e-5
    print("index64: %d (batch, head) pairs, worst rel_error %.3e: %s"
          % (len(pairs), worst, "PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
