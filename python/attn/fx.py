"""attn's torch.compile backend (issue 36): the attention of a model's own
code, with the RoPE that feeds it, as one attn program.

    import attn.fx
    model = torch.compile(model, backend="attn")      # or backend=attn.fx.backend

The backend reads the FX graph dynamo captures. At each attention, a
scaled_dot_product_attention call or one written out in torch ops as
transformers' eager attention is (`matmul(softmax(q @ k.transpose(2, 3) *
scaling [softcapped: tanh(s / cap) * cap] [+ mask], -1), v)`, dropout only
in eval), it looks back through what feeds q, k and v for what attn
computes inside its kernel:

- RoPE: `x * cos + rot(x) * sin`, rot the rotate-half (the two halves of
  the last dim, swapped, the first negated) with cos and sin the cosines
  and sines of `cat([f, f], -1)`, or the interleaved rotation
  (`stack([-x[..., 1::2], x[..., ::2]], -1).flatten(-2)`, GPT-J's and
  Cohere's) with f repeated twice in place; on the whole head or on its
  first rotary_dim columns (`cat([rope(x[..., :r]), x[..., r:]], -1)`);
  conversions around it (Cohere rotates in float32) walked through; f the
  outer product of positions and an inv_freq buffer (as transformers'
  rotary embeddings compute them, their attention_scaling folded into the
  scale). theta comes from inv_freq's values, read when the graph is
  compiled, to the rounding of the buffer's dtype (a bf16 model's inv_freq
  is read as the theta it rounds, and attn then rotates by the exact
  frequencies, closer to the float32 model than the bf16 model's own
  RoPE); an inv_freq that is not theta^(-2i/d) (llama3's or YaRN's scaled
  frequencies) is left to torch. Positions that are an arange from a
  constant become an offset, other positions (position_ids) the kernel's
  int32 position inputs (position ids of 2^31 and more would not fit);
- GQA's repeat_kv (`x[:, :, None].expand(...).reshape(...)`, or
  repeat_interleave on dim 1), dropped: attn reads each KV head once;
- the mask: is_causal, or a mask (boolean, or additive: 0 where a key is
  seen) whose value does not depend on the graph's inputs (transformers
  builds its causal and sliding-window masks from aranges): evaluated once
  and recognised as causal, a causal sliding window or no mask; a mask
  that reads the inputs (padding) is left to torch;
- the softcap of the written-out form.

inv_freq is read once, when the graph compiles: a model that changes its
inv_freq buffer in place afterwards must be compiled again
(torch._dynamo.reset()).

A match becomes one call of attn's custom op (attn.attention on torch
without torch.library.custom_op), with its autograd; what it does not match
runs unchanged, and the graph goes on to inductor. attn.fx.fuse(gm,
example_inputs) is the rewrite alone (tests, other backends); it returns a
list of Match, one per attention, each with `fused` and `why`.
"""
import math
import operator

NAME = "attn"

# The functions the matcher takes for SDPA: torch's, and any a caller adds
# (the tests on torch 1.13, which has none, add a stand-in).
SDPA_FUNCTIONS = set()


def _sdpa_functions():
    import torch
    f = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    return SDPA_FUNCTIONS | ({f} if f is not None else set())


class Match:
    """What fuse() did with one attention call: node (the SDPA node's name),
    fused (bool), why (None when fused, else the reason it is left alone),
    program (the attention's options when fused)."""

    def __init__(self, node, fused, why=None, program=None):
        self.node, self.fused, self.why, self.program = node, fused, why, program

    def __repr__(self):
        if self.fused:
            return "Match(%s: fused %s)" % (self.node, self.program)
        return "Match(%s: left to torch: %s)" % (self.node, self.why)


class _NoMatch(Exception):
    pass


def _fail(why):
    raise _NoMatch(why)


#===-- reading the graph ---------------------------------------------------===#

def _is(node, *names):
    """node computes one of names: a torch function, an operator or a
    method, by name (torch.cat, operator.mul, x.unsqueeze...)."""
    import torch.fx
    if not isinstance(node, torch.fx.Node):
        return False
    if node.op == "call_method":
        return node.target in names
    if node.op == "call_function":
        t = node.target
        return getattr(t, "__name__", None) in names or str(t) in names
    return False


def _arg(node, i, name, default=None):
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


def _meta_shape(node):
    for key in ("val", "example_value", "tensor_meta"):
        v = node.meta.get(key)
        if v is not None and hasattr(v, "shape"):
            return tuple(int(x) for x in v.shape)
    return None


