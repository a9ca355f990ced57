#!/usr/bin/env python3
"""The Internal-DW comparison (issue 34), one command:

    /usr/bin/python3 bench/dw_compare.py --jobs 16 --out bench/raw/DATE-dw-compare.json \\
        --report bench/raw/DATE-dw-compare.md [--charts bench/dw]
    /usr/bin/python3 bench/dw_compare.py --quick --out /tmp/q.json --report /tmp/q.md

On every testbed of attn.dw.testbeds (each system in its history- and
drive-dominated settings, NARMA-10 with a short window, Mackey-Glass with
pulses its sampler misses), the shared residual forecaster of
attn.dw.forecast trained under full BPTT, Internal-DW, gradient clipping,
Jacobian regularisation and TBPTT: the same network, data, batches,
optimiser, steps and training horizon for every method, three seeds. Each
method's setting (DW's sampler scale, the clipping norm, the penalty's
weight, the truncation) is chosen per seed on the validation windows; the
test RMSE of the chosen one is reported. Then:

- the training-horizon sweep: BPTT and DW trained at horizons 4 to 48 on
  the history-dominated testbeds, evaluated at 32; a parabola in log2(H)
  through each seed's lowest error and its neighbours (and the seeds'
  mean's), its vertex the fitted optimum horizon and minimum error;
- the known-SNR control: the error of each method's gradient against the
  predictable gradient (known conditional means), on held-out windows, at
  initialisation and after training;
- the held-out probes: the history share (how much of the targets' variance
  the origin's state predicts) and the sampler's calibration (1: it
  represents the drive's variation), and whether DW's predicted reduction
  of route error tracks its actual improvement (Spearman's rank correlation
  over testbeds and seeds).

Writes the raw JSON (--out), a markdown report (--report, the tables for
bench/RESULTS.md) and, where matplotlib imports, two charts (--charts
PREFIX: PREFIX_horizon.png, PREFIX_snr.png). --from JSON --report MD
[--charts PREFIX] writes them again from an earlier run's JSON. --quick: one testbed, one
seed, a few steps (the CI's check that the command works).
"""
import argparse
import datetime
import json
import math
import multiprocessing
import os
import platform
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402

import chart_util  # noqa: E402  (bench/, the script's folder)

from attn.dw import forecast as F  # noqa: E402
from attn.dw import testbeds as T  # noqa: E402

CONFIGS = [("narma10", "history"), ("narma30", "history"), ("mackey_glass", "history"),
           ("lorenz96", "history"), ("long_memory", "history"), ("control", "history"),
           ("narma10", "drive"), ("narma30", "drive"), ("mackey_glass", "drive"),
           ("lorenz96", "drive"), ("long_memory", "drive"), ("control", "drive"),
           ("narma10", "short"), ("mackey_glass", "pulsed")]
# Each method's candidates, chosen on validation per seed.
GRIDS = {"bptt": [{}],
         "dw": [dict(reduce="batch", sampler_scale=s) for s in (1.0, 0.5, 2.0)]
         + [dict(reduce=r) for r in ("sample", "coherent")],
         "clip": [dict(clip=c) for c in (1e-3, 1e-2, 1e-1)],
         "jacreg": [dict(jac=j) for j in (1e-2, 1e-1, 1.0)],
         "tbptt": [dict(truncate=t) for t in (4, 8, 16)]}
SWEEP_SYSTEMS = ["narma10", "narma30", "mackey_glass", "lorenz96", "long_memory"]
SWEEP_HORIZONS = [4, 8, 16, 32, 48]
EVAL_HORIZON = 32


def run_one(task):
    torch.set_num_threads(1)
    kind, system, setting, method, seed, kw = task
    tb = T.make(system, setting)
    if kind == "recovery":
        return recovery_task(tb, seed, kw)
    horizon = kw.pop("horizon", EVAL_HORIZON)
    data = F.datasets(tb, seed, max(horizon, EVAL_HORIZON))
    r = F.train(method, tb, seed, horizon=horizon, eval_horizon=EVAL_HORIZON, data=data, **kw)
    r.pop("_model")
    r.pop("_dw")
    r["kind"], r["options"] = kind, kw
    return r


