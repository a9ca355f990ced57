#!/usr/bin/env python3
"""Turns the JSON of gemm_bench and comm_bench into the bench/RESULTS.md section.

    comm_results.py [options] [DIR]

DIR holds what bench/run_comm_bench.sh leaves in $OUT: gemm_bench.json,
comm_bench.json, env.txt and the logs (bench.log, comm_rank*.log). The
section (markdown between two marker comments) goes to stdout, to --section
PATH, and with --update RESULTS.md replaces the same section in that file
(or is appended to it). --raw-dir DIR copies the JSON and the logs there as
<date>-gemm-bench.json, <date>-comm-bench.json and <date>-comm-bench.log,
next to RESULTS.md as STYLE 2.10 asks.

After a GPU run, from the checkout:
    python3 bench/comm_results.py --update bench/RESULTS.md --raw-dir bench/raw FILES_AT
"""
import argparse
import json
import os
import shutil
import sys

BEGIN = "<!-- bench:gemm-comm:begin (bench/comm_results.py writes this section) -->"
END = "<!-- bench:gemm-comm:end -->"

# notes/anchors-h200.md B4 (run 2): torch + NCCL on the same kind of machine,
# per GPU, ms. gemm, comm, sequential, 2-stream.
ANCHOR_B4 = {
    ("8192x8192x8192", "gemm+allreduce"): (1.397, 0.492, 1.892, 1.872),
    ("8192x8192x8192", "allgather+gemm"): (1.397, 0.311, 1.752, 1.741),
    ("8192x8192x8192", "gemm+reducescatter"): (1.397, 0.324, 1.812, 1.730),
    ("4096x8192x4096", "gemm+allreduce"): (0.381, 0.257, 0.607, 0.585),
    ("4096x8192x4096", "allgather+gemm"): (0.381, 0.096, 0.445, 0.421),
    ("4096x8192x4096", "gemm+reducescatter"): (0.381, 0.173, 0.545, 0.504),
}
# notes/anchors-h200.md A1 / B6: torch.matmul 8192^3 bf16, sustained.
ANCHOR_MATMUL_8192 = 1.553


def version(code, scale):
    """13000 -> '13.0' (CUDA, scale 1000); 22803 -> '2.28.3' (NCCL)."""
    if not code:
        return "?"
    code = int(code)
    if scale == "cuda":
        return f"{code // 1000}.{code % 1000 // 10}"
    if scale == "nccl":
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    if scale == "cublas":  # 130100 -> 13.1.0
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return str(code)


def load(path):
    if path and os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return None


def read_env(path):
    env = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                if ":" in line:
                    k, v = line.split(":", 1)
                    env[k.strip()] = v.strip()
    return env


def f3(x):
    return "-" if x is None else f"{x:.3f}"


def ratio(num, den):
    return "-" if not num or not den else f"{num / den:.2f}x"


def relerr(x):
    """A relative error; the programs write a non-finite one as 1e30."""
    if x is None:
        return "-"
    return "inf" if x >= 1e29 else f"{x:.1e}"


def cell(v):
    """A variant's ms, or its status when it was not timed."""
    if v is None:
        return "-"
    if "ms" in v:
        return f"{v['ms']:.3f}"
    return v.get("status", "-")


