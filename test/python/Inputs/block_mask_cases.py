"""attn.attention(block_mask=) cases (issue 28 items 3 and 5) and their
float64 reference: the key-block lists of from_kv_blocks expanded into a
dense [B, H, N, M] visibility by loops over the lists, written apart from
python/attn/_block_mask.py, then softmax in float64 (mods_cases.reference;
a query that sees no key outputs 0). Used by block_mask.test (CPU: the
cases, the round trip, every error) and block_mask_cuda.test (CUDA, and
torch's flex_attention with the same BlockMask where torch has it)."""
import torch

import mods_cases


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def dense_blocks(counts, indices, full_counts=None, full_indices=None):
    """The block map by loops over the lists: [B, H, QB, KB] of 0 (not
    listed), 1 (partial), 2 (full)."""
    B, H, QB, KB = indices.shape
    out = torch.zeros(B, H, QB, KB, dtype=torch.int32)
    for pairs, val in (((counts, indices), 1), ((full_counts, full_indices), 2)):
        if pairs[0] is None:
            continue
        c, ix = pairs[0].cpu(), pairs[1].cpu()
        for b in range(B):
            for h in range(H):
                for qb in range(QB):
                    for n in range(int(c[b, h, qb])):
                        out[b, h, qb, int(ix[b, h, qb, n])] = val
    return out


def visibility(spec, B, H, N, M, device):
    """Dense bool [B, H, N, M]: which keys spec's block mask (and its
    mask_mod beside it) shows, from the lists."""
    blocks = dense_blocks(spec["kv_num_blocks"], spec["kv_indices"],
                          spec.get("full_kv_num_blocks"), spec.get("full_kv_indices"))
    bs = spec.get("BLOCK_SIZE", 128)
    qs, ks = (bs, bs) if isinstance(bs, int) else bs
    b = torch.arange(B).view(B, 1, 1, 1)
    h = torch.arange(H).view(1, H, 1, 1)
    qi = torch.arange(N).view(1, 1, N, 1)
    ki = torch.arange(M).view(1, 1, 1, M)
    part = torch.ones(B, H, N, M, dtype=torch.bool)
    if spec.get("mask_mod") is not None:
        cpu = spec.get("mask_mod_cpu", spec["mask_mod"])
        part = torch.as_tensor(cpu(b, h, qi, ki)).expand(B, H, N, M).clone()
    vis = torch.zeros(B, H, N, M, dtype=torch.bool)
    mB, mH, QB, KB = blocks.shape
    for bb in range(B):
        for hh in range(H):
            for qb in range(QB):
                for kb in range(KB):
                    kind = int(blocks[bb if mB > 1 else 0, hh if mH > 1 else 0, qb, kb])
                    rows = slice(qb * qs, min(N, (qb + 1) * qs))
                    cols = slice(kb * ks, min(M, (kb + 1) * ks))
                    if kind == 2:
                        vis[bb, hh, rows, cols] = True
                    elif kind == 1:
                        vis[bb, hh, rows, cols] = part[bb, hh, rows, cols]
    return vis.to(device)


def topk_lists(gen, B, H, QB, KB, keep, pad=None, empty_rows=()):
    """Top-K-like lists: per (b, h, query block) `keep` distinct random key
    blocks, the rest of the row pad (default: the other blocks, as flex's
    argsort gives); the query blocks of empty_rows list none."""
    counts = torch.full((B, H, QB), keep, dtype=torch.int32)
    indices = torch.empty(B, H, QB, KB, dtype=torch.int32)
    for b in range(B):
        for h in range(H):
            for qb in range(QB):
                indices[b, h, qb] = torch.randperm(KB, generator=gen).to(torch.int32)
                if pad is not None:
                    indices[b, h, qb, keep:] = pad
    for qb in empty_rows:
        counts[:, :, qb] = 0
    return counts, indices


