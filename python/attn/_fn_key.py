"""The cached call's key of a score_mod or mask_mod (attention()'s fast
path): fn_key is the function's code and what that code reads of its
closure, defaults and globals (numbers by value, tensors by type, shape,
dtype and device, functions recursively, torch, math and numpy by
identity), so that a key is equal exactly when the traced program would be;
capture_sources records where each tensor the trace captured was found in
that environment, and fetch finds it there again on a cached call, so that
in-place updates and rebound names reach the kernel.
"""
import types

from ._trace import _is_tensor, convert_capture

class Unkeyable(Exception):
    """A function whose environment the fast path cannot key."""


_KEYED_MODULES = ("torch", "math", "numpy", "operator", "functools")
_names_of = {}


def _global_names(code):
    """The names code (and the code objects nested in it) may read as globals."""
    names = _names_of.get(code)
    if names is None:
        seen = []
        stack = [code]
        while stack:
            c = stack.pop()
            for n in c.co_names:
                if n not in seen:
                    seen.append(n)
            stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        if len(_names_of) >= 4096:
            _names_of.clear()  # code objects made at run time (exec) by the thousand
        names = _names_of[code] = tuple(seen)
    return names


_PLAIN = (int, float, str, bool, type(None), complex)
_MISSING = object()
# type -> how fn_key keys its values (decided once per type: the per-call
# cost of a key is a dict lookup per value).
_kinds = {t: "plain" for t in _PLAIN}


def _kind_of_type(t, x):
    if t is types.FunctionType:
        return "function"
    if t is types.ModuleType:
        return "module"
    if t.__name__ in ("dtype", "device"):
        return "identity"
    if t in (tuple, list):
        return "sequence"
    if _is_tensor(x):
        return "tensor"
    if t.__name__ in ("builtin_function_or_method", "method_descriptor",
                      "wrapper_descriptor", "classmethod_descriptor") or isinstance(x, type):
        return "identity"  # C functions, torch's method descriptors, classes
    return None


def _value_key(x, depth):
    t = type(x)
    kind = _kinds.get(t)
    if kind is None:
        kind = _kind_of_type(t, x)
        if kind is None:
            raise Unkeyable
        _kinds[t] = kind
    if kind == "plain":
        return t, x
    if kind == "tensor":
        d = x.device
        return t, tuple(x.shape), x.dtype, d.type, d.index
    if kind == "function":
        if (x.__module__ or "").split(".")[0] in _KEYED_MODULES:
            return x  # torch's, math's or numpy's own Python functions
        return fn_key(x, depth + 1)
    if kind == "identity":
        return x
    if kind == "module":
        if x.__name__.split(".")[0] not in _KEYED_MODULES:
            raise Unkeyable
        return x
    if len(x) > 64:
        raise Unkeyable
    return t, tuple(_value_key(y, depth) for y in x)


def fn_key(fn, depth=0):
    """The key of a score_mod or mask_mod: its code, and the keys of what it
    can read (closure cells' contents, defaults, the globals it names):
    numbers and strings by value, tensors by type, shape, dtype and device
    (their data is read at each call), functions recursively. Raises
    Unkeyable for anything else (an object, a mutable container of more
    than 64 items, a module not torch's, math or numpy)."""
    if type(fn) is not types.FunctionType or depth > 4:
        raise Unkeyable
    code = fn.__code__
    parts = [code]
    if fn.__closure__:
        try:
            parts.extend(_value_key(c.cell_contents, depth) for c in fn.__closure__)
        except ValueError:  # an empty cell
            raise Unkeyable from None
    if fn.__defaults__:
        parts.append(_value_key(fn.__defaults__, depth))
    if fn.__kwdefaults__:
        parts.extend((n, _value_key(x, depth)) for n, x in sorted(fn.__kwdefaults__.items()))
    g = fn.__globals__
    for n in _global_names(code):
        x = g.get(n, _MISSING)
        parts.append(_MISSING if x is _MISSING else _value_key(x, depth))
    return tuple(parts)


def _leaves(fn, path, depth, out):
    """(path, tensor) for every tensor fn_key walks through."""
    if depth > 4:
        return

    def visit(x, p):
        if type(x) is types.FunctionType:
            _leaves(x, p, depth + 1, out)
        elif type(x) in (tuple, list):
            for i, y in enumerate(x):
                visit(y, p + (("item", i),))
        elif _is_tensor(x):
            out.append((p, x))
    for i, c in enumerate(fn.__closure__ or ()):
        visit(c.cell_contents, path + (("cell", i),))
    for i, x in enumerate(fn.__defaults__ or ()):
        visit(x, path + (("default", i),))
    for n, x in sorted((fn.__kwdefaults__ or {}).items()):
        visit(x, path + (("kwdefault", n),))
    g = fn.__globals__
    for n in _global_names(fn.__code__):
        if n in g:
            visit(g[n], path + (("global", n),))


def capture_sources(fns, captures):
    """Where each captured tensor is found again on a cached call: a list of
    (index of its function in fns, path, copy, scalar), or None when a
    tensor is not in the walked environment of exactly one place (made by
    the function itself, an attribute of an object, or reachable twice):
    such calls take the full path."""
    sources = []
    leaves = []
    for i, fn in enumerate(fns):
        if fn is None:
            continue
        found = []
        try:
            _leaves(fn, (), 0, found)
        except (ValueError, AttributeError):
            return None
        leaves.extend((i, p, t) for p, t in found)
    for c in captures:
        at = [(i, p) for i, p, t in leaves if t is c.tensor]
        if len(at) != 1:
            return None
        sources.append((at[0][0], at[0][1], c.copy, c.scalar))
    return sources


def follow(fn, path):
    """The object at path in fn's environment (see capture_sources)."""
    x = fn
    for kind, at in path:
        if kind == "cell":
            x = x.__closure__[at].cell_contents
        elif kind == "default":
            x = x.__defaults__[at]
        elif kind == "kwdefault":
            x = x.__kwdefaults__[at]
        elif kind == "global":
            x = x.__globals__[at]
        else:
            x = x[at]
    return x


def fetch(fns, sources):
    """The kernel's capture inputs on a cached call."""
    out = []
    for i, path, copy, scalar in sources:
        t = follow(fns[i], path)
        out.append(t.contiguous() if copy is None and not scalar else
                   convert_capture(t, copy, scalar))
    return out
