#!/usr/bin/env python3
"""The static-versus-adaptive table of bench/RESULTS.md from two comm_bench
JSON files (bench/run_comm_sweep.sh): one row per shape and pattern, then
the geometric means of static and adaptive over their own sequential
cuBLAS + NCCL baselines and of adaptive over static. Exits 1 when a fused
result failed its float64 check or is missing."""
import json
import math
import sys


def main(static_path, adaptive_path):
    static = json.load(open(static_path))["rows"]
    adaptive = {(r["shape"], r["pattern"]): r for r in json.load(open(adaptive_path))["rows"]}
    print("| shape MxNxK (per rank) | pattern | sequential ms (static run / adaptive run) "
          "| static fused ms | adaptive fused ms | static vs seq | adaptive vs seq "
          "| adaptive vs static | rel.err static / adaptive |")
    print("|---|---|---|---|---|---|---|---|---|")
    logs = [0.0, 0.0, 0.0]
    n = wins = 0
    ok = True
    for r in static:
        a = adaptive.get((r["shape"], r["pattern"]))
        fs, fa = r.get("attn_fused", {}), (a or {}).get("attn_fused", {})
        if fs.get("status") != "ok" or fa.get("status") != "ok":
            ok = False
            print(f"| {r['shape']} | {r['pattern']} | fused: static {fs.get('status')}, "
                  f"adaptive {fa.get('status')} | | | | | | |")
            continue
        seq_s, seq_a = r["sequential"]["ms"], a["sequential"]["ms"]
        st, ad = fs["ms"], fa["ms"]
        ratios = (seq_s / st, seq_a / ad, st / ad)
        for i, x in enumerate(ratios):
            logs[i] += math.log(x)
        n += 1
        wins += ad < st
        print(f"| {r['shape']} | {r['pattern']} | {seq_s:.3f} / {seq_a:.3f} | {st:.3f} | {ad:.3f} "
              f"| {ratios[0]:.2f}x | {ratios[1]:.2f}x | {ratios[2]:.2f}x "
              f"| {fs['rel_l2']:.1e} / {fa['rel_l2']:.1e} |")
    if n:
        g = [math.exp(x / n) for x in logs]
        print()
        print(f"{n} configurations, all checked against float64 first: {ok}; adaptive faster in {wins}.")
        print(f"Geometric means: static vs sequential {g[0]:.3f}x, adaptive vs sequential "
              f"{g[1]:.3f}x, adaptive vs static {g[2]:.3f}x.")
    return 0 if ok and n else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: comm_sweep_table.py STATIC_JSON ADAPTIVE_JSON")
    sys.exit(main(sys.argv[1], sys.argv[2]))