def causal_lists(B, H, QB, KB):
    """Causal attention as block lists of square blocks: the diagonal block
    partial, the blocks left of it full."""
    counts = torch.ones(B, H, QB, dtype=torch.int32)
    indices = torch.zeros(B, H, QB, KB, dtype=torch.int32)
    full_counts = torch.zeros(B, H, QB, dtype=torch.int32)
    full_indices = torch.zeros(B, H, QB, KB, dtype=torch.int32)
    for qb in range(QB):
        indices[:, :, qb, 0] = qb
        full_counts[:, :, qb] = qb
        full_indices[:, :, qb, :qb] = torch.arange(qb, dtype=torch.int32)
    return counts, indices, full_counts, full_indices


def cases(device, gen):
    """(name, (q, k, v) shapes, dtype, from_kv_blocks' keyword arguments,
    attention's other keyword arguments)."""
    out = []

    def on(spec):
        return {n: (x.to(device) if torch.is_tensor(x) else x) for n, x in spec.items()}

    # Top-K with blocks of 128: 2 of 5 key blocks per query block, N not a
    # multiple of the block, one query block with none (its rows output 0).
    c, ix = topk_lists(gen, 1, 2, 5, 5, 2, empty_rows=(3,))
    out.append(("topk_128", ((1, 2, 600, 32), (1, 2, 600, 32), (1, 2, 600, 32)), torch.float32,
                on(dict(kv_num_blocks=c, kv_indices=ix, seq_lengths=(600, 600))), {}))
    # Blocks of 64, per batch and head, the rest of each row garbage (999).
    c, ix = topk_lists(gen, 2, 2, 5, 5, 3, pad=999)
    out.append(("topk_64", ((2, 2, 320, 16), (2, 2, 320, 16), (2, 2, 320, 16)), torch.float32,
                on(dict(kv_num_blocks=c, kv_indices=ix, BLOCK_SIZE=64)), {}))
    # Causal as full and partial blocks (partial: causal's mask_mod), with
    # a mask_mod beside it (applied in every block, full ones too).
    c, ix, fc, fix = causal_lists(1, 1, 4, 4)
    out.append(("causal_full_partial", ((1, 2, 200, 16),) * 3, torch.float32,
                on(dict(kv_num_blocks=c, kv_indices=ix, full_kv_num_blocks=fc,
                        full_kv_indices=fix, BLOCK_SIZE=64, mask_mod=causal,
                        seq_lengths=(200, 200))),
                dict(mask_mod=lambda b, h, q_idx, kv_idx: kv_idx % 7 != 3)))
    # The same function as bm.mask_mod and mask_mod=.
    out.append(("causal_same_mask_mod", ((1, 2, 200, 16),) * 3, torch.float32,
                on(dict(kv_num_blocks=c, kv_indices=ix, full_kv_num_blocks=fc,
                        full_kv_indices=fix, BLOCK_SIZE=64, mask_mod=causal,
                        seq_lengths=(200, 200))), dict(mask_mod=causal)))
    # Broadcast: one list for every batch (B=1 of 2), per head; one for
    # every head (H=1 of 4), per batch; one for all; GQA 4/2.
    for name, (mB, mH) in (("broadcast_batch", (1, 4)), ("broadcast_head", (2, 1)),
                           ("broadcast_both", (1, 1))):
        c, ix = topk_lists(gen, mB, mH, 3, 3, 2)
        out.append((name, ((2, 4, 96, 16), (2, 2, 96, 16), (2, 2, 96, 16)), torch.float32,
                    on(dict(kv_num_blocks=c, kv_indices=ix, BLOCK_SIZE=32)), {}))
    # N != M, query and key blocks of different sizes, full and partial
    # blocks with a mask_mod reading a captured tensor, a score_mod beside.
    keep = (torch.arange(300) % 5 != 2).to(device)
    c, ix = topk_lists(gen, 1, 2, 3, 3, 1)
    fc, fix = torch.ones(1, 2, 3, dtype=torch.int32), ix.clone()
    fix[..., 0] = ix[..., 1]  # the second random block full, the first partial
    out.append(("cross_n_ne_m", ((1, 2, 130, 16), (1, 2, 300, 16), (1, 2, 300, 16)),
                torch.float32,
                on(dict(kv_num_blocks=c, kv_indices=ix, full_kv_num_blocks=fc,
                        full_kv_indices=fix, BLOCK_SIZE=(64, 128), seq_lengths=(130, 300),
                        mask_mod=lambda b, h, q_idx, kv_idx: keep[kv_idx],
                        mask_mod_cpu=lambda b, h, q_idx, kv_idx: keep.cpu()[kv_idx])),
                dict(score_mod=lambda s, b, h, q_idx, kv_idx: s + 0.01 * (q_idx - kv_idx))))
    # bf16, int64 lists.
    c, ix = topk_lists(gen, 1, 1, 4, 4, 2)
    out.append(("topk_bf16_int64", ((1, 2, 256, 32),) * 3, torch.bfloat16,
                on(dict(kv_num_blocks=c.long(), kv_indices=ix.long(), BLOCK_SIZE=64)), {}))
    return out


