#!/usr/bin/env python3
"""RoPE + causal attention: attn's fused kernel against the anchors, on one GPU.

For each shape (bf16, causal, H=32, RoPE rotate-half theta=5e5 on q and k):
  1. compile the attn program to PTX with attn-translate (time recorded),
  2. load it through attnrt (ctypes over the public C API) and run it on torch
     tensors, checking the output against a float64 reference first,
  3. time it and, in the same run on the same inputs, the anchors:
     compiled RoPE + compiled flex_attention, compiled RoPE + SDPA cuDNN,
     compiled RoPE + SDPA flash, and those attention kernels alone.

Writes $OUT/attn_bench.json, $OUT/attn_bench.md (the table) and
$OUT/attn_bench.png (TFLOP/s over sequence length). Run it with
bench/run_attn_bench.sh, which stages the attn binaries and libraries.
"""
import ctypes
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.flex_attention import create_block_mask, flex_attention
from triton.testing import do_bench

import torch._dynamo  # noqa: E402

# flex_attention recompiles per shape; the default cache would fall back to
# eager (seconds per call) after eight shapes.
for _name, _val in (("cache_size_limit", 256), ("recompile_limit", 256),
                    ("accumulated_cache_size_limit", 4096),
                    ("accumulated_recompile_limit", 4096)):
    if hasattr(torch._dynamo.config, _name):
        setattr(torch._dynamo.config, _name, _val)

OUT = os.environ.get("OUT") or "/tmp/attn_bench"
os.makedirs(OUT, exist_ok=True)
BIN = os.environ["ATTN_BIN"]  # folder with attn-translate
LIBATTNRT = os.environ["ATTN_LIBATTNRT"]
DEADLINE = time.time() + float(os.environ.get("ATTN_BENCH_SECONDS", "520"))
TOKENS = int(os.environ.get("ATTN_TOKENS", "32768"))
H = 32
THETA = 500000.0
DT = torch.bfloat16
DEV = "cuda"

# --- attnrt through ctypes (public API only) ------------------------------


class Arg(ctypes.Structure):
    class V(ctypes.Union):
        _fields_ = [("ptr", ctypes.c_uint64), ("i32", ctypes.c_int32),
                    ("i64", ctypes.c_int64), ("f32", ctypes.c_float)]
    _fields_ = [("kind", ctypes.c_int), ("v", V)]


rt_lib = ctypes.CDLL(LIBATTNRT)
rt_lib.attnrt_last_error.restype = ctypes.c_char_p
rt_lib.attnrt_status_string.restype = ctypes.c_char_p


class Runtime:
    def __init__(self):
        self.rt = ctypes.c_void_p()
        self._check(rt_lib.attnrt_runtime_create(torch.cuda.current_device(), ctypes.byref(self.rt)), None)

    def _check(self, st, rt):
        if st != 0:
            raise RuntimeError(rt_lib.attnrt_last_error(rt).decode())

    def load(self, ptx, manifest):
        m = ctypes.c_void_p()
        data = ptx.encode()
        self._check(rt_lib.attnrt_module_load_ptx(self.rt, data, len(data), manifest.encode(),
                                                  ctypes.byref(m)), self.rt)
        return m

    def stream(self):
        s = ctypes.c_void_p()
        self._check(rt_lib.attnrt_stream_wrap(self.rt, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream),
                                              ctypes.byref(s)), self.rt)
        return s

    def launch(self, module, name, ptrs, stream):
        args = (Arg * len(ptrs))()
        for i, p in enumerate(ptrs):
            args[i].kind = 0  # ATTNRT_ARG_PTR
            args[i].v.ptr = p
        st = rt_lib.attnrt_program_launch(module, name.encode(), args, len(ptrs), stream)
        if st != 0:
            raise RuntimeError(rt_lib.attnrt_last_error(self.rt).decode())


# --- the attn program ------------------------------------------------------


