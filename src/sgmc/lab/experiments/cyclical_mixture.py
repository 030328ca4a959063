"""Cyclical SG-MCMC on a mixture of 25 Gaussians (Zhang, Li, Zhang, Chen & Wilson 2020, ICLR,
Sec. 5.1, Fig. 2): cSGLD visits more modes than SGLD at equal gradient evaluations.

The target is the reference code's (``experiments/mog25.m`` of ruqizhang/csgmcmc): 25 equal
Gaussians with covariance ρI, ρ = 0.03 (sd 0.17), centred on the grid {−4, −2, 0, 2, 4}², so
neighbouring modes are 2 apart with a density ratio of e^{−16.7} half-way between them. Its
gradient noise is N(0, I) added to the exact gradient; here the noise comes from minibatches:
U(θ) = −log Σ_i N(θ; c_i, ρI) + Σ_j x_j·θ over N = 100 data rows x_j centred to sum 0, whose
minibatch estimate (N/n) Σ_{j∈B} x_j (n = 10, with replacement) has covariance I exactly
(the rows' population variance is set to n/N²), so both samplers read the same 10 rows per
step and a run's cost is its steps.

Settings (the reference code's, full mode): K = 50,000 steps from a start uniform on
[−10, 10]², SGLD with η = 0.043 for 500 steps then 0.043 (t − 500)^{−0.55}; cSGLD with
α₀ = 0.07, M = 30 cycles. The reference code keeps cSGLD's draws after the first 50 steps
of each cycle (its noise is on throughout); here ``exploration = 50/L`` (L = ⌈K/M⌉) with the
library's noise-free exploration. Every chain pair (SGLD, cSGLD) shares its start.

Measures, per chain over its kept draws: a mode is *visited* if some draw lies within
r = 0.5 (≈ 2.9 sd) of its centre (the claim's measure) and *occupied* if at least 1 % of the
draws do (a stricter one: a pass through a mode does not count); also the fraction of draws
on some mode and the total variation of the mode weights to 1/25. Mean ± SE over 48 chains
(quick: 12 chains × 8,000 steps, 5 cycles); effects are paired differences (shared
starts), judged by :mod:`sgmc.lab.experiments.verdict`. Two comparisons not in the paper:
cSGLD with a longer noise-free exploration (β = 0.25) and SGLD at the constant step
η = 0.043 (no decay).

``smoke`` (a pipeline check, :data:`SMOKE`): the paper's two samplers only (SGLD with the
decaying step and cSGLD: one compiled program each; the comparisons with SGLD at the
constant step are judged without it), 4 chains × 1,000 steps, 2 cycles.
"""

from __future__ import annotations

import math
import os

import jax
import jax.numpy as jnp
import numpy as np

from sgmc import Posterior, sample, schedules, sgld
from sgmc.kernels.cyclical import cyclical
from sgmc.lab.experiments import Experiment
from sgmc.lab.experiments import verdict as V
from sgmc.lab.experiments._plot import pyplot, save

RHO = 0.03                     # each mode's variance (reference code: covS = 0.03 I)
CENTRES = np.array([[2.0 * i, 2.0 * j] for i in range(-2, 3) for j in range(-2, 3)],
                   np.float32)
RADIUS = 0.5                   # a draw within RADIUS of a centre visits that mode
N_DATA, BATCH = 100, 10        # minibatch gradient noise of covariance I
ETA_SGLD, ETA_CSGLD = 0.043, 0.07
SGLD_HOLD, SGLD_GAMMA = 500, 0.55
BURN_PER_CYCLE = 50            # the reference code's dropped steps per cycle
#: The smoke run: samplers, steps, cycles, chains.
SMOKE = {"samplers": ("SGLD (decaying η)", "cSGLD"), "num_steps": 1_000, "num_cycles": 2,
         "chains": 4}


def _linear(theta, x):
    """log p(x_j | θ) = −x_j·θ: rows summing to 0, so only the minibatch noise remains."""
    return -jnp.dot(x, theta)


def _log_mixture(theta):
    """log Σ_i N(θ; c_i, ρI) up to a constant (equal weights)."""
    d2 = jnp.sum((theta[None, :] - CENTRES) ** 2, axis=1)
    return jax.scipy.special.logsumexp(-0.5 * d2 / RHO)


def mixture_problem(seed: int = 0) -> Posterior:
    """The 25-Gaussian target with minibatch gradient noise of covariance exactly I."""
    x = np.random.default_rng(seed).standard_normal((N_DATA, 2))
    x -= x.mean(0)
    x *= math.sqrt(BATCH / N_DATA ** 2) / x.std(0)
    return Posterior(_linear, _log_mixture, x.astype(np.float32))


def _sgld_schedule(t):
    """The reference code's SGLD step: η for 500 steps, then η (t − 500)^{−0.55} (1-based t)."""
    k = jnp.asarray(t, jnp.float32) + 1.0 - SGLD_HOLD
    return ETA_SGLD * jnp.where(k < 1.0, 1.0, jnp.maximum(k, 1.0) ** -SGLD_GAMMA)