TOL = {torch.float32: 1e-4, torch.float16: 5e-3, torch.bfloat16: 2e-2}


def _bm_args(spec):
    return {n: x for n, x in spec.items() if n != "mask_mod_cpu"}


def check(device, name, shapes, dtype, spec, kw, gen, tile_options=None):
    """attn.attention(block_mask=) against the reference: PASS, FAIL or the
    first line of the error."""
    import attn
    q, k, v = (torch.randn(s, generator=gen).to(device=device, dtype=dtype) for s in shapes)
    B, H, N = shapes[0][:3]
    M = shapes[1][2]
    vis = visibility(spec, B, H, N, M, device)

    def vis_mod(b, h, q_idx, kv_idx):
        return vis[b, h, q_idx, kv_idx]
    extra = kw.get("mask_mod")
    want = mods_cases.reference(
        q, k, v, kw.get("score_mod"),
        vis_mod if extra is None else (lambda b, h, qi, ki: vis_mod(b, h, qi, ki)
                                       & extra(b, h, qi, ki)))
    label = name + (" (%s)" % tile_options if tile_options else "")
    try:
        bm = attn.BlockMask.from_kv_blocks(**_bm_args(spec))
        o = attn.attention(q, k, v, block_mask=bm, tile_options=tile_options, **kw)
    except Exception as e:  # reported, as the other lines go on
        print("%s: %s %s" % (label, type(e).__name__, str(e).splitlines()[0]))
        return
    err = mods_cases.rel_error(o, want)
    print("%s: %s" % (label, "PASS" if err <= TOL[dtype] else "FAIL rel_error=%.3e" % err))


def flex_cases(device, gen):
    """The cases compared with flex_attention: blocks of 128 (flex's
    default, a multiple of its kernels' tiles), bf16, head dim 64, no
    mask_mod beside the block mask (flex has none)."""
    out = []

    def on(spec):
        return {n: (x.to(device) if torch.is_tensor(x) else x) for n, x in spec.items()}
    c, ix = topk_lists(gen, 1, 2, 8, 8, 2, empty_rows=(5,))
    out.append(("flex topk", ((1, 2, 1024, 64),) * 3,
                on(dict(kv_num_blocks=c, kv_indices=ix)), {}))
    c, ix, fc, fix = causal_lists(1, 1, 8, 8)
    out.append(("flex causal full and partial", ((1, 2, 1000, 64),) * 3,
                on(dict(kv_num_blocks=c, kv_indices=ix, full_kv_num_blocks=fc,
                        full_kv_indices=fix, mask_mod=causal, seq_lengths=(1000, 1000))), {}))
    c, ix = topk_lists(gen, 1, 4, 4, 4, 2)
    out.append(("flex broadcast batch, GQA 4/2", ((2, 4, 512, 64), (2, 2, 512, 64),
                                                  (2, 2, 512, 64)),
                on(dict(kv_num_blocks=c, kv_indices=ix)), {}))
    c, ix = topk_lists(gen, 1, 2, 3, 8, 3)
    out.append(("flex N != M, score_mod", ((1, 2, 384, 64), (1, 2, 1024, 64), (1, 2, 1024, 64)),
                on(dict(kv_num_blocks=c, kv_indices=ix)),
                dict(score_mod=lambda s, b, h, q_idx, kv_idx: s + 0.001 * (q_idx - kv_idx))))
    return out


