#!/usr/bin/env python3
"""Compile latency of attn: IR -> PTX and IR -> loaded kernel, cold and warm.

Two sets of programs (--set; default plain on the CPU, hopper on a GPU):

plain: the small example programs (the plain and mma.sync paths). For each,
fresh processes (the Python binding over libattn, as a user would run it)
measure, median of --repeat runs:
  import        import attn and load libattn (libMLIR, libLLVM)
  ptx cold      attn.compile(IR, chip) as the first compile of a process
  ptx warm      the same compile again in that process
  load cold     attn.load(IR, device) in a fresh process with an empty cache:
                IR -> kernel ready to run (CPU: JIT-compiled; CUDA: loaded
                through attnrt, after torch made the CUDA context and attnrt
                attached to it: "attnrt init")
  load disk     attn.load in a fresh process that finds the disk cache
  load memory   attn.load again in the same process (memory hit)

hopper: RoPE + causal bf16 programs at the benchmark's shapes (H=32, 32768
tokens, theta 5e5; d=64 and 128, MHA and GQA with 8 KV heads), which get the
Hopper kernel on an H200. On a GPU, per program and per SASS path ("nvjitlink":
ATTN_NVJITLINK=always, PTX made into a cubin in-process and cached on disk
beside the PTX; "driver": ATTN_NVJITLINK=never, the default, the PTX
JIT-compiled by the driver at load), fresh processes with an empty attn cache and an empty driver cache
(CUDA_CACHE_PATH) measure the first call, "cold", and then processes that
find both caches, "warm":
  compile       attn_compile: IR -> PTX (0 when the disk cache has it)
  sass          PTX -> SASS through nvJitLink (driver path: inside load)
  load          module load (cuModuleLoadData; the driver's JIT on its path)
  disk          reading the disk cache entries
  launch        the first launch, to its end (torch.cuda.synchronize)
  first call    load + launch: IR to a finished first launch
The kernel's output is first checked against a float64 reference, on both
paths, and the kernel timed (kernel ms: median of 15 launches after 5, CUDA
events; the two paths make different SASS). On the CPU
machine the hopper set times IR -> PTX for sm_90a and PTX -> SASS through
nvJitLink (no GPU needed).

Results are appended to bench/compile_latency.md (and raw JSON to bench/raw/).

usage: bench/compile_latency.py [--device cpu|cuda] [--set plain|hopper]
                                [--repeat N] [--out FILE] [--no-write]
                                [program.mlir ...]
Needs the build's libraries ($ATTN_LIBRARY_DIR, default <repo>/build/lib).
"""
import argparse
import datetime
import json
import math
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


# The hopper set: (name, B, H, Hkv, N, d), bf16, RoPE rotate-half over all of
# d with theta 5e5 and a causal mask, as bench/attn_bench.py's shapes (32768
# tokens, H=32).
THETA = 500000.0
HOPPER = [("rope_causal_d128", 8, 32, 32, 4096, 128), ("rope_causal_d64", 8, 32, 32, 4096, 64),
          ("rope_causal_d128_gqa", 8, 32, 8, 4096, 128),
          ("rope_causal_d64_gqa", 8, 32, 8, 4096, 64)]


def hopper_text(B, H, Hkv, N, d):
    """The attn program of one hopper-set shape."""
    q = f"tensor<{B}x{H}x{N}x{d}xbf16>"
    k = f"tensor<{B}x{Hkv}x{N}x{d}xbf16>"
    s = f"tensor<{B}x{H}x{N}x{N}xbf16>"
    rope = f'{{theta = {THETA} : f64, rotary_dim = {d} : i64, layout = "rotate_half"}}'
    return (f"func.func @attn(%q: {q}, %k: {k}, %v: {k}) -> {q} {{\n"
            f'  %qr = "attn.rope"(%q) {rope} : ({q}) -> {q}\n'
            f'  %kr = "attn.rope"(%k) {rope} : ({k}) -> {k}\n'
            f'  %s = "attn.qk"(%qr, %kr) : ({q}, {k}) -> {s}\n'
            f'  %ss = "attn.scale"(%s) {{scale = {1.0 / math.sqrt(d)} : f64}} : ({s}) -> {s}\n'
            f'  %sc = "attn.causal"(%ss) : ({s}) -> {s}\n'
            f'  %p = "attn.softmax"(%sc) : ({s}) -> {s}\n'
            f'  %o = "attn.pv"(%p, %v) : ({s}, {k}) -> {q}\n'
            f"  return %o : {q}\n}}\n")


