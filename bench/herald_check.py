#!/usr/bin/env python3
"""Herald's checks (issue 35), one command, no outside data:

    /usr/bin/python3 bench/herald_check.py --out bench/raw/DATE-herald.json \\
        --report bench/raw/DATE-herald.md [--charts bench/herald]
    /usr/bin/python3 bench/herald_check.py --quick --out /tmp/h.json --report /tmp/h.md
    /usr/bin/python3 bench/herald_check.py --hf-model DIR --prompts FILE.jsonl --out ... --report ...

1. Synthetic states with planted directions (attn.herald.synthetic): how
   well each layer's direction is recovered (cosine to the population LDA
   direction), the features against the planted onsets, and F1 against
   samples per class (10 to 1,000, three seeds) for Herald, the best
   single-layer probe and a last-layer linear probe.
2. End to end: the small decoder of attn.herald.toy (attention through
   attn.attention) trained here on the generated instruction corpus with a
   hidden refusal rule; Herald reading its prefill through forward hooks;
   the same F1 table; the refusal rate before and after zero-projecting
   the harm direction at the peak-monotonicity layer (and at every layer,
   and the classes' mean difference at every layer for comparison);
   the probe's cost against the prefill's, measured and counted.
3. With --hf-model and --prompts: a local Hugging Face-format causal LM
   (transformers) and a JSON-lines file of {"prompt": text, "label": 0 or
   1}: Herald fitted on half the prompts (each class split in two), F1 on
   the other half, against the single-layer and last-layer probes.

The probes compared: Herald (per-layer LDA, seven trajectory features, the
288-parameter MLP); the single-layer probe (one layer's LDA projection
against its midpoint, the layer with the best F1 on the training prompts);
the last-layer linear probe (logistic regression on the last layer's
state, weight decay 1e-2, LBFGS). Writes the JSON (--out), the tables
(--report) and, where matplotlib imports, the trajectories' chart
(--charts PREFIX: PREFIX_trajectories.png).
"""
import argparse
import datetime
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402

import chart_util  # noqa: E402  (bench/, the script's folder)

from attn import herald as H  # noqa: E402
from attn.herald import synthetic as S  # noqa: E402

SIZES = (10, 30, 100, 300, 1000)


def f1(pred, y):
    tp = int(((pred == 1) & (y == 1)).sum())
    fp = int(((pred == 1) & (y == 0)).sum())
    fn = int(((pred == 0) & (y == 1)).sum())
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0


def take(states, labels, per_class, gen):
    """per_class prompts of each class, at random."""
    idx = []
    for c in (1, 0):
        pool = torch.nonzero(labels == c).squeeze(1)
        idx.append(pool[torch.randperm(len(pool), generator=gen)[:per_class]])
    idx = torch.cat(idx)
    return states[idx], labels[idx]


def logistic(x, y, wd=1e-2):
    """A linear probe: logistic regression on standardised x, LBFGS."""
    mean, std = x.mean(0), x.std(0).clamp_min(1e-6)
    xs = ((x - mean) / std).double()
    w = torch.zeros(x.shape[1] + 1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w], max_iter=200, line_search_fn="strong_wolfe")
    yt = y.double()

    def closure():
        opt.zero_grad()
        logit = xs @ w[:-1] + w[-1]
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logit, yt) \
            + wd * (w[:-1] ** 2).sum() / 2
        loss.backward()
        return loss
    opt.step(closure)
    wd_ = w.detach()
    return lambda z: ((((z - mean) / std).double() @ wd_[:-1] + wd_[-1]) > 0).long()


def compare(train_s, train_y, test_s, test_y, seed=0):
    """F1 on the test prompts of Herald, the best single layer and the
    last-layer linear probe, fitted on the training prompts."""
    probe = H.Herald.fit(train_s, train_y)
    probe.train_classifier(train_s, train_y, seed=seed)
    out = dict(herald=f1(probe.predict(test_s), test_y))
    ztr, zte = probe.trajectory(train_s), probe.trajectory(test_s)
    best = max(range(probe.layers), key=lambda l: f1((ztr[:, l] > 0).long(), train_y))
    out["single_layer"] = f1((zte[:, best] > 0).long(), test_y)
    out["single_layer_index"] = best
    lin = logistic(train_s[:, -1].float(), train_y)
    out["last_layer_linear"] = f1(lin(test_s[:, -1].float()), test_y)
    return out, probe


def f1_table(states, labels, test_s, test_y, sizes, seeds):
    rows = []
    for n in sizes:
        for seed in range(seeds):
            g = torch.Generator().manual_seed(100 + seed)
            s, y = take(states, labels, n, g)
            r, _ = compare(s, y, test_s, test_y, seed)
            rows.append(dict(per_class=n, seed=seed, **r))
    return rows


