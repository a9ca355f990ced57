#!/usr/bin/env python3
"""attn inside a real model (issue 36): a Llama-style model from
transformers, built from its configuration with random weights (8 layers,
hidden 4096, 32 query heads and 8 KV heads, head dim 128, intermediate
14336, vocabulary 32000, RoPE theta 500000, bf16), at sequence 4K and 8K
(batch 1), forward (no grad) and forward + backward (the loss of the
logits against the inputs, no optimizer step) per step:

- eager: attn_implementation "sdpa", "flex_attention" and "attn"
  (attn.hf), the same weights, timed in turn;
- compiled: torch.compile(model) (inductor, SDPA) against
  torch.compile(model, backend="attn") (attn.fx: the model's own RoPE,
  repeat_kv and mask fused into attn's kernel, inductor for the rest),
  dynamic=False, timed in turn;
- the attention with its RoPE alone at the layer's shapes: transformers'
  RoPE and SDPA compiled by inductor against attn.attention(rope=...),
  forward and forward + backward, checked against float64 first;
- the attention's share of a compiled step, from torch.profiler's CUDA
  kernel times (kernels whose names say attention, flash, fmha, cudnn or
  attn).

Each implementation's logits are checked against the eager SDPA model's
before anything is timed. Every time is the median of --rounds steps
after --warmup, CUDA events around each step. Writes a JSON file (--out)
and prints the markdown table for bench/RESULTS.md.

  python3 bench/hf_bench.py --out bench/raw/DATE-hf-bench.json
"""
import argparse
import json
import math
import re
import statistics
import sys
import time

import torch


def timed(fn):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end)


def in_turn(fns, warmup, rounds):
    """{name: median ms} of fns (name -> callable), each round timing each."""
    for _ in range(warmup):
        for f in fns.values():
            f()
    torch.cuda.synchronize()
    times = {n: [] for n in fns}
    for _ in range(rounds):
        for n, f in fns.items():
            times[n].append(timed(f))
    return {n: statistics.median(t) for n, t in times.items()}


def build_model(args):
    import transformers
    cfg = transformers.LlamaConfig(
        vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_hidden_layers=8,
        num_attention_heads=32, num_key_value_heads=8, head_dim=128,
        max_position_embeddings=16384, rope_theta=500000.0, use_cache=False)
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa",
                                                              dtype=torch.bfloat16)
    return model, cfg


def set_impl(model, name):
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(name)
    else:
        model.config._attn_implementation = name


def step_fns(model, ids, grad):
    if grad:
        def f():
            out = model(ids, labels=ids, use_cache=False)
            out.loss.backward()
        return f

    def g():
        with torch.no_grad():
            model(ids, use_cache=False)
    return g


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).abs().max() / b.abs().max()).item()


ATTN_KERNEL = re.compile(r"(?i)(attention|flash|fmha|cudnn|attn|sdpa|flex)")


