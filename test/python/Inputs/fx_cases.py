"""attn.fx's matcher on FX graphs of small decoder attention layers written
here in transformers' style (issue 36): q/k/v projections, a rotary
embedding from an inv_freq buffer (rotate-half RoPE on the whole head or on
its first columns, attention_scaling), GQA's repeat_kv, and SDPA with
is_causal or a mask built from aranges. Each layer is traced, fused, and
run against the layer itself (whose SDPA is a float64 stand-in); a layer
attn must not take is left to torch with its reason. run(device, sdpa)
takes the SDPA function the layers call: torch's where it has one, else the
stand-in below (torch 1.13), which the matcher is told about."""
import math

import torch
import torch.fx

import attn
import attn.fx

FAILED = 0


def sdpa_standin(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """scaled_dot_product_attention written out (float64 inside): for torch
    without torch.nn.functional.scaled_dot_product_attention."""
    s = (q.double() @ k.double().transpose(-1, -2)) * (
        scale if scale is not None else q.shape[-1] ** -0.5)
    n, m = s.shape[-2], s.shape[-1]
    if is_causal:
        s = s.masked_fill(torch.ones(n, m, dtype=torch.bool, device=s.device).triu(1),
                          float("-inf"))
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool \
            else s + attn_mask
    if dropout_p:
        s = torch.nn.functional.dropout(s, dropout_p)
    return (torch.softmax(s, -1) @ v.double()).to(q.dtype)


SDPA = [sdpa_standin]


def call_sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """The layers' SDPA: one node of the traced graph (torch.fx.wrap), which
    calls SDPA[0]."""
    return SDPA[0](q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                   scale=scale)


torch.fx.wrap("call_sdpa")


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotate_interleaved(x):
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    return torch.stack([-x2, x1], dim=-1).flatten(-2)


def eager_attention(q, k, v, mask, scaling, softcap, dropout=0.0):
    """transformers' eager_attention_forward, written out (Gemma 2's with a
    softcap): what attn.fx matches without an SDPA call."""
    w = torch.matmul(q, k.transpose(2, 3)) * scaling
    if softcap is not None:
        w = w / softcap
        w = torch.tanh(w)
        w = w * softcap
    if mask is not None:
        w = w + mask
    w = torch.nn.functional.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    w = torch.nn.functional.dropout(w, p=dropout, training=dropout > 0)
    return torch.matmul(w, v)


def repeat_kv(x, n_rep, b, hk, n, d):
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(b, hk, n_rep, n, d).reshape(b, hk * n_rep, n, d)


class Layer(torch.nn.Module):
    """A decoder layer's attention, as transformers' Llama/Phi/Qwen2 write it."""

    def __init__(self, hidden=96, heads=4, kv_heads=2, head_dim=32, theta=10000.0,
                 rotary_dim=None, attention_scaling=1.0, mask="causal", window=None,
                 positions="input", dropout=0.0, rope_k=True, llama3=False, shape=(2, 48),
                 layout="rotate_half", attention="sdpa", softcap=None):
        super().__init__()
        self.layout, self.attention, self.softcap = layout, attention, softcap
        self.shape = shape
        self.h, self.hk, self.d = heads, kv_heads, head_dim
        self.rot = rotary_dim or head_dim
        self.q_proj = torch.nn.Linear(hidden, heads * head_dim, bias=True)
        self.k_proj = torch.nn.Linear(hidden, kv_heads * head_dim, bias=True)
        self.v_proj = torch.nn.Linear(hidden, kv_heads * head_dim, bias=True)
        self.o_proj = torch.nn.Linear(heads * head_dim, hidden, bias=False)
        inv = 1.0 / (theta ** (torch.arange(0, self.rot, 2, dtype=torch.float32) / self.rot))
        if llama3:
            # llama3's rope scaling: low frequencies divided by 8
            inv = torch.where(inv < 2 * math.pi / 64, inv / 8, inv)
        self.register_buffer("inv_freq", inv, persistent=False)
        self.attention_scaling = attention_scaling
        self.mask, self.window, self.positions = mask, window, positions
        self.dropout, self.rope_k = dropout, rope_k

    def rotary(self, x, position_ids):
        inv = self.inv_freq[None, :, None].float().expand(self.shape[0], -1, 1)
        pos = position_ids[:, None, :].float()
        freqs = (inv.float() @ pos.float()).transpose(1, 2)
        if self.layout == "interleaved":
            emb = torch.repeat_interleave(freqs, 2, dim=-1)
        else:
            emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)

    def rope(self, x, cos, sin):
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        if self.layout == "interleaved":
            # Cohere's: rotated in float32, back to the input's dtype
            dtype, xf = x.dtype, x.float()
            return ((xf * cos) + (rotate_interleaved(xf) * sin)).to(dtype=dtype)
        if self.rot == self.d:
            return (x * cos) + (rotate_half(x) * sin)
        x_rot, x_pass = x[..., : self.rot], x[..., self.rot:]
        return torch.cat(((x_rot * cos) + (rotate_half(x_rot) * sin), x_pass), dim=-1)

    def forward(self, x, position_ids):
        # (the shapes as constants: symbolic tracing cannot unpack x.shape;
        # dynamo's graphs have them as constants too)
        b, n = self.shape
        q = self.q_proj(x).view(b, n, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, n, self.hk, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, n, self.hk, self.d).transpose(1, 2)
        if self.positions == "arange":
            position_ids = torch.arange(n, device=self.dev).unsqueeze(0) + 5
        cos, sin = self.rotary(v, position_ids)
        q = self.rope(q, cos, sin)
        if self.rope_k:
            k = self.rope(k, cos, sin)
        k = repeat_kv(k, self.h // self.hk, b, self.hk, n, self.d)
        v = repeat_kv(v, self.h // self.hk, b, self.hk, n, self.d)
        if self.attention == "eager":
            i = torch.arange(n, device=self.dev)
            allowed = i[None, :] <= i[:, None]
            additive = torch.where(allowed, 0.0, torch.finfo(torch.float32).min)
            o = eager_attention(q, k, v, additive[None, None].expand(b, 1, n, n),
                                self.d ** -0.5, self.softcap, self.dropout)
        elif self.mask == "arange":
            i = torch.arange(n, device=self.dev)
            allowed = i[None, :] <= i[:, None]
            if self.window:
                allowed = allowed & (i[None, :] > i[:, None] - self.window)
            o = call_sdpa(q, k, v, attn_mask=allowed[None, None].expand(b, 1, n, n),
                          dropout_p=self.dropout)
        else:
            o = call_sdpa(q, k, v, is_causal=self.mask == "causal", dropout_p=self.dropout)
        return self.o_proj(o.transpose(1, 2).reshape(b, n, self.h * self.d))


def report(name, ok, detail):
    global FAILED
    if not ok:
        FAILED += 1
    print("%s: %s %s" % (name, "PASS" if ok else "FAIL", detail))


def case(name, device, fused, grads=False, b=2, n=48, inv_dtype=None, **kw):
    torch.manual_seed(len(name))
    layer = Layer(shape=(b, n), **kw).to(device)
    layer.dev = torch.device(device)
    exact = layer
    if inv_dtype is not None:
        # inv_freq rounded (a bf16 model's buffer): attn takes the theta it
        # rounds, so the fused layer is checked against the exact frequencies.
        exact = Layer(shape=(b, n), **kw).to(device)
        exact.load_state_dict(layer.state_dict())
        exact.dev = layer.dev
        layer.inv_freq = layer.inv_freq.to(inv_dtype)
    x = torch.randn(b, n, 96, device=device)
    pos = torch.arange(n, device=device)[None].expand(b, n).clone()
    pos[1] = torch.cat([torch.arange(20), torch.arange(n - 20)])  # packed positions
    tracer = torch.fx.Tracer()
    tracer.proxy_buffer_attributes = True  # inv_freq a get_attr node, as dynamo's buffers
    gm = torch.fx.GraphModule(layer, tracer.trace(layer))
    matches = attn.fx.fuse(gm, (x, pos))
    got = matches[0] if len(matches) == 1 else None
    called = any(nd.target is attn.fx.rope_attention for nd in gm.graph.nodes)
    if got is None or got.fused != fused or called != fused:
        report(name, False, repr(matches))
        return
    if not fused:
        report(name, True, "left to torch: %s" % got.why)
        return
    x1 = x.clone().requires_grad_(grads)
    x2 = x.clone().requires_grad_(grads)
    want = exact(x1, pos)
    out = gm(x2, pos)
    err = ((out.double() - want.double()).abs().max() / want.double().abs().max()).item()
    ok = err < 1e-4
    detail = "%s rel_error<1e-4" % (got.program,) if ok else "rel_error %.3g" % err
    if grads:
        w = torch.randn_like(want)
        (want * w).sum().backward()
        g_want = [p.grad.clone() for p in exact.parameters()] + [x1.grad]
        exact.zero_grad()
        layer.zero_grad()
        (out * w).sum().backward()
        g_got = [p.grad for p in gm.parameters()] + [x2.grad]
        gerr = max(((a - c).abs().max() / (c.abs().max() + 1e-30)).item()
                   for a, c in zip(g_got, g_want))
        ok = ok and gerr < 1e-3
        detail += ", grads rel_error<1e-3" if gerr < 1e-3 else ", grads rel_error %.3g" % gerr
    report(name, ok, detail)


def run(device, sdpa=None):
    if sdpa is not None:
        SDPA[0] = sdpa
    attn.fx.SDPA_FUNCTIONS.add(call_sdpa)
    case("llama_gqa_positions", device, True, grads=True)
    case("theta_500000_arange_offset", device, True, theta=500000.0, positions="arange")
    case("partial_rotary_arange_mask", device, True, rotary_dim=16, mask="arange",
         positions="arange", kv_heads=4)
    case("attention_scaling", device, True, attention_scaling=0.8)
    case("sliding_window_mask", device, True, mask="arange", window=8)
    case("no_mask_mha", device, True, mask=None, kv_heads=4)
    case("bf16_inv_freq", device, True, theta=500000.0, inv_dtype=torch.bfloat16)
    case("interleaved_float32_rotation", device, True, layout="interleaved")
    case("eager_softcap_additive_mask", device, True, attention="eager", softcap=20.0,
         grads=True)
    case("llama3_scaled_frequencies", device, False, llama3=True)
    case("dropout", device, False, dropout=0.1)
    case("rope_on_q_only", device, False, rope_k=False)
    case("eager_dropout_training", device, False, attention="eager", dropout=0.1)
