"""Builds attn IR text (MLIR generic form) for one attention and its tensor shapes,
or for one GEMM (linalg.matmul).

The function takes (q, k, v, then the extra inputs gate, qseg, kseg that the
options ask for, then the tensors a score_mod or mask_mod captures) and
returns o. Score modifiers apply in this order: scale, softcap, alibi, gate,
score_mod (an attn.score_mod whose body _trace.py traced), then the masks
(causal, window, document, mask_mod), which commute.
"""
import collections.abc
import math
import numbers

DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64",
          "int32": "i32"}
# The element types of kernel parameters: also int64, a captured tensor's.
PARAM_DTYPES = dict(DTYPES, int64="i64")


def dtype_name(dtype):
    """The IR element type of a torch dtype (or of its name, 'float32')."""
    name = str(dtype)
    name = name[len("torch."):] if name.startswith("torch.") else name
    if name not in DTYPES:
        raise TypeError("attn: unsupported dtype %s (expected float32, float16, bfloat16 or "
                        "float64)" % name)
    return DTYPES[name]


def compute_elem(elem):
    """The element type a program of element type elem computes in (its gate,
    lse and score bodies): f64 for f64, f32 otherwise (attn_compute_type)."""
    return "f64" if elem == "f64" else "f32"


def _describe(x):
    """x for an error message: its repr, and its type unless that is plain."""
    r = repr(x)
    if len(r) > 60:
        r = r[:57] + "..."
    t = type(x)
    if t in (bool, int, float, str, type(None), tuple, list, dict):
        return r
    return "%s (%s.%s)" % (r, t.__module__, t.__qualname__)


def real(x, what, positive=False, example=None):
    """x as a Python float: a real number (not a bool), finite, > 0 if positive."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError("attn: %s must be a float%s, got %s"
                        % (what, " (e.g. %s)" % example if example else "", _describe(x)))
    try:
        x = float(x)
    except OverflowError:  # an int beyond the float range (10**400)
        x = math.inf if x > 0 else -math.inf
    if not math.isfinite(x) or (positive and x <= 0):
        raise ValueError("attn: %s must be %sfinite, got %r"
                         % (what, "positive and " if positive else "", x))
    return x


def integer(x, what):
    """x as a Python int: an integer (int, numpy integer; not a bool, not a float)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError("attn: %s must be an integer, got %s" % (what, _describe(x)))
    return int(x)


FLOAT32_MAX = 3.4028234663852886e38


def f64(x, what, positive=False, example=None):
    """A finite float as an MLIR f64 literal (MLIR wants a '.' in it). The
    kernels compute in float32, so it must be within float32's range."""
    x = real(x, what, positive, example)
    if abs(x) > FLOAT32_MAX:
        raise ValueError("attn: %s must be within float32's range (|x| <= %.7g), got %r"
                         % (what, FLOAT32_MAX, x))
    r = repr(x)
    if "." not in r:
        r = r.replace("e", ".0e") if "e" in r else r + ".0"
    return "%s : f64" % r


def i64(x, what):
    return "%d : i64" % integer(x, what)


def tensor_type(shape, elem):
    return "tensor<%sx%s>" % ("x".join(str(int(d)) for d in shape), elem)


ROPE_FORM = ("None, True or dict(theta=10000.0, rotary_dim=D, layout='rotate_half' | "
             "'interleaved', offset=0 | q_offset=0, k_offset=0, q_positions=None, "
             "k_positions=None)")
ROPE_OPTIONS = ("theta", "rotary_dim", "layout", "offset", "q_offset", "k_offset",
                "q_positions", "k_positions")


