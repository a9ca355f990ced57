#!/usr/bin/env python3
"""attn's Hopper GEMM against torch.matmul (cuBLAS), and its RoPE epilogue
(the Rotation Calculus's `producer` placement) against the same GEMM followed
by a torch.compile'd RoPE kernel, on one GPU; every output is checked against
float64 first. The GEMM's tile program is written here with the optional
keys of tile.matmul (stages, group_m, ctas, rope) that no front end sets yet.

  on the GPU machine (after bench/run_attn_bench.sh --stage build):
    source bench/gpu_env.sh && setup
    ROOT=$PWD ATTN_LIBRARY_DIR=$PWD/.carry/lib \
      CASES="m=8192,n=4096,k=4096,rope=128,seq=2048;m=8192,n=8192,k=8192" \
      python3 bench/gemm_rope_probe.py

CASES: ';'-separated cases of comma-separated keys: m, n, k, dt (bf16|f16),
block_n, stages, group_m, ctas, acc=1 (C += A B), rope=<head dim> with rot,
seq, off, layout=half|inter. Prints one JSON line per case and writes
$OUT/gemm_probe.json."""
import os, sys, time, json, statistics
import torch
sys.path.insert(0, os.path.join(os.environ["ROOT"], "python"))
import attn

def text(m, n, k, dt="bf16", extra="", acc=False):
    """The GEMM tile program attn-tile writes (kernel=hopper blocks), with
    extra keys (rope, stages, ...) added to its tile.matmul."""
    acc = acc or "accumulate" in extra
    nk = (k + 63) // 64
    init = (f'"tile.load"(%c, %ct, %row, %col) : (memref<{m}x{n}x{dt}>, memref<128x256xf32>, index, index) -> ()'
            if acc else '"tile.fill"(%ct) {value = 0.0 : f32} : (memref<128x256xf32>) -> ()')
    return f'''module {{
func.func @mm(%a: memref<{m}x{k}x{dt}>, %b: memref<{k}x{n}x{dt}>, %c: memref<{m}x{n}x{dt}>) attributes {{tile.kernel, tile.grid = array<i64: {(m+127)//128}, {(n+255)//256}, 1>, tile.threads = 384 : i64, tile.arg_names = ["a", "b", "c"], tile.matmul = {{m = {m} : i64, n = {n} : i64, k = {k} : i64, block_m = 128 : i64, block_n = 256 : i64, block_k = 64 : i64, accumulate = {"true" if acc else "false"}{extra}}}}} {{
  %pm = "tile.program_id"() {{dim = 0 : i64}} : () -> index
  %pn = "tile.program_id"() {{dim = 1 : i64}} : () -> index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bm = arith.constant 128 : index
  %bn = arith.constant 256 : index
  %bk = arith.constant 64 : index
  %nk = arith.constant {nk} : index
  %row = arith.muli %pm, %bm : index
  %col = arith.muli %pn, %bn : index
  %at = "tile.alloc"() : () -> memref<128x64xf32>
  %bt = "tile.alloc"() : () -> memref<64x256xf32>
  %ct = "tile.alloc"() : () -> memref<128x256xf32>
  {init}
  scf.for %kb = %c0 to %nk step %c1 {{
    %kk = arith.muli %kb, %bk : index
    "tile.load"(%a, %at, %row, %kk) : (memref<{m}x{k}x{dt}>, memref<128x64xf32>, index, index) -> ()
    "tile.load"(%b, %bt, %kk, %col) : (memref<{k}x{n}x{dt}>, memref<64x256xf32>, index, index) -> ()
    "tile.mma"(%at, %bt, %ct) {{transpose_b = false, accumulate = true}} : (memref<128x64xf32>, memref<64x256xf32>, memref<128x256xf32>) -> ()
  }}
  "tile.store"(%ct, %c, %row, %col) : (memref<128x256xf32>, memref<{m}x{n}x{dt}>, index, index) -> ()
  return
}}
}}
'''

