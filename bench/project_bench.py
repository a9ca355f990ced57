#!/usr/bin/env python3
"""RoPE placements of a layer's attention computed from its input (issue 5).

The program starts from the layer input x: q = x Wq and k = x Wk are
projected into heads (attn.project), RoPE rotates both, then causal
attention with v. attn compiles it four ways (attn-translate
--rope-strategy=producer|split|pre|fused) plus once without RoPE:

  producer  the projections' GEMM epilogue rotates (no extra traffic)
  split     plain projections; K rotated by a kernel, Q in attention
  pre       plain projections; Q and K rotated by kernels
  fused     plain projections; Q and K rotated inside attention
  norope    the same program without attn.rope (the floor)

Each launch program runs through attnrt on torch tensors and is checked
against float64 (projection, RoPE, attention) on three (b, h) heads before
it is timed. The Rotation Calculus's prediction of each placement is the
measured no-RoPE program plus the model's RoPE cost for that placement
(`attn-opt --test-attn-print-cost`: its time minus the attention alone).

Writes $OUT/project_bench.{json,md,png}. Run by bench/run_attn_bench.sh with
ATTN_BENCH_PROJECT=1 on the GPU machine.
"""
import json
import math
import os
import re
import subprocess
import tempfile
import time

import torch

import attn_bench as ab

STRATEGIES = ("producer", "split", "pre", "fused")
DEADLINE = time.time() + float(os.environ.get("ATTN_BENCH_SECONDS", "480"))


def program(B, Hq, Hkv, N, d, C, rope_on=True):
    x = f"tensor<{B}x{N}x{C}xbf16>"
    wq, wk = f"tensor<{C}x{Hq * d}xbf16>", f"tensor<{C}x{Hkv * d}xbf16>"
    q, k = f"tensor<{B}x{Hq}x{N}x{d}xbf16>", f"tensor<{B}x{Hkv}x{N}x{d}xbf16>"
    s = f"tensor<{B}x{Hq}x{N}x{N}xbf16>"
    rope = f'{{theta = {ab.THETA} : f64, rotary_dim = {d} : i64, layout = "rotate_half"}}'
    ropes = (f'  %qr = "attn.rope"(%q) {rope} : ({q}) -> {q}\n'
             f'  %kr = "attn.rope"(%k) {rope} : ({k}) -> {k}\n') if rope_on else ""
    qk = "%qr, %kr" if rope_on else "%q, %k"
    return f"""func.func @layer(%x: {x}, %wq: {wq}, %wk: {wk}, %v: {k}) -> {q} {{
  %q = "attn.project"(%x, %wq) : ({x}, {wq}) -> {q}
  %k = "attn.project"(%x, %wk) : ({x}, {wk}) -> {k}
{ropes}  %s = "attn.qk"({qk}) : ({q}, {k}) -> {s}
  %ss = "attn.scale"(%s) {{scale = {1.0 / math.sqrt(d)} : f64}} : ({s}) -> {s}
  %sc = "attn.causal"(%ss) : ({s}) -> {s}
  %p = "attn.softmax"(%sc) : ({s}) -> {s}
  %o = "attn.pv"(%p, %v) : ({s}, {k}) -> {q}
  return %o : {q}
}}
"""


def compile_layer(text, strategy):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "p.mlir")
        with open(src, "w") as f:
            f.write(text)
        extra = [f"--rope-strategy={strategy}"] if strategy else []
        subprocess.run([os.path.join(ab.BIN, "attn-translate"), "--to-ptx", src, "-o", f"{tmp}/k.ptx",
                        f"--manifest={tmp}/k.json", *extra], check=True)
        return open(f"{tmp}/k.ptx").read(), open(f"{tmp}/k.json").read()


