"""The VR-reSGLD paper's deep-learning comparison (Deng et al. 2021, Sec. 5.2–5.3,
Tables 1–2, Fig. 3–4) at a scale this CPU can run.

The paper trains ResNet-20/32/56 on CIFAR-10/100 (500 epochs, batch 256) and compares SGHMC,
reSGHMC, VR-reSGHMC and cVR-reSGHMC by accuracy, swaps and calibration (Brier score, entropy
on SVHN). Here: the 784-100-10 ReLU MLP (N(0, I) prior, d = 79,510) on the first 20,000 MNIST
training images (quick: 5,000), the official 10,000 test images, batch 100, 8 data passes
(1,600 steps; quick: 400), one seed.

- SGHMC: h = 3·10⁻⁴, friction 10 (the setting measured best for this network in ewsg-mnist).
- reSGHMC: two SGHMC replicas, τ₂ = 5 τ₁, η₂ = 1.5 η₁ (the paper's deep-learning settings),
  swap test every step on minibatch energies.
- VR-reSGHMC: the same with control-variate energies (eq. 5, c = −1), anchors refreshed every
  m = N/(2n) steps (half a data pass: 100 steps, quick 25; a refresh costs N energy
  evaluations per replica; the paper uses m = 392, two CIFAR epochs at n = 256).
- cVR-reSGHMC: VR-reSGHMC with cosine cyclical step sizes for both replicas, two cycles over
  the run (the paper's count), peaks 2η₁ and 2η₂ so the mean step equals the constant one.
  With burn-in the first half of the run, its model average covers the second cycle.
- σ̂²: reSGHMC measures it every m steps (10 minibatch replicates, γ = 0.3); the VR methods
  keep it per anchor age (the variance of the estimator each swap uses; see
  :mod:`sgmc.kernels.coupling.replica`), smoothed with the same γ.
- The paper's protocol (Sec. 5.2 and its reference code), compressed from 500 epochs to
  this run's 8 passes (each per-epoch factor raised to the power 500/8, so the run's total
  annealing matches the paper's over the same fraction of the run): at most one swap per
  epoch (``cooldown`` = one pass); in the ``cold`` setting τ₁ annealed as τ₁/r^k during
  burn-in (k = completed epochs, r = 1.02^(500/8)), τ₂ = 5τ₁ with it, and F annealed with
  τ, F₀·r^k; the step sizes of SGHMC, reSGHMC and VR-reSGHMC held for the first 40 % of the
  run, then multiplied by 0.984^(500/8) per epoch. cVR-reSGHMC keeps τ constant and its
  cosine cycles (as in the paper), with the annealed F and the cool-down. The SGHMC baseline
  follows the same τ annealing: it is the cold replica of a pair that never attempts a swap
  (``sgmc.sghmc`` takes a constant temperature).

Two settings, all methods in each:

1. ``posterior``: τ = (1, 5), F = 1 (the unbiased swap rule).
2. ``cold``: the paper's deep-learning temperatures and correction: τ = (0.01, 0.05),
   F = 1.5·10⁵ (the paper's F₀); SGHMC at τ = 0.01.

Why both: at τ = (1, 5) the minibatch energy noise (σ̂² ~ 10⁶–10⁷ nats² at N = 20,000) makes
the unbiased correction a²σ̂²/2 millions of nats, far above any energy difference of the two
replicas, so F = 1 does not swap; with a 5× ladder the equilibrium energy gap of d = 79,510
parameters is itself O(d) nats at any τ₁. Swaps then occur only with a large F, where they are
driven by the energy noise — the paper's regime. The full run has both settings (since
2026-11-27, issue 36; ``SGMC_VR_POSTERIOR=0`` leaves ``posterior`` out); ``--quick`` and
``--smoke`` run ``cold`` only.

Verdicts by :mod:`sgmc.lab.experiments.verdict`: accuracy, Brier score and OOD entropy by paired
differences over the 10,000 test images (one seed: seed-to-seed variation is not in the SE);
swap counts with Poisson SEs; σ̂² ratios with SEs from 4 batch means of the kept σ̂² trace.
An MLP on MNIST is not the paper's ResNets on CIFAR: claims that do not hold here are "not
tested in the paper's regime".

Metrics come from the Bayesian model average of the cold replica's draws in the second half of
the run (a draw every 25 steps: 32 draws; quick: 8): test accuracy, log-likelihood,
Brier score, ECE, and the mean predictive entropy on out-of-distribution inputs — the MNIST
test images with their pixels permuted by one fixed permutation (seed 0; maximum entropy
ln 10 ≈ 2.303). Swaps are counted
after burn-in and in total; σ̂² is the mean of ``res.info["energy_variance"]`` after burn-in.
reSGHMC's first σ̂² measurement (t = 0, common start) is 0, so it attempts no swap before
t = m; swaps in the first m steps (VR methods only) are reported separately.

``smoke`` (a pipeline check, :data:`SMOKE`): reSGHMC and VR-reSGHMC only (one compiled
program each; every kind of claim is computed, those that need SGHMC or cVR-reSGHMC without
them), 1,000 training images, 4 passes (40 steps, m = 5, a draw every step), 1,000 test
images.
"""