def recovery_task(tb, seed, kw):
    steps = kw.get("steps", 200)
    data = F.datasets(tb, seed, EVAL_HORIZON)
    out = dict(kind="recovery", system=tb.name, setting=tb.setting, seed=seed)
    model, dw = F.make_model("dw", tb, seed)
    out["init"] = F.recovery(model, dw, tb, data[2], EVAL_HORIZON)
    trained = F.train("bptt", tb, seed, horizon=EVAL_HORIZON, data=data, steps=steps)
    model, dw = F.make_model("dw", tb, seed)
    model.load_state_dict(trained["_model"].state_dict())
    out["trained"] = F.recovery(model, dw, tb, data[2], EVAL_HORIZON)
    return out


def probe_task(config):
    system, setting = config
    tb = T.make(system, setting)
    test = tb.dataset(512, 99, EVAL_HORIZON)
    return dict(system=system, setting=setting, history_share=tb.history_share(test),
                calibration=tb.sampler_calibration(test))


def fit_optimum(horizons, errors):
    """The optimum training horizon of a sweep: the parabola in log2(H)
    through the lowest measured point and its two neighbours, its vertex
    (kept between those neighbours) and its value there: (optimum horizon,
    minimum error). A lowest point at the sweep's edge is returned as it
    is (the optimum lies at or beyond the edge). A parabola through the
    whole sweep would not do: errors fall by an order of magnitude from the
    shortest horizons."""
    xs = [math.log2(h) for h in horizons]
    i = min(range(len(xs)), key=lambda i: errors[i])
    if i == 0 or i == len(xs) - 1:
        return horizons[i], errors[i]
    pts = [(xs[j], errors[j]) for j in (i - 1, i, i + 1)]
    a = torch.tensor([[x * x, x, 1.0] for x, _ in pts], dtype=torch.float64)
    c = torch.linalg.solve(a, torch.tensor([y for _, y in pts], dtype=torch.float64)).tolist()
    if c[0] <= 0:
        return horizons[i], errors[i]
    x = min(max(-c[1] / (2 * c[0]), pts[0][0]), pts[2][0])
    return 2 ** x, c[0] * x * x + c[1] * x + c[2]


def spearman(xs, ys):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        for pos, i in enumerate(order):
            r[i] = float(pos)
        return r
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    vy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return cov / (vx * vy) if vx > 0 and vy > 0 else float("nan")


def tasks_for(args):
    main, sweep, rec = [], [], []
    configs = CONFIGS[:1] if args.quick else CONFIGS
    for system, setting in configs:
        for seed in range(args.seeds):
            for method, grid in GRIDS.items():
                for kw in (grid[:1] if args.quick else grid):
                    main.append(("main", system, setting, method, seed,
                                 dict(kw, steps=args.steps, horizon=args.horizon)))
    if not args.quick:
        for system in SWEEP_SYSTEMS:
            for seed in range(args.seeds):
                for h in SWEEP_HORIZONS:
                    for method in ("bptt", "dw"):
                        sweep.append(("sweep", system, "history", method, seed,
                                      dict(steps=args.steps, horizon=h)))
    for setting in ("history", "drive"):
        if args.quick and setting == "drive":
            continue
        for seed in range(args.seeds):
            rec.append(("recovery", "control", setting, None, seed, dict(steps=args.steps)))
    return main, sweep, rec


def select(main):
    """Per (system, setting, method, seed): the candidate with the lowest
    validation RMSE."""
    best = {}
    for r in main:
        key = (r["system"], r["setting"], r["method"], r["seed"])
        if key not in best or r["val"] < best[key]["val"]:
            best[key] = r
    return best


def mean(xs):
    return sum(xs) / len(xs)


