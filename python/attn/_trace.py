"""Traces attention()'s score_mod and mask_mod, plain Python functions of torch
operations (as flex_attention's), into the bodies of attn.score_mod and
attn.mask_mod: region text of arith, math and tensor.extract ops.

The function is called once with proxies (Value) for its arguments; each
operation on a proxy (an operator, a torch function through
__torch_function__, a Tensor method) appends one op to the body and returns
the proxy of its result. Indexing a captured torch tensor by proxies
(Tensor.__getitem__ dispatches to __torch_function__ when an index is a
proxy) reads one element: tensor.extract of a capture, a function argument
of the program after the existing ones. An operation attn cannot compile
raises TypeError naming it; so does Python control flow on a proxy (if,
and, or, int(), ...), which a trace cannot follow.

Values are of three kinds, as torch's dtypes are of three categories: float
(f32), integer (index) and bool (i1); binary operations promote as torch
does (bool < integer < float, Python numbers weakly typed), / is true
division, // and % round toward -inf as torch's do.

The cached call's key of such a function and where its captured tensors
are found again are _fn_key.py's.
"""
import inspect
import math
import numbers
import struct
import types

from ._program import FLOAT32_MAX, _describe, tensor_type

SCORE_ARGS = ("score", "b", "h", "q_idx", "kv_idx")
MASK_ARGS = ("b", "h", "q_idx", "kv_idx")

# The element type of a captured tensor in the program, and the copy made
# of a tensor whose dtype the kernels do not read.
CAPTURE_DTYPES = {"float32": ("f32", None), "float16": ("f16", None),
                  "bfloat16": ("bf16", None), "int32": ("i32", None), "int64": ("i64", None),
                  "float64": ("f32", "float32"), "bool": ("i32", "int32"),
                  "uint8": ("i32", "int32"), "int8": ("i32", "int32"),
                  "int16": ("i32", "int32")}

# Kinds of values: the IR type of each; F, the float kind, is spelled by
# the body: f32, or f64 in a float64 program (Body.ft, Body.typename).
F, I, B = "{F}", "index", "i1"

SUPPORTED = ("+ - * / // % ** (numbers), comparisons, & | ^ ~ << >>, abs, "
             "torch.where/maximum/minimum/clamp/abs/exp/exp2/log/log2/log1p/tanh/"
             "sqrt/rsqrt/sin/cos/floor/ceil/erf/sigmoid/pow/copysign/relu/square, "
             "logical_and/or/not/xor, .float() .int() .long() .bool() .to(dtype), and "
             "indexing a captured tensor by values")


def _dtype_name(t):
    name = str(t.dtype)
    return name[len("torch."):] if name.startswith("torch.") else name


def _is_tensor(x):
    return (not isinstance(x, (Value, _Partial)) and
            all(hasattr(x, a) for a in ("shape", "dtype", "device", "data_ptr")))


#===-- Captures ---------------------------------------------------------===#

class Capture:
    """A captured tensor: the program's argument %name of shape and element
    type elem; copy is the dtype it is converted to first (bool -> int32,
    float64 -> float32; in a float64 program, ft f64, float32 and float64
    -> float64) or None; scalar: a 0-d tensor, passed as shape (1,)."""

    def __init__(self, tensor, name, kind, ft="f32"):
        self.kind = kind
        self.in_score = False  # read by score_mod (may have a gradient)
        dtype = _dtype_name(tensor)
        if dtype not in CAPTURE_DTYPES:
            raise TypeError("attn: %s captures a tensor of dtype %s; a captured tensor must be "
                            "float32, float16, bfloat16, float64 (read as float32), int32, "
                            "int64 or bool (int8, int16, uint8: read as int32)" % (kind, dtype))
        self.tensor = tensor
        self.name = name
        self.elem, self.copy = CAPTURE_DTYPES[dtype]
        if ft == "f64" and dtype in ("float32", "float64"):
            self.elem, self.copy = "f64", "float64" if dtype == "float32" else None
        shape = tuple(int(d) for d in tensor.shape)
        self.scalar = not shape
        self.shape = shape or (1,)
        if 0 in self.shape:
            raise ValueError("attn: %s captures a tensor with an empty dimension, shape %s"
                             % (kind, shape))
        self.type = tensor_type(self.shape, self.elem)


def convert_capture(t, copy, scalar):
    """The kernel's input for captured tensor t (see Capture)."""
    if copy == "int32":
        t = t.int()
    elif copy == "float32":
        t = t.float()
    elif copy == "float64":
        t = t.double()
    if scalar:
        t = t.reshape(1)
    return t.contiguous()


class Captures:
    """The captured tensors of one program, in first-use order, each once."""

    def __init__(self, ft="f32"):
        self.list = []
        self._by_id = {}
        self.ft = ft

    def get(self, tensor, kind):
        c = self._by_id.get(id(tensor))
        if c is None:
            c = Capture(tensor, "%%cap%d" % len(self.list), kind, self.ft)
            self.list.append(c)
            self._by_id[id(tensor)] = c
        return c


