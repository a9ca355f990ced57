#!/usr/bin/env python3
"""Validates the Rotation Calculus (lib/CostModel) against the H200 sweep.

Reads the measured RoPE placement sweep (bench/raw/*-rope-sweep.json, made on
the GPU machine by `ATTN_BENCH_SWEEP=1 ATTN_BENCH_NO_ANCHORS=1
bench/run_attn_bench.sh`), asks attn's cost model for the same shapes
(`attn-opt --test-attn-print-cost=gpu=H200`), and writes:
  - a Markdown table: measured and predicted ms per placement, the model's
    choice, the measured best, and the accuracy figures of issue 5;
  - a PNG chart per configuration (measured points, predicted lines, the
    predicted crossover N* marked when it falls in the sweep's range).

Usage: bench/rope_validation.py SWEEP_JSON ATTN_OPT OUT_PREFIX
"""
import json
import math
import re
import subprocess
import sys

PLACES = ("split", "fused", "pre")
LABEL = {"split": ("attn (RoPE+causal)", "attn (fused RoPE)"),
         "fused": ("attn variant fused",), "pre": ("attn variant pre",)}


def program(B, H, Hkv, N, d):
    q = f"tensor<{B}x{H}x{N}x{d}xbf16>"
    k = f"tensor<{B}x{Hkv}x{N}x{d}xbf16>"
    return (f"func.func @s(%q: {q}, %k: {k}, %v: {k}) -> {q} {{\n"
            f'  %o = "attn.fused"(%q, %k, %v) ({}, {}) {{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>, '
            f"scale = {1 / math.sqrt(d)} : f64, causal = true, rope = {{theta = 5.0e5 : f64, "
            f'rotary_dim = {d} : i64, layout = "rotate_half"}}}} : ({q}, {k}, {k}) -> {q}\n'
            f"  return %o : {q}\n}}\n")


def predict(attn_opt, B, H, Hkv, N, d):
    r = subprocess.run([attn_opt, "--test-attn-print-cost=gpu=H200", "-"], input=program(B, H, Hkv, N, d),
                       capture_output=True, text=True, check=True)
    out = {}
    for line in r.stderr.splitlines() + r.stdout.splitlines():
        m = re.match(r"\s*(fused|split|pre|producer):\s+([0-9.]+) ms", line)
        if m:
            out[m.group(1)] = float(m.group(2))
        m = re.match(r"\s*choice: (\w+)", line)
        if m:
            out["choice"] = m.group(1)
        m = re.match(r"\s*N\*: fused vs pre (.*?), split vs pre (.*)", line)
        if m:
            out["nstar_fused_pre"] = m.group(1)
            out["nstar_split_pre"] = m.group(2)
    return out


def main():
    sweep, attn_opt, prefix = sys.argv[1:4]
    data = json.load(open(sweep))
    rows = data["rows"]
    configs = sorted({(r["d"], r["Hkv"]) for r in rows}, reverse=True)
    table = []
    points = within3 = 0
    errs = {p: [] for p in PLACES}
    series = {}
    for d, hkv in configs:
        for N in sorted({r["N"] for r in rows if r["d"] == d and r["Hkv"] == hkv}):
            same = [r for r in rows if r["d"] == d and r["Hkv"] == hkv and r["N"] == N]
            B = same[0]["B"]
            meas = {}
            for p in PLACES:
                ms = [r.get("ms") for r in same if r["impl"] in LABEL[p] and r.get("ms")]
                if ms:
                    meas[p] = ms[0]
            pred = predict(attn_opt, B, 32, hkv, N, d)
            for p in meas:
                errs[p].append(abs(pred[p] - meas[p]) / meas[p])
            best = min(meas, key=meas.get)
            choice = pred.get("choice")
            points += 1
            ok = choice in meas and meas[choice] <= 1.03 * meas[best]
            within3 += ok
            series.setdefault((d, hkv), []).append((N, meas, pred))
            table.append(
                f"| {d} | {hkv} | {N} | {B} | "
                + " | ".join(f"{meas.get(p, float('nan')):.3f} / {pred[p]:.3f}" for p in PLACES)
                + f" | {choice} | {best} | {meas[choice] / meas[best]:.3f} |")
    md = [
        "| d | Hkv | N | B | split ms meas / pred | fused ms meas / pred | pre ms meas / pred | model's choice |"
        " measured best | choice / best |",
        "|---|---|---|---|---|---|---|---|---|---|"] + table
    md += ["",
           f"- `auto` (the model's choice) within 3% of the best measured placement: {within3} of {points} "
           f"sweep points ({100.0 * within3 / points:.0f}%).",
           "- Prediction error, max / median over the sweep: " + "; ".join(
               f"{p} {100 * max(e):.1f}% / {100 * sorted(e)[len(e) // 2]:.1f}%" for p, e in errs.items() if e) + "."]
    nstar = {}
    for (d, hkv), pts in series.items():
        nstar[(d, hkv)] = (pts[0][2].get("nstar_fused_pre"), pts[0][2].get("nstar_split_pre"))
    md.append("- Predicted crossovers N* (batch of the smallest N held fixed): " + "; ".join(
        f"d={d} Hkv={hkv}: fused vs pre {a}, split vs pre {b}" for (d, hkv), (a, b) in nstar.items()) + ".")
    open(prefix + ".md", "w").write("\n".join(md) + "\n")
    print("\n".join(md))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(series), figsize=(4.2 * len(series), 4))
    for ax, ((d, hkv), pts) in zip(axes, series.items()):
        Ns = [p[0] for p in pts]
        for place, color in (("split", "C0"), ("fused", "C3"), ("pre", "C2")):
            ax.plot(Ns, [p[2][place] for p in pts], "-", color=color, label=f"{place} predicted")
            ax.plot(Ns, [p[1].get(place, float("nan")) for p in pts], "o", color=color,
                    label=f"{place} measured")
        a, _ = nstar[(d, hkv)]
        try:
            n = float(a)
            if Ns[0] <= n <= Ns[-1]:
                ax.axvline(n, color="gray", ls=":", label=f"N* fused/pre {n:.0f}")
        except (TypeError, ValueError):
            pass
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"d={d}, H=32, Hkv={hkv} (B*N=32K)\nN* fused/pre = {a}", fontsize=9)
        ax.set_xlabel("N")
        ax.set_ylabel("ms (H200)")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=100)


if __name__ == "__main__":
    main()