def gemm_section(g):
    lines = ["### bf16 GEMM on one GPU: attn's kernel vs cuBLAS", ""]
    m = g["meta"]
    lines.append(
        f"`gemm_bench` on GPU {m.get('device', 0)}: "
        + (f"{m['rounds']:.0f} rounds per shape taking cuBLAS and attn in turn (cuBLAS first in even rounds, "
           f"attn in odd ones), each {m.get('iters')} launches after {m.get('warmup')} warm-up launches, "
           f"the median over all the launches"
           if m.get("rounds") else f"median of {m.get('iters')} launches after {m.get('warmup')} warm-up launches")
        + (f", the GPU idle for {m['cooldown_ms']:.0f} ms before each" if m.get("cooldown_ms") else "")
        + " (CUDA events, no L2 flush). 'attn vs cuBLAS' = cuBLAS ms / attn ms "
        "(above 1: attn is faster); 'cuBLAS vs A1' = the anchors' torch.matmul 8192^3 (1.553 ms, "
        "sustained) / cuBLAS ms here.")
    lines.append("")
    lines.append("| M x N x K | cuBLAS ms | cuBLAS TFLOP/s | attn ms | attn TFLOP/s | attn vs cuBLAS | "
                 "rel.err cuBLAS / attn | attn kernel | attn compile s | note |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    rows = g.get("rows", [])
    shapes = []
    for r in rows:
        if r["shape"] not in shapes:
            shapes.append(r["shape"])
    notes = []
    for s in shapes:
        cub = next((r for r in rows if r["shape"] == s and r["impl"] == "cublas"), {})
        att = next((r for r in rows if r["shape"] == s and r["impl"] == "attn"), {})
        note = []
        for r in (cub, att):
            if r and r.get("status") != "ok":
                note.append(f"{r['impl']} {r.get('status')}")
                if r.get("error"):
                    notes.append(f"- {s} {r['impl']}: {r.get('status')}: {r['error']}")
        if s == "8192x8192x8192" and "ms" in cub:
            note.append(f"cuBLAS vs A1 {ANCHOR_MATMUL_8192 / cub['ms']:.2f}x")
        err = " / ".join(relerr(r.get("rel_l2")) for r in (cub, att))
        lines.append("| " + " | ".join([
            s, f3(cub.get("ms")), f"{cub['tflops']:.0f}" if "tflops" in cub else "-",
            f3(att.get("ms")), f"{att['tflops']:.0f}" if "tflops" in att else "-",
            ratio(cub.get("ms"), att.get("ms")), err, att.get("kernel_config", "-"),
            f"{att['compile_s']:.2f}" if "compile_s" in att else "-", "; ".join(note)]) + " |")
    return lines + [""] + notes + ([""] if notes else [])


def comm_section(c):
    m = c["meta"]
    lines = [f"### GEMM + collective on {m.get('world')} GPUs, per rank (shapes and patterns as B4)", ""]
    lines.append(
        f"`comm_bench`, one process per GPU: a one-element all_reduce barrier before each of "
        f"{m.get('iters')} iterations (after {m.get('warmup')} warm-up iterations"
        + (f", the GPUs idle for {m['cooldown_ms']:.0f} ms before each variant" if m.get("cooldown_ms") else "")
        + "), CUDA events on the main stream, "
        + (f"the fused and sequential variants then timed again in {m['rounds']:.0f} rounds in turn (fused first "
           f"in even rounds), their ms the mean of the rounds' (each round the same statistic), "
           if m.get("rounds") else "")
        + "median per rank, max over ranks. comm MiB = the collective's full buffer. ideal = max(gemm, comm). "
        "'X vs B4' = the anchors' torch time / the time here (above 1: this harness is faster). "
        "'fused vs X' = X ms / fused ms. NCCL symmetric = the sequential baseline on buffers from "
        "attnrt_comm_buffer_alloc (NCCL symmetric windows), the fused kernel's buffers"
        + (f"; the fused kernel's output: {m['fused_out']}" if m.get("fused_out") else "") + ".")
    lines.append("")
    lines.append("| shape MxNxK | pattern | gemm ms (TFLOP/s) | comm ms (MiB) | sequential ms | 2-stream ms | "
                 "ideal ms | seq / ideal | seq vs B4 | 2-stream vs B4 | NCCL symmetric ms | attn fused ms | "
                 "fused vs seq | fused vs 2-stream | max rel.err |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    notes = []
    for r in c.get("rows", []):
        g, cm, sq, two = r.get("gemm", {}), r.get("comm", {}), r.get("sequential", {}), r.get("two_stream", {})
        sym, fu = r.get("nccl_symmetric", {}), r.get("attn_fused", {})
        b4 = ANCHOR_B4.get((r["shape"], r["pattern"]))
        gcell = f"{g['ms']:.3f} ({g['tflops']:.0f})" if "ms" in g else g.get("status", "-")
        ccell = f"{cm['ms']:.3f} ({r['comm_MiB']:.0f})" if "ms" in cm else cm.get("status", "-")
        ideal = r.get("ideal_ms")
        errs = [v["rel_l2"] for v in (sq, two, sym, fu) if v.get("rel_l2") is not None]
        lines.append("| " + " | ".join([
            r["shape"], r["pattern"], gcell, ccell, cell(sq), cell(two), f3(ideal),
            "-" if not ideal or "ms" not in sq else f"{sq['ms'] / ideal:.2f}",
            ratio(b4[2], sq.get("ms")) if b4 else "-", ratio(b4[3], two.get("ms")) if b4 else "-",
            cell(sym), cell(fu), ratio(sq.get("ms"), fu.get("ms")), ratio(two.get("ms"), fu.get("ms")),
            relerr(max(errs)) if errs else "-"]) + " |")
        for name in ("gemm", "comm", "sequential", "two_stream", "nccl_symmetric", "attn_fused"):
            v = r.get(name, {})
            if v.get("error") and v.get("status") not in ("not built",):
                notes.append(f"- {r['shape']} {r['pattern']} {name}: {v.get('status')}: {v['error']}")
    return lines + [""] + notes + ([""] if notes else [])


def section(g, c, env, files):
    meta = (c or g or {}).get("meta", {})
    date = (meta.get("date") or "unknown date").split(" ")[0]
    lines = [BEGIN, f"## {date} — bf16 GEMM and GEMM + collective, fused and unfused (bench/run_comm_bench.sh, issue 6)", ""]
    lines.append("- Command: `bench/run_comm_bench.sh` on the two-H200 machine (after "
                 "`bench/run_comm_bench.sh --stage build` here); this section by `bench/comm_results.py`.")
    gpu = env.get("gpu") or meta.get("gpu", "?")
    parts = [f"GPU: {gpu}" + (f" x {c['meta'].get('world')}" if c else "")]
    if env.get("driver"):
        parts.append(f"driver {env['driver']}")
    parts.append(f"driver CUDA {version(meta.get('driver_cuda_version'), 'cuda')}")
    if meta.get("cudart_version"):
        parts.append(f"CUDA runtime {version(meta.get('cudart_version'), 'cuda')}")
    if meta.get("cublas_version"):
        parts.append(f"cuBLAS {version(meta.get('cublas_version'), 'cublas')} ({meta.get('cublas_library')})")
    if c:
        parts.append(f"NCCL {version(c['meta'].get('nccl_version'), 'nccl')}, "
                     f"NCCL_NVLS_ENABLE={c['meta'].get('NCCL_NVLS_ENABLE')}")
    if g:
        parts.append(f"attn {g['meta'].get('attn_version')}")
    if env.get("commit"):
        parts.append(f"attn commit {env['commit']}")
    lines.append("- " + "; ".join(parts) + ".")
    if env.get("topo"):
        lines.append(f"- Link: {env['topo']}.")
    if env.get("clocks"):
        lines.append(f"- Clocks at the start: {env['clocks']}.")
    tol = (g or c)["meta"] if (g or c) else {}
    lines.append(
        "- Checks before any timing: inputs uniform in [-1, 1) from a seeded generator, different on each rank; "
        "outputs poisoned with NaN; sampled rows (the first, the last, random ones; every column) against "
        "float64 (lib/Reference: attn_comm_reference); pass when ||err||/||ref|| <= "
        f"{tol.get('tol_rel_l2', 0.01):g} and max|err|/rms(ref) <= {tol.get('tol_max_abs_over_rms', 0.05):g} "
        "(bf16 rounding gives about 1e-3 and 2e-3 after a reducing collective).")
    if files:
        lines.append("- Raw: " + ", ".join(f"`{f}`" for f in files) + ".")
    lines.append("")
    if g:
        lines += gemm_section(g)
    else:
        lines += ["### bf16 GEMM on one GPU", "", "gemm_bench left no JSON (see the log).", ""]
    if c:
        lines += comm_section(c)
    else:
        lines += ["### GEMM + collective", "", "comm_bench left no JSON (see the rank logs).", ""]
    lines.append(END)
    return "\n".join(lines) + "\n"


def update(path, text):
    old = open(path).read() if os.path.exists(path) else ""
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        new = head + text.rstrip("\n") + tail
    else:
        new = old.rstrip("\n") + ("\n\n" if old else "") + text
    with open(path, "w") as f:
        f.write(new)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", help="folder with gemm_bench.json, comm_bench.json, env.txt, logs")
    ap.add_argument("--gemm", help="gemm_bench's JSON (default DIR/gemm_bench.json)")
    ap.add_argument("--comm", help="comm_bench's JSON (default DIR/comm_bench.json)")
    ap.add_argument("--env", help="run_comm_bench.sh's env.txt (default DIR/env.txt)")
    ap.add_argument("--section", help="write the section to this file")
    ap.add_argument("--update", help="replace (or append) the section in this markdown file")
    ap.add_argument("--raw-dir", help="copy the JSON and logs here as <date>-*.json/.log")
    a = ap.parse_args()
    d = a.dir or "."
    gpath = a.gemm or os.path.join(d, "gemm_bench.json")
    cpath = a.comm or os.path.join(d, "comm_bench.json")
    g, c = load(gpath), load(cpath)
    env = read_env(a.env or os.path.join(d, "env.txt"))
    if not g and not c:
        print(f"comm_results: neither {gpath} nor {cpath} exists", file=sys.stderr)
        return 1
    files = []
    if a.raw_dir:
        os.makedirs(a.raw_dir, exist_ok=True)
        date = ((c or g)["meta"].get("date") or "unknown").split(" ")[0]
        for src, name in ((gpath, "gemm-bench.json"), (cpath, "comm-bench.json")):
            if os.path.exists(src):
                dst = os.path.join(a.raw_dir, f"{date}-{name}")
                shutil.copyfile(src, dst)
                files.append(os.path.relpath(dst))
        logs = [os.path.join(d, n) for n in ("env.txt", "bench.log", "comm_rank0.log", "comm_rank1.log")]
        logs = [p for p in logs if os.path.exists(p)]
        if logs:
            dst = os.path.join(a.raw_dir, f"{date}-comm-bench.log")
            with open(dst, "w") as f:
                for p in logs:
                    f.write(f"==> {os.path.basename(p)} <==\n")
                    with open(p, errors="replace") as src:
                        f.write(src.read())
                    f.write("\n")
            files.append(os.path.relpath(dst))
    text = section(g, c, env, files)
    sys.stdout.write(text)
    if a.section:
        with open(a.section, "w") as f:
            f.write(text)
    if a.update:
        update(a.update, text)
    # Fail when a check failed or a variant broke, so scripts notice.
    bad = [r for r in (g or {}).get("rows", []) if r.get("status") in ("check failed", "error")]
    for r in (c or {}).get("rows", []):
        for v in r.values():
            if isinstance(v, dict) and v.get("status") in ("check failed", "error"):
                bad.append(v)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