#===-- Bodies -----------------------------------------------------------===#

class Body:
    """One region being traced: its op lines, with identical ops made once."""

    def __init__(self, kind, prefix, captures, ft="f32"):
        self.kind = kind
        self.prefix = prefix
        self.captures = captures
        self.ft = ft  # the float type: the program's compute type
        self.lines = []
        self._memo = {}

    def typename(self, ty):
        """The IR type of kind ty in this body."""
        return self.ft if ty == F else ty

    def op(self, text, ty, k=None):
        """The value of op text (without its result; F's type spelled {F}),
        of kind ty (k: the value of a constant)."""
        text = text.replace(F, self.ft)
        v = self._memo.get(text)
        if v is None:
            v = Value(self, "%%%s%d" % (self.prefix, len(self.lines)), ty, k)
            self.lines.append("    %s = %s" % (v.name, text))
            self._memo[text] = v
        return v

    def const(self, x, ty):
        if ty == B:
            return self.op("arith.constant %s" % ("true" if x else "false"), B, bool(x))
        if ty == I:
            x = int(x)
            if not -2 ** 63 <= x < 2 ** 63:
                raise ValueError("attn: %s uses the integer %d, outside int64" % (self.kind, x))
            return self.op("arith.constant %d : index" % x, I, x)
        return self.op("arith.constant %s : {F}" % _float_literal(float(x), self.ft), F,
                       float(x))

    def fail(self, what):
        raise TypeError("attn: %s: %s" % (self.kind, what))


# The bits of nan, -inf and +inf of each float type.
_SPECIAL = {"f32": ("0x7FC00000", "0xFF800000", "0x7F800000"),
            "f64": ("0x7FF8000000000000", "0xFFF0000000000000", "0x7FF0000000000000")}


def _float_literal(x, ft):
    """x as an ft (f32 or f64) literal: repr's digits, or the bits of
    inf/nan (a float32 past its range overflows to inf, as torch's
    conversion does)."""
    if math.isfinite(x) and (ft == "f64" or abs(x) <= FLOAT32_MAX):
        r = repr(x)
        if "." not in r:
            r = r.replace("e", ".0e") if "e" in r else r + ".0"
        return r
    nan, ninf, inf = _SPECIAL[ft]
    return nan if math.isnan(x) else ninf if x < 0 else inf


def _kind_of_number(x):
    if isinstance(x, bool):
        return B
    if isinstance(x, numbers.Integral):
        return I
    if isinstance(x, numbers.Real):
        return F
    return None


def _rank(ty):
    return {B: 0, I: 1, F: 2}[ty]


def _convert(v, ty):
    """Value v as kind ty (torch's conversions: bool -> 0/1, float -> int
    truncates, nonzero -> True)."""
    if v.ty == ty:
        return v
    b = v.body
    if v.ty == B:
        if ty == I:
            return b.op("arith.index_castui %s : i1 to index" % v.name, I)
        return b.op("arith.uitofp %s : i1 to {F}" % v.name, F)
    if v.ty == I:
        if ty == F:
            w = b.op("arith.index_cast %s : index to i64" % v.name, "i64")
            return b.op("arith.sitofp %s : i64 to {F}" % w.name, F)
        return b.op("arith.cmpi ne, %s, %s : index" % (v.name, b.const(0, I).name), B)
    if ty == I:
        w = b.op("arith.fptosi %s : {F} to i64" % v.name, "i64")
        return b.op("arith.index_cast %s : i64 to index" % w.name, I)
    return b.op("arith.cmpf une, %s, %s : {F}" % (v.name, b.const(0.0, F).name), B)


def _operand(body, x, what):
    """x as a Value of body: a proxy, a Python number (a constant), or a 0-d
    captured tensor (read at [0])."""
    if isinstance(x, Value):
        if x.body is not body:
            body.fail("uses a value traced in another function (%s) in %s" % (x.body.kind, what))
        return x
    ty = _kind_of_number(x)
    if ty is not None:
        return body.const(x, ty)
    if _is_tensor(x):
        if len(x.shape) == 0:
            return _extract(body, x, ())
        body.fail("uses a captured tensor of shape %s whole, in %s; read one element by "
                  "indexing it with the arguments (as bias[q_idx - kv_idx])"
                  % (tuple(int(d) for d in x.shape), what))
    if isinstance(x, _Partial):
        body.fail("indexes a captured tensor of shape %s by %d index(es), then uses it in %s; "
                  "index every dimension" % (x.capture_shape(), len(x.indices), what))
    body.fail("cannot use %s in %s (expected a traced value, a number or a captured tensor "
              "indexed by values)" % (_describe(x), what))


def _body_of(args, what):
    for a in args:
        if isinstance(a, (Value, _Partial)):
            return a.body
        if isinstance(a, (tuple, list)):
            for x in a:
                if isinstance(x, (Value, _Partial)):
                    return x.body
    raise TypeError("attn: %s called without a traced value" % what)