def synthetic_part(args):
    out = {}
    big = S.planted(max(SIZES), seed=0)
    test = S.planted(1000 if not args.quick else 200, seed=1)
    probe = H.Herald.fit(big.states, big.labels)
    cos = (probe.directions * big.truth).sum(1).tolist()
    t = [i / (probe.layers - 1) for i in range(probe.layers)]
    out["recovery"] = dict(cosine=cos, depth=t, shrinkage=probe.shrinkage)
    # Features against the planted onset.
    onsets = []
    for onset in (0.3, 0.45, 0.6):
        d = S.planted(300, onset=onset, seed=2)
        p = H.Herald.fit(d.states, d.labels)
        f = p.features(d.states)
        harm = f[d.labels == 1].mean(0).tolist()
        safe = f[d.labels == 0].mean(0).tolist()
        onsets.append(dict(planted=onset, harmful=dict(zip(H.FEATURES, harm)),
                           harmless=dict(zip(H.FEATURES, safe))))
    out["features"] = onsets
    sizes = SIZES[:2] if args.quick else SIZES
    out["f1"] = f1_table(big.states, big.labels, test.states, test.labels, sizes, args.seeds)
    z = probe.trajectory(test.states)
    out["trajectories"] = dict(harmful=z[test.labels == 1].mean(0).tolist(),
                               harmful_sd=z[test.labels == 1].std(0).tolist(),
                               harmless=z[test.labels == 0].mean(0).tolist(),
                               harmless_sd=z[test.labels == 0].std(0).tolist())
    return out


def states_of(model, layers, ids, batch=500):
    """Last-token states [n, L, d] of prompts ids, read by forward hooks."""
    parts = []
    with torch.no_grad():
        for i in range(0, len(ids), batch):
            with H.read_states(layers) as run:
                model(ids[i:i + batch])
            parts.append(run.stacked())
    return torch.cat(parts)