def rope_attrs(rope, head_dim):
    """The attribute dictionaries of q's and k's attn.rope for rope=True or a
    dict: offset puts row 0 of both at that position; q_offset and k_offset
    put each apart (queries that end the keys, as in chunked prefill);
    q_positions and k_positions (tensors, checked by the caller: not read
    here but for their presence) give each row its own and exclude an
    offset of the same tensor."""
    if rope is True:
        cfg = {}
    elif isinstance(rope, collections.abc.Mapping):
        cfg = dict(rope)
    else:
        raise TypeError("attn: rope must be %s, got %s" % (ROPE_FORM, _describe(rope)))
    unknown = set(cfg) - set(ROPE_OPTIONS)
    if unknown:
        raise ValueError("attn: unknown rope option(s) %s (expected %s)"
                         % (", ".join(sorted(map(str, unknown))), ", ".join(ROPE_OPTIONS)))
    layout = cfg.get("layout", "rotate_half")
    if layout not in ("rotate_half", "interleaved"):
        raise ValueError("attn: rope layout must be 'rotate_half' or 'interleaved', got %s"
                         % _describe(layout))
    rotary_dim = integer(cfg.get("rotary_dim", head_dim), "rope rotary_dim")
    if rotary_dim < 2 or rotary_dim % 2 or rotary_dim > head_dim:
        raise ValueError("attn: rope rotary_dim must be even and in [2, D=%d] (D: the head "
                         "dim of q and k), got %d" % (head_dim, rotary_dim))
    attrs = ["theta = " + f64(cfg.get("theta", 10000.0), "rope theta", positive=True),
             "rotary_dim = %d : i64" % rotary_dim,
             'layout = "%s"' % layout]
    if "offset" in cfg and ("q_offset" in cfg or "k_offset" in cfg):
        raise ValueError("attn: rope offset applies to q and k; give it or q_offset and "
                         "k_offset, not both")
    for t in ("q", "k"):
        if cfg.get(t + "_positions") is not None:
            given = [n for n in ("offset", t + "_offset") if n in cfg]
            if given:
                raise ValueError("attn: rope %s_positions gives %s's rows their positions; "
                                 "%s cannot move them too" % (t, t, given[0]))
    both = integer(cfg.get("offset", 0), "rope offset")
    out = []
    for t in ("q", "k"):
        offset = integer(cfg.get(t + "_offset", both), "rope %s_offset" % t)
        out.append("{%s}" % ", ".join(attrs + (["offset = %d : i64" % offset] if offset
                                               else [])))
    return tuple(out)


def window_attrs(window):
    """left = .., right = .. of attn.window for window=(left, right)."""
    form = ("a pair (left, right) of key counts, each an integer >= 0 or None/-1 "
            "(unbounded)")
    if not isinstance(window, (tuple, list)) or len(window) != 2:
        raise TypeError("attn: window must be %s, got %s" % (form, _describe(window)))
    out = []
    for side, x in zip(("left", "right"), window):
        x = -1 if x is None else integer(x, "window " + side)
        if x < -1:
            raise ValueError("attn: window %s must be >= 0, or None or -1 (unbounded), got %d"
                             % (side, x))
        out.append(x)
    return "left = %d : i64, right = %d : i64" % tuple(out)