def _common(body, xs, what):
    """xs as values of their common kind (torch's promotion; a Python number
    is a constant of that kind, made as such), and the kind."""
    vs = [x if _kind_of_number(x) is not None else _operand(body, x, what) for x in xs]
    kinds = [v.ty if isinstance(v, Value) else _kind_of_number(v) for v in vs]
    if all(not isinstance(v, Value) for v in vs):
        body.fail("%s of Python numbers only" % what)
    ty = max(kinds, key=_rank)
    return [_convert(v, ty) if isinstance(v, Value) else body.const(v, ty) for v in vs], ty


_ARITH = {"add": ("addf", "addi"), "sub": ("subf", "subi"), "mul": ("mulf", "muli"),
          "maximum": ("maximumf", "maxsi"), "minimum": ("minimumf", "minsi")}


def _binary(body, name, x, y):
    """x <name> y for name in add, sub, mul, maximum, minimum, truediv,
    floordiv, mod, pow, and, or, xor, lshift, rshift."""
    if name == "truediv":  # always float: a number is a float constant
        x, y = (float(z) if _kind_of_number(z) is not None else z for z in (x, y))
        (a, c), _ = _common(body, (x, y), "/")
        a, c = _convert(a, F), _convert(c, F)
        return body.op("arith.divf %s, %s : {F}" % (a.name, c.name), F)
    if name == "pow":
        return _pow(body, x, y)
    if name in ("and", "or", "xor", "lshift", "rshift"):
        sym = {"and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>"}[name]
        (a, c), ty = _common(body, (x, y), sym)
        if ty == F:
            body.fail("%s of float values (torch allows it on bool and integer values only)"
                      % sym)
        if name in ("lshift", "rshift"):
            a, c, ty = _convert(a, I), _convert(c, I), I
        op = {"and": "andi", "or": "ori", "xor": "xori", "lshift": "shli",
              "rshift": "shrsi"}[name]
        return body.op("arith.%s %s, %s : %s" % (op, a.name, c.name, ty), ty)
    sym = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%",
           "maximum": "torch.maximum", "minimum": "torch.minimum"}[name]
    (a, c), ty = _common(body, (x, y), sym)
    if ty == B:
        if name in ("maximum", "minimum"):
            op = "ori" if name == "maximum" else "andi"
            return body.op("arith.%s %s, %s : i1" % (op, a.name, c.name), B)
        a, c, ty = _convert(a, I), _convert(c, I), I
    if name == "floordiv":
        if ty == F:
            d = body.op("arith.divf %s, %s : {F}" % (a.name, c.name), F)
            return body.op("math.floor %s : {F}" % d.name, F)
        return _floor_divmod(body, a, c, "div")
    if name == "mod":
        if ty == F:
            d = body.op("arith.divf %s, %s : {F}" % (a.name, c.name), F)
            fl = body.op("math.floor %s : {F}" % d.name, F)
            m = body.op("arith.mulf %s, %s : {F}" % (fl.name, c.name), F)
            return body.op("arith.subf %s, %s : {F}" % (a.name, m.name), F)
        return _floor_divmod(body, a, c, "mod")
    op = _ARITH[name][0 if ty == F else 1]
    return body.op("arith.%s %s, %s : %s" % (op, a.name, c.name, ty), ty)


def _floor_divmod(body, a, c, want):
    """a // c (want "div") or a % c ("mod") of index values, rounded toward
    -inf (torch's, Python's): the truncated quotient less 1 (the remainder
    plus c) where the remainder is nonzero and of the other sign than c,
    that is negative when c is a positive constant."""
    zero = body.const(0, I)
    r = body.op("arith.remsi %s, %s : index" % (a.name, c.name), I)
    if c.k is not None and c.k > 0:
        fix = body.op("arith.cmpi slt, %s, %s : index" % (r.name, zero.name), B)
    else:
        nz = body.op("arith.cmpi ne, %s, %s : index" % (r.name, zero.name), B)
        x = body.op("arith.xori %s, %s : index" % (r.name, c.name), I)
        signs = body.op("arith.cmpi slt, %s, %s : index" % (x.name, zero.name), B)
        fix = body.op("arith.andi %s, %s : i1" % (nz.name, signs.name), B)
    if want == "mod":
        r1 = body.op("arith.addi %s, %s : index" % (r.name, c.name), I)
        return body.op("arith.select %s, %s, %s : index" % (fix.name, r1.name, r.name), I)
    q = body.op("arith.divsi %s, %s : index" % (a.name, c.name), I)
    q1 = body.op("arith.subi %s, %s : index" % (q.name, body.const(1, I).name), I)
    return body.op("arith.select %s, %s, %s : index" % (fix.name, q1.name, q.name), I)


