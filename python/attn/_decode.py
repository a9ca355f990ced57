"""attn.decode's argument checks and the IR text it compiles: one
attn.fused_decode (docs/dialects.md) over a contiguous or paged KV cache.

q [B, H, Nq, D] holds the new tokens' queries, the last Nq of each
sequence; k_cache and v_cache hold every key and value, the new tokens'
included, rotated already when RoPE applies: [B, Hk, M, D] (contiguous) or
[P, Hk, page_size, D] pages addressed through block_table [B, max_pages]
(FlashInfer's HND layout). cache_seqlens [B] says how many keys each
sequence has. With k_new and v_new [B, Hk, N, D] the program first writes
them into the caches (attn.cache_append) as rows cache_seqlens[b] - N + i,
k_new rotated there when RoPE applies, so the lengths count them too.
"""
import math
import numbers

from . import _program
from ._args import _dtype, _shape, _tensor

_describe_value = _program._describe

INT32_MAX = 2 ** 31 - 1


def _int32_tensor(name, t, rank):
    _tensor(name, t)
    if _dtype(t) != "int32":
        raise TypeError("attn: %s must be an int32 tensor, got %s" % (name, _dtype(t)))
    if len(t.shape) != rank:
        raise ValueError("attn: %s must be %d-D, got shape %s" % (name, rank, _shape(t)))


def check(q, k_cache, v_cache, cache_seqlens, block_table):
    """Checks shapes, dtypes and devices; returns (paged, page_size,
    max_keys). Raises TypeError or ValueError naming the argument."""
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        _tensor(name, t)
        if len(t.shape) != 4:
            raise ValueError("attn: %s must be 4-D, got shape %s" % (name, _shape(t)))
        if 0 in _shape(t):
            raise ValueError("attn: %s has an empty dimension, shape %s" % (name, _shape(t)))
    if _dtype(q) not in ("float32", "float16", "bfloat16"):
        raise TypeError("attn: q must be float32, float16 or bfloat16, got %s" % _dtype(q))
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        if _dtype(t) != _dtype(q):
            raise TypeError("attn: q and %s must share a dtype, got %s and %s"
                            % (name, _dtype(q), _dtype(t)))
    b, h, nq, d = _shape(q)
    kb, hk, rows, kd = _shape(k_cache)
    if _shape(v_cache)[:3] != (kb, hk, rows):
        raise ValueError("attn: k_cache and v_cache must have the same %s, heads and rows, got "
                         "%s and %s" % ("pages" if block_table is not None else "batch",
                                        _shape(k_cache), _shape(v_cache)))
    if kd != d:
        raise ValueError("attn: q has head dim %d but k_cache %d" % (d, kd))
    if h % hk:
        raise ValueError("attn: q's %d heads are not a multiple of the cache's %d heads" % (h, hk))
    _int32_tensor("cache_seqlens", cache_seqlens, 1)
    if _shape(cache_seqlens) != (b,):
        raise ValueError("attn: cache_seqlens must have one length per sequence, shape (%d,), "
                         "got %s" % (b, _shape(cache_seqlens)))
    paged = block_table is not None
    if paged:
        _int32_tensor("block_table", block_table, 2)
        if _shape(block_table)[0] != b or _shape(block_table)[1] < 1:
            raise ValueError("attn: block_table must be [batch=%d, max_pages >= 1], got shape %s"
                             % (b, _shape(block_table)))
        if rows < 16 or rows > 256 or rows & (rows - 1):
            raise ValueError("attn: a paged cache's pages (k_cache's dim 2) must hold a power "
                             "of two from 16 to 256 rows, got %d" % rows)
        max_keys = _shape(block_table)[1] * rows
    else:
        if kb != b:
            raise ValueError("attn: q has batch %d but the contiguous k_cache %d (a paged cache "
                             "needs block_table)" % (b, kb))
        max_keys = rows
    if max_keys > INT32_MAX:
        raise ValueError("attn: the cache holds %d keys per sequence, past int32" % max_keys)
    if nq > max_keys:
        raise ValueError("attn: q has %d rows per sequence but the cache holds at most %d keys"
                         % (nq, max_keys))
    devs = {str(t.device) for t in (q, k_cache, v_cache, cache_seqlens) +
            ((block_table,) if paged else ())}
    if len(devs) != 1:
        raise ValueError("attn: q, the caches, cache_seqlens and block_table must be on one "
                         "device, got %s" % ", ".join(sorted(devs)))
    return paged, rows if paged else 0, max_keys


