"""attn.hf's attention and mask functions on transformers' masks (issue 36),
against a float64 reference written from the mask's definition: the mask
factories of transformers.masking_utils (the real module, or the stand-in
fake_transformers installs), fed to attn.hf.mask_interface as
create_causal_mask feeds the registered mask function, then
attn.hf.attention_forward as a model's attention layer calls it. Prints
one line per case; FAILED counts the failures."""
import math
import warnings

import torch

import attn
import attn.hf

FAILED = 0


class Module:
    """What the attention function reads of a transformers attention layer."""

    def __init__(self, is_causal=True, groups=1):
        self.is_causal = is_causal
        self.num_key_value_groups = groups
        self.training = False


def report(name, ok, detail=""):
    global FAILED
    if not ok:
        FAILED += 1
    print("%s: %s%s" % (name, "PASS" if ok else "FAIL", (" " + detail) if detail else ""))


def reference(q, k, v, bool_mask, scaling, softcap=None):
    """float64 attention; bool_mask [B, 1, N, M] (True: visible) or None."""
    rep = q.shape[1] // k.shape[1]
    kk = k.double().repeat_interleave(rep, 1)
    vv = v.double().repeat_interleave(rep, 1)
    s = (q.double() @ kk.transpose(-1, -2)) * scaling
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    if bool_mask is not None:
        s = s.masked_fill(~bool_mask.to(s.device), float("-inf"))
    return (torch.softmax(s, -1).nan_to_num(0.0) @ vv).transpose(1, 2)


def tol(dtype):
    return {torch.float32: 2e-5, torch.float64: 1e-12}.get(dtype, 2e-2)


def make(device, dtype, b, h, hk, n, m, d, seed, grad=False):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(b, x, r, d, generator=g, dtype=torch.float64).to(device, dtype)
               for x, r in ((h, n), (hk, m), (hk, m)))
    if grad:
        for t in (q, k, v):
            t.requires_grad_(True)
    return q, k, v


def close(o, ref, rows, dtype):
    """Largest error over the rows that count (bool [B, N]), relative to the
    reference's largest value."""
    diff = (o.double().cpu() - ref.cpu())[rows.cpu()]
    scale = ref.cpu()[rows.cpu()].abs().max().item() or 1.0
    err = diff.abs().max().item() / scale
    return err < tol(dtype), err