def _pow(body, x, y):
    """x ** y: a product for a small integer exponent (as torch computes
    x ** 2), math.powf otherwise."""
    if not isinstance(y, bool) and isinstance(y, numbers.Integral) and 0 <= y <= 8:
        a = _operand(body, x, "**")
        if a.ty == B:
            a = _convert(a, I)
        if y == 0:
            return body.const(1, a.ty)
        r = a
        for _ in range(int(y) - 1):
            r = body.op("arith.%s %s, %s : %s" % ("mulf" if a.ty == F else "muli", r.name,
                                                  a.name, a.ty), a.ty)
        return r
    (a, c), ty = _common(body, (x, y), "**")
    if ty != F:
        body.fail("** of integer values with a traced or negative exponent; write it with "
                  "float values (x.float() ** n)")
    return body.op("math.powf %s, %s : {F}" % (a.name, c.name), F)


_CMP = {"lt": ("olt", "slt", "<"), "le": ("ole", "sle", "<="), "gt": ("ogt", "sgt", ">"),
        "ge": ("oge", "sge", ">="), "eq": ("oeq", "eq", "=="), "ne": ("une", "ne", "!=")}


def _compare(body, name, x, y):
    fp, ip, sym = _CMP[name]
    (a, c), ty = _common(body, (x, y), sym)
    if ty == B:  # false < true: the unsigned predicates on i1
        p = ip if ip in ("eq", "ne") else "u" + ip[1:]
        return body.op("arith.cmpi %s, %s, %s : i1" % (p, a.name, c.name), B)
    if ty == F:
        return body.op("arith.cmpf %s, %s, %s : {F}" % (fp, a.name, c.name), B)
    return body.op("arith.cmpi %s, %s, %s : index" % (ip, a.name, c.name), B)


_MATH = ("exp", "exp2", "log", "log2", "log1p", "tanh", "sqrt", "rsqrt", "sin", "cos", "erf")


def _unary(body, name, x):
    a = _operand(body, x, name)
    if name in _MATH:
        a = _convert(a, F)
        return body.op("math.%s %s : {F}" % (name, a.name), F)
    if name in ("floor", "ceil"):
        if a.ty != F:
            return a  # torch.floor of an integer tensor is itself
        return body.op("math.%s %s : {F}" % (name, a.name), F)
    if name == "neg":
        if a.ty == F:
            return body.op("arith.negf %s : {F}" % a.name, F)
        if a.ty == B:
            body.fail("- of a bool value (torch refuses it too; use ~)")
        return body.op("arith.subi %s, %s : index" % (body.const(0, I).name, a.name), I)
    if name == "abs":
        if a.ty == F:
            return body.op("math.absf %s : {F}" % a.name, F)
        if a.ty == B:
            return a
        return body.op("math.absi %s : index" % a.name, I)
    if name == "invert":
        if a.ty == F:
            body.fail("~ of a float value (torch allows it on bool and integer values only)")
        return body.op("arith.xori %s, %s : %s" % (a.name, body.const(-1 if a.ty == I else True,
                                                                      a.ty).name, a.ty), a.ty)
    if name == "sigmoid":
        a = _convert(a, F)
        e = body.op("math.exp %s : {F}" % body.op("arith.negf %s : {F}" % a.name, F).name, F)
        d = body.op("arith.addf %s, %s : {F}" % (body.const(1.0, F).name, e.name), F)
        return body.op("arith.divf %s, %s : {F}" % (body.const(1.0, F).name, d.name), F)
    if name == "relu":
        return _binary(body, "maximum", a, 0)
    if name == "square":
        return _binary(body, "mul", a, a)
    if name == "logical_not":
        a = _convert(a, B)
        return body.op("arith.xori %s, %s : i1" % (a.name, body.const(True, B).name), B)
    raise AssertionError(name)


def _where(body, cond, x, y):
    c = _convert(_operand(body, cond, "torch.where"), B)
    (a, d), ty = _common(body, (x, y), "torch.where")
    return body.op("arith.select %s, %s, %s : %s" % (c.name, a.name, d.name, ty), ty)


def _to(body, x, dtype, what):
    a = _operand(body, x, what)
    name = str(dtype)
    name = name[len("torch."):] if name.startswith("torch.") else name
    ty = {"float32": F, "float": F, "float64": F, "double": F, "int32": I, "int": I,
          "int64": I, "long": I, "bool": B}.get(name)
    if ty is None:
        body.fail("%s to %s (the body computes in float32, index integers and bool; it "
                  "converts to torch.float32, float64, int32, int64 and bool)" % (what, name))
    return _convert(a, ty)


def _extract(body, tensor, indices):
    """tensor[indices...] of a captured tensor: one element, as a value."""
    c = body.captures.get(tensor, body.kind)
    names = [ix.name for ix in indices] if not c.scalar else [body.const(0, I).name]
    x = body.op("tensor.extract %s[%s] : %s" % (c.name, ", ".join(names), c.type),
                F if c.elem == body.ft else c.elem)
    if c.elem in ("f16", "bf16"):
        return body.op("arith.extf %s : %s to {F}" % (x.name, c.elem), F)
    if c.copy == "int32" and _dtype_name(tensor) == "bool":
        return body.op("arith.cmpi ne, %s, %s : i32" % (
            x.name, body.op("arith.constant 0 : i32", "i32").name), B)
    if c.elem in ("i32", "i64"):
        return body.op("arith.index_cast %s : %s to index" % (x.name, c.elem), I)
    return x