def check_new(q, k_cache, v_cache, k_new, v_new, max_keys):
    """Checks the new tokens' keys and values to append (both or neither):
    [B, Hk, N, D] and [B, Hk, N, Dv] of q's dtype and device, N at most the
    cache's keys, and caches that can be written in place (contiguous)."""
    if (k_new is None) != (v_new is None):
        raise ValueError("attn: give k_new and v_new together (the new tokens' keys and values "
                         "to append)")
    if k_new is None:
        return
    b, _, _, d = _shape(q)
    hk = _shape(k_cache)[1]
    for name, t, dim in (("k_new", k_new, d), ("v_new", v_new, _shape(v_cache)[3])):
        _tensor(name, t)
        if _dtype(t) != _dtype(q):
            raise TypeError("attn: q and %s must share a dtype, got %s and %s"
                            % (name, _dtype(q), _dtype(t)))
        if len(t.shape) != 4 or _shape(t)[0] != b or _shape(t)[1] != hk or \
                _shape(t)[3] != dim or _shape(t)[2] < 1:
            raise ValueError("attn: %s must be [batch=%d, kv_heads=%d, N >= 1, %d], got shape %s"
                             % (name, b, hk, dim, _shape(t)))
    if _shape(k_new)[2] != _shape(v_new)[2]:
        raise ValueError("attn: k_new and v_new must have the same rows, got %s and %s"
                         % (_shape(k_new), _shape(v_new)))
    if _shape(k_new)[2] > max_keys:
        raise ValueError("attn: k_new has %d rows per sequence but the cache holds at most %d "
                         "keys" % (_shape(k_new)[2], max_keys))
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        if not t.is_contiguous():
            raise ValueError("attn: appending writes %s in place; it must be contiguous" % name)
    devs = {str(t.device) for t in (q, k_new, v_new)}
    if len(devs) != 1:
        raise ValueError("attn: q, k_new and v_new must be on one device, got %s"
                         % ", ".join(sorted(devs)))


def check_values(q, k_cache, cache_seqlens, block_table, max_keys, new_rows=0):
    """Checks the lengths (each in [max(Nq, new_rows), the cache's keys])
    and the block table's entries a sequence reaches (each in [0, P)).
    Reads the tensors (a device synchronisation for CUDA tensors)."""
    nq = _shape(q)[2]
    least = max(nq, new_rows)
    what = "q's rows" if nq >= new_rows else "k_new's rows"
    lens = cache_seqlens.detach().to("cpu").tolist()
    for i, n in enumerate(lens):
        if n < least or n > max_keys:
            raise ValueError("attn: cache_seqlens[%d] is %d; a sequence's length must be in "
                             "[%d (%s), %d (the cache's keys)]" % (i, n, least, what, max_keys))
    if block_table is None:
        return
    pages = _shape(k_cache)[0]
    size = _shape(k_cache)[2]
    table = block_table.detach().to("cpu").tolist()
    for i, n in enumerate(lens):
        used = table[i][:(n + size - 1) // size]
        for j, p in enumerate(used):
            if p < 0 or p >= pages:
                raise ValueError("attn: block_table[%d, %d] is %d, but sequence %d's %d keys need "
                                 "pages in [0, %d)" % (i, j, p, i, n, pages))


def _float(name, x, positive=True):
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) or \
            (positive and x <= 0):
        raise ValueError("attn: %s must be a positive finite number, got %s"
                         % (name, _describe_value(x)))
    return float(x)