def hopper_reference(q, k, v, b):
    """Batch b of RoPE + causal attention in float64 (torch, on q's device)."""
    import torch
    q, k, v = (t[b].to(torch.float64) for t in (q, k, v))
    n, d = q.shape[-2], q.shape[-1]
    half = d // 2
    pos = torch.arange(n, dtype=torch.float64, device=q.device)
    inv = THETA ** (-2.0 * torch.arange(half, dtype=torch.float64, device=q.device) / d)
    ang = pos[:, None] * inv[None, :]
    c, s_ = torch.cos(ang), torch.sin(ang)

    def rot(x):
        a, bb = x[..., :half], x[..., half:]
        return torch.cat([a * c - bb * s_, bb * c + a * s_], dim=-1)
    q, k = rot(q), rot(k)
    g = q.shape[0] // k.shape[0]
    k, v = k.repeat_interleave(g, 0), v.repeat_interleave(g, 0)
    s = (q @ k.transpose(-1, -2)) / math.sqrt(d)
    s.masked_fill_(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def hopper_child(mode, name, device):
    """One fresh process of the hopper set on a GPU: "check" compares the
    kernel with the float64 reference; "first" times the first call."""
    B, H, Hkv, N, d = next(x[1:] for x in HOPPER if x[0] == name)
    t0 = time.perf_counter()
    import attn
    attn.version()
    out = {"import": (time.perf_counter() - t0) * 1e3}
    import torch
    gen = torch.Generator(device=device).manual_seed(1)
    q = torch.randn(B, H, N, d, device=device, dtype=torch.bfloat16, generator=gen)
    k, v = (torch.randn(B, Hkv, N, d, device=device, dtype=torch.bfloat16, generator=gen)
            for _ in range(2))
    torch.cuda.synchronize()
    t = time.perf_counter()
    attn._runtime(torch.device(device).index or 0)
    out["attnrt init"] = (time.perf_counter() - t) * 1e3
    text = hopper_text(B, H, Hkv, N, d)
    t = time.perf_counter()
    kernel = attn.load(text, device)
    out["load total"] = (time.perf_counter() - t) * 1e3
    times = attn._last_timings()
    for c in ("compile", "sass", "load", "disk"):
        out[c] = times.get(c, 0.0) * 1e3
    out["path"] = times.get("path")
    t = time.perf_counter()
    o = kernel(q, k, v)
    torch.cuda.synchronize()
    out["launch"] = (time.perf_counter() - t) * 1e3
    out["first call"] = out["load total"] + out["launch"]
    out["stats"] = attn.cache_stats()
    out["kernels"] = [x.get("kernel", x["name"]) for x in kernel.manifest["kernels"]]
    if mode == "check":
        # The kernel's own time (its SASS differs between the two paths).
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ms = []
        for _ in range(20):
            start.record()
            kernel(q, k, v, o)
            end.record()
            end.synchronize()
            ms.append(start.elapsed_time(end))
        out["kernel ms"] = statistics.median(ms[5:])
        errs = []
        for b in (0, B - 1):
            want = hopper_reference(q, k, v, b)
            got = o[b].to(torch.float64)
            errs.append(float((got - want).norm() / want.norm()))
            del want
        out["rel_err"] = max(errs)
    print(json.dumps(out))


def child(mode, path, device, chip):
    """Runs in a fresh process; prints one JSON object of milliseconds."""
    if mode in ("check", "first"):
        return hopper_child(mode, path, device)
    t0 = time.perf_counter()
    import attn
    attn.version()
    out = {"import": (time.perf_counter() - t0) * 1e3}
    if path.startswith("hopper:"):
        text = hopper_text(*next(x[1:] for x in HOPPER if x[0] == path[len("hopper:"):]))
    else:
        text = open(path).read()
    if mode == "ptx":
        for what in ("ptx cold", "ptx warm"):
            t = time.perf_counter()
            compiled = attn.compile(text, target=chip, format="ptx", source_name=path)
            out[what] = (time.perf_counter() - t) * 1e3
        out["ptx bytes"] = len(compiled.data)
        if path.startswith("hopper:"):
            # PTX -> SASS in-process (nvJitLink), as attn.load does on a GPU.
            import ctypes
            lib = attn._lib.attnrt()
            lib.attnrt_ptx_link.restype = ctypes.c_int
            lib.attnrt_ptx_link.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                            ctypes.POINTER(ctypes.c_void_p),
                                            ctypes.POINTER(ctypes.c_size_t)]
            cubin, n = ctypes.c_void_p(), ctypes.c_size_t()
            t = time.perf_counter()
            st = lib.attnrt_ptx_link(compiled.data, len(compiled.data), chip.encode(),
                                     ctypes.byref(cubin), ctypes.byref(n))
            out["sass"] = (time.perf_counter() - t) * 1e3
            if st:
                sys.exit("nvJitLink failed: %s" % lib.attnrt_last_error(None).decode())
            out["cubin bytes"] = n.value
            lib.attnrt_cubin_free(cubin)
            out["kernels"] = [x.get("kernel", x["name"]) for x in compiled.manifest["kernels"]]
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