from __future__ import annotations

import math
import os
import time

import jax
import numpy as np

from sgmc import (
    cv_energy,
    datasets,
    metrics,
    minibatch_energy,
    models,
    replica_exchange,
    sample,
    sghmc,
)
from sgmc.lab.experiments import Experiment
from sgmc.lab.experiments import verdict as V
from sgmc.lab.experiments._plot import pyplot, save
from sgmc.schedules import cyclical, geometric

H = 3e-4
FRICTION = 10.0
BATCH = 100
HOT_TEMPERATURE = 5.0   # τ₂ / τ₁
HOT_STEP = 1.5          # η₂ / η₁
METHODS = ("SGHMC", "reSGHMC", "VR-reSGHMC", "cVR-reSGHMC")
SETTINGS = {"posterior": (1.0, 1.0), "cold": (0.01, 1.5e5)}   # name -> (τ₁, F)
PAPER_EPOCHS = 500
T_ANNEAL, LR_ANNEAL = 1.02, 0.984   # the paper's per-epoch factors
LR_HOLD = 0.4                       # fraction of the run before the step size decays
#: The smoke run: methods, training images, passes, steps between draws, test images.
SMOKE = {"methods": ("reSGHMC", "VR-reSGHMC"), "train": 1_000, "passes": 4, "thin": 1,
         "test": 1_000}


