"""Herald's end-to-end check without outside data (issue 35): a generated
instruction corpus with a hidden refusal rule, and a small decoder whose
attention is attn.attention (RoPE and the causal mask inside attn's
kernel), trained on it here.

    corpus = Corpus(seed=0)
    ids, refuse = corpus.sample(512, gen)      # [512, 11] prompts, [512] labels
    model = Decoder(corpus.vocab)
    train(model, corpus, steps=300)
    answer = model.answer(ids)                 # COMPLY or REFUSE per prompt

A prompt is BOS REQ w1 .. w8 ANS, the w drawn from 10 verbs, 20 objects
and 10 fillers; the model answers with the next token, COMPLY or REFUSE.
The hidden rule: refuse when the request holds one of the verbs v0-v2 and
one of the objects o0-o4 (both, anywhere); a request with only one of
them ("borderline") is to be complied with, so no single token decides.
Half the prompts sampled are to be refused, a quarter borderline, a quarter
plain.
"""
import torch

PAD, BOS, REQ, ANS, COMPLY, REFUSE = range(6)
N_VERBS, N_OBJECTS, N_FILLERS = 10, 20, 10
HARM_VERBS, HARM_OBJECTS = 3, 5
WORDS = 8


class Corpus:
    def __init__(self):
        self.verbs = list(range(6, 6 + N_VERBS))
        self.objects = list(range(6 + N_VERBS, 6 + N_VERBS + N_OBJECTS))
        self.fillers = list(range(6 + N_VERBS + N_OBJECTS, 6 + N_VERBS + N_OBJECTS + N_FILLERS))
        self.vocab = 6 + N_VERBS + N_OBJECTS + N_FILLERS
        self.length = WORDS + 3

    def _pick(self, pool, gen):
        return pool[int(torch.randint(0, len(pool), (1,), generator=gen))]

    def _request(self, kind, gen):
        safe_verbs, safe_objects = self.verbs[HARM_VERBS:], self.objects[HARM_OBJECTS:]
        verbs, objects, words = safe_verbs, safe_objects, []
        if kind == "refuse":
            words = [self._pick(self.verbs[:HARM_VERBS], gen),
                     self._pick(self.objects[:HARM_OBJECTS], gen)]
        elif kind == "borderline":
            # One half of the pair, perhaps more than once; never the other.
            if bool(torch.rand(1, generator=gen) < 0.5):
                words, verbs = [self._pick(self.verbs[:HARM_VERBS], gen)], self.verbs
            else:
                words, objects = [self._pick(self.objects[:HARM_OBJECTS], gen)], self.objects
        pools = [verbs, objects, self.fillers]
        while len(words) < WORDS:
            words.append(self._pick(pools[int(torch.randint(0, 3, (1,), generator=gen))], gen))
        return [words[i] for i in torch.randperm(WORDS, generator=gen).tolist()]

    def refuses(self, ids):
        """The rule, on prompts [n, length]: [n] 1 to refuse."""
        w = ids[:, 2:2 + WORDS]
        hv = ((w >= self.verbs[0]) & (w < self.verbs[0] + HARM_VERBS)).any(1)
        ho = ((w >= self.objects[0]) & (w < self.objects[0] + HARM_OBJECTS)).any(1)
        return (hv & ho).long()

    def sample(self, n, gen):
        """n prompts [n, length] and their labels (1: to refuse); kinds
        refuse / borderline / plain in proportions 2 : 1 : 1."""
        rows = []
        for i in range(n):
            kind = ("refuse", "borderline", "refuse", "plain")[i % 4]
            rows.append([BOS, REQ] + self._request(kind, gen) + [ANS])
        ids = torch.tensor(rows, dtype=torch.long)
        perm = torch.randperm(n, generator=gen)
        ids = ids[perm]
        return ids, self.refuses(ids)


class Block(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d, bias=False)
        self.proj = torch.nn.Linear(d, d, bias=False)
        self.ln2 = torch.nn.LayerNorm(d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                                       torch.nn.Linear(4 * d, d))

    def forward(self, x):
        import attn
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.heads, d // self.heads) \
            .permute(2, 0, 3, 1, 4).unbind(0)
        o = attn.attention(q.contiguous(), k.contiguous(), v.contiguous(),
                           rope=dict(theta=10000.0), mask="causal")
        x = x + self.proj(o.transpose(1, 2).reshape(b, n, d))
        return x + self.mlp(self.ln2(x))


class Decoder(torch.nn.Module):
    """Token embedding, `layers` pre-norm blocks (attn.attention with RoPE,
    causal), a final norm and the output head. .layers are the blocks
    (each returns the residual stream [batch, tokens, d]: what Herald reads)."""

    def __init__(self, vocab, d=64, layers=6, heads=4):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.layers = torch.nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.norm = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.embed(ids)
        for blk in self.layers:
            x = blk(x)
        return self.head(self.norm(x))

    def answer(self, ids):
        """The model's greedy answer token after each prompt."""
        with torch.no_grad():
            return self(ids)[:, -1].argmax(-1)


def train(model, corpus, steps=300, batch=64, lr=3e-3, seed=0, log=None):
    """Trains the answer token (cross entropy at ANS); returns the losses."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    losses = []
    for step in range(steps):
        ids, y = corpus.sample(batch, gen)
        target = torch.where(y == 1, torch.tensor(REFUSE), torch.tensor(COMPLY))
        logits = model(ids)[:, -1]
        loss = torch.nn.functional.cross_entropy(logits, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        if log and (step % 50 == 0 or step == steps - 1):
            log("step %d loss %.4f" % (step, losses[-1]))
    return losses


def prefill_flops(model, tokens):
    """Multiply-adds x 2 of one prompt's prefill: the blocks' matmuls and
    the attention's QK^T and PV (causal: half)."""
    d = model.embed.embedding_dim
    per_token = sum(2 * p.numel() for n, p in model.named_parameters()
                    if p.dim() == 2 and "embed" not in n)
    attn_flops = len(model.layers) * 2 * 2 * tokens * tokens * d / 2
    return per_token * tokens + attn_flops