def run(device, dtype):
    mu = __import__("transformers.masking_utils", fromlist=["x"])
    w = warnings.catch_warnings(record=True)
    caught = w.__enter__()
    warnings.simplefilter("always")

    def masked(name, mask_function, b, n, m, q_offset=0, kv_offset=0, padding=None,
               groups=2, d=64, scaling=None, softcap=None, expect_sdpa=False, **kw):
        h, hk = 4, 4 // groups
        # attn.decode takes no float64: over a cache, SDPA computes it.
        expect_sdpa = expect_sdpa or (dtype == torch.float64 and (n != m or q_offset))
        q, k, v = make(device, dtype, b, h, hk, n, m, d, seed=len(name))
        padding = None if padding is None else padding.to(device)
        mask = attn.hf.mask_interface(batch_size=b, q_length=n, kv_length=m,
                                      q_offset=q_offset, kv_offset=kv_offset,
                                      mask_function=mask_function, attention_mask=padding,
                                      allow_is_causal_skip=False, device=device)
        before = len(caught)
        o, weights = attn.hf.attention_forward(Module(groups=groups), q, k, v, mask,
                                               scaling=scaling, softcap=softcap, **kw)
        bool_mask = mu.sdpa_mask(batch_size=b, q_length=n, kv_length=m, q_offset=q_offset,
                                 kv_offset=kv_offset, mask_function=mask_function,
                                 attention_mask=padding, allow_is_causal_skip=False,
                                 device=device).cpu()
        ref = reference(q, k, v, bool_mask, scaling if scaling else d ** -0.5, softcap)
        rows = bool_mask.any(-1)[:, 0]
        if padding is not None:
            rows &= padding[:, q_offset:q_offset + n].to(torch.bool).cpu()
        ok, err = close(o, ref, rows, dtype)
        warned = [str(x.message) for x in caught[before:]]
        fell_back = any("SDPA" in x for x in warned)
        shape_ok = tuple(o.shape) == (b, n, h, d) and weights is None
        report(name, ok and shape_ok and fell_back == expect_sdpa,
               "%s%s" % (mask, (" warned: " + warned[0]) if warned else ""))

    causal = mu.causal_mask_function
    pad = torch.ones(2, 40, dtype=torch.bool)
    pad[1, :5] = False                      # left padding
    rpad = torch.ones(2, 40, dtype=torch.bool)
    rpad[0, 33:] = False                    # right padding
    packed = torch.tensor([[0] * 10 + [1] * 17 + [2] * 13, [0] * 25 + [1] * 15])
    masked("causal", causal, 2, 40, 40)
    masked("causal_left_padding", causal, 2, 40, 40, padding=pad)
    masked("sliding_window_right_padding", mu.sliding_window_causal_mask_function(8), 2, 40,
           40, padding=rpad, scaling=0.1)
    masked("softcap_gqa", causal, 2, 40, 40, groups=4, softcap=20.0, scaling=0.3)
    masked("packed_sequences",
           mu.and_masks(causal, mu.packed_sequence_mask_function(packed.to(device))), 2, 40, 40)
    masked("bidirectional_padding", mu.bidirectional_mask_function, 2, 40, 40, padding=pad)
    masked("cache_decode", causal, 2, 1, 33, q_offset=32)
    masked("cache_speculative_window", mu.sliding_window_causal_mask_function(6), 2, 4, 30,
           q_offset=26)
    masked("cache_sliding_offset", mu.sliding_window_causal_mask_function(16), 2, 3, 16,
           q_offset=40, kv_offset=27)
    masked("cache_chunk", causal, 2, 20, 48, q_offset=28, d=128)
    masked("static_cache_tail", causal, 2, 2, 40, q_offset=11)
    masked("fallback_or_masks", mu.or_masks(causal, mu.bidirectional_mask_function), 2, 40, 40,
           expect_sdpa=True)
    masked("fallback_padding_over_cache", causal, 2, 1, 33, q_offset=32,
           padding=torch.ones(2, 33, dtype=torch.bool), expect_sdpa=True)
    if getattr(mu, "__file__", None) is None:
        # (the stand-in's SDPA applies no dropout, so it compares)
        masked("fallback_dropout", causal, 2, 40, 40, dropout=0.1, expect_sdpa=True)

    # No mask (a model that builds none): SDPA's is_causal semantics.
    q, k, v = make(device, dtype, 2, 4, 2, 24, 24, 64, seed=3)
    o, _ = attn.hf.attention_forward(Module(groups=2), q, k, v, None)
    ref = reference(q, k, v, torch.ones(24, 24, dtype=torch.bool).tril()[None, None], 0.125)
    ok, err = close(o, ref, torch.ones(2, 24, dtype=torch.bool), dtype)
    report("no_mask_causal", ok)
    # A 4D tensor mask a caller built: SDPA's attention on it.
    before = len(caught)
    t = torch.ones(2, 1, 24, 24, dtype=torch.bool).tril()
    o, _ = attn.hf.attention_forward(Module(groups=2), q, k, v, t.to(device))
    ok, err = close(o, ref, torch.ones(2, 24, dtype=torch.bool), dtype)
    report("fallback_tensor_mask", ok and any("mask tensor" in str(x.message)
                                              for x in caught[before:]))

    # Training through the attention function: gradients of q, k, v against
    # float64 autograd through the reference, over the valid rows.
    q, k, v = make(device, dtype, 2, 4, 2, 40, 40, 64, seed=7, grad=True)
    mask = attn.hf.mask_interface(batch_size=2, q_length=40, kv_length=40,
                                  mask_function=causal, attention_mask=pad.to(device))
    o, _ = attn.hf.attention_forward(Module(groups=2), q, k, v, mask)
    rows = pad.to(device)
    wgt = torch.randn(o.shape, generator=torch.Generator().manual_seed(1)).to(device)
    (o.float() * wgt * rows[:, :, None, None]).sum().backward()
    got = [t.grad.double().cpu() for t in (q, k, v)]
    q64, k64, v64 = (t.detach().double().cpu().requires_grad_(True) for t in (q, k, v))
    bool_mask = mu.sdpa_mask(batch_size=2, q_length=40, kv_length=40, mask_function=causal,
                             attention_mask=pad, allow_is_causal_skip=False)
    ref = reference(q64, k64, v64, bool_mask, 0.125)
    (ref * wgt.double().cpu() * rows.cpu()[:, :, None, None]).sum().backward()
    errs = [(a - r.grad).abs().max().item() / (r.grad.abs().max().item() or 1.0)
            for a, r in zip(got, (q64, k64, v64))]
    report("training_left_padding", max(errs) < 5 * tol(dtype),
           "dq dk dv rel_error<tol" if max(errs) < 5 * tol(dtype) else str(errs))
    w.__exit__(None, None, None)
