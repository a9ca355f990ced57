#!/usr/bin/env python3
"""Compile latency of attn: IR -> PTX and IR -> loaded kernel, cold and warm.

For each program, fresh processes (the Python binding over libattn, as a user
would run it) measure, median of --repeat runs:
  import        import attn and load libattn (libMLIR, libLLVM)
  ptx cold      attn.compile(IR, chip) as the first compile of a process
  ptx warm      the same compile again in that process
  load cold     attn.load(IR, device) in a fresh process with an empty cache:
                IR -> kernel ready to run (CPU: JIT-compiled; CUDA: PTX loaded
                by the driver through attnrt, after torch made the CUDA
                context and attnrt attached to it: "attnrt init")
  load disk     attn.load in a fresh process that finds the disk cache
  load memory   attn.load again in the same process (memory hit)
The target is < 0.5 s IR -> PTX per kernel. Results are appended to
bench/compile_latency.md (and raw JSON to bench/raw/).

usage: bench/compile_latency.py [--device cpu|cuda] [--repeat N] [--out FILE]
                                [--no-write] [program.mlir ...]
Needs the build's libraries ($ATTN_LIBRARY_DIR, default <repo>/build/lib).
"""
import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = ["examples/rope_causal.mlir", "test/Inputs/tiny_f32.mlir",
            "test/Inputs/causal_f32.mlir", "test/Inputs/cross_f32.mlir",
            "test/Inputs/plain_f16.mlir", "test/Inputs/gqa_bf16.mlir"]


def child(mode, path, device, chip):
    """Runs in a fresh process; prints one JSON object of milliseconds."""
    t0 = time.perf_counter()
    import attn
    attn.version()
    out = {"import": (time.perf_counter() - t0) * 1e3}
    text = open(path).read()
    if mode == "ptx":
        for what in ("ptx cold", "ptx warm"):
            t = time.perf_counter()
            compiled = attn.compile(text, target=chip, format="ptx", source_name=path)
            out[what] = (time.perf_counter() - t) * 1e3
        out["ptx bytes"] = len(compiled.data)
    else:
        if device.startswith("cuda"):
            # As in a torch program: the CUDA context exists before attn runs.
            import torch
            torch.zeros(1, device=device)
            t = time.perf_counter()
            attn._runtime(torch.device(device).index or 0)
            out["attnrt init"] = (time.perf_counter() - t) * 1e3
        t = time.perf_counter()
        attn.load(text, device)
        out["load cold" if mode == "load-cold" else "load disk"] = (time.perf_counter() - t) * 1e3
        t = time.perf_counter()
        attn.load(text, device)
        out["load memory"] = (time.perf_counter() - t) * 1e3
        out["stats"] = attn.cache_stats()
    print(json.dumps(out))


def run_child(mode, path, device, chip, cache):
    env = dict(os.environ, ATTN_CACHE_DIR=cache,
               PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(ROOT, "python"),
                                                        os.environ.get("PYTHONPATH")])))
    env.setdefault("ATTN_LIBRARY_DIR", os.path.join(ROOT, "build", "lib"))
    res = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", mode, path,
                          device, chip], env=env, capture_output=True, text=True)
    if res.returncode:
        sys.exit("compile_latency: %s %s failed:\n%s" % (mode, path, res.stderr))
    return json.loads(res.stdout.strip().splitlines()[-1])


def gpu_chip(device):
    """The chip attn compiles for on the GPU (as attn.load picks it)."""
    import attn
    kind, index = attn._parse_device(device)
    return attn._runtime(index or 0)[1]


def shape_of(text):
    m = re.search(r"func\.func @\w+\(%\w+: tensor<([0-9x]+)x(\w+)>", text)
    return "%s %s" % (m.group(1), m.group(2)) if m else "?"


