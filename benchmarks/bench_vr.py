"""Variance-reduced SGHMC on the largest regression set here (protein, 45,730 × 9).

SGHMC, SVRG-HMC and SAGA-HMC (b = 10, K = n/b) on Bayesian linear regression, all with the
same step size and friction: time per step and per data pass (measured in one process, best
of interleaved repeats after a warm-up), and the test MSE of the running posterior-mean
prediction after 1 and 5 data passes (mean ± sd over chains).

    python benchmarks/bench_vr.py [--data DIR] [--repeats 3]
"""

from __future__ import annotations

import argparse
import math
import sys

import jax
import jax.numpy as jnp
import numpy as np

import sgmc
from sgmc.lab.experiments.svrg_hmc import curve, evals_per_step, make_sampler

SAMPLERS = ("SGHMC", "SVRG-HMC", "SAGA-HMC")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default=None, help="dataset folder (default: ../shared/data)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--chains", type=int, default=4)
    args = ap.parse_args(argv)
    try:
        ds = sgmc.datasets.load("protein", args.data)
    except FileNotFoundError as err:
        print(f"skipped: {err}")
        return 0
    sp = sgmc.datasets.split(ds.X, ds.y, seed=0)
    ones = lambda X: np.hstack([X, np.ones((len(X), 1))])
    (Xtr, ytr), (Xte, yte) = (ones(sp.train[0]), sp.train[1]), (ones(sp.test[0]), sp.test[1])
    n = len(ytr)
    post = sgmc.models.linear_regression(Xtr, ytr)
    lam_max = float(np.linalg.eigvalsh(Xtr.T @ Xtr + np.eye(Xtr.shape[1])).max())
    h = 0.1 / math.sqrt(lam_max)
    friction = 0.3 / h
    print(f"protein: n_train = {n}, d = {Xtr.shape[1]}, λ_max = {lam_max:.3g}, "
          f"h = {h:.3g}, D = {friction:.3g}, b = 10, K = n/b, {args.chains} chains; "
          f"JAX {jax.__version__}")

    runs = {}
    for name in SAMPLERS:
        steps = math.ceil(5 * n / evals_per_step(name, n))
        thin = max(1, steps // 100)
        runs[name] = (make_sampler(name, h, friction, n), thin * 100, thin)

    def run(name):
        sampler, steps, thin = runs[name]
        return sgmc.sample(post, sampler, jnp.zeros(Xtr.shape[1]), num_steps=steps,
                           num_chains=args.chains, thin=thin, seed=1, progress=False)

    results = {name: run(name) for name in SAMPLERS}  # warm-up (compiles)
    times = {name: [] for name in SAMPLERS}
    for _ in range(args.repeats):
        for name in SAMPLERS:
            results[name] = run(name)
            times[name].append(results[name].meta["sampling_time"])

    base = min(times["SGHMC"]) / runs["SGHMC"][1]
    print(f"\n{'sampler':<10}{'µs/step':>9}{'step cost':>11}{'evals/step':>12}"
          f"{'s/pass':>9}{'MSE @1 pass':>20}{'MSE @5 passes':>20}")
    for name in SAMPLERS:
        res, steps = results[name], runs[name][1]
        per_step = min(times[name]) / steps
        passes = res.data_passes[0]
        mse = curve("regression", res.samples, Xte, yte)
        at = {p: mse[:, min(int(np.searchsorted(passes, p - 1e-9)), mse.shape[1] - 1)]
              for p in (1, 5)}
        per_pass = per_step * n / evals_per_step(name, n)
        print(f"{name:<10}{per_step * 1e6:>9.1f}{per_step / base:>10.2f}×"
              f"{evals_per_step(name, n):>12.1f}{per_pass:>9.3f}"
              f"{at[1].mean():>12.4f} ± {at[1].std():.4f}{at[5].mean():>12.4f} ± "
              f"{at[5].std():.4f}")
    print("\nstep cost: time per step relative to SGHMC's (same process); MSE in standardised "
          "target units (the variance of the test target is ≈ 1).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
