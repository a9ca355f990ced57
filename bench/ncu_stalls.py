#!/usr/bin/env python3
"""Where a kernel's warps wait, from Nsight Compute's SASS export.

Reads `ncu --import R --page source --print-source sass --csv` output and
prints: the warp-stall samples by reason; the samples of each group of
instructions with the same execution count (in a kernel with a tile loop
and a block loop inside it, these are the per-tile code, the per-block code,
the producer's loop...); and the top instructions with their top reasons.

  python3 bench/ncu_stalls.py FILE.csv [TOP]
"""
import collections
import csv
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"


def num(x):
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return 0.0


def main():
    rows = list(csv.reader(open(sys.argv[1])))
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    head = next(i for i, r in enumerate(rows) if SAMPLES in r)
    hdr, data = rows[head], rows[head + 1:]
    ix = {h: i for i, h in enumerate(hdr)}
    reasons = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    total = sum(num(r[ix[SAMPLES]]) for r in data) or 1.0
    print(f"{int(total)} samples over {len(data)} instructions")
    by_reason = collections.Counter()
    by_count = collections.Counter()
    instrs = collections.Counter()
    for r in data:
        for h in reasons:
            by_reason[h[6:]] += num(r[ix[h]])
        e = int(num(r[ix["Instructions Executed"]]))
        by_count[e] += num(r[ix[SAMPLES]])
        instrs[e] += 1
    print("by reason:")
    for h, s in by_reason.most_common(10):
        print(f"  {h:20s} {100 * s / total:5.1f}%")
    print("by execution count (instructions executed, per warp and launch):")
    for e, s in by_count.most_common(8):
        print(f"  {e:10d} x {instrs[e]:4d} instructions {100 * s / total:5.1f}%")
    print(f"top {top} instructions:")
    order = sorted(range(len(data)), key=lambda i: -num(data[i][ix[SAMPLES]]))[:top]
    for i in sorted(order):
        r = data[i]
        why = sorted(((num(r[ix[h]]), h[6:]) for h in reasons), reverse=True)[:2]
        print(f"  {i:5d} {100 * num(r[ix[SAMPLES]]) / total:4.1f}% {r[ix['Source']].strip()[:56]:56s} "
              + " ".join(f"{h} {100 * v / total:.1f}%" for v, h in why if v))


if __name__ == "__main__":
    main()
