#!/usr/bin/env python3
"""Score-modifier benchmark (issue 28): attn against flex_attention and cuDNN, one H200.

Programs (bf16, H=32, d=128, B*N = 32K tokens unless stated; every one causal):

  softcap-4096   softcap 30 + causal + GQA 32/8, N=4K
  alibi-4096     ALiBi (max_bias 8) + causal, N=4K
  alibi-8192     ALiBi (max_bias 8) + causal, N=8K
  window-32768   sliding window 4096 (left 4095, right 0) + causal + RoPE, N=32K, B=1
  rope-8192      RoPE + causal, N=8K (reference: the fast path today)
  rope-32768     RoPE + causal, N=32K, B=1 (reference: the window's program
                 without the window, to show that the window's time follows
                 its visible fraction)
  document-16384 a document mask (8 documents of uneven length) + causal +
                 RoPE, as a mask_mod reading the ids (and attn's segment_ids)
  relbias-4096   a relative-position bias table [2N-1] read by a score_mod
  gate-8192      SAS's gate (block 64) read by a score_mod (and attn's gate=)
  prefix-8192    prefix-LM: the first 1K keys bidirectional, a mask_mod
  d256-4096      head dim 256 + RoPE + causal, H=16, B=8
  prefill-1024   chunked prefill: 1K queries ending 16K keys (B=32), RoPE at
                 their positions (q_offset 15360), causal to the bottom right
                 as a mask_mod
  sparse-32768   block-sparse (Top-K): per head and query block of 128, 16
                 of the 256 key blocks of 128 kept (1/16), chosen at random;
                 not causal, B=1. attn gets attn.BlockMask.from_kv_blocks of
                 the lists (block_mask=), flex torch's BlockMask.from_kv_blocks
                 of the same tensors (mask_mod None: every key of a kept block
                 visible)

RoPE is Llama's rotate-half with theta 10000 over the whole head dim.

Each program is computed three ways in one process, on the same inputs:
  attn    attn.attention(q, k, v, rope=, mask="causal", window=, softcap=,
          alibi=): compiled once through attn.load (the same cache
          attn.attention uses), timed as the loaded kernel called with an
          output tensor; the kernels its manifest names say which path
          ran ("hopper-wgmma", "mma-sync", "plain" = lower-tile-to-gpu).
  flex    torch.compile(flex_attention) with score_mod (softcap:
          cap*tanh(s/cap); ALiBi: s - slope(h)*|q_idx - kv_idx|, slope(h) =
          2^(-8 (h+1)/H)) and a create_block_mask mask_mod (causal, and
          q_idx - kv_idx < 4096 for the window); enable_gqa for GQA. For
          RoPE programs "RoPE + flex": a compiled RoPE of q and k, with
          cos/sin tables made once, then flex.
  cuDNN   SDPA with SDPBackend.CUDNN_ATTENTION and is_causal=True, only
          where SDPA can express the program (causal, no softcap, ALiBi or
          window): the two RoPE references ("RoPE + cuDNN").
  and, labelled apart, ALiBi as an additive bf16 attn_mask on SDPA's
  memory-efficient backend (--alibi-bias; the bias tensor is built once,
  outside the timing; bf16 rounds the bias, so its error is larger).

Before anything is timed, every implementation's output on fresh random
inputs is checked against float64: three (batch, head) slices, and in each
a subset of the query rows (the first and last 32, 64 random ones, and the
rows at the window's edge), computed in float64 from exactly those rows and
all keys (never a full N x N float64 matrix). An output with a max relative
error (Frobenius, per slice) above 2e-2, or any NaN/inf anywhere, is
reported as WRONG, not timed, and makes the script exit 1.

Timing: one call first (with --skip-slow, an implementation slower than
--slow-seconds per call is not timed further); then --rounds rounds in
turn over the program's implementations, each a triton.testing.do_bench
median (L2 flushed); each keeps the median of its rounds. Calls over 250 ms
(attn's fallback paths) get one round of 1 to 5 calls (about 3 s) timed
with CUDA events, L2 flushed before each, and attn.attention's own call is
then not checked apart from the loaded kernel's. Programs not started
within --max-seconds (540) are skipped, so that one run fits the device
tool's 10 minutes; split a slow run with --programs.
TFLOP/s count the visible scores only: 4*B*H*d*(visible (i, j) pairs),
exactly (causal: N(N+1)/2; the window: its band), so attn_bench.py's
N^2/2 differs by 1/N. Ratios are times: attn/flex = attn ms / flex ms
(below 1: attn is faster).

Writes $OUT/mods_bench.md (the tables, also printed) and
$OUT/mods_bench.json (every time, error and the environment); OUT
defaults to /tmp.

Run it on the GPU machine with the attn libraries staged as for
attn_bench.py (bench/run_attn_bench.sh --stage BUILD on the CPU machine
fills .carry/; the device tool carries it with carry=[".carry"]):

  bash -c 'source bench/gpu_env.sh && setup && \\
           PYTHONPATH=python ATTN_LIBRARY_DIR=.carry/lib python3 bench/mods_bench.py'

  --quick            smaller shapes (4K tokens, window 1024) for a smoke run
  --skip-slow        do not time an implementation slower than --slow-seconds
                     (default 3) per call (attn's fallback paths)
  --programs=a,b     only these programs (a name, or its prefix: alibi)

A full run (flex compiles each program) may not fit in one 10-minute
command: add --skip-slow, or split it
with --programs (the JSON and the table cover the programs of one run).
The parts that need no GPU are checked by bench/mods_bench_selftest.py.
"""
import argparse
import dataclasses
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THETA = 10000.0
CAP = 30.0
MAX_BIAS = 8.0
TOL = 2e-2
SLOW_EVENT_MS = 250.0  # slower calls are timed with events, not do_bench


#===-- Programs -----------------------------------------------------------===#

