"""attn.BlockMask: an explicit block-sparse mask, flex_attention's BlockMask
(made by BlockMask.from_kv_blocks, with flex's meaning and shapes), and what
attention(block_mask=) makes of it: a dense block map (int32 [B, H, QB, KB]:
0 no key of the block visible, 1 partial (the block mask's own mask_mod
decides), 2 full), built with torch ops on the tensors' device once per
BlockMask, and a mask_mod reading it, traced as any other
(map[b, h, q_idx // QS, kv_idx // KS], the divisions by constants that the
compiler's interval analysis sees as one point over a block). torch's own
flex BlockMask is taken by its attributes (as_block_mask).
"""
import numbers

from ._program import _describe
from ._trace import MASK_ARGS, _check_arity

# torch's flex marks a block mask of one block of 2^30 x 2^30 (no sparsity)
# with this block size.
_LARGE_BLOCK = 1 << 30
_FLEX_NAMES = ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
               "BLOCK_SIZE", "mask_mod")
_INT_DTYPES = ("int32", "int64")


def _dtype_name(t):
    """t's dtype without "torch.": "int32"."""
    name = str(t.dtype)
    return name[len("torch."):] if name.startswith("torch.") else name


def _is_tensor(x):
    """Whether x looks like a torch tensor (what attn reads of one)."""
    return all(hasattr(x, a) for a in ("shape", "dtype", "device", "data_ptr"))


def _shape(t):
    """t's shape as a tuple of ints."""
    return tuple(int(d) for d in t.shape)


def _device_name(d):
    """A device as torch names it: "cpu", "cuda:0"."""
    return d.type if d.index is None else "%s:%d" % (d.type, d.index)


def _same_device(a, b):
    """Whether devices a and b are one (cuda and cuda:0 are)."""
    return a.type == b.type and (a.index or 0) == (b.index or 0)


def _pair(x, what):
    """x as a pair of ints > 0 (an int n: (n, n))."""
    items = (x, x) if not isinstance(x, (tuple, list)) else tuple(x)
    if len(items) != 2 or any(isinstance(v, bool) or not isinstance(v, numbers.Integral)
                              for v in items):
        raise TypeError("attn: BlockMask %s must be an int or a pair of ints (Q, KV), got %s"
                        % (what, _describe(x)))
    items = tuple(int(v) for v in items)
    if min(items) <= 0:
        raise ValueError("attn: BlockMask %s must be > 0, got %s" % (what, items))
    return items


def _is_noop(fn):
    """torch's flex noop_mask (every key visible): no mask_mod."""
    return (getattr(fn, "__name__", None) == "noop_mask"
            and (getattr(fn, "__module__", None) or "").startswith("torch."))


def _first(bad):
    """The index tuple of the first True of a bool tensor."""
    import torch
    flat = int(torch.nonzero(bad.flatten())[0, 0])
    out = []
    for d in reversed(_shape(bad)):
        out.append(flat % d)
        flat //= d
    return tuple(reversed(out))


def _block_list_map(counts, indices, what):
    """How many times each key block is listed, int32 [B, H, QB, KB], for
    one (counts, indices) pair of from_kv_blocks; checks the counts and
    the listed indices (those past a row's count are ignored, as flex does)."""
    import torch
    KB = int(indices.shape[-1])
    bad = (counts < 0) | (counts > KB)
    if bool(bad.any()):
        at = _first(bad)
        raise ValueError("attn: BlockMask %s_num_blocks%s = %d is outside [0, %d] (KB = %d, "
                         "the key blocks of %s_indices' last dimension)"
                         % (what, list(at), int(counts[at]), KB, KB, what))
    listed = torch.arange(KB, device=indices.device) < counts.unsqueeze(-1)
    bad = listed & ((indices < 0) | (indices >= KB))
    if bool(bad.any()):
        at = _first(bad)
        raise ValueError("attn: BlockMask %s_indices%s = %d is not a key block index in "
                         "[0, %d)" % (what, list(at), int(indices[at]), KB))
    where = torch.where(listed, indices.long(), torch.full_like(indices.long(), KB))
    seen = torch.zeros(_shape(indices)[:3] + (KB + 1,), dtype=torch.int32, device=indices.device)
    seen.scatter_add_(3, where, listed.to(torch.int32))
    seen = seen[..., :KB]
    bad = seen > 1
    if bool(bad.any()):
        at = _first(bad)
        raise ValueError("attn: BlockMask %s_indices lists key block %d twice for query block "
                         "[%d, %d, %d]" % (what, at[3], at[0], at[1], at[2]))
    return seen


