#!/usr/bin/env python3
"""The loss curves of examples/train_llama.py's JSON (--json) as a chart:
both runs' per-step training loss (and a 10-step running mean), and the
difference attn - SDPA. Needs matplotlib (Debian: python3-matplotlib).

    python3 bench/train_chart.py bench/raw/2026-12-02-s21-train-llama.json bench/train_llama.png
"""
import json
import sys


def running_mean(xs, n=10):
    out, acc = [], 0.0
    for i, x in enumerate(xs):
        acc += x
        if i >= n:
            acc -= xs[i - n]
        out.append(acc / min(i + 1, n))
    return out


def main(argv):
    if len(argv) != 3:
        raise SystemExit("usage: train_chart.py CURVES.json OUT.png")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    r = json.load(open(argv[1]))
    runs, a = r["runs"], r["args"]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True,
                                      gridspec_kw=dict(height_ratios=[3, 1]))
    for name, color in (("attn", "tab:red"), ("sdpa", "tab:blue")):
        if name not in runs:
            continue
        ls = runs[name]["losses"]
        label = "%s (median step %.1f ms, held-out %.3f)" % (
            "attn" if name == "attn" else "SDPA + RoPE in torch",
            runs[name]["median_step_ms"], runs[name]["heldout_loss"])
        top.plot(ls, color=color, alpha=0.25, lw=0.8)
        top.plot(running_mean(ls), color=color, lw=1.6, label=label)
    top.set_ylabel("training loss (nats/byte)")
    top.set_title("%d-layer Llama-style decoder, width %d, %d/%d heads, seq %d, batch %d, %s, %s"
                  % (a["layers"], a["width"], a["heads"], a["kv_heads"], a["seq"], a["batch"],
                     a["dtype"], r.get("device", "")), fontsize=9)
    top.legend(fontsize=8)
    if "attn" in runs and "sdpa" in runs:
        d = [x - y for x, y in zip(runs["attn"]["losses"], runs["sdpa"]["losses"])]
        bottom.plot(d, color="black", lw=0.8)
        bottom.axhline(0, color="grey", lw=0.5)
        bottom.set_ylabel("attn - SDPA")
    bottom.set_xlabel("step")
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)


if __name__ == "__main__":
    main(sys.argv)