@dataclasses.dataclass
class Program:
    name: str
    title: str
    N: int
    B: int
    H: int = 32
    Hkv: int = 32
    d: int = 128
    rope: bool = False
    causal: bool = True
    window: tuple = None  # (left, right), -1 unbounded
    softcap: float = None
    alibi: float = None
    # A program of the general forms (issue 28 item 1): its score_mod and
    # mask_mod, in flex's form, made by general_mods() on the device; the
    # mask_mod holds what the named masks above (causal, window) do not.
    general: str = None
    M: int = None  # keys, when not N (chunked prefill: queries end the keys)

    @property
    def keys(self):
        return self.N if self.M is None else self.M

    @property
    def q_offset(self):
        """The position of query 0: the queries end the keys."""
        return self.keys - self.N

    @property
    def sdpa(self):
        """Whether SDPA's is_causal expresses the program (cuDNN runs it)."""
        return (self.softcap is None and self.alibi is None and self.window is None
                and self.general is None)

    @property
    def visible(self):
        if self.general is not None:
            return general_visible(self)
        return visible_pairs(self.N, self.N, self.causal, self.window)

    @property
    def flops(self):
        # QK^T and PV: 2*d FLOPs each per visible score (dv = d).
        return 4.0 * self.B * self.H * self.d * self.visible

    def attn_kwargs(self):
        rope = None
        if self.rope:
            rope = dict(theta=THETA, q_offset=self.q_offset) if self.q_offset else dict(theta=THETA)
        return dict(rope=rope,
                    mask="causal" if self.causal else None, window=self.window,
                    softcap=self.softcap, alibi=self.alibi)

    def shape(self):
        return dict(B=self.B, N=self.N, M=self.keys, H=self.H, Hkv=self.Hkv, d=self.d)