def attention_share(fn):
    """(attention kernels' ms, all kernels' ms) of one call, by torch.profiler."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    att = tot = 0.0
    names = {}
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None)
        if t is None:
            t = getattr(e, "cuda_time_total", 0.0)
        if e.device_type is not None and "CUDA" not in str(e.device_type):
            continue
        tot += t
        if ATTN_KERNEL.search(e.key):
            att += t
            names[e.key[:60]] = names.get(e.key[:60], 0.0) + t / 1000.0
    return att / 1000.0, tot / 1000.0, names


def rope_hf(x, cos, sin):
    h = x.shape[-1] // 2
    rot = torch.cat((-x[..., h:], x[..., :h]), dim=-1)
    return x * cos[:, None] + rot * sin[:, None]


def attention_alone(args, n, results):
    """transformers' RoPE + SDPA (inductor) against attn.attention(rope=...)."""
    import attn
    b, h, hk, d, theta = 1, 32, 8, 128, 500000.0
    g = torch.Generator(device="cuda").manual_seed(n)
    q = torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(b, hk, n, d, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(b, hk, n, d, device="cuda", dtype=torch.bfloat16, generator=g)
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, device="cuda", dtype=torch.float32) / d))
    pos = torch.arange(n, device="cuda", dtype=torch.float32)
    emb = torch.cat([pos[:, None] * inv[None], pos[:, None] * inv[None]], -1)[None]
    cos, sin = emb.cos().to(torch.bfloat16), emb.sin().to(torch.bfloat16)

    def torch_side(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(
            rope_hf(q, cos, sin), rope_hf(k, cos, sin), v, is_causal=True, enable_gqa=True)
    compiled = torch.compile(torch_side, dynamic=False)

    def attn_side(q, k, v):
        return attn.attention(q, k, v, rope=dict(theta=theta), mask="causal")
    # float64 check of both, two query heads of each KV group's first
    with torch.no_grad():
        o_t, o_a = compiled(q, k, v), attn_side(q, k, v)
        emb64 = torch.cat([pos[:, None].double() * (1.0 / theta ** (torch.arange(
            0, d, 2, device="cuda", dtype=torch.float64) / d))[None]] * 2, -1)[None]
        heads = [0, 5]
        q64 = rope_hf(q[:, heads].double(), emb64.cos(), emb64.sin())
        k64 = rope_hf(k[:, [x // 4 for x in heads]].double(), emb64.cos(), emb64.sin())
        s = (q64 @ k64.transpose(-1, -2)) / math.sqrt(d)
        s = s.masked_fill(torch.ones(n, n, device="cuda", dtype=torch.bool).triu(1), -math.inf)
        ref = torch.softmax(s, -1) @ v[:, [x // 4 for x in heads]].double()
        err_t, err_a = rel(o_t[:, heads], ref), rel(o_a[:, heads], ref)
    ok = err_a < 2e-2
    qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
    do = torch.randn_like(o_t)

    def fb(fn):
        def f():
            o = fn(qg, kg, vg)
            o.backward(do)
        return f

    def fw(fn):
        def f():
            with torch.no_grad():
                fn(q, k, v)
        return f
    t_f = in_turn({"inductor": fw(compiled), "attn": fw(attn_side)}, args.warmup, args.rounds)
    t_fb = in_turn({"inductor": fb(compiled), "attn": fb(attn_side)}, args.warmup, args.rounds)
    flops = 4 * b * h * n * n * d / 2
    row = dict(n=n, err_inductor=err_t, err_attn=err_a, check="PASS" if ok else "FAIL",
               fwd=t_f, fwd_bwd=t_fb, fwd_tflops={k: flops / v / 1e9 for k, v in t_f.items()})
    results["attention_alone"].append(row)
    print("attention+RoPE alone N=%d: check attn %.2g inductor %.2g %s; fwd inductor %.3f attn "
          "%.3f ms (%.2fx); fwd+bwd inductor %.3f attn %.3f ms (%.2fx)" % (
              n, err_a, err_t, row["check"], t_f["inductor"], t_f["attn"],
              t_f["inductor"] / t_f["attn"], t_fb["inductor"], t_fb["attn"],
              t_fb["inductor"] / t_fb["attn"]), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lengths", default="4096,8192")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--skip", default="", help="comma list of: eager, compiled, alone, profile")
    args = ap.parse_args()
    skip = set(args.skip.split(",")) - {""}
    import transformers
    import attn
    import attn.fx
    import attn.hf
    attn.hf.register()
    results = dict(date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                   transformers=transformers.__version__, attn=attn.version(),
                   shapes="Llama 8 layers, hidden 4096, 32/8 heads, d 128, vocab 32000, bf16, "
                          "batch 1", eager=[], compiled=[], attention_alone=[], profile=[])
    lengths = [int(x) for x in args.lengths.split(",")]
    if "alone" not in skip:
        for n in lengths:
            attention_alone(args, n, results)
    model, cfg = build_model(args)
    for n in lengths:
        ids = torch.randint(0, cfg.vocab_size, (1, n), device="cuda",
                            generator=torch.Generator(device="cuda").manual_seed(n))
        if "eager" not in skip:
            logits = {}
            for impl in ("sdpa", "flex_attention", "attn"):
                set_impl(model, impl)
                with torch.no_grad():
                    logits[impl] = model(ids, use_cache=False).logits.float()
            errs = {impl: rel(logits[impl], logits["sdpa"]) for impl in logits}
            del logits

            def with_impl(impl, grad):
                f = step_fns(model, ids, grad)

                def g():
                    set_impl(model, impl)
                    f()
                return g
            for grad in (False, True):
                t = in_turn({impl: with_impl(impl, grad) for impl in ("sdpa", "flex_attention",
                                                                      "attn")},
                            args.warmup, args.rounds)
                model.zero_grad(set_to_none=True)
                row = dict(n=n, step="fwd+bwd" if grad else "fwd", ms=t, logits_vs_sdpa=errs)
                results["eager"].append(row)
                print("eager N=%d %s: %s; logits vs sdpa %s" % (
                    n, row["step"], ", ".join("%s %.2f ms" % kv for kv in t.items()),
                    {k: round(v, 4) for k, v in errs.items()}), flush=True)
        if "compiled" not in skip:
            set_impl(model, "sdpa")
            torch._dynamo.reset()
            attn.fx.all_matches.clear()
            inductor = torch.compile(model, dynamic=False)
            backend = torch.compile(model, backend="attn", dynamic=False)
            with torch.no_grad():
                ref = model(ids, use_cache=False).logits.float()
                t0 = time.time()
                li = inductor(ids, use_cache=False).logits.float()
                t1 = time.time()
                la = backend(ids, use_cache=False).logits.float()
                t2 = time.time()
            fused = sum(m.fused for m in attn.fx.all_matches)
            why = sorted({m.why for m in attn.fx.all_matches if not m.fused})
            errs = dict(inductor=rel(li, ref), attn=rel(la, ref))
            del li, la, ref
            for grad in (False, True):
                t = in_turn({"inductor": step_fns(inductor, ids, grad),
                             "attn": step_fns(backend, ids, grad)}, args.warmup, args.rounds)
                model.zero_grad(set_to_none=True)
                row = dict(n=n, step="fwd+bwd" if grad else "fwd", ms=t, logits_vs_eager=errs,
                           fused=fused, not_fused=why,
                           compile_s=dict(inductor=t1 - t0, attn=t2 - t1))
                results["compiled"].append(row)
                print("compiled N=%d %s: inductor %.2f ms, attn backend %.2f ms (%.3fx); fused "
                      "%d attentions %s; logits vs eager %s" % (
                          n, row["step"], t["inductor"], t["attn"], t["inductor"] / t["attn"],
                          fused, why, {k: round(v, 4) for k, v in errs.items()}), flush=True)
            if "profile" not in skip:
                for name, m in (("inductor", inductor), ("attn", backend)):
                    for grad in (False, True):
                        att, tot, names = attention_share(step_fns(m, ids, grad))
                        model.zero_grad(set_to_none=True)
                        results["profile"].append(dict(n=n, impl=name, grad=grad,
                                                       attention_ms=att, kernels_ms=tot,
                                                       kernels=names))
                        print("profile N=%d %s %s: attention kernels %.2f of %.2f ms (%.0f%%) %s" % (
                            n, name, "fwd+bwd" if grad else "fwd", att, tot,
                            100 * att / max(tot, 1e-9), sorted(names)[:4]), flush=True)
            del inductor, backend
            torch._dynamo.reset()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
