"""A plain-Python evaluator of the bodies attn's tracer writes (the ops of
python/attn/_trace.py, nothing more), in float64 and unbounded integers,
captures read with clamped indices as every path reads them: the meaning of
the traced text, checked against torch running the same function
(mods_semantics.test). Not the compiler's evaluator (lib/IR/attn_body_eval)."""
import math
import re

_LINE = re.compile(r"^\s*(%[\w]+) = ([\w.]+) (.*)$")
_TYPE = re.compile(r"tensor<([0-9x]+)x(\w+)>")


def regions(text):
    """{"score_mod" | "mask_mod": (block argument names, body lines, yielded name)}."""
    out = {}
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        m = re.search(r'"attn\.(score_mod|mask_mod)"', ln)
        if not m:
            continue
        args = re.findall(r"(%\w+):", lines[i + 1])
        body, j = [], i + 2
        while not lines[j].strip().startswith("gpu.yield"):
            body.append(lines[j])
            j += 1
        out[m.group(1)] = (args, body, lines[j].split()[1])
    return out


def _f32(tok):
    if tok.startswith("0x"):
        return {"0x7F800000": math.inf, "0xFF800000": -math.inf}.get(tok, math.nan)
    return float(tok)


def evaluate(region, args, captures):
    """The yielded value of region for block arguments args; captures maps
    %capN to (flat list of values, shape)."""
    names, body, out = region
    env = dict(zip(names, args))

    def v(tok):
        return env[tok.strip().rstrip(",")]

    for ln in body:
        name, op, rest = _LINE.match(ln).groups()
        operands, _, ty = rest.rpartition(" : ")
        ops = [t.strip() for t in operands.split(",")]
        if op == "arith.constant":
            if rest in ("true", "false"):
                env[name] = rest == "true"
                continue
            val, ty = rest.split(" : ")
            env[name] = _f32(val) if ty == "f32" else int(val)
            continue
        if op == "tensor.extract":
            cap, idx = re.match(r"(%\w+)\[(.*)\]", operands).groups()
            data, shape = captures[cap]
            flat = 0
            for ix, d in zip([v(t) for t in idx.split(",")], shape):
                flat = flat * d + min(max(ix, 0), d - 1)
            env[name] = data[flat]
            continue
        if op in ("arith.cmpi", "arith.cmpf"):
            pred, a, b = ops
            a, b = v(a), v(b)
            env[name] = {
                "slt": a < b, "sle": a <= b, "sgt": a > b, "sge": a >= b, "eq": a == b,
                "ne": a != b, "ult": a < b, "ule": a <= b, "ugt": a > b, "uge": a >= b,
                "olt": a < b, "ole": a <= b, "ogt": a > b, "oge": a >= b, "oeq": a == b,
                "une": a != b}[pred]
            continue
        if op == "arith.select":
            c, a, b = (v(t) for t in ops)
            env[name] = a if c else b
            continue
        if " to " in ty:  # casts: the value, as its new kind
            a = v(operands)
            src, dst = ty.split(" to ")
            if op in ("arith.fptosi",):
                env[name] = int(a)  # toward zero
            elif op in ("arith.sitofp", "arith.uitofp", "arith.extf"):
                env[name] = float(a)
            else:  # index_cast, index_castui (of i1: 0 or 1)
                env[name] = int(a)
            continue
        xs = [v(t) for t in ops]
        if op.startswith("math."):
            f = op[len("math."):]
            a = xs[0]
            env[name] = {
                "exp": lambda: math.exp(a) if a < 700 else math.inf,
                "exp2": lambda: 2.0 ** a, "log": lambda: math.log(a) if a > 0 else
                (-math.inf if a == 0 else math.nan),
                "log2": lambda: math.log2(a), "log1p": lambda: math.log1p(a),
                "tanh": lambda: math.tanh(a), "sqrt": lambda: math.sqrt(a) if a >= 0 else math.nan,
                "rsqrt": lambda: 1.0 / math.sqrt(a), "sin": lambda: math.sin(a),
                "cos": lambda: math.cos(a), "erf": lambda: math.erf(a),
                "floor": lambda: float(math.floor(a)), "ceil": lambda: float(math.ceil(a)),
                "absf": lambda: abs(a), "absi": lambda: abs(a),
                "powf": lambda: a ** xs[1] if a >= 0 else math.nan,
                "copysign": lambda: math.copysign(a, xs[1])}[f]()
            continue
        f = op[len("arith."):]
        if f == "negf":
            env[name] = -xs[0]
            continue
        a, b = xs
        if f in ("addf", "addi"):
            env[name] = a + b
        elif f in ("subf", "subi"):
            env[name] = a - b
        elif f in ("mulf", "muli"):
            env[name] = a * b
        elif f == "divf":
            if b:
                env[name] = a / b
            else:
                env[name] = math.nan if a == 0 or a != a else \
                    math.copysign(math.inf, a) * math.copysign(1.0, b)
        elif f == "divsi":
            env[name] = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        elif f == "remsi":
            env[name] = a - b * (abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1))
        elif f in ("maximumf", "maxsi"):
            env[name] = math.nan if a != a or b != b else max(a, b)
        elif f in ("minimumf", "minsi"):
            env[name] = math.nan if a != a or b != b else min(a, b)
        elif f == "andi":
            env[name] = a & b if not isinstance(a, bool) else a and b
        elif f == "ori":
            env[name] = a | b if not isinstance(a, bool) else a or b
        elif f == "xori":
            env[name] = a ^ b if not isinstance(a, bool) else a != b
        elif f == "shli":
            env[name] = a << b
        elif f == "shrsi":
            env[name] = a >> b
        else:
            raise NotImplementedError(op)
    return env[out]