def _samplers(tau1: float, correction: float, m: int, steps: int, epoch: int,
              anneal: bool) -> dict:
    """The four methods at one setting with the paper's protocol (module docstring). Every
    number is a pytree leaf, so the same method at another setting reuses its program."""
    base = sghmc(H, friction=FRICTION, batch_size=BATCH)
    passes = steps // epoch
    power = PAPER_EPOCHS / passes
    burn = steps // 2
    t_rate = T_ANNEAL ** power if anneal else 1.0
    lr_rate = LR_ANNEAL ** power if anneal else 1.0
    hold = int(LR_HOLD * steps)

    def tau(v):
        return geometric(v, 1.0 / t_rate, epoch, stop=burn)

    def lr(v):
        return geometric(v, lr_rate, epoch, start=hold)

    temps = [tau(tau1), tau(HOT_TEMPERATURE * tau1)]
    f = geometric(correction, t_rate, epoch, stop=burn)
    cycles = [cyclical(2 * H, steps // 2), cyclical(2 * HOT_STEP * H, steps // 2)]
    common = {"correction": f, "variance_period": m, "cooldown": epoch}
    return {
        # The cold replica of a pair that never attempts a swap: SGHMC with annealed τ.
        "SGHMC": replica_exchange(base, temps, step_sizes=[lr(H), lr(H)],
                                  energy=minibatch_energy(), swap_every=10 * steps,
                                  variance_period=steps, correction=f),
        "reSGHMC": replica_exchange(base, temps, step_sizes=[lr(H), lr(HOT_STEP * H)],
                                    energy=minibatch_energy(), **common),
        "VR-reSGHMC": replica_exchange(base, temps, step_sizes=[lr(H), lr(HOT_STEP * H)],
                                       energy=cv_energy(period=m), **common),
        "cVR-reSGHMC": replica_exchange(base, [tau1, HOT_TEMPERATURE * tau1],
                                        step_sizes=cycles, energy=cv_energy(period=m),
                                        **common),
    }


def _count(x) -> int:
    """A sum of per-interval swap counts (stored as floats) as an integer."""
    return int(np.rint(np.sum(np.asarray(x, np.float64))))


def _scores(p: np.ndarray, y: np.ndarray, n_test: int) -> tuple[dict, dict]:
    """Metrics of the model average p over test + permuted test inputs, with the standard
    errors of the test-set means (test-set sampling only, not seed-to-seed variation), and
    the per-example values (for paired differences)."""
    p = np.clip(np.asarray(p, np.float64), 1e-12, 1.0)
    test, ood = p[:n_test], p[n_test:]
    out = metrics.classification_metrics(test, y)
    onehot = np.eye(test.shape[1])[np.asarray(y, np.int64)]
    brier = np.sum((test - onehot) ** 2, axis=1)
    entropy = -np.sum(ood * np.log(ood), axis=1)
    correct = (test.argmax(1) == np.asarray(y)).astype(np.float64)
    out["ood_entropy"] = float(entropy.mean())
    acc = out["accuracy"]
    out["se"] = {"accuracy": float(np.sqrt(acc * (1 - acc) / n_test)),
                 "brier": float(brier.std() / np.sqrt(n_test)),
                 "ood_entropy": float(entropy.std() / np.sqrt(ood.shape[0]))}
    return out, {"accuracy": correct, "brier": brier, "ood_entropy": entropy}


def run_settings(quick: bool = False, smoke: bool = False) -> dict:
    """The settings a run holds (name -> (τ₁, F) of :data:`SETTINGS`): both in the full run,
    ``cold`` (the paper's) alone with ``--quick``, ``--smoke`` or ``SGMC_VR_POSTERIOR=0``."""
    # (issue 36: `posterior` was left out of the full run on 2026-11-23 to fit the shared
    # machine; SGMC_VR_POSTERIOR=0 leaves it out again where time is short)
    full = os.environ.get("SGMC_VR_POSTERIOR", "1") != "0"
    return dict(SETTINGS) if full and not (quick or smoke) else {"cold": SETTINGS["cold"]}


def run(quick: bool = False, out: str = "sgmc-reproduce", seed: int = 0,
        data_root=None, smoke: bool = False) -> dict:
    start = time.perf_counter()
    train, test = datasets.load_mnist(data_root)
    n = SMOKE["train"] if smoke else 5_000 if quick else 20_000
    post = models.mlp(train.X[:n], train.y[:n], hidden=(100,), prior_std=1.0)
    init = post.loglik.init(jax.random.key(seed))
    steps_per_pass = n // BATCH
    passes = SMOKE["passes"] if smoke else 8
    steps = passes * steps_per_pass
    m = steps_per_pass // 2
    thin = SMOKE["thin"] if smoke else 25   # divides m, so the first m steps are whole draws
    draws = steps // thin
    burn = draws // 2                       # draws discarded: the first half of the run
    test_x, test_y = ((test.X[:SMOKE["test"]], test.y[:SMOKE["test"]]) if smoke
                      else (test.X, test.y))
    perm = np.random.default_rng(0).permutation(test_x.shape[1])
    x_eval = np.concatenate([test_x, test_x[:, perm]]).astype(np.float32)
    n_test = test_x.shape[0]
    detail = (f"{' and '.join(SMOKE['methods'])} only, {n:,} training images, {passes} passes "
              f"({steps} steps, m = {m}, a draw every {thin} steps), {n_test:,} test images")
    if smoke:
        print(V.smoke_banner(detail))
    settings = run_settings(quick, smoke)

    table: dict = {}
    per_example: dict = {}
    for label, (tau1, corr) in settings.items():
        rows, kept = {}, []
        smps = _samplers(tau1, corr, m, steps, steps_per_pass, anneal=label == "cold")
        for name, smp in smps.items():
            if smoke and name not in SMOKE["methods"]:
                continue
            t0 = time.perf_counter()
            res = sample(post, smp, init, num_steps=steps, thin=thin, seed=seed + 1,
                         progress=False, draws_per_block=burn)
            row = {"seconds": time.perf_counter() - t0,
                   "grad_evals": int(res.meta["grad_evals_total"][0])}
            kept.append(jax.tree.map(lambda x: x[0, burn:], res.samples))
            if name != "SGHMC":
                sw = np.asarray(res.info["swaps"][0, :, 0])
                trace = np.asarray(res.info["energy_variance"][0, burn:, 0], np.float64)
                var = float(np.mean(trace))
                blocks = trace[: len(trace) // 4 * 4].reshape(4, -1).mean(1)
                # Correction a_t²σ̂²/(2F_t) at the end of the run (τ, F after annealing).
                t_end = steps - 1
                taus = [float(s_(t_end)) for s_ in smp.temperatures]
                a = 1.0 / taus[0] - 1.0 / taus[1]
                f_end = float(smp.correction(t_end))
                row.update(swaps=_count(sw[burn:]), swaps_total=_count(sw),
                           swaps_first_m=_count(sw[:max(1, m // thin)]),
                           swap_attempts=_count(res.info["swap_attempts"][0, burn:, 0]),
                           attempts_total=_count(res.info["swap_attempts"][0, :, 0]),
                           energy_variance=var, energy_variance_se=V.mean_se(blocks)[1],
                           correction_nats=a * a * var / (2 * f_end), a_end=a, F_end=f_end,
                           tau_end=taus)
            rows[name] = row
        # One compiled prediction over every method's draws (test + permuted test).
        probs = metrics.predictions(post.loglik.predict,
                                    jax.tree.map(lambda *x: np.concatenate(x), *kept), x_eval)
        probs = probs.reshape(len(kept), -1, *probs.shape[1:]).mean(1)
        per_example[label] = {}
        for name, p in zip(rows, probs, strict=True):
            scores, each = _scores(p, test_y, n_test)
            rows[name].update(scores)
            per_example[label][name] = each
        table[label] = {"tau": [tau1, HOT_TEMPERATURE * tau1], "correction": corr,
                        "annealed": label == "cold", "methods": rows}

    claims = _report(table, n, passes, m, draws - burn, per_example,
                     smoke=detail if smoke else None)
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "vr_resghmc_classifier.png")
    _figure(table, path)
    print(f"\nfigure: {path}")
    total = time.perf_counter() - start
    print(f"total time: {total:.0f} s")
    return {"dataset": "mnist", "num_train": n, "num_test": n_test, "passes": passes,
            "steps": steps, "thin": thin, "bma_draws": draws - burn, "m": m,
            "step_size": H, "friction": FRICTION, "batch_size": BATCH, "smoke": smoke,
            "ood": "MNIST test images, pixels permuted (seed 0)", "settings": table,
            "seconds": total, "claims": claims, "figures": [path]}


def _report(table: dict, n: int, passes: int, m: int, kept: int,
            per_example: dict, smoke: str | None = None) -> list[dict]:
    """Print the tables and judge the claims (``smoke``: the smoke run's detail, or None; a
    smoke run has not every method, and a claim without its methods is NaN)."""
    print(f"VR-reSGLD paper, deep-learning comparison at MLP scale: 784-100-10 ReLU MLP, "
          f"N(0, I) prior, MNIST (N_train = {n}), batch {BATCH}, {passes} passes, SGHMC "
          f"h = {H:g}, friction {FRICTION:g}; replicas τ2 = {HOT_TEMPERATURE:g} τ1, "
          f"η2 = {HOT_STEP:g} η1; m = {m}; at most one swap per pass; BMA of the cold "
          f"replica's last {kept} draws; OOD: permuted-pixel MNIST test images\n")
    for label, s in table.items():
        print(f"{label}: τ = ({s['tau'][0]:g}, {s['tau'][1]:g}), F = {s['correction']:g}"
              + (" (τ, F annealed during burn-in; step sizes decayed after 40 %)"
                 if s["annealed"] else " (constant)"))
        print(f"  {'method':<13}{'acc':>8}{'loglik':>9}{'Brier':>8}{'ECE':>8}{'OOD ent':>9}"
              f"{'swaps':>7}{'(all)':>7}{'(<m)':>6}{'σ̂²':>10}{'a²σ̂²/2F':>11}{'s':>6}")
        for name, r in s["methods"].items():
            sw = (f"{r['swaps']:>7d}{r['swaps_total']:>7d}{r['swaps_first_m']:>6d}"
                  f"{r['energy_variance']:>10.3g}{r['correction_nats']:>11.3g}"
                  if "swaps" in r else f"{'—':>7}{'—':>7}{'—':>6}{'—':>10}{'—':>11}")
            print(f"  {name:<13}{r['accuracy']:>8.4f}{r['log_likelihood']:>9.4f}"
                  f"{r['brier']:>8.4f}{r['ece']:>8.4f}{r['ood_entropy']:>9.3f}{sw}"
                  f"{r['seconds']:>6.0f}")
        print()

    regime = [(f"784-100-10 MLP on MNIST ({n:,} training images), {passes} passes" if smoke
               else "784-100-10 MLP on MNIST (20,000 training images; quick: 5,000), 8 passes")
              + ", instead of ResNet-20/32/56 on CIFAR-10/100, 500 epochs",
              f"the paper's per-epoch annealing factors raised to the power 500/{passes} (same "
              "total annealing over the run); burn-in the first half (paper: 60 %)",
              "one seed (paper: 5)"]
    claims = []
    for label, s in table.items():
        r = s["methods"]
        each = per_example[label]
        dev = regime + ([] if s["annealed"] else
                        [f"τ = ({s['tau'][0]:g}, {s['tau'][1]:g}), F = {s['correction']:g} "
                         "constant (the posterior, not the paper's cold, annealed τ)"])
        # Improvement claims: the smallest paired gain of a VR variant over a baseline.
        for key, sign, what in (("accuracy", 1, "accuracy"), ("brier", -1, "Brier score"),
                                ("ood_entropy", 1, "entropy on unseen (OOD) inputs")):
            pairs = [(v, b) for v in ("VR-reSGHMC", "cVR-reSGHMC")
                     for b in ("SGHMC", "reSGHMC") if v in each and b in each]
            gains = {(v, b): V.paired(sign * each[v][key], sign * each[b][key])
                     for v, b in pairs} or {("VR-reSGHMC", "reSGHMC"): (math.nan, math.nan)}
            (v, b), (eff, se) = min(gains.items(), key=lambda kv: kv[1][0])
            # Identical model averages (no swap: a cold replica runs SGHMC's trajectory, same
            # seed and noise) give a gain of exactly 0 with SE 0 by construction.
            same = v in each and b in each and bool(np.all(each[v][key] == each[b][key]))
            claims.append(V.judge(
                f"paper (Tables 1–2, Fig. 4): VR-reSGHMC and cVR-reSGHMC improve the {what} "
                f"over SGHMC and reSGHMC ({label})", eff, se,
                se_over=f"{len(next(iter(each.values()))[key])} test images (paired; one seed)",
                effect_text=f"smallest paired gain, here {v} over {b}"
                            f"{'' if sign > 0 else ' (Brier: lower is better)'}",
                measured={k: {"value": r[k][key], "se": r[k]["se"][key]} for k in METHODS
                          if k in r},
                paper={"accuracy": "CIFAR-100 ResNet-20: SGHMC 72.9, reSGHMC 74.1, "
                                   "VR-reSGHMC 74.7, cVR-reSGHMC 75.0 (%)",
                       "brier": "OOD Brier on SVHN 0.29 (reSGHMC) -> 0.27 (cVR)",
                       "ood_entropy": "higher entropy on SVHN for the VR variants"}[key],
                deviations=dev, in_regime=False,
                exact=(f"{v} and {b} give the same predictions on every test image (no "
                       "swap: the cold replica followed the same trajectory, same seed)"
                       if same else "")))
        # Swaps: VR gives more swaps than reSGHMC at the same F (Poisson SEs of the counts;
        # with no swap in either, whose Poisson SE would be 0, each count's binomial SE over
        # its attempts by Laplace's rule, V.proportion, so that 0 swaps claim no certainty).
        for vr in ("VR-reSGHMC", "cVR-reSGHMC"):
            a_, b_ = (r[vr]["swaps_total"], r["reSGHMC"]["swaps_total"]) if (
                vr in r and "reSGHMC" in r) else (math.nan, math.nan)
            se, se_over = math.sqrt(a_ + b_), "Poisson counts of one chain"
            if a_ + b_ == 0:
                n_a, n_b = r[vr]["attempts_total"], r["reSGHMC"]["attempts_total"]
                se = math.hypot(n_a * V.proportion(0, n_a)[1], n_b * V.proportion(0, n_b)[1])
                se_over = (f"binomial counts of one chain, 0 swaps in {n_a} and {n_b} attempts "
                           "(Laplace's rule)")
            claims.append(V.judge(
                f"paper (Sec. 5.2): at the same F the variance-reduced energies give more "
                f"swaps ({vr} vs reSGHMC, {label})", a_ - b_, se, se_over=se_over,
                effect_text=f"swaps({vr}) − swaps(reSGHMC), whole run",
                measured={k: {"swaps": r[k]["swaps_total"], "attempts": r[k]["attempts_total"],
                              "after_burn_in": r[k]["swaps"]}
                          for k in ("reSGHMC", "VR-reSGHMC", "cVR-reSGHMC") if k in r},
                paper="~100 swaps (VR) against ~5 (reSGHMC) on CIFAR",
                deviations=[*dev, f"at most one swap per pass: at most {passes} swaps"],
                in_regime=False))
        # σ̂² reduction: log(σ̂²(reSGHMC) / σ̂²(VR)) > 0 (paper: up to 10–20× late).
        nan = {"energy_variance": math.nan, "energy_variance_se": math.nan}
        vr, re_ = r.get("VR-reSGHMC", nan), r.get("reSGHMC", nan)
        if vr["energy_variance"] > 0 and re_["energy_variance"] > 0:
            eff = math.log(re_["energy_variance"] / vr["energy_variance"])
            se = math.hypot(re_["energy_variance_se"] / re_["energy_variance"],
                            vr["energy_variance_se"] / vr["energy_variance"])
        else:  # not run (a smoke run), or no σ̂² measured after burn-in: no log ratio
            eff = se = math.nan
        claims.append(V.judge(
            f"paper (Fig. 3): the control variate reduces σ̂² ({label})", eff, se,
            se_over="4 batch means of the σ̂² trace after burn-in",
            effect_text="log(σ̂²(reSGHMC) / σ̂²(VR-reSGHMC))",
            measured={"ratio": math.exp(eff),
                      "reSGHMC": {"value": re_["energy_variance"],
                                  "se": re_["energy_variance_se"]},
                      "VR-reSGHMC (per anchor age)": {"value": vr["energy_variance"],
                                                      "se": vr["energy_variance_se"]}},
            paper="up to 10× (CIFAR-10) and 20× (CIFAR-100) late in training (m = 50/392)",
            deviations=[*dev, f"m = {m} (half a pass; paper 392 = two CIFAR epochs)",
                        "VR σ̂² averaged over anchor ages (the variance each swap used)"],
            in_regime=False))
    return V.publish(V.smoke(claims, smoke) if smoke else claims,
                     "VR-reSGHMC classifier verdicts")


def _figure(table: dict, path: str) -> None:
    plt = pyplot()

    panels = (("accuracy", "test accuracy"), ("brier", "test Brier score"),
              ("ood_entropy", "entropy on permuted MNIST"), ("swaps", "swaps after burn-in"))
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.6))
    x = np.arange(len(METHODS))
    width = 0.8 / len(table)
    for ax, (key, title) in zip(axes, panels, strict=True):
        for k, (label, s) in enumerate(table.items()):
            # (a method a smoke run did not run: no bar)
            vals = [s["methods"].get(mth, {}).get(key, 0) for mth in METHODS]
            ax.bar(x + (k - (len(table) - 1) / 2) * width, vals, width,
                   label=f"{label}: τ1 = {s['tau'][0]:g}, F = {s['correction']:g}")
        ax.set_xticks(x, METHODS, rotation=25, fontsize=8)
        ax.set_title(title, fontsize=10)
        if key == "accuracy":
            accs = [s["methods"][mth]["accuracy"] for s in table.values() for mth in METHODS
                    if mth in s["methods"]]
            ax.set_ylim(max(0.0, min(accs) - 0.01), min(1.0, max(accs) + 0.01))
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", fontsize=8)
    fig.suptitle("MLP 784-100-10 on MNIST: SGHMC and replica exchange (cold replica BMA)",
                 fontsize=10, x=0.3)
    save(fig, path, rect=(0, 0, 1, 0.9))


EXPERIMENTS = [
    Experiment("vr-resghmc-classifier", "BNN 784-100-10 on 20k MNIST images: SGHMC, reSGHMC, "
               "VR-reSGHMC, cVR-reSGHMC — accuracy, Brier, OOD entropy, swaps, σ̂² at "
               "τ = (1, 5), F = 1 and the paper's τ = (0.01, 0.05), F = 1.5e5",
               "Deng et al., VR-reSGLD, Sec. 5.2–5.3", 7.0, run),
]