def samplers(num_steps: int, num_cycles: int) -> dict:
    """The samplers compared, by name: the paper's two (its reference code's settings), cSGLD
    with a longer noise-free exploration (β = 0.25, where α_t has fallen below 2ρ, the
    stability limit of gradient descent in one mode) and SGLD at a constant step."""
    length = -(-num_steps // num_cycles)
    return {
        "SGLD (decaying η)": sgld(schedules.from_function(_sgld_schedule, max_value=ETA_SGLD),
                                  batch_size=BATCH),
        "cSGLD": cyclical(sgld(ETA_CSGLD, batch_size=BATCH), num_cycles,
                          BURN_PER_CYCLE / length, num_steps=num_steps),
        "cSGLD (β = 0.25)": cyclical(sgld(ETA_CSGLD, batch_size=BATCH), num_cycles, 0.25,
                                     num_steps=num_steps),
        "SGLD (constant η)": sgld(ETA_SGLD, batch_size=BATCH),
    }


def kept_draws(res, kernel, num_steps: int) -> np.ndarray:
    """(chains, kept, 2): the draws of a run without burn-in or thinning, of which the driver
    kept those after the steps where ``kernel.keeps`` is True (cSGLD's sampling stages)."""
    x = np.asarray(res.samples, np.float64)
    assert x.shape[1] == np.asarray(kernel.keeps(jnp.arange(num_steps))).sum()
    return x


def mode_counts(draws: np.ndarray, radius: float = RADIUS) -> np.ndarray:
    """(chains, 25): per chain, the number of draws within ``radius`` of each centre."""
    out = np.zeros((draws.shape[0], len(CENTRES)), np.int64)
    for c, chain in enumerate(draws):
        for block in np.array_split(chain, max(1, len(chain) // 20_000)):
            d2 = ((block[:, None, :] - CENTRES[None]) ** 2).sum(-1)
            out[c] += (d2 < radius ** 2).sum(0)
    return out


def mode_stats(draws: np.ndarray, radius: float = RADIUS) -> dict:
    """Per chain: ``visited`` (modes with some draw within ``radius``: the claim's measure),
    ``occupied`` (modes holding ≥ 1 % of the chain's draws: a visit in passing does not
    count), ``on_mode`` (the fraction of draws within ``radius`` of some centre) and ``tv``
    (total variation between the mode weights of the on-mode draws and the exact 1/25)."""
    counts = mode_counts(draws, radius)
    n = draws.shape[1]
    on = counts.sum(1)
    weights = counts / np.maximum(on, 1)[:, None]
    return {"visited": (counts > 0).sum(1), "occupied": (counts >= 0.01 * n).sum(1),
            "on_mode": on / n, "tv": 0.5 * np.abs(weights - 1 / len(CENTRES)).sum(1)}


def run(quick: bool = False, out: str = "sgmc-reproduce", seed: int = 0, data_root=None,
        smoke: bool = False) -> dict:
    num_steps, num_cycles, chains = (
        (SMOKE["num_steps"], SMOKE["num_cycles"], SMOKE["chains"]) if smoke
        else (8_000, 5, 12) if quick else (50_000, 30, 48))
    detail = (f"{' and '.join(SMOKE['samplers'])} only, {chains} chains × {num_steps} steps, "
              f"{num_cycles} cycles")
    if smoke:
        print(V.smoke_banner(detail))
    post = mixture_problem(seed)
    starts = np.random.default_rng(seed + 1).uniform(-10.0, 10.0, (chains, 2)).astype(
        np.float32)
    rows, draws = {}, {}
    for name, kernel in samplers(num_steps, num_cycles).items():
        if smoke and name not in SMOKE["samplers"]:
            continue
        res = sample(post, kernel, jnp.asarray(starts), num_steps=num_steps,
                     num_chains=chains, seed=seed + 2, progress=False, init_per_chain=True)
        x = kept_draws(res, kernel, num_steps)
        row = {"kept_draws": int(x.shape[1]),
               "grad_evals": float(np.asarray(res.info["grad_evals"])[:, -1].mean())}
        for key, values in mode_stats(x).items():
            row[key], row[f"{key}_se"] = V.mean_se(values)
            row[f"{key}_chains"] = np.asarray(values).tolist()
        rows[name] = row
        draws[name] = x[0, :: max(1, x.shape[1] // 5000)]
    result = {"settings": {"num_steps": num_steps, "num_cycles": num_cycles, "chains": chains,
                           "alpha0": ETA_CSGLD, "eta_sgld": ETA_SGLD, "rho": RHO,
                           "radius": RADIUS, "batch": BATCH, "N": N_DATA,
                           "exploration_steps_per_cycle": BURN_PER_CYCLE},
              "rows": rows, "smoke": smoke}
    claims = _report(result, quick, detail if smoke else None)
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "cyclical_mixture.png")
    _figure(draws, rows, path)
    print(f"\nfigure: {path}")
    result.update(claims=claims, figures=[path])
    return result


def _measured(rows: dict, key: str, *names: str) -> dict:
    return {n: {"value": rows[n][key], "se": rows[n][f"{key}_se"]} for n in names}


def _report(res: dict, quick: bool, smoke: str | None = None) -> list[dict]:
    """Print the table and judge the claims (``smoke``: the smoke run's detail, or None; a
    comparison with a sampler it did not run is NaN)."""
    s, rows = res["settings"], res["rows"]
    print("Cyclical SG-MCMC (Zhang et al. 2020, Sec. 5.1): 25 Gaussians (ρ = 0.03) on a 2-D "
          f"grid; {s['chains']} chains × {s['num_steps']} steps ({s['num_cycles']} cycles), "
          f"minibatch noise Cov = I (n = {s['batch']} of N = {s['N']}); per chain, over its "
          f"kept draws: modes visited (a draw within r = {s['radius']}), occupied (≥ 1 % of "
          "the draws within r), the on-mode fraction and the TV of the mode weights to 1/25\n")
    print(f"  {'sampler':<20}{'visited':>16}{'occupied':>16}{'on-mode':>9}{'TV':>7}"
          f"{'kept':>8}{'grad evals':>12}")
    for name, r in rows.items():
        print(f"  {name:<20}{r['visited']:>9.2f} ± {r['visited_se']:<4.2f}"
              f"{r['occupied']:>9.2f} ± {r['occupied_se']:<4.2f}{r['on_mode']:>9.2f}"
              f"{r['tv']:>7.2f}{r['kept_draws']:>8}{r['grad_evals']:>12.0f}")
    dev = ["minibatch gradient noise of covariance I (N = 100 rows summing to 0, n = 10) "
           "instead of the reference code's added N(0, I) noise",
           "no SGFS noise correction (the reference code injects sqrt(2η(1 − η/2)) ξ)",
           "cSGLD's 50 dropped steps per cycle run noise-free (the library's exploration "
           "stage, τ = 0); the reference code keeps its noise on and only drops the draws",
           f"{s['chains']} chains from uniform starts on [−10, 10]² (paper: one chain); a "
           f"mode counts as visited within r = {s['radius']} of its centre (the paper shows "
           "the draws, Fig. 2, and gives no count)"]
    if quick:
        dev.append(f"quick: {s['num_steps']} steps and {s['num_cycles']} cycles (paper: "
                   "50,000 and 30)")
    per = {n: {k: np.asarray(r[f"{k}_chains"], np.float64) for k in ("visited", "occupied")}
           for n, r in rows.items()}
    missing = {"visited": np.full(s["chains"], np.nan), "occupied": np.full(s["chains"], np.nan)}
    se_over = f"{s['chains']} paired chains (shared starts)"
    claims = []
    for key, what in (("visited", "visits more of the 25 modes"),
                      ("occupied", "occupies more of the 25 modes (≥ 1 % of its draws; a "
                                   "stricter measure than the paper's)")):
        for base, source, label, paper in (
                ("SGLD (decaying η)", "paper (Sec. 5.1, Fig. 2)",
                 "SGLD at equal gradient evaluations",
                 "Fig. 2: SGLD's draws stay in a few modes, cSGLD's cover the grid "
                 "(qualitative)"),
                ("SGLD (constant η)", "sgmc (not in the paper)",
                 "SGLD at the constant step η = 0.043, equal gradient evaluations", None)):
            eff, se = V.paired(per["cSGLD"][key], per.get(base, missing)[key])
            claims.append(V.judge(
                f"{source}: cSGLD {what} than {label}", eff, se, se_over=se_over,
                effect_text=f"{key}(cSGLD) − {key}({base})",
                measured=_measured(rows, key, *(n for n in ("cSGLD", base) if n in rows)),
                paper=paper, deviations=dev,
                # sgmc's own claims are judged at these settings; the paper's only in full
                in_regime=paper is None or not quick))
    return V.publish(V.smoke(claims, smoke) if smoke else claims,
                     "Cyclical SG-MCMC mixture verdicts")


def _figure(draws: dict, rows: dict, path: str) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(draws), figsize=(3.6 * len(draws), 3.9))
    g = np.linspace(-6, 6, 241)
    xx, yy = np.meshgrid(g, g)
    d2 = ((np.stack([xx, yy], -1)[..., None, :] - CENTRES) ** 2).sum(-1)
    dens = np.exp(-0.5 * d2 / RHO).sum(-1)
    for ax, (name, x) in zip(axes, draws.items(), strict=True):
        ax.contour(xx, yy, dens, levels=3, colors="0.6", linewidths=0.6)
        ax.scatter(x[:, 0], x[:, 1], s=1, alpha=0.3)
        r = rows[name]
        ax.set(xlim=(-6, 6), ylim=(-6, 6), aspect="equal")
        ax.set_title(f"{name} (chain 0)\nvisited {r['visited']:.1f} ± {r['visited_se']:.1f}, "
                     f"occupied {r['occupied']:.1f} ± {r['occupied_se']:.1f}", fontsize=9)
    save(fig, path)


EXPERIMENTS = [Experiment("cyclical-mixture", "2-D mixture of 25 Gaussians: modes visited by "
                          "cSGLD and SGLD at equal gradient evaluations (paired chains)",
                          "Zhang et al. 2020, Sec. 5.1, Fig. 2", 1.0, run)]