def program(B, Hq, Hkv, N, d, causal=True, rope_on=True):
    q = f"tensor<{B}x{Hq}x{N}x{d}xbf16>"
    k = f"tensor<{B}x{Hkv}x{N}x{d}xbf16>"
    s = f"tensor<{B}x{Hq}x{N}x{N}xbf16>"
    rope = f'{{theta = {THETA} : f64, rotary_dim = {d} : i64, layout = "rotate_half"}}'
    mask = f'  %sc = "attn.causal"(%ss) : ({s}) -> {s}\n' if causal else ""
    last = "%sc" if causal else "%ss"
    ropes = (f'  %qr = "attn.rope"(%q) {rope} : ({q}) -> {q}\n'
             f'  %kr = "attn.rope"(%k) {rope} : ({k}) -> {k}\n') if rope_on else ""
    qk = "%qr, %kr" if rope_on else "%q, %k"
    return f"""func.func @attn(%q: {q}, %k: {k}, %v: {k}) -> {q} {{
{ropes}  %s = "attn.qk"({qk}) : ({q}, {k}) -> {s}
  %ss = "attn.scale"(%s) {{scale = {1.0 / math.sqrt(d)} : f64}} : ({s}) -> {s}
{mask}  %p = "attn.softmax"({last}) : ({s}) -> {s}
  %o = "attn.pv"(%p, %v) : ({s}, {k}) -> {q}
  return %o : {q}
}}
"""


def compile_attn(B, Hq, Hkv, N, d, extra=(), rope_on=True):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "p.mlir")
        with open(src, "w") as f:
            f.write(program(B, Hq, Hkv, N, d, rope_on=rope_on))
        t = time.time()
        subprocess.run([os.path.join(BIN, "attn-translate"), "--to-ptx", src, "-o", f"{tmp}/k.ptx",
                        f"--manifest={tmp}/k.json", *extra], check=True)
        secs = time.time() - t
        return open(f"{tmp}/k.ptx").read(), open(f"{tmp}/k.json").read(), secs


# --- references and anchors -------------------------------------------------