def predict(text):
    """The model's RoPE cost per placement (ms over the attention alone)."""
    r = subprocess.run([os.path.join(ab.BIN, "attn-opt"),
                        "--pass-pipeline=builtin.module(attn-fuse,test-attn-print-cost{gpu=H200})", "-"],
                       input=text, capture_output=True, text=True, check=True)
    out = {}
    for line in r.stderr.splitlines():
        m = re.match(r"\s*(fused|split|pre|producer):\s+([0-9.]+) ms = attention ([0-9.]+)", line)
        if m:
            out[m.group(1)] = float(m.group(2)) - float(m.group(3))
        m = re.match(r"\s*choice: (\w+)", line)
        if m:
            out["choice"] = m.group(1)
    return out


def reference(x, wq, wk, v, heads, d, rope_on=True):
    """float64 projection, RoPE and causal attention for the (b, h) pairs."""
    N = x.shape[1]
    cos, sin = ab.rope_tables(N, d, torch.float64)
    group = wq.shape[1] // wk.shape[1]
    mask = torch.ones(N, N, device=ab.DEV, dtype=torch.bool).tril()
    outs = []
    for b, h in heads:
        xb = x[b].double()
        qh = xb @ wq[:, h * d:(h + 1) * d].double()
        kh = xb @ wk[:, (h // group) * d:(h // group + 1) * d].double()
        if rope_on:
            qh = qh * cos + ab.rotate_half(qh) * sin
            kh = kh * cos + ab.rotate_half(kh) * sin
        s = (qh @ kh.T / math.sqrt(d)).masked_fill(~mask, float("-inf"))
        outs.append(torch.softmax(s, dim=-1) @ v[b, h // group].double())
    return outs


def one_shape(rt, B, N, d, Hkv, rows):
    H, C = ab.H, ab.H * d
    torch.manual_seed(N * 11 + d + Hkv)
    x = torch.randn(B, N, C, device=ab.DEV, dtype=ab.DT)
    wq = (torch.randn(C, H * d, device=ab.DEV) / math.sqrt(C)).to(ab.DT)
    wk = (torch.randn(C, Hkv * d, device=ab.DEV) / math.sqrt(C)).to(ab.DT)
    v = torch.randn(B, Hkv, N, d, device=ab.DEV, dtype=ab.DT)
    heads = [(0, 0), (B - 1, H - 1), (B // 2, H // 2 + 1)]
    refs = {True: reference(x, wq, wk, v, heads, d), False: reference(x, wq, wk, v, heads, d, False)}
    pred = predict(program(B, H, Hkv, N, d, C))
    row = dict(d=d, Hkv=Hkv, N=N, B=B, C=C, model_choice=pred.get("choice"),
               gemm_flops=2.0 * B * N * C * (H + Hkv) * d)
    stream = rt.stream()
    for strategy in ("norope",) + STRATEGIES:
        rope_on = strategy != "norope"
        ptx, manifest = compile_layer(program(B, H, Hkv, N, d, C, rope_on), strategy if rope_on else None)
        m = rt.load(ptx, manifest)
        name = json.loads(manifest)["programs"][0]["name"]
        out = torch.full((B, H, N, d), float("nan"), device=ab.DEV, dtype=ab.DT)
        ptrs = [x.data_ptr(), wq.data_ptr(), wk.data_ptr(), v.data_ptr(), out.data_ptr()]
        rt.launch(m, name, ptrs, stream)
        torch.cuda.synchronize()
        err = max(ab.rel_err(out[b, h], r) for (b, h), r in zip(heads, refs[rope_on]))
        row[f"{strategy}_err"] = err
        if not err < 2e-2:
            row[f"{strategy}_ms"] = None
            print(f"d={d} N={N} Hkv={Hkv} {strategy}: FAILED check (rel. err {err:.2e})", flush=True)
            continue
        row[f"{strategy}_ms"] = ab.bench(lambda: rt.launch(m, name, ptrs, stream))
        print(f"d={d} N={N} Hkv={Hkv} {strategy}: {row[f'{strategy}_ms']:.3f} ms, rel. err {err:.1e}", flush=True)
    for s in STRATEGIES:
        if row.get("norope_ms") is not None and s in pred:
            row[f"{s}_pred"] = row["norope_ms"] + pred[s]
    rows.append(row)


def table(rows, meta):
    out = [f"Date: {meta['date']}; GPU: {meta['gpu']}; driver {meta['driver']}; torch {meta['torch']}; "
           f"CUDA {meta['cuda']}.", "",
           "| d | Hkv | N | B | C | no RoPE ms | " + " | ".join(f"{s} ms meas / pred" for s in STRATEGIES)
           + " | max rel.err | model's choice | measured best | choice / best |",
           "|" + "---|" * (10 + len(STRATEGIES))]
    within = points = 0
    for r in rows:
        meas = {s: r.get(f"{s}_ms") for s in STRATEGIES if r.get(f"{s}_ms") is not None}
        if not meas or r.get("norope_ms") is None:
            continue
        best = min(meas, key=meas.get)
        choice = r.get("model_choice")
        ratio = meas.get(choice, float("nan")) / meas[best]
        points += 1
        within += ratio <= 1.03
        cells = []
        for s in STRATEGIES:
            m, p = r.get(f"{s}_ms"), r.get(f"{s}_pred")
            cells.append(f"{m:.3f} / {p:.3f}" if m is not None and p is not None else "failed")
        errs = [r[k] for k in r if k.endswith("_err")]
        out.append(f"| {r['d']} | {r['Hkv']} | {r['N']} | {r['B']} | {r['C']} | {r['norope_ms']:.3f} | "
                   + " | ".join(cells) + f" | {max(errs):.1e} | {choice} | {best} | {ratio:.3f} |")
    out += ["", f"`auto` (the model's choice) within 3% of the measured best: {within} of {points} points."]
    return "\n".join(out)


def chart(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    configs = sorted({(r["d"], r["Hkv"]) for r in rows}, reverse=True)
    fig, axes = plt.subplots(1, len(configs), figsize=(5 * len(configs), 4), squeeze=False)
    for ax, (d, hkv) in zip(axes[0], configs):
        rs = sorted((r for r in rows if r["d"] == d and r["Hkv"] == hkv), key=lambda r: r["N"])
        ns = [r["N"] for r in rs]
        for s in STRATEGIES:
            ys = [(r.get(f"{s}_ms") or float("nan")) / r["norope_ms"] for r in rs]
            ps = [(r.get(f"{s}_pred") or float("nan")) / r["norope_ms"] for r in rs]
            line = ax.plot(ns, ys, "o", label=f"{s} measured")[0]
            ax.plot(ns, ps, "-", color=line.get_color(), alpha=0.6, label=f"{s} predicted")
        ax.set_xscale("log", base=2)
        ax.set_title(f"projection + RoPE + attention, d={d}, Hkv={hkv}")
        ax.set_xlabel("N (B*N = 32K)")
        ax.set_ylabel("time / no-RoPE time")
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    shapes = [(d, N, hkv) for d in (128, 64) for hkv in (32, 8)
              for N in (1024, 2048, 4096, 8192, 16384, 32768)]
    shapes = ab.pick_shapes(shapes)
    meta = ab.run_meta()
    rt = ab.Runtime()
    rows = []
    for d, N, hkv in shapes:
        if time.time() > DEADLINE:
            print(f"skipping d={d} N={N} Hkv={hkv}: out of time", flush=True)
            continue
        one_shape(rt, ab.TOKENS // N, N, d, hkv, rows)
        torch.cuda.empty_cache()
        with open(f"{ab.OUT}/project_bench.json", "w") as f:
            json.dump(dict(meta=meta, rows=rows), f, indent=1)
    md = table(rows, meta)
    with open(f"{ab.OUT}/project_bench.md", "w") as f:
        f.write(md + "\n")
    try:
        chart(rows, f"{ab.OUT}/project_bench.png")
    except Exception as ex:  # the table matters more than the chart
        print("chart failed:", ex)
    print(md)


if __name__ == "__main__":
    main()