def _index(body, tensor, shape, done, index):
    """Indexes captured tensor (of shape) already indexed by done (values)
    by index: a value, an int or a tuple of them. Returns the element, or a
    _Partial when dimensions are left."""
    items = index if isinstance(index, tuple) else (index,)
    out = list(done)
    for ix in items:
        d = len(out)
        if d >= len(shape):
            body.fail("indexes a captured tensor of shape %s by %d indices"
                      % (shape, len(done) + len(items)))
        if isinstance(ix, Value):
            if ix.body is not body:
                body.fail("indexes a captured tensor by a value traced in another function")
            if ix.ty != I:
                body.fail("indexes a captured tensor by a %s value (index it by integer "
                          "values: the arguments b, h, q_idx, kv_idx and integer arithmetic "
                          "on them)" % ("bool" if ix.ty == B else "float"))
            out.append(ix)
        elif not isinstance(ix, bool) and isinstance(ix, numbers.Integral):
            n = int(ix)
            if not -shape[d] <= n < shape[d]:
                raise IndexError("attn: %s: index %d is out of dimension %d of a captured "
                                 "tensor of shape %s" % (body.kind, n, d, shape))
            out.append(body.const(n + shape[d] if n < 0 else n, I))
        else:
            body.fail("indexes a captured tensor by %s (attn reads one element at a time: "
                      "index each dimension by an integer value or number, no slices, "
                      "tensors or masks)" % _describe(ix))
    if len(out) < len(shape):
        return _Partial(body, tensor, shape, out)
    return _extract(body, tensor, out)


class _Partial:
    """A captured tensor indexed in its first dimensions only (bias[h]),
    waiting for the rest (bias[h][q_idx])."""

    def __init__(self, body, tensor, shape, indices):
        self.body, self.tensor, self.shape, self.indices = body, tensor, shape, indices

    def capture_shape(self):
        return self.shape

    def __getitem__(self, index):
        return _index(self.body, self.tensor, self.shape, self.indices, index)

    @classmethod
    def __torch_function__(cls, func, types_, args=(), kwargs=None):
        return Value.__torch_function__(func, types_, args, kwargs)

    def __bool__(self):
        self.body.fail("uses a traced value in Python control flow (if, while, and, or, not, "
                       "bool()), which a trace cannot follow; use torch.where, &, |, ~")


#===-- torch functions --------------------------------------------------===#

def _h_binary(name):
    return lambda body, args, kw: _binary(body, name, args[0], args[1])


def _h_unary(name):
    return lambda body, args, kw: _unary(body, name, args[0])


def _h_compare(name):
    return lambda body, args, kw: _compare(body, name, args[0], args[1])


def _h_div(body, args, kw):
    mode = kw.get("rounding_mode")
    if mode is None:
        return _binary(body, "truediv", args[0], args[1])
    if mode == "floor":
        return _binary(body, "floordiv", args[0], args[1])
    if mode != "trunc":
        body.fail("torch.div with rounding_mode=%r (attn compiles None, 'floor' and 'trunc')"
                  % (mode,))
    (a, c), ty = _common(body, args[:2], "torch.div")
    if ty != F:
        a, c = _convert(a, I), _convert(c, I)
        return body.op("arith.divsi %s, %s : index" % (a.name, c.name), I)
    d = body.op("arith.divf %s, %s : {F}" % (a.name, c.name), F)
    neg = body.op("arith.cmpf olt, %s, %s : {F}" % (d.name, body.const(0.0, F).name), B)
    up = body.op("math.ceil %s : {F}" % d.name, F)
    down = body.op("math.floor %s : {F}" % d.name, F)
    return body.op("arith.select %s, %s, %s : {F}" % (neg.name, up.name, down.name), F)


def _h_clamp(body, args, kw):
    x = args[0]
    lo = args[1] if len(args) > 1 else kw.get("min")
    hi = args[2] if len(args) > 2 else kw.get("max")
    if lo is not None:
        x = _binary(body, "maximum", x, lo)
    if hi is not None:
        x = _binary(body, "minimum", x, hi)
    return _operand(body, x, "torch.clamp")


def _h_logical(name):
    def h(body, args, kw):
        a = _convert(_operand(body, args[0], "torch.logical_" + name), B)
        c = _convert(_operand(body, args[1], "torch.logical_" + name), B)
        return _binary(body, name, a, c)
    return h


def _h_copysign(body, args, kw):
    (a, c), _ = _common(body, args[:2], "torch.copysign")
    a, c = _convert(a, F), _convert(c, F)
    return body.op("math.copysign %s, %s : {F}" % (a.name, c.name), F)


def _h_getitem(body, args, kw):
    t, index = args[0], args[1]
    if isinstance(t, Value):
        body.fail("indexes a traced value (a score or index is one number, not a tensor)")
    if isinstance(t, _Partial):
        return t[index]
    if not _is_tensor(t):
        body.fail("indexes %s" % _describe(t))
    return _index(body, t, tuple(int(d) for d in t.shape), [], index)


