#!/usr/bin/env python3
"""Host time of one cached attn.attention call (issue 28, item 5).

Times, per call, after the output is checked against a float64 reference:
  attention         attn.attention on a cached shape (the fast path)
  full path         the same call through the full path (argument checks,
                    program text built and hashed, load() lookups): what every
                    cached call cost before the fast path
  Kernel.__call__   the loaded kernel's own call (attn.load(...)(q, k, v)),
                    with its parameter checks
  Kernel._run       the launch alone: pointers marshalled, output allocated
  sdpa              torch.nn.functional.scaled_dot_product_attention (torch
                    tensors, torch >= 2.0)
On a GPU the host time is the time to queue a batch of --batch calls (fewer
than the driver's launch queue holds, so the host never waits for the GPU),
synchronised outside the timed loop, median over batches; CUDA graphs are
off. The GPU time of each row (CUDA events) is printed beside it. On the CPU
(--device cpu, fake tensors from test/python/Inputs/fake_tensor.py or torch
CPU tensors) calls run synchronously: host = call - the kernel's own run
(attn_cpu_kernel_run timed alone), a smoke check of the Python-side costs.

usage: bench/host_overhead.py [--device cuda|cpu] [--tensors torch|fake]
           [--shape B,H,N,D] [--dtype bfloat16] [--calls 10000] [--batch 200]
           [--out FILE]
Writes $OUT/host_overhead.json (or --out). Needs the build's libraries
($ATTN_LIBRARY_DIR, default <repo>/build/lib) and python/ on the path (added).
"""
import argparse
import datetime
import json
import math
import os
import platform
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "test", "python", "Inputs"))
os.environ.setdefault("ATTN_LIBRARY_DIR", os.path.join(ROOT, "build", "lib"))
import attn  # noqa: E402


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--tensors", default=None, choices=("torch", "fake"),
                   help="default torch (fake on the CPU where torch is missing)")
    p.add_argument("--shape", default=None,
                   help="B,H,N,D (default 1,16,777,64 on a GPU, 1,1,8,8 on the CPU)")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--calls", type=int, default=10000)
    p.add_argument("--batch", type=int, default=200)
    p.add_argument("--out", default=None)
    a = p.parse_args()
    if a.tensors is None:
        try:
            import torch  # noqa: F401
            a.tensors = "torch"
        except ImportError:
            a.tensors = "fake"
    if a.device == "cuda" and a.tensors == "fake":
        p.error("--device cuda needs torch tensors")
    a.shape = tuple(int(x) for x in (a.shape or ("1,16,777,64" if a.device == "cuda" else
                                                 "1,1,8,8")).split(","))
    return a


def make_inputs(a):
    if a.tensors == "fake":
        import random
        from fake_tensor import randn
        rng = random.Random(0)
        return [randn(a.shape, a.dtype, rng) for _ in range(3)]
    import torch
    torch.manual_seed(0)
    return [torch.randn(a.shape, dtype=getattr(torch, a.dtype), device=a.device)
            for _ in range(3)]


def check(a, q, k, v, o):
    """Relative error of o against float64 causal attention."""
    if a.tensors == "fake":
        import reference
        want = reference.attention(q.values(), k.values(), v.values(), q.shape, k.shape,
                                   v.shape, causal=True)
        return reference.rel_error(o.values(), want)
    import torch
    q64, k64, v64 = (t.double() for t in (q, k, v))
    s = q64 @ k64.transpose(-1, -2) / math.sqrt(q.shape[-1])
    n = q.shape[2]
    s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    want = torch.softmax(s, -1) @ v64
    return ((o.double() - want).norm() / want.norm()).item()


def host_time_cpu(fn, calls, repeats=5):
    """Seconds per call of fn() on the CPU: the least over repeats runs of
    calls / repeats calls (the shared cores' noise only adds)."""
    fn()
    n = max(1, calls // repeats)
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t) / n)
    return best


def host_time_gpu(fn, calls, batch):
    """(host seconds per call, GPU seconds per call): the time to queue a
    batch, synchronised outside the loop, median over batches; the GPU time
    of a batch from CUDA events."""
    import torch
    fn()
    torch.cuda.synchronize()
    host, gpu = [], []
    for _ in range(max(1, calls // batch)):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        t = time.perf_counter()
        for _ in range(batch):
            fn()
        host.append((time.perf_counter() - t) / batch)
        end.record()
        torch.cuda.synchronize()
        gpu.append(start.elapsed_time(end) * 1e-3 / batch)
    return statistics.median(host), statistics.median(gpu)


def main():
    a = parse()
    q, k, v = make_inputs(a)
    o = attn.attention(q, k, v, mask="causal")
    err = check(a, q, k, v, o)
    tol = {"float32": 1e-4, "float16": 5e-3, "bfloat16": 2e-2}[a.dtype]
    if not err <= tol:
        sys.exit("host_overhead: attn.attention is off the float64 reference: %.3g > %g"
                 % (err, tol))
    kernel = attn.load(attn.build_program(q, k, v, mask="causal"), a.device)
    rows = [("attention", lambda: attn.attention(q, k, v, mask="causal")),
            ("full path", lambda: attn._attention(q, k, v, None, "causal", None, None, None,
                                                  None, None, None, None, None)),
            ("Kernel.__call__", lambda: kernel(q, k, v)),
            ("Kernel._run", lambda: kernel._run([q, k, v]))]
    sdpa = None
    if a.tensors == "torch":
        import torch
        sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if sdpa is not None:
        rows.append(("sdpa", lambda: sdpa(q, k, v, is_causal=True)))
    results = []
    if a.device == "cpu":
        out = kernel._run([q, k, v])
        ptrs = [t.data_ptr() for t in (q, k, v, out)]
        run = host_time_cpu(lambda: kernel._loaded.run(kernel.name, ptrs), a.calls)
        for name, fn in rows:
            total = host_time_cpu(fn, a.calls)
            host = total - run if name != "sdpa" else None
            results.append({"name": name, "call_us": total * 1e6,
                            "host_us": None if host is None else host * 1e6})
        print("CPU kernel's own run (attn_cpu_kernel_run): %.1f us" % (run * 1e6))
        print("%-16s %10s %10s" % ("", "call us", "host us"))
        for r in results:
            print("%-16s %10.1f %10s" % (r["name"], r["call_us"], "-" if r["host_us"] is None
                                         else "%.1f" % r["host_us"]))
    else:
        import torch
        run = None
        for name, fn in rows:
            host, gpu = host_time_gpu(fn, a.calls, a.batch)
            results.append({"name": name, "host_us": host * 1e6, "gpu_us": gpu * 1e6})
        print("%-16s %10s %10s" % ("", "host us", "GPU us"))
        for r in results:
            print("%-16s %10.1f %10.1f" % (r["name"], r["host_us"], r["gpu_us"]))
    record = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
              "host": platform.node(), "python": platform.python_version(),
              "attn": attn.version(), "device": a.device, "tensors": a.tensors,
              "shape": list(a.shape), "dtype": a.dtype, "mask": "causal", "calls": a.calls,
              "batch": a.batch if a.device == "cuda" else None, "rel_error": err,
              "cpu_kernel_run_us": None if run is None else run * 1e6, "rows": results}
    if a.tensors == "torch":
        import torch
        record["torch"] = torch.__version__
        if a.device == "cuda":
            record["gpu"] = torch.cuda.get_device_name()
    path = a.out or os.path.join(os.environ.get("OUT", "."), "host_overhead.json")
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
    print("wrote %s" % path)


if __name__ == "__main__":
    main()