def machine():
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = re.search(r"model name\s*:\s*(.*)", f.read()).group(1)
    except (OSError, AttributeError):
        pass
    return "%s, %d cores (%s, Python %s)" % (cpu, os.cpu_count(), platform.platform(),
                                             platform.python_version())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda[:N]")
    ap.add_argument("--chip", default=None, help="PTX target (default: the GPU's, else sm_90a)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "compile_latency.md"))
    ap.add_argument("--no-write", action="store_true", help="print the table only")
    ap.add_argument("programs", nargs="*")
    a = ap.parse_args()
    if a.child:
        return child(*a.child)
    if a.device.startswith("cuda"):
        os.environ.setdefault("ATTN_LIBRARY_DIR", os.path.join(ROOT, "build", "lib"))
        sys.path.insert(0, os.path.join(ROOT, "python"))
    chip = a.chip or (gpu_chip(a.device) if a.device.startswith("cuda") else "sm_90a")
    programs = a.programs or [os.path.join(ROOT, p) for p in PROGRAMS]
    cols = ["import", "ptx cold", "ptx warm", "load cold", "load disk", "load memory"]
    if a.device.startswith("cuda"):
        cols.append("attnrt init")
    rows, raw = [], []
    for path in programs:
        samples = {c: [] for c in cols}
        for _ in range(a.repeat):
            with tempfile.TemporaryDirectory(prefix="attn-cache-") as cache:
                for mode in ("ptx", "load-cold", "load-disk"):
                    r = run_child(mode, path, a.device, chip, cache)
                    raw.append(dict(r, mode=mode, program=os.path.relpath(path, ROOT)))
                    for c in cols:
                        if c in r and (c != "import" or mode == "ptx") and \
                                (c != "attnrt init" or mode == "load-cold"):
                            samples[c].append(r[c])
                    if mode == "load-disk" and r["stats"]["compiles"] != 0:
                        sys.exit("compile_latency: the disk cache did not hit for %s" % path)
        med = {c: statistics.median(v) for c, v in samples.items() if v}
        with open(path) as f:
            rows.append((os.path.relpath(path, ROOT), shape_of(f.read()), med))
    head = ("| program | shape | " + " | ".join(c + " ms" for c in cols) + " |\n"
            "|---|---|" + "---:|" * len(cols) + "\n")
    table = head + "".join("| %s | %s | %s |\n" % (
        p, s, " | ".join(_ms(m[c]) if c in m else "-" for c in cols)) for p, s, m in rows)
    worst = max(m["ptx cold"] for _, _, m in rows)
    now = datetime.datetime.now().astimezone()
    section = ("\n## %s, %s\n\nMachine: %s. Device for loads: %s; PTX for %s; attn %s; median "
               "of %d fresh processes per cell. Target < 500 ms IR -> PTX: %s (worst cold "
               "%.0f ms).\n\n%s" % (
                   now.strftime("%Y-%m-%d %H:%M %Z"), platform.node() or "?", machine(),
                   a.device, chip, _version(), a.repeat,
                   "met" if worst < 500 else "NOT met", worst, table))
    print(section)
    if a.no_write:
        return
    if not os.path.exists(a.out):
        with open(a.out, "w") as f:
            f.write("# Compile latency\n\nWritten by `bench/compile_latency.py` (see its "
                    "docstring for what each column measures); one section per run, newest "
                    "last. `ptx` columns: IR text -> PTX in-process through libattn; `load` "
                    "columns: IR text -> a kernel ready to launch (CPU: JIT; CUDA: PTX "
                    "loaded by the driver).\n")
    with open(a.out, "a") as f:
        f.write(section)
    rawdir = os.path.join(os.path.dirname(os.path.abspath(a.out)), "raw")
    os.makedirs(rawdir, exist_ok=True)
    with open(os.path.join(rawdir, "%s-compile-latency-%s.json" % (
            now.strftime("%Y-%m-%d"), a.device.replace(":", ""))), "w") as f:
        json.dump({"date": now.isoformat(), "machine": machine(), "device": a.device,
                   "chip": chip, "runs": raw}, f, indent=1)


def _ms(x):
    return "%.0f" % x if x >= 10 else "%.2f" % x


def _version():
    sys.path.insert(0, os.path.join(ROOT, "python"))
    os.environ.setdefault("ATTN_LIBRARY_DIR", os.path.join(ROOT, "build", "lib"))
    import attn
    return attn.version()


if __name__ == "__main__":
    main()