def report(args, results, meta):
    main = [r for r in results["runs"] if r["kind"] == "main"]
    best = select(main)
    methods = list(GRIDS)
    seeds = sorted({r["seed"] for r in main})
    configs = [c for c in CONFIGS if any(k[:2] == c for k in best)]
    lines = []
    w = lines.append
    w("%s; %s; torch %s; %d CPU workers; %.0f s. Forecaster: hidden %d, one residual "
      "block a step, training horizon %d, %d Adam steps (lr 3e-3, batch 64); error: test RMSE "
      "over %d steps in normalised units (1024 windows); setting of each method chosen on "
      "512 validation windows per seed; seeds %s."
      % (meta["date"], meta["machine"], meta.get("torch", "?"), args.jobs, meta["seconds"], 32,
         args.horizon, args.steps, EVAL_HORIZON, ", ".join(map(str, seeds))))
    w("")
    fixed = {(r["system"], r["setting"], r["seed"]): r for r in main if r["method"] == "dw"
             and r["options"].get("reduce") == "batch"
             and r["options"].get("sampler_scale") == 1.0}
    w("| testbed | setting | history share | sampler calibration | " +
      " | ".join(methods) + " | dw, defaults | DW vs BPTT | defaults vs BPTT | DW beats |")
    w("|---|---|---|---|" + "---|" * len(methods) + "---|---|---|---|")
    probes = {(p["system"], p["setting"]): p for p in results["probes"]}
    table = []
    for c in configs:
        cells, means = [], {}
        for m in methods:
            vals = [best[c + (m, s)]["test"] for s in seeds if c + (m, s) in best]
            means[m] = mean(vals)
            cells.append("%.4f (%s)" % (means[m], ", ".join("%.4f" % v for v in vals)))
        fx = [fixed[c + (s,)]["test"] for s in seeds if c + (s,) in fixed]
        means["dw_defaults"] = mean(fx) if fx else float("nan")
        cells.append("%.4f" % means["dw_defaults"])
        rel = (means["dw"] - means["bptt"]) / means["bptt"]
        beats = [m for m in methods if m != "dw" and means["dw"] < means[m]]
        p = probes.get(c, {})
        rel_d = (means["dw_defaults"] - means["bptt"]) / means["bptt"]
        w("| %s | %s | %.3f | %.2f | %s | %+.2f%% | %+.2f%% | %s |"
          % (c[0], c[1], p.get("history_share", float("nan")), p.get("calibration", float("nan")),
             " | ".join(cells), 100 * rel, 100 * rel_d, ", ".join(beats) if beats else "none"))
        table.append(dict(system=c[0], setting=c[1], means=means, dw_vs_bptt=rel,
                          defaults_vs_bptt=rel_d, beats=beats))
    results["table"] = table
    w("")
    w("Cells: mean test RMSE over the seeds (each seed's in brackets), each method at the "
      "setting its validation error chose; \"dw, defaults\": DW at its defaults (batch "
      "statistics, the system's sampler), unselected. DW vs BPTT: relative change of the "
      "means (negative: DW better); DW beats: the methods whose mean DW's is below. DW "
      "chooses among %d candidates, clipping, the penalty and TBPTT among 3, BPTT has one: "
      "part of a selected method's edge is the choice itself (the best of several runs on "
      "validation); the defaults column has none. Chosen settings per seed:"
      % len(GRIDS["dw"]))
    w("")
    for c in configs:
        chosen = []
        for m in ("dw", "clip", "jacreg", "tbptt"):
            opts = [best[c + (m, s)]["options"] for s in seeds if c + (m, s) in best]
            chosen.append("%s %s" % (m, "/".join(",".join("%s=%s" % (k, v) for k, v in o.items()
                                                           if k not in ("steps", "horizon"))
                                                  for o in opts)))
        w("- %s %s: %s" % (c[0], c[1], "; ".join(chosen)))
    # Predicted reliability against actual improvement.
    xs, ys = [], []
    for c in configs:
        for s in seeds:
            d, b = best.get(c + ("dw", s)), best.get(c + ("bptt", s))
            if d and b and d.get("predicted_reduction") is not None:
                xs.append(d["predicted_reduction"])
                ys.append((b["test"] - d["test"]) / b["test"])
    if len(xs) >= 3:
        rho = spearman(xs, ys)
        results["reliability"] = dict(predicted=xs, improvement=ys, spearman=rho)
        w("")
        w("Predicted reliability against actual improvement: Spearman's rank correlation of "
          "DW's predicted reduction of route error (at the end of training) with its relative "
          "improvement over BPTT, over %d testbed-seed pairs: %.2f." % (len(xs), rho))
    sweep = [r for r in results["runs"] if r["kind"] == "sweep"]
    if sweep:
        w("")
        w("Training-horizon sweep (history settings, evaluated at %d steps, H = %s; the optimum "
          "and minimum of the parabola in log2 H through the lowest error and its neighbours; "
          "an optimum at the sweep's edge is that point):"
          % (EVAL_HORIZON, ", ".join(map(str, SWEEP_HORIZONS))))
        w("")
        w("| testbed | BPTT optimum H (seeds) | DW optimum H (seeds) | BPTT min error | DW min "
          "error | DW optimum >= BPTT's (seeds) |")
        w("|---|---|---|---|---|---|")
        fits = {}
        for system in SWEEP_SYSTEMS:
            row = {}
            for m in ("bptt", "dw"):
                per_seed = []
                for s in seeds:
                    pts = sorted((r["horizon"], r["test"]) for r in sweep
                                 if r["system"] == system and r["method"] == m and r["seed"] == s)
                    if len(pts) == len(SWEEP_HORIZONS):
                        per_seed.append(fit_optimum([p[0] for p in pts], [p[1] for p in pts]))
                avg = [mean([r["test"] for r in sweep if r["system"] == system and r["method"] == m
                             and r["horizon"] == h]) for h in SWEEP_HORIZONS]
                row[m] = dict(per_seed=per_seed, mean_fit=fit_optimum(SWEEP_HORIZONS, avg),
                              mean_curve=avg)
            fits[system] = row
            ok = sum(1 for a, b in zip(row["dw"]["per_seed"], row["bptt"]["per_seed"])
                     if a[0] >= b[0] - 1e-9)
            w("| %s | %.1f (%s) | %.1f (%s) | %.4f | %.4f | %d of %d |"
              % (system, row["bptt"]["mean_fit"][0],
                 ", ".join("%.1f" % f[0] for f in row["bptt"]["per_seed"]),
                 row["dw"]["mean_fit"][0], ", ".join("%.1f" % f[0] for f in row["dw"]["per_seed"]),
                 row["bptt"]["mean_fit"][1], row["dw"]["mean_fit"][1], ok,
                 len(row["dw"]["per_seed"])))
        results["sweep_fits"] = fits
        w("")
        w("Mean test RMSE at %d steps per training horizon (BPTT / DW):" % EVAL_HORIZON)
        w("")
        w("| testbed | " + " | ".join("H = %d" % h for h in SWEEP_HORIZONS) + " |")
        w("|---|" + "---|" * len(SWEEP_HORIZONS))
        for system, row in fits.items():
            w("| %s | %s |" % (system, " | ".join(
                "%.4f / %.4f" % (a, b) for a, b in zip(row["bptt"]["mean_curve"],
                                                       row["dw"]["mean_curve"]))))
    rec = [r for r in results["runs"] if r["kind"] == "recovery"]
    if rec:
        w("")
        w("Known-SNR control: error of each method's parameter gradient against the predictable "
          "gradient (full BPTT against the known conditional means), E||g - g*||^2 / E||g*||^2 "
          "on held-out windows (cosine in brackets), mean over seeds:")
        w("")
        w("| setting | model | BPTT | DW | clipping | TBPTT |")
        w("|---|---|---|---|---|---|")
        for setting in ("history", "drive"):
            for when in ("init", "trained"):
                rs = [r[when] for r in rec if r["setting"] == setting]
                if not rs:
                    continue
                w("| %s | %s | %s |" % (setting, when, " | ".join(
                    "%.3f (%.3f)" % (mean([r[m]["rel_error"] for r in rs]),
                                     mean([r[m]["cosine"] for r in rs]))
                    for m in ("bptt", "dw", "clip", "tbptt"))))
    return "\n".join(lines) + "\n"