def rope_tables(N, d, dtype):
    inv = 1.0 / (THETA ** (torch.arange(0, d, 2, device=DEV, dtype=torch.float64) / d))
    ang = torch.outer(torch.arange(N, device=DEV, dtype=torch.float64), inv)
    emb = torch.cat([ang, ang], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope_qk(q, k, cos, sin):
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


rope_c = torch.compile(rope_qk, dynamic=False)
flex_c = torch.compile(flex_attention, dynamic=False)


def reference_heads(q, k, v, heads, causal=True, rope_on=True):
    """float64 RoPE + causal attention for the (b, h) pairs in heads."""
    N, d = q.shape[2], q.shape[3]
    cos, sin = rope_tables(N, d, torch.float64)
    group = q.shape[1] // k.shape[1]
    mask = torch.ones(N, N, device=DEV, dtype=torch.bool).tril() if causal else None
    outs = []
    for b, h in heads:
        qh = q[b, h].double()
        kh = k[b, h // group].double()
        vh = v[b, h // group].double()
        if rope_on:
            qh = qh * cos + rotate_half(qh) * sin
            kh = kh * cos + rotate_half(kh) * sin
        s = (qh @ kh.T) / math.sqrt(d)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        outs.append(torch.softmax(s, dim=-1) @ vh)
    return outs


def checked(rt, ptx, manifest, q, k, v, out, stream, heads, rope_on=True, refs=None):
    """Loads a compiled attn program and runs it once on (q, k, v) into out,
    poisoned with NaN first. Returns (launch, the max relative error over
    `heads` against the float64 reference); refs, if given, is that
    reference (reference_heads). launch is bound to this program's module."""
    module = rt.load(ptx, manifest)

    def launch():
        rt.launch(module, "attn", [q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr()], stream)

    out.fill_(float("nan"))
    launch()
    torch.cuda.synchronize()
    if refs is None:
        refs = reference_heads(q, k, v, heads, rope_on=rope_on)
    return launch, max(rel_err(out[b, h], r) for (b, h), r in zip(heads, refs))


def rel_err(a, b):
    return ((a.double() - b).norm() / b.norm()).item()


def bench(fn):
    return float(do_bench(fn, warmup=25, rep=100, quantiles=[0.5]))


def flops(B, N, d):
    return 4.0 * B * H * N * N * d / 2.0  # causal forward, all query heads


# --- one shape -------------------------------------------------------------


def one_shape(rt, B, N, d, Hkv, rows):
    torch.manual_seed(N * 7 + d + Hkv)
    q = torch.randn(B, H, N, d, device=DEV, dtype=DT)
    k = torch.randn(B, Hkv, N, d, device=DEV, dtype=DT)
    v = torch.randn(B, Hkv, N, d, device=DEV, dtype=DT)
    out = torch.full_like(q, float("nan"))
    fl = flops(B, N, d)
    base = dict(d=d, N=N, B=B, H=H, Hkv=Hkv)

    ptx, manifest, compile_s = compile_attn(B, H, Hkv, N, d)
    module = rt.load(ptx, manifest)
    kernel = json.loads(manifest)["kernels"][0]
    stream = rt.stream()

    def attn():
        rt.launch(module, "attn", [q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr()], stream)

    attn()
    torch.cuda.synchronize()
    heads = [(0, 0), (B // 2, H // 2), (B - 1, H - 1)]
    refs = reference_heads(q, k, v, heads)
    err = max(rel_err(out[b, h], r) for (b, h), r in zip(heads, refs))
    ok = bool(err < 2e-2 and not torch.isnan(out).any().item())
    del refs
    row = dict(impl="attn (RoPE+causal)", kernel=kernel.get("kernel", "plain"), relerr=err, ok=ok,
               compile_s=compile_s, **base)
    if ok:
        row["ms"] = bench(attn)
        row["tflops"] = fl / row["ms"] / 1e9
    rows.append(row)
    print(f"attn d={d} N={N} B={B} Hkv={Hkv}: err={err:.2e} ok={ok} ms={row.get('ms')}", flush=True)
    if not ok:
        return

    cos, sin = rope_tables(N, d, DT)
    kx = k.repeat_interleave(H // Hkv, dim=1) if Hkv != H else k
    vx = v.repeat_interleave(H // Hkv, dim=1) if Hkv != H else v
    heads_ref = reference_heads(q, k, v, heads)

    def check(o):
        return max(rel_err(o[b, h], r) for (b, h), r in zip(heads, heads_ref))

    anchors = {}
    if os.environ.get("ATTN_BENCH_NO_ANCHORS"):
        row["ratios"] = {}
        run_variants(rt, row, rows, base, q, k, v, out, stream, heads, B, N, d, Hkv, attn)
        return
    bm = create_block_mask(lambda b, h, qi, ki: qi >= ki, None, None, N, N, device=DEV)

    def add(name, fn, alone=False):
        try:
            o = fn()
            torch.cuda.synchronize()
            e = check(o)
            del o
            ms = bench(fn)
            anchors[name] = ms
            rows.append(dict(impl=name, ms=ms, tflops=fl / ms / 1e9, relerr=e, ok=e < 2e-2, alone=alone, **base))
            print(f"  {name}: {ms:.3f} ms err={e:.2e}", flush=True)
        except Exception as ex:  # an anchor that cannot run is reported, not fatal
            rows.append(dict(impl=name, error=str(ex).splitlines()[0][:200], **base))
            print(f"  {name}: ERROR {ex}", flush=True)

    gqa = Hkv != H
    add("rope_c + flex", lambda: flex_c(*rope_c(q, kx, cos, sin), vx, block_mask=bm))
    for be_name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        def rs(be=be):
            with sdpa_kernel([be]):
                rq, rk = rope_c(q, kx, cos, sin)
                return F.scaled_dot_product_attention(rq, rk, vx, is_causal=True)
        add(f"rope_c + sdpa_{be_name}", rs)
    # Attention alone (inputs already rotated): what the kernels cost without RoPE.
    rq, rk = rope_c(q, kx, cos, sin)
    add("flex alone", lambda: flex_c(rq, rk, vx, block_mask=bm), alone=True)
    for be_name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        def sa(be=be):
            with sdpa_kernel([be]):
                return F.scaled_dot_product_attention(rq, rk, vx, is_causal=True)
        add(f"sdpa_{be_name} alone", sa, alone=True)
    row["ratios"] = {name: ms / row["ms"] for name, ms in anchors.items()}
    run_variants(rt, row, rows, base, q, k, v, out, stream, heads, B, N, d, Hkv, attn)
    del q, k, v, kx, vx, out, rq, rk


def parse_variants(spec):
    """(label, rope_on, extra attn-translate flags) of each item of a
    "label:rope|norope[:flag]...;..." spec (ATTN_BENCH_VARIANTS, and
    attn_profile.py's ATTN_PROFILE_PLACEMENTS)."""
    for item in filter(None, spec.split(";")):
        label, rope_flag, *extra = item.split(":")
        yield label, rope_flag == "rope", tuple(extra)


def run_variants(rt, row, rows, base, q, k, v, out, stream, heads, B, N, d, Hkv, attn):
    """Times the ATTN_BENCH_VARIANTS ("label:rope|norope[:attn-translate flag]...;...")
    on the same inputs, each checked against its float64 reference first. With
    ATTN_BENCH_ROUNDS=R > 1 the default (row, launched by attn) and every correct
    variant are then timed R - 1 more times, in turn, and each keeps the median
    of its R times: identical kernels timed one after the other differed by up
    to 9% in one run (the clocks drift), which rounds in turn even out."""
    timed = [(row, attn)]
    for label, rope_on, extra in parse_variants(os.environ.get("ATTN_BENCH_VARIANTS", "")):
        try:
            ptx2, man2, _ = compile_attn(B, H, Hkv, N, d, extra=extra, rope_on=rope_on)
        except subprocess.CalledProcessError:
            # A variant the compiler rejects for this shape (its diagnostic is
            # above) is not timed here: '—' in the tables.
            rows.append(dict(impl=f"attn variant {label}", ms=None, relerr=None, **base))
            print(f"  variant {label}: not compiled", flush=True)
            continue
        # var is bound to its own module: in_rounds calls it after the loop has moved on.
        var, e2 = checked(rt, ptx2, man2, q, k, v, out, stream, heads, rope_on=rope_on)
        ms2 = bench(var) if e2 < 2e-2 else None
        rows.append(dict(impl=f"attn variant {label}", ms=ms2, relerr=e2, **base))
        print(f"  variant {label}: err={e2:.2e} ms={ms2}", flush=True)
        if ms2 is not None:
            timed.append((rows[-1], var))
    in_rounds(timed, flops(B, N, d))


def in_rounds(timed, fl):
    """ATTN_BENCH_ROUNDS (see run_variants): more rounds of (row, fn) in turn;
    each row's ms becomes the median, its ratios follow, ms_rounds keeps all."""
    rounds = int(os.environ.get("ATTN_BENCH_ROUNDS", "1"))
    if rounds <= 1 or timed[0][0].get("ms") is None:
        return
    for r, _ in timed:
        r["ms_rounds"] = [r["ms"]]
    for _ in range(rounds - 1):
        for r, fn in timed:
            r["ms_rounds"].append(bench(fn))
    for r, _ in timed:
        first, r["ms"] = r["ms"], statistics.median(r["ms_rounds"])
        if "tflops" in r:
            r["tflops"] = fl / r["ms"] / 1e9
        if "ratios" in r:
            r["ratios"] = {n: x * first / r["ms"] for n, x in r["ratios"].items()}
        print(f"  {r['impl']}: rounds {' '.join(f'{x:.3f}' for x in r['ms_rounds'])}", flush=True)


# The attn rows (the first runs of 2026-11-30 called them "attn (fused
# RoPE)"; they are the default lowering, i.e. the split placement).
ATTN_ROWS = ("attn (RoPE+causal)", "attn (fused RoPE)")


def ms_of(rows, r):
    """name -> the timed ms of the row of that impl at r's shape, or None."""
    same = [x for x in rows if x["d"] == r["d"] and x["N"] == r["N"] and x["Hkv"] == r["Hkv"]]
    def ms(name):
        m = [x.get("ms") for x in same if x["impl"] == name and x.get("ms") is not None]
        return m[0] if m else None
    return ms


def ms_text(rows, r):
    """ms_of, formatted for a table ('—' when there is none)."""
    ms = ms_of(rows, r)
    return lambda name: "—" if ms(name) is None else f"{ms(name):.3f}"


def table(rows, meta):
    lines = [f"Date: {meta['date']}; GPU: {meta['gpu']}; driver {meta['driver']}; torch {meta['torch']}; "
             f"CUDA {meta['cuda']}; cuDNN {meta['cudnn']}; triton {meta['triton']}; MLIR 22.1.8 (attn).",
             "",
             "bf16, causal, H=32, RoPE rotate-half theta=5e5 on q and k, B*N=32K tokens. TFLOP/s count the causal "
             "forward (4*B*H*N^2*d/2). 'vs X' = X's time / attn's time (above 1: attn is faster). attn = the "
             "default lowering (persistent Hopper kernel, Q rotated in the kernel, K once per row: at head "
             "dim 64 up to N = 4K by the kernel's own producer warps (rope=ahead), else by a small kernel "
             "before it (rope=split)); 'K fused' = K rotated per tile inside the kernel; 'no RoPE' = the same kernel on "
             "pre-rotated inputs, to compare with the attention kernels alone. Correctness: max rel. error over "
             "three (b, h) heads against a float64 reference, checked before any timing. Medians of "
             "triton.testing.do_bench (L2 flushed).",
             "",
             "| d | N | B | Hkv | attn ms | attn TFLOP/s | rel.err | vs RoPE+flex | vs RoPE+cuDNN | vs RoPE+flash |"
             " K fused ms | no RoPE ms | flex alone ms | cuDNN alone ms | flash alone ms | compile s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["impl"] not in ATTN_ROWS:
            continue
        ms = ms_of(rows, r)
        rat = r.get("ratios", {})
        def f(x, spec=".3f"):
            return "—" if x is None else format(x, spec)
        lines.append(
            f"| {r['d']} | {r['N']} | {r['B']} | {r['Hkv']} | {f(r.get('ms'))} | {f(r.get('tflops'), '.0f')} | "
            f"{r['relerr']:.1e} | {f(rat.get('rope_c + flex'), '.2f')}x | {f(rat.get('rope_c + sdpa_cudnn'), '.2f')}x | "
            f"{f(rat.get('rope_c + sdpa_flash'), '.2f')}x | {f(ms('attn variant fused'))} | "
            f"{f(ms('attn variant norope'))} | {f(ms('flex alone'))} | {f(ms('sdpa_cudnn alone'))} | "
            f"{f(ms('sdpa_flash alone'))} | {r['compile_s']:.2f} |")
    anchors = ["", "Anchors measured in the same run (ms): ",
               "| d | N | Hkv | RoPE+flex | RoPE+cuDNN | RoPE+flash |", "|---|---|---|---|---|---|"]
    for r in rows:
        if r["impl"] not in ATTN_ROWS:
            continue
        ms2 = ms_text(rows, r)
        anchors.append(f"| {r['d']} | {r['N']} | {r['Hkv']} | {ms2('rope_c + flex')} | "
                       f"{ms2('rope_c + sdpa_cudnn')} | {ms2('rope_c + sdpa_flash')} |")
    return "\n".join(lines + anchors + variant_table(rows))


def variant_table(rows):
    """Every ATTN_BENCH_VARIANTS row beside the default's (ms; '—' where
    its check failed), one column per variant label."""
    labels = []
    for r in rows:
        lab = r["impl"][len("attn variant "):] if r["impl"].startswith("attn variant ") else None
        if lab and lab not in labels:
            labels.append(lab)
    if not labels:
        return []
    rounds = int(os.environ.get("ATTN_BENCH_ROUNDS", "1"))
    how = (f"; each the median of {rounds} rounds timed in turn, the default's included"
           if rounds > 1 else "")
    out = ["", "All variants, same inputs (ms; ATTN_BENCH_VARIANTS = "
           f"`{os.environ.get('ATTN_BENCH_VARIANTS', '')}`{how}):",
           "| d | N | Hkv | attn (default) | " + " | ".join(labels) + " |",
           "|---" * (4 + len(labels)) + "|"]
    for r in rows:
        if r["impl"] not in ATTN_ROWS:
            continue
        ms = ms_text(rows, r)
        out.append(f"| {r['d']} | {r['N']} | {r['Hkv']} | {ms(r['impl'])} | "
                   + " | ".join(ms("attn variant " + lab) for lab in labels) + " |")
    return out


def chart(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, d in zip(axes, (64, 128)):
        for impl, style in (("attn (RoPE+causal)", "o-"), ("attn (fused RoPE)", "o-"), ("rope_c + sdpa_cudnn", "s--"),
                            ("rope_c + flex", "^--"), ("rope_c + sdpa_flash", "v--")):
            pts = sorted((r["N"], r["tflops"]) for r in rows
                         if r["impl"] == impl and r["d"] == d and r["Hkv"] == H and "tflops" in r)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=impl)
        ax.set_xscale("log", base=2)
        ax.set_title(f"RoPE + causal attention, bf16, H=32, d={d}")
        ax.set_xlabel("sequence length N (B*N = 32K)")
        ax.set_ylabel("TFLOP/s (causal forward)")
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def pick_shapes(shapes):
    """The (d, N, Hkv) shapes ATTN_BENCH_SHAPES ("d:N:Hkv,...") keeps."""
    if not os.environ.get("ATTN_BENCH_SHAPES"):
        return shapes
    want = os.environ["ATTN_BENCH_SHAPES"].split(",")
    return [s for s in shapes if f"{s[0]}:{s[1]}:{s[2]}" in want]


def run_meta():
    """Date, GPU and versions for a table's header."""
    props = torch.cuda.get_device_properties(0)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    import triton
    return dict(date=datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"), gpu=props.name, driver=smi,
                torch=torch.__version__, cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
                triton=triton.__version__)


def main():
    shapes = [(d, N, H) for d in (128, 64) for N in (1024, 2048, 4096, 8192, 16384)]
    shapes += [(128, 2048, 8), (128, 8192, 8)]
    if os.environ.get("ATTN_BENCH_SWEEP"):
        # The RoPE placement sweep of the Rotation Calculus validation.
        shapes = [(d, N, hkv) for d in (128, 64) for hkv in (32, 8)
                  for N in (1024, 2048, 4096, 8192, 16384, 32768)]
    shapes = pick_shapes(shapes)
    meta = run_meta()
    rt = Runtime()
    rows = []
    for d, N, Hkv in shapes:
        if time.time() > DEADLINE:
            print(f"skipping d={d} N={N} Hkv={Hkv}: out of time", flush=True)
            continue
        one_shape(rt, TOKENS // N, N, d, Hkv, rows)
        with open(f"{OUT}/attn_bench.json", "w") as f:
            json.dump(dict(meta=meta, rows=rows), f, indent=1)
    md = table(rows, meta)
    with open(f"{OUT}/attn_bench.md", "w") as f:
        f.write(md + "\n")
    try:
        chart(rows, f"{OUT}/attn_bench.png")
    except Exception as ex:
        print("chart failed:", ex)
    print(md)


if __name__ == "__main__":
    main()