def build(q_shape, k_shape, v_shape, dtype, rope=None, mask=None, window=None, softcap=None,
          alibi=None, gate_shape=None, gate_block=None, segments=None, scale=None,
          name="attention", score_fn=None, mask_fn=None, captures=(), positions=(None, None),
          grads=()):
    """Returns the program text. Shapes are (B, H, N, D), (B, Hk, M, D), (B, Hk, M, Dv);
    gate_shape is (B, H, N, ceil(M / gate_block)); segments is ((B, N), (B, M));
    positions is the shapes of rope's q_positions and k_positions, (B, N)
    and (B, M), None where absent (the function's arguments after the
    segments); score_fn and mask_fn are bodies traced by _trace.trace,
    captures its Capture list (the function's last arguments); grads the
    tensors whose gradients the backward computes ("gate", or Captures),
    marked {attn.grad} for attn-grad."""
    elem = dtype_name(dtype)
    if elem == "i32":
        raise TypeError("attn: q, k and v must be floating point")
    ct = compute_elem(elem)
    b, h, n, d = q_shape
    m, dv = k_shape[2], v_shape[3]
    qt, kt, vt = (tensor_type(s, elem) for s in (q_shape, k_shape, v_shape))
    st = tensor_type((b, h, n, m), elem)
    ot = tensor_type((b, h, n, dv), elem)
    args = ["%%q: %s" % qt, "%%k: %s" % kt, "%%v: %s" % vt]
    if gate_shape is not None:
        args.append("%%g: %s%s" % (tensor_type(gate_shape, ct),
                                   " {attn.grad}" if "gate" in grads else ""))
    if segments is not None:
        args.append("%%qseg: %s" % tensor_type(segments[0], "i32"))
        args.append("%%kseg: %s" % tensor_type(segments[1], "i32"))
    rope_on = rope is not None and rope is not False
    pos_types = [None if not rope_on or p is None else tensor_type(p, "i32")
                 for p in positions]
    for arg, ty in zip(("%qpos", "%kpos"), pos_types):
        if ty is not None:
            args.append("%s: %s" % (arg, ty))
    wanted = set(id(c) for c in grads if c != "gate")
    args.extend("%s: %s%s" % (c.name, c.type, " {attn.grad}" if id(c) in wanted else "")
                for c in captures)
    lines = ["func.func @%s(%s) -> %s {" % (name, ", ".join(args), ot)]
    qv, kv = "%q", "%k"
    if rope_on:
        qattrs, kattrs = rope_attrs(rope, d)
        for r, x, attrs, xt, arg, pt in (("%qr", "%q", qattrs, qt, "%qpos", pos_types[0]),
                                         ("%kr", "%k", kattrs, kt, "%kpos", pos_types[1])):
            if pt is None:
                lines.append('  %s = "attn.rope"(%s) %s : (%s) -> %s' % (r, x, attrs, xt, xt))
            else:
                lines.append('  %s = "attn.rope"(%s, %s) %s : (%s, %s) -> %s'
                             % (r, x, arg, attrs, xt, pt, xt))
        qv, kv = "%qr", "%kr"
    lines.append('  %%s0 = "attn.qk"(%s, %s) : (%s, %s) -> %s' % (qv, kv, qt, kt, st))
    steps = [0]

    def score(op, operands="", attrs="", extra_types=""):
        cur, nxt = "%%s%d" % steps[0], "%%s%d" % (steps[0] + 1)
        steps[0] += 1
        lines.append('  %s = "attn.%s"(%s%s)%s : (%s%s) -> %s'
                     % (nxt, op, cur, operands, " {%s}" % attrs if attrs else "", st,
                        extra_types, st))

    score("scale", attrs="scale = " + (f64(1.0 / math.sqrt(d), "scale") if scale is None else
                                       f64(scale, "scale", positive=True, example="scale=0.125")))
    if softcap is not None:
        score("softcap", attrs="cap = " + f64(softcap, "softcap", positive=True,
                                              example="softcap=30.0"))
    if alibi is not None:
        score("alibi", attrs="max_bias = " + f64(alibi, "alibi (the ALiBi max_bias)",
                                                 positive=True, example="alibi=8.0"))
    if gate_shape is not None:
        score("gate", operands=", %g", attrs="block_size = " + i64(gate_block, "gate block_size"),
              extra_types=", " + tensor_type(gate_shape, ct))
    if score_fn is not None:
        lines.extend(_trace_region("score_mod", score_fn, steps, st))
    if mask == "causal":
        score("causal")
    elif mask is not None:
        raise ValueError("attn: mask must be 'causal' or None, got %s" % _describe(mask))
    if window is not None:
        score("window", attrs=window_attrs(window))
    if segments is not None:
        score("document", operands=", %qseg, %kseg",
              extra_types=", %s, %s" % (tensor_type(segments[0], "i32"),
                                        tensor_type(segments[1], "i32")))
    if mask_fn is not None:
        lines.extend(_trace_region("mask_mod", mask_fn, steps, st))
    last = "%%s%d" % steps[0]
    lines.append('  %%p = "attn.softmax"(%s) : (%s) -> %s' % (last, st, st))
    lines.append('  %%o = "attn.pv"(%%p, %%v) : (%s, %s) -> %s' % (st, vt, ot))
    lines.append("  return %%o : %s" % ot)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _trace_region(op, traced, steps, scores_type):
    """The lines of attn.<op> with traced's body (_trace.trace's: its op
    lines, block arguments and result), the next step of the chain."""
    body, args, out = traced
    cur, nxt = "%%s%d" % steps[0], "%%s%d" % (steps[0] + 1)
    steps[0] += 1
    sig = ", ".join("%s: %s" % (a.name, body.typename(a.ty)) for a in args)
    lines = ['  %s = "attn.%s"(%s) ({' % (nxt, op, cur), "  ^bb0(%s):" % sig]
    lines.extend(body.lines)
    lines.append("    gpu.yield %s : %s" % (out.name, body.typename(out.ty)))
    lines.append("  }) : (%s) -> %s" % (scores_type, scores_type))
    return lines


def build_matmul(a_shape, b_shape, dtype, accumulate=False, name="matmul"):
    """Returns the text of one linalg.matmul, c[M, N] = a[M, K] b[K, N]:
    initialised to zero (a linalg.fill of 0.0), or to the function's third
    argument c when accumulate is set."""
    elem = dtype_name(dtype)
    if elem == "i32":
        raise TypeError("attn: a and b must be floating point")
    (m, k), (k2, n) = a_shape, b_shape
    if k != k2:
        raise ValueError("attn: a is %dx%d but b has %d rows" % (m, k, k2))
    at, bt, ct = (tensor_type(s, elem) for s in ((m, k), (k, n), (m, n)))
    args = ["%%a: %s" % at, "%%b: %s" % bt]
    lines = []
    if accumulate:
        args.append("%%c: %s" % ct)
        init = "%c"
    else:
        lines.append("  %%zero = arith.constant 0.0 : %s" % elem)
        lines.append("  %%empty = tensor.empty() : %s" % ct)
        lines.append("  %%init = linalg.fill ins(%%zero : %s) outs(%%empty : %s) -> %s"
                     % (elem, ct, ct))
        init = "%init"
    lines.insert(0, "func.func @%s(%s) -> %s {" % (name, ", ".join(args), ct))
    lines.append("  %%r = linalg.matmul ins(%%a, %%b : %s, %s) outs(%s : %s) -> %s"
                 % (at, bt, init, ct, ct))
    lines.append("  return %%r : %s" % ct)
    lines.append("}")
    return "\n".join(lines) + "\n"