def _h_where(body, args, kw):
    if len(args) != 3:
        body.fail("torch.where with %d arguments (attn compiles torch.where(condition, x, y))"
                  % len(args))
    return _where(body, *args)


def _h_to(body, args, kw):
    rest = list(args[1:]) + [kw[k] for k in ("dtype",) if k in kw]
    dtypes = [a for a in rest if type(a).__name__ == "dtype"]
    if len(dtypes) != 1:
        body.fail("Tensor.to without a dtype (attn compiles x.to(torch.float32) and the like)")
    return _to(body, args[0], dtypes[0], "Tensor.to")


def _h_as(dtype):
    return lambda body, args, kw: _to(body, args[0], dtype, "Tensor." + dtype)


def _h_method_where(body, args, kw):  # x.where(condition, y)
    return _where(body, args[1], args[0], args[2])


def _h_pow(body, args, kw):
    return _pow(body, args[0], args[1])


# name -> handler(body, args, kwargs), for torch.<name> and Tensor.<name>.
_FUNCTIONS = {
    "add": _h_binary("add"), "sub": _h_binary("sub"), "subtract": _h_binary("sub"),
    "mul": _h_binary("mul"), "multiply": _h_binary("mul"), "div": _h_div,
    "divide": _h_div, "true_divide": _h_binary("truediv"),
    "floor_divide": _h_binary("floordiv"), "remainder": _h_binary("mod"),
    "maximum": _h_binary("maximum"), "minimum": _h_binary("minimum"),
    "bitwise_and": _h_binary("and"), "bitwise_or": _h_binary("or"),
    "bitwise_xor": _h_binary("xor"), "bitwise_not": _h_unary("invert"),
    "bitwise_left_shift": _h_binary("lshift"), "bitwise_right_shift": _h_binary("rshift"),
    "logical_and": _h_logical("and"), "logical_or": _h_logical("or"),
    "logical_xor": _h_logical("xor"), "logical_not": _h_unary("logical_not"),
    "pow": _h_pow, "neg": _h_unary("neg"), "negative": _h_unary("neg"),
    "abs": _h_unary("abs"), "absolute": _h_unary("abs"), "sigmoid": _h_unary("sigmoid"),
    "relu": _h_unary("relu"), "square": _h_unary("square"), "floor": _h_unary("floor"),
    "ceil": _h_unary("ceil"), "copysign": _h_copysign, "clamp": _h_clamp, "clip": _h_clamp,
    "where": _h_where, "lt": _h_compare("lt"), "less": _h_compare("lt"),
    "le": _h_compare("le"), "less_equal": _h_compare("le"), "gt": _h_compare("gt"),
    "greater": _h_compare("gt"), "ge": _h_compare("ge"), "greater_equal": _h_compare("ge"),
    "eq": _h_compare("eq"), "ne": _h_compare("ne"), "not_equal": _h_compare("ne"),
}
for _n in _MATH:
    _FUNCTIONS[_n] = _h_unary(_n)

# Tensor-only names (methods and operator slots) that differ from torch.<name>.
_METHODS = {
    "__getitem__": _h_getitem, "where": _h_method_where, "to": _h_to,
    "float": _h_as("float32"), "double": _h_as("float64"), "int": _h_as("int32"),
    "long": _h_as("int64"), "bool": _h_as("bool"),
    "__add__": _h_binary("add"), "__radd__": lambda b, a, k: _binary(b, "add", a[1], a[0]),
    "__sub__": _h_binary("sub"), "__rsub__": lambda b, a, k: _binary(b, "sub", a[1], a[0]),
    "__mul__": _h_binary("mul"), "__rmul__": lambda b, a, k: _binary(b, "mul", a[1], a[0]),
    "__truediv__": _h_binary("truediv"),
    "__rtruediv__": lambda b, a, k: _binary(b, "truediv", a[1], a[0]),
    "__floordiv__": _h_binary("floordiv"),
    "__rfloordiv__": lambda b, a, k: _binary(b, "floordiv", a[1], a[0]),
    "__mod__": _h_binary("mod"), "__rmod__": lambda b, a, k: _binary(b, "mod", a[1], a[0]),
    "__pow__": _h_pow, "__rpow__": lambda b, a, k: _pow(b, a[1], a[0]),
    "__and__": _h_binary("and"), "__or__": _h_binary("or"), "__xor__": _h_binary("xor"),
    "__rand__": _h_binary("and"), "__ror__": _h_binary("or"), "__rxor__": _h_binary("xor"),
    "__lshift__": _h_binary("lshift"), "__rshift__": _h_binary("rshift"),
    "__invert__": _h_unary("invert"), "__neg__": _h_unary("neg"), "__abs__": _h_unary("abs"),
    "__lt__": _h_compare("lt"), "__le__": _h_compare("le"), "__gt__": _h_compare("gt"),
    "__ge__": _h_compare("ge"), "__eq__": _h_compare("eq"), "__ne__": _h_compare("ne"),
}