def flex_check(flex, device, label, shapes, spec, kw, gen):
    """attn.attention and compiled flex_attention, given one torch BlockMask
    made by torch's from_kv_blocks from the same lists, each against the
    reference (flex compiled: its fused kernel reads the lists, as
    bench/mods_bench.py times it)."""
    import attn
    TorchBlockMask, flex_attention = flex
    dtype = torch.bfloat16
    q, k, v = (torch.randn(s, generator=gen).to(device=device, dtype=dtype) for s in shapes)
    B, H, N = shapes[0][:3]
    M = shapes[1][2]
    vis = visibility(spec, B, H, N, M, device)
    want = mods_cases.reference(q, k, v, kw.get("score_mod"),
                                lambda b, h, qi, ki: vis[b, h, qi, ki])
    try:
        tbm = TorchBlockMask.from_kv_blocks(**{n: (x.int() if torch.is_tensor(x) else x)
                                               for n, x in _bm_args(spec).items()})
        o = attn.attention(q, k, v, block_mask=tbm, **kw)
        e_attn = mods_cases.rel_error(o, want)
        fkw = dict(block_mask=tbm, score_mod=kw.get("score_mod"))
        if q.shape[1] != k.shape[1]:
            fkw["enable_gqa"] = True
        f = flex_attention(q, k, v, **fkw)
        e_flex = mods_cases.rel_error(f, want)
        e_same = mods_cases.rel_error(o, f.double().cpu())
    except Exception as e:
        import sys
        import traceback
        traceback.print_exc(file=sys.stderr)  # where, for the log; not checked
        print("%s: %s %s" % (label, type(e).__name__, str(e).splitlines()[0]))
        return
    tol = TOL[dtype]
    print("%s: attn %s, flex %s, attn vs flex %s" % (
        label, "PASS" if e_attn <= tol else "FAIL %.3e" % e_attn,
        "PASS" if e_flex <= tol else "FAIL %.3e" % e_flex,
        "PASS" if e_same <= 2 * tol else "FAIL %.3e" % e_same))


def round_trip(device, gen):
    """to_dense() against the loops of dense_blocks, for every case."""
    import attn
    bad = []
    for name, _, _, spec, _ in cases(device, gen):
        bm = attn.BlockMask.from_kv_blocks(**_bm_args(spec))
        want = dense_blocks(spec["kv_num_blocks"], spec["kv_indices"],
                            spec.get("full_kv_num_blocks"), spec.get("full_kv_indices"))
        got = bm.to_dense()
        if got.dtype != torch.int32 or got.device != spec["kv_indices"].device or \
                not torch.equal(got.cpu(), want):
            bad.append(name)
    print("round trip: %s" % ("PASS" if not bad else "FAIL " + ", ".join(bad)))


def flex_or_none():
    """(BlockMask, compiled flex_attention) of torch's flex, or None without it."""
    try:
        from torch.nn.attention.flex_attention import BlockMask, flex_attention
    except ImportError:
        return None
    return BlockMask, torch.compile(flex_attention, dynamic=False)


