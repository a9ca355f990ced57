"""Argument checking of attn.attention, attn.matmul and attn.load: what attn
reads of a tensor and the TypeError/ValueError, naming the argument, for what
it cannot take. Functions only, no state."""
from . import _program


def _is_tensor(x):
    """Whether x is a tensor: what attn reads of one (torch.Tensor or a stand-in)."""
    return all(hasattr(x, a) for a in ("shape", "dtype", "device", "data_ptr"))


def _tensor(name, x):
    if not _is_tensor(x):
        raise TypeError("attn: %s must be a tensor (torch.Tensor), got %s"
                        % (name, _program._describe(x)))
    return x


def _shape(t):
    return tuple(int(d) for d in t.shape)


def _dtype(t):
    """t's dtype as torch names it without 'torch.': 'float32', 'int64'."""
    name = str(t.dtype)
    return name[len("torch."):] if name.startswith("torch.") else name


def _on(t):
    """t's device as a string: 'cpu', 'cuda:0'."""
    d = t.device
    return d.type if getattr(d, "index", None) is None else "%s:%d" % (d.type, d.index)


def _check_program(program):
    if not isinstance(program, str):
        raise TypeError("attn: program must be IR text (a str), got %s"
                        % _program._describe(program))


def _optional_str(name, x):
    if x is not None and not isinstance(x, str):
        raise TypeError("attn: %s must be a str or None, got %s" % (name, _program._describe(x)))


FLOATS = ("float32", "float16", "bfloat16")
# attention's: float64 too, on the CPU only (it computes in float64 there;
# the GPU kernels compute in float32 and refuse f64 programs).
ATTN_FLOATS = FLOATS + ("float64",)