# The keyword arguments a handler reads.
_KEYWORDS = {_h_div: ("rounding_mode",), _h_clamp: ("min", "max"), _h_to: ("dtype",)}

_dispatch = None


def _torch_dispatch():
    """torch function or Tensor method object -> handler, made on first use."""
    global _dispatch
    if _dispatch is None:
        import torch
        table = {}
        for name, h in _FUNCTIONS.items():
            for owner in (torch, torch.Tensor):
                f = getattr(owner, name, None)
                if f is not None:
                    table[f] = h
        for name, h in _METHODS.items():
            f = getattr(torch.Tensor, name, None)
            if f is not None:
                table[f] = h
        special = getattr(torch, "special", None)
        for name, h in (("expit", _h_unary("sigmoid")), ("exp2", _h_unary("exp2")),
                        ("log1p", _h_unary("log1p")), ("erf", _h_unary("erf"))):
            f = getattr(special, name, None)
            if f is not None:
                table[f] = h
        nnf = getattr(getattr(torch, "nn", None), "functional", None)
        for name, h in (("relu", _h_unary("relu")), ("sigmoid", _h_unary("sigmoid")),
                        ("tanh", _h_unary("tanh"))):
            f = getattr(nnf, name, None)
            if f is not None:
                table[f] = h
        _dispatch = table
    return _dispatch


def _func_name(func):
    """func as the user wrote it: torch.softmax, Tensor.softmax, torch.nn.functional.gelu."""
    name = getattr(func, "__name__", None) or repr(func)
    try:
        import torch
        if getattr(torch.Tensor, name, None) is func:
            return "Tensor." + name
        if getattr(torch, name, None) is func:
            return "torch." + name
    except ImportError:
        pass
    mod = getattr(func, "__module__", None)
    if mod == "torch._C._nn":
        return "torch.nn.functional." + name
    if mod == "torch._C._special" and name.startswith("special_"):
        return "torch.special." + name[len("special_"):]
    return "%s.%s" % (mod, name) if mod else name


def _call(body, name, handler, args, kw):
    """handler(body, args, kw); too few arguments, or keyword arguments it
    does not read (torch.add's alpha), are a TypeError naming name."""
    extra = sorted(set(kw) - set(_KEYWORDS.get(handler, ())))
    if extra:
        body.fail("%s with the keyword argument(s) %s (attn compiles it without them)"
                  % (name, ", ".join(extra)))
    try:
        return handler(body, args, kw)
    except IndexError as e:
        if str(e).startswith("attn:"):
            raise
        body.fail("%s with %d argument(s)" % (name, len(args)))


#===-- Values -----------------------------------------------------------===#

class Value:
    """A traced value: the SSA name of a score, an index or a bool in a body."""

    __slots__ = ("body", "name", "ty", "k")

    def __init__(self, body, name, ty, k=None):
        self.body, self.name, self.ty, self.k = body, name, ty, k

    def __repr__(self):
        return "<attn traced %s %s>" % ({F: "float", I: "integer", B: "bool"}.get(self.ty, "?"),
                                        self.name)

    __hash__ = object.__hash__

    @classmethod
    def __torch_function__(cls, func, types_, args=(), kwargs=None):
        body = _body_of(args, getattr(func, "__name__", "?"))
        handler = _torch_dispatch().get(func)
        if handler is None:
            body.fail("%s is not an operation attn compiles (it compiles %s)"
                      % (_func_name(func), SUPPORTED))
        return _call(body, _func_name(func), handler, args, kwargs or {})

    def _control(self, what):
        self.body.fail("uses a traced value in Python control flow or %s (if, while, and, or, "
                       "not, bool(), int(), float(), min(), max(), indexing a list), which a "
                       "trace cannot follow; use torch.where, &, |, ~, torch.minimum, "
                       "torch.maximum" % what)

    def __bool__(self):
        self._control("bool()")

    def __index__(self):
        self._control("an index")

    def __int__(self):
        self._control("int()")

    def __float__(self):
        self._control("float()")

    def __iter__(self):
        self._control("iteration")

    def __len__(self):
        self._control("len()")

    def __getitem__(self, index):
        self.body.fail("indexes a traced value (a score or index is one number, not a tensor)")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        h = _METHODS.get(name) or _FUNCTIONS.get(name)
        if h is not None:
            return lambda *args, **kw: _call(self.body, "Tensor." + name, h, (self,) + args, kw)
        body = object.__getattribute__(self, "body")
        try:
            import torch
            known = hasattr(torch.Tensor, name)
        except ImportError:
            known = False
        if known:
            body.fail("Tensor.%s is not an operation attn compiles (it compiles %s)"
                      % (name, SUPPORTED))
        raise AttributeError("attn: a traced value of %s has no attribute %r" % (body.kind, name))

    def __add__(self, o): return _binary(self.body, "add", self, o)
    def __radd__(self, o): return _binary(self.body, "add", o, self)
    def __sub__(self, o): return _binary(self.body, "sub", self, o)
    def __rsub__(self, o): return _binary(self.body, "sub", o, self)
    def __mul__(self, o): return _binary(self.body, "mul", self, o)
    def __rmul__(self, o): return _binary(self.body, "mul", o, self)
    def __truediv__(self, o): return _binary(self.body, "truediv", self, o)
    def __rtruediv__(self, o): return _binary(self.body, "truediv", o, self)
    def __floordiv__(self, o): return _binary(self.body, "floordiv", self, o)
    def __rfloordiv__(self, o): return _binary(self.body, "floordiv", o, self)
    def __mod__(self, o): return _binary(self.body, "mod", self, o)
    def __rmod__(self, o): return _binary(self.body, "mod", o, self)
    def __pow__(self, o): return _pow(self.body, self, o)
    def __rpow__(self, o): return _pow(self.body, o, self)
    def __and__(self, o): return _binary(self.body, "and", self, o)
    def __rand__(self, o): return _binary(self.body, "and", o, self)
    def __or__(self, o): return _binary(self.body, "or", self, o)
    def __ror__(self, o): return _binary(self.body, "or", o, self)
    def __xor__(self, o): return _binary(self.body, "xor", self, o)
    def __rxor__(self, o): return _binary(self.body, "xor", o, self)
    def __lshift__(self, o): return _binary(self.body, "lshift", self, o)
    def __rshift__(self, o): return _binary(self.body, "rshift", self, o)
    def __neg__(self): return _unary(self.body, "neg", self)
    def __pos__(self): return self
    def __abs__(self): return _unary(self.body, "abs", self)
    def __invert__(self): return _unary(self.body, "invert", self)
    def __lt__(self, o): return _compare(self.body, "lt", self, o)
    def __le__(self, o): return _compare(self.body, "le", self, o)
    def __gt__(self, o): return _compare(self.body, "gt", self, o)
    def __ge__(self, o): return _compare(self.body, "ge", self, o)
    def __eq__(self, o): return _compare(self.body, "eq", self, o)
    def __ne__(self, o): return _compare(self.body, "ne", self, o)


