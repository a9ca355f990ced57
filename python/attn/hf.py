"""attn as a Hugging Face transformers attention implementation (issue 36).

    import attn.hf
    attn.hf.register()                       # once, after importing transformers
    model = AutoModelForCausalLM.from_config(config, attn_implementation="attn")

register() adds two functions to transformers under the name "attn": the
attention function (AttentionInterface) and the mask function
(AttentionMaskInterface). The mask function does not build a [B, 1, N, M]
tensor: it reads the mask transformers asks for (the causal mask, a sliding
window, the 2D padding mask, packed sequences, the offsets of a KV cache)
and returns a Mask that says it in attn's terms; the attention function
then runs attn.attention (causal, window, softcap, scale, GQA, padding and
packing as segment ids; differentiable) or, over a KV cache, attn.decode.
What attn cannot say exactly (dropout in training, attention weights asked
for, a mask of another form, padding over a cache) runs transformers' own
SDPA attention on the mask SDPA would get, with a warning that says why:
never a wrong result.

Nothing here imports transformers until register() is called; the Mask
reading and the attention function work on anything shaped like
transformers' masks (test/python/hf_cpu.test drives them on the CPU).
"""
import math
import warnings

from . import _errors

NAME = "attn"

# transformers' mask functions, known by where they are defined: the mask
# factories of transformers.masking_utils build closures of these.
_MASKING = "transformers.masking_utils"


class Mask:
    """The attention mask transformers asked for, in attn's terms.

    causal: key j visible to query i only when kv_pos(j) <= q_pos(i); window:
    None or W, a key visible only when q_pos(i) - W < kv_pos(j) (transformers'
    sliding window); q_offset, kv_offset: the positions of query row 0 and
    key row 0 (a KV cache); padding: None or a bool [B, >= kv_offset + M]
    tensor, true at the keys that take part; packed: None or an int
    [B, N] tensor of sequence ids (packed sequences, no cache); why: None
    when attn computes it, else the reason it cannot (the attention function
    then runs SDPA on sdpa_mask())."""

    def __init__(self, causal, window, q_offset, kv_offset, q_length, kv_length, padding,
                 packed, why, sdpa_kwargs):
        self.causal = causal
        self.window = window
        self.q_offset = q_offset
        self.kv_offset = kv_offset
        self.q_length = q_length
        self.kv_length = kv_length
        self.padding = padding
        self.packed = packed
        self.why = why
        self._sdpa_kwargs = sdpa_kwargs
        self._sdpa = None
        self._segments = {}

    def __repr__(self):
        if self.why:
            return "attn.hf.Mask(sdpa: %s)" % self.why
        parts = ["causal" if self.causal else "bidirectional"]
        if self.window is not None:
            parts.append("window=%d" % self.window)
        if self.q_offset or self.kv_offset:
            parts.append("q_offset=%s kv_offset=%s" % (self.q_offset, self.kv_offset))
        if self.padding is not None:
            parts.append("padding")
        if self.packed is not None:
            parts.append("packed")
        return "attn.hf.Mask(%s)" % ", ".join(parts)

    def sdpa_mask(self):
        """The boolean mask transformers' SDPA attention would get (built once)."""
        if self._sdpa is None:
            from transformers import masking_utils
            self._sdpa = (masking_utils.sdpa_mask(**self._sdpa_kwargs),)
        return self._sdpa[0]

    def segments(self, device):
        """(qseg, kseg) int32 ids for attn.attention's segment_ids (a key is
        visible to a query of the same id): padded keys get -1, packed
        sequences their ids; None when there is neither."""
        import torch
        if self.padding is None and self.packed is None:
            return None
        got = self._segments.get(device)
        if got is None:
            if self.packed is not None:
                seg = self.packed.to(device=device, dtype=torch.int32)
                got = (seg, seg)
            else:
                off, m = self.kv_offset, self.kv_length
                pad = self.padding[:, off:off + m].to(device)
                kseg = pad.to(torch.int32) - 1
                # Self-attention without a cache (N == M, equal offsets):
                # a padded query row sees the padded keys, as SDPA's rows
                # do, not nothing; its output is never read.
                got = (kseg, kseg)
            self._segments[device] = got
        return got


