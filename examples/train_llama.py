"""Trains a small Llama-style decoder (RoPE, GQA, causal attention, RMSNorm,
SwiGLU) on text that every Debian or Ubuntu machine has, once with attn's
attention and once with PyTorch's SDPA (RoPE applied in torch), from the
same initial weights on the same batches, and prints both loss curves and
step times (issue 29, item 5). On a torch without SDPA (before 2.0) the
second run writes the same product out in torch.

    PYTHONPATH=python python3 examples/train_llama.py --steps 300 --json out.json
    PYTHONPATH=python python3 examples/train_llama.py --device cpu --steps 3 \
        --layers 1 --width 64 --heads 4 --kv-heads 2 --seq 64 --batch 2

The text is the concatenated files of /usr/share/common-licenses (the GPL,
Apache, Artistic and other licenses), read as bytes: a 256-symbol
vocabulary, no tokenizer to install. The first 90% of it trains, the rest
is held out. Both runs draw the same batches (one seeded generator each),
so their curves differ only by the attention kernels' rounding.
"""
import argparse
import glob
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import attn  # noqa: E402

TEXT_GLOB = "/usr/share/common-licenses/*"


def load_text(pattern=TEXT_GLOB):
    """The bytes of every regular file the pattern names, in name order."""
    data = bytearray()
    for path in sorted(glob.glob(pattern)):
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, "rb") as f:
                data += f.read()
    if len(data) < 10000:
        raise SystemExit("train_llama: too little text under %s (%d bytes)" % (pattern,
                                                                              len(data)))
    return torch.tensor(list(data), dtype=torch.long)


def rope_tables(n, d, theta, device):
    inv = theta ** (-torch.arange(0, d, 2, dtype=torch.float64, device=device) / d)
    ang = torch.arange(n, dtype=torch.float64, device=device)[:, None] * inv
    return ang.cos(), ang.sin()


def rope_torch(x, cos, sin):
    """rotate_half RoPE in torch (what SDPA's side runs before attention)."""
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    c, s = cos.to(x.dtype), sin.to(x.dtype)
    return torch.cat([a * c - b * s, b * c + a * s], -1)


class Attention(torch.nn.Module):
    def __init__(self, width, heads, kv_heads, theta, kernel):
        super().__init__()
        self.h, self.hk, self.d = heads, kv_heads, width // heads
        self.theta, self.kernel = theta, kernel
        self.wq = torch.nn.Linear(width, width, bias=False)
        self.wk = torch.nn.Linear(width, kv_heads * self.d, bias=False)
        self.wv = torch.nn.Linear(width, kv_heads * self.d, bias=False)
        self.wo = torch.nn.Linear(width, width, bias=False)
        self.tables = None

    def forward(self, x):
        b, n, _ = x.shape
        q = self.wq(x).view(b, n, self.h, self.d).transpose(1, 2)
        k = self.wk(x).view(b, n, self.hk, self.d).transpose(1, 2)
        v = self.wv(x).view(b, n, self.hk, self.d).transpose(1, 2)
        if self.kernel == "attn":
            o = attn.attention(q, k, v, rope=dict(theta=self.theta), mask="causal")
        else:
            if self.tables is None or self.tables[0].shape[0] != n:
                self.tables = rope_tables(n, self.d, self.theta, x.device)
            q, k = rope_torch(q, *self.tables), rope_torch(k, *self.tables)
            rep = self.h // self.hk
            k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            if hasattr(F, "scaled_dot_product_attention"):
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:  # torch before 2.0: the same product written out
                s = (q @ k.transpose(-1, -2)) / math.sqrt(self.d)
                s = s.masked_fill(torch.ones(n, n, dtype=torch.bool,
                                             device=x.device).triu(1), float("-inf"))
                o = s.softmax(-1) @ v
        return self.wo(o.transpose(1, 2).reshape(b, n, -1))


class RMSNorm(torch.nn.Module):
    def __init__(self, width, eps=1e-5):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * \
            self.weight


