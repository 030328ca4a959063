"""``sgmc demo``: SGLD and both SGHMC integrators on a Bayesian linear-regression posterior.

The posterior is conjugate, so every number the demo prints is checked against the exact
answer: the worst error of the posterior mean (in posterior standard deviations), the
covariance error ‖Σ^{-½} Ĉ Σ^{-½} − I‖₂ (0 for a perfect sampler), the effective sample size
per second of sampling (ArviZ bulk ESS, worst coordinate) and the per-example gradient
evaluations spent (in data passes). It writes one figure to ``--out``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from . import models
from .driver import sample
from .sampler import sghmc, sgld


@dataclass
class DemoRow:
    method: str
    step_size: float
    mean_err: float
    cov_err: float
    ess_min: float
    ess_per_s: float
    data_passes: float
    seconds: float


def _scores(draws: np.ndarray, mu: np.ndarray, cov: np.ndarray) -> tuple[float, float, float]:
    import arviz as az

    d = mu.shape[0]
    draws = np.asarray(draws, np.float64)  # float32 running sums lose digits over many draws
    flat = draws.reshape(-1, d)
    sd = np.sqrt(np.diag(cov))
    mean_err = float(np.max(np.abs(flat.mean(0) - mu) / sd))
    li = np.linalg.inv(np.linalg.cholesky(cov))
    cov_err = float(np.linalg.norm(li @ np.cov(flat.T) @ li.T - np.eye(d), 2))
    ess = min(float(az.ess(draws[..., j])) for j in range(d))
    return mean_err, cov_err, ess


def run_demo(out: str = "sgmc-demo", quick: bool = False, seed: int = 0,
             progress: bool | None = None) -> list[DemoRow]:
    """Run the demo, print its table, write ``out/demo_linear_regression.png``."""
    n, d, batch = 10_000, 5, 100
    X, y, _ = models.synthetic_linear_data(n, d, correlation=0.5, seed=seed)
    post = models.linear_regression(X, y)
    mu, cov = models.linear_regression_posterior(X, y)
    lam_max = float(np.linalg.eigvalsh(np.linalg.inv(cov)).max())
    steps, chains = (3_000, 4) if quick else (40_000, 16)
    burn = steps // 5
    # Step sizes relative to the stiffest direction (λ_max of the posterior precision), the
    # fastest-mixing choices whose predicted covariance bias at batch 100 is below 0.1 (the
    # stationary covariance of each linearised sampler, as in tests/linear_gaussian.py).
    h_hmc, friction = 1.4e-3 / np.sqrt(lam_max), 0.8 * np.sqrt(lam_max)
    configs = [
        ("SGLD", sgld(1.8e-3 / lam_max, batch_size=batch)),
        ("SGHMC (Euler)", sghmc(h_hmc, friction=friction, batch_size=batch)),
        ("SGHMC (splitting)", sghmc(h_hmc, friction=friction, batch_size=batch,
                                    integrator="splitting")),
    ]
    # Warm start: full-batch gradient descent is SGLD at temperature 0 with batch_size=None.
    warm_steps = 60
    warm = sample(post, sgld(1.0 / lam_max, temperature=0.0), jnp.zeros(d),
                  num_steps=warm_steps, thin=warm_steps, progress=progress)
    start = jnp.asarray(warm.samples[0, -1])
    rows, results = [], {}
    for i, (name, sampler) in enumerate(configs):
        t0 = time.perf_counter()
        res = sample(post, sampler, start, num_steps=steps, num_chains=chains,
                     burn_in=burn, thin=10, seed=seed + i, progress=progress)
        seconds = time.perf_counter() - t0
        mean_err, cov_err, ess = _scores(res.samples, mu, cov)
        rows.append(DemoRow(name, float(sampler.step_size.max_value()), mean_err, cov_err, ess,
                            ess / res.meta["sampling_time"], float(res.data_passes[0, -1]),
                            seconds))
        results[name] = res
    print(format_table(rows, n, d, batch, steps, chains))
    print(f"all chains start at the mode found by {warm_steps} steps of full-batch gradient "
          f"descent (sgld at temperature 0): {warm_steps} data passes, not counted above.")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "demo_linear_regression.png")
    _figure(results, mu, cov, path)
    print(f"\nfigure: {path}")
    return rows


def format_table(rows: list[DemoRow], n: int, d: int, batch: int, steps: int,
                 chains: int) -> str:
    head = (f"Bayesian linear regression, N = {n}, d = {d}, batch {batch}, {chains} chains × "
            f"{steps} steps (exact posterior known)\n")
    cols = (f"{'method':<19}{'step':>10}{'mean err':>10}{'cov err':>9}{'ESS':>8}"
            f"{'ESS/s':>9}{'passes':>8}{'time s':>8}")
    lines = [head, cols, "-" * len(cols)]
    for r in rows:
        lines.append(f"{r.method:<19}{r.step_size:>10.2e}{r.mean_err:>10.3f}{r.cov_err:>9.3f}"
                     f"{r.ess_min:>8.0f}{r.ess_per_s:>9.0f}{r.data_passes:>8.1f}"
                     f"{r.seconds:>8.1f}")
    lines.append("mean err: max |mean − μ| / sd; cov err: ‖Σ^-½ Ĉ Σ^-½ − I‖₂; ESS: worst "
                 "coordinate (ArviZ bulk); passes: per-example gradients / N per chain.")
    return "\n".join(lines)


def _figure(results: dict, mu: np.ndarray, cov: np.ndarray, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    sd0 = np.sqrt(cov[0, 0])
    grid = np.linspace(mu[0] - 4 * sd0, mu[0] + 4 * sd0, 200)
    axes[0].plot(grid, np.exp(-0.5 * ((grid - mu[0]) / sd0) ** 2) / (sd0 * np.sqrt(2 * np.pi)),
                 "k-", lw=2, label="exact posterior")
    for name, res in results.items():
        axes[0].hist(res.samples[..., 0].ravel(), bins=60, density=True, histtype="step",
                     lw=1.5, label=name)
        passes = res.data_passes[0]
        running = np.cumsum(res.samples[..., 0], axis=1) / np.arange(1, res.num_draws + 1)
        err = np.abs(running - mu[0]).mean(0) / sd0
        axes[1].loglog(passes, err, label=name)
    axes[0].set(xlabel="θ₀", ylabel="density", title="marginal of θ₀")
    axes[0].legend(fontsize=8)
    axes[1].set(xlabel="data passes", ylabel="|running mean − μ₀| / sd₀ (avg over chains)",
                title="error of the running mean")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
