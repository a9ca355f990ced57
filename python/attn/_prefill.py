"""attn.decode's chunked prefill: more query rows per sequence than the
decode kernel takes (ROWS, 16), over the same KV cache, through
attn.attention's prefill kernels (the Hopper kernel on an H100/H200, the
mma.sync kernel from sm_80, the CPU path).

Query row i of sequence b sits at position p = cache_seqlens[b] - N + i, as
in a decode. The program attention() compiles reads the cache as one
contiguous [B, Hk, M, D] tensor (a paged cache is gathered into one first:
the prefill kernels read K and V by tiles, not through a block table) and
says the rest with a mask_mod reading the lengths (keys j <
cache_seqlens[b]; j <= p when causal; the window around p), which the
kernels turn into key lists at run time, so that the blocks past each
sequence's length are skipped; ALiBi's distance |p - j| is a score_mod
reading them too. RoPE: q is rotated at its positions here (float32, the
result in q's dtype), the cache holding rotated keys. k_new and v_new are
written into the cache first, by torch (the new keys rotated the same way).
"""
import math

ROWS = 16  # the decode kernel's most query rows per sequence (lib/Kernels/decode.c)


def _rope(rope, d):
    r = {} if rope is True else rope
    return (float(r.get("theta", 10000.0)), int(r.get("rotary_dim", d)),
            r.get("layout", "rotate_half") == "interleaved")


def rotate(x, pos, rope):
    """x [B, Hx, N, D] rotated at positions pos [B, N] (float32 math, x's
    dtype back): rotate-half or interleaved over rotary_dim columns."""
    import torch
    d = x.shape[-1]
    theta, rdim, inter = _rope(rope, d)
    half = rdim // 2
    t = torch.arange(half, device=x.device, dtype=torch.float64)
    ang = pos.double()[:, None, :, None] * theta ** (-2.0 * t / rdim)
    c, s = ang.cos().float(), ang.sin().float()
    y = x.float().clone()
    a = torch.arange(half, device=x.device) * 2 if inter else torch.arange(half,
                                                                            device=x.device)
    b = a + 1 if inter else a + half
    x1, x2 = y[..., a], y[..., b]
    y[..., a] = x1 * c - x2 * s
    y[..., b] = x2 * c + x1 * s
    return y.to(x.dtype)


def _rows_at(lens, n, device):
    """Positions [B, n] of the last n rows of each sequence."""
    import torch
    return lens.long()[:, None] - n + torch.arange(n, device=device)[None, :]


def append(k_cache, v_cache, lens, block_table, k_new, v_new, rope):
    """Writes k_new (rotated at its positions when rope) and v_new [B, Hk,
    N, *] into the caches in place, rows lens[b] - N + i; rows at negative
    positions are not written."""
    import torch
    b, hk, n, _ = k_new.shape
    pos = _rows_at(lens, n, k_new.device)  # [B, N]
    kn = rotate(k_new, pos, rope) if rope else k_new
    ok = pos >= 0
    bi = torch.arange(b, device=k_new.device)[:, None].expand(b, n)[ok]
    p = pos[ok]
    ki = kn.permute(0, 2, 1, 3)[ok]  # [rows, Hk, D]
    vi = v_new.permute(0, 2, 1, 3)[ok]
    if block_table is None:
        k_cache[bi, :, p] = ki
        v_cache[bi, :, p] = vi
    else:
        size = k_cache.shape[2]
        page = block_table.long()[bi, p // size]
        k_cache[page, :, p % size] = ki
        v_cache[page, :, p % size] = vi


def gathered(k_cache, v_cache, block_table):
    """The caches as contiguous [B, Hk, max_pages * page_size, *] tensors
    (as they are when contiguous); table entries outside [0, P) read page
    0 (past each sequence's length: masked)."""
    if block_table is None:
        return k_cache, v_cache
    pages = block_table.long()
    pages = pages.where((pages >= 0) & (pages < k_cache.shape[0]), pages.new_zeros(()))
    b, mp = pages.shape
    out = []
    for c in (k_cache, v_cache):
        _, hk, size, d = c.shape
        out.append(c[pages.reshape(-1)].view(b, mp, hk, size, d).permute(0, 2, 1, 3, 4)
                   .reshape(b, hk, mp * size, d))
    return out[0], out[1]


def run(attention, q, k_cache, v_cache, cache_seqlens, block_table, causal, scale, softcap,
        alibi, window, rope, tile_options, k_new, v_new):
    """decode() of q [B, H, N, D] with N > ROWS through attention()."""
    import torch
    n, heads = q.shape[2], q.shape[1]
    lens = cache_seqlens
    if k_new is not None:
        append(k_cache, v_cache, lens, block_table, k_new, v_new, rope)
    k, v = gathered(k_cache, v_cache, block_table)
    if rope:
        q = rotate(q, _rows_at(lens, n, q.device), rope)
    left, right = window if window is not None else (-1, -1)

    def mask_mod(b, h, q_idx, kv_idx):
        pos = lens[b] - n + q_idx
        vis = kv_idx < lens[b]
        if causal:
            vis = vis & (kv_idx <= pos)
        if left >= 0:
            vis = vis & (kv_idx >= pos - left)
        if right >= 0:
            vis = vis & (kv_idx <= pos + right)
        return vis

    score_mod = None
    if alibi is not None:
        slopes = torch.tensor([2.0 ** (-alibi * (h + 1) / heads) for h in range(heads)],
                              dtype=torch.float32, device=q.device)

        def score_mod(score, b, h, q_idx, kv_idx):
            return score - slopes[h] * abs(lens[b] - n + q_idx - kv_idx)
    return attention(q, k, v, scale=1.0 / math.sqrt(q.shape[3]) if scale is None else scale,
                     softcap=softcap, mask_mod=mask_mod, score_mod=score_mod,
                     tile_options=tile_options)