def charts(prefix, results):
    plt = chart_util.pyplot("dw_compare")
    if plt is None:
        return []
    out = []
    fits = results.get("sweep_fits")
    if fits:
        fig, axes = plt.subplots(1, len(fits), figsize=(3.2 * len(fits), 3), squeeze=False)
        for ax, (system, row) in zip(axes[0], fits.items()):
            for m, style in (("bptt", "o-"), ("dw", "s-")):
                ax.plot(SWEEP_HORIZONS, row[m]["mean_curve"], style, label=m.upper())
            ax.set_xscale("log", base=2)
            ax.set_title(system)
            ax.set_xlabel("training horizon")
        axes[0][0].set_ylabel("test RMSE at %d steps" % EVAL_HORIZON)
        axes[0][0].legend()
        fig.tight_layout()
        fig.savefig(prefix + "_horizon.png", dpi=110)
        out.append(prefix + "_horizon.png")
    # DW at its defaults (batch statistics, the system's sampler), seed 0:
    # the same estimator on every testbed.
    prof = {}
    for r in results["runs"]:
        if (r["kind"] == "main" and r["method"] == "dw" and r["seed"] == 0 and r.get("profile")
                and r["options"].get("reduce") == "batch"
                and r["options"].get("sampler_scale") == 1.0):
            prof[(r["system"], r["setting"])] = r["profile"]
    if prof:
        fig, ax = plt.subplots(1, 2, figsize=(10, 3.5))
        for (system, setting), p in prof.items():
            if setting not in ("history", "drive"):
                continue
            snr = [max(row["snr_identity"] or 0.0, 1e-3) for row in p]
            (ax[0] if setting == "history" else ax[1]).plot(
                [row["call"] + 1 for row in p], snr, label=system)
        for a, t in zip(ax, ("history-dominated", "drive-dominated")):
            a.set_yscale("log")
            a.set_xlabel("rollout step")
            a.set_title("DW's estimated SNR, identity route (%s)" % t, fontsize=10)
        ax[0].set_ylabel("S / N (S = 0 drawn at 1e-3)")
        ax[0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(prefix + "_snr.png", dpi=110)
        out.append(prefix + "_snr.png")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="one testbed, one seed, a few steps")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--horizon", type=int, default=EVAL_HORIZON)
    ap.add_argument("--out", help="raw results (JSON)")
    ap.add_argument("--report", help="the markdown tables")
    ap.add_argument("--charts", help="chart path prefix (needs matplotlib)")
    ap.add_argument("--from", dest="from_json", metavar="JSON",
                    help="write the report (and charts) of an earlier run's JSON; runs nothing")
    args = ap.parse_args(argv)
    if args.from_json:
        # The tables (and charts) of an earlier run, from its JSON.
        with open(args.from_json) as f:
            results = json.load(f)
        if not args.report:
            ap.error("--from needs --report")
        text = report(argparse.Namespace(**results["args"]), results, results["meta"])
        with open(args.report, "w") as f:
            f.write(text)
        if args.charts:
            print("\n".join(charts(args.charts, results)))
        return 0
    if not args.out or not args.report:
        ap.error("the following arguments are required: --out, --report")
    if args.quick:
        args.seeds, args.steps, args.horizon = 1, min(args.steps, 20), 8
    if args.jobs < 1 or args.seeds < 1 or args.steps < 1 or not 1 <= args.horizon <= 64:
        ap.error("--jobs, --seeds and --steps must be >= 1, --horizon in 1..64")
    t0 = time.time()
    main_t, sweep_t, rec_t = tasks_for(args)
    tasks = main_t + sweep_t + rec_t
    configs = CONFIGS[:1] if args.quick else CONFIGS
    print("dw_compare: %d training runs, %d recovery runs on %d workers"
          % (len(main_t) + len(sweep_t), len(rec_t), args.jobs), file=sys.stderr)
    # The longest tasks first: the pool's tail is short.
    order = sorted(range(len(tasks)), key=lambda i: -(tasks[i][5].get("horizon", 32)
                                                      * (4 if tasks[i][3] == "jacreg" else 1)))
    if args.jobs == 1:
        runs = [run_one(tasks[i]) for i in order]
        probes = [probe_task(c) for c in configs]
    else:
        with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
            runs = pool.map(run_one, [tasks[i] for i in order], chunksize=1)
            probes = pool.map(probe_task, configs)
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                machine="%s, %s" % (platform.node() or "?", platform.processor() or
                                    platform.machine()),
                seconds=time.time() - t0, python=platform.python_version(),
                torch=torch.__version__)
    results = dict(meta=meta, args=vars(args), runs=runs, probes=probes)
    text = report(args, results, meta)
    if args.charts:
        results["charts"] = charts(args.charts, results)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1, default=float)
    with open(args.report, "w") as f:
        f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