class Block(torch.nn.Module):
    def __init__(self, width, heads, kv_heads, theta, kernel):
        super().__init__()
        self.n1, self.n2 = RMSNorm(width), RMSNorm(width)
        self.attn = Attention(width, heads, kv_heads, theta, kernel)
        hidden = 256 * ((8 * width // 3 + 255) // 256)
        self.w1 = torch.nn.Linear(width, hidden, bias=False)
        self.w3 = torch.nn.Linear(width, hidden, bias=False)
        self.w2 = torch.nn.Linear(hidden, width, bias=False)

    def forward(self, x):
        x = x + self.attn(self.n1(x))
        h = self.n2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Decoder(torch.nn.Module):
    def __init__(self, layers, width, heads, kv_heads, theta=10000.0, kernel="attn"):
        super().__init__()
        self.embed = torch.nn.Embedding(256, width)
        self.blocks = torch.nn.ModuleList(Block(width, heads, kv_heads, theta, kernel)
                                          for _ in range(layers))
        self.norm = RMSNorm(width)
        self.head = torch.nn.Linear(width, 256, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x))


def batches(data, steps, batch, seq, seed, device):
    """steps batches of (input, target) windows, the same for every run of a seed."""
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        start = torch.randint(0, data.numel() - seq - 1, (batch,), generator=gen)
        rows = torch.stack([data[s:s + seq + 1] for s in start.tolist()])
        yield rows[:, :-1].to(device), rows[:, 1:].to(device)


def train(kernel, args, data, init_state=None):
    """Trains one model; returns (initial state, losses, step seconds, held-out loss)."""
    torch.manual_seed(args.seed)
    dtype = getattr(torch, args.dtype)
    model = Decoder(args.layers, args.width, args.heads, args.kv_heads, kernel=kernel)
    if init_state is not None:
        model.load_state_dict(init_state)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    model = model.to(device=args.device, dtype=dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95),
                            weight_decay=0.1, eps=1e-6 if dtype != torch.float32 else 1e-8)
    split = int(data.numel() * 0.9)
    losses, times = [], []
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    for step, (x, y) in enumerate(batches(data[:split], args.steps, args.batch, args.seq,
                                          args.seed, args.device)):
        lr = args.lr * min(1.0, (step + 1) / args.warmup)
        for g in opt.param_groups:
            g["lr"] = lr
        sync()
        t0 = time.perf_counter()
        logits = model(x)
        loss = F.cross_entropy(logits.float().view(-1, 256), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sync()
        times.append(time.perf_counter() - t0)
        losses.append(loss.item())
        if not math.isfinite(losses[-1]):
            raise SystemExit("train_llama: %s: loss is %s at step %d" % (kernel, losses[-1], step))
        if step % args.log_every == 0 or step == args.steps - 1:
            print("%s step %4d loss %.4f (%.1f ms)" % (kernel, step, losses[-1], times[-1] * 1e3),
                  flush=True)
    with torch.no_grad():
        held = []
        for x, y in batches(data[split:], 8, args.batch, args.seq, args.seed + 1, args.device):
            held.append(F.cross_entropy(model(x).float().view(-1, 256), y.reshape(-1)).item())
    return state, losses, times, sum(held) / len(held)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", default=None, help="bfloat16 on CUDA, float32 on the CPU")
    p.add_argument("--kernels", default="attn,sdpa", help="which runs, in order")
    p.add_argument("--log-every", type=int, default=25)
    p.add_argument("--json", help="write the curves and times here")
    args = p.parse_args(argv)
    if args.dtype is None:
        args.dtype = "bfloat16" if args.device.startswith("cuda") else "float32"
    return args


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2]


def main(argv=None):
    args = parse_args(argv)
    data = load_text()
    print("text: %d bytes from %s; model %d layers, width %d, %d/%d heads, seq %d, batch %d, %s"
          % (data.numel(), TEXT_GLOB, args.layers, args.width, args.heads, args.kv_heads,
             args.seq, args.batch, args.dtype))
    runs, state = {}, None
    for kernel in args.kernels.split(","):
        state, losses, times, held = train(kernel, args, data, state)
        # The first steps compile (attn) or autotune: the median is of the rest.
        rest = times[min(5, len(times) - 1):]
        runs[kernel] = dict(losses=losses, step_s=times, median_step_ms=median(rest) * 1e3,
                            heldout_loss=held)
        print("%s: final loss %.4f (mean of last 20: %.4f), held-out %.4f, median step %.1f ms"
              % (kernel, losses[-1], sum(losses[-20:]) / len(losses[-20:]), held,
                 median(rest) * 1e3))
    if len(runs) == 2:
        a, b = (runs[k]["losses"] for k in args.kernels.split(","))
        diff = [abs(x - y) for x, y in zip(a, b)]
        print("largest |loss difference| %.4f, mean %.4f over %d steps"
              % (max(diff), sum(diff) / len(diff), len(diff)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(args=vars(args), runs=runs, torch=torch.__version__,
                           device=(torch.cuda.get_device_name() if args.device.startswith("cuda")
                                   else "cpu")), f)


if __name__ == "__main__":
    main()