class BlockMask:
    """A block-sparse mask, as flex_attention's: per query block of
    BLOCK_SIZE[0] queries, the key blocks of BLOCK_SIZE[1] keys it sees.
    Made by from_kv_blocks; passed as attention(block_mask=).

    kv_num_blocks [B, H, QB] and kv_indices [B, H, QB, KB]: the partial
    blocks (bm.mask_mod decides each key in them), full_kv_num_blocks and
    full_kv_indices likewise the full ones (every key visible, mask_mod not
    applied); any other key is hidden. B and H may be 1 (broadcast over the
    batch and the query heads). seq_lengths (Q_LEN, KV_LEN): the N and M it
    is for, by default (QB * BLOCK_SIZE[0], KB * BLOCK_SIZE[1])."""

    def __init__(self, kv_num_blocks, kv_indices, full_kv_num_blocks=None, full_kv_indices=None,
                 BLOCK_SIZE=128, mask_mod=None, seq_lengths=None):
        import torch
        full = (full_kv_num_blocks, full_kv_indices)
        if (full[0] is None) != (full[1] is None):
            raise ValueError("attn: BlockMask full_kv_num_blocks and full_kv_indices must be "
                             "given together, or neither")
        named = [("kv_num_blocks", kv_num_blocks, 3, "[B, H, QB]"),
                 ("kv_indices", kv_indices, 4, "[B, H, QB, KB]")]
        if full[0] is not None:
            named += [("full_kv_num_blocks", full[0], 3, "[B, H, QB]"),
                      ("full_kv_indices", full[1], 4, "[B, H, QB, KB]")]
        for name, t, rank, form in named:
            if not _is_tensor(t):
                raise TypeError("attn: BlockMask %s must be a tensor %s, got %s"
                                % (name, form, _describe(t)))
            if _dtype_name(t) not in _INT_DTYPES:
                raise TypeError("attn: BlockMask %s must be int32 or int64, got %s"
                                % (name, _dtype_name(t)))
            if len(t.shape) != rank:
                raise ValueError("attn: BlockMask %s must be %s (rank %d), got shape %s"
                                 % (name, form, rank, _shape(t)))
            if 0 in _shape(t):
                raise ValueError("attn: BlockMask %s has an empty dimension, shape %s"
                                 % (name, _shape(t)))
        dev = kv_indices.device
        for name, t, _, _ in named:
            if not _same_device(t.device, dev):
                raise ValueError("attn: BlockMask's tensors must be on one device: kv_indices "
                                 "is on %s, %s on %s" % (_device_name(dev), name,
                                                         _device_name(t.device)))
        shape = _shape(kv_indices)
        if shape[:3] != _shape(kv_num_blocks):
            raise ValueError("attn: BlockMask kv_indices must be [B, H, QB, KB] with the B, H, "
                             "QB of kv_num_blocks %s, got %s" % (_shape(kv_num_blocks), shape))
        for name, t, rank, _ in named[2:]:
            if _shape(t) != shape[:rank]:
                raise ValueError("attn: BlockMask %s must have the shape of %s, %s, got %s"
                                 % (name, name[len("full_"):], shape[:rank], _shape(t)))
        qs, ks = _pair(BLOCK_SIZE, "BLOCK_SIZE")
        B, H, QB, KB = shape
        if seq_lengths is None:
            seq_lengths = (QB * qs, KB * ks)
        else:
            seq_lengths = _pair(seq_lengths, "seq_lengths")
            for what, n, s, have in (("Q_LEN", seq_lengths[0], qs, QB),
                                     ("KV_LEN", seq_lengths[1], ks, KB)):
                if (qs, ks) != (_LARGE_BLOCK, _LARGE_BLOCK) and -(-n // s) != have:
                    raise ValueError("attn: BlockMask BLOCK_SIZE %s does not match seq_lengths "
                                     "%s: %s = %d makes %d blocks of %d, kv_indices %s has %d"
                                     % ((qs, ks), seq_lengths, what, n, -(-n // s), s, shape,
                                        have))
        if mask_mod is not None and _is_noop(mask_mod):
            mask_mod = None
        if mask_mod is not None and not callable(mask_mod):
            raise TypeError("attn: BlockMask mask_mod must be None or a function (b, h, q_idx, "
                            "kv_idx) -> bool, got %s" % _describe(mask_mod))
        if mask_mod is not None:
            _check_arity("BlockMask mask_mod", mask_mod, MASK_ARGS)
        if getattr(mask_mod, "__name__", None) == "_sliced_mask_mod_error":
            raise ValueError("attn: BlockMask mask_mod is the placeholder of a sliced flex "
                             "BlockMask; make the block mask for the whole batch and heads")
        with torch.no_grad():
            part = _block_list_map(kv_num_blocks, kv_indices, "kv")
            block_map = part
            if full[0] is not None:
                whole = _block_list_map(full[0], full[1], "full_kv")
                both = (part > 0) & (whole > 0)
                if bool(both.any()):
                    at = _first(both)
                    raise ValueError("attn: BlockMask lists key block %d both as partial "
                                     "(kv_indices) and as full (full_kv_indices) for query "
                                     "block [%d, %d, %d]" % (at[3], at[0], at[1], at[2]))
                block_map = part + 2 * whole
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks, self.full_kv_indices = full
        self.BLOCK_SIZE = (qs, ks)
        self.mask_mod = mask_mod
        self.seq_lengths = tuple(seq_lengths)
        self._map = block_map.contiguous()

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks, kv_indices, full_kv_num_blocks=None,
                       full_kv_indices=None, BLOCK_SIZE=128, mask_mod=None, seq_lengths=None):
        """A BlockMask from its key-block lists, as flex's
        BlockMask.from_kv_blocks: kv_num_blocks [B, H, QB] and kv_indices
        [B, H, QB, KB] (int32 or int64; row (b, h, qb) lists its first
        kv_num_blocks[b, h, qb] entries, the rest is ignored) give the
        partial blocks, full_kv_* the full ones; BLOCK_SIZE an int or a pair
        (Q, KV); mask_mod the function applied in partial blocks (None:
        every key of a listed block visible); seq_lengths (Q_LEN, KV_LEN).
        Checks everything (TypeError / ValueError naming what is wrong) and
        builds the block map, on the tensors' device."""
        return cls(kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices,
                   BLOCK_SIZE, mask_mod, seq_lengths)

    @property
    def shape(self):
        """(B, H, Q_LEN, KV_LEN), as flex's."""
        return _shape(self.kv_indices)[:2] + self.seq_lengths

    def to_dense(self):
        """The block map, int32 [B, H, QB, KB] on the tensors' device: 0
        where no key of the block is visible, 1 partial, 2 full."""
        return self._map

    def __repr__(self):
        return "attn.BlockMask(shape=%s, BLOCK_SIZE=%s, %s, mask_mod=%s)" % (
            self.shape, self.BLOCK_SIZE,
            "partial and full blocks" if self.full_kv_num_blocks is not None
            else "partial blocks", getattr(self.mask_mod, "__name__", self.mask_mod))


def as_block_mask(x):
    """x as an attn.BlockMask: itself, or one made from torch's flex
    BlockMask (its kv_num_blocks, kv_indices, full_kv_*, BLOCK_SIZE,
    mask_mod, seq_lengths), kept on it and made again only when those
    attributes are rebound."""
    if isinstance(x, BlockMask):
        return x
    if not all(hasattr(x, a) for a in _FLEX_NAMES):
        raise TypeError("attn: block_mask must be an attn.BlockMask (attn.BlockMask."
                        "from_kv_blocks) or torch's flex_attention BlockMask, got %s"
                        % ("a tensor of shape %s" % (_shape(x),) if _is_tensor(x)
                           else _describe(x)))
    source = tuple(getattr(x, a) for a in _FLEX_NAMES) + (getattr(x, "seq_lengths", None),)
    kept = getattr(x, "_attn_block_mask", None)
    if (type(kept) is tuple and len(kept) == 2 and len(kept[0]) == len(source)
            and all(a is b for a, b in zip(kept[0], source))):
        return kept[1]
    bm = BlockMask(*source[:4], BLOCK_SIZE=source[4], mask_mod=source[5],
                   seq_lengths=source[6])
    try:
        x._attn_block_mask = (source, bm)
    except (AttributeError, TypeError):
        pass  # an object that takes no attribute: converted on every call
    return bm


def _block_mask_mod(block_map, qs, ks, batch, head, partial, also):
    """The mask_mod of a block mask: visible where block_map[b', h', q_idx
    // qs, kv_idx // ks] is 2, or 1 and partial(...) holds (any listed key
    when partial is None), and also(...) holds when given; b' and h' are b
    and h, or 0 where the map broadcasts (batch, head false). The divisions
    are torch.div(rounding_mode="trunc") of non-negative indices by
    constants: arith.divsi, one point over each block. The function reads
    no global but torch (the cached call keys what it reads: _fn_key.py),
    and renames the tracer's errors of partial and also after them."""
    import torch

    def block_mask_mod(b, h, q_idx, kv_idx):
        m = block_map[b if batch else 0, h if head else 0,
                      torch.div(q_idx, qs, rounding_mode="trunc"),
                      torch.div(kv_idx, ks, rounding_mode="trunc")]
        if partial is None:
            vis = m != 0
        else:
            try:
                inside = partial(b, h, q_idx, kv_idx)
            except (TypeError, IndexError) as e:  # the tracer's, named for the block mask
                text = str(e)
                if not text.startswith("attn: mask_mod: "):
                    raise
                raise type(e)("attn: block_mask's mask_mod: " + text[len("attn: mask_mod: "):]) \
                    from None
            kind = getattr(inside, "ty", "i1")  # a traced value's kind (_trace.Value)
            if kind != "i1":
                raise TypeError("attn: block_mask's mask_mod: must return a bool (true where "
                                "the key is visible), got %s value"
                                % ("a float" if kind == "f32" else "an integer"))
            vis = (m == 2) | ((m == 1) & inside)
        if also is not None:
            try:
                vis = vis & also(b, h, q_idx, kv_idx)
            except TypeError as e:
                if str(e).startswith("attn:"):
                    raise
                raise TypeError("attn: mask_mod must be a function (b, h, q_idx, kv_idx) -> "
                                "bool: calling it so raised TypeError: %s" % e) from None
        return vis
    return block_mask_mod


def mask_mod_for(block_mask, q, k, mask_mod):
    """The mask_mod attention() traces for block_mask and q, k ([B, H, N,
    D], [B, Hk, M, D]), ANDed with mask_mod (None: none); checks that the
    block mask fits them (ValueError naming what does not)."""
    bm = as_block_mask(block_mask)
    B, H, N = int(q.shape[0]), int(q.shape[1]), int(q.shape[2])
    M = int(k.shape[2])
    mB, mH = int(bm._map.shape[0]), int(bm._map.shape[1])
    if not _same_device(bm._map.device, q.device):
        raise ValueError("attn: block_mask's tensors are on %s, q on %s"
                         % (_device_name(bm._map.device), _device_name(q.device)))
    if mB not in (1, B) or mH not in (1, H):
        raise ValueError("attn: block_mask is for B=%d, H=%d (1 broadcasts), q has B=%d, H=%d "
                         "(H: the query heads)" % (mB, mH, B, H))
    if bm.BLOCK_SIZE != (_LARGE_BLOCK, _LARGE_BLOCK) and bm.seq_lengths != (N, M):
        raise ValueError("attn: block_mask was made for seq_lengths (Q_LEN, KV_LEN) = %s, q "
                         "and k have N=%d, M=%d (give seq_lengths=(%d, %d) to from_kv_blocks "
                         "when N or M is not a multiple of the block size)"
                         % (bm.seq_lengths, N, M, N, M))
    partial = bm.mask_mod
    if partial is not None and partial is mask_mod:
        partial = None  # (full | partial & f) & f is (listed) & f
    return _block_mask_mod(bm._map, bm.BLOCK_SIZE[0], bm.BLOCK_SIZE[1], mB > 1, mH > 1,
                           partial, mask_mod)