def _check_qkv(q, k, v):
    """q [B, H, N, D], k [B, Hk, M, D], v [B, Hk, M, Dv]: Hk divides H, one
    floating dtype, no empty dimension."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        _tensor(name, t)
        if len(t.shape) != 4:
            raise ValueError("attn: %s must be 4-D [batch, heads, seq, dim], got shape %s"
                             % (name, _shape(t)))
        if 0 in _shape(t):
            raise ValueError("attn: %s has an empty dimension, shape %s" % (name, _shape(t)))
    if not (_dtype(q) == _dtype(k) == _dtype(v)):
        raise TypeError("attn: q, k and v must share a dtype, got %s, %s, %s"
                        % (q.dtype, k.dtype, v.dtype))
    if _dtype(q) not in ATTN_FLOATS:
        raise TypeError("attn: q, k and v must be float32, float16, bfloat16 or float64, got %s"
                        % _dtype(q))
    if _dtype(q) == "float64" and getattr(q.device, "type", "cpu") != "cpu":
        raise TypeError("attn: float64 attention runs on the CPU only (the GPU kernels compute "
                        "in float32), got q on %s; use float32, float16 or bfloat16 there"
                        % _on(q))
    (b, h, _, d), (bk, hk, m, dk), (bv, hv, mv, _) = _shape(q), _shape(k), _shape(v)
    shapes = "q %s, k %s, v %s" % (_shape(q), _shape(k), _shape(v))
    if not b == bk == bv:
        raise ValueError("attn: q, k and v must have one batch size B, got %s" % shapes)
    if hk != hv:
        raise ValueError("attn: k and v must have the same number of heads Hk, got %s" % shapes)
    if m != mv:
        raise ValueError("attn: k and v must have the same sequence length M, got %s" % shapes)
    if d != dk:
        raise ValueError("attn: q and k must have the same head dim D, got %s" % shapes)
    if h % hk:
        raise ValueError("attn: the query heads H=%d must be a multiple of the key/value heads "
                         "Hk=%d (grouped-query attention), got %s" % (h, hk, shapes))


def _pair(name, form, x):
    """x as a 2-tuple, or a TypeError saying the form name= takes."""
    if _is_tensor(x):
        raise TypeError("attn: %s must be a pair %s, got a tensor: pass %s=%s"
                        % (name, form, name, form))
    if not isinstance(x, (tuple, list)):
        raise TypeError("attn: %s must be a pair %s, got %s"
                        % (name, form, _program._describe(x)))
    if len(x) != 2:
        raise TypeError("attn: %s must be a pair %s, got a %s of %d"
                        % (name, form, type(x).__name__, len(x)))
    return tuple(x)


def _check_gate(gate, q, k):
    """(g, block_size) checked against q and k: g [B, H, N, ceil(M / block_size)],
    float32 or q's dtype; float64 for a float64 q (the program computes in it)."""
    g, block = _pair("gate", "(g, block_size)", gate)
    _tensor("gate's g", g)
    block = _program.integer(block, "gate block_size")
    if block < 1:
        raise ValueError("attn: gate block_size must be positive, got %d" % block)
    b, h, n, _ = _shape(q)
    want = (b, h, n, -(-_shape(k)[2] // block))
    if _shape(g) != want:
        raise ValueError("attn: gate's g must be [B, H, N, ceil(M / block_size)] = %s for q %s, "
                         "k %s and block_size %d, got shape %s"
                         % (want, _shape(q), _shape(k), block, _shape(g)))
    if _dtype(q) == "float64" and _dtype(g) != "float64":
        raise TypeError("attn: gate's g must be float64 for a float64 q (a float64 attention "
                        "computes in float64), got %s" % _dtype(g))
    if _dtype(g) not in ("float32", _dtype(q)):
        raise TypeError("attn: gate's g must be float32 or q's dtype (%s), got %s"
                        % (_dtype(q), _dtype(g)))
    return g, block


INT32_MIN, INT32_MAX = -2 ** 31, 2 ** 31 - 1


def _check_segments(segment_ids, q, k):
    """(qseg [B, N], kseg [B, M]), int32 or int64."""
    segs = _pair("segment_ids", "(qseg, kseg)", segment_ids)
    b, n = _shape(q)[0], _shape(q)[2]
    m = _shape(k)[2]
    for name, t, want in (("qseg", segs[0], (b, n)), ("kseg", segs[1], (b, m))):
        _tensor("segment_ids' " + name, t)
        if _shape(t) != want:
            raise ValueError("attn: segment_ids' %s must be [B, %s] = %s for q %s and k %s, "
                             "got shape %s" % (name, "N" if name == "qseg" else "M", want,
                                               _shape(q), _shape(k), _shape(t)))
        if _dtype(t) not in ("int32", "int64"):
            raise TypeError("attn: segment_ids' %s must be int32 or int64, got %s"
                            % (name, _dtype(t)))
    return segs


def _gate_input(gate):
    """The kernel's gate input: g as float32 (float64 stays: only a float64
    q takes one, _check_gate)."""
    g = gate[0]
    return g if _dtype(g) in ("float32", "float64") else g.float()


def _segment_inputs(segs):
    """The kernel's qseg and kseg: int32, int64 ids converted after checking
    that they fit."""
    out = []
    for name, t in zip(("qseg", "kseg"), segs):
        if out and t is segs[0]:
            out.append(out[0])  # segment_ids=(seg, seg): convert once
            continue
        if _dtype(t) == "int64":
            lo, hi = int(t.min()), int(t.max())
            if lo < INT32_MIN or hi > INT32_MAX:
                raise ValueError("attn: segment_ids' %s holds %d, outside the kernel's int32 "
                                 "range [%d, %d]" % (name, lo if lo < INT32_MIN else hi,
                                                     INT32_MIN, INT32_MAX))
            t = t.int()
        out.append(t)
    return out


POSITIONS = ("q_positions", "k_positions")


def _check_positions(rope, q, k):
    """rope's explicit positions (q_positions [B, N], k_positions [B, M],
    int32 or int64; None or absent: none), as a pair (None where absent).
    rope's other options are _program.rope_attrs' to check."""
    if not hasattr(rope, "get") or rope is True:
        return (None, None)
    b, n, m = _shape(q)[0], _shape(q)[2], _shape(k)[2]
    out = []
    for name, want in zip(POSITIONS, ((b, n), (b, m))):
        t = rope.get(name)
        if t is None:
            out.append(None)
            continue
        _tensor("rope " + name, t)
        if _shape(t) != want:
            raise ValueError("attn: rope %s must be [B, %s] = %s for q %s and k %s, got shape %s"
                             % (name, "N" if name[0] == "q" else "M", want, _shape(q),
                                _shape(k), _shape(t)))
        if _dtype(t) not in ("int32", "int64"):
            raise TypeError("attn: rope %s must be int32 or int64, got %s" % (name, _dtype(t)))
        out.append(t)
    return tuple(out)


def _position_inputs(positions):
    """The kernel's q_positions and k_positions (those present): int32,
    int64 ones converted after checking that they fit."""
    out = []
    for name, t in zip(POSITIONS, positions):
        if t is None:
            continue
        if _dtype(t) == "int64":
            lo, hi = int(t.min()), int(t.max())
            if lo < INT32_MIN or hi > INT32_MAX:
                raise ValueError("attn: rope %s holds %d, outside the kernel's int32 range "
                                 "[%d, %d]" % (name, lo if lo < INT32_MIN else hi, INT32_MIN,
                                               INT32_MAX))
            t = t.int()
        out.append(t)
    return out


def _check_matmul(a, b, c):
    named = [("a", a), ("b", b)] + ([("c", c)] if c is not None else [])
    for name, t in named:
        _tensor(name, t)
        if len(t.shape) != 2:
            raise ValueError("attn: %s must be 2-D, got shape %s" % (name, _shape(t)))
        if 0 in _shape(t):
            raise ValueError("attn: %s has an empty dimension, shape %s" % (name, _shape(t)))
    tensors = [t for _, t in named]
    if len({str(t.dtype) for t in tensors}) != 1:
        raise TypeError("attn: %s must share a dtype, got %s"
                        % ("a and b" if c is None else "a, b and c",
                           ", ".join(str(t.dtype) for t in tensors)))
    if _dtype(a) not in FLOATS:
        raise TypeError("attn: a and b must be floating point (float32, float16 or bfloat16), "
                        "got %s" % _dtype(a))
    m, k = _shape(a)
    if _shape(b)[0] != k:
        raise ValueError("attn: a is %dx%d but b has %d rows" % (m, k, _shape(b)[0]))
    if c is not None and _shape(c) != (m, _shape(b)[1]):
        raise ValueError("attn: c must be %dx%d, got shape %s" % (m, _shape(b)[1], _shape(c)))
    return named