def med(fn, it=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(it):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
    return statistics.median(ts)

def rope_ref(c, head_dim, rot, theta, seq, offset, inter):
    c = c.clone()
    M, N = c.shape
    pos = (torch.arange(M, device=c.device, dtype=torch.float64) % seq) + offset
    pairs = torch.arange(rot // 2, device=c.device, dtype=torch.float64)
    inv = theta ** (-2 * pairs / rot)
    ang = pos[:, None] * inv[None, :]
    cs, sn = torch.cos(ang), torch.sin(ang)
    for h in range(N // head_dim):
        base = h * head_dim
        if inter:
            i1 = base + 2 * torch.arange(rot // 2, device=c.device); i2 = i1 + 1
        else:
            i1 = base + torch.arange(rot // 2, device=c.device); i2 = i1 + rot // 2
        x1, x2 = c[:, i1].clone(), c[:, i2].clone()
        c[:, i1] = x1 * cs - x2 * sn
        c[:, i2] = x2 * cs + x1 * sn
    return c

torch.manual_seed(int(time.time()))
rows = []
cases = [c for c in os.environ.get("CASES", "").split(";") if c]
for case in cases:
    f = dict(kv.split("=") for kv in case.split(","))
    m, n, k = int(f["m"]), int(f["n"]), int(f["k"])
    dt = f.get("dt", "bf16")
    tdt = torch.bfloat16 if dt == "bf16" else torch.float16
    extra = ""
    for key in ("block_n", "stages", "group_m", "ctas"):
        if key in f: extra += f", {key} = {f[key]} : i64"
    rope = None
    if "rope" in f:
        hd = int(f["rope"]); rot = int(f.get("rot", hd)); seq = int(f.get("seq", m)); off = int(f.get("off", 0))
        inter = f.get("layout", "half") == "inter"
        rope = (hd, rot, 500000.0, seq, off, inter)
        extra += (f', rope = {{theta = 5.0e5 : f64, head_dim = {hd} : i64, rotary_dim = {rot} : i64, '
                  f'seq_len = {seq} : i64, offset = {off} : i64, layout = "{"interleaved" if inter else "rotate_half"}"}}')
    row = dict(case=case)
    try:
        t0 = time.time()
        kern = attn.load(text(m, n, k, dt, extra, f.get("acc") == "1"), "cuda")
        row["compile_s"] = round(time.time() - t0, 3)
    except Exception as ex:
        row["error"] = str(ex)[:600]; rows.append(row); print(json.dumps(row), flush=True); continue
    a = torch.rand(m, k, device="cuda", dtype=torch.float64).mul_(2).sub_(1).to(tdt)
    b = torch.rand(k, n, device="cuda", dtype=torch.float64).mul_(2).sub_(1).to(tdt)
    acc = f.get("acc") == "1"
    if acc:
        c0 = torch.rand(m, n, device="cuda", dtype=torch.float64).mul_(2).sub_(1).to(tdt)
        c = c0.clone()
        kern._loaded.launch(kern.name, [a.data_ptr(), b.data_ptr(), c.data_ptr()],
                            torch.cuda.current_stream().cuda_stream)
    else:
        c = kern(a, b)
    torch.cuda.synchronize()
    ref = a.double() @ b.double()
    if acc: ref = ref + c0.double()
    if rope: ref = rope_ref(ref, *rope)
    err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
    cub = torch.matmul(a, b)
    errc = ((cub.double() - ref).abs().max() / ref.abs().max()).item() if not rope else None
    row.update(err=err, cublas_err=errc)
    if err > 1e-2:
        row["bad"] = True
        bad = ((c.double() - ref).abs() > 1e-2 * ref.abs().max()).nonzero()
        row["bad_count"] = int(bad.shape[0]); row["bad_first"] = bad[:8].tolist()
    elif not acc:
        t_attn = med(lambda: kern(a, b))
        t_cub = med(lambda: torch.matmul(a, b))
        if rope:
            # The split placement's cost: the same GEMM, then RoPE as its own
            # (compiled) kernel over the output.
            hd, rot, th, seq, off, inter = rope
            pos = (torch.arange(m, device="cuda") % seq + off).float()
            inv = th ** (-2 * torch.arange(rot // 2, device="cuda").float() / rot)
            ang = pos[:, None] * inv[None, :]
            cs, sn = torch.cos(ang).to(tdt), torch.sin(ang).to(tdt)
            def rope_fn(x):
                x = x.view(m, n // hd, hd)
                x1, x2 = x[..., : rot // 2], x[..., rot // 2: rot]
                c_, s_ = cs[:, None, :], sn[:, None, :]
                return torch.cat([x1 * c_ - x2 * s_, x2 * c_ + x1 * s_, x[..., rot:]], -1).view(m, n)
            rope_c = torch.compile(rope_fn)
            plain = attn.load(text(m, n, k, dt, ""), "cuda")
            t_plain = med(lambda: plain(a, b))
            t_split = med(lambda: rope_c(plain(a, b)))
            t_rope_only = med(lambda: rope_c(cub))
            row.update(attn_plain_ms=round(t_plain, 4), attn_then_rope_ms=round(t_split, 4),
                       rope_kernel_ms=round(t_rope_only, 4),
                       producer_vs_split=round(t_split / t_attn, 3))
        fl = 2.0 * m * n * k
        row.update(attn_ms=round(t_attn, 4), cublas_ms=round(t_cub, 4),
                   attn_tflops=round(fl / t_attn / 1e9, 1), cublas_tflops=round(fl / t_cub / 1e9, 1),
                   ratio=round(t_cub / t_attn, 3))
    rows.append(row); print(json.dumps(row), flush=True)
out = os.environ.get("OUT", "/tmp")
json.dump(rows, open(os.path.join(out, "gemm_probe.json"), "w"), indent=1)