def programs(quick=False):
    """The benchmark's programs: issue 28's shapes, or with quick smaller
    ones (4K tokens, a window of 1024) for a smoke run."""
    tokens = 4096 if quick else 32768
    w = 1024 if quick else 4096

    def n(full, small):
        return small if quick else full

    specs = [
        dict(kind="softcap", title="softcap %g + causal + GQA 32/8" % CAP, N=n(4096, 1024),
             Hkv=8, softcap=CAP),
        dict(kind="alibi", title="ALiBi (max_bias %g) + causal" % MAX_BIAS, N=n(4096, 1024),
             alibi=MAX_BIAS),
        dict(kind="alibi", title="ALiBi (max_bias %g) + causal" % MAX_BIAS, N=n(8192, 2048),
             alibi=MAX_BIAS),
        dict(kind="window", title="window %d (left %d, right 0) + causal + RoPE" % (w, w - 1),
             N=n(32768, 4096), rope=True, window=(w - 1, 0)),
        dict(kind="rope", title="RoPE + causal (reference: the fast path)", N=n(8192, 2048),
             rope=True),
        dict(kind="rope", title="RoPE + causal, full (reference for the window)",
             N=n(32768, 4096), rope=True),
        dict(kind="document", title="document mask (8 uneven documents) + causal + RoPE",
             N=n(16384, 2048), rope=True, general="document"),
        dict(kind="relbias", title="relative-position bias table [2N-1] + causal",
             N=n(4096, 1024), general="relbias"),
        dict(kind="gate", title="SAS gate (block %d) + causal" % GATE_BLOCK, N=n(8192, 2048),
             general="gate"),
        dict(kind="prefix", title="prefix-LM (first %d keys bidirectional)" % PREFIX,
             N=n(8192, 2048), causal=False, general="prefix"),
        dict(kind="d256", title="head dim 256 + RoPE + causal", N=n(4096, 1024), H=16, Hkv=16,
             d=256, rope=True),
        dict(kind="prefill", title="chunked prefill: 1K queries ending 16K keys + RoPE at offsets",
             N=n(1024, 256), M=n(16384, 2048), causal=False, rope=True, general="prefill"),
        dict(kind="sparse", title="block-sparse, 1/%d of the key blocks kept per query block "
             "(blocks of %d)" % (SPARSE_KEEP, SPARSE_BLOCK), N=n(32768, 4096), causal=False,
             general="sparse"),
    ]
    out = []
    for s in specs:
        kind = s.pop("kind")
        out.append(Program(name="%s-%d" % (kind, s["N"]), B=max(1, tokens // s["N"]), **s))
    return out


DOC_WEIGHTS = (5, 1, 3, 8, 2, 4, 6, 3)  # 8 documents of uneven length
PREFIX = 1024                           # prefix-LM: the first 1K keys bidirectional
GATE_BLOCK = 64
SPARSE_BLOCK = 128                      # block-sparse: blocks of 128 queries and keys,
SPARSE_KEEP = 16                        # 1/16 of the key blocks kept per query block


def doc_lengths(N):
    """The lengths of the 8 documents packed in N tokens (DOC_WEIGHTS)."""
    tot = sum(DOC_WEIGHTS)
    lens = [N * w // tot for w in DOC_WEIGHTS[:-1]]
    return lens + [N - sum(lens)]


def doc_ids(N, device):
    """int32 [N]: the document of each token."""
    return torch.cat([torch.full((n,), i, dtype=torch.int32)
                      for i, n in enumerate(doc_lengths(N))]).to(device)


def prefix_len(N):
    """The prefix-LM's bidirectional prefix: PREFIX keys, N/4 for tiny N."""
    return PREFIX if N >= 4 * PREFIX else N // 4


def gate_block(N):
    """The gate's key block: GATE_BLOCK, 4 for tiny N (the self-test)."""
    return GATE_BLOCK if N >= 16 * GATE_BLOCK else 4


def sparse_block(N):
    """The block-sparse program's block: SPARSE_BLOCK, 8 for tiny N (the
    self-test), so that there are at least SPARSE_KEEP key blocks."""
    return SPARSE_BLOCK if N >= SPARSE_KEEP * SPARSE_BLOCK else 8


def sparse_lists(prog, g):
    """The block-sparse program's lists, on the CPU: kv_num_blocks [1, H,
    QB] (each KB / SPARSE_KEEP) and kv_indices [1, H, QB, KB] (a random
    permutation of the key blocks per head and query block, its first
    kv_num_blocks kept), and the block size."""
    blk = sparse_block(prog.N)
    QB, KB = -(-prog.N // blk), -(-prog.keys // blk)
    keep = max(1, KB // SPARSE_KEEP)
    counts = torch.full((1, prog.H, QB), keep, dtype=torch.int32)
    indices = torch.rand(1, prog.H, QB, KB, generator=g).argsort(dim=-1).to(torch.int32)
    return counts, indices, blk


def general_visible(prog):
    """Visible (i, j) pairs of a general program (its named masks with it)."""
    N = prog.N
    if prog.general == "document":  # causal inside each document
        return sum(n * (n + 1) // 2 for n in doc_lengths(N))
    if prog.general == "prefix":    # (kv <= q) | (kv < P), not causal
        P = prefix_len(N)
        return P * P + sum(i + 1 for i in range(P, N))
    if prog.general == "prefill":   # kv <= q + M - N, not causal
        return sum(min(prog.keys, i + prog.q_offset + 1) for i in range(N))
    if prog.general == "sparse":    # per head: keep full blocks per query block
        blk = sparse_block(N)
        assert N % blk == 0 and prog.keys % blk == 0
        return N * max(1, prog.keys // blk // SPARSE_KEEP) * blk
    return visible_pairs(N, N, prog.causal, prog.window)


def general_mods(prog, device, seed=28):
    """The score_mod and mask_mod of a general program (flex's form: torch
    ops on the score and the indices, captured tensors read by index), the
    captured tensors, and how attn is called: attn.attention(score_mod=,
    mask_mod=) with the same functions, plus named forms where attn has
    them (labelled apart). The same functions give flex its program and the
    float64 reference its rows."""
    g = torch.Generator(device="cpu").manual_seed(seed + prog.N)
    N, B, H = prog.N, prog.B, prog.H
    out = dict(score_mod=None, mask_mod=None, named=None)
    if prog.general == "document":
        ids = doc_ids(N, device)

        def mask_mod(b, h, q_idx, kv_idx):
            return ids[q_idx] == ids[kv_idx]
        out.update(mask_mod=mask_mod, captures=dict(ids=ids),
                   named=("attn (segment_ids)",
                          dict(segment_ids=(ids.expand(B, N), ids.expand(B, N)))))
    elif prog.general == "relbias":
        bias = (torch.randn(2 * N - 1, generator=g) * 0.5).to(device)

        def score_mod(score, b, h, q_idx, kv_idx):
            return score + bias[q_idx - kv_idx + (N - 1)]
        out.update(score_mod=score_mod, captures=dict(bias=bias))
    elif prog.general == "gate":
        gb = gate_block(N)
        nb = (N + gb - 1) // gb
        gate = (-torch.rand(B, H, N, nb, generator=g) * 2.0).to(device)

        def score_mod(score, b, h, q_idx, kv_idx):
            return score + gate[b, h, q_idx, kv_idx // gb]
        out.update(score_mod=score_mod, captures=dict(gate=gate),
                   named=("attn (gate=)", dict(gate=(gate, gb))))
    elif prog.general == "prefix":
        P = prefix_len(N)

        def mask_mod(b, h, q_idx, kv_idx):
            return (kv_idx <= q_idx) | (kv_idx < P)
        out.update(mask_mod=mask_mod, captures={})
    elif prog.general == "prefill":
        off = prog.q_offset

        def mask_mod(b, h, q_idx, kv_idx):
            return kv_idx <= q_idx + off
        out.update(mask_mod=mask_mod, captures={})
    elif prog.general == "sparse":
        counts, indices, blk = sparse_lists(prog, g)
        counts, indices = counts.to(device), indices.to(device)
        # The reference's mask: the lists as a dense block map, made here
        # (scatter), apart from attn's.
        keep = int(counts[0, 0, 0])
        dense = torch.zeros(indices.shape, dtype=torch.bool, device=device)
        dense.scatter_(-1, indices[..., :keep].long(), True)

        def mask_mod(b, h, q_idx, kv_idx):
            return dense[0, h, q_idx // blk, kv_idx // blk]

        def attn_block_mask():
            import attn
            return attn.BlockMask.from_kv_blocks(counts, indices, BLOCK_SIZE=blk)

        def flex_block_mask():
            from torch.nn.attention.flex_attention import BlockMask
            return BlockMask.from_kv_blocks(counts, indices, BLOCK_SIZE=blk)
        out.update(mask_mod=mask_mod, captures=dict(counts=counts, indices=indices),
                   attn_block_mask=attn_block_mask, flex_block_mask=flex_block_mask,
                   lists=(counts, indices, blk))
    elif prog.general is not None:
        raise ValueError("mods_bench: no general program %r" % prog.general)
    return out


def select(progs, spec):
    """The programs spec ("a,b": names or name prefixes) names; all if empty."""
    if not spec:
        return progs
    want = [w.strip() for w in spec.split(",") if w.strip()]
    picked = [p for p in progs if any(p.name == w or p.name.startswith(w) for w in want)]
    unknown = [w for w in want if not any(p.name == w or p.name.startswith(w) for p in progs)]
    if unknown:
        raise SystemExit("mods_bench: no program named %s (have %s)"
                         % (", ".join(unknown), ", ".join(p.name for p in progs)))
    return picked


def visible_pairs(N, M, causal, window):
    """The number of (i, j), i < N, j < M, with key j visible to query i:
    j <= i when causal, i - left <= j <= i + right for window (left, right),
    -1 or None unbounded."""
    left, right = (-1, -1) if window is None else window
    left = -1 if left is None else left
    right = -1 if right is None else right
    if causal:
        right = 0 if right < 0 else min(right, 0)
    total = 0
    for i in range(N):
        lo = 0 if left < 0 else max(0, i - left)
        hi = M - 1 if right < 0 else min(M - 1, i + right)
        total += max(0, hi - lo + 1)
    return total


#===-- References (float64) and the modifiers of each implementation -------===#

def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope_tables(N, d, dtype, device, theta=THETA):
    """Llama's cos/sin tables [N, d] (rotate-half), made in float64 and rounded to dtype."""
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, device=device, dtype=torch.float64) / d))
    ang = torch.outer(torch.arange(N, device=device, dtype=torch.float64), inv)
    emb = torch.cat([ang, ang], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rope_qk(q, k, cos, sin, cos_k=None, sin_k=None):
    """q and k rotated; k by cos_k/sin_k when its positions differ from q's."""
    cos_k = cos if cos_k is None else cos_k
    sin_k = sin if sin_k is None else sin_k
    return q * cos + rotate_half(q) * sin, k * cos_k + rotate_half(k) * sin_k


def alibi_slopes(H, max_bias, device, dtype=torch.float32):
    """slope(h) = 2^(-max_bias (h+1) / H) for the query heads h."""
    return torch.tensor([2.0 ** (-max_bias * (h + 1) / H) for h in range(H)],
                        device=device, dtype=dtype)


def visible_mask(i, j, prog):
    """Boolean visibility of keys j to queries i (broadcasting int tensors)."""
    vis = torch.ones(torch.broadcast_shapes(i.shape, j.shape), dtype=torch.bool, device=i.device)
    if prog.causal:
        vis &= j <= i
    if prog.window is not None:
        left, right = prog.window
        if left is not None and left >= 0:
            vis &= j >= i - left
        if right is not None and right >= 0:
            vis &= j <= i + right
    return vis


def reference_rows(q, k, v, prog, b, h, rows, scale=None, mods=None):
    """float64 output rows `rows` (an int64 tensor of query indices) of batch
    b and query head h: RoPE, scale, softcap, ALiBi, then the masks, as
    attn's reference does; a row that sees no key gives 0. Costs one
    [len(rows), M] float64 score block, never N x M."""
    H, N, d = q.shape[1], q.shape[2], q.shape[3]
    Hk, M = k.shape[1], k.shape[2]
    dev = q.device
    rows = rows.to(dev)
    qh = q[b, h].index_select(0, rows).double()
    kh = k[b, h // (H // Hk)].double()
    vh = v[b, h // (H // Hk)].double()
    if prog.rope:
        off = prog.q_offset
        cq, sq = rope_tables(N + off, d, torch.float64, dev)
        cq, sq = cq[off:], sq[off:]
        ck, sk = rope_tables(M, d, torch.float64, dev)
        qh = qh * cq.index_select(0, rows) + rotate_half(qh) * sq.index_select(0, rows)
        kh = kh * ck + rotate_half(kh) * sk
    s = (qh @ kh.T) * (1.0 / math.sqrt(d) if scale is None else scale)
    i = rows[:, None]
    j = torch.arange(M, device=dev)[None, :]
    if prog.softcap is not None:
        s = prog.softcap * torch.tanh(s / prog.softcap)
    if prog.alibi is not None:
        s = s - 2.0 ** (-prog.alibi * (h + 1) / H) * (i - j).abs().double()
    bt = torch.tensor(b, device=dev)
    ht = torch.tensor(h, device=dev)
    if mods is not None and mods["score_mod"] is not None:
        s = mods["score_mod"](s, bt, ht, i, j).double()
    vis = visible_mask(i, j, prog)
    if mods is not None and mods["mask_mod"] is not None:
        vis = vis & mods["mask_mod"](bt, ht, i, j)
    s = s.masked_fill(~vis, float("-inf"))
    p = torch.softmax(s, dim=-1)
    p = torch.where(vis.any(-1, keepdim=True), p, torch.zeros_like(p))
    return p @ vh


def check_heads(prog):
    """The (batch, query head) slices checked: first, middle, last."""
    B, H = prog.B, prog.H
    return sorted({(0, 0), (B // 2, H // 2), (B - 1, H - 1)})


def check_rows(prog, seed=28):
    """The query rows checked: the first and last 32, 64 random ones, and
    those at the window's edge (left - 1 .. left + 2, 2 left + 1)."""
    N = prog.N
    s = set(range(min(32, N))) | set(range(max(0, N - 32), N))
    g = torch.Generator().manual_seed(seed + N)
    s |= set(torch.randint(0, N, (64,), generator=g).tolist())
    if prog.window is not None and prog.window[0] is not None and prog.window[0] >= 0:
        L = prog.window[0]
        s |= {x for x in (L - 1, L, L + 1, L + 2, 2 * L + 1) if 0 <= x < N}
    return torch.tensor(sorted(s), dtype=torch.int64)


def rel_err(a, ref):
    a = a.double()
    return ((a - ref).norm() / ref.norm().clamp_min(1e-300)).item()


def output_error(out, refs, heads, rows):
    """Max relative error of out's checked slices against refs (inf when
    out holds a NaN or an inf anywhere)."""
    if not bool(torch.isfinite(out).all()):
        return math.inf
    rows = rows.to(out.device)
    return max(rel_err(out[b, h].index_select(0, rows), ref) for (b, h), ref in zip(heads, refs))


def flex_score_mod(prog, slopes):
    """The flex score_mod of prog's modifiers (softcap, then ALiBi), or None.
    flex has scaled the score already, as attn's scale comes first."""
    cap, alibi = prog.softcap, prog.alibi
    if cap is None and alibi is None:
        return None

    def score_mod(score, b, h, q_idx, kv_idx):
        if cap is not None:
            score = cap * torch.tanh(score / cap)
        if alibi is not None:
            score = score - slopes[h] * (q_idx - kv_idx).abs()
        return score
    return score_mod


def flex_mask_mod(prog, extra=None):
    """The flex mask_mod of prog's masks: causal, and for a window (left,
    right) q_idx - kv_idx < left + 1 and kv_idx - q_idx < right + 1, and
    extra (a general program's mask_mod); None when every key is visible."""
    causal, window = prog.causal, prog.window
    left, right = (-1, -1) if window is None else (
        -1 if window[0] is None else window[0], -1 if window[1] is None else window[1])
    if not causal and left < 0 and right < 0 and extra is None:
        return None

    def mask_mod(b, h, q_idx, kv_idx):
        conds = [extra(b, h, q_idx, kv_idx)] if extra is not None else []
        if causal:
            conds.append(q_idx >= kv_idx)
        if left >= 0:
            conds.append(q_idx - kv_idx < left + 1)
        if right >= 0:
            conds.append(kv_idx - q_idx < right + 1)
        vis = conds[0]
        for c in conds[1:]:
            vis = vis & c
        return vis
    return mask_mod


def alibi_bias(prog, dtype, device):
    """SDPA's attn_mask for prog's ALiBi and masks: [1, H, N, M] of
    -slope(h)*|i - j| where visible, -inf elsewhere, in dtype (built head by
    head: a float32 [H, N, M] would be 8.6 GB at N=8K)."""
    N = M = prog.N
    i = torch.arange(N, device=device)[:, None]
    j = torch.arange(M, device=device)[None, :]
    dist = (i - j).abs().float()
    hidden = ~visible_mask(i, j, prog)
    bias = torch.empty(1, prog.H, N, M, dtype=dtype, device=device)
    for h in range(prog.H):
        slope = 2.0 ** (-prog.alibi * (h + 1) / prog.H)
        bias[0, h] = (dist * -slope).masked_fill(hidden, float("-inf")).to(dtype)
    return bias


#===-- Timing ---------------------------------------------------------------===#

class Timer:
    """do_bench medians (L2 flushed by do_bench), CUDA events for slow calls."""

    def __init__(self, warmup, rep):
        from triton.testing import do_bench
        self.do_bench = do_bench
        self.warmup, self.rep = warmup, rep
        self.flush = None

    def one_call(self, fn):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t) * 1e3

    def events(self, fn, n):
        if self.flush is None:
            self.flush = torch.empty(256 * 2 ** 20, dtype=torch.int8, device="cuda")
        times = []
        for _ in range(n):
            self.flush.zero_()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e))
        return statistics.median(times)

    def median_ms(self, fn, one_call_ms):
        if one_call_ms > SLOW_EVENT_MS:
            return self.events(fn, max(1, min(5, int(3000.0 / one_call_ms))))
        ms = self.do_bench(fn, warmup=self.warmup, rep=self.rep, quantiles=[0.5])
        return float(ms[0] if isinstance(ms, (list, tuple)) else ms)


#===-- The GPU run ----------------------------------------------------------===#

def configure_dynamo():
    import torch._dynamo
    # flex_attention recompiles per shape and per score_mod; the default
    # cache would fall back to eager (seconds per call) after eight.
    for name, val in (("cache_size_limit", 256), ("recompile_limit", 256),
                      ("accumulated_cache_size_limit", 4096),
                      ("accumulated_recompile_limit", 4096)):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, val)


def import_attn():
    """The attn module (python/ of this tree on sys.path, .carry/lib as the
    library folder when ATTN_LIBRARY_DIR is unset), or the error text."""
    carry = os.path.join(ROOT, ".carry", "lib")
    if not os.environ.get("ATTN_LIBRARY_DIR") and os.path.isdir(carry):
        os.environ["ATTN_LIBRARY_DIR"] = carry
    try:
        import attn  # noqa: F401
    except ImportError:
        sys.path.insert(0, os.path.join(ROOT, "python"))
    try:
        import attn
        attn.version()  # loads libattn: a missing library fails here, not mid-run
        return attn, None
    except Exception as ex:  # reported in every attn row
        return None, "%s: %s" % (type(ex).__name__, ex)


def attn_path(manifest):
    """The kernels of attn's manifest as 'kind+kind' ('plain' where a kernel
    names no kind: lower-tile-to-gpu)."""
    return "+".join(k.get("kernel", "plain") for k in manifest.get("kernels", [])) or "?"


def first_line(ex):
    text = "%s: %s" % (type(ex).__name__, ex)
    return text.splitlines()[0][:300]


class Ctx:
    """What every program's run shares: the compiled functions, attn, the timer."""

    def __init__(self, args):
        configure_dynamo()
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        self.create_block_mask = create_block_mask
        self.flex = torch.compile(flex_attention, dynamic=False)
        self.rope = torch.compile(rope_qk, dynamic=False)
        self.attn, self.attn_error = import_attn()
        self.timer = Timer(args.warmup, args.rep)
        self.args = args
        self.device = "cuda"

    def block_mask(self, mask_mod, N, M=None):
        if mask_mod is None:
            return None
        # Eager: _compile=True only warns since torch 2.6 (pytorch#137477), and
        # torch.compile(create_block_mask) can take minutes cold at some
        # lengths (pytorch#182060). At 32K the eager one makes an [N, N]
        # int64 temporary (8.6 GB), freed before anything is timed.
        return self.create_block_mask(mask_mod, None, None, N, N if M is None else M,
                                      device="cuda")


def implementations(ctx, prog, q, k, v, mods=None):
    """[(key, label, setup)] for prog: setup() returns (fn, info), fn a call
    that returns the output; it compiles whatever it needs. mods: a general
    program's functions (general_mods)."""
    gqa = prog.Hkv != prog.H
    impls = []

    def attn_public_setup(kw):
        # A general program's kernel takes its captures: timed as the user's
        # call, attn.attention (its cached call costs about 20 us of host
        # time, under 1% of these kernels).
        if ctx.attn is None:
            raise RuntimeError("attn not importable: " + ctx.attn_error)
        t = time.perf_counter()
        # The program's kernels, for the path (the same cache attention uses).
        where = "cuda:%d" % q.device.index
        kernel = ctx.attn.load(ctx.attn.build_program(q, k, v, **kw), where)
        o = ctx.attn.attention(q, k, v, **kw)
        torch.cuda.synchronize()
        info = dict(compile_s=time.perf_counter() - t, warm=True,
                    path=attn_path(kernel.manifest))
        del o
        return (lambda: ctx.attn.attention(q, k, v, **kw)), info

    if mods is not None and mods.get("attn_block_mask"):
        # block_mask=: the BlockMask (and its block map) made once, outside
        # the timing, as flex's.
        def block_mask_setup():
            if ctx.attn is None:
                raise RuntimeError("attn not importable: " + ctx.attn_error)
            return attn_public_setup(dict(prog.attn_kwargs(),
                                          block_mask=mods["attn_block_mask"]()))
        impls.append(("attn", "attn (block_mask=)", block_mask_setup))
    elif mods is not None:
        base = prog.attn_kwargs()
        kw = dict(base, score_mod=mods["score_mod"], mask_mod=mods["mask_mod"])
        impls.append(("attn", "attn", lambda: attn_public_setup(kw)))
        if mods.get("named"):
            label, named = mods["named"]
            if mods["mask_mod"] is None or "segment_ids" in named:
                nkw = dict(base, score_mod=None if "gate" in named else mods["score_mod"], **named)
                impls.append(("attn_named", label, lambda: attn_public_setup(nkw)))

    def attn_setup():
        if ctx.attn is None:
            raise RuntimeError("attn not importable: " + ctx.attn_error)
        kw = prog.attn_kwargs()
        t = time.perf_counter()
        where = "cpu" if q.device.type == "cpu" else "cuda:%d" % q.device.index
        kernel = ctx.attn.load(ctx.attn.build_program(q, k, v, **kw), where)
        compile_s = time.perf_counter() - t
        out = torch.full_like(q, float("nan"))
        info = dict(compile_s=compile_s, path=attn_path(kernel.manifest),
                    kernels=[dict(name=x.get("name"), kind=x.get("kernel", "plain"),
                                  grid=x.get("grid"), block=x.get("block"))
                             for x in kernel.manifest.get("kernels", [])],
                    public_call=lambda: ctx.attn.attention(q, k, v, **kw), warm=True)
        return (lambda: kernel(q, k, v, out)), info

    if mods is None:
        impls.append(("attn", "attn", attn_setup))

    cos = sin = cos_k = sin_k = None
    if prog.rope:
        cos_k, sin_k = rope_tables(prog.keys, prog.d, q.dtype, q.device)
        cos, sin = cos_k[prog.q_offset:], sin_k[prog.q_offset:]

    def flex_setup():
        t = time.perf_counter()
        if mods is not None and mods.get("flex_block_mask"):
            bm = mods["flex_block_mask"]()  # the lists, as attn's
        else:
            bm = ctx.block_mask(flex_mask_mod(prog, mods["mask_mod"] if mods else None), prog.N,
                                prog.keys)
        torch.cuda.synchronize()
        info = dict(block_mask_s=time.perf_counter() - t)
        slopes = alibi_slopes(prog.H, prog.alibi, q.device) if prog.alibi is not None else None
        sm = flex_score_mod(prog, slopes)
        if mods is not None and mods["score_mod"] is not None:
            sm = mods["score_mod"]
        kw = dict(score_mod=sm, block_mask=bm)
        if gqa:
            kw["enable_gqa"] = True
        if prog.rope:
            return (lambda: ctx.flex(*ctx.rope(q, k, cos, sin, cos_k, sin_k), v, **kw)), info
        return (lambda: ctx.flex(q, k, v, **kw)), info

    impls.append(("flex", "RoPE + flex" if prog.rope else "flex", flex_setup))

    from torch.nn.attention import SDPBackend, sdpa_kernel
    import torch.nn.functional as F
    if prog.sdpa:
        def cudnn_setup():
            kw = dict(is_causal=prog.causal)
            if gqa:
                kw["enable_gqa"] = True

            def fn():
                with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                    rq, rk = ctx.rope(q, k, cos, sin) if prog.rope else (q, k)
                    return F.scaled_dot_product_attention(rq, rk, v, **kw)
            return fn, {}
        impls.append(("cudnn", "RoPE + cuDNN" if prog.rope else "cuDNN", cudnn_setup))

    if prog.alibi is not None and prog.window is None and not prog.rope and not gqa:
        backends = dict(efficient=SDPBackend.EFFICIENT_ATTENTION,
                        cudnn=SDPBackend.CUDNN_ATTENTION)
        for name in [b for b in ctx.args.alibi_bias.split(",") if b and b != "none"]:
            if name not in backends:
                raise SystemExit("mods_bench: --alibi-bias takes efficient, cudnn or none")

            def bias_setup(be=backends[name]):
                t = time.perf_counter()
                bias = alibi_bias(prog, q.dtype, q.device)
                torch.cuda.synchronize()
                info = dict(bias_s=time.perf_counter() - t, bias_gb=bias.numel() * 2 / 1e9)

                def fn():
                    with sdpa_kernel([be]):
                        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
                return fn, info
            label = "SDPA %s + ALiBi bias tensor" % ("mem-efficient" if name == "efficient"
                                                     else "cuDNN")
            impls.append(("sdpa_%s_bias" % name, label, bias_setup))
    return impls


def run_program(ctx, prog, deadline):
    """Checks and times every implementation of prog; returns its JSON row."""
    args = ctx.args
    row = dict(program=prog.name, title=prog.title, **prog.shape(), rope=prog.rope,
               causal=prog.causal, window=prog.window, softcap=prog.softcap, alibi=prog.alibi,
               general=prog.general, theta=THETA if prog.rope else None,
               visible_pairs=prog.visible,
               visible_fraction=prog.visible / (prog.N * prog.keys), flops=prog.flops, impls={})
    torch.manual_seed(args.seed + prog.N + 7 * prog.Hkv)
    dev = ctx.device
    q = torch.randn(prog.B, prog.H, prog.N, prog.d, device=dev, dtype=torch.bfloat16)
    k = torch.randn(prog.B, prog.Hkv, prog.keys, prog.d, device=dev, dtype=torch.bfloat16)
    v = torch.randn(prog.B, prog.Hkv, prog.keys, prog.d, device=dev, dtype=torch.bfloat16)
    heads, rows = check_heads(prog), check_rows(prog, args.seed)
    mods = general_mods(prog, dev, args.seed) if prog.general else None
    refs = [reference_rows(q, k, v, prog, b, h, rows, mods=mods) for b, h in heads]
    row["checked"] = dict(heads=heads, rows=len(rows))
    print("== %s: %s, B=%d N=%d H=%d/%d d=%d, %.3g TFLOP, visible %.3f"
          % (prog.name, prog.title, prog.B, prog.N, prog.H, prog.Hkv, prog.d, prog.flops / 1e12,
             row["visible_fraction"]), flush=True)
    timed = []
    for key, label, setup in implementations(ctx, prog, q, k, v, mods):
        r = dict(label=label)
        row["impls"][key] = r
        try:
            t = time.perf_counter()
            fn, info = setup()
            public = info.pop("public_call", None)
            warm = info.pop("warm", False)
            r.update(info)
            torch.cuda.synchronize()
            t_call = time.perf_counter()
            o = fn()
            torch.cuda.synchronize()
            call_ms = (time.perf_counter() - t_call) * 1e3
            r["first_call_s"] = time.perf_counter() - t
            err = output_error(o, refs, heads, rows)
            del o
            # attn's setup compiled and loaded its kernel, so that call was a
            # plain one; flex and SDPA compile on their first call.
            slow = warm and call_ms > SLOW_EVENT_MS
            if public is not None and not slow:
                # attn.attention itself, through the cache: the user's call.
                o = public()
                torch.cuda.synchronize()
                err = max(err, output_error(o, refs, heads, rows))
                del o
                r["public_call_checked"] = True
            r["ok"] = err <= TOL
            r["relerr"] = err if math.isfinite(err) else None  # JSON has no inf
            if not r["ok"]:
                print("  %s: WRONG: %s; not timed"
                      % (label, "max rel. error %.3g > %g against float64" % (err, TOL)
                         if r["relerr"] is not None else "NaN or inf in the output"),
                      file=sys.stderr, flush=True)
                continue
            r["one_call_ms"] = call_ms if slow else ctx.timer.one_call(fn)
            if args.skip_slow and r["one_call_ms"] > args.slow_seconds * 1e3:
                r["skipped"] = "%.1f s per call > --slow-seconds %g" % (
                    r["one_call_ms"] / 1e3, args.slow_seconds)
                print("  %s: rel.err %.2e, %s: not timed" % (label, err, r["skipped"]), flush=True)
                continue
            timed.append((r, fn))
            print("  %s: rel.err %.2e, first call %.1f s, one call %.3f ms%s"
                  % (label, err, r["first_call_s"], r["one_call_ms"],
                     ", path " + r["path"] if "path" in r else ""), flush=True)
        except Exception as ex:  # an implementation that cannot run is reported, not fatal
            r["error"] = first_line(ex)
            print("  %s: ERROR %s" % (label, r["error"]), flush=True)
    for n in range(args.rounds):
        if n and time.time() > deadline:
            print("  out of time after %d rounds" % n, flush=True)
            break
        for r, fn in timed:
            # Calls over SLOW_EVENT_MS (attn's fallback paths) get one round:
            # next to a 100x gap the clocks' drift does not matter.
            if n == 0 or r["one_call_ms"] <= SLOW_EVENT_MS:
                r.setdefault("ms_rounds", []).append(ctx.timer.median_ms(fn, r["one_call_ms"]))
    for r, _ in timed:
        if r.get("ms_rounds"):
            r["ms"] = statistics.median(r["ms_rounds"])
            r["tflops"] = prog.flops / r["ms"] / 1e9
            print("  %s: %s ms -> %.3f ms, %.0f TFLOP/s"
                  % (r["label"], " ".join("%.3f" % x for x in r["ms_rounds"]), r["ms"],
                     r["tflops"]), flush=True)
    a = row["impls"].get("attn", {}).get("ms")
    row["ratios"] = {key: a / r["ms"] for key, r in row["impls"].items()
                     if key != "attn" and a and r.get("ms")}
    del q, k, v, refs, timed, mods
    torch.cuda.empty_cache()
    return row


def command_output(cmd):
    """cmd's stdout, stripped; '' when it cannot run (no nvidia-smi, no .git)."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def run_meta(args):
    props = torch.cuda.get_device_properties(0)
    smi = command_output(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,power.limit",
                          "--format=csv,noheader", "--id=%d" % torch.cuda.current_device()])
    import triton
    attn, err = import_attn()
    # The carried build's commit (bench/gpu_env.sh's stage writes it): the
    # GPU machine's copy of the tree may have a stale .git, or none.
    commit = None
    carried = os.path.join(os.environ.get("ATTN_CARRY", ""), "commit")
    if os.environ.get("ATTN_CARRY") and os.path.exists(carried):
        commit = open(carried).read().strip() or None
    commit = commit or command_output(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    return dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                gpu=props.name, sms=props.multi_processor_count,
                driver=smi.split(",")[0].strip() if smi else None, nvidia_smi=smi,
                torch=torch.__version__, cuda=torch.version.cuda,
                cudnn=torch.backends.cudnn.version(), triton=triton.__version__,
                python=platform.python_version(), attn=attn.version() if attn else err,
                commit=commit or None, quick=args.quick, rounds=args.rounds,
                do_bench=dict(warmup_ms=args.warmup, rep_ms=args.rep), tol=TOL)


#===-- Tables ---------------------------------------------------------------===#

def fmt(x, spec=".3f", none="—"):
    return none if x is None else format(x, spec)


def impl_cell(r, what):
    """ms or TFLOP/s of an implementation, or why there is none."""
    if r is None:
        return "n/a"
    if what != "ms" and r.get("tflops") is None:
        return "—"
    if r.get("error"):
        return "error"
    if r.get("ok") is False:
        return "WRONG"
    if r.get("skipped"):
        return "skipped (%.1f s/call)" % (r["one_call_ms"] / 1e3)
    return fmt(r.get(what), ".3f" if what == "ms" else ".0f")


def table(rows, meta):
    m = meta
    out = ["# Score modifiers: attn against flex_attention and cuDNN (bench/mods_bench.py, issue 28)", "",
           "Date: %s; GPU: %s (%s SMs); driver %s; torch %s; CUDA %s; cuDNN %s; triton %s; "
           "python %s; attn %s%s%s." % (m["date"], m["gpu"], m["sms"], m["driver"], m["torch"],
                                       m["cuda"], m["cudnn"], m["triton"], m["python"], m["attn"],
                                       ", commit " + m["commit"] if m.get("commit") else "",
                                       "; --quick shapes" if m["quick"] else ""),
           "",
           "bf16, causal, RoPE rotate-half theta=%g where named. TFLOP/s count visible scores only "
           "(4*B*H*d*pairs). Times: median of %d rounds timed in turn, each a triton do_bench "
           "median (L2 flushed). attn/X = attn ms / X ms (below 1: attn faster). 'n/a': SDPA "
           "cannot express the program. flex = flex_attention (torch.compile) with score_mod and "
           "a block mask; for RoPE programs a compiled RoPE first ('RoPE + flex')."
           % (THETA, m["rounds"]),
           "",
           "| program | B | N | H/Hkv | visible | attn path | attn ms | attn TFLOP/s | flex ms | "
           "flex TFLOP/s | cuDNN ms | cuDNN TFLOP/s | attn/flex | attn/cuDNN |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        im = row["impls"]
        a, f, c = im.get("attn"), im.get("flex"), im.get("cudnn")
        rat = row.get("ratios", {})
        out.append("| %s | %d | %d | %d/%d | %.3f | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row["title"], row["B"], row["N"], row["H"], row["Hkv"], row["visible_fraction"],
            (a or {}).get("path", "—"), impl_cell(a, "ms"), impl_cell(a, "tflops"),
            impl_cell(f, "ms"), impl_cell(f, "tflops"), impl_cell(c, "ms"), impl_cell(c, "tflops"),
            fmt(rat.get("flex"), ".2f"), fmt(rat.get("cudnn"), ".2f")))
    extra = [(row, key, r) for row in rows for key, r in row["impls"].items()
             if key not in ("attn", "flex", "cudnn")]
    if extra:
        out += ["", "Other anchors (labelled: not the same computation in every bit; the bias "
                "is a bf16 tensor made once, outside the timing):", "",
                "| program | N | anchor | ms | TFLOP/s | attn/anchor | rel.err |", "|---|---|---|---|---|---|---|"]
        for row, key, r in extra:
            out.append("| %s | %d | %s | %s | %s | %s | %s |" % (
                row["title"], row["N"], r["label"], impl_cell(r, "ms"), impl_cell(r, "tflops"),
                fmt(row.get("ratios", {}).get(key), ".2f"), fmt(r.get("relerr"), ".1e")))
    out += ["", "Checks (max relative error over %s against float64; WRONG above %g) and first calls:"
            % ("3 (batch, head) slices x the checked query rows", TOL), "",
            "| program | N | rows checked | attn rel.err | flex rel.err | cuDNN rel.err | attn compile s | "
            "attn one call ms | flex first call s | errors |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        im = row["impls"]
        a, f, c = im.get("attn", {}), im.get("flex", {}), im.get("cudnn", {})
        errs = "; ".join("%s: %s" % (r["label"], r["error"]) for r in im.values() if r.get("error"))
        out.append("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            row["title"], row["N"], row["checked"]["rows"], fmt(a.get("relerr"), ".1e"),
            fmt(f.get("relerr"), ".1e"), fmt(c.get("relerr"), ".1e"), fmt(a.get("compile_s"), ".2f"),
            fmt(a.get("one_call_ms"), ".3f"), fmt(f.get("first_call_s"), ".1f"),
            errs.replace("|", "\\|") or "—"))
    out += window_lines(rows)
    return "\n".join(out)


def window_lines(rows):
    """The window's time against the full causal program's at its N, beside
    its visible fraction: the ratio the times should follow."""
    out = []
    for w in rows:
        if w["window"] is None:
            continue
        full = [r for r in rows if r["window"] is None and r["rope"] == w["rope"] and r["N"] == w["N"]
                and r["B"] == w["B"] and r["softcap"] is None and r["alibi"] is None
                and r.get("general") is None]
        if not full:
            continue
        full = full[0]
        frac = w["visible_pairs"] / full["visible_pairs"]
        cells = []
        for key in ("attn", "flex", "cudnn"):
            a, b = w["impls"].get(key, {}).get("ms"), full["impls"].get(key, {}).get("ms")
            if a and b:
                cells.append("%s %.3f" % (w["impls"][key]["label"], a / b))
        out += ["", "Window against full causal at N=%d: visible pairs %.3f of causal; time "
                "window/full: %s." % (w["N"], frac, ", ".join(cells) or "—")]
    return out


#===-- Main -----------------------------------------------------------------===#

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="attn against flex_attention and cuDNN on score "
                                 "modifiers (issue 28); see the module docstring.")
    ap.add_argument("--quick", action="store_true", help="smaller shapes for a smoke run")
    ap.add_argument("--skip-slow", action="store_true",
                    help="do not time implementations slower than --slow-seconds per call")
    ap.add_argument("--slow-seconds", type=float, default=3.0)
    ap.add_argument("--programs", default="", help="comma-separated names or prefixes")
    ap.add_argument("--rounds", type=int, default=None, help="rounds in turn (default 5, quick 2)")
    ap.add_argument("--warmup", type=int, default=25, help="do_bench warmup ms")
    ap.add_argument("--rep", type=int, default=100, help="do_bench rep ms")
    ap.add_argument("--alibi-bias", default="efficient",
                    help="SDPA backends given ALiBi as a bias tensor: efficient, cudnn, none")
    ap.add_argument("--seed", type=int, default=28)
    ap.add_argument("--max-seconds", type=float, default=540.0,
                    help="skip programs not started by then (default 540)")
    ap.add_argument("--out", default=None, help="output folder (default $OUT, else /tmp)")
    ap.add_argument("--list", action="store_true", help="print the programs and exit")
    a = ap.parse_args(argv)
    if a.rounds is None:
        a.rounds = 2 if a.quick else 5
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    a.out = a.out or os.environ.get("OUT") or "/tmp"
    return a


def main(argv=None):
    args = parse_args(argv)
    progs = select(programs(args.quick), args.programs)
    if args.list:
        for p in progs:
            print("%-13s %-48s B=%-2d N=%-5d H=%d/%d d=%d visible %.3f %.3g TFLOP"
                  % (p.name, p.title, p.B, p.N, p.H, p.Hkv, p.d, p.visible / (p.N * p.keys),
                     p.flops / 1e12))
        return 0
    if not torch.cuda.is_available():
        raise SystemExit("mods_bench: no CUDA device (torch %s); bench/mods_bench_selftest.py runs without one"
                         % torch.__version__)
    os.makedirs(args.out, exist_ok=True)
    deadline = time.time() + args.max_seconds
    meta = run_meta(args)
    ctx = Ctx(args)
    rows, skipped = [], []
    for p in progs:
        if time.time() > deadline:
            print("skipping %s: out of time (--max-seconds %g)" % (p.name, args.max_seconds))
            skipped.append(p.name)
            continue
        rows.append(run_program(ctx, p, deadline))
        with open(os.path.join(args.out, "mods_bench.json"), "w") as f:
            json.dump(dict(meta=meta, rows=rows, skipped=skipped), f, indent=1)
    with open(os.path.join(args.out, "mods_bench.json"), "w") as f:
        json.dump(dict(meta=meta, rows=rows, skipped=skipped), f, indent=1)
    md = table(rows, meta)
    if skipped:
        md += "\n\nNot run (out of time): %s." % ", ".join(skipped)
    with open(os.path.join(args.out, "mods_bench.md"), "w") as f:
        f.write(md + "\n")
    print(md)
    wrong = ["%s %s (%s)" % (row["program"], r["label"], fmt(r["relerr"], ".3g", "NaN/inf"))
             for row in rows for r in row["impls"].values() if r.get("ok") is False]
    if wrong:
        print("mods_bench: FAILED the float64 check: " + "; ".join(wrong), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