def run(device, flex=False):
    """What block_mask.test and block_mask_cuda.test print."""
    import attn
    gen = torch.Generator().manual_seed(28)
    round_trip(device, gen)
    for name, shapes, dtype, spec, kw in cases(device, gen):
        check(device, name, shapes, dtype, spec, kw, gen)
        if name in ("topk_128", "causal_full_partial", "cross_n_ne_m"):
            # Tiles smaller than the blocks: several tiles read one block.
            check(device, name, shapes, dtype, spec, kw, gen, tile_options="block-m=16 block-n=16")

    # The cached call: after the first call, a second BlockMask of the same
    # shapes (new lists) compiles nothing and takes the fast path, and its
    # lists reach the kernel; the block map is built once per BlockMask.
    q, k, v = (torch.randn(1, 2, 256, 16, generator=gen).to(device) for _ in range(3))
    specs = []
    for _ in range(2):
        c, ix = topk_lists(gen, 1, 2, 4, 4, 1)
        specs.append(dict(kv_num_blocks=c.to(device), kv_indices=ix.to(device), BLOCK_SIZE=64))
    bms = [attn.BlockMask.from_kv_blocks(**s) for s in specs]
    outs = [attn.attention(q, k, v, block_mask=bms[0])]
    before = attn.cache_stats()
    builds, real_build = [0], attn._program.build

    def counted_build(*a, **kw):  # the full path builds the program text; the fast one not
        builds[0] += 1
        return real_build(*a, **kw)
    attn._program.build = counted_build
    try:
        outs += [attn.attention(q, k, v, block_mask=bm) for bm in bms[1:] + bms]
    finally:
        attn._program.build = real_build
    after = attn.cache_stats()
    ok = all(mods_cases.rel_error(o, mods_cases.reference(
        q, k, v, mask_mod=lambda b, h, qi, ki, vis=visibility(s, 1, 2, 256, 256, device):
        vis[b, h, qi, ki])) <= 1e-4 for o, s in zip(outs, specs + specs))
    print("cached: compiles +%d, programs built +%d, memory hits +%d, outputs %s, one map %s" % (
        after["compiles"] - before["compiles"], builds[0],
        after["memory_hits"] - before["memory_hits"],
        "PASS" if ok and not torch.equal(outs[0], outs[1]) else "FAIL",
        "PASS" if bms[0].to_dense() is bms[0].to_dense() else "FAIL"))

    # The block mask's mask_mod reading a captured tensor, changed in place
    # between two cached calls: the fast path passes it as it is then.
    keep = (torch.arange(256) % 3 != 1).to(device)
    spec = dict(specs[0], mask_mod=lambda b, h, q_idx, kv_idx: keep[kv_idx])
    bm = attn.BlockMask.from_kv_blocks(**spec)
    attn.attention(q, k, v, block_mask=bm)
    attn._program.build = counted_build
    try:
        n = builds[0]
        o1 = attn.attention(q, k, v, block_mask=bm)
        keep[:100] = True
        o2 = attn.attention(q, k, v, block_mask=bm)
        n = builds[0] - n
    finally:
        attn._program.build = real_build
    cpu_keep = keep.cpu()
    vis = visibility(dict(spec, mask_mod_cpu=lambda b, h, q_idx, kv_idx: cpu_keep[kv_idx]),
                     1, 2, 256, 256, device)
    want = mods_cases.reference(q, k, v, mask_mod=lambda b, h, qi, ki: vis[b, h, qi, ki])
    print("cached, the block mask's mask_mod reading a tensor: programs built +%d, changed in "
          "place %s" % (n, "PASS" if mods_cases.rel_error(o2, want) <= 1e-4
                        and not torch.equal(o1, o2) else "FAIL"))

    if flex:
        fx = flex_or_none()
        print("flex_attention: %s" % ("present" if fx else "absent (torch %s)" % torch.__version__))
        if fx:
            for name, shapes, spec, kw in flex_cases(device, gen):
                flex_check(fx, device, name, shapes, spec, kw, gen)


