"""The cases torch_cpu.test and torch_cuda.test run: attn.attention on torch
tensors of one device against the float64 torch reference."""
import attn
import torch

import torch_reference as ref

TOL = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 2e-2}


def check(name, device, qs, ks, vs, dtype=torch.float32, gen=None, **kw):
    q, k, v = (torch.randn(s, generator=gen).to(device=device, dtype=dtype) for s in (qs, ks, vs))
    try:
        o = attn.attention(q, k, v, **kw)
    except attn.CompileError as e:
        print("%s: CompileError %s" % (name, str(e).splitlines()[0]))
        return
    rkw = {key: val for key, val in kw.items() if key != "tile_options"}
    rkw["rope_cfg"] = rkw.pop("rope", None)
    want = ref.attention(q.cpu(), k.cpu(), v.cpu(), **{
        key: (val if key not in ("gate", "segment_ids") else
              tuple(t.cpu() if torch.is_tensor(t) else t for t in val))
        for key, val in rkw.items()})
    err = ref.rel_error(o.cpu(), want)
    same = o.dtype == dtype and o.device == q.device and o.is_contiguous()
    print("%s: %s %s %s" % (name, tuple(o.shape), "like-q" if same else "NOT-like-q",
                            "PASS" if err <= TOL[dtype] else "FAIL rel_error=%.3e" % err))


def run(device):
    gen = torch.Generator().manual_seed(11)
    check("plain", device, (1, 2, 33, 16), (1, 2, 33, 16), (1, 2, 33, 16), gen=gen)
    check("rope_causal", device, (2, 4, 70, 32), (2, 4, 70, 32), (2, 4, 70, 32), gen=gen,
          rope=dict(theta=10000.0), mask="causal")
    check("gqa_partial_interleaved", device, (1, 8, 50, 64), (1, 2, 50, 64), (1, 2, 50, 64),
          gen=gen, rope=dict(theta=500000.0, rotary_dim=32, layout="interleaved"),
          mask="causal")
    check("cross_dv", device, (1, 2, 20, 32), (1, 1, 77, 32), (1, 1, 77, 48), gen=gen,
          scale=0.2)
    check("f16", device, (1, 2, 40, 64), (1, 2, 40, 64), (1, 2, 40, 64), torch.float16,
          gen=gen, mask="causal")
    check("bf16", device, (1, 2, 40, 64), (1, 2, 40, 64), (1, 2, 40, 64), torch.bfloat16,
          gen=gen, rope=True, mask="causal")
    check("tile_options", device, (1, 1, 100, 16), (1, 1, 100, 16), (1, 1, 100, 16), gen=gen,
          mask="causal", tile_options="block-m=16 block-n=32")
    # Blocks being added to the compiler: numerics once it takes them.
    check("softcap", device, (1, 2, 30, 16), (1, 2, 30, 16), (1, 2, 30, 16), gen=gen,
          softcap=5.0, mask="causal")
    check("window", device, (1, 2, 30, 16), (1, 2, 30, 16), (1, 2, 30, 16), gen=gen,
          window=(4, 0))
    check("alibi", device, (1, 4, 30, 16), (1, 4, 30, 16), (1, 4, 30, 16), gen=gen,
          alibi=8.0, mask="causal")
    g = torch.randn(1, 2, 30, 4, generator=gen).to(device)
    check("gate", device, (1, 2, 30, 16), (1, 2, 30, 16), (1, 2, 30, 16), gen=gen, gate=(g, 8))
    seg = torch.tensor([[0] * 10 + [1] * 12 + [2] * 8], dtype=torch.int32, device=device)
    check("document", device, (1, 2, 30, 16), (1, 2, 30, 16), (1, 2, 30, 16), gen=gen,
          segment_ids=(seg, seg), mask="causal")

    # Non-contiguous inputs are made contiguous.
    q = torch.randn(1, 40, 2, 16, generator=gen).to(device).transpose(1, 2)
    k = torch.randn(1, 40, 2, 16, generator=gen).to(device).transpose(1, 2)
    v = torch.randn(1, 40, 2, 16, generator=gen).to(device).transpose(1, 2)
    o = attn.attention(q, k, v, mask="causal")
    err = ref.rel_error(o.cpu(), ref.attention(q.cpu(), k.cpu(), v.cpu(), mask="causal"))
    print("strided: %s" % ("PASS" if err <= 1e-4 else "FAIL rel_error=%.3e" % err))

    # The second call with the same program and shapes compiles nothing.
    before = attn.cache_stats()
    o2 = attn.attention(q, k, v, mask="causal")
    after = attn.cache_stats()
    print("again: compiles +%d memory_hits +%d equal %s" % (
        after["compiles"] - before["compiles"], after["memory_hits"] - before["memory_hits"],
        torch.equal(o, o2)))
    # Other shapes are another kernel.
    attn.attention(q[:, :, :39], k, v, mask="causal")
    print("new shape: compiles +%d" % (attn.cache_stats()["compiles"] - after["compiles"]))

    # Errors carry the compiler's diagnostics.
    try:
        attn.attention(q, k, v, program=attn.build_program(q, k, v).replace(
            '"attn.softmax"', '"attn.nosuchop"'))
    except attn.CompileError as e:
        print("error: %s" % str(e).splitlines()[0])

    if device == "cuda":
        # attn launches on torch's current stream: its inputs are still being
        # written on a side stream (after a sleep) when it is queued there.
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            torch.cuda._sleep(100_000_000)
            q2 = q * 2.0
            o = attn.attention(q2, k, v, mask="causal")
        side.synchronize()
        err = ref.rel_error(o.cpu(), ref.attention(q.cpu() * 2.0, k.cpu(), v.cpu(),
                                                   mask="causal"))
        print("stream: %s" % ("PASS" if err <= 1e-4 else "FAIL rel_error=%.3e" % err))