#===-- Tracing ----------------------------------------------------------===#

def _check_arity(kind, fn, names):
    if not callable(fn):
        raise TypeError("attn: %s must be a function (%s), got %s"
                        % (kind, ", ".join(names), _describe(fn)))
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # a builtin or C callable: called as it is
    try:
        sig.bind(*names)
    except TypeError:
        raise TypeError("attn: %s must take %d positional arguments (%s), got a function %s"
                        % (kind, len(names), ", ".join(names), sig)) from None


def trace_score(fn, captures, ft="f32"):
    """The body lines of attn.score_mod traced from fn(score, b, h, q_idx,
    kv_idx), its block arguments and the yielded value."""
    _check_arity("score_mod", fn, SCORE_ARGS)
    body = Body("score_mod", "sm", captures, ft)
    args = [Value(body, "%sm_" + n, ty) for n, ty in zip(("score", "b", "h", "q", "kv"),
                                                            (F, I, I, I, I))]
    out = fn(*args)
    if isinstance(out, Value) and out.body is body:
        if out.ty == B:
            body.fail("returns a bool value; a score_mod returns the new score (a float; "
                      "a mask belongs in mask_mod, or torch.where(cond, score, "
                      "float('-inf')))")
        out = _convert(out, F)
    elif _kind_of_number(out) is not None and not isinstance(out, bool):
        out = body.const(float(out), F)
    elif _is_tensor(out) and len(out.shape) == 0:
        out = _operand(body, out, "the returned score")
    else:
        body.fail("must return the new score, a float value computed from its arguments, "
                  "got %s" % _describe(out))
    return body, args, out


def trace_mask(fn, captures, ft="f32"):
    """The body of attn.mask_mod traced from fn(b, h, q_idx, kv_idx)."""
    _check_arity("mask_mod", fn, MASK_ARGS)
    body = Body("mask_mod", "mm", captures, ft)
    args = [Value(body, "%mm_" + n, I) for n in ("b", "h", "q", "kv")]
    out = fn(*args)
    if isinstance(out, Value) and out.body is body:
        if out.ty != B:
            body.fail("must return a bool (a comparison, or & | ~ of comparisons: true where "
                      "the key is visible), got %s value"
                      % ("a float" if out.ty == F else "an integer"))
    elif isinstance(out, bool):
        out = body.const(out, B)
    else:
        body.fail("must return a bool value computed from its arguments (true where the key "
                  "is visible), got %s" % _describe(out))
    return body, args, out


def trace(score_mod, mask_mod, ft="f32"):
    """(score body or None, mask body or None, [Capture]) of the two
    functions, computing in ft: f32, or f64 for a float64 program (whose
    captured float32 and float64 tensors are read as float64)."""
    captures = Captures(ft)
    s = None if score_mod is None else trace_score(score_mod, captures, ft)
    for c in captures.list:
        c.in_score = True
    m = None if mask_mod is None else trace_mask(mask_mod, captures, ft)
    return s, m, captures.list