def toy_part(args):
    from attn.herald import toy
    torch.manual_seed(0)
    corpus = toy.Corpus()
    model = toy.Decoder(corpus.vocab, d=args.toy_d, layers=args.toy_layers)
    t0 = time.time()
    losses = toy.train(model, corpus, steps=args.toy_steps, seed=0,
                       log=lambda m: print("herald_check: toy " + m, file=sys.stderr))
    train_s = time.time() - t0
    model.eval()
    gen = torch.Generator().manual_seed(7)
    pool_ids, pool_y = corpus.sample(2 * max(SIZES) + 400 if not args.quick else 200, gen)
    test_ids, test_y = corpus.sample(2000 if not args.quick else 200,
                                     torch.Generator().manual_seed(8))
    layers = list(model.layers)
    pool_s = states_of(model, layers, pool_ids)
    test_s = states_of(model, layers, test_ids)
    answers = model.answer(test_ids)
    out = dict(train_seconds=train_s, loss_first=losses[0], loss_last=losses[-1],
               test_prompts=len(test_ids), tokens=int(test_ids.shape[1]),
               accuracy=float(((answers == toy.REFUSE).long() == test_y).float().mean()))
    sizes = [n for n in (SIZES[:2] if args.quick else SIZES) if 2 * n <= len(pool_ids)]
    out["f1"] = f1_table(pool_s, pool_y, test_s, test_y, sizes, args.seeds)
    n_fit = min(max(SIZES), int((pool_y == 1).sum()), int((pool_y == 0).sum()))
    fit_s, fit_y = take(pool_s, pool_y, n_fit, torch.Generator().manual_seed(3))
    probe = H.Herald.fit(fit_s, fit_y)
    probe.train_classifier(fit_s, fit_y)
    peak = probe.peak_layer(fit_s, fit_y)

    def refusal(layer):
        with torch.no_grad():
            if layer is None:
                logits = model(test_ids)[:, -1]
            else:
                with probe.intervene(layers, layer):
                    logits = model(test_ids)[:, -1]
        r = logits.argmax(-1) == toy.REFUSE
        margin = logits[:, toy.REFUSE] - logits[:, toy.COMPLY]
        return dict(harmful=float(r[test_y == 1].float().mean()),
                    harmless=float(r[test_y == 0].float().mean()),
                    margin_harmful=float(margin[test_y == 1].mean()))
    out["peak_layer"] = peak
    out["refusal_before"] = refusal(None)
    out["refusal_after_peak"] = refusal(peak)
    out["refusal_after_layer"] = [refusal(l) for l in range(len(layers))]
    out["refusal_after_all"] = refusal(list(range(len(layers))))
    # The classic refusal direction for comparison: each layer's difference
    # of the class means (not Herald's LDA direction), zero-projected at
    # every layer.
    y = fit_y.bool()
    dm = fit_s[y].float().mean(0) - fit_s[~y].float().mean(0)
    means_probe = H.Herald(torch.nn.functional.normalize(dm, dim=1), probe.midpoint, probe.scale)
    with torch.no_grad(), means_probe.intervene(layers, list(range(len(layers)))):
        logits = model(test_ids)[:, -1]
    r = logits.argmax(-1) == toy.REFUSE
    out["refusal_after_all_mean_difference"] = dict(
        harmful=float(r[test_y == 1].float().mean()), harmless=float(r[test_y == 0].float().mean()),
        margin_harmful=float((logits[:, toy.REFUSE] - logits[:, toy.COMPLY])[test_y == 1].mean()))
    # The probe only reads: the logits with it attached equal those without.
    with torch.no_grad():
        plain = model(test_ids[:64])
        with probe.attach(layers) as run:
            hooked = model(test_ids[:64])
        run.proba()
    out["attach_unchanged"] = bool(torch.equal(plain, hooked))
    # Cost: the prefill of 512 prompts alone, with the probe attached and
    # its classifier run; FLOPs counted.
    ids = test_ids[:512]
    with torch.no_grad():
        model(ids)
        t_plain = []
        t_probe = []
        for _ in range(5):
            t = time.perf_counter()
            model(ids)
            t_plain.append(time.perf_counter() - t)
            t = time.perf_counter()
            with probe.attach(layers) as run:
                model(ids)
            run.proba()
            t_probe.append(time.perf_counter() - t)
        t_read = []
        st = states_of(model, layers, ids)
        for _ in range(5):
            t = time.perf_counter()
            probe.predict_proba(st)
            t_read.append(time.perf_counter() - t)
    med = lambda v: sorted(v)[len(v) // 2]  # noqa: E731
    L, d = probe.directions.shape
    probe_flops = 2 * L * d + 2 * probe.parameters_count()
    out["cost"] = dict(prefill_ms=1e3 * med(t_plain), prefill_with_probe_ms=1e3 * med(t_probe),
                       probe_alone_ms=1e3 * med(t_read), prompts=len(ids),
                       probe_flops_per_prompt=probe_flops,
                       prefill_flops_per_prompt=toy.prefill_flops(model, ids.shape[1]),
                       seed_scale=dict(layers=32, d=4096, direction_bytes=32 * 4096 * 2,
                                       probe_flops=2 * 32 * 4096 + 2 * 288))
    out["cost"]["flop_ratio"] = probe_flops / out["cost"]["prefill_flops_per_prompt"]
    z = probe.trajectory(test_s)
    out["trajectories"] = dict(harmful=z[test_y == 1].mean(0).tolist(),
                               harmful_sd=z[test_y == 1].std(0).tolist(),
                               harmless=z[test_y == 0].mean(0).tolist(),
                               harmless_sd=z[test_y == 0].std(0).tolist())
    path = os.path.join(args.tmp, "herald_toy.pt")
    probe.save(path)
    again = H.Herald.load(path)
    out["save_bytes"] = os.path.getsize(path)
    out["direction_bytes"] = probe.direction_bytes()
    # Saved directions are float16, as fit() keeps them: the loaded probe
    # computes the same probabilities.
    pa, pb = again.predict_proba(test_s), probe.predict_proba(test_s)
    out["load_max_dp"] = float((pa - pb).abs().max())
    out["load_agreement"] = float(((pa >= 0.5) == (pb >= 0.5)).float().mean())
    return out


def hf_part(args):
    try:
        import transformers
    except ImportError:
        raise SystemExit("herald_check: --hf-model needs transformers") from None
    rows = []
    with open(args.prompts) as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
                rows.append((str(r["prompt"]), int(r["label"])))
            except (ValueError, KeyError, TypeError) as e:
                raise SystemExit("herald_check: %s:%d: not {\"prompt\": ..., \"label\": 0 or 1}: %s"
                                 % (args.prompts, i, e)) from None
    if any(y not in (0, 1) for _, y in rows):
        raise SystemExit("herald_check: labels must be 0 or 1")
    tok = transformers.AutoTokenizer.from_pretrained(args.hf_model, local_files_only=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(args.hf_model, local_files_only=True)
    model.eval()
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model.to(dev)
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if layers is None:
        raise SystemExit("herald_check: %s has no model.layers to hook" % args.hf_model)
    layers = list(layers)
    states = []
    t0 = time.time()
    with torch.no_grad():
        for text, _ in rows:
            enc = tok(text, return_tensors="pt").to(dev)
            with H.read_states(layers) as run:
                model(**enc)
            states.append(run.stacked().float().cpu())
    states = torch.cat(states)
    labels = torch.tensor([y for _, y in rows])
    g = torch.Generator().manual_seed(0)
    tr, te = [], []
    for c in (0, 1):
        idx = torch.nonzero(labels == c).squeeze(1)
        idx = idx[torch.randperm(len(idx), generator=g)]
        tr.append(idx[:len(idx) // 2])
        te.append(idx[len(idx) // 2:])
    tr, te = torch.cat(tr), torch.cat(te)
    r, _ = compare(states[tr], labels[tr], states[te], labels[te])
    return dict(model=args.hf_model, prompts=len(rows), layers=len(layers),
                d=states.shape[2], prefill_seconds=time.time() - t0, **r)


def report(results):
    lines = []
    w = lines.append
    m = results["meta"]
    w("%s; %s; torch %s; %.0f s." % (m["date"], m["machine"], m["torch"], m["seconds"]))
    for part, title in (("synthetic", "Synthetic states (16 layers, d 64, planted directions)"),
                        ("toy", "The small decoder trained here (attn.attention)")):
        if part not in results:
            continue
        r = results[part]
        w("")
        w("**%s**: F1 on held-out prompts against samples per class (mean over seeds; "
          "each seed's in brackets):" % title)
        w("")
        w("| per class | Herald | single layer (its layer) | last-layer linear |")
        w("|---|---|---|---|")
        for n in sorted({x["per_class"] for x in r["f1"]}):
            rows = [x for x in r["f1"] if x["per_class"] == n]
            cell = lambda k: "%.3f (%s)" % (sum(x[k] for x in rows) / len(rows),  # noqa: E731
                                            ", ".join("%.3f" % x[k] for x in rows))
            w("| %d | %s | %s (%s) | %s |" % (n, cell("herald"), cell("single_layer"),
                                             ", ".join(str(x["single_layer_index"]) for x in rows),
                                             cell("last_layer_linear")))
    if "synthetic" in results:
        r = results["synthetic"]["recovery"]
        after = [c for c, t in zip(r["cosine"], r["depth"]) if t >= 0.5]
        w("")
        w("Direction recovery (1,000 per class): cosine to the population LDA direction per "
          "layer: %s (layers at depth >= 0.5: mean %.3f, min %.3f; before the onset there is "
          "no signal to recover). Shrinkage (Ledoit-Wolf) %.3f-%.3f."
          % (", ".join("%.2f" % c for c in r["cosine"]), sum(after) / len(after), min(after),
             min(r["shrinkage"]), max(r["shrinkage"])))
        w("")
        w("Features against the planted onset (means over 300 prompts a class):")
        w("")
        w("| planted onset | class | " + " | ".join(H.FEATURES) + " |")
        w("|---|---|" + "---|" * len(H.FEATURES))
        for row in results["synthetic"]["features"]:
            for cls in ("harmful", "harmless"):
                w("| %.2f | %s | %s |" % (row["planted"], cls,
                                         " | ".join("%.3f" % row[cls][k] for k in H.FEATURES)))
    if "toy" in results:
        r = results["toy"]
        c = r["cost"]
        w("")
        w("The decoder: %d blocks, d %d, trained %.0f s (%d steps), answer accuracy %.4f on "
          "%d held-out prompts; the probe's hooks leave its logits unchanged: %s; saved "
          "probe %d bytes (directions %d bytes in f16), loaded again: the same decision on "
          "%.4f of the prompts, probabilities within %.2g."
          % (len(r["refusal_after_layer"]), results["args"]["toy_d"], r["train_seconds"],
             results["args"]["toy_steps"], r["accuracy"], r["test_prompts"],
             r["attach_unchanged"], r["save_bytes"], r["direction_bytes"],
             r["load_agreement"], r["load_max_dp"]))
        w("")
        w("Refusal rate on held-out prompts (harmful / harmless), before and after "
          "zero-projecting the harm direction at one layer (the peak-monotonicity layer is "
          "%d):" % r["peak_layer"])
        w("")
        w("| intervention | harmful refused | harmless refused | harmful: REFUSE - COMPLY logit |")
        w("|---|---|---|---|")
        rows = [("none", r["refusal_before"])]
        rows += [("layer %d%s" % (i, " (peak)" if i == r["peak_layer"] else ""), x)
                 for i, x in enumerate(r["refusal_after_layer"])]
        rows.append(("every layer", r["refusal_after_all"]))
        rows.append(("every layer, the class-mean difference instead",
                     r["refusal_after_all_mean_difference"]))
        for name, x in rows:
            w("| %s | %.3f | %.3f | %.2f |" % (name, x["harmful"], x["harmless"],
                                               x["margin_harmful"]))
        w("")
        w("Cost, %d prompts of %d tokens on the CPU: prefill %.2f ms, with the probe attached "
          "and classifying %.2f ms, the probe alone on the read states %.3f ms; counted: %d "
          "FLOPs a prompt for the probe against %.3g for the prefill (ratio %.2e). At the seed's "
          "scale (32 layers x 4096) the directions are %d bytes and the probe %d FLOPs a prompt."
          % (c["prompts"], r["tokens"], c["prefill_ms"], c["prefill_with_probe_ms"], c["probe_alone_ms"],
             c["probe_flops_per_prompt"], c["prefill_flops_per_prompt"], c["flop_ratio"],
             c["seed_scale"]["direction_bytes"], c["seed_scale"]["probe_flops"]))
    if "hf" in results:
        r = results["hf"]
        w("")
        w("Hugging Face model %s: %d prompts, %d layers, d %d; F1 on the held-out half: Herald "
          "%.3f, single layer (%d) %.3f, last-layer linear %.3f."
          % (r["model"], r["prompts"], r["layers"], r["d"], r["herald"],
             r["single_layer_index"], r["single_layer"], r["last_layer_linear"]))
    return "\n".join(lines) + "\n"


def charts(prefix, results):
    plt = chart_util.pyplot("herald_check")
    if plt is None:
        return []
    parts = [p for p in ("synthetic", "toy") if p in results]
    fig, axes = plt.subplots(1, len(parts), figsize=(5 * len(parts), 3.5), squeeze=False)
    for ax, part in zip(axes[0], parts):
        tr = results[part]["trajectories"]
        x = list(range(len(tr["harmful"])))
        for cls, color in (("harmful", "tab:red"), ("harmless", "tab:blue")):
            mu, sd = tr[cls], tr[cls + "_sd"]
            ax.plot(x, mu, color=color, label=cls)
            ax.fill_between(x, [a - b for a, b in zip(mu, sd)], [a + b for a, b in zip(mu, sd)],
                            color=color, alpha=0.2)
        ax.axhline(0, color="gray", lw=0.5)
        ax.set_xlabel("layer")
        ax.set_title({"synthetic": "synthetic (planted)", "toy": "small decoder"}[part])
    axes[0][0].set_ylabel("z: standardised projection (mean +- sd)")
    axes[0][0].legend()
    fig.tight_layout()
    path = prefix + "_trajectories.png"
    fig.savefig(path, dpi=110)
    return [path]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, a few training steps")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--toy-steps", type=int, default=200)
    ap.add_argument("--toy-d", type=int, default=64)
    ap.add_argument("--toy-layers", type=int, default=6)
    ap.add_argument("--skip-toy", action="store_true", help="the synthetic part only")
    ap.add_argument("--hf-model", help="a local Hugging Face causal LM folder")
    ap.add_argument("--prompts", help="JSON lines {\"prompt\": ..., \"label\": 0 or 1}")
    ap.add_argument("--out", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--charts")
    args = ap.parse_args(argv)
    if bool(args.hf_model) != bool(args.prompts):
        ap.error("--hf-model and --prompts go together")
    if args.quick:
        args.seeds, args.toy_steps, args.toy_d, args.toy_layers = 1, 10, 32, 3
    if args.seeds < 1 or args.toy_steps < 1 or args.toy_layers < 3 or args.toy_d % 4:
        ap.error("--seeds and --toy-steps must be >= 1, --toy-layers >= 3, --toy-d a multiple of 4")
    args.tmp = os.path.dirname(os.path.abspath(args.out))
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    t0 = time.time()
    results = dict(args={k: v for k, v in vars(args).items() if k != "tmp"})
    if args.hf_model:
        results["hf"] = hf_part(args)
    else:
        results["synthetic"] = synthetic_part(args)
        if not args.skip_toy:
            results["toy"] = toy_part(args)
    results["meta"] = dict(
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        machine="%s, %s" % (platform.node() or "?", platform.machine()), torch=torch.__version__,
        seconds=time.time() - t0)
    text = report(results)
    if args.charts:
        results["charts"] = charts(args.charts, results)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    with open(args.report, "w") as f:
        f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
