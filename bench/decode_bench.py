#!/usr/bin/env python3
"""Decode over a KV cache (issue 30): attn.decode against SDPA (cuDNN, flash),
compiled flex_attention and a device copy of the same bytes, on one GPU.

Shapes: bf16, head dim 128, one query token per sequence, H = 32 query
heads over 8 (GQA 32/8) or 32 (MHA) K/V heads; batch 1, 8 and 64; caches of
4K, 16K, 32K and 128K keys, every sequence full (the issue's table), or with
--ragged lengths drawn in [1, cache]; attn's cache contiguous or paged in
pages of 16 or 64 (a shuffled block table). The anchors read the same keys
from a contiguous cache ([B, Hk, M, 128]; SDPA and flex take no block
table): SDPA's cuDNN and flash backends (enable_gqa for GQA) and
torch.compile(flex_attention) (enable_gqa), and "copy", a device copy of
the K and V bytes (dst.copy_(src)), whose rate (read + write) is the
bandwidth the targets are measured against. The anchors do not depend on
attn's layout: they are checked and timed once per (batch, cache, heads),
with the first layout of the run, and their numbers repeated on the other
layouts' rows. Shapes whose buffers would take more than --max-gb (100)
are skipped (MHA at 64 x 128K is 137 GB for one cache).

Every output is checked against float64 before anything is timed: for 3
(sequence, head) pairs, the query row against all its keys in float64. An
error above 2e-2 (relative, Frobenius) or a NaN marks the implementation
WRONG: it is not timed and the script exits 1.

Timing: triton.testing.do_bench medians (L2 flushed), --rounds rounds in
turn over the implementations, each keeping the median of its rounds; each
implementation is captured in a CUDA graph and its replay timed (a decode
step of a serving loop launches that way, and a 16 MB read takes about 4 us,
less than a Python call), or timed eagerly where it does not capture
(`graphed` in the JSON says which) or with --eager.
TB/s counts the K and V bytes of the keys read once (B * Hk * len * 128 *
2 * 2); copy's TB/s counts its reads and writes. "of peak" is attn's TB/s
over the run's fastest copy (copies of more than about 1 GB run at 2.7
TB/s against 4.1 below, so each shape's own copy would flatter attn).
Targets (issue 30): attn at least 85% of that peak where the cache is at
least 32 MB, and faster than the best anchor everywhere. Each --variant
NAME=OPTIONS times attn's kernel built with those lower-tile-to-decode
options beside it (checked first like the others), e.g. lanes=body=lanes:
the lanes body, FMAs and shuffles per key and row.

Writes $OUT/decode_bench.json (every time, error, split and the
environment) and $OUT/decode_bench.md (the table, also printed); OUT
defaults to /tmp/decode_bench. Run on the GPU machine with the attn
libraries staged (bench/gpu_check.sh --stage BUILD on the CPU machine
fills .carry/; the device tool carries it with carry=[".carry"]):

  bash -c 'source bench/gpu_env.sh && setup && \\
           PYTHONPATH=python ATTN_LIBRARY_DIR=.carry/lib python3 bench/decode_bench.py'

  --quick              batch 1 and 8, caches 4K and 16K, contiguous and paged 16
  --batches=1,8,64 --caches=4096,... --heads=8,32 --layouts=contiguous,paged16,paged64
  --ragged             lengths drawn per sequence (the anchors then read
                       [B, Hk, max len] with a key-padding mask: flex only)
  --variant=NAME=OPTS  also time attn built with lower-tile-to-decode's OPTS
                       (e.g. lanes=body=lanes), repeatable
  --no-anchors         attn and the copy only (paged layouts after a run that timed
                       the anchors on the contiguous ones)
  --max-seconds=540    shapes not started by then are skipped (listed in the JSON)
"""
import argparse
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
D = 128
H = 32
DT = torch.bfloat16
TOL = 2e-2
TARGET_BW = 0.85
TARGET_MB = 32.0