def _cells(fn):
    """fn's closure variables by name ({} for a plain function)."""
    code = getattr(fn, "__code__", None)
    closure = getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    return {n: c.cell_contents for n, c in zip(code.co_freevars, closure)}


def read_mask_function(fn):
    """What a transformers mask function computes: (causal, window, packed,
    padding, why), why None when attn can say it exactly. Known by their definitions in
    transformers.masking_utils: causal_mask_function, bidirectional_mask_function,
    the sliding-window overlay (kv > q - W), the packed-sequence function,
    the padding function and and_masks over them; anything else (or_masks,
    chunked attention, a user's function) gives a why."""
    state = {"causal": False, "window": None, "packed": None, "padding": None, "why": None}

    def visit(f):
        mod = getattr(f, "__module__", None)
        qual = getattr(f, "__qualname__", repr(f))
        if mod != _MASKING:
            state["why"] = "the mask function %s is not one of transformers' own" % qual
            return
        cells = _cells(f)
        if qual == "causal_mask_function":
            state["causal"] = True
        elif qual == "bidirectional_mask_function":
            pass
        elif qual.startswith("and_masks.") and "mask_functions" in cells:
            for g in cells["mask_functions"]:
                visit(g)
        elif qual.startswith("sliding_window_overlay.") and "sliding_window" in cells:
            w = cells["sliding_window"]
            if not isinstance(w, int) or isinstance(w, bool) or w < 1:
                state["why"] = "a sliding window of %r" % (w,)
                return
            state["window"] = w if state["window"] is None else min(state["window"], w)
        elif (qual.startswith("packed_sequence_mask_function.")
              and "packed_sequence_mask" in cells):
            state["packed"] = cells["packed_sequence_mask"]
        elif qual.startswith("padding_mask_function.") and "padding_mask" in cells:
            state["padding"] = cells["padding_mask"]
        else:
            state["why"] = "transformers' mask function %s has no attn form" % qual
        return

    visit(fn)
    return state["causal"], state["window"], state["packed"], state["padding"], state["why"]


def mask_interface(batch_size, q_length, kv_length, q_offset=0, kv_offset=0,
                   mask_function=None, attention_mask=None, **kwargs):
    """transformers' AttentionMaskInterface entry for "attn": returns a Mask
    (not a tensor) for the attention function below."""
    sdpa_kwargs = dict(kwargs, batch_size=batch_size, q_length=q_length, kv_length=kv_length,
                       q_offset=q_offset, kv_offset=kv_offset, attention_mask=attention_mask)
    if mask_function is not None:
        sdpa_kwargs["mask_function"] = mask_function
    why = None
    causal, window, packed, inner_padding = True, None, None, None
    if mask_function is not None:
        causal, window, packed, inner_padding, why = read_mask_function(mask_function)
    if why is None and not all(isinstance(x, int) and not isinstance(x, bool)
                               for x in (q_offset, kv_offset)):
        why = "the cache's offsets are tensors (a static cache under torch.compile)"
    if why is None and not causal and window is not None:
        why = "a sliding window without the causal mask"
    padding = None
    for pad in (attention_mask, inner_padding):
        if pad is None or why is not None:
            continue
        import torch
        if not isinstance(pad, torch.Tensor) or pad.dim() != 2:
            why = "a padding mask that is not [batch, keys]"
            continue
        pad = pad.to(torch.bool)
        need = kv_offset + kv_length
        if pad.shape[1] < need:
            pad = torch.nn.functional.pad(pad, (0, need - pad.shape[1]))
        padding = pad if padding is None else padding & pad
    return Mask(causal, window, q_offset, kv_offset, q_length, kv_length, padding, packed,
                why, sdpa_kwargs)


def _fallback(why, module, query, key, value, mask, dropout, scaling, is_causal, kwargs):
    """transformers' SDPA attention on the mask it would have had, after a
    warning (once per reason) that says why attn does not run it."""
    # (Python's warnings show each message once per place by default.)
    warnings.warn("attn.hf: running transformers' SDPA attention instead of attn: " + why,
                  RuntimeWarning, stacklevel=3)
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    tensor_mask = mask.sdpa_mask() if isinstance(mask, Mask) else mask
    return sdpa_attention_forward(module, query, key, value, tensor_mask, dropout=dropout,
                                  scaling=scaling, is_causal=is_causal, **kwargs)