def _int(x):
    """x as a Python int: a literal, or a node computing one from shapes
    (symbolic tracing's x.shape[-1] // 2)."""
    import torch.fx
    if isinstance(x, bool):
        _fail("a bool where an int was expected")
    if isinstance(x, int):
        return x
    if not isinstance(x, torch.fx.Node):
        _fail("a non-integer %r" % (x,))
    if x.op == "call_function" and x.target is operator.getitem:
        base, idx = x.args
        if isinstance(base, torch.fx.Node) and (_is(base, "size") and len(base.args) == 1
                                                or base.op == "call_function"
                                                and base.target is getattr
                                                and base.args[1] == "shape"):
            shape = _meta_shape(base.args[0])
            if shape is None:
                _fail("a shape the graph does not record")
            return shape[_int(idx)]
    if _is(x, "size") and len(x.args) == 2:
        shape = _meta_shape(x.args[0])
        if shape is None:
            _fail("a shape the graph does not record")
        return shape[_int(x.args[1])]
    if x.op == "call_function" and x.target in (operator.floordiv, operator.add,
                                                 operator.sub, operator.mul):
        return x.target(_int(x.args[0]), _int(x.args[1]))
    if x.op == "call_function" and x.target is operator.neg:
        return -_int(x.args[0])
    _fail("an integer computed by %s" % x.format_node())


def _last_dim_strided(node):
    """(x, start, stop, step) when node is x[..., start:stop:step] (a slice of
    the last dim, everything else whole), else None."""
    import torch.fx
    if not (isinstance(node, torch.fx.Node) and node.op == "call_function"
            and node.target is operator.getitem):
        return None
    x, idx = node.args
    if not isinstance(idx, tuple) or not idx or not isinstance(idx[-1], slice):
        return None
    shape = _meta_shape(x)
    if shape is None:
        return None
    for e in idx[:-1]:
        if e is Ellipsis:
            continue
        if not (isinstance(e, slice) and e.start is None and e.stop is None and e.step is None):
            return None
    if Ellipsis not in idx and len(idx) != len(shape):
        return None
    s = idx[-1]
    step = 1 if s.step is None else _int(s.step)
    if step < 1:
        return None
    d = shape[-1]
    start = 0 if s.start is None else _int(s.start)
    stop = d if s.stop is None else _int(s.stop)
    start, stop = (start + d if start < 0 else start), (stop + d if stop < 0 else stop)
    return x, max(0, start), min(d, stop), step


def _last_dim_slice(node):
    """(x, start, stop) when node is x[..., start:stop] (unit step), else None."""
    got = _last_dim_strided(node)
    if not got or got[3] != 1:
        return None
    return got[:3]


def _negated(node):
    """x when node is -x (neg, or a product with -1), else None."""
    if _is(node, "neg"):
        return node.args[0]
    if _is(node, "mul"):
        a, b = node.args[0], node.args[1]
        if b == -1 or b == -1.0:
            return a
        if a == -1 or a == -1.0:
            return b
    return None


def _cat_parts(node):
    """(parts, dim) when node is torch.cat(parts, dim), else None."""
    if not _is(node, "cat", "concat", "concatenate"):
        return None
    parts = _arg(node, 0, "tensors")
    dim = _arg(node, 1, "dim", 0)
    if not isinstance(parts, (list, tuple)) or not isinstance(dim, int):
        return None
    return list(parts), dim