def build(q, k_cache, v_cache, cache_seqlens, block_table, page_size, causal, scale, softcap,
          alibi, window, rope, name="decode", k_new=None, v_new=None):
    """The IR text of one attn.fused_decode for these tensors and options,
    after an attn.cache_append of k_new and v_new when given."""
    elem = _program.dtype_name(q.dtype)
    d = _shape(q)[3]
    if not isinstance(causal, bool):
        raise TypeError("attn: causal must be a bool, got %s" % _describe_value(causal))
    scale = 1.0 / math.sqrt(d) if scale is None else _float("scale", scale)
    attrs = ["scale = %r : f64" % scale, "causal = %s" % ("true" if causal else "false"),
             'cache_layout = "%s"' % ("paged" if block_table is not None else "contiguous")]
    if block_table is not None:
        attrs.append("page_size = %d : i64" % page_size)
    mods = ["scale"]
    if softcap is not None:
        attrs.append("softcap = %r : f64" % _float("softcap", softcap))
        mods.append("softcap")
    if alibi is not None:
        attrs.append("alibi = %r : f64" % _float("alibi", alibi))
        mods.append("alibi")
    if len(mods) > 1:
        attrs.append("mods = [%s]" % ", ".join('"%s"' % m for m in mods))
    if window is not None:
        if not (isinstance(window, (tuple, list)) and len(window) == 2 and
                all(isinstance(w, int) and not isinstance(w, bool) and -1 <= w <= INT32_MAX
                    for w in window)):
            raise ValueError("attn: window must be (left, right), ints >= -1 (-1: unbounded), "
                             "got %s" % _describe_value(window))
        attrs.append("window = array<i64: %d, %d>" % tuple(window))
    if rope not in (None, False):
        r = {} if rope is True else rope
        if not isinstance(r, dict) or set(r) - {"theta", "rotary_dim", "layout"}:
            raise ValueError("attn: decode's rope must be True or dict(theta=..., rotary_dim=..., "
                             "layout=...): positions come from cache_seqlens, got %s"
                             % _describe_value(rope))
        theta = _float("rope theta", r.get("theta", 10000.0))
        rdim = r.get("rotary_dim", d)
        if isinstance(rdim, bool) or not isinstance(rdim, int) or rdim < 2 or rdim % 2 or \
                rdim > d:
            raise ValueError("attn: rope rotary_dim must be an even int in [2, %d], got %s"
                             % (d, _describe_value(rdim)))
        layout = r.get("layout", "rotate_half")
        if layout not in ("rotate_half", "interleaved"):
            raise ValueError("attn: rope layout must be 'rotate_half' or 'interleaved', got %s"
                             % _describe_value(layout))
        rope_attr = ('rope = {theta = %r : f64, rotary_dim = %d : i64, layout = "%s"}'
                     % (theta, rdim, layout))
        attrs.append(rope_attr)
    else:
        rope_attr = None
    qt = _program.tensor_type(_shape(q), elem)
    kt = _program.tensor_type(_shape(k_cache), elem)
    vt = _program.tensor_type(_shape(v_cache), elem)
    lt = _program.tensor_type(_shape(cache_seqlens), "i32")
    b, h, nq, _ = _shape(q)
    ot = _program.tensor_type((b, h, nq, _shape(v_cache)[3]), elem)
    args = ["%%q: %s" % qt, "%%k: %s" % kt, "%%v: %s" % vt, "%%len: %s" % lt]
    ops, types = ["%q", "%k", "%v", "%len"], [qt, kt, vt, lt]
    if block_table is not None:
        tt = _program.tensor_type(_shape(block_table), "i32")
        args.append("%%table: %s" % tt)
        ops.append("%table")
        types.append(tt)
    attrs.insert(0, "operandSegmentSizes = array<i32: 1, 1, 1, 1, %d>"
                 % (1 if block_table is not None else 0))
    if k_new is None:
        return ("func.func @%s(%s) -> %s {\n"
                '  %%o = "attn.fused_decode"(%s) {%s} : (%s) -> %s\n'
                "  return %%o : %s\n}\n"
                % (name, ", ".join(args), ot, ", ".join(ops), ", ".join(attrs),
                   ", ".join(types), ot, ot))
    # The append: its caches are the decode's, k_new rotated by the same rope.
    knt = _program.tensor_type(_shape(k_new), elem)
    vnt = _program.tensor_type(_shape(v_new), elem)
    args += ["%%kn: %s" % knt, "%%vn: %s" % vnt]
    paged = block_table is not None
    app_attrs = ["operandSegmentSizes = array<i32: 1, 1, 1, %d, 1, 1>" % (1 if paged else 0),
                 'cache_layout = "%s"' % ("paged" if paged else "contiguous")]
    if paged:
        app_attrs.append("page_size = %d : i64" % page_size)
    if rope_attr:
        app_attrs.append(rope_attr)
    app_ops = ["%k", "%v", "%len"] + (["%table"] if paged else []) + ["%kn", "%vn"]
    app_types = types[1:] + [knt, vnt]
    ops[1:3] = ["%k2", "%v2"]
    return ("func.func @%s(%s) -> (%s, %s, %s) {\n"
            '  %%k2, %%v2 = "attn.cache_append"(%s) {%s} : (%s) -> (%s, %s)\n'
            '  %%o = "attn.fused_decode"(%s) {%s} : (%s) -> %s\n'
            "  return %%o, %%k2, %%v2 : %s, %s, %s\n}\n"
            % (name, ", ".join(args), ot, kt, vt,
               ", ".join(app_ops), ", ".join(app_attrs), ", ".join(app_types), kt, vt,
               ", ".join(ops), ", ".join(attrs), ", ".join(types), ot, ot, kt, vt))
