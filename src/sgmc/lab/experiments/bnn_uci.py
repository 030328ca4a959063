"""When does a Bayesian model average of a neural network beat its point estimate?

A one-hidden-layer ReLU network (100 units, ``sgmc.models.mlp.MLP((d, 100, K))``) with the
fan-in prior of ``sgmc.nn.prior()`` (weights N(0, c/fan_in), biases N(0, 1)) on three
classification sets: scikit-learn's digits (trained without class 9), UCI EEG eye state and
UCI diabetic retinopathy (Debrecen). Per seed: a stratified 60/20/20 split, features
standardised with the training mean and sd (a zero sd, digits' constant pixels, replaced
by 1). Four predictions, each at likelihood temperature τ (``sgmc.Posterior(...,
temperature=τ)``: U = −log p(θ) − (1/τ) Σ log p(y|x, θ)):

- **MAP**: full-batch Adam (lr 1e-3) on U from the network's He initialisation, until U·τ/N
  fell by less than 1e-4 nats over 100 steps (checked every 100 steps; at most 20,000);
- **BMA**, by the recipe: ``sgmc.warmup(post, sgmc.sghmc(batch_size=100,
  integrator="splitting"), init, num_chains=C)`` from the same initialisation, then
  ``sgmc.sample(..., init_per_chain=True, burn_in=b, predict=..., store_draws=False)`` with
  b = ``report.burn_in`` (a fixed fallback while warm-up leaves it None); the model average
  is ``res.predictive["mean"]`` over every kept draw of every chain;
- **one draw**: the last state of each chain (``res.final_state``, one posterior draw per
  chain) predicted on its own; its metrics are averaged over the C chains;
- **deep ensemble** (Lakshminarayanan et al. 2017): M = C members, each a full-batch Adam
  MAP from its own initialisation (member 0 is the MAP's), probabilities averaged; at
  *equal gradient evaluations* (each member stops after (warm-up + sampling evaluations of
  the BMA) / (M·N) steps, or at convergence if earlier) and at *equal wall time* (each
  member stops once it has run the BMA's seconds / M, or at convergence if earlier: the
  ensemble's seconds are then below the BMA's, and the ratio is reported).

τ = 1 and the τ of a small grid with the best validation log-likelihood of the BMA (per
dataset and seed) are reported. Test metrics: accuracy, log-likelihood per point, Brier,
ECE (``sgmc.metrics.classification_metrics``) and the mean predictive entropy on OOD inputs
(digits: the images of the class never trained on; UCI sets: N(0, 3²) noise per standardised
feature). Claims are judged over seeds by paired differences (:mod:`.verdict`).
"""

from __future__ import annotations

import json
import os
import time
import warnings
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np

import sgmc
from sgmc.lab.experiments import Experiment
from sgmc.lab.experiments import bnn_uci_parts as P
from sgmc.lab.experiments import verdict as V
from sgmc.lab.experiments._plot import pyplot, save
from sgmc.models.mlp import MLP

# Measured: 2,919 s (49 min) on 2 cores shared with other work (load 3-7), 15 cases.
FULL = P.Settings()
# The quick run (slow tier): 2 seeds, digits and diabetic retinopathy, 1,000 sampling steps,
# and the warm-up without its self-check (the network guard's pilots cost minutes per τ), so
# the burn-in is the fallback. Measured: 4.0 min of CPU (its test, beside the full run).
QUICK = replace(FULL, seeds=2, datasets=("digits", "diabetic_retinopathy"), steps=1_000,
                warmup_kw={"check": False})
# The smoke run: digits only, 200 training rows, one seed, τ = 1 only (each τ is a warm-up
# to compile), 2 chains, 60 sampling steps, a warm-up of 100 Adam steps without its
# self-check.
SMOKE = replace(FULL, seeds=1, datasets=("digits",), taus=(1.0,), chains=2, steps=60,
                burn_in=20, thin=5, rows=200, adam_max=300,
                warmup_kw={"optimizer_steps": 100, "check": False})

METHODS = ("MAP", "one draw", "BMA", "ensemble (equal evals)", "ensemble (equal time)")
METRICS = ("accuracy", "log_likelihood", "brier", "ece", "ood_entropy")


def _warned(caught) -> list[str]:
    return [f"{w.category.__name__}: {str(w.message)[:160]}" for w in caught]