def _plain_number(x):
    return x is not None and not isinstance(x, bool) and isinstance(x, (int, float))


def attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None,
                      is_causal=None, softcap=None, sliding_window=None, **kwargs):
    """transformers' AttentionInterface entry for "attn": query [B, H, N, D],
    key and value [B, Hk, M, D] (GQA: Hk divides H; not repeated), the Mask
    mask_interface made (or None, or a tensor a caller built: SDPA then);
    returns ([B, N, H, Dv], None). sliding_window is read from the mask, as
    SDPA's attention reads it; softcap and scaling are the model's."""
    fallback = (module, query, key, value, attention_mask, dropout, scaling, is_causal,
                dict(kwargs, softcap=softcap, sliding_window=sliding_window)
                if softcap is not None or sliding_window is not None else kwargs)
    if kwargs.get("output_attentions"):
        return _fallback("the attention weights were asked for (output_attentions)",
                         *fallback)
    if dropout and dropout > 0:
        return _fallback("attention dropout %g in training" % dropout, *fallback)
    if softcap is not None and not (_plain_number(softcap) and softcap > 0):
        return _fallback("a softcap of %r" % (softcap,), *fallback)
    if scaling is not None and not (_plain_number(scaling) and scaling > 0
                                    and math.isfinite(scaling)):
        return _fallback("a scaling of %r" % (scaling,), *fallback)
    if query.dtype not in _dtypes(query.device):
        return _fallback("query dtype %s" % query.dtype, *fallback)
    import attn
    opts = dict(scale=scaling, softcap=softcap or None)
    n, m = query.shape[2], key.shape[2]
    mask = attention_mask
    if mask is None:
        # As SDPA's attention: causal (top-left) when the module is and
        # there is more than one query row.
        causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
        o = attn.attention(query, key, value, mask="causal" if (causal and n > 1) else None,
                           **opts)
    elif not isinstance(mask, Mask):
        return _fallback("a mask tensor built outside attn.hf (%s)"
                         % type(mask).__name__, *fallback)
    elif mask.why is not None:
        return _fallback(mask.why, *fallback)
    else:
        shift = mask.q_offset - mask.kv_offset
        window = None if mask.window is None else (mask.window - 1, None)
        if shift == 0 and n == m:
            o = attn.attention(query, key, value, mask="causal" if mask.causal else None,
                               window=window, segment_ids=mask.segments(query.device), **opts)
        elif mask.padding is not None or mask.packed is not None:
            return _fallback("a padding mask over a KV cache", *fallback)
        elif query.dtype == torch_float64():
            return _fallback("float64 over a KV cache (attn.decode takes float32, float16 "
                             "and bfloat16)", *fallback)
        elif query.requires_grad or key.requires_grad or value.requires_grad:
            return _fallback("gradients through attention over a KV cache", *fallback)
        elif not (0 <= shift and shift + n <= m):
            return _fallback("query rows at %d..%d over %d keys" % (shift, shift + n, m),
                             *fallback)
        else:
            import torch
            lens = torch.full((query.shape[0],), shift + n if mask.causal else m,
                              dtype=torch.int32, device=query.device)
            if window is not None:
                window = (window[0], -1)
            o = attn.decode(query, key.contiguous(), value.contiguous(), lens,
                            causal=mask.causal, window=window, check_values=False, **opts)
    return o.transpose(1, 2).contiguous(), None


def torch_float64():
    import torch
    return torch.float64


def _dtypes(device):
    import torch
    if device.type == "cpu":
        return (torch.float16, torch.bfloat16, torch.float32, torch.float64)
    return (torch.float16, torch.bfloat16, torch.float32)


def register(name=NAME):
    """Registers attn with transformers as attention implementation `name`
    (its attention function and its mask function), so that
    from_pretrained / from_config(..., attn_implementation=name) and
    model.set_attn_implementation(name) run attn. Raises attn.Error if
    transformers (with AttentionInterface, 4.48 or later) is not installed."""
    try:
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface
    except ImportError as e:
        raise _errors.Error("attn.hf.register: transformers with AttentionInterface and "
                            "masking_utils (4.53 or later) is needed: %s" % e) from None
    AttentionInterface.register(name, attention_forward)
    AttentionMaskInterface.register(name, mask_interface)
    return name