def errors(device="cpu"):
    """Every error of from_kv_blocks and of attention(block_mask=), by its
    message's first line."""
    import attn
    gen = torch.Generator().manual_seed(3)
    c, ix = topk_lists(gen, 1, 2, 4, 4, 2)
    fc, fix = torch.ones(1, 2, 4, dtype=torch.int32), ix.clone()
    fix[..., 0] = ix[..., 2]

    def tried(what, fn):
        try:
            fn()
            print("%s: no error" % what)
        except (TypeError, ValueError, IndexError) as e:
            print("%s: %s %s" % (what, type(e).__name__, str(e).splitlines()[0]))

    mk = attn.BlockMask.from_kv_blocks
    tried("not a tensor", lambda: mk([2, 2], ix))
    tried("float counts", lambda: mk(c.float(), ix))
    tried("bool indices", lambda: mk(c, ix > 0))
    tried("rank of counts", lambda: mk(c[0], ix))
    tried("rank of indices", lambda: mk(c, ix[0]))
    tried("indices' shape", lambda: mk(c, ix[:, :, :3]))
    tried("empty", lambda: mk(c[:, :0], ix[:, :0]))
    tried("full alone", lambda: mk(c, ix, full_kv_num_blocks=fc))
    tried("full's shape", lambda: mk(c, ix, fc[:, :1], fix[:, :1]))
    tried("count beyond KB", lambda: mk(torch.where(torch.arange(4) == 1, 5, c).int(), ix))
    tried("negative count", lambda: mk(-c, ix))
    bad = ix.clone()
    bad[0, 1, 2, 1] = 4
    tried("index out of range", lambda: mk(c, bad))
    bad[0, 1, 2, 1] = -1
    tried("negative index", lambda: mk(c, bad))
    bad = ix.clone()
    bad[0, 1, 2, 3] = 99  # past the count: ignored, as flex does
    tried("index past the count", lambda: mk(c, bad, BLOCK_SIZE=32))
    dup = ix.clone()
    dup[0, 0, 1, 1] = dup[0, 0, 1, 0]
    tried("duplicate", lambda: mk(c, dup))
    tried("partial and full", lambda: mk(c, ix, fc, ix))
    tried("BLOCK_SIZE 0", lambda: mk(c, ix, BLOCK_SIZE=0))
    tried("BLOCK_SIZE float", lambda: mk(c, ix, BLOCK_SIZE=64.0))
    tried("BLOCK_SIZE bool", lambda: mk(c, ix, BLOCK_SIZE=True))
    tried("BLOCK_SIZE triple", lambda: mk(c, ix, BLOCK_SIZE=(64, 64, 64)))
    tried("seq_lengths not matching", lambda: mk(c, ix, BLOCK_SIZE=128, seq_lengths=(1000, 512)))
    tried("seq_lengths negative", lambda: mk(c, ix, seq_lengths=(-5, 512)))
    tried("mask_mod not callable", lambda: mk(c, ix, mask_mod=3))
    tried("mask_mod arity", lambda: mk(c, ix, mask_mod=lambda b, h, q: q > 0))
    meta = torch.empty(1, 2, 4, 4, dtype=torch.int32, device="meta")
    tried("devices of the lists", lambda: mk(c, meta))

    bm = mk(c, ix, BLOCK_SIZE=32)  # Q_LEN = KV_LEN = 128
    q = torch.randn(1, 2, 128, 16)
    tried("block_mask not a mask", lambda: attn.attention(q, q, q, block_mask=ix))
    tried("block_mask batch", lambda: attn.attention(torch.randn(3, 2, 128, 16),
                                                      torch.randn(3, 2, 128, 16),
                                                      torch.randn(3, 2, 128, 16),
                                                      block_mask=mk(c.repeat(2, 1, 1),
                                                                    ix.repeat(2, 1, 1, 1),
                                                                    BLOCK_SIZE=32)))
    tried("block_mask heads", lambda: attn.attention(torch.randn(1, 4, 128, 16), q, q,
                                                      block_mask=mk(c.repeat(1, 2, 1)[:, :3],
                                                                    ix.repeat(1, 2, 1, 1)[:, :3],
                                                                    BLOCK_SIZE=32)))
    tried("block_mask N", lambda: attn.attention(q[:, :, :100], q, q, block_mask=bm))
    tried("block_mask M", lambda: attn.attention(q, q[:, :, :120], q[:, :, :120], block_mask=bm))
    tried("block_mask device", lambda: attn.attention(*(torch.empty(1, 2, 128, 16, device="meta")
                                                        for _ in range(3)), block_mask=bm))
    tried("block_mask and program", lambda: attn.attention(q, q, q, block_mask=bm,
                                                            program="func.func @f() { }"))
    tried("q not 4-D", lambda: attn.attention(q[0], q, q, block_mask=bm))
    tried("block mask_mod not a bool", lambda: attn.attention(q, q, q, block_mask=mk(
        c, ix, BLOCK_SIZE=32, mask_mod=lambda b, h, qi, ki: qi - ki)))
    tried("mask_mod arity beside", lambda: attn.attention(q, q, q, block_mask=bm,
                                                           mask_mod=lambda b, h, qi: qi > 0))
    tried("block mask_mod not traceable", lambda: attn.attention(q, q, q, block_mask=mk(
        c, ix, BLOCK_SIZE=32, mask_mod=lambda b, h, qi, ki: torch.softmax(qi, 0) > 0)))

    class Duck:  # torch's flex BlockMask, by its attributes
        pass
    d = Duck()
    d.kv_num_blocks, d.kv_indices = c, ix
    d.full_kv_num_blocks = d.full_kv_indices = None
    d.BLOCK_SIZE, d.seq_lengths = (32, 32), (128, 128)

    def noop_mask(b, h, q_idx, kv_idx):  # torch's: b.new_ones(()), not traceable
        return b.new_ones(size=(), dtype=torch.bool)
    noop_mask.__module__ = "torch.nn.attention.flex_attention"
    d.mask_mod = noop_mask
    o = attn.attention(q, q, q, block_mask=d)
    vis = visibility(dict(kv_num_blocks=c, kv_indices=ix, BLOCK_SIZE=32), 1, 2, 128, 128, "cpu")
    want = mods_cases.reference(q, q, q, mask_mod=lambda b, h, qi, ki: vis[b, h, qi, ki])
    kept = d._attn_block_mask[1]
    o2 = attn.attention(q, q, q, block_mask=d)
    print("flex-like BlockMask (noop_mask): %s, converted once %s" % (
        "PASS" if mods_cases.rel_error(o, want) <= 1e-4 and torch.equal(o, o2) else "FAIL",
        "PASS" if d._attn_block_mask[1] is kept else "FAIL"))
    d.kv_indices = ix.flip(-1)  # rebound: converted again
    o3 = attn.attention(q, q, q, block_mask=d)
    vis = visibility(dict(kv_num_blocks=c, kv_indices=ix.flip(-1), BLOCK_SIZE=32), 1, 2, 128,
                     128, "cpu")
    want = mods_cases.reference(q, q, q, mask_mod=lambda b, h, qi, ki: vis[b, h, qi, ki])
    print("flex-like BlockMask rebound: %s" % (
        "PASS" if mods_cases.rel_error(o3, want) <= 1e-4 and d._attn_block_mask[1] is not kept
        else "FAIL"))
    text = attn.build_program(q, q, q, block_mask=bm)
    for line in text.splitlines():
        if line.strip().startswith("%mm"):
            print("body: " + line.strip())
    print("repr: %r" % bm)
    print("shape: %s" % (bm.shape,))