def run_bma(post, net, init, X, data, parts, s: P.Settings, seed: int) -> dict:
    """Warm-up and sampling by the recipe; the BMA's and the one-draw predictions' scores."""
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            w = sgmc.warmup(post, sgmc.sghmc(batch_size=P.BATCH, integrator="splitting"), init,
                            num_chains=s.chains, seed=seed, **s.warmup_kw)
            b = w.report.burn_in if w.report.burn_in is not None else s.burn_in
            Xj = jnp.asarray(X)
            res = sgmc.sample(post, w[0], w[1], num_steps=b + s.steps, num_chains=s.chains,
                              init_per_chain=True, burn_in=b, thin=s.thin,
                              predict=lambda p: net.predict(p, Xj), store_draws=False,
                              seed=seed, progress=False)
        except FloatingPointError as err:  # sgmc.DivergenceError, or a diverged mode search
            return {"ok": False, "error": f"{type(err).__name__}: {str(err)[:200]}",
                    "warnings": _warned(caught)}
    seconds = time.perf_counter() - t0
    mean = np.asarray(res.predictive["mean"])
    if mean.ndim == 3:          # a chain axis: average over the chains
        mean = mean.mean(0)
    n = int(post.num_data)
    warm_evals = float(w.report.total_passes) * n
    samp_evals = float(np.sum(res.meta["grad_evals_total"]))
    one = [P.scores(p, data, parts) for p in P.one_draw_probs(net, res.final_state, Xj)]
    return {"ok": True, "scores": P.scores(mean, data, parts),
            "one_draw": P.average_scores(one), "burn_in": int(b),
            "burn_in_from": "warmup" if w.report.burn_in is not None else "fallback",
            "step_size": [float(h) for h in w.report.step_sizes],
            "friction": w.report.friction, "preconditioner": w.report.preconditioner,
            "warmup_passes": float(w.report.total_passes), "warmup_evals": warm_evals,
            "warmup_stages": {k: float(v) for k, v in w.report.passes.items()},
            "sample_evals": samp_evals, "evals": warm_evals + samp_evals,
            "seconds": seconds, "warnings": _warned(caught)}