def _rotate_half_of(node):
    """x when node is rotate_half(x): cat([-x[..., h:], x[..., :h]], -1) with
    2h x's last dim."""
    got = _cat_parts(node)
    if not got:
        return None
    parts, dim = got
    if len(parts) != 2:
        return None
    neg = _negated(parts[0])
    hi = _last_dim_slice(neg) if neg is not None else None
    lo = _last_dim_slice(parts[1])
    if not hi or not lo or hi[0] is not lo[0]:
        return None
    x = hi[0]
    d = _meta_shape(x)[-1]
    if dim not in (-1, len(_meta_shape(x)) - 1) or d % 2:
        return None
    if (hi[1], hi[2], lo[1], lo[2]) != (d // 2, d, 0, d // 2):
        return None
    return x


def _rotate_interleaved_of(node):
    """x when node is the interleaved rotation of x (GPT-J's, Cohere's):
    stack([-x[..., 1::2], x[..., ::2]], -1).flatten(-2)."""
    if not _is(node, "flatten") or len(_meta_shape(node) or ()) < 2:
        return None
    rank = len(_meta_shape(node))
    start = _arg(node, 1, "start_dim", 0)
    end = _arg(node, 2, "end_dim", -1)
    if start not in (-2, rank - 1) or end not in (-1, rank):
        return None
    st = node.args[0]
    if not _is(st, "stack"):
        return None
    parts, dim = _arg(st, 0, "tensors"), _arg(st, 1, "dim", 0)
    if not isinstance(parts, (list, tuple)) or len(parts) != 2 or dim not in (-1, rank):
        return None
    neg = _negated(parts[0])
    odd = _last_dim_strided(neg) if neg is not None else None
    even = _last_dim_strided(parts[1])
    if not odd or not even or odd[0] is not even[0]:
        return None
    x = odd[0]
    d = _meta_shape(x)[-1]
    if d % 2 or (odd[1], odd[2], odd[3], even[1], even[2], even[3]) != (1, d, 2, 0, d, 2):
        return None
    return x


def _product_pairs(node):
    """The (a, b) orders of a product node's two tensor operands."""
    if not _is(node, "mul"):
        return []
    a, b = node.args[0], node.args[1]
    return [(a, b), (b, a)]


# Conversions a model wraps RoPE in (Cohere rotates in float32): walked through.
_CONVERSIONS = ("to", "float", "type", "half", "bfloat16", "contiguous")


def _unconverted(node):
    import torch.fx
    while isinstance(node, torch.fx.Node) and _is(node, *_CONVERSIONS):
        node = node.args[0]
    return node


def _rope_core(node):
    """(x, cos_node, sin_node, layout) when node is x * cos + rot(x) * sin
    (either order of the sum and of each product), rot the rotate-half or
    the interleaved rotation; x is past any conversion."""
    if not _is(node, "add") or len(node.args) != 2 or node.kwargs.get("alpha", 1) != 1:
        return None
    for m1, m2 in ((node.args[0], node.args[1]), (node.args[1], node.args[0])):
        for x, c in _product_pairs(m1):
            for r, s in _product_pairs(m2):
                if x is None:
                    continue
                if _rotate_half_of(r) is x:
                    return _unconverted(x), c, s, "rotate_half"
                if _rotate_interleaved_of(r) is x:
                    return _unconverted(x), c, s, "interleaved"
    return None


def _rope(node):
    """(x, rotary_dim, cos_node, sin_node, layout) for RoPE on the whole head
    or on its first rotary_dim columns; None when node is not RoPE."""
    node = _unconverted(node)
    core = _rope_core(node)
    if core:
        x, c, s, layout = core
        return x, _meta_shape(x)[-1], c, s, layout
    got = _cat_parts(node)
    if got and len(got[0]) == 2:
        (rot, rest), dim = got
        core = _rope_core(_unconverted(rot))
        tail = _last_dim_slice(_unconverted(rest))
        if core and tail:
            y, c, s, layout = core
            head = _last_dim_slice(y)
            if head and _unconverted(head[0]) is _unconverted(tail[0]) and head[1] == 0 \
                    and head[2] == tail[1]:
                x = _unconverted(head[0])
                if tail[2] == _meta_shape(x)[-1] and dim in (-1, len(_meta_shape(x)) - 1):
                    return x, head[2], c, s, layout
    return None


# Operations that only broadcast or convert a table: walked through.
_TRANSPARENT = ("unsqueeze", "expand", "to", "float", "type", "contiguous", "type_as",
                "expand_as")


def _through(node, scale=None):
    """node past the transparent operations before it (and, with scale a
    list, past products with a float, collected in scale)."""
    import torch.fx
    while isinstance(node, torch.fx.Node):
        if _is(node, *_TRANSPARENT):
            node = node.args[0]
        elif (node.op == "call_function" and node.target is operator.getitem
              and isinstance(node.args[1], tuple)
              and all(e is None or e is Ellipsis or (isinstance(e, slice) and e == slice(None))
                      for e in node.args[1])):
            node = node.args[0]
        elif scale is not None and _is(node, "mul") and any(
                isinstance(a, float) and not isinstance(a, bool) for a in node.args[:2]):
            a, b = node.args[0], node.args[1]
            scale.append(a if isinstance(a, float) else b)
            node = b if isinstance(a, float) else a
        else:
            return node
    return node


def _repeated_twice(node):
    """f when node is repeat_interleave(f, 2, dim=-1), else None."""
    if not _is(node, "repeat_interleave"):
        return None
    reps, dim = _arg(node, 1, "repeats"), _arg(node, 2, "dim")
    shape = _meta_shape(node)
    if reps != 2 or dim not in (-1, len(shape or ()) - 1):
        return None
    return node.args[0]


def _table(node, fn, layout):
    """The frequency node f and the scale when node is fn(cat([f, f], -1))
    (rotate-half) or fn(f) repeated twice in place (interleaved, before or
    after fn), times a float, past broadcasts and conversions."""
    scale = []
    core = _through(node, scale)
    if layout == "interleaved" and _repeated_twice(core) is not None:
        inner = _through(_repeated_twice(core), scale)
        if not _is(inner, fn):
            _fail("RoPE's %s table is not %s(...) of its frequencies" % (fn, fn))
        return inner.args[0], math.prod(scale) if scale else 1.0
    if not _is(core, fn):
        _fail("RoPE's %s table is not %s(...) of its frequencies" % (fn, fn))
    emb = _through(core.args[0])
    if layout == "interleaved":
        f = _repeated_twice(emb)
        if f is None:
            _fail("interleaved RoPE's frequencies are not repeat_interleave(f, 2, -1)")
        return f, math.prod(scale) if scale else 1.0
    got = _cat_parts(emb)
    if not got or len(got[0]) != 2 or got[0][0] is not got[0][1]:
        _fail("RoPE's frequencies are not cat([f, f], -1)")
    return got[0][0], math.prod(scale) if scale else 1.0


def _freq_sources(f):
    """(inv_freq source, positions source) of the frequency table f:
    transpose(inv_freq[:, None] @ positions[None, :]) or outer(positions,
    inv_freq), past broadcasts and conversions."""
    core = _through(f)
    if _is(core, "transpose"):
        core = _through(core.args[0])
    if _is(core, "matmul", "bmm"):
        a, b = _through(core.args[0]), _through(core.args[1])
        return a, b
    if _is(core, "outer", "ger"):
        return _through(core.args[1]), _through(core.args[0])
    _fail("RoPE's frequencies are not positions times inv_freq")


#===-- constants -----------------------------------------------------------===#

def _value(gm, node, example, inputs=False):
    """The value of node when it depends on nothing but constants, shapes and
    get_attr buffers (an arange, a mask built from aranges), evaluated now;
    with inputs, also on placeholders whose example input is a real tensor
    (a buffer dynamo lifted into an input). Raises _NoMatch otherwise."""
    import torch
    import torch.fx
    memo = {}

    def ev(n):
        if not isinstance(n, torch.fx.Node):
            if isinstance(n, (list, tuple)):
                return type(n)(ev(x) for x in n)
            if isinstance(n, slice):
                return slice(ev(n.start), ev(n.stop), ev(n.step))
            if isinstance(n, dict):
                return {k: ev(x) for k, x in n.items()}
            return n
        if n in memo:
            return memo[n]
        if n.op == "get_attr":
            v = gm
            for part in n.target.split("."):
                v = getattr(v, part)
        elif n.op == "placeholder":
            v = example.get(n) if inputs else None
            if v is None or _is_fake(v):
                _fail("%s is an input of the graph" % n.name)
        elif (n.op == "call_function" and n.target is getattr and n.args[1] == "shape"
              or _is(n, "size") and len(n.args) == 1):
            shape = _meta_shape(n.args[0])
            if shape is None:
                _fail("a shape the graph does not record")
            v = torch.Size(shape)
        elif _is(n, *_RANDOM):
            _fail("a random value")
        elif n.op == "call_function":
            v = n.target(*ev(n.args), **ev(n.kwargs))
        elif n.op == "call_method":
            args = ev(n.args)
            v = getattr(args[0], n.target)(*args[1:], **ev(n.kwargs))
        else:
            _fail("a value computed by a module")
        memo[n] = v
        return v
    with torch.no_grad():
        return ev(node)


_RANDOM = ("rand", "randn", "randint", "rand_like", "randn_like", "randint_like",
           "bernoulli", "normal", "dropout", "multinomial", "randperm", "uniform_", "normal_")


def _is_fake(t):
    try:
        from torch._subclasses.fake_tensor import FakeTensor
    except ImportError:
        return False
    return isinstance(t, FakeTensor)


def _theta(inv_freq, rotary_dim):
    """theta when inv_freq[i] is theta^(-2i / rotary_dim) for every i, to the
    rounding of inv_freq's dtype (transformers' bf16 models hold a bf16
    inv_freq), else _NoMatch. theta is fitted to the logarithms, then the
    roundest number (fewest significant digits) that gives the same buffer
    is taken: 500000, not the 499,8xx a bf16 buffer's values fit."""
    import torch
    f = inv_freq.detach().double().cpu().flatten()
    if f.numel() != rotary_dim // 2:
        _fail("inv_freq has %d values for a rotary dim of %d" % (f.numel(), rotary_dim))
    if f.numel() < 2 or not bool((f > 0).all()):
        _fail("inv_freq is not positive")
    if abs(f[0].item() - 1.0) > 1e-6:
        _fail("inv_freq[0] is %g, not 1 (scaled positions)" % f[0].item())
    eps = torch.finfo(inv_freq.dtype).eps if inv_freq.is_floating_point() else 0.0
    tol = max(2e-6, 1.01 * eps)
    a = 2.0 * torch.arange(f.numel(), dtype=torch.float64) / rotary_dim
    fitted = math.exp(-(a * f.log()).sum().item() / (a * a).sum().item())

    def gap(theta):
        want = theta ** -a
        return ((f - want).abs() / want).max().item()
    digits = math.floor(math.log10(fitted))
    for sig in range(1, 8):
        q = 10.0 ** (digits - sig + 1)
        for cand in (round(fitted / q) * q, math.floor(fitted / q) * q,
                     math.ceil(fitted / q) * q):
            if cand > 1 and gap(cand) <= tol:
                return float(round(cand)) if cand >= 1e3 else cand
    err = gap(fitted)
    if err <= tol:
        return fitted
    _fail("inv_freq is not theta^(-2i/d) (largest gap %.2g: scaled frequencies)" % err)


#===-- the attention's inputs ----------------------------------------------===#

def _uncached(node):
    """x when node is cat([empty, x], dim) (a KV cache's first update, which
    concatenates the new keys to an empty tensor), else node."""
    got = _cat_parts(node)
    if not got:
        return node
    parts, dim = got
    shapes = [_meta_shape(p) if hasattr(p, "meta") else None for p in parts]
    if any(s is None for s in shapes):
        return node
    kept = [p for p, s in zip(parts, shapes) if math.prod(s) != 0]
    return kept[0] if len(kept) == 1 else node


def _unrepeated(node):
    """x when node is GQA's repeat_kv(x) (x[:, :, None].expand(b, hk, r, n, d)
    .reshape(b, hk * r, n, d), or x.repeat_interleave(r, dim=1)), else node."""
    if _is(node, "reshape", "view"):
        e = node.args[0]
        if _is(e, "expand"):
            g = e.args[0]
            if (g.op == "call_function" and g.target is operator.getitem
                    and isinstance(g.args[1], tuple) and len(g.args[1]) >= 3
                    and g.args[1][2] is None
                    and all(isinstance(s, slice) and s == slice(None) for s in g.args[1][:2])):
                x = g.args[0]
                xs, ns = _meta_shape(x), _meta_shape(node)
                if xs and ns and len(xs) == 4 and ns[0] == xs[0] and ns[2:] == xs[2:] \
                        and ns[1] % xs[1] == 0:
                    return x
    if _is(node, "repeat_interleave"):
        dim = _arg(node, 2, "dim")
        if dim == 1 and isinstance(_arg(node, 1, "repeats"), int):
            return node.args[0]
    return node


def _mask_kind(gm, mask, example, n, m):
    """('causal', None), ('causal', window) or (None, None) for an attn_mask
    whose value is known now: True (or 0 where additive) where a key is
    visible."""
    import torch
    v = _value(gm, mask, example)
    if not isinstance(v, torch.Tensor):
        _fail("the attn_mask is not a tensor")
    if v.dtype != torch.bool:
        v = v == 0
    v = v.cpu()
    if v.dim() < 2 or v.shape[-2:] != (n, m):
        _fail("an attn_mask of shape %s" % (tuple(v.shape),))
    first = v.reshape(-1, n, m)[0]
    if not bool((v.reshape(-1, n, m) == first).all()):
        _fail("an attn_mask that differs between batches or heads")
    if n != m:
        _fail("an attn_mask over %d keys for %d queries" % (m, n))
    if bool(first.all()):
        return None, None
    i = torch.arange(n)[:, None]
    j = torch.arange(m)[None, :]
    causal = j <= i
    if bool((first == causal).all()):
        return "causal", None
    w = int(first.sum(-1).max().item())
    if bool((first == (causal & (i - j < w))).all()):
        return "causal", w
    _fail("an attn_mask that is neither causal nor a causal sliding window")


def _positions(gm, node, example, n):
    """('offset', k) when the positions are arange(k, k + n) (known now, for
    every sequence), else ('tensor', node): integers, or integral floats
    known now (a float arange tracing made a constant)."""
    import torch
    try:
        v = _value(gm, node, example)
    except _NoMatch:
        dt = _meta_dtype(node)
        if dt is not None and dt.is_floating_point:
            _fail("RoPE's positions are floating point")
        return "tensor", node
    if not isinstance(v, torch.Tensor) or v.numel() == 0 or v.shape[-1] != n:
        _fail("RoPE's positions are not one per row")
    if v.is_floating_point() and not bool((v == v.round()).all()):
        _fail("RoPE's positions are not integers")
    rows = v.reshape(-1, n).cpu().double()
    start = rows[0, 0].item()
    if bool((rows == torch.arange(n, dtype=torch.float64) + start).all()):
        return "offset", int(start)
    return "tensor", node


#===-- the rewrite ----------------------------------------------------------===#

def rope_attention(q, k, v, q_positions, k_positions, theta, rotary_dim, offset, mask,
                   window, scale, layout=None, softcap=None):
    """The call a fused attention becomes: attn's custom op under
    torch.compile (torch 2.4 and later), attn.attention elsewhere. Positions
    are int tensors [B, N] / [B, M] (or [1, N], expanded) or None (then
    offset)."""
    import attn
    import torch
    rope = None
    if theta is not None:
        rope = dict(theta=theta, rotary_dim=rotary_dim)
        if layout not in (None, "rotate_half"):
            rope["layout"] = layout
        if q_positions is None:
            rope["offset"] = offset
        else:
            b = q.shape[0]
            rope["q_positions"] = q_positions.reshape(-1, q.shape[2]).expand(
                b, q.shape[2]).to(torch.int32).contiguous()
            rope["k_positions"] = k_positions.reshape(-1, k.shape[2]).expand(
                b, k.shape[2]).to(torch.int32).contiguous()
    win = None if window is None else (window - 1, None)
    op, _ = attn._register_ops()
    if op is not None:
        return attn._compiled_attention(q, k, v, rope, mask, win, softcap, None, None, None,
                                        scale, None)
    return attn.attention(q, k, v, rope=rope, mask=mask, window=win, scale=scale,
                          softcap=softcap)


def _float_arg(x):
    return x if isinstance(x, float) or (isinstance(x, int) and not isinstance(x, bool)) \
        else None


def _sdpa_parts(node):
    """What an SDPA call attends: dict(q, k, v, mask, is_causal, scale,
    softcap)."""
    dropout = _arg(node, 4, "dropout_p", 0.0)
    is_causal = _arg(node, 5, "is_causal", False)
    scale = node.kwargs.get("scale", node.args[6] if len(node.args) > 6 else None)
    if not isinstance(dropout, (int, float)) or dropout != 0:
        _fail("dropout_p is %r" % (dropout,))
    if not isinstance(is_causal, bool):
        _fail("is_causal is computed in the graph")
    if scale is not None and _float_arg(scale) is None:
        _fail("the scale is computed in the graph")
    return dict(q=_arg(node, 0, "query"), k=_arg(node, 1, "key"), v=_arg(node, 2, "value"),
                mask=_arg(node, 3, "attn_mask"), is_causal=is_causal, scale=scale,
                softcap=None)


def _softcap_of(node):
    """(x, cap) when node is tanh(x / cap) * cap (either order of the
    product; or x * (1 / cap) inside), else None."""
    for t, c in _product_pairs(node):
        cap = _float_arg(c)
        if cap is None or cap <= 0 or not _is(t, "tanh"):
            continue
        inner = t.args[0]
        if _is(inner, "truediv", "div") and _float_arg(inner.args[1]) == cap:
            return inner.args[0], float(cap)
        for x, r in _product_pairs(inner):
            if _float_arg(r) is not None and abs(_float_arg(r) * cap - 1.0) < 1e-12:
                return x, float(cap)
    return None


def _eager_parts(node):
    """What an attention written out in torch ops attends (transformers'
    eager_attention_forward: matmul(softmax(q @ k^T * scaling [softcap]
    [+ mask], -1), v), dropout in eval): dict as _sdpa_parts, or None when
    node (a matmul) is not one."""
    if not _is(node, "matmul") or len(node.args) != 2:
        return None
    p, v = node.args
    while _is(p, *_CONVERSIONS) or _is(p, "dropout"):
        if _is(p, "dropout"):
            rate = _arg(p, 1, "p", 0.5)
            training = _arg(p, 2, "training", True)
            if not (rate == 0 or training is False):
                _fail("attention dropout %r in training" % (rate,))
        p = p.args[0]
    if not _is(p, "softmax"):
        return None
    dim = _arg(p, 1, "dim")
    sshape = _meta_shape(p)
    if dim not in (-1, len(sshape or ()) - 1):
        return None
    scores, mask = p.args[0], None
    qk = None

    def logits(x):
        """(q, k, scale, softcap) when x is (q @ k^T) * scale, softcapped."""
        cap = None
        sc = _softcap_of(x)
        if sc:
            x, cap = sc
        scale = 1.0  # (written out, no factor means none)
        for a, b in _product_pairs(x):
            if _float_arg(b) is not None and _is(a, "matmul"):
                x, scale = a, float(_float_arg(b))
                break
        else:
            if _is(x, "truediv", "div") and _float_arg(x.args[1]):
                x, scale = x.args[0], 1.0 / float(_float_arg(x.args[1]))
        if not _is(x, "matmul"):
            return None
        q, kt = x.args[0], x.args[1]
        if not _is(kt, "transpose"):
            return None
        rank = len(_meta_shape(kt) or ())
        dims = {d % rank for d in kt.args[1:3] if isinstance(d, int)}
        if rank != 4 or dims != {2, 3}:
            return None
        return q, kt.args[0], scale, cap
    if _is(scores, "add") and len(scores.args) == 2:
        for a, b in ((scores.args[0], scores.args[1]), (scores.args[1], scores.args[0])):
            qk = logits(a)
            if qk:
                mask = b
                break
    if qk is None:
        qk = logits(scores)
    if qk is None:
        return None
    q, k, scale, cap = qk
    return dict(q=q, k=k, v=v, mask=mask, is_causal=False, scale=scale, softcap=cap,
                additive=True)


def _fuse_one(gm, node, parts, example):
    q_in, k_in, v_in = parts["q"], parts["k"], parts["v"]
    attn_mask, is_causal, scale = parts["mask"], parts["is_causal"], parts["scale"]
    softcap = parts["softcap"]
    qs, ks, vs = (_meta_shape(x) for x in (q_in, k_in, v_in))
    if qs is None or ks is None or vs is None or len(qs) != 4:
        _fail("q, k, v are not [B, H, N, D] tensors the graph records")
    n, m, d = qs[2], ks[2], qs[3]
    if attn_mask is not None:
        if is_causal:
            _fail("both attn_mask and is_causal")
        mask, window = _mask_kind(gm, attn_mask, example, n, m)
    else:
        mask, window = ("causal" if is_causal else None), None
    if mask == "causal" and n != m and attn_mask is None:
        _fail("is_causal with %d queries over %d keys" % (n, m))
    k_rep, v_rep = _uncached(_unrepeated(k_in)), _uncached(_unrepeated(v_in))
    if (k_rep is k_in) != (v_rep is v_in):
        k_rep, v_rep = k_in, v_in
    scale = float(scale) if scale is not None else d ** -0.5
    theta = rotary = offset = layout = None
    qpos = kpos = None
    q_src, k_src = q_in, k_rep
    rq, rk = _rope(q_in), _rope(k_rep)
    if rq is not None and rk is not None:
        (qx, rdim, qc, qsn, layout), (kx, rdim_k, kc, ksn, layout_k) = rq, rk
        if rdim != rdim_k or layout != layout_k:
            _fail("q and k are rotated differently")
        tabs = [_table(t, fn, layout) for t, fn in ((qc, "cos"), (qsn, "sin"), (kc, "cos"),
                                                     (ksn, "sin"))]
        scales = {s for _, s in tabs}
        if len(scales) != 1:
            _fail("RoPE's cos and sin are scaled differently")
        srcs = [_freq_sources(f) for f, _ in tabs]
        inv_nodes = {s[0] for s in srcs}
        if len(inv_nodes) != 1:
            _fail("q and k's RoPE read different inv_freq")
        inv = _value(gm, next(iter(inv_nodes)), example, inputs=True)
        theta = _theta(inv, rdim)
        rotary = rdim
        tab_scale = scales.pop()
        scale *= tab_scale * tab_scale
        q_pos_node, k_pos_node = srcs[0][1], srcs[2][1]
        if srcs[1][1] is not q_pos_node or srcs[3][1] is not k_pos_node:
            _fail("RoPE's cos and sin read different positions")
        kind_q, qp = _positions(gm, q_pos_node, example, n)
        kind_k, kp = _positions(gm, k_pos_node, example, m)
        if kind_q == kind_k == "offset" and qp == kp:
            offset = qp
        else:
            qpos, kpos = q_pos_node, k_pos_node
        q_src, k_src = qx, kx
    elif rq is not None or rk is not None:
        _fail("RoPE on only one of q and k")
    if mask is None and theta is None and k_rep is k_in and softcap is None \
            and not parts.get("additive"):
        _fail("nothing for attn to fuse (plain attention without RoPE, GQA or a mask)")
    # The call: before the attention's last node, its inputs all defined earlier.
    with gm.graph.inserting_before(node):
        new = gm.graph.call_function(
            rope_attention, (q_src, k_src, v_rep, qpos, kpos, theta, rotary, offset, mask,
                             window, scale), dict(layout=layout, softcap=softcap))
    node.replace_all_uses_with(new)
    gm.graph.erase_node(node)
    prog = dict(mask=mask, scale=round(scale, 6))
    if softcap is not None:
        prog["softcap"] = softcap
    if theta is not None:
        prog.update(theta=round(theta, 3), rotary_dim=rotary,
                    positions="offset %d" % offset if offset is not None else "tensor")
        if layout != "rotate_half":
            prog["layout"] = layout
    if window is not None:
        prog["window"] = window
    if _meta_shape(k_rep)[1] != qs[1]:
        prog["gqa"] = "%d/%d" % (qs[1], _meta_shape(k_rep)[1])
    return prog


def _meta_dtype(node):
    for key in ("val", "example_value", "tensor_meta"):
        v = node.meta.get(key)
        if v is not None and hasattr(v, "dtype"):
            return v.dtype
    return None


def fuse(gm, example_inputs=None):
    """Rewrites gm (a torch.fx.GraphModule) in place: each SDPA call whose
    inputs attn can take whole becomes one attn call (rope_attention); returns
    a Match per SDPA call. example_inputs (the graph's inputs, in placeholder
    order) give inv_freq when it is an input (dynamo lifts buffers), and the
    shapes when the graph has none recorded (symbolic_trace's)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    example = {}
    if example_inputs is not None:
        example = dict(zip(placeholders, example_inputs))
        if any(_meta_shape(n) is None for n in gm.graph.nodes if n.op != "output"):
            real = [x for x in example_inputs]
            if not any(_is_fake(x) for x in real):
                from torch.fx.passes.shape_prop import ShapeProp
                ShapeProp(gm).propagate(*real)
    targets = _sdpa_functions()
    matches = []
    for node in list(gm.graph.nodes):
        try:
            if node.op == "call_function" and node.target in targets:
                parts = _sdpa_parts(node)
            else:
                parts = _eager_parts(node)
                if parts is None:
                    continue
            prog = _fuse_one(gm, node, parts, example)
            matches.append(Match(node.name, True, program=prog))
        except _NoMatch as e:
            matches.append(Match(node.name, False, why=str(e)))
    if any(mt.fused for mt in matches):
        gm.graph.eliminate_dead_code()
        gm.graph.lint()
        gm.recompile()
    return matches


last_matches = []
all_matches = []


def backend(gm, example_inputs, **kwargs):
    """The torch.compile backend "attn": fuse(), then inductor (compile_fx)
    for the rest of the graph. The matches of the last graph dynamo gave it
    are in attn.fx.last_matches, those of every graph in all_matches."""
    global last_matches
    last_matches = fuse(gm, example_inputs)
    all_matches.extend(last_matches)
    from torch._inductor.compile_fx import compile_fx
    return compile_fx(gm, example_inputs, **kwargs)


def _register_backend():
    try:
        from torch._dynamo import register_backend
        from torch._dynamo.backends.registry import _BACKENDS
    except ImportError:
        return False
    if NAME not in _BACKENDS:
        register_backend(name=NAME)(backend)
    return True


registered = _register_backend()
