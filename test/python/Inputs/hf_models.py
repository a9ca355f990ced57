"""Real transformers models with attn_implementation="attn" (issue 36):
small random-initialised configurations of Llama, Mistral (sliding
window), Qwen2, Gemma 2 (softcap, head dim 256, sliding layers), GPT-NeoX
and Phi (partial rotary), Cohere (interleaved rotary), in bf16 on a GPU.
For each: the logits (with a left-padded row), the gradients of the first
layer's query projection, the logits of decoding with a KV cache token by
token, and five training steps, each against the same model in float32
with attn_implementation="eager" as the reference; attn's error must be
within 1.5x SDPA's (bf16, the same weights) plus a small floor, and attn
must have run (no SDPA fallback warning, attn's functions called)."""
import copy
import warnings

import torch

import attn
import attn.hf

FAILED = 0
CALLS = {"attention": 0, "decode": 0}


def _count():
    a, d = attn.attention, attn.decode

    def attention(*args, **kw):
        CALLS["attention"] += 1
        return a(*args, **kw)

    def decode(*args, **kw):
        CALLS["decode"] += 1
        return d(*args, **kw)
    attn.attention, attn.decode = attention, decode


def configs():
    import transformers as t
    small = dict(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                 max_position_embeddings=1024)
    out = [
        ("llama", t.LlamaConfig(num_attention_heads=4, num_key_value_heads=2, **small)),
        ("mistral_sliding_window", t.MistralConfig(num_attention_heads=4, num_key_value_heads=2,
                                                   sliding_window=32, **small)),
        ("qwen2", t.Qwen2Config(num_attention_heads=4, num_key_value_heads=2, **small)),
        ("gemma2_softcap_d256", t.Gemma2Config(num_attention_heads=2, num_key_value_heads=1,
                                               head_dim=256, query_pre_attn_scalar=256,
                                               attn_logit_softcapping=50.0,
                                               final_logit_softcapping=30.0, sliding_window=16,
                                               **small)),
        ("gpt_neox_partial_rotary", t.GPTNeoXConfig(num_attention_heads=4, rotary_pct=0.25,
                                                    partial_rotary_factor=0.25, **small)),
        ("phi_partial_rotary", t.PhiConfig(num_attention_heads=4, num_key_value_heads=4,
                                           partial_rotary_factor=0.5, **small)),
        # (GPT-J has no attention interface in transformers 5: Cohere is the
        # interleaved rotary model that has one)
        ("cohere_interleaved", t.CohereConfig(num_attention_heads=4, num_key_value_heads=2,
                                              **small)),
    ]
    return out


def _model(cfg, impl, dtype, state=None):
    from transformers import AutoModelForCausalLM
    torch.manual_seed(0)
    m = AutoModelForCausalLM.from_config(copy.deepcopy(cfg), attn_implementation=impl,
                                         dtype=dtype)
    if state is not None:
        m.load_state_dict(state)
    return m.cuda()


def _rel(a, b, rows=None):
    a, b = a.double(), b.double()
    if rows is not None:
        a, b = a[rows], b[rows]
    return ((a - b).abs().max() / b.abs().max()).item()


def _first_q_grad(model):
    for name, p in model.named_parameters():
        if p.grad is not None and ("q_proj" in name or "query_key_value" in name
                                   or "qkv" in name):
            return p.grad
    return next(p.grad for p in model.parameters() if p.grad is not None)


def _step_logits(model, ids, prefix):
    """Logits of a prefill of ids[:, :prefix], then of each further token
    through the KV cache."""
    out = model(ids[:, :prefix], use_cache=True)
    past, logits = out.past_key_values, [out.logits[:, -1]]
    for t in range(prefix, ids.shape[1]):
        out = model(ids[:, t:t + 1], past_key_values=past, use_cache=True)
        past = out.past_key_values
        logits.append(out.logits[:, -1])
    return torch.stack(logits, 1)


def _train(model, ids, steps=5):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(steps):
        loss = model(ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def check(name, cfg):
    global FAILED
    ref = _model(cfg, "eager", torch.float32)
    state = ref.state_dict()
    sd = _model(cfg, "sdpa", torch.bfloat16, state)
    at = _model(cfg, "attn", torch.bfloat16, state)
    g = torch.Generator(device="cuda").manual_seed(1)
    ids = torch.randint(0, cfg.vocab_size, (2, 96), device="cuda", generator=g)
    mask = torch.ones_like(ids)
    mask[1, :7] = 0
    rows = mask.bool()
    parts, ok = [], True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        before = dict(CALLS)
        # logits and the first layer's gradient
        res = {}
        for key, m in (("ref", ref), ("sdpa", sd), ("attn", at)):
            m.zero_grad()
            out = m(ids, attention_mask=mask)
            (out.logits.float()[rows].square().mean()).backward()
            res[key] = (out.logits.float().detach(), _first_q_grad(m).float().clone())
        for what, i in (("logits", 0), ("grads", 1)):
            r = rows if i == 0 else None
            e_at, e_sd = _rel(res["attn"][i], res["ref"][i], r), _rel(res["sdpa"][i], res["ref"][i], r)
            good = e_at <= 1.5 * e_sd + 2e-3
            ok &= good
            parts.append("%s %.2g (sdpa %.2g)" % (what, e_at, e_sd))
        # decoding through the KV cache, no padding
        with torch.no_grad():
            lg = {key: _step_logits(m, ids[:1], 80).float()
                  for key, m in (("ref", ref), ("sdpa", sd), ("attn", at))}
        e_at, e_sd = _rel(lg["attn"], lg["ref"]), _rel(lg["sdpa"], lg["ref"])
        ok &= e_at <= 1.5 * e_sd + 2e-3
        parts.append("decode %.2g (sdpa %.2g)" % (e_at, e_sd))
        ran = {k: CALLS[k] - before[k] for k in CALLS}
        fell = [str(w.message) for w in caught if "attn.hf" in str(w.message)]
    # training: five AdamW steps from the same weights
    la = _train(_model(cfg, "attn", torch.bfloat16, state), ids)
    ls = _train(_model(cfg, "sdpa", torch.bfloat16, state), ids)
    lr = _train(_model(cfg, "eager", torch.float32, state), ids)
    e_at = max(abs(a - r) / r for a, r in zip(la, lr))
    e_sd = max(abs(s - r) / r for s, r in zip(ls, lr))
    ok &= e_at <= 1.5 * e_sd + 5e-3
    parts.append("train losses %.3f..%.3f rel %.2g (sdpa %.2g)" % (la[0], la[-1], e_at, e_sd))
    ok &= not fell and ran["attention"] > 0 and ran["decode"] > 0
    parts.append("attn calls %d, decode calls %d" % (ran["attention"], ran["decode"]))
    if fell:
        parts.append("fallback: " + fell[0])
    if not ok:
        FAILED += 1
    print("%s: %s %s" % (name, "PASS" if ok else "FAIL", "; ".join(parts)), flush=True)


def run():
    attn.hf.register()
    _count()
    for name, cfg in configs():
        try:
            check(name, cfg)
        except Exception as e:  # a model transformers cannot build, or attn refuses
            global FAILED
            FAILED += 1
            print("%s: FAIL %s: %s" % (name, type(e).__name__, str(e).splitlines()[0][:300]),
                  flush=True)