def run_point_estimates(post, net, init, key, X, data, parts, bma: dict,
                        s: P.Settings) -> dict:
    """MAP (member 0 at convergence) and the deep ensembles at equal evaluations and time."""
    t0 = time.perf_counter()
    adam = P.Adam(post, s)
    n, m = adam.n, s.chains
    steps_mark = max(1, int(bma["evals"] // (m * n)))
    secs_mark = bma["seconds"] / m
    Xj = jnp.asarray(X)
    fits = []
    for i in range(m):
        start = init if i == 0 else net.init(jax.random.fold_in(key, i))
        fits.append(adam.fit(start, steps_mark=steps_mark, seconds_mark=secs_mark))
    if not all(f["ok"] for f in fits):
        return {"ok": False, "error": "an Adam run went non-finite"}

    def probs(snap):
        return np.asarray(net.predict(snap[0], Xj))

    out = {"ok": True, "MAP": P.scores(probs(fits[0]["final"]), data, parts),
           "map_steps": fits[0]["final"][1], "map_evals": fits[0]["final"][1] * n,
           "map_seconds": fits[0]["final"][2], "adam_steps_mark": steps_mark,
           "seconds_mark": secs_mark}
    for key_, name in (("evals", "ensemble (equal evals)"), ("seconds", "ensemble (equal time)")):
        snaps = [f[key_] for f in fits]
        out[name] = P.scores(np.mean([probs(x) for x in snaps], axis=0), data, parts)
        out[name + " evals"] = float(sum(x[1] for x in snaps) * n)
        out[name + " seconds"] = float(sum(x[2] for x in snaps))
        out[name + " converged"] = [x[1] == f["final"][1] for x, f in zip(snaps, fits,
                                                                        strict=True)]
    out["seconds"] = time.perf_counter() - t0
    return out


def run_case(name: str, seed: int, s: P.Settings, root=None) -> dict:
    """One dataset and seed: the BMA at every τ of the grid, τ chosen on validation, then
    MAP and ensembles at τ = 1 and at the chosen τ."""
    data = P.prepare(name, seed, root, s.rows)
    X, parts = P.eval_inputs(data)
    Xtr, ytr = data["train"]
    net = MLP((data["d"], P.HIDDEN, data["K"]))
    train = {"x": jnp.asarray(Xtr), "y": jnp.asarray(ytr, jnp.int32)}
    key = jax.random.key(seed)
    init = net.init(key)
    logprior = P.prior()
    bma = {}
    for tau in s.taus:
        post = sgmc.Posterior(net, logprior, train, temperature=tau)
        bma[tau] = run_bma(post, net, init, X, data, parts, s, seed)
    ok = [t for t in s.taus if bma[t]["ok"]]
    best = max(ok, key=lambda t: bma[t]["scores"]["val_log_likelihood"]) if ok else None
    point = {}
    for tau in dict.fromkeys((1.0, best)):
        if tau is None or not bma[tau]["ok"]:
            continue
        post = sgmc.Posterior(net, logprior, train, temperature=tau)
        point[tau] = run_point_estimates(post, net, init, key, X, data, parts, bma[tau], s)
    return {"dataset": name, "seed": seed, "n_train": len(ytr), "n_val": len(data["val"][1]),
            "n_test": len(data["test"][1]), "n_ood": len(data["ood"]), "d": data["d"],
            "K": data["K"], "ood": data["ood_what"], "max_abs_test": data["max_abs_test"],
            "best_tau": best, "bma": {str(t): v for t, v in bma.items()},
            "point": {str(t): v for t, v in point.items()}}


def rows_of(case: dict, which: str) -> dict | None:
    """Method -> scores (and costs) of one case at τ = 1 (``which="1"``) or the chosen τ."""
    tau = 1.0 if which == "1" else case["best_tau"]
    if tau is None:
        return None
    b, p = case["bma"][str(tau)], case["point"].get(str(tau))
    if not (b["ok"] and p and p["ok"]):
        return None
    return {"tau": tau,
            "MAP": {**p["MAP"], "evals": p["map_evals"], "seconds": p["map_seconds"]},
            "one draw": {**b["one_draw"], "evals": b["evals"], "seconds": b["seconds"]},
            "BMA": {**b["scores"], "evals": b["evals"], "seconds": b["seconds"]},
            **{k: {**p[k], "evals": p[k + " evals"], "seconds": p[k + " seconds"]}
               for k in METHODS[3:]}}


def summary(cases: list[dict], s: P.Settings) -> dict:
    """dataset -> τ label -> method -> metric -> per-seed values."""
    out: dict = {}
    for name in s.datasets:
        mine = [c for c in cases if c["dataset"] == name and "skipped" not in c]
        if not mine:
            continue
        out[name] = {}
        for which in ("1", "best"):
            rows = [rows_of(c, which) for c in mine]
            rows = [r for r in rows if r is not None]
            if not rows:
                continue
            out[name][which] = {"taus": [r["tau"] for r in rows], **{
                m: {k: [r[m][k] for r in rows] for k in (*METRICS, "evals", "seconds")}
                for m in METHODS}}
    return out


def _deviations(s: P.Settings, cases: list[dict]) -> list[str]:
    sizes = sorted({(c["dataset"], c["n_train"], c["d"], c["K"]) for c in cases
                    if "skipped" not in c})
    burn = sorted({b["burn_in_from"] for c in cases if "skipped" not in c
                   for b in c["bma"].values() if b.get("ok")})
    return [
        "data: " + "; ".join(f"{n} n_train = {t}, d = {d}, K = {k}" for n, t, d, k in sizes)
        + f" (stratified 60/20/20 per seed{', a subset' if s.rows else ''}); digits is "
        "trained without class 9",
        f"network {P.HIDDEN} ReLU units, one hidden layer; prior: {P.prior_source()}",
        f"BMA: the recipe (warmup + sghmc splitting, batch {P.BATCH}, {s.chains} chains, "
        f"{s.steps} steps after burn-in, thin {s.thin}); burn-in from "
        + " and ".join(burn) + f" (fallback {s.burn_in} steps while report.burn_in is None)",
        "one draw: each chain's last state, metrics averaged over the chains",
        *([f"warm-up arguments beyond the recipe: {dict(s.warmup_kw)}"] if s.warmup_kw else []),
        f"MAP: full-batch Adam lr {s.adam_lr:g}, stopped when U·τ/N fell < {s.adam_tol:g} nats "
        f"over {s.adam_check} steps (cap {s.adam_max})",
        f"ensemble: M = {s.chains} full-batch Adam members; 'equal evals' = (BMA warm-up + "
        "sampling per-example gradients) / M each, 'equal time' = BMA seconds / M each, both "
        "cut short at convergence (then the ensemble spent less: see the measured costs)",
        f"τ grid {list(s.taus)}; 'best' is chosen per seed on the validation log-likelihood "
        "of the BMA",
    ]


def claims(summ: dict, s: P.Settings, cases: list[dict]) -> list[V.Claim]:
    dev = _deviations(s, cases)
    specs = [  # (claim, method a, method b, metric, sign): effect = sign·(a − b)
        ("BMA ≥ MAP on test log-likelihood", "BMA", "MAP", "log_likelihood", 1),
        ("BMA ≤ MAP on ECE", "BMA", "MAP", "ece", -1),
        ("BMA > one draw on test log-likelihood", "BMA", "one draw", "log_likelihood", 1),
        ("BMA > deep ensemble on test log-likelihood at equal gradient evaluations", "BMA",
         "ensemble (equal evals)", "log_likelihood", 1),
        ("BMA > deep ensemble on test log-likelihood at equal wall time", "BMA",
         "ensemble (equal time)", "log_likelihood", 1),
        ("BMA's OOD entropy > MAP's", "BMA", "MAP", "ood_entropy", 1),
    ]
    out = []
    for name, per in summ.items():
        for which, r in per.items():
            label = "τ = 1" if which == "1" else f"best τ (per seed: {r['taus']})"
            for text, a, b, metric, sign in specs:
                va, vb = np.asarray(r[a][metric]), np.asarray(r[b][metric])
                eff, se = V.paired(sign * va, sign * vb)
                if not se > 0:        # one seed, or identical: no verdict from SE = 0
                    se = float("nan")
                measured = {a: dict(zip(("value", "se"), V.mean_se(va), strict=True)),
                            b: dict(zip(("value", "se"), V.mean_se(vb), strict=True))}
                if "ensemble" in b:
                    measured["evals"] = {a: float(np.mean(r[a]["evals"])),
                                         b: float(np.mean(r[b]["evals"]))}
                    measured["seconds"] = {a: float(np.mean(r[a]["seconds"])),
                                           b: float(np.mean(r[b]["seconds"]))}
                out.append(V.judge(
                    f"{name}, {label}: {text}", eff, se, se_over=f"{len(va)} seeds (paired)",
                    effect_text=(f"{metric}({a}) − {metric}({b})" if sign > 0 else
                                 f"{metric}({b}) − {metric}({a})"),
                    measured=measured, deviations=dev,
                    paper="question, not a paper's number: Wenzel et al. 2020, Izmailov et "
                          "al. 2021 (BMA vs SGD/ensembles); Lakshminarayanan et al. 2017"))
    return out


def table(summ: dict) -> str:
    lines = []
    head = (f"  {'method':<24}" + "".join(f"{m:>17}" for m in
                                          ("accuracy", "test LL", "Brier", "ECE", "OOD H"))
            + f"{'evals/1e6':>11}{'seconds':>9}")
    for name, per in summ.items():
        for which, r in per.items():
            lines.append(f"{name}, τ = {'1' if which == '1' else 'best ' + str(r['taus'])}"
                         " (mean ± SE over seeds)")
            lines.append(head)
            for m in METHODS:
                cells = "".join("{:>9.4f} ± {:<5.4f}".format(*V.mean_se(r[m][k]))
                                for k in METRICS)
                lines.append(f"  {m:<24}{cells}{np.mean(r[m]['evals']) / 1e6:>11.3f}"
                             f"{np.mean(r[m]['seconds']):>9.1f}")
    return "\n".join(lines)


def recipe_report(cases: list[dict]) -> str:
    """What the warm-up chose per dataset and τ (over seeds): step sizes, burn-in, warm-up
    passes, and how many runs warned (a guard that found no stationary step, a drift)."""
    lines = ["the recipe's choices (over seeds): step size h, burn-in, warm-up passes, runs "
             "that warned"]
    groups: dict = {}
    for c in cases:
        for tau, b in c.get("bma", {}).items():
            groups.setdefault((c["dataset"], tau), []).append(b)
    for (name, tau), bs in groups.items():
        ok = [b for b in bs if b["ok"]]
        if not ok:
            lines.append(f"  {name} τ = {tau}: every run failed ({bs[0].get('error')})")
            continue
        h = [x for b in ok for x in b["step_size"]]
        warned = sum(any("SamplingWarning" in w for w in b["warnings"]) for b in ok)
        lines.append(f"  {name} τ = {tau}: h {min(h):.3g}–{max(h):.3g}, burn-in "
                     f"{sorted({b['burn_in'] for b in ok})} ("
                     f"{'/'.join(sorted({b['burn_in_from'] for b in ok}))}), warm-up passes "
                     f"{np.mean([b['warmup_passes'] for b in ok]):.0f}, SamplingWarning in "
                     f"{warned}/{len(bs)} runs, failed {len(bs) - len(ok)}")
    return "\n".join(lines)


def figure(summ: dict, path: str) -> None:
    plt = pyplot()
    names = list(summ)
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for j, (which, r) in enumerate(summ[name].items()):
            ms = [V.mean_se(r[m]["log_likelihood"]) for m in METHODS]
            x = np.arange(len(METHODS)) + 0.15 * (2 * j - 1)
            ax.errorbar(x, [a for a, _ in ms], yerr=[2 * np.nan_to_num(b) for _, b in ms],
                        fmt="o", capsize=3, label=f"τ = {'1' if which == '1' else 'best'}")
        ax.set_xticks(range(len(METHODS)), METHODS, rotation=30, ha="right", fontsize=8)
        ax.set_title(name)
        ax.set_ylabel("test log-likelihood per point (± 2 SE)")
        ax.legend(fontsize=8)
    save(fig, path)


def run(quick: bool = False, out: str = "sgmc-reproduce", seed: int = 0, data_root=None,
        smoke: bool = False) -> dict:
    """``sgmc reproduce bnn-uci``: MAP, one draw, BMA and deep ensembles on three sets."""
    s = SMOKE if smoke else QUICK if quick else FULL
    t0 = time.perf_counter()
    detail = (f"digits only, {s.rows} training rows, {s.seeds} seed, {s.chains} chains, "
              f"{s.steps} sampling steps, warm-up without its self-check") if smoke else ""
    if smoke:
        print(V.smoke_banner(detail))
    cases, skipped = [], {}
    os.makedirs(out, exist_ok=True)
    for k in range(s.seeds):        # seed-major: a run cut short has every dataset's seeds
        for name in s.datasets:
            if name in skipped:
                continue
            try:
                cases.append(run_case(name, seed + k, s, data_root))
            except FileNotFoundError as err:
                skipped[name] = f"data absent: {err}"
                continue
            c = cases[-1]
            with open(os.path.join(out, "bnn_uci_cases.json"), "w") as fh:  # so far
                json.dump(cases, fh, default=float)
            print(f"[{time.perf_counter() - t0:6.0f} s] {name} seed {seed + k}: best τ "
                  f"{c['best_tau']}, BMA test LL by τ "
                  + ", ".join(f"{t}: {b['scores']['log_likelihood']:.4f}" if b["ok"] else
                              f"{t}: failed" for t, b in c["bma"].items()), flush=True)
    summ = summary(cases, s)
    figures = []
    if summ:
        path = os.path.join(out, "bnn_uci.png")
        figure(summ, path)
        figures.append(path)
    seconds = time.perf_counter() - t0
    print(f"BNN on UCI/digits: when does the BMA beat the point estimate? {P.HIDDEN} ReLU "
          f"units, prior {P.prior_source()}; {s.seeds} seeds; τ grid {list(s.taus)}")
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    print(table(summ))
    print(recipe_report(cases))
    judged = claims(summ, s, cases)
    lines = V.publish(V.smoke(judged, detail) if smoke else judged)
    print(f"\nrun time: {seconds:.0f} s" + (" (--quick)" if quick else ""))
    if figures:
        print("figure: " + ", ".join(figures))
    return {"quick": quick, "smoke": smoke, "seconds": seconds,
            "settings": {k: v for k, v in vars(s).items() if k != "warmup_kw"}
            | {"warmup_kw": dict(s.warmup_kw), "hidden": P.HIDDEN, "prior": P.prior_source()},
            "skipped": skipped, "summary": summ, "cases": cases, "claims": lines,
            "figures": figures}


EXPERIMENTS = [
    Experiment("bnn-uci", "When does a BNN's model average beat its point estimate? MAP, one "
               "draw, BMA (warmup + SGHMC) and deep ensembles at equal cost on digits, EEG "
               "and diabetic retinopathy, τ = 1 and a tuned τ", "Wenzel et al. 2020; "
               "Izmailov et al. 2021; Lakshminarayanan et al. 2017", 50.0, run),
]
