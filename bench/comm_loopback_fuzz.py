#!/usr/bin/env python3
"""Random fused GEMM + collective kernels, every rank on one GPU.

Draws --count configurations (ranks 2 to 8, all-reduce, reduce-scatter or
all-gather, static or adaptive split, the model's or a forced number of
communication SMs, M, N and K including K that is not a multiple of the
64-wide K block, and rows that are not a multiple of 128 x ranks), writes them as one module of functions with
`comm.schedule = {sms = 132 / ranks, ...}`, compiles it with attn-translate
and runs every kernel with attnrt-fused-loopback-gpu-test (every rank on this
GPU, three launches, each rank's C against float64), plain and with C's peer
table. Prints each configuration and the harness's verdicts; exits 1 when a
kernel fails to compile or to match. Needs one Hopper GPU.

  bench/comm_loopback_fuzz.py [--count N] [--seed S] [--bin DIR] [--out DIR]
                              [--compile-only]

--compile-only stops after attn-translate (no GPU needed; lit's
test/bench/comm-loopback-fuzz.test runs it so).

--bin holds attn-translate and attnrt-fused-loopback-gpu-test (default
build/bin); --out gets the module, PTX, manifest and logs (default $OUT or
/tmp/attn-comm-fuzz).
"""
import argparse
import os
import random
import re
import subprocess
import sys

SMS = 132
# Multiply-adds the host's float64 reference may take per configuration.
MAX_MACS = 1.5e9


def t(r, c):
    return f"tensor<{r}x{c}xbf16>"


def draw(rng):
    """One configuration whose reference fits MAX_MACS."""
    while True:
        w = rng.choice([2, 3, 4, 5, 6, 7, 8])
        pat = rng.choice(["ar", "rs", "ag"])
        n = rng.choice([72, 128, 192, 200, 256, 320, 384, 512, 640, 768, 1000, 1024])
        k = rng.choice([64, 136, 256, 264, 512, 1000])
        m = 128 * w * rng.choice([1, 2, 3, 5])
        if rng.random() < 0.5:
            # Rows that do not split into whole tiles per rank (all-reduce:
            # any count; the others: a multiple of the ranks).
            m = rng.randint(1, m) if pat == "ar" else w * rng.randint(1, m // w)
        # The reference's multiply-adds: every rank's GEMM for the reduce
        # patterns, the gathered one for all-gather.
        macs = (m * n * k) * (w if pat != "ag" else 1)
        if macs > MAX_MACS:
            continue
        sms = SMS // w
        cfg = {"world": w, "pattern": pat, "m": m, "n": n, "k": k, "sms": sms,
               "split": rng.choice(["static", "adaptive"])}
        if rng.random() < 0.4:
            cfg["comm_sms"] = rng.randint(1, min(sms - 1, 12))
        return cfg


def function(i, c):
    w, m, n, k = c["world"], c["m"], c["n"], c["k"]
    sched = f'sms = {c["sms"]} : i64, split = "{c["split"]}"'
    if "comm_sms" in c:
        sched += f', comm_sms = {c["comm_sms"]} : i64'
    name = f'f{i}_{c["pattern"]}{w}'
    if c["pattern"] == "ar":
        body = f"""  %e = tensor.empty() : {t(m, n)}
  %c = linalg.matmul ins(%a, %b : {t(m, k)}, {t(k, n)}) outs(%e : {t(m, n)}) -> {t(m, n)}
  %r = "comm.all_reduce"(%c) {{reduction = "sum", world_size = {w} : i64, comm.schedule = {{{sched}}}}} : ({t(m, n)}) -> {t(m, n)}
  return %r : {t(m, n)}"""
        sig = f"(%a: {t(m, k)}, %b: {t(k, n)}) -> {t(m, n)}"
    elif c["pattern"] == "rs":
        body = f"""  %e = tensor.empty() : {t(m, n)}
  %c = linalg.matmul ins(%a, %b : {t(m, k)}, {t(k, n)}) outs(%e : {t(m, n)}) -> {t(m, n)}
  %r = "comm.reduce_scatter"(%c) {{reduction = "sum", dim = 0 : i64, world_size = {w} : i64, comm.schedule = {{{sched}}}}} : ({t(m, n)}) -> {t(m // w, n)}
  return %r : {t(m // w, n)}"""
        sig = f"(%a: {t(m, k)}, %b: {t(k, n)}) -> {t(m // w, n)}"
    else:
        body = f"""  %e = tensor.empty() : {t(m, n)}
  %g = "comm.all_gather"(%a) {{dim = 0 : i64, world_size = {w} : i64, comm.schedule = {{{sched}}}}} : ({t(m // w, k)}) -> {t(m, k)}
  %c = linalg.matmul ins(%g, %b : {t(m, k)}, {t(k, n)}) outs(%e : {t(m, n)}) -> {t(m, n)}
  return %c : {t(m, n)}"""
        sig = f"(%a: {t(m // w, k)}, %b: {t(k, n)}) -> {t(m, n)}"
    return name, f"func.func @{name}{sig} {{\n{body}\n}}\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--out", default=os.environ.get("OUT") or "/tmp/attn-comm-fuzz")
    ap.add_argument("--compile-only", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    cfgs = [draw(rng) for _ in range(a.count)]
    names, text = [], []
    for i, c in enumerate(cfgs):
        name, f = function(i, c)
        names.append(name)
        text.append(f)
    module = os.path.join(a.out, "comm_fuzz.mlir")
    with open(module, "w") as f:
        f.write(f"// comm_loopback_fuzz.py --seed {a.seed} --count {a.count}\n")
        f.write("\n".join(text))
    for name, c in zip(names, cfgs):
        print(name, " ".join(f"{k}={v}" for k, v in c.items()))
    ptx, manifest = os.path.join(a.out, "comm_fuzz.ptx"), os.path.join(a.out, "comm_fuzz.json")
    try:
        tr = subprocess.run([os.path.join(a.bin, "attn-translate"), "--to-ptx", module, "-o", ptx,
                             f"--manifest={manifest}"], capture_output=True, text=True)
    except OSError as e:
        print(f"cannot run {os.path.join(a.bin, 'attn-translate')}: {e.strerror}")
        return 1
    if tr.returncode:
        print("attn-translate failed:\n" + tr.stderr)
        return 1
    print(f"compiled {len(cfgs)} kernels into {ptx}")
    if a.compile_only:
        return 0
    bad = 0
    for mode in ([], ["--symmetric-out"]):
        label = mode[0] if mode else "plain"
        harness = os.path.join(a.bin, "attnrt-fused-loopback-gpu-test")
        try:
            r = subprocess.run([harness, *mode, ptx, manifest], capture_output=True, text=True,
                               timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"{label}: cannot run {harness}: {e}")
            bad = 1
            continue
        log = os.path.join(a.out, f"comm_fuzz_{label.strip('-')}.log")
        with open(log, "w") as f:
            f.write(r.stdout + r.stderr)
        fails = [l for l in r.stdout.splitlines() if "FAIL" in l]
        summary = re.findall(r"^(\d+) passed, (\d+) failed$", r.stdout, re.M)
        print(f"{label}: {summary[-1][0] if summary else '?'} passed, "
              f"{summary[-1][1] if summary else '?'} failed (status {r.returncode}); log {log}")
        for l in fails[:20]:
            print("  " + l)
        bad |= r.returncode != 0 or not summary
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
