"""A stand-in for the parts of Hugging Face transformers that attn.hf meets,
for machines without transformers (CI's CPU machines): the mask factories
as transformers.masking_utils defines them (causal, bidirectional, the
sliding-window overlay, padding, packed sequences, chunks, and_masks /
or_masks, each a closure of the same names), sdpa_mask and an SDPA
attention written from their definitions in float64, and the two
registries. install() puts the modules in sys.modules (the mask module's
source runs as transformers.masking_utils, so its functions carry that
module and their own qualified names); the real library is tested on the
GPU machine (test/python/hf_models_cuda.test)."""
import sys
import types

MASKING = '''
import torch


def and_masks(*mask_functions):
    def and_mask(batch_idx, head_idx, q_idx, kv_idx):
        out = torch.ones((), dtype=torch.bool)
        for f in mask_functions:
            out = out & f(batch_idx, head_idx, q_idx, kv_idx)
        return out
    return and_mask


def or_masks(*mask_functions):
    def or_mask(batch_idx, head_idx, q_idx, kv_idx):
        out = torch.zeros((), dtype=torch.bool)
        for f in mask_functions:
            out = out | f(batch_idx, head_idx, q_idx, kv_idx)
        return out
    return or_mask


def causal_mask_function(batch_idx, head_idx, q_idx, kv_idx):
    return kv_idx <= q_idx


def bidirectional_mask_function(batch_idx, head_idx, q_idx, kv_idx):
    return q_idx >= 0


def sliding_window_overlay(sliding_window):
    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
        return kv_idx > q_idx - sliding_window
    return inner_mask


def sliding_window_causal_mask_function(sliding_window):
    return and_masks(sliding_window_overlay(sliding_window), causal_mask_function)


def chunked_overlay(chunk_size):
    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
        return kv_idx // chunk_size == q_idx // chunk_size
    return inner_mask


def padding_mask_function(padding_mask):
    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
        return padding_mask[batch_idx, kv_idx]
    return inner_mask


def packed_sequence_mask_function(packed_sequence_mask):
    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
        return packed_sequence_mask[batch_idx, q_idx] == packed_sequence_mask[batch_idx, kv_idx]
    return inner_mask


def sdpa_mask(batch_size, q_length, kv_length, q_offset=0, kv_offset=0,
              mask_function=causal_mask_function, attention_mask=None, **kwargs):
    if attention_mask is not None:
        pad = attention_mask.to(torch.bool)
        need = kv_offset + kv_length
        if pad.shape[1] < need:
            pad = torch.nn.functional.pad(pad, (0, need - pad.shape[1]))
        mask_function = and_masks(mask_function, padding_mask_function(pad))
    b = torch.arange(batch_size)[:, None, None, None]
    h = torch.arange(1)[None, :, None, None]
    q = (torch.arange(q_length) + q_offset)[None, None, :, None]
    kv = (torch.arange(kv_length) + kv_offset)[None, None, None, :]
    return mask_function(b, h, q, kv).expand(batch_size, 1, q_length, kv_length)


class AttentionMaskInterface:
    _global_mapping = {}

    @classmethod
    def register(cls, name, fn):
        cls._global_mapping[name] = fn
'''

CALLS = {"sdpa": 0}


def _sdpa_attention_forward(module, query, key, value, attention_mask, dropout=0.0,
                            scaling=None, is_causal=None, **kwargs):
    import torch
    CALLS["sdpa"] += 1
    rep = query.shape[1] // key.shape[1]
    k = key.repeat_interleave(rep, 1).double()
    v = value.repeat_interleave(rep, 1).double()
    s = (query.double() @ k.transpose(-1, -2)) * (
        scaling if scaling is not None else query.shape[-1] ** -0.5)
    cap = kwargs.get("softcap")
    if cap:
        s = cap * torch.tanh(s / cap)
    n, m = s.shape[-2:]
    if attention_mask is not None:
        s = s.masked_fill(~attention_mask, float("-inf"))
    elif (is_causal if is_causal is not None else module.is_causal) and n > 1:
        s = s.masked_fill(torch.ones(n, m, dtype=torch.bool).triu(1), float("-inf"))
    o = torch.softmax(s, -1).nan_to_num(0.0) @ v
    return o.to(query.dtype).transpose(1, 2).contiguous(), None


class _AttentionInterface:
    _global_mapping = {}

    @classmethod
    def register(cls, name, fn):
        cls._global_mapping[name] = fn


def install():
    """Puts transformers, transformers.masking_utils and
    transformers.integrations.sdpa_attention in sys.modules; returns the
    masking module."""
    def module(name):
        m = types.ModuleType(name)
        sys.modules[name] = m
        return m
    top = module("transformers")
    mu = module("transformers.masking_utils")
    integ = module("transformers.integrations")
    sdpa = module("transformers.integrations.sdpa_attention")
    exec(compile(MASKING, "<transformers.masking_utils stand-in>", "exec"), mu.__dict__)
    sdpa.sdpa_attention_forward = _sdpa_attention_forward
    top.masking_utils, top.integrations, integ.sdpa_attention = mu, integ, sdpa
    top.AttentionInterface = _AttentionInterface
    return mu
