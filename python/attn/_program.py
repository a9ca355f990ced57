"""Builds attn IR text (MLIR generic form) for one attention and its tensor shapes,
or for one GEMM (linalg.matmul).

The function takes (q, k, v, then the extra inputs gate, qseg, kseg that the
options ask for) and returns o. Score modifiers apply in this order: scale,
softcap, alibi, gate, then the masks (causal, window, document).
"""
import math

DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32"}


def dtype_name(dtype):
    """The IR element type of a torch dtype (or of its name, 'float32')."""
    name = str(dtype)
    name = name[len("torch."):] if name.startswith("torch.") else name
    if name not in DTYPES:
        raise TypeError("attn: unsupported dtype %s (expected float32, float16 or bfloat16)"
                        % name)
    return DTYPES[name]


def f64(x, what):
    """A finite float as an MLIR f64 literal (MLIR wants a '.' in it)."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError("attn: %s must be finite, got %r" % (what, x))
    r = repr(x)
    if "." not in r:
        r = r.replace("e", ".0e") if "e" in r else r + ".0"
    return "%s : f64" % r


def i64(x, what):
    if isinstance(x, bool) or int(x) != x:
        raise ValueError("attn: %s must be an integer, got %r" % (what, x))
    return "%d : i64" % int(x)


def tensor_type(shape, elem):
    return "tensor<%sx%s>" % ("x".join(str(int(d)) for d in shape), elem)


def rope_attrs(rope, head_dim):
    """The attribute dictionary of attn.rope for rope=True or a dict."""
    cfg = {} if rope is True else dict(rope)
    unknown = set(cfg) - {"theta", "rotary_dim", "layout", "offset"}
    if unknown:
        raise ValueError("attn: unknown rope option(s) %s (expected theta, rotary_dim, "
                         "layout, offset)" % ", ".join(sorted(unknown)))
    layout = cfg.get("layout", "rotate_half")
    if layout not in ("rotate_half", "interleaved"):
        raise ValueError("attn: rope layout must be 'rotate_half' or 'interleaved', got %r"
                         % (layout,))
    attrs = ["theta = " + f64(cfg.get("theta", 10000.0), "rope theta"),
             "rotary_dim = " + i64(cfg.get("rotary_dim", head_dim), "rope rotary_dim"),
             'layout = "%s"' % layout]
    offset = cfg.get("offset", 0)
    if offset:
        attrs.append("offset = " + i64(offset, "rope offset"))
    return "{%s}" % ", ".join(attrs)


def build(q_shape, k_shape, v_shape, dtype, rope=None, mask=None, window=None, softcap=None,
          alibi=None, gate_shape=None, gate_block=None, segments=None, scale=None,
          name="attention"):
    """Returns the program text. Shapes are (B, H, N, D), (B, Hk, M, D), (B, Hk, M, Dv);
    gate_shape is (B, H, N, ceil(M / gate_block)); segments is ((B, N), (B, M))."""
    elem = dtype_name(dtype)
    if elem == "i32":
        raise TypeError("attn: q, k and v must be floating point")
    b, h, n, d = q_shape
    m, dv = k_shape[2], v_shape[3]
    qt, kt, vt = (tensor_type(s, elem) for s in (q_shape, k_shape, v_shape))
    st = tensor_type((b, h, n, m), elem)
    ot = tensor_type((b, h, n, dv), elem)
    args = ["%%q: %s" % qt, "%%k: %s" % kt, "%%v: %s" % vt]
    if gate_shape is not None:
        args.append("%%g: %s" % tensor_type(gate_shape, "f32"))
    if segments is not None:
        args.append("%%qseg: %s" % tensor_type(segments[0], "i32"))
        args.append("%%kseg: %s" % tensor_type(segments[1], "i32"))
    lines = ["func.func @%s(%s) -> %s {" % (name, ", ".join(args), ot)]
    qv, kv = "%q", "%k"
    if rope is not None and rope is not False:
        attrs = rope_attrs(rope, d)
        lines.append('  %%qr = "attn.rope"(%%q) %s : (%s) -> %s' % (attrs, qt, qt))
        lines.append('  %%kr = "attn.rope"(%%k) %s : (%s) -> %s' % (attrs, kt, kt))
        qv, kv = "%qr", "%kr"
    lines.append('  %%s0 = "attn.qk"(%s, %s) : (%s, %s) -> %s' % (qv, kv, qt, kt, st))
    steps = [0]

    def score(op, operands="", attrs="", extra_types=""):
        cur, nxt = "%%s%d" % steps[0], "%%s%d" % (steps[0] + 1)
        steps[0] += 1
        lines.append('  %s = "attn.%s"(%s%s)%s : (%s%s) -> %s'
                     % (nxt, op, cur, operands, " {%s}" % attrs if attrs else "", st,
                        extra_types, st))

    score("scale", attrs="scale = " + f64(1.0 / math.sqrt(d) if scale is None else scale,
                                          "scale"))
    if softcap is not None:
        score("softcap", attrs="cap = " + f64(softcap, "softcap"))
    if alibi is not None:
        score("alibi", attrs="max_bias = " + f64(alibi, "alibi max_bias"))
    if gate_shape is not None:
        score("gate", operands=", %g", attrs="block_size = " + i64(gate_block, "gate block"),
              extra_types=", " + tensor_type(gate_shape, "f32"))
    if mask == "causal":
        score("causal")
    elif mask is not None:
        raise ValueError("attn: mask must be 'causal' or None, got %r" % (mask,))
    if window is not None:
        left, right = window
        score("window", attrs="left = %s, right = %s" % (
            i64(-1 if left is None else left, "window left"),
            i64(-1 if right is None else right, "window right")))
    if segments is not None:
        score("document", operands=", %qseg, %kseg",
              extra_types=", %s, %s" % (tensor_type(segments[0], "i32"),
                                        tensor_type(segments[1], "i32")))
    last = "%%s%d" % steps[0]
    lines.append('  %%p = "attn.softmax"(%s) : (%s) -> %s' % (last, st, st))
    lines.append('  %%o = "attn.pv"(%%p, %%v) : (%s, %s) -> %s' % (st, vt, ot))
    lines.append("  return %%o : %s" % ot)
    lines.append("}")
    return "\n".join(lines) + "\n"


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