def command_output(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def meta(args):
    props = torch.cuda.get_device_properties(0)
    smi = command_output(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm",
                          "--format=csv,noheader"])
    try:
        import triton
        triton_v = triton.__version__
    except ImportError:
        triton_v = None
    import attn
    commit = None
    carried = os.path.join(os.environ.get("ATTN_CARRY", ""), "commit")
    if os.environ.get("ATTN_CARRY") and os.path.exists(carried):
        commit = open(carried).read().strip() or None
    commit = commit or command_output(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    return dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                gpu=props.name, sms=props.multi_processor_count, nvidia_smi=smi,
                driver=smi.split(",")[0].strip() if smi else None,
                torch=torch.__version__, cuda=torch.version.cuda,
                cudnn=torch.backends.cudnn.version(), triton=triton_v,
                python=platform.python_version(), attn=attn.version(), commit=commit,
                ragged=args.ragged, rounds=args.rounds, tol=TOL)


class Shape:
    def __init__(self, batch, keys, kv_heads, layout):
        self.batch, self.keys, self.kv_heads, self.layout = batch, keys, kv_heads, layout
        self.page = int(layout[5:]) if layout.startswith("paged") else None

    @property
    def name(self):
        kind = "GQA %d/%d" % (H, self.kv_heads) if self.kv_heads != H else "MHA"
        return "%d x %dK %s %s" % (self.batch, self.keys // 1024, kind, self.layout)

    def cache_bytes(self):  # K and V of every key
        return 2 * self.batch * self.kv_heads * self.keys * D * 2


def make_inputs(s, ragged, gen):
    """q, the contiguous cache (the anchors'), attn's cache (the same or
    paged), the lengths and the block table."""
    b, hk, m = s.batch, s.kv_heads, s.keys
    q = torch.randn(b, H, 1, D, device="cuda", dtype=DT, generator=gen)
    k = torch.randn(b, hk, m, D, device="cuda", dtype=DT, generator=gen)
    v = torch.randn(b, hk, m, D, device="cuda", dtype=DT, generator=gen)
    if ragged:
        lens = torch.randint(1, m + 1, (b,), device="cuda", generator=gen, dtype=torch.int32)
        lens[0] = m
    else:
        lens = torch.full((b,), m, device="cuda", dtype=torch.int32)
    if s.page is None:
        return q, k, v, k, v, lens, None
    ps, mp = s.page, m // s.page
    npages = b * mp
    perm = torch.randperm(npages, device="cuda", generator=gen).to(torch.int32)
    table = perm.view(b, mp).contiguous()
    kp = torch.empty(npages, hk, ps, D, device="cuda", dtype=DT)
    vp = torch.empty_like(kp)
    # Page table[b, j] holds keys j*ps .. of sequence b.
    kp[table.view(-1).long()] = k.view(b, hk, mp, ps, D).permute(0, 2, 1, 3, 4).reshape(
        npages, hk, ps, D)
    vp[table.view(-1).long()] = v.view(b, hk, mp, ps, D).permute(0, 2, 1, 3, 4).reshape(
        npages, hk, ps, D)
    return q, k, v, kp, vp, lens, table


def reference_rows(q, k, v, lens, pairs):
    """float64 out of (sequence, head) pairs: the query row over its keys."""
    out = []
    g = q.shape[1] // k.shape[1]
    for b, h in pairs:
        n = int(lens[b])
        qq = q[b, h, 0].double()
        kk = k[b, h // g, :n].double()
        vv = v[b, h // g, :n].double()
        p = torch.softmax(kk @ qq / math.sqrt(D), 0)
        out.append(p @ vv)
    return torch.stack(out)


def rel_err(got, want):
    got = got.double()
    if not torch.isfinite(got).all():
        return float("inf")
    return ((got - want).norm() / want.norm()).item()


def implementations(s, q, k, v, kp, vp, lens, table, ragged, anchors, variants):
    """name -> callable returning out [B, H, 1, D]: attn and copy, attn's
    kernel built with each variant's lower-tile-to-decode options (name ->
    options), and with anchors SDPA cuDNN, SDPA flash and flex_attention
    (which read the contiguous cache whatever attn's layout)."""
    import attn
    impl = {}
    text = attn.build_decode_program(q, kp, vp, lens, table)
    args = [q, kp, vp, lens] + ([table] if table is not None else [])
    for name, opts in [("attn", None)] + list(variants.items()):
        kernel = attn.load(text, "cuda", hopper_options=opts)
        out = torch.empty_like(q)
        impl[name] = (lambda kernel, out: lambda: kernel(*args, out))(kernel, out)
        dec = [kk.get("decode", {}) for kk in kernel.manifest["kernels"]
               if kk.get("kernel") == "decode"]
        impl[name].splits = [x.get("splits") for x in dec]
        impl[name].body = [x.get("body") for x in dec]
    kc, vc = torch.empty_like(k), torch.empty_like(v)

    def copy():
        kc.copy_(k)
        vc.copy_(v)
    impl["copy"] = copy
    if not anchors:
        return impl
    from torch.nn.attention import SDPBackend, sdpa_kernel
    gqa = s.kv_heads != H

    def sdpa(backend):
        def run():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, enable_gqa=gqa)
        return run
    if not ragged:
        impl["cuDNN"] = sdpa(SDPBackend.CUDNN_ATTENTION)
        impl["flash"] = sdpa(SDPBackend.FLASH_ATTENTION)
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        flex = torch.compile(flex_attention, dynamic=False)
        if ragged:
            lens_l = lens.long()

            def mask_mod(b, h, q_idx, kv_idx):
                return kv_idx < lens_l[b]
            bm = create_block_mask(mask_mod, s.batch, None, 1, s.keys, device="cuda")
            impl["flex"] = lambda: flex(q, k, v, block_mask=bm, enable_gqa=gqa)
        else:
            impl["flex"] = lambda: flex(q, k, v, enable_gqa=gqa)
    except ImportError:
        pass
    return impl


def graphed(fn):
    """fn captured in a CUDA graph (its replay), or None when it cannot be:
    the launches then cost no host time, as in a serving loop."""
    try:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                fn()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        torch.cuda.synchronize()
        return g.replay
    except Exception:  # not capturable: timed eagerly
        torch.cuda.synchronize()
        return None


def time_all(impl, ok, rounds, use_graphs):
    """Medians of do_bench over rounds in turn; each implementation replayed
    from a CUDA graph where it captures (use_graphs). Returns (ms, graphed)."""
    from triton.testing import do_bench
    names = [n for n in impl if ok.get(n)]
    run = {}
    for n in names:
        run[n] = (graphed(impl[n]) if use_graphs else None) or impl[n]
    times = {n: [] for n in names}
    for _ in range(rounds):
        for n in names:
            ms = do_bench(run[n], warmup=25, rep=100, quantiles=[0.5])
            times[n].append(float(ms[0] if isinstance(ms, (list, tuple)) else ms))
    return ({n: statistics.median(t) for n, t in times.items()},
            {n: run[n] is not impl[n] for n in names})


ANCHORS = ("cuDNN", "flash", "flex")


def run_shape(s, args, gen, anchor_memo):
    """One shape: check, time. The anchors (layout-independent) are timed
    once per (batch, keys, K/V heads) and reused for the other layouts."""
    q, k, v, kp, vp, lens, table = make_inputs(s, args.ragged, gen)
    row = dict(shape=s.name, batch=s.batch, keys=s.keys, kv_heads=s.kv_heads, layout=s.layout,
               cache_mb=s.cache_bytes() / 1e6)
    memo_key = (s.batch, s.keys, s.kv_heads)
    memo = anchor_memo.get(memo_key)
    impl = implementations(s, q, k, v, kp, vp, lens, table, args.ragged,
                           memo is None and not args.no_anchors, args.variants)
    row["splits"] = impl["attn"].splits
    row["body"] = impl["attn"].body
    row["variants"] = list(args.variants)
    row["variant_splits"] = {n: impl[n].splits for n in args.variants}
    pairs = [(0, 0), (s.batch - 1, H - 1), (s.batch // 2, H // 2)]
    want = reference_rows(q, k, v, lens, pairs)
    ok, errs = {"copy": True}, {}
    for name, fn in impl.items():
        if name == "copy":
            continue
        try:
            out = fn()
            torch.cuda.synchronize()
            got = torch.stack([out[b, h, 0] for b, h in pairs])
            errs[name] = rel_err(got, want)
            ok[name] = errs[name] <= TOL
        except Exception as e:  # an anchor that refuses the shape: n/a
            errs[name] = None
            ok[name] = False
            row.setdefault("unavailable", {})[name] = str(e).split("\n")[0][:200]
    row["ms"], row["graphed"] = time_all(impl, ok, args.rounds, not args.eager)
    if args.no_anchors:
        pass
    elif memo is None:
        memo = anchor_memo[memo_key] = dict(
            errors={n: errs[n] for n in ANCHORS if n in errs},
            ms={n: row["ms"][n] for n in ANCHORS if n in row["ms"]},
            graphed={n: row["graphed"][n] for n in ANCHORS if n in row["graphed"]},
            unavailable={n: u for n, u in row.get("unavailable", {}).items() if n in ANCHORS})
    else:
        errs.update(memo["errors"])
        row["ms"].update(memo["ms"])
        row["graphed"].update(memo["graphed"])
        if memo["unavailable"]:
            row.setdefault("unavailable", {}).update(memo["unavailable"])
        row["anchors_from"] = "%d x %dK contiguous read (timed with the first layout)" % (
            s.batch, s.keys // 1024)
    row["errors"] = errs
    row["wrong"] = [n for n in errs if errs[n] is not None and errs[n] > TOL]
    read = float(lens.sum().item()) * s.kv_heads * D * 2 * 2
    row["read_mb"] = read / 1e6
    row["tbps"] = {n: read / (ms * 1e-3) / 1e12 for n, ms in row["ms"].items() if n != "copy"}
    if "copy" in row["ms"]:
        row["tbps"]["copy"] = 2 * s.cache_bytes() / (row["ms"]["copy"] * 1e-3) / 1e12
    anchors = [row["ms"][n] for n in ("cuDNN", "flash", "flex") if n in row["ms"]]
    if "attn" in row["ms"] and anchors:
        row["attn_over_best"] = row["ms"]["attn"] / min(anchors)
    if "attn" in row["tbps"] and "copy" in row["tbps"]:
        row["of_copy_bw"] = row["tbps"]["attn"] / row["tbps"]["copy"]
    row["meets_speed"] = row.get("attn_over_best", 0) < 1.0
    del q, k, v, kp, vp, impl
    torch.cuda.empty_cache()
    return row


def fmt(x, spec=".3f"):
    return "—" if x is None else format(x, spec)


def peak_bandwidth(rows):
    """The run's measured bandwidth: the fastest copy's rate (read + write)
    over its shapes. A copy of more than about 1 GB runs slower on the H200
    (2.7 TB/s against 4.1), so the bandwidth target is measured against
    this peak, not against each shape's own copy; each row gets of_peak and
    meets_bw."""
    peak = max([r["tbps"]["copy"] for r in rows if "copy" in r.get("tbps", {})] or [0.0])
    for r in rows:
        if peak and "attn" in r.get("tbps", {}):
            r["of_peak_bw"] = r["tbps"]["attn"] / peak
            r["meets_bw"] = r["read_mb"] < TARGET_MB or r["of_peak_bw"] >= TARGET_BW
    return peak


def table(rows):
    variants = []
    for r in rows:
        variants += [n for n in r.get("variants", []) if n not in variants]
    head = ("| shape | MB read | splits | attn ms | attn TB/s | of peak | %scuDNN ms | flash ms | "
            "flex ms | copy ms (TB/s r+w) | attn / best | targets |"
            % "".join("%s ms | " % n for n in variants))
    lines = [head, "|" + "---|" * (12 + len(variants))]
    for r in rows:
        ms, tb = r.get("ms", {}), r.get("tbps", {})
        tgt = ("ok" if r.get("meets_bw") and r.get("meets_speed") else
               "bw" if not r.get("meets_bw") else "speed")
        if r.get("wrong"):
            tgt = "WRONG: " + ", ".join(r["wrong"])
        lines.append("| %s | %.0f | %s | %s | %s | %s | %s%s | %s | %s | %s (%s) | %s | %s |" % (
            r["shape"], r["read_mb"], ",".join(str(x) for x in r.get("splits") or []),
            fmt(ms.get("attn")), fmt(tb.get("attn"), ".2f"),
            fmt(r.get("of_peak_bw"), ".0%") if r.get("of_peak_bw") is not None else "—",
            "".join(fmt(ms.get(n)) + " | " for n in variants), fmt(ms.get("cuDNN")), fmt(ms.get("flash")), fmt(ms.get("flex")),
            fmt(ms.get("copy")), fmt(tb.get("copy"), ".2f"), fmt(r.get("attn_over_best"), ".2f"),
            tgt))
    return "\n".join(lines)


def shapes(args):
    out = []
    for b in args.batches:
        for m in args.caches:
            for hk in args.heads:
                for layout in args.layouts:
                    s = Shape(b, m, hk, layout)
                    # The anchors' cache and the copy's destination, and a
                    # paged copy for attn.
                    if s.cache_bytes() * (3 if s.page else 2) > args.max_gb * 1e9:
                        continue
                    out.append(s)
    return out


def ints(x):
    return [int(v) for v in x.split(",") if v]


def raise_recompile_limits():
    """flex_attention recompiles per shape; the default limits would send it
    to eager (seconds a call) after eight shapes (as in attn_bench.py)."""
    import torch._dynamo
    for name, val in (("cache_size_limit", 256), ("recompile_limit", 256),
                      ("accumulated_cache_size_limit", 4096),
                      ("accumulated_recompile_limit", 4096)):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, val)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--batches", type=ints, default=[1, 8, 64])
    p.add_argument("--caches", type=ints, default=[4096, 16384, 32768, 131072])
    p.add_argument("--heads", type=ints, default=[8, 32], help="K/V heads (of 32 query heads)")
    p.add_argument("--layouts", default="contiguous,paged16,paged64")
    p.add_argument("--ragged", action="store_true")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=OPTIONS",
                   help="also time attn's kernel built with these lower-tile-to-decode "
                        "options, e.g. lanes=body=lanes (repeatable)")
    p.add_argument("--no-anchors", action="store_true",
                   help="time attn and the copy only (a run of paged layouts after a "
                        "contiguous one that timed the anchors)")
    p.add_argument("--eager", action="store_true",
                   help="time eager calls, not CUDA-graph replays")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--max-gb", type=float, default=100.0)
    p.add_argument("--max-seconds", type=float, default=540.0)
    p.add_argument("--seed", type=int, default=30)
    args = p.parse_args(argv)
    args.layouts = args.layouts.split(",")
    if args.quick:
        args.batches, args.caches, args.layouts = [1, 8], [4096, 16384], ["contiguous", "paged16"]
    for layout in args.layouts:
        if layout not in ("contiguous", "paged16", "paged64"):
            p.error("unknown layout %r (contiguous, paged16, paged64)" % layout)
    args.variants = {}
    for v in args.variant:
        name, sep, opts = v.partition("=")
        if not sep or not name or name in ("attn", "copy") + ANCHORS:
            p.error("--variant takes NAME=OPTIONS, NAME not attn, copy or an anchor: %r" % v)
        args.variants[name] = opts
    raise_recompile_limits()
    out_dir = os.environ.get("OUT") or "/tmp/decode_bench"
    os.makedirs(out_dir, exist_ok=True)
    deadline = time.time() + args.max_seconds
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    info = meta(args)
    rows, skipped, memo = [], [], {}
    for s in shapes(args):
        if time.time() > deadline:
            skipped.append(s.name)
            continue
        r = run_shape(s, args, gen, memo)
        rows.append(r)
        peak_bandwidth(rows)
        print(table([r]).split("\n")[-1], flush=True)
    peak = peak_bandwidth(rows)
    info["peak_copy_tbps"] = peak
    text = table(rows) + ("\n\nof peak: attn's TB/s over the run's fastest copy, %.2f TB/s "
                          "(read + write)" % peak)
    with open(os.path.join(out_dir, "decode_bench.json"), "w") as f:
        json.dump(dict(meta=info, rows=rows, skipped=skipped), f, indent=1)
    with open(os.path.join(out_dir, "decode_bench.md"), "w") as f:
        f.write("%s, %s, torch %s, CUDA %s, cuDNN %s, attn %s (%s)\n\n%s\n"
                % (info["date"], info["gpu"], info["torch"], info["cuda"], info["cudnn"],
                   info["attn"], info["commit"], text))
    print()
    print(text)
    if skipped:
        print("skipped (time): %s" % ", ".join(skipped))
    wrong = [r["shape"] for r in rows if r.get("wrong") and "attn" in r["wrong"]]
    if wrong:
        print("attn WRONG at: %s" % ", ".join(wrong))
    return 1 if any(r.get("wrong") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