def run_child(mode, path, device, chip, cache, extra_env=None):
    env = dict(os.environ, ATTN_CACHE_DIR=cache,
               PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(ROOT, "python"),
                                                        os.environ.get("PYTHONPATH")])))
    env.update(extra_env or {})
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
    ap.add_argument("--set", choices=("plain", "hopper"), default=None,
                    help="the programs (default: plain on the CPU, hopper on a GPU)")
    ap.add_argument("--paths", choices=("both", "driver", "nvjitlink"), default="both",
                    help="hopper set on a GPU: the SASS paths to time (default both)")
    ap.add_argument("programs", nargs="*")
    a = ap.parse_args()
    if a.child:
        return child(*a.child)
    a.set = a.set or ("hopper" if a.device.startswith("cuda") else "plain")
    if a.set == "hopper":
        return main_hopper(a)
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


def main_hopper(a):
    """The hopper set: on a GPU, check and time the first call on both SASS
    paths; on the CPU, IR -> PTX and PTX -> SASS."""
    if a.device.startswith("cuda"):
        os.environ.setdefault("ATTN_LIBRARY_DIR", os.path.join(ROOT, "build", "lib"))
        sys.path.insert(0, os.path.join(ROOT, "python"))
    gpu = a.device.startswith("cuda")
    chip = a.chip or (gpu_chip(a.device) if gpu else "sm_90a")
    names = [x[0] for x in HOPPER if not a.programs or x[0] in a.programs]
    raw, rows, kernel_ms = [], [], {}
    # nvjitlink: every PTX through nvJitLink (ATTN_NVJITLINK=always); driver:
    # the driver's JIT (never, the default; auto gives the Hopper kernel,
    # whose PTX uses setmaxnreg, to the driver too).
    paths = ((("nvjitlink", {"ATTN_NVJITLINK": "always"}), ("driver", {"ATTN_NVJITLINK": "never"}))
             if gpu else ((None, {}),))
    if gpu and a.paths != "both":
        paths = tuple(p for p in paths if p[0] == a.paths)
    for name in names:
        B, H, Hkv, N, d = next(x[1:] for x in HOPPER if x[0] == name)
        shape = "%dx%dx%dx%d, Hkv %d" % (B, H, N, d, Hkv)
        for path, env in (paths if gpu else ()):
            with tempfile.TemporaryDirectory(prefix="attn-cache-") as cache:
                r = run_child("check", name, a.device, chip, cache,
                              dict(env, CUDA_CACHE_PATH=os.path.join(cache, "nv")))
            raw.append(dict(r, mode="check", sass_path=path, program=name))
            if not r["rel_err"] < 2e-2:
                sys.exit("compile_latency: %s (%s): relative error %.3g against float64"
                         % (name, path, r["rel_err"]))
            kernel_ms[(name, path)] = r["kernel ms"]
            print("%s (%s, %s): kernels %s, relative error %.2e against float64 (batches 0 "
                  "and %d), kernel %.3f ms" % (name, path, r["path"], r["kernels"], r["rel_err"],
                                                B - 1, r["kernel ms"]), flush=True)
        for path, env in paths:
            samples = {}
            for _ in range(a.repeat):
                with tempfile.TemporaryDirectory(prefix="attn-cache-") as cache:
                    env2 = dict(env, CUDA_CACHE_PATH=os.path.join(cache, "nv"))
                    for when in ("cold", "warm"):
                        if gpu:
                            r = run_child("first", name, a.device, chip, cache, env2)
                            if when == "warm" and r["stats"]["compiles"] != 0:
                                sys.exit("compile_latency: no disk hit for %s" % name)
                        else:
                            if when == "warm":
                                continue
                            r = run_child("ptx", "hopper:" + name, a.device, chip, cache)
                        raw.append(dict(r, mode=when, sass_path=path, program=name))
                        for c, v in r.items():
                            if isinstance(v, (int, float)):
                                samples.setdefault((when, c), []).append(v)
                        samples.setdefault((when, "path"), []).append(r.get("path"))
            med = {k: statistics.median(v) for k, v in samples.items()
                   if k[1] != "path"}
            med.update({k: "/".join(sorted(set(map(str, v)))) for k, v in samples.items()
                        if k[1] == "path"})
            rows.append((name, shape, path, med))
    if gpu:
        cols = ["compile", "sass", "load", "disk", "launch", "first call"]
        head = ("| program | shape | SASS by | run | " + " | ".join(c + " ms" for c in cols) +
                " | path | kernel ms |\n|---|---|---|---|" + "---:|" * len(cols) + "---|---:|\n")
        body = ""
        for name, shape, path, med in rows:
            for when in ("cold", "warm"):
                body += "| %s | %s | %s | %s | %s | %s | %.3f |\n" % (
                    name, shape, path, when,
                    " | ".join(_ms(med[(when, c)]) if (when, c) in med else "-" for c in cols),
                    med.get((when, "path"), "-"), kernel_ms[(name, path)])
        worst = {}
        for _, _, p, med in rows:
            worst[p] = max(worst.get(p, 0.0), med[("cold", "first call")])
        verdict = "Target < 500 ms cold first call: %s" % "; ".join(
            "%s path %s (worst %.0f ms)" % (p, "met" if w < 500 else "NOT met", w)
            for p, w in sorted(worst.items()))
    else:
        cols = ["import", "ptx cold", "ptx warm", "sass"]
        head = ("| program | shape | " + " | ".join(c + " ms" for c in cols) +
                " | PTX bytes | cubin bytes |\n|---|---|" + "---:|" * (len(cols) + 2) + "\n")
        body = "".join("| %s | %s | %s | %d | %d |\n" % (
            name, shape, " | ".join(_ms(med[("cold", c)]) for c in cols),
            med[("cold", "ptx bytes")], med[("cold", "cubin bytes")])
            for name, shape, _, med in rows)
        verdict = "IR -> PTX -> SASS (nvJitLink) on this machine, no GPU"
    now = datetime.datetime.now().astimezone()
    section = ("\n## %s, %s: Hopper programs\n\nMachine: %s. Device: %s; PTX for %s; attn %s; "
               "median of %d fresh processes per cell. %s.\n\n%s" % (
                   now.strftime("%Y-%m-%d %H:%M %Z"), platform.node() or "?", machine(),
                   a.device, chip, _version(), a.repeat, verdict, head + body))
    print(section)
    if a.no_write:
        return
    with open(a.out, "a") as f:
        f.write(section)
    rawdir = os.path.join(os.path.dirname(os.path.abspath(a.out)), "raw")
    os.makedirs(rawdir, exist_ok=True)
    with open(os.path.join(rawdir, "%s-compile-latency-hopper-%s.json" % (
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
